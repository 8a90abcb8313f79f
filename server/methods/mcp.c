/* mcp.c: `kiln mcp`, the Model Context Protocol over stdio for coding
 * agents (docs/mcp.md). The same dispatch, validator and sandbox as the
 * editor protocol; only the framing (newline-delimited, rpc/frame_lines.c)
 * and this method table differ. Tools: run_code (validate, then run an
 * allow or warn verdict in the sandbox, or in a session; a deny is an error
 * result with the diagnostics), validate_code, and open_session and
 * close_session over the sandbox's session store (sandbox/session/).
 *
 * Runs and sessions see the workspace mcp_roots.c sets: the client's
 * first root, else the working directory. A call that needs it waits
 * while a roots/list is unanswered.
 *
 * Versions: the initialize handshake of 2025-06-18 and 2025-11-25, and the
 * stateless 2026-07-28 revision (server/discover; each request names its
 * version in params._meta), as a dual-era server serves both.
 *
 * A call whose _meta has a progressToken hears notifications/progress as
 * its program writes output (the last line as the message).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/json.h"
#include "core/lang.h"
#include "core/log.h"
#include "core/util.h"
#include "core/visible.h"
#include "kiln.h"
#include "methods/mcp_roots.h"
#include "methods/methods.h"
#include "methods/run_sink.h"
#include "rpc/dispatch.h"
#include "rpc/message.h"
#include "rpc/peer.h"
#include "sandbox/run/run.h"
#include "sandbox/sandbox.h"
#include "sandbox/session/session.h"
#include "sandbox/workspace/wsdiff.h"
#include "validate/validate.h"

#define MODERN_VERSION "2026-07-28"
#define META_VERSION   "io.modelcontextprotocol/protocolVersion"
/* Unsupported protocol version (2026-07-28's UnsupportedProtocolVersionError). */
#define MCP_UNSUPPORTED_VERSION -32022

/* The handshake versions, newest first: initialize answers the client's
 * when it is one of these, else the newest. */
static const char *const legacy_versions[] = {"2025-11-25", "2025-06-18"};

/* What one output stream keeps for the result (the sandbox's outputBytes
 * limit ends the run itself). */
#define MCP_OUTPUT_MAX (256u << 10)

static const char instructions[] =
    "kiln runs code in a namespace sandbox with no network, a read-only view of the host's "
    "system files, a private /tmp and /work, and limits on time, memory and processes. "
    "The code starts in the project folder (the client's first root, else the folder kiln "
    "was started in), so relative paths such as open('data.csv') work; secrets such as .env "
    "and keys are hidden, and what the code writes there stays in the sandbox, listed in the "
    "result, never written to the folder. "
    "Files written under /work/out are returned (images as image content). Use open_session "
    "and run_code's session argument to keep variables between calls. Every snippet is "
    "checked first by kiln's validator: code it denies (network access, writes outside the "
    "sandbox, hidden characters, syntax errors) does not run, and the diagnostics say why. "
    "Use validate_code to check code without running it.";

/* --- the tool list --- */

static json_object *prop(const char *type, const char *description)
{
	json_object *p = json_object_new_object();
	json_object_object_add(p, "type", json_object_new_string(type));
	json_object_object_add(p, "description", json_object_new_string(description));
	return p;
}

static json_object *language_prop(void)
{
	char names[256];
	char desc[400];
	snprintf(desc, sizeof(desc),
	         "The language of the code: one of %s (aliases such as py, sh, js are accepted).",
	         lang_names(names, sizeof(names)));
	json_object *p = prop("string", desc);
	json_object *e = json_object_new_array();
	for (size_t i = 0; i < lang_count(); i++)
		json_object_array_add(e, json_object_new_string(lang_at(i)->name));
	json_object_object_add(p, "examples", e);
	return p;
}

static json_object *schema(json_object *props, const char *const *required, size_t nreq)
{
	json_object *s = json_object_new_object();
	json_object_object_add(s, "type", json_object_new_string("object"));
	json_object_object_add(s, "properties", props);
	json_object *req = json_object_new_array();
	for (size_t i = 0; i < nreq; i++)
		json_object_array_add(req, json_object_new_string(required[i]));
	json_object_object_add(s, "required", req);
	json_object_object_add(s, "additionalProperties", json_object_new_boolean(false));
	return s;
}

static json_object *tool(const char *name, const char *title, const char *description,
                         json_object *input_schema, bool read_only)
{
	json_object *t = json_object_new_object();
	json_object_object_add(t, "name", json_object_new_string(name));
	json_object_object_add(t, "title", json_object_new_string(title));
	json_object_object_add(t, "description", json_object_new_string(description));
	json_object_object_add(t, "inputSchema", input_schema);
	json_object *ann = json_object_new_object();
	json_object_object_add(ann, "readOnlyHint", json_object_new_boolean(read_only));
	json_object_object_add(ann, "destructiveHint", json_object_new_boolean(false));
	json_object_object_add(ann, "openWorldHint", json_object_new_boolean(false));
	json_object_object_add(t, "annotations", ann);
	return t;
}

