/* The network-action tag vocabulary (docs/design.md 4.5). */
#include "allowlist/tags.h"

#include <string.h>

struct tag_entry {
	const char *name; /* as written in configs and printed by the classifier */
	unsigned mask;    /* leaf tags it covers */
};

/* Leaves first, in bit order, so that leaf_names[i] names bit 1 << i. */
static const struct tag_entry tag_table[] = {
        {"dns", ALLOW_TAG_DNS},
        {"git:fetch", ALLOW_TAG_GIT_FETCH},
        {"git:push", ALLOW_TAG_GIT_PUSH},
        {"http:read", ALLOW_TAG_HTTP_READ},
        {"http:write", ALLOW_TAG_HTTP_WRITE},
        {"net:raw", ALLOW_TAG_NET_RAW},
        {"ssh:read", ALLOW_TAG_SSH_READ},
        {"ssh:write", ALLOW_TAG_SSH_WRITE},
        {"read", ALLOW_TAGS_READ},
        {"write", ALLOW_TAGS_WRITE},
        {"all", ALLOW_TAGS_ALL},
};
#define LEAF_COUNT 8

int allow_tag_parse(const char *name, size_t len, unsigned *mask)
{
	for (size_t i = 0; i < sizeof tag_table / sizeof tag_table[0]; i++) {
		const char *n = tag_table[i].name;
		if (strlen(n) == len && memcmp(n, name, len) == 0) {
			*mask = tag_table[i].mask;
			return 0;
		}
	}
	return -1;
}

const char *allow_tag_name(unsigned bit)
{
	for (size_t i = 0; i < LEAF_COUNT; i++)
		if (tag_table[i].mask == bit)
			return tag_table[i].name;
	return NULL;
}

size_t allow_tags_format(unsigned mask, const char *sep, char *buf, size_t cap)
{
	size_t need = 0, seplen = strlen(sep);
	const char *words[LEAF_COUNT + 1];
	size_t nwords = 0;
	for (size_t i = 0; i < LEAF_COUNT; i++)
		if (mask & tag_table[i].mask)
			words[nwords++] = tag_table[i].name;
	if (nwords == 0)
		words[nwords++] = "none";

	/* Copies what fits and counts everything, so the caller can size a second try. */
	for (size_t i = 0; i < nwords; i++) {
		const char *parts[2] = {i > 0 ? sep : "", words[i]};
		size_t lens[2] = {i > 0 ? seplen : 0, strlen(words[i])};
		for (size_t k = 0; k < 2; k++) {
			if (cap > 0 && need < cap - 1) {
				size_t room = cap - 1 - need;
				memcpy(buf + need, parts[k], lens[k] < room ? lens[k] : room);
			}
			need += lens[k];
		}
	}
	if (cap > 0)
		buf[need < cap - 1 ? need : cap - 1] = '\0';
	return need;
}
