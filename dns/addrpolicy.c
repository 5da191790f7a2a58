/* The address policy: the always-denied ranges, IPv4 embedded in IPv6, and the configured
 * exceptions (dns.allowAddresses) and additions (dns.denyAddresses).
 *
 * An address is denied when denyAddresses contains it, or when the table below contains it and
 * allowAddresses does not.  An IPv6 address that embeds an IPv4 address is, in addition, judged
 * as that IPv4 address, because a NAT64 gateway, a 6to4 relay, a Teredo relay or the host's own
 * dual stack will deliver the packet there.  Only an allowAddresses entry naming the IPv6 address
 * itself skips that second judgement; denyAddresses is never skipped.  Besides the schemes
 * docs/design.md names, the SIIT form ::ffff:0:0:0/96 is decoded too: it reaches IPv4 the same way. */
#include "dns/addrpolicy.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

struct denied_range {
	int family;
	uint8_t addr[16];
	uint8_t prefix;
	const char *why; /* reason text: the range's name and the range */
};

/* More specific entries come before the ranges that contain them, so the reason names the
 * specific purpose (cloud metadata inside link-local, broadcast inside reserved). */
static const struct denied_range denied_v4[] = {
        {AF_INET, {169, 254, 169, 254}, 32, "cloud metadata 169.254.169.254"},
        {AF_INET, {100, 100, 100, 200}, 32, "cloud metadata 100.100.100.200"},
        {AF_INET, {255, 255, 255, 255}, 32, "broadcast 255.255.255.255"},
        {AF_INET, {0, 0, 0, 0}, 8, "this network 0.0.0.0/8"},
        {AF_INET, {10, 0, 0, 0}, 8, "private 10.0.0.0/8"},
        {AF_INET, {172, 16, 0, 0}, 12, "private 172.16.0.0/12"},
        {AF_INET, {192, 168, 0, 0}, 16, "private 192.168.0.0/16"},
        {AF_INET, {100, 64, 0, 0}, 10, "CGNAT 100.64.0.0/10"},
        {AF_INET, {127, 0, 0, 0}, 8, "loopback 127.0.0.0/8"},
        {AF_INET, {169, 254, 0, 0}, 16, "link-local 169.254.0.0/16"},
        {AF_INET, {192, 0, 0, 0}, 24, "IETF protocol assignments 192.0.0.0/24"},
        {AF_INET, {192, 0, 2, 0}, 24, "documentation 192.0.2.0/24"},
        {AF_INET, {198, 51, 100, 0}, 24, "documentation 198.51.100.0/24"},
        {AF_INET, {203, 0, 113, 0}, 24, "documentation 203.0.113.0/24"},
        {AF_INET, {198, 18, 0, 0}, 15, "benchmarking 198.18.0.0/15"},
        {AF_INET, {224, 0, 0, 0}, 4, "multicast 224.0.0.0/4"},
        {AF_INET, {240, 0, 0, 0}, 4, "reserved 240.0.0.0/4"},
};

static const struct denied_range denied_v6[] = {
        {AF_INET6, {0}, 128, "unspecified ::"},
        {AF_INET6, {[15] = 1}, 128, "loopback ::1"},
        {AF_INET6, {0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54}, 128,
                "cloud metadata fd00:ec2::254"},
        {AF_INET6, {0xfc}, 7, "unique local fc00::/7"},
        {AF_INET6, {0xfe, 0x80}, 10, "link-local fe80::/10"},
        {AF_INET6, {0xff}, 8, "multicast ff00::/8"},
        {AF_INET6, {0x20, 0x01, 0x0d, 0xb8}, 32, "documentation 2001:db8::/32"},
};

/* 1 when the first `prefix` bits of a and b agree. */
static int prefix_match(const uint8_t *a, const uint8_t *b, unsigned prefix)
{
	unsigned whole = prefix / 8, rest = prefix % 8;
	if (memcmp(a, b, whole) != 0)
		return 0;
	if (rest == 0)
		return 1;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (a[whole] & mask) == (b[whole] & mask);
}

static const char *table_match(int family, const uint8_t *addr)
{
	const struct denied_range *t = family == AF_INET ? denied_v4 : denied_v6;
	size_t n = family == AF_INET ? sizeof denied_v4 / sizeof denied_v4[0]
	                             : sizeof denied_v6 / sizeof denied_v6[0];
	for (size_t i = 0; i < n; i++)
		if (prefix_match(addr, t[i].addr, t[i].prefix))
			return t[i].why;
	return NULL;
}

