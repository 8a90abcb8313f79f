/* zygote.c: the Python zygote (see zygote.h): its box, built after the
 * first Python run asks for it and kept while the configuration holds;
 * the hello that tells it what to import and how to lock its children
 * down; and, per run, the request that gives the spare its code. The
 * spare, the next run's box asked for ahead (its pid 1 sends its pidfd,
 * then READY, on the run's status socket, watched on the loop), is
 * zygote_spare.c's; a run that waits for it, zygote_wait.c's. */
#include "sandbox/pools/zygote.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/json.h"
#include "core/lang.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "sandbox/box/box.h"
#include "sandbox/host/cgroup.h"
#include "sandbox/box/child.h"
#include "sandbox/host/filter.h"
#include "sandbox/box/plan.h"
#include "sandbox/state.h"
#include "sandbox/host/base.h"
#include "sandbox/host/reap.h"
#include "sandbox/pools/zyg_shared.h"

/* The program's source, embedded at build time (embed-driver.sh), and
 * the one-shot runner and display module its children run the code
 * through (oneshot.py, kiln_display.py: sent in the hello). */
extern const char sbx_zygote_program[];
extern const char sbx_oneshot_runner[], sbx_display_module[];

#define ZYGOTE_FILE "kiln_zygote.py"
/* After this many zygotes died or failed, the server stops building them. */
#define ZYGOTE_MAX_FAILURES 3
/* After a session's run, the next spare is asked for once no run of a
 * session has started for this long (sbx_zygote_session_idle). */
#define ZYGOTE_SESSION_QUIET_MS 100
/* The hello's and a ready answer's size. */
#define ZYGOTE_MSG_MAX (64u * 1024)

const char *const sbx_zygote_default_preload[] = {
    "numpy",       "pandas",    "matplotlib", "matplotlib.pyplot", "json",
    "csv",         "re",        "math",       "statistics",        "datetime",
    "decimal",     "fractions", "itertools",  "collections",       "functools",
    "pathlib",     "random",    "string",     "textwrap",          "typing",
    "dataclasses", "io",        "base64",     "hashlib",           "urllib.parse",
    NULL,
};

/* The zygote's filter, as the build compiled it (filter.h). */
static struct sock_fprog zygote_filter;

static int filter_ready(void)
{
	if (!zygote_filter.filter)
		sbx_filter_embedded(true, &zygote_filter);
	return 0;
}

/* --- the key ---------------------------------------------------------------- */

