/* run_start.c: how a run starts (see run.h): run_start builds the plan,
 * waits for a slot (run.c's queue), takes the zygote's spare, the warm
 * box (pools/) or clones one, and sends pid 1 the program (GO); from
 * then on everything is a callback: pipe data becomes coalesced,
 * UTF-8-safe output (run_output.c); the status socket brings the
 * workspace fd and the program's status, the pidfd says pid 1 is gone,
 * timers enforce the wall clock (run_exit.c). The run ends when both
 * pipes are at EOF and pid 1 has reported the program's end (or is
 * gone). */
#include "sandbox/run/run.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "sandbox/box/box.h"
#include "sandbox/box/child.h"
#include "sandbox/box/plan.h"
#include "sandbox/host/base.h"
#include "sandbox/host/cgroup.h"
#include "sandbox/host/limits.h"
#include "sandbox/pools/warm.h"
#include "sandbox/pools/zygote.h"
#include "sandbox/run/run_private.h"
#include "sandbox/state.h"
#include "sandbox/workspace/hide.h"

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

/* Build the box po describes (in a cgroup of its own when there are)
 * and watch it. */
int run_start_box(struct run *run, struct sbx_plan_owned *po)
{
	int step;
	char err[256];
	int r =
	    sbx_box_build(&run->sbx->base, po, SBX_BOX_PIPES, &run->box, &step, err, sizeof(err));
	if (r < 0 && step >= 0)
		run_describe_failure(run, step, -r);
	else if (r < 0)
		snprintf(run->errmsg, sizeof(run->errmsg), "kiln will not run this code: %s", err);
	if (r >= 0 && run_watch_box(run) < 0)
		r = -ENOMEM;
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
	/* A closed socket: pid 1 failed first, and its report (the step and
	 * why, sent before it closed its end) is the reason, not GO's. The
	 * job that made the list of what to hide and pid 1's report race for
	 * the loop's turn. */
	if (r == -EPIPE || r == -ECONNRESET) {
		sbx_box_read_status(&run->box);
		if (run->box.failed) {
			run_signal_box(run, SIGKILL);
			return;
		}
	}
	run->box.failed = true;
	run->box.fail_step = step;
	run->box.fail_err = -r;
	run_signal_box(run, SIGKILL);
}

/* GO with the list of what to hide (fd, owned; < 0: it could not be
 * made, hide_why says why), the plan and code launch kept. */
static void go_with_list(struct run *run, int fd)
{
	struct sbx_plan_owned *po = steal_pointer(&run->qplan);
	_cleanup_free_ char *code = steal_pointer(&run->qcode);
	int r = fd;
	if (fd >= 0 && (r = run->from_zygote ? sbx_zygote_send_hide(&run->box, fd)
	                                     : send_go(run, po, code, fd)) < 0)
		run->hide_why[0] = '\0';
	if (fd >= 0)
		close(fd);
	sbx_plan_free(po);
	if (r < 0)
		go_failed(run, fd < 0 ? SBX_STEP_HIDE : SBX_STEP_CODE, r);
}

/* The list of what to hide in the workspace is ready (hide.h): GO, or,
 * for a held run, the list kept until run_release. */
static void on_hide_list(void *data, int fd, const char *why)
{
	struct run *run = data;
	run->hide_req = NULL;
	if (fd < 0)
		snprintf(run->hide_why, sizeof(run->hide_why), "%s", why);
	if (run->held) {
		run->list_ready = true;
		run->held_list = fd;
		return;
	}
	go_with_list(run, fd);
}

/* The wall clock, from GO's sending (or its wait for the list). */
static int start_wall_clock(struct run *run)
{
	if (!(run->wall_timer =
	          loop_timer_start(run->sbx->base.loop, run->limits.wall_ms, run_on_wall, run)))
		return -ENOMEM;
	return 0;
}

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

/* A start that went on from a turn of the loop of its own (the spare's
 * answer, the queue's turn) failed with r: its owner hears of it now,
 * not from run_start. done may start or cancel runs; the queue is taken
 * afresh on its next turn. */