static json_object *tool_list(void)
{
	static const char *const run_req[] = {"language", "code"};
	json_object *rp = json_object_new_object();
	json_object_object_add(rp, "language", language_prop());
	json_object_object_add(rp, "code", prop("string", "The complete program to run, as text."));
	json_object *ts = prop("number", "Wall-clock limit for the run in seconds (default 30, at "
	                                 "most 3600). The program is killed when it is reached.");
	json_object_object_add(ts, "minimum", json_object_new_double(0.1));
	json_object_object_add(ts, "maximum", json_object_new_int(3600));
	json_object_object_add(rp, "timeoutSeconds", ts);
	json_object_object_add(rp, "session",
	                       prop("string", "A session from open_session (Python only): the "
	                                      "code runs there, seeing the names earlier calls "
	                                      "left. Without it the call starts from a clean "
	                                      "sandbox."));

	static const char *const val_req[] = {"language", "code"};
	json_object *vp = json_object_new_object();
	json_object_object_add(vp, "language", language_prop());
	json_object_object_add(vp, "code", prop("string", "The code to check, as text."));
	json_object_object_add(vp, "profile",
	                       prop("string", "The validator profile: strict, standard (the usual "
	                                      "default), relaxed or off."));

	json_object *op = json_object_new_object();
	json_object *ol = prop("string", "The session's language: python (the only one with "
	                                 "sessions).");
	json_object *oe = json_object_new_array();
	json_object_array_add(oe, json_object_new_string("python"));
	json_object_object_add(ol, "enum", oe);
	json_object_object_add(op, "language", ol);

	static const char *const close_req[] = {"session"};
	json_object *cp = json_object_new_object();
	json_object_object_add(cp, "session",
	                       prop("string", "The session to end (from open_session)."));

	json_object *tools = json_object_new_array();
	json_object_array_add(
	    tools,
	    tool("run_code", "Run code in kiln's sandbox",
	         "Validate a snippet and run it in a fresh sandbox (no network; limits on time, "
	         "memory and processes). Returns the exit status, the time taken, stdout and "
	         "stderr, and the files it wrote under /work/out (images as image content). Code "
	         "the validator denies is not run: the result is an error listing the "
	         "diagnostics (line, rule, message), so fix the code and call again. The code "
	         "starts in the project folder (relative paths work; secrets such as .env are "
	         "hidden; its writes stay in the sandbox and are listed, never written to the "
	         "folder). Without session each call starts from a clean sandbox; pass a "
	         "session from open_session to keep Python variables between calls.",
	         schema(rp, run_req, ARRAY_SIZE(run_req)), false));
	json_object_array_add(
	    tools,
	    tool("validate_code", "Check code with kiln's validator",
	         "Check a snippet without running it: syntax (the language's own parser) and "
	         "kiln's policy rules (network, subprocesses, files outside the sandbox, "
	         "hidden characters). Returns the verdict (allow, warn or deny) and one "
	         "line per diagnostic: line:column, severity, rule id and message.",
	         schema(vp, val_req, ARRAY_SIZE(val_req)), true));
	json_object_array_add(
	    tools, tool("open_session", "Open a Python session",
	                "Start a Python session, as a notebook's kernel: pass the session it "
	                "returns to run_code, and the names, imports and data each call leaves "
	                "are there for the next. Same sandbox and project folder as run_code. "
	                "End it with close_session.",
	                schema(op, NULL, 0), false));
	json_object_array_add(tools,
	                      tool("close_session", "Close a session",
	                           "End a session from open_session and forget what it held.",
	                           schema(cp, close_req, ARRAY_SIZE(close_req)), false));
	return tools;
}

/* --- versions --- */

static bool modern_request(json_object *params, const char **ret_version)
{
	const char *v;
	if (json_get_string(json_get(params, "_meta"), META_VERSION, &v) < 0)
		return false;
	*ret_version = v;
	return true;
}

static json_object *supported_versions(void)
{
	json_object *a = json_object_new_array();
	json_object_array_add(a, json_object_new_string(MODERN_VERSION));
	for (size_t i = 0; i < ARRAY_SIZE(legacy_versions); i++)
		json_object_array_add(a, json_object_new_string(legacy_versions[i]));
	return a;
}

/* A request outside the handshake: modern when its _meta names a version
 * kiln speaks; one naming another version gets UnsupportedProtocolVersion;
 * one with no version before initialize is refused. Returns 1 when the
 * request may go on (*ret_modern says how to answer), 0 when answered. */
static int check_era(struct rpc_call *call, json_object *params, bool *ret_modern)
{
	const char *v;
	if (modern_request(params, &v)) {
		if (strcmp(v, MODERN_VERSION) != 0) {
			json_object *data = json_object_new_object();
			json_object_object_add(data, "supported", supported_versions());
			json_object_object_add(data, "requested", json_object_new_string(v));
			rpc_call_error(call, MCP_UNSUPPORTED_VERSION,
			               "Unsupported protocol version", data);
			return 0;
		}
		*ret_modern = true;
		return 1;
	}
	if (rpc_dispatch_state(rpc_call_dispatch(call)) != RPC_STATE_RUNNING) {
		rpc_call_errorf(
		    call, RPC_INVALID_REQUEST, NULL,
		    "Invalid Request: send initialize first, or name the protocol version "
		    "in params._meta[\"%s\"] (%s)",
		    META_VERSION, MODERN_VERSION);
		return 0;
	}
	*ret_modern = false;
	return 1;
}

static json_object *server_info(void)
{
	json_object *si = json_object_new_object();
	json_object_object_add(si, "name", json_object_new_string("kiln"));
	json_object_object_add(si, "title", json_object_new_string("kiln code interpreter"));
	json_object_object_add(si, "version", json_object_new_string(KILN_VERSION));
	return si;
}

static json_object *server_caps(void)
{
	json_object *caps = json_object_new_object();
	json_object *tools = json_object_new_object();
	json_object_object_add(tools, "listChanged", json_object_new_boolean(false));
	json_object_object_add(caps, "tools", tools);
	return caps;
}

