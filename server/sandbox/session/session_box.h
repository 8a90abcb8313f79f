/* session_box.h: struct sbx_session, and what session_box.c (a
 * session's box watched and ended), session_channel.c (the driver's
 * channel), session_start.c (its box and driver started, built or from
 * the zygote, and a held-back run's check) and session.c (the sessions'
 * API: open, run, reset, close, and the callbacks its runs are given)
 * share: the session, and the calls between them, each file calling
 * only those below it in that order. Not for the rest of the server:
 * session.h is the sessions' API. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/buf.h"
#include "sandbox/box/box.h"
#include "sandbox/host/limits.h"
#include "sandbox/box/plan.h"
#include "sandbox/run/run.h"

struct loop;
struct loop_timer;
struct run;
struct sandbox;
struct sbx_hide_req;
struct sbx_ws_snap;
struct sbx_zygote_wait;
struct sess_decline;
struct sbx_session;

/* A decline under way (session_decline.c), reached from below through
 * these: the driver's answer came (reply: the "declined" frame, msg
 * borrowed), or the box went while it was awaited (gone; ss->decline is
 * cleared by it). */
struct sess_decline_ops {
	void (*reply)(struct sbx_session *ss, json_object *msg);
	void (*gone)(struct sbx_session *ss);
};

/* The largest frame the driver may send (a display with a big image). */
#define SESSION_FRAME_MAX (16u << 20)

struct sbx_session {
	struct sandbox *sbx;
	struct loop *loop;
	struct sbx_session *next;
	char id[24];
	char language[32];
	json_object *limits_req; /* the open's limits, for a reset; owned */
	struct sbx_limits life;  /* as resolved at open */

	struct sbx_box box; /* built while alive */
	bool alive;
	bool io_paused;
	bool interrupting; /* an interrupt asked for: SIGINT sent (kill_timer
	                    * running), or waiting for started */
	/* The driver said it took the run under way ("started"): an
	 * interrupt before that waits for it (interrupt_wanted), since the
	 * driver drops a SIGINT that was pending when it took a run (one
	 * meant for the run before). */
	bool started;
	bool interrupt_wanted;
	bool killing;  /* the grace is over: pid 1 was told to end the box */
	char why[320]; /* why it ended; "" while alive */

	struct buf in;   /* channel bytes not yet a whole frame */
	struct buf outq; /* bytes for the driver not yet written */
	struct run *run; /* the run under way, or NULL */
	struct loop_timer *idle_timer, *kill_timer;
	/* A run asked for while the run before it, cancelled, was being
	 * interrupted: it waits for that interrupt's end, as a notebook
	 * kernel's next cell does (at most one; ss->run is NULL meanwhile),
	 * with its frame (owned). start_waiting (session.c's) sends it once
	 * the interrupted run's "done" came; waiting_timer ends it as
	 * interrupted when it is itself interrupted (its wall clock) before
	 * that. sess_take_waiting() takes it from the session. */
	struct run *waiting;
	json_object *waiting_frame;
	struct loop_timer *waiting_timer;
	void (*start_waiting)(struct sbx_session *ss);
	json_object *vars;

