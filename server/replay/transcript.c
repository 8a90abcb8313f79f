/* transcript.c: the transcript file format's parser (see transcript.h). */
#include "replay/transcript.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "rpc/message.h"

#define TRANSCRIPT_MAX (16u << 20)

static bool is_marker(const char *line)
{
	return strncmp(line, "-->", 3) == 0 || strncmp(line, "<--", 3) == 0 ||
	       strncmp(line, "<~~", 3) == 0 || line[0] == '%' || line[0] == '#';
}

/* Decode \r \n \t \\ \xNN in s into a new buffer. */
static int unescape(const char *s, char **ret, size_t *ret_len)
{
	size_t n = strlen(s);
	char *out = malloc(n + 1);
	if (!out)
		return -ENOMEM;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '\\' || i + 1 == n) {
			out[o++] = s[i];
			continue;
		}
		char c = s[++i];
		if (c == 'r')
			out[o++] = '\r';
		else if (c == 'n')
			out[o++] = '\n';
		else if (c == 't')
			out[o++] = '\t';
		else if (c == '\\')
			out[o++] = '\\';
		else if (c == 'x' && i + 2 < n + 1) {
			unsigned v;
			if (sscanf(s + i + 1, "%2x", &v) != 1) {
				free(out);
				return -EINVAL;
			}
			out[o++] = (char)v;
			i += 2;
		} else {
			free(out);
			return -EINVAL;
		}
	}
	out[o] = '\0';
	*ret = out;
	*ret_len = o;
	return 0;
}

/* Expand ${NAME} from the environment (replay's own), for %env and %args. */
static char *expand(const char *s)
{
	struct buf b;
	buf_init(&b, 1 << 16);
	while (*s) {
		const char *open = strstr(s, "${");
		const char *close = open ? strchr(open, '}') : NULL;
		if (!open || !close) {
			buf_append(&b, s, strlen(s));
			break;
		}
		buf_append(&b, s, (size_t)(open - s));
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)(close - open - 2), open + 2);
		const char *v = getenv(name);
		if (v)
			buf_append(&b, v, strlen(v));
		s = close + 1;
	}
	return buf_steal(&b, NULL);
}

static int add_step(struct transcript *t, struct step st)
{
	struct step *s = realloc(t->steps, (t->nsteps + 1) * sizeof(*s));
	if (!s)
		return -ENOMEM;
	t->steps = s;
	t->steps[t->nsteps++] = st;
	return 0;
}

static int push_str(char ***arr, size_t *n, char *s)
{
	char **a = realloc(*arr, (*n + 2) * sizeof(*a));
	if (!a) {
		free(s);
		return -ENOMEM;
	}
	a[(*n)++] = s;
	a[*n] = NULL;
	*arr = a;
	return 0;
}

/* Finish a pending JSON step whose text was gathered over lines. */
static int flush_json(struct transcript *t, struct buf *text, int kind, bool ordered, int line,
                      char *detail, size_t dsz)
{
	if (kind < 0)
		return 0;
	json_object *obj = NULL;
	char why[200] = "";
	if (rpc_parse(text->data, text->len, &obj, why, sizeof(why)) < 0) {
		snprintf(detail, dsz, "%s:%d: not JSON: %s", t->path, line, why);
		return -EINVAL;
	}
	buf_reset(text);
	return add_step(
	    t, (struct step){
	           .kind = (enum step_kind)kind, .line = line, .json = obj, .ordered = ordered});
}

static long number_arg(const char *s, bool *ok)
{
	char *end;
	long v = strtol(s, &end, 10);
	*ok = end != s && (*end == '\0' || *end == ' ');
	return v;
}

