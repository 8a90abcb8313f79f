/* lang_python.c: what the validator knows about Python beyond the
 * grammar: which names imports and simple assignments bind (so that
 * "from os import system as s; s()" is os.system), constant strings
 * ('sys' + 'tem'), and words for syntax messages. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "validate/lang_common.h"

const TSLanguage *tree_sitter_python(void);

/* The node types this file asks about, by symbol: a table from each symbol
 * id to what ts_node_type() would name it, built once from the grammar's
 * symbol names, so that a question is an index, not a strcmp() of the type
 * name (name resolution asks a dozen per call). An id past the table is
 * named by strcmp(), as before. */
enum py_kind {
	PK_OTHER,
	PK_IDENTIFIER,
	PK_DOTTED_NAME,
	PK_ATTRIBUTE,
	PK_SUBSCRIPT,
	PK_PAREN,
	PK_CALL,
	PK_STRING,
	PK_CONCAT,
	PK_BINOP,
	PK_STRING_START,
	PK_STRING_CONTENT,
	PK_STRING_END,
	PK_IMPORT,
	PK_IMPORT_FROM,
	PK_ASSIGNMENT,
	PK_ALIASED_IMPORT,
	PK_LIST,
	PK_TUPLE,
};

static const char *const py_kind_names[] = {
    [PK_IDENTIFIER] = "identifier",
    [PK_DOTTED_NAME] = "dotted_name",
    [PK_ATTRIBUTE] = "attribute",
    [PK_SUBSCRIPT] = "subscript",
    [PK_PAREN] = "parenthesized_expression",
    [PK_CALL] = "call",
    [PK_STRING] = "string",
    [PK_CONCAT] = "concatenated_string",
    [PK_BINOP] = "binary_operator",
    [PK_STRING_START] = "string_start",
    [PK_STRING_CONTENT] = "string_content",
    [PK_STRING_END] = "string_end",
    [PK_IMPORT] = "import_statement",
    [PK_IMPORT_FROM] = "import_from_statement",
    [PK_ASSIGNMENT] = "assignment",
    [PK_ALIASED_IMPORT] = "aliased_import",
    [PK_LIST] = "list",
    [PK_TUPLE] = "tuple",
};

static enum py_kind py_kind_named(const char *type)
{
	for (size_t k = 1; k < sizeof(py_kind_names) / sizeof(py_kind_names[0]); k++)
		if (strcmp(type, py_kind_names[k]) == 0)
			return (enum py_kind)k;
	return PK_OTHER;
}

#define PY_SYMBOLS_MAX 1024
static uint8_t py_kinds[PY_SYMBOLS_MAX];
static bool py_expression[PY_SYMBOLS_MAX];
static pthread_once_t py_tables_once = PTHREAD_ONCE_INIT;
static void py_tables_init(void);

static enum py_kind py_kind(TSNode n)
{
	pthread_once(&py_tables_once, py_tables_init);
	TSSymbol s = ts_node_symbol(n);
	return s < PY_SYMBOLS_MAX ? (enum py_kind)py_kinds[s] : py_kind_named(ts_node_type(n));
}

/* out = s, cut to VAL_VALUE_MAX as snprintf("%s") would, without printf. */
static void py_copy(char *out, const char *s)
{
	size_t l = strnlen(s, VAL_VALUE_MAX - 1);
	memmove(out, s, l);
	out[l] = '\0';
}

/* CPython reads identifiers NFKC-normalised, so 'ｅｖａｌ' (fullwidth) and
 * '𝐞𝐯𝐚𝐥' (mathematical bold) are eval. Map the compatibility letters that
 * fold to ASCII (fullwidth forms, mathematical alphanumerics) so that rules
 * see the name CPython sees; other characters are kept. */
