/* lsp_intent.c: run-intents for plain LSP clients. On a comment line such
 * as "# kiln: plot monthly totals from sales.csv" (or "// kiln: ...",
 * "-- kiln: ...", "; kiln: ..."), the code action "kiln: write code for
 * this comment" runs the intent through intent/run (as an internal call of
 * the same dispatch: one pipeline for every client) and sends the proposal
 * with workspace/applyEdit, inserted under the comment, each edit marked
 * needsConfirmation through a change annotation when the client supports
 * them, so it is reviewed before it lands. The document's diagnostics,
 * published after the client's didChange, then cover the proposal.
 *
 * "Run this proposal in kiln" on an inserted proposal runs it with repair
 * through intent/approve. The proposal was made for the document before
 * the insertion; kiln runs it only if the document still holds the
 * proposal's code exactly (what the user sees is what runs), and then
 * tells intent/approve so. Its output reaches the client as the run
 * commands' does: logMessage lines, a showMessage summary, and the output
 * document. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/buf.h"
#include "core/json.h"
#include "core/lang.h"
#include "core/log.h"
#include "core/util.h"
#include "intent/intent.h"
#include "kiln.h"
#include "methods/doc_store.h"
#include "methods/lsp.h"
#include "methods/methods.h"
#include "rpc/dispatch.h"
#include "rpc/message.h"

/* Proposals inserted, remembered for "Run this proposal" (oldest dropped). */
#define MAX_APPLIED      32
#define APPLY_TIMEOUT_MS 120000 /* the user may be reading a confirmation */

struct applied {
	struct applied *next;
	char *uri;
	char *code;
	char id[24];
	int64_t version; /* the document's version the proposal was made for */
	char verdict[8];
};

/* One intent/run or intent/approve in flight for a plain client. */
struct job {
	struct job *next;
	struct kiln *k;
	bool approve;
	char *uri;
	char *intent;
	json_object *call_id; /* the internal call's id */
	int64_t apply_id;
	bool apply_pending;
	/* approve: the proposals of its repair chain, and its output */
	char chain[8][24];
	size_t nchain;
	bool awaiting_run;
	char run_id[24];
	struct buf output;
	bool output_cut;
};

static struct applied *applied;
static size_t napplied;
static struct job *jobs;

/* --- the comment --- */

/* The intent on a line "<leader> kiln: <intent>", or NULL. The leaders are
 * the comment forms of the languages kiln runs and their neighbours: the
 * marker "kiln:" right after one is what makes the line an intent. */
static const char *line_intent(const char *line, size_t len, size_t *ret_len)
{
	static const char *const leaders[] = {"#", "//", "/*", "--", ";;", ";", "%", "*"};
	size_t i = 0;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	size_t lead = 0;
	for (size_t j = 0; j < ARRAY_SIZE(leaders); j++) {
		size_t n = strlen(leaders[j]);
		if (len - i >= n && memcmp(line + i, leaders[j], n) == 0) {
			lead = n;
			break;
		}
	}
	if (!lead)
		return NULL;
	i += lead;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (len - i < 5 || strncasecmp(line + i, "kiln:", 5) != 0)
		return NULL;
	i += 5;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	size_t e = len;
	while (e > i && (line[e - 1] == ' ' || line[e - 1] == '\t' || line[e - 1] == '\r'))
		e--;
	if (e - i >= 2 && memcmp(line + e - 2, "*/", 2) == 0)
		e -= 2;
	while (e > i && (line[e - 1] == ' ' || line[e - 1] == '\t'))
		e--;
	if (e == i)
		return NULL;
	*ret_len = e - i;
	return line + i;
}

/* Line number and bounds of the line holding byte offset off. */
static void line_bounds(const struct doc *d, size_t off, uint32_t *ret_line, size_t *ret_start,
                        size_t *ret_end)
{
	const char *t = d->text.data ? d->text.data : "";
	uint32_t line = 0;
	size_t start = 0;
	for (size_t i = 0; i < off && i < d->text.len; i++) {
		size_t br = pos_break_len(t, d->text.len, i);
		if (br) {
			line++;
			i += br - 1;
			start = i + 1;
		}
	}
	size_t end = start;
	while (end < d->text.len && !pos_break_len(t, d->text.len, end))
		end++;
	*ret_line = line;
	*ret_start = start;
	*ret_end = end;
}

