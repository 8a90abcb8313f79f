/* anthropic.c: Anthropic's Messages API as a struct llm_ops: POST
 * /v1/messages with stream: true, the key in x-api-key and
 * anthropic-version: 2023-06-01, the system prompt in "system". It answers
 * server-sent events, each with an "event:" name and a JSON "data:" whose
 * "type" repeats it: message_start (the input token count),
 * content_block_start, content_block_delta ({"delta":{"type":"text_delta",
 * "text":...}}), content_block_stop, message_delta (stop_reason, output
 * tokens), message_stop, ping, and error ({"error":{"type":...,
 * "message":...}}), which can come in the middle of an answer. Error bodies
 * are {"type":"error","error":{"type":...,"message":...}}. */
#include "llm/llm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "llm/stream.h"

/* The API version kiln speaks (Anthropic's only stable one). */
#define ANTHROPIC_VERSION "2023-06-01"
/* max_tokens is required; this is what kiln asks for when llm.maxTokens
 * is not set, more than any code answer needs. */
#define DEFAULT_MAX_TOKENS 4096

static char *anthropic_chat_body(const struct llm_config *c, json_object *messages)
{
	char *system = NULL;
	json_object *turns = llm_turns(messages, false, &system);
	if (!turns)
		return NULL;
	_cleanup_json_ json_object *req = json_object_new_object();
	json_object_object_add(req, "model", json_object_new_string(c->model));
	json_object_object_add(
	    req, "max_tokens",
	    json_object_new_int64(c->max_tokens > 0 ? c->max_tokens : DEFAULT_MAX_TOKENS));
	if (system)
		json_object_object_add(req, "system", json_object_new_string(system));
	free(system);
	json_object_object_add(req, "messages", turns);
	json_object_object_add(req, "stream", json_object_new_boolean(1));
	if (c->temperature >= 0)
		json_object_object_add(req, "temperature", json_object_new_double(c->temperature));
	const char *s = json_compact(req);
	return s ? strdup(s) : NULL;
}

static int anthropic_resolve(struct llm_config *c, json_object *section, char *detail, size_t dsz)
{
	(void)section, (void)detail, (void)dsz;
	/* Anthropic's own SDKs read ANTHROPIC_API_KEY. */
	const char *k = getenv("ANTHROPIC_API_KEY");
	if (!c->api_key && k && k[0] && !(c->api_key = strdup(k)))
		return -ENOMEM;
	return 0;
}

static int anthropic_prepare(const struct llm_config *c, enum llm_request_kind kind,
                             struct llm_request *r, char *detail, size_t dsz)
{
	(void)detail, (void)dsz;
	llm_request_init(r, c, kind == LLM_REQ_MODELS ? "/v1/models?limit=1000" : "/v1/messages");
	if (kind == LLM_REQ_CHAT && (llm_request_header(r, "Content-Type: application/json") < 0 ||
	                             llm_request_header(r, "Accept: text/event-stream") < 0))
		return -E2BIG;
	if (llm_request_header(r, "anthropic-version: %s", ANTHROPIC_VERSION) < 0)
		return -E2BIG;
	if (c->api_key && llm_request_header(r, "x-api-key: %s", c->api_key) < 0)
		return -E2BIG;
	return 0;
}

static const char *anthropic_error_message(json_object *obj)
{
	const char *msg;
	if (json_get_string(json_get(obj, "error"), "message", &msg) == 0)
		return msg;
	if (json_get_string(obj, "message", &msg) == 0)
		return msg;
	return NULL;
}

static const char *anthropic_error_type(json_object *obj)
{
	const char *type;
	return json_get_string(json_get(obj, "error"), "type", &type) == 0 ? type : NULL;
}

/* Anthropic's error types (docs: "Errors") and kiln's kinds. */
static const char *anthropic_error_kind(const char *type, const char *message)
{
	(void)message;
	static const struct {
		const char *type, *kind;
	} map[] = {
	    {"invalid_request_error", LLM_E_INVALID},
	    {"authentication_error", LLM_E_UNAUTHORIZED},
	    {"permission_error", LLM_E_FORBIDDEN},
	    {"not_found_error", LLM_E_MODEL},
	    {"request_too_large", LLM_E_REQ_TOO_LARGE},
	    {"rate_limit_error", LLM_E_RATE_LIMITED},
	    {"api_error", LLM_E_SERVER},
	    {"overloaded_error", LLM_E_OVERLOADED},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(map[i].type, type) == 0)
			return map[i].kind;
	return NULL;
}

