/* The action-tag vocabulary: names to masks and back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "allowlist/tags.h"

struct parse_case {
	const char *name;
	int rc;
	unsigned mask;
};

static const struct parse_case parse_cases[] = {
        {"dns", 0, ALLOW_TAG_DNS},
        {"git:fetch", 0, ALLOW_TAG_GIT_FETCH},
        {"git:push", 0, ALLOW_TAG_GIT_PUSH},
        {"http:read", 0, ALLOW_TAG_HTTP_READ},
        {"http:write", 0, ALLOW_TAG_HTTP_WRITE},
        {"net:raw", 0, ALLOW_TAG_NET_RAW},
        {"ssh:read", 0, ALLOW_TAG_SSH_READ},
        {"ssh:write", 0, ALLOW_TAG_SSH_WRITE},
        {"read", 0,
                ALLOW_TAG_DNS | ALLOW_TAG_GIT_FETCH | ALLOW_TAG_HTTP_READ | ALLOW_TAG_NET_RAW |
                        ALLOW_TAG_SSH_READ},
        {"write", 0,
                ALLOW_TAG_GIT_PUSH | ALLOW_TAG_HTTP_WRITE | ALLOW_TAG_NET_RAW | ALLOW_TAG_SSH_WRITE},
        {"all", 0, 0xff},
        {"net:RAW", -1, 0},
        {"net", -1, 0},
        {"raw", -1, 0},
        {"", -1, 0},
        {"none", -1, 0},
        {"Git:Push", -1, 0},
        {"git:pus", -1, 0},
        {"git:pushx", -1, 0},
        {"git", -1, 0},
        {" dns", -1, 0},
};

static void test_tag_parse(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof parse_cases / sizeof parse_cases[0]; i++) {
		const struct parse_case *c = &parse_cases[i];
		unsigned mask = 0xdead;
		int rc = allow_tag_parse(c->name, strlen(c->name), &mask);
		if (rc != c->rc || (rc == 0 && mask != c->mask) || (rc == -1 && mask != 0xdead))
			fail_msg("\"%s\": rc %d mask %#x, want rc %d mask %#x", c->name, rc, mask,
			        c->rc, c->mask);
	}
}

/* The name is length-delimited: text after len is not part of it. */
static void test_tag_parse_length(void **state)
{
	(void)state;
	unsigned mask = 0;
	assert_int_equal(allow_tag_parse("git:push, git:fetch", 8, &mask), 0);
	assert_int_equal(mask, ALLOW_TAG_GIT_PUSH);
	assert_int_equal(allow_tag_parse("dnsx", 3, &mask), 0);
	assert_int_equal(mask, ALLOW_TAG_DNS);
}

static void test_tag_name(void **state)
{
	(void)state;
	assert_string_equal(allow_tag_name(ALLOW_TAG_GIT_PUSH), "git:push");
	assert_string_equal(allow_tag_name(ALLOW_TAG_SSH_WRITE), "ssh:write");
	assert_null(allow_tag_name(0));
	assert_null(allow_tag_name(ALLOW_TAG_DNS | ALLOW_TAG_GIT_PUSH));
	assert_string_equal(allow_tag_name(ALLOW_TAG_NET_RAW), "net:raw");
	assert_null(allow_tag_name(1u << 8));
	/* Every leaf round-trips through its name, and the names sort in bit order. */
	const char *prev = "";
	for (unsigned bit = 1; bit & ALLOW_TAGS_ALL; bit <<= 1) {
		unsigned mask = 0;
		const char *n = allow_tag_name(bit);
		assert_non_null(n);
		assert_int_equal(allow_tag_parse(n, strlen(n), &mask), 0);
		assert_int_equal(mask, bit);
		assert_true(strcmp(prev, n) < 0);
		prev = n;
	}
	/* the leaves are contiguous bits, and net:raw is the one child of both parents */
	assert_int_equal(ALLOW_TAGS_ALL & (ALLOW_TAGS_ALL + 1), 0);
	assert_int_equal(ALLOW_TAGS_READ & ALLOW_TAGS_WRITE, ALLOW_TAG_NET_RAW);
}

struct format_case {
	unsigned mask;
	const char *sep;
	const char *want;
};

static const struct format_case format_cases[] = {
        {0, ",", "none"},
        {ALLOW_TAG_GIT_PUSH, ",", "git:push"},
        {ALLOW_TAG_SSH_WRITE | ALLOW_TAG_DNS | ALLOW_TAG_GIT_PUSH, ",", "dns,git:push,ssh:write"},
        {ALLOW_TAGS_WRITE, " ", "git:push http:write net:raw ssh:write"},
        {ALLOW_TAGS_READ, " ", "dns git:fetch http:read net:raw ssh:read"},
        {ALLOW_TAG_NET_RAW | ALLOW_TAG_SSH_READ | ALLOW_TAG_HTTP_WRITE, ",",
                "http:write,net:raw,ssh:read"},
        {ALLOW_TAGS_ALL, ", ",
                "dns, git:fetch, git:push, http:read, http:write, net:raw, ssh:read, ssh:write"},
        {ALLOW_TAG_HTTP_READ | (1u << 12), ",", "http:read"},
};

static void test_tags_format(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof format_cases / sizeof format_cases[0]; i++) {
		const struct format_case *c = &format_cases[i];
		char buf[128];
		size_t n = allow_tags_format(c->mask, c->sep, buf, sizeof buf);
		assert_string_equal(buf, c->want);
		assert_int_equal(n, strlen(c->want));
	}
}

/* Like snprintf: a short buffer gets a NUL-terminated prefix and the full length comes back. */
static void test_tags_format_truncates(void **state)
{
	(void)state;
	char buf[8];
	memset(buf, 'x', sizeof buf);
	size_t n = allow_tags_format(ALLOW_TAG_DNS | ALLOW_TAG_GIT_PUSH, ",", buf, sizeof buf);
	assert_int_equal(n, strlen("dns,git:push"));
	assert_string_equal(buf, "dns,git");
	n = allow_tags_format(ALLOW_TAG_DNS, ",", buf, 0);
	assert_int_equal(n, 3);
	assert_int_equal(buf[0], 'd');
	n = allow_tags_format(ALLOW_TAG_DNS, ",", buf, 1);
	assert_int_equal(buf[0], '\0');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_tag_parse),
	        cmocka_unit_test(test_tag_parse_length),
	        cmocka_unit_test(test_tag_name),
	        cmocka_unit_test(test_tags_format),
	        cmocka_unit_test(test_tags_format_truncates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
