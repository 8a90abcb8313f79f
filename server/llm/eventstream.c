/* eventstream.c: AWS event-stream framing, incrementally (see
 * eventstream.h). */
#include "llm/eventstream.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define PRELUDE 12u

uint32_t llm_es_crc32(uint32_t crc, const void *data, size_t len)
{
	static uint32_t table[256];
	static int ready;
	if (!ready) {
		/* Benign if two threads race: both write the same values. */
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
		ready = 1;
	}
	const unsigned char *p = data;
	crc = ~crc;
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

static uint32_t be32(const void *p)
{
	const unsigned char *b = p;
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static int fail(int err, char *why, size_t wsz, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(int err, char *why, size_t wsz, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, wsz, fmt, ap);
	va_end(ap);
	return err;
}

/* The fixed sizes of value types 0-9 (-1: 2-byte length first). */
static const int type_size[10] = {0, 0, 1, 2, 4, 8, -1, -1, 8, 16};

static int parse_headers(const unsigned char *p, size_t len, struct llm_es_message *m, char *why,
                         size_t wsz)
{
	size_t off = 0;
	m->n_headers = 0;
	while (off < len) {
		if (m->n_headers == LLM_ES_MAX_HEADERS)
			return fail(-EBADMSG, why, wsz,
			            "an event-stream message has more than %d headers",
			            LLM_ES_MAX_HEADERS);
		struct llm_es_header *h = &m->headers[m->n_headers];
		size_t nlen = p[off++];
		if (nlen == 0 || off + nlen + 1 > len)
			return fail(
			    -EBADMSG, why, wsz,
			    "an event-stream header name does not fit its message (at %zu of %zu)",
			    off, len);
		h->name = (const char *)p + off;
		h->name_len = nlen;
		off += nlen;
		h->type = p[off++];
		if (h->type > 9)
			return fail(-EBADMSG, why, wsz,
			            "an event-stream header has unknown type %u", h->type);
		size_t vlen;
		if (type_size[h->type] >= 0) {
			vlen = (size_t)type_size[h->type];
		} else {
			if (off + 2 > len)
				return fail(
				    -EBADMSG, why, wsz,
				    "an event-stream header value does not fit (at %zu of %zu)",
				    off, len);
			vlen = (size_t)p[off] << 8 | p[off + 1];
			off += 2;
		}
		if (off + vlen > len)
			return fail(-EBADMSG, why, wsz,
			            "an event-stream header value does not fit (at %zu of %zu)",
			            off, len);
		h->value = (const char *)p + off;
		h->value_len = vlen;
		off += vlen;
		m->n_headers++;
	}
	return 0;
}

/* A whole message of n bytes at p, its lengths and prelude CRC checked. */
static int deliver(const unsigned char *p, size_t n, llm_es_fn fn, void *data, char *why,
                   size_t wsz)
{
	uint32_t want = be32(p + n - 4);
	uint32_t got = llm_es_crc32(0, p, n - 4);
	if (want != got)
		return fail(-EBADMSG, why, wsz,
		            "an event-stream message fails its CRC (0x%08x, computed 0x%08x)", want,
		            got);
	size_t hlen = be32(p + 4);
	struct llm_es_message m;
	int r = parse_headers(p + PRELUDE, hlen, &m, why, wsz);
	if (r < 0)
		return r;
	m.payload = (const char *)p + PRELUDE + hlen;
	m.payload_len = n - PRELUDE - hlen - 4;
	return fn(data, &m);
}

/* The prelude at p: its CRC, and lengths that make sense. */
static int check_prelude(const unsigned char *p, size_t max, char *why, size_t wsz)
{
	uint32_t want = be32(p + 8), got = llm_es_crc32(0, p, 8);
	if (want != got)
		return fail(-EBADMSG, why, wsz,
		            "an event-stream prelude fails its CRC (0x%08x, computed 0x%08x)", want,
		            got);
	uint32_t total = be32(p), hlen = be32(p + 4);
	if (total < LLM_ES_MIN || hlen > total - LLM_ES_MIN)
		return fail(-EBADMSG, why, wsz,
		            "an event-stream prelude's lengths do not fit (total %u, headers %u)",
		            total, hlen);
	if (total > max)
		return fail(-EMSGSIZE, why, wsz,
		            "an event-stream message of %u bytes exceeds the %zu kiln takes", total,
		            max);
	return 0;
}

int llm_es_feed(struct buf *pending, size_t max_message, const char *chunk, size_t len,
                llm_es_fn fn, void *data, char *why, size_t wsz)
{
	const unsigned char *in = (const unsigned char *)chunk;
	while (len) {
		/* Whole messages straight from the chunk, without a copy. */
		if (pending->len == 0 && len >= PRELUDE) {
			int r = check_prelude(in, max_message, why, wsz);
			if (r < 0)
				return r;
			size_t total = be32(in);
			if (len >= total) {
				r = deliver(in, total, fn, data, why, wsz);
				if (r < 0)
					return r;
				in += total, len -= total;
				continue;
			}
		}
		/* The start of a message: gather its prelude, then its rest. */
		size_t need = PRELUDE;
		if (pending->len >= PRELUDE)
			need = be32(pending->data);
		size_t take = need - pending->len < len ? need - pending->len : len;
		if (buf_append(pending, in, take) < 0)
			return fail(-EMSGSIZE, why, wsz,
			            "an event-stream message does not fit the %zu bytes kiln keeps",
			            pending->max);
		in += take, len -= take;
		if (pending->len == PRELUDE && need == PRELUDE) {
			int r = check_prelude((const unsigned char *)pending->data, max_message,
			                      why, wsz);
			if (r < 0)
				return r;
			need = be32(pending->data);
		}
		if (pending->len >= PRELUDE && pending->len == need) {
			int r =
			    deliver((const unsigned char *)pending->data, need, fn, data, why, wsz);
			buf_reset(pending);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

const char *llm_es_string(const struct llm_es_message *m, const char *name, size_t *ret_len)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < m->n_headers; i++) {
		const struct llm_es_header *h = &m->headers[i];
		if (h->type == 7 && h->name_len == n && memcmp(h->name, name, n) == 0) {
			*ret_len = h->value_len;
			return h->value;
		}
	}
	return NULL;
}

static int put32(struct buf *b, uint32_t v)
{
	unsigned char p[4] = {v >> 24, v >> 16, v >> 8, v};
	return buf_append(b, p, 4);
}

int llm_es_encode(struct buf *out, const char *const *names, const char *const *values,
                  size_t n_headers, const char *payload, size_t payload_len)
{
	size_t hlen = 0;
	for (size_t i = 0; i < n_headers; i++) {
		if (strlen(names[i]) > 255 || strlen(values[i]) > 65535)
			return -E2BIG;
		hlen += 1 + strlen(names[i]) + 1 + 2 + strlen(values[i]);
	}
	size_t total = PRELUDE + hlen + payload_len + 4;
	if (total > UINT32_MAX)
		return -E2BIG;
	size_t start = out->len;
	int r = put32(out, (uint32_t)total);
	if (r == 0)
		r = put32(out, (uint32_t)hlen);
	if (r == 0)
		r = put32(out, llm_es_crc32(0, out->data + start, 8));
	for (size_t i = 0; i < n_headers && r == 0; i++) {
		size_t nl = strlen(names[i]), vl = strlen(values[i]);
		unsigned char pre[1] = {(unsigned char)nl}, ty[3] = {7, vl >> 8, vl & 0xff};
		r = buf_append(out, pre, 1);
		if (r == 0)
			r = buf_append(out, names[i], nl);
		if (r == 0)
			r = buf_append(out, ty, 3);
		if (r == 0)
			r = buf_append(out, values[i], vl);
	}
	if (r == 0 && payload_len)
		r = buf_append(out, payload, payload_len);
	if (r == 0)
		r = put32(out, llm_es_crc32(0, out->data + start, out->len - start));
	return r < 0 ? -ENOMEM : 0;
}
