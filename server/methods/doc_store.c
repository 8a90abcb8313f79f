/* doc_store.c: the open documents' text (see doc_store.h). */
#include "methods/doc_store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/lang.h"
#include "core/log.h"

struct doc *docs_find(struct doc_store *s, const char *uri)
{
	for (struct doc *d = s->docs; d; d = d->next)
		if (strcmp(d->uri, uri) == 0)
			return d;
	return NULL;
}

/* The client's languageId names the language ("python", "sh",
 * "javascript", Eglot's "js"); a name the registry does not know falls
 * back to the file's extension. */
static void resolve_language(struct doc *d)
{
	const struct lang *l = d->language_id ? lang_find(d->language_id) : NULL;
	if (!l && strncmp(d->uri, "file://", 7) == 0)
		l = lang_for_path(d->uri + 7);
	if (!l && d->language_id && strcmp(d->language_id, "shellscript") == 0)
		l = lang_find("bash");
	if (!l) {
		d->language = NULL;
		return;
	}
	snprintf(d->lang_name, sizeof(d->lang_name), "%s", l->name);
	d->language = d->lang_name;
}

static int set_text(struct doc_store *s, struct doc *d, const char *text, size_t len)
{
	s->total -= d->text.len;
	buf_reset(&d->text);
	d->too_big = len > DOC_MAX_TEXT || s->total + len > DOC_MAX_TOTAL;
	if (d->too_big)
		return 0;
	int r = buf_append(&d->text, text, len);
	if (r == -ENOBUFS) {
		d->too_big = true;
		buf_reset(&d->text);
		return 0;
	}
	if (r == 0)
		s->total += len;
	return r;
}

int docs_open(struct doc_store *s, const char *uri, const char *language_id, int64_t version,
              const char *text, size_t len, struct doc **ret_doc)
{
	struct doc *d = docs_find(s, uri);
	if (!d) {
		if (s->ndocs >= DOC_MAX_DOCS)
			return -ENOSPC;
		d = calloc(1, sizeof(*d));
		if (!d || !(d->uri = strdup(uri))) {
			free(d);
			return -ENOMEM;
		}
		buf_init(&d->text, DOC_MAX_TEXT);
		d->next = s->docs;
		s->docs = d;
		s->ndocs++;
	}
	free(d->language_id);
	d->language_id = language_id ? strdup(language_id) : NULL;
	d->version = version;
	resolve_language(d);
	int r = set_text(s, d, text, len);
	if (r < 0)
		return r;
	*ret_doc = d;
	return 0;
}

int docs_offset(const struct doc *d, json_object *pos, enum pos_encoding enc, size_t *ret_off)
{
	int64_t line, character;
	if (json_get_int64(pos, "line", &line) < 0 ||
	    json_get_int64(pos, "character", &character) < 0 || line < 0 || character < 0 ||
	    line > UINT32_MAX || character > UINT32_MAX)
		return -EINVAL;
	*ret_off = pos_offset(d->text.data ? d->text.data : "", d->text.len, (uint32_t)line,
	                      (uint32_t)character, enc);
	return 0;
}

/* Replace text[start, end) by repl, within the cap. */
static int splice(struct doc_store *s, struct doc *d, size_t start, size_t end, const char *repl,
                  size_t rlen)
{
	size_t len = d->text.len;
	size_t nlen = len - (end - start) + rlen;
	if (nlen > DOC_MAX_TEXT || s->total - len + nlen > DOC_MAX_TOTAL) {
		d->too_big = true;
		s->total -= len;
		buf_reset(&d->text);
		return 0;
	}
	struct buf nb;
	buf_init(&nb, DOC_MAX_TEXT);
	int r = 0;
	if ((r = buf_append(&nb, d->text.data, start)) < 0 ||
	    (r = buf_append(&nb, repl, rlen)) < 0 ||
	    (r = buf_append(&nb, d->text.data + end, len - end)) < 0) {
		buf_release(&nb);
		return r;
	}
	buf_release(&d->text);
	d->text = nb;
	s->total = s->total - len + nlen;
	return 0;
}

int docs_change(struct doc_store *s, const char *uri, int64_t version, json_object *changes,
                enum pos_encoding enc, struct doc **ret_doc, char *detail, size_t dsz)
{
	struct doc *d = docs_find(s, uri);
	if (!d)
		return -ENOENT;
	d->version = version;
	*ret_doc = d;
	if (!changes || !json_object_is_type(changes, json_type_array)) {
		snprintf(detail, dsz, "didChange: contentChanges must be an array");
		return -EINVAL;
	}
	size_t n = json_object_array_length(changes);
	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(changes, i);
		json_object *t = json_get(c, "text");
		if (!t || !json_object_is_type(t, json_type_string)) {
			snprintf(detail, dsz,
			         "didChange: contentChanges[%zu].text must be a string", i);
			return -EINVAL;
		}
		const char *text = json_object_get_string(t);
		size_t tlen = (size_t)json_object_get_string_len(t);
		json_object *range = json_get(c, "range");
		if (!range) {
			int r = set_text(s, d, text, tlen);
			if (r < 0)
				return r;
			continue;
		}
		if (d->too_big)
			continue; /* nothing to apply a range to, until a whole text comes */
		size_t start, end;
		if (docs_offset(d, json_get(range, "start"), enc, &start) < 0 ||
		    docs_offset(d, json_get(range, "end"), enc, &end) < 0 || end < start) {
			snprintf(detail, dsz, "didChange: contentChanges[%zu].range is not a range",
			         i);
			return -EINVAL;
		}
		int r = splice(s, d, start, end, text, tlen);
		if (r < 0)
			return r;
	}
	return 0;
}

static void docs_free(struct doc *d)
{
	free(d->uri);
	free(d->language_id);
	buf_release(&d->text);
	free(d);
}

void docs_close(struct doc_store *s, const char *uri)
{
	for (struct doc **pp = &s->docs; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->uri, uri) == 0) {
			struct doc *d = *pp;
			*pp = d->next;
			s->ndocs--;
			s->total -= d->text.len;
			docs_free(d);
			return;
		}
	}
}

void doc_store_release(struct doc_store *s)
{
	while (s->docs) {
		struct doc *d = s->docs;
		s->docs = d->next;
		docs_free(d);
	}
	s->ndocs = 0;
	s->total = 0;
}
