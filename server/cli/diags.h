/* diags.h: diagnostics as a compiler prints them, one a line,
 * `file:line:col: severity: message [rule]`, for the subcommands that
 * judge code at a terminal: `kiln validate` (on stdout, its output) and
 * `kiln run` (on stderr: stdout is the program's). */
#pragma once

#include <json-c/json.h>
#include <stdio.h>

/* Print diags (an array of LSP Diagnostic objects, borrowed; 0-based
 * positions, written 1-based) of the file called path to out. The path
 * and the messages come from outside: they are shown, never acted on. */
void cli_print_diagnostics(FILE *out, const char *path, json_object *diags);
