/* intent_approve.c: intent/approve: the person says yes, and the proposal
 * runs in the sandbox exactly like snippet/run; with repair, a failed run
 * goes back to the model, and the repaired code is a new proposal that
 * waits for the person's approval (needs_approval). Only with automatic
 * repair (repair.auto, else intent.autoRepair; off by default) does
 * repaired code the validator allows run at once, until the code works or
 * the attempts run out. Nothing a model wrote runs without this call. */
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
#include "methods/intent_common.h"
#include "methods/run_sink.h"
#include "sandbox/session/session.h"
#include "rpc/message.h"
#include "rpc/peer.h"
#include "sandbox/run/run.h"
#include "validate/validate.h"

/* How much of a failed run's output goes back to the model. */
#define FAILURE_TAIL 3000

struct approve_job {
	struct kiln *k;
	struct rpc_call *call;
	char proposal_id[48]; /* the one being run or repaired */
	char first_id[48];
	unsigned attempt, max_attempts;
	bool repair, explain;
	bool auto_repair; /* repaired code that is allowed runs without asking */
	json_object *limits;
	json_object *attempts;
	json_object *last_result;
	char *last_output;
	struct run *run;
	struct run_notify sink; /* the run's notifications */
	struct llm_chat *chat;
	struct llm_config cfg;
	bool have_cfg;
	struct buf explanation;
	json_object *token; /* workDoneToken, or NULL */
	bool progress_begun;
	/* A repair's answer while its code is checked (check). */
	struct intent_check *check;
	char *repair_answer;
	size_t repair_len;
};

static void approve_free(struct approve_job *j)
{
	if (j->run)
		run_cancel(j->run);
	intent_check_cancel(j->check);
	free(j->repair_answer);
	run_notify_release(&j->sink);
	llm_chat_cancel(j->chat);
	if (j->have_cfg)
		llm_config_release(&j->cfg);
	if (j->progress_begun)
		intent_progress(j->k, j->token, "end", NULL);
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
		intent_progress(j->k, j->token, j->progress_begun ? "report" : "begin", msg);
		j->progress_begun = true;
	}
}

/* Whether a run is a failure worth a repair, and why, in words the model
 * can act on: the sandbox's outcome says how the program ended. */
