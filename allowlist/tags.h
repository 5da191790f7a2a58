/* Network-action tags (docs/design.md 4.5).
 *
 * Leaf tags are bits of an unsigned mask, in the alphabetical order of their names so that a
 * mask formats as a sorted list.  The parents `read`, `write` and `all` are not bits: they stand
 * for the masks of their children. */
#ifndef EGRESSD_ALLOWLIST_TAGS_H
#define EGRESSD_ALLOWLIST_TAGS_H

#include <stddef.h>

enum allow_tag {
	ALLOW_TAG_DNS = 1u << 0,        /* dns: a name lookup */
	ALLOW_TAG_GIT_FETCH = 1u << 1,  /* git:fetch: clone, fetch, pull, ls-remote */
	ALLOW_TAG_GIT_PUSH = 1u << 2,   /* git:push: push, send-pack */
	ALLOW_TAG_HTTP_READ = 1u << 3,  /* http:read: GET, HEAD, OPTIONS without a body */
	ALLOW_TAG_HTTP_WRITE = 1u << 4, /* http:write: any request that sends a body or changes state */
	ALLOW_TAG_NET_RAW = 1u << 5,    /* net:raw: a connection whose action nothing can tell (nc,
	                                   socat, /dev/tcp, an interpreter one-liner's socket) */
	ALLOW_TAG_SSH_READ = 1u << 6,   /* ssh:read: an ssh session */
	ALLOW_TAG_SSH_WRITE = 1u << 7,  /* ssh:write: scp, sftp, rsync to a remote */
};

/* net:raw is a child of both `read` and `write`: denying either parent denies it. */
#define ALLOW_TAGS_READ                                                                            \
	(ALLOW_TAG_DNS | ALLOW_TAG_GIT_FETCH | ALLOW_TAG_HTTP_READ | ALLOW_TAG_NET_RAW |           \
	        ALLOW_TAG_SSH_READ)
#define ALLOW_TAGS_WRITE                                                                           \
	(ALLOW_TAG_GIT_PUSH | ALLOW_TAG_HTTP_WRITE | ALLOW_TAG_NET_RAW | ALLOW_TAG_SSH_WRITE)
#define ALLOW_TAGS_ALL (ALLOW_TAGS_READ | ALLOW_TAGS_WRITE)

/* Parses one tag name ("git:push", "read", "all", ...) into the mask of leaf tags it covers.
 * Returns 0, or -1 for an unknown name (*mask untouched). */
int allow_tag_parse(const char *name, size_t len, unsigned *mask);

/* The name of one leaf tag bit, or NULL when bit is not exactly one leaf tag. */
const char *allow_tag_name(unsigned bit);

/* Writes the leaf tags of mask, sorted and joined with `sep`, or "none" for 0, into buf
 * (always NUL-terminated when cap > 0).  Returns the length it needed, like snprintf. */
size_t allow_tags_format(unsigned mask, const char *sep, char *buf, size_t cap);

#endif
