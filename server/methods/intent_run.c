/* intent_run.c: intent/run: a plain-words intent becomes a validated
 * proposal, the code streamed in intent/partial while the model writes it.
 * Nothing here runs code: that takes intent/approve. */
#include "methods/methods.h"

#include <errno.h>
#include <sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "core/buf.h"
#include "core/json.h"
#include "core/lang.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "intent/intent.h"
#include "kiln.h"
#include "llm/llm.h"
#include "methods/intent_common.h"
#include "methods/session_state.h"
#include "rpc/message.h"
#include "rpc/peer.h"
#include "sandbox/run/run.h"
#include "sandbox/sandbox.h"
#include "sandbox/workspace/survey.h"
#include "sandbox/session/session.h"
#include "validate/validate.h"

/* intent/partial covers the first this many bytes of an answer. */
#define PARTIAL_MAX (256u << 10)
/* Code is checked ahead while it streams up to this size. Checks run
 * back to back on the validator's thread, each costing more as the code
 * grows: past this (about 500 lines) a long answer would keep a core busy
 * for its whole stream, for a check the end then makes anyway. */
#define SPEC_MAX (16u << 10)

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
	uint64_t doc_life; /* the life of uri's version (intent_doc_life) */
	struct buf acc;    /* the answer so far, for intent/partial */
	size_t scanned;    /* acc bytes up to the last newline handled */
	struct buf sent;   /* the code streamed so far */
	bool writing;
	/* Kept for the prompt, built once the survey (what the box can
	 * import, the workspace's files) is in. */
	struct sbx_survey_wait *survey;
	char *selection, *before, *after;
	json_object *files;
	/* The check of the code so far, on the validator's thread, started
	 * at each completed line (spec_start) so that the report of the final
	 * code is ready, or nearly, when the answer ends. One runs at a time:
	 * newer code waits in spec_next. */
	struct val_job *spec_job; /* in flight; NULL when none */
	char *spec_code;          /* the code spec_job checks, or spec_rep is of */
	char *spec_next;          /* newer code, checked once spec_job ends */
	bool spec_ready;          /* spec_rep holds spec_code's report */
	struct val_report spec_rep;
	uint64_t spec_generation; /* of the validator it ran on */
	/* The answer, kept while it waits for spec_job (finishing) or for
	 * the check of its code (check). */
	bool finishing;
	char *answer;
	size_t answer_len;
	char *final_code; /* the code the answer gives; NULL when none */
	struct intent_check *check;
	bool answer_cached;
	int64_t prompt_tokens, completion_tokens;
	struct loop_timer *finish_timer;
};

static void spec_drop(struct run_job *j)
{
	if (j->spec_job)
		val_job_cancel(j->spec_job);
	j->spec_job = NULL;
	val_report_release(&j->spec_rep);
	j->spec_ready = false;
	free(j->spec_code);
	j->spec_code = NULL;
	free(j->spec_next);
	j->spec_next = NULL;
}

static void run_job_free(struct run_job *j)
{
	spec_drop(j);
	intent_check_cancel(j->check);
	if (j->finish_timer)
		loop_timer_stop(j->k->loop, j->finish_timer);
	free(j->answer);
	free(j->final_code);
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
	sandbox_survey_cancel(j->survey);
	free(j->selection);
	free(j->before);
	free(j->after);
	json_object_put(j->files);
	buf_release(&j->acc);
	buf_release(&j->sent);
	free(j);
}

static void run_cancelled(void *data)
{
	struct run_job *j = data;
	llm_chat_cancel(j->chat);
	intent_progress(j->k, j->token, "end", "cancelled");
	run_job_free(j);
}

static void spec_done(void *data, int r, struct val_report *report, const char *code, size_t len,
                      const char *detail);

/* Check code (owned) on the validator's thread, in place of the last. */
static void spec_launch(struct run_job *j, char *code)
{
	struct kiln *k = j->k;
	val_report_release(&j->spec_rep);
	j->spec_ready = false;
	free(j->spec_code);
	j->spec_code = code;
	j->spec_generation = val_generation(k->validator);
	if (val_check_async(k->validator, k->loop, j->language, code, strlen(code),
	                    intent_profile(k), spec_done, j, &j->spec_job) < 0) {
		j->spec_job = NULL;
		spec_drop(j);
	}
}

