/* test_validate.c: the validator (server/validate): diagnostic ranges for
 * each language in each position encoding (non-ASCII identifiers, strings
 * and emoji before the finding), syntax messages from CPython and from
 * tree-sitter, verdicts per profile, config overrides, and the contract's
 * errors. The labelled corpus is tests/validate/ (suite 40-validate). */
#include "validate/validate.h"

#include <sys/stat.h>
#include <unistd.h>

#include "core/json.h"
#include "core/loop.h"
#include "core/util.h"
#include "unit.h"
#include "validate/internal.h"
#include "validate/query_analysis.h"

static struct validator *make(const char *config_json)
{
	json_object *config = config_json ? json_tokener_parse(config_json) : NULL;
	struct validator *v = NULL;
	ck_assert_int_eq(val_new(config, &v), 0);
	json_object_put(config);
	return v;
}

static json_object *check(struct validator *v, const char *lang, const char *code,
                          const char *profile, enum pos_encoding enc, enum val_verdict *verdict)
{
	json_object *diags = NULL;
	char detail[256] = "";
	enum val_verdict vd;
	int r = val_check(v, lang, code, strlen(code), profile, enc, &diags, &vd, detail,
	                  sizeof(detail));
	ck_assert_msg(r == 0, "val_check: %d %s", r, detail);
	if (verdict)
		*verdict = vd;
	return diags;
}

/* The first diagnostic with this code, or NULL. */
static json_object *find(json_object *diags, const char *code)
{
	for (size_t i = 0; i < json_object_array_length(diags); i++) {
		json_object *d = json_object_array_get_idx(diags, i);
		const char *c = NULL;
		if (json_get_string(d, "code", &c) == 0 && strcmp(c, code) == 0)
			return d;
	}
	return NULL;
}

static void assert_range(json_object *d, int sl, int sc, int el, int ec)
{
	ck_assert_ptr_nonnull(d);
	int64_t v;
	json_object *r = json_get(d, "range");
	ck_assert_int_eq(json_get_int64(json_get(r, "start"), "line", &v), 0);
	ck_assert_int_eq(v, sl);
	ck_assert_int_eq(json_get_int64(json_get(r, "start"), "character", &v), 0);
	ck_assert_int_eq(v, sc);
	ck_assert_int_eq(json_get_int64(json_get(r, "end"), "line", &v), 0);
	ck_assert_int_eq(v, el);
	ck_assert_int_eq(json_get_int64(json_get(r, "end"), "character", &v), 0);
	ck_assert_int_eq(v, ec);
}

struct range_case {
	const char *lang, *code, *rule;
	int line;
	int start[3], end[3]; /* utf-16, utf-8, utf-32 */
};

/* Before each finding: 'é' (2 bytes, 1 unit), '😀' (4 bytes, 2 UTF-16
 * units), '日本' (3 bytes each). */
static const struct range_case range_cases[] = {
    {"python",
     "donn\xc3\xa9"
     "es = \"\xf0\x9f\x98\x80\"; eval(donn\xc3\xa9"
     "es)\n",
     "PY-DYNAMIC-CODE",
     0,
     {16, 19, 15},
     {20, 23, 19}},
    {"python",
     "# \xe6\x97\xa5\xe6\x9c\xac\nimport os\nx = '\xf0\x9f\x98\x80'; os.system(x)\n",
     "PY-OS-PROCESS",
     2,
     {10, 12, 9},
     {19, 21, 18}},
    {"bash",
     "echo \"\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80\"; curl https://x\n",
     "SH-NETWORK",
     0,
     {14, 20, 13},
     {18, 24, 17}},
    {"bash",
     "caf\xc3\xa9=1\nrm -rf ~/\xf0\x9f\x98\x80\n",
     "SH-WRITE-OUTSIDE",
     1,
     {7, 7, 7},
     {11, 13, 10}},
    {"javascript",
     "const s\xc3\xa9 = '\xf0\x9f\x98\x80'; eval(s\xc3\xa9);\n",
     "JS-EVAL",
     0,
     {17, 20, 16},
     {21, 24, 20}},
    {"javascript",
     "// \xe6\x97\xa5\nconst fs = require('fs'); fs.writeFileSync('/\xf0\x9f\x98\x80', 1);\n",
     "JS-FS-WRITE-OUTSIDE",
     1,
     {43, 43, 43},
     {48, 50, 47}},
    /* LSP 3.17: a lone \r ends a line, as \n and \r\n do. */
    {"python", "x = 1\r# \xe6\x97\xa5\reval(x)\r", "PY-DYNAMIC-CODE", 2, {0, 0, 0}, {4, 4, 4}},
    {"bash", "echo \xc3\xa9\r\ncurl https://x\r", "SH-NETWORK", 1, {0, 0, 0}, {4, 4, 4}},
    {"javascript",
     "// \xf0\x9f\x98\x80\r\nlet a = 1;\reval(a);\r",
     "JS-EVAL",
     2,
     {0, 0, 0},
     {4, 4, 4}},
    /* Trojan Source (CVE-2021-42574) and invisible names: the exact
     * character, after an emoji. */
    {"python", "s = '\xf0\x9f\x98\x80\xe2\x80\xae'  # x\n", "KILN-BIDI", 0, {7, 9, 6}, {8, 12, 7}},
    {"javascript",
     "const \xf0\x9f\x98\x80 = 1; const a\xe2\x80\x8d"
     "b = 1;\n",
     "KILN-INVISIBLE",
     0,
     {21, 23, 20},
     {22, 26, 21}},
    {"bash",
     "echo \"\xc3\xa9\x1b"
     "[2J\"\n",
     "KILN-CONTROL-CHAR",
     0,
     {7, 8, 7},
     {8, 9, 8}},
};

START_TEST(ranges_per_encoding)
{
	static const enum pos_encoding encs[] = {POS_UTF16, POS_UTF8, POS_UTF32};
	const struct range_case *c = &range_cases[_i / 3];
	int e = _i % 3;
	struct validator *v = make("{\"python\": false}");
	json_object *diags = check(v, c->lang, c->code, NULL, encs[e], NULL);
	json_object *d = find(diags, c->rule);
	ck_assert_msg(d, "%s: no %s in %s", c->lang, c->rule, json_compact(diags));
	assert_range(d, c->line, c->start[e], c->line, c->end[e]);
	json_object_put(diags);
	val_free(v);
}
END_TEST

