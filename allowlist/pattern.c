/* Pattern sets (docs/design.md 4.2).
 *
 * Every pattern is parsed once into (key, scope, port) and stored in one open-addressing hash
 * table of nodes.  A key is a byte string that starts with its kind:
 *   'N' + canonical name              the name a name pattern is anchored at;
 *   'A' + family + prefix + address   an address prefix, host bits cleared;
 *   'T' + canonical pattern text      only to find duplicates and answer allow_set_has.
 * A node holds every rule anchored at its key, so a name pattern costs one probe for the host
 * and one per proper suffix of it, and an address costs one probe per prefix length in use:
 * neither grows with the number of patterns. */
#include "allowlist/pattern.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist/cidr.h"

#define SCOPE_APEX 1u /* the anchor itself */
#define SCOPE_SUB 2u  /* every name below the anchor */

#define KEY_MAX (1 + ALLOW_HOST_BUF + 8) /* the longest key: 'T' + canonical pattern text */

struct rule {
	int port;       /* ALLOW_PORT_DEFAULT, ALLOW_PORT_ANY or 1-65535 */
	unsigned scope; /* SCOPE_* bits (addresses use SCOPE_APEX) */
	size_t pattern; /* index into set->patterns: the text to report */
};

struct node {
	char *key; /* owned, keylen bytes, not NUL-terminated */
	size_t keylen;
	uint64_t hash;      /* of key, kept to skip most key compares and to rehash */
	struct rule *rules; /* owned; none for 'T' nodes */
	size_t nrules;
	size_t pattern; /* for 'T' nodes: the pattern it stands for */
};

struct allow_set {
	enum allow_set_kind kind;
	char **patterns; /* canonical texts in the order added; owned */
	size_t npatterns, cappatterns;
	struct node *nodes; /* owned */
	size_t nnodes, capnodes;
	uint64_t *slots; /* (hash tag << 32) | (node index + 1); 0 = empty; capslots a power of
	                    two.  The tag (the hash's high half) lets a probe that misses stop at
	                    the slot without touching the node or its key: one cache miss, not three */
	size_t capslots;
	size_t v4_lens[33];  /* number of IPv4 prefixes of each length */
	size_t v6_lens[129]; /* number of IPv6 prefixes of each length */
};

/* Multi-label suffixes under which unrelated parties register names.  Together with "every
 * single label", this stops "*.co.uk"-style patterns that would allow much more than meant. */
static const char *const public_suffixes[] = {
        "ac.jp",
        "ac.uk",
        "appspot.com",
        "azurewebsites.net",
        "blogspot.com",
        "cloudfront.net",
        "co.id",
        "co.il",
        "co.in",
        "co.jp",
        "co.kr",
        "co.nz",
        "co.uk",
        "co.za",
        "com.ar",
        "com.au",
        "com.br",
        "com.cn",
        "com.co",
        "com.hk",
        "com.mx",
        "com.my",
        "com.ph",
        "com.pk",
        "com.sg",
        "com.tr",
        "com.tw",
        "com.ua",
        "edu.au",
        "firebaseapp.com",
        "github.io",
        "gitlab.io",
        "go.jp",
        "gov.au",
        "gov.cn",
        "gov.uk",
        "herokuapp.com",
        "ltd.uk",
        "me.uk",
        "ne.jp",
        "net.au",
        "net.br",
        "net.cn",
        "net.in",
        "net.nz",
        "netlify.app",
        "nhs.uk",
        "or.jp",
        "or.kr",
        "org.au",
        "org.br",
        "org.cn",
        "org.in",
        "org.nz",
        "org.uk",
        "org.za",
        "pages.dev",
        "plc.uk",
        "s3.amazonaws.com",
        "vercel.app",
        "web.app",
        "workers.dev",
};

