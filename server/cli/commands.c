/* commands.c: the table of subcommands main() looks names up in (their
 * error line is error.c's). */
#include "cli/cli.h"

#include "core/util.h"

const struct cli_command cli_commands[] = {
    {"replay", cli_replay},     {"shell", cli_shell}, {"ask", cli_ask},       {"run", cli_run},
    {"validate", cli_validate}, {"cache", cli_cache}, {"doctor", cli_doctor},
};

const size_t cli_commands_count = ARRAY_SIZE(cli_commands);
