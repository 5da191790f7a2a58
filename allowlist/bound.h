/* Bounds, session limits and their merge (docs/design.md 4.1, 4.3, 4.4). */
#ifndef EGRESSD_ALLOWLIST_BOUND_H
#define EGRESSD_ALLOWLIST_BOUND_H

#include <stdint.h>

#include "allowlist/pattern.h"

enum allow_enforce {
	ALLOW_ENFORCE_UNSET = 0, /* not given */
	ALLOW_ENFORCE_GUARD,     /* advisory: checked by callers that ask */
	ALLOW_ENFORCE_SANDBOX,   /* enforced by egressd */
};

struct allow_bound {
	struct allow_set *allow;   /* allowDomains; NULL when absent (no restriction), empty = nothing */
	struct allow_set *deny;    /* domains; never NULL once built */
	struct allow_set *inspect; /* inspect: hosts whose HTTPS is terminated and decided request
	                              by request (docs/design.md 11); NULL when none */
	unsigned deny_actions;     /* leaf tags denied (parents expanded) */
	enum allow_enforce enforce;
};

#define ALLOW_UNLIMITED UINT64_MAX

struct allow_limits {
	uint64_t max_connections;          /* concurrent connections */
	uint64_t max_connections_total;    /* connections over the session's life */
	uint64_t max_bytes_out;            /* client to upstream */
	uint64_t max_bytes_in;             /* upstream to client */
	uint64_t max_new_hosts_per_minute; /* distinct new hosts per minute */
	uint64_t expires_in_ms;            /* session lifetime */
};

/* An empty bound (deny set allocated, allow NULL).  Returns 0 or -1 on allocation failure. */
int allow_bound_init(struct allow_bound *b);
void allow_bound_free(struct allow_bound *b);

/* Merges src into dst (4.3): deny, inspect and actions are unions; allowDomains is the
 * intersection of identical entries where an absent list has no effect; sandbox wins over
 * guard.  0 or -1. */
int allow_bound_merge(struct allow_bound *dst, const struct allow_bound *src);

/* Every field ALLOW_UNLIMITED. */
void allow_limits_init(struct allow_limits *l);
/* For each field, the smaller value wins. */
void allow_limits_merge(struct allow_limits *dst, const struct allow_limits *src);

#endif
