/* zygote.c: the Python zygote (see zygote.h): its box, built after the
 * first Python run asks for it and kept while the configuration holds;
 * the hello that tells it what to import and how to lock its children
 * down; the spare, the next run's box, asked for ahead (its pid 1 sends
 * its pidfd, then READY, on the run's status socket, watched on the
 * loop); and, per run, the request that gives the spare its code. */
#include "sandbox/zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#include "sandbox/box.h"
#include "sandbox/cgroup.h"
#include "sandbox/child.h"
#include "sandbox/filter.h"
#include "sandbox/plan.h"
#include "sandbox/sandbox.h"

/* The program's source, embedded at build time (embed-driver.sh), and
 * the one-shot runner and display module its children run the code
 * through (oneshot.py, kiln_display.py: sent in the hello). */
extern const char sbx_zygote_program[];
extern const char sbx_oneshot_runner[], sbx_display_module[];

#define ZYGOTE_FILE "kiln_zygote.py"
/* The message a run's pid 1 sends first: its own pidfd (zygote.py). */
#define ZYG_MSG_PIDFD 100
/* How long a run waits for the zygote's child to report; past it the run
 * takes the normal path and the zygote is retired. */
#define ZYGOTE_ANSWER_MS 2000
/* After this many zygotes died or failed, the server stops building them. */
#define ZYGOTE_MAX_FAILURES 3
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

struct sbx_zygote {
	struct sbx_box box; /* fds[0]: the channel */
	char *key;
	/* The workspace its runs have (the host folder), or NULL. Its box
	 * holds the folder read-only at SBX_ZYGOTE_WS_LOWER, covered in each
	 * run's box (zygote.py), whose overlay takes it as its lower layer. */
	char *ws;
	bool ready;
	/* The next run's box, asked for ahead (ask_spare): NULL, or on its
	 * way (pidfd -1 until its pid 1 reports), or waiting for its run. */
	struct sbx_box *spare;
	/* The run that came while the spare was on its way, and waits for
	 * its pidfd (off the loop's critical path: see struct
	 * sbx_zygote_wait); NULL. One at a time: another run meanwhile takes
	 * the normal path. */
	struct sbx_zygote_wait *wait;
};

/* What a run sends its spare's pid 1, made when the run comes: the
 * request, the code (a memfd), and what the run's box keeps. */
struct zyg_req {
	json_object *req;
	int codefd;
	char *layout;
	struct sbx_limits lim;
	bool session; /* a session's: the channel is made when it is sent */
};

/* A run waiting for the spare's pidfd (zygote.h). Linked from the
 * zygote (z->wait) until the pidfd comes, the spare fails or the
 * deadline passes; then its failure, if any, is told from a timer of
 * its own (never from within another run's start that retired the
 * zygote). Owned by the caller until fn is called or it cancels. */
struct sbx_zygote_wait {
	struct sandbox *s;
	struct sbx_box *b;
	sbx_zygote_wait_fn fn;
	void *data;
	struct zyg_req q;
	struct loop_timer *timer; /* the deadline; then the failure's turn */
	int err;
	uint64_t since_ms;
};

/* The zygote's filter, compiled once (the loop's thread only uses it). */
static struct sock_fprog zygote_filter;
static int zygote_filter_err = 1;

