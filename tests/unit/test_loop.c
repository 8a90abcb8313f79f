/* test_loop.c: the event loop (core/loop.c): fd watches, one-shot timers
 * in deadline order, a 0 ms timer that waits for pending fd events,
 * unwatching an fd whose event is already collected, edge-triggered
 * watches, signals through signalfd, and loop_stop's exit code. */
#include "core/loop.h"

#include <signal.h>

#include "unit.h"

static char trace[256];

static void mark(const char *s)
{
	strncat(trace, s, sizeof(trace) - strlen(trace) - 1);
}

static void stop_timer(struct loop *loop, void *data)
{
	(void)data;
	mark("S");
	loop_stop(loop, 7);
}

static void mark_timer(struct loop *loop, void *data)
{
	(void)loop;
	mark(data);
}

START_TEST(timers_fire_in_deadline_order)
{
	struct loop *loop = loop_new();
	trace[0] = '\0';
	/* Before the timers start: a deadline is never earlier than asked. */
	uint64_t t0 = loop_now_ms();
	loop_timer_start(loop, 30, mark_timer, "c");
	loop_timer_start(loop, 10, mark_timer, "a");
	loop_timer_start(loop, 20, mark_timer, "b");
	struct loop_timer *t = loop_timer_start(loop, 15, mark_timer, "X");
	loop_timer_start(loop, 10, mark_timer, "a2"); /* ties: start order */
	loop_timer_start(loop, 40, stop_timer, NULL);
	loop_timer_stop(loop, t);
	loop_timer_stop(loop, NULL);
	ck_assert_int_eq(loop_run(loop), 7);
	ck_assert_str_eq(trace, "aa2bcS");
	ck_assert_uint_ge(loop_now_ms() - t0, 40);
	ck_assert(loop_stopping(loop));
	loop_free(loop);
}
END_TEST

/* Timers still pending at loop_free are freed (ASan checks the leak). */
START_TEST(free_with_pending_timers)
{
	struct loop *loop = loop_new();
	loop_timer_start(loop, 100000, mark_timer, "never");
	loop_timer_start(loop, 0, mark_timer, "never");
	loop_free(loop);
}
END_TEST

static int pipe_a[2], pipe_b[2];

static void on_read_a(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)data;
	char c;
	ck_assert(events & LOOP_READ);
	ck_assert_int_eq(read(fd, &c, 1), 1);
	mark("A");
	/* b's event was collected in the same epoll_wait: it must not fire. */
	loop_unwatch(loop, pipe_b[0]);
	loop_timer_start(loop, 0, stop_timer, NULL);
}

static void on_read_b(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)data;
	char c;
	ck_assert(events & LOOP_READ);
	ck_assert_int_eq(read(fd, &c, 1), 1);
	mark("B");
	loop_unwatch(loop, pipe_a[0]);
	loop_timer_start(loop, 0, stop_timer, NULL);
}

START_TEST(unwatch_pending_event)
{
	struct loop *loop = loop_new();
	trace[0] = '\0';
	ck_assert_int_eq(pipe(pipe_a), 0);
	ck_assert_int_eq(pipe(pipe_b), 0);
	/* Both fds are ready before the loop runs, so one epoll_wait
	 * collects both events; whichever callback runs first unwatches the
	 * other fd, whose collected event must then be dropped. */
	ck_assert_int_eq(loop_watch(loop, pipe_a[0], LOOP_READ, on_read_a, NULL), 0);
	ck_assert_int_eq(loop_watch(loop, pipe_b[0], LOOP_READ, on_read_b, NULL), 0);
	ck_assert_int_eq(loop_watch(loop, pipe_a[0], LOOP_READ, on_read_a, NULL), -EEXIST);
	ck_assert_int_eq(write(pipe_a[1], "x", 1), 1);
	ck_assert_int_eq(write(pipe_b[1], "y", 1), 1);
	ck_assert_int_eq(loop_run(loop), 7);
	ck_assert_msg(strcmp(trace, "AS") == 0 || strcmp(trace, "BS") == 0, "trace %s", trace);
	loop_unwatch(loop, pipe_a[0]);
	loop_unwatch(loop, 12345); /* never watched: harmless */
	loop_unwatch(loop, -1);
	for (int i = 0; i < 2; i++) {
		close(pipe_a[i]);
		close(pipe_b[i]);
	}
	loop_free(loop);
}
END_TEST

