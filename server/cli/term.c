/* term.c: the terminal presentation of proposals and runs (see term.h). */
#include "cli/term.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/image.h"
#include "cli/save.h"
#include "core/buf.h"
#include "core/json.h"
#include "core/util.h"

#define C_RESET "\033[0m"
#define C_DIM   "\033[2m"
#define C_BOLD  "\033[1m"
#define C_RED   "\033[31m"
#define C_YEL   "\033[33m"
#define C_GRN   "\033[32m"
#define C_CYAN  "\033[36m"

static const char *c(const struct term *t, const char *code)
{
	return t->color ? code : "";
}

/* Text from outside (code, a model, a file, the server) made visible. */
static void show(const struct term *t, FILE *f, const char *s, unsigned flags)
{
	vis_fputs(f, s, flags | (t->color ? VIS_COLOR : 0));
}

static void show_n(const struct term *t, FILE *f, const char *s, size_t n, unsigned flags)
{
	vis_fwrite(f, s, n, flags | (t->color ? VIS_COLOR : 0));
}

void term_init(struct term *t)
{
	const char *term = getenv("TERM");
	bool colorful = !getenv("NO_COLOR") && term && strcmp(term, "dumb") != 0;
	*t = (struct term){
	    .color = colorful && isatty(1),
	    .status_ok = colorful && isatty(2),
	    .at_bol = true,
	    .ui = stdout,
	};
	vis_filter_init(&t->out[0]);
	vis_filter_init(&t->out[1]);
}

void term_ui_stderr(struct term *t)
{
	const char *term = getenv("TERM");
	t->ui = stderr;
	t->color = !getenv("NO_COLOR") && term && strcmp(term, "dumb") != 0 && isatty(2);
}

