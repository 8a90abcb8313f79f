/* cgroup.c: cgroup v2 for runs (see cgroup.h). Finding a cgroup kiln may
 * write, making kiln's parent cgroup and one per run, writing limits,
 * killing a run's processes, reading what they used. Only open, read,
 * write, mkdir and rmdir on cgroupfs; every read has a hard cap. */
#include "sandbox/host/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core/fdwait.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"

struct sbx_cgroup_root {
	char parent[PATH_MAX]; /* D: where kiln found or was given a cgroup */
	char path[PATH_MAX];   /* D/kiln-<pid> */
	char name[32];         /* kiln-<pid> */
	int parent_fd;
	int fd;
	unsigned controllers;    /* enabled in path's cgroup.subtree_control */
	unsigned ours_in_parent; /* what kiln enabled in D's, to hand back */
	bool moved;              /* kiln lives in path/server */
	bool plain;              /* a plain directory (tests): files are created */
};

struct sbx_cgroup {
	struct sbx_cgroup_root *root;
	char name[NAME_MAX + 1];
	int fd;
	/* Its cpu.stat, opened when the cgroup is made (off the loop, with
	 * the cgroup made ahead) and read at the run's end, or -1. */
	int stat_fd;
	unsigned enforced;
};

static const struct {
	unsigned bit;
	const char *name;
} controllers[] = {
    {SBX_CG_MEMORY, "memory"},
    {SBX_CG_PIDS, "pids"},
    {SBX_CG_CPU, "cpu"},
};

/* --- small file helpers ---------------------------------------------------- */

/* Read an open file from its start into buf, NUL-terminated (pread: an
 * fd kept open is read afresh each time); the length, or -EFBIG when it
 * does not fit. Every file read here is small; the cap keeps a surprise
 * from mattering. */
static int read_fd(int fd, char *buf, size_t size)
{
	size_t len = 0;
	for (;;) {
		ssize_t n = pread(fd, buf + len, size - 1 - len, (off_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == size - 1)
			return -EFBIG;
	}
	buf[len] = '\0';
	return (int)len;
}

/* The same for dirfd/name. */
static int read_at(int dirfd, const char *name, char *buf, size_t size)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return read_fd(fd, buf, size);
}

/* One write(): cgroupfs takes a value in one piece. In a plain directory
 * (tests) the file is created, and appended to so every write stays
 * visible. */
static int write_at(int dirfd, const char *name, const char *text, bool plain)
{
	int flags = O_WRONLY | O_CLOEXEC | (plain ? O_CREAT | O_APPEND : 0);
	_cleanup_close_ int fd = openat(dirfd, name, flags, 0644);
	if (fd < 0)
		return -errno;
	size_t len = strlen(text);
	ssize_t n = write(fd, text, len);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* The number after "key " at the start of a line of a flat keyed file
 * (cpu.stat, memory.events, cgroup.events). */
static int keyed(const char *text, const char *key, uint64_t *ret)
{
	size_t klen = strlen(key);
	for (const char *line = text; *line;) {
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
			char *end;
			errno = 0;
			unsigned long long v = strtoull(line + klen + 1, &end, 10);
			if (errno || end == line + klen + 1)
				return -EIO;
			*ret = v;
			return 0;
		}
		line = strchrnul(line, '\n');
		if (*line)
			line++;
	}
	return -ENOENT;
}

/* The SBX_CG_* bits named in a cgroup.controllers-style word list. */
static unsigned parse_controllers(const char *text)
{
	unsigned bits = 0;
	for (const char *p = text + strspn(text, " \n"); *p; p += strspn(p, " \n")) {
		size_t n = strcspn(p, " \n");
		for (size_t i = 0; i < ARRAY_SIZE(controllers); i++)
			if (strlen(controllers[i].name) == n &&
			    memcmp(p, controllers[i].name, n) == 0)
				bits |= controllers[i].bit;
		p += n;
	}
	return bits;
}

