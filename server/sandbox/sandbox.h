/* sandbox.h: the sandbox subsystem (k->sandbox): what is prepared once
 * per server (the compiled seccomp filter, the kernel's Landlock ABI, who
 * the server runs as) and the list of runs alive, so that stopping the
 * server kills every box. Runs themselves are in run.h. */
#pragma once

#include <linux/filter.h>
#include <stdbool.h>
#include <sys/types.h>

#include "sandbox/limits.h"

struct kiln;
struct run;

/* Where the code's writable workspace is mounted inside the box; the
 * validator's file rules treat it as inside by default. */
#define SBX_WORKSPACE "/work"

struct loop_timer;
struct sbx_dying;
struct sbx_cgroup;
struct sbx_cgroup_root;

struct sandbox {
	struct kiln *k;
	struct sock_fprog filter; /* empty until sandbox_filter_ready() */
	int landlock_abi;
	uid_t euid;
	gid_t egid;
	struct run *runs; /* alive, newest first; the warm box too */
	unsigned long next_id;
	/* Warm boxes (run.c): built ahead of the next run. Off unless the
	 * server turns them on (the config's sandbox.warmBoxes). */
	bool warm_boxes;
	struct run *warm; /* the one built box waiting for a run, or NULL */
	struct loop_timer *warm_timer;
	char warm_language[64];
	struct sbx_limits warm_limits; /* the last run's: they fix the tmpfs size */
	bool have_warm_limits;
	struct sbx_dying *dying; /* pid 1s that reported and are ending */
	/* Where runs' cgroups go (cgroup.h), from the config's
	 * sandbox.cgroup at start; NULL: rlimits only. */
	struct sbx_cgroup_root *cgroups;
	unsigned long next_box;
};

/* Prepare the subsystem: who the server is, the Landlock ABI, the cgroup
 * root. -errno with a log line on failure. */
int sandbox_new(struct kiln *k, struct sandbox **ret_sandbox);

/* Compile the seccomp filter if that has not happened yet: on the first
 * box, not at start, where libseccomp's 1 ms (here) would delay the
 * server's first answer. -errno with a log line. */
int sandbox_filter_ready(struct sandbox *s);
/* Kill every run still alive (their done callbacks are not called) and
 * wait for every pid 1 to be gone. */
void sandbox_free(struct sandbox *s);

/* Take pidfd, a pid 1 that has reported its program's end (everything
 * else in its box is dead) and is exiting, and its box's cgroup (or
 * NULL): reap it when it is gone, then remove the cgroup. */
void sandbox_reap_later(struct sandbox *s, int pidfd, struct sbx_cgroup *cg);
