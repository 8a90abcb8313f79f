/* test_json.c: core/json.c's strict parser, the one the protocol, the
 * config and the model providers share: the size cap its caller names,
 * RFC 8259 beyond json-c's strict mode, UTF-8, the depth cap, and ret_*
 * written only on success. (rpc_parse's wording: test_message.c.) */
#include "core/json.h"

#include "core/buf.h"
#include "core/position.h"

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
	/* Control bytes deep in long strings (scanned a block at a time),
	 * after an escaped quote and after UTF-8. */
	refused("[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\tb\"]", 46, "at byte 42");
	refused("[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\\\"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	        "b\x01\"]",
	        83, "at byte 80");
	refused("{\"k\":\"\xc3\xa9"
	        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\x1f\"}",
	        71, "at byte 68");
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
	ck_assert_int_eq(
	    parse("[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\\\"\\\\\xc3\xa9"
	          "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\",-1.5e3,true]",
	          1000, &o, detail, sizeof(detail)),
	    0);
	ck_assert_int_eq(json_object_array_length(o), 3);
	json_object_put(o);
}
END_TEST

/* The whole text's answer: return code, detail, and the value as JSON. */
static void answer(int r, json_object *o, const char *detail, char *out, size_t n)
{
	snprintf(out, n, "%d|%s|%s", r, r == 0 ? "" : detail,
	         r == 0 ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : "");
}

static void stream_answer(const char *s, size_t len, size_t max, size_t piece, size_t cut,
                          char *out, size_t n)
{
	struct json_stream *js = json_stream_new(max);
	ck_assert_ptr_nonnull(js);
	size_t off = 0;
	if (cut) {
		json_stream_feed(js, s, cut);
		off = cut;
	}
	while (off < len) {
		size_t k = len - off < piece ? len - off : piece;
		json_stream_feed(js, s + off, k);
		off += k;
	}
	json_object *o = NULL;
	char detail[128] = "";
	int r = json_stream_finish(js, &o, detail, sizeof(detail));
	answer(r, o, detail, out, n);
	json_object_put(o);
	json_stream_free(js);
}

/* However a text is cut into pieces, the stream gives the answer the
 * whole-text parse gives: each case below is fed in one-byte pieces and
 * in two pieces cut at every offset (a scanner that lost its place at a
 * cut, a UTF-8 sequence split across reads, json-c's offsets counted per
 * piece would each differ somewhere here). */
START_TEST(stream_cuts)
{
	static const char *const cases[] = {
	    "{\"jsonrpc\":\"2.0\",\"id\":-12.5e+3,\"params\":[true,false,null,\"\\u00e9\\\"\"]}",
	    "[0,1.25,-0,3E7,12e-2]",
	    "\"\xf0\x9f\x98\x80 \xc3\xa9 \xe2\x82\xac\"",
	    "  123  ",
	    "1",
	    "null",
	    "[nul]",
	    "[1.]",
	    "[-]",
	    "[1e]",
	    "[1e+]",
	    "[01]",
	    "[\"a\tb\"]",
	    "{} x",
	    "{}   ",
	    "\"\xed\xa0\x80\"",
	    "\"\xc0\xaf\"",
	    "\"\xe2\x82\"",
	    "[\"\xe2\x82\"]x",
	    "NaN",
	    "[Infinity]",
	    "{\"a\":1",
	    "[1,2,3] [4]",
	    "tru",
	    "",
	    /* A bad number, which json-c judges by where it was cut unless
	     * it gets the number in one piece (json.c's hold_number). */
	    "[1,2,4-L]",
	    "54-3",
	    "[1-]",
	    "[--1]",
	    "123-",
	    "{\"a\":-}",
	    "[12345678901234567890-]",
	    "[3-}5]",
	    "[8-uf,\"\"t\"utf-16\"]",
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const char *s = cases[c];
		size_t len = strlen(s);
		char want[512], got[512], detail[128] = "";
		json_object *o = NULL;
		int r = json_parse_strict(s, len, 1u << 20, &o, detail, sizeof(detail));
		answer(r, o, detail, want, sizeof(want));
		json_object_put(o);
		stream_answer(s, len, 1u << 20, 1, 0, got, sizeof(got));
		ck_assert_msg(strcmp(want, got) == 0, "'%s' in 1-byte pieces: %s, whole: %s", s,
		              got, want);
		for (size_t cut = 1; cut < len; cut++) {
			stream_answer(s, len, 1u << 20, len, cut, got, sizeof(got));
			ck_assert_msg(strcmp(want, got) == 0, "'%s' cut at %zu: %s, whole: %s", s,
			              cut, got, want);
		}
	}
	/* One stream reset between texts (as the protocol's reader keeps
	 * one) answers each as a new one would, whatever the text before it
	 * left behind: an error, a value, a cut UTF-8 sequence. */
	struct json_stream *js = json_stream_new(1u << 20);
	ck_assert_ptr_nonnull(js);
	for (size_t round = 0; round < 2; round++)
		for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
			const char *s = cases[c];
			size_t len = strlen(s);
			char want[512], got[512], detail[128] = "";
			json_object *o = NULL;
			int r = json_parse_strict(s, len, 1u << 20, &o, detail, sizeof(detail));
			answer(r, o, detail, want, sizeof(want));
			json_object_put(o);
			o = NULL;
			/* Fed in two pieces, so a carried state has a place
			 * to show. */
			json_stream_feed(js, s, len / 2);
			json_stream_feed(js, s + len / 2, len - len / 2);
			r = json_stream_finish(js, &o, detail, sizeof(detail));
			answer(r, o, detail, got, sizeof(got));
			json_object_put(o);
			ck_assert_msg(strcmp(want, got) == 0, "'%s' after a reset: %s, new: %s", s,
			              got, want);
			json_stream_reset(js);
			/* Now and then a text left unfinished before the reset. */
			if (c % 3 == round)
				json_stream_feed(js, "[\"\xe2", 3);
			if (c % 3 == round)
				json_stream_reset(js);
		}
	json_stream_free(js);
	/* The size cap counts every piece. */
	char got[512];
	stream_answer("[1,2] ", 6, 5, 2, 0, got, sizeof(got));
	ck_assert_str_eq(got, "-27|the text is larger than 5 bytes|");
}
END_TEST

