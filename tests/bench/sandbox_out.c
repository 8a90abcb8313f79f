/* sandbox_out.c: the output-throughput client of tests/bench/sandbox.sh.
 * It does what an editor does with a run's output: it reads the server's
 * LSP-framed messages, parses every one of them as JSON, and takes the
 * text out of each run/output notification (its escapes decoded), until
 * the snippet/run reply. In C, so that the figure is the server's and the
 * box's, not a Python client's json.loads (which was the limit:
 * docs/performance.md).
 *
 * The parser below is a complete, validating JSON parser (RFC 8259: every
 * value, escape and number is checked; \u escapes and surrogate pairs are
 * decoded) that keeps only what a client of run/output keeps: method, id,
 * error and params.text. It scans a string 8 bytes at a time, as a
 * browser's JSON.parse does with SIMD; json-c's tokener, byte at a time,
 * was the limit at about 600 MB/s of the client's CPU. With -j the client
 * parses with json-c instead (json_tokener_parse_ex), for comparison.
 *
 * Usage: sandbox_out [-j] KILN CONFIG MB
 * Starts KILN --config CONFIG, runs `pass` once (the warm box is then
 * built), then a Python snippet that writes MB MiB of 'x' to stdout, and
 * prints one line: "MB_PER_S SERVER_CPU_S_PER_100MB CLIENT_CPU_S_PER_100MB"
 * (MB = 10^6 bytes of text received; CPU from /proc/PID/stat and
 * getrusage). Fails when the text received is not the bytes written.
 *
 *        sandbox_out -t TURNS PYTHON KILN CONFIG MB
 * The same run TURNS times, in turns with the reference: PYTHON writing
 * the same MB MiB into a pipe to cat (stdout /dev/null), forked by this
 * client; cat first in even turns, kiln first in odd ones, so that a load
 * that drifts weighs on both. Prints one line of key=value pairs: kiln's
 * and cat's MB/s (median of the turns, lowest, highest), the ratio kiln /
 * cat taken turn by turn (median, lowest, highest), and CPU seconds per
 * 100 MB (medians): kiln's server, this client, cat, and the producer
 * under cat. The server's CPU comes from its process CPU clock, cat's and
 * the producer's from wait4().
 *
 *        sandbox_out -n N -p PAUSE [-b PROGRAM] KILN CONFIG LANG CODE
 * Runs CODE in LANG once, then N times, each after PAUSE seconds (not
 * timed: the warm box is built meanwhile, as between a person's runs),
 * and prints the median milliseconds from the request written to its
 * reply parsed: the warm-box latency with a client as quick as
 * hyperfine. With -b, PROGRAM (no arguments) also runs bare, forked and
 * waited for by this client, after the same pause, in turns with the
 * server's runs: then it prints "KILN_MS BARE_MS RATIO", RATIO the
 * median of the pairs' ratios, so that neither side is measured on a
 * CPU the pause let clock down while the other is not, and a load that
 * drifts weighs on both. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int to_fd, from_fd;
static bool use_json_c;
/* Read buffer: as large as the largest message we accept plus a read. */
#define IN_MAX (8u << 20)
static char *inbuf;
static size_t inlen, inoff;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "sandbox_out: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void fail(const char *what)
{
	fprintf(stderr, "sandbox_out: %s\n", what);
	exit(1);
}

/* --- the parser ---------------------------------------------------------- */

/* What a client keeps of a message. text points into msg_text (valid until
 * the next message). */
struct msg {
	char method[64];
	long long id;
	bool has_id, has_error, has_text;
	const char *text;
	size_t text_len;
};

struct parser {
	const unsigned char *p, *end;
	char *out; /* decoded string, grown as needed */
	size_t cap, len;
};

#define BAD(why) fail("not JSON: " why)

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t'))
		ps->p++;
}

static void out_add(struct parser *ps, const void *b, size_t n)
{
	if (ps->len + n > ps->cap) {
		size_t cap = ps->cap ? ps->cap : 4096;
		while (cap < ps->len + n)
			cap *= 2;
		if (!(ps->out = realloc(ps->out, cap)))
			die("realloc");
		ps->cap = cap;
	}
	memcpy(ps->out + ps->len, b, n);
	ps->len += n;
}

/* Whether one of 8 bytes is below 0x20, '"' or '\\' (SWAR). */
static inline bool special8(const unsigned char *s)
{
	uint64_t w;
	memcpy(&w, s, 8);
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
	return (((w - ones * 0x20) | (q - ones) | (b - ones)) & ~w & high) != 0;
}

