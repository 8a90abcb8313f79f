/* child.c: the sandbox's side of clone(): pid 1 (the reaper) builds the
 * box and watches over it; pid 2 locks itself down and becomes the user's
 * program. Only system calls on buffers the parent prepared: no malloc,
 * no stdio, no locks (see child.h for why). Each step that can fail
 * reports its number and errno to the parent, then the child exits. */
#include "sandbox/child.h"

#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/keyctl.h>
#include <linux/landlock.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/hide.h"
#include "sandbox/sandbox.h"

/* Landlock bits newer than this system's headers. */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#define KILN_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define KILN_LANDLOCK_SCOPE_SIGNAL               (1ULL << 1)
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

/* struct landlock_ruleset_attr as of ABI 6; older kernels get a prefix. */
struct kiln_landlock_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

/* Fds of pid 1 after it has tidied its table. */
enum {
	FD_STATUS = 3,
	FD_SYNC,
	FD_OUT,
	FD_ERR,
	FD_IN, /* only when the plan has an in_fd */
	FD_FIRST_FREE,
	/* Pid 1's own, at fixed numbers so their paths are constants. */
	FD_WS_LOWER = 40, /* the host workspace (O_PATH), until the overlay is made */
	FD_MASK = 41,     /* a read-only tmpfs holding the masks "d" and "f" */
	FD_MAXMNT = 42,   /* user.max_mnt_namespaces, until the masks are made */
};
#define WS_LOWER_PATH "/proc/self/fd/40"
#define OVL_DIR       "kiln-ovl"

static const char *const step_names[] = {
    [SBX_STEP_NONE] = "starting the sandbox",
    [SBX_STEP_SYNC] = "waiting for the user namespace id maps",
    [SBX_STEP_IDS] = "switching to the sandbox's uid and gid",
    [SBX_STEP_FDS] = "closing inherited file descriptors",
    [SBX_STEP_CMDLINE] = "hiding the server's command line",
    [SBX_STEP_PRIVATE] = "making the mount namespace private",
    [SBX_STEP_ROOT_TMPFS] = "mounting the new root's tmpfs",
    [SBX_STEP_MKDIR] = "creating directories in the new root",
    [SBX_STEP_SYMLINK] = "creating symlinks in the new root",
    [SBX_STEP_BIND] = "bind-mounting system directories read-only",
    [SBX_STEP_FILE] = "writing files into the new root",
    [SBX_STEP_PROC] = "mounting a fresh /proc",
    [SBX_STEP_SCRATCH] = "mounting the /work and /tmp tmpfs",
    [SBX_STEP_WORKSPACE] = "showing the workspace folder (overlayfs)",
    [SBX_STEP_HIDE] = "hiding the workspace's secrets",
    [SBX_STEP_LOOPBACK] = "bringing up the loopback interface",
    [SBX_STEP_HOSTNAME] = "setting the hostname",
    [SBX_STEP_PIVOT] = "pivoting into the new root",
    [SBX_STEP_READONLY] = "making the new root read-only",
    [SBX_STEP_REPORT] = "reporting to the server",
    [SBX_STEP_CODE] = "writing the code into the box",
    [SBX_STEP_FORK] = "starting the program's process",
    [SBX_STEP_SESSION] = "starting a new session",
    [SBX_STEP_STDIO] = "connecting stdin, stdout and stderr",
    [SBX_STEP_CHDIR] = "entering /work",
    [SBX_STEP_KEYRING] = "joining a fresh session keyring",
    [SBX_STEP_RLIMIT] = "setting resource limits",
    [SBX_STEP_CAPS] = "dropping capabilities",
    [SBX_STEP_NO_NEW_PRIVS] = "setting no_new_privs",
    [SBX_STEP_LANDLOCK] = "applying the Landlock ruleset",
    [SBX_STEP_SECCOMP] = "loading the seccomp filter",
    [SBX_STEP_EXEC] = "executing the interpreter",
    [SBX_STEP_CGROUP] = "joining the cgroup",
};

const char *sbx_step_name(int step)
{
	if (step < 0 || (size_t)step >= sizeof(step_names) / sizeof(step_names[0]) ||
	    !step_names[step])
		return "setting up the sandbox";
	return step_names[step];
}

int sbx_landlock_abi(void)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	return abi < 0 ? 0 : (int)abi;
}

