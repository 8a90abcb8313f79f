/* match.c: transcript expectations against messages (see match.h). */
#include "replay/match.h"

#include <errno.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/json.h"

void match_captures_init(struct match_captures *c)
{
	c->bound = json_object_new_object();
}

void match_captures_release(struct match_captures *c)
{
	json_object_put(c->bound);
	c->bound = NULL;
}

static const char *show(json_object *v)
{
	return v ? json_compact(v) : "null";
}

static bool is_placeholder(json_object *v, const char **ret_inner, size_t *ret_len)
{
	if (!v || !json_object_is_type(v, json_type_string))
		return false;
	const char *s = json_object_get_string(v);
	size_t n = strlen(s);
	if (n < 4 || strncmp(s, "{{", 2) != 0 || strcmp(s + n - 2, "}}") != 0)
		return false;
	*ret_inner = s + 2;
	*ret_len = n - 4;
	return true;
}

/* Two integers compare exactly (as doubles, 2^53 + 1 would equal 2^53);
 * an integer equals a double only when the double is that very integer
 * (1 == 1.0, as docs/transcripts.md says). json-c keeps integers above
 * INT64_MAX as uint64: the pair of readings tells every integer apart. */
static bool same_number(json_object *a, json_object *b)
{
	bool ai = json_object_is_type(a, json_type_int);
	bool bi = json_object_is_type(b, json_type_int);
	if (ai && bi)
		return json_object_get_int64(a) == json_object_get_int64(b) &&
		       json_object_get_uint64(a) == json_object_get_uint64(b);
	if (!ai && !bi)
		return json_object_get_double(a) == json_object_get_double(b);
	json_object *i = ai ? a : b;
	double d = json_object_get_double(ai ? b : a);
	if (!(d >= -9223372036854775808.0 && d < 18446744073709551616.0))
		return false;
	if (d < 9223372036854775808.0) {
		int64_t v = (int64_t)d;
		return (double)v == d && v == json_object_get_int64(i) &&
		       (v < 0 || (uint64_t)v == json_object_get_uint64(i));
	}
	uint64_t u = (uint64_t)d;
	return (double)u == d && u == json_object_get_uint64(i) &&
	       json_object_get_int64(i) == INT64_MAX;
}

static bool is_number(json_object *v)
{
	return v &&
	       (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double));
}

static bool type_named(const char *name, size_t n, json_object *v)
{
#define IS(word) (n == sizeof(word) - 1 && strncmp(name, word, n) == 0)
	if (IS("any"))
		return true;
	if (IS("string"))
		return v && json_object_is_type(v, json_type_string);
	if (IS("number"))
		return is_number(v);
	if (IS("object"))
		return v && json_object_is_type(v, json_type_object);
	if (IS("array"))
		return v && json_object_is_type(v, json_type_array);
	if (IS("bool"))
		return v && json_object_is_type(v, json_type_boolean);
	if (IS("null"))
		return v == NULL;
#undef IS
	return false;
}

