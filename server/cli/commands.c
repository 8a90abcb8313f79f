/* commands.c: the table of subcommands main() looks names up in, and the
 * one way they report an error line. */
#include "cli/cli.h"

#include <stdio.h>

#include "core/util.h"
#include "core/visible.h"

const struct cli_command cli_commands[] = {
    {"replay", cli_replay}, {"shell", cli_shell},       {"ask", cli_ask},
    {"run", cli_run},       {"validate", cli_validate}, {"cache", cli_cache},
};

const size_t cli_commands_count = ARRAY_SIZE(cli_commands);

void cli_error(const char *cmd, const char *msg)
{
	fputs(cmd, stderr);
	fputs(": ", stderr);
	vis_fputs(stderr, msg, 0);
	fputc('\n', stderr);
}
