/* Address prefixes: parse, contains, format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <netinet/in.h>

#include "allowlist/cidr.h"

struct parse_case {
	const char *in;
	int rc;
	const char *formatted; /* allow_cidr_format of the result, when rc is 0 */
	const char *errpart;   /* a phrase the error must contain, when rc is -1 */
};

static const struct parse_case parse_cases[] = {
        {"10.0.0.0/8", 0, "10.0.0.0/8", NULL},
        {"192.0.2.7", 0, "192.0.2.7/32", NULL},
        {"0.0.0.0/0", 0, "0.0.0.0/0", NULL},
        {"198.51.100.128/25", 0, "198.51.100.128/25", NULL},
        {"2001:DB8::/32", 0, "2001:db8::/32", NULL},
        {"2001:db8:0:0::1", 0, "2001:db8::1/128", NULL},
        {"::/0", 0, "::/0", NULL},
        {"fc00::/7", 0, "fc00::/7", NULL},
        {"10.0.0.1/8", -1, NULL, "bits set"},
        {"2001:db8::1/32", -1, NULL, "bits set"},
        {"10.0.0.0/33", -1, NULL, "too long"},
        {"::/129", -1, NULL, "too long"},
        {"10.0.0.0/", -1, NULL, "prefix length"},
        {"10.0.0.0/08", -1, NULL, "prefix length"},
        {"10.0.0.0/-1", -1, NULL, "prefix length"},
        {"10.0.0.0/8x", -1, NULL, "prefix length"},
        {"127.1", -1, NULL, "dotted-quad"},
        {"0x7f.0.0.1", -1, NULL, "dotted-quad"},
        {"010.0.0.0/8", -1, NULL, "dotted-quad"},
        {"256.0.0.0/8", -1, NULL, "dotted-quad"},
        {"[::1]", -1, NULL, "IPv6"},
        {"fe80::1%eth0", -1, NULL, "zone"},
        {"2001:db8:::1", -1, NULL, "IPv6"},
        {"/8", -1, NULL, "missing"},
        {"", -1, NULL, "missing"},
        {"example.test", -1, NULL, "dotted-quad"},
};

static void test_cidr_parse(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof parse_cases / sizeof parse_cases[0]; i++) {
		const struct parse_case *c = &parse_cases[i];
		struct allow_cidr cidr;
		char err[200] = "", buf[64] = "";
		int rc = allow_cidr_parse(c->in, strlen(c->in), &cidr, err, sizeof err);
		if (rc != c->rc)
			fail_msg("\"%s\": rc %d (%s), want %d", c->in, rc, err, c->rc);
		if (rc == 0) {
			allow_cidr_format(&cidr, buf, sizeof buf);
			assert_string_equal(buf, c->formatted);
		} else if (strstr(err, c->errpart) == NULL) {
			fail_msg("\"%s\": error \"%s\" lacks \"%s\"", c->in, err, c->errpart);
		}
	}
}

/* Only len bytes are read: a prefix of a longer string parses alone. */
static void test_cidr_parse_length(void **state)
{
	(void)state;
	struct allow_cidr c;
	char buf[64];
	assert_int_equal(allow_cidr_parse("10.0.0.0/8, 11.0.0.0/8", 10, &c, NULL, 0), 0);
	allow_cidr_format(&c, buf, sizeof buf);
	assert_string_equal(buf, "10.0.0.0/8");
}

struct contains_case {
	const char *cidr;
	const char *addr;
	int want;
};

static const struct contains_case contains_cases[] = {
        {"10.0.0.0/8", "10.255.1.2", 1},
        {"10.0.0.0/8", "11.0.0.0", 0},
        {"10.0.0.0/8", "9.255.255.255", 0},
        {"198.51.100.128/25", "198.51.100.128", 1},
        {"198.51.100.128/25", "198.51.100.255", 1},
        {"198.51.100.128/25", "198.51.100.127", 0},
        {"192.0.2.7", "192.0.2.7", 1},
        {"192.0.2.7", "192.0.2.6", 0},
        {"0.0.0.0/0", "203.0.113.9", 1},
        {"0.0.0.0/0", "::1", 0},
        {"::/0", "10.0.0.1", 0},
        {"::/0", "2001:db8::1", 1},
        {"fc00::/7", "fd12::1", 1},
        {"fc00::/7", "fe00::1", 0},
        {"2001:db8::/32", "2001:db8:ffff::1", 1},
        {"2001:db8::/32", "2001:db9::1", 0},
        {"::1", "::1", 1},
        {"::1", "::2", 0},
};

static void test_cidr_contains(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof contains_cases / sizeof contains_cases[0]; i++) {
		const struct contains_case *c = &contains_cases[i];
		struct allow_cidr cidr;
		uint8_t addr[16];
		assert_int_equal(allow_cidr_parse(c->cidr, strlen(c->cidr), &cidr, NULL, 0), 0);
		int family = strchr(c->addr, ':') ? AF_INET6 : AF_INET;
		assert_int_equal(inet_pton(family, c->addr, addr), 1);
		if (allow_cidr_contains(&cidr, family, addr) != c->want)
			fail_msg("%s contains %s: want %d", c->cidr, c->addr, c->want);
	}
}

static void test_cidr_format_small_buffer(void **state)
{
	(void)state;
	struct allow_cidr c;
	char buf[6];
	assert_int_equal(allow_cidr_parse("10.0.0.0/8", 10, &c, NULL, 0), 0);
	allow_cidr_format(&c, buf, sizeof buf);
	assert_string_equal(buf, "10.0.");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_cidr_parse),
	        cmocka_unit_test(test_cidr_parse_length),
	        cmocka_unit_test(test_cidr_contains),
	        cmocka_unit_test(test_cidr_format_small_buffer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
