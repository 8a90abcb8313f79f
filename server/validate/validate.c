/* validate.c: the validator's entry points: the language table lookup,
 * the per-check document (its alias table), the real parsers' verdict on
 * syntax, and the sorted report with its verdict. Parsing details live in
 * syntax.c, the policy engine in rules.c, text checks in text.c (those
 * three below this file), the findings they make in findings.c and the
 * rule files they read in rule_file.c (below them), language knowledge in
 * lang_*.c, the syntax worker in pyworker.c, JSON in report.c, and the
 * validator's thread in async.c, above this file. */
#include "validate/validate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/json.h"
#include "core/lang.h"
#include "sandbox/sandbox.h"
#include "core/log.h"
#include "core/util.h"
#include "validate/internal.h"
#include "validate/rules_embed.h"

#define DEFAULT_PYTHON        "/usr/bin/python3"
#define DEFAULT_BASH          "/bin/bash"
#define DEFAULT_NODE          "/usr/bin/node"
#define DEFAULT_PY_TIMEOUT_MS 2000
/* tree-sitter gives up on one parse after this much of the checking
 * thread's CPU time (pathological input): 2 s, and 2 s more per MiB,
 * since a 4 MiB snippet takes about a second (several under the
 * sanitizers). CPU time, not the wall clock's: see val_parse(). */
#define PARSE_BUDGET_US(len) (2000000 + (uint64_t)(len)*2)
/* Code up to this size goes to the real parser before the parse. */
#define SEND_AHEAD_MAX (64 * 1024)

struct validator {
	TSParser *parser;
	struct val_ruleset *rulesets[8]; /* indexed like val_langs; NULL until needed */
	char *rules_dir;                 /* NULL: the rules compiled in */
	json_object *profiles;           /* name -> {category|rule id -> severity} */
	char *default_profile;
	char *workspace;
	struct val_pyworker *py;     /* NULL: tree-sitter alone */
	char *bash, *node;           /* the real parsers' paths; NULL: off */
	struct val_text *text;       /* rules/text.json */
	json_object *config;         /* a copy, for the thread's own validator */
	struct val_async_slot async; /* the thread, set up by async.c */
	uint64_t generation;         /* val_generation() */
	bool ts_only;                /* "matcher": "tree-sitter" */
	struct val_flat flat;        /* each check's tree, read once (tree.c) */
};

const char *val_verdict_name(enum val_verdict v)
{
	switch (v) {
	case VAL_ALLOW:
		return "allow";
	case VAL_WARN:
		return "warn";
	case VAL_DENY:
		return "deny";
	}
	return "deny";
}

const struct val_lang *val_lang_find(const char *name)
{
	const struct lang *l = lang_find(name);
	for (size_t i = 0; l && l->validator && i < val_langs_count; i++)
		if (strcmp(val_langs[i]->name, l->validator) == 0)
			return val_langs[i];
	return NULL;
}

/* Profiles: the embedded profiles.json, with the user's config laid over
 * it key by key. Every severity is checked here, once. */
