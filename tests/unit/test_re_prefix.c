/* test_re_prefix.c: validate/re_prefix.c, which refuses a value without
 * regexec() when its first two bytes cannot begin a match. A refusal of a
 * value the regex matches would hide a finding, so every regex of the
 * embedded rule files is sampled: strings generated from the regex itself
 * (each alternative, each repetition count up to three, each byte of each
 * bracket list in turn), and each one regexec() matches must get through.
 * Then the refusals it exists for, and the regexes it must leave alone. */
#include "validate/internal.h"

#include <regex.h>

#include "unit.h"

/* --- sampling a regex of the subset re_prefix.c knows ------------------- */

struct gen {
	const char *p;
	char out[512];
	size_t n;
	unsigned seed;
	bool ok;
};

static unsigned pick(struct gen *g, unsigned n)
{
	g->seed = g->seed * 1103515245u + 12345u;
	return n ? (g->seed >> 16) % n : 0;
}

static void put(struct gen *g, char c)
{
	if (g->n + 1 < sizeof(g->out))
		g->out[g->n++] = c;
}

static const char *skip_group(const char *p)
{
	int depth = 0;
	for (; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
		} else if (*p == '[') {
			for (p++; *p && *p != ']'; p++)
				;
		} else if (*p == '(') {
			depth++;
		} else if (*p == ')' && --depth == 0) {
			return p + 1;
		}
	}
	return p;
}

static void gen_alt(struct gen *g);

/* One atom, repeated as its quantifier allows (0-3 times). */
static void gen_atom(struct gen *g)
{
	const char *start = g->p, *end;
	if (*g->p == '(') {
		end = skip_group(g->p);
	} else if (*g->p == '[') {
		end = strchr(g->p + 1, ']');
		end = end ? end + 1 : g->p + strlen(g->p);
	} else if (*g->p == '\\') {
		end = g->p + 2;
	} else {
		end = g->p + 1;
	}
	char q = *end;
	unsigned times = 1;
	if (q == '?')
		times = pick(g, 2);
	else if (q == '*')
		times = pick(g, 4);
	else if (q == '+')
		times = 1 + pick(g, 3);
	for (unsigned t = 0; t < times; t++) {
		g->p = start;
		if (*g->p == '(') {
			g->p++;
			gen_alt(g);
		} else if (*g->p == '[') {
			const char *s = g->p + 1;
			char set[256];
			size_t k = 0;
			for (bool first = true; *s && (*s != ']' || first); first = false) {
				if (s[1] == '-' && s[2] && s[2] != ']') {
					for (int c = (unsigned char)s[0]; c <= (unsigned char)s[2];
					     c++)
						set[k++] = (char)c;
					s += 3;
				} else {
					set[k++] = *s++;
				}
			}
			if (k)
				put(g, set[pick(g, (unsigned)k)]);
		} else if (*g->p == '\\') {
			put(g, g->p[1]);
		} else if (*g->p != '$') {
			put(g, *g->p);
		}
	}
	g->p = end + (q == '?' || q == '*' || q == '+');
}

/* Alternatives up to the closing ')' (consumed) or the end. */
static void gen_alt(struct gen *g)
{
	const char *alts[256];
	unsigned n = 0;
	alts[n++] = g->p;
	const char *p = g->p;
	for (; *p && *p != ')';) {
		if (*p == '(') {
			p = skip_group(p);
		} else if (*p == '[') {
			const char *e = strchr(p + 1, ']');
			p = e ? e + 1 : p + strlen(p);
		} else if (*p == '\\' && p[1]) {
			p += 2;
		} else if (*p == '|') {
			if (n < 256)
				alts[n++] = p + 1;
			p++;
		} else {
			p++;
		}
	}
	const char *close = p;
	g->p = alts[pick(g, n)];
	while (*g->p && *g->p != '|' && *g->p != ')') {
		if (*g->p == '^') {
			g->p++;
			continue;
		}
		gen_atom(g);
	}
	g->p = *close ? close + 1 : close;
}

static size_t samples, matched, regexes, known;

static void check_regex(const char *re)
{
	regex_t rx;
	ck_assert_msg(regcomp(&rx, re, REG_EXTENDED | REG_NOSUB) == 0, "%s", re);
	struct val_re_prefix pre;
	val_re_prefix(re, &pre);
	regexes++;
	known += pre.known;
	for (unsigned s = 0; s < 3000; s++) {
		struct gen g = {.p = re, .seed = s * 2654435761u + 1, .ok = true};
		gen_alt(&g);
		g.out[g.n] = '\0';
		samples++;
		if (regexec(&rx, g.out, 0, NULL, 0) != 0)
			continue;
		matched++;
		ck_assert_msg(val_re_may_match(&pre, g.out), "%s matches /%s/ but is refused",
		              g.out, re);
		/* A match with more after it, when the regex does not end
		 * there, starts the same. */
		char longer[600];
		snprintf(longer, sizeof(longer), "%s.x", g.out);
		if (regexec(&rx, longer, 0, NULL, 0) == 0)
			ck_assert_msg(val_re_may_match(&pre, longer),
			              "%s matches /%s/ but is refused", longer, re);
	}
	regfree(&rx);
}

