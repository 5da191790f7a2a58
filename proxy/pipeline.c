/* The pipeline (docs/design.md 2 and 3, steps 1 and 3-6): the same for every front door.
 *
 * A front door fills c->rq (front, destination, tunnel or HTTP request with its action,
 * credentials) and calls proxy_pipeline_run.  The pipeline identifies the session, checks its
 * limits, decides the host and the action under the current generation, resolves (or reuses a
 * kept upstream), judges every address, dials, writes the decision record, and then hands over:
 * c->front->allowed() for a tunnel, the HTTP exchange (forward.c) for a request.  Every denial
 * is a value (struct proxy_outcome) written to the record and rendered by c->answer: the
 * pipeline itself never speaks a protocol. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent.h>

#include "allowlist/tags.h"
#include "audit/audit.h"
#include "proxy/proxy.h"

void proxy_outcome_set(struct proxy_outcome *o, int status, const char *reason, const char *rule,
        const char *detail_fmt, ...)
{
	o->status = status;
	o->reason = reason;
	snprintf(o->rule, sizeof o->rule, "%s", rule != NULL ? rule : "");
	o->detail[0] = '\0';
	if (detail_fmt != NULL) {
		va_list ap;
		va_start(ap, detail_fmt);
		vsnprintf(o->detail, sizeof o->detail, detail_fmt, ap);
		va_end(ap);
	}
}

void proxy_refuse(struct proxy_conn *c, int status, const char *reason, const char *rule,
        const char *detail)
{
	struct proxy_outcome o;
	proxy_outcome_set(&o, status, reason, rule, "%s", detail);
	proxy_deny(c, &o);
}

/* An allow_decide or allow_tunnel_decide denial as an outcome. */
static void decision_outcome(struct proxy_outcome *o, const struct allow_decision *d,
        const char *session)
{
	proxy_outcome_set(o, 403, allow_reason_code(d->reason), d->rule,
	        "To allow it, %s in session %s", d->hint[0] ? d->hint : "change the bound", session);
}

void proxy_refuse_decision(struct proxy_conn *c, const struct allow_decision *d)
{
	struct proxy_outcome o;
	decision_outcome(&o, d, c->session->name);
	proxy_deny(c, &o);
}

/* ---- decision records ---- */

/* Fills r with what the connection's request says: event, front, session, client, method, host,
 * port, path and action.  action_text is the caller's buffer. */
static void record_base(struct proxy_conn *c, struct audit_rec *r, char *action_text, size_t cap)
{
	audit_rec_init(r);
	r->event = c->rq.tunnel ? "connect" : "request";
	r->conn = c->id;
	/* A head egressd could not read never named its front: the listener's door did. */
	r->front = c->rq.front != NULL ? c->rq.front : c->front->name;
	r->session = c->session ? c->session->name : NULL;
	r->client = c->client_text;
	if (!c->rq.tunnel && c->rq.method[0])
		r->method = c->rq.method;
	if (c->rq.dest.host[0]) {
		r->host = c->rq.dest.host;
		r->port = c->rq.dest.port;
	}
	if (!c->rq.tunnel && c->rq.path != NULL)
		r->path = c->rq.path;
	unsigned action = c->rq.tunnel ? (c->carries != ALLOW_TUNNEL_UNKNOWN
	                                                 ? allow_tunnel_carries(c->carries)
	                                                 : 0)
	                               : c->rq.action;
	if (action != 0) {
		allow_tags_format(action, ",", action_text, cap);
		r->action = action_text;
	}
	r->addr = c->up.addr_text[0] ? c->up.addr_text : NULL;
	r->orig_dst = c->rq.orig_dst[0] ? c->rq.orig_dst : NULL;
}

/* A denial rendered as an HTTP answer carries its status; a SOCKS reply or a close does not. */
static int answer_has_status(const struct proxy_conn *c)
{
	return c->answer == proxy_answer_http;
}

