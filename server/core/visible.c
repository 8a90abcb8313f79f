/* visible.c: text made visible for a terminal, and the program output
 * filter that keeps colour and drops every other escape (see visible.h). */
#include "core/visible.h"

#include <errno.h>
#include <string.h>

#include "core/position.h"
#include "core/util.h"

bool vis_hidden(uint32_t cp)
{
	static const struct {
		uint32_t lo, hi;
	} ranges[] = {
	    {0x0000, 0x001f},   /* C0 controls */
	    {0x007f, 0x009f},   /* DEL and C1 controls */
	    {0x00ad, 0x00ad},   /* soft hyphen */
	    {0x034f, 0x034f},   /* combining grapheme joiner */
	    {0x061c, 0x061c},   /* Arabic letter mark (bidi) */
	    {0x115f, 0x1160},   /* Hangul fillers */
	    {0x17b4, 0x17b5},   /* Khmer inherent vowels */
	    {0x180b, 0x180f},   /* Mongolian variation selectors and separator */
	    {0x200b, 0x200f},   /* zero width space, joiners, LRM, RLM */
	    {0x2028, 0x202e},   /* line and paragraph separators, bidi embeddings */
	    {0x2060, 0x206f},   /* word joiner, invisible operators, bidi isolates */
	    {0x3164, 0x3164},   /* Hangul filler */
	    {0xfe00, 0xfe0f},   /* variation selectors */
	    {0xfeff, 0xfeff},   /* zero width no-break space (BOM) */
	    {0xffa0, 0xffa0},   /* halfwidth Hangul filler */
	    {0xfff9, 0xfffb},   /* interlinear annotation */
	    {0x1d173, 0x1d17a}, /* musical format characters */
	    {0xe0000, 0xe007f}, /* tags */
	    {0xe0100, 0xe01ef}, /* variation selectors supplement */
	};
	for (size_t i = 0; i < ARRAY_SIZE(ranges); i++)
		if (cp >= ranges[i].lo && cp <= ranges[i].hi)
			return true;
	return false;
}

/* Where the made-visible pieces go: a buffer or a stdio stream. */
struct sink {
	struct buf *b;
	FILE *f;
	int err;
};

static void put(struct sink *k, const char *s, size_t n)
{
	if (k->err || !n)
		return;
	if (k->f) {
		fwrite(s, 1, n, k->f);
		return;
	}
	int r = buf_append(k->b, s, n);
	if (r < 0)
		k->err = r;
}

static uint32_t decode(const unsigned char *s, size_t n)
{
	if (n == 1)
		return s[0];
	uint32_t cp = s[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++)
		cp = (cp << 6) | (s[i] & 0x3f);
	return cp;
}

static void visible(struct sink *k, const char *s, size_t len, unsigned flags)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, plain = 0; /* p[plain..i) is shown as it is */
	while (i < len) {
		size_t n = utf8_seq_len(p + i, len - i);
		bool invalid = n == 1 && p[i] >= 0x80;
		uint32_t cp = invalid ? 0 : decode(p + i, n);
		if (!invalid && (!vis_hidden(cp) || (cp == '\n' && (flags & VIS_NEWLINE)) ||
		                 (cp == '\t' && (flags & VIS_TAB)))) {
			i += n;
			continue;
		}
		put(k, s + plain, i - plain);
		char v[16];
		size_t vn;
		if (invalid) {
			v[0] = '\\', v[1] = 'x', v[2] = hex[p[i] >> 4], v[3] = hex[p[i] & 15];
			vn = 4;
		} else if (cp < 0x20 || cp == 0x7f) {
			v[0] = '^', v[1] = (char)(cp ^ 0x40);
			vn = 2;
		} else {
			int w = cp > 0xffff ? 5 : 4;
			memcpy(v, "<U+", 3);
			vn = 3;
			for (int d = w - 1; d >= 0; d--)
				v[vn++] = hex[(cp >> (4 * d)) & 15];
			v[vn++] = '>';
		}
		if (flags & VIS_COLOR)
			put(k, VIS_STYLE_ON, strlen(VIS_STYLE_ON));
		put(k, v, vn);
		if (flags & VIS_COLOR)
			put(k, VIS_STYLE_OFF, strlen(VIS_STYLE_OFF));
		i += n;
		plain = i;
	}
	put(k, s + plain, len - plain);
}

