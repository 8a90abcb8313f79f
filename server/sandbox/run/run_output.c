/* run_output.c: a run's output read from its box's pipes (see run.h's
 * struct run_sink): pipe data becomes text for the sink (run_text.c),
 * output that needs no escape goes to the sink's relay as a byte range
 * of the pipe, the outputBytes cap cuts it and ends the box, a stream
 * at its end may end the run (run_exit.c), and reading pauses while the
 * sink cannot take more. */
#include "sandbox/run/run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/log.h"
#include "core/loop.h"
#include "sandbox/run/run_private.h"
#include "sandbox/state.h"
#include "sandbox/output/text.h"

/* Output that needs no escape goes to the sink's relay from this length
 * on; shorter pieces are coalesced and copied (a message of their own,
 * with its syscalls, would cost more than the copy saves). */
#define RELAY_MIN (16u * 1024)

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

void run_relay_close(struct sandbox *sbx)
{
	for (int i = 0; i < 2; i++) {
		if (sbx->relay_pipe[i] >= 0)
			close(sbx->relay_pipe[i]);
		if (sbx->relay_hold[i] >= 0)
			close(sbx->relay_hold[i]);
		sbx->relay_pipe[i] = sbx->relay_hold[i] = -1;
	}
	if (sbx->relay_null >= 0)
		close(sbx->relay_null);
	sbx->relay_null = -1;
	sbx->relay_off = true;
}

/* The relay's holding and scratch pipes (each as large as a read) and
 * /dev/null; -errno once they cannot be had. */
