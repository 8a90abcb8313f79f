/* intent.c: intent/run (a plain-words intent becomes a validated proposal,
 * streamed while the model writes) and intent/approve (the person says
 * yes: the proposal runs in the sandbox exactly like snippet/run, and with
 * repair a failed run goes back to the model until the code works, the
 * verdict needs the person again, or the attempts run out). Nothing a
 * model wrote runs without intent/approve. Also the document notifications
 * that tell kiln a proposal has gone stale. */
#include "methods/methods.h"

#include <errno.h>
#include <sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "core/buf.h"
#include "core/json.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "intent/intent.h"
#include "kiln.h"
#include "llm/llm.h"
#include "rpc/message.h"
#include "rpc/peer.h"
#include "sandbox/run.h"
#include "validate/validate.h"

/* Stable data.kind values of intent errors beyond the model's (llm.h). */
#define E_UNKNOWN_PROPOSAL "unknown_proposal"
#define E_CONFLICT         "conflict"
#define E_DENIED           "denied"
#define E_LANGUAGE         "language"
#define E_SANDBOX          "sandbox"
#define E_VALIDATOR        "validator"

#define DEFAULT_MAX_ATTEMPTS 3
#define MAX_ATTEMPTS_LIMIT   10
/* intent/partial covers the first this many bytes of an answer. */
#define PARTIAL_MAX (256u << 10)
/* How much of a failed run's output goes back to the model. */
#define FAILURE_TAIL 3000

static void error_kind(struct rpc_call *call, int code, const char *kind, json_object *data,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void error_kind(struct rpc_call *call, int code, const char *kind, json_object *data,
                       const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!data)
		data = json_object_new_object();
	json_object_object_add(data, "kind", json_object_new_string(kind));
	rpc_call_error(call, code, msg, data);
}

static void progress(struct kiln *k, json_object *token, const char *kind, const char *message)
{
	if (!token)
		return;
	json_object *v = json_object_new_object();
	json_object_object_add(v, "kind", json_object_new_string(kind));
	if (strcmp(kind, "begin") == 0) {
		json_object_object_add(v, "title", json_object_new_string("kiln"));
		json_object_object_add(v, "cancellable", json_object_new_boolean(1));
	}
	if (message)
		json_object_object_add(v, "message", json_object_new_string(message));
	json_object *p = json_object_new_object();
	json_object_object_add(p, "token", json_object_get(token));
	json_object_object_add(p, "value", v);
	rpc_notify(k->rpc, "$/progress", p);
}

static const char *active_profile(struct kiln *k)
{
	const char *profile = NULL;
	json_get_string(config_section(k->config, "validator"), "profile", &profile);
	return profile;
}

static int validate_code(struct kiln *k, const char *language, const char *code,
                         json_object **ret_diags, enum val_verdict *ret_verdict, char *detail,
                         size_t dsz)
{
	struct validator *v = k->validator;
	if (!v) {
		snprintf(detail, dsz, "the validator is not available");
		return -ENODEV;
	}
	return val_check(v, language, code, strlen(code), active_profile(k), k->encoding, ret_diags,
	                 ret_verdict, detail, dsz);
}

static int resolve_llm(struct kiln *k, struct llm_config *cfg, char *detail, size_t dsz)
{
	return llm_config_resolve(config_section(k->config, "llm"), cfg, detail, dsz);
}

static unsigned config_max_attempts(struct kiln *k)
{
	int64_t n;
	if (json_get_int64(config_section(k->config, "intent"), "maxRepairAttempts", &n) == 0 &&
	    n >= 1 && n <= MAX_ATTEMPTS_LIMIT)
		return (unsigned)n;
	return DEFAULT_MAX_ATTEMPTS;
}

static void audit_proposal(struct kiln *k, const struct intent_proposal *p, const char *model)
{
	char hash[SHA256_DIGEST_STRING_LENGTH];
	SHA256Data((const uint8_t *)p->code, strlen(p->code), hash);
	_cleanup_json_ json_object *rec = json_object_new_object();
	json_object_object_add(rec, "proposalId", json_object_new_string(p->id));
	if (p->session_id)
		json_object_object_add(rec, "sessionId", json_object_new_string(p->session_id));
	if (p->uri)
		json_object_object_add(rec, "uri", json_object_new_string(p->uri));
	json_object_object_add(rec, "language", json_object_new_string(p->language));
	json_object_object_add(rec, "codeSha256", json_object_new_string(hash));
	json_object_object_add(rec, "verdict", json_object_new_string(p->verdict_name));
	json_object_object_add(rec, "attempt", json_object_new_int((int)p->attempt));
	if (model)
		json_object_object_add(rec, "model", json_object_new_string(model));
	intent_audit(k->intent, "proposal", rec);
}

/* Fill a proposal's code, verdict and diagnostics from an answer. Returns
 * 0, -ENOENT (no code), or another -errno with a sentence in detail. */
