/* sandbox_out.c: the output-throughput client of tests/bench/sandbox.sh.
 * It does what an editor does with a run's output: it reads the server's
 * LSP-framed messages, parses every one of them as JSON, and takes the
 * text out of each run/output notification (its escapes decoded), until
 * the snippet/run reply. In C, so that the figure is the server's and the
 * box's, not a Python client's json.loads (which was the limit:
 * docs/performance.md).
 *
 * Its parser (out_json.c) is a complete, validating JSON parser (RFC
 * 8259: every value, escape and number is checked; \u escapes and
 * surrogate pairs are decoded) that keeps only what a client of
 * run/output keeps: method, id, error, params.text and result.cpuMs. It scans a string 32 bytes at a time with AVX2
 * (16 with SSE2, 8 without either; chosen at start-up, -S avx2|sse2|swar
 * to choose), as a browser's JSON.parse does with SIMD, and decodes each
 * string in place in the buffer it read (RapidJSON's in-situ parsing),
 * so that text without escapes is never copied; json-c's tokener, byte at
 * a time, was the limit at about 600 MB/s of the client's CPU. Reads go
 * after what is buffered, moved to the buffer's start only past 2 MiB
 * (-c BYTES). With -j the client parses with json-c instead
 * (json_tokener_parse_ex), for comparison. -s runs the parser's
 * self-test (every escape decoded, every malformed message refused, with
 * each way of scanning) and exits.
 *
 * Usage: sandbox_out [-j] KILN CONFIG MB
 * Starts KILN --config CONFIG, runs `pass` once (the warm box is then
 * built) and again until a run comes from the Python zygote (which the
 * server builds after its first Python run: wait_for_zygote), then a Python snippet that writes MB MiB of 'x' to stdout, and
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
 * under cat, and the box's under kiln (its pid 1 and the same producer:
 * result.cpuMs); and the whole machine's busy CPU over each side's turns
 * (/proc/stat), which counts the producer in the box too, and any other
 * load. The server's CPU comes from its process CPU clock, cat's and the
 * producer's from wait4(). With -v, each turn's figures on stderr.
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

#include "out_json.h"

static int to_fd, from_fd;
static bool use_json_c, verbose;
/* Read buffer: as large as the largest message we accept plus a read. */
#define IN_MAX (8u << 20)
static char *inbuf;
static size_t inlen, inoff;
/* A message's header (Content-Length, perhaps Content-Type) is at most
 * this long. */
#define HEAD_MAX 1024

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

/* The same with json-c, for comparison (-j). */
static void parse_msg_json_c(json_tokener *tok, const char *body, size_t len, struct msg *m)
{
	static json_object *last;
	json_object_put(last);
	*m = (struct msg){.method = "", .cpu_ms = -1, .zygote = -1};
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
	if (json_object_object_get_ex(o, "result", &p) &&
	    json_object_object_get_ex(p, "zygote", &v) && json_object_is_type(v, json_type_boolean))
		m->zygote = json_object_get_boolean(v);
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

/* Buffered bytes are moved to the buffer's start only once this much is
 * used (or a message would not fit): reads go after what is there, and
 * most bytes are never moved, while the buffer in use stays small enough
 * to stay in cache. */
static size_t compact_at = 2u << 20;

/* The next message, parsed into m (its text points into inbuf, valid
 * until the next call). */
static void recv_msg(json_tokener *tok, struct msg *m)
{
	size_t head = 0, want = 0; /* the current message's header and whole size, once known */
	for (;;) {
		char *start = inbuf + inoff;
		size_t avail = inlen - inoff;
		char *end = want ? NULL : memmem(start, avail < HEAD_MAX ? avail : HEAD_MAX, "\r\n\r\n", 4);
		if (end) {
			/* The header is short: a NUL after it for strcasestr. */
			char save = *end;
			*end = '\0';
			char *cl = strcasestr(start, "Content-Length:");
			*end = save;
			if (!cl)
				fail("a message without Content-Length");
			head = (size_t)(end - start) + 4;
			size_t len = strtoul(cl + 15, NULL, 10);
			if (len > IN_MAX - head)
				fail("a message too large");
			want = head + len;
		} else if (!want && avail >= HEAD_MAX)
			fail("a header too large");
		if (want && avail >= want) {
			if (use_json_c)
				parse_msg_json_c(tok, start + head, want - head, m);
			else
				out_json_parse(start + head, want - head, m);
			inoff += want;
			if (inoff == inlen)
				inoff = inlen = 0;
			return;
		}
		/* Keep the partial message at the start when the buffer is
		 * used up to compact_at or the message would not fit. */
		if (inoff && (inlen >= compact_at || inoff + want > IN_MAX)) {
			memmove(inbuf, inbuf + inoff, inlen - inoff);
			inlen -= inoff;
			inoff = 0;
		}
		if (inlen == IN_MAX)
			fail("a message too large");
		ssize_t r = read(from_fd, inbuf + inlen, IN_MAX - inlen);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			fail("the server closed its output");
		inlen += (size_t)r;
	}
}

/* result.cpuMs of the last snippet/run reply: the box's CPU (its pid 1
 * and the program), -1 when it had none. */
static long long box_cpu_ms;
/* result.zygote of the last reply (struct msg's). */
static int last_zygote;

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
			box_cpu_ms = m.cpu_ms;
			last_zygote = m.zygote;
			return got;
		}
	}
}

