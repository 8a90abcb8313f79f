/* test_doc_store.c: the open documents' text (methods/doc_store.c):
 * incremental changes in UTF-16 and UTF-8 positions, whole-text changes,
 * a bad range, the per-document cap, and the total cap across documents. */
#include "methods/doc_store.h"

#include "core/json.h"
#include "unit.h"

static json_object *parse(const char *s)
{
	json_object *o = NULL;
	ck_assert_int_eq(json_parse_strict(s, strlen(s), 1 << 20, &o, NULL, 0), 0);
	return o;
}

static void change(struct doc_store *s, const char *uri, const char *changes, enum pos_encoding enc,
                   int want)
{
	json_object *c = parse(changes);
	struct doc *d;
	char detail[200] = "";
	ck_assert_int_eq(docs_change(s, uri, 2, c, enc, &d, detail, sizeof(detail)), want);
	json_object_put(c);
}

START_TEST(incremental_utf16)
{
	struct doc_store s = {0};
	struct doc *d;
	/* "é" is one UTF-16 unit, two bytes; "😀" two units, four bytes. */
	const char *text = "a\xc3\xa9\xf0\x9f\x98\x80z\nline2\n";
	ck_assert_int_eq(docs_open(&s, "file:///a.py", "python", 1, text, strlen(text), &d), 0);
	ck_assert_str_eq(d->language, "python");
	change(&s, "file:///a.py",
	       "[{\"range\":{\"start\":{\"line\":0,\"character\":4},\"end\":{\"line\":0,"
	       "\"character\":5}},\"text\":\"Z\"},"
	       "{\"range\":{\"start\":{\"line\":1,\"character\":0},\"end\":{\"line\":1,"
	       "\"character\":4}},\"text\":\"\"}]",
	       POS_UTF16, 0);
	ck_assert_str_eq(d->text.data, "a\xc3\xa9\xf0\x9f\x98\x80Z\n2\n");
	ck_assert_uint_eq(s.total, d->text.len);
	change(&s, "file:///a.py", "[{\"text\":\"whole\"}]", POS_UTF8, 0);
	ck_assert_str_eq(d->text.data, "whole");
	ck_assert_int_eq(d->version, 2);
	change(&s, "file:///a.py",
	       "[{\"range\":{\"start\":{\"line\":0,\"character\":3},\"end\":{\"line\":0,"
	       "\"character\":1}},\"text\":\"x\"}]",
	       POS_UTF8, -EINVAL);
	change(&s, "file:///none.py", "[]", POS_UTF8, -ENOENT);
	docs_close(&s, "file:///a.py");
	ck_assert_uint_eq(s.ndocs, 0);
	ck_assert_uint_eq(s.total, 0);
	doc_store_release(&s);
}
END_TEST

START_TEST(language_from_extension)
{
	struct doc_store s = {0};
	struct doc *d;
	ck_assert_int_eq(docs_open(&s, "file:///x/run.sh", "shellscript", 1, "", 0, &d), 0);
	ck_assert_str_eq(d->language, "bash");
	ck_assert_int_eq(docs_open(&s, "file:///x/notes.txt", "plaintext", 1, "", 0, &d), 0);
	ck_assert_ptr_null(d->language);
	doc_store_release(&s);
}
END_TEST

/* Past a cap the document is kept without text, and says so. */
START_TEST(caps)
{
	struct doc_store s = {0};
	struct doc *d;
	size_t n = DOC_MAX_TEXT + 1;
	char *big = malloc(n);
	memset(big, 'x', n);
	ck_assert_int_eq(docs_open(&s, "file:///big", NULL, 1, big, n, &d), 0);
	ck_assert(d->too_big);
	ck_assert_uint_eq(s.total, 0);
	/* Eight documents of 8 MiB fill the total; the ninth is kept empty. */
	for (int i = 0; i < 9; i++) {
		char uri[32];
		snprintf(uri, sizeof(uri), "file:///d%d", i);
		ck_assert_int_eq(docs_open(&s, uri, NULL, 1, big, DOC_MAX_TEXT, &d), 0);
		ck_assert_msg(d->too_big == (i == 8), "document %d", i);
	}
	ck_assert_uint_le(s.total, DOC_MAX_TOTAL);
	free(big);
	doc_store_release(&s);
}
END_TEST

static Suite *doc_store_suite(void)
{
	Suite *s = suite_create("doc_store");
	TCase *tc = tcase_create("doc_store");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, incremental_utf16);
	tcase_add_test(tc, language_from_extension);
	tcase_add_test(tc, caps);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(doc_store_suite)