void term_status_clear(struct term *t)
{
	if (!t->status_on)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	t->status_on = false;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void term_status(struct term *t, const char *text)
{
	if (!t->status_ok || t->quiet || !t->at_bol)
		return;
	/* The time is the stage's ("writing", "running"): a detail after
	 * ':' or '(' may change without resetting it. */
	size_t stage = strcspn(text, ":(");
	if (stage != strcspn(t->status_text, ":(") || strncmp(text, t->status_text, stage) != 0)
		t->status_since_ms = now_ms();
	if (strcmp(text, t->status_text) != 0)
		snprintf(t->status_text, sizeof(t->status_text), "%s", text);
	fprintf(stderr, "\r\033[K%s", C_DIM);
	/* Status lines are on a terminal, hence always in colour. */
	vis_fputs(stderr, t->status_text, VIS_COLOR);
	uint64_t s = (now_ms() - t->status_since_ms) / 1000;
	if (s)
		fprintf(stderr, "... %llu s%s", (unsigned long long)s, C_RESET);
	else
		fprintf(stderr, "...%s", C_RESET);
	fflush(stderr);
	t->status_on = true;
}

/* Format and show on t->ui, made visible: the arguments are often a
 * model's or the server's words. Whether it ended a line, as at_bol. */
__attribute__((format(printf, 2, 0))) static bool show_fmt(struct term *t, const char *fmt,
                                                           va_list ap)
{
	_cleanup_free_ char *text = NULL;
	int n = vasprintf(&text, fmt, ap);
	if (n >= 0)
		show_n(t, t->ui, text, (size_t)n, VIS_NEWLINE | VIS_TAB);
	return n > 0 && text[n - 1] == '\n';
}

const char *term_dim(const struct term *t)
{
	return c(t, C_DIM);
}

const char *term_reset(const struct term *t)
{
	return c(t, C_RESET);
}

void term_info(struct term *t, const char *fmt, ...)
{
	term_status_clear(t);
	fputs(c(t, C_DIM), t->ui);
	va_list ap;
	va_start(ap, fmt);
	show_fmt(t, fmt, ap);
	va_end(ap);
	fputs(c(t, C_RESET), t->ui);
	fputc('\n', t->ui);
	fflush(t->ui);
}

void term_print(struct term *t, const char *fmt, ...)
{
	term_status_clear(t);
	va_list ap;
	va_start(ap, fmt);
	bool eol = show_fmt(t, fmt, ap);
	va_end(ap);
	fflush(t->ui);
	t->at_bol = eol;
}

static const char *severity_name(int64_t s)
{
	return s == 1 ? "error" : s == 2 ? "warning" : s == 3 ? "info" : "hint";
}

static const char *severity_color(const struct term *t, int64_t s)
{
	return c(t, s == 1 ? C_RED : s == 2 ? C_YEL : C_CYAN);
}

/* The diagnostics of one line, each under the column it points at. */
static void line_diagnostics(struct term *t, json_object *diags, int64_t line)
{
	size_t nd = diags ? json_object_array_length(diags) : 0;
	for (size_t i = 0; i < nd; i++) {
		json_object *d = json_object_array_get_idx(diags, i);
		int64_t l = -1, ch = 0, s = 1;
		const char *msg = "", *src = NULL;
		json_get_int64(json_get_path(d, "range.start"), "line", &l);
		json_get_int64(json_get_path(d, "range.start"), "character", &ch);
		json_get_int64(d, "severity", &s);
		json_get_string(d, "message", &msg);
		json_get_string(d, "code", &src);
		if (l != line)
			continue;
		fprintf(t->ui, "     %*s%s^ %s: ", (int)(ch < 200 && ch >= 0 ? ch : 200), "",
		        severity_color(t, s), severity_name(s));
		show(t, t->ui, msg, VIS_TAB);
		if (src) {
			fputs(" [", t->ui);
			show(t, t->ui, src, 0);
			fputs("]", t->ui);
		}
		fprintf(t->ui, "%s\n", c(t, C_RESET));
	}
}

void term_code(struct term *t, const char *code, json_object *diags, const char *verdict)
{
	term_status_clear(t);
	size_t nd = diags ? json_object_array_length(diags) : 0;
	const char *p = code ? code : "";
	int line = 0;
	while (*p) {
		/* Lines end as LSP says: "\n", "\r\n" or a lone "\r", so the
		 * numbers match the diagnostics' and no CR reaches the
		 * terminal to move the cursor back over a line. */
		size_t n = strcspn(p, "\r\n");
		size_t brk = p[n] == '\r' && p[n + 1] == '\n' ? 2 : p[n] ? 1 : 0;
		/* The worst severity on this line colours its number. */
		int64_t worst = 5;
		for (size_t i = 0; i < nd; i++) {
			json_object *d = json_object_array_get_idx(diags, i);
			int64_t l = -1, s = 1;
			json_get_int64(json_get_path(d, "range.start"), "line", &l);
			json_get_int64(d, "severity", &s);
			if (l == line && s < worst)
				worst = s;
		}
		fprintf(t->ui, "%s%4d%s ", worst < 5 ? severity_color(t, worst) : c(t, C_DIM),
		        line + 1, c(t, C_RESET));
		show_n(t, t->ui, p, n, VIS_TAB);
		fputc('\n', t->ui);
		line_diagnostics(t, diags, line);
		line++;
		p += n + brk;
	}
	/* Diagnostics past the last line (an unexpected end of input). */
	for (size_t i = 0; i < nd; i++) {
		json_object *d = json_object_array_get_idx(diags, i);
		int64_t l = -1, s = 1;
		const char *msg = "";
		json_get_int64(json_get_path(d, "range.start"), "line", &l);
		json_get_int64(d, "severity", &s);
		json_get_string(d, "message", &msg);
		if (l >= line) {
			fprintf(t->ui, "     %s%s: ", severity_color(t, s), severity_name(s));
			show(t, t->ui, msg, VIS_TAB);
			fprintf(t->ui, "%s\n", c(t, C_RESET));
		}
	}
	if (verdict) {
		const char *col = strcmp(verdict, "allow") == 0  ? C_GRN
		                  : strcmp(verdict, "warn") == 0 ? C_YEL
		                                                 : C_RED;
		fprintf(t->ui, "%sverdict: ", c(t, col));
		show(t, t->ui, verdict, 0);
		fprintf(t->ui, "%s\n", c(t, C_RESET));
	}
	fflush(t->ui);
	t->at_bol = true;
}

void term_proposal(struct term *t, json_object *p)
{
	const char *id = "?", *lang = "?", *code = "", *verdict = NULL, *expl = NULL;
	json_get_string(p, "proposalId", &id);
	json_get_string(p, "language", &lang);
	json_get_string(p, "code", &code);
	json_get_string(p, "verdict", &verdict);
	json_get_string(p, "explanation", &expl);
	term_status_clear(t);
	fprintf(t->ui, "%sproposal ", c(t, C_BOLD));
	show(t, t->ui, id, 0);
	fputs(" (", t->ui);
	show(t, t->ui, lang, 0);
	fprintf(t->ui, ")%s\n", c(t, C_RESET));
	term_code(t, code, json_get(p, "diagnostics"), verdict);
	if (expl && expl[0])
		term_info(t, "%s", expl);
}

void term_partial(struct term *t, json_object *params)
{
	const char *text = "";
	bool reset = false;
	json_get_string(params, "text", &text);
	json_get_bool(params, "reset", &reset);
	/* A new answer (the status was another stage) starts from nothing. */
	if (reset || strncmp(t->status_text, "writing", 7) != 0) {
		t->partial_lines = 0;
		t->partial_last[0] = '\0';
	}
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n");
		size_t lead = strspn(p, " \t");
		if (lead < n) {
			size_t keep = n - lead;
			if (keep >= sizeof(t->partial_last))
				keep = sizeof(t->partial_last) - 1;
			/* Never half a UTF-8 character. */
			while (keep && keep < n - lead &&
			       ((unsigned char)p[lead + keep] & 0xC0) == 0x80)
				keep--;
			memcpy(t->partial_last, p + lead, keep);
			t->partial_last[keep] = '\0';
		}
		if (p[n] == '\n')
			t->partial_lines++;
		p += n + (p[n] == '\n');
	}
	char status[sizeof(t->status_text)];
	if (t->partial_last[0])
		snprintf(status, sizeof(status), "writing (%u line%s): %s", t->partial_lines,
		         t->partial_lines == 1 ? "" : "s", t->partial_last);
	else
		snprintf(status, sizeof(status), "writing");
	term_status(t, status);
}

