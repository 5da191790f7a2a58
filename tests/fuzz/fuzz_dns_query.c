/* The DNS listener's query path on arbitrary bytes: the whole message goes through
 * dns_listener_answer, over UDP and over TCP, with a fake decider standing for the proxy:
 *   *.deny.test          not allowed (host-not-allowed)
 *   nodns.test, *.nodns.test  the dns action denied
 *   *.map.test           allowed, mapped answers
 *   a.test, v6.test, many.test, private.test  allowed, real answers from dns.hosts
 *   any other name       allowed, real, with no resolver (SERVFAIL: the fuzzer never waits for
 *                        an upstream)
 * Properties, beyond memory safety: every message that has a header and is no response gets an
 * answer; an answer parses with ldns, is a response with the query's ID, fits the transport (UDP
 * at most 1232 bytes) and TCP's too; a REFUSED answer has no records; records of an answer are A
 * or AAAA of the asked type, only for allowed names, only addresses that pass the address policy
 * (never 10.0.0.1 of private.test), and a mapped A is in 198.18.0.0/15; HTTPS and SVCB get no
 * records; a name whose dns action is denied, or that is denied, gets REFUSED. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <ldns/ldns.h>

#include "allowlist/cidr.h"
#include "allowlist/config.h"
#include "dns/listen.h"
#include "dns/map.h"
#include "dns/resolver.h"
#include "dns/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct event_base *base;
static struct dns_resolver *resolver;
static struct dns_map *map;
static struct dns_listener *listener;
static struct dns_addr_policy addrpol; /* the default ranges only: 10.0.0.1 is denied */
static int holds;                      /* taken and not yet released */

