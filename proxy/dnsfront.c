/* The DNS listener's glue (docs/dns.md): dns/listen.c asks, this file answers from the proxy's
 * state.  A query's session is the client's (sessions' clients, else default: DNS carries no
 * credentials), decided under the current generation: allow_decide_any_port with the dns
 * action, that generation's resolver and address policy for real answers (a generation
 * reference is held while an answer waits for the resolver), and its listen.dnsAnswers.  Records
 * go to the audit log as event dns, front dns. */
#include <stdio.h>
#include <string.h>

#include "allowlist/tags.h"
#include "audit/audit.h"
#include "dns/listen.h"
#include "dns/map.h"
#include "proxy/proxy.h"

static void dns_decide(void *arg, const struct dns_listener_client *who, const char *name,
	struct dns_listener_verdict *out)
{
	struct proxy_server *srv = arg;
	struct proxy_gen *gen = srv->gen;
	out->mapped = gen->cfg->listen_dns_answers == ALLOW_DNS_ANSWERS_MAPPED;
	struct proxy_session *s = proxy_session_for_peer(srv, &who->peer);
	if (s == NULL || s->cfg == NULL) {
		out->reason = "no-session";
		snprintf(out->rule, sizeof out->rule, "sessions (no session named default)");
		return;
	}
	snprintf(out->session, sizeof out->session, "%s", s->cfg->name);
	const struct allow_bound *b = &s->cfg->bound;
	if (b->deny_actions & ALLOW_TAG_DNS) {
		out->dns_denied = 1;
		snprintf(out->rule, sizeof out->rule, "actions: dns");
		return;
	}
	if (proxy_now_ms() >= proxy_session_expiry(s)) {
		out->reason = "session-expired";
		snprintf(out->rule, sizeof out->rule, "limits.expiresIn");
		return;
	}
	if (name == NULL)
		return;
	struct allow_dest d;
	if (allow_canon_host(name, strlen(name), &d) != ALLOW_CANON_OK) {
		out->reason = "bad-request";
		return;
	}
	struct allow_decision dec;
	allow_decide_any_port(b, &d, ALLOW_TAG_DNS, &dec);
	snprintf(out->rule, sizeof out->rule, "%s", dec.rule);
	if (dec.reason != ALLOW_OK) {
		out->reason = allow_reason_code(dec.reason);
		return;
	}
	out->allow = 1;
	out->resolver = gen->dns;
	out->addrpol = &gen->addrpol;
	out->hold = gen;
	proxy_gen_hold(gen);
}

/* Remembers a DNS listener's bound address: a tunnel to it is a loop like one to any listener. */
static void remember(struct proxy_server *srv, const char *bound)
{
	if (srv->ndns_listeners == PROXY_MAX_LISTENERS)
		return;
	struct proxy_listener *l = &srv->dns_listeners[srv->ndns_listeners];
	memset(l, 0, sizeof *l);
	socklen_t len;
	char why[128];
	if (allow_config_addr_parse(bound, 0, &l->addr, &len, why, sizeof why) == -1)
		return;
	l->addrlen = len;
	l->srv = srv;
	l->key = "listen.dns";
	snprintf(l->text, sizeof l->text, "%s", bound);
	srv->ndns_listeners++;
}

static void dns_release(void *arg, void *hold)
{
	(void)arg;
	proxy_gen_release(hold);
}

static int dns_record(void *arg, const struct dns_listener_record *rec)
{
	struct proxy_server *srv = arg;
	struct audit_rec r;
	audit_rec_init(&r);
	r.event = "dns";
	r.front = "dns";
	if (rec->suppressed > 0) {
		/* The record table was full: how many records were left out this minute. */
		r.reason = "records-suppressed";
		audit_rec_num(&r, "suppressed", (int64_t)rec->suppressed);
		audit_write(srv->audit, &r, AUDIT_EVENT);
		return 0;
	}
	r.session = rec->session;
	r.client = rec->client;
	r.host = rec->host;
	r.action = "dns";
	r.decision = rec->decision;
	r.reason = rec->reason;
	r.rule = rec->rule;
	r.addr = rec->addr;
	audit_rec_str(&r, "qtype", rec->qtype);
	audit_rec_str(&r, "rcode", rec->rcode);
	if (rec->repeat > 0)
		audit_rec_num(&r, "repeat", (int64_t)rec->repeat);
	/* An answer that gives addresses is a decision: refused when it cannot be put on record
	 * (the listener then answers SERVFAIL); a refusal is a denial. */
	int allow = rec->decision != NULL && strcmp(rec->decision, "allow") == 0;
	uint64_t seq = audit_write(srv->audit, &r, allow ? AUDIT_DECISION : AUDIT_DENIAL);
	return seq == 0 && allow ? -1 : 0;
}

int proxy_dnsfront_open(struct proxy_server *srv)
{
	const struct allow_config *cfg = srv->gen->cfg;
	size_t adopted = srv->run != NULL ? srv->run->ndns : 0;
	if (cfg->nlisten_dns == 0 && adopted == 0)
		return 0;
	static const struct dns_listener_ops ops = {dns_decide, dns_release, dns_record};
	srv->dnsmap = dns_map_new(0);
	srv->dns = srv->dnsmap ? dns_listener_new(srv->base, &ops, srv, srv->dnsmap) : NULL;
	if (srv->dns == NULL) {
		fprintf(stderr, "egressd: listen.dns: out of memory\n");
		return -1;
	}
	for (size_t i = 0; i < cfg->nlisten_dns; i++) {
		char bound[DNS_ADDR_TEXT], err[256];
		if (dns_listener_open(srv->dns, cfg->listen_dns[i], bound, sizeof bound, err,
			    sizeof err) == -1) {
			fprintf(stderr, "egressd: %s: listen.dns: %s\n", cfg->path, err);
			return -1;
		}
		remember(srv, bound);
		fprintf(stderr, "egressd: listening on %s (dns, UDP and TCP)\n", bound);
	}
	for (size_t i = 0; i < adopted; i++) {
		char bound[DNS_ADDR_TEXT], err[256];
		int *p = srv->run->dns_fds[i];
		if (dns_listener_adopt(srv->dns, p[0], p[1], bound, sizeof bound, err, sizeof err) ==
			-1) {
			fprintf(stderr, "egressd: listen.dns: %s\n", err);
			return -1;
		}
		p[0] = p[1] = -1; /* the listener owns them now */
		remember(srv, bound);
	}
	return 0;
}

void proxy_dnsfront_stop(struct proxy_server *srv)
{
	dns_listener_close(srv->dns);
}

void proxy_dnsfront_free(struct proxy_server *srv)
{
	dns_listener_free(srv->dns);
	srv->dns = NULL;
	dns_map_free(srv->dnsmap);
	srv->dnsmap = NULL;
}