/* FNV-1a: patterns come from the config, not from clients, so flooding is not a concern. */
static uint64_t hash_bytes(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* The node with this key, or NULL. */
static struct node *find_node(const struct allow_set *set, const char *key, size_t keylen)
{
	if (set->capslots == 0)
		return NULL;
	uint64_t h = hash_bytes(key, keylen);
	size_t mask = set->capslots - 1;
	uint32_t tag = (uint32_t)(h >> 32);
	for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
		uint64_t s = set->slots[i];
		if (s == 0)
			return NULL;
		if ((uint32_t)(s >> 32) != tag)
			continue;
		struct node *n = &set->nodes[(uint32_t)s - 1];
		if (n->hash == h && n->keylen == keylen && memcmp(n->key, key, keylen) == 0)
			return n;
	}
}

static void place_slot(uint64_t *slots, size_t cap, uint64_t h, uint32_t value)
{
	size_t mask = cap - 1;
	size_t i = (size_t)h & mask;
	while (slots[i] != 0)
		i = (i + 1) & mask;
	slots[i] = (h >> 32 << 32) | value;
}

/* Makes room for `more` new nodes (array and table, load at most 1/2) so that adding them
 * cannot fail half way.  0 or -1. */
static int reserve_nodes(struct allow_set *set, size_t more)
{
	size_t want = set->nnodes + more;
	if (want > UINT32_MAX - 1)
		return -1;
	if (want > set->capnodes) {
		size_t cap = set->capnodes ? set->capnodes : 16;
		while (cap < want)
			cap *= 2;
		struct node *nn = realloc(set->nodes, cap * sizeof *nn);
		if (nn == NULL)
			return -1;
		set->nodes = nn;
		set->capnodes = cap;
	}
	if (want * 2 > set->capslots) {
		size_t cap = set->capslots ? set->capslots : 32;
		while (want * 2 > cap)
			cap *= 2;
		uint64_t *slots = calloc(cap, sizeof *slots);
		if (slots == NULL)
			return -1;
		for (size_t i = 0; i < set->nnodes; i++)
			place_slot(slots, cap, set->nodes[i].hash, (uint32_t)(i + 1));
		free(set->slots);
		set->slots = slots;
		set->capslots = cap;
	}
	return 0;
}

/* Appends a node that takes ownership of key; room was reserved. */
static struct node *add_node(struct allow_set *set, char *key, size_t keylen)
{
	struct node *n = &set->nodes[set->nnodes];
	memset(n, 0, sizeof *n);
	n->key = key;
	n->keylen = keylen;
	n->hash = hash_bytes(key, keylen);
	set->nnodes++;
	place_slot(set->slots, set->capslots, n->hash, (uint32_t)set->nnodes);
	return n;
}

struct allow_set *allow_set_new(enum allow_set_kind kind)
{
	struct allow_set *set = calloc(1, sizeof *set);
	if (set == NULL)
		return NULL;
	set->kind = kind;
	return set;
}

void allow_set_free(struct allow_set *set)
{
	if (set == NULL)
		return;
	for (size_t i = 0; i < set->nnodes; i++) {
		free(set->nodes[i].key);
		free(set->nodes[i].rules);
	}
	for (size_t i = 0; i < set->npatterns; i++)
		free(set->patterns[i]);
	free(set->nodes);
	free(set->slots);
	free(set->patterns);
	free(set);
}

enum allow_set_kind allow_set_get_kind(const struct allow_set *set)
{
	return set->kind;
}

/* What a pattern says, before it is stored. */
struct parsed {
	int is_addr;               /* 1: cidr is set; 0: name and scope are */
	struct allow_cidr cidr;    /* address prefix */
	char name[ALLOW_HOST_BUF]; /* canonical name the pattern is anchored at */
	unsigned scope;            /* SCOPE_* */
	const char *wild;          /* "", "*." or "**." as written */
	int port;                  /* ALLOW_PORT_DEFAULT, ALLOW_PORT_ANY or a port */
};