static int ticks;

/* A timer that re-arms itself at 0 ms, as the peer does when it polls a
 * regular file: it must run once per iteration, not starve the fds. */
static void busy_timer(struct loop *loop, void *data)
{
	(void)data;
	ticks++;
	loop_timer_start(loop, 0, busy_timer, NULL);
}

static void on_read_stop(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)events;
	(void)data;
	char c;
	ck_assert_int_eq(read(fd, &c, 1), 1);
	loop_stop(loop, 6);
}

START_TEST(zero_timer_does_not_starve_fds)
{
	struct loop *loop = loop_new();
	ticks = 0;
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	loop_timer_start(loop, 0, busy_timer, NULL);
	ck_assert_int_eq(loop_watch(loop, p[0], LOOP_READ, on_read_stop, NULL), 0);
	ck_assert_int_eq(write(p[1], "x", 1), 1);
	/* The pipe is ready from the start, so the first epoll_wait reports
	 * it: the timer runs at most once before it, whatever the clock. A
	 * timer that re-runs within one iteration would tick for as long as
	 * the millisecond lasts. */
	ck_assert_int_eq(loop_run(loop), 6);
	ck_assert_int_le(ticks, 2);
	close(p[0]);
	close(p[1]);
	loop_free(loop);
}
END_TEST

static void on_writable(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)fd;
	(void)data;
	ck_assert(events & LOOP_WRITE);
	mark("W");
	loop_stop(loop, 3);
}

START_TEST(modify_events)
{
	struct loop *loop = loop_new();
	trace[0] = '\0';
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(loop_watch(loop, p[1], 0, on_writable, NULL), 0);
	ck_assert_int_eq(loop_modify(loop, p[0], LOOP_READ), -ENOENT);
	loop_timer_start(loop, 20, stop_timer, NULL);
	/* Silent watch: the timer stops the loop, W never fires. */
	ck_assert_int_eq(loop_run(loop), 7);
	ck_assert_str_eq(trace, "S");
	loop_free(loop);
	loop = loop_new();
	trace[0] = '\0';
	ck_assert_int_eq(loop_watch(loop, p[1], 0, on_writable, NULL), 0);
	ck_assert_int_eq(loop_modify(loop, p[1], LOOP_WRITE), 0);
	ck_assert_int_eq(loop_run(loop), 3);
	ck_assert_str_eq(trace, "W");
	close(p[0]);
	close(p[1]);
	loop_free(loop);
}
END_TEST

static void on_hup(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)fd;
	(void)data;
	char c;
	/* A closed writer reads as end of input. */
	ck_assert(events & LOOP_READ);
	ck_assert_int_eq(read(fd, &c, 1), 0);
	loop_stop(loop, 4);
}

START_TEST(hangup_is_readable)
{
	struct loop *loop = loop_new();
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	close(p[1]);
	ck_assert_int_eq(loop_watch(loop, p[0], LOOP_READ, on_hup, NULL), 0);
	ck_assert_int_eq(loop_run(loop), 4);
	close(p[0]);
	loop_free(loop);
}
END_TEST

static int edges;

static void on_edge(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)loop;
	(void)fd;
	(void)data;
	ck_assert(events & LOOP_READ);
	edges++; /* reads nothing: the byte stays in the pipe */
}

/* Timers of edge_triggered_once_per_write: what has been reported so
 * far, then the next write or the writer's close. */
static int edge_fds[2];

static void write_again(struct loop *loop, void *data)
{
	(void)loop;
	(void)data;
	ck_assert_int_eq(edges, 1);
	ck_assert_int_eq(write(edge_fds[1], "y", 1), 1);
}

