/* text.c: UTF-8 repair for streamed output and stream tails (text.h). */
#include "sandbox/output/text.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/scan.h"

static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */

/* Length of a valid sequence at s (1..4), 0 when s starts an invalid one,
 * -1 when avail is too short to tell (it may still become valid). */
static int seq(const unsigned char *s, size_t avail)
{
	unsigned char c = s[0];
	if (c < 0x80)
		return 1;
	int len;
	uint32_t min, cp;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, min = 0x80, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, min = 0x800, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, min = 0x10000, cp = c & 0x07;
	else
		return 0;
	for (int i = 1; i < len; i++) {
		if ((size_t)i >= avail)
			return -1;
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
		/* Reject early what can never be valid (overlong, surrogate,
		 * too large), so a bad prefix is not held back. */
		if (i == 1) {
			if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) ||
			    (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))
				return 0;
		}
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static int emit(const unsigned char *s, size_t n, bool final, struct sbx_utf8 *u, struct buf *out)
{
	size_t i = 0, start = 0;
	while (i < n) {
		/* Output is mostly ASCII: skipped by the fast scan. */
		i += scan_ascii(s + i, n - i);
		if (i >= n)
			break;
		int l = seq(s + i, n - i);
		if (l > 0) {
			i += (size_t)l;
			continue;
		}
		if (l < 0 && !final) {
			int r = buf_append(out, s + start, i - start);
			if (r < 0)
				return r;
			u->ncarry = n - i;
			memcpy(u->carry, s + i, u->ncarry);
			return 0;
		}
		int r = buf_append(out, s + start, i - start);
		if (r < 0 || (r = buf_append(out, replacement, 3)) < 0)
			return r;
		i++;
		start = i;
	}
	u->ncarry = 0;
	return buf_append(out, s + start, n - start);
}

int sbx_utf8_decode(struct sbx_utf8 *u, const char *data, size_t n, bool final, struct buf *out)
{
	const unsigned char *d = (const unsigned char *)data;
	if (u->ncarry) {
		/* Complete the held sequence from the new bytes first. */
		unsigned char tmp[8];
		size_t have = u->ncarry;
		memcpy(tmp, u->carry, have);
		size_t take = n < 4 ? n : 4;
		memcpy(tmp + have, d, take);
		int l = seq(tmp, have + take);
		if (l < 0 && !final) {
			/* Still incomplete: all of data joined the carry. */
			memcpy(u->carry + have, d, take);
			u->ncarry = have + take;
			return 0;
		}
		u->ncarry = 0;
		if (l > 0) {
			int r = buf_append(out, tmp, (size_t)l);
			if (r < 0)
				return r;
			size_t used = (size_t)l - have;
			d += used, n -= used;
		} else {
			/* The held bytes are invalid: replace the first, then
			 * rescan the rest with the new data. */
			int r = buf_append(out, replacement, 3);
			if (r < 0)
				return r;
			unsigned char rest[4];
			size_t nrest = have - 1;
			memcpy(rest, u->carry + 1, nrest);
			if (nrest) {
				struct sbx_utf8 sub = {.ncarry = 0};
				memcpy(sub.carry, rest, nrest);
				sub.ncarry = nrest;
				r = sbx_utf8_decode(&sub, (const char *)d, n, final, out);
				*u = sub;
				return r;
			}
		}
	}
	return emit(d, n, final, u, out);
}

void sbx_tail_add(struct sbx_tail *t, const char *text, size_t n)
{
	if (n == 0)
		return;
	if (!t->buf && !(t->buf = malloc(2 * SBX_TAIL_MAX + 1)))
		return;
	if (n >= SBX_TAIL_MAX) {
		text += n - SBX_TAIL_MAX;
		n = SBX_TAIL_MAX;
		t->len = 0;
	}
	if (t->len + n > 2 * SBX_TAIL_MAX) {
		size_t drop = t->len + n - SBX_TAIL_MAX;
		memmove(t->buf, t->buf + drop, t->len - drop);
		t->len -= drop;
	}
	memcpy(t->buf + t->len, text, n);
	t->len += n;
	t->buf[t->len] = '\0';
}

const char *sbx_tail_str(struct sbx_tail *t)
{
	if (!t->buf)
		return "";
	size_t start = t->len > SBX_TAIL_MAX ? t->len - SBX_TAIL_MAX : 0;
	/* Never start inside a character. */
	while (start < t->len && ((unsigned char)t->buf[start] & 0xc0) == 0x80)
		start++;
	t->buf[t->len] = '\0';
	return t->buf + start;
}

void sbx_tail_free(struct sbx_tail *t)
{
	free(t->buf);
	*t = (struct sbx_tail){0};
}

char *sbx_utf8_name(const char *name)
{
	struct buf b;
	/* Each byte becomes at most three (U+FFFD). */
	buf_init(&b, 3 * strlen(name) + 16);
	struct sbx_utf8 u = {0};
	if (sbx_utf8_decode(&u, name, strlen(name), true, &b) < 0 || buf_append(&b, "", 1) < 0) {
		buf_release(&b);
		return NULL;
	}
	return buf_steal(&b, NULL);
}
