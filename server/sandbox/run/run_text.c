/* run_text.c: a run's output as text for its sink (see run.h's struct
 * run_sink): decoded to UTF-8, counted against outputBytes, coalesced
 * (sent at most every COALESCE_MS, or when RUN_COALESCE_BYTES are held),
 * in the order the bytes came; and reading paused while the sink cannot
 * take more. The bottom of a run's output: run_output.c reads the pipes
 * into it, run_exit.c and run_session.c add kiln's own lines. */
#include "sandbox/run/run.h"

#include <stdint.h>
#include <stdio.h>

#include "core/buf.h"
#include "core/loop.h"
#include "sandbox/output/text.h"
#include "sandbox/run/run_private.h"

/* Output is sent at most this often per run, or when this much is held. */
#define COALESCE_MS 20

/* Hand what is held to the sink; it may answer that reading pauses. */
void run_flush_output(struct run *run)
{
	if (run->flush_timer) {
		loop_timer_stop(run->loop, run->flush_timer);
		run->flush_timer = NULL;
	}
	enum run_flow flow = RUN_CONTINUE;
	if (run->pending.len && run->pending_stream >= 0)
		flow = run->sink->output(run->sink_data, run, (enum run_stream)run->pending_stream,
		                         run->pending.data, run->pending.len);
	buf_reset(&run->pending);
	if (flow == RUN_PAUSE)
		run_pause_reading(run);
}

static void on_flush_timer(struct loop *loop, void *data)
{
	(void)loop;
	struct run *run = data;
	run->flush_timer = NULL;
	run_flush_output(run);
}

/* The longest prefix of the new text that fits the room left under
 * outputBytes, as the sink counts it (run.h); the room shrinks by its cost.
 * Returns false when the text was cut. */
static bool count_text(struct run *run, struct buf *b, size_t from)
{
	uint64_t room = run->limits.output_bytes - run->out_bytes, cost;
	size_t n = b->len - from, fit;
	if (run->sink->measure) {
		fit = run->sink->measure(b->data + from, n, room, &cost);
	} else {
		fit = n;
		if (fit > room) /* cut on a character boundary */
			for (fit = (size_t)room; fit > 0 && (b->data[from + fit] & 0xc0) == 0x80;)
				fit--;
		cost = fit;
	}
	run->out_bytes += cost;
	b->len = from + fit;
	return fit == n;
}

/* Add decoded text of stream s; flush first when the stream changes so
 * that notifications keep the order the bytes arrived in. Counted text
 * (the program's, not kiln's marker) is cut where outputBytes is reached;
 * returns false then. */
bool run_add_text(struct run *run, int s, const char *bytes, size_t n, bool final, bool counted)
{
	if (run->pending_stream != s && run->pending.len)
		run_flush_output(run);
	run->pending_stream = s;
	size_t before = run->pending.len;
	if (sbx_utf8_decode(&run->dec[s], bytes, n, final, &run->pending) < 0) {
		run_flush_output(run);
		before = 0;
		sbx_utf8_decode(&run->dec[s], bytes, n, final, &run->pending);
	}
	bool whole = !counted || count_text(run, &run->pending, before);
	sbx_tail_add(&run->tail[s], run->pending.data + before, run->pending.len - before);
	if (run->pending.len >= RUN_COALESCE_BYTES)
		run_flush_output(run);
	else if (run->pending.len && !run->flush_timer)
		run->flush_timer = loop_timer_start(run->loop, COALESCE_MS, on_flush_timer, run);
	return whole;
}

/* The sink cannot take more now: stop reading the pipes, so the program
 * blocks on a full pipe instead of the server queueing without end. Not
 * watched at all meanwhile: a pipe whose writer is gone would report its
 * hang-up whatever it is watched for, and wake the loop without end. */
void run_pause_reading(struct run *run)
{
	if (run->paused)
		return;
	run->paused = true;
	if (run->owner) {
		run->owner_ops->pause_io(run->owner, true);
		return;
	}
	for (int s = 0; s < 2; s++)
		if (run->box.fds[s] >= 0)
			loop_unwatch(run->loop, run->box.fds[s]);
}
