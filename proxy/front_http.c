/* The HTTP proxy front door (listen.proxy): absolute-URI requests are forwarded (forward.c),
 * CONNECT opens a tunnel (tunnel.c).  Both read their heads through the HTTP exchange, which
 * the connection starts at accept; this file renders what only the proxy protocol says. */
#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "proxy/proxy.h"

static void http_read(struct proxy_conn *c)
{
	/* Heads are read by the HTTP exchange (forward.c), which every connection of this front
	 * door has from its accept. */
	proxy_fwd_client_read(c);
}

/* Every connection of this front door reads HTTP heads from its accept. */
static void http_start(struct proxy_conn *c)
{
	proxy_fwd_begin(c, 0);
}

static void http_allowed(struct proxy_conn *c)
{
	proxy_tunnel_start(c);
}

static void http_established(struct proxy_conn *c)
{
	evbuffer_add(bufferevent_get_output(c->client.bev),
	        "HTTP/1.1 200 Connection established\r\n\r\n", 39);
	proxy_flush(c->client.bev);
}

const struct proxy_front proxy_front_http = {
        .name = "http",
        .start = http_start,
        .read = http_read,
        .allowed = http_allowed,
        .denied = proxy_answer_http,
        .established = http_established,
        .release = NULL,
};
