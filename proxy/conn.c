/* Connections: accept, the two halves and their states, the timer, the upstream dial, and the
 * one close function every path ends in.  See docs/connection.md. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

#include <openssl/ssl.h>

#include "audit/audit.h"
#include "proxy/proxy.h"

/* ---- states ---- */

static const char *const client_names[] = {
        [PROXY_CLIENT_REQUEST] = "request",
        [PROXY_CLIENT_WAIT] = "wait",
        [PROXY_CLIENT_FORWARD] = "forward",
        [PROXY_CLIENT_PEEK] = "peek",
        [PROXY_CLIENT_TUNNEL] = "tunnel",
        [PROXY_CLIENT_ANSWER] = "answer",
        [PROXY_CLIENT_CLOSED] = "closed",
};

static const char *const up_names[] = {
        [PROXY_UP_NONE] = "none",
        [PROXY_UP_RESOLVING] = "resolving",
        [PROXY_UP_CONNECTING] = "connecting",
        [PROXY_UP_IDLE] = "idle",
        [PROXY_UP_ACTIVE] = "active",
};

/* Every change of the client half goes through here: it sets the deadline the state implies
 * and re-arms the timer, so that no caller has to remember either. */
void proxy_client_set(struct proxy_conn *c, enum proxy_client_state st)
{
#ifdef EGRESSD_TRACE
	fprintf(stderr, "conn %llu: client %s -> %s\n", (unsigned long long)c->id,
	        client_names[c->client.state], client_names[st]);
#else
	(void)client_names;
#endif
	if (c->client.state == PROXY_CLIENT_CLOSED)
		return;
	const struct allow_global_limits *lim = &c->srv->gen->cfg->limits;
	uint64_t now = proxy_now_ms();
	c->client.state = st;
	c->client.deadline_ms = 0;
	if (st == PROXY_CLIENT_REQUEST)
		c->client.deadline_ms =
		        now + (c->requests > 0 ? lim->idle_timeout_ms : lim->header_timeout_ms);
	else if (st == PROXY_CLIENT_ANSWER)
		c->client.deadline_ms = now + 10000; /* to write the answer; then it lingers */
	if (st == PROXY_CLIENT_FORWARD || st == PROXY_CLIENT_PEEK || st == PROXY_CLIENT_TUNNEL)
		c->last_active_ms = now;
	if (st != PROXY_CLIENT_CLOSED)
		proxy_conn_rearm(c);
}

/* The same for the upstream half. */
void proxy_up_set(struct proxy_conn *c, enum proxy_up_state st)
{
#ifdef EGRESSD_TRACE
	fprintf(stderr, "conn %llu: up %s -> %s\n", (unsigned long long)c->id, up_names[c->up.state],
	        up_names[st]);
#else
	(void)up_names;
#endif
	c->up.state = st;
	c->up.deadline_ms = 0;
	if (st == PROXY_UP_CONNECTING)
		c->up.deadline_ms = proxy_now_ms() + c->srv->gen->cfg->limits.connect_timeout_ms;
	if (!proxy_conn_closed(c))
		proxy_conn_rearm(c);
}

void proxy_conn_touch(struct proxy_conn *c)
{
	c->last_active_ms = proxy_now_ms();
}

static int carrying(const struct proxy_conn *c)
{
	return c->client.state == PROXY_CLIENT_FORWARD || c->client.state == PROXY_CLIENT_PEEK ||
	       c->client.state == PROXY_CLIENT_TUNNEL;
}

/* What the session's expiry ends (docs/design.md 4.4): a connection that carries bytes, and a
 * plain-HTTP tunnel between its requests, which is still an open tunnel. */
static int ends_at_expiry(const struct proxy_conn *c)
{
	return c->session != NULL &&
	       (carrying(c) || (c->client.state == PROXY_CLIENT_REQUEST &&
	                               (c->rq.tunnel || c->rq.fixed_upstream)));
}

/* The nearest deadline: the client's (a head, an answer), the upstream's connect, the idle
 * timeout of a connection that carries bytes, and the session's expiry, which ends what a
 * connection carries (docs/design.md 4.4). */
static uint64_t next_deadline(const struct proxy_conn *c)
{
	uint64_t d = UINT64_MAX;
	if (c->client.deadline_ms != 0)
		d = c->client.deadline_ms;
	if (c->client.flush_poll_ms != 0 && c->client.flush_poll_ms < d)
		d = c->client.flush_poll_ms;
	if (c->up.deadline_ms != 0 && c->up.deadline_ms < d)
		d = c->up.deadline_ms;
	if (carrying(c)) {
		uint64_t idle = c->last_active_ms + c->srv->gen->cfg->limits.idle_timeout_ms;
		if (idle < d)
			d = idle;
	}
	if (ends_at_expiry(c)) {
		uint64_t e = proxy_session_expiry(c->session);
		if (e < d)
			d = e;
	}
	return d;
}

