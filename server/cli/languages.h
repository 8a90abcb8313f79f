/* languages.h: the language registry (core/lang.h) for the terminal
 * subcommands that talk to a kiln server child (shell, ask): the same
 * config file the child reads extends it, so a name is judged here as the
 * server will judge it, before anything starts. */
#pragma once

#include <stddef.h>

/* Load config_path (NULL: the default location) and lay its
 * sandbox.languages over the registry. -errno with a sentence in err. */
int cli_languages_load(const char *config_path, char *err, size_t errsz);

/* The canonical name of name, or NULL after writing "CMD: unknown
 * language 'x' (kiln knows ...)" to stderr. */
const char *cli_language(const char *cmd, const char *name);