static unsigned hex4(struct parser *ps)
{
	if (ps->end - ps->p < 4)
		BAD("a short \\u escape");
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		unsigned c = *ps->p++, d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			d = (c | 0x20) - 'a' + 10;
		else
			BAD("a bad \\u escape");
		v = v << 4 | d;
	}
	return v;
}

static void put_utf8(struct parser *ps, unsigned cp)
{
	unsigned char b[4];
	size_t n;
	if (cp < 0x80)
		b[0] = (unsigned char)cp, n = 1;
	else if (cp < 0x800)
		b[0] = (unsigned char)(0xc0 | cp >> 6), b[1] = (unsigned char)(0x80 | (cp & 0x3f)), n = 2;
	else if (cp < 0x10000)
		b[0] = (unsigned char)(0xe0 | cp >> 12), b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f)),
		b[2] = (unsigned char)(0x80 | (cp & 0x3f)), n = 3;
	else
		b[0] = (unsigned char)(0xf0 | cp >> 18), b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f)),
		b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f)), b[3] = (unsigned char)(0x80 | (cp & 0x3f)),
		n = 4;
	out_add(ps, b, n);
}

/* A string at ps->p (its opening quote), decoded into ps->out[0..len). */
static void parse_string(struct parser *ps)
{
	ps->len = 0;
	ps->p++;
	for (;;) {
		const unsigned char *run = ps->p;
		while (ps->end - ps->p >= 8 && !special8(ps->p))
			ps->p += 8;
		while (ps->p < ps->end && *ps->p >= 0x20 && *ps->p != '"' && *ps->p != '\\')
			ps->p++;
		out_add(ps, run, (size_t)(ps->p - run));
		if (ps->p >= ps->end)
			BAD("an unterminated string");
		unsigned char c = *ps->p++;
		if (c == '"')
			return;
		if (c < 0x20)
			BAD("a control character in a string");
		if (ps->p >= ps->end)
			BAD("an unterminated escape");
		c = *ps->p++;
		static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
		const char *e = c ? strchr(from, c) : NULL;
		if (e) {
			out_add(ps, &to[e - from], 1);
			continue;
		}
		if (c != 'u')
			BAD("an unknown escape");
		unsigned cp = hex4(ps);
		if (cp >= 0xd800 && cp <= 0xdbff && ps->end - ps->p >= 6 && ps->p[0] == '\\' &&
		    ps->p[1] == 'u') {
			const unsigned char *save = ps->p;
			ps->p += 2;
			unsigned lo = hex4(ps);
			if (lo >= 0xdc00 && lo <= 0xdfff)
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			else
				ps->p = save;
		}
		/* A lone surrogate: U+FFFD, as a browser's TextEncoder would. */
		put_utf8(ps, cp >= 0xd800 && cp <= 0xdfff ? 0xfffd : cp);
	}
}

static long long parse_number(struct parser *ps)
{
	const unsigned char *s = ps->p;
	if (ps->p < ps->end && *ps->p == '-')
		ps->p++;
	if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
		BAD("a bad number");
	if (*ps->p == '0')
		ps->p++;
	else
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	if (ps->p < ps->end && *ps->p == '.') {
		ps->p++;
		if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
			BAD("a bad fraction");
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	}
	if (ps->p < ps->end && (*ps->p | 0x20) == 'e') {
		ps->p++;
		if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
			ps->p++;
		if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
			BAD("a bad exponent");
		while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
			ps->p++;
	}
	return strtoll((const char *)s, NULL, 10);
}

static void literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		BAD("an unknown literal");
	ps->p += n;
}

enum where { W_OTHER, W_TOP, W_PARAMS };

/* One value; inside the top object and its params, keep what struct msg
 * keeps. */
