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

#include <event2/event.h>
#include <event2/event_struct.h>
#include <event2/listener.h>

#include "audit/audit.h"
#include "proxy/proxy.h"

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

/* Links a new generation in and hands each session of the older ones on to the session of the
 * same name in the new one: its counters and clock move over, and the old session's successor
 * points at it, so connections of old generations count against the live session.  A session
 * the new config drops keeps its counters where they are. */
static void gen_link(struct proxy_server *srv, struct proxy_gen *gen)
{
	for (struct proxy_gen *old = srv->gens; old != NULL; old = old->next) {
		for (size_t i = 0; i < old->cfg->nsessions; i++) {
			struct proxy_session *os = &old->sessions[i];
			if (os->successor != NULL)
				continue; /* handed on already; its successor is being handed on */
			struct proxy_session *ns = NULL;
			for (size_t j = 0; j < gen->cfg->nsessions && ns == NULL; j++)
				if (strcmp(gen->sessions[j].cfg->name, os->cfg->name) == 0)
					ns = &gen->sessions[j];
			if (ns == NULL)
				continue;
			ns->active = os->active;
			ns->total = os->total;
			ns->bytes_out = os->bytes_out;
			ns->bytes_in = os->bytes_in;
			ns->started_ms = os->started_ms;
			ns->seen = os->seen;
			ns->seen_n = os->seen_n;
			ns->seen_cap = os->seen_cap;
			ns->ring = os->ring;
			ns->ring_head = os->ring_head;
			ns->ring_n = os->ring_n;
			os->seen = NULL;
			os->seen_cap = os->seen_n = 0;
			os->ring = NULL;
			os->ring_n = 0;
			os->successor = ns;
		}
	}
	/* Sessions handed on earlier now lead to the newest one directly. */
	for (struct proxy_gen *old = srv->gens; old != NULL; old = old->next)
		for (size_t i = 0; i < old->cfg->nsessions; i++)
			old->sessions[i].successor = proxy_session_live(old->sessions[i].successor);
	gen->srv = srv;
	gen->next = srv->gens;
	if (srv->gens != NULL)
		srv->gens->prev = gen;
	srv->gens = gen;
}

/* Builds a generation from a loaded config; takes ownership of cfg (freed on failure too). */
static struct proxy_gen *gen_new(struct event_base *base, struct allow_config *cfg)
{
	struct proxy_gen *gen = calloc(1, sizeof *gen);
	if (gen == NULL) {
		allow_config_free(cfg);
		return NULL;
	}
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
		allow_config_free(cfg);
		free(gen);
		return NULL;
	}
	if (cfg->nsessions > 0) {
		gen->sessions = calloc(cfg->nsessions, sizeof *gen->sessions);
		if (gen->sessions == NULL) {
			dns_resolver_free(gen->dns);
			allow_config_free(cfg);
			free(gen);
			return NULL;
		}
	}
	uint64_t now = proxy_now_ms();
	for (size_t i = 0; i < cfg->nsessions; i++) {
		gen->sessions[i].cfg = &cfg->sessions[i];
		gen->sessions[i].started_ms = now;
		if (strcmp(cfg->sessions[i].name, "default") == 0)
			gen->dflt = &gen->sessions[i];
	}
	return gen;
}

