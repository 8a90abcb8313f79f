/* report.c: the doctor's report at its two edges (see doctor.h): JSON
 * for machines (kiln doctor --json, the kiln/doctor method) and aligned
 * lines for people, whose every string from outside (a path, a URL, a
 * config value, an error sentence) has its control characters made
 * visible. */
#include "doctor/doctor.h"

#include <string.h>

#include "core/visible.h"

static json_object *str(const char *s)
{
	return json_object_new_string(s ? s : "");
}

json_object *doctor_report_json(const struct doctor_report *r)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array();
	json_object_object_add(o, "exitCode", json_object_new_int(doctor_exit_code(r)));
	for (int i = 0; i < DOCTOR_N; i++) {
		const struct doctor_item *it = &r->items[i];
		json_object *e = json_object_new_object();
		json_object_object_add(e, "id", str(doctor_item_id(i)));
		json_object_object_add(e, "name", str(doctor_item_name(i)));
		json_object_object_add(e, "status", str(doctor_status_name(it->status)));
		json_object_object_add(e, "value", str(it->value));
		if (it->detail[0])
			json_object_object_add(e, "detail", str(it->detail));
		if (it->fix[0])
			json_object_object_add(e, "fix", str(it->fix));
		json_object_array_add(arr, e);
	}
	json_object_object_add(o, "items", arr);

	json_object *f = json_object_new_object(), *x;
	json_object_object_add(f, "kernelRelease", str(r->kernel_release));
	json_object_object_add(f, "userNamespaces", json_object_new_boolean(r->userns));
	json_object_object_add(f, "seccompFilter", json_object_new_boolean(r->seccomp_filter));
	json_object_object_add(f, "landlockAbi", json_object_new_int(r->landlock_abi));
	json_object_object_add(f, "workspace", r->workspace[0] ? str(r->workspace) : NULL);
	json_object_object_add(f, "overlay", json_object_new_boolean(r->overlay));
	json_object_object_add(f, "cgroupVersion", json_object_new_int(r->cgroup_version));
	json_object_object_add(f, "cgroupLimits", str(r->cgroup_exact ? "exact" : "approximate"));
	x = json_object_new_object();
	json_object_object_add(x, "path", str(r->python));
	json_object_object_add(x, "version", r->python_version[0] ? str(r->python_version) : NULL);
	json_object_object_add(x, "source", r->python_source[0] ? str(r->python_source) : NULL);
	json_object_object_add(x, "prefix", r->python_prefix[0] ? str(r->python_prefix) : NULL);
	json_object *m = json_object_new_object();
	for (int i = 0; i < DOCTOR_MODULES_N; i++)
		json_object_object_add(m, doctor_module_name(i),
		                       r->module_version[i][0] ? str(r->module_version[i]) : NULL);
	json_object_object_add(x, "modules", m);
	json_object_object_add(f, "python", x);
	x = json_object_new_object();
	json_object_object_add(x, "path", str(r->node));
	json_object_object_add(x, "version", r->node_version[0] ? str(r->node_version) : NULL);
	json_object_object_add(f, "node", x);
	x = json_object_new_object();
	json_object_object_add(x, "provider", str(r->provider));
	json_object_object_add(x, "url", str(r->url));
	json_object_object_add(x, "answers", json_object_new_boolean(r->endpoint_answers));
	json_object_object_add(f, "endpoint", x);
	json_object_object_add(o, "facts", f);
	return o;
}

void doctor_report_print(FILE *f, const struct doctor_report *r, bool color)
{
	static const char *const colors[] = {"\033[32m", "\033[33m", "\033[31m"};
	size_t w = 0;
	for (int i = 0; i < DOCTOR_N; i++)
		if (strlen(doctor_item_name(i)) > w)
			w = strlen(doctor_item_name(i));
	for (int i = 0; i < DOCTOR_N; i++) {
		const struct doctor_item *it = &r->items[i];
		fprintf(f, "%-*s  %s%-8s%s  ", (int)w, doctor_item_name(i),
		        color ? colors[it->status] : "", doctor_status_name(it->status),
		        color ? "\033[0m" : "");
		vis_fputs(f, it->value, color ? VIS_COLOR : 0);
		fputc('\n', f);
		if (it->detail[0]) {
			fprintf(f, "%*s  ", (int)w + 10, "");
			vis_fputs(f, it->detail, color ? VIS_COLOR : 0);
			fputc('\n', f);
		}
		if (it->fix[0]) {
			fprintf(f, "%*s  fix: ", (int)w + 10, "");
			vis_fputs(f, it->fix, color ? VIS_COLOR : 0);
			fputc('\n', f);
		}
	}
	int code = doctor_exit_code(r);
	fprintf(f, "%s\n",
	        code == 0   ? "every promise holds"
	        : code == 1 ? "kiln runs code, with the degraded items above"
	                    : "kiln cannot run code on this machine: fix the missing items above");
}
