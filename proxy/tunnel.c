/* Tunnels (CONNECT, SOCKS5): what a tunnel carries, checked before it carries it
 * (docs/design.md 3 and 4.5).
 *
 * The pipeline allowed the host and the upstream is connected.  Nothing moves until the first
 * bytes tell what the tunnel is (proxy/tscan.c): every TLS ClientHello sent in clear must name
 * the tunnel's host, the one after a HelloRetryRequest too, and the server's reply is read up
 * to its ServerHello; plain HTTP becomes an HTTP exchange decided request by request
 * (forward.c); a server that speaks first with an SSH banner makes an SSH tunnel; anything else
 * is opaque.  Each kind is then judged against what the session's bound denies (an opaque
 * tunnel carries every action of its kind).  Silence is never a pass: a tunnel where nobody
 * speaks ends at the idle timeout.  Every byte that goes either way during the check is counted
 * against the session first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "proxy/proxy.h"
#include "proxy/tscan.h"

struct proxy_peek {
	struct proxy_tscan scan;
	int established;    /* the success answer (200, SOCKS reply) went out */
	int client_spoke;   /* the client sent a byte */
	int inspect;        /* a TLS tunnel to an inspected host: egressd terminates it */
};

void proxy_tunnel_free(struct proxy_conn *c)
{
	free(c->peek);
	c->peek = NULL;
}

/* A refusal is rendered in the front door's protocol before the success answer, by a close
 * (with its record) after it: proxy_deny through c->answer. */
static void refuse(struct proxy_conn *c, const char *reason, const char *rule, const char *hint)
{
	proxy_refuse(c, 403, reason, rule, hint);
}

static void send_established(struct proxy_conn *c)
{
	if (c->peek->established)
		return;
	c->peek->established = 1;
	c->front->established(c);
	c->answer = proxy_answer_close;
}

/* Moves n held client bytes upstream, within the session's budget.  0, or -1 when the limit cut
 * them and the connection was closed. */
static int pass_out(struct proxy_conn *c, size_t n)
{
	uint64_t room = proxy_conn_room(c, 1);
	size_t take = n <= room ? n : (size_t)room;
	struct evbuffer *in = bufferevent_get_input(c->client.bev);
	evbuffer_remove_buffer(in, bufferevent_get_output(c->up.bev), take);
	proxy_count(c, take, 0);
	proxy_flush(c->up.bev);
	if (take < n) {
		proxy_conn_close(c, "limit-bytes");
		return -1;
	}
	return 0;
}

/* Backpressure while records pass before the server's hello (early data, say): the client is
 * not read while the upstream's output is over the mark; its write callback (conn.c) reads on
 * again. */
static int upstream_full(struct proxy_conn *c)
{
	if (evbuffer_get_length(bufferevent_get_output(c->up.bev)) < PROXY_HIGH_WATER)
		return 0;
	bufferevent_disable(c->client.bev, EV_READ);
	return 1;
}

/* Moves n server bytes to the client, within the budget.  0 or -1 as above. */
static int pass_in(struct proxy_conn *c, size_t n)
{
	uint64_t room = proxy_conn_room(c, 0);
	size_t take = n <= room ? n : (size_t)room;
	struct evbuffer *in = bufferevent_get_input(c->up.bev);
	evbuffer_remove_buffer(in, bufferevent_get_output(c->client.bev), take);
	proxy_count(c, 0, take);
	proxy_flush(c->client.bev);
	if (take < n) {
		proxy_conn_close(c, "limit-bytes");
		return -1;
	}
	if (evbuffer_get_length(bufferevent_get_output(c->client.bev)) >= PROXY_HIGH_WATER)
		bufferevent_disable(c->up.bev, EV_READ);
	return 0;
}

void proxy_tunnel_relay(struct proxy_conn *c)
{
	proxy_tunnel_free(c);
	proxy_up_set(c, PROXY_UP_ACTIVE);
	proxy_client_set(c, PROXY_CLIENT_TUNNEL);
	/* What the buffers still hold goes first, and within the budget like the rest. */
	size_t cin = evbuffer_get_length(bufferevent_get_input(c->client.bev));
	size_t uin = evbuffer_get_length(bufferevent_get_input(c->up.bev));
	if (cin > proxy_conn_room(c, 1)) {
		pass_out(c, cin);
		return;
	}
	if (uin > proxy_conn_room(c, 0)) {
		pass_in(c, uin);
		return;
	}
	if (proxy_splice_start(c) == -1)
		proxy_conn_close(c, "error");
}

