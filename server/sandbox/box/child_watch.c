/* child_watch.c: the live masks. pid 1's masks (child_workspace.c) cover
 * the names to hide that were in the folder when the run started; a
 * name made on the host later (a `.env` written, `ssh-keygen` run, a
 * folder renamed) would show through the overlay's lower layer. So in
 * a box with a workspace the kernel asks before every open, rename and
 * link the program makes (a seccomp filter whose action is
 * SECCOMP_RET_USER_NOTIF), and a watcher process answers: it makes the
 * call itself and checks the object it reached, by the path the kernel
 * gives that object, before handing the program the file descriptor
 * (SECCOMP_IOCTL_NOTIF_ADDFD). The check is on what was opened, not on
 * the name the program passed, so no thread of the program can change
 * the answer between the check and the use. docs/security.md, "Names
 * made during a run".
 *
 * The watcher is locked down exactly as the program is (the same uid,
 * no capabilities, no_new_privs, Landlock, the deny filter: it is forked
 * from the program's process just before that one adds the notifying
 * filter), so it opens nothing the program could not; it is not
 * dumpable, so the program cannot read or write its memory, nor take
 * its descriptors; and if the program kills it, every call the filter
 * catches fails (ENOSYS): closed, not open. Runs between clone() and
 * execve(): no malloc, no stdio (internal.h). */
#include "sandbox/box/internal.h"
#include "sandbox/box/child.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__)
#define WATCH_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define WATCH_ARCH AUDIT_ARCH_AARCH64
#endif

#define NR_OFF   offsetof(struct seccomp_data, nr)
#define ARCH_OFF offsetof(struct seccomp_data, arch)
#define ASK(nr)                                                                                    \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1),                                           \
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF)

/* The calls that reach a file by name and could give the program its
 * content, or give it another name: asked. Everything else: allowed
 * (the deny filter under this one still applies, and wins). */
static struct sock_filter watch_insns[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARCH_OFF),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, WATCH_ARCH, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), /* the deny filter kills it */
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR_OFF),
#ifdef __NR_open
    ASK(__NR_open),
    ASK(__NR_creat),
    ASK(__NR_rename),
    ASK(__NR_link),
#endif
    ASK(__NR_openat),
    ASK(__NR_openat2),
    ASK(__NR_renameat),
    ASK(__NR_renameat2),
    ASK(__NR_linkat),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

size_t sbx_watch_filter(const struct sock_filter **ret)
{
	*ret = watch_insns;
	return sizeof(watch_insns) / sizeof(watch_insns[0]);
}

/* What the watcher keeps: its own pid (its /proc entry is refused),
 * the plan (the workspace and the hide patterns), and buffers. */
static struct {
	const struct sbx_plan *p;
	char self[32]; /* "/proc/PID" of the watcher, as the box sees it */
	size_t self_len;
	size_t ws_len;
	char path[PATH_MAX + 64];
	char path2[PATH_MAX + 64];
	char real[PATH_MAX + 64];
	char proc[64];
	bool cloexec; /* the open asked for O_CLOEXEC */
	int mem;      /* /proc/mem_pid/mem, or -1 */
	uint32_t mem_pid;
	int sock; /* the program's end of the socket to the watcher */
	union {
		struct seccomp_notif n;
		char pad[512];
	} req;
	union {
		struct seccomp_notif_resp r;
		char pad[512];
	} resp;
} w;

