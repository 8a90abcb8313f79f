/* internal.h: what the validator's files share and nothing else sees: the
 * language table with its per-language name resolution, the compiled rule
 * sets, and the per-check document state. */
#pragma once

#include <json-c/json.h>
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tree_sitter/api.h>

#include "core/position.h"
#include "validate/validate.h"

/* Longest qualified name or folded string the rules look at; longer values
 * are cut, which only makes a rule miss a name nobody writes. */
#define VAL_VALUE_MAX 512
/* How deep name resolution and folding recurse (a.b.c..., 'a'+'b'+...). */
#define VAL_DEPTH_MAX 48

struct val_doc;

struct val_lang {
	/* The canonical name of the language (core/lang.h); a struct lang
	 * names the grammar that checks it by this name (lang->validator). */
	const char *name;
	const TSLanguage *(*ts)(void);
	/* Walk the tree once (d->flat), recording which names are bound to
	 * what (imports, require(), simple assignments) in d's alias table. */
	void (*collect)(struct val_doc *d);
	/* The node's value as a constant string (literals, concatenations of
	 * literals); false when it is not constant. out holds VAL_VALUE_MAX. */
	bool (*fold)(struct val_doc *d, TSNode n, char *out, int depth);
	/* The node's text as the language reads it, when that is not its
	 * source bytes (Python folds identifiers NFKC: 'ｏs' is os); false
	 * for the source text. May be NULL. */
	bool (*name_text)(struct val_doc *d, TSNode n, char *out);
	/* The node's qualified name with aliases resolved ("o.system" after
	 * "import os as o" is "os.system"); false when it has none. */
	bool (*qname)(struct val_doc *d, TSNode n, char *out, int depth);
	/* Where a missing token belongs, in words for syntax messages: for
	 * parent "if_statement" and missing ":", "after the if condition".
	 * NULL when the language has nothing better than the node type. */
	const char *(*describe)(const char *parent, const char *missing);
	/* A better message for an ERROR region than "unexpected 'tok'", with
	 * its byte range; false to keep the generic one. May be NULL. */
	bool (*explain)(struct val_doc *d, TSNode err, char *msg, size_t msz, uint32_t *ret_start,
	                uint32_t *ret_end);
};

/* The grammar that checks the language called name (any name or alias
 * the registry knows), or NULL. */
const struct val_lang *val_lang_find(const char *name);
extern const struct val_lang *const val_langs[];
extern const struct val_lang val_lang_python, val_lang_bash, val_lang_javascript;
extern const size_t val_langs_count;
/* ts_table.c: the TSLanguage the parser is given for lang: the grammar's
 * own, or a copy of it whose parse table is laid out whole (every lookup
 * one read, the same values; made at the first call, kept for the
 * process). Queries are made with the grammar's own (lang->ts()). */
const TSLanguage *val_ts_language(const struct val_lang *lang);
/* A new copy of own with its parse table laid out whole, to be freed with
 * val_ts_whole_free(); NULL when the table would pass the cap (2 MiB), or
 * on no memory. */
const TSLanguage *val_ts_whole(const TSLanguage *own);
void val_ts_whole_free(const TSLanguage *l);
/* What val_ts_language() has answered for lang so far, or NULL before its
 * first call (for tests). */
const TSLanguage *val_ts_made(const struct val_lang *lang);

struct val_rule {
	char *id;
	char *category;
	char *message;
	char *explanation;
};

/* re_prefix.c: the one-byte values a regex matches and the first two
 * bytes of the longer ones (pairs hashed into VAL_RE_PAIR_BITS bits), when
 * it can tell (the regex anchored with ^, never matching the empty value):
 * a value that starts otherwise does not match, without regexec(). */
