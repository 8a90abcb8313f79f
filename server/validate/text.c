/* text.c: characters that make an editor show something other than what
 * runs (Trojan Source, CVE-2021-42574): control characters, bidirectional
 * overrides and isolates, and invisible characters outside strings and
 * comments. Which characters, and where they count, is data
 * (rules/text.json); this file only scans the bytes once, in order. */
#include "validate/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/util.h"

/* Findings past this many help nobody (a file full of controls is one
 * problem) and bound the work of a hostile snippet. */
#define MAX_TEXT_FINDINGS 32

struct text_range {
	uint32_t lo, hi;
	size_t rule;
	char *name;
};

struct text_rule {
	struct val_rule r;
	bool anywhere; /* false: only outside the language's literals */
	bool lang[8];  /* which languages (indexed like val_langs) it is for */
};

struct val_text {
	struct text_rule *rules;
	size_t nrules;
	struct text_range *ranges; /* sorted by lo, disjoint */
	size_t nranges;
	/* Per language (indexed like val_langs): node types whose text is
	 * literal (strings, comments), NULL-terminated. */
	char **literals[8];
};

void val_text_free(struct val_text *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nrules; i++) {
		free(t->rules[i].r.id);
		free(t->rules[i].r.category);
		free(t->rules[i].r.message);
		free(t->rules[i].r.explanation);
	}
	free(t->rules);
	for (size_t i = 0; i < t->nranges; i++)
		free(t->ranges[i].name);
	free(t->ranges);
	for (size_t i = 0; i < ARRAY_SIZE(t->literals); i++) {
		for (char **p = t->literals[i]; p && *p; p++)
			free(*p);
		free(t->literals[i]);
	}
	free(t);
}

static int parse_cp(const char *s, uint32_t *ret)
{
	char *end;
	if (strncmp(s, "U+", 2) != 0)
		return -EINVAL;
	unsigned long v = strtoul(s + 2, &end, 16);
	if (*end || end == s + 2 || v > 0x10ffff)
		return -EINVAL;
	*ret = (uint32_t)v;
	return 0;
}