/* json_string_fit's cost is what json_compact() writes for the string,
 * byte for byte: each byte value alone (a lone byte >= 0x80 is not UTF-8,
 * so those are checked inside a two-byte character), and a budget that
 * falls inside a character cuts before it. */
static size_t compact_len(const char *s, size_t n)
{
	_cleanup_json_ json_object *o = json_object_new_string_len(s, (int)n);
	return strlen(json_compact(o)) - 2;
}

START_TEST(string_cost)
{
	uint64_t cost;
	for (int b = 1; b < 0x80; b++) {
		char c = (char)b;
		ck_assert_uint_eq(json_string_fit(&c, 1, 100, &cost), 1);
		ck_assert_uint_eq(cost, compact_len(&c, 1));
	}
	/* Each byte at each place of a 71-byte run (core/scan.h's 32-byte
	 * steps twice, then the rest one at a time). */
	for (int b = 1; b < 0x80; b++)
		for (int at = 0; at < 71; at++) {
			char run[71];
			memset(run, 'a', sizeof(run));
			run[at] = (char)b;
			ck_assert_uint_eq(json_string_fit(run, sizeof(run), 1000, &cost),
			                  sizeof(run));
			ck_assert_uint_eq(cost, compact_len(run, sizeof(run)));
		}
	const char *mixed = "a\x01\"\\/\n\xc3\xa9\xe2\x82\xac\x1f\x7f";
	size_t n = strlen(mixed);
	ck_assert_uint_eq(json_string_fit(mixed, n, 1000, &cost), n);
	ck_assert_uint_eq(cost, compact_len(mixed, n));
	/* 1 MiB of 0x01 is 6 MiB on the wire. */
	static char ones[1 << 20];
	memset(ones, 1, sizeof(ones));
	ck_assert_uint_eq(json_string_fit(ones, sizeof(ones), UINT64_MAX, &cost), sizeof(ones));
	ck_assert_uint_eq(cost, 6u << 20);
	/* A budget of 7 fits one \u0001 (6) and not the next. */
	ck_assert_uint_eq(json_string_fit(ones, sizeof(ones), 7, &cost), 1);
	ck_assert_uint_eq(cost, 6);
	/* "a" + the euro sign (3 bytes): a budget of 3 stops before the sign. */
	ck_assert_uint_eq(json_string_fit("a\xe2\x82\xac", 4, 3, &cost), 1);
	ck_assert_uint_eq(cost, 1);
	ck_assert_uint_eq(json_string_fit("a\xe2\x82\xac", 4, 4, &cost), 4);
	ck_assert_uint_eq(cost, 4);
}
END_TEST

/* json_string_verbatim: the prefix a JSON string holds as it is. Every
 * byte value at every place of a 141-byte run (two 64-byte steps of the
 * AVX2 scan, or four 32-byte ones of SSE2, then one at a time), with
 * each scan the CPU has: it stops exactly where json_compact would
 * change the text (an escape) or where the bytes stop being whole, valid
 * UTF-8. */
static size_t verbatim_ref(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x80) {
			if (c < 0x20 || c == '"' || c == '\\')
				return i;
			i++;
			continue;
		}
		size_t l = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
		if (i + l > n || !utf8_valid(s + i, l))
			return i;
		i += l;
	}
	return n;
}