static int stat_text(struct buf *b, const char *path)
{
	struct stat st;
	char real[PATH_MAX];
	if (!realpath(path, real) || stat(real, &st) < 0)
		return buf_printf(b, "%s missing\n", path);
	return buf_printf(b, "%s %lu %lu %lld %lld.%09ld\n", real, (unsigned long)st.st_dev,
	                  (unsigned long)st.st_ino, (long long)st.st_size,
	                  (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

/* What makes one zygote differ from another: the run's box, its program,
 * the modules and the interpreter's file (a new python3 or a changed
 * dist-packages folder means a new zygote). */
static char *zygote_key(const struct sandbox *s, const struct sbx_plan_owned *po,
                        const char *layout)
{
	struct buf b;
	buf_init(&b, 4u << 20);
	/* The layout's first line is the root's and the scratch tmpfs's size:
	 * each run from the zygote mounts its own, of its own size. */
	const char *nl = strchr(layout, '\n');
	int r = buf_printf(&b, "%s\n", nl ? nl + 1 : layout);
	for (size_t i = 0; r >= 0 && po->plan.argv[i]; i++)
		r = buf_printf(&b, "argv %s\n", po->plan.argv[i]);
	for (size_t i = 0; r >= 0 && po->plan.envp[i]; i++)
		r = buf_printf(&b, "env %s\n", po->plan.envp[i]);
	json_object *pre = json_get(s->config.section, "zygotePreload");
	if (r >= 0)
		r = buf_printf(&b, "preload %s\n", pre ? json_compact(pre) : "default");
	if (r >= 0)
		r = stat_text(&b, po->plan.argv[0]);
	if (r >= 0)
		r = stat_text(&b, "/usr/lib/python3/dist-packages");
	/* The folder its box holds: a folder made anew at the same path is
	 * another one (its contents change with every run; not its inode). */
	struct stat st;
	if (r >= 0 && po->plan.ws_host)
		r = stat(po->plan.ws_host, &st) < 0
		        ? buf_printf(&b, "workspace missing\n")
		        : buf_printf(&b, "workspace %lu %lu\n", (unsigned long)st.st_dev,
		                     (unsigned long)st.st_ino);
	if (r < 0) {
		buf_release(&b);
		return NULL;
	}
	return buf_steal(&b, NULL);
}

/* --- the zygote's box --------------------------------------------------------- */

static void on_zygote_dead(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)loop;
	(void)events;
	struct sandbox *s = data;
	if (!s->zygote || !sbx_pidfd_reap(fd))
		return;
	s->zygote->box.reaped = true;
	log_warn("sandbox: the Python zygote ended; runs take the normal path until another is "
	         "built");
	zyg_retire(s, true);
}

static void on_zygote_msg(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)loop;
	struct sandbox *s = data;
	struct sbx_zygote *z = s->zygote;
	if (!z)
		return;
	char buf[ZYGOTE_MSG_MAX];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	json_object *msg = NULL;
	const char *op = NULL;
	int64_t threads = 0;
	if (n <= 0 || (events & LOOP_ERR) ||
	    json_parse_strict(buf, (size_t)n, sizeof(buf), &msg, NULL, 0) < 0 ||
	    json_get_string(msg, "op", &op) < 0 || strcmp(op, "ready") != 0 ||
	    json_get_int64(msg, "threads", &threads) < 0) {
		log_warn("sandbox: the Python zygote's channel broke");
		json_object_put(msg);
		zyg_retire(s, true);
		return;
	}
	/* Fork-safety: a thread of the zygote would not exist in its
	 * children, with whatever lock it held. */
	if (threads != 1) {
		log_warn(
		    "sandbox: the Python zygote has %lld threads after its imports; not using it",
		    (long long)threads);
		json_object_put(msg);
		zyg_retire(s, true);
		return;
	}
	json_object *failed = json_get(msg, "failed");
	if (failed && json_object_array_length(failed))
		log_warn("sandbox: the Python zygote could not import: %s", json_compact(failed));
	z->ready = true;
	log_debug("sandbox: the Python zygote is ready (pid %d)", (int)z->box.pid);
	json_object_put(msg);
	/* With warm boxes off, nothing is made ahead: each run asks (take). */
	if (s->config.warm_boxes)
		zyg_ask_spare(s);
}

static int hex_append(json_object *o, const char *key, const void *data, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	char *hex = malloc(2 * n + 1);
	if (!hex)
		return -ENOMEM;
	const unsigned char *p = data;
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[p[i] >> 4];
		hex[2 * i + 1] = digits[p[i] & 15];
	}
	hex[2 * n] = '\0';
	json_object *v = json_object_new_string_len(hex, (int)(2 * n));
	free(hex);
	return v && json_object_object_add(o, key, v) == 0 ? 0 : -ENOMEM;
}

/* What the zygote needs before it imports anything: the modules, the
 * filter and Landlock ABI its children apply, the system call numbers and
 * the setup steps' numbers (child.h) it reports failures with. */
