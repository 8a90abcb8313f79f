/* sandbox.c: the sandbox subsystem's start and stop (see sandbox.h). */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core/json.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "sandbox/output/artifact.h"
#include "sandbox/box/box.h"
#include "sandbox/host/cgroup.h"
#include "sandbox/box/child.h"
#include "sandbox/host/filter.h"
#include "sandbox/workspace/hide.h"
#include "sandbox/host/job.h"
#include "sandbox/box/plan.h"
#include "sandbox/run/run.h"
#include "sandbox/run/run_private.h"
#include "sandbox/session/session.h"
#include "sandbox/pools/zygote.h"

/* Members of the section, so that a misspelt one is an error rather
 * than a setting silently not applied. */
static const char *const known[] = {
    "limits",
    "maxLimits",
    "env",
    "warmBoxes",
    "cgroup",
    "languages",
    "artifactDir",
    "artifactInlineBytes",
    "artifactMaxFiles",
    "artifactMaxBytes",
    "workspace",
    "sessionIdleMs",
    "artifactDirMaxBytes",
    "artifactDirMaxAgeMs",
    "maxConcurrentRuns",
    "maxQueuedRuns",
    "zygote",
    "zygotePreload",
};

/* Credentials and keys that a project folder (or a home folder) often
 * holds: hidden from every run unless sandbox.workspace.hide says
 * otherwise. */
const char *const sbx_default_hide[] = {
    ".git", ".env",   ".env.*",  ".ssh",  ".aws",   ".netrc",  "*.pem", "*.key",
    "id_*", ".gnupg", ".docker", ".kube", ".npmrc", ".pypirc", NULL,
};

static void free_hide(char **hide, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(hide[i]);
	free(hide);
}

/* sandbox.workspace: {"mode": "overlay"|"none", "hide": [patterns],
 * "maxEntries": n}. */
static int workspace_config(json_object *section, struct sbx_config *c, char *err, size_t errsz)
{
	json_object *ws = json_get(section, "workspace");
	c->workspace_on = true;
	if (ws && !json_object_is_type(ws, json_type_object)) {
		snprintf(err, errsz, "sandbox.workspace must be an object");
		return -EINVAL;
	}
	json_object *hide = NULL;
	c->hide_max_entries = SBX_HIDE_DEFAULT_MAX_ENTRIES;
	if (ws) {
		json_object_object_foreach(ws, key, v)
		{
			if (strcmp(key, "mode") == 0) {
				const char *m = json_object_get_string(v);
				if (!json_object_is_type(v, json_type_string) ||
				    (strcmp(m, "overlay") != 0 && strcmp(m, "none") != 0)) {
					snprintf(err, errsz,
					         "sandbox.workspace.mode must be \"overlay\" or "
					         "\"none\"");
					return -EINVAL;
				}
				c->workspace_on = strcmp(m, "overlay") == 0;
			} else if (strcmp(key, "hide") == 0) {
				hide = v;
			} else if (strcmp(key, "maxEntries") == 0) {
				if (!json_object_is_type(v, json_type_int) ||
				    json_object_get_int64(v) < 1 ||
				    json_object_get_int64(v) > (int64_t)SBX_HIDE_MAX_MAX_ENTRIES) {
					snprintf(err, errsz,
					         "sandbox.workspace.maxEntries must be 1 to %lu",
					         SBX_HIDE_MAX_MAX_ENTRIES);
					return -EINVAL;
				}
				c->hide_max_entries = (unsigned long)json_object_get_int64(v);
			} else {
				snprintf(
				    err, errsz,
				    "sandbox.workspace.%s is not a workspace setting (mode, hide, "
				    "maxEntries)",
				    key);
				return -EINVAL;
			}
		}
	}
	size_t n = 0;
	if (hide) {
		if (!json_object_is_type(hide, json_type_array) ||
		    json_object_array_length(hide) > SBX_MAX_HIDE) {
			snprintf(
			    err, errsz,
			    "sandbox.workspace.hide must be an array of at most %d name patterns",
			    SBX_MAX_HIDE);
			return -EINVAL;
		}
		n = json_object_array_length(hide);
	} else {
		while (sbx_default_hide[n])
			n++;
	}
	char **list = calloc(n + 1, sizeof(*list));
	if (!list)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *pat = sbx_default_hide[i];
		if (hide) {
			json_object *e = json_object_array_get_idx(hide, i);
			pat = json_object_get_string(e);
			if (!json_object_is_type(e, json_type_string) || !pat[0] ||
			    strlen(pat) > 255 || strchr(pat, '/')) {
				free_hide(list, i);
				snprintf(err, errsz,
				         "sandbox.workspace.hide[%zu] must be a file name pattern "
				         "(no '/', 1 to 255 bytes)",
				         i);
				return -EINVAL;
			}
		}
		if (!(list[i] = strdup(pat))) {
			free_hide(list, i);
			return -ENOMEM;
		}
	}
	c->hide = list;
	c->nhide = n;
	return 0;
}

