/* session.c: sessions that keep state between runs (see session.h): the
 * top of session/. The session owns a box built as SBX_BOX_SESSION (a
 * run's pipes, and a socket as the program's stdin: the driver's
 * channel); the run under way is a struct run (run_session.c) that has
 * no box of its own and reaches its session through the callbacks given
 * here (run_ops). Everything is a loop callback: pipe bytes go to the
 * run, channel frames are displays and the run's end, the status socket
 * and the pidfd say the driver (or the box) has ended (session_box.c).
 * The channel's frames are session_channel.c's (nothing it brings is
 * trusted), the start of the box and driver (built, or from the zygote,
 * whose spare the open may wait for) session_start.c's. */
#include "sandbox/session/session.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/json.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "sandbox/box/box.h"
#include "sandbox/host/cgroup.h"
#include "sandbox/output/display.h"
#include "sandbox/workspace/hide.h"
#include "sandbox/box/plan.h"
#include "sandbox/run/run_private.h"
#include "sandbox/state.h"
#include "sandbox/pools/zygote.h"
#include "sandbox/host/base.h"
#include "sandbox/host/reap.h"
#include "sandbox/session/session_box.h"

/* What waits to be written to the driver: a run request (1 MiB of code,
 * JSON-escaped at most 6 times). */
#define SESSION_OUTQ_MAX (8u << 20)

const char *sbx_session_id(const struct sbx_session *ss)
{
	return ss->id;
}

const char *sbx_session_ended(const struct sbx_session *ss)
{
	return ss->alive ? NULL : ss->why;
}

json_object *sbx_session_vars(const struct sbx_session *ss)
{
	return ss->vars;
}

struct sbx_session *sbx_session_find(struct sandbox *s, const char *id)
{
	for (struct sbx_session *ss = s->sessions; ss && id; ss = ss->next)
		if (strcmp(ss->id, id) == 0)
			return ss;
	return NULL;
}

/* --- watching the box ------------------------------------------------------ */

/* The run's callbacks (run_ops): stop or go on reading the box while
 * the run's sink is paused. */
static void session_pause_io(void *owner, bool pause)
{
	struct sbx_session *ss = owner;
	if (ss->io_paused == pause)
		return;
	ss->io_paused = pause;
	sess_watch_io(ss);
	/* Frames that arrived while paused are handled now. */
	if (!pause && ss->alive && ss->box.ctl_fd >= 0)
		sess_on_ctl(ss->loop, ss->box.ctl_fd, 0, ss);
}

/* The run was interrupted before its frame left: the box is still on
 * its way (zwait), and the code never ran. The run ends now, as an
 * interrupted one, on a turn of its own. */
static void on_unsent(struct loop *loop, void *data)
{
	(void)loop;
	struct sbx_session *ss = data;
	ss->kill_timer = NULL;
	ss->interrupting = false;
	struct run *run = steal_pointer(&ss->run);
	sess_arm_idle(ss);
	if (!run) {
		/* It was cancelled: the run asked for meanwhile goes now. */
		if (ss->waiting)
			ss->start_waiting(ss);
		return;
	}
	run->owner = NULL;
	struct run_session_end e = {
	    .status = RUN_SESSION_INTERRUPTED, .session_id = ss->id, .work_fd = -1, .upper_fd = -1};
	run_session_end(run, &e);
}

/* The waiting run was interrupted (its wall clock) before it could go:
 * it ends as an interrupted one, on a turn of its own, its code never
 * run. */
static void on_waiting_interrupted(struct loop *loop, void *data)
{
	(void)loop;
	struct sbx_session *ss = data;
	ss->waiting_timer = NULL;
	struct run *run = sess_take_waiting(ss);
	sess_arm_idle(ss);
	if (!run)
		return;
	struct run_session_end e = {
	    .status = RUN_SESSION_INTERRUPTED, .session_id = ss->id, .work_fd = -1, .upper_fd = -1};
	run_session_end(run, &e);
}

/* Interrupt the run under way (SIGINT; the session ends if the code
 * does not stop in time), or the one waiting for an interrupt's end. */
static void session_interrupt(void *owner)
{
	struct sbx_session *ss = owner;
	if (ss->waiting && !ss->run) {
		/* Only the waiting run has the session as its owner now. */
		if (!ss->waiting_timer)
			ss->waiting_timer =
			    loop_timer_start(ss->loop, 0, on_waiting_interrupted, ss);
		return;
	}
	if (!ss->alive || ss->interrupting)
		return;
	ss->interrupting = true;
	if (ss->zwait || ss->check_frame) {
		/* Its frame (the one outq can hold then, or the one held
		 * for its check) is not sent. */
		buf_reset(&ss->outq);
		sbx_hide_cancel(ss->sbx, steal_pointer(&ss->check_req));
		json_object_put(steal_pointer(&ss->check_frame));
		ss->kill_timer = loop_timer_start(ss->loop, 0, on_unsent, ss);
		return;
	}
	if (!ss->started) {
		/* The driver has not taken the run yet: a SIGINT now would
		 * be dropped as one meant for the run before. */
		ss->interrupt_wanted = true;
		return;
	}
	sess_send_interrupt(ss);
}

