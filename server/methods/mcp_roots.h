/* mcp_roots.h: the workspace of `kiln mcp` (docs/mcp.md, "The
 * workspace"): the client's first file:// root when it offers roots
 * (asked with roots/list once initialized, and again on
 * notifications/roots/list_changed), else the server's working
 * directory. The folder is set with sandbox_set_workspace(), as the
 * editor protocol's initialize sets it, so runs and sessions see it with
 * the same masks and private layer. A call that needs the workspace
 * (run_code, open_session) while a roots/list is unanswered waits for
 * the answer (mcp_roots_wait), so it never runs in the folder about to
 * be replaced. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

struct kiln;
struct mcp_roots;

/* How long a roots/list may go unanswered before kiln goes on with the
 * working directory. */
#define MCP_ROOTS_TIMEOUT_MS 10000

/* The state for k (k->mcp), with the working directory as the workspace
 * (none when kiln cannot show it: logged). NULL on OOM. */
struct mcp_roots *mcp_roots_new(struct kiln *k);
/* Forgets an unanswered roots/list; the waiters must be gone (their calls
 * cancelled) first. */
void mcp_roots_free(struct mcp_roots *m);

/* initialize's capabilities (borrowed): whether the client offers roots. */
void mcp_roots_offered(struct mcp_roots *m, json_object *client_caps);

/* Ask the client for its roots, now (notifications/initialized,
 * notifications/roots/list_changed, or the first tools/call of a client
 * that skipped initialized) when it offers them; while one roots/list is
 * out, once more after its answer. Nothing for a client without roots. */
void mcp_roots_ask(struct mcp_roots *m);
/* Ask only if the client offers roots and was never asked. */
void mcp_roots_ask_once(struct mcp_roots *m);

/* A call waiting for the roots' answer: embedded in the caller's state. */
struct mcp_roots_wait {
	struct mcp_roots_wait *next;
	void (*ready)(void *data);
	void *data;
};

/* false when the workspace is settled (the caller goes on now); true
 * when w waits: ready(data) comes from the loop once the answer is in
 * (or timed out). */
bool mcp_roots_wait(struct mcp_roots *m, struct mcp_roots_wait *w, void (*ready)(void *data),
                    void *data);
/* Take w off the list (a cancelled call); nothing when it is not on it. */
void mcp_roots_unwait(struct mcp_roots *m, struct mcp_roots_wait *w);

/* Why the client's root is not what runs see (kiln cannot show it), for
 * run_code's text, or NULL when runs see it or roots play no part. */
const char *mcp_roots_note(const struct mcp_roots *m);
