/* sandbox.h: the sandbox subsystem: what is prepared once per server (the
 * compiled seccomp filter, the kernel's Landlock ABI, who the server runs
 * as), its resolved configuration, and the list of runs alive, so that
 * stopping the server kills every box. Runs themselves are in run.h. The
 * sandbox knows the event loop and its own config section, nothing of the
 * protocol: whoever starts a run gives it a sink (run.h). */
#pragma once

#include <json-c/json.h>
#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "sandbox/host/limits.h"

struct loop;
struct run;

/* Where the code's writable workspace is mounted inside the box; the
 * validator's file rules treat it as inside by default. */
#define SBX_WORKSPACE "/work"

struct loop_timer;
struct sbx_dying;
struct sbx_cgroup;
struct sbx_cgroup_root;
struct sbx_hide;
struct sbx_job;
struct sbx_box;
struct sbx_session;
struct sbx_zygote;

/* The config's "sandbox" section, checked and resolved once (at
 * initialize, or when `kiln run` starts) so that a bad value is reported
 * against the config, naming the member, not against every request. */
struct sbx_config {
	/* An owned copy of the section: the plan reads "languages" and
	 * "env" from it, the limits "limits" and "maxLimits" (all checked
	 * here). */
	json_object *section;
	struct sbx_limits limits; /* the defaults a request lays its own over */
	bool warm_boxes;
	char *artifact_dir; /* where large artifacts are copied; NULL: nowhere */
	uint64_t artifact_inline_bytes, artifact_max_files, artifact_max_bytes;
	/* The copy directory's caps (artifact.h's prune): what the runs'
	 * copies in artifact_dir may hold on disk, and for how long; 0: no
	 * cap. Kept after each run that copied, and at start. */
	uint64_t artifact_dir_max_bytes, artifact_dir_max_age_ms;
	/* sandbox.workspace: whether a run sees the workspace (mode
	 * "overlay", the default, or "none") and which names are hidden
	 * from it (shell patterns matched against each entry's name at any
	 * depth: `*`, `?`, `[...]`). */
	bool workspace_on;
	char **hide; /* ws_nhide patterns, owned */
	size_t nhide;
	/* sandbox.workspace.maxEntries: past this many entries in the
	 * workspace, runs fail rather than show it unchecked (hide.h). */
	unsigned long hide_max_entries;
	uint64_t session_idle_ms; /* sandbox.sessionIdleMs; 0: never */
	/* sandbox.zygote: Python runs fork from a zygote (zygote.h), whose
	 * modules are sandbox.zygotePreload (read from section). */
	bool zygote;
	/* sandbox.maxConcurrentRuns: runs that hold a box at once; more
	 * wait in the queue (run.h). Default: twice the online cores, at
	 * least 2. */
	uint64_t max_concurrent_runs;
	/* sandbox.maxQueuedRuns: runs that may wait; one more is refused
	 * (-EAGAIN, with the reason). Default 64. */
	uint64_t max_queued_runs;
};

/* The default sandbox.workspace.hide. */
extern const char *const sbx_default_hide[];

/* The most patterns sandbox.workspace.hide may hold. */
#define SBX_MAX_HIDE 64

/* Check section (the config's "sandbox" object, borrowed, may be NULL)
 * and resolve it into ret. -EINVAL with a sentence in err that names the
 * member ("sandbox.limits.wallMs must be a positive integer"); -ENOMEM. */
int sbx_config_resolve(json_object *section, struct sbx_config *ret, char *err, size_t errsz);
void sbx_config_release(struct sbx_config *c);

/* What is true of this host and process for every box: built once per
 * process and shared by the server's sandbox, `kiln run`'s and every
 * worker (the validator's, on whatever thread). Never freed. */
struct sbx_host {
	struct sock_fprog filter; /* empty until sbx_host_filter_ready() */
	int filter_err;           /* why it could not be compiled */
	int landlock_abi;
	uid_t euid;
	gid_t egid;
};

/* The host facts (ids, Landlock ABI); thread-safe. */
const struct sbx_host *sbx_host_get(void);

/* Compile the seccomp filter if that has not happened yet: on the first
 * box, not at start, where libseccomp's 1 ms (here) would delay the
 * server's first answer. Thread-safe. -errno with a log line. */
int sbx_host_filter_ready(void);