static void describe_controllers(unsigned bits, char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(controllers); i++)
		if ((bits & controllers[i].bit) && len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? " " : "",
			                        controllers[i].name);
	if (!bits)
		snprintf(buf, size, "none");
}

/* "+memory" or "-memory" for each of bits in dirfd's cgroup.subtree_control,
 * one at a time so one refusal does not take the others with it. The bits
 * that took. */
static unsigned switch_controllers(int dirfd, unsigned bits, char sign, bool plain)
{
	unsigned done = 0;
	for (size_t i = 0; i < ARRAY_SIZE(controllers); i++) {
		if (!(bits & controllers[i].bit))
			continue;
		char word[32];
		snprintf(word, sizeof(word), "%c%s\n", sign, controllers[i].name);
		if (write_at(dirfd, "cgroup.subtree_control", word, plain) == 0)
			done |= controllers[i].bit;
	}
	return done;
}

/* --- where this process's cgroup is ------------------------------------------ */

int sbx_cgroup_parse_self(const char *text, char *ret_path, size_t size)
{
	for (const char *line = text; *line;) {
		const char *end = strchrnul(line, '\n');
		/* cgroup v2 is hierarchy 0 with an empty controller list. */
		if (end - line >= 3 && memcmp(line, "0::", 3) == 0) {
			const char *path = line + 3;
			size_t n = (size_t)(end - path);
			static const char deleted[] = " (deleted)";
			if (n == 0 || path[0] != '/')
				return -EINVAL;
			if (n >= sizeof(deleted) - 1 &&
			    memcmp(end - (sizeof(deleted) - 1), deleted, sizeof(deleted) - 1) == 0)
				return -EINVAL;
			/* A cgroup outside this process's cgroup namespace reads "/../x";
			 * no mount of the namespace shows it. */
			for (const char *seg = path; seg < end;) {
				const char *next = memchr(seg + 1, '/', (size_t)(end - seg - 1));
				if (!next)
					next = end;
				if (next - seg == 3 && memcmp(seg, "/..", 3) == 0)
					return -EINVAL;
				seg = next;
			}
			if (n >= size)
				return -ENAMETOOLONG;
			memcpy(ret_path, path, n);
			ret_path[n] = '\0';
			return 0;
		}
		line = *end ? end + 1 : end;
	}
	return -ENOENT;
}

/* The next space-separated field of a mountinfo line, raw. */
static bool next_field(const char **p, const char *end, const char **ret_start, size_t *ret_len)
{
	const char *s = *p;
	while (s < end && *s == ' ')
		s++;
	const char *e = s;
	while (e < end && *e != ' ')
		e++;
	if (e == s)
		return false;
	*ret_start = s;
	*ret_len = (size_t)(e - s);
	*p = e;
	return true;
}

int sbx_mountinfo_unescape(const char *s, size_t len, char *out, size_t size)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == '\\' && len - i > 3 && s[i + 1] >= '0' && s[i + 1] <= '3' &&
		    s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			c = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		}
		if (n + 1 >= size)
			return -ENAMETOOLONG;
		out[n++] = c;
	}
	out[n] = '\0';
	return 0;
}

