/* test_server.c: kiln_serve() as a whole (server.c, methods/lifecycle.c)
 * in a child process on pipes: the lifecycle, position encoding
 * negotiation, exit codes after exit, end of input and SIGTERM, and that
 * a stopped server exits instead of hanging. */
#include "kiln.h"

#include <signal.h>
#include <sys/wait.h>

#include "core/json.h"
#include "core/loop.h"
#include "unit.h"

struct child {
	pid_t pid;
	int to;   /* the server's stdin */
	int from; /* the server's protocol output */
};

static struct child start(void)
{
	int in[2], out[2];
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(in[1]);
		close(out[0]);
		/* No user config may leak into the test. */
		setenv("XDG_CONFIG_HOME", "/nonexistent-kiln-test", 1);
		struct kiln_options opts = {.max_message = 4096};
		_exit(kiln_serve(&opts, in[0], out[1]));
	}
	close(in[0]);
	close(out[1]);
	return (struct child){.pid = pid, .to = in[1], .from = out[0]};
}

static void send_body(struct child *c, const char *body)
{
	char header[64];
	int n = snprintf(header, sizeof(header), "Content-Length: %zu\r\n\r\n", strlen(body));
	ck_assert_int_eq(write(c->to, header, (size_t)n), n);
	ck_assert_int_eq(write(c->to, body, strlen(body)), (ssize_t)strlen(body));
}

/* Wait for one reply (up to 5 s). Yours to put. */
static json_object *reply(struct child *c)
{
	struct frame_reader fr;
	struct unit_frames f = {0};
	frame_reader_init(&fr, 1 << 20);
	uint64_t deadline = loop_now_ms() + 5000;
	while (f.nmsgs == 0 && loop_now_ms() < deadline) {
		struct pollfd p = {.fd = c->from, .events = POLLIN};
		if (poll(&p, 1, 100) <= 0)
			continue;
		char ch;
		/* A byte at a time, so nothing of a next reply is consumed. */
		ssize_t n = read(c->from, &ch, 1);
		if (n <= 0)
			break;
		frame_reader_feed(&fr, &ch, 1, &unit_frames_cbs, &f);
	}
	frame_reader_release(&fr);
	ck_assert_msg(f.nmsgs == 1, "no reply from the server");
	return f.msgs[0];
}

/* Wait for the child's exit (up to ms); its exit code or -1. */
static int wait_exit(struct child *c, int ms)
{
	uint64_t deadline = loop_now_ms() + (uint64_t)ms;
	int status;
	for (;;) {
		pid_t r = waitpid(c->pid, &status, WNOHANG);
		if (r == c->pid)
			break;
		if (loop_now_ms() >= deadline) {
			kill(c->pid, SIGKILL);
			waitpid(c->pid, &status, 0);
			close(c->to);
			close(c->from);
			return -1;
		}
		usleep(5000);
	}
	close(c->to);
	close(c->from);
	ck_assert_msg(WIFEXITED(status), "server died of signal %d", WTERMSIG(status));
	return WEXITSTATUS(status);
}

/* How long a stopped server may take to exit. kiln exits well within a
 * second; the bound only tells "exits" from "hangs", so it is generous
 * for a loaded machine and a sanitizer build. */
#define EXIT_WAIT_MS 5000

static const char INIT[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{}}";

static void initialize(struct child *c)
{
	send_body(c, INIT);
	json_object *r = reply(c);
	ck_assert_int_eq(unit_int_at(r, "id"), 0);
	ck_assert_ptr_nonnull(json_get_path(r, "result.capabilities"));
	json_object_put(r);
}

START_TEST(lifecycle_exit_0)
{
	struct child c = start();
	send_body(&c, INIT);
	json_object *r = reply(&c);
	const char *s = NULL;
	ck_assert_int_eq(json_get_string(json_get_path(r, "result.serverInfo"), "name", &s), 0);
	ck_assert_str_eq(s, "kiln");
	ck_assert_int_eq(json_get_string(json_get_path(r, "result.serverInfo"), "version", &s), 0);
	ck_assert_str_eq(s, KILN_VERSION);
	ck_assert_int_eq(
	    json_get_string(json_get_path(r, "result.capabilities"), "positionEncoding", &s), 0);
	ck_assert_str_eq(s, "utf-16");
	json_object_put(r);
	send_body(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"initialized\",\"params\":{}}");
	send_body(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"shutdown\"}");
	r = reply(&c);
	ck_assert_str_eq(json_compact(r), "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}");
	json_object_put(r);
	send_body(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"exit\"}");
	ck_assert_int_eq(wait_exit(&c, EXIT_WAIT_MS), 0);
}
END_TEST

START_TEST(exit_without_shutdown_is_1)
{
	struct child c = start();
	initialize(&c);
	send_body(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"exit\"}");
	ck_assert_int_eq(wait_exit(&c, EXIT_WAIT_MS), 1);
}
END_TEST

START_TEST(exit_before_initialize_is_1)
{
	struct child c = start();
	send_body(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"exit\"}");
	ck_assert_int_eq(wait_exit(&c, EXIT_WAIT_MS), 1);
}
END_TEST