	/* The workspace (the host folder, or NULL) and the picture of the
	 * box's upper layer at the last run's end (wsdiff.h): each run
	 * reports what it changed itself. Lent to the run reading the layer
	 * back (snap_lent) until the run hands it back (run_ops' take_snap);
	 * gen tells a reset's box from the one before. */
	char *ws_host;
	struct sbx_ws_snap *snap;
	bool snap_lent;
	unsigned gen;
	/* With a workspace, the driver's GO waits for the list of what to
	 * hide (hide.h): the plan and rlimits it will go with. */
	struct sbx_hide_req *hide_req;
	struct sbx_plan_owned *go_plan;
	struct sbx_rlimit go_rl[SBX_MAX_RLIMITS];
	size_t go_nrl;
	/* The box is the zygote's (zygote.h): the list goes to its pid 1
	 * (sbx_zygote_send_hide), not with a GO. */
	bool zygote_box;
	/* With a workspace: the records of the list the box's pid 1 masked
	 * (owned; NULL until it went), and a run's frame held back
	 * (check_frame, owned) while a list made after the run was asked
	 * for is checked against it (check_req): a name to hide that is not
	 * masked (made since the box was) ends the session instead. */
	char *masked;
	size_t masked_len;
	const char **masked_idx; /* its records, sorted (strcmp) */
	size_t masked_n;
	/* The folder ws_host named when the box was made (device, inode):
	 * a folder made anew at that path is not the one the box shows. */
	dev_t ws_dev;
	ino_t ws_ino;
	struct sbx_hide_req *check_req;
	json_object *check_frame;
	/* Open (alive) while the zygote's spare is on its way: the box is
	 * empty, a run's frame waits in outq, and the plan waits here for
	 * the rest of the start (on_spare). */
	struct sbx_zygote_wait *zwait;
	struct sbx_plan_owned *zplan;
	/* A decline of a run's changes under way (session_decline.c): the
	 * session takes no run until it is over. decline_waiting: its frame
	 * went to the driver, whose "declined" answer is awaited (any other
	 * time, that answer breaks the protocol). */
	struct sess_decline *decline;
	bool decline_waiting;
	const struct sess_decline_ops *decline_ops;
};

/* session_box.c: what the box's channel and pipes are watched for, and
 * the watches set so; the pipes read out (the text before a frame goes
 * first); the session's end (why, and the box's status when there is
 * one); the box dropped; its timers stopped; the idle timer armed; the
 * pid 1 and status socket watches. */
unsigned sess_ctl_events(const struct sbx_session *ss);
void sess_watch_io(struct sbx_session *ss);
void sess_drain_pipes(struct sbx_session *ss);
void sess_end_session(struct sbx_session *ss, const char *why, int wstatus, bool have_status);
void sess_drop_box(struct sbx_session *ss);
void sess_stop_timers(struct sbx_session *ss);
void sess_arm_idle(struct sbx_session *ss);
void sess_on_status(struct loop *loop, int fd, unsigned events, void *data);
void sess_on_pid1(struct loop *loop, int fd, unsigned events, void *data);
/* SIGINT to the box's program, and the grace it has to stop in before
 * the session is ended (kill_timer). */
void sess_send_interrupt(struct sbx_session *ss);
/* The waiting run (see waiting), or NULL: taken from the session, its
 * frame dropped and its owner cleared, for the caller to end. */
struct run *sess_take_waiting(struct sbx_session *ss);

/* session_channel.c: a frame queued for the driver (-ENOBUFS past
 * SESSION_OUTQ_MAX); what is queued written; the channel's watch. */
int sess_queue_frame(struct sbx_session *ss, json_object *msg);
void sess_write_out(struct sbx_session *ss);
void sess_on_ctl(struct loop *loop, int fd, unsigned events, void *data);

/* session_start.c: the box built, or taken from the zygote, and the
 * driver started in it (or the open left waiting for the zygote's
 * spare); err says why not. */
int sess_start_box(struct sbx_session *ss, char *err, size_t errsz);
/* session_start.c: the records of a list of what to hide (hide.h), read
 * from its sealed memfd into *ret (owned, NUL-terminated), at most
 * SESSION_LIST_MAX bytes; -errno. */
#define SESSION_LIST_MAX (16u << 20)
int sess_read_list(int fd, char **ret, size_t *ret_len);
/* The records of list (len bytes, each NUL-terminated), as pointers
 * into it sorted with strcmp (*ret owned); -ENOMEM. */
int sess_index_list(const char *list, size_t len, const char ***ret, size_t *ret_n);
/* session_start.c: the held-back run's check asked for, now that the box's own
 * list went (it is never asked for before: the run's list must come
 * from a later pass than the box's). */
int sess_check_start(struct sbx_session *ss);