static int bad(struct llm_stream *s, const char *why)
{
	s->err_kind = LLM_E_BAD_RESPONSE;
	snprintf(s->err_message, sizeof(s->err_message), "%s", why);
	return -1;
}

/* One event's data, by its type. */
static int anthropic_object(struct llm_stream *s, json_object *obj)
{
	const char *type;
	if (!json_object_is_type(obj, json_type_object) || json_get_string(obj, "type", &type) < 0)
		return bad(s, "an event from /v1/messages has no \"type\"");
	const char *text, *reason;
	int64_t n;
	if (strcmp(type, "content_block_delta") == 0) {
		json_object *d = json_get(obj, "delta");
		const char *dtype = "";
		json_get_string(d, "type", &dtype);
		/* Only text answers; thinking and tool input are not code. */
		if (strcmp(dtype, "text_delta") == 0 && json_get_string(d, "text", &text) == 0)
			return llm_stream_append(s, text);
		return 0;
	}
	if (strcmp(type, "content_block_start") == 0) {
		json_object *b = json_get(obj, "content_block");
		const char *btype = "";
		json_get_string(b, "type", &btype);
		if (strcmp(btype, "text") == 0 && json_get_string(b, "text", &text) == 0)
			return llm_stream_append(s, text);
		return 0;
	}
	if (strcmp(type, "message_start") == 0) {
		json_object *u = json_get(json_get(obj, "message"), "usage");
		if (json_get_int64(u, "input_tokens", &n) == 0)
			s->prompt_tokens = n;
		if (json_get_int64(u, "output_tokens", &n) == 0)
			s->completion_tokens = n;
		return 0;
	}
	if (strcmp(type, "message_delta") == 0) {
		if (json_get_string(json_get(obj, "delta"), "stop_reason", &reason) == 0)
			llm_stream_stop_reason(s, reason);
		json_object *u = json_get(obj, "usage");
		if (json_get_int64(u, "output_tokens", &n) == 0)
			s->completion_tokens = n;
		if (json_get_int64(u, "input_tokens", &n) == 0)
			s->prompt_tokens = n;
		return 0;
	}
	if (strcmp(type, "message_stop") == 0) {
		s->finished = true;
		return 0;
	}
	if (strcmp(type, "error") == 0) {
		const char *etype = anthropic_error_type(obj);
		const char *msg = anthropic_error_message(obj);
		const char *kind = etype ? anthropic_error_kind(etype, msg) : NULL;
		s->err_kind = kind ? kind : LLM_E_SERVER;
		snprintf(s->err_type, sizeof(s->err_type), "%s", etype ? etype : "error");
		snprintf(s->err_message, sizeof(s->err_message), "%s", msg ? msg : "no message");
		return -1;
	}
	/* ping, content_block_stop, and event types added later. */
	return 0;
}

static int parse_json(struct llm_stream *s, const char *text, size_t len, const char *what)
{
	json_object *obj = NULL;
	char why[160] = "";
	if (json_parse_strict(text, len, LLM_JSON_MAX, &obj, why, sizeof(why)) < 0 || !obj) {
		s->err_kind = LLM_E_BAD_RESPONSE;
		snprintf(s->err_message, sizeof(s->err_message),
		         "%s from /v1/messages is not JSON (%s)", what, why);
		json_object_put(obj);
		return -1;
	}
	int r = anthropic_object(s, obj);
	json_object_put(obj);
	return r;
}

static int dispatch_event(struct llm_stream *s)
{
	if (!s->event.len)
		return 0;
	int r = parse_json(s, s->event.data, s->event.len, "an event's data");
	buf_reset(&s->event);
	return r;
}

/* Server-sent events as in openai.c; the event name is repeated in the
 * data's "type", which is what kiln reads. */