static int load_profiles(struct validator *v, json_object *config)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = val_rule_file_read(NULL, "profiles.json", &data, &len);
	if (r < 0)
		return r;
	json_object *root = json_tokener_parse(data);
	json_object *profiles = json_get(root, "profiles");
	const char *def = NULL;
	if (!profiles || !json_object_is_type(profiles, json_type_object) ||
	    json_get_string(root, "default", &def) < 0) {
		json_object_put(root);
		log_error("validator: the embedded profiles.json is malformed");
		return -EINVAL;
	}
	v->profiles = json_object_get(profiles);
	v->default_profile = strdup(def);
	json_object_put(root);
	if (!v->default_profile)
		return -ENOMEM;

	json_object *user = json_get(config, "profiles");
	if (user) {
		if (!json_object_is_type(user, json_type_object)) {
			log_error("validator: config validator.profiles must be an object");
			return -EINVAL;
		}
		json_object_object_foreach(user, name, map)
		{
			if (!json_object_is_type(map, json_type_object)) {
				log_error(
				    "validator: config validator.profiles.%s must be an object",
				    name);
				return -EINVAL;
			}
			json_object *base = json_get(v->profiles, name);
			if (!base) {
				base = json_object_new_object();
				json_object_object_add(v->profiles, name, base);
			}
			json_object_object_foreach(map, key, val)
			    json_object_object_add(base, key, json_object_get(val));
		}
	}
	json_object_object_foreach(v->profiles, pname, pmap)
	{
		json_object_object_foreach(pmap, key, val)
		{
			enum val_severity sev;
			if (!json_object_is_type(val, json_type_string) ||
			    val_severity_parse(json_object_get_string(val), &sev) < 0) {
				log_error("validator: profile '%s': '%s' must be error, warning, "
				          "information, hint or off",
				          pname, key);
				return -EINVAL;
			}
		}
	}
	const char *chosen = NULL;
	if (json_get_string(config, "profile", &chosen) == 0) {
		if (!json_get(v->profiles, chosen)) {
			log_error("validator: config names unknown profile '%s'", chosen);
			return -EINVAL;
		}
		free(v->default_profile);
		v->default_profile = strdup(chosen);
		if (!v->default_profile)
			return -ENOMEM;
	}
	return 0;
}

/* "bash": false turns the parser off; a string names it (absolute). */
static int parser_path(json_object *config, const char *key, const char *def, char **ret)
{
	bool on = true;
	const char *path = def;
	json_get_bool(config, key, &on);
	json_get_string(config, key, &path);
	if (!on) {
		*ret = NULL;
		return 0;
	}
	if (path[0] != '/') {
		log_error("validator: config validator.%s must be an absolute path or false", key);
		return -EINVAL;
	}
	if (access(path, X_OK) < 0) {
		/* node is optional: tree-sitter alone judges that syntax. */
		log_debug("validator: %s is not installed: tree-sitter alone checks that syntax",
		          path);
		*ret = NULL;
		return 0;
	}
	*ret = strdup(path);
	return *ret ? 0 : -ENOMEM;
}

