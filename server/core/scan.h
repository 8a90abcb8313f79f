/* scan.h: fast scans over a program's output bytes, shared by the UTF-8
 * repair (sandbox/output/text.c) and the JSON string writer (core/json.c): how
 * many bytes at the start need no work. Output is mostly such bytes, and
 * these scans are the server's whole cost per byte of it, so they look at
 * 32 bytes a step with SSE2 (every x86-64 has it), 8 with plain 64-bit
 * words elsewhere. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Whether a byte needs a JSON escape: below 0x20, '"' or '\\'. */
static inline int scan_json_special(unsigned char c)
{
	return c < 0x20 || c == '"' || c == '\\';
}

/* The length of the longest prefix of s[0..n) in which no byte needs a
 * JSON escape. */
static inline size_t scan_json_plain(const unsigned char *s, size_t n)
{
	size_t i = 0;
#if defined(__SSE2__)
	const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1f);
	for (; i + 32 <= n; i += 32) {
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
		__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 16));
		/* v <= 0x1f (unsigned) exactly when min(v, 0x1f) == v. */
		__m128i ma = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(a, q), _mm_cmpeq_epi8(a, bs)),
		                          _mm_cmpeq_epi8(_mm_min_epu8(a, ctl), a));
		__m128i mb = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(b, q), _mm_cmpeq_epi8(b, bs)),
		                          _mm_cmpeq_epi8(_mm_min_epu8(b, ctl), b));
		unsigned m = (unsigned)_mm_movemask_epi8(ma) | (unsigned)_mm_movemask_epi8(mb)
		                                                   << 16;
		if (m)
			return i + (size_t)__builtin_ctz(m);
	}
#else
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, s + i, 8);
		uint64_t qq = w ^ (ones * '"'), bb = w ^ (ones * '\\');
		/* A zero byte of w ^ c, or a byte below 0x20, sets its high
		 * bit (bytes of 0x80 and up never do: & ~w). */
		if (((w - ones * 0x20) | (qq - ones) | (bb - ones)) & ~w & high)
			break;
	}
#endif
	while (i < n && !scan_json_special(s[i]))
		i++;
	return i;
}

/* The length of the longest prefix of s[0..n) that is ASCII and in which
 * no byte needs a JSON escape: bytes 0x20-0x7f but '"' and '\\'. One
 * pass for what scan_ascii and scan_json_plain find in two. */
static inline size_t scan_json_plain_ascii(const unsigned char *s, size_t n)
{
	size_t i = 0;
#if defined(__SSE2__)
	const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1f);
	for (; i + 32 <= n; i += 32) {
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
		__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 16));
		/* Signed, 0x20-0x7f are exactly the bytes greater than 0x1f. */
		__m128i oa =
		    _mm_andnot_si128(_mm_or_si128(_mm_cmpeq_epi8(a, q), _mm_cmpeq_epi8(a, bs)),
		                     _mm_cmpgt_epi8(a, ctl));
		__m128i ob =
		    _mm_andnot_si128(_mm_or_si128(_mm_cmpeq_epi8(b, q), _mm_cmpeq_epi8(b, bs)),
		                     _mm_cmpgt_epi8(b, ctl));
		unsigned m =
		    ~((unsigned)_mm_movemask_epi8(oa) | (unsigned)_mm_movemask_epi8(ob) << 16);
		if (m)
			return i + (size_t)__builtin_ctz(m);
	}
#endif
	while (i < n && s[i] < 0x80 && !scan_json_special(s[i]))
		i++;
	return i;
}

/* The length of the longest prefix of s[0..n) that is ASCII. */
static inline size_t scan_ascii(const unsigned char *s, size_t n)
{
	size_t i = 0;
#if defined(__SSE2__)
	for (; i + 32 <= n; i += 32) {
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
		__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 16));
		unsigned m = (unsigned)_mm_movemask_epi8(a) | (unsigned)_mm_movemask_epi8(b) << 16;
		if (m)
			return i + (size_t)__builtin_ctz(m);
	}
#else
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, s + i, 8);
		if (w & 0x8080808080808080ull)
			break;
	}
#endif
	while (i < n && s[i] < 0x80)
		i++;
	return i;
}
