/* json.c: typed getters and helpers over json-c (see json.h for the
 * ownership rule). */
#include "core/json.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/position.h"
#include "core/scan.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_SCAN 1
#endif

json_object *json_get(json_object *obj, const char *key)
{
	json_object *v = NULL;
	if (!obj || !json_object_is_type(obj, json_type_object))
		return NULL;
	if (!json_object_object_get_ex(obj, key, &v))
		return NULL;
	return v;
}

static int get_typed(json_object *obj, const char *key, json_type type, json_object **ret)
{
	json_object *v = json_get(obj, key);
	if (!v)
		return -ENOENT;
	if (!json_object_is_type(v, type))
		return -EINVAL;
	*ret = v;
	return 0;
}

int json_get_string(json_object *obj, const char *key, const char **ret_str)
{
	json_object *v;
	int r = get_typed(obj, key, json_type_string, &v);
	if (r < 0)
		return r;
	*ret_str = json_object_get_string(v);
	return 0;
}

int json_get_int64(json_object *obj, const char *key, int64_t *ret_val)
{
	json_object *v = json_get(obj, key);
	if (!v)
		return -ENOENT;
	if (json_object_is_type(v, json_type_int)) {
		*ret_val = json_object_get_int64(v);
		return 0;
	}
	if (json_object_is_type(v, json_type_double)) {
		double d = json_object_get_double(v);
		if (d != (double)(int64_t)d)
			return -EINVAL;
		*ret_val = (int64_t)d;
		return 0;
	}
	return -EINVAL;
}

int json_get_bool(json_object *obj, const char *key, bool *ret_val)
{
	json_object *v;
	int r = get_typed(obj, key, json_type_boolean, &v);
	if (r < 0)
		return r;
	*ret_val = json_object_get_boolean(v);
	return 0;
}

int json_get_object(json_object *obj, const char *key, json_object **ret_obj)
{
	return get_typed(obj, key, json_type_object, ret_obj);
}

int json_get_array(json_object *obj, const char *key, json_object **ret_arr)
{
	return get_typed(obj, key, json_type_array, ret_arr);
}

json_object *json_get_path(json_object *obj, const char *path)
{
	char key[128];
	while (obj && *path) {
		const char *dot = strchr(path, '.');
		size_t n = dot ? (size_t)(dot - path) : strlen(path);
		if (n >= sizeof(key))
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		obj = json_get(obj, key);
		path += n + (dot ? 1 : 0);
	}
	return obj;
}

const char *json_compact(json_object *obj)
{
	return json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
	                                               JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* The bytes json-c writes for each byte of a string (its json_escape_str
 * with JSON_C_TO_STRING_NOSLASHESCAPE): \b \f \n \r \t \" \\ are two,
 * other bytes below 0x20 six, everything else (UTF-8 included) one. */
static const unsigned char escaped_len[256] = {
    6, 6, 6, 6, 6, 6, 6, 6, 2, 2, 2, 6, 2, 2, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6,
    1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};

size_t json_string_fit(const char *text, size_t len, uint64_t budget, uint64_t *ret_cost)
{
	const unsigned char *t = (const unsigned char *)text;
	uint64_t cost = 0;
	size_t i = 0;
	/* Most text needs no escape: each run of it costs its length, found
	 * by the fast scan; only the bytes that need one are looked up. */
	while (i < len) {
		size_t room = len - i;
		if (room > budget - cost)
			room = (size_t)(budget - cost);
		size_t plain = scan_json_plain(t + i, room);
		i += plain;
		cost += plain;
		if (i >= len)
			break;
		unsigned c = escaped_len[t[i]];
		if (cost + c > budget)
			break;
		cost += c;
		i++;
	}
	/* Never end inside a character: when t[i] continues one, drop
	 * that character's bytes already counted (one each). */
	if (i < len)
		while (i > 0 && (t[i] & 0xc0) == 0x80) {
			i--;
			cost--;
		}
	*ret_cost = cost;
	return i;
}

#ifdef HAVE_AVX2_SCAN
/* scan_json_plain_ascii 64 bytes a step with AVX2: the relay's check
 * (run_output.c) reads every byte of relayed output once, and this scan
 * was a quarter of the server's samples with SSE2 (docs/performance-log.md,
 * "Output, unpinned"). */
__attribute__((target("avx2"))) static size_t plain_ascii_avx2(const unsigned char *s, size_t n)
{
	const __m256i q = _mm256_set1_epi8('"'), bs = _mm256_set1_epi8('\\'),
	              ctl = _mm256_set1_epi8(0x1f);
	size_t i = 0;
	for (; i + 64 <= n; i += 64) {
		__m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(s + i));
		__m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(s + i + 32));
		/* Signed, 0x20-0x7f are exactly the bytes greater than 0x1f. */
		__m256i oa = _mm256_andnot_si256(
		    _mm256_or_si256(_mm256_cmpeq_epi8(a, q), _mm256_cmpeq_epi8(a, bs)),
		    _mm256_cmpgt_epi8(a, ctl));
		__m256i ob = _mm256_andnot_si256(
		    _mm256_or_si256(_mm256_cmpeq_epi8(b, q), _mm256_cmpeq_epi8(b, bs)),
		    _mm256_cmpgt_epi8(b, ctl));
		uint64_t m = ~((uint64_t)(uint32_t)_mm256_movemask_epi8(oa) |
		               (uint64_t)(uint32_t)_mm256_movemask_epi8(ob) << 32);
		if (m)
			return i + (size_t)__builtin_ctzll(m);
	}
	return i + scan_json_plain_ascii(s + i, n - i);
}

