/* test_message.c: JSON-RPC 2.0 message validation and builders
 * (rpc/message.c): strict UTF-8 JSON, the depth cap, every shape rule of
 * the spec, what editors send for "no params", and id comparison. */
#include "rpc/message.h"

#include "core/buf.h"
#include "core/json.h"
#include "unit.h"

static json_object *parse_ok(const char *s)
{
	json_object *o = NULL;
	char detail[200] = "";
	int r = rpc_parse(s, strlen(s), &o, detail, sizeof(detail));
	ck_assert_msg(r == 0, "'%s' failed: %s", s, detail);
	return o;
}

static void parse_fails(const char *s, size_t len, const char *why)
{
	json_object *o = (json_object *)0x1;
	char detail[200] = "";
	ck_assert_int_eq(rpc_parse(s, len, &o, detail, sizeof(detail)), -EINVAL);
	ck_assert_ptr_eq(o, (json_object *)0x1); /* ret_* untouched on failure */
	ck_assert_msg(strstr(detail, why), "detail '%s' lacks '%s'", detail, why);
	ck_assert_msg(strncmp(detail, "Parse error", 11) == 0, "detail '%s'", detail);
}

START_TEST(parse_good)
{
	json_object *o = parse_ok("{\"a\":[1,2,{\"b\":\"\xc3\xa9\xf0\x9f\x98\x80\"}]}\r\n ");
	ck_assert(json_object_is_type(o, json_type_object));
	json_object_put(o);
	/* Every JSON number and literal form passes the strict token check. */
	o = parse_ok("[-0,0.5,10,1e5,1E+5,-1.5e-3,2E-0,true,false,null,\"\\t\\\"\\\\ \\u00e9\"]");
	ck_assert_uint_eq(json_object_array_length(o), 11);
	json_object_put(o);
	o = parse_ok(" {\"a\" : [ ] ,\"b\":{ },\"c\":\"\"}\n");
	json_object_put(o);
	/* A null body parses to NULL, which is not an error here. */
	o = (json_object *)0x1;
	char detail[10];
	ck_assert_int_eq(rpc_parse("null", 4, &o, detail, sizeof(detail)), 0);
	ck_assert_ptr_null(o);
}
END_TEST

START_TEST(parse_bad)
{
	parse_fails("", 0, "ends early");
	parse_fails("{\"a\":", 5, "ends early");
	parse_fails("{} {}", 5, "Parse error");
	parse_fails("{}x", 3, "at byte 2");
	parse_fails("1 2", 3, "Parse error");
	parse_fails("[1,]", 4, "at byte");
	/* Invalid UTF-8: a lone continuation byte, an overlong '/', a
	 * surrogate, and a truncated sequence, each inside a string. */
	parse_fails("\"\x80\"", 3, "Parse error");
	parse_fails("\"\xc0\xaf\"", 4, "Parse error");
	parse_fails("\"\xed\xa0\x80\"", 5, "Parse error");
	parse_fails("\"\xe2\x82\"", 4, "Parse error");
	/* What json-c takes even in strict mode but JSON is not: echoed
	 * back in an id, these would make kiln's own output invalid. */
	parse_fails("[NaN]", 5, "not JSON at byte 1");
	parse_fails("[nan]", 5, "Parse error");
	parse_fails("[-Infinity]", 11, "not JSON");
	parse_fails("{\"id\":1.}", 9, "not JSON at byte 6");
	parse_fails("[1.e5]", 6, "Parse error");
	parse_fails("{'a':1}", 7, "Parse error");
	parse_fails("[\"a\tb\"]", 7, "not JSON at byte 3");
	parse_fails("[\"\x01\"]", 5, "Parse error");
	/* A NUL inside the body ends the text before the declared length. */
	parse_fails("{}\0{}", 5, "Parse error");
}
END_TEST

static char *nested(int depth)
{
	char *s = malloc((size_t)depth * 2 + 1);
	for (int i = 0; i < depth; i++) {
		s[i] = '[';
		s[depth * 2 - 1 - i] = ']';
	}
	s[depth * 2] = '\0';
	return s;
}

