/* rules.c: the policy engine. A language's rules are data: a rule table
 * (rules/LANG.json: id, category, message, explanation) and tree-sitter
 * queries (rules/LANG.scm) whose capture named after a rule id marks the
 * range to report. Debian's tree-sitter 0.20 does not evaluate predicates,
 * so this file does, and adds a few that see through names and constants
 * (#qname-match?, #not-literal?, #is-module?, #outside-workspace?,
 * #not-contains?). See docs/validator.md for the format. */
#include "validate/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/util.h"
#include "core/visible.h"
#include "core/buf.h"
#include "validate/query_analysis.h"

/* More findings than this in one snippet help nobody, and bound the work
 * an adversarial snippet can cause. */
#define MAX_FINDINGS 200
#define MATCH_LIMIT  4096

/* Compile p's regexes not compiled yet: at the load for a rules folder,
 * at the predicate's first use for the embedded files (their compile was
 * a tenth of a cold `kiln run`'s CPU, and a check asks few of them;
 * test_validate compiles every embedded one). -EINVAL when one does not
 * compile. */
static int pred_regexes(struct val_pred *p)
{
	while (p->nre < p->want_re) {
		regex_t *re = p->nre == 0 ? &p->re : &p->re2;
		if (regcomp(re, p->strs[p->nre], REG_EXTENDED | REG_NOSUB) != 0)
			return -EINVAL;
		p->nre++;
	}
	return 0;
}

static void pred_release(struct val_pred *p)
{
	for (size_t i = 0; i < p->nstrs; i++)
		free(p->strs[i]);
	free(p->strs);
	if (p->nre > 0)
		regfree(&p->re);
	if (p->nre > 1)
		regfree(&p->re2);
}

void val_ruleset_free(struct val_ruleset *rs)
{
	if (!rs)
		return;
	for (size_t i = 0; i < rs->npatterns; i++) {
		for (size_t j = 0; j < rs->patterns[i].npreds; j++)
			pred_release(&rs->patterns[i].preds[j]);
		free(rs->patterns[i].preds);
	}
	free(rs->patterns);
	for (size_t i = 0; i < rs->nrules; i++) {
		free(rs->rules[i].id);
		free(rs->rules[i].category);
		free(rs->rules[i].message);
		free(rs->rules[i].explanation);
	}
	free(rs->rules);
	free(rs->cap_rule);
	free(rs->sev);
	free(rs->skip);
	free(rs->gates);
	val_matcher_free(rs->matcher);
	if (rs->query)
		ts_query_delete(rs->query);
	free(rs);
}

static int load_table(struct val_ruleset *rs, const char *dir, char *detail, size_t dsz)
{
	char name[64];
	snprintf(name, sizeof(name), "%s.json", rs->lang->name);
	_cleanup_free_ char *data = NULL;
	size_t len;
	int r = val_rule_file_read(dir, name, &data, &len);
	if (r < 0) {
		snprintf(detail, dsz, "cannot read rule table %s: %s", name, strerror(-r));
		return r;
	}
	_cleanup_json_ json_object *root = json_tokener_parse(data);
	json_object *rules = NULL;
	if (json_get_array(root, "rules", &rules) < 0) {
		snprintf(detail, dsz, "%s: expected an object with a \"rules\" array", name);
		return -EINVAL;
	}
	size_t n = json_object_array_length(rules);
	rs->rules = calloc(n ? n : 1, sizeof(*rs->rules));
	if (!rs->rules)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(rules, i);
		const char *id, *cat, *msg, *expl;
		if (json_get_string(o, "id", &id) < 0 || json_get_string(o, "category", &cat) < 0 ||
		    json_get_string(o, "message", &msg) < 0 ||
		    json_get_string(o, "explanation", &expl) < 0) {
			snprintf(detail, dsz,
			         "%s: rule %zu needs string id, category, message and explanation",
			         name, i);
			return -EINVAL;
		}
		struct val_rule *ru = &rs->rules[rs->nrules++];
		ru->id = strdup(id);
		ru->category = strdup(cat);
		ru->message = strdup(msg);
		ru->explanation = strdup(expl);
		if (!ru->id || !ru->category || !ru->message || !ru->explanation)
			return -ENOMEM;
	}
	return 0;
}