static void close_writer(struct loop *loop, void *data)
{
	(void)loop;
	(void)data;
	ck_assert_int_eq(edges, 2);
	close(edge_fds[1]);
}

/* LOOP_EDGE (the box's pipes, run_output.c): a pipe with unread data is
 * reported once per wake-up of its readers (a write, the writer's
 * close), not at every iteration as a level-triggered watch is: here the
 * loop goes round at each of the timers, with the bytes never read. */
START_TEST(edge_triggered_once_per_write)
{
	struct loop *loop = loop_new();
	ck_assert_int_eq(pipe(edge_fds), 0);
	edges = 0;
	ck_assert_int_eq(write(edge_fds[1], "x", 1), 1);
	ck_assert_int_eq(loop_watch(loop, edge_fds[0], LOOP_READ | LOOP_EDGE, on_edge, NULL), 0);
	for (int ms = 1; ms <= 30; ms += 2)
		loop_timer_start(loop, (unsigned)ms, mark_timer, (void *)"");
	loop_timer_start(loop, 10, write_again, NULL);
	loop_timer_start(loop, 20, close_writer, NULL);
	loop_timer_start(loop, 32, stop_timer, NULL);
	ck_assert_int_eq(loop_run(loop), 7);
	ck_assert_int_eq(edges, 3);
	close(edge_fds[0]);
	loop_free(loop);
}
END_TEST

static void on_signal(struct loop *loop, int signo, void *data)
{
	ck_assert_int_eq(signo, SIGUSR1);
	ck_assert_ptr_eq(data, trace);
	mark("U");
	loop_stop(loop, 128 + signo);
}

START_TEST(signals_through_the_loop)
{
	struct loop *loop = loop_new();
	trace[0] = '\0';
	ck_assert_int_eq(loop_signal_watch(loop, SIGUSR1, on_signal, trace), 0);
	ck_assert_int_eq(loop_signal_watch(loop, 0, on_signal, trace), -EINVAL);
	ck_assert_int_eq(loop_signal_watch(loop, 99, on_signal, trace), -EINVAL);
	/* Blocked now: raising it does not kill the process but queues it. */
	ck_assert_int_eq(raise(SIGUSR1), 0);
	ck_assert_int_eq(loop_run(loop), 128 + SIGUSR1);
	ck_assert_str_eq(trace, "U");
	loop_free(loop);
}
END_TEST

START_TEST(bad_fd)
{
	struct loop *loop = loop_new();
	ck_assert_int_eq(loop_watch(loop, -1, LOOP_READ, on_hup, NULL), -EBADF);
	/* A regular file cannot be epolled: the peer relies on -EPERM. */
	FILE *f = tmpfile();
	ck_assert_int_eq(loop_watch(loop, fileno(f), LOOP_READ, on_hup, NULL), -EPERM);
	fclose(f);
	/* A high fd number grows the table. */
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	int high = fcntl(p[0], F_DUPFD, 300);
	ck_assert_int_ge(high, 300);
	ck_assert_int_eq(loop_watch(loop, high, LOOP_READ, on_hup, NULL), 0);
	loop_unwatch(loop, high);
	close(high);
	close(p[0]);
	close(p[1]);
	loop_free(loop);
}
END_TEST

static Suite *loop_suite(void)
{
	Suite *s = suite_create("loop");
	TCase *tc = tcase_create("loop");
	tcase_add_test(tc, timers_fire_in_deadline_order);
	tcase_add_test(tc, free_with_pending_timers);
	tcase_add_test(tc, unwatch_pending_event);
	tcase_add_test(tc, zero_timer_does_not_starve_fds);
	tcase_add_test(tc, modify_events);
	tcase_add_test(tc, hangup_is_readable);
	tcase_add_test(tc, edge_triggered_once_per_write);
	tcase_add_test(tc, signals_through_the_loop);
	tcase_add_test(tc, bad_fd);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(loop_suite)
