/* The server: config generations, listeners, signals, clean stop and reload. */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <malloc.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <event2/listener.h>

#include "audit/audit.h"
#include <http_parser.h>

#include "proxy/proxy.h"
#include "proxy/tlsctx.h"

uint64_t proxy_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void print_errors(const struct allow_errors *errs)
{
	for (size_t i = 0; i < errs->n; i++)
		fprintf(stderr, "egressd: %s\n", errs->lines[i]);
}

/* The inspection CA and TLS contexts of cfg (proxy/tlsctx.h), judged as `egressd check` judges
 * them; NULL after printing every problem, which makes cfg a config with errors. */
static struct proxy_tls *tls_new(const struct allow_config *cfg, int exec)
{
	struct allow_errors errs = {0};
	struct proxy_tls *tls =
	        proxy_tls_new(cfg, exec ? PROXY_TLS_EXEC : PROXY_TLS_SERVE, time(NULL), &errs);
	if (tls == NULL)
		print_errors(&errs);
	allow_errors_free(&errs);
	return tls;
}

/* Builds a generation from a loaded config; takes ownership of cfg and tls (freed on failure
 * too). */
static struct proxy_gen *gen_new(struct event_base *base, struct allow_config *cfg,
        struct proxy_tls *tls)
{
	struct proxy_gen *gen = calloc(1, sizeof *gen);
	if (gen == NULL) {
		proxy_tls_free(tls);
		allow_config_free(cfg);
		return NULL;
	}
	gen->tls = tls;
	gen->cfg = cfg;
	gen->refs = 1;
	gen->addrpol.allow = cfg->dns.allow_addresses;
	gen->addrpol.nallow = cfg->dns.nallow_addresses;
	gen->addrpol.deny = cfg->dns.deny_addresses;
	gen->addrpol.ndeny = cfg->dns.ndeny_addresses;
	char err[256] = "";
	gen->dns = dns_resolver_new(base, &cfg->dns, err, sizeof err);
	if (gen->dns == NULL) {
		fprintf(stderr, "egressd: %s: dns: %s\n", cfg->path, err);
		proxy_tls_free(tls);
		allow_config_free(cfg);
		free(gen);
		return NULL;
	}
	return gen;
}

void proxy_gen_hold(struct proxy_gen *gen)
{
	gen->refs++;
}

void proxy_gen_release(struct proxy_gen *gen)
{
	if (gen == NULL || --gen->refs > 0)
		return;
	dns_resolver_free(gen->dns);
	proxy_tls_free(gen->tls);
	allow_config_free(gen->cfg);
	free(gen);
}

/* Parses a listen address "IPv4:PORT" or "[IPv6]:PORT" (port 0 = ephemeral). */
static int parse_listen(const char *text, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[64];
	const char *colon;
	memset(ss, 0, sizeof *ss);
	if (text[0] == '[') {
		const char *rb = strchr(text, ']');
		if (rb == NULL || rb[1] != ':' || (size_t)(rb - text - 1) >= sizeof host)
			return -1;
		memcpy(host, text + 1, (size_t)(rb - text - 1));
		host[rb - text - 1] = '\0';
		colon = rb + 1;
	} else {
		colon = strrchr(text, ':');
		if (colon == NULL || (size_t)(colon - text) >= sizeof host)
			return -1;
		memcpy(host, text, (size_t)(colon - text));
		host[colon - text] = '\0';
	}
	char *end;
	errno = 0;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || colon[1] == '\0' || port > 65535)
		return -1;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		*len = sizeof *s4;
		return 0;
	}
	if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		*len = sizeof *s6;
		return 0;
	}
	return -1;
}

static void format_sockaddr(const struct sockaddr *sa, char *buf, size_t cap)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof ip);
		snprintf(buf, cap, "%s:%u", ip, ntohs(s4->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof ip);
		snprintf(buf, cap, "[%s]:%u", ip, ntohs(s6->sin6_port));
	} else {
		snprintf(buf, cap, "?");
	}
}

static void accept_cb(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa,
        int socklen, void *arg)
{
	(void)lev;
	struct proxy_listener *l = arg;
	proxy_conn_accept(l->srv, fd, sa, (socklen_t)socklen, l);
}

/* How long accepting pauses when descriptors or memory ran out: nginx's answer to EMFILE.  A
 * level-triggered listener that only logged the error would report it again at once, forever. */
#define ACCEPT_PAUSE_MS 100