void proxy_conn_rearm(struct proxy_conn *c)
{
	if (c->timer == NULL)
		return;
	uint64_t d = next_deadline(c);
	if (d == c->timer_at)
		return;
	if (d == UINT64_MAX) {
		evtimer_del(c->timer);
		c->timer_at = 0;
		return;
	}
	uint64_t now = proxy_now_ms();
	uint64_t ms = d > now ? d - now : 0;
	struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
	evtimer_add(c->timer, &tv);
	c->timer_at = d;
}

/* ---- small helpers ---- */

/* libevent reads and writes 16 KiB at a time by default; bulk transfers want fewer, larger
 * system calls.  Buffers still grow only as data arrives. */
void proxy_bev_tune(struct bufferevent *bev)
{
	bufferevent_set_max_single_read(bev, PROXY_HIGH_WATER);
	bufferevent_set_max_single_write(bev, PROXY_HIGH_WATER);
}

/* Writes what bev's output holds straight to its socket.  libevent would instead add a write
 * event, wait for the loop to report the socket writable, write, and delete the event: two
 * epoll_ctl calls and a loop turn for every answer.  EV_WRITE stays disabled while nothing is
 * left over; leftovers (a slow reader) enable it, and the write callback disables it again once
 * the output is empty.  An error is left for the write event to report. */
void proxy_flush(struct bufferevent *bev)
{
	struct evbuffer *out = bufferevent_get_output(bev);
	/* A TLS filter writes through its own layer (a direct write would skip the encryption):
	 * let it, whenever it has something. */
	if (bufferevent_get_underlying(bev) != NULL) {
		if (evbuffer_get_length(out) > 0)
			bufferevent_enable(bev, EV_WRITE);
		return;
	}
	if (evbuffer_get_length(out) == 0 || (bufferevent_get_enabled(bev) & EV_WRITE))
		return;
	evbuffer_unfreeze(out, 1);
	evbuffer_write(out, bufferevent_getfd(bev));
	evbuffer_freeze(out, 1);
	if (evbuffer_get_length(out) > 0)
		bufferevent_enable(bev, EV_WRITE);
}

void proxy_count(struct proxy_conn *c, uint64_t out, uint64_t in)
{
	c->bytes_out += out;
	c->bytes_in += in;
	if (c->session != NULL) {
		c->session->bytes_out += out;
		c->session->bytes_in += in;
	}
}

uint64_t proxy_conn_room(const struct proxy_conn *c, int out)
{
	return c->session != NULL ? proxy_session_room(c->session, out) : UINT64_MAX;
}

void proxy_format_addr(const struct dns_addr *a, uint16_t port, char *buf, size_t cap)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	inet_ntop(a->family, a->addr, ip, sizeof ip);
	if (a->family == AF_INET6)
		snprintf(buf, cap, "[%s]:%u", ip, port);
	else
		snprintf(buf, cap, "%s:%u", ip, port);
}

void proxy_request_clear(struct proxy_request *rq)
{
	free(rq->path);
	free(rq->rule);
	if (rq->pass != NULL)
		explicit_bzero(rq->pass, rq->pass_len);
	free(rq->user);
	free(rq->pass);
	memset(rq, 0, sizeof *rq);
}

/* ---- close ---- */

void proxy_up_drop(struct proxy_conn *c)
{
	if (c->up.dnsq != NULL) {
		dns_query_cancel(c->up.dnsq);
		c->up.dnsq = NULL;
	}
	if (c->up.bev != NULL) {
		bufferevent_free(c->up.bev);
		c->up.bev = NULL;
		c->srv->nsockets--;
	}
	free(c->up.addrs);
	c->up.addrs = NULL;
	c->up.naddrs = c->up.next = 0;
	free(c->up.key);
	c->up.key = NULL;
	c->up.eof = 0;
	c->up.addr_text[0] = '\0';
	proxy_up_set(c, PROXY_UP_NONE);
}

