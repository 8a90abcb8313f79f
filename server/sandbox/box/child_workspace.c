/* child_workspace.c: the workspace in the box, by pid 1 (child.c): the
 * overlay of the host folder under a tmpfs upper layer (or, in a
 * zygote's box, the folder held read-only for its runs), and the masks
 * mounted over what sandbox.workspace.hide names, from the server's list
 * (hide.h) and, where the server could not look, pid 1's own walk. Only
 * system calls on static buffers, as everywhere between clone and exec
 * (child.h). */
#include "sandbox/box/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define OVL_DIR   "kiln-ovl"
#define OVL_LOWER "kiln-ovl-lower"

/* mkdir -p of path's parents and path itself, under rootfd. */
static int mkdir_all(int rootfd, const char *path)
{
	static char tmp[4096];
	size_t n = strlen(path);
	if (n >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(tmp, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (tmp[i] != '/' && tmp[i] != '\0')
			continue;
		char c = tmp[i];
		tmp[i] = '\0';
		if (mkdirat(rootfd, tmp, 0755) < 0 && errno != EEXIST)
			return -1;
		tmp[i] = c;
	}
	return 0;
}

/* The masks: a small read-only tmpfs with an empty directory "d" and an
 * empty file "f", both mode 0000, kept at FD_MASK; each hidden entry
 * gets a clone of one of them mounted over it. A kernel before 6.15
 * clones (open_tree's OPEN_TREE_CLONE) only from a mount of the caller's
 * own namespace, which fsmount()'s detached one is not (the clone fails
 * with EINVAL, and with it every workspace that has a name to hide):
 * so it is attached at the new root's "proc", which /proc's own mount
 * (child.c, the next step) then covers, and no path in the box reaches
 * it. */
int child_make_masks(int rootfd)
{
	int m = child_new_fs("tmpfs", "65536", "8", "0555",
	                     MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	if (m < 0)
		return -1;
	int f = openat(m, "f", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0);
	if (f < 0 || fchmod(f, 0) < 0 || mkdirat(m, "d", 0) < 0)
		return -1;
	close(f);
	struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
	if (mount_setattr(m, "", AT_EMPTY_PATH, &ro, sizeof(ro)) < 0 ||
	    child_attach(rootfd, m, "proc") < 0)
		return -1;
	if (m != FD_MASK && (dup3(m, FD_MASK, O_CLOEXEC) < 0 || close(m) < 0))
		return -1;
	return 0;
}

/* Whether a mount lies strictly below dir (an absolute path in pid 1's
 * mount namespace): 1, 0, or -1. The server's idmapped clone of the
 * folder (pid1.h) takes the mounts inside it along, and overlayfs, which
 * layers one file system, would show what lies under them: the kernel
 * refuses that for a copied namespace's locked mounts (EINVAL), and
 * this refuses it the same way for the clone. Reads /proc/self/mountinfo
 * in pieces through a static buffer; a mount point is its fifth field,
 * octal-escaped, so a prefix compare on the escaped text is exact for
 * kiln's own names. */
static int mounts_below(const char *dir)
{
	static char buf[65536];
	size_t dlen = strlen(dir), have = 0;
	int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int found = 0;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			found = -1;
			break;
		}
		have += (size_t)n;
		buf[have] = '\0';
		char *line = buf, *nl;
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			/* the fifth field */
			char *f = line;
			for (int i = 0; i < 4 && f; i++) {
				f = strchr(f, ' ');
				if (f)
					f++;
			}
			if (f && strncmp(f, dir, dlen) == 0 && f[dlen] == '/')
				found = 1;
			line = nl + 1;
		}
		size_t rest = have - (size_t)(line - buf);
		if (n == 0 || found || rest == sizeof(buf) - 1) {
			if (rest == sizeof(buf) - 1 && !found)
				found = -1; /* a line longer than the buffer */
			break;
		}
		memmove(buf, line, rest);
		have = rest;
	}
	close(fd);
	return found;
}

