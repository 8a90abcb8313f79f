/* match.c: the rule queries' patterns matched by kiln itself, not by
 * tree-sitter's query engine. Debian's tree-sitter (0.20.7, and 0.25 alike)
 * spends about 1000 instructions per node of the tree in its query cursor
 * (0.44M per 20-line check with no pattern at all, 1M with python.scm),
 * most of it working out each node's field and sibling facts for patterns
 * that cannot start there. This file reads each pattern's source once,
 * indexes the patterns by the node type they start at, and goes once
 * through the tree as tree.c read it (every visible node in order, with
 * its field and where its subtree ends), trying at each node only the
 * patterns that start there; a node's children are read from that array,
 * not by tree-sitter's cursor again.
 *
 * It knows the subset of the query language the rule files use: named
 * nodes and (_), fields, [alternatives], captures, the anchor '.' (first
 * named child, the next named sibling, last named child) and '?' on a last
 * child. A pattern using anything else (anonymous "nodes", !fields, * and
 * +, several top-level nodes) stays with tree-sitter's engine, which
 * rules.c still runs for those alone. Matches follow tree-sitter's
 * semantics for that subset: each way the children can be assigned is a
 * match, and a match whose captures another match of the same pattern at
 * the same node contains (a skipped '?') is dropped, as tree-sitter drops
 * it. tests/validate/engines.py checks that both engines give the same
 * diagnostics. */
#include "validate/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <tree_sitter/parser.h>

#define MAX_CAPS_PER_NODE 4
/* Captures in one match, and matches of one pattern at one node: more is
 * cut (tree-sitter's own cursor has a similar limit, MATCH_LIMIT). */
#define MAX_MATCH_CAPS 16
#define MAX_RESULTS    4096

struct mpat {
	bool alt;      /* [ ... ]: kids are the alternatives */
	bool wildcard; /* (_) */
	bool anchored; /* '.' before it: the next named child, no other */
	bool last;     /* '.' after it: no named sibling may follow */
	bool optional; /* '?' */
	TSSymbol sym;
	TSFieldId field; /* the field it must be in, 0 for any */
	uint16_t ncaps;
	uint16_t caps[MAX_CAPS_PER_NODE]; /* capture ids while read, then slots */
	struct mpat *kids;
	uint16_t nkids;
};

/* Patterns of the same shape (a dozen of python.scm's start with
 * (call function: (_) @x) and differ only in predicates) are matched once:
 * a match's captures name slots, the captures' places in the shape, and
 * each pattern of the group names its own capture for each slot. */
struct val_matcher {
	struct mpat *pats; /* per query pattern; NULL where tree-sitter runs it */
	bool *native;
	uint32_t npatterns, nnative;
	uint32_t nsyms;
	uint32_t *first, *count; /* per root symbol: a slice of by_sym */
	uint32_t *by_sym;        /* the first pattern of each shape, by root symbol */
	uint32_t *next_same;     /* the next pattern of the same shape, or UINT32_MAX */
	uint16_t **slot_cap;     /* per pattern: slot -> capture id */
	uint16_t *nslots;
	/* Per pattern: slot -> where its node is found before matching (the
	 * root itself, or the root's child pattern of that index, which has a
	 * field), or SLOT_DEEP. */
	uint16_t **slot_at;
};

#define SLOT_DEEP UINT16_MAX       /* below the root's children, or optional */
#define SLOT_ROOT (UINT16_MAX - 1) /* the root node */

_Thread_local uint64_t val_match_tries;

/* --- reading a pattern ---------------------------------------------------- */

struct rd {
	const char *p, *end;
	const TSLanguage *lang;
	const TSQuery *q;
	bool ok;
};

static void skip_ws(struct rd *r)
{
	while (r->p < r->end) {
		if (*r->p == ';') {
			while (r->p < r->end && *r->p != '\n')
				r->p++;
		} else if (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r') {
			r->p++;
		} else {
			break;
		}
	}
}

static bool is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.' || c == '?' || c == '!';
}

/* An identifier-like word; returns its length. Captures and field names
 * never end in '?' or '!', predicate names do. */
static size_t word(struct rd *r, bool names)
{
	const char *s = r->p;
	while (r->p < r->end && is_ident(*r->p) && (names || (*r->p != '?' && *r->p != '.')))
		r->p++;
	return (size_t)(r->p - s);
}

