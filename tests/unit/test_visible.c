/* test_visible.c: core/visible.c: text made visible for a terminal (every
 * control, bidi and invisible character, each form, with and without
 * colour; JSON escaped to the same value) and the program output filter
 * (colour kept, every other sequence dropped, bytes that are not UTF-8
 * replaced, the same bytes out however the input is split into chunks, the
 * length caps). */
#include "core/visible.h"

#include "core/buf.h"
#include "unit.h"

static char *vis(const char *s, size_t len, unsigned flags)
{
	struct buf b;
	buf_init(&b, 1u << 20);
	ck_assert_int_eq(vis_append(&b, s, len, flags), 0);
	ck_assert_int_eq(buf_append(&b, "", 0), 0);
	return buf_steal(&b, NULL);
}

static void vis_is(const char *in, unsigned flags, const char *want)
{
	char *got = vis(in, strlen(in), flags);
	ck_assert_msg(strcmp(got, want) == 0, "vis(\"%s\") gave \"%s\", want \"%s\"", in, got,
	              want);
	free(got);
}

START_TEST(visible_forms)
{
	/* Plain text, UTF-8 letters and emoji pass as they are. */
	vis_is("print(6 * 7) # caf\xc3\xa9 \xf0\x9f\x98\x80", 0,
	       "print(6 * 7) # caf\xc3\xa9 \xf0\x9f\x98\x80");
	/* C0 controls in caret notation; ESC is ^[, CR ^M, DEL ^?. */
	vis_is("a\033[2Kb\rc\x7f\x01", 0, "a^[[2Kb^Mc^?^A");
	vis_is("\a\b\f\v", 0, "^G^H^L^K");
	/* Line breaks and tabs only where the caller keeps them. */
	vis_is("a\tb\nc", 0, "a^Ib^Jc");
	vis_is("a\tb\nc", VIS_NEWLINE | VIS_TAB, "a\tb\nc");
	vis_is("a\tb\r\nc", VIS_NEWLINE | VIS_TAB, "a\tb^M\nc");
	/* C1 controls (8-bit CSI U+009B, NEL U+0085). */
	vis_is("x\xc2\x9b"
	       "2Jy\xc2\x85",
	       0, "x<U+009B>2Jy<U+0085>");
	/* Trojan Source: bidi overrides and isolates; invisible characters. */
	vis_is("if x\xe2\x80\xae\xe2\x81\xa6 ok", 0, "if x<U+202E><U+2066> ok");
	vis_is("a\xe2\x80\x8b"
	       "b\xef\xbb\xbf"
	       "c\xc2\xad"
	       "d\xe2\x80\x8f",
	       0, "a<U+200B>b<U+FEFF>c<U+00AD>d<U+200F>");
	/* A tag character, beyond the BMP. */
	vis_is("t\xf3\xa0\x80\x81", 0, "t<U+E0001>");
	/* Bytes that are not UTF-8: a lone continuation, an overlong form,
	 * a truncated sequence at the end. */
	vis_is("a\x80"
	       "b\xc0\xaf"
	       "c\xe2\x82",
	       0, "a\\x80b\\xC0\\xAFc\\xE2\\x82");
	/* A NUL inside the text is shown, not an end. */
	char *got = vis("a\0b", 3, 0);
	ck_assert_str_eq(got, "a^@b");
	free(got);
}
END_TEST

START_TEST(visible_color)
{
	/* Each made-visible character in reverse video, turned off with
	 * SGR 27 so the colour around it goes on. */
	vis_is("a\033b\xe2\x80\xae", VIS_COLOR,
	       "a" VIS_STYLE_ON "^[" VIS_STYLE_OFF "b" VIS_STYLE_ON "<U+202E>" VIS_STYLE_OFF);
}
END_TEST

START_TEST(visible_hidden_table)
{
	ck_assert(vis_hidden(0x1b) && vis_hidden(0x7f) && vis_hidden(0x9b));
	ck_assert(vis_hidden(0x202a) && vis_hidden(0x202e) && vis_hidden(0x2066) &&
	          vis_hidden(0x2069) && vis_hidden(0x061c) && vis_hidden(0x200e));
	ck_assert(vis_hidden(0xfe0f) && vis_hidden(0xe0100) && vis_hidden(0x2028));
	ck_assert(!vis_hidden(' ') && !vis_hidden('~') && !vis_hidden(0xa0) && !vis_hidden(0xe9) &&
	          !vis_hidden(0x05d0) && !vis_hidden(0x1f600));
}
END_TEST

START_TEST(visible_json)
{
	/* The same JSON value, terminal-safe: hidden characters escaped,
	 * invalid bytes replaced. */
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);
	vis_json_fputs(f, "{\"file\":\"a\xe2\x80\xae"
	                  "b\x7f\xf3\xa0\x80\x81\xff\",\"x\":[1, 2]}");
	fclose(f);
	ck_assert_str_eq(out, "{\"file\":\"a\\u202eb\\u007f\\udb40\\udc01\\ufffd\",\"x\":[1, 2]}");
	json_object *o = json_tokener_parse(out);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "file")),
	                 "a\xe2\x80\xae"
	                 "b\x7f\xf3\xa0\x80\x81\xef\xbf\xbd");
	json_object_put(o);
	free(out);
}
END_TEST

