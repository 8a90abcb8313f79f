/* apply.c: showing and applying a run's workspace changes (see apply.h).
 * The writing itself is sandbox/workspace/apply.c's, the one place that
 * does it: called here for a run of this process (`kiln run`), through
 * workspace/applyChanges for a server's run (`kiln shell`, `kiln ask`). */
#include "cli/apply.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/client.h"
#include "core/json.h"
#include "core/util.h"
#include "sandbox/run/run.h"
#include "sandbox/workspace/apply.h"

struct cli_say {
	cli_say_fn say;
	void *data;
};

static void sayf(cli_say_fn say, void *data, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void sayf(cli_say_fn say, void *data, const char *fmt, ...)
{
	char line[PATH_MAX + 256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	say(data, line);
}

size_t cli_ws_report(json_object *result, cli_say_fn say, void *data)
{
	json_object *list = json_get(result, "workspaceChanges");
	size_t n =
	    list && json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
	size_t in_edit = 0;
	if (!n)
		return 0;
	sayf(say, data, "the code changed %zu file%s in the workspace (not applied yet):", n,
	     n == 1 ? "" : "s");
	for (size_t i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(list, i);
		const char *path = "?", *kind = "?";
		int64_t size = 0;
		json_get_string(c, "path", &path);
		json_get_string(c, "kind", &kind);
		json_get_int64(c, "size", &size);
		json_object *ie = json_get(c, "inEdit");
		const char *stored = NULL, *mime = NULL, *not_kept = NULL;
		json_get_string(c, "stored", &stored);
		json_get_string(c, "mimeType", &mime);
		json_get_string(c, "notKept", &not_kept);
		bool applies = (ie && json_object_get_boolean(ie)) || stored;
		in_edit += applies;
		if (stored || mime)
			sayf(say, data, "  %-8s %s (%lld bytes, %s)", kind, path, (long long)size,
			     mime ? mime : "application/octet-stream");
		else
			sayf(say, data, "  %-8s %s (%lld bytes)%s%s%s", kind, path, (long long)size,
			     applies ? "" : " [not applied: ",
			     applies    ? ""
			     : not_kept ? not_kept
			                : "not kept",
			     applies ? "" : "]");
	}
	int64_t omitted = 0;
	if (json_get_int64(result, "workspaceChangesOmitted", &omitted) == 0 && omitted > 0)
		sayf(say, data, "  ... and %lld more, not listed", (long long)omitted);
	return in_edit;
}

static void say_applied(void *data, const char *path, const char *why)
{
	struct cli_say *cs = data;
	if (why)
		sayf(cs->say, cs->data, "skipped %s: %s", path, why);
	else
		sayf(cs->say, cs->data, "applied %s", path);
}

int cli_ws_apply_changes(const struct run_outcome *oc, cli_say_fn say, void *data)
{
	if (!oc->workspace || !oc->ws_changes)
		return 0;
	struct cli_say cs = {.say = say, .data = data};
	int r = sbx_ws_apply(oc->workspace, oc->ws_changes->items, oc->ws_changes->n, NULL,
	                     say_applied, &cs);
	if (r < 0)
		sayf(say, data, "cannot open the workspace %s: %s", oc->workspace, strerror(-r));
	return r;
}

/* Call method {runId} for result's run: 1 with its answer in *ret_res
 * (the caller's to put), 0 when result has no run, or -errno after
 * saying failed and kiln's message. */
static int ws_call(struct cli_client *c, json_object *result, const char *method,
                   const char *failed, cli_say_fn say, void *data, json_object **ret_res)
{
	const char *run_id = NULL;
	if (json_get_string(result, "runId", &run_id) < 0)
		return 0;
	json_object *p = json_object_new_object();
	json_object_object_add(p, "runId", json_object_new_string(run_id));
	json_object *res = NULL;
	_cleanup_json_ json_object *err = NULL;
	int r = cli_client_call(c, method, p, NULL, NULL, &res, &err);
	if (r < 0 || err) {
		const char *msg = "kiln did not answer";
		json_get_string(err, "message", &msg);
		sayf(say, data, "%s: %s", failed, msg);
		json_object_put(res);
		return r < 0 ? r : -EIO;
	}
	*ret_res = res;
	return 1;
}

/* The length of res's array at key, 0 when it is not one. */
static size_t array_len(json_object *res, const char *key)
{
	json_object *a = json_get(res, key);
	return a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

int cli_ws_apply(struct cli_client *c, json_object *result, cli_say_fn say, void *data)
{
	_cleanup_json_ json_object *res = NULL;
	int r = ws_call(c, result, "workspace/applyChanges", "not applied", say, data, &res);
	if (r <= 0)
		return r;
	struct cli_say cs = {.say = say, .data = data};
	json_object *applied = json_get(res, "applied"), *skipped = json_get(res, "skipped");
	size_t na = array_len(res, "applied"), ns = array_len(res, "skipped");
	for (size_t i = 0; i < na; i++)
		say_applied(&cs, json_object_get_string(json_object_array_get_idx(applied, i)),
		            NULL);
	for (size_t i = 0; i < ns; i++) {
		json_object *s = json_object_array_get_idx(skipped, i);
		const char *path = "?", *why = "?";
		json_get_string(s, "path", &path);
		json_get_string(s, "reason", &why);
		say_applied(&cs, path, why);
	}
	return (int)na;
}

int cli_ws_decline(struct cli_client *c, json_object *result, cli_say_fn say, void *data)
{
	_cleanup_json_ json_object *res = NULL;
	int r = ws_call(c, result, "workspace/declineChanges",
	                "the session still holds these changes", say, data, &res);
	if (r <= 0)
		return r;
	json_object *declined = json_get(res, "declined"), *kept = json_get(res, "kept");
	size_t nd = array_len(res, "declined"), nk = array_len(res, "kept");
	for (size_t i = 0; i < nd; i++)
		sayf(say, data, "the session dropped %s",
		     json_object_get_string(json_object_array_get_idx(declined, i)));
	for (size_t i = 0; i < nk; i++) {
		json_object *k = json_object_array_get_idx(kept, i);
		const char *path = "?", *why = "?";
		json_get_string(k, "path", &path);
		json_get_string(k, "reason", &why);
		sayf(say, data, "the session still holds %s: %s", path, why);
	}
	return (int)nk;
}
