/* test_buf.c: the capped buffer (core/buf.c): the cap is hard, failures
 * append nothing, consume/steal/reset keep the NUL terminator. */
#include "core/buf.h"

#include "unit.h"

START_TEST(append_and_cap)
{
	struct buf b;
	buf_init(&b, 8);
	ck_assert_ptr_null(b.data);
	ck_assert_int_eq(buf_append(&b, "abcd", 4), 0);
	ck_assert_int_eq(buf_append(&b, "efgh", 4), 0);
	ck_assert_str_eq(b.data, "abcdefgh");
	ck_assert_int_eq(buf_append(&b, "i", 1), -ENOBUFS);
	ck_assert_uint_eq(b.len, 8);
	ck_assert_str_eq(b.data, "abcdefgh");
	ck_assert_int_eq(buf_append(&b, "", 0), 0);
	buf_release(&b);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.max, 8); /* the cap survives a release */
}
END_TEST

START_TEST(cap_overflow_sizes)
{
	struct buf b;
	buf_init(&b, 100);
	ck_assert_int_eq(buf_append(&b, "x", 1), 0);
	/* A length that would wrap size_t is refused, not wrapped. */
	ck_assert_int_eq(buf_append(&b, "x", (size_t)-1), -ENOBUFS);
	ck_assert_int_eq(buf_append(&b, "x", (size_t)-1 - 5), -ENOBUFS);
	ck_assert_uint_eq(b.len, 1);
	buf_release(&b);
}
END_TEST

START_TEST(printf_and_grow)
{
	struct buf b;
	buf_init(&b, 1 << 20);
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(buf_printf(&b, "%d,", i), 0);
	ck_assert_uint_eq(b.len, strlen(b.data));
	ck_assert(strncmp(b.data, "0,1,2,", 6) == 0);
	ck_assert_ptr_nonnull(strstr(b.data, ",999,"));
	buf_release(&b);
	buf_init(&b, 5);
	ck_assert_int_eq(buf_printf(&b, "%s", "123456"), -ENOBUFS);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_int_eq(buf_printf(&b, "%s", "12345"), 0);
	ck_assert_str_eq(b.data, "12345");
	buf_release(&b);
}
END_TEST

START_TEST(consume_reset_steal)
{
	struct buf b;
	buf_init(&b, 100);
	buf_append(&b, "hello world", 11);
	buf_consume(&b, 6);
	ck_assert_str_eq(b.data, "world");
	ck_assert_uint_eq(b.len, 5);
	buf_consume(&b, 50);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(b.data, "");
	buf_append(&b, "abc", 3);
	buf_reset(&b);
	ck_assert_str_eq(b.data, "");
	buf_append(&b, "xyz", 3);
	size_t len = 0;
	char *s = buf_steal(&b, &len);
	ck_assert_str_eq(s, "xyz");
	ck_assert_uint_eq(len, 3);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_eq(b.max, 100);
	free(s);
	/* Stealing an empty buffer still gives a string to free. */
	s = buf_steal(&b, &len);
	ck_assert_str_eq(s, "");
	ck_assert_uint_eq(len, 0);
	free(s);
	/* Consuming and resetting a never-used buffer is harmless. */
	buf_consume(&b, 3);
	buf_reset(&b);
	buf_release(&b);
}
END_TEST

START_TEST(binary_data)
{
	struct buf b;
	buf_init(&b, 100);
	ck_assert_int_eq(buf_append(&b, "a\0b", 3), 0);
	ck_assert_uint_eq(b.len, 3);
	ck_assert_mem_eq(b.data, "a\0b\0", 4);
	buf_release(&b);
}
END_TEST

static Suite *buf_suite(void)
{
	Suite *s = suite_create("buf");
	TCase *tc = tcase_create("buf");
	tcase_add_test(tc, append_and_cap);
	tcase_add_test(tc, cap_overflow_sizes);
	tcase_add_test(tc, printf_and_grow);
	tcase_add_test(tc, consume_reset_steal);
	tcase_add_test(tc, binary_data);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN(buf_suite)
