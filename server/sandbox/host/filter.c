/* filter.c: the seccomp deny list. Default allow, because the box's
 * namespaces, mounts, capabilities and Landlock already confine what an
 * allowed call can reach; the filter removes the kernel surface that has
 * escaped such boxes before (nested namespaces, io_uring, bpf, keyrings,
 * terminal injection), anything on a foreign architecture, and the calls
 * by which a box would use up quotas it shares with its owner or learn
 * what the host runs (inotify, memfd, pipe sizes, tuning pid 1). */
#include "sandbox/host/filter.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"

/* Calls denied outright with EPERM. Names, not numbers, so that a call
 * this libseccomp does not know is skipped instead of breaking the build. */
static const char *const denied[] = {
    /* Debugging other processes, reading their memory. */
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    /* The mount family: the box's mounts are final. */
    "mount",
    "umount",
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
    "open_tree_attr",
    /* New namespaces or joining others. */
    "unshare",
    "setns",
    /* Keyrings (the box has a fresh one; still nothing to do there). */
    "keyctl",
    "add_key",
    "request_key",
    /* Kernel attack surface with a record of escapes. */
    "bpf",
    "perf_event_open",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "userfaultfd",
    "open_by_handle_at",
    "name_to_handle_at",
    "lookup_dcookie",
    /* The machine itself. */
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
    "nfsservctl",
    "uselib",
    "_sysctl",
    /* Watching files: on the read-only /usr bind, inotify would show the
     * box every program the host runs, by name and time; and its
     * instances and watches count against the owner's, whose editor
     * needs them. */
    "fanotify_init",
    "inotify_init",
    "inotify_init1",
};

/* Calls refused with ENOSYS, as by a kernel without them, so that
 * programs take the fallback they have for such kernels. memfd_create:
 * a memfd filled with write() and never mapped holds memory no rlimit
 * counts and the OOM killer does not see; the fallbacks (glib, libffi,
 * Python's multiprocessing) use files in /tmp or /dev/shm, which the
 * /tmp tmpfs's size bounds. memfd_secret: memory even the kernel cannot
 * reclaim. */
static const char *const absent[] = {
    "memfd_create",
    "memfd_secret",
    /* SysV IPC objects outlive their users until the IPC namespace ends,
     * and its limits (kernel.shmall: no limit; kernel.sem: 32 000 sets of
     * 32 000) would let a box pin gigabytes. The namespace's sysctls
     * that would bound them are writable only by its uid 0, which the
     * box does not map. Refused as by a kernel built without SysV IPC;
     * POSIX shared memory and semaphores (files in /dev/shm, the /tmp
     * tmpfs) remain. shmat, msgsnd and the rest stay allowed: without
     * the get calls they reach nothing but the empty namespace. */
    "shmget",
    "msgget",
    "semget",
    /* Pages the program can still change, put into a pipe: splice from a
     * file (its page cache, which the program rewrites with pwrite or a
     * shared mapping), sendfile to a pipe (the same, through splice) and
     * vmsplice (the program's own memory). The server relays output
     * that needs no escape from the box's pipe to the client's by
     * moving the pages, not copying them (run_output.c): a page the
     * program changed after the server's check would reach the editor
     * unchecked, as JSON-RPC of the program's choosing. Every byte in
     * the box's pipes must be a copy the program no longer holds, as
     * write() makes. The fallbacks (read and write; Python's shutil
     * copies that way on ENOSYS) cost a copy. tee moves pages only
     * between pipes, so it adds none the program could change. */
    "splice",
    "sendfile",
    "vmsplice",
};

static int deny(scmp_filter_ctx ctx, const char *name, int err)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return 0;
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), nr, 0);
}

/* What a zygote (zygote.c) does in its box to give each run a box of its
 * own, and its children undo before any user code with the full filter:
 * new namespaces, mounts in them, and a fresh session keyring. */
static const char *const zygote_allowed[] = {"unshare", "mount", "umount2", "keyctl"};

static bool allowed_in_zygote(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(zygote_allowed); i++)
		if (strcmp(zygote_allowed[i], name) == 0)
			return true;
	return false;
}

