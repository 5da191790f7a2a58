/* Canonical destinations: every spelling a client may send, and every refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "allowlist/host.h"

enum mode {
	HOST, /* allow_canon_host */
	AUTH, /* allow_canon_authority with default port 443 */
	CONN, /* allow_canon_authority with no default port (CONNECT) */
};

struct canon_case {
	enum mode mode;
	const char *in;
	size_t len; /* 0: strlen(in) */
	enum allow_canon_err err;
	enum allow_host_kind kind; /* checked when err is OK */
	const char *host;          /* checked when err is OK */
	uint16_t port;             /* checked when err is OK */
};

static const struct canon_case cases[] = {
        /* names: case folded, one trailing dot dropped */
        {HOST, "Api.Example.TEST.", 0, ALLOW_CANON_OK, ALLOW_HOST_NAME, "api.example.test", 0},
        {HOST, "example.test", 0, ALLOW_CANON_OK, ALLOW_HOST_NAME, "example.test", 0},
        {HOST, "xn--bcher-kva.test", 0, ALLOW_CANON_OK, ALLOW_HOST_NAME, "xn--bcher-kva.test", 0},
        {HOST, "XN--BCHER-KVA.TEST", 0, ALLOW_CANON_OK, ALLOW_HOST_NAME, "xn--bcher-kva.test", 0},
        {HOST, "a-b.c-d.test", 0, ALLOW_CANON_OK, ALLOW_HOST_NAME, "a-b.c-d.test", 0},
        {HOST, "123.example.test", 0, ALLOW_CANON_OK, ALLOW_HOST_NAME, "123.example.test", 0},
        {HOST, "1.2.3.example", 0, ALLOW_CANON_OK, ALLOW_HOST_NAME, "1.2.3.example", 0},
        {HOST, "localhost", 0, ALLOW_CANON_OK, ALLOW_HOST_NAME, "localhost", 0},
        {HOST, "0x1g.test", 0, ALLOW_CANON_OK, ALLOW_HOST_NAME, "0x1g.test", 0},
        {HOST, "a.0x1g", 0, ALLOW_CANON_OK, ALLOW_HOST_NAME, "a.0x1g", 0},
        /* every inet_aton spelling of 127.0.0.1 is that address */
        {HOST, "127.0.0.1", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV4, "127.0.0.1", 0},
        {HOST, "127.1", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV4, "127.0.0.1", 0},
        {HOST, "127.0.1", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV4, "127.0.0.1", 0},
        {HOST, "0x7f.0.0.1", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV4, "127.0.0.1", 0},
        {HOST, "0X7F.0.0.1", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV4, "127.0.0.1", 0},
        {HOST, "0177.0.0.1", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV4, "127.0.0.1", 0},
        {HOST, "017700000001", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV4, "127.0.0.1", 0},
        {HOST, "2130706433", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV4, "127.0.0.1", 0},
        {HOST, "127.0.0.0x1", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV4, "127.0.0.1", 0},
        {HOST, "0x7f000001", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV4, "127.0.0.1", 0},
        {HOST, "127.0.0.1.", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV4, "127.0.0.1", 0},
        {HOST, "169.254.43518", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV4, "169.254.169.254", 0},
        {HOST, "0", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV4, "0.0.0.0", 0},
        {HOST, "0x", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV4, "0.0.0.0", 0},
        {HOST, "4294967295", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV4, "255.255.255.255", 0},
        {HOST, "1.2.65535", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV4, "1.2.255.255", 0},
        {HOST, "1.16777215", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV4, "1.255.255.255", 0},
        {HOST, "00000000000000000000000000000000000000000000000000000000001", 0, ALLOW_CANON_OK,
                ALLOW_HOST_IPV4, "0.0.0.1", 0},
        /* numeric last label that is no address: refused, never a name */
        {HOST, "4294967296", 0, ALLOW_CANON_BAD_IPV4, 0, NULL, 0},
        {HOST, "256.0.0.1", 0, ALLOW_CANON_BAD_IPV4, 0, NULL, 0},
        {HOST, "1.2.3.256", 0, ALLOW_CANON_BAD_IPV4, 0, NULL, 0},
        {HOST, "1.2.65536", 0, ALLOW_CANON_BAD_IPV4, 0, NULL, 0},
        {HOST, "1.16777216", 0, ALLOW_CANON_BAD_IPV4, 0, NULL, 0},
        {HOST, "1.2.3.4.5", 0, ALLOW_CANON_BAD_IPV4, 0, NULL, 0},
        {HOST, "08.0.0.1", 0, ALLOW_CANON_BAD_IPV4, 0, NULL, 0},
        {HOST, "0x100000000", 0, ALLOW_CANON_BAD_IPV4, 0, NULL, 0},
        {HOST, "99999999999999999999999", 0, ALLOW_CANON_BAD_IPV4, 0, NULL, 0},
        {HOST, "example.1", 0, ALLOW_CANON_BAD_IPV4, 0, NULL, 0},
        {HOST, "example.0x1", 0, ALLOW_CANON_BAD_IPV4, 0, NULL, 0},
        {HOST, "1.0xg.3.4", 0, ALLOW_CANON_BAD_IPV4, 0, NULL, 0},
        /* IPv6: compressed lower-case text, with or without brackets in a bare host */
        {HOST, "[2001:DB8:0:0:0:0:0:1]", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV6, "2001:db8::1", 0},
        {HOST, "2001:db8::1", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV6, "2001:db8::1", 0},
        {HOST, "::1", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV6, "::1", 0},
        {HOST, "[::ffff:127.0.0.1]", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV6, "::ffff:127.0.0.1", 0},
        {HOST, "[fe80::1%eth0]", 0, ALLOW_CANON_ZONE_ID, 0, NULL, 0},
        {HOST, "fe80::1%25eth0", 0, ALLOW_CANON_ZONE_ID, 0, NULL, 0},
        {HOST, "[2001:db8::1", 0, ALLOW_CANON_BAD_IPV6, 0, NULL, 0},
        {HOST, "[2001:db8:::1]", 0, ALLOW_CANON_BAD_IPV6, 0, NULL, 0},
        {HOST, "[127.0.0.1]", 0, ALLOW_CANON_BAD_IPV6, 0, NULL, 0},
        {HOST, "[]", 0, ALLOW_CANON_BAD_IPV6, 0, NULL, 0},
        {HOST, "[::1]:443", 0, ALLOW_CANON_BAD_IPV6, 0, NULL, 0},
        {HOST, "[::1\0]", 6, ALLOW_CANON_BAD_IPV6, 0, NULL, 0},
        /* refusals */
        {HOST, "", 0, ALLOW_CANON_EMPTY, 0, NULL, 0},
        {HOST, ".", 0, ALLOW_CANON_EMPTY_LABEL, 0, NULL, 0},
        {HOST, "a..b.test", 0, ALLOW_CANON_EMPTY_LABEL, 0, NULL, 0},
        {HOST, ".a.test", 0, ALLOW_CANON_EMPTY_LABEL, 0, NULL, 0},
        {HOST, "a.test..", 0, ALLOW_CANON_EMPTY_LABEL, 0, NULL, 0},
        {HOST, "under_score.test", 0, ALLOW_CANON_BAD_CHAR, 0, NULL, 0},
        {HOST, "sp ace.test", 0, ALLOW_CANON_BAD_CHAR, 0, NULL, 0},
        {HOST, "tab\t.test", 0, ALLOW_CANON_BAD_CHAR, 0, NULL, 0},
        {HOST, "nul\0.test", 9, ALLOW_CANON_BAD_CHAR, 0, NULL, 0},
        {HOST, "pct%41.test", 0, ALLOW_CANON_BAD_CHAR, 0, NULL, 0},
        {HOST, "a/b.test", 0, ALLOW_CANON_BAD_CHAR, 0, NULL, 0},
        {HOST, "a\\b.test", 0, ALLOW_CANON_BAD_CHAR, 0, NULL, 0},
        {HOST, "*.test", 0, ALLOW_CANON_BAD_CHAR, 0, NULL, 0},
        {HOST,
                "b\xc3\xbc"
                "cher.test",
                0, ALLOW_CANON_NON_ASCII, 0, NULL, 0},
        {HOST, "\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97.0.0.1", 0, ALLOW_CANON_NON_ASCII, 0, NULL, 0},
        {HOST, "-a.test", 0, ALLOW_CANON_BAD_LABEL, 0, NULL, 0},
        {HOST, "a-.test", 0, ALLOW_CANON_BAD_LABEL, 0, NULL, 0},
        {HOST, "a.test-", 0, ALLOW_CANON_BAD_LABEL, 0, NULL, 0},
        {HOST, "user@example.test", 0, ALLOW_CANON_USERINFO, 0, NULL, 0},
        {HOST, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.test", 0,
                ALLOW_CANON_OK, ALLOW_HOST_NAME,
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.test", 0},
        {HOST, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.test", 0,
                ALLOW_CANON_LABEL_TOO_LONG, 0, NULL, 0},
        /* authorities */
        {AUTH, "Example.TEST.:8443", 0, ALLOW_CANON_OK, ALLOW_HOST_NAME, "example.test", 8443},
        {AUTH, "example.test", 0, ALLOW_CANON_OK, ALLOW_HOST_NAME, "example.test", 443},
        {AUTH, "example.test:1", 0, ALLOW_CANON_OK, ALLOW_HOST_NAME, "example.test", 1},
        {AUTH, "example.test:65535", 0, ALLOW_CANON_OK, ALLOW_HOST_NAME, "example.test", 65535},
        {AUTH, "127.1:80", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV4, "127.0.0.1", 80},
        {AUTH, "2130706433:80", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV4, "127.0.0.1", 80},
        {AUTH, "[::1]:8443", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV6, "::1", 8443},
        {AUTH, "[2001:DB8::A]", 0, ALLOW_CANON_OK, ALLOW_HOST_IPV6, "2001:db8::a", 443},
        {CONN, "example.test:443", 0, ALLOW_CANON_OK, ALLOW_HOST_NAME, "example.test", 443},
        {CONN, "example.test", 0, ALLOW_CANON_MISSING_PORT, 0, NULL, 0},
        {CONN, "[::1]", 0, ALLOW_CANON_MISSING_PORT, 0, NULL, 0},
        {AUTH, "example.test:0", 0, ALLOW_CANON_BAD_PORT, 0, NULL, 0},
        {AUTH, "example.test:65536", 0, ALLOW_CANON_BAD_PORT, 0, NULL, 0},
        {AUTH, "example.test:080", 0, ALLOW_CANON_BAD_PORT, 0, NULL, 0},
        {AUTH, "example.test:+80", 0, ALLOW_CANON_BAD_PORT, 0, NULL, 0},
        {AUTH, "example.test:-80", 0, ALLOW_CANON_BAD_PORT, 0, NULL, 0},
        {AUTH, "example.test:", 0, ALLOW_CANON_BAD_PORT, 0, NULL, 0},
        {AUTH, "example.test:100000", 0, ALLOW_CANON_BAD_PORT, 0, NULL, 0},
        {AUTH, "example.test:8o", 0, ALLOW_CANON_BAD_PORT, 0, NULL, 0},
        {AUTH, "example.test: 80", 0, ALLOW_CANON_BAD_PORT, 0, NULL, 0},
        {AUTH, "example.test:\xef\xbc\x98\xef\xbc\x90", 0, ALLOW_CANON_BAD_PORT, 0, NULL, 0},
        {AUTH, "user:pw@example.test:443", 0, ALLOW_CANON_USERINFO, 0, NULL, 0},
        {AUTH, "example.test@evil.test", 0, ALLOW_CANON_USERINFO, 0, NULL, 0},
        {AUTH, "2001:db8::1", 0, ALLOW_CANON_BAD_IPV6, 0, NULL, 0},
        {AUTH, "::1:443", 0, ALLOW_CANON_BAD_IPV6, 0, NULL, 0},
        {AUTH, "[::1]x", 0, ALLOW_CANON_BAD_IPV6, 0, NULL, 0},
        {AUTH, "[::1]:", 0, ALLOW_CANON_BAD_PORT, 0, NULL, 0},
        {AUTH, "[fe80::1%25eth0]:443", 0, ALLOW_CANON_ZONE_ID, 0, NULL, 0},
        {AUTH, ":443", 0, ALLOW_CANON_EMPTY, 0, NULL, 0},
        {AUTH, "", 0, ALLOW_CANON_EMPTY, 0, NULL, 0},
        {AUTH, "256.1:80", 0, ALLOW_CANON_BAD_IPV4, 0, NULL, 0},
        {AUTH, "evil.test\0.example.test:443", 27, ALLOW_CANON_BAD_CHAR, 0, NULL, 0},
};

static enum allow_canon_err run(const struct canon_case *c, struct allow_dest *d)
{
	size_t len = c->len ? c->len : strlen(c->in);
	switch (c->mode) {
	case HOST:
		return allow_canon_host(c->in, len, d);
	case AUTH:
		return allow_canon_authority(c->in, len, 443, d);
	case CONN:
		return allow_canon_authority(c->in, len, 0, d);
	}
	return ALLOW_CANON_EMPTY;
}

static void test_canon_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct canon_case *c = &cases[i];
		struct allow_dest d;
		memset(&d, 0x5a, sizeof d);
		enum allow_canon_err e = run(c, &d);
		if (e != c->err)
			fail_msg("case %zu \"%s\": got error %d (%s), want %d (%s)", i, c->in, e,
			        allow_canon_strerror(e), c->err, allow_canon_strerror(c->err));
		if (e != ALLOW_CANON_OK) {
			/* A refusal leaves nothing a careless caller could use. */
			assert_string_equal(d.host, "");
			continue;
		}
		if (d.kind != c->kind || strcmp(d.host, c->host) != 0 || d.port != c->port)
			fail_msg("case %zu \"%s\": got kind %d host \"%s\" port %u, want %d \"%s\" "
			         "%u",
			        i, c->in, d.kind, d.host, d.port, c->kind, c->host, c->port);
	}
}

