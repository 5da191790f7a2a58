/* The tunnel first-bytes scanner (proxy/tscan.c) on real TLS flights and on hand-made bytes.
 *
 * The TLS flights come from an OpenSSL client and server shaking hands in memory (a throwaway
 * P-256 key and certificate), so the ClientHellos, the HelloRetryRequest (a server that offers
 * only P-256 against a client whose first key share is X25519) and the ServerHellos are what real
 * peers send.  A small driver feeds them the way proxy/tunnel.c does (client bytes held until
 * passed, server bytes held until the kind is known) and writes down every step that is not
 * MORE; each case compares that trace exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <string.h>

#include "proxy/tscan.h"

#define BUF_CAP 65536

struct bytes {
	uint8_t b[BUF_CAP]; /* content */
	size_t n;           /* length */
};

static void cat(struct bytes *to, const void *b, size_t n)
{
	assert_true(to->n + n <= sizeof to->b);
	memcpy(to->b + to->n, b, n);
	to->n += n;
}

/* ---- the driver: proxy/tunnel.c's step() with every name accepted ---- */

struct drive {
	struct proxy_tscan s;
	struct bytes c; /* client bytes held */
	struct bytes u; /* server bytes held */
	int client_spoke;
	int eof;          /* the client's end */
	int done;         /* OPEN, BAD, HTTP, or a server that spoke first */
	char trace[1024]; /* "kind:tls hello:NAME:N pass:N open ..." */
};

static const char *kind_name(enum allow_tunnel_kind k)
{
	switch (k) {
	case ALLOW_TUNNEL_TLS:
		return "tls";
	case ALLOW_TUNNEL_HTTP:
		return "http";
	case ALLOW_TUNNEL_SSH:
		return "ssh";
	case ALLOW_TUNNEL_OTHER:
		return "other";
	default:
		return "unknown";
	}
}

static void note(struct drive *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct drive *d, const char *fmt, ...)
{
	size_t len = strlen(d->trace);
	if (len > 0 && len + 1 < sizeof d->trace)
		d->trace[len++] = ' ';
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->trace + len, sizeof d->trace - len, fmt, ap);
	va_end(ap);
}

static void drive_init(struct drive *d, int port443)
{
	memset(d, 0, sizeof *d);
	proxy_tscan_init(&d->s, port443);
}

static void drop(struct bytes *b, size_t n)
{
	memmove(b->b, b->b + n, b->n - n);
	b->n -= n;
}

static void step(struct drive *d)
{
	while (!d->done) {
		if (d->c.n > 0)
			d->client_spoke = 1;
		if (d->u.n > 0 && d->s.phase != PROXY_TSCAN_PH_OPEN) {
			const char *why = NULL;
			enum proxy_tscan_step st =
			        proxy_tscan_server(&d->s, d->u.b, d->u.n, d->client_spoke, &why);
			if (st == PROXY_TSCAN_BAD) {
				note(d, "server-bad:%s", why);
				d->done = 1;
				return;
			}
			if (st == PROXY_TSCAN_KIND) {
				note(d, "server-kind:%s", kind_name(d->s.kind));
				d->done = 1;
				return;
			}
			if (d->s.phase != PROXY_TSCAN_PH_FIRST)
				d->u.n = 0; /* passed to the client */
			if (st == PROXY_TSCAN_OPEN) {
				note(d, "open");
				d->done = 1;
				return;
			}
		}
		if (d->c.n == 0 && !d->eof)
			return;
		size_t n = 0;
		char name[PROXY_SNI_NAME_BUF];
		const char *why = NULL;
		size_t look = d->c.n < PROXY_SNI_PEEK_MAX ? d->c.n : PROXY_SNI_PEEK_MAX;
		enum proxy_tscan_step st = proxy_tscan_client(
		        &d->s, d->c.b, look, d->eof, &n, name, sizeof name, &why);
		switch (st) {
		case PROXY_TSCAN_MORE:
			return;
		case PROXY_TSCAN_KIND:
			note(d, "kind:%s", kind_name(d->s.kind));
			if (d->s.kind == ALLOW_TUNNEL_HTTP)
				d->done = 1;
			continue;
		case PROXY_TSCAN_HELLO:
			note(d, "hello:%s:%zu", name, n);
			proxy_tscan_passed(&d->s, n);
			drop(&d->c, n);
			continue;
		case PROXY_TSCAN_PASS:
			note(d, "pass:%zu", n);
			drop(&d->c, n);
			continue;
		case PROXY_TSCAN_OPEN:
			note(d, "open");
			d->done = 1;
			return;
		case PROXY_TSCAN_BAD:
			note(d, "bad:%s", why);
			d->done = 1;
			return;
		}
	}
}