static void py_ident(struct val_doc *d, TSNode n, char *out)
{
	char raw[VAL_VALUE_MAX];
	val_node_text(d, n, raw);
	size_t o = 0, len = strlen(raw);
	/* Most names are ASCII, which has nothing to fold: copied as the
	 * loop below would copy them, up to its bound. */
	size_t ascii = 0;
	while (ascii < len && (unsigned char)raw[ascii] < 0x80)
		ascii++;
	if (ascii == len) {
		if (len > VAL_VALUE_MAX - 5)
			len = VAL_VALUE_MAX - 5;
		memcpy(out, raw, len);
		out[len] = '\0';
		return;
	}
	for (size_t i = 0; i < len && o < VAL_VALUE_MAX - 5;) {
		const unsigned char *u = (const unsigned char *)raw + i;
		size_t k = utf8_seq_len(u, len - i);
		uint32_t cp = 0;
		if (k == 3)
			cp = (uint32_t)(u[0] & 0x0f) << 12 | (uint32_t)(u[1] & 0x3f) << 6 |
			     (u[2] & 0x3f);
		else if (k == 4)
			cp = (uint32_t)(u[0] & 0x07) << 18 | (uint32_t)(u[1] & 0x3f) << 12 |
			     (uint32_t)(u[2] & 0x3f) << 6 | (u[3] & 0x3f);
		char c = 0;
		if (cp >= 0xff01 && cp <= 0xff5e)
			c = (char)(cp - 0xfee0);
		else if (cp >= 0x1d400 && cp <= 0x1d6a3)
			c = (char)((cp - 0x1d400) % 52 < 26 ? 'A' + (cp - 0x1d400) % 52
			                                    : 'a' + (cp - 0x1d400) % 52 - 26);
		else if (cp >= 0x1d7ce && cp <= 0x1d7ff)
			c = (char)('0' + (cp - 0x1d7ce) % 10);
		if (c) {
			out[o++] = c;
		} else {
			memcpy(out + o, raw + i, k);
			o += k;
		}
		i += k;
	}
	out[o] = '\0';
}

static bool py_fold(struct val_doc *d, TSNode n, char *out, int depth);
static bool py_fold_into(struct val_doc *d, TSNode n, char *out, int depth);
static bool py_qname(struct val_doc *d, TSNode n, char *out, int depth);

static bool fold_string(struct val_doc *d, TSNode n, char *out)
{
	bool raw = false;
	uint32_t nc = ts_node_child_count(n);
	for (uint32_t i = 0; i < nc; i++) {
		TSNode c = ts_node_child(n, i);
		enum py_kind t = py_kind(c);
		uint32_t s = ts_node_start_byte(c), e = ts_node_end_byte(c);
		if (t == PK_STRING_START) {
			for (uint32_t k = s; k < e; k++)
				raw |= d->code[k] == 'r' || d->code[k] == 'R';
		} else if (t == PK_STRING_CONTENT) {
			bool ok = raw ? val_cat(out, d->code + s, e - s)
			              : val_unescape(out, d->code + s, e - s);
			if (!ok)
				return false;
		} else if (t != PK_STRING_END) {
			return false; /* an f-string interpolation */
		}
	}
	return true;
}

/* ''.join(['o', 's']) and 'sep'.join(...) of constants. */
static bool fold_join(struct val_doc *d, TSNode n, char *out, int depth)
{
	TSNode f = val_field(n, "function");
	TSNode args = val_field(n, "arguments");
	if (ts_node_is_null(f) || py_kind(f) != PK_ATTRIBUTE || ts_node_is_null(args))
		return false;
	TSNode obj = val_field(f, "object");
	TSNode attr = val_field(f, "attribute");
	char sep[VAL_VALUE_MAX] = "", name[VAL_VALUE_MAX];
	py_ident(d, attr, name);
	if (strcmp(name, "join") || !py_fold(d, obj, sep, depth + 1) ||
	    ts_node_named_child_count(args) != 1)
		return false;
	TSNode list = ts_node_named_child(args, 0);
	if (py_kind(list) != PK_LIST && py_kind(list) != PK_TUPLE)
		return false;
	uint32_t k = ts_node_named_child_count(list);
	for (uint32_t i = 0; i < k; i++) {
		if (i > 0 && !val_cats(out, sep))
			return false;
		if (!py_fold_into(d, ts_node_named_child(list, i), out, depth + 1))
			return false;
	}
	return true;
}

