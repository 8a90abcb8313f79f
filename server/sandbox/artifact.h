/* artifact.h: reading back the files a run wrote under /work/out, from
 * the workspace fd the box handed over, without following any link. Each
 * regular file becomes one struct run_artifact: its contents inline
 * (base64, up to inline_bytes), or a copy in a directory the server owns,
 * or the reason it was omitted. Names are made valid UTF-8. The copying
 * may be long (up to 256 MiB): it runs on a job thread (job.h) and stops
 * early when asked to. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sandbox/run.h"

struct sbx_artifact_opts {
	size_t inline_bytes; /* larger files are copied to host_dir */
	size_t max_files;
	size_t max_copy_bytes; /* larger files are omitted */
	const char *host_dir;  /* parent of the per-run copy dirs; NULL: none */
	/* A session's run (session.h): only these names (relative to
	 * /work/out, NULL-terminated) are its artifacts; NULL: every file. */
	const char *const *only;
};

/* What the collection found: an array of artifacts and the strings they
 * point to, all owned. */
struct sbx_artifacts {
	struct run_artifact *items;
	size_t n;
};

/* Collect the artifacts of the workspace workfd into ret (emptied first).
 * cancel: checked between files and while copying; once set, collection
 * stops and what was copied so far is removed. Returns the number of
 * artifacts, -ECANCELED, -ENOMEM, or -errno when /work/out cannot be read
 * at all. Touches no shared state: safe on any thread. */
int sbx_artifacts_collect(int workfd, const char *run_id, const struct sbx_artifact_opts *o,
                          const atomic_bool *cancel, struct sbx_artifacts *ret);
void sbx_artifacts_release(struct sbx_artifacts *a);

/* A MIME type from the name and the first bytes. */
const char *sbx_mime_type(const char *name, const unsigned char *head, size_t n);

/* name made valid UTF-8 (each invalid byte becomes U+FFFD), malloc'd;
 * NULL on OOM. */
char *sbx_utf8_name(const char *name);