/* Send fd over sock (SCM_RIGHTS) with one byte. */
static int send_fd(int sock, int fd)
{
	char byte = 'w';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr msg = {.msg_iov = &iov,
	                     .msg_iovlen = 1,
	                     .msg_control = u.buf,
	                     .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	ssize_t n;
	while ((n = sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	return n == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char byte;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov,
	                     .msg_iovlen = 1,
	                     .msg_control = u.buf,
	                     .msg_controllen = sizeof(u.buf)};
	ssize_t n;
	while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	struct cmsghdr *c = n == 1 ? CMSG_FIRSTHDR(&msg) : NULL;
	if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	int fd;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/* Format "/proc/<pid><rest>" into buf (cap bytes). */
static int proc_path(char *buf, size_t cap, uint32_t pid, const char *rest)
{
	int n = snprintf(buf, cap, "/proc/%u%s", pid, rest);
	return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* Read the NUL-terminated string at addr in the program's memory (mem:
 * its /proc/PID/mem) into buf, page by page (a string may end just
 * before an unmapped page). -EFAULT, -ENAMETOOLONG. */
static int read_string(int mem, uint64_t addr, char *buf, size_t cap)
{
	size_t have = 0;
	while (have < cap) {
		size_t page = 4096 - (size_t)((addr + have) & 4095);
		size_t want = page < cap - have ? page : cap - have;
		ssize_t n = pread(mem, buf + have, want, (off_t)(addr + have));
		if (n <= 0)
			return -EFAULT;
		char *nul = memchr(buf + have, '\0', (size_t)n);
		if (nul)
			return 0;
		have += (size_t)n;
	}
	return -ENAMETOOLONG;
}

/* A path as the program meant it: "/proc/self", "/proc/thread-self" and
 * "/dev/fd", "/dev/std*" name the program's own entries, not the
 * watcher's. In place, in w.path2 when rewritten. */
static const char *own_path(const char *path, uint32_t pid)
{
	static const struct {
		const char *from, *to;
	} alias[] = {
	    {"/proc/self", ""},      {"/proc/thread-self", ""}, {"/dev/fd", "/fd"},
	    {"/dev/stdin", "/fd/0"}, {"/dev/stdout", "/fd/1"},  {"/dev/stderr", "/fd/2"},
	};
	for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++) {
		size_t n = strlen(alias[i].from);
		if (strncmp(path, alias[i].from, n) || (path[n] && path[n] != '/'))
			continue;
		int len =
		    snprintf(w.path2, sizeof(w.path2), "/proc/%u%s%s", pid, alias[i].to, path + n);
		return len > 0 && (size_t)len < sizeof(w.path2) ? w.path2 : NULL;
	}
	return path;
}

/* Is path top itself or below it (top len bytes long)? */
static bool under(const char *path, const char *top, size_t len)
{
	return !strncmp(path, top, len) && (path[len] == '\0' || path[len] == '/');
}

/* Is the object fd refers to one the box must not reach: under the
 * workspace with a component whose name is hidden, or the watcher's
 * own /proc entry (its memory and descriptors)? Decided on the path the
 * kernel gives the object now. */
static bool refused(int fd)
{
	char link[48];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, w.real, sizeof(w.real) - 1);
	if (n < 0)
		return true;
	w.real[n] = '\0';
	if (under(w.real, w.self, w.self_len))
		return true;
	const struct sbx_plan *p = w.p;
	if (!under(w.real, p->ws_host, w.ws_len))
		return false;
	/* A file deleted since it was reached reads "NAME (deleted)". */
	static const char deleted[] = " (deleted)";
	size_t dl = sizeof(deleted) - 1;
	struct stat st;
	if ((size_t)n > w.ws_len + dl && !strcmp(w.real + n - dl, deleted) && fstat(fd, &st) == 0 &&
	    st.st_nlink == 0)
		w.real[n - dl] = '\0';
	char *s = w.real + w.ws_len;
	while (*s) {
		while (*s == '/')
			s++;
		char *e = strchr(s, '/');
		if (e)
			*e = '\0';
		bool hid = *s && child_hidden_name(p, s);
		if (e)
			*e = '/';
		if (hid)
			return true;
		if (!e)
			break;
		s = e;
	}
	return false;
}

/* Is the entry base of directory dirfd one the box must not reach: the
 * directory refused, or base a hidden name under the workspace? */
static bool entry_refused(int dirfd, const char *base)
{
	return refused(dirfd) ||
	       (under(w.real, w.p->ws_host, w.ws_len) && child_hidden_name(w.p, base));
}

/* The directory a path starts from: the program's cwd, one of its
 * descriptors, or none for an absolute path (-2). */
static int start_dir(uint32_t pid, int dirfd, const char *path)
{
	if (path[0] == '/')
		return -2;
	char rest[32];
	if (dirfd == AT_FDCWD)
		snprintf(rest, sizeof(rest), "/cwd");
	else
		snprintf(rest, sizeof(rest), "/fd/%d", dirfd);
	if (proc_path(w.proc, sizeof(w.proc), pid, rest) < 0)
		return -1;
	return open(w.proc, O_PATH | O_CLOEXEC);
}

static int at(int dir)
{
	return dir == -2 ? AT_FDCWD : dir;
}

/* Split path into its directory (into w.real's tail buffer, "." when
 * none) and its last component (pointer into path, trailing slashes
 * kept). */
static const char *split(const char *path, char *dirbuf, size_t cap)
{
	size_t len = strlen(path);
	size_t end = len;
	while (end > 1 && path[end - 1] == '/')
		end--;
	size_t cut = end;
	while (cut > 0 && path[cut - 1] != '/')
		cut--;
	if (cut == 0) {
		snprintf(dirbuf, cap, ".");
	} else {
		size_t dl = cut;
		while (dl > 1 && path[dl - 1] == '/')
			dl--;
		if (dl >= cap)
			return NULL;
		memcpy(dirbuf, path, dl);
		dirbuf[dl] = '\0';
	}
	return path + cut;
}

/* Open as the program asked, checked; the new fd or -errno. */
static int do_open(int dir, const char *path, const struct open_how *how)
{
	int flags = (int)how->flags;
	struct open_how ph = {
	    .flags = (uint64_t)(O_PATH | O_CLOEXEC | (flags & (O_NOFOLLOW | O_DIRECTORY))),
	    .resolve = how->resolve,
	};
	if (!(flags & (O_ACCMODE | O_CREAT | O_TRUNC | O_PATH | __O_TMPFILE))) {
		/* Only read, as most opens: made as asked, then checked (such
		 * an open changes nothing, not even by a copy-up). */
		int f = (int)syscall(SYS_openat2, at(dir), path, how, sizeof(*how));
		if (f < 0)
			return -errno;
		if (refused(f)) {
			close(f);
			return -EACCES;
		}
		return f;
	}
	int o = (int)syscall(SYS_openat2, at(dir), path, &ph, sizeof(ph));
	if (o < 0 && errno == ENOENT && (flags & O_CREAT)) {
		/* Made anew: its directory checked, then the name. */
		char dirpart[PATH_MAX];
		const char *base = split(path, dirpart, sizeof(dirpart));
		if (!base)
			return -ENAMETOOLONG;
		struct open_how dh = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		                      .resolve = how->resolve};
		int d = (int)syscall(SYS_openat2, at(dir), dirpart, &dh, sizeof(dh));
		if (d < 0)
			return -errno;
		if (entry_refused(d, base)) {
			close(d);
			return -EACCES;
		}
		int f = (int)syscall(SYS_openat2, d, base, how, sizeof(*how));
		int e = errno;
		close(d);
		if (f < 0)
			return -e;
		if (refused(f)) { /* made through a link, somewhere hidden */
			close(f);
			return -EACCES;
		}
		return f;
	}
	if (o < 0)
		return -errno;
	int r;
	struct stat st;
	if (refused(o)) {
		r = -EACCES;
	} else if (flags & O_PATH) {
		return o;
	} else if (fstat(o, &st) < 0) {
		r = -errno;
	} else if (S_ISLNK(st.st_mode)) {
		r = -ELOOP; /* O_NOFOLLOW on a link, without O_PATH */
	} else {
		/* Reopened through the object: the same one, checked again
		 * for the access asked (permissions, Landlock). */
		char link[48];
		int f;
		if (S_ISDIR(st.st_mode)) {
			struct open_how rh = {.flags = how->flags &
			                               ~(uint64_t)(O_NOFOLLOW | O_CREAT | O_EXCL),
			                      .mode = how->mode};
			f = (int)syscall(SYS_openat2, o, ".", &rh, sizeof(rh));
		} else {
			snprintf(link, sizeof(link), "/proc/self/fd/%d", o);
			f = open(link, flags & ~(O_NOFOLLOW | O_CREAT), (mode_t)how->mode);
			if (f < 0 && errno == ELOOP && (flags & O_NOFOLLOW))
				errno = ELOOP;
		}
		r = f < 0 ? -errno : f;
		if (f >= 0 && (flags & O_CREAT) && (flags & O_EXCL)) {
			close(f);
			r = -EEXIST;
		}
	}
	close(o);
	return r;
}

