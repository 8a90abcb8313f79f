/* survey.h: what a run can reach, told to the model before it writes
 * code: the notable Python modules that import inside the box (probed
 * once per process, in a box of their own) and the workspace's files
 * (names, sizes, the header line of small CSV and JSON files, within a
 * budget; hidden names left out). Both are found on a job thread, never
 * on the loop; the owner waits for them with a callback it can cancel. */
#pragma once

#include <stdbool.h>

struct sandbox;
struct sbx_survey_wait;

/* Called on the loop once the survey is done (never from within
 * sandbox_survey_start). */
typedef void (*sbx_survey_fn)(void *data);

/* Survey now: the modules if this process has not probed them yet, the
 * workspace's files again. done(data) follows on the loop, and *ret (if
 * not NULL) is the handle that cancels it until then (set to NULL before
 * done is called). Only when no thread can be started does the work run,
 * and done come, before this returns. -ENOMEM: nothing was started. */
int sandbox_survey_start(struct sandbox *s, sbx_survey_fn done, void *data,
                         struct sbx_survey_wait **ret);
/* done will not be called. */
void sandbox_survey_cancel(struct sbx_survey_wait *w);

/* "numpy 1.24.2, pandas 1.5.3, ..." (may be ""), or NULL before the
 * first probe has ended or when it failed. Process-wide. */
const char *sandbox_modules(void);
/* The workspace's files, one line each ("sales.csv (26 bytes): month,
 * total"), from the last survey; NULL without a workspace. Valid until
 * the next survey ends. */
const char *sandbox_workspace_files(const struct sandbox *s);
