/* run.c: the run itself (see run.h): made, listed in the sandbox, its
 * id, queued while every slot is taken (sandbox.maxConcurrentRuns) and
 * freed. The bottom of run/: how a run starts is run_start.c, its
 * output run_text.c and run_output.c, its end run_exit.c, a session's
 * run run_session.c; a queued run's start comes back to run_start.c
 * through the continuation it was queued with (run->on_turn). */
#include "sandbox/run/run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "sandbox/box/box.h"
#include "sandbox/host/cgroup.h"
#include "sandbox/box/child.h"
#include "sandbox/workspace/hide.h"
#include "sandbox/host/job.h"
#include "sandbox/host/limits.h"
#include "sandbox/box/plan.h"
#include "sandbox/run/run_private.h"
#include "sandbox/state.h"
#include "sandbox/pools/zygote.h"
#include "sandbox/host/base.h"
#include "sandbox/pools/warm.h"

const char *run_id(const struct run *run)
{
	return run->id;
}

const char *run_stream_name(enum run_stream s)
{
	return s == RUN_STDERR ? "stderr" : "stdout";
}

struct run *run_new(struct sandbox *s)
{
	struct run *run = calloc(1, sizeof(*run));
	if (!run)
		return NULL;
	run->sbx = s;
	run->loop = s->base.loop;
	sbx_box_init(&run->box);
	run->pending_stream = -1;
	clock_gettime(CLOCK_REALTIME, &run->start_real);
	/* Room for a full read even if every byte became U+FFFD. */
	buf_init(&run->pending, 8 * RUN_COALESCE_BYTES);
	run->next = s->runs;
	s->runs = run;
	return run;
}

void run_report_status(struct run *run, enum run_state state, size_t position)
{
	if (!run->sink->status)
		return;
	struct run_status st = {.run_id = run->id,
	                        .state = state,
	                        .position = position,
	                        .running = run->sbx->active,
	                        .max_running = run->sbx->config.max_concurrent_runs};
	run->sink->status(run->sink_data, run, &st);
}

/* Start the runs waiting for a slot, oldest first, while there are
 * slots: on a turn of the loop of its own, never inside run_free's
 * caller. Each is handed to the continuation it was queued with. */
static void on_queue_turn(struct loop *loop, void *data)
{
	(void)loop;
	struct sandbox *s = data;
	s->queue_timer = NULL;
	while (s->queue && s->active < s->config.max_concurrent_runs) {
		struct run *run = s->queue;
		s->queue = run->qnext;
		if (!s->queue)
			s->queue_tail = NULL;
		run->qnext = NULL;
		run->queued = false;
		s->nqueued--;
		run_report_status(run, RUN_STARTED, 0);
		run->on_turn(run);
	}
}

/* A slot was freed: the queue's turn comes on the next loop turn. */
static void queue_kick(struct sandbox *s)
{
	if (s->queue && !s->queue_timer && s->base.loop)
		s->queue_timer = loop_timer_start(s->base.loop, 0, on_queue_turn, s);
}

int run_enqueue(struct run *run, struct sbx_plan_owned **po, char **layout, const char *code,
                void (*on_turn)(struct run *run))
{
	struct sandbox *s = run->sbx;
	/* Each waiting run holds its code (up to 1 MiB) and its plan: the
	 * queue is bounded too. */
	if (s->nqueued >= s->config.max_queued_runs) {
		snprintf(
		    run->errmsg, sizeof(run->errmsg),
		    "kiln will not run this code now: %lu runs already wait for a slot "
		    "(sandbox.maxConcurrentRuns %llu, sandbox.maxQueuedRuns %llu); send it again "
		    "when some have ended",
		    s->nqueued, (unsigned long long)s->config.max_concurrent_runs,
		    (unsigned long long)s->config.max_queued_runs);
		return -EAGAIN;
	}
	if (!(run->qcode = strdup(code)))
		return -ENOMEM;
	s->nqueued++;
	run->qplan = steal_pointer(po);
	run->qlayout = steal_pointer(layout);
	run->queued = true;
	run->on_turn = on_turn;
	if (s->queue_tail)
		s->queue_tail->qnext = run;
	else
		s->queue = run;
	s->queue_tail = run;
	size_t position = 0;
	for (struct run *q = s->queue; q; q = q->qnext)
		position++;
	log_debug("run %s: waits for a slot (%zu queued, %lu of %llu running)", run->id, position,
	          s->active, (unsigned long long)s->config.max_concurrent_runs);
	run_report_status(run, RUN_QUEUED, position);
	if (s->active < s->config.max_concurrent_runs)
		queue_kick(s);
	return 0;
}