/* Where the document holds code as whole lines (from a line's start to a
 * line's end), or NULL. Anywhere else is not the proposal the person saw:
 * "# " + its line is a comment that still holds its text. */
static const char *find_lines(const struct doc *d, const char *code)
{
	const char *t = d->text.data;
	size_t n = strlen(code);
	if (!t || !n)
		return NULL;
	for (const char *at = strstr(t, code); at; at = strstr(at + 1, code)) {
		size_t s = (size_t)(at - t), e = s + n;
		bool starts = s == 0 || t[s - 1] == '\n' || t[s - 1] == '\r';
		bool ends =
		    code[n - 1] == '\n' || e == d->text.len || pos_break_len(t, d->text.len, e);
		if (starts && ends)
			return at;
	}
	return NULL;
}

static struct applied *find_applied(const char *id)
{
	for (struct applied *a = applied; a; a = a->next)
		if (strcmp(a->id, id) == 0)
			return a;
	return NULL;
}

void lsp_intent_actions(struct kiln *k, const struct doc *d, json_object *range,
                        json_object *actions)
{
	size_t off;
	if (docs_offset(d, json_get(range, "start"), k->encoding, &off) < 0)
		return;
	uint32_t line;
	size_t ls, le, ilen;
	line_bounds(d, off, &line, &ls, &le);
	if (line_intent(d->text.data + ls, le - ls, &ilen)) {
		json_object *arg = json_object_new_object();
		json_object_object_add(arg, "uri", json_object_new_string(d->uri));
		json_object_object_add(arg, "line", json_object_new_int64(line));
		json_object_array_add(actions, lsp_action("kiln: write code for this comment",
		                                          LSP_CMD_WRITE_CODE, arg));
	}
	/* Inside an inserted proposal whose code the document still holds. */
	for (struct applied *a = applied; a; a = a->next) {
		if (strcmp(a->uri, d->uri) != 0 || !d->text.data)
			continue;
		const char *at = find_lines(d, a->code);
		if (!at)
			continue;
		size_t s = (size_t)(at - d->text.data), e = s + strlen(a->code);
		if (off < s || off > e)
			continue;
		json_object *arg = json_object_new_object();
		json_object_object_add(arg, "uri", json_object_new_string(d->uri));
		json_object_object_add(arg, "proposalId", json_object_new_string(a->id));
		json_object_array_add(
		    actions, lsp_action("Run this proposal in kiln", LSP_CMD_RUN_PROPOSAL, arg));
		break;
	}
}

/* --- jobs --- */

static void job_free(struct job *j)
{
	for (struct job **pp = &jobs; *pp; pp = &(*pp)->next)
		if (*pp == j) {
			*pp = j->next;
			break;
		}
	if (j->apply_pending)
		rpc_request_forget(j->k->rpc, j->apply_id);
	free(j->uri);
	free(j->intent);
	json_object_put(j->call_id);
	buf_release(&j->output);
	free(j);
}

static void remember(const char *uri, const char *id, const char *code, int64_t version,
                     const char *verdict)
{
	struct applied *a = calloc(1, sizeof(*a));
	if (!a || !(a->uri = strdup(uri)) || !(a->code = strdup(code))) {
		if (a)
			free(a->uri);
		free(a);
		return;
	}
	snprintf(a->id, sizeof(a->id), "%s", id);
	snprintf(a->verdict, sizeof(a->verdict), "%s", verdict);
	a->version = version;
	a->next = applied;
	applied = a;
	if (++napplied > MAX_APPLIED) {
		struct applied **pp = &applied;
		while ((*pp)->next)
			pp = &(*pp)->next;
		free((*pp)->uri);
		free((*pp)->code);
		free(*pp);
		*pp = NULL;
		napplied--;
	}
}

