/* proxy_sni_parse on real ClientHellos written by OpenSSL, on every prefix of them, and on
 * hand-edited hellos for each way a hello can be refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>

#include "proxy/sni.h"

#define HELLO_CAP 20000

struct bytes {
	uint8_t b[HELLO_CAP]; /* content */
	size_t n;             /* length */
};

/* Lets OpenSSL write the first flight of a client into out.  frag > 0 caps its record size, so a
 * large hello spans records; alpn_count > 0 adds that many 40-byte ALPN names to make it large. */
static void openssl_hello(
        struct bytes *out, const char *sni, int minv, int maxv, unsigned frag, int alpn_count)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	assert_non_null(ctx);
	if (minv)
		assert_int_equal(SSL_CTX_set_min_proto_version(ctx, minv), 1);
	if (maxv)
		assert_int_equal(SSL_CTX_set_max_proto_version(ctx, maxv), 1);
	SSL *ssl = SSL_new(ctx);
	assert_non_null(ssl);
	BIO *rb = BIO_new(BIO_s_mem());
	BIO *wb = BIO_new(BIO_s_mem());
	assert_non_null(rb);
	assert_non_null(wb);
	SSL_set_bio(ssl, rb, wb);
	if (sni != NULL)
		assert_int_equal(SSL_set_tlsext_host_name(ssl, sni), 1);
	if (frag)
		assert_int_equal(SSL_set_max_send_fragment(ssl, frag), 1);
	if (alpn_count > 0) {
		static unsigned char alpn[64 * 41];
		size_t n = 0;
		for (int i = 0; i < alpn_count && n + 41 <= sizeof alpn; i++) {
			alpn[n++] = 40;
			memset(alpn + n, 'a' + i % 26, 40);
			n += 40;
		}
		assert_int_equal(SSL_set_alpn_protos(ssl, alpn, (unsigned)n), 0); /* 0 is success */
	}
	SSL_set_connect_state(ssl);
	int rc = SSL_connect(ssl);
	assert_int_equal(rc, -1);
	assert_int_equal(SSL_get_error(ssl, rc), SSL_ERROR_WANT_READ);
	int n = BIO_read(wb, out->b, sizeof out->b);
	assert_true(n > 0);
	out->n = (size_t)n;
	SSL_free(ssl);
	SSL_CTX_free(ctx);
}

static size_t count_records(const struct bytes *h)
{
	size_t off = 0, n = 0;
	while (off + 5 <= h->n) {
		off += 5 + ((size_t)h->b[off + 3] << 8 | h->b[off + 4]);
		n++;
	}
	return n;
}

/* The handshake message of a one-record hello: the record's payload. */
static void payload(const struct bytes *rec, struct bytes *msg)
{
	assert_int_equal(count_records(rec), 1);
	msg->n = rec->n - 5;
	memcpy(msg->b, rec->b + 5, msg->n);
}

/* Frames msg into records cut at the increasing msg offsets cuts[0..ncuts). */
static void reframe(const struct bytes *msg, const size_t *cuts, size_t ncuts, struct bytes *out)
{
	size_t start = 0;
	out->n = 0;
	for (size_t i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : msg->n;
		size_t len = end - start;
		uint8_t hdr[5] = {22, 3, 1, (uint8_t)(len >> 8), (uint8_t)len};
		memcpy(out->b + out->n, hdr, 5);
		memcpy(out->b + out->n + 5, msg->b + start, len);
		out->n += 5 + len;
		start = end;
	}
}

static unsigned be16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

/* Offset in the handshake message of the extension of type, and its total length (header
 * included).  Returns 0 when absent. */
static size_t find_ext(const struct bytes *msg, unsigned type, size_t *extlen)
{
	size_t p = 4 + 2 + 32;
	p += 1 + msg->b[p];
	p += 2 + be16(msg->b + p);
	p += 1 + msg->b[p];
	size_t end = p + 2 + be16(msg->b + p);
	p += 2;
	while (p < end) {
		size_t len = be16(msg->b + p + 2);
		if (be16(msg->b + p) == type) {
			*extlen = 4 + len;
			return p;
		}
		p += 4 + len;
	}
	return 0;
}