/* One line: "36 35 0:27 /root /mount opts [optional...] - cgroup2 src sopts". */
static int mount_line(const char *p, const char *end, const char *cgroup, char *ret_dir,
                      size_t size)
{
	const char *f[5];
	size_t len[5];
	for (int i = 0; i < 5; i++)
		if (!next_field(&p, end, &f[i], &len[i]))
			return -ENOENT;
	const char *sep, *type;
	size_t seplen, typelen;
	do {
		if (!next_field(&p, end, &sep, &seplen))
			return -ENOENT;
	} while (seplen != 1 || sep[0] != '-');
	if (!next_field(&p, end, &type, &typelen) || typelen != 7 || memcmp(type, "cgroup2", 7))
		return -ENOENT;

	char root[PATH_MAX], mnt[PATH_MAX];
	if (sbx_mountinfo_unescape(f[3], len[3], root, sizeof(root)) < 0 ||
	    sbx_mountinfo_unescape(f[4], len[4], mnt, sizeof(mnt)) < 0)
		return -EXDEV;
	/* The mount shows the subtree at root; the cgroup must lie inside it. */
	const char *rest = cgroup;
	if (strcmp(root, "/") != 0) {
		size_t rl = strlen(root);
		if (strncmp(cgroup, root, rl) != 0 || (cgroup[rl] != '\0' && cgroup[rl] != '/'))
			return -EXDEV;
		rest = cgroup + rl;
	}
	if (strcmp(rest, "/") == 0)
		rest = "";
	const char *base = strcmp(mnt, "/") == 0 && *rest ? "" : mnt;
	if ((size_t)snprintf(NULL, 0, "%s%s", base, rest) >= size)
		return -ENAMETOOLONG;
	snprintf(ret_dir, size, "%s%s", base, rest);
	return 0;
}

int sbx_cgroup_parse_mountinfo(const char *text, const char *cgroup, char *ret_dir, size_t size)
{
	int r = -ENOENT;
	for (const char *line = text; *line;) {
		const char *end = strchrnul(line, '\n');
		int q = mount_line(line, end, cgroup, ret_dir, size);
		if (q == 0)
			return 0;
		if (r == -ENOENT)
			r = q;
		line = *end ? end + 1 : end;
	}
	return r;
}

int sbx_cgroup_find_own(char *ret_dir, size_t size, char *why, size_t whysz)
{
	char text[16384], cgroup[PATH_MAX];
	int r = read_at(AT_FDCWD, "/proc/self/cgroup", text, sizeof(text));
	if (r >= 0)
		r = sbx_cgroup_parse_self(text, cgroup, sizeof(cgroup));
	if (r == -ENOENT) {
		snprintf(why, whysz,
		         "no cgroup v2: /proc/self/cgroup has no \"0::\" line (cgroup v1 only)");
		return r;
	}
	if (r < 0) {
		snprintf(why, whysz, "no cgroup v2: this process's cgroup v2 is not usable (%s)",
		         strerror(-r));
		return r;
	}

	/* mountinfo can be long (containers); line by line keeps it small. */
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f) {
		r = -errno;
		snprintf(why, whysz, "no cgroup v2: cannot read /proc/self/mountinfo: %s",
		         strerror(-r));
		return r;
	}
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	char dir[PATH_MAX];
	r = -ENOENT;
	while (getline(&line, &cap, f) > 0) {
		int q = sbx_cgroup_parse_mountinfo(line, cgroup, dir, sizeof(dir));
		if (q == 0 || r == -ENOENT)
			r = q;
		if (q == 0)
			break;
	}
	fclose(f);
	if (r == -ENOENT)
		snprintf(why, whysz, "no cgroup v2: /proc/self/mountinfo lists no cgroup2 mount");
	else if (r < 0)
		snprintf(why, whysz,
		         "no cgroup v2: no cgroup2 mount shows this process's cgroup %s", cgroup);
	else if (strlen(dir) >= size)
		r = -ENAMETOOLONG;
	else
		snprintf(ret_dir, size, "%s", dir);
	return r;
}

/* --- kiln's parent cgroup ------------------------------------------------------- */

/* "kiln-<pid>" with a plausible pid. */
static bool kiln_dir_name(const char *name, pid_t *ret)
{
	if (strncmp(name, "kiln-", 5) != 0 || !name[5] || strlen(name + 5) > 10 ||
	    strspn(name + 5, "0123456789") != strlen(name + 5))
		return false;
	unsigned long long v = strtoull(name + 5, NULL, 10);
	if (v == 0 || v > INT_MAX)
		return false;
	*ret = (pid_t)v;
	return true;
}

/* rmdir dirfd/name's subdirectories, then it. rmdir refuses a cgroup that
 * has processes or children, so nothing alive is touched. */
