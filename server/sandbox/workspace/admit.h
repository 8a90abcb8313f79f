/* admit.h: which host folder may be a workspace. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Check path (a host folder) as the workspace of runs: resolved
 * (realpath), a directory the box can show at its own path: not /, not
 * the home folder itself, not under /usr, /etc, /proc, /dev, /sys or the
 * box's /code, and not /work or /tmp themselves; as_root (the box runs
 * as nobody): one nobody can enter and read; and one with no file
 * system mounted inside it. The resolved path in *ret (malloc'd), or
 * -EINVAL (-EACCES, -EBUSY, -errno) with a sentence in err. */
int sbx_ws_admit(const char *path, bool as_root, char **ret, char *err, size_t errsz);
