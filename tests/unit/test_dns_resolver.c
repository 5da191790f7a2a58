/* The resolver against a fake DNS server inside this process (UDP on 127.0.0.1, ephemeral port,
 * answering from a table), so no test ever leaves loopback.  The fake parses just enough of a
 * query to find the name and type, and builds answers by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "allowlist/cidr.h"
#include "allowlist/config.h"
#include "dns/resolver.h"

#define QTYPE_A 1
#define QTYPE_CNAME 5
#define QTYPE_AAAA 28
#define RCODE_SERVFAIL 2
#define RCODE_NXDOMAIN 3

struct record {
	const char *name;
	int qtype;
	const char *addr;
	uint32_t ttl;
};

/* The fake's zone.  Names not listed get NXDOMAIN, except those in the special lists below. */
static const struct record zone[] = {
        {"a.test", QTYPE_A, "192.0.2.10", 300},
        {"both.test", QTYPE_A, "192.0.2.20", 300},
        {"both.test", QTYPE_AAAA, "2001:db8::20", 60},
        {"v6.test", QTYPE_AAAA, "2001:db8::6", 300},
        {"short.test", QTYPE_A, "192.0.2.30", 1},
        {"co.test", QTYPE_A, "192.0.2.40", 300},
        {"many.test", QTYPE_A, "192.0.2.1", 300},
        {"many.test", QTYPE_A, "192.0.2.2", 200},
        {"many.test", QTYPE_A, "192.0.2.3", 300},
        {"cancelled.test", QTYPE_A, "192.0.2.50", 300},
        {"pending.test", QTYPE_A, "192.0.2.60", 300},
        {"alias.test", QTYPE_CNAME, "target.test", 30},
        {"target.test", QTYPE_A, "192.0.2.70", 300},
        {"big.test", QTYPE_A, "192.0.2.80", 300},
};
static const char *const servfail_names[] = {"fail.test"};
static const char *const silent_names[] = {"silent.test", "silent2.test"};
static const char *const tc_names[] = {"big.test"};

#define MAX_NAMES 32
#define MAX_TCP 8

struct fake_dns;

struct fake_tcp {
	struct fake_dns *f;
	int fd; /* -1 once closed */
	struct event *ev;
	uint8_t buf[600];
	size_t len;
};

struct fake_dns {
	struct event_base *base;
	int fd;
	uint16_t port;
	struct event *ev;
	int lfd; /* TCP listener on the same port */
	struct event *lev;
	struct fake_tcp tcp[MAX_TCP];
	size_t ntcp;
	int tcp_total; /* queries that came over TCP */
	size_t nnames;
	char names[MAX_NAMES][256]; /* every name asked for */
	int counts[MAX_NAMES];      /* packets received per name */
	int total;
};

static int in_list(const char *const *list, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(list[i], name) == 0)
			return 1;
	return 0;
}

static int fake_count(const struct fake_dns *f, const char *name)
{
	for (size_t i = 0; i < f->nnames; i++)
		if (strcmp(f->names[i], name) == 0)
			return f->counts[i];
	return 0;
}

static void fake_note(struct fake_dns *f, const char *name)
{
	f->total++;
	for (size_t i = 0; i < f->nnames; i++)
		if (strcmp(f->names[i], name) == 0) {
			f->counts[i]++;
			return;
		}
	if (f->nnames == MAX_NAMES)
		return;
	snprintf(f->names[f->nnames], sizeof f->names[0], "%s", name);
	f->counts[f->nnames++] = 1;
}

static void put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Builds the answer to the query q (n bytes) into out; returns its length, or 0 to stay
 * silent.  Over UDP, names in tc_names get an empty answer with TC set, so the client must ask
 * again over TCP. */
