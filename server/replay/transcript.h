/* transcript.h: a transcript file parsed into steps (the format is in
 * docs/transcripts.md). Parsing only; cli/replay.c plays the steps. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

enum step_kind {
	STEP_SEND,      /* json: a message to frame and send */
	STEP_SEND_RAW,  /* bytes exactly as written */
	STEP_SEND_BODY, /* bytes framed with Content-Length */
	STEP_EXPECT,    /* json; ordered or not; consecutive ones form a group */
	STEP_SILENCE,   /* number: ms */
	STEP_SLEEP,     /* number: ms */
	STEP_CLOSE,
	STEP_EXIT,    /* number: exit code */
	STEP_STDERR,  /* text */
	STEP_TIMEOUT, /* number: ms for the following groups */
	STEP_IGNORE,  /* text: a notification method */
};

struct step {
	enum step_kind kind;
	int line; /* 1-based line in the file, for messages */
	json_object *json;
	bool ordered;
	char *bytes;
	size_t nbytes;
	long number;
};

struct transcript {
	char *path;
	struct step *steps;
	size_t nsteps;
	char **args; /* %args, split on spaces, NULL-terminated */
	size_t nargs;
	char **env; /* %env NAME=VALUE, NULL-terminated */
	size_t nenv;
	bool lines; /* %framing lines: newline-delimited JSON (kiln mcp) */
};

/* Parse path. -errno; on a format error -EINVAL with "file:line: what"
 * in detail. */
int transcript_load(const char *path, struct transcript *ret_t, char *detail, size_t dsz);
void transcript_release(struct transcript *t);