static void set_listeners(struct proxy_server *srv, int on)
{
	for (size_t i = 0; i < srv->nlisteners; i++) {
		if (srv->listeners[i].lev == NULL)
			continue;
		if (on)
			evconnlistener_enable(srv->listeners[i].lev);
		else
			evconnlistener_disable(srv->listeners[i].lev);
	}
}

static void accept_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct proxy_server *srv = arg;
	srv->accept_paused = 0;
	if (!srv->stopping)
		set_listeners(srv, 1);
}

static void accept_error_cb(struct evconnlistener *lev, void *arg)
{
	(void)lev;
	const struct proxy_listener *l = arg;
	struct proxy_server *srv = l->srv;
	int err = EVUTIL_SOCKET_ERROR();
	if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
		if (!srv->accept_paused)
			fprintf(stderr, "egressd: accept on %s: %s; pausing new connections for %d ms\n",
			        l->text, evutil_socket_error_to_string(err), ACCEPT_PAUSE_MS);
		srv->accept_paused = 1;
		set_listeners(srv, 0);
		struct timeval tv = {0, ACCEPT_PAUSE_MS * 1000};
		evtimer_add(srv->accept_pause, &tv);
		return;
	}
	fprintf(stderr, "egressd: accept on %s: %s\n", l->text, evutil_socket_error_to_string(err));
}

