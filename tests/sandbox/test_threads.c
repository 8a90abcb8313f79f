/* test_threads.c: runs start safely while other threads of the server
 * allocate. Four threads hammer malloc/free (so its locks are often held
 * at the instant of clone) while runs are started one after another
 * through run_start; a deadlock between clone and exec would hang a
 * run, which alarm() turns into a failure. Then, with the threads still
 * churning, workers (sandbox/worker.h, the validator's kind of box) are
 * started, with and without a sandbox instance, and echo a line back
 * through their socket. Prints "N passed,
 * N failed". */
#include <json-c/json.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/loop.h"
#include "sandbox/run/run.h"
#include "sandbox/sandbox.h"
#include "sandbox/state.h"
#include "sandbox/box/worker.h"

#define RUNS    25
#define WORKERS 10

static atomic_bool stop;
static int passed, failed, done_runs;
static struct loop *loop;
static struct sandbox *sbx;

static void *churn(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		void *p[64];
		for (int i = 0; i < 64; i++)
			p[i] = malloc((size_t)(16 + i * 97));
		for (int i = 0; i < 64; i++)
			free(p[i]);
	}
	return NULL;
}

static char out[256];

static enum run_flow on_output(void *data, struct run *run, enum run_stream stream,
			       const char *text, size_t len)
{
	(void)data, (void)run, (void)stream;
	size_t have = strlen(out);
	if (have + len < sizeof(out))
		memcpy(out + have, text, len), out[have + len] = 0;
	return RUN_CONTINUE;
}

static void on_artifact(void *data, struct run *run, const struct run_artifact *a)
{
	(void)data, (void)run, (void)a;
}

static const struct run_sink sink = {.output = on_output, .artifact = on_artifact};
static void start_next(void);

static void on_done(void *data, const struct run_outcome *o, int err, const char *msg)
{
	(void)data;
	int64_t code = -1;
	if (err == 0 && o->exited)
		code = o->exit_code;
	if (err == 0 && code == 0 && strcmp(out, "ok\n") == 0) {
		passed++;
	} else {
		failed++;
		printf("not ok run %d: err %d (%s) exit %lld out '%s'\n", done_runs, err,
		       msg ? msg : "", (long long)code, out);
	}
	if (++done_runs == RUNS)
		loop_stop(loop, 0);
	else
		start_next();
}

static void start_next(void)
{
	struct run *run;
	out[0] = 0;
	if (run_start(sbx, &sink, NULL, "bash", "echo ok", NULL, on_done, NULL, &run) < 0) {
		failed++;
		loop_stop(loop, 0);
	}
}

/* One worker: a shell that echoes each line back. */
static void worker_round(int i)
{
	static const char *const argv[] = {"/bin/sh", "{file}", NULL};
	struct sbx_worker_spec spec = {.argv = argv,
	                               .file = "echo.sh",
	                               .data = "while read -r l; do echo \"got $l\"; done\n",
	                               .start_ms = 10000};
	struct sbx_worker *w = NULL;
	char err[512];
	/* Odd rounds without a sandbox instance, as the validator spawns
	 * its worker: the process's host facts are enough. */
	int r = sbx_worker_spawn(i % 2 ? NULL : &sbx->base, &spec, &w, err, sizeof(err));
	if (r < 0) {
		failed++;
		printf("not ok worker %d: %s\n", i, err);
		return;
	}
	int fd = sbx_worker_fd(w);
	char buf[64] = "";
	size_t have = 0;
	ssize_t n = send(fd, "ping\n", 5, MSG_NOSIGNAL);
	while (n == 5 && have < sizeof(buf) - 1 && !memchr(buf, '\n', have)) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 10000) <= 0)
			break;
		ssize_t k2 = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (k2 <= 0)
			break;
		have += (size_t)k2;
		buf[have] = 0;
	}
	sbx_worker_free(w);
	if (strcmp(buf, "got ping\n") == 0) {
		passed++;
	} else {
		failed++;
		printf("not ok worker %d: answered '%s'\n", i, buf);
	}
}

int main(void)
{
	alarm(120); /* a deadlocked child would hang the loop forever */
	char err[512];
	loop = loop_new();
	if (!loop || sandbox_new(loop, NULL, &sbx, err, sizeof(err)) < 0) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, churn, NULL);
	start_next();
	loop_run(loop);
	for (int i = 0; i < WORKERS; i++)
		worker_round(i);
	/* Host facts are built once per process and shared. */
	if (sbx->base.host == sbx_host_get() && sbx_host_get()->filter.filter) {
		passed++;
	} else {
		failed++;
		printf("not ok: the sandbox has host facts of its own\n");
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	sandbox_free(sbx);
	loop_free(loop);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
