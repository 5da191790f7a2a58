/* The transparent front door (listen.transparent; docs/design.md 1 and issue 10): TCP that nft
 * or iptables redirected here, for a process that never asked for a proxy.
 *
 * The original destination comes from SO_ORIGINAL_DST (IPv4 and IPv6).  The name comes from the
 * mapped address when the destination is one (198.18.0.0/15, handed out by the DNS listener in
 * mapped mode), else from the first bytes: a TLS ClientHello's server name, or a plain HTTP
 * request's Host.  The name is decided, resolved and judged like any other, and egressd dials
 * the address it judged, never the original one (which goes into the records as orig_dst).  When
 * both a mapped name and a name in the bytes are there they must agree: the tunnel's first-bytes
 * check (tunnel.c) holds the ClientHello to the name (sni-mismatch) and each request's Host to
 * it (421 misdirected).  A connection with no name is decided on its address as an IP literal;
 * when the bound does not name that address it is refused (opaque-tunnel).  Plain HTTP denials
 * are HTTP answers; TLS and opaque refusals are a close with a record. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "dns/map.h"
#include "proxy/h1.h"
#include "proxy/proxy.h"
#include "proxy/sni.h"

/* From linux/netfilter_ipv4.h and linux/netfilter_ipv6/ip6_tables.h: the destination a
 * connection had before a REDIRECT or DNAT rule changed it. */
#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80
#endif
#ifndef IP6T_SO_ORIGINAL_DST
#define IP6T_SO_ORIGINAL_DST 80
#endif

struct transparent_state {
	struct dns_addr orig;  /* the original destination */
	uint16_t port;
	int mapped;            /* orig is a mapped address that stands for a name (held) */
	int http;              /* the first bytes are plain HTTP: denials are HTTP answers */
};

static void tr_release(struct proxy_conn *c)
{
	struct transparent_state *st = c->front_state;
	if (st != NULL && st->mapped && c->srv->dnsmap != NULL)
		dns_map_unref(c->srv->dnsmap, st->orig.addr, proxy_now_ms());
	free(st);
	c->front_state = NULL;
}

static void tr_denied(struct proxy_conn *c, const struct proxy_outcome *o)
{
	struct transparent_state *st = c->front_state;
	if (st != NULL && st->http)
		proxy_answer_http(c, o);
	else
		proxy_answer_close(c, o);
}

static void tr_established(struct proxy_conn *c)
{
	(void)c; /* the client believes it reached its destination: nothing to say */
}

/* The request for the pipeline: a tunnel to name (or the address as a literal). */
static int set_dest(struct proxy_conn *c, const char *name, enum allow_tunnel_kind kind)
{
	struct transparent_state *st = c->front_state;
	if (allow_canon_host(name, strlen(name), &c->rq.dest) != ALLOW_CANON_OK)
		return -1;
	c->rq.dest.port = st->port;
	c->rq.tunnel = 1;
	c->rq.kind = st->port == 443 ? ALLOW_TUNNEL_TLS : kind;
	return 0;
}

/* The original address as a literal, decided on its own: allowed only where the bound names
 * that address (or a CIDR holding it). */
static void decide_literal(struct proxy_conn *c)
{
	struct transparent_state *st = c->front_state;
	char ip[INET6_ADDRSTRLEN] = "";
	inet_ntop(st->orig.family, st->orig.addr, ip, sizeof ip);
	set_dest(c, ip, ALLOW_TUNNEL_UNKNOWN);
	struct proxy_session *s = proxy_session_for_peer(c->srv, &c->peer);
	struct allow_decision d;
	if (s != NULL && s->cfg != NULL) {
		allow_decide(&s->cfg->bound, &c->rq.dest, 0, &d);
		if (d.reason != ALLOW_OK) {
			char rule[200];
			snprintf(rule, sizeof rule, "no name for %s (no SNI, no Host, not a mapped address)",
			        c->rq.orig_dst);
			proxy_refuse(c, 403, "opaque-tunnel", rule,
			        "A redirected connection needs a name egressd can decide on: resolve it "
			        "through egressd's DNS listener, or add the address to allowDomains");
			return;
		}
	}
	proxy_pipeline_run(c);
}