int transcript_load(const char *path, struct transcript *ret_t, char *detail, size_t dsz)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		int e = errno;
		snprintf(detail, dsz, "%s: %s", path, strerror(e));
		return -e;
	}
	struct transcript t = {.path = strdup(path)};
	struct buf text;
	buf_init(&text, TRANSCRIPT_MAX);
	int pending_kind = -1, pending_line = 0;
	bool pending_ordered = false;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int lineno = 0, r = 0;
	while ((n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (!is_marker(line)) {
			if (pending_kind < 0) {
				const char *p = line;
				while (*p == ' ' || *p == '\t')
					p++;
				if (*p == '\0')
					continue;
				snprintf(detail, dsz,
				         "%s:%d: a line must start with -->, <--, <~~, %% or #",
				         path, lineno);
				r = -EINVAL;
				goto out;
			}
			buf_append(&text, "\n", 1);
			buf_append(&text, line, (size_t)n);
			continue;
		}
		if (line[0] == '#')
			continue; /* comments do not end a JSON value's lines */
		r = flush_json(&t, &text, pending_kind, pending_ordered, pending_line, detail, dsz);
		if (r < 0)
			goto out;
		pending_kind = -1;
		struct step st = {.line = lineno};
		if (strncmp(line, "-->raw", 6) == 0 || strncmp(line, "-->body", 7) == 0) {
			bool raw = line[3] == 'r';
			const char *arg = line + (raw ? 6 : 7);
			if (*arg == ' ')
				arg++;
			if (unescape(arg, &st.bytes, &st.nbytes) < 0) {
				snprintf(detail, dsz, "%s:%d: bad escape", path, lineno);
				r = -EINVAL;
				goto out;
			}
			st.kind = raw ? STEP_SEND_RAW : STEP_SEND_BODY;
			r = add_step(&t, st);
		} else if (strncmp(line, "-->", 3) == 0 || strncmp(line, "<--", 3) == 0 ||
		           strncmp(line, "<~~", 3) == 0) {
			pending_kind = line[0] == '-' ? STEP_SEND : STEP_EXPECT;
			pending_ordered = line[1] == '-';
			pending_line = lineno;
			buf_append(&text, line + 3, strlen(line + 3));
		} else {
			/* A directive: %name argument */
			char *sp = strchr(line, ' ');
			const char *arg = sp ? sp + 1 : "";
			size_t nlen = sp ? (size_t)(sp - line) : (size_t)n;
			bool ok = true;
#define IS(word) (nlen == sizeof(word) - 1 && strncmp(line, word, nlen) == 0)
			if (IS("%args")) {
				char *copy = expand(arg);
				for (char *tok = strtok(copy, " "); tok; tok = strtok(NULL, " "))
					push_str(&t.args, &t.nargs, strdup(tok));
				free(copy);
			} else if (IS("%framing")) {
				/* "lines" for MCP's newline framing; "lsp" is the default. */
				if (strcmp(arg, "lines") == 0)
					t.lines = true;
				else if (strcmp(arg, "lsp") != 0)
					ok = false;
			} else if (IS("%env")) {
				if (!strchr(arg, '='))
					ok = false;
				else
					push_str(&t.env, &t.nenv, expand(arg));
			} else if (IS("%silence") || IS("%sleep") || IS("%exit") ||
			           IS("%timeout")) {
				st.number = number_arg(arg, &ok);
				st.kind = IS("%silence") ? STEP_SILENCE
				          : IS("%sleep") ? STEP_SLEEP
				          : IS("%exit")  ? STEP_EXIT
				                         : STEP_TIMEOUT;
				if (ok)
					r = add_step(&t, st);
			} else if (IS("%close")) {
				st.kind = STEP_CLOSE;
				r = add_step(&t, st);
			} else if (IS("%stderr") || IS("%ignore")) {
				st.kind = IS("%stderr") ? STEP_STDERR : STEP_IGNORE;
				st.bytes = strdup(arg);
				st.nbytes = strlen(arg);
				ok = st.nbytes > 0;
				if (ok)
					r = add_step(&t, st);
				else
					free(st.bytes);
			} else {
				snprintf(detail, dsz, "%s:%d: unknown directive %.*s", path, lineno,
				         (int)nlen, line);
				r = -EINVAL;
				goto out;
			}
#undef IS
			if (!ok) {
				snprintf(detail, dsz, "%s:%d: bad argument to %.*s", path, lineno,
				         (int)nlen, line);
				r = -EINVAL;
				goto out;
			}
		}
		if (r < 0)
			goto out;
	}
	r = flush_json(&t, &text, pending_kind, pending_ordered, pending_line, detail, dsz);
out:
	free(line);
	buf_release(&text);
	fclose(f);
	if (r < 0) {
		transcript_release(&t);
		return r;
	}
	*ret_t = t;
	return 0;
}

void transcript_release(struct transcript *t)
{
	for (size_t i = 0; i < t->nsteps; i++) {
		json_object_put(t->steps[i].json);
		free(t->steps[i].bytes);
	}
	free(t->steps);
	for (size_t i = 0; i < t->nargs; i++)
		free(t->args[i]);
	free(t->args);
	for (size_t i = 0; i < t->nenv; i++)
		free(t->env[i]);
	free(t->env);
	free(t->path);
	*t = (struct transcript){0};
}
