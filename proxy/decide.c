/* The policy pipeline of one request or CONNECT (docs/design.md 3, steps 4-6), and the answers it
 * gives: the decision record, the denial response, the 200 to a CONNECT. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include <strings.h>

#include <openssl/evp.h>

#include "allowlist/tags.h"
#include "audit/audit.h"
#include "proxy/proxy.h"

static const char *status_text(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 405: return "Method Not Allowed";
	case 407: return "Proxy Authentication Required";
	case 408: return "Request Timeout";
	case 414: return "URI Too Long";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 508: return "Loop Detected";
	default: return "Error";
	}
}

uint64_t proxy_audit_decision(struct proxy_conn *c, const char *decision, const char *reason,
	const char *rule, int status, enum audit_kind kind)
{
	char action[128] = "";
	struct audit_rec r;
	audit_rec_init(&r);
	r.event = c->is_connect ? "connect" : "request";
	r.conn = c->id;
	r.front = c->is_connect ? "connect" : "http";
	r.session = c->session ? c->session->cfg->name : NULL;
	r.client = c->client_text;
	r.method = c->method[0] && !c->is_connect ? c->method : NULL;
	if (c->dest.host[0]) {
		r.host = c->dest.host;
		r.port = c->dest.port;
	}
	if (!c->is_connect && c->path != NULL)
		r.path = c->path;
	if (c->action) {
		allow_tags_format(c->action, ",", action, sizeof action);
		r.action = action;
	}
	r.decision = decision;
	r.reason = reason;
	r.rule = rule && rule[0] ? rule : NULL;
	r.addr = c->addr_text[0] ? c->addr_text : NULL;
	r.status = status;
	/* A failure is said once on standard error by the log's notice (auditwait.c). */
	return audit_write(c->srv->audit, &r, kind);
}

/* Writes a denial (docs/design.md 6) and closes the connection once it is sent.  The decision record
 * comes first.  reason NULL means a malformed request that never reached a decision. */
void proxy_deny(struct proxy_conn *c, int status, const char *reason, const char *rule,
	const char *detail)
{
	/* Bytes already flowed: no answer can be framed any more, and the record then carries
	 * no status (docs/design.md 7: only one that was sent). */
	int answer = !(c->state == PROXY_CS_TUNNEL || c->tunnel_ok_sent || c->resp_sent ||
		c->client.bev == NULL);
	proxy_audit_decision(c, "deny", reason, rule, answer ? status : -1, AUDIT_DENIAL);
	if (!answer) {
		proxy_conn_close(c, "denied");
		return;
	}
	char what[ALLOW_HOST_BUF + 96];
	if (c->dest.host[0] && c->is_connect)
		snprintf(what, sizeof what, "CONNECT %s:%u", c->dest.host, c->dest.port);
	else if (c->dest.host[0])
		snprintf(what, sizeof what, "%s %s:%u", c->method, c->dest.host, c->dest.port);
	else
		snprintf(what, sizeof what, "the request");
	char body[1400];
	int blen = snprintf(body, sizeof body,
		"egressd denied %s: %s%s%s%s. %s. Retrying another way will not help: egressd is "
		"the only way out of this network.\n",
		what, reason, rule && rule[0] ? " (" : "", rule && rule[0] ? rule : "",
		rule && rule[0] ? ")" : "", detail);
	if (blen < 0)
		blen = 0;
	if ((size_t)blen >= sizeof body)
		blen = (int)sizeof body - 1;
	struct evbuffer *out = bufferevent_get_output(c->client.bev);
	evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nX-Egressd-Reason: %s\r\n", status,
		status_text(status), reason);
	if (c->session != NULL)
		evbuffer_add_printf(out, "X-Egressd-Session: %s\r\n", c->session->cfg->name);
	if (rule != NULL && rule[0]) {
		/* A header value may not carry CR/LF; rules are built from canonical text. */
		evbuffer_add_printf(out, "X-Egressd-Rule: %s\r\n", rule);
	}
	if (status == 429)
		evbuffer_add_printf(out, "Retry-After: 60\r\n");
	if (status == 407)
		evbuffer_add_printf(out, "Proxy-Authenticate: Basic realm=\"egressd\"\r\n");
	evbuffer_add_printf(out,
		"Content-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n"
		"Connection: close\r\nProxy-Connection: close\r\n\r\n",
		blen);
	if (!c->req_head_method || c->is_connect)
		evbuffer_add(out, body, (size_t)blen);
	proxy_conn_finish(c, "denied");
}

