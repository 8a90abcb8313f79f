/* ollama.c: Ollama's native chat API as a struct llm_ops: POST /api/chat
 * with stream: true answers newline-delimited JSON, one object per token
 * batch ({"message":{"content":...},"done":false}) and a last one with
 * done: true, done_reason and the token counts (prompt_eval_count,
 * eval_count). Errors are {"error":"..."}, also mid-stream. */
#include "llm/llm.h"

#include <stdio.h>
#include <string.h>

#include "core/json.h"

static char *ollama_chat_body(const struct llm_config *c, json_object *messages)
{
	_cleanup_json_ json_object *req = json_object_new_object();
	json_object_object_add(req, "model", json_object_new_string(c->model));
	json_object_object_add(req, "messages", json_object_get(messages));
	json_object_object_add(req, "stream", json_object_new_boolean(1));
	json_object *opts = json_object_new_object();
	if (c->temperature >= 0)
		json_object_object_add(opts, "temperature", json_object_new_double(c->temperature));
	if (c->max_tokens > 0)
		json_object_object_add(opts, "num_predict", json_object_new_int64(c->max_tokens));
	json_object_object_add(req, "options", opts);
	const char *s = json_compact(req);
	return s ? strdup(s) : NULL;
}

static const char *ollama_error_message(json_object *obj)
{
	const char *msg;
	return json_get_string(obj, "error", &msg) == 0 ? msg : NULL;
}

/* One response object, streamed or whole. */
static int ollama_object(struct llm_stream *s, json_object *obj)
{
	const char *err = ollama_error_message(obj);
	if (err) {
		s->err_kind = LLM_E_SERVER;
		snprintf(s->err_message, sizeof(s->err_message), "%s", err);
		return -1;
	}
	json_object *msg = json_get(obj, "message");
	bool done = false;
	if (!json_object_is_type(obj, json_type_object) || json_get_bool(obj, "done", &done) < 0 ||
	    (!msg && !done)) {
		s->err_kind = LLM_E_BAD_RESPONSE;
		snprintf(s->err_message, sizeof(s->err_message),
		         "an object of Ollama's /api/chat stream lacks \"message\" or \"done\"");
		return -1;
	}
	const char *content;
	if (json_get_string(msg, "content", &content) == 0 && content[0]) {
		size_t n = strlen(content);
		if (buf_append(&s->text, content, n) < 0) {
			s->err_kind = LLM_E_TOO_LARGE;
			return -1;
		}
		if (s->emit)
			s->emit(s->emit_data, content, n);
	}
	if (done) {
		const char *reason;
		s->finished = true;
		if (json_get_string(obj, "done_reason", &reason) == 0)
			snprintf(s->finish_reason, sizeof(s->finish_reason), "%s", reason);
		json_get_int64(obj, "prompt_eval_count", &s->prompt_tokens);
		json_get_int64(obj, "eval_count", &s->completion_tokens);
	}
	return 0;
}

static int ollama_parse(struct llm_stream *s, const char *text, size_t len, const char *what)
{
	json_object *obj = NULL;
	char why[160] = "";
	if (json_parse_strict(text, len, LLM_JSON_MAX, &obj, why, sizeof(why)) < 0 || !obj) {
		s->err_kind = LLM_E_BAD_RESPONSE;
		snprintf(s->err_message, sizeof(s->err_message),
		         "%s from Ollama's /api/chat is not JSON (%s)", what, why);
		json_object_put(obj);
		return -1;
	}
	int r = ollama_object(s, obj);
	json_object_put(obj);
	return r;
}

static int ollama_stream_line(struct llm_stream *s, const char *line, size_t len)
{
	while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (len == 0)
		return 0;
	return ollama_parse(s, line, len, "a line of the stream");
}

static int ollama_whole_body(struct llm_stream *s, const char *body, size_t len)
{
	return ollama_parse(s, body, len, "the body");
}

static void ollama_model_names(json_object *body, json_object *names)
{
	json_object *models = json_get(body, "models");
	size_t n =
	    json_object_is_type(models, json_type_array) ? json_object_array_length(models) : 0;
	for (size_t i = 0; i < n; i++) {
		const char *name;
		if (json_get_string(json_object_array_get_idx(models, i), "name", &name) == 0)
			json_object_array_add(names, json_object_new_string(name));
	}
}

static void ollama_pull_hint(const struct llm_config *c, char *out, size_t n)
{
	snprintf(out, n, "ollama pull %s", c->model);
}

const struct llm_ops llm_ollama_ops = {
    .name = "ollama",
    .default_url = "http://127.0.0.1:11434",
    .default_model = "qwen2.5-coder",
    .auth_hint = "set llm.apiKey or KILN_API_KEY",
    .label = "Ollama",
    .start_hint = "Start it with 'ollama serve' (or the Ollama app), or point llm.url / "
                  "KILN_LLM_URL at a running server",
    .chat_path = "/api/chat",
    .models_path = "/api/tags",
    .chat_body = ollama_chat_body,
    .stream_line = ollama_stream_line,
    .whole_body = ollama_whole_body,
    .error_message = ollama_error_message,
    .model_names = ollama_model_names,
    .pull_hint = ollama_pull_hint,
};
