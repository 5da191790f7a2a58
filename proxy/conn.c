/* Connections: accept, the two halves' callbacks, timers, upstream connect, and the one close
 * function every path ends in.  See docs/connection.md. */
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
#include <event2/event.h>

#include "audit/audit.h"
#include "proxy/proxy.h"

static const char *const state_names[] = {
	[PROXY_CS_HEAD] = "head",
	[PROXY_CS_RESOLVING] = "resolving",
	[PROXY_CS_CONNECTING] = "connecting",
	[PROXY_CS_FORWARD] = "forward",
	[PROXY_CS_PEEK] = "peek",
	[PROXY_CS_TUNNEL] = "tunnel",
	[PROXY_CS_CLOSING] = "closing",
};

/* Every state change goes through here, so a debug build can trace transitions. */
void proxy_conn_set_state(struct proxy_conn *c, enum proxy_conn_state st)
{
#ifdef EGRESSD_TRACE
	fprintf(stderr, "conn %llu: %s -> %s\n", (unsigned long long)c->id, state_names[c->state],
		state_names[st]);
#else
	(void)state_names;
#endif
	c->state = st;
}

void proxy_conn_touch(struct proxy_conn *c)
{
	c->last_active_ms = proxy_now_ms();
}

void proxy_conn_arm_timer(struct proxy_conn *c, uint64_t ms)
{
	c->deadline_ms = proxy_now_ms() + ms;
	struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
	evtimer_add(c->timer, &tv);
}

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
	if (evbuffer_get_length(out) == 0 || (bufferevent_get_enabled(bev) & EV_WRITE))
		return;
	evbuffer_unfreeze(out, 1);
	evbuffer_write(out, bufferevent_getfd(bev));
	evbuffer_freeze(out, 1);
	if (evbuffer_get_length(out) > 0)
		bufferevent_enable(bev, EV_WRITE);
}

