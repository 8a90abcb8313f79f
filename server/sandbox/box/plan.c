/* plan.c: the new root's layout, a language's program (from core/lang.h) and the environment
 * allowlist (see plan.h). Everything here runs in the server, before
 * clone(), so it may allocate; the child only reads the result. */
#include "sandbox/box/plan.h"

#include <errno.h>
#include <glob.h>
#include <stdarg.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/json.h"
#include "core/lang.h"
#include "core/buf.h"
#include "core/util.h"
#include "sandbox/box/pyenv.h"
#include "sandbox/host/host.h"

#define CODE_DIR "code"

/* The whole environment the code sees, before config additions. The
 * server's own variables (API keys above all) never pass. */
static const char *const base_env[] = {
    "PATH=/usr/local/bin:/usr/bin:/bin",
    "HOME=/work",
    "TMPDIR=/tmp",
    "LANG=C.UTF-8",
    "USER=kiln",
    "LOGNAME=kiln",
    "TERM=dumb",
    "MPLBACKEND=Agg",
    /* matplotlib's cache (its font list) in the scratch /tmp, never in
     * a home folder; its rc file is the host's /etc/matplotlibrc. */
    "MPLCONFIGDIR=/tmp/matplotlib",
    "PYTHONUNBUFFERED=1",
    "PYTHONDONTWRITEBYTECODE=1",
};

static const char passwd[] = "kiln:x:1000:1000:kiln:/work:/bin/bash\n"
                             "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
static const char group[] = "kiln:x:1000:\nnogroup:x:65534:\n";
static const char hosts[] = "127.0.0.1\tlocalhost kiln\n::1\tlocalhost ip6-localhost\n";
static const char nsswitch[] = "passwd: files\ngroup: files\nhosts: files\n";

struct ctx {
	struct sbx_plan_owned *po;
	char *err;
	size_t errsz;
	json_object *section;
	const char *ws; /* the workspace's host folder, or NULL */
};

static char *keep(struct ctx *c, char *s)
{
	if (!s)
		return NULL;
	if (c->po->nstrs >= ARRAY_SIZE(c->po->strs)) {
		free(s);
		return NULL;
	}
	c->po->strs[c->po->nstrs++] = s;
	return s;
}

static char *dup_keep(struct ctx *c, const char *s)
{
	return keep(c, strdup(s));
}

static int add_dir(struct ctx *c, const char *rel)
{
	struct sbx_plan *p = &c->po->plan;
	for (size_t i = 0; i < p->ndirs; i++)
		if (strcmp(p->dirs[i], rel) == 0)
			return 0;
	if (p->ndirs >= SBX_MAX_DIRS)
		return -E2BIG;
	char *d = dup_keep(c, rel);
	if (!d)
		return -ENOMEM;
	p->dirs[p->ndirs++] = d;
	return 0;
}

/* mkdir -p of rel's parents, in order. */
static int add_parents(struct ctx *c, const char *rel)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s", rel) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (char *sl = strchr(tmp, '/'); sl; sl = strchr(sl + 1, '/')) {
		*sl = '\0';
		int r = add_dir(c, tmp);
		*sl = '/';
		if (r < 0)
			return r;
	}
	return 0;
}

static int add_bind(struct ctx *c, const char *src, unsigned flags)
{
	struct sbx_plan *p = &c->po->plan;
	if (src[0] != '/' || strstr(src, "/../") || strstr(src, "/./"))
		return -EINVAL;
	if (p->nbinds >= SBX_MAX_BINDS)
		return -E2BIG;
	const char *rel = src;
	while (*rel == '/')
		rel++;
	if (!*rel)
		return -EINVAL;
	int r = add_parents(c, rel);
	if (r < 0)
		return r;
	char *s = dup_keep(c, src);
	if (!s)
		return -ENOMEM;
	p->binds[p->nbinds++] = (struct sbx_bind){.src = s, .dst = s + (rel - src), .flags = flags};
	return 0;
}

