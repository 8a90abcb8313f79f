/* attack.c: escape attempts run inside kiln's sandbox by the attack suite
 * (tests/sandbox/attacks.py). `attack NAME` tries one family of attacks
 * and prints one line per attempt: "CONTAINED: ..." when the box held,
 * "ESCAPED: ..." when it did not; it exits 1 if anything escaped. A few
 * attacks are expected to get the process killed (x32, int 0x80): the
 * suite checks the signal instead. `attack plant-key` runs on the host. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/random.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <mqueue.h>
#include <ftw.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <termios.h>
#include <unistd.h>

static int escaped;

static void result(int contained, const char *what, int err)
{
	printf("%s: %s (%s)\n", contained ? "CONTAINED" : "ESCAPED", what,
	       err ? strerror(err) : "no error");
	if (!contained)
		escaped = 1;
}

/* The call must fail with one of the listed errnos (0-terminated): the
 * errno of the layer meant to stop it. Any other errno means another
 * layer stopped it and the one under test may be gone (the filter's
 * EPERM for TIOCSTI became the kernel's ENOTTY when its rule was
 * removed): that is reported as an escape of that layer. */
static void expect_fail(long r, const char *what, const int *errs)
{
	int e = errno;
	if (r >= 0) {
		result(0, what, 0);
		return;
	}
	for (const int *p = errs; *p; p++)
		if (*p == e) {
			result(1, what, e);
			return;
		}
	printf("ESCAPED: %s (errno %s, not the one its layer gives: another layer stopped it)\n",
	       what, strerror(e));
	escaped = 1;
}

static const int E_PERM[] = {EPERM, 0};
static const int E_ANY_DENY[] = {EPERM, EACCES, EROFS, ENOENT, EINVAL, ENOSYS, 0};

static void a_tiocsti(void)
{
	char c = 'x';
	int fds[] = {0, 1, 2, -1};
	int tty = open("/dev/tty", O_RDWR);
	fds[3] = tty;
	for (int i = 0; i < 4; i++) {
		if (fds[i] < 0)
			continue;
		errno = 0;
		expect_fail(ioctl(fds[i], TIOCSTI, &c), "ioctl TIOCSTI", E_PERM);
		errno = 0;
		expect_fail(syscall(SYS_ioctl, fds[i], (unsigned long)TIOCSTI | (1UL << 32), &c),
			    "ioctl TIOCSTI|1<<32", E_PERM);
		expect_fail(syscall(SYS_ioctl, fds[i], (unsigned long)TIOCSTI | (0xffUL << 40), &c),
			    "ioctl TIOCSTI with high garbage", E_PERM);
		char sub[2] = {11, 0};
		expect_fail(ioctl(fds[i], TIOCLINUX, sub), "ioctl TIOCLINUX", E_PERM);
		expect_fail(syscall(SYS_ioctl, fds[i], (unsigned long)TIOCLINUX | (1UL << 32), sub),
			    "ioctl TIOCLINUX|1<<32", E_PERM);
	}
	result(tty < 0, "no controlling terminal (/dev/tty)", tty < 0 ? errno : 0);
	result(getsid(0) == getpid(), "own session (setsid)", 0);
}

/* Pid 1 is not dumpable: its /proc entries belong to the host's root
 * (outside the box: the overflow uid), so the box's user gets EACCES on
 * each; were pid 1 dumpable they would be the box user's own. */
static void a_proc1exe(void)
{
	static const int E_ACCES[] = {EACCES, 0};
	struct stat st;
	int r = stat("/proc/1/status", &st);
	result(r == 0 && st.st_uid != getuid(),
	       "pid 1 is not dumpable (its /proc/1 entries are not the box user's)", r ? errno : 0);
	int fd = open("/proc/1/exe", O_WRONLY);
	expect_fail(fd, "open /proc/1/exe for writing", E_ACCES);
	char buf[256];
	expect_fail(readlink("/proc/1/exe", buf, sizeof(buf)), "readlink /proc/1/exe", E_ACCES);
	fd = open("/proc/1/mem", O_RDWR);
	expect_fail(fd, "open /proc/1/mem", E_ACCES);
	fd = open("/proc/self/exe", O_WRONLY);
	expect_fail(fd, "open /proc/self/exe for writing", (const int[]){ETXTBSY, 0});
	fd = open("/proc/1/root/etc/passwd", O_RDONLY);
	expect_fail(fd, "open /proc/1/root", E_ACCES);
}

