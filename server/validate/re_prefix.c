/* re_prefix.c: what a value must start with to match a rule's regex, so
 * that most values are refused without regexec().
 *
 * Most values a pattern tests fail its regex in their first two bytes
 * ("print" against "^(os|posix|nt)\\.(system|...)$": 'p' can begin a
 * match, "pr" cannot), and glibc's regexec() costs about 900 instructions
 * even then (400 a 200-line check). So the two-byte beginnings of the
 * regex's matches are worked out once, for the extended regexes the rule
 * files use: literals, escaped punctuation, bracket lists and ranges,
 * groups, alternation, ? * +, $, and ^ at the start of each top-level
 * alternative (a match begins at the value's first byte). Anything else
 * (., {n}, classes, negated lists, back-references, no ^) leaves the
 * prefix unknown and regexec() decides alone. The sets are never smaller
 * than the truth ($ is taken for the empty string, which lets more
 * through, and the pairs are hashed into a bitmap whose collisions only
 * let more through): they are only used to say no.
 *
 * A regex's language cut to two bytes, L2, is: the empty word when it
 * matches it, the one-byte words it matches, and the first two bytes of
 * each longer one. L2 of a sequence AB is L2(A) with each of its shorter
 * words followed by L2(B) and cut to two bytes again; of A|B the union;
 * of A? L2(A) and the empty word; of A+ L2(A) and L2(AA) (a third A is
 * past the second byte); of A* both. */
#include "validate/internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* A set of words of up to two bytes, exact while it is worked out. */
struct l2 {
	bool eps;
	uint64_t one[4];
	uint64_t two[1024]; /* byte pair a, b at bit a * 256 + b */
};

static void bit_set(uint64_t *s, unsigned i)
{
	s[i >> 6] |= 1ull << (i & 63);
}

static bool bit_get(const uint64_t *s, unsigned i)
{
	return s[i >> 6] >> (i & 63) & 1;
}

static void l2_union(struct l2 *a, const struct l2 *b)
{
	a->eps |= b->eps;
	for (int i = 0; i < 4; i++)
		a->one[i] |= b->one[i];
	for (int i = 0; i < 1024; i++)
		a->two[i] |= b->two[i];
}

/* The bytes b's words can begin with. */
static void l2_start(const struct l2 *b, uint64_t *start)
{
	memcpy(start, b->one, sizeof(b->one));
	for (unsigned a = 0; a < 256; a++)
		for (unsigned w = 0; w < 4; w++)
			if (b->two[a * 4 + w]) {
				bit_set(start, a);
				break;
			}
}

static bool l2_none_short(const struct l2 *a)
{
	return !a->eps && !(a->one[0] | a->one[1] | a->one[2] | a->one[3]);
}

/* a = a b, cut to two bytes (b is not a). Once a holds only two-byte
 * words, as after the first two literals of a sequence, nothing b adds
 * survives the cut: most of a regex costs nothing. */
static void l2_concat(struct l2 *a, const struct l2 *b)
{
	if (l2_none_short(a))
		return;
	uint64_t start[4];
	l2_start(b, start);
	for (unsigned x = 0; x < 256; x++)
		if (bit_get(a->one, x))
			for (unsigned w = 0; w < 4; w++)
				a->two[x * 4 + w] |= start[w];
	if (a->eps)
		for (int i = 0; i < 1024; i++)
			a->two[i] |= b->two[i];
	uint64_t one[4];
	for (int i = 0; i < 4; i++)
		one[i] = (b->eps ? a->one[i] : 0) | (a->eps ? b->one[i] : 0);
	memcpy(a->one, one, sizeof(one));
	a->eps = a->eps && b->eps;
}

struct re_scan {
	const char *p;
	bool ok;
};

static void scan_alt(struct re_scan *r, struct l2 *set, bool top);

