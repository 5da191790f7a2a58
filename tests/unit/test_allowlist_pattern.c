/* Pattern sets: what matches, what does not, and what is refused at load. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "allowlist/pattern.h"

#define N_MAX 6

struct match_case {
	enum allow_set_kind kind;
	const char *patterns[N_MAX]; /* NULL-terminated */
	const char *dest;            /* an authority with its port */
	enum allow_match want;
	const char *rule; /* canonical text of the matching pattern, or NULL */
};

#define A ALLOW_SET_ALLOW
#define D ALLOW_SET_DENY
#define YES ALLOW_MATCH_YES
#define PORT ALLOW_MATCH_PORT
#define NONE ALLOW_MATCH_NONE

static const struct match_case match_cases[] = {
        /* allow: exact name is that host only */
        {A, {"example.test"}, "example.test:443", YES, "example.test"},
        {A, {"example.test"}, "example.test:80", YES, "example.test"},
        {A, {"example.test"}, "api.example.test:443", NONE, NULL},
        {A, {"example.test"}, "badexample.test:443", NONE, NULL},
        {A, {"example.test"}, "example.test.evil.test:443", NONE, NULL},
        {A, {"api.example.test"}, "example.test:443", NONE, NULL},
        /* allow: *. is subdomains at any depth, not the apex */
        {A, {"*.example.test"}, "api.example.test:443", YES, "*.example.test"},
        {A, {"*.example.test"}, "a.b.c.example.test:443", YES, "*.example.test"},
        {A, {"*.example.test"}, "example.test:443", NONE, NULL},
        {A, {"*.example.test"}, "xexample.test:443", NONE, NULL},
        /* allow: **. is the apex and every subdomain */
        {A, {"**.example.test"}, "example.test:443", YES, "**.example.test"},
        {A, {"**.example.test"}, "a.b.example.test:80", YES, "**.example.test"},
        {A, {"**.example.test"}, "example.test.invalid:443", NONE, NULL},
        /* case and the trailing dot are canonicalised on both sides */
        {A, {"GitHub.COM."}, "github.com:443", YES, "github.com"},
        {A, {"github.com"}, "GITHUB.com.:443", YES, "github.com"},
        {A, {"*.Example.Test"}, "API.example.test.:443", YES, "*.example.test"},
        /* ports: none = 80 and 443; :N that port only; :* any */
        {A, {"example.test"}, "example.test:8443", PORT, "example.test"},
        {A, {"example.test:8443"}, "example.test:8443", YES, "example.test:8443"},
        {A, {"example.test:8443"}, "example.test:443", PORT, "example.test:8443"},
        {A, {"example.test:*"}, "example.test:22", YES, "example.test:*"},
        {A, {"*.example.test:*"}, "a.example.test:1", YES, "*.example.test:*"},
        {A, {"example.test:8443", "example.test"}, "example.test:443", YES, "example.test"},
        {A, {"example.test:8443", "example.test"}, "example.test:22", PORT, "example.test:8443"},
        {A, {"*.example.test:8443"}, "example.test:8443", NONE, NULL},
        /* the most specific anchor wins the report */
        {A, {"**.example.test", "api.example.test"}, "api.example.test:443", YES,
                "api.example.test"},
        {A, {"**.example.test", "*.api.example.test"}, "x.api.example.test:443", YES,
                "*.api.example.test"},
        {A, {"api.example.test:8443", "**.example.test"}, "api.example.test:443", YES,
                "**.example.test"},
        /* deny: every name form is apex and subdomains; no port = every port */
        {D, {"evil.test"}, "evil.test:443", YES, "evil.test"},
        {D, {"evil.test"}, "a.b.evil.test:443", YES, "evil.test"},
        {D, {"evil.test"}, "evil.test:22", YES, "evil.test"},
        {D, {"*.evil.test"}, "evil.test:443", YES, "*.evil.test"},
        {D, {"*.evil.test"}, "x.evil.test:8080", YES, "*.evil.test"},
        {D, {"**.evil.test"}, "evil.test:443", YES, "**.evil.test"},
        {D, {"evil.test"}, "notevil.test:443", NONE, NULL},
        {D, {"evil.test:8080"}, "evil.test:8080", YES, "evil.test:8080"},
        {D, {"evil.test:8080"}, "evil.test:443", PORT, "evil.test:8080"},
        {D, {"evil.test:*"}, "sub.evil.test:9", YES, "evil.test:*"},
        /* IPv4 literals and CIDRs: canonical addresses, not text */
        {A, {"10.1.2.3"}, "10.1.2.3:443", YES, "10.1.2.3"},
        {A, {"10.1.2.3"}, "0x0a010203:443", YES, "10.1.2.3"},
        {A, {"10.1.2.3"}, "10.1.2.4:443", NONE, NULL},
        {A, {"10.1.2.3"}, "10.1.2.3:22", PORT, "10.1.2.3"},
        {A, {"127.1"}, "127.0.0.1:80", YES, "127.0.0.1"},
        {A, {"192.0.2.0/24"}, "192.0.2.200:443", YES, "192.0.2.0/24"},
        {A, {"192.0.2.0/24"}, "192.0.3.1:443", NONE, NULL},
        {A, {"192.0.2.0/24:8080"}, "192.0.2.1:8080", YES, "192.0.2.0/24:8080"},
        {A, {"192.0.2.0/24:8080"}, "192.0.2.1:80", PORT, "192.0.2.0/24:8080"},
        {A, {"10.0.0.0/8", "10.1.0.0/16:22"}, "10.1.2.3:22", YES, "10.1.0.0/16:22"},
        {A, {"10.0.0.0/8:*", "10.1.0.0/16:22"}, "10.1.2.3:23", YES, "10.0.0.0/8:*"},
        {A, {"0.0.0.0/0"}, "203.0.113.1:443", YES, "0.0.0.0/0"},
        {A, {"10.0.0.0/8"}, "[::ffff:10.0.0.1]:443", NONE, NULL},
        /* an IP entry never matches a name, and a name never matches an IP */
        {A, {"10.1.2.3"}, "host.test:443", NONE, NULL},
        {A, {"**.example.test"}, "10.1.2.3:443", NONE, NULL},
        /* IPv6 */
        {A, {"[2001:db8::1]:8443"}, "[2001:db8::1]:8443", YES, "[2001:db8::1]:8443"},
        {A, {"[2001:db8::1]:8443"}, "[2001:db8::1]:443", PORT, "[2001:db8::1]:8443"},
        {A, {"[2001:DB8:0::1]"}, "[2001:db8::1]:443", YES, "2001:db8::1"},
        {A, {"2001:db8::1"}, "[2001:db8::1]:80", YES, "2001:db8::1"},
        {A, {"2001:db8::/32"}, "[2001:db8:ffff::5]:443", YES, "2001:db8::/32"},
        {A, {"2001:db8::/32"}, "[2001:db9::5]:443", NONE, NULL},
        {A, {"[2001:db8::/32]:*"}, "[2001:db8::5]:22", YES, "[2001:db8::/32]:*"},
        {D, {"2001:db8::/32"}, "[2001:db8::5]:22", YES, "2001:db8::/32"},
        {D, {"192.0.2.0/24"}, "192.0.2.9:1", YES, "192.0.2.0/24"},
};