static void a_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0, bad = 0;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		int fd = atoi(e->d_name);
		if (fd == dirfd(d))
			continue;
		n++;
		if (fd > 2) {
			bad = 1;
			char p[64], t[256] = "";
			snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
			ssize_t l = readlink(p, t, sizeof(t) - 1);
			if (l > 0)
				t[l] = 0;
			printf("ESCAPED: inherited fd %d -> %s\n", fd, t);
		}
	}
	if (d)
		closedir(d);
	result(!bad, "only fds 0-2 open at start", 0);
	/* Probe above the listing too (in case /proc lied). */
	int leaked = 0;
	for (int fd = 3; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) >= 0 && (!d || fd != 3))
			leaked++;
	result(leaked == 0, "no fd above 2 answers F_GETFD", 0);
}

static void a_cwd(void)
{
	int ok = 1;
	for (int i = 0; i < 20; i++)
		if (chdir("/proc/self/cwd/..") < 0)
			break;
	for (int i = 0; i < 20; i++)
		chdir("..");
	const char *host_only[] = {"/root", "/home", "/var", "/run", "/sys", "/boot", "/srv",
				   "/etc/shadow", "/etc/hostname", NULL};
	for (int i = 0; host_only[i]; i++) {
		struct stat st;
		if (stat(host_only[i], &st) == 0 || fstatat(AT_FDCWD, host_only[i] + 1, &st, 0) == 0) {
			printf("ESCAPED: %s is visible after climbing up\n", host_only[i]);
			ok = 0;
		}
	}
	if (getenv("KILN_TEST_HOSTDIR")) {
		struct stat st;
		if (stat(getenv("KILN_TEST_HOSTDIR"), &st) == 0) {
			printf("ESCAPED: the suite's host directory is visible\n");
			ok = 0;
		}
	}
	result(ok, "climbing /proc/self/cwd/.. stays in the box", 0);
}

static void a_ptrace(void)
{
	expect_fail(ptrace(PTRACE_ATTACH, 1, 0, 0), "ptrace attach pid 1", E_PERM);
	expect_fail(ptrace(PTRACE_SEIZE, 1, 0, 0), "ptrace seize pid 1", E_PERM);
	pid_t c = fork();
	if (c == 0) {
		pause();
		_exit(0);
	}
	expect_fail(ptrace(PTRACE_ATTACH, c, 0, 0), "ptrace attach sibling", E_PERM);
	char buf[16];
	struct iovec l = {buf, sizeof(buf)}, r = {(void *)0x400000, sizeof(buf)};
	expect_fail(process_vm_readv(c, &l, 1, &r, 1, 0), "process_vm_readv sibling", E_PERM);
	expect_fail(ptrace(PTRACE_TRACEME, 0, 0, 0), "ptrace traceme", E_PERM);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
}

static void a_kill(void)
{
	/* None of these may end pid 1 or reach the host; the program must
	 * still be alive to print the last line. */
	kill(getppid(), SIGKILL);
	kill(1, SIGKILL);
	kill(1, SIGTERM);
	kill(1, SIGUSR1);
	kill(-1, SIGKILL);
	usleep(100000);
	result(1, "survived kill(1), kill(ppid) and kill(-1, SIGKILL)", 0);
	result(getppid() == 1, "parent is still pid 1", 0);
}

static void a_unshare(void)
{
	static const int flags[] = {CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWPID,
				    CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP, 0};
	for (int i = 0; flags[i]; i++) {
		char what[64];
		snprintf(what, sizeof(what), "unshare(0x%x)", flags[i]);
		expect_fail(unshare(flags[i]), what, E_PERM);
		snprintf(what, sizeof(what), "clone(0x%x)", flags[i]);
		long r = syscall(SYS_clone, flags[i] | SIGCHLD, 0, 0, 0, 0);
		if (r == 0)
			_exit(0);
		expect_fail(r, what, E_PERM);
	}
	struct {
		uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	} ca = {.flags = CLONE_NEWUSER, .exit_signal = SIGCHLD};
	long r = syscall(SYS_clone3, &ca, sizeof(ca));
	if (r == 0)
		_exit(0);
	expect_fail(r, "clone3(CLONE_NEWUSER)", (const int[]){ENOSYS, 0});
	expect_fail(syscall(SYS_setns, 0, 0), "setns", E_PERM);
	/* Under the filter, the box's own sysctls: no namespace of any kind
	 * may be made in it (read back, since the filter masks them). */
	static const char *const ns[] = {"user", "mnt", "net", "pid", "ipc", "uts", "cgroup", "time"};
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		char p[96], v[32] = "";
		snprintf(p, sizeof(p), "/proc/sys/user/max_%s_namespaces", ns[i]);
		FILE *f = fopen(p, "r");
		int ok = f && fgets(v, sizeof(v), f) && strcmp(v, "0\n") == 0;
		if (f)
			fclose(f);
		v[strcspn(v, "\n")] = 0;
		char what[160];
		snprintf(what, sizeof(what), "%s reads 0 (it reads '%.16s')", p, v);
		result(ok, what, 0);
	}
}