static enum proxy_sni_result parse(const struct bytes *h, char *name, const char **why)
{
	return proxy_sni_parse(h->b, h->n, name, PROXY_SNI_NAME_BUF, why);
}

static void expect(const struct bytes *h, enum proxy_sni_result want, const char *want_name,
        const char *want_why)
{
	char name[PROXY_SNI_NAME_BUF];
	const char *why = "unset";
	enum proxy_sni_result r = parse(h, name, &why);
	if (r != want) {
		print_error("got %s (%s), want %s\n", proxy_sni_result_name(r), why ? why : "-",
		        proxy_sni_result_name(want));
		fail();
	}
	if (want == PROXY_SNI_FOUND) {
		assert_string_equal(name, want_name);
		assert_null(why);
	} else if (want == PROXY_SNI_NEED_MORE) {
		assert_null(why);
	} else {
		assert_non_null(why);
		if (want_why != NULL && strstr(why, want_why) == NULL) {
			print_error("reason \"%s\" lacks \"%s\"\n", why, want_why);
			fail();
		}
	}
}

/* Every proper prefix is NEED_MORE; the whole is want. */
static void expect_prefixes(const struct bytes *h, enum proxy_sni_result want, const char *nm)
{
	for (size_t len = 0; len < h->n; len++) {
		char name[PROXY_SNI_NAME_BUF];
		const char *why = "unset";
		enum proxy_sni_result r = proxy_sni_parse(h->b, len, name, sizeof name, &why);
		if (r != PROXY_SNI_NEED_MORE) {
			print_error("prefix %zu of %zu: got %s (%s)\n", len, h->n,
			        proxy_sni_result_name(r), why ? why : "-");
			fail();
		}
		assert_null(why);
	}
	expect(h, want, nm, NULL);
}

static void test_openssl_hellos(void **state)
{
	(void)state;
	static struct bytes h;

	openssl_hello(&h, "origin.test", TLS1_3_VERSION, TLS1_3_VERSION, 0, 0);
	expect_prefixes(&h, PROXY_SNI_FOUND, "origin.test");

	openssl_hello(&h, "api.origin.test", TLS1_2_VERSION, TLS1_2_VERSION, 0, 0);
	expect_prefixes(&h, PROXY_SNI_FOUND, "api.origin.test");

	openssl_hello(&h, "origin.test", 0, 0, 0, 0);
	expect_prefixes(&h, PROXY_SNI_FOUND, "origin.test");

	/* The name comes back as sent: the caller canonicalises. */
	openssl_hello(&h, "Mixed-Case.Origin.TEST.", 0, 0, 0, 0);
	expect(&h, PROXY_SNI_FOUND, "Mixed-Case.Origin.TEST.", NULL);

	/* A longest-label name. */
	char longname[80];
	memset(longname, 'x', 63);
	memcpy(longname + 63, ".test", 6);
	openssl_hello(&h, longname, 0, 0, 0, 0);
	expect(&h, PROXY_SNI_FOUND, longname, NULL);
}

static void test_openssl_no_sni(void **state)
{
	(void)state;
	static struct bytes h;
	openssl_hello(&h, NULL, TLS1_3_VERSION, TLS1_3_VERSION, 0, 0);
	expect_prefixes(&h, PROXY_SNI_NONE, NULL);
	expect(&h, PROXY_SNI_NONE, NULL, "no server_name");
	openssl_hello(&h, NULL, TLS1_2_VERSION, TLS1_2_VERSION, 0, 0);
	expect_prefixes(&h, PROXY_SNI_NONE, NULL);
}