static struct allow_set *build(enum allow_set_kind kind, const char *const *patterns)
{
	struct allow_set *set = allow_set_new(kind);
	assert_non_null(set);
	for (size_t i = 0; i < N_MAX && patterns[i] != NULL; i++) {
		char err[256] = "";
		if (allow_set_add(set, patterns[i], err, sizeof err) != 0)
			fail_msg("pattern \"%s\" refused: %s", patterns[i], err);
	}
	return set;
}

static void test_match_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof match_cases / sizeof match_cases[0]; i++) {
		const struct match_case *c = &match_cases[i];
		struct allow_set *set = build(c->kind, c->patterns);
		struct allow_dest d;
		if (allow_canon_authority(c->dest, strlen(c->dest), 0, &d) != ALLOW_CANON_OK)
			fail_msg("case %zu: bad test destination %s", i, c->dest);
		const char *rule = NULL;
		enum allow_match m = allow_set_match(set, &d, &rule);
		if (m != c->want)
			fail_msg("case %zu: %s against %s: got %d want %d", i, c->dest,
			        c->patterns[0], m, c->want);
		if (c->rule != NULL && (rule == NULL || strcmp(rule, c->rule) != 0))
			fail_msg("case %zu: %s: rule \"%s\", want \"%s\"", i, c->dest,
			        rule ? rule : "(null)", c->rule);
		allow_set_free(set);
	}
}