/* -1 until chosen, then whether the AVX2 scan is used. */
static int use_avx2 = -1;

bool json_verbatim_avx2(bool on)
{
	__builtin_cpu_init();
	use_avx2 = on && __builtin_cpu_supports("avx2");
	return use_avx2;
}

static size_t plain_ascii(const unsigned char *s, size_t n)
{
	if (use_avx2 < 0)
		json_verbatim_avx2(true);
	return use_avx2 ? plain_ascii_avx2(s, n) : scan_json_plain_ascii(s, n);
}
#else
bool json_verbatim_avx2(bool on)
{
	(void)on;
	return false;
}

static size_t plain_ascii(const unsigned char *s, size_t n)
{
	return scan_json_plain_ascii(s, n);
}
#endif

size_t json_string_verbatim(const char *bytes, size_t len)
{
	const unsigned char *s = (const unsigned char *)bytes;
	size_t i = 0;
	for (;;) {
		i += plain_ascii(s + i, len - i);
		if (i >= len || s[i] < 0x80)
			return i;
		size_t l = utf8_seq_len(s + i, len - i);
		if (l < 2)
			return i; /* invalid, or cut by the end */
		i += l;
	}
}

static int write_string(struct buf *out, const char *str, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, start = 0;
	int r = buf_append(out, "\"", 1);
	while (r >= 0 && i < len) {
		i += scan_json_plain(s + i, len - i);
		if (i >= len)
			break;
		unsigned char c = s[i];
		char esc[6] = {'\\', 0};
		size_t n = 2;
		switch (c) {
		case '\b':
			esc[1] = 'b';
			break;
		case '\f':
			esc[1] = 'f';
			break;
		case '\n':
			esc[1] = 'n';
			break;
		case '\r':
			esc[1] = 'r';
			break;
		case '\t':
			esc[1] = 't';
			break;
		case '"':
		case '\\':
			esc[1] = (char)c;
			break;
		default:
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 0xf];
			n = 6;
		}
		if ((r = buf_append(out, s + start, i - start)) < 0 ||
		    (r = buf_append(out, esc, n)) < 0)
			return r;
		start = ++i;
	}
	if (r >= 0)
		r = buf_append(out, s + start, len - start);
	return r < 0 ? r : buf_append(out, "\"", 1);
}

int json_write_int64(struct buf *out, int64_t v)
{
	char d[24], *p = d + sizeof(d);
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	return buf_append(out, p, (size_t)(d + sizeof(d) - p));
}

int json_write_string(struct buf *out, const char *str, size_t len)
{
	return write_string(out, str, len);
}

