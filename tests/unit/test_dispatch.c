/* test_dispatch.c: JSON-RPC semantics (rpc/dispatch.c) over a real peer
 * writing to a pipe: ids returned exactly, the lifecycle gate, every error
 * code, batches as in the JSON-RPC 2.0 spec's section 7 examples, calls
 * answered later, $/cancelRequest, and requests kiln sends to the client.
 * The method table here is the test's own, so each rule is tested alone. */
#include "rpc/dispatch.h"

#include "core/json.h"
#include "core/loop.h"
#include "core/position.h"
#include "rpc/message.h"
#include "rpc/peer.h"
#include "unit.h"

static struct loop *loop;
static struct rpc_peer *peer;
static struct rpc_dispatch *d;
static int in_pipe[2], out_pipe[2];
static int ctx_token;

/* What the handlers saw. */
static int notes;
static struct rpc_call *later_calls[8];
static int nlater;
static int cancelled[8];

static int m_echo(struct rpc_call *call, json_object *params)
{
	rpc_call_reply(call, params ? json_copy(params) : json_object_new_string("none"));
	return 0;
}

static int m_init(struct rpc_call *call, json_object *params)
{
	(void)params;
	rpc_dispatch_set_state(rpc_call_dispatch(call), RPC_STATE_RUNNING);
	rpc_call_reply(call, json_object_new_string("ok"));
	return 0;
}

static int m_down(struct rpc_call *call, json_object *params)
{
	(void)params;
	rpc_dispatch_set_state(rpc_call_dispatch(call), RPC_STATE_SHUTDOWN);
	rpc_call_reply(call, NULL);
	return 0;
}

static int m_fail(struct rpc_call *call, json_object *params)
{
	(void)call;
	(void)params;
	return -EIO;
}

static int m_note(struct rpc_call *call, json_object *params)
{
	(void)params;
	ck_assert(rpc_call_is_notification(call));
	notes++;
	return 0;
}

static void on_cancel_later(void *data)
{
	int i = (int)(intptr_t)data;
	cancelled[i]++;
	later_calls[i] = NULL;
}

static int m_later(struct rpc_call *call, json_object *params)
{
	(void)params;
	int i = nlater++;
	later_calls[i] = call;
	rpc_call_on_cancel(call, on_cancel_later, (void *)(intptr_t)i);
	return 0;
}

static int m_twice(struct rpc_call *call, json_object *params)
{
	(void)params;
	ck_assert_str_eq(rpc_call_method(call), "twice");
	ck_assert_ptr_eq(rpc_call_ctx(call), &ctx_token);
	rpc_call_error(call, -32000, "first", NULL);
	rpc_call_reply(call, json_object_new_string("second")); /* ignored */
	return 0;
}

/* Messages in any form; each reply's starts with the code's standard text. */
static int m_terse(struct rpc_call *call, json_object *params)
{
	const char *form = json_object_get_string(json_get(params, "form"));
	if (strcmp(form, "bare") == 0)
		rpc_call_error(call, RPC_INVALID_PARAMS, "profile must be a string", NULL);
	else if (strcmp(form, "null") == 0)
		rpc_call_error(call, RPC_REQUEST_FAILED, NULL, NULL);
	else if (strcmp(form, "prefixed") == 0)
		rpc_call_error(call, RPC_INVALID_PARAMS, "Invalid params: x", NULL);
	else /* the standard text in a word of its own, not a prefix */
		rpc_call_error(call, RPC_INVALID_PARAMS, "Invalid paramsx", NULL);
	return 0;
}

/* Like shutdown: stop everything pending, then answer. */
static int m_stop(struct rpc_call *call, json_object *params)
{
	(void)params;
	rpc_dispatch_cancel_all(rpc_call_dispatch(call));
	rpc_call_reply(call, json_object_new_string("stopped"));
	return 0;
}

static const struct rpc_method table[] = {
    {"init", m_init, RPC_BEFORE_INIT},
    {"echo", m_echo, 0},
    {"down", m_down, 0},
    {"fail", m_fail, 0},
    {"note", m_note, RPC_NOTIFICATION},
    {"bye", m_note, RPC_NOTIFICATION | RPC_BEFORE_INIT | RPC_AFTER_SHUTDOWN},
    {"later", m_later, 0},
    {"twice", m_twice, 0},
    {"terse", m_terse, 0},
    {"stop", m_stop, 0},
};

