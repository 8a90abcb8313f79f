/* doc_store.h: the text of the documents the client has open, as the LSP's
 * didOpen/didChange/didClose describe them, so that plain LSP features
 * (published and pulled diagnostics, code actions that run a selection or
 * a comment's intent) can read what the user sees. Whole-text and
 * incremental changes are applied here; positions come in the encoding
 * negotiated at initialize. Every text has a cap, and so has the number of
 * documents: past either, a document is kept without text (its version
 * still counts for proposals) and the features that need text say so. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/position.h"

/* Largest document text kept, all texts together, and how many documents
 * at once. */
#define DOC_MAX_TEXT  (8u << 20)
#define DOC_MAX_TOTAL (64u << 20)
#define DOC_MAX_DOCS  256

struct doc {
	struct doc *next;
	char *uri;
	char *language_id;    /* as the client sent it */
	const char *language; /* kiln's canonical name (core/lang.c), or NULL; see doc_language */
	char lang_name[32];
	int64_t version;
	struct buf text;
	bool too_big; /* over DOC_MAX_TEXT, or DOC_MAX_TOTAL was reached: text is empty */
	/* Owned by the diagnostics module (methods/diagnostics.c). */
	void *diag;
};

struct doc_store {
	struct doc *docs;
	size_t ndocs;
	size_t total; /* bytes of text kept, all documents */
};

/* Open (or reopen) uri with its text. -ENOSPC past DOC_MAX_DOCS, -ENOMEM. */
int docs_open(struct doc_store *s, const char *uri, const char *language_id, int64_t version,
              const char *text, size_t len, struct doc **ret_doc);
/* Apply didChange's contentChanges (an array, borrowed) in order: an entry
 * with a "range" replaces that range, one without replaces the whole text.
 * -EINVAL with a sentence in detail when an entry is not valid (the text is
 * then whatever the valid entries before it made; the caller drops the
 * document's diagnostics). -ENOENT for a document not open. */
int docs_change(struct doc_store *s, const char *uri, int64_t version, json_object *changes,
                enum pos_encoding enc, struct doc **ret_doc, char *detail, size_t dsz);
/* Forget uri; the caller has released doc->diag. */
void docs_close(struct doc_store *s, const char *uri);
struct doc *docs_find(struct doc_store *s, const char *uri);
/* Free every document (their diag must be released first). */
void doc_store_release(struct doc_store *s);

/* Byte offset of an LSP position object ({line, character}) in the
 * document's text; -EINVAL when pos is not one. */
int docs_offset(const struct doc *d, json_object *pos, enum pos_encoding enc, size_t *ret_off);
