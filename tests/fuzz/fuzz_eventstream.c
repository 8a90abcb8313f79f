/* fuzz_eventstream.c: libFuzzer target over what Bedrock's converse-stream
 * sends back: the AWS event-stream framing (llm/eventstream.c) under
 * bedrock.c's event parser, and the same bytes as a non-streamed Converse
 * body. Input: one byte that picks how the body is cut into reads (its
 * low bit: whether the harness frames the rest itself), then the body. A
 * random body rarely passes a CRC32, so with the low bit set the rest is
 * messages separated by "\xffES\xff", each one byte of headers length,
 * the raw headers and the payload, which the harness frames with right
 * lengths and CRCs: the header parser and the event handling get
 * explored too.
 *
 * Oracles beyond the sanitizers:
 * - the outcome (answer, finished, finish reason, token counts, error
 *   kind, type and message, messages taken) does not depend on how the
 *   body is cut into reads;
 * - the deltas emitted, put together, are exactly the answer;
 * - a failure always says its kind, success never does;
 * - the answer is valid UTF-8 (it comes from JSON strings);
 * - the bytes kept for an incomplete message never exceed the cap. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/position.h"
#include "llm/eventstream.h"
#include "llm/llm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Small, so the cap is reached often. */
#define CAP 4096

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_ERROR);
	return 0;
}

struct run {
	struct llm_stream st;
	struct buf deltas;
	int r;
};

static void on_delta(void *data, const char *text, size_t len)
{
	struct run *run = data;
	if (len == 0 || buf_append(&run->deltas, text, len) < 0)
		abort();
}

static void feed(struct run *run, const char *body, size_t len, uint8_t seed)
{
	const struct llm_ops *ops = &llm_bedrock_ops;
	*run = (struct run){0};
	buf_init(&run->st.text, 1u << 20);
	buf_init(&run->st.event, CAP);
	buf_init(&run->deltas, 1u << 20);
	run->st.prompt_tokens = run->st.completion_tokens = -1;
	run->st.emit = on_delta;
	run->st.emit_data = run;
	uint32_t x = seed ? seed : 1;
	size_t off = 0;
	while (off < len && run->r == 0) {
		size_t n = len - off;
		if (seed) {
			x = x * 1103515245u + 12345u;
			size_t step = 1 + (x >> 16) % 23;
			n = n < step ? n : step;
		}
		run->r = ops->stream_bytes(&run->st, body + off, n);
		if (run->st.event.len > CAP)
			abort();
		off += n;
	}
	if (run->r == 0)
		run->r = ops->stream_end(&run->st);
}

static void release(struct run *run)
{
	buf_release(&run->st.text);
	buf_release(&run->st.event);
	buf_release(&run->deltas);
}

static bool same_mem(const struct buf *a, const struct buf *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

static void check(const struct run *run)
{
	if ((run->r < 0) != (run->st.err_kind != NULL))
		abort();
	if (!same_mem(&run->deltas, &run->st.text))
		abort();
	if (run->st.text.len && !utf8_valid(run->st.text.data, run->st.text.len))
		abort();
	if (!memchr(run->st.err_message, '\0', sizeof(run->st.err_message)) ||
	    !memchr(run->st.err_type, '\0', sizeof(run->st.err_type)) ||
	    !memchr(run->st.finish_reason, '\0', sizeof(run->st.finish_reason)))
		abort();
}

static void put32(struct buf *b, uint32_t v)
{
	unsigned char p[4] = {v >> 24, v >> 16, v >> 8, v};
	if (buf_append(b, p, 4) < 0)
		abort();
}

/* Frame each part: [headers length][headers][payload], CRCs right. */
static void frame(struct buf *out, const uint8_t *in, size_t len)
{
	static const char sep[] = "\xff"
	                          "ES\xff";
	while (len) {
		const uint8_t *end = memmem(in, len, sep, 4);
		size_t n = end ? (size_t)(end - in) : len;
		size_t h = n ? in[0] : 0;
		if (h > n - (n ? 1 : 0))
			h = n ? n - 1 : 0;
		size_t payload = n ? n - 1 - h : 0;
		size_t start = out->len;
		put32(out, (uint32_t)(12 + h + payload + 4));
		put32(out, (uint32_t)h);
		put32(out, llm_es_crc32(0, out->data + start, 8));
		if (n > 1 && buf_append(out, in + 1, n - 1) < 0)
			abort();
		put32(out, llm_es_crc32(0, out->data + start, out->len - start));
		if (!end)
			break;
		in += n + 4;
		len -= n + 4;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t seed = data[0];
	size_t len = size - 1;
	char *body;
	if (seed & 1) {
		struct buf b;
		buf_init(&b, SIZE_MAX / 2);
		frame(&b, data + 1, len);
		body = buf_steal(&b, &len);
		buf_release(&b);
		if (!body)
			return 0;
	} else {
		body = malloc(len ? len : 1);
		if (!body)
			return 0;
		memcpy(body, data + 1, len);
	}

	struct run whole, cut;
	feed(&whole, body, len, 0);
	feed(&cut, body, len, seed | 1);
	check(&whole);
	check(&cut);
	if (whole.r != cut.r || whole.st.finished != cut.st.finished ||
	    whole.st.messages != cut.st.messages || !same_mem(&whole.st.text, &cut.st.text) ||
	    strcmp(whole.st.finish_reason, cut.st.finish_reason) != 0 ||
	    whole.st.prompt_tokens != cut.st.prompt_tokens ||
	    whole.st.completion_tokens != cut.st.completion_tokens ||
	    (whole.st.err_kind && strcmp(whole.st.err_kind, cut.st.err_kind) != 0) ||
	    strcmp(whole.st.err_type, cut.st.err_type) != 0 ||
	    strcmp(whole.st.err_message, cut.st.err_message) != 0)
		abort();
	release(&whole);
	release(&cut);

	/* The same bytes as a non-streamed Converse answer. */
	struct llm_stream st = {.prompt_tokens = -1, .completion_tokens = -1};
	buf_init(&st.text, 1u << 20);
	buf_init(&st.event, CAP);
	int r = llm_bedrock_ops.whole_body(&st, body, len);
	if ((r < 0) != (st.err_kind != NULL))
		abort();
	if (st.text.len && !utf8_valid(st.text.data, st.text.len))
		abort();
	buf_release(&st.text);
	buf_release(&st.event);
	free(body);
	return 0;
}