static void a_kernel(void)
{
	long r = syscall(SYS_io_uring_setup, 8, calloc(1, 256));
	expect_fail(r, "io_uring_setup", E_PERM);
	expect_fail(syscall(SYS_userfaultfd, 0), "userfaultfd", E_PERM);
	struct perf_event_attr pa;
	memset(&pa, 0, sizeof(pa));
	pa.size = sizeof(pa);
	pa.type = PERF_TYPE_SOFTWARE;
	pa.config = PERF_COUNT_SW_CPU_CLOCK;
	expect_fail(syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0), "perf_event_open", E_PERM);
	char attr[128] = {0};
	expect_fail(syscall(SYS_bpf, 0, attr, sizeof(attr)), "bpf", E_PERM);
	expect_fail(syscall(SYS_open_by_handle_at, AT_FDCWD, attr, O_RDONLY), "open_by_handle_at",
		    E_PERM);
	expect_fail(syscall(SYS_syslog, 3, attr, sizeof(attr)), "syslog", E_PERM);
	expect_fail(syscall(SYS_kexec_load, 0, 0, 0, 0), "kexec_load", E_PERM);
	expect_fail(syscall(SYS_init_module, attr, 0, ""), "init_module", E_PERM);
	expect_fail(syscall(SYS_swapon, "/work/x", 0), "swapon", E_PERM);
	expect_fail(syscall(SYS_reboot, 0xfee1dead, 672274793, 0x1234567, 0), "reboot", E_PERM);
}

/* Landlock alone: calls no other layer refuses. An ioctl on a device
 * node (ABI 5: /dev is granted read and write, not ioctl) and a signal
 * to pid 1, which is outside the program's Landlock domain (ABI 6
 * scoping; pid 1 runs as the same uid, so nothing else forbids it). */
static void a_landlock(void)
{
	int fd = open("/dev/urandom", O_RDONLY);
	result(fd >= 0, "/dev/urandom opens", fd < 0 ? errno : 0);
	int cnt;
	expect_fail(ioctl(fd, RNDGETENTCNT, &cnt), "ioctl RNDGETENTCNT on /dev/urandom (Landlock)",
		    (const int[]){EACCES, 0});
	expect_fail(kill(1, 0), "kill(1, 0) (Landlock signal scope)", E_PERM);
	expect_fail(kill(1, SIGUSR1), "kill(1, SIGUSR1) (Landlock signal scope)", E_PERM);
	/* Inside its own domain signals still work. */
	int kr = kill(getpid(), 0);
	result(kr == 0, "kill(self, 0) still works", kr ? errno : 0);
}

static void a_keyring(void)
{
	expect_fail(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0),
		    "keyctl get session keyring", E_PERM);
	expect_fail(syscall(SYS_keyctl, KEYCTL_SEARCH, KEY_SPEC_SESSION_KEYRING, "user",
			    "kiln-test-secret", 0),
		    "keyctl search for the host's secret", E_PERM);
	expect_fail(syscall(SYS_add_key, "user", "x", "y", 1, KEY_SPEC_SESSION_KEYRING), "add_key",
		    E_PERM);
	expect_fail(syscall(SYS_request_key, "user", "kiln-test-secret", NULL, 0), "request_key",
		    E_PERM);
	FILE *f = fopen("/proc/keys", "r");
	char line[512];
	int seen = 0;
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "kiln-test-secret"))
			seen = 1;
	if (f)
		fclose(f);
	result(!seen, "the host's key is not listed in /proc/keys", 0);
}