/* The kind is known: judge it under the current bound.  0 to go on, -1 when refused. */
static int judge_kind(struct proxy_conn *c, enum allow_tunnel_kind kind)
{
	c->carries = kind;
	if (c->session->cfg == NULL) {
		refuse(c, "no-session", "sessions", "The session is no longer in the config");
		return -1;
	}
	struct allow_decision d;
	int inspect;
	allow_tunnel_decide(&c->session->cfg->bound, &c->rq.dest, kind, &inspect, &d);
	if (d.reason != ALLOW_OK) {
		proxy_refuse_decision(c, &d);
		return -1;
	}
	c->peek->inspect = inspect;
	return 0;
}

/* 1 when the session's bound lets an opaque tunnel (every action) to this host through. */
static int opaque_allowed(const struct proxy_conn *c)
{
	if (c->session->cfg == NULL)
		return 0;
	struct allow_decision d;
	int inspect;
	allow_tunnel_decide(&c->session->cfg->bound, &c->rq.dest, ALLOW_TUNNEL_OTHER, &inspect, &d);
	return d.reason == ALLOW_OK;
}

/* A ClientHello's name must be the tunnel's host; a hello without one passes only to an IP
 * literal the bound allowed.  0, or -1 when refused. */
static int check_name(struct proxy_conn *c, const char *name)
{
	char rule[2 * ALLOW_HOST_BUF + 64];
	if (name[0] == '\0') {
		if (c->rq.dest.kind != ALLOW_HOST_NAME)
			return 0;
		snprintf(rule, sizeof rule, "TLS ClientHello without SNI for %s", c->rq.dest.host);
		refuse(c, "sni-mismatch", rule,
		        "The tunnel's TLS must name the host the tunnel was opened for");
		return -1;
	}
	struct allow_dest sni;
	enum allow_canon_err err = allow_canon_host(name, strlen(name), &sni);
	if (err != ALLOW_CANON_OK) {
		snprintf(rule, sizeof rule, "TLS SNI \"%s\": %s", name, allow_canon_strerror(err));
		refuse(c, "tls-invalid", rule,
		        "The tunnel's first bytes must be a TLS ClientHello naming the tunnel's host");
		return -1;
	}
	if (sni.kind != c->rq.dest.kind || strcmp(sni.host, c->rq.dest.host) != 0) {
		snprintf(rule, sizeof rule, "TLS SNI %s is not the tunnel's host %s", sni.host,
		        c->rq.dest.host);
		refuse(c, "sni-mismatch", rule,
		        "The tunnel's TLS must name the host the tunnel was opened for; open a "
		        "tunnel to that host instead");
		return -1;
	}
	return 0;
}

/* Plain HTTP inside the tunnel: hand over to the HTTP exchange, which decides each request. */
static void become_http(struct proxy_conn *c)
{
	if (evbuffer_get_length(bufferevent_get_input(c->up.bev)) > 0) {
		refuse(c, "opaque-tunnel", "the server spoke before the first request",
		        "A plain HTTP tunnel's server answers requests; it may not speak first");
		return;
	}
	proxy_tunnel_free(c);
	proxy_up_set(c, PROXY_UP_IDLE);
	proxy_fwd_begin(c, 1);
	if (proxy_conn_closed(c))
		return;
	proxy_client_set(c, PROXY_CLIENT_REQUEST);
	bufferevent_setwatermark(c->client.bev, EV_READ, 0,
	        (size_t)c->srv->gen->cfg->limits.max_header_bytes + 16384);
	if (evbuffer_get_length(bufferevent_get_input(c->client.bev)) > 0 || c->client.eof)
		proxy_fwd_client_read(c);
}