/* CPython's error position, converted from its code points to each
 * encoding: the ':' missing after "if données == '😀'". */
START_TEST(cpython_range_per_encoding)
{
	/* make deps installs python3: its absence is a failure, not a pass. */
	ck_assert_msg(access("/usr/bin/python3", X_OK) == 0, "/usr/bin/python3 is missing");
	static const enum pos_encoding encs[] = {POS_UTF16, POS_UTF8, POS_UTF32};
	static const int col[] = {18, 21, 17};
	struct validator *v = make(NULL);
	const char *code = "donn\xc3\xa9"
	                   "es = 1\nif donn\xc3\xa9"
	                   "es == '\xf0\x9f\x98\x80'\n    pass\n";
	for (int e = 0; e < 3; e++) {
		enum val_verdict vd;
		json_object *diags = check(v, "python", code, NULL, encs[e], &vd);
		json_object *d = find(diags, "syntax");
		ck_assert_msg(d, "no syntax error in %s", json_compact(diags));
		const char *msg = NULL;
		json_get_string(d, "message", &msg);
		ck_assert_str_eq(msg, "expected ':'");
		/* At the end of the line: nothing to underline, so an empty range. */
		assert_range(d, 1, col[e], 1, col[e]);
		ck_assert_int_eq(vd, VAL_DENY);
		ck_assert_ptr_null(find(diags, "kiln-no-cpython"));
		json_object_put(diags);
	}
	val_free(v);
}
END_TEST

static const char *first_message(json_object *diags, const char *code);

/* A check asks CPython before its parse and reads the answer after its
 * rules; one that stops in between (here: cancelled, seen before the
 * rules) must not leave that answer for the next check, which would then
 * read "ok" for code that is not Python. */
START_TEST(stopped_check_leaves_no_answer)
{
	ck_assert_msg(access("/usr/bin/python3", X_OK) == 0, "/usr/bin/python3 is missing");
	struct validator *v = make(NULL);
	enum val_verdict vd;
	json_object *diags = check(v, "python", "x = 1\n", NULL, POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_ALLOW); /* the worker runs now */
	json_object_put(diags);
	volatile size_t cancel = 1;
	struct val_report rep;
	char detail[256];
	ck_assert_int_eq(val_check_report(v, "python", "y = 2\n", 6, NULL, &cancel, &rep, detail,
	                                  sizeof(detail)),
	                 -ECANCELED);
	diags = check(v, "python", "if y\n    pass\n", NULL, POS_UTF16, &vd);
	ck_assert_msg(find(diags, "syntax") && !find(diags, "kiln-unchecked"), "%s",
	              json_compact(diags));
	ck_assert_str_eq(first_message(diags, "syntax"), "expected ':'");
	json_object_put(diags);
	val_free(v);
}
END_TEST

static const char *first_message(json_object *diags, const char *code)
{
	json_object *d = find(diags, code);
	const char *msg = NULL;
	ck_assert_ptr_nonnull(d);
	json_get_string(d, "message", &msg);
	return msg;
}

START_TEST(tree_sitter_syntax_messages)
{
	struct validator *v = make("{\"python\": false}");
	enum val_verdict vd;
	json_object *diags =
	    check(v, "python", "x = 1\nif x == 1\n    pass\n", NULL, POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_DENY);
	ck_assert_ptr_nonnull(
	    strstr(first_message(diags, "syntax"), "expected ':' after the if condition"));
	assert_range(find(diags, "syntax"), 1, 9, 1, 9);
	ck_assert_ptr_nonnull(find(diags, "kiln-no-cpython"));
	json_object_put(diags);

	diags = check(v, "bash", "if [ -f x ]; then\n  echo hi\n", NULL, POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_DENY);
	ck_assert_str_eq(first_message(diags, "syntax"), "expected 'fi' to close the if");
	json_object_put(diags);

	diags = check(v, "javascript", "const a = f(1, 2;\n", NULL, POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_DENY);
	ck_assert_str_eq(first_message(diags, "syntax"), "expected ')' to close the parenthesis");
	assert_range(find(diags, "syntax"), 0, 16, 0, 16);
	json_object_put(diags);
	val_free(v);
}
END_TEST

START_TEST(python_utf8_and_missing_cpython)
{
	struct validator *v = make("{\"python\": \"/nonexistent/python3\"}");
	enum val_verdict vd;
	json_object *diags = check(v, "py", "x = '\xc3\xa9'\ny = 1 \xff\n", NULL, POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_DENY);
	assert_range(find(diags, "syntax"), 1, 6, 1, 7);
	json_object_put(diags);
	/* ASCII is skipped eight bytes at a time: a bad byte is found at
	 * every place in those steps. */
	for (int at = 0; at < 24; at++) {
		char code[34];
		memset(code, 'a', 32);
		code[32] = '\n';
		code[33] = '\0';
		code[at] = '\xff';
		diags = check(v, "py", code, NULL, POS_UTF16, &vd);
		ck_assert_int_eq(vd, VAL_DENY);
		assert_range(find(diags, "syntax"), 0, at, 0, at + 1);
		json_object_put(diags);
	}
	diags = check(v, "py", "print(1)\n", NULL, POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_ALLOW);
	ck_assert_ptr_nonnull(find(diags, "kiln-no-cpython"));
	ck_assert_int_eq(val_python_available(v), 0);
	json_object_put(diags);
	val_free(v);
}
END_TEST

/* Stand-ins for CPython. The worker runs in kiln's sandbox, where the
 * host's /tmp is not visible: a stand-in lives in PREFIX/bin under
 * /var/tmp, and an interpreter outside /usr brings its prefix into the
 * box. Readable by all: as root, the box's uid is nobody's. */
struct standin {
	char dir[64];
	char path[128];
};