static void test_openssl_multi_record(void **state)
{
	(void)state;
	static struct bytes h;
	/* ~2.6 KB of ALPN and 512-byte records: OpenSSL itself spreads the hello. */
	openssl_hello(&h, "origin.test", 0, 0, 512, 64);
	assert_true(count_records(&h) >= 4);
	expect_prefixes(&h, PROXY_SNI_FOUND, "origin.test");

	/* Bytes after the hello's last record (a change_cipher_spec, early data) are not read. */
	static const uint8_t more[] = {20, 3, 3, 0, 1, 1, 23, 3, 3, 0, 2, 'h', 'i'};
	memcpy(h.b + h.n, more, sizeof more);
	h.n += sizeof more;
	expect(&h, PROXY_SNI_FOUND, "origin.test", NULL);
}

/* Re-framing a real hello at every offset: a cut inside the server_name extension is refused,
 * a cut anywhere else is read across records. */
static void test_split_across_records(void **state)
{
	(void)state;
	static struct bytes rec, msg, out;
	openssl_hello(&rec, "split.origin.test", TLS1_3_VERSION, TLS1_3_VERSION, 0, 0);
	payload(&rec, &msg);
	size_t extlen = 0;
	size_t ext = find_ext(&msg, 0, &extlen);
	assert_true(ext > 0);

	for (size_t cut = 1; cut < msg.n; cut++) {
		reframe(&msg, &cut, 1, &out);
		if (cut > ext && cut < ext + extlen) {
			expect(&out, PROXY_SNI_BAD, NULL, "server name split across records");
		} else {
			expect(&out, PROXY_SNI_FOUND, "split.origin.test", NULL);
		}
	}

	/* Three records, the cuts right before and right after the extension. */
	size_t cuts[2] = {ext, ext + extlen};
	reframe(&msg, cuts, 2, &out);
	expect_prefixes(&out, PROXY_SNI_FOUND, "split.origin.test");

	/* One handshake byte per record: the name is always split, and there are too many. */
	static size_t many[PROXY_SNI_RECORDS_MAX + 1];
	for (size_t i = 0; i < PROXY_SNI_RECORDS_MAX + 1; i++)
		many[i] = i + 1;
	reframe(&msg, many, PROXY_SNI_RECORDS_MAX + 1, &out);
	expect(&out, PROXY_SNI_BAD, NULL, "too many records");

	/* Another record type between two parts of the hello. */
	size_t mid = ext + extlen + 1;
	reframe(&msg, &mid, 1, &out);
	size_t second = 5 + mid;
	memmove(out.b + second + 6, out.b + second, out.n - second);
	static const uint8_t ccs[] = {20, 3, 3, 0, 1, 1};
	memcpy(out.b + second, ccs, sizeof ccs);
	out.n += 6;
	expect(&out, PROXY_SNI_BAD, NULL, "another record type");
}

/* A hand-built hello: fixed fields, then the given extension block (or none). */
static void build(struct bytes *out, const uint8_t *exts, size_t extlen, int no_ext_block)
{
	static struct bytes msg;
	size_t n = 4;
	msg.b[n++] = 3, msg.b[n++] = 3;
	memset(msg.b + n, 0x11, 32);
	n += 32;
	msg.b[n++] = 0;                 /* session id */
	msg.b[n++] = 0, msg.b[n++] = 2; /* cipher suites */
	msg.b[n++] = 0x13, msg.b[n++] = 0x01;
	msg.b[n++] = 1, msg.b[n++] = 0; /* compression: null */
	if (!no_ext_block) {
		msg.b[n++] = (uint8_t)(extlen >> 8);
		msg.b[n++] = (uint8_t)extlen;
		if (extlen > 0)
			memcpy(msg.b + n, exts, extlen);
		n += extlen;
	}
	size_t body = n - 4;
	msg.b[0] = 1;
	msg.b[1] = (uint8_t)(body >> 16), msg.b[2] = (uint8_t)(body >> 8), msg.b[3] = (uint8_t)body;
	msg.n = n;
	reframe(&msg, NULL, 0, out);
}

