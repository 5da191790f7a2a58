/* The resolver: dns.hosts, then a TTL cache, then c-ares on the libevent loop.
 *
 * Three kinds of object:
 * - a query (struct dns_query) is one caller's request.  It owns one libevent timer that is
 *   first its deadline (dns.timeout) and, once the result is known, a zero timeout that delivers
 *   the result; so every callback runs from the loop in its own event, and a callback may cancel
 *   other queries or free the resolver.
 * - a lookup (struct dns_lookup) is one c-ares ares_getaddrinfo() in flight.  Queries for the
 *   same name wait on the same lookup.  c-ares 1.18 cannot cancel one request, so a lookup whose
 *   waiters have all gone (cancelled, timed out) runs on until c-ares ends it, and its answer still
 *   fills the cache.
 * - a cache entry, keyed by name, holding a positive answer for its TTL or an NXDOMAIN briefly.
 *
 * c-ares tells us which sockets to watch through its socket-state callback; each gets a
 * persistent libevent event, and one timer follows ares_timeout(). */
#include "dns/resolver.h"

#include <ares.h>
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "allowlist/config.h"

#define CACHE_MAX 10000    /* default entries; the oldest is evicted beyond this */
#define CACHE_BUCKETS 4096 /* power of two */
#define TTL_MAX 3600       /* seconds: a long TTL must not pin an address for days */
#define TTL_MIN 1          /* seconds: a TTL of 0 still coalesces a burst of connections */
#define NEG_TTL 5          /* seconds an NXDOMAIN is remembered */
#define TIMEOUT_DEFAULT_MS 5000
#define TIMEOUT_MAX_MS 3600000u

struct dns_cache_entry {
	struct dns_cache_entry *hnext;         /* bucket chain */
	struct dns_cache_entry *older, *newer; /* insertion order, for eviction */
	uint64_t expires_ms;                   /* monotonic */
	enum dns_status status;                /* DNS_OK or DNS_NXDOMAIN */
	struct dns_answer ans;
	char name[];
};

struct dns_lookup {
	struct dns_resolver *r;
	struct dns_lookup *prev, *next; /* r->lookups */
	struct dns_query *waiters;      /* queries waiting for this answer */
	int joinable;                   /* 0 once a waiter timed out: new queries start afresh */
	char name[];
};

struct dns_query {
	struct dns_resolver *r;
	struct dns_query *prev, *next;   /* r->queries: every query not yet delivered */
	struct dns_lookup *lookup;       /* the lookup waited on, or NULL */
	struct dns_query *wprev, *wnext; /* lookup->waiters */
	struct event *ev;                /* deadline, then the zero-timeout delivery */
	int done;                        /* status and ans hold the result */
	enum dns_status status;
	struct dns_answer ans;
	dns_cb cb;
	void *arg;
};

struct dns_sock {
	struct dns_sock *next;
	struct dns_resolver *r;
	int fd;
	struct event *ev;
};

struct dns_resolver {
	struct event_base *base;
	ares_channel channel;
	int have_channel;
	struct event *timer;             /* follows ares_timeout() */
	struct dns_sock *socks;          /* sockets c-ares asked us to watch */
	struct allow_hosts_entry *hosts; /* copy of dns.hosts */
	size_t nhosts;
	uint64_t timeout_ms;
	struct dns_query *queries;
	struct dns_lookup *lookups;
	struct dns_cache_entry *buckets[CACHE_BUCKETS];
	struct dns_cache_entry *oldest, *newest;
	size_t ncache;
	size_t cache_max;
	int destroying; /* c-ares callbacks during ares_destroy() only free */
};

const char *dns_status_str(enum dns_status s)
{
	switch (s) {
	case DNS_OK:
		return "ok";
	case DNS_NXDOMAIN:
		return "NXDOMAIN";
	case DNS_TIMEOUT:
		return "timeout";
	case DNS_FAILED:
		return "failed";
	}
	return "failed";
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- cache ---------------------------------------------------------------------------------- */

static size_t name_hash(const char *name)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h & (CACHE_BUCKETS - 1);
}

