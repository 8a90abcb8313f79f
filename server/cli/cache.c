/* cache.c (cli): `kiln cache clear` empties the answer cache
 * (llm/cache.h); `kiln cache path` prints where it is. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "llm/cache.h"

static void usage(FILE *out)
{
	fprintf(out, "Usage: kiln cache clear    remove every cached model answer\n"
	             "       kiln cache path     print the cache's directory\n"
	             "\n"
	             "With llm.cache set to true, kiln keeps each model answer in\n"
	             "$XDG_CACHE_HOME/kiln/llm/ (else ~/.cache/kiln/llm/) and answers the same\n"
	             "request from there; see docs/llm.md.\n");
}

int cli_cache(const struct kiln_options *opts, int argc, char **argv)
{
	(void)opts;
	if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		usage(stdout);
		return 0;
	}
	if (argc != 2 || (strcmp(argv[1], "clear") != 0 && strcmp(argv[1], "path") != 0)) {
		usage(stderr);
		return 2;
	}
	char dir[4096];
	int r = llm_cache_dir(dir, sizeof(dir));
	if (r < 0) {
		cli_error("kiln cache", "neither XDG_CACHE_HOME nor HOME is set");
		return 1;
	}
	if (strcmp(argv[1], "path") == 0) {
		printf("%s\n", dir);
		return 0;
	}
	size_t files;
	uint64_t bytes;
	r = llm_cache_clear(dir, &files, &bytes);
	if (r < 0) {
		char msg[4200];
		snprintf(msg, sizeof(msg), "cannot read %s: %s", dir, strerror(-r));
		cli_error("kiln cache", msg);
		return 1;
	}
	printf("removed %zu cached answer%s (%llu bytes) from %s\n", files, files == 1 ? "" : "s",
	       (unsigned long long)bytes, dir);
	return 0;
}
