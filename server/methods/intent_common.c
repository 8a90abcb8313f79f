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
#include "core/log.h"
#include "core/loop.h"
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

struct intent_check {
	struct kiln *k;
	char *language, *code;
	uint64_t generation; /* of the validator the check was queued on */
	struct val_job *job;
	struct loop_timer *timer;
	int r;
	struct val_report rep;
	char detail[256];
	intent_check_fn done;
	void *data;
};

static void check_free(struct intent_check *c)
{
	val_job_cancel(c->job);
	if (c->timer)
		loop_timer_stop(c->k->loop, c->timer);
	val_report_release(&c->rep);
	free(c->language);
	free(c->code);
	free(c);
}

static void check_settle(struct loop *loop, void *data);

static void check_deliver(struct intent_check *c);

/* A loop turn after the validator's answer (done may free its caller
 * from there). Past a failed timer allocation, at once. */
static void check_later(struct intent_check *c)
{
	c->timer = loop_timer_start(c->k->loop, 0, check_settle, c);
	if (!c->timer)
		check_deliver(c);
}

static void check_done(void *data, int r, struct val_report *report, const char *code, size_t len,
                       const char *detail)
{
	(void)code;
	(void)len;
	struct intent_check *c = data;
	c->job = NULL;
	c->r = r;
	if (r >= 0) {
		c->rep = *report;
		*report = (struct val_report){0};
	}
	snprintf(c->detail, sizeof(c->detail), "%s", detail ? detail : "");
	/* This may be inside val_free() of a validator that a configuration
	 * change replaces (k->validator still names it): whether the report
	 * is still the validator's is decided on the next turn. */
	check_later(c);
}

/* Queue the check on the current validator: 0, or -errno with a sentence
 * in c->detail. */
static int check_launch(struct intent_check *c)
{
	struct kiln *k = c->k;
	val_report_release(&c->rep);
	c->detail[0] = '\0';
	if (!k->validator) {
		snprintf(c->detail, sizeof(c->detail), "the validator is not available");
		return -ENODEV;
	}
	c->generation = val_generation(k->validator);
	int r = val_check_async(k->validator, k->loop, c->language, c->code, strlen(c->code),
	                        intent_profile(k), check_done, c, &c->job);
	if (r < 0) {
		c->job = NULL;
		snprintf(c->detail, sizeof(c->detail), "%s",
		         r == -EBUSY    ? "the validator is busy: too many big checks are waiting"
		         : r == -ENOMEM ? "out of memory"
		                        : "the validator's thread cannot start");
	}
	return r;
}

/* Hand the outcome to done; c is freed first. */
static void check_deliver(struct intent_check *c)
{
	struct val_report rep = c->rep;
	c->rep = (struct val_report){0};
	int r = c->r;
	char detail[sizeof(c->detail)];
	memcpy(detail, c->detail, sizeof(detail));
	intent_check_fn done = c->done;
	void *done_data = c->data;
	char *code = steal_pointer(&c->code);
	check_free(c);
	done(done_data, r, r < 0 ? NULL : &rep, code, detail);
	val_report_release(&rep);
	free(code);
}

static void check_settle(struct loop *loop, void *data)
{
	(void)loop;
	struct intent_check *c = data;
	c->timer = NULL;
	struct kiln *k = c->k;
	/* The validator was rebuilt while the check waited or ran (it was
	 * cancelled, or it finished under the old rules): check again under
	 * the current one, so that no report of another configuration is
	 * shown. */
	if (k->validator &&
	    (c->r == -ECANCELED || (c->r >= 0 && val_generation(k->validator) != c->generation))) {
		log_debug("intent: the validator changed during a check: checking again");
		c->r = check_launch(c);
		if (c->r >= 0)
			return;
	}
	check_deliver(c);
}

int intent_check_start(struct kiln *k, const char *language, const char *code, intent_check_fn done,
                       void *data, struct intent_check **ret_check, char *detail, size_t dsz)
{
	struct intent_check *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(detail, dsz, "out of memory");
		return -ENOMEM;
	}
	*c = (struct intent_check){.k = k, .done = done, .data = data};
	c->language = strdup(language);
	c->code = strdup(code);
	int r = c->language && c->code ? check_launch(c) : -ENOMEM;
	if (r < 0) {
		snprintf(detail, dsz, "%s",
		         r == -ENOMEM && !c->detail[0] ? "out of memory" : c->detail);
		check_free(c);
		return r;
	}
	*ret_check = c;
	return 0;
}

void intent_check_cancel(struct intent_check *c)
{
	if (c)
		check_free(c);
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

bool intent_auto_repair(struct kiln *k)
{
	bool on = false;
	json_get_bool(config_section(k->config, "intent"), "autoRepair", &on);
	return on;
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
                         const char *checked_code, const struct val_report *rep, char *detail,
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
	/* The verdict shown must be the one of this very code. */
	if (!rep || !checked_code || strcmp(checked_code, p->code) != 0) {
		snprintf(detail, dsz, "the code checked is not the code proposed");
		return -ESTALE;
	}
	p->diagnostics = val_report_json(rep, p->code, strlen(p->code), k->encoding);
	if (!p->diagnostics) {
		snprintf(detail, dsz, "out of memory");
		return -ENOMEM;
	}
	p->verdict = rep->verdict;
	p->verdict_name = val_verdict_name(rep->verdict);
	r = intent_edit_build(p, k->encoding);
	if (r < 0)
		snprintf(detail, dsz, "the range or position is not in the document");
	return r;
}