int vis_append(struct buf *out, const char *s, size_t len, unsigned flags)
{
	struct sink k = {.b = out};
	visible(&k, s, len, flags);
	return k.err;
}

void vis_fwrite(FILE *f, const char *s, size_t len, unsigned flags)
{
	struct sink k = {.f = f};
	visible(&k, s, len, flags);
}

void vis_fputs(FILE *f, const char *s, unsigned flags)
{
	if (s)
		vis_fwrite(f, s, strlen(s), flags);
}

void vis_json_fputs(FILE *f, const char *json)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)json;
	size_t len = strlen(json), i = 0, plain = 0;
	while (i < len) {
		size_t n = utf8_seq_len(p + i, len - i);
		bool invalid = n == 1 && p[i] >= 0x80;
		uint32_t cp = invalid ? 0xfffd : decode(p + i, n);
		if (!invalid && !vis_hidden(cp)) {
			i += n;
			continue;
		}
		fwrite(json + plain, 1, i - plain, f);
		/* Outside strings JSON has only ASCII structure and whitespace,
		 * which json-c writes as ' ' or '\n': every other hidden
		 * character is inside a string, where an escape is the same
		 * value. */
		if (cp < 0x80 && (cp == '\n' || cp == ' ')) {
			fputc((int)cp, f);
		} else {
			uint32_t units[2] = {cp, 0};
			int nu = 1;
			if (cp > 0xffff) {
				units[0] = 0xd800 + ((cp - 0x10000) >> 10);
				units[1] = 0xdc00 + ((cp - 0x10000) & 0x3ff);
				nu = 2;
			}
			for (int u = 0; u < nu; u++)
				fprintf(f, "\\u%c%c%c%c", hex[units[u] >> 12],
				        hex[(units[u] >> 8) & 15], hex[(units[u] >> 4) & 15],
				        hex[units[u] & 15]);
		}
		i += n;
		plain = i;
	}
	fwrite(json + plain, 1, len - plain, f);
}

/* --- the program output filter ------------------------------------------ */

void vis_filter_init(struct vis_filter *f)
{
	f->state = VIS_F_TEXT;
	f->seq_len = 0;
	f->colored = false;
}

#define ESC 0x1b
#define CAN 0x18
#define SUB 0x1a
#define BEL 0x07

/* A complete CSI in f->seq ("[" params intermediates final): kept when it
 * is SGR, i.e. final 'm' with only digits, ';' and ':' before it (no
 * private marker: "CSI > 4 ; 1 m" sets a keyboard mode). */
static void csi_done(struct vis_filter *f, struct sink *k)
{
	size_t n = f->seq_len;
	if (n > VIS_CSI_MAX || f->seq[n - 1] != 'm')
		return;
	bool reset = true;
	for (size_t i = 1; i + 1 < n; i++) {
		char c = f->seq[i];
		if (!strchr("0123456789;:", c))
			return;
		if (c != '0' && c != ';')
			reset = false;
	}
	put(k, "\033", 1);
	put(k, f->seq, n);
	f->colored = !reset;
}

/* Bytes a string sequence (OSC, DCS, ...) or a dropped CSI may run to
 * before the filter gives up on it and goes back to text. */
static bool seq_grow(struct vis_filter *f)
{
	if (++f->seq_len <= VIS_SEQ_MAX)
		return true;
	f->state = VIS_F_TEXT;
	f->seq_len = 0;
	return false;
}

/* Start what a C1 control introduces: c1 is U+0080-U+009F (sent as 0xC2
 * c1), or the byte after ESC plus 0x40 ("ESC [" is CSI, 0x9B). */
