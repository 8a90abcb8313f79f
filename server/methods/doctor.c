/* doctor.c (methods): kiln/doctor: the same report as `kiln doctor`
 * (doctor/doctor.h) for the server's own sandbox, workspace and model
 * configuration, made off the loop, as the reply's result (the JSON of
 * `kiln doctor --json`). Editors show it: Neovim's :checkhealth kiln,
 * VS Code's Kiln: Doctor, Emacs's kiln-doctor. */
#include "methods/methods.h"

#include <errno.h>
#include <stdlib.h>

#include "doctor/doctor.h"
#include "intent/intent.h"
#include "kiln.h"
#include "llm/llm.h"
#include "methods/intent_common.h"
#include "rpc/dispatch.h"
#include "rpc/message.h"

struct doctor_call {
	struct rpc_call *call;
	struct doctor_run *run;
};

static void doctor_cancelled(void *data)
{
	struct doctor_call *dc = data;
	doctor_cancel(dc->run);
	free(dc);
}

static void doctor_done(void *data, const struct doctor_report *r)
{
	struct doctor_call *dc = data;
	rpc_call_reply(dc->call, doctor_report_json(r));
	free(dc);
}

int method_kiln_doctor(struct rpc_call *call, json_object *params)
{
	(void)params;
	struct kiln *k = rpc_call_ctx(call);
	if (!k->sandbox || !k->intent) {
		rpc_call_error(call, RPC_INTERNAL_ERROR, "the sandbox is not set up", NULL);
		return 0;
	}
	struct doctor_call *dc = calloc(1, sizeof(*dc));
	if (!dc)
		return -ENOMEM;
	dc->call = call;
	struct llm_config cfg;
	char detail[512] = "";
	bool have = intent_llm_config(k, &cfg, detail, sizeof(detail)) >= 0;
	int r = doctor_start(k->sandbox, intent_http(k->intent), have ? &cfg : NULL, detail, NULL,
	                     doctor_done, dc, &dc->run);
	if (have)
		llm_config_release(&cfg);
	if (r < 0) {
		free(dc);
		return r;
	}
	rpc_call_on_cancel(call, doctor_cancelled, dc);
	return 0;
}