START_TEST(depth_cap)
{
	char *ok = nested(RPC_MAX_DEPTH - 1);
	json_object_put(parse_ok(ok));
	/* A top-level scalar is complete JSON (the spec's "--> 1" example). */
	json_object_put(parse_ok("1"));
	json_object_put(parse_ok("-1.5"));
	json_object_put(parse_ok("true"));
	free(ok);
	char *deep = nested(RPC_MAX_DEPTH + 1);
	parse_fails(deep, strlen(deep), "nesting deeper than");
	free(deep);
	/* Hostile depth is refused without recursing through it. */
	char *hostile = nested(200000);
	parse_fails(hostile, strlen(hostile), "nesting deeper than");
	free(hostile);
}
END_TEST

struct msg_case {
	const char *json;
	int ok;
	enum rpc_kind kind;
	const char *detail; /* for invalid ones */
	const char *bad_id; /* compact id expected back, "" for none/null */
};

static const struct msg_case msg_cases[] = {
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"a\":1}}", 1, RPC_KIND_REQUEST,
     "", ""},
    {"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"m\"}", 1, RPC_KIND_REQUEST, "", ""},
    {"{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"m\",\"params\":[1]}", 1, RPC_KIND_REQUEST,
     "", ""},
    {"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"m\"}", 1, RPC_KIND_REQUEST, "", ""},
    {"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"m\"}", 1, RPC_KIND_REQUEST, "", ""},
    {"{\"jsonrpc\":\"2.0\",\"method\":\"m\"}", 1, RPC_KIND_NOTIFICATION, "", ""},
    {"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":null}", 1, RPC_KIND_NOTIFICATION, "", ""},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}", 1, RPC_KIND_RESPONSE, "", ""},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"x\"}}", 1,
     RPC_KIND_RESPONSE, "", ""},
    {"[]", 0, 0, "must be a JSON object", ""},
    {"1", 0, 0, "must be a JSON object", ""},
    {"{\"id\":7,\"method\":\"m\"}", 0, 0, "\"jsonrpc\" must be \"2.0\"", "7"},
    {"{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"m\"}", 0, 0, "\"jsonrpc\" must be", "7"},
    {"{\"jsonrpc\":2.0,\"id\":7,\"method\":\"m\"}", 0, 0, "\"jsonrpc\" must be", "7"},
    {"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"m\"}", 0, 0, "\"id\" must be", ""},
    {"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"m\"}", 0, 0, "\"id\" must be", ""},
    {"{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"m\"}", 0, 0, "\"id\" must be", ""},
    {"{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":1}", 0, 0, "\"method\" must be a string",
     "\"x\""},
    {"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"m\",\"params\":\"bar\"}", 0, 0,
     "\"params\" must be an object or an array", "3"},
    {"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":5}", 0, 0, "\"params\" must be", ""},
    {"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":true}", 0, 0, "\"params\" must be", ""},
    {"{\"jsonrpc\":\"2.0\",\"id\":1}", 0, 0, "exactly one of", "1"},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"error\":{}}", 0, 0, "exactly one of", "1"},
    {"{\"jsonrpc\":\"2.0\",\"result\":1}", 0, 0, "exactly one of", ""},
    {"{\"foo\":\"boo\"}", 0, 0, "\"jsonrpc\" must be", ""},
};

START_TEST(validate)
{
	const struct msg_case *c = &msg_cases[_i];
	json_object *o = parse_ok(c->json);
	struct rpc_msg m = {.kind = 99};
	json_object *bad_id = (json_object *)0x1;
	char detail[200] = "";
	int r = rpc_msg_parse(o, &m, &bad_id, detail, sizeof(detail));
	if (c->ok) {
		ck_assert_msg(r == 0, "%s: %s", c->json, detail);
		ck_assert_int_eq(m.kind, c->kind);
	} else {
		ck_assert_msg(r == -EINVAL, "%s accepted", c->json);
		ck_assert_int_eq(m.kind, 99); /* ret untouched */
		ck_assert_msg(strstr(detail, c->detail), "%s: detail '%s'", c->json, detail);
		ck_assert_msg(strncmp(detail, "Invalid Request", 15) == 0, "detail '%s'", detail);
		if (c->bad_id[0])
			ck_assert_str_eq(json_compact(bad_id), c->bad_id);
		else
			ck_assert_ptr_null(bad_id);
	}
	json_object_put(o);
}
END_TEST

