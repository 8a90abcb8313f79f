/* report.c: a report's diagnostics as LSP Diagnostic objects, positions in
 * the client's encoding, and val_check(), a check and its JSON in one
 * call. The one place the validator's findings become JSON: the protocol
 * edge (methods/, the CLI) calls it where it builds a reply; nothing
 * inside the validator does (this file sits above validate.c). */
#include "validate/validate.h"

#include <errno.h>
#include <stdio.h>

static json_object *position(const struct val_report *r, const char *code, size_t len, uint32_t off,
                             enum pos_encoding enc)
{
	uint32_t line, col;
	pos_at(code, len, r->line_starts, r->nlines, off, enc, &line, &col);
	json_object *p = json_object_new_object();
	json_object_object_add(p, "line", json_object_new_int64(line));
	json_object_object_add(p, "character", json_object_new_int64(col));
	return p;
}

static json_object *diagnostic(const struct val_report *r, const struct val_diag *x,
                               const char *code, size_t len, enum pos_encoding enc)
{
	json_object *o = json_object_new_object();
	json_object *range = json_object_new_object();
	json_object_object_add(range, "start", position(r, code, len, x->start, enc));
	json_object_object_add(range, "end", position(r, code, len, x->end, enc));
	json_object_object_add(o, "range", range);
	json_object_object_add(o, "severity", json_object_new_int(x->severity));
	if (x->code) {
		json_object_object_add(o, "code", json_object_new_string(x->code));
		char href[160];
		snprintf(href, sizeof(href), "kiln:rules/%s", x->code);
		json_object *cd = json_object_new_object();
		json_object_object_add(cd, "href", json_object_new_string(href));
		json_object_object_add(o, "codeDescription", cd);
	}
	json_object_object_add(o, "source", json_object_new_string("kiln"));
	json_object_object_add(o, "message", json_object_new_string(x->message));
	if (x->explanation) {
		json_object *data = json_object_new_object();
		json_object_object_add(data, "explanation", json_object_new_string(x->explanation));
		json_object_object_add(o, "data", data);
	}
	return o;
}

json_object *val_report_json(const struct val_report *r, const char *code, size_t len,
                             enum pos_encoding enc)
{
	json_object *a = json_object_new_array_ext((int)r->ndiags);
	if (!a)
		return NULL;
	for (size_t i = 0; i < r->ndiags; i++)
		json_object_array_add(a, diagnostic(r, &r->diags[i], code, len, enc));
	return a;
}

int val_check(struct validator *v, const char *language, const char *code, size_t len,
              const char *profile, enum pos_encoding enc, json_object **ret_diagnostics,
              enum val_verdict *ret_verdict, char *detail, size_t dsz)
{
	struct val_report rep;
	int r = val_check_report(v, language, code, len, profile, NULL, &rep, detail, dsz);
	if (r < 0)
		return r;
	json_object *diags = val_report_json(&rep, code, len, enc);
	enum val_verdict verdict = rep.verdict;
	val_report_release(&rep);
	if (!diags)
		return -ENOMEM;
	*ret_diagnostics = diags;
	*ret_verdict = verdict;
	return 0;
}
