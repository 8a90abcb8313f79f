/* intent_common.h: what the intent method files (intent_run.c,
 * intent_approve.c, intent_model.c) share: error kinds, $/progress, the
 * validator and model settings as the config gives them, the audit record
 * of a proposal, and turning a model's answer into a proposal. */
#pragma once

#include <json-c/json.h>
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
/* Validate code under the active profile; see val_check. */
int intent_validate(struct kiln *k, const char *language, const char *code, json_object **ret_diags,
                    enum val_verdict *ret_verdict, char *detail, size_t dsz);
/* The model settings from the config's "llm" section and the environment. */
int intent_llm_config(struct kiln *k, struct llm_config *cfg, char *detail, size_t dsz);
/* intent.maxRepairAttempts, within 1..MAX_ATTEMPTS_LIMIT. */
unsigned intent_max_attempts(struct kiln *k);
/* Append the audit log's record of proposal p. */
void intent_audit_proposal(struct kiln *k, const struct intent_proposal *p, const char *model);
/* Fill a proposal's code, verdict, diagnostics and edit from an answer.
 * Returns 0, -ENOENT (no code), or another -errno with a sentence in
 * detail. */
int intent_proposal_fill(struct kiln *k, struct intent_proposal *p, const char *answer, size_t len,
                         char *detail, size_t dsz);
/* The report of code checked ahead (borrowed), when it is the one the
 * validator would give now; NULL to check it now. */
typedef const struct val_report *(*intent_checked_fn)(void *data, const char *code);
/* intent_proposal_fill(), taking the validator's report from checked when
 * it has one for the code extracted (intent/run checks the code as it
 * streams in). checked may be NULL. */
int intent_proposal_fill_checked(struct kiln *k, struct intent_proposal *p, const char *answer,
                                 size_t len, intent_checked_fn checked, void *data, char *detail,
                                 size_t dsz);
