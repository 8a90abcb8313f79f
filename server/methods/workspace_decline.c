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
#include "methods/workspace_paths.h"
#include "sandbox/session/session.h"
#include "sandbox/workspace/ledger.h"

struct wd {
	struct rpc_call *call; /* NULL once the client cancelled it */
};

static void on_cancel(void *data)
{
	struct wd *wd = data;
	wd->call = NULL; /* the decline goes on: the session is left consistent */
}

static const char *kept_path(const void *bad, size_t i)
{
	return ((const struct sbx_session_decline_path *)bad)[i].path;
}

static const char *kept_why(const void *bad, size_t i)
{
	return ((const struct sbx_session_decline_path *)bad)[i].why;
}

static void on_declined(void *data, const struct sbx_session_decline_result *res)
{
	struct wd *wd = data;
	if (wd->call && !res) {
		rpc_call_error(wd->call, RPC_REQUEST_FAILED,
		               "kiln is ending: nothing more declined", NULL);
	} else if (wd->call) {
		rpc_call_reply(wd->call,
		               ws_paths_reply("declined", res->declined, res->ndeclined, "kept",
		                              res->nkept, kept_path, kept_why, res->kept));
	}
	free(wd);
}

int method_workspace_decline_changes(struct rpc_call *call, json_object *params)
{
	struct kiln *k = rpc_call_ctx(call);
	const char *run_id;
	const char **paths;
	int r = ws_paths_params(call, params, "workspace/declineChanges", &run_id, &paths);
	if (r)
		return r < 0 ? r : 0;
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
		ws_paths_unknown_run(call, run_id);
	} else if (r == -EBUSY) {
		free(wd);
		rpc_call_error(call, RPC_REQUEST_FAILED, err, NULL);
	} else if (r < 0) {
		free(wd);
		rpc_call_error(call, RPC_INTERNAL_ERROR, "out of memory", NULL);
	}
	return 0;
}