static bool py_fold_into(struct val_doc *d, TSNode n, char *out, int depth)
{
	if (depth > VAL_DEPTH_MAX || ts_node_is_null(n))
		return false;
	enum py_kind t = py_kind(n);
	if (t == PK_STRING)
		return fold_string(d, n, out);
	if (t == PK_CONCAT || t == PK_PAREN) {
		uint32_t k = ts_node_named_child_count(n);
		for (uint32_t i = 0; i < k; i++)
			if (!py_fold_into(d, ts_node_named_child(n, i), out, depth + 1))
				return false;
		return k > 0;
	}
	if (t == PK_BINOP) {
		TSNode op = val_field(n, "operator");
		if (ts_node_is_null(op) || !val_type_is(op, "+"))
			return false;
		return py_fold_into(d, val_field(n, "left"), out, depth + 1) &&
		       py_fold_into(d, val_field(n, "right"), out, depth + 1);
	}
	if (t == PK_CALL)
		return fold_join(d, n, out, depth);
	return false;
}

static bool py_fold(struct val_doc *d, TSNode n, char *out, int depth)
{
	out[0] = '\0';
	return py_fold_into(d, n, out, depth);
}

/* The module a call imports: __import__('os'), importlib.import_module('os'). */
static bool call_qname(struct val_doc *d, TSNode n, char *out, int depth)
{
	TSNode f = val_field(n, "function");
	TSNode args = val_field(n, "arguments");
	char fq[VAL_VALUE_MAX], a[VAL_VALUE_MAX];
	if (ts_node_is_null(args) || ts_node_named_child_count(args) < 1 ||
	    !py_qname(d, f, fq, depth + 1))
		return false;
	TSNode a0 = ts_node_named_child(args, 0);
	if (strcmp(fq, "__import__") == 0 || strcmp(fq, "importlib.import_module") == 0 ||
	    strcmp(fq, "builtins.__import__") == 0) {
		if (!py_fold(d, a0, a, depth + 1))
			return false;
		py_copy(out, a);
		return true;
	}
	if ((strcmp(fq, "getattr") == 0 || strcmp(fq, "builtins.getattr") == 0) &&
	    ts_node_named_child_count(args) >= 2) {
		if (!py_qname(d, a0, out, depth + 1) ||
		    !py_fold(d, ts_node_named_child(args, 1), a, depth + 1))
			return false;
		return val_cats(out, ".") && val_cats(out, a);
	}
	return false;
}

static bool py_qname(struct val_doc *d, TSNode n, char *out, int depth)
{
	if (depth > VAL_DEPTH_MAX || ts_node_is_null(n))
		return false;
	enum py_kind t = py_kind(n);
	char tmp[VAL_VALUE_MAX];
	if (t == PK_IDENTIFIER) {
		py_ident(d, n, tmp);
		const struct val_alias *a = val_alias_get(d, tmp);
		py_copy(out, a ? a->target : tmp);
		return true;
	}
	if (t == PK_DOTTED_NAME) {
		/* A name in "from m import name": what it was bound to. */
		if (ts_node_named_child_count(n) == 1)
			return py_qname(d, ts_node_named_child(n, 0), out, depth + 1);
		py_ident(d, n, out);
		return true;
	}
	if (t == PK_ATTRIBUTE) {
		if (!py_qname(d, val_field(n, "object"), out, depth + 1))
			return false;
		py_ident(d, val_field(n, "attribute"), tmp);
		return val_cats(out, ".") && val_cats(out, tmp);
	}
	if (t == PK_SUBSCRIPT) {
		if (!py_qname(d, val_field(n, "value"), out, depth + 1) ||
		    !py_fold(d, val_field(n, "subscript"), tmp, depth + 1))
			return false;
		/* sys.modules['os'] is the os module itself. */
		if (strcmp(out, "sys.modules") == 0) {
			py_copy(out, tmp);
			return true;
		}
		return val_cats(out, ".") && val_cats(out, tmp);
	}
	if (t == PK_PAREN && ts_node_named_child_count(n) == 1)
		return py_qname(d, ts_node_named_child(n, 0), out, depth + 1);
	if (t == PK_CALL)
		return call_qname(d, n, out, depth);
	return false;
}

static void collect_import(struct val_doc *d, TSNode n)
{
	char name[VAL_VALUE_MAX], alias[VAL_VALUE_MAX];
	uint32_t k = ts_node_named_child_count(n);
	for (uint32_t i = 0; i < k; i++) {
		TSNode c = ts_node_named_child(n, i);
		if (py_kind(c) == PK_DOTTED_NAME) {
			/* import a.b binds a, and a.b is a module too. */
			py_ident(d, c, name);
			val_alias_set(d, name, name, true);
			char *dot = strchr(name, '.');
			if (dot) {
				*dot = '\0';
				val_alias_set(d, name, name, true);
			}
		} else if (py_kind(c) == PK_ALIASED_IMPORT) {
			py_ident(d, val_field(c, "name"), name);
			py_ident(d, val_field(c, "alias"), alias);
			val_alias_set(d, alias, name, true);
		}
	}
}