static int open_one(struct proxy_server *srv, const struct allow_config *cfg, const char *text,
        enum proxy_listen_kind kind, const char *key)
{
	if (srv->nlisteners == PROXY_MAX_LISTENERS) {
		fprintf(stderr, "egressd: %s: listen: more than %d addresses\n", cfg->path,
		        PROXY_MAX_LISTENERS);
		return -1;
	}
	struct proxy_listener *l = &srv->listeners[srv->nlisteners];
	l->srv = srv;
	l->kind = kind;
	l->key = key;
	if (parse_listen(text, &l->addr, &l->addrlen) == -1) {
		fprintf(stderr, "egressd: %s: %s: \"%s\" is not IP:PORT\n", cfg->path, key, text);
		return -1;
	}
	l->lev = evconnlistener_new_bind(srv->base, accept_cb, l,
	        LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 4096,
	        (struct sockaddr *)&l->addr, (int)l->addrlen);
	if (l->lev == NULL) {
		fprintf(stderr, "egressd: %s: listen on %s: %s\n", key, text, strerror(errno));
		return -1;
	}
	evconnlistener_set_error_cb(l->lev, accept_error_cb);
	/* Accepted sockets inherit TCP_NODELAY from their listener on Linux: one call here
	 * instead of one per connection (conn.c sets it again where that is not so). */
	int one = 1;
	setsockopt(evconnlistener_get_fd(l->lev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	l->addrlen = sizeof l->addr;
	if (getsockname(evconnlistener_get_fd(l->lev), (struct sockaddr *)&l->addr, &l->addrlen) ==
	        -1) {
		fprintf(stderr, "egressd: getsockname: %s\n", strerror(errno));
		return -1;
	}
	format_sockaddr((struct sockaddr *)&l->addr, l->text, sizeof l->text);
	srv->nlisteners++;
	if (srv->run != NULL && srv->run->quiet)
		;
	else if (kind == PROXY_LISTEN_HTTP)
		fprintf(stderr, "egressd: listening on %s\n", l->text);
	else
		fprintf(stderr, "egressd: listening on %s (%s)\n", l->text, key);
	return 0;
}

static int open_listeners(struct proxy_server *srv, const struct allow_config *cfg)
{
	for (size_t i = 0; i < cfg->nlisten_proxy; i++)
		if (open_one(srv, cfg, cfg->listen_proxy[i], PROXY_LISTEN_HTTP, "listen.proxy") == -1)
			return -1;
	for (size_t i = 0; i < cfg->nlisten_socks5; i++)
		if (open_one(srv, cfg, cfg->listen_socks5[i], PROXY_LISTEN_SOCKS5, "listen.socks5") ==
		        -1)
			return -1;
	for (size_t i = 0; i < cfg->nlisten_transparent; i++)
		if (open_one(srv, cfg, cfg->listen_transparent[i], PROXY_LISTEN_TRANSPARENT,
		            "listen.transparent") == -1)
			return -1;
	return 0;
}

/* A wildcard listener is reached through every address of this host, not only loopback: reads
 * them (getifaddrs) so that the loop check knows them.  Only when some listener is a wildcard;
 * re-read on reload, since addresses can come and go (a failure keeps the old list). */
static void read_own_addrs(struct proxy_server *srv)
{
	int wildcard = 0;
	for (size_t i = 0; i < srv->nlisteners; i++) {
		const struct sockaddr_storage *ss = &srv->listeners[i].addr;
		if (ss->ss_family == AF_INET)
			wildcard |= ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
		else if (ss->ss_family == AF_INET6)
			wildcard |= IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)ss)->sin6_addr);
	}
	struct ifaddrs *ifs;
	if (!wildcard || getifaddrs(&ifs) == -1)
		return;
	size_t n = 0;
	for (struct ifaddrs *i = ifs; i != NULL; i = i->ifa_next)
		if (i->ifa_addr != NULL &&
			(i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6))
			n++;
	struct dns_addr *a = calloc(n ? n : 1, sizeof *a);
	if (a == NULL) {
		freeifaddrs(ifs);
		return;
	}
	n = 0;
	for (struct ifaddrs *i = ifs; i != NULL; i = i->ifa_next) {
		if (i->ifa_addr == NULL)
			continue;
		if (i->ifa_addr->sa_family == AF_INET) {
			a[n].family = AF_INET;
			memcpy(a[n++].addr, &((const struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			a[n].family = AF_INET6;
			memcpy(a[n++].addr, &((const struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
		}
	}
	freeifaddrs(ifs);
	free(srv->own_addrs);
	srv->own_addrs = a;
	srv->nown_addrs = n;
}

int proxy_is_own_addr(const struct proxy_server *srv, const struct dns_addr *a)
{
	for (size_t i = 0; i < srv->nown_addrs; i++)
		if (srv->own_addrs[i].family == a->family &&
			memcmp(srv->own_addrs[i].addr, a->addr, a->family == AF_INET ? 4 : 16) == 0)
			return 1;
	return 0;
}

/* The address as the kernel would dial it: IPv4 out of an IPv4-mapped IPv6 address. */
static void dial_form(const struct dns_addr *a, struct dns_addr *out)
{
	*out = *a;
	if (a->family == AF_INET6 && IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)a->addr)) {
		out->family = AF_INET;
		memcpy(out->addr, a->addr + 12, 4);
		memset(out->addr + 4, 0, 12);
	}
}

/* 0.0.0.0 and :: dial this host, so they reach every listener on that port; a wildcard
 * listener is reached by any loopback address and by every address of this host's
 * interfaces. */
const struct proxy_listener *proxy_own_listener(const struct proxy_server *srv,
        const struct dns_addr *a, uint16_t port)
{
	struct dns_addr d;
	dial_form(a, &d);
	static const uint8_t zero[16];
	int any = memcmp(d.addr, zero, d.family == AF_INET ? 4 : 16) == 0;
	int loopback = d.family == AF_INET ? d.addr[0] == 127
	                                   : IN6_IS_ADDR_LOOPBACK((const struct in6_addr *)d.addr);
	for (size_t j = 0; j < srv->nlisteners + srv->ndns_listeners; j++) {
		const struct proxy_listener *l = j < srv->nlisteners
		                                         ? &srv->listeners[j]
		                                         : &srv->dns_listeners[j - srv->nlisteners];
		const uint8_t *laddr;
		size_t alen;
		uint16_t lport;
		int lfamily = l->addr.ss_family;
		if (lfamily == AF_INET) {
			const struct sockaddr_in *s4 = (const struct sockaddr_in *)&l->addr;
			laddr = (const uint8_t *)&s4->sin_addr;
			alen = 4;
			lport = ntohs(s4->sin_port);
		} else {
			const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&l->addr;
			laddr = (const uint8_t *)&s6->sin6_addr;
			alen = 16;
			lport = ntohs(s6->sin6_port);
		}
		if (lport != port)
			continue;
		int lany = memcmp(laddr, zero, alen) == 0;
		if (any || (lany && (loopback || proxy_is_own_addr(srv, &d))) ||
		        (lfamily == d.family && memcmp(laddr, d.addr, alen) == 0))
			return l;
	}
	return NULL;
}

static void close_listeners(struct proxy_server *srv)
{
	for (size_t i = 0; i < srv->nlisteners; i++) {
		if (srv->listeners[i].lev != NULL) {
			evconnlistener_free(srv->listeners[i].lev);
			srv->listeners[i].lev = NULL;
		}
	}
}

/* ---- connections per client address before a session is known ----
 *
 * limits.maxClientsPerSource: one client address may hold that many connections that no session
 * has claimed yet (half-sent heads, unfinished greetings), so that one process cannot take every
 * maxClients slot and lock every session out.  An open hash keyed by the address. */
struct proxy_source {
	struct dns_addr addr;
	uint64_t n;
};

static size_t source_hash(const struct dns_addr *a, size_t cap)
{
	uint64_t h = 1469598103934665603u;
	for (size_t i = 0; i < (a->family == AF_INET ? 4u : 16u); i++) {
		h ^= a->addr[i];
		h *= 1099511628211u;
	}
	return (size_t)h & (cap - 1);
}

static int same_addr(const struct dns_addr *a, const struct dns_addr *b)
{
	return a->family == b->family && memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 16) == 0;
}

static struct proxy_source **source_slot(struct proxy_server *srv, const struct dns_addr *a)
{
	for (size_t i = source_hash(a, srv->sources_cap);; i = (i + 1) & (srv->sources_cap - 1))
		if (srv->sources[i] == NULL || same_addr(&srv->sources[i]->addr, a))
			return &srv->sources[i];
}

int proxy_source_add(struct proxy_server *srv, const struct dns_addr *a)
{
	if (srv->sources == NULL) {
		srv->sources_cap = 1024;
		srv->sources = calloc(srv->sources_cap, sizeof *srv->sources);
		if (srv->sources == NULL)
			return -1;
	}
	struct proxy_source **slot = source_slot(srv, a);
	if (*slot == NULL) {
		/* Open addressing without deletion marks: entries go when their count is 0, and
		 * the table is rebuilt when it fills past half. */
		size_t used = 0;
		for (size_t i = 0; i < srv->sources_cap; i++)
			used += srv->sources[i] != NULL;
		if (2 * (used + 1) > srv->sources_cap) {
			size_t ncap = srv->sources_cap * 2;
			struct proxy_source **n = calloc(ncap, sizeof *n);
			if (n == NULL)
				return -1;
			struct proxy_source **old = srv->sources;
			size_t ocap = srv->sources_cap;
			srv->sources = n;
			srv->sources_cap = ncap;
			for (size_t i = 0; i < ocap; i++)
				if (old[i] != NULL)
					*source_slot(srv, &old[i]->addr) = old[i];
			free(old);
			slot = source_slot(srv, a);
		}
		*slot = calloc(1, sizeof **slot);
		if (*slot == NULL)
			return -1;
		(*slot)->addr = *a;
	}
	if ((*slot)->n >= srv->gen->cfg->limits.max_clients_per_source)
		return -1;
	(*slot)->n++;
	return 0;
}

void proxy_source_del(struct proxy_server *srv, const struct dns_addr *a)
{
	if (srv->sources == NULL)
		return;
	struct proxy_source **slot = source_slot(srv, a);
	if (*slot == NULL || --(*slot)->n > 0)
		return;
	/* Removing from a linear-probe table: re-insert the run that follows. */
	free(*slot);
	*slot = NULL;
	size_t i = (size_t)(slot - srv->sources);
	for (i = (i + 1) & (srv->sources_cap - 1); srv->sources[i] != NULL;
	        i = (i + 1) & (srv->sources_cap - 1)) {
		struct proxy_source *e = srv->sources[i];
		srv->sources[i] = NULL;
		*source_slot(srv, &e->addr) = e;
	}
}

static void sources_free(struct proxy_server *srv)
{
	for (size_t i = 0; i < srv->sources_cap; i++)
		free(srv->sources[i]);
	free(srv->sources);
	srv->sources = NULL;
	srv->sources_cap = 0;
}

/* ---- the audit log ---- */

static void audit_simple(struct proxy_server *srv, const char *event, const char *k1,
        const char *v1, const char *k2, const char *v2)
{
	struct audit_rec r;
	audit_rec_init(&r);
	r.event = event;
	audit_rec_str(&r, k1, v1);
	audit_rec_str(&r, k2, v2);
	/* Kept while the log cannot take it; a failure is said once by the log's notice. */
	audit_write(srv->audit, &r, AUDIT_EVENT);
}

static void check_stopped(struct proxy_server *srv)
{
	if (srv->stopping && srv->nconns == 0)
		event_base_loopexit(srv->base, NULL);
}

static void grace_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct proxy_server *srv = arg;
	while (srv->conns != NULL)
		proxy_conn_close(srv->conns, "shutdown");
	check_stopped(srv);
}

static void begin_stop(struct proxy_server *srv, const char *why)
{
	if (srv->stopping)
		return;
	srv->stopping = 1;
	proxy_pool_clear(srv);
	if (srv->run == NULL || !srv->run->quiet)
		fprintf(stderr, "egressd: %s: stopping (open connections: %zu)\n", why, srv->nconns);
	close_listeners(srv);
	proxy_dnsfront_stop(srv);
	/* Connections waiting for a first request carry nothing: close them now. */
	struct proxy_conn *c = srv->conns;
	while (c != NULL) {
		struct proxy_conn *next = c->next;
		if (c->client.state == PROXY_CLIENT_REQUEST && c->bytes_out == 0 &&
		        c->client.bev != NULL &&
		        evbuffer_get_length(bufferevent_get_input(c->client.bev)) == 0)
			proxy_conn_close(c, "shutdown");
		c = next;
	}
	uint64_t ms = srv->gen->cfg->limits.shutdown_grace_ms;
	struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
	srv->grace = evtimer_new(srv->base, grace_cb, srv);
	if (srv->grace != NULL)
		evtimer_add(srv->grace, &tv);
	check_stopped(srv);
}

static int same_strings(char **a, size_t na, char **b, size_t nb)
{
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return 0;
	return 1;
}

static int same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Keys that a reload cannot apply: the running ones stay, and egressd says so. */
static void report_restart_keys(const struct allow_config *old, const struct allow_config *cfg)
{
	const char *keys[10];
	size_t n = 0;
	if (!same_strings(old->listen_proxy, old->nlisten_proxy, cfg->listen_proxy,
	            cfg->nlisten_proxy))
		keys[n++] = "listen.proxy";
	if (!same_strings(old->listen_socks5, old->nlisten_socks5, cfg->listen_socks5,
	            cfg->nlisten_socks5))
		keys[n++] = "listen.socks5";
	if (!same_strings(old->listen_transparent, old->nlisten_transparent,
	            cfg->listen_transparent, cfg->nlisten_transparent))
		keys[n++] = "listen.transparent";
	/* listen.dnsAnswers follows reloads: each answer reads the current generation's. */
	if (!same_strings(old->listen_dns, old->nlisten_dns, cfg->listen_dns, cfg->nlisten_dns))
		keys[n++] = "listen.dns";
	if (!same_str(old->listen_control, cfg->listen_control))
		keys[n++] = "listen.control";
	if (!same_str(old->listen_metrics, cfg->listen_metrics))
		keys[n++] = "listen.metrics";
	if (!same_str(old->audit_path, cfg->audit_path))
		keys[n++] = "audit.path";
	if (old->audit_chain != cfg->audit_chain)
		keys[n++] = "audit.chain";
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "egressd: reload: %s changed; it takes effect only after a restart (the "
		                "running value stays)\n",
		        keys[i]);
}

