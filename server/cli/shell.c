/* shell.c: `kiln shell`, the terminal session (what `make run` starts): type
 * an intent, see the proposed code with its diagnostics, answer run / edit
 * / skip, watch the output stream, repair on failure. When no model is
 * reachable it says so once and takes code directly, validated and run in
 * the same sandbox. Line editing and history come from libedit on a
 * terminal; without one, lines (and answers) are read from stdin, so the
 * session can be scripted through a pipe. It is a client of a kiln server
 * child, exactly like an editor. */
#include <editline/readline.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/apply.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/languages.h"
#include "cli/notes.h"
#include "cli/term.h"
#include "core/lang.h"
#include "core/buf.h"
#include "core/json.h"
#include "core/util.h"
#include "core/visible.h"
#include "kiln.h"
#include "llm/llm.h"

struct shell {
	struct cli_client *c;
	struct term t;
	bool tty;   /* stdin is a terminal: libedit, prompts, $EDITOR */
	bool model; /* a model is reachable */
	char lang[32];
	char session[64];
	bool have_session; /* session is a sandbox session (session/open) */
	int max_attempts;
	/* Automatic repair: -1 as the config says (intent.autoRepair, off by
	 * default), else off (0) or on (1) by --auto-repair or :auto-repair. */
	int auto_repair;
	char history[4096];
	const char *config; /* --config, handed to the server child */
};

static void on_sigint(int sig)
{
	(void)sig;
	cli_client_interrupted = 1;
}

/* One line from the person (without its newline), or NULL at the end;
 * into the line-editing history when hist. On a terminal, Ctrl-C at the
 * prompt drops the line and asks again, as Python's and bash's do. */
static char *read_line_h(struct shell *sh, const char *prompt, bool hist)
{
	if (sh->tty) {
		for (;;) {
			cli_client_interrupted = 0;
			char *l = readline(prompt);
			if (!l && cli_client_interrupted) {
				fputs("^C\n", stdout);
				fflush(stdout);
				continue;
			}
			if (l && l[0] && hist)
				add_history(l);
			return l;
		}
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, stdin);
	if (n < 0) {
		free(line);
		return NULL;
	}
	if (n && line[n - 1] == '\n')
		line[n - 1] = '\0';
	return line;
}

static char *read_line(struct shell *sh, const char *prompt)
{
	return read_line_h(sh, prompt, true);
}

/* What a run's result says of the shell's session: that it ended. */
static void session_note(struct shell *sh, json_object *result)
{
	bool ended = false;
	const char *why = "";
	if (json_get_bool(result, "sessionEnded", &ended) == 0 && ended) {
		json_get_string(result, "sessionEndReason", &why);
		term_info(&sh->t, "the session ended: %s. :reset starts a fresh one.", why);
	}
}

/* Open the shell's session (python only): its names persist between
 * runs. Without one, runs are one-shot, and the shell says so. */
static void session_open(struct shell *sh)
{
	_cleanup_json_ json_object *res = NULL;
	_cleanup_json_ json_object *err = NULL;
	json_object *p = json_object_new_object();
	json_object_object_add(p, "language", json_object_new_string("python"));
	sh->have_session = false;
	if (cli_client_call(sh->c, "session/open", p, NULL, NULL, &res, &err) < 0 || err) {
		const char *msg = "the server went away";
		json_get_string(err, "message", &msg);
		term_info(&sh->t, "no session (each run starts fresh): %s", msg);
		return;
	}
	const char *id = NULL;
	if (json_get_string(res, "sessionId", &id) == 0) {
		snprintf(sh->session, sizeof(sh->session), "%s", id);
		sh->have_session = true;
	}
}

static void session_cmd(struct shell *sh, const char *method)
{
	if (!sh->have_session) {
		session_open(sh);
		if (sh->have_session)
			term_info(&sh->t, "a new session: names from now on persist");
		return;
	}
	json_object *p = json_object_new_object();
	json_object_object_add(p, "sessionId", json_object_new_string(sh->session));
	_cleanup_json_ json_object *res = NULL;
	_cleanup_json_ json_object *err = NULL;
	if (cli_client_call(sh->c, method, p, NULL, NULL, &res, &err) < 0) {
		term_info(&sh->t, "the kiln server went away");
		return;
	}
	if (err) {
		term_error(&sh->t, err);
		return;
	}
	if (strcmp(method, "session/close") == 0) {
		/* A new session is a new conversation too: its id is new. */
		session_open(sh);
		if (sh->have_session)
			term_info(&sh->t, "a new session: names and the conversation start afresh");
	} else {
		term_info(&sh->t, "the session was reset: its names are gone");
	}
}