static void cache_remove(struct dns_resolver *r, struct dns_cache_entry *e)
{
	struct dns_cache_entry **pp = &r->buckets[name_hash(e->name)];
	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	if (e->older)
		e->older->newer = e->newer;
	else
		r->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		r->newest = e->older;
	r->ncache--;
	free(e);
}

/* The live entry for name, or NULL; an expired entry is dropped on the way. */
static struct dns_cache_entry *cache_find(struct dns_resolver *r, const char *name)
{
	for (struct dns_cache_entry *e = r->buckets[name_hash(name)]; e; e = e->hnext) {
		if (strcmp(e->name, name) != 0)
			continue;
		if (e->expires_ms <= now_ms()) {
			cache_remove(r, e);
			return NULL;
		}
		return e;
	}
	return NULL;
}

/* Remembers a result for ttl seconds.  Allocation failure only loses the cache entry. */
static void cache_put(struct dns_resolver *r, const char *name, enum dns_status status,
        const struct dns_answer *ans, uint32_t ttl)
{
	struct dns_cache_entry *old = cache_find(r, name);
	if (old)
		cache_remove(r, old);
	if (r->cache_max == 0)
		return;
	while (r->ncache >= r->cache_max && r->oldest)
		cache_remove(r, r->oldest);
	size_t len = strlen(name);
	struct dns_cache_entry *e = calloc(1, sizeof *e + len + 1);
	if (e == NULL)
		return;
	memcpy(e->name, name, len + 1);
	e->status = status;
	e->ans = *ans;
	e->expires_ms = now_ms() + (uint64_t)ttl * 1000u;
	size_t b = name_hash(name);
	e->hnext = r->buckets[b];
	r->buckets[b] = e;
	e->older = r->newest;
	if (r->newest)
		r->newest->newer = e;
	else
		r->oldest = e;
	r->newest = e;
	r->ncache++;
}

/* ---- queries -------------------------------------------------------------------------------- */

static void waiter_unlink(struct dns_query *q)
{
	struct dns_lookup *l = q->lookup;
	if (l == NULL)
		return;
	if (q->wprev)
		q->wprev->wnext = q->wnext;
	else
		l->waiters = q->wnext;
	if (q->wnext)
		q->wnext->wprev = q->wprev;
	q->lookup = NULL;
	q->wprev = q->wnext = NULL;
}

static void query_free(struct dns_query *q)
{
	struct dns_resolver *r = q->r;
	waiter_unlink(q);
	if (q->prev)
		q->prev->next = q->next;
	else
		r->queries = q->next;
	if (q->next)
		q->next->prev = q->prev;
	if (q->ev)
		event_free(q->ev);
	free(q);
}

/* Records the result and has the loop deliver it. */
static void query_finish(struct dns_query *q, enum dns_status status, const struct dns_answer *ans)
{
	waiter_unlink(q);
	q->done = 1;
	q->status = status;
	if (ans)
		q->ans = *ans;
	else
		memset(&q->ans, 0, sizeof q->ans);
	event_del(q->ev);
	event_active(q->ev, EV_TIMEOUT, 0);
}

/* The query's only event: its deadline, or the delivery of its result.  The query is freed
 * before the callback runs so that the callback may do anything, including freeing r. */
static void query_event(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct dns_query *q = arg;
	enum dns_status status = DNS_TIMEOUT;
	struct dns_answer ans;
	memset(&ans, 0, sizeof ans);
	if (q->done) {
		status = q->status;
		ans = q->ans;
	} else if (q->lookup) {
		/* A late joiner would inherit what is left of this lookup's c-ares budget. */
		q->lookup->joinable = 0;
	}
	dns_cb cb = q->cb;
	void *cbarg = q->arg;
	query_free(q);
	cb(status, &ans, cbarg);
}