/* Skip a balanced ( ... ) with strings inside: a predicate. */
static void skip_sexp(struct rd *r)
{
	int depth = 0;
	while (r->p < r->end) {
		char c = *r->p++;
		if (c == '"') {
			while (r->p < r->end && *r->p != '"')
				r->p += *r->p == '\\' ? 2 : 1;
			r->p++;
		} else if (c == '(') {
			depth++;
		} else if (c == ')' && --depth == 0) {
			return;
		}
	}
	r->ok = false;
}

static bool is_predicate(struct rd *r)
{
	const char *s = r->p + 1;
	while (s < r->end && (*s == ' ' || *s == '\t' || *s == '\n'))
		s++;
	return *r->p == '(' && s < r->end && *s == '#';
}

static int capture_id(const TSQuery *q, const char *name, size_t len)
{
	uint32_t n = ts_query_capture_count(q);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t l;
		const char *c = ts_query_capture_name_for_id(q, i, &l);
		if (l == len && memcmp(c, name, len) == 0)
			return (int)i;
	}
	return -1;
}

/* Captures and a quantifier after an element. */
static void suffix(struct rd *r, struct mpat *e)
{
	for (;;) {
		skip_ws(r);
		if (r->p < r->end && *r->p == '@') {
			r->p++;
			const char *s = r->p;
			size_t l = word(r, false);
			int id = l ? capture_id(r->q, s, l) : -1;
			if (id < 0 || e->ncaps == MAX_CAPS_PER_NODE) {
				r->ok = false;
				return;
			}
			e->caps[e->ncaps++] = (uint16_t)id;
		} else if (r->p < r->end && *r->p == '?') {
			r->p++;
			e->optional = true;
		} else if (r->p < r->end && (*r->p == '*' || *r->p == '+')) {
			r->ok = false;
			return;
		} else {
			return;
		}
	}
}

static void free_pat(struct mpat *e)
{
	for (uint16_t i = 0; i < e->nkids; i++)
		free_pat(&e->kids[i]);
	free(e->kids);
	e->kids = NULL;
	e->nkids = 0;
}

static bool add_kid(struct mpat *e, struct mpat *kid)
{
	struct mpat *k = realloc(e->kids, sizeof(*k) * (e->nkids + 1u));
	if (!k)
		return false;
	e->kids = k;
	e->kids[e->nkids++] = *kid;
	return true;
}

static void element(struct rd *r, struct mpat *e);

/* The inside of ( name children... ) after the '(' and the name. */
static void node_children(struct rd *r, struct mpat *e)
{
	bool anchor = false;
	for (;;) {
		skip_ws(r);
		if (!r->ok || r->p >= r->end) {
			r->ok = false;
			return;
		}
		char c = *r->p;
		if (c == ')') {
			r->p++;
			if (anchor) {
				if (!e->nkids) { /* ( . ) means nothing we know */
					r->ok = false;
					return;
				}
				e->kids[e->nkids - 1].last = true;
			}
			return;
		}
		if (c == '.') {
			r->p++;
			anchor = true;
			continue;
		}
		if (is_predicate(r)) {
			skip_sexp(r);
			continue;
		}
		struct mpat kid = {0};
		if (is_ident(c) && c != '_') {
			/* field: element */
			const char *s = r->p;
			size_t l = word(r, false);
			skip_ws(r);
			if (!l || r->p >= r->end || *r->p != ':') {
				r->ok = false;
				return;
			}
			r->p++;
			kid.field = ts_language_field_id_for_name(r->lang, s, (uint32_t)l);
			if (!kid.field) {
				r->ok = false;
				return;
			}
			skip_ws(r);
		}
		TSFieldId field = kid.field;
		element(r, &kid);
		kid.field = field;
		kid.anchored = anchor;
		anchor = false;
		if (!r->ok || !add_kid(e, &kid)) {
			free_pat(&kid);
			r->ok = false;
			return;
		}
	}
}

