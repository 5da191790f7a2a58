/* The DNS listener's wire format: ldns parses every query and builds every answer.
 *
 * The only bytes read outside ldns_wire2pkt are those of the header of a message ldns could not
 * parse, through ldns's own header macros, so that such a message still gets a FORMERR with its
 * ID (or nothing, when it is a response). */
#include "dns/wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <ldns/ldns.h>

size_t dns_wire_udp_limit(const struct dns_wire_query *q)
{
	if (!q->edns || q->edns_udp <= DNS_WIRE_UDP_MIN)
		return DNS_WIRE_UDP_MIN;
	return q->edns_udp < DNS_WIRE_UDP_MAX ? q->edns_udp : DNS_WIRE_UDP_MAX;
}

const char *dns_rcode_name(enum dns_rcode rcode)
{
	switch (rcode) {
	case DNS_RCODE_NOERROR:
		return "NOERROR";
	case DNS_RCODE_FORMERR:
		return "FORMERR";
	case DNS_RCODE_SERVFAIL:
		return "SERVFAIL";
	case DNS_RCODE_NXDOMAIN:
		return "NXDOMAIN";
	case DNS_RCODE_REFUSED:
		return "REFUSED";
	case DNS_RCODE_BADVERS:
		return "BADVERS";
	}
	return "SERVFAIL";
}

const char *dns_wire_type_name(uint16_t qtype, char *buf, size_t cap)
{
	/* ldns knows every registered mnemonic (ANY and AXFR too); others read TYPEnnn (RFC
	 * 3597). */
	char *s = ldns_rr_type2str((ldns_rr_type)qtype);
	if (s != NULL) {
		snprintf(buf, cap, "%s", s);
		free(s);
	} else {
		snprintf(buf, cap, "TYPE%u", (unsigned)qtype);
	}
	return buf;
}

/* Fills the question fields of q from the question record rr. */
static void read_question(struct dns_wire_query *q, const ldns_rr *rr)
{
	const ldns_rdf *owner = ldns_rr_owner(rr);
	size_t n = ldns_rdf_size(owner);
	if (owner == NULL || n == 0 || n > sizeof q->qname)
		return;
	memcpy(q->qname, ldns_rdf_data(owner), n);
	q->qname_len = n;
	q->qtype = (uint16_t)ldns_rr_get_type(rr);
	q->qclass = (uint16_t)ldns_rr_get_class(rr);
	q->has_question = 1;

	char *s = ldns_rdf2str(owner);
	if (s != NULL) {
		size_t len = strlen(s);
		if (len > 1 && s[len - 1] == '.')
			len--; /* "example.test." -> "example.test"; the root stays "." */
		if (len >= sizeof q->text)
			len = sizeof q->text - 1;
		memcpy(q->text, s, len);
		q->text[len] = '\0';
		free(s);
	}
	/* The presentation form escapes every byte that is not a plain letter, digit or hyphen
	 * ("\." inside a label, "\032"), and the canonicaliser refuses a backslash: a name that
	 * is not an ordinary host name can never be mistaken for one. */
	struct allow_dest d;
	if (q->text[0] != '\0' && strcmp(q->text, ".") != 0 &&
		allow_canon_host(q->text, strlen(q->text), &d) == ALLOW_CANON_OK &&
		d.kind == ALLOW_HOST_NAME) {
		memcpy(q->name, d.host, sizeof q->name);
		q->canon_ok = 1;
	}
}

enum dns_wire_parse dns_wire_parse_query(const uint8_t *msg, size_t len, struct dns_wire_query *q)
{
	memset(q, 0, sizeof *q);
	if (msg == NULL || len < DNS_WIRE_HEADER || LDNS_QR_WIRE(msg))
		return DNS_WIRE_DROP;
	q->id = LDNS_ID_WIRE(msg);
	q->opcode = (uint8_t)LDNS_OPCODE_WIRE(msg);
	q->rd = LDNS_RD_WIRE(msg) != 0;
	q->cd = LDNS_CD_WIRE(msg) != 0;

