/* test_edit.c: a proposal as an LSP edit (intent_edit_build in
 * intent/edit.c): insertion at a position, replacement of a range, hunks
 * from a line diff, ranges in UTF-16, UTF-8 and UTF-32 over non-ASCII
 * text and emoji; the edits (and the hunks) applied to the old text give
 * exactly the new text. */
#include "intent/intent.h"

#include "core/json.h"
#include "core/position.h"
#include "core/util.h"
#include "unit.h"

static const enum pos_encoding ENCS[] = {POS_UTF16, POS_UTF8, POS_UTF32};

static json_object *pos(int64_t line, int64_t ch)
{
	json_object *p = json_object_new_object();
	json_object_object_add(p, "line", json_object_new_int64(line));
	json_object_object_add(p, "character", json_object_new_int64(ch));
	return p;
}

static json_object *range(int64_t l0, int64_t c0, int64_t l1, int64_t c1)
{
	json_object *r = json_object_new_object();
	json_object_object_add(r, "start", pos(l0, c0));
	json_object_object_add(r, "end", pos(l1, c1));
	return r;
}

static size_t offset_of(const char *text, json_object *p, enum pos_encoding enc)
{
	int64_t line, ch;
	ck_assert_int_eq(json_get_int64(p, "line", &line), 0);
	ck_assert_int_eq(json_get_int64(p, "character", &ch), 0);
	return pos_offset(text, strlen(text), (uint32_t)line, (uint32_t)ch, enc);
}

/* Apply edits (in order, not overlapping) to text as a client would, from
 * their positions in enc. When hunks is given, each hunk must be the edit
 * plus the exact old text of its range. Returns a new string. */
static char *apply(const char *text, json_object *edits, json_object *hunks, enum pos_encoding enc)
{
	struct buf out;
	buf_init(&out, 1u << 24);
	size_t done = 0;
	size_t n = json_object_array_length(edits);
	if (hunks)
		ck_assert_uint_eq(json_object_array_length(hunks), n);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(edits, i);
		size_t a = offset_of(text, json_get_path(e, "range.start"), enc);
		size_t b = offset_of(text, json_get_path(e, "range.end"), enc);
		ck_assert_msg(a >= done && b >= a, "edit %zu: %zu..%zu after %zu", i, a, b, done);
		const char *nt;
		ck_assert_int_eq(json_get_string(e, "newText", &nt), 0);
		if (hunks) {
			json_object *h = json_object_array_get_idx(hunks, i);
			const char *ht, *old;
			ck_assert_int_eq(json_get_string(h, "newText", &ht), 0);
			ck_assert_str_eq(ht, nt);
			ck_assert_str_eq(json_compact(json_get(h, "range")),
			                 json_compact(json_get(e, "range")));
			ck_assert_int_eq(json_get_string(h, "oldText", &old), 0);
			ck_assert_uint_eq(strlen(old), b - a);
			ck_assert(memcmp(old, text + a, b - a) == 0);
		}
		buf_append(&out, text + done, a - done);
		buf_append(&out, nt, strlen(nt));
		done = b;
	}
	buf_append(&out, text + done, strlen(text) - done);
	size_t len;
	char *s = buf_steal(&out, &len);
	return s ? s : strdup("");
}

static void prop_init(struct intent_proposal *p, const char *text, const char *code)
{
	*p = (struct intent_proposal){.uri = (char *)"file:///w/a.py",
	                              .version = 7,
	                              .text = (char *)text,
	                              .code = (char *)code};
}

static void prop_release(struct intent_proposal *p)
{
	json_object_put(p->edit);
	json_object_put(p->hunks);
	json_object_put(p->range);
	json_object_put(p->position);
}

static json_object *edits_of(struct intent_proposal *p)
{
	json_object *tde = json_object_array_get_idx(json_get(p->edit, "documentChanges"), 0);
	return json_get(tde, "edits");
}

