/* run.h: one run of code in a fresh sandbox, driven by the event loop:
 * start it, stream its output as it comes, collect the files it wrote
 * under /work/out, and report how it ended. snippet/run and intent/approve
 * are thin handlers over run_start(); `kiln run` uses run_start_sink(). */
#pragma once

#include <json-c/json.h>
#include <stddef.h>

struct kiln;
struct run; /* one run in progress */

struct run_outcome {
	json_object *result;     /* the snippet/run result object (borrowed; copy it to keep) */
	const char *stdout_tail; /* last <=16 KiB of stdout, valid UTF-8, NUL-terminated */
	const char *stderr_tail; /* same for stderr */
};

/* err < 0 when the run could not start (errmsg says why and what to do;
 * e.g. user namespaces unavailable); outcome is NULL then. -EINVAL means
 * the request itself was wrong (unknown language, bad limits). The run
 * handle is gone once done is called. */
typedef void (*run_done_fn)(void *data, const struct run_outcome *outcome, int err,
                            const char *errmsg);

/* Starts a run: sends run/output and run/artifact notifications through
 * k->rpc while it runs, calls done once at the end (never synchronously
 * from run_start). limits: the request's limits object or NULL (borrowed).
 * Returns -ENOMEM only; every other failure goes through done. */
int run_start(struct kiln *k, const char *language, const char *code, json_object *limits,
              run_done_fn done, void *data, struct run **ret_run);

/* Build a box for language ahead of its run (a warm box), from the loop,
 * if warm boxes are on (sandbox.warmBoxes) and none is waiting. The next
 * run of that language with the same tmpfs size and config takes it, and
 * run_start builds the next one. */
void run_warm(struct kiln *k, const char *language);

/* Kill the run now; done is NOT called afterwards. Every process of the
 * box is dead when this returns. */
void run_cancel(struct run *run);

/* The run's id ("r1", "r2", ...), as in its notifications and result. */
const char *run_id(const struct run *run);

/* Where output and artifacts go instead of k->rpc (the terminal's `kiln
 * run`). text is valid UTF-8, len bytes; artifact is borrowed. */
struct run_sink {
	void (*output)(void *data, struct run *run, const char *stream, const char *text,
	               size_t len);
	void (*artifact)(void *data, struct run *run, json_object *artifact);
};

/* run_start with output sent to sink instead of notifications; k->rpc and
 * k->peer may be NULL (no backpressure then). */
int run_start_sink(struct kiln *k, const struct run_sink *sink, void *sink_data,
                   const char *language, const char *code, json_object *limits, run_done_fn done,
                   void *data, struct run **ret_run);
