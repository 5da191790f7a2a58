/* The SOCKS5 client messages (proxy/socks5.c): one table per message kind with the exact result
 * of each case (result, bytes used, fields, reply code), the bytes curl sends, and every prefix
 * of every whole message (MORE, never BAD). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "proxy/socks5.h"

#define MORE PROXY_SOCKS5_MORE
#define OK PROXY_SOCKS5_OK
#define BAD PROXY_SOCKS5_BAD

/* A message as bytes: a string literal with its length (sizeof - 1, so NUL bytes may be inside). */
#define B(s) (const uint8_t *)(s), sizeof(s) - 1

/* ---- greeting ---- */

struct greeting_case {
	const uint8_t *in;
	size_t len;
	enum proxy_socks5_result want;
	size_t used;
	unsigned methods;
	const char *why; /* a word the reason holds (BAD) */
};

static const struct greeting_case greetings[] = {
        {B(""), MORE, 0, 0, NULL},
        {B("\x05"), MORE, 0, 0, NULL},
        {B("\x05\x01"), MORE, 0, 0, NULL},
        {B("\x05\x01\x00"), OK, 3, PROXY_SOCKS5_NOAUTH, NULL},
        {B("\x05\x01\x02"), OK, 3, PROXY_SOCKS5_USERPASS, NULL},
        /* curl: no authentication and GSSAPI; with -U also username/password */
        {B("\x05\x02\x00\x01"), OK, 4, PROXY_SOCKS5_NOAUTH, NULL},
        {B("\x05\x03\x00\x01\x02"), OK, 5, PROXY_SOCKS5_NOAUTH | PROXY_SOCKS5_USERPASS, NULL},
        /* only methods egressd does not speak: OK with none (the front door answers 0xff) */
        {B("\x05\x02\x01\x80"), OK, 4, 0, NULL},
        /* the request that follows is not part of the greeting */
        {B("\x05\x01\x00\x05\x01\x00\x01"), OK, 3, PROXY_SOCKS5_NOAUTH, NULL},
        {B("\x05\x03\x00\x02"), MORE, 0, 0, NULL},
        {B("\x04\x01\x00\x50"), BAD, 0, 0, "version"}, /* SOCKS4 */
        {B("\x16\x03\x01"), BAD, 0, 0, "version"},     /* TLS */
        {B("GET / HTTP/1.1\r\n"), BAD, 0, 0, "version"},
        {B("\x05\x00"), BAD, 0, 0, "no method"},
};

static void test_greeting_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof greetings / sizeof greetings[0]; i++) {
		const struct greeting_case *c = &greetings[i];
		size_t used = 99;
		unsigned methods = 99;
		const char *why = NULL;
		enum proxy_socks5_result r =
		        proxy_socks5_greeting(c->in, c->len, &used, &methods, &why);
		print_message("greeting case %zu\n", i);
		assert_int_equal(r, c->want);
		assert_int_equal(used, c->used);
		if (r == OK)
			assert_int_equal(methods, c->methods);
		if (r == BAD) {
			assert_non_null(why);
			assert_non_null(strstr(why, c->why));
		}
	}
}

static void test_greeting_all_methods(void **state)
{
	(void)state;
	uint8_t g[2 + 255];
	g[0] = 5;
	g[1] = 255;
	for (int i = 0; i < 255; i++)
		g[2 + i] = (uint8_t)i;
	size_t used;
	unsigned methods;
	assert_int_equal(proxy_socks5_greeting(g, sizeof g, &used, &methods, NULL), OK);
	assert_int_equal(used, 257);
	assert_int_equal(methods, PROXY_SOCKS5_NOAUTH | PROXY_SOCKS5_USERPASS);
	for (size_t n = 0; n < sizeof g; n++)
		assert_int_equal(proxy_socks5_greeting(g, n, &used, &methods, NULL), MORE);
}

/* ---- username/password ---- */

struct auth_case {
	const uint8_t *in;
	size_t len;
	enum proxy_socks5_result want;
	size_t used;
	const char *user, *pass;
	const char *why;
};

static const struct auth_case auths[] = {
        {B(""), MORE, 0, "", "", NULL},
        {B("\x01"), MORE, 0, "", "", NULL},
        {B("\x01\x05"
           "age"),
                MORE, 0, "", "", NULL},
        {B("\x01\x05"
           "agent"),
                MORE, 0, "", "", NULL},
        {B("\x01\x05"
           "agent\x05"
           "tok"),
                MORE, 0, "", "", NULL},
        /* curl -U agent:s3cret-token */
        {B("\x01\x05"
           "agent\x0c"
           "s3cret-token"),
                OK, 20, "agent", "s3cret-token", NULL},
        {B("\x01\x01"
           "a\x01"
           "b"
           "\x05\x01"),
                OK, 5, "a", "b", NULL},
        {B("\x05\x05"
           "agent\x05"
           "token"),
                BAD, 0, "", "", "version"},
        {B("\x01\x00\x05"
           "token"),
                BAD, 0, "", "", "empty SOCKS5 username"},
        {B("\x01\x05"
           "agent\x00"),
                BAD, 0, "", "", "empty SOCKS5 password"},
        {B("\x01\x05"
           "ag\x00nt\x05"
           "token"),
                BAD, 0, "", "", "NUL"},
        {B("\x01\x05"
           "agent\x05"
           "to\x00"
           "en"),
                BAD, 0, "", "", "NUL"},
};