static void a_personality(void)
{
	expect_fail(personality(READ_IMPLIES_EXEC), "personality(READ_IMPLIES_EXEC)", E_PERM);
	expect_fail(personality(ADDR_NO_RANDOMIZE), "personality(ADDR_NO_RANDOMIZE)", E_PERM);
	expect_fail(personality(PER_LINUX32), "personality(PER_LINUX32)", E_PERM);
	expect_fail(syscall(SYS_personality, 0x100000000UL | READ_IMPLIES_EXEC),
		    "personality(high bits | READ_IMPLIES_EXEC)", E_PERM);
	long cur = personality(0xffffffff);
	result(cur == 0, "personality query still works and reads 0", 0);
}

static void a_x32(void)
{
	/* Must be killed by the filter before printing anything else. */
	fflush(stdout);
	long r = syscall(0x40000000 | SYS_getpid);
	printf("ESCAPED: x32 getpid returned %ld (%s)\n", r, strerror(errno));
	exit(1);
}

static void a_int80(void)
{
	fflush(stdout);
	long r;
	/* i386 getpid is 20. */
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20) : "memory");
	printf("ESCAPED: int 0x80 getpid returned %ld\n", r);
	exit(1);
}

static void a_sockets(void)
{
	static const struct {
		int fam;
		const char *name;
	} fams[] = {{AF_VSOCK, "AF_VSOCK"}, {AF_PACKET, "AF_PACKET"}, {AF_ALG, "AF_ALG"},
		    {AF_NETLINK, "AF_NETLINK"}, {AF_BLUETOOTH, "AF_BLUETOOTH"},
		    {AF_KEY, "AF_KEY"}, {AF_XDP, "AF_XDP"}, {0, NULL}};
	for (int i = 0; fams[i].name; i++) {
		char what[64];
		snprintf(what, sizeof(what), "socket(%s)", fams[i].name);
		expect_fail(socket(fams[i].fam, SOCK_RAW, 0), what,
			    (const int[]){EAFNOSUPPORT, 0});
		snprintf(what, sizeof(what), "socket(1<<32 | %s)", fams[i].name);
		expect_fail(syscall(SYS_socket, (1UL << 32) | (unsigned)fams[i].fam, SOCK_RAW, 0), what,
			    (const int[]){EAFNOSUPPORT, 0});
	}
	int s = socket(AF_INET, SOCK_STREAM, 0);
	result(s >= 0, "AF_INET still allowed (loopback only)", s < 0 ? errno : 0);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	result(s >= 0, "AF_UNIX still allowed", s < 0 ? errno : 0);
}

static void a_abstract(const char *name)
{
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	size_t n = strlen(name);
	memcpy(a.sun_path + 1, name, n);
	int r = connect(s, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n));
	expect_fail(r, "connect to the host's abstract unix socket",
		    (const int[]){ECONNREFUSED, ENOENT, EPERM, 0});
}

static void a_tcp(int port)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	int r = connect(s, (struct sockaddr *)&a, sizeof(a));
	expect_fail(r, "TCP connect to the host's 127.0.0.1 listener",
		    (const int[]){ECONNREFUSED, ENETUNREACH, EPERM, EACCES, 0});
	FILE *f = fopen("/proc/net/dev", "r");
	char line[256];
	int others = 0, lo = 0;
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = 0;
		char *name = line;
		while (*name == ' ')
			name++;
		if (strcmp(name, "lo") == 0)
			lo = 1;
		else {
			others = 1;
			printf("ESCAPED: interface %s in the box\n", name);
		}
	}
	if (f)
		fclose(f);
	result(lo && !others, "only the loopback interface exists", 0);
	/* Loopback inside works: a listener of our own. */
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in b = {.sin_family = AF_INET};
	inet_pton(AF_INET, "127.0.0.1", &b.sin_addr);
	socklen_t bl = sizeof(b);
	int ok = bind(l, (struct sockaddr *)&b, sizeof(b)) == 0 && listen(l, 1) == 0 &&
		 getsockname(l, (struct sockaddr *)&b, &bl) == 0;
	int c = socket(AF_INET, SOCK_STREAM, 0);
	ok = ok && connect(c, (struct sockaddr *)&b, sizeof(b)) == 0;
	result(ok, "the box's own loopback works", ok ? 0 : errno);
}

