/* test_ts_table.c: validate/ts_table.c, the grammar's parse table laid out
 * whole for the parser. The proof that the parser behaves the same: the
 * runtime reads the table only through ts_language_lookup() (language.h
 * of the pinned runtime, included here), and for every grammar, every
 * state and every symbol it answers the same from the copy as from the
 * grammar's own language; everything else in the copy is the grammar's.
 * A grammar written by hand puts a symbol in two groups of a small state
 * (the first one's value is the answer), and the corpus parses to the
 * same tree text with either language. */
#include "validate/internal.h"

#include <dirent.h>
#include <tree_sitter/parser.h>

/* The pinned runtime's internal header (server/validate/module.mk). */
#include <src/language.h>

#include "unit.h"

static void same_lookups(const TSLanguage *own, const TSLanguage *whole, const char *what)
{
	ck_assert_uint_eq(whole->large_state_count, whole->state_count);
	for (uint32_t s = 0; s < own->state_count; s++)
		for (uint32_t y = 0; y < own->symbol_count; y++) {
			uint16_t a = ts_language_lookup(own, (TSStateId)s, (TSSymbol)y);
			uint16_t b = ts_language_lookup(whole, (TSStateId)s, (TSSymbol)y);
			ck_assert_msg(a == b, "%s: state %u symbol %u: %u, whole %u", what, s, y, a,
			              b);
		}
}

/* Every field but the two tables' layout is the grammar's own. */
static void same_rest(const TSLanguage *own, const TSLanguage *w)
{
	ck_assert(w->version == own->version && w->symbol_count == own->symbol_count &&
	          w->alias_count == own->alias_count && w->token_count == own->token_count &&
	          w->external_token_count == own->external_token_count &&
	          w->state_count == own->state_count &&
	          w->production_id_count == own->production_id_count &&
	          w->field_count == own->field_count &&
	          w->max_alias_sequence_length == own->max_alias_sequence_length);
	ck_assert(
	    w->small_parse_table == own->small_parse_table &&
	    w->small_parse_table_map == own->small_parse_table_map &&
	    w->parse_actions == own->parse_actions && w->symbol_names == own->symbol_names &&
	    w->field_names == own->field_names && w->field_map_slices == own->field_map_slices &&
	    w->field_map_entries == own->field_map_entries &&
	    w->symbol_metadata == own->symbol_metadata &&
	    w->public_symbol_map == own->public_symbol_map && w->alias_map == own->alias_map &&
	    w->alias_sequences == own->alias_sequences && w->lex_modes == own->lex_modes &&
	    w->lex_fn == own->lex_fn && w->keyword_lex_fn == own->keyword_lex_fn &&
	    w->keyword_capture_token == own->keyword_capture_token &&
	    w->primary_state_ids == own->primary_state_ids);
	ck_assert(memcmp(&w->external_scanner, &own->external_scanner,
	                 sizeof(own->external_scanner)) == 0);
}

START_TEST(every_grammar_looks_up_the_same)
{
	size_t copies = 0;
	for (size_t i = 0; i < val_langs_count; i++) {
		const TSLanguage *own = val_langs[i]->ts();
		const TSLanguage *w = val_ts_whole(own);
		size_t bytes = (size_t)own->state_count * own->symbol_count * 2u;
		/* Python's and JavaScript's fit the cap, bash's does not. */
		if (bytes > (2u << 20)) {
			ck_assert_ptr_null(w);
			ck_assert_ptr_eq(val_ts_language(val_langs[i]), own);
			continue;
		}
		ck_assert_msg(w != NULL, "%s: no whole table", val_langs[i]->name);
		same_rest(own, w);
		same_lookups(own, w, val_langs[i]->name);
		val_ts_whole_free(w);
		/* The parser's language: the copy, made once. */
		const TSLanguage *p = val_ts_language(val_langs[i]);
		ck_assert_ptr_ne(p, own);
		ck_assert_ptr_eq(val_ts_language(val_langs[i]), p);
		same_rest(own, p);
		copies++;
	}
	ck_assert_uint_eq(copies, 2);
	ck_assert_ptr_ne(val_ts_language(val_lang_find("python")), val_lang_find("python")->ts());
}
END_TEST

/* A small state that lists a symbol in two groups: the first group's
 * value, even 0, is what the runtime answers. */