static int by_lo(const void *a, const void *b)
{
	const struct text_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int load_chars(struct val_text *t, json_object *chars, size_t rule, const char *file,
                      char *detail, size_t dsz)
{
	size_t n = json_object_array_length(chars);
	struct text_range *p = realloc(t->ranges, (t->nranges + n) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	t->ranges = p;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(chars, i);
		struct text_range x = {.rule = rule};
		const char *lo = json_object_get_string(json_object_array_get_idx(e, 0));
		const char *hi = json_object_get_string(json_object_array_get_idx(e, 1));
		const char *name = json_object_get_string(json_object_array_get_idx(e, 2));
		if (!json_object_is_type(e, json_type_array) || json_object_array_length(e) != 3 ||
		    !lo || !hi || !name || parse_cp(lo, &x.lo) < 0 || parse_cp(hi, &x.hi) < 0 ||
		    x.hi < x.lo) {
			snprintf(detail, dsz,
			         "%s: rule %zu: each of chars must be [\"U+XXXX\", \"U+XXXX\", "
			         "\"name\"], first <= last",
			         file, rule);
			return -EINVAL;
		}
		if (!(x.name = strdup(name)))
			return -ENOMEM;
		t->ranges[t->nranges++] = x;
	}
	return 0;
}

static int load_literals(struct val_text *t, json_object *lits, const char *file, char *detail,
                         size_t dsz)
{
	for (size_t i = 0; i < val_langs_count && i < ARRAY_SIZE(t->literals); i++) {
		json_object *a = json_get(lits, val_langs[i]->name);
		size_t n =
		    a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
		if (a && !json_object_is_type(a, json_type_array)) {
			snprintf(detail, dsz, "%s: literals.%s must be an array of node types",
			         file, val_langs[i]->name);
			return -EINVAL;
		}
		t->literals[i] = calloc(n + 1, sizeof(char *));
		if (!t->literals[i])
			return -ENOMEM;
		for (size_t j = 0; j < n; j++) {
			const char *s = json_object_get_string(json_object_array_get_idx(a, j));
			if (!s || !(t->literals[i][j] = strdup(s)))
				return s ? -ENOMEM : -EINVAL;
		}
	}
	return 0;
}

static int load(struct val_text *t, const char *data, char *detail, size_t dsz)
{
	static const char file[] = "text.json";
	_cleanup_json_ json_object *root = json_tokener_parse(data);
	json_object *rules = NULL;
	if (json_get_array(root, "rules", &rules) < 0) {
		snprintf(detail, dsz, "%s: expected an object with a \"rules\" array", file);
		return -EINVAL;
	}
	size_t n = json_object_array_length(rules);
	t->rules = calloc(n ? n : 1, sizeof(*t->rules));
	if (!t->rules)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(rules, i), *chars = NULL;
		const char *id, *cat, *msg, *expl, *where;
		if (json_get_string(o, "id", &id) < 0 || json_get_string(o, "category", &cat) < 0 ||
		    json_get_string(o, "message", &msg) < 0 ||
		    json_get_string(o, "explanation", &expl) < 0 ||
		    json_get_string(o, "where", &where) < 0 ||
		    (strcmp(where, "anywhere") && strcmp(where, "code")) ||
		    json_get_array(o, "chars", &chars) < 0) {
			snprintf(detail, dsz,
			         "%s: rule %zu needs string id, category, message, explanation, "
			         "where (anywhere or code) and an array chars",
			         file, i);
			return -EINVAL;
		}
		struct text_rule *tr = &t->rules[t->nrules++];
		tr->anywhere = strcmp(where, "anywhere") == 0;
		tr->r.id = strdup(id);
		tr->r.category = strdup(cat);
		tr->r.message = strdup(msg);
		tr->r.explanation = strdup(expl);
		if (!tr->r.id || !tr->r.category || !tr->r.message || !tr->r.explanation)
			return -ENOMEM;
		json_object *langs = json_get(o, "languages");
		for (size_t l = 0; l < val_langs_count && l < ARRAY_SIZE(tr->lang); l++) {
			bool on = !langs;
			for (size_t k = 0; langs && k < json_object_array_length(langs); k++) {
				const char *nm =
				    json_object_get_string(json_object_array_get_idx(langs, k));
				on |= nm && strcmp(nm, val_langs[l]->name) == 0;
			}
			tr->lang[l] = on;
		}
		if (langs && !json_object_is_type(langs, json_type_array)) {
			snprintf(detail, dsz, "%s: rule %zu: languages must be an array of names",
			         file, i);
			return -EINVAL;
		}
		int r = load_chars(t, chars, i, file, detail, dsz);
		if (r < 0)
			return r;
	}
	qsort(t->ranges, t->nranges, sizeof(*t->ranges), by_lo);
	for (size_t i = 1; i < t->nranges; i++)
		if (t->ranges[i].lo <= t->ranges[i - 1].hi) {
			snprintf(detail, dsz, "%s: the character ranges overlap at U+%04X", file,
			         t->ranges[i].lo);
			return -EINVAL;
		}
	return load_literals(t, json_get(root, "literals"), file, detail, dsz);
}

int val_text_load(const char *dir, struct val_text **ret, char *detail, size_t dsz)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	/* A rules directory without its own text.json keeps the built-in one. */
	int r = val_rule_file_read(dir, "text.json", &data, &len);
	if (r == -ENOENT && dir)
		r = val_rule_file_read(NULL, "text.json", &data, &len);
	if (r < 0) {
		snprintf(detail, dsz, "cannot read text.json: %s", strerror(-r));
		return r;
	}
	struct val_text *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	r = load(t, data, detail, dsz);
	if (r < 0) {
		if (r == -ENOMEM)
			snprintf(detail, dsz, "out of memory loading text.json");
		val_text_free(t);
		return r;
	}
	*ret = t;
	return 0;
}

static const struct text_range *lookup(const struct val_text *t, uint32_t cp)
{
	size_t lo = 0, hi = t->nranges;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cp < t->ranges[mid].lo)
			hi = mid;
		else if (cp > t->ranges[mid].hi)
			lo = mid + 1;
		else
			return &t->ranges[mid];
	}
	return NULL;
}