static void on_message(void *data, json_object *msg)
{
	(void)data;
	rpc_dispatch_message(d, msg);
}
static void on_bad(void *data, int code, const char *detail)
{
	(void)data;
	rpc_dispatch_bad_input(d, code, detail);
}
static void on_closed(void *data)
{
	(void)data;
}
static const struct rpc_peer_ops ops = {on_message, on_bad, on_closed};

static void setup(void)
{
	ck_assert_int_eq(pipe(in_pipe), 0);
	ck_assert_int_eq(pipe(out_pipe), 0);
	loop = loop_new();
	ck_assert_ptr_nonnull(loop);
	peer = rpc_peer_new(loop, in_pipe[0], out_pipe[1], 1 << 20, &ops, NULL);
	ck_assert_ptr_nonnull(peer);
	d = rpc_dispatch_new(loop, peer, table, sizeof(table) / sizeof(table[0]), &ctx_token);
	ck_assert_ptr_nonnull(d);
	notes = 0;
	nlater = 0;
	memset(later_calls, 0, sizeof(later_calls));
	memset(cancelled, 0, sizeof(cancelled));
}

static void teardown(void)
{
	rpc_dispatch_free(d);
	rpc_peer_free(peer);
	loop_free(loop);
	close(in_pipe[0]);
	close(in_pipe[1]);
	close(out_pipe[0]);
	close(out_pipe[1]);
}

/* Dispatch one message body and return what came back: NULL for nothing,
 * else the one reply (yours to put). Fails on more than one. */
static json_object *ask(const char *body)
{
	json_object *msg = NULL;
	char detail[200] = "";
	int r = rpc_parse(body, strlen(body), &msg, detail, sizeof(detail));
	ck_assert_msg(r == 0, "test bug: %s: %s", body, detail);
	rpc_dispatch_message(d, msg);
	json_object_put(msg);
	struct unit_frames f = {0};
	unit_read_frames(out_pipe[0], 0, &f);
	ck_assert_msg(f.nmsgs <= 1, "%s: %d replies", body, f.nmsgs);
	return f.nmsgs ? f.msgs[0] : NULL;
}

/* ask() and compare the reply's compact form with want ("" for none). */
static void expect(const char *body, const char *want)
{
	json_object *reply = ask(body);
	const char *got = reply ? json_compact(reply) : "";
	ck_assert_msg(strcmp(got, want) == 0, "\n sent %s\n  got %s\n want %s", body, got, want);
	json_object_put(reply);
}

/* ask() and check the error code and id of the reply. */
static void expect_error(const char *body, int code, const char *id)
{
	json_object *reply = ask(body);
	ck_assert_msg(reply, "%s: no reply", body);
	ck_assert_msg(unit_int_at(reply, "error.code") == code, "%s: got %s", body,
	              json_compact(reply));
	ck_assert_str_eq(json_compact(json_get(reply, "id")), id);
	const char *msg = NULL;
	ck_assert_int_eq(json_get_string(json_get(reply, "error"), "message", &msg), 0);
	ck_assert(msg[0]);
	json_object_put(reply);
}

static void initialize(void)
{
	expect("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"init\"}",
	       "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"ok\"}");
	ck_assert_int_eq(rpc_dispatch_state(d), RPC_STATE_RUNNING);
}

START_TEST(gate_before_initialize)
{
	ck_assert_int_eq(rpc_dispatch_state(d), RPC_STATE_UNINITIALIZED);
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"echo\"}", -32002, "3");
	/* Unknown methods too: LSP answers every request with -32002. */
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"nope\"}", -32002, "\"x\"");
	/* Notifications are dropped, except those allowed (exit). */
	expect("{\"jsonrpc\":\"2.0\",\"method\":\"note\"}", "");
	ck_assert_int_eq(notes, 0);
	expect("{\"jsonrpc\":\"2.0\",\"method\":\"bye\"}", "");
	ck_assert_int_eq(notes, 1);
	/* A cancel before initialize is dropped too. */
	expect("{\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\",\"params\":{\"id\":3}}", "");
	initialize();
	expect("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"echo\",\"params\":[5]}",
	       "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":[5]}");
}
END_TEST