static int filter_ready(void)
{
	if (zygote_filter_err == 1)
		zygote_filter_err = sbx_filter_build_zygote(&zygote_filter);
	return zygote_filter_err;
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

static void drop_spare(struct sandbox *s, struct sbx_zygote *z);
static void ask_spare(struct sandbox *s);
static void wait_fail(struct sandbox *s, struct sbx_zygote *z, int err);

static void retire(struct sandbox *s, bool failed)
{
	struct sbx_zygote *z = s->zygote;
	if (!z)
		return;
	s->zygote = NULL;
	if (failed)
		s->zygote_failures++;
	log_debug("sandbox: retiring the zygote (pid %d)%s", (int)z->box.pid,
	          failed ? ", which failed" : "");
	drop_spare(s, z);
	loop_unwatch(s->loop, z->box.pidfd);
	loop_unwatch(s->loop, z->box.fds[0]);
	/* Its channel closes: the zygote waits for its runs, then ends,
	 * and its pid 1 with it; the sandbox reaps it then. */
	if (failed)
		sbx_box_release(s, &z->box);
	sbx_box_reap_later(s, &z->box);
	sbx_box_release(s, &z->box);
	free(z->key);
	free(z->ws);
	free(z);
}

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
	retire(s, true);
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
		retire(s, true);
		return;
	}
	/* Fork-safety: a thread of the zygote would not exist in its
	 * children, with whatever lock it held. */
	if (threads != 1) {
		log_warn(
		    "sandbox: the Python zygote has %lld threads after its imports; not using it",
		    (long long)threads);
		json_object_put(msg);
		retire(s, true);
		return;
	}
	json_object *failed = json_get(msg, "failed");
	if (failed && json_object_array_length(failed))
		log_warn("sandbox: the Python zygote could not import: %s", json_compact(failed));
	z->ready = true;
	log_debug("sandbox: the Python zygote is ready (pid %d)", (int)z->box.pid);
	json_object_put(msg);
	ask_spare(s);
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
	json_object_object_add(h, "landlock", json_object_new_int(s->host->landlock_abi));
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
	};
	for (size_t i = 0; i < ARRAY_SIZE(st); i++)
		json_object_object_add(steps, st[i].name, json_object_new_int(st[i].step));
	json_object_object_add(h, "steps", steps);
	const struct sock_fprog *f = &s->host->filter;
	int r = hex_append(h, "filter", f->filter, f->len * sizeof(struct sock_filter));
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
 * server's own. */
static void zygote_rlimits(struct sbx_plan *p)
{
	for (size_t i = 0; i < p->nrlimits; i++) {
		int res = p->rlimits[i].resource;
		if (res == RLIMIT_CPU || res == RLIMIT_DATA || res == RLIMIT_NPROC ||
		    res == RLIMIT_AS)
			getrlimit(res, &p->rlimits[i].lim);
	}
}