/* Appends a server_name extension with one entry (type, name) to e. */
static void add_sni(struct bytes *e, int type, const char *name, size_t nlen)
{
	size_t list = 3 + nlen;
	size_t ext = 2 + list;
	uint8_t hdr[9] = {0, 0, (uint8_t)(ext >> 8), (uint8_t)ext, (uint8_t)(list >> 8),
	        (uint8_t)list, (uint8_t)type, (uint8_t)(nlen >> 8), (uint8_t)nlen};
	memcpy(e->b + e->n, hdr, 9);
	memcpy(e->b + e->n + 9, name, nlen);
	e->n += 9 + nlen;
}

static void add_ext(struct bytes *e, unsigned type, const char *data, size_t len)
{
	uint8_t hdr[4] = {(uint8_t)(type >> 8), (uint8_t)type, (uint8_t)(len >> 8), (uint8_t)len};
	memcpy(e->b + e->n, hdr, 4);
	memcpy(e->b + e->n + 4, data, len);
	e->n += 4 + len;
}

static void test_built_good(void **state)
{
	(void)state;
	static struct bytes e, h;

	e.n = 0;
	add_ext(&e, 10, "\x00\x02\x00\x1d", 4);
	add_sni(&e, 0, "built.test", 10);
	add_ext(&e, 43, "\x02\x03\x04", 3);
	build(&h, e.b, e.n, 0);
	expect_prefixes(&h, PROXY_SNI_FOUND, "built.test");

	/* No extension block at all, and an empty one. */
	build(&h, NULL, 0, 1);
	expect(&h, PROXY_SNI_NONE, NULL, "no extensions");
	build(&h, NULL, 0, 0);
	expect(&h, PROXY_SNI_NONE, NULL, "no server_name");

	/* A name that fills namecap - 1 fits; one byte more does not. */
	e.n = 0;
	add_sni(&e, 0, "abcdefghij", 10);
	build(&h, e.b, e.n, 0);
	char name[11];
	const char *why;
	assert_int_equal(proxy_sni_parse(h.b, h.n, name, 11, &why), PROXY_SNI_FOUND);
	assert_string_equal(name, "abcdefghij");
	assert_int_equal(proxy_sni_parse(h.b, h.n, name, 10, &why), PROXY_SNI_BAD);
	assert_string_equal(why, "server name too long");
	assert_string_equal(name, "");
}

/* proxy_sni_hello reports an encrypted_client_hello extension (tls.refuseECH), with or without a
 * server_name, and nothing for a hello without one or one not complete yet. */
static void test_ech_flag(void **state)
{
	(void)state;
	static struct bytes e, h;
	char name[PROXY_SNI_NAME_BUF];
	const char *why;
	size_t used;
	unsigned flags;

	e.n = 0;
	add_sni(&e, 0, "outer.test", 10);
	build(&h, e.b, e.n, 0);
	flags = 99;
	assert_int_equal(proxy_sni_hello(h.b, h.n, name, sizeof name, &used, &flags, &why),
	        PROXY_SNI_FOUND);
	assert_int_equal(flags, 0);

	add_ext(&e, 0xfe0d, "\x00\x00\x01\x00\x01\x2a\x00\x01\x5e\x00\x01\xe5", 12);
	build(&h, e.b, e.n, 0);
	assert_int_equal(proxy_sni_hello(h.b, h.n, name, sizeof name, &used, &flags, &why),
	        PROXY_SNI_FOUND);
	assert_int_equal(flags, PROXY_SNI_F_ECH);
	assert_string_equal(name, "outer.test");
	assert_int_equal(used, h.n);
	/* a prefix says nothing yet */
	assert_int_equal(proxy_sni_hello(h.b, h.n - 1, name, sizeof name, &used, &flags, &why),
	        PROXY_SNI_NEED_MORE);
	assert_int_equal(flags, 0);

	e.n = 0;
	add_ext(&e, 0xfe0d, "\x01", 1); /* the inner form, alone */
	build(&h, e.b, e.n, 0);
	assert_int_equal(proxy_sni_hello(h.b, h.n, name, sizeof name, &used, &flags, &why),
	        PROXY_SNI_NONE);
	assert_int_equal(flags, PROXY_SNI_F_ECH);
}

struct bad_case {
	const char *what; /* the edit */
	const char *why;  /* part of the reason expected */
};

