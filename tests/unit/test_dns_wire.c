/* The DNS listener's wire layer: queries built with ldns (as a real client would send them) go
 * through dns_wire_parse_query, answers from dns_wire_answer are read back with ldns. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <ldns/ldns.h>

#include "dns/wire.h"

struct msg {
	uint8_t b[DNS_WIRE_MSG_MAX];
	size_t len;
};

/* A query for name/type as ldns builds it; edns_udp > 0 adds an OPT record of that size. */
static void make_query(struct msg *m, const char *name, uint16_t type, uint16_t cls,
	uint16_t id, int edns_udp)
{
	ldns_pkt *p = NULL;
	assert_int_equal(ldns_pkt_query_new_frm_str(&p, name, (ldns_rr_type)type,
				 (ldns_rr_class)cls, LDNS_RD),
		LDNS_STATUS_OK);
	ldns_pkt_set_id(p, id);
	if (edns_udp > 0)
		ldns_pkt_set_edns_udp_size(p, (uint16_t)edns_udp);
	uint8_t *w = NULL;
	size_t n = 0;
	assert_int_equal(ldns_pkt2wire(&w, p, &n), LDNS_STATUS_OK);
	assert_true(n <= sizeof m->b);
	memcpy(m->b, w, n);
	m->len = n;
	free(w);
	ldns_pkt_free(p);
}

static ldns_pkt *read_answer(const uint8_t *b, int len)
{
	assert_true(len >= DNS_WIRE_HEADER);
	ldns_pkt *p = NULL;
	assert_int_equal(ldns_wire2pkt(&p, b, (size_t)len), LDNS_STATUS_OK);
	assert_true(ldns_pkt_qr(p));
	return p;
}

static struct dns_addr addr(const char *text)
{
	struct dns_addr a;
	memset(&a, 0, sizeof a);
	if (inet_pton(AF_INET, text, a.addr) == 1)
		a.family = AF_INET;
	else if (inet_pton(AF_INET6, text, a.addr) == 1)
		a.family = AF_INET6;
	else
		fail_msg("bad test address %s", text);
	return a;
}

static void test_parse_a(void **state)
{
	(void)state;
	struct msg m;
	struct dns_wire_query q;
	make_query(&m, "Origin.Example.TEST.", DNS_TYPE_A, DNS_CLASS_IN, 4242, 0);
	assert_int_equal(dns_wire_parse_query(m.b, m.len, &q), DNS_WIRE_OK);
	assert_int_equal(q.id, 4242);
	assert_int_equal(q.qtype, DNS_TYPE_A);
	assert_int_equal(q.qclass, DNS_CLASS_IN);
	assert_true(q.rd);
	assert_false(q.edns);
	assert_true(q.canon_ok);
	assert_string_equal(q.name, "origin.example.test");
	assert_string_equal(q.text, "Origin.Example.TEST");
	assert_int_equal(dns_wire_udp_limit(&q), 512);
}

static void test_names_not_hosts(void **state)
{
	(void)state;
	/* Each parses, but none is a host name a pattern could name. */
	const char *names[] = {"_acme-challenge.x.test.", "a\\.b.test.", "sp\\032ace.test.",
		"1.2.3.4.", "127.1.", ".", "-lead.test.", "x\\255y.test."};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		struct msg m;
		struct dns_wire_query q;
		make_query(&m, names[i], DNS_TYPE_A, DNS_CLASS_IN, 1, 0);
		assert_int_equal(dns_wire_parse_query(m.b, m.len, &q), DNS_WIRE_OK);
		if (q.canon_ok)
			fail_msg("%s was taken for the host name %s", names[i], q.name);
		assert_string_equal(q.name, "");
	}
}