/* ---- c-ares plumbing ------------------------------------------------------------------------ */

static void timer_update(struct dns_resolver *r)
{
	struct timeval tv, *tvp = ares_timeout(r->channel, NULL, &tv);
	if (tvp)
		evtimer_add(r->timer, tvp);
	else
		evtimer_del(r->timer);
}

static void timer_event(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct dns_resolver *r = arg;
	ares_process_fd(r->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	timer_update(r);
}

static void sock_event(evutil_socket_t fd, short what, void *arg)
{
	struct dns_sock *s = arg;
	struct dns_resolver *r = s->r;
	/* s may be freed inside ares_process_fd (c-ares closes the socket): use only r after. */
	ares_process_fd(r->channel, (what & EV_READ) ? fd : ARES_SOCKET_BAD,
	        (what & EV_WRITE) ? fd : ARES_SOCKET_BAD);
	timer_update(r);
}

/* c-ares' socket-state callback: watch fd for what c-ares wants, or stop watching it. */
static void sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
	struct dns_resolver *r = data;
	struct dns_sock **pp = &r->socks;
	while (*pp && (*pp)->fd != fd)
		pp = &(*pp)->next;
	struct dns_sock *s = *pp;
	if (s && s->ev) {
		event_free(s->ev);
		s->ev = NULL;
	}
	if (!readable && !writable) {
		if (s) {
			*pp = s->next;
			free(s);
		}
		return;
	}
	if (s == NULL) {
		s = calloc(1, sizeof *s);
		if (s == NULL)
			return; /* the query's deadline still ends it */
		s->r = r;
		s->fd = fd;
		s->next = r->socks;
		r->socks = s;
	}
	short what = EV_PERSIST | (readable ? EV_READ : 0) | (writable ? EV_WRITE : 0);
	s->ev = event_new(r->base, fd, what, sock_event, s);
	if (s->ev)
		event_add(s->ev, NULL);
}

static enum dns_status map_status(int status)
{
	switch (status) {
	case ARES_SUCCESS:
		return DNS_OK;
	case ARES_ENOTFOUND:
	case ARES_ENODATA:
		return DNS_NXDOMAIN;
	case ARES_ETIMEOUT:
		return DNS_TIMEOUT;
	default:
		return DNS_FAILED;
	}
}

/* Fills ans from c-ares' list: IPv4 first, then IPv6, each in the order received, so the order
 * does not depend on which reply came first and the family most often routable is tried first. */
static void fill_answer(const struct ares_addrinfo *res, struct dns_answer *ans)
{
	memset(ans, 0, sizeof *ans);
	int64_t ttl = TTL_MAX;
	static const int families[2] = {AF_INET, AF_INET6};
	for (int f = 0; f < 2; f++) {
		for (const struct ares_addrinfo_node *n = res->nodes; n; n = n->ai_next) {
			if (n->ai_family != families[f] || n->ai_addr == NULL)
				continue;
			if (ans->n == DNS_MAX_ADDRS)
				break;
			struct dns_addr *a = &ans->addrs[ans->n];
			if (n->ai_family == AF_INET) {
				const struct sockaddr_in *sin =
				        (const struct sockaddr_in *)n->ai_addr;
				memcpy(a->addr, &sin->sin_addr, 4);
			} else {
				const struct sockaddr_in6 *sin6 =
				        (const struct sockaddr_in6 *)n->ai_addr;
				memcpy(a->addr, &sin6->sin6_addr, 16);
			}
			a->family = n->ai_family;
			ans->n++;
			if (n->ai_ttl < ttl)
				ttl = n->ai_ttl;
		}
	}
	for (const struct ares_addrinfo_cname *c = res->cnames; c; c = c->next)
		if (c->ttl < ttl)
			ttl = c->ttl;
	if (ttl < TTL_MIN)
		ttl = TTL_MIN;
	ans->ttl = (uint32_t)ttl;
	ans->source = 0;
}

