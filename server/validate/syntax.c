/* syntax.c: the parse on a CPU-time budget, and syntax diagnostics from
 * tree-sitter's ERROR and MISSING nodes, with the narrowest range that
 * still points at the problem and a message a person understands
 * ("expected ':' after the if condition"). */
#include "validate/internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* The shortest wall-clock slice a parse is resumed for. */
#define PARSE_SLICE_MIN_US 10000

/* This thread's CPU time in microseconds; UINT64_MAX when it cannot be
 * read (the budget is then taken as spent). */
static uint64_t thread_cpu_us(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return UINT64_MAX;
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* tree-sitter times a parse on the wall clock, but the validator's thread
 * runs niced: on a busy machine it waits for a core, and code it parses in
 * a tenth of a second of CPU would run out of wall-clock time and be
 * refused as too complex. So the budget is this thread's CPU time:
 * tree-sitter's wall-clock timeout is the budget not yet spent (wall time
 * is never less than CPU time), and when it runs out with CPU time left,
 * the parse resumes where it stopped. On an idle machine that is one
 * slice, as before. */
TSTree *val_parse(TSParser *p, const struct val_doc *d, uint64_t budget)
{
	uint64_t start = thread_cpu_us(), used = 0;
	TSTree *tree = NULL;
	ts_parser_set_cancellation_flag(p, (const size_t *)d->cancel);
	while (start != UINT64_MAX) {
		uint64_t slice = budget - used;
		if (slice < PARSE_SLICE_MIN_US)
			slice = PARSE_SLICE_MIN_US;
		ts_parser_set_timeout_micros(p, slice);
		tree = ts_parser_parse_string(p, NULL, d->code, (uint32_t)d->len);
		if (tree || val_cancelled(d))
			break;
		uint64_t now = thread_cpu_us();
		if (now == UINT64_MAX || (used = now - start) >= budget)
			break;
	}
	ts_parser_set_cancellation_flag(p, NULL);
	return tree;
}

/* Broken code cascades: after a few errors the rest is noise. */
#define MAX_SYNTAX_DIAGS 5

/* The first leaf inside n that has some text, or n itself. */
static TSNode first_token(TSNode n)
{
	while (ts_node_child_count(n) > 0) {
		TSNode c = ts_node_child(n, 0);
		if (ts_node_end_byte(c) == ts_node_start_byte(c))
			break;
		n = c;
	}
	return n;
}

static void humanize(const char *type, char *out, size_t osz)
{
	snprintf(out, osz, "%s", type);
	for (char *p = out; *p; p++)
		if (*p == '_')
			*p = ' ';
}

static void add(struct val_doc *d, TSNode n, TSNode parent, bool missing, enum val_severity sev,
                const char *code, const char *suffix)
{
	char msg[400], where[96] = "", tok[VAL_VALUE_MAX], pname[64] = "";
	const char *ptype = ts_node_is_null(parent) ? NULL : ts_node_type(parent);
	/* The top level and error regions say nothing useful about where. */
	if (ptype && strcmp(ptype, "module") && strcmp(ptype, "program") && strcmp(ptype, "ERROR"))
		humanize(ptype, pname, sizeof(pname));
	uint32_t s, e;
	if (missing) {
		const char *want = ts_node_type(n);
		const char *phrase = ptype ? d->lang->describe(ptype, want) : NULL;
		if (phrase)
			snprintf(where, sizeof(where), " %s", phrase);
		else if (pname[0])
			snprintf(where, sizeof(where), " in this %s", pname);
		/* Named tokens (identifier, ...) read better without quotes. */
		if (ts_node_is_named(n))
			snprintf(msg, sizeof(msg), "expected %s%s", want, where);
		else
			snprintf(msg, sizeof(msg), "expected '%s'%s", want, where);
		s = e = ts_node_start_byte(n);
	} else {
		TSNode t = first_token(n);
		s = ts_node_start_byte(t);
		e = ts_node_end_byte(t);
		if (e > s + 40)
			e = s + 40; /* a huge error region: point at its start */
		val_node_text(d, t, tok);
		char *nl = strchr(tok, '\n');
		if (nl)
			*nl = '\0';
		if (strlen(tok) > 30)
			strcpy(tok + 27, "...");
		if (pname[0])
			snprintf(where, sizeof(where), " in this %s", pname);
		if (d->lang->explain && d->lang->explain(d, n, msg, sizeof(msg), &s, &e))
			; /* the language knows better */
		else if (!tok[0] || s >= d->len)
			snprintf(msg, sizeof(msg), "unexpected end of the code%s", where);
		else
			snprintf(msg, sizeof(msg), "unexpected '%.32s'%s", tok, where);
	}
	if (suffix)
		strncat(msg, suffix, sizeof(msg) - strlen(msg) - 1);
	val_add(d, s, e, sev, code, msg, NULL);
}