static int send_hello(struct sandbox *s, int ch)
{
	json_object *h = json_object_new_object();
	json_object *nr = json_object_new_object();
	json_object *steps = json_object_new_object();
	if (!h || !nr || !steps) {
		json_object_put(h);
		json_object_put(nr);
		json_object_put(steps);
		return -ENOMEM;
	}
	json_object_object_add(h, "op", json_object_new_string("hello"));
	/* Whether it clones the first spare's pid 1 ahead (each spare's
	 * request says so for the next: sandbox.warmBoxes). */
	json_object_object_add(h, "ahead", json_object_new_boolean(s->config.warm_boxes));
	json_object *pre = json_get(s->config.section, "zygotePreload");
	if (pre) {
		json_object_object_add(h, "preload", json_object_get(pre));
	} else {
		json_object *a = json_object_new_array();
		for (size_t i = 0; a && sbx_zygote_default_preload[i]; i++)
			json_object_array_add(
			    a, json_object_new_string(sbx_zygote_default_preload[i]));
		json_object_object_add(h, "preload", a);
	}
	json_object_object_add(h, "landlock", json_object_new_int(s->base.host->landlock_abi));
	json_object_object_add(h, "oneshot", json_object_new_string(sbx_oneshot_runner));
	json_object_object_add(h, "display", json_object_new_string(sbx_display_module));
	const struct {
		const char *name;
		long nr;
	} calls[] = {
	    {"clone", SYS_clone},
	    {"close_range", SYS_close_range},
	    {"keyctl", SYS_keyctl},
	    {"capset", SYS_capset},
	    {"landlock_create_ruleset", SYS_landlock_create_ruleset},
	    {"landlock_add_rule", SYS_landlock_add_rule},
	    {"landlock_restrict_self", SYS_landlock_restrict_self},
	    {"openat2", SYS_openat2},
	    {"seccomp", SYS_seccomp},
	    {"renameat2", SYS_renameat2},
	    /* The calls the live masks' filter asks about (child_watch.c). */
	    {"open", SYS_open},
	    {"creat", SYS_creat},
	    {"rename", SYS_rename},
	    {"link", SYS_link},
	    {"openat", SYS_openat},
	    {"renameat", SYS_renameat},
	    {"linkat", SYS_linkat},
	};
	for (size_t i = 0; i < ARRAY_SIZE(calls); i++)
		json_object_object_add(nr, calls[i].name, json_object_new_int64(calls[i].nr));
	json_object_object_add(h, "nr", nr);
	const struct {
		const char *name;
		int step;
	} st[] = {
	    {"ids", SBX_STEP_IDS},           {"private", SBX_STEP_PRIVATE},
	    {"proc", SBX_STEP_PROC},         {"scratch", SBX_STEP_SCRATCH},
	    {"loopback", SBX_STEP_LOOPBACK}, {"code", SBX_STEP_CODE},
	    {"fork", SBX_STEP_FORK},         {"session", SBX_STEP_SESSION},
	    {"stdio", SBX_STEP_STDIO},       {"chdir", SBX_STEP_CHDIR},
	    {"keyring", SBX_STEP_KEYRING},   {"rlimit", SBX_STEP_RLIMIT},
	    {"caps", SBX_STEP_CAPS},         {"nnp", SBX_STEP_NO_NEW_PRIVS},
	    {"landlock", SBX_STEP_LANDLOCK}, {"seccomp", SBX_STEP_SECCOMP},
	    {"cmdline", SBX_STEP_CMDLINE},   {"workspace", SBX_STEP_WORKSPACE},
	    {"hide", SBX_STEP_HIDE},         {"cgroup", SBX_STEP_CGROUP},
	    {"watch", SBX_STEP_WATCH},
	};
	for (size_t i = 0; i < ARRAY_SIZE(st); i++)
		json_object_object_add(steps, st[i].name, json_object_new_int(st[i].step));
	json_object_object_add(h, "steps", steps);
	/* The live masks (child_watch.c): the filter that asks, and the
	 * ioctls of its listener. */
	json_object *wt = json_object_new_object();
	const struct sock_filter *wf;
	size_t wn = sbx_watch_filter(&wf);
	const struct {
		const char *name;
		unsigned long v;
	} io[] = {
	    {"recv", SECCOMP_IOCTL_NOTIF_RECV},
	    {"send", SECCOMP_IOCTL_NOTIF_SEND},
	    {"idValid", SECCOMP_IOCTL_NOTIF_ID_VALID},
	    {"addfd", SECCOMP_IOCTL_NOTIF_ADDFD},
	    {"filterFlag", SECCOMP_FILTER_FLAG_NEW_LISTENER},
	    {"addfdSend", SECCOMP_ADDFD_FLAG_SEND},
	};
	for (size_t i = 0; wt && i < ARRAY_SIZE(io); i++)
		json_object_object_add(wt, io[i].name, json_object_new_int64((int64_t)io[i].v));
	int r = wt ? hex_append(wt, "filter", wf, wn * sizeof(*wf)) : -ENOMEM;
	if (r >= 0)
		json_object_object_add(h, "watch", wt);
	else
		json_object_put(wt);
	const struct sock_fprog *f = &s->base.host->filter;
	if (r >= 0)
		r = hex_append(h, "filter", f->filter, f->len * sizeof(struct sock_filter));
	size_t len = 0;
	const char *text =
	    r < 0 ? NULL : json_object_to_json_string_length(h, JSON_C_TO_STRING_PLAIN, &len);
	if (!text)
		r = -ENOMEM;
	else if (send(ch, text, len, MSG_NOSIGNAL) != (ssize_t)len)
		r = neg_errno();
	json_object_put(h);
	return r;
}

