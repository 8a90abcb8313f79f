/* lang_javascript.c: what the validator knows about JavaScript beyond the
 * grammar: what require() and import bind (const {exec} = require('child_process')
 * makes exec "child_process.exec"), member chains through globalThis,
 * constant strings ('child_' + 'process'), and words for syntax messages. */
#include <stdio.h>

#include "validate/lang_common.h"

const TSLanguage *tree_sitter_javascript(void);

static bool js_fold(struct val_doc *d, TSNode n, char *out, int depth);
static bool js_qname(struct val_doc *d, TSNode n, char *out, int depth);

static int hexdigit(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	                              : -1;
}

/* A name as JavaScript reads it: an identifier may spell any of its
 * characters as \uXXXX or \u{X...}, so \u0072equire is require. The
 * source text with those escapes decoded (to UTF-8); cut at the bound. */
static void js_ident(struct val_doc *d, TSNode n, char *out)
{
	char raw[VAL_VALUE_MAX];
	val_node_text(d, n, raw);
	if (!strchr(raw, '\\')) {
		memcpy(out, raw, strlen(raw) + 1);
		return;
	}
	size_t o = 0;
	for (size_t i = 0; raw[i] && o < VAL_VALUE_MAX - 5;) {
		uint32_t cp = 0;
		size_t j = i + 2;
		bool ok = raw[i] == '\\' && raw[i + 1] == 'u';
		if (ok && raw[j] == '{') {
			size_t digits = 0;
			for (j++; hexdigit(raw[j]) >= 0 && digits < 7; j++, digits++)
				cp = cp << 4 | (uint32_t)hexdigit(raw[j]);
			ok = digits > 0 && raw[j] == '}' && cp <= 0x10ffff;
			j++;
		} else if (ok) {
			for (size_t k = 0; k < 4 && ok; k++, j++)
				ok = hexdigit(raw[j]) >= 0,
				cp = cp << 4 | (uint32_t)(ok ? hexdigit(raw[j]) : 0);
		}
		if (!ok) {
			out[o++] = raw[i++];
			continue;
		}
		if (cp < 0x80) {
			out[o++] = (char)cp;
		} else if (cp < 0x800) {
			out[o++] = (char)(0xc0 | cp >> 6);
			out[o++] = (char)(0x80 | (cp & 0x3f));
		} else if (cp < 0x10000) {
			out[o++] = (char)(0xe0 | cp >> 12);
			out[o++] = (char)(0x80 | (cp >> 6 & 0x3f));
			out[o++] = (char)(0x80 | (cp & 0x3f));
		} else {
			out[o++] = (char)(0xf0 | cp >> 18);
			out[o++] = (char)(0x80 | (cp >> 12 & 0x3f));
			out[o++] = (char)(0x80 | (cp >> 6 & 0x3f));
			out[o++] = (char)(0x80 | (cp & 0x3f));
		}
		i = j;
	}
	out[o] = '\0';
}

static bool js_fold_into(struct val_doc *d, TSNode n, char *out, int depth)
{
	if (depth > VAL_DEPTH_MAX || ts_node_is_null(n))
		return false;
	const char *t = ts_node_type(n);
	if (strcmp(t, "string") == 0 || strcmp(t, "template_string") == 0) {
		uint32_t k = ts_node_named_child_count(n);
		for (uint32_t i = 0; i < k; i++) {
			TSNode c = ts_node_named_child(n, i);
			const char *ct = ts_node_type(c);
			uint32_t s = ts_node_start_byte(c), e = ts_node_end_byte(c);
			bool ok = strcmp(ct, "string_fragment") == 0
			              ? val_cat(out, d->code + s, e - s)
			          : strcmp(ct, "escape_sequence") == 0
			              ? val_unescape(out, d->code + s, e - s)
			              : false;
			if (!ok)
				return false;
		}
		return true;
	}
	if (strcmp(t, "parenthesized_expression") == 0 && ts_node_named_child_count(n) == 1)
		return js_fold_into(d, ts_node_named_child(n, 0), out, depth + 1);
	if (strcmp(t, "binary_expression") == 0) {
		TSNode op = val_field(n, "operator");
		if (ts_node_is_null(op) || !val_type_is(op, "+"))
			return false;
		return js_fold_into(d, val_field(n, "left"), out, depth + 1) &&
		       js_fold_into(d, val_field(n, "right"), out, depth + 1);
	}
	if (strcmp(t, "call_expression") == 0) {
		/* ['child_', 'process'].join('') */
		TSNode f = val_field(n, "function");
		TSNode args = val_field(n, "arguments");
		if (ts_node_is_null(f) || !val_type_is(f, "member_expression") ||
		    ts_node_is_null(args))
			return false;
		TSNode obj = val_field(f, "object");
		char prop[VAL_VALUE_MAX], sep[VAL_VALUE_MAX] = "";
		js_ident(d, val_field(f, "property"), prop);
		if (strcmp(prop, "join") || !val_type_is(obj, "array"))
			return false;
		if (ts_node_named_child_count(args) == 1 &&
		    !js_fold(d, ts_node_named_child(args, 0), sep, depth + 1))
			return false;
		if (ts_node_named_child_count(args) == 0)
			strcpy(sep, ",");
		uint32_t k = ts_node_named_child_count(obj);
		for (uint32_t i = 0; i < k; i++) {
			if (i > 0 && !val_cats(out, sep))
				return false;
			if (!js_fold_into(d, ts_node_named_child(obj, i), out, depth + 1))
				return false;
		}
		return true;
	}
	return false;
}