int val_new(json_object *config, struct validator **ret_val)
{
	struct validator *v = calloc(1, sizeof(*v));
	char detail[512] = "";
	int r = -ENOMEM;
	if (!v)
		return -ENOMEM;
	if (config && !json_object_is_type(config, json_type_object)) {
		log_error("validator: config section \"validator\" must be an object");
		r = -EINVAL;
		goto fail;
	}
	static uint64_t generations;
	v->generation = __atomic_add_fetch(&generations, 1, __ATOMIC_RELAXED);
	val_ts_alloc_install();
	v->parser = ts_parser_new();
	if (!v->parser)
		goto fail;
	/* Which matches the rule patterns: kiln's own walk (match.c) or,
	 * for comparing the two, tree-sitter's query cursor alone. */
	const char *matcher = "kiln";
	json_get_string(config, "matcher", &matcher);
	if (strcmp(matcher, "kiln") != 0 && strcmp(matcher, "tree-sitter") != 0) {
		log_error("validator: matcher must be \"kiln\" or \"tree-sitter\"");
		r = -EINVAL;
		goto fail;
	}
	v->ts_only = strcmp(matcher, "tree-sitter") == 0;
	const char *rules_dir = NULL;
	json_get_string(config, "rulesDir", &rules_dir);
	if (rules_dir && !(v->rules_dir = strdup(rules_dir)))
		goto fail;
	/* Compiling the queries takes tens of milliseconds a language, so the
	 * built-in rules compile on first use (or in val_prepare) to keep
	 * start-up instant. A user's own rule files are read now, so that a
	 * mistake in them is reported when the config is applied. */
	for (size_t i = 0; rules_dir && i < val_langs_count; i++) {
		r = val_ruleset_load(val_langs[i], rules_dir, v->ts_only, &v->rulesets[i], detail,
		                     sizeof(detail));
		if (r < 0) {
			log_error("validator: %s", detail);
			if (r != -ENOMEM)
				r = -EINVAL;
			goto fail;
		}
	}
	r = load_profiles(v, config);
	if (r < 0)
		goto fail;
	r = val_text_load(rules_dir, &v->text, detail, sizeof(detail));
	if (r < 0) {
		log_error("validator: %s", detail);
		goto fail;
	}
	if (config && json_object_deep_copy(config, &v->config, NULL) < 0) {
		r = -ENOMEM;
		goto fail;
	}
	/* Code runs in the sandbox, where the workspace is mounted at
	 * SBX_WORKSPACE: paths under it are inside unless configured. */
	const char *ws = SBX_WORKSPACE;
	if (json_get_string(config, "workspace", &ws) < 0 || ws[0] == '/') {
		v->workspace = strdup(ws);
		if (!v->workspace) {
			r = -ENOMEM;
			goto fail;
		}
	}
	/* "python": false turns CPython off; a string names the binary. */
	bool use_py = true;
	const char *python = DEFAULT_PYTHON;
	int64_t timeout = DEFAULT_PY_TIMEOUT_MS;
	json_get_bool(config, "python", &use_py);
	json_get_string(config, "python", &python);
	json_get_int64(config, "pythonTimeoutMs", &timeout);
	if (timeout < 10 || timeout > 60000) {
		log_error("validator: pythonTimeoutMs must be between 10 and 60000");
		r = -EINVAL;
		goto fail;
	}
	if (use_py) {
		v->py = val_pyworker_new(python, (int)timeout);
		if (!v->py) {
			r = -ENOMEM;
			goto fail;
		}
	}
	/* bash -n and node --check run in the same worker: without it (or
	 * with "bash": false) tree-sitter alone judges their syntax. */
	if ((r = parser_path(config, "bash", DEFAULT_BASH, &v->bash)) < 0 ||
	    (r = parser_path(config, "node", DEFAULT_NODE, &v->node)) < 0)
		goto fail;
	*ret_val = v;
	return 0;
fail:
	val_free(v);
	return r;
}

void val_free(struct validator *v)
{
	if (!v)
		return;
	/* The thread first: it may be using everything below. */
	for (size_t i = 0; i < VAL_LANES; i++)
		if (v->async.lane[i])
			v->async.free(v->async.lane[i]);
	val_pyworker_free(v->py);
	val_text_free(v->text);
	json_object_put(v->config);
	free(v->bash);
	free(v->node);
	for (size_t i = 0; i < ARRAY_SIZE(v->rulesets); i++)
		val_ruleset_free(v->rulesets[i]);
	json_object_put(v->profiles);
	free(v->rules_dir);
	free(v->default_profile);
	free(v->workspace);
	if (v->parser)
		ts_parser_delete(v->parser);
	val_flat_free(&v->flat);
	free(v);
}

/* The ruleset of language li, compiled now if it was not yet. */
static int ruleset_for(struct validator *v, size_t li, char *detail, size_t dsz)
{
	if (v->rulesets[li])
		return 0;
	return val_ruleset_load(val_langs[li], v->rules_dir, v->ts_only, &v->rulesets[li], detail,
	                        dsz);
}

int val_prepare(struct validator *v)
{
	/* Python only (val_langs[0]): its compiled rules and the grammar
	 * tables the compile touches cost about 1.7 MiB; bash's and
	 * JavaScript's would add about 2.5 MiB to every idle server for
	 * checks most sessions never ask for. They compile on first use. */
	char detail[256];
	if (v->rulesets[0])
		return 0;
	int r = ruleset_for(v, 0, detail, sizeof(detail));
	if (r < 0)
		log_error("validator: %s", detail);
	return r < 0 ? r : 0;
}

int val_python_available(struct validator *v)
{
	if (!v->py)
		return 0;
	struct val_pyerror e;
	return val_pyworker_check(v->py, VAL_PARSE_PYTHON, NULL, "", 0, NULL, &e) >= 0;
}

uint64_t val_generation(const struct validator *v)
{
	return v->generation;
}