static void lookup_free(struct dns_lookup *l)
{
	struct dns_resolver *r = l->r;
	while (l->waiters)
		waiter_unlink(l->waiters);
	if (l->prev)
		l->prev->next = l->next;
	else
		r->lookups = l->next;
	if (l->next)
		l->next->prev = l->prev;
	free(l);
}

/* ares_getaddrinfo's callback: from ares_process_fd, from ares_getaddrinfo itself (immediate
 * failures), or from ares_destroy.  It never calls a user callback directly. */
static void lookup_done(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	(void)timeouts;
	struct dns_lookup *l = arg;
	struct dns_resolver *r = l->r;
	if (r->destroying) {
		lookup_free(l);
		if (res)
			ares_freeaddrinfo(res);
		return;
	}
	struct dns_answer ans;
	memset(&ans, 0, sizeof ans);
	enum dns_status st = map_status(status);
	if (st == DNS_OK) {
		if (res)
			fill_answer(res, &ans);
		if (ans.n == 0)
			st = DNS_NXDOMAIN;
	}
	if (st == DNS_OK)
		cache_put(r, l->name, st, &ans, ans.ttl);
	else if (st == DNS_NXDOMAIN)
		cache_put(r, l->name, st, &ans, NEG_TTL);
	while (l->waiters)
		query_finish(l->waiters, st, &ans);
	lookup_free(l);
	if (res)
		ares_freeaddrinfo(res);
}

/* ---- public --------------------------------------------------------------------------------- */

/* Parses "IP", "IP:PORT", "[IPv6]" or "[IPv6]:PORT" (and a bare IPv6 without port). */
static int parse_server(const char *in, struct ares_addr_port_node *out)
{
	char host[64];
	const char *port = NULL;
	size_t len = strlen(in);
	if (in[0] == '[') {
		const char *end = strchr(in, ']');
		if (end == NULL || (size_t)(end - in - 1) >= sizeof host)
			return -1;
		memcpy(host, in + 1, (size_t)(end - in - 1));
		host[end - in - 1] = '\0';
		if (end[1] == ':')
			port = end + 2;
		else if (end[1] != '\0')
			return -1;
	} else {
		const char *colon = strchr(in, ':');
		if (colon && strchr(colon + 1, ':') == NULL) {
			port = colon + 1;
			len = (size_t)(colon - in);
		}
		if (len >= sizeof host)
			return -1;
		memcpy(host, in, len);
		host[len] = '\0';
	}
	memset(out, 0, sizeof *out);
	if (inet_pton(AF_INET, host, &out->addr.addr4) == 1)
		out->family = AF_INET;
	else if (inet_pton(AF_INET6, host, &out->addr.addr6) == 1)
		out->family = AF_INET6;
	else
		return -1;
	int p = 53;
	if (port) {
		if (*port == '\0' || strlen(port) > 5)
			return -1;
		p = 0;
		for (const char *c = port; *c; c++) {
			if (*c < '0' || *c > '9')
				return -1;
			p = p * 10 + (*c - '0');
		}
		if (p < 1 || p > 65535)
			return -1;
	}
	out->udp_port = out->tcp_port = p;
	return 0;
}

static int set_servers(
        struct dns_resolver *r, const struct allow_dns_config *cfg, char *err, size_t errlen)
{
	struct ares_addr_port_node *nodes = calloc(cfg->nservers, sizeof *nodes);
	if (nodes == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < cfg->nservers; i++) {
		if (cfg->servers[i] == NULL || parse_server(cfg->servers[i], &nodes[i]) == -1) {
			snprintf(err, errlen, "dns.servers: not an address or address:port: \"%s\"",
			        cfg->servers[i] ? cfg->servers[i] : "");
			free(nodes);
			return -1;
		}
		nodes[i].next = i + 1 < cfg->nservers ? &nodes[i + 1] : NULL;
	}
	int rc = ares_set_servers_ports(r->channel, nodes);
	free(nodes);
	if (rc != ARES_SUCCESS) {
		snprintf(err, errlen, "dns.servers: %s", ares_strerror(rc));
		return -1;
	}
	return 0;
}

