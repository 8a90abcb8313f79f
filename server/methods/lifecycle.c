/* lifecycle.c: initialize, initialized, shutdown and exit, as the LSP
 * defines them. initialize also negotiates the position encoding that
 * every range kiln sends afterwards is counted in. */
#include "methods/methods.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "config.h"
#include "core/json.h"
#include "core/log.h"
#include "kiln.h"
#include "methods/diagnostics.h"
#include "methods/workspace_edit.h"
#include "rpc/peer.h"
#include "sandbox/sandbox.h"

/* The client lists encodings in its order of preference; take the first
 * one kiln speaks, else LSP's default, UTF-16. */
static enum pos_encoding negotiate_encoding(json_object *params)
{
	json_object *offered = json_get_path(params, "capabilities.general.positionEncodings");
	if (!offered || !json_object_is_type(offered, json_type_array))
		return POS_UTF16;
	size_t n = json_object_array_length(offered);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(offered, i);
		enum pos_encoding enc;
		if (json_object_is_type(e, json_type_string) &&
		    pos_encoding_parse(json_object_get_string(e), &enc) == 0)
			return enc;
	}
	return POS_UTF16;
}

/* The workspace the client opened: its first workspace folder, else
 * rootUri, else rootPath (LSP's order of preference). The runs see it
 * (sandbox.h); one that cannot be shown is logged and left out. */
static void set_workspace(struct kiln *k, json_object *params)
{
	const char *uri = NULL, *path = NULL;
	json_object *folders = json_get(params, "workspaceFolders");
	if (folders && json_object_is_type(folders, json_type_array) &&
	    json_object_array_length(folders) > 0)
		json_get_string(json_object_array_get_idx(folders, 0), "uri", &uri);
	if (!uri)
		json_get_string(params, "rootUri", &uri);
	char buf[4096];
	if (uri && file_uri_path(uri, buf, sizeof(buf)) == 0)
		path = buf;
	else if (!uri)
		json_get_string(params, "rootPath", &path);
	if (!path || !k->sandbox)
		return;
	char err[512];
	if (sandbox_set_workspace(k->sandbox, path, err, sizeof(err)) < 0)
		log_warn("workspace: %s", err);
	else
		log_info("workspace: %s", sandbox_workspace(k->sandbox));
}

static json_object *capabilities(const struct kiln *k)
{
	json_object *caps = json_object_new_object();
	json_object_object_add(caps, "positionEncoding",
	                       json_object_new_string(pos_encoding_name(k->encoding)));
	/* kiln checks a proposal against the document's version it last saw
	 * (documents.c); conformant clients send didOpen/didChange only when
	 * asked. Incremental (2): kiln keeps versions, not text, so the
	 * smallest changes serve it as well as whole texts. */
	json_object *sync = json_object_new_object();
	json_object_object_add(sync, "openClose", json_object_new_boolean(true));
	json_object_object_add(sync, "change", json_object_new_int(2));
	json_object_object_add(caps, "textDocumentSync", sync);
	/* Plain LSP (docs/lsp.md): diagnostics pushed and pulled, and code
	 * actions whose commands run code or write it. */
	if (diag_enabled(k)) {
		json_object *dp = json_object_new_object();
		json_object_object_add(dp, "identifier", json_object_new_string("kiln"));
		json_object_object_add(dp, "interFileDependencies", json_object_new_boolean(false));
		json_object_object_add(dp, "workspaceDiagnostics", json_object_new_boolean(false));
		json_object_object_add(caps, "diagnosticProvider", dp);
	}
	json_object *cap = json_object_new_object();
	json_object_object_add(cap, "resolveProvider", json_object_new_boolean(false));
	json_object_object_add(caps, "codeActionProvider", cap);
	json_object *ecp = json_object_new_object();
	json_object *cmds = json_object_new_array();
	for (size_t i = 0; i < lsp_commands_count; i++)
		json_object_array_add(cmds, json_object_new_string(lsp_commands[i]));
	json_object_object_add(ecp, "commands", cmds);
	json_object_object_add(caps, "executeCommandProvider", ecp);
	/* kiln's own methods, so a client can tell what this build serves. */
	json_object *kiln = json_object_new_object();
	json_object *methods = json_object_new_array();
	for (size_t i = 0; i < kiln_methods_count; i++) {
		const char *name = kiln_methods[i].name;
		if (strchr(name, '/'))
			json_object_array_add(methods, json_object_new_string(name));
	}
	json_object_object_add(kiln, "methods", methods);
	json_object_object_add(caps, "experimental", kiln);
	return caps;
}