struct sandbox {
	struct loop *loop;
	const struct sbx_host *host; /* sbx_host_get() */
	struct sbx_config config;
	struct run *runs; /* alive, newest first */
	/* The run queue (run.c): runs holding a slot, those waiting for one
	 * (oldest first) and the turn that starts the next ones. */
	unsigned long active, nqueued;
	struct run *queue, *queue_tail;
	struct loop_timer *queue_timer;
	unsigned long next_id;
	/* The warm-box cache (warm.c): boxes built ahead of the next run.
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
	struct sbx_dying *dying; /* pid 1s that reported and are ending */
	struct sbx_job *jobs;    /* work on threads of their own (job.c) */
	/* Where runs' cgroups go (cgroup.h), from the config's
	 * sandbox.cgroup at start; NULL: rlimits only. */
	struct sbx_cgroup_root *cgroups;
	unsigned long next_box;
	/* The next box's cgroup, made ahead on a thread of its own
	 * (sandbox_cgroup_take), or NULL; whether one is being made; the
	 * thread (sandbox.c), whether it could not be started, and whether
	 * a box took a cgroup yet (the thread starts with the second). */
	struct sbx_cgroup *cg_ahead;
	bool cg_making, cg_maker_failed, cg_taken;
	struct cg_maker *cg_maker;
	/* The host folder the runs see, read-only under a private writable
	 * layer, at its own path (sandbox_set_workspace); NULL: none. */
	char *workspace;
	struct sbx_hide *hide; /* the workspace's secrets, remembered (hide.h) */
	char *survey_files;    /* the workspace's files, from the last survey (survey.h) */
	/* Sessions (session.h), open or ended, newest first. */
	struct sbx_session *sessions;
	unsigned long next_session;
	/* The Python zygote (zygote.h): the one built, or NULL; the key of
	 * the one to build when its timer fires; how many died or failed. */
	struct sbx_zygote *zygote;
	struct loop_timer *zygote_timer;
	char *zygote_want;
	unsigned zygote_failures;
	/* run_output.c's relay of output (run_sink's relay): a holding pipe
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

/* Prepare the subsystem: who the server is, the Landlock ABI, the
 * configuration (section: the config's "sandbox" object, borrowed, may be
 * NULL), the cgroup root it names. loop may be NULL for a sandbox that
 * only starts workers (worker.h). -EINVAL with a sentence in err for a
 * section that is not valid; -errno with a sentence for a cgroup setting
 * that cannot be used. */
int sandbox_new(struct loop *loop, json_object *section, struct sandbox **ret_sandbox, char *err,
                size_t errsz);

/* Check section and make it the configuration of the runs that start from
 * now on (the cgroup setting is read at start only). s may be NULL: only
 * check. -EINVAL with a sentence naming the member; nothing changes then. */
int sandbox_configure(struct sandbox *s, json_object *section, char *err, size_t errsz);

/* Make path (a host folder) the workspace of the runs that start from
 * now on, or none with NULL. The folder is resolved (realpath) and must
 * be a directory the box can show at its own path: not /, not the home
 * folder itself, not under /usr, /etc, /proc, /dev, /sys or the box's
 * /code, and not /work or /tmp themselves. -EINVAL (or -errno) with a
 * sentence in err; the workspace is then none. */
int sandbox_set_workspace(struct sandbox *s, const char *path, char *err, size_t errsz);

/* Compile the seccomp filter if that has not happened yet. */
int sandbox_filter_ready(struct sandbox *s);
/* Kill every run still alive (their done callbacks are not called), wait
 * for every pid 1 to be gone and every job thread to end. */
void sandbox_free(struct sandbox *s);

/* Take pidfd, a pid 1 that has reported its program's end (everything
 * else in its box is dead) and is exiting, and its box's cgroup (or
 * NULL): reap it when it is gone, then remove the cgroup (off the loop). */
void sandbox_reap_later(struct sandbox *s, int pidfd, struct sbx_cgroup *cg);
/* Close fd off the loop's thread: the last fd of a box's workspace, whose
 * close frees its tmpfs (750 MiB took 100 ms here). */
void sandbox_close_later(struct sandbox *s, int fd);
/* Remove a cgroup whose processes are all dead or dying, off the loop's
 * thread (it may take up to a second). */
void sandbox_cgroup_free_later(struct sandbox *s, struct sbx_cgroup *cg);
/* A new cgroup under s->cgroups (which must be set) for a box: the one
 * made ahead if it is there, else one made now; then the next one is
 * made by a thread of the sandbox's own. A mkdir under cgroupfs waits
 * for the kernel's cgroup lock while any process on the machine moves
 * between cgroups (an RCU grace period or more: p90 2-19 ms, up to 144
 * ms here under such moves, 55 us without; docs/performance.md), so the
 * loop makes none unless a box comes before the last one's successor is
 * ready (the first two boxes, or two in a row). 0, or -errno with *ret
 * NULL. */
int sandbox_cgroup_take(struct sandbox *s, struct sbx_cgroup **ret);
/* sandbox_free: the thread that makes cgroups ahead ends; what it made,
 * and the cgroup made ahead and not taken, are removed (before the root). */
void sandbox_cgroup_ahead_stop(struct sandbox *s);