#define VAL_RE_PAIR_BITS 4096
struct val_re_prefix {
	bool known;
	uint64_t one[4];
	uint64_t pair[VAL_RE_PAIR_BITS / 64];
};
void val_re_prefix(const char *src, struct val_re_prefix *ret);
/* Where pair a, b sits in a struct val_re_prefix's bitmap. */
static inline unsigned val_re_pair_bit(unsigned char a, unsigned char b)
{
	return ((unsigned)a * 263u ^ (unsigned)b * 911u) % VAL_RE_PAIR_BITS;
}
/* False when value cannot match; true when regexec() must say. regexec()
 * finds a match at the start of the value, not the whole value: a
 * one-byte match is enough, else a longer one's first two bytes. */
static inline bool val_re_may_match(const struct val_re_prefix *p, const char *value)
{
	if (!p->known)
		return true;
	unsigned char a = (unsigned char)value[0], b = a ? (unsigned char)value[1] : 0;
	if (!a)
		return false;
	if (p->one[a >> 6] >> (a & 63) & 1)
		return true;
	unsigned i = val_re_pair_bit(a, b);
	return b && (p->pair[i >> 6] >> (i & 63) & 1);
}

enum val_pred_op {
	VAL_P_EQ,
	VAL_P_NOT_EQ,
	VAL_P_MATCH,
	VAL_P_NOT_MATCH,
	VAL_P_ANY_OF,
	VAL_P_QNAME_MATCH,
	VAL_P_NOT_QNAME_MATCH,
	VAL_P_NOT_LITERAL,
	VAL_P_IS_MODULE,
	VAL_P_OUTSIDE,
	VAL_P_NOT_CONTAINS,
};

struct val_pred {
	enum val_pred_op op;
	uint32_t cap;
	int cap2; /* second capture for #eq? @a @b, else -1 */
	char **strs;
	size_t nstrs;
	regex_t re;
	regex_t re2;
	/* Its regexes (strs[0], strs[1]): want_re of them, nre compiled so
	 * far (an embedded file's at their first use, rules.c). */
	int nre, want_re;
	/* What a match of re can start with (re_prefix.c). */
	struct val_re_prefix re_prefix;
};

struct val_pattern {
	struct val_pred *preds;
	size_t npreds;
};

/* tree.c: the tree read once per check, by one walk of tree-sitter's own
 * subtrees: every visible node in preorder. Node i's children are i + 1,
 * then each one's end, up to n[i].end; its next sibling (if any) is
 * n[i].end. */
struct val_fnode {
	TSNode node;
	uint32_t end;    /* one past the last node of its subtree */
	TSSymbol sym;    /* ts_node_symbol(): the alias when it has one */
	TSFieldId field; /* the field it is in under its parent, 0 for none */
	bool named;
};
struct val_open; /* tree.c's: a parent whose children the walk is going through */
struct val_flat {
	struct val_fnode *n;
	uint32_t count, cap;
	struct val_open *stack; /* the walk's open parents */
	uint32_t cstack;
};
/* Read the tree under root into f (its buffers reused). -ENOMEM. */
int val_flat_read(struct val_flat *f, TSNode root);
/* After a check: empty, the buffers kept unless they grew large. */
void val_flat_trim(struct val_flat *f);
void val_flat_free(struct val_flat *f);

/* match.c: the rule patterns matched by kiln's own walk of the tree
 * (the subset of the query language the rule files use), instead of
 * tree-sitter's query cursor, which costs about 1000 instructions a node.
 * Patterns outside the subset are left to tree-sitter. */
struct val_matcher;
/* Read q's patterns from its source src[0..len); -ENOMEM only. */
int val_matcher_new(const TSLanguage *lang, const TSQuery *q, const char *src, size_t len,
                    struct val_matcher **ret);
void val_matcher_free(struct val_matcher *m);
/* Whether pattern is matched by m (else by tree-sitter's cursor). */
bool val_matcher_native(const struct val_matcher *m, uint32_t pattern);
uint32_t val_matcher_count(const struct val_matcher *m);
/* The capture ids a native pattern's matches can hold (*ret_n of them,
 * repeats included); NULL with 0 for a pattern tree-sitter matches. */