static void standin_make(struct standin *st, const char *script)
{
	snprintf(st->dir, sizeof(st->dir), "/var/tmp/kiln-test-validate-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(st->dir));
	ck_assert_int_eq(chmod(st->dir, 0755), 0);
	snprintf(st->path, sizeof(st->path), "%s/bin", st->dir);
	ck_assert_int_eq(mkdir(st->path, 0755), 0);
	snprintf(st->path, sizeof(st->path), "%s/bin/python", st->dir);
	FILE *f = fopen(st->path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(script, f);
	fclose(f);
	ck_assert_int_eq(chmod(st->path, 0755), 0);
}

static void standin_remove(struct standin *st)
{
	unlink(st->path);
	char bin[128];
	snprintf(bin, sizeof(bin), "%s/bin", st->dir);
	rmdir(bin);
	rmdir(st->dir);
}

static struct validator *make_with(const struct standin *st, int timeout_ms)
{
	char config[256];
	snprintf(config, sizeof(config), "{\"python\": \"%s\", \"pythonTimeoutMs\": %d}", st->path,
	         timeout_ms);
	return make(config);
}

/* A CPython that never answers costs one bounded wait per check and the
 * check still answers (tree-sitter alone); one that dies at once is given
 * up on. Neither may hang or crash the validator. */
START_TEST(python_worker_failures)
{
	static const char *const scripts[] = {"#!/bin/sh\nexec sleep 30\n", "#!/bin/sh\nexit 0\n"};
	static const char *const why[] = {"did not answer within 100 ms", "kept failing"};
	for (size_t i = 0; i < 2; i++) {
		struct standin st;
		standin_make(&st, scripts[i]);
		struct validator *v = make_with(&st, 100);
		for (int round = 0; round < 2; round++) {
			enum val_verdict vd;
			json_object *diags =
			    check(v, "python", "import socket\nif x\n", NULL, POS_UTF16, &vd);
			ck_assert_int_eq(vd, VAL_DENY);
			ck_assert_ptr_nonnull(find(diags, "kiln-no-cpython"));
			ck_assert_ptr_nonnull(
			    strstr(first_message(diags, "kiln-no-cpython"), why[i]));
			ck_assert_ptr_nonnull(find(diags, "PY-IMPORT-NETWORK"));
			ck_assert_ptr_nonnull(
			    strstr(first_message(diags, "syntax"), "tree-sitter alone"));
			json_object_put(diags);
		}
		val_free(v);
		standin_remove(&st);
	}
}
END_TEST

/* When CPython accepts what tree-sitter cannot read, the rules could not
 * see that region: it is reported (kiln-unchecked), never passed quietly.
 * A stand-in "CPython" that accepts everything makes the case. */
START_TEST(unchecked_regions)
{
	struct standin st;
	standin_make(
	    &st,
	    "#!/bin/sh\nwhile read -r lang a0 n; do head -c \"$n\" >/dev/null; echo ok; done\n");
	struct validator *v = make_with(&st, 2000);
	enum val_verdict vd;
	json_object *diags =
	    check(v, "python", "x = 1\nif x == 1\n    pass\n", NULL, POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_DENY);
	ck_assert_ptr_null(find(diags, "syntax"));
	ck_assert_ptr_null(find(diags, "kiln-no-cpython"));
	ck_assert_ptr_nonnull(
	    strstr(first_message(diags, "kiln-unchecked"), "rules could not check"));
	json_object_put(diags);
	diags = check(v, "python", "x = 1\nif x == 1\n    pass\n", "relaxed", POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_WARN);
	json_object_put(diags);
	diags = check(v, "python", "x = 1\nif x == 1\n    pass\n", "off", POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_ALLOW);
	json_object_put(diags);
	val_free(v);
	standin_remove(&st);
}
END_TEST

/* The worker runs in kiln's sandbox: a stand-in that answers every
 * request with facts about where it runs, as a syntax error's message.
 * Its own pid is 2 (a new pid namespace, under the box's pid 1), its uid
 * 1000, the hostname kiln's, only the loopback interface, a seccomp
 * filter, no_new_privs, and no host /home or /root. It counts requests:
 * the same process answers every check. */
START_TEST(worker_is_sandboxed_and_reused)
{
	struct standin st;
	standin_make(&st, "#!/bin/sh\n"
	                  "i=0\n"
	                  "while read -r lang a0 n; do\n"
	                  "  head -c \"$n\" >/dev/null; i=$((i + 1))\n"
	                  "  host=$(cat /proc/sys/kernel/hostname)\n"
	                  "  ifs=$(tail -n +3 /proc/net/dev | wc -l)\n"
	                  "  sc=$(grep -c -E '^(Seccomp:.2|NoNewPrivs:.1)$' /proc/self/status)\n"
	                  "  h=no; [ -e /home ] || [ -e /root ] && h=yes\n"
	                  "  echo \"err 0 0 0 0 0 pid=$$ uid=$(id -u) host=$host ifs=$ifs sc=$sc "
	                  "home=$h n=$i\"\n"
	                  "done\n");
	struct validator *v = make_with(&st, 5000);
	for (int n = 1; n <= 3; n++) {
		enum val_verdict vd;
		json_object *diags = check(v, "python", "x = 1\n", NULL, POS_UTF16, &vd);
		char want[128];
		snprintf(want, sizeof(want), "pid=2 uid=1000 host=kiln ifs=1 sc=2 home=no n=%d", n);
		const char *msg = first_message(diags, "syntax");
		ck_assert_msg(strcmp(msg, want) == 0, "worker says '%s', wanted '%s'", msg, want);
		json_object_put(diags);
	}
	val_free(v);
	standin_remove(&st);
}
END_TEST

/* A worker that times out is killed; the next check starts a new one.
 * The stand-in hangs on its second request only. */
START_TEST(worker_restarts_after_timeout)
{
	struct standin st;
	standin_make(&st, "#!/bin/sh\n"
	                  "i=0\n"
	                  "while read -r lang a0 n; do\n"
	                  "  head -c \"$n\" >/dev/null; i=$((i + 1))\n"
	                  "  [ $i = 2 ] && exec sleep 60\n"
	                  "  echo \"err 0 0 0 0 0 n=$i\"\n"
	                  "done\n");
	struct validator *v = make_with(&st, 300);
	static const char *const want[] = {"n=1", NULL, "n=1", NULL};
	for (int k = 0; k < 4; k++) {
		enum val_verdict vd;
		json_object *diags = check(v, "python", "x = 1\n", NULL, POS_UTF16, &vd);
		if (want[k]) {
			ck_assert_str_eq(first_message(diags, "syntax"), want[k]);
			ck_assert_ptr_null(find(diags, "kiln-no-cpython"));
		} else {
			ck_assert_ptr_null(find(diags, "syntax"));
			ck_assert_ptr_nonnull(strstr(first_message(diags, "kiln-no-cpython"),
			                             "did not answer within 300 ms"));
		}
		json_object_put(diags);
	}
	val_free(v);
	standin_remove(&st);
}
END_TEST

/* Code bigger than the socket's buffer reaches CPython whole: kiln sends
 * the request in pieces (the header and the code in one sendmsg, then
 * what did not fit) and the worker reads it in many, and the error on its
 * last line is where CPython puts it. The same worker then answers small
 * checks: nothing of the big one is left in its buffer. */
START_TEST(big_code_reaches_the_worker_whole)
{
	ck_assert_msg(access("/usr/bin/python3", X_OK) == 0, "/usr/bin/python3 is missing");
	enum { LINES = 100000 };
	size_t cap = (size_t)LINES * 24 + 16, len = 0;
	char *code = malloc(cap);
	ck_assert_ptr_nonnull(code);
	for (int i = 0; i < LINES; i++)
		len += (size_t)snprintf(code + len, cap - len, "x_%d = %d\n", i, i);
	len += (size_t)snprintf(code + len, cap - len, "if x\n");
	ck_assert_uint_gt(len, 1u << 20);
	/* A long wait for CPython (under the test's own 30 s): this checks
	 * that the code arrives whole, not how fast a busy machine compiles
	 * 2 MB of it (with the default, CPython answered late under a load
	 * of 5-9 and the check fell back to tree-sitter alone). */
	struct validator *v = make("{\"pythonTimeoutMs\": 20000}");
	enum val_verdict vd;
	json_object *diags = check(v, "python", code, NULL, POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_DENY);
	ck_assert_ptr_null(find(diags, "kiln-no-cpython"));
	ck_assert_str_eq(first_message(diags, "syntax"), "expected ':'");
	assert_range(find(diags, "syntax"), LINES, 4, LINES, 4);
	json_object_put(diags);
	free(code);
	diags = check(v, "python", "y = (\n", NULL, POS_UTF16, &vd);
	ck_assert_str_eq(first_message(diags, "syntax"), "'(' was never closed");
	assert_range(find(diags, "syntax"), 0, 4, 0, 5);
	json_object_put(diags);
	diags = check(v, "python", "y = 1\n", NULL, POS_UTF16, &vd);
	ck_assert_msg(vd == VAL_ALLOW, "%s", json_compact(diags));
	json_object_put(diags);
	val_free(v);
}
END_TEST

/* The real parser is the authority on syntax for every language, and its
 * error lands where it points: bash names a line and a token, node a line
 * and a caret; an unclosed construct is placed where tree-sitter saw it
 * open. Each of these was allowed, or reported at line 1 or column 0, when
 * tree-sitter alone judged bash and JavaScript. */
struct parser_case {
	const char *lang, *code, *msg;
	int sl, sc, el, ec;
};
static const struct parser_case parser_cases[] = {
    {"bash", "echo a\nfi\n", "syntax error near unexpected token `fi'", 1, 0, 1, 2},
    {"bash", "echo a\necho b\ndone\n", "syntax error near unexpected token `done'", 2, 0, 2, 4},
    {"bash", "echo 1\necho 2\necho 3\nif then\n", "syntax error near unexpected token `then'", 3, 3,
     3, 7},
    {"bash", "function f( {\n", "syntax error: unexpected end of file", 0, 12, 0, 13},
    {"bash", "x=1\r\necho \xf0\x9f\x98\x80 )\r\n", "syntax error near unexpected token `)'", 1, 8,
     1, 9},
    {"javascript", "function f( {\n", "Unexpected end of input", 0, 12, 0, 13},
    {"javascript", "let s = '\xf0\x9f\x98\x80';\nlet y = );\n", "Unexpected token ')'", 1, 8, 1, 9},
    {"javascript", "let s = '\xf0\x9f\x98\x80'; let y = );\n", "Unexpected token ')'", 0, 22, 0,
     23},
};

START_TEST(real_parsers_are_the_authority)
{
	const struct parser_case *c = &parser_cases[_i];
	bool js = strcmp(c->lang, "javascript") == 0;
	/* make deps installs python3 and node: without them this test fails. */
	ck_assert_msg(access("/usr/bin/python3", X_OK) == 0, "/usr/bin/python3 is missing");
	ck_assert_msg(!js || access("/usr/bin/node", X_OK) == 0, "/usr/bin/node is missing");
	struct validator *v = make(NULL);
	enum val_verdict vd;
	json_object *diags = check(v, c->lang, c->code, NULL, POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_DENY);
	json_object *d = find(diags, "syntax");
	ck_assert_msg(d, "%s: no syntax error in %s", c->code, json_compact(diags));
	ck_assert_str_eq(first_message(diags, "syntax"), c->msg);
	assert_range(d, c->sl, c->sc, c->el, c->ec);
	json_object_put(diags);
	val_free(v);
}
END_TEST

/* What the real parsers accept passes, ES modules included (node checks
 * them as a module, as it does for a file). */
START_TEST(real_parsers_accept_valid_code)
{
	ck_assert_msg(access("/usr/bin/python3", X_OK) == 0, "/usr/bin/python3 is missing");
	static const char *const cases[][2] = {
	    {"bash", "for f in *.txt; do\n  wc -l \"$f\"\ndone\n"},
	    {"bash", "cat <<EOF\nfi done esac\nEOF\n"},
	    {"javascript",
	     "import fs from 'node:fs';\nconsole.log(await fs.promises.stat('.'));\n"},
	    {"javascript", "const a = [1, 2].map((x) => x * 2);\nconsole.log(a);\n"},
	};
	struct validator *v = make(NULL);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (strcmp(cases[i][0], "javascript") == 0 && access("/usr/bin/node", X_OK) != 0)
			continue;
		enum val_verdict vd;
		json_object *diags = check(v, cases[i][0], cases[i][1], NULL, POS_UTF16, &vd);
		ck_assert_msg(vd == VAL_ALLOW, "%s: %s", cases[i][1], json_compact(diags));
		json_object_put(diags);
	}
	val_free(v);
}
END_TEST

/* Text that does not show what runs is denied in every profile but off;
 * the same characters are fine where they are text (a joiner inside an
 * emoji string, a directional mark in a comment), and a byte order mark
 * is fine as the first character. Form feed is whitespace. */
START_TEST(text_that_hides_code)
{
	struct validator *v = make("{\"python\": false}");
	static const char *const profiles[] = {"strict", "standard", "relaxed"};
	enum val_verdict vd;
	for (size_t i = 0; i < 3; i++) {
		json_object *diags =
		    check(v, "bash", "echo ok # \xe2\x81\xa6x\n", profiles[i], POS_UTF16, &vd);
		ck_assert_int_eq(vd, VAL_DENY);
		ck_assert_ptr_nonnull(
		    strstr(first_message(diags, "KILN-BIDI"), "U+2066 LEFT-TO-RIGHT ISOLATE"));
		json_object_put(diags);
	}
	json_object *diags = check(v, "bash", "echo ok # \xe2\x81\xa6x\n", "off", POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_ALLOW);
	json_object_put(diags);
	/* bash does not end a line at a lone \r: "x=1\rcurl" is one word, so
	 * the command is what the editor shows on the next line. The range
	 * is the \r itself: from the end of line 0 to the start of line 1. */
	diags = check(v, "bash", "echo \xc3\xa9\rx=1\rcurl https://x\n", NULL, POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_DENY);
	assert_range(find(diags, "KILN-LONE-CR"), 0, 6, 1, 0);
	json_object_put(diags);
	diags = check(v, "bash", "echo a\r\necho b\r\n", NULL, POS_UTF16, &vd);
	ck_assert_ptr_null(find(diags, "KILN-LONE-CR"));
	json_object_put(diags);
	static const char *const fine[][2] = {
	    {"python", "s = '\xf0\x9f\x91\xa8\xe2\x80\x8d\xf0\x9f\x91\xa9'\nprint(s)\n"},
	    {"python", "\xef\xbb\xbf"
	               "x = 1\n\f\ny = 2  # \xe2\x80\x8f\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d\n"},
	    {"javascript", "const s = `a\xe2\x80\x8b"
	                   "b`; // \xe2\x80\x8e\n"},
	    {"bash", "echo '\xe2\x80\x8d'\n"},
	};
	for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
		diags = check(v, fine[i][0], fine[i][1], NULL, POS_UTF16, &vd);
		ck_assert_msg(!find(diags, "KILN-INVISIBLE") && !find(diags, "KILN-CONTROL-CHAR") &&
		                  !find(diags, "KILN-BIDI"),
		              "%s: %s", fine[i][1], json_compact(diags));
		json_object_put(diags);
	}
	/* Every control character but tab, line breaks and form feed. */
	for (int c = 1; c < 0x20; c++) {
		if (c == '\t' || c == '\n' || c == '\r' || c == '\f')
			continue;
		char code[32];
		snprintf(code, sizeof(code), "x = '%c'\n", c);
		diags = check(v, "python", code, NULL, POS_UTF16, &vd);
		ck_assert_msg(find(diags, "KILN-CONTROL-CHAR"), "0x%02x: %s", c,
		              json_compact(diags));
		json_object_put(diags);
	}
	val_free(v);
}
END_TEST