int json_write(struct buf *out, json_object *obj)
{
	int r = 0;
	switch (json_object_get_type(obj)) {
	case json_type_null:
		return buf_append(out, "null", 4);
	case json_type_boolean:
		return json_object_get_boolean(obj) ? buf_append(out, "true", 4)
		                                    : buf_append(out, "false", 5);
	case json_type_string:
		return write_string(out, json_object_get_string(obj),
		                    (size_t)json_object_get_string_len(obj));
	case json_type_object: {
		bool first = true;
		r = buf_append(out, "{", 1);
		json_object_object_foreach(obj, key, val)
		{
			if (r >= 0 && !first)
				r = buf_append(out, ",", 1);
			first = false;
			if (r >= 0)
				r = write_string(out, key, strlen(key));
			if (r >= 0)
				r = buf_append(out, ":", 1);
			if (r >= 0)
				r = json_write(out, val);
		}
		return r < 0 ? r : buf_append(out, "}", 1);
	}
	case json_type_array: {
		size_t n = json_object_array_length(obj);
		r = buf_append(out, "[", 1);
		for (size_t i = 0; r >= 0 && i < n; i++) {
			if (i)
				r = buf_append(out, ",", 1);
			if (r >= 0)
				r = json_write(out, json_object_array_get_idx(obj, i));
		}
		return r < 0 ? r : buf_append(out, "]", 1);
	}
	case json_type_int: {
		/* json-c's form of an int64, without its printbuf (allocated
		 * and kept in the object) or printf: every reply's id is one.
		 * A uint64 past INT64_MAX reads as INT64_MAX here: that one
		 * goes through json-c. */
		int64_t v = json_object_get_int64(obj);
		if (v == INT64_MAX)
			break;
		return json_write_int64(out, v);
	}
	default:
		break;
	}
	/* Other numbers: json-c's own form (a parsed double keeps its text). */
	const char *s = json_compact(obj);
	return s ? buf_append(out, s, strlen(s)) : -ENOMEM;
}

json_object *json_copy(json_object *obj)
{
	json_object *out = NULL;
	if (!obj)
		return NULL;
	if (json_object_deep_copy(obj, &out, NULL) < 0)
		return NULL;
	return out;
}

/* json-c accepts more than JSON even in strict mode: NaN and Infinity,
 * "1." and raw control characters in strings. Echoed back (an id, a
 * param), they would make kiln's own output invalid JSON. So the tokens
 * of a text are also checked against RFC 8259 by a scanner that keeps its
 * place between pieces; it only needs to be right where json-c accepted
 * the text (json-c's own errors come first). */
enum strict_state {
	ST_TOP,
	ST_STR,
	ST_ESC,
	ST_MINUS, /* after '-': a digit must follow */
	ST_ZERO,  /* a leading 0: '.', 'e' or the end of the number */
	ST_INT,
	ST_DOT, /* after '.': a digit must follow */
	ST_FRAC,
	ST_EXP_MARK, /* after 'e': a sign or a digit */
	ST_EXP_SIGN, /* after the sign: a digit */
	ST_EXP,
	ST_LITERAL,
};

/* The most number characters held back from json-c (hold_number). */
#define JSON_HOLD_MAX (64u << 10)

struct json_stream {
	json_tokener *tok;
	json_object *obj; /* json-c's value, once it has one */
	size_t max_len;
	size_t fed; /* bytes fed so far: the offset of the next piece */
	bool too_big;
	/* UTF-8: the start of a sequence the next piece completes. */
	bool utf8_bad;
	unsigned char carry[4];
	size_t ncarry;
	/* json-c: still going (continue), or where it stopped and why. */
	enum json_tokener_error jerr;
	size_t jend;
	/* What json-c has been given (its offsets start there), and the
	 * characters a number may hold at the end of what was fed, held back
	 * from json-c until the byte after them comes (hold_number). */
	size_t jc_at;
	struct buf hold;
	/* The RFC 8259 scanner. */
	enum strict_state st;
	size_t tok_start; /* where the number or literal began */
	const char *literal;
	size_t lit_pos;
	size_t strict_bad; /* first byte that is not JSON, or SIZE_MAX */
};