/* Canonicalising a canonical result again must give the identical result. */
static void test_canon_round_trip(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct allow_dest d, again;
		if (run(&cases[i], &d) != ALLOW_CANON_OK)
			continue;
		assert_int_equal(allow_canon_host(d.host, strlen(d.host), &again), ALLOW_CANON_OK);
		assert_int_equal(again.kind, d.kind);
		assert_string_equal(again.host, d.host);
		assert_memory_equal(again.addr, d.addr, 16);
	}
}

static void test_canon_addr_bytes(void **state)
{
	(void)state;
	struct allow_dest d;
	static const uint8_t v4[4] = {169, 254, 169, 254};
	assert_int_equal(allow_canon_host("0xa9fea9fe", 10, &d), ALLOW_CANON_OK);
	assert_memory_equal(d.addr, v4, 4);
	static const uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 1};
	assert_int_equal(allow_canon_authority("[2001:db8::1]:443", 17, 0, &d), ALLOW_CANON_OK);
	assert_memory_equal(d.addr, v6, 16);
	assert_int_equal(allow_canon_host("example.test", 12, &d), ALLOW_CANON_OK);
	static const uint8_t zero[16] = {0};
	assert_memory_equal(d.addr, zero, 16);
}

/* Length limits are counted on the canonical name: 253 bytes pass, 254 do not, and the one
 * trailing dot allowed does not count. */
