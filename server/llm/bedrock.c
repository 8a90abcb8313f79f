/* bedrock.c: Amazon Bedrock's Converse API as a struct llm_ops: POST
 * {url}/model/{modelId}/converse-stream, signed with AWS Signature Version
 * 4 by libcurl (CURLOPT_AWS_SIGV4) or carrying a Bedrock API key as a
 * bearer token. The answer is an AWS event stream (llm/eventstream.h)
 * whose messages are events (":event-type" messageStart,
 * contentBlockStart, contentBlockDelta {"delta":{"text":...}},
 * contentBlockStop, messageStop {"stopReason":...}, metadata {"usage":...})
 * or exceptions (":exception-type" throttlingException,
 * validationException, modelStreamErrorException, ...). HTTP errors carry
 * their type in x-amzn-ErrorType and {"message":...} as the body.
 *
 * Credentials and region are found as AWS's own tools find them
 * (llm/aws.c); they stay in memory, are zeroed when freed, and go nowhere
 * but to libcurl's signer. */
#include "llm/llm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/json.h"
#include "llm/aws.h"
#include "llm/eventstream.h"
#include "llm/http.h"
#include "llm/stream.h"

static char *bedrock_chat_body(const struct llm_config *c, json_object *messages)
{
	char *system = NULL;
	json_object *turns = llm_turns(messages, true, &system);
	if (!turns)
		return NULL;
	_cleanup_json_ json_object *req = json_object_new_object();
	json_object_object_add(req, "messages", turns);
	if (system) {
		json_object *sys = json_object_new_array();
		json_object *block = json_object_new_object();
		json_object_object_add(block, "text", json_object_new_string(system));
		json_object_array_add(sys, block);
		json_object_object_add(req, "system", sys);
	}
	free(system);
	json_object *inf = json_object_new_object();
	if (c->max_tokens > 0)
		json_object_object_add(inf, "maxTokens", json_object_new_int64(c->max_tokens));
	if (c->temperature >= 0)
		json_object_object_add(inf, "temperature", json_object_new_double(c->temperature));
	json_object_object_add(req, "inferenceConfig", inf);
	const char *s = json_compact(req);
	return s ? strdup(s) : NULL;
}

/* Percent-encode everything but RFC 3986's unreserved characters, as
 * SigV4 wants a path segment: "v1:0" -> "v1%3A0", an ARN's '/' -> "%2F".
 * twice: encode the '%' of that again ("%253A"). */
static int encode_segment(const char *s, bool twice, char *out, size_t n)
{
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		bool plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		             (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.' ||
		             *p == '~';
		if (plain) {
			if (o + 1 >= n)
				return -E2BIG;
			out[o++] = (char)*p;
			continue;
		}
		if (o + (twice ? 5 : 3) >= n)
			return -E2BIG;
		o += (size_t)snprintf(out + o, n - o, twice ? "%%25%02X" : "%%%02X", *p);
	}
	out[o] = '\0';
	return 0;
}

static int bedrock_resolve(struct llm_config *c, json_object *section, char *detail, size_t dsz)
{
	return llm_aws_resolve(c, section, detail, dsz);
}