/* The applyEdit answer: remembered when applied, said when not. */
struct apply_ctx {
	struct job *j;
	char id[24];
	char verdict[8];
	char *code;
	int64_t version;
};

static void on_applied(void *data, json_object *result, json_object *error)
{
	struct apply_ctx *c = data;
	struct job *j = c->j;
	struct kiln *k = j->k;
	j->apply_pending = false;
	if (!result && !error) { /* the session is ending */
		free(c->code);
		free(c);
		job_free(j);
		return;
	}
	bool ok = false;
	json_get_bool(result, "applied", &ok);
	char msg[600];
	if (ok) {
		remember(j->uri, c->id, c->code, c->version, c->verdict);
		if (strcmp(c->verdict, "deny") == 0)
			snprintf(msg, sizeof(msg),
			         "kiln: proposal %s is in the document, but the validator denies "
			         "it (see "
			         "its diagnostics): fix it before running",
			         c->id);
		else
			snprintf(
			    msg, sizeof(msg),
			    "kiln: proposal %s (%s) is in the document; review it, then \"Run this "
			    "proposal in kiln\" runs it",
			    c->id, c->verdict);
		lsp_show(k, strcmp(c->verdict, "deny") == 0 ? MSG_WARNING : MSG_INFO, msg);
	} else {
		const char *why = NULL;
		if (json_get_string(result, "failureReason", &why) < 0 && error)
			json_get_string(error, "message", &why);
		snprintf(msg, sizeof(msg), "kiln: proposal %s was not applied%s%s", c->id,
		         why ? ": " : "", why ? why : "");
		lsp_show(k, MSG_WARNING, msg);
	}
	free(c->code);
	free(c);
	job_free(j);
}

/* The proposal's edit, with each TextEdit annotated to need confirmation
 * when the client takes change annotations. */
static json_object *annotated_edit(struct kiln *k, json_object *edit, const char *id,
                                   const char *verdict, const char *intent)
{
	json_object *e = json_copy(edit);
	if (!e || !k->client_change_annotations)
		return e;
	char aid[40];
	snprintf(aid, sizeof(aid), "kiln-%s", id);
	json_object *changes = json_get(e, "documentChanges");
	for (size_t i = 0; changes && i < json_object_array_length(changes); i++) {
		json_object *edits = json_get(json_object_array_get_idx(changes, i), "edits");
		for (size_t n = 0; edits && n < json_object_array_length(edits); n++)
			json_object_object_add(json_object_array_get_idx(edits, n), "annotationId",
			                       json_object_new_string(aid));
	}
	json_object *ann = json_object_new_object();
	char label[200];
	snprintf(label, sizeof(label), "kiln proposal %s (%s)", id, verdict);
	json_object_object_add(ann, "label", json_object_new_string(label));
	json_object_object_add(ann, "needsConfirmation", json_object_new_boolean(true));
	json_object_object_add(ann, "description", json_object_new_string(intent));
	json_object *anns = json_object_new_object();
	json_object_object_add(anns, aid, ann);
	json_object_object_add(e, "changeAnnotations", anns);
	return e;
}

