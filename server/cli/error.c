/* error.c: the one way the subcommands report an error line (cli.h). Its
 * own file, below the subcommands, so that they do not call back into
 * commands.c, whose table names them. */
#include "cli/cli.h"

#include <stdio.h>

#include "core/visible.h"

void cli_error(const char *cmd, const char *msg)
{
	fputs(cmd, stderr);
	fputs(": ", stderr);
	vis_fputs(stderr, msg, 0);
	fputc('\n', stderr);
}
