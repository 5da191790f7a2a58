/* The DNS listener: sockets, the answer's policy, real and mapped answers, records.
 *
 * Every query walks one function, process(): parse (dns/wire.c), ask the proxy (ops.decide),
 * pick the answer, write its record (through dns/dedup.c), render it.  Only a real answer for a
 * name the resolver does not know yet leaves process() unanswered: it takes a pending slot, and
 * pending_done() finishes it from the loop.  UDP and TCP differ only in how bytes come and go.
 *
 * Ownership: the listener owns its sockets, TCP clients and pending slots.  A TCP client with a
 * pending answer is freed only through tcp_close(), which cancels the resolver query first, so
 * a completion never finds its client gone; a pending slot of a UDP query needs nothing but the
 * socket, which outlives every slot (dns_listener_close cancels them all before closing it). */
#include "dns/listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "allowlist/config.h"
#include "dns/dedup.h"
#include "dns/wire.h"

#define STATIC_TTL 5 /* seconds a dns.hosts answer may be kept: a reload may change it */
#define UDP_RCVBUF (1024 * 1024) /* room for a burst while the loop is busy elsewhere */
#define ADDRS_TEXT (DNS_MAX_ADDRS * (INET6_ADDRSTRLEN + 1))

struct dns_listener;

struct udp_sock {
	struct dns_listener *l;
	int fd;                  /* -1 when closed */
	struct event *ev;
	char text[DNS_ADDR_TEXT]; /* the bound address */
};

struct tcp_sock {
	struct dns_listener *l;
	struct evconnlistener *lev;
	char text[DNS_ADDR_TEXT];
};

#define UDP_VEC 32        /* datagrams per recvmmsg */
#define UDP_IN_MAX 4096   /* bytes kept of one datagram (a query is far smaller) */

/* The UDP side's buffers, allocated once per listener. */
struct udp_batch {
	struct mmsghdr msgs[UDP_VEC];
	struct iovec iov[UDP_VEC];
	struct sockaddr_storage peers[UDP_VEC];
	uint8_t in[UDP_VEC][UDP_IN_MAX];
	struct mmsghdr omsgs[UDP_VEC];
	struct iovec oiov[UDP_VEC];
	uint8_t out[UDP_VEC][DNS_WIRE_UDP_MAX];
};

struct pending;

struct tcp_conn {
	struct dns_listener *l;
	struct tcp_conn *prev, *next;  /* l->conns */
	struct bufferevent *bev;
	struct event *timer;           /* the next message's deadline */
	struct dns_listener_client who;
	struct pending *pending;       /* the answer waiting for the resolver, or NULL */
	int eof;                       /* the client will send no more */
};

/* An answer waiting for the resolver. */
struct pending {
	struct pending *next_free;
	struct dns_listener *l;
	struct dns_query *q;           /* NULL once done */
	struct dns_wire_query wq;
	struct dns_listener_verdict v; /* holds v.hold until done */
	struct dns_listener_client who;
	struct udp_sock *udp;          /* answer to peer over this socket, or */
	struct sockaddr_storage peer;
	socklen_t peerlen;
	struct tcp_conn *tcp;          /* over this client; both NULL: discard (tests) */
};

struct dns_listener {
	struct event_base *base;
	struct dns_listener_ops ops;
	void *arg;
	struct dns_map *map;
	struct dns_dedup *dedup;
	struct event *summary;         /* reports records left out for want of room, per window */
	struct udp_sock udp[DNS_LISTENER_ADDRS];
	struct tcp_sock tcp[DNS_LISTENER_ADDRS];
	size_t nsocks;
	struct tcp_conn *conns;
	size_t nconns;
	struct udp_batch *batch;       /* allocated once */
	struct pending *slots;         /* DNS_PENDING_MAX, allocated once */
	struct pending *free_slots;
	uint8_t in[DNS_WIRE_MSG_MAX + 1];
	uint8_t out[2 + DNS_WIRE_MSG_MAX]; /* room for TCP's length prefix */
};