static void collect_from(struct val_doc *d, TSNode n)
{
	char mod[VAL_VALUE_MAX], name[VAL_VALUE_MAX], alias[VAL_VALUE_MAX];
	TSNode m = val_field(n, "module_name");
	if (ts_node_is_null(m))
		return;
	py_ident(d, m, mod);
	/* Every named child after the module is a name: tree-sitter 0.20's
	 * ts_node_field_name_for_child() names only the first of a repeated
	 * field, and "from os import getcwd, system" left system unbound. */
	uint32_t k = ts_node_named_child_count(n);
	for (uint32_t i = 0; i < k; i++) {
		TSNode c = ts_node_named_child(n, i);
		enum py_kind ck = py_kind(c);
		if (ts_node_eq(c, m) || (ck != PK_DOTTED_NAME && ck != PK_ALIASED_IMPORT))
			continue;
		char full[VAL_VALUE_MAX];
		if (py_kind(c) == PK_ALIASED_IMPORT) {
			py_ident(d, val_field(c, "name"), name);
			py_ident(d, val_field(c, "alias"), alias);
		} else {
			py_ident(d, c, name);
			py_copy(alias, name);
		}
		val_join(full, mod, name);
		val_alias_set(d, alias, full, false);
	}
}

static void collect_assign(struct val_doc *d, TSNode n)
{
	TSNode left = val_field(n, "left");
	TSNode right = val_field(n, "right");
	if (ts_node_is_null(left) || ts_node_is_null(right) || py_kind(left) != PK_IDENTIFIER)
		return;
	enum py_kind rt = py_kind(right);
	if (rt != PK_IDENTIFIER && rt != PK_ATTRIBUTE && rt != PK_SUBSCRIPT && rt != PK_CALL)
		return;
	char q[VAL_VALUE_MAX], name[VAL_VALUE_MAX];
	if (!py_qname(d, right, q, 0))
		return;
	py_ident(d, left, name);
	if (strcmp(name, q) == 0)
		return;
	bool module = false;
	for (size_t i = 0; i < d->naliases && !module; i++)
		module = d->aliases[i].module && strcmp(d->aliases[i].target, q) == 0;
	/* A call binds a name only when it is an import (__import__). */
	if (rt == PK_CALL)
		module = true;
	val_alias_set(d, name, q, module);
}

/* Expressions: the grammar puts no statement and no assignment below
 * them, so a walk that looks for those need not go in (most of a tree's
 * nodes are inside expressions), unless the subtree holds a syntax error,
 * where tree-sitter may nest anything. Indexed by symbol (every id of the
 * name: a grammar may alias several). */
static const char *const expression_types[] = {
    "call",
    "argument_list",
    "attribute",
    "subscript",
    "binary_operator",
    "unary_operator",
    "comparison_operator",
    "not_operator",
    "boolean_operator",
    "string",
    "concatenated_string",
    "list",
    "tuple",
    "set",
    "dictionary",
    "pair",
    "list_comprehension",
    "dictionary_comprehension",
    "set_comprehension",
    "generator_expression",
    "parenthesized_expression",
    "conditional_expression",
    "lambda",
    "keyword_argument",
    "list_splat",
    "dictionary_splat",
    "await",
    "slice",
};
static void py_tables_init(void)
{
	const TSLanguage *l = tree_sitter_python();
	uint32_t n = ts_language_symbol_count(l);
	for (uint32_t s = 0; s < n && s < PY_SYMBOLS_MAX; s++) {
		const char *name = ts_language_symbol_name(l, (TSSymbol)s);
		py_kinds[s] = (uint8_t)py_kind_named(name);
		if (ts_language_symbol_type(l, (TSSymbol)s) != TSSymbolTypeRegular)
			continue;
		for (size_t i = 0; i < sizeof(expression_types) / sizeof(expression_types[0]); i++)
			if (strcmp(name, expression_types[i]) == 0)
				py_expression[s] = true;
	}
}

