/* ask.c: `kiln ask [--yes] [--lang L] [--no-repair] "intent"`: one intent,
 * non-interactively, for scripts. Prints the proposal (code, diagnostics,
 * verdict); with --yes an `allow` verdict is approved and run (with
 * repair), its output streamed. Exit status: 0 done, 1 the run failed,
 * 2 usage, 3 no proposal (the error's kind is printed), 4 not run because
 * the verdict was not allow. Talks to a kiln server child like an editor. */
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/apply.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/languages.h"
#include "cli/term.h"
#include "core/lang.h"
#include "core/json.h"
#include "core/util.h"
#include "core/visible.h"
#include "kiln.h"

static void on_sigint(int sig)
{
	(void)sig;
	cli_client_interrupted = 1;
}

static void usage(FILE *f)
{
	fprintf(
	    f, "Usage: kiln ask [--yes] [--lang LANGUAGE] [--no-repair] [--max-attempts N] INTENT\n"
	       "Ask the model for code that does INTENT, validate it and show the proposal.\n"
	       "  -y, --yes           run the proposal when its verdict is allow\n"
	       "  -l, --lang L        python (default), bash, javascript, an alias (py, sh,\n"
	       "                      js, node, ...) or a language of sandbox.languages\n"
	       "      --no-repair     do not send a failed run back to the model\n"
	       "      --max-attempts  runs including repairs (default 3)\n"
	       "      --config FILE   the config file (default $XDG_CONFIG_HOME/kiln/config.json)\n"
	       "The model comes from the config file or KILN_LLM_PROVIDER, KILN_LLM_URL,\n"
	       "KILN_MODEL, KILN_API_KEY (docs/configuration.md).\n");
}

static void say_info(void *data, const char *line)
{
	term_info(data, "%s", line);
}

/* The run's workspace changes: listed; written into the folder only when
 * the person, at a terminal, says yes. */
static void ask_apply(struct term *t, json_object *result)
{
	if (!cli_ws_report(result, say_info, t))
		return;
	char answer[16] = "";
	if (isatty(0) && isatty(2)) {
		fputs("apply these changes to your files? [y/N] ", stderr);
		if (!fgets(answer, sizeof(answer), stdin))
			answer[0] = '\0';
	}
	if (answer[0] != 'y' && answer[0] != 'Y') {
		term_info(t, "not applied: your files are as they were");
		return;
	}
	int done = cli_ws_apply(result, say_info, t);
	if (done >= 0)
		term_info(t, "applied %d change%s", done, done == 1 ? "" : "s");
}
int cli_ask(const struct kiln_options *global, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"yes", no_argument, NULL, 'y'},
	    {"lang", required_argument, NULL, 'l'},
	    {"no-repair", no_argument, NULL, 'R'},
	    {"max-attempts", required_argument, NULL, 'm'},
	    {"config", required_argument, NULL, 'c'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	bool yes = false, repair = true;
	const char *lang = "python";
	const char *config = global->config_path;
	int max_attempts = 3;
	int ch;
	optind = 0; /* 0, not 1: glibc then also resets the ordering main() chose with "+" */
	while ((ch = getopt_long(argc, argv, "yl:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'y':
			yes = true;
			break;
		case 'l':
			lang = optarg;
			break;
		case 'R':
			repair = false;
			break;
		case 'm':
			max_attempts = atoi(optarg);
			break;
		case 'c':
			config = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1 || !argv[optind][0]) {
		usage(stderr);
		return 2;
	}
	char detail[512] = "";
	int r = cli_languages_load(config, detail, sizeof(detail));
	if (r < 0) {
		cli_error("kiln ask", detail[0] ? detail : strerror(-r));
		return 3;
	}
	/* The canonical name, copied: the registry goes before the server. */
	char canon[64] = "";
	if ((lang = cli_language("kiln ask", lang)))
		snprintf(canon, sizeof(canon), "%s", lang);
	lang_configure(NULL, NULL, 0);
	if (!lang)
		return 2;
	lang = canon;
	struct term t;
	term_init(&t);
	signal(SIGINT, on_sigint);
	struct cli_client *c;
	r = cli_client_start(config, &c, detail, sizeof(detail));
	if (r < 0) {
		fputs("kiln ask: ", stderr);
		vis_fputs(stderr, detail[0] ? detail : strerror(-r), 0);
		fputc('\n', stderr);
		return 3;
	}
	int code = 0;
	json_object *params = json_object_new_object();
	json_object_object_add(params, "intent", json_object_new_string(argv[optind]));
	json_object_object_add(params, "language", json_object_new_string(lang));
	json_object_object_add(params, "workDoneToken", json_object_new_string("ask"));
	/* Declared before the first goto: a jump may not skip a cleanup
	 * variable's initialisation. */
	_cleanup_json_ json_object *res = NULL;
	_cleanup_json_ json_object *err = NULL;
	_cleanup_json_ json_object *ares = NULL;
	_cleanup_json_ json_object *aerr = NULL;
	term_status(&t, "thinking");
	r = cli_client_call(c, "intent/run", params, term_note, &t, &res, &err);
	if (r < 0 || err) {
		if (err)
			term_error(&t, err);
		else
			fprintf(stderr, "kiln ask: the server went away\n");
		code = 3;
		goto out;
	}
	term_proposal(&t, res);
	const char *verdict = "", *id = "";
	json_get_string(res, "verdict", &verdict);
	json_get_string(res, "proposalId", &id);
	if (!yes)
		goto out;
	if (strcmp(verdict, "allow") != 0) {
		fputs("kiln ask: not run: the verdict is ", stderr);
		vis_fputs(stderr, verdict, 0);
		fputs(" (only allow runs with --yes)\n", stderr);
		code = 4;
		goto out;
	}
	json_object *ap = json_object_new_object();
	json_object_object_add(ap, "proposalId", json_object_new_string(id));
	json_object_object_add(ap, "workDoneToken", json_object_new_string("approve"));
	if (repair) {
		json_object *rp = json_object_new_object();
		json_object_object_add(rp, "maxAttempts", json_object_new_int(max_attempts));
		json_object_object_add(ap, "repair", rp);
	}
	r = cli_client_call(c, "intent/approve", ap, term_note, &t, &ares, &aerr);
	if (r < 0 || aerr) {
		if (aerr)
			term_error(&t, aerr);
		code = 1;
		goto out;
	}
	term_run_result(&t, json_get(ares, "result"));
	ask_apply(&t, json_get(ares, "result"));
	bool ok = false;
	json_get_bool(ares, "ok", &ok);
	const char *stopped = NULL;
	if (json_get_string(ares, "stopped", &stopped) == 0 &&
	    strcmp(stopped, "needs_approval") == 0) {
		term_info(&t, "the repaired code needs approval:");
		term_proposal(&t, json_get(ares, "proposal"));
	}
	code = ok ? 0 : 1;
out:
	term_status_clear(&t);
	cli_client_stop(c);
	return code;
}
