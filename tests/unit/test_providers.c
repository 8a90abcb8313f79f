/* test_providers.c: the Anthropic and Bedrock providers' parsers and the
 * AWS event-stream framing under them (llm/eventstream.c): the same
 * messages and the same answer out of a stream cut at every byte, both
 * CRC32s checked, the size cap enforced before the message arrives,
 * exceptions and error events as kiln's kinds with the provider's own
 * type, and the messages reshaped into alternating turns. */
#include "llm/eventstream.h"

#include "llm/llm.h"
#include "llm/stream.h"
#include "unit.h"

/* --- the framing --------------------------------------------------------- */

struct got {
	char text[4096];
	size_t n;
	char types[512];
};

static int on_msg(void *data, const struct llm_es_message *m)
{
	struct got *g = data;
	size_t len;
	const char *t = llm_es_string(m, ":event-type", &len);
	ck_assert_ptr_nonnull(t);
	ck_assert_uint_lt(strlen(g->types) + len + 2, sizeof(g->types));
	strncat(g->types, t, len);
	strcat(g->types, ",");
	ck_assert_uint_lt(g->n + m->payload_len, sizeof(g->text));
	memcpy(g->text + g->n, m->payload, m->payload_len);
	g->n += m->payload_len;
	return 0;
}

static void encode(struct buf *out, const char *type, const char *payload)
{
	const char *names[] = {":event-type", ":content-type", ":message-type"};
	const char *values[] = {type, "application/json", "event"};
	ck_assert_int_eq(llm_es_encode(out, names, values, 3, payload, strlen(payload)), 0);
}

static void three(struct buf *b)
{
	buf_init(b, 1u << 20);
	encode(b, "messageStart", "{\"role\":\"assistant\"}");
	encode(b, "contentBlockDelta", "{\"delta\":{\"text\":\"hi\"}}");
	encode(b, "messageStop", "");
}

START_TEST(es_crc32_known)
{
	/* The check value of CRC-32/ISO-HDLC. */
	ck_assert_uint_eq(llm_es_crc32(0, "123456789", 9), 0xcbf43926u);
	ck_assert_uint_eq(llm_es_crc32(llm_es_crc32(0, "1234", 4), "56789", 5), 0xcbf43926u);
}
END_TEST

/* Cut in two at every byte, and in one-byte reads: the same messages. */
START_TEST(es_every_split)
{
	struct buf b;
	three(&b);
	const char *want_types = "messageStart,contentBlockDelta,messageStop,";
	for (size_t cut = 0; cut <= b.len; cut++) {
		struct got g = {0};
		struct buf pending;
		buf_init(&pending, 1024);
		char why[200] = "";
		ck_assert_int_eq(
		    llm_es_feed(&pending, 1024, b.data, cut, on_msg, &g, why, sizeof(why)), 0);
		ck_assert_int_eq(llm_es_feed(&pending, 1024, b.data + cut, b.len - cut, on_msg, &g,
		                             why, sizeof(why)),
		                 0);
		ck_assert_str_eq(g.types, want_types);
		ck_assert_uint_eq(pending.len, 0);
		buf_release(&pending);
	}
	struct got g = {0};
	struct buf pending;
	buf_init(&pending, 1024);
	char why[200];
	for (size_t i = 0; i < b.len; i++)
		ck_assert_int_eq(
		    llm_es_feed(&pending, 1024, b.data + i, 1, on_msg, &g, why, sizeof(why)), 0);
	ck_assert_str_eq(g.types, want_types);
	ck_assert_uint_eq(g.n, strlen("{\"role\":\"assistant\"}{\"delta\":{\"text\":\"hi\"}}"));
	buf_release(&pending);
	buf_release(&b);
}
END_TEST

/* Flip one bit of a prelude CRC (byte 8..11) or of a message CRC (its
 * last 4 bytes) in the second message: the first still arrives, the
 * second never does, whatever the split. */
