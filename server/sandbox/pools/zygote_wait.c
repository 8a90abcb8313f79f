/* zygote_wait.c: the bottom of the zygote's files: a run's request
 * released, and a run that came while the zygote's spare is on its way
 * (its pid 1 has not sent its pidfd yet), parked off the loop's critical
 * path, told how its wait ended: it takes the spare (zygote_spare.c
 * hands it over), the spare fails or the deadline passes (it takes the
 * normal path), or it is cancelled. See zygote.h. */
#include "sandbox/pools/zygote_wait.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "sandbox/state.h"
#include "sandbox/host/base.h"
#include "sandbox/pools/zyg_shared.h"

/* Tell the run that waited how it went, and forget the wait. */
void zyg_wait_done(struct sbx_zygote_wait *w, int r)
{
	if (w->timer)
		loop_timer_stop(w->s->base.loop, w->timer);
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
	zyg_wait_done(w, w->err);
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
		loop_timer_stop(s->base.loop, w->timer);
	w->err = err;
	if (!(w->timer = loop_timer_start(s->base.loop, 0, on_wait_failed, w)))
		zyg_wait_done(w, err);
}

void sbx_zygote_wait_cancel(struct sandbox *s, struct sbx_zygote_wait *w)
{
	if (!w)
		return;
	/* The spare stays, for the next run. */
	if (s->zygote && s->zygote->wait == w)
		s->zygote->wait = NULL;
	if (w->timer)
		loop_timer_stop(s->base.loop, w->timer);
	zyg_req_release(&w->q);
	free(w);
}

void zyg_req_release(struct zyg_req *q)
{
	json_object_put(q->req);
	q->req = NULL;
	if (q->codefd >= 0)
		close(steal_fd(&q->codefd));
	free(q->layout);
	q->layout = NULL;
}
