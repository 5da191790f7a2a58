/* The DNS listener's record table: a hash of keys with a FIFO of them in the order their windows
 * began, so that the oldest (the first to expire) is always at the head. */
#include "dns/dedup.h"

#include <stdlib.h>
#include <string.h>

#define NBUCKETS 4096u /* power of two */
#define KEY_SESSION_MAX 128
#define KEY_NAME_MAX 1024
#define KEY_BUF (KEY_SESSION_MAX + KEY_NAME_MAX + 5)

struct dedup_entry {
	struct dedup_entry *hnext;         /* bucket chain */
	struct dedup_entry *older, *newer; /* by window start */
	uint64_t start_ms;                 /* when its window began (its last record) */
	uint64_t left_out;                 /* answers left out since */
	uint32_t hash;
	size_t keylen;
	char key[];                        /* "session\0name\0" + qtype (2) + allow (1) */
};

struct dns_dedup {
	size_t max, n;
	uint64_t window_ms;
	uint64_t overflow;
	struct dedup_entry *buckets[NBUCKETS];
	struct dedup_entry *oldest, *newest;
};

struct dns_dedup *dns_dedup_new(size_t max, uint64_t window_ms)
{
	struct dns_dedup *d = calloc(1, sizeof *d);
	if (d == NULL)
		return NULL;
	d->max = max ? max : DNS_DEDUP_MAX;
	d->window_ms = window_ms ? window_ms : DNS_DEDUP_WINDOW_MS;
	return d;
}

static void unlink_entry(struct dns_dedup *d, struct dedup_entry *e)
{
	if (e->older)
		e->older->newer = e->newer;
	else
		d->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		d->newest = e->older;
	e->older = e->newer = NULL;
}

static void push_newest(struct dns_dedup *d, struct dedup_entry *e)
{
	e->older = d->newest;
	e->newer = NULL;
	if (d->newest)
		d->newest->newer = e;
	else
		d->oldest = e;
	d->newest = e;
}

static void remove_entry(struct dns_dedup *d, struct dedup_entry *e)
{
	unlink_entry(d, e);
	struct dedup_entry **pp = &d->buckets[e->hash & (NBUCKETS - 1)];
	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	d->n--;
	free(e);
}

void dns_dedup_free(struct dns_dedup *d)
{
	if (d == NULL)
		return;
	while (d->oldest)
		remove_entry(d, d->oldest);
	free(d);
}

/* The key of (session, name, qtype, allow) into key (KEY_BUF bytes); its length, and its hash
 * in *hash. */
static size_t make_key(char *key, const char *session, const char *name, uint16_t qtype, int allow,
	uint32_t *hash)
{
	/* Session names are at most 64 bytes and names 1021 in presentation form; longer text
	 * (none is made) would only be cut, merging keys, never losing a first record. */
	size_t slen = strnlen(session, KEY_SESSION_MAX), nlen = strnlen(name, KEY_NAME_MAX);
	memcpy(key, session, slen);
	key[slen] = '\0';
	memcpy(key + slen + 1, name, nlen);
	key[slen + 1 + nlen] = '\0';
	key[slen + nlen + 2] = (char)(qtype >> 8);
	key[slen + nlen + 3] = (char)qtype;
	key[slen + nlen + 4] = (char)(allow != 0);
	size_t keylen = slen + nlen + 5;
	uint32_t h = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < keylen; i++)
		h = (h ^ (unsigned char)key[i]) * 16777619u;
	*hash = h;
	return keylen;
}

static struct dedup_entry *find(const struct dns_dedup *d, const char *key, size_t keylen,
	uint32_t h)
{
	struct dedup_entry *e = d->buckets[h & (NBUCKETS - 1)];
	while (e && (e->hash != h || e->keylen != keylen || memcmp(e->key, key, keylen) != 0))
		e = e->hnext;
	return e;
}

void dns_dedup_forget(struct dns_dedup *d, const char *session, const char *name, uint16_t qtype,
	int allow)
{
	char key[KEY_BUF];
	uint32_t h;
	size_t keylen = make_key(key, session, name, qtype, allow, &h);
	struct dedup_entry *e = find(d, key, keylen, h);
	if (e != NULL)
		remove_entry(d, e);
}

enum dns_dedup_verdict dns_dedup_check(struct dns_dedup *d, const char *session, const char *name,
	uint16_t qtype, int allow, uint64_t now_ms, uint64_t *repeat)
{
	*repeat = 0;
	char key[KEY_BUF];
	uint32_t h;
	size_t keylen = make_key(key, session, name, qtype, allow, &h);
	struct dedup_entry *e = find(d, key, keylen, h);
	if (e != NULL) {
		if (now_ms - e->start_ms < d->window_ms && now_ms >= e->start_ms) {
			e->left_out++;
			return DNS_DEDUP_SKIP;
		}
		*repeat = e->left_out;
		e->left_out = 0;
		e->start_ms = now_ms;
		unlink_entry(d, e);
		push_newest(d, e);
		return DNS_DEDUP_WRITE;
	}
	if (d->n >= d->max) {
		if (d->oldest == NULL || now_ms - d->oldest->start_ms < d->window_ms) {
			d->overflow++;
			return DNS_DEDUP_FULL;
		}
		remove_entry(d, d->oldest);
	}
	e = malloc(sizeof *e + keylen);
	if (e == NULL) {
		d->overflow++;
		return DNS_DEDUP_FULL;
	}
	memset(e, 0, sizeof *e);
	memcpy(e->key, key, keylen);
	e->keylen = keylen;
	e->hash = h;
	e->start_ms = now_ms;
	struct dedup_entry **b = &d->buckets[h & (NBUCKETS - 1)];
	e->hnext = *b;
	*b = e;
	push_newest(d, e);
	d->n++;
	return DNS_DEDUP_WRITE;
}

uint64_t dns_dedup_take_overflow(struct dns_dedup *d)
{
	uint64_t n = d->overflow;
	d->overflow = 0;
	return n;
}

size_t dns_dedup_count(const struct dns_dedup *d)
{
	return d->n;
}
