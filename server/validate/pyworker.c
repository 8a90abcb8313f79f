/* pyworker.c: CPython as the authority on Python syntax. One persistent
 * python3 process (started on first use, reused, restarted after a
 * failure) compiles each snippet and answers its first SyntaxError with
 * exact line and column. It runs in kiln's sandbox (sandbox/worker.h),
 * never outside it: when no box can be built, CPython is not used and the
 * caller falls back to tree-sitter, saying why. Each request is bounded
 * in time; a worker that does not answer in time is killed. */
#include "validate/internal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/fdwait.h"
#include "core/loop.h"
#include "core/log.h"
#include "core/util.h"
#include "sandbox/sandbox.h"
#include "sandbox/worker.h"

/* The worker: read "N\n" and N bytes of UTF-8, compile (never run) them,
 * answer "ok" or "err LINE BCOL ENDLINE ENDBCOL MESSAGE" on one line, with
 * 1-based lines and 0-based UTF-8 byte columns. compile() rather than
 * ast.parse() because the compiler also rejects what the grammar allows
 * ('return' outside a function, nonlocal at module level). */
static const char worker_src[] =
    "import sys, warnings\n"
    "warnings.simplefilter('ignore')\n"
    "rd, wr = sys.stdin.buffer, sys.stdout.buffer\n"
    "def bcol(lines, ln, col):\n"
    "    if ln < 1 or ln > len(lines) or col is None or col < 1:\n"
    "        return 0\n"
    "    return len(lines[ln - 1][:col - 1].encode('utf-8', 'surrogatepass'))\n"
    "while True:\n"
    "    h = rd.readline()\n"
    "    if not h:\n"
    "        break\n"
    "    data = rd.read(int(h))\n"
    "    try:\n"
    "        src = data.decode('utf-8')\n"
    "        compile(src, '<snippet>', 'exec', dont_inherit=True)\n"
    "        out = 'ok'\n"
    "    except SyntaxError as e:\n"
    "        lines = src.split('\\n')\n"
    "        ln = e.lineno or 1\n"
    "        el = getattr(e, 'end_lineno', None) or ln\n"
    "        out = 'err %d %d %d %d %s' % (ln, bcol(lines, ln, e.offset), el,\n"
    "            bcol(lines, el, getattr(e, 'end_offset', None)), e.msg)\n"
    "    except Exception as e:\n"
    "        out = 'err 1 0 1 0 %s' % e\n"
    "    wr.write(out.replace('\\n', ' ').encode('utf-8', 'replace') + b'\\n')\n"
    "    wr.flush()\n";

#define REPLY_MAX 1024
/* Building the box and starting python3 takes milliseconds; this only
 * bounds a machine that is badly stuck. */
#define START_MS 10000

struct val_pyworker {
	char *python;
	int timeout_ms;
	struct sbx_worker *proc; /* NULL when not running */
	bool broken;             /* could not start: do not try again */
	char why[768];           /* the last reason CPython could not answer */
};

struct val_pyworker *val_pyworker_new(const char *python, int timeout_ms)
{
	struct val_pyworker *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->python = strdup(python);
	if (!w->python) {
		free(w);
		return NULL;
	}
	w->timeout_ms = timeout_ms;
	return w;
}

static void worker_stop(struct val_pyworker *w)
{
	sbx_worker_free(w->proc);
	w->proc = NULL;
}

void val_pyworker_free(struct val_pyworker *w)
{
	if (!w)
		return;
	worker_stop(w);
	free(w->python);
	free(w);
}

const char *val_pyworker_why(const struct val_pyworker *w)
{
	return w->why[0] ? w->why : "it did not answer";
}

static int worker_start(struct val_pyworker *w)
{
	/* No sandbox instance of its own: the box is built from the
	 * process's host facts and filter, shared with the server's runs
	 * (sandbox.h), on whichever thread the validator checks. */
	int r;
	const char *argv[] = {w->python, "-I", "-S", "-B", "{file}", NULL};
	struct sbx_worker_spec spec = {
	    .argv = argv, .file = "pyworker.py", .data = worker_src, .start_ms = START_MS};
	char err[sizeof(w->why)];
	r = sbx_worker_spawn(NULL, &spec, &w->proc, err, sizeof(err));
	if (r < 0) {
		snprintf(w->why, sizeof(w->why), "%s", err);
		return r;
	}
	log_debug("validator: CPython worker started in the sandbox (pid 1 of its box: %d)",
	          (int)sbx_worker_pid(w->proc));
	return 0;
}

