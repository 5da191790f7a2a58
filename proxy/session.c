/* Session counters that need more than a number: the hosts a session has reached and when it
 * reached each new one (limits.maxNewHostsPerMinute), and the byte limits. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/proxy.h"

#define SEEN_MAX 65536      /* hosts remembered per session; past this every host counts as new */
#define NEW_HOST_RING 4096  /* new-host times kept: limits above this are treated as this */

static uint64_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603u; /* FNV-1a */
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211u;
	}
	return h;
}

static int seen_has(const struct proxy_session *s, const char *host)
{
	if (s->seen_cap == 0)
		return 0;
	for (size_t i = hash_name(host) & (s->seen_cap - 1);; i = (i + 1) & (s->seen_cap - 1)) {
		if (s->seen[i] == NULL)
			return 0;
		if (strcmp(s->seen[i], host) == 0)
			return 1;
	}
}

static int seen_add(struct proxy_session *s, const char *host)
{
	if (s->seen_n >= SEEN_MAX)
		return -1;
	if (2 * (s->seen_n + 1) > s->seen_cap) {
		size_t ncap = s->seen_cap ? s->seen_cap * 2 : 64;
		char **n = calloc(ncap, sizeof *n);
		if (n == NULL)
			return -1;
		for (size_t i = 0; i < s->seen_cap; i++) {
			if (s->seen[i] == NULL)
				continue;
			size_t j = hash_name(s->seen[i]) & (ncap - 1);
			while (n[j] != NULL)
				j = (j + 1) & (ncap - 1);
			n[j] = s->seen[i];
		}
		free(s->seen);
		s->seen = n;
		s->seen_cap = ncap;
	}
	char *dup = strdup(host);
	if (dup == NULL)
		return -1;
	size_t j = hash_name(host) & (s->seen_cap - 1);
	while (s->seen[j] != NULL)
		j = (j + 1) & (s->seen_cap - 1);
	s->seen[j] = dup;
	s->seen_n++;
	return 0;
}

int proxy_session_new_host(struct proxy_session *s, const char *host, uint64_t now_ms)
{
	uint64_t limit = s->cfg->limits.max_new_hosts_per_minute;
	if (limit == ALLOW_UNLIMITED || seen_has(s, host))
		return 0;
	if (limit > NEW_HOST_RING)
		limit = NEW_HOST_RING;
	if (s->ring == NULL) {
		s->ring = calloc(NEW_HOST_RING, sizeof *s->ring);
		if (s->ring == NULL)
			return -1;
	}
	while (s->ring_n > 0 && now_ms - s->ring[s->ring_head] >= 60000) {
		s->ring_head = (s->ring_head + 1) % NEW_HOST_RING;
		s->ring_n--;
	}
	if (s->ring_n >= limit)
		return -1;
	s->ring[(s->ring_head + s->ring_n) % NEW_HOST_RING] = now_ms;
	s->ring_n++;
	seen_add(s, host);
	return 0;
}

void proxy_count(struct proxy_conn *c, uint64_t out, uint64_t in)
{
	c->bytes_out += out;
	c->bytes_in += in;
	struct proxy_session *s = proxy_session_live(c->session);
	if (s != NULL) {
		s->bytes_out += out;
		s->bytes_in += in;
	}
}

int proxy_conn_bytes_ok(struct proxy_conn *c, uint64_t out, uint64_t in)
{
	struct proxy_session *s = proxy_session_live(c->session);
	if (s == NULL || proxy_session_bytes_ok(s, out, in))
		return 1;
	/* The transfer that would cross the limit is cut, and the session is spent: later
	 * requests get 429 instead of another partial transfer each. */
	const struct allow_limits *l = &s->cfg->limits;
	if (s->bytes_out + out > l->max_bytes_out)
		s->bytes_out = l->max_bytes_out;
	if (s->bytes_in + in > l->max_bytes_in)
		s->bytes_in = l->max_bytes_in;
	return 0;
}

struct proxy_session *proxy_session_live(struct proxy_session *s)
{
	while (s != NULL && s->successor != NULL)
		s = s->successor;
	return s;
}

int proxy_session_bytes_ok(const struct proxy_session *s, uint64_t out, uint64_t in)
{
	const struct allow_limits *l = &s->cfg->limits;
	return s->bytes_out + out <= l->max_bytes_out && s->bytes_in + in <= l->max_bytes_in;
}

void proxy_session_free(struct proxy_session *s)
{
	for (size_t i = 0; i < s->seen_cap; i++)
		free(s->seen[i]);
	free(s->seen);
	free(s->ring);
}
