/* pyenv.c: finding the project's own Python environment and checking
 * what of the host it needs a box to show (see pyenv.h). Every folder
 * this file lets a plan bind is one that holds a python (bin/python3 or
 * bin/python), two levels or more below /, outside /etc, /proc, /sys,
 * /dev, /run and /boot, and neither the home folder, a folder holding
 * it, a user's home folder under /home, nor a folder holding the
 * workspace. */
#include "sandbox/box/pyenv.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/json.h"
#include "core/util.h"

/* pyvenv.cfg is a few lines; anything longer is not one. */
#define CFG_MAX 4096

__attribute__((format(printf, 4, 5))) static int say(char *err, size_t errsz, int r,
                                                     const char *fmt, ...);
static int say(char *err, size_t errsz, int r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errsz, fmt, ap);
	va_end(ap);
	return r;
}

/* A path kiln may print and bind: absolute, no control character. */
static bool path_sane(const char *p)
{
	if (p[0] != '/' || strlen(p) >= PATH_MAX)
		return false;
	for (const unsigned char *c = (const unsigned char *)p; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			return false;
	return true;
}

/* path is dir or below it (both absolute, without trailing slash). */
static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1 && dir[0] == '/')
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static bool under_system(const char *path)
{
	static const char *const sys[] = {"/usr", "/bin", "/sbin", "/lib", "/lib64"};
	for (size_t i = 0; i < ARRAY_SIZE(sys); i++)
		if (under(path, sys[i]))
			return true;
	return false;
}

/* Why dir (resolved) may not be shown in a box, or NULL when it may. */
static const char *refused(const char *dir, const char *workspace)
{
	static const char *const never[] = {"/etc", "/proc", "/sys", "/dev", "/run", "/boot"};
	/* The box's own scratch and code folders are mounted over these
	 * after the binds (box/child.c): a host folder there never shows. */
	static const char *const boxs[] = {"/tmp", "/work", "/code"};
	size_t depth = 0;
	for (const char *c = dir; *c; c++)
		depth += *c == '/' && c[1] && c[1] != '/';
	if (depth < 2)
		return "a folder at the top of the file system";
	for (size_t i = 0; i < ARRAY_SIZE(never); i++)
		if (under(dir, never[i]))
			return "a system folder kiln never shows";
	for (size_t i = 0; i < ARRAY_SIZE(boxs); i++)
		if (under(dir, boxs[i]))
			return "the box has its own folder there (its scratch /tmp and /work, its "
			       "/code)";
	if (geteuid() == 0) {
		/* As root the box's user is nobody (docs/sandbox.md), who must
		 * be able to enter every folder on the way. */
		char up[PATH_MAX];
		snprintf(up, sizeof(up), "%s", dir);
		for (char *sl = up + strlen(up); sl > up; sl = strrchr(up, '/')) {
			struct stat st;
			*sl = '\0';
			if (stat(up[0] ? up : "/", &st) == 0 && !(st.st_mode & S_IXOTH))
				return "kiln runs as root and maps the box to nobody, who cannot "
				       "enter "
				       "a folder on the way (no search permission for others)";
		}
	}
	const char *home = getenv("HOME");
	char rhome[PATH_MAX];
	if (home && home[0] == '/' && realpath(home, rhome) && under(rhome, dir))
		return "the home folder or a folder holding it";
	if (under(dir, "/home") && depth == 2)
		return "a home folder";
	if (workspace && under(workspace, dir))
		return "a folder holding the workspace";
	char py[PATH_MAX + 16];
	snprintf(py, sizeof(py), "%s/bin/python3", dir);
	if (access(py, X_OK) < 0) {
		snprintf(py, sizeof(py), "%s/bin/python", dir);
		if (access(py, X_OK) < 0)
			return "not a folder holding a Python interpreter (no bin/python3)";
	}
	return NULL;
}

/* Note dir (resolved) as a folder the box shows, unless /usr or the
 * workspace shows it already, or it is noted. -EPERM with a sentence
 * when it may not be shown. */
