/* peer.c: the client connection over two fds (see peer.h). */
#include "rpc/peer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/json.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "rpc/frame.h"
#include "rpc/frame_lines.h"
#include "rpc/message.h"

#define HIGH_WATER (8u << 20)
#define LOW_WATER  (1u << 20)
/* Past this the client has stopped reading for good, or cannot keep up
 * even with its input paused: the connection is treated as broken. */
#define CEILING    (64u << 20)
#define READ_CHUNK 65536

struct drain_waiter {
	struct drain_waiter *next;
	void (*fn)(void *data);
	void *data;
};

struct rpc_peer {
	struct loop *loop;
	int in_fd, out_fd;
	int in_flags, out_flags; /* restored on free */
	bool in_watched, out_watched, in_polled;
	bool input_done, output_broken;
	/* Input is not read while the output queue is over the high-water
	 * mark, so a client that writes and never reads cannot grow it. */
	bool input_paused;
	/* The closed callback, once: scheduled from the loop, never called
	 * from inside a send (the sender may be what it frees). */
	bool closed_reported;
	struct loop_timer *closed_timer;
	struct loop_timer *poll_timer; /* input that epoll refuses (a file) */
	struct frame_reader fr;
	/* MCP's newline framing instead of Content-Length (rpc_peer_use_lines). */
	bool lines;
	struct line_reader lr;
	struct buf out;
	size_t out_off;
	/* The output is a pipe of pipe_size bytes: a message's middle can be
	 * spliced into it from another pipe (rpc_peer_send_splice). */
	bool out_pipe;
	size_t pipe_size;
	/* A spliced message is put together here (header and head, its
	 * middle, its tail) and moved to the client's pipe in one splice:
	 * the client wakes once for it, not once for each part. Empty
	 * between sends; -1 until the first, and when it cannot be had. */
	int stage[2];
	bool stage_off;
	struct buf body; /* the message being sent, serialised (json_write) */
	struct drain_waiter *waiters;
	struct loop_timer *drain_timer;
	/* Waiting for room in the client's pipe (rpc_peer_on_room): called
	 * when the output fd is writable again. */
	struct drain_waiter *room_waiters;
	const struct rpc_peer_ops *ops;
	void *data;
	rpc_tap_fn tap;
	void *tap_data;
	/* The parser, kept from one message to the next (json_stream_reset):
	 * a new one per message cost a small request as much as the rest of
	 * its parse. A large body is parsed a read at a time as it arrives
	 * (see on_body_part: body_js_on); off when that could not start, so
	 * a stream never misses the body's first pieces. */
	struct json_stream *body_js;
	bool body_js_on, body_js_off;
	/* Send U+0000 in strings as U+FFFD (rpc_peer_set_replace_nul). */
	bool replace_nul;
	/* Reads right after a short one that found nothing, in a row
	 * (read_some). */
	uint8_t read_misses;
	unsigned read_tries;
};

/* Bodies from this size on are parsed as they arrive: a 4 MiB message
 * costs the loop 14-30 ms to parse in one go (40-60 ms before the strict
 * check skipped through strings a block at a time), which every request
 * behind it would wait for; in pieces it is spread over the reads, done
 * while the client is still writing. */
#define STREAM_PARSE_MIN (64 * 1024)

static void on_body_part(void *data, const char *part, size_t n, size_t total)
{
	struct rpc_peer *peer = data;
	if (total < STREAM_PARSE_MIN || peer->body_js_off)
		return;
	if (!peer->body_js_on) {
		if (!peer->body_js)
			peer->body_js = json_stream_new(INT32_MAX);
		if (!peer->body_js) {
			peer->body_js_off = true; /* parsed whole at its end */
			return;
		}
		peer->body_js_on = true;
	}
	json_stream_feed(peer->body_js, part, n);
}

/* Ready the parser for the next body. After a large one it is freed, not
 * kept: json-c's tokener keeps the buffer its longest string grew, and an
 * idle server should not hold a past message's megabytes. */
static void drop_body_stream(struct rpc_peer *peer, size_t len)
{
	if (peer->body_js && len < STREAM_PARSE_MIN) {
		json_stream_reset(peer->body_js);
	} else {
		json_stream_free(peer->body_js);
		peer->body_js = NULL;
	}
	peer->body_js_on = false;
	peer->body_js_off = false;
}

