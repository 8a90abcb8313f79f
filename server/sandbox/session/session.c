/* session.c: sessions that keep state between runs (see session.h). The
 * session owns a box built as SBX_BOX_SESSION (a run's pipes, and a
 * socket as the program's stdin: the driver's channel); the run under way
 * is a struct run (run_session.c) that has no box of its own. Everything is a
 * loop callback: pipe bytes go to the run, channel frames are displays
 * and the run's end, the status socket and the pidfd say the driver (or
 * the box) has ended. The channel's frames are session_channel.c's
 * (nothing it brings is trusted), the start of the box and driver (built,
 * or from the zygote, whose spare the open may wait for)
 * session_start.c's. */
#include "sandbox/session/session_private.h"

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
#include "sandbox/sandbox.h"
#include "sandbox/pools/zygote.h"

/* What waits to be written to the driver: a run request (1 MiB of code,
 * JSON-escaped at most 6 times). */
#define SESSION_OUTQ_MAX (8u << 20)
/* After an interrupt, how long the code has to stop before the session
 * is ended. */
#define SESSION_GRACE_MS 2000
/* Reads of a pipe before a frame is handled: the text the code wrote
 * before a display goes out first. */
#define DRAIN_READS 16

static void on_pipe(struct loop *loop, int fd, unsigned events, void *data);

static int cmp_record(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

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

unsigned sess_ctl_events(const struct sbx_session *ss)
{
	return (ss->io_paused ? 0 : LOOP_READ) | (ss->outq.len ? LOOP_WRITE : 0);
}

void sess_watch_io(struct sbx_session *ss)
{
	int r;
	for (int s = 0; s < 2; s++)
		if (ss->box.fds[s] >= 0) {
			if (ss->io_paused)
				loop_unwatch(ss->loop, ss->box.fds[s]);
			else if ((r = loop_watch(ss->loop, ss->box.fds[s], LOOP_READ, on_pipe,
			                         ss)) < 0 &&
			         r != -EEXIST)
				log_warn("session %s: cannot watch its output", ss->id);
		}
	if (ss->box.ctl_fd >= 0)
		loop_modify(ss->loop, ss->box.ctl_fd, sess_ctl_events(ss));
}

void sbx_session_pause_io(struct sbx_session *ss, bool pause)
{
	if (ss->io_paused == pause)
		return;
	ss->io_paused = pause;
	sess_watch_io(ss);
	/* Frames that arrived while paused are handled now. */
	if (!pause && ss->alive && ss->box.ctl_fd >= 0)
		sess_on_ctl(ss->loop, ss->box.ctl_fd, 0, ss);
}

static void pipe_eof(struct sbx_session *ss, int s)
{
	loop_unwatch(ss->loop, ss->box.fds[s]);
	close(steal_fd(&ss->box.fds[s]));
}

/* Read one chunk of stream s: > 0 bytes read, 0 nothing now, < 0 EOF. */
static int read_pipe(struct sbx_session *ss, int s)
{
	if (ss->box.fds[s] < 0)
		return -1;
	char buf[65536];
	ssize_t n = read(ss->box.fds[s], buf, sizeof(buf));
	if (n > 0) {
		if (ss->run)
			run_session_output(ss->run, s, buf, (size_t)n);
		return 1;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	pipe_eof(ss, s);
	return -1;
}

static void on_pipe(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)loop;
	(void)events;
	struct sbx_session *ss = data;
	int s = fd == ss->box.fds[OUT] ? OUT : ERR;
	if (!ss->io_paused)
		read_pipe(ss, s);
}

/* What the code wrote before its run ended: read it first. The driver
 * waits for kiln to read the pipes before each frame (and, after a
 * display, for the frame to be read), so this finds little; bounded, and
 * done even while the sink is paused, so that a run's text is its own. */
void sess_drain_pipes(struct sbx_session *ss)
{
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < DRAIN_READS && read_pipe(ss, s) > 0; i++)
			;
}

/* --- the box's end ----------------------------------------------------------- */

static void describe_status(char *out, size_t n, int wstatus, const struct sbx_limits *l)
{
	if (WIFEXITED(wstatus)) {
		snprintf(out, n, "the session's program exited with code %d", WEXITSTATUS(wstatus));
	} else {
		int sig = WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : SIGKILL;
		const char *abbrev = sigabbrev_np(sig);
		snprintf(out, n, "the session's program was killed by SIG%s%s",
		         abbrev ? abbrev : "UNKNOWN",
		         sig == SIGKILL ? " (it may have run out of memory: the session's "
		                          "memoryBytes applies to its whole life)"
		                        : "");
		(void)l;
	}
}

