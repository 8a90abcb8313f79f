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

/* Call visit on root and every node below it, in document order. */
void val_walk(struct val_doc *d, TSNode root, void (*visit)(struct val_doc *d, TSNode n));

static inline bool val_type_is(TSNode n, const char *type)
{
	return strcmp(ts_node_type(n), type) == 0;
}

/* Decode the backslash escapes common to Python and JavaScript strings
 * (\n \t \\ \' \" \xHH, \uHHHH below 0x80 and octal) in s[0..n), appending to
 * out. Escapes outside that set are kept as they are: the value is for
 * matching names, where anything exotic is suspicious anyway. */
bool val_unescape(char *out, const char *s, size_t n);