void proxy_conn_close(struct proxy_conn *c, const char *end)
{
	if (proxy_conn_closed(c))
		return;
	struct proxy_server *srv = c->srv;
	c->end = end;
	proxy_audit_wait_cancel(c);
	struct audit_rec r;
	audit_rec_init(&r);
	r.event = "close";
	r.conn = c->id;
	r.front = c->door != NULL ? c->door : c->rq.front != NULL ? c->rq.front : c->front->name;
	r.session = c->session ? c->session->name : NULL;
	r.client = c->client_text;
	r.bytes_out = (int64_t)c->bytes_out;
	r.bytes_in = (int64_t)c->bytes_in;
	r.duration_ms = (int64_t)(proxy_now_ms() - c->start_ms);
	r.end = end;
	/* Kept while the log cannot take it; a failure is said once by the log's notice. */
	audit_write(srv->audit, &r, AUDIT_EVENT);

	c->client.state = PROXY_CLIENT_CLOSED;
	proxy_splice_free(c);
	proxy_body_splice_free(c);
	proxy_tunnel_free(c);
	if (c->client.bev != NULL) {
		bufferevent_free(c->client.bev);
		c->client.bev = NULL;
		srv->nsockets--;
	}
	if (c->up.state == PROXY_UP_IDLE && c->up.key != NULL && c->up.bev != NULL)
		proxy_pool_put(c);
	proxy_up_drop(c);
	proxy_fwd_free(c);
	if (c->front != NULL && c->front->release != NULL)
		c->front->release(c);
	if (c->timer != NULL) {
		event_free(c->timer);
		c->timer = NULL;
	}
	proxy_request_clear(&c->rq);
	free((char *)c->up_tls_error);
	c->up_tls_error = NULL;
	if (c->gen != NULL) {
		proxy_gen_release(c->gen);
		c->gen = NULL;
	}
	if (c->source_counted) {
		proxy_source_del(srv, &c->peer);
		c->source_counted = 0;
	}
	if (c->session != NULL) {
		if (c->session_counted)
			c->session->active--;
		proxy_session_release(srv, c->session);
		c->session = NULL;
	}
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	srv->nconns--;
	c->prev = NULL;
	c->next = srv->dead;
	srv->dead = c;
	event_active(srv->reap, EV_TIMEOUT, 0);
}

/* The answer's bytes are out: shut the sending side and keep reading (and dropping) for a
 * while, so that a client still sending its request reads the answer instead of a reset. */
static void linger(struct proxy_conn *c)
{
	struct bufferevent *bev = c->client.bev;
	struct bufferevent *under = bufferevent_get_underlying(bev);
	if (under != NULL) {
		/* A TLS filter's answer is ciphertext in the socket's buffer still: write it out
		 * before the socket shuts (a slow reader keeps the answer's deadline). */
		struct evbuffer *out = bufferevent_get_output(under);
		evbuffer_unfreeze(out, 1);
		while (evbuffer_get_length(out) > 0 && evbuffer_write(out, bufferevent_getfd(under)) > 0)
			;
		evbuffer_freeze(out, 1);
		if (evbuffer_get_length(out) > 0) {
			/* A slow reader: try again shortly, until the answer's deadline. */
			c->client.flush_poll_ms = proxy_now_ms() + PROXY_FLUSH_POLL_MS;
			proxy_conn_rearm(c);
			return;
		}
	}
	c->client.flush_poll_ms = 0;
	if (c->client.eof) {
		proxy_conn_close(c, c->end);
		return;
	}
	shutdown(bufferevent_getfd(bev), SHUT_WR);
	bufferevent_disable(bev, EV_WRITE);
	bufferevent_setwatermark(bev, EV_READ, 0, 0);
	bufferevent_enable(bev, EV_READ);
	c->client.deadline_ms = proxy_now_ms() + PROXY_LINGER_MS;
	proxy_conn_rearm(c);
}

void proxy_conn_finish(struct proxy_conn *c, const char *end)
{
	if (proxy_conn_closed(c))
		return;
	proxy_body_splice_free(c);
	proxy_up_drop(c);
	if (c->client.bev == NULL) {
		proxy_conn_close(c, end);
		return;
	}
	c->end = end;
	proxy_client_set(c, PROXY_CLIENT_ANSWER);
	struct bufferevent *bev = c->client.bev;
	evbuffer_drain(bufferevent_get_input(bev), evbuffer_get_length(bufferevent_get_input(bev)));
	proxy_flush(bev);
	if (evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
		linger(c);
		return;
	}
	bufferevent_setwatermark(bev, EV_WRITE, 0, 0);
	bufferevent_enable(bev, EV_WRITE);
	/* Keep reading so that a client closing early is noticed; what it sends is dropped. */
	bufferevent_setwatermark(bev, EV_READ, 0, 0);
	bufferevent_enable(bev, EV_READ);
}

/* ---- client half callbacks ---- */

