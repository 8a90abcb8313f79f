/* edit.c: a proposal as an LSP edit. The code replaces the selected range
 * or is inserted at the cursor; a replacement is split into hunks by a
 * line diff between the old and the new text, so a client can accept the
 * changed regions one by one. Every edit is a versioned TextDocumentEdit:
 * a client applying it to another version of the document must refuse. */
#include "intent/intent.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/util.h"

/* Beyond this many line pairs the diff is not worth its memory: one hunk. */
#define DIFF_MAX_CELLS (4u << 20)

json_object *intent_position_json(const char *text, size_t off, enum pos_encoding enc)
{
	uint32_t line = 0;
	size_t line_start = 0;
	/* LSP's line breaks, as pos_offset() reads them back: "\n", "\r\n"
	 * and a lone "\r" (text is NUL-terminated, so text[i + 1] is there). */
	for (size_t i = 0; i < off; i++)
		if (text[i] == '\n' || (text[i] == '\r' && text[i + 1] != '\n'))
			line++, line_start = i + 1;
	json_object *p = json_object_new_object();
	json_object_object_add(p, "line", json_object_new_int64(line));
	json_object_object_add(
	    p, "character",
	    json_object_new_int64(pos_column(text + line_start, off - line_start, enc)));
	return p;
}

static json_object *range_json(const char *text, size_t a, size_t b, enum pos_encoding enc)
{
	json_object *r = json_object_new_object();
	json_object_object_add(r, "start", intent_position_json(text, a, enc));
	json_object_object_add(r, "end", intent_position_json(text, b, enc));
	return r;
}

static int position_offset(const char *text, size_t len, json_object *pos, enum pos_encoding enc,
                           size_t *ret)
{
	int64_t line, ch;
	if (json_get_int64(pos, "line", &line) < 0 || json_get_int64(pos, "character", &ch) < 0 ||
	    line < 0 || ch < 0 || line > UINT32_MAX || ch > UINT32_MAX)
		return -EINVAL;
	*ret = pos_offset(text, len, (uint32_t)line, (uint32_t)ch, enc);
	return 0;
}

/* Line starts of s[0..n): off[i] for i < count, off[count] = n. A last
 * line without a newline counts. */
static size_t *line_offsets(const char *s, size_t n, size_t *ret_count)
{
	size_t count = 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '\n')
			count++;
	if (n && s[n - 1] != '\n')
		count++;
	size_t *off = malloc((count + 1) * sizeof(*off));
	if (!off)
		return NULL;
	size_t k = 0;
	off[0] = 0;
	for (size_t i = 0; i < n && k < count; i++)
		if (s[i] == '\n')
			off[++k] = i + 1;
	off[count] = n;
	*ret_count = count;
	return off;
}

static bool same_line(const char *a, const size_t *ao, size_t i, const char *b, const size_t *bo,
                      size_t j)
{
	size_t la = ao[i + 1] - ao[i], lb = bo[j + 1] - bo[j];
	return la == lb && memcmp(a + ao[i], b + bo[j], la) == 0;
}

static void add_hunk(json_object *edits, json_object *hunks, const char *text, size_t base,
                     const char *old, const size_t *oo, size_t i0, size_t i1, const char *nw,
                     const size_t *no, size_t j0, size_t j1, enum pos_encoding enc)
{
	size_t a = base + oo[i0], b = base + oo[i1];
	json_object *e = json_object_new_object();
	json_object_object_add(e, "range", range_json(text, a, b, enc));
	json_object_object_add(e, "newText",
	                       json_object_new_string_len(nw + no[j0], (int)(no[j1] - no[j0])));
	/* The hunk is the edit plus the text it replaces, for display. */
	json_object *h = json_copy(e);
	json_object_array_add(edits, e);
	json_object_object_add(h, "oldText",
	                       json_object_new_string_len(old + oo[i0], (int)(oo[i1] - oo[i0])));
	json_object_array_add(hunks, h);
}

