/* test_frame.c: the LSP framer (rpc/frame.c): bodies out of any split of
 * the byte stream, every framing error, recovery after each, the size cap
 * without holding the body, and end of input in every state. */
#include "rpc/frame.h"

#include "unit.h"

#define BIG (1u << 20)

static void feed(struct frame_reader *fr, const char *s, struct unit_frames *f)
{
	ck_assert_int_eq(frame_reader_feed(fr, s, strlen(s), &unit_frames_cbs, f), 0);
}

static const char *method_of(json_object *o)
{
	json_object *m;
	return json_object_object_get_ex(o, "method", &m) ? json_object_get_string(m) : "";
}

static const char TWO[] = "Content-Length: 14\r\n\r\n{\"method\":\"a\"}"
                          "Content-Length: 14\r\n\r\n{\"method\":\"b\"}";

START_TEST(whole_and_two_in_one_chunk)
{
	struct frame_reader fr;
	struct unit_frames f = {0};
	frame_reader_init(&fr, BIG);
	ck_assert(frame_reader_idle(&fr));
	feed(&fr, TWO, &f);
	ck_assert_int_eq(f.nmsgs, 2);
	ck_assert_int_eq(f.nerrors, 0);
	ck_assert_str_eq(method_of(f.msgs[0]), "a");
	ck_assert_str_eq(method_of(f.msgs[1]), "b");
	ck_assert(frame_reader_idle(&fr));
	unit_frames_release(&f);
	frame_reader_release(&fr);
}
END_TEST

/* Every split point of the stream gives the same two bodies. */
START_TEST(any_split_point)
{
	size_t n = strlen(TWO);
	for (size_t cut = 0; cut <= n; cut++) {
		struct frame_reader fr;
		struct unit_frames f = {0};
		frame_reader_init(&fr, BIG);
		frame_reader_feed(&fr, TWO, cut, &unit_frames_cbs, &f);
		frame_reader_feed(&fr, TWO + cut, n - cut, &unit_frames_cbs, &f);
		ck_assert_msg(f.nmsgs == 2 && f.nerrors == 0, "cut at %zu: %d msgs %d errors", cut,
		              f.nmsgs, f.nerrors);
		ck_assert_str_eq(method_of(f.msgs[1]), "b");
		unit_frames_release(&f);
		frame_reader_release(&fr);
	}
}
END_TEST

START_TEST(byte_at_a_time)
{
	struct frame_reader fr;
	struct unit_frames f = {0};
	frame_reader_init(&fr, BIG);
	for (size_t i = 0; TWO[i]; i++) {
		ck_assert_int_eq(frame_reader_feed(&fr, TWO + i, 1, &unit_frames_cbs, &f), 0);
		ck_assert_int_eq(frame_reader_idle(&fr), i == 35 || i == strlen(TWO) - 1);
	}
	ck_assert_int_eq(f.nmsgs, 2);
	unit_frames_release(&f);
	frame_reader_release(&fr);
}
END_TEST

/* VS Code sends Content-Type; header names are case-insensitive; a person
 * at a terminal types bare newlines; whitespace around the value is fine. */
START_TEST(header_variants)
{
	struct frame_reader fr;
	struct unit_frames f = {0};
	frame_reader_init(&fr, BIG);
	feed(
	    &fr,
	    "Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}"
	    "content-type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length:2\r\n\r\n{}"
	    "CONTENT-LENGTH:\t 2 \t\n\n{}"
	    "X-Whatever: yes\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
	    &f);
	ck_assert_int_eq(f.nerrors, 0);
	ck_assert_int_eq(f.nmsgs, 4);
	unit_frames_release(&f);
	frame_reader_release(&fr);
}
END_TEST

START_TEST(zero_length_body)
{
	struct frame_reader fr;
	struct unit_frames f = {0};
	frame_reader_init(&fr, BIG);
	feed(&fr, "Content-Length: 0\r\n\r\n", &f);
	ck_assert_int_eq(f.nmsgs, 1);
	ck_assert_ptr_null(f.msgs[0]);
	ck_assert(frame_reader_idle(&fr));
	unit_frames_release(&f);
	frame_reader_release(&fr);
}
END_TEST

