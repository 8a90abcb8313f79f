/* findings.c: what the checkers (syntax.c, rules.c, text.c) share to make
 * their findings: a node's text, name and value as the rules see them, a
 * severity from a profile, a finding added to the document's report, and
 * the report's release. It sits below the checkers and validate.c, and
 * calls none of them (a language's own knowledge is reached through the
 * document's struct val_lang). */
#include "validate/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/util.h"

int val_severity_parse(const char *s, enum val_severity *ret)
{
	static const struct {
		const char *name;
		enum val_severity sev;
	} names[] = {
	    {"off", VAL_SEV_OFF},          {"error", VAL_SEV_ERROR}, {"warning", VAL_SEV_WARNING},
	    {"information", VAL_SEV_INFO}, {"info", VAL_SEV_INFO},   {"hint", VAL_SEV_HINT},
	};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (strcmp(names[i].name, s) == 0) {
			*ret = names[i].sev;
			return 0;
		}
	return -EINVAL;
}

enum val_severity val_severity_for(json_object *profile, const struct val_rule *r)
{
	enum val_severity sev;
	const char *s = NULL;
	/* A rule id names one rule and wins over its category. */
	if (json_get_string(profile, r->id, &s) < 0 &&
	    json_get_string(profile, r->category, &s) < 0)
		return VAL_SEV_OFF;
	if (val_severity_parse(s, &sev) < 0)
		return VAL_SEV_OFF;
	return sev;
}

void val_node_text(struct val_doc *d, TSNode n, char *out)
{
	uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
	if (e > d->len)
		e = (uint32_t)d->len;
	if (s > e)
		s = e;
	size_t k = e - s;
	if (k > VAL_VALUE_MAX - 1)
		k = VAL_VALUE_MAX - 1;
	memcpy(out, d->code + s, k);
	out[k] = '\0';
}

void val_node_name(struct val_doc *d, TSNode n, char *out)
{
	if (!d->lang->name_text || !d->lang->name_text(d, n, out))
		val_node_text(d, n, out);
}

void val_node_value(struct val_doc *d, TSNode n, char *out)
{
	if (!d->lang->fold(d, n, out, 0))
		val_node_name(d, n, out);
}

int val_add(struct val_doc *d, uint32_t start, uint32_t end, enum val_severity sev,
            const char *code, const char *message, const char *explanation)
{
	struct val_report *r = d->out;
	if (r->ndiags == r->cdiags) {
		size_t c = r->cdiags ? r->cdiags * 2 : 8;
		struct val_diag *p = realloc(r->diags, c * sizeof(*p));
		if (!p)
			return -ENOMEM;
		r->diags = p;
		r->cdiags = c;
	}
	if (start > d->len)
		start = (uint32_t)d->len;
	struct val_diag x = {
	    .start = start,
	    .end = end < start    ? start
	           : end > d->len ? (uint32_t)d->len
	                          : end,
	    .severity = sev,
	    .code = code ? strdup(code) : NULL,
	    .message = strdup(message),
	    .explanation = explanation ? strdup(explanation) : NULL,
	};
	if ((code && !x.code) || !x.message || (explanation && !x.explanation)) {
		free(x.code);
		free(x.message);
		free(x.explanation);
		return -ENOMEM;
	}
	r->diags[r->ndiags++] = x;
	return 0;
}

void val_report_release(struct val_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->ndiags; i++) {
		free(r->diags[i].code);
		free(r->diags[i].message);
		free(r->diags[i].explanation);
	}
	free(r->diags);
	free(r->line_starts);
	*r = (struct val_report){0};
}