static void client(struct drive *d, const void *b, size_t n)
{
	cat(&d->c, b, n);
	step(d);
}

/* The client's bytes in pieces of at most `piece` bytes, a step after each. */
static void client_pieces(struct drive *d, const struct bytes *b, size_t piece)
{
	for (size_t off = 0; off < b->n; off += piece)
		client(d, b->b + off, b->n - off < piece ? b->n - off : piece);
}

static void client_eof(struct drive *d)
{
	d->eof = 1;
	step(d);
}

static void server(struct drive *d, const void *b, size_t n)
{
	cat(&d->u, b, n);
	step(d);
}

/* ---- real flights from OpenSSL, in memory ---- */

struct peer {
	SSL_CTX *ctx;
	SSL *ssl;
	BIO *in, *out; /* what it reads, what it wrote */
};

static EVP_PKEY *key;
static X509 *cert;

static int make_cert(void **state)
{
	(void)state;
	key = EVP_EC_gen("P-256");
	cert = X509_new();
	if (key == NULL || cert == NULL)
		return -1;
	ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
	X509_gmtime_adj(X509_getm_notBefore(cert), 0);
	X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
	X509_NAME *nm = X509_get_subject_name(cert);
	X509_NAME_add_entry_by_txt(
	        nm, "CN", MBSTRING_ASC, (const unsigned char *)"allowed.test", -1, -1, 0);
	X509_set_issuer_name(cert, nm);
	X509_set_pubkey(cert, key);
	return X509_sign(cert, key, EVP_sha256()) > 0 ? 0 : -1;
}

static int free_cert(void **state)
{
	(void)state;
	X509_free(cert);
	EVP_PKEY_free(key);
	return 0;
}

/* A client (is_server 0) or server; version 0 for any, groups NULL for OpenSSL's default
 * (X25519 first), sni NULL for none. */
static void peer_new(
        struct peer *p, int is_server, int version, const char *groups, const char *sni)
{
	p->ctx = SSL_CTX_new(is_server ? TLS_server_method() : TLS_client_method());
	assert_non_null(p->ctx);
	if (version) {
		assert_int_equal(SSL_CTX_set_min_proto_version(p->ctx, version), 1);
		assert_int_equal(SSL_CTX_set_max_proto_version(p->ctx, version), 1);
	}
	if (groups != NULL)
		assert_int_equal(SSL_CTX_set1_groups_list(p->ctx, groups), 1);
	if (is_server) {
		assert_int_equal(SSL_CTX_use_certificate(p->ctx, cert), 1);
		assert_int_equal(SSL_CTX_use_PrivateKey(p->ctx, key), 1);
	}
	p->ssl = SSL_new(p->ctx);
	assert_non_null(p->ssl);
	p->in = BIO_new(BIO_s_mem());
	p->out = BIO_new(BIO_s_mem());
	assert_non_null(p->in);
	assert_non_null(p->out);
	SSL_set_bio(p->ssl, p->in, p->out);
	if (is_server) {
		SSL_set_accept_state(p->ssl);
	} else {
		SSL_set_connect_state(p->ssl);
		if (sni != NULL)
			assert_int_equal(SSL_set_tlsext_host_name(p->ssl, sni), 1);
	}
}

static void peer_free(struct peer *p)
{
	SSL_free(p->ssl);
	SSL_CTX_free(p->ctx);
}

/* Gives p what the other side sent (may be empty), lets it run, and returns what it wrote. */
static void flight(struct peer *p, const struct bytes *recv, struct bytes *sent)
{
	if (recv != NULL && recv->n > 0)
		assert_int_equal(BIO_write(p->in, recv->b, (int)recv->n), (int)recv->n);
	(void)SSL_do_handshake(p->ssl);
	sent->n = 0;
	int k;
	while ((k = BIO_read(p->out, sent->b + sent->n, (int)(sizeof sent->b - sent->n))) > 0)
		sent->n += (size_t)k;
}

