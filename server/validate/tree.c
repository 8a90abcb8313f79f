/* tree.c: the tree as the rules read it, read once per check. tree-sitter's
 * cursor (Debian's 0.20.7) costs about 500 instructions a step through the
 * Python grammar's hidden nodes, and the matcher, the alias walk and each
 * pattern's look at a node's children used to take those steps again, each
 * on its own. One walk here lays every visible node out in document order
 * (preorder) with what the others ask of it: its symbol, whether it is
 * named, the field it is in, and where its subtree ends, which is where its
 * next sibling starts. A node's children are then i + 1, n[i + 1].end, ...
 * up to n[i].end, and a walk that does not go below node i goes on at
 * n[i].end. */
#include "validate/internal.h"

#include <errno.h>
#include <stdlib.h>

/* Buffers kept from check to check up to this many nodes (3 MiB); a bigger
 * check's are freed after it. */
#define FLAT_KEEP (1u << 16)

int val_flat_read(struct val_flat *f, TSNode root)
{
	f->count = 0;
	uint32_t depth = 0;
	TSTreeCursor c = ts_tree_cursor_new(root);
	int r = 0;
	for (;;) {
		if (f->count == f->cap) {
			uint32_t nc = f->cap ? f->cap * 2 : 512;
			struct val_fnode *n = realloc(f->n, nc * sizeof(*n));
			if (!n) {
				r = -ENOMEM;
				break;
			}
			f->n = n;
			f->cap = nc;
		}
		uint32_t i = f->count++;
		TSNode node = ts_tree_cursor_current_node(&c);
		f->n[i] = (struct val_fnode){
		    .node = node,
		    .end = i + 1,
		    .sym = ts_node_symbol(node),
		    .field = ts_tree_cursor_current_field_id(&c),
		    .named = ts_node_is_named(node),
		};
		/* How many children it has is known without the cursor: so the
		 * walk never asks the cursor for a sibling that is not there,
		 * its dearest step (it climbs through every hidden parent). */
		uint32_t kids = ts_node_child_count(node);
		if (kids > 0 && ts_tree_cursor_goto_first_child(&c)) {
			if (depth == f->cstack) {
				uint32_t nc = f->cstack ? f->cstack * 2 : 64;
				struct val_open *s = realloc(f->stack, nc * sizeof(*s));
				if (!s) {
					r = -ENOMEM;
					break;
				}
				f->stack = s;
				f->cstack = nc;
			}
			f->stack[depth++] = (struct val_open){.at = i, .left = kids - 1};
			continue;
		}
		/* A leaf: on to its next sibling, or close each parent the
		 * walk climbs out of. */
		while (depth > 0) {
			struct val_open *o = &f->stack[depth - 1];
			if (o->left > 0 && ts_tree_cursor_goto_next_sibling(&c)) {
				o->left--;
				break;
			}
			ts_tree_cursor_goto_parent(&c);
			f->n[o->at].end = f->count;
			depth--;
		}
		if (depth == 0)
			break;
	}
	ts_tree_cursor_delete(&c);
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