static int show(struct sbx_pyenv *e, const char *dir, const char *workspace, const char *what,
                char *err, size_t errsz)
{
	/* A link may lead where pyvenv.cfg's own check never looked. */
	if (!path_sane(dir))
		return say(
		    err, errsz, -EPERM,
		    "the Python environment %s (%s) leads to a folder whose path has control "
		    "characters, which kiln will not show; recreate the environment "
		    "(python3 -m venv)",
		    e->prefix[0] ? e->prefix : e->python, e->source);
	if (under_system(dir) || (workspace && under(dir, workspace)))
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(e->bind); i++)
		if (e->bind[i][0] && under(dir, e->bind[i]))
			return 0;
	const char *why = refused(dir, workspace);
	if (why)
		return say(err, errsz, -EPERM,
		           "the Python environment %s (%s) needs %s %s shown in the box, and kiln "
		           "will not show it: %s; move the environment, point sandbox.python at "
		           "an interpreter in a folder of its own, or recreate the environment "
		           "(python3 -m venv)",
		           e->prefix[0] ? e->prefix : e->python, e->source, what, dir, why);
	for (size_t i = 0; i < ARRAY_SIZE(e->bind); i++)
		if (!e->bind[i][0]) {
			snprintf(e->bind[i], sizeof(e->bind[i]), "%s", dir);
			return 0;
		}
	return say(err, errsz, -E2BIG, "the Python environment %s needs too many folders",
	           e->python);
}

/* dirname, twice: /p/bin/python3.12 -> /p. */
static void prefix_of(const char *exe, char *out, size_t outsz)
{
	snprintf(out, outsz, "%s", exe);
	for (int i = 0; i < 2; i++) {
		char *sl = strrchr(out, '/');
		if (sl && sl != out)
			*sl = '\0';
	}
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

/* pyvenv.cfg's home (into home), version and include-system-site-packages.
 * -ENOENT when there is none; -EPERM with a sentence when it is not one
 * kiln will use. */
static int read_cfg(struct sbx_pyenv *e, char *home, size_t homesz, char *err, size_t errsz)
{
	char path[PATH_MAX + 16], buf[CFG_MAX + 1];
	snprintf(path, sizeof(path), "%s/pyvenv.cfg", e->prefix);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, buf, CFG_MAX + 1) : -1;
	close(fd);
	if (n < 0 || n > CFG_MAX)
		return say(
		    err, errsz, -EPERM,
		    "the Python environment %s (%s) has a pyvenv.cfg kiln cannot read (not a "
		    "file, or over %d bytes); recreate it (python3 -m venv --clear %s)",
		    e->prefix, e->source, CFG_MAX, e->prefix);
	buf[n] = '\0';
	home[0] = '\0';
	for (char *line = buf, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		char *key = trim(line), *val = trim(eq + 1);
		if (strcmp(key, "home") == 0) {
			if (!path_sane(val) || strlen(val) >= homesz)
				return say(
				    err, errsz, -EPERM,
				    "the Python environment %s (%s) has a pyvenv.cfg whose home "
				    "is not an absolute path without control characters; "
				    "recreate it (python3 -m venv --clear %s)",
				    e->prefix, e->source, e->prefix);
			snprintf(home, homesz, "%s", val);
		} else if ((strcmp(key, "version") == 0 || strcmp(key, "version_info") == 0) &&
		           !e->version[0]) {
			size_t k = 0;
			for (; val[k] && k + 1 < sizeof(e->version); k++)
				if (!strchr("0123456789.abcrf+", val[k]))
					break;
			snprintf(e->version, sizeof(e->version), "%.*s", (int)k, val);
		} else if (strcmp(key, "include-system-site-packages") == 0) {
			e->system_site = strcasecmp(val, "true") == 0;
		}
	}
	return 0;
}

