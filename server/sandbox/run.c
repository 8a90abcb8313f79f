/* run.c: one sandboxed run in the event loop (see run.h). run_start
 * builds the plan, takes the warm box (warm.c) or clones one, and sends
 * pid 1 the program (GO); from then on everything is a callback: pipe
 * data becomes coalesced, UTF-8-safe output; the status socket brings the
 * workspace fd and the program's status; the pidfd says pid 1 is gone;
 * timers enforce the wall clock. The run ends when both pipes are at EOF
 * and pid 1 has reported the program's end (or is gone). */
#include "sandbox/run.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/json.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "sandbox/artifact.h"
#include "sandbox/box.h"
#include "sandbox/cgroup.h"
#include "sandbox/child.h"
#include "sandbox/display.h"
#include "sandbox/hide.h"
#include "sandbox/job.h"
#include "sandbox/limits.h"
#include "sandbox/plan.h"
#include "sandbox/run_private.h"
#include "sandbox/sandbox.h"
#include "sandbox/session.h"
#include "sandbox/text.h"
#include "sandbox/zygote.h"

/* Output is sent at most this often per run, or when this much is held. */
#define COALESCE_MS    20
#define COALESCE_BYTES (256u * 1024)
/* Output that needs no escape goes to the sink's relay from this length
 * on; shorter pieces are coalesced and copied (a message of their own,
 * with its syscalls, would cost more than the copy saves). */
#define RELAY_MIN (16u * 1024)
/* After asking pid 1 to end the box, how long before SIGKILL. */
#define GRACE_MS 2000

static void maybe_finish(struct run *run);

/* A session's run: hand the session's workspace picture back (see
 * run_private.h), the new one or, when the layer was not read, the old. */
static void give_snap(struct sandbox *s, const char *sess_id, unsigned gen, bool *lent,
                      struct sbx_ws_snap *snap)
{
	if (!*lent) {
		sbx_ws_snap_free(snap);
		return;
	}
	*lent = false;
	sbx_session_take_snap(s, sess_id, gen, snap);
}

const char *run_id(const struct run *run)
{
	return run->id;
}

const char *run_stream_name(enum run_stream s)
{
	return s == RUN_STDERR ? "stderr" : "stdout";
}

static void pause_reading(struct run *run);

/* --- output -------------------------------------------------------------- */

/* Hand what is held to the sink; it may answer that reading pauses. */
static void flush_output(struct run *run)
{
	if (run->flush_timer) {
		loop_timer_stop(run->loop, run->flush_timer);
		run->flush_timer = NULL;
	}
	enum run_flow flow = RUN_CONTINUE;
	if (run->pending.len && run->pending_stream >= 0)
		flow = run->sink->output(run->sink_data, run, (enum run_stream)run->pending_stream,
		                         run->pending.data, run->pending.len);
	buf_reset(&run->pending);
	if (flow == RUN_PAUSE)
		pause_reading(run);
}

static void on_flush_timer(struct loop *loop, void *data)
{
	(void)loop;
	struct run *run = data;
	run->flush_timer = NULL;
	flush_output(run);
}

/* The longest prefix of the new text that fits the room left under
 * outputBytes, as the sink counts it (run.h); the room shrinks by its cost.
 * Returns false when the text was cut. */
static bool count_text(struct run *run, struct buf *b, size_t from)
{
	uint64_t room = run->limits.output_bytes - run->out_bytes, cost;
	size_t n = b->len - from, fit;
	if (run->sink->measure) {
		fit = run->sink->measure(b->data + from, n, room, &cost);
	} else {
		fit = n;
		if (fit > room) /* cut on a character boundary */
			for (fit = (size_t)room; fit > 0 && (b->data[from + fit] & 0xc0) == 0x80;)
				fit--;
		cost = fit;
	}
	run->out_bytes += cost;
	b->len = from + fit;
	return fit == n;
}

/* Add decoded text of stream s; flush first when the stream changes so
 * that notifications keep the order the bytes arrived in. Counted text
 * (the program's, not kiln's marker) is cut where outputBytes is reached;
 * returns false then. */
static bool add_text(struct run *run, int s, const char *bytes, size_t n, bool final, bool counted)
{
	if (run->pending_stream != s && run->pending.len)
		flush_output(run);
	run->pending_stream = s;
	size_t before = run->pending.len;
	if (sbx_utf8_decode(&run->dec[s], bytes, n, final, &run->pending) < 0) {
		flush_output(run);
		before = 0;
		sbx_utf8_decode(&run->dec[s], bytes, n, final, &run->pending);
	}
	bool whole = !counted || count_text(run, &run->pending, before);
	sbx_tail_add(&run->tail[s], run->pending.data + before, run->pending.len - before);
	if (run->pending.len >= COALESCE_BYTES)
		flush_output(run);
	else if (run->pending.len && !run->flush_timer)
		run->flush_timer = loop_timer_start(run->loop, COALESCE_MS, on_flush_timer, run);
	return whole;
}

static void signal_box(struct run *run, int sig)
{
	if (run->box.pidfd >= 0 && !run->box.reaped)
		syscall(SYS_pidfd_send_signal, run->box.pidfd, sig, NULL, 0);
}

static void on_grace(struct loop *loop, void *data)
{
	(void)loop;
	struct run *run = data;
	run->grace_timer = NULL;
	log_warn("run %s: pid 1 did not end the box in time; killing it", run->id);
	if (run->box.cg)
		sbx_cgroup_kill(run->box.cg);
	signal_box(run, SIGKILL);
}

/* Ask pid 1 to kill everything and report (SIGUSR1), SIGKILL later. */
static void end_box(struct run *run)
{
	if (run->killing)
		return;
	run->killing = true;
	/* In a session the code is interrupted first; the session ends
	 * itself only when that does not work (session.c). */
	if (run->session) {
		sbx_session_interrupt(run->session);
		return;
	}
	signal_box(run, SIGUSR1);
	run->grace_timer = loop_timer_start(run->loop, GRACE_MS, on_grace, run);
}

static void stream_eof(struct run *run, int s)
{
	if (run->box.fds[s] < 0)
		return;
	loop_unwatch(run->loop, run->box.fds[s]);
	close(run->box.fds[s]);
	run->box.fds[s] = -1;
	add_text(run, s, "", 0, true, true);
	maybe_finish(run);
}

/* outputBytes counts the text as the sink sends it (run.h's measure):
 * for the client, JSON with its escapes, so 1 MiB of control bytes is
 * the 6 MiB the client receives, and each invalid byte the three of its
 * U+FFFD. */
static void on_bytes(struct run *run, int s, const char *buf, size_t n)
{
	if (run->truncated)
		return;
	if (add_text(run, s, buf, n, false, true))
		return;
	run->truncated = true;
	run->dec[s].ncarry = 0; /* past the cut: not sent, not a U+FFFD */
	char marker[128];
	int m = snprintf(marker, sizeof(marker),
	                 "\n[kiln: output stopped after %llu bytes; the run was ended]\n",
	                 (unsigned long long)run->limits.output_bytes);
	add_text(run, s, marker, (size_t)m, true, false);
	flush_output(run);
	end_box(run);
}

