/* intent_model.c: intent/model: whether the configured model server
 * answers and has the model, with what to do when it does not. */
#include "methods/methods.h"

#include <errno.h>
#include <sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "core/buf.h"
#include "core/json.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "intent/intent.h"
#include "kiln.h"
#include "llm/llm.h"
#include "methods/intent_common.h"
#include "rpc/message.h"
#include "rpc/peer.h"
#include "sandbox/run/run.h"
#include "validate/validate.h"

struct model_job {
	struct rpc_call *call;
	struct llm_chat *chat;
	struct llm_config cfg;
};

static void model_cancelled(void *data)
{
	struct model_job *j = data;
	llm_chat_cancel(j->chat);
	llm_config_release(&j->cfg);
	free(j);
}

/* Ollama lists "name:tag"; a configured name without a tag means :latest. */
static bool has_model(json_object *models, const char *model)
{
	size_t n = models ? json_object_array_length(models) : 0;
	size_t ml = strlen(model);
	for (size_t i = 0; i < n; i++) {
		const char *m = json_object_get_string(json_object_array_get_idx(models, i));
		if (!m)
			continue;
		if (strcmp(m, model) == 0 ||
		    (strncmp(m, model, ml) == 0 && strcmp(m + ml, ":latest") == 0))
			return true;
	}
	return false;
}

static void model_listed(void *data, json_object *models, const struct llm_error *err)
{
	struct model_job *j = data;
	j->chat = NULL;
	json_object *res = json_object_new_object();
	json_object_object_add(res, "provider", json_object_new_string(j->cfg.provider));
	json_object_object_add(res, "url", json_object_new_string(j->cfg.url));
	json_object_object_add(res, "model", json_object_new_string(j->cfg.model));
	json_object_object_add(res, "reachable", json_object_new_boolean(!err));
	if (models) {
		json_object_object_add(res, "models", json_object_get(models));
		json_object_object_add(res, "modelAvailable",
		                       json_object_new_boolean(has_model(models, j->cfg.model)));
	}
	if (err) {
		json_object *e = json_object_new_object();
		json_object_object_add(e, "kind", json_object_new_string(err->kind));
		json_object_object_add(e, "message", json_object_new_string(err->message));
		json_object_object_add(res, "error", e);
	}
	rpc_call_reply(j->call, res);
	llm_config_release(&j->cfg);
	free(j);
}

int method_intent_model(struct rpc_call *call, json_object *params)
{
	(void)params;
	struct kiln *k = rpc_call_ctx(call);
	struct model_job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->call = call;
	char detail[512] = "";
	if (intent_llm_config(k, &j->cfg, detail, sizeof(detail)) < 0) {
		free(j);
		intent_error(call, RPC_INVALID_PARAMS, LLM_E_CONFIG, NULL, "%s", detail);
		return 0;
	}
	/* A status check should answer quickly, whatever the chat timeouts. */
	if (j->cfg.connect_timeout_ms > 2000 || !j->cfg.connect_timeout_ms)
		j->cfg.connect_timeout_ms = 2000;
	j->cfg.idle_timeout_ms = 5000;
	int r = llm_models_start(intent_http(k->intent), &j->cfg, model_listed, j, &j->chat);
	if (r < 0) {
		llm_config_release(&j->cfg);
		free(j);
		return r;
	}
	rpc_call_on_cancel(call, model_cancelled, j);
	return 0;
}