ssize_t sbx_status_send_fds(int sock, struct iovec *iov, size_t iovcnt, const int *fds, size_t nfds,
                            int flags)
{
	union {
		char buf[CMSG_SPACE(SBX_STATUS_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = iovcnt};
	if (nfds > SBX_STATUS_MAX_FDS) {
		errno = E2BIG;
		return -1;
	}
	if (nfds) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	ssize_t n;
	while ((n = sendmsg(sock, &mh, MSG_NOSIGNAL | flags)) < 0 && errno == EINTR)
		;
	return n;
}

ssize_t sbx_status_send(int sock, struct iovec *iov, size_t iovcnt, int pass_fd)
{
	return sbx_status_send_fds(sock, iov, iovcnt, &pass_fd, pass_fd >= 0 ? 1 : 0, 0);
}

ssize_t sbx_status_recv_fds(int sock, struct iovec *iov, size_t iovcnt, int flags, int *ret_fds,
                            size_t nfds)
{
	union {
		char buf[CMSG_SPACE(SBX_STATUS_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = iov,
	                    .msg_iovlen = iovcnt,
	                    .msg_control = u.buf,
	                    .msg_controllen = sizeof(u.buf)};
	ssize_t n;
	while ((n = recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	for (size_t i = 0; i < nfds; i++)
		ret_fds[i] = -1;
	if (n < 0)
		return n;
	bool extra = false;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (i < nfds && ret_fds[i] < 0) {
				ret_fds[i] = fd;
			} else {
				close(fd); /* more than the caller takes */
				extra = true;
			}
		}
	}
	if (extra || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		for (size_t i = 0; i < nfds; i++)
			if (ret_fds[i] >= 0) {
				close(ret_fds[i]);
				ret_fds[i] = -1;
			}
		errno = EMSGSIZE;
		return -1;
	}
	return n;
}

ssize_t sbx_status_recv(int sock, struct iovec *iov, size_t iovcnt, int flags, int *ret_fd)
{
	return sbx_status_recv_fds(sock, iov, iovcnt, flags, ret_fd, 1);
}

static void send_msg(int fd, const struct sbx_msg *m, int pass_fd)
{
	struct iovec iov = {.iov_base = (void *)m, .iov_len = sizeof(*m)};
	sbx_status_send(fd, &iov, 1, pass_fd);
}

/* Report a failed step to the parent and end pid 1. */
__attribute__((noreturn)) static void fail(int step)
{
	struct sbx_msg m = {.type = SBX_MSG_FAIL, .step = step, .err = errno};
	send_msg(FD_STATUS, &m, -1);
	_exit(127);
}

/* Failure of pid 2 before exec: tell pid 1 through the exec pipe. */
__attribute__((noreturn)) static void prog_fail(int pipe_fd, int step)
{
	int rec[2] = {step, errno};
	ssize_t w = write(pipe_fd, rec, sizeof(rec));
	(void)w;
	_exit(127);
}

#define STEP(step, expr)                                                                           \
	do {                                                                                       \
		if ((expr) < 0)                                                                    \
			fail(step);                                                                \
	} while (0)

#define PSTEP(pfd, step, expr)                                                                     \
	do {                                                                                       \
		if ((expr) < 0)                                                                    \
			prog_fail(pfd, step);                                                      \
	} while (0)

static int open_beneath(int rootfd, const char *path, int flags)
{
	struct open_how how = {
	    .flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	return (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
}

/* Attach mount fd mfd on path under the new root (resolved without
 * following any symlink, so a swapped link cannot redirect the mount). */
static int attach(int rootfd, int mfd, const char *path)
{
	int tgt = open_beneath(rootfd, path, O_PATH);
	if (tgt < 0)
		return -1;
	int r = move_mount(mfd, "", tgt, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
	int saved = errno;
	close(tgt);
	errno = saved;
	return r;
}

static int bind_one(int rootfd, const struct sbx_bind *b)
{
	int src =
	    open_tree(AT_FDCWD, b->src,
	              OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW);
	if (src < 0)
		return (b->flags & SBX_BIND_OPTIONAL) && errno == ENOENT ? 0 : -1;
	if (b->flags & SBX_BIND_FILE) {
		int f = open_beneath(rootfd, b->dst, O_CREAT | O_EXCL | O_WRONLY);
		if (f < 0)
			goto fail;
		close(f);
	} else if (mkdirat(rootfd, b->dst, 0755) < 0 && errno != EEXIST) {
		goto fail;
	}
	struct mount_attr attr = {
	    .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
	                ((b->flags & SBX_BIND_DEV) ? MOUNT_ATTR_NOEXEC : MOUNT_ATTR_NODEV),
	};
	if (mount_setattr(src, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0)
		goto fail;
	if (attach(rootfd, src, b->dst) < 0)
		goto fail;
	close(src);
	return 0;
fail:;
	int saved = errno;
	close(src);
	errno = saved;
	return -1;
}

static int write_file(int rootfd, const struct sbx_file *f)
{
	int fd = open_beneath(rootfd, f->path, O_CREAT | O_EXCL | O_WRONLY);
	if (fd < 0)
		return -1;
	size_t off = 0;
	while (off < f->len) {
		ssize_t w = write(fd, f->data + off, f->len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t)w;
	}
	if (fchmod(fd, f->mode) < 0) {
		close(fd);
		return -1;
	}
	return close(fd);
}

/* A new filesystem instance (fsopen/fsmount): returns the mount fd.
 * Every tmpfs gets an inode cap besides its size: an empty directory
 * costs no page of the size but about a KiB of kernel memory. */
static int new_fs(const char *type, const char *size, const char *inodes, const char *mode,
                  unsigned attrs)
{
	int fs = fsopen(type, FSOPEN_CLOEXEC);
	if (fs < 0)
		return -1;
	if ((size && fsconfig(fs, FSCONFIG_SET_STRING, "size", size, 0) < 0) ||
	    (inodes && fsconfig(fs, FSCONFIG_SET_STRING, "nr_inodes", inodes, 0) < 0) ||
	    (mode && fsconfig(fs, FSCONFIG_SET_STRING, "mode", mode, 0) < 0) ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		int saved = errno;
		close(fs);
		errno = saved;
		return -1;
	}
	int m = fsmount(fs, FSMOUNT_CLOEXEC, attrs);
	int saved = errno;
	close(fs);
	errno = saved;
	return m;
}

static int mount_proc(int rootfd, bool zygote)
{
	/* A zygote's children write their id maps through it. */
	int m = new_fs("proc", NULL, NULL, NULL,
	               (zygote ? 0 : MOUNT_ATTR_RDONLY) | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
	                   MOUNT_ATTR_NOEXEC);
	if (m < 0)
		return -1;
	int r = attach(rootfd, m, "proc");
	close(m);
	if (r < 0 || zygote)
		return r;
	/* /proc/keys lists the descriptions of every key the box's uid may
	 * view on the host, /proc/cmdline the host kernel's boot arguments:
	 * cover them with /dev/null (the keys files are absent from kernels
	 * without keyrings, whose calls seccomp refuses anyway). */
	static const char *const hide[] = SBX_PROC_HIDDEN;
	for (size_t i = 0; i < sizeof(hide) / sizeof(hide[0]); i++) {
		int null = open_tree(AT_FDCWD, "/dev/null", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (null < 0)
			return -1;
		struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
		                                    MOUNT_ATTR_NOEXEC};
		r = mount_setattr(null, "", AT_EMPTY_PATH, &ro, sizeof(ro));
		if (r == 0)
			r = attach(rootfd, null, hide[i]);
		int saved = errno;
		close(null);
		errno = saved;
		if (r < 0 && (i == 0 || errno != ENOENT))
			return -1;
	}
	return 0;
}

/* /work and /tmp: size-limited tmpfs. The /work fd is kept so the server
 * can read the workspace back after the box is gone. */
static int mount_scratch(int rootfd, const struct sbx_plan *p, int *ret_workfd)
{
	int m = new_fs("tmpfs", p->scratch_size, p->scratch_inodes, "1777",
	               MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (m < 0 || attach(rootfd, m, "tmp") < 0)
		return -1;
	close(m);
	m = new_fs("tmpfs", p->scratch_size, p->scratch_inodes, "0755",
	           MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (m < 0)
		return -1;
	if (mkdirat(m, "out", 0755) < 0)
		return -1;
	int workfd = openat(m, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (workfd < 0 || attach(rootfd, m, "work") < 0)
		return -1;
	close(m);
	*ret_workfd = workfd;
	return 0;
}

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
 * gets a clone of one of them mounted over it. */
static int make_masks(void)
{
	int m = new_fs("tmpfs", "65536", "8", "0555",
	               MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	if (m < 0)
		return -1;
	int f = openat(m, "f", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0);
	if (f < 0 || fchmod(f, 0) < 0 || mkdirat(m, "d", 0) < 0)
		return -1;
	close(f);
	struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
	if (mount_setattr(m, "", AT_EMPTY_PATH, &ro, sizeof(ro)) < 0)
		return -1;
	if (m != FD_MASK && (dup3(m, FD_MASK, O_CLOEXEC) < 0 || close(m) < 0))
		return -1;
	return 0;
}

/* The workspace: an overlay of the host folder (FD_WS_LOWER) under a
 * tmpfs upper layer, mounted at its own path. The upper tmpfs is
 * mounted at /kiln-ovl only while the overlay is made (overlayfs takes
 * its layers by path and keeps private clones of them), then detached;
 * its fd goes to *ret_upperfd. Runs after the scratch tmpfs, since the
 * workspace may lie under /tmp or /work. */
static int mount_workspace(int rootfd, const struct sbx_plan *p, int *ret_upperfd)
{
	int m = new_fs("tmpfs", p->scratch_size, p->scratch_inodes, "0755",
	               MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (m < 0 || mkdirat(m, "u", 0755) < 0 || mkdirat(m, "w", 0755) < 0)
		return -1;
	int upper = openat(m, "u", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (upper < 0 || mkdirat(rootfd, OVL_DIR, 0700) < 0 || attach(rootfd, m, OVL_DIR) < 0)
		return -1;
	close(m);
	int fs = fsopen("overlay", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -1;
	/* userxattr: overlayfs's own marks (opaque directories) go in
	 * user.overlay.* xattrs, the ones a user namespace may set. */
	if (fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir", WS_LOWER_PATH, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", "/tmp/" OVL_DIR "/u", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "workdir", "/tmp/" OVL_DIR "/w", 0) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -1;
	int ovl = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	close(fs);
	if (ovl < 0 || mkdir_all(rootfd, p->ws_dst) < 0 || attach(rootfd, ovl, p->ws_dst) < 0)
		return -1;
	close(ovl);
	close(FD_WS_LOWER);
	if (umount2("/tmp/" OVL_DIR, MNT_DETACH) < 0 || unlinkat(rootfd, OVL_DIR, AT_REMOVEDIR) < 0)
		return -1;
	*ret_upperfd = upper;
	return make_masks();
}

/* A zygote's box (plan.zygote) with the workspace: no overlay, no
 * masks; the host folder (FD_WS_LOWER) read-only at /kiln-ws, where
 * each run's pid 1 takes it as its overlay's lower layer (overlayfs
 * takes a layer only from its mounter's own mount namespace), and the
 * folder's path as empty directories, where that overlay goes (the
 * root is read-only by then). See zygote.h. */
static int hold_workspace(int rootfd, const struct sbx_plan *p)
{
	int m = open_tree(FD_WS_LOWER, "",
	                  OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
	if (m < 0)
		return -1;
	struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
	                                    MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC};
	if (mount_setattr(m, "", AT_EMPTY_PATH | AT_RECURSIVE, &ro, sizeof(ro)) < 0 ||
	    mkdirat(rootfd, SBX_ZYGOTE_WS_LOWER, 0700) < 0 ||
	    attach(rootfd, m, SBX_ZYGOTE_WS_LOWER) < 0 || mkdir_all(rootfd, p->ws_dst) < 0)
		return -1;
	close(m);
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

static bool hidden_name(const struct sbx_plan *p, const char *name)
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
 * under it); the rest comes listed (hide_listed). */
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
		if (hidden_name(p, name) || (dir && depth + 1 >= SBX_HIDE_DEPTH)) {
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
		int fd = open_beneath(ws, path, O_RDONLY | O_DIRECTORY);
		if (fd < 0)
			return errno == EACCES ? 0 : -1;
		return walk_and_mask(p, fd, nmasks);
	}
	if (kind != SBX_HIDE_FILE && kind != SBX_HIDE_DIR) {
		errno = EPROTO;
		return -1;
	}
	int tgt = open_beneath(ws, path, O_PATH);
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
static int hide_listed(const struct sbx_plan *p, int listfd)
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

static int loopback_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	int r = ioctl(s, SIOCGIFFLAGS, &ifr);
	if (r == 0) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		r = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	int saved = errno;
	close(s);
	errno = saved;
	return r;
}

/* Forbid every namespace in the box's user namespace (its children would
 * be counted against these), a layer under the seccomp filter, and make
 * its inotify quotas small. Best
 * effort: older kernels lack some of these files. With a workspace, the
 * mount namespace limit is left for later: each mask pid 1 mounts after
 * GO is an open_tree() clone, which makes an anonymous mount namespace;
 * its file stays open at FD_MAXMNT and pid 1 writes 0 after the masks. */
static void forbid_namespaces(bool keep_mnt)
{
	static const char *const names[] = {
	    "/proc/sys/user/max_mnt_namespaces",    "/proc/sys/user/max_user_namespaces",
	    "/proc/sys/user/max_net_namespaces",    "/proc/sys/user/max_pid_namespaces",
	    "/proc/sys/user/max_ipc_namespaces",    "/proc/sys/user/max_uts_namespaces",
	    "/proc/sys/user/max_cgroup_namespaces", "/proc/sys/user/max_time_namespaces",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int fd = open(names[i], O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (i == 0 && keep_mnt) {
			if (fd != FD_MAXMNT && dup3(fd, FD_MAXMNT, O_CLOEXEC) >= 0)
				close(fd);
			continue;
		}
		ssize_t w = write(fd, "0\n", 2);
		(void)w;
		close(fd);
	}
	/* inotify counts per user up to the host's own limit (128
	 * instances here): a box that took them all would leave its owner's
	 * editor without file watchers. */
	static const struct {
		const char *path, *value;
	} quotas[] = {
	    {"/proc/sys/user/max_inotify_instances", SBX_INOTIFY_INSTANCES},
	    {"/proc/sys/user/max_inotify_watches", SBX_INOTIFY_WATCHES},
	};
	for (size_t i = 0; i < sizeof(quotas) / sizeof(quotas[0]); i++) {
		int fd = open(quotas[i].path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t w = write(fd, quotas[i].value, strlen(quotas[i].value));
		(void)w;
		close(fd);
	}
}

/* The mount namespace limit kept open by forbid_namespaces: 0 now. */
static void forbid_mnt_namespaces(void)
{
	ssize_t w = write(FD_MAXMNT, "0\n", 2);
	(void)w;
	close(FD_MAXMNT);
}

static int pivot(int rootfd)
{
	if (fchdir(rootfd) < 0)
		return -1;
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return -1;
	/* The old root is stacked under the new one: detach it. */
	if (umount2(".", MNT_DETACH) < 0)
		return -1;
	return chdir("/");
}

static int write_self(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t len = strlen(text);
	ssize_t w = write(fd, text, len);
	int saved = errno;
	close(fd);
	errno = saved;
	return w == (ssize_t)len ? 0 : -1;
}

/* Pid 1 is a copy of the server, and /proc/1/cmdline, which anyone may
 * read, would show the program the server's argv (the kiln binary's
 * host path, its config's). Overwrite that memory (pid 1's own copy)
 * with "kiln": /proc/self/stat says where it is. */
static int hide_cmdline(void)
{
	char st[2048];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, st, sizeof(st) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	st[n] = '\0';
	/* Fields 48 and 49 (arg_start, arg_end), counted after the command
	 * name's closing parenthesis, which ends field 2. */
	char *q = strrchr(st, ')');
	unsigned long val[2] = {0, 0};
	for (int field = 2; q && *q && field < 49;) {
		if (*q++ != ' ')
			continue;
		field++;
		if (field >= 48) {
			unsigned long v = 0;
			while (*q >= '0' && *q <= '9')
				v = v * 10 + (unsigned long)(*q++ - '0');
			val[field - 48] = v;
		}
	}
	if (!val[0] || val[1] <= val[0]) {
		errno = EINVAL;
		return -1;
	}
	char *args = (char *)val[0];
	size_t len = val[1] - val[0];
	memset(args, 0, len);
	memcpy(args, "kiln", len > 5 ? 5 : len - 1);
	return 0;
}

/* Move fds[0..n) to 3..3+n and close everything else above 2. */
static int tidy_fds(const int *fds, int n)
{
	int maxfd = FD_FIRST_FREE;
	for (int i = 0; i < n; i++)
		if (fds[i] >= maxfd)
			maxfd = fds[i] + 1;
	int tmp[8];
	for (int i = 0; i < n; i++) {
		tmp[i] = fcntl(fds[i], F_DUPFD, maxfd);
		if (tmp[i] < 0)
			return -1;
		maxfd = tmp[i] + 1;
	}
	for (int i = 0; i < n; i++)
		if (dup2(tmp[i], 3 + i) < 0)
			return -1;
	return (int)syscall(SYS_close_range, 3 + n, ~0U, 0);
}

/* Effective, permitted and inheritable: empty. */
static int clear_caps(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	return (int)syscall(SYS_capset, &h, d);
}

/* No capability can come back: locked securebits (no root privileges,
 * no setuid fixups, no ambient raise), the bounding set and the ambient
 * set emptied. The effective set stays: pid 1 calls this before its
 * last mounts, and clear_caps() after them. */
static int lock_caps(void)
{
	if (prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_SETUID_FIXUP |
	                                 SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_NOROOT |
	                                 SECBIT_NOROOT_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
	                                 SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED) < 0)
		return -1;
	for (unsigned long cap = 0; cap < 64; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break; /* past the kernel's last capability */
			return -1;
		}
	}
	return prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
}

static int landlock_add(int rs, const char *path, uint64_t access)
{
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	struct landlock_path_beneath_attr pb = {.allowed_access = access, .parent_fd = fd};
	long r = syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
	int saved = errno;
	close(fd);
	errno = saved;
	return r < 0 ? -1 : 0;
}

/* Reads everywhere, writes only to /work, /tmp and the /dev nodes; with
 * ABI 6, no signals or abstract sockets beyond the program's own domain
 * (so pid 1 cannot be signalled from inside). */
static int apply_landlock(int abi, const char *ws)
{
	if (abi <= 0)
		return 0;
	uint64_t all = (1ULL << 13) - 1;
	if (abi >= 2)
		all |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		all |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		all |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	uint64_t read =
	    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
	uint64_t dev = read | LANDLOCK_ACCESS_FS_WRITE_FILE;
	if (abi >= 3)
		dev |= LANDLOCK_ACCESS_FS_TRUNCATE;
	struct kiln_landlock_attr attr = {.handled_access_fs = all};
	size_t size = sizeof(uint64_t);
	if (abi >= 6) {
		attr.scoped = KILN_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | KILN_LANDLOCK_SCOPE_SIGNAL;
		size = sizeof(attr);
	}
	int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (rs < 0)
		return -1;
	if (landlock_add(rs, "/", read) < 0 || landlock_add(rs, SBX_WORKSPACE, all) < 0 ||
	    landlock_add(rs, "/tmp", all) < 0 || landlock_add(rs, "/dev", dev) < 0 ||
	    (ws && landlock_add(rs, ws, all) < 0) ||
	    syscall(SYS_landlock_restrict_self, rs, 0) < 0) {
		int saved = errno;
		close(rs);
		errno = saved;
		return -1;
	}
	close(rs);
	return 0;
}

static int reset_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &sa, NULL); /* fails harmlessly for glibc's own */
	sigset_t none;
	sigemptyset(&none);
	return sigprocmask(SIG_SETMASK, &none, NULL);
}

/* GO's program, in pid 1's own memory (static: nothing allocates here),
 * which the program's process shares until its execve. */
static struct sbx_go go_hdr;
static char go_strings[SBX_GO_STRINGS];
static char *go_argv[SBX_GO_ARGS + 1];
static char *go_envp[SBX_GO_ENV + 1];

/* Split GO's strings into the code path, go_argv and go_envp. */
static int split_go(const struct sbx_go *go, const char **ret_code_path)
{
	size_t off = 0, n = go->strings_len;
	if (go->argc < 1 || go->argc > SBX_GO_ARGS || go->envc > SBX_GO_ENV ||
	    n > sizeof(go_strings))
		return -1;
	char *slots[1 + SBX_GO_ARGS + SBX_GO_ENV];
	size_t want = 1 + go->argc + go->envc;
	for (size_t i = 0; i < want; i++) {
		char *end = off < n ? memchr(go_strings + off, '\0', n - off) : NULL;
		if (!end)
			return -1;
		slots[i] = go_strings + off;
		off = (size_t)(end - go_strings) + 1;
	}
	*ret_code_path = slots[0];
	for (size_t i = 0; i < go->argc; i++)
		go_argv[i] = slots[1 + i];
	go_argv[go->argc] = NULL;
	for (size_t i = 0; i < go->envc; i++)
		go_envp[i] = slots[1 + go->argc + i];
	go_envp[go->envc] = NULL;
	return go_argv[0][0] == '/' ? 0 : -1;
}

/* What the program's process starts from. It shares pid 1's memory
 * until its execve (clone(CLONE_VM), as posix_spawn does: no copy of the
 * server's page tables to make, nor to tear down at the execve), but
 * never runs at the same time as pid 1 but for a system call's entry or
 * exit: pid 1 waits for it at each step (see start_program). So the two
 * share this struct, GO's buffers, and glibc's errno without a race.
 * With a run's box (await_go) it is prepared before READY and waits on
 * run_fd for the run, which pid 1 puts in rlimits, argv and envp before
 * waking it; otherwise (a worker's, a zygote's) they are the plan's. */
struct prog_args {
	const struct sbx_plan *p;
	int pfd;    /* the exec report pipe */
	int run_fd; /* the prepared process's end of the run socket, or -1 */
	const struct sbx_rlimit *rlimits;
	size_t nrlimits;
	char *const *argv;
	char *const *envp;
};

/* The prepared process, locked down: tell pid 1 (one byte on run_fd,
 * FD 4 by now), then wait for its byte, sent once the run is in *a.
 * EOF instead: the box was not used (pid 1 is ending, and the namespace
 * with it). Under the seccomp filter: only read and write. */
static int await_run(int run_fd)
{
	char c = 'p';
	ssize_t n;
	while ((n = write(run_fd, &c, 1)) < 0 && errno == EINTR)
		;
	if (n != 1)
		return -1;
	while ((n = read(run_fd, &c, 1)) < 0 && errno == EINTR)
		;
	if (n == 0)
		_exit(0);
	return n == 1 ? close(run_fd) : -1;
}

/* Pid 2: lock down and become the program. Setup reads top to bottom;
 * a prepared process does all of it but the rlimits before its run is
 * known (docs/sandbox.md). */
__attribute__((noreturn)) static void program(const struct prog_args *a)
{
	const struct sbx_plan *p = a->p;
	int pfd = a->pfd;
	int run_fd = a->run_fd;
	PSTEP(pfd, SBX_STEP_SESSION, prctl(PR_SET_PDEATHSIG, SIGKILL));
	PSTEP(pfd, SBX_STEP_SESSION, setsid());
	int in = p->in_fd >= 0 ? FD_IN : open("/dev/null", O_RDONLY | O_CLOEXEC);
	PSTEP(pfd, SBX_STEP_STDIO, in);
	PSTEP(pfd, SBX_STEP_STDIO, dup2(in, 0));
	PSTEP(pfd, SBX_STEP_STDIO, dup2(FD_OUT, 1));
	PSTEP(pfd, SBX_STEP_STDIO, dup2(FD_ERR, 2));
	/* Keep only the close-on-exec report pipe at 3 (exec closes it too)
	 * and the run socket at 4. Neither can be 3 before (pid 1's status
	 * socket is), so moving the pipe first cannot close the socket. */
	if (pfd != 3) {
		PSTEP(pfd, SBX_STEP_STDIO, dup3(pfd, 3, O_CLOEXEC));
		pfd = 3;
	}
	if (run_fd >= 0 && run_fd != 4) {
		PSTEP(pfd, SBX_STEP_STDIO, dup3(run_fd, 4, O_CLOEXEC));
		run_fd = 4;
	}
	PSTEP(pfd, SBX_STEP_STDIO, (int)syscall(SYS_close_range, run_fd >= 0 ? 5 : 4, ~0U, 0));
	PSTEP(pfd, SBX_STEP_CHDIR, chdir(p->ws_host ? p->ws_host : SBX_WORKSPACE));
	umask(022);
	PSTEP(pfd, SBX_STEP_KEYRING, (int)syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, 0));
	/* Pid 1 locked the securebits and emptied the bounding and ambient
	 * sets before starting this process, which inherits them; its
	 * effective and permitted sets are still pid 1's when prepared
	 * ahead (pid 1 has mounts left to make), so they are emptied here. */
	PSTEP(pfd, SBX_STEP_CAPS, prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0));
	PSTEP(pfd, SBX_STEP_CAPS, clear_caps());
	PSTEP(pfd, SBX_STEP_NO_NEW_PRIVS, prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	if (!p->zygote)
		PSTEP(pfd, SBX_STEP_LANDLOCK, apply_landlock(p->landlock_abi, p->ws_host));
	PSTEP(pfd, SBX_STEP_SESSION, reset_signals());
	/* From here on the filter applies to the process's own calls: the
	 * wait for the run, the rlimits (prlimit64 on itself) and execve. */
	PSTEP(pfd, SBX_STEP_SECCOMP, prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, p->seccomp));
	if (run_fd >= 0)
		PSTEP(pfd, SBX_STEP_CODE, await_run(run_fd));
	for (size_t i = 0; i < a->nrlimits; i++)
		PSTEP(pfd, SBX_STEP_RLIMIT, setrlimit(a->rlimits[i].resource, &a->rlimits[i].lim));
	execve(a->argv[0], a->argv, a->envp);
	prog_fail(pfd, SBX_STEP_EXEC);
}

static int program_entry(void *arg)
{
	program(arg);
}

static void noop_handler(int sig)
{
	(void)sig;
}

/* Wait for the server's GO: the header in *go, its strings in
 * go_strings, the code's memfd in fds[0] and, with go->hide, the list
 * of what to hide in fds[1] (else -1). Returns 0, or -1 with errno
 * (EPIPE: the server closed the socket, it does not need this box). */
static int recv_go(struct sbx_go *go, int fds[2])
{
	struct iovec iov[2] = {{.iov_base = go, .iov_len = sizeof(*go)},
	                       {.iov_base = go_strings, .iov_len = sizeof(go_strings)}};
	ssize_t n = sbx_status_recv_fds(FD_STATUS, iov, 2, 0, fds, 2);
	if (n <= 0) {
		errno = n < 0 ? errno : EPIPE;
		return -1;
	}
	if (fds[0] < 0 || (size_t)n < sizeof(*go) || (size_t)n != sizeof(*go) + go->strings_len ||
	    go->nrlimits > SBX_MAX_RLIMITS || (go->hide != 0) != (fds[1] >= 0)) {
		for (int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		errno = EPROTO;
		return -1;
	}
	return 0;
}

/* Copy the code from the server's memfd to path, read-only. */
static int write_code(const char *path, int codefd, uint64_t len)
{
	int rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -1;
	int fd = open_beneath(rootfd, path, O_CREAT | O_EXCL | O_WRONLY);
	int saved = errno;
	close(rootfd);
	if (fd < 0) {
		errno = saved;
		return -1;
	}
	char buf[16384];
	uint64_t off = 0;
	while (off < len) {
		ssize_t n = pread(codefd, buf, sizeof(buf), (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			errno = n < 0 ? errno : EIO;
			break;
		}
		for (ssize_t w = 0; w < n;) {
			ssize_t k = write(fd, buf + w, (size_t)(n - w));
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				goto out;
			w += k;
		}
		off += (uint64_t)n;
	}
out:
	if (off == len && fchmod(fd, 0444) == 0)
		return close(fd);
	saved = errno ? errno : EIO;
	close(fd);
	errno = saved;
	return -1;
}

/* Pid 1 after the program started: reap every process, forward the
 * server's signals, and when the program has ended kill what is left
 * and report. SIGUSR1 from the server means "end it now". */
__attribute__((noreturn)) static void reap(pid_t prog, const sigset_t *set)
{
	int prog_status = 0;
	bool prog_done = false;
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(set, &si);
		if (sig < 0)
			continue;
		if (sig != SIGCHLD) {
			/* Only the server may steer pid 1: its signals arrive
			 * from outside the namespace, with si_pid 0. */
			if (si.si_code != SI_USER || si.si_pid != 0)
				continue;
			if (sig == SIGUSR1)
				kill(-1, SIGKILL);
			else if (!prog_done)
				kill(-prog, sig);
			continue;
		}
		for (;;) {
			int st;
			pid_t pid = waitpid(-1, &st, WNOHANG);
			if (pid > 0) {
				if (pid == prog) {
					prog_status = st;
					prog_done = true;
					/* Nothing may outlive the program. */
					kill(-1, SIGKILL);
				}
				continue;
			}
			if (pid < 0 && errno == ECHILD && prog_done) {
				struct sbx_msg m = {.type = SBX_MSG_EXIT, .wstatus = prog_status};
				getrusage(RUSAGE_CHILDREN, &m.ru);
				/* pid 1's exit tears the namespaces down, which
				 * takes a CPU for a millisecond or more: at the
				 * lowest priority, so that the server it has just
				 * woken answers the run first. */
				setpriority(PRIO_PROCESS, 0, 19);
				send_msg(FD_STATUS, &m, -1);
				_exit(0);
			}
			break;
		}
	}
}

/* Add sigs to *set and take them through sigwaitinfo only: blocked,
 * with a handler (the kernel drops signals to a namespace's init that
 * has none, unless they are blocked). */
static int listen_signals(sigset_t *set, const int *sigs, size_t n)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = noop_handler;
	sigset_t add;
	sigemptyset(&add);
	for (size_t i = 0; i < n; i++) {
		sigaddset(set, sigs[i]);
		sigaddset(&add, sigs[i]);
		sigaction(sigs[i], &sa, NULL);
	}
	return sigprocmask(SIG_BLOCK, &add, NULL);
}

/* Start the program's process (program()) on a stack of its own, in
 * pid 1's memory. Pid 1 sleeps until its execve (CLONE_VFORK), or, when
 * it is prepared ahead (a->run_fd), until it has locked itself down and
 * says so on the run socket. glibc's clone() wrapper takes no lock,
 * unlike its fork(). */
static pid_t start_program(struct prog_args *a)
{
	static char prog_stack[64 * 1024] __attribute__((aligned(64)));
	return clone(program_entry, prog_stack + sizeof(prog_stack),
	             CLONE_VM | (a->run_fd >= 0 ? 0 : CLONE_VFORK) | SIGCHLD, a);
}

/* The prepared process ended instead of saying it is ready: its record
 * (step and errno) is on the exec pipe; report it as pid 1's own. */
__attribute__((noreturn)) static void fail_prepared(int pipe_fd)
{
	int rec[2];
	ssize_t n;
	while ((n = read(pipe_fd, rec, sizeof(rec))) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(rec)) {
		errno = EPIPE;
		fail(SBX_STEP_FORK);
	}
	errno = rec[1];
	fail(rec[0]);
}

/* Pid 1 keeps none of the program's ends: their EOF tells the server
 * that the program (and whatever it started) ended. */
static void close_program_ends(const struct sbx_plan *p, int pfd)
{
	if (pfd >= 0)
		close(pfd);
	close(FD_OUT);
	close(FD_ERR);
	if (p->in_fd >= 0)
		close(FD_IN);
}

__attribute__((noreturn)) void sbx_child_main(const struct sbx_plan *p)
{
	/* If the server dies, pid 1 dies, and with it the whole box. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(127);
	int keep[] = {p->status_fd, p->sync_fd, p->out_fd, p->err_fd, p->in_fd};
	if (tidy_fds(keep, p->in_fd >= 0 ? 5 : 4) < 0)
		_exit(127);
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(nul, 2) < 0)
		fail(SBX_STEP_FDS);
	close(nul);
	STEP(SBX_STEP_CMDLINE, hide_cmdline());

	ssize_t n;
	if (p->self_map) {
		STEP(SBX_STEP_IDS, write_self("/proc/self/setgroups", "deny\n"));
		STEP(SBX_STEP_IDS, write_self("/proc/self/uid_map", p->uid_map));
		STEP(SBX_STEP_IDS, write_self("/proc/self/gid_map", p->gid_map));
	} else {
		/* The parent writes uid_map/gid_map, then one byte; EOF means
		 * it gave up (and will kill us anyway). */
		char c;
		while ((n = read(FD_SYNC, &c, 1)) < 0 && errno == EINTR)
			;
		if (n != 1) {
			errno = n < 0 ? errno : EPIPE;
			fail(SBX_STEP_SYNC);
		}
	}
	close(FD_SYNC);
	/* Raw system calls: glibc's wrappers broadcast id changes to every
	 * thread it believes exists (the server's, which are not here), under
	 * a lock one of them may have held at clone time. */
	if (p->as_root)
		STEP(SBX_STEP_IDS, (int)syscall(SYS_setgroups, 0, NULL));
	STEP(SBX_STEP_IDS, (int)syscall(SYS_setresgid, SBX_INNER_ID, SBX_INNER_ID, SBX_INNER_ID));
	STEP(SBX_STEP_IDS, (int)syscall(SYS_setresuid, SBX_INNER_ID, SBX_INNER_ID, SBX_INNER_ID));
	/* A change of uid clears the parent-death signal: set it again, then
	 * make sure the parent did not die in between (its end of the status
	 * socket would be closed). */
	STEP(SBX_STEP_IDS, prctl(PR_SET_PDEATHSIG, SIGKILL));
	struct pollfd pfd = {.fd = FD_STATUS, .events = POLLIN};
	if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLERR)))
		_exit(127);
	/* Only now: a non-dumpable process's /proc files belong to root (an
	 * unprivileged parent could not have written the id maps), and a uid
	 * change would have reset the flag. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

	/* The new root. */
	STEP(SBX_STEP_PRIVATE, mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	/* The host folder, opened in this mount namespace before the new
	 * root covers /tmp (where it may be). */
	if (p->ws_host) {
		int lower = open(p->ws_host, O_PATH | O_DIRECTORY | O_CLOEXEC);
		STEP(SBX_STEP_WORKSPACE, lower);
		STEP(SBX_STEP_WORKSPACE, dup3(lower, FD_WS_LOWER, O_CLOEXEC));
		close(lower);
	}
	STEP(SBX_STEP_ROOT_TMPFS,
	     mount("kiln", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, p->root_opts));
	int rootfd = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	STEP(SBX_STEP_ROOT_TMPFS, rootfd);
	for (size_t i = 0; i < p->ndirs; i++)
		if (mkdirat(rootfd, p->dirs[i], 0755) < 0 && errno != EEXIST)
			fail(SBX_STEP_MKDIR);
	for (size_t i = 0; i < p->nlinks; i++)
		STEP(SBX_STEP_SYMLINK, symlinkat(p->links[i].target, rootfd, p->links[i].path));
	for (size_t i = 0; i < p->nbinds; i++)
		STEP(SBX_STEP_BIND, bind_one(rootfd, &p->binds[i]));
	for (size_t i = 0; i < p->nfiles; i++)
		STEP(SBX_STEP_FILE, write_file(rootfd, &p->files[i]));
	STEP(SBX_STEP_PROC, mount_proc(rootfd, p->zygote));
	int workfd = -1;
	STEP(SBX_STEP_SCRATCH, mount_scratch(rootfd, p, &workfd));
	int upperfd = -1;
	if (p->ws_host && p->zygote)
		STEP(SBX_STEP_WORKSPACE, hold_workspace(rootfd, p));
	else if (p->ws_host)
		STEP(SBX_STEP_WORKSPACE, mount_workspace(rootfd, p, &upperfd));
	STEP(SBX_STEP_LOOPBACK, loopback_up());
	STEP(SBX_STEP_HOSTNAME, sethostname("kiln", 4));
	if (!p->zygote)
		forbid_namespaces(p->ws_host != NULL);
	STEP(SBX_STEP_PIVOT, pivot(rootfd));
	close(rootfd);
	struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
	if (!p->await_go)
		STEP(SBX_STEP_READONLY, mount_setattr(AT_FDCWD, "/", 0, &ro, sizeof(ro)));

	/* Signals reach pid 1 only through sigwaitinfo (reap()): SIGCHLD
	 * from before the program's process exists (it may end before GO),
	 * the server's once the program is about to run. Until then they
	 * keep the disposition and mask pid 1 was born with, the server's
	 * (SIGUSR1, "end it now", ends the waiting box at once). */
	sigset_t set;
	sigemptyset(&set);
	STEP(SBX_STEP_FORK, listen_signals(&set, (const int[]){SIGCHLD}, 1));
	static const int server_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1};

	/* No capability can come back, to pid 1 or to anything it starts;
	 * pid 1 keeps its effective set for the mounts GO may still need
	 * (the masks, the read-only root), and empties it after them. */
	STEP(SBX_STEP_CAPS, lock_caps());
	STEP(SBX_STEP_NO_NEW_PRIVS, prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));

	int pp[2];
	STEP(SBX_STEP_FORK, pipe2(pp, O_CLOEXEC));
	struct prog_args args = {.p = p,
	                         .pfd = pp[1],
	                         .run_fd = -1,
	                         .rlimits = p->rlimits,
	                         .nrlimits = p->nrlimits,
	                         .argv = p->argv,
	                         .envp = p->envp};
	pid_t pid = -1;
	int run_sock = -1;
	if (p->await_go) {
		/* A run's program process is made now, while the box waits:
		 * it locks itself down (everything but the rlimits, which
		 * come with GO) and then waits on the run socket, so that
		 * GO only has to hand it the run (docs/sandbox.md). */
		int sv[2];
		STEP(SBX_STEP_FORK, socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv));
		args.run_fd = sv[1];
		pid = start_program(&args);
		STEP(SBX_STEP_FORK, pid);
		close(sv[1]);
		run_sock = sv[0];
		close(pp[1]);
		char c;
		while ((n = read(run_sock, &c, 1)) < 0 && errno == EINTR)
			;
		if (n != 1)
			fail_prepared(pp[0]);
		close_program_ends(p, -1);
	}

	if (upperfd >= 0) {
		struct sbx_msg up = {.type = SBX_MSG_UPPER};
		send_msg(FD_STATUS, &up, upperfd);
		close(upperfd);
	}
	struct sbx_msg ready = {.type = SBX_MSG_READY};
	send_msg(FD_STATUS, &ready, workfd);
	close(workfd);

	/* A run's box waits here for its code: everything above may have
	 * happened long before the run was asked for. */
	if (p->await_go) {
		int fds[2];
		const char *code_path;
		if (recv_go(&go_hdr, fds) < 0) {
			if (errno == EPIPE)
				_exit(0);
			fail(SBX_STEP_CODE);
		}
		if (split_go(&go_hdr, &code_path) < 0) {
			errno = EPROTO;
			fail(SBX_STEP_CODE);
		}
		STEP(SBX_STEP_CODE, write_code(code_path, fds[0], go_hdr.code_len));
		close(fds[0]);
		/* Now, not when the box was built: a warm box may have waited
		 * while the folder changed. The server's list is from a
		 * pass made after the run was asked for (hide.h); without
		 * one, nothing of the workspace is shown. */
		if (p->ws_host) {
			if (fds[1] < 0)
				errno = EPROTO;
			STEP(SBX_STEP_HIDE, fds[1] < 0 ? -1 : hide_listed(p, fds[1]));
			forbid_mnt_namespaces();
		}
		if (fds[1] >= 0)
			close(fds[1]);
		STEP(SBX_STEP_READONLY, mount_setattr(AT_FDCWD, "/", 0, &ro, sizeof(ro)));
		if (p->ws_host)
			close(FD_MASK);
		/* Pid 1's last privileged step is behind it. */
		STEP(SBX_STEP_CAPS, clear_caps());
		STEP(SBX_STEP_FORK, listen_signals(&set, server_signals, 4));
		/* Only now may the program run: give the waiting process the
		 * run and wake it. If it has ended instead, its status says
		 * so. */
		args.rlimits = go_hdr.rlimits;
		args.nrlimits = go_hdr.nrlimits;
		args.argv = go_argv;
		args.envp = go_envp;
		char c = 'g';
		while (send(run_sock, &c, 1, MSG_NOSIGNAL) < 0 && errno == EINTR)
			;
		close(run_sock);
	} else {
		if (p->ws_host)
			close(FD_MASK);
		STEP(SBX_STEP_CAPS, clear_caps());
		STEP(SBX_STEP_FORK, listen_signals(&set, server_signals, 4));
		pid = start_program(&args);
		STEP(SBX_STEP_FORK, pid);
		close_program_ends(p, pp[1]);
	}

	int rec[2];
	while ((n = read(pp[0], rec, sizeof(rec))) < 0 && errno == EINTR)
		;
	close(pp[0]);
	if (n == (ssize_t)sizeof(rec)) {
		struct sbx_msg m = {.type = SBX_MSG_FAIL, .step = rec[0], .err = rec[1]};
		send_msg(FD_STATUS, &m, -1);
	} else if (n == 0 && p->report_exec) {
		/* EOF without a record: the close-on-exec pipe closed in a
		 * successful execve. A worker's owner waits for this; a run's
		 * server would only be woken for nothing. */
		struct sbx_msg m = {.type = SBX_MSG_EXEC};
		send_msg(FD_STATUS, &m, -1);
	}
	reap(pid, &set);
}
