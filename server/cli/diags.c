/* diags.c: diagnostics printed like a compiler's (diags.h). */
#include "cli/diags.h"

#include <stdint.h>

#include "core/json.h"
#include "core/visible.h"

static const char *severity_name(int64_t sev)
{
	switch (sev) {
	case 1:
		return "error";
	case 2:
		return "warning";
	case 3:
		return "info";
	default:
		return "hint";
	}
}

void cli_print_diagnostics(FILE *out, const char *path, json_object *diags)
{
	for (size_t i = 0; i < json_object_array_length(diags); i++) {
		json_object *d = json_object_array_get_idx(diags, i);
		int64_t line = 0, col = 0, sev = 0;
		const char *msg = "", *code = NULL;
		json_get_int64(json_get_path(d, "range.start"), "line", &line);
		json_get_int64(json_get_path(d, "range.start"), "character", &col);
		json_get_int64(d, "severity", &sev);
		json_get_string(d, "message", &msg);
		json_get_string(d, "code", &code);
		vis_fputs(out, path, 0);
		fprintf(out, ":%lld:%lld: %s: ", (long long)line + 1, (long long)col + 1,
		        severity_name(sev));
		vis_fputs(out, msg, VIS_TAB);
		if (code) {
			fputs(" [", out);
			vis_fputs(out, code, 0);
			fputs("]", out);
		}
		fputc('\n', out);
	}
}
