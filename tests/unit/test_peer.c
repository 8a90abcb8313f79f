/* test_peer.c: the client connection (rpc/peer.c) through the real loop:
 * messages and bad input from a pipe or a regular file, end of input,
 * backpressure (congested past the high-water mark, drain callback below
 * the low one, nothing dropped, input paused meanwhile), the ceiling, a
 * broken output reported from the loop and never from inside a send,
 * flush, and splices (a message's middle moved from another pipe: whole,
 * in one piece that wakes the client once, in order, finished through
 * the queue when the client's pipe fills,
 * refused untouched where they cannot be used). */
#include "rpc/peer.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "core/buf.h"
#include "core/json.h"
#include "core/loop.h"
#include "rpc/message.h"
#include "unit.h"

static struct loop *loop;
static struct rpc_peer *peer;
static int nmsg, nbad, nclosed, last_code;
static char last_msg[256];

static void on_message(void *data, json_object *msg)
{
	(void)data;
	nmsg++;
	snprintf(last_msg, sizeof(last_msg), "%s", msg ? json_compact(msg) : "null");
}
static void on_bad(void *data, int code, const char *detail)
{
	(void)data;
	ck_assert(detail && detail[0]);
	nbad++;
	last_code = code;
}
static void on_closed(void *data)
{
	(void)data;
	nclosed++;
	loop_stop(loop, 0);
}
static const struct rpc_peer_ops ops = {on_message, on_bad, on_closed};

static void give_up(struct loop *l, void *data)
{
	(void)data;
	loop_stop(l, 99);
}

static void setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	loop = loop_new();
	nmsg = nbad = nclosed = last_code = 0;
	last_msg[0] = '\0';
	loop_timer_start(loop, 5000, give_up, NULL);
}

static void teardown(void)
{
	rpc_peer_free(peer);
	peer = NULL;
	loop_free(loop);
}

/* Good messages between every kind of bad input. */
static char *make_input(size_t *ret_len)
{
	struct buf b;
	buf_init(&b, 1 << 20);
	buf_printf(&b, "Content-Length: 17\r\n\r\n{\"jsonrpc\":\"2.0\"}");
	buf_printf(&b, "Content-Length: 5\r\n\r\n{\"a\":"); /* not JSON: -32700 */
	buf_printf(&b, "Content-Length: 1001\r\n\r\n");     /* over the cap: -32600 */
	for (int i = 0; i < 1001; i++)
		buf_append(&b, "x", 1);
	buf_printf(&b, "Content-Length: 4\r\n\r\nnull"); /* JSON null is a message */
	buf_printf(&b, "Content-Length: x\r\n\r\n{}");   /* bad length: -32700 */
	buf_printf(&b, "Content-Length: 7\r\n\r\n[1,2,3]");
	buf_printf(&b, "Content-Length: 10\r\n\r\n{\"cut\":"); /* eof: logged only */
	return buf_steal(&b, ret_len);
}

static void check_input_result(void)
{
	ck_assert_int_eq(nmsg, 3);
	ck_assert_str_eq(last_msg, "[1,2,3]");
	ck_assert_int_eq(nbad, 3);
	ck_assert_int_eq(nclosed, 1);
}

