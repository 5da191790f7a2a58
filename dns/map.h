/* Mapped answers (listen.dnsAnswers: mapped; docs/dns.md): an address from 198.18.0.0/15 that
 * stands for one (session, name), so that a connection redirected to the transparent listener
 * has a name whatever protocol it speaks.
 *
 * Each (session, name) gets one address, and each address stands for one (session, name) at a
 * time: two sessions asking for the same name get different addresses.  An address is live
 * while a connection holds it (dns_map_ref) and for the TTL after the last answer that gave it
 * and after the last connection holding it let go; only then may it stand for another name.
 * Addresses never used come first, then those freed longest ago, so that a client that kept an
 * answer past its TTL is as unlikely as can be to reach another name.  When all 131,072 are
 * live, dns_map_get fails: a live address is never taken back.
 *
 * Not thread-safe (the event loop's); time is passed in, so tests drive it. */
#ifndef EGRESSD_DNS_MAP_H
#define EGRESSD_DNS_MAP_H

#include <stddef.h>
#include <stdint.h>

#define DNS_MAP_POOL 131072u      /* addresses in 198.18.0.0/15 */
#define DNS_MAP_TTL_DEFAULT 60u   /* seconds, the TTL of a mapped answer */
#define DNS_MAP_SESSION_MAX 128   /* longest session name kept (longer ones are refused) */

struct dns_map;

/* A map whose answers carry ttl_s seconds (0: DNS_MAP_TTL_DEFAULT).  NULL when out of memory. */
struct dns_map *dns_map_new(uint32_t ttl_s);
void dns_map_free(struct dns_map *m);

/* The TTL answers carry, in seconds. */
uint32_t dns_map_ttl(const struct dns_map *m);

/* 1 when the IPv4 address (4 bytes, network order) is in 198.18.0.0/15. */
int dns_map_in_pool(const uint8_t addr[4]);

/* The address standing for (session, name), made when there is none; the answer that gives it
 * keeps it live for the TTL from now_ms (monotonic milliseconds).  Returns 0 with addr set, or -1
 * when every address is live (or on allocation failure, or a session name over
 * DNS_MAP_SESSION_MAX): the caller answers SERVFAIL. */
int dns_map_get(struct dns_map *m, const char *session, const char *name, uint64_t now_ms,
	uint8_t addr[4]);

/* What addr stands for: 0 with *session and *name pointing into the map (valid until the
 * address is reclaimed: hold a reference to keep them), or -1 when it stands for nothing.  An
 * address whose TTL ran out still answers until dns_map_get reclaims it.  The caller checks that
 * the session is the one of its connection: a client that kept an answer for longer than its
 * TTL may reach an address that now stands for another session's name. */
int dns_map_lookup(struct dns_map *m, const uint8_t addr[4], uint64_t now_ms,
	const char **session, const char **name);

/* A connection holds addr: it stays live until the matching dns_map_unref.  0, or -1 when addr
 * stands for nothing.  dns_map_unref starts the TTL again from now_ms when the last holder lets
 * go. */
int dns_map_ref(struct dns_map *m, const uint8_t addr[4], uint64_t now_ms);
void dns_map_unref(struct dns_map *m, const uint8_t addr[4], uint64_t now_ms);

/* Addresses standing for a name now (live or not yet reused), and of them those live. */
size_t dns_map_count(const struct dns_map *m);
size_t dns_map_live(const struct dns_map *m, uint64_t now_ms);

#endif