static const struct {
	const char *name;
	enum val_pred_op op;
	int min_args, max_args; /* after the capture; -1 = any */
	int nre;                /* how many of the string args are regexes */
} pred_defs[] = {
    {"eq?", VAL_P_EQ, 1, 1, 0},
    {"not-eq?", VAL_P_NOT_EQ, 1, 1, 0},
    {"match?", VAL_P_MATCH, 1, 1, 1},
    {"not-match?", VAL_P_NOT_MATCH, 1, 1, 1},
    {"any-of?", VAL_P_ANY_OF, 1, -1, 0},
    {"qname-match?", VAL_P_QNAME_MATCH, 1, 1, 1},
    {"not-qname-match?", VAL_P_NOT_QNAME_MATCH, 1, 1, 1},
    {"not-literal?", VAL_P_NOT_LITERAL, 0, 0, 0},
    {"is-module?", VAL_P_IS_MODULE, 0, 0, 0},
    {"outside-workspace?", VAL_P_OUTSIDE, 0, 0, 0},
    {"not-contains?", VAL_P_NOT_CONTAINS, 2, 2, 2},
};

/* False when value cannot match p->re (re_prefix.c); true when regexec()
 * must say. */
static bool may_match(const struct val_pred *p, const char *value)
{
	return val_re_may_match(&p->re_prefix, value);
}

/* One predicate: steps[0] is its name, then arguments up to Done. */
static int compile_pred(struct val_ruleset *rs, const TSQueryPredicateStep *steps, size_t n,
                        struct val_pred *p, char *detail, size_t dsz)
{
	uint32_t l;
	const char *pname = ts_query_string_value_for_id(rs->query, steps[0].value_id, &l);
	size_t k;
	for (k = 0; k < ARRAY_SIZE(pred_defs); k++)
		if (strcmp(pred_defs[k].name, pname) == 0)
			break;
	if (k == ARRAY_SIZE(pred_defs)) {
		snprintf(detail, dsz, "%s.scm: unknown predicate #%s", rs->lang->name, pname);
		return -EINVAL;
	}
	*p = (struct val_pred){.op = pred_defs[k].op, .cap2 = -1};
	if (n < 2 || steps[1].type != TSQueryPredicateStepTypeCapture) {
		snprintf(detail, dsz, "%s.scm: #%s wants a capture first", rs->lang->name, pname);
		return -EINVAL;
	}
	p->cap = steps[1].value_id;
	size_t nargs = n - 2;
	if ((int)nargs < pred_defs[k].min_args ||
	    (pred_defs[k].max_args >= 0 && (int)nargs > pred_defs[k].max_args)) {
		snprintf(detail, dsz, "%s.scm: #%s has the wrong number of arguments",
		         rs->lang->name, pname);
		return -EINVAL;
	}
	p->strs = calloc(nargs ? nargs : 1, sizeof(char *));
	if (!p->strs)
		return -ENOMEM;
	for (size_t i = 0; i < nargs; i++) {
		const TSQueryPredicateStep *s = &steps[2 + i];
		if (s->type == TSQueryPredicateStepTypeCapture) {
			if (p->op != VAL_P_EQ && p->op != VAL_P_NOT_EQ) {
				snprintf(detail, dsz, "%s.scm: #%s takes strings after its capture",
				         rs->lang->name, pname);
				return -EINVAL;
			}
			p->cap2 = (int)s->value_id;
			continue;
		}
		const char *str = ts_query_string_value_for_id(rs->query, s->value_id, &l);
		p->strs[p->nstrs] = strdup(str);
		if (!p->strs[p->nstrs])
			return -ENOMEM;
		p->nstrs++;
	}
	if ((size_t)pred_defs[k].nre > p->nstrs) {
		snprintf(detail, dsz, "%s.scm: #%s has a bad regular expression", rs->lang->name,
		         pname);
		return -EINVAL;
	}
	p->want_re = pred_defs[k].nre;
	if (p->want_re > 0)
		val_re_prefix(p->strs[0], &p->re_prefix);
	if (!rs->lazy_re && pred_regexes(p) < 0) {
		snprintf(detail, dsz, "%s.scm: #%s has a bad regular expression", rs->lang->name,
		         pname);
		return -EINVAL;
	}
	return 0;
}

/* The first predicate of pat with operator op that a gate can ask (its
 * regex's first bytes known) on a capture with one place in the shape;
 * its slot, or -1. */
