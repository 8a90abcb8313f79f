/* table.c: the method table. Adding a method is one line here plus its
 * handler; the flags say where in the LSP lifecycle it may run. */
#include "methods/methods.h"

#include "core/util.h"

const struct rpc_method kiln_methods[] = {
    {"initialize", method_initialize, RPC_BEFORE_INIT},
    {"initialized", method_initialized, RPC_NOTIFICATION},
    {"shutdown", method_shutdown, 0},
    {"exit", method_exit, RPC_NOTIFICATION | RPC_BEFORE_INIT | RPC_AFTER_SHUTDOWN},
    {"snippet/validate", method_snippet_validate, 0},
    {"snippet/run", method_snippet_run, 0},
    {"intent/run", method_intent_run, 0},
    {"intent/approve", method_intent_approve, 0},
    {"intent/model", method_intent_model, 0},
    {"kiln/doctor", method_kiln_doctor, 0},
    {"session/open", method_session_open, 0},
    {"session/reset", method_session_reset, 0},
    {"session/close", method_session_close, 0},
    {"textDocument/didOpen", method_text_document_did_open, RPC_NOTIFICATION},
    {"textDocument/didChange", method_text_document_did_change, RPC_NOTIFICATION},
    {"textDocument/didClose", method_text_document_did_close, RPC_NOTIFICATION},
    {"textDocument/diagnostic", method_text_document_diagnostic, 0},
    {"textDocument/codeAction", method_text_document_code_action, 0},
    {"workspace/executeCommand", method_workspace_execute_command, 0},
    {"workspace/applyChanges", method_workspace_apply_changes, 0},
    {"workspace/declineChanges", method_workspace_decline_changes, 0},
};

const size_t kiln_methods_count = ARRAY_SIZE(kiln_methods);
