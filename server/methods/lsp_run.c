/* lsp_run.c: plain-LSP code actions and their commands, for clients with
 * no kiln plugin (Neovim's and Emacs's built-in clients, Helix, Kate, ...):
 * textDocument/codeAction offers "Run selection in kiln" and "Run document
 * in kiln"; workspace/executeCommand runs the code after the validator's
 * verdict. The output reaches the client in each way it can show it:
 * $/progress while the program runs (when the client takes
 * window/workDoneProgress), one window/logMessage per output line, a
 * window/showMessage summary at the end, and the whole output as a file
 * the client opens with window/showDocument (when it supports that).
 *
 * executeCommand answers as soon as the run has started ({runId}): a client
 * that waits for the answer (Eglot does, with a timeout) is not held for
 * the length of the run. The runs are the server's, listed here, and
 * shutdown, exit and end of input cancel them (lsp_runs_cancel_all). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "core/buf.h"
#include "core/json.h"
#include "core/lang.h"
#include "core/log.h"
#include "core/util.h"
#include "core/visible.h"
#include "kiln.h"
#include "methods/doc_store.h"
#include "methods/lsp.h"
#include "methods/methods.h"
#include "methods/run_sink.h"
#include "rpc/dispatch.h"
#include "rpc/message.h"
#include "rpc/peer.h"
#include "sandbox/run/run.h"
#include "validate/validate.h"

#define CMD_RUN_SELECTION "kiln.runSelection"
#define CMD_RUN_DOCUMENT  "kiln.runDocument"

const char *const lsp_commands[] = {CMD_RUN_SELECTION, CMD_RUN_DOCUMENT, LSP_CMD_WRITE_CODE,
                                    LSP_CMD_RUN_PROPOSAL};
const size_t lsp_commands_count = ARRAY_SIZE(lsp_commands);

struct lsp_run {
	struct lsp_run *next;
	struct kiln *k;
	struct rpc_call *call; /* executeCommand, until the run has started */
	struct val_job *job;
	struct run *run;
	struct run *paused; /* waiting for the client to drain */
	char *language, *code, *what;
	json_object *token; /* $/progress token, or NULL */
	int64_t create_id;  /* workDoneProgress/create waiting, or 0 */
	bool create_pending;
	struct buf line[2]; /* a partial line per stream */
	struct buf output;  /* everything, up to LSP_OUTPUT_MAX */
	bool output_cut;
	size_t lines;
	char run_id[32];
};

static struct lsp_run *runs; /* one kiln per process: the loop thread's list */

static void progress(struct lsp_run *lr, const char *kind, const char *message)
{
	if (!lr->token || lr->create_pending)
		return;
	json_object *v = json_object_new_object();
	json_object_object_add(v, "kind", json_object_new_string(kind));
	if (strcmp(kind, "begin") == 0) {
		json_object_object_add(v, "title", json_object_new_string("kiln run"));
		json_object_object_add(v, "cancellable", json_object_new_boolean(false));
	}
	if (message) {
		struct buf b;
		buf_init(&b, 1024);
		vis_append(&b, message, strlen(message) > 200 ? 200 : strlen(message), 0);
		json_object_object_add(v, "message", json_object_new_string(b.data ? b.data : ""));
		buf_release(&b);
	}
	json_object *p = json_object_new_object();
	json_object_object_add(p, "token", json_object_get(lr->token));
	json_object_object_add(p, "value", v);
	rpc_notify(lr->k->rpc, "$/progress", p);
}

static void on_drain(void *data);

static void lsp_run_free(struct lsp_run *lr)
{
	for (struct lsp_run **pp = &runs; *pp; pp = &(*pp)->next)
		if (*pp == lr) {
			*pp = lr->next;
			break;
		}
	if (lr->paused)
		rpc_peer_cancel_drain(lr->k->peer, on_drain, lr);
	if (lr->create_pending)
		rpc_request_forget(lr->k->rpc, lr->create_id);
	free(lr->language);
	free(lr->code);
	free(lr->what);
	json_object_put(lr->token);
	buf_release(&lr->line[0]);
	buf_release(&lr->line[1]);
	buf_release(&lr->output);
	free(lr);
}

static void on_drain(void *data)
{
	struct lsp_run *lr = data;
	struct run *run = lr->paused;
	lr->paused = NULL;
	if (run)
		run_resume_output(run);
}