/* The length of the TLS record at b. */
static size_t rec_len(const uint8_t *b)
{
	return 5 + ((size_t)b[3] << 8 | b[4]);
}

static void expect(const struct drive *d, const char *want)
{
	if (strcmp(d->trace, want) != 0)
		print_error("trace: %s\n want: %s\n", d->trace, want);
	assert_string_equal(d->trace, want);
}

/* ---- cases ---- */

/* A ClientHello with its name, then the server's real ServerHello: the tunnel opens. */
static void hello_then_serverhello(int version, const char *sni)
{
	struct peer c, s;
	peer_new(&c, 0, version, NULL, sni);
	peer_new(&s, 1, version, NULL, NULL);
	static struct bytes ch, sh;
	flight(&c, NULL, &ch);
	flight(&s, &ch, &sh);
	assert_true(ch.n > 0 && sh.n > 0);

	static struct drive d;
	drive_init(&d, 1);
	client_pieces(&d, &ch, 7);
	server(&d, sh.b, sh.n);
	char want[200];
	snprintf(want, sizeof want, "kind:tls hello:%s:%zu open", sni != NULL ? sni : "", ch.n);
	expect(&d, want);
	peer_free(&c);
	peer_free(&s);
}

static void test_tls13_hello(void **state)
{
	(void)state;
	hello_then_serverhello(TLS1_3_VERSION, "allowed.test");
}

static void test_tls12_hello(void **state)
{
	(void)state;
	hello_then_serverhello(TLS1_2_VERSION, "allowed.test");
}

static void test_hello_without_sni(void **state)
{
	(void)state;
	hello_then_serverhello(TLS1_3_VERSION, NULL);
}

/* CH1, HRR (+ the server's CCS), the client's CCS and CH2, the ServerHello.  second_name: what
 * CH2 names instead (same length), or NULL. */
static void hrr_sequence(const char *second_name, const char *want_tail)
{
	struct peer c, s;
	peer_new(&c, 0, TLS1_3_VERSION, NULL, "allowed.test");
	peer_new(&s, 1, TLS1_3_VERSION, "P-256", NULL);
	static struct bytes ch1, hrr, ch2, sh;
	flight(&c, NULL, &ch1);
	flight(&s, &ch1, &hrr);
	flight(&c, &hrr, &ch2);
	flight(&s, &ch2, &sh);
	/* the server asked again: its first message is a ServerHello whose random is the HRR value
	 */
	assert_int_equal(hrr.b[0], 22);
	assert_int_equal(hrr.b[5], 2);
	assert_int_equal(hrr.b[11], 0xcf);
	/* the client's second flight is a CCS record, then its second ClientHello */
	assert_int_equal(ch2.b[0], 20);
	size_t ccs = rec_len(ch2.b);
	assert_int_equal(ccs, 6);
	assert_int_equal(ch2.b[ccs], 22);
	if (second_name != NULL) {
		uint8_t *at = memmem(ch2.b, ch2.n, "allowed.test", 12);
		assert_non_null(at);
		memcpy(at, second_name, 12);
	}

	static struct drive d;
	drive_init(&d, 1);
	client(&d, ch1.b, ch1.n);
	server(&d, hrr.b, hrr.n);
	assert_int_equal(d.s.retries, 1);
	client(&d, ch2.b, ch2.n);
	server(&d, sh.b, sh.n);
	char want[300];
	snprintf(want, sizeof want, "kind:tls hello:allowed.test:%zu pass:6 hello:%s:%zu%s", ch1.n,
	        second_name != NULL ? second_name : "allowed.test", ch2.n - 6, want_tail);
	expect(&d, want);
	peer_free(&c);
	peer_free(&s);
}

static void test_hrr_same_name(void **state)
{
	(void)state;
	hrr_sequence(NULL, " open");
}

static void test_hrr_other_name(void **state)
{
	(void)state;
	/* the driver accepts every name: tunnel.c refuses this one (sni-mismatch) */
	hrr_sequence("another.test", " open");
}

/* The HelloRetryRequest exchange out of its order: each server message answers exactly one
 * ClientHello, and the one after the HRR is checked before the server's hello can open the scan
 * (harness findings: a ServerHello before the second hello opened the scan with it unread;
 * hellos sent ahead of the HRRs paired the server's answers with the wrong hellos). */