/* The code so far changed: check it ahead, since the answer may end here
 * (the model's closing fence adds no code). Nothing is lost when it does
 * not: run_done checks what the code turns out to be, as without this. */
static void spec_start(struct run_job *j, const char *code)
{
	const char *latest = j->spec_next ? j->spec_next : j->spec_code;
	if (!j->k->validator || strlen(code) > SPEC_MAX || (latest && strcmp(latest, code) == 0))
		return;
	char *c = strdup(code);
	if (!c)
		return;
	if (j->spec_job) {
		free(j->spec_next);
		j->spec_next = c;
		return;
	}
	spec_launch(j, c);
}

static void conclude(struct run_job *j);

static void finish_later(struct loop *loop, void *data)
{
	(void)loop;
	struct run_job *j = data;
	j->finish_timer = NULL;
	conclude(j);
}

static void spec_done(void *data, int r, struct val_report *report, const char *code, size_t len,
                      const char *detail)
{
	(void)code;
	(void)len;
	(void)detail;
	struct run_job *j = data;
	j->spec_job = NULL;
	if (r >= 0) {
		j->spec_rep = *report;
		j->spec_ready = true;
	}
	if (j->spec_next) {
		char *next = j->spec_next;
		j->spec_next = NULL;
		spec_launch(j, next);
	}
	if (!j->finishing || j->spec_job)
		return;
	/* Conclude on the next turn: this may be inside val_free() of a
	 * validator that a config change replaces (a report it finished, or
	 * -ECANCELED), and the report must be judged against the new one. */
	j->finishing = false;
	j->finish_timer = loop_timer_start(j->k->loop, 0, finish_later, j);
	if (!j->finish_timer)
		conclude(j);
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
	spec_start(j, c.code);
	llm_code_release(&c);
}

static void run_delta(void *data, const char *text, size_t len)
{
	struct run_job *j = data;
	if (!j->writing) {
		j->writing = true;
		intent_progress(j->k, j->token, "report", "writing");
	}
	if (buf_append(&j->acc, text, len) < 0)
		return; /* past the cap the chat itself fails */
	const char *nl = memrchr(text, '\n', len);
	if (!nl)
		return;
	j->scanned = j->acc.len - (len - (size_t)(nl - text) - 1);
	partial(j);
}

/* The report checked ahead for code, when it is the one the validator
 * would give now: the same code, and no configuration change since (the
 * same validator). NULL otherwise. */
static const struct val_report *spec_report(struct run_job *j, const char *code)
{
	if (!j->spec_ready || !j->spec_code || strcmp(j->spec_code, code) != 0 ||
	    !j->k->validator || val_generation(j->k->validator) != j->spec_generation)
		return NULL;
	log_debug("intent/run: the code was checked before the answer ended");
	return &j->spec_rep;
}

static void run_done(void *data, const struct llm_answer *a, const struct llm_error *err)
{
	struct run_job *j = data;
	struct kiln *k = j->k;
	j->chat = NULL;
	if (err) {
		intent_progress(k, j->token, "end", err->kind);
		rpc_call_error(j->call, RPC_REQUEST_FAILED, err->message, llm_error_data(err));
		run_job_free(j);
		return;
	}
	intent_progress(k, j->token, "report", "validating");
	j->answer = malloc(a->len + 1);
	if (!j->answer) {
		rpc_call_error(j->call, RPC_INTERNAL_ERROR, "out of memory", NULL);
		run_job_free(j);
		return;
	}
	memcpy(j->answer, a->text, a->len);
	j->answer[a->len] = '\0';
	j->answer_len = a->len;
	j->answer_cached = a->cached;
	j->prompt_tokens = a->prompt_tokens;
	j->completion_tokens = a->completion_tokens;
	struct llm_code c;
	if (llm_extract_code(j->answer, j->answer_len, j->language, &c) >= 0) {
		j->final_code = steal_pointer(&c.code);
		llm_code_release(&c);
	}
	/* The check of the final code may be running already: wait for it
	 * (spec_done concludes). A check of other code is of no use now. */
	if (j->spec_job && j->final_code) {
		const char *latest = j->spec_next ? j->spec_next : j->spec_code;
		if (latest && strcmp(latest, j->final_code) == 0) {
			j->finishing = true;
			return;
		}
	}
	if (j->spec_job) {
		val_job_cancel(j->spec_job);
		j->spec_job = NULL;
	}
	conclude(j);
}