/* sandbox.zygote (true or false) and sandbox.zygotePreload (module
 * names, which the zygote imports in its box; a failed import is only
 * logged). */
static int zygote_config(json_object *section, struct sbx_config *c, char *err, size_t errsz)
{
	c->zygote = SBX_ZYGOTE_DEFAULT;
	json_object *v = json_get(section, "zygote");
	if (v && !json_object_is_type(v, json_type_boolean)) {
		snprintf(err, errsz, "sandbox.zygote must be true or false");
		return -EINVAL;
	}
	if (v)
		c->zygote = json_object_get_boolean(v);
	v = json_get(section, "zygotePreload");
	if (!v)
		return 0;
	size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
	bool ok = json_object_is_type(v, json_type_array) && n <= 256;
	for (size_t i = 0; ok && i < n; i++) {
		const char *m = json_object_get_string(json_object_array_get_idx(v, i));
		ok =
		    json_object_is_type(json_object_array_get_idx(v, i), json_type_string) &&
		    m[0] && strlen(m) < 128 && m[0] != '.' &&
		    strspn(m, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") ==
		        strlen(m);
	}
	if (!ok) {
		snprintf(err, errsz,
		         "sandbox.zygotePreload must be an array of at most 256 module names "
		         "(such as \"numpy\" or \"matplotlib.pyplot\")");
		return -EINVAL;
	}
	return 0;
}

static int count(json_object *section, const char *key, uint64_t def, uint64_t *ret, char *err,
                 size_t errsz)
{
	json_object *v = json_get(section, key);
	if (!v) {
		*ret = def;
		return 0;
	}
	if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0) {
		snprintf(err, errsz, "sandbox.%s must be a non-negative integer", key);
		return -EINVAL;
	}
	*ret = (uint64_t)json_object_get_int64(v);
	return 0;
}

/* The artifact directory: the config's, else the XDG cache's. */
static int artifact_dir(json_object *section, char **ret, char *err, size_t errsz)
{
	json_object *v = json_get(section, "artifactDir");
	char dir[PATH_MAX] = "";
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	if (v) {
		const char *cfg = json_object_get_string(v);
		if (!json_object_is_type(v, json_type_string) || cfg[0] != '/' ||
		    strlen(cfg) >= sizeof(dir) - 64) {
			snprintf(err, errsz, "sandbox.artifactDir must be an absolute path");
			return -EINVAL;
		}
		snprintf(dir, sizeof(dir), "%s", cfg);
	} else if (xdg && xdg[0] == '/' && strlen(xdg) < sizeof(dir) - 128) {
		snprintf(dir, sizeof(dir), "%s/kiln-artifacts", xdg);
	} else if (home && home[0] == '/' && strlen(home) < sizeof(dir) - 128) {
		snprintf(dir, sizeof(dir), "%s/.cache/kiln-artifacts", home);
	}
	*ret = NULL;
	if (dir[0] && !(*ret = strdup(dir)))
		return -ENOMEM;
	return 0;
}

/* The environment, planned once: what the plan would refuse at every run
 * is refused here. (The languages of sandbox.languages are the language
 * registry's to check.) */