static void test_hrr_out_of_order(void **state)
{
	(void)state;
	struct peer c, s;
	peer_new(&c, 0, TLS1_3_VERSION, NULL, "allowed.test");
	peer_new(&s, 1, TLS1_3_VERSION, "P-256", NULL);
	static struct bytes ch1, hrr, ch2, sh;
	flight(&c, NULL, &ch1);
	flight(&s, &ch1, &hrr);
	flight(&c, &hrr, &ch2);
	flight(&s, &ch2, &sh);
	static struct drive d;
	char want[400];
	const char *early = "server-bad:the server's hello came before the client's ClientHello "
	                    "after its HelloRetryRequest";

	/* the ServerHello before the second ClientHello */
	drive_init(&d, 1);
	client(&d, ch1.b, ch1.n);
	server(&d, hrr.b, hrr.n);
	server(&d, sh.b, sh.n);
	snprintf(want, sizeof want, "kind:tls hello:allowed.test:%zu %s", ch1.n, early);
	expect(&d, want);

	/* two HelloRetryRequests in a row */
	drive_init(&d, 1);
	client(&d, ch1.b, ch1.n);
	server(&d, hrr.b, hrr.n);
	server(&d, hrr.b, hrr.n);
	expect(&d, want);

	/* a second HelloRetryRequest after the second ClientHello */
	drive_init(&d, 1);
	client(&d, ch1.b, ch1.n);
	server(&d, hrr.b, hrr.n);
	client(&d, ch2.b, ch2.n);
	server(&d, hrr.b, hrr.n);
	snprintf(want, sizeof want,
	        "kind:tls hello:allowed.test:%zu pass:6 hello:allowed.test:%zu server-bad:a second "
	        "HelloRetryRequest",
	        ch1.n, ch2.n - 6);
	expect(&d, want);

	/* the second ClientHello sent before the HelloRetryRequest asked for it */
	drive_init(&d, 1);
	client(&d, ch1.b, ch1.n);
	client(&d, ch2.b + 6, ch2.n - 6);
	snprintf(want, sizeof want,
	        "kind:tls hello:allowed.test:%zu bad:a client handshake message the server did not "
	        "ask for",
	        ch1.n);
	expect(&d, want);

	/* a third ClientHello after the second */
	drive_init(&d, 1);
	client(&d, ch1.b, ch1.n);
	server(&d, hrr.b, hrr.n);
	client(&d, ch2.b, ch2.n);
	client(&d, ch2.b + 6, ch2.n - 6);
	snprintf(want, sizeof want,
	        "kind:tls hello:allowed.test:%zu pass:6 hello:allowed.test:%zu bad:a client "
	        "handshake message the server did not ask for",
	        ch1.n, ch2.n - 6);
	expect(&d, want);

	/* a Finished in clear where the second ClientHello belongs */
	drive_init(&d, 1);
	client(&d, ch1.b, ch1.n);
	server(&d, hrr.b, hrr.n);
	client(&d, "\x16\x03\x03\x00\x08\x14\x00\x00\x04\x00\x00\x00\x00", 13);
	snprintf(want, sizeof want,
	        "kind:tls hello:allowed.test:%zu bad:handshake message is not a ClientHello",
	        ch1.n);
	expect(&d, want);
	peer_free(&c);
	peer_free(&s);
}

/* A ClientHello near 16 KiB in 512-byte records (OpenSSL's max_send_fragment and many ALPN
 * names), fed in pieces: one HELLO for all its records. */
static void test_large_hello_in_records(void **state)
{
	(void)state;
	struct peer c;
	peer_new(&c, 0, TLS1_3_VERSION, NULL, "allowed.test");
	assert_int_equal(SSL_set_max_send_fragment(c.ssl, 512), 1);
	static unsigned char alpn[62 * 251];
	size_t an = 0;
	for (int i = 0; i < 62; i++) {
		alpn[an++] = 250;
		memset(alpn + an, 'a' + i % 26, 250);
		an += 250;
	}
	assert_int_equal(SSL_set_alpn_protos(c.ssl, alpn, (unsigned)an), 0);
	static struct bytes ch;
	flight(&c, NULL, &ch);
	size_t nrec = 0;
	for (size_t off = 0; off < ch.n; off += rec_len(ch.b + off))
		nrec++;
	assert_true(nrec >= 30);
	assert_true(ch.n > 15500 && ch.n <= PROXY_SNI_PEEK_MAX);

	static struct drive d;
	drive_init(&d, 1);
	client_pieces(&d, &ch, 1000);
	char want[200];
	snprintf(want, sizeof want, "kind:tls hello:allowed.test:%zu", ch.n);
	expect(&d, want);
	assert_int_equal(d.s.phase, PROXY_TSCAN_PH_TLS);
	peer_free(&c);
}

