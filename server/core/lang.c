/* lang.c: the language registry (see lang.h): the built-in table, the
 * config's additions laid over it, and the lookups by name, extension and
 * #! line. */
#include "core/lang.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/json.h"
#include "core/util.h"

#define NAME_MAX_LEN   31
#define ARGV_MAX       32
#define LIST_MAX       32
#define SHEBANG_MAX    256
#define NAME_SHOWN_MAX 64

/* python is Debian's /usr/bin/python3, not whatever python is first on
 * PATH: the project's own environment (a venv, conda, sandbox.python) is
 * found per run and shown read-only (sandbox/box/pyenv.h). zsh is not an alias
 * of bash: zsh code is not bash code (a config can add zsh with its own
 * argv). */
static const char *const py_aliases[] = {"py", "python3", "py3", NULL};
static const char *const py_ext[] = {".py", ".pyw", NULL};
static const char *const py_interp[] = {"python3", "python", NULL};
/* A one-shot run goes through kiln's runner (server/sandbox/guest/oneshot.py):
 * the code runs as `python3 FILE` would run it, and its last expression
 * and open figures are displayed. */
static const char *const py_argv[] = {"/usr/bin/python3",  "-c",     "{kiln:oneshot.py}",
                                      "{kiln:display.py}", "{file}", NULL};

static const char *const sh_aliases[] = {"sh", "shell", "shellscript", NULL};
static const char *const sh_ext[] = {".sh", ".bash", NULL};
static const char *const sh_interp[] = {"bash", "sh", "dash", NULL};
static const char *const sh_argv[] = {"/bin/bash", "{file}", NULL};

static const char *const js_aliases[] = {"js", "node", "nodejs", "mjs", NULL};
static const char *const js_ext[] = {".js", ".mjs", ".cjs", NULL};
static const char *const js_interp[] = {"node", "nodejs", NULL};
static const char *const js_argv[] = {"/usr/bin/node", "{file}", NULL};

static const char *const none[] = {NULL};

static const struct lang builtins[] = {
    {"python", py_aliases, py_ext, py_interp, py_argv, "snippet.py", none, none, "python", true,
     true},
    {"bash", sh_aliases, sh_ext, sh_interp, sh_argv, "snippet.sh", none, none, "bash", true, true},
    {"javascript", js_aliases, js_ext, js_interp, js_argv, "snippet.js", none, none, "javascript",
     true, false},
};

/* The registry in use: the built-in table until lang_configure gives it
 * config entries. Strings of config entries point into config (a copy
 * of the config's object) or into owned. */
struct registry {
	struct lang *langs;
	size_t n;
	json_object *config;
	void **owned;
	size_t nowned, cowned;
};

static struct registry current;

static const struct lang *table(size_t *ret_n)
{
	if (current.langs) {
		*ret_n = current.n;
		return current.langs;
	}
	*ret_n = ARRAY_SIZE(builtins);
	return builtins;
}

size_t lang_count(void)
{
	size_t n;
	table(&n);
	return n;
}

const struct lang *lang_at(size_t i)
{
	size_t n;
	const struct lang *t = table(&n);
	return i < n ? &t[i] : NULL;
}

static bool names_lang(const struct lang *l, const char *name)
{
	if (strcasecmp(l->name, name) == 0)
		return true;
	for (const char *const *a = l->aliases; *a; a++)
		if (strcasecmp(*a, name) == 0)
			return true;
	return false;
}

static const struct lang *find_in(const struct lang *t, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (names_lang(&t[i], name))
			return &t[i];
	return NULL;
}

const struct lang *lang_find(const char *name)
{
	if (!name || !name[0])
		return NULL;
	size_t n;
	const struct lang *t = table(&n);
	return find_in(t, n, name);
}

const struct lang *lang_for_path(const char *path)
{
	if (!path)
		return NULL;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	const char *dot = strrchr(base, '.');
	/* ".bashrc" has no extension, it is a name. */
	if (!dot || dot == base)
		return NULL;
	size_t n;
	const struct lang *t = table(&n);
	for (size_t i = 0; i < n; i++)
		for (const char *const *e = t[i].extensions; *e; e++)
			if (strcasecmp(*e, dot) == 0)
				return &t[i];
	return NULL;
}