/* One element: (name ...) or (_) or [ ... ], with its captures. */
static void element(struct rd *r, struct mpat *e)
{
	*e = (struct mpat){0};
	skip_ws(r);
	if (r->p >= r->end) {
		r->ok = false;
		return;
	}
	if (*r->p == '[') {
		r->p++;
		e->alt = true;
		for (;;) {
			skip_ws(r);
			if (r->p < r->end && *r->p == ']') {
				r->p++;
				break;
			}
			struct mpat kid;
			element(r, &kid);
			/* An alternative with its own quantifier means more than
			 * "this or that". */
			if (!r->ok || kid.optional || !add_kid(e, &kid)) {
				free_pat(&kid);
				r->ok = false;
				return;
			}
		}
		if (!e->nkids)
			r->ok = false;
	} else if (*r->p == '(') {
		r->p++;
		skip_ws(r);
		const char *s = r->p;
		size_t l = word(r, false);
		if (l == 1 && *s == '_') {
			e->wildcard = true;
		} else if (l) {
			e->sym = ts_language_symbol_for_name(r->lang, s, (uint32_t)l, true);
			if (!e->sym) {
				r->ok = false;
				return;
			}
		} else {
			r->ok = false; /* a group inside a node, or something new */
			return;
		}
		node_children(r, e);
	} else {
		r->ok = false; /* "anonymous" nodes, !fields */
		return;
	}
	if (r->ok)
		suffix(r, e);
}

/* Only '?' on a last child, without a trailing anchor, is known to mean
 * exactly what tree-sitter makes of it. */
static bool shape_ok(const struct mpat *e, bool root)
{
	if (root && (e->alt || e->optional || e->wildcard))
		return false;
	for (uint16_t i = 0; i < e->nkids; i++) {
		const struct mpat *k = &e->kids[i];
		if (k->optional && (e->alt || i + 1 != e->nkids || k->last))
			return false;
		if (!shape_ok(k, false))
			return false;
	}
	return true;
}

/* Pattern i from the query's source: the pattern, or false when it is not
 * of the subset (then tree-sitter matches it). */
static bool read_pattern(struct rd *r, struct mpat *ret)
{
	skip_ws(r);
	if (r->p >= r->end || *r->p != '(')
		return false;
	const char *open = r->p;
	r->p++;
	skip_ws(r);
	struct mpat e = {0};
	if (r->p < r->end && (*r->p == '(' || *r->p == '[')) {
		/* A group: one element, its captures, predicates. */
		bool have = false;
		for (;;) {
			skip_ws(r);
			if (!r->ok || r->p >= r->end) {
				r->ok = false;
				break;
			}
			if (*r->p == ')') {
				r->p++;
				break;
			}
			if (is_predicate(r)) {
				skip_sexp(r);
				continue;
			}
			if (have) { /* two sibling nodes at the top */
				r->ok = false;
				break;
			}
			element(r, &e);
			have = true;
		}
		r->ok = r->ok && have;
	} else {
		r->p = open;
		element(r, &e);
	}
	if (!r->ok || !shape_ok(&e, true)) {
		free_pat(&e);
		return false;
	}
	*ret = e;
	return true;
}

/* Number the captures of e in the order match_el() records them (the
 * node's own, then its kids' in order, every alternative's), writing the
 * ids to slot_cap and the slot numbers into the pattern. */
static bool number_slots(struct mpat *e, uint16_t *slot_cap, uint16_t *n)
{
	for (uint16_t i = 0; i < e->ncaps; i++) {
		if (*n == MAX_MATCH_CAPS)
			return false;
		slot_cap[*n] = e->caps[i];
		e->caps[i] = (*n)++;
	}
	for (uint16_t i = 0; i < e->nkids; i++)
		if (!number_slots(&e->kids[i], slot_cap, n))
			return false;
	return true;
}

/* Whether two patterns have the same shape (captures by slot). */
static bool same_shape(const struct mpat *a, const struct mpat *b)
{
	if (a->alt != b->alt || a->wildcard != b->wildcard || a->anchored != b->anchored ||
	    a->last != b->last || a->optional != b->optional || a->sym != b->sym ||
	    a->field != b->field || a->ncaps != b->ncaps || a->nkids != b->nkids)
		return false;
	for (uint16_t i = 0; i < a->ncaps; i++)
		if (a->caps[i] != b->caps[i])
			return false;
	for (uint16_t i = 0; i < a->nkids; i++)
		if (!same_shape(&a->kids[i], &b->kids[i]))
			return false;
	return true;
}

/* Where each slot's node is before any matching: the root's own captures
 * take the root; a child pattern with a field that is not optional takes a
 * child of the root in that field, of its type (one of them, whatever else
 * the shape asks); any other capture may take a node further down, or
 * none. */