/* Code typed directly: a line that opens a block (ends with ':', '\' or
 * '{') goes on until an empty line. */
static char *read_code(struct shell *sh, char *first)
{
	struct buf b;
	buf_init(&b, 1u << 20);
	buf_printf(&b, "%s\n", first);
	size_t n = strlen(first);
	bool block = n && strchr(":\\{(", first[n - 1]);
	while (block) {
		char *l = read_line(sh, "... ");
		if (!l || !l[0]) {
			free(l);
			break;
		}
		buf_printf(&b, "%s\n", l);
		free(l);
	}
	return buf_steal(&b, NULL);
}

static void say_info(void *data, const char *line)
{
	term_info(data, "%s", line);
}

/* The run changed files in its private layer: list them, and write them
 * into the folder only if the person says so. */
static void offer_changes(struct shell *sh, json_object *result)
{
	size_t n = cli_ws_report(result, say_info, &sh->t);
	if (!n)
		return;
	char *a = sh->tty ? read_line(sh, "apply these changes to your files? [y/N] ") : NULL;
	bool yes = a && (a[0] == 'y' || a[0] == 'Y');
	free(a);
	if (!yes) {
		term_info(&sh->t, "not applied: your files are as they were");
		/* A session's run: the session must not go on showing what
		 * the person declined. Without a terminal nobody answered:
		 * the session keeps them, and says so. */
		if (!json_get(result, "sessionId"))
			return;
		if (sh->tty)
			cli_ws_decline(sh->c, result, say_info, &sh->t);
		else
			term_info(&sh->t,
			          "the session still holds these changes (no one was asked)");
		return;
	}
	int done = cli_ws_apply(sh->c, result, say_info, &sh->t);
	if (done >= 0)
		term_info(&sh->t, "applied %d change%s", done, done == 1 ? "" : "s");
}

enum show { SHOW_NEVER, SHOW_IF_NEEDED, SHOW_ALWAYS };

/* snippet/validate of code: the verdict (NULL when it cannot be had) and
 * the result (yours to put, it holds the verdict), the code shown with
 * its diagnostics as show says (if needed: not allow, or diagnostics). */
static const char *validate_show(struct shell *sh, const char *code, enum show show,
                                 json_object **ret_res)
{
	json_object *p = json_object_new_object();
	json_object_object_add(p, "language", json_object_new_string(sh->lang));
	json_object_object_add(p, "code", json_object_new_string(code));
	json_object *res = NULL;
	_cleanup_json_ json_object *err = NULL;
	*ret_res = NULL;
	term_status(&sh->t, "validating");
	if (cli_client_call(sh->c, "snippet/validate", p, term_note, &sh->t, &res, &err) < 0 ||
	    err) {
		if (err)
			term_error(&sh->t, err);
		json_object_put(res);
		return NULL;
	}
	term_status_clear(&sh->t);
	const char *verdict = "deny";
	json_get_string(res, "verdict", &verdict);
	json_object *diags = json_get(res, "diagnostics");
	if (show == SHOW_ALWAYS ||
	    (show == SHOW_IF_NEEDED &&
	     (strcmp(verdict, "allow") != 0 || (diags && json_object_array_length(diags)))))
		term_code(&sh->t, code, diags, verdict);
	*ret_res = res;
	return verdict;
}

/* Validate (showing the code when there is something to say, unless it
 * was just shown) and run code; python in the shell's session. */
