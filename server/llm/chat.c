/* chat.c: one streamed chat with a model server, provider-neutral: sends
 * the provider's request, splits the streamed body into lines for the
 * provider's parser, and turns every way it can fail into an llm_error
 * with a stable kind and a sentence that says what to do. A 404 about the
 * model triggers a second request for the server's model list, so the
 * error can name the models that are there. */
#include "llm/llm.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/json.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/position.h"
#include "core/util.h"
#include "llm/cache.h"
#include "llm/http.h"
#include "llm/stream.h"

/* Messages for people are cut to their buffers on purpose. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

/* Error bodies and model lists are short; a longer one is cut. */
#define ERROR_BODY_MAX (64u << 10)
#define LINE_MAX_BYTES (1u << 20)

enum phase { PHASE_CHAT, PHASE_MODELS };

struct llm_chat {
	struct http *http;
	struct http_req *req;
	struct loop_timer *later; /* reports a request that could not start */
	/* The answer cache (llm.cache): the request's key, the lookup in
	 * flight, and the body to send on a miss. */
	char cache_key[65];
	struct llm_cache_lookup *lookup;
	char *pending_body;
	const struct llm_ops *ops;
	struct llm_config cfg;   /* a copy; secrets are wiped when freed */
	const char *url, *model; /* cfg's, for the messages */
	uint64_t connect_ms, idle_ms, total_ms;
	enum phase phase;
	long status;
	bool lines; /* 2xx and streamed: parse line by line */
	char retry_after[64];
	char error_type[96]; /* x-amzn-ErrorType, or the body's error.type */
	struct buf line;     /* a partial line of the stream */
	struct buf body;     /* error body, whole body or model list */
	struct llm_stream st;
	struct llm_error err;
	struct llm_chat_callbacks cb;
	/* llm_models_start: the list is the point, not an error's detail. */
	void (*models_done)(void *data, json_object *models, const struct llm_error *err);
	void *data;
};

static void chat_free(struct llm_chat *c)
{
	loop_timer_stop(http_loop(c->http), c->later);
	llm_cache_lookup_cancel(c->lookup);
	free(c->pending_body);
	buf_release(&c->line);
	buf_release(&c->body);
	buf_release(&c->st.text);
	buf_release(&c->st.event);
	json_object_put(c->err.data);
	llm_config_release(&c->cfg);
	free(c);
}

static void forward_delta(void *data, const char *text, size_t len)
{
	struct llm_chat *c = data;
	if (c->cb.delta)
		c->cb.delta(c->data, text, len);
}

static json_object *err_data(struct llm_chat *c)
{
	if (!c->err.data)
		c->err.data = json_object_new_object();
	return c->err.data;
}

static void set_err(struct llm_chat *c, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(struct llm_chat *c, const char *kind, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err.message, sizeof(c->err.message), fmt, ap);
	va_end(ap);
	c->err.kind = kind;
	json_object_object_add(err_data(c), "url", json_object_new_string(c->url));
	json_object_object_add(err_data(c), "provider", json_object_new_string(c->ops->name));
}

static void finish(struct llm_chat *c)
{
	c->req = NULL;
	if (c->models_done) {
		c->models_done(c->data, NULL, &c->err);
		chat_free(c);
		return;
	}
	if (c->err.kind) {
		c->cb.done(c->data, NULL, &c->err);
	} else {
		struct llm_answer a = {
		    .text = c->st.text.data ? c->st.text.data : "",
		    .len = c->st.text.len,
		    .finish_reason = c->st.finish_reason[0] ? c->st.finish_reason : NULL,
		    .prompt_tokens = c->st.prompt_tokens,
		    .completion_tokens = c->st.completion_tokens,
		};
		if (c->cache_key[0] && c->st.finished) {
			struct llm_cache_entry e = {
			    .answer = (char *)a.text,
			    .len = a.len,
			    .prompt_tokens = a.prompt_tokens,
			    .completion_tokens = a.completion_tokens,
			};
			snprintf(e.finish_reason, sizeof(e.finish_reason), "%s",
			         c->st.finish_reason);
			llm_cache_store(c->cache_key, &e, c->cfg.cache_max_bytes);
		}
		c->cb.done(c->data, &a, NULL);
	}
	chat_free(c);
}

