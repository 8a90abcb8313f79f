/* snippet_validate.c: the snippet/validate method: {language, code,
 * profile?} -> {diagnostics, verdict}, with ranges in the position
 * encoding negotiated at initialize. */
#include <errno.h>
#include <string.h>

#include "core/json.h"
#include "kiln.h"
#include "methods/methods.h"
#include "rpc/message.h"
#include "validate/validate.h"

int method_snippet_validate(struct rpc_call *call, json_object *params)
{
	struct kiln *k = rpc_call_ctx(call);
	const char *language = NULL, *code = NULL, *profile = NULL;
	if (json_get_string(params, "language", &language) < 0 ||
	    json_get_string(params, "code", &code) < 0) {
		rpc_call_error(call, RPC_INVALID_PARAMS,
		               "snippet/validate wants string params language and code", NULL);
		return 0;
	}
	int r = json_get_string(params, "profile", &profile);
	if (r == -EINVAL) {
		rpc_call_error(call, RPC_INVALID_PARAMS, "profile must be a string", NULL);
		return 0;
	}
	if (!k->validator) {
		rpc_call_error(call, RPC_INTERNAL_ERROR, "the validator is not available", NULL);
		return 0;
	}
	json_object *diags = NULL;
	enum val_verdict verdict;
	char detail[256] = "";
	size_t len = (size_t)json_object_get_string_len(json_get(params, "code"));
	r = val_check(k->validator, language, code, len, profile, k->encoding, &diags, &verdict,
	              detail, sizeof(detail));
	if (r < 0) {
		rpc_call_error(call, r == -ENOMEM ? RPC_INTERNAL_ERROR : RPC_INVALID_PARAMS,
		               detail[0] ? detail : strerror(-r), NULL);
		return 0;
	}
	json_object *result = json_object_new_object();
	json_object_object_add(result, "diagnostics", diags);
	json_object_object_add(result, "verdict",
	                       json_object_new_string(val_verdict_name(verdict)));
	rpc_call_reply(call, result);
	return 0;
}
