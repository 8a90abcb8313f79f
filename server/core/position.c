/* position.c: LSP position encodings and UTF-8 helpers (see position.h). */
#include "core/position.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int pos_encoding_parse(const char *name, enum pos_encoding *ret_enc)
{
	if (strcmp(name, "utf-16") == 0)
		*ret_enc = POS_UTF16;
	else if (strcmp(name, "utf-8") == 0)
		*ret_enc = POS_UTF8;
	else if (strcmp(name, "utf-32") == 0)
		*ret_enc = POS_UTF32;
	else
		return -EINVAL;
	return 0;
}

const char *pos_encoding_name(enum pos_encoding enc)
{
	switch (enc) {
	case POS_UTF8:
		return "utf-8";
	case POS_UTF32:
		return "utf-32";
	case POS_UTF16:
	default:
		return "utf-16";
	}
}

size_t utf8_seq_len(const unsigned char *s, size_t avail)
{
	unsigned char c = s[0];
	size_t n;
	uint32_t min;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		min = 0x10000;
	} else {
		return 1;
	}
	if (avail < n)
		return 1;
	uint32_t cp = c & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 1;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 1;
	return n;
}

static int seq_valid(const unsigned char *s, size_t avail)
{
	return s[0] < 0x80 || utf8_seq_len(s, avail) > 1;
}

int utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		if (!seq_valid(p + i, n - i))
			return 0;
		i += utf8_seq_len(p + i, n - i);
	}
	return 1;
}

size_t utf8_complete_prefix(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	/* Look back at most 3 bytes for a lead byte whose sequence is cut. */
	for (size_t back = 1; back <= 3 && back <= n; back++) {
		unsigned char c = p[n - back];
		if ((c & 0xc0) == 0x80)
			continue; /* continuation: keep looking for the lead */
		size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
		if (need > back && c >= 0xc2 && c <= 0xf4)
			return n - back;
		return n;
	}
	return n;
}

static uint32_t units(const unsigned char *s, size_t seq, enum pos_encoding enc)
{
	switch (enc) {
	case POS_UTF8:
		return (uint32_t)seq;
	case POS_UTF32:
		return 1;
	case POS_UTF16:
	default:
		return seq == 4 ? 2 : 1;
	}
	(void)s;
}

uint32_t pos_column(const char *line, size_t byte_col, enum pos_encoding enc)
{
	const unsigned char *p = (const unsigned char *)line;
	uint32_t col = 0;
	size_t i = 0;
	while (i < byte_col) {
		size_t seq = utf8_seq_len(p + i, byte_col - i);
		col += units(p + i, seq, enc);
		i += seq;
	}
	return col;
}

size_t pos_break_len(const char *text, size_t len, size_t i)
{
	if (i >= len)
		return 0;
	if (text[i] == '\n')
		return 1;
	if (text[i] == '\r')
		return i + 1 < len && text[i + 1] == '\n' ? 2 : 1;
	return 0;
}

/* The next line break at or after i: its offset, or len when none. */
static size_t next_break(const char *text, size_t len, size_t i)
{
	for (; i < len; i++)
		if (text[i] == '\n' || text[i] == '\r')
			return i;
	return len;
}

int pos_line_starts(const char *text, size_t len, uint32_t **ret_starts, size_t *ret_n)
{
	if (len >= UINT32_MAX)
		return -EFBIG;
	size_t n = 1;
	for (size_t i = next_break(text, len, 0); i < len; i = next_break(text, len, i)) {
		i += pos_break_len(text, len, i);
		n++;
	}
	uint32_t *starts = malloc(n * sizeof(*starts));
	if (!starts)
		return -ENOMEM;
	size_t k = 0;
	starts[k++] = 0;
	for (size_t i = next_break(text, len, 0); i < len; i = next_break(text, len, i)) {
		i += pos_break_len(text, len, i);
		starts[k++] = (uint32_t)i;
	}
	*ret_starts = starts;
	*ret_n = k;
	return 0;
}

void pos_at(const char *text, size_t len, const uint32_t *starts, size_t n, size_t off,
            enum pos_encoding enc, uint32_t *ret_line, uint32_t *ret_character)
{
	if (off > len)
		off = len;
	size_t lo = 0, hi = n;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (starts[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	/* The line's content ends at its break: an offset between "\r" and
	 * "\n" (or on the break) is the line's end, never a column past it. */
	size_t end = next_break(text, len, starts[lo]);
	if (off > end)
		off = end;
	*ret_line = (uint32_t)lo;
	*ret_character = pos_column(text + starts[lo], off - starts[lo], enc);
}

size_t pos_offset(const char *text, size_t len, uint32_t line, uint32_t character,
                  enum pos_encoding enc)
{
	size_t i = 0;
	for (uint32_t l = 0; l < line; l++) {
		i = next_break(text, len, i);
		if (i >= len)
			return len;
		i += pos_break_len(text, len, i);
	}
	const unsigned char *p = (const unsigned char *)text;
	uint32_t col = 0;
	while (i < len && text[i] != '\n' && text[i] != '\r') {
		size_t seq = utf8_seq_len(p + i, len - i);
		uint32_t u = units(p + i, seq, enc);
		if (col + u > character)
			break;
		col += u;
		i += seq;
	}
	return i;
}
