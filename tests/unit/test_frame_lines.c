/* test_frame_lines.c: the newline-delimited framer (rpc/frame_lines.c) of
 * kiln mcp: bodies out of any split of the stream, CRLF and blank lines,
 * a last line without a newline at end of input, the size cap (the line is
 * skipped without being held, and the next one read), and the encoder. */
#include "rpc/frame_lines.h"

#include "unit.h"

static const char *method_of(json_object *o)
{
	json_object *m;
	return json_object_object_get_ex(o, "method", &m) ? json_object_get_string(m) : "";
}

static const char TWO[] = "{\"method\":\"a\"}\n\r\n  \n{\"method\":\"b\"}\r\n";

START_TEST(any_split_point)
{
	size_t n = strlen(TWO);
	for (size_t cut = 0; cut <= n; cut++) {
		struct line_reader lr;
		struct unit_frames f = {0};
		line_reader_init(&lr, 1024);
		ck_assert_int_eq(line_reader_feed(&lr, TWO, cut, &unit_frames_cbs, &f), 0);
		ck_assert_int_eq(line_reader_feed(&lr, TWO + cut, n - cut, &unit_frames_cbs, &f),
		                 0);
		ck_assert_msg(f.nmsgs == 2 && f.nerrors == 0, "cut at %zu: %d msgs %d errors", cut,
		              f.nmsgs, f.nerrors);
		ck_assert_str_eq(method_of(f.msgs[0]), "a");
		ck_assert_str_eq(method_of(f.msgs[1]), "b");
		unit_frames_release(&f);
		line_reader_release(&lr);
	}
}
END_TEST

START_TEST(last_line_at_eof)
{
	struct line_reader lr;
	struct unit_frames f = {0};
	line_reader_init(&lr, 1024);
	const char *s = "{\"method\":\"a\"}";
	line_reader_feed(&lr, s, strlen(s), &unit_frames_cbs, &f);
	ck_assert_int_eq(f.nmsgs, 0);
	line_reader_eof(&lr, &unit_frames_cbs, &f);
	ck_assert_int_eq(f.nmsgs, 1);
	ck_assert_int_eq(f.nerrors, 0);
	unit_frames_release(&f);
	line_reader_release(&lr);
}
END_TEST

/* A line over the cap is reported once and skipped, in however many
 * pieces it comes; the line after it is read. */
START_TEST(over_the_cap)
{
	struct line_reader lr;
	struct unit_frames f = {0};
	line_reader_init(&lr, 32);
	char big[100];
	memset(big, 'x', sizeof(big));
	for (int i = 0; i < 5; i++)
		line_reader_feed(&lr, big, sizeof(big), &unit_frames_cbs, &f);
	line_reader_feed(&lr, "\n{\"method\":\"c\"}\n", 16, &unit_frames_cbs, &f);
	ck_assert_int_eq(f.nerrors, 1);
	ck_assert_int_eq(f.nmsgs, 1);
	ck_assert_str_eq(method_of(f.msgs[0]), "c");
	ck_assert_uint_lt(lr.line.cap, 500); /* 500 bytes came: not held */
	unit_frames_release(&f);
	line_reader_release(&lr);
}
END_TEST

START_TEST(encode)
{
	struct buf b;
	buf_init(&b, 1024);
	ck_assert_int_eq(frame_encode_line(&b, "{}", 2), 0);
	ck_assert_int_eq(frame_encode_line(&b, "{\n}", 3), -EINVAL);
	ck_assert_uint_eq(b.len, 3);
	ck_assert(memcmp(b.data, "{}\n", 3) == 0);
	buf_release(&b);
}
END_TEST

static Suite *frame_lines_suite(void)
{
	Suite *s = suite_create("frame_lines");
	TCase *tc = tcase_create("frame_lines");
	tcase_add_test(tc, any_split_point);
	tcase_add_test(tc, last_line_at_eof);
	tcase_add_test(tc, over_the_cap);
	tcase_add_test(tc, encode);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(frame_lines_suite)