static void set_nodelay(evutil_socket_t fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void free_upstream(struct proxy_conn *c)
{
	if (c->up.bev != NULL) {
		bufferevent_free(c->up.bev);
		c->up.bev = NULL;
	}
	c->up.eof = 0;
	c->up.shut = 0;
	c->up_idle = 0;
	free(c->up_key);
	c->up_key = NULL;
}

/* The one way a connection ends: cancels what is pending, frees both halves, and writes the close
 * record.  `end` says why (client-closed, upstream-closed, idle-timeout, header-timeout, denied,
 * error, shutdown, limit-bytes, complete). */
void proxy_conn_close(struct proxy_conn *c, const char *end)
{
	struct proxy_server *srv = c->srv;
	if (c->dnsq != NULL) {
		dns_query_cancel(c->dnsq);
		c->dnsq = NULL;
	}
	if (c->end == NULL)
		c->end = end;
	proxy_audit_wait_cancel(c);
	struct audit_rec r;
	audit_rec_init(&r);
	r.event = "close";
	r.conn = c->id;
	r.front = c->is_connect ? "connect" : "http";
	r.session = c->session ? c->session->cfg->name : NULL;
	r.client = c->client_text;
	r.bytes_out = (int64_t)c->bytes_out;
	r.bytes_in = (int64_t)c->bytes_in;
	r.duration_ms = (int64_t)(proxy_now_ms() - c->start_ms);
	r.end = c->end;
	/* Kept while the log cannot take it; a failure is said once by the log's notice. */
	audit_write(srv->audit, &r, AUDIT_EVENT);

	proxy_splice_free(c);
	proxy_body_splice_free(c);
	if (c->client.bev != NULL)
		bufferevent_free(c->client.bev);
	if (c->state == PROXY_CS_HEAD)
		proxy_pool_put(c);
	free_upstream(c);
	if (c->timer != NULL)
		event_free(c->timer);
	proxy_head_free(&c->req);
	proxy_head_free(&c->resp);
	free(c->path);
	free(c->rule);
	free(c->addrs);
	if (c->session_counted)
		proxy_session_live(c->session)->active--;
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	srv->nconns--;
	proxy_gen_release(c->gen);
	free(c);
	proxy_server_conn_gone(srv);
}

/* Closes once the client's output has been written (after a last answer). */
void proxy_conn_finish(struct proxy_conn *c, const char *end)
{
	if (c->end == NULL)
		c->end = end;
	free_upstream(c);
	proxy_conn_set_state(c, PROXY_CS_CLOSING);
	if (c->client.bev != NULL)
		proxy_flush(c->client.bev);
	if (c->client.bev == NULL || evbuffer_get_length(bufferevent_get_output(c->client.bev)) == 0) {
		proxy_conn_close(c, end);
		return;
	}
	bufferevent_setwatermark(c->client.bev, EV_WRITE, 0, 0);
	bufferevent_enable(c->client.bev, EV_WRITE);
	/* Keep reading so that a client closing early is noticed; what it sends is dropped. */
	bufferevent_enable(c->client.bev, EV_READ);
	proxy_conn_arm_timer(c, 10000);
}

/* ---- client half ---- */

static void client_read_cb(struct bufferevent *bev, void *arg)
{
	struct proxy_conn *c = arg;
	switch (c->state) {
	case PROXY_CS_HEAD:
	case PROXY_CS_FORWARD:
		proxy_conn_touch(c);
		proxy_http_client_read(c);
		break;
	case PROXY_CS_TUNNEL:
		proxy_conn_touch(c);
		proxy_relay_read(c, &c->client);
		break;
	case PROXY_CS_PEEK:
		proxy_conn_touch(c);
		proxy_peek_read(c);
		break;
	case PROXY_CS_CLOSING:
		evbuffer_drain(bufferevent_get_input(bev), evbuffer_get_length(bufferevent_get_input(bev)));
		break;
	default:
		/* Resolving or connecting: what came waits in the buffer, which the read watermark
		 * caps. */
		break;
	}
}

static void client_write_cb(struct bufferevent *bev, void *arg)
{
	struct proxy_conn *c = arg;
	switch (c->state) {
	case PROXY_CS_CLOSING:
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			proxy_conn_close(c, c->end ? c->end : "client-closed");
		break;
	case PROXY_CS_TUNNEL:
		proxy_relay_drained(c, &c->client);
		break;
	case PROXY_CS_FORWARD:
		/* The response backlog drained: read the upstream again (unless a spliced body is
		 * reading it).  A client that keeps taking bytes is not idle. */
		proxy_conn_touch(c);
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			bufferevent_disable(bev, EV_WRITE);
		if (c->up.bev != NULL && !c->up.eof && c->body == NULL)
			bufferevent_enable(c->up.bev, EV_READ);
		break;
	default:
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			bufferevent_disable(bev, EV_WRITE);
		break;
	}
}

static void client_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	struct proxy_conn *c = arg;
	if (c->state == PROXY_CS_TUNNEL) {
		proxy_relay_event(c, &c->client, what);
		return;
	}
	/* A client may half-close once its request is sent (HTTP/1.1 allows it; nc and scripts do
	 * it): the answer still goes back, then the connection closes.  Only a plain request that
	 * is past its head; a body cut short by the close still ends the connection. */
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR) && !c->is_connect &&
		(((c->state == PROXY_CS_RESOLVING || c->state == PROXY_CS_CONNECTING) &&
			 !proxy_http_request_has_body(c)) ||
			(c->state == PROXY_CS_FORWARD && c->req.msg_complete))) {
		c->client.eof = 1;
		return;
	}
	/* Likewise, a last answer still being written goes out in full (client_write_cb closes
	 * once it has; the CLOSING timer bounds the wait). */
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR) && c->state == PROXY_CS_CLOSING &&
		evbuffer_get_length(bufferevent_get_output(c->client.bev)) > 0) {
		c->client.eof = 1;
		return;
	}
	if (what & BEV_EVENT_ERROR)
		proxy_conn_close(c, c->state == PROXY_CS_CLOSING && c->end ? c->end : "error");
	else
		proxy_conn_close(c, c->state == PROXY_CS_CLOSING && c->end ? c->end : "client-closed");
}

