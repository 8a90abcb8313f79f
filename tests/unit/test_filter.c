/* test_filter.c: sandbox/host/filter.c rule by rule, apart from every other
 * layer of the box. First, the program the build embedded (the one every
 * box loads, sbx_filter_embedded) is libseccomp's own, byte for byte, for
 * the box's filter and the zygote's. Then that program is run here on a
 * seccomp_data for each call it must refuse, with the exact action it
 * must take (EPERM, EAFNOSUPPORT, ENOSYS, a kill), and for calls it must
 * allow; so a rule dropped from the deny list fails here even though the
 * box's namespaces, capabilities and Landlock would still stop the call.
 * Then the same program loaded by the kernel against a real pty: TIOCSTI
 * on the caller's controlling terminal fails with EPERM under the filter,
 * and without it does not (it injects, or fails with EIO where
 * dev.tty.legacy_tiocsti is 0): the errno tells the filter from the
 * kernel. */
#include "sandbox/host/filter.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>

#include "unit.h"

/* A classic BPF interpreter for what seccomp programs use: loads from
 * seccomp_data, the scratch memory, ALU, jumps, returns. */
static uint32_t run_bpf(const struct sock_fprog *prog, const struct seccomp_data *d)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
	const unsigned char *data = (const unsigned char *)d;
	for (unsigned pc = 0; pc < prog->len; pc++) {
		const struct sock_filter *f = &prog->filter[pc];
		uint32_t k = f->k, src = BPF_SRC(f->code) == BPF_X ? x : k;
		switch (BPF_CLASS(f->code)) {
		case BPF_LD:
			if (BPF_MODE(f->code) == BPF_ABS) {
				ck_assert_uint_le(k + 4, sizeof(*d));
				memcpy(&a, data + k, 4);
			} else if (BPF_MODE(f->code) == BPF_IMM) {
				a = k;
			} else if (BPF_MODE(f->code) == BPF_MEM) {
				a = mem[k];
			} else {
				ck_abort_msg("ld mode 0x%x", f->code);
			}
			break;
		case BPF_LDX:
			x = BPF_MODE(f->code) == BPF_MEM ? mem[k] : k;
			break;
		case BPF_ST:
			mem[k] = a;
			break;
		case BPF_STX:
			mem[k] = x;
			break;
		case BPF_ALU:
			switch (BPF_OP(f->code)) {
			case BPF_ADD:
				a += src;
				break;
			case BPF_SUB:
				a -= src;
				break;
			case BPF_MUL:
				a *= src;
				break;
			case BPF_DIV:
				a = src ? a / src : 0;
				break;
			case BPF_OR:
				a |= src;
				break;
			case BPF_AND:
				a &= src;
				break;
			case BPF_LSH:
				a <<= src;
				break;
			case BPF_RSH:
				a >>= src;
				break;
			case BPF_NEG:
				a = -a;
				break;
			default:
				ck_abort_msg("alu op 0x%x", f->code);
			}
			break;
		case BPF_JMP: {
			bool t;
			switch (BPF_OP(f->code)) {
			case BPF_JA:
				pc += k;
				continue;
			case BPF_JEQ:
				t = a == src;
				break;
			case BPF_JGT:
				t = a > src;
				break;
			case BPF_JGE:
				t = a >= src;
				break;
			case BPF_JSET:
				t = (a & src) != 0;
				break;
			default:
				ck_abort_msg("jmp op 0x%x", f->code);
			}
			pc += t ? f->jt : f->jf;
			break;
		}
		case BPF_RET:
			return BPF_RVAL(f->code) == BPF_A ? a : k;
		case BPF_MISC:
			if (BPF_MISCOP(f->code) == BPF_TAX)
				x = a;
			else
				a = x;
			break;
		default:
			ck_abort_msg("class 0x%x", f->code);
		}
	}
	ck_abort_msg("the program fell off its end");
	return 0;
}

