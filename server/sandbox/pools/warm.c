/* warm.c: the warm-box cache. Building a box (namespaces, mounts, pivot)
 * is most of what a run costs before its program starts, and none of it
 * depends on the program: so the server keeps one box built ahead of the
 * next run, waiting for GO like any other (docs/sandbox.md). The cache
 * holds built boxes, not runs: a run that fits takes the box, and each
 * box still serves one run only. */
#include "sandbox/pools/warm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/lang.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "sandbox/box/box.h"
#include "sandbox/host/cgroup.h"
#include "sandbox/host/job.h"
#include "sandbox/box/plan.h"
#include "sandbox/state.h"
#include "sandbox/host/base.h"
#include "sandbox/host/reap.h"

/* How long the server is idle before it builds the next warm box. */
#define WARM_DELAY_MS 10

void warm_plan_drop(struct sandbox *s)
{
	sbx_plan_free(steal_pointer(&s->warm_plan));
}

/* What a plan of language reads of the host, as it is now: /, whose
 * entries are the /bin, /lib... links mirrored; /etc, whose entries are
 * the files and globs mirrored (an entry made, removed, renamed or
 * replaced changes its times); the interpreter, followed (replaced,
 * retargeted, made unexecutable). A language with binds of its own
 * reads more: -ENOTSUP, never kept. */
static int plan_note(const char *language, struct sbx_plan_note *n)
{
	const struct lang *l = lang_find(language);
	if (!l || !l->argv[0] || l->binds[0])
		return -ENOTSUP;
	const char *paths[] = {"/", "/etc", l->argv[0]};
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++)
		if (stat(paths[i], &n->st[i]) < 0)
			return -errno;
	return 0;
}

static bool same_note(const struct sbx_plan_note *a, const struct sbx_plan_note *b)
{
	for (size_t i = 0; i < ARRAY_SIZE(a->st); i++) {
		const struct stat *x = &a->st[i], *y = &b->st[i];
		if (x->st_dev != y->st_dev || x->st_ino != y->st_ino || x->st_mode != y->st_mode ||
		    x->st_mtim.tv_sec != y->st_mtim.tv_sec ||
		    x->st_mtim.tv_nsec != y->st_mtim.tv_nsec ||
		    x->st_ctim.tv_sec != y->st_ctim.tv_sec ||
		    x->st_ctim.tv_nsec != y->st_ctim.tv_nsec)
			return false;
	}
	return true;
}

/* A python plan runs the interpreter found now (pyenv.h): a .venv made
 * since, or a changed sandbox.python, makes the plan stale. */
static bool same_python(const struct sandbox *s, const struct sbx_plan_owned *po)
{
	if (!po->has_py)
		return true;
	struct sbx_plan_ws ws;
	const struct sbx_plan_ws *w = sbx_plan_ws_of(s, &ws);
	struct sbx_pyenv now;
	char err[512];
	if (sbx_pyenv_find(s->config.section, w ? w->host : NULL, &now, err, sizeof(err)) < 0)
		return false;
	return now.project == po->py.project && strcmp(now.python, po->py.python) == 0 &&
	       memcmp(now.bind, po->py.bind, sizeof(now.bind)) == 0;
}

struct sbx_plan_owned *warm_plan_take(struct sandbox *s, const char *language,
                                      const struct sbx_limits *lim, char **ret_layout)
{
	struct sbx_plan_owned *po = steal_pointer(&s->warm_plan);
	struct sbx_plan_note now;
	if (po && s->warm && !s->warm->reaped && strcmp(language, s->warm_language) == 0 &&
	    memcmp(lim, &s->warm_plan_limits, sizeof(*lim)) == 0 &&
	    plan_note(language, &now) == 0 && same_note(&now, &s->warm_plan_note) &&
	    same_python(s, po)) {
		/* The box was built from this very plan: its layout is the
		 * one sbx_plan_layout() would make again (a copy; NULL when
		 * out of memory, and the caller makes it). */
		*ret_layout = s->warm->layout ? strdup(s->warm->layout) : NULL;
		return po;
	}
	sbx_plan_free(po);
	return NULL;
}

/* Drop the cached box without waiting: pid 1 sees its socket close and
 * exits; the sandbox reaps it. */
static void discard_warm(struct sandbox *s)
{
	warm_plan_drop(s);
	struct sbx_box *b = s->warm;
	if (!b)
		return;
	log_debug("sandbox: dropping the warm box");
	s->warm = NULL;
	loop_unwatch(s->base.loop, b->pidfd);
	sbx_box_reap_later(&s->base, b);
	sbx_box_release(&s->base, b);
	free(b);
}

/* The cached box's pid 1 ended before a run took it (its build failed, or
 * it was killed): the next run builds its own, and says why if it fails
 * the same way. */