/* ---- upstream half ---- */

static void up_read_cb(struct bufferevent *bev, void *arg)
{
	struct proxy_conn *c = arg;
	switch (c->state) {
	case PROXY_CS_FORWARD:
		proxy_conn_touch(c);
		proxy_http_upstream_read(c);
		break;
	case PROXY_CS_TUNNEL:
		proxy_conn_touch(c);
		proxy_relay_read(c, &c->up);
		break;
	case PROXY_CS_PEEK:
		proxy_conn_touch(c);
		proxy_peek_upstream(c);
		break;
	default:
		/* An idle kept-alive upstream must not speak: drop it. */
		(void)bev;
		free_upstream(c);
		break;
	}
}

static void up_write_cb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	struct proxy_conn *c = arg;
	switch (c->state) {
	case PROXY_CS_TUNNEL:
		proxy_relay_drained(c, &c->up);
		break;
	case PROXY_CS_FORWARD:
		/* The request body backlog drained: read the client again. */
		proxy_conn_touch(c);
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			bufferevent_disable(bev, EV_WRITE);
		proxy_http_upstream_drained(c);
		break;
	default:
		break;
	}
}

static void try_next_address(struct proxy_conn *c, int last_err);
static void upstream_ready(struct proxy_conn *c);

static void up_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	struct proxy_conn *c = arg;
	if (c->state == PROXY_CS_CONNECTING) {
		if (what & BEV_EVENT_CONNECTED) {
			upstream_ready(c);
			return;
		}
		int err = EVUTIL_SOCKET_ERROR();
		free_upstream(c);
		try_next_address(c, err ? err : ECONNREFUSED);
		return;
	}
	if (c->state == PROXY_CS_TUNNEL) {
		proxy_relay_event(c, &c->up, what);
		return;
	}
	if (c->state == PROXY_CS_PEEK) {
		proxy_conn_close(c, (what & BEV_EVENT_EOF) ? "upstream-closed" : "error");
		return;
	}
	if (c->state == PROXY_CS_FORWARD) {
		if (what & BEV_EVENT_EOF) {
			c->up.eof = 1;
			proxy_http_upstream_eof(c);
		} else {
			proxy_conn_close(c, "error");
		}
		return;
	}
	/* Idle upstream closed or failed: forget it. */
	free_upstream(c);
}

void proxy_conn_adopt_upstream(struct proxy_conn *c, struct bufferevent *bev, const char *key)
{
	free_upstream(c);
	c->up.bev = bev;
	c->up_key = strdup(key);
	c->up_idle = 1;
	bufferevent_setcb(bev, up_read_cb, up_write_cb, up_event_cb, c);
	bufferevent_disable(bev, EV_WRITE);
	bufferevent_enable(bev, EV_READ);
}

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

void proxy_format_addr(const struct dns_addr *a, uint16_t port, char *buf, size_t cap)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	inet_ntop(a->family, a->addr, ip, sizeof ip);
	if (a->family == AF_INET6)
		snprintf(buf, cap, "[%s]:%u", ip, port);
	else
		snprintf(buf, cap, "%s:%u", ip, port);
}

/* The upstream is connected: from here it is written through (proxy_flush). */
static void upstream_ready(struct proxy_conn *c)
{
	evtimer_del(c->timer);
	set_nodelay(bufferevent_getfd(c->up.bev));
	bufferevent_disable(c->up.bev, EV_WRITE);
	proxy_conn_touch(c);
	proxy_conn_arm_timer(c, c->gen->cfg->limits.idle_timeout_ms);
	proxy_conn_upstream_connected(c);
}

