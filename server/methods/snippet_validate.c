/* snippet_validate.c: the snippet/validate method: {language, code,
 * profile?} -> {diagnostics, verdict}, with ranges in the position
 * encoding negotiated at initialize. Big code is checked on the
 * validator's thread (methods/check.h). The diagnostics become JSON here,
 * at the edge. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/log.h"
#include "kiln.h"
#include "methods/check.h"
#include "methods/methods.h"
#include "rpc/message.h"
#include "validate/validate.h"

struct pending {
	struct rpc_call *call;
	struct kiln *k;
	struct val_job *job;
};

static void reply(struct rpc_call *call, struct kiln *k, int r, struct val_report *rep,
                  const char *code, size_t len, const char *detail)
{
	if (r < 0) {
		int ec = r == -ENOMEM      ? RPC_INTERNAL_ERROR
		         : r == -EBUSY     ? RPC_REQUEST_FAILED
		         : r == -ECANCELED ? RPC_REQUEST_FAILED
		                           : RPC_INVALID_PARAMS;
		rpc_call_error(call, ec, detail && detail[0] ? detail : strerror(-r), NULL);
		return;
	}
	json_object *diags = val_report_json(rep, code, len, k->encoding);
	if (!diags) {
		rpc_call_error(call, RPC_INTERNAL_ERROR, NULL, NULL);
		return;
	}
	json_object *result = json_object_new_object();
	json_object_object_add(result, "diagnostics", diags);
	json_object_object_add(result, "verdict",
	                       json_object_new_string(val_verdict_name(rep->verdict)));
	rpc_call_reply(call, result);
}

static void on_done(void *data, int r, struct val_report *rep, const char *code, size_t len,
                    const char *detail)
{
	struct pending *p = data;
	reply(p->call, p->k, r, rep, code, len, detail);
	val_report_release(rep);
	free(p);
}

/* $/cancelRequest, shutdown or end of input: the thread drops the check
 * at its next step and on_done never runs; dispatch answers -32800. */
static void on_cancel(void *data)
{
	struct pending *p = data;
	val_job_cancel(p->job);
	free(p);
}

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
	json_object *code_obj = json_get(params, "code");
	size_t len = (size_t)json_object_get_string_len(code_obj);
	struct pending *p = calloc(1, sizeof(*p));
	if (!p) {
		rpc_call_error(call, RPC_INTERNAL_ERROR, NULL, NULL);
		return 0;
	}
	*p = (struct pending){.call = call, .k = k};
	char detail[256] = "";
	r = method_check(k, language, code, len, code_obj, profile, on_done, p, &p->job, detail,
	                 sizeof(detail));
	if (r == 0)
		return 0; /* answered, and p freed, by on_done */
	if (r < 0) {
		free(p);
		rpc_call_error(call, r == -EBUSY ? RPC_REQUEST_FAILED : RPC_INTERNAL_ERROR, detail,
		               NULL);
		return 0;
	}
	rpc_call_on_cancel(call, on_cancel, p);
	return 0;
}
