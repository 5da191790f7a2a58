/* Address prefixes ("10.0.0.0/8", "2001:db8::/32", or a single address). */
#ifndef EGRESSD_ALLOWLIST_CIDR_H
#define EGRESSD_ALLOWLIST_CIDR_H

#include <stddef.h>
#include <stdint.h>

struct allow_cidr {
	int family;       /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* network address, host bits cleared; IPv4 in the first 4 bytes */
	uint8_t prefix;   /* 0-32 or 0-128 */
};

/* Parses "ADDR" or "ADDR/LEN" (IPv4 in dotted-quad only, IPv6 without brackets).  Returns 0, or -1
 * with a reason in err.  Host bits set under the prefix are an error ("10.0.0.1/8"). */
int allow_cidr_parse(const char *in, size_t len, struct allow_cidr *out, char *err, size_t errlen);

/* 1 when the address (4 or 16 bytes by family) is inside c. */
int allow_cidr_contains(const struct allow_cidr *c, int family, const uint8_t *addr);

/* "10.0.0.0/8" into buf (always NUL-terminated when cap > 0). */
void allow_cidr_format(const struct allow_cidr *c, char *buf, size_t cap);

#endif
