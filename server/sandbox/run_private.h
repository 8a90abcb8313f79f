/* run_private.h: what run.c (a run) and warm.c (the cache of boxes built
 * ahead of their run) share: the run itself, and the steps of giving it a
 * box. Not for the rest of the server: run.h is the sandbox's API. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/buf.h"
#include "sandbox/box.h"
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

	/* The run's one box: built for it, or taken from the warm-box
	 * cache (from_warm). Its pipes are fds[OUT] and fds[ERR]. */
	struct sbx_box box;
	bool from_warm;
	char language[64]; /* the box's language */
	char *workspace;   /* the host folder its box shows, or NULL */
	bool timed_out, truncated, killing;
	bool paused; /* the sink answered RUN_PAUSE: the pipes are not read */
	/* At the end: how it ended, and the job copying its artifacts back
	 * (job.h) while the loop goes on. */
	bool collecting;
	struct run_outcome outcome;
	struct sbx_job *job;

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

/* The plan of a box for language that waits for its program (GO), with
 * limits lim (their tmpfs size is the box's). -EINVAL/-ENOENT and the
 * like with a sentence in err; -ENOMEM. */
int sbx_box_plan(struct sandbox *s, const char *language, const struct sbx_limits *lim,
                 struct sbx_plan_owned **ret, char *err, size_t errsz);
/* Build the box po describes (in a cgroup of its own when there are)
 * and watch it. */
int run_start_box(struct run *run, struct sbx_plan_owned *po);
/* Watch the box's pidfd, status socket and pipes on the loop. */
int run_watch_box(struct run *run);

/* warm.c: if the cache holds a box of layout, move it into b (which
 * holds none) and return true; otherwise drop what the cache holds (it
 * would not fit the next run either) and return false. */
bool warm_take(struct sandbox *s, const char *layout, struct sbx_box *b);
/* No warm box is built now: a run is starting. */
void warm_hold(struct sandbox *s);
/* Drop the cache (sandbox_free). */
void warm_free(struct sandbox *s);
