/* The DNS listener's record table: one record per (session, name, type, decision) per window,
 * the count of answers left out, a full table, a key forgotten after a failed write. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>

#include "dns/dedup.h"

#define W 60000u

static void test_window(void **state)
{
	(void)state;
	struct dns_dedup *d = dns_dedup_new(16, W);
	uint64_t rep;
	assert_int_equal(dns_dedup_check(d, "s", "a.test", 1, 1, 0, &rep), DNS_DEDUP_WRITE);
	assert_int_equal(rep, 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(dns_dedup_check(d, "s", "a.test", 1, 1, 1000, &rep), DNS_DEDUP_SKIP);
	/* Another type, decision, session or name is another key. */
	assert_int_equal(dns_dedup_check(d, "s", "a.test", 28, 1, 1000, &rep), DNS_DEDUP_WRITE);
	assert_int_equal(dns_dedup_check(d, "s", "a.test", 1, 0, 1000, &rep), DNS_DEDUP_WRITE);
	assert_int_equal(dns_dedup_check(d, "t", "a.test", 1, 1, 1000, &rep), DNS_DEDUP_WRITE);
	assert_int_equal(dns_dedup_check(d, "s", "b.test", 1, 1, 1000, &rep), DNS_DEDUP_WRITE);
	/* "s" + "a.test" is not "sa" + ".test". */
	assert_int_equal(dns_dedup_check(d, "sa", ".test", 1, 1, 1000, &rep), DNS_DEDUP_WRITE);
	assert_int_equal(dns_dedup_count(d), 6);
	/* The window over: written again, with the five left out. */
	assert_int_equal(dns_dedup_check(d, "s", "a.test", 1, 1, W - 1, &rep), DNS_DEDUP_SKIP);
	assert_int_equal(dns_dedup_check(d, "s", "a.test", 1, 1, W, &rep), DNS_DEDUP_WRITE);
	assert_int_equal(rep, 6);
	assert_int_equal(dns_dedup_check(d, "s", "a.test", 1, 1, W + 1, &rep), DNS_DEDUP_SKIP);
	dns_dedup_free(d);
}

static void test_full(void **state)
{
	(void)state;
	struct dns_dedup *d = dns_dedup_new(100, W);
	uint64_t rep;
	char n[32];
	for (int i = 0; i < 100; i++) {
		snprintf(n, sizeof n, "n%d.test", i);
		assert_int_equal(dns_dedup_check(d, "s", n, 1, 0, (uint64_t)i, &rep),
			DNS_DEDUP_WRITE);
	}
	/* Full, every key within its window: new keys are left out and counted. */
	for (int i = 0; i < 7; i++) {
		snprintf(n, sizeof n, "flood%d.test", i);
		assert_int_equal(dns_dedup_check(d, "s", n, 1, 0, 1000, &rep), DNS_DEDUP_FULL);
	}
	assert_int_equal(dns_dedup_take_overflow(d), 7);
	assert_int_equal(dns_dedup_take_overflow(d), 0);
	/* Known keys are still recognised. */
	assert_int_equal(dns_dedup_check(d, "s", "n5.test", 1, 0, 1000, &rep), DNS_DEDUP_SKIP);
	/* Once the oldest window is over, it makes room. */
	assert_int_equal(dns_dedup_check(d, "s", "late.test", 1, 0, W, &rep), DNS_DEDUP_WRITE);
	assert_int_equal(dns_dedup_check(d, "s", "late2.test", 1, 0, W, &rep), DNS_DEDUP_FULL);
	assert_int_equal(dns_dedup_check(d, "s", "late2.test", 1, 0, W + 1, &rep), DNS_DEDUP_WRITE);
	assert_int_equal(dns_dedup_count(d), 100);
	dns_dedup_free(d);
}

static void test_forget(void **state)
{
	(void)state;
	struct dns_dedup *d = dns_dedup_new(0, 0);
	uint64_t rep;
	assert_int_equal(dns_dedup_check(d, "s", "a.test", 1, 1, 0, &rep), DNS_DEDUP_WRITE);
	dns_dedup_forget(d, "s", "a.test", 1, 1);
	assert_int_equal(dns_dedup_check(d, "s", "a.test", 1, 1, 1, &rep), DNS_DEDUP_WRITE);
	dns_dedup_forget(d, "s", "nothing.test", 1, 1);
	assert_int_equal(dns_dedup_count(d), 1);
	dns_dedup_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_forget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
