/* llm.h: talking to a model server. A provider (Ollama's native chat API,
 * the OpenAI-compatible chat completions API, Anthropic's Messages API,
 * Amazon Bedrock's Converse API) is a struct llm_ops chosen
 * once from the configuration; callers only see llm_chat_start() with its
 * streamed deltas and one final result, and never ask which provider
 * answered. Every failure carries a stable kind (LLM_E_*) that becomes the
 * JSON-RPC error's data.kind, and a sentence that says what to do. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

struct loop;
struct http;
struct llm_chat;

/* Stable failure kinds (data.kind in errors; see docs/llm.md). */
#define LLM_E_CONFIG        "config"            /* the llm section is unusable */
#define LLM_E_UNREACHABLE   "unreachable"       /* cannot connect to the URL */
#define LLM_E_MODEL         "model_not_found"   /* the server lacks the model */
#define LLM_E_UNAUTHORIZED  "unauthorized"      /* HTTP 401 */
#define LLM_E_FORBIDDEN     "forbidden"         /* HTTP 403 */
#define LLM_E_RATE_LIMITED  "rate_limited"      /* HTTP 429 */
#define LLM_E_SERVER        "server_error"      /* HTTP 5xx */
#define LLM_E_HTTP          "http_error"        /* any other HTTP status */
#define LLM_E_STALLED       "stalled"           /* no byte within the idle timeout */
#define LLM_E_TIMEOUT       "timeout"           /* the whole answer took too long */
#define LLM_E_CUT           "stream_cut"        /* the stream ended mid-answer */
#define LLM_E_BAD_RESPONSE  "bad_response"      /* the body is not the wire format */
#define LLM_E_TOO_LARGE     "too_large"         /* the answer exceeds maxResponseBytes */
#define LLM_E_NO_CODE       "no_code"           /* the answer holds no code */
#define LLM_E_OVERLOADED    "overloaded"        /* the service is overloaded (529) */
#define LLM_E_REQ_TOO_LARGE "request_too_large" /* the request is too big (413) */
#define LLM_E_INVALID       "invalid_request"   /* the server names a fault in the request */

struct llm_ops;

/* The resolved configuration of one model endpoint. */
struct llm_config {
	const struct llm_ops *ops;
	char *provider; /* "ollama", "openai", "anthropic" or "bedrock" */
	char *url;      /* base URL without the API path */
	char *model;
	char *api_key; /* NULL when none; never logged */
	/* Bedrock's AWS credentials (NULL when none; never logged) and
	 * region; the key pair is used only when api_key is NULL. */
	char *aws_access_key, *aws_secret_key, *aws_session_token;
	char *region;
	/* The answer cache (llm/cache.h): off unless llm.cache is true. */
	bool cache;
	uint64_t cache_max_bytes;
	double temperature; /* < 0: the server's default */
	int64_t max_tokens; /* 0: the server's default */
	uint64_t connect_timeout_ms;
	uint64_t idle_timeout_ms;
	uint64_t total_timeout_ms;
	size_t max_response;    /* bytes of answer text kept */
	int64_t history_tokens; /* session history budget */
	/* Where each value came from ("initializationOptions", "config",
	 * "env", "default"), for `kiln shell`'s banner and the docs. */
	const char *url_source;
};

/* Resolve the effective configuration: section (the merged "llm" section
 * of k->config, file + initializationOptions; may be NULL) over the
 * environment (KILN_LLM_PROVIDER, KILN_LLM_URL, KILN_MODEL, KILN_API_KEY)
 * over the defaults (Ollama at http://127.0.0.1:11434, qwen2.5-coder).
 * -EINVAL with a sentence in detail for an unknown provider or a bad
 * value. */
int llm_config_resolve(json_object *section, struct llm_config *ret, char *detail, size_t dsz);
void llm_config_release(struct llm_config *c);
/* A deep copy of c into *ret. -ENOMEM. */
int llm_config_copy(const struct llm_config *c, struct llm_config *ret);

/* A failure, or success (kind NULL). */
struct llm_error {
	const char *kind;  /* LLM_E_* or NULL */
	char message[512]; /* one or two sentences for a person */
	json_object *data; /* extra members for data (url, models, retryAfterMs,
	                    * status, serverMessage); owned by whoever holds it */
};

/* The outcome of one chat. */
struct llm_answer {
	const char *text; /* the whole answer */
	size_t len;
	const char *finish_reason;                /* "stop", "length", ... or NULL */
	int64_t prompt_tokens, completion_tokens; /* -1 when unknown */
	bool cached; /* replayed from the answer cache, no model was asked */
};

struct llm_chat_callbacks {
	/* A piece of the answer as it streams in (valid UTF-8 boundaries
	 * are not guaranteed). May be NULL. Must not free the chat. */
	void (*delta)(void *data, const char *text, size_t len);
	/* Once, never synchronously: err is NULL on success. Borrowed; the
	 * chat is freed right after. */
	void (*done)(void *data, const struct llm_answer *answer, const struct llm_error *err);
};

