/* Canonical destinations: the one place where client-supplied host text becomes something a
 * decision may look at.  See docs/policy.md for the rules and why each one exists. */
#include "allowlist/host.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

static int is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static int is_hex(unsigned char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int is_alpha(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static unsigned hex_value(unsigned char c)
{
	if (is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return c - 'A' + 10;
}

const char *allow_canon_strerror(enum allow_canon_err err)
{
	switch (err) {
	case ALLOW_CANON_OK:
		return "ok";
	case ALLOW_CANON_EMPTY:
		return "empty host";
	case ALLOW_CANON_BAD_CHAR:
		return "character not allowed in a host name";
	case ALLOW_CANON_NON_ASCII:
		return "non-ASCII byte in host (IDNA names must be sent as xn--)";
	case ALLOW_CANON_EMPTY_LABEL:
		return "empty label in host name";
	case ALLOW_CANON_LABEL_TOO_LONG:
		return "label over 63 bytes";
	case ALLOW_CANON_NAME_TOO_LONG:
		return "host name over 253 bytes";
	case ALLOW_CANON_BAD_LABEL:
		return "label starts or ends with '-'";
	case ALLOW_CANON_BAD_IPV4:
		return "numeric host that is not a valid IPv4 address";
	case ALLOW_CANON_BAD_IPV6:
		return "malformed or unbracketed IPv6 address";
	case ALLOW_CANON_ZONE_ID:
		return "IPv6 zone id not allowed";
	case ALLOW_CANON_BAD_PORT:
		return "port is not a number from 1 to 65535";
	case ALLOW_CANON_MISSING_PORT:
		return "port required";
	case ALLOW_CANON_USERINFO:
		return "user information (user@host) not allowed";
	}
	return "unknown error";
}

int allow_port_parse(const char *in, size_t len, uint16_t *port)
{
	if (len == 0 || len > 5)
		return -1;
	if (len > 1 && in[0] == '0')
		return -1;
	unsigned v = 0;
	for (size_t i = 0; i < len; i++) {
		if (!is_digit((unsigned char)in[i]))
			return -1;
		v = v * 10 + (unsigned)(in[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

/* The inet_aton test of WHATWG's "ends in a number": a last label of digits only, or 0x/0X and
 * hex digits (possibly none).  Such a host is an IPv4 address or nothing. */
static int label_is_numeric(const char *s, size_t n)
{
	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		for (size_t i = 2; i < n; i++)
			if (!is_hex((unsigned char)s[i]))
				return 0;
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		if (!is_digit((unsigned char)s[i]))
			return 0;
	return n > 0;
}

/* One inet_aton part: 0x-hex (empty digits = 0, as glibc and WHATWG read it), 0-octal, or
 * decimal.  Values are capped at 2^32-1 while reading so nothing overflows. */
static int ipv4_part(const char *s, size_t n, uint32_t *out)
{
	unsigned base = 10;
	size_t i = 0;
	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	} else if (n >= 2 && s[0] == '0') {
		base = 8;
		i = 1;
	}
	if (n == 0)
		return -1;
	uint64_t v = 0;
	for (; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		unsigned d;
		if (base == 16) {
			if (!is_hex(c))
				return -1;
			d = hex_value(c);
		} else {
			if (!is_digit(c))
				return -1;
			d = (unsigned)(c - '0');
			if (d >= base)
				return -1;
		}
		v = v * base + d;
		if (v > UINT32_MAX)
			return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

/* Parses s (labels already checked non-empty) as an inet_aton address with the usual widths:
 * a (32 bits), a.b (8.24), a.b.c (8.8.16), a.b.c.d (8.8.8.8). */
static int ipv4_parse(const char *s, size_t n, uint8_t addr[4])
{
	uint32_t parts[4];
	size_t np = 0, start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '.')
			continue;
		if (np == 4)
			return -1;
		if (ipv4_part(s + start, i - start, &parts[np]) == -1)
			return -1;
		np++;
		start = i + 1;
	}
	for (size_t i = 0; i + 1 < np; i++)
		if (parts[i] > 255)
			return -1;
	uint32_t last_max = np == 1 ? UINT32_MAX : (UINT32_MAX >> (8 * (np - 1)));
	if (parts[np - 1] > last_max)
		return -1;
	uint32_t v = parts[np - 1];
	for (size_t i = 0; i + 1 < np; i++)
		v |= parts[i] << (24 - 8 * i);
	addr[0] = (uint8_t)(v >> 24);
	addr[1] = (uint8_t)(v >> 16);
	addr[2] = (uint8_t)(v >> 8);
	addr[3] = (uint8_t)v;
	return 0;
}

/* An IPv6 literal without brackets.  inet_pton gets a NUL-terminated copy, and only after the
 * bytes were checked, so an embedded NUL cannot cut the text short. */
static enum allow_canon_err canon_ipv6(const char *in, size_t len, struct allow_dest *out)
{
	char buf[INET6_ADDRSTRLEN];
	if (memchr(in, '%', len) != NULL)
		return ALLOW_CANON_ZONE_ID;
	if (len == 0 || len >= sizeof buf)
		return ALLOW_CANON_BAD_IPV6;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		if (!is_hex(c) && c != ':' && c != '.')
			return ALLOW_CANON_BAD_IPV6;
	}
	memcpy(buf, in, len);
	buf[len] = '\0';
	struct in6_addr a;
	if (inet_pton(AF_INET6, buf, &a) != 1)
		return ALLOW_CANON_BAD_IPV6;
	if (inet_ntop(AF_INET6, &a, out->host, sizeof out->host) == NULL)
		return ALLOW_CANON_BAD_IPV6;
	out->kind = ALLOW_HOST_IPV6;
	memcpy(out->addr, &a, 16);
	return ALLOW_CANON_OK;
}

/* A name or an inet_aton IPv4 spelling (no brackets, no colon). */
static enum allow_canon_err canon_name(const char *in, size_t len, struct allow_dest *out)
{
	if (len == 0)
		return ALLOW_CANON_EMPTY;
	/* The most telling error first: non-ASCII (an IDNA name sent raw), then userinfo. */
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)in[i] >= 0x80)
			return ALLOW_CANON_NON_ASCII;
	if (memchr(in, '@', len) != NULL)
		return ALLOW_CANON_USERINFO;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		if (!is_alpha(c) && !is_digit(c) && c != '-' && c != '.')
			return ALLOW_CANON_BAD_CHAR;
	}
	if (in[len - 1] == '.')
		len--;
	if (len == 0 || in[len - 1] == '.')
		return ALLOW_CANON_EMPTY_LABEL;

	size_t start = 0, last_start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && in[i] != '.')
			continue;
		if (i == start)
			return ALLOW_CANON_EMPTY_LABEL;
		if (i - start > ALLOW_LABEL_MAX)
			return ALLOW_CANON_LABEL_TOO_LONG;
		last_start = start;
		start = i + 1;
	}
	if (label_is_numeric(in + last_start, len - last_start)) {
		if (ipv4_parse(in, len, out->addr) == -1)
			return ALLOW_CANON_BAD_IPV4;
		out->kind = ALLOW_HOST_IPV4;
		snprintf(out->host, sizeof out->host, "%u.%u.%u.%u", out->addr[0], out->addr[1],
		        out->addr[2], out->addr[3]);
		return ALLOW_CANON_OK;
	}
	if (len > ALLOW_NAME_MAX)
		return ALLOW_CANON_NAME_TOO_LONG;
	for (size_t i = 0; i < len; i++) {
		if (in[i] != '-')
			continue;
		if (i == 0 || in[i - 1] == '.' || i + 1 == len || in[i + 1] == '.')
			return ALLOW_CANON_BAD_LABEL;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		out->host[i] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
	}
	out->host[len] = '\0';
	out->kind = ALLOW_HOST_NAME;
	return ALLOW_CANON_OK;
}