static void remove_tree(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (d) {
		for (struct dirent *e; (e = readdir(d));)
			if (e->d_type == DT_DIR && strcmp(e->d_name, ".") &&
			    strcmp(e->d_name, ".."))
				unlinkat(fd, e->d_name, AT_REMOVEDIR);
		closedir(d);
	} else if (fd >= 0) {
		close(fd);
	}
	unlinkat(dirfd, name, AT_REMOVEDIR);
}

/* A server that was killed leaves D/kiln-<pid> behind: it goes once that
 * pid is gone. One root per process, so a directory with kiln's own pid is
 * a dead namesake's. */
static void remove_stale(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	for (struct dirent *e; (e = readdir(d));) {
		pid_t pid;
		if (!kiln_dir_name(e->d_name, &pid))
			continue;
		if (pid != getpid() && (kill(pid, 0) == 0 || errno != ESRCH))
			continue;
		remove_tree(dirfd, e->d_name);
	}
	closedir(d);
}

/* True when kiln is the only process in dirfd: a scope made for it, which
 * kiln may leave for a leaf of its own. cgroup.procs lists processes, not
 * threads, so this holds with libcurl's threads too. */
static bool alone_in(int dirfd)
{
	char text[64], self[24];
	if (read_at(dirfd, "cgroup.procs", text, sizeof(text)) < 0)
		return false;
	snprintf(self, sizeof(self), "%d\n", (int)getpid());
	return strcmp(text, self) == 0;
}

static int move_self(int dirfd, const char *procs)
{
	char pid[24];
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	return write_at(dirfd, procs, pid, false);
}

/* Controllers reach a run's cgroup only through D's and then kiln's
 * cgroup.subtree_control. */
static void enable_controllers(struct sbx_cgroup_root *root, bool may_enable_in_parent)
{
	char text[512];
	unsigned avail = 0, on = 0;
	if (read_at(root->parent_fd, "cgroup.controllers", text, sizeof(text)) >= 0)
		avail = parse_controllers(text);
	if (read_at(root->parent_fd, "cgroup.subtree_control", text, sizeof(text)) >= 0)
		on = parse_controllers(text);
	if (may_enable_in_parent) {
		root->ours_in_parent =
		    switch_controllers(root->parent_fd, avail & ~on, '+', root->plain);
		on |= root->ours_in_parent;
	}
	root->controllers = switch_controllers(root->fd, avail & on, '+', root->plain);
}

static void root_release(struct sbx_cgroup_root *root)
{
	if (root->fd >= 0 && root->moved) {
		/* D takes no process back while it hands controllers down (the
		 * rule that made kiln move out): hand them back first. */
		switch_controllers(root->fd, root->controllers, '-', false);
		root->ours_in_parent &=
		    ~switch_controllers(root->parent_fd, root->ours_in_parent, '-', false);
		if (move_self(root->parent_fd, "cgroup.procs") == 0)
			unlinkat(root->fd, "server", AT_REMOVEDIR);
	}
	if (root->fd >= 0) {
		close(root->fd);
		unlinkat(root->parent_fd, root->name, AT_REMOVEDIR);
	}
	/* Only once kiln's directory is gone does D let go of these. */
	if (root->parent_fd >= 0) {
		switch_controllers(root->parent_fd, root->ours_in_parent, '-', root->plain);
		close(root->parent_fd);
	}
	free(root);
}

/* Whether systemd delegated dir (Delegate=yes): it marks such a cgroup
 * with the trusted.delegate (system manager) or user.delegate (user
 * manager) xattr "1". Writing below a cgroup that is writable but not
 * delegated would break systemd's single-writer rule. */
static bool delegated(const char *dir)
{
	static const char *const names[] = {"trusted.delegate", "user.delegate"};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		char v[8];
		ssize_t n = getxattr(dir, names[i], v, sizeof(v));
		if (n == 1 && v[0] == '1')
			return true;
	}
	return false;
}