/* The version from prefix/lib/pythonX.Y, when no pyvenv.cfg says it. */
static void version_from_lib(struct sbx_pyenv *e, const char *prefix)
{
	char pat[PATH_MAX + 32];
	glob_t g;
	snprintf(pat, sizeof(pat), "%s/lib/python3.*", prefix);
	if (e->version[0] || glob(pat, GLOB_ONLYDIR, NULL, &g) != 0)
		return;
	if (g.gl_pathc)
		snprintf(e->version, sizeof(e->version), "%s",
		         strrchr(g.gl_pathv[g.gl_pathc - 1], '/') + 7);
	globfree(&g);
}

/* The interpreter e->python: it must run, and the folder it really lives
 * in is shown. */
static int check_python(struct sbx_pyenv *e, const char *workspace, char *err, size_t errsz)
{
	struct stat st;
	char real[PATH_MAX], prefix[PATH_MAX];
	if (lstat(e->python, &st) < 0)
		return say(err, errsz, -ENOENT,
		           "the Python environment %s (%s) has no interpreter %s; recreate it "
		           "(python3 -m venv --clear %s) or point sandbox.python at one",
		           e->prefix[0] ? e->prefix : e->python, e->source, e->python,
		           e->prefix[0] ? e->prefix : "DIR");
	if (!realpath(e->python, real) || stat(real, &st) < 0 || !S_ISREG(st.st_mode) ||
	    access(real, X_OK) < 0) {
		char target[PATH_MAX] = "?";
		ssize_t n = readlink(e->python, target, sizeof(target) - 1);
		if (n >= 0)
			target[n] = '\0';
		if (!path_sane(target) && target[0] != '?')
			snprintf(target, sizeof(target), "a path with control characters");
		return say(
		    err, errsz, -ENOENT,
		    "the Python environment %s (%s) is broken: its interpreter %s leads to "
		    "%s, which is not an installed program (was the Python it was made "
		    "with removed or upgraded?); recreate it (python3 -m venv --clear %s) or "
		    "point sandbox.python at a working interpreter",
		    e->prefix[0] ? e->prefix : e->python, e->source, e->python, target,
		    e->prefix[0] ? e->prefix : "DIR");
	}
	if (e->prefix[0] && under(real, e->prefix))
		return 0; /* a copy (venv --copies, conda): shown with the environment */
	prefix_of(real, prefix, sizeof(prefix));
	return show(e, prefix, workspace, "its interpreter's folder", err, errsz);
}

/* An environment folder (a venv: pyvenv.cfg; or a conda prefix). */
static int from_folder(struct sbx_pyenv *e, const char *dir, bool need_cfg, const char *workspace,
                       char *err, size_t errsz)
{
	char real[PATH_MAX], home[PATH_MAX] = "";
	if (!path_sane(dir))
		return say(
		    err, errsz, -EPERM,
		    "%s names a Python environment whose path is not absolute or has control "
		    "characters; fix or unset it",
		    e->source);
	if (!realpath(dir, real))
		return say(
		    err, errsz, -ENOENT,
		    "%s names the Python environment %s, which does not exist; fix or unset it",
		    e->source, dir);
	snprintf(e->prefix, sizeof(e->prefix), "%s", dir);
	snprintf(e->python, sizeof(e->python), "%s/bin/python", dir);
	int r = read_cfg(e, home, sizeof(home), err, errsz);
	if (r == -ENOENT && need_cfg)
		return say(err, errsz, -ENOENT,
		           "%s names %s, which is not a Python environment (no pyvenv.cfg); fix or "
		           "unset it",
		           e->source, dir);
	if (r < 0 && r != -ENOENT)
		return r;
	/* The environment itself, unless the workspace or /usr shows it. */
	if ((r = show(e, real, workspace, "its folder", err, errsz)) < 0)
		return r;
	if (home[0]) {
		char rhome[PATH_MAX], prefix[PATH_MAX];
		struct stat st;
		if (!realpath(home, rhome) || stat(rhome, &st) < 0 || !S_ISDIR(st.st_mode))
			return say(err, errsz, -ENOENT,
			           "the Python environment %s (%s) was made with the Python in %s "
			           "(pyvenv.cfg's home), which is not a folder here; recreate it "
			           "(python3 -m venv --clear %s)",
			           dir, e->source, home, dir);
		snprintf(prefix, sizeof(prefix), "%s", rhome);
		char *sl = strrchr(prefix, '/');
		if (sl && sl != prefix)
			*sl = '\0';
		/* home is the base's bin/: its parent is the prefix, which
		 * must hold a python (a home of /etc/x gives /etc, refused). */
		if (!under_system(prefix) &&
		    (r = show(e, prefix, workspace,
		              "its base interpreter's folder (pyvenv.cfg's home)", err, errsz)) < 0)
			return r;
	}
	if ((r = check_python(e, workspace, err, errsz)) < 0)
		return r;
	version_from_lib(e, real);
	e->project = true;
	return 1;
}

