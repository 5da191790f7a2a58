/* The peek at a CONNECT tunnel's first bytes (docs/design.md 3): before the client's bytes reach the
 * upstream, a TLS ClientHello must name the CONNECT host in its SNI.
 *
 * The upstream is connected, the allow record for the host is written and the client has its 200,
 * but nothing the client sends moves until the peek concludes; a refusal writes a deny record
 * and closes the tunnel.  Rules:
 * - a ClientHello whose SNI canonicalises to the CONNECT host passes; another name is
 *   sni-mismatch; no SNI passes only when the CONNECT target is an IP literal (which the bound
 *   already allowed);
 * - a handshake that cannot be read cleanly, or a ClientHello that does not arrive within
 *   limits.headerTimeout or PROXY_SNI_PEEK_MAX bytes, is tls-invalid;
 * - bytes that are not TLS pass, except on port 443;
 * - on other ports the upstream may speak first (SSH): then nothing is peeked at all, since a TLS
 *   client never waits for the server. */
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "audit/audit.h"
#include "proxy/proxy.h"
#include "proxy/sni.h"

static void send_ok(struct proxy_conn *c)
{
	if (c->tunnel_ok_sent)
		return;
	evbuffer_add(bufferevent_get_output(c->client.bev),
		"HTTP/1.1 200 Connection established\r\n\r\n", 39);
	c->tunnel_ok_sent = 1;
	proxy_flush(c->client.bev);
}

static void peek_pass(struct proxy_conn *c)
{
	send_ok(c);
	bufferevent_setwatermark(c->client.bev, EV_READ, 0, 0);
	proxy_relay_start(c);
}

static void peek_deny(struct proxy_conn *c, const char *reason, const char *rule)
{
	proxy_deny(c, 403, reason, rule,
		"The tunnel's first bytes must be a TLS ClientHello naming the CONNECT host");
}

void proxy_peek_start(struct proxy_conn *c)
{
	proxy_conn_set_state(c, PROXY_CS_PEEK);
	proxy_head_free(&c->req);
	proxy_head_free(&c->resp);
	bufferevent_setwatermark(c->client.bev, EV_READ, 0, PROXY_SNI_PEEK_MAX);
	bufferevent_enable(c->client.bev, EV_READ);
	/* A server that speaks first may not fill egressd while the client's peek is pending. */
	bufferevent_setwatermark(c->up.bev, EV_READ, 0, PROXY_HIGH_WATER);
	if (c->dest.port == 443)
		bufferevent_disable(c->up.bev, EV_READ);
	else
		bufferevent_enable(c->up.bev, EV_READ);
	proxy_conn_arm_timer(c, c->gen->cfg->limits.header_timeout_ms);
	/* Bytes sent right behind the CONNECT head are peeked at before any answer, so a refusal
	 * can still be an HTTP answer; otherwise the client gets its 200 and speaks. */
	if (evbuffer_get_length(bufferevent_get_input(c->client.bev)) > 0)
		proxy_peek_read(c);
	else
		send_ok(c);
}

void proxy_peek_read(struct proxy_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->client.bev);
	size_t len = evbuffer_get_length(in);
	if (len == 0)
		return;
	if (len > PROXY_SNI_PEEK_MAX)
		len = PROXY_SNI_PEEK_MAX;
	const uint8_t *buf = evbuffer_pullup(in, (ev_ssize_t)len);
	char name[PROXY_SNI_NAME_BUF];
	const char *why = NULL;
	char rule[2 * ALLOW_HOST_BUF + 64];
	enum proxy_sni_result r = proxy_sni_parse(buf, len, name, sizeof name, &why);
	switch (r) {
	case PROXY_SNI_NEED_MORE:
		if (len >= PROXY_SNI_PEEK_MAX)
			peek_deny(c, "tls-invalid", "TLS ClientHello larger than egressd reads");
		else
			send_ok(c);
		return;
	case PROXY_SNI_NOT_TLS:
		if (c->dest.port == 443) {
			peek_deny(c, "tls-invalid", "port 443 carries only TLS");
			return;
		}
		peek_pass(c);
		return;
	case PROXY_SNI_BAD:
		snprintf(rule, sizeof rule, "TLS ClientHello: %s", why ? why : "malformed");
		peek_deny(c, "tls-invalid", rule);
		return;
	case PROXY_SNI_NONE:
		if (c->dest.kind == ALLOW_HOST_NAME) {
			snprintf(rule, sizeof rule, "TLS ClientHello without SNI for %s", c->dest.host);
			peek_deny(c, "sni-mismatch", rule);
			return;
		}
		peek_pass(c);
		return;
	case PROXY_SNI_FOUND:
		break;
	}
	struct allow_dest sni;
	enum allow_canon_err err = allow_canon_host(name, strlen(name), &sni);
	if (err != ALLOW_CANON_OK) {
		snprintf(rule, sizeof rule, "TLS SNI \"%s\": %s", name, allow_canon_strerror(err));
		peek_deny(c, "tls-invalid", rule);
		return;
	}
	if (sni.kind != c->dest.kind || strcmp(sni.host, c->dest.host) != 0) {
		snprintf(rule, sizeof rule, "TLS SNI %s is not the CONNECT host %s", sni.host,
			c->dest.host);
		peek_deny(c, "sni-mismatch", rule);
		return;
	}
	peek_pass(c);
}

void proxy_peek_upstream(struct proxy_conn *c)
{
	/* The server spoke first (port 443 is not read during the peek): not a TLS client.  If
	 * the client spoke too, its bytes decide; the peek then ends there (c may be gone). */
	if (evbuffer_get_length(bufferevent_get_input(c->client.bev)) > 0) {
		proxy_peek_read(c);
		return;
	}
	peek_pass(c);
}

void proxy_peek_timeout(struct proxy_conn *c)
{
	if (evbuffer_get_length(bufferevent_get_input(c->client.bev)) > 0) {
		peek_deny(c, "tls-invalid", "TLS ClientHello incomplete within limits.headerTimeout");
		return;
	}
	if (c->dest.port == 443) {
		peek_deny(c, "tls-invalid", "no TLS ClientHello within limits.headerTimeout");
		return;
	}
	/* Neither side spoke: nothing to check; let the tunnel carry what comes. */
	peek_pass(c);
}
