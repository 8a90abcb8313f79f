/* replay.c: `kiln replay FILE...`: play each transcript against a fresh
 * server process and report PASS or FAIL with the first mismatch. The
 * server is this same binary (or --server PATH) on pipes, exactly as an
 * editor would start it. The subcommand only: the transcripts' format and
 * matching are the replay/ library's (transcript.c, match.c). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/buf.h"
#include "core/json.h"
#include "core/loop.h"
#include "core/util.h"
#include "replay/match.h"
#include "replay/transcript.h"
#include "rpc/frame.h"
#include "rpc/frame_lines.h"
#include "rpc/message.h"

#define DEFAULT_TIMEOUT_MS 10000
#define STDERR_KEEP        (256u << 10)
#define MAX_IGNORES        32

struct server {
	pid_t pid;
	int in_fd, out_fd, err_fd;
	bool exited;
	int status;
	struct frame_reader fr;
	bool lines; /* %framing lines */
	struct line_reader lr;
	json_object *queue; /* array of received messages not yet consumed */
	struct buf err;
	char fatal[512]; /* set when the server's output itself is broken */
	bool verbose;
};

struct player {
	struct transcript *t;
	struct server *s;
	struct match_captures caps;
	long timeout_ms;
	const char *ignores[MAX_IGNORES];
	size_t nignores;
	struct buf report; /* why it failed, shown after FAIL */
};

static void on_server_message(void *data, char *body, size_t len)
{
	struct server *s = data;
	json_object *obj = NULL;
	char why[200] = "";
	if (rpc_parse(body, len, &obj, why, sizeof(why)) < 0) {
		if (!s->fatal[0])
			snprintf(s->fatal, sizeof(s->fatal),
			         "the server sent a body that is not JSON (%s): %.100s", why, body);
		return;
	}
	if (s->verbose)
		fprintf(stderr, "  <-- %s\n", obj ? json_compact(obj) : "null");
	json_object_array_add(s->queue, obj);
}

static void on_server_frame_error(void *data, enum frame_error err, const char *detail)
{
	struct server *s = data;
	(void)err;
	if (!s->fatal[0])
		snprintf(s->fatal, sizeof(s->fatal),
		         "the server's stdout is not clean LSP framing: %s", detail);
}

static const struct frame_callbacks server_frame_cbs = {
    .message = on_server_message,
    .error = on_server_frame_error,
};

static void reap(struct server *s, bool block)
{
	if (s->exited)
		return;
	int status;
	pid_t r = waitpid(s->pid, &status, block ? 0 : WNOHANG);
	if (r == s->pid) {
		s->exited = true;
		s->status = status;
	}
}

/* Read whatever the server has written, waiting up to ms for something. */
static void pump(struct server *s, long ms)
{
	struct pollfd p[2] = {{.fd = s->out_fd, .events = POLLIN},
	                      {.fd = s->err_fd, .events = POLLIN}};
	int r = poll(p, 2, (int)ms);
	if (r <= 0) {
		reap(s, false);
		return;
	}
	char chunk[65536];
	if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
		ssize_t n = read(s->out_fd, chunk, sizeof(chunk));
		if (n > 0) {
			if (s->lines)
				line_reader_feed(&s->lr, chunk, (size_t)n, &server_frame_cbs, s);
			else
				frame_reader_feed(&s->fr, chunk, (size_t)n, &server_frame_cbs, s);
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			if (s->lines)
				line_reader_eof(&s->lr, &server_frame_cbs, s);
			else
				frame_reader_eof(&s->fr, &server_frame_cbs, s);
			close(s->out_fd);
			s->out_fd = -1;
		}
	}
	if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
		ssize_t n = read(s->err_fd, chunk, sizeof(chunk));
		if (n > 0) {
			if (s->verbose)
				fprintf(stderr, "%.*s", (int)n, chunk);
			if (s->err.len + (size_t)n > STDERR_KEEP)
				buf_consume(&s->err, s->err.len + (size_t)n - STDERR_KEEP);
			buf_append(&s->err, chunk, (size_t)n);
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			close(s->err_fd);
			s->err_fd = -1;
		}
	}
	reap(s, false);
}

