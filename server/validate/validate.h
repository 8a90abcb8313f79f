/* validate.h: the validator. It parses a snippet with tree-sitter (Python,
 * bash, JavaScript compiled in), asks CPython for the exact syntax error of
 * Python code, runs the policy rules (tree-sitter queries plus a rule table,
 * data in server/validate/rules/) and answers LSP diagnostics and a verdict
 * that the rest of kiln acts on. See docs/validator.md. */
#pragma once

#include <json-c/json.h>
#include <stddef.h>

#include "core/position.h"

enum val_verdict {
	VAL_ALLOW, /* no finding that matters: run after approval */
	VAL_WARN,  /* warnings only: run after approval, showing them */
	VAL_DENY,  /* an error (a syntax error always is): do not run */
};

struct validator;

/* Build a validator. config is the "validator" section of kiln's config
 * (borrowed; NULL for defaults): "profile" (default profile name),
 * "profiles" (per profile, category or rule id -> "error", "warning",
 * "information", "hint" or "off", laid over the defaults), "workspace"
 * (absolute path that file rules treat as inside), "python" (path of the
 * CPython used for syntax, or false for tree-sitter only) and
 * "pythonTimeoutMs". -EINVAL when the config or a rule file is wrong (the
 * reason is logged as one sentence), -ENOMEM. The CPython worker starts on
 * first use. */
int val_new(json_object *config, struct validator **ret_val);
void val_free(struct validator *v);

/* Check code[0..len) as language ("python", "bash", "javascript"; aliases
 * py, sh, js, node) under profile (NULL: the configured default). Fast and
 * synchronous. Returns 0 with a new JSON array of LSP Diagnostic objects
 * (yours to put) and the verdict; -EINVAL for an unknown language or
 * profile and -EFBIG for code over VAL_MAX_CODE, with a sentence in detail. */
#define VAL_MAX_CODE (4u << 20)
int val_check(struct validator *v, const char *language, const char *code, size_t len,
              const char *profile, enum pos_encoding enc, json_object **ret_diagnostics,
              enum val_verdict *ret_verdict, char *detail, size_t dsz);

/* Compile the next language's built-in rules ahead of their first use,
 * so that an idle loop can warm the validator a step at a time. Returns 1
 * while languages remain, 0 when all are ready, -errno on failure. */
int val_prepare(struct validator *v);

/* "allow", "warn", "deny". */
const char *val_verdict_name(enum val_verdict v);

/* Whether syntax of Python code is checked by CPython (1) or tree-sitter
 * alone (0); starts the worker when it has not started yet. */
int val_python_available(struct validator *v);