/* Whole lines go out as logMessage (stderr's as warnings), the last one
 * also as the progress message; a line longer than LSP_LINE_MAX goes
 * out in pieces. */
static void emit_lines(struct lsp_run *lr, enum run_stream stream, bool flush)
{
	struct buf *b = &lr->line[stream == RUN_STDERR];
	size_t start = 0;
	for (size_t i = 0; i < b->len; i++) {
		if (b->data[i] != '\n' && i - start < LSP_LINE_MAX)
			continue;
		size_t end = i;
		if (end > start && b->data[end - 1] == '\r')
			end--;
		lsp_log(lr->k, stream == RUN_STDERR ? MSG_WARNING : MSG_LOG, b->data + start,
		        end - start);
		lr->lines++;
		start = b->data[i] == '\n' ? i + 1 : i;
	}
	if (flush && start < b->len) {
		lsp_log(lr->k, stream == RUN_STDERR ? MSG_WARNING : MSG_LOG, b->data + start,
		        b->len - start);
		lr->lines++;
		start = b->len;
	}
	if (start > 0) {
		/* The last whole line as progress, before it is dropped. */
		char last[201];
		size_t e = start, s;
		while (e > 0 && (b->data[e - 1] == '\n' || b->data[e - 1] == '\r'))
			e--;
		s = e;
		while (s > 0 && b->data[s - 1] != '\n')
			s--;
		size_t n = e - s < 200 ? e - s : 200;
		memcpy(last, b->data + s, n);
		last[n] = '\0';
		if (n)
			progress(lr, "report", last);
		buf_consume(b, start);
	}
}

static enum run_flow on_output(void *data, struct run *run, enum run_stream stream,
                               const char *text, size_t len)
{
	struct lsp_run *lr = data;
	struct kiln *k = lr->k;
	if (!lr->output_cut && buf_append(&lr->output, text, len) == -ENOBUFS)
		lr->output_cut = true;
	struct buf *b = &lr->line[stream == RUN_STDERR];
	if (buf_append(b, text, len) < 0) {
		emit_lines(lr, stream, true);
		buf_append(b, text, len);
	}
	emit_lines(lr, stream, false);
	if (!k->peer || !rpc_peer_congested(k->peer) || lr->paused)
		return RUN_CONTINUE;
	if (rpc_peer_on_drain(k->peer, on_drain, lr) < 0)
		return RUN_CONTINUE;
	lr->paused = run;
	return RUN_PAUSE;
}

static void on_artifact(void *data, struct run *run, const struct run_artifact *a)
{
	(void)run;
	struct lsp_run *lr = data;
	char msg[512];
	snprintf(msg, sizeof(msg), "kiln: %s wrote %s (%s, %llu bytes)%s%s", lr->run_id, a->name,
	         a->mime_type, (unsigned long long)a->size, a->path ? " at " : "",
	         a->path ? a->path : "");
	lsp_log(lr->k, MSG_INFO, msg, strlen(msg));
}

static const struct run_sink lsp_sink = {
    .output = on_output, .artifact = on_artifact, .measure = json_string_fit};

static void on_run_done(void *data, const struct run_outcome *o, int err, const char *errmsg)
{
	struct lsp_run *lr = data;
	struct kiln *k = lr->k;
	lr->run = NULL;
	if (err < 0) {
		char msg[600];
		snprintf(msg, sizeof(msg), "kiln could not run the %s: %s", lr->what, errmsg);
		progress(lr, "end", msg);
		lsp_show(k, MSG_ERROR, msg);
		lsp_run_free(lr);
		return;
	}
	emit_lines(lr, RUN_STDOUT, true);
	emit_lines(lr, RUN_STDERR, true);
	char how[64], sig[24], summary[512];
	if (o->timed_out)
		snprintf(how, sizeof(how), "timed out");
	else if (o->exited)
		snprintf(how, sizeof(how), "exited %d", o->exit_code);
	else
		snprintf(how, sizeof(how), "killed by %s",
		         run_signal_name(o->signal, sig, sizeof(sig)));
	snprintf(summary, sizeof(summary),
	         "kiln: %s of the %s (%s) %s in %llu ms, %zu line%s of output%s", o->run_id,
	         lr->what, lr->language, how, (unsigned long long)o->duration_ms, lr->lines,
	         lr->lines == 1 ? "" : "s", o->truncated ? " (cut at the output limit)" : "");
	progress(lr, "end", summary);
	lsp_show(k, o->exited && o->exit_code == 0 ? MSG_INFO : MSG_WARNING, summary);
	if (k->client_show_document) {
		char name[48];
		snprintf(name, sizeof(name), "run-%s", lr->run_id);
		lsp_show_document(k, name, summary, lr->output.data, lr->output.len,
		                  lr->output_cut);
	}
	lsp_run_free(lr);
}