const uint16_t *val_matcher_captures(const struct val_matcher *m, uint32_t pattern,
                                     uint16_t *ret_n);
/* Called for each match; nonzero stops the walk (and is returned when
 * negative). */
typedef int (*val_match_fn)(void *data, const TSQueryMatch *m);
/* A native pattern's gate: a match reaches fn only when the name of the
 * node in slot (its place in the shape, -1 for no gate) is one that
 * prefix may let through (val_re_may_match), or when no node took that
 * slot. rules.c gives a pattern the gate of its first #qname-match? whose
 * prefix is known, a predicate its take_match() would refuse the match
 * by: the dozen patterns of a call's shape ask the name's first bytes
 * once per node instead of each going through take_match(). */
struct val_gate {
	int slot;
	const struct val_re_prefix *prefix;
	/* The gate of a #match? (a pattern with no #qname-match? to gate on):
	 * the first bytes of the node's value, not of its name. */
	bool value;
};
/* The first two bytes of n's name (of its value when value is true) into
 * head[0..1] (head[1] 0 when it has one byte); false when n has no name. */
typedef bool (*val_head_fn)(void *data, TSNode n, bool value, char head[2]);
/* Go through the tree read into f once, calling fn for each match of m's
 * patterns, by node in document order; patterns marked in skip (indexed
 * by pattern, NULL for none) are not matched; gates (indexed by pattern,
 * NULL for none) are asked through head. -ENOMEM. */
int val_matcher_run(const struct val_matcher *m, const struct val_flat *f, const bool *skip,
                    const struct val_gate *gates, val_head_fn head, val_match_fn fn, void *data);
/* Shapes matched at a node by this thread's runs so far (a shape whose
 * gates refuse the nodes it would take is not matched): for tests. */
extern _Thread_local uint64_t val_match_tries;

struct val_ruleset {
	const struct val_lang *lang;
	TSQuery *query;
	/* The patterns kiln matches itself (NULL: all by tree-sitter), and
	 * whether any is left to tree-sitter's cursor. */
	struct val_matcher *matcher;
	bool ts_rest;
	/* From the embedded files: each predicate's regexes are compiled at
	 * their first use (a rules folder's at its load, where a bad one is
	 * reported). */
	bool lazy_re;
	struct val_rule *rules;
	size_t nrules;
	int *cap_rule; /* per capture id: index into rules, or -1 for helpers */
	struct val_pattern *patterns;
	size_t npatterns;
	/* Each rule's severity and the patterns not to match (every rule
	 * they report is off) under the profile of the last check,
	 * val_rules_run()'s: worked out again when the profile changes. */
	const json_object *sev_profile;
	enum val_severity *sev;
	bool *skip;
	/* Per pattern, the matcher's gate (NULL without a matcher). */
	struct val_gate *gates;
};

/* Load language's rule set from the embedded files (or dir when not NULL);
 * ts_only: every pattern by tree-sitter's query cursor, none by match.c.
 * -EINVAL with a sentence in detail for a broken file. */
int val_ruleset_load(const struct val_lang *lang, const char *dir, bool ts_only,
                     struct val_ruleset **ret, char *detail, size_t dsz);
void val_ruleset_free(struct val_ruleset *rs);
/* rule_file.c: read a whole rule file (embedded or from dir); caller
 * frees. */
int val_rule_file_read(const char *dir, const char *name, char **ret_data, size_t *ret_len);

struct val_alias {
	char *name;
	char *target;
	bool module;
	uint32_t hash; /* of name (lang_common.c) */
};

struct val_memo;

struct val_doc {
	const char *code;
	size_t len;
	const struct val_lang *lang;
	const char *workspace;         /* may be NULL */
	const volatile size_t *cancel; /* may be NULL: stop when it becomes non-zero */
	struct val_report *out;        /* where findings go */
	struct val_alias *aliases;
	size_t naliases;
	size_t caliases;
	struct val_memo *memo; /* rules.c's, while the rules run; NULL otherwise */
	struct val_flat *flat; /* the tree, read by val_rules_run() before collect */
};

