/* test_text.c: the UTF-8 repair of streamed output (server/sandbox/output/text.c)
 * and the limit resolution (limits.c), the config section's check
 * (sandbox.c), artifact names (artifact.c) and the plan's kept glob (plan.c), checked exhaustively where that is
 * cheap: every way of splitting a mixed valid/invalid stream in two reads
 * must give the same text as one read, and the text is always valid UTF-8.
 * Prints "N passed, N failed". Built and run by tests/suites/30-sandbox.sh. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/json.h"
#include "core/position.h"
#include "sandbox/host/cgroup.h"
#include "sandbox/output/artifact.h"
#include "sandbox/host/limits.h"
#include "sandbox/box/plan.h"
#include "sandbox/config.h"
#include "sandbox/output/text.h"

static int passed, failed;

#define CHECK(cond, ...)                                      \
	do {                                                  \
		if (cond) {                                   \
			passed++;                             \
		} else {                                      \
			failed++;                             \
			printf("not ok %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__);                  \
			printf("\n");                         \
		}                                             \
	} while (0)

static void decode(const char *in, size_t n, size_t split, struct buf *out)
{
	struct sbx_utf8 u = {0};
	buf_init(out, 1 << 20);
	sbx_utf8_decode(&u, in, split, false, out);
	sbx_utf8_decode(&u, in + split, n - split, true, out);
	if (!out->data)
		buf_append(out, "", 0);
}

static void splits(const char *name, const char *in, size_t n, const char *want)
{
	int bad = 0;
	for (size_t split = 0; split <= n; split++) {
		struct buf out;
		decode(in, n, split, &out);
		if (strcmp(out.data, want) != 0 || !utf8_valid(out.data, out.len)) {
			if (!bad)
				printf("# %s split %zu: got '%s'\n", name, split, out.data);
			bad = 1;
		}
		buf_release(&out);
	}
	CHECK(!bad, "%s: every split gives the same valid text", name);
}

static void byte_by_byte(const char *in, size_t n, const char *want)
{
	struct sbx_utf8 u = {0};
	struct buf out;
	buf_init(&out, 1 << 20);
	for (size_t i = 0; i < n; i++)
		sbx_utf8_decode(&u, in + i, 1, false, &out);
	sbx_utf8_decode(&u, "", 0, true, &out);
	CHECK(out.data && strcmp(out.data, want) == 0, "byte by byte: got '%s'", out.data);
	buf_release(&out);
}

#define R "\xef\xbf\xbd"

static void text_tests(void)
{
	splits("ascii", "hello", 5, "hello");
	splits("euro", "a\xe2\x82\xac" "b", 5, "a\xe2\x82\xac" "b");
	splits("emoji", "\xf0\x9f\x98\x80!", 5, "\xf0\x9f\x98\x80!");
	splits("invalid bytes", "a\xff\xfe" "b", 4, "a" R R "b");
	splits("truncated at end", "ab\xe2\x82", 4, "ab" R R);
	splits("overlong", "\xc0\xaf", 2, R R);
	splits("surrogate", "\xed\xa0\x80x", 4, R R R "x");
	splits("too large", "\xf4\x90\x80\x80", 4, R R R R);
	splits("lone continuation", "\x80" "a", 2, R "a");
	splits("bad then good", "\xe2\x28\xa1\xe2\x82\xac", 6, R "(" R "\xe2\x82\xac");
	byte_by_byte("x\xe2\x82\xac\xf0\x9f\x98\x80\xff" "y", 11,
		     "x\xe2\x82\xac\xf0\x9f\x98\x80" R "y");
	/* A euro sign, then a bad byte, at each place of a 70-byte ASCII run:
	 * the ASCII scan (core/scan.h) steps 32 bytes at a time and must stop
	 * at the first byte that is not ASCII, wherever it is. */
	for (size_t at = 0; at + 4 <= 70; at++) {
		char in[71], want[80], name[32];
		memset(in, 'a', 70);
		in[70] = '\0';
		memcpy(in + at, "\xe2\x82\xac\xff", 4);
		memcpy(want, in, at);
		memcpy(want + at, "\xe2\x82\xac" R, 6);
		memcpy(want + at + 6, in + at + 4, 70 - at - 4);
		want[70 + 2] = '\0';
		snprintf(name, sizeof(name), "long run, at %zu", at);
		splits(name, in, 70, want);
	}

	struct sbx_tail t = {0};
	sbx_tail_add(&t, "", 0);
	CHECK(!t.buf && strcmp(sbx_tail_str(&t), "") == 0,
	      "an empty tail holds no buffer (a run's two cost no page until output)");
	sbx_tail_add(&t, "ab", 2);
	CHECK(t.buf && strcmp(sbx_tail_str(&t), "ab") == 0, "the first text allocates the tail");
	for (int i = 0; i < 8000; i++)
		sbx_tail_add(&t, "\xe2\x82\xac", 3);
	const char *s = sbx_tail_str(&t);
	CHECK(strlen(s) <= SBX_TAIL_MAX && utf8_valid(s, strlen(s)), "tail is capped and valid");
	CHECK(strlen(s) >= SBX_TAIL_MAX - 3, "tail keeps the last 16 KiB");
	sbx_tail_free(&t);
	CHECK(!t.buf && t.len == 0 && strcmp(sbx_tail_str(&t), "") == 0, "a freed tail is empty");
}

