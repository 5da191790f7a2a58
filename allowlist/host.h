/* Canonical destinations (docs/design.md 3, step 3).
 *
 * Every name or address a client sends (request-URI authority, Host, CONNECT target, SNI, a
 * classifier's URL) goes through these functions once; every decision uses only their result.
 * The functions are pure: no allocation, no global state, no DNS. */
#ifndef EGRESSD_ALLOWLIST_HOST_H
#define EGRESSD_ALLOWLIST_HOST_H

#include <stddef.h>
#include <stdint.h>

#define ALLOW_NAME_MAX 253   /* longest canonical host name, without the trailing dot */
#define ALLOW_LABEL_MAX 63   /* longest label */
#define ALLOW_HOST_BUF 256   /* room for any canonical host text and its NUL */

enum allow_host_kind {
	ALLOW_HOST_NAME, /* a DNS name: lower case, no trailing dot, LDH labels (xn-- allowed) */
	ALLOW_HOST_IPV4, /* an IPv4 address, whatever inet_aton spelling it came in */
	ALLOW_HOST_IPV6, /* an IPv6 address (it was bracketed in an authority) */
};

struct allow_dest {
	enum allow_host_kind kind; /* what host holds */
	char host[ALLOW_HOST_BUF];  /* canonical text: name, dotted quad, or compressed IPv6 (no brackets) */
	uint8_t addr[16];           /* the address for IPV4 (first 4 bytes) and IPV6; zero for names */
	uint16_t port;              /* 1-65535, or 0 when the input had no port and no default applied */
};

enum allow_canon_err {
	ALLOW_CANON_OK = 0,         /* success */
	ALLOW_CANON_EMPTY,          /* empty host */
	ALLOW_CANON_BAD_CHAR,       /* a byte outside letters, digits, '-', '.' (incl. '_', space, controls) */
	ALLOW_CANON_NON_ASCII,      /* a raw non-ASCII byte (IDNA must arrive as xn--) */
	ALLOW_CANON_EMPTY_LABEL,    /* "a..b", ".a", or more than one trailing dot */
	ALLOW_CANON_LABEL_TOO_LONG, /* a label over 63 bytes */
	ALLOW_CANON_NAME_TOO_LONG,  /* a name over 253 bytes */
	ALLOW_CANON_BAD_LABEL,      /* a label that starts or ends with '-' */
	ALLOW_CANON_BAD_IPV4,       /* numeric last label that is not a valid inet_aton address */
	ALLOW_CANON_BAD_IPV6,       /* malformed bracketed literal, or IPv6 without brackets */
	ALLOW_CANON_ZONE_ID,        /* an IPv6 zone id ("%eth0") */
	ALLOW_CANON_BAD_PORT,       /* port not strictly 1-65535 in decimal digits */
	ALLOW_CANON_MISSING_PORT,   /* a port was required (CONNECT) and absent */
	ALLOW_CANON_USERINFO,       /* "user@host" */
};

/* A short English phrase for err, e.g. "label over 63 bytes". */
const char *allow_canon_strerror(enum allow_canon_err err);

/* Canonicalises a bare host (no port): a name, an inet_aton spelling of IPv4 ("127.1",
 * "0x7f.0.0.1", "017700000001", "2130706433"), or an IPv6 literal with or without brackets.
 * Upper case is folded and one trailing dot removed.  out->port is set to 0. */
enum allow_canon_err allow_canon_host(const char *in, size_t len, struct allow_dest *out);

/* Canonicalises an authority "host[:port]" as in a request URI, Host header or CONNECT target;
 * IPv6 only in brackets.  With no port, out->port = default_port, or ALLOW_CANON_MISSING_PORT when
 * default_port is 0. */
enum allow_canon_err allow_canon_authority(const char *in, size_t len, uint16_t default_port,
	struct allow_dest *out);

/* Parses a port as written after ':' in an authority or a pattern: 1 to 5 decimal digits, value
 * 1-65535, and no leading zero (so "0080" is refused: the canonical form of a port is unique).
 * Returns 0 with *port set, or -1 (*port untouched). */
int allow_port_parse(const char *in, size_t len, uint16_t *port);

#endif