struct json_stream *json_stream_new(size_t max_len)
{
	struct json_stream *js = calloc(1, sizeof(*js));
	if (!js)
		return NULL;
	js->tok = json_tokener_new_ex(JSON_MAX_DEPTH);
	if (!js->tok) {
		free(js);
		return NULL;
	}
	/* No JSON_TOKENER_VALIDATE_UTF8: kiln's own check is stricter, runs
	 * first, and does not care where the pieces are cut. */
	json_tokener_set_flags(js->tok, JSON_TOKENER_STRICT);
	/* json-c takes lengths as an int. */
	js->max_len = max_len > (size_t)INT32_MAX ? (size_t)INT32_MAX : max_len;
	js->jerr = json_tokener_continue;
	js->strict_bad = SIZE_MAX;
	js->st = ST_TOP;
	buf_init(&js->hold, JSON_HOLD_MAX);
	return js;
}

void json_stream_reset(struct json_stream *js)
{
	json_tokener_reset(js->tok);
	json_object_put(js->obj);
	size_t max_len = js->max_len;
	json_tokener *tok = js->tok;
	struct buf hold = js->hold;
	buf_reset(&hold);
	*js = (struct json_stream){
	    .tok = tok,
	    .max_len = max_len,
	    .hold = hold,
	    .jerr = json_tokener_continue,
	    .strict_bad = SIZE_MAX,
	    .st = ST_TOP,
	};
}

void json_stream_free(struct json_stream *js)
{
	if (!js)
		return;
	json_tokener_free(js->tok);
	json_object_put(js->obj);
	buf_release(&js->hold);
	free(js);
}

static void utf8_feed(struct json_stream *js, const char *p, size_t n)
{
	if (js->ncarry > 0) {
		unsigned char lead = js->carry[0];
		size_t need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
		size_t take = need - js->ncarry < n ? need - js->ncarry : n;
		memcpy(js->carry + js->ncarry, p, take);
		js->ncarry += take;
		p += take;
		n -= take;
		if (js->ncarry < need)
			return;
		js->ncarry = 0;
		if (!utf8_valid((const char *)js->carry, need)) {
			js->utf8_bad = true;
			return;
		}
	}
	/* ASCII, most of a message, a block at a time. */
	size_t ascii = scan_ascii((const unsigned char *)p, n);
	p += ascii;
	n -= ascii;
	size_t whole = utf8_complete_prefix(p, n);
	if (!utf8_valid(p, whole)) {
		js->utf8_bad = true;
		return;
	}
	js->ncarry = n - whole;
	memcpy(js->carry, p + whole, js->ncarry);
}

/* One byte of the RFC 8259 scanner, at offset at. */
static void strict_byte(struct json_stream *js, char c, size_t at)
{
	static const char *const literals[] = {"true", "false", "null"};
	bool digit = c >= '0' && c <= '9';
	switch (js->st) {
	case ST_STR:
		if (c == '"')
			js->st = ST_TOP;
		else if (c == '\\')
			js->st = ST_ESC; /* json-c checked the escape itself */
		else if ((unsigned char)c < 0x20)
			js->strict_bad = at;
		return;
	case ST_ESC:
		js->st = ST_STR;
		return;
	case ST_MINUS:
		if (c == '0')
			js->st = ST_ZERO;
		else if (digit)
			js->st = ST_INT;
		else
			js->strict_bad = js->tok_start;
		return;
	case ST_INT:
		if (digit)
			return;
		/* fall through */
	case ST_ZERO:
		if (c == '.')
			js->st = ST_DOT;
		else if (c == 'e' || c == 'E')
			js->st = ST_EXP_MARK;
		else
			break; /* the number ended: c is the next token */
		return;
	case ST_DOT:
		if (!digit)
			js->strict_bad = js->tok_start;
		js->st = ST_FRAC;
		return;
	case ST_FRAC:
		if (digit)
			return;
		if (c == 'e' || c == 'E') {
			js->st = ST_EXP_MARK;
			return;
		}
		break;
	case ST_EXP_MARK:
		if (c == '+' || c == '-') {
			js->st = ST_EXP_SIGN;
			return;
		}
		/* fall through */
	case ST_EXP_SIGN:
		if (!digit)
			js->strict_bad = js->tok_start;
		js->st = ST_EXP;
		return;
	case ST_EXP:
		if (digit)
			return;
		break;
	case ST_LITERAL:
		if (c != js->literal[js->lit_pos])
			js->strict_bad = js->tok_start;
		else if (js->literal[++js->lit_pos] == '\0')
			js->st = ST_TOP;
		return;
	case ST_TOP:
		break;
	}
	js->st = ST_TOP;
	switch (c) {
	case '{':
	case '}':
	case '[':
	case ']':
	case ',':
	case ':':
	case ' ':
	case '\t':
	case '\r':
	case '\n':
		return;
	default:
		break;
	}
	js->tok_start = at;
	if (c == '"') {
		js->st = ST_STR;
	} else if (c == '-') {
		js->st = ST_MINUS;
	} else if (c == '0') {
		js->st = ST_ZERO;
	} else if (digit) {
		js->st = ST_INT;
	} else {
		for (size_t k = 0; k < 3; k++) {
			if (c == literals[k][0]) {
				js->st = ST_LITERAL;
				js->literal = literals[k];
				js->lit_pos = 1;
				return;
			}
		}
		js->strict_bad = at;
	}
}