static void build_zygote(struct sandbox *s, const char *key)
{
	if (s->zygote || s->zygote_failures >= ZYGOTE_MAX_FAILURES)
		return;
	if (filter_ready() < 0 || sandbox_filter_ready(s) < 0) {
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
	int r = sbx_plan_build(s, s->config.section, "python", sbx_zygote_program,
	                       &s->config.limits, &po, err, sizeof(err));
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
			r = sbx_box_build(s, po, SBX_BOX_ZYGOTE, &z->box, &step, err, sizeof(err));
		if (r < 0 && step >= 0)
			snprintf(err, sizeof(err), "%s failed: %s", sbx_step_name(step),
			         strerror(-r));
	}
	sbx_plan_free(po);
	if (r >= 0 && (r = send_hello(s, z->box.fds[0])) < 0)
		snprintf(err, sizeof(err), "cannot send the hello: %s", strerror(-r));
	if (r >= 0 && (loop_watch(s->loop, z->box.pidfd, LOOP_READ, on_zygote_dead, s) < 0 ||
	               loop_watch(s->loop, z->box.fds[0], LOOP_READ, on_zygote_msg, s) < 0)) {
		loop_unwatch(s->loop, z->box.pidfd);
		r = -ENOMEM;
	}
	if (r < 0) {
		log_warn("sandbox: no Python zygote: %s", err);
		s->zygote_failures++;
		sbx_box_release(s, &z->box);
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
	ask_spare(s);
	if (s->zygote_want && !s->zygote && !s->zygote_timer)
		s->zygote_timer = loop_timer_start(s->loop, 10, on_start_timer, s);
}

/* --- the spare: the next run's box, made ahead ---------------------------------- */

/* The fds of a request, and its JSON; sent without blocking. */
static int send_fds(int sock, json_object *req, const int *fds, size_t nfds)
{
	size_t len = 0;
	const char *text = json_object_to_json_string_length(req, JSON_C_TO_STRING_PLAIN, &len);
	if (!text)
		return -ENOMEM;
	struct iovec iov = {.iov_base = (void *)text, .iov_len = len};
	ssize_t n = sbx_status_send_fds(sock, &iov, 1, fds, nfds, MSG_DONTWAIT);
	return n == (ssize_t)len ? 0 : n < 0 ? neg_errno() : -EIO;
}

/* What a spare's box needs that no run changes: the scratch tmpfs at the
 * configured size (each run's size is set when it comes), the user
 * namespace's quotas and the covered /proc files, as child.c has them;
 * with the workspace, its path (the overlay's, whose upper layer is a
 * tmpfs of the configured size) and the hide patterns (for what pid 1
 * walks itself, as child_workspace.c's walk_and_mask). */
static json_object *spare_request(const struct sandbox *s, const struct sbx_zygote *z)
{
	json_object *req = json_object_new_object();
	json_object *quotas = json_object_new_object();
	json_object *hide = json_object_new_array();
	if (!req || !quotas || !hide) {
		json_object_put(req);
		json_object_put(quotas);
		json_object_put(hide);
		return NULL;
	}
	char inodes[32];
	snprintf(inodes, sizeof(inodes), "%llu",
	         (unsigned long long)(s->config.limits.tmpfs_bytes / 4096));
	json_object_object_add(req, "op", json_object_new_string("spare"));
	json_object_object_add(req, "tmpfs",
	                       json_object_new_int64((int64_t)s->config.limits.tmpfs_bytes));
	json_object_object_add(req, "inodes", json_object_new_string(inodes));
	json_object_object_add(quotas, "max_inotify_instances",
	                       json_object_new_string(SBX_INOTIFY_INSTANCES));
	json_object_object_add(quotas, "max_inotify_watches",
	                       json_object_new_string(SBX_INOTIFY_WATCHES));
	json_object_object_add(req, "userQuotas", quotas);
	static const char *const hidden[] = SBX_PROC_HIDDEN;
	for (size_t i = 0; i < ARRAY_SIZE(hidden); i++)
		json_object_array_add(hide, json_object_new_string(hidden[i]));
	json_object_object_add(req, "procHidden", hide);
	if (z->ws) {
		json_object *pats = json_object_new_array();
		for (size_t i = 0; pats && i < s->config.nhide; i++)
			json_object_array_add(pats, json_object_new_string(s->config.hide[i]));
		json_object_object_add(req, "ws", json_object_new_string(z->ws));
		json_object_object_add(req, "wsLower",
		                       json_object_new_string("/" SBX_ZYGOTE_WS_LOWER));
		json_object_object_add(req, "hidePatterns", pats);
	}
	return req;
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

/* The host pid behind a pidfd (for the log and the cgroup), or 0. */
static pid_t pidfd_pid(int pidfd)
{
	char path[64], text[512];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof(text) - 1);
	if (n <= 0)
		return 0;
	text[n] = '\0';
	const char *p = strstr(text, "\nPid:");
	return p ? (pid_t)atoi(p + 5) : 0;
}

/* A cgroup of its own for the spare's pid 1, as a built box's; the
 * run's limits are set when it comes. The cgroup is taken here (made
 * ahead, off the loop: sandbox_cgroup_take) and its cgroup.procs opened
 * for writing; pid 1 writes itself into it
 * before it forks the program's process. Moving a process takes the
 * kernel's cgroup_threadgroup_rwsem for writing (an RCU grace period,
 * milliseconds), so it is not done on the loop: since Linux 5.16 the
 * write is checked with the credentials and cgroup namespace of whoever
 * opened the file, the server. The fd, or -1 (a warning: the rlimits
 * hold). If pid 1 cannot join, it fails the spare (SBX_STEP_CGROUP): a
 * run never goes on outside the cgroup the server set its limits on. */
static int spare_cgroup(struct sandbox *s, struct sbx_box *b)
{
	int r = sandbox_cgroup_take(s, &b->cg);
	int fd = -1;
	if (r >= 0 && (fd = openat(sbx_cgroup_fd(b->cg), "cgroup.procs", O_WRONLY | O_CLOEXEC)) < 0)
		r = neg_errno();
	if (r < 0) {
		log_warn("sandbox: a run from the zygote has no cgroup (%s); using rlimits only",
		         strerror(-r));
		if (b->cg)
			sandbox_cgroup_free_later(s, steal_pointer(&b->cg));
	}
	return fd;
}

/* Drop the spare: its pid 1 is killed (and with it its box) and reaped
 * off the loop; without a pidfd yet, its status socket closes, and its
 * pid 1 ends when it finds that out. */
static void drop_spare(struct sandbox *s, struct sbx_zygote *z)
{
	struct sbx_box *b = z->spare;
	/* A run waiting for it takes the normal path. */
	wait_fail(s, z, -ECANCELED);
	if (!b)
		return;
	z->spare = NULL;
	loop_unwatch(s->loop, b->status_fd);
	if (b->pidfd >= 0) {
		loop_unwatch(s->loop, b->pidfd);
		if (b->cg)
			sbx_cgroup_kill(b->cg);
		syscall(SYS_pidfd_send_signal, b->pidfd, SIGKILL, NULL, 0);
		sbx_box_reap_later(s, b);
	}
	sbx_box_release(s, b);
	free(b);
}

/* Its pid 1's first message: its pidfd. 1 when taken, 0 when not there
 * yet, -errno when the spare failed. */
static int spare_take_pidfd(struct sbx_box *b)
{
	struct sbx_msg m;
	struct iovec iov = {.iov_base = &m, .iov_len = sizeof(m)};
	int fd;
	ssize_t n = sbx_status_recv(b->status_fd, &iov, 1, MSG_DONTWAIT, &fd);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0)
		return n == 0 ? -EPIPE : neg_errno();
	if (n > 1 && n < (ssize_t)sizeof(m) && ((char *)&m)[0] == 'E') {
		/* A Python error of the zygote's child, as text. */
		log_warn("sandbox: the zygote's child failed: %.*s", (int)n - 1, (char *)&m + 1);
		return -EIO;
	}
	if (n != sizeof(m) || m.type != ZYG_MSG_PIDFD || fd < 0) {
		if (fd >= 0)
			close(fd);
		return n == sizeof(m) && m.type == SBX_MSG_FAIL && m.err ? -m.err : -EIO;
	}
	b->pidfd = fd;
	b->pid = pidfd_pid(fd);
	return 1;
}