/* --- responses ---------------------------------------------------------------- */

static int on_headers(void *data, const struct http_head *head)
{
	struct llm_chat *c = data;
	long status = head->status;
	const char *ctype = head->content_type;
	c->status = status;
	snprintf(c->retry_after, sizeof(c->retry_after), "%s",
	         head->retry_after ? head->retry_after : "");
	snprintf(c->error_type, sizeof(c->error_type), "%s",
	         head->error_type ? head->error_type : "");
	/* A 2xx stream is parsed as it comes, unless the server sent one
	 * plain JSON document (it ignored stream: true). */
	bool whole = ctype && strncasecmp(ctype, "application/json", 16) == 0;
	c->lines = c->phase == PHASE_CHAT && status >= 200 && status < 300 && !whole;
	return 0;
}

static int on_body(void *data, const char *chunk, size_t len)
{
	struct llm_chat *c = data;
	if (!c->lines) {
		/* Keep what fits: an error body is only read for its message. */
		if (c->phase == PHASE_CHAT && c->status >= 200 && c->status < 300) {
			if (buf_append(&c->body, chunk, len) < 0) {
				c->st.err_kind = LLM_E_TOO_LARGE;
				return -1;
			}
		} else {
			size_t room = c->body.max - c->body.len;
			buf_append(&c->body, chunk, len < room ? len : room);
		}
		return 0;
	}
	if (c->ops->stream_bytes)
		return c->ops->stream_bytes(&c->st, chunk, len);
	if (buf_append(&c->line, chunk, len) < 0) {
		c->st.err_kind = LLM_E_BAD_RESPONSE;
		snprintf(c->st.err_message, sizeof(c->st.err_message),
		         "a line of the stream is longer than %u bytes", LINE_MAX_BYTES);
		return -1;
	}
	return llm_stream_lines(c->ops, &c->st, &c->line);
}

/* Retry-After is seconds or an HTTP date; -1 when absent or unreadable. */
static int64_t retry_after_ms(const char *v)
{
	if (!v || !v[0])
		return -1;
	char *end;
	double secs = strtod(v, &end);
	if (end != v && (*end == '\0' || *end == ' ') && secs >= 0)
		return (int64_t)(secs * 1000);
	struct tm tm = {0};
	if (strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm)) {
		time_t t = timegm(&tm);
		time_t now = time(NULL);
		return t > now ? (int64_t)(t - now) * 1000 : 0;
	}
	return -1;
}

static void on_done(void *data, const struct http_result *res);

/* The request for kind: the provider's own, else url + path and a bearer
 * key. The caller wipes r once the request has taken its copies. */
static int prepare(struct llm_chat *c, enum llm_request_kind kind, struct llm_request *r)
{
	char detail[256] = "";
	if (c->ops->prepare) {
		int e = c->ops->prepare(&c->cfg, kind, r, detail, sizeof(detail));
		if (e < 0) {
			set_err(c, LLM_E_CONFIG, "%s", detail);
			return e;
		}
		return 0;
	}
	llm_request_init(r, &c->cfg,
	                 kind == LLM_REQ_MODELS ? c->ops->models_path : c->ops->chat_path);
	if (kind == LLM_REQ_CHAT &&
	    (llm_request_header(r, "Content-Type: application/json") < 0 ||
	     llm_request_header(r, "Accept: application/x-ndjson, text/event-stream, "
	                           "application/json") < 0))
		return -E2BIG;
	if (c->cfg.api_key && llm_request_header(r, "Authorization: Bearer %s", c->cfg.api_key) < 0)
		return -E2BIG;
	return 0;
}

