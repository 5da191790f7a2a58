/* Kept-alive upstream connections of plain HTTP, shared between client connections.
 *
 * A client connection keeps its upstream between its own requests; when the client leaves, an
 * idle upstream is parked here instead of closed, keyed by the destination ("host:port") and the
 * config generation whose address policy admitted it.  A later request for the same destination
 * under the same generation takes it after its own decision has allowed the host.  A parked
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
	char *key;                        /* owned */
	const struct proxy_gen *gen;      /* compared only, never dereferenced */
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
	if (srv->stopping || c->up.bev == NULL || !c->up_idle || c->up_key == NULL)
		return;
	struct proxy_pooled *p = calloc(1, sizeof *p);
	if (p == NULL)
		return;
	if (srv->npool == POOL_MAX)
		drop(srv->pool_tail);
	p->srv = srv;
	p->bev = c->up.bev;
	p->key = c->up_key;
	p->gen = c->gen;
	memcpy(p->addr_text, c->addr_text, sizeof p->addr_text);
	c->up.bev = NULL;
	c->up_key = NULL;
	c->up_idle = 0;
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
}

struct bufferevent *proxy_pool_take(struct proxy_conn *c, const char *key, char *addr_text,
	size_t addrcap)
{
	for (struct proxy_pooled *p = c->srv->pool; p != NULL; p = p->next) {
		if (p->gen != c->gen || strcmp(p->key, key) != 0)
			continue;
		struct bufferevent *bev = p->bev;
		bufferevent_set_timeouts(bev, NULL, NULL);
		snprintf(addr_text, addrcap, "%s", p->addr_text);
		unlink_entry(p);
		free(p->key);
		free(p);
		return bev;
	}
	return NULL;
}

void proxy_pool_clear(struct proxy_server *srv)
{
	while (srv->pool != NULL)
		drop(srv->pool);
}
