/* The CONNECT tunnel: a byte relay with backpressure and half-close.
 *
 * Each side is read only while the other side's output holds less than PROXY_HIGH_WATER; the
 * other side's write callback (low watermark PROXY_LOW_WATER) resumes it.  When one side ends
 * its stream, the other side's write half is shut down once everything before the end has been
 * written; the tunnel closes when both directions have ended. */
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "proxy/proxy.h"

static struct proxy_half *other(struct proxy_conn *c, struct proxy_half *h)
{
	return h == &c->client ? &c->up : &c->client;
}

/* Both directions ended and everything was written: the tunnel is done. */
static int maybe_done(struct proxy_conn *c)
{
	if (c->client.shut && c->up.shut) {
		proxy_conn_close(c, c->end != NULL ? c->end : "client-closed");
		return 1;
	}
	return 0;
}

/* Shuts down the write half of `to` once its output is empty and its peer has ended. */
static int flush_end(struct proxy_conn *c, struct proxy_half *to)
{
	struct proxy_half *from = other(c, to);
	if (!from->eof || to->shut)
		return 0;
	if (evbuffer_get_length(bufferevent_get_output(to->bev)) > 0)
		return 0;
	shutdown(bufferevent_getfd(to->bev), SHUT_WR);
	to->shut = 1;
	return maybe_done(c);
}

int proxy_relay_read(struct proxy_conn *c, struct proxy_half *from)
{
	struct proxy_half *to = other(c, from);
	struct evbuffer *in = bufferevent_get_input(from->bev);
	struct evbuffer *out = bufferevent_get_output(to->bev);
	size_t n = evbuffer_get_length(in);
	if (n == 0)
		return 0;
	uint64_t nout = from == &c->client ? n : 0, nin = from == &c->client ? 0 : n;
	if (!proxy_conn_bytes_ok(c, nout, nin)) {
		proxy_conn_close(c, "limit-bytes");
		return -1;
	}
	proxy_count(c, nout, nin);
	evbuffer_add_buffer(out, in);
	if (evbuffer_get_length(out) >= PROXY_HIGH_WATER)
		bufferevent_disable(from->bev, EV_READ);
	return 0;
}

void proxy_relay_drained(struct proxy_conn *c, struct proxy_half *to)
{
	struct proxy_half *from = other(c, to);
	proxy_conn_touch(c);
	if (flush_end(c, to))
		return;
	if (!from->eof)
		bufferevent_enable(from->bev, EV_READ);
}

void proxy_relay_event(struct proxy_conn *c, struct proxy_half *h, short what)
{
	if (what & BEV_EVENT_ERROR) {
		proxy_conn_close(c, "error");
		return;
	}
	if (what & BEV_EVENT_EOF) {
		if (c->end == NULL)
			c->end = h == &c->client ? "client-closed" : "upstream-closed";
		/* Whatever was still buffered on the way in goes out first. */
		if (proxy_relay_read(c, h) == -1)
			return;
		h->eof = 1;
		bufferevent_disable(h->bev, EV_READ);
		flush_end(c, other(c, h));
	}
}

void proxy_relay_start(struct proxy_conn *c)
{
	proxy_conn_set_state(c, PROXY_CS_TUNNEL);
	proxy_head_free(&c->req);
	proxy_head_free(&c->resp);
	proxy_conn_touch(c);
	proxy_conn_arm_timer(c, c->gen->cfg->limits.idle_timeout_ms);
	if (proxy_splice_start(c) == 0)
		return;
	bufferevent_setwatermark(c->client.bev, EV_WRITE, PROXY_LOW_WATER, 0);
	bufferevent_setwatermark(c->up.bev, EV_WRITE, PROXY_LOW_WATER, 0);
	bufferevent_setwatermark(c->up.bev, EV_READ, 0, 0);
	bufferevent_enable(c->client.bev, EV_READ | EV_WRITE);
	bufferevent_enable(c->up.bev, EV_READ | EV_WRITE);
	proxy_conn_touch(c);
	proxy_conn_arm_timer(c, c->gen->cfg->limits.idle_timeout_ms);
	/* Bytes either side sent before the relay started go first. */
	if (proxy_relay_read(c, &c->client) == 0)
		proxy_relay_read(c, &c->up);
}