/* Starts a non-blocking connect to ss: 1 when it completed at once, 0 when it is in progress
 * (then bev waits for it), -1 with errno when it failed.  A loopback or same-host connect is
 * usually complete by the time connect() returns EINPROGRESS: the handshake ran in the kernel
 * during the call.  Asking again (a second connect() on the socket returns 0 once it is
 * established, EALREADY while it is not) saves a loop turn and three system calls on every such
 * connection, for one extra call on the others. */
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
	proxy_bev_tune(c->up.bev);
	bufferevent_setcb(c->up.bev, up_read_cb, up_write_cb, up_event_cb, c);
	if (done)
		return 1;
	/* No address: libevent takes the socket as connecting and reports when it is done. */
	if (bufferevent_socket_connect(c->up.bev, NULL, 0) == -1) {
		free_upstream(c);
		errno = ECONNREFUSED;
		return -1;
	}
	return 0;
}

static void try_next_address(struct proxy_conn *c, int last_err)
{
	while (c->addr_next < c->naddrs) {
		const struct dns_addr *a = &c->addrs[c->addr_next++];
		struct sockaddr_storage ss;
		socklen_t len;
		sockaddr_from(a, c->dest.port, &ss, &len);
		proxy_format_addr(a, c->dest.port, c->addr_text, sizeof c->addr_text);
		int r = dial(c, &ss, len);
		if (r == -1) {
			last_err = errno;
			continue;
		}
		proxy_conn_set_state(c, PROXY_CS_CONNECTING);
		if (r == 1) {
			upstream_ready(c);
			return;
		}
		proxy_conn_arm_timer(c, c->gen->cfg->limits.connect_timeout_ms);
		return;
	}
	char rule[400];
	snprintf(rule, sizeof rule, "connect %s: %s", c->addr_text[0] ? c->addr_text : c->dest.host,
		strerror(last_err));
	proxy_deny(c, 502, "upstream-refused", rule,
		"The destination refused the connection or could not be reached; egressd allowed "
		"it, so retry later or check that the service is up");
}

void proxy_conn_start_upstream(struct proxy_conn *c)
{
	c->addr_next = 0;
	c->addr_text[0] = '\0';
	free_upstream(c);
	try_next_address(c, ECONNREFUSED);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct proxy_conn *c = arg;
	uint64_t now = proxy_now_ms();
	switch (c->state) {
	case PROXY_CS_HEAD:
		if (c->req.bytes == 0 && c->requests > 0) {
			proxy_conn_close(c, "idle-timeout");
		} else if (c->req.bytes == 0) {
			proxy_conn_close(c, "header-timeout");
		} else {
			c->end = "header-timeout";
			proxy_deny(c, 408, "header-timeout", "limits.headerTimeout",
				"The request head did not arrive within limits.headerTimeout");
		}
		break;
	case PROXY_CS_CONNECTING: {
		char rule[160];
		snprintf(rule, sizeof rule, "limits.connectTimeout (connect %s)", c->addr_text);
		free_upstream(c);
		proxy_deny(c, 504, "upstream-timeout", rule,
			"The destination did not accept the connection within limits.connectTimeout");
		break;
	}
	case PROXY_CS_FORWARD:
	case PROXY_CS_TUNNEL: {
		uint64_t idle = c->gen->cfg->limits.idle_timeout_ms;
		if (now - c->last_active_ms >= idle)
			proxy_conn_close(c, "idle-timeout");
		else
			proxy_conn_arm_timer(c, idle - (now - c->last_active_ms));
		break;
	}
	case PROXY_CS_PEEK:
		proxy_peek_timeout(c);
		break;
	case PROXY_CS_CLOSING:
		proxy_conn_close(c, c->end ? c->end : "error");
		break;
	default:
		break;
	}
}

