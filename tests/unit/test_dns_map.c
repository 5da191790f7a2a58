/* Mapped answers: one 198.18.0.0/15 address per (session, name), kept while in use, reused only
 * once free, never two live names on one address; the whole pool of 131,072 is exercised. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "dns/map.h"

#define TTL 60u
#define TTL_MS (TTL * 1000u)

static const char *text(const uint8_t a[4], char *buf)
{
	inet_ntop(AF_INET, a, buf, INET_ADDRSTRLEN);
	return buf;
}

static void name_of(unsigned i, char *buf, size_t cap)
{
	snprintf(buf, cap, "n%u.test", i);
}

/* Takes every address of the pool for names n0..n131071 of session s at now. */
static void fill(struct dns_map *m, const char *s, uint64_t now, unsigned from)
{
	for (unsigned i = from; i < from + DNS_MAP_POOL; i++) {
		char n[32];
		uint8_t a[4];
		name_of(i, n, sizeof n);
		if (dns_map_get(m, s, n, now, a) != 0)
			fail_msg("get %s failed after %u names", n, i - from);
	}
}

static void test_one_per_name(void **state)
{
	(void)state;
	struct dns_map *m = dns_map_new(TTL);
	assert_non_null(m);
	assert_int_equal(dns_map_ttl(m), TTL);
	uint8_t a[4], b[4], c[4], d[4];
	char t[INET_ADDRSTRLEN];
	assert_int_equal(dns_map_get(m, "default", "a.test", 0, a), 0);
	assert_string_equal(text(a, t), "198.18.0.1");
	assert_true(dns_map_in_pool(a));
	assert_int_equal(dns_map_get(m, "default", "a.test", 10, b), 0);
	assert_memory_equal(a, b, 4);
	assert_int_equal(dns_map_get(m, "default", "b.test", 10, c), 0);
	assert_memory_not_equal(a, c, 4);
	/* Another session asking for the same name gets its own address. */
	assert_int_equal(dns_map_get(m, "agent", "a.test", 10, d), 0);
	assert_memory_not_equal(a, d, 4);
	assert_memory_not_equal(c, d, 4);
	assert_int_equal(dns_map_count(m), 3);

	const char *s, *n;
	assert_int_equal(dns_map_lookup(m, a, 20, &s, &n), 0);
	assert_string_equal(s, "default");
	assert_string_equal(n, "a.test");
	assert_int_equal(dns_map_lookup(m, d, 20, &s, &n), 0);
	assert_string_equal(s, "agent");
	assert_string_equal(n, "a.test");
	/* Addresses outside the pool, and unused ones, stand for nothing. */
	const uint8_t outside[4] = {198, 20, 0, 1}, unused[4] = {198, 19, 255, 254},
		      below[4] = {198, 17, 255, 255};
	assert_false(dns_map_in_pool(outside));
	assert_false(dns_map_in_pool(below));
	assert_true(dns_map_in_pool(unused));
	assert_int_equal(dns_map_lookup(m, outside, 20, &s, &n), -1);
	assert_int_equal(dns_map_lookup(m, unused, 20, &s, &n), -1);
	assert_int_equal(dns_map_ref(m, unused, 20), -1);
	dns_map_free(m);
}

static void test_exhaustion_and_reuse(void **state)
{
	(void)state;
	struct dns_map *m = dns_map_new(TTL);
	fill(m, "default", 0, 0);
	assert_int_equal(dns_map_count(m), DNS_MAP_POOL);
	assert_int_equal(dns_map_live(m, 0), DNS_MAP_POOL);
	uint8_t a[4], first[4] = {198, 18, 0, 1}, last[4] = {198, 18, 0, 0};
	char t[INET_ADDRSTRLEN];
	/* 198.18.0.0 is handed out last. */
	const char *s, *n;
	assert_int_equal(dns_map_lookup(m, last, 0, &s, &n), 0);
	assert_string_equal(n, "n131071.test");

	/* Every address is live: a new name fails, an old one still answers. */
	assert_int_equal(dns_map_get(m, "default", "new.test", TTL_MS - 1, a), -1);
	assert_int_equal(dns_map_get(m, "default", "n5.test", TTL_MS - 1, a), 0);
	assert_string_equal(text(a, t), "198.18.0.6");

	/* Once the TTL has passed, the oldest free address (198.18.0.1) goes to the new name, and
	 * stands for it alone. */
	assert_int_equal(dns_map_get(m, "default", "new.test", TTL_MS, a), 0);
	assert_memory_equal(a, first, 4);
	assert_int_equal(dns_map_lookup(m, first, TTL_MS, &s, &n), 0);
	assert_string_equal(n, "new.test");
	/* n5 was answered again at TTL_MS - 1: still live, never taken back. */
	uint8_t n5[4] = {198, 18, 0, 6};
	for (unsigned i = 0; i < 1000; i++) {
		char nn[32];
		snprintf(nn, sizeof nn, "more%u.test", i);
		assert_int_equal(dns_map_get(m, "default", nn, TTL_MS, a), 0);
		assert_memory_not_equal(a, n5, 4);
	}
	assert_int_equal(dns_map_lookup(m, n5, TTL_MS, &s, &n), 0);
	assert_string_equal(n, "n5.test");
	dns_map_free(m);
}

