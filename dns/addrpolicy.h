/* The address policy (docs/design.md 3, step 5): which resolved addresses may be dialled.
 *
 * Always denied unless dns.allowAddresses carves an exception: loopback, 0.0.0.0/8, RFC 1918,
 * CGNAT 100.64.0.0/10, link-local (incl. 169.254.169.254), multicast, broadcast, reserved
 * 240/4, IPv6 unspecified/loopback, ULA fc00::/7, link-local fe80::/10, multicast ff00::/8, and
 * cloud metadata addresses (169.254.169.254, fd00:ec2::254, 100.100.100.200).  IPv4 embedded in
 * IPv6 (mapped ::ffff:0:0/96, compatible ::/96, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4
 * 2002::/16, Teredo 2001::/32 with its inverted client address) is judged as that IPv4 address.
 * dns.denyAddresses adds ranges that no exception lifts.  Pure functions, no allocation. */
#ifndef EGRESSD_DNS_ADDRPOLICY_H
#define EGRESSD_DNS_ADDRPOLICY_H

#include <stddef.h>
#include <stdint.h>

#include "allowlist/cidr.h"

struct dns_addr_policy {
	const struct allow_cidr *allow; /* dns.allowAddresses */
	size_t nallow;
	const struct allow_cidr *deny;  /* dns.denyAddresses */
	size_t ndeny;
};

/* Judges one address (4 bytes for AF_INET, 16 for AF_INET6).  Returns 0 when it may be dialled;
 * -1 when denied, with the reason in why, e.g. "loopback 127.0.0.0/8",
 * "private 10.0.0.0/8 (embedded in 6to4 2002::/16)", "denyAddresses 203.0.113.0/24". */
int dns_addr_judge(const struct dns_addr_policy *p, int family, const uint8_t *addr, char *why,
	size_t whylen);

/* If the IPv6 address embeds an IPv4 address by one of the schemes above, writes it to v4 and
 * returns the scheme's name ("IPv4-mapped", "NAT64", "6to4", "Teredo", "IPv4-compatible", or
 * "IPv4-translated" for SIIT ::ffff:0:0:0/96); else NULL.  For Teredo, v4 is the client address
 * (de-inverted); the server address is bytes 4-7 of v6. */
const char *dns_addr_embedded_v4(const uint8_t v6[16], uint8_t v4[4]);

#endif