struct reject_case {
	enum allow_set_kind kind;
	const char *pattern;
	const char *errpart; /* the reason must say this */
};

static const struct reject_case reject_cases[] = {
        {A, "*", "every host"},
        {A, "**", "every host"},
        {D, "*", "every host"},
        {A, "*.", "every host"},
        {A, "*:443", "every host"},
        {A, "*.com", "public suffix"},
        {A, "**.com", "public suffix"},
        {A, "com", "public suffix"},
        {A, "test", "public suffix"},
        {A, "**.co.uk", "public suffix"},
        {A, "*.co.uk", "public suffix"},
        {A, "*.github.io", "public suffix"},
        {D, "*.com", "public suffix"},
        {A, "a*.b.test", "whole leading label"},
        {A, "a.*.test", "whole leading label"},
        {A, "*a.b.test", "whole leading label"},
        {A, "***.b.test", "whole leading label"},
        {A, "*.*.b.test", "whole leading label"},
        {A, "b.test.*", "whole leading label"},
        {A, "a..b.test", "empty label"},
        {A, ".a.test", "empty label"},
        {A, "", "empty pattern"},
        {A,
                "b\xc3\xbc"
                "cher.test",
                "non-ASCII"},
        {A, "2001:db8::1:*", "brackets"},
        {A, "2001:db8::zz", "IPv6"},
        {A, "[2001:db8::1", "']'"},
        {A, "[2001:db8::1]8443", "after ']'"},
        {A, "[fe80::1%eth0]", "zone"},
        {A, "[10.0.0.1]", "IPv6"},
        {A, "example.test:0", "bad port"},
        {A, "example.test:65536", "bad port"},
        {A, "example.test:0443", "bad port"},
        {A, "example.test:", "bad port"},
        {A, "example.test:**", "bad port"},
        {A, ":443", "missing host"},
        {A, "*.10.0.0.1", "IP address"},
        {A, "**.10.0.0.0/8", "dotted-quad"},
        {A, "10.0.0.1/8", "bits set"},
        {A, "256.1.2.3", "IPv4"},
        {A, "under_score.test", "not allowed"},
        {A, "-a.test", "'-'"},
        {A, "user@example.test", "user"},
        {A, "example.test/path", "dotted-quad"},
};

static void test_reject_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof reject_cases / sizeof reject_cases[0]; i++) {
		const struct reject_case *c = &reject_cases[i];
		struct allow_set *set = allow_set_new(c->kind);
		assert_non_null(set);
		char err[256] = "";
		if (allow_set_add(set, c->pattern, err, sizeof err) != -1)
			fail_msg("pattern \"%s\" was accepted", c->pattern);
		if (strstr(err, c->errpart) == NULL)
			fail_msg("pattern \"%s\": reason \"%s\" lacks \"%s\"", c->pattern, err,
			        c->errpart);
		/* A refused pattern leaves the set unchanged. */
		assert_int_equal(allow_set_count(set), 0);
		allow_set_free(set);
	}
}