static void reply_modern(struct rpc_call *call, json_object *result, bool modern)
{
	if (modern)
		json_object_object_add(result, "resultType", json_object_new_string("complete"));
	rpc_call_reply(call, result);
}

int method_mcp_initialize(struct rpc_call *call, json_object *params)
{
	struct kiln *k = rpc_call_ctx(call);
	struct rpc_dispatch *d = rpc_call_dispatch(call);
	if (rpc_dispatch_state(d) != RPC_STATE_UNINITIALIZED) {
		rpc_call_error(call, RPC_INVALID_REQUEST,
		               "Invalid Request: initialize may be sent only once", NULL);
		return 0;
	}
	const char *asked = NULL;
	if (!params || json_get_string(params, "protocolVersion", &asked) < 0) {
		rpc_call_error(call, RPC_INVALID_PARAMS,
		               "Invalid params: initialize wants protocolVersion, capabilities and "
		               "clientInfo",
		               NULL);
		return 0;
	}
	/* The client's version when kiln speaks it, else kiln's newest
	 * handshake version: the client then decides whether to go on. */
	const char *version = legacy_versions[0];
	for (size_t i = 0; i < ARRAY_SIZE(legacy_versions); i++)
		if (strcmp(asked, legacy_versions[i]) == 0)
			version = legacy_versions[i];
	const char *client = "unknown";
	json_get_string(json_get(params, "clientInfo"), "name", &client);
	log_info("mcp: %s asked for %s; speaking %s", client, asked, version);
	/* Its roots are asked for once it says it is initialized. */
	mcp_roots_offered(k->mcp, json_get(params, "capabilities"));
	json_object *r = json_object_new_object();
	json_object_object_add(r, "protocolVersion", json_object_new_string(version));
	json_object_object_add(r, "capabilities", server_caps());
	json_object_object_add(r, "serverInfo", server_info());
	json_object_object_add(r, "instructions", json_object_new_string(instructions));
	rpc_dispatch_set_state(d, RPC_STATE_RUNNING);
	rpc_call_reply(call, r);
	kiln_warm_up(k);
	return 0;
}

int method_mcp_discover(struct rpc_call *call, json_object *params)
{
	bool modern;
	if (!check_era(call, params, &modern))
		return 0;
	json_object *r = json_object_new_object();
	json_object_object_add(r, "supportedVersions", supported_versions());
	json_object_object_add(r, "capabilities", server_caps());
	json_object *meta = json_object_new_object();
	json_object_object_add(meta, "io.modelcontextprotocol/serverInfo", server_info());
	json_object_object_add(r, "_meta", meta);
	json_object_object_add(r, "instructions", json_object_new_string(instructions));
	reply_modern(call, r, modern);
	return 0;
}

int method_mcp_initialized(struct rpc_call *call, json_object *params)
{
	(void)params;
	struct kiln *k = rpc_call_ctx(call);
	mcp_roots_ask_once(k->mcp);
	return 0;
}

/* The client's roots changed: ask again; calls that need the workspace
 * wait for the answer (mcp_roots.h). */
int method_mcp_roots_changed(struct rpc_call *call, json_object *params)
{
	(void)params;
	struct kiln *k = rpc_call_ctx(call);
	mcp_roots_ask(k->mcp);
	return 0;
}

int method_mcp_ping(struct rpc_call *call, json_object *params)
{
	(void)params;
	rpc_call_reply(call, json_object_new_object());
	return 0;
}

int method_mcp_cancelled(struct rpc_call *call, json_object *params)
{
	rpc_dispatch_cancel_id(rpc_call_dispatch(call), json_get(params, "requestId"));
	return 0;
}

int method_mcp_tools_list(struct rpc_call *call, json_object *params)
{
	bool modern;
	if (!check_era(call, params, &modern))
		return 0;
	json_object *r = json_object_new_object();
	json_object_object_add(r, "tools", tool_list());
	reply_modern(call, r, modern);
	return 0;
}

/* --- tool results --- */

static json_object *text_content(const char *text, size_t len)
{
	json_object *c = json_object_new_object();
	json_object_object_add(c, "type", json_object_new_string("text"));
	json_object_object_add(c, "text", json_object_new_string_len(text, (int)len));
	return c;
}

/* A tool error the model can act on (isError: true), per MCP: input and
 * execution errors are results, not protocol errors. */
static void tool_error(struct rpc_call *call, bool modern, json_object *structured, const char *fmt,
                       ...) __attribute__((format(printf, 4, 5)));
static void tool_error(struct rpc_call *call, bool modern, json_object *structured, const char *fmt,
                       ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object *r = json_object_new_object();
	json_object *content = json_object_new_array();
	json_object_array_add(content, text_content(msg, strlen(msg)));
	json_object_object_add(r, "content", content);
	if (structured)
		json_object_object_add(r, "structuredContent", structured);
	json_object_object_add(r, "isError", json_object_new_boolean(true));
	reply_modern(call, r, modern);
}

/* Diagnostics as lines a model can act on: "3:1 error [PY-IMPORT-NETWORK] ...". */
static void diags_text(struct buf *b, const struct val_report *rep, const char *code, size_t len)
{
	static const char *const sev[] = {"off", "error", "warning", "info", "hint"};
	for (size_t i = 0; i < rep->ndiags; i++) {
		const struct val_diag *d = &rep->diags[i];
		uint32_t line, ch;
		pos_at(code, len, rep->line_starts, rep->nlines, d->start, POS_UTF32, &line, &ch);
		buf_printf(b, "%u:%u %s [%s] %s\n", line + 1, ch + 1,
		           d->severity <= VAL_SEV_HINT ? sev[d->severity] : "?",
		           d->code ? d->code : "-", d->message);
	}
}