/* Runs the scan over what is held, as far as it goes. */
static void step(struct proxy_conn *c)
{
	struct proxy_peek *p = c->peek;
	struct evbuffer *cin = bufferevent_get_input(c->client.bev);
	struct evbuffer *uin = bufferevent_get_input(c->up.bev);
	uint64_t now = proxy_now_ms();
	for (;;) {
		if (proxy_conn_closed(c) || c->peek == NULL)
			return;
		size_t clen = evbuffer_get_length(cin);
		if (clen > 0)
			p->client_spoke = 1;
		/* Server bytes: held until the kind is known; read on their way while TLS is
		 * checked. */
		size_t ulen = evbuffer_get_length(uin);
		if (ulen > 0 && p->scan.phase != PROXY_TSCAN_PH_OPEN) {
			const char *why = NULL;
			const uint8_t *ub = evbuffer_pullup(uin, (ev_ssize_t)ulen);
			enum proxy_tscan_step st = proxy_tscan_server(&p->scan, ub, ulen,
			        p->client_spoke, &why);
			if (st == PROXY_TSCAN_BAD) {
				char rule[200];
				snprintf(rule, sizeof rule, "TLS: %s", why);
				refuse(c, "tls-invalid", rule, "The tunnel's server did not answer with TLS");
				return;
			}
			if (st == PROXY_TSCAN_KIND) {
				/* The server spoke first: SSH or opaque. */
				if (judge_kind(c, p->scan.kind) == -1)
					return;
				send_established(c);
				proxy_tunnel_relay(c);
				return;
			}
			if (p->scan.phase == PROXY_TSCAN_PH_TLS || p->scan.phase == PROXY_TSCAN_PH_OPEN) {
				if (pass_in(c, ulen) == -1)
					return;
			}
			if (st == PROXY_TSCAN_OPEN) {
				proxy_tunnel_relay(c);
				return;
			}
		}
		if (clen == 0 && !c->client.eof)
			break;
		size_t n;
		char name[PROXY_SNI_NAME_BUF];
		const char *why = NULL;
		int was_ssh = p->scan.client_ssh;
		const uint8_t *cb = evbuffer_pullup(cin,
		        (ev_ssize_t)(clen < PROXY_SNI_PEEK_MAX ? clen : PROXY_SNI_PEEK_MAX));
		enum proxy_tscan_step st = proxy_tscan_client(&p->scan, cb,
		        clen < PROXY_SNI_PEEK_MAX ? clen : PROXY_SNI_PEEK_MAX, c->client.eof, &n, name,
		        sizeof name, &why);
		switch (st) {
		case PROXY_TSCAN_MORE:
			if (c->client.eof && clen == 0 && p->scan.phase == PROXY_TSCAN_PH_FIRST) {
				proxy_conn_close(c, "client-closed");
				return;
			}
			/* An SSH identification line from the client, just seen: server bytes
			 * already held now decide the kind (once: the loop read them before).
			 * Without any, the line waits for them only where that matters: when the
			 * bound lets an opaque tunnel through, it goes on at once as one. */
			if (!was_ssh && p->scan.client_ssh && ulen > 0)
				continue;
			if (!was_ssh && p->scan.client_ssh && opaque_allowed(c)) {
				proxy_tscan_server_silent(&p->scan);
				if (judge_kind(c, p->scan.kind) == -1)
					return;
				send_established(c);
				proxy_tunnel_relay(c);
				return;
			}
			goto wait;
		case PROXY_TSCAN_KIND:
			if (judge_kind(c, p->scan.kind) == -1)
				return;
			if (p->scan.kind == ALLOW_TUNNEL_HTTP) {
				send_established(c);
				become_http(c);
				return;
			}
			continue;
		case PROXY_TSCAN_HELLO:
			if (check_name(c, name) == -1)
				return;
			if (p->scan.ech && !p->inspect && c->srv->gen->cfg->tls.refuse_ech) {
				char rule[ALLOW_HOST_BUF + 96];
				snprintf(rule, sizeof rule,
				        "tls.refuseECH: a ClientHello for %s with encrypted_client_hello",
				        c->rq.dest.host);
				refuse(c, "ech-refused", rule,
				        "egressd cannot read the name inside Encrypted Client Hello; turn "
				        "ECH off in the client, add the host to inspect, or set "
				        "tls.refuseECH: false");
				return;
			}
			if (p->inspect) {
				/* The hello stays for egressd's own TLS (inspect.c). */
				send_established(c);
				proxy_inspect_start(c);
				return;
			}
			proxy_tscan_passed(&p->scan, n);
			send_established(c);
			if (pass_out(c, n) == -1)
				return;
			if (upstream_full(c))
				goto wait;
			continue;
		case PROXY_TSCAN_PASS:
			send_established(c);
			if (pass_out(c, n) == -1)
				return;
			if (upstream_full(c))
				goto wait;
			continue;
		case PROXY_TSCAN_OPEN:
			send_established(c);
			proxy_tunnel_relay(c);
			return;
		case PROXY_TSCAN_BAD: {
			char rule[240];
			snprintf(rule, sizeof rule, "%s", why != NULL ? why : "malformed");
			refuse(c, "tls-invalid", rule,
			        "The tunnel's first bytes must be a TLS ClientHello naming the "
			        "tunnel's host");
			return;
		}
		}
	}
wait:
	/* Nothing to judge yet.  A client that sent its bytes with the CONNECT gets its answer
	 * once they are judged; otherwise it gets it now, and speaks. */
	send_established(c);
	if (c->client.eof && c->up.eof) {
		proxy_conn_close(c, "client-closed");
		return;
	}
	/* Bytes held unjudged (a ClientHello or record still arriving) have headerTimeout to
	 * arrive whole. */
	if (evbuffer_get_length(cin) == 0) {
		c->client.deadline_ms = 0;
	} else if (c->client.deadline_ms == 0) {
		c->client.deadline_ms = now + c->srv->gen->cfg->limits.header_timeout_ms;
	} else if (now >= c->client.deadline_ms && p->scan.client_ssh) {
		/* No SSH server answered the client's identification line: its bytes are opaque. */
		proxy_tscan_server_silent(&p->scan);
		if (judge_kind(c, p->scan.kind) == -1)
			return;
		proxy_tunnel_relay(c);
		return;
	} else if (now >= c->client.deadline_ms) {
		refuse(c, "tls-invalid", "TLS ClientHello incomplete within limits.headerTimeout",
		        "The tunnel's first bytes must arrive within limits.headerTimeout");
		return;
	}
	if (now - c->last_active_ms >= c->srv->gen->cfg->limits.idle_timeout_ms) {
		proxy_conn_close(c, "idle-timeout");
		return;
	}
	proxy_conn_rearm(c);
}