static void a_shm(int key, int id)
{
	/* shmget is the filter's (ENOSYS); shmat of the host's id, the
	 * IPC namespace's (the id names nothing here). */
	expect_fail(shmget(key, 0, 0), "shmget of the host's SysV segment (filter)",
		    (const int[]){ENOSYS, 0});
	void *p = shmat(id, NULL, SHM_RDONLY);
	expect_fail(p == (void *)-1 ? -1 : 0, "shmat of the host's segment id",
		    (const int[]){EINVAL, EIDRM, EACCES, 0});
}

static void a_fs(void)
{
	int fd = open("/sys/fs/cgroup/cgroup.procs", O_WRONLY);
	expect_fail(fd, "open cgroup.procs for writing", E_ANY_DENY);
	DIR *d = opendir("/sys");
	expect_fail(d ? 0 : -1, "read /sys", E_ANY_DENY);
	fd = open("/proc/sys/kernel/hostname", O_WRONLY);
	expect_fail(fd, "write /proc/sys/kernel/hostname", E_ANY_DENY);
	fd = open("/proc/sysrq-trigger", O_WRONLY);
	expect_fail(fd, "write /proc/sysrq-trigger", E_ANY_DENY);
	expect_fail(mount("none", "/tmp", "tmpfs", 0, NULL), "mount tmpfs", E_PERM);
	expect_fail(mount("cgroup2", "/tmp", "cgroup2", 0, NULL), "mount cgroup2", E_PERM);
	expect_fail(mount("/usr", "/tmp", NULL, MS_BIND, NULL), "bind mount", E_PERM);
	expect_fail(umount2("/", MNT_DETACH), "umount /", E_PERM);
	expect_fail(umount2("/proc", 0), "umount /proc", E_PERM);
	expect_fail(chroot("/tmp"), "chroot", E_PERM);
	expect_fail(syscall(SYS_pivot_root, "/tmp", "/tmp"), "pivot_root", E_PERM);
	/* The read-only root: checked directly, and by the errno of a write
	 * (EROFS from the mount; Landlock, the next layer, would say EACCES). */
	struct statvfs rv;
	result(statvfs("/", &rv) == 0 && (rv.f_flag & ST_RDONLY), "the root is mounted read-only", 0);
	static const struct {
		const char *path;
		int err;
	} ro[] = {{"/x", EROFS},     {"/usr/x", EROFS}, {"/etc/x", EROFS},    {"/code/x", EROFS},
		  {"/bin/x", EROFS}, {"/dev/x", EROFS}, {"/proc/x", ENOENT}, {"/etc/passwd", EACCES},
		  {NULL, 0}};
	for (int i = 0; ro[i].path; i++) {
		char what[64];
		snprintf(what, sizeof(what), "write %s", ro[i].path);
		expect_fail(open(ro[i].path, O_WRONLY | O_CREAT, 0644), what, (const int[]){ro[i].err, 0});
	}
	fd = open("/work/ok", O_WRONLY | O_CREAT, 0644);
	result(fd >= 0, "writing /work still works", fd < 0 ? errno : 0);
	fd = open("/tmp/ok", O_WRONLY | O_CREAT, 0644);
	result(fd >= 0, "writing /tmp still works", fd < 0 ? errno : 0);
}

static void a_privs(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	int caps_zero = 1, nnp = 0, sec = 0;
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "Cap", 3) == 0 && !strstr(line, "0000000000000000")) {
			caps_zero = 0;
			printf("ESCAPED: %s", line);
		}
		if (strncmp(line, "NoNewPrivs:\t1", 13) == 0)
			nnp = 1;
		if (strncmp(line, "Seccomp:\t2", 10) == 0)
			sec = 1;
	}
	if (f)
		fclose(f);
	result(caps_zero, "every capability set is empty", 0);
	result(nnp, "no_new_privs is set", 0);
	result(sec, "a seccomp filter is loaded", 0);
	result(getuid() != 0 && geteuid() != 0, "not uid 0 inside", 0);
	struct statvfs sv;
	result(statvfs("/usr/bin", &sv) == 0 && (sv.f_flag & ST_NOSUID), "/usr is mounted nosuid", 0);
	struct stat st;
	if (stat("/usr/bin/su", &st) == 0 && (st.st_mode & S_ISUID)) {
		pid_t p = fork();
		if (p == 0) {
			int nul = open("/dev/null", O_RDWR);
			dup2(nul, 0), dup2(nul, 1), dup2(nul, 2);
			execl("/usr/bin/su", "su", "-c", "touch /work/root-was-here", "root", NULL);
			_exit(127);
		}
		int ws;
		waitpid(p, &ws, 0);
		result(access("/work/root-was-here", F_OK) != 0, "setuid su gives no root", 0);
	}
	struct rlimit rl;
	getrlimit(RLIMIT_CORE, &rl);
	result(rl.rlim_max == 0, "core dumps are off (hard RLIMIT_CORE 0)", 0);
}