/* Build, apply in enc, and compare with want. */
static void expect(struct intent_proposal *p, enum pos_encoding enc, const char *want)
{
	ck_assert_int_eq(intent_edit_build(p, enc), 0);
	/* No text is an empty document. */
	char *got = apply(p->text ? p->text : "", edits_of(p), p->hunks, enc);
	ck_assert_msg(strcmp(got, want) == 0, "got '%s' want '%s'", got, want);
	free(got);
}

static const char DOC[] = "a = 1\nb = 2\n";

START_TEST(insert_mid_line)
{
	/* In the middle of a line's text the code gets a line of its own. */
	struct intent_proposal p;
	prop_init(&p, DOC, "x()\n");
	p.position = pos(1, 1);
	expect(&p, POS_UTF16, "a = 1\nb\nx()\n = 2\n");
	json_object *tde = json_object_array_get_idx(json_get(p.edit, "documentChanges"), 0);
	ck_assert_str_eq(json_compact(json_get(tde, "textDocument")),
	                 "{\"uri\":\"file:///w/a.py\",\"version\":7}");
	ck_assert_int_eq(json_object_array_length(p.hunks), 1);
	ck_assert_str_eq(json_compact(json_object_array_get_idx(p.hunks, 0)),
	                 "{\"range\":{\"start\":{\"line\":1,\"character\":1},\"end\":{\"line\":1,"
	                 "\"character\":1}},\"newText\":\"\\nx()\\n\",\"oldText\":\"\"}");
	prop_release(&p);
}
END_TEST

START_TEST(insert_line_start_and_end)
{
	struct intent_proposal p;
	prop_init(&p, DOC, "x()\n");
	p.position = pos(1, 0);
	expect(&p, POS_UTF16, "a = 1\nx()\nb = 2\n");
	prop_release(&p);
	/* Code without its newline before text still ends its line. */
	prop_init(&p, DOC, "x()");
	p.position = pos(1, 0);
	expect(&p, POS_UTF16, "a = 1\nx()\nb = 2\n");
	prop_release(&p);
	/* At the end of a line, before its newline. */
	prop_init(&p, DOC, "x()\n");
	p.position = pos(0, 5);
	expect(&p, POS_UTF16, "a = 1\nx()\n\nb = 2\n");
	prop_release(&p);
	/* No place given: appended; a last line without newline is ended. */
	prop_init(&p, "a = 1", "x()\n");
	expect(&p, POS_UTF16, "a = 1\nx()\n");
	prop_release(&p);
	/* Past the end clamps to the end. */
	prop_init(&p, DOC, "x()\n");
	p.position = pos(99, 99);
	expect(&p, POS_UTF16, "a = 1\nb = 2\nx()\n");
	prop_release(&p);
	/* An empty document. */
	prop_init(&p, "", "x()\n");
	p.position = pos(0, 0);
	expect(&p, POS_UTF16, "x()\n");
	prop_release(&p);
}
END_TEST

START_TEST(replace_whole_line)
{
	struct intent_proposal p;
	prop_init(&p, DOC, "b = 3\n");
	p.range = range(1, 0, 2, 0);
	expect(&p, POS_UTF16, "a = 1\nb = 3\n");
	ck_assert_int_eq(json_object_array_length(p.hunks), 1);
	ck_assert_str_eq(json_compact(json_object_array_get_idx(p.hunks, 0)),
	                 "{\"range\":{\"start\":{\"line\":1,\"character\":0},\"end\":{\"line\":2,"
	                 "\"character\":0}},\"newText\":\"b = 3\\n\",\"oldText\":\"b = 2\\n\"}");
	prop_release(&p);
}
END_TEST

/* A selection that stops before its line's newline keeps that newline. */
START_TEST(replace_keeps_newline)
{
	struct intent_proposal p;
	prop_init(&p, DOC, "b = 3\n");
	p.range = range(1, 0, 1, 5);
	expect(&p, POS_UTF16, "a = 1\nb = 3\n");
	prop_release(&p);
	/* Part of a line. */
	prop_init(&p, DOC, "42\n");
	p.range = range(0, 4, 0, 5);
	expect(&p, POS_UTF16, "a = 42\nb = 2\n");
	prop_release(&p);
}
END_TEST

