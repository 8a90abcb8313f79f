/* check.h: the validator's verdict as methods ask for it: small code is
 * checked at once on the loop (a 20-line snippet takes about a
 * millisecond), bigger code on the validator's threads (validate/async.c:
 * a quick lane and a big one), so that a big check never holds up other
 * requests, smaller checks, cancels or a run's output. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "validate/validate.h"

struct kiln;

/* Code up to this size is checked inline. Measured here: 16 KiB of Python
 * takes about 5 ms with CPython's compile; 1 MiB took about 3 s, which the
 * loop must not spend. */
#define CHECK_INLINE_MAX (16u << 10)

/* Check code[0..len) as language under profile (NULL: the configured one)
 * and hand the result to done, as val_done_fn says. code_owner, when not
 * NULL, is the JSON string code is (borrowed): a queued check then takes a
 * reference to it instead of copying the code, so a 4 MiB request costs
 * the loop no copy. Returns 0 when done has already run (small code:
 * inline, before this returns), 1 when the check is queued (*ret_job set:
 * cancel it with val_job_cancel(); done runs later from the loop), or
 * -errno when it could not be queued, with a sentence in detail (done
 * never runs): -EBUSY (the queue is full), -ENOMEM, -EAGAIN (the thread
 * cannot start). */
int method_check(struct kiln *k, const char *language, const char *code, size_t len,
                 json_object *code_owner, const char *profile, val_done_fn done, void *data,
                 struct val_job **ret_job, char *detail, size_t dsz);

/* What a run does with the validator's answer (r and report as val_done_fn
 * hands them on): one rule for the front ends that check code and then run
 * it, snippet/run and `kiln run`. allow and warn run (warnings are the
 * caller's to show); deny runs only when override is true, and the caller
 * decides what may override (the protocol: "override" with
 * validator.allowOverride; the terminal: kiln run --override); -EINVAL is
 * a language the sandbox runs but the validator has no grammar for, which
 * runs unchecked, contained as any code is; any other failure refuses. */
enum check_gate {
	CHECK_RUN,        /* allow or warn */
	CHECK_UNCHECKED,  /* no grammar: runs, and the caller says it was not checked */
	CHECK_OVERRIDDEN, /* deny, overridden: runs, and the caller says so */
	CHECK_DENIED,     /* deny: refused, with the report's diagnostics */
	CHECK_FAILED,     /* the check itself failed: refused, with its detail */
};
enum check_gate method_check_gate(int r, const struct val_report *report, bool override);