	/* A query has one question and nothing else but an OPT record.  Anything more is refused
	 * on the header's counts, before ldns reads a record: ldns keeps only the last of several
	 * TSIG records and loses the others' memory (a fuzz finding), and a query that announces
	 * thousands of records would cost as many allocations. */
	if (LDNS_QDCOUNT(msg) != 1 || LDNS_ANCOUNT(msg) != 0 || LDNS_NSCOUNT(msg) != 0 ||
		LDNS_ARCOUNT(msg) > 1)
		return DNS_WIRE_FORMERR;
	ldns_pkt *pkt = NULL;
	if (ldns_wire2pkt(&pkt, msg, len) != LDNS_STATUS_OK || pkt == NULL)
		return DNS_WIRE_FORMERR;
	enum dns_wire_parse rc = DNS_WIRE_OK;
	ldns_rr_list *qs = ldns_pkt_question(pkt);
	if (ldns_pkt_qdcount(pkt) == 1 && qs != NULL && ldns_rr_list_rr_count(qs) == 1)
		read_question(q, ldns_rr_list_rr(qs, 0));
	/* ldns takes the OPT record out of the additional count and keeps its fields apart. */
	q->edns = ldns_pkt_edns(pkt) ? 1 : 0;
	if (q->edns) {
		q->edns_udp = ldns_pkt_edns_udp_size(pkt);
		q->edns_version = ldns_pkt_edns_version(pkt);
	}
	unsigned raw_ar = LDNS_ARCOUNT(msg);
	if (ldns_pkt_qdcount(pkt) != 1 || !q->has_question || ldns_pkt_ancount(pkt) != 0 ||
		ldns_pkt_nscount(pkt) != 0 || raw_ar > 1 || (raw_ar == 1 && !q->edns) ||
		ldns_pkt_tsig(pkt) != NULL) {
		/* One question, nothing in answer and authority, at most one OPT (RFC 6891 6.1.1);
		 * a signed (TSIG) query is not one egressd can verify. */
		rc = DNS_WIRE_FORMERR;
	} else if (q->opcode != LDNS_PACKET_QUERY) {
		rc = DNS_WIRE_REFUSED;
	} else if (q->edns && q->edns_version != 0) {
		rc = DNS_WIRE_BADVERS;
	} else if (q->qclass != DNS_CLASS_IN) {
		rc = DNS_WIRE_REFUSED;
	}
	ldns_pkt_free(pkt);
	return rc;
}

/* The owner name of q as a new ldns name, or NULL. */
static ldns_rdf *qname_rdf(const struct dns_wire_query *q)
{
	return ldns_dname_new_frm_data((uint16_t)q->qname_len, q->qname);
}

