/* test_validate.c: the validator (server/validate): diagnostic ranges for
 * each language in each position encoding (non-ASCII identifiers, strings
 * and emoji before the finding), syntax messages from CPython and from
 * tree-sitter, verdicts per profile, config overrides, and the contract's
 * errors. The labelled corpus is tests/validate/ (suite 40-validate). */
#include "validate/validate.h"

#include <sys/stat.h>
#include <unistd.h>

#include "core/json.h"
#include "unit.h"

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
	if (access("/usr/bin/python3", X_OK) != 0)
		return; /* the tree-sitter fallback is tested below */
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
	standin_make(&st,
	             "#!/bin/sh\nwhile read -r n; do head -c \"$n\" >/dev/null; echo ok; done\n");
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
	                  "while read -r n; do\n"
	                  "  head -c \"$n\" >/dev/null; i=$((i + 1))\n"
	                  "  host=$(cat /proc/sys/kernel/hostname)\n"
	                  "  ifs=$(tail -n +3 /proc/net/dev | wc -l)\n"
	                  "  sc=$(grep -c -E '^(Seccomp:.2|NoNewPrivs:.1)$' /proc/self/status)\n"
	                  "  h=no; [ -e /home ] || [ -e /root ] && h=yes\n"
	                  "  echo \"err 1 0 1 0 pid=$$ uid=$(id -u) host=$host ifs=$ifs sc=$sc "
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
	                  "while read -r n; do\n"
	                  "  head -c \"$n\" >/dev/null; i=$((i + 1))\n"
	                  "  [ $i = 2 ] && exec sleep 60\n"
	                  "  echo \"err 1 0 1 0 n=$i\"\n"
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

START_TEST(bad_config_and_arguments)
{
	static const char *const bad[] = {
	    "{\"profile\": \"nope\"}",
	    "{\"profiles\": {\"standard\": {\"network\": \"loud\"}}}",
	    "{\"profiles\": []}",
	    "{\"pythonTimeoutMs\": 1}",
	    "{\"rulesDir\": \"/nonexistent\"}",
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
	tcase_add_test(tc, verdicts_and_profiles);
	tcase_add_test(tc, diagnostic_shape);
	tcase_add_test(tc, config_overrides);
	tcase_add_test(tc, bad_config_and_arguments);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(make_suite)
