/* table.c: the method table. Adding a method is one line here plus its
 * handler; the flags say where in the LSP lifecycle it may run. */
#include "methods/methods.h"

#include "core/util.h"

const struct rpc_method kiln_methods[] = {
	{"initialize", method_initialize, RPC_BEFORE_INIT},
	{"initialized", method_initialized, RPC_NOTIFICATION},
	{"shutdown", method_shutdown, 0},
	{"exit", method_exit, RPC_NOTIFICATION | RPC_BEFORE_INIT | RPC_AFTER_SHUTDOWN},
};

const size_t kiln_methods_count = ARRAY_SIZE(kiln_methods);
