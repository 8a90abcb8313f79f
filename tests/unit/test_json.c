/* test_json.c: core/json.c's strict parser, the one the protocol, the
 * config and the model providers share: the size cap its caller names,
 * RFC 8259 beyond json-c's strict mode, UTF-8, the depth cap, and ret_*
 * written only on success. (rpc_parse's wording: test_message.c.) */
#include "core/json.h"

#include "unit.h"

static int parse(const char *s, size_t max, json_object **ret, char *detail, size_t dsz)
{
	return json_parse_strict(s, strlen(s), max, ret, detail, dsz);
}

START_TEST(size_cap)
{
	json_object *o = (json_object *)0x1;
	char detail[128] = "";
	/* At the cap it parses; one byte over it is refused unparsed. */
	ck_assert_int_eq(parse("[1,2]", 5, &o, detail, sizeof(detail)), 0);
	ck_assert_uint_eq(json_object_array_length(o), 2);
	json_object_put(o);
	o = (json_object *)0x1;
	ck_assert_int_eq(parse("[1,2] ", 5, &o, detail, sizeof(detail)), -EFBIG);
	ck_assert_ptr_eq(o, (json_object *)0x1);
	ck_assert_str_eq(detail, "the text is larger than 5 bytes");
}
END_TEST

static void refused(const char *s, size_t len, const char *why)
{
	json_object *o = (json_object *)0x1;
	char detail[128] = "";
	ck_assert_int_eq(json_parse_strict(s, len, 1u << 20, &o, detail, sizeof(detail)), -EINVAL);
	ck_assert_ptr_eq(o, (json_object *)0x1);
	ck_assert_msg(strstr(detail, why), "'%s': detail '%s' lacks '%s'", s, detail, why);
	/* The caller adds its own context ("Parse error: " for the
	 * protocol, "... is not JSON (...)" for a model's answer). */
	ck_assert_msg(strncmp(detail, "Parse error", 11) != 0, "detail '%s'", detail);
}

START_TEST(strict)
{
	refused("", 0, "ends early");
	refused("{\"a\":1", 6, "ends early");
	refused("NaN", 3, "at byte");
	refused("[1.]", 4, "at byte 1");
	refused("[\"a\tb\"]", 7, "at byte 3");
	refused("{} x", 4, "at byte 3");
	refused("\"\xed\xa0\x80\"", 5, "not valid UTF-8");
	refused("\"\xc0\xaf\"", 4, "not valid UTF-8");
	char deep[JSON_MAX_DEPTH + 3];
	memset(deep, '[', JSON_MAX_DEPTH + 2);
	deep[JSON_MAX_DEPTH + 2] = '\0';
	refused(deep, strlen(deep), "nesting deeper than 128 levels");
	/* What JSON is passes, a null text as NULL. */
	json_object *o = (json_object *)0x1;
	char detail[64];
	ck_assert_int_eq(parse(" null\n", 100, &o, detail, sizeof(detail)), 0);
	ck_assert_ptr_null(o);
	ck_assert_int_eq(
	    parse("{\"k\":\"\xf0\x9f\x98\x80\\u00e9\"}", 100, &o, detail, sizeof(detail)), 0);
	ck_assert_str_eq(json_object_get_string(json_get(o, "k")), "\xf0\x9f\x98\x80\xc3\xa9");
	json_object_put(o);
}
END_TEST

static Suite *json_suite(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("json");
	tcase_add_test(tc, size_cap);
	tcase_add_test(tc, strict);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(json_suite)