static void on_spare_dead(struct loop *loop, int fd, unsigned events, void *data);

/* spare_take_pidfd, and the spare's pidfd watched: 1, 0 or -errno. */
static int spare_pidfd(struct sandbox *s, struct sbx_box *b)
{
	int r = spare_take_pidfd(b);
	if (r > 0 && loop_watch(s->loop, b->pidfd, LOOP_READ, on_spare_dead, s) < 0)
		r = -ENOMEM;
	return r;
}

static void hand_over(struct sandbox *s, struct sbx_zygote *z);

/* What the spare's pid 1 has said: its pidfd, then READY (with /work)
 * once the program's process is locked down and waits. Anything else
 * before its run is a failure of the zygote's. A run waiting for the
 * spare gets it with its pidfd (hand_over). */
static void on_spare_status(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)loop;
	(void)fd;
	struct sandbox *s = data;
	struct sbx_zygote *z = s->zygote;
	struct sbx_box *b = z ? z->spare : NULL;
	if (!b)
		return;
	int r = 0;
	if (b->pidfd < 0) {
		r = spare_pidfd(s, b);
		if (r == 0 && !(events & (LOOP_HUP | LOOP_ERR)))
			return;
	}
	if (r >= 0 && !sbx_box_read_status(b) && !b->failed && !b->have_exit) {
		if (b->pidfd >= 0 && z->wait)
			hand_over(s, z);
		return;
	}
	log_warn("sandbox: the zygote could not make a box (%s)", r < 0 ? strerror(-r)
	                                                          : b->failed
	                                                              ? sbx_step_name(b->fail_step)
	                                                              : "it ended");
	retire(s, true);
}

static void on_spare_dead(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)loop;
	(void)events;
	struct sandbox *s = data;
	if (!s->zygote || !s->zygote->spare || !sbx_pidfd_reap(fd))
		return;
	s->zygote->spare->reaped = true;
	log_warn("sandbox: a box made by the zygote ended before its run");
	retire(s, true);
}

/* Ask the zygote for the next run's box, unless it has one on the way:
 * the spare's pipes and status socket are made here; the zygote clones
 * its pid 1, which reports on the loop (on_spare_status). */
