/* test_flat.c: validate/tree.c, which reads tree-sitter's subtrees with the
 * runtime's internal headers instead of its public tree cursor. Each tree
 * here is read both ways, and every node must agree: the same node (id,
 * place, alias), symbol, named flag, field and subtree end. The trees are
 * every file of the validator's corpus (tests/validate/corpus, the three
 * languages) and snippets made to reach the walk's corners: aliased nodes
 * (bash, JavaScript), fields reached through hidden parents, comments
 * (extras) between fields and inside hidden nodes, ERROR and MISSING nodes,
 * and deep nesting. A runtime whose subtrees or rules differ from what
 * tree.c assumes fails here. */
#include "validate/internal.h"

#include <dirent.h>

#include "unit.h"

/* The reference: the public cursor, one step at a time. */
struct ref {
	struct val_fnode n[1u << 16];
	uint32_t count;
};

static void ref_read(struct ref *r, TSNode root)
{
	r->count = 0;
	TSTreeCursor c = ts_tree_cursor_new(root);
	uint32_t open[4096], depth = 0;
	for (;;) {
		ck_assert_uint_lt(r->count, sizeof(r->n) / sizeof(r->n[0]));
		uint32_t i = r->count++;
		TSNode node = ts_tree_cursor_current_node(&c);
		r->n[i] = (struct val_fnode){
		    .node = node,
		    .end = i + 1,
		    .sym = ts_node_symbol(node),
		    .field = ts_tree_cursor_current_field_id(&c),
		    .named = ts_node_is_named(node),
		};
		if (ts_tree_cursor_goto_first_child(&c)) {
			ck_assert_uint_lt(depth, 4096);
			open[depth++] = i;
			continue;
		}
		while (depth > 0 && !ts_tree_cursor_goto_next_sibling(&c)) {
			ts_tree_cursor_goto_parent(&c);
			r->n[open[--depth]].end = r->count;
		}
		if (depth == 0)
			break;
	}
	ts_tree_cursor_delete(&c);
}

static struct ref ref_buf;
static struct val_flat flat;
static size_t compared_nodes, aliased_nodes;

static void same_walk(const char *lang, const char *code, size_t len, const char *what)
{
	const struct val_lang *l = val_lang_find(lang);
	ck_assert_ptr_nonnull(l);
	TSParser *p = ts_parser_new();
	ck_assert(ts_parser_set_language(p, l->ts()));
	TSTree *t = ts_parser_parse_string(p, NULL, code, (uint32_t)len);
	ck_assert_ptr_nonnull(t);
	TSNode root = ts_tree_root_node(t);
	ck_assert_int_eq(val_flat_read(&flat, root), 0);
	ref_read(&ref_buf, root);
	ck_assert_msg(flat.count == ref_buf.count, "%s: %u nodes, the cursor sees %u", what,
	              flat.count, ref_buf.count);
	for (uint32_t i = 0; i < flat.count; i++) {
		const struct val_fnode *a = &flat.n[i], *b = &ref_buf.n[i];
		ck_assert_msg(
		    ts_node_eq(a->node, b->node) &&
		        memcmp(a->node.context, b->node.context, sizeof(a->node.context)) == 0,
		    "%s: node %u (%s at %u) is not the cursor's (%s at %u)", what, i,
		    ts_node_type(a->node), ts_node_start_byte(a->node), ts_node_type(b->node),
		    ts_node_start_byte(b->node));
		ck_assert_msg(a->sym == b->sym && a->named == b->named && a->field == b->field &&
		                  a->end == b->end,
		              "%s: node %u (%s at %u): sym %u/%u named %d/%d field %u/%u end %u/%u",
		              what, i, ts_node_type(a->node), ts_node_start_byte(a->node), a->sym,
		              b->sym, a->named, b->named, a->field, b->field, a->end, b->end);
		aliased_nodes += a->node.context[3] != 0;
		compared_nodes++;
	}
	ts_tree_delete(t);
	ts_parser_delete(p);
}

static const char *lang_of(const char *name)
{
	const char *dot = strrchr(name, '.');
	if (!dot)
		return NULL;
	if (strcmp(dot, ".py") == 0)
		return "python";
	if (strcmp(dot, ".sh") == 0)
		return "bash";
	if (strcmp(dot, ".js") == 0)
		return "javascript";
	return NULL;
}

static size_t walk_dir(const char *dir)
{
	size_t files = 0;
	DIR *d = opendir(dir);
	ck_assert_msg(d != NULL, "cannot open %s", dir);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (e->d_type == DT_DIR) {
			files += walk_dir(path);
			continue;
		}
		const char *lang = lang_of(e->d_name);
		if (!lang)
			continue;
		FILE *f = fopen(path, "rb");
		ck_assert_ptr_nonnull(f);
		static char code[1 << 20];
		size_t len = fread(code, 1, sizeof(code), f);
		fclose(f);
		same_walk(lang, code, len, path);
		files++;
	}
	closedir(d);
	return files;
}