json_object *val_config(const struct validator *v)
{
	return v->config;
}

struct val_async_slot *val_async_slot(struct validator *v)
{
	return &v->async;
}

/* --- the document ------------------------------------------------------- */

static void doc_release(struct val_doc *d)
{
	for (size_t i = 0; i < d->naliases; i++) {
		free(d->aliases[i].name);
		free(d->aliases[i].target);
	}
	free(d->aliases);
}

/* --- the check ---------------------------------------------------------- */

/* Byte offset of (line, byte column) in the document, clamped to the
 * line's content (LSP line breaks, as the report's line index has them). */
static uint32_t line_byte(struct val_doc *d, uint32_t line, int32_t col)
{
	const struct val_report *r = d->out;
	if (line >= r->nlines)
		return (uint32_t)d->len;
	uint32_t s = r->line_starts[line];
	uint32_t e = s;
	while (e < d->len && d->code[e] != '\n' && d->code[e] != '\r')
		e++;
	if (col < 0)
		col = 0;
	return s + (uint32_t)col > e ? e : s + (uint32_t)col;
}

/* One character at off, or nothing at a line's end. */
static uint32_t one_char(struct val_doc *d, uint32_t off)
{
	if (off < d->len && d->code[off] != '\n' && d->code[off] != '\r')
		off += (uint32_t)utf8_seq_len((const unsigned char *)d->code + off, d->len - off);
	return off;
}

/* The real parser's verdict on the syntax, as at most one diagnostic.
 * Returns 1 when it answered (an error added, or none), 0 when it could
 * not be asked. root: tree-sitter's tree, to place an error the parser
 * gives no column for. */
/* Which real parser checks lang's syntax, if one can: false when none. */
static bool real_parser(struct validator *v, const struct val_lang *lang, enum val_parser *ret_p,
                        const char **ret_argv0)
{
	enum val_parser p;
	const char *argv0 = NULL;
	if (strcmp(lang->name, "python") == 0) {
		p = VAL_PARSE_PYTHON;
	} else if (strcmp(lang->name, "bash") == 0) {
		p = VAL_PARSE_BASH;
		argv0 = v->bash;
	} else if (strcmp(lang->name, "javascript") == 0) {
		p = VAL_PARSE_NODE;
		argv0 = v->node;
	} else {
		return false;
	}
	if (!v->py || (p != VAL_PARSE_PYTHON && !argv0))
		return false;
	*ret_p = p;
	*ret_argv0 = argv0;
	return true;
}

static int real_syntax(struct validator *v, struct val_doc *d, TSNode root)
{
	enum val_parser p;
	const char *argv0;
	if (!real_parser(v, d->lang, &p, &argv0))
		return 0;
	struct val_pyerror e;
	int r = val_pyworker_check(v->py, p, argv0, d->code, d->len, d->cancel, &e);
	if (r == -ECANCELED)
		return r;
	if (r <= 0)
		return r == 0;
	uint32_t s, end;
	if (e.col >= 0) {
		s = line_byte(d, e.line, e.col);
		end = e.end_col >= 0 ? line_byte(d, e.end_line, e.end_col) : s;
	} else if (!val_syntax_first(d, root, &s, &end)) {
		/* Nothing better: the start of the line the parser blames. */
		s = end = line_byte(d, e.line, 0);
	} else if (e.eof) {
		/* An unclosed construct: tree-sitter knows where it opened. */
	} else if (d->out->nlines > e.line &&
	           (s < line_byte(d, e.line, 0) || s > line_byte(d, e.line, INT32_MAX))) {
		/* tree-sitter blames another line than the parser: trust the
		 * parser's line. */
		s = end = line_byte(d, e.line, 0);
	}
	if (end <= s)
		end = one_char(d, s);
	char msg[300];
	snprintf(msg, sizeof(msg), "%s", e.msg);
	return val_add(d, s, end, VAL_SEV_ERROR, "syntax", msg, NULL) < 0 ? -ENOMEM : 1;
}

