/* run_sink.h: a sandboxed run as the protocol sees it. The notification
 * sink turns a run's output and artifacts into run/output and run/artifact
 * notifications, its wait for a slot into run/status, and the client's backpressure into the sink's
 * pause; the run's outcome becomes the snippet/run result object here, once. Serves snippet/run and
 * intent/approve; the sandbox itself knows no JSON-RPC. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

#include "sandbox/run/run.h"

struct kiln;

/* One run's notification sink; lives as long as its run (in the owner's
 * state). */
struct run_notify {
	struct kiln *k;
	struct run *run; /* paused until the client drains, or NULL */
	bool room;       /* run waits for room in the client's pipe, not for a drain */
};

/* Start a run of the server's sandbox whose output goes out as
 * notifications through n (initialized here). run_start's contract;
 * -ENODEV when the sandbox did not start. The owner calls
 * run_notify_release(n) once the run is done or cancelled. */
int run_notify_start(struct run_notify *n, struct kiln *k, const char *language, const char *code,
                     json_object *limits, run_done_fn done, void *data, struct run **ret_run);

/* The same for a run in session ss (session.h): sbx_session_run's
 * contract (-EBUSY, -EPIPE, -EINVAL with a sentence in err). */
struct sbx_session;
int run_notify_start_session(struct run_notify *n, struct kiln *k, struct sbx_session *ss,
                             const char *code, json_object *limits, run_done_fn done, void *data,
                             struct run **ret_run, char *err, size_t errsz);

/* Forget a pause waiting for the client's drain. */
void run_notify_release(struct run_notify *n);

/* The snippet/run result object of an outcome (a new object); NULL on
 * OOM. */
json_object *run_outcome_json(const struct run_outcome *o);
/* A python run's interpreter as the protocol shows it: {path, prefix,
 * version, source, systemSitePackages} (protocol/methods.md). */
json_object *run_python_json(const struct sbx_pyenv *py);

/* The run/artifact params of an artifact (a new object). */
json_object *run_artifact_json(const struct run_artifact *a);

/* The run/display params of a display (a new object). */
json_object *run_display_json(const struct run_display *d);

/* "SIGKILL" and the like. */
const char *run_signal_name(int sig, char *buf, size_t size);