static void client_read_cb(struct bufferevent *bev, void *arg)
{
	struct proxy_conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	switch (c->client.state) {
	case PROXY_CLIENT_REQUEST:
		proxy_conn_touch(c);
		if (c->fwd != NULL)
			proxy_fwd_client_read(c);
		else
			c->front->read(c);
		break;
	case PROXY_CLIENT_FORWARD:
		proxy_conn_touch(c);
		proxy_fwd_client_read(c);
		break;
	case PROXY_CLIENT_PEEK:
		proxy_conn_touch(c);
		proxy_tunnel_client_read(c);
		break;
	case PROXY_CLIENT_ANSWER:
		c->client.linger_bytes += evbuffer_get_length(in);
		evbuffer_drain(in, evbuffer_get_length(in));
		if (c->client.linger_bytes > PROXY_LINGER_BYTES)
			proxy_conn_close(c, c->end);
		break;
	default:
		/* Waiting for the pipeline: what came waits in the buffer, which the read watermark
		 * caps. */
		break;
	}
}

static void client_write_cb(struct bufferevent *bev, void *arg)
{
	struct proxy_conn *c = arg;
	int empty = evbuffer_get_length(bufferevent_get_output(bev)) == 0;
	switch (c->client.state) {
	case PROXY_CLIENT_ANSWER:
		if (empty)
			linger(c);
		break;
	case PROXY_CLIENT_FORWARD:
		/* A client that keeps taking bytes is not idle. */
		proxy_conn_touch(c);
		if (empty)
			bufferevent_disable(bev, EV_WRITE);
		proxy_fwd_client_drained(c);
		break;
	case PROXY_CLIENT_PEEK:
		proxy_conn_touch(c);
		if (empty)
			bufferevent_disable(bev, EV_WRITE);
		if (c->up.bev != NULL && !c->up.eof)
			bufferevent_enable(c->up.bev, EV_READ);
		break;
	default:
		if (empty)
			bufferevent_disable(bev, EV_WRITE);
		break;
	}
}

static void client_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	struct proxy_conn *c = arg;
	if (what & BEV_EVENT_CONNECTED) {
		c->client_tls_done = 1; /* the client's TLS handshake with egressd (inspect.c) */
		return;
	}
	if (c->inspected && !c->client_tls_done && (what & (BEV_EVENT_ERROR | BEV_EVENT_EOF))) {
		proxy_inspect_client_failed(c);
		return;
	}
	int eof = (what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR);
	switch (c->client.state) {
	case PROXY_CLIENT_ANSWER:
		/* The client is done: an answer still being written goes out in full first (the
		 * write callback closes once it has). */
		if (eof && evbuffer_get_length(bufferevent_get_output(c->client.bev)) > 0) {
			c->client.eof = 1;
			bufferevent_disable(c->client.bev, EV_READ);
			return;
		}
		proxy_conn_close(c, c->end);
		return;
	case PROXY_CLIENT_WAIT:
		/* A client may half-close once its request is sent (HTTP/1.1 allows it; nc and
		 * scripts do it): a request without a body still gets its answer. */
		if (eof && (c->rq.tunnel || (c->fwd != NULL && proxy_fwd_request_sent(c)))) {
			c->client.eof = 1;
			bufferevent_disable(c->client.bev, EV_READ);
			return;
		}
		break;
	case PROXY_CLIENT_FORWARD:
		if (eof && proxy_fwd_request_sent(c)) {
			c->client.eof = 1;
			bufferevent_disable(c->client.bev, EV_READ);
			proxy_fwd_client_read(c);
			return;
		}
		break;
	case PROXY_CLIENT_REQUEST:
		/* Pipelined requests already in the buffer are still answered (forward.c). */
		if (eof && c->fwd != NULL &&
		        evbuffer_get_length(bufferevent_get_input(c->client.bev)) > 0) {
			c->client.eof = 1;
			bufferevent_disable(c->client.bev, EV_READ);
			proxy_fwd_client_read(c);
			return;
		}
		break;
	case PROXY_CLIENT_PEEK:
		if (eof) {
			c->client.eof = 1;
			bufferevent_disable(c->client.bev, EV_READ);
			proxy_tunnel_client_read(c);
			return;
		}
		break;
	default:
		break;
	}
	proxy_conn_close(c, (what & BEV_EVENT_ERROR) ? "error" : "client-closed");
}

/* ---- upstream half callbacks ---- */

/* An idle kept-alive upstream spoke or ended: a forward proxy's is dropped (the next request
 * dials again), a tunnel's ends the tunnel. */
static void idle_upstream_gone(struct proxy_conn *c)
{
	if (c->rq.fixed_upstream)
		proxy_conn_close(c, "upstream-closed");
	else
		proxy_up_drop(c);
}

static void up_read_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	struct proxy_conn *c = arg;
	if (c->up.state != PROXY_UP_ACTIVE) {
		/* An idle kept-alive upstream must not speak. */
		idle_upstream_gone(c);
		return;
	}
	proxy_conn_touch(c);
	if (c->client.state == PROXY_CLIENT_PEEK)
		proxy_tunnel_upstream_read(c);
	else if (c->fwd != NULL)
		proxy_fwd_upstream_read(c);
}