static void reload(struct proxy_server *srv)
{
	struct allow_errors errs = {0};
	struct allow_config *cfg = allow_config_load(srv->config_path, &errs);
	if (cfg == NULL) {
		print_errors(&errs);
		fprintf(stderr, "egressd: reload failed; the running config stays\n");
		audit_simple(srv, "config", "config", srv->config_path, "error",
		        errs.n ? errs.lines[0] : "unreadable");
		allow_errors_free(&errs);
		return;
	}
	allow_errors_free(&errs);
	struct proxy_tls *tls = tls_new(cfg, 0);
	if (tls == NULL) {
		fprintf(stderr, "egressd: reload failed; the running config stays\n");
		audit_simple(srv, "config", "config", srv->config_path, "error",
		        "tls: the CA or the upstream trust cannot be used");
		allow_config_free(cfg);
		return;
	}
	struct proxy_gen *gen = gen_new(srv->base, cfg, tls);
	if (gen == NULL) {
		fprintf(stderr, "egressd: reload failed; the running config stays\n");
		return;
	}
	report_restart_keys(srv->gen->cfg, gen->cfg);
	struct proxy_gen *old = srv->gen;
	srv->gen = gen;
	/* Sessions keep their counters; each now points at its new config. */
	if (proxy_sessions_apply(srv, gen->cfg) == -1)
		fprintf(stderr, "egressd: reload: out of memory for a session\n");
	proxy_pool_clear(srv); /* parked upstreams were admitted by the old address policy */
	read_own_addrs(srv);
	http_parser_set_max_header_size((uint32_t)(gen->cfg->limits.max_header_bytes + 1024));
	/* What open connections carry is decided again: a destination the new config takes
	 * away ends (policy-changed); new limits and timeouts apply at once. */
	for (struct proxy_conn *c = srv->conns, *next; c != NULL; c = next) {
		next = c->next;
		if (proxy_pipeline_recheck(c) == 0)
			proxy_conn_rearm(c);
	}
	proxy_gen_release(old);
	fprintf(stderr, "egressd: reloaded %s\n", srv->config_path);
	audit_simple(srv, "config", "config", srv->config_path, "result", "reloaded");
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)what;
	struct proxy_server *srv = arg;
	switch (sig) {
	case SIGTERM:
		begin_stop(srv, "SIGTERM");
		break;
	case SIGINT:
		begin_stop(srv, "SIGINT");
		break;
	case SIGHUP:
		reload(srv);
		break;
	case SIGUSR1:
		if (audit_reopen(srv->audit) == -1)
			fprintf(stderr, "egressd: audit reopen: %s\n", audit_last_error(srv->audit));
		break;
	default:
		break;
	}
}