static void on_warm_dead(struct loop *loop, int fd, unsigned events, void *data)
{
	(void)events;
	struct sandbox *s = data;
	if (!sbx_pidfd_reap(fd))
		return;
	loop_unwatch(loop, fd);
	log_debug("sandbox: the warm box ended before use");
	warm_plan_drop(s);
	s->warm->reaped = true;
	struct sbx_box *b = steal_pointer(&s->warm);
	sbx_box_release(&s->base, b);
	free(b);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
/* /proc/self/pagemap: present, a file's page, mapped by this process
 * only. */
#define PM_PRESENT   (1ULL << 63)
#define PM_FILE      (1ULL << 61)
#define PM_EXCLUSIVE (1ULL << 56)
/* The largest mapping looked at: the heap, the data, the stacks. */
#define OWN_MAPPING_MAX (64UL << 20)
/* At most this many pages copied a box (some 250 in a server at rest):
 * a server whose heap grew does not copy all of it each run. */
#define OWN_PAGES_MAX 4096

/* Copy in pages [from, to) of one mapping that are present and shared
 * (the box's clone) and anonymous: MADV_POPULATE_WRITE breaks their
 * copy-on-write as a write would, without writing (a thread of the
 * server may be writing them), and fails harmlessly on a range that
 * has gone meanwhile. Pages never touched stay unallocated. */
static void own_range(int pm, uintptr_t from, uintptr_t to, size_t *budget,
                      const atomic_bool *cancel)
{
	uint64_t ent[512];
	const uintptr_t page = 4096;
	for (uintptr_t at = from; at < to && *budget && !atomic_load(cancel);) {
		size_t n = (to - at) / page;
		if (n > sizeof(ent) / sizeof(ent[0]))
			n = sizeof(ent) / sizeof(ent[0]);
		ssize_t got =
		    pread(pm, ent, n * sizeof(ent[0]), (off_t)(at / page * sizeof(ent[0])));
		if (got < (ssize_t)sizeof(ent[0]))
			return;
		n = (size_t)got / sizeof(ent[0]);
		for (size_t i = 0; i < n;) {
			size_t j = i;
			while (j < n &&
			       (ent[j] & (PM_PRESENT | PM_FILE | PM_EXCLUSIVE)) == PM_PRESENT)
				j++;
			if (j - i > *budget)
				j = i + *budget;
			if (j > i) {
				madvise((void *)(at + i * page), (j - i) * page,
				        MADV_POPULATE_WRITE);
				*budget -= j - i;
			}
			i = j + 1;
		}
		at += n * page;
	}
}

/* A box's pid 1 is a clone() of the server: every page of the server's
 * memory is shared with it, copy-on-write, for as long as the warm box
 * waits. The next request's first write to each (some 30 pages: the
 * loop's stack, the heap, the libraries' data) would fault and copy it
 * there, 2.3 us each on this VM, on the reply's path
 * (docs/performance.md). They are copied now instead, on a thread, while the server is idle:
 * the private writable mappings' shared pages, no others. */
static void own_pages(void *data, const atomic_bool *cancel)
{
	(void)data;
	int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	FILE *maps = fopen("/proc/self/maps", "re");
	char line[512];
	size_t budget = OWN_PAGES_MAX;
	while (pm >= 0 && maps && budget && fgets(line, sizeof(line), maps) &&
	       !atomic_load(cancel)) {
		unsigned long from, to;
		char perms[5];
		/* Bounded: a larger mapping is a reservation (a sanitizer's
		 * shadow), whose pagemap would take seconds to read. */
		if (sscanf(line, "%lx-%lx %4s", &from, &to, perms) == 3 &&
		    strcmp(perms, "rw-p") == 0 && to - from <= OWN_MAPPING_MAX)
			own_range(pm, from, to, &budget, cancel);
		/* A line longer than the buffer: its rest is not a line. */
		while (!strchr(line, '\n') && fgets(line, sizeof(line), maps))
			;
	}
	if (maps)
		fclose(maps);
	if (pm >= 0)
		close(pm);
}

static void on_warm_timer(struct loop *loop, void *data)
{
	(void)loop;
	struct sandbox *s = data;
	s->warm_timer = NULL;
	if (s->warm || !s->warm_language[0])
		return;
	/* The last run's limits: a box's tmpfs size is fixed when it is built. */
	const struct sbx_limits *lim = s->have_warm_limits ? &s->warm_limits : &s->config.limits;
	struct sbx_box *b = malloc(sizeof(*b));
	if (!b)
		return;
	sbx_box_init(b);
	struct sbx_plan_owned *po = NULL;
	char err[512];
	int step = -1;
	/* The host as the plan will see it, noted first: a change while
	 * the plan is made shows at the take. */
	struct sbx_plan_note note;
	bool noted = plan_note(s->warm_language, &note) == 0;
	struct sbx_plan_ws ws;
	int r = sbx_plan_await(s->base.host, sbx_plan_ws_of(s, &ws), s->config.section,
	                       s->warm_language, lim, &po, err, sizeof(err));
	/* The folder the box will hold, named before pid 1 opens it: if the
	 * path names another folder by the time a run takes the box, the
	 * box is not used (warm_take). */
	struct stat st;
	if (r >= 0 && po->plan.ws_host && stat(po->plan.ws_host, &st) < 0) {
		r = -errno;
		snprintf(err, sizeof(err), "%s: %s", po->plan.ws_host, strerror(errno));
	} else if (r >= 0 && po->plan.ws_host) {
		s->warm_ws_dev = st.st_dev;
		s->warm_ws_ino = st.st_ino;
	}
	if (r >= 0 &&
	    (r = sbx_box_build(&s->base, po, SBX_BOX_PIPES, b, &step, err, sizeof(err))) < 0 &&
	    step >= 0)
		snprintf(err, sizeof(err), "%s failed: %s", sbx_step_name(step), strerror(-r));
	if (r >= 0 && loop_watch(s->base.loop, b->pidfd, LOOP_READ, on_warm_dead, s) < 0)
		r = -ENOMEM;
	/* Kept for the run that takes the box: it need not look at the
	 * host again, only check that the host is as noted (a workspace's
	 * plan is made anew: its folder is checked at the take). */
	if (r >= 0 && noted && !po->plan.ws_host) {
		warm_plan_drop(s);
		s->warm_plan = steal_pointer(&po);
		s->warm_plan_limits = *lim;
		s->warm_plan_note = note;
	}
	sbx_plan_free(po);
	if (r < 0) {
		/* The run that wants it will build its own and say why. */
		log_debug("sandbox: no warm box for %s: %s", s->warm_language, err);
		sbx_box_release(&s->base, b);
		free(b);
		return;
	}
	/* The run that takes it writes its own limits into its cgroup. */
	s->warm = b;
	log_debug("sandbox: warm box for %s, pid %d", s->warm_language, (int)b->pid);
	sbx_job_start(&s->base, own_pages, NULL, NULL, NULL, NULL);
}

void run_warm(struct sandbox *s, const char *language)
{
	if (!s || !s->base.loop || !s->config.warm_boxes || !language)
		return;
	/* One warm box; it serves any language of its layout. */
	if (s->warm || s->warm_timer)
		return;
	snprintf(s->warm_language, sizeof(s->warm_language), "%s", language);
	/* A little later, from the loop: what is being answered now goes out
	 * first, and a request that follows at once is not kept waiting
	 * behind the clone (it builds its own box, which is as fast). */
	s->warm_timer = loop_timer_start(s->base.loop, WARM_DELAY_MS, on_warm_timer, s);
}

/* Whether ws_host still names the folder the warm box was built with.
 * The layout holds the path only: a folder moved away and another made
 * at its path has the same one, and the box would show the old folder's
 * files while the hide list (made from the path) masks the new one's. */
static bool same_folder(const struct sandbox *s, const char *ws_host)
{
	struct stat st;
	if (!ws_host)
		return true;
	if (stat(ws_host, &st) < 0)
		return false;
	if (st.st_dev == s->warm_ws_dev && st.st_ino == s->warm_ws_ino)
		return true;
	log_debug("sandbox: %s is another folder than the warm box's: a fresh box", ws_host);
	return false;
}

/* A box built ahead of its run differs from a fresh one only in when it
 * was built: it still waits for its program and code, and serves one
 * run. It fits any run whose plan has the same layout (the built-in
 * languages share one; a tmpfs size or a config's binds make another)
 * and the same workspace folder, not only the same path. */
bool warm_take(struct sandbox *s, const char *layout, const char *ws_host, struct sbx_box *b)
{
	warm_plan_drop(s);
	struct sbx_box *w = s->warm;
	if (w && !w->reaped && w->layout && strcmp(w->layout, layout) == 0 &&
	    same_folder(s, ws_host)) {
		loop_unwatch(s->base.loop, w->pidfd);
		*b = *w;
		free(steal_pointer(&s->warm));
		return true;
	}
	discard_warm(s);
	return false;
}

void warm_hold(struct sandbox *s)
{
	if (s->warm_timer) {
		loop_timer_stop(s->base.loop, s->warm_timer);
		s->warm_timer = NULL;
	}
}

void warm_free(struct sandbox *s)
{
	warm_hold(s);
	discard_warm(s);
}
