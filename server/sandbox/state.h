/* state.h: struct sandbox, the state the sandbox's upper layers share
 * (pools/, workspace/, run/, session/) and the top (sandbox.c) owns.
 * Each member says which layer's it is; a layer touches only its own
 * members and those of the layers below it (the base, the
 * configuration). The layers below (host/, box/, output/) never see it:
 * they are handed their own parts (struct sbx_base, a plan's workspace).
 * A header of its own, below every layer that includes it, so that no
 * layer includes the top's sandbox.h. */
#pragma once

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "sandbox/box/plan.h"
#include "sandbox/config.h"
#include "sandbox/host/host.h"
#include "sandbox/host/limits.h"
#include "sandbox/host/base.h"

struct loop_timer;
struct run;
struct sbx_box;
struct sbx_hide;
struct sbx_ws_ledger;
struct sbx_session;
struct sbx_zygote;

struct sandbox {
	/* host/: the loop, the host's facts, jobs, reaping, cgroups. */
	struct sbx_base base;
	/* Why the runs' cgroups are what they are (sbx_cgroup_root_open's
	 * sentence at start), for kiln doctor; NULL without a loop. */
	char *cgroup_why;
	/* config.h: the "sandbox" section, resolved. */
	struct sbx_config config;
	/* run/: */
	struct run *runs; /* alive, newest first */
	/* The run queue (run.c): runs holding a slot, those waiting for one
	 * (oldest first) and the turn that starts the next ones. */
	unsigned long active, nqueued;
	struct run *queue, *queue_tail;
	struct loop_timer *queue_timer;
	unsigned long next_id;
	/* pools/: the warm-box cache (warm.c): boxes built ahead of the next run.
	 * Off unless config.warm_boxes. */
	struct sbx_box *warm; /* the one built box waiting for a run, or NULL */
	struct loop_timer *warm_timer;
	char warm_language[64];
	struct sbx_limits warm_limits; /* the last run's: they fix the tmpfs size */
	bool have_warm_limits;
	/* The workspace folder the warm box holds, as stat() named it just
	 * before the box was built: a folder made anew at the same path is
	 * another folder (warm_take). */
	dev_t warm_ws_dev;
	ino_t warm_ws_ino;
	/* The plan the warm box was built from, for the run that takes it
	 * (warm_plan_take): the limits it was made with, and the host as
	 * it was just before (/, /etc and the interpreter). */
	struct sbx_plan_owned *warm_plan;
	struct sbx_limits warm_plan_limits;
	struct sbx_plan_note {
		struct stat st[3];
	} warm_plan_note;
	/* workspace/: the host folder the runs see, read-only under a private writable
	 * layer, at its own path (sandbox_set_workspace); NULL: none. */
	char *workspace;
	struct sbx_hide *hide;        /* the workspace's secrets, remembered (hide.h) */
	char *survey_files;           /* the workspace's files, from the last survey (survey.h) */
	struct sbx_ws_ledger *ledger; /* recent runs' changes, to apply (ledger.h) */
	/* session/: sessions (session.h), open or ended, newest first. */
	struct sbx_session *sessions;
	unsigned long next_session;
	/* pools/: the Python zygote (zygote.h): the one built, or NULL; the key of
	 * the one to build when its timer fires; how many died or failed. */
	struct sbx_zygote *zygote;
	struct loop_timer *zygote_timer;
	char *zygote_want;
	unsigned zygote_failures;
	/* run/: run_output.c's relay of output (run_sink's relay): a holding pipe
	 * that a box's output is moved into (splice(2), the box's pipe is
	 * free for the program's next write at once), a scratch pipe that
	 * tee(2) copies the held bytes into, to be read and checked while
	 * they stay held, and /dev/null, where what was read the usual way
	 * is dropped from the holding pipe. Made at the first relay; -1
	 * before, and relay_off once they could not be made. Empty between
	 * two calls of the relay (the loop has one thread). */
	int relay_pipe[2], relay_hold[2], relay_null;
	bool relay_off;
};

/* The workspace a run's box shows, as a plan takes it (plan.h): into
 * *buf, and buf; NULL when runs show none. */
static inline const struct sbx_plan_ws *sbx_plan_ws_of(const struct sandbox *s,
                                                       struct sbx_plan_ws *buf)
{
	if (!s->workspace || !s->config.workspace_on)
		return NULL;
	*buf = (struct sbx_plan_ws){s->workspace, s->config.hide, s->config.nhide};
	return buf;
}