/* The workspace: an overlay of the host folder (FD_WS_LOWER) under a
 * tmpfs upper layer, mounted at its own path. The upper tmpfs is
 * mounted at /kiln-ovl only while the overlay is made (overlayfs takes
 * its layers by path and keeps private clones of them), then detached;
 * its fd goes to *ret_upperfd. Runs after the scratch tmpfs, since the
 * workspace may lie under /tmp or /work. */
int child_mount_workspace(int rootfd, const struct sbx_plan *p, int *ret_upperfd)
{
	int m = child_new_fs("tmpfs", p->scratch_size, p->scratch_inodes, "0755",
	                     MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (m < 0 || mkdirat(m, "u", 0755) < 0 || mkdirat(m, "w", 0755) < 0)
		return -1;
	int upper = openat(m, "u", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (upper < 0 || mkdirat(rootfd, OVL_DIR, 0700) < 0 || child_attach(rootfd, m, OVL_DIR) < 0)
		return -1;
	close(m);
	/* The server's idmapped mount (pid1.h) is detached: overlayfs takes
	 * a layer only from its mounter's mount namespace, so it is
	 * attached here while the overlay is made. */
	const char *lower = WS_LOWER_PATH;
	if (p->ws_idmapped) {
		if (mkdirat(rootfd, OVL_LOWER, 0700) < 0 ||
		    child_attach(rootfd, FD_WS_LOWER, OVL_LOWER) < 0)
			return -1;
		lower = "/tmp/" OVL_LOWER;
		int below = mounts_below(lower);
		if (below != 0) {
			errno = below > 0 ? EINVAL : errno;
			return -1;
		}
	}
	int fs = fsopen("overlay", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -1;
	/* userxattr: overlayfs's own marks (opaque directories) go in
	 * user.overlay.* xattrs, the ones a user namespace may set. */
	if (fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir", lower, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", "/tmp/" OVL_DIR "/u", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "workdir", "/tmp/" OVL_DIR "/w", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -1;
	int ovl = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	close(fs);
	if (ovl < 0 || mkdir_all(rootfd, p->ws_dst) < 0 || child_attach(rootfd, ovl, p->ws_dst) < 0)
		return -1;
	close(ovl);
	close(FD_WS_LOWER);
	if (umount2("/tmp/" OVL_DIR, MNT_DETACH) < 0 || unlinkat(rootfd, OVL_DIR, AT_REMOVEDIR) < 0)
		return -1;
	if (p->ws_idmapped && (umount2("/tmp/" OVL_LOWER, MNT_DETACH) < 0 ||
	                       unlinkat(rootfd, OVL_LOWER, AT_REMOVEDIR) < 0))
		return -1;
	*ret_upperfd = upper;
	return 0;
}

/* A zygote's box (plan.zygote) with the workspace: no overlay, no
 * masks; the host folder (FD_WS_LOWER) read-only at /kiln-ws, where
 * each run's pid 1 takes it as its overlay's lower layer (overlayfs
 * takes a layer only from its mounter's own mount namespace), and the
 * folder's path as empty directories, where that overlay goes (the
 * root is read-only by then). See zygote.h. */
int child_hold_workspace(int rootfd, const struct sbx_plan *p)
{
	/* The server's idmapped mount is detached already: it is the one. */
	int m = p->ws_idmapped
	            ? dup(FD_WS_LOWER)
	            : open_tree(FD_WS_LOWER, "",
	                        OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
	if (m < 0)
		return -1;
	struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
	                                    MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC};
	if (mount_setattr(m, "", AT_EMPTY_PATH | AT_RECURSIVE, &ro, sizeof(ro)) < 0 ||
	    mkdirat(rootfd, SBX_ZYGOTE_WS_LOWER, 0700) < 0 ||
	    child_attach(rootfd, m, SBX_ZYGOTE_WS_LOWER) < 0 || mkdir_all(rootfd, p->ws_dst) < 0)
		return -1;
	close(m);
	/* The runs' overlays take it as their lower layer: as in
	 * child_mount_workspace, no mount may lie inside it. */
	int below = p->ws_idmapped ? mounts_below("/tmp/" SBX_ZYGOTE_WS_LOWER) : 0;
	if (below != 0) {
		errno = below > 0 ? EINVAL : errno;
		return -1;
	}
	return close(FD_WS_LOWER);
}

/* fnmatch(3) without its allocations: `*`, `?`, `[...]` (with `!` or
 * `^`, and ranges); a leading dot is matched like any character. */
static bool glob_match(const char *pat, const char *s)
{
	const char *star = NULL, *resume = NULL;
	while (*s) {
		bool ok = false;
		const char *next = pat + 1;
		if (*pat == '*') {
			star = ++pat;
			resume = s;
			continue;
		} else if (*pat == '?') {
			ok = true;
		} else if (*pat == '[') {
			const char *q = pat + 1;
			bool neg = *q == '!' || *q == '^';
			if (neg)
				q++;
			bool in = false;
			const char *first = q;
			while (*q && (*q != ']' || q == first)) {
				if (q[1] == '-' && q[2] && q[2] != ']') {
					if ((unsigned char)*s >= (unsigned char)q[0] &&
					    (unsigned char)*s <= (unsigned char)q[2])
						in = true;
					q += 3;
				} else {
					if (*q == *s)
						in = true;
					q++;
				}
			}
			if (*q == ']') {
				ok = in != neg;
				next = q + 1;
			} else {
				ok = *s == '['; /* no closing ']': a plain '[' */
			}
		} else {
			ok = *pat == *s;
		}
		if (ok) {
			pat = next;
			s++;
		} else if (star) {
			pat = star;
			s = ++resume;
		} else {
			return false;
		}
	}
	while (*pat == '*')
		pat++;
	return *pat == '\0';
}

bool child_hidden_name(const struct sbx_plan *p, const char *name)
{
	for (size_t i = 0; i < p->nhide; i++)
		if (glob_match(p->hide[i], name))
			return true;
	return false;
}

/* Mount a clone of mask "d" or "f" over tgt (an O_PATH fd). */
static int mask_fd(int tgt, bool dir, unsigned *nmasks)
{
	if (++*nmasks > SBX_HIDE_MAX_MASKS) {
		errno = E2BIG;
		return -1;
	}
	int src = open_tree(FD_MASK, dir ? "d" : "f", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (src < 0)
		return -1;
	int r = move_mount(src, "", tgt, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
	int saved = errno;
	close(src);
	errno = saved;
	return r;
}

/* Mount a clone of mask "d" or "f" over name in dirfd. */
static int mask(int dirfd, const char *name, bool dir, unsigned *nmasks)
{
	int tgt = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (tgt < 0)
		return -1;
	int r = mask_fd(tgt, dir, nmasks);
	int saved = errno;
	close(tgt);
	errno = saved;
	return r;
}

struct kiln_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* Walk the folder open as rootfd (taken) as the program will see it and
 * mask every entry whose name matches a hide pattern; a directory is
 * not entered once masked, nor followed through a link. A directory the
 * box cannot read is skipped (the program cannot read it either). Past
 * the entry or mask cap the run fails with E2BIG: what was not checked
 * is not shown. Only for what the server could not walk itself (another
 * file system mounted in the workspace: the overlay shows what lies
 * under it); the rest comes listed (child_hide_listed). */
static int walk_and_mask(const struct sbx_plan *p, int rootfd, unsigned *nmasks_io)
{
	static struct {
		int fd;
		long pos, len;
		char buf[8192] __attribute__((aligned(8)));
	} stk[SBX_HIDE_DEPTH];
	unsigned long entries = 0;
	unsigned nmasks = *nmasks_io;
	int depth = 0;
	stk[0].fd = rootfd;
	stk[0].pos = stk[0].len = 0;
	while (depth >= 0) {
		if (stk[depth].pos >= stk[depth].len) {
			long n = syscall(SYS_getdents64, stk[depth].fd, stk[depth].buf,
			                 sizeof(stk[depth].buf));
			if (n <= 0) {
				close(stk[depth].fd);
				depth--;
				continue;
			}
			stk[depth].pos = 0;
			stk[depth].len = n;
		}
		struct kiln_dirent64 *d = (void *)(stk[depth].buf + stk[depth].pos);
		stk[depth].pos += d->d_reclen;
		const char *name = d->d_name;
		if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
			continue;
		if (++entries > SBX_HIDE_WALK_MAX_ENTRIES) {
			errno = E2BIG;
			goto fail;
		}
		int fd = stk[depth].fd;
		unsigned char type = d->d_type;
		if (type == DT_UNKNOWN) {
			struct stat st;
			if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
		}
		if (type != DT_DIR && type != DT_REG)
			continue; /* links are not followed; devices cannot be opened */
		bool dir = type == DT_DIR;
		if (child_hidden_name(p, name) || (dir && depth + 1 >= SBX_HIDE_DEPTH)) {
			if (mask(fd, name, dir, &nmasks) < 0)
				goto fail;
			continue;
		}
		if (!dir)
			continue;
		int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (sub < 0)
			continue;
		depth++;
		stk[depth].fd = sub;
		stk[depth].pos = stk[depth].len = 0;
	}
	*nmasks_io = nmasks;
	return 0;
fail:;
	int saved = errno;
	for (; depth >= 0; depth--)
		close(stk[depth].fd);
	errno = saved;
	return -1;
}

/* One record of the server's list (hide.h) under the workspace ws. The
 * path is opened without following any link. An entry that is not
 * where the list says (gone, moved, or a link now on its path) fails
 * the run: the folder changed as it started, and what moved may be
 * anywhere. One the box cannot reach (EACCES) the program cannot
 * either. */
static int hide_one(const struct sbx_plan *p, int ws, char kind, const char *path, unsigned *nmasks)
{
	if (kind == SBX_HIDE_WALK) {
		int fd = child_open_beneath(ws, path, O_RDONLY | O_DIRECTORY);
		if (fd < 0)
			return errno == EACCES ? 0 : -1;
		return walk_and_mask(p, fd, nmasks);
	}
	if (kind != SBX_HIDE_FILE && kind != SBX_HIDE_DIR) {
		errno = EPROTO;
		return -1;
	}
	int tgt = child_open_beneath(ws, path, O_PATH);
	if (tgt < 0)
		return errno == EACCES ? 0 : -1;
	struct stat st;
	int r = fstat(tgt, &st);
	bool dir = kind == SBX_HIDE_DIR;
	if (r == 0 && (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))) {
		errno = ENOENT; /* replaced by another kind of entry */
		r = -1;
	}
	if (r == 0)
		r = mask_fd(tgt, dir, nmasks);
	int saved = errno;
	close(tgt);
	errno = saved;
	return r;
}

/* Mask every entry the server's list names (listfd, a sealed memfd of
 * records "<kind><path>\0"), read through a static buffer. */
int child_hide_listed(const struct sbx_plan *p, int listfd)
{
	static char buf[2 * (PATH_MAX + 2)];
	int ws = open(p->ws_host, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (ws < 0)
		return -1;
	unsigned nmasks = 0;
	off_t off = 0;
	size_t have = 0;
	int r = 0;
	for (;;) {
		ssize_t n = pread(listfd, buf + have, sizeof(buf) - have, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -1;
			break;
		}
		off += n;
		have += (size_t)n;
		size_t pos = 0;
		char *end;
		while (r == 0 && pos < have && (end = memchr(buf + pos, '\0', have - pos))) {
			if (end == buf + pos) {
				errno = EPROTO;
				r = -1;
				break;
			}
			r = hide_one(p, ws, buf[pos], buf + pos + 1, &nmasks);
			pos = (size_t)(end - buf) + 1;
		}
		if (r < 0)
			break;
		memmove(buf, buf + pos, have - pos);
		have -= pos;
		if (n == 0 || (pos == 0 && have == sizeof(buf))) {
			if (have) { /* a record cut short, or longer than a path */
				errno = EPROTO;
				r = -1;
			}
			break;
		}
	}
	int saved = errno;
	close(ws);
	errno = saved;
	return r;
}
