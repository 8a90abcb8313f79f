/* run.c: `kiln run [--lang L] [--timeout S] [--json] [--apply] [--override]
 * FILE|-`: judge code with the validator as snippet/run does (the same
 * check and the same rule, methods/check.h: deny refuses, warn is shown),
 * its box built meanwhile and sent the code only after the verdict
 * (run_start_held), then run it in the same sandbox, printing its output as it comes and
 * exiting with its status (128+N for signal N, 123 when its output reached
 * the output limit, 124 when the wall clock ended it, 125 when the sandbox
 * could not be built, 126 when the validator denied it). A file's language
 * is what it says (--lang, its extension or its #! line); kiln does not
 * guess one. */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/apply.h"
#include "cli/cache_dir.h"
#include "cli/cli.h"
#include "cli/diags.h"
#include "cli/display.h"
#include "cli/save.h"
#include "cli/term.h"
#include "config.h"
#include "core/buf.h"
#include "core/json.h"
#include "core/lang.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "core/visible.h"
#include "kiln.h"
#include "methods/check.h"
#include "methods/run_sink.h"
#include "sandbox/run/run.h"
#include "sandbox/sandbox.h"
#include "validate/validate.h"

#define EXIT_OUTPUT    123
#define EXIT_TIMEOUT   124
#define EXIT_NOSANDBOX 125
#define EXIT_DENIED    126 /* as a shell says of a command it cannot execute */

struct cli_run {
	struct kiln *k;
	struct val_job *job; /* while a big file's verdict is awaited */
	struct run *run;
	const char *path, *lang; /* as given ("-": stdin), and the canonical name */
	const char *text;        /* the code, NUL-terminated: what was checked is what runs */
	json_object *limits;
	bool json;
	bool apply;    /* --apply: write the run's workspace changes into the folder */
	bool override; /* --override: run what the validator denies */
	bool reported; /* the program's status came: every process of the box but pid 1 is gone */
	int code;
	/* The program's stdout and stderr, filtered apart (a sequence may
	 * be split across two chunks of one stream): colour passes, other
	 * escape sequences and controls do not (core/visible.h). */
	struct vis_filter out[2];
	/* Displays (run/display) as kiln shell shows them, on stderr. */
	struct term term;
};

static void write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w, n -= (size_t)w;
	}
}

/* The terminal sink: the program's streams go to kiln's own. A blocking
 * write is the terminal's backpressure, so it never asks for a pause. */
static enum run_flow on_output(void *data, struct run *run, enum run_stream stream,
                               const char *text, size_t len)
{
	struct cli_run *cr = data;
	(void)run;
	int i = stream == RUN_STDOUT ? 0 : 1;
	struct buf out;
	buf_init(&out, VIS_FILTER_OUT_MAX(len));
	vis_filter_feed(&cr->out[i], text, len, &out);
	write_all(1 + i, out.data, out.len);
	buf_release(&out);
	return RUN_CONTINUE;
}

/* The output ended: a colour the program left on is reset. */
static void output_end(struct cli_run *cr)
{
	for (int i = 0; i < 2; i++) {
		struct buf out;
		buf_init(&out, VIS_FILTER_OUT_MAX(0));
		vis_filter_end(&cr->out[i], &out);
		write_all(1 + i, out.data, out.len);
		buf_release(&out);
	}
}

static void on_artifact(void *data, struct run *run, const struct run_artifact *a)
{
	(void)data;
	(void)run;
	const char *path = a->path, *omitted = a->omitted;
	/* An inline artifact is saved into the run's folder. */
	char saved[PATH_MAX];
	unsigned char *bytes = NULL;
	size_t len = 0;
	int sr = 0;
	if (!path && a->base64 && (sr = cli_base64_decode(a->base64, &bytes, &len)) == 0) {
		sr = cli_save_artifact(a->run_id, a->name, bytes, len, saved, sizeof(saved));
		free(bytes);
		if (sr == 0)
			path = saved;
	}
	/* Names come from the program: shown, never acted on. */
	fputs("kiln: artifact out/", stderr);
	vis_fputs(stderr, a->name, 0);
	fputs(" (", stderr);
	vis_fputs(stderr, a->mime_type, 0);
	fprintf(stderr, ", %llu bytes)%s", (unsigned long long)a->size,
	        path      ? " saved at "
	        : omitted ? ": "
	                  : "");
	if (path)
		cli_print_path(stderr, path, cli_links_ok(2));
	else if (omitted)
		vis_fputs(stderr, omitted, 0);
	else if (sr < 0)
		fprintf(stderr, ": not saved (%s)", strerror(-sr));
	fputc('\n', stderr);
}