START_TEST(string_verbatim)
{
	for (int avx2 = 0; avx2 < 2; avx2++) {
		if (json_verbatim_avx2(avx2) != avx2)
			continue; /* no AVX2 here */
		for (int b = 0; b < 0x100; b++)
			for (int at = 0; at < 141; at++) {
				char run[141];
				memset(run, 'a', sizeof(run));
				run[at] = (char)b;
				size_t want = verbatim_ref(run, sizeof(run));
				ck_assert_uint_eq(json_string_verbatim(run, sizeof(run)), want);
				/* What it keeps, json_compact keeps as it is. */
				if (want == sizeof(run))
					ck_assert_uint_eq(compact_len(run, sizeof(run)),
					                  sizeof(run));
			}
	}
	json_verbatim_avx2(true);
	/* Whole characters of 2, 3 and 4 bytes, then cut by the end. */
	const char *chars = "ab\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e/\x7f";
	size_t n = strlen(chars);
	ck_assert_uint_eq(json_string_verbatim(chars, n), n);
	for (size_t cut = 1; cut < 4; cut++)
		ck_assert_uint_eq(json_string_verbatim("xy\xf0\x9d\x84\x9e", 2 + cut), 2);
	/* Overlong, surrogate, too large, a lone continuation byte. */
	ck_assert_uint_eq(json_string_verbatim("ok\xc0\x80", 4), 2);
	ck_assert_uint_eq(json_string_verbatim("ok\xed\xa0\x80", 5), 2);
	ck_assert_uint_eq(json_string_verbatim("ok\xf4\x90\x80\x80", 6), 2);
	ck_assert_uint_eq(json_string_verbatim("ok\x80z", 4), 2);
	/* A character across a 32-byte step. */
	char big[96];
	memset(big, 'q', sizeof(big));
	memcpy(big + 31, "\xe2\x82\xac", 3);
	ck_assert_uint_eq(json_string_verbatim(big, sizeof(big)), sizeof(big));
	big[64] = '\\';
	ck_assert_uint_eq(json_string_verbatim(big, sizeof(big)), 64);
}
END_TEST

/* json_write writes json_compact's bytes exactly, for every kind of value
 * the protocol sends: parsed texts (doubles keep their form) and built
 * objects with control bytes, NUL, quotes, slashes and UTF-8 in strings and
 * keys, long runs past the 8-byte fast path. */
START_TEST(write_matches_compact)
{
	static const char *const texts[] = {
	    "null",
	    "true",
	    "false",
	    "0",
	    "-12",
	    "1.5",
	    "1e3",
	    "2.50",
	    "[]",
	    "{}",
	    "\"\"",
	    "{\"a\":[1,2.0,{\"b\":null}],\"c\":\"\\u0001\\n\\t\\\"\\\\/x\\u007f\"}",
	    "[\"\\u00e9\\u20ac\\ud83d\\ude00\", 9223372036854775807, -9223372036854775808]",
	    "{\"k\\u0000ey\":\"v\\u0000al\",\"\\u001f\":[[[]]]}",
	    "[9223372036854775806,9223372036854775808,18446744073709551615,-1,10,-10]",
	};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		json_object *o = NULL;
		char detail[200];
		ck_assert_int_eq(json_parse_strict(texts[i], strlen(texts[i]), 1 << 20, &o, detail,
		                                   sizeof(detail)),
		                 0);
		struct buf b;
		buf_init(&b, 1 << 20);
		ck_assert_int_eq(json_write(&b, o), 0);
		ck_assert_str_eq(b.data, o ? json_compact(o) : "null");
		buf_release(&b);
		json_object_put(o);
	}
	/* Each byte at each place of a 71-byte run (core/scan.h's 32-byte
	 * steps, then the rest). */
	for (int c = 1; c < 0x80; c++)
		for (int at = 0; at < 71; at++) {
			char run[71];
			memset(run, 'a', sizeof(run));
			run[at] = (char)c;
			_cleanup_json_ json_object *o =
			    json_object_new_string_len(run, (int)sizeof(run));
			struct buf b;
			buf_init(&b, 1 << 20);
			ck_assert_int_eq(json_write(&b, o), 0);
			ck_assert_str_eq(b.data, json_compact(o));
			buf_release(&b);
		}
	char big[300];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i % 7 == 3 ? i % 32 : 'a' + i % 26);
	for (size_t n = 0; n <= sizeof(big); n += 13) {
		_cleanup_json_ json_object *o = json_object_new_object();
		json_object_object_add(o, "text", json_object_new_string_len(big, (int)n));
		json_object_object_add(o, "n", json_object_new_int64((int64_t)n));
		json_object_object_add(o, "m", json_object_new_int64(-(int64_t)n * 1000003));
		json_object_object_add(o, "u", json_object_new_uint64(UINT64_MAX - n));
		json_object_object_add(o, "i", json_object_new_int(INT32_MIN + (int)n));
		json_object_object_add(o, "d", json_object_new_double(0.1 * (double)n));
		struct buf b;
		buf_init(&b, 1 << 20);
		ck_assert_int_eq(json_write(&b, o), 0);
		ck_assert_str_eq(b.data, json_compact(o));
		buf_release(&b);
	}
}
END_TEST

static Suite *json_suite(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("json");
	tcase_add_test(tc, size_cap);
	tcase_add_test(tc, strict);
	tcase_add_test(tc, stream_cuts);
	tcase_add_test(tc, string_cost);
	tcase_add_test(tc, string_verbatim);
	tcase_add_test(tc, write_matches_compact);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(json_suite)