static void ask_spare(struct sandbox *s)
{
	struct sbx_zygote *z = s->zygote;
	if (!z || !z->ready || z->spare)
		return;
	struct sbx_box *b = calloc(1, sizeof(*b));
	json_object *req = spare_request(s, z);
	int out[2] = {-1, -1}, err[2] = {-1, -1}, st[2] = {-1, -1}, procs = -1;
	int r = b && req ? 0 : -ENOMEM;
	if (r >= 0)
		sbx_box_init(b);
	if (r >= 0 && (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
	               socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, st) < 0))
		r = neg_errno();
	if (r >= 0 && s->cgroups)
		procs = spare_cgroup(s, b);
	if (r >= 0) {
		int theirs[4] = {out[1], err[1], st[1], procs};
		r = send_fds(z->box.fds[0], req, theirs, procs >= 0 ? 4 : 3);
	}
	json_object_put(req);
	int *mine[] = {&out[1], &err[1], &st[1], &procs};
	for (size_t i = 0; i < ARRAY_SIZE(mine); i++)
		if (*mine[i] >= 0)
			close(steal_fd(mine[i]));
	if (r >= 0) {
		b->status_fd = steal_fd(&st[0]);
		b->fds[0] = steal_fd(&out[0]);
		b->fds[1] = steal_fd(&err[0]);
		fcntl(b->fds[0], F_SETFL, O_NONBLOCK);
		fcntl(b->fds[1], F_SETFL, O_NONBLOCK);
		z->spare = b;
		if (loop_watch(s->loop, b->status_fd, LOOP_READ, on_spare_status, s) < 0)
			r = -ENOMEM;
	}
	int *left[] = {&out[0], &err[0], &st[0]};
	for (size_t i = 0; i < ARRAY_SIZE(left); i++)
		if (*left[i] >= 0)
			close(*left[i]);
	if (r < 0) {
		if (!z->spare && b) {
			if (b->cg)
				sandbox_cgroup_free_later(s, steal_pointer(&b->cg));
			free(b);
		}
		log_warn("sandbox: cannot ask the Python zygote for a box: %s", strerror(-r));
		retire(s, true);
	}
}

/* --- a run ---------------------------------------------------------------------- */

static void zyg_req_release(struct zyg_req *q)
{
	json_object_put(q->req);
	q->req = NULL;
	if (q->codefd >= 0)
		close(steal_fd(&q->codefd));
	free(q->layout);
	q->layout = NULL;
}

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

/* Give the run the spare, whose pidfd came: its cgroup takes the run's
 * limits, then its pid 1 the run (the code as a memfd). The next spare
 * is asked for when this run is over (sbx_zygote_idle): made while it
 * runs, its fork and setup would take CPU from it. */
static int give_spare(struct sandbox *s, struct sbx_zygote *z, struct zyg_req *q, struct sbx_box *b)
{
	struct sbx_box *sp = z->spare;
	int r = 0;
	int chan[2] = {-1, -1}; /* a session's channel (box.c's plumb()) */
	if (sp->cg && (r = sbx_cgroup_set_limits(sp->cg, q->lim.memory_bytes, q->lim.processes,
	                                         q->lim.cpu_cores)) < 0)
		goto out;
	if (q->session && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, chan) < 0) {
		r = neg_errno();
		goto out;
	}
	int theirs[2] = {q->codefd, chan[1]};
	if ((r = send_fds(sp->status_fd, q->req, theirs, q->session ? 2 : 1)) < 0)
		goto out;
	if (chan[0] >= 0) {
		sp->ctl_fd = steal_fd(&chan[0]);
		fcntl(sp->ctl_fd, F_SETFL, O_NONBLOCK);
	}
	log_debug("sandbox: a run takes the zygote's box (pid %d, %s)", (int)sp->pid,
	          sp->work_fd >= 0 ? "ready" : "still being made");
	loop_unwatch(s->loop, sp->status_fd);
	loop_unwatch(s->loop, sp->pidfd);
	*b = *sp;
	b->layout = steal_pointer(&q->layout);
	free(sp);
	z->spare = NULL;
out:
	for (size_t i = 0; i < ARRAY_SIZE(chan); i++)
		if (chan[i] >= 0)
			close(chan[i]);
	return r;
}

/* --- a run that waits for the spare ------------------------------------------- */

/* Tell the run that waited how it went, and forget the wait. */
static void wait_done(struct sbx_zygote_wait *w, int r)
{
	if (w->timer)
		loop_timer_stop(w->s->loop, w->timer);
	log_debug("sandbox: a run waited %llu ms for the zygote's box (%s)",
	          (unsigned long long)(loop_now_ms() - w->since_ms),
	          r < 0 ? strerror(-r) : "taken");
	sbx_zygote_wait_fn fn = w->fn;
	void *data = w->data;
	zyg_req_release(&w->q);
	free(w);
	fn(data, r);
}

static void on_wait_failed(struct loop *loop, void *data)
{
	(void)loop;
	struct sbx_zygote_wait *w = data;
	w->timer = NULL;
	wait_done(w, w->err);
}

/* The spare a run waits for is gone (retire, drop_spare): the run hears
 * of it on a turn of its own (this may be another run's start) and takes
 * the normal path. */