/* What one query gets, before it is rendered and recorded. */
struct outcome {
	enum dns_rcode rcode;
	int allow;                      /* the record's decision */
	const char *reason;             /* NULL when there is nothing to say */
	char rule[400];
	struct dns_addr addrs[DNS_MAX_ADDRS];
	size_t naddrs;
	uint32_t ttl;
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void deny(struct outcome *o, const char *reason, const char *rule)
{
	o->rcode = DNS_RCODE_REFUSED;
	o->allow = 0;
	o->reason = reason;
	snprintf(o->rule, sizeof o->rule, "%s", rule ? rule : "");
}

/* ---- records -------------------------------------------------------------------------------- */

/* Writes the record of an answer, unless its key had one within the minute.  An allow that
 * cannot be put on record turns into SERVFAIL (audit-unavailable): nothing is answered that is
 * not on record. */
static void write_record(struct dns_listener *l, const struct dns_wire_query *q,
	const struct dns_listener_verdict *v, const struct dns_listener_client *who,
	struct outcome *o)
{
	const char *host = q->canon_ok ? q->name : q->text;
	uint64_t repeat = 0;
	if (dns_dedup_check(l->dedup, v->session, host, q->qtype, o->allow, now_ms(), &repeat) !=
		DNS_DEDUP_WRITE)
		return;
	char addrs[ADDRS_TEXT] = "", type[24];
	size_t off = 0;
	for (size_t i = 0; i < o->naddrs && off < sizeof addrs; i++) {
		char ip[INET6_ADDRSTRLEN];
		if (inet_ntop(o->addrs[i].family, o->addrs[i].addr, ip, sizeof ip) == NULL)
			continue;
		off += (size_t)snprintf(addrs + off, sizeof addrs - off, "%s%s", off ? "," : "", ip);
	}
	struct dns_listener_record r;
	memset(&r, 0, sizeof r);
	r.session = v->session[0] ? v->session : NULL;
	r.client = who->text;
	r.host = host;
	r.qtype = dns_wire_type_name(q->qtype, type, sizeof type);
	r.decision = o->allow ? "allow" : "deny";
	r.reason = o->reason;
	r.rule = o->rule[0] ? o->rule : NULL;
	r.addr = addrs[0] ? addrs : NULL;
	r.rcode = dns_rcode_name(o->rcode);
	r.repeat = repeat;
	if (l->ops.record(l->arg, &r) == -1 && o->allow) {
		dns_dedup_forget(l->dedup, v->session, host, q->qtype, o->allow);
		o->rcode = DNS_RCODE_SERVFAIL;
		o->reason = "audit-unavailable";
		o->naddrs = 0;
	}
}

static void summary_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct dns_listener *l = arg;
	uint64_t n = dns_dedup_take_overflow(l->dedup);
	if (n == 0)
		return;
	struct dns_listener_record r;
	memset(&r, 0, sizeof r);
	r.suppressed = n;
	l->ops.record(l->arg, &r);
}

/* ---- answers -------------------------------------------------------------------------------- */

/* The real answer from a resolver result: the addresses of the asked family that pass the
 * address policy. */
static void real_outcome(const struct dns_wire_query *q, const struct dns_listener_verdict *v,
	enum dns_status st, const struct dns_answer *ans, struct outcome *o)
{
	o->allow = 1;
	if (st == DNS_NXDOMAIN) {
		o->rcode = DNS_RCODE_NXDOMAIN;
		o->reason = "dns-failed";
		snprintf(o->rule, sizeof o->rule, "resolve %s: %s", q->name, dns_status_str(st));
		return;
	}
	if (st != DNS_OK) {
		o->rcode = DNS_RCODE_SERVFAIL;
		o->reason = "dns-failed";
		snprintf(o->rule, sizeof o->rule, "resolve %s: %s", q->name, dns_status_str(st));
		return;
	}
	int family = q->qtype == DNS_TYPE_A ? AF_INET : AF_INET6;
	size_t of_family = 0;
	char first_why[200] = "", first_ip[INET6_ADDRSTRLEN] = "";
	for (size_t i = 0; i < ans->n; i++) {
		const struct dns_addr *a = &ans->addrs[i];
		if (a->family != family)
			continue;
		of_family++;
		char why[200];
		if (dns_addr_judge(v->addrpol, a->family, a->addr, why, sizeof why) == 0) {
			o->addrs[o->naddrs++] = *a;
		} else if (first_why[0] == '\0') {
			memcpy(first_why, why, sizeof first_why);
			inet_ntop(a->family, a->addr, first_ip, sizeof first_ip);
		}
	}
	o->rcode = DNS_RCODE_NOERROR;
	o->ttl = ans->source == 1 ? STATIC_TTL : ans->ttl ? ans->ttl : 1;
	if (of_family > 0 && o->naddrs == 0) {
		/* Every address of the family is one egressd never dials: the name has none. */
		o->reason = "address-denied";
		snprintf(o->rule, sizeof o->rule, "dns.allowAddresses (%s is %s)", first_ip,
			first_why);
	} else if (first_why[0] != '\0') {
		snprintf(o->rule, sizeof o->rule, "dns.allowAddresses (%s is %s; left out)",
			first_ip, first_why);
	} else {
		snprintf(o->rule, sizeof o->rule, "%s", v->rule);
	}
}

