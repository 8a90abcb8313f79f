/* reap.c: what outlives a box on the server's side, taken off the loop
 * (see reap.h): pid 1s reaped when they are gone, a workspace's last fd
 * closed and a cgroup removed on job threads. */
#include "sandbox/host/reap.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/loop.h"
#include "sandbox/host/base.h"
#include "sandbox/host/cgroup.h"
#include "sandbox/host/job.h"

void sbx_pidfd_kill(int pidfd)
{
	if (pidfd < 0)
		return;
	/* pid 1's death kills the whole pid namespace; waiting for it means
	 * every process of the box is gone when we return. ECHILD: someone
	 * else reaped it, and it is gone all the same. */
	syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	siginfo_t si;
	int r;
	while ((r = waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED)) < 0 && errno == EINTR)
		;
	if (r < 0 && errno == ECHILD) {
		struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
		while (poll(&pfd, 1, 5000) < 0 && errno == EINTR)
			;
	}
	close(pidfd);
}

bool sbx_pidfd_reap(int pidfd)
{
	siginfo_t si = {0};
	int r = waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED | WNOHANG);
	return (r < 0 && errno == ECHILD) || (r == 0 && si.si_pid != 0);
}

struct sbx_dying {
	struct sbx_base *b;
	struct sbx_dying *next;
	int pidfd;
	struct sbx_cgroup *cg;
};

static void forget(struct sbx_dying *d)
{
	for (struct sbx_dying **pp = &d->b->dying; *pp; pp = &(*pp)->next)
		if (*pp == d) {
			*pp = d->next;
			break;
		}
	free(d);
}

static void on_dead(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)events;
	if (!sbx_pidfd_reap(fd))
		return;
	loop_unwatch(loop, fd);
	close(fd);
	struct sbx_dying *d = data;
	sbx_cgroup_free_later(d->b, d->cg);
	forget(d);
}

static void cgroup_free_work(void *data, const atomic_bool *cancel)
{
	(void)cancel; /* it takes a second at most */
	sbx_cgroup_free(data);
}

void sbx_cgroup_free_later(struct sbx_base *b, struct sbx_cgroup *cg)
{
	if (cg && (!b || sbx_job_start(b, cgroup_free_work, NULL, NULL, cg, NULL) < 0))
		sbx_cgroup_free(cg);
}

static void close_work(void *data, const atomic_bool *cancel)
{
	(void)cancel;
	close((int)(intptr_t)data);
}

void sbx_close_later(struct sbx_base *b, int fd)
{
	if (fd >= 0 &&
	    (!b || sbx_job_start(b, close_work, NULL, NULL, (void *)(intptr_t)fd, NULL) < 0))
		close(fd);
}

void sbx_reap_later(struct sbx_base *b, int pidfd, struct sbx_cgroup *cg)
{
	struct sbx_dying *d = calloc(1, sizeof(*d));
	if (!d || !b->loop || loop_watch(b->loop, pidfd, LOOP_READ, on_dead, d) < 0) {
		/* No way to wait in the loop: wait here (it is exiting). */
		free(d);
		sbx_pidfd_kill(pidfd);
		sbx_cgroup_free(cg);
		return;
	}
	*d = (struct sbx_dying){.b = b, .next = b->dying, .pidfd = pidfd, .cg = cg};
	b->dying = d;
}

void sbx_reap_stop(struct sbx_base *b)
{
	while (b->dying) {
		struct sbx_dying *d = b->dying;
		loop_unwatch(b->loop, d->pidfd);
		sbx_pidfd_kill(d->pidfd);
		sbx_cgroup_free(d->cg);
		forget(d);
	}
}