/* The zygote's own rlimits: the run's would end it (its CPU time adds up
 * over every run it forks, and its children's processes count against
 * it; the address space its preloads reserve is no run's); it gets the
 * server's own. So do the quotas the kernel counts per user up the user
 * namespaces (processes, queued signals, POSIX message queues, locked
 * memory): each run's namespace is made by the zygote and takes its
 * limits as the ceiling of the level above it, where the zygote and all
 * its runs and sessions count together. At a box's 128 queued signals
 * there, one session holding them made sigqueue() and timer_create()
 * fail (EAGAIN) in every run forked after it; a built box has the
 * server's above it. Each run still sets a box's own on itself. */
static void zygote_rlimits(struct sbx_plan *p)
{
	for (size_t i = 0; i < p->nrlimits; i++) {
		int res = p->rlimits[i].resource;
		if (res == RLIMIT_CPU || res == RLIMIT_DATA || res == RLIMIT_NPROC ||
		    res == RLIMIT_AS || res == RLIMIT_SIGPENDING || res == RLIMIT_MSGQUEUE ||
		    res == RLIMIT_MEMLOCK)
			getrlimit(res, &p->rlimits[i].lim);
	}
}

static void build_zygote(struct sandbox *s, const char *key)
{
	if (s->zygote || s->zygote_failures >= ZYGOTE_MAX_FAILURES)
		return;
	if (filter_ready() < 0 || sbx_host_filter_ready() < 0) {
		log_warn("sandbox: no Python zygote: its seccomp filter could not be compiled");
		s->zygote_failures = ZYGOTE_MAX_FAILURES;
		return;
	}
	const struct lang *l = lang_find("python");
	struct sbx_zygote *z = calloc(1, sizeof(*z));
	struct sbx_plan_owned *po = NULL;
	char err[512] = "";
	int step = -1;
	if (!z || !l || !(z->key = strdup(key))) {
		free(z);
		return;
	}
	sbx_box_init(&z->box);
	struct sbx_plan_ws ws;
	int r = sbx_plan_build(s->base.host, sbx_plan_ws_of(s, &ws), s->config.section, "python",
	                       sbx_zygote_program, &s->config.limits, &po, err, sizeof(err));
	if (r >= 0 && po->py.project) {
		/* A project's Python appeared since the run that asked for
		 * the zygote: none now (take() serves no such run). */
		log_debug("sandbox: no zygote: the project has its own Python");
		sbx_plan_free(po);
		free(z->key);
		free(z);
		return;
	}
	if (r >= 0) {
		/* The program's file is the zygote's, not a snippet's: the
		 * runs' code goes to /code/<file> in boxes of their own. */
		static char zfile[] = "code/" ZYGOTE_FILE;
		static char zpath[] = "/code/" ZYGOTE_FILE;
		po->plan.files[po->plan.nfiles - 1].path = zfile;
		/* The zygote runs as `python3 ZYGOTE`, never through the
		 * one-shot runner (oneshot.py) that python's argv names. */
		po->argv[1] = zpath;
		po->argv[2] = NULL;
		po->plan.zygote = true;
		po->plan.seccomp = &zygote_filter;
		zygote_rlimits(&po->plan);
		/* With the workspace, its box holds the folder (child.c's
		 * hold_workspace), for its runs' overlays. */
		if (po->plan.ws_host && !(z->ws = strdup(po->plan.ws_host)))
			r = -ENOMEM;
		if (r >= 0)
			r = sbx_box_build(&s->base, po, SBX_BOX_ZYGOTE, &z->box, &step, err,
			                  sizeof(err));
		if (r < 0 && step >= 0)
			snprintf(err, sizeof(err), "%s failed: %s", sbx_step_name(step),
			         strerror(-r));
	}
	sbx_plan_free(po);
	if (r >= 0 && (r = send_hello(s, z->box.fds[0])) < 0)
		snprintf(err, sizeof(err), "cannot send the hello: %s", strerror(-r));
	if (r >= 0 && (loop_watch(s->base.loop, z->box.pidfd, LOOP_READ, on_zygote_dead, s) < 0 ||
	               loop_watch(s->base.loop, z->box.fds[0], LOOP_READ, on_zygote_msg, s) < 0)) {
		loop_unwatch(s->base.loop, z->box.pidfd);
		r = -ENOMEM;
	}
	if (r < 0) {
		log_warn("sandbox: no Python zygote: %s", err);
		s->zygote_failures++;
		sbx_box_release(&s->base, &z->box);
		free(z->key);
		free(z->ws);
		free(z);
		return;
	}
	s->zygote = z;
	log_debug("sandbox: building the Python zygote, pid %d", (int)z->box.pid);
}

