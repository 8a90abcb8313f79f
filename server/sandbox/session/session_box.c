/* session_box.c: a session's box watched and ended (see
 * session_box.h): its pipes read into the run under way, its
 * channel's events, its idle timer, its status socket and pid 1, and
 * its end, told to the run under way. The base of session/: the
 * channel (session_channel.c), the start (session_start.c) and the
 * session's API (session.c) stand on it. */
#include "sandbox/session/session_box.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "sandbox/box/box.h"
#include "sandbox/box/child.h"
#include "sandbox/box/plan.h"
#include "sandbox/host/base.h"
#include "sandbox/host/reap.h"
#include "sandbox/pools/zygote.h"
#include "sandbox/run/run_private.h"
#include "sandbox/state.h"
#include "sandbox/workspace/hide.h"

/* After an interrupt, how long the code has to stop before the session
 * is ended. */
#define SESSION_GRACE_MS 2000

/* Reads of a pipe before a frame is handled: the text the code wrote
 * before a display goes out first. */
#define DRAIN_READS 16

static void on_pipe(struct loop *loop, int fd, unsigned events, void *data);

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

void sess_send_interrupt(struct sbx_session *ss)
{
	/* pid 1 passes it to the program's process group. */
	syscall(SYS_pidfd_send_signal, ss->box.pidfd, SIGINT, NULL, 0);
	ss->kill_timer = loop_timer_start(ss->loop, SESSION_GRACE_MS, on_kill_timer, ss);
}

void sess_stop_timers(struct sbx_session *ss)
{
	struct loop_timer **t[] = {&ss->idle_timer, &ss->kill_timer, &ss->waiting_timer};
	for (size_t i = 0; i < ARRAY_SIZE(t); i++)
		if (*t[i]) {
			loop_timer_stop(ss->loop, *t[i]);
			*t[i] = NULL;
		}
}

struct run *sess_take_waiting(struct sbx_session *ss)
{
	struct run *run = steal_pointer(&ss->waiting);
	json_object_put(steal_pointer(&ss->waiting_frame));
	if (ss->waiting_timer) {
		loop_timer_stop(ss->loop, ss->waiting_timer);
		ss->waiting_timer = NULL;
	}
	if (run)
		run->owner = NULL;
	return run;
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
	/* A decline awaiting the driver's answer ends now (the layer is
	 * gone); one in a job finds the box gone when the job is done. */
	if (ss->decline && ss->decline_waiting)
		ss->decline_ops->gone(ss);
	ss->decline = NULL;
	ss->decline_waiting = false;
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
		sbx_box_reap_later(&ss->sbx->base, &ss->box);
	sbx_box_release(&ss->sbx->base, &ss->box);
	ss->alive = false;
	buf_reset(&ss->in);
	buf_reset(&ss->outq);
	ss->io_paused = false;
	ss->interrupting = ss->killing = false;
	ss->started = ss->interrupt_wanted = false;
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
	sess_stop_timers(ss);
	/* What the code wrote last still reaches the run. */
	if (ss->run)
		for (int s = 0; s < 2; s++)
			while (ss->box.fds[s] >= 0 && read_pipe(ss, s) > 0)
				;
	sess_drop_box(ss);
	struct run *run = steal_pointer(&ss->run);
	/* A run waiting for the end of an interrupt ends with the session. */
	struct run *waiting = sess_take_waiting(ss);
	struct run_session_end e = {.status = RUN_SESSION_DIED,
	                            .wstatus = have_status ? wstatus : SIGKILL,
	                            .session_id = ss->id,
	                            .why = ss->why,
	                            .work_fd = -1,
	                            .upper_fd = -1};
	if (run) {
		run->owner = NULL;
		run_session_end(run, &e);
	}
	if (waiting)
		run_session_end(waiting, &e);
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
	if (ss->alive && !ss->run && !ss->waiting && ss->sbx->config.session_idle_ms)
		ss->idle_timer =
		    loop_timer_start(ss->loop, ss->sbx->config.session_idle_ms, on_idle, ss);
}