static struct pending *slot_take(struct dns_listener *l)
{
	struct pending *p = l->free_slots;
	if (p != NULL) {
		l->free_slots = p->next_free;
		p->next_free = NULL;
	}
	return p;
}

static void slot_put(struct dns_listener *l, struct pending *p)
{
	if (p->v.hold != NULL)
		l->ops.release(l->arg, p->v.hold);
	p->v.hold = NULL;
	p->q = NULL;
	p->udp = NULL;
	p->tcp = NULL;
	p->next_free = l->free_slots;
	l->free_slots = p;
}

static void tcp_send(struct tcp_conn *c, const uint8_t *msg, size_t len);
static void tcp_after_answer(struct tcp_conn *c);

/* The resolver's answer to a pending query, from the loop. */
static void pending_done(enum dns_status st, const struct dns_answer *ans, void *arg)
{
	struct pending *p = arg;
	struct dns_listener *l = p->l;
	p->q = NULL;
	struct outcome o;
	memset(&o, 0, sizeof o);
	real_outcome(&p->wq, &p->v, st, ans, &o);
	write_record(l, &p->wq, &p->v, &p->who, &o);
	size_t limit = p->tcp ? DNS_WIRE_MSG_MAX : dns_wire_udp_limit(&p->wq);
	int n = dns_wire_answer(&p->wq, o.rcode, o.addrs, o.naddrs, o.ttl, limit, l->out + 2,
		sizeof l->out - 2);
	struct tcp_conn *c = p->tcp;
	if (n > 0 && p->udp != NULL && p->udp->fd != -1)
		sendto(p->udp->fd, l->out + 2, (size_t)n, 0, (struct sockaddr *)&p->peer, p->peerlen);
	slot_put(l, p);
	if (c != NULL) {
		c->pending = NULL;
		if (n > 0)
			tcp_send(c, l->out + 2, (size_t)n);
		tcp_after_answer(c); /* may close c */
	}
}

/* Answers one message.  Returns the answer's length in out, 0 for no answer, or -1 when it waits
 * for the resolver (the answer then goes to udp/peer or tcp from pending_done). */
