/* validate_bench.c: time val_check() in process, the way the proposal path
 * calls it. Usage: validate_bench LANG FILE ITERATIONS [python|nopython].
 * Prints "median_us p90_us findings" for the file: the median and 90th
 * percentile of ITERATIONS calls, and how many diagnostics one call gave.
 * VALIDATE_BENCH_GAP_US=N sleeps N microseconds between calls (untimed),
 * as an editor's checks come apart, not back to back.
 * Built and run by tests/bench/validate.sh; not a test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/json.h"
#include "core/log.h"
#include "validate/validate.h"

/* Under valgrind --tool=callgrind the timed calls are counted alone (the
 * first call compiles the rules and starts the worker): validate.sh
 * reports instructions per check, a figure the machine's load does not
 * move. Without valgrind's header the bench times only. */
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS
#endif

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: validate_bench LANG FILE ITERATIONS [python|nopython]\n");
		return 2;
	}
	log_set_level(LOG_ERROR);
	FILE *f = fopen(argv[2], "rb");
	if (!f)
		return 2;
	static char code[1 << 20];
	size_t len = fread(code, 1, sizeof(code) - 1, f);
	fclose(f);
	int n = atoi(argv[3]);
	bool python = argc < 5 || strcmp(argv[4], "python") == 0;
	const char *cj = getenv("VALIDATE_BENCH_CONFIG");
	json_object *config = json_tokener_parse(cj ? cj : python ? "{}" : "{\"python\": false}");
	struct validator *v;
	if (n < 1 || val_new(config, &v) < 0)
		return 2;
	json_object_put(config);
	const char *gap_env = getenv("VALIDATE_BENCH_GAP_US");
	long gap_us = gap_env ? atol(gap_env) : 0;
	double *t = calloc((size_t)n, sizeof(double));
	size_t findings = 0;
	char detail[256];
	/* One call first: it starts the CPython worker. */
	for (int i = -1; i < n; i++) {
		json_object *diags;
		enum val_verdict verdict;
		if (gap_us > 0) {
			struct timespec gap = {gap_us / 1000000, gap_us % 1000000 * 1000};
			nanosleep(&gap, NULL);
		}
		if (i == 0)
			CALLGRIND_ZERO_STATS;
		double t0 = now_us();
		if (val_check(v, argv[1], code, len, NULL, POS_UTF16, &diags, &verdict, detail,
		              sizeof(detail)) < 0) {
			fprintf(stderr, "%s\n", detail);
			return 1;
		}
		double dt = now_us() - t0;
		if (i >= 0)
			t[i] = dt;
		findings = json_object_array_length(diags);
		json_object_put(diags);
	}
	CALLGRIND_DUMP_STATS;
	qsort(t, (size_t)n, sizeof(double), cmp);
	printf("%.1f %.1f %zu\n", t[n / 2], t[n * 9 / 10], findings);
	free(t);
	val_free(v);
	return 0;
}