static void parse_value(struct parser *ps, struct msg *m, enum where w, int depth)
{
	if (depth > 64)
		BAD("nested too deep");
	skip_ws(ps);
	if (ps->p >= ps->end)
		BAD("a missing value");
	switch (*ps->p) {
	case '{':
	case '[': {
		bool obj = *ps->p == '{';
		ps->p++;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
			ps->p++;
			return;
		}
		for (;;) {
			enum where inner = W_OTHER;
			if (obj) {
				skip_ws(ps);
				if (ps->p >= ps->end || *ps->p != '"')
					BAD("a key that is not a string");
				parse_string(ps);
				skip_ws(ps);
				if (ps->p >= ps->end || *ps->p++ != ':')
					BAD("a missing colon");
				skip_ws(ps);
				size_t kl = ps->len;
				const char *k = ps->out;
				if (w == W_TOP && kl == 6 && memcmp(k, "method", 6) == 0 &&
				    ps->p < ps->end && *ps->p == '"') {
					parse_string(ps);
					size_t n = ps->len < sizeof(m->method) - 1 ? ps->len
					                                           : sizeof(m->method) - 1;
					memcpy(m->method, ps->out, n);
					m->method[n] = '\0';
					goto next;
				}
				if (w == W_TOP && kl == 2 && memcmp(k, "id", 2) == 0 &&
				    ps->p < ps->end && (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9'))) {
					m->id = parse_number(ps);
					m->has_id = true;
					goto next;
				}
				if (w == W_TOP && kl == 5 && memcmp(k, "error", 5) == 0)
					m->has_error = true;
				if (w == W_TOP && kl == 6 && memcmp(k, "params", 6) == 0)
					inner = W_PARAMS;
				if (w == W_PARAMS && kl == 4 && memcmp(k, "text", 4) == 0 &&
				    ps->p < ps->end && *ps->p == '"') {
					/* The text is the decoded buffer itself: taken
					 * over, so that no later string overwrites it. */
					parse_string(ps);
					m->text = ps->out;
					m->text_len = ps->len;
					m->has_text = true;
					ps->out = NULL;
					ps->cap = ps->len = 0;
					goto next;
				}
			}
			parse_value(ps, m, inner, depth + 1);
		next:
			skip_ws(ps);
			if (ps->p >= ps->end)
				BAD("an unterminated object or array");
			if (*ps->p == ',') {
				ps->p++;
				continue;
			}
			if (*ps->p++ != (obj ? '}' : ']'))
				BAD("a missing comma");
			return;
		}
	}
	case '"':
		parse_string(ps);
		return;
	case 't':
		literal(ps, "true");
		return;
	case 'f':
		literal(ps, "false");
		return;
	case 'n':
		literal(ps, "null");
		return;
	default:
		parse_number(ps);
	}
}

static struct parser ps;
static char *text_keep;

/* Parse a whole message body into m. */
static void parse_msg(const char *body, size_t len, struct msg *m)
{
	*m = (struct msg){.method = ""};
	ps.p = (const unsigned char *)body;
	ps.end = ps.p + len;
	skip_ws(&ps);
	if (ps.p >= ps.end || *ps.p != '{')
		BAD("a message that is not an object");
	parse_value(&ps, m, W_TOP, 0);
	skip_ws(&ps);
	if (ps.p != ps.end)
		BAD("bytes after the message");
	/* The text's buffer is reused for the next string after this one. */
	if (m->has_text) {
		free(text_keep);
		text_keep = (char *)m->text;
	}
}

/* The same with json-c, for comparison (-j). */
static void parse_msg_json_c(json_tokener *tok, const char *body, size_t len, struct msg *m)
{
	static json_object *last;
	json_object_put(last);
	*m = (struct msg){.method = ""};
	json_tokener_reset(tok);
	json_object *o = json_tokener_parse_ex(tok, body, (int)len);
	if (!o || json_tokener_get_parse_end(tok) != len)
		fail("a message that is not one JSON value");
	last = o;
	json_object *v, *p, *t;
	if (json_object_object_get_ex(o, "method", &v) && json_object_is_type(v, json_type_string))
		snprintf(m->method, sizeof(m->method), "%s", json_object_get_string(v));
	if (json_object_object_get_ex(o, "id", &v) && json_object_is_type(v, json_type_int)) {
		m->id = json_object_get_int64(v);
		m->has_id = true;
	}
	m->has_error = json_object_object_get_ex(o, "error", &v);
	if (json_object_object_get_ex(o, "params", &p) && json_object_object_get_ex(p, "text", &t) &&
	    json_object_is_type(t, json_type_string)) {
		m->text = json_object_get_string(t);
		m->text_len = (size_t)json_object_get_string_len(t);
		m->has_text = true;
	}
}

/* --- the client ---------------------------------------------------------- */