static void test_auth_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof auths / sizeof auths[0]; i++) {
		const struct auth_case *c = &auths[i];
		char user[256], pass[256];
		size_t used = 99, ulen = 99, plen = 99;
		const char *why = NULL;
		print_message("auth case %zu\n", i);
		enum proxy_socks5_result r =
		        proxy_socks5_auth(c->in, c->len, &used, user, &ulen, pass, &plen, &why);
		assert_int_equal(r, c->want);
		assert_int_equal(used, c->used);
		assert_string_equal(user, c->user);
		assert_string_equal(pass, c->pass);
		assert_int_equal(ulen, strlen(c->user));
		assert_int_equal(plen, strlen(c->pass));
		if (r == BAD) {
			assert_non_null(why);
			assert_non_null(strstr(why, c->why));
		}
	}
}

static void test_auth_longest(void **state)
{
	(void)state;
	uint8_t a[3 + 255 + 255];
	a[0] = 1;
	a[1] = 255;
	memset(a + 2, 'u', 255);
	a[257] = 255;
	memset(a + 258, 'p', 255);
	char user[256], pass[256];
	size_t used, ulen, plen;
	assert_int_equal(proxy_socks5_auth(a, sizeof a, &used, user, &ulen, pass, &plen, NULL), OK);
	assert_int_equal(used, 513);
	assert_int_equal(ulen, 255);
	assert_int_equal(plen, 255);
	assert_int_equal(strlen(user), 255);
	assert_int_equal(strlen(pass), 255);
	assert_int_equal(user[254], 'u');
	assert_int_equal(pass[254], 'p');
}

/* ---- request ---- */

struct request_case {
	const uint8_t *in;
	size_t len;
	enum proxy_socks5_result want;
	size_t used;
	uint8_t cmd, atyp;
	const char *host;
	uint16_t port;
	uint8_t reply; /* BAD's reply code */
	const char *why;
};

static const struct request_case requests[] = {
        /* what curl --socks5-hostname, --socks5 (IPv4, IPv6) send */
        {B("\x05\x01\x00\x03\x0c"
           "allowed.test\x00\x50"),
                OK, 19, 1, 3, "allowed.test", 80, 0, NULL},
        {B("\x05\x01\x00\x01\xc0\x00\x02\x0a\x1f\x90"), OK, 10, 1, 1, "192.0.2.10", 8080, 0, NULL},
        {B("\x05\x01\x00\x04\x20\x01\x0d\xb8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x07"
           "\x01\xbb"),
                OK, 22, 1, 4, "2001:db8::7", 443, 0, NULL},
        {B("\x05\x01\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\x7f\x00\x00\x01"
           "\x00\x16"),
                OK, 22, 1, 4, "::ffff:127.0.0.1", 22, 0, NULL},
        /* BIND and UDP ASSOCIATE parse (the front door answers 0x07) */
        {B("\x05\x02\x00\x03\x06"
           "a.test\x01\xbb"),
                OK, 13, 2, 3, "a.test", 443, 0, NULL},
        {B("\x05\x03\x00\x01\x00\x00\x00\x00\x00\x00"), OK, 10, 3, 1, "0.0.0.0", 0, 0, NULL},
        /* a name is as sent: case, dots and bytes the pipeline judges */
        {B("\x05\x01\x00\x03\x0d"
           "Allowed.Test.\x01\xbb"),
                OK, 20, 1, 3, "Allowed.Test.", 443, 0, NULL},
        {B("\x05\x01\x00\x03\x01"
           "a\xff\xff"),
                OK, 8, 1, 3, "a", 65535, 0, NULL},
        /* what follows the request (a ClientHello) is not part of it */
        {B("\x05\x01\x00\x03\x06"
           "a.test\x01\xbb\x16\x03\x01"),
                OK, 13, 1, 3, "a.test", 443, 0, NULL},
        /* cut short */
        {B(""), MORE, 0, 0, 0, "", 0, 0, NULL},
        {B("\x05\x01\x00"), MORE, 0, 0, 0, "", 0, 0, NULL},
        {B("\x05\x01\x00\x03"), MORE, 0, 0, 0, "", 0, 0, NULL},
        {B("\x05\x01\x00\x03\x0c"
           "allowed.test\x00"),
                MORE, 0, 0, 0, "", 0, 0, NULL},
        {B("\x05\x01\x00\x01\xc0\x00\x02\x0a\x1f"), MORE, 0, 0, 0, "", 0, 0, NULL},
        {B("\x05\x01\x00\x04\x20\x01\x0d\xb8"), MORE, 0, 0, 0, "", 0, 0, NULL},
        /* refused, with the reply code that fits */
        {B("\x04\x01\x00\x01"), BAD, 0, 0, 0, "", 0, 0x01, "version"},
        {B("\x05\x04\x00\x01\xc0\x00\x02\x0a\x00\x50"), BAD, 0, 0, 0, "", 0, 0x07, "command"},
        {B("\x05\x00\x00\x01\xc0\x00\x02\x0a\x00\x50"), BAD, 0, 0, 0, "", 0, 0x07, "command"},
        {B("\x05\x01\x00\x02\xc0\x00\x02\x0a\x00\x50"), BAD, 0, 0, 0, "", 0, 0x08, "address type"},
        {B("\x05\x01\x00\x05"), BAD, 0, 0, 0, "", 0, 0x08, "address type"},
        {B("\x05\x01\x01\x01\xc0\x00\x02\x0a\x00\x50"), BAD, 0, 0, 0, "", 0, 0x01, "reserved"},
        {B("\x05\x01\x00\x03\x00\x00\x50"), BAD, 0, 0, 0, "", 0, 0x01, "empty"},
        {B("\x05\x01\x00\x03\x0f"
           "allowed\x00.evil.t\x01\xbb"),
                BAD, 0, 0, 0, "", 0, 0x01, "NUL"},
};

