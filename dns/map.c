/* Mapped answers: 198.18.0.0/15 addresses standing for (session, name).
 *
 * Every address in use has an entry, found by its index (address - 198.18.0.0) and by a hash of
 * (session, name).  An entry that no connection holds sits on the idle list; every entry joins
 * that list at the newest end with expires = now + TTL, so the list is ordered by expiry and
 * the entries to reclaim are always at its oldest end.  Reclaimed indices queue up in a ring,
 * oldest first, behind the indices never used. */
#include "dns/map.h"

#include <stdlib.h>
#include <string.h>

#define NBUCKETS 65536u /* power of two */
#define SWEEP_MAX 8     /* expired entries reclaimed per dns_map_get, so memory follows use */

struct map_entry {
	struct map_entry *hnext;         /* bucket chain */
	struct map_entry *older, *newer; /* the idle list (refs == 0 only) */
	uint64_t expires_ms;             /* live until then, unless refs > 0 */
	uint32_t hash;
	uint32_t index;                  /* the address: 198.18.0.0 + index */
	uint32_t refs;                   /* connections holding the address */
	int idle;                        /* on the idle list */
	size_t slen;                     /* length of the session name */
	char text[];                     /* "session\0name\0" */
};

struct dns_map {
	uint32_t ttl_s;
	struct map_entry **slots;   /* DNS_MAP_POOL entries by index; NULL = unused */
	struct map_entry **buckets; /* NBUCKETS chains */
	uint32_t *freed;            /* ring of reclaimed indices, oldest first */
	uint32_t freed_head, freed_n;
	uint32_t fresh;             /* indices handed out for the first time so far */
	struct map_entry *idle_oldest, *idle_newest;
	size_t count;               /* entries */
};

static uint32_t key_hash(const char *session, const char *name)
{
	uint32_t h = 2166136261u; /* FNV-1a over "session\0name" */
	for (const unsigned char *p = (const unsigned char *)session; *p; p++)
		h = (h ^ *p) * 16777619u;
	h = (h ^ 0u) * 16777619u;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h;
}

int dns_map_in_pool(const uint8_t addr[4])
{
	return addr[0] == 198 && (addr[1] & 0xfe) == 18;
}

static void index_addr(uint32_t index, uint8_t addr[4])
{
	addr[0] = 198;
	addr[1] = (uint8_t)(18 + (index >> 16));
	addr[2] = (uint8_t)(index >> 8);
	addr[3] = (uint8_t)index;
}

static uint32_t addr_index(const uint8_t addr[4])
{
	return ((uint32_t)(addr[1] - 18) << 16) | ((uint32_t)addr[2] << 8) | addr[3];
}

struct dns_map *dns_map_new(uint32_t ttl_s)
{
	struct dns_map *m = calloc(1, sizeof *m);
	if (m == NULL)
		return NULL;
	m->ttl_s = ttl_s ? ttl_s : DNS_MAP_TTL_DEFAULT;
	/* Large and zeroed: calloc maps fresh pages, so untouched parts cost no memory. */
	m->slots = calloc(DNS_MAP_POOL, sizeof *m->slots);
	m->buckets = calloc(NBUCKETS, sizeof *m->buckets);
	m->freed = calloc(DNS_MAP_POOL, sizeof *m->freed);
	if (m->slots == NULL || m->buckets == NULL || m->freed == NULL) {
		dns_map_free(m);
		return NULL;
	}
	return m;
}

void dns_map_free(struct dns_map *m)
{
	if (m == NULL)
		return;
	if (m->slots != NULL)
		for (uint32_t i = 0; i < DNS_MAP_POOL; i++)
			free(m->slots[i]);
	free(m->slots);
	free(m->buckets);
	free(m->freed);
	free(m);
}

uint32_t dns_map_ttl(const struct dns_map *m)
{
	return m->ttl_s;
}

static void idle_unlink(struct dns_map *m, struct map_entry *e)
{
	if (!e->idle)
		return;
	if (e->older)
		e->older->newer = e->newer;
	else
		m->idle_oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		m->idle_newest = e->older;
	e->older = e->newer = NULL;
	e->idle = 0;
}

/* Puts e at the newest end with a fresh TTL: the list stays ordered by expiry because every
 * entry joins it this way, with the same TTL, as time moves on. */
static void idle_push(struct dns_map *m, struct map_entry *e, uint64_t now_ms)
{
	idle_unlink(m, e);
	e->expires_ms = now_ms + (uint64_t)m->ttl_s * 1000u;
	e->older = m->idle_newest;
	e->newer = NULL;
	if (m->idle_newest)
		m->idle_newest->newer = e;
	else
		m->idle_oldest = e;
	m->idle_newest = e;
	e->idle = 1;
}