static void finish(struct run_job *j, const char *checked, const struct val_report *rep);

/* The check of the final code failed: no proposal. */
static void check_failed(struct run_job *j, int r, const char *detail)
{
	intent_progress(j->k, j->token, "end", "failed");
	if (r == -EINVAL)
		intent_error(j->call, RPC_INVALID_PARAMS, E_LANGUAGE, NULL, "%s", detail);
	else
		intent_error(j->call, RPC_REQUEST_FAILED, E_VALIDATOR, NULL, "%s", detail);
	run_job_free(j);
}

static void final_checked(void *data, int r, const struct val_report *report, const char *code,
                          const char *detail)
{
	struct run_job *j = data;
	j->check = NULL;
	if (r < 0) {
		check_failed(j, r, detail);
		return;
	}
	finish(j, code, report);
}

/* The answer is in, and no check ahead is running for its code: take
 * the report checked ahead when it is the final code's under the current
 * validator, else check the final code on the validator's thread (its
 * size has no bearing: nothing is checked on the loop). */
static void conclude(struct run_job *j)
{
	const struct val_report *rep = j->final_code ? spec_report(j, j->final_code) : NULL;
	if (rep || !j->final_code) {
		/* Without code, the proposal fails at extraction. */
		finish(j, j->spec_code, rep);
		return;
	}
	char detail[256] = "";
	int r = intent_check_start(j->k, j->language, j->final_code, final_checked, j, &j->check,
	                           detail, sizeof(detail));
	if (r < 0)
		check_failed(j, r, detail);
}

/* The answer is in and its code checked (rep, the report of the code
 * checked): the proposal, if that code is the answer's. */