static void up_write_cb(struct bufferevent *bev, void *arg)
{
	struct proxy_conn *c = arg;
	if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		bufferevent_disable(bev, EV_WRITE);
	if (c->up.state != PROXY_UP_ACTIVE)
		return;
	proxy_conn_touch(c);
	if (c->client.state == PROXY_CLIENT_PEEK) {
		if (c->client.bev != NULL && !c->client.eof)
			bufferevent_enable(c->client.bev, EV_READ);
		proxy_tunnel_client_read(c);
	} else if (c->fwd != NULL) {
		proxy_fwd_upstream_drained(c);
	}
}

static void dial_next(struct proxy_conn *c, int last_err);
static void upstream_ready(struct proxy_conn *c);

static void up_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	struct proxy_conn *c = arg;
	if (c->up.state == PROXY_UP_CONNECTING) {
		if (what & BEV_EVENT_CONNECTED) {
			upstream_ready(c);
			return;
		}
		int err = EVUTIL_SOCKET_ERROR();
		bufferevent_free(c->up.bev);
		c->up.bev = NULL;
		c->srv->nsockets--;
		dial_next(c, err ? err : ECONNREFUSED);
		return;
	}
	if (what & BEV_EVENT_CONNECTED) {
		/* egressd's TLS handshake with the upstream (inspect.c) is done: its deadline goes */
		bufferevent_set_timeouts(c->up.bev, NULL, NULL);
		return;
	}
	if (c->inspected && (what & BEV_EVENT_TIMEOUT)) {
		proxy_inspect_upstream_timeout(c);
		return;
	}
	if (c->inspected && (what & BEV_EVENT_ERROR)) {
		proxy_inspect_upstream_failed(c);
		return;
	}
	if (c->up.state != PROXY_UP_ACTIVE) {
		idle_upstream_gone(c);
		return;
	}
	if (!(what & BEV_EVENT_EOF) || (what & BEV_EVENT_ERROR)) {
		proxy_conn_close(c, "error");
		return;
	}
	c->up.eof = 1;
	bufferevent_disable(c->up.bev, EV_READ);
	if (c->client.state == PROXY_CLIENT_PEEK)
		proxy_tunnel_upstream_read(c);
	else if (c->fwd != NULL)
		proxy_fwd_upstream_eof(c);
	else
		proxy_conn_close(c, "upstream-closed");
}