__attribute__((format(printf, 3, 4))) static int fail(
        char *err, size_t errlen, const char *fmt, ...)
{
	if (err != NULL && errlen > 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static int is_public_suffix(const char *name)
{
	if (strchr(name, '.') == NULL)
		return 1;
	for (size_t i = 0; i < sizeof public_suffixes / sizeof public_suffixes[0]; i++)
		if (strcmp(name, public_suffixes[i]) == 0)
			return 1;
	return 0;
}

/* An IPv6 address or prefix as text (no brackets); len < 64 was checked by the caller. */
static int parse_v6(const char *s, size_t len, struct allow_cidr *out)
{
	char e[8];
	if (allow_cidr_parse(s, len, out, e, sizeof e) == -1 || out->family != AF_INET6)
		return -1;
	return 0;
}

static int parse_port_spec(
        const char *s, size_t len, int *port, const char *pattern, char *err, size_t errlen)
{
	uint16_t p;
	if (len == 1 && s[0] == '*') {
		*port = ALLOW_PORT_ANY;
		return 0;
	}
	if (allow_port_parse(s, len, &p) == -1)
		return fail(err, errlen,
		        "bad port in \"%.280s\" (a number from 1 to 65535 without leading zeros, "
		        "or '*')",
		        pattern);
	*port = p;
	return 0;
}

static int parse_pattern(const char *pat, size_t len, struct parsed *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	out->wild = "";
	if (len == 0)
		return fail(err, errlen, "empty pattern");
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)pat[i] >= 0x80)
			return fail(err, errlen,
			        "non-ASCII byte in \"%.280s\" (write international names as xn--)",
			        pat);
	if (len > ALLOW_HOST_BUF + 8)
		return fail(err, errlen, "pattern too long: \"%.80s...\"", pat);

	const char *host = pat;
	size_t hostlen = len;
	int bracketed = 0;
	if (pat[0] == '[') {
		const char *rb = memchr(pat, ']', len);
		if (rb == NULL)
			return fail(err, errlen, "missing ']' in \"%.280s\"", pat);
		size_t rest = len - (size_t)(rb + 1 - pat);
		host = pat + 1;
		hostlen = (size_t)(rb - pat - 1);
		bracketed = 1;
		if (rest > 0) {
			if (rb[1] != ':')
				return fail(err, errlen, "unexpected text after ']' in \"%.280s\"",
				        pat);
			if (parse_port_spec(rb + 2, rest - 1, &out->port, pat, err, errlen) == -1)
				return -1;
		}
	} else {
		const char *colon = memchr(pat, ':', len);
		const char *last = colon;
		size_t ncolons = 0;
		for (size_t i = 0; i < len; i++)
			if (pat[i] == ':') {
				ncolons++;
				last = pat + i;
			}
		if (ncolons == 1) {
			hostlen = (size_t)(colon - pat);
			if (parse_port_spec(colon + 1, len - hostlen - 1, &out->port, pat, err,
			            errlen) == -1)
				return -1;
		} else if (ncolons > 1) {
			/* Without brackets the whole text is the address: "2001:db8::1:443" cannot
			 * say whether 443 is a port, so it never is. */
			if (parse_v6(pat, len, &out->cidr) == -1) {
				if (last != NULL &&
				        parse_v6(pat, (size_t)(last - pat), &out->cidr) == 0)
					return fail(err, errlen,
					        "an IPv6 address with a port must be in brackets: "
					        "\"%.280s\"",
					        pat);
				return fail(
				        err, errlen, "not a valid IPv6 address: \"%.280s\"", pat);
			}
			out->is_addr = 1;
			return 0;
		}
	}
	if (hostlen == 0)
		return fail(err, errlen, "missing host in \"%.280s\"", pat);

	if (bracketed) {
		if (memchr(host, '%', hostlen) != NULL)
			return fail(err, errlen, "IPv6 zone ids are not allowed: \"%.280s\"", pat);
		if (parse_v6(host, hostlen, &out->cidr) == -1)
			return fail(err, errlen, "not a valid IPv6 address in brackets: \"%.280s\"",
			        pat);
		out->is_addr = 1;
		return 0;
	}
	if (memchr(host, '/', hostlen) != NULL) {
		char e[160];
		if (allow_cidr_parse(host, hostlen, &out->cidr, e, sizeof e) == -1)
			return fail(err, errlen, "%s", e);
		out->is_addr = 1;
		return 0;
	}

	if (hostlen >= 3 && memcmp(host, "**.", 3) == 0) {
		out->wild = "**.";
		out->scope = SCOPE_APEX | SCOPE_SUB;
		host += 3;
		hostlen -= 3;
	} else if (hostlen >= 2 && memcmp(host, "*.", 2) == 0) {
		out->wild = "*.";
		out->scope = SCOPE_SUB;
		host += 2;
		hostlen -= 2;
	} else {
		out->scope = SCOPE_APEX;
	}
	if ((hostlen == 1 && host[0] == '*') || (hostlen == 2 && memcmp(host, "**", 2) == 0) ||
	        (hostlen == 0 && out->wild[0] != '\0'))
		return fail(err, errlen, "\"%.280s\" would match every host", pat);
	if (memchr(host, '*', hostlen) != NULL)
		return fail(err, errlen,
		        "a wildcard must be a whole leading label (\"*.example.com\" or "
		        "\"**.example.com\"): \"%.200s\"",
		        pat);

	struct allow_dest d;
	enum allow_canon_err ce = allow_canon_host(host, hostlen, &d);
	if (ce != ALLOW_CANON_OK) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "%s in \"%.*s\"", allow_canon_strerror(ce),
			        (int)(len > 200 ? 200 : len), pat);
		return -1;
	}
	if (d.kind != ALLOW_HOST_NAME) {
		if (out->wild[0] != '\0')
			return fail(err, errlen,
			        "a wildcard cannot apply to an IP address: \"%.280s\"", pat);
		out->cidr.family = d.kind == ALLOW_HOST_IPV4 ? AF_INET : AF_INET6;
		memcpy(out->cidr.addr, d.addr, 16);
		out->cidr.prefix = d.kind == ALLOW_HOST_IPV4 ? 32 : 128;
		out->is_addr = 1;
		return 0;
	}
	if (is_public_suffix(d.host))
		return fail(err, errlen, "\"%.280s\" is a public suffix alone", pat);
	memcpy(out->name, d.host, sizeof out->name);
	return 0;
}