static void a_env(const char *secret)
{
	extern char **environ;
	int ok = 1;
	for (char **e = environ; *e; e++)
		if (strstr(*e, secret) || strncmp(*e, "KILN_SECRET", 11) == 0) {
			printf("ESCAPED: %s\n", *e);
			ok = 0;
		}
	DIR *d = opendir("/proc");
	struct dirent *de;
	while (d && (de = readdir(d))) {
		char p[300], buf[65536];
		snprintf(p, sizeof(p), "/proc/%s/environ", de->d_name);
		int fd = open(p, O_RDONLY);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			buf[n] = 0;
			for (ssize_t i = 0; i < n; i++)
				if (!buf[i])
					buf[i] = '\n';
			if (strstr(buf, secret)) {
				printf("ESCAPED: secret in %s\n", p);
				ok = 0;
			}
		}
	}
	if (d)
		closedir(d);
	result(ok, "the server's environment is not visible", 0);
	const char *home_files[] = {".ssh/id_rsa", ".config/kiln/config.json", NULL};
	const char *hosthome = getenv("KILN_TEST_HOSTHOME");
	for (int i = 0; hosthome && home_files[i]; i++) {
		char p[512];
		snprintf(p, sizeof(p), "%s/%s", hosthome, home_files[i]);
		expect_fail(open(p, O_RDONLY), "read a file in the host's $HOME", E_ANY_DENY);
	}
	expect_fail(open("/root/.ssh/id_rsa", O_RDONLY), "read /root/.ssh", E_ANY_DENY);
}

/* Quotas the kernel counts per user up to the box's owner, each
 * refused by the layer meant for it: the filter (inotify, pipe resize,
 * memfd: EPERM or ENOSYS where the kernel would succeed), the rlimits
 * (signals queued, POSIX message queues). */
