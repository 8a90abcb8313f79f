/* run_exit.c: the end of a run: pid 1's status and exit, the wall
 * clock, ending the box (SIGUSR1, then SIGKILL after GRACE_MS), how the
 * run ended (its outcome), and reading its workspace back off the loop
 * (a job) before it is reported to its owner. */
#include "sandbox/run/run.h"

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

#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "sandbox/output/artifact.h"
#include "sandbox/box/box.h"
#include "sandbox/host/cgroup.h"
#include "sandbox/box/child.h"
#include "sandbox/output/display.h"
#include "sandbox/host/job.h"
#include "sandbox/run/run_private.h"
#include "sandbox/state.h"
#include "sandbox/workspace/ledger.h"
#include "sandbox/output/text.h"
#include "sandbox/pools/zygote.h"
#include "sandbox/host/reap.h"
#include "sandbox/pools/warm.h"

/* After asking pid 1 to end the box, how long before SIGKILL. */
#define GRACE_MS 2000

/* --- status and exit ----------------------------------------------------- */

void run_signal_box(struct run *run, int sig)
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
	run_signal_box(run, SIGKILL);
}

/* Ask pid 1 to kill everything and report (SIGUSR1), SIGKILL later. */
void run_end_box(struct run *run)
{
	if (run->killing)
		return;
	run->killing = true;
	/* In a session the code is interrupted first; the session ends
	 * itself only when that does not work (session.c). */
	if (run->owner) {
		run->owner_ops->interrupt(run->owner);
		return;
	}
	run_signal_box(run, SIGUSR1);
	run->grace_timer = loop_timer_start(run->loop, GRACE_MS, on_grace, run);
}

void run_on_status(struct loop *loop, int fd, unsigned events, void *data)
{
	struct run *run = data;
	/* At its end (pid 1 is exiting) stop watching: epoll reports a hung
	 * up fd whatever events it is watched for. */
	if (sbx_box_read_status(&run->box) || (events & (LOOP_HUP | LOOP_ERR)))
		loop_unwatch(loop, fd);
	/* EXIT may be the last thing the run was waiting for. */
	run_maybe_finish(run);
}

void run_on_pid1_exit(struct loop *loop, int fd, unsigned events, void *data)
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
	run_maybe_finish(run);
}

void run_on_wall(struct loop *loop, void *data)
{
	(void)loop;
	struct run *run = data;
	run->wall_timer = NULL;
	run->timed_out = true;
	run_end_box(run);
}

/* A sentence on why the box could not be built and what to do. */
void run_describe_failure(struct run *run, int step, int err)
{
	if (step == SBX_STEP_HIDE && run->hide_why[0]) {
		/* The server's walk failed (hide.c): its own sentence. */
		snprintf(run->errmsg, sizeof(run->errmsg), "kiln will not run this code: %s",
		         run->hide_why);
		run->err = -(err ? err : EPERM);
		return;
	}
	char hint[640];
	sbx_failure_hint(step, err, hint, sizeof(hint));
	snprintf(run->errmsg, sizeof(run->errmsg),
	         "kiln will not run this code: the sandbox could not be built (%s failed: %s). "
	         "Code never runs outside the sandbox.%s",
	         sbx_step_name(step), strerror(err), hint);
	run->err = -(err ? err : EPERM);
}