static int write_all(int fd, const char *p, size_t n, uint64_t deadline)
{
	while (n > 0) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k > 0) {
			p += k;
			n -= (size_t)k;
			continue;
		}
		if (k < 0 && errno != EAGAIN && errno != EINTR)
			return neg_errno();
		int r = fd_wait(fd, POLLOUT, deadline);
		if (r < 0)
			return r;
	}
	return 0;
}

static int read_line(int fd, char *out, size_t osz, uint64_t deadline)
{
	size_t n = 0;
	for (;;) {
		ssize_t k = read(fd, out + n, osz - 1 - n);
		if (k > 0) {
			n += (size_t)k;
			char *nl = memchr(out, '\n', n);
			if (nl) {
				*nl = '\0';
				return 0;
			}
			if (n >= osz - 1)
				return -EPROTO;
			continue;
		}
		if (k == 0)
			return -EPIPE;
		if (errno != EAGAIN && errno != EINTR)
			return neg_errno();
		int r = fd_wait(fd, POLLIN, deadline);
		if (r < 0)
			return r;
	}
}

static int parse_reply(const char *line, struct val_pyerror *e)
{
	if (strcmp(line, "ok") == 0)
		return 0;
	unsigned l, c, el, ec;
	int off = 0;
	if (sscanf(line, "err %u %u %u %u %n", &l, &c, &el, &ec, &off) != 4 || off == 0)
		return -EPROTO;
	*e = (struct val_pyerror){
	    .line = l ? l - 1 : 0,
	    .col = c,
	    .end_line = el ? el - 1 : 0,
	    .end_col = ec,
	};
	snprintf(e->msg, sizeof(e->msg), "%s", line + off);
	return 1;
}

static int ask(struct val_pyworker *w, const char *code, size_t len, struct val_pyerror *ret)
{
	uint64_t deadline = loop_now_ms() + (uint64_t)w->timeout_ms;
	int fd = sbx_worker_fd(w->proc);
	char hdr[32];
	int hl = snprintf(hdr, sizeof(hdr), "%zu\n", len);
	int r = write_all(fd, hdr, (size_t)hl, deadline);
	if (r >= 0)
		r = write_all(fd, code, len, deadline);
	char line[REPLY_MAX];
	if (r >= 0)
		r = read_line(fd, line, sizeof(line), deadline);
	if (r >= 0)
		r = parse_reply(line, ret);
	return r;
}

int val_pyworker_check(struct val_pyworker *w, const char *code, size_t len,
                       struct val_pyerror *ret_err)
{
	if (w->broken)
		return -ENOENT;
	/* A worker that died since the last request gets one restart. */
	for (int attempt = 0; attempt < 2; attempt++) {
		if (!w->proc) {
			int r = worker_start(w);
			if (r < 0) {
				/* Never an unsandboxed CPython: tree-sitter alone. */
				w->broken = true;
				if (r == -ENOENT)
					log_info("validator: %s: Python syntax is checked by "
					         "tree-sitter alone",
					         w->why);
				else
					log_warn(
					    "validator: CPython cannot run in kiln's sandbox, so "
					    "Python syntax is checked by tree-sitter alone: %s",
					    w->why);
				return r;
			}
		}
		struct val_pyerror e;
		int r = ask(w, code, len, &e);
		if (r >= 0) {
			if (r == 1)
				*ret_err = e;
			return r;
		}
		worker_stop(w);
		if (r == -ETIMEDOUT) {
			snprintf(w->why, sizeof(w->why), "it did not answer within %d ms",
			         w->timeout_ms);
			log_warn(
			    "validator: the Python syntax worker took over %d ms; restarting it",
			    w->timeout_ms);
			return r;
		}
	}
	snprintf(w->why, sizeof(w->why), "it kept failing (ending before it answered)");
	log_warn("validator: the Python syntax worker keeps failing; using tree-sitter alone");
	w->broken = true;
	return -EPIPE;
}