static void finish(struct run_job *j, const char *checked, const struct val_report *rep)
{
	struct kiln *k = j->k;
	struct intent_proposal *p = intent_proposal_new(k->intent);
	if (!p) {
		rpc_call_error(j->call, RPC_INTERNAL_ERROR, "out of memory", NULL);
		run_job_free(j);
		return;
	}
	p->language = strdup(j->language);
	p->uri = j->uri ? strdup(j->uri) : NULL;
	p->version = j->version;
	p->doc_life = j->doc_life;
	p->text = j->text ? strdup(j->text) : NULL;
	p->session_id = j->session_id ? strdup(j->session_id) : NULL;
	p->range = json_object_get(j->range);
	p->position = json_object_get(j->position);
	p->messages = json_object_get(j->messages);
	char detail[512] = "";
	int r = intent_proposal_fill(k, p, j->answer, j->answer_len, checked, rep, detail,
	                             sizeof(detail));
	if (r < 0) {
		intent_progress(k, j->token, "end", r == -ENOENT ? LLM_E_NO_CODE : "failed");
		json_object *d = json_object_new_object();
		if (r == -ENOENT) {
			json_object_object_add(
			    d, "answer",
			    json_object_new_string_len(
			        j->answer, (int)(j->answer_len < 2000 ? j->answer_len : 2000)));
			intent_error(j->call, RPC_REQUEST_FAILED, LLM_E_NO_CODE, d,
			             "the model answered without any %s code; rephrase the intent "
			             "or check that the model '%s' writes code",
			             j->language, j->cfg.model);
		} else if (r == -EINVAL && !p->diagnostics) {
			intent_error(j->call, RPC_INVALID_PARAMS, E_LANGUAGE, d, "%s", detail);
		} else {
			intent_error(j->call, RPC_REQUEST_FAILED, E_VALIDATOR, d, "%s", detail);
		}
		run_job_free(j);
		return;
	}
	/* The session remembers the intent and what the model wrote. */
	intent_session_add(k->intent, j->session_id, "user", j->intent, j->cfg.history_tokens);
	intent_session_add(k->intent, j->session_id, "assistant", p->answer, j->cfg.history_tokens);
	intent_audit_proposal(k, p, j->cfg.model);
	json_object *res = intent_proposal_json(p);
	if (j->answer_cached)
		json_object_object_add(res, "cached", json_object_new_boolean(1));
	if (j->prompt_tokens >= 0 || j->completion_tokens >= 0) {
		json_object *u = json_object_new_object();
		json_object_object_add(u, "promptTokens", json_object_new_int64(j->prompt_tokens));
		json_object_object_add(u, "completionTokens",
		                       json_object_new_int64(j->completion_tokens));
		json_object_object_add(res, "usage", u);
	}
	intent_progress(k, j->token, "end", p->verdict_name);
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

/* The survey is in (or could not be made): build the prompt and ask the
 * model. */
static void surveyed(void *data)
{
	struct run_job *j = data;
	struct kiln *k = j->k;
	j->survey = NULL;
	/* A sessionId that names a sandbox session: the model is told what
	 * it holds, and the proposal runs there (intent/approve). */
	struct sbx_session *ss =
	    k->sandbox && j->session_id ? sbx_session_find(k->sandbox, j->session_id) : NULL;
	_cleanup_free_ char *state = ss && strcmp(j->language, "python") == 0
	                                 ? session_state_text(sbx_session_vars(ss))
	                                 : NULL;
	struct llm_prompt pr = {
	    .session_state = state,
	    .intent = j->intent,
	    .language = j->language,
	    .uri = j->uri,
	    .selection = j->selection,
	    .before = j->before,
	    .after = j->after,
	    .workspace_files = j->files,
	    .profile = intent_profile(k),
	    .history = intent_session_history(k->intent, j->session_id),
	    .workspace = k->sandbox && sandbox_workspace_files(k->sandbox)
	                     ? sandbox_workspace(k->sandbox)
	                     : NULL,
	    .workspace_listing = k->sandbox ? sandbox_workspace_files(k->sandbox) : NULL,
	    .modules = strcmp(j->language, "python") == 0 ? sandbox_modules() : NULL,
	};
	j->messages = llm_prompt_messages(&pr);
	static const struct llm_chat_callbacks cbs = {.delta = run_delta, .done = run_done};
	int r = j->messages ? llm_chat_start(intent_http(k->intent), &j->cfg, j->messages, &cbs, j,
	                                     &j->chat)
	                    : -ENOMEM;
	if (r >= 0)
		kiln_warm_rules(k);
	if (r < 0) {
		intent_progress(k, j->token, "end", "failed");
		/* As the dispatcher answers a handler's own failure. */
		char detail[128];
		snprintf(detail, sizeof(detail), "Internal error: %s", strerror(-r));
		rpc_call_error(j->call, RPC_INTERNAL_ERROR, detail, NULL);
		run_job_free(j);
	}
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
	/* Proposals are validated before anyone sees them: a language of the
	 * config's sandbox.languages that names no validator cannot be one. */
	const struct lang *l = lang_find(lang ? lang : "python");
	if (!l || !l->validator) {
		char msg[512];
		if (l)
			snprintf(msg, sizeof(msg),
			         "the validator cannot check %s code, so kiln proposes none (give "
			         "sandbox.languages.%s a \"validator\")",
			         l->name, l->name);
		else
			lang_unknown(lang, msg, sizeof(msg));
		intent_error(call, RPC_INVALID_PARAMS, E_LANGUAGE, NULL, "%s (set \"language\")",
		             msg);
		return 0;
	}
	const char *canon = l->name;
	json_object *range = json_get(params, "range");
	json_object *position = json_get(params, "position");
	json_get_string(params, "sessionId", &session);

	struct run_job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->k = k;
	j->call = call;
	char detail[512] = "";
	int r = intent_llm_config(k, &j->cfg, detail, sizeof(detail));
	if (r < 0) {
		free(j);
		intent_error(call, RPC_INVALID_PARAMS, LLM_E_CONFIG, NULL, "%s", detail);
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
	if (uri && version >= 0) {
		intent_doc_seen(k->intent, uri, version);
		j->doc_life = intent_doc_life(k->intent, uri);
	}

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
	j->files = json_object_is_type(files, json_type_array) ? json_object_get(files) : NULL;
	j->selection = steal_pointer(&selection);
	j->before = steal_pointer(&before);
	j->after = steal_pointer(&after);
	intent_progress(k, j->token, "begin", "thinking");
	rpc_call_on_cancel(call, run_cancelled, j);
	/* The prompt says what the box can import and which files the
	 * workspace holds: found off the loop, then the model is asked. */
	if (!k->sandbox || sandbox_survey_start(k->sandbox, surveyed, j, &j->survey) < 0)
		surveyed(j);
	return 0;
}
