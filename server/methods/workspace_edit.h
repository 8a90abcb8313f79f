/* workspace_edit.h: a run's workspace changes as the protocol shows them:
 * the result's workspaceChanges list ({path, kind, size}, host paths)
 * and a workspaceEdit (an LSP WorkspaceEdit with CreateFile, DeleteFile
 * and full-content edits) for the client to show and, if the user says
 * so, apply. kiln itself never applies it. And the file URIs both use. */
#pragma once

#include <json-c/json.h>
#include <stddef.h>

#include "sandbox/run/run.h"

/* Add workspace, workspaceChanges (and workspaceChangesOmitted,
 * workspaceChangesIncomplete) and workspaceEdit to result, when the run
 * had a workspace; nothing otherwise. */
void run_workspace_json(json_object *result, const struct run_outcome *o);

/* "file://" and path with each byte outside RFC 3986's unreserved set
 * and '/' percent-encoded; malloc'd, NULL on OOM. */
char *file_uri(const char *path);

/* The path of a file URI (percent-decoded) into buf; -EINVAL for a URI
 * that is not file:// with an absolute path, a NUL or a host part. */
int file_uri_path(const char *uri, char *buf, size_t size);