static void where_slots(const struct mpat *root, uint16_t *slot_at)
{
	for (uint16_t i = 0; i < MAX_MATCH_CAPS; i++)
		slot_at[i] = SLOT_DEEP;
	for (uint16_t i = 0; i < root->ncaps; i++)
		slot_at[root->caps[i]] = SLOT_ROOT;
	for (uint16_t k = 0; k < root->nkids; k++) {
		const struct mpat *kid = &root->kids[k];
		if (kid->optional || !kid->field)
			continue;
		for (uint16_t i = 0; i < kid->ncaps; i++)
			slot_at[kid->caps[i]] = k;
	}
}

void val_matcher_free(struct val_matcher *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; m->slot_cap && i < m->npatterns; i++)
		free(m->slot_cap[i]);
	free(m->slot_cap);
	for (uint32_t i = 0; m->slot_at && i < m->npatterns; i++)
		free(m->slot_at[i]);
	free(m->slot_at);
	free(m->nslots);
	free(m->next_same);
	for (uint32_t i = 0; m->pats && i < m->npatterns; i++)
		free_pat(&m->pats[i]);
	free(m->pats);
	free(m->native);
	free(m->first);
	free(m->count);
	free(m->by_sym);
	free(m);
}

int val_matcher_new(const TSLanguage *lang, const TSQuery *q, const char *src, size_t len,
                    struct val_matcher **ret)
{
	struct val_matcher *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->npatterns = ts_query_pattern_count(q);
	m->nsyms = ts_language_symbol_count(lang);
	m->pats = calloc(m->npatterns + 1u, sizeof(*m->pats));
	m->native = calloc(m->npatterns + 1u, sizeof(*m->native));
	m->first = calloc(m->nsyms + 1u, sizeof(*m->first));
	m->count = calloc(m->nsyms + 1u, sizeof(*m->count));
	m->by_sym = calloc(m->npatterns + 1u, sizeof(*m->by_sym));
	m->next_same = calloc(m->npatterns + 1u, sizeof(*m->next_same));
	m->slot_cap = calloc(m->npatterns + 1u, sizeof(*m->slot_cap));
	m->nslots = calloc(m->npatterns + 1u, sizeof(*m->nslots));
	m->slot_at = calloc(m->npatterns + 1u, sizeof(*m->slot_at));
	if (!m->pats || !m->native || !m->first || !m->count || !m->by_sym || !m->next_same ||
	    !m->slot_cap || !m->nslots || !m->slot_at) {
		val_matcher_free(m);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < m->npatterns; i++) {
		uint32_t at = ts_query_start_byte_for_pattern(q, i);
		struct rd r = {.p = src + at, .end = src + len, .lang = lang, .q = q, .ok = true};
		if (at >= len || !read_pattern(&r, &m->pats[i]))
			continue;
		m->slot_cap[i] = calloc(MAX_MATCH_CAPS, sizeof(**m->slot_cap));
		if (!m->slot_cap[i]) {
			val_matcher_free(m);
			return -ENOMEM;
		}
		if (m->pats[i].sym >= m->nsyms ||
		    !number_slots(&m->pats[i], m->slot_cap[i], &m->nslots[i])) {
			free_pat(&m->pats[i]);
			continue;
		}
		m->slot_at[i] = malloc(MAX_MATCH_CAPS * sizeof(**m->slot_at));
		if (!m->slot_at[i]) {
			val_matcher_free(m);
			return -ENOMEM;
		}
		where_slots(&m->pats[i], m->slot_at[i]);
		m->native[i] = true;
		m->nnative++;
	}
	/* Each shape once, at its first pattern; the others follow it. */
	bool *grouped = calloc(m->npatterns + 1u, sizeof(*grouped));
	if (!grouped) {
		val_matcher_free(m);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < m->npatterns; i++)
		m->next_same[i] = UINT32_MAX;
	for (uint32_t i = 0; i < m->npatterns; i++) {
		if (!m->native[i] || grouped[i])
			continue;
		m->count[m->pats[i].sym]++;
		uint32_t last = i;
		for (uint32_t j = i + 1; j < m->npatterns; j++)
			if (m->native[j] && !grouped[j] && same_shape(&m->pats[i], &m->pats[j])) {
				grouped[j] = true;
				m->next_same[last] = j;
				last = j;
			}
	}
	/* Shapes by root symbol, in pattern order within each. */
	uint32_t at = 0;
	for (uint32_t s = 0; s < m->nsyms; s++) {
		m->first[s] = at;
		at += m->count[s];
		m->count[s] = 0;
	}
	for (uint32_t i = 0; i < m->npatterns; i++)
		if (m->native[i] && !grouped[i]) {
			TSSymbol s = m->pats[i].sym;
			m->by_sym[m->first[s] + m->count[s]++] = i;
		}
	free(grouped);
	*ret = m;
	return 0;
}