static void on_start_timer(struct loop *loop, void *data)
{
	(void)loop;
	struct sandbox *s = data;
	s->zygote_timer = NULL;
	if (s->zygote_want)
		build_zygote(s, s->zygote_want);
	free(s->zygote_want);
	s->zygote_want = NULL;
}

/* Build a zygote for key once the server is idle (sbx_zygote_idle): its
 * imports take a CPU for a second or two, which the run that asked for
 * it should not share. */
static void start_later(struct sandbox *s, char *key)
{
	free(s->zygote_want);
	s->zygote_want = key;
}

void sbx_zygote_idle(struct sandbox *s)
{
	if (s->config.warm_boxes)
		zyg_ask_spare(s);
	if (s->zygote_want && !s->zygote && !s->zygote_timer)
		s->zygote_timer = loop_timer_start(s->base.loop, 10, on_start_timer, s);
}

/* The spare owed since a session's run ended: no session's run has
 * started since (sbx_zygote_session_busy stops this timer). */
static void on_ask_timer(struct loop *loop, void *data)
{
	(void)loop;
	struct sandbox *s = data;
	if (s->zygote)
		s->zygote->ask_timer = NULL;
	zyg_ask_spare(s);
}

void sbx_zygote_session_idle(struct sandbox *s)
{
	struct sbx_zygote *z = s->zygote;
	if (s->config.warm_boxes && z && z->ready && !z->spare) {
		z->ask_later = true;
		loop_timer_stop(s->base.loop, steal_pointer(&z->ask_timer));
		z->ask_timer =
		    loop_timer_start(s->base.loop, ZYGOTE_SESSION_QUIET_MS, on_ask_timer, s);
		/* Without a timer, the next run or session asks (take). */
	}
	if (s->zygote_want && !s->zygote && !s->zygote_timer)
		s->zygote_timer = loop_timer_start(s->base.loop, 10, on_start_timer, s);
}

void sbx_zygote_session_busy(struct sandbox *s)
{
	/* Still owed (ask_later): the run's end arms the timer again. */
	if (s->zygote)
		loop_timer_stop(s->base.loop, steal_pointer(&s->zygote->ask_timer));
}

/* What a run's program (C) runs (zygote.py, "mode"): the code through
 * the one-shot runner, the code as `python3 FILE`, or a session's driver
 * with its channel as stdin. */
enum zyg_mode { ZYG_ONESHOT, ZYG_SCRIPT, ZYG_SESSION };
static const char *const zyg_mode_names[] = {"oneshot", "script", "session"};

/* A run's mode is the one its argv gives on the normal path: through the
 * runner when python's argv names it (core/lang.c), else as a script (a
 * configured argv such as `python3 {file}`). */
static enum zyg_mode run_mode(const struct sbx_plan_owned *po)
{
	for (size_t i = 0; po->plan.argv[i]; i++)
		if (strcmp(po->plan.argv[i], sbx_oneshot_runner) == 0)
			return ZYG_ONESHOT;
	return ZYG_SCRIPT;
}

/* What a run sends its spare's pid 1: its program's path (in the box)
 * and size, its rlimits, scratch size and mode; the code goes with it as
 * a memfd (and a session's channel as a second fd). */