/* findings.c: the node's source text, copied into out (VAL_VALUE_MAX,
 * cut). */
void val_node_text(struct val_doc *d, TSNode n, char *out);
/* The node's text as the language reads it (lang->name_text), else its
 * source text. */
void val_node_name(struct val_doc *d, TSNode n, char *out);
/* The node's string for predicates: its folded value when constant, else
 * its text as the language reads it (val_node_name). */
void val_node_value(struct val_doc *d, TSNode n, char *out);
/* lang_common.c: record name -> target (copies); later bindings replace
 * earlier ones. */
void val_alias_set(struct val_doc *d, const char *name, const char *target, bool module);
const struct val_alias *val_alias_get(struct val_doc *d, const char *name);

/* findings.c: add a finding for bytes [start, end) to the document's
 * report (the strings are copied; code and explanation may be NULL).
 * -ENOMEM. */
int val_add(struct val_doc *d, uint32_t start, uint32_t end, enum val_severity sev,
            const char *code, const char *message, const char *explanation);
/* findings.c: rule r's severity in profile (a borrowed JSON map): its id's
 * entry, else its category's, else off. */
enum val_severity val_severity_for(json_object *profile, const struct val_rule *r);
/* "error", "warning", "information" (or "info"), "hint", "off"; -EINVAL
 * for another name. */
int val_severity_parse(const char *s, enum val_severity *ret);
/* Whether the check was cancelled. */
static inline bool val_cancelled(const struct val_doc *d)
{
	return d->cancel && __atomic_load_n(d->cancel, __ATOMIC_RELAXED);
}

/* Parse the document's code with p (its language set) on a budget of
 * budget microseconds of this thread's CPU time, tree-sitter stopping at
 * the document's cancel flag; NULL when the budget ran out or the check
 * was cancelled (the parser is then left to resume: ts_parser_reset()
 * it). */
TSTree *val_parse(TSParser *p, const struct val_doc *d, uint64_t budget);

/* Diagnostics from ERROR and MISSING nodes (at most a few), added to the
 * report with severity sev and code; the number added. suffix (may be
 * NULL) is appended to each message. */
size_t val_syntax_errors(struct val_doc *d, TSNode root, enum val_severity sev, const char *code,
                         const char *suffix);
/* The byte range tree-sitter blames for the first syntax error (the
 * narrowest token it could not use, or where a missing one belongs);
 * false when the tree has none. */
bool val_syntax_first(struct val_doc *d, TSNode root, uint32_t *ret_start, uint32_t *ret_end);

/* Run rs over the tree; add diagnostics for matches whose rule's severity
 * in profile (a borrowed JSON map) is not off. */
int val_rules_run(struct val_doc *d, struct val_ruleset *rs, TSNode root, json_object *profile);

/* Text that does not show what runs (rules/text.json): control
 * characters, bidirectional overrides and isolates, invisible characters
 * outside strings and comments. Loaded once, read-only afterwards. */
struct val_text;
int val_text_load(const char *dir, struct val_text **ret, char *detail, size_t dsz);
void val_text_free(struct val_text *t);
/* Add a finding for each such character in the document (each run of
 * the same rule is one finding), under profile. */
int val_text_scan(struct val_doc *d, const struct val_text *t, TSNode root, json_object *profile);

/* The syntax worker: CPython in kiln's sandbox (sandbox/box/worker.h), which
 * compiles Python itself and runs bash -n and node --check, in the same
 * box, for the other languages. */
struct val_pyworker;
struct val_pyworker *val_pyworker_new(const char *python, int timeout_ms);
void val_pyworker_free(struct val_pyworker *w);
/* Which real parser a check asks for: python (compile()), bash (bash -n),
 * javascript (node --check). */
enum val_parser {
	VAL_PARSE_PYTHON,
	VAL_PARSE_BASH,
	VAL_PARSE_NODE,
};
/* The first error a real parser reports. Lines are 0-based LSP lines; a
 * column is a byte column or -1 when the parser gave none; eof says the
 * error is the end of the code (an unclosed construct). */
