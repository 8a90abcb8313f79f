/* ledger.h: the workspace changes of a server's recent runs, kept as
 * structs after each run's reply so that the person can approve them
 * later (workspace/applyChanges, `kiln shell`'s prompt), and the applying
 * of them on a job thread (apply.h does the work). Bounded: the last
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
 * holds none; quietly nothing on OOM: the run's reply still lists them). */
void sbx_ws_ledger_put(struct sandbox *s, const char *run_id, const char *root,
                       const struct sbx_ws_changes *c);
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