static int process(struct dns_listener *l, const uint8_t *msg, size_t len,
	const struct dns_listener_client *who, struct udp_sock *udp, const struct sockaddr *peer,
	socklen_t peerlen, struct tcp_conn *tcp, uint8_t *out, size_t cap)
{
	struct dns_wire_query q;
	enum dns_wire_parse pr = dns_wire_parse_query(msg, len, &q);
	size_t limit = who->tcp ? DNS_WIRE_MSG_MAX : dns_wire_udp_limit(&q);
	enum dns_rcode early = DNS_RCODE_NOERROR;
	switch (pr) {
	case DNS_WIRE_DROP:
		return 0;
	case DNS_WIRE_FORMERR:
		early = DNS_RCODE_FORMERR;
		break;
	case DNS_WIRE_REFUSED:
		/* Another opcode or class: no name decision to record. */
		early = DNS_RCODE_REFUSED;
		break;
	case DNS_WIRE_BADVERS:
		early = DNS_RCODE_BADVERS;
		break;
	case DNS_WIRE_OK:
		break;
	}
	if (early != DNS_RCODE_NOERROR) {
		int n = dns_wire_answer(&q, early, NULL, 0, 0, limit, out, cap);
		return n > 0 ? n : 0; /* -1 means "waiting" to callers */
	}

	struct dns_listener_verdict v;
	memset(&v, 0, sizeof v);
	l->ops.decide(l->arg, who, q.canon_ok ? q.name : NULL, &v);
	v.session[sizeof v.session - 1] = '\0';
	struct outcome o;
	memset(&o, 0, sizeof o);
	o.allow = 1;
	if (v.session[0] == '\0') {
		deny(&o, v.reason ? v.reason : "no-session", v.rule);
	} else if (v.dns_denied) {
		/* The dns action denied: nothing is answered, whatever the name and type. */
		deny(&o, "action-denied", v.rule[0] ? v.rule : "actions: dns");
	} else if (!q.canon_ok) {
		deny(&o, "bad-request", "not a host name (letters, digits and hyphens only)");
	} else if (!v.allow) {
		deny(&o, v.reason ? v.reason : "host-not-allowed", v.rule);
	} else if (q.qtype == DNS_TYPE_HTTPS || q.qtype == DNS_TYPE_SVCB) {
		/* Empty, so that no Encrypted Client Hello keys reach the client. */
		o.rcode = DNS_RCODE_NOERROR;
		snprintf(o.rule, sizeof o.rule, "%s", v.rule);
	} else if (q.qtype != DNS_TYPE_A && q.qtype != DNS_TYPE_AAAA) {
		/* TXT, MX, ANY, ...: the listener is no tunnel. */
		deny(&o, "type-refused", "listen.dns answers A, AAAA, HTTPS and SVCB only");
	} else if (v.mapped) {
		o.rcode = DNS_RCODE_NOERROR;
		snprintf(o.rule, sizeof o.rule, "%s", v.rule);
		if (q.qtype == DNS_TYPE_A) {
			struct dns_addr *a = &o.addrs[0];
			a->family = AF_INET;
			if (l->map != NULL &&
				dns_map_get(l->map, v.session, q.name, now_ms(), a->addr) == 0) {
				o.naddrs = 1;
				o.ttl = dns_map_ttl(l->map);
			} else {
				o.rcode = DNS_RCODE_SERVFAIL;
				o.reason = "pool-exhausted";
				snprintf(o.rule, sizeof o.rule,
					"listen.dnsAnswers: mapped (all %u addresses of 198.18.0.0/15 "
					"are in use)",
					DNS_MAP_POOL);
			}
		}
	} else if (v.resolver == NULL) {
		o.rcode = DNS_RCODE_SERVFAIL;
		o.reason = "dns-failed";
		snprintf(o.rule, sizeof o.rule, "resolver (none)");
	} else {
		enum dns_status st;
		struct dns_answer ans;
		if (dns_resolve_known(v.resolver, q.name, &st, &ans) == 0) {
			real_outcome(&q, &v, st, &ans, &o);
		} else {
			struct pending *p = slot_take(l);
			if (p != NULL) {
				p->wq = q;
				p->v = v;
				p->who = *who;
				p->udp = udp;
				p->tcp = tcp;
				if (peer != NULL && peerlen <= sizeof p->peer) {
					memcpy(&p->peer, peer, peerlen);
					p->peerlen = peerlen;
				}
				p->q = dns_resolve(v.resolver, q.name, pending_done, p);
				if (p->q != NULL) {
					if (tcp != NULL)
						tcp->pending = p;
					return -1; /* the slot holds v.hold now */
				}
				p->v.hold = NULL;
				slot_put(l, p);
			}
			o.rcode = DNS_RCODE_SERVFAIL;
			o.reason = "dns-failed";
			if (p != NULL)
				snprintf(o.rule, sizeof o.rule, "resolver (out of memory)");
			else
				snprintf(o.rule, sizeof o.rule,
					"resolver (%d answers already waiting)", DNS_PENDING_MAX);
		}
	}
	if (v.hold != NULL)
		l->ops.release(l->arg, v.hold);
	write_record(l, &q, &v, who, &o);
	int n = dns_wire_answer(&q, o.rcode, o.addrs, o.naddrs, o.ttl, limit, out, cap);
	return n > 0 ? n : 0;
}