static int write_all(struct server *s, const char *data, size_t n)
{
	while (n > 0) {
		if (s->in_fd < 0)
			return -EPIPE;
		struct pollfd p = {.fd = s->in_fd, .events = POLLOUT};
		if (poll(&p, 1, 100) <= 0) {
			/* The server may be blocked writing to us: drain it. */
			pump(s, 0);
			if (s->exited)
				return -EPIPE;
			continue;
		}
		ssize_t w = write(s->in_fd, data, n);
		if (w < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -errno;
		}
		data += w;
		n -= (size_t)w;
	}
	return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static int spawn(const char *exe, struct transcript *t, const char *home, struct server *s)
{
	int in[2], out[2], err[2];
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
		return -errno;
	/* argv: exe [%args...] */
	char **argv = calloc(t->nargs + 2, sizeof(*argv));
	if (!argv)
		return -ENOMEM;
	argv[0] = (char *)exe;
	for (size_t i = 0; i < t->nargs; i++)
		argv[i + 1] = t->args[i];
	pid_t pid = fork();
	if (pid < 0) {
		free(argv);
		return -errno;
	}
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		/* Every run starts from the same blank state: no user config,
		 * no inherited KILN_* settings, state written to a temp dir. */
		for (char **e = environ; e && *e;) {
			if (strncmp(*e, "KILN_", 5) == 0) {
				char name[256];
				snprintf(name, sizeof(name), "%.*s", (int)(strcspn(*e, "=")), *e);
				unsetenv(name);
				continue;
			}
			e++;
		}
		setenv("XDG_CONFIG_HOME", home, 1);
		setenv("XDG_STATE_HOME", home, 1);
		setenv("XDG_CACHE_HOME", home, 1);
		for (size_t i = 0; i < t->nenv; i++)
			putenv(t->env[i]);
		execv(exe, argv);
		fprintf(stderr, "replay: cannot run %s: %s\n", exe, strerror(errno));
		_exit(127);
	}
	free(argv);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	s->pid = pid;
	s->in_fd = in[1];
	s->out_fd = out[0];
	s->err_fd = err[0];
	fcntl(s->out_fd, F_SETFL, O_NONBLOCK);
	fcntl(s->err_fd, F_SETFL, O_NONBLOCK);
	return 0;
}

static const char *pretty(json_object *o)
{
	return o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
	                                                 JSON_C_TO_STRING_NOSLASHESCAPE)
	         : "null";
}

static void indent_into(struct buf *b, const char *label, const char *text)
{
	buf_printf(b, "  %s\n", label);
	const char *p = text;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		buf_printf(b, "    %.*s\n", (int)n, p);
		p += n + (nl ? 1 : 0);
	}
}

static bool ignored(struct player *pl, json_object *msg)
{
	const char *method;
	if (json_get_string(msg, "method", &method) < 0 || json_get(msg, "id"))
		return false;
	for (size_t i = 0; i < pl->nignores; i++)
		if (strcmp(pl->ignores[i], method) == 0)
			return true;
	return false;
}

/* Take the oldest received message, waiting until deadline. NULL on
 * timeout or when the server is gone; *ret_got says whether one came
 * (a JSON null message is NULL too). */
static json_object *next_message(struct player *pl, uint64_t deadline, bool *ret_got)
{
	struct server *s = pl->s;
	*ret_got = false;
	while (json_object_array_length(s->queue) == 0) {
		if (s->fatal[0])
			return NULL;
		uint64_t now = loop_now_ms();
		if (now >= deadline || (s->out_fd < 0))
			return NULL;
		pump(s, (long)(deadline - now));
	}
	json_object *m = json_object_get(json_object_array_get_idx(s->queue, 0));
	json_object_array_del_idx(s->queue, 0, 1);
	*ret_got = true;
	return m;
}

static int fail(struct player *pl, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct player *pl, int line, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	buf_printf(&pl->report, "  %s:%d: %s\n", pl->t->path, line, msg);
	return -1;
}