static void corrupt_second(bool prelude, const char *want)
{
	struct buf b;
	three(&b);
	size_t first = (size_t)((unsigned char)b.data[2] << 8 | (unsigned char)b.data[3]);
	size_t second =
	    (size_t)((unsigned char)b.data[first + 2] << 8 | (unsigned char)b.data[first + 3]);
	b.data[prelude ? first + 9 : first + second - 1] ^= 0x10;
	for (size_t cut = 0; cut <= b.len; cut += 3) {
		struct got g = {0};
		struct buf pending;
		buf_init(&pending, 1024);
		char why[200] = "";
		int r = llm_es_feed(&pending, 1024, b.data, cut, on_msg, &g, why, sizeof(why));
		if (r == 0)
			r = llm_es_feed(&pending, 1024, b.data + cut, b.len - cut, on_msg, &g, why,
			                sizeof(why));
		ck_assert_int_eq(r, -EBADMSG);
		ck_assert_str_eq(g.types, "messageStart,");
		ck_assert_ptr_nonnull(strstr(why, want));
		buf_release(&pending);
	}
	buf_release(&b);
}

START_TEST(es_bad_prelude_crc)
{
	corrupt_second(true, "prelude fails its CRC");
}
END_TEST

START_TEST(es_bad_message_crc)
{
	corrupt_second(false, "message fails its CRC");
}
END_TEST

/* A prelude announcing 2 MiB is refused at once, before any of it is
 * buffered; so is a prelude whose lengths cannot be. */
START_TEST(es_oversize_and_bad_lengths)
{
	unsigned char p[12] = {0x00, 0x20, 0x00, 0x00, 0, 0, 0, 0};
	uint32_t crc = llm_es_crc32(0, p, 8);
	p[8] = crc >> 24, p[9] = crc >> 16, p[10] = crc >> 8, p[11] = crc;
	struct got g = {0};
	struct buf pending;
	buf_init(&pending, 1u << 20);
	char why[200] = "";
	ck_assert_int_eq(
	    llm_es_feed(&pending, 1u << 20, (char *)p, 12, on_msg, &g, why, sizeof(why)),
	    -EMSGSIZE);
	ck_assert_ptr_nonnull(strstr(why, "2097152 bytes exceeds"));
	buf_reset(&pending);
	/* In reads of 5: the same answer once the prelude is whole. */
	int r = 0;
	for (size_t i = 0; i < 12 && r == 0; i += 5)
		r = llm_es_feed(&pending, 1u << 20, (char *)p + i, i + 5 > 12 ? 12 - i : 5, on_msg,
		                &g, why, sizeof(why));
	ck_assert_int_eq(r, -EMSGSIZE);
	buf_reset(&pending);
	/* Headers longer than the message. */
	unsigned char q[16] = {0, 0, 0, 16, 0, 0, 0, 1};
	crc = llm_es_crc32(0, q, 8);
	q[8] = crc >> 24, q[9] = crc >> 16, q[10] = crc >> 8, q[11] = crc;
	ck_assert_int_eq(llm_es_feed(&pending, 1024, (char *)q, 16, on_msg, &g, why, sizeof(why)),
	                 -EBADMSG);
	ck_assert_ptr_nonnull(strstr(why, "lengths do not fit"));
	/* A total below the 16 bytes any message has. */
	buf_reset(&pending);
	unsigned char z[12] = {0, 0, 0, 8, 0, 0, 0, 0};
	crc = llm_es_crc32(0, z, 8);
	z[8] = crc >> 24, z[9] = crc >> 16, z[10] = crc >> 8, z[11] = crc;
	ck_assert_int_eq(llm_es_feed(&pending, 1024, (char *)z, 12, on_msg, &g, why, sizeof(why)),
	                 -EBADMSG);
	ck_assert_str_eq(g.types, "");
	buf_release(&pending);
}
END_TEST

/* A header whose value runs past the headers' end, CRCs right. */
START_TEST(es_truncated_header)
{
	unsigned char m[12 + 6 + 4] = {0, 0, 0, 22, 0, 0, 0, 6};
	uint32_t crc = llm_es_crc32(0, m, 8);
	m[8] = crc >> 24, m[9] = crc >> 16, m[10] = crc >> 8, m[11] = crc;
	memcpy(m + 12, "\x02:x\x07\x00\x09", 6); /* a 9-byte string in 0 bytes */
	crc = llm_es_crc32(0, m, 18);
	m[18] = crc >> 24, m[19] = crc >> 16, m[20] = crc >> 8, m[21] = crc;
	struct got g = {0};
	struct buf pending;
	buf_init(&pending, 1024);
	char why[200] = "";
	ck_assert_int_eq(
	    llm_es_feed(&pending, 1024, (char *)m, sizeof(m), on_msg, &g, why, sizeof(why)),
	    -EBADMSG);
	ck_assert_ptr_nonnull(strstr(why, "does not fit"));
	buf_release(&pending);
}
END_TEST