/* Only the changed lines become hunks; unchanged ones between stay. */
START_TEST(hunks_from_diff)
{
	static const char old[] = "import os\n"
	                          "def f():\n"
	                          "    return 1\n"
	                          "\n"
	                          "def g():\n"
	                          "    return 2\n"
	                          "print(f(), g())\n";
	static const char code[] = "import os\n"
	                           "def f():\n"
	                           "    return 10\n"
	                           "\n"
	                           "def g():\n"
	                           "    x = 1\n"
	                           "    return 2 + x\n"
	                           "print(f(), g())\n";
	struct intent_proposal p;
	prop_init(&p, old, code);
	p.range = range(0, 0, 7, 0);
	expect(&p, POS_UTF16, code);
	ck_assert_int_eq(json_object_array_length(p.hunks), 2);
	json_object *h0 = json_object_array_get_idx(p.hunks, 0);
	json_object *h1 = json_object_array_get_idx(p.hunks, 1);
	ck_assert_str_eq(json_compact(json_get(h0, "range")),
	                 "{\"start\":{\"line\":2,\"character\":0},\"end\":{\"line\":3,"
	                 "\"character\":0}}");
	ck_assert_str_eq(json_object_get_string(json_get(h0, "oldText")), "    return 1\n");
	ck_assert_str_eq(json_object_get_string(json_get(h0, "newText")), "    return 10\n");
	ck_assert_str_eq(json_compact(json_get(h1, "range")),
	                 "{\"start\":{\"line\":5,\"character\":0},\"end\":{\"line\":6,"
	                 "\"character\":0}}");
	ck_assert_str_eq(json_object_get_string(json_get(h1, "newText")),
	                 "    x = 1\n    return 2 + x\n");
	/* Each hunk alone applies too (a client may accept one of them). */
	for (int i = 0; i < 2; i++) {
		json_object *one = json_object_new_array();
		json_object_array_add(one, json_object_get(json_object_array_get_idx(p.hunks, i)));
		char *got = apply(old, one, NULL, POS_UTF16);
		ck_assert_ptr_nonnull(strstr(got, i == 0 ? "return 10\n" : "x = 1\n"));
		ck_assert_ptr_null(strstr(got, i == 0 ? "x = 1\n" : "return 10\n"));
		free(got);
		json_object_put(one);
	}
	prop_release(&p);
	/* The same code: no edit at all. */
	prop_init(&p, old, old);
	p.range = range(0, 0, 7, 0);
	expect(&p, POS_UTF16, old);
	ck_assert_int_eq(json_object_array_length(p.hunks), 0);
	prop_release(&p);
	/* Deleting lines and adding lines at the ends. */
	prop_init(&p, old, "def g():\n    return 2\nprint(f(), g())\nprint('end')\n");
	p.range = range(0, 0, 7, 0);
	expect(&p, POS_UTF16, "def g():\n    return 2\nprint(f(), g())\nprint('end')\n");
	prop_release(&p);
}
END_TEST

/* "s = '🎉é'; t = 2": 't' is at byte 14, UTF-16 unit 11, code point 10. */
static const char WIDE[] = "# \xe2\x82\xac\n"
                           "s = '\xf0\x9f\x8e\x89\xc3\xa9'; t = 2\n"
                           "u = 3\n";