static int proposal_from_answer(struct kiln *k, struct intent_proposal *p, const char *answer,
                                size_t len, char *detail, size_t dsz)
{
	struct llm_code c;
	int r = llm_extract_code(answer, len, p->language, &c);
	if (r < 0) {
		snprintf(detail, dsz, "%s",
		         r == -ENOENT ? "the model's answer holds no code" : strerror(-r));
		return r;
	}
	p->code = steal_pointer(&c.code);
	p->explanation = steal_pointer(&c.prose);
	p->answer = strndup(answer, len);
	llm_code_release(&c);
	enum val_verdict verdict;
	r = validate_code(k, p->language, p->code, &p->diagnostics, &verdict, detail, dsz);
	if (r < 0)
		return r;
	p->verdict = verdict;
	p->verdict_name = val_verdict_name(verdict);
	r = intent_edit_build(p, k->encoding);
	if (r < 0)
		snprintf(detail, dsz, "the range or position is not in the document");
	return r;
}

/* ------------------------------------------------------------------------ */
/* intent/run                                                               */
/* ------------------------------------------------------------------------ */

struct run_job {
	struct kiln *k;
	struct rpc_call *call;
	struct llm_chat *chat;
	struct llm_config cfg;
	json_object *messages;
	json_object *token;
	json_object *req_id;
	char *intent, *language, *uri, *text, *session_id;
	json_object *range, *position;
	int64_t version;
	struct buf acc;  /* the answer so far, for intent/partial */
	size_t scanned;  /* acc bytes up to the last newline handled */
	struct buf sent; /* the code streamed so far */
	bool writing;
};

static void run_job_free(struct run_job *j)
{
	llm_config_release(&j->cfg);
	json_object_put(j->messages);
	json_object_put(j->token);
	json_object_put(j->req_id);
	json_object_put(j->range);
	json_object_put(j->position);
	free(j->intent);
	free(j->language);
	free(j->uri);
	free(j->text);
	free(j->session_id);
	buf_release(&j->acc);
	buf_release(&j->sent);
	free(j);
}

static void run_cancelled(void *data)
{
	struct run_job *j = data;
	llm_chat_cancel(j->chat);
	progress(j->k, j->token, "end", "cancelled");
	run_job_free(j);
}

/* Stream the code as it forms: at each completed line, extract from the
 * answer so far and send what was added since the last notification, or
 * the whole code with reset when the extraction changed its mind (a
 * second block began, say). Skipped while the client is not reading: the
 * next notification carries what was skipped, and the result has it all. */
static void partial(struct run_job *j)
{
	/* Each call scans the answer so far: past PARTIAL_MAX the cost would
	 * grow with the square of the answer, so the stream stops there. */
	if (rpc_peer_congested(j->k->peer) || j->scanned > PARTIAL_MAX)
		return;
	struct llm_code c;
	if (llm_extract_code(j->acc.data, j->scanned, j->language, &c) < 0)
		return;
	size_t n = strlen(c.code);
	bool extends =
	    n >= j->sent.len && memcmp(c.code, j->sent.data ? j->sent.data : "", j->sent.len) == 0;
	if (!extends || n > j->sent.len) {
		json_object *p = json_object_new_object();
		json_object_object_add(p, "requestId", json_object_get(j->req_id));
		if (extends) {
			json_object_object_add(p, "text",
			                       json_object_new_string_len(c.code + j->sent.len,
			                                                  (int)(n - j->sent.len)));
			json_object_object_add(p, "reset", json_object_new_boolean(0));
		} else {
			json_object_object_add(p, "text", json_object_new_string(c.code));
			json_object_object_add(p, "reset", json_object_new_boolean(1));
		}
		rpc_notify(j->k->rpc, "intent/partial", p);
		buf_reset(&j->sent);
		buf_append(&j->sent, c.code, n);
	}
	llm_code_release(&c);
}

static void run_delta(void *data, const char *text, size_t len)
{
	struct run_job *j = data;
	if (!j->writing) {
		j->writing = true;
		progress(j->k, j->token, "report", "writing");
	}
	if (buf_append(&j->acc, text, len) < 0)
		return; /* past the cap the chat itself fails */
	const char *nl = memrchr(text, '\n', len);
	if (!nl)
		return;
	j->scanned = j->acc.len - (len - (size_t)(nl - text) - 1);
	partial(j);
}

