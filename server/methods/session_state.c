/* session_state.c: a session's names as prompt text (session_state.h). */
#include "methods/session_state.h"

#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/json.h"

#define STATE_MAX (4u * 1024)

static void dims(struct buf *b, json_object *shape)
{
	size_t n = json_object_array_length(shape);
	buf_printf(b, ", shape (");
	for (size_t i = 0; i < n && i < 8; i++)
		buf_printf(b, "%s%lld", i ? ", " : "",
		           (long long)json_object_get_int64(json_object_array_get_idx(shape, i)));
	buf_printf(b, ")");
}

char *session_state_text(json_object *vars)
{
	struct buf b;
	buf_init(&b, STATE_MAX);
	size_t n = json_object_is_type(vars, json_type_array) ? json_object_array_length(vars) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *v = json_object_array_get_idx(vars, i), *x;
		const char *name = "", *type = "", *s = NULL;
		json_get_string(v, "name", &name);
		json_get_string(v, "type", &type);
		size_t mark = b.len;
		int r = buf_printf(&b, "- %s: %s", name, type);
		if (r >= 0 && json_get_array(v, "shape", &x) == 0)
			dims(&b, x);
		if (json_get_string(v, "dtype", &s) == 0)
			buf_printf(&b, ", dtype %s", s);
		int64_t len;
		if (json_get_int64(v, "len", &len) == 0)
			buf_printf(&b, ", len %lld", (long long)len);
		if (json_get_string(v, "value", &s) == 0)
			buf_printf(&b, " = %s", s);
		if (json_get_array(v, "columns", &x) == 0) {
			size_t nc = json_object_array_length(x);
			buf_printf(&b, ", columns");
			for (size_t c = 0; c < nc; c++) {
				const char *cn = "", *ct = "";
				json_object *col = json_object_array_get_idx(x, c);
				json_get_string(col, "name", &cn);
				json_get_string(col, "dtype", &ct);
				buf_printf(&b, "%s %s (%s)", c ? "," : "", cn, ct);
			}
		}
		if (buf_printf(&b, "\n") < 0) {
			/* Over the budget: whole lines only. */
			b.len = mark;
			if (b.data)
				b.data[mark] = '\0';
			buf_printf(&b, "- (and %zu more)\n", n - i);
			break;
		}
	}
	char *out = buf_steal(&b, NULL);
	return out ? out : strdup("");
}
