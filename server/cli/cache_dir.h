/* cache_dir.h: where the terminal front ends save what a run handed back
 * (displays, and artifacts): one folder per run under
 * $XDG_CACHE_HOME/kiln/runs/ (else ~/.cache/kiln/runs/), made on first
 * use (mode 0700, with its parents). */
#pragma once

#include <stddef.h>

/* The folder of run run_id (made with its parents, mode 0700) into ret:
 * the same folder for every call with the same run_id in this process.
 * -errno when it cannot be made (ret is then ""). */
int cli_run_folder(const char *run_id, char *ret, size_t size);