static const char *enforced_by(const struct sbx_limits *l, unsigned cg, const char *name)
{
	struct sbx_limit info;
	for (size_t i = 0; i < sbx_limit_info(l, cg, i, &info); i++)
		if (strcmp(info.name, name) == 0)
			return info.enforced_by;
	return NULL;
}

static void limit_tests(void)
{
	char err[256] = "";
	struct sbx_limits l;
	CHECK(sbx_limits_resolve(NULL, NULL, &l, err, sizeof(err)) == 0 && l.wall_ms == 30000 &&
		      l.output_bytes == 10u << 20,
	      "defaults");
	json_object *sec = json_tokener_parse("{\"limits\": {\"wallMs\": 5000}}");
	json_object *req = json_tokener_parse("{\"cpuMs\": 2000}");
	CHECK(sbx_limits_resolve(sec, req, &l, err, sizeof(err)) == 0 && l.wall_ms == 5000 &&
		      l.cpu_ms == 2000,
	      "config then request");
	json_object_put(req);
	req = json_tokener_parse("{\"wallMs\": 99999999}");
	CHECK(sbx_limits_resolve(sec, req, &l, err, sizeof(err)) == -22 && strstr(err, "wallMs"),
	      "over the ceiling is refused: %s", err);
	json_object_put(req);
	req = json_tokener_parse("{\"bogus\": 1}");
	CHECK(sbx_limits_resolve(sec, req, &l, err, sizeof(err)) == -22 && strstr(err, "bogus"),
	      "unknown key is refused");
	json_object_put(req);
	req = json_tokener_parse("{\"memoryBytes\": \"lots\"}");
	CHECK(sbx_limits_resolve(sec, req, &l, err, sizeof(err)) == -22, "wrong type is refused");
	json_object_put(req);
	json_object_put(sec);
	sec = json_tokener_parse("{\"maxLimits\": {\"wallMs\": 1000}}");
	req = json_tokener_parse("{\"wallMs\": 2000}");
	CHECK(sbx_limits_resolve(sec, req, &l, err, sizeof(err)) == -22, "maxLimits lowers the ceiling");
	json_object_put(req);
	json_object_put(sec);
	struct sbx_limit info;
	size_t n = sbx_limit_info(&l, 0, 0, &info);
	CHECK(n == 9 && sbx_limit_info(&l, 0, n, &info) == 0, "every limit is described");
	const char *by = enforced_by(&l, 0, "memoryBytes");
	CHECK(by && strncmp(by, "rlimit:", 7) == 0, "without a cgroup, memory is an rlimit");
	by = enforced_by(&l, 0, "cpuCores");
	CHECK(by && strncmp(by, "not enforced", 12) == 0, "without a cgroup, cpuCores is not enforced");
	by = enforced_by(&l, SBX_CG_MEMORY | SBX_CG_CPU, "memoryBytes");
	CHECK(by && strstr(by, "memory.max"), "the memory controller enforces memoryBytes");
	by = enforced_by(&l, SBX_CG_MEMORY | SBX_CG_CPU, "processes");
	CHECK(by && strncmp(by, "rlimit:", 7) == 0, "without the pids controller, processes is an rlimit");
	by = enforced_by(&l, SBX_CG_MEMORY | SBX_CG_CPU, "cpuCores");
	CHECK(by && strstr(by, "cpu.max"), "the cpu controller enforces cpuCores");
}

