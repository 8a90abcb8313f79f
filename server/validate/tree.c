/* tree.c: the tree as the rules read it, read once per check. One walk
 * lays every visible node out in document order (preorder) with what the
 * others ask of it: its symbol, whether it is named, the field it is in,
 * and where its subtree ends, which is where its next sibling starts. A
 * node's children are then i + 1, n[i + 1].end, ... up to n[i].end, and a
 * walk that does not go below node i goes on at n[i].end.
 *
 * The walk reads tree-sitter's subtrees directly, the way its tree cursor
 * does (tree_cursor.c of the pinned runtime: the same child iteration, the
 * same alias and field rules), but once per node: the cursor costs about
 * 500 instructions a node through the Python grammar's hidden nodes,
 * because each step to a next sibling pops and re-reads its parent, and
 * asking it for a node's field walks up through the hidden parents again
 * (2.07M instructions of a 200-line check's 6.9M after the parse; this
 * walk, 0.9M). The runtime is compiled from the sources
 * server/validate/grammars.lock pins, and this file includes that
 * runtime's own headers, so the layout it reads is the one compiled; the
 * unit test test_flat checks the result against the public cursor, node
 * for node, on every corpus file and on trees with aliases, extras and
 * errors. */
#include "validate/internal.h"

#include <errno.h>
#include <stdlib.h>

/* The pinned runtime's internal headers (build/grammars/runtime/src),
 * for this file alone (server/validate/module.mk). */
#include <src/subtree.h>
#include <src/language.h>
#include <src/tree.h>

/* Buffers kept from check to check up to this many nodes (3 MiB); a bigger
 * check's are freed after it. */
#define FLAT_KEEP (1u << 16)

/* A parent whose children the walk is going through: a visible node (at,
 * its index in the flat array) or a hidden one (at == NONE), whose field
 * its visible descendants without a field of their own are in. */
struct val_open {
	const Subtree *kids;
	uint32_t i, count; /* the next child; how many */
	uint32_t sidx;     /* the next child's structural index (extras have none) */
	const TSSymbol *aliases;
	const TSFieldMapEntry *fields, *fields_end;
	Length pos; /* where the next child starts */
	uint32_t at;
	TSFieldId inherit;
};
#define NONE UINT32_MAX

static int push(struct val_flat *f, uint32_t *depth, const TSLanguage *lang, Subtree s, Length pos,
                uint32_t at, TSFieldId inherit)
{
	if (*depth == f->cstack) {
		uint32_t nc = f->cstack ? f->cstack * 2 : 64;
		struct val_open *o = realloc(f->stack, nc * sizeof(*o));
		if (!o)
			return -ENOMEM;
		f->stack = o;
		f->cstack = nc;
	}
	struct val_open *o = &f->stack[(*depth)++];
	*o = (struct val_open){
	    .kids = ts_subtree_children(s),
	    .count = s.ptr->child_count,
	    .aliases = ts_language_alias_sequence(lang, s.ptr->production_id),
	    .pos = pos,
	    .at = at,
	    .inherit = inherit,
	};
	ts_language_field_map(lang, s.ptr->production_id, &o->fields, &o->fields_end);
	return 0;
}

static int grow(struct val_flat *f)
{
	if (f->count < f->cap)
		return 0;
	uint32_t nc = f->cap ? f->cap * 2 : 512;
	struct val_fnode *n = realloc(f->n, nc * sizeof(*n));
	if (!n)
		return -ENOMEM;
	f->n = n;
	f->cap = nc;
	return 0;
}

int val_flat_read(struct val_flat *f, TSNode root)
{
	f->count = 0;
	const TSLanguage *lang = ts_tree_language(root.tree);
	int r = grow(f);
	if (r < 0)
		return r;
	f->n[f->count++] = (struct val_fnode){
	    .node = root,
	    .end = 1,
	    .sym = ts_node_symbol(root),
	    .named = ts_node_is_named(root),
	};
	Subtree rs = *(const Subtree *)root.id;
	uint32_t depth = 0;
	if (ts_subtree_visible_child_count(rs) > 0)
		r = push(f, &depth, lang, rs,
		         (Length){root.context[0], {root.context[1], root.context[2]}}, 0, 0);
	while (r == 0 && depth > 0) {
		struct val_open *o = &f->stack[depth - 1];
		if (o->i == o->count) {
			if (o->at != NONE)
				f->n[o->at].end = f->count;
			depth--;
			continue;
		}
		/* The child's place, as the cursor's child iterator keeps it:
		 * a parent's first child starts where the parent does, each
		 * next one after the previous one's size and its own padding. */
		const Subtree *c = &o->kids[o->i++];
		Length pos = o->pos;
		o->pos = length_add(o->pos, ts_subtree_size(*c));
		if (o->i < o->count)
			o->pos = length_add(o->pos, ts_subtree_padding(o->kids[o->i]));
		bool visible = ts_subtree_visible(*c);
		TSSymbol alias = 0;
		TSFieldId field = 0;
		/* An extra (a comment) has no alias and no field, its own or
		 * a hidden parent's (ts_tree_cursor_current_field_id). */
		if (!ts_subtree_extra(*c)) {
			if (o->aliases) {
				alias = o->aliases[o->sidx];
				visible |= alias != 0;
			}
			for (const TSFieldMapEntry *e = o->fields; e < o->fields_end; e++)
				if (!e->inherited && e->child_index == o->sidx) {
					field = e->field_id;
					break;
				}
			if (!field)
				field = o->inherit;
			o->sidx++;
		}
		uint32_t kids = ts_subtree_visible_child_count(*c);
		if (visible) {
			if ((r = grow(f)) < 0)
				break;
			/* What ts_node_new(), ts_node_symbol() and
			 * ts_node_is_named() make of it, without three calls. */
			uint32_t i = f->count++;
			TSSymbol sym = alias ? alias : ts_subtree_symbol(*c);
			f->n[i] = (struct val_fnode){
			    .node = {{pos.bytes, pos.extent.row, pos.extent.column, alias},
			             c,
			             root.tree},
			    .end = i + 1,
			    .sym = sym == ts_builtin_sym_error ? sym : lang->public_symbol_map[sym],
			    .field = field,
			    .named = alias ? ts_language_symbol_metadata(lang, alias).named
			                   : ts_subtree_named(*c),
			};
			if (kids > 0)
				r = push(f, &depth, lang, *c, pos, i, 0);
		} else if (kids > 0) {
			/* A hidden node: its visible children are its parent's. */
			r = push(f, &depth, lang, *c, pos, NONE, field);
		}
	}
	if (r < 0)
		f->count = 0;
	return r;
}

void val_flat_trim(struct val_flat *f)
{
	f->count = 0;
	if (f->cap > FLAT_KEEP) {
		free(f->n);
		f->n = NULL;
		f->cap = 0;
	}
	if (f->cstack > FLAT_KEEP) {
		free(f->stack);
		f->stack = NULL;
		f->cstack = 0;
	}
}

void val_flat_free(struct val_flat *f)
{
	free(f->n);
	free(f->stack);
	*f = (struct val_flat){0};
}