static void run_done(void *data, const struct llm_answer *a, const struct llm_error *err)
{
	struct run_job *j = data;
	struct kiln *k = j->k;
	j->chat = NULL;
	if (err) {
		progress(k, j->token, "end", err->kind);
		rpc_call_error(j->call, RPC_REQUEST_FAILED, err->message, llm_error_data(err));
		run_job_free(j);
		return;
	}
	progress(k, j->token, "report", "validating");
	struct intent_proposal *p = intent_proposal_new(k->intent);
	if (!p) {
		rpc_call_error(j->call, RPC_INTERNAL_ERROR, "out of memory", NULL);
		run_job_free(j);
		return;
	}
	p->language = strdup(j->language);
	p->uri = j->uri ? strdup(j->uri) : NULL;
	p->version = j->version;
	p->text = j->text ? strdup(j->text) : NULL;
	p->session_id = j->session_id ? strdup(j->session_id) : NULL;
	p->range = json_object_get(j->range);
	p->position = json_object_get(j->position);
	p->messages = json_object_get(j->messages);
	char detail[512] = "";
	int r = proposal_from_answer(k, p, a->text, a->len, detail, sizeof(detail));
	if (r < 0) {
		progress(k, j->token, "end", r == -ENOENT ? LLM_E_NO_CODE : "failed");
		json_object *d = json_object_new_object();
		if (r == -ENOENT) {
			json_object_object_add(d, "answer",
			                       json_object_new_string_len(
			                           a->text, (int)(a->len < 2000 ? a->len : 2000)));
			error_kind(j->call, RPC_REQUEST_FAILED, LLM_E_NO_CODE, d,
			           "the model answered without any %s code; rephrase the intent "
			           "or check that the model '%s' writes code",
			           j->language, j->cfg.model);
		} else if (r == -EINVAL && !p->diagnostics) {
			error_kind(j->call, RPC_INVALID_PARAMS, E_LANGUAGE, d, "%s", detail);
		} else {
			error_kind(j->call, RPC_REQUEST_FAILED, E_VALIDATOR, d, "%s", detail);
		}
		run_job_free(j);
		return;
	}
	/* The session remembers the intent and what the model wrote. */
	intent_session_add(k->intent, j->session_id, "user", j->intent, j->cfg.history_tokens);
	intent_session_add(k->intent, j->session_id, "assistant", p->answer, j->cfg.history_tokens);
	audit_proposal(k, p, j->cfg.model);
	json_object *res = intent_proposal_json(p);
	if (a->prompt_tokens >= 0 || a->completion_tokens >= 0) {
		json_object *u = json_object_new_object();
		json_object_object_add(u, "promptTokens", json_object_new_int64(a->prompt_tokens));
		json_object_object_add(u, "completionTokens",
		                       json_object_new_int64(a->completion_tokens));
		json_object_object_add(res, "usage", u);
	}
	progress(k, j->token, "end", p->verdict_name);
	rpc_call_reply(j->call, res);
	run_job_free(j);
}

/* Byte offset of an LSP Position in text; -EINVAL when it is not one. */
static int position_at(struct kiln *k, const char *text, size_t len, json_object *pos, size_t *ret)
{
	int64_t line, ch;
	if (json_get_int64(pos, "line", &line) < 0 || json_get_int64(pos, "character", &ch) < 0 ||
	    line < 0 || ch < 0 || line > UINT32_MAX || ch > UINT32_MAX)
		return -EINVAL;
	*ret = pos_offset(text, len, (uint32_t)line, (uint32_t)ch, k->encoding);
	return 0;
}

/* The text around the cursor, for the prompt. */
static void cursor_context(const char *text, size_t off, char **before, char **after)
{
	size_t len = strlen(text);
	*before = strndup(text, off);
	*after = strdup(text + (off <= len ? off : len));
}