/* The first ERROR or MISSING node in document order, depth first with a
 * cursor (no recursion: nesting is unbounded); false when there is none. */
static bool next_error(TSTreeCursor *c, bool first)
{
	for (;;) {
		if (!first) {
			while (!ts_tree_cursor_goto_next_sibling(c))
				if (!ts_tree_cursor_goto_parent(c))
					return false;
		}
		first = false;
		for (;;) {
			TSNode n = ts_tree_cursor_current_node(c);
			if (ts_node_is_missing(n) || strcmp(ts_node_type(n), "ERROR") == 0)
				return true;
			if (!ts_node_has_error(n) || !ts_tree_cursor_goto_first_child(c))
				break;
		}
	}
}

bool val_syntax_first(struct val_doc *d, TSNode root, uint32_t *ret_start, uint32_t *ret_end)
{
	if (!ts_node_has_error(root))
		return false;
	TSTreeCursor c = ts_tree_cursor_new(root);
	bool found = next_error(&c, true);
	if (found) {
		TSNode n = ts_tree_cursor_current_node(&c);
		if (ts_node_is_missing(n)) {
			*ret_start = *ret_end = ts_node_start_byte(n);
		} else {
			/* An ERROR region holds what tree-sitter read before it gave
			 * up and the tokens it skipped: the last token with text is
			 * the one that did not fit ("function f( {" ends at "{"). */
			TSNode t = n;
			while (ts_node_child_count(t) > 0) {
				uint32_t k = ts_node_child_count(t);
				TSNode last = ts_node_child(t, k - 1);
				while (k > 1 && ts_node_end_byte(last) == ts_node_start_byte(last))
					last = ts_node_child(t, --k - 1);
				t = last;
			}
			*ret_start = ts_node_start_byte(t);
			*ret_end = ts_node_end_byte(t);
		}
		if (*ret_end > d->len)
			*ret_end = (uint32_t)d->len;
		if (*ret_start > *ret_end)
			*ret_start = *ret_end;
	}
	ts_tree_cursor_delete(&c);
	return found;
}

size_t val_syntax_errors(struct val_doc *d, TSNode root, enum val_severity sev, const char *code,
                         const char *suffix)
{
	size_t added = 0;
	/* Depth-first with a cursor (no recursion: nesting is unbounded). */
	TSTreeCursor c = ts_tree_cursor_new(root);
	for (;;) {
		TSNode n = ts_tree_cursor_current_node(&c);
		bool descend = ts_node_has_error(n);
		if (ts_node_is_missing(n) || strcmp(ts_node_type(n), "ERROR") == 0) {
			add(d, n, ts_node_parent(n), ts_node_is_missing(n), sev, code, suffix);
			descend = false;
			if (++added == MAX_SYNTAX_DIAGS)
				break;
		}
		if (descend && ts_tree_cursor_goto_first_child(&c))
			continue;
		while (!ts_tree_cursor_goto_next_sibling(&c))
			if (!ts_tree_cursor_goto_parent(&c))
				goto out;
	}
out:
	ts_tree_cursor_delete(&c);
	return added;
}
