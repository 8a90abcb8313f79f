/* test_match.c: replay/match.c, which decides every transcript: subset
 * matching, exact integers, arrays by length, each placeholder for what it
 * takes and what it refuses, captures bound once and kept only on a
 * successful match, the path and reason of a mismatch, and substitution
 * into sent messages. Each "must not match" case is a bug that would let
 * every transcript pass (docs/transcripts.md, "Matching"). */
#include "replay/match.h"

#include "core/json.h"
#include "unit.h"

static json_object *js(const char *text)
{
	json_object *o = NULL;
	char detail[200] = "";
	ck_assert_msg(json_parse_strict(text, strlen(text), 1u << 20, &o, detail, sizeof(detail)) >=
	                  0,
	              "not JSON: %s (%s)", text, detail);
	return o;
}

/* Whether actual matches expected, with fresh captures; why as given. */
static bool try_match(const char *expected, const char *actual, char *why, size_t wsz)
{
	struct match_captures c;
	match_captures_init(&c);
	json_object *e = js(expected), *a = js(actual);
	bool ok = match_json(e, a, &c, why, wsz);
	json_object_put(e);
	json_object_put(a);
	match_captures_release(&c);
	return ok;
}

static void matches(const char *expected, const char *actual)
{
	char why[512] = "";
	ck_assert_msg(try_match(expected, actual, why, sizeof(why)), "%s should match %s: %s",
	              expected, actual, why);
}

/* It must not match, and why must contain the words given. */
static void differs(const char *expected, const char *actual, const char *because)
{
	char why[512] = "";
	ck_assert_msg(!try_match(expected, actual, why, sizeof(why)), "%s must not match %s",
	              expected, actual);
	ck_assert_msg(strstr(why, because), "%s vs %s: why is '%s', lacks '%s'", expected, actual,
	              why, because);
}

START_TEST(objects_match_by_subset)
{
	matches("{}", "{\"a\":1}");
	matches("{\"a\":1}", "{\"a\":1,\"b\":2}");
	matches("{\"a\":{\"b\":\"x\"}}", "{\"a\":{\"b\":\"x\",\"c\":null}}");
	differs("{\"a\":1}", "{\"b\":1}", "$.a: missing (expected 1)");
	differs("{\"a\":{\"b\":\"x\"}}", "{\"a\":{\"b\":\"y\"}}",
	        "$.a.b: expected \"x\", got \"y\"");
	differs("{\"a\":1}", "[1]", "$: expected an object");
	differs("{\"a\":null}", "{\"a\":0}", "$.a: expected null, got 0");
	differs("{\"a\":null}", "{}", "$.a: missing");
	/* The first mismatch, by path, in the words the runner shows. */
	differs("{\"result\":{\"verdict\":\"allow\"}}", "{\"result\":{\"verdict\":\"deny\"}}",
	        "$.result.verdict: expected \"allow\", got \"deny\"");
}
END_TEST

START_TEST(scalars_match_by_type_and_value)
{
	matches("\"a\"", "\"a\"");
	matches("true", "true");
	matches("null", "null");
	differs("\"a\"", "\"b\"", "expected \"a\"");
	differs("\"1\"", "1", "expected \"1\", got 1");
	differs("1", "\"1\"", "expected 1, got \"1\"");
	differs("true", "1", "expected true, got 1");
	differs("false", "null", "expected false, got null");
	differs("false", "true", "expected false");
	differs("\"\"", "null", "got null");
}
END_TEST

START_TEST(integers_exactly)
{
	matches("1", "1");
	matches("-7", "-7");
	matches("1", "1.0"); /* docs/transcripts.md: 1 and 1.0 are equal */
	matches("2.5", "2.5");
	differs("1", "2", "expected 1, got 2");
	differs("0.5", "0.25", "expected 0.5");
	differs("3", "3.5", "expected 3");
	differs("3.5", "3", "got 3");
	/* As doubles these pairs are equal: 2^53 + 1 rounds to 2^53. */
	differs("9007199254740993", "9007199254740992", "expected 9007199254740993");
	matches("9007199254740992", "9007199254740992.0");
	differs("9007199254740993", "9007199254740992.0", "expected");
	matches("9007199254740992", "9007199254740992");
	differs("9223372036854775807", "9223372036854775806", "expected");
	matches("9223372036854775807", "9223372036854775807");
	/* json-c keeps these above INT64_MAX as uint64. */
	differs("18446744073709551615", "18446744073709551614", "expected");
	differs("9223372036854775808", "9223372036854775807", "expected");
	matches("18446744073709551615", "18446744073709551615");
	differs("-1", "18446744073709551615", "expected -1");
	differs("0", "-0.5", "expected 0");
	matches("0", "-0.0");
}
END_TEST

