/* diagnostics.c: published and pulled diagnostics for open documents (see
 * diagnostics.h). A check always runs on the validator's thread: a 200-line
 * file costs a millisecond or two, a big one seconds, and neither may hold
 * up the loop. A check's answer is published only if the document is still
 * at the version it was made of; a newer change has its own check queued. */
#include "methods/diagnostics.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "core/json.h"
#include "core/lang.h"
#include "core/log.h"
#include "core/loop.h"
#include "kiln.h"
#include "methods/doc_store.h"
#include "methods/methods.h"
#include "rpc/dispatch.h"
#include "rpc/message.h"
#include "validate/validate.h"

/* Per document: its pending debounce and check. */
struct diag_state {
	struct kiln *k;
	struct doc *doc;
	struct loop_timer *timer;
	struct val_job *job;
	int64_t job_version;
	bool published; /* something non-empty is on the client's screen */
};

bool diag_enabled(const struct kiln *k)
{
	bool on = true;
	json_get_bool(config_section(k->config, "validator"), "publishDiagnostics", &on);
	return on;
}

bool diag_checks(const struct doc *d)
{
	if (!d->language)
		return false;
	const struct lang *l = lang_find(d->language);
	return l && l->validator;
}

static struct diag_state *state_of(struct kiln *k, struct doc *d)
{
	if (!d->diag) {
		struct diag_state *st = calloc(1, sizeof(*st));
		if (!st)
			return NULL;
		st->k = k;
		st->doc = d;
		d->diag = st;
	}
	return d->diag;
}

static void publish(struct kiln *k, const char *uri, int64_t version, json_object *diags)
{
	json_object *p = json_object_new_object();
	json_object_object_add(p, "uri", json_object_new_string(uri));
	if (version >= 0)
		json_object_object_add(p, "version", json_object_new_int64(version));
	json_object_object_add(p, "diagnostics", diags ? diags : json_object_new_array());
	rpc_notify(k->rpc, "textDocument/publishDiagnostics", p);
}

static void on_checked(void *data, int r, struct val_report *rep, const char *code, size_t len,
                       const char *detail)
{
	struct diag_state *st = data;
	st->job = NULL;
	if (r < 0) {
		if (r != -ECANCELED)
			log_info("diagnostics for %s: %s", st->doc->uri, detail);
		return;
	}
	if (st->doc->version == st->job_version) {
		publish(st->k, st->doc->uri, st->doc->version,
		        val_report_json(rep, code, len, st->k->encoding));
		st->published = rep->ndiags > 0;
	}
	val_report_release(rep);
}

static void start_check(struct loop *loop, void *data)
{
	(void)loop;
	struct diag_state *st = data;
	struct kiln *k = st->k;
	struct doc *d = st->doc;
	st->timer = NULL;
	if (st->job) {
		val_job_cancel(st->job);
		st->job = NULL;
	}
	if (!k->validator || !diag_checks(d))
		return;
	if (d->too_big || d->text.len > VAL_MAX_CODE) {
		log_info("no diagnostics for %s: it is over the validator's %u MiB", d->uri,
		         VAL_MAX_CODE >> 20);
		if (st->published)
			publish(k, d->uri, d->version, NULL);
		st->published = false;
		return;
	}
	st->job_version = d->version;
	int r =
	    val_check_async(k->validator, k->loop, d->language, d->text.data ? d->text.data : "",
	                    d->text.len, NULL, on_checked, st, &st->job);
	if (r < 0) {
		st->job = NULL;
		log_warn("diagnostics for %s: the validator's thread refused the check: %s", d->uri,
		         strerror(-r));
	}
}

void diag_schedule(struct kiln *k, struct doc *d, bool opened)
{
	if (!k->rpc || !diag_enabled(k) || !diag_checks(d))
		return;
	struct diag_state *st = state_of(k, d);
	if (!st)
		return;
	loop_timer_stop(k->loop, st->timer);
	st->timer = loop_timer_start(k->loop, opened ? 0 : DIAG_DEBOUNCE_MS, start_check, st);
}

void diag_close(struct kiln *k, struct doc *d)
{
	struct diag_state *st = d->diag;
	if (!st)
		return;
	loop_timer_stop(k->loop, st->timer);
	if (st->job)
		val_job_cancel(st->job);
	/* LSP: clear a closed document's diagnostics, or they stay listed. */
	if (st->published && k->rpc)
		publish(k, d->uri, -1, NULL);
	free(st);
	d->diag = NULL;
}

void diag_release_all(struct kiln *k)
{
	for (struct doc *d = k->docs->docs; d; d = d->next) {
		struct diag_state *st = d->diag;
		if (st)
			st->published = false;
		diag_close(k, d);
	}
}

/* --- textDocument/diagnostic (pull) --- */

struct pull {
	struct rpc_call *call;
	struct kiln *k;
	struct val_job *job;
};

static json_object *full_report(json_object *items)
{
	json_object *r = json_object_new_object();
	json_object_object_add(r, "kind", json_object_new_string("full"));
	json_object_object_add(r, "items", items ? items : json_object_new_array());
	return r;
}

static void on_pulled(void *data, int r, struct val_report *rep, const char *code, size_t len,
                      const char *detail)
{
	struct pull *p = data;
	if (r < 0) {
		rpc_call_error(p->call, RPC_REQUEST_FAILED, detail && detail[0] ? detail : NULL,
		               NULL);
	} else {
		rpc_call_reply(p->call,
		               full_report(val_report_json(rep, code, len, p->k->encoding)));
		val_report_release(rep);
	}
	free(p);
}

static void on_pull_cancel(void *data)
{
	struct pull *p = data;
	val_job_cancel(p->job);
	free(p);
}

int method_text_document_diagnostic(struct rpc_call *call, json_object *params)
{
	struct kiln *k = rpc_call_ctx(call);
	const char *uri;
	if (json_get_string(json_get(params, "textDocument"), "uri", &uri) < 0) {
		rpc_call_error(call, RPC_INVALID_PARAMS,
		               "Invalid params: textDocument/diagnostic wants textDocument.uri",
		               NULL);
		return 0;
	}
	struct doc *d = docs_find(k->docs, uri);
	/* A document kiln does not check, or one with diagnostics turned off,
	 * has none: an empty full report, as clangd answers for a file it
	 * has no command for. */
	if (!d || !k->validator || !diag_enabled(k) || !diag_checks(d) || d->too_big ||
	    d->text.len > VAL_MAX_CODE) {
		rpc_call_reply(call, full_report(NULL));
		return 0;
	}
	struct pull *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	*p = (struct pull){.call = call, .k = k};
	int r =
	    val_check_async(k->validator, k->loop, d->language, d->text.data ? d->text.data : "",
	                    d->text.len, NULL, on_pulled, p, &p->job);
	if (r < 0) {
		free(p);
		rpc_call_error(call, RPC_REQUEST_FAILED,
		               r == -EBUSY
		                   ? "the validator is busy: too many big checks are waiting"
		                   : "the validator's thread cannot start",
		               NULL);
		return 0;
	}
	rpc_call_on_cancel(call, on_pull_cancel, p);
	return 0;
}