void proxy_gen_release(struct proxy_gen *gen)
{
	if (gen == NULL || --gen->refs > 0)
		return;
	if (gen->srv != NULL) {
		if (gen->prev != NULL)
			gen->prev->next = gen->next;
		else
			gen->srv->gens = gen->next;
		if (gen->next != NULL)
			gen->next->prev = gen->prev;
		/* Sessions of older generations that still lead here keep their own counters
		 * from now on (this generation's sessions were dropped by a later config). */
		for (struct proxy_gen *g = gen->srv->gens; g != NULL; g = g->next)
			for (size_t i = 0; i < g->cfg->nsessions; i++) {
				struct proxy_session *succ = g->sessions[i].successor;
				if (succ >= gen->sessions && succ < gen->sessions + gen->cfg->nsessions)
					g->sessions[i].successor = NULL;
			}
	}
	dns_resolver_free(gen->dns);
	for (size_t i = 0; gen->sessions != NULL && i < gen->cfg->nsessions; i++)
		proxy_session_free(&gen->sessions[i]);
	free(gen->sessions);
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

static void accept_error_cb(struct evconnlistener *lev, void *arg)
{
	(void)lev;
	const struct proxy_listener *l = arg;
	int err = EVUTIL_SOCKET_ERROR();
	/* EMFILE and friends: keep running; the listener retries on the next readiness. */
	fprintf(stderr, "egressd: accept on %s: %s\n", l->text, evutil_socket_error_to_string(err));
}

static int open_listeners(struct proxy_server *srv, const struct allow_config *cfg)
{
	for (size_t i = 0; i < cfg->nlisten_proxy; i++) {
		if (srv->nlisteners == PROXY_MAX_LISTENERS) {
			fprintf(stderr, "egressd: %s: listen.proxy: more than %d addresses\n",
				cfg->path, PROXY_MAX_LISTENERS);
			return -1;
		}
		struct proxy_listener *l = &srv->listeners[srv->nlisteners];
		l->srv = srv;
		if (parse_listen(cfg->listen_proxy[i], &l->addr, &l->addrlen) == -1) {
			fprintf(stderr, "egressd: %s: listen.proxy: \"%s\" is not IP:PORT\n", cfg->path,
				cfg->listen_proxy[i]);
			return -1;
		}
		l->lev = evconnlistener_new_bind(srv->base, accept_cb, l,
			LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 4096,
			(struct sockaddr *)&l->addr, (int)l->addrlen);
		if (l->lev == NULL) {
			fprintf(stderr, "egressd: listen on %s: %s\n", cfg->listen_proxy[i],
				strerror(errno));
			return -1;
		}
		evconnlistener_set_error_cb(l->lev, accept_error_cb);
		/* Accepted sockets inherit TCP_NODELAY from their listener on Linux: one call here
		 * instead of one per connection (conn.c sets it again where that is not so). */
		int one = 1;
		setsockopt(evconnlistener_get_fd(l->lev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		l->addrlen = sizeof l->addr;
		if (getsockname(evconnlistener_get_fd(l->lev), (struct sockaddr *)&l->addr,
			    &l->addrlen) == -1) {
			fprintf(stderr, "egressd: getsockname: %s\n", strerror(errno));
			return -1;
		}
		format_sockaddr((struct sockaddr *)&l->addr, l->text, sizeof l->text);
		srv->nlisteners++;
		fprintf(stderr, "egressd: listening on %s\n", l->text);
	}
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

static void close_listeners(struct proxy_server *srv)
{
	for (size_t i = 0; i < srv->nlisteners; i++) {
		if (srv->listeners[i].lev != NULL) {
			evconnlistener_free(srv->listeners[i].lev);
			srv->listeners[i].lev = NULL;
		}
	}
}

/* A config record; kept while the log cannot take it (the log's notice says so, once). */
static void audit_simple(struct proxy_server *srv, const char *event, const char *k1,
	const char *v1, const char *k2, const char *v2)
{
	struct audit_rec r;
	audit_rec_init(&r);
	r.event = event;
	audit_rec_str(&r, k1, v1);
	audit_rec_str(&r, k2, v2);
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
	fprintf(stderr, "egressd: %s: stopping (open connections: %zu)\n", why, srv->nconns);
	close_listeners(srv);
	proxy_dnsfront_stop(srv);
	/* Connections waiting for a request head carry nothing: close them now. */
	struct proxy_conn *c = srv->conns;
	while (c != NULL) {
		struct proxy_conn *next = c->next;
		if (c->state == PROXY_CS_HEAD && c->req.bytes == 0)
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
	struct proxy_gen *gen = gen_new(srv->base, cfg);
	if (gen == NULL) {
		fprintf(stderr, "egressd: reload failed; the running config stays\n");
		return;
	}
	gen_link(srv, gen);
	if (!same_strings(srv->gen->cfg->listen_dns, srv->gen->cfg->nlisten_dns,
		    gen->cfg->listen_dns, gen->cfg->nlisten_dns))
		fprintf(stderr, "egressd: listen.dns changed: it takes effect on restart\n");
	proxy_gen_release(srv->gen);
	srv->gen = gen;
	proxy_pool_clear(srv); /* parked upstreams were admitted by the old address policy */
	read_own_addrs(srv);
	http_parser_set_max_header_size((uint32_t)(gen->cfg->limits.max_header_bytes + 1024));
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

void proxy_server_conn_gone(struct proxy_server *srv)
{
	/* After a burst of connections ends, glibc keeps the freed memory; hand it back so that
	 * egressd's footprint follows its load.  Rare: when three quarters of a peak of at least 64
	 * connections are gone, and when the last connection of a burst closes. */
	if ((srv->peak_conns >= 64 && srv->nconns <= srv->peak_conns / 4) ||
		(srv->nconns == 0 && srv->peak_conns > 1)) {
		malloc_trim(0);
		srv->peak_conns = srv->nconns;
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
static void raise_fd_limit(uint64_t max_clients)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 2 * max_clients + 64)
		fprintf(stderr, "egressd: the descriptor limit (%llu) is below what limits.maxClients "
				"(%llu) needs; raise it (ulimit -n) or lower maxClients\n",
			(unsigned long long)rl.rlim_cur, (unsigned long long)max_clients);
}

int proxy_serve(const char *config_path)
{
	/* glibc gives the top of the heap back to the kernel whenever 128 KiB of it is free, so a
	 * connection that closes and the next that opens each paid a brk() and page faults (2 % of
	 * egressd's CPU on new connections).  Memory goes back when a burst ends instead
	 * (proxy_server_conn_gone). */
	mallopt(M_TRIM_THRESHOLD, 8 * 1024 * 1024);
	struct allow_errors errs = {0};
	struct allow_config *cfg = allow_config_load(config_path, &errs);
	if (cfg == NULL) {
		print_errors(&errs);
		allow_errors_free(&errs);
		return 2;
	}
	struct proxy_server srv_storage;
	struct proxy_server *srv = &srv_storage;
	memset(srv, 0, sizeof *srv);
	srv->next_conn_id = 1;
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
		allow_config_free(cfg);
		goto out;
	}
	raise_fd_limit(cfg->limits.max_clients);
	fd_reserve_start(srv, cfg->limits.max_clients);
	char err[256] = "";
	if (proxy_audit_open(srv, cfg, err, sizeof err) == -1) {
		fprintf(stderr, "egressd: audit.path %s: %s\n", cfg->audit_path, err);
		allow_config_free(cfg);
		goto out;
	}
	srv->gen = gen_new(srv->base, cfg);
	if (srv->gen == NULL)
		goto out;
	gen_link(srv, srv->gen);
	http_parser_set_max_header_size((uint32_t)(srv->gen->cfg->limits.max_header_bytes + 1024));
	const int sigs[5] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGPIPE};
	for (int i = 0; i < 5; i++) {
		srv->sig[i] = evsignal_new(srv->base, sigs[i], signal_cb, srv);
		if (srv->sig[i] == NULL || evsignal_add(srv->sig[i], NULL) == -1) {
			fprintf(stderr, "egressd: cannot watch signal %d\n", sigs[i]);
			goto out;
		}
	}

	if (open_listeners(srv, srv->gen->cfg) == -1 || proxy_dnsfront_open(srv) == -1)
		goto out;
	read_own_addrs(srv);

	char listen[PROXY_MAX_LISTENERS * PROXY_ADDR_TEXT] = "";
	size_t off = 0;
	for (size_t i = 0; i < srv->nlisteners && off < sizeof listen; i++)
		off += (size_t)snprintf(listen + off, sizeof listen - off, "%s%s", i ? " " : "",
			srv->listeners[i].text);
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
	if (srv->gen->dflt == NULL)
		fprintf(stderr, "egressd: no session named \"default\": every connection will be "
				"denied\n");

	event_base_dispatch(srv->base);
	rc = srv->exit_code;

	audit_rec_init(&r);
	r.event = "stop";
	audit_write(srv->audit, &r, AUDIT_EVENT);
out:
	while (srv->conns != NULL)
		proxy_conn_close(srv->conns, "shutdown");
	proxy_pool_clear(srv);
	close_listeners(srv);
	proxy_dnsfront_free(srv); /* lets go of the generations its pending answers hold */
	for (int i = 0; i < 5; i++)
		if (srv->sig[i] != NULL)
			event_free(srv->sig[i]);
	if (srv->grace != NULL)
		event_free(srv->grace);
	proxy_gen_release(srv->gen);
	proxy_audit_close(srv);
	if (srv->base != NULL)
		event_base_free(srv->base);
	free(srv->own_addrs);
	free(srv->config_path);
	allow_errors_free(&errs);
	return rc;
}