/* Real code is not refused: __import__ of a constant name is an import
 * (judged by the import rules), a generator's endless loop yields. */
START_TEST(real_code_is_not_refused)
{
	struct validator *v = make("{\"python\": false}");
	static const struct {
		const char *lang, *code, *want, *not ;
	} cases[] = {
	    /* doctest runs its docstrings: a reach warning, not dynamic code. */
	    {"python", "__import__(\"doctest\").testmod()\n", "PY-REACH-CODE", "PY-DYNAMIC-CODE"},
	    {"python", "__import__('os').system('id')\n", "PY-OS-PROCESS", "PY-DYNAMIC-CODE"},
	    {"python", "s = __import__('socket')\n", "PY-IMPORT-NETWORK", "PY-DYNAMIC-CODE"},
	    {"python", "m = __import__(name)\n", "PY-DYNAMIC-CODE", NULL},
	    {"python", "import importlib\nm = importlib.import_module(n)\n", "PY-DYNAMIC-CODE",
	     NULL},
	    {"python", "def g():\n    while True:\n        yield 1\n", NULL, "PY-LOOP-UNBOUNDED"},
	    {"python", "while True:\n    def g():\n        yield 1\n", "PY-LOOP-UNBOUNDED", NULL},
	    {"javascript", "function* g() {\n  while (true) { yield 1; }\n}\n", NULL,
	     "JS-LOOP-UNBOUNDED"},
	    {"javascript", "while (true) { const g = function* () { yield 1; }; }\n",
	     "JS-LOOP-UNBOUNDED", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum val_verdict vd;
		json_object *diags = check(v, cases[i].lang, cases[i].code, NULL, POS_UTF16, &vd);
		if (cases[i].want)
			ck_assert_msg(find(diags, cases[i].want), "%s: no %s in %s", cases[i].code,
			              cases[i].want, json_compact(diags));
		else
			ck_assert_msg(vd == VAL_ALLOW, "%s: %s", cases[i].code,
			              json_compact(diags));
		if (cases[i].not )
			ck_assert_msg(!find(diags, cases[i].not ), "%s: %s in %s", cases[i].code,
			              cases[i].not, json_compact(diags));
		json_object_put(diags);
	}
	val_free(v);
}
END_TEST

/* The report is structs: byte ranges, sorted, judged; JSON only from
 * val_report_json, the same as val_check gives. */
START_TEST(report_is_structs)
{
	struct validator *v = make("{\"python\": false}");
	const char *code = "eval('1')\nimport os\nos.system('x')\nwhile True:\n    pass\n";
	struct val_report rep;
	char detail[256];
	ck_assert_int_eq(val_check_report(v, "python", code, strlen(code), NULL, NULL, &rep, detail,
	                                  sizeof(detail)),
	                 0);
	ck_assert_int_eq(rep.verdict, VAL_DENY);
	ck_assert_uint_ge(rep.ndiags, 3);
	for (size_t i = 1; i < rep.ndiags; i++)
		ck_assert_uint_le(rep.diags[i - 1].start, rep.diags[i].start);
	bool seen = false;
	for (size_t i = 0; i < rep.ndiags; i++)
		if (rep.diags[i].code && strcmp(rep.diags[i].code, "PY-OS-PROCESS") == 0) {
			ck_assert_uint_eq(rep.diags[i].start, 20);
			ck_assert_uint_eq(rep.diags[i].end, 29);
			ck_assert_int_eq(rep.diags[i].severity, VAL_SEV_ERROR);
			seen = true;
		}
	ck_assert(seen);
	json_object *a = val_report_json(&rep, code, strlen(code), POS_UTF16);
	json_object *b = check(v, "python", code, NULL, POS_UTF16, NULL);
	ck_assert_msg(json_object_equal(a, b), "%s", json_compact(a));
	json_object_put(a);
	json_object_put(b);
	val_report_release(&rep);
	val_free(v);
}
END_TEST

/* Debian's tree-sitter corrupts its heap on 65535 comments in a row: such
 * code is refused before it is parsed, never crashes the validator. */
START_TEST(comment_runs_are_bounded)
{
	struct validator *v = make("{\"python\": false}");
	static const char *const cases[][2] = {{"python", "#c\n"},
	                                       {"bash", "#c\n"},
	                                       {"javascript", "//c\n"},
	                                       {"javascript", "<!--x\n"}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t k = strlen(cases[i][1]), n = 65536;
		char *code = malloc(n * k + 1);
		for (size_t j = 0; j < n; j++)
			memcpy(code + j * k, cases[i][1], k);
		code[n * k] = '\0';
		enum val_verdict vd;
		json_object *diags = check(v, cases[i][0], code, NULL, POS_UTF16, &vd);
		ck_assert_int_eq(vd, VAL_DENY);
		ck_assert_ptr_nonnull(strstr(first_message(diags, "syntax"), "comments in a row"));
		json_object_put(diags);
		free(code);
	}
	val_free(v);
}
END_TEST

struct async_ctx {
	struct loop *loop;
	int calls, want;
	int r[4];
	enum val_verdict verdict[4];
	bool found[4];
};

static void async_done(void *data, int r, struct val_report *rep, const char *code, size_t len,
                       const char *detail)
{
	struct async_ctx *c = data;
	(void)len;
	(void)detail;
	int i = c->calls++;
	c->r[i] = r;
	if (r == 0) {
		c->verdict[i] = rep->verdict;
		for (size_t k = 0; k < rep->ndiags; k++)
			if (rep->diags[k].code &&
			    strcmp(rep->diags[k].code, "PY-OS-PROCESS") == 0 &&
			    strncmp(code + rep->diags[k].start, "os.system", 9) == 0)
				c->found[i] = true;
		val_report_release(rep);
	}
	if (c->calls == c->want)
		loop_stop(c->loop, 0);
}

static void async_timeout(struct loop *loop, void *data)
{
	(void)data;
	loop_stop(loop, 1);
}

/* Checks on the validator's threads: answered on the loop, never from
 * inside the call that queued them; a cancelled check is never answered;
 * a small check (the quick lane) queued after a big one (the big lane) is
 * answered first; freeing the validator answers what is still queued. */
START_TEST(checks_off_the_loop)
{
	struct loop *loop = loop_new();
	ck_assert_ptr_nonnull(loop);
	struct validator *v = make("{\"python\": false}");
	struct async_ctx c = {.loop = loop, .want = 2};
	char *code = malloc(200000);
	size_t n = 0;
	n += (size_t)sprintf(code, "import os\nos.system('x')\n");
	while (n < 190000)
		n += (size_t)sprintf(code + n, "x%zu = %zu\n", n, n);
	struct val_job *a, *b, *d;
	ck_assert_int_eq(val_check_async(v, loop, "python", code, n, NULL, async_done, &c, &a), 0);
	ck_assert_int_eq(val_check_async(v, loop, "python", code, n, NULL, async_done, &c, &b), 0);
	val_job_cancel(b);
	ck_assert_int_eq(val_check_async(v, loop, "cobol", "x", 1, NULL, async_done, &c, &d), 0);
	ck_assert_int_eq(c.calls, 0);
	struct loop_timer *t = loop_timer_start(loop, 60000, async_timeout, NULL);
	ck_assert_int_eq(loop_run(loop), 0);
	loop_timer_stop(loop, t);
	ck_assert_int_eq(c.calls, 2);
	/* The one-byte check ran in the quick lane while the 190 KB one ran
	 * in the big lane: its answer came first. */
	ck_assert_int_eq(c.r[0], -EINVAL);
	ck_assert_int_eq(c.r[1], 0);
	ck_assert_int_eq(c.verdict[1], VAL_DENY);
	ck_assert(c.found[1]);
	/* One more, then free at once: it is answered exactly once, with a
	 * result or -ECANCELED, and the thread is gone. */
	c.want = 3;
	ck_assert_int_eq(val_check_async(v, loop, "python", code, n, NULL, async_done, &c, &a), 0);
	val_free(v);
	ck_assert_int_eq(c.calls, 3);
	ck_assert(c.r[2] == 0 || c.r[2] == -ECANCELED);
	free(code);
	loop_free(loop);
}
END_TEST

START_TEST(verdicts_and_profiles)
{
	struct validator *v = make("{\"python\": false}");
	enum val_verdict vd;
	const char *hostile = "import socket\n";
	json_object *d;
	d = check(v, "python", "print(sum(range(10)))\n", NULL, POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_ALLOW);
	json_object_put(d);
	d = check(v, "python", hostile, NULL, POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_DENY);
	json_object_put(d);
	d = check(v, "python", hostile, "relaxed", POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_WARN);
	json_object_put(d);
	d = check(v, "python", hostile, "off", POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_ALLOW);
	ck_assert_ptr_null(find(d, "PY-IMPORT-NETWORK"));
	json_object_put(d);
	/* A syntax error denies in every profile. */
	d = check(v, "js", "let = = ;\n", "off", POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_DENY);
	json_object_put(d);
	/* Writes in the workspace: fine in standard, not in strict. */
	const char *write = "open('out.txt', 'w').write('x')\n";
	d = check(v, "python", write, "standard", POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_ALLOW);
	json_object_put(d);
	d = check(v, "python", write, "strict", POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_DENY);
	ck_assert_ptr_nonnull(find(d, "PY-FILE-WRITE"));
	json_object_put(d);
	/* An unbounded loop warns. */
	d = check(v, "python", "while True:\n    x = 1\n", NULL, POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_WARN);
	json_object_put(d);
	ck_assert_str_eq(val_verdict_name(VAL_ALLOW), "allow");
	ck_assert_str_eq(val_verdict_name(VAL_WARN), "warn");
	ck_assert_str_eq(val_verdict_name(VAL_DENY), "deny");
	val_free(v);
}
END_TEST

START_TEST(diagnostic_shape)
{
	struct validator *v = make("{\"python\": false}");
	json_object *diags =
	    check(v, "node", "require('child_process').exec('id')\n", NULL, POS_UTF16, NULL);
	json_object *d = find(diags, "JS-CHILD-PROCESS");
	ck_assert_ptr_nonnull(d);
	const char *s = NULL;
	int64_t sev = 0;
	ck_assert_int_eq(json_get_string(d, "source", &s), 0);
	ck_assert_str_eq(s, "kiln");
	ck_assert_int_eq(json_get_int64(d, "severity", &sev), 0);
	ck_assert_int_eq(sev, 1);
	ck_assert_int_eq(json_get_string(json_get(d, "codeDescription"), "href", &s), 0);
	ck_assert_ptr_nonnull(strstr(s, "JS-CHILD-PROCESS"));
	ck_assert_int_eq(json_get_string(json_get(d, "data"), "explanation", &s), 0);
	ck_assert_int_gt(strlen(s), 10);
	json_object_put(diags);
	val_free(v);
}
END_TEST

START_TEST(config_overrides)
{
	enum val_verdict vd;
	struct validator *v = make("{\"python\": false, \"profile\": \"relaxed\"}");
	json_object *d = check(v, "sh", "curl https://x\n", NULL, POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_WARN);
	json_object_put(d);
	val_free(v);

	v = make("{\"python\": false, \"profiles\": {\"standard\": {\"network\": \"warning\", "
	         "\"SH-NETWORK\": \"off\"}, \"mine\": {\"process\": \"error\"}}}");
	d = check(v, "sh", "curl https://x\n", NULL, POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_ALLOW);
	json_object_put(d);
	d = check(v, "python", "import socket\n", NULL, POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_WARN);
	json_object_put(d);
	d = check(v, "python", "import subprocess, socket\n", "mine", POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_DENY);
	ck_assert_ptr_null(find(d, "PY-IMPORT-NETWORK"));
	json_object_put(d);
	val_free(v);

	/* The workspace makes its absolute paths inside. */
	v = make("{\"python\": false, \"workspace\": \"/srv/ws\"}");
	d = check(v, "python", "open('/srv/ws/out.txt', 'w')\n", NULL, POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_ALLOW);
	json_object_put(d);
	d = check(v, "python", "open('/srv/ws/../x', 'w')\n", NULL, POS_UTF16, &vd);
	ck_assert_int_eq(vd, VAL_DENY);
	json_object_put(d);
	val_free(v);
}
END_TEST

/* kiln's own matcher (match.c) and tree-sitter's query cursor give the same
 * diagnostics where the query language is subtle: anchors past comments
 * and anonymous tokens, a '?' child present, absent or an ERROR, one match
 * per matching child, alternatives with captures, fields through ERROR
 * regions, and bash and JavaScript patterns left to tree-sitter. */
START_TEST(matchers_agree)
{
	static const struct {
		const char *lang, *code;
		int min_diags; /* diagnostics the rules must give (the check can fail) */
	} cases[] = {
	    {"python", "import os\ngetattr(os, 'sys' + 'tem')('id')\n", 1},
	    {"python", "import os\ngetattr(os, # the name\n  'sys' + 'tem')\n", 1},
	    {"python", "import os\ngetattr(os, a, b)\ngetattr(x, os)\n", 1},
	    {"python", "__import__('socket')\n__import__()\n__import__(name)\n", 2},
	    {"python", "__import__(# c\n 'os')\n__import__(,)\n", 1},
	    {"python", "import os, subprocess as sp, socket\nfrom os import system as s, fork\n",
	     3},
	    {"python", "f(os.system, eval, exec)\nx = os.system\nsys.modules['a'] = 1\n", 3},
	    {"python", "import os\nvars(os)\nvars(os, x)\nos.__dict__\n", 2},
	    {"python", "while True:\n    pass\nwhile 1:\n    break\nwhile 0:\n    x()\n", 1},
	    {"python", "open('/etc/x', 'w')\nopen('/etc/y', mode='a')\nopen(\n", 1},
	    {"python", "def f(:\n    eval(x)\nos.system(\n", 0},
	    {"bash", "curl https://x | sh\necho hi > /etc/passwd\nfor ((;;)); do :; done\n", 1},
	    {"javascript", "for (;;) {}\nrequire('child_process').exec('x')\n", 1},
	};
	struct validator *ours = make("{\"python\": false, \"bash\": false, \"node\": false}");
	struct validator *theirs = make("{\"python\": false, \"bash\": false, \"node\": false, "
	                                "\"matcher\": \"tree-sitter\"}");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_object *a =
		    check(ours, cases[i].lang, cases[i].code, "strict", POS_UTF16, NULL);
		json_object *b =
		    check(theirs, cases[i].lang, cases[i].code, "strict", POS_UTF16, NULL);
		const char *sa = json_object_to_json_string(a), *sb = json_object_to_json_string(b);
		ck_assert_msg(strcmp(sa, sb) == 0, "case %zu: kiln %s\ntree-sitter %s", i, sa, sb);
		ck_assert_msg((int)json_object_array_length(a) >= cases[i].min_diags + 1,
		              "case %zu: too few diagnostics: %s", i, sa);
		json_object_put(a);
		json_object_put(b);
	}
	val_free(ours);
	val_free(theirs);
}
END_TEST

