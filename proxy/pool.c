/* Kept-alive upstream connections of plain HTTP, shared between client connections.
 *
 * A client connection keeps its upstream between its own requests; when the client leaves, an
 * idle upstream is parked here instead of closed, keyed by the session and the destination
 * ("session host:port"), so that only the session whose decision opened it may use it again.  A
 * later request of that session for the same destination takes it after its own decision has
 * allowed the host, and after its address has been judged again under the current policy.  A
 * reload empties the pool.  A parked
 * upstream that speaks, closes or stays idle for POOL_IDLE_MS is dropped; at most POOL_MAX are
 * kept, the oldest dropped first. */
#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

#include "proxy/proxy.h"

#define POOL_MAX 256
#define POOL_IDLE_MS 30000

struct proxy_pooled {
	struct proxy_pooled *prev, *next; /* newest first */
	struct proxy_server *srv;
	struct bufferevent *bev;          /* owned */
	char *key;                        /* owned: "session host:port" */
	struct dns_addr addr;             /* the address it is connected to */
	uint16_t port;
	char addr_text[PROXY_ADDR_TEXT];
};

static void unlink_entry(struct proxy_pooled *p)
{
	struct proxy_server *srv = p->srv;
	if (p->prev != NULL)
		p->prev->next = p->next;
	else
		srv->pool = p->next;
	if (p->next != NULL)
		p->next->prev = p->prev;
	else
		srv->pool_tail = p->prev;
	srv->npool--;
}

static void drop(struct proxy_pooled *p)
{
	unlink_entry(p);
	p->srv->nsockets--;
	bufferevent_free(p->bev);
	free(p->key);
	free(p);
}

static void parked_read(struct bufferevent *bev, void *arg)
{
	(void)bev;
	drop(arg); /* an idle upstream must not speak */
}

static void parked_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	drop(arg); /* closed, failed, or idle too long */
}

void proxy_pool_put(struct proxy_conn *c)
{
	struct proxy_server *srv = c->srv;
	if (srv->stopping || c->up.bev == NULL || c->up.state != PROXY_UP_IDLE || c->up.key == NULL)
		return;
	struct proxy_pooled *p = calloc(1, sizeof *p);
	if (p == NULL)
		return;
	if (srv->npool == POOL_MAX)
		drop(srv->pool_tail);
	p->srv = srv;
	p->bev = c->up.bev;
	p->key = c->up.key;
	p->addr = c->up.addr;
	p->port = c->up.port;
	memcpy(p->addr_text, c->up.addr_text, sizeof p->addr_text);
	/* The socket now belongs to the pool (its count moves with it). */
	c->up.bev = NULL;
	c->up.key = NULL;
	struct timeval idle = {POOL_IDLE_MS / 1000, 0};
	bufferevent_setcb(p->bev, parked_read, NULL, parked_event, p);
	bufferevent_set_timeouts(p->bev, &idle, NULL);
	bufferevent_enable(p->bev, EV_READ);
	p->next = srv->pool;
	if (srv->pool != NULL)
		srv->pool->prev = p;
	srv->pool = p;
	if (srv->pool_tail == NULL)
		srv->pool_tail = p;
	srv->npool++;
	proxy_up_drop(c);
}

int proxy_pool_take(struct proxy_conn *c, const char *key)
{
	for (struct proxy_pooled *p = c->srv->pool; p != NULL; p = p->next) {
		if (strcmp(p->key, key) != 0)
			continue;
		struct bufferevent *bev = p->bev;
		bufferevent_set_timeouts(bev, NULL, NULL);
		c->up.bev = bev;
		c->up.key = p->key;
		c->up.addr = p->addr;
		c->up.port = p->port;
		memcpy(c->up.addr_text, p->addr_text, sizeof c->up.addr_text);
		unlink_entry(p);
		free(p);
		proxy_conn_adopt_upstream(c);
		return 0;
	}
	return -1;
}

void proxy_pool_clear(struct proxy_server *srv)
{
	while (srv->pool != NULL)
		drop(srv->pool);
}