/* The picture of session id's workspace layer after a run (taken; NULL
 * when there is none: the next run then compares the whole layer), for
 * the box of generation gen (an older one's is dropped). Until it comes
 * back the session takes no run. */
static void session_take_snap(struct sandbox *s, const char *id, unsigned gen,
                              struct sbx_ws_snap *snap)
{
	struct sbx_session *ss = sbx_session_find(s, id);
	if (!ss || ss->gen != gen) {
		sbx_ws_snap_free(snap);
		return;
	}
	sbx_ws_snap_free(ss->snap);
	ss->snap = snap;
	ss->snap_lent = false;
}

/* The run is being freed. */
static void session_forget_run(void *owner, struct run *run)
{
	struct sbx_session *ss = owner;
	if (ss->waiting == run) {
		/* Cancelled while it waited: it never goes. */
		sess_take_waiting(ss);
		sess_arm_idle(ss);
		return;
	}
	if (ss->run != run)
		return;
	ss->run = NULL;
	if (ss->zwait || ss->check_frame) {
		/* Its frame has not left: the code never runs. */
		buf_reset(&ss->outq);
		sbx_hide_cancel(ss->sbx, steal_pointer(&ss->check_req));
		json_object_put(steal_pointer(&ss->check_frame));
		sess_arm_idle(ss);
		return;
	}
	/* A run cancelled while its code runs: the code would go on in the
	 * session; interrupt it, and the session ends if it does not stop. */
	if (ss->alive)
		session_interrupt(ss);
}

static const struct run_owner_ops run_ops = {
    .forget = session_forget_run,
    .interrupt = session_interrupt,
    .pause_io = session_pause_io,
    .take_snap = session_take_snap,
};

/* --- idle --------------------------------------------------------------------- */

/* --- open, run, reset, close ------------------------------------------------- */

/* The run under way ends now, and is answered: its session is being
 * closed or reset (the box is gone). id: the session's, copied. */
static void end_run_now(struct run *run, const char *id, const char *why)
{
	run->owner = NULL;
	struct run_session_end e = {.status = RUN_SESSION_DIED,
	                            .wstatus = SIGKILL,
	                            .session_id = id,
	                            .why = why,
	                            .work_fd = -1,
	                            .upper_fd = -1};
	run_session_end(run, &e);
}

static void session_free(struct sbx_session *ss)
{
	struct sandbox *s = ss->sbx;
	for (struct sbx_session **pp = &s->sessions; *pp; pp = &(*pp)->next)
		if (*pp == ss) {
			*pp = ss->next;
			break;
		}
	sess_stop_timers(ss);
	struct run *run = steal_pointer(&ss->run);
	if (run) {
		run->owner = NULL;
		run_cancel(run);
	}
	run_cancel(sess_take_waiting(ss));
	sess_drop_box(ss);
	buf_release(&ss->in);
	buf_release(&ss->outq);
	json_object_put(ss->vars);
	json_object_put(ss->limits_req);
	sbx_ws_snap_free(ss->snap);
	free(ss->ws_host);
	free(ss);
}

static void start_waiting(struct sbx_session *ss);

int sbx_session_open(struct sandbox *s, const char *language, json_object *limits,
                     struct sbx_session **ret, char *err, size_t errsz)
{
	err[0] = '\0';
	if (!s)
		return -ENODEV;
	if (!language || strcmp(language, "python") != 0) {
		snprintf(err, errsz,
		         "sessions run python only (language \"python\"); for %s, use snippet/run "
		         "without a sessionId",
		         language ? language : "this language");
		return -EINVAL;
	}
	size_t n = 0;
	struct sbx_session *oldest_ended = NULL;
	for (struct sbx_session *o = s->sessions; o; o = o->next, n++)
		if (!o->alive)
			oldest_ended = o; /* the list is newest first */
	if (n >= SBX_SESSIONS_MAX && oldest_ended) {
		session_free(oldest_ended);
		n--;
	}
	if (n >= SBX_SESSIONS_MAX) {
		snprintf(
		    err, errsz,
		    "this server already has %d sessions open: close one (session/close) first",
		    SBX_SESSIONS_MAX);
		return -EINVAL;
	}
	struct sbx_session *ss = calloc(1, sizeof(*ss));
	if (!ss)
		return -ENOMEM;
	ss->sbx = s;
	ss->loop = s->base.loop;
	sbx_box_init(&ss->box);
	buf_init(&ss->in, SESSION_FRAME_MAX + 4);
	buf_init(&ss->outq, SESSION_OUTQ_MAX);
	ss->start_waiting = start_waiting;
	snprintf(ss->language, sizeof(ss->language), "%s", language);
	snprintf(ss->id, sizeof(ss->id), "s%lu", ++s->next_session);
	int r = sbx_limits_resolve(s->config.section, limits, &ss->life, err, errsz);
	if (r >= 0 && limits && !(ss->limits_req = json_copy(limits)))
		r = -ENOMEM;
	ss->next = s->sessions;
	s->sessions = ss;
	if (r >= 0)
		r = sess_start_box(ss, err, errsz);
	if (r < 0) {
		session_free(ss);
		return r;
	}
	*ret = ss;
	return 0;
}

