/* run_private.h: what run.c (the run itself, the queue, freeing it),
 * run_start.c (its start), run_text.c and run_output.c (its output),
 * run_exit.c (its status, exit and outcome) and run_session.c (a
 * session's run) share: the run itself, the steps
 * of giving it a box, and the calls between the run's files; and what a
 * session (session/, the one owner above a run) gives its runs (struct
 * run_owner_ops). Not for the rest of the server: run.h is the
 * sandbox's API. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/buf.h"
#include "sandbox/box/box.h"
#include "sandbox/box/child.h"
#include "sandbox/host/limits.h"
#include "sandbox/box/plan.h"
#include "sandbox/run/run.h"
#include "sandbox/output/text.h"

struct loop_timer;
struct sandbox;
struct sbx_cgroup;
struct sbx_hide_req;
struct sbx_job;
struct sbx_zygote_wait;
struct sbx_artifacts;
struct sbx_ws_changes;
struct sbx_displays;
struct sbx_ws_snap;
struct loop;

/* Output is sent when this much is held (run_text.c), and one read of
 * a pipe takes up to this much. */
#define RUN_COALESCE_BYTES (256u * 1024)

/* What a run's owner (a session, session/) gives it: the run reaches its
 * owner through these, never by name. */
struct run_owner_ops {
	/* The run is being freed: forget it. */
	void (*forget)(void *owner, struct run *run);
	/* The run's wall clock ran out: interrupt its code (SIGINT; the
	 * owner ends itself if the code does not stop in time). */
	void (*interrupt)(void *owner);
	/* The run's sink is paused (true) or ready again: stop or go on
	 * reading the owner's box. */
	void (*pause_io)(void *owner, bool pause);
	/* Hand the workspace picture back (see struct run_session_end) to
	 * the owner named id, if it is still there: the run may outlive it,
	 * so this takes the sandbox and the name, not the owner. */
	void (*take_snap)(struct sandbox *s, const char *id, unsigned gen,
	                  struct sbx_ws_snap *snap);
};

enum { OUT, ERR };
struct run {
	struct sandbox *sbx;
	struct loop *loop;
	struct run *next;
	char id[24];
	const struct run_sink *sink;
	void *sink_data;
	run_done_fn done;
	void *done_data;
	struct sbx_limits limits;

	/* The run's one box: built for it, or taken from the warm-box
	 * cache (from_warm). Its pipes are fds[OUT] and fds[ERR]. */
	struct sbx_box box;
	bool from_warm;
	bool from_zygote; /* forked from the Python zygote (zygote.h): no GO */
	/* Taken on while the zygote's spare is on its way (zygote.h): it
	 * holds a slot, and qplan, qlayout and qcode for the normal path
	 * should the spare not come (on_spare). */
	struct sbx_zygote_wait *zwait;
	/* A session's run (session.c): the session's box runs it, and this
	 * run's box stays empty. owner is the session, reached through
	 * owner_ops; NULL once the session has let go. */
	const struct run_owner_ops *owner_ops;
	void *owner;
	/* It was a session's run (owner is NULL once the session has let
	 * go): its artifacts are the files its driver saw change (only, a
	 * NULL-terminated list, owned), and its outcome's session strings
	 * are copies held here. */
	bool in_session;
	char **only;
	/* The session's workspace picture this run holds (see struct
	 * run_session_end), to hand back when it has compared the layer. */
	struct sbx_ws_snap *snap;
	unsigned snap_gen;
	bool snap_lent;
	char sess_id[24], sess_why[320], err_name[128], err_value[1024];
	char language[64]; /* the box's language */
	/* Waiting for a slot (sandbox.maxConcurrentRuns): the plan, layout
	 * and code it will start with, all owned, and the next in the
	 * queue. holds_slot: it counts in the sandbox's active runs. */
	bool queued, holds_slot;
	/* Queued: what starts it when its turn comes (run_start.c). */
	void (*on_turn)(struct run *run);
	struct run *qnext;
	struct sbx_plan_owned *qplan;
	char *qlayout, *qcode;
	/* Launched with the workspace: GO waits for the list of what to
	 * hide (hide.h), holding qplan and qcode; why that failed. */
	struct sbx_hide_req *hide_req;
	char hide_why[512];
	/* Started held (run_start_held): no GO until run_release, qplan
	 * and qcode kept until then; a list of what to hide that came
	 * first is kept too (list_ready: held_list, or -1 with hide_why). */
	bool held, list_ready;
	int held_list;
	char *workspace;          /* the host folder its box shows, or NULL */
	struct sbx_pyenv *python; /* a python run's interpreter (pyenv.h), or NULL */
	bool timed_out, truncated, killing;
	bool paused; /* the sink answered RUN_PAUSE: the pipes are not read */
	/* The box's pipes' sizes (F_GETPIPE_SZ), 0 until first asked. */
	size_t pipe_bytes[2];
	/* At the end: how it ended, and the job copying its artifacts back
	 * (job.h) while the loop goes on. */
	bool collecting;
	struct run_outcome outcome;
	struct sbx_job *job;

	uint64_t start_ms, end_ms, out_bytes;
	/* When the run was asked for (CLOCK_REALTIME): a host file whose
	 * ctime is later changed while it ran (workspace/apply.h). */
	struct timespec start_real;
	struct loop_timer *wall_timer, *grace_timer, *flush_timer, *start_timer;

	struct sbx_utf8 dec[2];
	struct buf pending;
	int pending_stream;
	struct sbx_tail tail[2];
	char errmsg[768];
	int err;
};