struct dns_resolver *dns_resolver_new(
        struct event_base *base, const struct allow_dns_config *cfg, char *err, size_t errlen)
{
	static const struct allow_dns_config empty;
	if (cfg == NULL)
		cfg = &empty;
	int rc = ares_library_init(ARES_LIB_INIT_ALL);
	if (rc != ARES_SUCCESS) {
		snprintf(err, errlen, "c-ares: %s", ares_strerror(rc));
		return NULL;
	}
	struct dns_resolver *r = calloc(1, sizeof *r);
	if (r == NULL) {
		ares_library_cleanup();
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->base = base;
	r->cache_max = CACHE_MAX;
	r->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : TIMEOUT_DEFAULT_MS;
	if (r->timeout_ms > TIMEOUT_MAX_MS)
		r->timeout_ms = TIMEOUT_MAX_MS; /* c-ares takes an int of milliseconds */
	if (cfg->nhosts) {
		r->hosts = calloc(cfg->nhosts, sizeof *r->hosts);
		if (r->hosts == NULL)
			goto nomem;
		memcpy(r->hosts, cfg->hosts, cfg->nhosts * sizeof *r->hosts);
		r->nhosts = cfg->nhosts;
	}
	r->timer = evtimer_new(base, timer_event, r);
	if (r->timer == NULL)
		goto nomem;

	struct ares_options opt;
	memset(&opt, 0, sizeof opt);
	/* No search domains: names reaching us are canonical and fully qualified, and a search
	 * suffix would send a lookup for a name nobody asked about. */
	opt.flags = ARES_FLAG_NOSEARCH;
	opt.ndomains = 0;
	/* DNS only: /etc/hosts must not answer for names; dns.hosts is the configured override. */
	opt.lookups = (char *)"b";
	/* Two tries; c-ares doubles the per-try timeout on the second round, so t + 2t fits the
	 * budget with one server.  The query's own deadline is the hard stop in every case. */
	opt.tries = 2;
	opt.timeout = (int)(r->timeout_ms / 3 > 0 ? r->timeout_ms / 3 : 1);
	opt.sock_state_cb = sock_state;
	opt.sock_state_cb_data = r;
	int mask = ARES_OPT_FLAGS | ARES_OPT_DOMAINS | ARES_OPT_LOOKUPS | ARES_OPT_TRIES |
	           ARES_OPT_TIMEOUTMS | ARES_OPT_SOCK_STATE_CB;
	rc = ares_init_options(&r->channel, &opt, mask);
	if (rc != ARES_SUCCESS) {
		snprintf(err, errlen, "c-ares: %s", ares_strerror(rc));
		goto fail;
	}
	r->have_channel = 1;
	if (cfg->nservers && set_servers(r, cfg, err, errlen) == -1)
		goto fail;
	return r;
nomem:
	snprintf(err, errlen, "out of memory");
fail:
	dns_resolver_free(r);
	return NULL;
}

static const struct allow_hosts_entry *hosts_find(const struct dns_resolver *r, const char *name)
{
	for (size_t i = 0; i < r->nhosts; i++)
		if (strcmp(r->hosts[i].name, name) == 0)
			return &r->hosts[i];
	return NULL;
}

int dns_resolve_known(struct dns_resolver *r, const char *name, enum dns_status *status,
	struct dns_answer *ans)
{
	const struct allow_hosts_entry *h = hosts_find(r, name);
	if (h) {
		memset(ans, 0, sizeof *ans);
		for (size_t i = 0; i < h->naddrs && ans->n < DNS_MAX_ADDRS; i++) {
			ans->addrs[ans->n].family = h->addrs[i].family;
			memcpy(ans->addrs[ans->n].addr, h->addrs[i].addr, 16);
			ans->n++;
		}
		ans->source = 1;
		*status = ans->n ? DNS_OK : DNS_NXDOMAIN;
		return 0;
	}
	const struct dns_cache_entry *e = cache_find(r, name);
	if (e) {
		*ans = e->ans;
		uint64_t now = now_ms();
		ans->ttl = (uint32_t)((e->expires_ms - now + 999) / 1000);
		ans->source = 2;
		*status = e->status;
		return 0;
	}
	return -1;
}

struct dns_query *dns_resolve(struct dns_resolver *r, const char *name, dns_cb cb, void *arg)
{
	struct dns_query *q = calloc(1, sizeof *q);
	if (q == NULL)
		return NULL;
	q->ev = evtimer_new(r->base, query_event, q);
	if (q->ev == NULL) {
		free(q);
		return NULL;
	}
	q->r = r;
	q->cb = cb;
	q->arg = arg;
	q->next = r->queries;
	if (r->queries)
		r->queries->prev = q;
	r->queries = q;

