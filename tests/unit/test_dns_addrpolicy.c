/* The address policy: which resolved addresses egressd may dial, and the reasons it gives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "allowlist/cidr.h"
#include "dns/addrpolicy.h"

/* Parses an address literal: family and bytes. */
static int parse_addr(const char *s, uint8_t out[16])
{
	memset(out, 0, 16);
	if (inet_pton(AF_INET, s, out) == 1)
		return AF_INET;
	if (inet_pton(AF_INET6, s, out) == 1)
		return AF_INET6;
	fail_msg("test address does not parse: %s", s);
	return 0;
}

/* Judges s under p; returns 0/-1 and the reason in why. */
static int judge(const struct dns_addr_policy *p, const char *s, char *why, size_t whylen)
{
	uint8_t a[16];
	int family = parse_addr(s, a);
	return dns_addr_judge(p, family, a, why, whylen);
}

struct verdict {
	const char *addr;
	int rc;          /* 0 allowed, -1 denied */
	const char *why; /* exact reason when denied */
};

static void check_table(const struct dns_addr_policy *p, const struct verdict *v, size_t n)
{
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		char why[160];
		int rc = judge(p, v[i].addr, why, sizeof why);
		if (rc != v[i].rc || (v[i].why && strcmp(why, v[i].why) != 0)) {
			print_error("%s: got %d \"%s\", want %d \"%s\"\n", v[i].addr, rc, why,
			        v[i].rc, v[i].why ? v[i].why : "");
			bad++;
		}
		if (rc == 0 && why[0] != '\0') {
			print_error("%s: allowed but with a reason \"%s\"\n", v[i].addr, why);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* 10.0.0.1 inverted is f5ff:fffe; 65.54.227.120 is 4136:e378; 8.8.8.8 inverted is f7f7:f7f7. */
#define TEREDO_PRIVATE_CLIENT "2001:0:4136:e378:8000:63bf:f5ff:fffe"
#define TEREDO_PUBLIC "2001:0:4136:e378:8000:63bf:f7f7:f7f7"
#define TEREDO_PRIVATE_SERVER "2001:0:c0a8:101:8000:63bf:f7f7:f7f7"

static void test_default_policy(void **state)
{
	(void)state;
	static const struct verdict v[] = {
	        {"127.0.0.1", -1, "loopback 127.0.0.0/8"},
	        {"127.255.255.255", -1, "loopback 127.0.0.0/8"},
	        {"0.0.0.0", -1, "this network 0.0.0.0/8"},
	        {"0.255.255.255", -1, "this network 0.0.0.0/8"},
	        {"169.254.169.254", -1, "cloud metadata 169.254.169.254"},
	        {"169.254.1.1", -1, "link-local 169.254.0.0/16"},
	        {"100.100.100.200", -1, "cloud metadata 100.100.100.200"},
	        {"10.0.0.1", -1, "private 10.0.0.0/8"},
	        {"10.255.255.255", -1, "private 10.0.0.0/8"},
	        {"172.16.0.1", -1, "private 172.16.0.0/12"},
	        {"172.31.255.255", -1, "private 172.16.0.0/12"},
	        {"172.15.255.255", 0, NULL},
	        {"172.32.0.1", 0, NULL},
	        {"192.168.0.1", -1, "private 192.168.0.0/16"},
	        {"192.169.0.1", 0, NULL},
	        {"100.64.0.1", -1, "CGNAT 100.64.0.0/10"},
	        {"100.127.255.254", -1, "CGNAT 100.64.0.0/10"},
	        {"100.63.255.254", 0, NULL},
	        {"100.128.0.1", 0, NULL},
	        {"192.0.0.8", -1, "IETF protocol assignments 192.0.0.0/24"},
	        {"192.0.2.1", -1, "documentation 192.0.2.0/24"},
	        {"198.51.100.7", -1, "documentation 198.51.100.0/24"},
	        {"203.0.113.9", -1, "documentation 203.0.113.0/24"},
	        {"198.18.0.1", -1, "benchmarking 198.18.0.0/15"},
	        {"198.19.255.255", -1, "benchmarking 198.18.0.0/15"},
	        {"198.20.0.1", 0, NULL},
	        {"224.0.0.1", -1, "multicast 224.0.0.0/4"},
	        {"239.255.255.255", -1, "multicast 224.0.0.0/4"},
	        {"240.0.0.1", -1, "reserved 240.0.0.0/4"},
	        {"255.255.255.255", -1, "broadcast 255.255.255.255"},
	        {"8.8.8.8", 0, NULL},
	        {"1.1.1.1", 0, NULL},
	        {"223.255.255.255", 0, NULL},
	        {"::1", -1, "loopback ::1"},
	        {"::", -1, "unspecified ::"},
	        {"fe80::1", -1, "link-local fe80::/10"},
	        {"febf::1", -1, "link-local fe80::/10"},
	        {"fec0::1", 0, NULL},
	        {"fc00::1", -1, "unique local fc00::/7"},
	        {"fdff::1", -1, "unique local fc00::/7"},
	        {"fd00:ec2::254", -1, "cloud metadata fd00:ec2::254"},
	        {"ff02::1", -1, "multicast ff00::/8"},
	        {"2001:db8::1", -1, "documentation 2001:db8::/32"},
	        {"2606:4700:4700::1111", 0, NULL},
	        {"2001:4860:4860::8888", 0, NULL},
	        {"::ffff:127.0.0.1", -1,
	                "loopback 127.0.0.0/8 (embedded in IPv4-mapped ::ffff:0:0/96)"},
	        {"::ffff:169.254.169.254", -1,
	                "cloud metadata 169.254.169.254 (embedded in IPv4-mapped ::ffff:0:0/96)"},
	        {"::ffff:8.8.8.8", 0, NULL},
	        {"::127.0.0.1", -1, "loopback 127.0.0.0/8 (embedded in IPv4-compatible ::/96)"},
	        {"::0.0.0.2", -1, "this network 0.0.0.0/8 (embedded in IPv4-compatible ::/96)"},
	        {"::ffff:0:a9fe:a9fe", -1,
	                "cloud metadata 169.254.169.254 (embedded in IPv4-translated "
	                "::ffff:0:0:0/96)"},
	        {"::ffff:0:808:808", 0, NULL},
	        {"64:ff9b::a00:1", -1, "private 10.0.0.0/8 (embedded in NAT64 64:ff9b::/96)"},
	        {"64:ff9b::808:808", 0, NULL},
	        {"64:ff9b:1::a00:1", -1, "private 10.0.0.0/8 (embedded in NAT64 64:ff9b:1::/48)"},
	        {"64:ff9b:1:ab::7f00:1", -1,
	                "loopback 127.0.0.0/8 (embedded in NAT64 64:ff9b:1::/48)"},
	        {"2002:a00:1::1", -1, "private 10.0.0.0/8 (embedded in 6to4 2002::/16)"},
	        {"2002:a9fe:a9fe::", -1,
	                "cloud metadata 169.254.169.254 (embedded in 6to4 2002::/16)"},
	        {"2002:808:808::1", 0, NULL},
	        {TEREDO_PRIVATE_CLIENT, -1, "private 10.0.0.0/8 (embedded in Teredo 2001::/32)"},
	        {TEREDO_PRIVATE_SERVER, -1, "private 192.168.0.0/16 (Teredo server in 2001::/32)"},
	        {TEREDO_PUBLIC, 0, NULL},
	};
	check_table(NULL, v, N(v));
	struct dns_addr_policy empty = {0};
	check_table(&empty, v, N(v));
}

static void parse_list(const char *const *in, size_t n, struct allow_cidr *out)
{
	for (size_t i = 0; i < n; i++) {
		char err[128] = "";
		if (allow_cidr_parse(in[i], strlen(in[i]), &out[i], err, sizeof err) != 0)
			fail_msg("cidr %s: %s", in[i], err);
	}
}

static void test_allow_addresses(void **state)
{
	(void)state;
	static const char *const allow_s[] = {"127.0.0.0/8", "fd00::/8", "169.254.169.254"};
	struct allow_cidr allow[N(allow_s)];
	parse_list(allow_s, N(allow_s), allow);
	struct dns_addr_policy p = {.allow = allow, .nallow = N(allow)};
	static const struct verdict v[] = {
	        {"127.0.0.1", 0, NULL},
	        {"127.255.255.255", 0, NULL},
	        {"::ffff:127.0.0.1", 0, NULL},
	        {"64:ff9b::7f00:1", 0, NULL},
	        {"2002:7f00:1::", 0, NULL},
	        {"::1", -1, "loopback ::1"},
	        {"10.0.0.1", -1, "private 10.0.0.0/8"},
	        {"::ffff:10.0.0.1", -1,
	                "private 10.0.0.0/8 (embedded in IPv4-mapped ::ffff:0:0/96)"},
	        {"fd12::1", 0, NULL},
	        {"fd00:ec2::254", 0, NULL},
	        {"fc00::1", -1, "unique local fc00::/7"},
	        {"169.254.169.254", 0, NULL},
	        {"169.254.169.253", -1, "link-local 169.254.0.0/16"},
	        {"8.8.8.8", 0, NULL},
	};
	check_table(&p, v, N(v));
}

static void test_deny_addresses(void **state)
{
	(void)state;
	static const char *const allow_s[] = {"127.0.0.0/8", "2002::/16"};
	static const char *const deny_s[] = {"8.8.8.0/24", "127.0.0.1", "2606:4700::/32"};
	struct allow_cidr allow[N(allow_s)], deny[N(deny_s)];
	parse_list(allow_s, N(allow_s), allow);
	parse_list(deny_s, N(deny_s), deny);
	struct dns_addr_policy p = {
	        .allow = allow, .nallow = N(allow), .deny = deny, .ndeny = N(deny)};
	static const struct verdict v[] = {
	        {"8.8.8.8", -1, "denyAddresses 8.8.8.0/24"},
	        {"8.8.4.4", 0, NULL},
	        {"::ffff:8.8.8.8", -1,
	                "denyAddresses 8.8.8.0/24 (embedded in IPv4-mapped ::ffff:0:0/96)"},
	        /* deny wins over allow, in either spelling */
	        {"127.0.0.1", -1, "denyAddresses 127.0.0.1/32"},
	        {"::ffff:127.0.0.1", -1,
	                "denyAddresses 127.0.0.1/32 (embedded in IPv4-mapped ::ffff:0:0/96)"},
	        {"127.0.0.2", 0, NULL},
	        /* allowing 6to4 itself lifts the embedded judgement, but never denyAddresses */
	        {"2002:a00:1::1", 0, NULL},
	        {"2002:808:808::1", -1, "denyAddresses 8.8.8.0/24 (embedded in 6to4 2002::/16)"},
	        {"2606:4700:4700::1111", -1, "denyAddresses 2606:4700::/32"},
	        {"2606:4701::1", 0, NULL},
	};
	check_table(&p, v, N(v));
}

static void test_allow_names_v6(void **state)
{
	(void)state;
	static const char *const allow_s[] = {"::ffff:0:0/96"};
	struct allow_cidr allow[1];
	parse_list(allow_s, 1, allow);
	struct dns_addr_policy p = {.allow = allow, .nallow = 1};
	static const struct verdict v[] = {
	        {"::ffff:127.0.0.1", 0, NULL},
	        {"127.0.0.1", -1, "loopback 127.0.0.0/8"},
	        {"64:ff9b::7f00:1", -1, "loopback 127.0.0.0/8 (embedded in NAT64 64:ff9b::/96)"},
	};
	check_table(&p, v, N(v));
}

static void test_embedded_v4(void **state)
{
	(void)state;
	static const struct {
		const char *v6;
		const char *scheme;
		const char *v4;
	} t[] = {
	        {"::ffff:1.2.3.4", "IPv4-mapped", "1.2.3.4"},
	        {"::1.2.3.4", "IPv4-compatible", "1.2.3.4"},
	        {"::2", "IPv4-compatible", "0.0.0.2"},
	        {"::", NULL, NULL},
	        {"::1", NULL, NULL},
	        {"64:ff9b::102:304", "NAT64", "1.2.3.4"},
	        {"64:ff9b:1:ffff::102:304", "NAT64", "1.2.3.4"},
	        {"64:ff9b:2::102:304", NULL, NULL},
	        {"2002:102:304::", "6to4", "1.2.3.4"},
	        {"2002:102:304:5:6:7:8:9", "6to4", "1.2.3.4"},
	        {TEREDO_PRIVATE_CLIENT, "Teredo", "10.0.0.1"},
	        {TEREDO_PUBLIC, "Teredo", "8.8.8.8"},
	        {"2001:1::1", NULL, NULL},
	        {"2606:4700:4700::1111", NULL, NULL},
	        {"::ffff:0:1.2.3.4", "IPv4-translated", "1.2.3.4"},
	        {"::1:ffff:0:1.2.3.4", NULL, NULL},
	};
	for (size_t i = 0; i < N(t); i++) {
		uint8_t v6[16], v4[4] = {0}, want[4];
		assert_int_equal(parse_addr(t[i].v6, v6), AF_INET6);
		const char *got = dns_addr_embedded_v4(v6, v4);
		if (t[i].scheme == NULL) {
			if (got != NULL)
				fail_msg("%s: got scheme %s, want none", t[i].v6, got);
			continue;
		}
		if (got == NULL)
			fail_msg("%s: no scheme, want %s", t[i].v6, t[i].scheme);
		assert_string_equal(got, t[i].scheme);
		assert_int_equal(inet_pton(AF_INET, t[i].v4, want), 1);
		assert_memory_equal(v4, want, 4);
	}
}

static void test_reason_buffer(void **state)
{
	(void)state;
	uint8_t a[16];
	int family = parse_addr("::ffff:127.0.0.1", a);
	char why[8];
	memset(why, 'x', sizeof why);
	assert_int_equal(dns_addr_judge(NULL, family, a, why, sizeof why), -1);
	assert_string_equal(why, "loopbac");
	/* no room for a reason: still judged */
	assert_int_equal(dns_addr_judge(NULL, family, a, NULL, 0), -1);
	assert_int_equal(dns_addr_judge(NULL, family, a, why, 0), -1);
	/* an allowed address clears a stale reason */
	char why2[64] = "stale";
	assert_int_equal(judge(NULL, "8.8.8.8", why2, sizeof why2), 0);
	assert_string_equal(why2, "");
	/* an unknown family is never dialled */
	assert_int_equal(dns_addr_judge(NULL, AF_UNIX, a, why2, sizeof why2), -1);
	assert_string_equal(why2, "unknown address family");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_default_policy),
	        cmocka_unit_test(test_allow_addresses),
	        cmocka_unit_test(test_deny_addresses),
	        cmocka_unit_test(test_allow_names_v6),
	        cmocka_unit_test(test_embedded_v4),
	        cmocka_unit_test(test_reason_buffer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