/* The address as the kernel would dial it: IPv4 out of an IPv4-mapped IPv6 address. */
static void dial_form(const struct dns_addr *a, struct dns_addr *out)
{
	*out = *a;
	if (a->family == AF_INET6 && IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)a->addr)) {
		out->family = AF_INET;
		memcpy(out->addr, a->addr + 12, 4);
		memset(out->addr + 4, 0, 12);
	}
}

/* The listener a dial to a:dest.port would reach, or NULL.  0.0.0.0 and :: dial this host, so
 * they reach every listener on that port; a wildcard listener is reached by any loopback
 * address and by every address of this host's interfaces. */
static const struct proxy_listener *own_listener(const struct proxy_conn *c, const struct dns_addr *a)
{
	struct dns_addr d;
	dial_form(a, &d);
	static const uint8_t zero[16];
	int any = memcmp(d.addr, zero, d.family == AF_INET ? 4 : 16) == 0;
	int loopback = d.family == AF_INET ? d.addr[0] == 127
					   : IN6_IS_ADDR_LOOPBACK((const struct in6_addr *)d.addr);
	for (size_t j = 0; j < c->srv->nlisteners; j++) {
		const struct proxy_listener *l = &c->srv->listeners[j];
		const uint8_t *laddr;
		size_t alen;
		uint16_t lport;
		int lfamily = l->addr.ss_family;
		if (lfamily == AF_INET) {
			const struct sockaddr_in *s4 = (const struct sockaddr_in *)&l->addr;
			laddr = (const uint8_t *)&s4->sin_addr;
			alen = 4;
			lport = ntohs(s4->sin_port);
		} else {
			const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&l->addr;
			laddr = (const uint8_t *)&s6->sin6_addr;
			alen = 16;
			lport = ntohs(s6->sin6_port);
		}
		if (lport != c->dest.port)
			continue;
		int lany = memcmp(laddr, zero, alen) == 0;
		if (any || (lany && (loopback || proxy_is_own_addr(c->srv, &d))) ||
			(lfamily == d.family && memcmp(laddr, d.addr, alen) == 0))
			return l;
	}
	return NULL;
}

/* Judges resolved (or literal) addresses; keeps the ones that pass in c->addrs.  Returns 0 when
 * one passed; otherwise answers the client and returns -1. */