/* What every box loads: the build's program (filter.h). */
static struct sock_fprog prog;

static void setup(void)
{
	sbx_filter_embedded(false, &prog);
	ck_assert(prog.filter && prog.len > 0);
}

static void teardown(void)
{
	prog = (struct sock_fprog){0};
}

static void same_program(bool zygote)
{
	struct sock_fprog made, built;
	ck_assert_int_eq(zygote ? sbx_filter_build_zygote(&made) : sbx_filter_build(&made), 0);
	sbx_filter_embedded(zygote, &built);
	ck_assert_msg(built.len == made.len, "%s filter: %u instructions embedded, libseccomp %u",
	              zygote ? "the zygote's" : "the box's", built.len, made.len);
	for (unsigned i = 0; i < made.len; i++) {
		const struct sock_filter *b = &built.filter[i], *m = &made.filter[i];
		ck_assert_msg(memcmp(b, m, sizeof(*m)) == 0,
		              "%s filter: instruction %u differs from libseccomp's",
		              zygote ? "the zygote's" : "the box's", i);
	}
	sbx_filter_free(&made);
}

/* The build's programs are libseccomp's, compiled now from filter.c. */
START_TEST(embedded_is_libseccomps)
{
	same_program(false);
	same_program(true);
}
END_TEST

static uint32_t verdict(uint32_t arch, int nr, const uint64_t args[6])
{
	struct seccomp_data d;
	memset(&d, 0, sizeof(d));
	d.nr = nr;
	d.arch = arch;
	if (args)
		memcpy(d.args, args, sizeof(d.args));
	return run_bpf(&prog, &d);
}

#define ERRNO(e) (SECCOMP_RET_ERRNO | ((uint32_t)(e)&SECCOMP_RET_DATA))

static void expect(const char *what, int nr, const uint64_t args[6], uint32_t want)
{
	ck_assert_msg(nr >= 0, "%s: no such call here", what);
	uint32_t got = verdict(AUDIT_ARCH_X86_64, nr, args);
	ck_assert_msg(got == want, "%s: the filter returns 0x%08x, not 0x%08x", what, got, want);
}

/* Every call of filter.c's deny list, each refused with EPERM by a rule
 * of its own (a dropped name shows as ALLOW here). */