START_TEST(gate_after_shutdown)
{
	initialize();
	expect("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"down\"}",
	       "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":null}");
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"echo\"}", -32600, "3");
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"nope\"}", -32600, "4");
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"init\"}", -32600, "5");
	expect("{\"jsonrpc\":\"2.0\",\"method\":\"note\"}", "");
	ck_assert_int_eq(notes, 0);
	expect("{\"jsonrpc\":\"2.0\",\"method\":\"bye\"}", "");
	ck_assert_int_eq(notes, 1);
}
END_TEST

/* The id comes back exactly as sent: VS Code's 0, strings, null, floats. */
START_TEST(ids_returned_exactly)
{
	initialize();
	expect("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"echo\"}",
	       "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":\"none\"}");
	expect("{\"jsonrpc\":\"2.0\",\"id\":\"0\",\"method\":\"echo\"}",
	       "{\"jsonrpc\":\"2.0\",\"id\":\"0\",\"result\":\"none\"}");
	expect("{\"jsonrpc\":\"2.0\",\"id\":\"a/b \\u00e9\",\"method\":\"echo\"}",
	       "{\"jsonrpc\":\"2.0\",\"id\":\"a/b \xc3\xa9\",\"result\":\"none\"}");
	expect("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"echo\"}",
	       "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":\"none\"}");
	expect("{\"jsonrpc\":\"2.0\",\"id\":-7,\"method\":\"echo\"}",
	       "{\"jsonrpc\":\"2.0\",\"id\":-7,\"result\":\"none\"}");
	expect("{\"jsonrpc\":\"2.0\",\"id\":9007199254740993,\"method\":\"echo\"}",
	       "{\"jsonrpc\":\"2.0\",\"id\":9007199254740993,\"result\":\"none\"}");
}
END_TEST

/* Neovim [], Emacs null, VS Code omitted: the handler sees no params. */
START_TEST(params_spellings)
{
	initialize();
	const char *none = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"none\"}";
	expect("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":[]}", none);
	expect("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":null}", none);
	expect("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\"}", none);
	expect("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":{}}",
	       "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
	expect("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":[null]}",
	       "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":[null]}");
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\",\"params\":\"x\"}", -32600,
	             "1");
}
END_TEST

START_TEST(error_codes)
{
	initialize();
	expect("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"nope\"}",
	       "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":\"Method not "
	       "found: nope\"}}");
	expect("{\"jsonrpc\":\"2.0\",\"method\":\"nope\"}", "");
	expect("{\"jsonrpc\":\"2.0\",\"method\":\"$/unknownThing\",\"params\":{}}", "");
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":\"$\",\"method\":\"$/unknownThing\"}", -32601,
	             "\"$\"");
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"fail\"}", -32603, "2");
	/* A notification method sent with an id. */
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"note\"}", -32600, "3");
	ck_assert_int_eq(notes, 0);
	expect_error("{\"jsonrpc\":\"1.0\",\"id\":4,\"method\":\"echo\"}", -32600, "4");
	expect_error("{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"echo\"}", -32600, "null");
	expect_error("{\"jsonrpc\":\"2.0\",\"method\":1,\"params\":\"bar\"}", -32600, "null");
	expect_error("{\"foo\":\"boo\"}", -32600, "null");
	expect_error("1", -32600, "null");
	expect_error("null", -32600, "null");
	/* A long non-ASCII method name is cut to fit the message, never
	 * inside a character: the reply stays UTF-8. */
	char body[1200];
	int n = snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"");
	for (int i = 0; i < 300; i++)
		n += snprintf(body + n, sizeof(body) - (size_t)n, "\xc3\xa9");
	snprintf(body + n, sizeof(body) - (size_t)n, "\"}");
	json_object *long_reply = ask(body);
	ck_assert_int_eq(unit_int_at(long_reply, "error.code"), -32601);
	const char *text = json_object_get_string(json_get_path(long_reply, "error.message"));
	ck_assert(utf8_valid(text, strlen(text)));
	json_object_put(long_reply);
	/* Answering twice sends the first answer only. */
	expect("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"twice\"}",
	       "{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":-32000,\"message\":\"Server "
	       "error: first\"}}");
	/* Every message starts with its code's standard text, whatever the
	 * handler wrote (docs/protocol.md). */
	expect("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"terse\",\"params\":{\"form\":\"bare\"}}",
	       "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32602,\"message\":\"Invalid "
	       "params: profile must be a string\"}}");
	expect("{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"terse\",\"params\":{\"form\":\"null\"}}",
	       "{\"jsonrpc\":\"2.0\",\"id\":8,\"error\":{\"code\":-32803,\"message\":\"Request "
	       "failed\"}}");
	expect("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"terse\",\"params\":{\"form\":"
	       "\"prefixed\"}}",
	       "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32602,\"message\":\"Invalid "
	       "params: x\"}}");
	expect("{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"terse\",\"params\":{\"form\":"
	       "\"word\"}}",
	       "{\"jsonrpc\":\"2.0\",\"id\":10,\"error\":{\"code\":-32602,\"message\":\"Invalid "
	       "params: Invalid paramsx\"}}");
	/* Framing and parse errors from the peer answer with id null. */
	rpc_dispatch_bad_input(d, RPC_PARSE_ERROR, "Parse error: x");
	struct unit_frames f = {0};
	unit_read_frames(out_pipe[0], 0, &f);
	ck_assert_int_eq(f.nmsgs, 1);
	ck_assert_str_eq(json_compact(f.msgs[0]),
	                 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{"
	                 "\"code\":-32700,\"message\":\"Parse error: x\"}}");
	unit_frames_release(&f);
	ck_assert_uint_eq(rpc_dispatch_pending(d), 0);
}
END_TEST