static void stop_timers(struct sbx_session *ss)
{
	struct loop_timer **t[] = {&ss->idle_timer, &ss->kill_timer};
	for (size_t i = 0; i < ARRAY_SIZE(t); i++)
		if (*t[i]) {
			loop_timer_stop(ss->loop, *t[i]);
			*t[i] = NULL;
		}
}

/* Unwatch and end the box: every process of it is dead on return, or
 * handed to the sandbox to reap when pid 1 has reported. */
void sess_drop_box(struct sbx_session *ss)
{
	/* The spare stays the zygote's. */
	sbx_zygote_wait_cancel(ss->sbx, steal_pointer(&ss->zwait));
	sbx_plan_free(steal_pointer(&ss->zplan));
	sbx_hide_cancel(ss->sbx, steal_pointer(&ss->hide_req));
	sbx_plan_free(steal_pointer(&ss->go_plan));
	/* A run held back for its check never reaches this box. */
	sbx_hide_cancel(ss->sbx, steal_pointer(&ss->check_req));
	json_object_put(steal_pointer(&ss->check_frame));
	free(steal_pointer(&ss->masked));
	free(steal_pointer(&ss->masked_idx));
	ss->masked_len = ss->masked_n = 0;
	int fds[] = {ss->box.pidfd, ss->box.status_fd, ss->box.fds[OUT], ss->box.fds[ERR],
	             ss->box.ctl_fd};
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			loop_unwatch(ss->loop, fds[i]);
	if (ss->box.have_exit && !ss->box.reaped)
		sbx_box_reap_later(ss->sbx, &ss->box);
	sbx_box_release(ss->sbx, &ss->box);
	ss->alive = false;
	buf_reset(&ss->in);
	buf_reset(&ss->outq);
	ss->io_paused = false;
	ss->interrupting = ss->killing = false;
}

/* The session is over: say why to the run under way, if any, and keep
 * the reason for the next request. */
void sess_end_session(struct sbx_session *ss, const char *why, int wstatus, bool have_status)
{
	if (!ss->alive)
		return;
	if (why != ss->why)
		snprintf(ss->why, sizeof(ss->why), "%s", why);
	log_info("session %s ended: %s", ss->id, why);
	stop_timers(ss);
	/* What the code wrote last still reaches the run. */
	if (ss->run)
		for (int s = 0; s < 2; s++)
			while (ss->box.fds[s] >= 0 && read_pipe(ss, s) > 0)
				;
	sess_drop_box(ss);
	struct run *run = steal_pointer(&ss->run);
	if (run) {
		run->session = NULL;
		struct run_session_end e = {.status = RUN_SESSION_DIED,
		                            .wstatus = have_status ? wstatus : SIGKILL,
		                            .session_id = ss->id,
		                            .why = ss->why,
		                            .work_fd = -1,
		                            .upper_fd = -1};
		run_session_end(run, &e);
	}
}

void sess_on_status(struct loop *loop, int fd, unsigned events, void *data)
{
	struct sbx_session *ss = data;
	bool end = sbx_box_read_status(&ss->box) || (events & (LOOP_HUP | LOOP_ERR));
	if (end)
		loop_unwatch(loop, fd);
	char why[sizeof(ss->why)];
	if (ss->box.failed) {
		snprintf(why, sizeof(why), "the session's box could not be built (%s failed: %s)",
		         sbx_step_name(ss->box.fail_step), strerror(ss->box.fail_err));
		sess_end_session(ss, why, 0, false);
	} else if (ss->box.have_exit) {
		if (ss->why[0])
			snprintf(why, sizeof(why), "%s", ss->why);
		else
			describe_status(why, sizeof(why), ss->box.exit_msg.wstatus, &ss->life);
		sess_end_session(ss, why, ss->box.exit_msg.wstatus, true);
	}
}

void sess_on_pid1(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)events;
	struct sbx_session *ss = data;
	if (!sbx_pidfd_reap(fd))
		return;
	loop_unwatch(loop, fd);
	ss->box.reaped = true;
	sbx_box_read_status(&ss->box);
	if (ss->box.have_exit) {
		sess_on_status(loop, ss->box.status_fd, LOOP_HUP, ss);
		return;
	}
	sess_end_session(ss, ss->why[0] ? ss->why : "the session's box ended without a report",
	                 SIGKILL, false);
}