static void check(int cond)
{
	if (!cond)
		abort();
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void decide(void *arg, const struct dns_listener_client *who, const char *name,
	struct dns_listener_verdict *out)
{
	(void)arg;
	(void)who;
	check(out->session[0] == '\0' && out->allow == 0 && out->hold == NULL);
	snprintf(out->session, sizeof out->session, "default");
	if (name == NULL)
		return;
	check(name[0] != '\0' && strlen(name) < ALLOW_HOST_BUF);
	if (strcmp(name, "nodns.test") == 0 || ends_with(name, ".nodns.test")) {
		out->dns_denied = 1;
		snprintf(out->rule, sizeof out->rule, "actions: dns");
		return;
	}
	if (ends_with(name, ".deny.test")) {
		out->reason = "host-not-allowed";
		return;
	}
	out->allow = 1;
	out->mapped = ends_with(name, ".map.test");
	if (strcmp(name, "a.test") == 0 || strcmp(name, "v6.test") == 0 ||
		strcmp(name, "many.test") == 0 || strcmp(name, "private.test") == 0) {
		out->resolver = resolver;
		out->addrpol = &addrpol;
		out->hold = &holds;
		holds++;
	}
}

static void release(void *arg, void *hold)
{
	(void)arg;
	check(hold == &holds && holds > 0);
	holds--;
}

static int record(void *arg, const struct dns_listener_record *rec)
{
	(void)arg;
	if (rec->suppressed > 0)
		return 0;
	check(rec->decision != NULL && rec->host != NULL && rec->qtype != NULL &&
		rec->rcode != NULL && rec->client != NULL);
	check(strcmp(rec->decision, "allow") == 0 || strcmp(rec->decision, "deny") == 0);
	return 0;
}

static void add_host(struct allow_dns_config *cfg, const char *name, const char *const *addrs)
{
	struct allow_hosts_entry *h = &cfg->hosts[cfg->nhosts++];
	snprintf(h->name, sizeof h->name, "%s", name);
	for (; *addrs != NULL; addrs++)
		check(allow_cidr_parse(*addrs, strlen(*addrs), &h->addrs[h->naddrs++], NULL, 0) == 0);
}

static void setup(void)
{
	static struct allow_hosts_entry hosts[4];
	static char server[] = "127.0.0.1:9";
	static char *servers[] = {server};
	struct allow_dns_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.hosts = hosts;
	cfg.servers = servers;
	cfg.nservers = 1;
	static const char *const a[] = {"192.0.2.1", "2001:db8::1", NULL};
	static const char *const v6[] = {"2001:db8::6", "2001:db8::7", NULL};
	static const char *const many[] = {"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4",
		"192.0.2.5", "192.0.2.6", "192.0.2.7", "192.0.2.8", "2001:db8::1", "2001:db8::2",
		"2001:db8::3", "2001:db8::4", "2001:db8::5", "2001:db8::6", "2001:db8::7",
		"2001:db8::8", NULL};
	static const char *const priv[] = {"10.0.0.1", "192.0.2.9", NULL};
	add_host(&cfg, "a.test", a);
	add_host(&cfg, "v6.test", v6);
	add_host(&cfg, "many.test", many);
	add_host(&cfg, "private.test", priv);
	/* The documentation ranges are denied by default; let them through so answers have
	 * records, and keep 10.0.0.1 denied. */
	static struct allow_cidr allow[2];
	check(allow_cidr_parse("192.0.2.0/24", 12, &allow[0], NULL, 0) == 0);
	check(allow_cidr_parse("2001:db8::/32", 13, &allow[1], NULL, 0) == 0);
	addrpol.allow = allow;
	addrpol.nallow = 2;
	base = event_base_new();
	char err[128];
	resolver = dns_resolver_new(base, &cfg, err, sizeof err);
	map = dns_map_new(0);
	static const struct dns_listener_ops ops = {decide, release, record};
	listener = dns_listener_new(base, &ops, NULL, map);
	check(base != NULL && resolver != NULL && map != NULL && listener != NULL);
}

/* The name of the question in ans, canonical, or "" when it has none. */
static void question_name(ldns_pkt *p, char *buf, size_t cap)
{
	buf[0] = '\0';
	if (ldns_pkt_qdcount(p) != 1)
		return;
	char *s = ldns_rdf2str(ldns_rr_owner(ldns_rr_list_rr(ldns_pkt_question(p), 0)));
	if (s == NULL)
		return;
	size_t n = strlen(s);
	if (n > 1 && s[n - 1] == '.')
		s[n - 1] = '\0';
	struct allow_dest d;
	if (allow_canon_host(s, strlen(s), &d) == ALLOW_CANON_OK && d.kind == ALLOW_HOST_NAME)
		snprintf(buf, cap, "%s", d.host);
	free(s);
}

static void check_answer(const uint8_t *q, size_t qlen, const uint8_t *a, size_t alen, int tcp)
{
	int must = qlen >= DNS_WIRE_HEADER && !(q[2] & 0x80);
	if (alen == 0) {
		check(!must);
		return;
	}
	check(must);
	check(alen <= (tcp ? DNS_WIRE_MSG_MAX : DNS_WIRE_UDP_MAX));
	ldns_pkt *p = NULL;
	check(ldns_wire2pkt(&p, a, alen) == LDNS_STATUS_OK);
	check(ldns_pkt_qr(p));
	check(ldns_pkt_id(p) == (((unsigned)q[0] << 8) | q[1]));
	char name[ALLOW_HOST_BUF];
	question_name(p, name, sizeof name);
	ldns_pkt_rcode rc = ldns_pkt_get_rcode(p);
	size_t an = ldns_pkt_ancount(p);
	check(ldns_pkt_nscount(p) == 0);
	if (rc != LDNS_RCODE_NOERROR)
		check(an == 0);
	if (name[0] != '\0' && ldns_pkt_get_opcode(p) == LDNS_PACKET_QUERY &&
		(ends_with(name, ".deny.test") || strcmp(name, "nodns.test") == 0 ||
			ends_with(name, ".nodns.test")))
		check(rc == LDNS_RCODE_REFUSED || rc == LDNS_RCODE_FORMERR ||
			ldns_pkt_edns_extended_rcode(p) != 0);
	if (an > 0) {
		ldns_rr *qr = ldns_rr_list_rr(ldns_pkt_question(p), 0);
		ldns_rr_type qt = ldns_rr_get_type(qr);
		check(qt == LDNS_RR_TYPE_A || qt == LDNS_RR_TYPE_AAAA);
		check(name[0] != '\0');
		for (size_t i = 0; i < an; i++) {
			ldns_rr *rr = ldns_rr_list_rr(ldns_pkt_answer(p), i);
			check(ldns_rr_get_type(rr) == qt);
			ldns_rdf *rd = ldns_rr_rdf(rr, 0);
			check(rd != NULL);
			const uint8_t *ip = ldns_rdf_data(rd);
			if (qt == LDNS_RR_TYPE_A) {
				check(ldns_rdf_size(rd) == 4);
				check(!(ip[0] == 10 && ip[1] == 0 && ip[2] == 0 && ip[3] == 1));
				if (ends_with(name, ".map.test"))
					check(dns_map_in_pool(ip) && an == 1);
			} else {
				check(ldns_rdf_size(rd) == 16);
				check(!ends_with(name, ".map.test"));
			}
		}
	}
	ldns_pkt_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (base == NULL)
		setup();
	static uint8_t out[DNS_WIRE_MSG_MAX + 1];
	for (int tcp = 0; tcp < 2; tcp++) {
		struct dns_listener_client who;
		memset(&who, 0, sizeof who);
		who.peer.family = AF_INET;
		who.peer.addr[0] = 127;
		who.peer.addr[3] = 1;
		snprintf(who.text, sizeof who.text, "127.0.0.1:5353");
		who.listener = "127.0.0.1:53";
		who.tcp = tcp;
		size_t n = dns_listener_answer(listener, data, size, &who, out, sizeof out);
		check(n <= sizeof out);
		check_answer(data, size, out, n, tcp);
	}
	check(holds == 0);
	return 0;
}