static int play_group(struct player *pl, size_t first, size_t count)
{
	struct step *g = pl->t->steps + first;
	_cleanup_free_ bool *matched = calloc(count, sizeof(*matched));
	if (!matched)
		return fail(pl, g[0].line, "out of memory");
	size_t left = count;
	uint64_t deadline = loop_now_ms() + (uint64_t)pl->timeout_ms;
	while (left > 0) {
		bool got;
		json_object *m = next_message(pl, deadline, &got);
		if (!got) {
			if (pl->s->fatal[0])
				return fail(pl, g[0].line, "%s", pl->s->fatal);
			for (size_t i = 0; i < count; i++) {
				if (!matched[i]) {
					fail(pl, g[i].line,
					     "no message matched this expectation within %ld ms%s",
					     pl->timeout_ms,
					     pl->s->exited ? " (the server has exited)" : "");
					indent_into(&pl->report, "expected:", pretty(g[i].json));
					return -1;
				}
			}
		}
		/* The next ordered expectation, then any unordered one. */
		size_t next_ordered = count;
		for (size_t i = 0; i < count; i++)
			if (!matched[i] && g[i].ordered) {
				next_ordered = i;
				break;
			}
		char why[1024] = "", why_first[1024] = "";
		bool done = false;
		if (next_ordered < count &&
		    match_json(g[next_ordered].json, m, &pl->caps, why_first, sizeof(why_first))) {
			matched[next_ordered] = true;
			done = true;
		}
		for (size_t i = 0; i < count && !done; i++) {
			if (matched[i] || g[i].ordered)
				continue;
			if (match_json(g[i].json, m, &pl->caps, why, sizeof(why))) {
				matched[i] = true;
				done = true;
			} else if (!why_first[0]) {
				memcpy(why_first, why, sizeof(why));
			}
		}
		if (done) {
			left--;
		} else if (!ignored(pl, m)) {
			size_t show = next_ordered;
			for (size_t i = 0; show == count && i < count; i++)
				if (!matched[i])
					show = i;
			fail(pl, g[show].line, "the message received does not match: %s",
			     why_first);
			indent_into(&pl->report, "expected:", pretty(g[show].json));
			indent_into(&pl->report, "received:", pretty(m));
			json_object_put(m);
			return -1;
		}
		json_object_put(m);
	}
	return 0;
}

static int send_bytes(struct player *pl, int line, const char *data, size_t n)
{
	if (write_all(pl->s, data, n) < 0)
		return fail(pl, line, "cannot write to the server (it has %s)",
		            pl->s->exited ? "exited" : "closed its input");
	return 0;
}

static void close_input(struct server *s)
{
	if (s->in_fd >= 0) {
		close(s->in_fd);
		s->in_fd = -1;
	}
}

/* Wait for the server to exit, reading its output meanwhile. */
static bool wait_exit(struct player *pl, long ms)
{
	uint64_t deadline = loop_now_ms() + (uint64_t)ms;
	while (!pl->s->exited) {
		uint64_t now = loop_now_ms();
		if (now >= deadline)
			return false;
		if (pl->s->out_fd < 0 && pl->s->err_fd < 0) {
			usleep(5000);
			reap(pl->s, false);
		} else {
			pump(pl->s, (long)(deadline - now) < 50 ? (long)(deadline - now) : 50);
		}
	}
	/* Drain what is left in the pipes. */
	while (pl->s->out_fd >= 0 || pl->s->err_fd >= 0)
		pump(pl->s, 100);
	return true;
}