static void on_kill_timer(struct loop *loop, void *data)
{
	(void)loop;
	struct sbx_session *ss = data;
	ss->kill_timer = NULL;
	if (ss->killing) {
		/* pid 1 itself did not answer: kill the box from here. */
		sess_end_session(ss, ss->why, SIGKILL, true);
		return;
	}
	ss->killing = true;
	snprintf(ss->why, sizeof(ss->why),
	         "the run did not stop within %d ms of an interrupt (SIGINT), so kiln ended the "
	         "session; reset it (session/reset) to start again",
	         SESSION_GRACE_MS);
	/* pid 1 kills everything and reports; on_status ends the session. */
	if (ss->box.cg)
		sbx_cgroup_kill(ss->box.cg);
	syscall(SYS_pidfd_send_signal, ss->box.pidfd, SIGUSR1, NULL, 0);
	ss->kill_timer = loop_timer_start(ss->loop, SESSION_GRACE_MS, on_kill_timer, ss);
	if (!ss->kill_timer)
		sess_end_session(ss, ss->why, SIGKILL, true);
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
	if (!run)
		return;
	run->session = NULL;
	struct run_session_end e = {
	    .status = RUN_SESSION_INTERRUPTED, .session_id = ss->id, .work_fd = -1, .upper_fd = -1};
	run_session_end(run, &e);
}

void sbx_session_interrupt(struct sbx_session *ss)
{
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
	/* pid 1 passes it to the program's process group. */
	syscall(SYS_pidfd_send_signal, ss->box.pidfd, SIGINT, NULL, 0);
	ss->kill_timer = loop_timer_start(ss->loop, SESSION_GRACE_MS, on_kill_timer, ss);
}