/* --- the output filter ---------------------------------------------------- */

/* Filter in chunks cut at the given offsets (ascending, then -1). */
static char *filter_cut(const char *s, size_t len, const size_t *cuts, size_t ncuts)
{
	struct vis_filter f;
	vis_filter_init(&f);
	struct buf b;
	buf_init(&b, 4u << 20);
	size_t at = 0;
	for (size_t i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : len;
		ck_assert_int_eq(vis_filter_feed(&f, s + at, end - at, &b), 0);
		at = end;
	}
	ck_assert_int_eq(vis_filter_end(&f, &b), 0);
	ck_assert_int_eq(buf_append(&b, "", 0), 0);
	return buf_steal(&b, NULL);
}

static char *filter(const char *s, size_t len)
{
	return filter_cut(s, len, NULL, 0);
}

/* What a hostile program writes, and what must reach the terminal: the
 * colour, the text, line feeds, tabs, CR and backspace; nothing else. */
/* F(in, want): in's length is the literal's, so a NUL in it counts. */
#define F(in, want)                                                                                \
	{                                                                                          \
		in, sizeof(in) - 1, want                                                           \
	}
static const struct {
	const char *in;
	size_t len;
	const char *want;
} filter_cases[] = {
    F("plain \xc3\xa9 text\n", "plain \xc3\xa9 text\n"),
    /* SGR kept, with its parameter forms; a reset at the end. */
    F("\033[31mred\033[0m \033[1;38;5;208mo\033[38:2::1:2:3mx\033[m\n",
      "\033[31mred\033[0m \033[1;38;5;208mo\033[38:2::1:2:3mx\033[m\n"),
    /* OSC 52 clipboard write (BEL and ST ends), title, hyperlink. */
    F("a\033]52;c;cm0gLXJmIH4=\ab\033]52;c;eA==\033\\c", "abc"),
    F("\033]0;pwned\a\033]2;t\033\\\033]8;;http://x\033\\link\033]8;;\033\\", "link"),
    /* Device queries and reports (DA, DSR, window ops). */
    F("q\033[c\033[>c\033[6n\033[5n\033[18t\033[21t\n", "q\n"),
    /* Cursor movement and erasure, scroll regions, modes. */
    F("v\033[1A\033[2K\033[H\033[2J\033[10;20H\033[3;5r\033[?1049h\033[?25l\033[4hw", "vw"),
    /* A private marker or an intermediate byte makes it not SGR. */
    F("k\033[>4;1m\033[?1m\033[1 m.", "k."),
    /* DCS (with a payload), SOS, PM, APC; ESC two-byte sequences;
     * charset designation. */
    F("1\033P+q544e\033\\2\033Xs\033\\3\033^p\033\\4\033_a\033\\5", "12345"),
    F("x\0337\0338\033c\033M\033(0y\033)Bz", "xyz"),
    /* C0 controls: BEL, SO/SI, VT, FF, NUL, DEL dropped; LF, TAB, CR,
     * BS kept. */
    F("a\ab\x0e\x0f\x0b\x0c\0c\x7f\td\re\bf\n", "abc\td\re\bf\n"),
    /* The 8-bit (C1, UTF-8 encoded) forms: CSI as colour comes out in
     * the 7-bit form; OSC, DCS dropped; ST and NEL dropped. */
    F("\xc2\x9b"
      "31mr\xc2\x9b"
      "0m\xc2\x9d"
      "52;c;eA==\xc2\x9c.\xc2\x90q\xc2\x9c\xc2\x85!",
      "\033[31mr\033[0m.!"),
    /* 0xC2 that is not a C1 control is text (U+00A0, U+00BF); a lone
     * one is U+FFFD, so that a dropped control after it cannot join it
     * to the next byte as a C1 control (found by fuzz_visible). */
    F("\xc2\xa0\xc2\xbf", "\xc2\xa0\xc2\xbf"),
    F("a\xc2\x17\x9b"
      "2J\xc2\033[1A\x9b"
      "2Jb\xc2",
      "a\xef\xbf\xbd\xef\xbf\xbd"
      "2J\xef\xbf\xbd\xef\xbf\xbd"
      "2Jb\xef\xbf\xbd"),
    /* A sequence that is not UTF-8 is one U+FFFD: a stray 0x9B would be CSI
     * to a terminal in 8-bit mode; an overlong or truncated form too. */
    F("x\x9by\xe0\x80\x80z\xe2\x82", "x\xef\xbf\xbdy\xef\xbf\xbdz\xef\xbf\xbd"),
    F("\xe2\x80\xae\xf0\x9f\x98\x80", "\xe2\x80\xae\xf0\x9f\x98\x80"),
    /* CAN and SUB cancel a sequence; ESC restarts one. */
    F("a\033[3\x18"
      "1mb\033]0;t\x1a"
      "c\033[1\033[32md",
      "a1mbc\033[32md\033[m"),
    /* A colour left on is reset at the end; a reset one is not. */
    F("\033[1mbold", "\033[1mbold\033[m"),
    F("\033[1mb\033[0;0m", "\033[1mb\033[0;0m"),
    /* A partial sequence at the end is dropped. */
    F("end\033]52;c;eA", "end"),
    F("end\033[3", "end"),
};

