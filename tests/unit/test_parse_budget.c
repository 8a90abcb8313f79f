/* test_parse_budget.c: validate/syntax.c's val_parse, tree-sitter's parse
 * on a budget of the checking thread's CPU time: a parse that waits for a
 * core (here: its process stopped over and over) is resumed until it is
 * done, not refused as too complex when the wall clock passes the budget;
 * one that needs more CPU than its budget is given up near it, and the
 * parser parses again after a reset. */
#include "validate/internal.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "unit.h"

#define LINE "f(a, [b, (c + d) * e], {g: h})\n"

/* Python code of at least n bytes: one call statement a line. */
static char *make_code(size_t n, size_t *ret_len, uint32_t *ret_lines)
{
	size_t k = strlen(LINE), lines = (n + k - 1) / k;
	char *code = malloc(lines * k + 1);
	ck_assert_ptr_nonnull(code);
	for (size_t i = 0; i < lines; i++)
		memcpy(code + i * k, LINE, k);
	code[lines * k] = '\0';
	*ret_len = lines * k;
	*ret_lines = (uint32_t)lines;
	return code;
}

static TSParser *python_parser(void)
{
	TSParser *p = ts_parser_new();
	ck_assert_ptr_nonnull(p);
	ck_assert(ts_parser_set_language(p, val_lang_find("python")->ts()));
	return p;
}

static uint64_t cpu_us(void)
{
	struct timespec ts;
	ck_assert_int_eq(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* A tree of the whole code: one statement a line, no error. */
static void check_whole(TSTree *tree, uint32_t lines)
{
	ck_assert_ptr_nonnull(tree);
	TSNode root = ts_tree_root_node(tree);
	ck_assert(!ts_node_has_error(root));
	ck_assert_uint_eq(ts_node_named_child_count(root), lines);
}

/* A child that stops this process for 100 ms at every 2 ms it runs, until
 * *ret_fd is closed: each stop is followed by a continue, so the process
 * is never left stopped. */
static pid_t start_stopper(int *ret_fd)
{
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	pid_t parent = getpid(), pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(p[1]);
		struct pollfd pfd = {.fd = p[0], .events = POLLIN};
		while (poll(&pfd, 1, 2) == 0) {
			kill(parent, SIGSTOP);
			nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL);
			kill(parent, SIGCONT);
		}
		_exit(0);
	}
	close(p[0]);
	*ret_fd = p[1];
	return pid;
}

static void stop_stopper(pid_t pid, int fd)
{
	close(fd);
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
}

/* 20 KB parse in about 15 ms of CPU (under the sanitizers); stopped 50
 * times as long as it runs, it takes most of a second on the wall clock,
 * far past a budget of 60 ms, which the parse still fits in. */
START_TEST(waiting_for_a_core_is_not_spent)
{
	size_t len;
	uint32_t lines;
	char *code = make_code(20000, &len, &lines);
	struct val_doc d = {.code = code, .len = len};
	TSParser *p = python_parser();
	int fd;
	pid_t pid = start_stopper(&fd);
	TSTree *tree = val_parse(p, &d, 60000);
	stop_stopper(pid, fd);
	check_whole(tree, lines);
	ts_tree_delete(tree);
	ts_parser_delete(p);
	free(code);
}
END_TEST

/* 200 KB needs far more than 20 ms of CPU: the parse stops near its
 * budget (well before the CPU a whole parse takes), and after a reset the
 * parser parses the whole code on a budget that fits it. */
START_TEST(budget_ends_the_parse)
{
	size_t len;
	uint32_t lines;
	char *code = make_code(200000, &len, &lines);
	struct val_doc d = {.code = code, .len = len};
	TSParser *p = python_parser();
	uint64_t t0 = cpu_us();
	TSTree *tree = val_parse(p, &d, 60000000);
	uint64_t whole = cpu_us() - t0;
	check_whole(tree, lines);
	ts_tree_delete(tree);
	t0 = cpu_us();
	ck_assert_ptr_null(val_parse(p, &d, 20000));
	uint64_t cut = cpu_us() - t0;
	ck_assert_msg(cut < whole / 2, "stopped after %llu us of CPU, a whole parse takes %llu",
	              (unsigned long long)cut, (unsigned long long)whole);
	ts_parser_reset(p);
	tree = val_parse(p, &d, 60000000);
	check_whole(tree, lines);
	ts_tree_delete(tree);
	ts_parser_delete(p);
	free(code);
}
END_TEST

/* A cancelled check's parse ends at once, whatever its budget. */
START_TEST(cancel_ends_the_parse)
{
	size_t len;
	uint32_t lines;
	char *code = make_code(200000, &len, &lines);
	size_t cancel = 1;
	struct val_doc d = {.code = code, .len = len, .cancel = &cancel};
	TSParser *p = python_parser();
	ck_assert_ptr_null(val_parse(p, &d, 60000000));
	ts_parser_reset(p);
	cancel = 0;
	TSTree *tree = val_parse(p, &d, 60000000);
	check_whole(tree, lines);
	ts_tree_delete(tree);
	ts_parser_delete(p);
	free(code);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("parse_budget");
	TCase *tc = tcase_create("parse_budget");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, waiting_for_a_core_is_not_spent);
	tcase_add_test(tc, budget_ends_the_parse);
	tcase_add_test(tc, cancel_ends_the_parse);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(make_suite)