static int add_link(struct ctx *c, const char *target, const char *rel)
{
	struct sbx_plan *p = &c->po->plan;
	if (p->nlinks >= SBX_MAX_LINKS)
		return -E2BIG;
	char *t = dup_keep(c, target), *l = dup_keep(c, rel);
	if (!t || !l)
		return -ENOMEM;
	p->links[p->nlinks++] = (struct sbx_symlink){.target = t, .path = l};
	return 0;
}

static int add_file(struct ctx *c, const char *rel, const char *data, size_t len, mode_t mode)
{
	struct sbx_plan *p = &c->po->plan;
	if (p->nfiles >= SBX_MAX_FILES)
		return -E2BIG;
	p->files[p->nfiles++] =
	    (struct sbx_file){.path = rel, .data = data, .len = len, .mode = mode};
	return 0;
}

/* Host paths as they are: a symlink is recreated (merged /usr makes
 * /bin, /lib... links), a directory or file is bound read-only. */
static int mirror(struct ctx *c, const char *path, unsigned flags)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return (flags & SBX_BIND_OPTIONAL) ? 0 : -errno;
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		int r = add_parents(c, path + 1);
		return r < 0 ? r : add_link(c, target, path + 1);
	}
	if (S_ISDIR(st.st_mode))
		return add_bind(c, path, flags & ~SBX_BIND_FILE);
	return add_bind(c, path, flags | SBX_BIND_FILE);
}

/* The matches of the last glob, kept while its directory's entries stay
 * the same: glob() reads the whole directory, and /etc has hundreds of
 * entries (half of a plan's 0.1-0.3 ms, docs/performance.md), while an
 * entry added, removed or renamed there changes the directory's mtime and
 * ctime. Plans are built on the loop and on job threads: a lock. */
static struct {
	pthread_mutex_t lock;
	glob_t g;
	bool has_g;    /* g holds a glob's result (to free) */
	char *pattern; /* what g matched, when it may be used again; or NULL */
	struct stat dir;
} glob_cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool same_dir(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* glob_cache.g holds pattern's matches (sorted: the layout is compared),
 * found again unless its directory is as when they were found. Called
 * with the lock held; -ENOMEM. */
static int glob_cached(const char *pattern)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(pattern, '/');
	size_t dl = slash && slash > pattern ? (size_t)(slash - pattern) : 1;
	struct stat st;
	bool known = false;
	/* Only a wildcard in the last component leaves the matches to the
	 * directory's entries alone. */
	if (slash && dl < sizeof(dir) && !memchr(pattern, '*', (size_t)(slash - pattern))) {
		memcpy(dir, pattern, dl);
		dir[dl] = '\0';
		known = stat(dir, &st) == 0;
	}
	if (known && glob_cache.pattern && strcmp(glob_cache.pattern, pattern) == 0 &&
	    same_dir(&glob_cache.dir, &st))
		return 0;
	if (glob_cache.has_g)
		globfree(&glob_cache.g);
	free(glob_cache.pattern);
	glob_cache.pattern = NULL;
	glob_cache.has_g = false;
	int gr = glob(pattern, 0, NULL, &glob_cache.g);
	if (gr != 0) {
		globfree(&glob_cache.g); /* whatever glob() may have kept */
		glob_cache.g = (glob_t){.gl_pathc = 0};
		if (gr != GLOB_NOMATCH)
			return -ENOMEM;
	}
	glob_cache.has_g = gr == 0;
	/* Without the directory's stat (or the memory to note the pattern)
	 * the result serves this call only. */
	if (known && (glob_cache.pattern = strdup(pattern)))
		glob_cache.dir = st;
	return 0;
}

int sbx_plan_glob_each(const char *pattern, int (*fn)(void *data, const char *path), void *data)
{
	pthread_mutex_lock(&glob_cache.lock);
	int r = glob_cached(pattern);
	for (size_t i = 0; r >= 0 && i < glob_cache.g.gl_pathc; i++)
		r = fn(data, glob_cache.g.gl_pathv[i]);
	pthread_mutex_unlock(&glob_cache.lock);
	return r;
}

static int mirror_optional(void *data, const char *path)
{
	return mirror(data, path, SBX_BIND_OPTIONAL);
}