static void introduce(struct vis_filter *f, unsigned char c1)
{
	f->seq_len = 0;
	switch (c1) {
	case 0x9b: /* CSI */
		f->seq[0] = '[';
		f->seq_len = 1;
		f->state = VIS_F_CSI;
		break;
	case 0x90: /* DCS */
	case 0x98: /* SOS */
	case 0x9d: /* OSC */
	case 0x9e: /* PM */
	case 0x9f: /* APC */
		f->state = VIS_F_STR;
		break;
	default: /* any other C1 control, or ESC and a final byte: dropped */
		f->state = VIS_F_TEXT;
	}
}

#define FFFD "\xef\xbf\xbd"

/* The length of the UTF-8 sequence a lead byte starts; 0 for a byte that
 * cannot start one. */
static size_t seq_need(unsigned char c)
{
	return c >= 0xc2 && c <= 0xdf   ? 2
	       : c >= 0xe0 && c <= 0xef ? 3
	       : c >= 0xf0 && c <= 0xf4 ? 4
	                                : 0;
}

/* One whole sequence of n bytes: a character passes, a C1 control
 * (U+0080-U+009F) is a control like its ESC form, anything else that is
 * not UTF-8 is U+FFFD. Passing an invalid byte on could let the bytes
 * around a dropped sequence join into a C1 control on the terminal. */
static void utf8_char(struct vis_filter *f, struct sink *k, const unsigned char *u, size_t n)
{
	if (utf8_seq_len(u, n) != n)
		put(k, FFFD, 3);
	else if (n == 2 && u[0] == 0xc2 && u[1] <= 0x9f)
		introduce(f, u[1]);
	else
		put(k, (const char *)u, n);
}

/* A byte >= 0x80 at s[i] in text: pass the character it starts, or hold
 * its first bytes when the chunk ends inside it. Returns the next i. */
static size_t utf8_text(struct vis_filter *f, struct sink *k, const char *s, size_t len, size_t i,
                        size_t *plain)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t need = seq_need(p[i]);
	if (need && len - i >= need && utf8_seq_len(p + i, need) == need &&
	    !(p[i] == 0xc2 && p[i + 1] <= 0x9f))
		return i + need; /* text: stays in the run */
	put(k, s + *plain, i - *plain);
	/* The lead byte and the continuation bytes that follow it. */
	size_t have = 1;
	while (need && have < need && i + have < len && (p[i + have] & 0xc0) == 0x80)
		have++;
	if (need && have < need && i + have == len) {
		/* The chunk ends inside the character: hold its bytes. */
		memcpy(f->u8, p + i, have);
		f->u8_len = (uint8_t)have;
		f->state = VIS_F_UTF8;
		*plain = len;
		return len;
	}
	if (need && have == need)
		utf8_char(f, k, p + i, need);
	else
		put(k, FFFD, 3); /* cut short, or no lead byte: one U+FFFD */
	*plain = i + have;
	return *plain;
}