static void a_quotas(void)
{
	expect_fail(inotify_init1(IN_CLOEXEC), "inotify_init1 (filter)", E_PERM);
	expect_fail(syscall(SYS_inotify_init), "inotify_init (filter)", E_PERM);
	int p[2];
	if (pipe(p) < 0) {
		result(0, "pipe", errno);
		return;
	}
	expect_fail(fcntl(p[0], F_SETPIPE_SZ, 1 << 20), "F_SETPIPE_SZ 1 MiB (filter)", E_PERM);
	expect_fail(syscall(SYS_fcntl, p[0], (unsigned long)F_SETPIPE_SZ | (1UL << 32), 1 << 20),
		    "F_SETPIPE_SZ|1<<32 (filter)", E_PERM);
	expect_fail(fcntl(p[0], F_SETPIPE_SZ, 4096), "F_SETPIPE_SZ smaller (filter)", E_PERM);
	long sz = fcntl(p[0], F_GETPIPE_SZ);
	result(sz == 65536, "F_GETPIPE_SZ still works (64 KiB)", sz < 0 ? errno : 0);
	expect_fail(syscall(SYS_memfd_create, "x", 0), "memfd_create (filter)",
		    (const int[]){ENOSYS, 0});
#ifdef SYS_memfd_secret
	expect_fail(syscall(SYS_memfd_secret, 0), "memfd_secret (filter)", (const int[]){ENOSYS, 0});
#endif
	/* Signals queued to oneself until the kernel says no: at most the
	 * box's RLIMIT_SIGPENDING (128), never the owner's thousands. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN);
	sigprocmask(SIG_BLOCK, &set, NULL);
	int n = 0;
	while (n < 1000000 && sigqueue(getpid(), SIGRTMIN, (union sigval){.sival_int = n}) == 0)
		n++;
	int e = errno;
	char what[96];
	snprintf(what, sizeof(what), "signals queued: %d, stopped by EAGAIN within 128", n);
	result(n <= 128 && e == EAGAIN, what, e);
	struct mq_attr ma = {.mq_maxmsg = 1, .mq_msgsize = 16};
	mqd_t q = mq_open("/kiln-q", O_CREAT | O_RDWR, 0600, &ma);
	expect_fail(q == (mqd_t)-1 ? -1 : 0, "mq_open (RLIMIT_MSGQUEUE 0)", (const int[]){EMFILE, 0});
}

/* Pid 1 is not the program's to tune, and tells nothing of the host:
 * the filter refuses every call that names it (EPERM; the kernel alone
 * would allow them, same uid), and its command line and the kernel's
 * are hidden. */
static void a_pid1(void)
{
	struct rlimit rl = {64, 64}, old;
	expect_fail(prlimit(1, RLIMIT_NOFILE, NULL, &old), "prlimit(1) read", E_PERM);
	expect_fail(prlimit(1, RLIMIT_NOFILE, &rl, NULL), "prlimit(1) set", E_PERM);
	expect_fail(syscall(SYS_prlimit64, 1UL | (1UL << 32), RLIMIT_NOFILE, NULL, &old),
		    "prlimit(1|1<<32)", E_PERM);
	expect_fail(setpriority(PRIO_PROCESS, 1, 19), "setpriority(PRIO_PROCESS, 1)", E_PERM);
	expect_fail(setpriority(PRIO_USER, 0, 19), "setpriority(PRIO_USER)", E_PERM);
	cpu_set_t cs;
	CPU_ZERO(&cs);
	CPU_SET(0, &cs);
	expect_fail(sched_setaffinity(1, sizeof(cs), &cs), "sched_setaffinity(1)", E_PERM);
	struct sched_param sp = {0};
	expect_fail(sched_setscheduler(1, SCHED_BATCH, &sp), "sched_setscheduler(1)", E_PERM);
	expect_fail(sched_setparam(1, &sp), "sched_setparam(1)", E_PERM);
	expect_fail(syscall(SYS_ioprio_set, 1, 1, 0), "ioprio_set(WHO_PROCESS, 1)", E_PERM);
	/* One's own stays allowed. */
	result(prlimit(0, RLIMIT_NOFILE, NULL, &old) == 0, "prlimit(0) of oneself works", 0);
	/* (19: lowering one's own priority needs nothing, whatever nice
	 * value the suite runs under; make mutate runs it under nice.) */
	result(setpriority(PRIO_PROCESS, 0, 19) == 0, "setpriority of oneself works", 0);
	result(sched_setaffinity(0, sizeof(cs), &cs) == 0, "sched_setaffinity of oneself works", 0);
	/* What pid 1 and the kernel were started with. */
	char buf[4096];
	int fd = open("/proc/1/cmdline", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	int ok = n >= 4 && memcmp(buf, "kiln", 4) == 0;
	for (ssize_t i = 4; i < n; i++)
		if (buf[i])
			ok = 0;
	for (ssize_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	char what[160];
	snprintf(what, sizeof(what), "/proc/1/cmdline reads 'kiln' only ('%.80s')", n > 0 ? buf : "");
	result(ok, what, n < 0 ? errno : 0);
	fd = open("/proc/cmdline", O_RDONLY);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	snprintf(what, sizeof(what), "/proc/cmdline is empty (%zd bytes)", n);
	result(n == 0, what, n < 0 ? errno : 0);
}

/* Hog every quota the box shares with its owner, say how far it got,
 * then wait to be ended: the suite checks meanwhile, on the host, that
 * the owner still has them (`attack host-quotas`). */
static char watch_paths[4000][128];
static int nwatch_paths;
static int collect(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st, (void)f;
	if (type == FTW_F && strlen(path) < sizeof(watch_paths[0]))
		snprintf(watch_paths[nwatch_paths++], sizeof(watch_paths[0]), "%s", path);
	return nwatch_paths >= 4000;
}

static void a_hog(void)
{
	/* Pipes in a child of its own (its own RLIMIT_NOFILE), kept open. */
	int sync[2];
	if (pipe(sync) < 0)
		return;
	pid_t c = fork();
	if (c == 0) {
		int np = 0, big = 0, p[2];
		while (pipe(p) == 0) {
			np++;
			if (fcntl(p[0], F_SETPIPE_SZ, 1 << 20) >= 0)
				big++;
		}
		printf("pipes %d enlarged %d\n", np, big);
		fflush(stdout);
		close(sync[1]);
		sleep(60);
		_exit(0);
	}
	close(sync[1]);
	char b;
	while (read(sync[0], &b, 1) > 0)
		;
	int inst[256], ni = 0, nw = 0;
	while (ni < 256 && (inst[ni] = inotify_init1(IN_CLOEXEC)) >= 0)
		ni++;
	nftw("/usr/lib", collect, 16, FTW_PHYS);
	for (int i = 0; i < ni; i++)
		for (int j = 0; j < nwatch_paths; j++) {
			if (inotify_add_watch(inst[i], watch_paths[j], IN_OPEN) >= 0)
				nw++;
			else if (errno == ENOSPC)
				goto watched;
		}
watched:;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN);
	sigprocmask(SIG_BLOCK, &set, NULL);
	int ns = 0;
	while (ns < 10000000 && sigqueue(getpid(), SIGRTMIN, (union sigval){.sival_int = 0}) == 0)
		ns++;
	printf("HOGGING inotify %d watches %d signals %d\n", ni, nw, ns);
	fflush(stdout);
	sleep(60);
}

/* Host side, while a box hogs: the owner can still watch files, queue a
 * signal and enlarge a pipe. */
static void a_host_quotas(void)
{
	int in = inotify_init1(IN_CLOEXEC);
	result(in >= 0, "the owner can create an inotify instance", in < 0 ? errno : 0);
	int w = in < 0 ? -1 : inotify_add_watch(in, "/usr/bin", IN_OPEN);
	result(w >= 0, "the owner can add an inotify watch", w < 0 ? errno : 0);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN);
	sigprocmask(SIG_BLOCK, &set, NULL);
	int r = sigqueue(getpid(), SIGRTMIN, (union sigval){.sival_int = 1});
	result(r == 0, "the owner can queue a signal", r < 0 ? errno : 0);
	int p[2];
	r = pipe(p) < 0 ? -1 : fcntl(p[0], F_SETPIPE_SZ, 1 << 20);
	result(r >= 0, "the owner can enlarge a pipe to 1 MiB", r < 0 ? errno : 0);
}

/* Host side: put a secret into this process's session keyring, then run
 * the rest of the command line (kiln) with it. */
static int plant_key(char **argv)
{
	long id = syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "kiln-test");
	if (id < 0)
		perror("join keyring");
	if (syscall(SYS_add_key, "user", "kiln-test-secret", "hunter2", 7, KEY_SPEC_SESSION_KEYRING) < 0)
		perror("add_key");
	execvp(argv[0], argv);
	perror("exec");
	return 127;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: attack NAME [ARG]\n");
		return 2;
	}
	const char *n = argv[1];
	const char *arg = argc > 2 ? argv[2] : "";
	if (!strcmp(n, "plant-key"))
		return plant_key(argv + 2);
	if (!strcmp(n, "tiocsti"))
		a_tiocsti();
	else if (!strcmp(n, "proc1exe"))
		a_proc1exe();
	else if (!strcmp(n, "fds"))
		a_fds();
	else if (!strcmp(n, "cwd"))
		a_cwd();
	else if (!strcmp(n, "ptrace"))
		a_ptrace();
	else if (!strcmp(n, "kill"))
		a_kill();
	else if (!strcmp(n, "unshare"))
		a_unshare();
	else if (!strcmp(n, "kernel"))
		a_kernel();
	else if (!strcmp(n, "landlock"))
		a_landlock();
	else if (!strcmp(n, "keyring"))
		a_keyring();
	else if (!strcmp(n, "personality"))
		a_personality();
	else if (!strcmp(n, "x32"))
		a_x32();
	else if (!strcmp(n, "int80"))
		a_int80();
	else if (!strcmp(n, "sockets"))
		a_sockets();
	else if (!strcmp(n, "abstract"))
		a_abstract(arg);
	else if (!strcmp(n, "tcp"))
		a_tcp(atoi(arg));
	else if (!strcmp(n, "shm"))
		a_shm((int)strtol(arg, NULL, 0), argc > 3 ? atoi(argv[3]) : 0);
	else if (!strcmp(n, "fs"))
		a_fs();
	else if (!strcmp(n, "privs"))
		a_privs();
	else if (!strcmp(n, "env"))
		a_env(arg);
	else if (!strcmp(n, "quotas"))
		a_quotas();
	else if (!strcmp(n, "pid1"))
		a_pid1();
	else if (!strcmp(n, "hog"))
		a_hog();
	else if (!strcmp(n, "host-quotas"))
		a_host_quotas();
	else {
		fprintf(stderr, "attack: unknown attack %s\n", n);
		return 2;
	}
	printf("%s\n", escaped ? "RESULT: ESCAPED" : "RESULT: CONTAINED");
	return escaped;
}