START_TEST(filter_whole)
{
	const char *in = filter_cases[_i].in;
	size_t len = filter_cases[_i].len;
	char *got = filter(in, len);
	ck_assert_msg(strcmp(got, filter_cases[_i].want) == 0, "case %d: got '%s'", _i, got);
	free(got);
}
END_TEST

/* Every way of cutting each case in two, and in three, and one byte at a
 * time, gives the same bytes as the whole: state is kept across chunks. */
START_TEST(filter_split)
{
	const char *in = filter_cases[_i].in;
	size_t len = filter_cases[_i].len;
	const char *want = filter_cases[_i].want;
	for (size_t a = 0; a <= len; a++) {
		for (size_t b = a; b <= len; b++) {
			size_t cuts[2] = {a, b};
			char *got = filter_cut(in, len, cuts, 2);
			ck_assert_msg(strcmp(got, want) == 0, "case %d cut at %zu,%zu: got '%s'",
			              _i, a, b, got);
			free(got);
		}
	}
	size_t cuts[4096];
	ck_assert_uint_lt(len, 4096);
	for (size_t i = 0; i < len; i++)
		cuts[i] = i + 1;
	char *got = filter_cut(in, len, cuts, len);
	ck_assert_msg(strcmp(got, want) == 0, "case %d byte by byte: got '%s'", _i, got);
	free(got);
}
END_TEST

START_TEST(filter_caps)
{
	/* An SGR longer than VIS_CSI_MAX is not colour: dropped whole. */
	struct buf in;
	buf_init(&in, 1u << 20);
	buf_printf(&in, "a\033[");
	for (int i = 0; i < VIS_CSI_MAX; i++)
		buf_append(&in, "1", 1);
	buf_printf(&in, "mb");
	char *got = filter(in.data, in.len);
	ck_assert_str_eq(got, "ab");
	free(got);
	/* One just under the cap passes. */
	buf_reset(&in);
	buf_printf(&in, "\033[");
	for (int i = 0; i < VIS_CSI_MAX - 3; i++)
		buf_append(&in, "0", 1);
	buf_printf(&in, "m");
	got = filter(in.data, in.len);
	ck_assert_uint_eq(strlen(got), VIS_CSI_MAX);
	ck_assert_mem_eq(got, in.data, in.len);
	free(got);
	/* An OSC that never ends swallows at most VIS_SEQ_MAX bytes: the
	 * filter then goes back to text, which shows again. */
	buf_reset(&in);
	buf_printf(&in, "\033]52;c;");
	while (in.len < VIS_SEQ_MAX + 100)
		buf_append(&in, "A", 1);
	buf_printf(&in, "\nvisible\n");
	size_t cuts[3] = {1, 3000, VIS_SEQ_MAX - 5};
	got = filter_cut(in.data, in.len, cuts, 3);
	ck_assert_msg(strstr(got, "\nvisible\n") != NULL, "the text after a runaway OSC");
	ck_assert_uint_lt(strlen(got), 200);
	ck_assert(!strchr(got, '\033'));
	free(got);
	buf_release(&in);
}
END_TEST

START_TEST(filter_stream_reset)
{
	/* After vis_filter_end the filter is as new: a sequence cut off at
	 * one run's end does not eat the next run's text. */
	struct vis_filter f;
	vis_filter_init(&f);
	struct buf b;
	buf_init(&b, 1024);
	vis_filter_feed(&f, "x\033]0;", 5, &b);
	vis_filter_end(&f, &b);
	vis_filter_feed(&f, "next", 4, &b);
	ck_assert_uint_eq(b.len, 5);
	ck_assert_mem_eq(b.data, "xnext", 5);
	buf_release(&b);
}
END_TEST

static Suite *visible_suite(void)
{
	Suite *s = suite_create("visible");
	TCase *tc = tcase_create("visible");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, visible_forms);
	tcase_add_test(tc, visible_color);
	tcase_add_test(tc, visible_hidden_table);
	tcase_add_test(tc, visible_json);
	int n = (int)(sizeof(filter_cases) / sizeof(filter_cases[0]));
	tcase_add_loop_test(tc, filter_whole, 0, n);
	tcase_add_loop_test(tc, filter_split, 0, n);
	tcase_add_test(tc, filter_caps);
	tcase_add_test(tc, filter_stream_reset);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(visible_suite)
