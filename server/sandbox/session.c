/* session.c: sessions that keep state between runs (see session.h). The
 * session owns a box built as SBX_BOX_SESSION (a run's pipes, and a
 * socket as the program's stdin: the driver's channel); the run under way
 * is a struct run of run.c that has no box of its own. Everything is a
 * loop callback: pipe bytes go to the run, channel frames are displays
 * and the run's end, the status socket and the pidfd say the driver (or
 * the box) has ended. Nothing the channel brings is trusted: a frame is
 * at most SESSION_FRAME_MAX bytes of strict JSON of a known shape, and
 * anything else ends the session with the reason. */
#include "sandbox/session.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/json.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "sandbox/box.h"
#include "sandbox/cgroup.h"
#include "sandbox/display.h"
#include "sandbox/hide.h"
#include "sandbox/plan.h"
#include "sandbox/run_private.h"
#include "sandbox/sandbox.h"
#include "sandbox/zygote.h"

/* The driver's source, embedded at build time (session_embed.sh). */
extern const char sbx_session_driver[];

/* The largest frame the driver may send (a display with a big image). */
#define SESSION_FRAME_MAX (16u << 20)
/* What waits to be written to the driver: a run request (1 MiB of code,
 * JSON-escaped at most 6 times). */
#define SESSION_OUTQ_MAX (8u << 20)
/* After an interrupt, how long the code has to stop before the session
 * is ended. */
#define SESSION_GRACE_MS 2000
/* Reads of a pipe before a frame is handled: the text the code wrote
 * before a display goes out first. */
#define DRAIN_READS 16
/* The driver's description of the session, kept as it came. */
#define VARS_MAX_BYTES (64u * 1024)

#define DRIVER_PATH "code/kiln_session.py"
/* The files a run may hand back as artifacts. */
#define SESSION_CHANGED_MAX 64

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
	bool interrupting; /* SIGINT sent, kill_timer running */
	bool killing;      /* the grace is over: pid 1 was told to end the box */
	char why[320];     /* why it ended; "" while alive */

	struct buf in;   /* channel bytes not yet a whole frame */
	struct buf outq; /* bytes for the driver not yet written */
	struct run *run; /* the run under way, or NULL */
	struct loop_timer *idle_timer, *kill_timer;
	json_object *vars;

	/* The workspace (the host folder, or NULL) and the picture of the
	 * box's upper layer at the last run's end (wsdiff.h): each run
	 * reports what it changed itself. Lent to the run reading the layer
	 * back (snap_lent) until sbx_session_take_snap; gen tells a reset's
	 * box from the one before. */
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
	/* Open (alive) while the zygote's spare is on its way: the box is
	 * empty, a run's frame waits in outq, and the plan waits here for
	 * the rest of the start (on_spare). */
	struct sbx_zygote_wait *zwait;
	struct sbx_plan_owned *zplan;
};

static void on_pipe(struct loop *loop, int fd, unsigned events, void *data);
static void on_ctl(struct loop *loop, int fd, unsigned events, void *data);
static void end_session(struct sbx_session *ss, const char *why, int wstatus, bool have_status);
static void arm_idle(struct sbx_session *ss);

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

static unsigned ctl_events(const struct sbx_session *ss)
{
	return (ss->io_paused ? 0 : LOOP_READ) | (ss->outq.len ? LOOP_WRITE : 0);
}

static void watch_io(struct sbx_session *ss)
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
		loop_modify(ss->loop, ss->box.ctl_fd, ctl_events(ss));
}

void sbx_session_pause_io(struct sbx_session *ss, bool pause)
{
	if (ss->io_paused == pause)
		return;
	ss->io_paused = pause;
	watch_io(ss);
	/* Frames that arrived while paused are handled now. */
	if (!pause && ss->alive && ss->box.ctl_fd >= 0)
		on_ctl(ss->loop, ss->box.ctl_fd, 0, ss);
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
static void drain_pipes(struct sbx_session *ss)
{
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < DRAIN_READS && read_pipe(ss, s) > 0; i++)
			;
}