static void on_proposal(void *data, json_object *result, json_object *error)
{
	struct job *j = data;
	struct kiln *k = j->k;
	if (!result && !error) { /* dispatch is going away */
		job_free(j);
		return;
	}
	const char *id = NULL, *code = NULL, *verdict = "allow";
	json_object *edit = json_get(result, "edit");
	if (error || json_get_string(result, "proposalId", &id) < 0 ||
	    json_get_string(result, "code", &code) < 0 || !edit ||
	    json_object_is_type(edit, json_type_null)) {
		const char *why = "no proposal came back";
		json_get_string(error, "message", &why);
		char msg[700];
		snprintf(msg, sizeof(msg), "kiln could not write code for \"%s\": %s", j->intent,
		         why);
		lsp_show(k, MSG_ERROR, msg);
		job_free(j);
		return;
	}
	json_get_string(result, "verdict", &verdict);
	int64_t version = -1;
	json_get_int64(json_get(json_object_array_get_idx(json_get(edit, "documentChanges"), 0),
	                        "textDocument"),
	               "version", &version);
	/* The document changed while the model wrote: the edit would land
	 * in text it was not made for. Its version says so to the client,
	 * but not every client checks: kiln does not send it at all. */
	const struct doc *d = docs_find(k->docs, j->uri);
	if (!d || d->version != version) {
		char msg[700];
		snprintf(msg, sizeof(msg),
		         "kiln: %s changed while the model wrote proposal %s, so it was not "
		         "inserted; use \"kiln: write code for this comment\" again",
		         j->uri, id);
		lsp_show(k, MSG_WARNING, msg);
		job_free(j);
		return;
	}
	struct apply_ctx *c = calloc(1, sizeof(*c));
	if (!c || !(c->code = strdup(code))) {
		free(c);
		job_free(j);
		return;
	}
	c->j = j;
	snprintf(c->id, sizeof(c->id), "%s", id);
	snprintf(c->verdict, sizeof(c->verdict), "%s", verdict);
	c->version = version;
	json_object *p = json_object_new_object();
	char label[300];
	snprintf(label, sizeof(label), "kiln: %s", j->intent);
	json_object_object_add(p, "label", json_object_new_string(label));
	json_object_object_add(p, "edit", annotated_edit(k, edit, id, verdict, j->intent));
	int r = rpc_request(k->rpc, "workspace/applyEdit", p, APPLY_TIMEOUT_MS, on_applied, c,
	                    &j->apply_id);
	if (r < 0) {
		lsp_show(k, MSG_ERROR, "kiln could not send the proposal to the editor");
		free(c->code);
		free(c);
		job_free(j);
		return;
	}
	j->apply_pending = true;
}

static bool in_chain(struct job *j, const char *id)
{
	for (size_t i = 0; i < j->nchain; i++)
		if (strcmp(j->chain[i], id) == 0)
			return true;
	return false;
}

/* intent/approve's notifications, seen on their way out: its runs' output
 * goes to the plain client as logMessage lines too. */
static void observe(void *data, const char *method, json_object *params)
{
	(void)data;
	for (struct job *j = jobs; j; j = j->next) {
		if (!j->approve)
			continue;
		const char *pid, *stage, *rid, *stream, *text;
		if (strcmp(method, "intent/attempt") == 0 &&
		    json_get_string(params, "proposalId", &pid) == 0 &&
		    json_get_string(params, "stage", &stage) == 0) {
			if (strcmp(stage, "repaired") == 0 && j->nchain < ARRAY_SIZE(j->chain))
				snprintf(j->chain[j->nchain++], sizeof(j->chain[0]), "%s", pid);
			if (in_chain(j, pid) && strcmp(stage, "running") == 0) {
				j->awaiting_run = true;
				char msg[120];
				int64_t attempt = 0;
				json_get_int64(params, "attempt", &attempt);
				snprintf(msg, sizeof(msg),
				         "kiln: running proposal %s (attempt %lld)", pid,
				         (long long)attempt);
				lsp_log(j->k, MSG_INFO, msg, strlen(msg));
			}
			if (in_chain(j, pid) && strcmp(stage, "repairing") == 0)
				lsp_log(j->k, MSG_INFO,
				        "kiln: the run failed; asking the model to repair it", 51);
			return;
		}
		if (strcmp(method, "run/output") == 0 &&
		    json_get_string(params, "runId", &rid) == 0 &&
		    json_get_string(params, "stream", &stream) == 0 &&
		    json_get_string(params, "text", &text) == 0) {
			if (j->awaiting_run && strcmp(rid, j->run_id) != 0) {
				snprintf(j->run_id, sizeof(j->run_id), "%s", rid);
				j->awaiting_run = false;
			}
			if (strcmp(rid, j->run_id) != 0)
				continue;
			size_t len = strlen(text);
			if (!j->output_cut && buf_append(&j->output, text, len) == -ENOBUFS)
				j->output_cut = true;
			/* A logMessage per line (a chunk's last partial line is
			 * its own message: runs seldom split lines across chunks). */
			int type = strcmp(stream, "stderr") == 0 ? MSG_WARNING : MSG_LOG;
			for (const char *at = text; *at;) {
				const char *nl = strchr(at, '\n');
				size_t n = nl ? (size_t)(nl - at) : strlen(at);
				lsp_log(j->k, type, at, n);
				at += n + (nl ? 1 : 0);
			}
			return;
		}
	}
}

