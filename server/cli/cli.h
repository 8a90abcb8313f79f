/* cli.h: kiln's subcommands (replay, run, validate, shell, ask, cache,
 * doctor). Each takes
 * the global options given before its name (`kiln --config F run ...`) and
 * its own argv, with argv[0] the subcommand's name, and returns the process
 * exit code. Its own options win over the global ones. */
#pragma once

#include <stddef.h>

struct kiln_options;

struct cli_command {
	const char *name;
	int (*fn)(const struct kiln_options *opts, int argc, char **argv);
};

extern const struct cli_command cli_commands[];
extern const size_t cli_commands_count;

int cli_replay(const struct kiln_options *opts, int argc, char **argv);
int cli_shell(const struct kiln_options *opts, int argc, char **argv);
int cli_ask(const struct kiln_options *opts, int argc, char **argv);
int cli_run(const struct kiln_options *opts, int argc, char **argv);
int cli_validate(const struct kiln_options *opts, int argc, char **argv);
int cli_cache(const struct kiln_options *opts, int argc, char **argv);
int cli_doctor(const struct kiln_options *opts, int argc, char **argv);

/* Write "cmd: msg\n" to stderr, msg with its control characters made
 * visible (core/visible.h): messages carry names, paths and config text
 * that came from outside. */
void cli_error(const char *cmd, const char *msg);
