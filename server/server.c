/* server.c: kiln_serve(): wires the loop, the client connection and the
 * method table together, and makes sure that whatever way the session
 * ends (exit, end of input, a signal) every piece of work is stopped, every
 * reply is flushed and no child process is left behind. */
#include "kiln.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "core/json.h"
#include "core/lang.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "intent/intent.h"
#include "methods/diagnostics.h"
#include "methods/doc_store.h"
#include "methods/lsp.h"
#include "methods/mcp_roots.h"
#include "methods/methods.h"
#include "replay/record.h"
#include "rpc/client_watch.h"
#include "rpc/dispatch.h"
#include "rpc/peer.h"
#include "sandbox/run/run.h"
#include "sandbox/sandbox.h"
#include "validate/validate.h"

/* How long replies may take to drain when the session ends. */
#define FLUSH_MS 1000

static void on_message(void *data, json_object *msg)
{
	struct kiln *k = data;
	rpc_dispatch_message(k->rpc, msg);
}

static void on_bad_input(void *data, int code, const char *detail)
{
	struct kiln *k = data;
	rpc_dispatch_bad_input(k->rpc, code, detail);
}

static void on_closed(void *data)
{
	struct kiln *k = data;
	log_info("client closed the connection; stopping");
	kiln_stop(k, k->shutdown_requested ? 0 : 1);
}

static const struct rpc_peer_ops peer_ops = {
    .message = on_message,
    .bad_input = on_bad_input,
    .closed = on_closed,
};

static void on_signal(struct loop *loop, int signo, void *data)
{
	(void)loop;
	struct kiln *k = data;
	log_info("received %s; stopping", strsignal(signo));
	kiln_stop(k, 128 + signo);
}

int kiln_serve(const struct kiln_options *opts, int in_fd, int out_fd)
{
	struct doc_store docs = {0};
	struct kiln k = {.opts = *opts, .encoding = POS_UTF16, .docs = &docs};
	int code = 1;
	k.loop = loop_new();
	if (!k.loop) {
		log_error("cannot create the event loop: %s", strerror(errno));
		return 1;
	}
	if (loop_signal_watch(k.loop, SIGTERM, on_signal, &k) < 0 ||
	    loop_signal_watch(k.loop, SIGINT, on_signal, &k) < 0 ||
	    loop_signal_watch(k.loop, SIGHUP, on_signal, &k) < 0) {
		log_error("cannot watch signals: %s", strerror(errno));
		goto out;
	}
	char detail[512] = "";
	int r = config_load(opts->config_path, &k.config, detail, sizeof(detail));
	if (r < 0) {
		log_error("%s", detail[0] ? detail : strerror(-r));
		goto out;
	}
	/* A sandbox.languages that is not valid leaves the built-in
	 * languages; initialize fails, saying why. */
	if (lang_configure(json_get(config_section(k.config, "sandbox"), "languages"), detail,
	                   sizeof(detail)) < 0)
		log_error("%s", detail);
	/* Subsystems start here, before anything can start a thread. */
	/* Without a sandbox the server still serves; runs are refused. A
	 * sandbox section that is not valid fails initialize, which says why. */
	json_object *sbx = config_section(k.config, "sandbox");
	if (sandbox_configure(NULL, sbx, detail, sizeof(detail)) < 0)
		sbx = NULL;
	if (sandbox_new(k.loop, sbx, &k.sandbox, detail, sizeof(detail)) < 0) {
		log_error("%s", detail);
		k.sandbox = NULL;
	}
	r = val_new(config_section(k.config, "validator"), &k.validator);
	if (r < 0) {
		log_error("cannot start the validator: %s", strerror(-r));
		goto out;
	}
	/* (intent creates libcurl's multi, whose resolver starts threads,
	 * only on the first model request.) */
	k.cancel_work = lsp_runs_cancel_all;
	k.intent = intent_new(&k);
	if (!k.intent)
		goto out;

	/* When the client reads through a pipe, a larger one (512 KiB: two
	 * of a run's 256 KiB notifications, run_private.h) takes a run's
	 * output in fewer writes and wake-ups. Not 1 MiB: no faster within
	 * the noise (docs/performance-log.md, "Output, late evening"), and a
	 * stalled client's run then holds 0.75 MiB in pipes, not 1.25.
	 * Best effort: not a pipe, or past the user's pipe budget, and it
	 * stays as it is. */
	fcntl(out_fd, F_SETPIPE_SZ, 1 << 19);
	k.peer = rpc_peer_new(k.loop, in_fd, out_fd, opts->max_message, &peer_ops, &k);
	if (!k.peer)
		goto out;
	/* One dispatch for both protocols; `kiln mcp` differs only in its
	 * method table and its framing (newline-delimited JSON). An MCP host
	 * ends the session by closing stdin, which is then a clean exit. */
	if (opts->mcp) {
		rpc_peer_use_lines(k.peer);
		k.shutdown_requested = true;
	}
	k.rpc = rpc_dispatch_new(k.loop, k.peer, opts->mcp ? mcp_methods : kiln_methods,
	                         opts->mcp ? mcp_methods_count : kiln_methods_count, &k);
	if (!k.rpc)
		goto out;
	/* kiln mcp's workspace: the working directory until the client's
	 * roots say otherwise. */
	if (opts->mcp && !(k.mcp = mcp_roots_new(&k)))
		goto out;
	if (opts->client_pid > 0) {
		r = kiln_watch_client(&k, opts->client_pid);
		if (r < 0) {
			log_error("cannot watch client process %d: %s", opts->client_pid,
			          strerror(-r));
			goto out;
		}
	}
	if (opts->record_path) {
		r = record_open(opts->record_path, k.peer, &k.record);
		if (r < 0) {
			log_error("cannot record to %s: %s", opts->record_path, strerror(-r));
			goto out;
		}
	}
	if (!opts->mcp)
		lsp_documents_sweep();
	code = loop_run(k.loop);
	if (code < 0) {
		log_error("event loop failed: %s", strerror(-code));
		code = 1;
	}
out:
	lsp_runs_cancel_all(&k);
	if (k.rpc)
		rpc_dispatch_cancel_all(k.rpc);
	if (k.peer && rpc_peer_flush(k.peer, FLUSH_MS) < 0)
		log_warn("could not deliver all replies before exiting");
	for (size_t i = 0; i < ARRAY_SIZE(k.client_watch); i++)
		rpc_client_watch_free(k.client_watch[i]);
	diag_release_all(&k);
	doc_store_release(k.docs);
	/* Subsystems stop here, in reverse order of their start. The roots'
	 * waiters were cancelled with their calls above. */
	mcp_roots_free(k.mcp);
	intent_free(k.intent);
	val_free(k.validator);
	sandbox_free(k.sandbox);
	record_close(k.record);
	rpc_dispatch_free(k.rpc);
	lsp_intent_release(&k);
	lsp_documents_remove_own();
	rpc_peer_free(k.peer);
	json_object_put(k.init_options);
	json_object_put(k.config);
	lang_configure(NULL, NULL, 0);
	loop_free(k.loop);
	return code;
}
