/* save.h: the terminal front ends keep what a run leaves behind. An
 * artifact (a file the code wrote under /work/out) is saved into a folder
 * of its own for the run, $XDG_CACHE_HOME/kiln/runs/DATE-PID-RUNID/ (else
 * ~/.cache/kiln/runs/...), and its path is printed, as a clickable OSC 8
 * link on a terminal. Names come from the code: made into one plain file
 * name, never a path. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Save len bytes of an artifact named name (from run run_id) into the
 * run's folder, made on first use; its path into ret_path. -errno. */
int cli_save_artifact(const char *run_id, const char *name, const void *data, size_t len,
                      char *ret_path, size_t size);

/* Decode base64 text (padding optional, no whitespace) into a malloc'd
 * buffer; -EINVAL when it is not base64, -ENOMEM. */
int cli_base64_decode(const char *text, unsigned char **ret, size_t *ret_len);

/* Write path to out, as an OSC 8 link to file://HOST/path when link is
 * set (a terminal that is not "dumb"); its characters made visible. */
void cli_print_path(FILE *out, const char *path, bool link);

/* Whether fd is a terminal that takes OSC 8 links (and NO_COLOR unset
 * does not matter: a link is not colour). */
bool cli_links_ok(int fd);