static void test_answer_addresses(void **state)
{
	(void)state;
	struct msg m;
	struct dns_wire_query q;
	make_query(&m, "MiXeD.test.", DNS_TYPE_A, DNS_CLASS_IN, 7, 0);
	assert_int_equal(dns_wire_parse_query(m.b, m.len, &q), DNS_WIRE_OK);
	struct dns_addr as[3] = {addr("192.0.2.1"), addr("2001:db8::1"), addr("192.0.2.2")};
	uint8_t out[DNS_WIRE_MSG_MAX];
	int n = dns_wire_answer(&q, DNS_RCODE_NOERROR, as, 3, 30, dns_wire_udp_limit(&q), out,
		sizeof out);
	ldns_pkt *p = read_answer(out, n);
	assert_int_equal(ldns_pkt_id(p), 7);
	assert_int_equal(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR);
	assert_true(ldns_pkt_rd(p));
	assert_true(ldns_pkt_ra(p));
	assert_false(ldns_pkt_tc(p));
	assert_int_equal(ldns_pkt_qdcount(p), 1);
	assert_int_equal(ldns_pkt_ancount(p), 2); /* the IPv6 address is not an A record */
	assert_false(ldns_pkt_edns(p));
	const char *want[2] = {"192.0.2.1", "192.0.2.2"};
	for (size_t i = 0; i < 2; i++) {
		ldns_rr *rr = ldns_rr_list_rr(ldns_pkt_answer(p), i);
		assert_int_equal(ldns_rr_get_type(rr), LDNS_RR_TYPE_A);
		assert_int_equal(ldns_rr_ttl(rr), 30);
		char *owner = ldns_rdf2str(ldns_rr_owner(rr));
		assert_string_equal(owner, "MiXeD.test."); /* the client's letter case */
		free(owner);
		char *a = ldns_rdf2str(ldns_rr_rdf(rr, 0));
		assert_string_equal(a, want[i]);
		free(a);
	}
	ldns_pkt_free(p);

	make_query(&m, "v6.test.", DNS_TYPE_AAAA, DNS_CLASS_IN, 8, 0);
	assert_int_equal(dns_wire_parse_query(m.b, m.len, &q), DNS_WIRE_OK);
	n = dns_wire_answer(&q, DNS_RCODE_NOERROR, as, 3, 30, 512, out, sizeof out);
	p = read_answer(out, n);
	assert_int_equal(ldns_pkt_ancount(p), 1);
	char *a = ldns_rdf2str(ldns_rr_rdf(ldns_rr_list_rr(ldns_pkt_answer(p), 0), 0));
	assert_string_equal(a, "2001:db8::1");
	free(a);
	ldns_pkt_free(p);
}

static void test_answer_rcodes(void **state)
{
	(void)state;
	struct msg m;
	struct dns_wire_query q;
	make_query(&m, "x.test.", DNS_TYPE_HTTPS, DNS_CLASS_IN, 9, 0);
	assert_int_equal(dns_wire_parse_query(m.b, m.len, &q), DNS_WIRE_OK);
	struct dns_addr a = addr("192.0.2.1");
	const enum dns_rcode codes[] = {DNS_RCODE_NOERROR, DNS_RCODE_REFUSED, DNS_RCODE_SERVFAIL,
		DNS_RCODE_FORMERR, DNS_RCODE_NXDOMAIN};
	for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
		uint8_t out[512];
		int n = dns_wire_answer(&q, codes[i], &a, 1, 30, 512, out, sizeof out);
		ldns_pkt *p = read_answer(out, n);
		assert_int_equal(ldns_pkt_get_rcode(p), codes[i]);
		assert_int_equal(ldns_pkt_ancount(p), 0); /* HTTPS never gets an address */
		assert_int_equal(ldns_pkt_qdcount(p), 1);
		assert_int_equal(ldns_pkt_id(p), 9);
		ldns_pkt_free(p);
	}
}

