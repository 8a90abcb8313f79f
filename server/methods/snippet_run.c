/* snippet_run.c: snippet/run, a thin handler over the sandbox's run_start:
 * the validator's verdict is checked first (deny refuses the run; big code
 * is checked on the validator's thread, methods/check.h), then
 * run/output and run/artifact notifications stream while the code runs
 * (run_sink.c); the reply is the run's outcome; $/cancelRequest kills the
 * box. */
#include "methods/methods.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "core/json.h"
#include "core/log.h"
#include "core/util.h"
#include "kiln.h"
#include "methods/check.h"
#include "methods/run_sink.h"
#include "rpc/message.h"
#include "sandbox/run/run.h"
#include "sandbox/session/session.h"
#include "core/lang.h"
#include "validate/validate.h"

struct snippet_run {
	struct rpc_call *call;
	json_object *params; /* a reference: language and code point into it */
	const char *language, *code;
	const char *session_id; /* snippet/run {sessionId}: found again at start */
	json_object *limits;
	struct val_job *job; /* while the verdict is awaited */
	struct run *run;     /* once it runs */
	struct run_notify sink;
};

static void snippet_run_free(struct snippet_run *sr)
{
	json_object_put(sr->params);
	free(sr);
}

static void on_done(void *data, const struct run_outcome *outcome, int err, const char *errmsg)
{
	struct snippet_run *sr = data;
	run_notify_release(&sr->sink);
	if (err < 0)
		rpc_call_error(sr->call, err == -EINVAL ? RPC_INVALID_PARAMS : RPC_REQUEST_FAILED,
		               errmsg, NULL);
	else
		rpc_call_reply(sr->call, run_outcome_json(outcome));
	snippet_run_free(sr);
}

static void on_cancel(void *data)
{
	struct snippet_run *sr = data;
	if (sr->job) {
		val_job_cancel(sr->job);
	} else {
		run_cancel(sr->run);
		run_notify_release(&sr->sink);
	}
	snippet_run_free(sr);
}

/* Start the box, or the run in the session named (looked up again: it
 * may have been closed while the code was checked); the call is answered
 * (and sr freed) by on_done, or here when the run cannot start. */
static void start_run(struct snippet_run *sr)
{
	struct rpc_call *call = sr->call;
	struct kiln *k = rpc_call_ctx(call);
	int r;
	if (sr->session_id) {
		struct sbx_session *ss =
		    k->sandbox ? sbx_session_find(k->sandbox, sr->session_id) : NULL;
		char err[768];
		if (!ss) {
			snprintf(
			    err, sizeof(err),
			    "Invalid params: there is no session %s (open one with session/open)",
			    sr->session_id);
			r = -EINVAL;
		} else {
			r = run_notify_start_session(&sr->sink, k, ss, sr->code, sr->limits,
			                             on_done, sr, &sr->run, err, sizeof(err));
		}
		if (r < 0 && r != -ENOMEM) {
			snippet_run_free(sr);
			json_object *data = json_object_new_object();
			json_object_object_add(data, "kind",
			                       json_object_new_string(r == -EBUSY   ? "sessionBusy"
			                                              : r == -EPIPE ? "sessionEnded"
			                                                            : "invalid"));
			rpc_call_error(call, r == -EINVAL ? RPC_INVALID_PARAMS : RPC_REQUEST_FAILED,
			               err, data);
			return;
		}
	} else {
		r = run_notify_start(&sr->sink, k, sr->language, sr->code, sr->limits, on_done, sr,
		                     &sr->run);
	}
	if (r < 0) {
		snippet_run_free(sr);
		if (r == -ENODEV)
			rpc_call_error(call, RPC_REQUEST_FAILED,
			               "kiln will not run this code: the sandbox subsystem did not "
			               "start (see the server's log)",
			               NULL);
		else
			rpc_call_error(call, RPC_INTERNAL_ERROR, strerror(-r), NULL);
		return;
	}
	rpc_call_on_cancel(call, on_cancel, sr);
}

/* The validator's answer. A denied snippet runs only when the request asks
 * for it with "override": true and the user's config allows that with
 * validator.allowOverride; otherwise the call is answered with the
 * diagnostics. */
static void on_checked(void *data, int r, struct val_report *rep, const char *code, size_t len,
                       const char *detail)
{
	struct snippet_run *sr = data;
	struct rpc_call *call = sr->call;
	struct kiln *k = rpc_call_ctx(call);
	sr->job = NULL;
	bool override = false, allowed = false;
	json_get_bool(sr->params, "override", &override);
	json_get_bool(config_section(k->config, "validator"), "allowOverride", &allowed);
	switch (method_check_gate(r, rep, override && allowed)) {
	case CHECK_FAILED:
		snippet_run_free(sr);
		rpc_call_errorf(call, RPC_INVALID_PARAMS, NULL, "Invalid params: %s", detail);
		return;
	case CHECK_UNCHECKED:
		/* A language the config's sandbox knows but the validator has no
		 * grammar for: the sandbox still contains it. */
		log_info("snippet/run: %s is not validated: %s", sr->language, detail);
		start_run(sr);
		return;
	case CHECK_OVERRIDDEN:
		log_warn("snippet/run: running denied %s code on the client's override",
		         sr->language);
		/* fall through */
	case CHECK_RUN:
		val_report_release(rep);
		start_run(sr);
		return;
	case CHECK_DENIED:
		break;
	}
	_cleanup_json_ json_object *diags = val_report_json(rep, code, len, k->encoding);
	val_report_release(rep);
	const char *first = "";
	json_object *d0 = json_object_array_get_idx(diags, 0);
	json_get_string(d0, "message", &first);
	int64_t line = 0;
	json_get_int64(json_get_path(d0, "range.start"), "line", &line);
	json_object *err = json_object_new_object();
	json_object_object_add(err, "kind", json_object_new_string("denied"));
	json_object_object_add(err, "verdict", json_object_new_string("deny"));
	json_object_object_add(err, "diagnostics", steal_pointer(&diags));
	/* Whether "override": true would run it: an editor offers "run anyway"
	 * only where it can. */
	json_object_object_add(err, "overrideAllowed", json_object_new_boolean(allowed));
	snippet_run_free(sr);
	/* first points into the diagnostics, which err now holds. */
	rpc_call_errorf(
	    call, RPC_REQUEST_FAILED, err,
	    "the validator denied this code (line %lld: %s); fix it%s", (long long)line + 1, first,
	    override ? ", or set validator.allowOverride in the config to allow overrides"
	             : ", or send \"override\": true where the config allows it");
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
	struct snippet_run *sr = calloc(1, sizeof(*sr));
	if (!sr)
		return -ENOMEM;
	*sr = (struct snippet_run){.call = call,
	                           .params = json_object_get(params),
	                           .language = language,
	                           .code = code,
	                           .session_id = session_id,
	                           .limits = limits};
	if (!k->validator) {
		start_run(sr);
		return 0;
	}
	/* The configured profile decides: a looser one per request would be
	 * an override by another name. */
	json_object *code_obj = json_get(params, "code");
	size_t len = (size_t)json_object_get_string_len(code_obj);
	char detail[256] = "";
	r = method_check(k, language, code, len, code_obj, NULL, on_checked, sr, &sr->job, detail,
	                 sizeof(detail));
	if (r < 0) {
		snippet_run_free(sr);
		rpc_call_error(call, r == -EBUSY ? RPC_REQUEST_FAILED : RPC_INTERNAL_ERROR, detail,
		               NULL);
		return 0;
	}
	if (r == 1)
		rpc_call_on_cancel(call, on_cancel, sr);
	return 0;
}
