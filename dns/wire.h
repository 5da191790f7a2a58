/* The DNS listener's wire format (docs/dns.md): reading one query and writing its answer, with
 * ldns doing every byte of DNS message parsing and building.
 *
 * Pure functions: no sockets, no global state; memory ldns takes is given back before each
 * function returns.  Nothing here decides policy: dns/listen.c picks the answer, this file only
 * says what the client asked and renders what it gets. */
#ifndef EGRESSD_DNS_WIRE_H
#define EGRESSD_DNS_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "allowlist/host.h"
#include "dns/resolver.h"

#define DNS_WIRE_HEADER 12      /* bytes of a DNS header */
#define DNS_WIRE_NAME_MAX 255   /* longest name in wire form */
#define DNS_WIRE_MSG_MAX 65535  /* longest message (TCP's length prefix) */
#define DNS_WIRE_UDP_MIN 512    /* the UDP size every client takes (RFC 1035) */
#define DNS_WIRE_UDP_MAX 1232   /* the UDP size egressd advertises and never exceeds (no IP
                                   fragments: the DNS flag day 2020 figure) */

/* Query types the listener tells apart. */
#define DNS_TYPE_A 1
#define DNS_TYPE_AAAA 28
#define DNS_TYPE_SVCB 64
#define DNS_TYPE_HTTPS 65
#define DNS_CLASS_IN 1

enum dns_rcode {
	DNS_RCODE_NOERROR = 0,  /* an answer, possibly empty */
	DNS_RCODE_FORMERR = 1,  /* the query is malformed */
	DNS_RCODE_SERVFAIL = 2, /* egressd could not answer (upstream failure, pool exhausted) */
	DNS_RCODE_NXDOMAIN = 3, /* the upstream says the name does not exist */
	DNS_RCODE_REFUSED = 5,  /* policy: the name, type, opcode or class is not answered */
	DNS_RCODE_BADVERS = 16, /* an EDNS version other than 0 (extended rcode, EDNS only) */
};

enum dns_wire_parse {
	DNS_WIRE_OK = 0,   /* one question of class IN: every field of the query is filled */
	DNS_WIRE_FORMERR,  /* answer FORMERR: a malformed message, or not exactly one question, or
	                      records where a query has none */
	DNS_WIRE_REFUSED,  /* answer REFUSED: an opcode other than QUERY, a class other than IN */
	DNS_WIRE_BADVERS,  /* answer BADVERS: EDNS version above 0 */
	DNS_WIRE_DROP,     /* no answer at all: shorter than a header, or a response (QR set),
	                      so that two servers can never answer each other in a loop */
};

/* What a query asked, as far as the answer needs it.  The name is kept as the client wrote it
 * (its letter case too: resolvers that randomise case check it in the answer). */
struct dns_wire_query {
	uint16_t id;                        /* the client's ID, echoed */
	uint8_t opcode;                     /* 0 = QUERY */
	int rd;                             /* recursion desired, echoed */
	int cd;                             /* checking disabled, echoed */
	int has_question;                   /* qname/qtype/qclass are valid */
	uint8_t qname[DNS_WIRE_NAME_MAX];   /* the name in wire form, uncompressed */
	size_t qname_len;
	uint16_t qtype;
	uint16_t qclass;
	int edns;                           /* the query had an OPT record */
	uint16_t edns_udp;                  /* its UDP payload size (0 without EDNS) */
	uint8_t edns_version;
	char text[4 * DNS_WIRE_NAME_MAX + 1]; /* the name in presentation form, escapes and all,
	                                         without the final dot (records show it) */
	int canon_ok;                       /* name holds the canonical host name: the qname is
	                                       a DNS name allow_canon_host accepts as a name */
	char name[ALLOW_HOST_BUF];          /* canonical (lower case, no trailing dot), or "" */
};

/* Reads one DNS message.  On DNS_WIRE_OK every field is filled; on FORMERR, REFUSED and BADVERS
 * the fields the header and question gave are filled (an answer can be built from q); on DROP
 * q is unusable. */
enum dns_wire_parse dns_wire_parse_query(const uint8_t *msg, size_t len, struct dns_wire_query *q);

/* The largest UDP answer the client takes: its EDNS size within [512, DNS_WIRE_UDP_MAX], or 512
 * without EDNS. */
size_t dns_wire_udp_limit(const struct dns_wire_query *q);

/* Writes the answer to q into out (cap bytes): the header with q's ID and flags (QR, RD and CD
 * echoed, RA set), q's question when it had one, rcode, and for DNS_RCODE_NOERROR one record per
 * address in addrs whose family fits qtype (A: AF_INET, AAAA: AF_INET6; others are skipped), with
 * the given TTL and q's name as owner.  An OPT record (UDP size DNS_WIRE_UDP_MAX) answers a query
 * that had one; BADVERS needs one.  When the answer would exceed limit (dns_wire_udp_limit for
 * UDP, DNS_WIRE_MSG_MAX for TCP), it is sent without its records and with TC set, so the client
 * asks again over TCP.  Returns the length written, or -1 (out of memory, or cap too small). */
int dns_wire_answer(const struct dns_wire_query *q, enum dns_rcode rcode,
	const struct dns_addr *addrs, size_t naddrs, uint32_t ttl, size_t limit, uint8_t *out,
	size_t cap);

/* "A", "AAAA", "HTTPS", "TXT", ... or "TYPE1234" (buf holds the text when needed). */
const char *dns_wire_type_name(uint16_t qtype, char *buf, size_t cap);

/* "NOERROR", "REFUSED", ... */
const char *dns_rcode_name(enum dns_rcode rcode);

#endif
