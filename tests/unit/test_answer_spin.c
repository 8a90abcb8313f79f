/* test_answer_spin.c: pyworker.c's read of the worker's answer
 * (val_pyworker_read_line). With a spin budget the first microseconds of
 * the wait are spent awake, reading again, so an answer that comes within
 * them is read without the thread sleeping (no voluntary context switch);
 * past the budget, or without one, the thread sleeps in poll() and still
 * reads the answer. The budget backs off (val_spin_budget): after a spin
 * that did not see the answer, the next answers are awaited asleep at
 * once, then the spin is tried again. That the diagnostics stay what they
 * were is 40-validate's. */
#include "validate/internal.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include "core/loop.h"
#include "unit.h"

struct writer {
	int fd;
	long delay_us;
	const char *text;
	int go; /* set by the reader just before it reads */
};

static void *write_later(void *data)
{
	struct writer *wr = data;
	while (!__atomic_load_n(&wr->go, __ATOMIC_ACQUIRE))
		sched_yield();
	struct timespec d = {wr->delay_us / 1000000, wr->delay_us % 1000000 * 1000};
	nanosleep(&d, NULL);
	size_t n = strlen(wr->text);
	ck_assert_int_eq(write(wr->fd, wr->text, n), (ssize_t)n);
	return NULL;
}

static long voluntary_switches(void)
{
	struct rusage ru;
	ck_assert_int_eq(getrusage(RUSAGE_THREAD, &ru), 0);
	return ru.ru_nvcsw;
}

/* Read one answer written delay_us after the read starts; returns the
 * thread's voluntary context switches during the read. */
static long read_one(long delay_us, unsigned spin_us, const char *want)
{
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	struct writer wr = {.fd = sv[1], .delay_us = delay_us, .text = "err 1 2 1 3 0 bad\n"};
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, write_later, &wr), 0);
	char line[64];
	bool slept;
	long before = voluntary_switches();
	__atomic_store_n(&wr.go, 1, __ATOMIC_RELEASE);
	int r = val_pyworker_read_line(sv[0], line, sizeof(line), loop_now_ms() + 5000, NULL,
	                               spin_us, &slept);
	long after = voluntary_switches();
	ck_assert_int_eq(r, 0);
	/* It says it slept when it did (a sleep in poll() is a voluntary
	 * switch). */
	if (after > before)
		ck_assert(slept);
	ck_assert_str_eq(line, want);
	pthread_join(t, NULL);
	close(sv[0]);
	close(sv[1]);
	return after - before;
}

START_TEST(an_answer_within_the_budget_is_read_awake)
{
	/* 20 tries, so that a try whose writer was late (a busy machine)
	 * does not decide; without the spin every try sleeps. */
	int awake = 0;
	for (int i = 0; i < 20; i++)
		awake += read_one(100, 20000, "err 1 2 1 3 0 bad") == 0;
	ck_assert_int_ge(awake, 10);
}
END_TEST

START_TEST(without_a_budget_the_wait_sleeps)
{
	/* What the test above tells apart: the same read without a budget
	 * sleeps in poll() (the answer comes 100 us after it starts). */
	int asleep = 0;
	for (int i = 0; i < 20; i++)
		asleep += read_one(100, 0, "err 1 2 1 3 0 bad") > 0;
	ck_assert_int_ge(asleep, 10);
}
END_TEST

START_TEST(past_the_budget_the_answer_is_awaited_asleep)
{
	/* A slow answer (bash -n, a cold worker): the spin ends and poll()
	 * waits for the rest. */
	ck_assert_int_gt(read_one(20000, 100, "err 1 2 1 3 0 bad"), 0);
}
END_TEST

START_TEST(a_line_in_pieces_and_the_end_of_the_socket)
{
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	ck_assert_int_eq(write(sv[1], "o", 1), 1);
	struct writer wr = {.fd = sv[1], .delay_us = 1000, .text = "k\n"};
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, write_later, &wr), 0);
	__atomic_store_n(&wr.go, 1, __ATOMIC_RELEASE);
	char line[64];
	bool slept;
	ck_assert_int_eq(val_pyworker_read_line(sv[0], line, sizeof(line), loop_now_ms() + 5000,
	                                        NULL, 200, &slept),
	                 0);
	ck_assert_str_eq(line, "ok");
	pthread_join(t, NULL);
	/* The worker gone mid-wait: its end of the socket, not a hang. */
	close(sv[1]);
	ck_assert_int_eq(val_pyworker_read_line(sv[0], line, sizeof(line), loop_now_ms() + 5000,
	                                        NULL, 200, &slept),
	                 -EPIPE);
	close(sv[0]);
}
END_TEST

START_TEST(a_cancelled_check_stops_spinning)
{
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	size_t cancel = 1;
	char line[64];
	bool slept;
	ck_assert_int_eq(val_pyworker_read_line(sv[0], line, sizeof(line), loop_now_ms() + 5000,
	                                        &cancel, 1000000, &slept),
	                 -ECANCELED);
	ck_assert(!slept);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(a_spin_that_missed_backs_off)
{
	struct val_spin sp = {0};
	unsigned budget = val_spin_budget(&sp);
	ck_assert_uint_gt(budget, 0);
	/* A spin that saw the answer: the next one spins too. */
	val_spin_result(&sp, budget, false);
	ck_assert_uint_eq(val_spin_budget(&sp), budget);
	/* One that did not: some answers are awaited asleep at once (their
	 * sleep does not extend the back-off), then the spin comes back. */
	val_spin_result(&sp, budget, true);
	int asleep = 0;
	unsigned b;
	while ((b = val_spin_budget(&sp)) == 0 && asleep < 100000) {
		val_spin_result(&sp, b, true);
		asleep++;
	}
	ck_assert_int_gt(asleep, 0);
	ck_assert_int_lt(asleep, 1000);
	ck_assert_uint_eq(b, budget);
}
END_TEST

static Suite *answer_spin_suite(void)
{
	Suite *s = suite_create("answer_spin");
	TCase *tc = tcase_create("answer_spin");
	tcase_add_test(tc, an_answer_within_the_budget_is_read_awake);
	tcase_add_test(tc, without_a_budget_the_wait_sleeps);
	tcase_add_test(tc, past_the_budget_the_answer_is_awaited_asleep);
	tcase_add_test(tc, a_line_in_pieces_and_the_end_of_the_socket);
	tcase_add_test(tc, a_cancelled_check_stops_spinning);
	tcase_add_test(tc, a_spin_that_missed_backs_off);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(answer_spin_suite)