void term_status_tick(struct term *t)
{
	if (t->status_on && t->status_text[0]) {
		char text[sizeof(t->status_text)];
		snprintf(text, sizeof(text), "%s", t->status_text);
		term_status(t, text);
	}
}

void term_output(struct term *t, json_object *params)
{
	const char *stream = "stdout", *text = "";
	json_get_string(params, "stream", &stream);
	json_get_string(params, "text", &text);
	term_status_clear(t);
	bool err = strcmp(stream, "stderr") == 0;
	FILE *f = err ? stderr : stdout;
	if (err)
		fflush(stdout);
	/* The program's colour passes; its other escapes (clipboard,
	 * title, queries, cursor movement) do not. */
	struct buf out;
	buf_init(&out, VIS_FILTER_OUT_MAX(strlen(text)));
	vis_filter_feed(&t->out[err], text, strlen(text), &out);
	if (out.len) {
		fwrite(out.data, 1, out.len, f);
		t->at_bol = out.data[out.len - 1] == '\n';
	}
	fflush(f);
	buf_release(&out);
}

void term_artifact(struct term *t, json_object *params)
{
	const char *name = "?", *path = NULL, *mime = "", *b64 = NULL, *run = "run";
	json_get_string(params, "name", &name);
	json_get_string(params, "path", &path);
	json_get_string(params, "mimeType", &mime);
	json_get_string(params, "data", &b64);
	json_get_string(params, "runId", &run);
	/* An inline artifact is saved into the run's folder, so that
	 * nothing the code made vanishes with the terminal's scroll. */
	char saved[PATH_MAX];
	int sr = -ENOENT;
	unsigned char *bytes = NULL;
	size_t len = 0;
	if (!path && b64 && (sr = cli_base64_decode(b64, &bytes, &len)) == 0) {
		sr = cli_save_artifact(run, name, bytes, len, saved, sizeof(saved));
		free(bytes);
		if (sr == 0)
			path = saved;
	}
	if (!t->at_bol)
		fputc('\n', t->ui), t->at_bol = true;
	term_status_clear(t);
	/* A name is one line: its line breaks are shown too. */
	fprintf(t->ui, "%sartifact: ", c(t, C_DIM));
	show(t, t->ui, name, 0);
	fputs(" (", t->ui);
	show(t, t->ui, mime, 0);
	fputs(")", t->ui);
	if (path) {
		fputs(" saved at ", t->ui);
		cli_print_path(t->ui, path, cli_links_ok(fileno(t->ui)));
	} else if (b64) {
		fprintf(t->ui, " not saved: %s", strerror(-sr));
	}
	fprintf(t->ui, "%s\n", c(t, C_RESET));
	if (b64 && strcmp(mime, "image/png") == 0)
		cli_image_show(t->ui, cli_image_protocol(fileno(t->ui)), b64, strlen(b64));
	fflush(t->ui);
}