static int check_plans(json_object *section, const struct sbx_limits *lim, char *err, size_t errsz)
{
	const struct sandbox probe = {.host = sbx_host_get()};
	json_object *langs = json_get(section, "languages");
	if (langs && !json_object_is_type(langs, json_type_object)) {
		snprintf(err, errsz, "sandbox.languages must be an object");
		return -EINVAL;
	}
	if (!json_get(section, "env"))
		return 0;
	struct sbx_plan_owned *po = NULL;
	int r = sbx_plan_build(&probe, section, "bash", "", lim, &po, err, errsz);
	sbx_plan_free(po);
	/* -ENOENT: not installed here; the run says so. */
	return r == -EINVAL || r == -ENOMEM ? r : 0;
}

int sbx_config_resolve(json_object *section, struct sbx_config *ret, char *err, size_t errsz)
{
	struct sbx_config c = {0};
	err[0] = '\0';
	if (section && !json_object_is_type(section, json_type_object)) {
		snprintf(err, errsz, "sandbox must be an object");
		return -EINVAL;
	}
	if (section) {
		json_object_object_foreach(section, key, v)
		{
			(void)v;
			size_t i = 0;
			while (i < ARRAY_SIZE(known) && strcmp(known[i], key) != 0)
				i++;
			if (i == ARRAY_SIZE(known)) {
				snprintf(err, errsz, "sandbox.%s is not a sandbox setting", key);
				return -EINVAL;
			}
		}
	}
	int r = sbx_limits_resolve(section, NULL, &c.limits, err, errsz);
	if (r < 0)
		return r;
	c.warm_boxes = true;
	json_object *v = json_get(section, "warmBoxes");
	if (v && !json_object_is_type(v, json_type_boolean)) {
		snprintf(err, errsz, "sandbox.warmBoxes must be true or false");
		return -EINVAL;
	}
	if (v)
		c.warm_boxes = json_object_get_boolean(v);
	if ((r = zygote_config(section, &c, err, errsz)) < 0)
		return r;
	v = json_get(section, "cgroup");
	if (v && !json_object_is_type(v, json_type_string)) {
		snprintf(err, errsz,
		         "sandbox.cgroup must be \"auto\", \"off\" or an absolute path");
		return -EINVAL;
	}
	if ((r = count(section, "artifactInlineBytes", 1u << 20, &c.artifact_inline_bytes, err,
	               errsz)) < 0 ||
	    (r = count(section, "artifactMaxFiles", 32, &c.artifact_max_files, err, errsz)) < 0 ||
	    (r = count(section, "artifactMaxBytes", 256u << 20, &c.artifact_max_bytes, err,
	               errsz)) < 0 ||
	    (r = count(section, "sessionIdleMs", 30 * 60 * 1000, &c.session_idle_ms, err, errsz)) <
	        0 ||
	    (r = count(section, "artifactDirMaxBytes", 1ull << 30, &c.artifact_dir_max_bytes, err,
	               errsz)) < 0 ||
	    (r = count(section, "artifactDirMaxAgeMs", 7ull * 24 * 3600 * 1000,
	               &c.artifact_dir_max_age_ms, err, errsz)) < 0)
		return r;
	/* Boxes are mostly waiting on something (I/O, a sleep, the client):
	 * two a core keeps the cores busy without a box per request. */
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	if ((r = count(section, "maxConcurrentRuns", cores > 1 ? 2 * (uint64_t)cores : 2,
	               &c.max_concurrent_runs, err, errsz)) < 0)
		return r;
	if (c.max_concurrent_runs < 1 || c.max_concurrent_runs > 4096) {
		snprintf(err, errsz, "sandbox.maxConcurrentRuns must be 1 to 4096");
		return -EINVAL;
	}
	if ((r = count(section, "maxQueuedRuns", 64, &c.max_queued_runs, err, errsz)) < 0)
		return r;
	if (c.max_queued_runs > 65536) {
		snprintf(err, errsz, "sandbox.maxQueuedRuns must be 0 to 65536");
		return -EINVAL;
	}
	if ((r = check_plans(section, &c.limits, err, errsz)) < 0)
		return r;
	if ((r = workspace_config(section, &c, err, errsz)) < 0)
		return r;
	if ((r = artifact_dir(section, &c.artifact_dir, err, errsz)) < 0) {
		free_hide(c.hide, c.nhide);
		return r;
	}
	c.section = section ? json_copy(section) : json_object_new_object();
	if (!c.section) {
		free(c.artifact_dir);
		free_hide(c.hide, c.nhide);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

void sbx_config_release(struct sbx_config *c)
{
	json_object_put(c->section);
	free(c->artifact_dir);
	free_hide(c->hide, c->nhide);
	*c = (struct sbx_config){0};
}

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
	if (sbx_job_start(s, prune_work, NULL, prune_free, p, NULL) < 0)
		prune_free(p);
}

int sandbox_new(struct loop *loop, json_object *section, struct sandbox **ret_sandbox, char *err,
                size_t errsz)
{
	struct sandbox *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	s->loop = loop;
	s->host = sbx_host_get();
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
		r = sbx_cgroup_root_open(setting, &s->cgroups, why, sizeof(why));
		if (r < 0) {
			snprintf(err, errsz, "sandbox.cgroup: %s", why);
			sbx_config_release(&s->config);
			free(s);
			return r;
		}
		log_debug("sandbox: %s", why);
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

static struct sbx_host host;
static pthread_once_t facts_once = PTHREAD_ONCE_INIT, filter_once = PTHREAD_ONCE_INIT;

static void init_facts(void)
{
	host.euid = geteuid();
	host.egid = getegid();
	host.landlock_abi = sbx_landlock_abi();
}

const struct sbx_host *sbx_host_get(void)
{
	pthread_once(&facts_once, init_facts);
	return &host;
}

static void compile_filter(void)
{
	int r = sbx_filter_build(&host.filter);
	if (r < 0) {
		host.filter_err = r;
		log_error("sandbox: cannot compile the seccomp filter: %s", strerror(-r));
		return;
	}
	log_debug("sandbox: seccomp filter of %u instructions, Landlock ABI %d", host.filter.len,
	          host.landlock_abi);
}

int sbx_host_filter_ready(void)
{
	sbx_host_get();
	pthread_once(&filter_once, compile_filter);
	return host.filter.filter ? 0 : host.filter_err ? host.filter_err : -EIO;
}

int sandbox_filter_ready(struct sandbox *s)
{
	(void)s;
	return sbx_host_filter_ready();
}

struct sbx_dying {
	struct sandbox *s;
	struct sbx_dying *next;
	int pidfd;
	struct sbx_cgroup *cg;
};

static void forget(struct sbx_dying *d)
{
	for (struct sbx_dying **pp = &d->s->dying; *pp; pp = &(*pp)->next)
		if (*pp == d) {
			*pp = d->next;
			break;
		}
	free(d);
}

static void on_dead(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)events;
	if (!sbx_pidfd_reap(fd))
		return;
	loop_unwatch(loop, fd);
	close(fd);
	struct sbx_dying *d = data;
	sandbox_cgroup_free_later(d->s, d->cg);
	forget(d);
}

static void cgroup_free_work(void *data, const atomic_bool *cancel)
{
	(void)cancel; /* it takes a second at most */
	sbx_cgroup_free(data);
}

void sandbox_cgroup_free_later(struct sandbox *s, struct sbx_cgroup *cg)
{
	if (cg && (!s || sbx_job_start(s, cgroup_free_work, NULL, NULL, cg, NULL) < 0))
		sbx_cgroup_free(cg);
}

static void close_work(void *data, const atomic_bool *cancel)
{
	(void)cancel;
	close((int)(intptr_t)data);
}

void sandbox_close_later(struct sandbox *s, int fd)
{
	if (fd >= 0 &&
	    (!s || sbx_job_start(s, close_work, NULL, NULL, (void *)(intptr_t)fd, NULL) < 0))
		close(fd);
}

void sandbox_reap_later(struct sandbox *s, int pidfd, struct sbx_cgroup *cg)
{
	struct sbx_dying *d = calloc(1, sizeof(*d));
	if (!d || !s->loop || loop_watch(s->loop, pidfd, LOOP_READ, on_dead, d) < 0) {
		/* No way to wait in the loop: wait here (it is exiting). */
		free(d);
		sbx_box_kill(pidfd);
		sbx_cgroup_free(cg);
		return;
	}
	*d = (struct sbx_dying){.s = s, .next = s->dying, .pidfd = pidfd, .cg = cg};
	s->dying = d;
}

void sandbox_free(struct sandbox *s)
{
	if (!s)
		return;
	warm_free(s);
	sbx_sessions_free(s);
	while (s->runs)
		run_cancel(s->runs);
	/* Cancelling a run that held a slot asked for the queue's turn. */
	if (s->queue_timer)
		loop_timer_stop(s->loop, s->queue_timer);
	sbx_zygote_free(s);
	while (s->dying) {
		struct sbx_dying *d = s->dying;
		loop_unwatch(s->loop, d->pidfd);
		sbx_box_kill(d->pidfd);
		sbx_cgroup_free(d->cg);
		forget(d);
	}
	/* The cgroups of the runs and pid 1s above are removed by jobs: all
	 * done before their root goes. */
	sbx_jobs_stop(s);
	sandbox_cgroup_ahead_stop(s);
	sbx_hide_free(s);
	sbx_cgroup_root_free(s->cgroups);
	sbx_config_release(&s->config);
	free(s->workspace);
	free(s->survey_files);
	run_relay_close(s);
	free(s);
}

/* Where a workspace cannot be shown: the box's own system paths (bound
 * read-only from the host, or made by kiln). */
static bool path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* Whether nobody (the box's uid when kiln is root) has the permission
 * bits want (4 read, 1 search) on st, as the kernel would decide: the
 * owner's bits if it owns st, else the group's, else the others'. A
 * POSIX ACL may grant more: with one, the box is left to try. */
static bool nobody_may(const char *path, const struct stat *st, unsigned want)
{
	unsigned bits = st->st_uid == SBX_ROOT_MAPS_TO   ? (st->st_mode >> 6) & 7
	                : st->st_gid == SBX_ROOT_MAPS_TO ? (st->st_mode >> 3) & 7
	                                                 : st->st_mode & 7;
	return (bits & want) == want || getxattr(path, "system.posix_acl_access", NULL, 0) >= 0;
}

/* When kiln is root the box runs as nobody, who may not reach the folder
 * (a project under /root, a 0700 home): the first path that stops it in
 * ret (a prefix of real), or false when nothing does. */
static bool nobody_blocked(const char *real, char *ret, size_t retsz)
{
	char p[PATH_MAX];
	size_t n = strlen(real);
	if (n >= sizeof(p))
		return false;
	/* "/", then each longer prefix, up to real itself. */
	for (size_t i = 0; i <= n; i++) {
		if (i < n && real[i] != '/')
			continue;
		size_t len = i ? i : 1;
		memcpy(p, real, len);
		p[len] = '\0';
		struct stat st;
		bool last = i == n;
		if (stat(p, &st) < 0)
			continue;
		if (!nobody_may(p, &st, last ? 5 : 1)) {
			snprintf(ret, retsz, "%s", p);
			return true;
		}
	}
	return false;
}

/* The first mount point strictly inside real (a realpath) in this
 * process's mount namespace, which the box's copies, with its file
 * system type: false when there is none (or mountinfo cannot be read;
 * the run then says what failed). The box cannot show such a folder:
 * overlayfs clones its lower layer without the mounts under it, and in
 * the box's user namespace those mounts are locked to what they cover,
 * so the kernel refuses the clone (clone_private_mount(): EINVAL, "failed
 * to clone lowerpath" in the kernel's log). */
static bool mount_inside(const char *real, char *ret, size_t retsz, char *ret_type, size_t tsz)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	bool found = false;
	while (!found && getline(&line, &cap, f) > 0) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE ... */
		char *save = NULL, *mp = NULL;
		char *tok = strtok_r(line, " \n", &save);
		for (int i = 0; tok && i < 4; i++)
			tok = strtok_r(NULL, " \n", &save);
		mp = tok;
		while (tok && strcmp(tok, "-") != 0)
			tok = strtok_r(NULL, " \n", &save);
		const char *type = tok ? strtok_r(NULL, " \n", &save) : NULL;
		if (!mp || !type)
			continue;
		char path[PATH_MAX];
		if (sbx_mountinfo_unescape(mp, strlen(mp), path, sizeof(path)) < 0)
			continue;
		if (strcmp(path, real) != 0 && path_under(path, real)) {
			snprintf(ret, retsz, "%s", path);
			snprintf(ret_type, tsz, "%s", type);
			found = true;
		}
	}
	fclose(f);
	return found;
}