static int gate_slot(const struct val_pattern *pat, const uint16_t *caps, uint16_t n,
                     enum val_pred_op op, const struct val_pred **ret_pred)
{
	for (size_t j = 0; j < pat->npreds; j++) {
		const struct val_pred *p = &pat->preds[j];
		if (p->op != op || !p->re_prefix.known)
			continue;
		int slot = -1, seen = 0;
		for (uint16_t k = 0; k < n; k++)
			if (caps[k] == p->cap) {
				slot = k;
				seen++;
			}
		if (seen == 1) {
			*ret_pred = p;
			return slot;
		}
	}
	return -1;
}

/* Pattern i's gate for the matcher: its first #qname-match? whose regex's
 * first bytes re_prefix.c knows, on a capture that has one place in the
 * shape. take_match() refuses a match that predicate refuses whatever the
 * others say; the gate refuses it first, by the same two bytes. */
static struct val_gate pattern_gate(const struct val_ruleset *rs, uint32_t i)
{
	uint16_t n;
	const uint16_t *caps = val_matcher_captures(rs->matcher, i, &n);
	const struct val_pattern *pat = &rs->patterns[i];
	const struct val_pred *p = NULL;
	int slot = gate_slot(pat, caps, n, VAL_P_QNAME_MATCH, &p);
	if (slot >= 0)
		return (struct val_gate){.slot = slot, .prefix = &p->re_prefix};
	/* Else its first #match? of the same kind, on the value's first
	 * bytes as value_matches() reads them. */
	slot = gate_slot(pat, caps, n, VAL_P_MATCH, &p);
	if (slot >= 0)
		return (struct val_gate){.slot = slot, .prefix = &p->re_prefix, .value = true};
	return (struct val_gate){.slot = -1};
}

const struct val_query_analysis *val_query_analysis_of(const char *lang, const char *src,
                                                       size_t len)
{
	for (unsigned i = 0; i < val_query_analyses_count; i++) {
		const struct val_query_analysis *qa = &val_query_analyses[i];
		if (strcmp(qa->lang, lang) == 0 && qa->source_len == len &&
		    qa->source_hash == val_query_hash(src, len))
			return qa;
	}
	return NULL;
}

static int load_query(struct val_ruleset *rs, const char *dir, bool ts_only, char *detail,
                      size_t dsz)
{
	char name[64];
	snprintf(name, sizeof(name), "%s.scm", rs->lang->name);
	_cleanup_free_ char *src = NULL;
	size_t len;
	int r = val_rule_file_read(dir, name, &src, &len);
	if (r < 0) {
		snprintf(detail, dsz, "cannot read rule queries %s: %s", name, strerror(-r));
		return r;
	}
	rs->lazy_re = !dir;
	uint32_t off = 0;
	TSQueryError err = TSQueryErrorNone;
	const struct val_query_analysis *qa =
	    dir ? NULL : val_query_analysis_of(rs->lang->name, src, len);
	rs->query = qa ? ts_query_new_analyzed(rs->lang->ts(), src, (uint32_t)len, qa->bits,
	                                       qa->nbits, &off, &err)
	               : ts_query_new(rs->lang->ts(), src, (uint32_t)len, &off, &err);
	if (!rs->query) {
		uint32_t line = 1;
		for (uint32_t i = 0; i < off && i < len; i++)
			line += src[i] == '\n';
		snprintf(detail, dsz, "%s:%u: the query does not compile (tree-sitter error %d)",
		         name, line, (int)err);
		return -EINVAL;
	}
	uint32_t ncap = ts_query_capture_count(rs->query);
	rs->cap_rule = calloc(ncap ? ncap : 1, sizeof(int));
	if (!rs->cap_rule)
		return -ENOMEM;
	for (uint32_t i = 0; i < ncap; i++) {
		uint32_t l;
		const char *cn = ts_query_capture_name_for_id(rs->query, i, &l);
		rs->cap_rule[i] = -1;
		if (cn[0] == '_')
			continue;
		for (size_t j = 0; j < rs->nrules; j++)
			if (strcmp(rs->rules[j].id, cn) == 0)
				rs->cap_rule[i] = (int)j;
		if (rs->cap_rule[i] < 0) {
			snprintf(detail, dsz, "%s: capture @%s names no rule in %s.json", name, cn,
			         rs->lang->name);
			return -EINVAL;
		}
	}
	rs->npatterns = ts_query_pattern_count(rs->query);
	rs->patterns = calloc(rs->npatterns ? rs->npatterns : 1, sizeof(*rs->patterns));
	if (!rs->patterns)
		return -ENOMEM;
	for (size_t i = 0; i < rs->npatterns; i++) {
		uint32_t nsteps;
		const TSQueryPredicateStep *steps =
		    ts_query_predicates_for_pattern(rs->query, (uint32_t)i, &nsteps);
		size_t npred = 0;
		for (uint32_t s = 0; s < nsteps; s++)
			npred += steps[s].type == TSQueryPredicateStepTypeDone;
		struct val_pattern *pat = &rs->patterns[i];
		pat->preds = calloc(npred ? npred : 1, sizeof(*pat->preds));
		if (!pat->preds)
			return -ENOMEM;
		size_t start = 0;
		for (uint32_t s = 0; s < nsteps; s++) {
			if (steps[s].type != TSQueryPredicateStepTypeDone)
				continue;
			r = compile_pred(rs, steps + start, s - start, &pat->preds[pat->npreds],
			                 detail, dsz);
			if (r < 0) {
				/* Not counted yet: what it holds goes now. */
				pred_release(&pat->preds[pat->npreds]);
				return r;
			}
			pat->npreds++;
			start = s + 1;
		}
	}
	/* The patterns match.c knows are matched by it, and taken out of
	 * tree-sitter's cursor, which then runs only if any is left. */
	rs->ts_rest = true;
	if (!ts_only) {
		r = val_matcher_new(rs->lang->ts(), rs->query, src, len, &rs->matcher);
		if (r < 0)
			return r;
		for (size_t i = 0; i < rs->npatterns; i++)
			if (val_matcher_native(rs->matcher, (uint32_t)i))
				ts_query_disable_pattern(rs->query, (uint32_t)i);
		rs->ts_rest = val_matcher_count(rs->matcher) < rs->npatterns;
		rs->gates = calloc(rs->npatterns + 1, sizeof(*rs->gates));
		if (!rs->gates)
			return -ENOMEM;
		for (size_t i = 0; i < rs->npatterns; i++)
			rs->gates[i] = pattern_gate(rs, (uint32_t)i);
	}
	return 0;
}

