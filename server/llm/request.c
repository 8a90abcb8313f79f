/* request.c: what providers share to describe a request (llm_request: a
 * URL, header lines, SigV4 signing) and to reshape kiln's chat messages
 * for the APIs that take the system prompt apart and want strictly
 * alternating turns (Anthropic's Messages, Bedrock's Converse). */
#include "llm/llm.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/json.h"

void llm_request_init(struct llm_request *r, const struct llm_config *c, const char *path)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->url, sizeof(r->url), "%s%s", c->url, path);
}

int llm_request_header(struct llm_request *r, const char *fmt, ...)
{
	unsigned n = r->nheaders;
	if (n >= sizeof(r->hbuf) / sizeof(r->hbuf[0]))
		return -E2BIG;
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(r->hbuf[n], sizeof(r->hbuf[n]), fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= sizeof(r->hbuf[n]))
		return -E2BIG;
	r->headers[n] = r->hbuf[n];
	r->headers[n + 1] = NULL;
	r->nheaders = n + 1;
	return 0;
}

void llm_request_wipe(struct llm_request *r)
{
	explicit_bzero(r->hbuf, sizeof(r->hbuf));
	explicit_bzero(r->userpwd, sizeof(r->userpwd));
}

/* One turn in the shape the API takes. */
static json_object *turn(const char *role, const char *text, size_t len, bool text_blocks)
{
	json_object *t = json_object_new_object();
	json_object_object_add(t, "role", json_object_new_string(role));
	json_object *content = json_object_new_string_len(text, (int)len);
	if (text_blocks) {
		json_object *block = json_object_new_object();
		json_object_object_add(block, "text", content);
		content = json_object_new_array();
		json_object_array_add(content, block);
	}
	json_object_object_add(t, "content", content);
	return t;
}

json_object *llm_turns(json_object *messages, bool text_blocks, char **ret_system)
{
	struct buf sys, cur;
	buf_init(&sys, SIZE_MAX / 2);
	buf_init(&cur, SIZE_MAX / 2);
	json_object *out = json_object_new_array();
	const char *cur_role = NULL;
	size_t n =
	    json_object_is_type(messages, json_type_array) ? json_object_array_length(messages) : 0;
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		json_object *m = json_object_array_get_idx(messages, i);
		const char *role = "user", *content = "";
		json_get_string(m, "role", &role);
		json_get_string(m, "content", &content);
		if (strcmp(role, "system") == 0) {
			if (sys.len)
				r = buf_append(&sys, "\n\n", 2);
			if (r == 0)
				r = buf_append(&sys, content, strlen(content));
			continue;
		}
		role = strcmp(role, "assistant") == 0 ? "assistant" : "user";
		/* Both APIs begin with the user's turn. */
		if (!cur_role && strcmp(role, "assistant") == 0)
			continue;
		if (cur_role && strcmp(cur_role, role) != 0) {
			json_object_array_add(
			    out, turn(cur_role, cur.data ? cur.data : "", cur.len, text_blocks));
			buf_reset(&cur);
		} else if (cur_role) {
			r = buf_append(&cur, "\n\n", 2);
		}
		cur_role = role;
		if (r == 0)
			r = buf_append(&cur, content, strlen(content));
	}
	if (r == 0 && cur_role)
		json_object_array_add(
		    out, turn(cur_role, cur.data ? cur.data : "", cur.len, text_blocks));
	buf_release(&cur);
	if (r < 0 || !out) {
		buf_release(&sys);
		json_object_put(out);
		return NULL;
	}
	*ret_system = sys.len ? buf_steal(&sys, NULL) : NULL;
	buf_release(&sys);
	return out;
}