/* What a set reports: canonical texts in the order added, duplicates folded. */
static void test_canonical_texts(void **state)
{
	(void)state;
	static const char *const in[] = {"GitHub.COM.", "*.Example.TEST", "**.b.test:8443",
	        "x.test:*", "127.1", "[2001:DB8::1]:443", "[2001:db8::]", "2001:db8::/32",
	        "192.0.2.0/24:8080", "github.com", "[2001:db8::/32]:*"};
	static const char *const want[] = {"github.com", "*.example.test", "**.b.test:8443",
	        "x.test:*", "127.0.0.1", "[2001:db8::1]:443", "2001:db8::", "2001:db8::/32",
	        "192.0.2.0/24:8080", "[2001:db8::/32]:*"};
	struct allow_set *set = allow_set_new(A);
	for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
		assert_int_equal(allow_set_add(set, in[i], NULL, 0), 0);
	assert_int_equal(allow_set_count(set), sizeof want / sizeof want[0]);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		assert_string_equal(allow_set_pattern(set, i), want[i]);
		assert_true(allow_set_has(set, want[i]));
	}
	assert_null(allow_set_pattern(set, sizeof want / sizeof want[0]));
	assert_false(allow_set_has(set, "GitHub.COM."));
	assert_false(allow_set_has(set, "**.example.test"));

	/* Each canonical text parses back to itself. */
	struct allow_set *again = allow_set_new(A);
	for (size_t i = 0; i < allow_set_count(set); i++)
		assert_int_equal(allow_set_add(again, allow_set_pattern(set, i), NULL, 0), 0);
	for (size_t i = 0; i < allow_set_count(set); i++)
		assert_string_equal(allow_set_pattern(again, i), allow_set_pattern(set, i));
	assert_int_equal(allow_set_get_kind(again), A);
	allow_set_free(again);
	allow_set_free(set);
}

static void test_empty_set(void **state)
{
	(void)state;
	struct allow_set *set = allow_set_new(A);
	struct allow_dest d;
	assert_int_equal(allow_canon_authority("example.test:443", 16, 0, &d), ALLOW_CANON_OK);
	const char *rule = "untouched";
	assert_int_equal(allow_set_match(set, &d, &rule), NONE);
	assert_string_equal(rule, "untouched");
	assert_int_equal(allow_set_count(set), 0);
	allow_set_free(set);
	allow_set_free(NULL);
}

/* A big set: 100,000 exact names, wildcards and /32s, and matching still answers exactly. */
static void test_hundred_thousand(void **state)
{
	(void)state;
	struct allow_set *set = allow_set_new(A);
	char p[64];
	for (unsigned i = 0; i < 100000; i++) {
		switch (i % 3) {
		case 0:
			snprintf(p, sizeof p, "host%u.example.test", i);
			break;
		case 1:
			snprintf(p, sizeof p, "*.zone%u.example.test:8443", i);
			break;
		default:
			snprintf(p, sizeof p, "10.%u.%u.%u", (i >> 16) & 255, (i >> 8) & 255,
			        i & 255);
			break;
		}
		assert_int_equal(allow_set_add(set, p, NULL, 0), 0);
	}
	assert_int_equal(allow_set_count(set), 100000);

	struct probe {
		const char *dest;
		enum allow_match want;
		const char *rule;
	} probes[] = {
	        {"host0.example.test:443", YES, "host0.example.test"},
	        {"host99999.example.test:80", YES, "host99999.example.test"},
	        {"host99998.example.test:80", NONE, NULL},
	        {"host1.example.test:80", NONE, NULL},
	        {"a.b.zone99997.example.test:8443", YES, "*.zone99997.example.test:8443"},
	        {"a.zone99997.example.test:443", PORT, "*.zone99997.example.test:8443"},
	        {"zone99997.example.test:8443", NONE, NULL},
	        {"10.1.134.158:443", YES, "10.1.134.158"}, /* i = 99998 */
	        {"10.1.134.159:443", NONE, NULL},
	        {"example.test:443", NONE, NULL},
	};
	for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
		struct allow_dest d;
		assert_int_equal(
		        allow_canon_authority(probes[i].dest, strlen(probes[i].dest), 0, &d),
		        ALLOW_CANON_OK);
		const char *rule = NULL;
		enum allow_match m = allow_set_match(set, &d, &rule);
		if (m != probes[i].want)
			fail_msg("%s: got %d want %d", probes[i].dest, m, probes[i].want);
		if (probes[i].rule != NULL)
			assert_string_equal(rule, probes[i].rule);
	}
	assert_true(allow_set_has(set, "*.zone4.example.test:8443"));
	allow_set_free(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_match_table),
	        cmocka_unit_test(test_reject_table),
	        cmocka_unit_test(test_canonical_texts),
	        cmocka_unit_test(test_empty_set),
	        cmocka_unit_test(test_hundred_thousand),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
