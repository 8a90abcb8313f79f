/* run_output.c: a run's output (see run.h's struct run_sink): pipe data
 * becomes coalesced, UTF-8-safe text for the sink (at most every
 * COALESCE_MS, or when RUN_COALESCE_BYTES are held), output that needs
 * no escape goes to the sink's relay as a byte range of the pipe, the
 * outputBytes cap cuts it, and reading pauses while the sink cannot
 * take more. */
#include "sandbox/run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/log.h"
#include "core/loop.h"
#include "sandbox/run_private.h"
#include "sandbox/sandbox.h"
#include "sandbox/session.h"
#include "sandbox/text.h"

/* Output is sent at most this often per run, or when this much is held. */
#define COALESCE_MS 20
/* Output that needs no escape goes to the sink's relay from this length
 * on; shorter pieces are coalesced and copied (a message of their own,
 * with its syscalls, would cost more than the copy saves). */
#define RELAY_MIN (16u * 1024)

static void pause_reading(struct run *run);

/* --- output -------------------------------------------------------------- */

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
		pause_reading(run);
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

static void stream_eof(struct run *run, int s)
{
	if (run->box.fds[s] < 0)
		return;
	loop_unwatch(run->loop, run->box.fds[s]);
	close(run->box.fds[s]);
	run->box.fds[s] = -1;
	run_add_text(run, s, "", 0, true, true);
	run_maybe_finish(run);
}

/* outputBytes counts the text as the sink sends it (run.h's measure):
 * for the client, JSON with its escapes, so 1 MiB of control bytes is
 * the 6 MiB the client receives, and each invalid byte the three of its
 * U+FFFD. */
void run_on_bytes(struct run *run, int s, const char *buf, size_t n)
{
	if (run->truncated)
		return;
	if (run_add_text(run, s, buf, n, false, true))
		return;
	run->truncated = true;
	run->dec[s].ncarry = 0; /* past the cut: not sent, not a U+FFFD */
	char marker[128];
	int m = snprintf(marker, sizeof(marker),
	                 "\n[kiln: output stopped after %llu bytes; the run was ended]\n",
	                 (unsigned long long)run->limits.output_bytes);
	run_add_text(run, s, marker, (size_t)m, true, false);
	run_flush_output(run);
	run_end_box(run);
}

/* The relay's scratch pipe (as large as a read) and /dev/null; -errno
 * once they cannot be had. */
