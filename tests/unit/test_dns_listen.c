/* The DNS listener's answers without sockets (dns_listener_answer) under a fake decider: the
 * answer's policy, its record, a full mapped pool (SERVFAIL with a record), an allow that cannot
 * be put on record (SERVFAIL, then written on the next query), records once per key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <event2/event.h>
#include <ldns/ldns.h>

#include "allowlist/config.h"
#include "dns/listen.h"
#include "dns/map.h"
#include "dns/resolver.h"
#include "dns/wire.h"

struct fake {
	struct dns_resolver *resolver;
	struct dns_addr_policy pol;
	int fail_records;      /* record() refuses allows */
	int nrec;
	char reasons[16][40];  /* reason of each record ("" for none) */
	char hosts[16][64];
	char addrs[16][64];
	int holds;
};

static void decide(void *arg, const struct dns_listener_client *who, const char *name,
	struct dns_listener_verdict *out)
{
	(void)who;
	struct fake *f = arg;
	snprintf(out->session, sizeof out->session, "default");
	if (name == NULL)
		return;
	if (strcmp(name, "denied.test") == 0) {
		out->reason = "host-not-allowed";
		snprintf(out->rule, sizeof out->rule, "allowDomains (no entry matches)");
		return;
	}
	out->allow = 1;
	snprintf(out->rule, sizeof out->rule, "allowDomains: %s", name);
	out->mapped = strstr(name, ".map.test") != NULL;
	out->resolver = f->resolver;
	out->addrpol = &f->pol;
	out->hold = f;
	f->holds++;
}

static void release(void *arg, void *hold)
{
	struct fake *f = arg;
	assert_ptr_equal(hold, f);
	f->holds--;
}

static int record(void *arg, const struct dns_listener_record *rec)
{
	struct fake *f = arg;
	int allow = rec->decision != NULL && strcmp(rec->decision, "allow") == 0;
	if (f->fail_records && allow)
		return -1;
	if (f->nrec < 16) {
		snprintf(f->reasons[f->nrec], sizeof f->reasons[0], "%s",
			rec->reason ? rec->reason : "");
		snprintf(f->hosts[f->nrec], sizeof f->hosts[0], "%s", rec->host ? rec->host : "");
		snprintf(f->addrs[f->nrec], sizeof f->addrs[0], "%s", rec->addr ? rec->addr : "");
	}
	f->nrec++;
	return 0;
}

static const struct dns_listener_ops ops = {decide, release, record};

/* Asks name/type; returns the answer's rcode and the number of records (*an). */
static int ask(struct dns_listener *l, const char *name, uint16_t type, size_t *an, char *first,
	size_t firstcap)
{
	ldns_pkt *q = NULL;
	assert_int_equal(ldns_pkt_query_new_frm_str(&q, name, (ldns_rr_type)type,
				 LDNS_RR_CLASS_IN, LDNS_RD),
		LDNS_STATUS_OK);
	uint8_t *w = NULL;
	size_t wn = 0;
	assert_int_equal(ldns_pkt2wire(&w, q, &wn), LDNS_STATUS_OK);
	ldns_pkt_free(q);
	struct dns_listener_client who;
	memset(&who, 0, sizeof who);
	who.peer.family = AF_INET;
	who.peer.addr[0] = 127;
	who.peer.addr[3] = 1;
	snprintf(who.text, sizeof who.text, "127.0.0.1:1000");
	who.listener = "127.0.0.1:53";
	uint8_t out[DNS_WIRE_MSG_MAX];
	size_t n = dns_listener_answer(l, w, wn, &who, out, sizeof out);
	free(w);
	assert_true(n > 0);
	ldns_pkt *p = NULL;
	assert_int_equal(ldns_wire2pkt(&p, out, n), LDNS_STATUS_OK);
	int rc = ldns_pkt_get_rcode(p);
	*an = ldns_pkt_ancount(p);
	if (first != NULL && *an > 0) {
		char *s = ldns_rdf2str(ldns_rr_rdf(ldns_rr_list_rr(ldns_pkt_answer(p), 0), 0));
		snprintf(first, firstcap, "%s", s);
		free(s);
	}
	ldns_pkt_free(p);
	return rc;
}

struct env {
	struct event_base *base;
	struct dns_map *map;
	struct dns_listener *l;
	struct fake f;
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof *e);
	e->base = event_base_new();
	static struct allow_hosts_entry hosts[1];
	memset(hosts, 0, sizeof hosts);
	snprintf(hosts[0].name, sizeof hosts[0].name, "real.test");
	const char *addrs[] = {"192.0.2.1", "10.0.0.1", "127.0.0.1"};
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(allow_cidr_parse(addrs[i], strlen(addrs[i]),
					 &hosts[0].addrs[hosts[0].naddrs++], NULL, 0),
			0);
	static char server[] = "127.0.0.1:9";
	static char *servers[] = {server};
	struct allow_dns_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.hosts = hosts;
	cfg.nhosts = 1;
	cfg.servers = servers;
	cfg.nservers = 1;
	char err[128];
	e->f.resolver = dns_resolver_new(e->base, &cfg, err, sizeof err);
	assert_non_null(e->f.resolver);
	static struct allow_cidr allow;
	assert_int_equal(allow_cidr_parse("192.0.2.0/24", 12, &allow, NULL, 0), 0);
	e->f.pol.allow = &allow;
	e->f.pol.nallow = 1;
	e->map = dns_map_new(0);
	e->l = dns_listener_new(e->base, &ops, &e->f, e->map);
	assert_non_null(e->l);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	dns_listener_free(e->l);
	dns_map_free(e->map);
	dns_resolver_free(e->f.resolver);
	event_base_free(e->base);
	free(e);
	return 0;
}