/* Leaves *out empty on failure so that no caller can use half a result. */
static enum allow_canon_err finish(enum allow_canon_err e, struct allow_dest *out)
{
	if (e != ALLOW_CANON_OK)
		memset(out, 0, sizeof *out);
	return e;
}

enum allow_canon_err allow_canon_host(const char *in, size_t len, struct allow_dest *out)
{
	memset(out, 0, sizeof *out);
	if (len == 0)
		return ALLOW_CANON_EMPTY;
	if (in[0] == '[') {
		if (len < 2 || in[len - 1] != ']')
			return finish(ALLOW_CANON_BAD_IPV6, out);
		return finish(canon_ipv6(in + 1, len - 2, out), out);
	}
	if (memchr(in, ':', len) != NULL && memchr(in, '@', len) == NULL)
		return finish(canon_ipv6(in, len, out), out);
	return finish(canon_name(in, len, out), out);
}

enum allow_canon_err allow_canon_authority(
        const char *in, size_t len, uint16_t default_port, struct allow_dest *out)
{
	memset(out, 0, sizeof *out);
	if (len == 0)
		return ALLOW_CANON_EMPTY;
	if (memchr(in, '@', len) != NULL)
		return ALLOW_CANON_USERINFO;

	const char *host = in, *port = NULL;
	size_t hostlen = len, portlen = 0;
	enum allow_canon_err e;
	if (in[0] == '[') {
		const char *rb = memchr(in, ']', len);
		if (rb == NULL)
			return ALLOW_CANON_BAD_IPV6;
		size_t rest = len - (size_t)(rb + 1 - in);
		if (rest > 0) {
			if (rb[1] != ':')
				return ALLOW_CANON_BAD_IPV6;
			port = rb + 2;
			portlen = rest - 1;
		}
		e = canon_ipv6(in + 1, (size_t)(rb - in - 1), out);
	} else {
		const char *colon = memchr(in, ':', len);
		if (colon != NULL) {
			/* A second colon can only be an IPv6 address that lacks its brackets. */
			if (memchr(colon + 1, ':', len - (size_t)(colon + 1 - in)) != NULL)
				return ALLOW_CANON_BAD_IPV6;
			hostlen = (size_t)(colon - in);
			port = colon + 1;
			portlen = len - hostlen - 1;
		}
		e = canon_name(host, hostlen, out);
	}
	if (e != ALLOW_CANON_OK)
		return finish(e, out);
	if (port != NULL) {
		if (allow_port_parse(port, portlen, &out->port) == -1)
			return finish(ALLOW_CANON_BAD_PORT, out);
	} else if (default_port == 0) {
		return finish(ALLOW_CANON_MISSING_PORT, out);
	} else {
		out->port = default_port;
	}
	return ALLOW_CANON_OK;
}