/* --- providers --------------------------------------------------------------- */

/* What a provider's stream parser reports per event. */
/* The largest JSON text the providers parse (a streamed line, an event or a
 * whole body; chat.c's buffers hold each to less before it gets here). */
#define LLM_JSON_MAX (64u << 20)

struct llm_stream {
	struct buf text; /* the answer so far */
	bool finished;   /* the provider's end-of-answer marker arrived */
	char finish_reason[32];
	int64_t prompt_tokens, completion_tokens;
	/* Set by the parser on an in-stream error or malformed event;
	 * err_type is the provider's own name for it ("overloaded_error",
	 * "throttlingException"), when it gave one. */
	const char *err_kind;
	char err_message[384];
	char err_type[64];
	size_t messages; /* binary streams: whole messages taken so far */
	/* Provider scratch: an SSE event's data lines gathered so far, or
	 * the bytes of an event-stream message not yet complete. */
	struct buf event;
	/* Deltas go here (llm.c forwards them to the caller). */
	void (*emit)(void *data, const char *text, size_t len);
	void *emit_data;
};

/* One HTTP request as a provider wants it sent (llm_ops.prepare). */
struct llm_request {
	char url[2048];
	/* The path sent on the request line when it must differ from the
	 * URL's (see bedrock.c: SigV4 with a libcurl before 8.9), or "". */
	char target[2048];
	const char *headers[8]; /* NULL-terminated "Name: value" lines */
	char hbuf[7][4096];     /* the lines (a session token is long); wiped */
	unsigned nheaders;
	char sigv4[128];   /* CURLOPT_AWS_SIGV4's provider string, or "" */
	char userpwd[512]; /* SigV4's "access:secret"; wiped after use */
};

enum llm_request_kind { LLM_REQ_CHAT, LLM_REQ_MODELS };

struct llm_ops {
	const char *name;
	const char *default_url; /* NULL: the provider's resolve sets it */
	const char *default_model;
	/* A suffix people write after the base URL that kiln drops ("/v1"). */
	const char *base_suffix;
	/* The path of the chat endpoint and of the model list. */
	const char *chat_path;
	const char *models_path;
	/* Build the chat request body for messages (array of {role, content}).
	 * Returns a new string (free it) or NULL on OOM. */
	char *(*chat_body)(const struct llm_config *c, json_object *messages);
	/* Provider settings after the common ones (may be NULL): c->url is
	 * NULL when neither llm.url nor KILN_LLM_URL gave one. -EINVAL with a
	 * sentence in detail, -ENOMEM. */
	int (*resolve)(struct llm_config *c, json_object *section, char *detail, size_t dsz);
	/* Fill r with the URL, headers and signing of a chat or model-list
	 * request. NULL: url + chat_path or models_path, and
	 * "Authorization: Bearer" with the API key. -EINVAL with a sentence
	 * in detail when the configuration cannot make one. */
	int (*prepare)(const struct llm_config *c, enum llm_request_kind kind,
	               struct llm_request *r, char *detail, size_t dsz);
	/* Parse one complete line of the streamed body (without its
	 * newline). Returns 0, or < 0 after setting err_kind. */
	int (*stream_line)(struct llm_stream *s, const char *line, size_t len);
	/* A binary stream instead of lines (Bedrock's event stream): every
	 * chunk as it arrives, then stream_end once the body is complete.
	 * NULL for line-based providers. 0 or < 0 after setting err_kind. */
	int (*stream_bytes)(struct llm_stream *s, const char *chunk, size_t len);
	int (*stream_end)(struct llm_stream *s);
	/* Parse a whole non-streamed body (a server that ignored stream:
	 * true). Returns 0 or < 0 after setting err_kind. */
	int (*whole_body)(struct llm_stream *s, const char *body, size_t len);
	/* The server's own message in an error body, or NULL (borrowed from
	 * obj). */
	const char *(*error_message)(json_object *obj);
	/* The provider's own name for the error in a body
	 * ("rate_limit_error"), or NULL. May be NULL. */
	const char *(*error_type)(json_object *obj);
	/* The kind for a provider error type (from error_type or a header
	 * such as x-amzn-ErrorType), or NULL to go by the HTTP status. May be
	 * NULL. */
	const char *(*error_kind)(const char *type, const char *message);
	/* What to do about a 401 or 403 ("set llm.apiKey or KILN_API_KEY"). */
	const char *auth_hint;
	/* The server in "cannot reach X at URL", and how to start it or
	 * where to point kiln instead. */
	const char *label;
	const char *start_hint;
	/* Append the model names listed in a models-path body to names. */
	void (*model_names)(json_object *body, json_object *names);
	/* How a person gets the model onto the server ("ollama pull M"). */
	void (*pull_hint)(const struct llm_config *c, char *out, size_t n);
};

