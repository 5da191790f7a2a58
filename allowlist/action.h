/* The network action of what a connection carries (docs/design.md 4.5): a plain HTTP request by
 * its method and exact git smart-HTTP path, and a tunnel by its kind.  Pure functions. */
#ifndef EGRESSD_ALLOWLIST_ACTION_H
#define EGRESSD_ALLOWLIST_ACTION_H

#include <stddef.h>

#include "allowlist/bound.h"
#include "allowlist/host.h"
#include "allowlist/policy.h"

/* The leaf tags of one plain HTTP request: method is the request method ("GET"), target its
 * origin-form path and query (target[0..len), "/a/b?c"), has_body whether the head announces a
 * body.  git smart HTTP is matched exactly after percent-decoding: GET .../info/refs with the
 * query service=git-upload-pack and POST .../git-upload-pack are git:fetch alone, the same with
 * receive-pack git:push alone.  Anything else is http:read (GET, HEAD, OPTIONS without a body)
 * or http:write, and also git:fetch or git:push when "git-upload-pack" or "git-receive-pack"
 * appears anywhere in it (decoded, any case): a request that may be a push is never less than a
 * push. */
unsigned allow_http_action(const char *method, const char *target, size_t len, int has_body);

/* What a tunnel turned out to carry, from its first bytes (docs/design.md 3). */
enum allow_tunnel_kind {
	ALLOW_TUNNEL_UNKNOWN = 0, /* no byte yet: the CONNECT or SOCKS request itself */
	ALLOW_TUNNEL_TLS,         /* a TLS ClientHello: opaque HTTPS */
	ALLOW_TUNNEL_HTTP,        /* plain HTTP: each request is decided on its own */
	ALLOW_TUNNEL_SSH,         /* the server spoke first with an SSH banner: opaque SSH */
	ALLOW_TUNNEL_OTHER,       /* any other bytes: opaque */
};

/* The leaf tags a tunnel of that kind may carry: every leaf for OTHER (and UNKNOWN). */
unsigned allow_tunnel_carries(enum allow_tunnel_kind k);

/* 1 when d is in the bound's inspect list (docs/design.md 11). */
int allow_inspected(const struct allow_bound *b, const struct allow_dest *d);

/* Whether a tunnel of kind k to d (a host allow_decide already allowed with action 0) may carry
 * bytes under b.  out->reason is ALLOW_OK, ALLOW_ACTION_DENIED (the bound denies everything the
 * tunnel carries), or ALLOW_INSPECTION_REQUIRED (it denies only part of it, and egressd cannot
 * tell the parts apart in this tunnel); rule and hint say which actions and what would allow
 * it.  *inspect is set to 1 when a TLS tunnel to an inspected host is to be terminated and
 * decided request by request (then out is ALLOW_OK unless the bound denies every action it
 * carries), else 0.  HTTP is denied only when every request would be; UNKNOWN only when every
 * kind would be denied (the answer to a CONNECT before its first byte); the caller decides a
 * CONNECT to port 443 as TLS. */
void allow_tunnel_decide(const struct allow_bound *b, const struct allow_dest *d,
        enum allow_tunnel_kind k, int *inspect, struct allow_decision *out);

/* "tls", "http", "ssh", "other" or "unknown". */
const char *allow_tunnel_kind_name(enum allow_tunnel_kind k);

#endif
