/* apply.h: writing a run's workspace changes into the host folder, when
 * the person said so: the one place that does it, for every front end
 * (`kiln run --apply`, workspace/applyChanges, `kiln shell`). Each change
 * is first checked against what the host held when the run's changes
 * were read back (wsdiff.h, struct sbx_ws_host) and against the run's
 * start: a host entry changed meanwhile is never overwritten or removed,
 * it is skipped and the reason said. A file is written whole into a
 * temporary file in its own directory, synced and renamed over the old
 * one (whose mode it keeps), so that a crash leaves either the old file
 * or the new one. Every path is opened one component at a time with
 * O_NOFOLLOW from the workspace's directory fd: a link in the folder
 * cannot make a write land outside it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "sandbox/workspace/wsdiff.h"

/* Told of each change considered: why (a sentence) when it was skipped,
 * NULL when it was applied. */
typedef void (*sbx_ws_report_fn)(void *data, const char *path, const char *skipped_why);

/* Apply changes[0..n) inside the folder root (the run's workspace), only
 * those whose path is in only_paths (NULL-terminated; NULL: all) and in
 * the list's order (a deletion before what replaces it). Returns the
 * number applied, or -errno when root cannot be opened. Blocks on the
 * disk: call it off the event loop. */
int sbx_ws_apply(const char *root, const struct sbx_ws_change *changes, size_t n,
                 const char *const *only_paths, sbx_ws_report_fn report, void *data);

/* Whether path is one of only (NULL-terminated; NULL: every path is). */
bool sbx_ws_listed(const char *const *only, const char *path);

/* The directory holding rel (a relative path, changed in place and put
 * back), opened component by component from dirfd without following a
 * link; with make, each missing one made with mode. *ret_name is rel's
 * last component. An O_PATH fd, or -errno (-EINVAL for an empty, "." or
 * ".." component). */
int sbx_ws_open_parent(int dirfd, char *rel, bool make, mode_t mode, const char **ret_name);