/* The build's analysis of each embedded query (query_analysis.h), which
 * kiln's queries use instead of tree-sitter's own at every compile, is the
 * one tree-sitter makes of that text now, bit for bit, and every
 * language's embedded query has one. */
START_TEST(query_analysis_is_the_runtime_s)
{
	static const char *const langs[] = {"python", "bash", "javascript"};
	ck_assert_uint_eq(val_query_analyses_count, ARRAY_SIZE(langs));
	for (size_t i = 0; i < ARRAY_SIZE(langs); i++) {
		const struct val_lang *l = val_lang_find(langs[i]);
		ck_assert_ptr_nonnull(l);
		char name[64], *src = NULL;
		size_t len = 0;
		snprintf(name, sizeof(name), "%s.scm", langs[i]);
		ck_assert_int_eq(val_rule_file_read(NULL, name, &src, &len), 0);
		const struct val_query_analysis *qa = val_query_analysis_of(langs[i], src, len);
		ck_assert_msg(qa != NULL, "%s: no analysis of the embedded query", langs[i]);
		uint32_t off = 0;
		TSQueryError err = TSQueryErrorNone;
		TSQuery *q = ts_query_new(l->ts(), src, (uint32_t)len, &off, &err);
		ck_assert_ptr_nonnull(q);
		uint32_t n = ts_query_step_analysis(q, NULL, 0);
		ck_assert_uint_eq(n, qa->nbits);
		uint8_t *bits = malloc(n);
		ck_assert_ptr_nonnull(bits);
		ts_query_step_analysis(q, bits, n);
		for (uint32_t s = 0; s < n; s++)
			ck_assert_msg(bits[s] == qa->bits[s], "%s: step %u: built %u, runtime %u",
			              langs[i], s, qa->bits[s], bits[s]);
		/* Given back, the bits are what the query holds. */
		TSQuery *given = ts_query_new_analyzed(l->ts(), src, (uint32_t)len, qa->bits,
		                                       qa->nbits, &off, &err);
		ck_assert_ptr_nonnull(given);
		ts_query_step_analysis(given, bits, n);
		ck_assert_int_eq(memcmp(bits, qa->bits, n), 0);
		/* Another text is not the analysed one. */
		ck_assert_ptr_null(val_query_analysis_of(langs[i], src, len - 1));
		ts_query_delete(given);
		ts_query_delete(q);
		free(bits);
		free(src);
	}
}
END_TEST