static void send_msg(const char *body)
{
	size_t blen = strlen(body);
	char head[64];
	int h = snprintf(head, sizeof(head), "Content-Length: %zu\r\n\r\n", blen);
	const char *parts[2] = {head, body};
	size_t lens[2] = {(size_t)h, blen};
	for (int p = 0; p < 2; p++)
		for (size_t off = 0; off < lens[p];) {
			ssize_t w = write(to_fd, parts[p] + off, lens[p] - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				die("write");
			off += (size_t)w;
		}
}

/* The next message, parsed into m. */
static void recv_msg(json_tokener *tok, struct msg *m)
{
	for (;;) {
		char *start = inbuf + inoff;
		size_t avail = inlen - inoff;
		char *end = memmem(start, avail, "\r\n\r\n", 4);
		if (end) {
			/* The header is short: a NUL after it for strcasestr. */
			char save = *end;
			*end = '\0';
			char *cl = strcasestr(start, "Content-Length:");
			*end = save;
			if (!cl)
				fail("a message without Content-Length");
			size_t len = strtoul(cl + 15, NULL, 10);
			size_t head = (size_t)(end - start) + 4;
			if (head + len > IN_MAX)
				fail("a message too large");
			if (avail >= head + len) {
				if (use_json_c)
					parse_msg_json_c(tok, start + head, len, m);
				else
					parse_msg(start + head, len, m);
				inoff += head + len;
				return;
			}
		}
		/* Keep the partial message at the start, then read more. */
		if (inoff) {
			memmove(inbuf, inbuf + inoff, inlen - inoff);
			inlen -= inoff;
			inoff = 0;
		}
		if (inlen == IN_MAX)
			fail("a header too large");
		ssize_t r = read(from_fd, inbuf + inlen, IN_MAX - inlen);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			fail("the server closed its output");
		inlen += (size_t)r;
	}
}

/* Send snippet/run and read up to its reply; the bytes of text received,
 * each checked to be 'x' when check is set. */
static size_t run(json_tokener *tok, int id, const char *params, bool check)
{
	char req[1024];
	snprintf(req, sizeof(req),
	         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"snippet/run\",\"params\":%s}", id,
	         params);
	send_msg(req);
	size_t got = 0;
	for (;;) {
		struct msg m;
		recv_msg(tok, &m);
		if (strcmp(m.method, "run/output") == 0) {
			if (!m.has_text)
				fail("run/output without params.text");
			if (check) {
				/* Compared with memcmp (libc's, SIMD) a block at a
				 * time: the check is the client's, not what it
				 * measures. */
				static char xs[65536];
				if (!xs[0])
					memset(xs, 'x', sizeof(xs));
				for (size_t i = 0; i < m.text_len; i += sizeof(xs)) {
					size_t k = m.text_len - i < sizeof(xs) ? m.text_len - i : sizeof(xs);
					if (memcmp(m.text + i, xs, k) != 0)
						fail("text that is not what the program wrote");
				}
			}
			got += m.text_len;
		} else if (m.has_id && m.id == id) {
			if (m.has_error)
				fail("the run failed");
			return got;
		}
	}
}

static double cpu_of(pid_t pid)
{
	char path[64], line[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f || !fgets(line, sizeof(line), f))
		die("/proc/PID/stat");
	fclose(f);
	char *p = strrchr(line, ')');
	unsigned long ut, st;
	/* state ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut,
	                 &st) != 2)
		fail("cannot read /proc/PID/stat");
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double self_cpu(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

static double median_of(const double *v, int n)
{
	double *s = malloc((size_t)n * sizeof(*s));
	if (!s)
		die("malloc");
	memcpy(s, v, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

static double lowest_of(const double *v, int n)
{
	double m = v[0];
	for (int i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

static double highest_of(const double *v, int n)
{
	double m = v[0];
	for (int i = 1; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

static double ns_of(clockid_t c)
{
	struct timespec ts;
	if (clock_gettime(c, &ts) < 0)
		die("clock_gettime");
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* python -c CODE | cat >/dev/null, forked here: seconds from the first
 * fork to both reaped, and the CPU seconds of cat and of the producer. */
static double cat_run(const char *python, const char *code, double *ret_cat_cpu,
                      double *ret_py_cpu)
{
	int p[2];
	if (pipe(p) < 0)
		die("pipe");
	double t0 = now_s();
	pid_t py = fork();
	if (py == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execl(python, python, "-c", code, (char *)NULL);
		_exit(127);
	}
	pid_t cat = fork();
	if (cat == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(p[0], 0);
		dup2(null, 1);
		close(p[0]);
		close(p[1]);
		execlp("cat", "cat", (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	close(p[1]);
	if (py < 0 || cat < 0)
		die("fork");
	int st1, st2;
	struct rusage r1, r2;
	if (wait4(py, &st1, 0, &r1) < 0 || wait4(cat, &st2, 0, &r2) < 0)
		die("wait4");
	double dt = now_s() - t0;
	if (!WIFEXITED(st1) || WEXITSTATUS(st1) || !WIFEXITED(st2) || WEXITSTATUS(st2))
		fail("python | cat failed");
	*ret_py_cpu = tv_s(r1.ru_utime) + tv_s(r1.ru_stime);
	*ret_cat_cpu = tv_s(r2.ru_utime) + tv_s(r2.ru_stime);
	return dt;
}

/* A JSON string literal of s (quotes, backslashes and control bytes
 * escaped), into out of size n. */
static void json_quote(const char *s, char *out, size_t n)
{
	size_t o = 0;
	out[o++] = '"';
	for (; *s && o + 8 < n; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			o += (size_t)snprintf(out + o, n - o, "\\%c", c);
		else if (c < 0x20)
			o += (size_t)snprintf(out + o, n - o, "\\u%04x", c);
		else
			out[o++] = (char)c;
	}
	out[o++] = '"';
	out[o] = '\0';
}

int main(int argc, char **argv)
{
	int a = 1, runs = 0, turns = 0;
	double pause = 0;
	const char *bare = NULL, *python = NULL;
	for (; a < argc && argv[a][0] == '-'; a++) {
		if (strcmp(argv[a], "-j") == 0)
			use_json_c = true;
		else if (strcmp(argv[a], "-t") == 0 && a + 2 < argc) {
			turns = atoi(argv[++a]);
			python = argv[++a];
		}
		else if (strcmp(argv[a], "-n") == 0 && a + 1 < argc)
			runs = atoi(argv[++a]);
		else if (strcmp(argv[a], "-p") == 0 && a + 1 < argc)
			pause = atof(argv[++a]);
		else if (strcmp(argv[a], "-b") == 0 && a + 1 < argc)
			bare = argv[++a];
		else
			break;
	}
	if (runs > 0 ? argc - a != 4 : argc - a != 3 || atoi(argv[a + 2]) <= 0) {
		fprintf(stderr, "usage: sandbox_out [-j] KILN CONFIG MB\n"
		                "       sandbox_out -t TURNS PYTHON KILN CONFIG MB\n"
		                "       sandbox_out -n N -p PAUSE KILN CONFIG LANG CODE\n");
		return 2;
	}
	const char *kiln = argv[a], *config = argv[a + 1];
	int mb = runs > 0 ? 0 : atoi(argv[a + 2]);
	signal(SIGPIPE, SIG_IGN);
	inbuf = malloc(IN_MAX);
	json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
	if (!inbuf || !tok)
		die("malloc");
	int in[2], out[2];
	if (pipe(in) < 0 || pipe(out) < 0)
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execl(kiln, kiln, "--config", config, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	to_fd = in[1];
	from_fd = out[0];

	struct msg m;
	send_msg("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
	         "{\"processId\":null,\"capabilities\":{}}}");
	recv_msg(tok, &m);
	if (runs > 0) {
		char lang[256], code[2048], params[4400];
		json_quote(argv[a + 2], lang, sizeof(lang));
		json_quote(argv[a + 3], code, sizeof(code));
		snprintf(params, sizeof(params), "{\"language\":%s,\"code\":%s}", lang, code);
		run(tok, 1, params, false);
		double *ms = calloc((size_t)runs, sizeof(*ms)), *bms = calloc((size_t)runs, sizeof(*bms)),
		       *ratio = calloc((size_t)runs, sizeof(*ratio));
		if (!ms || !bms || !ratio)
			die("calloc");
		for (int i = 0; i < runs; i++) {
			usleep((useconds_t)(pause * 1e6));
			double t0 = now_s();
			run(tok, i + 2, params, false);
			ms[i] = (now_s() - t0) * 1000;
			if (!bare)
				continue;
			usleep((useconds_t)(pause * 1e6));
			t0 = now_s();
			pid_t b = fork();
			if (b == 0) {
				execl(bare, bare, (char *)NULL);
				_exit(127);
			}
			int st;
			if (b < 0 || waitpid(b, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
				fail("the bare program failed");
			bms[i] = (now_s() - t0) * 1000;
			ratio[i] = ms[i] / bms[i];
		}
		qsort(ms, (size_t)runs, sizeof(*ms), cmp_double);
		qsort(bms, (size_t)runs, sizeof(*bms), cmp_double);
		qsort(ratio, (size_t)runs, sizeof(*ratio), cmp_double);
#define MEDIAN(v) (runs % 2 ? (v)[runs / 2] : ((v)[runs / 2 - 1] + (v)[runs / 2]) / 2)
		if (bare)
			printf("%.2f %.2f %.3f\n", MEDIAN(ms), MEDIAN(bms), MEDIAN(ratio));
		else
			printf("%.2f\n", MEDIAN(ms));
		free(ms);
		free(bms);
		free(ratio);
		close(to_fd);
		waitpid(pid, NULL, 0);
		return 0;
	}
	run(tok, 1, "{\"language\":\"python\",\"code\":\"pass\"}", false);
	char params[512];
	snprintf(params, sizeof(params),
	         "{\"language\":\"python\",\"code\":\"import sys\\nb = b'x' * (1 << 20)\\n"
	         "for _ in range(%d):\\n    sys.stdout.buffer.write(b)\\n\","
	         "\"limits\":{\"outputBytes\":%lld}}",
	         mb, (long long)(mb + 1) << 20);
	if (turns > 0) {
		char code[256];
		snprintf(code, sizeof(code),
		         "import sys\nb = b'x' * (1 << 20)\nfor _ in range(%d):\n"
		         "    sys.stdout.buffer.write(b)\n",
		         mb);
		clockid_t srv;
		if (clock_getcpuclockid(pid, &srv) != 0)
			die("clock_getcpuclockid");
		double *v = calloc((size_t)turns * 8, sizeof(*v));
		if (!v)
			die("calloc");
		double *kmbs = v, *cmbs = v + turns, *ratio = v + 2 * turns, *scpu = v + 3 * turns,
		       *ccpu = v + 4 * turns, *catcpu = v + 5 * turns, *pycpu = v + 6 * turns;
		double bytes = (double)((size_t)mb << 20);
		for (int t = 0; t < 2 * turns; t++) {
			int turn = t / 2;
			bool kiln_now = (t % 2) == (turn % 2); /* cat first in even turns */
			if (kiln_now) {
				double c0 = ns_of(srv), s0 = self_cpu(), t0 = now_s();
				size_t got = run(tok, 3 + turn, params, true);
				double dt = now_s() - t0;
				if (got != (size_t)mb << 20)
					fail("received less text than was written");
				kmbs[turn] = bytes / dt / 1e6;
				scpu[turn] = (ns_of(srv) - c0) * 100e6 / bytes;
				ccpu[turn] = (self_cpu() - s0) * 100e6 / bytes;
			} else {
				double cc, pc, dt = cat_run(python, code, &cc, &pc);
				cmbs[turn] = bytes / dt / 1e6;
				catcpu[turn] = cc * 100e6 / bytes;
				pycpu[turn] = pc * 100e6 / bytes;
			}
		}
		for (int t = 0; t < turns; t++)
			ratio[t] = kmbs[t] / cmbs[t];
		printf("kiln=%.1f kiln_lo=%.1f kiln_hi=%.1f cat=%.1f cat_lo=%.1f cat_hi=%.1f "
		       "ratio=%.3f ratio_lo=%.3f ratio_hi=%.3f server_cpu=%.4f client_cpu=%.4f "
		       "cat_cpu=%.4f producer_cpu=%.4f\n",
		       median_of(kmbs, turns), lowest_of(kmbs, turns), highest_of(kmbs, turns),
		       median_of(cmbs, turns), lowest_of(cmbs, turns), highest_of(cmbs, turns),
		       median_of(ratio, turns), lowest_of(ratio, turns), highest_of(ratio, turns),
		       median_of(scpu, turns), median_of(ccpu, turns), median_of(catcpu, turns),
		       median_of(pycpu, turns));
		free(v);
	} else {
		double c0 = cpu_of(pid), s0 = self_cpu(), t0 = now_s();
		size_t got = run(tok, 2, params, true);
		double dt = now_s() - t0, c1 = cpu_of(pid), s1 = self_cpu();
		if (got != (size_t)mb << 20) {
			fprintf(stderr, "sandbox_out: received %zu bytes of text, not %zu\n", got,
			        (size_t)mb << 20);
			return 1;
		}
		printf("%.1f %.3f %.3f\n", (double)got / dt / 1e6,
		       (c1 - c0) * 100e6 / (double)got, (s1 - s0) * 100e6 / (double)got);
	}

	close(to_fd);
	int status;
	for (int w = 0; w < 200 && waitpid(pid, &status, WNOHANG) == 0; w++)
		usleep(10000);
	if (waitpid(pid, &status, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	json_tokener_free(tok);
	free(inbuf);
	return 0;
}