static void on_body(void *data, char *body, size_t len)
{
	struct rpc_peer *peer = data;
	char detail[200] = "";
	json_object *msg = NULL;
	if (peer->tap)
		peer->tap(peer->tap_data, false, body, len);
	int r;
	if (!peer->body_js_on && !peer->body_js && len < STREAM_PARSE_MIN)
		peer->body_js = json_stream_new(INT32_MAX);
	if (peer->body_js_on) {
		r = rpc_parse_stream(peer->body_js, &msg, detail, sizeof(detail));
	} else if (peer->body_js && len < STREAM_PARSE_MIN) {
		json_stream_feed(peer->body_js, body, len);
		r = rpc_parse_stream(peer->body_js, &msg, detail, sizeof(detail));
	} else {
		r = rpc_parse(body, len, &msg, detail, sizeof(detail));
	}
	drop_body_stream(peer, len);
	if (r < 0) {
		log_warn("bad message from client: %s", detail);
		peer->ops->bad_input(peer->data, RPC_PARSE_ERROR, detail);
		return;
	}
	peer->ops->message(peer->data, msg);
	json_object_put(msg);
}

static void on_frame_error(void *data, enum frame_error err, const char *detail)
{
	struct rpc_peer *peer = data;
	drop_body_stream(peer, peer->body_js_on ? STREAM_PARSE_MIN : 0);
	log_warn("bad framing from client: %s", detail);
	if (err == FRAME_ERR_TRUNCATED)
		return; /* the stream is over: nobody to answer */
	char msg[220];
	int code = err == FRAME_ERR_TOO_LARGE ? RPC_INVALID_REQUEST : RPC_PARSE_ERROR;
	snprintf(msg, sizeof(msg), "%s: %s", rpc_error_message(code), detail);
	peer->ops->bad_input(peer->data, code, msg);
}

static const struct frame_callbacks frame_cbs = {
    .message = on_body,
    .error = on_frame_error,
    .body_part = on_body_part,
};

static void fire_closed(struct loop *loop, void *data)
{
	(void)loop;
	struct rpc_peer *peer = data;
	peer->closed_timer = NULL;
	if (peer->closed_reported)
		return;
	peer->closed_reported = true;
	peer->ops->closed(peer->data);
}

/* Report the end of the connection from the next loop iteration, once.
 * Whoever noticed it (a send deep inside a producer, a read) returns to
 * its caller first; the closed callback may then free what it likes. */
static void schedule_closed(struct rpc_peer *peer)
{
	if (peer->closed_reported || peer->closed_timer)
		return;
	peer->closed_timer = loop_timer_start(peer->loop, 0, fire_closed, peer);
	if (!peer->closed_timer) {
		/* Out of memory for a timer: stop the loop rather than call
		 * back into a sender. */
		log_error("out of memory scheduling the end of the connection");
		loop_stop(peer->loop, 1);
	}
}

static void input_ended(struct rpc_peer *peer)
{
	if (peer->input_done)
		return;
	if (peer->lines)
		line_reader_eof(&peer->lr, &frame_cbs, peer);
	else
		frame_reader_eof(&peer->fr, &frame_cbs, peer);
	rpc_peer_stop_input(peer);
	schedule_closed(peer);
}

/* The output cannot be written any more: drop what is queued, refuse
 * further sends, and report it (later, from the loop). */
static void output_broke(struct rpc_peer *peer)
{
	peer->output_broken = true;
	buf_reset(&peer->out);
	peer->out_off = 0;
	if (peer->out_watched) {
		loop_unwatch(peer->loop, peer->out_fd);
		peer->out_watched = false;
	}
	schedule_closed(peer);
}