enum mcp_tool { TOOL_RUN, TOOL_VALIDATE, TOOL_OPEN, TOOL_CLOSE };

static const char *const tool_names[] = {
    [TOOL_RUN] = "run_code",
    [TOOL_VALIDATE] = "validate_code",
    [TOOL_OPEN] = "open_session",
    [TOOL_CLOSE] = "close_session",
};

struct mcp_call {
	struct rpc_call *call;
	struct kiln *k;
	bool modern;
	enum mcp_tool tool;
	struct val_job *job;
	struct run *r;
	char *language, *code, *profile;
	char *session; /* run_code's session, or NULL: a fresh sandbox */
	double timeout;
	struct buf warnings; /* a warn verdict's diagnostics, shown with the run */
	struct buf out[2];
	bool cut[2];
	struct buf shown;            /* the text/plain of a session's displays */
	json_object *images;         /* image content items */
	json_object *files;          /* the files written, as objects */
	json_object *progress_token; /* the call's _meta.progressToken, or NULL */
	uint64_t progress;           /* output bytes so far: increases with each */
	struct mcp_roots_wait wait;  /* while the client's roots are awaited */
};

static void mcp_call_free(struct mcp_call *mc)
{
	mcp_roots_unwait(mc->k->mcp, &mc->wait);
	free(mc->language);
	free(mc->code);
	free(mc->profile);
	free(mc->session);
	buf_release(&mc->warnings);
	buf_release(&mc->out[0]);
	buf_release(&mc->out[1]);
	buf_release(&mc->shown);
	json_object_put(mc->images);
	json_object_put(mc->files);
	json_object_put(mc->progress_token);
	free(mc);
}

/* notifications/progress for a call that asked (its _meta.progressToken):
 * progress counts the output bytes so far, message is the last line. Only
 * while the host reads its messages: progress is advice, never queued up. */
static void send_progress(struct mcp_call *mc, const char *text, size_t len)
{
	struct kiln *k = mc->k;
	mc->progress += len;
	if (!mc->progress_token || !k->rpc || (k->peer && rpc_peer_congested(k->peer)))
		return;
	size_t e = len;
	while (e > 0 && (text[e - 1] == '\n' || text[e - 1] == '\r'))
		e--;
	size_t b = e;
	while (b > 0 && text[b - 1] != '\n')
		b--;
	if (e - b > 200)
		e = b + 200;
	struct buf m;
	buf_init(&m, 2048);
	vis_append(&m, text + b, e - b, 0);
	json_object *p = json_object_new_object();
	json_object_object_add(p, "progressToken", json_object_get(mc->progress_token));
	json_object_object_add(p, "progress", json_object_new_int64((int64_t)mc->progress));
	json_object_object_add(p, "message", json_object_new_string(m.data ? m.data : ""));
	buf_release(&m);
	rpc_notify(k->rpc, "notifications/progress", p);
}

static void on_cancel(void *data)
{
	struct mcp_call *mc = data;
	if (mc->job)
		val_job_cancel(mc->job);
	if (mc->r)
		run_cancel(mc->r);
	mcp_call_free(mc);
}

static enum run_flow on_output(void *data, struct run *run, enum run_stream stream,
                               const char *text, size_t len)
{
	(void)run;
	struct mcp_call *mc = data;
	int i = stream == RUN_STDERR;
	if (!mc->cut[i] && buf_append(&mc->out[i], text, len) == -ENOBUFS)
		mc->cut[i] = true;
	send_progress(mc, text, len);
	return RUN_CONTINUE;
}

static bool is_image(const char *mime)
{
	return strcmp(mime, "image/png") == 0 || strcmp(mime, "image/jpeg") == 0 ||
	       strcmp(mime, "image/gif") == 0 || strcmp(mime, "image/webp") == 0;
}

static json_object *image_content(const char *base64, const char *mime)
{
	json_object *c = json_object_new_object();
	json_object_object_add(c, "type", json_object_new_string("image"));
	json_object_object_add(c, "data", json_object_new_string(base64));
	json_object_object_add(c, "mimeType", json_object_new_string(mime));
	return c;
}

static void on_artifact(void *data, struct run *run, const struct run_artifact *a)
{
	(void)run;
	struct mcp_call *mc = data;
	json_object *f = json_object_new_object();
	json_object_object_add(f, "name", json_object_new_string(a->name));
	json_object_object_add(f, "mimeType", json_object_new_string(a->mime_type));
	json_object_object_add(f, "size", json_object_new_int64((int64_t)a->size));
	if (a->path)
		json_object_object_add(f, "path", json_object_new_string(a->path));
	if (a->omitted)
		json_object_object_add(f, "omitted", json_object_new_string(a->omitted));
	json_object_array_add(mc->files, f);
	if (a->base64 && is_image(a->mime_type))
		json_object_array_add(mc->images, image_content(a->base64, a->mime_type));
}

/* A session's display (its last expression's value, a figure): an image
 * as image content, other values as their text/plain, as a notebook shows
 * them. */