static bool js_fold(struct val_doc *d, TSNode n, char *out, int depth)
{
	out[0] = '\0';
	return js_fold_into(d, n, out, depth);
}

/* 'node:fs/promises' -> 'fs.promises'; a file's path ('./helper') stays
 * a path. */
static void module_name(const char *in, char *out)
{
	if (strncmp(in, "node:", 5) == 0)
		in += 5;
	snprintf(out, VAL_VALUE_MAX, "%s", in);
	if (in[0] == '.' || in[0] == '/')
		return;
	for (char *p = out; *p; p++)
		if (*p == '/')
			*p = '.';
}

/* require, module.require, process.mainModule.require, Module._load,
 * and Node 22's process.getBuiltinModule, which returns the built-in
 * module it names as require() does. */
static bool is_require(const char *q)
{
	size_t l = strlen(q);
	return strcmp(q, "require") == 0 || (l > 8 && strcmp(q + l - 8, ".require") == 0) ||
	       (l > 6 && strcmp(q + l - 6, "._load") == 0) ||
	       (l > 17 && strcmp(q + l - 17, ".getBuiltinModule") == 0);
}

static bool js_qname(struct val_doc *d, TSNode n, char *out, int depth)
{
	if (depth > VAL_DEPTH_MAX || ts_node_is_null(n))
		return false;
	const char *t = ts_node_type(n);
	char tmp[VAL_VALUE_MAX];
	if (strcmp(t, "identifier") == 0) {
		js_ident(d, n, tmp);
		/* The global object's members are plain globals. */
		if (!strcmp(tmp, "globalThis") || !strcmp(tmp, "global") ||
		    !strcmp(tmp, "window") || !strcmp(tmp, "self")) {
			out[0] = '\0';
			return true;
		}
		const struct val_alias *a = val_alias_get(d, tmp);
		snprintf(out, VAL_VALUE_MAX, "%s", a ? a->target : tmp);
		return true;
	}
	if (strcmp(t, "member_expression") == 0 || strcmp(t, "subscript_expression") == 0) {
		bool member = t[0] == 'm';
		if (!js_qname(d, val_field(n, "object"), out, depth + 1))
			return false;
		if (member)
			js_ident(d, val_field(n, "property"), tmp);
		else if (!js_fold(d, val_field(n, "index"), tmp, depth + 1))
			return false;
		return (!out[0] || val_cats(out, ".")) && val_cats(out, tmp);
	}
	if (strcmp(t, "parenthesized_expression") == 0 && ts_node_named_child_count(n) == 1)
		return js_qname(d, ts_node_named_child(n, 0), out, depth + 1);
	/* (0, require)('child_process'): a comma expression is its last
	 * operand. */
	if (strcmp(t, "sequence_expression") == 0 && ts_node_named_child_count(n) > 0)
		return js_qname(d, ts_node_named_child(n, ts_node_named_child_count(n) - 1), out,
		                depth + 1);
	if (strcmp(t, "await_expression") == 0 && ts_node_named_child_count(n) == 1)
		return js_qname(d, ts_node_named_child(n, 0), out, depth + 1);
	if (strcmp(t, "call_expression") == 0) {
		TSNode f = val_field(n, "function");
		TSNode args = val_field(n, "arguments");
		if (ts_node_is_null(f) || ts_node_is_null(args) ||
		    ts_node_named_child_count(args) < 1)
			return false;
		bool dyn = val_type_is(f, "import");
		if (!dyn && (!js_qname(d, f, tmp, depth + 1) || !is_require(tmp)))
			return false;
		if (!js_fold(d, ts_node_named_child(args, 0), tmp, depth + 1))
			return false;
		module_name(tmp, out);
		return true;
	}
	return false;
}

