/* The inspected front door (docs/design.md 11, docs/inspection.md): an HTTPS tunnel to a host in
 * the session's inspect list is terminated by egressd.
 *
 * tunnel.c hands over once the client's first ClientHello named the tunnel's host and the
 * tunnel's success answer went out.  The client's TLS is accepted with a leaf minted for that
 * host (proxy/ca.c, through the client context of proxy/tlsctx.c, which offers only http/1.1 and
 * refuses a handshake for another name); egressd opens its own TLS to the upstream it already
 * dialled, verified against tls.upstreamCA with the host name checked.  Then the connection is an
 * HTTP exchange inside TLS (forward.c in tunnel form): every request is decided as a forwarded
 * request would be (its method and exact git path give its action, its Host must be the host,
 * the session's byte limits count the clear bytes), and a denial is an HTTP answer the client
 * reads inside TLS.  A failed upstream verification is a 502 upstream-tls answer naming the
 * reason.  What an inspected tunnel does not do: splice (every byte passes through TLS), and
 * websocket upgrades (the Upgrade header is not forwarded, so the origin answers plainly). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "proxy/proxy.h"
#include "proxy/tlsctx.h"

void proxy_inspect_start(struct proxy_conn *c)
{
	const struct proxy_tls *tls = c->srv->gen->tls;
	if (tls == NULL || tls->client == NULL || tls->upstream == NULL) {
		char rule[ALLOW_HOST_BUF + 64];
		snprintf(rule, sizeof rule, "inspect: %s (no tls.ca)", c->rq.dest.host);
		proxy_refuse(c, 403, "inspection-required", rule,
		        "Name an inspection CA in tls.ca (egressd ca init DIR makes one)");
		return;
	}
	SSL *cs = SSL_new(tls->client);
	SSL *us = proxy_tls_upstream_new(tls->upstream, c->rq.dest.host);
	if (cs == NULL || us == NULL || proxy_tls_client_prepare(cs, c->rq.dest.host) == -1) {
		SSL_free(cs);
		SSL_free(us);
		proxy_conn_close(c, "error");
		return;
	}
	proxy_tunnel_free(c);
	struct bufferevent *client_under = c->client.bev, *up_under = c->up.bev;
	if (proxy_conn_wrap_tls(c, cs, us) == -1) {
		proxy_conn_close(c, "error");
		return;
	}
	/* Requests inside are recorded as the inspected front door's; the tunnel's own record
	 * stays its front door's. */
	c->door = c->rq.front;
	c->rq.front = "inspected";
	c->carries = ALLOW_TUNNEL_HTTP;
	c->answer = proxy_answer_http;
	proxy_up_set(c, PROXY_UP_IDLE);
	proxy_fwd_begin(c, 1);
	if (proxy_conn_closed(c))
		return;
	/* The handshake has headerTimeout to finish, as the first request's head would. */
	proxy_client_set(c, PROXY_CLIENT_REQUEST);
	c->client.deadline_ms = proxy_now_ms() + c->srv->gen->cfg->limits.header_timeout_ms;
	proxy_conn_rearm(c);
	/* The ClientHello is already buffered below the filter, and egressd speaks first to the
	 * upstream: start both handshakes now rather than on the next byte. */
	bufferevent_trigger(client_under, EV_READ, BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
	bufferevent_trigger(up_under, EV_WRITE, BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
}

void proxy_inspect_client_failed(struct proxy_conn *c)
{
	SSL *ssl = bufferevent_openssl_get_ssl(c->client.bev);
	const char *why = ssl != NULL ? proxy_tls_client_failure(ssl) : NULL;
	char rule[300];
	unsigned long e = bufferevent_get_openssl_error(c->client.bev);
	if (why != NULL && strcmp(why, "sni-mismatch") == 0) {
		snprintf(rule, sizeof rule, "TLS: the inspected handshake names another host than %s",
		        c->rq.dest.host);
		struct proxy_outcome m;
		proxy_outcome_set(&m, 403, "sni-mismatch", rule,
		        "Inside an inspected tunnel, TLS must name the tunnel's host");
		proxy_audit_tunnel(c, "deny", &m);
		proxy_conn_close(c, "denied");
		return;
	}
	/* The client gave up on egressd's certificate (it does not trust the CA) or its TLS: a
	 * record says so, for whoever wonders why a tool failed. */
	struct proxy_outcome o;
	proxy_outcome_set(&o, 403, "tls-invalid", NULL, "The client refused egressd's TLS");
	snprintf(o.rule, sizeof o.rule, "client TLS handshake with egressd: %s%s%s",
	        why != NULL ? why : "failed", e != 0 ? ": " : "",
	        e != 0 ? ERR_reason_error_string(e) : "");
	proxy_audit_tunnel(c, "deny", &o);
	proxy_conn_close(c, "error");
}

void proxy_inspect_client_timeout(struct proxy_conn *c)
{
	struct proxy_outcome o;
	proxy_outcome_set(&o, 403, "tls-invalid",
	        "client TLS handshake with egressd: not finished within limits.headerTimeout",
	        "The client did not finish its TLS handshake with egressd");
	proxy_audit_tunnel(c, "deny", &o);
	proxy_conn_close(c, "header-timeout");
}

/* The upstream's TLS is gone (why): an answer under way can only end; otherwise the upstream
 * is dropped and a request waiting for it gets o, the next one a 502 (pipeline.c). */
static void upstream_lost(struct proxy_conn *c, const char *why, const struct proxy_outcome *o)
{
	free((char *)c->up_tls_error);
	c->up_tls_error = strdup(why);
	int waiting = c->client.state == PROXY_CLIENT_FORWARD || c->client.state == PROXY_CLIENT_WAIT;
	if (waiting && proxy_fwd_response_started(c)) {
		proxy_conn_close(c, "error");
		return;
	}
	proxy_up_drop(c);
	if (waiting)
		proxy_deny(c, o);
}

void proxy_inspect_upstream_timeout(struct proxy_conn *c)
{
	struct proxy_outcome o;
	proxy_outcome_set(&o, 504, "upstream-timeout", "limits.connectTimeout",
	        "The destination accepted the connection but did not finish its TLS handshake in "
	        "time");
	upstream_lost(c, "the TLS handshake did not finish within limits.connectTimeout", &o);
}

void proxy_inspect_upstream_failed(struct proxy_conn *c)
{
	char why[PROXY_TLS_REASON_MAX];
	SSL *ssl = bufferevent_openssl_get_ssl(c->up.bev);
	unsigned long e = bufferevent_get_openssl_error(c->up.bev);
	if (ssl != NULL)
		proxy_tls_upstream_reason(ssl, e, why, sizeof why);
	else
		snprintf(why, sizeof why, "the TLS connection to the upstream failed");
	struct proxy_outcome o;
	proxy_outcome_set(&o, 502, "upstream-tls", NULL,
	        "egressd could not verify the destination's TLS certificate; the destination or "
	        "tls.upstreamCA is wrong");
	snprintf(o.rule, sizeof o.rule, "upstream %s: %s", c->rq.dest.host, why);
	upstream_lost(c, why, &o);
}