	size_t len = name ? strlen(name) : 0;
	if (len == 0 || len >= ALLOW_HOST_BUF) {
		query_finish(q, DNS_FAILED, NULL);
		return q;
	}
	struct dns_answer known;
	enum dns_status st;
	if (dns_resolve_known(r, name, &st, &known) == 0) {
		query_finish(q, st, &known);
		return q;
	}

	struct timeval tv = {
	        (time_t)(r->timeout_ms / 1000), (suseconds_t)(r->timeout_ms % 1000) * 1000};
	struct dns_lookup *l = r->lookups;
	while (l && (!l->joinable || strcmp(l->name, name) != 0))
		l = l->next;
	int fresh = l == NULL;
	if (fresh) {
		l = calloc(1, sizeof *l + len + 1);
		if (l == NULL) {
			query_free(q);
			return NULL;
		}
		l->r = r;
		l->joinable = 1;
		memcpy(l->name, name, len + 1);
		l->next = r->lookups;
		if (r->lookups)
			r->lookups->prev = l;
		r->lookups = l;
	}
	q->lookup = l;
	q->wnext = l->waiters;
	if (l->waiters)
		l->waiters->wprev = q;
	l->waiters = q;
	evtimer_add(q->ev, &tv);
	if (fresh) {
		struct ares_addrinfo_hints hints;
		memset(&hints, 0, sizeof hints);
		hints.ai_family = AF_UNSPEC;
		hints.ai_flags = ARES_AI_NOSORT;
		/* May call lookup_done before returning; that only schedules q's delivery. */
		ares_getaddrinfo(r->channel, name, NULL, &hints, lookup_done, l);
		timer_update(r);
	}
	return q;
}

void dns_resolver_set_cache_max(struct dns_resolver *r, size_t max)
{
	r->cache_max = max;
	while (r->ncache > max && r->oldest)
		cache_remove(r, r->oldest);
}

void dns_query_cancel(struct dns_query *q)
{
	if (q == NULL)
		return;
	query_free(q);
}

void dns_resolver_free(struct dns_resolver *r)
{
	if (r == NULL)
		return;
	r->destroying = 1;
	while (r->queries)
		query_free(r->queries);
	if (r->have_channel)
		ares_destroy(r->channel); /* ends every lookup through lookup_done */
	while (r->lookups)
		lookup_free(r->lookups);
	while (r->socks) {
		struct dns_sock *s = r->socks;
		r->socks = s->next;
		if (s->ev)
			event_free(s->ev);
		free(s);
	}
	if (r->timer)
		event_free(r->timer);
	while (r->oldest)
		cache_remove(r, r->oldest);
	free(r->hosts);
	free(r);
	ares_library_cleanup();
}