static int anthropic_stream_line(struct llm_stream *s, const char *line, size_t len)
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
		if ((s->event.len && buf_append(&s->event, "\n", 1) < 0) ||
		    buf_append(&s->event, v, vlen) < 0) {
			s->err_kind = LLM_E_TOO_LARGE;
			return -1;
		}
		return 0;
	}
	if (line[0] == '{')
		return parse_json(s, line, len, "a line of the stream");
	if ((len >= 6 && memcmp(line, "event:", 6) == 0) ||
	    (len >= 3 && memcmp(line, "id:", 3) == 0) ||
	    (len >= 6 && memcmp(line, "retry:", 6) == 0))
		return 0;
	s->err_kind = LLM_E_BAD_RESPONSE;
	snprintf(s->err_message, sizeof(s->err_message),
	         "the body from /v1/messages is not server-sent events (a line starts with "
	         "\"%.*s\")",
	         (int)(len < 40 ? len : 40), line);
	return -1;
}

/* A whole Message ({"content":[{"type":"text","text":...}],"stop_reason":
 * ...,"usage":{...}}), or an error object. */
static int anthropic_whole_body(struct llm_stream *s, const char *body, size_t len)
{
	json_object *obj = NULL;
	char why[160] = "";
	if (json_parse_strict(body, len, LLM_JSON_MAX, &obj, why, sizeof(why)) < 0 || !obj) {
		json_object_put(obj);
		s->err_kind = LLM_E_BAD_RESPONSE;
		snprintf(s->err_message, sizeof(s->err_message),
		         "the body from /v1/messages is not JSON (%s)", why);
		return -1;
	}
	int r = 0;
	const char *type = "";
	json_get_string(obj, "type", &type);
	json_object *content = json_get(obj, "content");
	if (strcmp(type, "error") == 0) {
		r = anthropic_object(s, obj);
	} else if (!json_object_is_type(content, json_type_array)) {
		r = bad(s, "a message from /v1/messages lacks \"content\"");
	} else {
		size_t n = json_object_array_length(content);
		for (size_t i = 0; i < n && r == 0; i++) {
			json_object *b = json_object_array_get_idx(content, i);
			const char *btype = "", *text;
			json_get_string(b, "type", &btype);
			if (strcmp(btype, "text") == 0 && json_get_string(b, "text", &text) == 0)
				r = llm_stream_append(s, text);
		}
		const char *reason;
		if (json_get_string(obj, "stop_reason", &reason) == 0)
			llm_stream_stop_reason(s, reason);
		json_object *u = json_get(obj, "usage");
		json_get_int64(u, "input_tokens", &s->prompt_tokens);
		json_get_int64(u, "output_tokens", &s->completion_tokens);
		s->finished = r == 0;
	}
	json_object_put(obj);
	return r;
}

static void anthropic_model_names(json_object *body, json_object *names)
{
	json_object *data = json_get(body, "data");
	size_t n = json_object_is_type(data, json_type_array) ? json_object_array_length(data) : 0;
	for (size_t i = 0; i < n; i++) {
		const char *id;
		if (json_get_string(json_object_array_get_idx(data, i), "id", &id) == 0)
			json_object_array_add(names, json_object_new_string(id));
	}
}

static void anthropic_pull_hint(const struct llm_config *c, char *out, size_t n)
{
	(void)c;
	snprintf(out, n, "set llm.model to a model your API key can use (see the list)");
}

const struct llm_ops llm_anthropic_ops = {
    .name = "anthropic",
    .default_url = "https://api.anthropic.com",
    .default_model = "claude-sonnet-4-5",
    .base_suffix = "/v1",
    .chat_path = "/v1/messages",
    .models_path = "/v1/models",
    .resolve = anthropic_resolve,
    .prepare = anthropic_prepare,
    .chat_body = anthropic_chat_body,
    .stream_line = anthropic_stream_line,
    .whole_body = anthropic_whole_body,
    .error_message = anthropic_error_message,
    .error_type = anthropic_error_type,
    .error_kind = anthropic_error_kind,
    .auth_hint = "set llm.apiKey, KILN_API_KEY or ANTHROPIC_API_KEY to a valid Anthropic key",
    .label = "Anthropic's API",
    .start_hint = "Check the network, or point llm.url / KILN_LLM_URL at a reachable "
                  "Messages API",
    .model_names = anthropic_model_names,
    .pull_hint = anthropic_pull_hint,
};