static bool py_visit(struct val_doc *d, TSNode n)
{
	enum py_kind t = py_kind(n);
	if (t == PK_IMPORT)
		collect_import(d, n);
	else if (t == PK_IMPORT_FROM)
		collect_from(d, n);
	else if (t == PK_ASSIGNMENT)
		collect_assign(d, n);
	TSSymbol s = ts_node_symbol(n);
	return s >= PY_SYMBOLS_MAX || !py_expression[s] || ts_node_has_error(n);
}

static void py_collect(struct val_doc *d)
{
	pthread_once(&py_tables_once, py_tables_init);
	val_walk_if(d, py_visit);
}

static const char *py_describe(const char *parent, const char *missing)
{
	static const struct {
		const char *parent, *missing, *words;
	} table[] = {
	    {"if_statement", ":", "after the if condition"},
	    {"elif_clause", ":", "after the elif condition"},
	    {"else_clause", ":", "after else"},
	    {"while_statement", ":", "after the while condition"},
	    {"for_statement", ":", "after the for clause"},
	    {"function_definition", ":", "after the function's parameters"},
	    {"class_definition", ":", "after the class name"},
	    {"with_statement", ":", "after the with items"},
	    {"try_statement", ":", "after try"},
	    {"except_clause", ":", "after the except clause"},
	    {"finally_clause", ":", "after finally"},
	    {"lambda", ":", "after the lambda's parameters"},
	    {"dictionary", ":", "between the key and the value"},
	    {NULL, ")", "to close the parenthesis"},
	    {NULL, "]", "to close the bracket"},
	    {NULL, "}", "to close the brace"},
	    {NULL, "in", "in the for clause"},
	};
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if ((!table[i].parent || strcmp(table[i].parent, parent) == 0) &&
		    strcmp(table[i].missing, missing) == 0)
			return table[i].words;
	return NULL;
}

/* A compound statement whose header line lacks its ':' is an ERROR region
 * to tree-sitter; say what is missing, where. */
static bool py_explain(struct val_doc *d, TSNode err, char *msg, size_t msz, uint32_t *ret_start,
                       uint32_t *ret_end)
{
	static const struct {
		const char *keyword, *parent;
	} headers[] = {
	    {"if", "if_statement"},        {"elif", "elif_clause"},
	    {"else", "else_clause"},       {"while", "while_statement"},
	    {"for", "for_statement"},      {"def", "function_definition"},
	    {"class", "class_definition"}, {"with", "with_statement"},
	    {"try", "try_statement"},      {"except", "except_clause"},
	    {"finally", "finally_clause"},
	};
	uint32_t s = ts_node_start_byte(err), e = ts_node_end_byte(err);
	if (e > d->len)
		return false;
	size_t k;
	for (k = 0; k < sizeof(headers) / sizeof(headers[0]); k++) {
		size_t kl = strlen(headers[k].keyword);
		if (e - s > kl && memcmp(d->code + s, headers[k].keyword, kl) == 0 &&
		    (d->code[s + kl] == ' ' || d->code[s + kl] == ':' || d->code[s + kl] == '('))
			break;
	}
	if (k == sizeof(headers) / sizeof(headers[0]))
		return false;
	/* The header line's end, without trailing blanks or a comment. */
	uint32_t end = s;
	while (end < e && d->code[end] != '\n' && d->code[end] != '#')
		end++;
	while (end > s &&
	       (d->code[end - 1] == ' ' || d->code[end - 1] == '\t' || d->code[end - 1] == '\r'))
		end--;
	if (end == s || d->code[end - 1] == ':')
		return false;
	snprintf(msg, msz, "expected ':' %s", py_describe(headers[k].parent, ":"));
	*ret_start = *ret_end = end;
	return true;
}

/* A name as CPython reads it (an identifier, a dotted module name), for
 * the predicates that test a node's text. */
static bool py_name(struct val_doc *d, TSNode n, char *out)
{
	enum py_kind t = py_kind(n);
	if (t != PK_IDENTIFIER && t != PK_DOTTED_NAME)
		return false;
	py_ident(d, n, out);
	return true;
}

const struct val_lang val_lang_python = {
    .name = "python",
    .ts = tree_sitter_python,
    .collect = py_collect,
    .fold = py_fold,
    .name_text = py_name,
    .qname = py_qname,
    .describe = py_describe,
    .explain = py_explain,
};