/* Frees closed connections (proxy_conn_close queued them), from the loop. */
static void reap_dead(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct proxy_server *srv = arg;
	while (srv->dead != NULL) {
		struct proxy_conn *c = srv->dead;
		srv->dead = c->next;
		free(c);
	}
	proxy_server_conn_gone(srv);
}

static void trim_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	malloc_trim(0);
}

/* How long after a burst ends egressd trims: libevent frees a closed connection's
 * bufferevents from its own deferred callbacks, a loop turn or more after the close, and a trim
 * made before that would leave their pages (5,000 closed tunnels kept +150 % of the start's RSS
 * with an immediate trim, +5 % with one 200 ms later). */
#define TRIM_DELAY_MS 200

void proxy_server_conn_gone(struct proxy_server *srv)
{
	/* After a burst of connections ends, glibc keeps the freed memory; hand it back so that
	 * egressd's footprint follows its load.  Rare: when three quarters of a peak of at least 64
	 * connections are gone, and when the last connection of a burst closes. */
	if ((srv->peak_conns >= 64 && srv->nconns <= srv->peak_conns / 4) ||
		(srv->nconns == 0 && srv->peak_conns > 1)) {
		srv->peak_conns = srv->nconns;
		if (srv->trim != NULL && !evtimer_pending(srv->trim, NULL)) {
			struct timeval tv = {0, TRIM_DELAY_MS * 1000};
			evtimer_add(srv->trim, &tv);
		}
	}
	check_stopped(srv);
}

