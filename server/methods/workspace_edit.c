/* workspace_edit.c: workspaceChanges and workspaceEdit of a run's
 * result (see workspace_edit.h). A created or modified text file becomes
 * a CreateFile (overwrite) followed by one edit inserting its whole new
 * text, which is the file's full content whatever the client's position
 * encoding; a deleted one a DeleteFile. Binary files, files over the
 * text caps and paths that are not UTF-8 are in workspaceChanges only. */
#include "methods/workspace_edit.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"

char *file_uri(const char *path)
{
	struct buf b;
	buf_init(&b, 3 * strlen(path) + 16);
	int r = buf_append(&b, "file://", 7);
	for (const unsigned char *p = (const unsigned char *)path; r >= 0 && *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("/-._~", *p))
			r = buf_append(&b, (const char *)p, 1);
		else
			r = buf_printf(&b, "%%%02X", *p);
	}
	if (r < 0 || buf_append(&b, "", 1) < 0) {
		buf_release(&b);
		return NULL;
	}
	return buf_steal(&b, NULL);
}

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	                              : -1;
}

int file_uri_path(const char *uri, char *buf, size_t size)
{
	if (strncmp(uri, "file://", 7) != 0 || uri[7] != '/')
		return -EINVAL;
	size_t n = 0;
	for (const char *p = uri + 7; *p; p++) {
		char c = *p;
		if (c == '%') {
			int hi = hexval(p[1]), lo = hi >= 0 ? hexval(p[2]) : -1;
			if (lo < 0)
				return -EINVAL;
			c = (char)(hi * 16 + lo);
			p += 2;
		}
		if (c == '\0' || n + 1 >= size)
			return -EINVAL;
		buf[n++] = c;
	}
	buf[n] = '\0';
	return 0;
}

static json_object *pos0(void)
{
	json_object *p = json_object_new_object();
	json_object_object_add(p, "line", json_object_new_int(0));
	json_object_object_add(p, "character", json_object_new_int(0));
	return p;
}

static void add_file_ops(json_object *changes, const struct sbx_ws_change *c, const char *uri)
{
	if (c->kind == SBX_WS_DELETED) {
		json_object *del = json_object_new_object();
		json_object_object_add(del, "kind", json_object_new_string("delete"));
		json_object_object_add(del, "uri", json_object_new_string(uri));
		json_object *opts = json_object_new_object();
		json_object_object_add(opts, "recursive", json_object_new_boolean(c->dir));
		json_object_object_add(opts, "ignoreIfNotExists", json_object_new_boolean(true));
		json_object_object_add(del, "options", opts);
		json_object_array_add(changes, del);
		return;
	}
	json_object *create = json_object_new_object();
	json_object_object_add(create, "kind", json_object_new_string("create"));
	json_object_object_add(create, "uri", json_object_new_string(uri));
	json_object *opts = json_object_new_object();
	json_object_object_add(opts, "overwrite", json_object_new_boolean(true));
	json_object_object_add(create, "options", opts);
	json_object_array_add(changes, create);
	if (!c->text_len)
		return;
	json_object *doc = json_object_new_object();
	json_object *td = json_object_new_object();
	json_object_object_add(td, "uri", json_object_new_string(uri));
	json_object_object_add(td, "version", NULL);
	json_object_object_add(doc, "textDocument", td);
	json_object *edit = json_object_new_object();
	json_object *range = json_object_new_object();
	json_object_object_add(range, "start", pos0());
	json_object_object_add(range, "end", pos0());
	json_object_object_add(edit, "range", range);
	json_object_object_add(edit, "newText",
	                       json_object_new_string_len(c->text, (int)c->text_len));
	json_object *edits = json_object_new_array();
	json_object_array_add(edits, edit);
	json_object_object_add(doc, "edits", edits);
	json_object_array_add(changes, doc);
}

void run_workspace_json(json_object *r, const struct run_outcome *o)
{
	if (!o->workspace)
		return;
	json_object_object_add(r, "workspace", json_object_new_string(o->workspace));
	const struct sbx_ws_changes *ch = o->ws_changes;
	if (!ch) {
		/* The run had a workspace but its layer could not be read back. */
		json_object_object_add(r, "workspaceChanges", NULL);
		json_object_object_add(r, "workspaceEdit", NULL);
		return;
	}
	json_object *list = json_object_new_array();
	json_object *ops = json_object_new_array();
	size_t applicable = 0;
	for (size_t i = 0; i < ch->n; i++) {
		const struct sbx_ws_change *c = &ch->items[i];
		json_object *e = json_object_new_object();
		json_object_object_add(e, "path", json_object_new_string(c->path));
		json_object_object_add(e, "kind",
		                       json_object_new_string(sbx_ws_kind_name(c->kind)));
		json_object_object_add(e, "size", json_object_new_int64((int64_t)c->size));
		if (c->dir)
			json_object_object_add(e, "directory", json_object_new_boolean(true));
		/* A file with no text: its kept copy (applied by kiln itself,
		 * workspace/applyChanges), or why there is none. */
		if (sbx_ws_wants_copy(c)) {
			json_object_object_add(e, "binary", json_object_new_boolean(true));
			if (c->mime_type)
				json_object_object_add(e, "mimeType",
				                       json_object_new_string(c->mime_type));
			if (c->stored)
				json_object_object_add(e, "stored",
				                       json_object_new_string(c->stored));
			else if (c->not_kept)
				json_object_object_add(e, "notKept",
				                       json_object_new_string(c->not_kept));
		}
		/* In the edit: deletions and text files (an empty one included)
		 * whose path is exactly the host's. */
		bool in_edit = c->exact && (c->kind == SBX_WS_DELETED || c->text || c->size == 0);
		json_object_object_add(e, "inEdit", json_object_new_boolean(in_edit));
		json_object_array_add(list, e);
		if (!in_edit)
			continue;
		char *uri = file_uri(c->path);
		if (uri) {
			add_file_ops(ops, c, uri);
			applicable++;
		}
		free(uri);
	}
	json_object_object_add(r, "workspaceChanges", list);
	if (ch->omitted)
		json_object_object_add(r, "workspaceChangesOmitted",
		                       json_object_new_int64((int64_t)ch->omitted));
	if (ch->incomplete)
		json_object_object_add(r, "workspaceChangesIncomplete",
		                       json_object_new_boolean(true));
	if (!applicable) {
		json_object_put(ops);
		json_object_object_add(r, "workspaceEdit", NULL);
		return;
	}
	json_object *we = json_object_new_object();
	json_object_object_add(we, "documentChanges", ops);
	json_object_object_add(r, "workspaceEdit", we);
}