static void run_direct_shown(struct shell *sh, const char *code, bool shown)
{
	_cleanup_json_ json_object *vres = NULL;
	const char *verdict = validate_show(sh, code, shown ? SHOW_NEVER : SHOW_IF_NEEDED, &vres);
	if (!verdict)
		return;
	if (strcmp(verdict, "deny") == 0) {
		term_info(&sh->t, "not run: the validator denies this code");
		return;
	}
	json_object *p = json_object_new_object();
	json_object_object_add(p, "language", json_object_new_string(sh->lang));
	json_object_object_add(p, "code", json_object_new_string(code));
	if (sh->have_session && strcmp(sh->lang, "python") == 0)
		json_object_object_add(p, "sessionId", json_object_new_string(sh->session));
	_cleanup_json_ json_object *res = NULL;
	_cleanup_json_ json_object *err = NULL;
	term_status(&sh->t, "running");
	if (cli_client_call(sh->c, "snippet/run", p, term_note, &sh->t, &res, &err) < 0) {
		term_info(&sh->t, "the kiln server went away");
		return;
	}
	if (err)
		term_error(&sh->t, err);
	else
		term_run_result(&sh->t, res);
	if (!err)
		offer_changes(sh, res);
	session_note(sh, res);
}

static void run_direct(struct shell *sh, const char *code)
{
	run_direct_shown(sh, code, false);
}

/* Let the person change the code in $VISUAL/$EDITOR; NULL when unchanged
 * or when there is no terminal to edit on. */
static char *edit_code(struct shell *sh, const char *code)
{
	if (!sh->tty) {
		term_info(&sh->t, "editing needs a terminal");
		return NULL;
	}
	char path[] = "/tmp/kiln-edit-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	if (write(fd, code, strlen(code)) < 0) {
		close(fd);
		unlink(path);
		return NULL;
	}
	close(fd);
	const char *ed = getenv("VISUAL");
	if (!ed || !ed[0])
		ed = getenv("EDITOR");
	if (!ed || !ed[0])
		ed = "vi";
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "%s '%s'", ed, path);
	int st = system(cmd);
	char *out = NULL;
	FILE *f = fopen(path, "re");
	if (f && st == 0) {
		struct buf b;
		buf_init(&b, 1u << 20);
		char chunk[4096];
		size_t n;
		while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
			buf_append(&b, chunk, n);
		out = buf_steal(&b, NULL);
	}
	if (f)
		fclose(f);
	unlink(path);
	if (out && strcmp(out, code) == 0) {
		free(out);
		out = NULL;
	}
	return out;
}

/* Ask run / edit / skip until the answer is one of them. */
static int ask_choice(struct shell *sh, bool can_run)
{
	for (;;) {
		char *a = read_line_h(
		    sh, can_run ? "run, edit or skip? [r/e/s] " : "edit or skip? [e/s] ", false);
		if (!a)
			return 's';
		int c = a[0];
		free(a);
		if ((c == 'r' || c == 'y') && can_run)
			return 'r';
		if (c == 'e' || c == 's' || c == 'n')
			return c == 'n' ? 's' : c;
		if (!sh->tty)
			return 's';
	}
}

static void propose_and_run(struct shell *sh, json_object *proposal);

static void approve(struct shell *sh, const char *id)
{
	json_object *ap = json_object_new_object();
	json_object_object_add(ap, "proposalId", json_object_new_string(id));
	json_object_object_add(ap, "workDoneToken", json_object_new_string("approve"));
	json_object *rp = json_object_new_object();
	json_object_object_add(rp, "maxAttempts", json_object_new_int(sh->max_attempts));
	if (sh->auto_repair >= 0)
		json_object_object_add(rp, "auto", json_object_new_boolean(sh->auto_repair));
	json_object_object_add(ap, "repair", rp);
	_cleanup_json_ json_object *res = NULL;
	_cleanup_json_ json_object *err = NULL;
	if (cli_client_call(sh->c, "intent/approve", ap, term_note, &sh->t, &res, &err) < 0) {
		term_info(&sh->t, "the kiln server went away");
		return;
	}
	if (err) {
		term_error(&sh->t, err);
		return;
	}
	term_run_result(&sh->t, json_get(res, "result"));
	offer_changes(sh, json_get(res, "result"));
	session_note(sh, json_get(res, "result"));
	const char *stopped = NULL;
	if (json_get_string(res, "stopped", &stopped) == 0) {
		if (strcmp(stopped, "needs_approval") == 0) {
			/* A repair is a new proposal: asked about like the first. */
			term_info(&sh->t, "the repaired code needs your approval%s:",
			          sh->auto_repair > 0 ? ""
			                              : " (:auto-repair on runs the repairs the "
			                                "validator allows without asking)");
			propose_and_run(sh, json_get(res, "proposal"));
		} else if (strcmp(stopped, "attempts_exhausted") == 0) {
			term_info(&sh->t, "still failing after %d attempts", sh->max_attempts);
		}
	}
}