static void test_malformed(void **state)
{
	(void)state;
	struct msg m;
	struct dns_wire_query q;
	uint8_t out[512];

	/* Shorter than a header, and a response: no answer at all. */
	assert_int_equal(dns_wire_parse_query((const uint8_t *)"\x01\x02\x03", 3, &q),
		DNS_WIRE_DROP);
	make_query(&m, "x.test.", DNS_TYPE_A, DNS_CLASS_IN, 10, 0);
	m.b[2] |= 0x80;
	assert_int_equal(dns_wire_parse_query(m.b, m.len, &q), DNS_WIRE_DROP);

	/* A question cut short: FORMERR with the ID and no question. */
	make_query(&m, "x.test.", DNS_TYPE_A, DNS_CLASS_IN, 11, 0);
	assert_int_equal(dns_wire_parse_query(m.b, m.len - 3, &q), DNS_WIRE_FORMERR);
	assert_false(q.has_question);
	int n = dns_wire_answer(&q, DNS_RCODE_FORMERR, NULL, 0, 0, 512, out, sizeof out);
	ldns_pkt *p = read_answer(out, n);
	assert_int_equal(ldns_pkt_id(p), 11);
	assert_int_equal(ldns_pkt_get_rcode(p), LDNS_RCODE_FORMERR);
	assert_int_equal(ldns_pkt_qdcount(p), 0);
	ldns_pkt_free(p);

	/* No question; two questions. */
	make_query(&m, "x.test.", DNS_TYPE_A, DNS_CLASS_IN, 12, 0);
	assert_int_equal(dns_wire_parse_query(m.b, DNS_WIRE_HEADER, &q), DNS_WIRE_FORMERR);
	m.b[4] = 0;
	m.b[5] = 0;
	assert_int_equal(dns_wire_parse_query(m.b, m.len, &q), DNS_WIRE_FORMERR);
	make_query(&m, "x.test.", DNS_TYPE_A, DNS_CLASS_IN, 12, 0);
	size_t qlen = m.len - DNS_WIRE_HEADER;
	memcpy(m.b + m.len, m.b + DNS_WIRE_HEADER, qlen);
	m.len += qlen;
	m.b[5] = 2;
	assert_int_equal(dns_wire_parse_query(m.b, m.len, &q), DNS_WIRE_FORMERR);

	/* An answer record in a query. */
	ldns_pkt *qp = NULL;
	assert_int_equal(ldns_pkt_query_new_frm_str(&qp, "x.test.", LDNS_RR_TYPE_A,
				 LDNS_RR_CLASS_IN, LDNS_RD),
		LDNS_STATUS_OK);
	ldns_rr *rr = NULL;
	assert_int_equal(ldns_rr_new_frm_str(&rr, "x.test. 30 IN A 192.0.2.1", 0, NULL, NULL),
		LDNS_STATUS_OK);
	ldns_pkt_push_rr(qp, LDNS_SECTION_ANSWER, rr);
	uint8_t *w = NULL;
	size_t wn = 0;
	assert_int_equal(ldns_pkt2wire(&w, qp, &wn), LDNS_STATUS_OK);
	assert_int_equal(dns_wire_parse_query(w, wn, &q), DNS_WIRE_FORMERR);
	assert_false(q.has_question); /* refused on the header's counts */
	free(w);
	ldns_pkt_free(qp);

	/* A second OPT record (RFC 6891 6.1.1). */
	make_query(&m, "x.test.", DNS_TYPE_A, DNS_CLASS_IN, 13, 1232);
	static const uint8_t opt[11] = {0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0};
	memcpy(m.b + m.len, opt, sizeof opt);
	m.len += sizeof opt;
	m.b[11] = 2;
	assert_int_equal(dns_wire_parse_query(m.b, m.len, &q), DNS_WIRE_FORMERR);
}

static void test_refused_and_badvers(void **state)
{
	(void)state;
	struct msg m;
	struct dns_wire_query q;
	make_query(&m, "version.bind.", 16, LDNS_RR_CLASS_CH, 14, 0);
	assert_int_equal(dns_wire_parse_query(m.b, m.len, &q), DNS_WIRE_REFUSED);
	make_query(&m, "x.test.", DNS_TYPE_A, DNS_CLASS_IN, 15, 0);
	m.b[2] = (uint8_t)((m.b[2] & ~0x78) | (LDNS_PACKET_NOTIFY << 3));
	assert_int_equal(dns_wire_parse_query(m.b, m.len, &q), DNS_WIRE_REFUSED);

	/* EDNS version 1: BADVERS (16), i.e. extended rcode 1 over rcode 0, in an OPT. */
	ldns_pkt *qp = NULL;
	assert_int_equal(ldns_pkt_query_new_frm_str(&qp, "x.test.", LDNS_RR_TYPE_A,
				 LDNS_RR_CLASS_IN, LDNS_RD),
		LDNS_STATUS_OK);
	ldns_pkt_set_edns_udp_size(qp, 4096);
	ldns_pkt_set_edns_version(qp, 1);
	uint8_t *w = NULL;
	size_t wn = 0;
	assert_int_equal(ldns_pkt2wire(&w, qp, &wn), LDNS_STATUS_OK);
	assert_int_equal(dns_wire_parse_query(w, wn, &q), DNS_WIRE_BADVERS);
	free(w);
	ldns_pkt_free(qp);
	uint8_t out[512];
	int n = dns_wire_answer(&q, DNS_RCODE_BADVERS, NULL, 0, 0, 512, out, sizeof out);
	ldns_pkt *p = read_answer(out, n);
	assert_true(ldns_pkt_edns(p));
	assert_int_equal(ldns_pkt_edns_extended_rcode(p), 1);
	assert_int_equal(ldns_pkt_get_rcode(p), 0);
	assert_int_equal(ldns_pkt_edns_version(p), 0);
	ldns_pkt_free(p);
}