/* The canonical text of a parsed pattern: the form allow_set_pattern reports, and the one
 * that parses back to itself. */
static void format_pattern(const struct parsed *p, char *buf, size_t cap)
{
	char port[16] = "";
	if (p->port == ALLOW_PORT_ANY)
		snprintf(port, sizeof port, ":*");
	else if (p->port > 0)
		snprintf(port, sizeof port, ":%d", p->port);
	if (!p->is_addr) {
		snprintf(buf, cap, "%s%s%s", p->wild, p->name, port);
		return;
	}
	char a[INET6_ADDRSTRLEN], len[8] = "";
	inet_ntop(p->cidr.family, p->cidr.addr, a, sizeof a);
	if (p->cidr.prefix != (p->cidr.family == AF_INET ? 32 : 128))
		snprintf(len, sizeof len, "/%u", (unsigned)p->cidr.prefix);
	if (p->cidr.family == AF_INET6 && port[0] != '\0')
		snprintf(buf, cap, "[%s%s]%s", a, len, port);
	else
		snprintf(buf, cap, "%s%s%s", a, len, port);
}

static size_t addr_key(char *key, int family, unsigned prefix, const uint8_t *addr)
{
	size_t alen = family == AF_INET ? 4 : 16;
	key[0] = 'A';
	key[1] = family == AF_INET ? '4' : '6';
	key[2] = (char)prefix;
	memcpy(key + 3, addr, alen);
	return 3 + alen;
}

static char *dup_bytes(const char *p, size_t n)
{
	char *c = malloc(n ? n : 1);
	if (c != NULL && n > 0)
		memcpy(c, p, n);
	return c;
}

