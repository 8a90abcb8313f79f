/* out_json.c: the output bench client's JSON parser (see out_json.h).
 * It scans a string 32 bytes at a time with AVX2 (16 with SSE2, 8
 * without either; chosen at start-up), as a browser's JSON.parse does
 * with SIMD, and decodes each string in place in the buffer it was read
 * into (RapidJSON's in-situ parsing), so that text without escapes is
 * never copied. */
#include "out_json.h"

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Set while the self-test parses a message that must be refused. */
static jmp_buf *refused;

static void bad(const char *why)
{
	if (refused)
		longjmp(*refused, 1);
	fprintf(stderr, "sandbox_out: not JSON: %s\n", why);
	exit(1);
}

struct parser {
	unsigned char *p, *end;
};

#define BAD(why) bad(why)

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t'))
		ps->p++;
}

/* The first byte in [p, end) that ends a string's plain run: below 0x20,
 * '"' or '\\' (end when there is none). Chosen at start-up: 32 bytes a
 * step with AVX2 where the CPU has it, 16 with SSE2 (every x86-64), else
 * 8 (SWAR), as a browser's JSON.parse scans with SIMD. */
static const unsigned char *(*skip_plain)(const unsigned char *p, const unsigned char *end);

static const unsigned char *skip_plain_tail(const unsigned char *p, const unsigned char *end)
{
	while (p < end && *p >= 0x20 && *p != '"' && *p != '\\')
		p++;
	return p;
}

static const unsigned char *skip_plain_swar(const unsigned char *p, const unsigned char *end)
{
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	while (end - p >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
		if ((((w - ones * 0x20) | (q - ones) | (b - ones)) & ~w & high) != 0)
			break;
		p += 8;
	}
	return skip_plain_tail(p, end);
}

#if defined(__x86_64__)
#include <immintrin.h>

static const unsigned char *skip_plain_sse2(const unsigned char *p, const unsigned char *end)
{
	const __m128i ctl = _mm_set1_epi8(0x1f), q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
	while (end - p >= 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)p);
		/* v <= 0x1f unsigned: min(v, 0x1f) == v. */
		__m128i s = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v),
		                         _mm_or_si128(_mm_cmpeq_epi8(v, q), _mm_cmpeq_epi8(v, bs)));
		unsigned m = (unsigned)_mm_movemask_epi8(s);
		if (m)
			return p + __builtin_ctz(m);
		p += 16;
	}
	return skip_plain_tail(p, end);
}

/* 64 bytes a step, two vectors tested together; in each, one compare
 * finds both a control byte and '"': v ^ 0x02 is at most 0x20 exactly
 * for v below 0x20 (the xor keeps them there) and for '"' (0x22 ^ 0x02 ==
 * 0x20), and a second finds '\\'. */
__attribute__((target("avx2"))) static inline __m256i special_avx2(__m256i v)
{
	const __m256i two = _mm256_set1_epi8(0x02), top = _mm256_set1_epi8(0x20),
	              bs = _mm256_set1_epi8('\\');
	__m256i x = _mm256_xor_si256(v, two);
	return _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_min_epu8(x, top), x),
	                       _mm256_cmpeq_epi8(v, bs));
}

__attribute__((target("avx2"))) static const unsigned char *
skip_plain_avx2(const unsigned char *p, const unsigned char *end)
{
	while (end - p >= 64) {
		__m256i a = special_avx2(_mm256_loadu_si256((const __m256i *)p)),
		        b = special_avx2(_mm256_loadu_si256((const __m256i *)(p + 32)));
		__m256i ab = _mm256_or_si256(a, b);
		if (!_mm256_testz_si256(ab, ab)) {
			uint64_t m = (uint64_t)(uint32_t)_mm256_movemask_epi8(a) |
			             (uint64_t)(uint32_t)_mm256_movemask_epi8(b) << 32;
			return p + __builtin_ctzll(m);
		}
		p += 64;
	}
	if (end - p >= 32) {
		unsigned m = (unsigned)_mm256_movemask_epi8(
			special_avx2(_mm256_loadu_si256((const __m256i *)p)));
		if (m)
			return p + __builtin_ctz(m);
		p += 32;
	}
	return skip_plain_sse2(p, end);
}
#endif