/* Each bad header is one error, and the next good message still arrives. */
struct bad_case {
	const char *input;
	enum frame_error err;
};

static const struct bad_case bad_cases[] = {
    {"Content-Type: application/json\r\n\r\n{}", FRAME_ERR_NO_LENGTH},
    {"\r\n\r\n", FRAME_ERR_NO_LENGTH},
    {"Content-Length: abc\r\n\r\n{}", FRAME_ERR_BAD_LENGTH},
    {"Content-Length: -2\r\n\r\n{}", FRAME_ERR_BAD_LENGTH},
    {"Content-Length: 0x10\r\n\r\n{}", FRAME_ERR_BAD_LENGTH},
    {"Content-Length: \r\n\r\n{}", FRAME_ERR_BAD_LENGTH},
    {"Content-Length: 99999999999999999999999\r\n\r\n", FRAME_ERR_BAD_LENGTH},
    {"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", FRAME_ERR_BAD_LENGTH},
    {"Content-Length 2\r\n\r\n{}", FRAME_ERR_BAD_HEADER},
    {"{\"jsonrpc\":\"2.0\"}\r\n\r\n", FRAME_ERR_NO_LENGTH},
};

START_TEST(bad_header_then_recovery)
{
	const struct bad_case *c = &bad_cases[_i];
	struct frame_reader fr;
	struct unit_frames f = {0};
	frame_reader_init(&fr, BIG);
	feed(&fr, c->input, &f);
	feed(&fr, "Content-Length: 14\r\n\r\n{\"method\":\"z\"}", &f);
	ck_assert_msg(f.nerrors == 1, "case %d: %d errors", _i, f.nerrors);
	ck_assert_int_eq(f.errors[0], c->err);
	ck_assert_msg(f.nmsgs == 1, "case %d: %d messages", _i, f.nmsgs);
	ck_assert_str_eq(method_of(f.msgs[0]), "z");
	unit_frames_release(&f);
	frame_reader_release(&fr);
}
END_TEST

/* Recovery finds "Content-Length:" even split across two reads. */
START_TEST(resync_marker_split)
{
	struct frame_reader fr;
	struct unit_frames f = {0};
	frame_reader_init(&fr, BIG);
	feed(&fr, "Content-Length: x\r\n\r\n{\"junk\":1}Conte", &f);
	feed(&fr, "nt-Len", &f);
	feed(&fr, "gth: 14\r\n\r\n{\"method\":\"z\"}", &f);
	ck_assert_int_eq(f.nerrors, 1);
	ck_assert_int_eq(f.nmsgs, 1);
	ck_assert_str_eq(method_of(f.msgs[0]), "z");
	unit_frames_release(&f);
	frame_reader_release(&fr);
}
END_TEST

/* A client that counts characters, not bytes, undercounts a body with
 * non-ASCII text: its tail runs into the next header. The cut body is
 * delivered (the peer answers it -32700), the tail is one error, and the
 * next, well-formed message still arrives, however the stream is cut into
 * reads. Before, the tail made the next header unusable and its body was
 * skipped: the client waited forever for that reply. */
static const char *const undercounts[] = {
    /* {"method":"é"} is 15 bytes, 14 characters. */
    "Content-Length: 14\r\n\r\n{\"method\":\"\xc3\xa9\"}"
    "Content-Length: 14\r\n\r\n{\"method\":\"z\"}",
    /* The tail ends in a newline: a header line without a colon. */
    "Content-Length: 16\r\n\r\n{\"method\":\"\xc3\xa9\xc3\xa9\"}\n"
    "Content-Length: 14\r\n\r\n{\"method\":\"z\"}",
    /* A longer tail with a colon in it. */
    "Content-Length: 26\r\n\r\n{\"method\":\"\xc3\xa9\xc3\xa9\",\"p\":{\"a\":1}}"
    "content-length: 14\r\n\r\n{\"method\":\"z\"}",
};