static json_object *run_request(const char *path, const struct sbx_plan_owned *po,
                                const struct sbx_limits *lim, size_t code_len, enum zyg_mode mode)
{
	/* With the workspace, pid 1 then waits for the list of what to hide
	 * (sbx_zygote_send_hide) before the program may run. */
	bool hide = po->plan.ws_host != NULL;
	json_object *req = json_object_new_object();
	json_object *rls = json_object_new_array();
	if (!req || !rls) {
		json_object_put(req);
		json_object_put(rls);
		return NULL;
	}
	struct sbx_rlimit rl[SBX_MAX_RLIMITS];
	size_t nrl = sbx_plan_rlimits_for(lim, "python", rl);
	for (size_t i = 0; i < nrl; i++) {
		/* A session lives longer than one run's CPU time: its driver
		 * sets each run's (session.c's start_box, for a built box). */
		if (mode == ZYG_SESSION && rl[i].resource == RLIMIT_CPU)
			rl[i].lim.rlim_cur = rl[i].lim.rlim_max = RLIM_INFINITY;
		json_object *one = json_object_new_array();
		json_object_array_add(one, json_object_new_int(rl[i].resource));
		json_object_array_add(one, json_object_new_int64((int64_t)rl[i].lim.rlim_cur));
		json_object_array_add(one, json_object_new_int64((int64_t)rl[i].lim.rlim_max));
		json_object_array_add(rls, one);
	}
	json_object_object_add(req, "op", json_object_new_string("run"));
	json_object_object_add(req, "mode", json_object_new_string(zyg_mode_names[mode]));
	json_object_object_add(req, "path", json_object_new_string(path));
	json_object_object_add(req, "rlimits", rls);
	json_object_object_add(req, "tmpfs", json_object_new_int64((int64_t)lim->tmpfs_bytes));
	json_object_object_add(req, "inodes", json_object_new_string(po->plan.scratch_inodes));
	json_object_object_add(req, "codeLen", json_object_new_int64((int64_t)code_len));
	json_object_object_add(req, "hide", json_object_new_boolean(hide));
	return req;
}

/* --- a run ---------------------------------------------------------------------- */

/* What the run will send the spare's pid 1, made when it comes. */
static int zyg_req_make(const struct sbx_plan_owned *po, const char *layout,
                        const struct sbx_limits *lim, const char *path, enum zyg_mode mode,
                        const char *code, struct zyg_req *q)
{
	size_t len = strlen(code);
	*q = (struct zyg_req){.codefd = -1, .lim = *lim, .session = mode == ZYG_SESSION};
	q->req = run_request(path, po, lim, len, mode);
	q->layout = strdup(layout);
	int r = q->req && q->layout ? sbx_code_memfd(code, len) : -ENOMEM;
	if (r < 0) {
		zyg_req_release(q);
		return r;
	}
	q->codefd = r;
	return 0;
}

/* Whether path (no leading '/') is dir or lies under it. */
static bool path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* sbx_zygote_take and sbx_zygote_take_session: the run's program at path
 * (in the box) runs code as mode says. */