/* ---- UDP ------------------------------------------------------------------------------------ */

static void client_from(const struct sockaddr *sa, struct dns_listener_client *who)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	memset(&who->peer, 0, sizeof who->peer);
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
		who->peer.family = AF_INET;
		memcpy(who->peer.addr, &s4->sin_addr, 4);
		port = ntohs(s4->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
		who->peer.family = AF_INET6;
		memcpy(who->peer.addr, &s6->sin6_addr, 16);
		port = ntohs(s6->sin6_port);
	}
	inet_ntop(who->peer.family ? who->peer.family : AF_INET, who->peer.addr, ip, sizeof ip);
	if (who->peer.family == AF_INET6)
		snprintf(who->text, sizeof who->text, "[%s]:%u", ip, port);
	else
		snprintf(who->text, sizeof who->text, "%s:%u", ip, port);
}

static void udp_read(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	struct udp_sock *us = arg;
	struct dns_listener *l = us->l;
	struct udp_batch *b = l->batch;
	/* Up to DNS_UDP_BATCH datagrams a wake-up, UDP_VEC at a time: one recvmmsg and one
	 * sendmmsg per vector instead of a system call per datagram each way. */
	for (int round = 0; round < DNS_UDP_BATCH / UDP_VEC; round++) {
		for (int i = 0; i < UDP_VEC; i++) {
			b->iov[i].iov_base = b->in[i];
			b->iov[i].iov_len = sizeof b->in[i];
			memset(&b->msgs[i].msg_hdr, 0, sizeof b->msgs[i].msg_hdr);
			b->msgs[i].msg_hdr.msg_name = &b->peers[i];
			b->msgs[i].msg_hdr.msg_namelen = sizeof b->peers[i];
			b->msgs[i].msg_hdr.msg_iov = &b->iov[i];
			b->msgs[i].msg_hdr.msg_iovlen = 1;
		}
		int n = recvmmsg(fd, b->msgs, UDP_VEC, MSG_DONTWAIT, NULL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* EAGAIN: read everything; other errors: try on the next wake-up */
		int nout = 0;
		for (int i = 0; i < n; i++) {
			/* A datagram longer than UDP_IN_MAX arrives cut: ldns finds it malformed. */
			const struct sockaddr *peer = (const struct sockaddr *)&b->peers[i];
			socklen_t pl = b->msgs[i].msg_hdr.msg_namelen;
			struct dns_listener_client who;
			client_from(peer, &who);
			who.listener = us->text;
			who.tcp = 0;
			int alen = process(l, b->in[i], b->msgs[i].msg_len, &who, us, peer, pl, NULL,
				b->out[nout], sizeof b->out[nout]);
			if (alen <= 0)
				continue;
			b->oiov[nout].iov_base = b->out[nout];
			b->oiov[nout].iov_len = (size_t)alen;
			memset(&b->omsgs[nout].msg_hdr, 0, sizeof b->omsgs[nout].msg_hdr);
			b->omsgs[nout].msg_hdr.msg_name = &b->peers[i];
			b->omsgs[nout].msg_hdr.msg_namelen = pl;
			b->omsgs[nout].msg_hdr.msg_iov = &b->oiov[nout];
			b->omsgs[nout].msg_hdr.msg_iovlen = 1;
			nout++;
		}
		/* A full socket buffer loses the rest, as UDP may; the clients ask again. */
		for (int sent = 0; sent < nout;) {
			int k = sendmmsg(fd, b->omsgs + sent, (unsigned)(nout - sent), MSG_DONTWAIT);
			if (k == -1 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			sent += k;
		}
		if (n < UDP_VEC)
			return;
	}
}

/* ---- TCP ------------------------------------------------------------------------------------ */

static void tcp_close(struct tcp_conn *c)
{
	struct dns_listener *l = c->l;
	if (c->pending != NULL) {
		dns_query_cancel(c->pending->q);
		slot_put(l, c->pending);
		c->pending = NULL;
	}
	if (c->prev)
		c->prev->next = c->next;
	else
		l->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	l->nconns--;
	if (c->bev != NULL)
		bufferevent_free(c->bev);
	if (c->timer != NULL)
		event_free(c->timer);
	free(c);
}

static void tcp_arm(struct tcp_conn *c)
{
	struct timeval tv = {DNS_TCP_TIMEOUT_MS / 1000, (DNS_TCP_TIMEOUT_MS % 1000) * 1000};
	evtimer_add(c->timer, &tv);
}

static void tcp_send(struct tcp_conn *c, const uint8_t *msg, size_t len)
{
	/* TCP frames each message with its length in two bytes (RFC 1035 4.2.2). */
	uint8_t prefix[2] = {(uint8_t)(len >> 8), (uint8_t)len};
	struct evbuffer *out = bufferevent_get_output(c->bev);
	evbuffer_add(out, prefix, 2);
	evbuffer_add(out, msg, len);
}

/* Answers every whole message the client has sent, one at a time, until one waits for the
 * resolver, the output is over DNS_TCP_OUT_MAX, or the input runs out.  May close c. */
static void tcp_run(struct tcp_conn *c)
{
	struct dns_listener *l = c->l;
	struct evbuffer *in = bufferevent_get_input(c->bev);
	struct evbuffer *out = bufferevent_get_output(c->bev);
	while (c->pending == NULL) {
		if (evbuffer_get_length(out) >= DNS_TCP_OUT_MAX) {
			/* A client that does not read its answers gets no more read; the write
			 * callback resumes, the deadline ends it. */
			bufferevent_disable(c->bev, EV_READ);
			return;
		}
		uint8_t prefix[2];
		if (evbuffer_copyout(in, prefix, 2) != 2)
			break;
		size_t mlen = ((size_t)prefix[0] << 8) | prefix[1];
		if (evbuffer_get_length(in) < 2 + mlen)
			break;
		evbuffer_drain(in, 2);
		evbuffer_remove(in, l->in, mlen);
		int n = process(l, l->in, mlen, &c->who, NULL, NULL, 0, c, l->out + 2,
			sizeof l->out - 2);
		if (n == -1) {
			/* c->pending is set; the resolver's own deadline holds meanwhile. */
			evtimer_del(c->timer);
			return;
		}
		if (n > 0)
			tcp_send(c, l->out + 2, (size_t)n);
		tcp_arm(c);
	}
	if (c->eof && evbuffer_get_length(out) == 0) {
		tcp_close(c);
		return;
	}
	if (!c->eof)
		bufferevent_enable(c->bev, EV_READ);
}

static void tcp_after_answer(struct tcp_conn *c)
{
	tcp_arm(c);
	tcp_run(c);
}

static void tcp_read(struct bufferevent *bev, void *arg)
{
	(void)bev;
	tcp_run(arg);
}

static void tcp_write(struct bufferevent *bev, void *arg)
{
	(void)bev;
	struct tcp_conn *c = arg;
	if (c->pending == NULL)
		tcp_run(c);
}

static void tcp_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	struct tcp_conn *c = arg;
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR)) {
		/* Half-closed: answer what was sent, then close. */
		c->eof = 1;
		if (c->pending == NULL)
			tcp_run(c);
		return;
	}
	tcp_close(c);
}

