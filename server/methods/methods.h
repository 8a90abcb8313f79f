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
