/* Scalar value syntax shared by the config loader, `egressd check` and the control API: whole
 * numbers, sizes, durations and listening/server addresses.  Everything here is strict on
 * purpose: a config value that could be read two ways is an error, never a guess. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "allowlist/config.h"

#define U64_DIGITS_MAX 20 /* digits of UINT64_MAX */

/* Parses the leading decimal digits of in[0..len).  Returns the number of digits consumed (0
 * when in does not start with a digit), or -1 when the value does not fit in 64 bits. */
static int digits_parse(const char *in, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;
	while (i < len && in[i] >= '0' && in[i] <= '9') {
		uint64_t d = (uint64_t)(in[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
		i++;
		if (i > U64_DIGITS_MAX + 8)
			return -1;
	}
	*out = v;
	return (int)i;
}

int allow_number_parse(const char *in, size_t len, uint64_t *out)
{
	uint64_t v;
	int n = digits_parse(in, len, &v);
	if (n <= 0 || (size_t)n != len)
		return -1;
	*out = v;
	return 0;
}

struct unit {
	const char *name;
	uint64_t mult;
};

/* Longest names first where one is a prefix of another would not matter: suffixes are compared
 * whole, so the order only decides how allow_*_format picks the largest exact unit. */
static const struct unit size_units[] = {
        {"GiB", 1024ull * 1024 * 1024},
        {"MiB", 1024ull * 1024},
        {"KiB", 1024},
        {"B", 1},
};

static const struct unit duration_units[] = {
        {"h", 3600ull * 1000},
        {"m", 60ull * 1000},
        {"s", 1000},
        {"ms", 1},
};

/* NUMBER followed by exactly one unit of the table (or none when bare_ok). */
static int unit_parse(const char *in, size_t len, const struct unit *units, size_t nunits,
        int bare_ok, uint64_t *out)
{
	uint64_t v;
	int n = digits_parse(in, len, &v);
	if (n == 0)
		return -1;
	if (n == -1)
		return -2;
	const char *suf = in + n;
	size_t suflen = len - (size_t)n;
	if (suflen == 0) {
		if (!bare_ok && v != 0)
			return -1;
		*out = v;
		return 0;
	}
	for (size_t i = 0; i < nunits; i++) {
		if (strlen(units[i].name) != suflen || memcmp(units[i].name, suf, suflen) != 0)
			continue;
		if (v > UINT64_MAX / units[i].mult)
			return -2;
		*out = v * units[i].mult;
		return 0;
	}
	return -1;
}

int allow_size_parse(const char *in, size_t len, uint64_t *out)
{
	return unit_parse(in, len, size_units, sizeof size_units / sizeof size_units[0], 1, out);
}

int allow_duration_parse(const char *in, size_t len, uint64_t *out_ms)
{
	/* A bare number is refused (is "30" seconds or milliseconds?) except 0, which reads the
	 * same in every unit. */
	return unit_parse(in, len, duration_units, sizeof duration_units / sizeof duration_units[0],
	        0, out_ms);
}

static void unit_format(uint64_t v, const struct unit *units, size_t nunits, char *buf, size_t cap)
{
	if (cap == 0)
		return;
	if (v == 0) {
		snprintf(buf, cap, "0");
		return;
	}
	for (size_t i = 0; i < nunits; i++) {
		if (v % units[i].mult == 0) {
			snprintf(buf, cap, "%llu%s", (unsigned long long)(v / units[i].mult),
			        units[i].name);
			return;
		}
	}
	snprintf(buf, cap, "%llu", (unsigned long long)v);
}

void allow_size_format(uint64_t bytes, char *buf, size_t cap)
{
	unit_format(bytes, size_units, sizeof size_units / sizeof size_units[0], buf, cap);
}

void allow_duration_format(uint64_t ms, char *buf, size_t cap)
{
	unit_format(ms, duration_units, sizeof duration_units / sizeof duration_units[0], buf, cap);
}

static int port_parse(const char *in, size_t len, uint16_t *port)
{
	uint64_t v;
	/* Leading zeros are refused so that a port has one spelling. */
	if (len == 0 || len > 5 || in[0] == '0' || allow_number_parse(in, len, &v) == -1 ||
	        v == 0 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

/* listener: whether ":0" (an ephemeral port) is acceptable. */
static int addr_parse(const char *in, uint16_t default_port, int listener,
        struct sockaddr_storage *out, socklen_t *outlen, char *err, size_t errlen)
{
	char host[INET6_ADDRSTRLEN + 1];
	size_t len = strlen(in);
	const char *port = NULL;
	size_t hostlen;
	int bracketed = 0;

	if (len > 0 && in[0] == '[') {
		const char *close = memchr(in, ']', len);
		if (close == NULL) {
			snprintf(err, errlen, "a '[' without its ']'");
			return -1;
		}
		bracketed = 1;
		hostlen = (size_t)(close - in - 1);
		if (close[1] == ':')
			port = close + 2;
		else if (close[1] != '\0') {
			snprintf(err, errlen, "unexpected text after ']'");
			return -1;
		}
		in++;
	} else {
		const char *colon = strchr(in, ':');
		if (colon != NULL && strchr(colon + 1, ':') != NULL) {
			/* Bare IPv6: a port cannot be told apart from the last group. */
			hostlen = len;
		} else if (colon != NULL) {
			hostlen = (size_t)(colon - in);
			port = colon + 1;
		} else {
			hostlen = len;
		}
	}
	if (hostlen == 0 || hostlen >= sizeof host) {
		snprintf(err, errlen, "expected an IP address");
		return -1;
	}
	memcpy(host, in, hostlen);
	host[hostlen] = '\0';

	uint16_t p = default_port;
	/* Port 0 asks the kernel for an ephemeral port (listeners; egressd prints the one it got).
	 */
	int ephemeral = listener && port != NULL && strcmp(port, "0") == 0;
	if (port != NULL && !ephemeral && port_parse(port, strlen(port), &p) == -1) {
		snprintf(err, errlen,
		        listener ? "the port must be 1-65535 (or 0 for an ephemeral port)"
		                 : "the port must be 1-65535");
		return -1;
	}
	if (ephemeral)
		p = 0;
	else if (p == 0) {
		snprintf(err, errlen, "a port is required (HOST:PORT, IPv6 as [::1]:PORT)");
		return -1;
	}

	memset(out, 0, sizeof *out);
	struct sockaddr_in *sin = (struct sockaddr_in *)out;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)out;
	if (!bracketed && inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(p);
		*outlen = sizeof *sin;
		return 0;
	}
	if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(p);
		*outlen = sizeof *sin6;
		return 0;
	}
	snprintf(err, errlen, "expected an IP address (names are not accepted here)");
	return -1;
}

int allow_config_addr_parse(const char *in, uint16_t default_port, struct sockaddr_storage *out,
        socklen_t *outlen, char *err, size_t errlen)
{
	return addr_parse(in, default_port, 1, out, outlen, err, errlen);
}

int allow_config_server_parse(const char *in, uint16_t default_port, struct sockaddr_storage *out,
        socklen_t *outlen, char *err, size_t errlen)
{
	return addr_parse(in, default_port, 0, out, outlen, err, errlen);
}