static void test_request_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof requests / sizeof requests[0]; i++) {
		const struct request_case *c = &requests[i];
		struct proxy_socks5_req r;
		size_t used = 99;
		uint8_t reply = 0xee;
		const char *why = NULL;
		print_message("request case %zu\n", i);
		enum proxy_socks5_result res =
		        proxy_socks5_request(c->in, c->len, &used, &r, &reply, &why);
		assert_int_equal(res, c->want);
		assert_int_equal(used, c->used);
		if (res == OK) {
			assert_int_equal(r.cmd, c->cmd);
			assert_int_equal(r.atyp, c->atyp);
			assert_string_equal(r.host, c->host);
			assert_int_equal(r.port, c->port);
		}
		if (res == BAD) {
			assert_int_equal(reply, c->reply);
			assert_non_null(why);
			assert_non_null(strstr(why, c->why));
		}
	}
}

static void test_request_longest_name(void **state)
{
	(void)state;
	uint8_t q[4 + 1 + 255 + 2];
	memcpy(q, "\x05\x01\x00\x03\xff", 5);
	memset(q + 5, 'a', 255);
	q[260] = 0x01;
	q[261] = 0xbb;
	struct proxy_socks5_req r;
	size_t used;
	uint8_t reply;
	assert_int_equal(proxy_socks5_request(q, sizeof q, &used, &r, &reply, NULL), OK);
	assert_int_equal(used, 262); /* front_socks5.c hands the parser at most 262 bytes */
	assert_int_equal(strlen(r.host), 255);
	assert_int_equal(r.port, 443);
}

/* Every prefix of every whole message is MORE, never BAD, and uses nothing. */
static void test_prefixes_are_more(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof greetings / sizeof greetings[0]; i++) {
		if (greetings[i].want != OK)
			continue;
		for (size_t n = 0; n < greetings[i].used; n++) {
			size_t used = 99;
			unsigned m;
			assert_int_equal(
			        proxy_socks5_greeting(greetings[i].in, n, &used, &m, NULL), MORE);
			assert_int_equal(used, 0);
		}
	}
	for (size_t i = 0; i < sizeof auths / sizeof auths[0]; i++) {
		if (auths[i].want != OK)
			continue;
		for (size_t n = 0; n < auths[i].used; n++) {
			char u[256], p[256];
			size_t used = 99, ul, pl;
			assert_int_equal(
			        proxy_socks5_auth(auths[i].in, n, &used, u, &ul, p, &pl, NULL),
			        MORE);
			assert_int_equal(used, 0);
		}
	}
	for (size_t i = 0; i < sizeof requests / sizeof requests[0]; i++) {
		if (requests[i].want != OK)
			continue;
		for (size_t n = 0; n < requests[i].used; n++) {
			struct proxy_socks5_req r;
			size_t used = 99;
			uint8_t reply;
			assert_int_equal(
			        proxy_socks5_request(requests[i].in, n, &used, &r, &reply, NULL),
			        MORE);
			assert_int_equal(used, 0);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_greeting_table),
	        cmocka_unit_test(test_greeting_all_methods),
	        cmocka_unit_test(test_auth_table),
	        cmocka_unit_test(test_auth_longest),
	        cmocka_unit_test(test_request_table),
	        cmocka_unit_test(test_request_longest_name),
	        cmocka_unit_test(test_prefixes_are_more),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