START_TEST(arrays_by_length_and_order)
{
	matches("[]", "[]");
	matches("[1,\"a\"]", "[1,\"a\"]");
	differs("[1]", "[1,2]", "$: expected 1 elements, got 2");
	differs("[1,2]", "[1]", "expected 2 elements, got 1");
	differs("[1,2]", "[2,1]", "$[0]: expected 1, got 2");
	differs("[]", "[1]", "expected 0 elements");
	differs("[1]", "{\"0\":1}", "expected an array");
	/* Elements match by subset too. */
	matches("[{\"a\":1}]", "[{\"a\":1,\"b\":2}]");
	differs("[{\"a\":1},{\"a\":2}]", "[{\"a\":1},{\"a\":3}]", "$[1].a: expected 2, got 3");
	/* "{{...}}" last: any array that starts with the elements before it. */
	matches("[1,\"{{...}}\"]", "[1]");
	matches("[1,\"{{...}}\"]", "[1,2,3]");
	matches("[\"{{...}}\"]", "[]");
	differs("[1,\"{{...}}\"]", "[2,3]", "$[0]: expected 1, got 2");
	differs("[1,2,\"{{...}}\"]", "[1]", "expected at least 2 elements, got 1");
	/* Elsewhere "{{...}}" is not a wildcard. */
	differs("[\"{{...}}\",1]", "[5,1]", "$[0]");
}
END_TEST