/* By start, then end, then rule id: a total order, so equal inputs give
 * byte-identical answers. Byte order is position order in any encoding. */
static int by_position(const void *a, const void *b)
{
	const struct val_diag *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	int c = strcmp(x->code ? x->code : "", y->code ? y->code : "");
	return c ? c : strcmp(x->message, y->message);
}

static size_t first_invalid_utf8(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		/* ASCII, most code, eight bytes at a time. */
		uint64_t w;
		if (i + sizeof(w) <= n) {
			memcpy(&w, s + i, sizeof(w));
			if (!(w & 0x8080808080808080ull)) {
				i += sizeof(w);
				continue;
			}
		}
		size_t k = utf8_seq_len((const unsigned char *)s + i, n - i);
		if (k == 1 && (unsigned char)s[i] >= 0x80)
			return i;
		i += k;
	}
	return n;
}

/* The hidden-text scan and the language's rules. */
static int check_rules(struct validator *v, struct val_doc *d, size_t li, TSNode root,
                       json_object *pmap, char *detail, size_t dsz)
{
	int r;
	if ((r = val_text_scan(d, v->text, root, pmap)) < 0)
		return r;
	if (val_cancelled(d))
		return -ECANCELED;
	r = ruleset_for(v, li, detail, dsz);
	if (r >= 0)
		r = val_rules_run(d, v->rulesets[li], root, pmap);
	if (r < 0 && r != -ECANCELED)
		snprintf(detail, dsz, "the rules could not run: %s", strerror(-r));
	return r;
}

/* Everything between the parse and the verdict; the tree is the caller's.
 * The rules run first: the real parser, asked before the parse
 * (val_check_report), answers meanwhile. The order of the diagnostics
 * does not matter: they are sorted at the end. */
static int check_tree(struct validator *v, struct val_doc *d, size_t li, TSNode root,
                      json_object *pmap, char *detail, size_t dsz)
{
	int r = check_rules(v, d, li, root, pmap, detail, dsz);
	if (r < 0) {
		if (v->py)
			val_pyworker_drop(v->py);
		return r;
	}
	const struct val_lang *lang = d->lang;
	bool ts_broken = ts_node_has_error(root);
	bool python = strcmp(lang->name, "python") == 0;
	int real = 0;
	size_t before = d->out->ndiags;
	size_t bad = python ? first_invalid_utf8(d->code, d->len) : d->len;
	if (bad < d->len) {
		/* Python source is UTF-8 by definition; say where it is not,
		 * which CPython's decoder cannot (it counts in its own units). */
		r = val_add(d, (uint32_t)bad, (uint32_t)bad + 1, VAL_SEV_ERROR, "syntax",
		            "this byte is not valid UTF-8, which Python source must be", NULL);
		if (r < 0)
			return r;
		real = 1;
	} else {
		real = real_syntax(v, d, root);
		if (real < 0)
			return real;
	}
	if (val_cancelled(d))
		return -ECANCELED;
	size_t nsyntax = d->out->ndiags - before;
	if (!real && ts_broken) {
		val_syntax_errors(d, root, VAL_SEV_ERROR, "syntax",
		                  !python ? NULL
		                  : v->py
		                      ? " (checked by tree-sitter alone: python3 did not answer)"
		                      : " (checked by tree-sitter alone: python3 is off)");
	} else if (real && nsyntax == 0 && ts_broken) {
		/* The real parser accepts what tree-sitter could not read: the
		 * rules cannot see inside those regions, so never pass them
		 * quietly. */
		static const struct val_rule unchecked = {.id = "kiln-unchecked",
		                                          .category = "unchecked"};
		enum val_severity sev = val_severity_for(pmap, &unchecked);
		char suffix[160];
		snprintf(suffix, sizeof(suffix),
		         " (%s accepts it, but kiln's parser cannot read it, so the rules could "
		         "not check it)",
		         python                            ? "CPython"
		         : strcmp(lang->name, "bash") == 0 ? "bash"
		                                           : "node");
		if (sev != VAL_SEV_OFF)
			val_syntax_errors(d, root, sev, "kiln-unchecked", suffix);
	}
	if (python && !real) {
		char msg[1024];
		snprintf(msg, sizeof(msg),
		         "Python syntax was checked by tree-sitter alone, because CPython was "
		         "not available: %s",
		         v->py ? val_pyworker_why(v->py) : "validator.python is false");
		if ((r = val_add(d, 0, 0, VAL_SEV_HINT, "kiln-no-cpython", msg, NULL)) < 0)
			return r;
	}
	return 0;
}