static void test_built_bad(void **state)
{
	(void)state;
	static struct bytes e, h;
	char name[PROXY_SNI_NAME_BUF];
	const char *why;

	/* Two server_name extensions. */
	e.n = 0;
	add_sni(&e, 0, "one.test", 8);
	add_ext(&e, 10, "\x00\x02\x00\x1d", 4);
	add_sni(&e, 0, "two.test", 8);
	build(&h, e.b, e.n, 0);
	expect(&h, PROXY_SNI_BAD, NULL, "two server_name extensions");

	/* Two names in one list. */
	e.n = 0;
	static const uint8_t two[] = {0, 0, 0, 22, 0, 20, 0, 0, 8, 'o', 'n', 'e', '.', 't', 'e',
	        's', 't', 0, 0, 8, 't', 'w', 'o', '.', 't', 'e', 's', 't'};
	memcpy(e.b, two, sizeof two);
	e.n = sizeof two;
	build(&h, e.b, e.n, 0);
	expect(&h, PROXY_SNI_BAD, NULL, "more than one server name");

	/* Name type 1. */
	e.n = 0;
	add_sni(&e, 1, "one.test", 8);
	build(&h, e.b, e.n, 0);
	expect(&h, PROXY_SNI_BAD, NULL, "not host_name");

	/* Empty name. */
	e.n = 0;
	add_sni(&e, 0, "", 0);
	build(&h, e.b, e.n, 0);
	expect(&h, PROXY_SNI_BAD, NULL, "empty server name");

	/* Bytes a host name cannot hold. */
	static const char *const odd[] = {"a b.test", "a\0b.test", "a/b.test", "a:443",
	        "caf\xc3\xa9.test", "a%2e.test", "a\n.test"};
	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
		e.n = 0;
		add_sni(&e, 0, odd[i], i == 1 ? 8 : strlen(odd[i]));
		build(&h, e.b, e.n, 0);
		expect(&h, PROXY_SNI_BAD, NULL, "cannot contain");
	}

	/* server_name list length does not match its extension. */
	e.n = 0;
	add_sni(&e, 0, "one.test", 8);
	e.b[5]++; /* list length */
	build(&h, e.b, e.n, 0);
	expect(&h, PROXY_SNI_BAD, NULL, "list length");

	/* The name length runs past the list. */
	e.n = 0;
	add_sni(&e, 0, "one.test", 8);
	e.b[8] = 9;
	build(&h, e.b, e.n, 0);
	expect(&h, PROXY_SNI_BAD, NULL, "runs past");

	/* Extension list length one too many and one too few. */
	e.n = 0;
	add_sni(&e, 0, "one.test", 8);
	build(&h, e.b, e.n, 0);
	h.b[5 + 4 + 2 + 32 + 1 + 4 + 2 + 1]++;
	expect(&h, PROXY_SNI_BAD, NULL, "extension list length");
	h.b[5 + 4 + 2 + 32 + 1 + 4 + 2 + 1] -= 2;
	expect(&h, PROXY_SNI_BAD, NULL, "extension list length");

	/* An extension whose length runs past the list. */
	e.n = 0;
	add_sni(&e, 0, "one.test", 8);
	add_ext(&e, 10, "\x00\x02\x00\x1d", 4);
	e.b[e.n - 5]++;
	build(&h, e.b, e.n, 0);
	expect(&h, PROXY_SNI_BAD, NULL, "runs past the extension list");

	/* Truncated inside a complete record: the cipher suite list runs past the hello. */
	e.n = 0;
	add_sni(&e, 0, "one.test", 8);
	build(&h, e.b, e.n, 0);
	h.b[5 + 4 + 2 + 32 + 1] = 0x01;
	expect(&h, PROXY_SNI_BAD, NULL, "cipher suite");

	/* Session id over 32 bytes. */
	build(&h, e.b, e.n, 0);
	h.b[5 + 4 + 2 + 32] = 33;
	expect(&h, PROXY_SNI_BAD, NULL, "session id");

	/* The record holds more than the handshake message says: detected from the header
	 * alone, before the rest of the record arrives. */
	build(&h, e.b, e.n, 0);
	h.b[5 + 3]--;
	expect(&h, PROXY_SNI_BAD, NULL, "inconsistent");
	assert_int_equal(proxy_sni_parse(h.b, 9, name, sizeof name, &why), PROXY_SNI_BAD);

	/* A handshake body too short to hold a hello. */
	static const uint8_t tiny[] = {22, 3, 1, 0, 6, 1, 0, 0, 2, 3, 3};
	assert_int_equal(
	        proxy_sni_parse(tiny, sizeof tiny, name, sizeof name, &why), PROXY_SNI_BAD);

	/* Not a ClientHello (a ServerHello), known from its first byte. */
	build(&h, e.b, e.n, 0);
	h.b[5] = 2;
	expect(&h, PROXY_SNI_BAD, NULL, "not a ClientHello");
	assert_int_equal(proxy_sni_parse(h.b, 6, name, sizeof name, &why), PROXY_SNI_BAD);

	/* Implausible record and hello versions. */
	build(&h, e.b, e.n, 0);
	h.b[2] = 9;
	expect(&h, PROXY_SNI_BAD, NULL, "record version");
	assert_int_equal(proxy_sni_parse(h.b, 3, name, sizeof name, &why), PROXY_SNI_BAD);
	build(&h, e.b, e.n, 0);
	h.b[5 + 4] = 2;
	expect(&h, PROXY_SNI_BAD, NULL, "ClientHello version");

	/* Record lengths: empty, and over 2^14. */
	static const uint8_t empty[] = {22, 3, 1, 0, 0};
	assert_int_equal(
	        proxy_sni_parse(empty, sizeof empty, name, sizeof name, &why), PROXY_SNI_BAD);
	static const uint8_t huge[] = {22, 3, 1, 0x40, 0x01, 1};
	assert_int_equal(
	        proxy_sni_parse(huge, sizeof huge, name, sizeof name, &why), PROXY_SNI_BAD);
	assert_string_equal(why, "record longer than 16384 bytes");

	/* A hello longer than the cap, said by its header. */
	static const uint8_t big[] = {22, 3, 1, 0, 4, 1, 0, 0x40, 0x01};
	assert_int_equal(proxy_sni_parse(big, sizeof big, name, sizeof name, &why), PROXY_SNI_BAD);
	assert_string_equal(why, "ClientHello longer than 16384 bytes");
}