/* --- the providers' streams ------------------------------------------------ */

struct feed {
	const struct llm_ops *ops;
	struct llm_stream st;
	struct buf line;
	struct buf deltas;
	int r;
};

static void on_delta(void *data, const char *text, size_t len)
{
	struct feed *f = data;
	ck_assert_int_eq(buf_append(&f->deltas, text, len), 0);
}

static void feed_init(struct feed *f, const struct llm_ops *ops)
{
	*f = (struct feed){.ops = ops};
	buf_init(&f->st.text, 1u << 20);
	buf_init(&f->st.event, 1u << 20);
	buf_init(&f->line, 1u << 20);
	buf_init(&f->deltas, 1u << 20);
	f->st.prompt_tokens = f->st.completion_tokens = -1;
	f->st.emit = on_delta;
	f->st.emit_data = f;
}

static void feed_release(struct feed *f)
{
	buf_release(&f->st.text);
	buf_release(&f->st.event);
	buf_release(&f->line);
	buf_release(&f->deltas);
}

/* As chat.c does: bytes to stream_bytes, or lines to stream_line. */
static void feed_bytes(struct feed *f, const char *s, size_t n)
{
	if (f->r < 0)
		return;
	if (f->ops->stream_bytes) {
		f->r = f->ops->stream_bytes(&f->st, s, n);
		return;
	}
	ck_assert_int_eq(buf_append(&f->line, s, n), 0);
	f->r = llm_stream_lines(f->ops, &f->st, &f->line);
}

static void feed_end(struct feed *f)
{
	if (f->r < 0)
		return;
	f->r = f->ops->stream_end ? f->ops->stream_end(&f->st)
	                          : llm_stream_end(f->ops, &f->st, &f->line);
}

static const char anthropic_body[] =
    "event: message_start\n"
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\","
    "\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n"
    "\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\","
    "\"text\":\"\"}}\n"
    "\n"
    "event: ping\n"
    "data: {\"type\": \"ping\"}\n"
    "\n"
    "event: content_block_delta\r\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
    "\"text\":\"```python\\nprint(\"}}\r\n"
    "\r\n"
    ": a comment\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
    "\"text\":\"'h\xc3\xa9')\\n```\"}}\n"
    "\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n"
    "\n"
    "event: message_delta\n"
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\","
    "\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}\n"
    "\n"
    "event: message_stop\n"
    "data: {\"type\":\"message_stop\"}\n"
    "\n";

START_TEST(anthropic_every_split)
{
	size_t len = strlen(anthropic_body);
	for (size_t cut = 0; cut <= len; cut++) {
		struct feed f;
		feed_init(&f, &llm_anthropic_ops);
		feed_bytes(&f, anthropic_body, cut);
		feed_bytes(&f, anthropic_body + cut, len - cut);
		feed_end(&f);
		ck_assert_int_eq(f.r, 0);
		ck_assert(f.st.finished);
		ck_assert_str_eq(f.st.text.data, "```python\nprint('h\xc3\xa9')\n```");
		ck_assert_str_eq(f.deltas.data, f.st.text.data);
		ck_assert_str_eq(f.st.finish_reason, "stop");
		ck_assert_int_eq(f.st.prompt_tokens, 25);
		ck_assert_int_eq(f.st.completion_tokens, 15);
		feed_release(&f);
	}
}
END_TEST

START_TEST(anthropic_error_event)
{
	const char *body =
	    "event: content_block_delta\n"
	    "data: "
	    "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
	    "\"text\":\"abc\"}}\n\n"
	    "event: error\n"
	    "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":"
	    "\"Overloaded\"}}\n\n";
	struct feed f;
	feed_init(&f, &llm_anthropic_ops);
	feed_bytes(&f, body, strlen(body));
	ck_assert_int_lt(f.r, 0);
	ck_assert_str_eq(f.st.err_kind, LLM_E_OVERLOADED);
	ck_assert_str_eq(f.st.err_type, "overloaded_error");
	ck_assert_str_eq(f.st.err_message, "Overloaded");
	ck_assert_str_eq(f.st.text.data, "abc");
	feed_release(&f);
	/* Without message_stop the answer is not finished (a cut stream). */
	feed_init(&f, &llm_anthropic_ops);
	feed_bytes(&f, body, strstr(body, "event: error") - body);
	feed_end(&f);
	ck_assert_int_eq(f.r, 0);
	ck_assert(!f.st.finished);
	feed_release(&f);
	/* Not SSE at all. */
	feed_init(&f, &llm_anthropic_ops);
	feed_bytes(&f, "<html>\n", 7);
	ck_assert_str_eq(f.st.err_kind, LLM_E_BAD_RESPONSE);
	feed_release(&f);
}
END_TEST