START_TEST(undercounted_length)
{
	const char *in = undercounts[_i];
	size_t n = strlen(in);
	for (size_t cut = 0; cut <= n; cut++) {
		struct frame_reader fr;
		struct unit_frames f = {0};
		frame_reader_init(&fr, BIG);
		frame_reader_feed(&fr, in, cut, &unit_frames_cbs, &f);
		frame_reader_feed(&fr, in + cut, n - cut, &unit_frames_cbs, &f);
		ck_assert_msg(f.nmsgs == 2 && f.nerrors == 1,
		              "case %d cut at %zu: %d msgs %d errors", _i, cut, f.nmsgs, f.nerrors);
		ck_assert_ptr_null(f.msgs[0]); /* the cut body is not JSON */
		ck_assert_int_eq(f.errors[0], FRAME_ERR_BAD_HEADER);
		ck_assert_str_eq(method_of(f.msgs[1]), "z");
		ck_assert(frame_reader_idle(&fr));
		unit_frames_release(&f);
		frame_reader_release(&fr);
	}
}
END_TEST

/* A body over the cap is reported and skipped as it streams past; the
 * reader never buffers it, and the next message is read normally. */
START_TEST(oversized_is_skipped_not_held)
{
	struct frame_reader fr;
	struct unit_frames f = {0};
	frame_reader_init(&fr, 100);
	feed(&fr, "Content-Length: 1000000\r\n\r\n", &f);
	ck_assert_int_eq(f.nerrors, 1);
	ck_assert_int_eq(f.errors[0], FRAME_ERR_TOO_LARGE);
	ck_assert_ptr_nonnull(strstr(f.last_error, "1000000"));
	char chunk[4096];
	memset(chunk, 'x', sizeof(chunk));
	size_t left = 1000000;
	while (left) {
		size_t n = left < sizeof(chunk) ? left : sizeof(chunk);
		ck_assert_int_eq(frame_reader_feed(&fr, chunk, n, &unit_frames_cbs, &f), 0);
		left -= n;
		ck_assert_uint_le(fr.body.cap, 4096);
	}
	feed(&fr, "Content-Length: 14\r\n\r\n{\"method\":\"z\"}", &f);
	ck_assert_int_eq(f.nerrors, 1);
	ck_assert_int_eq(f.nmsgs, 1);
	ck_assert_str_eq(method_of(f.msgs[0]), "z");
	/* Exactly at the cap is accepted. */
	char msg[200];
	snprintf(msg, sizeof(msg), "Content-Length: 100\r\n\r\n[%098d]", 0);
	feed(&fr, msg, &f);
	ck_assert_int_eq(f.nerrors, 1);
	ck_assert_int_eq(f.nmsgs, 2);
	unit_frames_release(&f);
	frame_reader_release(&fr);
}
END_TEST

START_TEST(header_block_too_long)
{
	struct frame_reader fr;
	struct unit_frames f = {0};
	frame_reader_init(&fr, BIG);
	char *junk = malloc(20000);
	memset(junk, 'h', 20000);
	ck_assert_int_eq(frame_reader_feed(&fr, junk, 20000, &unit_frames_cbs, &f), 0);
	free(junk);
	ck_assert_int_eq(f.nerrors, 1);
	ck_assert_int_eq(f.errors[0], FRAME_ERR_BAD_HEADER);
	feed(&fr, "Content-Length: 14\r\n\r\n{\"method\":\"z\"}", &f);
	ck_assert_int_eq(f.nmsgs, 1);
	unit_frames_release(&f);
	frame_reader_release(&fr);
}
END_TEST

struct eof_case {
	const char *input;
	int errors;
	const char *detail;
};

static const struct eof_case eof_cases[] = {
    {"", 0, ""},
    {"Content-Len", 1, "inside a header"},
    {"Content-Length: 10\r\n\r\n", 1, "after 0 of 10 body bytes"},
    {"Content-Length: 10\r\n\r\n{\"a\"", 1, "after 4 of 10 body bytes"},
    {"Content-Length: x\r\n\r\n{}", 1, "not a decimal"}, /* error at once; eof quiet */
};