static int original_dst(int fd, struct transparent_state *st, char *text, size_t cap)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	struct sockaddr_in6 local;
	socklen_t llen = sizeof local;
	if (getsockname(fd, (struct sockaddr *)&local, &llen) == -1)
		return -1;
	int v6 = local.sin6_family == AF_INET6;
	if (getsockopt(fd, v6 ? SOL_IPV6 : SOL_IP, v6 ? IP6T_SO_ORIGINAL_DST : SO_ORIGINAL_DST, &ss,
	            &len) == -1)
		return -1;
	memset(&st->orig, 0, sizeof st->orig);
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
		st->orig.family = AF_INET;
		memcpy(st->orig.addr, &s4->sin_addr, 4);
		st->port = ntohs(s4->sin_port);
	} else if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
		st->orig.family = AF_INET6;
		memcpy(st->orig.addr, &s6->sin6_addr, 16);
		st->port = ntohs(s6->sin6_port);
	} else {
		errno = EAFNOSUPPORT;
		return -1;
	}
	proxy_format_addr(&st->orig, st->port, text, cap);
	return 0;
}

static void tr_start(struct proxy_conn *c)
{
	struct transparent_state *st = calloc(1, sizeof *st);
	if (st == NULL) {
		proxy_conn_close(c, "error");
		return;
	}
	c->front_state = st;
	c->rq.front = "transparent";
	c->rq.tunnel = 1; /* the connection is the tunnel: its refusals are connect records, also
	                   * those decided before a name is known (tls-invalid, bad-request) */
	if (original_dst(bufferevent_getfd(c->client.bev), st, c->rq.orig_dst,
	            sizeof c->rq.orig_dst) == -1) {
		char rule[120];
		snprintf(rule, sizeof rule, "SO_ORIGINAL_DST: %s", strerror(errno));
		proxy_refuse(c, 400, "bad-request", rule,
		        "The transparent listener takes only redirected connections");
		return;
	}
	if (st->port == 0) {
		proxy_refuse(c, 400, "bad-request", "original destination port 0",
		        "The transparent listener takes only redirected connections");
		return;
	}
	/* A mapped address names its (session, name) at once, whatever the client will say. */
	const char *msession, *mname;
	if (st->orig.family == AF_INET && c->srv->dnsmap != NULL && dns_map_in_pool(st->orig.addr) &&
	        dns_map_lookup(c->srv->dnsmap, st->orig.addr, proxy_now_ms(), &msession, &mname) ==
	                0) {
		struct proxy_session *s = proxy_session_for_peer(c->srv, &c->peer);
		if (s == NULL || strcmp(s->name, msession) != 0) {
			proxy_refuse(c, 403, "host-not-allowed", "the mapped address stands for another "
			                                   "session's name",
			        "Resolve the name again through egressd's DNS listener");
			return;
		}
		if (dns_map_ref(c->srv->dnsmap, st->orig.addr, proxy_now_ms()) == 0)
			st->mapped = 1;
		if (set_dest(c, mname, ALLOW_TUNNEL_UNKNOWN) == -1) {
			proxy_refuse(c, 400, "bad-request", "the mapped name is not a host name",
			        "Resolve the name again through egressd's DNS listener");
			return;
		}
		proxy_pipeline_run(c);
		return;
	}
	/* An address the bound names needs no name: decide it now, so a client that waits for
	 * its server (ssh, a database) is not kept waiting. */
	struct proxy_session *s = proxy_session_for_peer(c->srv, &c->peer);
	if (s != NULL && s->cfg != NULL) {
		char ip[INET6_ADDRSTRLEN] = "";
		struct allow_dest d;
		struct allow_decision dec;
		inet_ntop(st->orig.family, st->orig.addr, ip, sizeof ip);
		if (allow_canon_host(ip, strlen(ip), &d) == ALLOW_CANON_OK) {
			d.port = st->port;
			allow_decide(&s->cfg->bound, &d, 0, &dec);
			if (dec.reason == ALLOW_OK) {
				decide_literal(c);
				return;
			}
		}
	}
	/* Otherwise the first bytes must say a name (tr_read). */
}

/* The Host of a complete plain HTTP request head at the start of in, into name; 1 found, 0 no
 * Host, -1 more bytes needed, -2 not a request head, -3 a Host that is no host (why says how:
 * raw non-ASCII, a bad port), which is a bad-request as on every door, never a connection
 * without a name. */