static int judge_addresses(struct proxy_conn *c, const struct dns_addr *addrs, size_t n)
{
	char why[200] = "", first_why[200] = "";
	const struct dns_addr *first_denied = NULL;
	c->naddrs = 0;
	if (c->addrs == NULL) {
		c->addrs = malloc(DNS_MAX_ADDRS * sizeof *c->addrs);
		if (c->addrs == NULL) {
			proxy_conn_close(c, "error");
			return -1;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const struct dns_addr *a = &addrs[i];
		const struct proxy_listener *l = own_listener(c, a);
		if (l != NULL) {
			proxy_format_addr(a, c->dest.port, c->addr_text, sizeof c->addr_text);
			char rule[160];
			snprintf(rule, sizeof rule, "listen.proxy %s", l->text);
			proxy_deny(c, 508, "loop", rule,
				"The destination is egressd itself; send requests for the real "
				"destination instead");
			return -1;
		}
		if (dns_addr_judge(&c->gen->addrpol, a->family, a->addr, why, sizeof why) == 0) {
			if (c->naddrs < DNS_MAX_ADDRS)
				c->addrs[c->naddrs++] = *a;
		} else if (first_denied == NULL) {
			first_denied = a;
			memcpy(first_why, why, sizeof first_why);
		}
	}
	if (c->naddrs > 0)
		return 0;
	char rule[400], ip[INET6_ADDRSTRLEN] = "?", v4text[INET_ADDRSTRLEN];
	inet_ntop(first_denied->family, first_denied->addr, ip, sizeof ip);
	uint8_t v4[4];
	if (first_denied->family == AF_INET6 && dns_addr_embedded_v4(first_denied->addr, v4) != NULL &&
		inet_ntop(AF_INET, v4, v4text, sizeof v4text) != NULL)
		snprintf(rule, sizeof rule, "dns.allowAddresses (%s carries %s, which is %s)", ip, v4text,
			first_why);
	else
		snprintf(rule, sizeof rule, "dns.allowAddresses (%s is %s)", ip, first_why);
	char detail[400];
	snprintf(detail, sizeof detail,
		"%s resolves only to addresses egressd never dials; add the range to "
		"dns.allowAddresses if this destination is intended",
		c->dest.host);
	proxy_deny(c, 403, "address-denied", rule, detail);
	return -1;
}

static void dns_done(enum dns_status st, const struct dns_answer *ans, void *arg)
{
	struct proxy_conn *c = arg;
	c->dnsq = NULL;
	if (st != DNS_OK || ans->n == 0) {
		char rule[320];
		snprintf(rule, sizeof rule, "resolve %s: %s", c->dest.host, dns_status_str(st));
		proxy_deny(c, 502, "dns-failed", rule,
			"The name could not be resolved; check the spelling, or map it in dns.hosts");
		return;
	}
	if (judge_addresses(c, ans->addrs, ans->n) == -1)
		return;
	proxy_conn_start_upstream(c);
}

/* Compares in time that depends only on the lengths, so a token is not guessed byte by byte. */
static int token_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	unsigned char diff = (unsigned char)(alen != blen);
	for (size_t i = 0; i < alen && i < blen; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return diff == 0;
}

/* The session named by "Proxy-Authorization: Basic base64(name:token)"; NULL when the header
 * does not name a session with that token. */
static struct proxy_session *session_by_auth(struct proxy_conn *c, const char *v, size_t n)
{
	while (n > 0 && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	if (n < 6 || strncasecmp(v, "basic ", 6) != 0)
		return NULL;
	v += 6;
	n -= 6;
	while (n > 0 && v[0] == ' ') {
		v++;
		n--;
	}
	while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	if (n == 0 || n > 1024 || n % 4 != 0)
		return NULL;
	unsigned char dec[800];
	int dlen = EVP_DecodeBlock(dec, (const unsigned char *)v, (int)n);
	if (dlen < 0)
		return NULL;
	/* EVP_DecodeBlock counts the padding as zero bytes. */
	if (v[n - 1] == '=')
		dlen--;
	if (v[n - 2] == '=')
		dlen--;
	const unsigned char *colon = memchr(dec, ':', (size_t)dlen);
	if (colon == NULL)
		return NULL;
	size_t namelen = (size_t)(colon - dec);
	const char *tok = (const char *)colon + 1;
	size_t toklen = (size_t)dlen - namelen - 1;
	for (size_t i = 0; i < c->gen->cfg->nsessions; i++) {
		struct proxy_session *s = &c->gen->sessions[i];
		const char *name = s->cfg->name;
		if (s->cfg->token == NULL || strlen(name) != namelen || memcmp(name, dec, namelen) != 0)
			continue;
		if (token_equal(tok, toklen, s->cfg->token, strlen(s->cfg->token)))
			return s;
		return NULL;
	}
	return NULL;
}

struct proxy_session *proxy_session_by_client(struct proxy_gen *gen, const struct dns_addr *peer)
{
	for (size_t i = 0; i < gen->cfg->nsessions; i++) {
		const struct allow_session_config *sc = &gen->sessions[i].cfg[0];
		for (size_t j = 0; j < sc->nclients; j++)
			if (allow_cidr_contains(&sc->clients[j], peer->family, peer->addr))
				return &gen->sessions[i];
	}
	return gen->dflt;
}

int proxy_session_pick(struct proxy_conn *c)
{
	size_t n;
	const char *auth = proxy_head_get(&c->req, "proxy-authorization", &n);
	struct proxy_session *s = NULL;
	int any_token = 0;
	for (size_t i = 0; i < c->gen->cfg->nsessions; i++)
		any_token |= c->gen->sessions[i].cfg->token != NULL;
	if (auth != NULL && any_token) {
		s = session_by_auth(c, auth, n);
		if (s == NULL) {
			proxy_deny(c, 407, "auth-required", "sessions.*.auth",
				"The Proxy-Authorization header does not name a session with its token; "
				"send Basic credentials SESSION:TOKEN");
			return -1;
		}
	} else {
		s = proxy_session_by_client(c->gen, &c->peer);
	}
	if (s == NULL) {
		if (any_token)
			proxy_deny(c, 407, "auth-required", "sessions.*.auth",
				"No session matched this connection; send Proxy-Authorization: Basic "
				"credentials SESSION:TOKEN");
		else
			proxy_deny(c, 403, "no-session", "sessions (no session named default)",
				"No session matched this connection; add a session named default to the "
				"config");
		return -1;
	}
	if (c->session != NULL && c->session != s) {
		proxy_deny(c, 400, "bad-request", "sessions",
			"One connection belongs to one session; open a new connection for another");
		return -1;
	}
	c->session = s;
	/* Counters and limits live in the newest form of the session (it survives reloads). */
	struct proxy_session *live = proxy_session_live(s);
	const struct allow_limits *lim = &live->cfg->limits;
	if (lim->expires_in_ms != ALLOW_UNLIMITED &&
		proxy_now_ms() - live->started_ms >= lim->expires_in_ms) {
		proxy_deny(c, 403, "session-expired", "limits.expiresIn",
			"The session's lifetime is over; start a new session");
		return -1;
	}
	if (!c->session_counted) {
		char rule[120];
		s = live;
		if (s->active >= lim->max_connections) {
			snprintf(rule, sizeof rule, "limits.maxConnections (%llu)",
				(unsigned long long)lim->max_connections);
			proxy_deny(c, 429, "limit-connections", rule,
				"The session has as many open connections as it may; close one first");
			return -1;
		}
		if (s->total >= lim->max_connections_total) {
			snprintf(rule, sizeof rule, "limits.maxConnectionsTotal (%llu)",
				(unsigned long long)lim->max_connections_total);
			proxy_deny(c, 429, "limit-connections", rule,
				"The session has used all the connections it may open");
			return -1;
		}
		s->active++;
		s->total++;
		c->session_counted = 1;
	}
	if (live->bytes_out >= lim->max_bytes_out || live->bytes_in >= lim->max_bytes_in) {
		proxy_deny(c, 429, "limit-bytes",
			live->bytes_out >= lim->max_bytes_out ? "limits.maxBytesOut" : "limits.maxBytesIn",
			"The session has moved all the bytes it may");
		return -1;
	}
	return 0;
}

void proxy_decide(struct proxy_conn *c)
{
	/* A kept-alive upstream to the same destination is reused once the policy agrees. */
	char key[ALLOW_HOST_BUF + 8], kept_addr[PROXY_ADDR_TEXT];
	snprintf(key, sizeof key, "%s:%u", c->dest.host, c->dest.port);
	int reuse = !c->is_connect && c->up.bev != NULL && c->up_idle && c->up_key != NULL &&
		    strcmp(key, c->up_key) == 0;
	memcpy(kept_addr, c->addr_text, sizeof kept_addr);
	c->addr_text[0] = '\0';
	if (proxy_session_pick(c) == -1)
		return;
	struct allow_decision d;
	allow_decide(&c->session->cfg->bound, &c->dest, c->action, &d);
	if (d.reason != ALLOW_OK) {
		char detail[420];
		snprintf(detail, sizeof detail, "To allow it, %s in session %s",
			d.hint[0] ? d.hint : "change the bound", c->session->cfg->name);
		proxy_deny(c, 403, allow_reason_code(d.reason), d.rule, detail);
		return;
	}
	/* No dial for a decision the audit log would refuse (auditwait.c). */
	if (proxy_audit_admit(c) == -1)
		return;
	c->requests++;
	free(c->rule);
	c->rule = strdup(d.rule);
	struct proxy_session *live = proxy_session_live(c->session);
	if (proxy_session_new_host(live, c->dest.host, proxy_now_ms()) == -1) {
		char rule[120];
		snprintf(rule, sizeof rule, "limits.maxNewHostsPerMinute (%llu)",
			(unsigned long long)live->cfg->limits.max_new_hosts_per_minute);
		proxy_deny(c, 429, "limit-new-hosts", rule,
			"The session reached as many new hosts this minute as it may; wait, or reuse a "
			"host already reached");
		return;
	}
	if (reuse) {
		memcpy(c->addr_text, kept_addr, sizeof c->addr_text);
		proxy_conn_upstream_connected(c);
		return;
	}
	if (!c->is_connect) {
		struct bufferevent *bev = proxy_pool_take(c, key, c->addr_text, sizeof c->addr_text);
		if (bev != NULL) {
			proxy_conn_adopt_upstream(c, bev, key);
			proxy_conn_upstream_connected(c);
			return;
		}
	}
	if (c->dest.kind != ALLOW_HOST_NAME) {
		struct dns_addr a = {0};
		a.family = c->dest.kind == ALLOW_HOST_IPV4 ? AF_INET : AF_INET6;
		memcpy(a.addr, c->dest.addr, c->dest.kind == ALLOW_HOST_IPV4 ? 4 : 16);
		if (judge_addresses(c, &a, 1) == -1)
			return;
		proxy_conn_start_upstream(c);
		return;
	}
	/* dns.hosts and cached names are answered now, without a turn of the loop. */
	enum dns_status st;
	struct dns_answer known;
	if (dns_resolve_known(c->gen->dns, c->dest.host, &st, &known) == 0) {
		dns_done(st, &known, c);
		return;
	}
	proxy_conn_set_state(c, PROXY_CS_RESOLVING);
	evtimer_del(c->timer);
	c->dnsq = dns_resolve(c->gen->dns, c->dest.host, dns_done, c);
	if (c->dnsq == NULL)
		proxy_deny(c, 502, "dns-failed", "resolver", "egressd is out of memory");
}

void proxy_conn_upstream_connected(struct proxy_conn *c)
{
	free(c->addrs);
	c->addrs = NULL;
	if (!c->is_connect && c->up_key == NULL) {
		char key[ALLOW_HOST_BUF + 8];
		snprintf(key, sizeof key, "%s:%u", c->dest.host, c->dest.port);
		c->up_key = strdup(key);
	}
	/* The host decision is on record before the first byte (with audit.fsync, durable:
	 * proxy_audit_wait holds the connection until then); a record that cannot be written
	 * denies (503 audit-unavailable).  A peek that then refuses the tunnel's first bytes
	 * writes a second record, a deny. */
	uint64_t seq = proxy_audit_decision(c, "allow", NULL, c->rule, -1, AUDIT_DECISION);
	proxy_audit_wait(c, seq, c->is_connect ? proxy_peek_start : proxy_http_upstream_ready);
}
