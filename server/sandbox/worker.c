/* worker.c: a long-lived program in a box (see worker.h). The plan and
 * the clone are a run's; what differs is the plumbing: one socket for
 * stdin and stdout, no wall clock, and a synchronous start that waits
 * for the program's execve, so the owner learns at once why a box could
 * not be built. */
#include "sandbox/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/fdwait.h"
#include "core/loop.h"
#include "core/util.h"
#include "sandbox/box.h"
#include "sandbox/limits.h"
#include "sandbox/plan.h"
#include "sandbox/sandbox.h"

/* A worker writes nothing to disk: its /work and /tmp stay small. */
#define WORKER_TMPFS_BYTES (1u << 20)

struct sbx_worker {
	pid_t pid;
	int pidfd;
	int fd;
};

/* Wait for READY, then EXEC, on the status socket. A FAIL names the step;
 * EOF without one means pid 1 died (or was killed) while building. */
static int wait_started(int status_fd, uint64_t deadline, int *ret_step)
{
	bool ready = false;
	for (;;) {
		/* A hang-up still goes to recvmsg: its EOF says pid 1 died. */
		int r = fd_wait(status_fd, POLLIN, deadline);
		if (r < 0 && r != -EPIPE)
			return r;
		struct sbx_msg m;
		struct iovec iov = {.iov_base = &m, .iov_len = sizeof(m)};
		int passed;
		ssize_t k = sbx_status_recv(status_fd, &iov, 1, MSG_DONTWAIT, &passed);
		if (k < 0 && (errno == EAGAIN || errno == EMSGSIZE))
			continue;
		/* READY carries the /work fd: a worker has no use for it. */
		if (passed >= 0)
			close(passed);
		if (k <= 0)
			return -ECHILD;
		if (k != sizeof(m))
			continue;
		if (m.type == SBX_MSG_FAIL) {
			*ret_step = m.step;
			return -(m.err ? m.err : EIO);
		}
		if (m.type == SBX_MSG_READY)
			ready = true;
		else if (m.type == SBX_MSG_EXEC && ready)
			return 0;
		else if (m.type == SBX_MSG_EXIT)
			return -ECHILD;
	}
}

int sbx_worker_spawn(struct sandbox *s, const struct sbx_worker_spec *spec, struct sbx_worker **ret,
                     char *err, size_t errsz)
{
	struct sbx_limits lim;
	err[0] = '\0';
	int r = sbx_limits_resolve(NULL, NULL, &lim, err, errsz);
	if (r < 0)
		return r;
	if ((r = sandbox_filter_ready(s)) < 0) {
		snprintf(err, errsz, "the sandbox's seccomp filter could not be compiled: %s",
		         strerror(-r));
		return r;
	}
	lim.tmpfs_bytes = WORKER_TMPFS_BYTES;
	struct sbx_plan_owned *po = NULL;
	r = sbx_plan_build_argv(s, spec->argv, spec->file, spec->data, &lim, &po, err, errsz);
	if (r < 0) {
		if (!err[0])
			snprintf(err, errsz, "cannot prepare the sandbox: %s", strerror(-r));
		return r;
	}
	struct sbx_worker *w = calloc(1, sizeof(*w));
	int sv[2] = {-1, -1};
	_cleanup_close_ int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (!w || devnull < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		r = w ? neg_errno() : -ENOMEM;
		snprintf(err, errsz, "cannot prepare the sandbox: %s", strerror(-r));
		sbx_plan_free(po);
		free(w);
		return r;
	}
	po->plan.in_fd = sv[1];
	po->plan.report_exec = true;
	po->plan.out_fd = sv[1];
	po->plan.err_fd = devnull;
	struct sbx_box box;
	int step = SBX_STEP_NONE;
	uint64_t deadline = loop_now_ms() + (uint64_t)spec->start_ms;
	r = sbx_box_clone(s, &po->plan, -1, &box, &step);
	/* The child has its own copy of the plan and of these fds. */
	sbx_plan_free(po);
	close(sv[1]);
	if (r >= 0) {
		r = wait_started(box.status_fd, deadline, &step);
		close(box.status_fd);
		if (r < 0)
			sbx_box_kill(box.pidfd);
	}
	if (r < 0) {
		close(sv[0]);
		free(w);
		if (r == -ETIMEDOUT)
			snprintf(err, errsz, "the sandbox did not start within %d ms",
			         spec->start_ms);
		else if (r == -ECHILD)
			snprintf(err, errsz, "the sandbox ended while it was being built");
		else
			snprintf(err, errsz, "the sandbox could not be built (%s failed: %s).%s",
			         sbx_step_name(step), strerror(-r), sbx_failure_hint(step, -r));
		return r;
	}
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	w->pid = box.pid;
	w->pidfd = box.pidfd;
	w->fd = sv[0];
	*ret = w;
	return 0;
}

void sbx_worker_free(struct sbx_worker *w)
{
	if (!w)
		return;
	close(w->fd);
	sbx_box_kill(w->pidfd);
	free(w);
}

int sbx_worker_fd(const struct sbx_worker *w)
{
	return w->fd;
}

pid_t sbx_worker_pid(const struct sbx_worker *w)
{
	return w->pid;
}