/* "python3.11" is "python3" or "python" with a version after it. */
static bool interpreter_is(const char *prog, const char *name)
{
	size_t nl = strlen(name);
	if (strncmp(prog, name, nl) != 0)
		return false;
	for (const char *p = prog + nl; *p; p++)
		if (!((*p >= '0' && *p <= '9') || *p == '.'))
			return false;
	return true;
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

const struct lang *lang_for_shebang(const char *text, size_t len)
{
	if (!text || len < 2 || text[0] != '#' || text[1] != '!')
		return NULL;
	char line[SHEBANG_MAX];
	size_t ll = 0;
	for (size_t i = 2; i < len && text[i] != '\n' && text[i] != '\r' && ll + 1 < sizeof(line);
	     i++)
		line[ll++] = text[i];
	line[ll] = '\0';
	/* The kernel splits a #! line into the program and one argument;
	 * env -S splits that argument again. Words are all this needs. */
	char *save = NULL;
	const char *prog = strtok_r(line, " \t", &save);
	if (!prog)
		return NULL;
	prog = basename_of(prog);
	if (strcmp(prog, "env") == 0) {
		prog = NULL;
		for (char *w = strtok_r(NULL, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
			if (strcmp(w, "-u") == 0 || strcmp(w, "-C") == 0 ||
			    strcmp(w, "--unset") == 0 || strcmp(w, "--chdir") == 0) {
				strtok_r(NULL, " \t", &save); /* the option's argument */
				continue;
			}
			if (strncmp(w, "-S", 2) == 0 && w[2]) {
				prog = w + 2; /* "-Spython3": the rest is the command */
				break;
			}
			if (w[0] == '-' || strchr(w, '='))
				continue; /* an option or NAME=VALUE */
			prog = w;
			break;
		}
		if (!prog)
			return NULL;
		prog = basename_of(prog);
	}
	size_t n;
	const struct lang *t = table(&n);
	for (size_t i = 0; i < n; i++)
		for (const char *const *p = t[i].interpreters; *p; p++)
			if (interpreter_is(prog, *p))
				return &t[i];
	return NULL;
}

const struct lang *lang_for_file(const char *path, const char *text, size_t len)
{
	const struct lang *l = lang_for_path(path);
	return l ? l : lang_for_shebang(text, len);
}

/* snprintf at *off, never past size. */
__attribute__((format(printf, 4, 5))) static void append(char *buf, size_t size, size_t *off,
                                                         const char *fmt, ...);
static void append(char *buf, size_t size, size_t *off, const char *fmt, ...)
{
	if (*off >= size)
		return;
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(buf + *off, size - *off, fmt, ap);
	va_end(ap);
	if (w > 0)
		*off += (size_t)w;
}

const char *lang_names(char *buf, size_t size)
{
	size_t n, off = 0;
	const struct lang *t = table(&n);
	if (size)
		buf[0] = '\0';
	for (size_t i = 0; i < n; i++)
		append(buf, size, &off, "%s%s", i ? ", " : "", t[i].name);
	return buf;
}

const char *lang_unknown(const char *name, char *buf, size_t size)
{
	size_t n, off = 0;
	const struct lang *t = table(&n);
	if (size)
		buf[0] = '\0';
	/* The name comes from outside: its control characters are shown as
	 * escapes and a long one is cut, so the sentence is safe to print. */
	append(buf, size, &off, "unknown language '");
	const unsigned char *p = (const unsigned char *)(name ? name : "");
	for (size_t i = 0; p[i] && i < NAME_SHOWN_MAX; i++)
		if (p[i] < 0x20 || p[i] == 0x7f)
			append(buf, size, &off, "\\x%02x", p[i]);
		else
			append(buf, size, &off, "%c", p[i]);
	if (strlen((const char *)p) > NAME_SHOWN_MAX)
		append(buf, size, &off, "...");
	append(buf, size, &off, "' (kiln knows ");
	for (size_t i = 0; i < n; i++) {
		append(buf, size, &off, "%s%s", i ? ", " : "", t[i].name);
		for (const char *const *a = t[i].aliases; *a; a++)
			append(buf, size, &off, "%s%s", a == t[i].aliases ? " (" : ", ", *a);
		if (t[i].aliases[0])
			append(buf, size, &off, ")");
	}
	append(buf, size, &off, ")");
	return buf;
}

const char *lang_untold(const char *path, char *buf, size_t size)
{
	size_t n, off = 0;
	const struct lang *t = table(&n);
	if (size)
		buf[0] = '\0';
	/* Nothing from path is quoted: the caller shows the name itself. */
	append(buf, size, &off, "cannot tell its language: %s; use --lang (kiln knows ",
	       path ? "no extension kiln knows and no #! line" : "standard input has no #! line");
	for (size_t i = 0; i < n; i++) {
		append(buf, size, &off, "%s%s", i ? ", " : "", t[i].name);
		for (const char *const *e = t[i].extensions; *e; e++)
			append(buf, size, &off, "%s%s", e == t[i].extensions ? " (" : ", ", *e);
		if (t[i].extensions[0])
			append(buf, size, &off, ")");
	}
	append(buf, size, &off, ")");
	return buf;
}

/* --- the config's entries -------------------------------------------------------- */

static void registry_release(struct registry *r)
{
	for (size_t i = 0; i < r->nowned; i++)
		free(r->owned[i]);
	free(r->owned);
	free(r->langs);
	if (r->config)
		json_object_put(r->config);
	*r = (struct registry){0};
}

static void *own(struct registry *r, void *p)
{
	if (!p)
		return NULL;
	if (r->nowned == r->cowned) {
		size_t c = r->cowned ? r->cowned * 2 : 32;
		void **o = realloc(r->owned, c * sizeof(*o));
		if (!o) {
			free(p);
			return NULL;
		}
		r->owned = o;
		r->cowned = c;
	}
	r->owned[r->nowned++] = p;
	return p;
}

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t errsz, int r,
                                                      const char *fmt, ...);
static int fail(char *err, size_t errsz, int r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errsz, fmt, ap);
	va_end(ap);
	return r;
}