/* Start r; a failure to start is c's error, said once. */
static int send_request(struct llm_chat *c, struct llm_request *r, const char *method,
                        const char *body, uint64_t total_ms)
{
	struct http_options o = {
	    .method = method,
	    .url = r->url,
	    .body = body,
	    .headers = r->headers,
	    .target = r->target,
	    .aws_sigv4 = r->sigv4,
	    .userpwd = r->userpwd,
	    .connect_timeout_ms = c->connect_ms,
	    .idle_timeout_ms = c->idle_ms,
	    .total_timeout_ms = total_ms,
	};
	static const struct http_callbacks cbs = {
	    .headers = on_headers, .body = on_body, .done = on_done};
	int e = http_request_start(c->http, &o, &cbs, c, &c->req);
	if (e == -ENOTSUP)
		set_err(c, LLM_E_CONFIG,
		        "this libcurl cannot sign requests with AWS Signature Version 4: install "
		        "libcurl4 7.75 or later, or use a Bedrock API key (llm.apiKey or "
		        "AWS_BEARER_TOKEN_BEDROCK)");
	return e;
}

static int list_models(struct llm_chat *c)
{
	struct llm_request r;
	c->phase = PHASE_MODELS;
	buf_reset(&c->body);
	int e = prepare(c, LLM_REQ_MODELS, &r);
	if (e == 0)
		e = send_request(c, &r, "GET", NULL, c->idle_ms);
	llm_request_wipe(&r);
	return e;
}

static void transport_failed(struct llm_chat *c, const struct http_result *res);
static void http_failed(struct llm_chat *c);

static void models_only_done(struct llm_chat *c, const struct http_result *res)
{
	json_object *names = NULL;
	if (res->curl_code != 0) {
		transport_failed(c, res);
	} else if (res->status != 200) {
		c->status = res->status;
		c->phase = PHASE_CHAT; /* a 404 here must not list again */
		http_failed(c);
		return;
	} else {
		json_object *body = NULL;
		char why[64];
		names = json_object_new_array();
		if (json_parse_strict(c->body.data ? c->body.data : "", c->body.len, LLM_JSON_MAX,
		                      &body, why, sizeof(why)) == 0 &&
		    body)
			c->ops->model_names(body, names);
		else
			set_err(c, LLM_E_BAD_RESPONSE, "the model list at %s%s is not JSON", c->url,
			        c->ops->models_path);
		json_object_put(body);
	}
	c->req = NULL;
	c->models_done(c->data, c->err.kind ? NULL : names, c->err.kind ? &c->err : NULL);
	json_object_put(names);
	chat_free(c);
}

static void models_listed(struct llm_chat *c, const struct http_result *res)
{
	if (c->models_done) {
		models_only_done(c, res);
		return;
	}
	char hint[512];
	c->ops->pull_hint(&c->cfg, hint, sizeof(hint));
	json_object *names = json_object_new_array();
	if (res->curl_code == 0 && res->status == 200) {
		json_object *body = NULL;
		char why[64];
		if (json_parse_strict(c->body.data ? c->body.data : "", c->body.len, LLM_JSON_MAX,
		                      &body, why, sizeof(why)) == 0)
			c->ops->model_names(body, names);
		json_object_put(body);
	}
	struct buf list;
	buf_init(&list, 300);
	size_t n = json_object_array_length(names);
	for (size_t i = 0; i < n; i++)
		if (buf_printf(&list, "%s%s", i ? ", " : "",
		               json_object_get_string(json_object_array_get_idx(names, i))) < 0)
			break;
	if (n)
		snprintf(c->err.message, sizeof(c->err.message),
		         "the model server at %s has no model '%s'. It has: %s. Get it with: %s",
		         c->url, c->model, list.data ? list.data : "", hint);
	else
		snprintf(c->err.message, sizeof(c->err.message),
		         "the model server at %s has no model '%s' (and lists none). Get it "
		         "with: %s",
		         c->url, c->model, hint);
	buf_release(&list);
	json_object_object_add(err_data(c), "models", names);
	json_object_object_add(err_data(c), "pull", json_object_new_string(hint));
	finish(c);
}

/* The server's message from an error body: the provider's field when the
 * body is JSON, else the start of the text. */
