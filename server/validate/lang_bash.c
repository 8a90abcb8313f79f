/* lang_bash.c: what the validator knows about bash beyond the grammar:
 * the constant value of words however they are quoted (c""url, $'\x63url'),
 * variables assigned a constant (c=curl; $c), and words for syntax
 * messages. */
#include <stdio.h>

#include "validate/lang_common.h"

const TSLanguage *tree_sitter_bash(void);

static bool sh_fold(struct val_doc *d, TSNode n, char *out, int depth);

/* Backslash quoting outside quotes: \x is x, and a backslash before a
 * newline joins the lines (ev\<newline>al is eval). A word holds no
 * unquoted blank; the grammar still hands over "\n\\eval" as one word
 * after an assignment on the line before (x=1, then \eval: bash runs
 * eval), so a word's blanks are dropped as bash drops them between
 * words; in a string (word false) they are its text. */
static bool unquote_word(const char *s, size_t n, char *out, bool word)
{
	for (size_t i = 0; i < n; i++) {
		if (word && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n'))
			continue;
		if (s[i] == '\\' && i + 1 < n) {
			if (s[++i] == '\n')
				continue;
		}
		if (!val_cat(out, s + i, 1))
			return false;
	}
	return true;
}

/* A backslash-newline between two words' characters (ev\<newline>al) is
 * removed by bash, joining them into one word (eval); the grammar reads
 * it as a blank, and two words. Appends to out the words that go on
 * from byte e so, as bash reads them. */
static bool join_continued(struct val_doc *d, TSNode n, uint32_t e, char *out)
{
	TSNode root = ts_tree_root_node(n.tree);
	while (e + 2 < d->len && d->code[e] == '\\' && d->code[e + 1] == '\n' &&
	       d->code[e + 2] != ' ' && d->code[e + 2] != '\t' && d->code[e + 2] != '\n') {
		TSNode next = ts_node_named_descendant_for_byte_range(root, e + 2, e + 3);
		if (ts_node_is_null(next) || ts_node_start_byte(next) != e + 2 ||
		    (!val_type_is(next, "word") && !val_type_is(next, "number")))
			return true;
		uint32_t ne = ts_node_end_byte(next);
		if (ne > d->len || !unquote_word(d->code + e + 2, ne - e - 2, out, true))
			return false;
		e = ne;
	}
	return true;
}

static bool sh_fold_into(struct val_doc *d, TSNode n, char *out, int depth)
{
	if (depth > VAL_DEPTH_MAX || ts_node_is_null(n))
		return false;
	const char *t = ts_node_type(n);
	uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
	if (strcmp(t, "word") == 0 || strcmp(t, "number") == 0)
		return unquote_word(d->code + s, e - s, out, true) && join_continued(d, n, e, out);
	if (strcmp(t, "raw_string") == 0)
		return e - s >= 2 && val_cat(out, d->code + s + 1, e - s - 2);
	if (strcmp(t, "ansi_c_string") == 0)
		return e - s >= 3 && val_unescape(out, d->code + s + 2, e - s - 3);
	if (strcmp(t, "string") == 0) {
		uint32_t k = ts_node_child_count(n);
		for (uint32_t i = 0; i < k; i++) {
			TSNode c = ts_node_child(n, i);
			const char *ct = ts_node_type(c);
			uint32_t cs = ts_node_start_byte(c), ce = ts_node_end_byte(c);
			if (strcmp(ct, "\"") == 0)
				continue;
			if (strcmp(ct, "string_content") != 0 ||
			    !unquote_word(d->code + cs, ce - cs, out, false))
				return false;
		}
		return true;
	}
	if (strcmp(t, "concatenation") == 0 || strcmp(t, "command_name") == 0) {
		uint32_t k = ts_node_child_count(n);
		for (uint32_t i = 0; i < k; i++)
			if (!sh_fold_into(d, ts_node_child(n, i), out, depth + 1))
				return false;
		return k > 0;
	}
	if (strcmp(t, "simple_expansion") == 0 || strcmp(t, "expansion") == 0) {
		/* $c or ${c} of a variable that was assigned a constant. */
		char name[VAL_VALUE_MAX];
		TSNode v = ts_node_named_child(n, 0);
		if (ts_node_is_null(v) || !val_type_is(v, "variable_name") ||
		    ts_node_named_child_count(n) != 1)
			return false;
		val_node_text(d, v, name);
		const struct val_alias *a = val_alias_get(d, name);
		return a && val_cats(out, a->target);
	}
	return false;
}

static bool sh_fold(struct val_doc *d, TSNode n, char *out, int depth)
{
	out[0] = '\0';
	return sh_fold_into(d, n, out, depth);
}

static void sh_visit(struct val_doc *d, TSNode n)
{
	char name[VAL_VALUE_MAX], val[VAL_VALUE_MAX];
	if (!val_type_is(n, "variable_assignment"))
		return;
	TSNode k = val_field(n, "name");
	TSNode v = val_field(n, "value");
	if (!ts_node_is_null(k) && sh_fold(d, v, val, 0)) {
		val_node_text(d, k, name);
		val_alias_set(d, name, val, false);
	}
}

static void sh_collect(struct val_doc *d)
{
	val_walk(d, sh_visit);
}

/* A command's qualified name is its constant value. */
static bool sh_qname(struct val_doc *d, TSNode n, char *out, int depth)
{
	return sh_fold(d, n, out, depth);
}

static const char *sh_describe(const char *parent, const char *missing)
{
	static const struct {
		const char *missing, *words;
	} table[] = {
	    {"fi", "to close the if"},         {"then", "after the if condition"},
	    {"done", "to close the loop"},     {"do", "after the loop header"},
	    {"esac", "to close the case"},     {"}", "to close the braces"},
	    {")", "to close the parenthesis"}, {"]", "to close the test"},
	    {"]]", "to close the test"},       {"\"", "to close the string"},
	};
	(void)parent;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strcmp(table[i].missing, missing) == 0)
			return table[i].words;
	return NULL;
}

const struct val_lang val_lang_bash = {
    .name = "bash",
    .ts = tree_sitter_bash,
    .collect = sh_collect,
    .fold = sh_fold,
    .qname = sh_qname,
    .describe = sh_describe,
};