/* libevent keeps a small record (about 40 bytes with its slot) for every descriptor number it
 * has ever watched, for the life of the loop.  Made one at a time as a burst of connections
 * reaches higher numbers, each would land amid that burst's connection memory and pin its page:
 * after the burst the heap could not shrink and RSS would stay at its peak.  So egressd makes them
 * ahead: at start for every number it may use (2 x limits.maxClients + 64, at most the descriptor
 * limit), as nginx sizes its connection array for worker_connections; later, should a connection
 * get a higher number (a reload raised maxClients), a block of FD_BLOCK at a time.  Each record
 * is made by adding and deleting an event on the number: no descriptor is needed, and with the
 * changelist the pair cancels out before any system call. */
#define FD_BLOCK 1024

static void fd_noop(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

static void fd_records(struct proxy_server *srv, int end)
{
	struct event ev;
	for (int k = srv->fd_reserved; k < end; k++)
		if (event_assign(&ev, srv->base, k, EV_READ, fd_noop, NULL) == 0 &&
			event_add(&ev, NULL) == 0)
			event_del(&ev);
	if (end > srv->fd_reserved)
		srv->fd_reserved = end;
}

void proxy_fd_reserve(struct proxy_server *srv, int fd)
{
	if (fd >= srv->fd_reserved)
		fd_records(srv, (fd / FD_BLOCK + 1) * FD_BLOCK);
}

/* The start-up reservation, in blocks: after each, a non-blocking loop turn empties the
 * changelist (a no-op entry per number), which would otherwise grow to one entry per number and
 * keep that size.  A pending timer gives the loop something to wait for. */
static void fd_reserve_start(struct proxy_server *srv, uint64_t max_clients)
{
	struct rlimit rl;
	uint64_t want = 2 * max_clients + 64;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want)
		want = rl.rlim_cur;
	if (want > INT_MAX)
		want = INT_MAX;
	struct event *keep = evtimer_new(srv->base, fd_noop, NULL);
	struct timeval hour = {3600, 0};
	if (keep != NULL)
		evtimer_add(keep, &hour);
	while (srv->fd_reserved < (int)want) {
		int end = srv->fd_reserved + FD_BLOCK;
		fd_records(srv, end < (int)want ? end : (int)want);
		if (keep != NULL)
			event_base_loop(srv->base, EVLOOP_NONBLOCK);
	}
	if (keep != NULL)
		event_free(keep);
}

/* Each client and each upstream takes a descriptor: lift the soft limit to the hard one so that
 * limits.maxClients, not a 1024-descriptor default, is what bounds egressd. */