/* renameat2 / linkat after checking both ends; 0 or -errno. */
static int do_move(bool link_it, int od, const char *opath, int nd, const char *npath,
                   unsigned flags)
{
	char odir[PATH_MAX], ndir[PATH_MAX];
	const char *obase = split(opath, odir, sizeof(odir));
	const char *nbase = split(npath, ndir, sizeof(ndir));
	if (!obase || !nbase)
		return -ENAMETOOLONG;
	struct open_how dh = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC};
	int r = 0;
	int src = -1, o = -1, n = -1;
	if (link_it && (flags & (AT_SYMLINK_FOLLOW | AT_EMPTY_PATH))) {
		/* The object itself, followed: linked through its /proc entry. */
		struct open_how sh = {.flags = O_PATH | O_CLOEXEC};
		src = (int)syscall(SYS_openat2, at(od), opath[0] ? opath : ".", &sh, sizeof(sh));
		if (src < 0)
			return -errno;
		if (refused(src))
			r = -EACCES;
	} else {
		o = (int)syscall(SYS_openat2, at(od), odir, &dh, sizeof(dh));
		if (o < 0)
			return -errno;
		if (entry_refused(o, obase))
			r = -EACCES;
	}
	if (r == 0) {
		n = (int)syscall(SYS_openat2, at(nd), ndir, &dh, sizeof(dh));
		if (n < 0)
			r = -errno;
		else if (entry_refused(n, nbase))
			r = -EACCES;
	}
	if (r == 0) {
		long k;
		if (src >= 0) {
			char link[48];
			snprintf(link, sizeof(link), "/proc/self/fd/%d", src);
			k = linkat(AT_FDCWD, link, n, nbase, AT_SYMLINK_FOLLOW);
		} else if (link_it) {
			k = linkat(o, obase, n, nbase, 0);
		} else {
			k = syscall(SYS_renameat2, o, obase, n, nbase, flags);
		}
		r = k < 0 ? -errno : 0;
	}
	if (src >= 0)
		close(src);
	if (o >= 0)
		close(o);
	if (n >= 0)
		close(n);
	return r;
}

