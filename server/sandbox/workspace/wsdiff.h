/* wsdiff.h: what a run changed in the workspace. The box shows the host
 * folder under a private upper layer (child.c); at the end the server
 * walks that layer, on a job thread, and compares it with the host
 * folder: each file the code created, changed or deleted becomes one
 * struct sbx_ws_change, with the new contents of small text files. The
 * host folder is only read. Bounded: a cap on the changes reported, on
 * the entries walked, on the bytes compared and on the text kept. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

enum sbx_ws_kind { SBX_WS_CREATED, SBX_WS_MODIFIED, SBX_WS_DELETED };

/* "created", "modified" or "deleted". */
const char *sbx_ws_kind_name(enum sbx_ws_kind k);

/* What the host held at a change's path when the run's changes were
 * read back: applying the change (apply.h) first checks that it still
 * does, so that a file changed meanwhile is never overwritten. */
struct sbx_ws_host {
	bool present; /* false: nothing (a created file) */
	dev_t dev;
	ino_t ino;
	mode_t mode;
	uint64_t size;
	struct timespec mtime, ctime;
};

struct sbx_ws_change {
	char *path; /* the host path, valid UTF-8 (U+FFFD for a bad byte) */
	enum sbx_ws_kind kind;
	uint64_t size; /* the new size; a deleted entry's old one */
	bool dir;      /* a deleted directory (whole) */
	bool exact;    /* path is the host path byte for byte (it was UTF-8) */
	/* The new contents of a created or modified text file (valid UTF-8,
	 * no NUL) within the caps; NULL otherwise. */
	char *text;
	size_t text_len;
	struct sbx_ws_host host;
	/* When the run started (CLOCK_REALTIME): a host entry whose ctime is
	 * later changed during the run, and is not overwritten either. */
	struct timespec run_start;
	/* A created or modified regular file with no text (binary, or over
	 * the text caps): a copy kept on the host (sbx_ws_keep), or why not
	 * (static); and a guess of its kind (static, NULL for text). */
	char *stored;
	const char *not_kept;
	const char *mime_type;
};

struct sbx_ws_changes {
	struct sbx_ws_change *items;
	size_t n;
	size_t omitted;  /* changes past max_changes, not reported */
	bool incomplete; /* the walk stopped at max_entries */
	uint64_t text_bytes;
};

struct sbx_ws_diff_opts {
	size_t max_changes;    /* reported changes */
	size_t max_entries;    /* entries of the upper layer walked */
	size_t max_text_file;  /* a text file larger than this has no text */
	size_t max_text_total; /* text kept for all files together */
	uint64_t max_compare;  /* files of the same size larger than this are "modified" unread */
};

/* A picture of an upper layer: each entry's path and what changes when
 * the entry does (inode, type, size, times). A session keeps the one
 * taken at its last run's end, so that the next run reports only what it
 * changed itself (docs/protocol.md, "workspaceChanges in a session"). */
struct sbx_ws_snap;
void sbx_ws_snap_free(struct sbx_ws_snap *snap);

/* The defaults: 1000 changes, 100 000 entries, 1 MiB a text file, 4 MiB
 * of text, 64 MiB compared. */
extern const struct sbx_ws_diff_opts sbx_ws_diff_defaults;

/* Compare the upper layer upper_fd (a directory fd) with the host folder
 * host_root. cancel is checked between entries and while reading.
 * Returns the number of changes, -ECANCELED or -ENOMEM; ret is filled
 * either way (empty on error). Safe on any thread. */
int sbx_ws_diff(int upper_fd, const char *host_root, const struct sbx_ws_diff_opts *o,
                const atomic_bool *cancel, struct sbx_ws_changes *ret);

/* The same, for an upper layer that lives on between runs: only the
 * entries that differ from since (NULL: an empty layer) are compared and
 * reported, each as it differs from the host folder now. ret_snap, when
 * not NULL, gets the picture of the layer as walked (NULL when the walk
 * was cut short: the next diff then compares everything again). */
int sbx_ws_diff_since(int upper_fd, const char *host_root, const struct sbx_ws_diff_opts *o,
                      const struct sbx_ws_snap *since, const atomic_bool *cancel,
                      struct sbx_ws_changes *ret, struct sbx_ws_snap **ret_snap);
void sbx_ws_changes_release(struct sbx_ws_changes *c);

/* Whether change needs a kept copy: created or modified, a regular file,
 * no text. */
bool sbx_ws_wants_copy(const struct sbx_ws_change *c);

/* Copy each change of c that sbx_ws_wants_copy out of the upper layer
 * upper_fd into dir/workspace/ (the path below host_root kept, each
 * component made 0700 and opened without following a link), setting its
 * stored path, or its not_kept reason past max_bytes of data in all or on
 * an error; and each such change's mime_type. dir is made by the caller
 * (the run's copy folder, artifact.h). cancel stops it (-ECANCELED).
 * Returns the number of copies kept, -ECANCELED or -ENOMEM. Safe on any
 * thread. */
int sbx_ws_keep(int upper_fd, const char *host_root, struct sbx_ws_changes *c, const char *dir,
                uint64_t max_bytes, const atomic_bool *cancel);