static void propose_and_run(struct shell *sh, json_object *proposal)
{
	term_proposal(&sh->t, proposal);
	const char *verdict = "deny", *id = "", *code = "";
	json_get_string(proposal, "verdict", &verdict);
	json_get_string(proposal, "proposalId", &id);
	json_get_string(proposal, "code", &code);
	bool can_run = strcmp(verdict, "deny") != 0;
	if (!can_run)
		term_info(&sh->t, "the validator denies this code: it cannot run as it is");
	/* Edited code is shown, checked and asked about like the proposal;
	 * an editor left without a change goes back to the question. */
	_cleanup_free_ char *edited = NULL;
	for (;;) {
		int choice = ask_choice(sh, can_run);
		if (choice == 'r') {
			if (edited)
				run_direct_shown(sh, edited, true);
			else
				approve(sh, id);
			return;
		}
		if (choice != 'e') {
			term_info(&sh->t, "skipped");
			return;
		}
		char *e = edit_code(sh, edited ? edited : code);
		if (!e) {
			term_info(&sh->t, "unchanged");
			if (!sh->tty)
				return;
			continue;
		}
		free(edited);
		edited = e;
		term_info(&sh->t, "your edit:");
		_cleanup_json_ json_object *vres = NULL;
		const char *v = validate_show(sh, edited, SHOW_ALWAYS, &vres);
		can_run = v && strcmp(v, "deny") != 0;
		if (!can_run)
			term_info(&sh->t, "the validator denies this code: it cannot run as it is");
	}
}

static void run_intent(struct shell *sh, const char *intent)
{
	json_object *p = json_object_new_object();
	json_object_object_add(p, "intent", json_object_new_string(intent));
	json_object_object_add(p, "language", json_object_new_string(sh->lang));
	json_object_object_add(p, "sessionId", json_object_new_string(sh->session));
	json_object_object_add(p, "workDoneToken", json_object_new_string("shell"));
	_cleanup_json_ json_object *res = NULL;
	_cleanup_json_ json_object *err = NULL;
	term_status(&sh->t, "thinking");
	if (cli_client_call(sh->c, "intent/run", p, term_note, &sh->t, &res, &err) < 0) {
		term_info(&sh->t, "the kiln server went away");
		return;
	}
	if (err) {
		term_error(&sh->t, err);
		return;
	}
	propose_and_run(sh, res);
}

/* Whether the configured model answers; says why not, once. */
static void probe_model(struct shell *sh)
{
	_cleanup_json_ json_object *res = NULL;
	_cleanup_json_ json_object *err = NULL;
	sh->model = false;
	term_status(&sh->t, "looking for the model");
	if (cli_client_call(sh->c, "intent/model", NULL, NULL, NULL, &res, &err) < 0 || err) {
		if (err)
			term_error(&sh->t, err);
		return;
	}
	term_status_clear(&sh->t);
	bool reachable = false, available = false;
	const char *model = "?", *provider = "?", *url = "?", *msg = "";
	json_get_bool(res, "reachable", &reachable);
	json_get_bool(res, "modelAvailable", &available);
	json_get_string(res, "model", &model);
	json_get_string(res, "provider", &provider);
	json_get_string(res, "url", &url);
	json_get_string(json_get(res, "error"), "message", &msg);
	if (!reachable) {
		term_print(&sh->t, "No model server: %s.\n", msg);
	} else if (!available && strcmp(provider, "ollama") == 0) {
		term_print(
		    &sh->t,
		    "No model: the Ollama server at %s has no '%s'. Get it with: ollama pull %s\n",
		    url, model, model);
	} else {
		sh->model = true;
		if (sh->tty)
			term_info(&sh->t,
			          "kiln shell: %s via %s at %s; language %s. :help for commands.",
			          model, provider, url, sh->lang);
		return;
	}
	term_print(&sh->t,
	           "Type %s code to validate and run it in the sandbox directly (:lang to switch, "
	           ":model to look again, :help).\n",
	           sh->lang);
}

/* The screen cleared, as clear or Ctrl-L does; nothing on a dumb
 * terminal or a pipe. */
