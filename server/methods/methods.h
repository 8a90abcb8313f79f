/* methods.h: every JSON-RPC method kiln serves, and the one static table
 * that maps their names to handlers (methods/table.c). Each handler lives
 * in the file named after its method family. */
#pragma once

#include <json-c/json.h>
#include <stddef.h>

#include "rpc/dispatch.h"

extern const struct rpc_method kiln_methods[];
extern const size_t kiln_methods_count;

/* lifecycle.c */
int method_initialize(struct rpc_call *call, json_object *params);
int method_initialized(struct rpc_call *call, json_object *params);
int method_shutdown(struct rpc_call *call, json_object *params);
int method_exit(struct rpc_call *call, json_object *params);

/* snippet_run.c */
int method_snippet_run(struct rpc_call *call, json_object *params);

/* snippet_validate.c */
int method_snippet_validate(struct rpc_call *call, json_object *params);

/* intent_run.c, intent_approve.c, intent_model.c */
int method_intent_run(struct rpc_call *call, json_object *params);
int method_intent_approve(struct rpc_call *call, json_object *params);
int method_intent_model(struct rpc_call *call, json_object *params);
/* kiln/doctor: what kiln can promise here, with fixes (methods/doctor.c). */
int method_kiln_doctor(struct rpc_call *call, json_object *params);

/* diagnostics.c */
int method_text_document_diagnostic(struct rpc_call *call, json_object *params);

/* lsp_run.c: plain-LSP code actions and the commands they carry. */
int method_text_document_code_action(struct rpc_call *call, json_object *params);
int method_workspace_execute_command(struct rpc_call *call, json_object *params);
extern const char *const lsp_commands[];
extern const size_t lsp_commands_count;
struct kiln;
/* Stop every run started by a command (shutdown, exit, end of input). */
void lsp_runs_cancel_all(struct kiln *k);

/* mcp.c: `kiln mcp`'s own table (the Model Context Protocol). */
extern const struct rpc_method mcp_methods[];
extern const size_t mcp_methods_count;
int method_mcp_initialize(struct rpc_call *call, json_object *params);
int method_mcp_initialized(struct rpc_call *call, json_object *params);
int method_mcp_roots_changed(struct rpc_call *call, json_object *params);
int method_mcp_cancelled(struct rpc_call *call, json_object *params);
int method_mcp_ping(struct rpc_call *call, json_object *params);
int method_mcp_discover(struct rpc_call *call, json_object *params);
int method_mcp_tools_list(struct rpc_call *call, json_object *params);
int method_mcp_tools_call(struct rpc_call *call, json_object *params);

/* session.c */
int method_session_open(struct rpc_call *call, json_object *params);
int method_session_reset(struct rpc_call *call, json_object *params);
int method_session_close(struct rpc_call *call, json_object *params);

/* workspace_apply.c, workspace_decline.c */
int method_workspace_apply_changes(struct rpc_call *call, json_object *params);
int method_workspace_decline_changes(struct rpc_call *call, json_object *params);

/* documents.c */
int method_text_document_did_open(struct rpc_call *call, json_object *params);
int method_text_document_did_change(struct rpc_call *call, json_object *params);
int method_text_document_did_close(struct rpc_call *call, json_object *params);