static void bind_pattern(struct val_doc *d, TSNode pat, const char *q)
{
	char name[VAL_VALUE_MAX], key[VAL_VALUE_MAX], full[VAL_VALUE_MAX];
	if (val_type_is(pat, "identifier")) {
		js_ident(d, pat, name);
		if (strcmp(name, q))
			val_alias_set(d, name, q, true);
		return;
	}
	if (!val_type_is(pat, "object_pattern"))
		return;
	uint32_t k = ts_node_named_child_count(pat);
	for (uint32_t i = 0; i < k; i++) {
		TSNode c = ts_node_named_child(pat, i);
		if (val_type_is(c, "shorthand_property_identifier_pattern")) {
			js_ident(d, c, name);
			val_join(full, q, name);
			val_alias_set(d, name, full, false);
		} else if (val_type_is(c, "pair_pattern")) {
			TSNode v = val_field(c, "value");
			if (!val_type_is(v, "identifier"))
				continue;
			js_ident(d, val_field(c, "key"), key);
			js_ident(d, v, name);
			val_join(full, q, key);
			val_alias_set(d, name, full, false);
		}
	}
}

static void collect_binding(struct val_doc *d, TSNode pat, TSNode value)
{
	char q[VAL_VALUE_MAX];
	if (ts_node_is_null(pat) || ts_node_is_null(value))
		return;
	const char *t = ts_node_type(value);
	if (strcmp(t, "identifier") && strcmp(t, "member_expression") &&
	    strcmp(t, "subscript_expression") && strcmp(t, "call_expression") &&
	    strcmp(t, "await_expression"))
		return;
	if (js_qname(d, value, q, 0) && q[0])
		bind_pattern(d, pat, q);
}

static void collect_import(struct val_doc *d, TSNode n)
{
	char src[VAL_VALUE_MAX], mod[VAL_VALUE_MAX], name[VAL_VALUE_MAX], full[VAL_VALUE_MAX];
	if (!js_fold(d, val_field(n, "source"), src, 0))
		return;
	module_name(src, mod);
	uint32_t k = ts_node_named_child_count(n);
	for (uint32_t i = 0; i < k; i++) {
		TSNode clause = ts_node_named_child(n, i);
		if (!val_type_is(clause, "import_clause"))
			continue;
		uint32_t kc = ts_node_named_child_count(clause);
		for (uint32_t j = 0; j < kc; j++) {
			TSNode c = ts_node_named_child(clause, j);
			if (val_type_is(c, "identifier")) {
				js_ident(d, c, name);
				val_alias_set(d, name, mod, true);
			} else if (val_type_is(c, "namespace_import") &&
			           ts_node_named_child_count(c) > 0) {
				js_ident(d, ts_node_named_child(c, 0), name);
				val_alias_set(d, name, mod, true);
			} else if (val_type_is(c, "named_imports")) {
				uint32_t ks = ts_node_named_child_count(c);
				for (uint32_t s = 0; s < ks; s++) {
					TSNode spec = ts_node_named_child(c, s);
					TSNode nm = val_field(spec, "name");
					TSNode al = val_field(spec, "alias");
					if (ts_node_is_null(nm))
						continue;
					js_ident(d, nm, name);
					val_join(full, mod, name);
					if (!ts_node_is_null(al))
						js_ident(d, al, name);
					val_alias_set(d, name, full, false);
				}
			}
		}
	}
}

static void js_visit(struct val_doc *d, TSNode n)
{
	const char *t = ts_node_type(n);
	if (strcmp(t, "variable_declarator") == 0)
		collect_binding(d, val_field(n, "name"), val_field(n, "value"));
	else if (strcmp(t, "assignment_expression") == 0)
		collect_binding(d, val_field(n, "left"), val_field(n, "right"));
	else if (strcmp(t, "import_statement") == 0)
		collect_import(d, n);
}

static void js_collect(struct val_doc *d)
{
	val_walk(d, js_visit);
}

static const char *js_describe(const char *parent, const char *missing)
{
	static const struct {
		const char *missing, *words;
	} table[] = {
	    {")", "to close the parenthesis"},     {"]", "to close the bracket"},
	    {"}", "to close the block"},           {";", "to end the statement"},
	    {"`", "to close the template string"},
	};
	(void)parent;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strcmp(table[i].missing, missing) == 0)
			return table[i].words;
	return NULL;
}

/* A name with its \\u escapes decoded, for the predicates that test a
 * node's text. */
static bool js_name(struct val_doc *d, TSNode n, char *out)
{
	const char *t = ts_node_type(n);
	if (strcmp(t, "identifier") && strcmp(t, "property_identifier") &&
	    strcmp(t, "shorthand_property_identifier") &&
	    strcmp(t, "shorthand_property_identifier_pattern"))
		return false;
	js_ident(d, n, out);
	return true;
}

const struct val_lang val_lang_javascript = {
    .name = "javascript",
    .ts = tree_sitter_javascript,
    .collect = js_collect,
    .fold = js_fold,
    .name_text = js_name,
    .qname = js_qname,
    .describe = js_describe,
};