static void on_display(void *data, struct run *run, const struct run_display *d)
{
	(void)run;
	struct mcp_call *mc = data;
	static const char *const images[] = {"image/png", "image/jpeg"};
	for (size_t i = 0; i < ARRAY_SIZE(images); i++) {
		const char *b64;
		if (json_get_string(d->data, images[i], &b64) == 0) {
			json_object_array_add(mc->images, image_content(b64, images[i]));
			return;
		}
	}
	const char *plain;
	if (json_get_string(d->data, "text/plain", &plain) < 0)
		return;
	buf_append(&mc->shown, plain, strlen(plain));
	buf_append(&mc->shown, "\n", 1);
}

static const struct run_sink mcp_sink = {.output = on_output,
                                         .artifact = on_artifact,
                                         .display = on_display,
                                         .measure = json_string_fit};

static void add_stream(struct buf *b, const char *name, const struct buf *s, bool cut)
{
	buf_printf(b, "--- %s%s ---\n", name, cut ? " (cut: kiln keeps the first 256 KiB)" : "");
	if (s->len) {
		buf_append(b, s->data, s->len);
		if (s->data[s->len - 1] != '\n')
			buf_append(b, "\n", 1);
	}
}

/* What the code changed in the project folder's private layer: a text
 * section and structuredContent's workspace and workspaceChanges. The
 * folder itself is never written: an agent that wants a change there
 * makes it with its own tools. */
static void add_workspace(struct buf *b, json_object *st, const struct run_outcome *o)
{
	json_object_object_add(st, "workspace",
	                       o->workspace ? json_object_new_string(o->workspace) : NULL);
	const struct sbx_ws_changes *c = o->ws_changes;
	if (!o->workspace || !c)
		return;
	json_object *a = json_object_new_array();
	if (c->n)
		buf_printf(b,
		           "--- changed in the project folder's private layer (not written to "
		           "%s) ---\n",
		           o->workspace);
	for (size_t i = 0; i < c->n; i++) {
		const struct sbx_ws_change *ch = &c->items[i];
		json_object *e = json_object_new_object();
		json_object_object_add(e, "path", json_object_new_string(ch->path));
		json_object_object_add(e, "kind",
		                       json_object_new_string(sbx_ws_kind_name(ch->kind)));
		json_object_object_add(e, "size", json_object_new_int64((int64_t)ch->size));
		json_object_array_add(a, e);
		buf_printf(b, "%s %s (%llu bytes)\n", sbx_ws_kind_name(ch->kind), ch->path,
		           (unsigned long long)ch->size);
	}
	if (c->omitted)
		buf_printf(b, "... and %zu more\n", c->omitted);
	json_object_object_add(st, "workspaceChanges", a);
}

static void on_run_done(void *data, const struct run_outcome *o, int err, const char *errmsg)
{
	struct mcp_call *mc = data;
	mc->r = NULL;
	if (err < 0) {
		tool_error(mc->call, mc->modern, NULL, "kiln could not run the code: %s", errmsg);
		mcp_call_free(mc);
		return;
	}
	char how[400], sig[24];
	if (o->session_ended)
		snprintf(how, sizeof(how), "session %s ended: %s", o->session_id,
		         o->session_why ? o->session_why : "its program stopped");
	else if (o->timed_out)
		snprintf(how, sizeof(how), "timed out after %llu ms (%s)",
		         (unsigned long long)o->limits.wall_ms,
		         o->session_id ? "interrupted" : "killed");
	else if (o->exited && o->error_name)
		snprintf(how, sizeof(how), "exit code %d (%s: %.200s)", o->exit_code, o->error_name,
		         o->error_value ? o->error_value : "");
	else if (o->exited)
		snprintf(how, sizeof(how), "exit code %d", o->exit_code);
	else
		snprintf(how, sizeof(how), "killed by %s",
		         run_signal_name(o->signal, sig, sizeof(sig)));
	struct buf b;
	buf_init(&b, 4 * MCP_OUTPUT_MAX);
	buf_printf(&b, "%s; time %llu ms%s\n", how, (unsigned long long)o->duration_ms,
	           o->truncated ? "; output reached its limit and the run was ended" : "");
	const char *note = mcp_roots_note(mc->k->mcp);
	if (note)
		buf_printf(&b, "workspace: none: %s\n", note);
	if (mc->warnings.len)
		buf_printf(&b, "validator warnings:\n%s", mc->warnings.data);
	add_stream(&b, "stdout", &mc->out[0], mc->cut[0]);
	add_stream(&b, "stderr", &mc->out[1], mc->cut[1]);
	if (mc->shown.len)
		add_stream(&b, "value", &mc->shown, false);
	size_t nfiles = json_object_array_length(mc->files);
	if (nfiles) {
		buf_printf(&b, "--- files written under /work/out ---\n");
		for (size_t i = 0; i < nfiles; i++) {
			json_object *f = json_object_array_get_idx(mc->files, i);
			const char *name = "", *mime = "", *path = NULL;
			int64_t size = 0;
			json_get_string(f, "name", &name);
			json_get_string(f, "mimeType", &mime);
			json_get_int64(f, "size", &size);
			json_get_string(f, "path", &path);
			buf_printf(&b, "%s (%s, %lld bytes)%s%s\n", name, mime, (long long)size,
			           path ? " copied to " : "", path ? path : "");
		}
	}
	json_object *st = json_object_new_object();
	add_workspace(&b, st, o);
	json_object *content = json_object_new_array();
	json_object_array_add(content, text_content(b.data ? b.data : "", b.len));
	buf_release(&b);
	for (size_t i = 0; i < json_object_array_length(mc->images); i++)
		json_object_array_add(content,
		                      json_object_get(json_object_array_get_idx(mc->images, i)));
	json_object_object_add(st, "exitCode",
	                       o->exited ? json_object_new_int(o->exit_code) : NULL);
	json_object_object_add(
	    st, "signal",
	    o->exited ? NULL
	              : json_object_new_string(run_signal_name(o->signal, sig, sizeof(sig))));
	json_object_object_add(st, "timedOut", json_object_new_boolean(o->timed_out));
	json_object_object_add(st, "durationMs", json_object_new_int64((int64_t)o->duration_ms));
	json_object_object_add(st, "stdout",
	                       json_object_new_string_len(mc->out[0].data ? mc->out[0].data : "",
	                                                  (int)mc->out[0].len));
	json_object_object_add(st, "stderr",
	                       json_object_new_string_len(mc->out[1].data ? mc->out[1].data : "",
	                                                  (int)mc->out[1].len));
	json_object_object_add(st, "files", json_object_get(mc->files));
	if (o->session_id) {
		json_object_object_add(st, "session", json_object_new_string(o->session_id));
		json_object_object_add(st, "sessionEnded",
		                       json_object_new_boolean(o->session_ended));
	}
	json_object *r = json_object_new_object();
	json_object_object_add(r, "content", content);
	json_object_object_add(r, "structuredContent", st);
	json_object_object_add(r, "isError",
	                       json_object_new_boolean(!o->exited || o->exit_code != 0));
	reply_modern(mc->call, r, mc->modern);
	mcp_call_free(mc);
}