static void reject_busy(int fd)
{
#define BUSY_BODY "egressd is serving limits.maxClients connections; try again shortly.\n"
	static const char msg[] = "HTTP/1.1 503 Service Unavailable\r\n"
				  "X-Egressd-Reason: limit-clients\r\n"
				  "X-Egressd-Rule: limits.maxClients\r\n"
				  "Content-Type: text/plain\r\n"
				  "Connection: close\r\n"
				  "Content-Length: ";
	char head[sizeof msg + 128];
	int n = snprintf(head, sizeof head, "%s%zu\r\n\r\n%s", msg, sizeof BUSY_BODY - 1, BUSY_BODY);
	/* One non-blocking write: a client that cannot take 200 bytes gets nothing. */
	ssize_t w = write(fd, head, n > 0 && (size_t)n < sizeof head ? (size_t)n : 0);
	(void)w;
	close(fd);
#undef BUSY_BODY
}

/* A client sends its request right behind the handshake, so by the time egressd accepts, the
 * head has usually arrived: reading it at once, rather than waiting for the loop to report the
 * socket readable, saves a loop turn on most new connections (and costs one EAGAIN on the
 * others).  What is read goes where the bufferevent would have put it. */
static void read_first(struct proxy_conn *c, int fd)
{
	/* The bufferevent keeps its input frozen at the end (only it adds); thaw it meanwhile. */
	struct evbuffer *in = bufferevent_get_input(c->client.bev);
	struct evbuffer_iovec v;
	evbuffer_unfreeze(in, 0);
	ssize_t n = -1;
	if (evbuffer_reserve_space(in, 4096, &v, 1) == 1) {
		n = read(fd, v.iov_base, v.iov_len);
		v.iov_len = n > 0 ? (size_t)n : 0;
		evbuffer_commit_space(in, &v, n > 0);
	}
	evbuffer_freeze(in, 0);
	if (n <= 0)
		return; /* nothing yet, an end or an error: the read event reports it */
	proxy_conn_touch(c);
	proxy_http_client_read(c);
}

void proxy_conn_accept(struct proxy_server *srv, int fd, const struct sockaddr *sa, socklen_t len,
	const struct proxy_listener *l)
{
	(void)len;
	(void)l; /* listeners of their own sessions come with the control API */
	if (srv->stopping) {
		close(fd);
		return;
	}
	if (srv->nconns >= srv->gen->cfg->limits.max_clients) {
		reject_busy(fd);
		return;
	}
	struct proxy_conn *c = calloc(1, sizeof *c);
	if (c == NULL) {
		close(fd);
		return;
	}
	c->srv = srv;
	c->gen = srv->gen;
	c->gen->refs++;
	c->id = srv->next_conn_id++;
	c->start_ms = proxy_now_ms();
	c->last_active_ms = c->start_ms;
	struct dns_addr a = {0};
	c->peer.family = sa->sa_family;
	if (sa->sa_family == AF_INET) {
		a.family = AF_INET;
		memcpy(a.addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		c->peer = a;
		proxy_format_addr(&a, ntohs(((const struct sockaddr_in *)sa)->sin_port), c->client_text,
			sizeof c->client_text);
	} else if (sa->sa_family == AF_INET6) {
		a.family = AF_INET6;
		memcpy(a.addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		c->peer = a;
		proxy_format_addr(&a, ntohs(((const struct sockaddr_in6 *)sa)->sin6_port),
			c->client_text, sizeof c->client_text);
	}
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
	if (c->client.bev == NULL || c->timer == NULL) {
		if (c->client.bev == NULL)
			close(fd);
		proxy_conn_close(c, "error");
		return;
	}
	proxy_bev_tune(c->client.bev);
	bufferevent_setcb(c->client.bev, client_read_cb, client_write_cb, client_event_cb, c);
	/* Answers are written through (proxy_flush); what a client sends ahead of time waits in a
	 * buffer that libevent stops filling at this mark. */
	bufferevent_disable(c->client.bev, EV_WRITE);
	bufferevent_setwatermark(c->client.bev, EV_READ, 0,
		(size_t)c->gen->cfg->limits.max_header_bytes + 16384);
	proxy_http_init_conn(c);
	proxy_conn_arm_timer(c, c->gen->cfg->limits.header_timeout_ms);
	bufferevent_enable(c->client.bev, EV_READ);
	read_first(c, fd);
}
