/* openai.c: the OpenAI-compatible chat completions API as a struct
 * llm_ops (OpenAI, vLLM, llama.cpp's server, LM Studio): POST
 * /v1/chat/completions with stream: true answers server-sent events whose
 * data is a chat.completion.chunk ({"choices":[{"delta":{"content":...},
 * "finish_reason":null}]}), a usage-only chunk when stream_options asks
 * for it, and "data: [DONE]". Errors are {"error":{"message":...}}. */
#include "llm/llm.h"

#include <stdio.h>
#include <string.h>

#include "core/json.h"
#include "llm/stream.h"

static char *openai_chat_body(const struct llm_config *c, json_object *messages)
{
	_cleanup_json_ json_object *req = json_object_new_object();
	json_object_object_add(req, "model", json_object_new_string(c->model));
	json_object_object_add(req, "messages", json_object_get(messages));
	json_object_object_add(req, "stream", json_object_new_boolean(1));
	json_object *so = json_object_new_object();
	json_object_object_add(so, "include_usage", json_object_new_boolean(1));
	json_object_object_add(req, "stream_options", so);
	if (c->temperature >= 0)
		json_object_object_add(req, "temperature", json_object_new_double(c->temperature));
	if (c->max_tokens > 0)
		json_object_object_add(req, "max_tokens", json_object_new_int64(c->max_tokens));
	const char *s = json_compact(req);
	return s ? strdup(s) : NULL;
}

/* OpenAI nests the message ({"error":{"message":...}}); vLLM and others
 * answer {"object":"error","message":...} or {"error":"..."} or FastAPI's
 * {"detail":...}. */
static const char *openai_error_message(json_object *obj)
{
	const char *msg;
	json_object *err = json_get(obj, "error");
	if (json_get_string(err, "message", &msg) == 0)
		return msg;
	if (json_get_string(obj, "error", &msg) == 0)
		return msg;
	if (json_get_string(obj, "detail", &msg) == 0)
		return msg;
	const char *type;
	if (json_get_string(obj, "object", &type) == 0 && strcmp(type, "error") == 0 &&
	    json_get_string(obj, "message", &msg) == 0)
		return msg;
	return NULL;
}

static void usage(struct llm_stream *s, json_object *obj)
{
	json_object *u = json_get(obj, "usage");
	json_get_int64(u, "prompt_tokens", &s->prompt_tokens);
	json_get_int64(u, "completion_tokens", &s->completion_tokens);
}

/* A chunk or a whole completion: key is "delta" or "message". */
static int openai_object(struct llm_stream *s, json_object *obj, const char *key)
{
	const char *err = openai_error_message(obj);
	if (err) {
		s->err_kind = LLM_E_SERVER;
		snprintf(s->err_message, sizeof(s->err_message), "%s", err);
		return -1;
	}
	json_object *choices = json_get(obj, "choices");
	if (!json_object_is_type(obj, json_type_object) ||
	    (choices && !json_object_is_type(choices, json_type_array)) ||
	    (!choices && !json_get(obj, "usage"))) {
		s->err_kind = LLM_E_BAD_RESPONSE;
		snprintf(s->err_message, sizeof(s->err_message),
		         "a chat completion from /v1/chat/completions lacks \"choices\"");
		return -1;
	}
	usage(s, obj);
	size_t n = choices ? json_object_array_length(choices) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *ch = json_object_array_get_idx(choices, i);
		int64_t index = 0;
		json_get_int64(ch, "index", &index);
		if (index != 0) /* kiln asks for one choice */
			continue;
		const char *content;
		if (json_get_string(json_get(ch, key), "content", &content) == 0 &&
		    llm_stream_append(s, content) < 0)
			return -1;
		const char *reason;
		if (json_get_string(ch, "finish_reason", &reason) == 0) {
			snprintf(s->finish_reason, sizeof(s->finish_reason), "%s", reason);
			s->finished = true;
		}
	}
	return 0;
}

static int parse_json(struct llm_stream *s, const char *text, size_t len, const char *key,
                      const char *what)
{
	json_object *obj = NULL;
	char why[160] = "";
	if (json_parse_strict(text, len, LLM_JSON_MAX, &obj, why, sizeof(why)) < 0 || !obj) {
		s->err_kind = LLM_E_BAD_RESPONSE;
		snprintf(s->err_message, sizeof(s->err_message),
		         "%s from /v1/chat/completions is not JSON (%s)", what, why);
		json_object_put(obj);
		return -1;
	}
	int r = openai_object(s, obj, key);
	json_object_put(obj);
	return r;
}

