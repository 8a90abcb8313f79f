/* test_gate.c: match.c's gates, which keep a match of a native pattern
 * from its callback when the name of the node in the gate's slot cannot
 * begin a match of the gate's regex (rules.c gives each pattern the gate
 * of its first #qname-match?). A gate must refuse only what it should: a
 * match in which no node took the slot goes through (the predicate holds
 * for a capture that took no node), and so does every match whose name's
 * first bytes may begin one. The names are asked once per node, not once
 * per pattern that gates on it. Whether the diagnostics stay what they
 * were is 40-validate's (the corpus, both engines). The gates are asked
 * before a shape is matched where the node the gated capture takes is
 * known (the root, a root's child in a field): a shape they refuse there
 * is not tried. A pattern with no #qname-match? is gated on its #match?,
 * by its value's first bytes. */
#include "validate/internal.h"
#include "validate/validate.h"

#include "unit.h"

/* The test's names: a node's text, none for one that starts with '"'. */
struct names {
	const char *code;
	int asked;
};

static bool head_of_text(void *data, TSNode n, bool value, char head[2])
{
	(void)value;
	struct names *nm = data;
	nm->asked++;
	uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
	if (s >= e || nm->code[s] == '"')
		return false;
	head[0] = nm->code[s];
	head[1] = s + 1 < e ? nm->code[s + 1] : '\0';
	return true;
}

struct seen {
	struct names *names; /* the callback's data is the gates' too */
	int per_pattern[5];
	int with_string; /* pattern 2's matches that hold @s */
};

static int count_match(void *data, const TSQueryMatch *m)
{
	struct seen *sn = data;
	ck_assert_uint_lt(m->pattern_index, 5);
	sn->per_pattern[m->pattern_index]++;
	if (m->pattern_index == 2)
		sn->with_string += m->capture_count > 1;
	return 0;
}

static bool seen_head(void *data, TSNode n, bool value, char head[2])
{
	struct seen *sn = data;
	return head_of_text(sn->names, n, value, head);
}

/* Patterns 0 and 1 share a shape (one match, two patterns); pattern 2's
 * gated capture is optional. */
static const char query_src[] = "((call function: (_) @f) (#qname-match? @f \"^os\\\\.\"))\n"
                                "((call function: (_) @g) (#qname-match? @g \"^ev\"))\n"
                                "((call arguments: (argument_list (string)? @s)) @c)\n";

static const char code[] = "os.system(\"x\")\n"
                           "eval(1)\n"
                           "print()\n"
                           "os.path.join()\n"
                           "\"s\".join()\n";