static int relay_fds(struct sandbox *sbx)
{
	if (sbx->relay_off)
		return -ENOSYS;
	if (sbx->relay_null >= 0)
		return 0;
	if (pipe2(sbx->relay_pipe, O_CLOEXEC | O_NONBLOCK) < 0 ||
	    pipe2(sbx->relay_hold, O_CLOEXEC | O_NONBLOCK) < 0) {
		int e = errno;
		run_relay_close(sbx);
		return -e;
	}
	/* Each takes all a box's pipe of up to RUN_COALESCE_BYTES holds (as
	 * many slots), which take_output counts on; the scratch pipe twice
	 * that, for the mark behind a full take (relay_check). */
	int scratch = fcntl(sbx->relay_pipe[1], F_SETPIPE_SZ, 2 * RUN_COALESCE_BYTES),
	    held = fcntl(sbx->relay_hold[1], F_SETPIPE_SZ, RUN_COALESCE_BYTES);
	sbx->relay_null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (scratch < (int)(2 * RUN_COALESCE_BYTES) || held < (int)RUN_COALESCE_BYTES ||
	    sbx->relay_null < 0) {
		run_relay_close(sbx);
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

/* Copy the n bytes held into buf (which has room for n + 1) through the
 * scratch pipe, leaving them held; false when that failed. *whole says
 * whether the client's reads can split them anywhere: false when any of
 * them is a packet. A program can write its stdout in packet mode
 * (O_DIRECT on its end, or a packet pipe of its own tee'd into it): then
 * each write is a pipe buffer of its own, which splice and tee move with
 * its flag, and a read() that ends inside one drops the rest of it. Such
 * pages relayed to the client would lose bytes of a message at whatever
 * read size the client uses, and its framing with them (the attack
 * protocol-relay-packets). A read stops right after a packet, so a read
 * of the held bytes and a mark written behind them (never a packet, and
 * never merged into the bytes before it: tee leaves its pages unmergeable)
 * takes all in one call only when none of them is one. Without mark
 * (a take too short to be relayed: a syscall saved), *whole is false. */
static bool relay_check(struct sandbox *sbx, int hold, char *buf, size_t n, bool mark, bool *whole)
{
	int scratch = sbx->relay_pipe[0];
	*whole = false;
	if (tee(hold, sbx->relay_pipe[1], n, SPLICE_F_NONBLOCK) != (ssize_t)n)
		return false;
	size_t want = n + (mark && write(sbx->relay_pipe[1], "", 1) == 1), got = 0;
	bool one = true;
	while (got < want) {
		ssize_t r = read(scratch, buf + got, want - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		got += (size_t)r;
		one = one && got == want;
	}
	*whole = one && want > n;
	return true;
}

/* Output that can go to the client as it is, without the server copying
 * it (run.h's relay; docs/performance.md, "The output relay"): moved
 * from the box's pipe into the holding pipe with splice(2), which frees
 * the box's pipe for the program's next write at once (it writes while
 * the server checks: "Output, unpinned"), then tee(2)'d into the
 * scratch pipe and that copy read into buf, to check it while the bytes
 * stay held. Its longest prefix of whole UTF-8 characters that the sink
 * sends as they are (no JSON escape) and that fits outputBytes, when
 * long enough to be worth a message of its own, is handed to the sink's
 * relay, which splices it from the holding pipe to the client's. What
 * is left of the bytes held (or all of them) is dropped from the
 * holding pipe and goes the usual way, from buf, so that the holding
 * pipe is empty again when this returns. So every byte leaves the box's
 * pipe exactly once, in order, and the bytes handled are the bytes
 * checked. buf has room for size + 1 bytes (relay_check). Returns how
 * many bytes it took from the box's pipe, and
 * sets *asked to how many it asked for (0 taken: paused); -EAGAIN when
 * the pipe was empty; -ENOSYS when the relay cannot be used (the caller
 * reads). */
static ssize_t relay_output(struct run *run, int s, int fd, char *buf, size_t size, size_t *asked)
{
	struct sandbox *sbx = run->sbx;
	if (run->dec[s].ncarry || relay_fds(sbx) < 0)
		return -ENOSYS;
	/* No more than the sink can take now: then what is checked is what
	 * goes out, and nothing is checked twice. The sink says no (or to
	 * pause) before anything is taken from the box's pipe. */
	enum run_flow flow = RUN_CONTINUE;
	size_t room = run->sink->relay_room(run->sink_data, run, &flow);
	if (flow == RUN_PAUSE) {
		run_pause_reading(run);
		return 0;
	}
	if (room < RELAY_MIN)
		return -ENOSYS;
	int hold = sbx->relay_hold[0];
	*asked = room < size ? room : size;
	ssize_t n =
	    splice(fd, NULL, sbx->relay_hold[1], NULL, *asked, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
	if (n < 0 && errno == EAGAIN)
		return -EAGAIN;
	if (n <= 0) /* the end of the stream, or not a pipe: read() says */
		return -ENOSYS;
	size_t got = (size_t)n;
	bool whole;
	if (!relay_check(sbx, hold, buf, (size_t)n, n >= RELAY_MIN, &whole)) {
		/* Cannot happen with pipes of our own; if it does, the held
		 * bytes are read from the holding pipe and go the usual way,
		 * and the relay stops (the box's pipe is read from then on). */
		log_error("run %s: the output relay's pipe failed; reading instead", run->id);
		for (got = 0; got < (size_t)n;) {
			ssize_t r = read(hold, buf + got, (size_t)n - got);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		run_relay_close(sbx);
		run_on_bytes(run, s, buf, got);
		return n;
	}
	/* Packets are not relayed: they go the usual way, copied. */
	size_t k = whole ? run->sink->plain(buf, got) : 0;
	uint64_t budget = run->limits.output_bytes - run->out_bytes;
	if (k > budget) /* cut on a character boundary */
		for (k = (size_t)budget; k > 0 && (buf[k] & 0xc0) == 0x80;)
			k--;
	size_t took = 0;
	if (k >= RELAY_MIN) {
		/* What is held goes first: output keeps its order. */
		run_flush_output(run);
		if (!run->paused) {
			took = run->sink->relay(run->sink_data, run, (enum run_stream)s, buf, k,
			                        hold, &flow);
			run->out_bytes += took;
			sbx_tail_add(&run->tail[s], buf, took);
		}
	}
	if (took < got) {
		/* The rest goes the usual way: dropped from the holding pipe,
		 * handled from buf (at most one read past a pause, as when
		 * the box's pipe is read). */
		size_t at = took + relay_drop(sbx, hold, got - took);
		while (at < got) {
			/* splice failed: read instead, the same bytes into the
			 * same place. */
			ssize_t m = read(hold, buf + at, got - at);
			if (m < 0 && errno == EINTR)
				continue;
			if (m <= 0)
				break;
			at += (size_t)m;
		}
		run_on_bytes(run, s, buf + took, at - took);
	}
	if (flow == RUN_PAUSE)
		run_pause_reading(run);
	return n;
}

static bool pipe_unread(int fd)
{
	int n = 0;
	return ioctl(fd, FIONREAD, &n) == 0 && n > 0;
}

/* One take from a box's pipe: relayed, or read the usual way. true when
 * the pipe may hold more that no wake-up will report: the watch is
 * edge-triggered (RUN_PIPE_EVENTS), so the next take comes from this
 * call, not from the loop. A writer that found the pipe empty wakes the
 * server when it has filled it or ended its write, and a writer that
 * closes wakes it too; so the pipe needs another take now only when this
 * one may have left bytes (it took all it asked for, less than the pipe
 * holds) or the writer had gone when the loop reported the pipe (hup:
 * then no wake-up comes, and the pipe is taken until its end). */
static bool take_output(struct run *run, int s, int fd, bool hup)
{
	/* One read takes up to a notification's worth (RUN_COALESCE_BYTES) of
	 * the box's 256 KiB pipe (box.c); static: the loop has one thread. */
	static char buf[RUN_COALESCE_BYTES + 1]; /* + relay_check's mark */
	if (!run->pipe_bytes[s]) {
		int size = fcntl(fd, F_GETPIPE_SZ);
		run->pipe_bytes[s] = size > 0 ? (size_t)size : SIZE_MAX;
	}
	size_t asked = RUN_COALESCE_BYTES;
	ssize_t n = -ENOSYS;
	/* Relayed only from a pipe the holding pipe takes whole. */
	if (run->sink->relay && !run->truncated && run->pipe_bytes[s] <= RUN_COALESCE_BYTES)
		n = relay_output(run, s, fd, buf, RUN_COALESCE_BYTES, &asked);
	if (n == -EAGAIN)
		return false;
	if (n == -ENOSYS) {
		asked = RUN_COALESCE_BYTES;
		n = read(fd, buf, RUN_COALESCE_BYTES);
		if (n < 0 && errno == EINTR)
			return true;
		if (n < 0 && errno == EAGAIN)
			return false;
		if (n <= 0) {
			stream_eof(run, s); /* may end the run: nothing after */
			return false;
		}
		run_on_bytes(run, s, buf, (size_t)n);
		/* A short read empties a pipe, but for a packet (a write to
		 * an end in O_DIRECT mode: relay_check): a read stops right
		 * after one. The writer blocked on the full pipe wakes the
		 * server only when it finds it empty, or at the end of its
		 * write; with one packet read a wake-up, a write of more
		 * than a page would wait for the run's timeout. */
		if ((size_t)n < asked && !run->paused && run->box.fds[s] == fd && pipe_unread(fd))
			return true;
	}
	if (run->paused || run->box.fds[s] != fd)
		return false;
	return hup || ((size_t)n == asked && asked < run->pipe_bytes[s]);
}

void run_on_pipe(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)loop;
	struct run *run = data;
	int s = fd == run->box.fds[OUT] ? OUT : ERR;
	while (!run->paused && take_output(run, s, fd, events & LOOP_HUP))
		;
}

void run_resume_output(struct run *run)
{
	if (!run->paused)
		return;
	run->paused = false;
	if (run->owner) {
		run->owner_ops->pause_io(run->owner, false);
		return;
	}
	for (int s = 0; s < 2; s++)
		if (run->box.fds[s] >= 0 &&
		    loop_watch(run->loop, run->box.fds[s], RUN_PIPE_EVENTS, run_on_pipe, run) < 0)
			log_error("run %s: cannot watch its output again", run->id);
}
