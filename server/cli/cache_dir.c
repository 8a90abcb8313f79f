/* cache_dir.c: per-run folders under $XDG_CACHE_HOME/kiln/runs/ (cache_dir.h). */
#include "cli/cache_dir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int mkdirs(char *path)
{
	for (char *p = path + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			int r = mkdir(path, 0700);
			*p = '/';
			if (r < 0 && errno != EEXIST)
				return -errno;
		}
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int cli_run_folder(const char *run_id, char *ret, size_t size)
{
	/* Run ids start again with each server: the folder's name also has
	 * the time and this process's id. */
	static char last_id[32], last_dir[4096];
	ret[0] = '\0';
	if (last_id[0] && strcmp(last_id, run_id) == 0) {
		snprintf(ret, size, "%s", last_dir);
		return 0;
	}
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char base[3072];
	if (xdg && xdg[0] == '/')
		snprintf(base, sizeof(base), "%s/kiln/runs", xdg);
	else if (home && home[0] == '/')
		snprintf(base, sizeof(base), "%s/.cache/kiln/runs", home);
	else
		return -ENOENT;
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", localtime_r(&now, &tm));
	char dir[4096];
	int n = snprintf(dir, sizeof(dir), "%s/%s-%d-%.24s", base, stamp, (int)getpid(), run_id);
	if (n < 0 || (size_t)n >= sizeof(dir) || (size_t)n >= size)
		return -ENAMETOOLONG;
	int r = mkdirs(dir);
	if (r < 0)
		return r;
	snprintf(last_id, sizeof(last_id), "%s", run_id);
	snprintf(last_dir, sizeof(last_dir), "%s", dir);
	snprintf(ret, size, "%s", dir);
	return 0;
}