/* Where the text ends, a number or literal must be complete. */
static void strict_end(struct json_stream *js)
{
	switch (js->st) {
	case ST_MINUS:
	case ST_DOT:
	case ST_EXP_MARK:
	case ST_EXP_SIGN:
	case ST_LITERAL:
		if (js->strict_bad == SIZE_MAX)
			js->strict_bad = js->tok_start;
		break;
	default:
		break;
	}
}

/* After the value, json-c in strict mode allows only whitespace and calls
 * anything else an unexpected character, when it sees it in the same
 * piece. Say the same of what comes in later pieces. */
static void trailing(struct json_stream *js, const char *p, size_t n, size_t base)
{
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
			js->jerr = json_tokener_error_parse_unexpected;
			js->jend = base + i;
			return;
		}
	}
}

/* Give json-c the next n bytes (at offset js->jc_at of the text), or,
 * once it has the value, check that only whitespace follows. */
static void feed_json_c(struct json_stream *js, const char *p, size_t n)
{
	size_t base = js->jc_at;
	js->jc_at += n;
	if (js->jerr == json_tokener_continue) {
		json_object *o = json_tokener_parse_ex(js->tok, p, (int)n);
		enum json_tokener_error err = json_tokener_get_error(js->tok);
		if (err != json_tokener_continue) {
			size_t off = json_tokener_get_parse_end(js->tok);
			js->jerr = err;
			js->jend = base + off;
			if (err == json_tokener_success) {
				js->obj = o;
				trailing(js, p + off, n - off, base + off);
			}
		}
	} else if (js->jerr == json_tokener_success) {
		trailing(js, p, n, base);
	}
}