/* JSON-RPC 2.0 section 7, the batch examples, with echo for sum etc. */
START_TEST(batches)
{
	initialize();
	/* rpc call with an empty Array: one error object, not an array. */
	expect("[]", "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":"
	             "\"Invalid Request: an empty batch\"}}");
	/* an invalid Batch (but not empty) */
	json_object *r = ask("[1]");
	ck_assert(json_object_is_type(r, json_type_array));
	ck_assert_uint_eq(json_object_array_length(r), 1);
	ck_assert_int_eq(unit_int_at(json_object_array_get_idx(r, 0), "error.code"), -32600);
	json_object_put(r);
	/* invalid Batch */
	r = ask("[1,2,3]");
	ck_assert_uint_eq(json_object_array_length(r), 3);
	for (size_t i = 0; i < 3; i++)
		ck_assert_str_eq(json_compact(json_get(json_object_array_get_idx(r, i), "id")),
		                 "null");
	json_object_put(r);
	/* the mixed batch */
	r = ask("[{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[1,2,4],\"id\":\"1\"},"
	        "{\"jsonrpc\":\"2.0\",\"method\":\"note\",\"params\":[7]},"
	        "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[42,23],\"id\":\"2\"},"
	        "{\"foo\":\"boo\"},"
	        "{\"jsonrpc\":\"2.0\",\"method\":\"foo.get\",\"params\":{\"name\":\"myself\"},"
	        "\"id\":\"5\"},"
	        "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"id\":\"9\"}]");
	ck_assert_msg(json_object_is_type(r, json_type_array), "%s", json_compact(r));
	ck_assert_str_eq(json_compact(r),
	                 "[{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":[1,2,4]},"
	                 "{\"jsonrpc\":\"2.0\",\"id\":\"2\",\"result\":[42,23]},"
	                 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":"
	                 "\"Invalid Request: \\\"jsonrpc\\\" must be \\\"2.0\\\"\"}},"
	                 "{\"jsonrpc\":\"2.0\",\"id\":\"5\",\"error\":{\"code\":-32601,\"message\":"
	                 "\"Method not found: foo.get\"}},"
	                 "{\"jsonrpc\":\"2.0\",\"id\":\"9\",\"result\":\"none\"}]");
	json_object_put(r);
	ck_assert_int_eq(notes, 1);
	/* all notifications: nothing at all comes back */
	expect("[{\"jsonrpc\":\"2.0\",\"method\":\"note\",\"params\":[1,2,4]},"
	       "{\"jsonrpc\":\"2.0\",\"method\":\"note\",\"params\":[7]}]",
	       "");
	ck_assert_int_eq(notes, 3);
	/* a nested batch is not a request */
	r = ask("[[]]");
	ck_assert_uint_eq(json_object_array_length(r), 1);
	json_object_put(r);
}
END_TEST

/* A batch's reply waits for its slowest member. */
START_TEST(batch_with_async_member)
{
	initialize();
	expect("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\"},"
	       "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"later\"}]",
	       "");
	ck_assert_int_eq(nlater, 1);
	ck_assert_uint_eq(rpc_dispatch_pending(d), 1);
	rpc_call_reply(later_calls[0], json_object_new_int(42));
	struct unit_frames f = {0};
	unit_read_frames(out_pipe[0], 0, &f);
	ck_assert_int_eq(f.nmsgs, 1);
	ck_assert_str_eq(json_compact(f.msgs[0]),
	                 "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"none\"},"
	                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":42}]");
	unit_frames_release(&f);
	ck_assert_uint_eq(rpc_dispatch_pending(d), 0);
}
END_TEST

