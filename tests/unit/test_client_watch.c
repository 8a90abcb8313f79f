/* test_client_watch.c: rpc/client_watch.c through the real loop, with a
 * pidfd and with the periodic kill(pid, 0) check that stands in where
 * pidfd_open() is missing: a child that dies is reported once, from the
 * loop (also while it is an unreaped zombie, which kill() still finds),
 * a pid already gone is reported on the next iteration and never from
 * inside rpc_client_watch_new(), and freeing a watch silences it. */
#include "rpc/client_watch.h"

#include <signal.h>
#include <sys/wait.h>

#include "core/loop.h"
#include "unit.h"

static struct loop *loop;
static int ngone;

static void on_gone(void *data)
{
	ck_assert_ptr_eq(data, &ngone);
	ngone++;
	loop_stop(loop, 3);
}

static void give_up(struct loop *l, void *data)
{
	(void)data;
	loop_stop(l, 99);
}

static void setup(void)
{
	loop = loop_new();
	ngone = 0;
	loop_timer_start(loop, 5000, give_up, NULL);
}

static void teardown(void)
{
	loop_free(loop);
}

static pid_t sleeper(void)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

static void kill_it(struct loop *l, void *data)
{
	(void)l;
	kill(*(pid_t *)data, SIGKILL);
}

static const unsigned modes[] = {0, RPC_CLIENT_WATCH_POLL};

/* The child is killed 100 ms in and left unreaped: a zombie is gone. */
START_TEST(child_dies)
{
	pid_t pid = sleeper();
	struct rpc_client_watch *w = NULL;
	ck_assert_int_eq(rpc_client_watch_new(loop, pid, modes[_i], on_gone, &ngone, &w), 0);
	ck_assert_int_eq(rpc_client_watch_uses_pidfd(w), modes[_i] == 0);
	ck_assert_int_eq(rpc_client_watch_pid(w), pid);
	loop_timer_start(loop, 100, kill_it, &pid);
	ck_assert_int_eq(loop_run(loop), 3);
	ck_assert_int_eq(ngone, 1);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	rpc_client_watch_free(w);
}
END_TEST

/* A pid that is already gone: reported from the loop, not from _new. */
START_TEST(already_gone)
{
	pid_t pid = sleeper();
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	struct rpc_client_watch *w = NULL;
	ck_assert_int_eq(rpc_client_watch_new(loop, pid, modes[_i], on_gone, &ngone, &w), 0);
	ck_assert_int_eq(ngone, 0);
	ck_assert_int_eq(loop_run(loop), 3);
	ck_assert_int_eq(ngone, 1);
	rpc_client_watch_free(w);
}
END_TEST

static void stop_later(struct loop *l, void *data)
{
	(void)data;
	loop_stop(l, 4);
}

/* A live process is not reported, and a freed watch never calls back. */
START_TEST(alive_and_freed)
{
	pid_t pid = sleeper();
	struct rpc_client_watch *w = NULL;
	ck_assert_int_eq(rpc_client_watch_new(loop, pid, modes[_i], on_gone, &ngone, &w), 0);
	rpc_client_watch_free(w);
	ck_assert_int_eq(rpc_client_watch_new(loop, getpid(), modes[_i], on_gone, &ngone, &w), 0);
	kill(pid, SIGKILL);
	loop_timer_start(loop, 1200, stop_later, NULL);
	ck_assert_int_eq(loop_run(loop), 4);
	ck_assert_int_eq(ngone, 0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	rpc_client_watch_free(w);
	ck_assert_int_eq(rpc_client_watch_new(loop, 0, 0, on_gone, &ngone, &w), -EINVAL);
}
END_TEST

static Suite *client_watch_suite(void)
{
	Suite *s = suite_create("client_watch");
	TCase *tc = tcase_create("client_watch");
	tcase_set_timeout(tc, 20);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, child_dies, 0, 2);
	tcase_add_loop_test(tc, already_gone, 0, 2);
	tcase_add_loop_test(tc, alive_and_freed, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(client_watch_suite)