static void server_message(struct llm_chat *c, char *out, size_t n)
{
	out[0] = '\0';
	const char *text = c->body.data ? c->body.data : "";
	json_object *obj = NULL;
	char why[64];
	if (json_parse_strict(text, c->body.len, LLM_JSON_MAX, &obj, why, sizeof(why)) == 0 &&
	    obj) {
		const char *m = c->ops->error_message(obj);
		if (m) {
			/* Cut on a character boundary: serverMessage goes
			 * into the error's data as a JSON string. */
			size_t len = strlen(m) < n - 1 ? strlen(m) : n - 1;
			len = utf8_complete_prefix(m, len);
			memcpy(out, m, len);
			out[len] = '\0';
		}
	}
	json_object_put(obj);
	if (!out[0] && c->body.len) {
		size_t len = c->body.len < n - 1 ? c->body.len : n - 1;
		len = utf8_complete_prefix(text, len);
		memcpy(out, text, len);
		out[len] = '\0';
		for (char *p = out; *p; p++)
			if (*p == '\n' || *p == '\r')
				*p = ' ';
		/* A proxy's page in Latin-1 is not UTF-8: mark its bytes. */
		for (size_t i = 0; i < len;) {
			size_t seq = utf8_seq_len((const unsigned char *)out + i, len - i);
			if (seq == 1 && (unsigned char)out[i] >= 0x80)
				out[i] = '?';
			i += seq;
		}
	}
}

/* The provider's name for the error: x-amzn-ErrorType, else the body's. */
static void error_type(struct llm_chat *c)
{
	if (c->error_type[0] || !c->ops->error_type || !c->body.len)
		return;
	json_object *obj = NULL;
	char why[64];
	if (json_parse_strict(c->body.data, c->body.len, LLM_JSON_MAX, &obj, why, sizeof(why)) ==
	        0 &&
	    obj) {
		const char *t = c->ops->error_type(obj);
		if (t)
			snprintf(c->error_type, sizeof(c->error_type), "%s", t);
	}
	json_object_put(obj);
}

/* "retry in N s" and data.retryAfterMs when the server said when. */
static void retry_hint(struct llm_chat *c, char *out, size_t n)
{
	int64_t ms = retry_after_ms(c->retry_after);
	if (ms >= 0) {
		snprintf(out, n, "retry in %lld s", (long long)((ms + 999) / 1000));
		json_object_object_add(err_data(c), "retryAfterMs", json_object_new_int64(ms));
	} else {
		snprintf(out, n, "retry later");
	}
}

static void http_failed(struct llm_chat *c)
{
	char msg[300];
	server_message(c, msg, sizeof(msg));
	error_type(c);
	long s = c->status;
	const char *kind =
	    c->error_type[0] && c->ops->error_kind ? c->ops->error_kind(c->error_type, msg) : NULL;
	const char *said = msg[0] ? msg : "no message";
	char hint[64];
	if (!kind) {
		if (s == 404 && (strcasestr(msg, "model") || !msg[0]))
			kind = LLM_E_MODEL;
		else if (s == 401)
			kind = LLM_E_UNAUTHORIZED;
		else if (s == 403)
			kind = LLM_E_FORBIDDEN;
		else if (s == 429)
			kind = LLM_E_RATE_LIMITED;
		else if (s == 413)
			kind = LLM_E_REQ_TOO_LARGE;
		else if (s == 529)
			kind = LLM_E_OVERLOADED;
		else if (s >= 500)
			kind = LLM_E_SERVER;
		else
			kind = LLM_E_HTTP;
	}
	if (strcmp(kind, LLM_E_UNAUTHORIZED) == 0)
		set_err(
		    c, kind,
		    "the model server at %s refused the request as unauthorized (HTTP %ld: %s); "
		    "%s",
		    c->url, s, said, c->ops->auth_hint);
	else if (strcmp(kind, LLM_E_FORBIDDEN) == 0)
		set_err(c, kind,
		        "the model server at %s forbids this request (HTTP %ld: %s); check the "
		        "credentials' permissions for model '%s'",
		        c->url, s, said, c->model);
	else if (strcmp(kind, LLM_E_RATE_LIMITED) == 0) {
		retry_hint(c, hint, sizeof(hint));
		set_err(c, kind, "the model server at %s is rate limiting (HTTP %ld: %s); %s",
		        c->url, s, said, hint);
	} else if (strcmp(kind, LLM_E_OVERLOADED) == 0) {
		retry_hint(c, hint, sizeof(hint));
		set_err(c, kind, "the model service at %s is overloaded (HTTP %ld: %s); %s", c->url,
		        s, said, hint);
	} else if (strcmp(kind, LLM_E_REQ_TOO_LARGE) == 0)
		set_err(c, kind,
		        "the model server at %s refused the request as too large (HTTP %ld: %s); "
		        "select less text or lower llm.historyTokens",
		        c->url, s, said);
	else if (strcmp(kind, LLM_E_MODEL) != 0 && s >= 500)
		set_err(c, kind, "the model server at %s failed (HTTP %ld: %s)", c->url, s, said);
	else if (strcmp(kind, LLM_E_MODEL) != 0 && strcmp(kind, LLM_E_HTTP) != 0)
		set_err(c, kind, "the model server at %s refused the request (HTTP %ld: %s)",
		        c->url, s, said);
	if (msg[0])
		json_object_object_add(err_data(c), "serverMessage", json_object_new_string(msg));
	json_object_object_add(err_data(c), "status", json_object_new_int64(s));
	if (c->error_type[0])
		json_object_object_add(err_data(c), "errorType",
		                       json_object_new_string(c->error_type));
	if (strcmp(kind, LLM_E_MODEL) == 0) {
		set_err(c, LLM_E_MODEL, "the model server at %s has no model '%s' (%s)", c->url,
		        c->model, said);
		if (list_models(c) < 0)
			finish(c);
		return;
	}
	if (strcmp(kind, LLM_E_HTTP) == 0)
		set_err(c, LLM_E_HTTP,
		        "the model server at %s answered HTTP %ld to %s (%s); is llm.provider "
		        "'%s' right for this server?",
		        c->url, s, c->ops->chat_path, said, c->ops->name);
	finish(c);
}

