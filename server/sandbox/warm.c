/* warm.c: warm boxes. Building a box (namespaces, mounts, pivot) is most
 * of what a run costs before its program starts, and none of it depends
 * on the program: so the server keeps one box built ahead of the next
 * run, waiting for GO like any other (docs/sandbox.md). A warm box is a
 * struct run that is "parked": no request, no answer; a run that fits
 * adopts its box, and each box still serves one run only. */
#include "sandbox/run_private.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "sandbox/cgroup.h"
#include "sandbox/sandbox.h"

/* How long the server is idle before it builds the next warm box. */
#define WARM_DELAY_MS 10

/* A box built ahead of its run differs from a fresh one only in when it
 * was built: it still waits for its program and code, and serves one
 * run. It fits any run whose plan has the same layout (the built-in
 * languages share one; a tmpfs size or a config's binds make another);
 * anything else gets a box built for it (and warm_adopt drops the warm
 * one, which would not fit the next run either). */
static bool warm_fits(const struct run *warm, const char *layout)
{
	return !warm->failed && !warm->reaped && warm->fds[OUT] >= 0 && warm->fds[ERR] >= 0 &&
	       warm->layout && strcmp(warm->layout, layout) == 0;
}

/* Move warm's box (processes, fds, what it reported so far) to run. */
static void adopt_box(struct run *run, struct run *warm)
{
	struct loop *loop = run->loop;
	int *fds[] = {&warm->pidfd, &warm->status_fd, &warm->fds[OUT], &warm->fds[ERR]};
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		loop_unwatch(loop, *fds[i]);
	run->pid = warm->pid;
	run->pidfd = steal_fd(&warm->pidfd);
	run->status_fd = steal_fd(&warm->status_fd);
	run->fds[OUT] = steal_fd(&warm->fds[OUT]);
	run->fds[ERR] = steal_fd(&warm->fds[ERR]);
	run->work_fd = steal_fd(&warm->work_fd);
	run->from_warm = true;
	run->cg = steal_pointer(&warm->cg);
	run->layout = steal_pointer(&warm->layout);
	run->sbx->warm = NULL;
	run_free(warm);
}

/* Drop the warm box without waiting: pid 1 sees its socket close and
 * exits; the sandbox reaps it. */
static void discard_warm(struct sandbox *s)
{
	struct run *warm = s->warm;
	if (!warm)
		return;
	log_debug("sandbox: dropping the warm box for %s", warm->language);
	if (warm->pidfd >= 0 && !warm->reaped) {
		loop_unwatch(s->loop, warm->pidfd);
		sandbox_reap_later(s, steal_fd(&warm->pidfd), steal_pointer(&warm->cg));
	}
	run_free(warm);
}

static void on_warm_timer(struct loop *loop, void *data)
{
	(void)loop;
	struct sandbox *s = data;
	s->warm_timer = NULL;
	if (s->warm || !s->warm_language[0])
		return;
	struct run *warm = run_new(s);
	if (!warm)
		return;
	/* The last run's limits: a box's tmpfs size is fixed when it is built. */
	warm->limits = s->have_warm_limits ? s->warm_limits : s->config.limits;
	struct sbx_plan_owned *po = NULL;
	int r = run_prepare_box(warm, s->warm_language, &po);
	if (r >= 0)
		r = run_start_box(warm, po);
	sbx_plan_free(po);
	if (r < 0) {
		/* The run that wants it will build its own and say why. */
		log_debug("sandbox: no warm box for %s: %s", s->warm_language, warm->errmsg);
		run_free(warm);
		return;
	}
	warm->parked = true;
	snprintf(warm->id, sizeof(warm->id), "warm");
	s->warm = warm;
	log_debug("sandbox: warm box for %s, pid %d", s->warm_language, (int)warm->pid);
}

void run_warm(struct sandbox *s, const char *language)
{
	if (!s || !s->loop || !s->config.warm_boxes || !language)
		return;
	/* One warm box; it serves any language of its layout. */
	if (s->warm || s->warm_timer)
		return;
	snprintf(s->warm_language, sizeof(s->warm_language), "%s", language);
	/* A little later, from the loop: what is being answered now goes out
	 * first, and a request that follows at once is not kept waiting
	 * behind the clone (it builds its own box, which is as fast). */
	s->warm_timer = loop_timer_start(s->loop, WARM_DELAY_MS, on_warm_timer, s);
}

bool warm_adopt(struct run *run, const char *layout)
{
	struct sandbox *s = run->sbx;
	if (s->warm && warm_fits(s->warm, layout)) {
		adopt_box(run, s->warm);
		return true;
	}
	discard_warm(s);
	return false;
}

void warm_hold(struct sandbox *s)
{
	if (s->warm_timer) {
		loop_timer_stop(s->loop, s->warm_timer);
		s->warm_timer = NULL;
	}
}
