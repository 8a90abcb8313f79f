/* hide.h: the workspace's secrets, found off the loop and remembered.
 *
 * Before a run with the workspace starts its program, every entry whose
 * name matches sandbox.workspace.hide must be masked (child.c). Walking
 * a big project (a node_modules of 300 000 files) for each run would cost
 * seconds, so the server keeps a picture of the folder's directories:
 * for each, its identity and times, its subdirectories and the names in
 * it that are to be hidden. Each run asks for the list afresh; a job
 * thread then stats every directory of the picture (a directory's mtime
 * and ctime change when its entries do) and reads again only those that
 * changed, are new, or changed too recently for their times to be
 * trusted. The list goes to pid 1 as a sealed memfd of records; pid 1
 * masks exactly those paths and fails the run if one is not where the
 * list says (the folder changed as the run started).
 *
 * What was not checked is not shown: a request is answered only by a
 * pass that began after it was made, so every secret that existed when
 * the run was asked for is in its list (or the run fails). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct sandbox;
struct sbx_hide_req;

/* The list's records (SBX_HIDE_FILE, ...) are pid 1's to read: child.h. */

/* A hide pattern, prepared once: a plain name, or PREFIX*SUFFIX with one
 * star (".env.*", "*.pem", "service-account*.json"), is matched by
 * comparing its ends; any other (?, [...], two stars) by fnmatch. The
 * same answer as fnmatch(pat, name, FNM_NOESCAPE) for every name: no
 * escapes, a leading dot like any other character. The walk matches
 * every name of a project against every pattern, so this is its inner
 * loop (150 000 names and the 50 default patterns: about 5x faster). */
struct sbx_name_pat {
	const char *pat; /* borrowed */
	int star;        /* the star's offset; -1: no wildcard; -2: fnmatch */
	size_t pre, suf;
};

void sbx_name_pat_init(struct sbx_name_pat *p, const char *pat);
bool sbx_name_pat_match(const struct sbx_name_pat *p, const char *name, size_t len);

/* On the loop's thread: the list is ready. fd: a sealed memfd of
 * records (the callee's to close) or -errno, with a sentence in why. */
typedef void (*sbx_hide_done_fn)(void *data, int fd, const char *why);

/* Ask for the list of s's workspace (with s's hide patterns). done is
 * called later, on a turn of the loop, never from here. -ENOMEM, or
 * -EINVAL when s has no workspace. *ret identifies the request until
 * done is called. */
int sbx_hide_request(struct sandbox *s, sbx_hide_done_fn done, void *data,
                     struct sbx_hide_req **ret);

/* Forget a request whose done has not been called (it never will be). */
void sbx_hide_cancel(struct sandbox *s, struct sbx_hide_req *req);

/* Free the picture and the requests (sandbox_free, after its jobs are
 * stopped). */
void sbx_hide_free(struct sandbox *s);
