/* child.c: the sandbox's side of clone(): pid 1 (the reaper) builds the
 * box and watches over it; pid 2 locks itself down and becomes the user's
 * program. Only system calls on buffers the parent prepared: no malloc,
 * no stdio, no locks (see child.h for why). Each step that can fail
 * reports its number and errno to the parent, then the child exits.
 * Here: pid 1, whose sbx_child_main() is the whole checklist from clone
 * to the reaping, the new root's mounts, GO and the status socket; its
 * steps of other concerns are child_workspace.c's (the workspace's
 * overlay and masks), child_lockdown.c's (capabilities, Landlock,
 * namespace limits) and child_program.c's (the program's process), and
 * its mount primitives child_mount.c's. */
#include "sandbox/box/child.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/box/internal.h"

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
    [SBX_STEP_CPUS] = "giving the program its CPUs back",
    [SBX_STEP_WATCH] = "starting the watcher of names made during the run",
};

const char *sbx_step_name(int step)
{
	if (step < 0 || (size_t)step >= sizeof(step_names) / sizeof(step_names[0]) ||
	    !step_names[step])
		return "setting up the sandbox";
	return step_names[step];
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

#define STEP(step, expr)                                                                           \
	do {                                                                                       \
		if ((expr) < 0)                                                                    \
			fail(step);                                                                \
	} while (0)

static int bind_one(int rootfd, const struct sbx_bind *b)
{
	int src =
	    open_tree(AT_FDCWD, b->src,
	              OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW);
	if (src < 0)
		return (b->flags & SBX_BIND_OPTIONAL) && errno == ENOENT ? 0 : -1;
	if (b->flags & SBX_BIND_FILE) {
		int f = child_open_beneath(rootfd, b->dst, O_CREAT | O_EXCL | O_WRONLY);
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
	if (child_attach(rootfd, src, b->dst) < 0)
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
	int fd = child_open_beneath(rootfd, f->path, O_CREAT | O_EXCL | O_WRONLY);
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

static int mount_proc(int rootfd, bool zygote)
{
	/* A zygote's children write their id maps through it. */
	int m = child_new_fs("proc", NULL, NULL, NULL,
	                     (zygote ? 0 : MOUNT_ATTR_RDONLY) | MOUNT_ATTR_NOSUID |
	                         MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	if (m < 0)
		return -1;
	int r = child_attach(rootfd, m, "proc");
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
			r = child_attach(rootfd, null, hide[i]);
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
	int m = child_new_fs("tmpfs", p->scratch_size, p->scratch_inodes, "1777",
	                     MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (m < 0 || child_attach(rootfd, m, "tmp") < 0)
		return -1;
	close(m);
	m = child_new_fs("tmpfs", p->scratch_size, p->scratch_inodes, "0755",
	                 MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (m < 0)
		return -1;
	if (mkdirat(m, "out", 0755) < 0)
		return -1;
	int workfd = openat(m, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (workfd < 0 || child_attach(rootfd, m, "work") < 0)
		return -1;
	close(m);
	*ret_workfd = workfd;
	return 0;
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

/* GO's program, in pid 1's own memory (static: nothing allocates here),
 * which the program's process shares until its execve. */
static struct sbx_go go_hdr;
static char go_strings[SBX_GO_STRINGS];
static char *go_argv[SBX_GO_ARGS + 1];
static char *go_envp[SBX_GO_ENV + 1];
/* write_code()'s copy of the code, static for the same reason as the
 * above and so that touch_go_pages() can reach it. */
static char go_copy[16384];

/* Write every page GO's handling writes (the buffers above) while the
 * box waits: the first write to each is a page fault, and on the run's
 * path, on a CPU just woken, one took 1-12 us (docs/performance.md, "The
 * warm box, late evening"). They are pid 1's own anonymous pages, still
 * zero: this changes no byte. */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

/* /proc/self/maps, read by touch_mapped_files() (static: nothing
 * allocates here). */
static char maps_buf[64 * 1024];

static uintptr_t hex_at(const char **p)
{
	uintptr_t v = 0;
	for (;; (*p)++) {
		char c = **p;
		if (c >= '0' && c <= '9')
			v = v * 16 + (uintptr_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (uintptr_t)(c - 'a' + 10);
		else
			return v;
	}
}

/* Map every page of the files pid 1 has mapped (kiln's code and
 * constants, libc's, the other libraries') into its page tables. A clone
 * copies no page-table entry of a file's pages: pid 1 faults on each
 * page of code or constants it first runs or reads, and which ones GO's
 * handling finds already mapped moves with where each file was loaded
 * (the kernel maps a faulting page's neighbours with it, in windows
 * aligned to addresses, not to the file): one fault after GO in one
 * server in two, seen here, as root and as nobody. The pages are in the
 * page cache; this only maps them (about 0.3 ms for 500 pages). */
static void touch_mapped_files(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	size_t len = 0;
	ssize_t n;
	while (len < sizeof(maps_buf) - 1 &&
	       (n = read(fd, maps_buf + len, sizeof(maps_buf) - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	maps_buf[len] = '\0';
	for (const char *p = maps_buf; *p;) {
		const char *line = p;
		uintptr_t from = hex_at(&p);
		p++;
		uintptr_t to = hex_at(&p);
		const char *eol = strchr(line, '\n');
		/* A file's mapping has a path (after the inode), one that is
		 * not [heap], [stack] or the like. */
		const char *slash = memchr(line, '/', eol ? (size_t)(eol - line) : strlen(line));
		if (slash && to > from)
			madvise((void *)from, to - from, MADV_POPULATE_READ);
		if (!eol)
			break;
		p = eol + 1;
	}
}

static void touch_go_pages(void)
{
	/* Only while the box waits (a warm box, built ahead of its run):
	 * when GO is here already, the run would wait for it (about 1 ms). */
	struct pollfd go = {.fd = FD_STATUS, .events = POLLIN};
	if (poll(&go, 1, 0) == 0)
		touch_mapped_files();
	memset(&go_hdr, 0, sizeof(go_hdr));
	memset(go_strings, 0, sizeof(go_strings));
	memset(go_argv, 0, sizeof(go_argv));
	memset(go_envp, 0, sizeof(go_envp));
	memset(go_copy, 0, sizeof(go_copy));
}

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
	int fd = child_open_beneath(rootfd, path, O_CREAT | O_EXCL | O_WRONLY);
	int saved = errno;
	close(rootfd);
	if (fd < 0) {
		errno = saved;
		return -1;
	}
	uint64_t off = 0;
	while (off < len) {
		ssize_t n = pread(codefd, go_copy, sizeof(go_copy), (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			errno = n < 0 ? errno : EIO;
			break;
		}
		for (ssize_t w = 0; w < n;) {
			ssize_t k = write(fd, go_copy + w, (size_t)(n - w));
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

/* The exec pipe's end (pid 1's read end, then closed): a record (step
 * and errno) when the program failed before or at its execve, reported
 * as FAIL; EOF when the execve closed the pipe, reported as EXEC when
 * the plan asks for it. */
static void read_exec_pipe(int pfd, bool report_exec)
{
	int rec[2];
	ssize_t n;
	while ((n = read(pfd, rec, sizeof(rec))) < 0 && errno == EINTR)
		;
	close(pfd);
	if (n == (ssize_t)sizeof(rec)) {
		struct sbx_msg m = {.type = SBX_MSG_FAIL, .step = rec[0], .err = rec[1]};
		send_msg(FD_STATUS, &m, -1);
	} else if (n == 0 && report_exec) {
		/* EOF without a record: the close-on-exec pipe closed in a
		 * successful execve. A worker's owner waits for this; a run's
		 * server would only be woken for nothing. */
		struct sbx_msg m = {.type = SBX_MSG_EXEC};
		send_msg(FD_STATUS, &m, -1);
	}
}

/* Pid 1 after the program started: reap every process, forward the
 * server's signals, and when the program has ended kill what is left
 * and report. SIGUSR1 from the server means "end it now". pfd: the exec
 * pipe, when it is still to be read (once the program is reaped), or -1. */
__attribute__((noreturn)) static void reap(pid_t prog, const sigset_t *set, int pfd)
{
	int prog_status = 0;
	bool prog_done = false, killed = false;
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
					/* Its end closed the pipe: a failure's
					 * record is read at once. */
					if (pfd >= 0)
						read_exec_pipe(pfd, false);
					pfd = -1;
				}
				continue;
			}
			/* Nothing may outlive the program: what is left is
			 * killed. Every other process of the box descends from
			 * pid 1, and an orphan is pid 1's child before its
			 * parent's end is reported; so with no child left
			 * (ECHILD) nothing is, and kill(-1), which walks every
			 * process of the host, is not made (15 us here). */
			if (pid == 0 && prog_done && !killed) {
				kill(-1, SIGKILL);
				killed = true;
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
	int keep[] = {p->status_fd, p->sync_fd, p->out_fd, p->err_fd, p->in_fd, -1};
	int nkeep = p->in_fd >= 0 ? 5 : 4;
	/* The server's idmapped workspace mount comes along, then goes to
	 * its own number (FD_WS_LOWER, above them all). */
	if (p->ws_host && p->ws_idmapped)
		keep[nkeep++] = p->ws_lower_fd;
	if (tidy_fds(keep, nkeep) < 0)
		_exit(127);
	if (p->ws_host && p->ws_idmapped &&
	    (dup3(2 + nkeep, FD_WS_LOWER, O_CLOEXEC) < 0 || close(2 + nkeep) < 0))
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
	if (p->ws_host && !p->ws_idmapped) {
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
	/* A workspace's masks, beneath /proc's mount (child_make_masks). */
	if (p->ws_host && !p->zygote)
		STEP(SBX_STEP_WORKSPACE, child_make_masks(rootfd));
	STEP(SBX_STEP_PROC, mount_proc(rootfd, p->zygote));
	int workfd = -1;
	STEP(SBX_STEP_SCRATCH, mount_scratch(rootfd, p, &workfd));
	int upperfd = -1;
	if (p->ws_host && p->zygote)
		STEP(SBX_STEP_WORKSPACE, child_hold_workspace(rootfd, p));
	else if (p->ws_host)
		STEP(SBX_STEP_WORKSPACE, child_mount_workspace(rootfd, p, &upperfd));
	STEP(SBX_STEP_LOOPBACK, loopback_up());
	STEP(SBX_STEP_HOSTNAME, sethostname("kiln", 4));
	if (!p->zygote)
		child_forbid_namespaces(p->ws_host != NULL);
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
	STEP(SBX_STEP_CAPS, child_lock_caps());
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
		pid = child_start_program(&args);
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
		touch_go_pages();
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
			STEP(SBX_STEP_HIDE, fds[1] < 0 ? -1 : child_hide_listed(p, fds[1]));
			child_forbid_mnt_namespaces();
		}
		if (fds[1] >= 0)
			close(fds[1]);
		STEP(SBX_STEP_READONLY, mount_setattr(AT_FDCWD, "/", 0, &ro, sizeof(ro)));
		if (p->ws_host)
			close(FD_MASK);
		/* Pid 1's last privileged step is behind it. */
		STEP(SBX_STEP_CAPS, child_clear_caps());
		STEP(SBX_STEP_FORK, listen_signals(&set, server_signals, 4));
		/* Only now may the program run: give the waiting process the
		 * run and wake it. If it has ended instead, its status says
		 * so. */
		args.rlimits = go_hdr.rlimits;
		args.nrlimits = go_hdr.nrlimits;
		args.argv = go_argv;
		args.envp = go_envp;
		/* Woken, it would start on the other CPU, idle, its
		 * previous one: waking a halted vCPU costs the run tens of
		 * microseconds here, and whatever runs there goes first.
		 * On this CPU it runs as soon as pid 1 blocks, just below;
		 * it widens its CPUs back to its own set itself, before
		 * its execve (child_program.c). A hint only: if it fails,
		 * the wake-up goes where the kernel puts it. */
		static cpu_set_t here;
		CPU_ZERO(&here);
		int cpu = sched_getcpu();
		if (cpu >= 0 && cpu < CPU_SETSIZE) {
			CPU_SET(cpu, &here);
			sched_setaffinity(pid, sizeof(here), &here);
		}
		char c = 'g';
		while (send(run_sock, &c, 1, MSG_NOSIGNAL) < 0 && errno == EINTR)
			;
		close(run_sock);
	} else {
		if (p->ws_host)
			close(FD_MASK);
		STEP(SBX_STEP_CAPS, child_clear_caps());
		STEP(SBX_STEP_FORK, listen_signals(&set, server_signals, 4));
		pid = child_start_program(&args);
		STEP(SBX_STEP_FORK, pid);
		close_program_ends(p, pp[1]);
	}

	/* A prepared program's execve would wake pid 1 here (the pipe's
	 * EOF), on the program's CPU as it starts, for nothing unless the
	 * plan reports the exec (a worker's): the pipe is read once the
	 * program is reaped instead (reap). After CLONE_VFORK pid 1 is
	 * awake anyway. */
	if (p->report_exec || !p->await_go) {
		read_exec_pipe(pp[0], p->report_exec);
		pp[0] = -1;
	}
	reap(pid, &set, pp[0]);
}
