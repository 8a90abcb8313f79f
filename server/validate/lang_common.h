/* lang_common.h: helpers the lang_*.c files share to fold constants and
 * build qualified names into fixed VAL_VALUE_MAX buffers. */
#pragma once

#include <stdbool.h>
#include <string.h>

#include "validate/internal.h"

/* Append src to out (holding VAL_VALUE_MAX); false when it does not fit. */
static inline bool val_cat(char *out, const char *src, size_t n)
{
	size_t l = strlen(out);
	if (l + n >= VAL_VALUE_MAX)
		return false;
	memcpy(out + l, src, n);
	out[l + n] = '\0';
	return true;
}

static inline bool val_cats(char *out, const char *src)
{
	return val_cat(out, src, strlen(src));
}

/* out = a "." b, cut to VAL_VALUE_MAX. */
static inline void val_join(char *out, const char *a, const char *b)
{
	out[0] = '\0';
	if (val_cats(out, a) && val_cats(out, "."))
		val_cats(out, b);
}

/* Call visit on every node of the checked tree (d->flat), in document
 * order. */
void val_walk(struct val_doc *d, void (*visit)(struct val_doc *d, TSNode n));
/* The same, going below a node only when visit returned true for it. */
void val_walk_if(struct val_doc *d, bool (*visit)(struct val_doc *d, TSNode n));

/* The child in field name[0..len), as ts_node_child_by_field_name() finds
 * it, with the field's id looked up once per call site (*cache; 0 until
 * known) instead of by name at every call: the name lookup was a tenth of
 * a check's instructions. A call site sees one grammar (each lang_*.c file
 * is one language's), so the cached id is that grammar's. Relaxed atomics:
 * threads racing on the first lookup store the same id. */
static inline TSNode val_child_by_field(TSNode n, const char *name, uint32_t len, TSFieldId *cache)
{
	if (ts_node_is_null(n))
		return n;
	TSFieldId id = __atomic_load_n(cache, __ATOMIC_RELAXED);
	if (!id) {
		id = ts_language_field_id_for_name(ts_tree_language(n.tree), name, len);
		if (!id)
			return ts_node_child_by_field_name(n, name, len);
		__atomic_store_n(cache, id, __ATOMIC_RELAXED);
	}
	return ts_node_child_by_field_id(n, id);
}
#define val_field(n, name)                                                                         \
	({                                                                                         \
		static TSFieldId val_field_id_;                                                    \
		val_child_by_field((n), (name), sizeof(name) - 1, &val_field_id_);                 \
	})

static inline bool val_type_is(TSNode n, const char *type)
{
	return strcmp(ts_node_type(n), type) == 0;
}

/* Decode the backslash escapes common to Python and JavaScript strings
 * (\n \t \\ \' \" \xHH, \uHHHH and JavaScript's \u{H...} below 0x80, and
 * octal) in s[0..n), appending to out. Escapes outside that set are kept
 * as they are: the value is for matching names, where anything exotic is
 * suspicious anyway. */
bool val_unescape(char *out, const char *s, size_t n);