START_TEST(type_placeholders)
{
	static const struct {
		const char *ph, *yes, *no;
	} cases[] = {
	    {"{{string}}", "\"x\"", "1"},
	    {"{{string}}", "\"\"", "null"},
	    {"{{number}}", "1", "\"1\""},
	    {"{{number}}", "1.5", "true"},
	    {"{{object}}", "{}", "[]"},
	    {"{{object}}", "{\"a\":1}", "null"},
	    {"{{array}}", "[]", "{}"},
	    {"{{array}}", "[1]", "\"[1]\""},
	    {"{{bool}}", "false", "0"},
	    {"{{bool}}", "true", "\"true\""},
	    {"{{null}}", "null", "0"},
	    {"{{null}}", "null", "\"\""},
	    {"{{null}}", "null", "false"},
	    {"{{nosuchtype}}", NULL, "1"},
	    {"{{nosuchtype}}", NULL, "\"{{nosuchtype}}\""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char exp[128], act[128];
		snprintf(exp, sizeof(exp), "{\"v\":\"%s\"}", cases[i].ph);
		if (cases[i].yes) {
			snprintf(act, sizeof(act), "{\"v\":%s}", cases[i].yes);
			matches(exp, act);
		}
		snprintf(act, sizeof(act), "{\"v\":%s}", cases[i].no);
		differs(exp, act, "$.v: expected");
	}
	/* {{any}}: any value that is there, null included; not a missing one. */
	matches("{\"v\":\"{{any}}\"}", "{\"v\":null}");
	matches("{\"v\":\"{{any}}\"}", "{\"v\":[1,{}]}");
	differs("{\"v\":\"{{any}}\"}", "{}", "$.v: missing");
	/* A placeholder written in the message is not the message. */
	differs("\"{{string}}x\"", "\"ax\"", "expected");
}
END_TEST

START_TEST(absent)
{
	matches("{\"a\":\"{{absent}}\"}", "{\"b\":1}");
	differs("{\"a\":\"{{absent}}\"}", "{\"a\":null}", "$.a: expected no such member, got null");
	differs("{\"a\":\"{{absent}}\"}", "{\"a\":1}", "expected no such member");
}
END_TEST

START_TEST(regex)
{
	/* POSIX extended, found anywhere in the string unless anchored. */
	matches("\"{{re:id}}\"", "\"the id is bad\"");
	matches("\"{{re:^Invalid Request}}\"", "\"Invalid Request: x\"");
	differs("\"{{re:^Request}}\"", "\"Invalid Request: x\"", "matching /^Request/");
	differs("\"{{re:x$}}\"", "\"xy\"", "matching /x$/");
	matches("\"{{re:^a+b?$}}\"", "\"aaa\"");
	differs("\"{{re:^a+b?$}}\"", "\"aaac\"", "matching");
	matches("\"{{re:(JSON|events)}}\"", "\"not events\"");
	differs("\"{{re:1}}\"", "1", "expected a string matching /1/, got 1");
	differs("\"{{re:x}}\"", "null", "expected a string matching");
	differs("\"{{re:(}}\"", "\"(\"", "bad regular expression");
	/* The message of error-invalid-id.test, and one it must refuse: the
	 * "id" of "Invalid" found everywhere was no check at all. */
	const char *want =
	    "\"{{re:^Invalid Request: \\\"id\\\" must be a string, number or null$}}\"";
	matches(want, "\"Invalid Request: \\\"id\\\" must be a string, number or null\"");
	differs(want, "\"Invalid Request: \\\"jsonrpc\\\" must be \\\"2.0\\\"\"", "matching");
}
END_TEST

START_TEST(captures)
{
	struct match_captures c;
	match_captures_init(&c);
	char why[512] = "";
	json_object *e = js("{\"id\":\"{{$run}}\",\"n\":\"{{$n}}\"}");
	json_object *a = js("{\"id\":\"r-1\",\"n\":9007199254740993}");
	ck_assert(match_json(e, a, &c, why, sizeof(why)));
	json_object_put(a);
	/* Bound: the same values match again, others do not. */
	a = js("{\"id\":\"r-1\",\"n\":9007199254740993}");
	ck_assert(match_json(e, a, &c, why, sizeof(why)));
	json_object_put(a);
	a = js("{\"id\":\"r-2\",\"n\":9007199254740993}");
	ck_assert(!match_json(e, a, &c, why, sizeof(why)));
	ck_assert_msg(strstr(why, "$.id: expected \"r-1\" (bound to $run), got \"r-2\""), "%s",
	              why);
	json_object_put(a);
	a = js("{\"id\":\"r-1\",\"n\":9007199254740992}");
	ck_assert_msg(!match_json(e, a, &c, why, sizeof(why)),
	              "a bound integer compared inexactly");
	json_object_put(a);
	json_object_put(e);

	/* A failed match binds nothing: $x stays free for the next message. */
	e = js("{\"x\":\"{{$x}}\",\"k\":1}");
	a = js("{\"x\":\"first\",\"k\":2}");
	ck_assert(!match_json(e, a, &c, why, sizeof(why)));
	json_object_put(a);
	a = js("{\"x\":\"second\",\"k\":1}");
	ck_assert(match_json(e, a, &c, why, sizeof(why)));
	json_object_put(a);
	json_object *x = NULL;
	ck_assert(json_object_object_get_ex(c.bound, "x", &x));
	ck_assert_str_eq(json_object_get_string(x), "second");
	json_object_put(e);

	/* Within one message, the second use must equal the first. */
	e = js("[\"{{$same}}\",\"{{$same}}\"]");
	a = js("[1,2]");
	ck_assert(!match_json(e, a, &c, why, sizeof(why)));
	ck_assert_msg(strstr(why, "$[1]: expected 1 (bound to $same), got 2"), "%s", why);
	json_object_put(a);
	ck_assert(!json_object_object_get_ex(c.bound, "same", NULL));
	/* A bound null is bound (not free). */
	json_object_put(e);
	e = js("{\"v\":\"{{$nul}}\"}");
	a = js("{\"v\":null}");
	ck_assert(match_json(e, a, &c, why, sizeof(why)));
	json_object_put(a);
	a = js("{\"v\":0}");
	ck_assert(!match_json(e, a, &c, why, sizeof(why)));
	json_object_put(a);
	json_object_put(e);
	/* An object bound matches only an equal object, not a subset. */
	e = js("{\"v\":\"{{$obj}}\"}");
	a = js("{\"v\":{\"a\":1}}");
	ck_assert(match_json(e, a, &c, why, sizeof(why)));
	json_object_put(a);
	a = js("{\"v\":{\"a\":1,\"b\":2}}");
	ck_assert(!match_json(e, a, &c, why, sizeof(why)));
	json_object_put(a);
	json_object_put(e);
	match_captures_release(&c);
}
END_TEST

START_TEST(substitute)
{
	struct match_captures c;
	match_captures_init(&c);
	char why[256] = "";
	json_object *e = js("{\"id\":\"{{$p}}\"}");
	json_object *a = js("{\"id\":\"prop-7\"}");
	ck_assert(match_json(e, a, &c, why, sizeof(why)));
	json_object_put(e);
	json_object_put(a);
	json_object *m =
	    js("{\"params\":{\"proposalId\":\"{{$p}}\",\"list\":[\"{{$p}}\",\"{{p}}\"],"
	       "\"text\":\"x {{$p}}\"}}");
	ck_assert_int_eq(match_substitute(&m, &c, why, sizeof(why)), 0);
	ck_assert_str_eq(json_compact(m),
	                 "{\"params\":{\"proposalId\":\"prop-7\",\"list\":[\"prop-7\","
	                 "\"{{p}}\"],\"text\":\"x {{$p}}\"}}");
	json_object_put(m);
	m = js("{\"a\":[\"{{$unbound}}\"]}");
	ck_assert_int_eq(match_substitute(&m, &c, why, sizeof(why)), -ENOENT);
	ck_assert_str_eq(why, "{{$unbound}} is not bound yet");
	json_object_put(m);
	match_captures_release(&c);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("match");
	TCase *tc = tcase_create("match");
	tcase_add_test(tc, objects_match_by_subset);
	tcase_add_test(tc, scalars_match_by_type_and_value);
	tcase_add_test(tc, integers_exactly);
	tcase_add_test(tc, arrays_by_length_and_order);
	tcase_add_test(tc, type_placeholders);
	tcase_add_test(tc, absent);
	tcase_add_test(tc, regex);
	tcase_add_test(tc, captures);
	tcase_add_test(tc, substitute);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(make_suite)
