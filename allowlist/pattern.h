/* Host patterns and sets of them (docs/design.md 4.2).
 *
 * A set is built once at config load and then only read, so it may be shared by every connection.
 * Matching is exact on canonical names: a hash of exact names and a hash of wildcard suffixes
 * (one probe per label of the destination), plus a hash per prefix length for CIDRs, so its cost
 * does not grow with the number of patterns. */
#ifndef EGRESSD_ALLOWLIST_PATTERN_H
#define EGRESSD_ALLOWLIST_PATTERN_H

#include <stddef.h>

#include "allowlist/host.h"

enum allow_set_kind {
	ALLOW_SET_ALLOW, /* allowDomains: "a.b" apex only, "*.a.b" subdomains only, "**.a.b" both */
	ALLOW_SET_DENY,  /* domains: "a.b" and "*.a.b" both mean apex and subdomains; no port = any port */
};

#define ALLOW_PORT_DEFAULT 0 /* a pattern without a port: 80 and 443 (allow), every port (deny) */
#define ALLOW_PORT_ANY (-1)  /* ":*" */

enum allow_match {
	ALLOW_MATCH_NONE = 0, /* no pattern names this host */
	ALLOW_MATCH_PORT,     /* a pattern names the host, but none admits this port */
	ALLOW_MATCH_YES,      /* a pattern names host and port */
};

struct allow_set;

struct allow_set *allow_set_new(enum allow_set_kind kind);
void allow_set_free(struct allow_set *set);

/* The kind the set was created with. */
enum allow_set_kind allow_set_get_kind(const struct allow_set *set);

/* Adds one pattern as written in the config.  Returns 0; or -1 with a reason in err ("a
 * wildcard must be a whole leading label", "'*.com' is a public suffix alone", ...), the set
 * unchanged.  Adding a pattern equal to one already there is not an error. */
int allow_set_add(struct allow_set *set, const char *pattern, char *err, size_t errlen);

/* Matches a canonical destination.  On ALLOW_MATCH_YES or ALLOW_MATCH_PORT, *rule (if not NULL)
 * points at the canonical text of the pattern that matched, owned by the set. */
enum allow_match allow_set_match(const struct allow_set *set, const struct allow_dest *d,
	const char **rule);

/* The port of every pattern in set that names d's host, whatever d->port is: each one
 * ALLOW_PORT_DEFAULT, ALLOW_PORT_ANY or 1-65535, the first cap of them in ports.  Returns how
 * many there are (more than cap when ports was too short). */
size_t allow_set_host_ports(const struct allow_set *set, const struct allow_dest *d, int *ports,
	size_t cap);

/* Number of patterns, and the canonical text of the i-th in the order they were added. */
size_t allow_set_count(const struct allow_set *set);
const char *allow_set_pattern(const struct allow_set *set, size_t i);

/* 1 when set holds a pattern whose canonical text is `pattern`. */
int allow_set_has(const struct allow_set *set, const char *pattern);

#endif