static void tcp_timeout(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	tcp_close(arg);
}

static void tcp_accept(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa,
	int socklen, void *arg)
{
	(void)lev;
	(void)socklen;
	struct tcp_sock *ts = arg;
	struct dns_listener *l = ts->l;
	if (l->nconns >= DNS_TCP_CLIENTS_MAX) {
		close(fd); /* at once, so that the backlog never fills behind a flood */
		return;
	}
	struct tcp_conn *c = calloc(1, sizeof *c);
	if (c == NULL) {
		close(fd);
		return;
	}
	c->l = l;
	client_from(sa, &c->who);
	c->who.listener = ts->text;
	c->who.tcp = 1;
	c->bev = bufferevent_socket_new(l->base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->timer = evtimer_new(l->base, tcp_timeout, c);
	c->next = l->conns;
	if (l->conns)
		l->conns->prev = c;
	l->conns = c;
	l->nconns++;
	if (c->bev == NULL || c->timer == NULL) {
		if (c->bev == NULL)
			close(fd);
		tcp_close(c);
		return;
	}
	bufferevent_setcb(c->bev, tcp_read, tcp_write, tcp_event, c);
	/* One whole message at most waits in egressd's input. */
	bufferevent_setwatermark(c->bev, EV_READ, 0, 2 + DNS_WIRE_MSG_MAX);
	bufferevent_enable(c->bev, EV_READ);
	tcp_arm(c);
}

/* ---- life ----------------------------------------------------------------------------------- */

struct dns_listener *dns_listener_new(struct event_base *base, const struct dns_listener_ops *ops,
	void *arg, struct dns_map *map)
{
	struct dns_listener *l = calloc(1, sizeof *l);
	if (l == NULL)
		return NULL;
	l->base = base;
	l->ops = *ops;
	l->arg = arg;
	l->map = map;
	l->dedup = dns_dedup_new(DNS_DEDUP_MAX, DNS_DEDUP_WINDOW_MS);
	l->slots = calloc(DNS_PENDING_MAX, sizeof *l->slots);
	l->batch = calloc(1, sizeof *l->batch);
	l->summary = event_new(base, -1, EV_PERSIST, summary_cb, l);
	if (l->dedup == NULL || l->slots == NULL || l->batch == NULL || l->summary == NULL) {
		dns_listener_free(l);
		return NULL;
	}
	for (size_t i = DNS_PENDING_MAX; i-- > 0;) {
		l->slots[i].l = l;
		l->slots[i].next_free = l->free_slots;
		l->free_slots = &l->slots[i];
	}
	struct timeval tv = {DNS_DEDUP_WINDOW_MS / 1000, 0};
	event_add(l->summary, &tv);
	return l;
}

static void format_sockaddr(const struct sockaddr_storage *ss, char *buf, size_t cap)
{
	struct dns_listener_client who;
	client_from((const struct sockaddr *)ss, &who);
	snprintf(buf, cap, "%s", who.text);
}

int dns_listener_open(struct dns_listener *l, const char *addr, char *bound, size_t boundcap,
	char *err, size_t errlen)
{
	if (l->nsocks == DNS_LISTENER_ADDRS) {
		snprintf(err, errlen, "more than %d addresses", DNS_LISTENER_ADDRS);
		return -1;
	}
	struct sockaddr_storage ss;
	socklen_t sl;
	char why[128];
	if (allow_config_addr_parse(addr, 0, &ss, &sl, why, sizeof why) == -1) {
		snprintf(err, errlen, "\"%s\": %s", addr, why);
		return -1;
	}
	int any_port = ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port == 0
					       : ((struct sockaddr_in6 *)&ss)->sin6_port == 0;
	struct udp_sock *us = &l->udp[l->nsocks];
	struct tcp_sock *ts = &l->tcp[l->nsocks];
	/* With port 0, UDP picks the port and TCP must get the same one; another program may hold
	 * it for TCP, so try a few. */
	for (int attempt = 0; attempt < 16; attempt++) {
		struct sockaddr_storage bs = ss;
		int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd == -1) {
			snprintf(err, errlen, "%s: socket: %s", addr, strerror(errno));
			return -1;
		}
		int rcv = UDP_RCVBUF;
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
		socklen_t bl = sl;
		if (bind(fd, (struct sockaddr *)&bs, sl) == -1 ||
			getsockname(fd, (struct sockaddr *)&bs, &bl) == -1) {
			snprintf(err, errlen, "%s (UDP): %s", addr, strerror(errno));
			close(fd);
			return -1;
		}
		ts->lev = evconnlistener_new_bind(l->base, tcp_accept, ts,
			LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 128,
			(struct sockaddr *)&bs, (int)bl);
		if (ts->lev == NULL) {
			int e = errno;
			close(fd);
			if (any_port && e == EADDRINUSE)
				continue;
			snprintf(err, errlen, "%s (TCP): %s", addr, strerror(e));
			return -1;
		}
		us->l = l;
		us->fd = fd;
		us->ev = event_new(l->base, fd, EV_READ | EV_PERSIST, udp_read, us);
		if (us->ev == NULL || event_add(us->ev, NULL) == -1) {
			if (us->ev != NULL)
				event_free(us->ev);
			us->ev = NULL;
			us->fd = -1;
			close(fd);
			evconnlistener_free(ts->lev);
			ts->lev = NULL;
			snprintf(err, errlen, "%s: out of memory", addr);
			return -1;
		}
		ts->l = l;
		format_sockaddr(&bs, us->text, sizeof us->text);
		memcpy(ts->text, us->text, sizeof ts->text);
		snprintf(bound, boundcap, "%s", us->text);
		l->nsocks++;
		return 0;
	}
	snprintf(err, errlen, "%s: no port free for both UDP and TCP", addr);
	return -1;
}