/* Builds the packet; with_records 0 leaves the answer section empty and sets TC. */
static ldns_pkt *build(const struct dns_wire_query *q, enum dns_rcode rcode,
	const struct dns_addr *addrs, size_t naddrs, uint32_t ttl, int with_records)
{
	ldns_pkt *pkt = ldns_pkt_new();
	if (pkt == NULL)
		return NULL;
	ldns_pkt_set_id(pkt, q->id);
	ldns_pkt_set_qr(pkt, true);
	ldns_pkt_set_opcode(pkt, (ldns_pkt_opcode)q->opcode);
	ldns_pkt_set_rd(pkt, q->rd);
	ldns_pkt_set_cd(pkt, q->cd);
	ldns_pkt_set_ra(pkt, true);
	ldns_pkt_set_tc(pkt, !with_records);
	ldns_pkt_set_rcode(pkt, (uint8_t)(rcode & 0x0f));
	if (q->edns || rcode == DNS_RCODE_BADVERS) {
		ldns_pkt_set_edns_udp_size(pkt, DNS_WIRE_UDP_MAX);
		ldns_pkt_set_edns_extended_rcode(pkt, (uint8_t)(rcode >> 4));
		ldns_pkt_set_edns_version(pkt, 0);
	}
	if (q->has_question) {
		ldns_rr *qr = ldns_rr_new();
		ldns_rdf *owner = qname_rdf(q);
		if (qr == NULL || owner == NULL) {
			ldns_rr_free(qr);
			ldns_rdf_deep_free(owner);
			goto fail;
		}
		ldns_rr_set_owner(qr, owner);
		ldns_rr_set_type(qr, (ldns_rr_type)q->qtype);
		ldns_rr_set_class(qr, (ldns_rr_class)q->qclass);
		ldns_rr_set_question(qr, true);
		if (!ldns_pkt_push_rr(pkt, LDNS_SECTION_QUESTION, qr)) {
			ldns_rr_free(qr);
			goto fail;
		}
	}
	if (rcode != DNS_RCODE_NOERROR || !with_records || !q->has_question)
		return pkt;
	int family = q->qtype == DNS_TYPE_A ? AF_INET : q->qtype == DNS_TYPE_AAAA ? AF_INET6 : 0;
	for (size_t i = 0; i < naddrs && family != 0; i++) {
		if (addrs[i].family != family)
			continue;
		int v4 = family == AF_INET;
		ldns_rr *rr = ldns_rr_new();
		ldns_rdf *owner = qname_rdf(q);
		ldns_rdf *rd = ldns_rdf_new_frm_data(v4 ? LDNS_RDF_TYPE_A : LDNS_RDF_TYPE_AAAA,
			v4 ? 4 : 16, addrs[i].addr);
		if (rr == NULL || owner == NULL || rd == NULL) {
			ldns_rr_free(rr);
			ldns_rdf_deep_free(owner);
			ldns_rdf_deep_free(rd);
			goto fail;
		}
		ldns_rr_set_owner(rr, owner);
		ldns_rr_set_type(rr, v4 ? LDNS_RR_TYPE_A : LDNS_RR_TYPE_AAAA);
		ldns_rr_set_class(rr, LDNS_RR_CLASS_IN);
		ldns_rr_set_ttl(rr, ttl);
		if (!ldns_rr_push_rdf(rr, rd)) {
			ldns_rdf_deep_free(rd);
			ldns_rr_free(rr);
			goto fail;
		}
		if (!ldns_pkt_push_rr(pkt, LDNS_SECTION_ANSWER, rr)) {
			ldns_rr_free(rr);
			goto fail;
		}
	}
	return pkt;
fail:
	ldns_pkt_free(pkt);
	return NULL;
}

/* Renders pkt into out; the length, or -1. */
static int render(ldns_pkt *pkt, uint8_t *out, size_t cap, size_t *len)
{
	uint8_t *wire = NULL;
	size_t size = 0;
	if (ldns_pkt2wire(&wire, pkt, &size) != LDNS_STATUS_OK || wire == NULL)
		return -1;
	int rc = -1;
	if (size <= cap) {
		memcpy(out, wire, size);
		*len = size;
		rc = 0;
	}
	free(wire);
	return rc;
}

int dns_wire_answer(const struct dns_wire_query *q, enum dns_rcode rcode,
	const struct dns_addr *addrs, size_t naddrs, uint32_t ttl, size_t limit, uint8_t *out,
	size_t cap)
{
	if (limit > cap)
		limit = cap;
	size_t len = 0;
	ldns_pkt *pkt = build(q, rcode, addrs, naddrs, ttl, 1);
	if (pkt == NULL)
		return -1;
	int rc = render(pkt, out, DNS_WIRE_MSG_MAX < cap ? DNS_WIRE_MSG_MAX : cap, &len);
	ldns_pkt_free(pkt);
	if (rc == 0 && len <= limit)
		return (int)len;
	/* Too long for the transport: the header and question alone, with TC. */
	pkt = build(q, rcode, addrs, naddrs, ttl, 0);
	if (pkt == NULL)
		return -1;
	rc = render(pkt, out, limit, &len);
	ldns_pkt_free(pkt);
	return rc == 0 ? (int)len : -1;
}
