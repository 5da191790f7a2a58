/* The SOCKS5 front door (listen.socks5; RFC 1928 with RFC 1929 credentials).
 *
 * A greeting, credentials when the client offers them and a session has a token (the user is
 * the session's name, the password its token), then a CONNECT request: a domain name or an IP
 * literal and a port.  The request goes through the same pipeline as a CONNECT, and its tunnel
 * through the same first-bytes check.  BIND and UDP ASSOCIATE get 0x07 and a record.  Denials
 * are reply codes (docs/design.md 6); the reason is in the record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "proxy/proxy.h"
#include "proxy/socks5.h"

enum socks_phase {
	SOCKS_GREETING = 0, /* VER NMETHODS METHODS */
	SOCKS_AUTH,         /* RFC 1929 username and password */
	SOCKS_REQUEST,      /* VER CMD RSV ATYP ADDR PORT */
	SOCKS_DONE,         /* the request went to the pipeline */
};

struct socks_state {
	enum socks_phase phase;
};

static void socks_release(struct proxy_conn *c)
{
	free(c->front_state);
	c->front_state = NULL;
}

static void reply(struct proxy_conn *c, uint8_t code)
{
	/* BND.ADDR and BND.PORT: egressd does not tell its own outgoing address. */
	uint8_t r[10] = {5, code, 0, 1, 0, 0, 0, 0, 0, 0};
	evbuffer_add(bufferevent_get_output(c->client.bev), r, sizeof r);
	proxy_flush(c->client.bev);
}

/* The reply code for an outcome (docs/design.md 6). */
static uint8_t code_of(const struct proxy_outcome *o)
{
	if (strcmp(o->reason, "dns-failed") == 0 || strcmp(o->reason, "upstream-timeout") == 0)
		return 0x04;
	if (strcmp(o->reason, "upstream-refused") == 0)
		return 0x05;
	if (strcmp(o->reason, "command-not-supported") == 0)
		return 0x07;
	if (strcmp(o->reason, "address-type-not-supported") == 0)
		return 0x08;
	if (o->status == 403 || o->status == 407 || o->status == 429 || o->status == 508)
		return 0x02;
	return 0x01;
}

static void socks_denied(struct proxy_conn *c, const struct proxy_outcome *o)
{
	if (c->client.bev == NULL) {
		proxy_conn_close(c, "denied");
		return;
	}
	reply(c, code_of(o));
	/* A refusal ends the connection as "denied", whatever its reason, as the HTTP door's
	 * answers do (a spent session's 429 included). */
	proxy_conn_finish(c, "denied");
}

static void socks_established(struct proxy_conn *c)
{
	reply(c, 0x00);
}

/* A malformed message: a record and the reply that fits, then the close. */
static void malformed(struct proxy_conn *c, const char *reason, const char *why, uint8_t code)
{
	struct proxy_outcome o;
	proxy_outcome_set(&o, 400, reason, why, "Send a SOCKS5 CONNECT request");
	struct socks_state *st = c->front_state;
	if (st->phase == SOCKS_REQUEST || code != 0x01) {
		proxy_deny(c, &o); /* a reply fits after the greeting */
		return;
	}
	proxy_audit_tunnel(c, "deny", &o);
	proxy_conn_close(c, "denied");
	(void)code;
}

static int any_token(const struct proxy_conn *c)
{
	const struct allow_config *cfg = c->srv->gen->cfg;
	for (size_t i = 0; i < cfg->nsessions; i++)
		if (cfg->sessions[i].token != NULL)
			return 1;
	return 0;
}

static void greeting(struct proxy_conn *c, struct socks_state *st, struct evbuffer *in)
{
	size_t len = evbuffer_get_length(in), used;
	unsigned methods;
	const char *why = NULL;
	const uint8_t *b = evbuffer_pullup(in, (ev_ssize_t)(len < 260 ? len : 260));
	enum proxy_socks5_result r =
	        proxy_socks5_greeting(b, len < 260 ? len : 260, &used, &methods, &why);
	if (r == PROXY_SOCKS5_MORE)
		return;
	c->rq.front = "socks5";
	c->rq.tunnel = 1; /* every record of this door is a tunnel's: event connect */
	if (r == PROXY_SOCKS5_BAD) {
		malformed(c, "bad-request", why, 0x01);
		return;
	}
	evbuffer_drain(in, used);
	uint8_t method;
	/* Credentials pick a session only when some session has a token (as with the HTTP proxy's
	 * Proxy-Authorization); a client offering both is asked for them then. */
	if ((methods & PROXY_SOCKS5_USERPASS) && (any_token(c) || !(methods & PROXY_SOCKS5_NOAUTH)))
		method = 0x02;
	else if (methods & PROXY_SOCKS5_NOAUTH)
		method = 0x00;
	else
		method = 0xff;
	uint8_t answer[2] = {5, method};
	evbuffer_add(bufferevent_get_output(c->client.bev), answer, 2);
	proxy_flush(c->client.bev);
	if (method == 0xff) {
		struct proxy_outcome o;
		proxy_outcome_set(&o, 407, "auth-required", "listen.socks5",
		        "Offer SOCKS5 method 0 (none) or 2 (username/password)");
		proxy_audit_tunnel(c, "deny", &o);
		proxy_conn_finish(c, "denied");
		return;
	}
	st->phase = method == 0x02 ? SOCKS_AUTH : SOCKS_REQUEST;
}

