/* doctor.c: the doctor's table of items and one report's life (see
 * doctor.h): the input read on the loop, the host probes on a sandbox
 * job, the endpoint asked through llm/'s model list with a short
 * timeout, and the owner's callback once both are over. */
#include "doctor/doctor.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/lang.h"
#include "core/loop.h"
#include "core/util.h"
#include "llm/http.h"
#include "llm/llm.h"
#include "sandbox/sandbox.h"

/* One table: an item's id, its name, and whether kiln runs no code at
 * all without it. */
static const struct {
	const char *id, *name;
	bool essential;
} items[DOCTOR_N] = {
    [DOCTOR_KERNEL] = {"kernel", "kernel", true},
    [DOCTOR_USERNS] = {"userns", "user namespaces", true},
    [DOCTOR_SECCOMP] = {"seccomp", "seccomp", true},
    [DOCTOR_LANDLOCK] = {"landlock", "Landlock", false},
    [DOCTOR_BOX] = {"box", "sandbox box", true},
    [DOCTOR_WORKSPACE] = {"workspace", "workspace", false},
    [DOCTOR_CGROUP] = {"cgroup", "cgroups", false},
    [DOCTOR_PYTHON] = {"python", "Python", false},
    [DOCTOR_MODULES] = {"modules", "Python modules", false},
    [DOCTOR_NODE] = {"node", "Node", false},
    [DOCTOR_ENDPOINT] = {"endpoint", "model endpoint", false},
};

const char *doctor_item_id(enum doctor_item_id i)
{
	return items[i].id;
}

const char *doctor_item_name(enum doctor_item_id i)
{
	return items[i].name;
}

const char *doctor_status_name(enum doctor_status s)
{
	return s == DOCTOR_OK ? "ok" : s == DOCTOR_DEGRADED ? "degraded" : "missing";
}

int doctor_exit_code(const struct doctor_report *r)
{
	int code = 0;
	for (int i = 0; i < DOCTOR_N; i++) {
		if (r->items[i].status == DOCTOR_MISSING && items[i].essential)
			return 2;
		if (r->items[i].status != DOCTOR_OK)
			code = 1;
	}
	return code;
}

struct doctor_run {
	struct doctor_report report;
	struct doctor_input in;
	struct llm_config llm;
	bool have_llm;
	struct loop *loop;
	struct sbx_job *job;
	struct llm_chat *chat;
	struct loop_timer *timer;
	int pending; /* the job and the endpoint, until each is over */
	int refs;    /* the job's thread, and the owner until done or cancel */
	doctor_done_fn done;
	void *data;
};

static void unref(struct doctor_run *d)
{
	if (--d->refs > 0)
		return;
	if (d->have_llm)
		llm_config_release(&d->llm);
	free(d);
}

static void on_finished(struct loop *loop, void *data)
{
	(void)loop;
	struct doctor_run *d = data;
	d->timer = NULL;
	d->done(d->data, &d->report);
	unref(d);
}

/* One of the two parts is over: the last one hands the report over from
 * the loop's next turn (never inside doctor_start). */
static void part_over(struct doctor_run *d)
{
	if (--d->pending == 0)
		d->timer = loop_timer_start(d->loop, 0, on_finished, d);
}

static void job_work(void *data, const atomic_bool *cancel)
{
	struct doctor_run *d = data;
	if (!atomic_load(cancel))
		doctor_probe_host(&d->in, &d->report);
}

static void job_done(void *data)
{
	struct doctor_run *d = data;
	d->job = NULL;
	part_over(d);
}

static void job_free(void *data)
{
	unref(data);
}

/* The URL as shown: without a user:password@ part. */
static void url_shown(const char *url, char *out, size_t n)
{
	const char *scheme = strstr(url, "://");
	const char *host = scheme ? scheme + 3 : url;
	const char *at = strchr(host, '@'), *slash = strchr(host, '/');
	if (at && (!slash || at < slash)) {
		snprintf(out, n, "%.*s%s", (int)(host - url), url, at + 1);
		return;
	}
	snprintf(out, n, "%s", url);
}

static void endpoint_done(void *data, json_object *models, const struct llm_error *err)
{
	struct doctor_run *d = data;
	struct doctor_item *it = &d->report.items[DOCTOR_ENDPOINT];
	d->chat = NULL;
	if (err && err->kind) {
		it->status = DOCTOR_DEGRADED;
		snprintf(it->detail, sizeof(it->detail), "%s", err->message);
		if (strcmp(err->kind, LLM_E_UNREACHABLE) == 0 ||
		    strcmp(err->kind, LLM_E_TIMEOUT) == 0 || strcmp(err->kind, LLM_E_STALLED) == 0)
			snprintf(it->fix, sizeof(it->fix), "%s", d->llm.ops->start_hint);
		else if (strcmp(err->kind, LLM_E_UNAUTHORIZED) == 0 ||
		         strcmp(err->kind, LLM_E_FORBIDDEN) == 0)
			snprintf(it->fix, sizeof(it->fix), "%s", d->llm.ops->auth_hint);
		else
			snprintf(it->fix, sizeof(it->fix),
			         "check llm.url and llm.provider "
			         "(docs/configuration.md)");
	} else {
		d->report.endpoint_answers = true;
		size_t n = models ? json_object_array_length(models) : 0;
		size_t len = strlen(it->value);
		snprintf(it->value + len, sizeof(it->value) - len, " (answers, %zu model%s)", n,
		         n == 1 ? "" : "s");
	}
	part_over(d);
}