void proxy_tunnel_start(struct proxy_conn *c)
{
	c->peek = calloc(1, sizeof *c->peek);
	if (c->peek == NULL) {
		proxy_conn_close(c, "error");
		return;
	}
	proxy_tscan_init(&c->peek->scan, c->rq.dest.port == 443);
	c->carries = ALLOW_TUNNEL_UNKNOWN;
	proxy_client_set(c, PROXY_CLIENT_PEEK);
	bufferevent_setwatermark(c->client.bev, EV_READ, 0, PROXY_SNI_PEEK_MAX + 64);
	if (!c->client.eof)
		bufferevent_enable(c->client.bev, EV_READ);
	/* A server that speaks first may not fill egressd while its bytes are held. */
	bufferevent_setwatermark(c->up.bev, EV_READ, 0, PROXY_HIGH_WATER);
	bufferevent_setwatermark(c->up.bev, EV_WRITE, PROXY_LOW_WATER, 0);
	bufferevent_enable(c->up.bev, EV_READ);
	step(c);
}

void proxy_tunnel_client_read(struct proxy_conn *c)
{
	if (c->peek != NULL && !proxy_conn_closed(c))
		step(c);
}

void proxy_tunnel_upstream_read(struct proxy_conn *c)
{
	if (c->peek == NULL || proxy_conn_closed(c))
		return;
	if (c->up.eof && evbuffer_get_length(bufferevent_get_input(c->up.bev)) == 0 &&
	        c->peek->scan.phase == PROXY_TSCAN_PH_FIRST) {
		/* The server closed before anything was judged. */
		proxy_conn_close(c, "upstream-closed");
		return;
	}
	step(c);
}
