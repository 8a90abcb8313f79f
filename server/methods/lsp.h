/* lsp.h: what the plain-LSP surface's files share (lsp_run.c: running a
 * selection or a document; lsp_intent.c: writing code for a "kiln:"
 * comment and running the proposal; lsp_window.c, below both: the window
 * messages, the output document, and code-action objects). lsp_run.c
 * calls lsp_intent.c, never the other way. See docs/lsp.md. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct kiln;
struct doc;
struct rpc_call;

#define LSP_CMD_WRITE_CODE   "kiln.writeCode"
#define LSP_CMD_RUN_PROPOSAL "kiln.runProposal"

/* The whole output kept for the output document, and the longest
 * window/logMessage line (longer ones go out in pieces). */
#define LSP_OUTPUT_MAX (1u << 20)
#define LSP_LINE_MAX   4096

/* LSP MessageType */
enum { MSG_ERROR = 1, MSG_WARNING = 2, MSG_INFO = 3, MSG_LOG = 4 };

/* lsp_window.c: window/logMessage of text[0..len), its control
 * characters made visible. */
void lsp_log(struct kiln *k, int type, const char *text, size_t len);
/* window/showMessage. */
void lsp_show(struct kiln *k, int type, const char *msg);
/* Write summary and text to NAME-PID.txt in kiln's own folder and ask the
 * client to open it (window/showDocument). */
void lsp_show_document(struct kiln *k, const char *name, const char *summary, const char *text,
                       size_t len, bool cut);
/* Remove the output documents of servers no longer running (at start),
 * and this server's own (at its end): they are copies of output the
 * client was shown, and /tmp/kiln-UID kept every one. */
void lsp_documents_sweep(void);
void lsp_documents_remove_own(void);
/* A CodeAction carrying command with one argument (stolen). */
json_object *lsp_action(const char *title, const char *command, json_object *arg);

/* lsp_intent.c: add "kiln: write code for this comment" when range starts
 * on a "kiln:" comment line, and "Run this proposal in kiln" inside a
 * proposal inserted by it. */
void lsp_intent_actions(struct kiln *k, const struct doc *d, json_object *range,
                        json_object *actions);
/* Run command when it is one of lsp_intent.c's: true, with *ret the
 * handler's return value; false for another command. */
bool lsp_intent_execute(struct rpc_call *call, struct kiln *k, const char *command,
                        json_object *arg, int *ret);
/* Forget the inserted proposals, after the dispatch is freed (end of the
 * session): jobs still running end through dispatch's callbacks. */
void lsp_intent_release(struct kiln *k);
