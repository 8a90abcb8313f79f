/* session_channel.c: a session's channel to its driver (see session.h):
 * frames queued for it and written as the socket takes them, and the
 * frames it sends read, checked (strict JSON of a known shape, at most
 * SESSION_FRAME_MAX bytes) and handled: displays, the run's end (its
 * artifacts and changed files), the session's description. Anything else
 * ends the session with the reason. */
#include "sandbox/session/session_box.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/json.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "sandbox/output/display.h"
#include "sandbox/run/run_private.h"
#include "sandbox/state.h"
#include "sandbox/pools/zygote.h"

/* The driver's description of the session, kept as it came. */
#define VARS_MAX_BYTES (64u * 1024)
/* The files a run may hand back as artifacts. */
#define SESSION_CHANGED_MAX 64

int sess_queue_frame(struct sbx_session *ss, json_object *msg)
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

void sess_write_out(struct sbx_session *ss)
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
	loop_modify(ss->loop, ss->box.ctl_fd, sess_ctl_events(ss));
}

void sess_drain_pipes(struct sbx_session *ss);

/* A copy of the box's /work for a run's artifacts (run_exit.c reads them off
 * the loop and closes it), or -1. */
static int work_dup(const struct sbx_session *ss)
{
	return ss->box.work_fd >= 0 ? fcntl(ss->box.work_fd, F_DUPFD_CLOEXEC, 3) : -1;
}

static void run_done_frame(struct sbx_session *ss, json_object *msg)
{
	if (ss->run)
		sess_drain_pipes(ss);
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
	ss->interrupting = ss->started = ss->interrupt_wanted = false;
	struct run *run = steal_pointer(&ss->run);
	sess_arm_idle(ss);
	if (!run) {
		/* The end of a run that was cancelled: the run asked for
		 * meanwhile goes now. */
		if (ss->waiting)
			ss->start_waiting(ss);
		return;
	}
	run->owner = NULL;
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
	/* A zygote a session asked for is built once the server is idle;
	 * the next spare, once the session's next run did not come at once
	 * (it would share the CPUs with the zygote's clone). */
	sbx_zygote_session_idle(s);
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
	if (strcmp(op, "started") == 0) {
		/* The driver took the run: an interrupt asked for before
		 * now reaches it. */
		ss->started = true;
		if (ss->interrupt_wanted && !ss->killing && !ss->kill_timer) {
			ss->interrupt_wanted = false;
			sess_send_interrupt(ss);
		}
		return true;
	}
	if (strcmp(op, "done") == 0) {
		run_done_frame(ss, msg);
		return true;
	}
	if (strcmp(op, "declined") == 0) {
		/* The answer to a decline (session_decline.c): only when one
		 * was asked for. */
		if (!ss->decline || !ss->decline_waiting) {
			snprintf(why, whysz, "its channel carried an answer to nothing asked");
			return false;
		}
		ss->decline_ops->reply(ss, msg);
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
			sess_end_session(ss, "its channel carried a frame over 16 MiB", 0, false);
			return;
		}
		if (ss->in.len < 4 + (size_t)n)
			return;
		char why[128];
		bool ok = handle_frame(ss, ss->in.data + 4, n, why, sizeof(why));
		if (!ok) {
			sess_end_session(ss, why, 0, false);
			return;
		}
		if (ss->alive)
			buf_consume(&ss->in, 4 + (size_t)n);
	}
}

void sess_on_ctl(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)loop;
	struct sbx_session *ss = data;
	if (events & LOOP_WRITE)
		sess_write_out(ss);
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
			sess_end_session(ss, "its channel carried a frame over 16 MiB", 0, false);
			return;
		}
		handle_frames(ss);
	}
	if (ss->alive)
		handle_frames(ss);
}