/* A repair that waits for the person (needs_approval): the repaired code
 * replaces the failed proposal's lines in the document through
 * workspace/applyEdit, needing confirmation like the first proposal, and
 * "Run this proposal in kiln" on it approves it. Whether it is offered. */
static bool offer_repair(struct job *j, json_object *proposal)
{
	struct kiln *k = j->k;
	const char *id, *code, *verdict = "allow";
	struct applied *a = find_applied(j->chain[0]);
	const struct doc *d = docs_find(k->docs, j->uri);
	const char *at = a && d ? find_lines(d, a->code) : NULL;
	if (!at || json_get_string(proposal, "proposalId", &id) < 0 ||
	    json_get_string(proposal, "code", &code) < 0 || !k->client_apply_edit) {
		lsp_show(k, MSG_WARNING,
		         "kiln: the document no longer holds the proposal that failed, so its "
		         "repair was not offered");
		return false;
	}
	json_get_string(proposal, "verdict", &verdict);
	size_t s = (size_t)(at - d->text.data), e = s + strlen(a->code);
	struct apply_ctx *c = calloc(1, sizeof(*c));
	if (!c || !(c->code = strdup(code))) {
		free(c);
		return false;
	}
	c->j = j;
	snprintf(c->id, sizeof(c->id), "%s", id);
	snprintf(c->verdict, sizeof(c->verdict), "%s", verdict);
	/* The version the proposals were made for: approve checks it. */
	c->version = a->version;
	json_object *te = json_object_new_object();
	json_object *range = json_object_new_object();
	json_object_object_add(range, "start", intent_position_json(d->text.data, s, k->encoding));
	json_object_object_add(range, "end", intent_position_json(d->text.data, e, k->encoding));
	json_object_object_add(te, "range", range);
	json_object_object_add(te, "newText", json_object_new_string(code));
	json_object *edits = json_object_new_array();
	json_object_array_add(edits, te);
	json_object *doc = json_object_new_object();
	json_object_object_add(doc, "uri", json_object_new_string(j->uri));
	json_object_object_add(doc, "version", json_object_new_int64(d->version));
	json_object *change = json_object_new_object();
	json_object_object_add(change, "textDocument", doc);
	json_object_object_add(change, "edits", edits);
	json_object *changes = json_object_new_array();
	json_object_array_add(changes, change);
	_cleanup_json_ json_object *edit = json_object_new_object();
	json_object_object_add(edit, "documentChanges", changes);
	char label[120];
	snprintf(label, sizeof(label), "kiln: the repair of proposal %s", a->id);
	json_object *p = json_object_new_object();
	json_object_object_add(p, "label", json_object_new_string(label));
	json_object_object_add(p, "edit", annotated_edit(k, edit, id, verdict, label));
	if (rpc_request(k->rpc, "workspace/applyEdit", p, APPLY_TIMEOUT_MS, on_applied, c,
	                &j->apply_id) < 0) {
		free(c->code);
		free(c);
		return false;
	}
	j->apply_pending = true;
	return true;
}