int allow_set_add(struct allow_set *set, const char *pattern, char *err, size_t errlen)
{
	struct parsed p;
	if (parse_pattern(pattern, strlen(pattern), &p, err, errlen) == -1)
		return -1;
	/* In a deny list every name form reaches the whole subtree (DESIGN 4.2): denying less than
	 * the operator may have meant is the failure that matters. */
	if (set->kind == ALLOW_SET_DENY)
		p.scope = SCOPE_APEX | SCOPE_SUB;

	char text[KEY_MAX];
	text[0] = 'T';
	format_pattern(&p, text + 1, sizeof text - 1);
	size_t textlen = 1 + strlen(text + 1);
	if (find_node(set, text, textlen) != NULL)
		return 0;

	char anchor[KEY_MAX];
	size_t anchorlen;
	if (p.is_addr) {
		anchorlen = addr_key(anchor, p.cidr.family, p.cidr.prefix, p.cidr.addr);
	} else {
		anchor[0] = 'N';
		anchorlen = 1 + strlen(p.name);
		memcpy(anchor + 1, p.name, anchorlen - 1);
	}

	/* Everything that can fail happens before the set changes, so a failure leaves it as it
	 * was. */
	if (reserve_nodes(set, 2) == -1)
		return fail(err, errlen, "out of memory");
	if (set->npatterns == set->cappatterns) {
		size_t cap = set->cappatterns ? set->cappatterns * 2 : 16;
		char **np = realloc(set->patterns, cap * sizeof *np);
		if (np == NULL)
			return fail(err, errlen, "out of memory");
		set->patterns = np;
		set->cappatterns = cap;
	}
	struct node *an = find_node(set, anchor, anchorlen);
	size_t nrules = an != NULL ? an->nrules : 0;
	char *textcopy = dup_bytes(text + 1, textlen);
	char *textkey = dup_bytes(text, textlen);
	char *anchorkey = an == NULL ? dup_bytes(anchor, anchorlen) : NULL;
	struct rule *rules = malloc((nrules + 1) * sizeof *rules);
	if (textcopy == NULL || textkey == NULL || (an == NULL && anchorkey == NULL) ||
	        rules == NULL) {
		free(textcopy);
		free(textkey);
		free(anchorkey);
		free(rules);
		return fail(err, errlen, "out of memory");
	}
	textcopy[textlen - 1] = '\0';

	size_t idx = set->npatterns++;
	set->patterns[idx] = textcopy;
	add_node(set, textkey, textlen)->pattern = idx;
	if (an == NULL)
		an = add_node(set, anchorkey, anchorlen);
	if (nrules > 0)
		memcpy(rules, an->rules, nrules * sizeof *rules);
	free(an->rules);
	an->rules = rules;
	an->rules[nrules] = (struct rule){
	        .port = p.port, .scope = p.is_addr ? SCOPE_APEX : p.scope, .pattern = idx};
	an->nrules = nrules + 1;
	if (p.is_addr) {
		if (p.cidr.family == AF_INET)
			set->v4_lens[p.cidr.prefix]++;
		else
			set->v6_lens[p.cidr.prefix]++;
	}
	return 0;
}

static int port_ok(const struct allow_set *set, int rule_port, uint16_t port)
{
	if (rule_port == ALLOW_PORT_ANY)
		return 1;
	if (rule_port == ALLOW_PORT_DEFAULT)
		return set->kind == ALLOW_SET_DENY || port == 80 || port == 443;
	return port != 0 && rule_port == port;
}

/* Checks the rules of node n that apply with `scope`; returns 1 on a full match. */
static int check_node(const struct allow_set *set, const struct node *n, unsigned scope,
        uint16_t port, const struct rule **hit, const struct rule **port_miss)
{
	if (n == NULL)
		return 0;
	for (size_t i = 0; i < n->nrules; i++) {
		const struct rule *r = &n->rules[i];
		if (!(r->scope & scope))
			continue;
		if (port_ok(set, r->port, port)) {
			*hit = r;
			return 1;
		}
		if (*port_miss == NULL)
			*port_miss = r;
	}
	return 0;
}