/* The run in the session named (looked up now: it may have been closed
 * while the code was checked). */
static int start_session_run(struct mcp_call *mc, json_object *limits)
{
	struct kiln *k = mc->k;
	struct sbx_session *ss = sbx_session_find(k->sandbox, mc->session);
	if (!ss) {
		tool_error(mc->call, mc->modern, NULL,
		           "there is no session %s: open one with open_session", mc->session);
		return -ENOENT;
	}
	char err[768];
	int r = sbx_session_run(ss, &mcp_sink, mc, mc->code, limits, on_run_done, mc, &mc->r, err,
	                        sizeof(err));
	if (r < 0 && r != -ENOMEM)
		tool_error(mc->call, mc->modern, NULL, "%s%s", err,
		           r == -EPIPE ? " (close it and open a new session)" : "");
	else if (r < 0)
		tool_error(mc->call, mc->modern, NULL, "kiln could not start the run: %s",
		           strerror(-r));
	return r;
}

static void start_run(struct mcp_call *mc);

static void run_when_ready(void *data)
{
	start_run(data);
}

static void start_run(struct mcp_call *mc)
{
	/* Not in the folder a roots/list is about to replace. */
	if (mcp_roots_wait(mc->k->mcp, &mc->wait, run_when_ready, mc))
		return;
	json_object *limits = NULL;
	if (mc->timeout > 0) {
		limits = json_object_new_object();
		json_object_object_add(limits, "wallMs",
		                       json_object_new_int64((int64_t)(mc->timeout * 1000)));
	}
	int r;
	if (mc->session) {
		r = start_session_run(mc, limits);
		json_object_put(limits);
		if (r < 0)
			mcp_call_free(mc);
		return;
	}
	r = run_start(mc->k->sandbox, &mcp_sink, mc, mc->language, mc->code, limits, on_run_done,
	              mc, &mc->r);
	json_object_put(limits);
	if (r < 0) {
		tool_error(mc->call, mc->modern, NULL, "kiln could not start the run: %s",
		           strerror(-r));
		mcp_call_free(mc);
	}
}

static void on_validated(void *data, int r, struct val_report *rep, const char *code, size_t len,
                         const char *detail)
{
	struct mcp_call *mc = data;
	bool run = mc->tool == TOOL_RUN;
	mc->job = NULL;
	if (r < 0 && !(r == -EINVAL && run && lang_find(mc->language))) {
		tool_error(mc->call, mc->modern, NULL, "%s",
		           detail && detail[0] ? detail : strerror(-r));
		mcp_call_free(mc);
		return;
	}
	if (r < 0) {
		/* The sandbox runs it, the validator has no grammar for it. */
		log_info("run_code: %s is not validated: %s", mc->language, detail);
		start_run(mc);
		return;
	}
	struct buf text;
	buf_init(&text, 1u << 20);
	diags_text(&text, rep, code, len);
	const char *verdict = val_verdict_name(rep->verdict);
	if (!run || rep->verdict == VAL_DENY) {
		json_object *st = json_object_new_object();
		json_object_object_add(st, "verdict", json_object_new_string(verdict));
		json_object_object_add(st, "diagnostics",
		                       val_report_json(rep, code, len, POS_UTF32));
		json_object *res = json_object_new_object();
		struct buf msg;
		buf_init(&msg, 2u << 20);
		if (run)
			buf_printf(&msg,
			           "Not run: the validator denied this code. Fix these and call "
			           "run_code again:\n%s",
			           text.data ? text.data : "");
		else
			buf_printf(&msg, "verdict: %s (%s)\n%s", verdict,
			           rep->verdict == VAL_DENY ? "run_code would refuse it"
			           : rep->verdict == VAL_WARN
			               ? "run_code would run it, with warnings"
			               : "run_code would run it",
			           rep->ndiags ? (text.data ? text.data : "") : "no diagnostics\n");
		json_object *content = json_object_new_array();
		json_object_array_add(content, text_content(msg.data ? msg.data : "", msg.len));
		buf_release(&msg);
		json_object_object_add(res, "content", content);
		json_object_object_add(res, "structuredContent", st);
		json_object_object_add(res, "isError", json_object_new_boolean(run));
		reply_modern(mc->call, res, mc->modern);
		buf_release(&text);
		val_report_release(rep);
		mcp_call_free(mc);
		return;
	}
	if (text.len)
		buf_append(&mc->warnings, text.data, text.len);
	buf_release(&text);
	val_report_release(rep);
	start_run(mc);
}

