/* run.h: one run of code in a fresh sandbox, driven by the event loop:
 * start it, hand its output to a sink as it comes, collect the files it
 * wrote under /work/out, and report how it ended as a struct. The sandbox
 * knows nothing of the protocol: snippet/run and intent/approve give it
 * the notification sink (methods/run_sink.c), `kiln run` a terminal one. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sandbox/host/cgroup.h"
#include "sandbox/host/limits.h"
#include "sandbox/box/pyenv.h"
#include "sandbox/output/artifact.h"
#include "sandbox/workspace/wsdiff.h"

struct sandbox;
struct run; /* one run in progress */

enum run_stream { RUN_STDOUT, RUN_STDERR };

/* "stdout" or "stderr". */
const char *run_stream_name(enum run_stream s);

/* What an output callback answers, in the manner of curl's write
 * callback: go on, or pause until the owner calls run_resume_output(). */
enum run_flow { RUN_CONTINUE, RUN_PAUSE };

/* Rich output of a session's run (session.h): a MIME bundle as Jupyter's
 * display_data has it. data is an object of MIME type -> string (base64
 * for images), "application/json" and "+json" types -> any JSON value,
 * and always has "text/plain"; metadata an object. Both borrowed for the
 * call and checked by the session (the strings are valid UTF-8). */
struct run_display {
	const char *run_id;
	json_object *data;
	json_object *metadata;
};

/* Where a run stands, when it had to wait for a slot
 * (sandbox.maxConcurrentRuns): queued behind position - 1 others while
 * running runs hold every slot of max_running; then started. A run that
 * found a slot at once reports nothing. */
enum run_state { RUN_QUEUED, RUN_STARTED };
struct run_status {
	const char *run_id;
	enum run_state state;
	size_t position; /* RUN_QUEUED: 1 for the next to start */
	size_t running, max_running;
};

/* Where a run's output and artifacts go. Output text is valid UTF-8, len
 * bytes, and comes in the order kiln read it: a chunk of one stream is
 * never held back behind a later chunk of the other. A callback must not
 * cancel or free the run (it may ask for a pause). */
struct run_sink {
	enum run_flow (*output)(void *data, struct run *run, enum run_stream stream,
	                        const char *text, size_t len);
	void (*artifact)(void *data, struct run *run, const struct run_artifact *artifact);
	/* May be NULL: displays are dropped. */
	void (*display)(void *data, struct run *run, const struct run_display *display);
	/* What output text costs where the sink sends it, counted against
	 * outputBytes: the longest prefix of text[0..len) (valid UTF-8), cut
	 * on a character boundary, that costs at most budget; its cost in
	 * *ret_cost. The notification sinks give json_string_fit (the text
	 * as the client receives it, escapes included). May be NULL: a byte
	 * of text costs one. */
	size_t (*measure)(const char *text, size_t len, uint64_t budget, uint64_t *ret_cost);
	/* May be NULL. RUN_QUEUED may come from within run_start. */
	void (*status)(void *data, struct run *run, const struct run_status *status);
	/* All NULL, or all set: output that can go on as it is, without
	 * the server copying it. plain: the longest prefix of raw output
	 * bytes[0..len) that are whole, valid UTF-8 characters the sink
	 * sends byte for byte, costing one each under measure (for JSON: no
	 * byte needing an escape). relay: text[0..len) is such text, within
	 * outputBytes, and the same
	 * bytes are the next len in the pipe fd, not yet taken; the sink may
	 * take a prefix of them from fd (splice: they never enter the
	 * server's memory) as one output chunk, in order with everything it
	 * was handed before, cut on a character boundary. It returns how
	 * many it took (0: none, and they come through output as usual) and
	 * sets *ret_flow as output answers. */
	size_t (*plain)(const char *bytes, size_t len);
	size_t (*relay)(void *data, struct run *run, enum run_stream stream, const char *text,
	                size_t len, int fd, enum run_flow *ret_flow);
	/* With relay: how many bytes relay could take now (0: none, and the
	 * output is read as usual). Or *ret_flow = RUN_PAUSE: where the
	 * sink sends, nothing more fits yet; the run pauses (its output
	 * waits in its pipe) until the sink calls run_resume_output(). */
	size_t (*relay_room)(void *data, struct run *run, enum run_flow *ret_flow);
};