static void on_approved(void *data, json_object *result, json_object *error)
{
	struct job *j = data;
	struct kiln *k = j->k;
	if (!result && !error) {
		job_free(j);
		return;
	}
	char msg[800];
	const char *pid = j->chain[0];
	if (error) {
		const char *why = "it failed";
		json_get_string(error, "message", &why);
		snprintf(msg, sizeof(msg), "kiln did not run proposal %s: %s", pid, why);
		lsp_show(k, MSG_ERROR, msg);
		job_free(j);
		return;
	}
	bool ok = false;
	json_get_bool(result, "ok", &ok);
	json_object *attempts = json_get(result, "attempts");
	size_t n = attempts ? json_object_array_length(attempts) : 0;
	int64_t exit_code = -1;
	json_get_int64(json_get(result, "result"), "exitCode", &exit_code);
	const char *stopped = NULL;
	json_get_string(result, "stopped", &stopped);
	if (ok)
		snprintf(msg, sizeof(msg),
		         "kiln: proposal %s ran: exit code %lld after %zu attempt%s", pid,
		         (long long)exit_code, n, n == 1 ? "" : "s");
	else
		snprintf(msg, sizeof(msg),
		         "kiln: proposal %s did not succeed (%s) after %zu attempt%s", pid,
		         stopped ? stopped : "failed", n, n == 1 ? "" : "s");
	json_object *repaired = NULL;
	if (stopped && strcmp(stopped, "needs_approval") == 0) {
		repaired = json_get(result, "proposal");
		const char *rid = "?";
		json_get_string(repaired, "proposalId", &rid);
		snprintf(msg, sizeof(msg),
		         "kiln: proposal %s failed; the model's repair %s did not run: it waits "
		         "for your approval",
		         pid, rid);
	}
	lsp_show(k, ok ? MSG_INFO : MSG_WARNING, msg);
	if (k->client_show_document) {
		char name[48];
		snprintf(name, sizeof(name), "proposal-%s", pid);
		lsp_show_document(k, name, msg, j->output.data, j->output.len, j->output_cut);
	}
	if (repaired && offer_repair(j, repaired))
		return; /* the job goes on to the applyEdit's answer */
	job_free(j);
}

static struct job *job_new(struct kiln *k, const char *uri, bool approve)
{
	struct job *j = calloc(1, sizeof(*j));
	if (!j || !(j->uri = strdup(uri))) {
		free(j);
		return NULL;
	}
	j->k = k;
	j->approve = approve;
	buf_init(&j->output, LSP_OUTPUT_MAX);
	j->next = jobs;
	jobs = j;
	if (approve)
		rpc_dispatch_set_observer(k->rpc, observe, NULL);
	return j;
}

static int write_code(struct rpc_call *call, struct kiln *k, json_object *arg)
{
	const char *uri;
	int64_t line;
	if (json_get_string(arg, "uri", &uri) < 0 || json_get_int64(arg, "line", &line) < 0 ||
	    line < 0) {
		rpc_call_error(call, RPC_INVALID_PARAMS,
		               "Invalid params: kiln.writeCode wants {uri, line}", NULL);
		return 0;
	}
	const struct doc *d = docs_find(k->docs, uri);
	if (!d || d->too_big) {
		rpc_call_errorf(call, RPC_REQUEST_FAILED, NULL, "kiln has no text of %s (didOpen)",
		                uri);
		return 0;
	}
	json_object *pos = json_object_new_object();
	json_object_object_add(pos, "line", json_object_new_int64(line));
	json_object_object_add(pos, "character", json_object_new_int(0));
	size_t off;
	docs_offset(d, pos, k->encoding, &off);
	json_object_put(pos);
	uint32_t l;
	size_t ls, le, ilen;
	line_bounds(d, off, &l, &ls, &le);
	const char *intent = l == line ? line_intent(d->text.data + ls, le - ls, &ilen) : NULL;
	if (!intent) {
		rpc_call_errorf(call, RPC_INVALID_PARAMS, NULL,
		                "Invalid params: line %lld of %s is not a \"kiln: ...\" comment",
		                (long long)line + 1, uri);
		return 0;
	}
	if (!k->client_apply_edit) {
		rpc_call_error(call, RPC_REQUEST_FAILED,
		               "this editor does not take edits from the server "
		               "(workspace.applyEdit): kiln cannot insert a proposal",
		               NULL);
		return 0;
	}
	struct job *j = job_new(k, uri, false);
	if (!j || !(j->intent = strndup(intent, ilen))) {
		if (j)
			job_free(j);
		return -ENOMEM;
	}
	/* intent/run's params: the document as kiln holds it, the code
	 * inserted at the start of the line under the comment. */
	json_object *p = json_object_new_object();
	json_object_object_add(p, "intent", json_object_new_string(j->intent));
	json_object *td = json_object_new_object();
	json_object_object_add(td, "uri", json_object_new_string(uri));
	json_object_object_add(td, "languageId",
	                       json_object_new_string(d->language ? d->language : "python"));
	json_object_object_add(td, "version", json_object_new_int64(d->version));
	json_object_object_add(
	    td, "text",
	    json_object_new_string_len(d->text.data ? d->text.data : "", (int)d->text.len));
	json_object_object_add(p, "textDocument", td);
	json_object *at = json_object_new_object();
	json_object_object_add(at, "line", json_object_new_int64(line + 1));
	json_object_object_add(at, "character", json_object_new_int(0));
	json_object_object_add(p, "position", at);
	int r = rpc_dispatch_call(k->rpc, "intent/run", p, on_proposal, j, &j->call_id);
	json_object_put(p);
	if (r < 0) {
		job_free(j);
		return r;
	}
	char msg[600];
	snprintf(msg, sizeof(msg), "kiln: writing code for \"%s\"", j->intent);
	lsp_log(k, MSG_INFO, msg, strlen(msg));
	json_object *res = json_object_new_object();
	json_object_object_add(res, "intent", json_object_new_string(j->intent));
	rpc_call_reply(call, res);
	return 0;
}

