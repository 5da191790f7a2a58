/* Fuzzes the address policy.
 *
 * Input: one flag byte (bit 0: IPv6; bits 1-7: the reason buffer's size), the address (4 or 16
 * bytes), then up to 16 policy entries, each a header byte (bit 7: denyAddresses, else
 * allowAddresses; bit 6: IPv6), a prefix length byte, and 4 or 16 address bytes.
 *
 * Properties, beyond not crashing: the verdict is deterministic; a denial has a reason and an
 * allowed address none; the reason fits its buffer; whatever denyAddresses contains is denied;
 * an IPv6 address embedding an IPv4 address that is denied on its own is denied too, unless
 * allowAddresses names the IPv6 address itself; and where the policy names no IPv6 range,
 * ::ffff:X is judged exactly as X. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "allowlist/cidr.h"
#include "dns/addrpolicy.h"

#define MAX_ENTRIES 16

static void check(int cond)
{
	if (!cond)
		abort();
}

static int contains_any(const struct allow_cidr *list, size_t n, int family, const uint8_t *a)
{
	for (size_t i = 0; i < n; i++)
		if (allow_cidr_contains(&list[i], family, a))
			return 1;
	return 0;
}

/* Judges with a reason buffer of whylen bytes, checking the reason's invariants. */
static int judge(const struct dns_addr_policy *p, int family, const uint8_t *a, size_t whylen)
{
	char why[160];
	memset(why, 'x', sizeof why);
	int rc = dns_addr_judge(p, family, a, why, whylen);
	check(rc == 0 || rc == -1);
	if (whylen > 0) {
		check(memchr(why, '\0', whylen) != NULL);
		if (rc == 0)
			check(why[0] == '\0');
		else if (whylen > 1)
			check(why[0] != '\0');
	}
	for (size_t i = whylen; i < sizeof why; i++)
		check(why[i] == 'x');
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int v6 = data[0] & 1;
	size_t whylen = (size_t)(data[0] >> 1); /* 0..127, within judge()'s 160 */
	size_t alen = v6 ? 16 : 4;
	if (size < 1 + alen)
		return 0;
	uint8_t addr[16] = {0};
	memcpy(addr, data + 1, alen);
	size_t off = 1 + alen;

	struct allow_cidr allow[MAX_ENTRIES], deny[MAX_ENTRIES];
	size_t nallow = 0, ndeny = 0, nv6 = 0;
	while (off + 2 <= size && nallow + ndeny < MAX_ENTRIES) {
		uint8_t h = data[off];
		int e6 = (h >> 6) & 1;
		size_t elen = e6 ? 16 : 4;
		if (off + 2 + elen > size)
			break;
		struct allow_cidr c;
		memset(&c, 0, sizeof c);
		c.family = e6 ? AF_INET6 : AF_INET;
		c.prefix = (uint8_t)(data[off + 1] % (elen * 8 + 1));
		memcpy(c.addr, data + off + 2, elen);
		/* host bits cleared, as allow_cidr_parse guarantees */
		for (size_t bit = c.prefix; bit < elen * 8; bit++)
			c.addr[bit / 8] &= (uint8_t) ~(0x80u >> (bit % 8));
		nv6 += (size_t)e6;
		if (h & 0x80)
			deny[ndeny++] = c;
		else
			allow[nallow++] = c;
		off += 2 + elen;
	}
	struct dns_addr_policy p = {.allow = allow, .nallow = nallow, .deny = deny, .ndeny = ndeny};
	int family = v6 ? AF_INET6 : AF_INET;

	int rc = judge(&p, family, addr, whylen);
	check(judge(&p, family, addr, 159) == rc);
	if (contains_any(deny, ndeny, family, addr))
		check(rc == -1);

	if (!v6) {
		if (nv6 == 0) {
			uint8_t mapped[16] = {[10] = 0xff, [11] = 0xff};
			memcpy(mapped + 12, addr, 4);
			check(judge(&p, AF_INET6, mapped, whylen) == rc);
		}
		return 0;
	}

	uint8_t v4[4];
	const char *scheme = dns_addr_embedded_v4(addr, v4);
	if (scheme == NULL)
		return 0;
	check(scheme[0] != '\0');
	int named = contains_any(allow, nallow, AF_INET6, addr);
	if (judge(&p, AF_INET, v4, whylen) == -1 && !named)
		check(rc == -1);
	if (contains_any(deny, ndeny, AF_INET, v4))
		check(rc == -1);
	if (strcmp(scheme, "Teredo") == 0 && !named && judge(&p, AF_INET, addr + 4, whylen) == -1)
		check(rc == -1); /* the Teredo server */
	return 0;
}
