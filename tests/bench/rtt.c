/* rtt.c: the bench's JSON-RPC client. It starts one or more server
 * commands with pipes for stdin/stdout, sends one small request at a time
 * over LSP framing and waits for its reply, and reports round trips per
 * second, latency percentiles, and what each server spends per round trip
 * (CPU, context switches). The same client drives every server, so the
 * ratios compare the servers, not the clients.
 *
 * The servers are measured in turns: every server is started once, then
 * TURNS times each runs COUNT round trips (after COUNT/10 untimed ones,
 * so its caches are warm again after the others ran), in the order
 * 1 2 3, then 3 2 1, and so on, so that a load that drifts weighs on all
 * and none always follows the same neighbour. Each figure is the median
 * over the turns, with the middle half of the turns (first and third
 * quartiles) beside it as its spread; each ratio is taken turn by turn
 * (server k against server 1 in the same turn), then the same statistics
 * of those.
 *
 * With -c CPU the client, and so every server it starts, is pinned to
 * that one CPU. A round trip is two wake-ups; on two different CPUs each
 * is an inter-processor interrupt, which in a VM is an exit to the
 * hypervisor and costs several times a server's own work (on this
 * Firecracker VM about 30 us a wake-up against 1-2 us on one CPU), and
 * whether the scheduler puts client and server on one CPU changes from
 * minute to minute. On one CPU every server gets the same placement and
 * the figure is the servers' work plus two same-CPU switches.
 *
 * Usage: rtt [-n COUNT] [-w WARMUP] [-t TURNS] [-c CPU] [-m METHOD]
 *            -s 'COMMAND ARG...' [-s 'COMMAND ARG...' ...]
 *        rtt [-n COUNT] ... -- COMMAND [ARG...]     (one server)
 *        rtt --floor                                (be the floor server)
 * A -s command is split at spaces (no quoting). The floor server, `rtt
 * --floor`, is the least a server can do over these pipes: a blocking
 * read, the id found with strstr, one write of a canned reply; what it
 * takes per round trip is the client's and the kernel's share, and what a
 * server takes beyond it is its own.
 *
 * Output: one line per server:
 *   server=K rps=N rps_lo=N rps_hi=N median_us=N p90_us=N p99_us=N
 *   cpu_us=N cs=N client_cpu_us=N rss_kb=N ratio=N ratio_lo=N ratio_hi=N
 * rps and its quartiles over the turns; latency percentiles over all turns;
 * cpu_us the server's CPU per round trip (all its threads, from its
 * process CPU clock) and cs its context switches per round trip (from
 * /proc/PID/task/ * /status), both over the timed round trips; rss_kb its
 * resident memory after initialize, before load; ratio this server's
 * round trips per second over server 1's, median of the turns. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SERVERS 4
#define MAX_TURNS   201

struct server {
	pid_t pid;
	int to_fd, from_fd;
	clockid_t cpu_clock;
	char inbuf[1 << 16];
	size_t inlen;
	uint64_t *lat; /* every timed round trip, all turns */
	size_t nlat;
	double rps[MAX_TURNS], ratio[MAX_TURNS];
	uint64_t cpu_ns, client_ns;
	long cs;
	long rss;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	if (clock_gettime(c, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "rtt: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write");
		p += w;
		n -= (size_t)w;
	}
}

static void send_msg(struct server *s, const char *body)
{
	char frame[4096];
	int n = snprintf(frame, sizeof(frame), "Content-Length: %zu\r\n\r\n%s", strlen(body), body);
	write_all(s->to_fd, frame, (size_t)n);
}

/* Read one framed message from fd, buffered in buf; returns its body,
 * NUL-terminated, valid until the next call; NULL at the end of input. */