/* clone with any namespace flag (but in a zygote's box); CLONE_NEWTIME
 * shares its bit with the exit signal in clone(), so it can only come
 * through clone3, which is refused wholesale (ENOSYS, so libc falls back
 * to clone). */
static int deny_clone_flags(scmp_filter_ctx ctx, bool zygote)
{
	if (zygote)
		return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	static const unsigned long ns_flags[] = {
	    CLONE_NEWNS,  CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET,
	    CLONE_NEWIPC, CLONE_NEWUTS,  CLONE_NEWCGROUP,
	};
	for (size_t i = 0; i < ARRAY_SIZE(ns_flags); i++) {
		int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
		                         SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]));
		if (r < 0)
			return r;
	}
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
}

/* The kernel reads ioctl's request as 32 bits: compare only those, or
 * TIOCSTI | 1 << 32 passes an equality test and still injects keys. */
static int deny_ioctls(scmp_filter_ctx ctx)
{
	static const unsigned long reqs[] = {TIOCSTI, TIOCLINUX};
	for (size_t i = 0; i < ARRAY_SIZE(reqs); i++) {
		int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
		                         SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, reqs[i]));
		if (r < 0)
			return r;
	}
	return 0;
}

/* fcntl(F_SETPIPE_SZ): a pipe's buffer counts against its owner's
 * per-user pipe budget (fs.pipe-user-pages-soft); 128 pipes enlarged to
 * 1 MiB would use it up, and the owner's own pipes could no longer grow.
 * cmd is 32 bits for the kernel: masked compare, as for ioctl. */
static int deny_pipe_resize(scmp_filter_ctx ctx)
{
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(fcntl), 1,
	                        SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, F_SETPIPE_SZ));
}

/* Pid 1 runs as the program's uid, so the kernel lets the program change
 * its limits, priority, CPUs and scheduling. Refuse these calls when
 * they name pid 1 (the only process of the box the program does not
 * own: every other pid is the program's own), and the whole-user forms
 * of setpriority and ioprio_set, which reach pid 1 too. pid_t is 32
 * bits for the kernel: masked compares. */
static int deny_pid1(scmp_filter_ctx ctx)
{
	static const char *const by_pid[] = {"prlimit64", "sched_setaffinity", "sched_setscheduler",
	                                     "sched_setparam", "sched_setattr"};
	for (size_t i = 0; i < ARRAY_SIZE(by_pid); i++) {
		int nr = seccomp_syscall_resolve_name(by_pid[i]);
		if (nr == __NR_SCMP_ERROR)
			continue;
		int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
		                         SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffUL, 1));
		if (r < 0)
			return r;
	}
	/* setpriority(which, who): PRIO_PROCESS 1, or PRIO_USER at all;
	 * ioprio_set(which, who): IOPRIO_WHO_PROCESS (1) 1, or
	 * IOPRIO_WHO_USER (3) at all. */
	static const struct {
		int nr;
		unsigned long process, user;
	} by_who[] = {{SCMP_SYS(setpriority), PRIO_PROCESS, PRIO_USER},
	              {SCMP_SYS(ioprio_set), 1, 3}};
	for (size_t i = 0; i < ARRAY_SIZE(by_who); i++) {
		int r =
		    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), by_who[i].nr, 2,
		                     SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffUL, by_who[i].process),
		                     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, 1));
		if (r < 0)
			return r;
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), by_who[i].nr, 1,
		                     SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffUL, by_who[i].user));
		if (r < 0)
			return r;
	}
	return 0;
}

/* personality: only the default (0) and the query (0xffffffff). libseccomp
 * takes one comparison per argument, so "neither all zeros nor all ones"
 * is spelt as "some two neighbouring bits differ": 64 masked tests. */
static int deny_personality(scmp_filter_ctx ctx)
{
	int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1,
	                         SCMP_A0(SCMP_CMP_GT, 0xffffffffUL));
	if (r < 0)
		return r;
	for (unsigned i = 0; i < 32; i++) {
		unsigned long a = 1UL << i, b = 1UL << ((i + 1) % 32);
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1,
		                     SCMP_A0(SCMP_CMP_MASKED_EQ, a | b, a));
		if (r < 0)
			return r;
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1,
		                     SCMP_A0(SCMP_CMP_MASKED_EQ, a | b, b));
		if (r < 0)
			return r;
	}
	return 0;
}