static void transport_failed(struct llm_chat *c, const struct http_result *res)
{
	int code = res->curl_code;
	if (res->idle_timeout) {
		set_err(c, LLM_E_STALLED,
		        "the model server at %s sent nothing for %llu ms (llm.idleTimeoutMs) %s",
		        c->url, (unsigned long long)c->idle_ms,
		        c->st.text.len ? "in the middle of the answer" : "before answering");
		json_object_object_add(err_data(c), "receivedBytes",
		                       json_object_new_int64((int64_t)c->st.text.len));
		return;
	}
	bool connected = res->status != 0;
	if (!connected && (code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ||
	                   code == CURLE_COULDNT_RESOLVE_PROXY ||
	                   code == CURLE_OPERATION_TIMEDOUT || code == CURLE_SSL_CONNECT_ERROR)) {
		set_err(c, LLM_E_UNREACHABLE, "cannot reach %s at %s (%s). %s", c->ops->label,
		        c->url, res->curl_error, c->ops->start_hint);
		return;
	}
	if (code == CURLE_OPERATION_TIMEDOUT) {
		set_err(c, LLM_E_TIMEOUT,
		        "the model did not finish within %llu ms (llm.totalTimeoutMs)",
		        (unsigned long long)c->total_ms);
		return;
	}
	if (code == CURLE_GOT_NOTHING && !connected) {
		set_err(c, LLM_E_CUT,
		        "the model server at %s closed the connection without answering", c->url);
		return;
	}
	set_err(c, LLM_E_CUT, "the stream from %s broke after %zu bytes of answer (%s)", c->url,
	        c->st.text.len, res->curl_error);
	json_object_object_add(err_data(c), "receivedBytes",
	                       json_object_new_int64((int64_t)c->st.text.len));
}