/* A run with no box yet, listed in the sandbox's runs; NULL on OOM. */
struct run *run_new(struct sandbox *s);
/* Kill what is left of the box (and wait for it), free everything. */
void run_free(struct run *run);

/* run.c's queue: put run (its plan, layout and code taken) at the end;
 * on its turn, on a turn of the loop of its own, on_turn(run) starts it.
 * -EAGAIN with errmsg set when sandbox.maxQueuedRuns wait already;
 * -ENOMEM. */
int run_enqueue(struct run *run, struct sbx_plan_owned **po, char **layout, const char *code,
                void (*on_turn)(struct run *run));
/* Tell the run's sink where it stands (queued at position, or started). */
void run_report_status(struct run *run, enum run_state state, size_t position);

/* run_start.c. Build the box po describes (in a cgroup of its own when
 * there are) and watch it. */
int run_start_box(struct run *run, struct sbx_plan_owned *po);
/* Watch the box's pidfd, status socket and pipes on the loop. */
int run_watch_box(struct run *run);

/* session.c's runs. A session's run is a struct run without a box of its
 * own: its output comes from the session (run_session_output), its
 * displays too, and the session ends it with how its code ended. */
struct run *run_session_new(struct sandbox *s, const struct run_owner_ops *ops, void *owner,
                            const struct run_sink *sink, void *sink_data,
                            const struct sbx_limits *lim, run_done_fn done, void *data);
void run_session_output(struct run *run, int s, const char *buf, size_t n);
/* false when it does not fit in the output limit (the run is then being
 * interrupted) or the output was already cut. bytes: its size on the
 * channel. */
bool run_session_display(struct run *run, json_object *data, json_object *metadata, size_t bytes);

enum run_session_status {
	RUN_SESSION_OK,
	RUN_SESSION_ERROR,       /* the code raised */
	RUN_SESSION_INTERRUPTED, /* SIGINT stopped it */
	RUN_SESSION_CPU,         /* its CPU time ran out */
	RUN_SESSION_DIED,        /* the session's program ended: wstatus */
};
struct run_session_end {
	enum run_session_status status;
	int wstatus;
	uint64_t cpu_ms;
	int64_t max_rss_kb;
	const char *session_id;
	const char *why; /* the session ended, and why; or NULL */
	const char *error_name, *error_value;
	int work_fd; /* the session's /work (a dup, taken), or -1 */
	/* The session's workspace: its upper layer (a dup, taken) or -1,
	 * the host folder (borrowed), and the picture of the layer at the
	 * previous run's end (taken; NULL for an empty layer), which goes
	 * back to the session with snap_gen (its run_owner_ops take_snap). */
	int upper_fd;
	const char *ws_host;
	struct sbx_ws_snap *snap;
	unsigned snap_gen;
	/* The names under /work/out the run changed (borrowed), or NULL. */
	const char *const *changed;
	size_t nchanged;
};
/* Report the run's end to its owner and free it. */
void run_session_end(struct run *run, const struct run_session_end *e);

/* run_text.c. Hand what is held to the sink; it may answer that
 * reading pauses. */
void run_flush_output(struct run *run);
/* The sink cannot take more now: stop reading the box (or ask the
 * owner to stop reading its own). */
void run_pause_reading(struct run *run);
/* Add decoded text of stream s (see run_text.c); false when it does not
 * all fit in the output limit. */
bool run_add_text(struct run *run, int s, const char *bytes, size_t n, bool final, bool counted);
/* Text of stream s, counted against outputBytes; past the limit the
 * output is cut with a marker and the box ended. */
void run_on_bytes(struct run *run, int s, const char *buf, size_t n);
/* How the box's pipes are watched for run_on_pipe: edge-triggered, so
 * that the server is not woken (and does not wait for the pipe's lock)
 * while the program is in the middle of a write (run_output.c). */
#define RUN_PIPE_EVENTS (LOOP_READ | LOOP_EDGE)
/* The loop's callback for the box's pipes (data is the run). */
void run_on_pipe(struct loop *loop, int fd, unsigned events, void *data);
/* Close the relay's pipes and /dev/null (those made), and turn the relay
 * off. */
void run_relay_close(struct sandbox *sbx);

/* run_exit.c. Send pid 1 sig (while it is there). */
void run_signal_box(struct run *run, int sig);
/* Ask pid 1 to kill everything and report (SIGUSR1), SIGKILL later; a
 * session's run interrupts the session's code instead. */
void run_end_box(struct run *run);
/* The loop's callbacks for the status socket, the pidfd and the wall
 * clock (data is the run). */
void run_on_status(struct loop *loop, int fd, unsigned events, void *data);
void run_on_pid1_exit(struct loop *loop, int fd, unsigned events, void *data);
void run_on_wall(struct loop *loop, void *data);
/* A sentence on why the box could not be built and what to do. */
void run_describe_failure(struct run *run, int step, int err);
/* The end of a run whose program has ended: hand over the artifacts
 * found, the workspace's changes and the displays shown (each NULL when
 * none), free the run, then tell its owner. */
void run_finish(struct run *run, const struct sbx_artifacts *found,
                const struct sbx_ws_changes *changes, const struct sbx_displays *shown);
/* Collect the run's artifacts off the loop, then finish it; 0 when that
 * started. */
int run_start_collecting(struct run *run);
/* Finish the run when both pipes are at EOF and pid 1 has reported the
 * program's end (or is gone). */
void run_maybe_finish(struct run *run);

/* run_session.c. Hand the session's workspace picture back through ops
 * (NULL: not a session's run). */
void run_give_snap(const struct run_owner_ops *ops, struct sandbox *s, const char *sess_id,
                   unsigned gen, bool *lent, struct sbx_ws_snap *snap);