/* Read what is there; returns false once input is over. */
static bool read_some(struct rpc_peer *peer)
{
	char chunk[READ_CHUNK];
	bool again = false; /* this read follows a short one */
	/* Bounded so one busy client cannot starve timers and child pipes. */
	for (int rounds = 0; rounds < 16 && !peer->input_done && !peer->input_paused; rounds++) {
		ssize_t n = read(peer->in_fd, chunk, sizeof(chunk));
		if (again && n < 0 && errno == EAGAIN)
			peer->read_misses += peer->read_misses < UINT8_MAX;
		else if (again)
			peer->read_misses = 0;
		if (n > 0) {
			int fr =
			    peer->lines
			        ? line_reader_feed(&peer->lr, chunk, (size_t)n, &frame_cbs, peer)
			        : frame_reader_feed(&peer->fr, chunk, (size_t)n, &frame_cbs, peer);
			if (fr < 0) {
				log_error("out of memory reading a message");
				input_ended(peer);
				return false;
			}
			if (loop_stopping(peer->loop))
				return false;
			/* A short read emptied the pipe or socket. Whether to
			 * read again at once or go back to the loop depends on
			 * the client: one that answers while we are still here
			 * (on our CPU, it runs the moment the reply's write
			 * wakes it) has its next request waiting, and a read
			 * finds it without epoll_wait (most of the time); for
			 * any other, that read only hears EAGAIN. So read again
			 * until it has missed 16 times in a row, and then only
			 * every 8th time, to notice a change. */
			again = (size_t)n < sizeof(chunk);
			if (again && peer->read_misses >= 16 && ++peer->read_tries % 8 != 0)
				return true;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return true;
		if (n < 0)
			log_warn("reading from client: %s", strerror(errno));
		input_ended(peer);
		return false;
	}
	return !peer->input_done;
}

static void on_input(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)loop;
	(void)fd;
	(void)events;
	read_some(data);
}

static void on_input_poll(struct loop *loop, void *data)
{
	struct rpc_peer *peer = data;
	peer->poll_timer = NULL;
	if (read_some(peer) && !peer->input_done && !peer->input_paused)
		peer->poll_timer = loop_timer_start(loop, 0, on_input_poll, peer);
}

static void on_input(struct loop *loop, int fd, unsigned events, void *data);

/* Watch the input fd for reading; a failure ends the input. */
static void input_watch(struct rpc_peer *peer)
{
	int r = loop_watch(peer->loop, peer->in_fd, LOOP_READ, on_input, peer);
	if (r < 0) {
		log_error("cannot watch the input fd again: %s", strerror(-r));
		input_ended(peer);
		return;
	}
	peer->in_watched = true;
}

/* Pause reading at the high-water mark, resume below the low one. */
static void update_in_watch(struct rpc_peer *peer)
{
	size_t q = peer->out.len - peer->out_off;
	bool pause = peer->input_paused;
	if (q >= HIGH_WATER)
		pause = true;
	else if (q < LOW_WATER)
		pause = false;
	if (pause == peer->input_paused || peer->input_done)
		return;
	peer->input_paused = pause;
	if (pause)
		log_debug("client is not reading its replies: input paused");
	if (!peer->in_polled) {
		/* Unwatched, not merely silenced: epoll reports a hang-up
		 * whatever the events asked for, and a client that closed its
		 * end while paused would spin the loop. */
		if (pause) {
			loop_unwatch(peer->loop, peer->in_fd);
			peer->in_watched = false;
		} else {
			input_watch(peer);
		}
	} else {
		loop_timer_stop(peer->loop, peer->poll_timer);
		peer->poll_timer =
		    pause ? NULL : loop_timer_start(peer->loop, 0, on_input_poll, peer);
	}
}

static void fire_drain(struct loop *loop, void *data)
{
	(void)loop;
	struct rpc_peer *peer = data;
	peer->drain_timer = NULL;
	struct drain_waiter *w = peer->waiters;
	peer->waiters = NULL;
	while (w) {
		struct drain_waiter *next = w->next;
		w->fn(w->data);
		free(w);
		w = next;
	}
}

static void update_out_watch(struct rpc_peer *peer);

static int write_some(struct rpc_peer *peer)
{
	while (peer->out_off < peer->out.len) {
		ssize_t n = write(peer->out_fd, peer->out.data + peer->out_off,
		                  peer->out.len - peer->out_off);
		if (n > 0) {
			peer->out_off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		log_warn("writing to client: %s", n < 0 ? strerror(errno) : "short write");
		output_broke(peer);
		return -EPIPE;
	}
	if (peer->out_off == peer->out.len) {
		buf_reset(&peer->out);
		peer->out_off = 0;
	} else if (peer->out_off > peer->out.len / 2) {
		buf_consume(&peer->out, peer->out_off);
		peer->out_off = 0;
	}
	if (peer->waiters && !peer->drain_timer && rpc_peer_queued(peer) < LOW_WATER)
		peer->drain_timer = loop_timer_start(peer->loop, 0, fire_drain, peer);
	update_in_watch(peer);
	return 0;
}

static void on_output(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)loop;
	(void)fd;
	struct rpc_peer *peer = data;
	if ((events & LOOP_ERR) && !rpc_peer_queued(peer)) {
		/* The client closed its end while a producer waited for room
		 * (with nothing queued, no write would ever hear EPIPE; the
		 * wait would end at once, again and again). */
		log_warn("writing to client: its end is closed");
		output_broke(peer);
		return;
	}
	if (write_some(peer) < 0)
		return;
	/* The client's pipe has room: whoever waits for it goes on (from
	 * the loop, so they may send). */
	if (!rpc_peer_queued(peer) && peer->room_waiters) {
		struct drain_waiter *w = peer->room_waiters;
		peer->room_waiters = NULL;
		while (w) {
			struct drain_waiter *next = w->next;
			w->fn(w->data);
			free(w);
			w = next;
		}
	}
	update_out_watch(peer);
}