static uint64_t raise_fd_limit(uint64_t max_clients, int quiet)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return 0;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (!quiet && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 2 * max_clients + 64)
		fprintf(stderr, "egressd: the descriptor limit (%llu) is below what limits.maxClients "
				"(%llu) needs; raise it (ulimit -n) or lower maxClients\n",
			(unsigned long long)rl.rlim_cur, (unsigned long long)max_clients);
	return rl.rlim_cur == RLIM_INFINITY ? 0 : (uint64_t)rl.rlim_cur;
}

void proxy_server_stop(struct proxy_server *srv, const char *why)
{
	begin_stop(srv, why);
}

/* Listening sockets made elsewhere (exec --isolate makes them inside CMD's namespace). */
static int adopt_listeners(struct proxy_server *srv, const struct proxy_run *run)
{
	static const char *const keys[] = {[PROXY_LISTEN_HTTP] = "listen.proxy",
	        [PROXY_LISTEN_SOCKS5] = "listen.socks5",
	        [PROXY_LISTEN_TRANSPARENT] = "listen.transparent"};
	for (size_t i = 0; i < run->nsocks; i++) {
		if (srv->nlisteners == PROXY_MAX_LISTENERS)
			return -1;
		struct proxy_listener *l = &srv->listeners[srv->nlisteners];
		l->srv = srv;
		l->kind = run->socks[i].kind;
		l->key = keys[l->kind];
		l->lev = evconnlistener_new(srv->base, accept_cb, l,
		        LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, run->socks[i].fd);
		if (l->lev == NULL)
			return -1;
		run->socks[i].fd = -1; /* the listener owns it now */
		evconnlistener_set_error_cb(l->lev, accept_error_cb);
		l->addrlen = sizeof l->addr;
		if (getsockname(evconnlistener_get_fd(l->lev), (struct sockaddr *)&l->addr,
		            &l->addrlen) == -1)
			return -1;
		format_sockaddr((struct sockaddr *)&l->addr, l->text, sizeof l->text);
		srv->nlisteners++;
	}
	return 0;
}

int proxy_serve(const char *config_path)
{
	struct proxy_run run = {.config_path = config_path, .signals = 1};
	return proxy_run(&run);
}

