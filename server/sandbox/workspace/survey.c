/* survey.c: the modules a box can import and the workspace's files (see
 * survey.h). The probe is a worker box (worker.h) running python3 -I on a
 * short script that imports each notable module and prints what worked;
 * it runs once per process, on a job thread, when the first survey is
 * asked for (an intent), not at start: a server that never writes code
 * never pays its CPU. */
#include "sandbox/workspace/survey.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/position.h"
#include "sandbox/host/job.h"
#include "sandbox/state.h"
#include "sandbox/box/worker.h"

/* The probe: each notable module is looked up (find_spec) with its
 * version; matplotlib, whose import is the one that used to fail in the
 * box (it needs its rc file), is imported for real. Importing them all
 * would cost some 1.7 s of CPU here; this costs 0.4 s, once. */
static const char probe_src[] =
    "import importlib.util, importlib.metadata as md\n"
    "mods = [('numpy', 'numpy'), ('pandas', 'pandas'), ('matplotlib', 'matplotlib'),\n"
    "        ('scipy', 'scipy'), ('sklearn', 'scikit-learn'), ('PIL', 'Pillow'),\n"
    "        ('seaborn', 'seaborn'), ('sympy', 'sympy'), ('statsmodels', 'statsmodels'),\n"
    "        ('networkx', 'networkx'), ('yaml', 'PyYAML'), ('openpyxl', 'openpyxl'),\n"
    "        ('bs4', 'beautifulsoup4'), ('lxml', 'lxml'), ('pyarrow', 'pyarrow'),\n"
    "        ('dateutil', 'python-dateutil'), ('requests', 'requests')]\n"
    "out = []\n"
    "for mod, dist in mods:\n"
    "    try:\n"
    "        if importlib.util.find_spec(mod) is None:\n"
    "            continue\n"
    "        if mod == 'matplotlib':\n"
    "            import matplotlib.pyplot\n"
    "    except Exception:\n"
    "        continue\n"
    "    try:\n"
    "        out.append(mod + ' ' + md.version(dist))\n"
    "    except Exception:\n"
    "        out.append(mod)\n"
    "print(', '.join(out))\n";

#define PROBE_MS       20000
#define PROBE_MAX      4096
#define LIST_MAX_BYTES 4096
#define LIST_MAX_FILES 200
#define LIST_DEPTH     3
#define HEAD_MAX_FILE  (1u << 20) /* header lines of files up to this size */

static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
static char *probe_result; /* NULL until probed; "" when nothing imports */
static bool probe_done;

const char *sandbox_modules(void)
{
	pthread_mutex_lock(&probe_lock);
	const char *r = probe_done ? probe_result : NULL;
	pthread_mutex_unlock(&probe_lock);
	return r;
}

/* On a job thread: run the probe (once per process). */
static void probe(void)
{
	pthread_mutex_lock(&probe_lock);
	bool done = probe_done;
	pthread_mutex_unlock(&probe_lock);
	if (done)
		return;
	static const char *const argv[] = {"/usr/bin/python3", "-I", "{file}", NULL};
	struct sbx_worker_spec spec = {
	    .argv = argv, .file = "probe.py", .data = probe_src, .start_ms = 5000};
	struct sbx_worker *w = NULL;
	char err[512];
	char *result = NULL;
	int r = sbx_worker_spawn(NULL, &spec, &w, err, sizeof(err));
	if (r < 0) {
		log_warn("survey: cannot probe the box's modules: %s", err);
	} else {
		char buf[PROBE_MAX];
		sbx_worker_read(w, buf, sizeof(buf), loop_now_ms() + PROBE_MS);
		sbx_worker_free(w);
		char *nl = strchr(buf, '\n');
		if (nl && utf8_valid(buf, (size_t)(nl - buf))) {
			*nl = '\0';
			result = strdup(buf);
		} else {
			log_warn("survey: the module probe gave no answer");
		}
	}
	pthread_mutex_lock(&probe_lock);
	if (!probe_done) {
		probe_result = result;
		probe_done = true;
		result = NULL;
	}
	pthread_mutex_unlock(&probe_lock);
	free(result);
}

static bool hidden(char *const *hide, size_t nhide, const char *name)
{
	for (size_t i = 0; i < nhide; i++)
		if (fnmatch(hide[i], name, 0) == 0)
			return true;
	return false;
}

/* The first line of a small CSV or JSON file, shown beside its name. */
static void header_line(int dir, const char *name, off_t size, struct buf *b)
{
	const char *dot = strrchr(name, '.');
	if (!dot || size > HEAD_MAX_FILE ||
	    (strcasecmp(dot, ".csv") && strcasecmp(dot, ".tsv") && strcasecmp(dot, ".json") &&
	     strcasecmp(dot, ".jsonl")))
		return;
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return;
	char line[161];
	ssize_t n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return;
	size_t len = 0;
	while (len < (size_t)n && line[len] != '\n' && line[len] != '\r')
		len++;
	len = utf8_complete_prefix(line, len);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)line[i] < 0x20 && line[i] != '\t')
			return; /* not a text header: leave it out */
	if (len && utf8_valid(line, len))
		buf_printf(b, ": %.*s%s", (int)len, line, len == sizeof(line) - 1 ? "..." : "");
}

struct listing {
	struct buf b;
	size_t files;
	bool full;
	char *const *hide;
	size_t nhide;
};