START_TEST(each_denied_call_is_eperm)
{
	static const char *const names[] = {
	    "ptrace",
	    "process_vm_readv",
	    "process_vm_writev",
	    "kcmp",
	    "pidfd_getfd",
	    "mount",
	    "umount2",
	    "pivot_root",
	    "chroot",
	    "fsopen",
	    "fsconfig",
	    "fsmount",
	    "fspick",
	    "move_mount",
	    "open_tree",
	    "mount_setattr",
	    "unshare",
	    "setns",
	    "keyctl",
	    "add_key",
	    "request_key",
	    "bpf",
	    "perf_event_open",
	    "io_uring_setup",
	    "io_uring_enter",
	    "io_uring_register",
	    "userfaultfd",
	    "open_by_handle_at",
	    "name_to_handle_at",
	    "lookup_dcookie",
	    "kexec_load",
	    "kexec_file_load",
	    "reboot",
	    "init_module",
	    "finit_module",
	    "delete_module",
	    "swapon",
	    "swapoff",
	    "syslog",
	    "acct",
	    "quotactl",
	    "quotactl_fd",
	    "iopl",
	    "ioperm",
	    "vhangup",
	    "settimeofday",
	    "clock_settime",
	    "clock_adjtime",
	    "adjtimex",
	    "fanotify_init",
	    "inotify_init",
	    "inotify_init1",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		expect(names[i], seccomp_syscall_resolve_name(names[i]), NULL, ERRNO(EPERM));
}
END_TEST

/* memfd and the SysV IPC get calls: ENOSYS, as from a kernel without
 * them, so programs fall back to files in /tmp and /dev/shm. */
START_TEST(memfd_absent)
{
	expect("memfd_create", seccomp_syscall_resolve_name("memfd_create"), NULL, ERRNO(ENOSYS));
	expect("memfd_secret", seccomp_syscall_resolve_name("memfd_secret"), NULL, ERRNO(ENOSYS));
	expect("shmget", SYS_shmget, NULL, ERRNO(ENOSYS));
	expect("msgget", SYS_msgget, NULL, ERRNO(ENOSYS));
	expect("semget", SYS_semget, NULL, ERRNO(ENOSYS));
	expect("shmat", SYS_shmat, NULL, SECCOMP_RET_ALLOW);
}
END_TEST

/* The calls that put pages the program can still change into a pipe:
 * ENOSYS, so that programs copy instead (the server moves the box's
 * output pages to the client: filter.c). tee, which moves only pages
 * already in a pipe, and copy_file_range (no pipes) stay. */
START_TEST(page_sharing_absent)
{
	expect("splice", SYS_splice, NULL, ERRNO(ENOSYS));
	expect("sendfile", SYS_sendfile, NULL, ERRNO(ENOSYS));
	expect("vmsplice", SYS_vmsplice, NULL, ERRNO(ENOSYS));
	expect("tee", SYS_tee, NULL, SECCOMP_RET_ALLOW);
	expect("copy_file_range", SYS_copy_file_range, NULL, SECCOMP_RET_ALLOW);
}
END_TEST

/* F_SETPIPE_SZ refused whatever the high half of cmd; other fcntls pass. */
START_TEST(pipe_resize)
{
	uint64_t a[6] = {3, F_SETPIPE_SZ, 1 << 20};
	expect("F_SETPIPE_SZ", SYS_fcntl, a, ERRNO(EPERM));
	a[1] = F_SETPIPE_SZ | 1ULL << 32;
	expect("F_SETPIPE_SZ with bit 32", SYS_fcntl, a, ERRNO(EPERM));
	static const uint64_t ok[] = {F_GETPIPE_SZ, F_GETFL, F_SETFL, F_SETFD, F_DUPFD_CLOEXEC};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		a[1] = ok[i];
		expect("another fcntl", SYS_fcntl, a, SECCOMP_RET_ALLOW);
	}
}
END_TEST

/* Pid 1 (and the whole-user forms that reach it) cannot be tuned; the
 * program's own processes can. */
START_TEST(pid1_untunable)
{
	static const char *const by_pid[] = {"prlimit64", "sched_setaffinity", "sched_setscheduler",
	                                     "sched_setparam", "sched_setattr"};
	for (size_t i = 0; i < sizeof(by_pid) / sizeof(by_pid[0]); i++) {
		int nr = seccomp_syscall_resolve_name(by_pid[i]);
		uint64_t a[6] = {1};
		expect(by_pid[i], nr, a, ERRNO(EPERM));
		a[0] = 1 | 1ULL << 32;
		expect(by_pid[i], nr, a, ERRNO(EPERM));
		for (uint64_t pid = 0; pid < 8; pid++) {
			if (pid == 1)
				continue;
			a[0] = pid;
			expect(by_pid[i], nr, a, SECCOMP_RET_ALLOW);
		}
	}
	uint64_t a[6] = {PRIO_PROCESS, 1, 19};
	expect("setpriority(PRIO_PROCESS, 1)", SYS_setpriority, a, ERRNO(EPERM));
	a[1] = 1 | 1ULL << 32;
	expect("setpriority(PRIO_PROCESS, 1|1<<32)", SYS_setpriority, a, ERRNO(EPERM));
	a[1] = 0;
	expect("setpriority(PRIO_PROCESS, 0)", SYS_setpriority, a, SECCOMP_RET_ALLOW);
	a[1] = 2;
	expect("setpriority(PRIO_PROCESS, 2)", SYS_setpriority, a, SECCOMP_RET_ALLOW);
	a[0] = PRIO_PGRP, a[1] = 0;
	expect("setpriority(PRIO_PGRP, 0)", SYS_setpriority, a, SECCOMP_RET_ALLOW);
	a[0] = PRIO_USER;
	expect("setpriority(PRIO_USER, 0)", SYS_setpriority, a, ERRNO(EPERM));
	uint64_t io[6] = {1 /* IOPRIO_WHO_PROCESS */, 1};
	expect("ioprio_set(WHO_PROCESS, 1)", SYS_ioprio_set, io, ERRNO(EPERM));
	io[1] = 0;
	expect("ioprio_set(WHO_PROCESS, 0)", SYS_ioprio_set, io, SECCOMP_RET_ALLOW);
	io[0] = 3 /* IOPRIO_WHO_USER */;
	expect("ioprio_set(WHO_USER, 0)", SYS_ioprio_set, io, ERRNO(EPERM));
}
END_TEST