static bool valid_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > NAME_MAX_LEN)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' || *s == '+' || *s == '.'))
			return false;
	return true;
}

static bool valid_file_name(const char *f)
{
	return *f && !strchr(f, '/') && strcmp(f, ".") != 0 && strcmp(f, "..") != 0 &&
	       strlen(f) < 64;
}

enum list_kind { L_NAME, L_EXT, L_PROGRAM, L_ARGV, L_PATH };

static bool list_item_ok(enum list_kind kind, const char *s)
{
	switch (kind) {
	case L_NAME:
		return valid_name(s);
	case L_EXT:
		return s[0] == '.' && valid_name(s + 1);
	case L_PROGRAM:
		return valid_name(s);
	case L_ARGV:
		return true;
	case L_PATH:
		return s[0] == '/';
	}
	return false;
}

static const char *list_what(enum list_kind kind)
{
	switch (kind) {
	case L_NAME:
		return "names (letters, digits, _ - + .)";
	case L_EXT:
		return "extensions such as \".rb\"";
	case L_PROGRAM:
		return "program names such as \"ruby\"";
	case L_ARGV:
		return "strings";
	case L_PATH:
		return "absolute paths";
	}
	return "strings";
}

/* member (an array of strings, or absent) after the NULL-terminated list
 * base, as a new NULL-terminated array in *ret. */