START_TEST(cancel_request)
{
	initialize();
	expect("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"later\"}", "");
	expect("{\"jsonrpc\":\"2.0\",\"id\":\"7\",\"method\":\"later\"}", "");
	ck_assert_uint_eq(rpc_dispatch_pending(d), 2);
	/* Unknown ids and a string "7" for the number 7 touch nothing. */
	expect("{\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\",\"params\":{\"id\":99}}", "");
	expect("{\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\",\"params\":{}}", "");
	expect("{\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\"}", "");
	ck_assert_uint_eq(rpc_dispatch_pending(d), 2);
	ck_assert_int_eq(cancelled[0] + cancelled[1], 0);
	expect("{\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\",\"params\":{\"id\":7}}",
	       "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32800,\"message\":\"Request "
	       "cancelled\"}}");
	ck_assert_int_eq(cancelled[0], 1);
	ck_assert_int_eq(cancelled[1], 0);
	ck_assert_uint_eq(rpc_dispatch_pending(d), 1);
	/* Cancelling again, or after the answer, is ignored. */
	expect("{\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\",\"params\":{\"id\":7}}", "");
	rpc_call_reply(later_calls[1], json_object_new_string("done"));
	struct unit_frames f = {0};
	unit_read_frames(out_pipe[0], 0, &f);
	ck_assert_int_eq(f.nmsgs, 1);
	ck_assert_str_eq(json_compact(f.msgs[0]),
	                 "{\"jsonrpc\":\"2.0\",\"id\":\"7\",\"result\":\"done\"}");
	unit_frames_release(&f);
	expect("{\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\",\"params\":{\"id\":\"7\"}}",
	       "");
	ck_assert_int_eq(cancelled[1], 0);
	ck_assert_uint_eq(rpc_dispatch_pending(d), 0);
}
END_TEST

/* Stopping the server answers every pending call and stops its work. */
START_TEST(cancel_all_and_free)
{
	initialize();
	expect("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"later\"}", "");
	expect("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"later\"}", "");
	rpc_dispatch_cancel_all(d);
	struct unit_frames f = {0};
	unit_read_frames(out_pipe[0], 0, &f);
	ck_assert_int_eq(f.nmsgs, 2);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(unit_int_at(f.msgs[i], "error.code"), -32800);
	unit_frames_release(&f);
	ck_assert_int_eq(cancelled[0], 1);
	ck_assert_int_eq(cancelled[1], 1);
	ck_assert_uint_eq(rpc_dispatch_pending(d), 0);
	/* Freeing dispatch with a call still pending runs its hook too. */
	expect("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"later\"}", "");
	rpc_dispatch_free(d);
	d = NULL;
	ck_assert_int_eq(cancelled[2], 1);
}
END_TEST

/* A handler that cancels everything (shutdown) is not cancelled itself,
 * and the replies of what it cancels go out before its own. */
START_TEST(cancel_all_from_handler)
{
	initialize();
	expect("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"later\"}", "");
	rpc_dispatch_message(d, NULL); /* -32600, flushed out of the way */
	struct unit_frames f = {0};
	unit_read_frames(out_pipe[0], 0, &f);
	unit_frames_release(&f);
	json_object *msg = NULL;
	char detail[200];
	const char *body = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"stop\"}";
	ck_assert_int_eq(rpc_parse(body, strlen(body), &msg, detail, sizeof(detail)), 0);
	rpc_dispatch_message(d, msg);
	json_object_put(msg);
	unit_read_frames(out_pipe[0], 0, &f);
	ck_assert_int_eq(f.nmsgs, 2);
	ck_assert_str_eq(json_compact(f.msgs[0]),
	                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32800,"
	                 "\"message\":\"Request cancelled\"}}");
	ck_assert_str_eq(json_compact(f.msgs[1]),
	                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":\"stopped\"}");
	unit_frames_release(&f);
	ck_assert_int_eq(cancelled[0], 1);
	ck_assert_uint_eq(rpc_dispatch_pending(d), 0);
}
END_TEST