/* The relay's scratch pipe (as large as a read) and /dev/null; -errno
 * once they cannot be had. */
static int relay_fds(struct sandbox *sbx)
{
	if (sbx->relay_off)
		return -ENOSYS;
	if (sbx->relay_null >= 0)
		return 0;
	if (pipe2(sbx->relay_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		sbx->relay_pipe[0] = sbx->relay_pipe[1] = -1;
		sbx->relay_off = true;
		return -errno;
	}
	fcntl(sbx->relay_pipe[1], F_SETPIPE_SZ, COALESCE_BYTES);
	sbx->relay_null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (sbx->relay_null < 0) {
		close(sbx->relay_pipe[0]);
		close(sbx->relay_pipe[1]);
		sbx->relay_pipe[0] = sbx->relay_pipe[1] = -1;
		sbx->relay_off = true;
		return -ENOSYS;
	}
	return 0;
}

/* Drop up to n bytes from the front of pipe fd without reading them;
 * how many were dropped (all, unless splice fails). */
static size_t relay_drop(struct sandbox *sbx, int fd, size_t n)
{
	size_t done = 0;
	while (done < n) {
		ssize_t m = splice(fd, NULL, sbx->relay_null, NULL, n - done, SPLICE_F_NONBLOCK);
		if (m < 0 && errno == EINTR)
			continue;
		if (m <= 0)
			break;
		done += (size_t)m;
	}
	return done;
}

/* Output that can go to the client as it is, without the server copying
 * it (run.h's relay; docs/performance.md, "The output relay"): tee(2)
 * the box's pipe into the scratch pipe and read that copy into buf, to
 * check it while the bytes stay in the box's pipe. Its longest prefix of
 * whole UTF-8 characters that the sink sends as they are (no JSON escape)
 * and that fits outputBytes, when long enough to be worth a message of
 * its own, is handed to the sink's relay, which splices it from the box's
 * pipe to the client's. What is left of the bytes read (or all of them)
 * is dropped from the box's pipe and goes the usual way, from buf. So
 * every byte leaves the box's pipe exactly once, in order, and the bytes
 * handled are the bytes checked. -EAGAIN when the pipe was empty;
 * -ENOSYS when the relay cannot be used (the caller reads). */
static int relay_output(struct run *run, int s, int fd, char *buf, size_t size)
{
	struct sandbox *sbx = run->sbx;
	if (run->dec[s].ncarry || relay_fds(sbx) < 0)
		return -ENOSYS;
	/* No more than the sink can take now: then what is checked is what
	 * goes out, and nothing is checked twice. */
	enum run_flow flow = RUN_CONTINUE;
	size_t room = run->sink->relay_room(run->sink_data, run, &flow);
	if (flow == RUN_PAUSE) {
		pause_reading(run);
		return 0;
	}
	if (room < RELAY_MIN)
		return -ENOSYS;
	ssize_t n = tee(fd, sbx->relay_pipe[1], room < size ? room : size, SPLICE_F_NONBLOCK);
	if (n < 0 && errno == EAGAIN)
		return -EAGAIN;
	if (n <= 0) /* the end of the stream, or not a pipe: read() says */
		return -ENOSYS;
	size_t got = 0;
	while (got < (size_t)n) {
		ssize_t r = read(sbx->relay_pipe[0], buf + got, (size_t)n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			/* Cannot happen with a pipe of our own; if it does,
			 * stop relaying (the box's bytes are all still there). */
			log_error("run %s: the output relay's pipe failed; reading instead",
			          run->id);
			close(sbx->relay_pipe[0]);
			close(sbx->relay_pipe[1]);
			sbx->relay_pipe[0] = sbx->relay_pipe[1] = -1;
			close(sbx->relay_null);
			sbx->relay_null = -1;
			sbx->relay_off = true;
			return -ENOSYS;
		}
		got += (size_t)r;
	}
	size_t k = run->sink->plain(buf, got);
	uint64_t budget = run->limits.output_bytes - run->out_bytes;
	if (k > budget) /* cut on a character boundary */
		for (k = (size_t)budget; k > 0 && (buf[k] & 0xc0) == 0x80;)
			k--;
	size_t took = 0;
	if (k >= RELAY_MIN) {
		/* What is held goes first: output keeps its order. */
		flush_output(run);
		if (run->paused)
			return 0; /* the bytes wait in the box's pipe */
		took = run->sink->relay(run->sink_data, run, (enum run_stream)s, buf, k, fd, &flow);
		run->out_bytes += took;
		sbx_tail_add(&run->tail[s], buf, took);
		if (flow == RUN_PAUSE) {
			pause_reading(run);
			return 0; /* the rest waits in the box's pipe */
		}
	}
	if (took == got)
		return 0;
	/* The rest goes the usual way: dropped from the box's pipe, handled
	 * from buf. */
	size_t at = took + relay_drop(sbx, fd, got - took);
	while (at < got) {
		/* splice failed: read instead, the same bytes into the same
		 * place. */
		ssize_t m = read(fd, buf + at, got - at);
		if (m < 0 && errno == EINTR)
			continue;
		if (m <= 0)
			break;
		at += (size_t)m;
	}
	on_bytes(run, s, buf + took, at - took);
	return 0;
}

static void on_pipe(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)loop;
	(void)events;
	struct run *run = data;
	int s = fd == run->box.fds[OUT] ? OUT : ERR;
	if (run->paused)
		return;
	/* One read takes up to a notification's worth (COALESCE_BYTES) of
	 * the box's 256 KiB pipe (box.c); static: the loop has one thread. */
	static char buf[COALESCE_BYTES];
	if (run->sink->relay && !run->truncated) {
		int r = relay_output(run, s, fd, buf, sizeof(buf));
		if (r != -ENOSYS)
			return;
	}
	ssize_t n = read(fd, buf, sizeof(buf));
	if (n > 0)
		on_bytes(run, s, buf, (size_t)n);
	else if (n == 0 || (errno != EAGAIN && errno != EINTR))
		stream_eof(run, s);
}

void run_resume_output(struct run *run)
{
	if (!run->paused)
		return;
	run->paused = false;
	if (run->session) {
		sbx_session_pause_io(run->session, false);
		return;
	}
	for (int s = 0; s < 2; s++)
		if (run->box.fds[s] >= 0 &&
		    loop_watch(run->loop, run->box.fds[s], LOOP_READ, on_pipe, run) < 0)
			log_error("run %s: cannot watch its output again", run->id);
}

/* The sink cannot take more now: stop reading the pipes, so the program
 * blocks on a full pipe instead of the server queueing without end. Not
 * watched at all meanwhile: a pipe whose writer is gone would report its
 * hang-up whatever it is watched for, and wake the loop without end. */
static void pause_reading(struct run *run)
{
	if (run->paused)
		return;
	run->paused = true;
	if (run->session) {
		sbx_session_pause_io(run->session, true);
		return;
	}
	for (int s = 0; s < 2; s++)
		if (run->box.fds[s] >= 0)
			loop_unwatch(run->loop, run->box.fds[s]);
}