static uint32_t decode(const unsigned char *u, size_t k)
{
	switch (k) {
	case 2:
		return (uint32_t)(u[0] & 0x1f) << 6 | (u[1] & 0x3f);
	case 3:
		return (uint32_t)(u[0] & 0x0f) << 12 | (uint32_t)(u[1] & 0x3f) << 6 | (u[2] & 0x3f);
	case 4:
		return (uint32_t)(u[0] & 0x07) << 18 | (uint32_t)(u[1] & 0x3f) << 12 |
		       (uint32_t)(u[2] & 0x3f) << 6 | (u[3] & 0x3f);
	default:
		return u[0];
	}
}

/* Whether byte range [s, e) lies inside a string or comment node. */
static bool in_literal(struct val_doc *d, char **types, TSNode root, uint32_t s, uint32_t e)
{
	if (!types || ts_node_is_null(root))
		return false;
	TSNode n = ts_node_descendant_for_byte_range(root, s, e);
	for (; !ts_node_is_null(n); n = ts_node_parent(n)) {
		/* Only a node that really holds the bytes (not one ending at s). */
		if (ts_node_start_byte(n) > s || ts_node_end_byte(n) < e)
			continue;
		const char *type = ts_node_type(n);
		for (char **p = types; *p; p++)
			if (strcmp(*p, type) == 0)
				return true;
	}
	(void)d;
	return false;
}

static int report(struct val_doc *d, const struct val_text *t, const struct text_range *x,
                  uint32_t cp, uint32_t s, uint32_t e, json_object *profile)
{
	const struct text_rule *tr = &t->rules[x->rule];
	enum val_severity sev = val_severity_for(profile, &tr->r);
	if (sev == VAL_SEV_OFF)
		return 0;
	/* "{char}" in the message becomes "U+202E RIGHT-TO-LEFT OVERRIDE":
	 * the character is named, never shown raw. */
	char ch[160], msg[512];
	bool lower = x->name[0] >= 'a' && x->name[0] <= 'z';
	snprintf(ch, sizeof(ch), "U+%04X%s%s", cp, lower ? ", " : " ", x->name);
	const char *m = tr->r.message, *at = strstr(m, "{char}");
	if (at)
		snprintf(msg, sizeof(msg), "%.*s%s%s", (int)(at - m), m, ch, at + 6);
	else
		snprintf(msg, sizeof(msg), "%s", m);
	return val_add(d, s, e, sev, tr->r.id, msg, tr->r.explanation);
}

int val_text_scan(struct val_doc *d, const struct val_text *t, TSNode root, json_object *profile)
{
	size_t li = 0;
	while (li < val_langs_count && val_langs[li] != d->lang)
		li++;
	char **lits = li < ARRAY_SIZE(t->literals) ? t->literals[li] : NULL;
	const unsigned char *u = (const unsigned char *)d->code;
	size_t nfound = 0;
	for (size_t i = 0; i < d->len && nfound < MAX_TEXT_FINDINGS;) {
		unsigned char c = u[i];
		/* Most bytes are printable ASCII, tab, form feed or a line break. */
		if (c >= 0x20 && c < 0x7f) {
			i++;
			continue;
		}
		/* A lone \r is a line break to editors (and to Python and
		 * JavaScript), not to bash: the table says where it matters. */
		if (c == '\t' || c == '\n' || c == '\f' ||
		    (c == '\r' && i + 1 < d->len && u[i + 1] == '\n')) {
			i++;
			continue;
		}
		size_t k = utf8_seq_len(u + i, d->len - i);
		if (c >= 0x80 && k == 1) {
			i++; /* not UTF-8: the syntax check speaks of that */
			continue;
		}
		uint32_t cp = decode(u + i, k);
		const struct text_range *x = lookup(t, cp);
		uint32_t s = (uint32_t)i;
		i += k;
		if (!x || (cp == 0xfeff && s == 0))
			continue; /* a byte order mark is one only at the start */
		if (li < ARRAY_SIZE(t->rules[x->rule].lang) && !t->rules[x->rule].lang[li])
			continue;
		if (!t->rules[x->rule].anywhere && in_literal(d, lits, root, s, (uint32_t)i))
			continue;
		int r = report(d, t, x, cp, s, (uint32_t)i, profile);
		if (r < 0)
			return r;
		nfound++;
	}
	return 0;
}
