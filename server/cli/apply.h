/* apply.h: the terminal front ends and a run's workspace changes. A run
 * never changes the user's files (the box writes into a private layer);
 * its result lists what the code changed (workspaceChanges) and carries a
 * workspaceEdit. These show the list (a binary file with its size and
 * kind) and, when the person says so, have kiln apply every change, text
 * and binary (sandbox/workspace/apply.h: each checked against what the
 * host held, written atomically, never through a link). */
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

struct cli_client;
/* Ask the server c to apply every change of result's run
 * (workspace/applyChanges): the same checked, atomic writes; each file
 * applied or skipped (with why) is said. The number applied, or -errno. */
int cli_ws_apply(struct cli_client *c, json_object *result, cli_say_fn say, void *data);

/* The person said no to result's run's changes: ask the server c to
 * decline them (workspace/declineChanges), so that a session's run has
 * them taken out of the session, and say each the session dropped
 * ("the session dropped PATH") and each it still holds, with why. The
 * number kept, or -errno. */
int cli_ws_decline(struct cli_client *c, json_object *result, cli_say_fn say, void *data);