int val_ruleset_load(const struct val_lang *lang, const char *dir, bool ts_only,
                     struct val_ruleset **ret, char *detail, size_t dsz)
{
	struct val_ruleset *rs = calloc(1, sizeof(*rs));
	if (!rs)
		return -ENOMEM;
	rs->lang = lang;
	int r = load_table(rs, dir, detail, dsz);
	if (r >= 0)
		r = load_query(rs, dir, ts_only, detail, dsz);
	if (r < 0) {
		if (r == -ENOMEM)
			snprintf(detail, dsz, "out of memory loading the %s rules", lang->name);
		val_ruleset_free(rs);
		return r;
	}
	*ret = rs;
	return 0;
}

/* --- evaluation ---------------------------------------------------------- */

static bool capture_node(const TSQueryMatch *m, uint32_t cap, TSNode *ret)
{
	for (uint16_t i = 0; i < m->capture_count; i++)
		if (m->captures[i].index == cap) {
			*ret = m->captures[i].node;
			return true;
		}
	return false;
}

/* A node's qualified name and its value do not change once the aliases
 * are collected, and every pattern that starts at a call asks for its
 * name (a dozen in python.scm): the last answers are kept in a small
 * direct-mapped table, one per check, of bounded size. Matches come in
 * document order, so the patterns of one node hit it one after another. */
#define MEMO_SLOTS 64

enum memo_kind {
	MEMO_QNAME = 1,
	MEMO_VALUE,
};

struct memo_slot {
	const void *id; /* the node's subtree */
	uint32_t start; /* and where it is: together, which node */
	uint8_t kind;   /* enum memo_kind; 0: empty */
	bool ok;        /* qname: whether the node has one */
	uint16_t len;
	char s[VAL_VALUE_MAX];
};

struct val_memo {
	struct memo_slot slot[MEMO_SLOTS];
	/* The slot last asked for: the patterns of a shape ask for the same
	 * node's name one after another (NULL at first). */
	struct memo_slot *last;
};

static struct memo_slot *memo_slot(struct val_doc *d, TSNode n, enum memo_kind kind, bool *ret_hit)
{
	uint32_t start = ts_node_start_byte(n);
	struct memo_slot *m = d->memo->last;
	if (m && m->kind == kind && m->id == n.id && m->start == start) {
		*ret_hit = true;
		return m;
	}
	uintptr_t h = ((uintptr_t)n.id >> 4) ^ start ^ ((uintptr_t)kind << 5);
	m = &d->memo->slot[(h ^ (h >> 7)) % MEMO_SLOTS];
	*ret_hit = m->kind == kind && m->id == n.id && m->start == start;
	d->memo->last = m;
	return m;
}