/* An embedded file's regexes are compiled at their first use (rules.c), a
 * rules folder's at its load: the repository's own rule files as a folder
 * load (every regex of the embedded text compiles), and a folder with a
 * bad regex in a pattern no check would reach is refused when the config
 * is applied, not at a check. Run from the repository's root (10-unit). */
START_TEST(rules_folder_regexes_compiled_at_load)
{
	struct validator *v = make("{\"python\": false, \"rulesDir\": \"server/validate/rules\"}");
	val_free(v);
	char dir[] = "/tmp/kiln-test-rules.XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	static const char *const files[] = {"python.scm",    "python.json",    "bash.scm",
	                                    "bash.json",     "javascript.scm", "javascript.json",
	                                    "profiles.json", "text.json"};
	char path[512];
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		char *src = NULL;
		size_t len = 0;
		ck_assert_int_eq(val_rule_file_read(NULL, files[i], &src, &len), 0);
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		FILE *f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		ck_assert_uint_eq(fwrite(src, 1, len, f), len);
		if (strcmp(files[i], "bash.scm") == 0)
			fputs("\n((heredoc_end) @SH-REACH-ARITH (#match? @SH-REACH-ARITH \"(\"))\n",
			      f);
		ck_assert_int_eq(fclose(f), 0);
		free(src);
	}
	char cfg[256];
	snprintf(cfg, sizeof(cfg), "{\"python\": false, \"rulesDir\": \"%s\"}", dir);
	json_object *c = json_tokener_parse(cfg);
	struct validator *bad = NULL;
	ck_assert_int_eq(val_new(c, &bad), -EINVAL);
	json_object_put(c);
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}
END_TEST