/* A fresh server builds its Python zygote (docs/sandbox.md, "The
 * zygote") once it is idle after its first Python run: 1-2 s of one CPU.
 * Measured before it is ready, the first turn would share the machine
 * with that build and run its producer on the normal path. So `pass` runs
 * until its reply says it came from the zygote (result.zygote), for at
 * most ZYGOTE_WAIT_S (the zygote off or failed: then measured as it is,
 * said on stderr). A server whose replies lack the member (older than
 * it) gets a fixed pause of OLD_SERVER_WAIT_S, then one more `pass`; a
 * CONFIG with sandbox.zygote false, none. Ids from 1,000,000 on: the
 * measured runs' are small. */
#define ZYGOTE_WAIT_S 30
#define OLD_SERVER_WAIT_S 4
static void wait_for_zygote(json_tokener *tok, const char *config)
{
	static const char pass[] = "{\"language\":\"python\",\"code\":\"pass\"}";
	int id = 1000000;
	json_object *cfg = json_object_from_file(config), *sbx, *z;
	bool off = cfg && json_object_object_get_ex(cfg, "sandbox", &sbx) &&
	           json_object_object_get_ex(sbx, "zygote", &z) &&
	           json_object_is_type(z, json_type_boolean) && !json_object_get_boolean(z);
	json_object_put(cfg);
	if (off)
		return;
	if (last_zygote < 0) {
		usleep(OLD_SERVER_WAIT_S * 1000000);
		run(tok, id, pass, false);
		return;
	}
	double until = now_s() + ZYGOTE_WAIT_S;
	while (last_zygote != 1) {
		if (now_s() > until) {
			fprintf(stderr, "sandbox_out: no run came from the zygote in %d s; "
			                "measuring without it\n",
			        ZYGOTE_WAIT_S);
			return;
		}
		usleep(100000);
		run(tok, ++id, pass, false);
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

/* CPU seconds the whole machine spent busy so far (/proc/stat: all but
 * idle, iowait and steal): over a turn, every process of the pipeline,
 * the box's producer included, and whatever else ran meanwhile. */
static double machine_busy_s(void)
{
	FILE *f = fopen("/proc/stat", "r");
	unsigned long long v[8] = {0};
	if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
	                 &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
		fail("cannot read /proc/stat");
	fclose(f);
	/* user nice system idle iowait irq softirq steal */
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6]) / (double)sysconf(_SC_CLK_TCK);
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
	const char *bare = NULL, *python = NULL, *scan = NULL;
	out_json_choose_scan(NULL);
	for (; a < argc && argv[a][0] == '-'; a++) {
		if (strcmp(argv[a], "-j") == 0)
			use_json_c = true;
		else if (strcmp(argv[a], "-v") == 0)
			verbose = true;
		else if (strcmp(argv[a], "-s") == 0)
			return out_json_self_test();
		else if (strcmp(argv[a], "-S") == 0 && a + 1 < argc)
			scan = argv[++a];
		else if (strcmp(argv[a], "-c") == 0 && a + 1 < argc)
			compact_at = (size_t)atol(argv[++a]);
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
	out_json_choose_scan(scan);
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
	wait_for_zygote(tok, config);
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
		double *v = calloc((size_t)turns * 10, sizeof(*v));
		int *zyg = calloc((size_t)turns, sizeof(*zyg)); /* each kiln turn's result.zygote */
		if (!v || !zyg)
			die("calloc");
		double *kmbs = v, *cmbs = v + turns, *ratio = v + 2 * turns, *scpu = v + 3 * turns,
		       *ccpu = v + 4 * turns, *catcpu = v + 5 * turns, *pycpu = v + 6 * turns,
		       *kall = v + 7 * turns, *call = v + 8 * turns, *boxcpu = v + 9 * turns;
		double bytes = (double)((size_t)mb << 20);
		for (int t = 0; t < 2 * turns; t++) {
			int turn = t / 2;
			bool kiln_now = (t % 2) == (turn % 2); /* cat first in even turns */
			double m0 = machine_busy_s();
			if (kiln_now) {
				double c0 = ns_of(srv), s0 = self_cpu(), t0 = now_s();
				size_t got = run(tok, 3 + turn, params, true);
				double dt = now_s() - t0;
				if (got != (size_t)mb << 20)
					fail("received less text than was written");
				kmbs[turn] = bytes / dt / 1e6;
				scpu[turn] = (ns_of(srv) - c0) * 100e6 / bytes;
				ccpu[turn] = (self_cpu() - s0) * 100e6 / bytes;
				kall[turn] = (machine_busy_s() - m0) * 100e6 / bytes;
				boxcpu[turn] = (double)box_cpu_ms / 1000 * 100e6 / bytes;
				zyg[turn] = last_zygote;
			} else {
				double cc, pc, dt = cat_run(python, code, &cc, &pc);
				cmbs[turn] = bytes / dt / 1e6;
				catcpu[turn] = cc * 100e6 / bytes;
				pycpu[turn] = pc * 100e6 / bytes;
				call[turn] = (machine_busy_s() - m0) * 100e6 / bytes;
			}
		}
		for (int t = 0; t < turns; t++) {
			ratio[t] = kmbs[t] / cmbs[t];
			if (verbose)
				fprintf(stderr,
				        "turn %d: kiln %.0f MB/s, cat %.0f MB/s, %.3fx; CPU per 100 MB "
				        "server %.4f client %.4f box %.4f machine %.4f, cat %.4f "
				        "producer %.4f machine %.4f; zygote %d\n",
				        t, kmbs[t], cmbs[t], ratio[t], scpu[t], ccpu[t], boxcpu[t], kall[t],
				        catcpu[t], pycpu[t], call[t], zyg[t]);
		}
		printf("kiln=%.1f kiln_lo=%.1f kiln_hi=%.1f cat=%.1f cat_lo=%.1f cat_hi=%.1f "
		       "ratio=%.3f ratio_lo=%.3f ratio_hi=%.3f server_cpu=%.4f client_cpu=%.4f "
		       "cat_cpu=%.4f producer_cpu=%.4f box_cpu=%.4f kiln_machine_cpu=%.4f "
		       "cat_machine_cpu=%.4f\n",
		       median_of(kmbs, turns), lowest_of(kmbs, turns), highest_of(kmbs, turns),
		       median_of(cmbs, turns), lowest_of(cmbs, turns), highest_of(cmbs, turns),
		       median_of(ratio, turns), lowest_of(ratio, turns), highest_of(ratio, turns),
		       median_of(scpu, turns), median_of(ccpu, turns), median_of(catcpu, turns),
		       median_of(pycpu, turns), median_of(boxcpu, turns), median_of(kall, turns),
		       median_of(call, turns));
		free(v);
		free(zyg);
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