/* --- sessions --- */

static void open_session(struct mcp_call *mc)
{
	struct kiln *k = mc->k;
	char err[768];
	struct sbx_session *ss = NULL;
	int r = sbx_session_open(k->sandbox, "python", NULL, &ss, err, sizeof(err));
	if (r < 0) {
		tool_error(mc->call, mc->modern, NULL, "kiln could not open a session: %s",
		           r == -ENOMEM ? strerror(-r) : err);
		mcp_call_free(mc);
		return;
	}
	const char *id = sbx_session_id(ss);
	const char *ws = sandbox_workspace_on(k->sandbox) ? sandbox_workspace(k->sandbox) : NULL;
	const char *note = mcp_roots_note(k->mcp);
	char text[1400];
	snprintf(text, sizeof(text),
	         "session %s is open (python). Pass session \"%s\" to run_code: names, imports "
	         "and data stay between its calls until close_session. Project folder: %s%s%s",
	         id, id, ws ? ws : "none", note ? ": " : "", note ? note : "");
	json_object *st = json_object_new_object();
	json_object_object_add(st, "session", json_object_new_string(id));
	json_object_object_add(st, "workspace", ws ? json_object_new_string(ws) : NULL);
	json_object *res = json_object_new_object();
	json_object *content = json_object_new_array();
	json_object_array_add(content, text_content(text, strlen(text)));
	json_object_object_add(res, "content", content);
	json_object_object_add(res, "structuredContent", st);
	json_object_object_add(res, "isError", json_object_new_boolean(false));
	reply_modern(mc->call, res, mc->modern);
	mcp_call_free(mc);
}

static void open_when_ready(void *data)
{
	open_session(data);
}

static void close_session(struct rpc_call *call, struct kiln *k, bool modern, const char *id)
{
	struct sbx_session *ss = sbx_session_find(k->sandbox, id);
	if (!ss) {
		tool_error(call, modern, NULL,
		           "there is no session %s (it was closed, or never "
		           "opened: open_session gives one)",
		           id);
		return;
	}
	sbx_session_close(ss);
	char text[200];
	snprintf(text, sizeof(text), "session %s is closed", id);
	json_object *res = json_object_new_object();
	json_object *content = json_object_new_array();
	json_object_array_add(content, text_content(text, strlen(text)));
	json_object_object_add(res, "content", content);
	json_object_object_add(res, "isError", json_object_new_boolean(false));
	reply_modern(call, res, modern);
}

/* --- tools/call --- */

/* Which tool takes which argument, and which it must have. */
static bool takes(enum mcp_tool t, const char *key)
{
	if (strcmp(key, "language") == 0)
		return t != TOOL_CLOSE;
	if (strcmp(key, "code") == 0)
		return t == TOOL_RUN || t == TOOL_VALIDATE;
	if (strcmp(key, "timeoutSeconds") == 0)
		return t == TOOL_RUN;
	if (strcmp(key, "profile") == 0)
		return t == TOOL_VALIDATE;
	if (strcmp(key, "session") == 0)
		return t == TOOL_RUN || t == TOOL_CLOSE;
	return false;
}