static int run_proposal(struct rpc_call *call, struct kiln *k, json_object *arg)
{
	const char *uri, *id;
	if (json_get_string(arg, "uri", &uri) < 0 || json_get_string(arg, "proposalId", &id) < 0) {
		rpc_call_error(call, RPC_INVALID_PARAMS,
		               "Invalid params: kiln.runProposal wants {uri, proposalId}", NULL);
		return 0;
	}
	struct applied *a = find_applied(id);
	const struct doc *d = docs_find(k->docs, uri);
	if (!a || strcmp(a->uri, uri) != 0) {
		rpc_call_errorf(call, RPC_INVALID_PARAMS, NULL,
		                "Invalid params: kiln inserted no proposal %s into %s", id, uri);
		return 0;
	}
	/* What runs is what the document shows, or nothing runs. */
	if (!d || !find_lines(d, a->code)) {
		rpc_call_errorf(call, RPC_REQUEST_FAILED, NULL,
		                "proposal %s's code was changed in the document since it was "
		                "inserted: select it and use \"Run selection in kiln\"",
		                id);
		return 0;
	}
	struct job *j = job_new(k, uri, true);
	if (!j)
		return -ENOMEM;
	snprintf(j->chain[j->nchain++], sizeof(j->chain[0]), "%s", id);
	json_object *p = json_object_new_object();
	json_object_object_add(p, "proposalId", json_object_new_string(id));
	json_object_object_add(p, "repair", json_object_new_object());
	json_object *td = json_object_new_object();
	json_object_object_add(td, "uri", json_object_new_string(uri));
	/* Checked above: the document holds exactly this proposal's code. */
	json_object_object_add(td, "version", json_object_new_int64(a->version));
	json_object_object_add(p, "textDocument", td);
	int r = rpc_dispatch_call(k->rpc, "intent/approve", p, on_approved, j, &j->call_id);
	json_object_put(p);
	if (r < 0) {
		job_free(j);
		return r;
	}
	json_object *res = json_object_new_object();
	json_object_object_add(res, "proposalId", json_object_new_string(id));
	rpc_call_reply(call, res);
	return 0;
}

bool lsp_intent_execute(struct rpc_call *call, struct kiln *k, const char *command,
                        json_object *arg, int *ret)
{
	if (strcmp(command, LSP_CMD_WRITE_CODE) == 0)
		*ret = write_code(call, k, arg);
	else if (strcmp(command, LSP_CMD_RUN_PROPOSAL) == 0)
		*ret = run_proposal(call, k, arg);
	else
		return false;
	return true;
}

void lsp_intent_release(struct kiln *k)
{
	(void)k;
	/* Jobs end through dispatch's callbacks (NULL, NULL as it is freed). */
	while (applied) {
		struct applied *a = applied;
		applied = a->next;
		free(a->uri);
		free(a->code);
		free(a);
	}
	napplied = 0;
}
