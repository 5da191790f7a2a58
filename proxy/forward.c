/* The HTTP exchange: request heads from the client, each decided by the pipeline, forwarded with
 * its body, and the response relayed back; keep-alive both ways.
 *
 * Two forms share it: the forward proxy (absolute URIs, a new or kept upstream per destination)
 * and plain HTTP inside a tunnel (origin-form requests whose Host must be the tunnel's host, over
 * the tunnel's upstream; docs/design.md 3).  Heads are rebuilt from what was parsed, never copied
 * through; bodies are re-framed: a chunked body leaves as chunks egressd wrote (or, to an
 * HTTP/1.0 client, as a body that the close ends), a Content-Length body with that length.
 * Every byte that leaves is counted against the session first: a head that does not fit is
 * refused, a body is cut where the limit is. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include <openssl/evp.h>

#include "allowlist/tags.h"
#include "proxy/h1.h"
#include "proxy/proxy.h"

struct proxy_fwd {
	struct proxy_h1 req;   /* client to us */
	struct proxy_h1 resp;  /* upstream to us */
	int in_tunnel;         /* origin-form requests over the tunnel's upstream */
	int req_chunked;       /* the request body is re-framed as chunks */
	int resp_chunked;      /* the response body is re-framed as chunks */
	int resp_dechunk;      /* a chunked response goes to an HTTP/1.0 client unframed */
	int resp_eof_framed;   /* the response ends when the upstream closes */
	int resp_sent;         /* the response head went to the client */
	int req_keepalive;     /* the client wants the connection kept */
	int client_http10;     /* the client speaks HTTP/1.0 */
	int upgrade;           /* the request asks to become a websocket */
	int cut;               /* a body crossed a byte limit: the connection ends limit-bytes */
};

static struct proxy_conn *conn_of(struct proxy_h1 *m)
{
	return m->owner;
}

/* ---- bodies ---- */

static void add_chunk(struct evbuffer *out, const char *at, size_t len)
{
	char size[24];
	int n = snprintf(size, sizeof size, "%zx\r\n", len);
	evbuffer_add(out, size, (size_t)n);
	evbuffer_add(out, at, len);
	evbuffer_add(out, "\r\n", 2);
}

static int req_body(struct proxy_h1 *m, const char *at, size_t len)
{
	struct proxy_conn *c = conn_of(m);
	struct proxy_fwd *f = c->fwd;
	if (c->up.bev == NULL)
		return -1;
	uint64_t room = proxy_conn_room(c, 1);
	struct evbuffer *out = bufferevent_get_output(c->up.bev);
	if (len > room) {
		/* The transfer that would cross the limit is cut at it. */
		if (!f->req_chunked)
			evbuffer_add(out, at, (size_t)room);
		proxy_count(c, room, 0);
		f->cut = 1;
		return -1;
	}
	if (f->req_chunked)
		add_chunk(out, at, len);
	else
		evbuffer_add(out, at, len);
	proxy_count(c, len, 0);
	return 0;
}

static int req_done(struct proxy_h1 *m)
{
	struct proxy_conn *c = conn_of(m);
	if (c->fwd->req_chunked && c->up.bev != NULL &&
	        c->client.state == PROXY_CLIENT_FORWARD)
		evbuffer_add(bufferevent_get_output(c->up.bev), "0\r\n\r\n", 5);
	return 0;
}

static int resp_body(struct proxy_h1 *m, const char *at, size_t len)
{
	struct proxy_conn *c = conn_of(m);
	struct proxy_fwd *f = c->fwd;
	uint64_t room = proxy_conn_room(c, 0);
	struct evbuffer *out = bufferevent_get_output(c->client.bev);
	if (len > room) {
		if (!f->resp_chunked)
			evbuffer_add(out, at, (size_t)room);
		proxy_count(c, 0, room);
		f->cut = 1;
		return -1;
	}
	if (f->resp_chunked)
		add_chunk(out, at, len);
	else
		evbuffer_add(out, at, len);
	proxy_count(c, 0, len);
	return 0;
}

/* ---- set-up ---- */