/* scratch: captures made during this match attempt, merged on success. */
static bool match_at(json_object *exp, json_object *act, const struct match_captures *c,
                     json_object *scratch, char *path, size_t plen, char *why, size_t wsz)
{
	const char *inner;
	size_t n;
	if (is_placeholder(exp, &inner, &n)) {
		if (n >= 1 && inner[0] == '$') {
			char name[128];
			snprintf(name, sizeof(name), "%.*s", (int)(n - 1), inner + 1);
			json_object *have = json_get(scratch, name);
			bool known = have || json_object_object_get_ex(scratch, name, NULL);
			if (!known) {
				have = json_get(c->bound, name);
				known = have || json_object_object_get_ex(c->bound, name, NULL);
			}
			if (!known) {
				json_object_object_add(scratch, name, json_copy(act));
				return true;
			}
			char sub[512];
			if (match_at(have, act, c, scratch, path, plen, sub, sizeof(sub)) &&
			    json_object_equal(have, act))
				return true;
			snprintf(why, wsz, "%s: expected %s (bound to $%s), got %s", path,
			         show(have), name, show(act));
			return false;
		}
		if (n > 3 && strncmp(inner, "re:", 3) == 0) {
			if (!act || !json_object_is_type(act, json_type_string)) {
				snprintf(why, wsz, "%s: expected a string matching /%.*s/, got %s",
				         path, (int)(n - 3), inner + 3, show(act));
				return false;
			}
			char pat[1024];
			snprintf(pat, sizeof(pat), "%.*s", (int)(n - 3), inner + 3);
			regex_t re;
			if (regcomp(&re, pat, REG_EXTENDED | REG_NOSUB) != 0) {
				snprintf(why, wsz, "%s: bad regular expression /%s/", path, pat);
				return false;
			}
			bool ok = regexec(&re, json_object_get_string(act), 0, NULL, 0) == 0;
			regfree(&re);
			if (!ok)
				snprintf(why, wsz, "%s: expected a string matching /%s/, got %s",
				         path, pat, show(act));
			return ok;
		}
		if (type_named(inner, n, act))
			return true;
		if (!(n == 3 && strncmp(inner, "...", 3) == 0)) {
			snprintf(why, wsz, "%s: expected %s, got %s", path, show(exp), show(act));
			return false;
		}
	}
	if (!exp || !act) {
		if (!exp && !act)
			return true;
		snprintf(why, wsz, "%s: expected %s, got %s", path, show(exp), show(act));
		return false;
	}
	if (json_object_is_type(exp, json_type_object)) {
		if (!json_object_is_type(act, json_type_object)) {
			snprintf(why, wsz, "%s: expected an object, got %s", path, show(act));
			return false;
		}
		json_object_object_foreach(exp, key, ev)
		{
			size_t old = strlen(path);
			snprintf(path + old, plen - old, ".%s", key);
			json_object *av = NULL;
			bool present = json_object_object_get_ex(act, key, &av);
			const char *pi;
			size_t pn;
			bool absent_wanted = is_placeholder(ev, &pi, &pn) && pn == 6 &&
			                     strncmp(pi, "absent", 6) == 0;
			bool ok;
			if (absent_wanted) {
				ok = !present;
				if (!ok)
					snprintf(why, wsz, "%s: expected no such member, got %s",
					         path, show(av));
			} else if (!present) {
				ok = false;
				snprintf(why, wsz, "%s: missing (expected %s)", path, show(ev));
			} else {
				ok = match_at(ev, av, c, scratch, path, plen, why, wsz);
			}
			path[old] = '\0';
			if (!ok)
				return false;
		}
		return true;
	}
	if (json_object_is_type(exp, json_type_array)) {
		if (!json_object_is_type(act, json_type_array)) {
			snprintf(why, wsz, "%s: expected an array, got %s", path, show(act));
			return false;
		}
		size_t ne = json_object_array_length(exp);
		size_t na = json_object_array_length(act);
		bool prefix = false;
		if (ne > 0) {
			json_object *last = json_object_array_get_idx(exp, ne - 1);
			const char *li;
			size_t ln;
			if (is_placeholder(last, &li, &ln) && ln == 3 &&
			    strncmp(li, "...", 3) == 0) {
				prefix = true;
				ne--;
			}
		}
		if (prefix ? na < ne : na != ne) {
			snprintf(why, wsz, "%s: expected %s%zu elements, got %zu: %s", path,
			         prefix ? "at least " : "", ne, na, show(act));
			return false;
		}
		for (size_t i = 0; i < ne; i++) {
			size_t old = strlen(path);
			snprintf(path + old, plen - old, "[%zu]", i);
			bool ok = match_at(json_object_array_get_idx(exp, i),
			                   json_object_array_get_idx(act, i), c, scratch, path,
			                   plen, why, wsz);
			path[old] = '\0';
			if (!ok)
				return false;
		}
		return true;
	}
	if (is_number(exp) && is_number(act) && same_number(exp, act))
		return true;
	if (json_object_equal(exp, act))
		return true;
	snprintf(why, wsz, "%s: expected %s, got %s", path, show(exp), show(act));
	return false;
}

bool match_json(json_object *expected, json_object *actual, struct match_captures *c, char *why,
                size_t wsz)
{
	char path[1024] = "$";
	char dummy[8];
	json_object *scratch = json_object_new_object();
	if (!why) {
		why = dummy;
		wsz = sizeof(dummy);
	}
	why[0] = '\0';
	bool ok = match_at(expected, actual, c, scratch, path, sizeof(path), why, wsz);
	if (ok) {
		json_object_object_foreach(scratch, key, val)
		{
			json_object_object_add(c->bound, key, json_copy(val));
		}
	}
	json_object_put(scratch);
	return ok;
}

int match_substitute(json_object **obj, const struct match_captures *c, char *why, size_t wsz)
{
	json_object *o = *obj;
	const char *inner;
	size_t n;
	if (is_placeholder(o, &inner, &n) && n >= 1 && inner[0] == '$') {
		char name[128];
		snprintf(name, sizeof(name), "%.*s", (int)(n - 1), inner + 1);
		json_object *v = NULL;
		if (!json_object_object_get_ex(c->bound, name, &v)) {
			snprintf(why, wsz, "{{$%s}} is not bound yet", name);
			return -ENOENT;
		}
		json_object_put(o);
		*obj = json_copy(v);
		return 0;
	}
	if (o && json_object_is_type(o, json_type_object)) {
		json_object_object_foreach(o, key, val)
		{
			json_object *v = json_object_get(val);
			int r = match_substitute(&v, c, why, wsz);
			if (r < 0) {
				json_object_put(v);
				return r;
			}
			json_object_object_add(o, key, v);
		}
	} else if (o && json_object_is_type(o, json_type_array)) {
		size_t len = json_object_array_length(o);
		for (size_t i = 0; i < len; i++) {
			json_object *v = json_object_get(json_object_array_get_idx(o, i));
			int r = match_substitute(&v, c, why, wsz);
			if (r < 0) {
				json_object_put(v);
				return r;
			}
			json_object_array_put_idx(o, i, v);
		}
	}
	return 0;
}