void proxy_deny(struct proxy_conn *c, const struct proxy_outcome *o)
{
	if (proxy_conn_closed(c))
		return;
	proxy_audit_wait_cancel(c);
	char action[160];
	struct audit_rec r;
	record_base(c, &r, action, sizeof action);
	r.decision = "deny";
	r.reason = o->reason;
	r.rule = o->rule[0] ? o->rule : NULL;
	r.status = answer_has_status(c) ? o->status : -1;
	/* addr names what this request dialled (a refusal, a timeout, a loop); a kept upstream of
	 * an earlier request is not this one's. */
	if (!c->rq.dialled)
		r.addr = NULL;
	/* A denial goes out even when its record cannot be written: denying is always safe. */
	audit_write(c->srv->audit, &r, AUDIT_DENIAL);
	if (c->srv->run != NULL && c->srv->run->denied != NULL)
		c->srv->run->denied(c->srv->run->arg, c, o);
	if (c->gen != NULL) {
		proxy_gen_release(c->gen);
		c->gen = NULL;
	}
	c->answer(c, o);
}

uint64_t proxy_audit_tunnel(struct proxy_conn *c, const char *decision,
        const struct proxy_outcome *o)
{
	char action[160];
	struct audit_rec r;
	record_base(c, &r, action, sizeof action);
	r.decision = decision;
	if (o != NULL) {
		r.reason = o->reason;
		r.rule = o->rule[0] ? o->rule : NULL;
	}
	return audit_write(c->srv->audit, &r,
	        strcmp(decision, "allow") == 0 ? AUDIT_DECISION : AUDIT_DENIAL);
}

/* ---- sessions (docs/design.md 4.4) ---- */

/* Compares in time that depends only on the lengths, so a token is not guessed byte by byte. */
static int token_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	unsigned char diff = (unsigned char)(alen != blen);
	for (size_t i = 0; i < alen && i < blen; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return diff == 0;
}

/* The session whose name and token these are, or NULL. */
static const struct allow_session_config *by_credentials(const struct allow_config *cfg,
        const char *user, size_t ulen, const char *pass, size_t plen)
{
	for (size_t i = 0; i < cfg->nsessions; i++) {
		const struct allow_session_config *s = &cfg->sessions[i];
		if (s->token == NULL || strlen(s->name) != ulen || memcmp(s->name, user, ulen) != 0)
			continue;
		return token_equal(pass, plen, s->token, strlen(s->token)) ? s : NULL;
	}
	return NULL;
}

int proxy_credentials_match(struct proxy_server *srv, const char *user, size_t ulen,
        const char *pass, size_t plen)
{
	return by_credentials(srv->gen->cfg, user, ulen, pass, plen) != NULL;
}

static const struct allow_session_config *by_peer(const struct allow_config *cfg,
        const struct dns_addr *peer)
{
	for (size_t i = 0; i < cfg->nsessions; i++)
		for (size_t j = 0; j < cfg->sessions[i].nclients; j++)
			if (allow_cidr_contains(&cfg->sessions[i].clients[j], peer->family, peer->addr))
				return &cfg->sessions[i];
	return allow_config_session(cfg, "default");
}

struct proxy_session *proxy_session_for_peer(struct proxy_server *srv, const struct dns_addr *peer)
{
	const char *bound = srv->run != NULL ? srv->run->session : NULL;
	const struct allow_session_config *sc =
	        bound != NULL ? allow_config_session(srv->gen->cfg, bound) : by_peer(srv->gen->cfg, peer);
	return sc != NULL ? proxy_session_find(srv, sc->name) : NULL;
}