START_TEST(gates_refuse_by_the_first_bytes_only)
{
	const struct val_lang *l = val_lang_find("python");
	ck_assert_ptr_nonnull(l);
	uint32_t off;
	TSQueryError qerr;
	TSQuery *q = ts_query_new(l->ts(), query_src, sizeof(query_src) - 1, &off, &qerr);
	ck_assert_msg(q != NULL, "query error %d at %u", (int)qerr, off);
	struct val_matcher *m = NULL;
	ck_assert_int_eq(val_matcher_new(l->ts(), q, query_src, sizeof(query_src) - 1, &m), 0);
	ck_assert_uint_eq(val_matcher_count(m), 3);
	TSParser *p = ts_parser_new();
	ck_assert(ts_parser_set_language(p, l->ts()));
	TSTree *t = ts_parser_parse_string(p, NULL, code, sizeof(code) - 1);
	struct val_flat flat = {0};
	ck_assert_int_eq(val_flat_read(&flat, ts_tree_root_node(t)), 0);

	struct val_re_prefix os, ev, x;
	val_re_prefix("^os\\.", &os);
	val_re_prefix("^ev", &ev);
	val_re_prefix("^x", &x);
	ck_assert(os.known && ev.known && x.known);
	uint16_t n;
	const uint16_t *caps = val_matcher_captures(m, 2, &n);
	ck_assert_uint_eq(n, 2);
	int s_slot = -1;
	for (uint16_t k = 0; k < n; k++) {
		uint32_t len;
		if (strcmp(ts_query_capture_name_for_id(q, caps[k], &len), "s") == 0)
			s_slot = k;
	}
	ck_assert_int_ge(s_slot, 0);
	struct val_gate gates[3] = {
	    {.slot = 0, .prefix = &os},
	    {.slot = 0, .prefix = &ev},
	    {.slot = s_slot, .prefix = &x},
	};

	/* Without gates every call is every pattern's match. */
	struct names nm = {.code = code};
	struct seen all = {.names = &nm};
	ck_assert_int_eq(val_matcher_run(m, &flat, NULL, NULL, seen_head, count_match, &all), 0);
	ck_assert_int_eq(all.per_pattern[0], 5);
	ck_assert_int_eq(all.per_pattern[1], 5);
	ck_assert_int_eq(all.per_pattern[2], 5);
	ck_assert_int_eq(all.with_string, 1);
	ck_assert_int_eq(nm.asked, 0);

	/* With them: os.system and os.path.join begin "os" (not "s".join,
	 * which has no name), eval begins "ev"; pattern 2 keeps the four calls
	 * where @s took no node and refuses os.system's "x", which has no name.
	 * Five function nodes and one string asked about, each once. */
	struct seen gated = {.names = &nm};
	ck_assert_int_eq(val_matcher_run(m, &flat, NULL, gates, seen_head, count_match, &gated), 0);
	ck_assert_int_eq(gated.per_pattern[0], 2);
	ck_assert_int_eq(gated.per_pattern[1], 1);
	ck_assert_int_eq(gated.per_pattern[2], 4);
	ck_assert_int_eq(gated.with_string, 0);
	ck_assert_int_eq(nm.asked, 6);

	/* Gates without a question to ask are no gates. */
	struct seen unasked = {.names = &nm};
	ck_assert_int_eq(val_matcher_run(m, &flat, NULL, gates, NULL, count_match, &unasked), 0);
	ck_assert_int_eq(unasked.per_pattern[0] + unasked.per_pattern[1], 10);

	val_flat_free(&flat);
	ts_tree_delete(t);
	ts_parser_delete(p);
	val_matcher_free(m);
	ts_query_delete(q);
}
END_TEST

/* Shapes asked before they are matched: a gate whose node is the root or
 * a child of the root in a field refuses the whole shape at a node when
 * it refuses every node there that the shape could take; a capture that a
 * match may leave empty (the optional @h) is never asked first. */
static const char pre_src[] = "((call function: (_) @f) (#qname-match? @f \"^os\\\\.\"))\n"
                              "((call function: (_) @g) (#qname-match? @g \"^ev\"))\n"
                              "((call arguments: (argument_list) function: (_)? @h))\n"
                              "((call function: (identifier) @i))\n"
                              "((call) @c)\n";

static int slot_of(const struct val_matcher *m, const TSQuery *q, uint32_t pattern,
                   const char *name)
{
	uint16_t n;
	const uint16_t *caps = val_matcher_captures(m, pattern, &n);
	for (uint16_t k = 0; k < n; k++) {
		uint32_t len;
		if (strcmp(ts_query_capture_name_for_id(q, caps[k], &len), name) == 0)
			return k;
	}
	return -1;
}