static void memo_store(struct memo_slot *m, TSNode n, enum memo_kind kind, bool ok, const char *s)
{
	size_t l = strlen(s);
	m->id = n.id;
	m->start = ts_node_start_byte(n);
	m->kind = (uint8_t)kind;
	m->ok = ok;
	m->len = (uint16_t)l;
	memcpy(m->s, s, l + 1);
}

/* d->lang->qname(), remembered: the name, or NULL when the node has none.
 * It is the memo's (buf's, VAL_VALUE_MAX, without a memo), not copied out:
 * read it before the next node_qname() or node_value(). */
static const char *node_qname(struct val_doc *d, TSNode n, char *buf)
{
	if (!d->memo)
		return d->lang->qname(d, n, buf, 0) ? buf : NULL;
	bool hit;
	struct memo_slot *m = memo_slot(d, n, MEMO_QNAME, &hit);
	if (!hit) {
		bool ok = d->lang->qname(d, n, buf, 0);
		if (!ok)
			buf[0] = '\0';
		memo_store(m, n, MEMO_QNAME, ok, buf);
	}
	return m->ok ? m->s : NULL;
}

/* val_node_value(), remembered. */
static void node_value(struct val_doc *d, TSNode n, char *out)
{
	if (!d->memo) {
		val_node_value(d, n, out);
		return;
	}
	bool hit;
	struct memo_slot *m = memo_slot(d, n, MEMO_VALUE, &hit);
	if (hit) {
		memcpy(out, m->s, (size_t)m->len + 1);
		return;
	}
	val_node_value(d, n, out);
	memo_store(m, n, MEMO_VALUE, true, out);
}

static bool is_literal(struct val_doc *d, TSNode n)
{
	const char *t = ts_node_type(n);
	char tmp[VAL_VALUE_MAX];
	if (strcmp(t, "string") && strcmp(t, "raw_string") && strcmp(t, "word"))
		return false;
	return d->lang->fold(d, n, tmp, 0);
}

static bool is_module(struct val_doc *d, TSNode n)
{
	char buf[VAL_VALUE_MAX];
	const char *q = node_qname(d, n, buf);
	if (!q)
		return false;
	for (size_t i = 0; i < d->naliases; i++)
		if (d->aliases[i].module && strcmp(d->aliases[i].target, q) == 0)
			return true;
	return false;
}

/* Whether a path (a folded constant, or source text when not constant)
 * leads outside the workspace: absolute paths not under the configured
 * workspace, the home directory, and relative paths that climb out. */
static bool path_outside(const char *ws, const char *p)
{
	static const char *const harmless[] = {"/dev/null", "/dev/stdout", "/dev/stderr",
	                                       "/dev/tty"};
	/* Source text of a non-constant string: f"/tmp/{x}", "$HOME/x". */
	const char *q = p;
	while (*q && strchr("rRbBfFuU", *q))
		q++;
	if (*q == '"' || *q == '\'' || *q == '`')
		p = q;
	while (*p == '"' || *p == '\'' || *p == '`')
		p++;
	if (!*p)
		return false;
	for (size_t i = 0; i < ARRAY_SIZE(harmless); i++)
		if (strcmp(p, harmless[i]) == 0)
			return false;
	if (strncmp(p, "/dev/fd/", 8) == 0)
		return false;
	if (p[0] == '~' || strncmp(p, "$HOME", 5) == 0 || strncmp(p, "${HOME", 6) == 0)
		return true;
	if (p[0] == '/') {
		size_t wl = ws ? strlen(ws) : 0;
		if (!ws || strncmp(p, ws, wl) != 0 || (p[wl] != '/' && p[wl] != '\0'))
			return true;
		p += wl;
	}
	/* Climbing: count components, '..' takes one away. */
	long depth = 0;
	while (*p) {
		while (*p == '/')
			p++;
		const char *e = strchrnul(p, '/');
		size_t n = (size_t)(e - p);
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			if (--depth < 0)
				return true;
		} else if (n > 0 && !(n == 1 && p[0] == '.')) {
			depth++;
		}
		p = e;
	}
	return false;
}

