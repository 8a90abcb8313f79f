/* documents.c: textDocument/didOpen, didChange and didClose. kiln keeps
 * each document's version, so that approving a proposal made for an older
 * version reports the conflict instead of running stale code, and its text
 * (methods/doc_store.c), which diagnostics and code actions read. */
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
#include "methods/diagnostics.h"
#include "methods/doc_store.h"
#include "methods/intent_common.h"
#include "rpc/message.h"
#include "rpc/peer.h"
#include "sandbox/run/run.h"
#include "validate/validate.h"

static void doc_version(struct kiln *k, json_object *params, bool opened)
{
	json_object *doc = json_get(params, "textDocument");
	const char *uri;
	int64_t version;
	if (json_get_string(doc, "uri", &uri) < 0 || json_get_int64(doc, "version", &version) < 0)
		return;
	if (opened)
		intent_doc_opened(k->intent, uri, version);
	else
		intent_doc_seen(k->intent, uri, version);
}

int method_text_document_did_open(struct rpc_call *call, json_object *params)
{
	struct kiln *k = rpc_call_ctx(call);
	doc_version(k, params, true);
	json_object *td = json_get(params, "textDocument");
	const char *uri, *language_id = NULL;
	int64_t version = 0;
	json_object *text = json_get(td, "text");
	if (json_get_string(td, "uri", &uri) < 0 || !text ||
	    !json_object_is_type(text, json_type_string)) {
		log_warn("didOpen without textDocument.uri and text: ignored");
		return 0;
	}
	json_get_string(td, "languageId", &language_id);
	json_get_int64(td, "version", &version);
	struct doc *d;
	int r = docs_open(k->docs, uri, language_id, version, json_object_get_string(text),
	                  (size_t)json_object_get_string_len(text), &d);
	if (r == -ENOSPC) {
		log_warn("%s is not tracked: %d documents are open already", uri, DOC_MAX_DOCS);
		return 0;
	}
	if (r < 0)
		return r;
	diag_schedule(k, d, true);
	return 0;
}

/* Whole texts and incremental changes (initialize advertises change: 2)
 * alike: the version goes to the proposals' conflict check, the text to
 * the document store, and a check is scheduled once typing pauses. */
int method_text_document_did_change(struct rpc_call *call, json_object *params)
{
	struct kiln *k = rpc_call_ctx(call);
	doc_version(k, params, false);
	const char *uri;
	int64_t version = 0;
	json_object *td = json_get(params, "textDocument");
	if (json_get_string(td, "uri", &uri) < 0)
		return 0;
	json_get_int64(td, "version", &version);
	struct doc *d = NULL;
	char detail[200] = "";
	int r = docs_change(k->docs, uri, version, json_get(params, "contentChanges"), k->encoding,
	                    &d, detail, sizeof(detail));
	if (r == -ENOENT)
		return 0;
	if (r == -EINVAL) {
		/* The text is no longer known to match the client's: stop
		 * showing diagnostics for it until it is reopened. */
		log_warn("%s: %s", uri, detail);
		diag_close(k, d);
		docs_close(k->docs, uri);
		return 0;
	}
	if (r < 0)
		return r;
	diag_schedule(k, d, false);
	return 0;
}

int method_text_document_did_close(struct rpc_call *call, json_object *params)
{
	struct kiln *k = rpc_call_ctx(call);
	const char *uri;
	if (json_get_string(json_get(params, "textDocument"), "uri", &uri) == 0) {
		intent_doc_closed(k->intent, uri);
		struct doc *d = docs_find(k->docs, uri);
		if (d) {
			diag_close(k, d);
			docs_close(k->docs, uri);
		}
	}
	return 0;
}
