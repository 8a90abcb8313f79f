/* cli.h: kiln's subcommands (`kiln replay`, and later run, validate,
 * shell). Each takes argv with argv[0] the subcommand's name and returns
 * the process exit code. */
#pragma once

#include <stddef.h>

struct cli_command {
	const char *name;
	int (*fn)(int argc, char **argv);
};

extern const struct cli_command cli_commands[];
extern const size_t cli_commands_count;

int cli_replay(int argc, char **argv);
int cli_shell(int argc, char **argv);
int cli_ask(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_validate(int argc, char **argv);