static void auth(struct proxy_conn *c, struct socks_state *st, struct evbuffer *in)
{
	size_t len = evbuffer_get_length(in), used, ulen, plen;
	char user[256], pass[256];
	const char *why = NULL;
	const uint8_t *b = evbuffer_pullup(in, (ev_ssize_t)(len < 520 ? len : 520));
	enum proxy_socks5_result r =
	        proxy_socks5_auth(b, len < 520 ? len : 520, &used, user, &ulen, pass, &plen, &why);
	if (r == PROXY_SOCKS5_MORE)
		return;
	if (r == PROXY_SOCKS5_BAD) {
		malformed(c, "bad-request", why, 0x01);
		return;
	}
	evbuffer_drain(in, used);
	int ok = !any_token(c) || proxy_credentials_match(c->srv, user, ulen, pass, plen);
	if (any_token(c)) {
		c->rq.has_cred = 1;
		c->rq.user = strndup(user, ulen);
		c->rq.pass = strndup(pass, plen);
		c->rq.user_len = ulen;
		c->rq.pass_len = plen;
	}
	explicit_bzero(pass, sizeof pass);
	uint8_t answer[2] = {1, ok ? 0 : 1};
	evbuffer_add(bufferevent_get_output(c->client.bev), answer, 2);
	proxy_flush(c->client.bev);
	if (!ok) {
		struct proxy_outcome o;
		proxy_outcome_set(&o, 407, "auth-required", "sessions.*.auth",
		        "The username and password do not name a session with its token");
		proxy_audit_tunnel(c, "deny", &o);
		proxy_conn_finish(c, "denied");
		return;
	}
	st->phase = SOCKS_REQUEST;
}

static void request(struct proxy_conn *c, struct socks_state *st, struct evbuffer *in)
{
	size_t len = evbuffer_get_length(in), used;
	struct proxy_socks5_req r;
	uint8_t code;
	const char *why = NULL;
	const uint8_t *b = evbuffer_pullup(in, (ev_ssize_t)(len < 262 ? len : 262));
	enum proxy_socks5_result res =
	        proxy_socks5_request(b, len < 262 ? len : 262, &used, &r, &code, &why);
	if (res == PROXY_SOCKS5_MORE)
		return;
	if (res == PROXY_SOCKS5_BAD) {
		malformed(c,
		        code == 0x07   ? "command-not-supported"
		        : code == 0x08 ? "address-type-not-supported"
		                       : "bad-request",
		        why, code);
		return;
	}
	evbuffer_drain(in, used);
	enum allow_canon_err err = allow_canon_host(r.host, strlen(r.host), &c->rq.dest);
	if (err != ALLOW_CANON_OK || r.port == 0) {
		char rule[300];
		snprintf(rule, sizeof rule, "SOCKS5 destination \"%s\" port %u: %s", r.host, r.port,
		        err != ALLOW_CANON_OK ? allow_canon_strerror(err) : "port 0");
		memset(&c->rq.dest, 0, sizeof c->rq.dest);
		malformed(c, "bad-request", rule, 0x01);
		return;
	}
	c->rq.dest.port = r.port;
	if (r.cmd != PROXY_SOCKS5_CONNECT) {
		char rule[80];
		snprintf(rule, sizeof rule, "SOCKS5 %s is not supported",
		        r.cmd == PROXY_SOCKS5_BIND ? "BIND" : "UDP ASSOCIATE");
		malformed(c, "command-not-supported", rule, 0x07);
		return;
	}
	c->rq.kind = r.port == 443 ? ALLOW_TUNNEL_TLS : ALLOW_TUNNEL_UNKNOWN;
	st->phase = SOCKS_DONE;
	proxy_pipeline_run(c);
}

static void socks_read(struct proxy_conn *c)
{
	if (c->front_state == NULL) {
		c->front_state = calloc(1, sizeof(struct socks_state));
		if (c->front_state == NULL) {
			proxy_conn_close(c, "error");
			return;
		}
	}
	struct socks_state *st = c->front_state;
	struct evbuffer *in = bufferevent_get_input(c->client.bev);
	for (;;) {
		enum socks_phase before = st->phase;
		switch (st->phase) {
		case SOCKS_GREETING:
			greeting(c, st, in);
			break;
		case SOCKS_AUTH:
			auth(c, st, in);
			break;
		case SOCKS_REQUEST:
			request(c, st, in);
			break;
		case SOCKS_DONE:
			return;
		}
		if (proxy_conn_closed(c) || st->phase == before ||
		        c->client.state != PROXY_CLIENT_REQUEST ||
		        evbuffer_get_length(in) == 0)
			return;
	}
}

const struct proxy_front proxy_front_socks5 = {
        .name = "socks5",
        .read = socks_read,
        .allowed = proxy_tunnel_start,
        .denied = socks_denied,
        .established = socks_established,
        .release = socks_release,
};