static bool number_char(char c)
{
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* json-c judges a number by what it sees of it in one call: within one
 * piece it looks ahead at the number's characters, across pieces it
 * collects them and judges at the byte after them, and the two disagree
 * on where a bad number is bad ("4-L") and even on whether it is ("54-3"
 * fed a byte at a time). So a number never reaches json-c in two pieces:
 * the characters a number may hold at the end of a piece wait in
 * js->hold, and go to json-c with the next piece's number characters and
 * the byte after them. The text is then cut, for json-c, only where no
 * number is, whatever the reads were; past JSON_HOLD_MAX of such
 * characters (no JSON number is that long) they go as they are. */
static void hold_number(struct json_stream *js, const char *p, size_t n)
{
	size_t tail = 0;
	while (tail < n && number_char(p[n - 1 - tail]))
		tail++;
	if (js->hold.len) {
		size_t lead = 0;
		while (lead < n && number_char(p[lead]))
			lead++;
		/* The held characters, this piece's that go on from them, and
		 * the byte after them, in one call. */
		size_t with = lead < n ? lead + 1 : n;
		if (buf_append(&js->hold, p, with) < 0) {
			feed_json_c(js, js->hold.data, js->hold.len);
			buf_reset(&js->hold);
			feed_json_c(js, p, n);
			return;
		}
		if (lead == n)
			return; /* still inside the number */
		feed_json_c(js, js->hold.data, js->hold.len);
		buf_reset(&js->hold);
		p += with;
		n -= with;
		if (tail > n)
			tail = n;
	}
	if (n > tail)
		feed_json_c(js, p, n - tail);
	if (tail && buf_append(&js->hold, p + n - tail, tail) < 0)
		feed_json_c(js, p + n - tail, tail);
}

void json_stream_feed(struct json_stream *js, const char *p, size_t n)
{
	if (n == 0 || js->too_big || js->utf8_bad)
		return;
	if (n > js->max_len - js->fed) {
		js->too_big = true;
		return;
	}
	size_t base = js->fed;
	js->fed += n;
	utf8_feed(js, p, n);
	if (js->utf8_bad)
		return; /* that is the answer, whatever else is wrong */
	hold_number(js, p, n);
	if (js->jerr != json_tokener_success && js->jerr != json_tokener_continue)
		return; /* json-c's error comes first */
	const unsigned char *u = (const unsigned char *)p;
	for (size_t i = 0; i < n && js->strict_bad == SIZE_MAX; i++) {
		/* Inside a string only '"', '\\' and control bytes matter:
		 * skip the rest a block at a time (a message is mostly
		 * strings: a document's text, a method name). */
		if (js->st == ST_STR) {
			i += scan_json_plain(u + i, n - i);
			if (i >= n)
				break;
		}
		strict_byte(js, p[i], base + i);
	}
}

int json_stream_finish(struct json_stream *js, json_object **ret_obj, char *detail, size_t dsz)
{
	if (js->too_big) {
		snprintf(detail, dsz, "the text is larger than %zu bytes", js->max_len);
		return -EFBIG;
	}
	if (!js->utf8_bad && js->ncarry > 0)
		js->utf8_bad = !utf8_valid((const char *)js->carry, js->ncarry);
	if (js->utf8_bad) {
		snprintf(detail, dsz, "the text is not valid UTF-8");
		return -EINVAL;
	}
	if (js->hold.len) {
		feed_json_c(js, js->hold.data, js->hold.len);
		buf_reset(&js->hold);
	}
	if (js->jerr == json_tokener_continue && js->fed > 0) {
		/* A top-level number or literal ("1", "null") is complete only
		 * once json-c sees the end: say so with a terminating NUL. */
		json_object *o = json_tokener_parse_ex(js->tok, "", 1);
		enum json_tokener_error err = json_tokener_get_error(js->tok);
		js->jerr = err == json_tokener_error_parse_eof ? json_tokener_continue : err;
		js->jend = js->fed;
		if (err == json_tokener_success)
			js->obj = o;
		else
			json_object_put(o);
	}
	enum json_tokener_error err = js->jerr;
	if (err == json_tokener_continue || (err == json_tokener_success && js->fed == 0)) {
		snprintf(detail, dsz, "the JSON text ends early");
		return -EINVAL;
	}
	if (err == json_tokener_error_depth) {
		snprintf(detail, dsz, "nesting deeper than %d levels", JSON_MAX_DEPTH);
		return -EINVAL;
	}
	if (err != json_tokener_success) {
		snprintf(detail, dsz, "%s at byte %zu", json_tokener_error_desc(err), js->jend);
		return -EINVAL;
	}
	strict_end(js);
	if (js->strict_bad != SIZE_MAX) {
		snprintf(detail, dsz, "not JSON at byte %zu", js->strict_bad);
		return -EINVAL;
	}
	*ret_obj = js->obj;
	js->obj = NULL;
	return 0;
}

int json_parse_strict(const char *body, size_t len, size_t max_len, json_object **ret_obj,
                      char *detail, size_t dsz)
{
	if (max_len > (size_t)INT32_MAX)
		max_len = INT32_MAX;
	if (len > max_len) {
		snprintf(detail, dsz, "the text is larger than %zu bytes", max_len);
		return -EFBIG;
	}
	struct json_stream *js = json_stream_new(max_len);
	if (!js)
		return -ENOMEM;
	json_stream_feed(js, body, len);
	int r = json_stream_finish(js, ret_obj, detail, dsz);
	json_stream_free(js);
	return r;
}