extern const struct llm_ops llm_ollama_ops;
extern const struct llm_ops llm_openai_ops;
extern const struct llm_ops llm_anthropic_ops;
extern const struct llm_ops llm_bedrock_ops;

/* For providers' prepare: r with url = c->url + path and no headers. */
void llm_request_init(struct llm_request *r, const struct llm_config *c, const char *path);
/* Add a header line to r (printf-style); -E2BIG when r is full. */
int llm_request_header(struct llm_request *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Wipe r's secrets (header lines, credentials). */
void llm_request_wipe(struct llm_request *r);

/* The messages as the Messages and Converse APIs take them: the system
 * messages' contents joined by blank lines into *ret_system (new, NULL
 * when none), and the rest as turns that alternate between "user" and
 * "assistant" and start with "user" (consecutive turns of one role are
 * joined). text_blocks: each turn's content is [{"text": ...}] (Converse)
 * instead of a string (Messages). New array, NULL on OOM. */
json_object *llm_turns(json_object *messages, bool text_blocks, char **ret_system);

/* Look a provider up by name ("ollama", "openai", "anthropic",
 * "bedrock"); NULL when unknown. */
const struct llm_ops *llm_provider(const char *name);

/* --- chats ------------------------------------------------------------------- */

/* Start a streamed chat. messages is borrowed (serialised at once); c is
 * copied. done is called once, never from inside this call. -ENOMEM. */
int llm_chat_start(struct http *h, const struct llm_config *c, json_object *messages,
                   const struct llm_chat_callbacks *cb, void *data, struct llm_chat **ret_chat);
/* Ask the server which models it has (Ollama /api/tags, OpenAI
 * /v1/models): done gets the names (borrowed array) or the error, once,
 * never synchronously. Cancel with llm_chat_cancel(). */
int llm_models_start(struct http *h, const struct llm_config *c,
                     void (*done)(void *data, json_object *models, const struct llm_error *err),
                     void *data, struct llm_chat **ret_chat);
/* Abort a chat now; done is not called. NULL is a no-op. */
void llm_chat_cancel(struct llm_chat *chat);

/* Put err's kind, message and data into a JSON-RPC error data object
 * (new, yours). */
json_object *llm_error_data(const struct llm_error *err);

/* --- answers --------------------------------------------------------------- */

/* The code found in a model's answer. */
struct llm_code {
	char *code;      /* ends with a newline */
	char *lang;      /* the fence's tag as written, or NULL */
	char *prose;     /* the text outside the code, trimmed; NULL when none */
	unsigned blocks; /* fenced blocks taken (0: the answer was bare code) */
	bool truncated;  /* the last fence was never closed */
};

/* Find the code in an answer: fenced blocks (``` or ~~~, with or without
 * a language tag; several blocks for language are joined in order; blocks
 * tagged as another language or as output are left out unless nothing
 * else is there), prose around them, a fence the answer never closed,
 * <think> sections (dropped), or a bare answer that is all code.
 * language ("python", "bash", ...) may be NULL. -ENOENT when the answer
 * holds no code, -ENOMEM. */
int llm_extract_code(const char *text, size_t len, const char *language, struct llm_code *ret);
void llm_code_release(struct llm_code *c);

/* The canonical name of a fence tag: a language of the registry
 * (core/lang.h: "py" -> "python", "sh" -> "bash", "js" -> "javascript"),
 * else a language kiln does not run ("ts" -> "typescript") or "output"
 * for a run's output ("console", "text"); NULL when unknown. */
const char *llm_language_canonical(const char *tag);

/* --- prompts ------------------------------------------------------------------ */

/* What an intent's prompt is built from; every member but intent and
 * language may be NULL. */
struct llm_prompt {
	const char *intent;
	const char *language;
	const char *uri;
	const char *selection;        /* the text the answer replaces */
	const char *before, *after;   /* text around the cursor */
	json_object *workspace_files; /* array of strings (borrowed) */
	const char *profile;          /* the validator's active profile */
	json_object *history;         /* earlier {role, content} turns (borrowed) */
	/* What the box offers (sandbox/workspace/survey.h): the workspace folder the
	 * code runs in (its working directory), its files, one a line, and
	 * the notable modules that import there. */
	const char *workspace;
	const char *workspace_listing;
	const char *modules;
	/* The code runs in a live session holding these names (one line
	 * each), or NULL: a fresh process. */
	const char *session_state;
};

/* The chat messages for an intent: a system message that fixes the
 * language, the answer's shape and what the policy forbids, the session's
 * history, and the user's turn with its context. New array, NULL on OOM. */
json_object *llm_prompt_messages(const struct llm_prompt *p);
/* The messages asking to repair code that failed: prior (borrowed, the
 * messages that produced answer), the answer, and the failure report. */
json_object *llm_prompt_repair(json_object *prior, const char *answer, const char *language,
                               const char *failure);
/* The messages asking to explain a successful run in two sentences. */
json_object *llm_prompt_explain(const char *language, const char *code, const char *output);