static int take(struct sandbox *s, const struct sbx_plan_owned *po, const char *layout,
                const struct sbx_limits *lim, const char *path, enum zyg_mode mode,
                const char *code, struct sbx_box *b, sbx_zygote_wait_fn fn, void *data,
                struct sbx_zygote_wait **ret_wait)
{
	if (!s->base.loop || !s->config.zygote || s->zygote_failures >= ZYGOTE_MAX_FAILURES)
		return -ENOTSUP;
	/* The spare's upper layer is made ahead at the configured size (a
	 * mount pid 1 no longer holds): a run of another size takes a box
	 * of its own; so does a folder where the zygote's box or B keeps
	 * something of its own (zygote.py mounts the upper layer at /code
	 * while it makes the overlay). */
	if (po->plan.ws_host && (lim->tmpfs_bytes != s->config.limits.tmpfs_bytes ||
	                         path_under(po->plan.ws_dst, "code") ||
	                         path_under(po->plan.ws_dst, SBX_ZYGOTE_WS_LOWER)))
		return -ENOTSUP;
	/* The zygote is Debian's python3 with its modules loaded: a run or
	 * session with the project's own Python (pyenv.h) takes a box of
	 * its own (docs/sandbox.md, "The project's Python"). */
	if (po->py.project)
		return -ENOTSUP;
	char *key = zygote_key(s, po, layout);
	if (!key)
		return -ENOMEM;
	if (s->zygote && strcmp(s->zygote->key, key) != 0) {
		log_debug("sandbox: the configuration or the interpreter changed");
		zyg_retire(s, false);
	}
	if (!s->zygote) {
		/* Not while this run starts: after it (sbx_zygote_idle). */
		if (s->zygote_timer) {
			loop_timer_stop(s->base.loop, s->zygote_timer);
			s->zygote_timer = NULL;
		}
		start_later(s, key);
		return -EAGAIN;
	}
	free(key);
	struct sbx_zygote *z = s->zygote;
	if (!z->ready)
		return -EAGAIN;
	if (!z->spare) {
		/* With warm boxes on, the spare is made for the next run and
		 * this one takes the normal path; with them off, nothing was
		 * made ahead: this run asks for its box now and waits for it
		 * (zygote_wait.c), as a run that comes before the spare does.
		 * So does a run that comes while a spare is owed after a
		 * session's run (sbx_zygote_session_idle): it would have been
		 * on its way but for that session. */
		bool owed = z->ask_later;
		if (!fn || (s->config.warm_boxes && !owed)) {
			if (s->config.warm_boxes)
				zyg_ask_spare(s);
			return -EAGAIN;
		}
		zyg_ask_spare(s);
		/* The ask failed: the zygote is retired. */
		if (!(z = s->zygote) || !z->spare)
			return -EAGAIN;
	}
	/* Another run waits for it already. */
	if (z->wait)
		return -EAGAIN;
	struct zyg_req q;
	int r = zyg_req_make(po, layout, lim, path, mode, code, &q);
	if (r < 0)
		return r;
	/* Its pidfd may have come already, not yet read on the loop. */
	if (z->spare->pidfd < 0)
		r = zyg_spare_pidfd(s, z->spare);
	if (r >= 0 && z->spare->pidfd >= 0)
		r = zyg_give_spare(s, z, &q, b);
	else if (r >= 0)
		r = fn ? zyg_wait_spare(s, z, &q, b, fn, data, ret_wait) : -EAGAIN;
	zyg_req_release(&q);
	if (r < 0 && r != -EAGAIN && r != -EINPROGRESS) {
		log_warn(
		    "sandbox: the Python zygote could not start a run (%s); using a box of its "
		    "own",
		    strerror(-r));
		zyg_retire(s, true);
	}
	return r;
}

int sbx_zygote_take(struct sandbox *s, const char *language, const struct sbx_plan_owned *po,
                    const char *layout, const struct sbx_limits *lim, const char *code,
                    struct sbx_box *b, sbx_zygote_wait_fn fn, void *data,
                    struct sbx_zygote_wait **ret_wait)
{
	const struct lang *l = lang_find(language);
	if (!l || strcmp(l->name, "python") != 0 || !po->code_path)
		return -ENOTSUP;
	char path[128];
	snprintf(path, sizeof(path), "/%s", po->code_path);
	return take(s, po, layout, lim, path, run_mode(po), code, b, fn, data, ret_wait);
}

int sbx_zygote_take_session(struct sandbox *s, const struct sbx_plan_owned *po, const char *layout,
                            const struct sbx_limits *life, const char *path, const char *driver,
                            struct sbx_box *b, sbx_zygote_wait_fn fn, void *data,
                            struct sbx_zygote_wait **ret_wait)
{
	return take(s, po, layout, life, path, ZYG_SESSION, driver, b, fn, data, ret_wait);
}

int sbx_zygote_send_hide(struct sbx_box *b, int hide_fd)
{
	struct iovec iov = {.iov_base = (void *)"h", .iov_len = 1};
	ssize_t n = sbx_status_send_fds(b->status_fd, &iov, 1, &hide_fd, 1, MSG_DONTWAIT);
	return n == 1 ? 0 : n < 0 ? neg_errno() : -EIO;
}

void sbx_zygote_free(struct sandbox *s)
{
	if (s->zygote_timer) {
		loop_timer_stop(s->base.loop, s->zygote_timer);
		s->zygote_timer = NULL;
	}
	free(s->zygote_want);
	s->zygote_want = NULL;
	struct sbx_zygote *z = s->zygote;
	if (!z)
		return;
	s->zygote = NULL;
	/* Runs and sessions went first (sandbox_free): none waits. */
	z->wait = NULL;
	zyg_drop_spare(s, z);
	loop_unwatch(s->base.loop, z->box.pidfd);
	loop_unwatch(s->base.loop, z->box.fds[0]);
	sbx_box_release(&s->base, &z->box);
	free(z->key);
	free(z->ws);
	free(z);
}