/* One atom and its quantifier. */
static void scan_atom(struct re_scan *r, struct l2 *set)
{
	unsigned char c = (unsigned char)*r->p;
	memset(set, 0, sizeof(*set));
	if (c == '(') {
		r->p++;
		scan_alt(r, set, false);
		if (!r->ok || *r->p != ')') {
			r->ok = false;
			return;
		}
		r->p++;
	} else if (c == '[') {
		r->p++;
		if (*r->p == '^') {
			r->ok = false;
			return;
		}
		for (bool first = true; *r->p && (*r->p != ']' || first); first = false) {
			unsigned char a = (unsigned char)r->p[0], b = (unsigned char)r->p[2];
			if (a == '[') { /* [:alpha:] and the like */
				r->ok = false;
				return;
			}
			if (r->p[1] == '-' && b && b != ']') {
				if (b < a) {
					r->ok = false;
					return;
				}
				for (unsigned x = a; x <= b; x++)
					bit_set(set->one, x);
				r->p += 3;
			} else {
				bit_set(set->one, a);
				r->p++;
			}
		}
		if (*r->p != ']') {
			r->ok = false;
			return;
		}
		r->p++;
	} else if (c == '\\') {
		unsigned char e = (unsigned char)r->p[1];
		if (!e || !ispunct(e)) { /* \w, \1 and the like are not literals */
			r->ok = false;
			return;
		}
		bit_set(set->one, e);
		r->p += 2;
	} else if (c == '$') {
		set->eps = true; /* the end: taken for "nothing", a superset */
		r->p++;
	} else if (c && !strchr("^.*+?{|)", c)) {
		bit_set(set->one, c);
		r->p++;
	} else {
		r->ok = false;
		return;
	}
	char q = *r->p;
	if (q == '?' || q == '*' || q == '+') {
		r->p++;
		if (q != '?') {
			struct l2 *twice = malloc(sizeof(*twice));
			if (!twice) {
				r->ok = false;
				return;
			}
			memcpy(twice, set, sizeof(*twice));
			l2_concat(twice, set);
			l2_union(set, twice);
			free(twice);
		}
		if (q != '+')
			set->eps = true;
	}
	if (*r->p && strchr("?*+{", *r->p))
		r->ok = false;
}

/* Atoms up to | or ): their concatenation. */
static void scan_seq(struct re_scan *r, struct l2 *set)
{
	memset(set, 0, sizeof(*set));
	set->eps = true;
	struct l2 *atom = malloc(sizeof(*atom));
	if (!atom) {
		r->ok = false;
		return;
	}
	while (r->ok && *r->p && *r->p != '|' && *r->p != ')') {
		scan_atom(r, atom);
		if (r->ok)
			l2_concat(set, atom);
	}
	free(atom);
}

static void scan_alt(struct re_scan *r, struct l2 *set, bool top)
{
	memset(set, 0, sizeof(*set));
	struct l2 *alt = malloc(sizeof(*alt));
	if (!alt) {
		r->ok = false;
		return;
	}
	for (;;) {
		if (top) {
			if (*r->p != '^') {
				r->ok = false;
				break;
			}
			r->p++;
		}
		scan_seq(r, alt);
		l2_union(set, alt);
		if (!r->ok || *r->p != '|')
			break;
		r->p++;
	}
	free(alt);
}

void val_re_prefix(const char *src, struct val_re_prefix *ret)
{
	memset(ret, 0, sizeof(*ret));
	struct re_scan r = {.p = src, .ok = true};
	struct l2 *set = malloc(sizeof(*set));
	if (!set)
		return; /* unknown: regexec() decides */
	scan_alt(&r, set, true);
	/* A regex that matches the empty value matches every value. */
	if (r.ok && !*r.p && !set->eps) {
		memcpy(ret->one, set->one, sizeof(ret->one));
		for (unsigned i = 0; i < 65536; i++)
			if (bit_get(set->two, i))
				bit_set(ret->pair,
				        val_re_pair_bit((unsigned char)(i >> 8), (unsigned char)i));
		ret->known = true;
	}
	free(set);
}