static int add_glob(struct ctx *c, const char *pattern)
{
	if (!strchr(pattern, '*'))
		return mirror(c, pattern, SBX_BIND_OPTIONAL);
	return sbx_plan_glob_each(pattern, mirror_optional, c);
}

static bool under_system_dirs(const char *path)
{
	static const char *const prefixes[] = {"/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/"};
	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (strncmp(path, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

__attribute__((format(printf, 3, 4))) static int fail(struct ctx *c, int r, const char *fmt, ...);
static int fail(struct ctx *c, int r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, c->errsz, fmt, ap);
	va_end(ap);
	return r;
}

static size_t nenv(struct sbx_plan_owned *po)
{
	size_t n = 0;
	while (po->envp[n])
		n++;
	return n;
}

static int set_env(struct ctx *c, const char *key, const char *val)
{
	struct sbx_plan_owned *po = c->po;
	if (!env_name_valid(key))
		return fail(c, -EINVAL, "environment variable name '%s' is not valid", key);
	size_t klen = strlen(key), n = nenv(po);
	char *kv = NULL;
	if (asprintf(&kv, "%s=%s", key, val) < 0)
		return -ENOMEM;
	if (!keep(c, kv))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (strncmp(po->envp[i], key, klen) == 0 && po->envp[i][klen] == '=') {
			po->envp[i] = kv;
			return 0;
		}
	if (n + 1 >= ARRAY_SIZE(po->envp))
		return fail(c, -E2BIG, "too many environment variables (at %s)", key);
	po->envp[n] = kv;
	po->envp[n + 1] = NULL;
	return 0;
}

static int env_from(struct ctx *c, json_object *obj, const char *where)
{
	if (!obj)
		return 0;
	if (!json_object_is_type(obj, json_type_object))
		return fail(c, -EINVAL, "%s must be an object of strings", where);
	json_object_object_foreach(obj, key, v)
	{
		if (!json_object_is_type(v, json_type_string))
			return fail(c, -EINVAL, "environment variable %s must be a string", key);
		int r = set_env(c, key, json_object_get_string(v));
		if (r < 0)
			return r;
	}
	return 0;
}

/* kiln's one-shot Python runner and the display module it is given
 * (oneshot.py, kiln_display.py; embedded by sandbox/module.mk). */
extern const char sbx_oneshot_runner[], sbx_display_module[];

/* argv with "{file}" replaced by the code's path inside the box, and
 * "{kiln:oneshot.py}" and "{kiln:display.py}" by those programs' text
 * (python's argv in core/lang.c: `python3 -c RUNNER DISPLAY FILE`). */
static int set_argv(struct ctx *c, const char *const *argv, size_t n, const char *file)
{
	if (n == 0 || n >= ARRAY_SIZE(c->po->argv))
		return fail(c, -EINVAL, "a language's argv must have 1 to 32 entries%s", "");
	for (size_t i = 0; i < n; i++) {
		char *a;
		if (strcmp(argv[i], "{file}") == 0) {
			if (asprintf(&a, "/" CODE_DIR "/%s", file) < 0)
				return -ENOMEM;
		} else if (strcmp(argv[i], "{kiln:oneshot.py}") == 0) {
			a = strdup(sbx_oneshot_runner);
		} else if (strcmp(argv[i], "{kiln:display.py}") == 0) {
			a = strdup(sbx_display_module);
		} else {
			a = strdup(argv[i]);
		}
		if (!keep(c, a))
			return -ENOMEM;
		c->po->argv[i] = a;
	}
	c->po->argv[n] = NULL;
	return 0;
}

static bool valid_file_name(const char *f)
{
	return *f && !strchr(f, '/') && strcmp(f, ".") != 0 && strcmp(f, "..") != 0 &&
	       strlen(f) < 64;
}

static int interpreter(struct ctx *c, const char *file, bool own_prefix);

/* python with the project's own environment (pyenv.h), when the
 * language is the built-in python: its interpreter as argv[0], and the
 * folders outside /usr and the workspace it needs, read-only. */
static int project_python(struct ctx *c)
{
	struct sbx_plan_owned *po = c->po;
	int r = sbx_pyenv_find(c->section, c->ws, &po->py, c->err, c->errsz);
	if (r < 0)
		return r;
	po->has_py = true;
	if (r == 0)
		return 0;
	char *py = dup_keep(c, po->py.python);
	if (!py)
		return -ENOMEM;
	po->argv[0] = py;
	/* As an activated environment: its bin/ first on PATH (its
	 * console scripts, its pip), VIRTUAL_ENV for the tools that read it. */
	if (po->py.prefix[0]) {
		char path[PATH_MAX + 64];
		snprintf(path, sizeof(path), "%s/bin:/usr/local/bin:/usr/bin:/bin", po->py.prefix);
		if ((r = set_env(c, "PATH", path)) < 0 ||
		    (strcmp(po->py.source, "CONDA_PREFIX") != 0 &&
		     (r = set_env(c, "VIRTUAL_ENV", po->py.prefix)) < 0))
			return r;
	}
	for (size_t i = 0; i < ARRAY_SIZE(po->py.bind); i++)
		if (po->py.bind[i][0] && (r = add_bind(c, po->py.bind[i], 0)) < 0)
			return r;
	return 0;
}

/* The program of a language of the registry (core/lang.h), which holds
 * the built-in languages and the config's sandbox.languages. */
static int language(struct ctx *c, const char *name)
{
	const struct lang *l = lang_find(name);
	if (!l) {
		char msg[512];
		return fail(c, -EINVAL, "%s", lang_unknown(name, msg, sizeof(msg)));
	}
	size_t n = 0;
	while (l->argv[n])
		n++;
	int r = set_argv(c, l->argv, n, l->file);
	if (r < 0)
		return r;
	bool py = strcmp(l->name, "python") == 0 && strcmp(l->argv[0], "/usr/bin/python3") == 0;
	if (py && (r = project_python(c)) < 0)
		return r;
	for (const char *const *b = l->binds; *b; b++)
		if ((r = add_glob(c, *b)) < 0)
			return r;
	for (const char *const *e = l->env; *e; e++) {
		char key[256];
		const char *eq = strchr(*e, '=');
		if (!eq || (size_t)(eq - *e) >= sizeof(key))
			return fail(c, -EINVAL, "sandbox.languages.%s.env is not valid", l->name);
		memcpy(key, *e, (size_t)(eq - *e));
		key[eq - *e] = '\0';
		if ((r = set_env(c, key, eq + 1)) < 0)
			return r;
	}
	return interpreter(c, l->file, !(py && c->po->py.project));
}

/* The program's checks and extras, once argv is set: argv[0] must be an
 * installed absolute path; the code's file is added last (the caller
 * fills in its bytes). own_prefix: an interpreter outside the system
 * folders brings its prefix (a project's Python brings what pyenv.c
 * checked instead). */
static int interpreter(struct ctx *c, const char *file, bool own_prefix)
{
	const char *prog = c->po->argv[0];
	if (prog[0] != '/')
		return fail(c, -EINVAL, "the interpreter '%s' must be an absolute path", prog);
	if (access(prog, X_OK) < 0)
		return fail(c, -ENOENT, "the interpreter %s is not installed", prog);
	/* An interpreter outside the system directories brings its prefix
	 * (/opt/x/bin/python -> /opt/x) along, read-only. */
	char real[PATH_MAX];
	if (own_prefix && realpath(prog, real) && !under_system_dirs(real)) {
		char *slash = strrchr(real, '/');
		if (slash && slash != real)
			*slash = '\0';
		slash = strrchr(real, '/');
		if (slash && slash != real)
			*slash = '\0';
		int r = add_bind(c, real, 0);
		if (r < 0)
			return r;
	}
	char *path;
	if (asprintf(&path, CODE_DIR "/%s", file) < 0 || !keep(c, path))
		return -ENOMEM;
	c->po->plan.argv = c->po->argv;
	/* The code file is added by the caller of language() (needs code). */
	return add_file(c, path, NULL, 0, 0444);
}

/* The program is a language of the table (lang) or an explicit argv
 * with its file name (a worker's). */
static int build(const struct sbx_host *host, const struct sbx_plan_ws *ws, json_object *section,
                 const char *lang, const char *const *argv, const char *file, const char *code,
                 const struct sbx_limits *lim, struct sbx_plan_owned **ret, char *err, size_t errsz)
{
	struct sbx_plan_owned *po = calloc(1, sizeof(*po));
	if (!po)
		return -ENOMEM;
	struct ctx c = {.po = po,
	                .err = err,
	                .errsz = errsz,
	                .section = section,
	                .ws = lang && ws ? ws->host : NULL};
	struct sbx_plan *p = &po->plan;
	int r;
	p->status_fd = p->sync_fd = p->out_fd = p->err_fd = p->in_fd = -1;
	p->as_root = host->euid == 0;
	p->landlock_abi = host->landlock_abi;
	p->seccomp = &host->filter;
	/* Without code now, the root must have room for the largest code. */
	size_t code_len = code ? strlen(code) : SBX_CODE_MAX;
	snprintf(p->root_opts, sizeof(p->root_opts), "size=%zu,nr_inodes=4096,mode=0755",
	         code_len + (1u << 20));
	snprintf(p->scratch_size, sizeof(p->scratch_size), "%llu",
	         (unsigned long long)lim->tmpfs_bytes);
	/* As many inodes as the tmpfs has pages: the kernel memory its
	 * inodes take (under 1 KiB each, empty ones too) stays under a
	 * quarter of its size. */
	snprintf(p->scratch_inodes, sizeof(p->scratch_inodes), "%llu",
	         (unsigned long long)(lim->tmpfs_bytes / 4096));

	static const char *const dirs[] = {"usr", "etc", "proc", "dev", "tmp", "work", CODE_DIR};
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
		if ((r = add_dir(&c, dirs[i])) < 0)
			goto out;
	if ((r = add_bind(&c, "/usr", 0)) < 0)
		goto out;
	static const char *const libdirs[] = {"/bin",   "/sbin",  "/lib",
	                                      "/lib32", "/lib64", "/libx32"};
	for (size_t i = 0; i < ARRAY_SIZE(libdirs); i++)
		if ((r = mirror(&c, libdirs[i], SBX_BIND_OPTIONAL)) < 0)
			goto out;
	/* python's own /etc files are in every box, not only python's: then
	 * the built-in languages share one layout, and one warm box serves
	 * whichever comes next. */
	if ((r = add_glob(&c, "/etc/python3*")) < 0 ||
	    (r = mirror(&c, "/etc/ld.so.cache", SBX_BIND_OPTIONAL)) < 0 ||
	    (r = mirror(&c, "/etc/alternatives", SBX_BIND_OPTIONAL)) < 0 ||
	    (r = mirror(&c, "/etc/localtime", SBX_BIND_OPTIONAL)) < 0 ||
	    (r = mirror(&c, "/etc/matplotlibrc", SBX_BIND_OPTIONAL)) < 0 ||
	    (r = mirror(&c, "/etc/fonts", SBX_BIND_OPTIONAL)) < 0)
		goto out;
	/* The workspace (runs only, not workers): the host folder at its own
	 * path, over a private layer; the child checks the hide patterns. */
	if (lang && ws) {
		p->ws_host = ws->host;
		p->ws_dst = ws->host + 1;
		p->hide = ws->hide;
		p->nhide = ws->nhide;
	}
	static const char *const devs[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random",
	                                   "/dev/urandom"};
	for (size_t i = 0; i < ARRAY_SIZE(devs); i++)
		if ((r = add_bind(&c, devs[i], SBX_BIND_FILE | SBX_BIND_DEV)) < 0)
			goto out;
	if ((r = add_link(&c, "/proc/self/fd", "dev/fd")) < 0 ||
	    (r = add_link(&c, "/proc/self/fd/0", "dev/stdin")) < 0 ||
	    (r = add_link(&c, "/proc/self/fd/1", "dev/stdout")) < 0 ||
	    (r = add_link(&c, "/proc/self/fd/2", "dev/stderr")) < 0 ||
	    (r = add_link(&c, "/tmp", "dev/shm")) < 0)
		goto out;
	if ((r = add_file(&c, "etc/passwd", passwd, sizeof(passwd) - 1, 0444)) < 0 ||
	    (r = add_file(&c, "etc/group", group, sizeof(group) - 1, 0444)) < 0 ||
	    (r = add_file(&c, "etc/hosts", hosts, sizeof(hosts) - 1, 0444)) < 0 ||
	    (r = add_file(&c, "etc/nsswitch.conf", nsswitch, sizeof(nsswitch) - 1, 0444)) < 0)
		goto out;

	for (size_t i = 0; i < ARRAY_SIZE(base_env); i++)
		po->envp[i] = (char *)base_env[i];
	po->envp[ARRAY_SIZE(base_env)] = NULL;
	if ((r = env_from(&c, json_get(section, "env"), "sandbox.env")) < 0)
		goto out;
	if (lang) {
		r = language(&c, lang);
	} else {
		size_t n = 0;
		while (argv[n])
			n++;
		if (!valid_file_name(file))
			r = fail(&c, -EINVAL, "'%s' is not a valid file name", file);
		else if ((r = set_argv(&c, argv, n, file)) >= 0)
			r = interpreter(&c, file, true);
	}
	if (r < 0)
		goto out;
	if (code) {
		p->files[p->nfiles - 1].data = code;
		p->files[p->nfiles - 1].len = code_len;
	} else {
		/* The program and its code come later, with GO. */
		po->code_path = p->files[--p->nfiles].path;
		p->await_go = true;
	}
	p->envp = po->envp;
	p->nrlimits = sbx_plan_rlimits_for(lim, lang, p->rlimits);
	*ret = po;
	return 0;
out:
	if (r == -E2BIG && !err[0])
		snprintf(err, errsz, "the sandbox layout has too many entries");
	sbx_plan_free(po);
	return r;
}

size_t sbx_plan_rlimits(const struct sbx_limits *lim, struct sbx_rlimit ret[SBX_MAX_RLIMITS])
{
	const struct sbx_rlimit rl[] = {
	    {RLIMIT_CPU, {(lim->cpu_ms + 999) / 1000, (lim->cpu_ms + 999) / 1000 + 1}},
	    {RLIMIT_DATA, {lim->memory_bytes, lim->memory_bytes}},
	    {RLIMIT_NPROC, {lim->processes, lim->processes}},
	    {RLIMIT_FSIZE, {lim->file_size_bytes, lim->file_size_bytes}},
	    {RLIMIT_NOFILE, {lim->open_files, lim->open_files}},
	    {RLIMIT_CORE, {0, 0}},
	    /* Quotas the kernel counts per user up to the host's: set here,
	     * never inherited from the server, so that a box cannot use up
	     * its owner's queued signals, POSIX message queues or locked
	     * memory, nor raise its priority (docs/sandbox.md). */
	    {RLIMIT_SIGPENDING, {SBX_SIGPENDING, SBX_SIGPENDING}},
	    {RLIMIT_MSGQUEUE, {0, 0}},
	    {RLIMIT_MEMLOCK, {SBX_MEMLOCK_BYTES, SBX_MEMLOCK_BYTES}},
	    {RLIMIT_RTPRIO, {0, 0}},
	    {RLIMIT_NICE, {0, 0}},
	};
	_Static_assert(ARRAY_SIZE(rl) <= SBX_MAX_RLIMITS, "room for the rlimits");
	for (size_t i = 0; i < ARRAY_SIZE(rl); i++)
		ret[i] = rl[i];
	return ARRAY_SIZE(rl);
}

size_t sbx_plan_rlimits_for(const struct sbx_limits *lim, const char *language,
                            struct sbx_rlimit ret[SBX_MAX_RLIMITS])
{
	size_t n = sbx_plan_rlimits(lim, ret);
	const struct lang *l = language ? lang_find(language) : NULL;
	/* Shared memory (MAP_SHARED|MAP_ANONYMOUS, /dev/zero, SysV shm
	 * attached) is not RLIMIT_DATA's; the address space holds it all,
	 * with room for what a runtime maps without using (libraries,
	 * thread stacks, malloc's arenas). */
	if (l && l->address_space_limit && n < SBX_MAX_RLIMITS) {
		rlim_t as = lim->memory_bytes + SBX_AS_HEADROOM;
		ret[n++] = (struct sbx_rlimit){RLIMIT_AS, {as, as}};
	}
	return n;
}

int sbx_plan_build(const struct sbx_host *host, const struct sbx_plan_ws *ws, json_object *section,
                   const char *lang, const char *code, const struct sbx_limits *lim,
                   struct sbx_plan_owned **ret, char *err, size_t errsz)
{
	return build(host, ws, section, lang, NULL, NULL, code, lim, ret, err, errsz);
}

int sbx_plan_build_argv(const struct sbx_host *host, const char *const *argv, const char *file,
                        const char *code, const struct sbx_limits *lim, struct sbx_plan_owned **ret,
                        char *err, size_t errsz)
{
	if (!argv || !argv[0] || !file)
		return -EINVAL;
	return build(host, NULL, NULL, NULL, argv, file, code, lim, ret, err, errsz);
}

static int layout_add(struct buf *b, const char *tag, const char *x, const char *y, unsigned long n)
{
	return buf_printf(b, "%s %s %s %lu\n", tag, x ? x : "-", y ? y : "-", n);
}

char *sbx_plan_layout(const struct sbx_plan *p)
{
	struct buf b;
	buf_init(&b, 1u << 20);
	/* The scratch tmpfs's inodes follow from its size: no line of their
	 * own (the zygote's key leaves out this first line, as each run
	 * mounts its own scratch). */
	int r = layout_add(&b, "root", p->root_opts, p->scratch_size, (unsigned long)p->as_root);
	if (r >= 0 && p->ws_host)
		r = layout_add(&b, "workspace", p->ws_host, NULL, (unsigned long)p->nhide);
	for (size_t i = 0; r >= 0 && p->ws_host && i < p->nhide; i++)
		r = layout_add(&b, "hide", p->hide[i], NULL, 0);
	for (size_t i = 0; r >= 0 && i < p->ndirs; i++)
		r = layout_add(&b, "dir", p->dirs[i], NULL, 0);
	for (size_t i = 0; r >= 0 && i < p->nlinks; i++)
		r = layout_add(&b, "link", p->links[i].path, p->links[i].target, 0);
	for (size_t i = 0; r >= 0 && i < p->nbinds; i++)
		r = layout_add(&b, "bind", p->binds[i].src, p->binds[i].dst, p->binds[i].flags);
	for (size_t i = 0; r >= 0 && i < p->nfiles; i++) {
		r = layout_add(&b, "file", p->files[i].path, NULL, (unsigned long)p->files[i].mode);
		if (r >= 0)
			r = buf_append(&b, p->files[i].data, p->files[i].len);
	}
	if (r < 0) {
		buf_release(&b);
		return NULL;
	}
	return buf_steal(&b, NULL);
}

int sbx_plan_await(const struct sbx_host *host, const struct sbx_plan_ws *ws, json_object *section,
                   const char *language, const struct sbx_limits *lim, struct sbx_plan_owned **ret,
                   char *err, size_t errsz)
{
	err[0] = '\0';
	int r = sbx_host_filter_ready();
	if (r < 0) {
		snprintf(err, errsz,
		         "kiln will not run this code: the seccomp filter could not be compiled "
		         "(%s)",
		         strerror(-r));
		return r == -ENOMEM ? r : -EIO;
	}
	r = sbx_plan_build(host, ws, section, language, NULL, lim, ret, err, errsz);
	if (r < 0 && r != -ENOMEM && !err[0])
		snprintf(err, errsz, "cannot prepare the sandbox: %s", strerror(-r));
	return r;
}

void sbx_plan_free(struct sbx_plan_owned *po)
{
	if (!po)
		return;
	for (size_t i = 0; i < po->nstrs; i++)
		free(po->strs[i]);
	free(po);
}