static void on_done(void *data, const struct http_result *res)
{
	struct llm_chat *c = data;
	c->req = NULL;
	if (c->phase == PHASE_MODELS) {
		models_listed(c, res);
		return;
	}
	if (c->st.err_kind) {
		/* The parser or a cap stopped the transfer on purpose. */
		if (strcmp(c->st.err_kind, LLM_E_TOO_LARGE) == 0)
			set_err(c, LLM_E_TOO_LARGE,
			        "the model's answer exceeds %zu bytes (llm.maxResponseBytes)",
			        c->st.text.max);
		else if (c->st.err_type[0]) {
			/* The provider's own error event in the middle of the
			 * stream (Anthropic's "error", Bedrock's exceptions). */
			set_err(c, c->st.err_kind,
			        "the model server at %s reported %s in the stream: %s%s", c->url,
			        c->st.err_type, c->st.err_message,
			        strcmp(c->st.err_kind, LLM_E_OVERLOADED) == 0 ||
			                strcmp(c->st.err_kind, LLM_E_RATE_LIMITED) == 0
			            ? "; retry later"
			            : "");
			json_object_object_add(err_data(c), "errorType",
			                       json_object_new_string(c->st.err_type));
			json_object_object_add(err_data(c), "serverMessage",
			                       json_object_new_string(c->st.err_message));
			json_object_object_add(err_data(c), "receivedBytes",
			                       json_object_new_int64((int64_t)c->st.text.len));
		} else if (strcmp(c->st.err_kind, LLM_E_SERVER) == 0)
			set_err(c, LLM_E_SERVER, "the model server at %s reported an error: %s",
			        c->url, c->st.err_message);
		else
			set_err(c, c->st.err_kind, "%s", c->st.err_message);
		finish(c);
		return;
	}
	if (res->curl_code != 0 && !(res->status >= 300 && res->curl_code == CURLE_PARTIAL_FILE)) {
		transport_failed(c, res);
		finish(c);
		return;
	}
	c->status = res->status;
	if (c->status < 200 || c->status >= 300) {
		http_failed(c);
		return;
	}
	int r = 0;
	if (c->lines && c->ops->stream_end) {
		r = c->ops->stream_end(&c->st);
	} else if (c->lines) {
		/* A last line without its newline, then the blank line that
		 * ends a last server-sent event. */
		r = llm_stream_end(c->ops, &c->st, &c->line);
	} else {
		r = c->ops->whole_body(&c->st, c->body.data ? c->body.data : "", c->body.len);
	}
	if (r < 0) {
		c->st.err_kind = c->st.err_kind ? c->st.err_kind : LLM_E_BAD_RESPONSE;
		on_done(c, &(struct http_result){.status = c->status});
		return;
	}
	if (!c->st.finished) {
		set_err(c, LLM_E_CUT,
		        "the stream from %s ended before the model finished (after %zu bytes of "
		        "answer)",
		        c->url, c->st.text.len);
		json_object_object_add(err_data(c), "receivedBytes",
		                       json_object_new_int64((int64_t)c->st.text.len));
	}
	finish(c);
}

/* A chat with cfg's settings copied in; NULL on OOM. */
static struct llm_chat *chat_new(struct http *h, const struct llm_config *cfg, size_t body_max,
                                 size_t text_max)
{
	struct llm_chat *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	if (llm_config_copy(cfg, &c->cfg) < 0) {
		free(c);
		return NULL;
	}
	c->http = h;
	c->ops = cfg->ops;
	c->url = c->cfg.url;
	c->model = c->cfg.model;
	c->connect_ms = cfg->connect_timeout_ms;
	c->idle_ms = cfg->idle_timeout_ms;
	c->total_ms = cfg->total_timeout_ms;
	c->st.prompt_tokens = c->st.completion_tokens = -1;
	buf_init(&c->line, LINE_MAX_BYTES);
	buf_init(&c->body, body_max);
	buf_init(&c->st.text, text_max);
	buf_init(&c->st.event, LINE_MAX_BYTES);
	return c;
}

/* A request that could not start: done gets the reason on the next loop
 * turn, as if the server had failed, never from inside the start call. */
static void on_failed_start(struct loop *loop, void *data)
{
	(void)loop;
	struct llm_chat *c = data;
	c->later = NULL;
	finish(c);
}

/* Send the chat request; a failure a person can act on is c's error. */
static int start_chat(struct llm_chat *c, const char *body)
{
	struct llm_request r;
	int e = prepare(c, LLM_REQ_CHAT, &r);
	if (e == 0)
		e = send_request(c, &r, "POST", body, c->total_ms);
	if (e == 0)
		log_debug("llm: %s %s model %s", c->ops->name, r.url, c->model);
	llm_request_wipe(&r);
	return e;
}

