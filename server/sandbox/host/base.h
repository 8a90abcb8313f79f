/* base.h: struct sbx_base, what every box of one server stands on: the
 * event loop, the host's facts, the job threads (job.h), the pid 1s
 * being reaped (reap.h), the cgroup root and the cgroup made ahead
 * (cgroup_ahead.h). A header of its own, below every file of host/ that
 * keeps a part of it, so that none of them includes another's. Set up
 * by its owner (sandbox.c), ended with sbx_base_release (host.h). */
#pragma once

#include <stdbool.h>

struct loop;
struct sbx_cgroup;
struct sbx_cgroup_root;
struct sbx_dying;
struct sbx_host;
struct sbx_job;
struct cg_maker;

/* What every box of one server stands on. Zeroed, with host set, it is
 * a base for workers only (no loop: jobs run in place, no cgroups). */
struct sbx_base {
	struct loop *loop;           /* NULL: a base for workers only */
	const struct sbx_host *host; /* sbx_host_get() */
	struct sbx_job *jobs;        /* work on threads of their own (job.c) */
	struct sbx_dying *dying;     /* pid 1s that reported and are ending */
	/* Where boxes' cgroups go (cgroup.h), from the config's
	 * sandbox.cgroup at start; NULL: rlimits only. */
	struct sbx_cgroup_root *cgroups;
	unsigned long next_box;
	/* The next box's cgroup, made ahead on a thread of its own
	 * (sbx_cgroup_take), or NULL; whether one is being made; the thread
	 * (cgroup_ahead.c), whether it could not be started, and whether a
	 * box took a cgroup yet (the thread starts with the second). */
	struct sbx_cgroup *cg_ahead;
	bool cg_making, cg_maker_failed, cg_taken;
	struct cg_maker *cg_maker;
	/* The owner's answer to "is anything running?", asked when the last
	 * job of a burst ends (job.c gives memory back when nothing is);
	 * NULL: never busy. */
	bool (*busy)(void *data);
	void *busy_data;
	/* sbx_jobs_stop is ending the jobs: the base is being freed, and
	 * its memory with it, so none is given back page by page. */
	bool stopping;
};