/* --- status and exit ----------------------------------------------------- */

static void on_status(struct loop *loop, int fd, unsigned events, void *data)
{
	struct run *run = data;
	/* At its end (pid 1 is exiting) stop watching: epoll reports a hung
	 * up fd whatever events it is watched for. */
	if (sbx_box_read_status(&run->box) || (events & (LOOP_HUP | LOOP_ERR)))
		loop_unwatch(loop, fd);
	/* EXIT may be the last thing the run was waiting for. */
	maybe_finish(run);
}

static void on_pid1_exit(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)events;
	struct run *run = data;
	if (!sbx_pidfd_reap(fd))
		return;
	run->box.reaped = true;
	run->end_ms = loop_now_ms();
	loop_unwatch(loop, fd);
	sbx_box_read_status(&run->box);
	if (run->grace_timer) {
		loop_timer_stop(loop, run->grace_timer);
		run->grace_timer = NULL;
	}
	if (run->wall_timer) {
		loop_timer_stop(loop, run->wall_timer);
		run->wall_timer = NULL;
	}
	maybe_finish(run);
}

static void on_wall(struct loop *loop, void *data)
{
	(void)loop;
	struct run *run = data;
	run->wall_timer = NULL;
	run->timed_out = true;
	end_box(run);
}

/* A sentence on why the box could not be built and what to do. */
static void describe_failure(struct run *run, int step, int err)
{
	if (step == SBX_STEP_HIDE && run->hide_why[0]) {
		/* The server's walk failed (hide.c): its own sentence. */
		snprintf(run->errmsg, sizeof(run->errmsg), "kiln will not run this code: %s",
		         run->hide_why);
		run->err = -(err ? err : EPERM);
		return;
	}
	snprintf(run->errmsg, sizeof(run->errmsg),
	         "kiln will not run this code: the sandbox could not be built (%s failed: %s). "
	         "Code never runs outside the sandbox.%s",
	         sbx_step_name(step), strerror(err), sbx_failure_hint(step, err));
	run->err = -(err ? err : EPERM);
}