static size_t fake_answer(struct fake_dns *f, const uint8_t *q, size_t n, int tcp, uint8_t *out)
{
	if (n < 12)
		return 0;
	/* The question: labels from offset 12, then type and class. */
	char name[256];
	size_t off = 12, nlen = 0;
	while (off < n && q[off] != 0) {
		size_t l = q[off++];
		if (l > 63 || off + l > n || nlen + l + 1 >= sizeof name)
			return 0;
		if (nlen)
			name[nlen++] = '.';
		for (size_t i = 0; i < l; i++) {
			char c = (char)q[off + i];
			name[nlen++] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
		}
		off += l;
	}
	name[nlen] = '\0';
	if (off + 5 > n)
		return 0;
	size_t qend = off + 5;
	int qtype = (q[off + 1] << 8) | q[off + 2];
	fake_note(f, name);
	if (in_list(silent_names, sizeof silent_names / sizeof silent_names[0], name))
		return 0;

	if (tcp)
		f->tcp_total++;
	int rcode = 0, found = 0;
	if (in_list(servfail_names, sizeof servfail_names / sizeof servfail_names[0], name))
		rcode = RCODE_SERVFAIL;
	memcpy(out, q, qend);
	if (!tcp && in_list(tc_names, sizeof tc_names / sizeof tc_names[0], name)) {
		out[2] = (uint8_t)(0x80 | 0x02 | (q[2] & 0x01)); /* QR, TC, RD as asked */
		out[3] = 0x80;
		put16(out + 4, 1);
		memset(out + 6, 0, 6);
		return qend;
	}
	size_t len = qend, an = 0;
	unsigned owner = 0xc00c; /* the answers' name: a pointer to the question's */
	const char *lookup = name;
	for (size_t i = 0; rcode == 0 && i < sizeof zone / sizeof zone[0]; i++) {
		if (strcmp(zone[i].name, lookup) != 0 || zone[i].qtype != QTYPE_CNAME)
			continue;
		/* alias: the CNAME, then the target's records under the target's name */
		found = 1;
		put16(out + len, owner);
		put16(out + len + 2, QTYPE_CNAME);
		put16(out + len + 4, 1);
		put16(out + len + 6, zone[i].ttl >> 16);
		put16(out + len + 8, zone[i].ttl & 0xffff);
		size_t rd = len + 12, w = rd;
		for (const char *lab = zone[i].addr; *lab;) {
			const char *dot = strchr(lab, '.');
			size_t l = dot ? (size_t)(dot - lab) : strlen(lab);
			out[w++] = (uint8_t)l;
			memcpy(out + w, lab, l);
			w += l;
			lab += l + (dot ? 1 : 0);
		}
		out[w++] = 0;
		put16(out + len + 10, (unsigned)(w - rd));
		owner = 0xc000 | (unsigned)rd;
		lookup = zone[i].addr;
		len = w;
		an++;
		break;
	}
	for (size_t i = 0; rcode == 0 && i < sizeof zone / sizeof zone[0]; i++) {
		if (strcmp(zone[i].name, lookup) != 0)
			continue;
		found = 1;
		if (zone[i].qtype != qtype)
			continue;
		uint8_t rd[16];
		size_t rdlen = qtype == QTYPE_A ? 4 : 16;
		assert_int_equal(
		        inet_pton(qtype == QTYPE_A ? AF_INET : AF_INET6, zone[i].addr, rd), 1);
		put16(out + len, owner);
		put16(out + len + 2, (unsigned)qtype);
		put16(out + len + 4, 1);
		put16(out + len + 6, zone[i].ttl >> 16);
		put16(out + len + 8, zone[i].ttl & 0xffff);
		put16(out + len + 10, (unsigned)rdlen);
		memcpy(out + len + 12, rd, rdlen);
		len += 12 + rdlen;
		an++;
	}
	if (rcode == 0 && !found)
		rcode = RCODE_NXDOMAIN;
	out[2] = (uint8_t)(0x80 | (q[2] & 0x01)); /* QR, and RD as asked */
	out[3] = (uint8_t)(0x80 | rcode);         /* RA */
	put16(out + 4, 1);
	put16(out + 6, (unsigned)an);
	put16(out + 8, 0);
	put16(out + 10, 0);
	return len;
}

static void fake_read(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	struct fake_dns *f = arg;
	uint8_t q[512], out[1024];
	struct sockaddr_storage from;
	socklen_t fromlen = sizeof from;
	ssize_t n = recvfrom(fd, q, sizeof q, 0, (struct sockaddr *)&from, &fromlen);
	if (n < 12)
		return;
	size_t len = fake_answer(f, q, (size_t)n, 0, out);
	if (len)
		sendto(fd, out, len, 0, (struct sockaddr *)&from, fromlen);
}