static int replies_seen;
static char reply_seen[200];
static void on_reply(void *data, json_object *result, json_object *error)
{
	ck_assert_ptr_eq(data, &ctx_token);
	replies_seen++;
	snprintf(reply_seen, sizeof(reply_seen), "%s|%s", result ? json_compact(result) : "-",
	         error ? json_compact(error) : "-");
}

START_TEST(server_to_client)
{
	initialize();
	ck_assert_int_eq(rpc_notify(d, "run/output", json_object_new_object()), 0);
	struct unit_frames f = {0};
	unit_read_frames(out_pipe[0], 0, &f);
	ck_assert_int_eq(f.nmsgs, 1);
	ck_assert_str_eq(json_compact(f.msgs[0]),
	                 "{\"jsonrpc\":\"2.0\",\"method\":\"run/output\",\"params\":{}}");
	unit_frames_release(&f);

	ck_assert_int_eq(rpc_request(d, "workspace/applyEdit", NULL, 0, on_reply, &ctx_token, NULL),
	                 0);
	ck_assert_int_eq(
	    rpc_request(d, "window/showMessageRequest", NULL, 0, on_reply, &ctx_token, NULL), 0);
	unit_read_frames(out_pipe[0], 0, &f);
	ck_assert_int_eq(f.nmsgs, 2);
	ck_assert_str_eq(json_compact(f.msgs[0]),
	                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"workspace/applyEdit\"}");
	ck_assert_int_eq(unit_int_at(f.msgs[1], "id"), 2);
	unit_frames_release(&f);
	/* Responses reach their callbacks and get no reply themselves. */
	expect("{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"applied\":true}}", "");
	ck_assert_int_eq(replies_seen, 1);
	ck_assert_str_eq(reply_seen, "{\"applied\":true}|-");
	expect("{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":1}", "");     /* already done */
	expect("{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":1}", ""); /* wrong id type */
	ck_assert_int_eq(replies_seen, 1);
	/* A request still open when dispatch goes away hears NULL, NULL. */
	rpc_dispatch_free(d);
	d = NULL;
	ck_assert_int_eq(replies_seen, 2);
	ck_assert_str_eq(reply_seen, "-|-");
}
END_TEST

START_TEST(client_error_response)
{
	initialize();
	ck_assert_int_eq(
	    rpc_request(d, "x", json_object_new_array(), 0, on_reply, &ctx_token, NULL), 0);
	struct unit_frames f = {0};
	unit_read_frames(out_pipe[0], 0, &f);
	unit_frames_release(&f);
	expect("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-1,\"message\":\"no\"}}", "");
	ck_assert_int_eq(replies_seen > 0, 1);
	ck_assert_str_eq(reply_seen, "-|{\"code\":-1,\"message\":\"no\"}");
}
END_TEST

static void stop_loop(struct loop *l, void *data)
{
	(void)data;
	loop_stop(l, 0);
}

/* A client that never answers: the waiter hears -32803 after the request's
 * timeout, and a late response is dropped. */
START_TEST(request_timeout)
{
	initialize();
	replies_seen = 0;
	ck_assert_int_eq(
	    rpc_request(d, "workspace/applyEdit", NULL, 20, on_reply, &ctx_token, NULL), 0);
	ck_assert_uint_eq(rpc_dispatch_out_pending(d), 1);
	struct unit_frames f = {0};
	unit_read_frames(out_pipe[0], 0, &f);
	ck_assert_int_eq(f.nmsgs, 1);
	unit_frames_release(&f);
	loop_timer_start(loop, 200, stop_loop, NULL);
	loop_run(loop);
	ck_assert_int_eq(replies_seen, 1);
	ck_assert(strstr(reply_seen, "-32803") != NULL);
	ck_assert_uint_eq(rpc_dispatch_out_pending(d), 0);
	expect("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"applied\":true}}", "");
	ck_assert_int_eq(replies_seen, 1);
}
END_TEST

/* The table of waiting requests has a cap; forgetting one makes room, and
 * a forgotten request's callback never runs. */