static bool contains_type(TSNode n, const regex_t *want, const regex_t *stop)
{
	bool found = false;
	TSTreeCursor c = ts_tree_cursor_new(n);
	if (!ts_tree_cursor_goto_first_child(&c))
		goto out;
	for (;;) {
		TSNode x = ts_tree_cursor_current_node(&c);
		const char *t = ts_node_type(x);
		if (regexec(want, t, 0, NULL, 0) == 0) {
			found = true;
			break;
		}
		if (regexec(stop, t, 0, NULL, 0) != 0 && ts_tree_cursor_goto_first_child(&c))
			continue;
		while (!ts_tree_cursor_goto_next_sibling(&c)) {
			if (!ts_tree_cursor_goto_parent(&c))
				goto out;
			if (ts_node_eq(ts_tree_cursor_current_node(&c), n))
				goto out;
		}
	}
out:
	ts_tree_cursor_delete(&c);
	return found;
}

/* Whether n's value matches p->re. Most values are names that do not fold
 * (an identifier's value is its text), tested against a regex whose first
 * two bytes refuse them (PY-DUNDER-WALK's at every identifier): for those
 * the two bytes are read from the source, and the text is neither copied
 * nor remembered. */
/* Whether a name's source byte may read otherwise (lang->name_text): a
 * byte of a character that is not ASCII (Python's 'ｏs' is os) or an
 * escape's backslash (JavaScript's \u0072equire is require). */
static bool name_byte_folds(char c)
{
	return (unsigned char)c >= 0x80 || c == '\\';
}

/* The first bytes val_node_name() would copy of n: the source's, unless
 * one of them may read otherwise and the language reads the name so. */
static void text_head(struct val_doc *d, TSNode n, char head[3])
{
	uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
	if (e > d->len)
		e = (uint32_t)d->len;
	head[0] = head[1] = head[2] = '\0';
	if (s < e) {
		head[0] = d->code[s];
		head[1] = s + 1 < e && head[0] ? d->code[s + 1] : '\0';
	}
	char buf[VAL_VALUE_MAX];
	if ((name_byte_folds(head[0]) || name_byte_folds(head[1])) && d->lang->name_text &&
	    d->lang->name_text(d, n, buf)) {
		head[0] = buf[0];
		head[1] = buf[0] ? buf[1] : '\0';
	}
}

static bool value_matches(struct val_doc *d, const struct val_pred *p, TSNode n, char *val)
{
	if (!p->re_prefix.known) {
		node_value(d, n, val);
	} else if (!d->lang->fold(d, n, val, 0)) {
		char head[3];
		text_head(d, n, head);
		if (!val_re_may_match(&p->re_prefix, head))
			return false;
		val_node_name(d, n, val);
	}
	return may_match(p, val) && regexec(&p->re, val, 0, NULL, 0) == 0;
}

static bool pred_holds(struct val_doc *d, const struct val_pred *p, const TSQueryMatch *m)
{
	TSNode n, n2;
	char val[VAL_VALUE_MAX], val2[VAL_VALUE_MAX];
	/* A predicate on a capture that did not take part is vacuously true,
	 * as tree-sitter's own evaluators treat optional captures. */
	if (!capture_node(m, p->cap, &n))
		return true;
	switch (p->op) {
	case VAL_P_EQ:
	case VAL_P_NOT_EQ: {
		node_value(d, n, val);
		bool eq;
		if (p->cap2 >= 0) {
			if (!capture_node(m, (uint32_t)p->cap2, &n2))
				return true;
			node_value(d, n2, val2);
			eq = strcmp(val, val2) == 0;
		} else {
			eq = strcmp(val, p->strs[0]) == 0;
		}
		return eq == (p->op == VAL_P_EQ);
	}
	case VAL_P_MATCH:
	case VAL_P_NOT_MATCH:
		return value_matches(d, p, n, val) == (p->op == VAL_P_MATCH);
	case VAL_P_ANY_OF:
		node_value(d, n, val);
		for (size_t i = 0; i < p->nstrs; i++)
			if (strcmp(val, p->strs[i]) == 0)
				return true;
		return false;
	case VAL_P_QNAME_MATCH:
	case VAL_P_NOT_QNAME_MATCH: {
		const char *q = node_qname(d, n, val);
		bool ok = q && may_match(p, q) && regexec(&p->re, q, 0, NULL, 0) == 0;
		return ok == (p->op == VAL_P_QNAME_MATCH);
	}
	case VAL_P_NOT_LITERAL:
		return !is_literal(d, n);
	case VAL_P_IS_MODULE:
		return is_module(d, n);
	case VAL_P_OUTSIDE:
		node_value(d, n, val);
		return path_outside(d->workspace, val);
	case VAL_P_NOT_CONTAINS:
		return !contains_type(n, &p->re, &p->re2);
	}
	return false;
}

