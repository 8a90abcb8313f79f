/* test_stream.c: the model servers' stream parsers (llm/ollama.c's NDJSON,
 * llm/openai.c's server-sent events) behind the line splitter chat.c uses
 * (llm/stream.c): the same answer out of any split of the body, the final
 * message with its usage, comments, multi-line data, [DONE], and every
 * error a server (or something pretending to be one) can send. */
#include "llm/stream.h"

#include "core/position.h"
#include "unit.h"

/* One stream: the parser's state, the partial line, and the deltas it
 * emitted (their concatenation must be the answer). */
struct feed {
	const struct llm_ops *ops;
	struct llm_stream st;
	struct buf line;
	struct buf deltas;
	int r; /* the first failure, sticky */
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

static void feed_bytes(struct feed *f, const char *s, size_t n)
{
	if (f->r < 0)
		return;
	ck_assert_int_eq(buf_append(&f->line, s, n), 0);
	f->r = llm_stream_lines(f->ops, &f->st, &f->line);
}

static void feed_end(struct feed *f)
{
	if (f->r < 0)
		return;
	f->r = llm_stream_end(f->ops, &f->st, &f->line);
}

static const char *text_of(struct feed *f)
{
	return f->st.text.data ? f->st.text.data : "";
}

/* Feed body whole, at every cut into two reads, and a byte at a time;
 * each time call check. */
static void every_split(const struct llm_ops *ops, const char *body,
                        void (*check)(struct feed *f, const char *how, size_t cut))
{
	size_t n = strlen(body);
	for (size_t cut = 0; cut <= n; cut++) {
		struct feed f;
		feed_init(&f, ops);
		feed_bytes(&f, body, cut);
		feed_bytes(&f, body + cut, n - cut);
		feed_end(&f);
		check(&f, "cut", cut);
		feed_release(&f);
	}
	struct feed f;
	feed_init(&f, ops);
	for (size_t i = 0; i < n; i++)
		feed_bytes(&f, body + i, 1);
	feed_end(&f);
	check(&f, "bytewise", 0);
	feed_release(&f);
}

/* --- Ollama: NDJSON ------------------------------------------------------------ */

static const char OLLAMA[] =
    "{\"model\":\"qwen2.5-coder\",\"created_at\":\"2026-11-29T19:00:00Z\","
    "\"message\":{\"role\":\"assistant\",\"content\":\"print(\"},\"done\":false}\n"
    "{\"model\":\"qwen2.5-coder\",\"message\":{\"role\":\"assistant\","
    "\"content\":\"\\\"h\\u00e9llo \xf0\x9f\x8e\x89\\\")\\n\"},\"done\":false}\n"
    "\n"
    "{\"model\":\"qwen2.5-coder\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},"
    "\"done\":true,\"done_reason\":\"stop\",\"total_duration\":5191566416,"
    "\"prompt_eval_count\":26,\"eval_count\":9}\n";

static void check_ollama(struct feed *f, const char *how, size_t cut)
{
	ck_assert_msg(f->r == 0, "%s %zu: r=%d %s", how, cut, f->r, f->st.err_message);
	ck_assert_msg(strcmp(text_of(f), "print(\"h\xc3\xa9llo \xf0\x9f\x8e\x89\")\n") == 0,
	              "%s %zu: '%s'", how, cut, text_of(f));
	ck_assert_uint_eq(f->deltas.len, f->st.text.len);
	ck_assert_mem_eq(f->deltas.data, f->st.text.data, f->st.text.len);
	ck_assert(f->st.finished);
	ck_assert_str_eq(f->st.finish_reason, "stop");
	ck_assert_int_eq(f->st.prompt_tokens, 26);
	ck_assert_int_eq(f->st.completion_tokens, 9);
	ck_assert_ptr_null(f->st.err_kind);
	ck_assert_uint_eq(f->line.len, 0);
}

START_TEST(ollama_any_split)
{
	every_split(&llm_ollama_ops, OLLAMA, check_ollama);
}
END_TEST

/* CRLF line ends, trailing spaces and a last line without its newline. */
START_TEST(ollama_crlf_and_no_final_newline)
{
	struct feed f;
	feed_init(&f, &llm_ollama_ops);
	const char *body = "{\"message\":{\"content\":\"a\"},\"done\":false}  \r\n"
	                   "\r\n"
	                   "{\"message\":{\"content\":\"b\"},\"done\":true,\"done_reason\":"
	                   "\"length\"}";
	feed_bytes(&f, body, strlen(body));
	ck_assert_int_eq(f.r, 0);
	ck_assert(!f.st.finished); /* the last line waits for the end */
	feed_end(&f);
	ck_assert_int_eq(f.r, 0);
	ck_assert_str_eq(text_of(&f), "ab");
	ck_assert(f.st.finished);
	ck_assert_str_eq(f.st.finish_reason, "length");
	ck_assert_int_eq(f.st.prompt_tokens, -1); /* no counts given */
	feed_release(&f);
}
END_TEST

/* A stream that ends without done: true is not finished (chat.c turns
 * that into stream_cut). */
START_TEST(ollama_unfinished)
{
	struct feed f;
	feed_init(&f, &llm_ollama_ops);
	const char *body = "{\"message\":{\"content\":\"x = 1\"},\"done\":false}\n";
	feed_bytes(&f, body, strlen(body));
	feed_end(&f);
	ck_assert_int_eq(f.r, 0);
	ck_assert(!f.st.finished);
	ck_assert_str_eq(text_of(&f), "x = 1");
	feed_release(&f);
}
END_TEST

struct bad_stream {
	const char *body;
	const char *kind;
	const char *message; /* a part of err_message */
	const char *text;    /* the answer kept before the failure */
};

static const struct bad_stream ollama_bad[] = {
    {"{\"error\":\"model 'qwen9' not found, try pulling it first\"}\n", LLM_E_SERVER,
     "model 'qwen9' not found", ""},
    /* An error in the middle of the stream, after some answer. */
    {"{\"message\":{\"content\":\"def f\"},\"done\":false}\n"
     "{\"error\":\"an unknown error was encountered while running the model\"}\n"
     "{\"message\":{\"content\":\"never\"},\"done\":false}\n",
     LLM_E_SERVER, "unknown error", "def f"},
    {"{\"message\":{\"content\":\"a\"},\"done\":false}\n<html>Bad Gateway</html>\n",
     LLM_E_BAD_RESPONSE, "is not JSON", "a"},
    {"{\"message\":{\"content\":\"a\"},\"done\":fal\n", LLM_E_BAD_RESPONSE, "is not JSON", ""},
    {"{\"model\":\"m\"}\n", LLM_E_BAD_RESPONSE, "lacks", ""},
    {"{\"message\":{\"content\":\"a\"}}\n", LLM_E_BAD_RESPONSE, "lacks", ""},
    {"{\"done\":\"yes\"}\n", LLM_E_BAD_RESPONSE, "lacks", ""},
    {"[1,2,3]\n", LLM_E_BAD_RESPONSE, "", ""},
    {"\"just a string\"\n", LLM_E_BAD_RESPONSE, "", ""},
    {"null\n", LLM_E_BAD_RESPONSE, "", ""},
    /* A message that is not an object carries no content: not an error. */
    {"{\"message\":42,\"done\":true}\n", NULL, "", ""},
    {"{\"message\":{\"content\":7},\"done\":true}\n", NULL, "", ""},
};

static void check_bad(const struct llm_ops *ops, const struct bad_stream *c, int i)
{
	struct feed f;
	feed_init(&f, ops);
	feed_bytes(&f, c->body, strlen(c->body));
	feed_end(&f);
	if (!c->kind) {
		ck_assert_msg(f.r == 0, "case %d: %s", i, f.st.err_message);
	} else {
		ck_assert_msg(f.r < 0, "case %d accepted", i);
		ck_assert_ptr_nonnull(f.st.err_kind);
		ck_assert_msg(strcmp(f.st.err_kind, c->kind) == 0, "case %d: kind %s", i,
		              f.st.err_kind);
		ck_assert_msg(strstr(f.st.err_message, c->message), "case %d: '%s'", i,
		              f.st.err_message);
		ck_assert(utf8_valid(f.st.err_message, strlen(f.st.err_message)));
	}
	ck_assert_str_eq(text_of(&f), c->text);
	feed_release(&f);
}

START_TEST(ollama_errors)
{
	check_bad(&llm_ollama_ops, &ollama_bad[_i], _i);
}
END_TEST

/* A server that ignored stream: true answers one JSON document. */
START_TEST(ollama_whole_body)
{
	struct llm_stream st = {.prompt_tokens = -1, .completion_tokens = -1};
	buf_init(&st.text, 1000);
	const char *body = "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":"
	                   "\"print(1)\"},\"done\":true,\"done_reason\":\"stop\","
	                   "\"prompt_eval_count\":3,\"eval_count\":4}";
	ck_assert_int_eq(llm_ollama_ops.whole_body(&st, body, strlen(body)), 0);
	ck_assert_str_eq(st.text.data, "print(1)");
	ck_assert(st.finished);
	ck_assert_int_eq(st.completion_tokens, 4);
	buf_release(&st.text);
	buf_init(&st.text, 1000);
	ck_assert_int_lt(llm_ollama_ops.whole_body(&st, "{", 1), 0);
	ck_assert_str_eq(st.err_kind, LLM_E_BAD_RESPONSE);
	buf_release(&st.text);
}
END_TEST

/* The answer's cap (llm.maxResponseBytes) stops the stream. */
START_TEST(ollama_too_large)
{
	struct feed f;
	feed_init(&f, &llm_ollama_ops);
	buf_release(&f.st.text);
	buf_init(&f.st.text, 4);
	const char *body = "{\"message\":{\"content\":\"abc\"},\"done\":false}\n"
	                   "{\"message\":{\"content\":\"def\"},\"done\":false}\n";
	feed_bytes(&f, body, strlen(body));
	ck_assert_int_lt(f.r, 0);
	ck_assert_str_eq(f.st.err_kind, LLM_E_TOO_LARGE);
	ck_assert_str_eq(text_of(&f), "abc");
	feed_release(&f);
}
END_TEST

/* --- OpenAI: server-sent events -------------------------------------------------- */

static const char SSE[] =
    ": OPENROUTER PROCESSING\n"
    "\n"
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":"
    "0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n"
    "\n"
    "event: message\n"
    "id: 2\n"
    "retry: 1000\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"print(\\\"\\u00e9\"},"
    "\"finish_reason\":null}]}\r\n"
    "\r\n"
    /* One event's data over two lines: joined by a newline. */
    "data: {\"choices\":[{\"index\":0,\n"
    "data:\"delta\":{\"content\":\"\xf0\x9f\x8e\x89\\\")\\n\"},\"finish_reason\":null}]}\n"
    "\n"
    /* Another choice than the one kiln asked for is ignored. */
    "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"NO\"},\"finish_reason\":null}]}\n"
    "\n"
    ": ping\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n"
    "\n"
    "data: {\"id\":\"chatcmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":31,"
    "\"completion_tokens\":7,\"total_tokens\":38}}\n"
    "\n"
    "data: [DONE]\n"
    "\n";

static void check_sse(struct feed *f, const char *how, size_t cut)
{
	ck_assert_msg(f->r == 0, "%s %zu: r=%d %s", how, cut, f->r, f->st.err_message);
	ck_assert_msg(strcmp(text_of(f), "print(\"\xc3\xa9\xf0\x9f\x8e\x89\")\n") == 0,
	              "%s %zu: '%s'", how, cut, text_of(f));
	ck_assert_uint_eq(f->deltas.len, f->st.text.len);
	ck_assert(f->st.finished);
	ck_assert_str_eq(f->st.finish_reason, "stop");
	ck_assert_int_eq(f->st.prompt_tokens, 31);
	ck_assert_int_eq(f->st.completion_tokens, 7);
	ck_assert_uint_eq(f->st.event.len, 0);
}

START_TEST(sse_any_split)
{
	every_split(&llm_openai_ops, SSE, check_sse);
}
END_TEST

/* [DONE] ends the answer at once, without its blank line. */
START_TEST(sse_done_without_blank_line)
{
	struct feed f;
	feed_init(&f, &llm_openai_ops);
	const char *body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n"
	                   "data: [DONE]\n";
	feed_bytes(&f, body, strlen(body));
	ck_assert_int_eq(f.r, 0);
	ck_assert(f.st.finished);
	ck_assert_str_eq(f.st.finish_reason, ""); /* no finish_reason sent */
	feed_release(&f);
}
END_TEST

/* A last event that the body ends without its blank line is not lost. */
START_TEST(sse_last_event_at_end)
{
	struct feed f;
	feed_init(&f, &llm_openai_ops);
	const char *body =
	    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":"
	    "\"length\"}]}";
	feed_bytes(&f, body, strlen(body));
	ck_assert_int_eq(f.r, 0);
	ck_assert(!f.st.finished);
	feed_end(&f);
	ck_assert_int_eq(f.r, 0);
	ck_assert(f.st.finished);
	ck_assert_str_eq(f.st.finish_reason, "length");
	ck_assert_str_eq(text_of(&f), "x");
	feed_release(&f);
}
END_TEST

static const struct bad_stream sse_bad[] = {
    /* OpenAI's error body, sent as plain JSON where the stream would be. */
    {"{\"error\":{\"message\":\"Incorrect API key provided\",\"type\":"
     "\"invalid_request_error\",\"code\":\"invalid_api_key\"}}\n",
     LLM_E_SERVER, "Incorrect API key", ""},
    /* An error as an event, after some answer. */
    {"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ab\"}}]}\n\n"
     "data: {\"error\":{\"message\":\"The server had an error\"}}\n\n",
     LLM_E_SERVER, "The server had an error", "ab"},
    {"data: {\"object\":\"error\",\"message\":\"vLLM says no\"}\n\n", LLM_E_SERVER, "vLLM says no",
     ""},
    {"data: {\"detail\":\"Not Found\"}\n\n", LLM_E_SERVER, "Not Found", ""},
    {"data: {\"error\":\"plain\"}\n\n", LLM_E_SERVER, "plain", ""},
    {"<!DOCTYPE html>\n<html><body>502 Bad Gateway</body></html>\n", LLM_E_BAD_RESPONSE,
     "a line starts with \"<!DOCTYPE html>\"", ""},
    {"data: {\"choices\":[{\"index\":0,\n\n", LLM_E_BAD_RESPONSE, "is not JSON", ""},
    {"data: {\"id\":\"x\"}\n\n", LLM_E_BAD_RESPONSE, "lacks \"choices\"", ""},
    {"data: {\"choices\":{\"index\":0}}\n\n", LLM_E_BAD_RESPONSE, "lacks \"choices\"", ""},
    {"data: [1]\n\n", LLM_E_BAD_RESPONSE, "lacks", ""},
    {"data: [DONE] \n\n", LLM_E_BAD_RESPONSE, "is not JSON", ""},
    /* Harmless oddities. */
    {"data:\n\n", NULL, "", ""},
    {": only a comment\n", NULL, "", ""},
    {"data: {\"choices\":[{\"delta\":{\"content\":null},\"finish_reason\":null}]}\n\n", NULL, "",
     ""},
    {"data: {\"choices\":[\"x\",3,null]}\n\n", NULL, "", ""},
};

START_TEST(sse_errors)
{
	check_bad(&llm_openai_ops, &sse_bad[_i], _i);
}
END_TEST

/* A line that is not SSE is quoted in the message, and only that line:
 * the parser reads len bytes, never up to a NUL that is not there. */
START_TEST(sse_quotes_only_the_line)
{
	struct llm_stream st = {0};
	buf_init(&st.text, 100);
	buf_init(&st.event, 100);
	/* Exactly the line's bytes, no terminator after them. */
	char *line = malloc(6);
	memcpy(line, "<html>", 6);
	ck_assert_int_lt(llm_openai_ops.stream_line(&st, line, 6), 0);
	ck_assert_ptr_nonnull(strstr(st.err_message, "\"<html>\""));
	free(line);
	/* Through the splitter: the next line is not part of the quote. */
	struct feed f;
	feed_init(&f, &llm_openai_ops);
	feed_bytes(&f, "oops\ndata: [DONE]\n", 18);
	ck_assert_int_lt(f.r, 0);
	ck_assert_ptr_nonnull(strstr(f.st.err_message, "\"oops\")"));
	feed_release(&f);
	buf_release(&st.text);
	buf_release(&st.event);
}
END_TEST

START_TEST(openai_whole_body)
{
	struct llm_stream st = {.prompt_tokens = -1, .completion_tokens = -1};
	buf_init(&st.text, 1000);
	const char *body =
	    "{\"id\":\"chatcmpl-9\",\"object\":\"chat.completion\",\"choices\":[{"
	    "\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"ls -la\"},"
	    "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":5,"
	    "\"completion_tokens\":2}}";
	ck_assert_int_eq(llm_openai_ops.whole_body(&st, body, strlen(body)), 0);
	ck_assert_str_eq(st.text.data, "ls -la");
	ck_assert(st.finished);
	ck_assert_str_eq(st.finish_reason, "stop");
	ck_assert_int_eq(st.prompt_tokens, 5);
	ck_assert_int_eq(st.completion_tokens, 2);
	buf_release(&st.text);
}
END_TEST

START_TEST(sse_event_too_large)
{
	struct feed f;
	feed_init(&f, &llm_openai_ops);
	buf_release(&f.st.event);
	buf_init(&f.st.event, 16);
	const char *body = "data: 0123456789\ndata: 0123456789\n";
	feed_bytes(&f, body, strlen(body));
	ck_assert_int_lt(f.r, 0);
	ck_assert_str_eq(f.st.err_kind, LLM_E_TOO_LARGE);
	feed_release(&f);
}
END_TEST

static Suite *stream_suite(void)
{
	Suite *s = suite_create("stream");
	TCase *tc = tcase_create("stream");
	tcase_add_test(tc, ollama_any_split);
	tcase_add_test(tc, ollama_crlf_and_no_final_newline);
	tcase_add_test(tc, ollama_unfinished);
	tcase_add_loop_test(tc, ollama_errors, 0,
	                    (int)(sizeof(ollama_bad) / sizeof(ollama_bad[0])));
	tcase_add_test(tc, ollama_whole_body);
	tcase_add_test(tc, ollama_too_large);
	tcase_add_test(tc, sse_any_split);
	tcase_add_test(tc, sse_done_without_blank_line);
	tcase_add_test(tc, sse_last_event_at_end);
	tcase_add_loop_test(tc, sse_errors, 0, (int)(sizeof(sse_bad) / sizeof(sse_bad[0])));
	tcase_add_test(tc, sse_quotes_only_the_line);
	tcase_add_test(tc, openai_whole_body);
	tcase_add_test(tc, sse_event_too_large);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(stream_suite)