/* Where a ClientHello ends against its records. */
static void test_hello_ends_mid_record(void **state)
{
	(void)state;
	struct peer c;
	peer_new(&c, 0, TLS1_3_VERSION, NULL, "allowed.test");
	static struct bytes ch, more;
	flight(&c, NULL, &ch);
	assert_int_equal(rec_len(ch.b), ch.n);
	static struct drive d;
	char want[300];

	/* the record says it holds more than the hello: the lengths lie */
	more = ch;
	size_t rl = ((size_t)more.b[3] << 8 | more.b[4]) + 10;
	more.b[3] = (uint8_t)(rl >> 8);
	more.b[4] = (uint8_t)rl;
	uint8_t pad[10] = {0};
	cat(&more, pad, sizeof pad);
	drive_init(&d, 0);
	client(&d, more.b, more.n);
	expect(&d, "kind:tls bad:handshake lengths inconsistent with the record");

	/* the client ends in the middle of its hello's record */
	drive_init(&d, 0);
	client(&d, ch.b, ch.n - 20);
	client_eof(&d);
	expect(&d, "kind:tls bad:TLS ClientHello cut short by the client's end");

	/* the hello is whole and the next record (a CCS) is cut: the hello passes, the cut record
	 * waits */
	drive_init(&d, 0);
	more = ch;
	cat(&more, "\x14\x03\x03\x00\x01", 5);
	client(&d, more.b, more.n);
	snprintf(want, sizeof want, "kind:tls hello:allowed.test:%zu", ch.n);
	expect(&d, want);
	assert_int_equal(d.c.n, 5);
	client(&d, "\x01", 1);
	snprintf(want, sizeof want, "kind:tls hello:allowed.test:%zu pass:6", ch.n);
	expect(&d, want);
	peer_free(&c);
}

/* Early data and the other records a client may send before the server's hello. */
static void test_early_data(void **state)
{
	(void)state;
	struct peer c;
	peer_new(&c, 0, TLS1_3_VERSION, NULL, "allowed.test");
	static struct bytes ch, flow;
	flight(&c, NULL, &ch);
	static struct drive d;
	char want[400];

	/* CH, CCS, two early data records (one of the largest TLS 1.3 allows), a client alert */
	flow = ch;
	cat(&flow, "\x14\x03\x03\x00\x01\x01", 6);
	static uint8_t ed[5 + 16384 + 256];
	memcpy(ed, "\x17\x03\x03\x41\x00", 5); /* 16640 = 2^14 + 256 */
	memset(ed + 5, 0xab, sizeof ed - 5);
	cat(&flow, ed, 5 + 40);
	flow.b[flow.n - 45 + 3] = 0;
	flow.b[flow.n - 45 + 4] = 40;
	cat(&flow, ed, sizeof ed);
	cat(&flow, "\x15\x03\x03\x00\x02\x01\x00", 7);
	drive_init(&d, 1);
	client_pieces(&d, &flow, 4096);
	snprintf(want, sizeof want,
	        "kind:tls hello:allowed.test:%zu pass:6 pass:45 pass:%zu pass:7", ch.n, sizeof ed);
	expect(&d, want);

	/* an early data record longer than TLS 1.3 allows is refused at once, not waited for
	 * (a harness finding: it could never arrive whole within the scan's window) */
	drive_init(&d, 1);
	flow = ch;
	cat(&flow, "\x17\x03\x03\x41\x01", 5);
	client(&d, flow.b, flow.n);
	snprintf(want, sizeof want,
	        "kind:tls hello:allowed.test:%zu bad:a TLS record longer than TLS 1.3 allows",
	        ch.n);
	expect(&d, want);

	/* a handshake record before any HelloRetryRequest: a second ClientHello, a Finished */
	drive_init(&d, 1);
	flow = ch;
	cat(&flow, ch.b, ch.n);
	client(&d, flow.b, flow.n);
	snprintf(want, sizeof want,
	        "kind:tls hello:allowed.test:%zu bad:a client handshake message the server did not "
	        "ask for",
	        ch.n);
	expect(&d, want);
	drive_init(&d, 1);
	flow = ch;
	cat(&flow, "\x16\x03\x03\x00\x08\x14\x00\x00\x04\x00\x00\x00\x00", 13);
	client(&d, flow.b, flow.n);
	expect(&d, want);

	/* application data of another record type */
	drive_init(&d, 1);
	flow = ch;
	cat(&flow, "\x18\x03\x03\x00\x01\x00", 6);
	client(&d, flow.b, flow.n);
	snprintf(want, sizeof want,
	        "kind:tls hello:allowed.test:%zu bad:a TLS record of a type no client sends before "
	        "the server's hello",
	        ch.n);
	expect(&d, want);
	peer_free(&c);
}

