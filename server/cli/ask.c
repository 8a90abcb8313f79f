/* ask.c: `kiln ask [--yes] [--lang L] [--no-repair] "intent"`: one intent,
 * non-interactively, for scripts. Prints the proposal (code, diagnostics,
 * verdict); with --yes an `allow` verdict is approved and run (with
 * repair), its output streamed. A repair is a new proposal: at a terminal
 * the person is asked before it runs, elsewhere it is printed and not run,
 * unless --auto-repair (or intent.autoRepair) lets allowed repairs run.
 * kiln's own lines go to stderr, so stdout
 * is the program's; --json prints one JSON object instead. --session NAME
 * keeps a python session's code between invocations (replayed into a fresh
 * session each time, see docs/terminal.md). Exit status: 0 done, 1 the run
 * failed, 2 usage, 3 no proposal (the error's kind is printed), 4 not run
 * because of the verdict. Talks to a kiln server child like an editor. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli/apply.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/languages.h"
#include "cli/notes.h"
#include "cli/term.h"
#include "core/buf.h"
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

/* --json: what the run sent, instead of the terminal. */
struct collect {
	struct term *t;
	bool json;
	struct buf out[2];
	json_object *displays;
	char *ran;            /* the code that ran last (a repair that ran replaces it) */
	char *repaired;       /* the last repair's code, which may not run */
	char repaired_id[48]; /* and its proposal's id */
};

static void collect_note(void *data, const char *method, json_object *params)
{
	struct collect *c = data;
	if (method && strcmp(method, "intent/attempt") == 0) {
		const char *stage = "", *code = NULL, *pid = "";
		json_get_string(params, "stage", &stage);
		json_get_string(params, "proposalId", &pid);
		if (strcmp(stage, "repaired") == 0 && json_get_string(params, "code", &code) == 0) {
			free(c->repaired);
			c->repaired = strdup(code);
			snprintf(c->repaired_id, sizeof(c->repaired_id), "%s", pid);
		} else if (strcmp(stage, "running") == 0 && c->repaired &&
		           strcmp(pid, c->repaired_id) == 0) {
			/* The repair runs (approved, or automatic repair). */
			free(c->ran);
			c->ran = strdup(c->repaired);
		}
	}
	if (!c->json) {
		term_note(c->t, method, params);
		return;
	}
	if (!method)
		return;
	if (strcmp(method, "run/output") == 0) {
		const char *stream = "stdout", *text = "";
		json_get_string(params, "stream", &stream);
		json_get_string(params, "text", &text);
		buf_append(&c->out[strcmp(stream, "stderr") == 0], text, strlen(text));
	} else if (strcmp(method, "run/display") == 0 &&
	           json_object_array_length(c->displays) < 64) {
		json_object_array_add(c->displays, json_object_get(params));
	}
}

/* --- --session NAME: the code that ran, kept in a file ------------------ */

#define SESSION_CELLS_MAX 64

static bool session_name_ok(const char *n)
{
	size_t len = strlen(n);
	if (!len || len > 64 || n[0] == '.')
		return false;
	for (const char *p = n; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("._-", *p)))
			return false;
	return true;
}

/* $XDG_STATE_HOME/kiln/sessions/NAME.json, its folder made. */
static int session_file(const char *name, char *ret, size_t size)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char dir[3072];
	if (state && state[0] == '/')
		snprintf(dir, sizeof(dir), "%s/kiln/sessions", state);
	else if (home && home[0] == '/')
		snprintf(dir, sizeof(dir), "%s/.local/state/kiln/sessions", home);
	else
		return -ENOENT;
	for (char *p = dir + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(dir, 0700);
			*p = '/';
		}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	snprintf(ret, size, "%s/%s.json", dir, name);
	return 0;
}

/* The kept cells (an array; empty when there are none yet). */
static json_object *session_load(const char *path)
{
	json_object *o = json_object_from_file(path);
	json_object *cells = json_get(o, "cells");
	json_object *ret = json_object_is_type(cells, json_type_array) ? json_object_get(cells)
	                                                               : json_object_new_array();
	json_object_put(o);
	return ret;
}

