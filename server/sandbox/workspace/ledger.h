/* ledger.h: the workspace changes of a server's recent runs, kept as
 * structs after each run's reply so that the person can approve them
 * later (workspace/applyChanges, `kiln shell`'s prompt), and the applying
 * of them on a job thread (apply.h does the work); a change declined
 * (workspace/declineChanges, session_decline.c) is marked and never
 * applied. Bounded: the last
 * SBX_WS_LEDGER_RUNS runs that changed something, with at most
 * SBX_WS_LEDGER_TEXT bytes of text in all; the oldest go first. Loop
 * thread only, except where said. */
#pragma once

#include <stddef.h>

#include "sandbox/workspace/wsdiff.h"

#define SBX_WS_LEDGER_RUNS 32
#define SBX_WS_LEDGER_TEXT (32u << 20)

struct sandbox;
struct sbx_ws_ledger;

/* Keep a copy of run_id's changes to the workspace root (nothing when c
 * holds none; quietly nothing on OOM: the run's reply still lists them).
 * session_id: the session whose run it was, and gen its box's generation
 * (session_box.h), or NULL for a one-shot run. */
void sbx_ws_ledger_put(struct sandbox *s, const char *run_id, const char *root,
                       const struct sbx_ws_changes *c, const char *session_id, unsigned gen);
void sbx_ws_ledger_free(struct sandbox *s);

/* What one apply did: the paths applied, and those skipped with why. */
struct sbx_ws_skip {
	char *path;
	char *why;
};
struct sbx_ws_apply_result {
	char **applied;
	size_t napplied;
	struct sbx_ws_skip *skipped;
	size_t nskipped;
};

/* Called on the loop once the changes were applied (res borrowed), or
 * with res NULL when the server ended first. */
typedef void (*sbx_ws_applied_fn)(void *data, const struct sbx_ws_apply_result *res);

/* Apply run_id's kept changes (only those whose path is in paths,
 * NULL-terminated and copied; NULL: all) on a job thread, then call done.
 * A path of paths that is no change of the run, or one already applied
 * here, is skipped with that reason. Returns 0 (done will be called
 * unless the server ends first), -ENOENT when no changes of run_id are
 * kept (none made, or too old), -ENOMEM. */
int sbx_ws_apply_start(struct sandbox *s, const char *run_id, const char *const *paths,
                       sbx_ws_applied_fn done, void *data);

/* Declining (workspace/declineChanges; the session's part is
 * session_decline.c's): the changes of a run picked, copied, each with
 * why it must be kept (static, NULL when it can be declined). */
struct sbx_ws_decline_item {
	char *path; /* the host path */
	enum sbx_ws_kind kind;
	bool exact;
	const char *kept;
	char later[24]; /* the later run that changed it again, or "" */
};
struct sbx_ws_decline_list {
	char run_id[24];
	char session_id[24]; /* "" for a one-shot run */
	unsigned gen;
	char *root;
	struct sbx_ws_decline_item *items;
	size_t n;
};

/* Pick run_id's changes whose path is in paths (NULL-terminated; NULL:
 * all) into *ret (release it with sbx_ws_decline_list_release): kept
 * with why are a change applied already, one a later run of the same
 * session box changed again (decline that run's first), a path that is
 * not valid UTF-8, and a path of paths that is no change of the run.
 * -ENOENT when no changes of run_id are kept, -ENOMEM. */
int sbx_ws_ledger_pick(struct sandbox *s, const char *run_id, const char *const *paths,
                       struct sbx_ws_decline_list *ret);
/* run_id's change at path was declined: it can no longer be applied. */
void sbx_ws_ledger_declined(struct sandbox *s, const char *run_id, const char *path);
void sbx_ws_decline_list_release(struct sbx_ws_decline_list *dl);