START_TEST(anthropic_error_types)
{
	static const char *const pairs[][2] = {
	    {"authentication_error", LLM_E_UNAUTHORIZED},
	    {"permission_error", LLM_E_FORBIDDEN},
	    {"not_found_error", LLM_E_MODEL},
	    {"rate_limit_error", LLM_E_RATE_LIMITED},
	    {"overloaded_error", LLM_E_OVERLOADED},
	    {"request_too_large", LLM_E_REQ_TOO_LARGE},
	    {"api_error", LLM_E_SERVER},
	    {"invalid_request_error", LLM_E_INVALID},
	};
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		ck_assert_str_eq(llm_anthropic_ops.error_kind(pairs[i][0], ""), pairs[i][1]);
	ck_assert_ptr_null(llm_anthropic_ops.error_kind("something_new", ""));
}
END_TEST

static void bedrock_stream(struct buf *b, bool exception)
{
	buf_init(b, 1u << 20);
	encode(b, "messageStart", "{\"p\":\"abcdefgh\",\"role\":\"assistant\"}");
	encode(b, "contentBlockDelta", "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"print(\"}}");
	if (exception) {
		const char *names[] = {":exception-type", ":content-type", ":message-type"};
		const char *values[] = {"throttlingException", "application/json", "exception"};
		const char *p = "{\"message\":\"Too many tokens\"}";
		ck_assert_int_eq(llm_es_encode(b, names, values, 3, p, strlen(p)), 0);
		return;
	}
	encode(b, "contentBlockDelta",
	       "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"'h\xc3\xa9')\"}}");
	encode(b, "contentBlockStop", "{\"contentBlockIndex\":0}");
	encode(b, "messageStop", "{\"stopReason\":\"max_tokens\"}");
	encode(b, "metadata",
	       "{\"usage\":{\"inputTokens\":11,\"outputTokens\":7,\"totalTokens\":18},"
	       "\"metrics\":{\"latencyMs\":5}}");
}

START_TEST(bedrock_every_split)
{
	struct buf b;
	bedrock_stream(&b, false);
	for (size_t cut = 0; cut <= b.len; cut++) {
		struct feed f;
		feed_init(&f, &llm_bedrock_ops);
		feed_bytes(&f, b.data, cut);
		feed_bytes(&f, b.data + cut, b.len - cut);
		feed_end(&f);
		ck_assert_int_eq(f.r, 0);
		ck_assert(f.st.finished);
		ck_assert_str_eq(f.st.text.data, "print('h\xc3\xa9')");
		ck_assert_str_eq(f.deltas.data, f.st.text.data);
		ck_assert_str_eq(f.st.finish_reason, "length");
		ck_assert_int_eq(f.st.prompt_tokens, 11);
		ck_assert_int_eq(f.st.completion_tokens, 7);
		feed_release(&f);
	}
	/* Cut before messageStop: not finished, so chat.c says stream_cut. */
	struct feed f;
	feed_init(&f, &llm_bedrock_ops);
	feed_bytes(&f, b.data, b.len / 2);
	feed_end(&f);
	ck_assert_int_eq(f.r, 0);
	ck_assert(!f.st.finished);
	feed_release(&f);
	buf_release(&b);
}
END_TEST

START_TEST(bedrock_exception)
{
	struct buf b;
	bedrock_stream(&b, true);
	struct feed f;
	feed_init(&f, &llm_bedrock_ops);
	for (size_t i = 0; i < b.len; i++)
		feed_bytes(&f, b.data + i, 1);
	ck_assert_int_lt(f.r, 0);
	ck_assert_str_eq(f.st.err_kind, LLM_E_RATE_LIMITED);
	ck_assert_str_eq(f.st.err_type, "throttlingException");
	ck_assert_str_eq(f.st.err_message, "Too many tokens");
	ck_assert_str_eq(f.st.text.data, "print(");
	feed_release(&f);
	buf_release(&b);
	/* Not an event stream: a proxy's page. */
	feed_init(&f, &llm_bedrock_ops);
	feed_bytes(&f, "<html><body>502</body></html>", 29);
	ck_assert_int_lt(f.r, 0);
	ck_assert_str_eq(f.st.err_kind, LLM_E_BAD_RESPONSE);
	ck_assert_ptr_nonnull(strstr(f.st.err_message, "not an AWS event stream"));
	feed_release(&f);
	/* A message longer than the stream's buffer. */
	feed_init(&f, &llm_bedrock_ops);
	buf_release(&f.st.event);
	buf_init(&f.st.event, 64);
	bedrock_stream(&b, false);
	feed_bytes(&f, b.data, b.len);
	ck_assert_int_lt(f.r, 0);
	ck_assert_ptr_nonnull(strstr(f.st.err_message, "exceeds"));
	feed_release(&f);
	buf_release(&b);
}
END_TEST

