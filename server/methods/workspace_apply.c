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
#include "methods/workspace_paths.h"
#include "sandbox/workspace/ledger.h"

struct wa {
	struct rpc_call *call; /* NULL once the client cancelled it */
};

static void on_cancel(void *data)
{
	struct wa *wa = data;
	wa->call = NULL; /* the writes go on: each is whole or not at all */
}

static const char *skip_path(const void *bad, size_t i)
{
	return ((const struct sbx_ws_skip *)bad)[i].path;
}

static const char *skip_why(const void *bad, size_t i)
{
	return ((const struct sbx_ws_skip *)bad)[i].why;
}

static void on_applied(void *data, const struct sbx_ws_apply_result *res)
{
	struct wa *wa = data;
	if (wa->call && !res) {
		rpc_call_error(wa->call, RPC_REQUEST_FAILED, "kiln is ending: nothing more applied",
		               NULL);
	} else if (wa->call) {
		rpc_call_reply(wa->call,
		               ws_paths_reply("applied", (const char *const *)res->applied,
		                              res->napplied, "skipped", res->nskipped, skip_path,
		                              skip_why, res->skipped));
	}
	free(wa);
}

int method_workspace_apply_changes(struct rpc_call *call, json_object *params)
{
	struct kiln *k = rpc_call_ctx(call);
	const char *run_id;
	const char **paths;
	int r = ws_paths_params(call, params, "workspace/applyChanges", &run_id, &paths);
	if (r)
		return r < 0 ? r : 0;
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
		ws_paths_unknown_run(call, run_id);
		return 0;
	}
	if (r < 0) {
		free(wa);
		rpc_call_error(call, RPC_INTERNAL_ERROR, "out of memory", NULL);
	}
	return 0;
}