/* The gates' question (val_head_fn): the first bytes of n's qualified
 * name, from the memo as #qname-match? reads it, or of its value as
 * value_matches() first looks at it. */
static bool name_head(void *data, TSNode n, bool value, char head[2]);

struct finding {
	size_t rule;
	uint32_t start, end;
};

/* One check's rule run: what each match is judged against. */
struct run {
	struct val_doc *d;
	const struct val_ruleset *rs;
	const enum val_severity *sev;
	struct finding found[MAX_FINDINGS];
	size_t nfound;
};

/* A rule's message may name what it matched: each "{name}" is the
 * node's qualified name (imports and aliases resolved: "pydoc.pipepager"),
 * or its source text when it has none, with control and invisible
 * characters made visible and cut at VAL_NAME_SHOWN bytes. */
#define VAL_NAME_SHOWN 80
static int add_named(struct val_doc *d, TSNode at, uint32_t s, uint32_t e, enum val_severity sev,
                     const struct val_rule *ru)
{
	char buf[VAL_VALUE_MAX], text[VAL_VALUE_MAX];
	const char *name = node_qname(d, at, buf);
	if (!name || !*name) {
		val_node_name(d, at, text);
		name = text;
	}
	size_t n = strlen(name);
	bool cut = n > VAL_NAME_SHOWN;
	if (cut) {
		n = VAL_NAME_SHOWN;
		while (n > 0 && ((unsigned char)name[n] & 0xC0) == 0x80)
			n--; /* not inside a UTF-8 sequence */
	}
	struct buf shown, msg;
	buf_init(&shown, 4 * VAL_VALUE_MAX);
	buf_init(&msg, 64 * 1024);
	int r = vis_append(&shown, name, n, 0);
	if (r == 0 && cut)
		r = buf_append(&shown, "...", 3);
	for (const char *p = ru->message, *q; r == 0 && *p; p = q + 6) {
		q = strstr(p, "{name}");
		if (!q) {
			r = buf_append(&msg, p, strlen(p));
			break;
		}
		r = buf_append(&msg, p, (size_t)(q - p));
		if (r == 0)
			r = buf_append(&msg, shown.data ? shown.data : "", shown.len);
	}
	if (r == 0)
		r = val_add(d, s, e, sev, ru->id, msg.data ? msg.data : "", ru->explanation);
	buf_release(&shown);
	buf_release(&msg);
	return r == -ENOBUFS ? -ENOMEM : r;
}

/* One match, from either matcher: a diagnostic when its rule is on and
 * its predicates hold. Returns 0 to go on, 1 at MAX_FINDINGS, -errno. */
static int take_match(void *data, const TSQueryMatch *m)
{
	struct run *st = data;
	const struct val_ruleset *rs = st->rs;
	struct val_doc *d = st->d;
	/* A query over 4 MiB takes a while: see a cancel between matches. */
	if (val_cancelled(d))
		return -ECANCELED;
	const struct val_pattern *pat = &rs->patterns[m->pattern_index];
	int rule = -1;
	TSNode at = {0};
	for (uint16_t i = 0; i < m->capture_count; i++)
		if (rs->cap_rule[m->captures[i].index] >= 0) {
			rule = rs->cap_rule[m->captures[i].index];
			at = m->captures[i].node;
			break;
		}
	if (rule < 0 || st->sev[rule] == VAL_SEV_OFF)
		return 0;
	const struct val_rule *ru = &rs->rules[rule];
	for (size_t i = 0; i < pat->npreds; i++) {
		/* The one change to a ruleset after its load: an embedded
		 * file's regexes, compiled at their first use. A ruleset is
		 * its validator's, used by one thread at a time. A regex
		 * that cannot be compiled fails the check (nothing is
		 * allowed on a predicate not asked). */
		struct val_pred *p = (struct val_pred *)&pat->preds[i];
		int rr = pred_regexes(p);
		if (rr < 0)
			return rr;
		if (!pred_holds(d, p, m))
			return 0;
	}
	uint32_t s = ts_node_start_byte(at), e = ts_node_end_byte(at);
	for (size_t i = 0; i < st->nfound; i++)
		if (st->found[i].rule == (size_t)rule && st->found[i].start == s &&
		    st->found[i].end == e)
			return 0;
	st->found[st->nfound++] = (struct finding){(size_t)rule, s, e};
	int r = strstr(ru->message, "{name}")
	            ? add_named(d, at, s, e, st->sev[rule], ru)
	            : val_add(d, s, e, st->sev[rule], ru->id, ru->message, ru->explanation);
	if (r < 0)
		return r;
	return st->nfound == MAX_FINDINGS;
}