void proxy_fwd_begin(struct proxy_conn *c, int in_tunnel)
{
	if (c->fwd == NULL) {
		c->fwd = calloc(1, sizeof *c->fwd);
		if (c->fwd == NULL) {
			proxy_conn_close(c, "error");
			return;
		}
	}
	const struct allow_global_limits *lim = &c->srv->gen->cfg->limits;
	uint32_t hb = (uint32_t)(lim->max_header_bytes > UINT32_MAX / 2 ? UINT32_MAX / 2
	                                                               : lim->max_header_bytes);
	uint32_t hf = (uint32_t)(lim->max_headers > 100000 ? 100000 : lim->max_headers);
	struct proxy_fwd *f = c->fwd;
	f->in_tunnel = in_tunnel;
	proxy_h1_init(&f->req, HTTP_REQUEST, hb, hf, c);
	f->req.on_body = req_body;
	f->req.on_done = req_done;
	proxy_h1_init(&f->resp, HTTP_RESPONSE, hb, hf, c);
	f->resp.on_body = resp_body;
}

void proxy_fwd_free(struct proxy_conn *c)
{
	if (c->fwd == NULL)
		return;
	proxy_h1_free(&c->fwd->req);
	proxy_h1_free(&c->fwd->resp);
	free(c->fwd);
	c->fwd = NULL;
}

int proxy_fwd_response_started(const struct proxy_conn *c)
{
	return c->fwd != NULL && c->fwd->resp_sent;
}

int proxy_fwd_request_sent(const struct proxy_conn *c)
{
	const struct proxy_fwd *f = c->fwd;
	return f != NULL && f->req.h.complete &&
	       (f->req.h.msg_complete || !proxy_h1_has_body(&f->req));
}

/* ---- request heads ---- */