/* The config's sandbox section is checked once, and a bad member named. */
static void config_tests(void)
{
	static const struct {
		const char *section, *want; /* want NULL: accepted */
	} cases[] = {
	    {"{}", NULL},
	    {"{\"limits\": {\"wallMs\": 5000}, \"warmBoxes\": false}", NULL},
	    {"{\"limits\": {\"wallMs\": -5}}", "sandbox.limits.wallMs must be a positive integer"},
	    {"{\"limits\": {\"wallMs\": \"soon\"}}",
	     "sandbox.limits.wallMs must be a positive integer"},
	    {"{\"limits\": {\"wallMs\": 1}}", "sandbox.limits.wallMs"},
	    {"{\"maxLimits\": {\"bogus\": 1}}", "sandbox.maxLimits.bogus"},
	    {"{\"warmBoxes\": \"yes\"}", "sandbox.warmBoxes"},
	    {"{\"zygote\": true, \"zygotePreload\": [\"numpy\", \"matplotlib.pyplot\"]}", NULL},
	    {"{\"zygote\": 1}", "sandbox.zygote"},
	    {"{\"zygotePreload\": \"numpy\"}", "sandbox.zygotePreload"},
	    {"{\"zygotePreload\": [\"os; import x\"]}", "sandbox.zygotePreload"},
	    {"{\"zygotePreload\": [\".relative\"]}", "sandbox.zygotePreload"},
	    {"{\"zygotePreload\": [5]}", "sandbox.zygotePreload"},
	    {"{\"artifactDir\": \"relative/dir\"}", "sandbox.artifactDir"},
	    {"{\"artifactMaxFiles\": -1}", "sandbox.artifactMaxFiles"},
	    {"{\"cgroup\": 5}", "sandbox.cgroup"},
	    {"{\"env\": 5}", "sandbox.env"},
	    {"{\"languages\": 3}", "sandbox.languages"},
	    {"{\"env\": {\"A\": 5}}", "env"},
	    {"{\"limit\": {}}", "sandbox.limit "},
	    {"[]", "sandbox must be an object"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_object *sec = json_tokener_parse(cases[i].section);
		struct sbx_config c;
		char err[512] = "";
		int r = sbx_config_resolve(sec, &c, err, sizeof(err));
		if (!cases[i].want) {
			CHECK(r == 0, "config %s is accepted (%s)", cases[i].section, err);
			if (r == 0)
				sbx_config_release(&c);
		} else {
			CHECK(r == -22 && strstr(err, cases[i].want),
			      "config %s is refused naming %s: %s", cases[i].section, cases[i].want,
			      err);
		}
		json_object_put(sec);
	}
}

/* Artifact names reach the client as valid UTF-8. */
static void name_tests(void)
{
	char *n = sbx_utf8_name("plot\xff\xfe.png");
	CHECK(n && strcmp(n, "plot\xef\xbf\xbd\xef\xbf\xbd.png") == 0,
	      "invalid bytes of a name become U+FFFD");
	free(n);
	n = sbx_utf8_name("caf\xc3\xa9/\xe2\x82\xac.txt");
	CHECK(n && strcmp(n, "caf\xc3\xa9/\xe2\x82\xac.txt") == 0, "a valid name is kept");
	free(n);
	n = sbx_utf8_name("cut\xe2\x82");
	CHECK(n && utf8_valid(n, strlen(n)), "a name ending mid-character is made valid");
	free(n);
}

static int add_name(void *data, const char *path)
{
	struct buf *b = data;
	const char *slash = strrchr(path, '/');
	return buf_printf(b, "%s ", slash ? slash + 1 : path);
}

/* The matches of pattern, as "name name ". */
static void glob_names(const char *pattern, char *out, size_t n)
{
	struct buf b;
	buf_init(&b, 4096);
	int r = sbx_plan_glob_each(pattern, add_name, &b);
	snprintf(out, n, "%s%s", r < 0 ? "error " : "", b.data ? b.data : "");
	buf_release(&b);
}

static void touch(const char *dir, const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (f)
		fclose(f);
}

/* A kept glob follows its directory: an entry added, renamed or removed
 * shows at the next call; another pattern is not answered from the
 * kept one; a wildcard in a middle component is never kept. The pauses
 * only keep two changes out of one tick of a kernel's coarse file clock
 * (older kernels): nothing here is timed. */
static void glob_tests(void)
{
	char dir[] = "/tmp/kiln-glob-XXXXXX", pat[64], got[256], sub[128];
	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp");
		return;
	}
	snprintf(pat, sizeof(pat), "%s/py*", dir);
	glob_names(pat, got, sizeof(got));
	CHECK(strcmp(got, "") == 0, "no match: got '%s'", got);
	touch(dir, "py3");
	touch(dir, "other");
	glob_names(pat, got, sizeof(got));
	CHECK(strcmp(got, "py3 ") == 0, "one match: got '%s'", got);
	glob_names(pat, got, sizeof(got));
	CHECK(strcmp(got, "py3 ") == 0, "the same, kept: got '%s'", got);
	usleep(20000);
	touch(dir, "py3.11");
	glob_names(pat, got, sizeof(got));
	CHECK(strcmp(got, "py3 py3.11 ") == 0, "an entry added shows: got '%s'", got);
	usleep(20000);
	char a[256], b[256];
	snprintf(a, sizeof(a), "%s/py3", dir);
	snprintf(b, sizeof(b), "%s/px3", dir);
	rename(a, b);
	glob_names(pat, got, sizeof(got));
	CHECK(strcmp(got, "py3.11 ") == 0, "an entry renamed shows: got '%s'", got);
	snprintf(sub, sizeof(sub), "%s/o*", dir);
	glob_names(sub, got, sizeof(got));
	CHECK(strcmp(got, "other ") == 0, "another pattern: got '%s'", got);
	usleep(20000);
	snprintf(a, sizeof(a), "%s/py3.11", dir);
	unlink(a);
	glob_names(pat, got, sizeof(got));
	CHECK(strcmp(got, "") == 0, "an entry removed shows: got '%s'", got);
	snprintf(sub, sizeof(sub), "%s/*/x", dir);
	glob_names(sub, got, sizeof(got));
	CHECK(strcmp(got, "") == 0, "a wildcard in a middle component: got '%s'", got);
	unlink(b);
	snprintf(a, sizeof(a), "%s/other", dir);
	unlink(a);
	rmdir(dir);
}

int main(void)
{
	text_tests();
	limit_tests();
	config_tests();
	name_tests();
	glob_tests();
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