enum allow_match allow_set_match(
        const struct allow_set *set, const struct allow_dest *d, const char **rule)
{
	const struct rule *hit = NULL, *port_miss = NULL;
	char key[KEY_MAX];
	if (d->kind == ALLOW_HOST_NAME) {
		size_t len = strnlen(d->host, sizeof d->host - 1);
		key[0] = 'N';
		memcpy(key + 1, d->host, len);
		/* The host itself, then each proper suffix, most specific first. */
		if (!check_node(set, find_node(set, key, 1 + len), SCOPE_APEX, d->port, &hit,
		            &port_miss)) {
			for (size_t i = 0; i < len && hit == NULL; i++) {
				if (d->host[i] != '.')
					continue;
				size_t slen = len - i - 1;
				memcpy(key + 1, d->host + i + 1, slen);
				check_node(set, find_node(set, key, 1 + slen), SCOPE_SUB, d->port,
				        &hit, &port_miss);
			}
		}
	} else {
		int family = d->kind == ALLOW_HOST_IPV4 ? AF_INET : AF_INET6;
		const size_t *lens = family == AF_INET ? set->v4_lens : set->v6_lens;
		unsigned maxlen = family == AF_INET ? 32 : 128;
		for (unsigned l = maxlen + 1; l-- > 0 && hit == NULL;) {
			if (lens[l] == 0)
				continue;
			uint8_t masked[16] = {0};
			memcpy(masked, d->addr, l / 8);
			if (l % 8)
				masked[l / 8] = (uint8_t)(d->addr[l / 8] & (0xff << (8 - l % 8)));
			size_t klen = addr_key(key, family, l, masked);
			check_node(set, find_node(set, key, klen), SCOPE_APEX, d->port, &hit,
			        &port_miss);
		}
	}
	if (hit != NULL) {
		if (rule != NULL)
			*rule = set->patterns[hit->pattern];
		return ALLOW_MATCH_YES;
	}
	if (port_miss != NULL) {
		if (rule != NULL)
			*rule = set->patterns[port_miss->pattern];
		return ALLOW_MATCH_PORT;
	}
	return ALLOW_MATCH_NONE;
}

/* Adds the ports of n's rules that apply with scope to ports[] (up to cap), counting all. */
static size_t node_ports(const struct node *n, unsigned scope, int *ports, size_t cap, size_t got)
{
	if (n == NULL)
		return got;
	for (size_t i = 0; i < n->nrules; i++) {
		if (!(n->rules[i].scope & scope))
			continue;
		if (got < cap)
			ports[got] = n->rules[i].port;
		got++;
	}
	return got;
}

size_t allow_set_host_ports(
        const struct allow_set *set, const struct allow_dest *d, int *ports, size_t cap)
{
	size_t got = 0;
	char key[KEY_MAX];
	if (d->kind == ALLOW_HOST_NAME) {
		size_t len = strnlen(d->host, sizeof d->host - 1);
		key[0] = 'N';
		memcpy(key + 1, d->host, len);
		got = node_ports(find_node(set, key, 1 + len), SCOPE_APEX, ports, cap, got);
		for (size_t i = 0; i < len; i++) {
			if (d->host[i] != '.')
				continue;
			size_t slen = len - i - 1;
			memcpy(key + 1, d->host + i + 1, slen);
			got = node_ports(find_node(set, key, 1 + slen), SCOPE_SUB, ports, cap, got);
		}
		return got;
	}
	int family = d->kind == ALLOW_HOST_IPV4 ? AF_INET : AF_INET6;
	const size_t *lens = family == AF_INET ? set->v4_lens : set->v6_lens;
	unsigned maxlen = family == AF_INET ? 32 : 128;
	for (unsigned l = 0; l <= maxlen; l++) {
		if (lens[l] == 0)
			continue;
		uint8_t masked[16] = {0};
		memcpy(masked, d->addr, l / 8);
		if (l % 8)
			masked[l / 8] = (uint8_t)(d->addr[l / 8] & (0xff << (8 - l % 8)));
		size_t klen = addr_key(key, family, l, masked);
		got = node_ports(find_node(set, key, klen), SCOPE_APEX, ports, cap, got);
	}
	return got;
}

size_t allow_set_count(const struct allow_set *set)
{
	return set->npatterns;
}

const char *allow_set_pattern(const struct allow_set *set, size_t i)
{
	return i < set->npatterns ? set->patterns[i] : NULL;
}

int allow_set_has(const struct allow_set *set, const char *pattern)
{
	char key[KEY_MAX];
	size_t len = strlen(pattern);
	if (len + 1 > sizeof key)
		return 0;
	key[0] = 'T';
	memcpy(key + 1, pattern, len);
	return find_node(set, key, len + 1) != NULL;
}