/* The executeCommand call is answered with an error, and the run forgotten. */
static void fail_call(struct lsp_run *lr, int code, json_object *data, const char *msg)
{
	if (lr->call)
		rpc_call_error(lr->call, code, msg, data);
	else
		json_object_put(data);
	lr->call = NULL;
	lsp_run_free(lr);
}

static void start_run(struct lsp_run *lr)
{
	int r = run_start(lr->k->sandbox, &lsp_sink, lr, lr->language, lr->code, NULL, on_run_done,
	                  lr, &lr->run);
	if (r < 0) {
		lsp_show(lr->k, MSG_ERROR, "kiln could not start the run: out of memory");
		fail_call(lr, RPC_INTERNAL_ERROR, NULL, "Internal error: out of memory");
		return;
	}
	snprintf(lr->run_id, sizeof(lr->run_id), "%s", run_id(lr->run));
	progress(lr, "begin", lr->what);
	if (lr->call) {
		json_object *res = json_object_new_object();
		json_object_object_add(res, "runId", json_object_new_string(lr->run_id));
		rpc_call_reply(lr->call, res);
		lr->call = NULL;
	}
}

static void on_created(void *data, json_object *result, json_object *error)
{
	(void)result;
	struct lsp_run *lr = data;
	lr->create_pending = false;
	if (error) {
		/* The client would not take the token: no progress, the rest as usual. */
		json_object_put(lr->token);
		lr->token = NULL;
	}
	if (!lr->job && !lr->run && lr->code)
		start_run(lr);
}

static void on_validated(void *data, int r, struct val_report *rep, const char *code, size_t len,
                         const char *detail)
{
	struct lsp_run *lr = data;
	struct kiln *k = lr->k;
	lr->job = NULL;
	if (r == -EINVAL) {
		/* A language the sandbox runs but the validator has no grammar
		 * for: the sandbox still contains it (as snippet/run). */
		log_info("%s: %s is not validated: %s", lr->what, lr->language, detail);
	} else if (r < 0) {
		fail_call(lr, RPC_REQUEST_FAILED, NULL, detail);
		return;
	} else if (rep->verdict == VAL_DENY) {
		json_object *diags = val_report_json(rep, code, len, k->encoding);
		char msg[700];
		const struct val_diag *d0 = rep->ndiags ? &rep->diags[0] : NULL;
		uint32_t line = 0, ch = 0;
		if (d0)
			pos_at(code, len, rep->line_starts, rep->nlines, d0->start, k->encoding,
			       &line, &ch);
		snprintf(msg, sizeof(msg),
		         "the validator denied this code (line %u: %s); fix it first", line + 1,
		         d0 ? d0->message : "no reason given");
		val_report_release(rep);
		json_object *ed = json_object_new_object();
		json_object_object_add(ed, "kind", json_object_new_string("denied"));
		json_object_object_add(ed, "diagnostics", diags);
		lsp_show(k, MSG_ERROR, msg);
		fail_call(lr, RPC_REQUEST_FAILED, ed, msg);
		return;
	}
	if (r >= 0)
		val_report_release(rep);
	if (!lr->create_pending)
		start_run(lr);
}

