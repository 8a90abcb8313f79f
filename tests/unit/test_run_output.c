/* test_run_output.c: the output relay's takes from a box's pipe
 * (sandbox/run/run_output.c), with a run that has no box, only its stdout
 * pipe, and a sink that records what it is asked and handed: the bytes
 * leave the program's pipe before they are checked, so that the program
 * writes on while the server checks (docs/performance-log.md, "Output,
 * unpinned"); one callback of the edge-triggered watch takes all there
 * is, however little room the sink has each time, and to the end of the
 * stream when the writer has gone; a pause is answered before anything
 * is taken; packets are never relayed. */
#include <sys/ioctl.h>

#include "core/buf.h"
#include "core/json.h"
#include "core/loop.h"
#include "sandbox/run/run_private.h"
#include "sandbox/state.h"
#include "unit.h"

static int box[2];       /* the program's stdout pipe: box[1] is its end */
static int sent[2];      /* where the sink's relay splices to */
static size_t room_each; /* what relay_room offers each time */
static bool pause_now;   /* relay_room answers RUN_PAUSE */
static size_t unread_at_check, checks, relayed, copied, rooms;

static size_t unread(int fd)
{
	int n = 0;
	ck_assert_int_eq(ioctl(fd, FIONREAD, &n), 0);
	return (size_t)n;
}

static size_t plain(const char *bytes, size_t len)
{
	/* The check: by now the program's pipe has been given back. */
	unread_at_check += unread(box[0]);
	checks++;
	return json_string_verbatim(bytes, len);
}

static size_t relay(void *data, struct run *run, enum run_stream stream, const char *text,
                    size_t len, int fd, enum run_flow *ret_flow)
{
	(void)data;
	(void)run;
	(void)stream;
	(void)text;
	*ret_flow = RUN_CONTINUE;
	for (size_t done = 0; done < len;) {
		ssize_t n = splice(fd, NULL, sent[1], NULL, len - done, 0);
		ck_assert_int_gt(n, 0);
		done += (size_t)n;
	}
	relayed += len;
	return len;
}

static size_t relay_room(void *data, struct run *run, enum run_flow *ret_flow)
{
	(void)data;
	(void)run;
	rooms++;
	if (pause_now)
		*ret_flow = RUN_PAUSE;
	return pause_now ? 0 : room_each;
}

static enum run_flow output(void *data, struct run *run, enum run_stream stream, const char *text,
                            size_t len)
{
	(void)data;
	(void)run;
	(void)stream;
	(void)text;
	copied += len;
	return RUN_CONTINUE;
}

static const struct run_sink sink = {
    .output = output, .plain = plain, .relay = relay, .relay_room = relay_room};

static struct sandbox sbx;
static struct run run;

static void setup_run(void)
{
	ck_assert_int_eq(pipe2(box, O_NONBLOCK), 0);
	ck_assert_int_eq(fcntl(box[1], F_SETPIPE_SZ, 256 << 10), 256 << 10);
	ck_assert_int_eq(pipe(sent), 0);
	ck_assert_int_eq(fcntl(sent[1], F_SETPIPE_SZ, 1 << 20), 1 << 20);
	memset(&sbx, 0, sizeof(sbx));
	sbx.relay_pipe[0] = sbx.relay_pipe[1] = sbx.relay_null = -1;
	sbx.relay_hold[0] = sbx.relay_hold[1] = -1;
	memset(&run, 0, sizeof(run));
	run.sbx = &sbx;
	run.loop = loop_new();
	run.sink = &sink;
	run.limits.output_bytes = 1 << 30;
	run.pending_stream = -1;
	buf_init(&run.pending, 8 * RUN_COALESCE_BYTES);
	run.box.fds[0] = box[0];
	run.box.fds[1] = -1;
	unread_at_check = checks = relayed = copied = rooms = 0;
	pause_now = false;
}

static void teardown_run(void)
{
	for (int i = 0; i < 2; i++) {
		close(sbx.relay_pipe[i]);
		close(sbx.relay_hold[i]);
		sbx_tail_free(&run.tail[i]);
		close(box[i]);
		close(sent[i]);
	}
	close(sbx.relay_null);
	buf_release(&run.pending);
	loop_free(run.loop);
}

static void fill(size_t n)
{
	static char x[256 << 10];
	memset(x, 'x', sizeof(x));
	ck_assert_uint_le(n, sizeof(x));
	ck_assert_int_eq(write(box[1], x, n), (ssize_t)n);
}

/* A full pipe, room for all of it: one take, checked after the pipe was
 * emptied, relayed whole. */
START_TEST(taken_before_the_check)
{
	setup_run();
	room_each = 1 << 20;
	fill(256 << 10);
	run_on_pipe(run.loop, box[0], LOOP_READ, &run);
	ck_assert_uint_eq(checks, 1);
	ck_assert_uint_eq(unread_at_check, 0);
	ck_assert_uint_eq(relayed, 256 << 10);
	ck_assert_uint_eq(unread(sent[0]), 256 << 10);
	ck_assert_uint_eq(unread(box[0]), 0);
	teardown_run();
}
END_TEST