/* The program's umask, for what the call makes. */
static void take_umask(uint32_t pid)
{
	static char buf[2048];
	if (proc_path(w.proc, sizeof(w.proc), pid, "/status") < 0)
		return;
	int fd = open(w.proc, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t k = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (k <= 0)
		return;
	buf[k] = '\0';
	char *u = strstr(buf, "\nUmask:\t");
	if (!u)
		return;
	mode_t m = 0;
	for (u += 8; *u >= '0' && *u <= '7'; u++)
		m = (mode_t)(m * 8 + (mode_t)(*u - '0'));
	umask(m & 0777);
}

/* One asked call: read its arguments from the program, make it. The
 * result: -errno, or (opens) a descriptor of the watcher's in *ret_fd. */
static int handle(int listener, const struct seccomp_notif *q, int *ret_fd)
{
	const __u64 *a = q->data.args;
	long nr = q->data.nr;
	uint32_t pid = q->pid;
	int dirfd = AT_FDCWD, dirfd2 = AT_FDCWD;
	uint64_t p1 = 0, p2 = 0;
	struct open_how how = {0};
	unsigned flags = 0;
	bool move = false, link_it = false;
	switch (nr) {
#ifdef __NR_open
	case __NR_open:
		p1 = a[0], how.flags = (uint32_t)a[1], how.mode = (uint32_t)a[2];
		break;
	case __NR_creat:
		p1 = a[0], how.flags = O_CREAT | O_WRONLY | O_TRUNC, how.mode = (uint32_t)a[1];
		break;
	case __NR_rename:
		p1 = a[0], p2 = a[1], move = true;
		break;
	case __NR_link:
		p1 = a[0], p2 = a[1], move = link_it = true;
		break;
#endif
	case __NR_openat:
		dirfd = (int)a[0], p1 = a[1], how.flags = (uint32_t)a[2], how.mode = (uint32_t)a[3];
		break;
	case __NR_openat2:
		dirfd = (int)a[0], p1 = a[1];
		break;
	case __NR_renameat:
	case __NR_renameat2:
		dirfd = (int)a[0], p1 = a[1], dirfd2 = (int)a[2], p2 = a[3], move = true;
		flags = nr == __NR_renameat2 ? (unsigned)a[4] : 0;
		break;
	case __NR_linkat:
		dirfd = (int)a[0], p1 = a[1], dirfd2 = (int)a[2], p2 = a[3];
		flags = (unsigned)a[4], move = link_it = true;
		break;
	default:
		return -ENOSYS;
	}
	/* The asking thread's memory, its /proc file kept open while the
	 * same thread asks again; read afresh once when that fails (the
	 * thread ran execve, or its number went to another). */
	static char name1[PATH_MAX], name2[PATH_MAX];
	int r = -EFAULT;
	for (int tries = 0; tries < 2 && r == -EFAULT; tries++) {
		if (w.mem < 0 || w.mem_pid != pid || tries) {
			if (w.mem >= 0)
				close(w.mem);
			w.mem = -1;
			if (proc_path(w.proc, sizeof(w.proc), pid, "/mem") < 0)
				return -EFAULT;
			if ((w.mem = open(w.proc, O_RDONLY | O_CLOEXEC)) < 0)
				return -EFAULT;
			w.mem_pid = pid;
		}
		r = read_string(w.mem, p1, name1, sizeof(name1));
		if (r == 0 && move)
			r = read_string(w.mem, p2, name2, sizeof(name2));
		if (r == 0 && nr == __NR_openat2) {
			size_t size = (size_t)a[3];
			if (size < 24)
				r = -EINVAL;
			else if (pread(w.mem, &how, sizeof(how), (off_t)a[2]) !=
			         (ssize_t)sizeof(how))
				r = -EFAULT;
		}
	}
	/* The pid read is still the asking thread (not one reusing its
	 * number): checked after reading, before acting. */
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &q->id) < 0)
		return -ESRCH;
	if (r < 0)
		return r;
	const char *path1 = own_path(name1, pid);
	if (!path1)
		return -ENAMETOOLONG;
	int d1 = start_dir(pid, dirfd, path1);
	if (d1 == -1)
		return -EBADF;
	if (!move) {
		if (how.flags & (O_CREAT | __O_TMPFILE))
			take_umask(pid);
		w.cloexec = how.flags & O_CLOEXEC;
		r = do_open(d1, path1, &how);
		if (d1 >= 0)
			close(d1);
		if (r >= 0) {
			*ret_fd = r;
			return 0;
		}
		return r;
	}
	static char keep1[PATH_MAX + 64];
	snprintf(keep1, sizeof(keep1), "%s", path1);
	const char *path2 = own_path(name2, pid);
	int d2 = path2 ? start_dir(pid, dirfd2, path2) : -1;
	if (d2 == -1)
		r = path2 ? -EBADF : -ENAMETOOLONG;
	else
		r = do_move(link_it, d1, keep1, d2, path2, flags);
	if (d1 >= 0)
		close(d1);
	if (d2 >= 0)
		close(d2);
	return r;
}