/* A TLS 1.2-only server answers a TLS 1.3-only client with an alert: read past, not opened. */
static void test_server_alert(void **state)
{
	(void)state;
	struct peer c, s;
	peer_new(&c, 0, TLS1_3_VERSION, NULL, "allowed.test");
	peer_new(&s, 1, TLS1_2_VERSION, NULL, NULL);
	static struct bytes ch, alert;
	flight(&c, NULL, &ch);
	flight(&s, &ch, &alert);
	assert_int_equal(alert.n, 7);
	assert_int_equal(alert.b[0], 21);
	static struct drive d;
	drive_init(&d, 1);
	client(&d, ch.b, ch.n);
	server(&d, alert.b, alert.n);
	char want[200];
	snprintf(want, sizeof want, "kind:tls hello:allowed.test:%zu", ch.n);
	expect(&d, want);
	assert_int_equal(d.s.phase, PROXY_TSCAN_PH_TLS);
	assert_int_equal(d.u.n, 0); /* passed on to the client */
	peer_free(&c);
	peer_free(&s);
}

/* Servers that do not answer a ClientHello with TLS. */
static void test_server_not_tls(void **state)
{
	(void)state;
	struct peer c;
	peer_new(&c, 0, TLS1_3_VERSION, NULL, "allowed.test");
	static struct bytes ch;
	flight(&c, NULL, &ch);
	static const struct {
		const char *bytes;
		size_t n;
		const char *want;
	} cases[] = {
	        {"HTTP/1.1 400 Bad Request\r\n\r\n", 28,
	                "server-bad:the server's reply is not TLS"},
	        {"\x16\x03\x03\x00\x00", 5,
	                "server-bad:the server sent a TLS record of an impossible length"},
	        {"\x17\x03\x03\x00\x10", 5, "server-bad:the server's reply is not a TLS handshake"},
	        {"\x16\x03\x03\x00\x04\x0b\x00\x00\x00", 9,
	                "server-bad:the server's first handshake message is not a ServerHello"},
	        {"\x16\x03\x03\x00\x04\x02\x00\x00\x10", 9,
	                "server-bad:the server's ServerHello is too short"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		static struct drive d;
		drive_init(&d, 1);
		client(&d, ch.b, ch.n);
		server(&d, cases[i].bytes, cases[i].n);
		char want[300];
		snprintf(want, sizeof want, "kind:tls hello:allowed.test:%zu %s", ch.n,
		        cases[i].want);
		expect(&d, want);
	}
	peer_free(&c);
}

/* The first bytes that are not TLS, on port 443 and elsewhere. */
static void test_kinds(void **state)
{
	(void)state;
	static const struct {
		int port443;
		int server_first; /* the bytes come from the server, before the client spoke */
		const char *bytes;
		int eof;
		const char *want;
	} cases[] = {
	        {0, 0, "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 0, "kind:http"},
	        {0, 0, "POST /upload HTTP/1.1\r\n", 0, "kind:http"},
	        {0, 0, "GET", 0, ""},                /* too short to tell */
	        {0, 0, "GET", 1, "kind:other open"}, /* and then the client ended */
	        {0, 0, "get / HTTP/1.1\r\n", 0, "kind:other open"},
	        /* an SSH client's line waits for the server's first bytes */
	        {0, 0, "SSH-2.0-OpenSSH_9.2p1\r\n", 0, ""},
	        {0, 0, "SSH", 1, "kind:other open"}, /* not a whole "SSH-", and the end */
	        {1, 0, "SSH-2.0-OpenSSH_9.2p1\r\n", 0, "bad:port 443 carries only TLS"},
	        {0, 0, "\x80\x2e\x01\x03\x01", 0, "kind:other open"}, /* SSLv2-style hello */
	        {0, 0, "\x16", 0, ""},
	        {0, 0, "\x16\x03\x01", 0, "kind:tls"},
	        {0, 0, "\x16\x03\x09", 0, "kind:tls bad:record version implausible"},
	        {0, 1, "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n", 0, "server-kind:ssh"},
	        {0, 1, "SSH", 0, ""},
	        {0, 1, "220 mail.allowed.test ESMTP\r\n", 0, "server-kind:other"},
	        {1, 0, "GET / HTTP/1.1\r\n", 0, "bad:port 443 carries only TLS"},
	        {1, 1, "SSH-2.0-OpenSSH_9.2p1\r\n", 0,
	                "server-bad:the server spoke first on port 443, which carries only TLS"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		static struct drive d;
		drive_init(&d, cases[i].port443);
		if (cases[i].server_first)
			server(&d, cases[i].bytes, strlen(cases[i].bytes));
		else
			client(&d, cases[i].bytes, strlen(cases[i].bytes));
		if (cases[i].eof)
			client_eof(&d);
		print_message("kinds case %zu\n", i);
		expect(&d, cases[i].want);
	}
	/* a server that speaks after the client did waits for the client's bytes to be judged */
	static struct drive d;
	drive_init(&d, 0);
	client(&d, "\x16\x03", 2);
	server(&d, "SSH-2.0-x\r\n", 11);
	expect(&d, "");
	assert_int_equal(d.s.kind, ALLOW_TUNNEL_UNKNOWN);
	client(&d, "\x01", 1);
	expect(&d, "kind:tls");
}

/* An SSH client speaks first (RFC 4253 4.2: both sides send their identification line at
 * once; OpenSSH does not wait): the server's first bytes decide, and a silent server leaves
 * the client's bytes opaque. */
static void test_ssh_client_first(void **state)
{
	(void)state;
	static struct drive d;
	drive_init(&d, 0);
	client(&d, "SSH-2.0-OpenSSH_9.2p1\r\n", 23);
	expect(&d, "");
	assert_int_equal(d.s.client_ssh, 1);
	client(&d, "\0\0\x05\xdc\x0a\x14", 6); /* the start of its KEXINIT, held too */
	expect(&d, "");
	server(&d, "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n", 32);
	expect(&d, "server-kind:ssh");
	assert_int_equal(d.s.phase, PROXY_TSCAN_PH_OPEN);

	/* the line arrives in pieces, the server's too */
	drive_init(&d, 0);
	client(&d, "SS", 2);
	expect(&d, "");
	assert_int_equal(d.s.client_ssh, 0);
	client(&d, "H-2.0-x\r\n", 10);
	server(&d, "SS", 2);
	expect(&d, "");
	server(&d, "H-2.0-y\r\n", 10);
	expect(&d, "server-kind:ssh");

	/* a server that answers something else: the tunnel is opaque */
	drive_init(&d, 0);
	client(&d, "SSH-2.0-x\r\n", 11);
	server(&d, "HTTP/1.1 400 Bad Request\r\n", 26);
	expect(&d, "server-kind:other");

	/* a server that stays silent until the deadline */
	drive_init(&d, 0);
	client(&d, "SSH-2.0-x\r\n", 11);
	expect(&d, "");
	proxy_tscan_server_silent(&d.s);
	assert_int_equal(d.s.kind, ALLOW_TUNNEL_OTHER);
	assert_int_equal(d.s.phase, PROXY_TSCAN_PH_OPEN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_tls13_hello),
	        cmocka_unit_test(test_tls12_hello),
	        cmocka_unit_test(test_hello_without_sni),
	        cmocka_unit_test(test_hrr_same_name),
	        cmocka_unit_test(test_hrr_other_name),
	        cmocka_unit_test(test_hrr_out_of_order),
	        cmocka_unit_test(test_large_hello_in_records),
	        cmocka_unit_test(test_hello_ends_mid_record),
	        cmocka_unit_test(test_early_data),
	        cmocka_unit_test(test_server_alert),
	        cmocka_unit_test(test_server_not_tls),
	        cmocka_unit_test(test_kinds),
	        cmocka_unit_test(test_ssh_client_first),
	};
	return cmocka_run_group_tests(tests, make_cert, free_cert);
}
