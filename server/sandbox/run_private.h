/* run_private.h: what run.c (a run) and warm.c (boxes built ahead of
 * their run) share: the run itself, and the steps of starting its box.
 * Not for the rest of the server: run.h is the sandbox's API. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/buf.h"
#include "sandbox/child.h"
#include "sandbox/limits.h"
#include "sandbox/plan.h"
#include "sandbox/run.h"
#include "sandbox/text.h"

struct loop_timer;
struct sandbox;
struct sbx_cgroup;
struct sbx_job;

enum { OUT, ERR };
struct run {
	struct sandbox *sbx;
	struct loop *loop;
	struct run *next;
	char id[24];
	const struct run_sink *sink;
	void *sink_data;
	run_done_fn done;
	void *done_data;
	struct sbx_limits limits;

	pid_t pid;
	int pidfd, status_fd, work_fd;
	int fds[2]; /* stdout, stderr read ends; -1 at EOF */
	bool reaped, timed_out, truncated, killing;
	bool paused; /* the sink answered RUN_PAUSE: the pipes are not read */
	bool have_exit, failed;
	bool parked;           /* a warm box: built, no run yet (sandbox.warm) */
	bool from_warm;        /* this run took a warm box */
	struct sbx_cgroup *cg; /* the box's cgroup, or NULL */
	/* At the end: how it ended, and the job copying its artifacts back
	 * (job.h) while the loop goes on. */
	bool collecting;
	struct run_outcome outcome;
	struct sbx_job *job;
	char *layout;      /* sbx_plan_layout() of the box */
	char language[64]; /* the box's language */
	struct sbx_msg exit_msg;
	int fail_step, fail_err;

	uint64_t start_ms, end_ms, out_bytes;
	struct loop_timer *wall_timer, *grace_timer, *flush_timer, *start_timer;

	struct sbx_utf8 dec[2];
	struct buf pending;
	int pending_stream;
	struct sbx_tail tail[2];
	char errmsg[768];
	int err;
};

/* A run with no box yet, listed in the sandbox's runs; NULL on OOM. */
struct run *run_new(struct sandbox *s);
/* Kill what is left of the box (and wait for it), free everything. */
void run_free(struct run *run);

/* The plan of a box for language that waits for its program (GO).
 * -EINVAL/-ENOENT and the like with run->errmsg set; -ENOMEM. */
int run_prepare_box(struct run *run, const char *language, struct sbx_plan_owned **ret);
/* Build the box po describes (in a cgroup of its own when there are)
 * and watch it. */
int run_start_box(struct run *run, struct sbx_plan_owned *po);
/* Watch the box's pidfd, status socket and pipes on the loop. */
int run_watch_box(struct run *run);

/* warm.c: if the warm box has layout, move it into run (which has no box
 * yet) and return true; otherwise drop it (it would not fit the next run
 * either) and return false. */
bool warm_adopt(struct run *run, const char *layout);
/* No warm box is built now: a run is starting. */
void warm_hold(struct sandbox *s);