START_TEST(shapes_whose_gates_refuse_are_not_tried)
{
	const struct val_lang *l = val_lang_find("python");
	uint32_t off;
	TSQueryError qerr;
	TSQuery *q = ts_query_new(l->ts(), pre_src, sizeof(pre_src) - 1, &off, &qerr);
	ck_assert_msg(q != NULL, "query error %d at %u", (int)qerr, off);
	struct val_matcher *m = NULL;
	ck_assert_int_eq(val_matcher_new(l->ts(), q, pre_src, sizeof(pre_src) - 1, &m), 0);
	ck_assert_uint_eq(val_matcher_count(m), 5);
	TSParser *p = ts_parser_new();
	ck_assert(ts_parser_set_language(p, l->ts()));
	TSTree *t = ts_parser_parse_string(p, NULL, code, sizeof(code) - 1);
	struct val_flat flat = {0};
	ck_assert_int_eq(val_flat_read(&flat, ts_tree_root_node(t)), 0);

	struct val_re_prefix os, ev, zz, pr;
	val_re_prefix("^os\\.", &os);
	val_re_prefix("^ev", &ev);
	val_re_prefix("^zz", &zz);
	val_re_prefix("^pr", &pr);
	struct val_gate gates[5] = {
	    {.slot = slot_of(m, q, 0, "f"), .prefix = &os},
	    {.slot = slot_of(m, q, 1, "g"), .prefix = &ev},
	    {.slot = slot_of(m, q, 2, "h"), .prefix = &zz},
	    {.slot = slot_of(m, q, 3, "i"), .prefix = &pr},
	    {.slot = slot_of(m, q, 4, "c"), .prefix = &ev},
	};
	for (int i = 0; i < 5; i++)
		ck_assert_int_ge(gates[i].slot, 0);

	/* Without gates: four shapes at each of the five calls. */
	struct names nm = {.code = code};
	struct seen all = {.names = &nm};
	uint64_t tries = val_match_tries;
	ck_assert_int_eq(val_matcher_run(m, &flat, NULL, NULL, seen_head, count_match, &all), 0);
	ck_assert_uint_eq(val_match_tries - tries, 20);
	int want_all[5] = {5, 5, 5, 2, 5};
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(all.per_pattern[i], want_all[i]);

	/* With them: the shape of 0 and 1 at os.system, eval and
	 * os.path.join; pattern 2's @h may take no node, so it is tried at
	 * every call and each match goes through; 3 only where the function is
	 * an identifier whose name begins "pr" (print); 4 where the call's own
	 * name begins "ev". */
	struct seen gated = {.names = &nm};
	tries = val_match_tries;
	ck_assert_int_eq(val_matcher_run(m, &flat, NULL, gates, seen_head, count_match, &gated), 0);
	ck_assert_uint_eq(val_match_tries - tries, 3 + 5 + 1 + 1);
	int want[5] = {2, 1, 5, 1, 1};
	for (int i = 0; i < 5; i++)
		ck_assert_msg(gated.per_pattern[i] == want[i], "pattern %d: %d matches, not %d", i,
		              gated.per_pattern[i], want[i]);

	/* A pattern left out by the profile does not keep its shape tried. */
	bool skip[5] = {false, true, false, false, false};
	struct seen skipped = {.names = &nm};
	tries = val_match_tries;
	ck_assert_int_eq(val_matcher_run(m, &flat, skip, gates, seen_head, count_match, &skipped),
	                 0);
	ck_assert_uint_eq(val_match_tries - tries, 2 + 5 + 1 + 1);
	ck_assert_int_eq(skipped.per_pattern[0], 2);
	ck_assert_int_eq(skipped.per_pattern[1], 0);

	/* Only the nodes a shape could take are asked about: pattern 3 alone
	 * asks about eval and print, not about the attributes. */
	bool only3[5] = {true, true, true, false, true};
	struct names nm3 = {.code = code};
	struct seen alone = {.names = &nm3};
	ck_assert_int_eq(val_matcher_run(m, &flat, only3, gates, seen_head, count_match, &alone),
	                 0);
	ck_assert_int_eq(alone.per_pattern[3], 1);
	ck_assert_int_eq(nm3.asked, 2);

	val_flat_free(&flat);
	ts_tree_delete(t);
	ts_parser_delete(p);
	val_matcher_free(m);
	ts_query_delete(q);
}
END_TEST

/* A gate of a #match? asks for the value's first bytes, a gate of a
 * #qname-match? for the name's: two questions about one node, each asked. */
static bool kind_head(void *data, TSNode n, bool value, char head[2])
{
	struct seen *sn = data;
	sn->names->asked++;
	if (value)
		return head_of_text(sn->names, n, value, head);
	head[0] = head[1] = 'z';
	return true;
}

static const char kind_src[] = "((call function: (_) @f))\n"
                               "((call function: (identifier) @i))\n";

START_TEST(name_and_value_gates_ask_apart)
{
	const struct val_lang *l = val_lang_find("python");
	uint32_t off;
	TSQueryError qerr;
	TSQuery *q = ts_query_new(l->ts(), kind_src, sizeof(kind_src) - 1, &off, &qerr);
	ck_assert_msg(q != NULL, "query error %d at %u", (int)qerr, off);
	struct val_matcher *m = NULL;
	ck_assert_int_eq(val_matcher_new(l->ts(), q, kind_src, sizeof(kind_src) - 1, &m), 0);
	TSParser *p = ts_parser_new();
	ck_assert(ts_parser_set_language(p, l->ts()));
	TSTree *t = ts_parser_parse_string(p, NULL, code, sizeof(code) - 1);
	struct val_flat flat = {0};
	ck_assert_int_eq(val_flat_read(&flat, ts_tree_root_node(t)), 0);
	struct val_re_prefix os, ev;
	val_re_prefix("^os", &os);
	val_re_prefix("^ev", &ev);
	struct val_gate gates[2] = {
	    {.slot = slot_of(m, q, 0, "f"), .prefix = &os},
	    {.slot = slot_of(m, q, 1, "i"), .prefix = &ev, .value = true},
	};
	/* Every name is "zz": no match of 0; eval's value begins "ev". */
	struct names nm = {.code = code};
	struct seen sn = {.names = &nm};
	ck_assert_int_eq(val_matcher_run(m, &flat, NULL, gates, kind_head, count_match, &sn), 0);
	ck_assert_int_eq(sn.per_pattern[0], 0);
	ck_assert_int_eq(sn.per_pattern[1], 1);
	val_flat_free(&flat);
	ts_tree_delete(t);
	ts_parser_delete(p);
	val_matcher_free(m);
	ts_query_delete(q);
}
END_TEST