static int relay_fds(struct sandbox *sbx)
{
	if (sbx->relay_off)
		return -ENOSYS;
	if (sbx->relay_null >= 0)
		return 0;
	if (pipe2(sbx->relay_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		sbx->relay_pipe[0] = sbx->relay_pipe[1] = -1;
		sbx->relay_off = true;
		return -errno;
	}
	fcntl(sbx->relay_pipe[1], F_SETPIPE_SZ, RUN_COALESCE_BYTES);
	sbx->relay_null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (sbx->relay_null < 0) {
		close(sbx->relay_pipe[0]);
		close(sbx->relay_pipe[1]);
		sbx->relay_pipe[0] = sbx->relay_pipe[1] = -1;
		sbx->relay_off = true;
		return -ENOSYS;
	}
	return 0;
}

/* Drop up to n bytes from the front of pipe fd without reading them;
 * how many were dropped (all, unless splice fails). */
static size_t relay_drop(struct sandbox *sbx, int fd, size_t n)
{
	size_t done = 0;
	while (done < n) {
		ssize_t m = splice(fd, NULL, sbx->relay_null, NULL, n - done, SPLICE_F_NONBLOCK);
		if (m < 0 && errno == EINTR)
			continue;
		if (m <= 0)
			break;
		done += (size_t)m;
	}
	return done;
}

/* Output that can go to the client as it is, without the server copying
 * it (run.h's relay; docs/performance.md, "The output relay"): tee(2)
 * the box's pipe into the scratch pipe and read that copy into buf, to
 * check it while the bytes stay in the box's pipe. Its longest prefix of
 * whole UTF-8 characters that the sink sends as they are (no JSON escape)
 * and that fits outputBytes, when long enough to be worth a message of
 * its own, is handed to the sink's relay, which splices it from the box's
 * pipe to the client's. What is left of the bytes read (or all of them)
 * is dropped from the box's pipe and goes the usual way, from buf. So
 * every byte leaves the box's pipe exactly once, in order, and the bytes
 * handled are the bytes checked. -EAGAIN when the pipe was empty;
 * -ENOSYS when the relay cannot be used (the caller reads). */
static int relay_output(struct run *run, int s, int fd, char *buf, size_t size)
{
	struct sandbox *sbx = run->sbx;
	if (run->dec[s].ncarry || relay_fds(sbx) < 0)
		return -ENOSYS;
	/* No more than the sink can take now: then what is checked is what
	 * goes out, and nothing is checked twice. */
	enum run_flow flow = RUN_CONTINUE;
	size_t room = run->sink->relay_room(run->sink_data, run, &flow);
	if (flow == RUN_PAUSE) {
		pause_reading(run);
		return 0;
	}
	if (room < RELAY_MIN)
		return -ENOSYS;
	ssize_t n = tee(fd, sbx->relay_pipe[1], room < size ? room : size, SPLICE_F_NONBLOCK);
	if (n < 0 && errno == EAGAIN)
		return -EAGAIN;
	if (n <= 0) /* the end of the stream, or not a pipe: read() says */
		return -ENOSYS;
	size_t got = 0;
	while (got < (size_t)n) {
		ssize_t r = read(sbx->relay_pipe[0], buf + got, (size_t)n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			/* Cannot happen with a pipe of our own; if it does,
			 * stop relaying (the box's bytes are all still there). */
			log_error("run %s: the output relay's pipe failed; reading instead",
			          run->id);
			close(sbx->relay_pipe[0]);
			close(sbx->relay_pipe[1]);
			sbx->relay_pipe[0] = sbx->relay_pipe[1] = -1;
			close(sbx->relay_null);
			sbx->relay_null = -1;
			sbx->relay_off = true;
			return -ENOSYS;
		}
		got += (size_t)r;
	}
	size_t k = run->sink->plain(buf, got);
	uint64_t budget = run->limits.output_bytes - run->out_bytes;
	if (k > budget) /* cut on a character boundary */
		for (k = (size_t)budget; k > 0 && (buf[k] & 0xc0) == 0x80;)
			k--;
	size_t took = 0;
	if (k >= RELAY_MIN) {
		/* What is held goes first: output keeps its order. */
		run_flush_output(run);
		if (run->paused)
			return 0; /* the bytes wait in the box's pipe */
		took = run->sink->relay(run->sink_data, run, (enum run_stream)s, buf, k, fd, &flow);
		run->out_bytes += took;
		sbx_tail_add(&run->tail[s], buf, took);
		if (flow == RUN_PAUSE) {
			pause_reading(run);
			return 0; /* the rest waits in the box's pipe */
		}
	}
	if (took == got)
		return 0;
	/* The rest goes the usual way: dropped from the box's pipe, handled
	 * from buf. */
	size_t at = took + relay_drop(sbx, fd, got - took);
	while (at < got) {
		/* splice failed: read instead, the same bytes into the same
		 * place. */
		ssize_t m = read(fd, buf + at, got - at);
		if (m < 0 && errno == EINTR)
			continue;
		if (m <= 0)
			break;
		at += (size_t)m;
	}
	run_on_bytes(run, s, buf + took, at - took);
	return 0;
}

void run_on_pipe(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)loop;
	(void)events;
	struct run *run = data;
	int s = fd == run->box.fds[OUT] ? OUT : ERR;
	if (run->paused)
		return;
	/* One read takes up to a notification's worth (RUN_COALESCE_BYTES) of
	 * the box's 256 KiB pipe (box.c); static: the loop has one thread. */
	static char buf[RUN_COALESCE_BYTES];
	if (run->sink->relay && !run->truncated) {
		int r = relay_output(run, s, fd, buf, sizeof(buf));
		if (r != -ENOSYS)
			return;
	}
	ssize_t n = read(fd, buf, sizeof(buf));
	if (n > 0)
		run_on_bytes(run, s, buf, (size_t)n);
	else if (n == 0 || (errno != EAGAIN && errno != EINTR))
		stream_eof(run, s);
}

void run_resume_output(struct run *run)
{
	if (!run->paused)
		return;
	run->paused = false;
	if (run->session) {
		sbx_session_pause_io(run->session, false);
		return;
	}
	for (int s = 0; s < 2; s++)
		if (run->box.fds[s] >= 0 &&
		    loop_watch(run->loop, run->box.fds[s], LOOP_READ, run_on_pipe, run) < 0)
			log_error("run %s: cannot watch its output again", run->id);
}

/* The sink cannot take more now: stop reading the pipes, so the program
 * blocks on a full pipe instead of the server queueing without end. Not
 * watched at all meanwhile: a pipe whose writer is gone would report its
 * hang-up whatever it is watched for, and wake the loop without end. */
static void pause_reading(struct run *run)
{
	if (run->paused)
		return;
	run->paused = true;
	if (run->session) {
		sbx_session_pause_io(run->session, true);
		return;
	}
	for (int s = 0; s < 2; s++)
		if (run->box.fds[s] >= 0)
			loop_unwatch(run->loop, run->box.fds[s]);
}