static void session_save(const char *path, json_object *cells, const char *code)
{
	json_object_array_add(cells, json_object_new_string(code));
	while (json_object_array_length(cells) > SESSION_CELLS_MAX)
		json_object_array_del_idx(cells, 0, 1);
	json_object *o = json_object_new_object();
	json_object_object_add(o, "cells", json_object_get(cells));
	char tmp[4300];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (json_object_to_file_ext(tmp, o, JSON_C_TO_STRING_PRETTY) < 0 || rename(tmp, path) < 0)
		fprintf(stderr, "kiln ask: cannot keep the session in %s\n", path);
	json_object_put(o);
}

/* A fresh session with the kept cells run again in it (their output
 * dropped); its id into ret. -errno with a line on stderr. */
static int session_replay(struct cli_client *c, json_object *cells, char *ret, size_t size)
{
	_cleanup_json_ json_object *res = NULL;
	_cleanup_json_ json_object *err = NULL;
	json_object *p = json_object_new_object();
	json_object_object_add(p, "language", json_object_new_string("python"));
	if (cli_client_call(c, "session/open", p, NULL, NULL, &res, &err) < 0 || err) {
		const char *msg = "the server went away";
		json_get_string(err, "message", &msg);
		fputs("kiln ask: no session: ", stderr);
		vis_fputs(stderr, msg, 0);
		fputc('\n', stderr);
		return -EIO;
	}
	const char *id = "";
	json_get_string(res, "sessionId", &id);
	snprintf(ret, size, "%s", id);
	size_t n = json_object_array_length(cells);
	for (size_t i = 0; i < n; i++) {
		json_object *rp = json_object_new_object();
		json_object_object_add(rp, "sessionId", json_object_new_string(ret));
		json_object_object_add(rp, "code",
		                       json_object_get(json_object_array_get_idx(cells, i)));
		_cleanup_json_ json_object *rres = NULL;
		_cleanup_json_ json_object *rerr = NULL;
		if (cli_client_call(c, "snippet/run", rp, NULL, NULL, &rres, &rerr) < 0)
			return -EPIPE;
		int64_t code = -1;
		if (rerr || json_get_int64(rres, "exitCode", &code) < 0 || code != 0)
			fprintf(stderr,
			        "kiln ask: replaying the session: cell %zu did not succeed again\n",
			        i + 1);
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(
	    f, "Usage: kiln ask [--yes] [--lang LANGUAGE] [--no-repair] [--auto-repair]\n"
	       "                [--max-attempts N] INTENT\n"
	       "Ask the model for code that does INTENT, validate it and show the proposal.\n"
	       "  -y, --yes           run the proposal when its verdict is allow\n"
	       "      --allow-warn    with --yes, run a warn verdict too\n"
	       "      --json          print one JSON object (proposal, run, output) on stdout\n"
	       "      --session NAME  python: keep what ran under NAME for the next kiln ask\n"
	       "                      --session NAME (its code is replayed into a session)\n"
	       "  -l, --lang L        python (default), bash, javascript, an alias (py, sh,\n"
	       "                      js, node, ...) or a language of sandbox.languages\n"
	       "      --no-repair     do not send a failed run back to the model\n"
	       "      --auto-repair   run a repair the validator allows without asking (default:\n"
	       "                      intent.autoRepair, off: at a terminal you are asked, else\n"
	       "                      the repaired code is printed and not run)\n"
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
static void ask_apply(struct cli_client *c, struct term *t, json_object *result)
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
	int done = cli_ws_apply(c, result, say_info, t);
	if (done >= 0)
		term_info(t, "applied %d change%s", done, done == 1 ? "" : "s");
}
/* Whether the repaired proposal shown runs: at a terminal the person is
 * asked; elsewhere it does not, and the line says how to let it. */
static bool ask_run_repair(struct term *t, json_object *proposal, bool auto_repair)
{
	const char *verdict = "deny";
	json_get_string(proposal, "verdict", &verdict);
	if (strcmp(verdict, "deny") == 0) {
		term_info(t, "not run: the validator denies the repaired code");
		return false;
	}
	if (!isatty(0) || !isatty(2)) {
		if (auto_repair || strcmp(verdict, "allow") != 0)
			term_info(t, "not run: its verdict is %s; review it in kiln shell",
			          verdict);
		else
			term_info(t,
			          "not run: repaired code waits for your approval; to run repairs "
			          "the validator allows without asking: kiln ask --yes "
			          "--auto-repair INTENT, or review it in kiln shell");
		return false;
	}
	char answer[16] = "";
	fputs("run the repaired code? [y/N] ", stderr);
	if (!fgets(answer, sizeof(answer), stdin))
		answer[0] = '\0';
	if (answer[0] == 'y' || answer[0] == 'Y')
		return true;
	term_info(t, "not run");
	return false;
}

int cli_ask(const struct kiln_options *global, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"yes", no_argument, NULL, 'y'},
	    {"allow-warn", no_argument, NULL, 'W'},
	    {"json", no_argument, NULL, 'j'},
	    {"session", required_argument, NULL, 's'},
	    {"lang", required_argument, NULL, 'l'},
	    {"no-repair", no_argument, NULL, 'R'},
	    {"auto-repair", no_argument, NULL, 'A'},
	    {"max-attempts", required_argument, NULL, 'm'},
	    {"config", required_argument, NULL, 'c'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	bool yes = false, repair = true, allow_warn = false, json = false, auto_repair = false;
	const char *session = NULL;
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
		case 'W':
			allow_warn = true;
			break;
		case 'j':
			json = true;
			break;
		case 's':
			session = optarg;
			break;
		case 'l':
			lang = optarg;
			break;
		case 'R':
			repair = false;
			break;
		case 'A':
			auto_repair = true;
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
	if (session && !session_name_ok(session)) {
		fprintf(stderr, "kiln ask: --session takes a name of letters, digits, '.', '_' and "
		                "'-' (at most 64)\n");
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
	if (session && strcmp(lang, "python") != 0) {
		fprintf(stderr, "kiln ask: --session keeps python sessions only\n");
		return 2;
	}
	struct term t;
	term_init(&t);
	term_ui_stderr(&t);
	struct collect col = {.t = &t, .json = json, .displays = json_object_new_array()};
	buf_init(&col.out[0], 1u << 20);
	buf_init(&col.out[1], 1u << 20);
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
	char sfile[4200] = "", sid[64] = "";
	_cleanup_json_ json_object *cells = NULL;
	if (session) {
		if (session_file(session, sfile, sizeof(sfile)) < 0) {
			fprintf(stderr, "kiln ask: no place to keep the session (set HOME or "
			                "XDG_STATE_HOME)\n");
			cli_client_stop(c);
			return 3;
		}
		cells = session_load(sfile);
		if (session_replay(c, cells, sid, sizeof(sid)) < 0) {
			cli_client_stop(c);
			return 3;
		}
	}
	json_object *params = json_object_new_object();
	if (sid[0])
		json_object_object_add(params, "sessionId", json_object_new_string(sid));
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
	r = cli_client_call(c, "intent/run", params, collect_note, &col, &res, &err);
	if (r < 0 || err) {
		if (err)
			term_error(&t, err);
		else
			fprintf(stderr, "kiln ask: the server went away\n");
		code = 3;
		goto out;
	}
	if (!json)
		term_proposal(&t, res);
	const char *verdict = "", *id = "", *pcode = "";
	char next_id[48];
	json_get_string(res, "verdict", &verdict);
	json_get_string(res, "proposalId", &id);
	json_get_string(res, "code", &pcode);
	col.ran = strdup(pcode);
	if (!yes) {
		/* Shown, not run: say so, and how to run it. */
		if (!json)
			fputs(strcmp(verdict, "deny") == 0
			          ? "kiln ask: not run: the validator denied it\n"
			      : strcmp(verdict, "warn") == 0
			          ? "kiln ask: not run; to run it: kiln ask --yes --allow-warn "
			            "INTENT, or review it in kiln shell\n"
			          : "kiln ask: not run; to run it: kiln ask --yes INTENT, or "
			            "review it in kiln shell\n",
			      stderr);
		goto out;
	}
	if (strcmp(verdict, "allow") != 0 && !(allow_warn && strcmp(verdict, "warn") == 0)) {
		fputs("kiln ask: not run: the verdict is ", stderr);
		vis_fputs(stderr, verdict, 0);
		fputs(strcmp(verdict, "warn") == 0 ? " (add --allow-warn to run it)\n"
		                                   : " (only allow runs with --yes)\n",
		      stderr);
		code = 4;
		goto out;
	}
	/* The proposal, then each repair the person approves: one approve
	 * each, the runs counted against --max-attempts. */
	int runs = 0;
	bool ok = false;
	for (;;) {
		json_object *ap = json_object_new_object();
		json_object_object_add(ap, "proposalId", json_object_new_string(id));
		json_object_object_add(ap, "workDoneToken", json_object_new_string("approve"));
		if (repair && max_attempts - runs > 1) {
			json_object *rp = json_object_new_object();
			json_object_object_add(rp, "maxAttempts",
			                       json_object_new_int(max_attempts - runs));
			if (auto_repair)
				json_object_object_add(rp, "auto", json_object_new_boolean(true));
			json_object_object_add(ap, "repair", rp);
		}
		json_object_put(ares);
		json_object_put(aerr);
		ares = aerr = NULL;
		r = cli_client_call(c, "intent/approve", ap, collect_note, &col, &ares, &aerr);
		if (r < 0 || aerr) {
			if (aerr && !json)
				term_error(&t, aerr);
			code = 1;
			goto out;
		}
		runs += (int)json_object_array_length(json_get(ares, "attempts"));
		if (!json) {
			term_run_result(&t, json_get(ares, "result"));
			ask_apply(c, &t, json_get(ares, "result"));
		}
		json_get_bool(ares, "ok", &ok);
		const char *stopped = "";
		json_get_string(ares, "stopped", &stopped);
		if (json || strcmp(stopped, "needs_approval") != 0)
			break;
		/* A repair is a new proposal: the person's to approve. */
		json_object *rprop = json_get(ares, "proposal");
		term_info(&t, "the repaired code needs approval:");
		term_proposal(&t, rprop);
		if (!ask_run_repair(&t, rprop, auto_repair))
			break;
		json_get_string(rprop, "proposalId", &id);
		/* id points into ares, which the next call replaces. */
		snprintf(next_id, sizeof(next_id), "%s", id);
		id = next_id;
	}
	code = ok ? 0 : 1;
	if (ok && session && col.ran)
		session_save(sfile, cells, col.ran);
out:
	term_status_clear(&t);
	if (json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "proposal", json_object_get(res));
		json_object_object_add(o, "approve", json_object_get(ares));
		json_object_object_add(o, "error", json_object_get(err ? err : aerr));
		json_object_object_add(
		    o, "stdout",
		    json_object_new_string_len(col.out[0].data ? col.out[0].data : "",
		                               (int)col.out[0].len));
		json_object_object_add(
		    o, "stderr",
		    json_object_new_string_len(col.out[1].data ? col.out[1].data : "",
		                               (int)col.out[1].len));
		json_object_object_add(o, "displays", json_object_get(col.displays));
		json_object_object_add(o, "exitStatus", json_object_new_int(code));
		if (sid[0])
			json_object_object_add(o, "sessionId", json_object_new_string(sid));
		puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
		                                           JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	}
	json_object_put(col.displays);
	buf_release(&col.out[0]);
	buf_release(&col.out[1]);
	free(col.ran);
	free(col.repaired);
	cli_client_stop(c);
	return code;
}