/* A cached answer streams out as the model's would, a line at a time. */
static void replay_cached(struct llm_chat *c, const struct llm_cache_entry *e)
{
	const char *p = e->answer, *end = e->answer + e->len;
	while (p < end && c->cb.delta) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		c->cb.delta(c->data, p, n);
		p += n;
	}
	struct llm_answer a = {
	    .text = e->answer,
	    .len = e->len,
	    .finish_reason = e->finish_reason[0] ? e->finish_reason : NULL,
	    .prompt_tokens = e->prompt_tokens,
	    .completion_tokens = e->completion_tokens,
	    .cached = true,
	};
	c->cb.done(c->data, &a, NULL);
	chat_free(c);
}

static void on_cache_lookup(void *data, const struct llm_cache_entry *e)
{
	struct llm_chat *c = data;
	c->lookup = NULL;
	if (e) {
		log_debug("llm: %s model %s answered from the cache", c->ops->name, c->model);
		replay_cached(c, e);
		return;
	}
	_cleanup_free_ char *body = steal_pointer(&c->pending_body);
	int r = start_chat(c, body);
	if (r < 0) {
		/* Not inside llm_chat_start any more: done may run now. */
		if (!c->err.kind)
			set_err(c, LLM_E_CONFIG, "cannot start the request to %s (%s)", c->url,
			        strerror(-r));
		finish(c);
	}
}

int llm_chat_start(struct http *h, const struct llm_config *cfg, json_object *messages,
                   const struct llm_chat_callbacks *cb, void *data, struct llm_chat **ret_chat)
{
	struct llm_chat *c = chat_new(
	    h, cfg, ERROR_BODY_MAX > cfg->max_response ? ERROR_BODY_MAX : cfg->max_response,
	    cfg->max_response);
	if (!c)
		return -ENOMEM;
	c->cb = *cb;
	c->data = data;
	c->st.emit = forward_delta;
	c->st.emit_data = c;
	_cleanup_free_ char *body = c->ops->chat_body(&c->cfg, messages);
	if (!body) {
		chat_free(c);
		return -ENOMEM;
	}
	if (cfg->cache) {
		/* The file is read on a thread; the request waits for a miss. */
		llm_cache_key(&c->cfg, messages, c->cache_key);
		c->pending_body = steal_pointer(&body);
		if (llm_cache_lookup_start(http_loop(h), c->cache_key, cfg->max_response,
		                           on_cache_lookup, c, &c->lookup) == 0) {
			*ret_chat = c;
			return 0;
		}
		/* No cache directory (no HOME) or no thread: ask the model. */
		c->lookup = NULL;
		body = steal_pointer(&c->pending_body);
	}
	int e = start_chat(c, body);
	if (e < 0 && c->err.kind) {
		/* A reason a person can act on (a setting, an old libcurl). */
		c->req = NULL;
		c->later = loop_timer_start(http_loop(h), 0, on_failed_start, c);
		if (!c->later) {
			chat_free(c);
			return -ENOMEM;
		}
		*ret_chat = c;
		return 0;
	}
	if (e < 0) {
		chat_free(c);
		return e;
	}
	*ret_chat = c;
	return 0;
}

int llm_models_start(struct http *h, const struct llm_config *cfg,
                     void (*done)(void *data, json_object *models, const struct llm_error *err),
                     void *data, struct llm_chat **ret_chat)
{
	struct llm_chat *c = chat_new(h, cfg, ERROR_BODY_MAX, 1);
	if (!c)
		return -ENOMEM;
	c->models_done = done;
	c->data = data;
	int r = list_models(c);
	if (r < 0) {
		chat_free(c);
		return r;
	}
	*ret_chat = c;
	return 0;
}

void llm_chat_cancel(struct llm_chat *c)
{
	if (!c)
		return;
	http_request_cancel(c->req);
	chat_free(c);
}

json_object *llm_error_data(const struct llm_error *err)
{
	json_object *d = err->data ? json_copy(err->data) : json_object_new_object();
	if (!d)
		d = json_object_new_object();
	json_object_object_add(d, "kind", json_object_new_string(err->kind ? err->kind : "error"));
	return d;
}