static bool run_failed(const struct run_outcome *o, char *why, size_t n)
{
	char sig[24];
	if (o->timed_out) {
		snprintf(why, n, "it was stopped after exceeding its time limit of %llu ms",
		         (unsigned long long)o->limits.wall_ms);
		return true;
	}
	if (o->truncated) {
		snprintf(why, n,
		         "it was stopped because its output exceeded the limit of %llu bytes",
		         (unsigned long long)o->limits.output_bytes);
		return true;
	}
	if (!o->exited) {
		snprintf(why, n, "it was killed by signal %s",
		         run_signal_name(o->signal, sig, sizeof(sig)));
		return true;
	}
	if (o->exit_code != 0) {
		snprintf(why, n, "it exited with status %d", o->exit_code);
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
		intent_progress(j->k, j->token, "end", ok ? "ok" : stopped);
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
	if (intent_llm_config(j->k, &j->cfg, detail, dsz) < 0)
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

static void repair_failed(struct approve_job *j, const char *stopped, const char *detail)
{
	json_object *e = json_object_new_object();
	json_object_object_add(e, "error", json_object_new_string(detail));
	attempt_note(j, "repair_failed", e);
	approve_reply(j, false, stopped, NULL);
}

/* The repaired code is checked (report): a new proposal, which waits for
 * the person's approval; with automatic repair it runs at once when the
 * validator allows it. */
static void repair_checked(void *data, int r, const struct val_report *report, const char *code,
                           const char *detail)
{
	struct approve_job *j = data;
	struct kiln *k = j->k;
	j->check = NULL;
	if (r < 0) {
		repair_failed(j, "repair_failed", detail);
		return;
	}
	struct intent_proposal *prev = intent_proposal_find(k->intent, j->proposal_id);
	struct intent_proposal *p = prev ? intent_proposal_new(k->intent) : NULL;
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
	p->doc_life = prev->doc_life;
	p->text = prev->text ? strdup(prev->text) : NULL;
	p->session_id = prev->session_id ? strdup(prev->session_id) : NULL;
	p->range = json_object_get(prev->range);
	p->position = json_object_get(prev->position);
	p->attempt = j->attempt;
	char failure[FAILURE_TAIL + 512];
	snprintf(failure, sizeof(failure), "%s", j->last_output ? j->last_output : "");
	p->messages = llm_prompt_repair(prev->messages, prev->answer, prev->language, failure);
	char why[512] = "";
	r = intent_proposal_fill(k, p, j->repair_answer, j->repair_len, code, report, why,
	                         sizeof(why));
	if (r < 0) {
		repair_failed(j, "repair_failed", why);
		return;
	}
	intent_audit_proposal(k, p, j->cfg.model);
	/* The conversation goes on from the repaired code, not the code that
	 * failed: a follow-up builds on what ran. */
	if (p->session_id)
		intent_session_add(k->intent, p->session_id, "assistant", p->answer,
		                   j->cfg.history_tokens);
	snprintf(j->proposal_id, sizeof(j->proposal_id), "%s", p->id);
	json_object *note = json_object_new_object();
	json_object_object_add(note, "verdict", json_object_new_string(p->verdict_name));
	json_object_object_add(note, "code", json_object_new_string(p->code));
	/* The whole proposal (its edit, hunks and diagnostics), so a client's
	 * review can follow the code that runs next rather than the code that
	 * failed. */
	json_object_object_add(note, "proposal", intent_proposal_json(p));
	attempt_note(j, "repaired", note);
	if (!j->auto_repair || p->verdict != VAL_ALLOW) {
		/* The person approved other code: the repair is theirs to
		 * approve (a warning or a denial always is). */
		approve_reply(j, false, "needs_approval", p);
		return;
	}
	start_run(j);
}

/* The model's repair is in: its code is checked on the validator's
 * thread (repair_checked goes on), never on the loop. */
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
	struct llm_code c;
	int r = llm_extract_code(a->text, a->len, prev->language, &c);
	if (r < 0) {
		repair_failed(j, r == -ENOENT ? LLM_E_NO_CODE : "repair_failed",
		              r == -ENOENT ? "the model's answer holds no code" : strerror(-r));
		return;
	}
	_cleanup_free_ char *code = steal_pointer(&c.code);
	llm_code_release(&c);
	free(j->repair_answer);
	j->repair_answer = strndup(a->text, a->len);
	j->repair_len = a->len;
	char detail[256] = "";
	r = j->repair_answer ? intent_check_start(k, prev->language, code, repair_checked, j,
	                                          &j->check, detail, sizeof(detail))
	                     : -ENOMEM;
	if (r < 0)
		repair_failed(j, "repair_failed", detail[0] ? detail : strerror(-r));
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
		intent_error(j->call, RPC_REQUEST_FAILED, E_SANDBOX, NULL,
		             "the sandbox could not run the code: %s",
		             errmsg ? errmsg : strerror(-err));
		approve_free(j);
		return;
	}
	run_notify_release(&j->sink);
	json_object_put(j->last_result);
	j->last_result = run_outcome_json(o);
	free(j->last_output);
	j->last_output = output_report(o);
	char why[200] = "";
	bool failed = run_failed(o, why, sizeof(why));

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
		if (json_object_object_get_ex(j->last_result, keep[i], &v))
			json_object_object_add(a, keep[i], json_object_get(v));
	}
	json_object_array_add(j->attempts, a);

	_cleanup_json_ json_object *rec = json_object_new_object();
	json_object_object_add(rec, "proposalId", json_object_new_string(j->proposal_id));
	json_object_object_add(rec, "attempt", json_object_new_int((int)j->attempt));
	json_object_object_add(rec, "ok", json_object_new_boolean(!failed));
	json_object_object_add(rec, "outcome", json_object_get(j->last_result));
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
		intent_error(j->call, RPC_REQUEST_FAILED, E_UNKNOWN_PROPOSAL, NULL,
		             "proposal %s is gone", j->proposal_id);
		approve_free(j);
		return;
	}
	p->approved = true;
	if (j->attempt == 0)
		j->attempt = 1;
	attempt_note(j, "running", NULL);
	/* A proposal made for a sandbox session runs in it. */
	struct sbx_session *ss = k->sandbox && p->session_id && strcmp(p->language, "python") == 0
	                             ? sbx_session_find(k->sandbox, p->session_id)
	                             : NULL;
	char err[768];
	int r = ss ? run_notify_start_session(&j->sink, k, ss, p->code, j->limits, run_finished, j,
	                                      &j->run, err, sizeof(err))
	           : run_notify_start(&j->sink, k, p->language, p->code, j->limits, run_finished, j,
	                              &j->run);
	if (r < 0 && ss && r != -ENOMEM) {
		intent_error(j->call, RPC_REQUEST_FAILED, E_SANDBOX, NULL, "%s", err);
		approve_free(j);
	} else if (r < 0) {
		intent_error(
		    j->call, RPC_REQUEST_FAILED, E_SANDBOX, NULL, "the sandbox could not start: %s",
		    r == -ENODEV ? "the sandbox subsystem did not start (see the server's log)"
		                 : strerror(-r));
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
		intent_error(call, RPC_INVALID_PARAMS, E_UNKNOWN_PROPOSAL, NULL,
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
	/* Closed and opened again since: the versions started afresh, and the
	 * same number says nothing about the text (the client's own version
	 * is its word for the text it holds now). */
	uint64_t life = p->uri ? intent_doc_life(k->intent, p->uri) : 0;
	if (p->version >= 0 && client_version < 0 && p->doc_life && life && life != p->doc_life) {
		json_object *d = json_object_new_object();
		json_object_object_add(d, "uri", json_object_new_string(p->uri));
		json_object_object_add(d, "proposalVersion", json_object_new_int64(p->version));
		json_object_object_add(d, "documentVersion", json_object_new_int64(seen));
		json_object_object_add(d, "reopened", json_object_new_boolean(true));
		intent_error(call, RPC_REQUEST_FAILED, E_CONFLICT, d,
		             "%s was closed and opened again since proposal %s was made; run "
		             "the intent again on the current text",
		             p->uri, p->id);
		return 0;
	}
	if (p->version >= 0 && current >= 0 && current != p->version) {
		json_object *d = json_object_new_object();
		json_object_object_add(d, "uri", json_object_new_string(p->uri));
		json_object_object_add(d, "proposalVersion", json_object_new_int64(p->version));
		json_object_object_add(d, "documentVersion", json_object_new_int64(current));
		intent_error(
		    call, RPC_REQUEST_FAILED, E_CONFLICT, d,
		    "%s changed since proposal %s was made (version %lld, now %lld); run the "
		    "intent again on the current text",
		    p->uri, p->id, (long long)p->version, (long long)current);
		return 0;
	}
	if (p->verdict == VAL_DENY) {
		json_object *d = json_object_new_object();
		json_object_object_add(d, "diagnostics", json_object_get(p->diagnostics));
		intent_error(call, RPC_REQUEST_FAILED, E_DENIED, d,
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
	j->max_attempts = intent_max_attempts(k);
	int64_t max;
	if (j->repair && json_get_int64(repair, "maxAttempts", &max) == 0)
		j->max_attempts = max < 1                    ? 1
		                  : max > MAX_ATTEMPTS_LIMIT ? MAX_ATTEMPTS_LIMIT
		                                             : (unsigned)max;
	/* Automatic repair: the request's word, else the config's (off). */
	bool auto_repair = intent_auto_repair(k);
	if (j->repair)
		json_get_bool(repair, "auto", &auto_repair);
	j->auto_repair = j->repair && auto_repair;
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
	json_object_object_add(rec, "autoRepair", json_object_new_boolean(j->auto_repair));
	intent_audit(k->intent, "approval", rec);

	rpc_call_on_cancel(call, approve_cancelled, j);
	start_run(j);
	return 0;
}