START_TEST(end_of_input)
{
	const struct eof_case *c = &eof_cases[_i];
	struct frame_reader fr;
	struct unit_frames f = {0};
	frame_reader_init(&fr, BIG);
	feed(&fr, c->input, &f);
	frame_reader_eof(&fr, &unit_frames_cbs, &f);
	ck_assert_int_eq(f.nmsgs, 0);
	ck_assert_int_eq(f.nerrors, c->errors);
	if (c->errors)
		ck_assert_msg(strstr(f.last_error, c->detail), "case %d: '%s'", _i, f.last_error);
	if (c->errors && _i != 4)
		ck_assert_int_eq(f.errors[0], FRAME_ERR_TRUNCATED);
	/* After eof the reader is reset and usable again. */
	ck_assert(frame_reader_idle(&fr));
	unit_frames_release(&f);
	frame_reader_release(&fr);
}
END_TEST

START_TEST(eof_inside_oversized)
{
	struct frame_reader fr;
	struct unit_frames f = {0};
	frame_reader_init(&fr, 10);
	feed(&fr, "Content-Length: 11\r\n\r\nabc", &f);
	frame_reader_eof(&fr, &unit_frames_cbs, &f);
	ck_assert_int_eq(f.nerrors, 2);
	ck_assert_int_eq(f.errors[0], FRAME_ERR_TOO_LARGE);
	ck_assert_int_eq(f.errors[1], FRAME_ERR_TRUNCATED);
	unit_frames_release(&f);
	frame_reader_release(&fr);
}
END_TEST

START_TEST(encode)
{
	struct buf b;
	buf_init(&b, 1000);
	ck_assert_int_eq(frame_encode(&b, "{\"a\":1}", 7), 0);
	ck_assert_str_eq(b.data, "Content-Length: 7\r\n\r\n{\"a\":1}");
	/* The encoding reads back as the same body. */
	struct frame_reader fr;
	struct unit_frames f = {0};
	frame_reader_init(&fr, BIG);
	feed(&fr, b.data, &f);
	ck_assert_int_eq(f.nmsgs, 1);
	ck_assert_int_eq(unit_int_at(f.msgs[0], "a"), 1);
	unit_frames_release(&f);
	frame_reader_release(&fr);
	/* The cap of the output buffer holds. */
	buf_release(&b);
	buf_init(&b, 10);
	ck_assert_int_eq(frame_encode(&b, "{\"a\":1}", 7), -ENOBUFS);
	buf_release(&b);
}
END_TEST

/* The body handed to the callback is NUL-terminated even when the next
 * message's bytes follow it in the same read. */
static void expect_terminated(void *data, char *body, size_t len)
{
	(void)data;
	ck_assert_int_eq(body[len], '\0');
	ck_assert_uint_eq(strlen(body), len);
}

START_TEST(body_nul_terminated)
{
	struct frame_reader fr;
	struct frame_callbacks cb = {.message = expect_terminated, .error = unit_frames_on_error};
	struct unit_frames f = {0};
	frame_reader_init(&fr, BIG);
	ck_assert_int_eq(frame_reader_feed(&fr, TWO, strlen(TWO), &cb, &f), 0);
	ck_assert_int_eq(f.nerrors, 0);
	frame_reader_release(&fr);
}
END_TEST

static Suite *frame_suite(void)
{
	Suite *s = suite_create("frame");
	TCase *tc = tcase_create("frame");
	tcase_add_test(tc, whole_and_two_in_one_chunk);
	tcase_add_test(tc, any_split_point);
	tcase_add_test(tc, byte_at_a_time);
	tcase_add_test(tc, header_variants);
	tcase_add_test(tc, zero_length_body);
	tcase_add_loop_test(tc, bad_header_then_recovery, 0,
	                    (int)(sizeof(bad_cases) / sizeof(bad_cases[0])));
	tcase_add_test(tc, resync_marker_split);
	tcase_add_loop_test(tc, undercounted_length, 0,
	                    (int)(sizeof(undercounts) / sizeof(undercounts[0])));
	tcase_add_test(tc, oversized_is_skipped_not_held);
	tcase_add_test(tc, header_block_too_long);
	tcase_add_loop_test(tc, end_of_input, 0, (int)(sizeof(eof_cases) / sizeof(eof_cases[0])));
	tcase_add_test(tc, eof_inside_oversized);
	tcase_add_test(tc, encode);
	tcase_add_test(tc, body_nul_terminated);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(frame_suite)