/* --- the channel ----------------------------------------------------------- */

static int queue_frame(struct sbx_session *ss, json_object *msg)
{
	size_t len = 0;
	const char *body = json_object_to_json_string_length(msg, JSON_C_TO_STRING_PLAIN, &len);
	if (!body)
		return -ENOMEM;
	unsigned char hdr[4] = {(unsigned char)(len >> 24), (unsigned char)(len >> 16),
	                        (unsigned char)(len >> 8), (unsigned char)len};
	if (buf_append(&ss->outq, hdr, 4) < 0 || buf_append(&ss->outq, body, len) < 0)
		return -E2BIG;
	return 0;
}

static void write_out(struct sbx_session *ss)
{
	/* The box is on its way (zwait): the frame goes when it comes. */
	if (ss->box.ctl_fd < 0)
		return;
	while (ss->outq.len) {
		ssize_t n = send(ss->box.ctl_fd, ss->outq.data, ss->outq.len, MSG_NOSIGNAL);
		if (n > 0) {
			buf_consume(&ss->outq, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		/* The driver is gone: its exit tells the rest. */
		buf_reset(&ss->outq);
		break;
	}
	loop_modify(ss->loop, ss->box.ctl_fd, ctl_events(ss));
}

static void drain_pipes(struct sbx_session *ss);

/* A copy of the box's /work for a run's artifacts (run.c reads them off
 * the loop and closes it), or -1. */
static int work_dup(const struct sbx_session *ss)
{
	return ss->box.work_fd >= 0 ? fcntl(ss->box.work_fd, F_DUPFD_CLOEXEC, 3) : -1;
}

static void run_done_frame(struct sbx_session *ss, json_object *msg)
{
	if (ss->run)
		drain_pipes(ss);
	const char *status = "";
	json_get_string(msg, "status", &status);
	int64_t cpu = 0, rss = 0;
	json_get_int64(msg, "cpuMs", &cpu);
	json_get_int64(msg, "maxRssKb", &rss);
	struct run_session_end e = {.cpu_ms = cpu > 0 ? (uint64_t)cpu : 0,
	                            .max_rss_kb = rss > 0 ? rss : 0,
	                            .session_id = ss->id,
	                            .work_fd = -1,
	                            .upper_fd = -1};
	if (strcmp(status, "error") == 0) {
		e.status = RUN_SESSION_ERROR;
		json_object *err = json_get(msg, "error");
		json_get_string(err, "name", &e.error_name);
		json_get_string(err, "value", &e.error_value);
	} else if (strcmp(status, "interrupted") == 0) {
		e.status = RUN_SESSION_INTERRUPTED;
	} else if (strcmp(status, "cpu") == 0) {
		e.status = RUN_SESSION_CPU;
	} else {
		e.status = RUN_SESSION_OK;
	}
	json_object *vars = json_get(msg, "vars");
	if (json_object_is_type(vars, json_type_array)) {
		size_t len = 0;
		json_object_to_json_string_length(vars, JSON_C_TO_STRING_PLAIN, &len);
		if (len <= VARS_MAX_BYTES) {
			json_object_put(ss->vars);
			ss->vars = json_object_get(vars);
		}
	}
	if (ss->killing)
		return; /* too late: the box is being ended */
	if (ss->kill_timer) {
		loop_timer_stop(ss->loop, ss->kill_timer);
		ss->kill_timer = NULL;
	}
	ss->interrupting = false;
	struct run *run = steal_pointer(&ss->run);
	arm_idle(ss);
	if (!run)
		return; /* the end of a run that was cancelled */
	run->session = NULL;
	/* The names it changed under /work/out: strings of at most 4 KiB,
	 * at most 64 of them. Whatever the driver says, only files under
	 * /work/out can be named. */
	const char *changed[SESSION_CHANGED_MAX];
	json_object *ch = json_get(msg, "changed");
	size_t nch = json_object_is_type(ch, json_type_array) ? json_object_array_length(ch) : 0;
	for (size_t i = 0; i < nch && e.nchanged < SESSION_CHANGED_MAX; i++) {
		json_object *v = json_object_array_get_idx(ch, i);
		if (json_object_is_type(v, json_type_string) &&
		    json_object_get_string_len(v) < 4096)
			changed[e.nchanged++] = json_object_get_string(v);
	}
	e.changed = changed;
	e.work_fd = e.nchanged ? work_dup(ss) : -1;
	/* The workspace's layer, to compare with the host and the picture of
	 * the last run's end; the session takes no run until it is back. */
	e.upper_fd = -1;
	if (ss->ws_host && ss->box.upper_fd >= 0 &&
	    (e.upper_fd = fcntl(ss->box.upper_fd, F_DUPFD_CLOEXEC, 3)) >= 0) {
		e.ws_host = ss->ws_host;
		e.snap = steal_pointer(&ss->snap);
		e.snap_gen = ss->gen;
		ss->snap_lent = true;
	}
	/* Last: done may start the next run in this session. */
	struct sandbox *s = ss->sbx;
	run_session_end(run, &e);
	/* A zygote a session asked for is built once the server is idle. */
	sbx_zygote_idle(s);
}

/* One frame from the driver; false when it broke the protocol (why set). */
static bool handle_frame(struct sbx_session *ss, const char *body, size_t len, char *why,
                         size_t whysz)
{
	_cleanup_json_ json_object *msg = NULL;
	char detail[128];
	if (json_parse_strict(body, len, SESSION_FRAME_MAX, &msg, detail, sizeof(detail)) < 0 ||
	    !json_object_is_type(msg, json_type_object)) {
		snprintf(why, whysz, "its channel carried a frame that is not a JSON object");
		return false;
	}
	const char *op = "";
	json_get_string(msg, "op", &op);
	if (strcmp(op, "display") == 0) {
		json_object *data = json_get(msg, "data"), *md = json_get(msg, "metadata");
		if (!sbx_display_bundle_ok(data) ||
		    (md && !json_object_is_type(md, json_type_object))) {
			snprintf(why, whysz, "its channel carried a display kiln cannot read");
			return false;
		}
		if (ss->run) {
			_cleanup_json_ json_object *empty = md ? NULL : json_object_new_object();
			run_session_display(ss->run, data, md ? md : empty, len);
		}
		return true;
	}
	if (strcmp(op, "done") == 0) {
		run_done_frame(ss, msg);
		return true;
	}
	snprintf(why, whysz, "its channel carried an unknown message");
	return false;
}

/* Handle every whole frame in ss->in, each after the text before it. */
static void handle_frames(struct sbx_session *ss)
{
	while (ss->alive && !ss->io_paused && ss->in.len >= 4) {
		const unsigned char *h = (const unsigned char *)ss->in.data;
		uint32_t n =
		    (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
		if (n > SESSION_FRAME_MAX) {
			end_session(ss, "its channel carried a frame over 16 MiB", 0, false);
			return;
		}
		if (ss->in.len < 4 + (size_t)n)
			return;
		char why[128];
		bool ok = handle_frame(ss, ss->in.data + 4, n, why, sizeof(why));
		if (!ok) {
			end_session(ss, why, 0, false);
			return;
		}
		if (ss->alive)
			buf_consume(&ss->in, 4 + (size_t)n);
	}
}

static void on_ctl(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)loop;
	struct sbx_session *ss = data;
	if (events & LOOP_WRITE)
		write_out(ss);
	if (!ss->alive || ss->io_paused)
		return;
	/* Bounded per wake-up: a flood must not starve the loop. */
	for (int i = 0; i < 8 && ss->alive && !ss->io_paused; i++) {
		char buf[65536];
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n <= 0) {
			/* The driver closed its end: it is ending; pid 1's report
			 * says how. Stop watching the hung-up socket. */
			loop_modify(ss->loop, fd, 0);
			break;
		}
		if (buf_append(&ss->in, buf, (size_t)n) < 0) {
			end_session(ss, "its channel carried a frame over 16 MiB", 0, false);
			return;
		}
		handle_frames(ss);
	}
	if (ss->alive)
		handle_frames(ss);
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
static void drop_box(struct sbx_session *ss)
{
	/* The spare stays the zygote's. */
	sbx_zygote_wait_cancel(ss->sbx, steal_pointer(&ss->zwait));
	sbx_plan_free(steal_pointer(&ss->zplan));
	sbx_hide_cancel(ss->sbx, steal_pointer(&ss->hide_req));
	sbx_plan_free(steal_pointer(&ss->go_plan));
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
static void end_session(struct sbx_session *ss, const char *why, int wstatus, bool have_status)
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
	drop_box(ss);
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

static void on_status(struct loop *loop, int fd, unsigned events, void *data)
{
	struct sbx_session *ss = data;
	bool end = sbx_box_read_status(&ss->box) || (events & (LOOP_HUP | LOOP_ERR));
	if (end)
		loop_unwatch(loop, fd);
	char why[sizeof(ss->why)];
	if (ss->box.failed) {
		snprintf(why, sizeof(why), "the session's box could not be built (%s failed: %s)",
		         sbx_step_name(ss->box.fail_step), strerror(ss->box.fail_err));
		end_session(ss, why, 0, false);
	} else if (ss->box.have_exit) {
		if (ss->why[0])
			snprintf(why, sizeof(why), "%s", ss->why);
		else
			describe_status(why, sizeof(why), ss->box.exit_msg.wstatus, &ss->life);
		end_session(ss, why, ss->box.exit_msg.wstatus, true);
	}
}

static void on_pid1(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)events;
	struct sbx_session *ss = data;
	if (!sbx_pidfd_reap(fd))
		return;
	loop_unwatch(loop, fd);
	ss->box.reaped = true;
	sbx_box_read_status(&ss->box);
	if (ss->box.have_exit) {
		on_status(loop, ss->box.status_fd, LOOP_HUP, ss);
		return;
	}
	end_session(ss, ss->why[0] ? ss->why : "the session's box ended without a report", SIGKILL,
	            false);
}

static void on_kill_timer(struct loop *loop, void *data)
{
	(void)loop;
	struct sbx_session *ss = data;
	ss->kill_timer = NULL;
	if (ss->killing) {
		/* pid 1 itself did not answer: kill the box from here. */
		end_session(ss, ss->why, SIGKILL, true);
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
		end_session(ss, ss->why, SIGKILL, true);
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
	arm_idle(ss);
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
	if (ss->zwait) {
		/* Its frame (the one outq can hold then) is not sent. */
		buf_reset(&ss->outq);
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
	if (ss->zwait) {
		/* Its frame has not left: the code never runs. */
		buf_reset(&ss->outq);
		arm_idle(ss);
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
	end_session(ss, why, 0, false);
}

static void arm_idle(struct sbx_session *ss)
{
	if (ss->idle_timer)
		loop_timer_stop(ss->loop, ss->idle_timer);
	ss->idle_timer = NULL;
	if (ss->alive && !ss->run && ss->sbx->config.session_idle_ms)
		ss->idle_timer =
		    loop_timer_start(ss->loop, ss->sbx->config.session_idle_ms, on_idle, ss);
}

/* --- open, run, reset, close ------------------------------------------------- */

/* GO for the session's box: the driver. */
static int send_driver_go(struct sbx_session *ss, const struct sbx_plan_owned *po,
                          const struct sbx_rlimit *rl, size_t nrl, int hide_fd)
{
	char driver_arg[] = "/" DRIVER_PATH;
	char *argv[] = {po->plan.argv[0], driver_arg, NULL};
	return sbx_box_send_go(&ss->box, po, DRIVER_PATH, argv, rl, nrl, sbx_session_driver,
	                       hide_fd);
}

/* The list of what to hide is ready: the driver starts, or the session
 * ends saying why. */
static void on_hide_list(void *data, int fd, const char *why)
{
	struct sbx_session *ss = data;
	ss->hide_req = NULL;
	struct sbx_plan_owned *po = steal_pointer(&ss->go_plan);
	int r = fd < 0           ? fd
	        : ss->zygote_box ? sbx_zygote_send_hide(&ss->box, fd)
	                         : send_driver_go(ss, po, ss->go_rl, ss->go_nrl, fd);
	sbx_plan_free(po);
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		char msg[sizeof(ss->why)];
		snprintf(msg, sizeof(msg), "kiln could not start the session: %s",
		         fd < 0 ? why : strerror(-r));
		end_session(ss, msg, 0, false);
	}
}

static void on_spare(void *data, int r);

/* The driver forked from the Python zygote (zygote.h), when it is on and
 * ready: its imports are the zygote's, its box is a fresh one like a
 * built session box (with the workspace, its pid 1 waits for the list of
 * what to hide, as a built box's does for GO). 0, -EINPROGRESS (the
 * spare is on its way: on_spare), or -errno (then the box is built as
 * below). */
static int from_zygote(struct sbx_session *ss, const struct sbx_plan_owned *po)
{
	char *layout = sbx_plan_layout(&po->plan);
	if (!layout)
		return -ENOMEM;
	int r = sbx_zygote_take_session(ss->sbx, po, layout, &ss->life, "/" DRIVER_PATH,
	                                sbx_session_driver, &ss->box, on_spare, ss, &ss->zwait);
	free(layout);
	return r;
}

/* Start the driver in the box, the zygote's (zygote true) or one built
 * now, and watch it. po is taken. */
static int start_driver(struct sbx_session *ss, struct sbx_plan_owned *po, bool zygote, char *err,
                        size_t errsz)
{
	struct sandbox *s = ss->sbx;
	int step = -1;
	int r = zygote ? 0 : sbx_box_build(s, po, SBX_BOX_SESSION, &ss->box, &step, err, errsz);
	if (r < 0) {
		if (step >= 0)
			snprintf(err, errsz,
			         "kiln cannot open the session: the sandbox could not be built (%s "
			         "failed: %s).%s",
			         sbx_step_name(step), strerror(-r), sbx_failure_hint(step, -r));
		sbx_plan_free(po);
		return r;
	}
	if (ss->box.cg && (r = sbx_cgroup_set_limits(ss->box.cg, ss->life.memory_bytes,
	                                             ss->life.processes, ss->life.cpu_cores)) < 0)
		log_warn("session %s: the cgroup took only some limits: %s", ss->id, strerror(-r));
	/* The session lives longer than one run's CPU time: each run's is
	 * the driver's to set (a soft RLIMIT_CPU), and the wall clock holds
	 * whatever the code does to it. */
	struct sbx_rlimit rl[SBX_MAX_RLIMITS];
	size_t nrl = sbx_plan_rlimits_for(&ss->life, "python", rl);
	for (size_t i = 0; i < nrl; i++)
		if (rl[i].resource == RLIMIT_CPU)
			rl[i].lim.rlim_cur = rl[i].lim.rlim_max = RLIM_INFINITY;
	ss->zygote_box = zygote;
	if (zygote && !po->plan.ws_host) {
		/* From the zygote, the driver is on its way already (and r may
		 * hold the cgroup's warning above). */
		r = 0;
		sbx_plan_free(po);
	} else if (po->plan.ws_host) {
		/* GO when the list is ready; the box builds meanwhile. */
		memcpy(ss->go_rl, rl, nrl * sizeof(*rl));
		ss->go_nrl = nrl;
		ss->go_plan = po;
		r = sbx_hide_request(s, on_hide_list, ss, &ss->hide_req);
	} else {
		r = send_driver_go(ss, po, rl, nrl, -1);
		sbx_plan_free(po);
	}
	if (r < 0) {
		snprintf(err, errsz, "kiln cannot open the session: cannot start its program (%s)",
		         strerror(-r));
		sbx_plan_free(steal_pointer(&ss->go_plan));
		sbx_box_release(s, &ss->box);
		return r;
	}
	struct loop *loop = ss->loop;
	if (loop_watch(loop, ss->box.pidfd, LOOP_READ, on_pid1, ss) < 0 ||
	    loop_watch(loop, ss->box.status_fd, LOOP_READ, on_status, ss) < 0 ||
	    loop_watch(loop, ss->box.ctl_fd, LOOP_READ, on_ctl, ss) < 0) {
		drop_box(ss);
		return -ENOMEM;
	}
	ss->alive = true;
	ss->why[0] = '\0';
	/* A run's frame that waited for the box goes now (LOOP_WRITE). */
	watch_io(ss);
	arm_idle(ss);
	log_debug("session %s: pid %d%s", ss->id, (int)ss->box.pid,
	          zygote ? ", from the zygote" : "");
	return 0;
}

/* The zygote's spare the session waited for came (r >= 0: its box holds
 * it) or did not (its box is built now). If the driver cannot start,
 * the session ends with why, and a run under way is answered so. */
static void on_spare(void *data, int r)
{
	struct sbx_session *ss = data;
	ss->zwait = NULL;
	char err[sizeof(ss->why)];
	r = start_driver(ss, steal_pointer(&ss->zplan), r >= 0, err, sizeof(err));
	if (r >= 0)
		return;
	if (r == -ENOMEM)
		snprintf(err, sizeof(err), "kiln cannot open the session: out of memory");
	/* drop_box (above) or not: it is over either way. */
	ss->alive = true;
	end_session(ss, err, 0, false);
}

/* Build the box and start the driver; or, when the zygote's spare is on
 * its way, open the session without a box: it is alive, a run's frame
 * waits, and the start goes on from the loop (on_spare). */
static int start_box(struct sbx_session *ss, char *err, size_t errsz)
{
	struct sandbox *s = ss->sbx;
	struct sbx_plan_owned *po = NULL;
	int r = sbx_box_plan(s, ss->language, &ss->life, &po, err, errsz);
	if (r < 0)
		return r;
	/* A fresh box: a fresh, empty upper layer. */
	ss->gen++;
	sbx_ws_snap_free(steal_pointer(&ss->snap));
	ss->snap_lent = false;
	free(ss->ws_host);
	ss->ws_host = po->plan.ws_host ? strdup(po->plan.ws_host) : NULL;
	r = from_zygote(ss, po);
	if (r != -EINPROGRESS)
		return start_driver(ss, po, r >= 0, err, errsz);
	ss->zplan = po;
	ss->alive = true;
	ss->why[0] = '\0';
	arm_idle(ss);
	log_debug("session %s: waits for the zygote's box", ss->id);
	return 0;
}

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
	drop_box(ss);
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
		r = start_box(ss, err, errsz);
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
	r = queue_frame(ss, req);
	json_object_put(req);
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
	write_out(ss);
	*ret_run = run;
	return 0;
}

int sbx_session_reset(struct sbx_session *ss, char *err, size_t errsz)
{
	err[0] = '\0';
	stop_timers(ss);
	struct run *run = steal_pointer(&ss->run);
	drop_box(ss);
	snprintf(ss->why, sizeof(ss->why), "the session was reset (session/reset)");
	if (run)
		end_run_now(run, ss->id, ss->why);
	json_object_put(ss->vars);
	ss->vars = NULL;
	int r = start_box(ss, err, errsz);
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