static void test_not_tls(void **state)
{
	(void)state;
	char name[PROXY_SNI_NAME_BUF];
	const char *why;
	static const char *const texts[] = {"GET / HTTP/1.1\r\nHost: origin.test\r\n\r\n",
	        "SSH-2.0-", "G", "\x80\x2e\x01\x03\x01"};
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		why = NULL;
		assert_int_equal(proxy_sni_parse((const uint8_t *)texts[i], strlen(texts[i]), name,
		                         sizeof name, &why),
		        PROXY_SNI_NOT_TLS);
		assert_non_null(why);
	}
	/* 0x16 then a byte that is not a TLS major version. */
	assert_int_equal(proxy_sni_parse((const uint8_t *)"\x16\x02", 2, name, sizeof name, &why),
	        PROXY_SNI_NOT_TLS);
	/* Too little to tell. */
	assert_int_equal(proxy_sni_parse((const uint8_t *)"", 0, name, sizeof name, &why),
	        PROXY_SNI_NEED_MORE);
	assert_int_equal(proxy_sni_parse((const uint8_t *)"\x16\x03", 2, name, sizeof name, &why),
	        PROXY_SNI_NEED_MORE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_openssl_hellos),
	        cmocka_unit_test(test_openssl_no_sni),
	        cmocka_unit_test(test_openssl_multi_record),
	        cmocka_unit_test(test_split_across_records),
	        cmocka_unit_test(test_built_good),
	        cmocka_unit_test(test_ech_flag),
	        cmocka_unit_test(test_built_bad),
	        cmocka_unit_test(test_not_tls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