int dns_listener_adopt(struct dns_listener *l, int udp_fd, int tcp_fd, char *bound,
	size_t boundcap, char *err, size_t errlen)
{
	if (l->nsocks == DNS_LISTENER_ADDRS) {
		snprintf(err, errlen, "more than %d addresses", DNS_LISTENER_ADDRS);
		return -1;
	}
	struct sockaddr_storage bs;
	socklen_t bl = sizeof bs;
	if (getsockname(udp_fd, (struct sockaddr *)&bs, &bl) == -1) {
		snprintf(err, errlen, "getsockname: %s", strerror(errno));
		return -1;
	}
	struct udp_sock *us = &l->udp[l->nsocks];
	struct tcp_sock *ts = &l->tcp[l->nsocks];
	int rcv = UDP_RCVBUF;
	setsockopt(udp_fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
	ts->lev = evconnlistener_new(l->base, tcp_accept, ts,
		LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, tcp_fd);
	us->ev = event_new(l->base, udp_fd, EV_READ | EV_PERSIST, udp_read, us);
	if (ts->lev == NULL || us->ev == NULL || event_add(us->ev, NULL) == -1) {
		if (ts->lev != NULL)
			evconnlistener_free(ts->lev);
		if (us->ev != NULL)
			event_free(us->ev);
		ts->lev = NULL;
		us->ev = NULL;
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	us->l = l;
	us->fd = udp_fd;
	ts->l = l;
	format_sockaddr(&bs, us->text, sizeof us->text);
	memcpy(ts->text, us->text, sizeof ts->text);
	snprintf(bound, boundcap, "%s", us->text);
	l->nsocks++;
	return 0;
}

void dns_listener_close(struct dns_listener *l)
{
	if (l == NULL)
		return;
	while (l->conns != NULL)
		tcp_close(l->conns);
	for (size_t i = 0; l->slots != NULL && i < DNS_PENDING_MAX; i++) {
		struct pending *p = &l->slots[i];
		if (p->q != NULL) {
			dns_query_cancel(p->q);
			slot_put(l, p);
		}
	}
	for (size_t i = 0; i < l->nsocks; i++) {
		if (l->udp[i].ev != NULL)
			event_free(l->udp[i].ev);
		l->udp[i].ev = NULL;
		if (l->udp[i].fd != -1)
			close(l->udp[i].fd);
		l->udp[i].fd = -1;
		if (l->tcp[i].lev != NULL)
			evconnlistener_free(l->tcp[i].lev);
		l->tcp[i].lev = NULL;
	}
}

void dns_listener_free(struct dns_listener *l)
{
	if (l == NULL)
		return;
	dns_listener_close(l);
	if (l->summary != NULL)
		event_free(l->summary);
	dns_dedup_free(l->dedup);
	free(l->slots);
	free(l->batch);
	free(l);
}

size_t dns_listener_answer(struct dns_listener *l, const uint8_t *msg, size_t len,
	const struct dns_listener_client *who, uint8_t *out, size_t cap)
{
	int n = process(l, msg, len, who, NULL, NULL, 0, NULL, out, cap);
	return n > 0 ? (size_t)n : 0;
}