/* Frees an idle, expired entry and queues its index for reuse. */
static void reclaim(struct dns_map *m, struct map_entry *e)
{
	idle_unlink(m, e);
	struct map_entry **pp = &m->buckets[e->hash & (NBUCKETS - 1)];
	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	m->slots[e->index] = NULL;
	m->freed[(m->freed_head + m->freed_n) % DNS_MAP_POOL] = e->index;
	m->freed_n++;
	m->count--;
	free(e);
}

static void sweep(struct dns_map *m, uint64_t now_ms, unsigned max)
{
	while (max-- > 0 && m->idle_oldest != NULL && m->idle_oldest->expires_ms <= now_ms)
		reclaim(m, m->idle_oldest);
}

static struct map_entry *find(const struct dns_map *m, const char *session, const char *name,
	uint32_t h)
{
	for (struct map_entry *e = m->buckets[h & (NBUCKETS - 1)]; e != NULL; e = e->hnext)
		if (e->hash == h && strcmp(e->text, session) == 0 &&
			strcmp(e->text + e->slen + 1, name) == 0)
			return e;
	return NULL;
}

/* The next index to hand out, or -1 when every address is live. */
static int64_t take_index(struct dns_map *m, uint64_t now_ms)
{
	if (m->fresh < DNS_MAP_POOL) {
		/* 198.18.0.1 first; 198.18.0.0, which some software takes for a network address,
		 * last. */
		uint32_t i = (m->fresh + 1) % DNS_MAP_POOL;
		m->fresh++;
		return i;
	}
	if (m->freed_n == 0)
		sweep(m, now_ms, 1);
	if (m->freed_n == 0)
		return -1;
	uint32_t i = m->freed[m->freed_head];
	m->freed_head = (m->freed_head + 1) % DNS_MAP_POOL;
	m->freed_n--;
	return i;
}

int dns_map_get(struct dns_map *m, const char *session, const char *name, uint64_t now_ms,
	uint8_t addr[4])
{
	size_t slen = strlen(session), nlen = strlen(name);
	if (slen > DNS_MAP_SESSION_MAX)
		return -1;
	sweep(m, now_ms, SWEEP_MAX);
	uint32_t h = key_hash(session, name);
	struct map_entry *e = find(m, session, name, h);
	if (e != NULL) {
		if (e->refs == 0)
			idle_push(m, e, now_ms);
		else
			e->expires_ms = now_ms + (uint64_t)m->ttl_s * 1000u;
		index_addr(e->index, addr);
		return 0;
	}
	e = malloc(sizeof *e + slen + 1 + nlen + 1);
	if (e == NULL)
		return -1;
	int64_t index = take_index(m, now_ms);
	if (index < 0) {
		free(e);
		return -1;
	}
	memset(e, 0, sizeof *e);
	memcpy(e->text, session, slen + 1);
	memcpy(e->text + slen + 1, name, nlen + 1);
	e->slen = slen;
	e->hash = h;
	e->index = (uint32_t)index;
	struct map_entry **b = &m->buckets[h & (NBUCKETS - 1)];
	e->hnext = *b;
	*b = e;
	m->slots[e->index] = e;
	m->count++;
	idle_push(m, e, now_ms);
	index_addr(e->index, addr);
	return 0;
}

static struct map_entry *entry_at(const struct dns_map *m, const uint8_t addr[4])
{
	if (!dns_map_in_pool(addr))
		return NULL;
	return m->slots[addr_index(addr)];
}

int dns_map_lookup(struct dns_map *m, const uint8_t addr[4], uint64_t now_ms,
	const char **session, const char **name)
{
	(void)now_ms;
	struct map_entry *e = entry_at(m, addr);
	if (e == NULL)
		return -1;
	*session = e->text;
	*name = e->text + e->slen + 1;
	return 0;
}

int dns_map_ref(struct dns_map *m, const uint8_t addr[4], uint64_t now_ms)
{
	(void)now_ms;
	struct map_entry *e = entry_at(m, addr);
	if (e == NULL || e->refs == UINT32_MAX)
		return -1;
	idle_unlink(m, e);
	e->refs++;
	return 0;
}

void dns_map_unref(struct dns_map *m, const uint8_t addr[4], uint64_t now_ms)
{
	struct map_entry *e = entry_at(m, addr);
	if (e == NULL || e->refs == 0)
		return;
	if (--e->refs == 0)
		idle_push(m, e, now_ms);
}

size_t dns_map_count(const struct dns_map *m)
{
	return m->count;
}

size_t dns_map_live(const struct dns_map *m, uint64_t now_ms)
{
	size_t expired = 0;
	for (const struct map_entry *e = m->idle_oldest; e != NULL && e->expires_ms <= now_ms;
		e = e->newer)
		expired++;
	return m->count - expired;
}
