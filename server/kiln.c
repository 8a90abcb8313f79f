/* kiln.c: what the server's state does for its methods (see kiln.h):
 * stop, take a new configuration, warm up, watch the client's process.
 * Below methods/: what the methods layer must do at a stop (its LSP
 * runs cancelled) it gives as k->cancel_work, so nothing here calls it
 * by name. */
#include "kiln.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>

#include "config.h"
#include "core/json.h"
#include "core/lang.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "rpc/client_watch.h"
#include "rpc/dispatch.h"
#include "rpc/peer.h"
#include "sandbox/pools/warm.h"
#include "sandbox/sandbox.h"
#include "validate/validate.h"

void kiln_stop(struct kiln *k, int code)
{
	if (loop_stopping(k->loop))
		return;
	rpc_peer_stop_input(k->peer);
	if (k->cancel_work)
		k->cancel_work(k);
	/* Cancelling answers every pending request (-32800) and kills the
	 * processes behind them before the loop returns. */
	rpc_dispatch_cancel_all(k->rpc);
	loop_stop(k->loop, code);
}

int kiln_reconfigure(struct kiln *k, json_object *config, json_object *changed, char *detail,
                     size_t dsz)
{
	/* The sandbox section is checked first (a bad member fails the
	 * whole change, naming it) and applied last. */
	int rs = sandbox_configure(NULL, config_section(config, "sandbox"), detail, dsz);
	if (rs < 0)
		return rs;
	/* The language registry next, from the whole config (a bad entry in
	 * the file fails initialize too, as a bad sandbox member does); it
	 * is put back if what follows fails. */
	if (lang_configure(json_get(config_section(config, "sandbox"), "languages"), detail, dsz) <
	    0)
		return -EINVAL;
	/* The validator holds compiled rules and profiles: rebuild it when
	 * its section changed. Other subsystems read their section per use. */
	if (json_get(changed, "validator")) {
		struct validator *v = NULL;
		int r = val_new(config_section(config, "validator"), &v);
		if (r < 0) {
			snprintf(
			    detail, dsz,
			    "the \"validator\" options are not valid (the server's log says why)");
			lang_configure(json_get(config_section(k->config, "sandbox"), "languages"),
			               NULL, 0);
			return r;
		}
		val_free(k->validator);
		k->validator = v;
	}
	rs = sandbox_configure(k->sandbox, config_section(config, "sandbox"), detail, dsz);
	if (rs < 0)
		lang_configure(json_get(config_section(k->config, "sandbox"), "languages"), NULL,
		               0);
	return rs;
}

/* Warm boxes are on unless sandbox.warmBoxes is false; the first is
 * built for python, the language of most runs, and each run then has the
 * next box of its own language built (run.h). */
static void warm_sandbox(struct kiln *k)
{
	run_warm(k->sandbox, "python");
}

static void warm_box(struct loop *loop, void *data)
{
	(void)loop;
	warm_sandbox(data);
}

void kiln_warm_up(struct kiln *k)
{
	loop_timer_start(k->loop, 0, warm_box, k);
}

static void warm_rules(struct loop *loop, void *data)
{
	(void)loop;
	struct kiln *k = data;
	if (!k->validator || val_prepare(k->validator) != 0)
		return;
	/* The compile used and freed memory that malloc would otherwise
	 * keep: give it back. */
	malloc_trim(0);
}

void kiln_warm_rules(struct kiln *k)
{
	loop_timer_start(k->loop, 0, warm_rules, k);
}

static void on_client_gone(void *data)
{
	struct kiln *k = data;
	log_info("the client process is gone; stopping");
	kiln_stop(k, k->shutdown_requested ? 0 : 1);
}

int kiln_watch_client(struct kiln *k, int pid)
{
	if (pid <= 0)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(k->client_watch); i++) {
		struct rpc_client_watch *w = k->client_watch[i];
		if (w && rpc_client_watch_pid(w) == pid)
			return 0;
		if (!w)
			return rpc_client_watch_new(k->loop, pid, 0, on_client_gone, k,
			                            &k->client_watch[i]);
	}
	return -ENOSPC;
}
