/* intent.h: the state behind intent/run and intent/approve: proposals
 * (code a model wrote, validated, as a versioned edit), the document
 * versions kiln has seen (so a stale proposal is never applied blindly),
 * sessions (conversation history under a token budget) and the audit log.
 * The methods themselves live in methods/intent_*.c and documents.c. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/position.h"

struct kiln;
struct http;

/* A proposal: what the model wrote, ready for the person to approve. */
struct intent_proposal {
	struct intent_proposal *next;
	char id[48];
	char *language;
	char *code;
	char *answer; /* the model's whole answer (for a repair turn) */
	char *explanation;
	char *uri;
	int64_t version;
	uint64_t doc_life; /* intent_doc_life(uri) when it was asked for, or 0 */
	char *text;        /* the document's text the edit was computed against */
	char *session_id;
	json_object *range;       /* copy of the request's range, or NULL */
	json_object *position;    /* copy of the request's position, or NULL */
	json_object *messages;    /* the chat that produced it */
	json_object *edit;        /* WorkspaceEdit */
	json_object *hunks;       /* [{range, newText, oldText}] */
	json_object *diagnostics; /* LSP diagnostics */
	int verdict;              /* enum val_verdict */
	const char *verdict_name;
	unsigned attempt; /* 0 for intent/run, n for the nth repair */
	bool approved;
};

struct intent;

/* NULL on OOM. The audit log opens on first use. */
struct intent *intent_new(struct kiln *k);
void intent_free(struct intent *in);

/* The HTTP multi for model requests (created on first use). */
struct http *intent_http(struct intent *in);

/* --- proposals ------------------------------------------------------------- */

/* A new, empty proposal with a fresh id, stored (the oldest are dropped
 * past a bound). NULL on OOM. */
struct intent_proposal *intent_proposal_new(struct intent *in);
struct intent_proposal *intent_proposal_find(struct intent *in, const char *id);
/* The proposal as the protocol shows it (new object). */
json_object *intent_proposal_json(const struct intent_proposal *p);

/* Build p->edit and p->hunks from p->text, p->range/p->position and
 * p->code, in encoding enc. -EINVAL for a range that is not one. */
int intent_edit_build(struct intent_proposal *p, enum pos_encoding enc);
/* The position of byte offset off in text, as an LSP Position. */
json_object *intent_position_json(const char *text, size_t off, enum pos_encoding enc);

/* --- documents ---------------------------------------------------------------- */

/* Remember that uri is at version (the highest seen wins). */
void intent_doc_seen(struct intent *in, const char *uri, int64_t version);
/* uri was opened (didOpen) at version. Opened again after a close, it is
 * another life of the document: its versions start afresh, so they say
 * nothing about the text of the life before. */
void intent_doc_opened(struct intent *in, const char *uri, int64_t version);
/* The latest version seen for uri, or -1. A closed document keeps its
 * last version: a change just before didClose is still a change. */
int64_t intent_doc_version(struct intent *in, const char *uri);
/* Which life of uri kiln knows now (a number that changes each time it
 * is opened again after a close), or 0 when it knows none. */
uint64_t intent_doc_life(struct intent *in, const char *uri);
void intent_doc_closed(struct intent *in, const char *uri);

/* --- sessions ----------------------------------------------------------------- */

/* The history of session id (borrowed array of {role, content}), or NULL. */
json_object *intent_session_history(struct intent *in, const char *id);
/* Append a turn, then trim the oldest turns past budget_tokens (about four
 * bytes a token). */
void intent_session_add(struct intent *in, const char *id, const char *role, const char *content,
                        int64_t budget_tokens);

/* --- audit log ------------------------------------------------------------------ */

/* Append one record (rec is borrowed; "time" is added) as a JSON line to
 * the audit log, written with one write(2) so that a crash of kiln loses
 * no record it reported. Failures are logged once, not returned. */
void intent_audit(struct intent *in, const char *event, json_object *rec);