static void dequeue(struct run *run)
{
	struct sandbox *s = run->sbx;
	struct run *prev = NULL;
	for (struct run *q = s->queue; q; prev = q, q = q->qnext)
		if (q == run) {
			if (prev)
				prev->qnext = run->qnext;
			else
				s->queue = run->qnext;
			if (s->queue_tail == run)
				s->queue_tail = prev;
			s->nqueued--;
			break;
		}
	run->queued = false;
	sbx_plan_free(run->qplan);
	run->qplan = NULL;
	free(run->qlayout);
	free(run->qcode);
	run->qlayout = run->qcode = NULL;
}

/* --- end ------------------------------------------------------------------ */

void run_free(struct run *run)
{
	struct loop *loop = run->loop;
	if (run->owner)
		run->owner_ops->forget(run->owner, run);
	for (struct run **pp = &run->sbx->runs; *pp; pp = &(*pp)->next)
		if (*pp == run) {
			*pp = run->next;
			break;
		}
	if (run->queued)
		dequeue(run);
	/* Launched, and waiting for the zygote's spare (which stays the
	 * zygote's) or for the list of what to hide. */
	sbx_zygote_wait_cancel(run->sbx, run->zwait);
	sbx_hide_cancel(run->sbx, run->hide_req);
	sbx_plan_free(run->qplan);
	free(run->qlayout);
	free(run->qcode);
	if (run->holds_slot) {
		run->sbx->active--;
		queue_kick(run->sbx);
	}
	/* A collection under way stops at its next chunk; its thread cleans
	 * up after itself. */
	sbx_job_cancel(run->job);
	/* A held run's list of what to hide, never sent. */
	if (run->list_ready && run->held_list >= 0)
		close(run->held_list);
	struct loop_timer **timers[] = {&run->wall_timer, &run->grace_timer, &run->flush_timer,
	                                &run->start_timer};
	for (size_t i = 0; i < ARRAY_SIZE(timers); i++)
		if (*timers[i]) {
			loop_timer_stop(loop, *timers[i]);
			*timers[i] = NULL;
		}
	int fds[] = {run->box.pidfd, run->box.status_fd, run->box.fds[OUT], run->box.fds[ERR]};
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		loop_unwatch(loop, fds[i]);
	/* Kills what is left of the box and waits for it. */
	sbx_box_release(&run->sbx->base, &run->box);
	buf_release(&run->pending);
	sbx_tail_free(&run->tail[OUT]);
	sbx_tail_free(&run->tail[ERR]);
	run_give_snap(run->owner_ops, run->sbx, run->sess_id, run->snap_gen, &run->snap_lent,
	              steal_pointer(&run->snap));
	free(run->workspace);
	free(run->python);
	for (size_t i = 0; run->only && run->only[i]; i++)
		free(run->only[i]);
	free(run->only);
	free(run);
}

/* A session's run: hand the session's workspace picture back (see
 * run_private.h), the new one or, when the layer was not read, the old. */
void run_give_snap(const struct run_owner_ops *ops, struct sandbox *s, const char *sess_id,
                   unsigned gen, bool *lent, struct sbx_ws_snap *snap)
{
	if (!*lent || !ops) {
		sbx_ws_snap_free(snap);
		return;
	}
	*lent = false;
	ops->take_snap(s, sess_id, gen, snap);
}

void run_cancel(struct run *run)
{
	if (!run)
		return;
	log_debug("run %s: cancelled", run->id);
	run_free(run);
}