static void update_out_watch(struct rpc_peer *peer)
{
	bool want = !peer->output_broken && (rpc_peer_queued(peer) > 0 || peer->room_waiters);
	if (want && !peer->out_watched) {
		if (loop_watch(peer->loop, peer->out_fd, LOOP_WRITE, on_output, peer) == 0)
			peer->out_watched = true;
	} else if (!want && peer->out_watched) {
		loop_unwatch(peer->loop, peer->out_fd);
		peer->out_watched = false;
	}
}

struct rpc_peer *rpc_peer_new(struct loop *loop, int in_fd, int out_fd, size_t max_message,
                              const struct rpc_peer_ops *ops, void *data)
{
	struct rpc_peer *peer = calloc(1, sizeof(*peer));
	if (!peer)
		return NULL;
	peer->loop = loop;
	peer->in_fd = in_fd;
	peer->out_fd = out_fd;
	peer->stage[0] = peer->stage[1] = -1;
	peer->ops = ops;
	peer->data = data;
	frame_reader_init(&peer->fr, max_message);
	line_reader_init(&peer->lr, max_message);
	/* The queue itself is not capped: replies must never be lost, and
	 * producers stop at the high-water mark. */
	buf_init(&peer->out, SIZE_MAX / 2);
	buf_init(&peer->body, SIZE_MAX / 2);
	peer->in_flags = fcntl(in_fd, F_GETFL);
	peer->out_flags = fcntl(out_fd, F_GETFL);
	if (peer->in_flags >= 0)
		fcntl(in_fd, F_SETFL, peer->in_flags | O_NONBLOCK);
	if (peer->out_flags >= 0)
		fcntl(out_fd, F_SETFL, peer->out_flags | O_NONBLOCK);
	struct stat st;
	int psz = fcntl(out_fd, F_GETPIPE_SZ);
	if (fstat(out_fd, &st) == 0 && S_ISFIFO(st.st_mode) && psz > 0) {
		peer->out_pipe = true;
		peer->pipe_size = (size_t)psz;
	}
	int r = loop_watch(loop, in_fd, LOOP_READ, on_input, peer);
	if (r == -EPERM) {
		/* A regular file or /dev/null: epoll cannot watch it, and it
		 * never blocks, so read it a chunk per loop iteration. */
		peer->poll_timer = loop_timer_start(loop, 0, on_input_poll, peer);
		peer->in_polled = true;
	} else if (r < 0) {
		log_error("cannot watch the input fd: %s", strerror(-r));
		rpc_peer_free(peer);
		return NULL;
	} else {
		peer->in_watched = true;
	}
	return peer;
}

void rpc_peer_stop_input(struct rpc_peer *peer)
{
	if (peer->in_watched)
		loop_unwatch(peer->loop, peer->in_fd);
	peer->in_watched = false;
	loop_timer_stop(peer->loop, peer->poll_timer);
	peer->poll_timer = NULL;
	peer->input_done = true;
}

void rpc_peer_free(struct rpc_peer *peer)
{
	if (!peer)
		return;
	rpc_peer_stop_input(peer);
	if (peer->out_watched)
		loop_unwatch(peer->loop, peer->out_fd);
	loop_timer_stop(peer->loop, peer->drain_timer);
	loop_timer_stop(peer->loop, peer->closed_timer);
	while (peer->waiters) {
		struct drain_waiter *w = peer->waiters;
		peer->waiters = w->next;
		free(w);
	}
	while (peer->room_waiters) {
		struct drain_waiter *w = peer->room_waiters;
		peer->room_waiters = w->next;
		free(w);
	}
	if (peer->stage[0] >= 0) {
		close(peer->stage[0]);
		close(peer->stage[1]);
	}
	/* Leave a terminal or shared pipe the way we found it. */
	if (peer->in_flags >= 0)
		fcntl(peer->in_fd, F_SETFL, peer->in_flags);
	if (peer->out_flags >= 0)
		fcntl(peer->out_fd, F_SETFL, peer->out_flags);
	frame_reader_release(&peer->fr);
	json_stream_free(peer->body_js);
	line_reader_release(&peer->lr);
	buf_release(&peer->out);
	buf_release(&peer->body);
	free(peer);
}

