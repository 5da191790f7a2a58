/* The DNS listener (listen.dns; docs/dns.md): UDP and TCP on each address, on the libevent loop.
 *
 * It answers only for names a session may reach: the proxy decides each name through a
 * callback (dns_listener_ops.decide) and this module does the rest: the answer's policy
 * (docs/design.md 1 and issue 10 item 4), real answers from the proxy's resolver and address
 * policy, mapped answers from a dns_map, the wire format (dns/wire.h), bounded I/O, and which
 * answers get an audit record (dns/dedup.h), handed back through dns_listener_ops.record.
 *
 * Bounds: at most DNS_TCP_CLIENTS_MAX TCP clients (more are closed at once); a TCP client holds
 * at most one message (2 + 65,535 bytes) in egressd's input and DNS_TCP_OUT_MAX of answers in
 * its output before egressd stops reading from it, and must complete each message within
 * DNS_TCP_TIMEOUT_MS of the previous answer (or of connecting); UDP reads into one buffer per
 * listener and allocates nothing that stays; at most DNS_PENDING_MAX answers wait for the
 * resolver at once (a query beyond gets SERVFAIL).  Nothing blocks the loop. */
#ifndef EGRESSD_DNS_LISTEN_H
#define EGRESSD_DNS_LISTEN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "dns/addrpolicy.h"
#include "dns/map.h"
#include "dns/resolver.h"

struct event_base;

#define DNS_TCP_CLIENTS_MAX 256     /* TCP clients at once, over every DNS listener */
#define DNS_TCP_TIMEOUT_MS 10000u   /* to send a whole message, from connect or the last answer */
#define DNS_TCP_OUT_MAX (64 * 1024) /* answers queued to one TCP client before reading stops */
#define DNS_PENDING_MAX 512         /* answers waiting for the resolver at once */
#define DNS_UDP_BATCH 64            /* datagrams read per wake-up, so TCP and the proxy get turns */
#define DNS_LISTENER_ADDRS 16       /* listen.dns addresses */
#define DNS_ADDR_TEXT 64            /* "[v6]:port" and NUL */

/* The client a query came from. */
struct dns_listener_client {
	struct dns_addr peer;       /* its address, for sessions' clients lists */
	char text[DNS_ADDR_TEXT];   /* "IP:PORT" ("[IPv6]:PORT") */
	const char *listener;       /* the listen.dns address it reached, as printed */
	int tcp;                    /* 1 over TCP */
};

/* The proxy's word on one name (or, with name NULL, on the client alone). */
struct dns_listener_verdict {
	char session[DNS_MAP_SESSION_MAX + 1]; /* the client's session; "" when none */
	int allow;                  /* the session may reach the name on some port and may resolve */
	const char *reason;         /* a static reason code when !allow: no-session,
	                               session-expired, action-denied, host-not-allowed, ... */
	char rule[320];             /* the rule that decided ("actions: dns", "allowDomains: x") */
	int dns_denied;             /* the bound denies the dns action: REFUSED for every query */
	int mapped;                 /* listen.dnsAnswers: mapped */
	struct dns_resolver *resolver;         /* real answers: the current generation's resolver */
	const struct dns_addr_policy *addrpol; /* and its address policy */
	void *hold;                 /* handed back to ops.release once the answer is done (keeps
	                               resolver and addrpol alive); NULL: nothing to release */
};

/* One record to write (event dns, front dns, action dns).  Strings may be NULL (absent). */
struct dns_listener_record {
	const char *session;
	const char *client;         /* "IP:PORT" */
	const char *host;           /* the name: canonical, or as sent when it is no host name */
	const char *qtype;          /* "A", "AAAA", "HTTPS", "TXT", ... */
	const char *decision;       /* allow or deny */
	const char *reason;         /* why (deny), or what went wrong (allow with SERVFAIL, ...) */
	const char *rule;
	const char *addr;           /* the answer's addresses, comma-separated; NULL when none */
	const char *rcode;          /* "NOERROR", "REFUSED", "SERVFAIL", "NXDOMAIN" */
	uint64_t repeat;            /* answers of the same key left out since its last record */
	uint64_t suppressed;        /* > 0: a summary record, the records left out for want of room
	                               in the record table (every other field NULL) */
};

struct dns_listener_ops {
	/* Fills out for a query from who about the canonical name (NULL when the query names no
	 * host: only the session and dns_denied are asked for).  out arrives zeroed. */
	void (*decide)(void *arg, const struct dns_listener_client *who, const char *name,
		struct dns_listener_verdict *out);
	/* Lets go of verdict.hold. */
	void (*release)(void *arg, void *hold);
	/* Writes one record: 0, or -1 when an allow could not be put on record (the answer then
	 * becomes SERVFAIL, reason audit-unavailable, and the next query of that key tries to
	 * write again). */
	int (*record)(void *arg, const struct dns_listener_record *rec);
};

struct dns_listener;

/* A listener without sockets yet.  map is where mapped answers come from (NULL: mapped answers
 * are SERVFAIL); it must outlive the listener.  ops is copied.  NULL when out of memory. */
struct dns_listener *dns_listener_new(struct event_base *base, const struct dns_listener_ops *ops,
	void *arg, struct dns_map *map);

/* Opens UDP and TCP on addr ("IP:PORT", "[IPv6]:PORT"; port 0 picks one port free for both).
 * Returns 0 with the bound address, port resolved, in bound (e.g. "127.0.0.1:53535"), or -1
 * with the reason in err. */
int dns_listener_open(struct dns_listener *l, const char *addr, char *bound, size_t boundcap,
	char *err, size_t errlen);

/* The same with sockets made elsewhere (exec --isolate makes them inside CMD's namespace): a
 * bound UDP socket and a listening TCP socket on the same address, both taken over (closed with
 * the listener).  0 with the address in bound, or -1 with the reason (the sockets stay the
 * caller's then). */
int dns_listener_adopt(struct dns_listener *l, int udp_fd, int tcp_fd, char *bound,
	size_t boundcap, char *err, size_t errlen);

/* Stops answering: closes every socket and TCP client, drops pending answers (their holds are
 * released).  The listener can be freed afterwards. */
void dns_listener_close(struct dns_listener *l);

/* Closes and frees; NULL is ignored. */
void dns_listener_free(struct dns_listener *l);

/* The answer the listener gives to msg from who, without sockets (tests, fuzzing): its length
 * in out, or 0 when there is none now (dropped, or waiting for the resolver: that answer is then
 * built and discarded).  Records are written as for a socket. */
size_t dns_listener_answer(struct dns_listener *l, const uint8_t *msg, size_t len,
	const struct dns_listener_client *who, uint8_t *out, size_t cap);

#endif