START_TEST(ranges_in_every_encoding)
{
	static const int64_t col[] = {11, 14, 10};
	enum pos_encoding enc = ENCS[_i];
	struct intent_proposal p;
	prop_init(&p, WIDE, "t = \xf0\x9f\x98\x80\n");
	p.range = range(1, col[_i], 1, col[_i] + 5);
	expect(&p, enc,
	       "# \xe2\x82\xac\n"
	       "s = '\xf0\x9f\x8e\x89\xc3\xa9'; t = \xf0\x9f\x98\x80\n"
	       "u = 3\n");
	/* The hunk's range is the one asked for, in the same units. */
	json_object *h = json_object_array_get_idx(p.hunks, 0);
	ck_assert_int_eq(unit_int_at(h, "range.start.character"), col[_i]);
	ck_assert_int_eq(unit_int_at(h, "range.end.character"), col[_i] + 5);
	ck_assert_str_eq(json_object_get_string(json_get(h, "oldText")), "t = 2");
	prop_release(&p);
	/* Inserting after the emoji, at the quote. */
	static const int64_t quote[] = {7, 9, 6};
	prop_init(&p, WIDE, "X");
	p.position = pos(1, quote[_i]);
	expect(&p, enc,
	       "# \xe2\x82\xac\n"
	       "s = '\xf0\x9f\x8e\x89\nX\n\xc3\xa9'; t = 2\n"
	       "u = 3\n");
	ck_assert_int_eq(
	    unit_int_at(json_object_array_get_idx(p.hunks, 0), "range.start.character"), quote[_i]);
	prop_release(&p);
}
END_TEST

/* A UTF-16 position inside the emoji's surrogate pair never splits it. */
START_TEST(inside_surrogate_pair)
{
	struct intent_proposal p;
	prop_init(&p, WIDE, "X");
	p.position = pos(1, 6); /* between the emoji's two UTF-16 units */
	ck_assert_int_eq(intent_edit_build(&p, POS_UTF16), 0);
	json_object *h = json_object_array_get_idx(p.hunks, 0);
	int64_t c = unit_int_at(h, "range.start.character");
	ck_assert(c == 5 || c == 7);
	char *got = apply(WIDE, edits_of(&p), p.hunks, POS_UTF16);
	ck_assert(utf8_valid(got, strlen(got)));
	free(got);
	prop_release(&p);
}
END_TEST

START_TEST(bad_ranges)
{
	json_object *bad[] = {
	    range(1, 0, 0, 0),  /* end before start */
	    range(0, 3, 0, 2),  /* same line, end before start */
	    range(-1, 0, 0, 0), /* negative */
	    range(0, 0, 0, -1),
	    range(0, 0, 4294967296LL, 0), /* past uint32 */
	    json_tokener_parse("{\"start\":{\"line\":0},\"end\":{\"line\":0,\"character\":0}}"),
	    json_tokener_parse("{\"start\":{\"line\":\"0\",\"character\":0},"
	                       "\"end\":{\"line\":0,\"character\":0}}"),
	    json_tokener_parse("{\"end\":{\"line\":0,\"character\":0}}"),
	    json_tokener_parse("[]"),
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct intent_proposal p;
		prop_init(&p, DOC, "x\n");
		p.range = bad[i];
		ck_assert_msg(intent_edit_build(&p, POS_UTF16) == -EINVAL, "case %zu", i);
		ck_assert_ptr_null(p.edit);
		prop_release(&p);
	}
	struct intent_proposal p;
	prop_init(&p, DOC, "x\n");
	p.position = json_tokener_parse("{\"line\":1.5,\"character\":true}");
	ck_assert_int_eq(intent_edit_build(&p, POS_UTF16), -EINVAL);
	prop_release(&p);
}
END_TEST

/* Without a document there is nothing to edit; no version is null. */
START_TEST(no_document_and_no_version)
{
	struct intent_proposal p;
	prop_init(&p, NULL, "x\n");
	p.uri = NULL;
	ck_assert_int_eq(intent_edit_build(&p, POS_UTF16), 0);
	ck_assert_ptr_null(p.edit);
	ck_assert_int_eq(json_object_array_length(p.hunks), 0);
	prop_release(&p);
	prop_init(&p, NULL, "x\n");
	p.version = -1;
	expect(&p, POS_UTF16, "x\n");
	json_object *tde = json_object_array_get_idx(json_get(p.edit, "documentChanges"), 0);
	ck_assert_str_eq(json_compact(json_get(tde, "textDocument")),
	                 "{\"uri\":\"file:///w/a.py\",\"version\":null}");
	prop_release(&p);
}
END_TEST

