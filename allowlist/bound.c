/* Bounds and limits, and their merge (docs/design.md 4.3). */
#include "allowlist/bound.h"

#include <stddef.h>

int allow_bound_init(struct allow_bound *b)
{
	b->allow = NULL;
	b->inspect = NULL;
	b->deny_actions = 0;
	b->enforce = ALLOW_ENFORCE_UNSET;
	b->deny = allow_set_new(ALLOW_SET_DENY);
	return b->deny != NULL ? 0 : -1;
}

void allow_bound_free(struct allow_bound *b)
{
	allow_set_free(b->allow);
	allow_set_free(b->deny);
	allow_set_free(b->inspect);
	b->allow = NULL;
	b->deny = NULL;
	b->inspect = NULL;
}

/* Adds the patterns of src (canonical texts, so they parse again) to dst.  0 or -1. */
static int add_all(struct allow_set *dst, const struct allow_set *src)
{
	if (src == NULL)
		return 0;
	for (size_t i = 0; i < allow_set_count(src); i++)
		if (allow_set_add(dst, allow_set_pattern(src, i), NULL, 0) == -1)
			return -1;
	return 0;
}

int allow_bound_merge(struct allow_bound *dst, const struct allow_bound *src)
{
	/* Both new sets are built before dst changes, so a failure leaves dst as it was. */
	struct allow_set *deny = allow_set_new(ALLOW_SET_DENY);
	struct allow_set *allow = NULL, *inspect = NULL;
	if (deny == NULL || add_all(deny, dst->deny) == -1 || add_all(deny, src->deny) == -1)
		goto fail;
	if (dst->inspect != NULL || src->inspect != NULL) {
		inspect = allow_set_new(ALLOW_SET_ALLOW);
		if (inspect == NULL || add_all(inspect, dst->inspect) == -1 ||
		        add_all(inspect, src->inspect) == -1)
			goto fail;
	}

	if (src->allow != NULL) {
		allow = allow_set_new(ALLOW_SET_ALLOW);
		if (allow == NULL)
			goto fail;
		/* An absent list has no effect; otherwise only the entries both lists hold survive,
		 * so an empty list on either side permits nothing. */
		const struct allow_set *keep = dst->allow != NULL ? dst->allow : src->allow;
		for (size_t i = 0; i < allow_set_count(keep); i++) {
			const char *p = allow_set_pattern(keep, i);
			if (dst->allow != NULL && !allow_set_has(src->allow, p))
				continue;
			if (allow_set_add(allow, p, NULL, 0) == -1)
				goto fail;
		}
	}

	allow_set_free(dst->deny);
	dst->deny = deny;
	if (inspect != NULL) {
		allow_set_free(dst->inspect);
		dst->inspect = inspect;
	}
	if (allow != NULL) {
		allow_set_free(dst->allow);
		dst->allow = allow;
	}
	dst->deny_actions |= src->deny_actions;
	if (src->enforce > dst->enforce)
		dst->enforce = src->enforce;
	return 0;

fail:
	allow_set_free(deny);
	allow_set_free(allow);
	allow_set_free(inspect);
	return -1;
}

void allow_limits_init(struct allow_limits *l)
{
	l->max_connections = ALLOW_UNLIMITED;
	l->max_connections_total = ALLOW_UNLIMITED;
	l->max_bytes_out = ALLOW_UNLIMITED;
	l->max_bytes_in = ALLOW_UNLIMITED;
	l->max_new_hosts_per_minute = ALLOW_UNLIMITED;
	l->expires_in_ms = ALLOW_UNLIMITED;
}

static void take_min(uint64_t *dst, uint64_t src)
{
	if (src < *dst)
		*dst = src;
}

void allow_limits_merge(struct allow_limits *dst, const struct allow_limits *src)
{
	take_min(&dst->max_connections, src->max_connections);
	take_min(&dst->max_connections_total, src->max_connections_total);
	take_min(&dst->max_bytes_out, src->max_bytes_out);
	take_min(&dst->max_bytes_in, src->max_bytes_in);
	take_min(&dst->max_new_hosts_per_minute, src->max_new_hosts_per_minute);
	take_min(&dst->expires_in_ms, src->expires_in_ms);
}