START_TEST(bad_config_and_arguments)
{
	static const char *const bad[] = {
	    "{\"profile\": \"nope\"}",
	    "{\"profiles\": {\"standard\": {\"network\": \"loud\"}}}",
	    "{\"profiles\": []}",
	    "{\"pythonTimeoutMs\": 1}",
	    "{\"rulesDir\": \"/nonexistent\"}",
	    "{\"matcher\": \"fast\"}",
	    "[]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_object *c = json_tokener_parse(bad[i]);
		struct validator *v = (struct validator *)1;
		ck_assert_int_eq(val_new(c, &v), -EINVAL);
		ck_assert_ptr_eq(v, (struct validator *)1);
		json_object_put(c);
	}
	struct validator *v = make("{\"python\": false}");
	json_object *diags = (json_object *)1;
	enum val_verdict vd;
	char detail[128] = "";
	ck_assert_int_eq(
	    val_check(v, "cobol", "x", 1, NULL, POS_UTF16, &diags, &vd, detail, sizeof(detail)),
	    -EINVAL);
	ck_assert_ptr_nonnull(strstr(detail, "cobol"));
	ck_assert_int_eq(
	    val_check(v, "python", "x", 1, "lax", POS_UTF16, &diags, &vd, detail, sizeof(detail)),
	    -EINVAL);
	ck_assert_ptr_nonnull(strstr(detail, "lax"));
	ck_assert_ptr_eq(diags, (json_object *)1);
	/* Empty code is fine in every language. */
	static const char *const langs[] = {"python",     "py", "bash", "sh",
	                                    "javascript", "js", "node"};
	for (size_t i = 0; i < sizeof(langs) / sizeof(langs[0]); i++) {
		diags = check(v, langs[i], "", NULL, POS_UTF16, &vd);
		ck_assert_int_eq(vd, VAL_ALLOW);
		json_object_put(diags);
	}
	val_free(v);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("validate");
	TCase *tc = tcase_create("validate");
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, ranges_per_encoding, 0,
	                    (int)(sizeof(range_cases) / sizeof(range_cases[0])) * 3);
	tcase_add_test(tc, cpython_range_per_encoding);
	tcase_add_test(tc, tree_sitter_syntax_messages);
	tcase_add_test(tc, python_utf8_and_missing_cpython);
	tcase_add_test(tc, python_worker_failures);
	tcase_add_test(tc, unchecked_regions);
	tcase_add_test(tc, worker_is_sandboxed_and_reused);
	tcase_add_test(tc, worker_restarts_after_timeout);
	tcase_add_test(tc, big_code_reaches_the_worker_whole);
	tcase_add_loop_test(tc, real_parsers_are_the_authority, 0,
	                    (int)(sizeof(parser_cases) / sizeof(parser_cases[0])));
	tcase_add_test(tc, real_parsers_accept_valid_code);
	tcase_add_test(tc, text_that_hides_code);
	tcase_add_test(tc, real_code_is_not_refused);
	tcase_add_test(tc, report_is_structs);
	tcase_add_test(tc, comment_runs_are_bounded);
	tcase_add_test(tc, checks_off_the_loop);
	tcase_add_test(tc, verdicts_and_profiles);
	tcase_add_test(tc, diagnostic_shape);
	tcase_add_test(tc, config_overrides);
	tcase_add_test(tc, stopped_check_leaves_no_answer);
	tcase_add_test(tc, bad_config_and_arguments);
	tcase_add_test(tc, matchers_agree);
	tcase_add_test(tc, query_analysis_is_the_runtime_s);
	tcase_add_test(tc, rules_folder_regexes_compiled_at_load);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(make_suite)
