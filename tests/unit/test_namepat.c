/* test_namepat.c: sandbox/workspace/hide.c's prepared hide patterns give
 * fnmatch(pat, name, FNM_NOESCAPE)'s answer for every pattern form (a
 * plain name, one star at the start, the end or inside, and the forms
 * left to fnmatch) over chosen names and two hundred thousand random
 * ones, and the default list is matched by comparing ends wherever it
 * can be. */
#include <fnmatch.h>
#include <stdlib.h>

#include "sandbox/config.h"
#include "sandbox/workspace/hide.h"
#include "unit.h"

static const char *const pats[] = {
    ".env",       ".env.*", "*.pem",    "id_*",       "*_rsa", "service-account*.json",
    ".*_history", "*",      "**",       "a*b*c",      "?.key", "[ab]x",
    "x\\*y",      "\\",     "*.tar.gz", "kubeconfig", "",      "*x*",
    ".",          "[!.]*",
};

static const char *const names[] = {
    ".env",
    ".env.",
    ".env.local",
    "env",
    "x.env",
    "a.pem",
    ".pem",
    "pem",
    "id_",
    "id_rsa",
    "deploy_rsa",
    "_rsa",
    "rsa",
    "service-account.json",
    "service-account-ci.json",
    "service-accoun.json",
    ".bash_history",
    "._history",
    ".history",
    "abc",
    "aXbYc",
    "k.key",
    "ax",
    "bx",
    "cx",
    "x*y",
    "x\\y",
    "\\",
    "a.tar.gz",
    ".tar.gz",
    "kubeconfig",
    "kubeconfig2",
    "x",
    "",
    ".",
    "..",
    "\xff\xfe",
    "caf\xc3\xa9.pem",
};

static void same(const char *pat, const char *name)
{
	struct sbx_name_pat p;
	sbx_name_pat_init(&p, pat);
	bool want = fnmatch(pat, name, FNM_NOESCAPE) == 0;
	bool got = sbx_name_pat_match(&p, name, strlen(name));
	ck_assert_msg(got == want, "pattern \"%s\" and name \"%s\": %d, fnmatch says %d", pat, name,
	              got, want);
}

START_TEST(namepat_chosen)
{
	for (size_t i = 0; i < sizeof(pats) / sizeof(*pats); i++)
		for (size_t j = 0; j < sizeof(names) / sizeof(*names); j++)
			same(pats[i], names[j]);
	for (size_t i = 0; sbx_default_hide[i]; i++)
		for (size_t j = 0; j < sizeof(names) / sizeof(*names); j++)
			same(sbx_default_hide[i], names[j]);
}
END_TEST

START_TEST(namepat_random)
{
	/* Patterns and names from a small alphabet, so that they meet. */
	static const char alpha[] = "ab.*_-";
	srand(7);
	char pat[8], name[10];
	for (int n = 0; n < 200000; n++) {
		size_t pl = (size_t)(rand() % 7), nl = (size_t)(rand() % 9);
		for (size_t i = 0; i < pl; i++)
			pat[i] = alpha[rand() % 6];
		pat[pl] = '\0';
		for (size_t i = 0; i < nl; i++)
			name[i] = alpha[rand() % 6];
		name[nl] = '\0';
		same(pat, name);
	}
}
END_TEST

START_TEST(namepat_defaults_compare_ends)
{
	/* Every default pattern is a plain name or has one star: none goes
	 * to fnmatch, whose cost per name is what this saves. */
	for (size_t i = 0; sbx_default_hide[i]; i++) {
		struct sbx_name_pat p;
		sbx_name_pat_init(&p, sbx_default_hide[i]);
		ck_assert_msg(p.star != -2, "\"%s\" goes to fnmatch", sbx_default_hide[i]);
	}
}
END_TEST

static Suite *namepat_suite(void)
{
	Suite *s = suite_create("namepat");
	TCase *tc = tcase_create("namepat");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, namepat_chosen);
	tcase_add_test(tc, namepat_random);
	tcase_add_test(tc, namepat_defaults_compare_ends);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(namepat_suite)