static char *recv_from(int fd, char *buf, size_t cap, size_t *len)
{
	static char body[1 << 16];
	for (;;) {
		char *end = memmem(buf, *len, "\r\n\r\n", 4);
		if (end) {
			*end = '\0';
			char *cl = strcasestr(buf, "Content-Length:");
			*end = '\r';
			if (!cl) {
				fprintf(stderr, "rtt: a message without Content-Length\n");
				exit(1);
			}
			size_t blen = strtoul(cl + 15, NULL, 10);
			size_t head = (size_t)(end - buf) + 4;
			if (blen >= sizeof(body) || head + blen > cap) {
				fprintf(stderr, "rtt: a message too large\n");
				exit(1);
			}
			if (*len >= head + blen) {
				memcpy(body, buf + head, blen);
				body[blen] = '\0';
				memmove(buf, buf + head + blen, *len - head - blen);
				*len -= head + blen;
				return body;
			}
		}
		if (*len == cap) {
			fprintf(stderr, "rtt: a header too large\n");
			exit(1);
		}
		ssize_t r = read(fd, buf + *len, cap - *len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return NULL;
		*len += (size_t)r;
	}
}

static char *recv_msg(struct server *s)
{
	char *b = recv_from(s->from_fd, s->inbuf, sizeof(s->inbuf), &s->inlen);
	if (!b) {
		fprintf(stderr, "rtt: server %d closed its output\n", (int)s->pid);
		exit(1);
	}
	return b;
}

/* The floor server: answers every request with a canned error carrying
 * its id, in one write; a blocking read, no event loop, no JSON parse. */
static int floor_server(void)
{
	static char buf[1 << 16];
	size_t len = 0;
	char *body;
	while ((body = recv_from(0, buf, sizeof(buf), &len))) {
		char *id = strstr(body, "\"id\":");
		if (!id)
			continue; /* a notification (exit) */
		id += 5;
		size_t idlen = strcspn(id, ",}");
		char reply[512], frame[600];
		int n;
		if (strstr(body, "\"method\":\"initialize\""))
			n = snprintf(reply, sizeof(reply),
			             "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"capabilities\":{}}}",
			             (int)idlen, id);
		else if (strstr(body, "\"method\":\"shutdown\""))
			n = snprintf(reply, sizeof(reply), "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":null}",
			             (int)idlen, id);
		else
			n = snprintf(reply, sizeof(reply),
			             "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"error\":{\"code\":-32601,"
			             "\"message\":\"Method not found: bench/echo\"}}",
			             (int)idlen, id);
		int f = snprintf(frame, sizeof(frame), "Content-Length: %d\r\n\r\n%s", n, reply);
		write_all(1, frame, (size_t)f);
	}
	return 0;
}

static long rss_kb(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	long kb = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* Context switches of every thread of pid, voluntary and not. */
static long switches(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	long total = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		char p[300], line[256];
		snprintf(p, sizeof(p), "/proc/%d/task/%s/status", (int)pid, e->d_name);
		FILE *f = fopen(p, "r");
		if (!f)
			continue;
		long v;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1 ||
			    sscanf(line, "nonvoluntary_ctxt_switches: %ld", &v) == 1)
				total += v;
		fclose(f);
	}
	closedir(d);
	return total;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The q-quantile of v[0..n) (0.5: the median), interpolated. */
static double quantile(const double *v, int n, double q)
{
	double s[MAX_TURNS];
	memcpy(s, v, (size_t)n * sizeof(*v));
	qsort(s, (size_t)n, sizeof(*s), cmp_double);
	double at = q * (n - 1);
	int i = (int)at;
	return i + 1 < n ? s[i] + (s[i + 1] - s[i]) * (at - i) : s[i];
}

static void start(struct server *s, char **cmd)
{
	int in[2], out[2];
	if (pipe(in) < 0 || pipe(out) < 0)
		die("pipe");
	s->pid = fork();
	if (s->pid < 0)
		die("fork");
	if (s->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execvp(cmd[0], cmd);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	s->to_fd = in[1];
	s->from_fd = out[0];
	if (clock_getcpuclockid(s->pid, &s->cpu_clock) != 0)
		die("clock_getcpuclockid");
	send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
	            "{\"processId\":null,\"capabilities\":{}}}");
	recv_msg(s);
}

static void stop(struct server *s)
{
	send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"shutdown\"}");
	recv_msg(s);
	send_msg(s, "{\"jsonrpc\":\"2.0\",\"method\":\"exit\"}");
	close(s->to_fd);
	int status;
	for (int w = 0; w < 200 && waitpid(s->pid, &status, WNOHANG) == 0; w++)
		usleep(10000);
	if (waitpid(s->pid, &status, WNOHANG) == 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, &status, 0);
	}
	close(s->from_fd);
}

static long next_id = 1;

/* n round trips; their latencies into lat when it is not NULL. */
static void round_trips(struct server *s, const char *method, long n, uint64_t *lat)
{
	char req[512], want[64];
	for (long k = 0; k < n; k++) {
		long id = next_id++;
		snprintf(req, sizeof(req),
		         "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"%s\",\"params\":"
		         "{\"text\":\"hello, kiln\",\"n\":%ld}}",
		         id, method, k);
		snprintf(want, sizeof(want), "\"id\":%ld,", id);
		uint64_t t0 = now_ns();
		send_msg(s, req);
		char *reply = recv_msg(s);
		uint64_t t1 = now_ns();
		if (!strstr(reply, want)) {
			fprintf(stderr, "rtt: a reply for another id: %.200s\n", reply);
			exit(1);
		}
		if (lat)
			lat[k] = t1 - t0;
	}
}