static const struct allow_cidr *list_match(
        const struct allow_cidr *list, size_t n, int family, const uint8_t *addr)
{
	if (list == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (allow_cidr_contains(&list[i], family, addr))
			return &list[i];
	return NULL;
}

static const uint8_t teredo_prefix[4] = {0x20, 0x01, 0x00, 0x00};

const char *dns_addr_embedded_v4(const uint8_t v6[16], uint8_t v4[4])
{
	static const uint8_t zero[12];
	static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
	static const uint8_t translated[12] = {[8] = 0xff, [9] = 0xff};
	static const uint8_t nat64[12] = {0x00, 0x64, 0xff, 0x9b};
	static const uint8_t nat64_local[6] = {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01};

	if (memcmp(v6, mapped, 12) == 0) {
		memcpy(v4, v6 + 12, 4);
		return "IPv4-mapped";
	}
	if (memcmp(v6, translated, 12) == 0) {
		/* SIIT (RFC 2765): a stateless translator delivers it to the IPv4 address. */
		memcpy(v4, v6 + 12, 4);
		return "IPv4-translated";
	}
	if (memcmp(v6, zero, 12) == 0) {
		/* :: and ::1 are the IPv6 unspecified and loopback addresses, not 0.0.0.0/0.0.0.1.
		 */
		if (v6[12] == 0 && v6[13] == 0 && v6[14] == 0 && v6[15] <= 1)
			return NULL;
		memcpy(v4, v6 + 12, 4);
		return "IPv4-compatible";
	}
	if (memcmp(v6, nat64, 12) == 0 || memcmp(v6, nat64_local, 6) == 0) {
		/* RFC 8215 local-use prefixes are at most /48 and embed the IPv4 address in the
		 * last 32 bits as the well-known /96 does. */
		memcpy(v4, v6 + 12, 4);
		return "NAT64";
	}
	if (v6[0] == 0x20 && v6[1] == 0x02) {
		memcpy(v4, v6 + 2, 4);
		return "6to4";
	}
	if (memcmp(v6, teredo_prefix, 4) == 0) {
		for (int i = 0; i < 4; i++)
			v4[i] = (uint8_t)(v6[12 + i] ^ 0xff);
		return "Teredo";
	}
	return NULL;
}

static const char *scheme_range(const char *scheme)
{
	if (strcmp(scheme, "IPv4-mapped") == 0)
		return "::ffff:0:0/96";
	if (strcmp(scheme, "IPv4-compatible") == 0)
		return "::/96";
	if (strcmp(scheme, "IPv4-translated") == 0)
		return "::ffff:0:0:0/96";
	if (strcmp(scheme, "6to4") == 0)
		return "2002::/16";
	if (strcmp(scheme, "Teredo") == 0)
		return "2001::/32";
	return NULL;
}

static void put_why(
        char *why, size_t whylen, const char *what, const struct allow_cidr *c, const char *suffix)
{
	if (why == NULL || whylen == 0)
		return;
	char range[64] = "";
	if (c != NULL)
		allow_cidr_format(c, range, sizeof range);
	snprintf(why, whylen, "%s%s%s%s", what, c != NULL ? " " : "", range, suffix);
}

/* Judges a bare address against denyAddresses, then against the table with allowAddresses as
 * exceptions.  suffix is appended to the reason (it says where an embedded address came from). */
static int judge_plain(const struct dns_addr_policy *p, int family, const uint8_t *addr,
        const char *suffix, char *why, size_t whylen)
{
	const struct allow_cidr *c = list_match(p->deny, p->ndeny, family, addr);
	if (c != NULL) {
		put_why(why, whylen, "denyAddresses", c, suffix);
		return -1;
	}
	const char *t = table_match(family, addr);
	if (t != NULL && list_match(p->allow, p->nallow, family, addr) == NULL) {
		put_why(why, whylen, t, NULL, suffix);
		return -1;
	}
	return 0;
}

/* The embedded IPv4 addresses of v6 with a reason suffix for each; at most two (Teredo's client
 * and server).  Returns how many. */
static size_t embedded_all(const uint8_t v6[16], uint8_t v4[2][4], char suffix[2][64])
{
	const char *scheme = dns_addr_embedded_v4(v6, v4[0]);
	if (scheme == NULL)
		return 0;
	const char *range = scheme_range(scheme);
	if (range == NULL) {
		/* NAT64: name the prefix actually used; the well-known one has bits 32-95 zero. */
		static const uint8_t zero8[8];
		range = memcmp(v6 + 4, zero8, 8) == 0 ? "64:ff9b::/96" : "64:ff9b:1::/48";
	}
	snprintf(suffix[0], 64, " (embedded in %s %s)", scheme, range);
	if (strcmp(scheme, "Teredo") != 0)
		return 1;
	/* A Teredo packet travels through the server named in bits 32-63. */
	memcpy(v4[1], v6 + 4, 4);
	snprintf(suffix[1], 64, " (Teredo server in 2001::/32)");
	return 2;
}

int dns_addr_judge(
        const struct dns_addr_policy *p, int family, const uint8_t *addr, char *why, size_t whylen)
{
	static const struct dns_addr_policy none;
	if (p == NULL)
		p = &none;
	if (why != NULL && whylen > 0)
		why[0] = '\0';
	if (addr == NULL || (family != AF_INET && family != AF_INET6)) {
		put_why(why, whylen, "unknown address family", NULL, "");
		return -1;
	}
	if (family == AF_INET)
		return judge_plain(p, family, addr, "", why, whylen);

	uint8_t v4[2][4];
	char suffix[2][64];
	size_t n = embedded_all(addr, v4, suffix);

	/* denyAddresses holds whichever way the address is written. */
	const struct allow_cidr *c = list_match(p->deny, p->ndeny, AF_INET6, addr);
	if (c != NULL) {
		put_why(why, whylen, "denyAddresses", c, "");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		c = list_match(p->deny, p->ndeny, AF_INET, v4[i]);
		if (c != NULL) {
			put_why(why, whylen, "denyAddresses", c, suffix[i]);
			return -1;
		}
	}
	if (list_match(p->allow, p->nallow, AF_INET6, addr) != NULL)
		return 0;
	const char *t = table_match(AF_INET6, addr);
	if (t != NULL) {
		put_why(why, whylen, t, NULL, "");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (judge_plain(p, AF_INET, v4[i], suffix[i], why, whylen) == -1)
			return -1;
	return 0;
}
