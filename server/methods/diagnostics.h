/* diagnostics.h: the validator's diagnostics for open documents, the plain
 * LSP way: textDocument/publishDiagnostics after didOpen and didChange
 * (debounced, checked on the validator's thread), and textDocument/diagnostic
 * for clients that pull. Only documents in a language the validator checks
 * get diagnostics. validator.publishDiagnostics: false turns both off (kiln's
 * own plugins may keep their own display). */
#pragma once

#include <stdbool.h>

struct kiln;
struct doc;

/* After didChange: wait this long for the typing to stop. */
#define DIAG_DEBOUNCE_MS 200

/* Whether diagnostics are on (validator.publishDiagnostics, default true). */
bool diag_enabled(const struct kiln *k);
/* The document's text changed (opened: now; changed: debounced). */
void diag_schedule(struct kiln *k, struct doc *d, bool opened);
/* The document is closing: stop its check, clear what was published. */
void diag_close(struct kiln *k, struct doc *d);
/* At the end of the session: stop every document's check, publish nothing. */
void diag_release_all(struct kiln *k);
/* Whether the validator checks this document's language. */
bool diag_checks(const struct doc *d);