static void read_input(struct sandbox *s, struct doctor_input *in)
{
	const char *ws = sandbox_workspace(s);
	snprintf(in->workspace, sizeof(in->workspace), "%s", ws ? ws : "");
	in->workspace_on = sandbox_workspace_on(s);
	const struct lang *py = lang_find("python"), *js = lang_find("javascript");
	snprintf(in->python, sizeof(in->python), "%s", py && py->argv[0] ? py->argv[0] : "");
	/* As a run's plan decides (box/plan.c): the built-in python runs
	 * the project's own Python when there is one. */
	if (py && py->argv[0] && strcmp(py->argv[0], "/usr/bin/python3") == 0)
		in->py_rc = sandbox_python(s, &in->py, in->py_err, sizeof(in->py_err));
	snprintf(in->node, sizeof(in->node), "%s", js && js->argv[0] ? js->argv[0] : "");
	const char *why = "";
	in->cgroup_root = sandbox_cgroup(s, &in->cgroup_controllers, &why);
	in->limits = *sandbox_limits(s);
	snprintf(in->cgroup_why, sizeof(in->cgroup_why), "%s", why);
}

static void start_endpoint(struct doctor_run *d, struct http *h, const struct llm_config *llm,
                           const char *llm_error)
{
	struct doctor_item *it = &d->report.items[DOCTOR_ENDPOINT];
	if (!llm) {
		it->status = DOCTOR_DEGRADED;
		snprintf(it->value, sizeof(it->value), "not configured");
		snprintf(it->detail, sizeof(it->detail), "%s",
		         llm_error ? llm_error : "the llm section is not valid");
		snprintf(it->fix, sizeof(it->fix), "fix the llm section (docs/configuration.md)");
		return;
	}
	snprintf(d->report.provider, sizeof(d->report.provider), "%s", llm->provider);
	url_shown(llm->url ? llm->url : "", d->report.url, sizeof(d->report.url));
	snprintf(it->value, sizeof(it->value), "%s %s", llm->provider, d->report.url);
	if (llm_config_copy(llm, &d->llm) < 0) {
		it->status = DOCTOR_DEGRADED;
		snprintf(it->detail, sizeof(it->detail), "out of memory");
		return;
	}
	d->have_llm = true;
	/* A few seconds at most: the doctor says whether it answers, it does
	 * not wait for a slow one. */
	if (!d->llm.connect_timeout_ms || d->llm.connect_timeout_ms > DOCTOR_ENDPOINT_MS)
		d->llm.connect_timeout_ms = DOCTOR_ENDPOINT_MS;
	d->llm.idle_timeout_ms = DOCTOR_ENDPOINT_MS;
	d->llm.total_timeout_ms = DOCTOR_ENDPOINT_MS;
	d->llm.cache = false;
	if (llm_models_start(h, &d->llm, endpoint_done, d, &d->chat) < 0) {
		it->status = DOCTOR_DEGRADED;
		snprintf(it->detail, sizeof(it->detail), "out of memory");
		return;
	}
	d->pending++;
}

int doctor_start(struct sandbox *s, struct http *h, const struct llm_config *llm,
                 const char *llm_error, const char *ws_refused, doctor_done_fn done, void *data,
                 struct doctor_run **ret)
{
	struct doctor_run *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->loop = http_loop(h);
	d->done = done;
	d->data = data;
	d->refs = 2;
	d->pending = 1;
	read_input(s, &d->in);
	snprintf(d->in.workspace_refused, sizeof(d->in.workspace_refused), "%s",
	         ws_refused ? ws_refused : "");
	start_endpoint(d, h, llm, llm_error);
	/* The owner's handle first: a job that cannot get a thread runs here
	 * and now, and its done must find everything set. */
	*ret = d;
	if (sandbox_job_start(s, job_work, job_done, job_free, d, &d->job) < 0) {
		llm_chat_cancel(d->chat);
		if (d->have_llm)
			llm_config_release(&d->llm);
		free(d);
		*ret = NULL;
		return -ENOMEM;
	}
	return 0;
}

void doctor_cancel(struct doctor_run *d)
{
	if (!d)
		return;
	llm_chat_cancel(d->chat);
	d->chat = NULL;
	if (d->timer)
		loop_timer_stop(d->loop, d->timer);
	d->timer = NULL;
	if (d->job)
		sbx_job_cancel(d->job);
	d->job = NULL;
	unref(d);
}
