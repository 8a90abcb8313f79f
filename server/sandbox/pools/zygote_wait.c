/* zygote_wait.c: a run that comes while the zygote's spare is on its way
 * (its pid 1 has not sent its pidfd yet) waits for it off the loop's
 * critical path: parked here until the pidfd comes (then it takes the
 * spare), the spare fails or the deadline passes (then it takes the
 * normal path), or it is cancelled. See zygote.h. */
#include "sandbox/pools/zygote_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "sandbox/sandbox.h"

/* How long a run waits for the zygote's child to report; past it the run
 * takes the normal path and the zygote is retired. */
#define ZYGOTE_ANSWER_MS 2000

/* A run waiting for the spare's pidfd (zygote.h). Linked from the
 * zygote (z->wait) until the pidfd comes, the spare fails or the
 * deadline passes; then its failure, if any, is told from a timer of
 * its own (never from within another run's start that retired the
 * zygote). Owned by the caller until fn is called or it cancels. */
struct sbx_zygote_wait {
	struct sandbox *s;
	struct sbx_box *b;
	sbx_zygote_wait_fn fn;
	void *data;
	struct zyg_req q;
	struct loop_timer *timer; /* the deadline; then the failure's turn */
	int err;
	uint64_t since_ms;
};

/* Tell the run that waited how it went, and forget the wait. */
static void wait_done(struct sbx_zygote_wait *w, int r)
{
	if (w->timer)
		loop_timer_stop(w->s->loop, w->timer);
	log_debug("sandbox: a run waited %llu ms for the zygote's box (%s)",
	          (unsigned long long)(loop_now_ms() - w->since_ms),
	          r < 0 ? strerror(-r) : "taken");
	sbx_zygote_wait_fn fn = w->fn;
	void *data = w->data;
	zyg_req_release(&w->q);
	free(w);
	fn(data, r);
}

static void on_wait_failed(struct loop *loop, void *data)
{
	(void)loop;
	struct sbx_zygote_wait *w = data;
	w->timer = NULL;
	wait_done(w, w->err);
}

/* The spare a run waits for is gone (zyg_retire, zyg_drop_spare): the run hears
 * of it on a turn of its own (this may be another run's start) and takes
 * the normal path. */
void zyg_wait_fail(struct sandbox *s, struct sbx_zygote *z, int err)
{
	struct sbx_zygote_wait *w = steal_pointer(&z->wait);
	if (!w)
		return;
	if (w->timer)
		loop_timer_stop(s->loop, w->timer);
	w->err = err;
	if (!(w->timer = loop_timer_start(s->loop, 0, on_wait_failed, w)))
		wait_done(w, err);
}

/* The spare's pidfd did not come in time: the zygote is retired, and the
 * run takes the normal path. */
static void on_wait_deadline(struct loop *loop, void *data)
{
	(void)loop;
	struct sbx_zygote_wait *w = data;
	struct sandbox *s = w->s;
	w->timer = NULL;
	if (s->zygote && s->zygote->wait == w)
		s->zygote->wait = NULL;
	log_warn("sandbox: the Python zygote's box did not report in %d ms; using a box of its own",
	         ZYGOTE_ANSWER_MS);
	zyg_retire(s, true);
	wait_done(w, -ETIMEDOUT);
}

/* The spare's pidfd came: the run that waits takes it. */
void zyg_hand_over(struct sandbox *s, struct sbx_zygote *z)
{
	struct sbx_zygote_wait *w = steal_pointer(&z->wait);
	int r = zyg_give_spare(s, z, &w->q, w->b);
	if (r < 0) {
		log_warn(
		    "sandbox: the Python zygote could not start a run (%s); using a box of its "
		    "own",
		    strerror(-r));
		zyg_retire(s, true);
	}
	wait_done(w, r);
}

void sbx_zygote_wait_cancel(struct sandbox *s, struct sbx_zygote_wait *w)
{
	if (!w)
		return;
	/* The spare stays, for the next run. */
	if (s->zygote && s->zygote->wait == w)
		s->zygote->wait = NULL;
	if (w->timer)
		loop_timer_stop(s->loop, w->timer);
	zyg_req_release(&w->q);
	free(w);
}

/* The spare's pid 1 has not sent its pidfd yet: the zygote is cloning
 * it (a few milliseconds; a run came right after the last one). The run
 * waits for it off the loop's critical path: its pidfd comes to
 * on_spare_status, which hands the spare over; the rest (its setup,
 * READY) the run hears on the loop as from any box. */
int zyg_wait_spare(struct sandbox *s, struct sbx_zygote *z, struct zyg_req *q, struct sbx_box *b,
                   sbx_zygote_wait_fn fn, void *data, struct sbx_zygote_wait **ret_wait)
{
	struct sbx_zygote_wait *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (struct sbx_zygote_wait){
	    .s = s, .b = b, .fn = fn, .data = data, .q = *q, .since_ms = loop_now_ms()};
	if (!(w->timer = loop_timer_start(s->loop, ZYGOTE_ANSWER_MS, on_wait_deadline, w))) {
		free(w);
		return -ENOMEM;
	}
	*q = (struct zyg_req){.codefd = -1};
	z->wait = w;
	*ret_wait = w;
	log_debug("sandbox: a run waits for the zygote's box");
	return -EINPROGRESS;
}