/* One TCP connection: queries arrive with a two-byte length in front. */
static void fake_tcp_read(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	struct fake_tcp *t = arg;
	ssize_t n = recv(fd, t->buf + t->len, sizeof t->buf - t->len, 0);
	if (n <= 0) {
		event_del(t->ev);
		close(t->fd);
		t->fd = -1;
		return;
	}
	t->len += (size_t)n;
	while (t->len >= 2) {
		size_t qlen = ((size_t)t->buf[0] << 8) | t->buf[1];
		if (t->len < 2 + qlen)
			break;
		uint8_t out[1026];
		size_t len = fake_answer(t->f, t->buf + 2, qlen, 1, out + 2);
		if (len) {
			put16(out, (unsigned)len);
			assert_int_equal(send(fd, out, len + 2, 0), (ssize_t)(len + 2));
		}
		memmove(t->buf, t->buf + 2 + qlen, t->len - 2 - qlen);
		t->len -= 2 + qlen;
	}
}

static void fake_accept(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	struct fake_dns *f = arg;
	int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK);
	if (c == -1)
		return;
	if (f->ntcp == MAX_TCP) {
		close(c);
		return;
	}
	struct fake_tcp *t = &f->tcp[f->ntcp++];
	t->f = f;
	t->fd = c;
	t->len = 0;
	t->ev = event_new(f->base, c, EV_READ | EV_PERSIST, fake_tcp_read, t);
	assert_non_null(t->ev);
	event_add(t->ev, NULL);
}

/* Binds a UDP socket and a TCP listener to the same ephemeral loopback port; another program
 * may hold the TCP side of the port the UDP socket drew, so a few draws are allowed. */
static void fake_start(struct fake_dns *f, struct event_base *base)
{
	memset(f, 0, sizeof *f);
	f->base = base;
	struct sockaddr_in sin;
	for (int attempt = 0;; attempt++) {
		assert_true(attempt < 50);
		memset(&sin, 0, sizeof sin);
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		f->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
		assert_true(f->fd != -1);
		assert_int_equal(bind(f->fd, (struct sockaddr *)&sin, sizeof sin), 0);
		socklen_t sl = sizeof sin;
		assert_int_equal(getsockname(f->fd, (struct sockaddr *)&sin, &sl), 0);
		f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		assert_true(f->lfd != -1);
		if (bind(f->lfd, (struct sockaddr *)&sin, sizeof sin) == 0)
			break;
		close(f->lfd);
		close(f->fd);
	}
	f->port = ntohs(sin.sin_port);
	assert_int_equal(listen(f->lfd, 8), 0);
	f->ev = event_new(base, f->fd, EV_READ | EV_PERSIST, fake_read, f);
	assert_non_null(f->ev);
	assert_int_equal(event_add(f->ev, NULL), 0);
	f->lev = event_new(base, f->lfd, EV_READ | EV_PERSIST, fake_accept, f);
	assert_non_null(f->lev);
	assert_int_equal(event_add(f->lev, NULL), 0);
}

static void fake_stop(struct fake_dns *f)
{
	for (size_t i = 0; i < f->ntcp; i++) {
		event_free(f->tcp[i].ev);
		if (f->tcp[i].fd != -1)
			close(f->tcp[i].fd);
	}
	event_free(f->lev);
	close(f->lfd);
	event_free(f->ev);
	close(f->fd);
}

/* ---- fixture -------------------------------------------------------------------------------- */

struct fixture {
	struct event_base *base;
	struct fake_dns fake;
	char server[32];
	char *servers[1];
	struct allow_hosts_entry hosts[1];
	struct allow_dns_config cfg;
	struct dns_resolver *r;
	struct event *tick;
};

