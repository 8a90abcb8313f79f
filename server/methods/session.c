/* session.c: session/open, session/reset and session/close, over the
 * sandbox's sessions (sandbox/session/session.h): a session keeps one Python
 * namespace alive between snippet/run calls that name it. Sessions end
 * with the server (sandbox_free), so they close with the connection. */
#include "methods/methods.h"

#include <errno.h>
#include <string.h>

#include "core/json.h"
#include "kiln.h"
#include "rpc/message.h"
#include "sandbox/session/session.h"

static json_object *session_json(const struct sbx_session *ss)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "sessionId", json_object_new_string(sbx_session_id(ss)));
	return o;
}

/* The session params name, or NULL with the call answered. */
static struct sbx_session *find(struct rpc_call *call, json_object *params, const char *method)
{
	struct kiln *k = rpc_call_ctx(call);
	const char *id = NULL;
	if (json_get_string(params, "sessionId", &id) < 0) {
		rpc_call_errorf(call, RPC_INVALID_PARAMS, NULL,
		                "Invalid params: %s takes {sessionId}", method);
		return NULL;
	}
	struct sbx_session *ss = k->sandbox ? sbx_session_find(k->sandbox, id) : NULL;
	if (!ss)
		rpc_call_errorf(
		    call, RPC_INVALID_PARAMS, NULL,
		    "Invalid params: there is no session %s (open one with session/open)", id);
	return ss;
}

int method_session_open(struct rpc_call *call, json_object *params)
{
	struct kiln *k = rpc_call_ctx(call);
	const char *language = "python";
	json_object *limits = NULL;
	if ((params && !json_object_is_type(params, json_type_object)) ||
	    json_get_string(params, "language", &language) == -EINVAL ||
	    json_get_object(params, "limits", &limits) == -EINVAL) {
		rpc_call_error(call, RPC_INVALID_PARAMS,
		               "Invalid params: session/open takes {language?, limits?}", NULL);
		return 0;
	}
	if (!k->sandbox) {
		rpc_call_error(
		    call, RPC_REQUEST_FAILED,
		    "kiln cannot open a session: the sandbox subsystem did not start (see "
		    "the server's log)",
		    NULL);
		return 0;
	}
	char err[768];
	struct sbx_session *ss = NULL;
	int r = sbx_session_open(k->sandbox, language, limits, &ss, err, sizeof(err));
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		rpc_call_errorf(call, r == -EINVAL ? RPC_INVALID_PARAMS : RPC_REQUEST_FAILED, NULL,
		                "%s%s", r == -EINVAL ? "Invalid params: " : "", err);
		return 0;
	}
	rpc_call_reply(call, session_json(ss));
	return 0;
}

int method_session_reset(struct rpc_call *call, json_object *params)
{
	struct sbx_session *ss = find(call, params, "session/reset");
	if (!ss)
		return 0;
	char err[768];
	int r = sbx_session_reset(ss, err, sizeof(err));
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		rpc_call_error(call, RPC_REQUEST_FAILED, err, NULL);
		return 0;
	}
	rpc_call_reply(call, session_json(ss));
	return 0;
}

int method_session_close(struct rpc_call *call, json_object *params)
{
	struct sbx_session *ss = find(call, params, "session/close");
	if (!ss)
		return 0;
	sbx_session_close(ss);
	rpc_call_reply(call, json_object_new_object());
	return 0;
}
