/* eventstream.h: AWS's event-stream binary framing (what Bedrock's
 * converse-stream answers with, content type
 * application/vnd.amazon.eventstream), taken apart incrementally: bytes in
 * any split, whole messages out, both CRC32s checked, every message capped.
 *
 * A message is a 12-byte prelude (total length, headers length, both
 * big-endian u32, and the CRC32 of those 8 bytes), the headers (name
 * length u8, name, value type u8, value), the payload, and the CRC32 of
 * everything before it. Framing only: what an :event-type means is
 * bedrock.c's business. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

/* The smallest message: prelude and message CRC, no headers, no payload. */
#define LLM_ES_MIN         16u
#define LLM_ES_MAX_HEADERS 32

struct llm_es_header {
	const char *name;
	size_t name_len;
	unsigned type;     /* 0..9, see eventstream.c */
	const char *value; /* the raw value bytes (strings are not terminated) */
	size_t value_len;
};

struct llm_es_message {
	struct llm_es_header headers[LLM_ES_MAX_HEADERS];
	size_t n_headers;
	const char *payload;
	size_t payload_len;
};

/* Called for each complete, checked message; pointers are valid only
 * during the call. Return < 0 to stop (llm_es_feed returns it). */
typedef int (*llm_es_fn)(void *data, const struct llm_es_message *m);

/* Take len bytes of the stream: complete messages go to fn in order; the
 * start of an incomplete one waits in pending (a buffer whose max is at
 * least max_message). Returns 0; -EBADMSG (a CRC mismatch, a length or
 * header that does not fit) or -EMSGSIZE (a message longer than
 * max_message) with a sentence in why; or fn's failure. After a failure
 * the stream cannot be resumed. */
int llm_es_feed(struct buf *pending, size_t max_message, const char *chunk, size_t len,
                llm_es_fn fn, void *data, char *why, size_t wsz);

/* The value of a string header (type 7) named name, with its length; NULL
 * when there is none. */
const char *llm_es_string(const struct llm_es_message *m, const char *name, size_t *ret_len);

/* CRC-32 (IEEE 802.3, as zlib's crc32()), continuing from crc (0 first). */
uint32_t llm_es_crc32(uint32_t crc, const void *data, size_t len);

/* Encode one message with string headers (names[i] = values[i]) into out,
 * for the tests and the fuzzer's seeds. -ENOMEM, -E2BIG. */
int llm_es_encode(struct buf *out, const char *const *names, const char *const *values,
                  size_t n_headers, const char *payload, size_t payload_len);