/* The run's limits: the session's, with the request's wallMs, cpuMs and
 * outputBytes. */
static int run_limits(struct sbx_session *ss, json_object *limits, struct sbx_limits *ret,
                      char *err, size_t errsz)
{
	static const char *const per_run[] = {"wallMs", "cpuMs", "outputBytes"};
	if (limits && json_object_is_type(limits, json_type_object)) {
		json_object_object_foreach(limits, key, v)
		{
			(void)v;
			size_t i = 0;
			while (i < ARRAY_SIZE(per_run) && strcmp(per_run[i], key) != 0)
				i++;
			if (i == ARRAY_SIZE(per_run)) {
				snprintf(err, errsz,
				         "limits.%s applies to the whole session: give it to "
				         "session/open (a run in a session takes wallMs, cpuMs and "
				         "outputBytes)",
				         key);
				return -EINVAL;
			}
		}
	}
	struct sbx_limits l;
	int r = sbx_limits_resolve(ss->sbx->config.section, limits, &l, err, errsz);
	if (r < 0)
		return r;
	*ret = ss->life;
	/* The session's own request may have set these for every run. */
	if (!json_get(limits, "wallMs"))
		l.wall_ms = ss->life.wall_ms;
	if (!json_get(limits, "cpuMs"))
		l.cpu_ms = ss->life.cpu_ms;
	if (!json_get(limits, "outputBytes"))
		l.output_bytes = ss->life.output_bytes;
	ret->wall_ms = l.wall_ms;
	ret->cpu_ms = l.cpu_ms;
	ret->output_bytes = l.output_bytes;
	return 0;
}

/* The driver's request for run (session_driver.py's "run"). */
static json_object *run_frame(struct run *run, const char *code, const struct sbx_limits *lim)
{
	json_object *req = json_object_new_object();
	json_object_object_add(req, "op", json_object_new_string("run"));
	json_object_object_add(req, "id", json_object_new_string(run_id(run)));
	json_object_object_add(req, "code", json_object_new_string(code));
	json_object_object_add(req, "cpuMs", json_object_new_int64((int64_t)lim->cpu_ms));
	json_object_object_add(req, "outDir", json_object_new_string(SBX_WORKSPACE "/out"));
	return req;
}

/* Send run's request (req, taken) to the driver and make it the run
 * under way; -errno when it cannot go (run is then not the session's). */
static int send_run(struct sbx_session *ss, struct run *run, json_object *req)
{
	int r;
	if (ss->ws_host) {
		/* Held back until a list made from now on shows nothing to
		 * hide that the box does not mask (on_run_list). */
		ss->check_frame = req;
		r = ss->masked_idx ? sess_check_start(ss) : 0;
		if (r < 0)
			json_object_put(steal_pointer(&ss->check_frame));
	} else {
		r = sess_queue_frame(ss, req);
		json_object_put(req);
	}
	if (r < 0)
		return r;
	if (ss->idle_timer) {
		loop_timer_stop(ss->loop, ss->idle_timer);
		ss->idle_timer = NULL;
	}
	/* Nothing made ahead for other runs while this one runs. */
	sbx_zygote_session_busy(ss->sbx);
	ss->run = run;
	ss->started = ss->interrupt_wanted = false;
	if (!ss->check_frame)
		sess_write_out(ss);
	return 0;
}

/* ss->start_waiting: the interrupted run before it is over, so the
 * waiting run goes now; if it cannot, it ends with the reason as its
 * error. */