static int read_list(struct registry *reg, json_object *entry, const char *key, const char *member,
                     enum list_kind kind, const char *const *base, size_t min, size_t max,
                     const char *const **ret, char *err, size_t errsz)
{
	json_object *arr = NULL;
	int r = json_get_array(entry, member, &arr);
	if (r == -EINVAL || (r == -ENOENT && min > 0))
		return fail(err, errsz, -EINVAL, "sandbox.languages.%s.%s must be an array of %s",
		            key, member, list_what(kind));
	if (r == -ENOENT) {
		*ret = base;
		return 0;
	}
	size_t nb = 0;
	while (base[nb])
		nb++;
	size_t na = json_object_array_length(arr);
	if (na < min || na > max)
		return fail(err, errsz, -EINVAL,
		            "sandbox.languages.%s.%s must have %zu to %zu entries", key, member,
		            min, max);
	const char **out = own(reg, calloc(nb + na + 1, sizeof(*out)));
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < nb; i++)
		out[i] = base[i];
	for (size_t i = 0; i < na; i++) {
		json_object *v = json_object_array_get_idx(arr, i);
		if (!json_object_is_type(v, json_type_string) ||
		    !list_item_ok(kind, json_object_get_string(v)))
			return fail(err, errsz, -EINVAL,
			            "sandbox.languages.%s.%s must be an array of %s", key, member,
			            list_what(kind));
		out[nb + i] = json_object_get_string(v);
	}
	*ret = out;
	return 0;
}

static int read_env(struct registry *reg, json_object *entry, const char *key,
                    const char *const **ret, char *err, size_t errsz)
{
	json_object *env = NULL;
	int r = json_get_object(entry, "env", &env);
	if (r == -EINVAL)
		return fail(err, errsz, -EINVAL,
		            "sandbox.languages.%s.env must be an object of strings", key);
	if (r == -ENOENT) {
		*ret = none;
		return 0;
	}
	size_t n = (size_t)json_object_object_length(env), i = 0;
	if (n > LIST_MAX)
		return fail(err, errsz, -EINVAL,
		            "sandbox.languages.%s.env has more than %d variables", key, LIST_MAX);
	const char **out = own(reg, calloc(n + 1, sizeof(*out)));
	if (!out)
		return -ENOMEM;
	json_object_object_foreach(env, name, v)
	{
		if (!json_object_is_type(v, json_type_string))
			return fail(err, errsz, -EINVAL,
			            "sandbox.languages.%s.env.%s must be a string", key, name);
		if (!env_name_valid(name))
			return fail(err, errsz, -EINVAL,
			            "sandbox.languages.%s.env: '%s' is not a valid variable name",
			            key, name);
		char *kv = NULL;
		if (asprintf(&kv, "%s=%s", name, json_object_get_string(v)) < 0 || !own(reg, kv))
			return -ENOMEM;
		out[i++] = kv;
	}
	*ret = out;
	return 0;
}

/* One "sandbox.languages.KEY" entry into l (a copy of the built-in it
 * changes, or zeroes for a new language). */
static int read_entry(struct registry *reg, const char *key, json_object *entry, struct lang *l,
                      char *err, size_t errsz)
{
	if (!json_object_is_type(entry, json_type_object))
		return fail(err, errsz, -EINVAL,
		            "sandbox.languages.%s must be an object with \"argv\" and \"file\"",
		            key);
	if (!l->builtin) {
		l->name = key;
		l->aliases = l->extensions = l->interpreters = none;
		l->validator = NULL;
	}
	const char *program = l->argv ? l->argv[0] : NULL;
	int r;
	if ((r = read_list(reg, entry, key, "argv", L_ARGV, none, 1, ARGV_MAX, &l->argv, err,
	                   errsz)) < 0 ||
	    (r = read_list(reg, entry, key, "aliases", L_NAME, l->aliases, 0, LIST_MAX, &l->aliases,
	                   err, errsz)) < 0 ||
	    (r = read_list(reg, entry, key, "extensions", L_EXT, l->extensions, 0, LIST_MAX,
	                   &l->extensions, err, errsz)) < 0 ||
	    (r = read_list(reg, entry, key, "interpreters", L_PROGRAM, l->interpreters, 0, LIST_MAX,
	                   &l->interpreters, err, errsz)) < 0 ||
	    (r = read_list(reg, entry, key, "binds", L_PATH, none, 0, LIST_MAX, &l->binds, err,
	                   errsz)) < 0 ||
	    (r = read_env(reg, entry, key, &l->env, err, errsz)) < 0)
		return r;
	if (!program || !l->argv[0] || strcmp(program, l->argv[0]) != 0)
		l->address_space_limit = false;
	const char *file = NULL;
	if (json_get_string(entry, "file", &file) < 0 || !valid_file_name(file))
		return fail(
		    err, errsz, -EINVAL,
		    "sandbox.languages.%s.file must be a file name (no '/', under 64 bytes)", key);
	l->file = file;
	const char *val = NULL;
	r = json_get_string(entry, "validator", &val);
	if (r == 0) {
		const struct lang *b = find_in(builtins, ARRAY_SIZE(builtins), val);
		if (!b)
			return fail(
			    err, errsz, -EINVAL,
			    "sandbox.languages.%s.validator must name a language the validator "
			    "checks (python, bash, javascript)",
			    key);
		l->validator = b->validator;
	} else if (r == -EINVAL) {
		return fail(err, errsz, -EINVAL, "sandbox.languages.%s.validator must be a string",
		            key);
	}
	return 0;
}