int vis_filter_feed(struct vis_filter *f, const char *s, size_t len, struct buf *out)
{
	struct sink k = {.b = out};
	const unsigned char *p = (const unsigned char *)s;
	size_t plain = 0; /* p[plain..i) is text passed on as it is */
	size_t i = 0;
	/* Text runs are copied in one piece; a control ends the run. */
#define FLUSH() (put(&k, s + plain, i - plain))
	while (i < len) {
		unsigned char c = p[i];
		switch (f->state) {
		case VIS_F_TEXT:
			if (c >= 0x20 && c < 0x7f) {
				i++;
				continue;
			}
			if (c == '\n' || c == '\t' || c == '\r' || c == '\b') {
				i++;
				continue;
			}
			if (c >= 0x80) {
				i = utf8_text(f, &k, s, len, i, &plain);
				continue;
			}
			FLUSH();
			if (c == ESC)
				f->state = VIS_F_ESC;
			/* Any other C0 control and DEL: dropped. */
			plain = ++i;
			continue;
		case VIS_F_UTF8: {
			size_t need = seq_need(f->u8[0]);
			if ((c & 0xc0) != 0x80) {
				/* Cut short: U+FFFD, then c as what it is. */
				put(&k, FFFD, 3);
				f->state = VIS_F_TEXT;
				plain = i;
				continue;
			}
			f->u8[f->u8_len++] = c;
			plain = ++i;
			if (f->u8_len == need) {
				f->state = VIS_F_TEXT;
				utf8_char(f, &k, f->u8, need);
			}
			continue;
		}
		case VIS_F_ESC:
			if (c == '[' || c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_') {
				introduce(f, (unsigned char)(c + 0x40));
			} else if (c >= 0x20 && c <= 0x2f) {
				f->state = VIS_F_ESC_INT;
				f->seq_len = 1;
			} else if (c == ESC) {
				/* Another ESC starts over. */
			} else if (c >= 0x80) {
				f->state = VIS_F_TEXT;
				plain = i;
				continue;
			} else if (c >= 0x30 || c == CAN || c == SUB) {
				/* A two-byte sequence (ESC 7, ESC c, ESC M...) or a
				 * cancel: dropped. */
				f->state = VIS_F_TEXT;
			}
			/* Other C0 controls inside a sequence: dropped. */
			plain = ++i;
			continue;
		case VIS_F_ESC_INT:
			if (c >= 0x30 && c <= 0x7e)
				f->state = VIS_F_TEXT;
			else if (c == ESC)
				f->state = VIS_F_ESC;
			else if (c == CAN || c == SUB)
				f->state = VIS_F_TEXT;
			else if (c >= 0x80) {
				f->state = VIS_F_TEXT;
				plain = i;
				continue;
			} else
				seq_grow(f);
			plain = ++i;
			continue;
		case VIS_F_CSI:
			if (c >= 0x20 && c <= 0x7e) {
				if (f->seq_len < VIS_CSI_MAX)
					f->seq[f->seq_len] = (char)c;
				if (!seq_grow(f)) {
					plain = ++i;
					continue;
				}
				if (c >= 0x40) {
					csi_done(f, &k);
					f->state = VIS_F_TEXT;
				}
			} else if (c == ESC) {
				f->state = VIS_F_ESC;
			} else if (c == CAN || c == SUB) {
				f->state = VIS_F_TEXT;
			} else if (c >= 0x80) {
				f->state = VIS_F_TEXT;
				plain = i;
				continue;
			}
			plain = ++i;
			continue;
		case VIS_F_STR:
			if (c == BEL || c == CAN || c == SUB)
				f->state = VIS_F_TEXT;
			else if (c == ESC)
				f->state = VIS_F_STR_ESC;
			else if (c == 0xc2)
				f->state = VIS_F_STR_C2;
			else
				seq_grow(f);
			plain = ++i;
			continue;
		case VIS_F_STR_ESC:
			if (c == '\\') {
				f->state = VIS_F_TEXT;
				plain = ++i;
			} else {
				/* ESC and anything else ends the string and starts a
				 * new sequence. */
				f->state = VIS_F_ESC;
				plain = i;
			}
			continue;
		case VIS_F_STR_C2:
			if (c == 0x9c) {
				f->state = VIS_F_TEXT;
				plain = ++i;
			} else {
				f->state = VIS_F_STR;
				plain = i;
			}
			continue;
		}
	}
	if (f->state == VIS_F_TEXT)
		FLUSH();
#undef FLUSH
	return k.err;
}

int vis_filter_end(struct vis_filter *f, struct buf *out)
{
	struct sink k = {.b = out};
	if (f->state == VIS_F_UTF8)
		put(&k, FFFD, 3);
	if (f->colored)
		put(&k, "\033[m", 3);
	vis_filter_init(f);
	return k.err;
}
