/* sandbox.c: the sandbox subsystem's start and stop (see sandbox.h), its
 * top: the layers below are put together in sandbox_new and stopped from
 * the top down in sandbox_free; nothing below calls up into it. */
#include "sandbox/sandbox.h"
#include "sandbox/state.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/json.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "sandbox/host/base.h"
#include "sandbox/host/cgroup.h"
#include "sandbox/host/cgroup_ahead.h"
#include "sandbox/host/host.h"
#include "sandbox/host/job.h"
#include "sandbox/output/artifact.h"
#include "sandbox/pools/warm.h"
#include "sandbox/pools/zygote.h"
#include "sandbox/run/run.h"
#include "sandbox/run/run_private.h"
#include "sandbox/session/session.h"
#include "sandbox/workspace/admit.h"
#include "sandbox/workspace/hide.h"
#include "sandbox/workspace/ledger.h"

/* The copies of earlier runs (of this server or another) past the
 * artifact directory's caps go at start, off the loop. */
struct prune {
	char *dir;
	uint64_t max_bytes, max_age_ms;
};

static void prune_work(void *data, const atomic_bool *cancel)
{
	(void)cancel;
	struct prune *p = data;
	int r = sbx_artifact_dir_prune(p->dir, p->max_bytes, p->max_age_ms, NULL);
	if (r > 0)
		log_info("sandbox: removed the artifact copies of %d old runs from %s", r, p->dir);
}

static void prune_free(void *data)
{
	struct prune *p = data;
	free(p->dir);
	free(p);
}

static void prune_at_start(struct sandbox *s)
{
	const struct sbx_config *c = &s->config;
	if (!c->artifact_dir || (!c->artifact_dir_max_bytes && !c->artifact_dir_max_age_ms))
		return;
	struct prune *p = calloc(1, sizeof(*p));
	if (!p || !(p->dir = strdup(c->artifact_dir))) {
		free(p);
		return;
	}
	p->max_bytes = c->artifact_dir_max_bytes;
	p->max_age_ms = c->artifact_dir_max_age_ms;
	if (sbx_job_start(&s->base, prune_work, NULL, prune_free, p, NULL) < 0)
		prune_free(p);
}

/* For the base's jobs: whether a run holds a box or waits for one. */
static bool runs_busy(void *data)
{
	const struct sandbox *s = data;
	return s->active || s->queue;
}

int sandbox_new(struct loop *loop, json_object *section, struct sandbox **ret_sandbox, char *err,
                size_t errsz)
{
	struct sandbox *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	s->base.loop = loop;
	s->base.host = sbx_host_get();
	s->base.busy = runs_busy;
	s->base.busy_data = s;
	s->relay_pipe[0] = s->relay_pipe[1] = s->relay_null = -1;
	s->relay_hold[0] = s->relay_hold[1] = -1;
	int r = sbx_config_resolve(section, &s->config, err, errsz);
	if (r < 0) {
		free(s);
		return r;
	}
	/* Runs get a cgroup v2 each when one is writable (sandbox.cgroup:
	 * "auto", "off" or a delegated directory); rlimits apply either way.
	 * A sandbox without a loop starts workers only: no cgroups. */
	if (loop) {
		const char *setting = "auto";
		json_get_string(section, "cgroup", &setting);
		char why[PATH_MAX + 128] = "";
		r = sbx_cgroup_root_open(setting, &s->base.cgroups, why, sizeof(why));
		if (r < 0) {
			snprintf(err, errsz, "sandbox.cgroup: %s", why);
			sbx_config_release(&s->config);
			free(s);
			return r;
		}
		log_debug("sandbox: %s", why);
		s->cgroup_why = strdup(why);
		prune_at_start(s);
	}
	*ret_sandbox = s;
	return 0;
}

int sandbox_configure(struct sandbox *s, json_object *section, char *err, size_t errsz)
{
	struct sbx_config c;
	int r = sbx_config_resolve(section, &c, err, errsz);
	if (r < 0)
		return r;
	if (!s) {
		sbx_config_release(&c);
		return 0;
	}
	sbx_config_release(&s->config);
	s->config = c;
	warm_plan_drop(s);
	return 0;
}

