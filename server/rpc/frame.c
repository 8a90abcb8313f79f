/* frame.c: LSP base-protocol framing (see frame.h). */
#include "rpc/frame.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Real clients send two or three short header lines; anything longer is
 * not a header we can use. */
#define HEADER_MAX 8192

void frame_reader_init(struct frame_reader *fr, size_t max_body)
{
	*fr = (struct frame_reader){.state = FRAME_HEADER, .max_body = max_body};
	buf_init(&fr->header, HEADER_MAX);
	buf_init(&fr->body, max_body);
}

void frame_reader_release(struct frame_reader *fr)
{
	buf_release(&fr->header);
	buf_release(&fr->body);
}

bool frame_reader_idle(const struct frame_reader *fr)
{
	return (fr->state == FRAME_HEADER && fr->header.len == 0) || fr->state == FRAME_RESYNC;
}

static void fail(const struct frame_callbacks *cb, void *cb_data, enum frame_error err,
                 const char *detail)
{
	cb->error(cb_data, err, detail);
}

/* Find the end of the header block: "\r\n\r\n", or "\n\n" from a person
 * typing into a terminal. Returns the offset just past it, or 0. */
static size_t header_end(const char *s, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++) {
		if (s[i] != '\n')
			continue;
		if (s[i + 1] == '\n')
			return i + 2;
		if (s[i + 1] == '\r' && i + 2 < n && s[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

/* Parse the header block in fr->header[0..end). Returns 0 and sets
 * *ret_len, or -EINVAL with *ret_err and detail written. (Not the
 * frame_error itself: FRAME_ERR_NO_LENGTH is 0, which reads as success.) */
static int parse_headers(const char *s, size_t end, size_t *ret_len, enum frame_error *ret_err,
                         char *detail, size_t dsz)
{
	bool have_len = false;
	size_t len = 0;
	size_t pos = 0;
	while (pos < end) {
		const char *line = s + pos;
		const char *nl = memchr(line, '\n', end - pos);
		size_t ll = nl ? (size_t)(nl - line) : end - pos;
		pos += ll + 1;
		if (ll > 0 && line[ll - 1] == '\r')
			ll--;
		if (ll == 0)
			continue;
		const char *colon = memchr(line, ':', ll);
		if (!colon) {
			snprintf(detail, dsz, "header line without ':' (%.*s)",
			         (int)(ll > 60 ? 60 : ll), line);
			*ret_err = FRAME_ERR_BAD_HEADER;
			return -EINVAL;
		}
		size_t nlen = (size_t)(colon - line);
		const char *v = colon + 1;
		const char *vend = line + ll;
		while (v < vend && (*v == ' ' || *v == '\t'))
			v++;
		while (vend > v && (vend[-1] == ' ' || vend[-1] == '\t'))
			vend--;
		if (nlen == 14 && strncasecmp(line, "Content-Length", 14) == 0) {
			if (v == vend) {
				snprintf(detail, dsz, "Content-Length is empty");
				*ret_err = FRAME_ERR_BAD_LENGTH;
				return -EINVAL;
			}
			uint64_t n = 0;
			for (const char *p = v; p < vend; p++) {
				if (*p < '0' || *p > '9' || n > (UINT64_MAX - 9) / 10) {
					snprintf(detail, dsz,
					         "Content-Length is not a decimal number (%.*s)",
					         (int)(vend - v > 40 ? 40 : vend - v), v);
					*ret_err = FRAME_ERR_BAD_LENGTH;
					return -EINVAL;
				}
				n = n * 10 + (uint64_t)(*p - '0');
			}
			if (have_len && n != len) {
				snprintf(detail, dsz, "two different Content-Length headers");
				*ret_err = FRAME_ERR_BAD_LENGTH;
				return -EINVAL;
			}
			have_len = true;
			len = n > SIZE_MAX ? SIZE_MAX : (size_t)n;
		}
		/* Content-Type and unknown headers are accepted and ignored:
		 * the body is UTF-8 JSON whatever they say, as in LSP. */
	}
	if (!have_len) {
		snprintf(detail, dsz, "header without Content-Length");
		*ret_err = FRAME_ERR_NO_LENGTH;
		return -EINVAL;
	}
	*ret_len = len;
	return 0;
}

/* A header block s[0..end) that kiln cannot use may be junk followed by a
 * good header. Returns the offset of that header's "Content-Length:" (any
 * case), or 0 when there is none: the last one, when it does not start a
 * line (the junk ran into it) or when no line before it starts with one
 * (so the client did not mean an earlier Content-Length). */
static size_t marker_after_junk(const char *s, size_t end)
{
	static const char marker[] = "content-length:";
	const size_t mlen = sizeof(marker) - 1;
	size_t i = end >= mlen ? end - mlen : 0;
	while (i > 0 && strncasecmp(s + i, marker, mlen) != 0)
		i--;
	if (i == 0 || s[i - 1] != '\n')
		return i;
	for (size_t j = 0; j < i; j++)
		if ((j == 0 || s[j - 1] == '\n') && strncasecmp(s + j, marker, mlen) == 0)
			return 0;
	return i;
}

/* In RESYNC, look for the next "Content-Length:" (any case), a byte at a
 * time so a marker split across reads is still found. It is not required
 * to start a line: a body of unknown length usually ends without a newline,
 * right before the next header. Returns the bytes of data consumed; on a
 * match the state is HEADER with the marker buffered. */
static size_t resync(struct frame_reader *fr, const char *data, size_t n)
{
	static const char marker[] = "content-length:";
	const size_t mlen = sizeof(marker) - 1;
	for (size_t i = 0; i < n; i++) {
		char c = data[i];
		char lc = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
		if (lc != marker[fr->resync_matched])
			fr->resync_matched = 0;
		if (lc == marker[fr->resync_matched] && ++fr->resync_matched == mlen) {
			buf_reset(&fr->header);
			buf_append(&fr->header, "Content-Length:", mlen);
			fr->resync_matched = 0;
			fr->state = FRAME_HEADER;
			return i + 1;
		}
	}
	return n;
}

static void start_resync(struct frame_reader *fr)
{
	buf_reset(&fr->header);
	fr->state = FRAME_RESYNC;
	fr->resync_matched = 0;
}

int frame_reader_feed(struct frame_reader *fr, const char *data, size_t n,
                      const struct frame_callbacks *cb, void *cb_data)
{
	char detail[160];
	while (n > 0) {
		switch (fr->state) {
		case FRAME_RESYNC: {
			size_t used = resync(fr, data, n);
			data += used;
			n -= used;
			break;
		}
		case FRAME_HEADER: {
			size_t old = fr->header.len;
			size_t room = HEADER_MAX - old;
			size_t take = n < room ? n : room;
			if (buf_append(&fr->header, data, take) < 0)
				return -ENOMEM;
			/* Search from a little before the old end: the terminator
			 * may straddle two reads. */
			size_t from = old > 3 ? old - 3 : 0;
			size_t e = header_end(fr->header.data + from, fr->header.len - from);
			if (e == 0) {
				if (fr->header.len >= HEADER_MAX) {
					fail(cb, cb_data, FRAME_ERR_BAD_HEADER,
					     "header block longer than 8192 bytes");
					start_resync(fr);
				}
				data += take;
				n -= take;
				break;
			}
			e += from;
			size_t used = e - old; /* bytes of this chunk that were header */
			data += used;
			n -= used;
			size_t len = 0;
			enum frame_error err;
			int r =
			    parse_headers(fr->header.data, e, &len, &err, detail, sizeof(detail));
			size_t junk = r < 0 ? marker_after_junk(fr->header.data, e) : 0;
			if (junk > 0) {
				/* Bytes before a good header: most often the tail of a
				 * body whose Content-Length counted characters, not
				 * bytes. Report them and read the header after them,
				 * so the next request is not lost with them. */
				snprintf(detail, sizeof(detail),
				         "%zu bytes that are not a header before Content-Length",
				         junk);
				fail(cb, cb_data, FRAME_ERR_BAD_HEADER, detail);
				buf_consume(&fr->header, junk);
				r = parse_headers(fr->header.data, e - junk, &len, &err, detail,
				                  sizeof(detail));
			}
			buf_reset(&fr->header);
			if (r < 0) {
				fail(cb, cb_data, err, detail);
				/* The body that follows is of unknown length: skip to
				 * the next header. */
				start_resync(fr);
				break;
			}
			if (len > fr->max_body) {
				snprintf(detail, sizeof(detail),
				         "message of %zu bytes is over the limit of %zu bytes", len,
				         fr->max_body);
				fail(cb, cb_data, FRAME_ERR_TOO_LARGE, detail);
				fr->want = len;
				fr->state = FRAME_SKIP;
				break;
			}
			fr->want = len;
			fr->total = len;
			buf_reset(&fr->body);
			fr->state = FRAME_BODY;
			if (len == 0) {
				fr->state = FRAME_HEADER;
				if (buf_append(&fr->body, "", 0) < 0)
					return -ENOMEM;
				cb->message(cb_data, fr->body.data, 0);
			}
			break;
		}
		case FRAME_BODY: {
			size_t take = n < fr->want ? n : fr->want;
			if (buf_append(&fr->body, data, take) < 0)
				return -ENOMEM;
			if (cb->body_part)
				cb->body_part(cb_data, data, take, fr->total);
			fr->want -= take;
			data += take;
			n -= take;
			if (fr->want == 0) {
				fr->state = FRAME_HEADER;
				cb->message(cb_data, fr->body.data, fr->body.len);
				/* Do not keep a large body's memory around. */
				if (fr->body.cap > 1 << 20)
					buf_release(&fr->body);
				else
					buf_reset(&fr->body);
			}
			break;
		}
		case FRAME_SKIP: {
			size_t take = n < fr->want ? n : fr->want;
			fr->want -= take;
			data += take;
			n -= take;
			if (fr->want == 0)
				fr->state = FRAME_HEADER;
			break;
		}
		}
	}
	return 0;
}

void frame_reader_eof(struct frame_reader *fr, const struct frame_callbacks *cb, void *cb_data)
{
	char detail[160];
	switch (fr->state) {
	case FRAME_HEADER:
		if (fr->header.len > 0) {
			size_t e = header_end(fr->header.data, fr->header.len);
			if (e && e == fr->header.len)
				snprintf(detail, sizeof(detail),
				         "input ended after a header, before its body");
			else
				snprintf(detail, sizeof(detail),
				         "input ended inside a header (%zu bytes)", fr->header.len);
			fail(cb, cb_data, FRAME_ERR_TRUNCATED, detail);
		}
		break;
	case FRAME_BODY:
		snprintf(detail, sizeof(detail), "input ended after %zu of %zu body bytes",
		         fr->body.len, fr->body.len + fr->want);
		fail(cb, cb_data, FRAME_ERR_TRUNCATED, detail);
		break;
	case FRAME_SKIP:
		snprintf(detail, sizeof(detail), "input ended inside an oversized body");
		fail(cb, cb_data, FRAME_ERR_TRUNCATED, detail);
		break;
	case FRAME_RESYNC:
		break;
	}
	buf_reset(&fr->header);
	buf_reset(&fr->body);
	fr->state = FRAME_HEADER;
}

int frame_encode_header(struct buf *out, size_t len)
{
	/* The header by hand, not buf_printf: printf's machinery was a tenth
	 * of a small reply's cost. */
	char head[48] = "Content-Length: ", d[24], *p = d + sizeof(d);
	size_t h = 16;
	size_t v = len;
	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	size_t nd = (size_t)(d + sizeof(d) - p);
	memcpy(head + h, p, nd);
	h += nd;
	memcpy(head + h, "\r\n\r\n", 4);
	h += 4;
	return buf_append(out, head, h);
}

int frame_encode(struct buf *out, const char *body, size_t len)
{
	int r = frame_encode_header(out, len);
	if (r < 0)
		return r;
	return buf_append(out, body, len);
}