/* A display (the last expression's value, an open figure, display()):
 * its text shown, a picture or table saved in the run's folder with the
 * path printed, as kiln shell does (docs/terminal.md, "Displays"). */
static void on_display(void *data, struct run *run, const struct run_display *d)
{
	struct cli_run *cr = data;
	(void)run;
	json_object *params = run_display_json(d);
	if (!params)
		return;
	cr->term.at_bol = true; /* kiln's lines on stderr end theirs */
	term_display(&cr->term, params);
	json_object_put(params);
}

static const struct run_sink sink = {
    .output = on_output, .artifact = on_artifact, .display = on_display};

static void say_stderr(void *data, const char *line)
{
	fputs((const char *)data, stderr);
	vis_fputs(stderr, line, 0);
	fputc('\n', stderr);
}

/* What the code changed in the workspace: listed, applied with --apply. */
static void workspace_changes(struct cli_run *cr, json_object *result, const struct run_outcome *oc)
{
	size_t n = cli_ws_report(result, say_stderr, "kiln run: ");
	if (!n)
		return;
	if (!cr->apply) {
		fputs("kiln run: run with --apply to write these changes into the folder\n",
		      stderr);
		return;
	}
	int done = cli_ws_apply_changes(oc, say_stderr, "kiln run: ");
	if (done >= 0)
		fprintf(stderr, "kiln run: applied %d change%s\n", done, done == 1 ? "" : "s");
}

static void on_done(void *data, const struct run_outcome *oc, int err, const char *errmsg)
{
	struct cli_run *cr = data;
	cr->run = NULL;
	output_end(cr);
	if (err < 0) {
		fputs("kiln run: ", stderr);
		vis_fputs(stderr, errmsg, VIS_TAB);
		fputc('\n', stderr);
		cr->code = err == -EINVAL ? 2 : EXIT_NOSANDBOX;
	} else {
		cr->reported = true;
		_cleanup_json_ json_object *result = run_outcome_json(oc);
		if (cr->json && result) {
			vis_json_fputs(stderr, json_compact(result));
			fputc('\n', stderr);
		}
		if (result)
			workspace_changes(cr, result, oc);
		/* The box was killed at the cap: its SIGKILL is kiln's, not
		 * the program's, and says nothing of it. */
		if (oc->truncated) {
			fprintf(stderr,
			        "kiln run: output limit reached (%llu bytes); the run was ended\n",
			        (unsigned long long)oc->limits.output_bytes);
			cr->code = EXIT_OUTPUT;
		} else if (oc->timed_out) {
			fprintf(stderr, "kiln run: the run reached its wall-clock limit\n");
			cr->code = EXIT_TIMEOUT;
		} else if (oc->exited) {
			cr->code = oc->exit_code;
		} else {
			cr->code = 128 + oc->signal;
		}
	}
	loop_stop(cr->k->loop, 0);
}

static void on_signal(struct loop *loop, int signo, void *data)
{
	struct cli_run *cr = data;
	if (cr->job) {
		val_job_cancel(cr->job);
		cr->job = NULL;
	}
	if (cr->run) {
		run_cancel(cr->run);
		cr->run = NULL;
	}
	output_end(cr);
	cr->code = 128 + signo;
	loop_stop(loop, 0);
}

/* The validator's answer, judged by snippet/run's rule (method_check_gate):
 * diagnostics of a warn or deny are shown on stderr as `kiln validate`
 * prints them (stdout is the program's); a deny ends here with
 * EXIT_DENIED unless --override. Otherwise the run starts; when nothing
 * runs, the loop (if it runs) is stopped. */