/* root_open on D = dir. auto: "auto" chose dir (see cgroup.h on the root). */
static int open_under(const char *dir, bool auto_mode, bool plain, struct sbx_cgroup_root **ret,
                      char *why, size_t whysz)
{
	char procs[PATH_MAX + 16];
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	if (!plain && (access(dir, W_OK) < 0 || access(procs, W_OK) < 0)) {
		snprintf(why, whysz, "no writable cgroup v2: %s/ is not writable by uid %u", dir,
		         (unsigned)geteuid());
		*ret = NULL;
		return 0;
	}
	struct sbx_cgroup_root *root = calloc(1, sizeof(*root));
	if (!root)
		return -ENOMEM;
	root->parent_fd = root->fd = -1;
	root->plain = plain;
	snprintf(root->name, sizeof(root->name), "kiln-%d", (int)getpid());
	if ((size_t)snprintf(root->parent, sizeof(root->parent), "%s", dir) >=
	        sizeof(root->parent) ||
	    (size_t)snprintf(root->path, sizeof(root->path), "%s/%s", dir, root->name) >=
	        sizeof(root->path)) {
		snprintf(why, whysz, "no cgroup: the path %s is too long", dir);
		goto none;
	}
	root->parent_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root->parent_fd < 0) {
		snprintf(why, whysz, "no cgroup: cannot open %s: %s", dir, strerror(errno));
		goto none;
	}
	remove_stale(root->parent_fd);
	if (mkdirat(root->parent_fd, root->name, 0755) < 0) {
		snprintf(why, whysz, "no cgroup: cannot create %s: %s", root->path,
		         strerror(errno));
		goto none;
	}
	root->fd = openat(root->parent_fd, root->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root->fd < 0) {
		snprintf(why, whysz, "no cgroup: cannot open %s: %s", root->path, strerror(errno));
		unlinkat(root->parent_fd, root->name, AT_REMOVEDIR);
		goto none;
	}

	/* Only the hierarchy root lacks cgroup.type; only it may hold processes
	 * and hand controllers down at once. */
	bool at_root =
	    !plain && faccessat(root->parent_fd, "cgroup.type", F_OK, 0) < 0 && errno == ENOENT;
	if (auto_mode && !at_root && !delegated(dir)) {
		snprintf(why, whysz,
		         "no cgroup: %s is writable but not delegated to kiln (no user.delegate "
		         "xattr); start kiln with `systemd-run --user --scope -p Delegate=yes` or "
		         "set sandbox.cgroup to a delegated directory",
		         dir);
		goto none;
	}
	if (!plain && !at_root && alone_in(root->parent_fd)) {
		if (mkdirat(root->fd, "server", 0755) == 0) {
			root->moved = move_self(root->fd, "server/cgroup.procs") == 0;
			if (!root->moved)
				unlinkat(root->fd, "server", AT_REMOVEDIR);
		}
	}
	enable_controllers(root, !(auto_mode && at_root));

	char names[64];
	describe_controllers(root->controllers, names, sizeof(names));
	snprintf(why, whysz, "cgroup v2: runs go under %s (controllers: %s)%s", root->path, names,
	         root->moved ? "; kiln moved itself into its server/ leaf" : "");
	*ret = root;
	return 0;
none:
	root_release(root);
	*ret = NULL;
	return 0;
}

int sbx_cgroup_root_open(const char *setting, struct sbx_cgroup_root **ret, char *why, size_t whysz)
{
	if (setting && strcmp(setting, "off") == 0) {
		snprintf(why, whysz, "no cgroup: the cgroup setting is \"off\"");
		*ret = NULL;
		return 0;
	}
	if (!setting || strcmp(setting, "auto") == 0) {
		char dir[PATH_MAX];
		if (sbx_cgroup_find_own(dir, sizeof(dir), why, whysz) < 0) {
			*ret = NULL;
			return 0;
		}
		return open_under(dir, true, false, ret, why, whysz);
	}
	if (setting[0] != '/') {
		snprintf(why, whysz,
		         "the cgroup setting \"%s\" is neither \"auto\", \"off\" nor an absolute "
		         "path",
		         setting);
		return -EINVAL;
	}
	struct statfs sf;
	struct stat st;
	if (statfs(setting, &sf) < 0 || stat(setting, &st) < 0) {
		snprintf(why, whysz, "the cgroup setting %s: %s", setting, strerror(errno));
		return -EINVAL;
	}
	if (sf.f_type != CGROUP2_SUPER_MAGIC || !S_ISDIR(st.st_mode)) {
		snprintf(why, whysz, "the cgroup setting %s is not a cgroup v2 directory", setting);
		return -EINVAL;
	}
	return open_under(setting, false, false, ret, why, whysz);
}

