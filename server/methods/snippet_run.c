/* snippet_run.c: snippet/run, a thin handler over the sandbox's run_start:
 * the validator's verdict is checked first (deny refuses the run), then
 * run/output and run/artifact notifications stream while the code runs
 * (run_sink.c); the reply is the run's outcome; $/cancelRequest kills the
 * box. */
#include "methods/methods.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "core/json.h"
#include "core/log.h"
#include "core/util.h"
#include "kiln.h"
#include "methods/run_sink.h"
#include "rpc/message.h"
#include "sandbox/run.h"
#include "sandbox/session.h"
#include "core/lang.h"
#include "validate/validate.h"

struct snippet_run {
	struct rpc_call *call;
	struct run *run;
	struct run_notify sink;
};

static void on_done(void *data, const struct run_outcome *outcome, int err, const char *errmsg)
{
	struct snippet_run *sr = data;
	run_notify_release(&sr->sink);
	if (err < 0)
		rpc_call_error(sr->call, err == -EINVAL ? RPC_INVALID_PARAMS : RPC_REQUEST_FAILED,
		               errmsg, NULL);
	else
		rpc_call_reply(sr->call, run_outcome_json(outcome));
	free(sr);
}

static void on_cancel(void *data)
{
	struct snippet_run *sr = data;
	run_cancel(sr->run);
	run_notify_release(&sr->sink);
	free(sr);
}

/* A denied snippet runs only when the request asks for it with
 * "override": true and the user's config allows that with
 * validator.allowOverride. Returns 1 when the run may go ahead, 0 when the
 * call has been answered. */
static int check_verdict(struct rpc_call *call, json_object *params, const char *language,
                         const char *code)
{
	struct kiln *k = rpc_call_ctx(call);
	if (!k->validator)
		return 1;
	/* The configured profile decides: a looser one per request would be
	 * an override by another name. */
	_cleanup_json_ json_object *diags = NULL;
	enum val_verdict verdict;
	char detail[256] = "";
	int r = val_check(k->validator, language, code, strlen(code), NULL, k->encoding, &diags,
	                  &verdict, detail, sizeof(detail));
	if (r < 0) {
		if (r != -EINVAL) {
			rpc_call_errorf(call, RPC_INVALID_PARAMS, NULL, "Invalid params: %s",
			                detail);
			return 0;
		}
		/* A language the config's sandbox knows but the validator has no
		 * grammar for: the sandbox still contains it. */
		log_info("snippet/run: %s is not validated: %s", language, detail);
		return 1;
	}
	if (verdict != VAL_DENY)
		return 1;
	bool override = false, allowed = false;
	json_get_bool(params, "override", &override);
	json_get_bool(config_section(k->config, "validator"), "allowOverride", &allowed);
	if (override && allowed) {
		log_warn("snippet/run: running denied %s code on the client's override", language);
		return 1;
	}
	const char *first = "";
	json_object *d0 = json_object_array_get_idx(diags, 0);
	json_get_string(d0, "message", &first);
	int64_t line = 0;
	json_get_int64(json_get_path(d0, "range.start"), "line", &line);
	json_object *data = json_object_new_object();
	json_object_object_add(data, "kind", json_object_new_string("denied"));
	json_object_object_add(data, "verdict", json_object_new_string("deny"));
	json_object_object_add(data, "diagnostics", steal_pointer(&diags));
	rpc_call_errorf(
	    call, RPC_REQUEST_FAILED, data,
	    "the validator denied this code (line %lld: %s); fix it%s", (long long)line + 1, first,
	    override ? ", or set validator.allowOverride in the config to allow overrides"
	             : ", or send \"override\": true where the config allows it");
	return 0;
}

int method_snippet_run(struct rpc_call *call, json_object *params)
{
	const char *language = NULL, *code = NULL, *session_id = NULL;
	json_object *limits = NULL;
	struct kiln *k = rpc_call_ctx(call);
	if (params && json_object_is_type(params, json_type_object) &&
	    json_get_string(params, "sessionId", &session_id) == -EINVAL) {
		rpc_call_error(call, RPC_INVALID_PARAMS,
		               "Invalid params: sessionId must be a string", NULL);
		return 0;
	}
	/* A session's language is its own: python. */
	if (session_id && params && !json_get(params, "language"))
		language = "python";
	if (!params || !json_object_is_type(params, json_type_object) ||
	    (!language && json_get_string(params, "language", &language) < 0) ||
	    json_get_string(params, "code", &code) < 0) {
		rpc_call_error(
		    call, RPC_INVALID_PARAMS,
		    "Invalid params: snippet/run takes {language, code, limits?, sessionId?}",
		    NULL);
		return 0;
	}
	struct sbx_session *ss = NULL;
	if (session_id) {
		ss = k->sandbox ? sbx_session_find(k->sandbox, session_id) : NULL;
		if (!ss) {
			rpc_call_errorf(
			    call, RPC_INVALID_PARAMS, NULL,
			    "Invalid params: there is no session %s (open one with session/open)",
			    session_id);
			return 0;
		}
		const struct lang *l = lang_find(language);
		if (!l || strcmp(l->name, "python") != 0) {
			rpc_call_errorf(call, RPC_INVALID_PARAMS, NULL,
			                "Invalid params: session %s runs python, not %s",
			                session_id, language);
			return 0;
		}
		language = "python";
	}
	int r = json_get_object(params, "limits", &limits);
	if (r == -EINVAL) {
		rpc_call_error(call, RPC_INVALID_PARAMS, "Invalid params: limits must be an object",
		               NULL);
		return 0;
	}
	if (!check_verdict(call, params, language, code))
		return 0;
	struct snippet_run *sr = calloc(1, sizeof(*sr));
	if (!sr)
		return -ENOMEM;
	sr->call = call;
	if (ss) {
		char err[768];
		r = run_notify_start_session(&sr->sink, k, ss, code, limits, on_done, sr, &sr->run,
		                             err, sizeof(err));
		if (r < 0 && r != -ENOMEM) {
			free(sr);
			json_object *data = json_object_new_object();
			json_object_object_add(data, "kind",
			                       json_object_new_string(r == -EBUSY   ? "sessionBusy"
			                                              : r == -EPIPE ? "sessionEnded"
			                                                            : "invalid"));
			rpc_call_error(call, r == -EINVAL ? RPC_INVALID_PARAMS : RPC_REQUEST_FAILED,
			               err, data);
			return 0;
		}
	} else {
		r = run_notify_start(&sr->sink, k, language, code, limits, on_done, sr, &sr->run);
	}
	if (r == -ENODEV) {
		free(sr);
		rpc_call_error(
		    call, RPC_REQUEST_FAILED,
		    "kiln will not run this code: the sandbox subsystem did not start (see "
		    "the server's log)",
		    NULL);
		return 0;
	}
	if (r < 0) {
		free(sr);
		return r;
	}
	rpc_call_on_cancel(call, on_cancel, sr);
	return 0;
}
