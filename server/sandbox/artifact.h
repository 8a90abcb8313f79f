/* artifact.h: reading back the files a run wrote under /work/out, from
 * the workspace fd the box handed over, without following any link. Each
 * regular file becomes one artifact object: {runId, name, size, mimeType}
 * plus either {encoding: "base64", data} (up to inlineBytes) or {path} (a
 * copy in a directory the server owns), or {omitted: reason}. */
#pragma once

#include <json-c/json.h>
#include <stddef.h>

struct sbx_artifact_opts {
	size_t inline_bytes; /* larger files are copied to host_dir */
	size_t max_files;
	size_t max_copy_bytes; /* larger files are omitted */
	const char *host_dir;  /* parent of the per-run copy dirs; NULL: none */
};

typedef void (*sbx_artifact_fn)(void *data, json_object *artifact);

/* Calls fn once per artifact (artifact borrowed). Returns the number of
 * artifacts or -errno when /work/out cannot be read at all. */
int sbx_artifacts_collect(int workfd, const char *run_id, const struct sbx_artifact_opts *o,
                          sbx_artifact_fn fn, void *data);

/* A MIME type from the name and the first bytes. */
const char *sbx_mime_type(const char *name, const unsigned char *head, size_t n);