struct val_pyerror {
	uint32_t line, end_line;
	int32_t col, end_col;
	bool eof;
	char msg[256];
};
/* 1 and the first error when the parser rejects the code, 0 when it
 * accepts it, -errno when no answer could be had (no such program, a
 * timeout, a crash: the caller falls back to tree-sitter); -ECANCELED as
 * soon as cancel (may be NULL) becomes non-zero, the worker then stopped.
 * For bash and node, argv0 is the program's absolute path. */
int val_pyworker_check(struct val_pyworker *w, enum val_parser p, const char *argv0,
                       const char *code, size_t len, const volatile size_t *cancel,
                       struct val_pyerror *ret_err);
/* Send the same request val_pyworker_check would, without waiting for
 * the answer, so the parser works while the caller does (tree-sitter and
 * the rules); the next val_pyworker_check, with the same arguments, reads
 * it. 0 when sent; -errno otherwise (the check then asks as usual). A
 * caller that does not check after all calls val_pyworker_drop. */
int val_pyworker_send(struct val_pyworker *w, enum val_parser p, const char *argv0,
                      const char *code, size_t len, const volatile size_t *cancel);
/* Read one answer line from the worker's socket fd (non-blocking) into
 * out (NUL-terminated, without its newline), waiting until deadline (a
 * loop_now_ms() value): 0, or -errno (-ECANCELED as soon as cancel turns
 * non-zero, -ETIMEDOUT, -EPIPE at its end). With spin_us, the first
 * spin_us microseconds of waiting are spent awake (reading again), not
 * asleep in poll(); *ret_slept says whether it slept. */
int val_pyworker_read_line(int fd, char *out, size_t osz, uint64_t deadline,
                           const volatile size_t *cancel, unsigned spin_us, bool *ret_slept);
/* Whether to wait awake for the next Python answer: spin budgets that
 * back off after a spin that did not see the answer (the worker was
 * waiting for the spinning CPU, or slow). */
struct val_spin {
	unsigned skip; /* answers still to await asleep at once */
};
/* The spin budget (microseconds, 0: none) for the next answer. */
unsigned val_spin_budget(struct val_spin *sp);
/* How the answer awaited with budget spin_us came: slept says it was not
 * seen during the spin. */
void val_spin_result(struct val_spin *sp, unsigned spin_us, bool slept);
/* Forget a request sent and not read: the worker is stopped (its answer
 * would be read as the next one's). */
void val_pyworker_drop(struct val_pyworker *w);
/* Why the last check got no answer from CPython, as a clause ("the
 * sandbox could not be built (...)", "it did not answer within 2000 ms"). */
const char *val_pyworker_why(const struct val_pyworker *w);

/* The validator's threads (async.c), one a lane (VAL_LANES). async.c
 * sits above validate.c: it builds validators and runs their checks. So
 * the validator keeps its lanes in a slot whose free function async.c
 * sets when it fills it, and val_free() stops them through that:
 * validate.c never names async.c's code. */
struct val_async;
#define VAL_LANES 2
struct val_async_slot {
	struct val_async *lane[VAL_LANES]; /* NULL until a check needs it */
	void (*free)(struct val_async *a);
};
/* The validator's config section (a private copy; NULL for defaults) and
 * the slot its thread lives in. */
json_object *val_config(const struct validator *v);
struct val_async_slot *val_async_slot(struct validator *v);

/* tree-sitter's allocator (ts_alloc.c): a free list per size class and
 * thread in front of malloc, at most VAL_TS_CACHE_MAX blocks a thread.
 * val_new installs it (once per process); the rest are for tests. */
#define VAL_TS_CACHE_MAX 4096
void val_ts_alloc_install(void);
size_t val_ts_alloc_cached(void); /* blocks the calling thread holds */
void val_ts_alloc_flush(void);    /* gives them back to malloc */