static void wait_fail(struct sandbox *s, struct sbx_zygote *z, int err)
{
	struct sbx_zygote_wait *w = steal_pointer(&z->wait);
	if (!w)
		return;
	if (w->timer)
		loop_timer_stop(s->loop, w->timer);
	w->err = err;
	if (!(w->timer = loop_timer_start(s->loop, 0, on_wait_failed, w)))
		wait_done(w, err);
}

/* The spare's pidfd did not come in time: the zygote is retired, and the
 * run takes the normal path. */
static void on_wait_deadline(struct loop *loop, void *data)
{
	(void)loop;
	struct sbx_zygote_wait *w = data;
	struct sandbox *s = w->s;
	w->timer = NULL;
	if (s->zygote && s->zygote->wait == w)
		s->zygote->wait = NULL;
	log_warn("sandbox: the Python zygote's box did not report in %d ms; using a box of its own",
	         ZYGOTE_ANSWER_MS);
	retire(s, true);
	wait_done(w, -ETIMEDOUT);
}

/* The spare's pidfd came: the run that waits takes it. */
static void hand_over(struct sandbox *s, struct sbx_zygote *z)
{
	struct sbx_zygote_wait *w = steal_pointer(&z->wait);
	int r = give_spare(s, z, &w->q, w->b);
	if (r < 0) {
		log_warn(
		    "sandbox: the Python zygote could not start a run (%s); using a box of its "
		    "own",
		    strerror(-r));
		retire(s, true);
	}
	wait_done(w, r);
}

void sbx_zygote_wait_cancel(struct sandbox *s, struct sbx_zygote_wait *w)
{
	if (!w)
		return;
	/* The spare stays, for the next run. */
	if (s->zygote && s->zygote->wait == w)
		s->zygote->wait = NULL;
	if (w->timer)
		loop_timer_stop(s->loop, w->timer);
	zyg_req_release(&w->q);
	free(w);
}

/* The spare's pid 1 has not sent its pidfd yet: the zygote is cloning
 * it (a few milliseconds; a run came right after the last one). The run
 * waits for it off the loop's critical path: its pidfd comes to
 * on_spare_status, which hands the spare over; the rest (its setup,
 * READY) the run hears on the loop as from any box. */
static int wait_spare(struct sandbox *s, struct sbx_zygote *z, struct zyg_req *q, struct sbx_box *b,
                      sbx_zygote_wait_fn fn, void *data, struct sbx_zygote_wait **ret_wait)
{
	struct sbx_zygote_wait *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (struct sbx_zygote_wait){
	    .s = s, .b = b, .fn = fn, .data = data, .q = *q, .since_ms = loop_now_ms()};
	if (!(w->timer = loop_timer_start(s->loop, ZYGOTE_ANSWER_MS, on_wait_deadline, w))) {
		free(w);
		return -ENOMEM;
	}
	*q = (struct zyg_req){.codefd = -1};
	z->wait = w;
	*ret_wait = w;
	log_debug("sandbox: a run waits for the zygote's box");
	return -EINPROGRESS;
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
	if (!s->loop || !s->config.zygote || s->zygote_failures >= ZYGOTE_MAX_FAILURES)
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
	char *key = zygote_key(s, po, layout);
	if (!key)
		return -ENOMEM;
	if (s->zygote && strcmp(s->zygote->key, key) != 0) {
		log_debug("sandbox: the configuration or the interpreter changed");
		retire(s, false);
	}
	if (!s->zygote) {
		/* Not while this run starts: after it (sbx_zygote_idle). */
		if (s->zygote_timer) {
			loop_timer_stop(s->loop, s->zygote_timer);
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
		ask_spare(s);
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
		r = spare_pidfd(s, z->spare);
	if (r >= 0 && z->spare->pidfd >= 0)
		r = give_spare(s, z, &q, b);
	else if (r >= 0)
		r = fn ? wait_spare(s, z, &q, b, fn, data, ret_wait) : -EAGAIN;
	zyg_req_release(&q);
	if (r < 0 && r != -EAGAIN && r != -EINPROGRESS) {
		log_warn(
		    "sandbox: the Python zygote could not start a run (%s); using a box of its "
		    "own",
		    strerror(-r));
		retire(s, true);
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
		loop_timer_stop(s->loop, s->zygote_timer);
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
	drop_spare(s, z);
	loop_unwatch(s->loop, z->box.pidfd);
	loop_unwatch(s->loop, z->box.fds[0]);
	sbx_box_release(s, &z->box);
	free(z->key);
	free(z->ws);
	free(z);
}