/* The watcher's loop: each asked call answered, until the box ends. */
__attribute__((noreturn)) static void serve(int listener)
{
	for (;;) {
		memset(&w.req, 0, sizeof(w.req));
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &w.req.n) < 0) {
			if (errno == EINTR || errno == ENOENT)
				continue;
			_exit(0); /* no filter left to serve */
		}
		int fd = -1;
		int r = handle(listener, &w.req.n, &fd);
		if (fd >= 0) {
			struct seccomp_notif_addfd add = {
			    .id = w.req.n.id,
			    .flags = SECCOMP_ADDFD_FLAG_SEND,
			    .srcfd = (uint32_t)fd,
			    .newfd_flags = w.cloexec ? O_CLOEXEC : 0,
			};
			long k = ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
			int e = errno;
			close(fd);
			if (k >= 0 || e == ENOENT)
				continue; /* answered (or the caller is gone) */
			r = -e;
		}
		memset(&w.resp, 0, sizeof(w.resp));
		w.resp.r.id = w.req.n.id;
		w.resp.r.error = r < 0 ? r : 0;
		ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &w.resp.r);
	}
}

struct watch_args {
	const struct sbx_plan *p;
	int sock;
};

/* The watcher: only its socket kept, locked down as the program is but
 * for CAP_SYS_PTRACE in the box's user namespace (to read the asking
 * thread's memory under Yama's relational scope, where the watcher is
 * no ancestor of the program), not dumpable, under the deny filter. */