START_TEST(end_of_input)
{
	/* Without shutdown: 1, within a second. */
	struct child c = start();
	initialize(&c);
	close(c.to);
	c.to = open("/dev/null", O_WRONLY);
	ck_assert_int_eq(wait_exit(&c, EXIT_WAIT_MS), 1);
	/* After shutdown: 0. */
	c = start();
	initialize(&c);
	send_body(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"shutdown\"}");
	json_object_put(reply(&c));
	close(c.to);
	c.to = open("/dev/null", O_WRONLY);
	ck_assert_int_eq(wait_exit(&c, EXIT_WAIT_MS), 0);
	/* A header and no body at the end: still a clean exit. */
	c = start();
	initialize(&c);
	ck_assert_int_eq(write(c.to, "Content-Length: 50\r\n\r\n{", 24), 24);
	close(c.to);
	c.to = open("/dev/null", O_WRONLY);
	ck_assert_int_eq(wait_exit(&c, EXIT_WAIT_MS), 1);
}
END_TEST

START_TEST(sigterm)
{
	struct child c = start();
	initialize(&c);
	ck_assert_int_eq(kill(c.pid, SIGTERM), 0);
	ck_assert_int_eq(wait_exit(&c, EXIT_WAIT_MS), 128 + SIGTERM);
}
END_TEST

struct enc_case {
	const char *offered;
	const char *chosen;
};

static const struct enc_case enc_cases[] = {
    {"[\"utf-8\",\"utf-16\"]", "utf-8"},
    {"[\"utf-32\",\"utf-8\"]", "utf-32"},
    {"[\"utf-16\",\"utf-8\"]", "utf-16"},
    {"[\"latin-1\",\"utf-8\"]", "utf-8"},
    {"[\"latin-1\"]", "utf-16"},
    {"[]", "utf-16"},
    {"\"utf-8\"", "utf-16"},
    {"[7,\"utf-32\"]", "utf-32"},
};

START_TEST(position_encoding)
{
	char body[300];
	snprintf(
	    body, sizeof(body),
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"capabilities\":"
	    "{\"general\":{\"positionEncodings\":%s}}}}",
	    enc_cases[_i].offered);
	struct child c = start();
	send_body(&c, body);
	json_object *r = reply(&c);
	const char *s = "";
	json_get_string(json_get_path(r, "result.capabilities"), "positionEncoding", &s);
	ck_assert_msg(strcmp(s, enc_cases[_i].chosen) == 0, "offered %s, got %s",
	              enc_cases[_i].offered, s);
	json_object_put(r);
	close(c.to);
	c.to = open("/dev/null", O_WRONLY);
	ck_assert_int_eq(wait_exit(&c, EXIT_WAIT_MS), 1);
}
END_TEST

START_TEST(initialize_rules)
{
	struct child c = start();
	/* Neovim's [] and Emacs's null are "no params". */
	send_body(&c, "{\"jsonrpc\":\"2.0\",\"id\":\"n\",\"method\":\"initialize\",\"params\":[]}");
	json_object *r = reply(&c);
	ck_assert_ptr_nonnull(json_get(r, "result"));
	json_object_put(r);
	/* Only once. */
	send_body(&c, INIT);
	r = reply(&c);
	ck_assert_int_eq(unit_int_at(r, "error.code"), -32600);
	json_object_put(r);
	close(c.to);
	c.to = open("/dev/null", O_WRONLY);
	ck_assert_int_eq(wait_exit(&c, EXIT_WAIT_MS), 1);
	/* Positional params are not InitializeParams. */
	c = start();
	send_body(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":[1]}");
	r = reply(&c);
	ck_assert_int_eq(unit_int_at(r, "error.code"), -32602);
	json_object_put(r);
	/* ...and the server is still uninitialized. */
	send_body(&c, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"shutdown\"}");
	r = reply(&c);
	ck_assert_int_eq(unit_int_at(r, "error.code"), -32002);
	json_object_put(r);
	close(c.to);
	c.to = open("/dev/null", O_WRONLY);
	ck_assert_int_eq(wait_exit(&c, EXIT_WAIT_MS), 1);
}
END_TEST

/* Over the size cap (4096 here): an error, and the next message works. */
START_TEST(oversized_then_next)
{
	struct child c = start();
	const char header[] = "Content-Length: 10000\r\n\r\n";
	ck_assert_int_eq(write(c.to, header, sizeof(header) - 1), (ssize_t)sizeof(header) - 1);
	json_object *r = reply(&c);
	ck_assert_int_eq(unit_int_at(r, "error.code"), -32600);
	ck_assert_str_eq(json_compact(json_get(r, "id")), "null");
	json_object_put(r);
	char junk[10000];
	memset(junk, ' ', sizeof(junk));
	ck_assert_int_eq(write(c.to, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	initialize(&c);
	close(c.to);
	c.to = open("/dev/null", O_WRONLY);
	ck_assert_int_eq(wait_exit(&c, EXIT_WAIT_MS), 1);
}
END_TEST

static Suite *server_suite(void)
{
	Suite *s = suite_create("server");
	TCase *tc = tcase_create("server");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, lifecycle_exit_0);
	tcase_add_test(tc, exit_without_shutdown_is_1);
	tcase_add_test(tc, exit_before_initialize_is_1);
	tcase_add_test(tc, end_of_input);
	tcase_add_test(tc, sigterm);
	tcase_add_loop_test(tc, position_encoding, 0,
	                    (int)(sizeof(enc_cases) / sizeof(enc_cases[0])));
	tcase_add_test(tc, initialize_rules);
	tcase_add_test(tc, oversized_then_next);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(server_suite)