bool val_matcher_native(const struct val_matcher *m, uint32_t pattern)
{
	return m && pattern < m->npatterns && m->native[pattern];
}

uint32_t val_matcher_count(const struct val_matcher *m)
{
	return m ? m->nnative : 0;
}

const uint16_t *val_matcher_captures(const struct val_matcher *m, uint32_t pattern, uint16_t *ret_n)
{
	*ret_n = val_matcher_native(m, pattern) ? m->nslots[pattern] : 0;
	return *ret_n ? m->slot_cap[pattern] : NULL;
}

/* --- matching -------------------------------------------------------------- */

/* The match in progress: what is left of a parent's children to match.
 * Children are nodes of the flat tree: the first is the parent's index + 1,
 * each next one the previous one's end, the last ends at the parent's. */
struct cont {
	const struct mpat *parent;
	uint32_t i, end; /* the first child it may take; the parent's end */
	uint16_t j;      /* next child pattern */
	struct cont *up;
};

struct result {
	size_t at; /* into ctx->pool */
	uint16_t n;
};

struct mctx {
	const struct val_fnode *t; /* the flat tree */
	TSQueryCapture caps[MAX_MATCH_CAPS];
	uint16_t ncaps;
	bool too_many; /* captures past MAX_MATCH_CAPS: the match is dropped */
	struct result *res;
	size_t nres, cres;
	bool *keep; /* per result: not dropped */
	size_t nkeep;
	TSQueryCapture *pool;
	size_t npool, cpool;
	bool nomem;
	/* The gates' question, and the last node it was asked about with its
	 * answer (a node's name does not change during a run). */
	val_head_fn head;
	void *head_data;
	bool asked, asked_value, named;
	TSNode asked_node;
	char asked_head[3];
};

static void emit(struct mctx *x)
{
	if (x->too_many || x->nomem || x->nres == MAX_RESULTS)
		return;
	if (x->nres == x->cres) {
		size_t nc = x->cres ? x->cres * 2 : 16;
		struct result *r = realloc(x->res, nc * sizeof(*r));
		if (!r) {
			x->nomem = true;
			return;
		}
		x->res = r;
		x->cres = nc;
	}
	if (x->npool + x->ncaps > x->cpool) {
		size_t nc = x->cpool ? x->cpool * 2 : 64;
		while (nc < x->npool + x->ncaps)
			nc *= 2;
		TSQueryCapture *p = realloc(x->pool, nc * sizeof(*p));
		if (!p) {
			x->nomem = true;
			return;
		}
		x->pool = p;
		x->cpool = nc;
	}
	memcpy(x->pool + x->npool, x->caps, x->ncaps * sizeof(*x->caps));
	x->res[x->nres++] = (struct result){.at = x->npool, .n = x->ncaps};
	x->npool += x->ncaps;
}

static void match_el(struct mctx *x, const struct mpat *p, uint32_t n, struct cont *k);

static bool later_named(const struct mctx *x, const struct cont *k, uint32_t c)
{
	for (uint32_t i = x->t[c].end; i < k->end; i = x->t[i].end)
		if (x->t[i].named)
			return true;
	return false;
}

/* Go on with k: its parent's next child pattern against the children left. */
static void run_cont(struct mctx *x, struct cont *k)
{
	if (!k) {
		emit(x);
		return;
	}
	if (x->nres == MAX_RESULTS || x->nomem)
		return;
	if (k->j == k->parent->nkids) {
		run_cont(x, k->up);
		return;
	}
	const struct mpat *e = &k->parent->kids[k->j];
	for (uint32_t c = k->i; c < k->end; c = x->t[c].end) {
		const struct val_fnode *kd = &x->t[c];
		if (e->anchored && !kd->named)
			continue; /* an anchor passes over anonymous nodes */
		bool ok =
		    (!e->field || kd->field == e->field) && !(e->last && later_named(x, k, c));
		if (ok) {
			struct cont next = *k;
			next.j++;
			next.i = kd->end;
			match_el(x, e, c, &next);
		}
		if (e->anchored)
			break; /* only the next named node could be it */
	}
	if (e->optional) {
		struct cont next = *k;
		next.j++;
		run_cont(x, &next);
	}
}

