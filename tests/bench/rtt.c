/* rtt.c: the bench's JSON-RPC client. It starts a server command with
 * pipes for stdin/stdout, sends one small request at a time over LSP
 * framing and waits for its reply, and prints round trips per second and
 * latency percentiles. The same client drives kiln and the comparison
 * server, so the ratio compares the servers, not the clients.
 *
 * Usage: rtt [-n COUNT] [-w WARMUP] [-m METHOD] -- COMMAND [ARG...]
 * Output: one line "rps=N median_us=N p90_us=N p99_us=N rss_kb=N", where
 * rss_kb is the server's resident memory after initialize, before load. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int to_fd, from_fd;
static char inbuf[1 << 20];
static size_t inlen;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "rtt: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void send_msg(const char *body)
{
	char frame[4096];
	int n = snprintf(frame, sizeof(frame), "Content-Length: %zu\r\n\r\n%s", strlen(body), body);
	for (int off = 0; off < n;) {
		ssize_t w = write(to_fd, frame + off, (size_t)(n - off));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write");
		off += (int)w;
	}
}

/* Read one framed message; returns its body (valid until the next call). */
static char *recv_msg(void)
{
	static char body[1 << 20];
	for (;;) {
		char *end = memmem(inbuf, inlen, "\r\n\r\n", 4);
		if (end) {
			char *cl = strcasestr(inbuf, "Content-Length:");
			if (!cl || cl > end) {
				fprintf(stderr, "rtt: reply without Content-Length\n");
				exit(1);
			}
			size_t len = strtoul(cl + 15, NULL, 10);
			size_t head = (size_t)(end - inbuf) + 4;
			if (len >= sizeof(body) || head + len > sizeof(inbuf)) {
				fprintf(stderr, "rtt: reply too large\n");
				exit(1);
			}
			if (inlen >= head + len) {
				memcpy(body, inbuf + head, len);
				body[len] = '\0';
				memmove(inbuf, inbuf + head + len, inlen - head - len);
				inlen -= head + len;
				return body;
			}
		}
		ssize_t r = read(from_fd, inbuf + inlen, sizeof(inbuf) - 1 - inlen);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fprintf(stderr, "rtt: the server closed its output\n");
			exit(1);
		}
		inlen += (size_t)r;
		inbuf[inlen] = '\0';
	}
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

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long count = 20000, warmup = 2000;
	const char *method = "bench/echo";
	int i = 1;
	for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			count = atol(argv[++i]);
		else if (strcmp(argv[i], "-w") == 0 && i + 1 < argc)
			warmup = atol(argv[++i]);
		else if (strcmp(argv[i], "-m") == 0 && i + 1 < argc)
			method = argv[++i];
	}
	if (i + 1 >= argc || count <= 0) {
		fprintf(stderr,
		        "usage: rtt [-n COUNT] [-w WARMUP] [-m METHOD] -- COMMAND [ARG...]\n");
		return 2;
	}
	char **cmd = argv + i + 1;
	signal(SIGPIPE, SIG_IGN);
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
		execvp(cmd[0], cmd);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	to_fd = in[1];
	from_fd = out[0];

	send_msg("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
	         "{\"processId\":null,\"capabilities\":{}}}");
	recv_msg();
	/* Idle memory: after initialize, settled, before any load. */
	usleep(300000);
	long rss = rss_kb(pid);

	uint64_t *lat = calloc((size_t)count, sizeof(*lat));
	char req[512], want[64];
	uint64_t t_start = 0;
	for (long k = 0; k < warmup + count; k++) {
		long id = k + 1;
		snprintf(req, sizeof(req),
		         "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"%s\",\"params\":"
		         "{\"text\":\"hello, kiln\",\"n\":%ld}}",
		         id, method, k);
		snprintf(want, sizeof(want), "\"id\":%ld", id);
		if (k == warmup)
			t_start = now_ns();
		uint64_t t0 = now_ns();
		send_msg(req);
		char *reply = recv_msg();
		uint64_t t1 = now_ns();
		if (!strstr(reply, want)) {
			fprintf(stderr, "rtt: reply for another id: %.200s\n", reply);
			return 1;
		}
		if (k >= warmup)
			lat[k - warmup] = t1 - t0;
	}
	uint64_t total = now_ns() - t_start;
	qsort(lat, (size_t)count, sizeof(*lat), cmp_u64);
	printf("rps=%.0f median_us=%.1f p90_us=%.1f p99_us=%.1f rss_kb=%ld\n",
	       (double)count / ((double)total / 1e9), (double)lat[count / 2] / 1e3,
	       (double)lat[count * 9 / 10] / 1e3, (double)lat[count * 99 / 100] / 1e3, rss);

	send_msg("{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"shutdown\"}");
	recv_msg();
	send_msg("{\"jsonrpc\":\"2.0\",\"method\":\"exit\"}");
	close(to_fd);
	int status;
	for (int w = 0; w < 200 && waitpid(pid, &status, WNOHANG) == 0; w++)
		usleep(10000);
	if (waitpid(pid, &status, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	free(lat);
	return 0;
}
