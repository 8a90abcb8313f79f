/* test_lang.c: the language registry (core/lang.h): canonical names and
 * aliases, extensions, the #! reader, unknown names and the config's
 * sandbox.languages laid over the built-in table. */
#include "core/lang.h"

#include "core/json.h"

#include "unit.h"

static json_object *parse(const char *s)
{
	json_object *o = json_tokener_parse(s);
	ck_assert_ptr_nonnull(o);
	return o;
}

static const char *name_of(const struct lang *l)
{
	return l ? l->name : "(none)";
}

START_TEST(names_and_aliases)
{
	static const struct {
		const char *name, *canon;
	} cases[] = {
	    {"python", "python"},
	    {"py", "python"},
	    {"python3", "python"},
	    {"py3", "python"},
	    {"PYTHON", "python"},
	    {"bash", "bash"},
	    {"shellscript", "bash"}, /* LSP's languageId for shell scripts */
	    {"sh", "bash"},
	    {"shell", "bash"},
	    {"javascript", "javascript"},
	    {"js", "javascript"},
	    {"node", "javascript"},
	    {"nodejs", "javascript"},
	    {"mjs", "javascript"},
	    {"JavaScript", "javascript"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_str_eq(name_of(lang_find(cases[i].name)), cases[i].canon);
	/* Not ours: zsh code is not bash code, ruby is not built in. */
	ck_assert_ptr_null(lang_find("zsh"));
	ck_assert_ptr_null(lang_find("ruby"));
	ck_assert_ptr_null(lang_find(""));
	ck_assert_ptr_null(lang_find(NULL));
	ck_assert_ptr_null(lang_find("pyt"));
	ck_assert_ptr_null(lang_find("python "));
}
END_TEST

START_TEST(what_a_language_runs)
{
	const struct lang *js = lang_find("js");
	ck_assert_ptr_nonnull(js);
	ck_assert_str_eq(js->argv[0], "/usr/bin/node");
	ck_assert_str_eq(js->argv[1], "{file}");
	ck_assert_ptr_null(js->argv[2]);
	ck_assert_str_eq(js->file, "snippet.js");
	ck_assert_str_eq(js->validator, "javascript");
	ck_assert(js->builtin);
	ck_assert_str_eq(lang_find("py")->argv[0], "/usr/bin/python3");
	ck_assert_str_eq(lang_find("sh")->file, "snippet.sh");
	ck_assert_uint_eq(lang_count(), 3);
	ck_assert_str_eq(lang_at(0)->name, "python");
	ck_assert_ptr_null(lang_at(3));
}
END_TEST

START_TEST(extensions)
{
	ck_assert_str_eq(name_of(lang_for_path("a.py")), "python");
	ck_assert_str_eq(name_of(lang_for_path("/x/y.z/b.PY")), "python");
	ck_assert_str_eq(name_of(lang_for_path("run.sh")), "bash");
	ck_assert_str_eq(name_of(lang_for_path("run.bash")), "bash");
	ck_assert_str_eq(name_of(lang_for_path("app.js")), "javascript");
	ck_assert_str_eq(name_of(lang_for_path("app.mjs")), "javascript");
	ck_assert_str_eq(name_of(lang_for_path("app.cjs")), "javascript");
	ck_assert_ptr_null(lang_for_path("a.rb"));
	ck_assert_ptr_null(lang_for_path("Makefile"));
	/* A leading dot makes a name, not an extension; a dot in a
	 * directory is not the file's. */
	ck_assert_ptr_null(lang_for_path(".sh"));
	ck_assert_ptr_null(lang_for_path("dir.py/script"));
	ck_assert_ptr_null(lang_for_path(NULL));
}
END_TEST

static const struct lang *shebang(const char *s)
{
	return lang_for_shebang(s, strlen(s));
}

START_TEST(shebangs)
{
	static const struct {
		const char *text, *canon;
	} cases[] = {
	    {"#!/usr/bin/python3\nprint(1)\n", "python"},
	    {"#!/usr/bin/python3.11 -u\n", "python"},
	    {"#!/usr/local/bin/python\n", "python"},
	    {"#! /usr/bin/env python3\n", "python"},
	    {"#!/usr/bin/env -S python3 -u\n", "python"},
	    {"#!/usr/bin/env -Spython3\n", "python"},
	    {"#!/usr/bin/env -i PYTHONPATH=/x python3\n", "python"},
	    {"#!/usr/bin/env -u HOME python3\n", "python"},
	    {"#!/usr/bin/env node\n", "javascript"},
	    {"#!/usr/bin/env -S node --no-warnings\n", "javascript"},
	    {"#!/usr/bin/nodejs\r\n", "javascript"},
	    {"#!/bin/bash\n", "bash"},
	    {"#!/bin/sh -e\n", "bash"},
	    {"#!/usr/bin/env bash", "bash"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(strcmp(name_of(shebang(cases[i].text)), cases[i].canon) == 0,
		              "%s: %s, not %s", cases[i].text, name_of(shebang(cases[i].text)),
		              cases[i].canon);
	static const char *const none[] = {
	    "print(1)\n",
	    "# !/usr/bin/python3\n",
	    "#!/usr/bin/env\n",
	    "#!/usr/bin/env -S\n",
	    "#!/usr/bin/ruby\n",
	    "#!/usr/bin/pythonista\n", /* not python followed by a version */
	    "#!/usr/bin/nodemon\n",
	    "#!/usr/bin/zsh\n",
	    "#!\n",
	    "",
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		ck_assert_msg(shebang(none[i]) == NULL, "%s gave %s", none[i],
		              name_of(shebang(none[i])));
	/* Only len bytes are read: the #! line is cut at "py". */
	ck_assert_ptr_null(lang_for_shebang("#!/usr/bin/python3\n", 13));
	ck_assert_str_eq(name_of(lang_for_shebang("#!/usr/bin/node", 15)), "javascript");
	/* A line longer than the reader's buffer is cut, never overrun. */
	char longline[1024];
	memset(longline, ' ', sizeof(longline));
	memcpy(longline, "#!/usr/bin/env", 14);
	ck_assert_ptr_null(lang_for_shebang(longline, sizeof(longline)));
	/* The extension first, then the #! line. */
	ck_assert_str_eq(name_of(lang_for_file("x.sh", "#!/usr/bin/node\n", 16)), "bash");
	ck_assert_str_eq(name_of(lang_for_file("x", "#!/usr/bin/node\n", 16)), "javascript");
	ck_assert_str_eq(name_of(lang_for_file(NULL, "#!/usr/bin/node\n", 16)), "javascript");
}
END_TEST

START_TEST(unknown_names_the_known_ones)
{
	char buf[512];
	lang_unknown("ruby", buf, sizeof(buf));
	ck_assert_str_eq(buf, "unknown language 'ruby' (kiln knows python (py, python3, py3), bash "
	                      "(sh, shell, shellscript), javascript (js, node, nodejs, mjs))");
	ck_assert_str_eq(lang_names(buf, sizeof(buf)), "python, bash, javascript");
	/* A name from outside is shown safely: escapes, and cut. */
	lang_unknown("ru\x1b[2Jby\n", buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "unknown language 'ru\\x1b[2Jby\\x0a' (kiln knows"));
	char huge[300];
	memset(huge, 'a', sizeof(huge) - 1);
	huge[sizeof(huge) - 1] = '\0';
	lang_unknown(huge, buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "aaa...' (kiln knows python"));
	/* A small buffer is cut, still terminated. */
	char small[20];
	lang_unknown("ruby", small, sizeof(small));
	ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
}
END_TEST

/* kiln run and kiln validate say this when --lang, the extension and the
 * #! line are all silent (issue 35): --lang and every language with its
 * extensions, a file and stdin told apart. */
START_TEST(untold_names_lang_and_the_languages)
{
	char buf[512];
	ck_assert_str_eq(lang_untold("x.rb", buf, sizeof(buf)),
	                 "cannot tell its language: no extension kiln knows and no #! line; use "
	                 "--lang (kiln knows python (.py, .pyw), bash (.sh, .bash), javascript "
	                 "(.js, .mjs, .cjs))");
	ck_assert_ptr_nonnull(
	    strstr(lang_untold(NULL, buf, sizeof(buf)),
	           "standard input has no #! line; use --lang (kiln knows python"));
	char small[20];
	lang_untold("x.rb", small, sizeof(small));
	ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
}
END_TEST

START_TEST(config_adds_a_language)
{
	_cleanup_json_ json_object *cfg =
	    parse("{\"perl\": {\"argv\": [\"/usr/bin/perl\", \"-w\", \"{file}\"], \"file\": "
	          "\"snippet.pl\", \"aliases\": [\"pl\"], \"extensions\": [\".pl\"], "
	          "\"interpreters\": [\"perl\"], \"env\": {\"PERL5LIB\": \"/x\"}, \"binds\": "
	          "[\"/usr/share/perl*\"]},"
	          " \"py311\": {\"argv\": [\"/opt/py/bin/python3.11\", \"{file}\"], \"file\": "
	          "\"s.py\", \"validator\": \"py\"}}");
	char err[256] = "";
	ck_assert_int_eq(lang_configure(cfg, err, sizeof(err)), 0);
	/* The config's object may go: the registry holds its own copy. */
	json_object_put(cfg);
	cfg = NULL;
	const struct lang *pl = lang_find("PL");
	ck_assert_ptr_nonnull(pl);
	ck_assert_str_eq(pl->name, "perl");
	ck_assert(!pl->builtin);
	ck_assert_str_eq(pl->argv[1], "-w");
	ck_assert_ptr_null(pl->argv[3]);
	ck_assert_str_eq(pl->env[0], "PERL5LIB=/x");
	ck_assert_str_eq(pl->binds[0], "/usr/share/perl*");
	/* Checked by nothing unless the config says which grammar. */
	ck_assert_ptr_null(pl->validator);
	ck_assert_str_eq(lang_find("py311")->validator, "python");
	ck_assert_ptr_eq(lang_for_path("a.pl"), pl);
	ck_assert_ptr_eq(shebang("#!/usr/bin/perl -w\n"), pl);
	ck_assert_str_eq(name_of(lang_find("js")), "javascript");
	char buf[512];
	ck_assert_str_eq(lang_names(buf, sizeof(buf)), "python, bash, javascript, perl, py311");
	ck_assert_ptr_nonnull(strstr(lang_unknown("ruby", buf, sizeof(buf)), "perl (pl)"));
	/* Back to the built-in table. */
	ck_assert_int_eq(lang_configure(NULL, NULL, 0), 0);
	ck_assert_ptr_null(lang_find("perl"));
	ck_assert_uint_eq(lang_count(), 3);
}
END_TEST

START_TEST(config_changes_a_builtin)
{
	/* Named by an alias, the entry changes the built-in language; its
	 * names and grammar stay, the new alias and extension join them. */
	_cleanup_json_ json_object *cfg = parse(
	    "{\"node\": {\"argv\": [\"/usr/local/bin/node\", \"--no-warnings\", \"{file}\"], "
	    "\"file\": \"main.js\", \"aliases\": [\"ecmascript\"], \"extensions\": [\".es\"]}}");
	char err[256] = "";
	ck_assert_int_eq(lang_configure(cfg, err, sizeof(err)), 0);
	const struct lang *js = lang_find("ecmascript");
	ck_assert_ptr_nonnull(js);
	ck_assert_str_eq(js->name, "javascript");
	ck_assert_ptr_eq(lang_find("js"), js);
	ck_assert_str_eq(js->argv[0], "/usr/local/bin/node");
	ck_assert_str_eq(js->file, "main.js");
	ck_assert_str_eq(js->validator, "javascript");
	ck_assert(js->builtin);
	ck_assert_ptr_eq(lang_for_path("x.es"), js);
	ck_assert_ptr_eq(lang_for_path("x.mjs"), js);
	ck_assert_uint_eq(lang_count(), 3);
	lang_configure(NULL, NULL, 0);
	ck_assert_str_eq(lang_find("js")->argv[0], "/usr/bin/node");
}
END_TEST

START_TEST(config_errors_name_the_member)
{
	static const struct {
		const char *json, *err;
	} cases[] = {
	    {"[]", "sandbox.languages must be an object"},
	    {"{\"ruby\": 5}", "sandbox.languages.ruby must be an object"},
	    {"{\"ruby\": {\"file\": \"a.rb\"}}", "sandbox.languages.ruby.argv must be an array"},
	    {"{\"ruby\": {\"argv\": [], \"file\": \"a.rb\"}}",
	     "sandbox.languages.ruby.argv must have 1 to 32 entries"},
	    {"{\"ruby\": {\"argv\": [\"/usr/bin/ruby\", 5], \"file\": \"a.rb\"}}",
	     "sandbox.languages.ruby.argv must be an array of strings"},
	    {"{\"ruby\": {\"argv\": [\"/usr/bin/ruby\"]}}", "sandbox.languages.ruby.file must be"},
	    {"{\"ruby\": {\"argv\": [\"/usr/bin/ruby\"], \"file\": \"../a.rb\"}}",
	     "sandbox.languages.ruby.file must be"},
	    {"{\"ruby\": {\"argv\": [\"/usr/bin/ruby\"], \"file\": \"a\", \"extensions\": "
	     "[\"rb\"]}}",
	     "sandbox.languages.ruby.extensions must be an array of extensions"},
	    {"{\"ruby\": {\"argv\": [\"/usr/bin/ruby\"], \"file\": \"a\", \"binds\": [\"lib\"]}}",
	     "sandbox.languages.ruby.binds must be an array of absolute paths"},
	    {"{\"ruby\": {\"argv\": [\"/usr/bin/ruby\"], \"file\": \"a\", \"env\": {\"A\": 1}}}",
	     "sandbox.languages.ruby.env.A must be a string"},
	    {"{\"ruby\": {\"argv\": [\"/usr/bin/ruby\"], \"file\": \"a\", \"env\": {\"A-B\": "
	     "\"1\"}}}",
	     "sandbox.languages.ruby.env: 'A-B' is not a valid variable name"},
	    {"{\"ruby\": {\"argv\": [\"/usr/bin/ruby\"], \"file\": \"a\", \"validator\": "
	     "\"ruby\"}}",
	     "sandbox.languages.ruby.validator must name a language the validator checks"},
	    {"{\"ruby\": {\"argv\": [\"/usr/bin/ruby\"], \"file\": \"a\", \"aliases\": [\"js\"]}}",
	     "sandbox.languages: 'js' names both"},
	    {"{\"py\": {\"argv\": [\"/usr/bin/python3\"], \"file\": \"a\"}, \"python3\": "
	     "{\"argv\": [\"/usr/bin/python3\"], \"file\": \"b\"}}",
	     "sandbox.languages.py and sandbox.languages.python3 both change python"},
	    {"{\"ru by\": {\"argv\": [\"/usr/bin/ruby\"], \"file\": \"a\"}}",
	     "sandbox.languages: 'ru by' is not a language name"},
	};
	_cleanup_json_ json_object *good =
	    parse("{\"perl\": {\"argv\": [\"/usr/bin/perl\", \"{file}\"], \"file\": \"a.pl\"}}");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[256] = "";
		ck_assert_int_eq(lang_configure(good, err, sizeof(err)), 0);
		_cleanup_json_ json_object *cfg = parse(cases[i].json);
		ck_assert_int_eq(lang_configure(cfg, err, sizeof(err)), -EINVAL);
		ck_assert_msg(strstr(err, cases[i].err) != NULL, "%s: '%s' does not say '%s'",
		              cases[i].json, err, cases[i].err);
		/* A bad config changes nothing. */
		ck_assert_ptr_nonnull(lang_find("perl"));
		ck_assert_uint_eq(lang_count(), 4);
	}
	lang_configure(NULL, NULL, 0);
}
END_TEST

static Suite *lang_suite(void)
{
	Suite *s = suite_create("lang");
	TCase *tc = tcase_create("lang");
	tcase_add_test(tc, names_and_aliases);
	tcase_add_test(tc, what_a_language_runs);
	tcase_add_test(tc, extensions);
	tcase_add_test(tc, shebangs);
	tcase_add_test(tc, unknown_names_the_known_ones);
	tcase_add_test(tc, untold_names_lang_and_the_languages);
	tcase_add_test(tc, config_adds_a_language);
	tcase_add_test(tc, config_changes_a_builtin);
	tcase_add_test(tc, config_errors_name_the_member);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(lang_suite)