/* Many random documents, ranges and codes over a small alphabet with
 * multi-byte characters and CRLF: the edit always applies back to the
 * text a replacement or insertion means (deterministic generator). */
static uint32_t rng_state = 12345;
static uint32_t rnd(uint32_t n)
{
	rng_state = rng_state * 1103515245u + 12345u;
	return (rng_state >> 8) % n;
}

static void random_text(struct buf *b, unsigned pieces)
{
	static const char *const alpha[] = {
	    "a",    "b",      " ", "\n", "\n", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x8e\x89",
	    "\r\n", "x = 1\n"};
	buf_reset(b);
	for (unsigned i = 0; i < pieces; i++) {
		const char *s = alpha[rnd(ARRAY_SIZE(alpha))];
		buf_append(b, s, strlen(s));
	}
	if (!b->data)
		buf_append(b, "", 0);
}

START_TEST(random_edits_apply)
{
	struct buf text, code;
	buf_init(&text, 1u << 16);
	buf_init(&code, 1u << 16);
	for (int iter = 0; iter < 3000; iter++) {
		enum pos_encoding enc = ENCS[rnd(3)];
		random_text(&text, rnd(40));
		random_text(&code, rnd(30));
		struct intent_proposal p;
		prop_init(&p, text.data, code.data);
		size_t len = text.len;
		size_t a = len, b = len;
		int kind = (int)rnd(3);
		if (kind != 2) {
			/* Offsets from random positions, as pos_offset snaps them. */
			uint32_t l0 = rnd(12), c0 = rnd(10), l1 = l0 + rnd(4), c1 = rnd(10);
			a = pos_offset(text.data, len, l0, c0, enc);
			b = pos_offset(text.data, len, l1, c1, enc);
			if (kind == 0 && b >= a)
				p.range = range(l0, c0, l1, c1);
			else
				p.position = pos(l0, c0), b = a;
		}
		ck_assert_int_eq(intent_edit_build(&p, enc), 0);
		/* What the edit means. */
		struct buf want;
		buf_init(&want, 1u << 20);
		buf_append(&want, text.data, a);
		size_t clen = code.len;
		if (a < b) {
			if (text.data[b - 1] != '\n' && clen && code.data[clen - 1] == '\n')
				clen--;
			buf_append(&want, code.data, clen);
		} else {
			if (a > 0 && text.data[a - 1] != '\n')
				buf_append(&want, "\n", 1);
			buf_append(&want, code.data, clen);
			if (a < len && text.data[a] != '\n' &&
			    (!clen || code.data[clen - 1] != '\n'))
				buf_append(&want, "\n", 1);
		}
		buf_append(&want, text.data + b, len - b);
		char *got = apply(text.data, edits_of(&p), p.hunks, enc);
		ck_assert_msg(strcmp(got, want.data) == 0, "iter %d enc %d", iter, (int)enc);
		free(got);
		buf_release(&want);
		prop_release(&p);
	}
	buf_release(&text);
	buf_release(&code);
}
END_TEST

static Suite *edit_suite(void)
{
	Suite *s = suite_create("edit");
	TCase *tc = tcase_create("edit");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, insert_mid_line);
	tcase_add_test(tc, insert_line_start_and_end);
	tcase_add_test(tc, replace_whole_line);
	tcase_add_test(tc, replace_keeps_newline);
	tcase_add_test(tc, hunks_from_diff);
	tcase_add_loop_test(tc, ranges_in_every_encoding, 0, 3);
	tcase_add_test(tc, inside_surrogate_pair);
	tcase_add_test(tc, bad_ranges);
	tcase_add_test(tc, no_document_and_no_version);
	tcase_add_test(tc, random_edits_apply);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(edit_suite)
