/* pyworker.c: CPython as the authority on Python syntax. One persistent
 * python3 process (started on first use, reused, restarted after a
 * failure) compiles each snippet and answers its first SyntaxError with
 * exact line and column. Each request is bounded in time; a worker that
 * does not answer in time is killed and the caller falls back to
 * tree-sitter. It runs as a plain child with an empty environment until
 * the sandbox can host it. */
#include "validate/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"

/* The worker: read "N\n" and N bytes of UTF-8, compile (never run) them,
 * answer "ok" or "err LINE BCOL ENDLINE ENDBCOL MESSAGE" on one line, with
 * 1-based lines and 0-based UTF-8 byte columns. compile() rather than
 * ast.parse() because the compiler also rejects what the grammar allows
 * ('return' outside a function, nonlocal at module level). */
static const char worker_src[] =
    "import sys, warnings\n"
    "try:\n"
    "    import resource\n"
    "    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
    "except Exception:\n"
    "    pass\n"
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

struct val_pyworker {
	char *python;
	int timeout_ms;
	pid_t pid;
	int fd;      /* the worker's stdin and stdout */
	bool broken; /* could not start: do not try again */
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
	w->pid = -1;
	w->fd = -1;
	return w;
}

static void worker_stop(struct val_pyworker *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	if (w->pid > 0) {
		kill(w->pid, SIGKILL);
		while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	w->pid = -1;
}

void val_pyworker_free(struct val_pyworker *w)
{
	if (!w)
		return;
	worker_stop(w);
	free(w->python);
	free(w);
}

static int worker_start(struct val_pyworker *w)
{
	/* A socket rather than pipes: send() with MSG_NOSIGNAL reports a dead
	 * worker as EPIPE without a SIGPIPE, whatever the process's handler. */
	int sv[2];
	if (access(w->python, X_OK) < 0)
		return -ENOENT;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return neg_errno();
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	posix_spawnattr_init(&attr);
	/* kiln blocks the signals its loop reads through a signalfd; the
	 * worker must not inherit that mask or those dispositions. */
	sigset_t none, all;
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	char *argv[] = {w->python, "-I", "-S", "-B", "-c", (char *)worker_src, NULL};
	char *envp[] = {"LC_ALL=C.UTF-8", "PATH=/usr/bin:/bin", NULL};
	pid_t pid;
	int r = posix_spawn(&pid, w->python, &fa, &attr, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(sv[1]);
	if (r != 0) {
		close(sv[0]);
		return -r;
	}
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	w->pid = pid;
	w->fd = sv[0];
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for fd to be ready for events until deadline; -ETIMEDOUT, -EPIPE. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = {.fd = fd, .events = events};
		int n = poll(&p, 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return neg_errno();
		if (n == 0)
			return -ETIMEDOUT;
		if (p.revents & events)
			return 0;
		return -EPIPE;
	}
}

static int write_all(int fd, const char *p, size_t n, int64_t deadline)
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
		int r = wait_fd(fd, POLLOUT, deadline);
		if (r < 0)
			return r;
	}
	return 0;
}

static int read_line(int fd, char *out, size_t osz, int64_t deadline)
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
		int r = wait_fd(fd, POLLIN, deadline);
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
	int64_t deadline = now_ms() + w->timeout_ms;
	char hdr[32];
	int hl = snprintf(hdr, sizeof(hdr), "%zu\n", len);
	int r = write_all(w->fd, hdr, (size_t)hl, deadline);
	if (r >= 0)
		r = write_all(w->fd, code, len, deadline);
	char line[REPLY_MAX];
	if (r >= 0)
		r = read_line(w->fd, line, sizeof(line), deadline);
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
		if (w->pid < 0) {
			int r = worker_start(w);
			if (r < 0) {
				w->broken = true;
				log_info(
				    "validator: cannot start %s (%s): Python syntax is checked "
				    "by tree-sitter alone",
				    w->python, strerror(-r));
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
			log_warn(
			    "validator: the Python syntax worker took over %d ms; restarting it",
			    w->timeout_ms);
			return r;
		}
	}
	log_warn("validator: the Python syntax worker keeps failing; using tree-sitter alone");
	w->broken = true;
	return -EPIPE;
}