/* The first string after each regex predicate of a rule file. */
static void check_rule_file(const char *name)
{
	char *data;
	size_t len;
	ck_assert_int_eq(val_rule_file_read(NULL, name, &data, &len), 0);
	static const char *const preds[] = {"#match? ", "#not-match? ", "#qname-match? ",
	                                    "#not-qname-match? "};
	for (size_t k = 0; k < sizeof(preds) / sizeof(preds[0]); k++)
		for (const char *p = data; (p = strstr(p, preds[k])); p++) {
			const char *q = strchr(p, '"');
			ck_assert_ptr_nonnull(q);
			char re[4096]; /* the reach lists run to 2.5 KB */
			size_t n = 0;
			for (q++; *q && *q != '"' && n + 1 < sizeof(re); q++) {
				if (*q == '\\' && q[1])
					q++;
				re[n++] = *q;
			}
			re[n] = '\0';
			check_regex(re);
		}
	free(data);
}

START_TEST(rule_regexes_let_their_matches_through)
{
	samples = matched = regexes = known = 0;
	check_rule_file("python.scm");
	check_rule_file("bash.scm");
	check_rule_file("javascript.scm");
	ck_assert_uint_gt(regexes, 60);
	/* Most are of the subset (99 of 159 today: bash's command
	 * patterns take any path before the name (a group of any bytes
	 * ending in a slash, then "curl"), and the
	 * reach rules' "." asks only that a name exists, neither of which
	 * two bytes can refuse); the samples were real matches. */
	ck_assert_uint_gt(known, regexes / 2);
	ck_assert_uint_gt(matched, samples / 2);
}
END_TEST

START_TEST(constructs_of_the_subset)
{
	/* Optional, starred and repeated parts, nested groups, ranges, $
	 * inside a group, escapes. */
	check_regex("^((builtins|__builtins__)\\.)?(eval|exec)$");
	check_regex("^a*b+(c|d?)e$|^x[0-9]?y");
	check_regex("^(ab)*c$");
	check_regex("^(a|)(b|$)c");
	check_regex("^[a-cx]\\.?(z+|w)*$");
	check_regex("^(((a)))b|^\\+\\+");
}
END_TEST

static bool refused(const char *re, const char *value)
{
	struct val_re_prefix pre;
	val_re_prefix(re, &pre);
	ck_assert_msg(pre.known, "/%s/ should be known", re);
	return !val_re_may_match(&pre, value);
}

START_TEST(refuses_by_the_second_byte)
{
	const char *os = "^(os|posix|nt)\\.(system|popen[0-9]?)$";
	ck_assert(refused(os, "print")); /* 'p' could begin posix */
	ck_assert(refused(os, "open"));
	ck_assert(!refused(os, "os.system"));
	ck_assert(!refused(os, "posix.popen2"));
	ck_assert(!refused(os, "po")); /* a prefix is all it sees */
	ck_assert(refused(os, ""));
	ck_assert(refused(os, "o"));
	/* One-byte values: only the one-byte matches. */
	ck_assert(!refused("^(a|bc)$", "a"));
	ck_assert(refused("^(a|bc)$", "b"));
	ck_assert(!refused("^(a|bc)$", "bc"));
	ck_assert(!refused("^a?b", "b"));
	ck_assert(!refused("^a?b", "ab"));
	ck_assert(refused("^a?b", "a"));
	ck_assert(!refused("^(ab)*c", "abab"));
	ck_assert(!refused("^(ab)*c", "c"));
	ck_assert(refused("^(ab)*c", "ac"));
}
END_TEST

START_TEST(leaves_other_regexes_to_regexec)
{
	static const char *const unknown[] = {
	    "[wax+]",        /* not anchored */
	    "^a.b",          /* . */
	    "^a{2}",         /* counts */
	    "^[^a]",         /* negated list */
	    "^\\w",          /* classes */
	    "^[[:alpha:]]x", /* named classes */
	    "^(a|b)?$",      /* matches the empty value */
	    "^a|b",          /* one alternative not anchored */
	};
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		struct val_re_prefix pre;
		val_re_prefix(unknown[i], &pre);
		ck_assert_msg(!pre.known, "/%s/ is not of the subset", unknown[i]);
		ck_assert(val_re_may_match(&pre, ""));
		ck_assert(val_re_may_match(&pre, "zz"));
	}
}
END_TEST

static Suite *re_prefix_suite(void)
{
	Suite *s = suite_create("re_prefix");
	TCase *tc = tcase_create("prefix");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, rule_regexes_let_their_matches_through);
	tcase_add_test(tc, constructs_of_the_subset);
	tcase_add_test(tc, refuses_by_the_second_byte);
	tcase_add_test(tc, leaves_other_regexes_to_regexec);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(re_prefix_suite)