/* Reads "Proxy-Authorization: Basic base64(name:token)" into the request's credentials. */
static void read_credentials(struct proxy_conn *c)
{
	size_t n;
	const char *v = proxy_h1_get(&c->fwd->req, "proxy-authorization", &n);
	if (v == NULL)
		return;
	c->rq.has_cred = 1;
	while (n > 0 && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	if (n < 6 || strncasecmp(v, "basic ", 6) != 0)
		return;
	v += 6;
	n -= 6;
	while (n > 0 && v[0] == ' ') {
		v++;
		n--;
	}
	while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	if (n == 0 || n > 1024 || n % 4 != 0)
		return;
	unsigned char dec[800];
	int dlen = EVP_DecodeBlock(dec, (const unsigned char *)v, (int)n);
	if (dlen < 0)
		return;
	/* EVP_DecodeBlock counts the padding as zero bytes. */
	if (v[n - 1] == '=')
		dlen--;
	if (v[n - 2] == '=')
		dlen--;
	const unsigned char *colon = memchr(dec, ':', (size_t)dlen);
	if (colon == NULL)
		return;
	size_t ulen = (size_t)(colon - dec), plen = (size_t)dlen - ulen - 1;
	c->rq.user = strndup((const char *)dec, ulen);
	c->rq.pass = strndup((const char *)colon + 1, plen);
	c->rq.user_len = ulen;
	c->rq.pass_len = plen;
	explicit_bzero(dec, sizeof dec);
}

/* A refusal of a request head: always an HTTP answer. */
static void deny_status(struct proxy_conn *c, int status, const char *reason, const char *rule,
        const char *why)
{
	c->answer = proxy_answer_http;
	proxy_refuse(c, status, reason, rule, why);
}

/* A complete request head is in f->req: build the pipeline's request from it. */
static void head_done(struct proxy_conn *c)
{
	struct proxy_fwd *f = c->fwd;
	const char *reason;
	char why[300];
	struct proxy_h1_target t;
	const char *front = c->rq.front;
	struct allow_dest tunnel_dest = c->rq.dest;
	char orig[PROXY_ADDR_TEXT];
	memcpy(orig, c->rq.orig_dst, sizeof orig);
	proxy_request_clear(&c->rq);
	c->rq.front = f->in_tunnel ? front : "http";
	if (f->in_tunnel)
		memcpy(c->rq.orig_dst, orig, sizeof orig);
	int st = proxy_h1_request_target(&f->req, !f->in_tunnel, &t, &reason, why, sizeof why);
	memcpy(c->rq.method, t.method, sizeof c->rq.method);
	c->rq.dest = f->in_tunnel ? tunnel_dest : t.dest;
	if (st != 0) {
		free(t.path);
		deny_status(c, st, reason, NULL, why);
		return;
	}
	c->rq.path = t.path;
	c->rq.action = t.action;
	c->answer = proxy_answer_http;
	if (f->in_tunnel) {
		/* The tunnel's host, and nothing else, is what its requests may name. */
		size_t hn;
		const char *hv = proxy_h1_get(&f->req, "host", &hn);
		struct allow_dest h;
		if (hv == NULL ||
		        allow_canon_authority(hv, hn, tunnel_dest.port, &h) != ALLOW_CANON_OK ||
		        strcmp(h.host, tunnel_dest.host) != 0 || h.kind != tunnel_dest.kind ||
		        h.port != tunnel_dest.port) {
			char rule[ALLOW_HOST_BUF + 64];
			snprintf(rule, sizeof rule, "Host must be %s:%u", tunnel_dest.host,
			        tunnel_dest.port);
			deny_status(c, 421, "misdirected", rule,
			        "A request inside a tunnel must name the tunnel's host; open a tunnel "
			        "to the other host");
			return;
		}
		c->rq.fixed_upstream = 1;
	} else {
		read_credentials(c);
	}
	f->client_http10 = f->req.p.http_major == 1 && f->req.p.http_minor == 0;
	f->req_keepalive = http_should_keep_alive(&f->req.p);
	f->req_chunked = (f->req.p.flags & F_CHUNKED) != 0;
	/* A websocket is relayed as a tunnel after its 101; inside an inspected tunnel, where
	 * every byte goes through egressd's TLS, the upgrade is not asked for (docs/inspection.md). */
	f->upgrade = !c->inspected && proxy_h1_has_token(&f->req, "upgrade", "websocket") &&
	             proxy_h1_has_token(&f->req, "connection", "upgrade");
	/* After its 101 a websocket carries bytes both ways that egressd does not read: it is
	 * decided as reading and writing (unsure means more). */
	if (f->upgrade)
		c->rq.action |= ALLOW_TAG_HTTP_READ | ALLOW_TAG_HTTP_WRITE;
	if (t.is_connect) {
		c->rq.tunnel = 1;
		c->rq.front = "connect";
		c->rq.kind = t.dest.port == 443 ? ALLOW_TUNNEL_TLS : ALLOW_TUNNEL_UNKNOWN;
		/* The head's final LF is still buffered (the parser paused before it). */
		evbuffer_drain(bufferevent_get_input(c->client.bev), 1);
		if (c->up.state == PROXY_UP_IDLE)
			proxy_pool_put(c);
		proxy_up_drop(c);
		proxy_fwd_free(c);
	}
	proxy_pipeline_run(c);
}

/* The request head is still incomplete when its deadline passed. */
static void head_timeout(struct proxy_conn *c)
{
	if (c->fwd->req.h.bytes == 0) {
		proxy_conn_close(c, c->requests > 0 ? "idle-timeout" : "header-timeout");
		return;
	}
	deny_status(c, 408, "header-timeout", "limits.headerTimeout",
	        "The request head did not arrive within limits.headerTimeout");
}

/* ---- forwarding the request ---- */

/* The end-to-end fields of a head (hop-by-hop ones and, for requests, Host are rebuilt). */
static void copy_fields(struct evbuffer *out, const struct proxy_head *h, int skip_host)
{
	for (uint32_t i = 0; i < h->nfields; i++) {
		const struct proxy_hfield *fl = &h->fields[i];
		if (proxy_h1_hop_by_hop(h, fl) || (skip_host && proxy_h1_name_is(h, fl, "host")))
			continue;
		evbuffer_add(out, h->arena + fl->name, fl->name_len);
		evbuffer_add(out, ": ", 2);
		evbuffer_add(out, h->arena + fl->value, fl->value_len);
		evbuffer_add(out, "\r\n", 2);
	}
}

static void send_request_head(struct proxy_conn *c, struct evbuffer *out)
{
	struct proxy_fwd *f = c->fwd;
	const http_parser *p = &f->req.p;
	evbuffer_add_printf(out, "%s %s HTTP/1.1\r\nHost: ", c->rq.method, c->rq.path);
	if (c->rq.dest.kind == ALLOW_HOST_IPV6)
		evbuffer_add_printf(out, "[%s]", c->rq.dest.host);
	else
		evbuffer_add(out, c->rq.dest.host, strlen(c->rq.dest.host));
	if (c->rq.dest.port != 80)
		evbuffer_add_printf(out, ":%u", c->rq.dest.port);
	evbuffer_add(out, "\r\n", 2);
	copy_fields(out, &f->req.h, 1);
	if (f->upgrade)
		evbuffer_add(out, "Connection: upgrade\r\nUpgrade: websocket\r\n", 41);
	if (f->req_chunked)
		evbuffer_add(out, "Transfer-Encoding: chunked\r\n", 28);
	else if (p->content_length != ULLONG_MAX && (p->flags & F_CONTENTLENGTH))
		evbuffer_add_printf(out, "Content-Length: %" PRIu64 "\r\n", (uint64_t)p->content_length);
	evbuffer_add(out, "\r\n", 2);
}

/* The pipeline allowed the current request and its upstream is connected: send the head (when
 * the session's budget holds it) and start moving the body. */
void proxy_fwd_allowed(struct proxy_conn *c)
{
	struct proxy_fwd *f = c->fwd;
	struct evbuffer *head = evbuffer_new();
	if (head == NULL) {
		proxy_conn_close(c, "error");
		return;
	}
	send_request_head(c, head);
	/* Heads count against the byte limits too: a URI or a header carries data out. */
	size_t n = evbuffer_get_length(head);
	if (n > proxy_conn_room(c, 1)) {
		evbuffer_free(head);
		struct proxy_outcome o;
		proxy_outcome_set(&o, 429, "limit-bytes", "limits.maxBytesOut",
		        "The request head is larger than what the session may still send");
		proxy_deny(c, &o);
		return;
	}
	proxy_count(c, n, 0);
	evbuffer_add_buffer(bufferevent_get_output(c->up.bev), head);
	evbuffer_free(head);
	proxy_client_set(c, PROXY_CLIENT_FORWARD);
	proxy_h1_reset(&f->resp);
	f->resp.no_body = strcmp(c->rq.method, "HEAD") == 0;
	f->resp_chunked = f->resp_dechunk = f->resp_eof_framed = f->resp_sent = 0;
	bufferevent_setwatermark(c->up.bev, EV_WRITE, PROXY_LOW_WATER, 0);
	bufferevent_setwatermark(c->up.bev, EV_READ, 0, 0);
	bufferevent_enable(c->up.bev, EV_READ);
	proxy_h1_resume(&f->req);
	if (!c->client.eof)
		bufferevent_enable(c->client.bev, EV_READ);
	proxy_fwd_client_read(c);
}

/* Feeds the request body; 0, or -1 when the connection was closed. */
static int feed_body(struct proxy_conn *c)
{
	struct proxy_fwd *f = c->fwd;
	struct evbuffer *in = bufferevent_get_input(c->client.bev);
	if (proxy_h1_feed(&f->req, in) == PROXY_H1_ERROR) {
		/* The head was forwarded already; a broken body ends both sides, with a 400 when
		 * no answer has begun (black-box finding: a chunk line ended by a bare LF got no
		 * answer at all, only a close recorded as error). */
		if (f->cut || f->resp_sent) {
			proxy_conn_close(c, f->cut ? "limit-bytes" : "error");
			return -1;
		}
		struct proxy_outcome o;
		char rule[240];
		snprintf(rule, sizeof rule, "request body: %s",
		        http_errno_description(HTTP_PARSER_ERRNO(&f->req.p)));
		proxy_outcome_set(&o, 400, "bad-request", rule,
		        "The request body's framing is malformed (chunk sizes in hex, every line "
		        "ended by CRLF)");
		proxy_deny(c, &o);
		return -1;
	}
	if (c->client.eof && !f->req.h.msg_complete) {
		/* The client half-closed before its body was complete. */
		proxy_conn_close(c, "client-closed");
		return -1;
	}
	if (c->up.bev == NULL)
		return 0;
	proxy_flush(c->up.bev);
	if (!f->req.h.msg_complete &&
	        evbuffer_get_length(bufferevent_get_output(c->up.bev)) >= PROXY_HIGH_WATER)
		bufferevent_disable(c->client.bev, EV_READ);
	return 0;
}

void proxy_fwd_client_read(struct proxy_conn *c)
{
	struct proxy_fwd *f = c->fwd;
	if (f == NULL || proxy_conn_closed(c))
		return;
	struct evbuffer *in = bufferevent_get_input(c->client.bev);
	if (c->client.state == PROXY_CLIENT_REQUEST) {
		uint64_t now = proxy_now_ms();
		if (now >= c->client.deadline_ms) {
			head_timeout(c);
			return;
		}
		if (f->req.h.bytes == 0 && evbuffer_get_length(in) > 0 && c->requests > 0) {
			/* A kept-alive request begins: its head has headerTimeout from now. */
			c->client.deadline_ms = now + c->srv->gen->cfg->limits.header_timeout_ms;
			proxy_conn_rearm(c);
		}
		const char *reason;
		char why[300];
		int st = proxy_h1_request_head(&f->req, in, &reason, why, sizeof why);
		if (st == 1)
			head_done(c);
		else if (st != 0)
			deny_status(c, st, reason, NULL, why);
		else if (c->client.eof)
			proxy_conn_close(c, "client-closed"); /* a head its half-close cut short */
		return;
	}
	/* A pipelined next request waits in the buffer until this response is done. */
	if (c->client.state != PROXY_CLIENT_FORWARD || f->req.h.msg_complete)
		return;
	feed_body(c);
}

void proxy_fwd_upstream_drained(struct proxy_conn *c)
{
	struct proxy_fwd *f = c->fwd;
	if (f->req.h.msg_complete || c->client.bev == NULL || c->client.eof)
		return;
	bufferevent_enable(c->client.bev, EV_READ);
	proxy_fwd_client_read(c);
}

void proxy_fwd_client_drained(struct proxy_conn *c)
{
	/* The response backlog drained: read the upstream again (unless a spliced body is
	 * reading it). */
	if (c->up.bev != NULL && !c->up.eof && c->body == NULL)
		bufferevent_enable(c->up.bev, EV_READ);
}

/* ---- the response ---- */

/* Writes the response head to out; -1 when it is a 101 that was not asked for. */
static void build_response_head(struct proxy_conn *c, struct evbuffer *out)
{
	struct proxy_fwd *f = c->fwd;
	const http_parser *p = &f->resp.p;
	const struct proxy_head *h = &f->resp.h;
	unsigned st = p->status_code;
	evbuffer_add_printf(out, "HTTP/1.1 %u ", st);
	evbuffer_add(out, h->arena + h->url, h->url_len);
	evbuffer_add(out, "\r\n", 2);
	copy_fields(out, h, 0);
	if (st == 101) {
		evbuffer_add(out, "Connection: upgrade\r\nUpgrade: websocket\r\n\r\n", 43);
		return;
	}
	if (st >= 100 && st < 200) {
		evbuffer_add(out, "\r\n", 2);
		return;
	}
	int no_body = f->resp.no_body || st == 204 || st == 304;
	if (no_body) {
		size_t n;
		const char *cl = proxy_h1_get(&f->resp, "content-length", &n);
		if (cl != NULL) {
			evbuffer_add(out, "Content-Length: ", 16);
			evbuffer_add(out, cl, n);
			evbuffer_add(out, "\r\n", 2);
		}
	} else if ((p->flags & F_CHUNKED) && !f->client_http10) {
		f->resp_chunked = 1;
		evbuffer_add(out, "Transfer-Encoding: chunked\r\n", 28);
	} else if (p->flags & F_CHUNKED) {
		/* An HTTP/1.0 client knows no chunks: the body goes unframed and the close ends it. */
		f->resp_dechunk = 1;
	} else if ((p->flags & F_CONTENTLENGTH) && p->content_length != ULLONG_MAX) {
		evbuffer_add_printf(out, "Content-Length: %" PRIu64 "\r\n", (uint64_t)p->content_length);
	} else {
		f->resp_eof_framed = 1;
	}
	if (f->req_keepalive && !f->resp_eof_framed && !f->resp_dechunk && !c->srv->stopping)
		evbuffer_add(out, "Connection: keep-alive\r\n\r\n", 26);
	else
		evbuffer_add(out, "Connection: close\r\n\r\n", 21);
}

static void upstream_error(struct proxy_conn *c, const char *why)
{
	if (c->fwd->resp_sent) {
		proxy_conn_close(c, "error");
		return;
	}
	struct proxy_outcome o;
	char rule[240];
	snprintf(rule, sizeof rule, "upstream %s: %s", c->up.addr_text, why);
	proxy_outcome_set(&o, 502, "upstream-error", rule,
	        "The destination did not send a valid HTTP response");
	proxy_deny(c, &o);
}

/* The response is complete: keep both sides for the next request, or finish. */
static void response_done(struct proxy_conn *c)
{
	struct proxy_fwd *f = c->fwd;
	if (f->resp_chunked)
		evbuffer_add(bufferevent_get_output(c->client.bev), "0\r\n\r\n", 5);
	proxy_flush(c->client.bev);
	int reuse = !f->resp_eof_framed && http_should_keep_alive(&f->resp.p) &&
	            f->req.h.msg_complete && !c->up.eof && c->up.bev != NULL &&
	            evbuffer_get_length(bufferevent_get_input(c->up.bev)) == 0;
	/* Why this connection ends here, if it does: egressd stopping, the upstream's framing or
	 * its Connection: close, or else the client's request (close, half-close, HTTP/1.0). */
	const char *end = c->srv->stopping ? "shutdown"
	                  : f->resp_eof_framed || f->resp_dechunk ||
	                                  !http_should_keep_alive(&f->resp.p) || c->up.eof
	                          ? "upstream-closed"
	                          : "client-closed";
	if (f->in_tunnel && !reuse) {
		/* The tunnel's upstream is the only one it may use. */
		proxy_conn_finish(c, end);
		return;
	}
	if (reuse)
		proxy_up_set(c, PROXY_UP_IDLE);
	else
		proxy_up_drop(c);
	/* A client that half-closed is answered what it sent before its end, then closed. */
	struct evbuffer *in = bufferevent_get_input(c->client.bev);
	if (!f->req_keepalive || f->resp_eof_framed || f->resp_dechunk || c->srv->stopping ||
	        !f->req.h.msg_complete || (c->client.eof && evbuffer_get_length(in) == 0)) {
		proxy_conn_finish(c, end);
		return;
	}
	proxy_h1_reset(&f->req);
	proxy_h1_free(&f->resp);
	proxy_client_set(c, PROXY_CLIENT_REQUEST);
	if (!c->client.eof)
		bufferevent_enable(c->client.bev, EV_READ);
	if (evbuffer_get_length(in) > 0)
		proxy_fwd_client_read(c);
}

/* The response head is complete: send it (when the session's budget holds it). */
static int response_head(struct proxy_conn *c)
{
	struct proxy_fwd *f = c->fwd;
	unsigned st = f->resp.p.status_code;
	if (st == 101 && !f->upgrade) {
		upstream_error(c, "protocol upgrade refused");
		return -1;
	}
	struct evbuffer *head = evbuffer_new();
	if (head == NULL) {
		proxy_conn_close(c, "error");
		return -1;
	}
	build_response_head(c, head);
	size_t n = evbuffer_get_length(head);
	if (n > proxy_conn_room(c, 0)) {
		evbuffer_free(head);
		struct proxy_outcome o;
		proxy_outcome_set(&o, 429, "limit-bytes", "limits.maxBytesIn",
		        "The response is larger than what the session may still receive");
		proxy_deny(c, &o);
		return -1;
	}
	proxy_count(c, 0, n);
	evbuffer_add_buffer(bufferevent_get_output(c->client.bev), head);
	evbuffer_free(head);
	f->resp_sent = 1;
	if (st == 101) {
		/* A websocket: from here both ways are bytes, relayed as a tunnel under the same
		 * decision and the same byte limits.  http-parser paused before the head's last LF,
		 * which is not the new protocol's. */
		struct evbuffer *uin = bufferevent_get_input(c->up.bev);
		if (evbuffer_get_length(uin) > 0 && *evbuffer_pullup(uin, 1) == '\n')
			evbuffer_drain(uin, 1);
		proxy_fwd_free(c);
		c->carries = ALLOW_TUNNEL_OTHER;
		proxy_tunnel_relay(c);
		return -1;
	}
	proxy_h1_resume(&f->resp);
	return 0;
}

void proxy_fwd_upstream_read(struct proxy_conn *c)
{
	struct proxy_fwd *f = c->fwd;
	struct evbuffer *in = bufferevent_get_input(c->up.bev);
	for (;;) {
		enum proxy_h1_feed r = proxy_h1_feed(&f->resp, in);
		if (r == PROXY_H1_ERROR) {
			if (f->cut)
				proxy_conn_close(c, "limit-bytes");
			else
				upstream_error(c, http_errno_description(HTTP_PARSER_ERRNO(&f->resp.p)));
			return;
		}
		if (r == PROXY_H1_MORE)
			break;
		if (f->resp.h.complete && !f->resp_sent) {
			if (response_head(c) == -1)
				return;
			continue;
		}
		if (f->resp.h.msg_complete) {
			unsigned st = f->resp.p.status_code;
			if (st >= 100 && st < 200) {
				/* An interim answer: the final one follows on the same parser. */
				proxy_h1_reset(&f->resp);
				f->resp.no_body = strcmp(c->rq.method, "HEAD") == 0;
				f->resp_sent = 0;
				continue;
			}
			response_done(c);
			return;
		}
		break;
	}
	proxy_flush(c->client.bev);
	/* A long body that goes out as it comes, once the head is out: splice the rest. */
	if (!c->inspected && f->resp_sent && !f->resp.h.msg_complete && !f->resp_chunked &&
	        !f->resp_dechunk &&
	        evbuffer_get_length(in) == 0 &&
	        evbuffer_get_length(bufferevent_get_output(c->client.bev)) == 0) {
		uint64_t left = f->resp_eof_framed ? UINT64_MAX : f->resp.p.content_length;
		if (left >= PROXY_BODY_SPLICE_MIN && proxy_body_splice_start(c, left) == 0)
			return;
	}
	if (evbuffer_get_length(bufferevent_get_output(c->client.bev)) >= PROXY_HIGH_WATER)
		bufferevent_disable(c->up.bev, EV_READ);
}

void proxy_fwd_body_done(struct proxy_conn *c, int eof)
{
	c->fwd->resp.h.msg_complete = 1;
	if (eof) {
		c->up.eof = 1;
	} else {
		/* Bytes (or a FIN) behind the body answer nothing that was asked: such an upstream is
		 * not reused, or a pipelined next request would take them for its answer.  The
		 * splice left them in the socket, where only a peek sees them. */
		char ch;
		ssize_t n = recv((int)bufferevent_getfd(c->up.bev), &ch, 1, MSG_PEEK | MSG_DONTWAIT);
		if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			c->up.eof = 1;
		else
			bufferevent_enable(c->up.bev, EV_READ); /* an idle upstream that speaks is dropped */
	}
	response_done(c);
}

void proxy_fwd_upstream_eof(struct proxy_conn *c)
{
	struct proxy_fwd *f = c->fwd;
	if (f->resp_sent && (f->resp_eof_framed || f->resp_dechunk || f->resp.h.msg_complete)) {
		if (proxy_h1_eof(&f->resp) == 0 && (f->resp.h.msg_complete || f->resp_eof_framed)) {
			f->resp.h.msg_complete = 1;
			response_done(c);
			return;
		}
	}
	if (!f->resp_sent)
		upstream_error(c, "closed the connection before answering");
	else
		proxy_conn_close(c, "upstream-closed");
}