static void on_checked(void *data, int r, struct val_report *rep, const char *code, size_t len,
                       const char *detail)
{
	struct cli_run *cr = data;
	cr->job = NULL;
	enum check_gate gate = method_check_gate(r, rep, cr->override);
	_cleanup_json_ json_object *diags =
	    rep && rep->verdict != VAL_ALLOW ? val_report_json(rep, code, len, POS_UTF32) : NULL;
	if (rep)
		val_report_release(rep);
	if (diags)
		cli_print_diagnostics(stderr, cr->path, diags);
	/* The box was built while the code was judged (run_start_held):
	 * code that may not run is never sent to it. */
	if (gate == CHECK_FAILED || gate == CHECK_DENIED) {
		run_cancel(cr->run);
		cr->run = NULL;
	}
	switch (gate) {
	case CHECK_FAILED:
		fputs("kiln run: not run: ", stderr);
		vis_fputs(stderr, detail && detail[0] ? detail : strerror(-r), 0);
		fputc('\n', stderr);
		cr->code = 2;
		goto stop;
	case CHECK_UNCHECKED:
		fputs("kiln run: not checked: ", stderr);
		vis_fputs(stderr, detail && detail[0] ? detail : strerror(-r), 0);
		fputc('\n', stderr);
		break;
	case CHECK_OVERRIDDEN:
		fputs("kiln run: the validator denies this code; running it anyway (--override)\n",
		      stderr);
		break;
	case CHECK_RUN:
		break;
	case CHECK_DENIED:
		if (cr->json) {
			_cleanup_json_ json_object *o = json_object_new_object();
			json_object_object_add(o, "kind", json_object_new_string("denied"));
			json_object_object_add(o, "verdict", json_object_new_string("deny"));
			json_object_object_add(o, "diagnostics", steal_pointer(&diags));
			vis_json_fputs(stderr, json_compact(o));
			fputc('\n', stderr);
		}
		fputs("kiln run: not run: the validator denies this code; fix it, or run it anyway "
		      "with --override\n",
		      stderr);
		cr->code = EXIT_DENIED;
		goto stop;
	}
	/* The run holds cr->text, the code judged here. */
	run_release(cr->run);
	return;
stop:
	loop_stop(cr->k->loop, 0);
}

static int read_code(const char *path, struct buf *b)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "re");
	if (!f)
		return -errno;
	char chunk[65536];
	size_t n;
	int r = 0;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if ((r = buf_append(b, chunk, n)) < 0)
			break;
	if (f != stdin)
		fclose(f);
	if (r == 0 && !b->data)
		r = buf_append(b, "", 0);
	return r;
}

static void usage(FILE *out)
{
	char names[256];
	fprintf(out,
	        "Usage: kiln run [--lang LANGUAGE] [--timeout SECONDS] [--json] [--apply]\n"
	        "                [--override] [--config FILE] FILE|-\n"
	        "Run FILE (or stdin) in kiln's sandbox, printing its output as it comes.\n"
	        "The code sees the current directory (its secrets hidden) and its writes\n"
	        "land in a private layer: kiln lists them at the end, and writes them into\n"
	        "the folder only with --apply.\n"
	        "LANGUAGE: %s, or an alias; without --lang, FILE's extension, else its\n"
	        "#! line; with neither (and for - without a #! line) --lang is needed.\n"
	        "The code is checked first, as kiln validate and every editor check it: when\n"
	        "the validator denies it, its diagnostics are printed and it does not run;\n"
	        "warnings are printed to stderr and it runs. --override runs denied code\n"
	        "anyway (you have read it; the sandbox still holds it).\n",
	        lang_names(names, sizeof(names)));
	fprintf(out, "Exit status: the code's own; 128+N when signal N ended it; 123 when its\n"
	             "output reached the output limit (sandbox.limits.outputBytes) and the run\n"
	             "was ended; 124 when the wall clock ended it; 125 when the sandbox or the\n"
	             "validator could not start; 126 when the validator denied the code (not\n"
	             "run). --json prints the run's result object (or a denial's {kind,\n"
	             "verdict, diagnostics}) to stderr at the end.\n");
}

