/* worker.c: a long-lived program in a box (see worker.h). The plan and
 * the box are a run's, built through the same box.h; what differs is the
 * plumbing (SBX_BOX_SOCKET: one socket for stdin and stdout), no wall
 * clock, and a synchronous start that waits for the program's execve, so
 * the owner learns at once why a box could not be built. */
#include "sandbox/box/worker.h"

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
#include "sandbox/box/box.h"
#include "sandbox/host/limits.h"
#include "sandbox/box/plan.h"
#include "sandbox/host/host.h"
#include "sandbox/host/base.h"

/* A worker writes nothing to disk: its /work and /tmp stay small. */
#define WORKER_TMPFS_BYTES (1u << 20)

/* A worker owns one box, built like a run's through box.h. */
struct sbx_worker {
	struct sbx_base *s;
	struct sbx_box box; /* box.fds[0]: the program's stdin and stdout */
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

int sbx_worker_spawn(struct sbx_base *s, const struct sbx_worker_spec *spec,
                     struct sbx_worker **ret, char *err, size_t errsz)
{
	struct sbx_limits lim;
	err[0] = '\0';
	int r = 0;
	if (spec->limits)
		lim = *spec->limits;
	else if ((r = sbx_limits_resolve(NULL, NULL, &lim, err, errsz)) < 0)
		return r;
	/* Without a sandbox instance (the validator's), the process's host
	 * facts are all a worker's box needs. */
	struct sbx_base bare = {.host = sbx_host_get()};
	struct sbx_base *bs = s ? s : &bare;
	if ((r = sbx_host_filter_ready()) < 0) {
		snprintf(err, errsz, "the sandbox's seccomp filter could not be compiled: %s",
		         strerror(-r));
		return r;
	}
	lim.tmpfs_bytes = WORKER_TMPFS_BYTES;
	struct sbx_plan_owned *po = NULL;
	r = sbx_plan_build_argv(bs->host, spec->argv, spec->file, spec->data, &lim, &po, err,
	                        errsz);
	if (r < 0) {
		if (!err[0])
			snprintf(err, errsz, "cannot prepare the sandbox: %s", strerror(-r));
		return r;
	}
	struct sbx_worker *w = calloc(1, sizeof(*w));
	if (!w) {
		sbx_plan_free(po);
		snprintf(err, errsz, "cannot prepare the sandbox: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	w->s = s;
	sbx_box_init(&w->box);
	int step = -1;
	uint64_t deadline = loop_now_ms() + (uint64_t)spec->start_ms;
	r = sbx_box_build(bs, po, SBX_BOX_SOCKET, &w->box, &step, err, errsz);
	sbx_plan_free(po);
	if (r >= 0) {
		r = wait_started(w->box.status_fd, deadline, &step);
		/* The worker talks over its socket only from here on. */
		close(steal_fd(&w->box.status_fd));
	}
	if (r < 0) {
		sbx_box_release(s, &w->box);
		free(w);
		/* Before the clone, err already says what failed. */
		if (step < 0 && err[0])
			return r;
		if (r == -ETIMEDOUT)
			snprintf(err, errsz, "the sandbox did not start within %d ms",
			         spec->start_ms);
		else if (r == -ECHILD)
			snprintf(err, errsz, "the sandbox ended while it was being built");
		else {
			char hint[640];
			sbx_failure_hint(step, -r, hint, sizeof(hint));
			snprintf(err, errsz, "the sandbox could not be built (%s failed: %s).%s",
			         sbx_step_name(step), strerror(-r), hint);
		}
		return r;
	}
	*ret = w;
	return 0;
}

void sbx_worker_free(struct sbx_worker *w)
{
	if (!w)
		return;
	/* The socket first: the program sees EOF; then pid 1 is killed and
	 * waited for. */
	close(steal_fd(&w->box.fds[0]));
	sbx_box_release(w->s, &w->box);
	free(w);
}

int sbx_worker_fd(const struct sbx_worker *w)
{
	return w->box.fds[0];
}

pid_t sbx_worker_pid(const struct sbx_worker *w)
{
	return w->box.pid;
}

size_t sbx_worker_read(const struct sbx_worker *w, char *buf, size_t n, uint64_t deadline_ms)
{
	size_t got = 0;
	int fd = sbx_worker_fd(w);
	while (got < n - 1 && fd_wait(fd, POLLIN, deadline_ms) >= 0) {
		ssize_t k = recv(fd, buf + got, n - 1 - got, MSG_DONTWAIT);
		if (k < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	buf[got] = '\0';
	return got;
}
