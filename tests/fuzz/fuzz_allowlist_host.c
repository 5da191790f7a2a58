/* Fuzzes the canonicaliser (and, on the same bytes, the pattern parser) and aborts when a
 * property a decision relies on breaks:
 *   - canonicalising a result again gives the identical result (one canonical form);
 *   - a refused input leaves no host text behind (it never yields a name);
 *   - a name holds only [a-z0-9.-], has no empty or '-'-edged label and fits 253 bytes;
 *   - an address's text and bytes agree;
 *   - an accepted pattern's canonical text is accepted again and reads back unchanged. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist/host.h"
#include "allowlist/pattern.h"

static void check_name(const char *h)
{
	size_t n = strlen(h);
	if (n == 0 || n > ALLOW_NAME_MAX || h[0] == '.' || h[n - 1] == '.')
		abort();
	for (size_t i = 0; i < n; i++) {
		char c = h[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
			abort();
		if (c == '.' && h[i + 1] == '.')
			abort();
		if (c == '-' && (i == 0 || h[i - 1] == '.' || h[i + 1] == '.' || h[i + 1] == '\0'))
			abort();
	}
}

static void check_result(enum allow_canon_err e, const struct allow_dest *d)
{
	if (e != ALLOW_CANON_OK) {
		if (d->host[0] != '\0' || d->port != 0)
			abort();
		return;
	}
	uint8_t a[16] = {0};
	switch (d->kind) {
	case ALLOW_HOST_NAME:
		check_name(d->host);
		break;
	case ALLOW_HOST_IPV4:
		if (inet_pton(AF_INET, d->host, a) != 1 || memcmp(a, d->addr, 4) != 0)
			abort();
		break;
	case ALLOW_HOST_IPV6:
		if (inet_pton(AF_INET6, d->host, a) != 1 || memcmp(a, d->addr, 16) != 0)
			abort();
		break;
	default:
		abort();
	}
	/* Idempotence: the canonical text is its own canonical form. */
	struct allow_dest again;
	if (allow_canon_host(d->host, strlen(d->host), &again) != ALLOW_CANON_OK)
		abort();
	if (again.kind != d->kind || strcmp(again.host, d->host) != 0 ||
	        memcmp(again.addr, d->addr, 16) != 0)
		abort();
}

static void check_authority(const uint8_t *data, size_t size)
{
	struct allow_dest d;
	enum allow_canon_err e = allow_canon_authority((const char *)data, size, 443, &d);
	check_result(e, &d);
	if (e != ALLOW_CANON_OK)
		return;
	if (d.port == 0)
		abort();
	/* The authority rebuilt from the result reads back as the same destination. */
	char buf[ALLOW_HOST_BUF + 16];
	int n = snprintf(buf, sizeof buf, d.kind == ALLOW_HOST_IPV6 ? "[%s]:%u" : "%s:%u", d.host,
	        (unsigned)d.port);
	struct allow_dest again;
	if (n < 0 || (size_t)n >= sizeof buf ||
	        allow_canon_authority(buf, (size_t)n, 0, &again) != ALLOW_CANON_OK)
		abort();
	if (again.kind != d.kind || strcmp(again.host, d.host) != 0 || again.port != d.port)
		abort();
}

static void check_pattern(const uint8_t *data, size_t size)
{
	char pat[512];
	if (size >= sizeof pat || memchr(data, '\0', size) != NULL)
		return;
	memcpy(pat, data, size);
	pat[size] = '\0';
	for (int kind = ALLOW_SET_ALLOW; kind <= ALLOW_SET_DENY; kind++) {
		struct allow_set *s = allow_set_new((enum allow_set_kind)kind);
		struct allow_set *t = allow_set_new((enum allow_set_kind)kind);
		if (s == NULL || t == NULL)
			abort();
		char err[256];
		if (allow_set_add(s, pat, err, sizeof err) == 0) {
			if (allow_set_count(s) != 1)
				abort();
			const char *text = allow_set_pattern(s, 0);
			if (allow_set_add(t, text, err, sizeof err) != 0 ||
			        strcmp(allow_set_pattern(t, 0), text) != 0 ||
			        !allow_set_has(s, text))
				abort();
		} else if (allow_set_count(s) != 0 || err[0] == '\0') {
			abort();
		}
		allow_set_free(s);
		allow_set_free(t);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct allow_dest d;
	check_result(allow_canon_host((const char *)data, size, &d), &d);
	check_authority(data, size);
	check_pattern(data, size);
	return 0;
}