/* How the run ended, from what pid 1 reported and the cgroup saw. */
static void fill_outcome(const struct run *run, struct run_outcome *o)
{
	*o = (struct run_outcome){.run_id = run->id,
	                          .timed_out = run->timed_out,
	                          .truncated = run->truncated,
	                          .warm = run->from_warm,
	                          .zygote = run->from_zygote,
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
void run_finish(struct run *run, const struct sbx_artifacts *found,
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
		run_add_text(run, ERR, marker, (size_t)m, true, false);
		run_flush_output(run);
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
		/* Kept for workspace/applyChanges, after the reply. */
		sbx_ws_ledger_put(run->sbx, run->id, run->workspace, changes,
		                  run->in_session ? run->sess_id : NULL, run->snap_gen);
	}
	/* So does its interpreter. */
	static struct sbx_pyenv py;
	oc.python = NULL;
	if (run->python) {
		py = *run->python;
		oc.python = &py;
	}
	static char sess[4][1024];
	const char **ss[] = {&oc.session_id, &oc.session_why, &oc.error_name, &oc.error_value};
	for (size_t i = 0; i < ARRAY_SIZE(ss); i++)
		if (*ss[i]) {
			snprintf(sess[i], sizeof(sess[i]), "%s", *ss[i]);
			*ss[i] = sess[i];
		}
	if (run->in_session) {
		run_give_snap(run->owner_ops, run->sbx, run->sess_id, run->snap_gen,
		              &run->snap_lent, steal_pointer(&run->snap));
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
	sbx_close_later(&s->base, work_fd);
	sbx_close_later(&s->base, upper_fd);
	sbx_cgroup_free_later(&s->base, cg);
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
	struct timespec start_real;
	char *ws_dir; /* the run's copy folder, when only the workspace made one */
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
	const struct run_owner_ops *owner_ops;
	char sess_id[24];
	unsigned gen;
	struct sbx_ws_snap *since, *snap;
};

/* The changes' start, and a copy of each binary or large file kept in
 * the run's copy folder (the artifacts' one, or one made for them) under
 * its own budget, so that it can be applied later. */
static void keep_changes(struct collect *c, const atomic_bool *cancel)
{
	bool wanted = false;
	for (size_t i = 0; i < c->changes.n; i++) {
		c->changes.items[i].run_start = c->start_real;
		wanted |= sbx_ws_wants_copy(&c->changes.items[i]);
	}
	if (!wanted)
		return;
	const char *why = NULL;
	char dir[PATH_MAX];
	int r = 0;
	if (c->found.copy_dir)
		snprintf(dir, sizeof(dir), "%s", c->found.copy_dir);
	else if (!c->host_dir)
		why = "no folder to keep it in (sandbox.artifactDir)";
	else if ((r = sbx_artifact_run_dir(c->host_dir, c->run_id, dir, sizeof(dir))) < 0 ||
	         !(c->ws_dir = strdup(dir)))
		why = "its copy could not be made";
	if (!why && (r = sbx_ws_keep(c->upper_fd, c->ws_root, &c->changes, dir, c->opts.max_bytes,
	                             cancel)) < 0)
		why = "its copy could not be made";
	if (r < 0 && r != -ECANCELED)
		log_warn("run %s: cannot keep the workspace's files: %s", c->run_id, strerror(-r));
	for (size_t i = 0; why && i < c->changes.n; i++)
		if (sbx_ws_wants_copy(&c->changes.items[i]) && !c->changes.items[i].stored)
			c->changes.items[i].not_kept = why;
}

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
	if (c->upper_fd >= 0 && c->ws_root && !(cancel && atomic_load(cancel))) {
		if (c->in_session)
			r = sbx_ws_diff_since(c->upper_fd, c->ws_root, NULL, c->since, cancel,
			                      &c->changes, &c->snap);
		else
			r = sbx_ws_diff(c->upper_fd, c->ws_root, NULL, cancel, &c->changes);
		if (r < 0 && r != -ECANCELED)
			log_warn("run %s: cannot compare the workspace: %s", c->run_id,
			         strerror(-r));
		c->have_changes = r >= 0;
		if (c->have_changes)
			keep_changes(c, cancel);
	}
	/* Something was copied: older runs' copies make room for it. */
	const char *made = c->found.copy_dir ? c->found.copy_dir : c->ws_dir;
	if (made && (r = sbx_artifact_dir_prune(c->host_dir, c->dir_max_bytes, c->dir_max_age_ms,
	                                        made)) > 0)
		log_info("run %s: removed the copies of %d older runs (sandbox.artifactDirMax*)",
		         c->run_id, r);
}

static void collect_done(void *data)
{
	struct collect *c = data;
	c->run->job = NULL;
	/* Before run_finish, whose done may start the session's next run. */
	run_give_snap(c->owner_ops, c->sbx, c->sess_id, c->gen, &c->lent, steal_pointer(&c->snap));
	run_finish(c->run, &c->found, c->have_changes ? &c->changes : NULL, &c->shown);
}

static void collect_free(void *data)
{
	struct collect *c = data;
	sbx_artifacts_release(&c->found);
	sbx_ws_changes_release(&c->changes);
	sbx_displays_release(&c->shown);
	/* Cancelled: the session compares its whole layer next time. */
	run_give_snap(c->owner_ops, c->sbx, c->sess_id, c->gen, &c->lent, steal_pointer(&c->snap));
	sbx_ws_snap_free(c->since);
	/* Closing the last fd of the workspace frees its tmpfs. */
	if (c->work_fd >= 0)
		close(c->work_fd);
	if (c->upper_fd >= 0)
		close(c->upper_fd);
	free(c->ws_root);
	free(c->ws_dir);
	free(c->host_dir);
	for (size_t i = 0; c->only && c->only[i]; i++)
		free(c->only[i]);
	free(c->only);
	free(c);
}

/* Collect the run's artifacts off the loop, then finish it; 0 when that
 * is under way (the run must not be touched then), -ENOMEM. */
int run_start_collecting(struct run *run)
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
	c->start_real = run->start_real;
	snprintf(c->run_id, sizeof(c->run_id), "%s", run->id);
	c->opts = (struct sbx_artifact_opts){
	    .inline_bytes = cfg->artifact_inline_bytes,
	    .max_files = cfg->artifact_max_files,
	    .max_bytes = cfg->artifact_max_bytes,
	    .host_dir = c->host_dir,
	};
	c->sbx = run->sbx;
	c->owner_ops = run->owner_ops;
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
	int r =
	    sbx_job_start(&run->sbx->base, collect_work, collect_done, collect_free, c, &run->job);
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

/* A box whose pid 1 died without reporting, where the box's cgroup says
 * the OOM killer ran: memory.oom.group (cgroup.c) ends every process of
 * the box at the memory limit, pid 1 too, so that is the run's end (the
 * program killed, the limit in its result), not a sandbox failure. */
static bool ended_by_oom(const struct run *run)
{
	struct sbx_cgroup_stats st;
	return run->box.cg && sbx_cgroup_stats(run->box.cg, &st) >= 0 && st.oom_kills > 0;
}

void run_maybe_finish(struct run *run)
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
	run_flush_output(run);
	run_done_fn done = run->done;
	void *done_data = run->done_data;
	if (run->box.failed || (!run->box.have_exit && !run->killing && !ended_by_oom(run))) {
		if (run->box.failed)
			run_describe_failure(run, run->box.fail_step, run->box.fail_err);
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
	sbx_box_reap_later(&run->sbx->base, &run->box);
	if (run->box.work_fd >= 0 && !nothing_to_collect(run) && run_start_collecting(run) == 0)
		return;
	run_finish(run, NULL, NULL, NULL);
}