/* The event's data lines are complete: "[DONE]" or one JSON chunk. */
static int dispatch_event(struct llm_stream *s)
{
	if (!s->event.len)
		return 0;
	int r = 0;
	if (strcmp(s->event.data, "[DONE]") == 0)
		s->finished = true;
	else
		r = parse_json(s, s->event.data, s->event.len, "delta", "an event's data");
	buf_reset(&s->event);
	return r;
}

/* Server-sent events: "field: value" lines, events end at a blank line,
 * lines starting with ':' are comments (keep-alives). Only data matters. */
static int openai_stream_line(struct llm_stream *s, const char *line, size_t len)
{
	if (len && line[len - 1] == '\r')
		len--;
	if (len == 0)
		return dispatch_event(s);
	if (line[0] == ':')
		return 0;
	if (len >= 5 && memcmp(line, "data:", 5) == 0) {
		const char *v = line + 5;
		size_t vlen = len - 5;
		if (vlen && *v == ' ')
			v++, vlen--;
		if (s->event.len && buf_append(&s->event, "\n", 1) < 0)
			goto big;
		if (buf_append(&s->event, v, vlen) < 0)
			goto big;
		/* "[DONE]" need not wait for the blank line. A JSON chunk
		 * does (data may span lines); llm.c feeds a blank line at
		 * the end of the body, so a last event is never lost. */
		if (strcmp(s->event.data, "[DONE]") == 0)
			return dispatch_event(s);
		return 0;
	}
	if (line[0] == '{') {
		/* Not SSE at all: an error object sent as plain JSON. */
		return parse_json(s, line, len, "delta", "a line of the stream");
	}
	/* event:, id:, retry: carry nothing kiln uses. Anything else is
	 * not an event stream at all (an HTML page from a proxy, say). */
	if ((len >= 6 && memcmp(line, "event:", 6) == 0) ||
	    (len >= 3 && memcmp(line, "id:", 3) == 0) ||
	    (len >= 6 && memcmp(line, "retry:", 6) == 0))
		return 0;
	s->err_kind = LLM_E_BAD_RESPONSE;
	snprintf(s->err_message, sizeof(s->err_message),
	         "the body from /v1/chat/completions is not server-sent events (a line starts "
	         "with \"%.*s\")",
	         /* line is len bytes, not a string: the next line or
	          * nothing at all may follow it. */
	         (int)(len < 40 ? len : 40), line);
	return -1;
big:
	s->err_kind = LLM_E_TOO_LARGE;
	return -1;
}

static int openai_whole_body(struct llm_stream *s, const char *body, size_t len)
{
	return parse_json(s, body, len, "message", "the body");
}

static void openai_model_names(json_object *body, json_object *names)
{
	json_object *data = json_get(body, "data");
	size_t n = json_object_is_type(data, json_type_array) ? json_object_array_length(data) : 0;
	for (size_t i = 0; i < n; i++) {
		const char *id;
		if (json_get_string(json_object_array_get_idx(data, i), "id", &id) == 0)
			json_object_array_add(names, json_object_new_string(id));
	}
}

static void openai_pull_hint(const struct llm_config *c, char *out, size_t n)
{
	snprintf(out, n,
	         "load or serve '%s' on the server (vllm serve %s, llama-server -m FILE, or LM "
	         "Studio's model list), or set llm.model to one it has",
	         c->model, c->model);
}

const struct llm_ops llm_openai_ops = {
    .name = "openai",
    .default_url = "https://api.openai.com",
    .default_model = "gpt-4o-mini",
    .base_suffix = "/v1",
    .auth_hint = "set llm.apiKey or KILN_API_KEY",
    .label = "the OpenAI-compatible server",
    .start_hint = "Start it (for example 'llama-server -m MODEL.gguf' or 'vllm serve MODEL'), "
                  "or point llm.url / KILN_LLM_URL at a running server",
    .chat_path = "/v1/chat/completions",
    .models_path = "/v1/models",
    .chat_body = openai_chat_body,
    .stream_line = openai_stream_line,
    .whole_body = openai_whole_body,
    .error_message = openai_error_message,
    .model_names = openai_model_names,
    .pull_hint = openai_pull_hint,
};
