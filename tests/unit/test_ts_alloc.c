/* test_ts_alloc.c: validate/ts_alloc.c, tree-sitter's allocator in kiln:
 * a freed small block is handed out again for its size class (and only
 * that class), zeroed when calloc asks, a thread holds no more than its
 * cap, big blocks go straight back to malloc, and a check's parse really
 * goes through it. Each test runs in its own process (check forks), so
 * each starts with an empty cache. */
#include "validate/internal.h"

#include "unit.h"

/* The runtime's allocator hooks, which tree-sitter calls for everything. */
extern void *(*ts_current_malloc)(size_t);
extern void *(*ts_current_calloc)(size_t, size_t);
extern void (*ts_current_free)(void *);

START_TEST(freed_block_is_reused_in_its_class)
{
	val_ts_alloc_install();
	void *a = ts_current_malloc(40);
	ck_assert_ptr_nonnull(a);
	ts_current_free(a);
	ck_assert_uint_eq(val_ts_alloc_cached(), 1);
	/* 33..48 bytes are one class; 49 is the next one. */
	void *other = ts_current_malloc(49);
	ck_assert_ptr_ne(other, a);
	void *b = ts_current_malloc(33);
	ck_assert_ptr_eq(b, a);
	ck_assert_uint_eq(val_ts_alloc_cached(), 0);
	memset(b, 1, 48); /* the whole class is usable */
	ts_current_free(b);
	ts_current_free(other);
	ck_assert_uint_eq(val_ts_alloc_cached(), 2);
	val_ts_alloc_flush();
	ck_assert_uint_eq(val_ts_alloc_cached(), 0);
}
END_TEST

START_TEST(calloc_zeroes_a_reused_block)
{
	val_ts_alloc_install();
	unsigned char *a = ts_current_malloc(64);
	memset(a, 0xab, 64);
	ts_current_free(a);
	unsigned char *c = ts_current_calloc(8, 8);
	ck_assert_ptr_eq(c, a);
	for (int i = 0; i < 64; i++)
		ck_assert_uint_eq(c[i], 0);
	ts_current_free(c);
	val_ts_alloc_flush();
}
END_TEST

START_TEST(cache_holds_at_most_its_cap)
{
	val_ts_alloc_install();
	enum { N = VAL_TS_CACHE_MAX + 100 };
	void **p = calloc(N, sizeof(*p));
	for (int i = 0; i < N; i++)
		p[i] = ts_current_malloc(32);
	for (int i = 0; i < N; i++)
		ts_current_free(p[i]);
	ck_assert_uint_eq(val_ts_alloc_cached(), VAL_TS_CACHE_MAX);
	free(p);
	val_ts_alloc_flush();
}
END_TEST

START_TEST(big_blocks_bypass_the_cache)
{
	val_ts_alloc_install();
	/* Up to 271 usable bytes still serve the 256-byte class. */
	ts_current_free(ts_current_malloc(272));
	ts_current_free(ts_current_malloc(4096));
	ck_assert_uint_eq(val_ts_alloc_cached(), 0);
	ts_current_free(NULL);
	ck_assert_uint_eq(val_ts_alloc_cached(), 0);
}
END_TEST

START_TEST(a_check_parses_through_the_cache)
{
	json_object *config = json_tokener_parse("{\"python\": false}");
	struct validator *v;
	ck_assert_int_ge(val_new(config, &v), 0);
	json_object_put(config);
	const char *code = "import os\nfor i in range(3):\n    print(i, os.getcwd())\n";
	json_object *diags;
	enum val_verdict verdict;
	char detail[256];
	ck_assert_int_ge(val_check(v, "python", code, strlen(code), NULL, POS_UTF16, &diags,
	                           &verdict, detail, sizeof(detail)),
	                 0);
	json_object_put(diags);
	/* The tree, freed at the end of the check, is in the cache now. */
	size_t held = val_ts_alloc_cached();
	ck_assert_uint_gt(held, 10);
	/* A second check takes its blocks from there: were they not reused,
	 * it would add as many again. */
	ck_assert_int_ge(val_check(v, "python", code, strlen(code), NULL, POS_UTF16, &diags,
	                           &verdict, detail, sizeof(detail)),
	                 0);
	json_object_put(diags);
	ck_assert_uint_lt(val_ts_alloc_cached(), held + held / 2);
	val_free(v);
	val_ts_alloc_flush();
}
END_TEST

static Suite *ts_alloc_suite(void)
{
	Suite *s = suite_create("ts_alloc");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, freed_block_is_reused_in_its_class);
	tcase_add_test(tc, calloc_zeroes_a_reused_block);
	tcase_add_test(tc, cache_holds_at_most_its_cap);
	tcase_add_test(tc, big_blocks_bypass_the_cache);
	tcase_add_test(tc, a_check_parses_through_the_cache);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(ts_alloc_suite)
