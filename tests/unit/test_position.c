/* test_position.c: LSP position encodings and UTF-8 helpers
 * (core/position.c): columns in UTF-16, UTF-8 and UTF-32 units across
 * 1-, 2-, 3- and 4-byte characters, clamping, and invalid UTF-8. */
#include "core/position.h"

#include "unit.h"

/* "aé€😀b": 1 + 2 + 3 + 4 + 1 bytes. */
static const char LINE[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
                           "b";

START_TEST(encoding_names)
{
	enum pos_encoding e = POS_UTF32;
	ck_assert_int_eq(pos_encoding_parse("utf-8", &e), 0);
	ck_assert_int_eq(e, POS_UTF8);
	ck_assert_int_eq(pos_encoding_parse("utf-16", &e), 0);
	ck_assert_int_eq(e, POS_UTF16);
	ck_assert_int_eq(pos_encoding_parse("utf-32", &e), 0);
	ck_assert_int_eq(e, POS_UTF32);
	e = POS_UTF8;
	ck_assert_int_eq(pos_encoding_parse("UTF-8", &e), -EINVAL);
	ck_assert_int_eq(pos_encoding_parse("utf8", &e), -EINVAL);
	ck_assert_int_eq(pos_encoding_parse("", &e), -EINVAL);
	ck_assert_int_eq(e, POS_UTF8);
	ck_assert_str_eq(pos_encoding_name(POS_UTF8), "utf-8");
	ck_assert_str_eq(pos_encoding_name(POS_UTF16), "utf-16");
	ck_assert_str_eq(pos_encoding_name(POS_UTF32), "utf-32");
}
END_TEST

START_TEST(columns)
{
	/* byte offsets of each character start, and the end */
	const size_t bytes[] = {0, 1, 3, 6, 10, 11};
	const uint32_t u16[] = {0, 1, 2, 3, 5, 6};
	const uint32_t u8[] = {0, 1, 3, 6, 10, 11};
	const uint32_t u32[] = {0, 1, 2, 3, 4, 5};
	for (size_t i = 0; i < 6; i++) {
		ck_assert_uint_eq(pos_column(LINE, bytes[i], POS_UTF16), u16[i]);
		ck_assert_uint_eq(pos_column(LINE, bytes[i], POS_UTF8), u8[i]);
		ck_assert_uint_eq(pos_column(LINE, bytes[i], POS_UTF32), u32[i]);
	}
}
END_TEST

START_TEST(offsets)
{
	const char text[] = "x\n"
	                    "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
	                    "b\r\n"
	                    "last";
	size_t len = strlen(text);
	/* Line 1 starts at byte 2. */
	ck_assert_uint_eq(pos_offset(text, len, 1, 0, POS_UTF16), 2);
	ck_assert_uint_eq(pos_offset(text, len, 1, 3, POS_UTF16), 2 + 6);
	ck_assert_uint_eq(pos_offset(text, len, 1, 5, POS_UTF16), 2 + 10);
	/* Inside a surrogate pair: stay before the character. */
	ck_assert_uint_eq(pos_offset(text, len, 1, 4, POS_UTF16), 2 + 6);
	ck_assert_uint_eq(pos_offset(text, len, 1, 4, POS_UTF32), 2 + 10);
	ck_assert_uint_eq(pos_offset(text, len, 1, 3, POS_UTF8), 2 + 3);
	ck_assert_uint_eq(pos_offset(text, len, 1, 2, POS_UTF8), 2 + 1); /* mid é */
	/* Past the end of the line clamps before "\r\n". */
	ck_assert_uint_eq(pos_offset(text, len, 1, 99, POS_UTF16), 2 + 11);
	ck_assert_uint_eq(pos_offset(text, len, 0, 99, POS_UTF16), 1);
	/* Past the last line clamps to the end of text. */
	ck_assert_uint_eq(pos_offset(text, len, 2, 2, POS_UTF16), len - 2);
	ck_assert_uint_eq(pos_offset(text, len, 9, 0, POS_UTF16), len);
	ck_assert_uint_eq(pos_offset("", 0, 0, 5, POS_UTF8), 0);
}
END_TEST

/* LSP 3.17: "\n", "\r\n" and a lone "\r" each end a line. */
START_TEST(lone_cr_is_a_line_break)
{
	const char text[] = "a\rb\xc3\xa9\r\nc\nd\r\r\xf0\x9f\x98\x80x";
	size_t len = strlen(text);
	/* Lines: "a" 0, "bé" 2, "c" 7, "d" 9, "" 11, "😀x" 12. */
	const uint32_t want[] = {0, 2, 7, 9, 11, 12};
	uint32_t *starts = NULL;
	size_t n = 0;
	ck_assert_int_eq(pos_line_starts(text, len, &starts, &n), 0);
	ck_assert_uint_eq(n, 6);
	for (size_t i = 0; i < n; i++)
		ck_assert_uint_eq(starts[i], want[i]);
	for (size_t i = 0; i < n; i++)
		ck_assert_uint_eq(pos_offset(text, len, (uint32_t)i, 0, POS_UTF16), want[i]);
	/* A column past the end stops at the lone "\r" as at "\r\n". */
	ck_assert_uint_eq(pos_offset(text, len, 0, 9, POS_UTF8), 1);
	ck_assert_uint_eq(pos_offset(text, len, 3, 9, POS_UTF8), 10);
	uint32_t l, c;
	/* 'x' on the last line: after an emoji of 2 UTF-16 units. */
	pos_at(text, len, starts, n, len - 1, POS_UTF16, &l, &c);
	ck_assert_uint_eq(l, 5);
	ck_assert_uint_eq(c, 2);
	pos_at(text, len, starts, n, len - 1, POS_UTF32, &l, &c);
	ck_assert_uint_eq(c, 1);
	/* Between "\r" and "\n": the end of line 1, not a column past it. */
	pos_at(text, len, starts, n, 6, POS_UTF8, &l, &c);
	ck_assert_uint_eq(l, 1);
	ck_assert_uint_eq(c, 3);
	pos_at(text, len, starts, n, 99, POS_UTF8, &l, &c);
	ck_assert_uint_eq(l, 5);
	ck_assert_uint_eq(c, 5);
	free(starts);
	ck_assert_int_eq(pos_line_starts("", 0, &starts, &n), 0);
	ck_assert_uint_eq(n, 1);
	free(starts);
	ck_assert_uint_eq(pos_break_len("\r\n", 2, 0), 2);
	ck_assert_uint_eq(pos_break_len("\r", 1, 0), 1);
	ck_assert_uint_eq(pos_break_len("\rx", 2, 0), 1);
	ck_assert_uint_eq(pos_break_len("x", 1, 0), 0);
}
END_TEST

START_TEST(invalid_bytes_count_one_each)
{
	const char bad[] = "\xff\xc3x";
	ck_assert_uint_eq(pos_column(bad, 3, POS_UTF16), 3);
	ck_assert_uint_eq(pos_column(bad, 3, POS_UTF8), 3);
	ck_assert_uint_eq(pos_column(bad, 3, POS_UTF32), 3);
	/* A sequence cut by byte_col is not read past it. */
	ck_assert_uint_eq(pos_column("\xe2\x82\xac", 2, POS_UTF32), 2);
}
END_TEST

struct utf8_case {
	const char *s;
	size_t n;
	int valid;
};

static const struct utf8_case utf8_cases[] = {
    {"", 0, 1},
    {"plain ascii", 11, 1},
    {"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9, 1},
    {"\xef\xbf\xbf", 3, 1},     /* U+FFFF */
    {"\xf4\x8f\xbf\xbf", 4, 1}, /* U+10FFFF */
    {"a\0b", 3, 1},             /* NUL is a character */
    {"\x80", 1, 0},             /* lone continuation */
    {"\xc0\xaf", 2, 0},         /* overlong '/' */
    {"\xc1\xbf", 2, 0},         /* overlong */
    {"\xe0\x80\xaf", 3, 0},     /* overlong 3-byte */
    {"\xf0\x80\x80\xaf", 4, 0}, /* overlong 4-byte */
    {"\xed\xa0\x80", 3, 0},     /* surrogate U+D800 */
    {"\xed\xbf\xbf", 3, 0},     /* surrogate U+DFFF */
    {"\xf4\x90\x80\x80", 4, 0}, /* past U+10FFFF */
    {"\xf5\x80\x80\x80", 4, 0},
    {"\xff", 1, 0},
    {"\xe2\x82", 2, 0}, /* truncated */
    {"\xc3(", 2, 0},    /* bad continuation */
    {"ok\xf0\x9f\x98", 5, 0},
};

START_TEST(validity)
{
	const struct utf8_case *c = &utf8_cases[_i];
	ck_assert_msg(utf8_valid(c->s, c->n) == c->valid, "case %d", _i);
}
END_TEST

START_TEST(complete_prefix)
{
	const char euro[] = "ab\xe2\x82\xac";
	ck_assert_uint_eq(utf8_complete_prefix(euro, 5), 5);
	ck_assert_uint_eq(utf8_complete_prefix(euro, 4), 2);
	ck_assert_uint_eq(utf8_complete_prefix(euro, 3), 2);
	ck_assert_uint_eq(utf8_complete_prefix(euro, 2), 2);
	const char emoji[] = "\xf0\x9f\x98\x80";
	for (size_t n = 1; n < 4; n++)
		ck_assert_uint_eq(utf8_complete_prefix(emoji, n), 0);
	ck_assert_uint_eq(utf8_complete_prefix(emoji, 4), 4);
	ck_assert_uint_eq(utf8_complete_prefix("", 0), 0);
	/* Bytes that no continuation can complete are passed through. */
	ck_assert_uint_eq(utf8_complete_prefix("a\xff", 2), 2);
	ck_assert_uint_eq(utf8_complete_prefix("a\x80\x80\x80\x80", 5), 5);
	ck_assert_uint_eq(utf8_seq_len((const unsigned char *)emoji, 4), 4);
	ck_assert_uint_eq(utf8_seq_len((const unsigned char *)emoji, 3), 1);
}
END_TEST

static Suite *position_suite(void)
{
	Suite *s = suite_create("position");
	TCase *tc = tcase_create("position");
	tcase_add_test(tc, encoding_names);
	tcase_add_test(tc, columns);
	tcase_add_test(tc, offsets);
	tcase_add_test(tc, lone_cr_is_a_line_break);
	tcase_add_test(tc, invalid_bytes_count_one_each);
	tcase_add_loop_test(tc, validity, 0, (int)(sizeof(utf8_cases) / sizeof(utf8_cases[0])));
	tcase_add_test(tc, complete_prefix);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(position_suite)