struct result {
	int calls;
	enum dns_status status;
	struct dns_answer ans;
	uint64_t at_ms;
	struct dns_query *cancel_me;  /* cancelled from inside the callback */
	struct dns_resolver *free_me; /* freed from inside the callback */
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void on_answer(enum dns_status status, const struct dns_answer *ans, void *arg)
{
	struct result *res = arg;
	res->calls++;
	res->status = status;
	res->ans = *ans;
	res->at_ms = now_ms();
	if (res->cancel_me)
		dns_query_cancel(res->cancel_me);
	if (res->free_me)
		dns_resolver_free(res->free_me);
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

/* Runs the loop until *calls reaches want or max_ms passes.  The tick keeps EVLOOP_ONCE from
 * blocking past the deadline. */
static void run_until(struct fixture *fx, const int *calls, int want, uint64_t max_ms)
{
	uint64_t end = now_ms() + max_ms;
	while ((calls == NULL || *calls < want) && now_ms() < end)
		event_base_loop(fx->base, EVLOOP_ONCE);
}

static void add_host(struct allow_hosts_entry *h, const char *name, const char *a1, const char *a2)
{
	memset(h, 0, sizeof *h);
	snprintf(h->name, sizeof h->name, "%s", name);
	const char *in[2] = {a1, a2};
	for (size_t i = 0; i < 2 && in[i]; i++) {
		char err[128];
		assert_int_equal(
		        allow_cidr_parse(in[i], strlen(in[i]), &h->addrs[i], err, sizeof err), 0);
		h->naddrs++;
	}
}

static struct fixture *fixture_new(uint64_t timeout_ms)
{
	struct fixture *fx = calloc(1, sizeof *fx);
	assert_non_null(fx);
	fx->base = event_base_new();
	assert_non_null(fx->base);
	fake_start(&fx->fake, fx->base);
	snprintf(fx->server, sizeof fx->server, "127.0.0.1:%u", (unsigned)fx->fake.port);
	fx->servers[0] = fx->server;
	add_host(&fx->hosts[0], "origin.test", "127.0.0.1", "::1");
	fx->cfg.servers = fx->servers;
	fx->cfg.nservers = 1;
	fx->cfg.hosts = fx->hosts;
	fx->cfg.nhosts = 1;
	fx->cfg.timeout_ms = timeout_ms;
	char err[256] = "";
	fx->r = dns_resolver_new(fx->base, &fx->cfg, err, sizeof err);
	if (fx->r == NULL)
		fail_msg("dns_resolver_new: %s", err);
	fx->tick = event_new(fx->base, -1, EV_PERSIST, tick, NULL);
	struct timeval tv = {0, 5000};
	event_add(fx->tick, &tv);
	return fx;
}

static void fixture_free(struct fixture *fx)
{
	dns_resolver_free(fx->r);
	event_free(fx->tick);
	fake_stop(&fx->fake);
	event_base_free(fx->base);
	free(fx);
}

static void assert_addr(const struct dns_addr *a, const char *want)
{
	uint8_t b[16] = {0};
	int family = strchr(want, ':') ? AF_INET6 : AF_INET;
	assert_int_equal(inet_pton(family, want, b), 1);
	assert_int_equal(a->family, family);
	assert_memory_equal(a->addr, b, family == AF_INET ? 4 : 16);
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_static_hosts(void **state)
{
	(void)state;
	struct fixture *fx = fixture_new(2000);
	struct result res = {0};
	assert_non_null(dns_resolve(fx->r, "origin.test", on_answer, &res));
	assert_int_equal(res.calls, 0); /* never from inside dns_resolve */
	run_until(fx, &res.calls, 1, 2000);
	assert_int_equal(res.calls, 1);
	assert_int_equal(res.status, DNS_OK);
	assert_int_equal(res.ans.source, 1);
	assert_int_equal(res.ans.n, 2);
	assert_addr(&res.ans.addrs[0], "127.0.0.1");
	assert_addr(&res.ans.addrs[1], "::1");
	assert_int_equal(fx->fake.total, 0);
	fixture_free(fx);
}

static void test_real_answer(void **state)
{
	(void)state;
	struct fixture *fx = fixture_new(2000);
	struct result res = {0};
	assert_non_null(dns_resolve(fx->r, "a.test", on_answer, &res));
	assert_int_equal(res.calls, 0);
	run_until(fx, &res.calls, 1, 3000);
	assert_int_equal(res.calls, 1);
	assert_int_equal(res.status, DNS_OK);
	assert_int_equal(res.ans.source, 0);
	assert_int_equal(res.ans.n, 1);
	assert_addr(&res.ans.addrs[0], "192.0.2.10");
	assert_int_equal(res.ans.ttl, 300);
	assert_true(fake_count(&fx->fake, "a.test") >= 1);
	/* the callback ran once only */
	run_until(fx, NULL, 0, 50);
	assert_int_equal(res.calls, 1);
	fixture_free(fx);
}

static void test_both_families(void **state)
{
	(void)state;
	struct fixture *fx = fixture_new(2000);
	struct result res = {0}, r6 = {0}, rm = {0};
	dns_resolve(fx->r, "both.test", on_answer, &res);
	dns_resolve(fx->r, "v6.test", on_answer, &r6);
	dns_resolve(fx->r, "many.test", on_answer, &rm);
	run_until(fx, &res.calls, 1, 3000);
	run_until(fx, &r6.calls, 1, 3000);
	run_until(fx, &rm.calls, 1, 3000);
	assert_int_equal(res.status, DNS_OK);
	assert_int_equal(res.ans.n, 2);
	assert_addr(&res.ans.addrs[0], "192.0.2.20"); /* IPv4 first */
	assert_addr(&res.ans.addrs[1], "2001:db8::20");
	assert_int_equal(res.ans.ttl, 60); /* the smallest TTL of the answer */
	assert_int_equal(r6.status, DNS_OK);
	assert_int_equal(r6.ans.n, 1);
	assert_addr(&r6.ans.addrs[0], "2001:db8::6");
	assert_int_equal(rm.status, DNS_OK);
	assert_int_equal(rm.ans.n, 3);
	assert_int_equal(rm.ans.ttl, 200);
	fixture_free(fx);
}

static void test_cache_ttl(void **state)
{
	(void)state;
	struct fixture *fx = fixture_new(2000);
	struct result r1 = {0}, r2 = {0}, r3 = {0};
	dns_resolve(fx->r, "short.test", on_answer, &r1);
	run_until(fx, &r1.calls, 1, 3000);
	assert_int_equal(r1.status, DNS_OK);
	assert_int_equal(r1.ans.source, 0);
	assert_int_equal(r1.ans.ttl, 1);
	int asked = fake_count(&fx->fake, "short.test");
	assert_true(asked >= 1);

	/* within the TTL: from the cache, the server is not asked */
	dns_resolve(fx->r, "short.test", on_answer, &r2);
	assert_int_equal(r2.calls, 0);
	run_until(fx, &r2.calls, 1, 3000);
	assert_int_equal(r2.status, DNS_OK);
	assert_int_equal(r2.ans.source, 2);
	assert_int_equal(r2.ans.n, 1);
	assert_addr(&r2.ans.addrs[0], "192.0.2.30");
	assert_int_equal(fake_count(&fx->fake, "short.test"), asked);

	/* after the TTL: asked again */
	run_until(fx, NULL, 0, 1200);
	dns_resolve(fx->r, "short.test", on_answer, &r3);
	run_until(fx, &r3.calls, 1, 3000);
	assert_int_equal(r3.status, DNS_OK);
	assert_int_equal(r3.ans.source, 0);
	assert_true(fake_count(&fx->fake, "short.test") > asked);
	fixture_free(fx);
}

static void test_nxdomain(void **state)
{
	(void)state;
	struct fixture *fx = fixture_new(2000);
	struct result r1 = {0}, r2 = {0};
	dns_resolve(fx->r, "nx.test", on_answer, &r1);
	run_until(fx, &r1.calls, 1, 3000);
	assert_int_equal(r1.calls, 1);
	assert_int_equal(r1.status, DNS_NXDOMAIN);
	assert_int_equal(r1.ans.n, 0);
	assert_string_equal(dns_status_str(r1.status), "NXDOMAIN");
	int asked = fake_count(&fx->fake, "nx.test");
	assert_true(asked >= 1);
	/* remembered briefly */
	dns_resolve(fx->r, "nx.test", on_answer, &r2);
	run_until(fx, &r2.calls, 1, 3000);
	assert_int_equal(r2.status, DNS_NXDOMAIN);
	assert_int_equal(r2.ans.source, 2);
	assert_int_equal(fake_count(&fx->fake, "nx.test"), asked);
	fixture_free(fx);
}

static void test_servfail(void **state)
{
	(void)state;
	struct fixture *fx = fixture_new(2000);
	struct result res = {0};
	dns_resolve(fx->r, "fail.test", on_answer, &res);
	run_until(fx, &res.calls, 1, 3000);
	assert_int_equal(res.calls, 1);
	assert_int_equal(res.status, DNS_FAILED);
	assert_string_equal(dns_status_str(res.status), "failed");
	assert_true(fake_count(&fx->fake, "fail.test") >= 1);
	fixture_free(fx);
}

/* A name /etc/hosts lists other than localhost, or "" when there is none. */
static void etc_hosts_name(char *out, size_t cap)
{
	out[0] = '\0';
	FILE *f = fopen("/etc/hosts", "r");
	if (f == NULL)
		return;
	char line[512];
	while (out[0] == '\0' && fgets(line, sizeof line, f)) {
		char *save = NULL, *tok = strtok_r(line, " \t\r\n", &save);
		if (tok == NULL || tok[0] == '#')
			continue;
		while ((tok = strtok_r(NULL, " \t\r\n", &save)) != NULL) {
			if (tok[0] == '#')
				break;
			if (strncmp(tok, "localhost", 9) != 0 && strncmp(tok, "ip6-", 4) != 0) {
				snprintf(out, cap, "%s", tok);
				break;
			}
		}
	}
	fclose(f);
}

/* /etc/hosts must not answer: dns.hosts is the only override.  A name listed there goes to the
 * DNS server (which says NXDOMAIN), and localhost gets no address at all (c-ares keeps it off
 * the wire, RFC 6761). */
static void test_no_etc_hosts(void **state)
{
	(void)state;
	struct fixture *fx = fixture_new(2000);
	struct result lh = {0}, listed = {0};
	dns_resolve(fx->r, "localhost", on_answer, &lh);
	assert_int_equal(lh.calls, 0); /* c-ares ends it at once; we still wait for the loop */
	run_until(fx, &lh.calls, 1, 3000);
	assert_int_equal(lh.calls, 1);
	assert_int_not_equal(lh.status, DNS_OK);
	assert_int_equal(lh.ans.n, 0);

	char name[256];
	etc_hosts_name(name, sizeof name);
	if (name[0] != '\0') {
		dns_resolve(fx->r, name, on_answer, &listed);
		run_until(fx, &listed.calls, 1, 3000);
		assert_int_equal(listed.calls, 1);
		if (listed.status != DNS_NXDOMAIN)
			fail_msg("%s (listed in /etc/hosts): status %s", name,
			        dns_status_str(listed.status));
		assert_true(fake_count(&fx->fake, name) >= 1);
	}
	fixture_free(fx);
}

static void test_timeout(void **state)
{
	(void)state;
	struct fixture *fx = fixture_new(300);
	struct result res = {0};
	uint64_t start = now_ms();
	dns_resolve(fx->r, "silent.test", on_answer, &res);
	run_until(fx, &res.calls, 1, 5000);
	assert_int_equal(res.calls, 1);
	assert_int_equal(res.status, DNS_TIMEOUT);
	assert_string_equal(dns_status_str(res.status), "timeout");
	uint64_t took = res.at_ms - start;
	if (took < 250 || took > 1500)
		fail_msg("timeout after %llu ms, want about 300", (unsigned long long)took);
	assert_true(fake_count(&fx->fake, "silent.test") >= 1);
	/* a timeout is not cached: asked again */
	int asked = fake_count(&fx->fake, "silent.test");
	struct result r2 = {0};
	dns_resolve(fx->r, "silent.test", on_answer, &r2);
	run_until(fx, &r2.calls, 1, 5000);
	assert_int_equal(r2.status, DNS_TIMEOUT);
	assert_true(fake_count(&fx->fake, "silent.test") > asked);
	fixture_free(fx);
}

static void test_cancel_before_answer(void **state)
{
	(void)state;
	struct fixture *fx = fixture_new(2000);
	struct result res = {0}, st = {0}, other = {0};
	struct dns_query *q = dns_resolve(fx->r, "cancelled.test", on_answer, &res);
	assert_non_null(q);
	dns_query_cancel(q);
	/* a static answer already scheduled can be cancelled too */
	q = dns_resolve(fx->r, "origin.test", on_answer, &st);
	dns_query_cancel(q);
	/* an unrelated query still completes */
	dns_resolve(fx->r, "a.test", on_answer, &other);
	run_until(fx, &other.calls, 1, 3000);
	run_until(fx, NULL, 0, 100);
	assert_int_equal(other.calls, 1);
	assert_int_equal(res.calls, 0);
	assert_int_equal(st.calls, 0);
	/* the cancelled lookup still filled the cache */
	struct result again = {0};
	int asked = fake_count(&fx->fake, "cancelled.test");
	dns_resolve(fx->r, "cancelled.test", on_answer, &again);
	run_until(fx, &again.calls, 1, 3000);
	assert_int_equal(again.status, DNS_OK);
	assert_int_equal(again.ans.source, 2);
	assert_int_equal(fake_count(&fx->fake, "cancelled.test"), asked);
	fixture_free(fx);
}

/* One query's callback cancels another query that is still waiting on the network. */
static void test_cancel_from_callback(void **state)
{
	(void)state;
	struct fixture *fx = fixture_new(300);
	struct result waiting = {0}, first = {0};
	struct dns_query *q = dns_resolve(fx->r, "silent2.test", on_answer, &waiting);
	first.cancel_me = q;
	dns_resolve(fx->r, "origin.test", on_answer, &first);
	run_until(fx, &first.calls, 1, 2000);
	assert_int_equal(first.calls, 1);
	run_until(fx, NULL, 0, 600); /* past the timeout the cancelled query would have hit */
	assert_int_equal(waiting.calls, 0);
	fixture_free(fx);
}

static void test_coalesce(void **state)
{
	(void)state;
	struct fixture *fx = fixture_new(2000);
	struct result r1 = {0}, r2 = {0};
	dns_resolve(fx->r, "co.test", on_answer, &r1);
	dns_resolve(fx->r, "co.test", on_answer, &r2);
	run_until(fx, &r1.calls, 1, 3000);
	run_until(fx, &r2.calls, 1, 3000);
	assert_int_equal(r1.status, DNS_OK);
	assert_int_equal(r2.status, DNS_OK);
	assert_int_equal(r1.ans.source, 0);
	assert_int_equal(r2.ans.source, 0);
	assert_addr(&r2.ans.addrs[0], "192.0.2.40");
	/* one A and one AAAA question, not two of each */
	assert_int_equal(fake_count(&fx->fake, "co.test"), 2);
	fixture_free(fx);
}

static void test_free_with_pending(void **state)
{
	(void)state;
	struct fixture *fx = fixture_new(2000);
	struct result a = {0}, b = {0}, c = {0};
	assert_non_null(dns_resolve(fx->r, "pending.test", on_answer, &a));
	assert_non_null(dns_resolve(fx->r, "silent.test", on_answer, &b));
	assert_non_null(dns_resolve(fx->r, "origin.test", on_answer, &c));
	dns_resolver_free(fx->r);
	fx->r = NULL;
	run_until(fx, NULL, 0, 200);
	assert_int_equal(a.calls + b.calls + c.calls, 0);
	fixture_free(fx);
}

/* A callback may free the resolver while other queries are pending. */
static void test_free_from_callback(void **state)
{
	(void)state;
	struct fixture *fx = fixture_new(2000);
	struct result first = {0}, later = {0};
	dns_resolve(fx->r, "silent.test", on_answer, &later);
	first.free_me = fx->r;
	dns_resolve(fx->r, "origin.test", on_answer, &first);
	run_until(fx, &first.calls, 1, 2000);
	assert_int_equal(first.calls, 1);
	fx->r = NULL;
	run_until(fx, NULL, 0, 100);
	assert_int_equal(later.calls, 0);
	fixture_free(fx);
}

static void test_bad_names(void **state)
{
	(void)state;
	struct fixture *fx = fixture_new(2000);
	struct result empty = {0}, longname = {0};
	char big[400];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	dns_resolve(fx->r, "", on_answer, &empty);
	dns_resolve(fx->r, big, on_answer, &longname);
	assert_int_equal(empty.calls + longname.calls, 0);
	run_until(fx, &longname.calls, 1, 2000);
	run_until(fx, &empty.calls, 1, 2000);
	assert_int_equal(empty.status, DNS_FAILED);
	assert_int_equal(longname.status, DNS_FAILED);
	assert_int_equal(fx->fake.total, 0);
	fixture_free(fx);
}

static void test_bad_servers(void **state)
{
	(void)state;
	struct event_base *base = event_base_new();
	static const char *const bad[] = {"not-an-ip", "127.0.0.1:0", "127.0.0.1:65536", "[::1",
	        "[::1]x", "127.0.0.1:", "1.2.3.4:53a"};
	static const char *const good[] = {
	        "127.0.0.1", "127.0.0.1:5353", "[::1]:5353", "::1", "[::1]"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char *s[1] = {(char *)bad[i]};
		struct allow_dns_config cfg = {.servers = s, .nservers = 1};
		char err[256] = "";
		struct dns_resolver *r = dns_resolver_new(base, &cfg, err, sizeof err);
		if (r != NULL)
			fail_msg("server \"%s\" accepted", bad[i]);
		assert_non_null(strstr(err, "dns.servers"));
	}
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		char *s[1] = {(char *)good[i]};
		struct allow_dns_config cfg = {.servers = s, .nservers = 1};
		char err[256] = "";
		struct dns_resolver *r = dns_resolver_new(base, &cfg, err, sizeof err);
		if (r == NULL)
			fail_msg("server \"%s\" refused: %s", good[i], err);
		dns_resolver_free(r);
	}
	event_base_free(base);
}

/* A CNAME chain: the target's addresses, and the smallest TTL along the chain. */
static void test_cname(void **state)
{
	(void)state;
	struct fixture *fx = fixture_new(2000);
	struct result res = {0};
	dns_resolve(fx->r, "alias.test", on_answer, &res);
	run_until(fx, &res.calls, 1, 3000);
	assert_int_equal(res.status, DNS_OK);
	assert_int_equal(res.ans.n, 1);
	assert_addr(&res.ans.addrs[0], "192.0.2.70");
	assert_int_equal(res.ans.ttl, 30);
	fixture_free(fx);
}

/* The cache holds at most its limit and evicts the oldest entry first. */
static void test_cache_eviction(void **state)
{
	(void)state;
	struct fixture *fx = fixture_new(2000);
	dns_resolver_set_cache_max(fx->r, 2);
	static const char *const names[] = {"a.test", "both.test", "v6.test"};
	for (size_t i = 0; i < 3; i++) {
		struct result res = {0};
		dns_resolve(fx->r, names[i], on_answer, &res);
		run_until(fx, &res.calls, 1, 3000);
		assert_int_equal(res.status, DNS_OK);
		assert_int_equal(res.ans.source, 0);
	}
	/* both.test and v6.test are cached; a.test, the oldest, was evicted */
	int asked[3];
	for (size_t i = 0; i < 3; i++)
		asked[i] = fake_count(&fx->fake, names[i]);
	struct result r2 = {0}, r3 = {0}, r1 = {0};
	dns_resolve(fx->r, names[1], on_answer, &r2);
	dns_resolve(fx->r, names[2], on_answer, &r3);
	run_until(fx, &r2.calls, 1, 3000);
	run_until(fx, &r3.calls, 1, 3000);
	assert_int_equal(r2.ans.source, 2);
	assert_int_equal(r3.ans.source, 2);
	dns_resolve(fx->r, names[0], on_answer, &r1);
	run_until(fx, &r1.calls, 1, 3000);
	assert_int_equal(r1.status, DNS_OK);
	assert_int_equal(r1.ans.source, 0);
	assert_true(fake_count(&fx->fake, names[0]) > asked[0]);
	assert_int_equal(fake_count(&fx->fake, names[1]), asked[1]);
	assert_int_equal(fake_count(&fx->fake, names[2]), asked[2]);

	/* a limit of 0 turns the cache off */
	dns_resolver_set_cache_max(fx->r, 0);
	struct result r4 = {0};
	dns_resolve(fx->r, names[1], on_answer, &r4);
	run_until(fx, &r4.calls, 1, 3000);
	assert_int_equal(r4.ans.source, 0);
	assert_true(fake_count(&fx->fake, names[1]) > asked[1]);
	fixture_free(fx);
}

/* A truncated UDP answer makes c-ares ask again over TCP: the connect is the one time it waits
 * for a socket to become writable. */
static void test_truncated_over_tcp(void **state)
{
	(void)state;
	struct fixture *fx = fixture_new(2000);
	struct result res = {0};
	dns_resolve(fx->r, "big.test", on_answer, &res);
	run_until(fx, &res.calls, 1, 3000);
	assert_int_equal(res.calls, 1);
	assert_int_equal(res.status, DNS_OK);
	assert_int_equal(res.ans.n, 1);
	assert_addr(&res.ans.addrs[0], "192.0.2.80");
	assert_true(fx->fake.tcp_total >= 1);
	fixture_free(fx);
}

static void test_status_str(void **state)
{
	(void)state;
	assert_string_equal(dns_status_str(DNS_NXDOMAIN), "NXDOMAIN");
	assert_string_equal(dns_status_str(DNS_TIMEOUT), "timeout");
	assert_string_equal(dns_status_str(DNS_FAILED), "failed");
	assert_string_equal(dns_status_str(DNS_OK), "ok");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_static_hosts),
	        cmocka_unit_test(test_real_answer),
	        cmocka_unit_test(test_both_families),
	        cmocka_unit_test(test_cname),
	        cmocka_unit_test(test_cache_eviction),
	        cmocka_unit_test(test_truncated_over_tcp),
	        cmocka_unit_test(test_cache_ttl),
	        cmocka_unit_test(test_nxdomain),
	        cmocka_unit_test(test_servfail),
	        cmocka_unit_test(test_no_etc_hosts),
	        cmocka_unit_test(test_timeout),
	        cmocka_unit_test(test_cancel_before_answer),
	        cmocka_unit_test(test_cancel_from_callback),
	        cmocka_unit_test(test_coalesce),
	        cmocka_unit_test(test_free_with_pending),
	        cmocka_unit_test(test_free_from_callback),
	        cmocka_unit_test(test_bad_names),
	        cmocka_unit_test(test_bad_servers),
	        cmocka_unit_test(test_status_str),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
