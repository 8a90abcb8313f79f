/* validate.c: the validator's entry points: the language table lookup,
 * the per-check document (line index, alias table), diagnostics in LSP's
 * shape, and the verdict. Parsing details live in syntax.c, the policy
 * engine in rules.c, language knowledge in lang_*.c. */
#include "validate/validate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/json.h"
#include "core/lang.h"
#include "sandbox/sandbox.h"
#include "core/log.h"
#include "core/util.h"
#include "validate/internal.h"
#include "validate/rules_embed.h"

#define DEFAULT_PYTHON        "/usr/bin/python3"
#define DEFAULT_PY_TIMEOUT_MS 2000
/* tree-sitter gives up on one parse after this long (pathological input). */
#define PARSE_TIMEOUT_US 2000000

struct validator {
	TSParser *parser;
	struct val_ruleset *rulesets[8]; /* indexed like val_langs; NULL until needed */
	char *rules_dir;                 /* NULL: the rules compiled in */
	json_object *profiles;           /* name -> {category|rule id -> severity} */
	char *default_profile;
	char *workspace;
	struct val_pyworker *py; /* NULL: tree-sitter alone */
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

int val_severity_parse(const char *s, enum val_severity *ret)
{
	static const struct {
		const char *name;
		enum val_severity sev;
	} names[] = {
	    {"off", VAL_SEV_OFF},          {"error", VAL_SEV_ERROR}, {"warning", VAL_SEV_WARNING},
	    {"information", VAL_SEV_INFO}, {"info", VAL_SEV_INFO},   {"hint", VAL_SEV_HINT},
	};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (strcmp(names[i].name, s) == 0) {
			*ret = names[i].sev;
			return 0;
		}
	return -EINVAL;
}

enum val_severity val_severity_for(json_object *profile, const struct val_rule *r)
{
	enum val_severity sev;
	const char *s = NULL;
	/* A rule id names one rule and wins over its category. */
	if (json_get_string(profile, r->id, &s) < 0 &&
	    json_get_string(profile, r->category, &s) < 0)
		return VAL_SEV_OFF;
	if (val_severity_parse(s, &sev) < 0)
		return VAL_SEV_OFF;
	return sev;
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
	v->parser = ts_parser_new();
	if (!v->parser)
		goto fail;
	ts_parser_set_timeout_micros(v->parser, PARSE_TIMEOUT_US);
	const char *rules_dir = NULL;
	json_get_string(config, "rulesDir", &rules_dir);
	if (rules_dir && !(v->rules_dir = strdup(rules_dir)))
		goto fail;
	/* Compiling the queries takes tens of milliseconds a language, so the
	 * built-in rules compile on first use (or in val_prepare) to keep
	 * start-up instant. A user's own rule files are read now, so that a
	 * mistake in them is reported when the config is applied. */
	for (size_t i = 0; rules_dir && i < val_langs_count; i++) {
		r = val_ruleset_load(val_langs[i], rules_dir, &v->rulesets[i], detail,
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
	val_pyworker_free(v->py);
	for (size_t i = 0; i < ARRAY_SIZE(v->rulesets); i++)
		val_ruleset_free(v->rulesets[i]);
	json_object_put(v->profiles);
	free(v->rules_dir);
	free(v->default_profile);
	free(v->workspace);
	if (v->parser)
		ts_parser_delete(v->parser);
	free(v);
}

/* The ruleset of language li, compiled now if it was not yet. */
static int ruleset_for(struct validator *v, size_t li, char *detail, size_t dsz)
{
	if (v->rulesets[li])
		return 0;
	return val_ruleset_load(val_langs[li], v->rules_dir, &v->rulesets[li], detail, dsz);
}

int val_prepare(struct validator *v)
{
	char detail[256];
	for (size_t i = 0; i < val_langs_count; i++) {
		if (v->rulesets[i])
			continue;
		int r = ruleset_for(v, i, detail, sizeof(detail));
		if (r < 0) {
			log_error("validator: %s", detail);
			return r;
		}
		for (size_t j = i + 1; j < val_langs_count; j++)
			if (!v->rulesets[j])
				return 1;
		return 0;
	}
	return 0;
}

int val_python_available(struct validator *v)
{
	if (!v->py)
		return 0;
	struct val_pyerror e;
	return val_pyworker_check(v->py, "", 0, &e) >= 0;
}

/* --- the document ------------------------------------------------------- */

static int doc_index_lines(struct val_doc *d)
{
	size_t n = 1;
	for (size_t i = 0; i < d->len; i++)
		n += d->code[i] == '\n';
	d->line_starts = malloc(n * sizeof(*d->line_starts));
	if (!d->line_starts)
		return -ENOMEM;
	d->nlines = 0;
	d->line_starts[d->nlines++] = 0;
	for (size_t i = 0; i < d->len; i++)
		if (d->code[i] == '\n')
			d->line_starts[d->nlines++] = (uint32_t)(i + 1);
	return 0;
}

static void doc_release(struct val_doc *d)
{
	free(d->line_starts);
	for (size_t i = 0; i < d->naliases; i++) {
		free(d->aliases[i].name);
		free(d->aliases[i].target);
	}
	free(d->aliases);
}

void val_alias_set(struct val_doc *d, const char *name, const char *target, bool module)
{
	for (size_t i = 0; i < d->naliases; i++)
		if (strcmp(d->aliases[i].name, name) == 0) {
			char *t = strdup(target);
			if (!t)
				return;
			free(d->aliases[i].target);
			d->aliases[i].target = t;
			d->aliases[i].module = module;
			return;
		}
	if (d->naliases == d->caliases) {
		size_t c = d->caliases ? d->caliases * 2 : 16;
		struct val_alias *a = realloc(d->aliases, c * sizeof(*a));
		if (!a)
			return;
		d->aliases = a;
		d->caliases = c;
	}
	char *n = strdup(name), *t = strdup(target);
	if (!n || !t) {
		free(n);
		free(t);
		return;
	}
	d->aliases[d->naliases++] = (struct val_alias){n, t, module};
}

const struct val_alias *val_alias_get(struct val_doc *d, const char *name)
{
	for (size_t i = 0; i < d->naliases; i++)
		if (strcmp(d->aliases[i].name, name) == 0)
			return &d->aliases[i];
	return NULL;
}

void val_node_text(struct val_doc *d, TSNode n, char *out)
{
	uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
	if (e > d->len)
		e = (uint32_t)d->len;
	if (s > e)
		s = e;
	size_t k = e - s;
	if (k > VAL_VALUE_MAX - 1)
		k = VAL_VALUE_MAX - 1;
	memcpy(out, d->code + s, k);
	out[k] = '\0';
}

void val_node_value(struct val_doc *d, TSNode n, char *out)
{
	if (!d->lang->fold(d, n, out, 0))
		val_node_text(d, n, out);
}

static void byte_to_pos(struct val_doc *d, uint32_t off, uint32_t *line, uint32_t *col)
{
	if (off > d->len)
		off = (uint32_t)d->len;
	size_t lo = 0, hi = d->nlines;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (d->line_starts[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	*line = (uint32_t)lo;
	*col = pos_column(d->code + d->line_starts[lo], off - d->line_starts[lo], d->enc);
}

static json_object *position(uint32_t line, uint32_t col)
{
	json_object *p = json_object_new_object();
	json_object_object_add(p, "line", json_object_new_int64(line));
	json_object_object_add(p, "character", json_object_new_int64(col));
	return p;
}

json_object *val_range(struct val_doc *d, uint32_t start, uint32_t end)
{
	uint32_t l, c;
	json_object *r = json_object_new_object();
	byte_to_pos(d, start, &l, &c);
	json_object_object_add(r, "start", position(l, c));
	byte_to_pos(d, end < start ? start : end, &l, &c);
	json_object_object_add(r, "end", position(l, c));
	return r;
}

json_object *val_diagnostic(struct val_doc *d, uint32_t start, uint32_t end, enum val_severity sev,
                            const char *code, const char *message, const char *explanation)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "range", val_range(d, start, end));
	json_object_object_add(o, "severity", json_object_new_int(sev));
	if (code) {
		json_object_object_add(o, "code", json_object_new_string(code));
		char href[160];
		snprintf(href, sizeof(href), "kiln:rules/%s", code);
		json_object *cd = json_object_new_object();
		json_object_object_add(cd, "href", json_object_new_string(href));
		json_object_object_add(o, "codeDescription", cd);
	}
	json_object_object_add(o, "source", json_object_new_string("kiln"));
	json_object_object_add(o, "message", json_object_new_string(message));
	if (explanation) {
		json_object *data = json_object_new_object();
		json_object_object_add(data, "explanation", json_object_new_string(explanation));
		json_object_object_add(o, "data", data);
	}
	return o;
}

/* --- the check ---------------------------------------------------------- */

static uint32_t line_byte(struct val_doc *d, uint32_t line, uint32_t col)
{
	if (line >= d->nlines)
		return (uint32_t)d->len;
	uint32_t s = d->line_starts[line];
	uint32_t e = line + 1 < d->nlines ? d->line_starts[line + 1] - 1 : (uint32_t)d->len;
	return s + col > e ? e : s + col;
}

/* CPython's verdict on the syntax, as at most one diagnostic. Returns 1
 * when CPython answered (added an error or found none), 0 when it could
 * not be asked. */
static int python_syntax(struct validator *v, struct val_doc *d, json_object *diags)
{
	if (!v->py)
		return 0;
	struct val_pyerror e;
	int r = val_pyworker_check(v->py, d->code, d->len, &e);
	if (r < 0)
		return 0;
	if (r == 0)
		return 1;
	uint32_t s = line_byte(d, e.line, e.col);
	uint32_t end = line_byte(d, e.end_line, e.end_col);
	if (end <= s) {
		/* No end from CPython: underline one character (or the line's
		 * end, where there is nothing left to underline). */
		end = s;
		if (end < d->len && d->code[end] != '\n')
			end += (uint32_t)utf8_seq_len((const unsigned char *)d->code + end,
			                              d->len - end);
	}
	char msg[300];
	snprintf(msg, sizeof(msg), "%s", e.msg);
	json_object_array_add(diags, val_diagnostic(d, s, end, VAL_SEV_ERROR, "syntax", msg, NULL));
	return 1;
}

static int64_t pos_key(json_object *diag, const char *which)
{
	json_object *p = json_get(json_get(diag, "range"), which);
	int64_t line = 0, col = 0;
	json_get_int64(p, "line", &line);
	json_get_int64(p, "character", &col);
	return (line << 32) | col;
}

/* By start, then end, then rule id: a total order, so equal inputs give
 * byte-identical answers. */
static int by_position(const void *a, const void *b)
{
	json_object *x = *(json_object *const *)a, *y = *(json_object *const *)b;
	int64_t kx = pos_key(x, "start"), ky = pos_key(y, "start");
	if (kx == ky) {
		kx = pos_key(x, "end");
		ky = pos_key(y, "end");
	}
	if (kx != ky)
		return kx < ky ? -1 : 1;
	const char *cx = "", *cy = "";
	json_get_string(x, "code", &cx);
	json_get_string(y, "code", &cy);
	return strcmp(cx, cy);
}

/* Editors and people read diagnostics top to bottom. */
static void sort_diagnostics(json_object *diags)
{
	json_object_array_sort(diags, by_position);
}

static size_t first_invalid_utf8(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = utf8_seq_len((const unsigned char *)s + i, n - i);
		if (k == 1 && (unsigned char)s[i] >= 0x80)
			return i;
		i += k;
	}
	return n;
}

int val_check(struct validator *v, const char *language, const char *code, size_t len,
              const char *profile, enum pos_encoding enc, json_object **ret_diagnostics,
              enum val_verdict *ret_verdict, char *detail, size_t dsz)
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
	struct val_doc d = {
	    .code = code,
	    .len = len,
	    .enc = enc,
	    .lang = lang,
	    .workspace = v->workspace,
	};
	int r = doc_index_lines(&d);
	if (r < 0)
		return r;
	_cleanup_json_ json_object *diags = json_object_new_array();
	ts_parser_set_language(v->parser, lang->ts());
	TSTree *tree = ts_parser_parse_string(v->parser, NULL, code, (uint32_t)len);
	if (!tree) {
		/* The parse timed out: nothing could be checked. */
		ts_parser_reset(v->parser);
		json_object_array_add(
		    diags, val_diagnostic(&d, 0, 0, VAL_SEV_ERROR, "syntax",
		                          "this code is too complex for kiln to check", NULL));
		goto verdict;
	}
	TSNode root = ts_tree_root_node(tree);
	bool ts_broken = ts_node_has_error(root);
	bool python = strcmp(lang->name, "python") == 0;
	int cpython = 0;
	if (python) {
		/* Python source is UTF-8 by definition; say where it is not,
		 * which CPython's decoder cannot (it counts in its own units). */
		size_t bad = first_invalid_utf8(code, len);
		if (bad < len) {
			json_object_array_add(
			    diags,
			    val_diagnostic(&d, (uint32_t)bad, (uint32_t)bad + 1, VAL_SEV_ERROR,
			                   "syntax",
			                   "this byte is not valid UTF-8, which Python source "
			                   "must be",
			                   NULL));
			cpython = 1;
		} else {
			cpython = python_syntax(v, &d, diags);
		}
	}
	size_t nsyntax = json_object_array_length(diags);
	if (!cpython && ts_broken) {
		val_syntax_errors(&d, root, diags, VAL_SEV_ERROR, "syntax",
		                  !python ? NULL
		                  : v->py
		                      ? " (checked by tree-sitter alone: python3 did not answer)"
		                      : " (checked by tree-sitter alone: python3 is off)");
	} else if (cpython && nsyntax == 0 && ts_broken) {
		/* CPython accepts what tree-sitter could not read: the rules
		 * cannot see inside those regions, so never pass them quietly. */
		static const struct val_rule unchecked = {.id = "kiln-unchecked",
		                                          .category = "unchecked"};
		enum val_severity sev = val_severity_for(pmap, &unchecked);
		if (sev != VAL_SEV_OFF)
			val_syntax_errors(&d, root, diags, sev, "kiln-unchecked",
			                  " (CPython accepts it, but kiln's parser cannot read "
			                  "it, so the rules could not check it)");
	}
	if (python && !cpython) {
		char msg[1024];
		snprintf(msg, sizeof(msg),
		         "Python syntax was checked by tree-sitter alone, because CPython was "
		         "not available: %s",
		         v->py ? val_pyworker_why(v->py) : "validator.python is false");
		json_object_array_add(
		    diags, val_diagnostic(&d, 0, 0, VAL_SEV_HINT, "kiln-no-cpython", msg, NULL));
	}
	r = ruleset_for(v, li, detail, dsz);
	if (r >= 0)
		r = val_rules_run(&d, v->rulesets[li], root, pmap, diags);
	ts_tree_delete(tree);
	if (r < 0) {
		doc_release(&d);
		snprintf(detail, dsz, "the rules could not run: %s", strerror(-r));
		return r;
	}
verdict:
	sort_diagnostics(diags);
	enum val_verdict verdict = VAL_ALLOW;
	for (size_t i = 0; i < json_object_array_length(diags); i++) {
		int64_t sev = 0;
		json_get_int64(json_object_array_get_idx(diags, i), "severity", &sev);
		if (sev == VAL_SEV_ERROR)
			verdict = VAL_DENY;
		else if (sev == VAL_SEV_WARNING && verdict == VAL_ALLOW)
			verdict = VAL_WARN;
	}
	doc_release(&d);
	*ret_diagnostics = steal_pointer(&diags);
	*ret_verdict = verdict;
	return 0;
}
