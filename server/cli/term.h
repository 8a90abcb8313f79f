/* term.h: how the terminal front ends (`kiln shell`, `kiln ask`) show
 * proposals, diagnostics, streamed output, status and errors: colour only
 * on a terminal that supports it (and not under NO_COLOR), a status line
 * on stderr that the next output replaces. Every string that comes from
 * code, a model, a file or a program is shown with core/visible.h: text
 * with its control, bidi and invisible characters made visible; program
 * output through the filter that keeps only colour (docs/terminal.md). */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/visible.h"

struct term {
	bool color;     /* stdout gets colour */
	bool status_ok; /* stderr is a terminal: show a status line */
	bool status_on; /* a status line is showing */
	bool quiet;     /* no status lines at all */
	bool at_bol;    /* the last output ended a line */
	FILE *ui;       /* kiln's own lines: stdout, or stderr (term_ui_stderr) */
	/* The status shown, and since when (ms, CLOCK_MONOTONIC): a status
	 * that lasts shows how long it has lasted. */
	char status_text[96];
	uint64_t status_since_ms;
	/* The code as the model writes it (intent/partial): its lines so far
	 * and the last of them, shown on the status line. */
	unsigned partial_lines;
	char partial_last[64];
	/* run/output of the stdout and stderr streams, filtered apart: a
	 * sequence may be split across two chunks of one stream. */
	struct vis_filter out[2];
};

void term_init(struct term *t);
/* The escapes that start and end kiln's dim lines on t->ui ("" without
 * colour). */
const char *term_dim(const struct term *t);
const char *term_reset(const struct term *t);
/* kiln's own lines (proposals, results, notes) go to stderr, so that
 * stdout carries only the program's output (kiln ask). */
void term_ui_stderr(struct term *t);
/* Show a transient status ("thinking", "running") on stderr. */
void term_status(struct term *t, const char *text);
void term_status_clear(struct term *t);
/* A proposal (intent/run's result): code with line numbers, each
 * diagnostic under its line, the verdict. */
void term_proposal(struct term *t, json_object *proposal);
/* Diagnostics of code (snippet/validate's result) under the code. */
void term_code(struct term *t, const char *code, json_object *diagnostics, const char *verdict);
/* What each notification shows while the terminal waits (notes.c maps
 * a method to one of these; params are the notification's). */
/* The status line again, its elapsed time moved on (the client's tick). */
void term_status_tick(struct term *t);
/* run/output: the program's output written through, colour kept. */
void term_output(struct term *t, json_object *params);
/* run/artifact: a line saying what the run made and where it is saved. */
void term_artifact(struct term *t, json_object *params);
/* intent/attempt: the stage of a run with repair, as status or a line. */
void term_attempt(struct term *t, json_object *params);
/* intent/partial: the code as the model writes it, on the status line:
 * how many lines, and the last one (cut to fit one line of a narrow
 * terminal). */
void term_partial(struct term *t, json_object *params);
/* intent/explanation: the model's words, in their own colour. */
void term_explanation(struct term *t, json_object *params);
/* A run's output ended: drop a partial escape sequence, reset a colour the
 * program left on. term_run_result and term_error call it. */
void term_output_end(struct term *t);
/* The end of a run (snippet/run's result). */
void term_run_result(struct term *t, json_object *result);
/* A JSON-RPC error object: its kind and message. */
void term_error(struct term *t, json_object *error);
/* A line of information in the terminal's muted colour, made visible
 * (only line breaks and tabs pass). */
void term_info(struct term *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Text on stdout in the normal colour, made visible the same way. */
void term_print(struct term *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