/* No two languages share a name or an alias. */
static int check_unique(const struct lang *t, size_t n, char *err, size_t errsz)
{
	for (size_t i = 0; i < n; i++) {
		const char *names[LIST_MAX * 2 + 2];
		size_t nn = 0;
		names[nn++] = t[i].name;
		for (const char *const *a = t[i].aliases; *a && nn < ARRAY_SIZE(names); a++)
			names[nn++] = *a;
		for (size_t k = 0; k < nn; k++)
			for (size_t j = 0; j < n; j++) {
				if (j == i)
					continue;
				if (names_lang(&t[j], names[k]))
					return fail(err, errsz, -EINVAL,
					            "sandbox.languages: '%s' names both %s and %s",
					            names[k], t[i].name, t[j].name);
			}
	}
	return 0;
}

int lang_configure(json_object *languages, char *err, size_t errsz)
{
	if (!languages) {
		registry_release(&current);
		return 0;
	}
	if (!json_object_is_type(languages, json_type_object))
		return fail(err, errsz, -EINVAL,
		            "sandbox.languages must be an object (language name -> {argv, file})");
	struct registry reg = {0};
	int r = -ENOMEM;
	size_t cap = ARRAY_SIZE(builtins) + (size_t)json_object_object_length(languages);
	if (!(reg.config = json_copy(languages)) || !(reg.langs = calloc(cap, sizeof(*reg.langs))))
		goto out;
	for (size_t i = 0; i < ARRAY_SIZE(builtins); i++)
		reg.langs[reg.n++] = builtins[i];
	const char *changed_by[ARRAY_SIZE(builtins)] = {NULL};
	json_object_object_foreach(reg.config, key, entry)
	{
		if (!valid_name(key)) {
			r = fail(err, errsz, -EINVAL,
			         "sandbox.languages: '%s' is not a language name (letters, digits, "
			         "_ - + ., at most %d)",
			         key, NAME_MAX_LEN);
			goto out;
		}
		/* An entry named after a built-in language (or an alias of
		 * one) changes that language. */
		struct lang *l = (struct lang *)find_in(reg.langs, ARRAY_SIZE(builtins), key);
		if (!l) {
			l = &reg.langs[reg.n++];
			*l = (struct lang){0};
		} else if (changed_by[l - reg.langs]) {
			r = fail(err, errsz, -EINVAL,
			         "sandbox.languages.%s and sandbox.languages.%s both change %s",
			         changed_by[l - reg.langs], key, l->name);
			goto out;
		} else {
			changed_by[l - reg.langs] = key;
		}
		if ((r = read_entry(&reg, key, entry, l, err, errsz)) < 0)
			goto out;
	}
	if ((r = check_unique(reg.langs, reg.n, err, errsz)) < 0)
		goto out;
	registry_release(&current);
	current = reg;
	return 0;
out:
	if (r == -ENOMEM && errsz)
		snprintf(err, errsz, "out of memory reading sandbox.languages");
	registry_release(&reg);
	return r;
}