static void clear_screen(struct shell *sh)
{
	const char *term = getenv("TERM");
	if (sh->tty && isatty(1) && term && strcmp(term, "dumb") != 0) {
		fputs("\033[H\033[2J", stdout);
		fflush(stdout);
	}
}

static void help(struct shell *sh)
{
	term_info(&sh->t,
	          "Type what you want done; kiln asks the model for %s code, shows it with "
	          "its diagnostics and runs it in the sandbox once you say r.",
	          sh->lang);
	char names[256];
	term_info(&sh->t,
	          "  :lang NAME                     the language of code to write or run (%s,",
	          lang_names(names, sizeof(names)));
	term_info(&sh->t, "                                 or an alias such as py, sh, js, node)");
	term_info(&sh->t, "  :run CODE                      validate and run CODE directly");
	term_info(&sh->t, "  :model                         look for the model server again");
	term_info(&sh->t,
	          "  :auto-repair [on|off]          whether a repair of a failed run that the");
	term_info(&sh->t, "                                 validator allows runs without asking "
	                  "(off:");
	term_info(&sh->t, "                                 each repair is shown and asked about)");
	term_info(&sh->t,
	          "  :reset                         forget the session's names (python runs share");
	term_info(&sh->t, "                                 one session: x = 5, then print(x))");
	term_info(&sh->t, "  :new                           a new session and a new conversation");
	term_info(&sh->t, "  clear (or :clear, Ctrl-L)      clear the screen");
	term_info(&sh->t,
	          "  :quit (or Ctrl-D)              leave; Ctrl-C stops what is running, or");
	term_info(&sh->t, "                                 clears the line at the prompt");
}

static void history_path(struct shell *sh)
{
	const char *state = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");
	sh->history[0] = '\0';
	if (state && state[0] == '/')
		snprintf(sh->history, sizeof(sh->history), "%s/kiln", state);
	else if (home && home[0] == '/')
		snprintf(sh->history, sizeof(sh->history), "%s/.local/state/kiln", home);
	else
		return;
	/* Best effort: no history file is no reason to fail. */
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s", sh->history);
	for (char *p = tmp + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(tmp, 0700);
			*p = '/';
		}
	mkdir(tmp, 0700);
	strncat(sh->history, "/shell_history", sizeof(sh->history) - strlen(sh->history) - 1);
}