START_TEST(reads_a_pipe)
{
	int in[2], out[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	peer = rpc_peer_new(loop, in[0], out[1], 1000, &ops, NULL);
	ck_assert_ptr_nonnull(peer);
	/* Write the bytes in small pieces so messages straddle reads. */
	size_t len;
	char *input = make_input(&len);
	for (size_t i = 0; i < len; i += 7) {
		size_t n = len - i < 7 ? len - i : 7;
		ck_assert_int_eq(write(in[1], input + i, n), (ssize_t)n);
	}
	free(input);
	close(in[1]);
	ck_assert_int_eq(loop_run(loop), 0);
	check_input_result();
	rpc_peer_free(peer);
	peer = NULL;
	/* The fds' flags are restored: blocking again. */
	ck_assert_int_eq(fcntl(in[0], F_GETFL) & O_NONBLOCK, 0);
	close(in[0]);
	close(out[0]);
	close(out[1]);
}
END_TEST

/* kiln < file: epoll refuses a regular file; the peer polls it instead. */
START_TEST(reads_a_regular_file)
{
	FILE *f = tmpfile();
	size_t len;
	char *input = make_input(&len);
	fwrite(input, 1, len, f);
	free(input);
	rewind(f);
	int out[2];
	ck_assert_int_eq(pipe(out), 0);
	peer = rpc_peer_new(loop, fileno(f), out[1], 1000, &ops, NULL);
	ck_assert_ptr_nonnull(peer);
	ck_assert_int_eq(loop_run(loop), 0);
	check_input_result();
	fclose(f);
	close(out[0]);
	close(out[1]);
}
END_TEST

static int drained;
static void on_drain(void *data)
{
	ck_assert_ptr_eq(data, &drained);
	drained++;
	loop_stop(loop, 5);
}

static int client_fd;
static size_t client_bytes;
static struct loop_timer *reader;
static void client_reads(struct loop *l, void *data)
{
	(void)data;
	char chunk[65536];
	ssize_t n;
	while ((n = read(client_fd, chunk, sizeof(chunk))) > 0)
		client_bytes += (size_t)n;
	reader = loop_timer_start(l, 1, client_reads, NULL);
}

START_TEST(backpressure)
{
	int in[2], sv[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	peer = rpc_peer_new(loop, in[0], sv[0], 1000, &ops, NULL);
	client_fd = sv[1];
	client_bytes = 0;
	drained = 0;

	/* Nobody reads: queue ~64 KiB notifications until congested. */
	json_object *params = json_object_new_object();
	char *text = malloc(65536);
	memset(text, 'x', 65535);
	text[65535] = '\0';
	json_object_object_add(params, "text", json_object_new_string(text));
	free(text);
	json_object *note = rpc_notification_new("run/output", params);
	size_t one = strlen(json_compact(note));
	int sent = 0;
	while (!rpc_peer_congested(peer)) {
		ck_assert_int_eq(rpc_peer_send(peer, note), 0);
		sent++;
		ck_assert_int_lt(sent, 1000);
	}
	ck_assert_uint_ge(rpc_peer_queued(peer), 8u << 20);
	/* Replies still queue when congested: they are never dropped. */
	ck_assert_int_eq(rpc_peer_send(peer, note), 0);
	sent++;
	ck_assert(rpc_peer_congested(peer));
	/* Nobody reading: a bounded flush gives up. */
	ck_assert_int_eq(rpc_peer_flush(peer, 50), -ETIMEDOUT);

	/* Now the client reads; the drain callback fires once the queue
	 * falls below the low-water mark. */
	ck_assert_int_eq(rpc_peer_on_drain(peer, on_drain, &drained), 0);
	/* A cancelled waiter is not called. */
	ck_assert_int_eq(rpc_peer_on_drain(peer, on_drain, NULL), 0);
	rpc_peer_cancel_drain(peer, on_drain, NULL);
	fcntl(client_fd, F_SETFL, O_NONBLOCK);
	reader = loop_timer_start(loop, 1, client_reads, NULL);
	ck_assert_int_eq(loop_run(loop), 5);
	ck_assert_int_eq(drained, 1);
	ck_assert(!rpc_peer_congested(peer));
	ck_assert_uint_lt(rpc_peer_queued(peer), 1u << 20);
	loop_timer_stop(loop, reader);
	/* Everything arrives: flush the rest and count the bytes. */
	while (rpc_peer_queued(peer) > 0) {
		client_reads(loop, NULL);
		loop_timer_stop(loop, reader);
		rpc_peer_flush(peer, 10);
	}
	client_reads(loop, NULL);
	loop_timer_stop(loop, reader);
	char header[64];
	snprintf(header, sizeof(header), "Content-Length: %zu\r\n\r\n", one);
	ck_assert_uint_eq(client_bytes, (size_t)sent * (one + strlen(header)));
	json_object_put(note);
	close(in[0]);
	close(in[1]);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* Already below the low-water mark: the callback comes next turn. */
START_TEST(drain_when_idle)
{
	int in[2], out[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	peer = rpc_peer_new(loop, in[0], out[1], 1000, &ops, NULL);
	drained = 0;
	ck_assert_int_eq(rpc_peer_on_drain(peer, on_drain, &drained), 0);
	ck_assert_int_eq(drained, 0);
	ck_assert_int_eq(loop_run(loop), 5);
	ck_assert_int_eq(drained, 1);
	close(in[0]);
	close(in[1]);
	close(out[0]);
	close(out[1]);
}
END_TEST

START_TEST(broken_output)
{
	int in[2], out[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	peer = rpc_peer_new(loop, in[0], out[1], 1000, &ops, NULL);
	close(out[0]); /* the client went away */
	json_object *n = rpc_notification_new("x", NULL);
	ck_assert_int_eq(rpc_peer_send(peer, n), -EPIPE);
	/* A send never calls back into its caller (which may be a run
	 * flushing its output, freed by the callback): closed comes from
	 * the loop. */
	ck_assert_int_eq(nclosed, 0);
	ck_assert_int_eq(rpc_peer_send(peer, n), -EPIPE);
	ck_assert_int_eq(rpc_peer_flush(peer, 10), -EPIPE);
	ck_assert_int_eq(nclosed, 0);
	ck_assert_int_eq(loop_run(loop), 0);
	/* Once, however many sends failed. */
	ck_assert_int_eq(nclosed, 1);
	json_object_put(n);
	close(in[0]);
	close(in[1]);
	close(out[1]);
}
END_TEST

static json_object *big_note(void)
{
	json_object *params = json_object_new_object();
	char *text = malloc(65536);
	memset(text, 'x', 65535);
	text[65535] = '\0';
	json_object_object_add(params, "text", json_object_new_string(text));
	free(text);
	return rpc_notification_new("run/output", params);
}

static int input_fd;
/* 200 ms after the request was written: nothing was read while congested.
 * Now the client reads its replies and closes its end of the input. */
static void start_reading(struct loop *l, void *data)
{
	(void)data;
	ck_assert_int_eq(nmsg, 0);
	ck_assert(rpc_peer_congested(peer));
	fcntl(client_fd, F_SETFL, O_NONBLOCK);
	reader = loop_timer_start(l, 1, client_reads, NULL);
	close(input_fd);
}

/* A client that writes and never reads: past the high-water mark the peer
 * reads no more input (each request would add a reply), and reads again
 * once the client has drained the queue. */
START_TEST(input_paused_while_congested)
{
	int in[2], sv[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	peer = rpc_peer_new(loop, in[0], sv[0], 1000, &ops, NULL);
	client_fd = sv[1];
	client_bytes = 0;
	json_object *note = big_note();
	while (!rpc_peer_congested(peer))
		ck_assert_int_eq(rpc_peer_send(peer, note), 0);
	json_object_put(note);
	const char msg[] = "Content-Length: 2\r\n\r\n{}";
	ck_assert_int_eq(write(in[1], msg, sizeof(msg) - 1), (ssize_t)sizeof(msg) - 1);
	input_fd = in[1];
	loop_timer_start(loop, 200, start_reading, NULL);
	/* Below the low-water mark input resumes: the message is read, then
	 * the end of input stops the loop. */
	ck_assert_int_eq(loop_run(loop), 0);
	loop_timer_stop(loop, reader);
	ck_assert_int_eq(nmsg, 1);
	ck_assert_int_eq(nclosed, 1);
	ck_assert(!rpc_peer_congested(peer));
	close(in[0]);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

static uint64_t cpu_ms(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

static uint64_t cpu_at_start;
static void measure_idle(struct loop *l, void *data)
{
	(void)data;
	/* 400 ms of a paused peer whose input hung up: epoll reports a
	 * hang-up whatever events were asked for, so a peer that only
	 * silenced its input fd would spin here at full CPU. Idle is a few
	 * ms; the bound is far from both. */
	ck_assert_uint_lt(cpu_ms() - cpu_at_start, 100);
	ck_assert_int_eq(nclosed, 0);
	loop_stop(l, 8);
}

/* The client closes its end while its input is paused: no busy loop. */
START_TEST(paused_input_hangs_up)
{
	int in[2], sv[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	peer = rpc_peer_new(loop, in[0], sv[0], 1000, &ops, NULL);
	json_object *note = big_note();
	while (!rpc_peer_congested(peer))
		ck_assert_int_eq(rpc_peer_send(peer, note), 0);
	json_object_put(note);
	close(in[1]);
	cpu_at_start = cpu_ms();
	loop_timer_start(loop, 400, measure_idle, NULL);
	ck_assert_int_eq(loop_run(loop), 8);
	close(in[0]);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* Past the ceiling (64 MiB unread) the connection is broken: the queue is
 * freed and the closed callback comes from the loop. */
START_TEST(ceiling)
{
	int in[2], sv[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	peer = rpc_peer_new(loop, in[0], sv[0], 1000, &ops, NULL);
	json_object *note = big_note();
	int sent = 0, r;
	while ((r = rpc_peer_send(peer, note)) == 0) {
		sent++;
		ck_assert_int_lt(sent, 2000);
	}
	json_object_put(note);
	ck_assert_int_eq(r, -EPIPE);
	ck_assert_int_gt(sent, (64 << 20) / 65536 - 8);
	ck_assert_uint_eq(rpc_peer_queued(peer), 0);
	ck_assert_int_eq(nclosed, 0);
	ck_assert_int_eq(loop_run(loop), 0);
	ck_assert_int_eq(nclosed, 1);
	close(in[0]);
	close(in[1]);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

static int taps_in, taps_out;
static void tap(void *data, bool outgoing, const char *json, size_t len)
{
	(void)data;
	ck_assert_uint_eq(strlen(json), len);
	if (outgoing)
		taps_out++;
	else
		taps_in++;
}

START_TEST(tap_sees_both_ways)
{
	int in[2], out[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	peer = rpc_peer_new(loop, in[0], out[1], 1000, &ops, NULL);
	taps_in = taps_out = 0;
	rpc_peer_set_tap(peer, tap, NULL);
	const char msg[] = "Content-Length: 2\r\n\r\n{}";
	ck_assert_int_eq(write(in[1], msg, sizeof(msg) - 1), (ssize_t)sizeof(msg) - 1);
	close(in[1]);
	ck_assert_int_eq(loop_run(loop), 0);
	json_object *n = rpc_notification_new("x", NULL);
	ck_assert_int_eq(rpc_peer_send(peer, n), 0);
	json_object_put(n);
	ck_assert_int_eq(taps_in, 1);
	ck_assert_int_eq(taps_out, 1);
	struct unit_frames f = {0};
	unit_read_frames(out[0], 100, &f);
	ck_assert_int_eq(f.nmsgs, 1);
	unit_frames_release(&f);
	close(in[0]);
	close(out[0]);
	close(out[1]);
}
END_TEST

/* A client that sends its next request only after the previous one is in
 * (here from a timer, so never while the peer is still reading): every
 * message arrives whatever the peer does between them, through bodies
 * large enough to be parsed as they stream and bodies that are not JSON
 * (one parser kept from message to message, reset each time); and after
 * a few reads that found nothing, the peer stops trying a read(2) right
 * after each message only to hear EAGAIN. */
enum { TRICKLE_N = 100, TRICKLE_BIG = 50, TRICKLE_BAD = 60 };
static int trickle_fd, trickle_sent, trickle_timers;

static void trickle_send(struct loop *l, void *data)
{
	(void)l;
	(void)data;
	trickle_timers++;
	int k = trickle_sent++;
	struct buf b;
	buf_init(&b, 1 << 20);
	struct buf body;
	buf_init(&body, 1 << 20);
	if (k == TRICKLE_BIG) {
		buf_printf(&body, "{\"n\":%d,\"big\":\"", k);
		for (int i = 0; i < 70000; i++)
			buf_append(&body, "y", 1);
		buf_append(&body, "\"}", 2);
	} else if (k == TRICKLE_BAD) {
		buf_printf(&body, "{\"n\":[");
	} else {
		buf_printf(&body, "{\"n\":%d}", k);
	}
	buf_printf(&b, "Content-Length: %zu\r\n\r\n", body.len);
	buf_append(&b, body.data, body.len);
	buf_release(&body);
	for (size_t off = 0; off < b.len;) {
		ssize_t w = write(trickle_fd, b.data + off, b.len - off);
		ck_assert_int_gt(w, 0);
		off += (size_t)w;
	}
	buf_release(&b);
	if (trickle_sent == TRICKLE_N)
		close(trickle_fd);
}

static void trickle_next(void *data, json_object *msg)
{
	on_message(data, msg);
	json_object *n = json_get(msg, "n");
	ck_assert_int_eq(json_object_get_int(n), trickle_sent - 1);
	if (trickle_sent < TRICKLE_N)
		loop_timer_start(loop, 0, trickle_send, NULL);
}

static void trickle_bad(void *data, int code, const char *detail)
{
	on_bad(data, code, detail);
	ck_assert_int_eq(trickle_sent - 1, TRICKLE_BAD);
	loop_timer_start(loop, 0, trickle_send, NULL);
}

/* read(2) calls this process has made (the kernel's count). */
static long reads_made(void)
{
	FILE *f = fopen("/proc/self/io", "r");
	char line[128];
	long n = -1;
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "syscr: %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

START_TEST(one_request_at_a_time)
{
	static const struct rpc_peer_ops trickle_ops = {trickle_next, trickle_bad, on_closed};
	int in[2], out[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	peer = rpc_peer_new(loop, in[0], out[1], 1 << 20, &trickle_ops, NULL);
	ck_assert_ptr_nonnull(peer);
	/* Room for the big body: it is written from the loop's own thread. */
	ck_assert_int_ge(fcntl(in[1], F_SETPIPE_SZ, 1 << 20), 1 << 17);
	trickle_fd = in[1];
	trickle_sent = trickle_timers = 0;
	loop_timer_start(loop, 0, trickle_send, NULL);
	long r0 = reads_made();
	ck_assert_int_eq(loop_run(loop), 0);
	long reads = reads_made() - r0;
	ck_assert_int_eq(nmsg, TRICKLE_N - 1);
	ck_assert_int_eq(nbad, 1);
	ck_assert_int_eq(last_code, RPC_PARSE_ERROR);
	ck_assert_str_eq(last_msg, "{\"n\":99}");
	ck_assert_int_eq(nclosed, 1);
	/* Each timer that fired read its timerfd once; the peer read each
	 * message (the big one in a few reads) and then, at first, once more
	 * for nothing: 16 times in a row, then every 8th time. Reading again
	 * after every message would be 2 reads a message. */
	long peer_reads = reads - trickle_timers;
	ck_assert_msg(peer_reads >= TRICKLE_N && peer_reads < TRICKLE_N * 3 / 2,
	              "%ld reads for %d messages", peer_reads, TRICKLE_N);
	rpc_peer_free(peer);
	peer = NULL;
	close(in[0]);
	close(out[0]);
	close(out[1]);
}
END_TEST

/* --- splice: a message's middle moved from another pipe ------------------ */

/* A pipe holding n bytes of a pattern (no byte needing a JSON escape),
 * then "END". */
static void fill_source(int src[2], size_t n)
{
	ck_assert_int_eq(pipe(src), 0);
	ck_assert_int_ge(fcntl(src[1], F_SETPIPE_SZ, 1 << 20), (int)(n + 3));
	char *b = malloc(n + 3);
	for (size_t i = 0; i < n; i++)
		b[i] = (char)('a' + i % 26);
	memcpy(b + n, "END", 3);
	ck_assert_int_eq(write(src[1], b, n + 3), (ssize_t)(n + 3));
	free(b);
	fcntl(src[0], F_SETFL, O_NONBLOCK);
}

/* The rest of a source pipe is exactly "END": the splice took n bytes. */
static void source_left_end(int fd)
{
	char rest[8];
	ck_assert_int_eq(read(fd, rest, sizeof(rest)), 3);
	ck_assert(memcmp(rest, "END", 3) == 0);
}

/* Read all there is from fd (non-blocking) onto b. */
static void read_all(int fd, struct buf *b)
{
	char chunk[65536];
	ssize_t n;
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		buf_append(b, chunk, (size_t)n);
}

/* Whether b from off holds the message head, the n pattern bytes, tail. */
static size_t expect_spliced(const struct buf *b, size_t off, const char *head, size_t n,
                             const char *tail)
{
	char hdr[64];
	snprintf(hdr, sizeof(hdr), "Content-Length: %zu\r\n\r\n", strlen(head) + n + strlen(tail));
	size_t h = strlen(hdr), hl = strlen(head), tl = strlen(tail);
	ck_assert_uint_ge(b->len, off + h + hl + n + tl);
	ck_assert(memcmp(b->data + off, hdr, h) == 0);
	ck_assert(memcmp(b->data + off + h, head, hl) == 0);
	for (size_t i = 0; i < n; i++)
		if (b->data[off + h + hl + i] != (char)('a' + i % 26))
			ck_abort_msg("byte %zu of the spliced middle is wrong", i);
	ck_assert(memcmp(b->data + off + h + hl + n, tail, tl) == 0);
	return off + h + hl + n + tl;
}

/* SIGIO-style notices of the client's pipe (F_SETSIG: queued, one per
 * event): the kernel sends one each time data lands in the pipe, when
 * it would wake a reader blocked there. */
static volatile sig_atomic_t notices;
static void on_notice(int sig)
{
	notices += sig == SIGRTMIN;
}

/* The message lands in the client's pipe at once, in one piece (staged,
 * then moved with one splice): a client waiting in read() is woken once
 * for it (the pipe's SIGIO notices count the wake-ups), not for the
 * header and head, the middle and the tail in turn. */
START_TEST(splice_whole)
{
	int in[2], out[2], src[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	fill_source(src, 1000);
	ck_assert_int_eq(signal(SIGRTMIN, on_notice) == SIG_ERR, 0);
	ck_assert_int_eq(fcntl(out[0], F_SETOWN, getpid()) | fcntl(out[0], F_SETSIG, SIGRTMIN) |
	                     fcntl(out[0], F_SETFL, O_ASYNC),
	                 0);
	peer = rpc_peer_new(loop, in[0], out[1], 1000, &ops, NULL);
	ck_assert(rpc_peer_can_splice(peer));
	ck_assert_uint_ge(rpc_peer_splice_room(peer), 4096);
	notices = 0;
	ck_assert_int_eq(rpc_peer_send_splice(peer, "{\"t\":\"", 6, src[0], 1000, "\"}", 2), 0);
	ck_assert_int_eq(notices, 1);
	ck_assert_uint_eq(rpc_peer_queued(peer), 0);
	source_left_end(src[0]);
	/* The next message follows it, whole. */
	json_object *n = rpc_notification_new("x", NULL);
	ck_assert_int_eq(rpc_peer_send(peer, n), 0);
	json_object_put(n);
	struct buf b;
	buf_init(&b, 1 << 20);
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	read_all(out[0], &b);
	size_t end = expect_spliced(&b, 0, "{\"t\":\"", 1000, "\"}");
	const char *next = "Content-Length: 30\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}";
	ck_assert_uint_eq(b.len, end + strlen(next));
	ck_assert(memcmp(b.data + end, next, strlen(next)) == 0);
	buf_release(&b);
	close(in[0]);
	close(in[1]);
	close(out[0]);
	close(out[1]);
	close(src[0]);
	close(src[1]);
}
END_TEST

static struct buf client_got;
static void client_collects(struct loop *l, void *data)
{
	(void)data;
	read_all(client_fd, &client_got);
	reader = loop_timer_start(l, 1, client_collects, NULL);
}
static void stop_when_flushed(struct loop *l, void *data)
{
	(void)data;
	if (rpc_peer_queued(peer) == 0)
		loop_stop(l, 7);
	else
		loop_timer_start(l, 1, stop_when_flushed, NULL);
}

/* The client's pipe fills in the middle of the message: the rest of the
 * middle is read from the source into the queue, the message is still
 * whole and in order, later messages queue behind it, and no splice
 * passes a queue. */
START_TEST(splice_client_full)
{
	int in[2], out[2], src[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	ck_assert_int_eq(fcntl(out[1], F_SETPIPE_SZ, 16384), 16384);
	/* What the client has not read yet takes most of its pipe. */
	char pre[10000];
	memset(pre, 'P', sizeof(pre));
	ck_assert_int_eq(write(out[1], pre, sizeof(pre)), (ssize_t)sizeof(pre));
	fill_source(src, 100000);
	peer = rpc_peer_new(loop, in[0], out[1], 1000, &ops, NULL);
	ck_assert_uint_le(rpc_peer_splice_room(peer), 16384 - sizeof(pre));
	ck_assert_int_eq(rpc_peer_send_splice(peer, "{\"t\":\"", 6, src[0], 100000, "\"}", 2), 0);
	source_left_end(src[0]);
	ck_assert_uint_gt(rpc_peer_queued(peer), 0);
	/* Something is queued: no room, and a splice is refused untouched. */
	ck_assert_uint_eq(rpc_peer_splice_room(peer), 0);
	int src2[2];
	fill_source(src2, 100);
	ck_assert_int_eq(rpc_peer_send_splice(peer, "{", 1, src2[0], 100, "}", 1), -EAGAIN);
	json_object *n = rpc_notification_new("x", NULL);
	ck_assert_int_eq(rpc_peer_send(peer, n), 0);
	json_object_put(n);
	buf_init(&client_got, 1 << 22);
	client_fd = out[0];
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	reader = loop_timer_start(loop, 1, client_collects, NULL);
	loop_timer_start(loop, 1, stop_when_flushed, NULL);
	ck_assert_int_eq(loop_run(loop), 7);
	loop_timer_stop(loop, reader);
	read_all(out[0], &client_got);
	for (size_t i = 0; i < sizeof(pre); i++)
		ck_assert_int_eq(client_got.data[i], 'P');
	size_t end = expect_spliced(&client_got, sizeof(pre), "{\"t\":\"", 100000, "\"}");
	const char *next = "Content-Length: 30\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}";
	ck_assert_uint_eq(client_got.len, end + strlen(next));
	ck_assert(memcmp(client_got.data + end, next, strlen(next)) == 0);
	/* The refused source still holds all it had. */
	char rest[200];
	ck_assert_int_eq(read(src2[0], rest, sizeof(rest)), 103);
	buf_release(&client_got);
	for (int i = 0; i < 2; i++) {
		close(in[i]);
		close(out[i]);
		close(src[i]);
		close(src2[i]);
	}
}
END_TEST

static int roomed, client_read;
static void on_room(void *data)
{
	ck_assert_ptr_eq(data, &roomed);
	/* Not before the client read. */
	ck_assert_int_eq(client_read, 1);
	roomed++;
	loop_stop(loop, 8);
}
static void client_reads_once(struct loop *l, void *data)
{
	(void)l;
	(void)data;
	char chunk[65536];
	ck_assert_int_gt(read(client_fd, chunk, sizeof(chunk)), 0);
	client_read = 1;
}

/* A full client pipe has no room; the room callback comes when the
 * client reads, not before; a cancelled one never. */
START_TEST(splice_room_when_read)
{
	int in[2], out[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	ck_assert_int_eq(fcntl(out[1], F_SETPIPE_SZ, 16384), 16384);
	fcntl(out[1], F_SETFL, O_NONBLOCK);
	char fill[4096];
	memset(fill, 'F', sizeof(fill));
	while (write(out[1], fill, sizeof(fill)) > 0)
		;
	peer = rpc_peer_new(loop, in[0], out[1], 1000, &ops, NULL);
	ck_assert(rpc_peer_can_splice(peer));
	ck_assert_uint_eq(rpc_peer_splice_room(peer), 0);
	roomed = client_read = 0;
	ck_assert_int_eq(rpc_peer_on_room(peer, on_room, &roomed), 0);
	ck_assert_int_eq(rpc_peer_on_room(peer, on_room, NULL), 0);
	rpc_peer_cancel_room(peer, on_room, NULL);
	client_fd = out[0];
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	loop_timer_start(loop, 30, client_reads_once, NULL);
	ck_assert_int_eq(loop_run(loop), 8);
	ck_assert_int_eq(roomed, 1);
	ck_assert_uint_gt(rpc_peer_splice_room(peer), 0);
	close(in[0]);
	close(in[1]);
	close(out[0]);
	close(out[1]);
}
END_TEST

/* The client closes its end while the output waits for room: the output
 * is broken (the closed callback, from the loop), the waiter never called;
 * no wait that ends at once, again and again. */
START_TEST(splice_room_reader_gone)
{
	int in[2], out[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	ck_assert_int_eq(fcntl(out[1], F_SETPIPE_SZ, 16384), 16384);
	fcntl(out[1], F_SETFL, O_NONBLOCK);
	char fill[4096];
	memset(fill, 'F', sizeof(fill));
	while (write(out[1], fill, sizeof(fill)) > 0)
		;
	peer = rpc_peer_new(loop, in[0], out[1], 1000, &ops, NULL);
	roomed = client_read = 0;
	ck_assert_int_eq(rpc_peer_on_room(peer, on_room, &roomed), 0);
	close(out[0]);
	ck_assert_int_eq(loop_run(loop), 0);
	ck_assert_int_eq(nclosed, 1);
	ck_assert_int_eq(roomed, 0);
	ck_assert(!rpc_peer_can_splice(peer));
	close(in[0]);
	close(in[1]);
	close(out[1]);
}
END_TEST

/* Where a splice cannot be used (not a pipe, a tap, a broken output)
 * nothing is written and nothing taken from the source. */
START_TEST(splice_refused)
{
	int in[2], sv[2], src[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fill_source(src, 50);
	peer = rpc_peer_new(loop, in[0], sv[0], 1000, &ops, NULL);
	ck_assert(!rpc_peer_can_splice(peer));
	ck_assert_uint_eq(rpc_peer_splice_room(peer), 0);
	ck_assert_int_eq(rpc_peer_send_splice(peer, "{", 1, src[0], 50, "}", 1), -EAGAIN);
	rpc_peer_free(peer);

	int out[2];
	ck_assert_int_eq(pipe(out), 0);
	peer = rpc_peer_new(loop, in[0], out[1], 1000, &ops, NULL);
	rpc_peer_set_tap(peer, tap, NULL);
	ck_assert(!rpc_peer_can_splice(peer));
	ck_assert_int_eq(rpc_peer_send_splice(peer, "{", 1, src[0], 50, "}", 1), -EAGAIN);
	rpc_peer_set_tap(peer, NULL, NULL);
	close(out[0]); /* the client went away */
	ck_assert_int_eq(rpc_peer_send_splice(peer, "{", 1, src[0], 50, "}", 1), -EPIPE);
	ck_assert_int_eq(nclosed, 0); /* from the loop, later */
	ck_assert_int_eq(loop_run(loop), 0);
	ck_assert_int_eq(nclosed, 1);
	char rest[100];
	ck_assert_int_eq(read(src[0], rest, sizeof(rest)), 53);
	close(in[0]);
	close(in[1]);
	close(sv[0]);
	close(sv[1]);
	close(out[1]);
	close(src[0]);
	close(src[1]);
}
END_TEST

/* MCP's framing: no header, a newline after the message. */
START_TEST(splice_lines)
{
	int in[2], out[2], src[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	fill_source(src, 300);
	peer = rpc_peer_new(loop, in[0], out[1], 1000, &ops, NULL);
	rpc_peer_use_lines(peer);
	ck_assert_int_eq(rpc_peer_send_splice(peer, "[\"", 2, src[0], 300, "\"]", 2), 0);
	source_left_end(src[0]);
	char got[400];
	ck_assert_int_eq(read(out[0], got, sizeof(got)), 305);
	ck_assert(memcmp(got, "[\"", 2) == 0);
	for (int i = 0; i < 300; i++)
		ck_assert_int_eq(got[2 + i], 'a' + i % 26);
	ck_assert(memcmp(got + 302, "\"]\n", 3) == 0);
	for (int i = 0; i < 2; i++) {
		close(in[i]);
		close(out[i]);
		close(src[i]);
	}
}
END_TEST

static Suite *peer_suite(void)
{
	Suite *s = suite_create("peer");
	TCase *tc = tcase_create("peer");
	tcase_set_timeout(tc, 20);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, reads_a_pipe);
	tcase_add_test(tc, reads_a_regular_file);
	tcase_add_test(tc, backpressure);
	tcase_add_test(tc, drain_when_idle);
	tcase_add_test(tc, broken_output);
	tcase_add_test(tc, input_paused_while_congested);
	tcase_add_test(tc, paused_input_hangs_up);
	tcase_add_test(tc, ceiling);
	tcase_add_test(tc, tap_sees_both_ways);
	tcase_add_test(tc, one_request_at_a_time);
	tcase_add_test(tc, splice_whole);
	tcase_add_test(tc, splice_client_full);
	tcase_add_test(tc, splice_room_when_read);
	tcase_add_test(tc, splice_room_reader_gone);
	tcase_add_test(tc, splice_refused);
	tcase_add_test(tc, splice_lines);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(peer_suite)