/* Read the run's output again after its sink answered RUN_PAUSE. Not from
 * inside an output callback. */
void run_resume_output(struct run *run);

/* How a run ended. */
struct run_outcome {
	const char *run_id;
	bool exited;          /* the program exited: exit_code is its status */
	int exit_code;        /* when exited */
	int signal;           /* the signal that ended it, when !exited */
	bool timed_out;       /* the wall clock ended it */
	bool truncated;       /* its output (as the sink measures it) reached outputBytes, and
	                       * the box was ended */
	bool warm;            /* it ran in a box built ahead of it */
	bool zygote;          /* its box was forked from the Python zygote (not a session's run) */
	uint64_t duration_ms; /* from the request to the program's end */
	uint64_t cpu_ms;      /* user + system of the program and its children */
	int64_t max_rss_kb;
	struct sbx_limits limits; /* as applied */
	unsigned enforced;        /* SBX_CG_* whose limit the run's cgroup took */
	bool have_cgroup;         /* the run had a cgroup, and cgroup is what it saw */
	struct sbx_cgroup_stats cgroup;
	const char *stdout_tail; /* last <= 16 KiB of stdout, valid UTF-8, NUL-terminated */
	const char *stderr_tail; /* same for stderr */
	/* The workspace, when the run had one (the host folder, borrowed),
	 * and what the code changed there (wsdiff.h; NULL when it could not
	 * be read back). */
	const char *workspace;
	const struct sbx_ws_changes *ws_changes;
	/* A python run's interpreter: the project's own environment or
	 * Debian's python3 (pyenv.h; borrowed), else NULL. */
	const struct sbx_pyenv *python;
	/* A session's run (session.h): its session's id, else NULL. Its
	 * exit code is 0 (or 1 when the code raised: error_name and
	 * error_value say what), its signal SIGINT when it was interrupted,
	 * SIGXCPU when its CPU time ran out; when the session's program
	 * itself ended, session_ended is true, session_why says why, and
	 * exit_code or signal are that program's. */
	const char *session_id;
	bool session_ended;
	const char *session_why;
	const char *error_name, *error_value;
};

/* err < 0 when the run could not start (errmsg says why and what to do;
 * e.g. user namespaces unavailable); outcome is NULL then. -EINVAL means
 * the request itself was wrong (unknown language, bad limits). The run
 * handle is gone once done is called; outcome is borrowed for the call. */
typedef void (*run_done_fn)(void *data, const struct run_outcome *outcome, int err,
                            const char *errmsg);

/* Start a run: output and artifacts go to sink (sink_data is its data)
 * while it runs; done is called once at the end (never synchronously from
 * run_start). When sandbox.maxConcurrentRuns runs already hold a box (from
 * their start until their artifacts are handed over; a session's runs
 * hold none), the run waits in a queue, first come first served, and
 * its sink hears RUN_QUEUED, then RUN_STARTED when it gets its slot; its
 * wall clock and durationMs start then. run_cancel of a waiting run takes
 * it out of the queue. limits: the request's limits object or NULL (borrowed),
 * laid over the config's. Returns -ENOMEM only; every other failure goes
 * through done. */
int run_start(struct sandbox *s, const struct run_sink *sink, void *sink_data, const char *language,
              const char *code, json_object *limits, run_done_fn done, void *data,
              struct run **ret_run);

/* As run_start, but pid 1 gets no GO until run_release: the box is
 * built (with the workspace, the list of what to hide made too) while
 * the caller still judges the code (kiln run checks it meanwhile), and
 * the code reaches the box only with GO. Never from the zygote, whose
 * spare takes the code at once: a held run takes the normal path. Its
 * wall clock and durationMs start at run_release. A held run the caller
 * will not run is ended with run_cancel. */
int run_start_held(struct sandbox *s, const struct run_sink *sink, void *sink_data,
                   const char *language, const char *code, json_object *limits, run_done_fn done,
                   void *data, struct run **ret_run);

/* The code of a held run may run: GO now, or as soon as the box's list
 * of what to hide is made. Nothing for a run that is not held. */
void run_release(struct run *run);

/* Kill the run now; done is NOT called afterwards. Every process of the
 * box is dead when this returns. */
void run_cancel(struct run *run);

/* The run's id ("r1", "r2", ...), as in its notifications and result. */
const char *run_id(const struct run *run);
