/* artifact.h: reading back the files a run wrote under /work/out, from
 * the workspace fd the box handed over, without following any link. Each
 * regular file becomes one struct run_artifact: its contents inline
 * (base64, up to inline_bytes), or a copy in a directory the server owns,
 * or the reason it was omitted. Names are made valid UTF-8. What a run's
 * artifacts may cost the host is one budget per run (max_bytes), counted
 * on the bytes sent inline plus the bytes written to the host's disk: a
 * copy keeps the file's holes (SEEK_DATA/SEEK_HOLE), so a sparse file
 * costs its data only, and a file linked under several names is copied
 * once. The directory of copies has its own size and age cap (prune).
 * The copying may be long (up to 256 MiB): it runs on a job thread
 * (job.h) and stops early when asked to. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A file the run left under /work/out. Every string is valid UTF-8 (a
 * name's invalid bytes became U+FFFD) and borrowed for the call. */
struct run_artifact {
	const char *run_id;
	const char *name; /* relative to /work/out */
	uint64_t size;
	const char *mime_type;
	const char *base64;  /* the contents, inline; or NULL */
	const char *path;    /* a copy on the host; or NULL */
	const char *omitted; /* why neither; or NULL */
};

struct sbx_artifact_opts {
	size_t inline_bytes; /* larger files are copied to host_dir */
	size_t max_files;
	/* The run's budget: bytes sent inline plus bytes of data copied (a
	 * hole costs nothing, a second link to a copied file nothing). A file
	 * that does not fit in what is left is omitted. */
	uint64_t max_bytes;
	const char *host_dir; /* parent of the per-run copy dirs; NULL: none */
	/* A session's run (session.h): only these names (relative to
	 * /work/out, NULL-terminated) are its artifacts; NULL: every file. */
	const char *const *only;
};

/* What the collection found: an array of artifacts and the strings they
 * point to, all owned. */
struct sbx_artifacts {
	struct run_artifact *items;
	size_t n;
	char *copy_dir; /* the run's directory of copies, or NULL: none made */
};

/* Collect the artifacts of the workspace workfd into ret (emptied first).
 * cancel: checked between files and while copying; once set, collection
 * stops and what was copied so far is removed. Returns the number of
 * artifacts, -ECANCELED, -ENOMEM, or -errno when /work/out cannot be read
 * at all. Touches no shared state: safe on any thread. */
int sbx_artifacts_collect(int workfd, const char *run_id, const struct sbx_artifact_opts *o,
                          const atomic_bool *cancel, struct sbx_artifacts *ret);
void sbx_artifacts_release(struct sbx_artifacts *a);

/* The run's copy directory is made under o->host_dir as RUNID-XXXXXX
 * (mkdtemp); the terminal's run folders (cli/cache_dir.h) are named
 * YYYYMMDD-HHMMSS-PID-RUNID. Remove such directories under dir (and
 * nothing else: a name of another shape is left alone, as is anything
 * that is not a directory) older than max_age_ms (by their mtime; 0: no age cap), then
 * the oldest until what the rest hold on disk (st_blocks) is at most
 * max_bytes (0: no size cap). keep (a full path, or NULL) is never
 * removed. Returns the number of directories removed, or -errno when dir
 * cannot be read (-ENOENT: it does not exist yet). Safe on any thread and
 * beside other servers pruning the same directory. */
int sbx_artifact_dir_prune(const char *dir, uint64_t max_bytes, uint64_t max_age_ms,
                           const char *keep);

/* Make the run's copy directory under host_dir (and host_dir itself, 0700
 * each) as RUNID-XXXXXX, its path into buf. 0 or -errno. */
int sbx_artifact_run_dir(const char *host_dir, const char *run_id, char *buf, size_t size);

/* Copy fd's first size bytes to out, data extent by data extent, so that
 * a hole stays a hole on the host; at most room bytes of data (-EFBIG
 * past it). *spent grows by what is written as it is written; cancel
 * (may be NULL) stops it with -ECANCELED. */
int sbx_copy_data(int fd, int out, uint64_t size, uint64_t room, const atomic_bool *cancel,
                  uint64_t *spent);

/* The bytes of data in fd's first size bytes: its holes left out. */
uint64_t sbx_data_bytes(int fd, uint64_t size);

/* A MIME type from the name and the first bytes. */
const char *sbx_mime_type(const char *name, const unsigned char *head, size_t n);
