/* workspace_apply.c: workspace/applyChanges {runId, paths?}: the person
 * approved a run's workspace changes (or some of them); kiln writes them
 * into the folder itself, text and binary alike, each checked first
 * against what the host held (sandbox/workspace/ledger.h, apply.h).
 * Reply: {applied: [path], skipped: [{path, reason}]}. */
#include "methods/methods.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "kiln.h"
#include "sandbox/workspace/ledger.h"

/* A run reports at most 1000 changes (wsdiff.h). */
#define MAX_PATHS 1000

struct wa {
	struct rpc_call *call; /* NULL once the client cancelled it */
};

static void on_cancel(void *data)
{
	struct wa *wa = data;
	wa->call = NULL; /* the writes go on: each is whole or not at all */
}

static void on_applied(void *data, const struct sbx_ws_apply_result *res)
{
	struct wa *wa = data;
	if (wa->call && !res) {
		rpc_call_error(wa->call, RPC_REQUEST_FAILED, "kiln is ending: nothing more applied",
		               NULL);
	} else if (wa->call) {
		json_object *r = json_object_new_object();
		json_object *applied = json_object_new_array();
		for (size_t i = 0; i < res->napplied; i++)
			json_object_array_add(applied, json_object_new_string(res->applied[i]));
		json_object *skipped = json_object_new_array();
		for (size_t i = 0; i < res->nskipped; i++) {
			json_object *s = json_object_new_object();
			json_object_object_add(s, "path",
			                       json_object_new_string(res->skipped[i].path));
			json_object_object_add(s, "reason",
			                       json_object_new_string(res->skipped[i].why));
			json_object_array_add(skipped, s);
		}
		json_object_object_add(r, "applied", applied);
		json_object_object_add(r, "skipped", skipped);
		rpc_call_reply(wa->call, r);
	}
	free(wa);
}

int method_workspace_apply_changes(struct rpc_call *call, json_object *params)
{
	struct kiln *k = rpc_call_ctx(call);
	const char *run_id = NULL;
	json_object *list = NULL;
	int r = json_get_array(params, "paths", &list);
	size_t n = list ? json_object_array_length(list) : 0;
	if (!params || !json_object_is_type(params, json_type_object) ||
	    json_get_string(params, "runId", &run_id) < 0 || r == -EINVAL || n > MAX_PATHS) {
		rpc_call_error(
		    call, RPC_INVALID_PARAMS,
		    "Invalid params: workspace/applyChanges takes {runId, paths?: [string] "
		    "(at most 1000)}",
		    NULL);
		return 0;
	}
	const char **paths = NULL;
	if (list && !(paths = calloc(n + 1, sizeof(*paths))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(list, i);
		if (!json_object_is_type(p, json_type_string)) {
			free(paths);
			rpc_call_error(call, RPC_INVALID_PARAMS,
			               "Invalid params: paths holds host paths (strings)", NULL);
			return 0;
		}
		paths[i] = json_object_get_string(p);
	}
	struct wa *wa = calloc(1, sizeof(*wa));
	if (!wa) {
		free(paths);
		return -ENOMEM;
	}
	wa->call = call;
	/* Before the start: without a thread, the job is done at once. */
	rpc_call_on_cancel(call, on_cancel, wa);
	r = k->sandbox ? sbx_ws_apply_start(k->sandbox, run_id, paths, on_applied, wa) : -ENOENT;
	free(paths);
	if (r == -ENOENT) {
		free(wa);
		rpc_call_errorf(
		    call, RPC_INVALID_PARAMS, NULL,
		    "Invalid params: kiln keeps no workspace changes of run %s (none were "
		    "made, or it is older than the last %d runs that made some)",
		    run_id, SBX_WS_LEDGER_RUNS);
		return 0;
	}
	if (r < 0) {
		free(wa);
		rpc_call_error(call, RPC_INTERNAL_ERROR, "out of memory", NULL);
	}
	return 0;
}