/* A bare interpreter sandbox.python names: inside a venv it is that
 * venv; else its own prefix is shown. */
static int from_interpreter(struct sbx_pyenv *e, const char *py, const char *workspace, char *err,
                            size_t errsz)
{
	if (!path_sane(py))
		return say(err, errsz, -EPERM,
		           "sandbox.python must be the absolute path of a Python interpreter, "
		           "without control characters");
	char dir[PATH_MAX], cfg[PATH_MAX + 16];
	prefix_of(py, dir, sizeof(dir));
	snprintf(cfg, sizeof(cfg), "%s/pyvenv.cfg", dir);
	if (access(cfg, F_OK) == 0) {
		int r = from_folder(e, dir, true, workspace, err, errsz);
		snprintf(e->python, sizeof(e->python), "%s", py);
		return r < 0 ? r : check_python(e, workspace, err, errsz) < 0 ? -ENOENT : 1;
	}
	snprintf(e->python, sizeof(e->python), "%s", py);
	int r = check_python(e, workspace, err, errsz);
	if (r < 0)
		return r;
	char real[PATH_MAX];
	if (realpath(py, real)) {
		prefix_of(real, dir, sizeof(dir));
		snprintf(e->prefix, sizeof(e->prefix), "%s", dir);
		version_from_lib(e, dir);
	}
	e->project = true;
	return 1;
}

int sbx_pyenv_find(json_object *section, const char *workspace, struct sbx_pyenv *ret, char *err,
                   size_t errsz)
{
	struct sbx_pyenv *e = ret;
	memset(e, 0, sizeof(*e));
	e->source = "system";
	snprintf(e->python, sizeof(e->python), "/usr/bin/python3");
	json_object *py = json_get(section, "python");
	if (py) {
		e->source = "sandbox.python";
		if (!json_object_is_type(py, json_type_string))
			return say(err, errsz, -EPERM,
			           "sandbox.python must be a string: the path of an interpreter");
		return from_interpreter(e, json_object_get_string(py), workspace, err, errsz);
	}
	const char *v = getenv("VIRTUAL_ENV");
	if (v && *v) {
		e->source = "VIRTUAL_ENV";
		return from_folder(e, v, true, workspace, err, errsz);
	}
	if ((v = getenv("CONDA_PREFIX")) && *v) {
		e->source = "CONDA_PREFIX";
		return from_folder(e, v, false, workspace, err, errsz);
	}
	static const struct {
		const char *name, *source;
	} local[] = {{".venv", "workspace .venv"}, {"venv", "workspace venv"}};
	for (size_t i = 0; workspace && i < ARRAY_SIZE(local); i++) {
		char dir[PATH_MAX], cfg[PATH_MAX + 16];
		struct stat st;
		snprintf(dir, sizeof(dir), "%s/%s", workspace, local[i].name);
		snprintf(cfg, sizeof(cfg), "%s/pyvenv.cfg", dir);
		if (lstat(cfg, &st) < 0)
			continue;
		e->source = local[i].source;
		return from_folder(e, dir, true, workspace, err, errsz);
	}
	return 0;
}