int cli_run(const struct kiln_options *global, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"lang", required_argument, NULL, 'l'}, {"timeout", required_argument, NULL, 't'},
	    {"json", no_argument, NULL, 'j'},       {"config", required_argument, NULL, 'c'},
	    {"apply", no_argument, NULL, 'a'},      {"override", no_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0},
	};
	const char *lang = NULL, *config_path = global->config_path;
	double timeout = 0;
	bool json = false, apply = false, override = false;
	/* The validator's config for this run (see val_new below). */
	_cleanup_json_ json_object *vcfg = NULL;
	int c;
	optind = 0; /* 0, not 1: glibc then also resets the ordering main() chose with "+" */
	while ((c = getopt_long(argc, argv, "l:t:jc:h", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			lang = optarg;
			break;
		case 't': {
			char *end;
			timeout = strtod(optarg, &end);
			if (*end || timeout <= 0) {
				fprintf(stderr,
				        "kiln run: --timeout wants seconds, such as 5 or 0.5\n");
				return 2;
			}
			break;
		}
		case 'j':
			json = true;
			break;
		case 'a':
			apply = true;
			break;
		case 'o':
			override = true;
			break;
		case 'c':
			config_path = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	const char *path = argv[optind];
	struct buf code;
	buf_init(&code, 1u << 20);
	int r = read_code(path, &code);
	if (r < 0) {
		fputs("kiln run: cannot read ", stderr);
		vis_fputs(stderr, path, 0);
		fprintf(stderr, ": %s\n", r == -ENOBUFS ? "larger than 1 MiB" : strerror(-r));
		buf_release(&code);
		return 2;
	}

	struct kiln k = {.encoding = POS_UTF8};
	struct cli_run cr = {.k = &k,
	                     .path = path,
	                     .json = json,
	                     .apply = apply,
	                     .override = override,
	                     .code = EXIT_NOSANDBOX};
	vis_filter_init(&cr.out[0]);
	vis_filter_init(&cr.out[1]);
	term_init(&cr.term);
	term_ui_stderr(&cr.term);
	cr.term.quiet = true;
	char detail[512] = "";
	k.loop = loop_new();
	if (!k.loop)
		goto out;
	if ((r = config_load(config_path, &k.config, detail, sizeof(detail))) < 0) {
		fputs("kiln run: ", stderr);
		vis_fputs(stderr, detail[0] ? detail : strerror(-r), 0);
		fputc('\n', stderr);
		goto out;
	}
	cli_run_folder_caps(config_section(k.config, "sandbox"));
	if ((r = lang_configure(json_get(config_section(k.config, "sandbox"), "languages"), detail,
	                        sizeof(detail))) < 0) {
		cli_error("kiln run", detail);
		cr.code = 2;
		goto out;
	}
	/* --lang, else the file's extension or #! line (the registry's
	 * reader, as kiln validate uses); never a guess. */
	bool in = strcmp(path, "-") == 0;
	const struct lang *l =
	    lang ? lang_find(lang) : lang_for_file(in ? NULL : path, code.data, code.len);
	if (!l) {
		if (lang) {
			cli_error("kiln run", lang_unknown(lang, detail, sizeof(detail)));
		} else {
			fputs("kiln run: ", stderr);
			vis_fputs(stderr, path, 0);
			fputs(": ", stderr);
			fputs(lang_untold(in ? NULL : path, detail, sizeof(detail)), stderr);
			fputc('\n', stderr);
		}
		cr.code = 2;
		goto out;
	}
	cr.lang = l->name;
	cr.text = code.data;
	/* The config's sandbox section is checked here, once, as initialize
	 * does for the server. */
	if ((r = sandbox_new(k.loop, config_section(k.config, "sandbox"), &k.sandbox, detail,
	                     sizeof(detail))) < 0) {
		fputs("kiln run: ", stderr);
		vis_fputs(stderr, detail, 0);
		fputc('\n', stderr);
		cr.code = r == -EINVAL ? 2 : EXIT_NOSANDBOX;
		goto out;
	}
	/* The workspace is the current directory, as for a shell command. */
	char cwd[PATH_MAX], why[512];
	if (getcwd(cwd, sizeof(cwd)) &&
	    sandbox_set_workspace(k.sandbox, cwd, why, sizeof(why)) < 0 &&
	    sandbox_workspace_on(k.sandbox))
		cli_error("kiln run: no workspace", why);
	loop_signal_watch(k.loop, SIGINT, on_signal, &cr);
	loop_signal_watch(k.loop, SIGTERM, on_signal, &cr);
	loop_signal_watch(k.loop, SIGHUP, on_signal, &cr);
	if (timeout > 0) {
		cr.limits = json_object_new_object();
		json_object_object_add(cr.limits, "wallMs",
		                       json_object_new_int64((int64_t)(timeout * 1000 + 0.5)));
	}
	/* The box is built now, while the validator starts and judges the
	 * code (its rules' compile is most of a cold run's time); the code
	 * reaches the box only once the verdict lets it run (on_checked's
	 * run_release). */
	if ((r = run_start_held(k.sandbox, &sink, &cr, cr.lang, cr.text, cr.limits, on_done, &cr,
	                        &cr.run)) < 0) {
		fprintf(stderr, "kiln run: %s\n", strerror(-r));
		goto out;
	}
	/* The validator starts after the sandbox, as in the server: the
	 * sandbox's helpers are forked before any thread. */
	/* The code runs right after its check, under its own interpreter,
	 * whose syntax check is the run itself: the validator judges with
	 * its rules and tree-sitter's syntax, without its syntax worker,
	 * whose box and CPython start (about 150 ms) would more than double
	 * a cold run. A config that names a parser keeps it. */
	json_object *vsec = config_section(k.config, "validator");
	vcfg = json_object_new_object();
	if (vsec && json_object_is_type(vsec, json_type_object)) {
		json_object_object_foreach(vsec, vkey, vval)
		{
			json_object_object_add(vcfg, vkey, json_object_get(vval));
		}
	}
	static const char *const parsers[] = {"python", "bash", "node"};
	for (size_t i = 0; i < ARRAY_SIZE(parsers); i++)
		if (!json_get(vcfg, parsers[i]))
			json_object_object_add(vcfg, parsers[i], json_object_new_boolean(false));
	if ((r = val_new(vcfg, &k.validator)) < 0) {
		fprintf(stderr, "kiln run: not run: the validator cannot start: %s\n",
		        strerror(-r));
		goto out;
	}
	/* The configured profile decides, as for snippet/run: a looser one
	 * from the command line would be an override by another name. */
	r = method_check(&k, cr.lang, code.data, code.len, NULL, NULL, on_checked, &cr, &cr.job,
	                 detail, sizeof(detail));
	if (r < 0) {
		cli_error("kiln run: not run", detail);
		goto out;
	}
	/* A small file was judged already (the run released, or not); a big
	 * one is judged on the validator's thread while the loop waits. The
	 * validator, done with, is freed while the program runs. */
	if (!cr.job) {
		val_free(k.validator);
		k.validator = NULL;
	}
	if (cr.run || cr.job)
		loop_run(k.loop);
out:
	run_cancel(cr.run);
	json_object_put(cr.limits);
	val_free(k.validator);
	/* The program's status is known and its box is empty but for pid
	 * 1: kiln exits with it now, as bubblewrap does once its init
	 * reports, and a reaper waits for pid 1's end (at nice 19, then the
	 * namespaces' teardown) and removes the box's cgroup (issue 42). A
	 * run that ended otherwise (a signal, a failure, a denial) is torn
	 * down here, so nothing of it outlives kiln. */
	if (cr.reported)
		sandbox_free_apart(steal_pointer(&k.sandbox));
	sandbox_free(k.sandbox);
	json_object_put(k.config);
	lang_configure(NULL, NULL, 0);
	if (k.loop)
		loop_free(k.loop);
	buf_release(&code);
	return cr.code;
}