int method_intent_run(struct rpc_call *call, json_object *params)
{
	struct kiln *k = rpc_call_ctx(call);
	const char *intent = NULL, *uri = NULL, *text = NULL, *lang = NULL, *session = NULL;
	json_object *doc = json_get(params, "textDocument");
	if (json_get_string(params, "intent", &intent) < 0 || !intent[0]) {
		rpc_call_error(call, RPC_INVALID_PARAMS,
		               "Invalid params: intent/run needs \"intent\", a non-empty string",
		               NULL);
		return 0;
	}
	int64_t version = -1;
	if (doc) {
		if (json_get_string(doc, "uri", &uri) < 0 ||
		    json_get_string(doc, "text", &text) == -EINVAL ||
		    json_get_int64(doc, "version", &version) == -EINVAL) {
			rpc_call_error(call, RPC_INVALID_PARAMS,
			               "Invalid params: textDocument needs uri (string), version "
			               "(integer) and text (string)",
			               NULL);
			return 0;
		}
		json_get_string(doc, "languageId", &lang);
	}
	const char *explicit_lang = NULL;
	if (json_get_string(params, "language", &explicit_lang) == 0)
		lang = explicit_lang;
	const char *canon = llm_language_canonical(lang ? lang : "python");
	if (!canon ||
	    (strcmp(canon, "python") && strcmp(canon, "bash") && strcmp(canon, "javascript"))) {
		error_kind(call, RPC_INVALID_PARAMS, E_LANGUAGE, NULL,
		           "kiln runs python, bash and javascript; '%s' is none of them (set "
		           "\"language\")",
		           lang);
		return 0;
	}
	json_object *range = json_get(params, "range");
	json_object *position = json_get(params, "position");
	json_get_string(params, "sessionId", &session);

	struct run_job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->k = k;
	j->call = call;
	char detail[512] = "";
	int r = resolve_llm(k, &j->cfg, detail, sizeof(detail));
	if (r < 0) {
		free(j);
		error_kind(call, RPC_INVALID_PARAMS, LLM_E_CONFIG, NULL, "%s", detail);
		return 0;
	}
	buf_init(&j->acc, j->cfg.max_response);
	buf_init(&j->sent, j->cfg.max_response);
	j->intent = strdup(intent);
	j->language = strdup(canon);
	j->uri = uri ? strdup(uri) : NULL;
	j->text = strdup(text ? text : "");
	j->session_id = session ? strdup(session) : NULL;
	j->version = version;
	j->range = json_copy(range);
	j->position = json_copy(position);
	j->token = json_copy(json_get(params, "workDoneToken"));
	j->req_id = json_copy(rpc_call_id(call));
	if (uri && version >= 0)
		intent_doc_seen(k->intent, uri, version);

	/* The selection, or the text around the cursor, goes into the prompt. */
	_cleanup_free_ char *selection = NULL, *before = NULL, *after = NULL;
	size_t len = strlen(j->text);
	size_t a = 0, b = 0;
	if ((range && (position_at(k, j->text, len, json_get(range, "start"), &a) < 0 ||
	               position_at(k, j->text, len, json_get(range, "end"), &b) < 0 || b < a)) ||
	    (!range && position && position_at(k, j->text, len, position, &a) < 0)) {
		run_job_free(j);
		rpc_call_error(call, RPC_INVALID_PARAMS,
		               "Invalid params: range is {start, end} with start <= end, position "
		               "{line, character}, each a non-negative integer",
		               NULL);
		return 0;
	}
	if (range) {
		if (b > a)
			selection = strndup(j->text + a, b - a);
	} else if (position) {
		cursor_context(j->text, a, &before, &after);
	} else if (len) {
		before = strdup(j->text);
	}
	json_object *files = json_get(params, "workspaceFiles");
	struct llm_prompt pr = {
	    .intent = intent,
	    .language = canon,
	    .uri = uri,
	    .selection = selection,
	    .before = before,
	    .after = after,
	    .workspace_files = json_object_is_type(files, json_type_array) ? files : NULL,
	    .profile = active_profile(k),
	    .history = intent_session_history(k->intent, session),
	};
	j->messages = llm_prompt_messages(&pr);
	static const struct llm_chat_callbacks cbs = {.delta = run_delta, .done = run_done};
	r = j->messages
	        ? llm_chat_start(intent_http(k->intent), &j->cfg, j->messages, &cbs, j, &j->chat)
	        : -ENOMEM;
	if (r < 0) {
		run_job_free(j);
		return r;
	}
	progress(k, j->token, "begin", "thinking");
	rpc_call_on_cancel(call, run_cancelled, j);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* intent/approve                                                           */
/* ------------------------------------------------------------------------ */

struct approve_job {
	struct kiln *k;
	struct rpc_call *call;
	char proposal_id[48]; /* the one being run or repaired */
	char first_id[48];
	unsigned attempt, max_attempts;
	bool repair, explain;
	json_object *limits;
	json_object *attempts;
	json_object *last_result;
	char *last_output;
	struct run *run;
	struct llm_chat *chat;
	struct llm_config cfg;
	bool have_cfg;
	struct buf explanation;
	json_object *token; /* workDoneToken, or NULL */
	bool progress_begun;
};

static void approve_free(struct approve_job *j)
{
	if (j->run)
		run_cancel(j->run);
	llm_chat_cancel(j->chat);
	if (j->have_cfg)
		llm_config_release(&j->cfg);
	if (j->progress_begun)
		progress(j->k, j->token, "end", NULL);
	json_object_put(j->token);
	json_object_put(j->limits);
	json_object_put(j->attempts);
	json_object_put(j->last_result);
	free(j->last_output);
	buf_release(&j->explanation);
	free(j);
}

static void approve_cancelled(void *data)
{
	approve_free(data);
}

static void attempt_note(struct approve_job *j, const char *stage, json_object *extra)
{
	json_object *p = extra ? extra : json_object_new_object();
	json_object_object_add(p, "proposalId", json_object_new_string(j->proposal_id));
	json_object_object_add(p, "attempt", json_object_new_int((int)j->attempt));
	json_object_object_add(p, "stage", json_object_new_string(stage));
	rpc_notify(j->k->rpc, "intent/attempt", p);
	/* The same stages as work-done progress, for editors that show it. */
	if (j->token && (!strcmp(stage, "running") || !strcmp(stage, "repairing"))) {
		char msg[64];
		snprintf(msg, sizeof(msg), "%s (attempt %u)", stage, j->attempt);
		progress(j->k, j->token, j->progress_begun ? "report" : "begin", msg);
		j->progress_begun = true;
	}
}

/* Whether a run result is a failure worth a repair, and why, in words the
 * model can act on. The sandbox's result says how the process ended. */
static bool run_failed(json_object *res, char *why, size_t n)
{
	bool b;
	int64_t code;
	const char *s;
	if ((json_get_bool(res, "timedOut", &b) == 0 && b) ||
	    (json_get_string(res, "reason", &s) == 0 && strstr(s, "timeout"))) {
		snprintf(why, n, "it was stopped after exceeding its time limit");
		return true;
	}
	if (json_get_string(res, "signal", &s) == 0 && s[0]) {
		snprintf(why, n, "it was killed by signal %s", s);
		return true;
	}
	if (json_get_int64(res, "signal", &code) == 0 && code > 0) {
		snprintf(why, n, "it was killed by signal %lld", (long long)code);
		return true;
	}
	if (json_get_int64(res, "exitCode", &code) == 0 && code != 0) {
		snprintf(why, n, "it exited with status %lld", (long long)code);
		return true;
	}
	if (json_get_bool(res, "ok", &b) == 0 && !b) {
		snprintf(why, n, "it failed");
		return true;
	}
	return false;
}

static void approve_reply(struct approve_job *j, bool ok, const char *stopped,
                          struct intent_proposal *pending)
{
	json_object *res = json_object_new_object();
	json_object_object_add(res, "proposalId", json_object_new_string(j->first_id));
	json_object_object_add(res, "ok", json_object_new_boolean(ok));
	json_object_object_add(res, "result", json_object_get(j->last_result));
	json_object_object_add(res, "attempts", json_object_get(j->attempts));
	if (stopped)
		json_object_object_add(res, "stopped", json_object_new_string(stopped));
	if (pending)
		json_object_object_add(res, "proposal", intent_proposal_json(pending));
	if (j->explanation.len)
		json_object_object_add(res, "explanation",
		                       json_object_new_string(j->explanation.data));
	if (j->progress_begun) {
		progress(j->k, j->token, "end", ok ? "ok" : stopped);
		j->progress_begun = false;
	}
	rpc_call_reply(j->call, res);
	approve_free(j);
}

static void start_run(struct approve_job *j);
static bool ensure_cfg(struct approve_job *j, char *detail, size_t dsz);

static bool ensure_cfg(struct approve_job *j, char *detail, size_t dsz)
{
	if (j->have_cfg)
		return true;
	if (resolve_llm(j->k, &j->cfg, detail, dsz) < 0)
		return false;
	j->have_cfg = true;
	return true;
}

/* --- explanation ---------------------------------------------------------- */

static void explain_delta(void *data, const char *text, size_t len)
{
	struct approve_job *j = data;
	if (buf_append(&j->explanation, text, len) < 0)
		return;
	json_object *p = json_object_new_object();
	json_object_object_add(p, "proposalId", json_object_new_string(j->proposal_id));
	json_object_object_add(p, "text", json_object_new_string_len(text, (int)len));
	rpc_notify(j->k->rpc, "intent/explanation", p);
}

static void explain_done(void *data, const struct llm_answer *a, const struct llm_error *err)
{
	struct approve_job *j = data;
	j->chat = NULL;
	(void)a;
	if (err) {
		/* The run succeeded; a missing explanation is not a failure. */
		log_info("no explanation: %s", err->message);
		buf_reset(&j->explanation);
	}
	approve_reply(j, true, NULL, NULL);
}

static void succeed(struct approve_job *j, struct intent_proposal *p)
{
	char detail[256];
	if (!j->explain || !ensure_cfg(j, detail, sizeof(detail))) {
		approve_reply(j, true, NULL, NULL);
		return;
	}
	_cleanup_json_ json_object *msgs = llm_prompt_explain(p->language, p->code, j->last_output);
	static const struct llm_chat_callbacks cbs = {.delta = explain_delta, .done = explain_done};
	if (llm_chat_start(intent_http(j->k->intent), &j->cfg, msgs, &cbs, j, &j->chat) < 0)
		approve_reply(j, true, NULL, NULL);
}

/* --- repair ------------------------------------------------------------------ */

static void repair_done(void *data, const struct llm_answer *a, const struct llm_error *err)
{
	struct approve_job *j = data;
	struct kiln *k = j->k;
	j->chat = NULL;
	struct intent_proposal *prev = intent_proposal_find(k->intent, j->proposal_id);
	if (err || !prev) {
		json_object *e = json_object_new_object();
		if (err) {
			json_object_object_add(e, "error", json_object_new_string(err->message));
			json_object_object_add(e, "kind", json_object_new_string(err->kind));
		}
		attempt_note(j, "repair_failed", e);
		approve_reply(j, false, "repair_failed", NULL);
		return;
	}
	struct intent_proposal *p = intent_proposal_new(k->intent);
	if (!p) {
		approve_reply(j, false, "repair_failed", NULL);
		return;
	}
	/* prev may have been the oldest; intent_proposal_new can drop it. */
	prev = intent_proposal_find(k->intent, j->proposal_id);
	if (!prev) {
		approve_reply(j, false, "repair_failed", NULL);
		return;
	}
	p->language = strdup(prev->language);
	p->uri = prev->uri ? strdup(prev->uri) : NULL;
	p->version = prev->version;
	p->text = prev->text ? strdup(prev->text) : NULL;
	p->session_id = prev->session_id ? strdup(prev->session_id) : NULL;
	p->range = json_object_get(prev->range);
	p->position = json_object_get(prev->position);
	p->attempt = j->attempt;
	char failure[FAILURE_TAIL + 512];
	snprintf(failure, sizeof(failure), "%s", j->last_output ? j->last_output : "");
	p->messages = llm_prompt_repair(prev->messages, prev->answer, prev->language, failure);
	char detail[512] = "";
	int r = proposal_from_answer(k, p, a->text, a->len, detail, sizeof(detail));
	if (r < 0) {
		json_object *e = json_object_new_object();
		json_object_object_add(e, "error", json_object_new_string(detail));
		attempt_note(j, "repair_failed", e);
		approve_reply(j, false, r == -ENOENT ? LLM_E_NO_CODE : "repair_failed", NULL);
		return;
	}
	audit_proposal(k, p, j->cfg.model);
	snprintf(j->proposal_id, sizeof(j->proposal_id), "%s", p->id);
	json_object *note = json_object_new_object();
	json_object_object_add(note, "verdict", json_object_new_string(p->verdict_name));
	json_object_object_add(note, "code", json_object_new_string(p->code));
	attempt_note(j, "repaired", note);
	if (p->verdict != VAL_ALLOW) {
		/* A warning or a denial needs the person again. */
		approve_reply(j, false, "needs_approval", p);
		return;
	}
	start_run(j);
}

static void repair(struct approve_job *j, struct intent_proposal *p, const char *why)
{
	char detail[512];
	if (!ensure_cfg(j, detail, sizeof(detail))) {
		approve_reply(j, false, "repair_failed", NULL);
		return;
	}
	j->attempt++;
	attempt_note(j, "repairing", NULL);
	char failure[FAILURE_TAIL + 512];
	snprintf(failure, sizeof(failure), "%s\n%s", why, j->last_output ? j->last_output : "");
	free(j->last_output);
	j->last_output = strdup(failure);
	_cleanup_json_ json_object *msgs =
	    llm_prompt_repair(p->messages, p->answer ? p->answer : p->code, p->language, failure);
	static const struct llm_chat_callbacks cbs = {.done = repair_done};
	if (!msgs ||
	    llm_chat_start(intent_http(j->k->intent), &j->cfg, msgs, &cbs, j, &j->chat) < 0)
		approve_reply(j, false, "repair_failed", NULL);
}

/* --- running ------------------------------------------------------------------ */

static char *output_report(const struct run_outcome *o)
{
	struct buf b;
	buf_init(&b, FAILURE_TAIL + 64);
	const char *err = o->stderr_tail ? o->stderr_tail : "";
	const char *out = o->stdout_tail ? o->stdout_tail : "";
	size_t el = strlen(err), ol = strlen(out);
	/* The end of stderr says most about a failure: keep its tail. */
	if (el > FAILURE_TAIL / 2)
		err += el - FAILURE_TAIL / 2, el = FAILURE_TAIL / 2;
	if (ol > FAILURE_TAIL / 2)
		out += ol - FAILURE_TAIL / 2, ol = FAILURE_TAIL / 2;
	if (ol)
		buf_printf(&b, "stdout:\n%.*s\n", (int)ol, out);
	if (el)
		buf_printf(&b, "stderr:\n%.*s\n", (int)el, err);
	return buf_steal(&b, NULL);
}

static void run_finished(void *data, const struct run_outcome *o, int err, const char *errmsg)
{
	struct approve_job *j = data;
	struct kiln *k = j->k;
	j->run = NULL;
	struct intent_proposal *p = intent_proposal_find(k->intent, j->proposal_id);
	if (err < 0) {
		error_kind(j->call, RPC_REQUEST_FAILED, E_SANDBOX, NULL,
		           "the sandbox could not run the code: %s",
		           errmsg ? errmsg : strerror(-err));
		approve_free(j);
		return;
	}
	json_object_put(j->last_result);
	j->last_result = json_copy(o->result);
	free(j->last_output);
	j->last_output = output_report(o);
	char why[200] = "";
	bool failed = run_failed(o->result, why, sizeof(why));

	json_object *a = json_object_new_object();
	json_object_object_add(a, "attempt", json_object_new_int((int)j->attempt));
	json_object_object_add(a, "proposalId", json_object_new_string(j->proposal_id));
	json_object_object_add(a, "verdict", json_object_new_string(p ? p->verdict_name : "allow"));
	json_object_object_add(a, "ok", json_object_new_boolean(!failed));
	if (failed)
		json_object_object_add(a, "failure", json_object_new_string(why));
	/* The attempt's summary; the whole result of the last run is the
	 * reply's "result". */
	static const char *const keep[] = {"runId", "exitCode", "signal", "timedOut", "durationMs"};
	for (size_t i = 0; i < ARRAY_SIZE(keep); i++) {
		json_object *v;
		if (json_object_object_get_ex(o->result, keep[i], &v))
			json_object_object_add(a, keep[i], json_object_get(v));
	}
	json_object_array_add(j->attempts, a);

	_cleanup_json_ json_object *rec = json_object_new_object();
	json_object_object_add(rec, "proposalId", json_object_new_string(j->proposal_id));
	json_object_object_add(rec, "attempt", json_object_new_int((int)j->attempt));
	json_object_object_add(rec, "ok", json_object_new_boolean(!failed));
	json_object_object_add(rec, "outcome", json_copy(o->result));
	if (p) {
		char hash[SHA256_DIGEST_STRING_LENGTH];
		SHA256Data((const uint8_t *)p->code, strlen(p->code), hash);
		json_object_object_add(rec, "codeSha256", json_object_new_string(hash));
		if (p->session_id)
			json_object_object_add(rec, "sessionId",
			                       json_object_new_string(p->session_id));
	}
	intent_audit(k->intent, "run", rec);

	json_object *note = json_object_new_object();
	json_object_object_add(note, "ok", json_object_new_boolean(!failed));
	if (failed)
		json_object_object_add(note, "failure", json_object_new_string(why));
	attempt_note(j, "ran", note);

	if (p && p->session_id) {
		char turn[FAILURE_TAIL + 300];
		snprintf(turn, sizeof(turn), "I ran it: %s.\n%s", failed ? why : "it succeeded",
		         j->last_output ? j->last_output : "");
		char detail[64];
		int64_t budget =
		    ensure_cfg(j, detail, sizeof(detail)) ? j->cfg.history_tokens : 4096;
		intent_session_add(k->intent, p->session_id, "user", turn, budget);
	}
	if (!failed) {
		succeed(j, p);
		return;
	}
	if (!j->repair || j->attempt >= j->max_attempts || !p) {
		approve_reply(j, false, j->repair ? "attempts_exhausted" : "failed", NULL);
		return;
	}
	repair(j, p, why);
}

static void start_run(struct approve_job *j)
{
	struct kiln *k = j->k;
	struct intent_proposal *p = intent_proposal_find(k->intent, j->proposal_id);
	if (!p) {
		error_kind(j->call, RPC_REQUEST_FAILED, E_UNKNOWN_PROPOSAL, NULL,
		           "proposal %s is gone", j->proposal_id);
		approve_free(j);
		return;
	}
	p->approved = true;
	if (j->attempt == 0)
		j->attempt = 1;
	attempt_note(j, "running", NULL);
	int r = run_start(k, p->language, p->code, j->limits, run_finished, j, &j->run);
	if (r < 0) {
		error_kind(j->call, RPC_REQUEST_FAILED, E_SANDBOX, NULL,
		           "the sandbox could not start: %s", strerror(-r));
		approve_free(j);
	}
}

int method_intent_approve(struct rpc_call *call, json_object *params)
{
	struct kiln *k = rpc_call_ctx(call);
	const char *id;
	if (json_get_string(params, "proposalId", &id) < 0) {
		rpc_call_error(call, RPC_INVALID_PARAMS,
		               "Invalid params: intent/approve needs \"proposalId\"", NULL);
		return 0;
	}
	struct intent_proposal *p = intent_proposal_find(k->intent, id);
	if (!p) {
		error_kind(call, RPC_INVALID_PARAMS, E_UNKNOWN_PROPOSAL, NULL,
		           "no proposal %s (it never existed, or it is older than the last 128)",
		           id);
		return 0;
	}
	/* A document that changed since the proposal was made: its edit
	 * no longer fits, and the person approved code for another text. */
	int64_t client_version = -1;
	json_object *doc = json_get(params, "textDocument");
	json_get_int64(doc, "version", &client_version);
	int64_t seen = p->uri ? intent_doc_version(k->intent, p->uri) : -1;
	int64_t current = client_version >= 0 ? client_version : seen;
	if (p->version >= 0 && current >= 0 && current != p->version) {
		json_object *d = json_object_new_object();
		json_object_object_add(d, "uri", json_object_new_string(p->uri));
		json_object_object_add(d, "proposalVersion", json_object_new_int64(p->version));
		json_object_object_add(d, "documentVersion", json_object_new_int64(current));
		error_kind(
		    call, RPC_REQUEST_FAILED, E_CONFLICT, d,
		    "%s changed since proposal %s was made (version %lld, now %lld); run the "
		    "intent again on the current text",
		    p->uri, p->id, (long long)p->version, (long long)current);
		return 0;
	}
	if (p->verdict == VAL_DENY) {
		json_object *d = json_object_new_object();
		json_object_object_add(d, "diagnostics", json_object_get(p->diagnostics));
		error_kind(call, RPC_REQUEST_FAILED, E_DENIED, d,
		           "proposal %s was denied by the validator and cannot run", p->id);
		return 0;
	}
	json_object *repair = json_get(params, "repair");
	struct approve_job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->k = k;
	j->call = call;
	snprintf(j->proposal_id, sizeof(j->proposal_id), "%s", p->id);
	snprintf(j->first_id, sizeof(j->first_id), "%s", p->id);
	j->repair = repair && json_object_is_type(repair, json_type_object);
	j->max_attempts = config_max_attempts(k);
	int64_t max;
	if (j->repair && json_get_int64(repair, "maxAttempts", &max) == 0)
		j->max_attempts = max < 1                    ? 1
		                  : max > MAX_ATTEMPTS_LIMIT ? MAX_ATTEMPTS_LIMIT
		                                             : (unsigned)max;
	bool explain = false;
	json_get_bool(params, "explain", &explain);
	j->explain = explain;
	j->limits = json_copy(json_get(params, "limits"));
	j->token = json_copy(json_get(params, "workDoneToken"));
	j->attempts = json_object_new_array();
	buf_init(&j->explanation, 16u << 10);

	_cleanup_json_ json_object *rec = json_object_new_object();
	char hash[SHA256_DIGEST_STRING_LENGTH];
	SHA256Data((const uint8_t *)p->code, strlen(p->code), hash);
	json_object_object_add(rec, "proposalId", json_object_new_string(p->id));
	json_object_object_add(rec, "codeSha256", json_object_new_string(hash));
	json_object_object_add(rec, "verdict", json_object_new_string(p->verdict_name));
	json_object_object_add(rec, "repair", json_object_new_boolean(j->repair));
	intent_audit(k->intent, "approval", rec);

	rpc_call_on_cancel(call, approve_cancelled, j);
	start_run(j);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Document versions                                                        */
/* ------------------------------------------------------------------------ */

static void doc_version(struct kiln *k, json_object *params)
{
	json_object *doc = json_get(params, "textDocument");
	const char *uri;
	int64_t version;
	if (json_get_string(doc, "uri", &uri) == 0 && json_get_int64(doc, "version", &version) == 0)
		intent_doc_seen(k->intent, uri, version);
}

int method_text_document_did_open(struct rpc_call *call, json_object *params)
{
	doc_version(rpc_call_ctx(call), params);
	return 0;
}

int method_text_document_did_change(struct rpc_call *call, json_object *params)
{
	doc_version(rpc_call_ctx(call), params);
	return 0;
}

int method_text_document_did_close(struct rpc_call *call, json_object *params)
{
	struct kiln *k = rpc_call_ctx(call);
	const char *uri;
	if (json_get_string(json_get(params, "textDocument"), "uri", &uri) == 0)
		intent_doc_closed(k->intent, uri);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* intent/model: which model kiln would ask, and whether it is there        */
/* ------------------------------------------------------------------------ */

struct model_job {
	struct rpc_call *call;
	struct llm_chat *chat;
	struct llm_config cfg;
};

static void model_cancelled(void *data)
{
	struct model_job *j = data;
	llm_chat_cancel(j->chat);
	llm_config_release(&j->cfg);
	free(j);
}

/* Ollama lists "name:tag"; a configured name without a tag means :latest. */
static bool has_model(json_object *models, const char *model)
{
	size_t n = models ? json_object_array_length(models) : 0;
	size_t ml = strlen(model);
	for (size_t i = 0; i < n; i++) {
		const char *m = json_object_get_string(json_object_array_get_idx(models, i));
		if (!m)
			continue;
		if (strcmp(m, model) == 0 ||
		    (strncmp(m, model, ml) == 0 && strcmp(m + ml, ":latest") == 0))
			return true;
	}
	return false;
}

static void model_listed(void *data, json_object *models, const struct llm_error *err)
{
	struct model_job *j = data;
	j->chat = NULL;
	json_object *res = json_object_new_object();
	json_object_object_add(res, "provider", json_object_new_string(j->cfg.provider));
	json_object_object_add(res, "url", json_object_new_string(j->cfg.url));
	json_object_object_add(res, "model", json_object_new_string(j->cfg.model));
	json_object_object_add(res, "reachable", json_object_new_boolean(!err));
	if (models) {
		json_object_object_add(res, "models", json_object_get(models));
		json_object_object_add(res, "modelAvailable",
		                       json_object_new_boolean(has_model(models, j->cfg.model)));
	}
	if (err) {
		json_object *e = json_object_new_object();
		json_object_object_add(e, "kind", json_object_new_string(err->kind));
		json_object_object_add(e, "message", json_object_new_string(err->message));
		json_object_object_add(res, "error", e);
	}
	rpc_call_reply(j->call, res);
	llm_config_release(&j->cfg);
	free(j);
}

int method_intent_model(struct rpc_call *call, json_object *params)
{
	(void)params;
	struct kiln *k = rpc_call_ctx(call);
	struct model_job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->call = call;
	char detail[512] = "";
	if (resolve_llm(k, &j->cfg, detail, sizeof(detail)) < 0) {
		free(j);
		error_kind(call, RPC_INVALID_PARAMS, LLM_E_CONFIG, NULL, "%s", detail);
		return 0;
	}
	/* A status check should answer quickly, whatever the chat timeouts. */
	if (j->cfg.connect_timeout_ms > 2000 || !j->cfg.connect_timeout_ms)
		j->cfg.connect_timeout_ms = 2000;
	j->cfg.idle_timeout_ms = 5000;
	int r = llm_models_start(intent_http(k->intent), &j->cfg, model_listed, j, &j->chat);
	if (r < 0) {
		llm_config_release(&j->cfg);
		free(j);
		return r;
	}
	rpc_call_on_cancel(call, model_cancelled, j);
	return 0;
}
