/* lang_bash.c: what the validator knows about bash beyond the grammar:
 * the constant value of words however they are quoted (c""url, $'\x63url'),
 * variables assigned a constant (c=curl; $c), the functions the snippet
 * defines, which variables hold only numbers (bash evaluates any other
 * value read in arithmetic as an expression, running the command
 * substitutions in it), and words for syntax messages. */
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

/* The alias table's keys for what is known of a variable or a name,
 * beside its constant value (the variable's own name): "\1n:x" is "1"
 * while every assignment of x gives it a number and "0" once one may
 * not; "\1f:f" marks a function the snippet defines; "\1A:a" an
 * associative array (its subscripts are strings, not arithmetic). A
 * name never starts with \1, so the keys cannot meet a variable's. */
static void mark(struct val_doc *d, char kind, const char *name, const char *val)
{
	char key[VAL_VALUE_MAX + 3];
	if (strlen(name) >= VAL_VALUE_MAX - 3)
		return;
	snprintf(key, sizeof(key), "\1%c:%s", kind, name);
	const struct val_alias *a = val_alias_get(d, key);
	if (kind == 'n' && a && strcmp(a->target, "0") == 0)
		return; /* once not a number, never known to be one */
	val_alias_set(d, key, val, false);
}

static bool marked(struct val_doc *d, char kind, const char *name, const char **ret_val)
{
	char key[VAL_VALUE_MAX + 3];
	if (strlen(name) >= VAL_VALUE_MAX - 3)
		return false;
	snprintf(key, sizeof(key), "\1%c:%s", kind, name);
	const struct val_alias *a = val_alias_get(d, key);
	if (a && ret_val)
		*ret_val = a->target;
	return a != NULL;
}