/* The session the connection belongs to, or NULL with o filled. */
static struct proxy_session *identify(struct proxy_conn *c, struct proxy_outcome *o)
{
	const struct allow_config *cfg = c->srv->gen->cfg;
	int any_token = 0;
	for (size_t i = 0; i < cfg->nsessions; i++)
		any_token |= cfg->sessions[i].token != NULL;
	const struct allow_session_config *sc = NULL;
	/* A listener that belongs to a session (exec --session) decides it first. */
	const char *bound = c->srv->run != NULL ? c->srv->run->session : NULL;
	if (bound != NULL) {
		sc = allow_config_session(cfg, bound);
		if (sc == NULL) {
			proxy_outcome_set(o, 403, "no-session", "sessions",
			        "The listener's session %s is not in the config", bound);
			return NULL;
		}
	} else if (c->rq.has_cred && any_token) {
		if (c->rq.user != NULL && c->rq.pass != NULL)
			sc = by_credentials(cfg, c->rq.user, c->rq.user_len, c->rq.pass,
			        c->rq.pass_len);
		if (sc == NULL) {
			proxy_outcome_set(o, 407, "auth-required", "sessions.*.auth",
			        "The credentials do not name a session with its token; send "
			        "SESSION:TOKEN");
			return NULL;
		}
	} else {
		sc = by_peer(cfg, &c->peer);
	}
	/* A transparent client never talked to a proxy: it cannot send credentials, and a 407
	 * would ask it for what it cannot give. */
	int can_auth = c->rq.front == NULL || strcmp(c->rq.front, "transparent") != 0;
	if (sc == NULL) {
		if (any_token && can_auth)
			proxy_outcome_set(o, 407, "auth-required", "sessions.*.auth",
			        "No session matched this connection; send credentials SESSION:TOKEN");
		else
			proxy_outcome_set(o, 403, "no-session", "sessions (no session named default)",
			        "No session matched this connection; add a session named default to "
			        "the config");
		return NULL;
	}
	struct proxy_session *s = proxy_session_find(c->srv, sc->name);
	if (s == NULL || s->cfg != sc) {
		proxy_outcome_set(o, 503, "error", "sessions", "egressd is out of memory");
		return NULL;
	}
	return s;
}

/* Takes s as the connection's session (held until the close); it no longer counts against
 * its client address's share. */
static void session_attach(struct proxy_conn *c, struct proxy_session *s)
{
	c->session = s;
	proxy_session_hold(s);
	if (c->source_counted) {
		proxy_source_del(c->srv, &c->peer);
		c->source_counted = 0;
	}
}

void proxy_pipeline_name_session(struct proxy_conn *c)
{
	struct proxy_outcome o;
	if (c->session != NULL || c->rq.has_cred)
		return;
	struct proxy_session *s = identify(c, &o);
	if (s != NULL)
		session_attach(c, s);
}

/* Session, then its limits.  0, or -1 with o filled. */
static int session_step(struct proxy_conn *c, struct proxy_outcome *o)
{
	if (c->session != NULL && c->session->cfg == NULL) {
		proxy_outcome_set(o, 403, "no-session", "sessions",
		        "Session %s is no longer in the config; open a new connection",
		        c->session->name);
		return -1;
	}
	/* A connection that belongs to a session keeps it; credentials on a later request must
	 * name the same one. */
	struct proxy_session *s = c->session != NULL && !c->rq.has_cred ? c->session : identify(c, o);
	if (s == NULL)
		return -1;
	if (c->session != NULL && c->session != s) {
		proxy_outcome_set(o, 400, "bad-request", "sessions",
		        "One connection belongs to one session; open a new connection for another");
		return -1;
	}
	if (c->session == NULL)
		session_attach(c, s);
	const struct allow_limits *lim = &s->cfg->limits;
	char rule[160];
	if (proxy_now_ms() >= proxy_session_expiry(s)) {
		proxy_outcome_set(o, 403, "session-expired", "limits.expiresIn",
		        "The session's lifetime is over; start a new session");
		return -1;
	}
	if (!c->session_counted) {
		if (s->active >= lim->max_connections) {
			snprintf(rule, sizeof rule, "limits.maxConnections (%llu)",
			        (unsigned long long)lim->max_connections);
			proxy_outcome_set(o, 429, "limit-connections", rule,
			        "The session has as many open connections as it may; close one first");
			return -1;
		}
		if (s->total >= lim->max_connections_total) {
			snprintf(rule, sizeof rule, "limits.maxConnectionsTotal (%llu)",
			        (unsigned long long)lim->max_connections_total);
			proxy_outcome_set(o, 429, "limit-connections", rule,
			        "The session has used all the connections it may open");
			return -1;
		}
		s->active++;
		s->total++;
		c->session_counted = 1;
	}
	if (proxy_session_room(s, 1) == 0 || proxy_session_room(s, 0) == 0) {
		proxy_outcome_set(o, 429, "limit-bytes",
		        proxy_session_room(s, 1) == 0 ? "limits.maxBytesOut" : "limits.maxBytesIn",
		        "The session has moved all the bytes it may");
		return -1;
	}
	return 0;
}

