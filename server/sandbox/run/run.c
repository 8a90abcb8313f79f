/* run.c: one sandboxed run in the event loop (see run.h): its box, its
 * start and the queue, and freeing it. run_start builds the plan, waits
 * for a slot, takes the zygote's spare, the warm box (warm.c) or clones
 * one, and sends pid 1 the program (GO); from then on everything is a
 * callback: pipe data becomes coalesced, UTF-8-safe output
 * (run_output.c); the status socket brings the workspace fd and the
 * program's status, the pidfd says pid 1 is gone, timers enforce the
 * wall clock (run_exit.c). The run ends when both pipes are at EOF and
 * pid 1 has reported the program's end (or is gone). A session's run is
 * in run_session.c. */
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
#include "sandbox/box/box.h"
#include "sandbox/host/cgroup.h"
#include "sandbox/box/child.h"
#include "sandbox/workspace/hide.h"
#include "sandbox/host/job.h"
#include "sandbox/host/limits.h"
#include "sandbox/box/plan.h"
#include "sandbox/run/run_private.h"
#include "sandbox/sandbox.h"
#include "sandbox/session/session.h"
#include "sandbox/pools/zygote.h"

const char *run_id(const struct run *run)
{
	return run->id;
}

const char *run_stream_name(enum run_stream s)
{
	return s == RUN_STDERR ? "stderr" : "stdout";
}

/* --- boxes ---------------------------------------------------------------- */

int run_watch_box(struct run *run)
{
	struct loop *loop = run->loop;
	if (loop_watch(loop, run->box.pidfd, LOOP_READ, run_on_pid1_exit, run) < 0 ||
	    loop_watch(loop, run->box.status_fd, LOOP_READ, run_on_status, run) < 0 ||
	    loop_watch(loop, run->box.fds[OUT], RUN_PIPE_EVENTS, run_on_pipe, run) < 0 ||
	    loop_watch(loop, run->box.fds[ERR], RUN_PIPE_EVENTS, run_on_pipe, run) < 0)
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
		run_describe_failure(run, step, -r);
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
	run_signal_box(run, SIGKILL);
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
	buf_init(&run->pending, 8 * RUN_COALESCE_BYTES);
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
	/* No warm box is built while this run starts: after it (run_maybe_finish). */
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
	if (!(run->wall_timer = loop_timer_start(s->loop, run->limits.wall_ms, run_on_wall, run)))
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
	} else if (!(po = warm_plan_take(s, language, &run->limits, &layout)) &&
	           (r = sbx_box_plan(s, language, &run->limits, &po, run->errmsg,
	                             sizeof(run->errmsg))) < 0) {
		/* errmsg set */
	} else if ((!layout && !(layout = sbx_plan_layout(&po->plan))) ||
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
	run_give_snap(run->sbx, run->sess_id, run->snap_gen, &run->snap_lent,
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