void term_attempt(struct term *t, json_object *params)
{
	const char *s = NULL;
	int64_t n = 0;
	json_get_int64(params, "attempt", &n);
	json_get_string(params, "stage", &s);
	if (!s)
		return;
	if (strcmp(s, "ran") == 0)
		term_output_end(t); /* the program's colour ends with it */
	if (!t->at_bol)
		fputc('\n', t->ui), t->at_bol = true;
	if (strcmp(s, "running") == 0) {
		char buf[64];
		snprintf(buf, sizeof(buf), "running (attempt %lld)", (long long)n);
		term_status(t, buf);
	} else if (strcmp(s, "ran") == 0) {
		const char *why = NULL;
		if (json_get_string(params, "failure", &why) == 0)
			term_info(t, "attempt %lld failed: %s", (long long)n, why);
	} else if (strcmp(s, "repairing") == 0) {
		term_status(t, "asking the model for a repair");
	} else if (strcmp(s, "repaired") == 0) {
		const char *code = "", *verdict = NULL;
		json_get_string(params, "code", &code);
		json_get_string(params, "verdict", &verdict);
		term_info(t, "repaired code (attempt %lld):", (long long)n);
		term_code(t, code, NULL, verdict);
	} else if (strcmp(s, "repair_failed") == 0) {
		const char *e = "";
		json_get_string(params, "error", &e);
		term_info(t, "the repair failed: %s", e);
	}
}

void term_explanation(struct term *t, json_object *params)
{
	const char *text = "";
	json_get_string(params, "text", &text);
	term_status_clear(t);
	fputs(c(t, C_CYAN), t->ui);
	show(t, t->ui, text, VIS_NEWLINE | VIS_TAB);
	fputs(c(t, C_RESET), t->ui);
	fflush(t->ui);
	size_t n = strlen(text);
	if (n)
		t->at_bol = text[n - 1] == '\n';
}

void term_output_end(struct term *t)
{
	for (int i = 0; i < 2; i++) {
		struct buf out;
		buf_init(&out, VIS_FILTER_OUT_MAX(0));
		vis_filter_end(&t->out[i], &out);
		if (out.len)
			fwrite(out.data, 1, out.len, i ? stderr : stdout);
		buf_release(&out);
	}
}

void term_run_result(struct term *t, json_object *r)
{
	term_output_end(t);
	term_status_clear(t);
	if (!t->at_bol)
		fputc('\n', t->ui), t->at_bol = true;
	int64_t code = -1, ms = 0;
	int64_t cap = 0;
	bool timed_out = false, truncated = false;
	const char *sig = NULL;
	json_get_bool(r, "timedOut", &timed_out);
	json_get_bool(r, "truncated", &truncated);
	json_get_int64(json_get_path(r, "limits.outputBytes"), "value", &cap);
	json_get_string(r, "signal", &sig);
	json_get_int64(r, "durationMs", &ms);
	if (json_get_int64(r, "exitCode", &code) == 0 && code == 0 && !timed_out && !truncated)
		fprintf(t->ui, "%sok: exit 0 (%lld ms)%s\n", c(t, C_GRN), (long long)ms,
		        c(t, C_RESET));
	else if (truncated)
		/* The box was killed at the cap: "killed by SIGKILL" would
		 * blame the program for kiln's own stop. */
		fprintf(t->ui, "%sstopped: output limit reached (%lld bytes)%s\n", c(t, C_RED),
		        (long long)cap, c(t, C_RESET));
	else if (timed_out)
		fprintf(t->ui, "%sstopped: time limit reached (%lld ms)%s\n", c(t, C_RED),
		        (long long)ms, c(t, C_RESET));
	else if (sig) {
		fprintf(t->ui, "%skilled by ", c(t, C_RED));
		show(t, t->ui, sig, 0);
		fprintf(t->ui, " (%lld ms)%s\n", (long long)ms, c(t, C_RESET));
	} else
		fprintf(t->ui, "%sexit %lld (%lld ms)%s\n", c(t, C_RED), (long long)code,
		        (long long)ms, c(t, C_RESET));
	fflush(t->ui);
}

void term_error(struct term *t, json_object *e)
{
	term_output_end(t);
	term_status_clear(t);
	if (!t->at_bol)
		fputc('\n', t->ui), t->at_bol = true;
	const char *msg = "error", *kind = NULL;
	json_get_string(e, "message", &msg);
	json_get_string(json_get(e, "data"), "kind", &kind);
	int64_t code = 0;
	if (json_get_int64(e, "code", &code) == 0 && code == -32800) {
		/* Cancelled: here only by the person's Ctrl-C, which the
		 * terminal echoed as ^C where the cursor was, unknown to
		 * at_bol. The server's "Request cancelled" is the protocol's
		 * word; the person is told what happened in theirs. */
		if (isatty(0))
			fputc('\n', t->ui);
		msg = "cancelled (Ctrl-C): stopped, nothing more runs";
		kind = NULL;
	}
	fflush(t->ui);
	fputs(c(t, C_RED), stderr);
	if (kind) {
		show(t, stderr, kind, 0);
		fputs(": ", stderr);
	}
	show(t, stderr, msg, VIS_NEWLINE | VIS_TAB);
	fprintf(stderr, "%s\n", c(t, C_RESET));
	fflush(stderr);
}
