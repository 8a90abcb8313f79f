/* workspace_paths.c: the params, error and reply that
 * workspace/applyChanges and workspace/declineChanges share
 * (workspace_paths.h). */
#include "methods/workspace_paths.h"

#include <errno.h>
#include <stdlib.h>

#include "core/json.h"
#include "methods/methods.h"
#include "sandbox/workspace/ledger.h"

/* A run reports at most 1000 changes (wsdiff.h). */
#define MAX_PATHS 1000

int ws_paths_params(struct rpc_call *call, json_object *params, const char *method,
                    const char **ret_run_id, const char ***ret_paths)
{
	const char *run_id = NULL;
	json_object *list = NULL;
	int r = json_get_array(params, "paths", &list);
	size_t n = list ? json_object_array_length(list) : 0;
	if (!params || !json_object_is_type(params, json_type_object) ||
	    json_get_string(params, "runId", &run_id) < 0 || r == -EINVAL || n > MAX_PATHS) {
		rpc_call_errorf(call, RPC_INVALID_PARAMS, NULL,
		                "Invalid params: %s takes {runId, paths?: [string] (at most %d)}",
		                method, MAX_PATHS);
		return 1;
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
			return 1;
		}
		paths[i] = json_object_get_string(p);
	}
	*ret_run_id = run_id;
	*ret_paths = paths;
	return 0;
}

void ws_paths_unknown_run(struct rpc_call *call, const char *run_id)
{
	rpc_call_errorf(call, RPC_INVALID_PARAMS, NULL,
	                "Invalid params: kiln keeps no workspace changes of run %s (none were "
	                "made, or it is older than the last %d runs that made some)",
	                run_id, SBX_WS_LEDGER_RUNS);
}

json_object *ws_paths_reply(const char *ok_key, const char *const *ok, size_t n_ok,
                            const char *bad_key, size_t n_bad,
                            const char *(*path_at)(const void *bad, size_t i),
                            const char *(*why_at)(const void *bad, size_t i), const void *bad)
{
	json_object *r = json_object_new_object();
	json_object *oks = json_object_new_array();
	for (size_t i = 0; i < n_ok; i++)
		json_object_array_add(oks, json_object_new_string(ok[i]));
	json_object *bads = json_object_new_array();
	for (size_t i = 0; i < n_bad; i++) {
		json_object *b = json_object_new_object();
		json_object_object_add(b, "path", json_object_new_string(path_at(bad, i)));
		json_object_object_add(b, "reason", json_object_new_string(why_at(bad, i)));
		json_object_array_add(bads, b);
	}
	json_object_object_add(r, ok_key, oks);
	json_object_object_add(r, bad_key, bads);
	return r;
}
