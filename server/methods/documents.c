/* documents.c: textDocument/didOpen, didChange and didClose. kiln keeps
 * only each document's version, so that approving a proposal made for an
 * older version reports the conflict instead of running stale code. */
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
#include "rpc/message.h"
#include "rpc/peer.h"
#include "sandbox/run.h"
#include "validate/validate.h"

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

/* Whole texts and incremental changes (initialize advertises change: 2)
 * alike: kiln keeps no text, only the version, which every didChange
 * carries in its VersionedTextDocumentIdentifier. contentChanges is left
 * alone on purpose. */
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