/* Split a -s command at spaces into a NULL-terminated argv. */
static char **split(char *cmd)
{
	char **argv = calloc(strlen(cmd) / 2 + 2, sizeof(*argv));
	int n = 0;
	if (!argv)
		die("calloc");
	for (char *t = strtok(cmd, " "); t; t = strtok(NULL, " "))
		argv[n++] = t;
	argv[n] = NULL;
	return argv;
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--floor") == 0)
		return floor_server();
	long count = 20000, warmup = 2000;
	int turns = 1, cpu = -1, nserv = 0;
	const char *method = "bench/echo";
	char **cmds[MAX_SERVERS];
	int i = 1;
	for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			count = atol(argv[++i]);
		else if (strcmp(argv[i], "-w") == 0 && i + 1 < argc)
			warmup = atol(argv[++i]);
		else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc)
			turns = atoi(argv[++i]);
		else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
			cpu = atoi(argv[++i]);
		else if (strcmp(argv[i], "-m") == 0 && i + 1 < argc)
			method = argv[++i];
		else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc && nserv < MAX_SERVERS)
			cmds[nserv++] = split(argv[++i]);
		else
			break;
	}
	if (i + 1 < argc && strcmp(argv[i], "--") == 0 && nserv < MAX_SERVERS)
		cmds[nserv++] = argv + i + 1;
	else if (i < argc)
		nserv = 0;
	if (nserv == 0 || count <= 0 || turns < 1 || turns > MAX_TURNS) {
		fprintf(stderr, "usage: rtt [-n COUNT] [-w WARMUP] [-t TURNS] [-c CPU] [-m METHOD]\n"
		                "           -s 'COMMAND ARG...' [-s ...] | -- COMMAND [ARG...]\n");
		return 2;
	}
	if (cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0)
			die("sched_setaffinity");
	}
	signal(SIGPIPE, SIG_IGN);
	static struct server servers[MAX_SERVERS];
	for (int k = 0; k < nserv; k++) {
		start(&servers[k], cmds[k]);
		servers[k].lat = calloc((size_t)(count * turns), sizeof(uint64_t));
		if (!servers[k].lat)
			die("calloc");
	}
	/* Idle memory: after initialize, settled, before any load. */
	usleep(300000);
	for (int k = 0; k < nserv; k++) {
		servers[k].rss = rss_kb(servers[k].pid);
		round_trips(&servers[k], method, warmup, NULL);
	}
	for (int t = 0; t < turns; t++) {
		for (int j = 0; j < nserv; j++) {
			struct server *s = &servers[t % 2 ? nserv - 1 - j : j];
			round_trips(s, method, count / 10, NULL);
			long cs0 = switches(s->pid);
			uint64_t c0 = clock_ns(s->cpu_clock), m0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
			uint64_t t0 = now_ns();
			round_trips(s, method, count, s->lat + s->nlat);
			uint64_t dt = now_ns() - t0;
			s->cpu_ns += clock_ns(s->cpu_clock) - c0;
			s->client_ns += clock_ns(CLOCK_PROCESS_CPUTIME_ID) - m0;
			s->cs += switches(s->pid) - cs0;
			s->nlat += (size_t)count;
			s->rps[t] = (double)count / ((double)dt / 1e9);
		}
		for (int k = 0; k < nserv; k++)
			servers[k].ratio[t] = servers[k].rps[t] / servers[0].rps[t];
	}
	for (int k = 0; k < nserv; k++) {
		struct server *s = &servers[k];
		qsort(s->lat, s->nlat, sizeof(*s->lat), cmp_u64);
		double n = (double)s->nlat;
		printf("server=%d rps=%.0f rps_lo=%.0f rps_hi=%.0f median_us=%.1f p90_us=%.1f "
		       "p99_us=%.1f cpu_us=%.2f cs=%.2f client_cpu_us=%.2f rss_kb=%ld ratio=%.3f "
		       "ratio_lo=%.3f ratio_hi=%.3f\n",
		       k + 1, quantile(s->rps, turns, 0.5), quantile(s->rps, turns, 0.25),
		       quantile(s->rps, turns, 0.75), (double)s->lat[s->nlat / 2] / 1e3,
		       (double)s->lat[s->nlat * 9 / 10] / 1e3, (double)s->lat[s->nlat * 99 / 100] / 1e3,
		       (double)s->cpu_ns / 1e3 / n, (double)s->cs / n, (double)s->client_ns / 1e3 / n,
		       s->rss, quantile(s->ratio, turns, 0.5), quantile(s->ratio, turns, 0.25),
		       quantile(s->ratio, turns, 0.75));
		stop(s);
		free(s->lat);
	}
	return 0;
}