static int bedrock_prepare(const struct llm_config *c, enum llm_request_kind kind,
                           struct llm_request *r, char *detail, size_t dsz)
{
	bool sign = !c->api_key;
	if (kind == LLM_REQ_MODELS) {
		/* The model list is the control plane's ("bedrock", not
		 * "bedrock-runtime"); a configured URL serves both. */
		memset(r, 0, sizeof(*r));
		if (strcmp(c->url_source ? c->url_source : "default", "default") == 0)
			snprintf(r->url, sizeof(r->url),
			         "https://bedrock.%s.amazonaws.com/foundation-models", c->region);
		else
			snprintf(r->url, sizeof(r->url), "%s/foundation-models", c->url);
	} else {
		char once[1024], twice[1536];
		if (encode_segment(c->model, false, once, sizeof(once)) < 0 ||
		    encode_segment(c->model, true, twice, sizeof(twice)) < 0) {
			snprintf(detail, dsz, "llm.model is too long for a Bedrock model id");
			return -EINVAL;
		}
		/* AWS signs the path encoded once more than it is sent.
		 * libcurl before 8.9 signs the URL's path as it is, so kiln
		 * gives it the twice-encoded path to sign and sends the
		 * once-encoded one as the request target; 8.9 and later
		 * encode by themselves. */
		bool old_curl = sign && http_curl_version() < 0x080900;
		char path[1700];
		snprintf(path, sizeof(path), "/model/%s/converse-stream", old_curl ? twice : once);
		llm_request_init(r, c, path);
		if (old_curl) {
			/* The target is the URL's path: a base URL's own path
			 * comes first. */
			const char *host = strstr(c->url, "://");
			const char *base = host ? strchr(host + 3, '/') : NULL;
			snprintf(r->target, sizeof(r->target), "%s/model/%s/converse-stream",
			         base ? base : "", once);
		}
		if (llm_request_header(r, "Content-Type: application/json") < 0 ||
		    llm_request_header(r, "Accept: application/vnd.amazon.eventstream") < 0)
			return -E2BIG;
	}
	if (!sign)
		return llm_request_header(r, "Authorization: Bearer %s", c->api_key) < 0 ? -E2BIG
		                                                                         : 0;
	snprintf(r->sigv4, sizeof(r->sigv4), "aws:amz:%s:bedrock", c->region);
	if ((size_t)snprintf(r->userpwd, sizeof(r->userpwd), "%s:%s", c->aws_access_key,
	                     c->aws_secret_key) >= sizeof(r->userpwd)) {
		snprintf(detail, dsz, "the AWS access key pair is too long");
		return -EINVAL;
	}
	/* libcurl 7.88 signs every header given: the token is covered. */
	if (c->aws_session_token &&
	    llm_request_header(r, "X-Amz-Security-Token: %s", c->aws_session_token) < 0) {
		snprintf(detail, dsz, "AWS_SESSION_TOKEN is too long");
		return -EINVAL;
	}
	return 0;
}

static const char *bedrock_error_message(json_object *obj)
{
	const char *msg;
	if (json_get_string(obj, "message", &msg) == 0 ||
	    json_get_string(obj, "Message", &msg) == 0)
		return msg;
	return NULL;
}

static const char *bedrock_error_type(json_object *obj)
{
	const char *t;
	if (json_get_string(obj, "__type", &t) < 0)
		return NULL;
	/* "com.amazon.coral.service#UnrecognizedClientException" */
	const char *hash = strrchr(t, '#');
	return hash ? hash + 1 : t;
}

/* Bedrock's error and exception names (HTTP errors say
 * "ThrottlingException", stream exceptions "throttlingException"). */
static const char *bedrock_error_kind(const char *type, const char *message)
{
	static const struct {
		const char *type, *kind;
	} map[] = {
	    {"ThrottlingException", LLM_E_RATE_LIMITED},
	    {"ServiceQuotaExceededException", LLM_E_RATE_LIMITED},
	    {"ServiceUnavailableException", LLM_E_OVERLOADED},
	    {"ModelNotReadyException", LLM_E_OVERLOADED},
	    {"ModelTimeoutException", LLM_E_TIMEOUT},
	    {"ModelStreamErrorException", LLM_E_SERVER},
	    {"ModelErrorException", LLM_E_SERVER},
	    {"InternalServerException", LLM_E_SERVER},
	    {"AccessDeniedException", LLM_E_FORBIDDEN},
	    {"UnrecognizedClientException", LLM_E_UNAUTHORIZED},
	    {"InvalidSignatureException", LLM_E_UNAUTHORIZED},
	    {"IncompleteSignatureException", LLM_E_UNAUTHORIZED},
	    {"ExpiredTokenException", LLM_E_UNAUTHORIZED},
	    {"MissingAuthenticationTokenException", LLM_E_UNAUTHORIZED},
	    {"ResourceNotFoundException", LLM_E_MODEL},
	};
	if (strcasecmp(type, "ValidationException") == 0)
		/* "The provided model identifier is invalid." */
		return message && strcasestr(message, "model identifier") ? LLM_E_MODEL
		                                                          : LLM_E_INVALID;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcasecmp(map[i].type, type) == 0)
			return map[i].kind;
	return NULL;
}

static void usage(struct llm_stream *s, json_object *u)
{
	json_get_int64(u, "inputTokens", &s->prompt_tokens);
	json_get_int64(u, "outputTokens", &s->completion_tokens);
}

static bool named(const char *v, size_t n, const char *name)
{
	return v && n == strlen(name) && memcmp(v, name, n) == 0;
}

