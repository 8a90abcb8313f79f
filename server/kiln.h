/* kiln.h: the server's state, shared by every method handler: the loop,
 * the client connection, what initialize negotiated, and the subsystems
 * (sandbox, validator, model) that later plug in here. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/position.h"

#define KILN_VERSION "0.1.0"

/* Defaults a user can change on the command line. */
#define KILN_DEFAULT_MAX_MESSAGE (64u << 20)

struct loop;
struct rpc_peer;
struct rpc_dispatch;
struct record;
struct intent;
struct rpc_client_watch;
struct doc_store;
struct mcp_roots;

struct kiln_options {
	size_t max_message; /* largest accepted message body, bytes */
	const char *record_path;
	const char *config_path; /* NULL: $XDG_CONFIG_HOME/kiln/config.json */
	int client_pid;          /* --clientProcessId; 0 when not given */
	bool mcp;                /* `kiln mcp`: MCP's table and newline framing */
};

struct kiln {
	struct loop *loop;
	struct rpc_peer *peer;
	struct rpc_dispatch *rpc;
	struct record *record;
	struct kiln_options opts;

	/* The effective configuration (see config.h): the config file with
	 * the client's initializationOptions laid over it. Owned; always an
	 * object. Subsystems read their own section ("sandbox", "validator",
	 * "llm", ...). */
	json_object *config;

	/* Negotiated at initialize. */
	enum pos_encoding encoding;
	json_object *init_options; /* owned; NULL when the client sent none */
	bool shutdown_requested;

	/* The client processes whose end ends kiln: --clientProcessId and
	 * initialize's processId (one watch when they agree). */
	struct rpc_client_watch *client_watch[2];

	/* What the client told kiln at initialize that plain LSP features
	 * need: whether it takes window/showDocument, window/workDoneProgress
	 * and change annotations in workspace/applyEdit. */
	bool client_show_document;
	bool client_work_done_progress;
	bool client_change_annotations;
	bool client_apply_edit;

	/* The open documents' text (methods/documents.c, the store in
	 * methods/doc_store.h): kiln_serve()'s, never NULL while it serves.
	 * A pointer, so that what includes kiln.h (intent/, cli/) does not
	 * depend on methods/. */
	struct doc_store *docs;

	/* What a stop cancels besides the pending requests (kiln_stop):
	 * methods/'s LSP runs, given by kiln_serve(); NULL: nothing. */
	void (*cancel_work)(struct kiln *k);

	/* Subsystems, each owned by its folder. */
	struct intent *intent;       /* server/intent: proposals, sessions, audit, model */
	struct validator *validator; /* server/validate: syntax and policy checks */
	struct sandbox *sandbox;     /* server/sandbox: runs code in namespace boxes */

	/* `kiln mcp`'s workspace, from the client's roots or the working
	 * directory (methods/mcp_roots.h); NULL for the editor protocol. */
	struct mcp_roots *mcp;
};

/* Serve JSON-RPC on in_fd/out_fd until exit, end of input or SIGTERM.
 * Returns the process exit code. */
int kiln_serve(const struct kiln_options *opts, int in_fd, int out_fd);

/* Make config (owned by the caller) the effective configuration's next
 * value: subsystems whose section appears in changed are rebuilt from it.
 * -errno with a sentence in detail, and nothing changed, when a section is
 * not valid. The caller then swaps k->config. */
int kiln_reconfigure(struct kiln *k, json_object *config, json_object *changed, char *detail,
                     size_t dsz);

/* Prepare what the first run will need (the first warm box) from the
 * loop's next iteration. initialize calls it once its reply is out, so
 * start-up itself stays instant. The validator's rules are not compiled
 * here: an idle server stays small (docs/performance.md). */
void kiln_warm_up(struct kiln *k);

/* Compile the Python rules from the loop's next iteration, if they are
 * not yet: intent/run calls it while the model writes, so the proposal's
 * check never waits for the compile. Other checks compile on first use. */
void kiln_warm_rules(struct kiln *k);

/* Exit when process pid is gone (initialize's processId, --clientProcessId),
 * as if the input had ended. A pid already watched is not watched twice.
 * -EINVAL for pid <= 0, -ENOSPC past two pids, -ENOMEM. */
int kiln_watch_client(struct kiln *k, int pid);

/* Stop all work (k->cancel_work, then every pending request) and make
 * kiln_serve return code (after flushing replies). kiln.c holds these. */
void kiln_stop(struct kiln *k, int code);