int proxy_run(struct proxy_run *run)
{
	const char *config_path = run->config_path ? run->config_path : run->cfg->path;
	/* glibc gives the top of the heap back to the kernel whenever 128 KiB of it is free, so a
	 * connection that closes and the next that opens each paid a brk() and page faults (2 % of
	 * egressd's CPU on new connections).  Memory goes back when a burst ends instead
	 * (proxy_server_conn_gone). */
	mallopt(M_TRIM_THRESHOLD, 8 * 1024 * 1024);
	struct allow_errors errs = {0};
	struct allow_config *cfg = run->cfg;
	run->cfg = NULL;
	if (cfg == NULL)
		cfg = allow_config_load(config_path, &errs);
	if (cfg == NULL) {
		print_errors(&errs);
		allow_errors_free(&errs);
		return 2;
	}
	allow_errors_free(&errs);
	struct proxy_tls *tls = tls_new(cfg, run->tls_exec);
	if (tls == NULL) {
		allow_config_free(cfg);
		return 2;
	}
	struct proxy_server srv_storage;
	struct proxy_server *srv = &srv_storage;
	memset(srv, 0, sizeof *srv);
	srv->next_conn_id = 1;
	srv->run = run;
	srv->config_path = strdup(config_path);
	int rc = 1;

	/* With the changelist, the enable/disable pairs of one loop turn on a descriptor become one
	 * epoll_ctl (or none) instead of one each.  egressd never dup()s a socket it watches, which
	 * is the changelist's one caveat. */
	struct event_config *ecfg = event_config_new();
	if (ecfg != NULL) {
		event_config_set_flag(ecfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
		srv->base = event_base_new_with_config(ecfg);
		event_config_free(ecfg);
	}
	if (srv->base == NULL || srv->config_path == NULL) {
		fprintf(stderr, "egressd: out of memory\n");
		proxy_tls_free(tls);
		allow_config_free(cfg);
		goto out;
	}
	srv->fd_limit = raise_fd_limit(cfg->limits.max_clients, run->quiet);
	fd_reserve_start(srv, cfg->limits.max_clients);
	char err[256] = "";
	if (proxy_audit_open(srv, cfg, err, sizeof err) == -1) {
		fprintf(stderr, "egressd: audit.path %s: %s\n", cfg->audit_path, err);
		proxy_tls_free(tls);
		allow_config_free(cfg);
		goto out;
	}
	srv->gen = gen_new(srv->base, cfg, tls);
	if (srv->gen == NULL)
		goto out;
	srv->reap = event_new(srv->base, -1, 0, reap_dead, srv);
	srv->accept_pause = evtimer_new(srv->base, accept_resume_cb, srv);
	srv->trim = evtimer_new(srv->base, trim_cb, srv);
	if (srv->reap == NULL || srv->accept_pause == NULL || srv->trim == NULL ||
	        proxy_sessions_apply(srv, srv->gen->cfg) == -1) {
		fprintf(stderr, "egressd: out of memory\n");
		goto out;
	}
	http_parser_set_max_header_size((uint32_t)(srv->gen->cfg->limits.max_header_bytes + 1024));
	const int sigs[5] = {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGUSR1};
	for (int i = 0; i < (run->signals ? 5 : 1); i++) {
		srv->sig[i] = evsignal_new(srv->base, sigs[i], signal_cb, srv);
		if (srv->sig[i] == NULL || evsignal_add(srv->sig[i], NULL) == -1) {
			fprintf(stderr, "egressd: cannot watch signal %d\n", sigs[i]);
			goto out;
		}
	}

	if (open_listeners(srv, srv->gen->cfg) == -1 || adopt_listeners(srv, run) == -1 ||
	        proxy_dnsfront_open(srv) == -1)
		goto out;
	read_own_addrs(srv);

	char listen[PROXY_MAX_LISTENERS * PROXY_ADDR_TEXT] = "";
	size_t off = 0;
	for (size_t i = 0; i < srv->nlisteners && off < sizeof listen; i++)
		off += (size_t)snprintf(listen + off, sizeof listen - off, "%s%s", i ? " " : "",
		        srv->listeners[i].text);
	for (size_t i = 0; i < srv->ndns_listeners && off < sizeof listen; i++)
		off += (size_t)snprintf(listen + off, sizeof listen - off, "%sdns:%s", off ? " " : "",
		        srv->dns_listeners[i].text);
	struct audit_rec r;
	audit_rec_init(&r);
	r.event = "start";
	audit_rec_str(&r, "version", EGRESSD_VERSION);
	audit_rec_num(&r, "pid", (int64_t)getpid());
	audit_rec_str(&r, "listen", listen);
	audit_write(srv->audit, &r, AUDIT_EVENT);
	audit_rec_init(&r);
	r.event = "config";
	audit_rec_str(&r, "config", srv->config_path);
	audit_rec_num(&r, "sessions", (int64_t)srv->gen->cfg->nsessions);
	audit_write(srv->audit, &r, AUDIT_EVENT);
	/* Without a default session, only credentials or client addresses pick one; that is a
	 * mistake only when no session can be picked either way. */
	int any_token = 0, any_clients = 0;
	for (size_t i = 0; i < srv->gen->cfg->nsessions; i++) {
		any_token |= srv->gen->cfg->sessions[i].token != NULL;
		any_clients |= srv->gen->cfg->sessions[i].nclients > 0;
	}
	if (allow_config_session(srv->gen->cfg, "default") == NULL && !any_token && !any_clients &&
	        run->session == NULL)
		fprintf(stderr, "egressd: no session named \"default\", and none with a token or "
		                "clients: every connection will be denied\n");

	if (run->ready != NULL && run->ready(srv, run->arg) == -1)
		goto out;
	event_base_dispatch(srv->base);
	rc = srv->exit_code;

	audit_rec_init(&r);
	r.event = "stop";
	audit_write(srv->audit, &r, AUDIT_EVENT);
out:
	while (srv->conns != NULL)
		proxy_conn_close(srv->conns, "shutdown");
	if (srv->reap != NULL)
		reap_dead(-1, 0, srv);
	if (run->done != NULL && srv->base != NULL)
		run->done(srv, run->arg);
	proxy_pool_clear(srv);
	close_listeners(srv);
	proxy_dnsfront_free(srv); /* lets go of the generations its pending answers hold */
	for (int i = 0; i < 5; i++)
		if (srv->sig[i] != NULL)
			event_free(srv->sig[i]);
	if (srv->grace != NULL)
		event_free(srv->grace);
	if (srv->reap != NULL)
		event_free(srv->reap);
	if (srv->accept_pause != NULL)
		event_free(srv->accept_pause);
	if (srv->trim != NULL)
		event_free(srv->trim);
	proxy_sessions_free(srv);
	sources_free(srv);
	proxy_gen_release(srv->gen);
	proxy_audit_close(srv);
	if (srv->base != NULL)
		event_base_free(srv->base);
	free(srv->own_addrs);
	free(srv->config_path);
	allow_errors_free(&errs);
	return rc;
}