int proxy_conn_wrap_tls(struct proxy_conn *c, SSL *client_ssl, SSL *up_ssl)
{
	/* With BEV_OPT_CLOSE_ON_FREE libevent frees the SSL itself when the filter cannot be
	 * made. */
	struct bufferevent *client_under = c->client.bev, *up_under = c->up.bev;
	struct bufferevent *cb = bufferevent_openssl_filter_new(c->srv->base, client_under,
	        client_ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
	if (cb == NULL) {
		SSL_free(up_ssl);
		return -1;
	}
	c->client.bev = cb;
	struct bufferevent *ub = bufferevent_openssl_filter_new(c->srv->base, up_under, up_ssl,
	        BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
	if (ub == NULL)
		return -1;
	c->up.bev = ub;
	/* Backpressure through the filters: ciphertext stops moving into a socket's buffer at the
	 * high mark, so plaintext backs up in the filter's output, where the HTTP exchange looks
	 * (forward.c); and the client is not read past a head's worth while nothing takes it. */
	bufferevent_setwatermark(client_under, EV_WRITE, 0, PROXY_HIGH_WATER);
	bufferevent_setwatermark(up_under, EV_WRITE, 0, PROXY_HIGH_WATER);
	bufferevent_setwatermark(cb, EV_READ, 0,
	        (size_t)c->srv->gen->cfg->limits.max_header_bytes + 16384);
	c->inspected = 1;
	/* The whole exchange inside, and libevent's SSL layer, need their own marks. */
	bufferevent_openssl_set_allow_dirty_shutdown(cb, 1);
	bufferevent_openssl_set_allow_dirty_shutdown(ub, 1);
	bufferevent_setcb(cb, client_read_cb, client_write_cb, client_event_cb, c);
	bufferevent_setcb(ub, up_read_cb, up_write_cb, up_event_cb, c);
	bufferevent_setwatermark(cb, EV_WRITE, PROXY_LOW_WATER, 0);
	bufferevent_setwatermark(ub, EV_WRITE, PROXY_LOW_WATER, 0);
	bufferevent_enable(cb, EV_READ);
	bufferevent_enable(ub, EV_READ);
	/* The handshake with the upstream must finish within connectTimeout, as the connect did
	 * (a server that accepts and then says nothing held the request until idleTimeout). */
	uint64_t ms = c->srv->gen->cfg->limits.connect_timeout_ms;
	struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
	bufferevent_set_timeouts(ub, &tv, &tv);
	return 0;
}

void proxy_conn_adopt_upstream(struct proxy_conn *c)
{
	bufferevent_setcb(c->up.bev, up_read_cb, up_write_cb, up_event_cb, c);
	bufferevent_disable(c->up.bev, EV_WRITE);
	bufferevent_enable(c->up.bev, EV_READ);
	proxy_up_set(c, PROXY_UP_IDLE);
}

/* ---- dialling ---- */

static void sockaddr_from(const struct dns_addr *a, uint16_t port, struct sockaddr_storage *ss,
        socklen_t *len)
{
	memset(ss, 0, sizeof *ss);
	if (a->family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		memcpy(&s4->sin_addr, a->addr, 4);
		*len = sizeof *s4;
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		memcpy(&s6->sin6_addr, a->addr, 16);
		*len = sizeof *s6;
	}
}

static void set_nodelay(evutil_socket_t fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* The upstream is connected: from here it is written through (proxy_flush). */
static void upstream_ready(struct proxy_conn *c)
{
	set_nodelay(bufferevent_getfd(c->up.bev));
	bufferevent_disable(c->up.bev, EV_WRITE);
	free(c->up.addrs);
	c->up.addrs = NULL;
	proxy_up_set(c, PROXY_UP_ACTIVE);
	proxy_conn_touch(c);
	proxy_pipeline_connected(c);
}

/* Starts a non-blocking connect to ss: 1 when it completed at once, 0 when it is in progress
 * (then the bufferevent waits for it), -1 with errno when it failed.  A loopback or same-host
 * connect is usually complete by the time connect() returns EINPROGRESS: asking again (a second
 * connect() returns 0 once established, EALREADY while not) saves a loop turn and three system
 * calls on every such connection, for one extra call on the others. */
static int dial(struct proxy_conn *c, const struct sockaddr_storage *ss, socklen_t len)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	int done = connect(fd, (const struct sockaddr *)ss, len) == 0;
	if (!done && errno == EINPROGRESS) {
		done = connect(fd, (const struct sockaddr *)ss, len) == 0 || errno == EISCONN;
		if (!done && errno != EALREADY && errno != EINPROGRESS) {
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
	} else if (!done) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	proxy_fd_reserve(c->srv, fd);
	c->up.bev = bufferevent_socket_new(c->srv->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->up.bev == NULL) {
		close(fd);
		errno = ENOMEM;
		return -1;
	}
	c->srv->nsockets++;
	proxy_bev_tune(c->up.bev);
	bufferevent_setcb(c->up.bev, up_read_cb, up_write_cb, up_event_cb, c);
	if (done)
		return 1;
	/* No address: libevent takes the socket as connecting and reports when it is done. */
	if (bufferevent_socket_connect(c->up.bev, NULL, 0) == -1) {
		bufferevent_free(c->up.bev);
		c->up.bev = NULL;
		c->srv->nsockets--;
		errno = ECONNREFUSED;
		return -1;
	}
	return 0;
}

static void dial_next(struct proxy_conn *c, int last_err)
{
	while (c->up.next < c->up.naddrs) {
		const struct dns_addr *a = &c->up.addrs[c->up.next++];
		struct sockaddr_storage ss;
		socklen_t len;
		sockaddr_from(a, c->rq.dest.port, &ss, &len);
		c->up.addr = *a;
		c->up.port = c->rq.dest.port;
		proxy_format_addr(a, c->rq.dest.port, c->up.addr_text, sizeof c->up.addr_text);
		c->rq.dialled = 1;
		int r = dial(c, &ss, len);
		if (r == -1) {
			last_err = errno;
			continue;
		}
		if (r == 1) {
			upstream_ready(c);
			return;
		}
		proxy_up_set(c, PROXY_UP_CONNECTING);
		return;
	}
	struct proxy_outcome o;
	proxy_outcome_set(&o, 502, "upstream-refused", NULL,
	        "The destination refused the connection or could not be reached; egressd allowed "
	        "it, so retry later or check that the service is up");
	snprintf(o.rule, sizeof o.rule, "connect %s: %s",
	        c->up.addr_text[0] ? c->up.addr_text : c->rq.dest.host, strerror(last_err));
	proxy_up_drop(c);
	proxy_deny(c, &o);
}

void proxy_up_dial(struct proxy_conn *c)
{
	c->up.next = 0;
	dial_next(c, ECONNREFUSED);
}

/* ---- the timer ---- */

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct proxy_conn *c = arg;
	uint64_t now = proxy_now_ms();
	c->timer_at = 0;
	if (c->up.state == PROXY_UP_CONNECTING && now >= c->up.deadline_ms) {
		struct proxy_outcome o;
		proxy_outcome_set(&o, 504, "upstream-timeout", NULL,
		        "The destination did not accept the connection within limits.connectTimeout");
		snprintf(o.rule, sizeof o.rule, "limits.connectTimeout (connect %s)", c->up.addr_text);
		proxy_up_drop(c);
		proxy_deny(c, &o);
		return;
	}
	if (ends_at_expiry(c) && now >= proxy_session_expiry(c->session)) {
		proxy_conn_close(c, "session-expired");
		return;
	}
	switch (c->client.state) {
	case PROXY_CLIENT_REQUEST:
		if (now < c->client.deadline_ms)
			break;
		if (c->inspected && !c->client_tls_done) {
			proxy_inspect_client_timeout(c);
			return;
		}
		if (c->fwd != NULL) {
			proxy_fwd_client_read(c); /* it sees the deadline passed (forward.c) */
			return;
		}
		if (c->front->timeout != NULL) {
			c->front->timeout(c);
			return;
		}
		proxy_conn_close(c, "header-timeout");
		return;
	case PROXY_CLIENT_FORWARD:
	case PROXY_CLIENT_TUNNEL:
		if (now - c->last_active_ms >= c->srv->gen->cfg->limits.idle_timeout_ms) {
			proxy_conn_close(c, "idle-timeout");
			return;
		}
		break;
	case PROXY_CLIENT_PEEK:
		if (now - c->last_active_ms >= c->srv->gen->cfg->limits.idle_timeout_ms ||
		        (c->client.deadline_ms != 0 && now >= c->client.deadline_ms)) {
			proxy_tunnel_client_read(c); /* it sees the deadline passed (tunnel.c) */
			return;
		}
		break;
	case PROXY_CLIENT_ANSWER:
		if (now >= c->client.deadline_ms) {
			proxy_conn_close(c, c->end);
			return;
		}
		if (c->client.flush_poll_ms != 0 && now >= c->client.flush_poll_ms) {
			c->client.flush_poll_ms = 0;
			linger(c);
			return;
		}
		break;
	default:
		break;
	}
	proxy_conn_rearm(c);
}

/* ---- accept ---- */

/* A connection refused at accept (limit-clients): an HTTP client gets a one-line 503; a SOCKS5
 * client, which has not even sent its greeting, could read no answer in its protocol and gets
 * the close alone. */
static void reject_busy(int fd, const struct proxy_listener *l, const char *rule)
{
	if (l->kind != PROXY_LISTEN_HTTP) {
		close(fd);
		return;
	}
	char head[512];
	static const char body[] = "egressd is serving as many connections as it may; try again "
	                           "shortly.\n";
	int n = snprintf(head, sizeof head,
	        "HTTP/1.1 503 Service Unavailable\r\n"
	        "X-Egressd-Reason: limit-clients\r\n"
	        "X-Egressd-Rule: %s\r\n"
	        "Retry-After: 1\r\n"
	        "Content-Type: text/plain; charset=utf-8\r\n"
	        "Connection: close\r\n"
	        "Content-Length: %zu\r\n\r\n%s",
	        rule, sizeof body - 1, body);
	/* One non-blocking write: a client that cannot take 300 bytes gets nothing. */
	ssize_t w = write(fd, head, n > 0 && (size_t)n < sizeof head ? (size_t)n : 0);
	(void)w;
	close(fd);
}

/* A client sends its request right behind the handshake, so by the time egressd accepts, the
 * head has usually arrived: reading it at once, rather than waiting for the loop to report the
 * socket readable, saves a loop turn on most new connections (and costs one EAGAIN on the
 * others).  What is read goes where the bufferevent would have put it. */
void proxy_client_read_now(struct proxy_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->client.bev);
	struct evbuffer_iovec v;
	/* The bufferevent keeps its input frozen at the end (only it adds); thaw it meanwhile. */
	evbuffer_unfreeze(in, 0);
	ssize_t n = -1;
	if (evbuffer_reserve_space(in, 4096, &v, 1) == 1) {
		n = read(bufferevent_getfd(c->client.bev), v.iov_base, v.iov_len);
		v.iov_len = n > 0 ? (size_t)n : 0;
		evbuffer_commit_space(in, &v, n > 0);
	}
	evbuffer_freeze(in, 0);
	if (n <= 0)
		return; /* nothing yet, an end or an error: the read event reports it */
	client_read_cb(c->client.bev, c);
}

static int sockaddr_peer(const struct sockaddr *sa, struct dns_addr *a, char *text, size_t cap)
{
	memset(a, 0, sizeof *a);
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
		a->family = AF_INET;
		memcpy(a->addr, &s4->sin_addr, 4);
		proxy_format_addr(a, ntohs(s4->sin_port), text, cap);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
		a->family = AF_INET6;
		memcpy(a->addr, &s6->sin6_addr, 16);
		proxy_format_addr(a, ntohs(s6->sin6_port), text, cap);
		return 0;
	}
	return -1;
}

