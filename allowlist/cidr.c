/* Address prefixes.  Parsing is deliberately stricter than allow_canon_host: a CIDR is written
 * by an operator in a config, so only the one unambiguous spelling (dotted quad without leading
 * zeros, RFC 4291 text for IPv6) is taken. */
#include "allowlist/cidr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

static int set_err(char *err, size_t errlen, const char *msg, const char *in, size_t len)
{
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "%s: \"%.*s\"", msg, (int)(len > 80 ? 80 : len), in);
	return -1;
}

/* 1 when bit i (from the most significant bit of addr[0]) is set. */
static int bit_at(const uint8_t *addr, unsigned i)
{
	return (addr[i / 8] >> (7 - i % 8)) & 1;
}

int allow_cidr_parse(const char *in, size_t len, struct allow_cidr *out, char *err, size_t errlen)
{
	char buf[INET6_ADDRSTRLEN];
	const char *slash = memchr(in, '/', len);
	size_t alen = slash != NULL ? (size_t)(slash - in) : len;
	if (alen == 0)
		return set_err(err, errlen, "missing address", in, len);
	if (alen >= sizeof buf)
		return set_err(err, errlen, "not an IP address", in, len);

	int family = memchr(in, ':', alen) != NULL ? AF_INET6 : AF_INET;
	for (size_t i = 0; i < alen; i++) {
		unsigned char c = (unsigned char)in[i];
		int ok = (c >= '0' && c <= '9') || c == '.' ||
		         (family == AF_INET6 &&
		                 (c == ':' || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
		if (!ok) {
			if (c == '%')
				return set_err(
				        err, errlen, "IPv6 zone ids are not allowed", in, len);
			return set_err(err, errlen,
			        family == AF_INET ? "not a dotted-quad IPv4 address"
			                          : "not an IPv6 address",
			        in, len);
		}
	}
	memcpy(buf, in, alen);
	buf[alen] = '\0';

	struct allow_cidr c;
	memset(&c, 0, sizeof c);
	c.family = family;
	if (inet_pton(family, buf, c.addr) != 1)
		return set_err(err, errlen,
		        family == AF_INET ? "not a dotted-quad IPv4 address"
		                          : "not an IPv6 address",
		        in, len);

	unsigned maxlen = family == AF_INET ? 32 : 128;
	unsigned plen = maxlen;
	if (slash != NULL) {
		const char *p = slash + 1;
		size_t n = len - alen - 1;
		if (n == 0 || n > 3 || (n > 1 && p[0] == '0'))
			return set_err(err, errlen, "bad prefix length", in, len);
		plen = 0;
		for (size_t i = 0; i < n; i++) {
			if (p[i] < '0' || p[i] > '9')
				return set_err(err, errlen, "bad prefix length", in, len);
			plen = plen * 10 + (unsigned)(p[i] - '0');
		}
		if (plen > maxlen)
			return set_err(err, errlen, "prefix length too long", in, len);
	}
	for (unsigned i = plen; i < maxlen; i++)
		if (bit_at(c.addr, i))
			return set_err(err, errlen, "address has bits set beyond the prefix length",
			        in, len);
	c.prefix = (uint8_t)plen;
	*out = c;
	return 0;
}

int allow_cidr_contains(const struct allow_cidr *c, int family, const uint8_t *addr)
{
	if (c->family != family)
		return 0;
	unsigned full = c->prefix / 8, rest = c->prefix % 8;
	if (memcmp(c->addr, addr, full) != 0)
		return 0;
	if (rest == 0)
		return 1;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (c->addr[full] & mask) == (addr[full] & mask);
}

void allow_cidr_format(const struct allow_cidr *c, char *buf, size_t cap)
{
	char a[INET6_ADDRSTRLEN];
	if (cap == 0)
		return;
	if (inet_ntop(c->family, c->addr, a, sizeof a) == NULL) {
		buf[0] = '\0';
		return;
	}
	snprintf(buf, cap, "%s/%u", a, (unsigned)c->prefix);
}