/* {uri, range?}: the document's text, or the range's. */
static int command_code(struct kiln *k, json_object *arg, bool selection,
                        const struct doc **ret_doc, size_t *ret_start, size_t *ret_end,
                        char *detail, size_t dsz)
{
	const char *uri;
	if (json_get_string(arg, "uri", &uri) < 0) {
		snprintf(detail, dsz, "Invalid params: the command's argument wants {uri%s}",
		         selection ? ", range" : "");
		return -EINVAL;
	}
	const struct doc *d = docs_find(k->docs, uri);
	if (!d) {
		snprintf(detail, dsz, "kiln has not seen %s opened (didOpen)", uri);
		return -ENOENT;
	}
	if (d->too_big) {
		snprintf(detail, dsz, "%s is over kiln's %u MiB document limit", uri,
		         DOC_MAX_TEXT >> 20);
		return -EFBIG;
	}
	size_t start = 0, end = d->text.len;
	if (selection) {
		json_object *range = json_get(arg, "range");
		if (docs_offset(d, json_get(range, "start"), k->encoding, &start) < 0 ||
		    docs_offset(d, json_get(range, "end"), k->encoding, &end) < 0 || end < start) {
			snprintf(detail, dsz, "Invalid params: range is not an LSP range");
			return -EINVAL;
		}
	}
	*ret_doc = d;
	*ret_start = start;
	*ret_end = end;
	return 0;
}

/* executeCommand's workDoneToken while its handler runs (borrowed). */
static json_object *lr_token_given;

/* $/cancelRequest or the end of the session before the run started. */
static void on_call_cancel(void *data)
{
	struct lsp_run *lr = data;
	if (lr->job)
		val_job_cancel(lr->job);
	lr->job = NULL;
	lr->call = NULL;
	lsp_run_free(lr);
}

static int execute_run(struct rpc_call *call, struct kiln *k, json_object *arg, bool selection)
{
	char detail[600] = "";
	const struct doc *d;
	size_t start, end;
	int r = command_code(k, arg, selection, &d, &start, &end, detail, sizeof(detail));
	if (r < 0) {
		rpc_call_error(call, r == -EINVAL ? RPC_INVALID_PARAMS : RPC_REQUEST_FAILED, detail,
		               NULL);
		return 0;
	}
	if (!d->language) {
		rpc_call_errorf(call, RPC_REQUEST_FAILED, NULL,
		                "kiln does not know how to run %s (languageId %s); languages: %s",
		                d->uri, d->language_id ? d->language_id : "none",
		                lang_names(detail, sizeof(detail)));
		return 0;
	}
	if (!k->sandbox) {
		rpc_call_error(
		    call, RPC_REQUEST_FAILED,
		    "kiln will not run this code: the sandbox subsystem did not start (see "
		    "the server's log)",
		    NULL);
		return 0;
	}
	if (end == start) {
		rpc_call_error(call, RPC_REQUEST_FAILED,
		               "there is no code to run: the selection is empty", NULL);
		return 0;
	}
	struct lsp_run *lr = calloc(1, sizeof(*lr));
	if (!lr)
		return -ENOMEM;
	lr->k = k;
	lr->call = call;
	buf_init(&lr->line[0], LSP_LINE_MAX * 2);
	buf_init(&lr->line[1], LSP_LINE_MAX * 2);
	buf_init(&lr->output, LSP_OUTPUT_MAX);
	lr->language = strdup(d->language);
	lr->code = strndup(d->text.data + start, end - start);
	lr->what = strdup(selection ? "selection" : "document");
	if (!lr->language || !lr->code || !lr->what) {
		lsp_run_free(lr);
		return -ENOMEM;
	}
	lr->next = runs;
	runs = lr;
	rpc_call_on_cancel(call, on_call_cancel, lr);
	/* The client's own token (executeCommand's workDoneToken, which VS
	 * Code sends), else one kiln asks the client to create, when it can
	 * show progress at all. */
	static unsigned seq;
	if (lr_token_given) {
		lr->token = json_object_get(lr_token_given);
	} else if (k->client_work_done_progress) {
		char tok[48];
		snprintf(tok, sizeof(tok), "kiln-run-%u", ++seq);
		lr->token = json_object_new_string(tok);
		json_object *p = json_object_new_object();
		json_object_object_add(p, "token", json_object_get(lr->token));
		if (rpc_request(k->rpc, "window/workDoneProgress/create", p, 5000, on_created, lr,
		                &lr->create_id) == 0)
			lr->create_pending = true;
		else {
			json_object_put(lr->token);
			lr->token = NULL;
		}
	}
	if (k->validator) {
		r = val_check_async(k->validator, k->loop, lr->language, lr->code, strlen(lr->code),
		                    NULL, on_validated, lr, &lr->job);
		if (r < 0) {
			lr->job = NULL;
			fail_call(lr, RPC_REQUEST_FAILED, NULL,
			          r == -EBUSY
			              ? "the validator is busy: too many big checks are waiting"
			              : "the validator's thread cannot start");
			return 0;
		}
	} else if (!lr->create_pending) {
		start_run(lr);
	}
	return 0;
}