/* socket/socketpair: AF_UNIX, AF_INET, AF_INET6 only (the network
 * namespace holds nothing but loopback). The value is compared as 64
 * bits, so garbage in the high half lands in the "greater" rule. */
static int deny_families(scmp_filter_ctx ctx, int sys)
{
	int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), sys, 1,
	                         SCMP_A0(SCMP_CMP_GT, AF_INET6));
	if (r < 0)
		return r;
	for (int fam = 0; fam < AF_INET6; fam++) {
		if (fam == AF_UNIX || fam == AF_INET)
			continue;
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), sys, 1,
		                     SCMP_A0(SCMP_CMP_EQ, (unsigned long)fam));
		if (r < 0)
			return r;
	}
	return 0;
}

static int build(scmp_filter_ctx ctx, bool zygote)
{
	int r;
	/* Foreign architectures (int 0x80 from a 64-bit process) and x32
	 * calls end the process: libseccomp's native x86_64 filter kills
	 * both with the bad-arch action. */
	if ((r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) < 0)
		return r;
	/* A binary tree of syscall numbers instead of a linear scan: every
	 * call the program makes walks this filter. */
	if ((r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2)) < 0)
		return r;
	/* The child sets no_new_privs itself before loading. */
	if ((r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0)) < 0)
		return r;
	for (size_t i = 0; i < ARRAY_SIZE(denied); i++)
		if ((!zygote || !allowed_in_zygote(denied[i])) &&
		    (r = deny(ctx, denied[i], EPERM)) < 0)
			return r;
	for (size_t i = 0; i < ARRAY_SIZE(absent); i++)
		if ((r = deny(ctx, absent[i], ENOSYS)) < 0)
			return r;
	if ((r = deny_clone_flags(ctx, zygote)) < 0 || (r = deny_ioctls(ctx)) < 0 ||
	    (r = deny_pipe_resize(ctx)) < 0 || (r = deny_pid1(ctx)) < 0 ||
	    (r = deny_personality(ctx)) < 0 || (r = deny_families(ctx, SCMP_SYS(socket))) < 0 ||
	    (r = deny_families(ctx, SCMP_SYS(socketpair))) < 0)
		return r;
	return 0;
}

static int compile_filter(bool zygote, struct sock_fprog *ret_prog)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return -ENOMEM;
	int r = build(ctx, zygote);
	_cleanup_close_ int fd = -1;
	if (r < 0)
		goto out;
	fd = memfd_create("kiln-seccomp", MFD_CLOEXEC);
	if (fd < 0) {
		r = neg_errno();
		goto out;
	}
	if ((r = seccomp_export_bpf(ctx, fd)) < 0)
		goto out;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		r = neg_errno();
		goto out;
	}
	size_t len = (size_t)st.st_size;
	if (len == 0 || len % sizeof(struct sock_filter) ||
	    len / sizeof(struct sock_filter) > 4096) {
		r = -EINVAL;
		goto out;
	}
	struct sock_filter *f = malloc(len);
	if (!f) {
		r = -ENOMEM;
		goto out;
	}
	if (pread(fd, f, len, 0) != (ssize_t)len) {
		free(f);
		r = -EIO;
		goto out;
	}
	ret_prog->len = (unsigned short)(len / sizeof(struct sock_filter));
	ret_prog->filter = f;
	r = 0;
out:
	seccomp_release(ctx);
	return r;
}

int sbx_filter_build(struct sock_fprog *ret_prog)
{
	return compile_filter(false, ret_prog);
}

int sbx_filter_build_zygote(struct sock_fprog *ret_prog)
{
	return compile_filter(true, ret_prog);
}

void sbx_filter_free(struct sock_fprog *prog)
{
	free(prog->filter);
	prog->filter = NULL;
	prog->len = 0;
}
