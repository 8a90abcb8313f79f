/* validate.h: the validator. It parses a snippet with tree-sitter (Python,
 * bash, JavaScript compiled in), asks the language's real parser (CPython,
 * bash -n, node --check, in a sandboxed worker) for the exact syntax error,
 * refuses text that does not show what runs (control characters, bidi
 * overrides, invisible characters), runs the policy rules (tree-sitter
 * queries plus a rule table, data in server/validate/rules/) and answers
 * diagnostics as structs and a verdict that the rest of kiln acts on. See
 * docs/validator.md. */
#pragma once

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "core/position.h"

enum val_verdict {
	VAL_ALLOW, /* no finding that matters: run after approval */
	VAL_WARN,  /* warnings only: run after approval, showing them */
	VAL_DENY,  /* an error (a syntax error always is): do not run */
};

/* LSP DiagnosticSeverity; 0 means the rule is off. */
enum val_severity {
	VAL_SEV_OFF = 0,
	VAL_SEV_ERROR = 1,
	VAL_SEV_WARNING = 2,
	VAL_SEV_INFO = 3,
	VAL_SEV_HINT = 4,
};

/* One finding. Ranges are byte offsets into the code checked: positions in
 * the client's encoding are made only where JSON is written
 * (val_report_json), so the validator never knows about encodings. */
struct val_diag {
	uint32_t start, end; /* bytes [start, end) */
	enum val_severity severity;
	char *code;        /* rule id or "syntax"; NULL for none */
	char *message;     /* one sentence, control characters never raw */
	char *explanation; /* why the rule exists; NULL for none */
};

/* What a check found: diagnostics sorted by start, end, then code (a total
 * order: equal input gives identical output), the verdict they make, and
 * the line index of the code (LSP line breaks: \n, \r\n, lone \r). Owns
 * everything; release with val_report_release(). */
struct val_report {
	struct val_diag *diags;
	size_t ndiags, cdiags;
	enum val_verdict verdict;
	uint32_t *line_starts;
	size_t nlines;
};

struct validator;

/* Build a validator. config is the "validator" section of kiln's config
 * (borrowed; NULL for defaults): "profile" (default profile name),
 * "profiles" (per profile, category or rule id -> "error", "warning",
 * "information", "hint" or "off", laid over the defaults), "workspace"
 * (absolute path that file rules treat as inside), "python" (path of the
 * CPython used for syntax, or false for tree-sitter only), "bash" and
 * "node" (paths of the parsers used for those languages' syntax, or false),
 * and "pythonTimeoutMs" (bounds each answer of the syntax worker). -EINVAL
 * when the config or a rule file is wrong (the reason is logged as one
 * sentence), -ENOMEM. The syntax worker starts on first use. */
int val_new(json_object *config, struct validator **ret_val);
/* Free the validator. Checks still queued with val_check_async() are
 * finished first or answered -ECANCELED (see there); call it on the loop's
 * thread. */
void val_free(struct validator *v);

#define VAL_MAX_CODE (4u << 20)

/* Check code[0..len) as language ("python", "bash", "javascript"; aliases
 * py, sh, js, node) under profile (NULL: the configured default). Runs on
 * the caller's thread and may take a while for big code (a 4 MiB snippet
 * takes about a second): the loop should use val_check_async(). Returns 0
 * with the report filled in; -EINVAL for an unknown language or profile,
 * -EFBIG for code over VAL_MAX_CODE, -ECANCELED when cancel became true
 * meanwhile, with a sentence in detail. cancel may be NULL. */
int val_check_report(struct validator *v, const char *language, const char *code, size_t len,
                     const char *profile, const volatile size_t *cancel, struct val_report *ret,
                     char *detail, size_t dsz);
void val_report_release(struct val_report *r);

/* The report's diagnostics as a new JSON array of LSP Diagnostic objects
 * (yours to put), positions in enc's units. code is the code the report is
 * of. This is the protocol edge's one serializer: methods and the CLI call
 * it where they build a reply. */
json_object *val_report_json(const struct val_report *r, const char *code, size_t len,
                             enum pos_encoding enc);

/* val_check_report() and val_report_json() in one call, for callers that
 * build a reply at once: a new JSON array (yours to put) and the verdict. */
int val_check(struct validator *v, const char *language, const char *code, size_t len,
              const char *profile, enum pos_encoding enc, json_object **ret_diagnostics,
              enum val_verdict *ret_verdict, char *detail, size_t dsz);

struct loop;
/* A check on the validator's own thread, answered on the loop. */
struct val_job;
/* Called on the loop's thread once the check ends: r is 0 with the report
 * (yours: release it) of code[0..len) (the queue's copy, valid during the
 * call), or -errno with a sentence in detail: -EINVAL, -EFBIG as
 * val_check_report(), -ECANCELED when the validator was freed (rebuilt by
 * a configuration change) before the check ran; then done runs inside
 * val_free(). Never called from inside val_check_async() or
 * val_job_cancel(). */
typedef void (*val_done_fn)(void *data, int r, struct val_report *report, const char *code,
                            size_t len, const char *detail);
/* Code up to this size is checked in the validator's quick lane, bigger
 * code in its big lane: a small check never waits behind a big one. A
 * check of 64 KiB of Python takes tens of milliseconds; 4 MiB, seconds. */
#define VAL_LANE_QUICK_MAX (64u << 10)
/* Queue a check of code[0..len) (copied) on one of the validator's
 * threads, its lanes (VAL_LANE_QUICK_MAX says which), each started on
 * first use with a validator of its own built from the same config (its
 * own parser and syntax worker: nothing is shared with the loop's thread
 * or the other lane but the queue). done runs on loop later. A lane runs
 * its checks one at a time in the order queued; a quick check's done may
 * run before that of a big one queued earlier. -ENOMEM, -EAGAIN when the
 * thread cannot start, -EBUSY when the lane's queue is full (64 checks or
 * 64 MiB waiting). */
int val_check_async(struct validator *v, struct loop *loop, const char *language, const char *code,
                    size_t len, const char *profile, val_done_fn done, void *data,
                    struct val_job **ret_job);
/* The same without copying the code: code[0..len] (with a NUL at
 * code[len]) is lent, and must stay as it is until release(keep) is
 * called, once, on the loop's thread, when the check is over (after done,
 * when it was forgotten, or in val_free()). On failure (-errno) release
 * is not called: the caller still owns the code. For a big request's code,
 * which the loop would otherwise copy (4 MiB: milliseconds of page faults
 * on fresh memory) while the requests behind it wait. */
int val_check_async_lent(struct validator *v, struct loop *loop, const char *language,
                         const char *code, size_t len, const char *profile,
                         void (*release)(void *keep), void *keep, val_done_fn done, void *data,
                         struct val_job **ret_job);
/* Forget a queued or running check: done is never called, and a running
 * check stops at its next step. */
void val_job_cancel(struct val_job *job);

/* Compile Python's built-in rules ahead of their first use (the other
 * languages' compile on their first check, to keep the idle server
 * small). Returns 0 when ready, -errno on failure; 1 is kept for a step
 * that leaves more to do. */
int val_prepare(struct validator *v);

/* A number no other validator of this process has: a report computed
 * by v is what a validator of the same number would give (a
 * configuration change builds a new one). */
uint64_t val_generation(const struct validator *v);

/* "allow", "warn", "deny". */
const char *val_verdict_name(enum val_verdict v);

/* Whether syntax of Python code is checked by CPython (1) or tree-sitter
 * alone (0); starts the worker when it has not started yet. */
int val_python_available(struct validator *v);