START_TEST(bedrock_error_types)
{
	ck_assert_str_eq(llm_bedrock_ops.error_kind("ThrottlingException", ""), LLM_E_RATE_LIMITED);
	ck_assert_str_eq(llm_bedrock_ops.error_kind("throttlingException", ""), LLM_E_RATE_LIMITED);
	ck_assert_str_eq(llm_bedrock_ops.error_kind("modelStreamErrorException", ""), LLM_E_SERVER);
	ck_assert_str_eq(llm_bedrock_ops.error_kind("ValidationException",
	                                            "The provided model identifier is invalid."),
	                 LLM_E_MODEL);
	ck_assert_str_eq(llm_bedrock_ops.error_kind("validationException", "Input is too long"),
	                 LLM_E_INVALID);
	ck_assert_str_eq(llm_bedrock_ops.error_kind("UnrecognizedClientException", ""),
	                 LLM_E_UNAUTHORIZED);
	ck_assert_str_eq(llm_bedrock_ops.error_kind("AccessDeniedException", ""), LLM_E_FORBIDDEN);
	ck_assert_str_eq(llm_bedrock_ops.error_kind("ServiceUnavailableException", ""),
	                 LLM_E_OVERLOADED);
}
END_TEST

/* --- the messages ----------------------------------------------------------- */

START_TEST(turns_alternate)
{
	json_object *m = json_tokener_parse(
	    "[{\"role\":\"system\",\"content\":\"S1\"},{\"role\":\"assistant\",\"content\":"
	    "\"lead\"},"
	    "{\"role\":\"user\",\"content\":\"u1\"},{\"role\":\"user\",\"content\":\"u2\"},"
	    "{\"role\":\"system\",\"content\":\"S2\"},{\"role\":\"assistant\",\"content\":\"a1\"},"
	    "{\"role\":\"user\",\"content\":\"u3\"}]");
	char *sys = NULL;
	json_object *t = llm_turns(m, false, &sys);
	ck_assert_str_eq(sys, "S1\n\nS2");
	ck_assert_str_eq(json_object_to_json_string_ext(t, JSON_C_TO_STRING_PLAIN),
	                 "[{\"role\":\"user\",\"content\":\"u1\\n\\nu2\"},{\"role\":\"assistant\","
	                 "\"content\":\"a1\"},{\"role\":\"user\",\"content\":\"u3\"}]");
	json_object_put(t);
	free(sys);
	t = llm_turns(m, true, &sys);
	ck_assert_str_eq(
	    json_object_to_json_string_ext(json_object_array_get_idx(t, 1), JSON_C_TO_STRING_PLAIN),
	    "{\"role\":\"assistant\",\"content\":[{\"text\":\"a1\"}]}");
	json_object_put(t);
	free(sys);
	json_object_put(m);
}
END_TEST

static Suite *providers_suite(void)
{
	Suite *s = suite_create("providers");
	TCase *tc = tcase_create("providers");
	tcase_add_test(tc, es_crc32_known);
	tcase_add_test(tc, es_every_split);
	tcase_add_test(tc, es_bad_prelude_crc);
	tcase_add_test(tc, es_bad_message_crc);
	tcase_add_test(tc, es_oversize_and_bad_lengths);
	tcase_add_test(tc, es_truncated_header);
	tcase_add_test(tc, anthropic_every_split);
	tcase_add_test(tc, anthropic_error_event);
	tcase_add_test(tc, anthropic_error_types);
	tcase_add_test(tc, bedrock_every_split);
	tcase_add_test(tc, bedrock_exception);
	tcase_add_test(tc, bedrock_error_types);
	tcase_add_test(tc, turns_alternate);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(providers_suite)
