/* check.c: a method's validator check, inline when small and on the
 * validator's threads when big (see check.h). */
#include "methods/check.h"

#include <errno.h>
#include <stdio.h>

#include "kiln.h"

/* A lent code's JSON string given back (val_check_async_lent). */
static void put_owner(void *keep)
{
	json_object_put(keep);
}

int method_check(struct kiln *k, const char *language, const char *code, size_t len,
                 json_object *code_owner, const char *profile, val_done_fn done, void *data,
                 struct val_job **ret_job, char *detail, size_t dsz)
{
	if (len <= CHECK_INLINE_MAX) {
		char why[256] = "";
		struct val_report rep;
		int r = val_check_report(k->validator, language, code, len, profile, NULL, &rep,
		                         why, sizeof(why));
		done(data, r, r < 0 ? NULL : &rep, code, len, why);
		return 0;
	}
	int r;
	if (code_owner) {
		r = val_check_async_lent(k->validator, k->loop, language, code, len, profile,
		                         put_owner, json_object_get(code_owner), done, data,
		                         ret_job);
		if (r < 0)
			json_object_put(code_owner);
	} else {
		r = val_check_async(k->validator, k->loop, language, code, len, profile, done, data,
		                    ret_job);
	}
	if (r < 0) {
		snprintf(detail, dsz, "%s",
		         r == -EBUSY ? "the validator is busy: too many big checks are waiting"
		                     : "the validator's thread cannot start");
		return r;
	}
	return 1;
}

enum check_gate method_check_gate(int r, const struct val_report *report, bool override)
{
	if (r == -EINVAL)
		return CHECK_UNCHECKED;
	if (r < 0 || !report)
		return CHECK_FAILED;
	if (report->verdict != VAL_DENY)
		return CHECK_RUN;
	return override ? CHECK_OVERRIDDEN : CHECK_DENIED;
}
