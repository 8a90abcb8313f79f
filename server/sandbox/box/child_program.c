/* child_program.c: the program's process (pid 2 of the box): started by
 * pid 1 (child.c) on a stack of its own in pid 1's memory, it locks
 * itself down in one function read top to bottom (program()) and
 * becomes the program; a run's box prepares it ahead, locked down but
 * for the rlimits, waiting for its run. Failures go to pid 1 through the
 * close-on-exec pipe, as a step and an errno (child.h). */
#include "sandbox/box/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Failure of pid 2 before exec: tell pid 1 through the exec pipe. */
__attribute__((noreturn)) static void prog_fail(int pipe_fd, int step)
{
	int rec[2] = {step, errno};
	ssize_t w = write(pipe_fd, rec, sizeof(rec));
	(void)w;
	_exit(127);
}

#define PSTEP(pfd, step, expr)                                                                     \
	do {                                                                                       \
		if ((expr) < 0)                                                                    \
			prog_fail(pfd, step);                                                      \
	} while (0)

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
	PSTEP(pfd, SBX_STEP_NO_NEW_PRIVS, prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	if (!p->zygote)
		PSTEP(pfd, SBX_STEP_LANDLOCK, child_apply_landlock(p->landlock_abi, p->ws_host));
	PSTEP(pfd, SBX_STEP_SESSION, reset_signals());
	/* With a workspace, the watcher of names made during the run
	 * (child_watch.c): forked here, in this process's Landlock domain,
	 * while it still has a capability to keep. */
	bool watch = p->ws_host && p->nhide && !p->zygote;
	if (watch)
		PSTEP(pfd, SBX_STEP_WATCH, child_start_watch(p));
	PSTEP(pfd, SBX_STEP_CAPS, child_clear_caps());
	/* From here on the filter applies to the process's own calls: the
	 * wait for the run, its CPUs and rlimits (on itself) and execve. */
	PSTEP(pfd, SBX_STEP_SECCOMP, prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, p->seccomp));
	if (watch)
		PSTEP(pfd, SBX_STEP_WATCH, child_watch_listen());
	if (run_fd >= 0) {
		/* Pid 1 pins this process to its own CPU to wake it there
		 * (child.c): the program gets back the CPUs it had. */
		static cpu_set_t cpus;
		PSTEP(pfd, SBX_STEP_CPUS, sched_getaffinity(0, sizeof(cpus), &cpus));
		PSTEP(pfd, SBX_STEP_CODE, await_run(run_fd));
		PSTEP(pfd, SBX_STEP_CPUS, sched_setaffinity(0, sizeof(cpus), &cpus));
	}
	for (size_t i = 0; i < a->nrlimits; i++)
		PSTEP(pfd, SBX_STEP_RLIMIT, setrlimit(a->rlimits[i].resource, &a->rlimits[i].lim));
	execve(a->argv[0], a->argv, a->envp);
	prog_fail(pfd, SBX_STEP_EXEC);
}

static int program_entry(void *arg)
{
	program(arg);
}

/* Start the program's process (program()) on a stack of its own, in
 * pid 1's memory. Pid 1 sleeps until its execve (CLONE_VFORK), or, when
 * it is prepared ahead (a->run_fd), until it has locked itself down and
 * says so on the run socket. glibc's clone() wrapper takes no lock,
 * unlike its fork(). */
pid_t child_start_program(struct prog_args *a)
{
	static char prog_stack[64 * 1024] __attribute__((aligned(64)));
	return clone(program_entry, prog_stack + sizeof(prog_stack),
	             CLONE_VM | (a->run_fd >= 0 ? 0 : CLONE_VFORK) | SIGCHLD, a);
}