int method_mcp_tools_call(struct rpc_call *call, json_object *params)
{
	struct kiln *k = rpc_call_ctx(call);
	bool modern;
	if (!check_era(call, params, &modern))
		return 0;
	const char *name;
	if (json_get_string(params, "name", &name) < 0) {
		rpc_call_error(call, RPC_INVALID_PARAMS,
		               "Invalid params: tools/call wants a tool name", NULL);
		return 0;
	}
	size_t t = 0;
	while (t < ARRAY_SIZE(tool_names) && strcmp(name, tool_names[t]) != 0)
		t++;
	if (t == ARRAY_SIZE(tool_names)) {
		rpc_call_errorf(
		    call, RPC_INVALID_PARAMS, NULL,
		    "Invalid params: unknown tool %s (kiln has run_code, validate_code, "
		    "open_session and close_session)",
		    name);
		return 0;
	}
	enum mcp_tool tool = (enum mcp_tool)t;
	/* A client that offers roots and skipped notifications/initialized
	 * is asked now: the run waits for the answer. Never in the stateless
	 * era, which has no requests from server to client. */
	if (!modern)
		mcp_roots_ask_once(k->mcp);
	json_object *args = json_get(params, "arguments");
	if (args && !json_object_is_type(args, json_type_object)) {
		tool_error(call, modern, NULL, "%s wants its arguments as an object", name);
		return 0;
	}
	const char *language = NULL, *code = NULL, *profile = NULL, *session = NULL;
	double timeout = 0;
	if (args) {
		json_object_object_foreach(args, key, val)
		{
			if (!takes(tool, key)) {
				tool_error(call, modern, NULL, "%s takes no argument %s", name,
				           key);
				return 0;
			}
			if (strcmp(key, "timeoutSeconds") == 0) {
				if ((!json_object_is_type(val, json_type_int) &&
				     !json_object_is_type(val, json_type_double)) ||
				    json_object_get_double(val) < 0.1 ||
				    json_object_get_double(val) > 3600) {
					tool_error(
					    call, modern, NULL,
					    "timeoutSeconds must be a number from 0.1 to 3600");
					return 0;
				}
				timeout = json_object_get_double(val);
			} else if (!json_object_is_type(val, json_type_string)) {
				tool_error(call, modern, NULL, "%s must be a string", key);
				return 0;
			}
		}
		json_get_string(args, "language", &language);
		json_get_string(args, "code", &code);
		json_get_string(args, "profile", &profile);
		json_get_string(args, "session", &session);
	}
	if ((tool == TOOL_RUN || tool == TOOL_VALIDATE) && (!language || !code)) {
		tool_error(call, modern, NULL, "%s wants the string arguments language and code",
		           name);
		return 0;
	}
	if (tool == TOOL_CLOSE && !session) {
		tool_error(call, modern, NULL, "close_session wants the string argument session");
		return 0;
	}
	const struct lang *l = NULL;
	if (language && !(l = lang_find(language))) {
		char buf[300];
		tool_error(call, modern, NULL, "%s", lang_unknown(language, buf, sizeof(buf)));
		return 0;
	}
	/* A session keeps one Python namespace (sandbox/session/session.h). */
	if ((tool == TOOL_OPEN || session) && l && strcmp(l->name, "python") != 0) {
		if (session)
			tool_error(call, modern, NULL,
			           "session %s runs python, not %s: call run_code without session "
			           "for %s",
			           session, l->name, l->name);
		else
			tool_error(
			    call, modern, NULL,
			    "sessions are Python only: run %s with run_code, without a session",
			    l->name);
		return 0;
	}
	if (tool != TOOL_VALIDATE && !k->sandbox) {
		tool_error(
		    call, modern, NULL,
		    "kiln will not run code: its sandbox did not start (see the server's log)");
		return 0;
	}
	if (tool == TOOL_CLOSE) {
		close_session(call, k, modern, session);
		return 0;
	}
	if (session && !sbx_session_find(k->sandbox, session)) {
		tool_error(call, modern, NULL, "there is no session %s: open one with open_session",
		           session);
		return 0;
	}
	if (tool != TOOL_OPEN && !k->validator) {
		tool_error(call, modern, NULL, "the validator is not available");
		return 0;
	}
	struct mcp_call *mc = calloc(1, sizeof(*mc));
	if (!mc)
		return -ENOMEM;
	*mc = (struct mcp_call){
	    .call = call, .k = k, .modern = modern, .tool = tool, .timeout = timeout};
	buf_init(&mc->warnings, 1u << 20);
	buf_init(&mc->out[0], MCP_OUTPUT_MAX);
	buf_init(&mc->out[1], MCP_OUTPUT_MAX);
	buf_init(&mc->shown, MCP_OUTPUT_MAX);
	mc->images = json_object_new_array();
	mc->files = json_object_new_array();
	if (tool == TOOL_OPEN) {
		/* In the folder the client's roots name, once they are in. */
		if (mcp_roots_wait(k->mcp, &mc->wait, open_when_ready, mc))
			rpc_call_on_cancel(call, on_cancel, mc);
		else
			open_session(mc);
		return 0;
	}
	size_t len = (size_t)json_object_get_string_len(json_get(args, "code"));
	json_object *token = json_get(json_get(params, "_meta"), "progressToken");
	if (token && (json_object_is_type(token, json_type_string) ||
	              json_object_is_type(token, json_type_int)))
		mc->progress_token = json_copy(token);
	mc->language = strdup(l->name);
	/* All len bytes, a NUL included: the validator reads len of them
	 * (strndup would stop at a NUL and leave it reading past the copy). */
	mc->code = malloc(len + 1);
	if (mc->code) {
		memcpy(mc->code, code, len);
		mc->code[len] = '\0';
	}
	mc->profile = profile ? strdup(profile) : NULL;
	mc->session = session ? strdup(session) : NULL;
	if (!mc->language || !mc->code || (profile && !mc->profile) || (session && !mc->session)) {
		mcp_call_free(mc);
		return -ENOMEM;
	}
	/* run_code is judged by the configured profile, as snippet/run is: a
	 * looser one per call would be an override by another name. */
	int r = val_check_async(k->validator, k->loop, mc->language, mc->code, len,
	                        tool == TOOL_RUN ? NULL : mc->profile, on_validated, mc, &mc->job);
	if (r < 0) {
		mcp_call_free(mc);
		tool_error(call, modern, NULL,
		           r == -EBUSY
		               ? "the validator is busy: too many checks are waiting; try again"
		               : "the validator's thread cannot start");
		return 0;
	}
	rpc_call_on_cancel(call, on_cancel, mc);
	return 0;
}

const struct rpc_method mcp_methods[] = {
    {"initialize", method_mcp_initialize, RPC_BEFORE_INIT},
    {"notifications/initialized", method_mcp_initialized, RPC_NOTIFICATION},
    {"notifications/roots/list_changed", method_mcp_roots_changed, RPC_NOTIFICATION},
    {"notifications/cancelled", method_mcp_cancelled, RPC_NOTIFICATION | RPC_BEFORE_INIT},
    {"ping", method_mcp_ping, RPC_BEFORE_INIT},
    {"server/discover", method_mcp_discover, RPC_BEFORE_INIT},
    {"tools/list", method_mcp_tools_list, RPC_BEFORE_INIT},
    {"tools/call", method_mcp_tools_call, RPC_BEFORE_INIT},
};

const size_t mcp_methods_count = ARRAY_SIZE(mcp_methods);