static bool name_head(void *data, TSNode n, bool value, char head[2])
{
	struct run *st = data;
	char buf[VAL_VALUE_MAX];
	if (value) {
		/* value_matches()'s first test: the folded value's first bytes,
		 * or the source's when it does not fold. */
		char h[3];
		if (st->d->lang->fold(st->d, n, buf, 0)) {
			h[0] = buf[0];
			h[1] = buf[0] ? buf[1] : '\0';
		} else {
			text_head(st->d, n, h);
		}
		head[0] = h[0];
		head[1] = h[1];
		return true;
	}
	const char *q = node_qname(st->d, n, buf);
	if (!q)
		return false;
	head[0] = q[0];
	head[1] = q[0] ? q[1] : '\0';
	return true;
}

/* rs->sev and rs->skip for profile, unless they are already its. */
static int profile_tables(struct val_ruleset *rs, json_object *profile)
{
	if (rs->sev && rs->sev_profile == profile)
		return 0;
	enum val_severity *sev = calloc(rs->nrules ? rs->nrules : 1, sizeof(*sev));
	bool *skip = calloc(rs->npatterns + 1, sizeof(*skip));
	if (!sev || !skip) {
		free(sev);
		free(skip);
		return -ENOMEM;
	}
	for (size_t i = 0; i < rs->nrules; i++)
		sev[i] = val_severity_for(profile, &rs->rules[i]);
	/* Patterns whose every rule is off in this profile never make a
	 * finding (take_match drops them): the matcher skips them. */
	for (size_t i = 0; rs->matcher && i < rs->npatterns; i++) {
		uint16_t n;
		const uint16_t *caps = val_matcher_captures(rs->matcher, (uint32_t)i, &n);
		bool on = false;
		for (uint16_t k = 0; k < n && !on; k++)
			on =
			    rs->cap_rule[caps[k]] >= 0 && sev[rs->cap_rule[caps[k]]] != VAL_SEV_OFF;
		skip[i] = n > 0 && !on;
	}
	free(rs->sev);
	free(rs->skip);
	rs->sev = sev;
	rs->skip = skip;
	rs->sev_profile = profile;
	return 0;
}

int val_rules_run(struct val_doc *d, struct val_ruleset *rs, TSNode root, json_object *profile)
{
	/* Each rule's severity under the profile, once per profile, not per
	 * match or per check (two JSON lookups a rule). */
	int r = profile_tables(rs, profile);
	if (r < 0)
		return r;
	_cleanup_free_ struct val_memo *memo = malloc(sizeof(*memo));
	_cleanup_free_ struct run *st = malloc(sizeof(*st));
	if (!memo || !st)
		return -ENOMEM;
	for (size_t i = 0; i < MEMO_SLOTS; i++)
		memo->slot[i].kind = 0;
	memo->last = NULL;
	*st = (struct run){.d = d, .rs = rs, .sev = rs->sev};
	/* The tree read once, for collect's walk and the matcher's. */
	if ((r = val_flat_read(d->flat, root)) < 0)
		return r;
	/* The memo only after collect: names resolve against its aliases. */
	if (d->lang->collect)
		d->lang->collect(d);
	d->memo = memo;
	if (rs->matcher)
		r = val_matcher_run(rs->matcher, d->flat, rs->skip, rs->gates, name_head,
		                    take_match, st);
	if (r >= 0 && st->nfound < MAX_FINDINGS && rs->ts_rest) {
		TSQueryCursor *qc = ts_query_cursor_new();
		if (!qc) {
			d->memo = NULL;
			return -ENOMEM;
		}
		ts_query_cursor_set_match_limit(qc, MATCH_LIMIT);
		ts_query_cursor_exec(qc, rs->query, root);
		TSQueryMatch m;
		while (r == 0 && ts_query_cursor_next_match(qc, &m))
			r = take_match(st, &m);
		ts_query_cursor_delete(qc);
	}
	d->memo = NULL;
	return r < 0 ? r : 0;
}