/* Debian's tree-sitter (0.20.7) corrupts its heap on a tree that holds
 * 65535 or more comments in a row (found here: "#c\n" * 65535 crashes
 * ts_tree_delete, in every grammar; JavaScript's "<!--" comments too). So the longest run of
 * comments is counted first, over-approximately (a '#' or '//' inside a string may start a run
 * here, never end one early), and code past the limit is refused instead of parsed. */
#define MAX_COMMENT_RUN 60000

static size_t longest_comment_run(const char *c, size_t len, bool slashes)
{
	size_t run = 0, best = 0;
	for (size_t i = 0; i < len;) {
		char ch = c[i];
		if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f') {
			i++;
			continue;
		}
		bool line = slashes
		                ? (ch == '/' && i + 1 < len && c[i + 1] == '/') ||
		                      (ch == '<' && i + 3 < len && memcmp(c + i, "<!--", 4) == 0) ||
		                      (ch == '-' && i + 2 < len && memcmp(c + i, "-->", 3) == 0)
		                : ch == '#';
		bool block = slashes && ch == '/' && i + 1 < len && c[i + 1] == '*';
		if (line) {
			const char *nl = memchr(c + i, '\n', len - i);
			i = nl ? (size_t)(nl - c) + 1 : len;
		} else if (block) {
			const char *e = memmem(c + i + 2, len - i - 2, "*/", 2);
			i = e ? (size_t)(e - c) + 2 : len;
		} else {
			run = 0;
			i++;
			continue;
		}
		if (++run > best)
			best = run;
	}
	return best;
}

/* Python and JavaScript end a line at a lone \r, as LSP does, but their
 * tree-sitter grammars do not: "x = 1\r# c\reval(x)" would hide the eval
 * in a comment from the rules while CPython runs it. Such code is checked
 * as the language reads it: a copy with each lone \r made \n, the same
 * length, so every offset is unchanged. bash, like its grammar, does not
 * break lines there (text.json's KILN-LONE-CR speaks of that). */
static bool lone_cr_is_newline(const struct val_lang *lang)
{
	return strcmp(lang->name, "python") == 0 || strcmp(lang->name, "javascript") == 0;
}

static int normalize_cr(const char *code, size_t len, char **ret)
{
	const char *cr = memchr(code, '\r', len);
	while (cr && (size_t)(cr - code) + 1 < len && cr[1] == '\n')
		cr = memchr(cr + 1, '\r', len - (size_t)(cr + 1 - code));
	if (!cr)
		return 0;
	char *c = malloc(len + 1);
	if (!c)
		return -ENOMEM;
	memcpy(c, code, len);
	c[len] = '\0';
	for (size_t i = (size_t)(cr - code); i < len; i++)
		if (c[i] == '\r' && (i + 1 >= len || c[i + 1] != '\n'))
			c[i] = '\n';
	*ret = c;
	return 0;
}

