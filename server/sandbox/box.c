/* box.c: starting a box (see box.h). The clone and the id maps are the
 * same for a run and for a worker; what the box then runs, and how the
 * server talks to it, is theirs. */
#include "sandbox/box.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/util.h"
#include "sandbox/sandbox.h"

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

struct clone_args_k {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
	    set_tid_size, cgroup;
};

static int write_proc(pid_t pid, const char *file, const char *text)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, text, strlen(text));
	if (n < 0)
		return -errno;
	return n == (ssize_t)strlen(text) ? 0 : -EIO;
}

/* The box's single uid and gid: the server's own, or nobody when the
 * server is root (the code is never root on the host). */
static int write_id_maps(const struct sandbox *s, pid_t pid)
{
	uid_t out_uid = s->host.euid == 0 ? SBX_ROOT_MAPS_TO : s->host.euid;
	gid_t out_gid = s->host.euid == 0 ? SBX_ROOT_MAPS_TO : s->host.egid;
	char map[64];
	int r;
	/* Unprivileged writers must deny setgroups before writing gid_map.
	 * As root the child first drops its groups itself, then has no
	 * capability left to call setgroups again. */
	if (s->host.euid != 0 && (r = write_proc(pid, "setgroups", "deny")) < 0)
		return r;
	snprintf(map, sizeof(map), "%d %u 1\n", SBX_INNER_ID, (unsigned)out_uid);
	if ((r = write_proc(pid, "uid_map", map)) < 0)
		return r;
	snprintf(map, sizeof(map), "%d %u 1\n", SBX_INNER_ID, (unsigned)out_gid);
	return write_proc(pid, "gid_map", map);
}

void sbx_box_kill(int pidfd)
{
	if (pidfd < 0)
		return;
	/* pid 1's death kills the whole pid namespace; waiting for it means
	 * every process of the box is gone when we return. ECHILD: someone
	 * else reaped it, and it is gone all the same. */
	syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	siginfo_t si;
	while (waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED) < 0 && errno == EINTR)
		;
	close(pidfd);
}

int sbx_box_clone(const struct sandbox *s, struct sbx_plan *plan, int cgroup_fd,
                  struct sbx_box *ret, int *ret_step)
{
	int status[2] = {-1, -1}, sync[2] = {-1, -1};
	int r = 0;
	*ret_step = SBX_STEP_NONE;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, status) < 0 ||
	    pipe2(sync, O_CLOEXEC) < 0) {
		r = neg_errno();
		goto out;
	}
	/* See write_id_maps() for the choice of ids. */
	plan->self_map = s->host.euid != 0;
	snprintf(plan->uid_map, sizeof(plan->uid_map), "%d %u 1\n", SBX_INNER_ID,
	         (unsigned)s->host.euid);
	snprintf(plan->gid_map, sizeof(plan->gid_map), "%d %u 1\n", SBX_INNER_ID,
	         (unsigned)s->host.egid);
	plan->status_fd = status[1];
	plan->sync_fd = sync[0];
	int pidfd = -1;
	struct clone_args_k ca = {
	    .flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
	             CLONE_NEWUTS | CLONE_NEWCGROUP | CLONE_PIDFD,
	    .pidfd = (uint64_t)(uintptr_t)&pidfd,
	    .exit_signal = SIGCHLD,
	};
	/* Born in its cgroup: no moment where the box runs outside it. */
	if (cgroup_fd >= 0) {
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)cgroup_fd;
	}
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0)
		sbx_child_main(plan); /* never returns */
	if (pid < 0) {
		r = neg_errno();
		goto out;
	}
	close(steal_fd(&status[1]));
	close(steal_fd(&sync[0]));
	if (!plan->self_map) {
		r = write_id_maps(s, (pid_t)pid);
		if (r >= 0 && write(sync[1], "x", 1) != 1)
			r = neg_errno();
		if (r < 0) {
			*ret_step = SBX_STEP_IDS;
			sbx_box_kill(pidfd);
			goto out;
		}
	}
	*ret =
	    (struct sbx_box){.pid = (pid_t)pid, .pidfd = pidfd, .status_fd = steal_fd(&status[0])};
out:
	for (int i = 0; i < 2; i++) {
		if (status[i] >= 0)
			close(status[i]);
		if (sync[i] >= 0)
			close(sync[i]);
	}
	plan->status_fd = plan->sync_fd = -1;
	return r;
}

const char *sbx_failure_hint(int step, int err)
{
	if (step == SBX_STEP_NONE &&
	    (err == EPERM || err == EACCES || err == ENOSPC || err == EINVAL))
		return " User namespaces are not available to this user: check that "
		       "kernel.unprivileged_userns_clone is 1 (where it exists) and "
		       "user.max_user_namespaces is above 0 (`sysctl user.max_user_namespaces`). "
		       "See docs/sandbox.md.";
	if ((step == SBX_STEP_IDS || step == SBX_STEP_PRIVATE || step == SBX_STEP_ROOT_TMPFS ||
	     step == SBX_STEP_BIND || step == SBX_STEP_SYNC) &&
	    (err == EPERM || err == EACCES))
		return " The kernel created the user namespace but gave it no privilege: on Ubuntu "
		       "23.10 and later this is kernel.apparmor_restrict_unprivileged_userns=1; "
		       "install the AppArmor profile in server/sandbox/apparmor/ (see "
		       "docs/sandbox.md) or set that sysctl to 0.";
	if (step == SBX_STEP_PROC && (err == EPERM || err == EACCES))
		return " The kernel refused a fresh /proc: this happens inside containers that "
		       "mask parts of /proc. Run kiln on the host or in a container started with "
		       "an unmasked /proc.";
	if (err == ENOSYS)
		return " This kernel is too old for kiln's sandbox (it needs Linux 5.12 or newer).";
	if (step == SBX_STEP_EXEC && err == ENOENT)
		return " The interpreter is missing inside the box.";
	return "";
}
