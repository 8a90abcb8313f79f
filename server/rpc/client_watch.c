/* client_watch.c: the client process's end, seen from the loop (see
 * client_watch.h). */
#include "rpc/client_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/log.h"
#include "core/loop.h"

#define POLL_MS 500

struct rpc_client_watch {
	struct loop *loop;
	int pid;
	int pidfd; /* -1: the periodic check */
	bool reported;
	struct loop_timer *timer;
	void (*gone)(void *data);
	void *data;
};

static void report(struct rpc_client_watch *w)
{
	if (w->reported)
		return;
	w->reported = true;
	if (w->pidfd >= 0) {
		loop_unwatch(w->loop, w->pidfd);
		close(w->pidfd);
		w->pidfd = -1;
	}
	loop_timer_stop(w->loop, w->timer);
	w->timer = NULL;
	log_info("client process %d is gone", w->pid);
	w->gone(w->data);
}

static void on_pidfd(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)loop;
	(void)fd;
	(void)events;
	report(data);
}

/* kill(pid, 0) succeeds for a zombie, which an editor that died and was
 * not yet reaped is: read its state too. EPERM means it exists. */
static bool alive(int pid)
{
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return false;
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return true; /* no /proc: trust kill() */
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "pid (comm) S ...": comm may hold ')' itself, so take the last. */
	char *p = NULL;
	for (char *q = buf; (q = strchr(q, ')')); q++)
		p = q;
	return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

static void on_timer(struct loop *loop, void *data)
{
	struct rpc_client_watch *w = data;
	w->timer = NULL;
	if (!alive(w->pid)) {
		report(w);
		return;
	}
	w->timer = loop_timer_start(loop, POLL_MS, on_timer, w);
}

int rpc_client_watch_new(struct loop *loop, int pid, unsigned flags, void (*gone)(void *data),
                         void *data, struct rpc_client_watch **ret)
{
	if (pid <= 0)
		return -EINVAL;
	struct rpc_client_watch *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (struct rpc_client_watch){
	    .loop = loop, .pid = pid, .pidfd = -1, .gone = gone, .data = data};
	if (!(flags & RPC_CLIENT_WATCH_POLL)) {
		int fd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (fd >= 0) {
			/* pidfd_open does not take O_CLOEXEC; children must
			 * not inherit it. */
			fcntl(fd, F_SETFD, FD_CLOEXEC);
			if (loop_watch(loop, fd, LOOP_READ, on_pidfd, w) == 0)
				w->pidfd = fd;
			else
				close(fd);
		} else if (errno != ESRCH) {
			log_info("pidfd_open(%d): %s; checking the client process every %d ms", pid,
			         strerror(errno), POLL_MS);
		}
	}
	/* With a pidfd a gone process makes it readable at once; without,
	 * the first check runs on the next iteration (a pid already gone is
	 * reported then, never from here). */
	if (w->pidfd < 0) {
		w->timer = loop_timer_start(loop, 0, on_timer, w);
		if (!w->timer) {
			free(w);
			return -ENOMEM;
		}
	}
	*ret = w;
	return 0;
}

void rpc_client_watch_free(struct rpc_client_watch *w)
{
	if (!w)
		return;
	if (w->pidfd >= 0) {
		loop_unwatch(w->loop, w->pidfd);
		close(w->pidfd);
	}
	loop_timer_stop(w->loop, w->timer);
	free(w);
}

int rpc_client_watch_pid(const struct rpc_client_watch *w)
{
	return w->pid;
}

int rpc_client_watch_uses_pidfd(const struct rpc_client_watch *w)
{
	return w->pidfd >= 0;
}