/* --- the two methods --- */

static bool only_allows(json_object *context)
{
	/* Run actions carry no kind, so a request for particular kinds
	 * (context.only) gets none of them. */
	json_object *only = json_get(context, "only");
	return !only || !json_object_is_type(only, json_type_array) ||
	       json_object_array_length(only) == 0;
}

int method_text_document_code_action(struct rpc_call *call, json_object *params)
{
	struct kiln *k = rpc_call_ctx(call);
	const char *uri;
	json_object *range = json_get(params, "range");
	if (json_get_string(json_get(params, "textDocument"), "uri", &uri) < 0 || !range) {
		rpc_call_error(
		    call, RPC_INVALID_PARAMS,
		    "Invalid params: textDocument/codeAction wants textDocument.uri and range",
		    NULL);
		return 0;
	}
	json_object *actions = json_object_new_array();
	const struct doc *d = docs_find(k->docs, uri);
	if (!d || !d->language || d->too_big || !only_allows(json_get(params, "context"))) {
		rpc_call_reply(call, actions);
		return 0;
	}
	size_t start, end;
	if (docs_offset(d, json_get(range, "start"), k->encoding, &start) == 0 &&
	    docs_offset(d, json_get(range, "end"), k->encoding, &end) == 0 && end > start) {
		json_object *arg = json_object_new_object();
		json_object_object_add(arg, "uri", json_object_new_string(uri));
		json_object_object_add(arg, "range", json_object_get(range));
		json_object_array_add(actions,
		                      lsp_action("Run selection in kiln", CMD_RUN_SELECTION, arg));
	}
	lsp_intent_actions(k, d, range, actions);
	json_object *arg = json_object_new_object();
	json_object_object_add(arg, "uri", json_object_new_string(uri));
	json_object_array_add(actions, lsp_action("Run document in kiln", CMD_RUN_DOCUMENT, arg));
	rpc_call_reply(call, actions);
	return 0;
}

int method_workspace_execute_command(struct rpc_call *call, json_object *params)
{
	struct kiln *k = rpc_call_ctx(call);
	const char *command;
	if (json_get_string(params, "command", &command) < 0) {
		rpc_call_error(call, RPC_INVALID_PARAMS,
		               "Invalid params: workspace/executeCommand wants a command", NULL);
		return 0;
	}
	json_object *args = json_get(params, "arguments");
	json_object *arg = args && json_object_is_type(args, json_type_array)
	                       ? json_object_array_get_idx(args, 0)
	                       : NULL;
	lr_token_given = json_get(params, "workDoneToken");
	int r;
	if (strcmp(command, CMD_RUN_SELECTION) == 0)
		r = execute_run(call, k, arg, true);
	else if (strcmp(command, CMD_RUN_DOCUMENT) == 0)
		r = execute_run(call, k, arg, false);
	else if (lsp_intent_execute(call, k, command, arg, &r))
		;
	else {
		rpc_call_errorf(call, RPC_INVALID_PARAMS, NULL,
		                "Invalid params: kiln has no command %s (it has %s, %s, %s, %s)",
		                command, CMD_RUN_SELECTION, CMD_RUN_DOCUMENT, LSP_CMD_WRITE_CODE,
		                LSP_CMD_RUN_PROPOSAL);
		r = 0;
	}
	lr_token_given = NULL;
	return r;
}

void lsp_runs_cancel_all(struct kiln *k)
{
	(void)k;
	while (runs) {
		struct lsp_run *lr = runs;
		if (lr->job)
			val_job_cancel(lr->job);
		if (lr->run)
			run_cancel(lr->run);
		lr->job = NULL;
		lr->run = NULL;
		if (lr->call) {
			/* Its cancel hook is dispatch's to run: leave the call be
			 * and let dispatch answer -32800. */
			rpc_call_on_cancel(lr->call, NULL, NULL);
		}
		progress(lr, "end", "cancelled: the session is ending");
		lsp_run_free(lr);
	}
}