/* Descriptors a connection may come to hold: its socket, an upstream, and two pipes. */
#define FDS_PER_CONN 6
#define FD_SPARE 32 /* kept for the listeners, the resolver, the audit log, signals */

void proxy_conn_accept(struct proxy_server *srv, int fd, const struct sockaddr *sa, socklen_t len,
        const struct proxy_listener *l)
{
	(void)len;
	if (srv->stopping) {
		close(fd);
		return;
	}
	const struct allow_global_limits *lim = &srv->gen->cfg->limits;
	if (srv->nconns >= lim->max_clients) {
		reject_busy(fd, l, "limits.maxClients");
		return;
	}
	/* The descriptors egressd holds (sockets, parked upstreams, splice pipes) plus what this
	 * connection may come to need must stay within the descriptor limit. */
	if (srv->fd_limit != 0 &&
	        srv->nsockets + 2 * (uint64_t)proxy_splice_pipes() + FDS_PER_CONN + FD_SPARE >
	                srv->fd_limit) {
		reject_busy(fd, l, "the descriptor limit (ulimit -n)");
		return;
	}
	struct dns_addr peer;
	char text[PROXY_ADDR_TEXT];
	if (sockaddr_peer(sa, &peer, text, sizeof text) == -1) {
		close(fd);
		return;
	}
	if (proxy_source_add(srv, &peer) == -1) {
		reject_busy(fd, l, "limits.maxClientsPerSource");
		return;
	}
	struct proxy_conn *c = calloc(1, sizeof *c);
	if (c == NULL) {
		proxy_source_del(srv, &peer);
		close(fd);
		return;
	}
	c->srv = srv;
	c->id = srv->next_conn_id++;
	c->start_ms = proxy_now_ms();
	c->last_active_ms = c->start_ms;
	c->peer = peer;
	c->source_counted = 1;
	memcpy(c->client_text, text, sizeof c->client_text);
	c->listener = l;
	c->front = l->kind == PROXY_LISTEN_SOCKS5        ? &proxy_front_socks5
	           : l->kind == PROXY_LISTEN_TRANSPARENT ? &proxy_front_transparent
	                                                 : &proxy_front_http;
	c->answer = c->front->denied;
	c->next = srv->conns;
	if (srv->conns != NULL)
		srv->conns->prev = c;
	srv->conns = c;
	srv->nconns++;
	if (srv->nconns > srv->peak_conns)
		srv->peak_conns = srv->nconns;

	/* The listener accepts with SOCK_NONBLOCK; on Linux the socket has TCP_NODELAY from it. */
	proxy_fd_reserve(srv, fd);
#ifndef __linux__
	set_nodelay(fd);
#endif
	/* Callbacks run directly: libevent holds a reference across each, so one may close the
	 * connection, and connect failures are deferred by libevent itself. */
	c->client.bev = bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->timer = evtimer_new(srv->base, timer_cb, c);
	if (c->client.bev == NULL) {
		close(fd);
		proxy_conn_close(c, "error");
		return;
	}
	srv->nsockets++;
	if (c->timer == NULL) {
		proxy_conn_close(c, "error");
		return;
	}
	proxy_bev_tune(c->client.bev);
	bufferevent_setcb(c->client.bev, client_read_cb, client_write_cb, client_event_cb, c);
	/* Answers are written through (proxy_flush); what a client sends ahead of time waits in a
	 * buffer that libevent stops filling at this mark. */
	bufferevent_disable(c->client.bev, EV_WRITE);
	bufferevent_setwatermark(c->client.bev, EV_READ, 0, (size_t)lim->max_header_bytes + 16384);
	bufferevent_setwatermark(c->client.bev, EV_WRITE, PROXY_LOW_WATER, 0);
	proxy_client_set(c, PROXY_CLIENT_REQUEST);
	if (c->front->start != NULL)
		c->front->start(c);
	if (proxy_conn_closed(c) || c->client.state != PROXY_CLIENT_REQUEST)
		return;
	bufferevent_enable(c->client.bev, EV_READ);
	proxy_client_read_now(c);
}