static int play_steps(struct player *pl)
{
	struct transcript *t = pl->t;
	for (size_t i = 0; i < t->nsteps; i++) {
		struct step *st = &t->steps[i];
		char why[512] = "";
		switch (st->kind) {
		case STEP_SEND: {
			json_object *copy = json_copy(st->json);
			if (match_substitute(&copy, &pl->caps, why, sizeof(why)) < 0) {
				json_object_put(copy);
				return fail(pl, st->line, "%s", why);
			}
			const char *body = copy ? json_compact(copy) : "null";
			struct buf b;
			buf_init(&b, SIZE_MAX / 2);
			if (pl->s->lines)
				frame_encode_line(&b, body, strlen(body));
			else
				frame_encode(&b, body, strlen(body));
			if (pl->s->verbose)
				fprintf(stderr, "  --> %s\n", body);
			int r = send_bytes(pl, st->line, b.data, b.len);
			buf_release(&b);
			json_object_put(copy);
			if (r < 0)
				return r;
			break;
		}
		case STEP_SEND_RAW:
			if (send_bytes(pl, st->line, st->bytes, st->nbytes) < 0)
				return -1;
			break;
		case STEP_SEND_BODY: {
			struct buf b;
			buf_init(&b, SIZE_MAX / 2);
			if (pl->s->lines)
				frame_encode_line(&b, st->bytes, st->nbytes);
			else
				frame_encode(&b, st->bytes, st->nbytes);
			int r = send_bytes(pl, st->line, b.data, b.len);
			buf_release(&b);
			if (r < 0)
				return r;
			break;
		}
		case STEP_EXPECT: {
			size_t n = 1;
			while (i + n < t->nsteps && t->steps[i + n].kind == STEP_EXPECT)
				n++;
			if (play_group(pl, i, n) < 0)
				return -1;
			i += n - 1;
			break;
		}
		case STEP_SILENCE:
		case STEP_SLEEP: {
			uint64_t deadline = loop_now_ms() + (uint64_t)st->number;
			while (loop_now_ms() < deadline) {
				pump(pl->s, (long)(deadline - loop_now_ms()));
				if (st->kind != STEP_SILENCE)
					continue;
				while (json_object_array_length(pl->s->queue) > 0) {
					json_object *m = json_object_array_get_idx(pl->s->queue, 0);
					if (!ignored(pl, m)) {
						fail(pl, st->line,
						     "expected silence, got a message");
						indent_into(&pl->report, "received:", pretty(m));
						return -1;
					}
					json_object_array_del_idx(pl->s->queue, 0, 1);
				}
			}
			break;
		}
		case STEP_CLOSE:
			close_input(pl->s);
			break;
		case STEP_EXIT:
			if (!wait_exit(pl, pl->timeout_ms))
				return fail(pl, st->line, "the server did not exit within %ld ms",
				            pl->timeout_ms);
			if (!WIFEXITED(pl->s->status) || WEXITSTATUS(pl->s->status) != st->number) {
				if (WIFSIGNALED(pl->s->status))
					return fail(pl, st->line,
					            "expected exit code %ld, the server was killed "
					            "by signal %d",
					            st->number, WTERMSIG(pl->s->status));
				return fail(pl, st->line, "expected exit code %ld, got %d",
				            st->number, WEXITSTATUS(pl->s->status));
			}
			break;
		case STEP_STDERR: {
			uint64_t deadline = loop_now_ms() + (uint64_t)pl->timeout_ms;
			while (!(pl->s->err.data && strstr(pl->s->err.data, st->bytes))) {
				if (loop_now_ms() >= deadline || pl->s->err_fd < 0)
					return fail(pl, st->line, "stderr never contained \"%s\"",
					            st->bytes);
				pump(pl->s, 50);
			}
			break;
		}
		case STEP_TIMEOUT:
			pl->timeout_ms = st->number;
			break;
		case STEP_IGNORE:
			if (pl->nignores < MAX_IGNORES)
				pl->ignores[pl->nignores++] = st->bytes;
			break;
		}
	}
	return 0;
}

/* Sanitizer and crash reports fail a transcript even when every message
 * matched. */
static int check_health(struct player *pl)
{
	struct server *s = pl->s;
	int line = pl->t->nsteps ? pl->t->steps[pl->t->nsteps - 1].line : 1;
	const char *e = s->err.data ? s->err.data : "";
	if (strstr(e, "ERROR: AddressSanitizer") || strstr(e, "ERROR: LeakSanitizer") ||
	    strstr(e, "runtime error:"))
		return fail(pl, line, "a sanitizer reported an error in the server");
	if (WIFSIGNALED(s->status))
		return fail(pl, line, "the server was killed by signal %d (%s)",
		            WTERMSIG(s->status), strsignal(WTERMSIG(s->status)));
	if (s->fatal[0])
		return fail(pl, line, "%s", s->fatal);
	while (json_object_array_length(s->queue) > 0) {
		json_object *m = json_object_array_get_idx(s->queue, 0);
		if (!ignored(pl, m)) {
			fail(pl, line, "a message arrived that no expectation was waiting for");
			indent_into(&pl->report, "received:", pretty(m));
			return -1;
		}
		json_object_array_del_idx(s->queue, 0, 1);
	}
	return 0;
}

