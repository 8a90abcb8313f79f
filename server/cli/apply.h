/* apply.h: the terminal front ends and a run's workspace changes. A run
 * never changes the user's files (the box writes into a private layer);
 * its result lists what the code changed (workspaceChanges) and carries a
 * workspaceEdit. These show the list and, when the person says so,
 * apply the edit to the folder: text files written whole (through a
 * temporary file and a rename), deletions done, every path checked to be
 * inside the run's workspace and opened without following a link. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* Where the lines about the changes go (made visible by the callee). */
typedef void (*cli_say_fn)(void *data, const char *line);

/* Say what result's workspaceChanges holds, one line a change; the
 * number of changes that workspaceEdit can apply. */
size_t cli_ws_report(json_object *result, cli_say_fn say, void *data);

struct run_outcome;
/* Apply every change of a run of this process (text and kept copies,
 * sandbox/workspace/apply.h), saying "applied PATH" or "skipped PATH:
 * why" for each. The number applied, or -errno. */
int cli_ws_apply_changes(const struct run_outcome *oc, cli_say_fn say, void *data);

/* Apply result's workspaceEdit inside result's workspace. Returns the
 * number of operations done; each one refused or failed is said. */
int cli_ws_apply(json_object *result, cli_say_fn say, void *data);