static void test_ref_keeps_alive(void **state)
{
	(void)state;
	uint8_t held[4], a[4];
	struct dns_map *m = dns_map_new(TTL);
	assert_int_equal(dns_map_get(m, "default", "held.test", 0, held), 0);
	assert_int_equal(dns_map_ref(m, held, 0), 0);
	assert_int_equal(dns_map_ref(m, held, 0), 0);
	for (unsigned i = 1; i < DNS_MAP_POOL; i++) {
		char n[32];
		name_of(i, n, sizeof n);
		assert_int_equal(dns_map_get(m, "default", n, 0, a), 0);
	}
	/* Long past the TTL, every other address can be reused, the held one cannot. */
	uint64_t later = 10 * TTL_MS;
	for (unsigned i = 0; i < DNS_MAP_POOL - 1; i++) {
		char n[32];
		snprintf(n, sizeof n, "late%u.test", i);
		assert_int_equal(dns_map_get(m, "default", n, later, a), 0);
		assert_memory_not_equal(a, held, 4);
	}
	assert_int_equal(dns_map_get(m, "default", "one-more.test", later, a), -1);
	assert_int_equal(dns_map_live(m, later), DNS_MAP_POOL);

	/* One connection lets go: still held by the other. */
	dns_map_unref(m, held, later);
	assert_int_equal(dns_map_get(m, "default", "one-more.test", later, a), -1);
	/* The last lets go: the TTL runs from then, and only after it is the address free. */
	uint64_t gone = later + 1000;
	dns_map_unref(m, held, gone);
	const char *s, *n;
	assert_int_equal(dns_map_lookup(m, held, gone, &s, &n), 0);
	assert_string_equal(n, "held.test");
	/* The late names expire first: each of their addresses goes to a new name, the held one
	 * does not, and when they are gone nothing is free. */
	uint64_t t = gone + TTL_MS - 1;
	for (unsigned i = 0; i < DNS_MAP_POOL - 1; i++) {
		char nn[32];
		snprintf(nn, sizeof nn, "after%u.test", i);
		assert_int_equal(dns_map_get(m, "default", nn, t, a), 0);
		assert_memory_not_equal(a, held, 4);
	}
	assert_int_equal(dns_map_get(m, "default", "one-more.test", t, a), -1);
	/* Its TTL over, the held name's address is the one free address. */
	assert_int_equal(dns_map_get(m, "default", "one-more.test", t + 1, a), 0);
	assert_memory_equal(a, held, 4);
	assert_int_equal(dns_map_lookup(m, held, t + 1, &s, &n), 0);
	assert_string_equal(n, "one-more.test");
	dns_map_free(m);
}

static void test_exhaustion_with_held(void **state)
{
	(void)state;
	/* Held addresses, all of them: nothing can be reused however late it gets. */
	struct dns_map *m = dns_map_new(TTL);
	fill(m, "default", 0, 0);
	for (unsigned i = 0; i < DNS_MAP_POOL; i++) {
		uint8_t a[4] = {198, (uint8_t)(18 + (i >> 16)), (uint8_t)(i >> 8), (uint8_t)i};
		assert_int_equal(dns_map_ref(m, a, 0), 0);
	}
	uint8_t a[4];
	assert_int_equal(dns_map_get(m, "default", "x.test", 100 * TTL_MS, a), -1);
	assert_int_equal(dns_map_get(m, "other", "n7.test", 100 * TTL_MS, a), -1);
	/* A name that has its address is still answered. */
	assert_int_equal(dns_map_get(m, "default", "n7.test", 100 * TTL_MS, a), 0);
	dns_map_free(m);
}

static void test_refresh_extends(void **state)
{
	(void)state;
	struct dns_map *m = dns_map_new(TTL);
	uint8_t a[4], b[4];
	fill(m, "default", 0, 0);
	/* n0 (198.18.0.1) answered again at 30 s: live until 90 s. */
	assert_int_equal(dns_map_get(m, "default", "n0.test", TTL_MS / 2, a), 0);
	/* At 60 s every other name expired; 198.18.0.2 is the oldest free. */
	assert_int_equal(dns_map_get(m, "default", "x.test", TTL_MS, b), 0);
	const uint8_t second[4] = {198, 18, 0, 2};
	assert_memory_equal(b, second, 4);
	const char *s, *n;
	assert_int_equal(dns_map_lookup(m, a, TTL_MS, &s, &n), 0);
	assert_string_equal(n, "n0.test");
	/* Memory follows use: expired entries are reclaimed as names come. */
	for (unsigned i = 0; i < 100; i++) {
		char nn[32];
		snprintf(nn, sizeof nn, "y%u.test", i);
		assert_int_equal(dns_map_get(m, "default", nn, TTL_MS, b), 0);
	}
	assert_true(dns_map_count(m) < DNS_MAP_POOL);
	dns_map_free(m);
}

static void test_long_session(void **state)
{
	(void)state;
	struct dns_map *m = dns_map_new(0);
	assert_int_equal(dns_map_ttl(m), DNS_MAP_TTL_DEFAULT);
	char s[DNS_MAP_SESSION_MAX + 2];
	memset(s, 's', sizeof s - 1);
	s[sizeof s - 1] = '\0';
	uint8_t a[4];
	assert_int_equal(dns_map_get(m, s, "x.test", 0, a), -1);
	s[DNS_MAP_SESSION_MAX] = '\0';
	assert_int_equal(dns_map_get(m, s, "x.test", 0, a), 0);
	dns_map_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_per_name),
		cmocka_unit_test(test_exhaustion_and_reuse),
		cmocka_unit_test(test_ref_keeps_alive),
		cmocka_unit_test(test_exhaustion_with_held),
		cmocka_unit_test(test_refresh_extends),
		cmocka_unit_test(test_long_session),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