int cli_shell(const struct kiln_options *global, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"lang", required_argument, NULL, 'l'},
	    {"max-attempts", required_argument, NULL, 'm'},
	    {"auto-repair", no_argument, NULL, 'A'}, /* repair.auto on every approve */
	    {"config", required_argument, NULL, 'c'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct shell sh = {.max_attempts = 3, .auto_repair = -1, .config = global->config_path};
	snprintf(sh.lang, sizeof(sh.lang), "python");
	int ch;
	optind = 0; /* 0, not 1: glibc then also resets the ordering main() chose with "+" */
	while ((ch = getopt_long(argc, argv, "l:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			snprintf(sh.lang, sizeof(sh.lang), "%s", optarg);
			break;
		case 'm':
			sh.max_attempts = atoi(optarg) > 0 ? atoi(optarg) : 3;
			break;
		case 'A':
			sh.auto_repair = 1;
			break;
		case 'c':
			sh.config = optarg;
			break;
		case 'h':
			fputs(
			    "Usage: kiln shell [--lang LANGUAGE] [--max-attempts N] "
			    "[--auto-repair]\n"
			    "                  [--config FILE]\n"
			    "An interactive session: intents become proposals you run, edit or\n"
			    "skip. Without a terminal, lines are read from stdin.\n"
			    "  --auto-repair  a repair of a failed run that the validator allows\n"
			    "                 runs without asking (default: intent.autoRepair,\n"
			    "                 off: each repair is shown and asked about; see\n"
			    "                 :auto-repair)\n",
			    stdout);
			return 0;
		default:
			return 2;
		}
	}
	char detail[512] = "";
	int r = cli_languages_load(sh.config, detail, sizeof(detail));
	if (r < 0) {
		cli_error("kiln shell", detail[0] ? detail : strerror(-r));
		return 1;
	}
	const char *canon = cli_language("kiln shell", sh.lang);
	if (!canon) {
		lang_configure(NULL, NULL, 0);
		return 2;
	}
	snprintf(sh.lang, sizeof(sh.lang), "%s", canon);
	sh.tty = isatty(0);
	term_init(&sh.t);
	snprintf(sh.session, sizeof(sh.session), "shell-%d", (int)getpid());
	struct sigaction sa = {.sa_handler = on_sigint};
	sigaction(SIGINT, &sa, NULL);
	r = cli_client_start(sh.config, &sh.c, detail, sizeof(detail));
	if (r < 0) {
		fputs("kiln shell: ", stderr);
		vis_fputs(stderr, detail[0] ? detail : strerror(-r), 0);
		fputc('\n', stderr);
		lang_configure(NULL, NULL, 0);
		return 1;
	}
	if (sh.tty) {
		history_path(&sh);
		using_history();
		if (sh.history[0])
			read_history(sh.history);
	}
	probe_model(&sh);
	session_open(&sh);
	for (;;) {
		cli_client_interrupted = 0;
		char prompt[48];
		snprintf(prompt, sizeof(prompt), "kiln %s> ", sh.model ? "" : sh.lang);
		if (sh.model)
			snprintf(prompt, sizeof(prompt), "kiln> ");
		char *line = read_line(&sh, prompt);
		if (!line)
			break;
		char *l = line;
		while (*l == ' ' || *l == '\t')
			l++;
		if (!l[0]) {
			free(line);
			continue;
		}
		if (strcmp(l, ":q") == 0 || strcmp(l, ":quit") == 0 || strcmp(l, ":exit") == 0) {
			free(line);
			break;
		} else if (strcmp(l, ":help") == 0) {
			help(&sh);
		} else if (strncmp(l, ":lang", 5) == 0 && (!l[5] || l[5] == ' ')) {
			/* ":lang" alone says which; a name the registry does not
			 * know is refused with the list, and the language stays. */
			char *name = l + 5;
			while (*name == ' ')
				name++;
			for (char *e = name + strlen(name); e > name && e[-1] == ' ';)
				*--e = '\0';
			const struct lang *nl = name[0] ? lang_find(name) : NULL;
			if (nl)
				snprintf(sh.lang, sizeof(sh.lang), "%s", nl->name);
			else if (name[0])
				term_info(&sh.t, "%s", lang_unknown(name, detail, sizeof(detail)));
			term_info(&sh.t, "language: %s", sh.lang);
		} else if (strcmp(l, ":model") == 0) {
			probe_model(&sh);
		} else if (strncmp(l, ":auto-repair", 12) == 0 && (!l[12] || l[12] == ' ')) {
			const char *v = l + 12;
			while (*v == ' ')
				v++;
			if (strcmp(v, "on") == 0)
				sh.auto_repair = 1;
			else if (strcmp(v, "off") == 0)
				sh.auto_repair = 0;
			else if (v[0])
				term_info(&sh.t, ":auto-repair takes on or off");
			term_info(&sh.t, "automatic repair: %s",
			          sh.auto_repair > 0 ? "on (allowed repairs run without asking)"
			          : sh.auto_repair == 0
			              ? "off (each repair is asked about)"
			              : "as the config says (intent.autoRepair; off "
			                "unless it is true)");
		} else if (strcmp(l, "clear") == 0 || strcmp(l, ":clear") == 0) {
			/* What clear means at any prompt: never code to run, never
			 * an intent for the model. */
			clear_screen(&sh);
		} else if (strcmp(l, ":reset") == 0) {
			session_cmd(&sh, "session/reset");
		} else if (strcmp(l, ":new") == 0) {
			session_cmd(&sh, "session/close");
		} else if (strncmp(l, ":run ", 5) == 0) {
			_cleanup_free_ char *code = read_code(&sh, l + 5);
			run_direct(&sh, code);
		} else if (l[0] == ':') {
			term_info(&sh.t, "unknown command %s (:help)", l);
		} else if (sh.model) {
			run_intent(&sh, l);
		} else {
			_cleanup_free_ char *code = read_code(&sh, l);
			run_direct(&sh, code);
		}
		free(line);
	}
	if (sh.tty) {
		if (sh.history[0])
			write_history(sh.history);
		putchar('\n');
	}
	cli_client_stop(sh.c);
	lang_configure(NULL, NULL, 0);
	return 0;
}