static bool type_ok(const struct mpat *p, const struct val_fnode *n)
{
	if (p->wildcard)
		return n->named && n->sym != ts_builtin_sym_error;
	return n->sym == p->sym;
}

/* Element p against node n, then the rest of the match (k). */
static void match_el(struct mctx *x, const struct mpat *p, uint32_t n, struct cont *k)
{
	uint16_t save = x->ncaps;
	bool save_many = x->too_many;
	for (uint16_t i = 0; i < p->ncaps; i++) {
		if (x->ncaps == MAX_MATCH_CAPS) {
			x->too_many = true;
			break;
		}
		x->caps[x->ncaps++] = (TSQueryCapture){.node = x->t[n].node, .index = p->caps[i]};
	}
	if (p->alt) {
		for (uint16_t i = 0; i < p->nkids; i++)
			match_el(x, &p->kids[i], n, k);
	} else if (type_ok(p, &x->t[n])) {
		if (!p->nkids) {
			run_cont(x, k);
		} else {
			struct cont c = {.parent = p, .i = n + 1, .end = x->t[n].end, .up = k};
			run_cont(x, &c);
		}
	}
	x->ncaps = save;
	x->too_many = save_many;
}

/* Whether a's captures are all in b's. */
static bool caps_within(const TSQueryCapture *a, uint16_t na, const TSQueryCapture *b, uint16_t nb)
{
	for (uint16_t i = 0; i < na; i++) {
		bool found = false;
		for (uint16_t j = 0; j < nb && !found; j++)
			found = a[i].index == b[j].index && ts_node_eq(a[i].node, b[j].node);
		if (!found)
			return false;
	}
	return true;
}

/* Whether gate g lets a match whose slot holds node through. */
static bool gate_open_at(struct mctx *x, const struct val_gate *g, TSNode node)
{
	/* The node and its start (context[0], what ts_node_start_byte()
	 * reads): an alias has the id of the node it names. */
	if (!x->asked || x->asked_node.id != node.id ||
	    x->asked_node.context[0] != node.context[0] || x->asked_value != g->value) {
		x->asked_head[0] = x->asked_head[1] = x->asked_head[2] = '\0';
		x->named = x->head(x->head_data, node, g->value, x->asked_head);
		x->asked_node = node;
		x->asked_value = g->value;
		x->asked = true;
	}
	return x->named && val_re_may_match(g->prefix, x->asked_head);
}

/* Whether gate g lets match r through. */
static bool gate_open(struct mctx *x, const struct val_gate *g, const struct result *r)
{
	const TSQueryCapture *c = NULL;
	for (uint16_t i = 0; i < r->n && !c; i++)
		if (x->pool[r->at + i].index == (uint32_t)g->slot)
			c = &x->pool[r->at + i];
	if (!c)
		return true; /* the predicate holds for a capture that took no node */
	return gate_open_at(x, g, c->node);
}

/* Whether child pattern p could take node n (its type; an alternative's
 * alternatives). */
static bool may_take(const struct mpat *p, const struct val_fnode *n)
{
	if (!p->alt)
		return type_ok(p, n);
	for (uint16_t i = 0; i < p->nkids; i++)
		if (p->kids[i].alt || type_ok(&p->kids[i], n))
			return true;
	return false;
}

/* Whether a match of shape pi at node n could get past the gates of some
 * pattern of the shape that is not skipped. A gate whose slot's node is
 * the root or one of its children in a field (where_slots) is asked about
 * those nodes before matching: a match takes one of them there, so when
 * the gates of every pattern refuse every one of them, no match of the
 * shape would reach fn, and the shape is not matched. Most calls' names
 * begin no name the dozen patterns of a call's shape look for. */