static int http_host(struct proxy_conn *c, struct evbuffer *in, char *name, size_t cap,
        char *why, size_t whylen)
{
	const struct allow_global_limits *lim = &c->srv->gen->cfg->limits;
	struct evbuffer *copy = evbuffer_new();
	if (copy == NULL)
		return -2;
	size_t n = evbuffer_get_length(in);
	evbuffer_add(copy, evbuffer_pullup(in, (ev_ssize_t)n), n);
	struct proxy_h1 m;
	proxy_h1_init(&m, HTTP_REQUEST, (uint32_t)lim->max_header_bytes, (uint32_t)lim->max_headers,
	        NULL);
	const char *reason;
	int rc = proxy_h1_request_head(&m, copy, &reason, why, whylen);
	int out = -2;
	if (rc == 0)
		out = -1;
	else if (rc == 1) {
		size_t hl;
		const char *h = proxy_h1_get(&m, "host", &hl);
		struct allow_dest d;
		enum allow_canon_err err;
		out = 0;
		if (h != NULL && (err = allow_canon_authority(h, hl, 80, &d)) == ALLOW_CANON_OK) {
			snprintf(name, cap, "%s", d.host);
			out = 1;
		} else if (h != NULL) {
			snprintf(why, whylen, "The Host header's host is not valid (%s)",
			        allow_canon_strerror(err));
			out = -3;
		}
	}
	proxy_h1_free(&m);
	evbuffer_free(copy);
	return out;
}

static void tr_read(struct proxy_conn *c)
{
	struct transparent_state *st = c->front_state;
	if (st == NULL || c->client.state != PROXY_CLIENT_REQUEST)
		return;
	struct evbuffer *in = bufferevent_get_input(c->client.bev);
	size_t len = evbuffer_get_length(in);
	if (len == 0)
		return;
	size_t look = len < PROXY_SNI_PEEK_MAX ? len : PROXY_SNI_PEEK_MAX;
	const uint8_t *buf = evbuffer_pullup(in, (ev_ssize_t)look);
	char name[PROXY_SNI_NAME_BUF];
	size_t used;
	const char *why = NULL;
	enum proxy_sni_result r = proxy_sni_hello(buf, look, name, sizeof name, &used, NULL, &why);
	switch (r) {
	case PROXY_SNI_NEED_MORE:
		if (look >= PROXY_SNI_PEEK_MAX || c->client.eof)
			proxy_refuse(c, 403, "tls-invalid", "TLS ClientHello larger than egressd reads",
			        "The tunnel's first bytes must be a readable TLS ClientHello");
		return;
	case PROXY_SNI_BAD: {
		char rule[200];
		snprintf(rule, sizeof rule, "TLS ClientHello: %s", why != NULL ? why : "malformed");
		proxy_refuse(c, 403, "tls-invalid", rule,
		        "The tunnel's first bytes must be a readable TLS ClientHello");
		return;
	}
	case PROXY_SNI_FOUND:
		if (set_dest(c, name, ALLOW_TUNNEL_TLS) == -1) {
			char rule[320];
			snprintf(rule, sizeof rule, "TLS SNI \"%s\" is not a host name", name);
			proxy_refuse(c, 403, "tls-invalid", rule,
			        "The tunnel's first bytes must be a TLS ClientHello naming a host");
			return;
		}
		proxy_pipeline_run(c);
		return;
	case PROXY_SNI_NONE:
		decide_literal(c);
		return;
	case PROXY_SNI_NOT_TLS:
		break;
	}
	if (st->port == 443) {
		/* No name yet: the record names the original address and the session of the
		 * client's address, as decide_literal's would. */
		char ip[INET6_ADDRSTRLEN] = "";
		inet_ntop(st->orig.family, st->orig.addr, ip, sizeof ip);
		set_dest(c, ip, ALLOW_TUNNEL_UNKNOWN);
		proxy_pipeline_name_session(c);
		proxy_refuse(c, 403, "tls-invalid", "port 443 carries only TLS",
		        "The tunnel's first bytes must be a TLS ClientHello");
		return;
	}
	char hwhy[300];
	int h = http_host(c, in, name, sizeof name, hwhy, sizeof hwhy);
	if (h == -1 && !c->client.eof)
		return;
	if (h >= 0 || h == -3) {
		st->http = 1;
		c->answer = proxy_answer_http; /* its denials are HTTP answers, with their status */
	}
	if (h == -3) {
		proxy_refuse(c, 400, "bad-request", "", hwhy); /* no rule: as every door's */
		return;
	}
	if (h == 1 && set_dest(c, name, ALLOW_TUNNEL_UNKNOWN) == 0) {
		proxy_pipeline_run(c);
		return;
	}
	decide_literal(c);
}

/* Nothing named the destination within headerTimeout: decide the address alone. */
static void tr_timeout(struct proxy_conn *c)
{
	if (c->front_state == NULL) {
		proxy_conn_close(c, "header-timeout");
		return;
	}
	decide_literal(c);
}

const struct proxy_front proxy_front_transparent = {
        .name = "transparent",
        .start = tr_start,
        .read = tr_read,
        .allowed = proxy_tunnel_start,
        .denied = tr_denied,
        .established = tr_established,
        .release = tr_release,
        .timeout = tr_timeout,
};
