/* workspace_paths.h: what workspace/applyChanges and
 * workspace/declineChanges share: their params {runId, paths?} read and
 * checked once, the error for a run kiln keeps no changes of, and the
 * reply {OK: [path], BAD: [{path, reason}]}. */
#pragma once

#include <json-c/json.h>
#include <stddef.h>

struct rpc_call;

/* Read method's params: *ret_run_id (borrowed from params) and
 * *ret_paths (NULL-terminated, borrowed strings; the array is the
 * caller's to free; NULL without "paths"). 1 when the params were bad
 * and the call was answered with the error; 0; -ENOMEM. */
int ws_paths_params(struct rpc_call *call, json_object *params, const char *method,
                    const char **ret_run_id, const char ***ret_paths);

/* Answer call: kiln keeps no workspace changes of run_id. */
void ws_paths_unknown_run(struct rpc_call *call, const char *run_id);

/* The reply: ok_key an array of the n_ok paths, bad_key an array of
 * {path, reason} built from n_bad pairs (path_at, why_at: the i-th). */
json_object *ws_paths_reply(const char *ok_key, const char *const *ok, size_t n_ok,
                            const char *bad_key, size_t n_bad,
                            const char *(*path_at)(const void *bad, size_t i),
                            const char *(*why_at)(const void *bad, size_t i), const void *bad);