/* In compact JSON text, turn every escape \u0000 into \ufffd: the same
 * length, so in place. An escape starts at a backslash that is not itself
 * escaped; outside strings there are no backslashes. */
static void replace_nul_escapes(char *s, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (s[i] != '\\')
			continue;
		if (s[i + 1] == 'u' && i + 5 < len && memcmp(s + i + 2, "0000", 4) == 0)
			memcpy(s + i + 2, "fffd", 4);
		i++; /* the escaped character, whatever it is */
	}
}

void rpc_peer_set_replace_nul(struct rpc_peer *peer, bool on)
{
	if (peer)
		peer->replace_nul = on;
}

int rpc_peer_send(struct rpc_peer *peer, json_object *msg)
{
	struct buf *body = rpc_peer_begin(peer);
	if (!body)
		return -EPIPE;
	/* json_write, not json_compact: the same bytes, without json-c's
	 * byte-at-a-time escaping of run output and a strlen after it. */
	int r = json_write(body, msg);
	if (r < 0)
		return r;
	return rpc_peer_send_body(peer);
}

struct buf *rpc_peer_begin(struct rpc_peer *peer)
{
	if (peer->output_broken)
		return NULL;
	buf_reset(&peer->body);
	return &peer->body;
}

int rpc_peer_send_body(struct rpc_peer *peer)
{
	if (peer->output_broken)
		return -EPIPE;
	const char *s = peer->body.data;
	size_t len = peer->body.len;
	int r =
	    peer->lines ? frame_encode_line(&peer->out, s, len) : frame_encode(&peer->out, s, len);
	/* Kept for the next message unless it grew large (a big result). */
	if (peer->body.cap > (1u << 20))
		buf_release(&peer->body);
	if (r < 0)
		return r;
	/* The body is the len bytes just queued (before the newline, in line
	 * framing): patched there, and shown to the tap as it goes on the
	 * wire. */
	char *body = peer->out.data + peer->out.len - len - (peer->lines ? 1 : 0);
	if (peer->replace_nul)
		replace_nul_escapes(body, len);
	if (peer->tap)
		peer->tap(peer->tap_data, true, body, len);
	/* Never call back from here: the caller may be a producer in the
	 * middle of its own work. A failure is reported from the loop. */
	if (!peer->out_watched && write_some(peer) < 0)
		return -EPIPE; /* Nothing was pending: tried at once. */
	if (rpc_peer_queued(peer) > CEILING) {
		log_error("client has not read %zu bytes of replies: dropping the connection",
		          rpc_peer_queued(peer));
		output_broke(peer);
		return -EPIPE;
	}
	update_out_watch(peer);
	update_in_watch(peer);
	return 0;
}

bool rpc_peer_can_splice(const struct rpc_peer *peer)
{
	return peer->out_pipe && !peer->output_broken && !peer->tap;
}

int rpc_peer_on_room(struct rpc_peer *peer, void (*fn)(void *data), void *data)
{
	struct drain_waiter *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fn = fn;
	w->data = data;
	w->next = peer->room_waiters;
	peer->room_waiters = w;
	update_out_watch(peer);
	return 0;
}

void rpc_peer_cancel_room(struct rpc_peer *peer, void (*fn)(void *data), void *data)
{
	for (struct drain_waiter **pp = &peer->room_waiters; *pp;) {
		struct drain_waiter *w = *pp;
		if (w->fn == fn && w->data == data) {
			*pp = w->next;
			free(w);
		} else {
			pp = &w->next;
		}
	}
	update_out_watch(peer);
}

size_t rpc_peer_splice_room(const struct rpc_peer *peer)
{
	if (!rpc_peer_can_splice(peer) || rpc_peer_queued(peer))
		return 0;
	/* What the client has not read yet; the rest of its pipe is room. */
	int unread = 0;
	if (ioctl(peer->out_fd, FIONREAD, &unread) < 0 || unread < 0)
		return 0;
	return (size_t)unread < peer->pipe_size ? peer->pipe_size - (size_t)unread : 0;
}