START_TEST(a_symbol_in_two_groups_has_the_first_value)
{
	static const uint16_t large[] = {0, 3, 4, 0};
	static const uint16_t small[] = {
	    /* state 1 */ 2, 7, 2, 1, 2, 9, 2, 2, 3,
	    /* state 2 */ 2, 0, 1, 1, 5, 2, 1, 3,
	};
	static const uint32_t map[] = {0, 9};
	TSLanguage l = {
	    .version = 14,
	    .symbol_count = 4,
	    .token_count = 4,
	    .state_count = 3,
	    .large_state_count = 1,
	    .parse_table = large,
	    .small_parse_table = small,
	    .small_parse_table_map = map,
	};
	const TSLanguage *w = val_ts_whole(&l);
	ck_assert_ptr_nonnull(w);
	same_lookups(&l, w, "by hand");
	ck_assert_uint_eq(ts_language_lookup(w, 1, 2), 7);
	ck_assert_uint_eq(ts_language_lookup(w, 2, 1), 0);
	ck_assert_uint_eq(ts_language_lookup(w, 2, 3), 5);
	ck_assert_uint_eq(ts_language_lookup(w, 0, 2), 4);
	val_ts_whole_free(w);
}
END_TEST

/* A check parses with the copy: the first Python check of this process
 * (each test runs in its own) makes it. */
START_TEST(a_check_parses_with_the_whole_table)
{
	const struct val_lang *py = val_lang_find("python");
	ck_assert_ptr_null(val_ts_made(py));
	json_object *config = json_tokener_parse("{\"python\": false}");
	struct validator *v = NULL;
	ck_assert_int_eq(val_new(config, &v), 0);
	json_object_put(config);
	json_object *diags = NULL;
	enum val_verdict vd;
	char detail[256] = "";
	const char *code = "import os\nos.system('ls')\n";
	ck_assert_int_eq(val_check(v, "python", code, strlen(code), "standard", POS_UTF16, &diags,
	                           &vd, detail, sizeof(detail)),
	                 0);
	ck_assert_int_eq(vd, VAL_DENY);
	json_object_put(diags);
	val_free(v);
	const TSLanguage *made = val_ts_made(py);
	ck_assert_ptr_nonnull(made);
	ck_assert_ptr_ne(made, py->ts());
	ck_assert_uint_eq(made->large_state_count, made->state_count);
}
END_TEST

static const char *lang_of(const char *name)
{
	const char *dot = strrchr(name, '.');
	if (!dot)
		return NULL;
	if (strcmp(dot, ".py") == 0)
		return "python";
	if (strcmp(dot, ".sh") == 0)
		return "bash";
	if (strcmp(dot, ".js") == 0)
		return "javascript";
	return NULL;
}

static char *tree_text(const TSLanguage *l, const char *code, size_t len)
{
	TSParser *p = ts_parser_new();
	ck_assert(ts_parser_set_language(p, l));
	TSTree *t = ts_parser_parse_string(p, NULL, code, (uint32_t)len);
	ck_assert_ptr_nonnull(t);
	char *s = ts_node_string(ts_tree_root_node(t));
	ts_tree_delete(t);
	ts_parser_delete(p);
	return s;
}

static size_t files;

static void same_trees_in(const char *dir)
{
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (e->d_type == DT_DIR) {
			same_trees_in(path);
			continue;
		}
		const char *lang = lang_of(e->d_name);
		if (!lang)
			continue;
		FILE *f = fopen(path, "rb");
		ck_assert_ptr_nonnull(f);
		static char code[1u << 20];
		size_t n = fread(code, 1, sizeof(code), f);
		fclose(f);
		const struct val_lang *vl = val_lang_find(lang);
		char *a = tree_text(vl->ts(), code, n);
		char *b = tree_text(val_ts_language(vl), code, n);
		ck_assert_msg(strcmp(a, b) == 0, "%s: the trees differ", path);
		/* A cut copy: error recovery, several stack versions. */
		char *c = tree_text(vl->ts(), code, n / 2);
		char *dd = tree_text(val_ts_language(vl), code, n / 2);
		ck_assert_msg(strcmp(c, dd) == 0, "%s cut: the trees differ", path);
		free(a);
		free(b);
		free(c);
		free(dd);
		files++;
	}
	closedir(d);
}

START_TEST(the_corpus_parses_to_the_same_trees)
{
	same_trees_in("tests/validate/corpus");
	ck_assert_uint_gt(files, 100);
}
END_TEST

static Suite *ts_table_suite(void)
{
	Suite *s = suite_create("ts_table");
	TCase *tc = tcase_create("table");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, every_grammar_looks_up_the_same);
	tcase_add_test(tc, a_symbol_in_two_groups_has_the_first_value);
	tcase_add_test(tc, a_check_parses_with_the_whole_table);
	tcase_add_test(tc, the_corpus_parses_to_the_same_trees);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(ts_table_suite)