/* Hunks that turn old into nw, by a longest-common-subsequence line diff. */
static int diff_hunks(json_object *edits, json_object *hunks, const char *text, size_t base,
                      const char *old, size_t olen, const char *nw, size_t nlen,
                      enum pos_encoding enc)
{
	size_t n, m;
	size_t *oo = line_offsets(old, olen, &n);
	size_t *no = line_offsets(nw, nlen, &m);
	uint32_t *L = NULL;
	int r = -ENOMEM;
	if (!oo || !no)
		goto out;
	/* Common head and tail lines never need the table. */
	size_t head = 0;
	while (head < n && head < m && same_line(old, oo, head, nw, no, head))
		head++;
	size_t tail = 0;
	while (tail < n - head && tail < m - head &&
	       same_line(old, oo, n - 1 - tail, nw, no, m - 1 - tail))
		tail++;
	size_t N = n - head - tail, M = m - head - tail;
	if (N == 0 && M == 0) {
		r = 0;
		goto out;
	}
	if ((N + 1) * (M + 1) > DIFF_MAX_CELLS || N == 0 || M == 0) {
		add_hunk(edits, hunks, text, base, old, oo, head, n - tail, nw, no, head, m - tail,
		         enc);
		r = 0;
		goto out;
	}
	/* L[i][j]: LCS length of old lines head+i.. and new lines head+j.. */
	L = calloc((N + 1) * (M + 1), sizeof(*L));
	if (!L)
		goto out;
	for (size_t i = N; i-- > 0;)
		for (size_t j = M; j-- > 0;)
			L[i * (M + 1) + j] =
			    same_line(old, oo, head + i, nw, no, head + j)
			        ? L[(i + 1) * (M + 1) + j + 1] + 1
			        : (L[(i + 1) * (M + 1) + j] > L[i * (M + 1) + j + 1]
			               ? L[(i + 1) * (M + 1) + j]
			               : L[i * (M + 1) + j + 1]);
	size_t i = 0, j = 0;
	while (i < N || j < M) {
		if (i < N && j < M && same_line(old, oo, head + i, nw, no, head + j)) {
			i++, j++;
			continue;
		}
		size_t i0 = i, j0 = j;
		while ((i < N || j < M) &&
		       !(i < N && j < M && same_line(old, oo, head + i, nw, no, head + j))) {
			if (j < M && (i == N || L[i * (M + 1) + j + 1] >= L[(i + 1) * (M + 1) + j]))
				j++;
			else
				i++;
		}
		add_hunk(edits, hunks, text, base, old, oo, head + i0, head + i, nw, no, head + j0,
		         head + j, enc);
	}
	r = 0;
out:
	free(oo);
	free(no);
	free(L);
	return r;
}

int intent_edit_build(struct intent_proposal *p, enum pos_encoding enc)
{
	if (!p->uri) {
		/* No document: nothing to edit, only code to run. */
		json_object_put(p->edit);
		json_object_put(p->hunks);
		p->edit = NULL;
		p->hunks = json_object_new_array();
		return 0;
	}
	const char *text = p->text ? p->text : "";
	size_t len = strlen(text);
	size_t a, b;
	if (p->range) {
		if (position_offset(text, len, json_get(p->range, "start"), enc, &a) < 0 ||
		    position_offset(text, len, json_get(p->range, "end"), enc, &b) < 0 || b < a)
			return -EINVAL;
	} else if (p->position) {
		if (position_offset(text, len, p->position, enc, &a) < 0)
			return -EINVAL;
		b = a;
	} else {
		a = b = len; /* no place given: append to the document */
	}
	_cleanup_json_ json_object *edits = json_object_new_array();
	_cleanup_json_ json_object *hunks = json_object_new_array();
	const char *code = p->code;
	size_t clen = strlen(code);
	/* A selection that stops before its line's newline keeps that
	 * newline: the replacement must not add another. */
	if (a < b && text[b - 1] != '\n' && clen && code[clen - 1] == '\n')
		clen--;
	if (a < b) {
		int r = diff_hunks(edits, hunks, text, a, text + a, b - a, code, clen, enc);
		if (r < 0)
			return r;
	} else {
		/* An insertion. In the middle of a line's text it starts a
		 * line of its own; before text it ends its line. */
		char *nt = NULL;
		bool after_text = a > 0 && text[a - 1] != '\n';
		bool before_text = a < len && text[a] != '\n';
		if (asprintf(&nt, "%s%.*s%s", after_text ? "\n" : "", (int)clen, code,
		             before_text && (!clen || code[clen - 1] != '\n') ? "\n" : "") < 0)
			return -ENOMEM;
		json_object *e = json_object_new_object();
		json_object_object_add(e, "range", range_json(text, a, a, enc));
		json_object_object_add(e, "newText", json_object_new_string(nt));
		json_object *h = json_copy(e);
		json_object_array_add(edits, e);
		json_object_object_add(h, "oldText", json_object_new_string(""));
		json_object_array_add(hunks, h);
		free(nt);
	}
	json_object *tdoc = json_object_new_object();
	json_object_object_add(tdoc, "uri", json_object_new_string(p->uri ? p->uri : ""));
	json_object_object_add(tdoc, "version",
	                       p->version >= 0 ? json_object_new_int64(p->version) : NULL);
	json_object *tde = json_object_new_object();
	json_object_object_add(tde, "textDocument", tdoc);
	json_object_object_add(tde, "edits", steal_pointer(&edits));
	json_object *changes = json_object_new_array();
	json_object_array_add(changes, tde);
	json_object *we = json_object_new_object();
	json_object_object_add(we, "documentChanges", changes);
	json_object_put(p->edit);
	json_object_put(p->hunks);
	p->edit = we;
	p->hunks = steal_pointer(&hunks);
	return 0;
}
