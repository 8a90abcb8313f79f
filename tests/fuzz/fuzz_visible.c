/* fuzz_visible.c: libFuzzer target over core/visible.c: what a program
 * writes, through the output filter, and any text, made visible. Input:
 * one byte that seeds how the output is cut into chunks, then the bytes.
 *
 * Oracles beyond the sanitizers:
 * - the filter's output does not depend on how the input is cut;
 * - an ESC in its output only ever starts an SGR ("ESC [" digits, ';'
 *   and ':', then 'm') no longer than VIS_CSI_MAX; no other C0 control but
 *   LF, TAB, CR and BS, no DEL, no C1 control; it is valid UTF-8;
 * - no chunk's output is over VIS_FILTER_OUT_MAX of its length;
 * - text made visible is valid UTF-8 with no control (LF and TAB only
 *   when asked for), no bidi or invisible character left, and keeps every
 *   byte of plain ASCII text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/position.h"
#include "core/visible.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Each chunk's output in a buffer of VIS_FILTER_OUT_MAX: the bound the
 * callers size theirs by must hold. */
static void feed_one(struct vis_filter *f, const char *s, size_t n, bool end, struct buf *out)
{
	struct buf b;
	buf_init(&b, VIS_FILTER_OUT_MAX(n));
	if ((end ? vis_filter_end(f, &b) : vis_filter_feed(f, s, n, &b)) < 0)
		abort();
	if (b.len && buf_append(out, b.data, b.len) < 0)
		abort();
	buf_release(&b);
}

static void filter(const char *s, size_t len, uint8_t seed, struct buf *out)
{
	struct vis_filter f;
	vis_filter_init(&f);
	buf_init(out, 4 * len + 4096);
	size_t at = 0;
	unsigned x = seed;
	while (at < len) {
		x = x * 1103515245u + 12345u;
		size_t n = seed ? 1 + (x >> 16) % 17 : len;
		if (n > len - at)
			n = len - at;
		feed_one(&f, s + at, n, false, out);
		at += n;
	}
	feed_one(&f, NULL, 0, true, out);
}

static void check_filtered(const unsigned char *o, size_t n)
{
	if (!utf8_valid((const char *)o, n))
		abort();
	for (size_t i = 0; i < n; i++) {
		unsigned char c = o[i];
		if (c == 0x1b) {
			size_t j = i + 1;
			if (j >= n || o[j] != '[')
				abort();
			for (j++; j < n && o[j] != 'm'; j++)
				if (!strchr("0123456789;:", o[j]) || !o[j])
					abort();
			if (j >= n || j - i > VIS_CSI_MAX)
				abort();
			i = j;
		} else if ((c < 0x20 && !strchr("\n\t\r\b", c)) || c == 0x7f || !c) {
			abort();
		} else if (c == 0xc2 && i + 1 < n && o[i + 1] >= 0x80 && o[i + 1] <= 0x9f) {
			abort();
		}
	}
}

static void check_visible(const char *in, size_t len, unsigned flags)
{
	struct buf b;
	buf_init(&b, 16 * len + 64);
	if (vis_append(&b, in, len, flags) < 0)
		abort();
	const unsigned char *o = (const unsigned char *)(b.data ? b.data : "");
	if (!utf8_valid((const char *)o, b.len))
		abort();
	for (size_t i = 0; i < b.len;) {
		size_t n = utf8_seq_len(o + i, b.len - i);
		uint32_t cp = o[i];
		if (n > 1) {
			cp = o[i] & (0x7f >> n);
			for (size_t k = 1; k < n; k++)
				cp = (cp << 6) | (o[i + k] & 0x3f);
		}
		bool kept = (cp == '\n' && (flags & VIS_NEWLINE)) ||
		            (cp == '\t' && (flags & VIS_TAB)) ||
		            (cp == 0x1b && (flags & VIS_COLOR));
		if (vis_hidden(cp) && !kept)
			abort();
		i += n;
	}
	/* Plain ASCII in, the same out. */
	bool plain = true;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)in[i] < 0x20 || (unsigned char)in[i] >= 0x7f)
			plain = false;
	if (plain && (b.len != len || memcmp(b.data ? b.data : "", in, len) != 0))
		abort();
	buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 1 << 16)
		return 0;
	uint8_t seed = data[0];
	const char *s = (const char *)data + 1;
	size_t len = size - 1;
	struct buf whole, cut;
	filter(s, len, 0, &whole);
	filter(s, len, seed | 1, &cut);
	if (whole.len != cut.len || (whole.len && memcmp(whole.data, cut.data, whole.len) != 0))
		abort();
	check_filtered((const unsigned char *)(whole.data ? whole.data : ""), whole.len);
	buf_release(&whole);
	buf_release(&cut);
	check_visible(s, len, seed & 7);
	return 0;
}
