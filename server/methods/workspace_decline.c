/* workspace_decline.c: workspace/declineChanges {runId, paths?}: the
 * person said no to a run's workspace changes (or some of them). None of
 * them can be applied afterwards, and a session's run has them taken out
 * of the session's layer, so that its next run sees the folder's files
 * (sandbox/session/session.h, sbx_session_decline). Reply: {declined:
 * [path], kept: [{path, reason}]}: kept are those the session still
 * shows, each with why. */
#include "methods/methods.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "kiln.h"
#include "sandbox/session/session.h"
#include "sandbox/workspace/ledger.h"

/* A run reports at most 1000 changes (wsdiff.h). */
#define MAX_PATHS 1000

struct wd {
	struct rpc_call *call; /* NULL once the client cancelled it */
};

static void on_cancel(void *data)
{
	struct wd *wd = data;
	wd->call = NULL; /* the decline goes on: the session is left consistent */
}

static void on_declined(void *data, const struct sbx_session_decline_result *res)
{
	struct wd *wd = data;
	if (wd->call && !res) {
		rpc_call_error(wd->call, RPC_REQUEST_FAILED,
		               "kiln is ending: nothing more declined", NULL);
	} else if (wd->call) {
		json_object *r = json_object_new_object();
		json_object *declined = json_object_new_array();
		for (size_t i = 0; i < res->ndeclined; i++)
			json_object_array_add(declined, json_object_new_string(res->declined[i]));
		json_object *kept = json_object_new_array();
		for (size_t i = 0; i < res->nkept; i++) {
			json_object *k = json_object_new_object();
			json_object_object_add(k, "path",
			                       json_object_new_string(res->kept[i].path));
			json_object_object_add(k, "reason",
			                       json_object_new_string(res->kept[i].why));
			json_object_array_add(kept, k);
		}
		json_object_object_add(r, "declined", declined);
		json_object_object_add(r, "kept", kept);
		rpc_call_reply(wd->call, r);
	}
	free(wd);
}

int method_workspace_decline_changes(struct rpc_call *call, json_object *params)
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
		    "Invalid params: workspace/declineChanges takes {runId, paths?: [string] "
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
	struct wd *wd = calloc(1, sizeof(*wd));
	if (!wd) {
		free(paths);
		return -ENOMEM;
	}
	wd->call = call;
	/* Before the start: done may be called before it returns. */
	rpc_call_on_cancel(call, on_cancel, wd);
	char err[256] = "";
	r = k->sandbox
	        ? sbx_session_decline(k->sandbox, run_id, paths, on_declined, wd, err, sizeof(err))
	        : -ENOENT;
	free(paths);
	if (r == -ENOENT) {
		free(wd);
		rpc_call_errorf(
		    call, RPC_INVALID_PARAMS, NULL,
		    "Invalid params: kiln keeps no workspace changes of run %s (none were "
		    "made, or it is older than the last %d runs that made some)",
		    run_id, SBX_WS_LEDGER_RUNS);
	} else if (r == -EBUSY) {
		free(wd);
		rpc_call_error(call, RPC_REQUEST_FAILED, err, NULL);
	} else if (r < 0) {
		free(wd);
		rpc_call_error(call, RPC_INTERNAL_ERROR, "out of memory", NULL);
	}
	return 0;
}