START_TEST(request_cap)
{
	initialize();
	replies_seen = 0;
	int64_t first = 0, id;
	struct unit_frames f = {0};
	for (int i = 0; i < RPC_MAX_OUT_REQUESTS; i++) {
		ck_assert_int_eq(rpc_request(d, "x", NULL, 0, on_reply, &ctx_token, &id), 0);
		if (i == 0)
			first = id;
		if (i % 32 == 31) { /* the reader takes fewer than 64 at a time */
			unit_read_frames(out_pipe[0], 0, &f);
			ck_assert_int_eq(f.nmsgs, 32);
			unit_frames_release(&f);
		}
	}
	ck_assert_int_eq(rpc_request(d, "x", NULL, 0, on_reply, &ctx_token, NULL), -EBUSY);
	rpc_request_forget(d, first);
	ck_assert_int_eq(rpc_request(d, "x", NULL, 0, on_reply, &ctx_token, NULL), 0);
	unit_read_frames(out_pipe[0], 0, &f);
	ck_assert_int_eq(f.nmsgs, 1);
	unit_frames_release(&f);
	expect("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}", "");
	ck_assert_int_eq(replies_seen, 0);
	rpc_dispatch_free(d);
	d = NULL;
	ck_assert_int_eq(replies_seen, RPC_MAX_OUT_REQUESTS);
}
END_TEST

/* An internal call runs a method of the table for another handler: its
 * answer reaches the callback from a later loop turn, never from inside
 * rpc_dispatch_call, and nothing goes to the client. */
START_TEST(internal_call)
{
	initialize();
	replies_seen = 0;
	json_object *params = json_object_new_object();
	json_object_object_add(params, "x", json_object_new_int(1));
	json_object *id = NULL;
	ck_assert_int_eq(rpc_dispatch_call(d, "echo", params, on_reply, &ctx_token, &id), 0);
	json_object_put(params);
	ck_assert_int_eq(replies_seen, 0);
	ck_assert_str_eq(json_object_get_string(id), "kiln-internal-1");
	json_object_put(id);
	loop_timer_start(loop, 50, stop_loop, NULL);
	loop_run(loop);
	ck_assert_int_eq(replies_seen, 1);
	ck_assert_str_eq(reply_seen, "{\"x\":1}|-");
	struct unit_frames f = {0};
	unit_read_frames(out_pipe[0], 0, &f);
	ck_assert_int_eq(f.nmsgs, 0);
	unit_frames_release(&f);
	ck_assert_int_eq(rpc_dispatch_call(d, "nothing", NULL, on_reply, &ctx_token, NULL),
	                 -ENOENT);
}
END_TEST

/* An internal call answered later is cancelled with the rest: its
 * callback hears -32800; one whose reply is still queued when dispatch
 * goes hears NULL, NULL. */
START_TEST(internal_call_cancelled)
{
	initialize();
	replies_seen = 0;
	ck_assert_int_eq(rpc_dispatch_call(d, "later", NULL, on_reply, &ctx_token, NULL), 0);
	ck_assert_uint_eq(rpc_dispatch_pending(d), 1);
	rpc_dispatch_cancel_all(d);
	ck_assert_int_eq(cancelled[0], 1);
	ck_assert_int_eq(replies_seen, 0);
	loop_timer_start(loop, 50, stop_loop, NULL);
	loop_run(loop);
	ck_assert_int_eq(replies_seen, 1);
	ck_assert(strstr(reply_seen, "-32800") != NULL);
	ck_assert_int_eq(rpc_dispatch_call(d, "echo", NULL, on_reply, &ctx_token, NULL), 0);
	rpc_dispatch_free(d);
	d = NULL;
	ck_assert_int_eq(replies_seen, 2);
	ck_assert_str_eq(reply_seen, "-|-");
}
END_TEST

static Suite *dispatch_suite(void)
{
	Suite *s = suite_create("dispatch");
	TCase *tc = tcase_create("dispatch");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, gate_before_initialize);
	tcase_add_test(tc, gate_after_shutdown);
	tcase_add_test(tc, ids_returned_exactly);
	tcase_add_test(tc, params_spellings);
	tcase_add_test(tc, error_codes);
	tcase_add_test(tc, batches);
	tcase_add_test(tc, batch_with_async_member);
	tcase_add_test(tc, cancel_request);
	tcase_add_test(tc, cancel_all_and_free);
	tcase_add_test(tc, cancel_all_from_handler);
	tcase_add_test(tc, server_to_client);
	tcase_add_test(tc, client_error_response);
	tcase_add_test(tc, request_timeout);
	tcase_add_test(tc, request_cap);
	tcase_add_test(tc, internal_call);
	tcase_add_test(tc, internal_call_cancelled);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(dispatch_suite)