/* How the run ended, from what pid 1 reported and the cgroup saw. */
static void fill_outcome(const struct run *run, struct run_outcome *o)
{
	*o = (struct run_outcome){.run_id = run->id,
	                          .timed_out = run->timed_out,
	                          .truncated = run->truncated,
	                          .warm = run->from_warm,
	                          .limits = run->limits};
	int st = run->box.exit_msg.wstatus;
	if (run->box.have_exit && WIFEXITED(st)) {
		o->exited = true;
		o->exit_code = WEXITSTATUS(st);
	} else {
		o->signal = run->box.have_exit && WIFSIGNALED(st) ? WTERMSIG(st) : SIGKILL;
	}
	uint64_t end = run->end_ms ? run->end_ms : loop_now_ms();
	o->duration_ms = end - run->start_ms;
	const struct rusage *ru = &run->box.exit_msg.ru;
	o->cpu_ms = (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000 +
	            (uint64_t)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1000;
	o->max_rss_kb = ru->ru_maxrss;
	o->enforced = run->box.cg ? sbx_cgroup_enforced(run->box.cg) : 0;
	o->have_cgroup = run->box.cg && sbx_cgroup_stats(run->box.cg, &o->cgroup) >= 0;
}

/* The end of a run whose program has ended: hand over the artifacts
 * found (or none), free the run, then tell its owner. */
static void finish_run(struct run *run, const struct sbx_artifacts *found,
                       const struct sbx_ws_changes *changes, const struct sbx_displays *shown)
{
	/* A one-shot run's displays (display.h): after its output, before
	 * its artifacts and its end. */
	if (shown && shown->dropped) {
		char marker[160];
		int m =
		    snprintf(marker, sizeof(marker),
		             "\n[kiln: %zu display%s of this run did not fit in its output limit "
		             "or could not be read]\n",
		             shown->dropped, shown->dropped == 1 ? "" : "s");
		add_text(run, ERR, marker, (size_t)m, true, false);
		flush_output(run);
	}
	for (size_t i = 0; shown && i < shown->n && run->sink->display; i++) {
		struct run_display d = {
		    .run_id = run->id, .data = shown->data[i], .metadata = shown->metadata[i]};
		run->sink->display(run->sink_data, run, &d);
	}
	for (size_t i = 0; found && i < found->n; i++)
		run->sink->artifact(run->sink_data, run, &found->items[i]);
	/* Free the run before calling done (which may start another run);
	 * the tails and the id are copied out first. */
	static char tails[2][SBX_TAIL_MAX + 1];
	for (int s = 0; s < 2; s++)
		snprintf(tails[s], sizeof(tails[s]), "%s", sbx_tail_str(&run->tail[s]));
	static char id[sizeof(run->id)];
	snprintf(id, sizeof(id), "%s", run->id);
	struct run_outcome oc = run->outcome;
	oc.run_id = id;
	oc.stdout_tail = tails[OUT];
	oc.stderr_tail = tails[ERR];
	/* The workspace's name outlives the run for the call. */
	static char ws[PATH_MAX];
	oc.workspace = NULL;
	oc.ws_changes = NULL;
	if (run->workspace) {
		snprintf(ws, sizeof(ws), "%s", run->workspace);
		oc.workspace = ws;
		oc.ws_changes = changes;
	}
	static char sess[4][1024];
	const char **ss[] = {&oc.session_id, &oc.session_why, &oc.error_name, &oc.error_value};
	for (size_t i = 0; i < ARRAY_SIZE(ss); i++)
		if (*ss[i]) {
			snprintf(sess[i], sizeof(sess[i]), "%s", *ss[i]);
			*ss[i] = sess[i];
		}
	if (run->in_session) {
		give_snap(run->sbx, run->sess_id, run->snap_gen, &run->snap_lent,
		          steal_pointer(&run->snap));
		run_done_fn d = run->done;
		void *dd = run->done_data;
		run_free(run);
		d(dd, &oc, 0, NULL);
		return;
	}
	/* The next run like this one finds its box built: built once this
	 * one is over, so that building it takes no CPU from this one. */
	struct sandbox *s = run->sbx;
	char language[sizeof(run->language)];
	snprintf(language, sizeof(language), "%s", run->language);
	s->warm_limits = run->limits;
	s->have_warm_limits = true;
	bool from_zygote = run->from_zygote;
	run_done_fn done = run->done;
	void *done_data = run->done_data;
	/* What the box leaves to be released off the loop (its workspace's
	 * fds, its cgroup) is handed to job threads only after the reply:
	 * starting a thread before it took a /bin/true run 0.3 ms. */
	int work_fd = steal_fd(&run->box.work_fd), upper_fd = steal_fd(&run->box.upper_fd);
	/* Its pid 1 is reaped (or being reaped, with its cgroup): nothing
	 * is left to kill through the cgroup. */
	struct sbx_cgroup *cg = run->box.reaped ? steal_pointer(&run->box.cg) : NULL;
	run_free(run);
	done(done_data, &oc, 0, NULL);
	sandbox_close_later(s, work_fd);
	sandbox_close_later(s, upper_fd);
	sandbox_cgroup_free_later(s, cg);
	/* The next run like this one forks from the zygote again. */
	if (!from_zygote)
		run_warm(s, language);
	sbx_zygote_idle(s);
}

/* Reading the workspace back, on a job's thread: it owns the workspace
 * fd and copies of what it needs, never the run (which may be cancelled
 * meanwhile). */
struct collect {
	struct run *run;
	int work_fd;
	int upper_fd; /* the workspace's upper layer, or -1 */
	char *ws_root;
	struct sbx_ws_changes changes;
	bool have_changes;
	char run_id[24];
	char *host_dir;
	char **only; /* a session's run: the names it changed */
	struct sbx_artifact_opts opts;
	uint64_t dir_max_bytes, dir_max_age_ms;
	struct sbx_artifacts found;
	/* A one-shot run's displays, within what is left of its output. */
	uint64_t display_budget;
	struct sbx_displays shown;
	/* A session's run: its session, the picture of the layer at the
	 * last run's end and the one taken now (run_private.h). */
	bool in_session, lent;
	struct sandbox *sbx;
	char sess_id[24];
	unsigned gen;
	struct sbx_ws_snap *since, *snap;
};

static void collect_work(void *data, const atomic_bool *cancel)
{
	struct collect *c = data;
	int r = 0;
	/* A session's /work/out holds every run's files: only those this
	 * run changed are its artifacts. */
	if (c->work_fd >= 0 && (!c->in_session || c->only))
		r = sbx_artifacts_collect(c->work_fd, c->run_id, &c->opts, cancel, &c->found);
	if (r < 0 && r != -ECANCELED)
		log_warn("run %s: cannot read the workspace back: %s", c->run_id, strerror(-r));
	if (c->work_fd >= 0 && !c->in_session &&
	    (r = sbx_displays_read(c->work_fd, c->display_budget, cancel, &c->shown)) < 0 &&
	    r != -ECANCELED)
		log_warn("run %s: cannot read its displays: %s", c->run_id, strerror(-r));
	/* Something was copied: older runs' copies make room for it. */
	if (c->found.copy_dir &&
	    (r = sbx_artifact_dir_prune(c->host_dir, c->dir_max_bytes, c->dir_max_age_ms,
	                                c->found.copy_dir)) > 0)
		log_info("run %s: removed the copies of %d older runs (sandbox.artifactDirMax*)",
		         c->run_id, r);
	if (c->upper_fd < 0 || !c->ws_root || (cancel && atomic_load(cancel)))
		return;
	if (c->in_session)
		r = sbx_ws_diff_since(c->upper_fd, c->ws_root, NULL, c->since, cancel, &c->changes,
		                      &c->snap);
	else
		r = sbx_ws_diff(c->upper_fd, c->ws_root, NULL, cancel, &c->changes);
	if (r < 0 && r != -ECANCELED)
		log_warn("run %s: cannot compare the workspace: %s", c->run_id, strerror(-r));
	c->have_changes = r >= 0;
}

static void collect_done(void *data)
{
	struct collect *c = data;
	c->run->job = NULL;
	/* Before finish_run, whose done may start the session's next run. */
	give_snap(c->sbx, c->sess_id, c->gen, &c->lent, steal_pointer(&c->snap));
	finish_run(c->run, &c->found, c->have_changes ? &c->changes : NULL, &c->shown);
}

static void collect_free(void *data)
{
	struct collect *c = data;
	sbx_artifacts_release(&c->found);
	sbx_ws_changes_release(&c->changes);
	sbx_displays_release(&c->shown);
	/* Cancelled: the session compares its whole layer next time. */
	give_snap(c->sbx, c->sess_id, c->gen, &c->lent, steal_pointer(&c->snap));
	sbx_ws_snap_free(c->since);
	/* Closing the last fd of the workspace frees its tmpfs. */
	if (c->work_fd >= 0)
		close(c->work_fd);
	if (c->upper_fd >= 0)
		close(c->upper_fd);
	free(c->ws_root);
	free(c->host_dir);
	for (size_t i = 0; c->only && c->only[i]; i++)
		free(c->only[i]);
	free(c->only);
	free(c);
}

/* Collect the run's artifacts off the loop, then finish it; 0 when that
 * is under way (the run must not be touched then), -ENOMEM. */
static int start_collecting(struct run *run)
{
	const struct sbx_config *cfg = &run->sbx->config;
	struct collect *c = calloc(1, sizeof(*c));
	if (!c || (cfg->artifact_dir && !(c->host_dir = strdup(cfg->artifact_dir))) ||
	    (run->workspace && !(c->ws_root = strdup(run->workspace)))) {
		if (c)
			free(c->host_dir);
		free(c);
		return -ENOMEM;
	}
	c->run = run;
	snprintf(c->run_id, sizeof(c->run_id), "%s", run->id);
	c->opts = (struct sbx_artifact_opts){
	    .inline_bytes = cfg->artifact_inline_bytes,
	    .max_files = cfg->artifact_max_files,
	    .max_bytes = cfg->artifact_max_bytes,
	    .host_dir = c->host_dir,
	};
	c->sbx = run->sbx;
	c->display_budget = run->limits.output_bytes > run->out_bytes
	                        ? run->limits.output_bytes - run->out_bytes
	                        : 0;
	c->dir_max_bytes = cfg->artifact_dir_max_bytes;
	c->dir_max_age_ms = cfg->artifact_dir_max_age_ms;
	if (run->in_session) {
		c->in_session = true;
		c->only = steal_pointer(&run->only);
		c->opts.only = (const char *const *)c->only;
		snprintf(c->sess_id, sizeof(c->sess_id), "%s", run->sess_id);
		c->gen = run->snap_gen;
		c->since = steal_pointer(&run->snap);
		c->lent = run->snap_lent;
		run->snap_lent = false;
	}
	c->work_fd = steal_fd(&run->box.work_fd);
	c->upper_fd = steal_fd(&run->box.upper_fd);
	run->collecting = true;
	int r = sbx_job_start(run->sbx, collect_work, collect_done, collect_free, c, &run->job);
	if (r < 0) {
		run->box.work_fd = c->work_fd;
		run->box.upper_fd = c->upper_fd;
		run->collecting = false;
		run->snap = c->since;
		run->snap_lent = c->lent;
		for (size_t i = 0; c->only && c->only[i]; i++)
			free(c->only[i]);
		free(c->only);
		free(c->ws_root);
		free(c->host_dir);
		free(c);
	}
	return r;
}

/* Whether the one-shot run left nothing to read back: no workspace layer,
 * no display folder and an empty /work/out. Most runs leave nothing, and
 * a job's thread costs them its start and a wake-up (0.4 ms of a 3 ms
 * /bin/true run, docs/performance.md). What is looked at here is bounded
 * whatever the program did: one lookup, and one open with two reads of
 * at most 1 KiB of directory entries on the box's own tmpfs (a name is
 * at most 255 bytes, so any entry besides "." and ".." shows in the
 * first); whatever the answer, anything more goes to the job. */
static bool nothing_to_collect(const struct run *run)
{
	int wfd = run->box.work_fd;
	if (run->box.upper_fd >= 0 || run->workspace)
		return false;
	if (faccessat(wfd, SBX_DISPLAY_DIR, F_OK, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
		return false;
	_cleanup_close_ int out =
	    openat(wfd, "out", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (out < 0)
		return errno == ENOENT; /* as sbx_artifacts_collect, which finds none */
	char dents[1024] __attribute__((aligned(8)));
	for (int pass = 0; pass < 2; pass++) {
		long n = syscall(SYS_getdents64, out, dents, sizeof(dents));
		if (n < 0 || (pass == 1 && n > 0))
			return false;
		for (long off = 0; off < n;) {
			/* struct linux_dirent64: d_ino, d_off, d_reclen, d_type, d_name */
			unsigned short reclen;
			memcpy(&reclen, dents + off + 16, sizeof(reclen));
			const char *name = dents + off + 19;
			if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0)
				return false;
			if (!reclen)
				return false;
			off += reclen;
		}
	}
	return true;
}

static void maybe_finish(struct run *run)
{
	if (run->collecting)
		return;
	/* The run is over when its output has ended and pid 1 has either
	 * died or reported the program's exit: it sends that report only
	 * after killing everything else in the box and reaping it (a run
	 * from the zygote whose program sent its end report, zygote.py:
	 * after killing it only), so nothing in the box runs code any more.
	 * Its own end (reaping what is left, the namespaces' teardown) is
	 * then left to the sandbox, off the run's critical path. */
	bool over = run->box.reaped || (run->box.have_exit && !run->box.failed);
	if (!over || run->box.fds[OUT] >= 0 || run->box.fds[ERR] >= 0)
		return;
	if (!run->end_ms)
		run->end_ms = loop_now_ms();
	flush_output(run);
	run_done_fn done = run->done;
	void *done_data = run->done_data;
	if (run->box.failed || (!run->box.have_exit && !run->killing)) {
		if (run->box.failed)
			describe_failure(run, run->box.fail_step, run->box.fail_err);
		else
			snprintf(run->errmsg, sizeof(run->errmsg),
			         "kiln will not run this code: the sandbox's pid 1 ended without a "
			         "report");
		int err = run->err ? run->err : -EIO;
		char msg[sizeof(run->errmsg)];
		memcpy(msg, run->errmsg, sizeof(msg));
		run_free(run);
		done(done_data, NULL, err, msg);
		return;
	}
	fill_outcome(run, &run->outcome);
	loop_unwatch(run->loop, run->box.pidfd);
	sbx_box_reap_later(run->sbx, &run->box);
	if (run->box.work_fd >= 0 && !nothing_to_collect(run) && start_collecting(run) == 0)
		return;
	finish_run(run, NULL, NULL, NULL);
}

/* --- a session's run (session.c) ------------------------------------------ */

struct run *run_session_new(struct sandbox *s, struct sbx_session *ss, const struct run_sink *sink,
                            void *sink_data, const struct sbx_limits *lim, run_done_fn done,
                            void *data)
{
	struct run *run = run_new(s);
	if (!run)
		return NULL;
	run->session = ss;
	run->in_session = true;
	run->sink = sink;
	run->sink_data = sink_data;
	run->done = done;
	run->done_data = data;
	run->limits = *lim;
	run->start_ms = loop_now_ms();
	snprintf(run->id, sizeof(run->id), "r%lu", ++s->next_id);
	snprintf(run->language, sizeof(run->language), "python");
	if (!(run->wall_timer = loop_timer_start(s->loop, lim->wall_ms, on_wall, run))) {
		run->session = NULL;
		run_free(run);
		return NULL;
	}
	return run;
}

void run_session_output(struct run *run, int s, const char *buf, size_t n)
{
	if (n)
		on_bytes(run, s, buf, n);
}

bool run_session_display(struct run *run, json_object *data, json_object *metadata, size_t bytes)
{
	if (run->truncated)
		return false;
	if (bytes > run->limits.output_bytes - run->out_bytes) {
		/* A display is whole or not at all: the marker says why. */
		run->out_bytes = run->limits.output_bytes;
		run->truncated = true;
		char marker[160];
		int m = snprintf(marker, sizeof(marker),
		                 "\n[kiln: a display of %zu bytes did not fit in the run's output "
		                 "limit (%llu bytes); the run was interrupted]\n",
		                 bytes, (unsigned long long)run->limits.output_bytes);
		add_text(run, ERR, marker, (size_t)m, true, false);
		flush_output(run);
		end_box(run);
		return false;
	}
	run->out_bytes += bytes;
	/* Text before the display goes out before it. */
	flush_output(run);
	if (run->sink->display) {
		struct run_display d = {.run_id = run->id, .data = data, .metadata = metadata};
		run->sink->display(run->sink_data, run, &d);
	}
	return true;
}

void run_session_end(struct run *run, const struct run_session_end *e)
{
	for (int s = 0; s < 2; s++)
		add_text(run, s, "", 0, true, true);
	flush_output(run);
	struct run_outcome o = {.run_id = run->id,
	                        .timed_out = run->timed_out,
	                        .truncated = run->truncated,
	                        .warm = true,
	                        .limits = run->limits,
	                        .cpu_ms = e->cpu_ms,
	                        .max_rss_kb = e->max_rss_kb,
	                        .session_id = e->session_id,
	                        .session_ended = e->why != NULL,
	                        .session_why = e->why,
	                        .error_name = e->error_name,
	                        .error_value = e->error_value};
	switch (e->status) {
	case RUN_SESSION_OK:
	case RUN_SESSION_ERROR:
		o.exited = true;
		o.exit_code = e->status == RUN_SESSION_ERROR;
		break;
	case RUN_SESSION_INTERRUPTED:
		o.signal = SIGINT;
		break;
	case RUN_SESSION_CPU:
		o.signal = SIGXCPU;
		break;
	case RUN_SESSION_DIED:
		if (WIFEXITED(e->wstatus)) {
			o.exited = true;
			o.exit_code = WEXITSTATUS(e->wstatus);
		} else {
			o.signal = WIFSIGNALED(e->wstatus) ? WTERMSIG(e->wstatus) : SIGKILL;
		}
		break;
	}
	o.duration_ms = loop_now_ms() - run->start_ms;
	/* The strings are the caller's: copies live with the run. */
	snprintf(run->sess_id, sizeof(run->sess_id), "%s", e->session_id ? e->session_id : "");
	o.session_id = run->sess_id;
	if (e->why) {
		snprintf(run->sess_why, sizeof(run->sess_why), "%s", e->why);
		o.session_why = run->sess_why;
	}
	if (e->error_name) {
		snprintf(run->err_name, sizeof(run->err_name), "%s", e->error_name);
		snprintf(run->err_value, sizeof(run->err_value), "%s",
		         e->error_value ? e->error_value : "");
		o.error_name = run->err_name;
		o.error_value = run->err_value;
	}
	run->end_ms = loop_now_ms();
	run->outcome = o;
	/* What the run changed under /work/out and in the workspace, off
	 * the loop, then the end. */
	run->box.work_fd = e->work_fd;
	if (e->nchanged && (run->only = calloc(e->nchanged + 1, sizeof(char *))))
		for (size_t i = 0; i < e->nchanged; i++)
			if (!(run->only[i] = strdup(e->changed[i])))
				break;
	if (e->upper_fd >= 0) {
		run->box.upper_fd = e->upper_fd;
		run->snap = e->snap;
		run->snap_gen = e->snap_gen;
		run->snap_lent = true;
		if (!(run->workspace = strdup(e->ws_host))) {
			close(steal_fd(&run->box.upper_fd));
		}
	}
	if (((run->only && run->only[0] && run->box.work_fd >= 0) || run->box.upper_fd >= 0) &&
	    start_collecting(run) == 0)
		return;
	finish_run(run, NULL, NULL, NULL);
}

/* --- boxes ---------------------------------------------------------------- */

int run_watch_box(struct run *run)
{
	struct loop *loop = run->loop;
	if (loop_watch(loop, run->box.pidfd, LOOP_READ, on_pid1_exit, run) < 0 ||
	    loop_watch(loop, run->box.status_fd, LOOP_READ, on_status, run) < 0 ||
	    loop_watch(loop, run->box.fds[OUT], LOOP_READ, on_pipe, run) < 0 ||
	    loop_watch(loop, run->box.fds[ERR], LOOP_READ, on_pipe, run) < 0)
		return -ENOMEM;
	return 0;
}

int sbx_box_plan(struct sandbox *s, const char *language, const struct sbx_limits *lim,
                 struct sbx_plan_owned **ret, char *err, size_t errsz)
{
	err[0] = '\0';
	int r = sandbox_filter_ready(s);
	if (r < 0) {
		snprintf(err, errsz,
		         "kiln will not run this code: the seccomp filter could not be compiled "
		         "(%s)",
		         strerror(-r));
		return r == -ENOMEM ? r : -EIO;
	}
	r = sbx_plan_build(s, s->config.section, language, NULL, lim, ret, err, errsz);
	if (r < 0 && r != -ENOMEM && !err[0])
		snprintf(err, errsz, "cannot prepare the sandbox: %s", strerror(-r));
	return r;
}

/* Build the box po describes (in a cgroup of its own when there are)
 * and watch it. */
int run_start_box(struct run *run, struct sbx_plan_owned *po)
{
	int step;
	char err[256];
	int r = sbx_box_build(run->sbx, po, SBX_BOX_PIPES, &run->box, &step, err, sizeof(err));
	if (r < 0 && step >= 0)
		describe_failure(run, step, -r);
	else if (r < 0)
		snprintf(run->errmsg, sizeof(run->errmsg), "kiln will not run this code: %s", err);
	if (r >= 0 && run_watch_box(run) < 0)
		r = -ENOMEM;
	return r;
}

/* GO itself: the header, the strings, and a memfd holding the code (and
 * the list of what to hide, hide_fd, unless it is -1). */
static int send_go_msg(int status_fd, struct sbx_go *go, const struct buf *strs, const char *code,
                       int hide_fd)
{
	size_t len = strlen(code);
	_cleanup_close_ int fd = sbx_code_memfd(code, len);
	if (fd < 0)
		return fd;
	go->code_len = len;
	go->hide = hide_fd >= 0;
	struct iovec iov[2] = {{.iov_base = go, .iov_len = sizeof(*go)},
	                       {.iov_base = strs->data, .iov_len = strs->len}};
	int fds[2] = {fd, hide_fd};
	ssize_t n = sbx_status_send_fds(status_fd, iov, 2, fds, hide_fd >= 0 ? 2 : 1, 0);
	return n == (ssize_t)(sizeof(*go) + strs->len) ? 0 : n < 0 ? neg_errno() : -EIO;
}

int sbx_box_send_go(struct sbx_box *b, const struct sbx_plan_owned *po, const char *code_path,
                    char *const *argv, const struct sbx_rlimit *rl, size_t nrl, const char *code,
                    int hide_fd)
{
	/* The program: the code's path, argv, the environment. */
	struct buf strs;
	buf_init(&strs, SBX_GO_STRINGS);
	struct sbx_go go = {0};
	if (nrl > SBX_MAX_RLIMITS)
		return -E2BIG;
	memcpy(go.rlimits, rl, nrl * sizeof(*rl));
	go.nrlimits = (uint32_t)nrl;
	int r = buf_append(&strs, code_path, strlen(code_path) + 1);
	for (; r >= 0 && argv[go.argc]; go.argc++)
		r = buf_append(&strs, argv[go.argc], strlen(argv[go.argc]) + 1);
	for (; r >= 0 && po->plan.envp[go.envc]; go.envc++)
		r = buf_append(&strs, po->plan.envp[go.envc], strlen(po->plan.envp[go.envc]) + 1);
	if (r < 0 || go.argc > SBX_GO_ARGS || go.envc > SBX_GO_ENV) {
		buf_release(&strs);
		return r < 0 ? r : -E2BIG;
	}
	go.strings_len = (uint32_t)strs.len;
	r = send_go_msg(b->status_fd, &go, &strs, code, hide_fd);
	buf_release(&strs);
	return r;
}

/* Send pid 1 GO: the program (code path, argv, environment), its code
 * and the rlimits. -errno when it cannot be sent; the caller fails the
 * run. */
static int send_go(struct run *run, const struct sbx_plan_owned *po, const char *code, int hide_fd)
{
	struct sbx_rlimit rl[SBX_MAX_RLIMITS];
	size_t nrl = sbx_plan_rlimits_for(&run->limits, run->language, rl);
	return sbx_box_send_go(&run->box, po, po->code_path, po->plan.argv, rl, nrl, code, hide_fd);
}

/* GO could not be sent, or the workspace not checked: the run fails as
 * a setup step would; pid 1 goes, and the answer says why. */
static void go_failed(struct run *run, int step, int r)
{
	log_warn("run %s: cannot hand the program to pid 1: %s", run->id, strerror(-r));
	run->box.failed = true;
	run->box.fail_step = step;
	run->box.fail_err = -r;
	signal_box(run, SIGKILL);
}

/* The list of what to hide in the workspace is ready (hide.h): GO, with
 * the plan and code launch kept. */
static void on_hide_list(void *data, int fd, const char *why)
{
	struct run *run = data;
	run->hide_req = NULL;
	struct sbx_plan_owned *po = steal_pointer(&run->qplan);
	_cleanup_free_ char *code = steal_pointer(&run->qcode);
	int r = fd;
	if (fd < 0)
		snprintf(run->hide_why, sizeof(run->hide_why), "%s", why);
	else if ((r = run->from_zygote ? sbx_zygote_send_hide(&run->box, fd)
	                               : send_go(run, po, code, fd)) < 0)
		run->hide_why[0] = '\0';
	if (fd >= 0)
		close(fd);
	sbx_plan_free(po);
	if (r < 0)
		go_failed(run, fd < 0 ? SBX_STEP_HIDE : SBX_STEP_CODE, r);
}

struct run *run_new(struct sandbox *s)
{
	struct run *run = calloc(1, sizeof(*run));
	if (!run)
		return NULL;
	run->sbx = s;
	run->loop = s->loop;
	sbx_box_init(&run->box);
	run->pending_stream = -1;
	/* Room for a full read even if every byte became U+FFFD. */
	buf_init(&run->pending, 8 * COALESCE_BYTES);
	run->next = s->runs;
	s->runs = run;
	return run;
}

/* --- start ---------------------------------------------------------------- */

static void on_start_failed(struct loop *loop, void *data)
{
	(void)loop;
	struct run *run = data;
	run->start_timer = NULL;
	run_done_fn done = run->done;
	void *done_data = run->done_data;
	int err = run->err;
	char msg[sizeof(run->errmsg)];
	memcpy(msg, run->errmsg, sizeof(msg));
	run_free(run);
	done(done_data, NULL, err, msg);
}

/* The run's box: the zygote's spare (zygote true), the warm one, or one
 * built now; then its limits, and GO (or, with the workspace, the list
 * of what to hide first). */
static int launch_box(struct run *run, struct sbx_plan_owned **pop, const char *layout,
                      const char *code, bool zygote)
{
	struct sbx_plan_owned *po = *pop;
	struct sandbox *s = run->sbx;
	int r;
	if (zygote) {
		run->from_zygote = true;
		r = run_watch_box(run);
	} else if (warm_take(s, layout, po->plan.ws_host, &run->box)) {
		run->from_warm = true;
		r = run_watch_box(run);
	} else {
		r = run_start_box(run, po);
	}
	/* No warm box is built while this run starts: after it (maybe_finish). */
	warm_hold(s);
	if (r < 0)
		return r;
	if (run->box.cg &&
	    (r = sbx_cgroup_set_limits(run->box.cg, run->limits.memory_bytes, run->limits.processes,
	                               run->limits.cpu_cores)) < 0)
		log_warn("run %s: the cgroup took only some limits: %s", run->id, strerror(-r));
	if (po->plan.ws_host) {
		/* With the workspace, GO waits for the list of what to hide,
		 * made on a job thread while the box builds; the plan and
		 * the code wait with it. From the zygote, the program has its
		 * code already, and its pid 1 waits for the list alone. */
		if (!(run->qcode = strdup(code)))
			return -ENOMEM;
		run->qplan = steal_pointer(pop);
		if ((r = sbx_hide_request(s, on_hide_list, run, &run->hide_req)) < 0)
			return r;
	} else if (!run->from_zygote && (r = send_go(run, po, code, -1)) < 0) {
		go_failed(run, SBX_STEP_CODE, r);
	}
	if (!(run->wall_timer = loop_timer_start(s->loop, run->limits.wall_ms, on_wall, run)))
		return -ENOMEM;
	log_debug("run %s: pid %d, %s", run->id, (int)run->box.pid, run->language);
	return 0;
}

/* The zygote's spare the run waited for came (r >= 0: the run's box
 * holds it) or did not (the normal path): the start goes on, from the
 * loop. Its wall clock starts now, as it does once a box is there. */
static void on_spare(void *data, int r)
{
	struct run *run = data;
	run->zwait = NULL;
	struct sbx_plan_owned *po = steal_pointer(&run->qplan);
	_cleanup_free_ char *layout = steal_pointer(&run->qlayout);
	_cleanup_free_ char *code = steal_pointer(&run->qcode);
	r = launch_box(run, &po, layout, code, r >= 0);
	sbx_plan_free(po);
	if (r < 0) {
		if (r == -ENOMEM && !run->errmsg[0])
			snprintf(run->errmsg, sizeof(run->errmsg), "out of memory");
		run->err = r;
		on_start_failed(run->loop, run);
	}
}

/* Give the run its box and send pid 1 GO (launch_box): the part of a
 * start that waits for a slot. The run holds one from here until it is
 * freed. When the zygote's spare is on its way, the run waits for it
 * off the loop's critical path, holding what the start needs (on_spare).
 * -ENOMEM; another -errno with errmsg set when the box could not be
 * built (the caller fails the run). */
static int launch(struct run *run, struct sbx_plan_owned **pop, const char *layout,
                  const char *code)
{
	struct sandbox *s = run->sbx;
	run->holds_slot = true;
	s->active++;
	run->start_ms = loop_now_ms();
	int r = sbx_zygote_take(s, run->language, *pop, layout, &run->limits, code, &run->box,
	                        on_spare, run, &run->zwait);
	if (r != -EINPROGRESS)
		return launch_box(run, pop, layout, code, r >= 0);
	if (!(run->qlayout = strdup(layout)) || !(run->qcode = strdup(code))) {
		sbx_zygote_wait_cancel(s, steal_pointer(&run->zwait));
		return -ENOMEM;
	}
	run->qplan = steal_pointer(pop);
	/* No warm box is built while this run starts. */
	warm_hold(s);
	log_debug("run %s: waits for the zygote's box", run->id);
	return 0;
}

static void report_status(struct run *run, enum run_state state, size_t position)
{
	if (!run->sink->status)
		return;
	struct run_status st = {.run_id = run->id,
	                        .state = state,
	                        .position = position,
	                        .running = run->sbx->active,
	                        .max_running = run->sbx->config.max_concurrent_runs};
	run->sink->status(run->sink_data, run, &st);
}

/* Start the runs waiting for a slot, oldest first, while there are
 * slots: on a turn of the loop of its own, never inside run_free's
 * caller. */
static void on_queue_turn(struct loop *loop, void *data)
{
	struct sandbox *s = data;
	s->queue_timer = NULL;
	while (s->queue && s->active < s->config.max_concurrent_runs) {
		struct run *run = s->queue;
		s->queue = run->qnext;
		if (!s->queue)
			s->queue_tail = NULL;
		run->qnext = NULL;
		run->queued = false;
		s->nqueued--;
		struct sbx_plan_owned *po = steal_pointer(&run->qplan);
		_cleanup_free_ char *layout = steal_pointer(&run->qlayout);
		_cleanup_free_ char *code = steal_pointer(&run->qcode);
		report_status(run, RUN_STARTED, 0);
		int r = launch(run, &po, layout, code);
		sbx_plan_free(po);
		if (r < 0) {
			if (r == -ENOMEM && !run->errmsg[0])
				snprintf(run->errmsg, sizeof(run->errmsg), "out of memory");
			run->err = r;
			/* Its owner hears of it now: this is a turn of the
			 * loop, not run_start. done may start or cancel
			 * runs; the loop takes the queue afresh. */
			on_start_failed(loop, run);
		}
	}
}

/* A slot was freed: the queue's turn comes on the next loop turn. */
static void queue_kick(struct sandbox *s)
{
	if (s->queue && !s->queue_timer && s->loop)
		s->queue_timer = loop_timer_start(s->loop, 0, on_queue_turn, s);
}

/* Put run (its plan, layout and code taken) at the end of the queue. */
static int enqueue(struct run *run, struct sbx_plan_owned **po, char **layout, const char *code)
{
	struct sandbox *s = run->sbx;
	/* Each waiting run holds its code (up to 1 MiB) and its plan: the
	 * queue is bounded too. */
	if (s->nqueued >= s->config.max_queued_runs) {
		snprintf(
		    run->errmsg, sizeof(run->errmsg),
		    "kiln will not run this code now: %lu runs already wait for a slot "
		    "(sandbox.maxConcurrentRuns %llu, sandbox.maxQueuedRuns %llu); send it again "
		    "when some have ended",
		    s->nqueued, (unsigned long long)s->config.max_concurrent_runs,
		    (unsigned long long)s->config.max_queued_runs);
		return -EAGAIN;
	}
	if (!(run->qcode = strdup(code)))
		return -ENOMEM;
	s->nqueued++;
	run->qplan = steal_pointer(po);
	run->qlayout = steal_pointer(layout);
	run->queued = true;
	if (s->queue_tail)
		s->queue_tail->qnext = run;
	else
		s->queue = run;
	s->queue_tail = run;
	size_t position = 0;
	for (struct run *q = s->queue; q; q = q->qnext)
		position++;
	log_debug("run %s: waits for a slot (%zu queued, %lu of %llu running)", run->id, position,
	          s->active, (unsigned long long)s->config.max_concurrent_runs);
	report_status(run, RUN_QUEUED, position);
	if (s->active < s->config.max_concurrent_runs)
		queue_kick(s);
	return 0;
}

static void dequeue(struct run *run)
{
	struct sandbox *s = run->sbx;
	struct run *prev = NULL;
	for (struct run *q = s->queue; q; prev = q, q = q->qnext)
		if (q == run) {
			if (prev)
				prev->qnext = run->qnext;
			else
				s->queue = run->qnext;
			if (s->queue_tail == run)
				s->queue_tail = prev;
			s->nqueued--;
			break;
		}
	run->queued = false;
	sbx_plan_free(run->qplan);
	run->qplan = NULL;
	free(run->qlayout);
	free(run->qcode);
	run->qlayout = run->qcode = NULL;
}

int run_start(struct sandbox *s, const struct run_sink *sink, void *sink_data, const char *language,
              const char *code, json_object *limits, run_done_fn done, void *data,
              struct run **ret_run)
{
	if (!s)
		return -ENODEV;
	struct run *run = run_new(s);
	if (!run)
		return -ENOMEM;
	run->sink = sink;
	run->sink_data = sink_data;
	run->done = done;
	run->done_data = data;
	run->start_ms = loop_now_ms();
	snprintf(run->id, sizeof(run->id), "r%lu", ++s->next_id);
	snprintf(run->language, sizeof(run->language), "%s", language ? language : "");

	int r = 0;
	struct sbx_plan_owned *po = NULL;
	_cleanup_free_ char *layout = NULL;
	if (!language || !code) {
		r = -EINVAL;
		snprintf(run->errmsg, sizeof(run->errmsg), "language and code are required");
	} else if (strlen(code) > SBX_CODE_MAX) {
		r = -EINVAL;
		snprintf(run->errmsg, sizeof(run->errmsg), "code is larger than %u bytes",
		         SBX_CODE_MAX);
	} else if ((r = sbx_limits_resolve(s->config.section, limits, &run->limits, run->errmsg,
	                                   sizeof(run->errmsg))) < 0) {
		/* errmsg set */
	} else if ((r = sbx_box_plan(s, language, &run->limits, &po, run->errmsg,
	                             sizeof(run->errmsg))) < 0) {
		/* errmsg set */
	} else if (!(layout = sbx_plan_layout(&po->plan)) ||
	           (po->plan.ws_host && !(run->workspace = strdup(po->plan.ws_host)))) {
		r = -ENOMEM;
	} else if (s->active >= s->config.max_concurrent_runs || s->queue) {
		/* Every slot is taken (or others wait already): wait. */
		if ((r = enqueue(run, &po, &layout, code)) == 0) {
			*ret_run = run;
			return 0;
		}
	} else {
		r = launch(run, &po, layout, code);
	}
	sbx_plan_free(po);
	if (r == -ENOMEM) {
		run_free(run);
		return r;
	}
	if (r < 0) {
		run->err = r;
		run->start_timer = loop_timer_start(s->loop, 0, on_start_failed, run);
		if (!run->start_timer) {
			run_free(run);
			return -ENOMEM;
		}
	}
	*ret_run = run;
	return 0;
}

/* --- end ------------------------------------------------------------------ */

void run_free(struct run *run)
{
	struct loop *loop = run->loop;
	if (run->session)
		sbx_session_forget_run(run->session, run);
	for (struct run **pp = &run->sbx->runs; *pp; pp = &(*pp)->next)
		if (*pp == run) {
			*pp = run->next;
			break;
		}
	if (run->queued)
		dequeue(run);
	/* Launched, and waiting for the zygote's spare (which stays the
	 * zygote's) or for the list of what to hide. */
	sbx_zygote_wait_cancel(run->sbx, run->zwait);
	sbx_hide_cancel(run->sbx, run->hide_req);
	sbx_plan_free(run->qplan);
	free(run->qlayout);
	free(run->qcode);
	if (run->holds_slot) {
		run->sbx->active--;
		queue_kick(run->sbx);
	}
	/* A collection under way stops at its next chunk; its thread cleans
	 * up after itself. */
	sbx_job_cancel(run->job);
	struct loop_timer **timers[] = {&run->wall_timer, &run->grace_timer, &run->flush_timer,
	                                &run->start_timer};
	for (size_t i = 0; i < ARRAY_SIZE(timers); i++)
		if (*timers[i]) {
			loop_timer_stop(loop, *timers[i]);
			*timers[i] = NULL;
		}
	int fds[] = {run->box.pidfd, run->box.status_fd, run->box.fds[OUT], run->box.fds[ERR]};
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		loop_unwatch(loop, fds[i]);
	/* Kills what is left of the box and waits for it. */
	sbx_box_release(run->sbx, &run->box);
	buf_release(&run->pending);
	sbx_tail_free(&run->tail[OUT]);
	sbx_tail_free(&run->tail[ERR]);
	give_snap(run->sbx, run->sess_id, run->snap_gen, &run->snap_lent,
	          steal_pointer(&run->snap));
	free(run->workspace);
	for (size_t i = 0; run->only && run->only[i]; i++)
		free(run->only[i]);
	free(run->only);
	free(run);
}

void run_cancel(struct run *run)
{
	if (!run)
		return;
	log_debug("run %s: cancelled", run->id);
	run_free(run);
}