static bool may_pass(struct mctx *x, const struct val_matcher *m, uint32_t pi, uint32_t n,
                     const bool *skip, const struct val_gate *gates)
{
	for (uint32_t q = pi; q != UINT32_MAX; q = m->next_same[q]) {
		if (skip && skip[q])
			continue;
		const struct val_gate *g = &gates[q];
		if (g->slot < 0 || g->slot >= MAX_MATCH_CAPS)
			return true;
		uint16_t at = m->slot_at[q][g->slot];
		if (at == SLOT_DEEP)
			return true;
		if (at == SLOT_ROOT) {
			if (gate_open_at(x, g, x->t[n].node))
				return true;
			continue;
		}
		const struct mpat *kid = &m->pats[q].kids[at];
		for (uint32_t c = n + 1; c < x->t[n].end; c = x->t[c].end)
			if (x->t[c].field == kid->field && may_take(kid, &x->t[c]) &&
			    gate_open_at(x, g, x->t[c].node))
				return true;
	}
	return false;
}

/* The matches of pattern pi at node n, each handed to fn. */
static int match_at(struct mctx *x, const struct val_matcher *m, uint32_t pi, uint32_t n,
                    const bool *skip, const struct val_gate *gates, val_match_fn fn, void *data)
{
	/* A shape whose patterns all report rules that are off is not
	 * matched at all (PY-FILE-WRITE's four in the standard profile). */
	if (skip) {
		uint32_t q = pi;
		while (q != UINT32_MAX && skip[q])
			q = m->next_same[q];
		if (q == UINT32_MAX)
			return 0;
	}
	if (gates && !may_pass(x, m, pi, n, skip, gates))
		return 0;
	val_match_tries++;
	x->nres = x->npool = 0;
	x->ncaps = 0;
	x->too_many = false;
	match_el(x, &m->pats[pi], n, NULL);
	if (x->nomem)
		return -ENOMEM;
	if (!x->nres)
		return 0; /* the shape does not match here: nothing to hand on */
	if (x->nkeep < x->nres) {
		bool *k = realloc(x->keep, x->cres * sizeof(*k));
		if (!k)
			return -ENOMEM;
		x->keep = k;
		x->nkeep = x->cres;
	}
	for (size_t a = 0; a < x->nres; a++) {
		const struct result *ra = &x->res[a];
		const TSQueryCapture *ca = x->pool + ra->at;
		/* Dropped: a match whose captures another one holds too (the
		 * one that skipped a '?'), and the later of two equal ones. */
		bool drop = false;
		for (size_t b = 0; b < x->nres && !drop; b++) {
			if (b == a)
				continue;
			const struct result *rb = &x->res[b];
			const TSQueryCapture *cb = x->pool + rb->at;
			if (caps_within(ca, ra->n, cb, rb->n))
				drop = rb->n > ra->n || (rb->n == ra->n && b < a);
		}
		x->keep[a] = !drop;
	}
	/* Each pattern of the shape, in pattern order, takes every match,
	 * its slots named by its own captures. */
	for (uint32_t q = pi; q != UINT32_MAX; q = m->next_same[q]) {
		if (skip && skip[q])
			continue;
		const struct val_gate *g = gates && gates[q].slot >= 0 ? &gates[q] : NULL;
		for (size_t a = 0; a < x->nres; a++) {
			if (!x->keep[a])
				continue;
			const struct result *ra = &x->res[a];
			if (g && !gate_open(x, g, ra))
				continue;
			TSQueryCapture caps[MAX_MATCH_CAPS];
			for (uint16_t i = 0; i < ra->n; i++)
				caps[i] = (TSQueryCapture){
				    .node = x->pool[ra->at + i].node,
				    .index = m->slot_cap[q][x->pool[ra->at + i].index],
				};
			TSQueryMatch qm = {
			    .pattern_index = (uint16_t)q,
			    .capture_count = ra->n,
			    .captures = caps,
			};
			int r = fn(data, &qm);
			if (r != 0)
				return r;
		}
	}
	return 0;
}

int val_matcher_run(const struct val_matcher *m, const struct val_flat *f, const bool *skip,
                    const struct val_gate *gates, val_head_fn head, val_match_fn fn, void *data)
{
	struct mctx x = {.t = f->n, .head = head, .head_data = data};
	if (!head)
		gates = NULL;
	int r = 0;
	for (uint32_t n = 0; n < f->count && r == 0; n++) {
		TSSymbol s = f->n[n].sym;
		if (s < m->nsyms)
			for (uint32_t i = 0; i < m->count[s] && r == 0; i++)
				r = match_at(&x, m, m->by_sym[m->first[s] + i], n, skip, gates, fn,
				             data);
	}
	free(x.res);
	free(x.keep);
	free(x.pool);
	return r < 0 ? r : 0;
}