/* What the box's programs need stays allowed: the filter is a deny list. */
START_TEST(ordinary_calls_allowed)
{
	static const char *const names[] = {"read",  "write",  "openat", "execve", "mmap",
	                                    "fork",  "wait4",  "kill",   "getpid", "clone",
	                                    "pipe2", "socket", "connect"};
	uint64_t inet[6] = {AF_INET, SOCK_STREAM};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		expect(names[i], seccomp_syscall_resolve_name(names[i]), inet, SECCOMP_RET_ALLOW);
}
END_TEST

/* The kernel reads ioctl's request as 32 bits: high garbage must not pass. */
START_TEST(terminal_ioctls)
{
	static const uint64_t reqs[] = {TIOCSTI, TIOCLINUX};
	for (size_t i = 0; i < 2; i++) {
		uint64_t a[6] = {0, reqs[i]};
		expect("ioctl", SYS_ioctl, a, ERRNO(EPERM));
		a[1] = reqs[i] | 1ULL << 32;
		expect("ioctl with bit 32", SYS_ioctl, a, ERRNO(EPERM));
		a[1] = reqs[i] | 0xffULL << 40;
		expect("ioctl with high garbage", SYS_ioctl, a, ERRNO(EPERM));
	}
	uint64_t ok[6] = {0, TCGETS};
	expect("ioctl TCGETS", SYS_ioctl, ok, SECCOMP_RET_ALLOW);
	ok[1] = FIONREAD;
	expect("ioctl FIONREAD", SYS_ioctl, ok, SECCOMP_RET_ALLOW);
}
END_TEST

START_TEST(namespace_clones)
{
	static const uint64_t flags[] = {CLONE_NEWNS,  CLONE_NEWUSER, CLONE_NEWPID,   CLONE_NEWNET,
	                                 CLONE_NEWIPC, CLONE_NEWUTS,  CLONE_NEWCGROUP};
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		uint64_t a[6] = {flags[i] | SIGCHLD};
		expect("clone with a namespace flag", SYS_clone, a, ERRNO(EPERM));
		a[0] |= CLONE_VM | CLONE_FS;
		expect("clone with a namespace flag among others", SYS_clone, a, ERRNO(EPERM));
	}
	uint64_t thread[6] = {CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD};
	expect("clone of a thread", SYS_clone, thread, SECCOMP_RET_ALLOW);
	/* clone3's flags are behind a pointer: refused whole, ENOSYS so that
	 * libc falls back to clone. */
	expect("clone3", SYS_clone3, NULL, ERRNO(ENOSYS));
}
END_TEST

START_TEST(personality_default_and_query_only)
{
	uint64_t a[6] = {0};
	expect("personality(0)", SYS_personality, a, SECCOMP_RET_ALLOW);
	a[0] = 0xffffffff;
	expect("personality query", SYS_personality, a, SECCOMP_RET_ALLOW);
	static const uint64_t bad[] = {0x0400000 /* READ_IMPLIES_EXEC */,
	                               0x0040000,
	                               0x0008,
	                               1,
	                               0x80000000,
	                               0x100000000ULL,
	                               0x1ffffffffULL};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a[0] = bad[i];
		expect("personality(other)", SYS_personality, a, ERRNO(EPERM));
	}
}
END_TEST