int method_initialize(struct rpc_call *call, json_object *params)
{
	struct kiln *k = rpc_call_ctx(call);
	struct rpc_dispatch *d = rpc_call_dispatch(call);
	if (rpc_dispatch_state(d) != RPC_STATE_UNINITIALIZED) {
		rpc_call_error(call, RPC_INVALID_REQUEST,
		               "Invalid Request: initialize may be sent only once", NULL);
		return 0;
	}
	if (params && !json_object_is_type(params, json_type_object)) {
		rpc_call_error(call, RPC_INVALID_PARAMS,
		               "Invalid params: initialize takes an object (InitializeParams)",
		               NULL);
		return 0;
	}
	json_object *opts = json_get(params, "initializationOptions");
	if (opts && !json_object_is_type(opts, json_type_object)) {
		rpc_call_error(call, RPC_INVALID_PARAMS,
		               "Invalid params: initializationOptions must be an object", NULL);
		return 0;
	}
	/* protocol.replaceNul: send U+0000 as U+FFFD, for clients whose JSON
	 * parser refuses the escape \u0000 (Emacs 28 drops the message). */
	bool replace_nul = false;
	json_object *proto = json_get(opts, "protocol");
	if (proto && (!json_object_is_type(proto, json_type_object) ||
	              (json_get(proto, "replaceNul") &&
	               json_get_bool(proto, "replaceNul", &replace_nul) < 0))) {
		rpc_call_error(call, RPC_INVALID_PARAMS,
		               "Invalid params: initializationOptions: \"protocol\" must be an "
		               "object and protocol.replaceNul true or false",
		               NULL);
		return 0;
	}
	char detail[256] = "";
	if (config_check(opts, "initializationOptions", detail, sizeof(detail)) < 0) {
		rpc_call_error(call, RPC_INVALID_PARAMS, detail, NULL);
		return 0;
	}
	/* The client's options lie over the config file. Built aside, so a
	 * section that is not valid changes nothing and says why. */
	json_object *merged = json_copy(k->config);
	if (!merged || config_merge(merged, opts) < 0) {
		json_object_put(merged);
		return -ENOMEM;
	}
	if (kiln_reconfigure(k, merged, opts, detail, sizeof(detail)) < 0) {
		json_object_put(merged);
		rpc_call_errorf(call, RPC_INVALID_PARAMS, NULL,
		                "Invalid params: initializationOptions: %s", detail);
		return 0;
	}
	json_object_put(k->config);
	k->config = merged;
	json_object_put(k->init_options);
	k->init_options = json_copy(opts);
	k->encoding = negotiate_encoding(params);
	json_object *cc = json_get(params, "capabilities");
	bool b = false;
	k->client_show_document =
	    json_get_bool(json_get_path(cc, "window.showDocument"), "support", &b) == 0 && b;
	b = false;
	k->client_work_done_progress =
	    json_get_bool(json_get(cc, "window"), "workDoneProgress", &b) == 0 && b;
	b = false;
	k->client_apply_edit = json_get_bool(json_get(cc, "workspace"), "applyEdit", &b) == 0 && b;
	k->client_change_annotations =
	    json_get_path(cc, "workspace.workspaceEdit.changeAnnotationSupport") != NULL;
	/* The LSP's processId: when that process is gone, so is kiln, even
	 * if its input stays open. null (or a pid kiln cannot use) is fine. */
	int64_t pid;
	if (json_get_int64(params, "processId", &pid) == 0 && pid > 0 && pid <= INT32_MAX) {
		int r = kiln_watch_client(k, (int)pid);
		if (r < 0)
			log_warn("cannot watch client process %lld: %s", (long long)pid,
			         strerror(-r));
	}
	set_workspace(k, params);
	const char *client = NULL;
	json_object *info = json_get(params, "clientInfo");
	if (json_get_string(info, "name", &client) == 0)
		log_info("client: %s", client);

	json_object *result = json_object_new_object();
	json_object_object_add(result, "capabilities", capabilities(k));
	json_object *server_info = json_object_new_object();
	json_object_object_add(server_info, "name", json_object_new_string("kiln"));
	json_object_object_add(server_info, "version", json_object_new_string(KILN_VERSION));
	json_object_object_add(result, "serverInfo", server_info);
	rpc_peer_set_replace_nul(rpc_dispatch_peer(d), replace_nul);
	rpc_dispatch_set_state(d, RPC_STATE_RUNNING);
	rpc_call_reply(call, result);
	kiln_warm_up(k);
	return 0;
}

int method_initialized(struct rpc_call *call, json_object *params)
{
	(void)call;
	(void)params;
	return 0;
}

int method_shutdown(struct rpc_call *call, json_object *params)
{
	(void)params;
	struct kiln *k = rpc_call_ctx(call);
	struct rpc_dispatch *d = rpc_call_dispatch(call);
	k->shutdown_requested = true;
	rpc_dispatch_set_state(d, RPC_STATE_SHUTDOWN);
	/* Work still running is stopped now, so that exit finds nothing, and
	 * its replies (-32800) go out before shutdown's own: a client that
	 * sends exit once shutdown is answered has every answer by then. The
	 * shutdown call is in its handler, so it is not among those cancelled. */
	lsp_runs_cancel_all(k);
	rpc_dispatch_cancel_all(d);
	rpc_call_reply(call, NULL);
	return 0;
}

int method_exit(struct rpc_call *call, json_object *params)
{
	(void)params;
	struct kiln *k = rpc_call_ctx(call);
	kiln_stop(k, k->shutdown_requested ? 0 : 1);
	return 0;
}