static int watch_main(void *arg)
{
	const struct watch_args *wa = arg;
	int sock = wa->sock;
	if (sock != 3 && dup3(sock, 3, O_CLOEXEC) < 0)
		_exit(1);
	sock = 3;
	syscall(SYS_close_range, 0, 2, 0);
	syscall(SYS_close_range, 4, ~0U, 0);
	/* Out of the program's process group: an interrupt sent to the
	 * code (a session's Ctrl-C) is not the watcher's, which would end
	 * it and with it every open of the box. */
	if (setsid() < 0)
		_exit(1);
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	d[0].effective = d[0].permitted = 1u << CAP_SYS_PTRACE;
	if (syscall(SYS_capset, &h, d) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, wa->p->seccomp) < 0)
		_exit(1);
	w.p = wa->p;
	w.mem = -1;
	w.ws_len = strlen(w.p->ws_host);
	int n = snprintf(w.self, sizeof(w.self), "/proc/%d", (int)getpid());
	w.self_len = n > 0 ? (size_t)n : 0;
	int listener = recv_fd(sock);
	close(sock);
	if (listener < 0)
		_exit(1);
	serve(listener);
}

/* Between the two clones: the watcher becomes pid 1's child (this one
 * ends at once), not one the program would find among its own. */
static int watch_mid(void *arg)
{
	static char stack[64 * 1024] __attribute__((aligned(64)));
	/* Nothing of the run's output: not this process's to write on
	 * (nor a sanitizer's, which would speak of the foreign stack). */
	syscall(SYS_close_range, 0, 2, 0);
	int r = clone(watch_main, stack + sizeof(stack), SIGCHLD, arg) < 0 ? 1 : 0;
	syscall(SYS_exit_group, r);
	return r;
}

int child_start_watch(const struct sbx_plan *p)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return -1;
	static char stack[16 * 1024] __attribute__((aligned(64)));
	struct watch_args wa = {.p = p, .sock = sp[1]};
	pid_t mid = clone(watch_mid, stack + sizeof(stack), SIGCHLD, &wa);
	int saved = errno;
	close(sp[1]);
	int st = 0;
	if (mid < 0 || waitpid(mid, &st, 0) != mid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		close(sp[0]);
		errno = mid < 0 ? saved : ECHILD;
		return -1;
	}
	w.sock = sp[0];
	return 0;
}

int child_watch_listen(void)
{
	struct sock_fprog prog = {
	    .len = (unsigned short)(sizeof(watch_insns) / sizeof(watch_insns[0])),
	    .filter = watch_insns};
	int l = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
	                     &prog);
	int r = l < 0 ? -1 : send_fd(w.sock, l);
	int saved = errno;
	if (l >= 0)
		close(l);
	close(w.sock);
	errno = saved;
	return r;
}