static int bad(struct llm_stream *s, const char *what, const char *a, size_t alen)
{
	s->err_kind = LLM_E_BAD_RESPONSE;
	snprintf(s->err_message, sizeof(s->err_message), "%s (%.*s)", what,
	         (int)(alen < 64 ? alen : 64), a);
	return -1;
}

/* A stream exception: its type and message, as kiln's kind. */
static int exception(struct llm_stream *s, const char *type, size_t tlen, json_object *payload,
                     const char *msg_header, size_t mlen)
{
	snprintf(s->err_type, sizeof(s->err_type), "%.*s", (int)tlen, type);
	const char *msg = bedrock_error_message(payload);
	if (msg)
		snprintf(s->err_message, sizeof(s->err_message), "%s", msg);
	else if (msg_header)
		snprintf(s->err_message, sizeof(s->err_message), "%.*s", (int)mlen, msg_header);
	else
		snprintf(s->err_message, sizeof(s->err_message), "no message");
	const char *kind = bedrock_error_kind(s->err_type, s->err_message);
	s->err_kind = kind ? kind : LLM_E_SERVER;
	return -1;
}

static int on_message(void *data, const struct llm_es_message *m)
{
	struct llm_stream *s = data;
	s->messages++;
	size_t tl = 0, el = 0, xl = 0, ml = 0;
	const char *mtype = llm_es_string(m, ":message-type", &tl);
	const char *etype = llm_es_string(m, ":event-type", &el);
	const char *xtype = llm_es_string(m, ":exception-type", &xl);
	json_object *obj = NULL;
	char why[160] = "";
	if (m->payload_len && (json_parse_strict(m->payload, m->payload_len, LLM_JSON_MAX, &obj,
	                                         why, sizeof(why)) < 0 ||
	                       !obj)) {
		json_object_put(obj);
		return bad(s, "an event of Bedrock's converse-stream is not JSON",
		           etype ? etype : "?", etype ? el : 1);
	}
	int r = 0;
	if (named(mtype, tl, "exception")) {
		r = exception(s, xtype ? xtype : "exception", xtype ? xl : 9, obj, NULL, 0);
	} else if (named(mtype, tl, "error")) {
		const char *code = llm_es_string(m, ":error-code", &xl);
		const char *msg = llm_es_string(m, ":error-message", &ml);
		r = exception(s, code ? code : "error", code ? xl : 5, obj, msg, ml);
	} else if (!named(mtype, tl, "event") || !etype) {
		r = bad(s, "a message of Bedrock's converse-stream is not an event",
		        mtype ? mtype : "no :message-type", mtype ? tl : 17);
	} else if (named(etype, el, "contentBlockDelta")) {
		const char *text;
		if (json_get_string(json_get(obj, "delta"), "text", &text) == 0)
			r = llm_stream_append(s, text);
	} else if (named(etype, el, "messageStop")) {
		const char *reason;
		if (json_get_string(obj, "stopReason", &reason) == 0)
			llm_stream_stop_reason(s, reason);
		s->finished = true;
	} else if (named(etype, el, "metadata")) {
		usage(s, json_get(obj, "usage"));
	}
	/* messageStart, contentBlockStart, contentBlockStop: nothing to
	 * take (a tool-use block's start has no text). */
	json_object_put(obj);
	return r;
}

static int bedrock_stream_bytes(struct llm_stream *s, const char *chunk, size_t len)
{
	char why[160];
	int r = llm_es_feed(&s->event, s->event.max, chunk, len, on_message, s, why, sizeof(why));
	if (r < 0 && !s->err_kind && s->messages == 0) {
		/* The first bytes are not a message at all: a proxy's page. */
		s->err_kind = LLM_E_BAD_RESPONSE;
		snprintf(s->err_message, sizeof(s->err_message),
		         "the body from Bedrock's converse-stream is not an AWS event stream (%s)",
		         why);
	} else if (r < 0 && !s->err_kind) {
		s->err_kind = LLM_E_BAD_RESPONSE;
		snprintf(s->err_message, sizeof(s->err_message),
		         "the event stream from Bedrock's converse-stream is broken after %zu "
		         "messages: %s",
		         s->messages, why);
	}
	return r < 0 ? -1 : 0;
}