void out_json_choose_scan(const char *want)
{
	skip_plain = skip_plain_swar;
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (!want || strcmp(want, "sse2") == 0 || strcmp(want, "avx2") == 0)
		skip_plain = skip_plain_sse2;
	if ((!want || strcmp(want, "avx2") == 0) && __builtin_cpu_supports("avx2"))
		skip_plain = skip_plain_avx2;
#else
	(void)want;
#endif
}

static unsigned hex4(struct parser *ps)
{
	if (ps->end - ps->p < 4)
		BAD("a short \\u escape");
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		unsigned c = *ps->p++, d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			d = (c | 0x20) - 'a' + 10;
		else
			BAD("a bad \\u escape");
		v = v << 4 | d;
	}
	return v;
}

/* cp as UTF-8 at w; the bytes written. */
static size_t put_utf8(unsigned char *w, unsigned cp)
{
	if (cp < 0x80) {
		w[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		w[0] = (unsigned char)(0xc0 | cp >> 6), w[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		w[0] = (unsigned char)(0xe0 | cp >> 12), w[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f)),
		w[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	w[0] = (unsigned char)(0xf0 | cp >> 18), w[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f)),
	w[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f)), w[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A string at ps->p (its opening quote), decoded in place (as RapidJSON's
 * and sajson's in-situ parsing): the decoded text never outgrows its
 * escaped form (\n 2 bytes to 1, \uXXXX 6 to at most 3, a surrogate
 * pair 12 to 4), so it is written over the message itself, behind the
 * scan, and a string without escapes is not moved at all. *ret_s and
 * *ret_n: the decoded text, valid until the buffer is reused. */
static void parse_string(struct parser *ps, const char **ret_s, size_t *ret_n)
{
	unsigned char *start = ++ps->p, *w = NULL; /* w: set at the first escape */
	for (;;) {
		unsigned char *run = ps->p;
		ps->p = (unsigned char *)skip_plain(ps->p, ps->end);
		if (w) {
			memmove(w, run, (size_t)(ps->p - run));
			w += ps->p - run;
		}
		if (ps->p >= ps->end)
			BAD("an unterminated string");
		unsigned char c = *ps->p++;
		if (c == '"') {
			*ret_s = (const char *)start;
			*ret_n = (size_t)((w ? w : ps->p - 1) - start);
			return;
		}
		if (c < 0x20)
			BAD("a control character in a string");
		if (!w)
			w = ps->p - 1;
		if (ps->p >= ps->end)
			BAD("an unterminated escape");
		c = *ps->p++;
		static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
		const char *e = c ? strchr(from, c) : NULL;
		if (e) {
			*w++ = (unsigned char)to[e - from];
			continue;
		}
		if (c != 'u')
			BAD("an unknown escape");
		unsigned cp = hex4(ps);
		if (cp >= 0xd800 && cp <= 0xdbff && ps->end - ps->p >= 6 && ps->p[0] == '\\' &&
		    ps->p[1] == 'u') {
			unsigned char *save = ps->p;
			ps->p += 2;
			unsigned lo = hex4(ps);
			if (lo >= 0xdc00 && lo <= 0xdfff)
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			else
				ps->p = save;
		}
		/* A lone surrogate: U+FFFD, as a browser's TextEncoder would. */
		w += put_utf8(w, cp >= 0xd800 && cp <= 0xdfff ? 0xfffd : cp);
	}
}

static long long parse_number(struct parser *ps)
{
	const unsigned char *s = ps->p;
	if (ps->p < ps->end && *ps->p == '-')
		ps->p++;
	if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
		BAD("a bad number");
	if (*ps->p == '0')
		ps->p++;
	else
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	if (ps->p < ps->end && *ps->p == '.') {
		ps->p++;
		if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
			BAD("a bad fraction");
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	}
	if (ps->p < ps->end && (*ps->p | 0x20) == 'e') {
		ps->p++;
		if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
			ps->p++;
		if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
			BAD("a bad exponent");
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	}
	return strtoll((const char *)s, NULL, 10);
}

static void literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		BAD("an unknown literal");
	ps->p += n;
}

enum where { W_OTHER, W_TOP, W_PARAMS, W_RESULT };

/* One value; inside the top object and its params, keep what struct msg
 * keeps. */
static void parse_value(struct parser *ps, struct msg *m, enum where w, int depth)
{
	if (depth > 64)
		BAD("nested too deep");
	skip_ws(ps);
	if (ps->p >= ps->end)
		BAD("a missing value");
	switch (*ps->p) {
	case '{':
	case '[': {
		bool obj = *ps->p == '{';
		ps->p++;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
			ps->p++;
			return;
		}
		for (;;) {
			enum where inner = W_OTHER;
			if (obj) {
				skip_ws(ps);
				if (ps->p >= ps->end || *ps->p != '"')
					BAD("a key that is not a string");
				const char *k;
				size_t kl;
				parse_string(ps, &k, &kl);
				skip_ws(ps);
				if (ps->p >= ps->end || *ps->p++ != ':')
					BAD("a missing colon");
				skip_ws(ps);
				if (w == W_TOP && kl == 6 && memcmp(k, "method", 6) == 0 &&
				    ps->p < ps->end && *ps->p == '"') {
					const char *s;
					size_t n;
					parse_string(ps, &s, &n);
					n = n < sizeof(m->method) - 1 ? n : sizeof(m->method) - 1;
					memcpy(m->method, s, n);
					m->method[n] = '\0';
					goto next;
				}
				if (w == W_TOP && kl == 2 && memcmp(k, "id", 2) == 0 &&
				    ps->p < ps->end && (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))) {
					m->id = parse_number(ps);
					m->has_id = true;
					goto next;
				}
				if (w == W_TOP && kl == 5 && memcmp(k, "error", 5) == 0)
					m->has_error = true;
				if (w == W_TOP && kl == 6 && memcmp(k, "params", 6) == 0)
					inner = W_PARAMS;
				if (w == W_TOP && kl == 6 && memcmp(k, "result", 6) == 0)
					inner = W_RESULT;
				if (w == W_RESULT && kl == 5 && memcmp(k, "cpuMs", 5) == 0 &&
				    ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
					m->cpu_ms = parse_number(ps);
					goto next;
				}
				/* Noted, then parsed (checked) as any value. */
				if (w == W_RESULT && kl == 6 && memcmp(k, "zygote", 6) == 0 &&
				    ps->p < ps->end && (*ps->p == 't' || *ps->p == 'f'))
					m->zygote = *ps->p == 't';
				if (w == W_PARAMS && kl == 4 && memcmp(k, "text", 4) == 0 &&
				    ps->p < ps->end && *ps->p == '"') {
					/* Decoded in place: no later string of the
					 * message overwrites it. */
					parse_string(ps, &m->text, &m->text_len);
					m->has_text = true;
					goto next;
				}
			}
			parse_value(ps, m, inner, depth + 1);
		next:
			skip_ws(ps);
			if (ps->p >= ps->end)
				BAD("an unterminated object or array");
			if (*ps->p == ',') {
				ps->p++;
				continue;
			}
			if (*ps->p++ != (obj ? '}' : ']'))
				BAD("a missing comma");
			return;
		}
	}
	case '"': {
		const char *s;
		size_t n;
		parse_string(ps, &s, &n);
		return;
	}
	case 't':
		literal(ps, "true");
		return;
	case 'f':
		literal(ps, "false");
		return;
	case 'n':
		literal(ps, "null");
		return;
	default:
		parse_number(ps);
	}
}

/* Parse a whole message body into m; its strings are decoded in place,
 * so m's text points into body. */
void out_json_parse(char *body, size_t len, struct msg *m)
{
	struct parser ps;
	*m = (struct msg){.method = "", .cpu_ms = -1, .zygote = -1};
	ps.p = (unsigned char *)body;
	ps.end = ps.p + len;
	skip_ws(&ps);
	if (ps.p >= ps.end || *ps.p != '{')
		BAD("a message that is not an object");
	parse_value(&ps, m, W_TOP, 0);
	skip_ws(&ps);
	if (ps.p != ps.end)
		BAD("bytes after the message");
}

/* --- the self-test --------------------------------------------------------- */

/* Whether body parses, and then its method and text. */
static bool try_parse(const char *body, size_t len, struct msg *m, char *copy)
{
	jmp_buf jb;
	memcpy(copy, body, len);
	refused = &jb;
	if (setjmp(jb)) {
		refused = NULL;
		return false;
	}
	out_json_parse(copy, len, m);
	refused = NULL;
	return true;
}

static int st_failures;

static void st_expect(const char *scan, const char *body, size_t len, const char *text,
                      size_t text_len)
{
	static char copy[1 << 21];
	struct msg m;
	bool ok = try_parse(body, len, &m, copy);
	if (!text ? ok
	          : !ok || !m.has_text || m.text_len != text_len || memcmp(m.text, text, text_len)) {
		fprintf(stderr, "sandbox_out -s (%s): %s: %.*s\n", scan,
		        text ? "wrong" : "accepted", (int)(len < 120 ? len : 120), body);
		st_failures++;
	}
}

/* {"method":"run/output","params":{"text":BODY}} around a string's JSON. */
static size_t st_wrap(char *out, const char *json, size_t n)
{
	static const char a[] = "{\"jsonrpc\":\"2.0\",\"method\":\"run/output\",\"params\":"
	                        "{\"runId\":\"r1\",\"stream\":\"stdout\",\"text\":";
	memcpy(out, a, sizeof(a) - 1);
	memcpy(out + sizeof(a) - 1, json, n);
	memcpy(out + sizeof(a) - 1 + n, "}}", 2);
	return sizeof(a) - 1 + n + 2;
}

/* Every escape decoded, every malformed message refused, with each way
 * of scanning, and a special byte at every offset of the wide steps (a
 * lane the SIMD scan would miss shows there). */
int out_json_self_test(void)
{
	static char msgbuf[1 << 21], json[1 << 21], want[1 << 21];
	static const struct {
		const char *json, *text; /* text NULL: must be refused */
	} strs[] = {
		{"\"abc\"", "abc"},
		{"\"\"", ""},
		{"\"a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti\"", "a\"b\\c/d\be\ff\ng\rh\ti"},
		{"\"\\u0041\\u00e9\\u20AC\\ud83d\\ude00\"", "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"},
		{"\"\\ud800x\"", "\xef\xbf\xbdx"},
		{"\"\\ud800\\u0041\"", "\xef\xbf\xbd" "A"},
		{"\"\\udc00\"", "\xef\xbf\xbd"},
		{"\"\xc3\xa9\x7f \xff\"", "\xc3\xa9\x7f \xff"},
		{"\"a\x1f\"", NULL},
		{"\"a\n\"", NULL},
		{"\"abc", NULL},
		{"\"a\\", NULL},
		{"\"\\x\"", NULL},
		{"\"\\u12G4\"", NULL},
		{"\"\\u12\"", NULL},
	};
	static const char *msgs_bad[] = {
		"{\"a\":1,}", "{\"a\":1 \"b\":2}", "{\"a\" 1}", "{\"a\":01}", "{\"a\":-}",
		"{\"a\":1.}", "{\"a\":1e}", "{\"a\":tru}", "{\"a\":[1,2}", "{\"a\":1} x",
		"[1]", "{1:2}", "{\"a\":nul}", "",
	};
	const char *scans[] = {"swar", "sse2", "avx2"};
	for (size_t s = 0; s < sizeof(scans) / sizeof(*scans); s++) {
		out_json_choose_scan(scans[s]);
		for (size_t i = 0; i < sizeof(strs) / sizeof(*strs); i++) {
			size_t n = st_wrap(msgbuf, strs[i].json, strlen(strs[i].json));
			st_expect(scans[s], msgbuf, n, strs[i].text, strs[i].text ? strlen(strs[i].text) : 0);
		}
		for (size_t i = 0; i < sizeof(msgs_bad) / sizeof(*msgs_bad); i++)
			st_expect(scans[s], msgs_bad[i], strlen(msgs_bad[i]), NULL, 0);
		/* A key with an escape is the key decoded. */
		const char *k = "{\"params\":{\"te\\u0078t\":\"ok\",\"n\":[1,-2.5e+3,true,false,null,{}]}}";
		st_expect(scans[s], k, strlen(k), "ok", 2);
		/* At each offset from 0 to 99 of a run of x: \n, \u00e9, a raw
		 * 0x01, 0x10 or 0x1f (refused), '"' unescaped (refused: the
		 * string ends early), and a byte above 0x7f, a space or a
		 * neighbour of '"' or '\\' (plain: the AVX2 scan's xor trick
		 * must not take them). */
		for (size_t at = 0; at < 100; at++)
			for (int kind = 0; kind < 13; kind++) {
				size_t j = 0, w = 0;
				json[j++] = '"';
				for (size_t x = 0; x < 130; x++) {
					if (x == at) {
						static const char *esc[] = {"\\n", "\\u00e9", "\x01", "\"",
						                            "\xe9", "\x1f", " ",    "!",
						                            "#",     "[",    "]",    "\x7f",
						                            "\x10"};
						static const char *dec[] = {"\n", "\xc3\xa9", "", "", "\xe9", "", " ",
						                            "!",  "#",        "[", "]", "\x7f", ""};
						memcpy(json + j, esc[kind], strlen(esc[kind]));
						j += strlen(esc[kind]);
						memcpy(want + w, dec[kind], strlen(dec[kind]));
						w += strlen(dec[kind]);
					}
					json[j++] = 'x';
					want[w++] = 'x';
				}
				json[j++] = '"';
				size_t n = st_wrap(msgbuf, json, j);
				bool refused = kind == 2 || kind == 3 || kind == 5 || kind == 12;
				st_expect(scans[s], msgbuf, n, refused ? NULL : want, w);
			}
		/* A long text (1 MiB) with escapes spread through it. */
		size_t j = 0, w = 0;
		json[j++] = '"';
		for (size_t x = 0; x < (1u << 20) - 8; x++) {
			if (x % 4099 == 17) {
				memcpy(json + j, "\\t", 2), j += 2;
				want[w++] = '\t';
			}
			json[j++] = (char)('a' + x % 26);
			want[w++] = (char)('a' + x % 26);
		}
		json[j++] = '"';
		size_t n = st_wrap(msgbuf, json, j);
		st_expect(scans[s], msgbuf, n, want, w);
	}
	out_json_choose_scan(NULL);
	/* result.zygote, which the bench waits for: true, false, absent (an
	 * older server), not a member of params, and still checked whole. */
	static const struct {
		const char *body;
		int zygote; /* -2: must be refused */
	} zyg[] = {
		{"{\"id\":1,\"result\":{\"cpuMs\":3,\"zygote\":true}}", 1},
		{"{\"id\":1,\"result\":{\"zygote\" : false,\"warmBox\":true}}", 0},
		{"{\"id\":1,\"result\":{\"cpuMs\":3}}", -1},
		{"{\"id\":1,\"params\":{\"zygote\":true}}", -1},
		{"{\"id\":1,\"result\":{\"zygote\":tru}}", -2},
	};
	for (size_t i = 0; i < sizeof(zyg) / sizeof(*zyg); i++) {
		struct msg m;
		bool ok = try_parse(zyg[i].body, strlen(zyg[i].body), &m, json);
		if (zyg[i].zygote == -2 ? ok : !ok || m.zygote != zyg[i].zygote) {
			fprintf(stderr, "sandbox_out -s: result.zygote: %s\n", zyg[i].body);
			st_failures++;
		}
	}
	if (st_failures)
		return 1;
	printf("sandbox_out -s: the parser's self-test passed\n");
	return 0;
}
