/* doctor.c (cli): `kiln doctor [--json] [FOLDER]`: what kiln can promise
 * on this machine for this user (doctor/doctor.h), for the folder it
 * would show runs (the current one unless named), with the exact fix for
 * each degraded item. Exits 0 when every promise holds, 1 when one is
 * degraded, 2 when kiln cannot run code at all (or the command line or
 * config is wrong). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "config.h"
#include "core/json.h"
#include "core/lang.h"
#include "core/loop.h"
#include "core/visible.h"
#include "doctor/doctor.h"
#include "kiln.h"
#include "llm/http.h"
#include "llm/llm.h"
#include "sandbox/sandbox.h"

static void usage(FILE *out)
{
	fprintf(out, "Usage: kiln doctor [--json] [FOLDER]\n"
	             "\n"
	             "Check what kiln can promise here: the kernel, user namespaces, seccomp,\n"
	             "Landlock, a sandbox box, the workspace overlay for FOLDER (default: the\n"
	             "current one), cgroups, Python and numpy/pandas/matplotlib, Node, and\n"
	             "whether the model endpoint answers (a few seconds at most). Each item is\n"
	             "ok, degraded or missing, with the exact fix. --json prints one object.\n"
	             "Exit status: 0 all ok, 1 something degraded, 2 kiln cannot run code.\n");
}

struct cli_doctor {
	struct loop *loop;
	bool json;
	int code;
};

static void on_report(void *data, const struct doctor_report *r)
{
	struct cli_doctor *cd = data;
	cd->code = doctor_exit_code(r);
	if (cd->json) {
		json_object *o = doctor_report_json(r);
		vis_json_fputs(stdout, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		fputc('\n', stdout);
		json_object_put(o);
	} else {
		const char *term = getenv("TERM");
		doctor_report_print(stdout, r,
		                    isatty(1) && term && term[0] && strcmp(term, "dumb") != 0);
	}
	fflush(stdout);
}

static void on_done(void *data, const struct doctor_report *r)
{
	struct cli_doctor *cd = data;
	on_report(cd, r);
	loop_stop(cd->loop, 0);
}

int cli_doctor(const struct kiln_options *opts, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
	struct cli_doctor cd = {.code = 2};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			cd.json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind > 1) {
		usage(stderr);
		return 2;
	}
	char folder[PATH_MAX], detail[512] = "";
	if (optind < argc)
		snprintf(folder, sizeof(folder), "%s", argv[optind]);
	else if (!getcwd(folder, sizeof(folder)))
		folder[0] = '\0';

	json_object *config = NULL;
	struct loop *loop = loop_new();
	struct sandbox *sb = NULL;
	struct http *http = NULL;
	struct llm_config llm;
	bool have_llm = false;
	struct doctor_run *run = NULL;
	int r;
	if (!loop)
		goto out;
	cd.loop = loop;
	if ((r = config_load(opts->config_path, &config, detail, sizeof(detail))) < 0) {
		cli_error("kiln doctor", detail[0] ? detail : strerror(-r));
		goto out;
	}
	if ((r = lang_configure(json_get(config_section(config, "sandbox"), "languages"), detail,
	                        sizeof(detail))) < 0) {
		cli_error("kiln doctor", detail);
		goto out;
	}
	if ((r = sandbox_new(loop, config_section(config, "sandbox"), &sb, detail,
	                     sizeof(detail))) < 0) {
		cli_error("kiln doctor", detail);
		goto out;
	}
	char why[512] = "";
	if (!folder[0] || sandbox_set_workspace(sb, folder, why, sizeof(why)) >= 0)
		why[0] = '\0';
	char llm_err[512] = "";
	have_llm =
	    llm_config_resolve(config_section(config, "llm"), &llm, llm_err, sizeof(llm_err)) >= 0;
	if (!(http = http_new(loop)))
		goto out;
	if (doctor_start(sb, http, have_llm ? &llm : NULL, llm_err, why, on_done, &cd, &run) < 0)
		goto out;
	loop_run(loop);
out:
	http_free(http);
	if (have_llm)
		llm_config_release(&llm);
	sandbox_free(sb);
	json_object_put(config);
	lang_configure(NULL, NULL, 0);
	if (loop)
		loop_free(loop);
	return cd.code;
}
