/* cache_dir.h: where the terminal front ends save what a run handed back
 * (displays, and artifacts): one folder per run under
 * $XDG_CACHE_HOME/kiln/runs/ (else ~/.cache/kiln/runs/), made on first
 * use (mode 0700, with its parents). */
#pragma once

#include <json-c/json.h>
#include <stddef.h>

/* The caps of the runs folder, from the config's sandbox section
 * (borrowed, may be NULL): artifactDirMaxBytes and artifactDirMaxAgeMs,
 * the same as the server's folder of copies (defaults 1 GiB, 7 days).
 * Each new run folder first prunes the older ones past them
 * (sandbox/output/artifact.h). A value that is not a non-negative integer
 * leaves the default: the sandbox's own config check reports it. */
void cli_run_folder_caps(json_object *sandbox);

/* The folder of run run_id (made with its parents, mode 0700) into ret:
 * the same folder for every call with the same run_id in this process.
 * -errno when it cannot be made (ret is then ""). */
int cli_run_folder(const char *run_id, char *ret, size_t size);