/* ---- addresses ---- */

static int loop_outcome(struct proxy_conn *c, const struct dns_addr *a, struct proxy_outcome *o)
{
	const struct proxy_listener *l = proxy_own_listener(c->srv, a, c->rq.dest.port);
	if (l == NULL)
		return 0;
	char rule[200];
	snprintf(rule, sizeof rule, "%s %s", l->key, l->text);
	proxy_outcome_set(o, 508, "loop", rule,
	        "The destination is egressd itself; send requests for the real destination "
	        "instead");
	return -1;
}

/* Judges addresses: keeps those that pass in c->up.addrs.  0 when one passed; else -1 with o
 * filled (a loop to egressd itself, or every address denied). */
static int judge(struct proxy_conn *c, const struct dns_addr *addrs, size_t n,
        struct proxy_outcome *o)
{
	char why[200] = "", first_why[200] = "";
	const struct dns_addr *first_denied = NULL;
	free(c->up.addrs);
	c->up.naddrs = 0;
	c->up.addrs = malloc(DNS_MAX_ADDRS * sizeof *c->up.addrs);
	if (c->up.addrs == NULL) {
		proxy_outcome_set(o, 503, "error", NULL, "egressd is out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const struct dns_addr *a = &addrs[i];
		if (loop_outcome(c, a, o) == -1) {
			proxy_format_addr(a, c->rq.dest.port, c->up.addr_text, sizeof c->up.addr_text);
			c->rq.dialled = 1;
			return -1;
		}
		if (dns_addr_judge(&c->srv->gen->addrpol, a->family, a->addr, why, sizeof why) == 0) {
			if (c->up.naddrs < DNS_MAX_ADDRS)
				c->up.addrs[c->up.naddrs++] = *a;
		} else if (first_denied == NULL) {
			first_denied = a;
			memcpy(first_why, why, sizeof first_why);
		}
	}
	if (c->up.naddrs > 0)
		return 0;
	char rule[400], ip[INET6_ADDRSTRLEN] = "?", v4text[INET_ADDRSTRLEN];
	inet_ntop(first_denied->family, first_denied->addr, ip, sizeof ip);
	uint8_t v4[4];
	if (first_denied->family == AF_INET6 &&
	        dns_addr_embedded_v4(first_denied->addr, v4) != NULL &&
	        inet_ntop(AF_INET, v4, v4text, sizeof v4text) != NULL)
		snprintf(rule, sizeof rule, "dns.allowAddresses (%s carries %s, which is %s)", ip,
		        v4text, first_why);
	else
		snprintf(rule, sizeof rule, "dns.allowAddresses (%s is %s)", ip, first_why);
	proxy_outcome_set(o, 403, "address-denied", rule,
	        "%s resolves only to addresses egressd never dials; add the range to "
	        "dns.allowAddresses if this destination is intended",
	        c->rq.dest.host);
	return -1;
}

/* 0 when the address a connected upstream reached still passes (a reload may have changed
 * the address policy). */
static int still_passes(struct proxy_conn *c, struct proxy_outcome *o)
{
	char why[200];
	c->rq.dialled = 1; /* the upstream this request is to use */
	if (loop_outcome(c, &c->up.addr, o) == -1)
		return -1;
	if (dns_addr_judge(&c->srv->gen->addrpol, c->up.addr.family, c->up.addr.addr, why,
	            sizeof why) == 0)
		return 0;
	char rule[300];
	snprintf(rule, sizeof rule, "dns.allowAddresses (%s is %s)", c->up.addr_text, why);
	proxy_outcome_set(o, 403, "address-denied", rule,
	        "%s resolves only to addresses egressd never dials; add the range to "
	        "dns.allowAddresses if this destination is intended",
	        c->rq.dest.host);
	return -1;
}

static void fail(struct proxy_conn *c, const struct proxy_outcome *o)
{
	proxy_deny(c, o);
}

/* ---- the steps ---- */

static void run(struct proxy_conn *c, int again);

static void dns_done(enum dns_status st, const struct dns_answer *ans, void *arg)
{
	struct proxy_conn *c = arg;
	struct proxy_outcome o;
	c->up.dnsq = NULL;
	if (c->gen != c->srv->gen) {
		/* A reload came while resolving: decide again under the new config. */
		proxy_up_drop(c);
		run(c, 1);
		return;
	}
	if (st != DNS_OK || ans->n == 0) {
		char rule[320];
		snprintf(rule, sizeof rule, "resolve %s: %s", c->rq.dest.host, dns_status_str(st));
		proxy_outcome_set(&o, 502, "dns-failed", rule,
		        "The name could not be resolved; check the spelling, or map it in dns.hosts");
		proxy_up_set(c, PROXY_UP_NONE);
		fail(c, &o);
		return;
	}
	if (judge(c, ans->addrs, ans->n, &o) == -1) {
		proxy_up_set(c, PROXY_UP_NONE);
		fail(c, &o);
		return;
	}
	proxy_up_dial(c);
}

/* The pool key of an HTTP upstream: session and destination, so a parked upstream serves only
 * the session whose decision opened it. */
static void up_key(const struct proxy_conn *c, char *key, size_t cap)
{
	snprintf(key, cap, "%s %s:%u", c->session->name, c->rq.dest.host, c->rq.dest.port);
}

/* Decides c->rq under the current generation; 0 when allowed (o untouched), -1 with o. */
static int decide(struct proxy_conn *c, struct proxy_outcome *o)
{
	const struct allow_session_config *sc = c->session->cfg;
	struct allow_decision d;
	/* An IP literal that is egressd's own address is a loop, whatever the bound says (and
	 * no advice to allow it). */
	if (c->rq.dest.kind != ALLOW_HOST_NAME) {
		struct dns_addr a = {0};
		a.family = c->rq.dest.kind == ALLOW_HOST_IPV4 ? AF_INET : AF_INET6;
		memcpy(a.addr, c->rq.dest.addr, c->rq.dest.kind == ALLOW_HOST_IPV4 ? 4 : 16);
		if (loop_outcome(c, &a, o) == -1)
			return -1;
	}
	allow_decide(&sc->bound, &c->rq.dest, c->rq.tunnel ? 0 : c->rq.action, &d);
	if (d.reason == ALLOW_OK && c->rq.tunnel) {
		/* A tunnel that may carry something keeps the rule that allowed its host, for its
		 * record, as a forwarded request's does. */
		struct allow_decision td;
		int inspect;
		allow_tunnel_decide(&sc->bound, &c->rq.dest, c->rq.kind, &inspect, &td);
		if (td.reason != ALLOW_OK)
			d = td;
	}
	if (d.reason != ALLOW_OK) {
		decision_outcome(o, &d, sc->name);
		return -1;
	}
	free(c->rq.rule);
	c->rq.rule = strdup(d.rule);
	if (proxy_session_new_host(c->session, c->rq.dest.host, proxy_now_ms()) == -1) {
		char rule[120];
		snprintf(rule, sizeof rule, "limits.maxNewHostsPerMinute (%llu)",
		        (unsigned long long)sc->limits.max_new_hosts_per_minute);
		proxy_outcome_set(o, 429, "limit-new-hosts", rule,
		        "The session reached as many new hosts this minute as it may; wait, or reuse "
		        "a host already reached");
		return -1;
	}
	return 0;
}

void proxy_pipeline_run(struct proxy_conn *c)
{
	run(c, 0);
}

/* again: a decision started before a reload, made again (counted once). */
static void run(struct proxy_conn *c, int again)
{
	struct proxy_outcome o;
	proxy_client_set(c, PROXY_CLIENT_WAIT);
	if (c->gen != c->srv->gen) {
		if (c->gen != NULL)
			proxy_gen_release(c->gen);
		c->gen = c->srv->gen;
		proxy_gen_hold(c->gen);
	}
	if (session_step(c, &o) == -1 || decide(c, &o) == -1) {
		fail(c, &o);
		return;
	}
	/* No dial for a decision the audit log would refuse now (auditwait.c). */
	if (proxy_audit_admit(c) == -1)
		return;
	if (!again)
		c->requests++;

	/* A request inside a tunnel goes to the tunnel's upstream. */
	if (c->rq.fixed_upstream) {
		if (c->up.bev == NULL) {
			/* An inspected tunnel whose upstream TLS failed (inspect.c), or ended. */
			proxy_outcome_set(&o, 502, c->up_tls_error ? "upstream-tls" : "upstream-refused",
			        NULL, "egressd could not keep a verified connection to the destination");
			snprintf(o.rule, sizeof o.rule, "upstream %s: %s", c->rq.dest.host,
			        c->up_tls_error ? c->up_tls_error : "closed");
			fail(c, &o);
			return;
		}
		if (still_passes(c, &o) == -1) {
			fail(c, &o);
			return;
		}
		proxy_up_set(c, PROXY_UP_ACTIVE);
		proxy_pipeline_connected(c);
		return;
	}
	if (!c->rq.tunnel) {
		/* A kept-alive upstream to the same destination, this connection's or a parked
		 * one of the same session, is reused once the policy agrees with its address. */
		char key[ALLOW_HOST_BUF + 200];
		up_key(c, key, sizeof key);
		if (c->up.state == PROXY_UP_IDLE && (c->up.key == NULL || strcmp(c->up.key, key) != 0))
			proxy_up_drop(c);
		if (c->up.state == PROXY_UP_NONE)
			proxy_pool_take(c, key);
		if (c->up.state == PROXY_UP_IDLE) {
			if (still_passes(c, &o) == -1) {
				proxy_up_drop(c);
				fail(c, &o);
				return;
			}
			proxy_up_set(c, PROXY_UP_ACTIVE);
			proxy_pipeline_connected(c);
			return;
		}
		c->up.key = strdup(key);
	}
	if (c->rq.dest.kind != ALLOW_HOST_NAME) {
		struct dns_addr a = {0};
		a.family = c->rq.dest.kind == ALLOW_HOST_IPV4 ? AF_INET : AF_INET6;
		memcpy(a.addr, c->rq.dest.addr, c->rq.dest.kind == ALLOW_HOST_IPV4 ? 4 : 16);
		if (judge(c, &a, 1, &o) == -1) {
			fail(c, &o);
			return;
		}
		proxy_up_dial(c);
		return;
	}
	/* dns.hosts and cached names are answered now, without a turn of the loop. */
	enum dns_status st;
	struct dns_answer known;
	if (dns_resolve_known(c->gen->dns, c->rq.dest.host, &st, &known) == 0) {
		dns_done(st, &known, c);
		return;
	}
	proxy_up_set(c, PROXY_UP_RESOLVING);
	c->up.dnsq = dns_resolve(c->gen->dns, c->rq.dest.host, dns_done, c);
	if (c->up.dnsq == NULL) {
		proxy_up_set(c, PROXY_UP_NONE);
		proxy_outcome_set(&o, 502, "dns-failed", "resolver", "egressd is out of memory");
		fail(c, &o);
	}
}

/* The decision is on record (durable, with audit.fsync): the front door takes over. */
static void hand_over(struct proxy_conn *c)
{
	if (c->rq.tunnel)
		c->front->allowed(c);
	else
		proxy_fwd_allowed(c);
}

void proxy_pipeline_connected(struct proxy_conn *c)
{
	/* A reload came while connecting: what was decided under the old config is decided again
	 * under the new one, and the address it reached judged again, before anything is on
	 * record or moves. */
	if (c->gen != NULL && c->gen != c->srv->gen) {
		struct proxy_outcome o;
		proxy_gen_release(c->gen);
		c->gen = c->srv->gen;
		proxy_gen_hold(c->gen);
		if (session_step(c, &o) == -1 || decide(c, &o) == -1 || still_passes(c, &o) == -1) {
			proxy_up_drop(c);
			fail(c, &o);
			return;
		}
	}
	/* The decision is on record before the first byte; when it cannot be written, nothing
	 * moves (docs/design.md 3 step 6). */
	char action[160];
	struct audit_rec r;
	record_base(c, &r, action, sizeof action);
	r.decision = "allow";
	r.rule = c->rq.rule != NULL && c->rq.rule[0] ? c->rq.rule : NULL;
	if (c->gen != NULL) {
		proxy_gen_release(c->gen);
		c->gen = NULL;
	}
	/* 0: refused (denied 503 audit-unavailable); with audit.fsync, c waits until it is
	 * durable. */
	proxy_audit_wait(c, audit_write(c->srv->audit, &r, AUDIT_DECISION), hand_over);
}

int proxy_pipeline_recheck(struct proxy_conn *c)
{
	if (c->session == NULL || proxy_conn_closed(c))
		return 0;
	int tunnel = c->client.state == PROXY_CLIENT_TUNNEL || c->client.state == PROXY_CLIENT_PEEK ||
	             c->rq.fixed_upstream;
	int has_up = c->up.state == PROXY_UP_IDLE || c->up.state == PROXY_UP_ACTIVE;
	if (!tunnel && !has_up)
		return 0; /* its next request is decided on its own */
	struct proxy_outcome o;
	const char *why = NULL;
	if (c->session->cfg == NULL) {
		why = "no-session";
	} else {
		const struct allow_bound *b = &c->session->cfg->bound;
		struct allow_decision d;
		allow_decide(b, &c->rq.dest, tunnel || c->rq.tunnel ? 0 : c->rq.action, &d);
		if (d.reason == ALLOW_OK && tunnel && c->carries != ALLOW_TUNNEL_UNKNOWN &&
		        c->carries != ALLOW_TUNNEL_HTTP) {
			int inspect;
			allow_tunnel_decide(b, &c->rq.dest, c->carries, &inspect, &d);
			/* A spliced tunnel cannot start being inspected halfway. */
			if (d.reason == ALLOW_OK && inspect &&
			        (allow_tunnel_carries(c->carries) & b->deny_actions) != 0)
				d.reason = ALLOW_INSPECTION_REQUIRED;
		}
		if (d.reason != ALLOW_OK)
			why = allow_reason_code(d.reason);
		else if (has_up && still_passes(c, &o) == -1)
			why = o.reason;
	}
	if (why == NULL)
		return 0;
	proxy_outcome_set(&o, 403, why, "reload", "A reload took this destination away");
	proxy_audit_tunnel(c, "deny", &o);
	proxy_conn_close(c, "policy-changed");
	return -1;
}
