/* replay.c: placeholder while the runner is written. */
#include "cli/cli.h"
#include <stdio.h>
int cli_replay(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "replay: not built yet\n");
	return 2;
}