/* Less room than the pipe holds: the watch is edge-triggered, so one
 * callback takes again until the pipe is empty (no later wake-up would
 * report what is left: the program is blocked on a full pipe). */
START_TEST(edge_takes_all_there_is)
{
	setup_run();
	room_each = 64 << 10;
	fill(200 << 10);
	run_on_pipe(run.loop, box[0], LOOP_READ, &run);
	ck_assert_uint_eq(unread(box[0]), 0);
	/* The last 8 KiB is too short for a message of its own: held, to
	 * be sent with what comes next or at the flush timer. */
	ck_assert_uint_eq(relayed, 192 << 10);
	ck_assert_uint_eq(copied + run.pending.len, 8 << 10);
	ck_assert_uint_eq(unread(sent[0]), relayed);
	/* Three checks: a take too short to be relayed is not scanned for
	 * it (nor tested for packets). */
	ck_assert_uint_eq(checks, 3);
	teardown_run();
}
END_TEST

/* The sink says pause: nothing is taken from the program's pipe. */
START_TEST(pause_takes_nothing)
{
	setup_run();
	room_each = 1 << 20;
	pause_now = true;
	fill(100 << 10);
	run_on_pipe(run.loop, box[0], LOOP_READ, &run);
	ck_assert(run.paused);
	ck_assert_uint_eq(rooms, 1);
	ck_assert_uint_eq(checks, 0);
	ck_assert_uint_eq(unread(box[0]), 100 << 10);
	teardown_run();
}
END_TEST

/* The program wrote and exited before the server looked: the one
 * wake-up says so (LOOP_HUP), and the callback takes the pipe to its end
 * (no wake-up comes after the writer's close). */
START_TEST(hup_reads_to_the_end)
{
	setup_run();
	room_each = 1 << 20;
	fill(100 << 10);
	close(box[1]);
	box[1] = -1;
	run_on_pipe(run.loop, box[0], LOOP_READ | LOOP_HUP, &run);
	ck_assert_int_eq(run.box.fds[0], -1); /* the end was read, the pipe closed */
	ck_assert_uint_eq(relayed, 100 << 10);
	box[0] = -1;
	teardown_run();
}
END_TEST

/* The program's end of the pipe in packet mode (O_DIRECT): from then on
 * each write is a buffer of its own, which the relay's splices would
 * carry to the client's pipe with its flag, where a read that ends inside
 * it drops the rest (run_output.c, relay_check). */
static void packet_mode(void)
{
	ck_assert_int_eq(fcntl(box[1], F_SETFL, fcntl(box[1], F_GETFL) | O_DIRECT), 0);
}

/* Packets all through: not relayed, copied whole (none lost). */
START_TEST(packets_not_relayed)
{
	setup_run();
	room_each = 1 << 20;
	packet_mode();
	for (int i = 0; i < 20; i++)
		fill(4000);
	run_on_pipe(run.loop, box[0], LOOP_READ, &run);
	ck_assert_uint_eq(unread(box[0]), 0);
	ck_assert_uint_eq(relayed, 0);
	ck_assert_uint_eq(copied + run.pending.len, 80000);
	teardown_run();
}
END_TEST

/* One packet, the last buffer of a take (a read of the take alone would
 * end with it and not tell): not relayed either. */
START_TEST(last_packet_not_relayed)
{
	setup_run();
	room_each = 1 << 20;
	fill(64 << 10);
	packet_mode();
	fill(100);
	run_on_pipe(run.loop, box[0], LOOP_READ, &run);
	ck_assert_uint_eq(unread(box[0]), 0);
	ck_assert_uint_eq(relayed, 0);
	ck_assert_uint_eq(copied + run.pending.len, (64 << 10) + 100);
	teardown_run();
}
END_TEST

/* Packets read the usual way (no room to relay): one read takes one, so
 * one callback reads on while the pipe holds more (a writer blocked on
 * the full pipe wakes nobody until it finds it empty). */
START_TEST(packets_read_to_the_end)
{
	setup_run();
	room_each = 0;
	packet_mode();
	for (int i = 0; i < 10; i++)
		fill(1000);
	run_on_pipe(run.loop, box[0], LOOP_READ, &run);
	ck_assert_uint_eq(unread(box[0]), 0);
	ck_assert_uint_eq(relayed, 0);
	ck_assert_uint_eq(copied + run.pending.len, 10000);
	teardown_run();
}
END_TEST

static Suite *run_output_suite(void)
{
	Suite *s = suite_create("run_output");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, taken_before_the_check);
	tcase_add_test(tc, edge_takes_all_there_is);
	tcase_add_test(tc, pause_takes_nothing);
	tcase_add_test(tc, hup_reads_to_the_end);
	tcase_add_test(tc, packets_not_relayed);
	tcase_add_test(tc, last_packet_not_relayed);
	tcase_add_test(tc, packets_read_to_the_end);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(run_output_suite)