static int bedrock_stream_end(struct llm_stream *s)
{
	/* A message cut in the middle leaves its start in event; the
	 * missing messageStop then makes the answer a stream_cut. */
	(void)s;
	return 0;
}

/* The non-streamed Converse answer ({"output":{"message":{"content":
 * [{"text":...}]}},"stopReason":...,"usage":{...}}), or an error body. */
static int bedrock_whole_body(struct llm_stream *s, const char *body, size_t len)
{
	json_object *obj = NULL;
	char why[160] = "";
	if (json_parse_strict(body, len, LLM_JSON_MAX, &obj, why, sizeof(why)) < 0 || !obj) {
		json_object_put(obj);
		s->err_kind = LLM_E_BAD_RESPONSE;
		snprintf(s->err_message, sizeof(s->err_message),
		         "the body from Bedrock's Converse API is not JSON (%s)", why);
		return -1;
	}
	int r = 0;
	json_object *content = json_get(json_get(json_get(obj, "output"), "message"), "content");
	if (!json_object_is_type(content, json_type_array)) {
		const char *msg = bedrock_error_message(obj);
		if (msg) {
			s->err_kind = LLM_E_SERVER;
			snprintf(s->err_message, sizeof(s->err_message), "%s", msg);
		} else {
			s->err_kind = LLM_E_BAD_RESPONSE;
			snprintf(
			    s->err_message, sizeof(s->err_message),
			    "an answer of Bedrock's Converse API lacks output.message.content");
		}
		r = -1;
	} else {
		size_t n = json_object_array_length(content);
		for (size_t i = 0; i < n && r == 0; i++) {
			const char *text;
			if (json_get_string(json_object_array_get_idx(content, i), "text", &text) ==
			    0)
				r = llm_stream_append(s, text);
		}
		const char *reason;
		if (json_get_string(obj, "stopReason", &reason) == 0)
			llm_stream_stop_reason(s, reason);
		usage(s, json_get(obj, "usage"));
		s->finished = r == 0;
	}
	json_object_put(obj);
	return r;
}

static int bedrock_stream_line(struct llm_stream *s, const char *line, size_t len)
{
	/* Never called: the stream is binary (stream_bytes). */
	(void)line, (void)len;
	s->err_kind = LLM_E_BAD_RESPONSE;
	snprintf(s->err_message, sizeof(s->err_message), "Bedrock's stream is not lines");
	return -1;
}

static void bedrock_model_names(json_object *body, json_object *names)
{
	json_object *list = json_get(body, "modelSummaries");
	size_t n = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
	for (size_t i = 0; i < n; i++) {
		const char *id;
		if (json_get_string(json_object_array_get_idx(list, i), "modelId", &id) == 0)
			json_object_array_add(names, json_object_new_string(id));
	}
}

static void bedrock_pull_hint(const struct llm_config *c, char *out, size_t n)
{
	(void)c;
	snprintf(out, n,
	         "enable the model under Model access in the Bedrock console for this region, or "
	         "set llm.model to a model id (or inference profile) it has");
}

const struct llm_ops llm_bedrock_ops = {
    .name = "bedrock",
    .default_url = NULL, /* https://bedrock-runtime.{region}.amazonaws.com */
    .default_model = "anthropic.claude-3-5-sonnet-20240620-v1:0",
    .chat_path = "/model/{modelId}/converse-stream",
    .models_path = "/foundation-models",
    .resolve = bedrock_resolve,
    .prepare = bedrock_prepare,
    .chat_body = bedrock_chat_body,
    .stream_line = bedrock_stream_line,
    .stream_bytes = bedrock_stream_bytes,
    .stream_end = bedrock_stream_end,
    .whole_body = bedrock_whole_body,
    .error_message = bedrock_error_message,
    .error_type = bedrock_error_type,
    .error_kind = bedrock_error_kind,
    .auth_hint = "check the AWS credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
                 "AWS_SESSION_TOKEN, AWS_PROFILE, ~/.aws/credentials) or the Bedrock API key "
                 "(llm.apiKey, AWS_BEARER_TOKEN_BEDROCK)",
    .label = "Amazon Bedrock",
    .start_hint = "Check the network and the region (AWS_REGION), or point llm.url / "
                  "KILN_LLM_URL at a reachable Bedrock runtime endpoint",
    .model_names = bedrock_model_names,
    .pull_hint = bedrock_pull_hint,
};
