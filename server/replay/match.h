/* match.h: does a message match a transcript's expectation? Subset
 * matching with placeholders and captures, as docs/transcripts.md defines
 * it. Pure functions over json-c values: no I/O. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* Values bound by "{{$name}}" placeholders, in one transcript. */
struct match_captures {
	json_object *bound; /* object name -> value; owned */
};

void match_captures_init(struct match_captures *c);
void match_captures_release(struct match_captures *c);

/* Whether actual matches expected. On success the captures the match made
 * are added to c; on failure c is unchanged and why (if not NULL) holds the
 * path and reason of the first mismatch, e.g.
 * "$.result.verdict: expected \"allow\", got \"deny\"". */
bool match_json(json_object *expected, json_object *actual, struct match_captures *c, char *why,
                size_t wsz);

/* Replace every string "{{$name}}" in obj (in place) by a copy of its
 * bound value. -ENOENT (naming it in why) when a name is not bound. */
int match_substitute(json_object **obj, const struct match_captures *c, char *why, size_t wsz);
