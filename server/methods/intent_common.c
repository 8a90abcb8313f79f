/* intent_common.c: helpers the intent methods share (see intent_common.h). */
#include "methods/intent_common.h"

#include <errno.h>
#include <sha2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "core/json.h"
#include "core/util.h"
#include "kiln.h"

void intent_error(struct rpc_call *call, int code, const char *kind, json_object *data,
                  const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!data)
		data = json_object_new_object();
	json_object_object_add(data, "kind", json_object_new_string(kind));
	rpc_call_error(call, code, msg, data);
}

void intent_progress(struct kiln *k, json_object *token, const char *kind, const char *message)
{
	if (!token)
		return;
	json_object *v = json_object_new_object();
	json_object_object_add(v, "kind", json_object_new_string(kind));
	if (strcmp(kind, "begin") == 0) {
		json_object_object_add(v, "title", json_object_new_string("kiln"));
		json_object_object_add(v, "cancellable", json_object_new_boolean(1));
	}
	if (message)
		json_object_object_add(v, "message", json_object_new_string(message));
	json_object *p = json_object_new_object();
	json_object_object_add(p, "token", json_object_get(token));
	json_object_object_add(p, "value", v);
	rpc_notify(k->rpc, "$/progress", p);
}

const char *intent_profile(struct kiln *k)
{
	const char *profile = NULL;
	json_get_string(config_section(k->config, "validator"), "profile", &profile);
	return profile;
}

int intent_validate(struct kiln *k, const char *language, const char *code, json_object **ret_diags,
                    enum val_verdict *ret_verdict, char *detail, size_t dsz)
{
	struct validator *v = k->validator;
	if (!v) {
		snprintf(detail, dsz, "the validator is not available");
		return -ENODEV;
	}
	return val_check(v, language, code, strlen(code), intent_profile(k), k->encoding, ret_diags,
	                 ret_verdict, detail, dsz);
}

int intent_llm_config(struct kiln *k, struct llm_config *cfg, char *detail, size_t dsz)
{
	return llm_config_resolve(config_section(k->config, "llm"), cfg, detail, dsz);
}

unsigned intent_max_attempts(struct kiln *k)
{
	int64_t n;
	if (json_get_int64(config_section(k->config, "intent"), "maxRepairAttempts", &n) == 0 &&
	    n >= 1 && n <= MAX_ATTEMPTS_LIMIT)
		return (unsigned)n;
	return DEFAULT_MAX_ATTEMPTS;
}

void intent_audit_proposal(struct kiln *k, const struct intent_proposal *p, const char *model)
{
	char hash[SHA256_DIGEST_STRING_LENGTH];
	SHA256Data((const uint8_t *)p->code, strlen(p->code), hash);
	_cleanup_json_ json_object *rec = json_object_new_object();
	json_object_object_add(rec, "proposalId", json_object_new_string(p->id));
	if (p->session_id)
		json_object_object_add(rec, "sessionId", json_object_new_string(p->session_id));
	if (p->uri)
		json_object_object_add(rec, "uri", json_object_new_string(p->uri));
	json_object_object_add(rec, "language", json_object_new_string(p->language));
	json_object_object_add(rec, "codeSha256", json_object_new_string(hash));
	json_object_object_add(rec, "verdict", json_object_new_string(p->verdict_name));
	json_object_object_add(rec, "attempt", json_object_new_int((int)p->attempt));
	if (model)
		json_object_object_add(rec, "model", json_object_new_string(model));
	intent_audit(k->intent, "proposal", rec);
}

int intent_proposal_fill(struct kiln *k, struct intent_proposal *p, const char *answer, size_t len,
                         char *detail, size_t dsz)
{
	return intent_proposal_fill_checked(k, p, answer, len, NULL, NULL, detail, dsz);
}

int intent_proposal_fill_checked(struct kiln *k, struct intent_proposal *p, const char *answer,
                                 size_t len, intent_checked_fn checked, void *data, char *detail,
                                 size_t dsz)
{
	struct llm_code c;
	int r = llm_extract_code(answer, len, p->language, &c);
	if (r < 0) {
		snprintf(detail, dsz, "%s",
		         r == -ENOENT ? "the model's answer holds no code" : strerror(-r));
		return r;
	}
	p->code = steal_pointer(&c.code);
	p->explanation = steal_pointer(&c.prose);
	p->answer = strndup(answer, len);
	llm_code_release(&c);
	enum val_verdict verdict;
	const struct val_report *rep = checked ? checked(data, p->code) : NULL;
	if (rep) {
		p->diagnostics = val_report_json(rep, p->code, strlen(p->code), k->encoding);
		if (!p->diagnostics) {
			snprintf(detail, dsz, "out of memory");
			return -ENOMEM;
		}
		verdict = rep->verdict;
	} else {
		r = intent_validate(k, p->language, p->code, &p->diagnostics, &verdict, detail,
		                    dsz);
		if (r < 0)
			return r;
	}
	p->verdict = verdict;
	p->verdict_name = val_verdict_name(verdict);
	r = intent_edit_build(p, k->encoding);
	if (r < 0)
		snprintf(detail, dsz, "the range or position is not in the document");
	return r;
}
