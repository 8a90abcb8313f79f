/* cache_dir.c: per-run folders under $XDG_CACHE_HOME/kiln/runs/ (cache_dir.h). */
#include "cli/cache_dir.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/json.h"
#include "core/log.h"
#include "sandbox/output/artifact.h"

static uint64_t max_bytes = 1ull << 30, max_age_ms = 7ull * 24 * 3600 * 1000;

void cli_run_folder_caps(json_object *sandbox)
{
	json_object *v = json_get(sandbox, "artifactDirMaxBytes");
	if (v && json_object_is_type(v, json_type_int) && json_object_get_int64(v) >= 0)
		max_bytes = (uint64_t)json_object_get_int64(v);
	v = json_get(sandbox, "artifactDirMaxAgeMs");
	if (v && json_object_is_type(v, json_type_int) && json_object_get_int64(v) >= 0)
		max_age_ms = (uint64_t)json_object_get_int64(v);
}

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
	/* The older runs' folders past the caps make room for this one. */
	if ((r = sbx_artifact_dir_prune(base, max_bytes, max_age_ms, dir)) > 0)
		log_info("removed %d old run folders from %s (sandbox.artifactDirMax*)", r, base);
	snprintf(last_id, sizeof(last_id), "%s", run_id);
	snprintf(last_dir, sizeof(last_dir), "%s", dir);
	snprintf(ret, size, "%s", dir);
	return 0;
}