int val_check_report(struct validator *v, const char *language, const char *code, size_t len,
                     const char *profile, const volatile size_t *cancel, struct val_report *ret,
                     char *detail, size_t dsz)
{
	const struct val_lang *lang = language ? val_lang_find(language) : NULL;
	if (!lang) {
		if (language && lang_find(language))
			snprintf(
			    detail, dsz,
			    "the validator cannot check %s code (sandbox.languages.%s names no "
			    "\"validator\")",
			    lang_find(language)->name, lang_find(language)->name);
		else
			lang_unknown(language ? language : "(none)", detail, dsz);
		return -EINVAL;
	}
	const char *pname = profile ? profile : v->default_profile;
	json_object *pmap = json_get(v->profiles, pname);
	if (!pmap) {
		snprintf(detail, dsz, "unknown profile '%s' (strict, standard, relaxed, off)",
		         pname);
		return -EINVAL;
	}
	if (len > VAL_MAX_CODE) {
		snprintf(detail, dsz, "code of %zu bytes is over the validator's limit of %u", len,
		         VAL_MAX_CODE);
		return -EFBIG;
	}
	size_t li = 0;
	while (val_langs[li] != lang)
		li++;
	struct val_report rep = {0};
	struct val_doc d = {
	    .code = code,
	    .len = len,
	    .lang = lang,
	    .workspace = v->workspace,
	    .cancel = cancel,
	    .out = &rep,
	    .flat = &v->flat,
	};
	int r = pos_line_starts(code, len, &rep.line_starts, &rep.nlines);
	if (r < 0)
		return r;
	_cleanup_free_ char *norm = NULL;
	if (lone_cr_is_newline(lang) && (r = normalize_cr(code, len, &norm)) < 0) {
		val_report_release(&rep);
		return r;
	}
	if (norm)
		d.code = code = norm;
	if (longest_comment_run(code, len, strcmp(lang->name, "javascript") == 0) >=
	    MAX_COMMENT_RUN) {
		r = val_add(&d, 0, 0, VAL_SEV_ERROR, "syntax",
		            "this code has 60000 or more comments in a row, more than kiln's "
		            "parser can hold: remove some",
		            NULL);
		goto judge;
	}
	/* The real parser starts on the code now and answers while
	 * tree-sitter parses and the rules run (check_tree reads it). Only
	 * for small code, where the wait is what the person feels: on big
	 * code the two would share the CPU, and the worker's answer, timed on
	 * the wall clock from the send, could run out of time on a busy
	 * machine while tree-sitter parses. Not for code that is not UTF-8:
	 * Python is refused without asking. */
	enum val_parser rp;
	const char *rargv0;
	if (len <= SEND_AHEAD_MAX && real_parser(v, lang, &rp, &rargv0) &&
	    (strcmp(lang->name, "python") != 0 || first_invalid_utf8(code, len) == len))
		val_pyworker_send(v->py, rp, rargv0, code, len, cancel);
	ts_parser_set_language(v->parser, val_ts_language(lang));
	TSTree *tree = val_parse(v->parser, &d, PARSE_BUDGET_US(len));
	if (!tree) {
		if (v->py)
			val_pyworker_drop(v->py);
		ts_parser_reset(v->parser);
		if (val_cancelled(&d)) {
			r = -ECANCELED;
			goto out;
		}
		/* The parse timed out: nothing could be checked. */
		r = val_add(&d, 0, 0, VAL_SEV_ERROR, "syntax",
		            "this code is too complex for kiln to check", NULL);
	} else {
		r = check_tree(v, &d, li, ts_tree_root_node(tree), pmap, detail, dsz);
		ts_tree_delete(tree);
	}
judge:
	if (r == -ECANCELED || (r >= 0 && val_cancelled(&d))) {
		r = -ECANCELED;
		snprintf(detail, dsz, "the check was cancelled");
	}
	if (r < 0)
		goto out;
	/* Editors and people read diagnostics top to bottom. */
	if (rep.ndiags > 1)
		qsort(rep.diags, rep.ndiags, sizeof(*rep.diags), by_position);
	rep.verdict = VAL_ALLOW;
	for (size_t i = 0; i < rep.ndiags; i++) {
		if (rep.diags[i].severity == VAL_SEV_ERROR)
			rep.verdict = VAL_DENY;
		else if (rep.diags[i].severity == VAL_SEV_WARNING && rep.verdict == VAL_ALLOW)
			rep.verdict = VAL_WARN;
	}
	*ret = rep;
	rep = (struct val_report){0};
out:
	val_flat_trim(&v->flat);
	doc_release(&d);
	val_report_release(&rep);
	return r;
}
