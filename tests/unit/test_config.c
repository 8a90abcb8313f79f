/* test_config.c: the JSON config (config.c): the default path under
 * XDG_CONFIG_HOME, a missing file, bad files, and initializationOptions
 * laid over the file key by key. Also the json.h helpers it rests on. */
#include "config.h"

#include <sys/stat.h>

#include "core/json.h"
#include "llm/llm.h"
#include "unit.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/kiln-test-config-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(default_path_missing_is_empty)
{
	setenv("XDG_CONFIG_HOME", dir, 1);
	json_object *c = NULL;
	char detail[200] = "";
	ck_assert_int_eq(config_load(NULL, &c, detail, sizeof(detail)), 0);
	ck_assert_str_eq(json_compact(c), "{}");
	json_object_put(c);
}
END_TEST

START_TEST(default_path_read)
{
	char path[128];
	setenv("XDG_CONFIG_HOME", dir, 1);
	snprintf(path, sizeof(path), "%s/kiln", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/kiln/config.json", dir);
	write_file(path, "{\"sandbox\":{\"memory\":100}}");
	json_object *c = NULL;
	char detail[200] = "";
	ck_assert_int_eq(config_load(NULL, &c, detail, sizeof(detail)), 0);
	ck_assert_int_eq(unit_int_at(c, "sandbox.memory"), 100);
	json_object_put(c);
	/* A relative XDG_CONFIG_HOME is ignored (XDG says so): HOME is used. */
	setenv("XDG_CONFIG_HOME", "relative", 1);
	setenv("HOME", dir, 1);
	ck_assert_int_eq(config_load(NULL, &c, detail, sizeof(detail)), 0);
	ck_assert_str_eq(json_compact(c), "{}");
	json_object_put(c);
}
END_TEST

START_TEST(explicit_path_errors)
{
	char path[128];
	json_object *c = (json_object *)0x1;
	char detail[300] = "";
	snprintf(path, sizeof(path), "%s/none.json", dir);
	ck_assert_int_eq(config_load(path, &c, detail, sizeof(detail)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(detail, "none.json"));
	snprintf(path, sizeof(path), "%s/bad.json", dir);
	write_file(path, "{\"a\":");
	ck_assert_int_eq(config_load(path, &c, detail, sizeof(detail)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(detail, "not valid JSON: line 1, column 6"));
	write_file(path, "[1,2]");
	ck_assert_int_eq(config_load(path, &c, detail, sizeof(detail)), -EINVAL);
	write_file(path, "7");
	ck_assert_int_eq(config_load(path, &c, detail, sizeof(detail)), -EINVAL);
	ck_assert_ptr_eq(c, (json_object *)0x1);
	/* Over 1 MiB is refused. */
	FILE *f = fopen(path, "w");
	fputs("{\"a\":\"", f);
	for (int i = 0; i < (1 << 20); i++)
		fputc('x', f);
	fputs("\"}", f);
	fclose(f);
	ck_assert_int_eq(config_load(path, &c, detail, sizeof(detail)), -EFBIG);
	/* A good explicit file. */
	write_file(path, " {\"llm\":{\"model\":\"m\"}} \n");
	ck_assert_int_eq(config_load(path, &c, detail, sizeof(detail)), 0);
	json_object *llm = config_section(c, "llm");
	ck_assert_ptr_nonnull(llm);
	ck_assert_ptr_null(config_section(c, "sandbox"));
	json_object_put(c);
}
END_TEST

/* A syntax error names its line and column, counted as an editor counts
 * them (from 1, characters not bytes), so the user can go there. */
static const struct {
	const char *text;
	const char *want;
} syntax_cases[] = {
    {"{\n  \"llm\": {\n    \"url\": \"x\",\n  }\n}\n", "line 4, column 3"},
    {"{\"a\": 1,\n \"b\": tru }", "line 2, column 10"},
    {"{\"\xc3\xa9\": NaN}", "line 1, column 7"},
    {"{\"a\": 1}\n\n x", "line 3, column 2"},
    {"{\"a\": [1,\n", "line 2, column 1"},
};

START_TEST(syntax_error_position)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/c.json", dir);
	write_file(path, syntax_cases[_i].text);
	json_object *c = NULL;
	char detail[300] = "";
	ck_assert_int_eq(config_load(path, &c, detail, sizeof(detail)), -EINVAL);
	ck_assert_msg(strstr(detail, syntax_cases[_i].want), "case %d: %s", _i, detail);
	ck_assert_ptr_nonnull(strstr(detail, "c.json"));
	ck_assert_ptr_null(c);
	ck_assert_ptr_null(strstr(detail, "at byte")); /* said as line, column */
}
END_TEST

/* A section of the wrong type is an error naming it, in the file and in
 * initializationOptions alike; it used to be ignored silently. */
START_TEST(section_types)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/c.json", dir);
	write_file(path, "{\"llm\": \"ollama\"}");
	json_object *c = NULL;
	char detail[300] = "";
	ck_assert_int_eq(config_load(path, &c, detail, sizeof(detail)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(detail, "\"llm\" must be an object, not string"));
	json_object *o = json_tokener_parse("{\"sandbox\":[1],\"other\":5,\"llm\":null}");
	ck_assert_int_eq(config_check(o, "initializationOptions", detail, sizeof(detail)), -EINVAL);
	ck_assert_str_eq(detail, "initializationOptions: \"sandbox\" must be an object, not array");
	json_object_put(o);
	/* Unknown members and null sections are fine. */
	o = json_tokener_parse("{\"other\":5,\"llm\":null,\"intent\":{}}");
	ck_assert_int_eq(config_check(o, "x", detail, sizeof(detail)), 0);
	ck_assert_int_eq(config_check(NULL, "x", detail, sizeof(detail)), 0);
	json_object_put(o);
}
END_TEST

/* A member of the wrong type names itself ({"llm":{"url":5}} used to fall
 * back to the environment and the default in silence). */
static const struct {
	const char *section;
	const char *want;
} llm_cases[] = {
    {"{\"url\":5}", "llm.url must be a string, not int"},
    {"{\"provider\":true}", "llm.provider must be a string, not boolean"},
    {"{\"model\":[\"m\"]}", "llm.model must be a string, not array"},
    {"{\"apiKey\":{}}", "llm.apiKey must be a string, not object"},
    {"{\"maxTokens\":\"9\"}", "llm.maxTokens must be an integer"},
    {"{\"idleTimeoutMs\":1.5}", "llm.idleTimeoutMs must be a non-negative number"},
};

START_TEST(llm_member_types)
{
	json_object *sec = json_tokener_parse(llm_cases[_i].section);
	struct llm_config cfg;
	char detail[300] = "";
	ck_assert_int_eq(llm_config_resolve(sec, &cfg, detail, sizeof(detail)), -EINVAL);
	ck_assert_str_eq(detail, llm_cases[_i].want);
	json_object_put(sec);
	/* null is unset, not a wrong type. */
	sec = json_tokener_parse("{\"url\":null,\"model\":\"m\"}");
	ck_assert_int_eq(llm_config_resolve(sec, &cfg, detail, sizeof(detail)), 0);
	ck_assert_str_eq(cfg.model, "m");
	llm_config_release(&cfg);
	json_object_put(sec);
}
END_TEST

START_TEST(merge_overlays_key_by_key)
{
	json_object *base = json_tokener_parse(
	    "{\"sandbox\":{\"memory\":100,\"net\":false},\"llm\":{\"model\":\"a\"},\"x\":1}");
	json_object *over = json_tokener_parse(
	    "{\"sandbox\":{\"memory\":200,\"cpu\":2},\"llm\":\"off\",\"y\":null,\"z\":[1]}");
	ck_assert_int_eq(config_merge(base, over), 0);
	ck_assert_str_eq(json_compact(base),
	                 "{\"sandbox\":{\"memory\":200,\"net\":false,\"cpu\":2},\"llm\":\"off\","
	                 "\"x\":1,\"y\":null,\"z\":[1]}");
	/* The overlay is borrowed: changing it later leaves base alone. */
	json_object_array_add(json_get(over, "z"), json_object_new_int(2));
	ck_assert_str_eq(json_compact(json_get(base, "z")), "[1]");
	/* A non-object overlay (initializationOptions: null or []) is a no-op. */
	ck_assert_int_eq(config_merge(base, NULL), 0);
	json_object *arr = json_object_new_array();
	ck_assert_int_eq(config_merge(base, arr), 0);
	json_object_put(arr);
	ck_assert_ptr_null(config_section(base, "llm")); /* not an object */
	ck_assert_ptr_null(config_section(NULL, "llm"));
	json_object_put(base);
	json_object_put(over);
}
END_TEST

START_TEST(json_helpers)
{
	json_object *o = json_tokener_parse(
	    "{\"s\":\"a/b\",\"i\":42,\"b\":true,\"n\":null,\"o\":{\"p\":{\"q\":[1]}},\"a\":[]}");
	const char *s = NULL;
	int64_t i = 0;
	bool b = false;
	json_object *sub = NULL;
	ck_assert_int_eq(json_get_string(o, "s", &s), 0);
	ck_assert_str_eq(s, "a/b");
	ck_assert_int_eq(json_get_string(o, "i", &s), -EINVAL);
	ck_assert_int_eq(json_get_string(o, "n", &s), -ENOENT);
	ck_assert_int_eq(json_get_string(o, "missing", &s), -ENOENT);
	ck_assert_str_eq(s, "a/b"); /* untouched on failure */
	ck_assert_int_eq(json_get_int64(o, "i", &i), 0);
	ck_assert_int_eq(i, 42);
	ck_assert_int_eq(json_get_int64(o, "s", &i), -EINVAL);
	ck_assert_int_eq(json_get_bool(o, "b", &b), 0);
	ck_assert(b);
	ck_assert_int_eq(json_get_bool(o, "i", &b), -EINVAL);
	ck_assert_int_eq(json_get_object(o, "o", &sub), 0);
	ck_assert_int_eq(json_get_object(o, "a", &sub), -EINVAL);
	ck_assert_int_eq(json_get_array(o, "a", &sub), 0);
	ck_assert_int_eq(json_get_array(o, "o", &sub), -EINVAL);
	ck_assert_str_eq(json_compact(json_get_path(o, "o.p.q")), "[1]");
	ck_assert_ptr_null(json_get_path(o, "o.x.q"));
	ck_assert_ptr_null(json_get_path(o, "s.x"));
	ck_assert_ptr_null(json_get(NULL, "s"));
	ck_assert_ptr_null(json_get(json_get(o, "a"), "s"));
	/* Compact, and '/' is not escaped. */
	ck_assert_str_eq(json_compact(json_get(o, "s")), "\"a/b\"");
	json_object *copy = json_copy(o);
	ck_assert_ptr_ne(copy, o);
	ck_assert(json_object_equal(copy, o));
	ck_assert_ptr_null(json_copy(NULL));
	json_object_put(copy);
	json_object_put(o);
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("config");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, default_path_missing_is_empty);
	tcase_add_test(tc, default_path_read);
	tcase_add_test(tc, explicit_path_errors);
	tcase_add_loop_test(tc, syntax_error_position, 0,
	                    (int)(sizeof(syntax_cases) / sizeof(syntax_cases[0])));
	tcase_add_test(tc, section_types);
	tcase_add_loop_test(tc, llm_member_types, 0,
	                    (int)(sizeof(llm_cases) / sizeof(llm_cases[0])));
	tcase_add_test(tc, merge_overlays_key_by_key);
	tcase_add_test(tc, json_helpers);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(config_suite)