int sbx_cgroup_root_open_plain(const char *dir, struct sbx_cgroup_root **ret, char *why,
                               size_t whysz)
{
	return open_under(dir, false, true, ret, why, whysz);
}

void sbx_cgroup_root_free(struct sbx_cgroup_root *root)
{
	if (root)
		root_release(root);
}

unsigned sbx_cgroup_root_controllers(const struct sbx_cgroup_root *root)
{
	return root->controllers;
}

const char *sbx_cgroup_root_path(const struct sbx_cgroup_root *root)
{
	return root->path;
}

/* --- one run's cgroup ------------------------------------------------------------- */

int sbx_cgroup_new(struct sbx_cgroup_root *root, const char *name, struct sbx_cgroup **ret)
{
	if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
	    strlen(name) > NAME_MAX)
		return -EINVAL;
	struct sbx_cgroup *cg = calloc(1, sizeof(*cg));
	if (!cg)
		return -ENOMEM;
	cg->root = root;
	snprintf(cg->name, sizeof(cg->name), "%s", name);
	int r = 0;
	if (mkdirat(root->fd, name, 0755) < 0) {
		r = neg_errno();
		free(cg);
		return r;
	}
	cg->fd = openat(root->fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg->fd < 0) {
		r = neg_errno();
		unlinkat(root->fd, name, AT_REMOVEDIR);
		free(cg);
		return r;
	}
	/* Opened now, not at the run's end (about 10 us there): the
	 * reply waits for the read. -1 when it cannot be: opened then. */
	cg->stat_fd = openat(cg->fd, "cpu.stat", O_RDONLY | O_CLOEXEC);
	*ret = cg;
	return 0;
}

static int put(struct sbx_cgroup *cg, const char *file, const char *text)
{
	return write_at(cg->fd, file, text, cg->root->plain);
}

/* Keep the first error; mark bit enforced when r is 0. */
static void account(struct sbx_cgroup *cg, unsigned bit, int r, int *first)
{
	if (r == 0)
		cg->enforced |= bit;
	else if (*first == 0)
		*first = r;
}

int sbx_cgroup_set_limits(struct sbx_cgroup *cg, uint64_t memory_bytes, uint64_t processes,
                          uint64_t cpu_cores)
{
	unsigned have = cg->root->controllers;
	char v[64];
	int first = 0, r;
	if ((have & SBX_CG_MEMORY) && memory_bytes) {
		snprintf(v, sizeof(v), "%llu\n", (unsigned long long)memory_bytes);
		r = put(cg, "memory.max", v);
		/* Without swap accounting (swapaccount=0) the file does not exist
		 * and swap is not charged to the cgroup anyway. */
		if (r == 0 && (r = put(cg, "memory.swap.max", "0\n")) == -ENOENT)
			r = 0;
		/* An OOM kill takes the whole run, not one process of it. */
		if (r == 0)
			r = put(cg, "memory.oom.group", "1\n");
		account(cg, SBX_CG_MEMORY, r, &first);
	}
	if ((have & SBX_CG_PIDS) && processes) {
		snprintf(v, sizeof(v), "%llu\n", (unsigned long long)processes);
		account(cg, SBX_CG_PIDS, put(cg, "pids.max", v), &first);
	}
	if ((have & SBX_CG_CPU) && cpu_cores) {
		/* cores of CPU time per 100 ms period. */
		r = -EINVAL;
		if (cpu_cores <= UINT64_MAX / 100000) {
			snprintf(v, sizeof(v), "%llu 100000\n",
			         (unsigned long long)(cpu_cores * 100000));
			r = put(cg, "cpu.max", v);
		}
		account(cg, SBX_CG_CPU, r, &first);
	}
	return first;
}