static void start_waiting(struct sbx_session *ss)
{
	if (!ss->alive || ss->run || ss->interrupting || ss->waiting_timer || !ss->waiting)
		return;
	struct run *run = steal_pointer(&ss->waiting);
	int r = send_run(ss, run, steal_pointer(&ss->waiting_frame));
	if (r >= 0)
		return;
	log_warn("session %s: run %s cannot go: %s", ss->id, run_id(run), strerror(-r));
	run->owner = NULL;
	char value[128];
	snprintf(value, sizeof(value), "the session could not take the run: %s", strerror(-r));
	struct run_session_end e = {.status = RUN_SESSION_ERROR,
	                            .session_id = ss->id,
	                            .error_name = "OSError",
	                            .error_value = value,
	                            .work_fd = -1,
	                            .upper_fd = -1};
	sess_arm_idle(ss);
	run_session_end(run, &e);
}

int sbx_session_run(struct sbx_session *ss, const struct run_sink *sink, void *sink_data,
                    const char *code, json_object *limits, run_done_fn done, void *data,
                    struct run **ret_run, char *err, size_t errsz)
{
	err[0] = '\0';
	if (!ss->alive) {
		snprintf(err, errsz,
		         "session %s has ended: %s. Reset it (session/reset) for a fresh one, or "
		         "open another (session/open)",
		         ss->id, ss->why);
		return -EPIPE;
	}
	/* Right after a cancel, while the cancelled run's code is being
	 * interrupted, one run waits for it (as a notebook queues the next
	 * cell); a second is refused. */
	bool wait = !ss->run && ss->interrupting && !ss->waiting && !ss->snap_lent && !ss->decline;
	if (ss->waiting) {
		snprintf(err, errsz,
		         "session %s is busy: run %s waits for the interrupted run before it to "
		         "stop, and a session queues one run only: wait for it, or cancel it "
		         "($/cancelRequest)",
		         ss->id, run_id(ss->waiting));
		return -EBUSY;
	}
	if (!wait && (ss->run || ss->interrupting || ss->snap_lent || ss->decline)) {
		snprintf(err, errsz,
		         "session %s is busy with run %s: wait for it, or cancel it "
		         "($/cancelRequest)",
		         ss->id,
		         ss->run            ? run_id(ss->run)
		         : ss->interrupting ? "(being interrupted)"
		         : ss->decline      ? "(declining a run's changes)"
		                            : "(reading back what the last run wrote)");
		return -EBUSY;
	}
	if (!code || strlen(code) > SBX_CODE_MAX) {
		snprintf(err, errsz, "code is required and at most %u bytes", SBX_CODE_MAX);
		return -EINVAL;
	}
	struct sbx_limits lim;
	int r = run_limits(ss, limits, &lim, err, errsz);
	if (r < 0)
		return r;
	struct run *run = run_session_new(ss->sbx, &run_ops, ss, sink, sink_data, &lim, done, data);
	if (!run)
		return -ENOMEM;
	json_object *req = run_frame(run, code, &lim);
	if (wait) {
		ss->waiting = run;
		ss->waiting_frame = req;
		if (ss->idle_timer) {
			loop_timer_stop(ss->loop, ss->idle_timer);
			ss->idle_timer = NULL;
		}
		*ret_run = run;
		return 0;
	}
	r = send_run(ss, run, req);
	if (r < 0) {
		snprintf(err, errsz, "session %s cannot take the run now: %s", ss->id,
		         strerror(-r));
		run->owner = NULL;
		run_free(run);
		return r;
	}
	*ret_run = run;
	return 0;
}

int sbx_session_reset(struct sbx_session *ss, char *err, size_t errsz)
{
	err[0] = '\0';
	sess_stop_timers(ss);
	struct run *run = steal_pointer(&ss->run);
	struct run *waiting = sess_take_waiting(ss);
	sess_drop_box(ss);
	snprintf(ss->why, sizeof(ss->why), "the session was reset (session/reset)");
	if (run)
		end_run_now(run, ss->id, ss->why);
	if (waiting)
		end_run_now(waiting, ss->id, ss->why);
	json_object_put(ss->vars);
	ss->vars = NULL;
	int r = sess_start_box(ss, err, errsz);
	if (r < 0)
		snprintf(ss->why, sizeof(ss->why), "it could not be reset: %s", err);
	return r;
}

void sbx_session_close(struct sbx_session *ss)
{
	if (!ss)
		return;
	char id[sizeof(ss->id)];
	snprintf(id, sizeof(id), "%s", ss->id);
	struct run *run = steal_pointer(&ss->run);
	struct run *waiting = sess_take_waiting(ss);
	session_free(ss);
	if (run)
		end_run_now(run, id, "the session was closed (session/close)");
	if (waiting)
		end_run_now(waiting, id, "the session was closed (session/close)");
}

void sbx_sessions_free(struct sandbox *s)
{
	while (s->sessions)
		session_free(s->sessions);
}