/* A validator without CPython, and its diagnostics for code. */
static struct validator *make(const char *config_json)
{
	json_object *config = json_tokener_parse(config_json);
	struct validator *v = NULL;
	ck_assert_int_eq(val_new(config, &v), 0);
	json_object_put(config);
	return v;
}

static json_object *check(struct validator *v, const char *lang, const char *src,
                          const char *profile, enum pos_encoding enc, enum val_verdict *verdict)
{
	json_object *diags = NULL;
	char detail[256] = "";
	enum val_verdict vd;
	int r =
	    val_check(v, lang, src, strlen(src), profile, enc, &diags, &vd, detail, sizeof(detail));
	ck_assert_msg(r == 0, "val_check: %d %s", r, detail);
	if (verdict)
		*verdict = vd;
	return diags;
}

/* Shapes matched by a check of n lines of bare names: each name is an
 * identifier that (identifier) @PY-DUNDER-WALK's #match? refuses by its
 * first bytes, and the shape is not matched there (match.c's gates, asked
 * before the shapes), so the count does not grow with the lines. */
static uint64_t tries_for_names(struct validator *v, int n)
{
	static char names[4096];
	size_t len = 0;
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(names + len, sizeof(names) - len, "name%d\n", i);
	uint64_t before = val_match_tries;
	json_object_put(check(v, "python", names, "standard", POS_UTF16, NULL));
	return val_match_tries - before;
}

START_TEST(refused_names_are_not_matched)
{
	struct validator *v = make("{\"python\": false}");
	uint64_t one = tries_for_names(v, 1), many = tries_for_names(v, 50);
	ck_assert_msg(one == many, "%lu shapes for 1 name, %lu for 50", (unsigned long)one,
	              (unsigned long)many);
	val_free(v);
}
END_TEST

/* A #match? is gated on the first bytes of the value it tests: a string's
 * value after its escapes, not its source ("\\x5f_..." is "__..."). */
START_TEST(value_gates_read_the_value)
{
	struct validator *v = make("{\"python\": false}");
	json_object *diags = check(v, "python",
	                           "x = \"\\x5f_globals__\"\n"
	                           "y = \"__glob\" \"als__\"\n"
	                           "z = '__nothing__'\n",
	                           "standard", POS_UTF16, NULL);
	int dunder = 0;
	for (size_t i = 0; i < json_object_array_length(diags); i++) {
		json_object *d = json_object_array_get_idx(diags, i), *c, *r, *st, *ln;
		if (!json_object_object_get_ex(d, "code", &c) ||
		    strcmp(json_object_get_string(c), "PY-DUNDER-WALK") != 0)
			continue;
		dunder++;
		ck_assert(json_object_object_get_ex(d, "range", &r) &&
		          json_object_object_get_ex(r, "start", &st) &&
		          json_object_object_get_ex(st, "line", &ln));
		ck_assert_int_eq(json_object_get_int(ln), 0);
	}
	ck_assert_int_eq(dunder, 1);
	json_object_put(diags);
	val_free(v);
}
END_TEST

static Suite *gate_suite(void)
{
	Suite *s = suite_create("gate");
	TCase *tc = tcase_create("gate");
	tcase_add_test(tc, gates_refuse_by_the_first_bytes_only);
	tcase_add_test(tc, shapes_whose_gates_refuse_are_not_tried);
	tcase_add_test(tc, name_and_value_gates_ask_apart);
	tcase_add_test(tc, refused_names_are_not_matched);
	tcase_add_test(tc, value_gates_read_the_value);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(gate_suite)