const char *sandbox_workspace(const struct sandbox *s)
{
	return s->workspace;
}

bool sandbox_workspace_on(const struct sandbox *s)
{
	return s->config.workspace_on;
}

int sandbox_python(const struct sandbox *s, struct sbx_pyenv *ret, char *err, size_t errsz)
{
	struct sbx_plan_ws ws;
	const struct sbx_plan_ws *w = sbx_plan_ws_of(s, &ws);
	return sbx_pyenv_find(s->config.section, w ? w->host : NULL, ret, err, errsz);
}

const struct sbx_limits *sandbox_limits(const struct sandbox *s)
{
	return &s->config.limits;
}

bool sandbox_cgroup(const struct sandbox *s, unsigned *ret_controllers, const char **ret_why)
{
	*ret_controllers = s->base.cgroups ? sbx_cgroup_root_controllers(s->base.cgroups) : 0;
	*ret_why = s->cgroup_why ? s->cgroup_why : "";
	return s->base.cgroups != NULL;
}

int sandbox_job_start(struct sandbox *s, sbx_job_work_fn work, sbx_job_done_fn done,
                      sbx_job_free_fn free_fn, void *data, struct sbx_job **ret)
{
	return sbx_job_start(&s->base, work, done, free_fn, data, ret);
}

/* What sandbox_free stops above its base: the warm box, the sessions,
 * the runs, the zygote (each may leave a pid 1 ending in the base). */
static void free_above_base(struct sandbox *s)
{
	warm_free(s);
	sbx_sessions_free(s);
	while (s->runs)
		run_cancel(s->runs);
	/* Cancelling a run that held a slot asked for the queue's turn. */
	if (s->queue_timer) {
		loop_timer_stop(s->base.loop, s->queue_timer);
		s->queue_timer = NULL;
	}
	sbx_zygote_free(s);
}

/* The pid 1s still ending, the jobs (the runs' cgroups among them) and
 * the cgroups: all done before the hide list, whose jobs read it. */
static void free_base_and_below(struct sandbox *s)
{
	sbx_base_release(&s->base);
	sbx_hide_free(s);
	sbx_ws_ledger_free(s);
	sbx_config_release(&s->config);
	free(s->workspace);
	free(s->survey_files);
	free(s->cgroup_why);
	run_relay_close(s);
	free(s);
}

void sandbox_free(struct sandbox *s)
{
	if (!s)
		return;
	free_above_base(s);
	free_base_and_below(s);
}

/* The sandbox a reaper took over: still reachable in the caller, which
 * no longer frees it (its pid 1s and cgroups are the reaper's), so that
 * LeakSanitizer does not call it lost. Volatile: a store the compiler
 * would otherwise drop, as nothing reads it. */
static struct sandbox *volatile handed_over;

int sandbox_free_apart(struct sandbox *s)
{
	if (!s)
		return 0;
	free_above_base(s);
	if (!s->base.dying) {
		free_base_and_below(s);
		return 0;
	}
	/* A fork copies only the calling thread: every other one is ended
	 * first (the jobs, the cgroup maker; the caller's own are its to
	 * end). What is left to wait for is the kernel's. */
	sbx_jobs_stop(&s->base);
	sbx_cgroup_ahead_stop(&s->base);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		free_base_and_below(s);
		return 0;
	}
	if (pid > 0) {
		handed_over = s;
		return 1;
	}
	/* The reaper: out of the caller's session and off its terminal and
	 * pipes (a shell's $(...) waits for its stdout to close, not for
	 * this), with the caller's blocked signals still blocked. It waits
	 * for every pid 1 (SIGKILL, then its end) and removes the cgroups,
	 * as sandbox_free does, then ends. */
	setsid();
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		if (null > 2)
			close(null);
	}
	free_base_and_below(s);
	_exit(0);
}

int sandbox_set_workspace(struct sandbox *s, const char *path, char *err, size_t errsz)
{
	err[0] = '\0';
	free(s->workspace);
	s->workspace = NULL;
	warm_plan_drop(s);
	if (!path)
		return 0;
	return sbx_ws_admit(path, s->base.host->euid == 0, &s->workspace, err, errsz);
}
