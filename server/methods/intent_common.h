/* intent_common.h: what the intent method files (intent_run.c,
 * intent_approve.c, intent_model.c) share: error kinds, $/progress, the
 * validator's checks of a proposal (off the loop), the model settings as
 * the config gives them, the audit record
 * of a proposal, and turning a model's answer into a proposal. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "intent/intent.h"
#include "llm/llm.h"
#include "rpc/dispatch.h"
#include "validate/validate.h"

struct kiln;

/* Stable data.kind values of intent errors beyond the model's (llm.h). */
#define E_UNKNOWN_PROPOSAL "unknown_proposal"
#define E_CONFLICT         "conflict"
#define E_DENIED           "denied"
#define E_LANGUAGE         "language"
#define E_SANDBOX          "sandbox"
#define E_VALIDATOR        "validator"

#define DEFAULT_MAX_ATTEMPTS 3
#define MAX_ATTEMPTS_LIMIT   10

/* Answer call with an error whose data (stolen; NULL for a new object)
 * carries "kind". */
void intent_error(struct rpc_call *call, int code, const char *kind, json_object *data,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A $/progress notification for token (none when token is NULL); kind is
 * "begin", "report" or "end". */
void intent_progress(struct kiln *k, json_object *token, const char *kind, const char *message);
/* The validator profile the config names (NULL: the validator's default). */
const char *intent_profile(struct kiln *k);
/* A check of code on the validator's thread (validate/async.c), for the
 * intent methods: nothing of it runs on the loop. */
struct intent_check;
/* Called on a later loop turn than intent_check_start(), the check then
 * freed: r is 0 with the report (borrowed for the call) of code (the
 * check's copy, borrowed too) as the current validator judges it, or -errno with a sentence in
 * detail: -EINVAL for an unknown language or profile, -EFBIG (code over VAL_MAX_CODE), or, after a
 * configuration change, those of intent_check_start(). */
typedef void (*intent_check_fn)(void *data, int r, const struct val_report *report,
                                const char *code, const char *detail);
/* Check code (copied) as language under the active profile, on the
 * validator's thread. A check cancelled, or one that ended under an older
 * validator, by a configuration change meanwhile (val_generation()) is
 * made again under the new one: done never sees a report of other rules.
 * 0 when queued (done runs once, on a later loop turn, unless
 * intent_check_cancel() comes first); or -errno with a sentence in detail
 * when it cannot be (done never runs): -ENODEV (no validator), -EBUSY
 * (the validator's queue is full), -EAGAIN, -ENOMEM. */
int intent_check_start(struct kiln *k, const char *language, const char *code, intent_check_fn done,
                       void *data, struct intent_check **ret_check, char *detail, size_t dsz);
/* Forget a check (NULL: nothing): done never runs. Not from inside done. */
void intent_check_cancel(struct intent_check *c);
/* The model settings from the config's "llm" section and the environment. */
int intent_llm_config(struct kiln *k, struct llm_config *cfg, char *detail, size_t dsz);
/* intent.maxRepairAttempts, within 1..MAX_ATTEMPTS_LIMIT. */
unsigned intent_max_attempts(struct kiln *k);
/* intent.autoRepair: whether repaired code the validator allows runs
 * without the person's approval (false unless the config says true). */
bool intent_auto_repair(struct kiln *k);
/* Append the audit log's record of proposal p. */
void intent_audit_proposal(struct kiln *k, const struct intent_proposal *p, const char *model);
/* Fill a proposal's code, verdict, diagnostics and edit from an answer,
 * with rep, the validator's report of checked_code, which must be the
 * code the answer gives (else -ESTALE: a report is never shown for other
 * code). Returns 0, -ENOENT (no code), or another -errno with a sentence
 * in detail. */
int intent_proposal_fill(struct kiln *k, struct intent_proposal *p, const char *answer, size_t len,
                         const char *checked_code, const struct val_report *rep, char *detail,
                         size_t dsz);