/* The rest of a spliced message's middle could not be spliced: read it
 * from fd into the queue, where the message is finished. The bytes are
 * in fd (the caller saw them there), so a read fails only if something
 * is badly wrong; the message on the wire cannot be finished then, and
 * the connection is treated as broken. */
static int queue_from_fd(struct rpc_peer *peer, int fd, size_t len)
{
	int r = buf_reserve(&peer->out, len);
	if (r < 0)
		return r;
	while (len > 0) {
		ssize_t n = read(fd, peer->out.data + peer->out.len, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		peer->out.len += (size_t)n;
		len -= (size_t)n;
	}
	peer->out.data[peer->out.len] = '\0';
	return 0;
}

/* The staging pipe, opened on first use as large as the client's:
 * whatever one message's middle spans in the pipe it comes from (at most
 * that pipe's slots, 256 for 1 MiB), plus its head and tail. false when
 * it cannot be had (then every part goes straight to the client), and
 * when the client has closed its end: then the head's write finds that
 * out before anything is taken from the source, as without a stage. */
static bool stage_ready(struct rpc_peer *peer)
{
	if (peer->stage_off)
		return false;
	struct pollfd p = {.fd = peer->out_fd, .events = POLLOUT};
	if (poll(&p, 1, 0) < 0 || (p.revents & POLLERR))
		return false;
	if (peer->stage[0] >= 0)
		return true;
	if (pipe2(peer->stage, O_CLOEXEC | O_NONBLOCK) < 0) {
		peer->stage[0] = peer->stage[1] = -1;
		peer->stage_off = true;
		return false;
	}
	fcntl(peer->stage[1], F_SETPIPE_SZ, (int)peer->pipe_size);
	return true;
}

/* Move what is staged (n bytes) to the client: spliced while its pipe has
 * room, the rest read into the queue (behind which everything after it
 * then waits), so the stage is empty again. true when the connection
 * broke. */
static bool stage_flush(struct rpc_peer *peer, size_t n)
{
	while (n > 0 && !rpc_peer_queued(peer)) {
		ssize_t m = splice(peer->stage[0], NULL, peer->out_fd, NULL, n, SPLICE_F_NONBLOCK);
		if (m > 0) {
			n -= (size_t)m;
			continue;
		}
		if (m < 0 && errno == EINTR)
			continue;
		if (m < 0 && errno == EAGAIN)
			break;
		if (m < 0 && errno == EPIPE)
			return true;
		log_warn("splice to the client: %s", m < 0 ? strerror(errno) : "no data");
		peer->out_pipe = false;
		break;
	}
	int r = n > 0 ? queue_from_fd(peer, peer->stage[0], n) : 0;
	if (r < 0) {
		log_error("cannot finish a message to the client: %s", strerror(-r));
		return true;
	}
	return false;
}

int rpc_peer_send_splice(struct rpc_peer *peer, const char *head, size_t hlen, int fd, size_t len,
                         const char *tail, size_t tlen)
{
	if (peer->output_broken)
		return -EPIPE;
	if (!peer->out_pipe || peer->tap || rpc_peer_queued(peer))
		return -EAGAIN;
	/* The queue is empty: the header and head go through it, so that a
	 * short write leaves their rest queued like any message's. */
	int r = peer->lines ? 0 : frame_encode_header(&peer->out, hlen + len + tlen);
	if (r < 0 || (r = buf_append(&peer->out, head, hlen)) < 0) {
		buf_reset(&peer->out);
		return r;
	}
	size_t done = 0;
	bool broke = false, tail_sent = false;
	/* Staged: the header and head (one write, under PIPE_BUF: all or
	 * nothing into the empty stage), as much of the middle as the stage
	 * takes, the tail when all of it did; then all of it to the client. */
	if (peer->out.len < PIPE_BUF && stage_ready(peer) &&
	    write(peer->stage[1], peer->out.data, peer->out.len) == (ssize_t)peer->out.len) {
		size_t staged = peer->out.len;
		buf_reset(&peer->out);
		while (done < len) {
			ssize_t n =
			    splice(fd, NULL, peer->stage[1], NULL, len - done, SPLICE_F_NONBLOCK);
			if (n > 0) {
				done += (size_t)n;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			break; /* the stage is full: the rest goes the usual way */
		}
		staged += done;
		char end[PIPE_BUF];
		size_t elen = tlen + (peer->lines ? 1 : 0);
		if (done == len && elen <= sizeof(end)) {
			memcpy(end, tail, tlen);
			if (peer->lines)
				end[tlen] = '\n';
			/* Under PIPE_BUF: all or nothing, and nothing when the
			 * stage has no slot left (then it is queued below). */
			if (write(peer->stage[1], end, elen) == (ssize_t)elen) {
				staged += elen;
				tail_sent = true;
			}
		}
		broke = stage_flush(peer, staged);
	} else if (write_some(peer) < 0) {
		return -EPIPE; /* nothing taken from fd */
	}
	/* From here on the message is on the wire: it is finished whatever
	 * happens, so that the next one starts where the client expects. */
	while (!broke && done < len && !rpc_peer_queued(peer)) {
		ssize_t n = splice(fd, NULL, peer->out_fd, NULL, len - done,
		                   SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break; /* the client's pipe is full: the rest is queued */
		if (n < 0 && errno == EPIPE) {
			broke = true;
		} else {
			/* Not a pair of pipes splice can join after all: the
			 * queue finishes this message, and every later one. */
			log_warn("splice to the client: %s", n < 0 ? strerror(errno) : "no data");
			peer->out_pipe = false;
		}
		break;
	}
	if (done < len && (r = queue_from_fd(peer, fd, len - done)) < 0) {
		log_error("cannot finish a message to the client: %s", strerror(-r));
		broke = true;
	}
	if (!broke && !tail_sent &&
	    ((r = buf_append(&peer->out, tail, tlen)) < 0 ||
	     (peer->lines && (r = buf_append(&peer->out, "\n", 1)) < 0))) {
		log_error("cannot finish a message to the client: %s", strerror(-r));
		broke = true;
	}
	if (broke) {
		output_broke(peer);
		return 0; /* the bytes were taken; the end is reported later */
	}
	if (!peer->out_watched && write_some(peer) < 0)
		return 0;
	if (rpc_peer_queued(peer) > CEILING) {
		log_error("client has not read %zu bytes of replies: dropping the connection",
		          rpc_peer_queued(peer));
		output_broke(peer);
		return 0;
	}
	update_out_watch(peer);
	update_in_watch(peer);
	return 0;
}

size_t rpc_peer_queued(const struct rpc_peer *peer)
{
	return peer->out.len - peer->out_off;
}

bool rpc_peer_congested(const struct rpc_peer *peer)
{
	return rpc_peer_queued(peer) >= HIGH_WATER;
}

int rpc_peer_on_drain(struct rpc_peer *peer, void (*fn)(void *data), void *data)
{
	struct drain_waiter *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fn = fn;
	w->data = data;
	w->next = peer->waiters;
	peer->waiters = w;
	if (!peer->drain_timer && rpc_peer_queued(peer) < LOW_WATER)
		peer->drain_timer = loop_timer_start(peer->loop, 0, fire_drain, peer);
	return 0;
}

void rpc_peer_cancel_drain(struct rpc_peer *peer, void (*fn)(void *data), void *data)
{
	for (struct drain_waiter **pp = &peer->waiters; *pp;) {
		struct drain_waiter *w = *pp;
		if (w->fn == fn && w->data == data) {
			*pp = w->next;
			free(w);
		} else {
			pp = &w->next;
		}
	}
}

int rpc_peer_flush(struct rpc_peer *peer, int timeout_ms)
{
	uint64_t deadline = loop_now_ms() + (uint64_t)timeout_ms;
	while (rpc_peer_queued(peer) > 0 && !peer->output_broken) {
		if (write_some(peer) < 0)
			return -EPIPE;
		if (rpc_peer_queued(peer) == 0)
			break;
		uint64_t now = loop_now_ms();
		if (now >= deadline)
			return -ETIMEDOUT;
		struct pollfd p = {.fd = peer->out_fd, .events = POLLOUT};
		poll(&p, 1, (int)(deadline - now));
	}
	return peer->output_broken ? -EPIPE : 0;
}

void rpc_peer_use_lines(struct rpc_peer *peer)
{
	peer->lines = true;
}

void rpc_peer_set_tap(struct rpc_peer *peer, rpc_tap_fn fn, void *data)
{
	peer->tap = fn;
	peer->tap_data = data;
}