static void test_policy(void **state)
{
	struct env *e = *state;
	size_t an;
	char first[64] = "";
	/* Real: only the documentation address passes this policy (10/8 and 127/8 do not). */
	assert_int_equal(ask(e->l, "real.test.", DNS_TYPE_A, &an, first, sizeof first), 0);
	assert_int_equal(an, 1);
	assert_string_equal(first, "192.0.2.1");
	assert_int_equal(e->f.nrec, 1);
	assert_string_equal(e->f.addrs[0], "192.0.2.1");
	assert_int_equal(ask(e->l, "real.test.", DNS_TYPE_AAAA, &an, NULL, 0), 0);
	assert_int_equal(an, 0);
	assert_int_equal(ask(e->l, "denied.test.", DNS_TYPE_A, &an, NULL, 0), LDNS_RCODE_REFUSED);
	assert_string_equal(e->f.reasons[2], "host-not-allowed");
	assert_int_equal(ask(e->l, "real.test.", 16, &an, NULL, 0), LDNS_RCODE_REFUSED);
	assert_string_equal(e->f.reasons[3], "type-refused");
	assert_int_equal(ask(e->l, "real.test.", DNS_TYPE_HTTPS, &an, NULL, 0), 0);
	assert_int_equal(an, 0);
	assert_int_equal(ask(e->l, "x.map.test.", DNS_TYPE_A, &an, first, sizeof first), 0);
	assert_int_equal(an, 1);
	assert_string_equal(first, "198.18.0.1");
	assert_int_equal(ask(e->l, "x.map.test.", DNS_TYPE_AAAA, &an, NULL, 0), 0);
	assert_int_equal(an, 0);
	/* Once per key: the same queries again add no record. */
	int n = e->f.nrec;
	assert_int_equal(ask(e->l, "real.test.", DNS_TYPE_A, &an, NULL, 0), 0);
	assert_int_equal(ask(e->l, "denied.test.", DNS_TYPE_A, &an, NULL, 0), LDNS_RCODE_REFUSED);
	assert_int_equal(e->f.nrec, n);
	assert_int_equal(e->f.holds, 0);
}

static void test_pool_exhausted(void **state)
{
	struct env *e = *state;
	uint8_t a[4];
	/* Every address live now (the listener's clock is the monotonic one). */
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
	for (unsigned i = 0; i < DNS_MAP_POOL; i++) {
		char n[32];
		snprintf(n, sizeof n, "n%u.test", i);
		assert_int_equal(dns_map_get(e->map, "other", n, now, a), 0);
	}
	size_t an;
	assert_int_equal(ask(e->l, "y.map.test.", DNS_TYPE_A, &an, NULL, 0), LDNS_RCODE_SERVFAIL);
	assert_int_equal(an, 0);
	assert_int_equal(e->f.nrec, 1);
	assert_string_equal(e->f.reasons[0], "pool-exhausted");
	assert_string_equal(e->f.hosts[0], "y.map.test");
	assert_int_equal(e->f.holds, 0);
}

static void test_record_refused(void **state)
{
	struct env *e = *state;
	size_t an;
	e->f.fail_records = 1;
	/* An allow that cannot be put on record is no answer with addresses. */
	assert_int_equal(ask(e->l, "real.test.", DNS_TYPE_A, &an, NULL, 0), LDNS_RCODE_SERVFAIL);
	assert_int_equal(an, 0);
	assert_int_equal(ask(e->l, "z.map.test.", DNS_TYPE_A, &an, NULL, 0), LDNS_RCODE_SERVFAIL);
	/* Denials are still answered (and recorded). */
	assert_int_equal(ask(e->l, "denied.test.", DNS_TYPE_A, &an, NULL, 0), LDNS_RCODE_REFUSED);
	assert_int_equal(e->f.nrec, 1);
	/* The log works again: the next query of the key writes its record and answers. */
	e->f.fail_records = 0;
	assert_int_equal(ask(e->l, "real.test.", DNS_TYPE_A, &an, NULL, 0), 0);
	assert_int_equal(an, 1);
	assert_int_equal(e->f.nrec, 2);
	assert_string_equal(e->f.hosts[1], "real.test");
	assert_int_equal(e->f.holds, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_policy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pool_exhausted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_record_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