static void test_canon_name_length(void **state)
{
	(void)state;
	char name[300];
	struct allow_dest d;
	/* 4 labels of 63 = 255 with dots; trim to exactly 253. */
	memset(name, 'a', sizeof name);
	for (size_t i = 63; i < sizeof name; i += 64)
		name[i] = '.';
	name[253] = '\0';
	assert_int_equal(allow_canon_host(name, 253, &d), ALLOW_CANON_OK);
	assert_int_equal(strlen(d.host), 253);
	name[253] = '.';
	assert_int_equal(allow_canon_host(name, 254, &d), ALLOW_CANON_OK);
	assert_int_equal(strlen(d.host), 253);
	name[253] = 'a';
	assert_int_equal(allow_canon_host(name, 254, &d), ALLOW_CANON_NAME_TOO_LONG);
	name[254] = '.';
	assert_int_equal(allow_canon_host(name, 255, &d), ALLOW_CANON_NAME_TOO_LONG);
}

static void test_port_parse(void **state)
{
	(void)state;
	uint16_t p = 7;
	assert_int_equal(allow_port_parse("80", 2, &p), 0);
	assert_int_equal(p, 80);
	assert_int_equal(allow_port_parse("65535", 5, &p), 0);
	assert_int_equal(p, 65535);
	p = 7;
	assert_int_equal(allow_port_parse("0080", 4, &p), -1);
	assert_int_equal(allow_port_parse("0", 1, &p), -1);
	assert_int_equal(allow_port_parse("", 0, &p), -1);
	assert_int_equal(allow_port_parse("123456", 6, &p), -1);
	assert_int_equal(p, 7);
}

static void test_strerror(void **state)
{
	(void)state;
	assert_string_equal(
	        allow_canon_strerror(ALLOW_CANON_LABEL_TOO_LONG), "label over 63 bytes");
	for (int e = ALLOW_CANON_OK; e <= ALLOW_CANON_USERINFO; e++)
		assert_string_not_equal(
		        allow_canon_strerror((enum allow_canon_err)e), "unknown error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_canon_table),
	        cmocka_unit_test(test_canon_round_trip),
	        cmocka_unit_test(test_canon_addr_bytes),
	        cmocka_unit_test(test_canon_name_length),
	        cmocka_unit_test(test_port_parse),
	        cmocka_unit_test(test_strerror),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