static void test_edns_and_truncation(void **state)
{
	(void)state;
	struct msg m;
	struct dns_wire_query q;
	/* A long name and 16 IPv6 addresses: about 700 bytes. */
	const char *name = "a-rather-long-label-for-the-test-of-truncation-0123456789.with."
			   "another-long-label-to-make-the-answer-bigger-0123456789.test.";
	struct dns_addr as[16];
	for (int i = 0; i < 16; i++) {
		char t[64];
		snprintf(t, sizeof t, "2001:db8::%x", i + 1);
		as[i] = addr(t);
	}
	uint8_t out[DNS_WIRE_MSG_MAX];

	make_query(&m, name, DNS_TYPE_AAAA, DNS_CLASS_IN, 16, 0);
	assert_int_equal(dns_wire_parse_query(m.b, m.len, &q), DNS_WIRE_OK);
	int n = dns_wire_answer(&q, DNS_RCODE_NOERROR, as, 16, 30, dns_wire_udp_limit(&q), out,
		sizeof out);
	assert_true(n <= 512);
	ldns_pkt *p = read_answer(out, n);
	assert_true(ldns_pkt_tc(p));
	assert_int_equal(ldns_pkt_ancount(p), 0);
	assert_int_equal(ldns_pkt_qdcount(p), 1);
	assert_false(ldns_pkt_edns(p));
	ldns_pkt_free(p);

	/* Over TCP the whole answer. */
	n = dns_wire_answer(&q, DNS_RCODE_NOERROR, as, 16, 30, DNS_WIRE_MSG_MAX, out, sizeof out);
	assert_true(n > 512);
	p = read_answer(out, n);
	assert_false(ldns_pkt_tc(p));
	assert_int_equal(ldns_pkt_ancount(p), 16);
	ldns_pkt_free(p);

	/* EDNS 4096: limited to what egressd sends over UDP (1232), which fits it; the answer
	 * carries an OPT. */
	make_query(&m, name, DNS_TYPE_AAAA, DNS_CLASS_IN, 17, 4096);
	assert_int_equal(dns_wire_parse_query(m.b, m.len, &q), DNS_WIRE_OK);
	assert_true(q.edns);
	assert_int_equal(q.edns_udp, 4096);
	assert_int_equal(dns_wire_udp_limit(&q), DNS_WIRE_UDP_MAX);
	n = dns_wire_answer(&q, DNS_RCODE_NOERROR, as, 16, 30, dns_wire_udp_limit(&q), out,
		sizeof out);
	p = read_answer(out, n);
	assert_false(ldns_pkt_tc(p));
	assert_int_equal(ldns_pkt_ancount(p), 16);
	assert_true(ldns_pkt_edns(p));
	assert_int_equal(ldns_pkt_edns_udp_size(p), DNS_WIRE_UDP_MAX);
	ldns_pkt_free(p);

	/* EDNS with a size below 512 counts as 512. */
	make_query(&m, name, DNS_TYPE_AAAA, DNS_CLASS_IN, 18, 100);
	assert_int_equal(dns_wire_parse_query(m.b, m.len, &q), DNS_WIRE_OK);
	assert_int_equal(dns_wire_udp_limit(&q), 512);
	n = dns_wire_answer(&q, DNS_RCODE_NOERROR, as, 16, 30, dns_wire_udp_limit(&q), out,
		sizeof out);
	assert_true(n <= 512);
	p = read_answer(out, n);
	assert_true(ldns_pkt_tc(p));
	assert_true(ldns_pkt_edns(p));
	ldns_pkt_free(p);
}

static void test_type_names(void **state)
{
	(void)state;
	char buf[16];
	assert_string_equal(dns_wire_type_name(1, buf, sizeof buf), "A");
	assert_string_equal(dns_wire_type_name(28, buf, sizeof buf), "AAAA");
	assert_string_equal(dns_wire_type_name(65, buf, sizeof buf), "HTTPS");
	assert_string_equal(dns_wire_type_name(16, buf, sizeof buf), "TXT");
	assert_string_equal(dns_wire_type_name(255, buf, sizeof buf), "ANY");
	assert_string_equal(dns_wire_type_name(65000, buf, sizeof buf), "TYPE65000");
	assert_string_equal(dns_rcode_name(DNS_RCODE_REFUSED), "REFUSED");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_a),
		cmocka_unit_test(test_names_not_hosts),
		cmocka_unit_test(test_answer_addresses),
		cmocka_unit_test(test_answer_rcodes),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_refused_and_badvers),
		cmocka_unit_test(test_edns_and_truncation),
		cmocka_unit_test(test_type_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
