/* The runtime session table (docs/design.md 4.4): one entry per session name, kept across config
 * generations, with the counters that need more than a number: the hosts a session has reached
 * and when it reached each new one (limits.maxNewHostsPerMinute). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/proxy.h"

#define SEEN_MAX 65536     /* hosts remembered per session; past this every host counts as new */
#define NEW_HOST_RING 4096 /* new-host times kept: limits above this are treated as this */

static void session_free(struct proxy_session *s)
{
	for (size_t i = 0; i < s->seen_cap; i++)
		free(s->seen[i]);
	free(s->seen);
	free(s->ring);
	free(s->name);
	free(s);
}

struct proxy_session *proxy_session_find(struct proxy_server *srv, const char *name)
{
	for (struct proxy_session *s = srv->sessions; s != NULL; s = s->next)
		if (strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

/* Frees the entries that no config and no connection hold any more. */
static void sweep(struct proxy_server *srv)
{
	struct proxy_session **pp = &srv->sessions;
	while (*pp != NULL) {
		struct proxy_session *s = *pp;
		if (s->cfg == NULL && s->refs == 0) {
			*pp = s->next;
			session_free(s);
		} else {
			pp = &s->next;
		}
	}
}

int proxy_sessions_apply(struct proxy_server *srv, const struct allow_config *cfg)
{
	for (struct proxy_session *s = srv->sessions; s != NULL; s = s->next)
		s->cfg = NULL;
	uint64_t now = proxy_now_ms();
	int rc = 0;
	for (size_t i = 0; i < cfg->nsessions; i++) {
		struct proxy_session *s = proxy_session_find(srv, cfg->sessions[i].name);
		if (s == NULL) {
			s = calloc(1, sizeof *s);
			if (s == NULL || (s->name = strdup(cfg->sessions[i].name)) == NULL) {
				free(s);
				rc = -1;
				continue;
			}
			s->started_ms = now;
			s->next = srv->sessions;
			srv->sessions = s;
		}
		s->cfg = &cfg->sessions[i];
	}
	sweep(srv);
	return rc;
}

void proxy_session_hold(struct proxy_session *s)
{
	s->refs++;
}

void proxy_session_release(struct proxy_server *srv, struct proxy_session *s)
{
	if (s == NULL)
		return;
	s->refs--;
	if (s->refs == 0 && s->cfg == NULL)
		sweep(srv);
}

void proxy_sessions_free(struct proxy_server *srv)
{
	while (srv->sessions != NULL) {
		struct proxy_session *s = srv->sessions;
		srv->sessions = s->next;
		session_free(s);
	}
}

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

uint64_t proxy_session_room(const struct proxy_session *s, int out)
{
	if (s->cfg == NULL)
		return 0; /* the config dropped the session: nothing more moves */
	uint64_t used = out ? s->bytes_out : s->bytes_in;
	uint64_t lim = out ? s->cfg->limits.max_bytes_out : s->cfg->limits.max_bytes_in;
	return used >= lim ? 0 : lim - used;
}

uint64_t proxy_session_expiry(const struct proxy_session *s)
{
	if (s->cfg == NULL || s->cfg->limits.expires_in_ms == ALLOW_UNLIMITED)
		return UINT64_MAX;
	uint64_t e = s->started_ms + s->cfg->limits.expires_in_ms;
	return e < s->started_ms ? UINT64_MAX : e;
}