static void list_dir(struct listing *l, int dir, const char *rel, int depth)
{
	int fd = dup(dir);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	/* Sorted, so the prompt is the same from one run to the next. */
	char *names[512];
	size_t n = 0;
	struct dirent *e;
	while (n < 512 && (e = readdir(d)))
		if (e->d_name[0] != '.' || (e->d_name[1] && strcmp(e->d_name, "..")))
			if (strcmp(e->d_name, ".") && !hidden(l->hide, l->nhide, e->d_name))
				names[n++] = strdup(e->d_name);
	for (size_t i = 1; i < n; i++)
		for (size_t j = i;
		     j > 0 && names[j - 1] && names[j] && strcmp(names[j - 1], names[j]) > 0; j--) {
			char *t = names[j];
			names[j] = names[j - 1];
			names[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		const char *name = names[i];
		struct stat st;
		if (!name || l->full || fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !utf8_valid(name, strlen(name)))
			continue;
		size_t before = l->b.len;
		if (S_ISDIR(st.st_mode)) {
			buf_printf(&l->b, "%s%s%s/\n", rel, *rel ? "/" : "", name);
			if (depth + 1 < LIST_DEPTH) {
				int sub = openat(dirfd(d), name,
				                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (sub >= 0) {
					char subrel[1024];
					snprintf(subrel, sizeof(subrel), "%s%s%s", rel,
					         *rel ? "/" : "", name);
					list_dir(l, sub, subrel, depth + 1);
					close(sub);
				}
			}
		} else if (S_ISREG(st.st_mode)) {
			buf_printf(&l->b, "%s%s%s (%lld bytes)", rel, *rel ? "/" : "", name,
			           (long long)st.st_size);
			header_line(dirfd(d), name, st.st_size, &l->b);
			buf_printf(&l->b, "\n");
			l->files++;
		}
		if (l->b.len > LIST_MAX_BYTES || l->files >= LIST_MAX_FILES) {
			l->b.len = before;
			l->full = true;
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	closedir(d);
}

struct sbx_survey_wait {
	struct sandbox *s;
	sbx_survey_fn done;
	void *data;
	struct sbx_job *job;
	char *root;
	char **hide;
	size_t nhide;
	char *files; /* the listing made on the thread */
	struct sbx_survey_wait **ret_slot;
};

static void survey_work(void *data, const atomic_bool *cancel)
{
	struct sbx_survey_wait *w = data;
	probe();
	if (!w->root || atomic_load(cancel))
		return;
	struct listing l = {.hide = w->hide, .nhide = w->nhide};
	buf_init(&l.b, 2 * LIST_MAX_BYTES);
	int dir = open(w->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir >= 0) {
		list_dir(&l, dir, "", 0);
		close(dir);
	}
	if (l.full)
		buf_printf(&l.b, "(more files not listed)\n");
	w->files = buf_steal(&l.b, NULL);
	if (!w->files)
		w->files = strdup("");
}

static void survey_done(void *data)
{
	struct sbx_survey_wait *w = data;
	w->job = NULL;
	if (w->ret_slot)
		*w->ret_slot = NULL;
	struct sandbox *s = w->s;
	if (w->root && w->files && s->workspace && strcmp(s->workspace, w->root) == 0) {
		free(s->survey_files);
		s->survey_files = w->files;
		w->files = NULL;
	}
	w->done(w->data);
}

static void survey_free(void *data)
{
	struct sbx_survey_wait *w = data;
	free(w->root);
	for (size_t i = 0; i < w->nhide; i++)
		free(w->hide[i]);
	free(w->hide);
	free(w->files);
	free(w);
}

int sandbox_survey_start(struct sandbox *s, sbx_survey_fn done, void *data,
                         struct sbx_survey_wait **ret)
{
	struct sbx_survey_wait *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (struct sbx_survey_wait){.s = s, .done = done, .data = data};
	bool ws = s->workspace && s->config.workspace_on;
	if (ws && (!(w->root = strdup(s->workspace)) ||
	           !(w->hide = calloc(s->config.nhide + 1, sizeof(*w->hide))))) {
		survey_free(w);
		return -ENOMEM;
	}
	for (size_t i = 0; ws && i < s->config.nhide; i++) {
		if (!(w->hide[i] = strdup(s->config.hide[i]))) {
			survey_free(w);
			return -ENOMEM;
		}
		w->nhide++;
	}
	if (!ws) {
		free(s->survey_files);
		s->survey_files = NULL;
	}
	/* Set first: without a thread the job runs (and done comes) now, and
	 * done clears it. */
	w->ret_slot = ret;
	if (ret)
		*ret = w;
	int r = sbx_job_start(&s->base, survey_work, survey_done, survey_free, w, &w->job);
	if (r < 0) {
		if (ret)
			*ret = NULL;
		survey_free(w);
		return r;
	}
	return 0;
}

void sandbox_survey_cancel(struct sbx_survey_wait *w)
{
	if (!w)
		return;
	if (w->ret_slot)
		*w->ret_slot = NULL;
	w->ret_slot = NULL;
	if (w->job)
		sbx_job_cancel(w->job);
}

const char *sandbox_workspace_files(const struct sandbox *s)
{
	return s->workspace && s->config.workspace_on ? s->survey_files : NULL;
}