static void start_failed_now(struct run *run, int r)
{
	if (r == -ENOMEM && !run->errmsg[0])
		snprintf(run->errmsg, sizeof(run->errmsg), "out of memory");
	run->err = r;
	on_start_failed(run->loop, run);
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
	} else if (run->held) {
		/* GO at run_release, with the plan and the code kept. */
		if (!(run->qcode = strdup(code)))
			return -ENOMEM;
		run->qplan = steal_pointer(pop);
	} else if (!run->from_zygote && (r = send_go(run, po, code, -1)) < 0) {
		go_failed(run, SBX_STEP_CODE, r);
	}
	if (!run->held && (r = start_wall_clock(run)) < 0)
		return r;
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
	if (r < 0)
		start_failed_now(run, r);
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
	/* The zygote's spare takes the code at once: a held run is not its. */
	int r = run->held ? -ENOTSUP
	                  : sbx_zygote_take(s, run->language, *pop, layout, &run->limits, code,
	                                    &run->box, on_spare, run, &run->zwait);
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

/* The queue's turn came (run.c): launch the run with what it waited
 * with. */
static void on_turn(struct run *run)
{
	struct sbx_plan_owned *po = steal_pointer(&run->qplan);
	_cleanup_free_ char *layout = steal_pointer(&run->qlayout);
	_cleanup_free_ char *code = steal_pointer(&run->qcode);
	int r = launch(run, &po, layout, code);
	sbx_plan_free(po);
	if (r < 0)
		start_failed_now(run, r);
}

/* The run's interpreter, for its result (a copy: the plan goes first). */
static struct sbx_pyenv *pyenv_dup(const struct sbx_pyenv *py)
{
	struct sbx_pyenv *c = malloc(sizeof(*c));
	if (c)
		*c = *py;
	return c;
}

static int start(struct sandbox *s, const struct run_sink *sink, void *sink_data,
                 const char *language, const char *code, json_object *limits, bool held,
                 run_done_fn done, void *data, struct run **ret_run)
{
	if (!s)
		return -ENODEV;
	struct run *run = run_new(s);
	if (!run)
		return -ENOMEM;
	run->held = held;
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
	struct sbx_plan_ws ws;
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
	           (r = sbx_plan_await(s->base.host, sbx_plan_ws_of(s, &ws), s->config.section,
	                               language, &run->limits, &po, run->errmsg,
	                               sizeof(run->errmsg))) < 0) {
		/* errmsg set */
	} else if ((!layout && !(layout = sbx_plan_layout(&po->plan))) ||
	           (po->plan.ws_host && !(run->workspace = strdup(po->plan.ws_host))) ||
	           (po->has_py && !(run->python = pyenv_dup(&po->py)))) {
		r = -ENOMEM;
	} else if (s->active >= s->config.max_concurrent_runs || s->queue) {
		/* Every slot is taken (or others wait already): wait. */
		if ((r = run_enqueue(run, &po, &layout, code, on_turn)) == 0) {
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
		run->start_timer = loop_timer_start(s->base.loop, 0, on_start_failed, run);
		if (!run->start_timer) {
			run_free(run);
			return -ENOMEM;
		}
	}
	*ret_run = run;
	return 0;
}

int run_start(struct sandbox *s, const struct run_sink *sink, void *sink_data, const char *language,
              const char *code, json_object *limits, run_done_fn done, void *data,
              struct run **ret_run)
{
	return start(s, sink, sink_data, language, code, limits, false, done, data, ret_run);
}

int run_start_held(struct sandbox *s, const struct run_sink *sink, void *sink_data,
                   const char *language, const char *code, json_object *limits, run_done_fn done,
                   void *data, struct run **ret_run)
{
	return start(s, sink, sink_data, language, code, limits, true, done, data, ret_run);
}

void run_release(struct run *run)
{
	if (!run || !run->held)
		return;
	run->held = false;
	/* Failed to start (done will say why), or still waiting for a slot
	 * (launch sends GO then, as for any run). */
	if (run->start_timer || run->queued)
		return;
	run->start_ms = loop_now_ms();
	int r = start_wall_clock(run);
	if (r < 0) {
		go_failed(run, SBX_STEP_CODE, r);
		return;
	}
	if (run->hide_req)
		return; /* on_hide_list sends GO */
	if (run->list_ready) {
		run->list_ready = false;
		go_with_list(run, run->held_list);
		return;
	}
	struct sbx_plan_owned *po = steal_pointer(&run->qplan);
	_cleanup_free_ char *code = steal_pointer(&run->qcode);
	if ((r = send_go(run, po, code, -1)) < 0)
		go_failed(run, SBX_STEP_CODE, r);
	sbx_plan_free(po);
}