START_TEST(corpus_read_as_the_cursor_reads_it)
{
	compared_nodes = aliased_nodes = 0;
	size_t files = walk_dir("tests/validate/corpus");
	ck_assert_uint_ge(files, 250);
	ck_assert_uint_gt(compared_nodes, 10000);
	/* Bash and JavaScript alias nodes (word as command_name's child,
	 * property_identifier, shorthand_property_identifier, ...). */
	ck_assert_uint_gt(aliased_nodes, 100);
}
END_TEST

static const struct {
	const char *lang, *code;
} corners[] = {
    /* Fields through hidden nodes: Python's _simple_statements, the
     * operators of binary_operator, keyword arguments. */
    {"python", "x = a.b(c, d=1) + e[f:g]\nif x: y()\nelif z: pass\nelse:\n  w = 1\n"},
    /* Comments (extras) between a node's fields, in hidden parents, at
     * the start and at the end. */
    {"python", "# head\ndef f(a, # one\n      b):  # two\n    # three\n    return (a + # four\n "
               "b)\n# tail\n"},
    {"python", "from os import (system as s, # c\n popen)\nimport a.b as c, d\n"},
    /* Strings with interpolations, decorators, comprehensions, lambdas. */
    {"python", "@dec(1)\nclass C(B):\n  x: int = f'{a!r:>{w}}' 'b'\n  def m(self): return "
               "[i for i in range(3) if i]\nlam = lambda *a, **k: (a, k)\n"},
    /* Errors and missing tokens. */
    {"python", "def f(:\n  x = = 1\nprint 'x'\nif a\n  b(\n"},
    {"python", "((((((((((((((((((((((((((((((((((((((((x))))))))))))))))))))))))))))))))))))))))"},
    {"python", ""},
    {"python", "   \n# only a comment\n"},
    /* Bash: aliases (command_name's word), fields in redirects, heredocs,
     * errors. */
    {"bash", "x=$(ls -l | grep a) && echo \"$x\" > /tmp/o 2>&1 # c\nfor i in 1 2; do rm -rf "
             "\"$i\"; done\ncat <<EOF\nhi $y\nEOF\nf() { local a=1; }\n"},
    {"bash", "if [ -f x ]; then\n  echo ${a:-b} ${#c} $((1 + 2))\nfi\ncase $x in a) ;; esac\n"},
    {"bash", "echo ( ; fi then }\n"},
    /* JavaScript: property_identifier and shorthand aliases, template
     * strings, JSX-free classes, errors. */
    {"javascript", "const {a, b: c} = require('fs'); obj.prop = `x${y}z`; class K extends B { "
                   "#p = 1; get g() { return this.#p } }\n/* c */ f?.(a, ...b);\n"},
    {"javascript", "let x = {a, [b]: 1, 'c': () => {}}; label: for (;;) { break label; }\n"},
    {"javascript", "function (a, { ; = 3\n"},
};

START_TEST(corners_read_as_the_cursor_reads_them)
{
	compared_nodes = aliased_nodes = 0;
	for (size_t i = 0; i < sizeof(corners) / sizeof(corners[0]); i++) {
		char what[64];
		snprintf(what, sizeof(what), "corner %zu (%s)", i, corners[i].lang);
		same_walk(corners[i].lang, corners[i].code, strlen(corners[i].code), what);
	}
	ck_assert_uint_gt(aliased_nodes, 5);
}
END_TEST

/* Deeper than any buffer's first size: the walk's stack grows. */
START_TEST(deep_trees_read_as_the_cursor_reads_them)
{
	static char code[8192];
	size_t n = 0;
	for (int i = 0; i < 1000; i++)
		code[n++] = '[';
	code[n++] = '1';
	for (int i = 0; i < 1000; i++)
		code[n++] = ']';
	code[n++] = '\n';
	same_walk("python", code, n, "1000 nested lists");
	same_walk("javascript", code, n, "1000 nested arrays");
	ck_assert_uint_gt(flat.count, 1000);
}
END_TEST

static Suite *flat_suite(void)
{
	Suite *s = suite_create("flat");
	TCase *tc = tcase_create("walk");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, corpus_read_as_the_cursor_reads_it);
	tcase_add_test(tc, corners_read_as_the_cursor_reads_them);
	tcase_add_test(tc, deep_trees_read_as_the_cursor_reads_them);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(flat_suite)