int sandbox_set_workspace(struct sandbox *s, const char *path, char *err, size_t errsz)
{
	static const char *const system_dirs[] = {
	    "/usr", "/etc",   "/proc",  "/dev",    "/sys",  "/bin",     "/sbin",
	    "/lib", "/lib32", "/lib64", "/libx32", "/code", "/kiln-ovl"};
	err[0] = '\0';
	free(s->workspace);
	s->workspace = NULL;
	warm_plan_drop(s);
	if (!path)
		return 0;
	char real[PATH_MAX];
	if (path[0] != '/') {
		snprintf(err, errsz, "the workspace folder must be an absolute path");
		return -EINVAL;
	}
	if (!realpath(path, real)) {
		int r = -errno;
		snprintf(err, errsz, "the workspace folder cannot be used: %s", strerror(-r));
		return r;
	}
	struct stat st;
	if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errsz, "the workspace is not a folder");
		return -ENOTDIR;
	}
	const char *home = getenv("HOME");
	char rhome[PATH_MAX];
	if (strcmp(real, "/") == 0 || strcmp(real, "/tmp") == 0 ||
	    strcmp(real, SBX_WORKSPACE) == 0 ||
	    (home && home[0] == '/' && realpath(home, rhome) && strcmp(rhome, real) == 0)) {
		snprintf(err, errsz,
		         "kiln does not show %s to code as a workspace (it is /, /tmp, /work or "
		         "the home folder itself); open a project folder instead",
		         real);
		return -EINVAL;
	}
	for (size_t i = 0; i < ARRAY_SIZE(system_dirs); i++)
		if (path_under(real, system_dirs[i])) {
			snprintf(
			    err, errsz,
			    "the workspace %s is inside %s, which the sandbox shows on its own",
			    real, system_dirs[i]);
			return -EINVAL;
		}
	if (strlen(real) > 1024 || strchr(real, '\n')) {
		snprintf(err, errsz, "the workspace path is too long or holds a newline");
		return -EINVAL;
	}
	/* Every run would fail at its overlay: runs go without the
	 * workspace, and the log and `kiln run` say why and what to do. */
	char stop[PATH_MAX];
	if (s->host->euid == 0 && nobody_blocked(real, stop, sizeof(stop))) {
		snprintf(err, errsz,
		         "kiln runs as root, so its sandbox runs code as nobody (uid %d), who "
		         "cannot %s %s: runs go without the workspace %s. Run kiln as the "
		         "folder's owner, or let others read the folder (chmod o+rx on %s and "
		         "o+x on its parents); sandbox.workspace.mode \"none\" says this is meant",
		         SBX_ROOT_MAPS_TO, strcmp(stop, real) == 0 ? "read" : "enter", stop, real,
		         real);
		return -EACCES;
	}
	/* As above: every run would fail at its overlay. */
	char type[64];
	if (mount_inside(real, stop, sizeof(stop), type, sizeof(type))) {
		snprintf(err, errsz,
		         "a file system is mounted inside the workspace %s, at %s (%s): the "
		         "sandbox's overlay cannot show a folder with a mount inside it, so runs "
		         "go without the workspace. Unmount it, open a folder that holds no mount, "
		         "or set sandbox.workspace.mode \"none\" to say this is meant",
		         real, stop, type);
		return -EBUSY;
	}
	if (!(s->workspace = strdup(real)))
		return -ENOMEM;
	return 0;
}