/* Neovim's [], Emacs's null and VS Code's omission all reach a handler as
 * NULL; a non-empty array or any object is passed through. */
START_TEST(no_params_spellings)
{
	const char *spellings[] = {
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":[]}",
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":null}",
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}",
	};
	for (size_t i = 0; i < 3; i++) {
		json_object *o = parse_ok(spellings[i]);
		struct rpc_msg m;
		json_object *bad;
		char detail[100];
		ck_assert_int_eq(rpc_msg_parse(o, &m, &bad, detail, sizeof(detail)), 0);
		ck_assert_ptr_null(m.params);
		ck_assert_str_eq(m.method, "m");
		json_object_put(o);
	}
	json_object *o = parse_ok("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{}}");
	struct rpc_msg m;
	json_object *bad;
	char detail[100];
	ck_assert_int_eq(rpc_msg_parse(o, &m, &bad, detail, sizeof(detail)), 0);
	ck_assert_ptr_nonnull(m.params);
	json_object_put(o);
}
END_TEST

START_TEST(id_kept_exactly)
{
	json_object *o = parse_ok("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"m\"}");
	struct rpc_msg m;
	json_object *bad;
	char detail[100];
	ck_assert_int_eq(rpc_msg_parse(o, &m, &bad, detail, sizeof(detail)), 0);
	ck_assert_ptr_nonnull(m.id);
	ck_assert_str_eq(json_compact(m.id), "0");
	json_object *resp = rpc_response_new(m.id, json_object_new_string("ok"));
	ck_assert_str_eq(json_compact(resp), "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":\"ok\"}");
	json_object_put(resp);
	json_object_put(o);
}
END_TEST

START_TEST(builders)
{
	json_object *id = json_object_new_string("x/y");
	json_object *r = rpc_response_new(NULL, NULL);
	ck_assert_str_eq(json_compact(r), "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":null}");
	json_object_put(r);
	r = rpc_error_new(id, RPC_METHOD_NOT_FOUND, NULL, NULL);
	ck_assert_str_eq(json_compact(r), "{\"jsonrpc\":\"2.0\",\"id\":\"x/y\",\"error\":{\"code\":"
	                                  "-32601,\"message\":\"Method not found\"}}");
	json_object_put(r);
	/* The code's standard text leads every message (docs/protocol.md). */
	r = rpc_error_new(NULL, -32000, "custom", json_object_new_int(5));
	ck_assert_str_eq(json_compact(r),
	                 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":"
	                 "-32000,\"message\":\"Server error: custom\",\"data\":5}}");
	json_object_put(r);
	/* Messages quote client bytes; the reply stays valid UTF-8. */
	r = rpc_error_new(NULL, RPC_PARSE_ERROR, "line (\xc9 33) \xc3\xa9 cut \xe2\x82", NULL);
	ck_assert_str_eq(json_object_get_string(json_get_path(r, "error.message")),
	                 "Parse error: line (? 33) \xc3\xa9 cut ??");
	json_object_put(r);
	r = rpc_notification_new("run/output", NULL);
	ck_assert_str_eq(json_compact(r), "{\"jsonrpc\":\"2.0\",\"method\":\"run/output\"}");
	json_object_put(r);
	r = rpc_request_new(id, "m", json_object_new_array());
	ck_assert_str_eq(json_compact(r),
	                 "{\"jsonrpc\":\"2.0\",\"id\":\"x/y\",\"method\":\"m\",\"params\":[]}");
	json_object_put(r);
	json_object_put(id);
}
END_TEST

/* rpc_write_response and rpc_write_error write what json_write writes
 * for the objects rpc_response_new and rpc_error_new build, byte for
 * byte, for every kind of id, result, message and data. */