int sbx_cgroup_fd(const struct sbx_cgroup *cg)
{
	return cg->fd;
}

unsigned sbx_cgroup_enforced(const struct sbx_cgroup *cg)
{
	return cg->enforced;
}

int sbx_cgroup_kill(struct sbx_cgroup *cg)
{
	int r = put(cg, "cgroup.kill", "1\n");
	if (r != -ENOENT)
		return r;
	/* Before Linux 5.14 there is no cgroup.kill: signal each process
	 * listed. One forked meanwhile is caught by the next call (free
	 * repeats it while it waits). */
	int fd = openat(cg->fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!f) {
		r = neg_errno();
		if (fd >= 0)
			close(fd);
		return r;
	}
	for (int pid; fscanf(f, "%d", &pid) == 1;)
		kill(pid, SIGKILL);
	fclose(f);
	return 0;
}

int sbx_cgroup_stats(const struct sbx_cgroup *cg, struct sbx_cgroup_stats *ret)
{
	struct sbx_cgroup_stats st = {0};
	char text[1024];
	int r = cg->stat_fd >= 0 ? read_fd(cg->stat_fd, text, sizeof(text))
	                         : read_at(cg->fd, "cpu.stat", text, sizeof(text));
	if (r < 0)
		return r;
	keyed(text, "usage_usec", &st.cpu_usec);
	/* A controller's files exist only where kiln's cgroup hands it down
	 * (root->controllers, known since the root was set up): without
	 * it they are not looked for at each run's end. */
	unsigned on = cg->root->controllers;
	if ((on & SBX_CG_MEMORY) && read_at(cg->fd, "memory.peak", text, sizeof(text)) >= 0)
		st.memory_peak_bytes = strtoull(text, NULL, 10);
	if ((on & SBX_CG_MEMORY) && read_at(cg->fd, "memory.events", text, sizeof(text)) >= 0)
		keyed(text, "oom_kill", &st.oom_kills);
	if ((on & SBX_CG_PIDS) && read_at(cg->fd, "pids.events", text, sizeof(text)) >= 0)
		keyed(text, "max", &st.pids_max_hits);
	*ret = st;
	return 0;
}

/* Until cgroup.events says "populated 0" (no process left in the cgroup or
 * below) or deadline_ms. The kernel raises POLLPRI on the file when it
 * changes; the read before each wait arms that. */
static int wait_empty(int dirfd, uint64_t deadline_ms)
{
	_cleanup_close_ int fd = openat(dirfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		char text[256];
		ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
		if (n < 0)
			return -errno;
		text[n] = '\0';
		uint64_t populated;
		if (keyed(text, "populated", &populated) < 0)
			return -EIO;
		if (!populated)
			return 0;
		int r = fd_wait(fd, POLLPRI, deadline_ms);
		if (r < 0)
			return r;
	}
}

void sbx_cgroup_free(struct sbx_cgroup *cg)
{
	if (!cg)
		return;
	uint64_t deadline = loop_now_ms() + 1000;
	int r;
	do {
		sbx_cgroup_kill(cg);
		uint64_t slice = loop_now_ms() + 100;
		r = wait_empty(cg->fd, slice < deadline ? slice : deadline);
	} while (r == -ETIMEDOUT && loop_now_ms() < deadline);
	if (cg->stat_fd >= 0)
		close(cg->stat_fd);
	close(cg->fd);
	if (unlinkat(cg->root->fd, cg->name, AT_REMOVEDIR) < 0)
		log_warn("cgroup: cannot remove %s/%s: %s", cg->root->path, cg->name,
		         strerror(errno));
	free(cg);
}