static bool run_one(const char *exe, const char *path, bool verbose)
{
	struct transcript t;
	char detail[512];
	if (transcript_load(path, &t, detail, sizeof(detail)) < 0) {
		printf("FAIL %s\n  %s\n", path, detail);
		return false;
	}
	char home[] = "/tmp/kiln-replay-XXXXXX";
	if (!mkdtemp(home)) {
		printf("FAIL %s\n  cannot make a temporary directory: %s\n", path, strerror(errno));
		transcript_release(&t);
		return false;
	}
	struct server s = {.in_fd = -1, .out_fd = -1, .err_fd = -1, .verbose = verbose};
	frame_reader_init(&s.fr, SIZE_MAX / 2);
	line_reader_init(&s.lr, SIZE_MAX / 4);
	s.lines = t.lines;
	buf_init(&s.err, STDERR_KEEP + 65536);
	s.queue = json_object_new_array();
	struct player pl = {.t = &t, .s = &s, .timeout_ms = DEFAULT_TIMEOUT_MS};
	match_captures_init(&pl.caps);
	buf_init(&pl.report, 1 << 20);

	int r = spawn(exe, &t, home, &s);
	if (r < 0) {
		fail(&pl, 1, "cannot start %s: %s", exe, strerror(-r));
	} else {
		r = play_steps(&pl);
		close_input(&s);
		if (!wait_exit(&pl, pl.timeout_ms)) {
			if (r == 0)
				r = fail(
				    &pl, t.nsteps ? t.steps[t.nsteps - 1].line : 1,
				    "the server did not exit within %ld ms of its input closing",
				    pl.timeout_ms);
			kill(s.pid, SIGKILL);
			reap(&s, true);
		}
		if (r == 0)
			r = check_health(&pl);
	}
	bool ok = r == 0;
	if (ok) {
		printf("PASS %s\n", path);
	} else {
		printf("FAIL %s\n%s", path, pl.report.data ? pl.report.data : "");
		if (s.err.len) {
			/* The tail of the server's log usually says why. */
			const char *e = s.err.data;
			const char *p = e + s.err.len;
			for (int lines = 0; p > e && lines < 12;)
				if (*--p == '\n')
					lines++;
			buf_reset(&pl.report);
			indent_into(&pl.report, "server stderr (last lines):", p);
			printf("%s", pl.report.data);
		}
	}
	fflush(stdout);
	if (s.in_fd >= 0)
		close(s.in_fd);
	if (s.out_fd >= 0)
		close(s.out_fd);
	if (s.err_fd >= 0)
		close(s.err_fd);
	frame_reader_release(&s.fr);
	line_reader_release(&s.lr);
	buf_release(&s.err);
	json_object_put(s.queue);
	match_captures_release(&pl.caps);
	buf_release(&pl.report);
	transcript_release(&t);
	nftw(home, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return ok;
}

static void replay_usage(FILE *out)
{
	fprintf(out, "Usage: kiln replay [-v] [--server PATH] TRANSCRIPT...\n"
	             "Play each transcript against a fresh server and report PASS or FAIL.\n"
	             "  -v, --verbose     show every message and the server's stderr\n"
	             "  --server PATH     the kiln binary to test (default: this one)\n"
	             "The format is described in docs/transcripts.md.\n");
}

int cli_replay(const struct kiln_options *kopts, int argc, char **argv)
{
	(void)kopts; /* each transcript starts its server with its own %args */
	static const struct option opts[] = {
	    {"verbose", no_argument, NULL, 'v'},
	    {"server", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	bool verbose = false;
	char exe[4096];
	const char *server = NULL;
	int c;
	optind = 0; /* 0, not 1: glibc then also resets the ordering main() chose with "+" */
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case 'v':
			verbose = true;
			break;
		case 's':
			server = optarg;
			break;
		case 'h':
			replay_usage(stdout);
			return 0;
		default:
			replay_usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		replay_usage(stderr);
		return 2;
	}
	if (!server) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n < 0) {
			fprintf(stderr, "replay: cannot find my own binary: %s\n", strerror(errno));
			return 2;
		}
		exe[n] = '\0';
		server = exe;
	}
	signal(SIGPIPE, SIG_IGN);
	int passed = 0, failed = 0;
	for (int i = optind; i < argc; i++) {
		if (run_one(server, argv[i], verbose))
			passed++;
		else
			failed++;
	}
	printf("replay: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