void sbx_session_take_snap(struct sandbox *s, const char *id, unsigned gen,
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

void sbx_session_forget_run(struct sbx_session *ss, struct run *run)
{
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
		sbx_session_interrupt(ss);
}

/* --- idle --------------------------------------------------------------------- */

static void on_idle(struct loop *loop, void *data)
{
	(void)loop;
	struct sbx_session *ss = data;
	ss->idle_timer = NULL;
	char why[160];
	snprintf(why, sizeof(why),
	         "the session was closed after %llu ms without a run (sandbox.sessionIdleMs)",
	         (unsigned long long)ss->sbx->config.session_idle_ms);
	sess_end_session(ss, why, 0, false);
}

void sess_arm_idle(struct sbx_session *ss)
{
	if (ss->idle_timer)
		loop_timer_stop(ss->loop, ss->idle_timer);
	ss->idle_timer = NULL;
	if (ss->alive && !ss->run && ss->sbx->config.session_idle_ms)
		ss->idle_timer =
		    loop_timer_start(ss->loop, ss->sbx->config.session_idle_ms, on_idle, ss);
}

/* --- open, run, reset, close ------------------------------------------------- */

/* The run under way ends now, and is answered: its session is being
 * closed or reset (the box is gone). id: the session's, copied. */
static void end_run_now(struct run *run, const char *id, const char *why)
{
	run->session = NULL;
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
	stop_timers(ss);
	struct run *run = steal_pointer(&ss->run);
	if (run) {
		run->session = NULL;
		run_cancel(run);
	}
	sess_drop_box(ss);
	buf_release(&ss->in);
	buf_release(&ss->outq);
	json_object_put(ss->vars);
	json_object_put(ss->limits_req);
	sbx_ws_snap_free(ss->snap);
	free(ss->ws_host);
	free(ss);
}

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
	ss->loop = s->loop;
	sbx_box_init(&ss->box);
	buf_init(&ss->in, SESSION_FRAME_MAX + 4);
	buf_init(&ss->outq, SESSION_OUTQ_MAX);
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
	if (ss->run || ss->interrupting || ss->snap_lent) {
		snprintf(err, errsz,
		         "session %s is busy with run %s: wait for it, or cancel it "
		         "($/cancelRequest)",
		         ss->id,
		         ss->run            ? run_id(ss->run)
		         : ss->interrupting ? "(being interrupted)"
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
	struct run *run = run_session_new(ss->sbx, ss, sink, sink_data, &lim, done, data);
	if (!run)
		return -ENOMEM;
	json_object *req = json_object_new_object();
	json_object_object_add(req, "op", json_object_new_string("run"));
	json_object_object_add(req, "id", json_object_new_string(run_id(run)));
	json_object_object_add(req, "code", json_object_new_string(code));
	json_object_object_add(req, "cpuMs", json_object_new_int64((int64_t)lim.cpu_ms));
	json_object_object_add(req, "outDir", json_object_new_string(SBX_WORKSPACE "/out"));
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
	if (r < 0) {
		snprintf(err, errsz, "session %s cannot take the run now: %s", ss->id,
		         strerror(-r));
		run->session = NULL;
		run_free(run);
		return r;
	}
	if (ss->idle_timer) {
		loop_timer_stop(ss->loop, ss->idle_timer);
		ss->idle_timer = NULL;
	}
	ss->run = run;
	if (!ss->check_frame)
		sess_write_out(ss);
	*ret_run = run;
	return 0;
}

/* The first record of list (len bytes) that the box does not mask, or
 * NULL: every name to hide now was hidden when the box was made. */
static const char *unmasked(const struct sbx_session *ss, const char *list, size_t len)
{
	for (size_t off = 0; off < len; off += strlen(list + off) + 1) {
		const char *rec = list + off;
		if (!bsearch(&rec, ss->masked_idx, ss->masked_n, sizeof(*ss->masked_idx),
		             cmp_record))
			return rec;
	}
	return NULL;
}

/* The list made for the held-back run: its frame goes to the driver, or,
 * if something to hide appeared since the box masked its list (the box
 * would show it: its masks are made once, before the driver starts),
 * the session ends before the code runs, saying so. */
static void on_run_list(void *data, int fd, const char *why)
{
	struct sbx_session *ss = data;
	ss->check_req = NULL;
	char msg[sizeof(ss->why)];
	char *list = NULL;
	size_t len = 0;
	int r = fd < 0 ? fd : sess_read_list(fd, &list, &len);
	if (fd >= 0)
		close(fd);
	const char *rec = r >= 0 ? unmasked(ss, list, len) : NULL;
	struct stat st;
	if (r >= 0 &&
	    (stat(ss->ws_host, &st) < 0 || st.st_dev != ss->ws_dev || st.st_ino != ss->ws_ino)) {
		/* The list is the new folder's; the box shows the old one. */
		snprintf(
		    msg, sizeof(msg),
		    "the workspace folder %s is not the one this session's box was made with "
		    "(moved away, or made anew at that path); the run did not start. Reset the "
		    "session (session/reset) for a box that shows the folder there now",
		    ss->ws_host);
	} else if (r < 0) {
		snprintf(msg, sizeof(msg),
		         "kiln could not check the workspace for names to hide before the run: %s",
		         fd < 0 ? why : strerror(-r));
	} else if (rec) {
		snprintf(
		    msg, sizeof(msg),
		    "%s (a name sandbox.workspace.hide lists) appeared in the workspace after "
		    "this session's box was made, which cannot hide it; the run did not start. "
		    "Reset the session (session/reset) for a box that hides it",
		    rec + 1);
	} else {
		json_object *frame = steal_pointer(&ss->check_frame);
		r = sess_queue_frame(ss, frame);
		json_object_put(frame);
		if (r >= 0) {
			free(list);
			sess_write_out(ss);
			return;
		}
		snprintf(msg, sizeof(msg), "session %s cannot take the run now: %s", ss->id,
		         strerror(-r));
	}
	free(list);
	sess_end_session(ss, msg, 0, false);
}

int sess_check_start(struct sbx_session *ss)
{
	return sbx_hide_request(ss->sbx, on_run_list, ss, &ss->check_req);
}

int sbx_session_reset(struct sbx_session *ss, char *err, size_t errsz)
{
	err[0] = '\0';
	stop_timers(ss);
	struct run *run = steal_pointer(&ss->run);
	sess_drop_box(ss);
	snprintf(ss->why, sizeof(ss->why), "the session was reset (session/reset)");
	if (run)
		end_run_now(run, ss->id, ss->why);
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
	session_free(ss);
	if (run)
		end_run_now(run, id, "the session was closed (session/close)");
}

void sbx_sessions_free(struct sandbox *s)
{
	while (s->sessions)
		session_free(s->sessions);
}
