/* The resolver: c-ares driven by the libevent loop, dns.hosts first, then a TTL cache.
 *
 * Nothing here blocks the loop.  Callbacks are always invoked from the loop, never from inside
 * dns_resolve() itself, so a caller may free its state in the callback. */
#ifndef EGRESSD_DNS_RESOLVER_H
#define EGRESSD_DNS_RESOLVER_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct allow_dns_config;

#define DNS_MAX_ADDRS 16

enum dns_status {
	DNS_OK = 0,       /* at least one address */
	DNS_NXDOMAIN,     /* the name does not exist, or has no A/AAAA records */
	DNS_TIMEOUT,      /* no answer within dns.timeout */
	DNS_FAILED,       /* any other failure (server failure, refused, bad name) */
};

struct dns_addr {
	int family;       /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* IPv4 in the first 4 bytes */
};

struct dns_answer {
	size_t n;                              /* addresses, in the order to try */
	struct dns_addr addrs[DNS_MAX_ADDRS];
	uint32_t ttl;                          /* seconds (0 for dns.hosts answers) */
	int source;                            /* 0 dns, 1 dns.hosts, 2 cache */
};

typedef void (*dns_cb)(enum dns_status status, const struct dns_answer *ans, void *arg);

struct dns_resolver;
struct dns_query;

/* Creates a resolver on base from the dns: section (servers, hosts, timeout); cfg is copied.
 * NULL with a reason in err. */
struct dns_resolver *dns_resolver_new(struct event_base *base, const struct allow_dns_config *cfg,
	char *err, size_t errlen);

/* Starts resolving a canonical name (A and AAAA).  cb runs exactly once, from the loop, unless the
 * query is cancelled first.  Returns the query handle, or NULL on allocation failure (cb will not
 * run). */
struct dns_query *dns_resolve(struct dns_resolver *r, const char *name, dns_cb cb, void *arg);

/* Answers at once from dns.hosts or the cache, without a callback: 0 with *status and *ans
 * filled, or -1 when the name needs a query (call dns_resolve). */
int dns_resolve_known(struct dns_resolver *r, const char *name, enum dns_status *status,
	struct dns_answer *ans);

/* Cancels a pending query: its callback will not run.  The handle is invalid afterwards. */
void dns_query_cancel(struct dns_query *q);

/* Limits the cache to max entries (default 10,000), evicting the oldest at once if it holds
 * more; 0 turns the cache off. */
void dns_resolver_set_cache_max(struct dns_resolver *r, size_t max);

/* Frees the resolver.  Pending queries are dropped: their callbacks never run. */
void dns_resolver_free(struct dns_resolver *r);

/* "NXDOMAIN", "timeout", ... */
const char *dns_status_str(enum dns_status s);

#endif