/* Whether s is a decimal integer (or empty, which arithmetic reads as 0). */
static bool is_integer(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* Whether a value assigned to a variable is surely a number: an integer,
 * an arithmetic expansion, ${#x}, an indexed array's indices (${!a[@]}),
 * or $# $? $$ $!; quoted or not. */
static bool numeric_value(struct val_doc *d, TSNode v)
{
	char val[VAL_VALUE_MAX];
	if (ts_node_is_null(v))
		return true; /* x= */
	const char *t = ts_node_type(v);
	if (!strcmp(t, "number") || !strcmp(t, "arithmetic_expansion"))
		return true;
	if (!strcmp(t, "simple_expansion"))
		return val_type_is(ts_node_named_child(v, 0), "special_variable_name") &&
		       !strchr("@*-", d->code[ts_node_start_byte(v) + 1]);
	if (!strcmp(t, "string") && ts_node_named_child_count(v) == 1)
		return numeric_value(d, ts_node_named_child(v, 0));
	if (!strcmp(t, "expansion") && ts_node_child_count(v) > 1) {
		TSNode op = ts_node_child(v, 1), sub = ts_node_named_child(v, 0);
		char arr[VAL_VALUE_MAX];
		if (val_type_is(op, "#"))
			return true;
		if (!val_type_is(op, "!") || !val_type_is(sub, "subscript"))
			return false;
		val_node_text(d, val_field(sub, "name"), arr);
		return !marked(d, 'A', arr, NULL);
	}
	return sh_fold(d, v, val, 0) && is_integer(val);
}

/* Bash's own variables that always hold a number, unless the snippet
 * assigns them. */
static bool numeric_builtin(const char *name)
{
	static const char *const names[] = {
	    "COMP_CWORD", "COMP_POINT", "COMP_TYPE", "COMP_KEY",     "LINENO",        "RANDOM",
	    "SRANDOM",    "SECONDS",    "BASHPID",   "PPID",         "UID",           "EUID",
	    "OPTIND",     "SHLVL",      "HISTCMD",   "EPOCHSECONDS", "BASH_SUBSHELL",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

/* read, getopts, mapfile and printf -v store what comes from outside
 * in the variables they name. */
static void visit_reader(struct val_doc *d, TSNode n)
{
	char cmd[VAL_VALUE_MAX], arg[VAL_VALUE_MAX];
	if (!sh_fold(d, val_field(n, "name"), cmd, 0) ||
	    (strcmp(cmd, "read") && strcmp(cmd, "getopts") && strcmp(cmd, "mapfile") &&
	     strcmp(cmd, "readarray") && strcmp(cmd, "printf")))
		return;
	uint32_t k = ts_node_named_child_count(n);
	for (uint32_t i = 1; i < k; i++) {
		TSNode a = ts_node_named_child(n, i);
		if (val_type_is(a, "word") && sh_fold(d, a, arg, 0) && arg[0] != '-')
			mark(d, 'n', arg, "0");
	}
}

static void visit_declaration(struct val_doc *d, TSNode n)
{
	char name[VAL_VALUE_MAX], flag[VAL_VALUE_MAX];
	bool assoc = false;
	uint32_t k = ts_node_named_child_count(n);
	for (uint32_t i = 0; i < k; i++) {
		TSNode c = ts_node_named_child(n, i);
		if (val_type_is(c, "word") && sh_fold(d, c, flag, 0) && flag[0] == '-' &&
		    strchr(flag, 'A'))
			assoc = true;
		else if (assoc && (val_type_is(c, "variable_name") ||
		                   val_type_is(c, "variable_assignment"))) {
			val_node_text(d, val_type_is(c, "variable_name") ? c : val_field(c, "name"),
			              name);
			mark(d, 'A', name, "1");
		}
	}
}

static void visit_for(struct val_doc *d, TSNode n)
{
	char name[VAL_VALUE_MAX];
	TSNode var = val_field(n, "variable");
	if (ts_node_is_null(var))
		return;
	bool numbers = true;
	uint32_t k = ts_node_named_child_count(n);
	for (uint32_t i = 0; i < k; i++) {
		TSNode c = ts_node_named_child(n, i);
		if (ts_node_eq(c, var) || val_type_is(c, "do_group"))
			continue;
		if (!numeric_value(d, c))
			numbers = false;
	}
	val_node_text(d, var, name);
	mark(d, 'n', name, numbers ? "1" : "0");
}

static void sh_visit(struct val_doc *d, TSNode n)
{
	char name[VAL_VALUE_MAX], val[VAL_VALUE_MAX];
	const char *t = ts_node_type(n);
	if (!strcmp(t, "command")) {
		visit_reader(d, n);
		return;
	}
	if (!strcmp(t, "declaration_command")) {
		visit_declaration(d, n);
		return;
	}
	if (!strcmp(t, "for_statement")) {
		visit_for(d, n);
		return;
	}
	if (!strcmp(t, "function_definition")) {
		if (sh_fold(d, val_field(n, "name"), name, 0))
			mark(d, 'f', name, "1");
		return;
	}
	if (strcmp(t, "variable_assignment"))
		return;
	TSNode k = val_field(n, "name");
	TSNode v = val_field(n, "value");
	if (ts_node_is_null(k))
		return;
	val_node_text(d, k, name);
	mark(d, 'n', name, numeric_value(d, v) ? "1" : "0");
	if (sh_fold(d, v, val, 0))
		val_alias_set(d, name, val, false);
}

static void sh_collect(struct val_doc *d)
{
	val_walk(d, sh_visit);
}

/* Whether variable name holds only numbers, as far as the snippet shows. */
static bool numeric_variable(struct val_doc *d, const char *name)
{
	const char *v;
	if (marked(d, 'n', name, &v))
		return strcmp(v, "1") == 0;
	return numeric_builtin(name);
}

/* Whether the value of the variable read at n (a variable_name) is
 * evaluated as an arithmetic expression: inside $(( )), (( )), a
 * C-style for, an indexed array's subscript, or [[ -eq ]] and its
 * kin. Walks up through the expression nodes between. */
static bool in_arithmetic(struct val_doc *d, TSNode n)
{
	TSNode cur = n;
	for (int depth = 0; depth < VAL_DEPTH_MAX; depth++) {
		TSNode p = ts_node_parent(cur);
		if (ts_node_is_null(p))
			return false;
		const char *t = ts_node_type(p);
		if (!strcmp(t, "arithmetic_expansion") || !strcmp(t, "c_style_for_statement"))
			return true;
		if (!strcmp(t, "expansion")) {
			/* ${#x} is x's length; ${x} and ${x:-0} are its value. */
			if (ts_node_child_count(p) > 1 && val_type_is(ts_node_child(p, 1), "#"))
				return false;
		} else if (!strcmp(t, "subscript")) {
			char arr[VAL_VALUE_MAX];
			val_node_text(d, val_field(p, "name"), arr);
			return ts_node_eq(val_field(p, "index"), cur) && !marked(d, 'A', arr, NULL);
		} else if (!strcmp(t, "binary_expression")) {
			TSNode op = val_field(p, "operator");
			if (!ts_node_is_null(op) && val_type_is(op, "test_operator")) {
				char o[VAL_VALUE_MAX];
				val_node_text(d, op, o);
				return strlen(o) == 3 && strstr("-eq -ne -lt -le -gt -ge", o);
			}
		} else if (strcmp(t, "simple_expansion") && strcmp(t, "unary_expression") &&
		           strcmp(t, "postfix_expression") &&
		           strcmp(t, "parenthesized_expression") &&
		           strcmp(t, "ternary_expression") && strcmp(t, "string")) {
			return false;
		}
		cur = p;
	}
	return false;
}

/* A command's qualified name is its constant value, and a function the
 * snippet defines has none (#qname-match? refuses it: what it runs is
 * judged where it is defined). A variable read where bash evaluates its
 * value as arithmetic is named by its name when the snippet does not
 * show it holds only numbers, and has no name otherwise; so is a bare
 * word in an indexed array's subscript (${a[i]}). */
static bool sh_qname(struct val_doc *d, TSNode n, char *out, int depth)
{
	const char *t = ts_node_type(n);
	if (!strcmp(t, "variable_name") || !strcmp(t, "word")) {
		char name[VAL_VALUE_MAX];
		val_node_text(d, n, name);
		if (!name[0] || (t[0] == 'w' && name[0] >= '0' && name[0] <= '9') ||
		    strspn(name,
		           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789") !=
		        strlen(name))
			return false;
		if (!strcmp(t, "word")) {
			TSNode p = ts_node_parent(n);
			char arr[VAL_VALUE_MAX];
			if (ts_node_is_null(p) || !val_type_is(p, "subscript") ||
			    !ts_node_eq(val_field(p, "index"), n))
				return false;
			val_node_text(d, val_field(p, "name"), arr);
			if (marked(d, 'A', arr, NULL))
				return false;
		} else if (!in_arithmetic(d, n)) {
			return false;
		}
		if (numeric_variable(d, name))
			return false;
		snprintf(out, VAL_VALUE_MAX, "%s", name);
		return true;
	}
	if (!sh_fold(d, n, out, depth))
		return false;
	if (!strcmp(t, "command_name") && marked(d, 'f', out, NULL))
		return false;
	return true;
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