START_TEST(socket_families)
{
	for (int sys = 0; sys < 2; sys++) {
		int nr = sys ? SYS_socketpair : SYS_socket;
		for (uint64_t fam = 0; fam < 64; fam++) {
			uint64_t a[6] = {fam, SOCK_STREAM};
			bool ok = fam == AF_UNIX || fam == AF_INET || fam == AF_INET6;
			expect("socket family", nr, a,
			       ok ? SECCOMP_RET_ALLOW : ERRNO(EAFNOSUPPORT));
			a[0] = fam | 1ULL << 32;
			expect("socket family with bit 32", nr, a, ERRNO(EAFNOSUPPORT));
		}
	}
}
END_TEST

/* Another architecture's calls (int 0x80) and x32 numbers kill the process. */
START_TEST(foreign_and_x32_killed)
{
	ck_assert_uint_eq(verdict(AUDIT_ARCH_I386, 20, NULL), SECCOMP_RET_KILL_PROCESS);
	ck_assert_uint_eq(verdict(AUDIT_ARCH_X86_64, 0x40000000 | SYS_getpid, NULL),
	                  SECCOMP_RET_KILL_PROCESS);
	ck_assert_uint_eq(verdict(AUDIT_ARCH_X86_64, SYS_getpid, NULL), SECCOMP_RET_ALLOW);
}
END_TEST

/* In a child: a new session whose controlling terminal is a fresh pty,
 * with or without the filter; exits with the errno of TIOCSTI on it, 0
 * when it injected. */
static int tiocsti_errno(bool filtered)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int m = posix_openpt(O_RDWR | O_NOCTTY);
		if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 || setsid() < 0)
			_exit(200);
		int s = open(ptsname(m), O_RDWR); /* a session leader's first tty */
		if (s < 0 || ioctl(s, TIOCSCTTY, 0) < 0)
			_exit(201);
		if (filtered && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		                 prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0))
			_exit(202);
		char c = 'x';
		int r = ioctl(s, TIOCSTI, &c);
		_exit(r == 0 ? 0 : errno);
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	ck_assert_msg(WEXITSTATUS(st) < 200, "the pty set-up failed (%d)", WEXITSTATUS(st));
	return WEXITSTATUS(st);
}

START_TEST(tiocsti_on_a_real_pty)
{
	int bare = tiocsti_errno(false);
	ck_assert_msg(bare != EPERM, "without the filter TIOCSTI on one's own tty gave EPERM: the "
	                             "check below could not tell the filter from the kernel");
	ck_assert_msg(bare == 0 || bare == EIO, "TIOCSTI without the filter: %s", strerror(bare));
	int boxed = tiocsti_errno(true);
	ck_assert_msg(boxed == EPERM, "TIOCSTI under the filter: %s, not EPERM",
	              boxed ? strerror(boxed) : "it injected");
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("filter");
	TCase *tc = tcase_create("filter");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, embedded_is_libseccomps);
	tcase_add_test(tc, each_denied_call_is_eperm);
	tcase_add_test(tc, memfd_absent);
	tcase_add_test(tc, page_sharing_absent);
	tcase_add_test(tc, pipe_resize);
	tcase_add_test(tc, pid1_untunable);
	tcase_add_test(tc, ordinary_calls_allowed);
	tcase_add_test(tc, terminal_ioctls);
	tcase_add_test(tc, namespace_clones);
	tcase_add_test(tc, personality_default_and_query_only);
	tcase_add_test(tc, socket_families);
	tcase_add_test(tc, foreign_and_x32_killed);
	tcase_add_test(tc, tiocsti_on_a_real_pty);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(make_suite)