START_TEST(write_matches_builders)
{
	static const char *const ids[] = {
	    "null", "0", "-7", "9223372036854775807", "1.50", "\"\"", "\"a\\\"b\\u0001\xc3\xa9\"",
	};
	static const char *const values[] = {
	    "null", "true", "3", "\"ok\"", "[]", "{}", "{\"a\":[1,2.0,{\"b\":\"\\n\"}],\"c\":-0.5}",
	};
	static const char *const messages[] = {
	    NULL,
	    "",
	    "custom",
	    "Method not found",
	    "Method not found: x",
	    "Method not foundx",
	    "line (\xc9 33) \xc3\xa9 \"q\" \\ cut \xe2\x82",
	};
	static const int codes[] = {
	    RPC_PARSE_ERROR, RPC_METHOD_NOT_FOUND, RPC_REQUEST_CANCELLED, -32000, 0, 7};
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		json_object *id = parse_ok(ids[i]);
		for (size_t v = 0; v < sizeof(values) / sizeof(values[0]); v++) {
			json_object *val = parse_ok(values[v]);
			struct buf want, got;
			buf_init(&want, 1 << 20);
			buf_init(&got, 1 << 20);
			json_object *r = rpc_response_new(id, json_object_get(val));
			ck_assert_int_eq(json_write(&want, r), 0);
			json_object_put(r);
			ck_assert_int_eq(rpc_write_response(&got, id, val), 0);
			ck_assert_str_eq(got.data, want.data);
			for (size_t m = 0; m < sizeof(messages) / sizeof(messages[0]); m++)
				for (size_t c = 0; c < sizeof(codes) / sizeof(codes[0]); c++)
					for (int with_data = 0; with_data < 2; with_data++) {
						json_object *data = with_data ? val : NULL;
						buf_reset(&want);
						buf_reset(&got);
						r = rpc_error_new(id, codes[c], messages[m],
						                  json_object_get(data));
						ck_assert_int_eq(json_write(&want, r), 0);
						json_object_put(r);
						ck_assert_int_eq(rpc_write_error(&got, id, codes[c],
						                                 messages[m], data),
						                 0);
						ck_assert_str_eq(got.data, want.data);
					}
			buf_release(&want);
			buf_release(&got);
			json_object_put(val);
		}
		json_object_put(id);
	}
}
END_TEST

START_TEST(error_messages)
{
	ck_assert_str_eq(rpc_error_message(-32700), "Parse error");
	ck_assert_str_eq(rpc_error_message(-32600), "Invalid Request");
	ck_assert_str_eq(rpc_error_message(-32601), "Method not found");
	ck_assert_str_eq(rpc_error_message(-32602), "Invalid params");
	ck_assert_str_eq(rpc_error_message(-32603), "Internal error");
	ck_assert_str_eq(rpc_error_message(-32002), "Server not initialized");
	ck_assert_str_eq(rpc_error_message(-32800), "Request cancelled");
	ck_assert_str_eq(rpc_error_message(-32803), "Request failed");
	ck_assert_str_eq(rpc_error_message(-32099), "Server error");
}
END_TEST

START_TEST(id_equality)
{
	json_object *one = json_object_new_int(1);
	json_object *one_d = json_object_new_double(1.0);
	json_object *s1 = json_object_new_string("1");
	json_object *s1b = json_object_new_string("1");
	json_object *two = json_object_new_int(2);
	ck_assert(rpc_id_equal(one, one_d));
	ck_assert(rpc_id_equal(s1, s1b));
	ck_assert(!rpc_id_equal(one, s1));
	ck_assert(!rpc_id_equal(one, two));
	ck_assert(rpc_id_equal(NULL, NULL));
	ck_assert(!rpc_id_equal(NULL, one));
	ck_assert(!rpc_id_equal(s1, NULL));
	json_object_put(one);
	json_object_put(one_d);
	json_object_put(s1);
	json_object_put(s1b);
	json_object_put(two);
}
END_TEST

static Suite *message_suite(void)
{
	Suite *s = suite_create("message");
	TCase *tc = tcase_create("message");
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, parse_good);
	tcase_add_test(tc, parse_bad);
	tcase_add_test(tc, depth_cap);
	tcase_add_loop_test(tc, validate, 0, (int)(sizeof(msg_cases) / sizeof(msg_cases[0])));
	tcase_add_test(tc, no_params_spellings);
	tcase_add_test(tc, id_kept_exactly);
	tcase_add_test(tc, builders);
	tcase_add_test(tc, write_matches_builders);
	tcase_add_test(tc, error_messages);
	tcase_add_test(tc, id_equality);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(message_suite)
