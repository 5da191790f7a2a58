/* The config's key tables (docs/design.md 4.1-4.4, 5) and their setters.
 *
 * Each mapping of the config is described by a table of its keys (name, setter, offset of the
 * field it fills, nested table), nginx-style; allow_cfg_walk (config.c) drives them.  A setter
 * reads one value, reports what is wrong with it at its own position, and leaves the field alone
 * on error.  Cross-key checks live beside the table they concern: allowDomains needs a sandbox
 * bound, token excludes tokenFile, and after the walk each session's merged bound. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "allowlist/config.h"
#include "allowlist/config_internal.h"
#include "allowlist/tags.h"

static int set_map(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)key;
	return allow_cfg_walk(ld, val, k->sub, (char *)base + k->off);
}

/* Checks that val is a list; returns its length, or -1 after reporting. */
static long want_list(struct cfg_loader *ld, yaml_node_t *val)
{
	if (val->type != YAML_SEQUENCE_NODE) {
		allow_cfg_err_type(ld, val, "a list");
		return -1;
	}
	return (long)allow_cfg_seq_len(val);
}

/* ---- scalar setters ---------------------------------------------------------------------- */

static int set_string(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)key;
	size_t len;
	const char *v = allow_cfg_scalar_text(ld, val, "a string", &len);
	if (v == NULL)
		return -1;
	if (len == 0) {
		allow_cfg_err_at(ld, val, "must not be empty");
		return -1;
	}
	char **dst = (char **)((char *)base + k->off);
	char *s = strdup(v);
	if (s == NULL) {
		allow_cfg_err_oom(ld, val);
		return -1;
	}
	free(*dst);
	*dst = s;
	return 0;
}

static int set_bool(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)key;
	size_t len;
	const char *v = allow_cfg_scalar_text(ld, val, "true or false", &len);
	if (v == NULL)
		return -1;
	int *dst = (int *)((char *)base + k->off);
	if (strcmp(v, "true") == 0) {
		*dst = 1;
	} else if (strcmp(v, "false") == 0) {
		*dst = 0;
	} else {
		char q[CFG_QUOTE_BUF];
		allow_cfg_err_at(ld, val, "%s is not a boolean (use true or false)",
		        allow_cfg_quote(q, sizeof q, v, len));
		return -1;
	}
	return 0;
}

static int check_min(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *val, uint64_t v,
        void (*fmt)(uint64_t, char *, size_t))
{
	if (v >= k->min)
		return 0;
	char m[32];
	if (fmt != NULL)
		fmt(k->min, m, sizeof m);
	else
		snprintf(m, sizeof m, "%llu", (unsigned long long)k->min);
	allow_cfg_err_at(ld, val, "must be at least %s", m);
	return -1;
}

static int set_count(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)key;
	size_t len;
	const char *v = allow_cfg_scalar_text(ld, val, "a whole number", &len);
	if (v == NULL)
		return -1;
	uint64_t n;
	char q[CFG_QUOTE_BUF];
	if (allow_number_parse(v, len, &n) == -1) {
		allow_cfg_err_at(
		        ld, val, "%s is not a whole number", allow_cfg_quote(q, sizeof q, v, len));
		return -1;
	}
	if (n == ALLOW_UNLIMITED) {
		/* UINT64_MAX is the "unlimited" marker; leave the key out to mean unlimited. */
		allow_cfg_err_at(ld, val, "%s is too large", allow_cfg_quote(q, sizeof q, v, len));
		return -1;
	}
	if (check_min(ld, k, val, n, NULL) == -1)
		return -1;
	*(uint64_t *)((char *)base + k->off) = n;
	return 0;
}

/* A size or a duration: parse (0, -1 malformed, -2 too large), the minimum check, the store.
 * `what` names the kind ("a size") and `usage` says how to write one. */
static int set_measure(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *val,
        void *base, const char *what, const char *usage,
        int (*parse)(const char *, size_t, uint64_t *), void (*format)(uint64_t, char *, size_t))
{
	size_t len;
	const char *v = allow_cfg_scalar_text(ld, val, what, &len);
	if (v == NULL)
		return -1;
	uint64_t n;
	char q[CFG_QUOTE_BUF];
	int rc = parse(v, len, &n);
	if (rc == -1) {
		allow_cfg_err_at(ld, val, "%s is not %s (%s)", allow_cfg_quote(q, sizeof q, v, len),
		        what, usage);
		return -1;
	}
	if (rc == -2 || n == ALLOW_UNLIMITED) {
		allow_cfg_err_at(ld, val, "%s is too large", allow_cfg_quote(q, sizeof q, v, len));
		return -1;
	}
	if (check_min(ld, k, val, n, format) == -1)
		return -1;
	*(uint64_t *)((char *)base + k->off) = n;
	return 0;
}

static int set_size(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)key;
	return set_measure(ld, k, val, base, "a size", "use B, KiB, MiB, GiB", allow_size_parse,
	        allow_size_format);
}

static int set_duration(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)key;
	return set_measure(ld, k, val, base, "a duration", "use ms, s, m or h, e.g. 10s",
	        allow_duration_parse, allow_duration_format);
}

/* ---- addresses --------------------------------------------------------------------------- */

/* Reads a "HOST:PORT" (or with default_port, "IP") scalar into a new string. */
static char *addr_text(struct cfg_loader *ld, yaml_node_t *val, uint16_t default_port)
{
	size_t len;
	const char *v = allow_cfg_scalar_text(ld, val, "an address", &len);
	if (v == NULL)
		return NULL;
	struct sockaddr_storage ss;
	socklen_t sl;
	char why[128];
	/* A default port marks a server address, where ":0" means nothing. */
	int rc = default_port != 0
	                 ? allow_config_server_parse(v, default_port, &ss, &sl, why, sizeof why)
	                 : allow_config_addr_parse(v, default_port, &ss, &sl, why, sizeof why);
	if (rc == -1) {
		char q[CFG_QUOTE_BUF];
		allow_cfg_err_at(ld, val, "%s is not a valid address: %s",
		        allow_cfg_quote(q, sizeof q, v, len), why);
		return NULL;
	}
	char *s = strdup(v);
	if (s == NULL)
		allow_cfg_err_oom(ld, val);
	return s;
}

static int set_addr(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)key;
	char *s = addr_text(ld, val, 0);
	if (s == NULL)
		return -1;
	char **dst = (char **)((char *)base + k->off);
	free(*dst);
	*dst = s;
	return 0;
}

/* A list of addresses.  Listener lists (no default port) need at least one entry; a server list
 * may be empty, which means /etc/resolv.conf. */
static int set_addr_list(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)key;
	long n = want_list(ld, val);
	if (n == -1)
		return -1;
	char ***dst = (char ***)((char *)base + k->off);
	size_t *dn = (size_t *)((char *)base + k->off_n);
	if (n == 0 && k->default_port == 0) {
		allow_cfg_err_at(ld, val, "needs at least one address");
		return -1;
	}
	char **list = calloc((size_t)n + 1, sizeof *list);
	if (list == NULL) {
		allow_cfg_err_oom(ld, val);
		return -1;
	}
	size_t got = 0;
	int rc = 0;
	for (long i = 0; i < n; i++) {
		yaml_node_t *item = allow_cfg_node_get(ld, val->data.sequence.items.start[i]);
		size_t old = allow_cfg_path_push_index(ld, (size_t)i);
		char *s = addr_text(ld, item, k->default_port);
		allow_cfg_path_pop(ld, old);
		if (s == NULL)
			rc = -1;
		else
			list[got++] = s;
	}
	*dst = list;
	*dn = got;
	return rc;
}

static int set_control(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)key;
	size_t len;
	const char *v = allow_cfg_scalar_text(ld, val, "unix:PATH", &len);
	if (v == NULL)
		return -1;
	struct sockaddr_un sun;
	char q[CFG_QUOTE_BUF];
	/* The control API can create sessions: it is only offered on a Unix socket (mode 0600),
	 * never on a TCP port that any local user could reach. */
	if (len <= 5 || memcmp(v, "unix:", 5) != 0) {
		allow_cfg_err_at(ld, val,
		        "%s must be unix:PATH (the control API listens only on a Unix socket)",
		        allow_cfg_quote(q, sizeof q, v, len));
		return -1;
	}
	if (len - 5 >= sizeof sun.sun_path) {
		allow_cfg_err_at(ld, val, "the socket path is longer than %zu bytes",
		        sizeof sun.sun_path - 1);
		return -1;
	}
	return set_string(ld, k, key, val, base);
}

/* listen.dnsAnswers: real or mapped. */
static int set_dns_answers(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)key;
	size_t len;
	const char *v = allow_cfg_scalar_text(ld, val, "real or mapped", &len);
	if (v == NULL)
		return -1;
	enum allow_dns_answers *dst = (enum allow_dns_answers *)((char *)base + k->off);
	if (strcmp(v, "real") == 0) {
		*dst = ALLOW_DNS_ANSWERS_REAL;
	} else if (strcmp(v, "mapped") == 0) {
		*dst = ALLOW_DNS_ANSWERS_MAPPED;
	} else {
		char q[CFG_QUOTE_BUF];
		allow_cfg_err_at(ld, val,
		        "%s is not a DNS answer mode (use real: the resolved addresses that pass "
		        "the address policy, or mapped: an address from 198.18.0.0/15 per name)",
		        allow_cfg_quote(q, sizeof q, v, len));
		return -1;
	}
	return 0;
}

/* A list of CIDRs (or single addresses) into base+off / base+off_n. */
static int set_cidrs(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)key;
	long n = want_list(ld, val);
	if (n == -1)
		return -1;
	struct allow_cidr **dst = (struct allow_cidr **)((char *)base + k->off);
	size_t *dn = (size_t *)((char *)base + k->off_n);
	struct allow_cidr *list = calloc((size_t)n + 1, sizeof *list);
	if (list == NULL) {
		allow_cfg_err_oom(ld, val);
		return -1;
	}
	size_t got = 0;
	int rc = 0;
	for (long i = 0; i < n; i++) {
		yaml_node_t *item = allow_cfg_node_get(ld, val->data.sequence.items.start[i]);
		size_t old = allow_cfg_path_push_index(ld, (size_t)i);
		size_t len;
		const char *v = allow_cfg_scalar_text(ld, item, "an address or CIDR", &len);
		char why[128];
		if (v == NULL) {
			rc = -1;
		} else if (allow_cidr_parse(v, len, &list[got], why, sizeof why) == -1) {
			char q[CFG_QUOTE_BUF];
			allow_cfg_err_at(ld, item, "%s is not an address or CIDR: %s",
			        allow_cfg_quote(q, sizeof q, v, len), why);
			rc = -1;
		} else {
			got++;
		}
		allow_cfg_path_pop(ld, old);
	}
	*dst = list;
	*dn = got;
	return rc;
}

/* dns.hosts: NAME -> [IP, ...]. */
static int set_hosts(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)key;
	(void)k;
	struct allow_dns_config *dns = base;
	if (val->type != YAML_MAPPING_NODE) {
		allow_cfg_err_type(ld, val, "a mapping of host names to address lists");
		return -1;
	}
	size_t n = allow_cfg_map_len(val);
	struct allow_hosts_entry *hosts = calloc(n + 1, sizeof *hosts);
	yaml_node_t **keys = calloc(n + 1, sizeof *keys);
	if (hosts == NULL || keys == NULL) {
		free(hosts);
		free(keys);
		allow_cfg_err_oom(ld, val);
		return -1;
	}
	size_t got = 0;
	int rc = 0;
	for (yaml_node_pair_t *p = val->data.mapping.pairs.start; p < val->data.mapping.pairs.top;
	        p++) {
		yaml_node_t *hk = allow_cfg_node_get(ld, p->key);
		yaml_node_t *hv = allow_cfg_node_get(ld, p->value);
		size_t klen;
		const char *name = allow_cfg_key_text(ld, hk, &klen);
		if (name == NULL) {
			rc = -1;
			continue;
		}
		size_t old = allow_cfg_path_push(ld, name, klen);
		struct allow_hosts_entry *e = &hosts[got];
		struct allow_dest d;
		enum allow_canon_err ce = allow_canon_host(name, klen, &d);
		char q[CFG_QUOTE_BUF];
		size_t dup = got;
		if (ce == ALLOW_CANON_OK && d.kind == ALLOW_HOST_NAME)
			for (dup = 0; dup < got; dup++)
				if (strcmp(hosts[dup].name, d.host) == 0)
					break;
		if (ce != ALLOW_CANON_OK) {
			allow_cfg_err_at(ld, hk, "%s is not a host name: %s",
			        allow_cfg_quote(q, sizeof q, name, klen), allow_canon_strerror(ce));
			rc = -1;
		} else if (d.kind != ALLOW_HOST_NAME) {
			allow_cfg_err_at(ld, hk,
			        "%s is an address; dns.hosts maps names to addresses",
			        allow_cfg_quote(q, sizeof q, name, klen));
			rc = -1;
		} else if (dup < got) {
			allow_cfg_err_at(ld, hk, "duplicate key (first at %lu:%lu)",
			        (unsigned long)keys[dup]->start_mark.line + 1,
			        (unsigned long)keys[dup]->start_mark.column + 1);
			rc = -1;
		} else if (want_list(ld, hv) == -1) {
			rc = -1;
		} else if (allow_cfg_seq_len(hv) == 0 ||
		           allow_cfg_seq_len(hv) > ALLOW_DNS_HOST_ADDRS) {
			allow_cfg_err_at(ld, hv, "needs 1 to %d addresses", ALLOW_DNS_HOST_ADDRS);
			rc = -1;
		} else {
			int bad = 0;
			for (size_t i = 0; i < allow_cfg_seq_len(hv); i++) {
				yaml_node_t *item =
				        allow_cfg_node_get(ld, hv->data.sequence.items.start[i]);
				size_t iold = allow_cfg_path_push_index(ld, i);
				size_t len;
				const char *v =
				        allow_cfg_scalar_text(ld, item, "an IP address", &len);
				char why[128];
				if (v == NULL) {
					bad = 1;
				} else if (memchr(v, '/', len) != NULL ||
				           allow_cidr_parse(v, len, &e->addrs[e->naddrs], why,
				                   sizeof why) == -1) {
					allow_cfg_err_at(ld, item, "%s is not an IP address",
					        allow_cfg_quote(q, sizeof q, v, len));
					bad = 1;
				} else {
					e->naddrs++;
				}
				allow_cfg_path_pop(ld, iold);
			}
			if (bad) {
				rc = -1;
			} else {
				memcpy(e->name, d.host, strlen(d.host) + 1);
				keys[got] = hk;
				got++;
			}
		}
		if (e == &hosts[got])
			memset(e, 0, sizeof *e); /* a failed entry's addresses are not kept */
		allow_cfg_path_pop(ld, old);
	}
	free(keys);
	free(dns->hosts);
	dns->hosts = hosts;
	dns->nhosts = got;
	return rc;
}

/* A name under bounds: or sessions: ends up in Proxy-Authorization user names, response headers
 * and audit records, so it is kept to characters that need no escaping anywhere. */
static int name_ok(const char *s, size_t len)
{
	if (len == 0 || len > CFG_NAME_MAX)
		return 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		            c == '-' || c == '_' || c == '.'))
			return 0;
	}
	return 1;
}

/* ---- bounds ------------------------------------------------------------------------------ */

static int bound_init(struct cfg_loader *ld, struct cfg_bound_work *w, yaml_node_t *at)
{
	if (w->ready)
		return 0;
	if (allow_bound_init(&w->b) == -1) {
		allow_cfg_err_oom(ld, at);
		return -1;
	}
	w->ready = 1;
	return 0;
}

/* Which set of a bound a pattern list fills: k->kind is the allow_set_kind, and inspect (an
 * allow-style list) is told apart by this value. */
#define CFG_SET_INSPECT 0x100

/* allowDomains / domains / inspect: a list of patterns, each checked by the pattern module. */
static int set_patterns(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	struct cfg_bound_work *w = base;
	long n = want_list(ld, val);
	if (n == -1)
		return -1;
	struct allow_set **set = k->kind == CFG_SET_INSPECT   ? &w->b.inspect
	                         : k->kind == ALLOW_SET_ALLOW ? &w->b.allow
	                                                      : &w->b.deny;
	if (k->kind == ALLOW_SET_ALLOW)
		w->allow_key = key;
	if (*set == NULL) {
		*set = allow_set_new(
		        k->kind == ALLOW_SET_DENY ? ALLOW_SET_DENY : ALLOW_SET_ALLOW);
		if (*set == NULL) {
			allow_cfg_err_oom(ld, val);
			return -1;
		}
	}
	int rc = 0;
	for (long i = 0; i < n; i++) {
		yaml_node_t *item = allow_cfg_node_get(ld, val->data.sequence.items.start[i]);
		size_t old = allow_cfg_path_push_index(ld, (size_t)i);
		size_t len;
		const char *v = allow_cfg_scalar_text(ld, item, "a host pattern", &len);
		char why[256];
		why[0] = '\0';
		if (v == NULL) {
			rc = -1;
		} else if (allow_set_add(*set, v, why, sizeof why) == -1) {
			char q[CFG_QUOTE_BUF];
			allow_cfg_err_at(ld, item, "%s is not a valid pattern: %s",
			        allow_cfg_quote(q, sizeof q, v, len), why[0] ? why : "rejected");
			rc = -1;
		}
		allow_cfg_path_pop(ld, old);
	}
	return rc;
}

static int set_actions(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)k;
	(void)key;
	struct cfg_bound_work *w = base;
	long n = want_list(ld, val);
	if (n == -1)
		return -1;
	int rc = 0;
	for (long i = 0; i < n; i++) {
		yaml_node_t *item = allow_cfg_node_get(ld, val->data.sequence.items.start[i]);
		size_t old = allow_cfg_path_push_index(ld, (size_t)i);
		size_t len;
		const char *v = allow_cfg_scalar_text(ld, item, "an action tag", &len);
		unsigned mask = 0;
		if (v == NULL) {
			rc = -1;
		} else if (allow_tag_parse(v, len, &mask) == -1) {
			char q[CFG_QUOTE_BUF];
			allow_cfg_err_at(ld, item,
			        "%s is not an action (use all, read, write, dns, git:fetch, "
			        "git:push, http:read, http:write, net:raw, ssh:read, ssh:write)",
			        allow_cfg_quote(q, sizeof q, v, len));
			rc = -1;
		} else {
			w->b.deny_actions |= mask;
		}
		allow_cfg_path_pop(ld, old);
	}
	return rc;
}

static int set_enforce(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)k;
	(void)key;
	struct cfg_bound_work *w = base;
	size_t len;
	const char *v = allow_cfg_scalar_text(ld, val, "guard or sandbox", &len);
	if (v == NULL)
		return -1;
	if (strcmp(v, "guard") == 0) {
		w->b.enforce = ALLOW_ENFORCE_GUARD;
	} else if (strcmp(v, "sandbox") == 0) {
		w->b.enforce = ALLOW_ENFORCE_SANDBOX;
	} else {
		char q[CFG_QUOTE_BUF];
		allow_cfg_err_at(ld, val, "%s is not an enforcement mode (use guard or sandbox)",
		        allow_cfg_quote(q, sizeof q, v, len));
		return -1;
	}
	return 0;
}

static const struct cfg_key network_keys[] = {
        {.name = "allowDomains", .set = set_patterns, .kind = ALLOW_SET_ALLOW},
        {.name = "domains", .set = set_patterns, .kind = ALLOW_SET_DENY},
        {.name = "actions", .set = set_actions},
        {.name = "enforce", .set = set_enforce},
        {.name = "inspect", .set = set_patterns, .kind = CFG_SET_INSPECT},
        {.name = NULL},
};

static int set_network(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)k;
	(void)key;
	struct cfg_bound_work *w = base;
	if (allow_cfg_walk(ld, val, network_keys, w) == -1)
		return -1;
	if (w->allow_key != NULL && w->b.enforce != ALLOW_ENFORCE_SANDBOX) {
		size_t old = allow_cfg_path_push(ld, "allowDomains", 12);
		/* A guard bound is advisory: an allow list there would look enforced and not be. */
		allow_cfg_err_at(ld, w->allow_key,
		        "allowDomains needs enforce: sandbox in the same bound (egressd enforces "
		        "only sandbox bounds)");
		allow_cfg_path_pop(ld, old);
		return -1;
	}
	return 0;
}

static const struct cfg_key bound_keys[] = {
        {.name = "network", .set = set_network},
        {.name = NULL},
};

static int bound_read(struct cfg_loader *ld, yaml_node_t *val, struct cfg_bound_work *w)
{
	if (val->type != YAML_MAPPING_NODE) {
		allow_cfg_err_type(ld, val, "a mapping");
		return -1;
	}
	if (bound_init(ld, w, val) == -1)
		return -1;
	return allow_cfg_walk(ld, val, bound_keys, w);
}

/* Shared by bounds: and sessions:, whose keys are names the user chooses.  Returns the name of
 * pair p, or NULL (reported) when it is not a valid name or repeats one of prev[0..nprev). */
static const char *user_name(struct cfg_loader *ld, yaml_node_t *key, const char *what,
        yaml_node_t **prev, size_t nprev, size_t *len)
{
	const char *name = allow_cfg_key_text(ld, key, len);
	if (name == NULL)
		return NULL;
	if (!name_ok(name, *len)) {
		char q[CFG_QUOTE_BUF];
		size_t old = allow_cfg_path_push(ld, name, *len);
		allow_cfg_err_at(ld, key,
		        "%s is not a valid %s name (1-%d letters, digits, '-', '_' or '.')",
		        allow_cfg_quote(q, sizeof q, name, *len), what, CFG_NAME_MAX);
		allow_cfg_path_pop(ld, old);
		return NULL;
	}
	for (size_t i = 0; i < nprev; i++) {
		if (prev[i]->data.scalar.length == *len &&
		        memcmp(prev[i]->data.scalar.value, name, *len) == 0) {
			size_t old = allow_cfg_path_push(ld, name, *len);
			allow_cfg_err_at(ld, key, "duplicate key (first at %lu:%lu)",
			        (unsigned long)prev[i]->start_mark.line + 1,
			        (unsigned long)prev[i]->start_mark.column + 1);
			allow_cfg_path_pop(ld, old);
			return NULL;
		}
	}
	return name;
}

static int set_bounds(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)k;
	(void)key;
	(void)base;
	if (val->type != YAML_MAPPING_NODE) {
		allow_cfg_err_type(ld, val, "a mapping of bound names to bounds");
		return -1;
	}
	size_t n = allow_cfg_map_len(val);
	ld->bounds = calloc(n + 1, sizeof *ld->bounds);
	yaml_node_t **keys = calloc(n + 1, sizeof *keys);
	if (ld->bounds == NULL || keys == NULL) {
		free(keys);
		allow_cfg_err_oom(ld, val);
		return -1;
	}
	for (yaml_node_pair_t *p = val->data.mapping.pairs.start; p < val->data.mapping.pairs.top;
	        p++) {
		yaml_node_t *bk = allow_cfg_node_get(ld, p->key);
		size_t len;
		const char *name = user_name(ld, bk, "bound", keys, ld->nbounds, &len);
		if (name == NULL)
			continue;
		struct cfg_named_bound *nb = &ld->bounds[ld->nbounds];
		nb->name = strdup(name);
		if (nb->name == NULL) {
			allow_cfg_err_oom(ld, bk);
			continue;
		}
		nb->key = bk;
		keys[ld->nbounds++] = bk;
		/* Registered even when its body has errors, so that sessions naming it do not add
		 * a misleading "unknown bound" to the real error. */
		size_t old = allow_cfg_path_push(ld, name, len);
		bound_read(ld, allow_cfg_node_get(ld, p->value), &nb->w);
		allow_cfg_path_pop(ld, old);
	}
	free(keys);
	return 0;
}

/* ---- sessions ---------------------------------------------------------------------------- */

static int set_bound_names(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)k;
	(void)key;
	struct cfg_session_work *w = base;
	long n = want_list(ld, val);
	if (n == -1)
		return -1;
	int rc = 0;
	for (long i = 0; i < n; i++) {
		yaml_node_t *item = allow_cfg_node_get(ld, val->data.sequence.items.start[i]);
		size_t old = allow_cfg_path_push_index(ld, (size_t)i);
		size_t len;
		if (allow_cfg_scalar_text(ld, item, "a bound name", &len) == NULL)
			rc = -1;
		allow_cfg_path_pop(ld, old);
	}
	/* Names are resolved after the walk: bounds: may come after sessions: in the file. */
	if (rc == 0)
		w->bounds = val;
	return rc;
}

static int set_inline_bound(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)k;
	(void)key;
	struct cfg_session_work *w = base;
	return bound_read(ld, val, &w->inl);
}

static int token_both(struct cfg_loader *ld, struct cfg_session_work *w, yaml_node_t *key)
{
	if (w->token_key == NULL || w->token_file_key == NULL)
		return 0;
	allow_cfg_err_at(ld, key, "give token or tokenFile, not both");
	return -1;
}

static int set_token(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)k;
	struct cfg_session_work *w = base;
	w->token_key = key;
	if (token_both(ld, w, key) == -1)
		return -1;
	size_t len;
	const char *v = allow_cfg_scalar_text(ld, val, "a token string", &len);
	if (v == NULL)
		return -1;
	if (len == 0) {
		allow_cfg_err_at(ld, val, "must not be empty");
		return -1;
	}
	w->s.token = strdup(v);
	if (w->s.token == NULL) {
		allow_cfg_err_oom(ld, val);
		return -1;
	}
	return 0;
}

/* A file path value into full: as written when absolute, else relative to the config's folder.
 * 0, or -1 after reporting. */
static int path_read(struct cfg_loader *ld, yaml_node_t *val, char *full, size_t cap)
{
	size_t len;
	const char *v = allow_cfg_scalar_text(ld, val, "a file path", &len);
	if (v == NULL)
		return -1;
	char q[CFG_QUOTE_BUF];
	if (len == 0) {
		allow_cfg_err_at(ld, val, "must not be empty");
		return -1;
	}
	int n;
	if (v[0] == '/' || ld->dir == NULL)
		n = snprintf(full, cap, "%s", v);
	else
		n = snprintf(full, cap, "%s/%s", ld->dir, v);
	if (n < 0 || (size_t)n >= cap) {
		allow_cfg_err_at(
		        ld, val, "%s: the path is too long", allow_cfg_quote(q, sizeof q, v, len));
		return -1;
	}
	return 0;
}

/* Reads a token file: at most CFG_TOKEN_MAX bytes, one line, one trailing newline dropped. */
static int read_token_file(const char *path, char **out, char *why, size_t whylen)
{
	/* O_NONBLOCK: opening a FIFO must not hang the loader; fstat then refuses it. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd == -1) {
		snprintf(why, whylen, "%s", strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "not a regular file");
		close(fd);
		return -1;
	}
	char buf[CFG_TOKEN_MAX + 2];
	size_t len = 0;
	for (;;) {
		ssize_t r = read(fd, buf + len, sizeof buf - len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			snprintf(why, whylen, "%s", strerror(errno));
			close(fd);
			return -1;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len == sizeof buf)
			break;
	}
	close(fd);
	if (len > CFG_TOKEN_MAX + 1 || (len == CFG_TOKEN_MAX + 1 && buf[len - 1] != '\n')) {
		snprintf(why, whylen, "longer than %d bytes", CFG_TOKEN_MAX);
		explicit_bzero(buf, sizeof buf);
		return -1;
	}
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len > 0 && buf[len - 1] == '\r')
		len--;
	const char *bad = NULL;
	if (len == 0)
		bad = "the file is empty";
	else if (memchr(buf, '\0', len) != NULL)
		bad = "the token contains a NUL byte";
	else if (memchr(buf, '\n', len) != NULL || memchr(buf, '\r', len) != NULL)
		bad = "the token must be one line";
	if (bad != NULL) {
		snprintf(why, whylen, "%s", bad);
		explicit_bzero(buf, sizeof buf);
		return -1;
	}
	*out = malloc(len + 1);
	if (*out != NULL) {
		memcpy(*out, buf, len);
		(*out)[len] = '\0';
	}
	explicit_bzero(buf, sizeof buf);
	if (*out == NULL) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	return 0;
}

static int set_token_file(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)k;
	struct cfg_session_work *w = base;
	w->token_file_key = key;
	if (token_both(ld, w, key) == -1)
		return -1;
	if (ld->body) {
		/* The control API answers with the session's token: a file named in a request
		 * would be read and handed back to whoever sent it. */
		allow_cfg_err_at(ld, key, "not accepted in a request body (give token instead)");
		return -1;
	}
	char full[CFG_FILE_PATH_MAX];
	if (path_read(ld, val, full, sizeof full) == -1)
		return -1;
	char why[128];
	if (read_token_file(full, &w->s.token, why, sizeof why) == -1) {
		/* The resolved path, whole: which folder a relative path was taken from is the
		 * point of the message. */
		char qfull[CFG_MSG_MAX / 2];
		allow_cfg_err_at(ld, val, "cannot use %s as a token file: %s",
		        allow_cfg_quote(qfull, sizeof qfull, full, strlen(full)), why);
		return -1;
	}
	return 0;
}

static const struct cfg_key auth_keys[] = {
        {.name = "token", .set = set_token},
        {.name = "tokenFile", .set = set_token_file},
        {.name = NULL},
};

static const struct cfg_key session_limit_keys[] = {
        {.name = "maxConnections",
                .set = set_count,
                .off = offsetof(struct allow_limits, max_connections)},
        {.name = "maxConnectionsTotal",
                .set = set_count,
                .off = offsetof(struct allow_limits, max_connections_total)},
        {.name = "maxBytesOut",
                .set = set_size,
                .off = offsetof(struct allow_limits, max_bytes_out)},
        {.name = "maxBytesIn", .set = set_size, .off = offsetof(struct allow_limits, max_bytes_in)},
        {.name = "maxNewHostsPerMinute",
                .set = set_count,
                .off = offsetof(struct allow_limits, max_new_hosts_per_minute)},
        {.name = "expiresIn",
                .set = set_duration,
                .off = offsetof(struct allow_limits, expires_in_ms)},
        {.name = NULL},
};

static const struct cfg_key session_keys[] = {
        {.name = "bounds", .set = set_bound_names},
        {.name = "bound", .set = set_inline_bound},
        {.name = "limits",
                .set = set_map,
                .off = offsetof(struct cfg_session_work, s.limits),
                .sub = session_limit_keys},
        {.name = "auth", .set = set_map, .sub = auth_keys},
        {.name = "clients",
                .set = set_cidrs,
                .off = offsetof(struct cfg_session_work, s.clients),
                .off_n = offsetof(struct cfg_session_work, s.nclients)},
        {.name = NULL},
};

/* Reads one session into the next slot of ld->sw (allocated by the caller).  key is where
 * errors about the session as a whole point; val is its mapping, or NULL for an empty one. */
static void session_read(
        struct cfg_loader *ld, const char *name, yaml_node_t *key, yaml_node_t *val)
{
	struct cfg_session_work *w = &ld->sw[ld->nsw];
	w->s.name = strdup(name);
	if (w->s.name == NULL) {
		allow_cfg_err_oom(ld, key);
		return;
	}
	allow_limits_init(&w->s.limits);
	w->key = key;
	ld->nsw++;
	if (val != NULL)
		allow_cfg_walk(ld, val, session_keys, w);
}

static int set_sessions(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)k;
	(void)key;
	(void)base;
	if (val->type != YAML_MAPPING_NODE) {
		allow_cfg_err_type(ld, val, "a mapping of session names to sessions");
		return -1;
	}
	size_t n = allow_cfg_map_len(val);
	ld->sw = calloc(n + 1, sizeof *ld->sw);
	yaml_node_t **keys = calloc(n + 1, sizeof *keys);
	if (ld->sw == NULL || keys == NULL) {
		free(keys);
		allow_cfg_err_oom(ld, val);
		return -1;
	}
	for (yaml_node_pair_t *p = val->data.mapping.pairs.start; p < val->data.mapping.pairs.top;
	        p++) {
		yaml_node_t *sk = allow_cfg_node_get(ld, p->key);
		size_t len;
		const char *name = user_name(ld, sk, "session", keys, ld->nsw, &len);
		if (name == NULL)
			continue;
		keys[ld->nsw] = sk;
		size_t old = allow_cfg_path_push(ld, name, len);
		session_read(ld, name, sk, allow_cfg_node_get(ld, p->value));
		allow_cfg_path_pop(ld, old);
	}
	free(keys);
	return 0;
}

void allow_cfg_session_body(struct cfg_loader *ld, const char *name, yaml_node_t *root)
{
	if (!name_ok(name, strlen(name))) {
		char q[CFG_QUOTE_BUF];
		allow_cfg_err_at(ld, NULL,
		        "%s is not a valid session name (1-%d letters, digits, '-', '_' or '.')",
		        allow_cfg_quote(q, sizeof q, name, strlen(name)), CFG_NAME_MAX);
		return;
	}
	ld->sw = calloc(1, sizeof *ld->sw);
	if (ld->sw == NULL) {
		allow_cfg_err_oom(ld, NULL);
		return;
	}
	session_read(ld, name, root, root);
}

/* The key path of a session as a whole: "sessions.NAME" in a config, empty in a body. */
static void path_session(struct cfg_loader *ld, const struct cfg_session_work *w)
{
	allow_cfg_path_pop(ld, 0);
	if (ld->body)
		return;
	allow_cfg_path_push(ld, "sessions", 8);
	allow_cfg_path_push(ld, w->s.name, strlen(w->s.name));
}

/* The bound named want: this file's bounds: first, then (for a body) the running config's.
 * NULL when there is none; a bound whose own body failed is found but has no allow_bound. */
static const struct allow_bound *bound_find(struct cfg_loader *ld, const char *want, int *found)
{
	*found = 1;
	for (size_t b = 0; b < ld->nbounds; b++)
		if (strcmp(ld->bounds[b].name, want) == 0)
			return ld->bounds[b].w.ready ? &ld->bounds[b].w.b : NULL;
	for (size_t b = 0; ld->base != NULL && b < ld->base->nbounds; b++)
		if (strcmp(ld->base->bounds[b].name, want) == 0)
			return &ld->base->bounds[b].bound;
	*found = 0;
	return NULL;
}

/* "defined under bounds: a, b" or "no bounds are defined", for an unknown name. */
static void bound_names(struct cfg_loader *ld, char *buf, size_t cap)
{
	size_t n = ld->nbounds + (ld->base != NULL ? ld->base->nbounds : 0);
	int o = snprintf(buf, cap, "%s", n ? "defined under bounds: " : "no bounds are defined");
	for (size_t b = 0; b < n && o > 0 && (size_t)o < cap; b++) {
		const char *name = b < ld->nbounds ? ld->bounds[b].name
		                                   : ld->base->bounds[b - ld->nbounds].name;
		int wr = snprintf(buf + o, cap - (size_t)o, "%s%s", b ? ", " : "", name);
		if (wr < 0)
			break;
		o += wr;
	}
}

/* Merges a session's named bounds in order, then its inline bound (4.3).  0, or -1 when a name
 * is unknown or memory ran out (reported). */
static int session_merge(struct cfg_loader *ld, struct cfg_session_work *w)
{
	if (allow_bound_init(&w->s.bound) == -1) {
		allow_cfg_err_oom(ld, w->key);
		return -1;
	}
	w->bound_ready = 1;
	int rc = 0;
	if (w->bounds != NULL) {
		size_t old = allow_cfg_path_push(ld, "bounds", 6);
		for (size_t j = 0; j < allow_cfg_seq_len(w->bounds); j++) {
			yaml_node_t *item =
			        allow_cfg_node_get(ld, w->bounds->data.sequence.items.start[j]);
			const char *want = (const char *)item->data.scalar.value;
			size_t iold = allow_cfg_path_push_index(ld, j);
			int found;
			const struct allow_bound *b = bound_find(ld, want, &found);
			if (!found) {
				char q[CFG_QUOTE_BUF], known[256];
				bound_names(ld, known, sizeof known);
				allow_cfg_err_at(ld, item, "unknown bound %s (%s)",
				        allow_cfg_quote(
				                q, sizeof q, want, item->data.scalar.length),
				        known);
				rc = -1;
			} else if (b != NULL && allow_bound_merge(&w->s.bound, b) == -1) {
				allow_cfg_err_oom(ld, item);
				rc = -1;
			}
			allow_cfg_path_pop(ld, iold);
		}
		allow_cfg_path_pop(ld, old);
	}
	if (w->inl.ready && allow_bound_merge(&w->s.bound, &w->inl.b) == -1) {
		allow_cfg_err_oom(ld, w->key);
		rc = -1;
	}
	return rc;
}

void allow_cfg_sessions_finish(struct cfg_loader *ld)
{
	for (size_t i = 0; i < ld->nsw; i++) {
		struct cfg_session_work *w = &ld->sw[i];
		path_session(ld, w);
		session_merge(ld, w);
	}
	allow_cfg_path_pop(ld, 0);
}

/* ---- tls --------------------------------------------------------------------------------- */

/* A file path into base + off (resolved, see path_read) and its place into base + off_at.  The
 * file is not opened here: proxy/ca.c reads it and reports what is wrong at that place. */
static int set_file(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)key;
	char full[CFG_FILE_PATH_MAX];
	if (path_read(ld, val, full, sizeof full) == -1)
		return -1;
	char *s = strdup(full);
	if (s == NULL) {
		allow_cfg_err_oom(ld, val);
		return -1;
	}
	char **dst = (char **)((char *)base + k->off);
	free(*dst);
	*dst = s;
	struct allow_pos *at = (struct allow_pos *)((char *)base + k->off_at);
	at->line = (unsigned long)val->start_mark.line + 1;
	at->col = (unsigned long)val->start_mark.column + 1;
	return 0;
}

/* tls.upstreamCA: "system" (the default trust store; a file of that name is "./system") or a
 * CA bundle file. */
static int set_upstream_ca(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	if (val->type != YAML_SCALAR_NODE) {
		allow_cfg_err_type(ld, val, "system or a CA bundle file");
		return -1;
	}
	if (strcmp((const char *)val->data.scalar.value, "system") == 0) {
		struct allow_tls_config *tls = base;
		tls->upstream_ca_at.line = (unsigned long)val->start_mark.line + 1;
		tls->upstream_ca_at.col = (unsigned long)val->start_mark.column + 1;
		return 0;
	}
	return set_file(ld, k, key, val, base);
}

static const struct cfg_key tls_ca_keys[] = {
        {.name = "cert",
                .set = set_file,
                .off = offsetof(struct allow_tls_config, ca_cert),
                .off_at = offsetof(struct allow_tls_config, ca_cert_at)},
        {.name = "key",
                .set = set_file,
                .off = offsetof(struct allow_tls_config, ca_key),
                .off_at = offsetof(struct allow_tls_config, ca_key_at)},
        {.name = NULL},
};

/* 1 when mapping m has the key name. */
static int map_has(struct cfg_loader *ld, yaml_node_t *m, const char *name)
{
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top;
	        p++) {
		yaml_node_t *kn = allow_cfg_node_get(ld, p->key);
		if (kn->type == YAML_SCALAR_NODE &&
		        strcmp((const char *)kn->data.scalar.value, name) == 0)
			return 1;
	}
	return 0;
}

/* tls.ca: {cert, key}, both required: a certificate without its key cannot sign a leaf. */
static int set_tls_ca(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)k;
	if (allow_cfg_walk(ld, val, tls_ca_keys, base) == -1)
		return -1;
	int cert = map_has(ld, val, "cert"), pkey = map_has(ld, val, "key");
	if (cert && pkey)
		return 0;
	allow_cfg_err_at(ld, key,
	        "needs both cert and key (the CA certificate and its private "
	        "key; egressd ca init DIR writes ca.pem and ca.key)");
	return -1;
}

static const struct cfg_key tls_keys[] = {
        {.name = "ca", .set = set_tls_ca},
        {.name = "upstreamCA",
                .set = set_upstream_ca,
                .off = offsetof(struct allow_tls_config, upstream_ca),
                .off_at = offsetof(struct allow_tls_config, upstream_ca_at)},
        {.name = "refuseECH", .set = set_bool, .off = offsetof(struct allow_tls_config, refuse_ech)},
        {.name = NULL},
};

/* ---- the top level ----------------------------------------------------------------------- */

static const struct cfg_key listen_keys[] = {
        {.name = "proxy",
                .set = set_addr_list,
                .off = offsetof(struct allow_config, listen_proxy),
                .off_n = offsetof(struct allow_config, nlisten_proxy)},
        {.name = "socks5",
                .set = set_addr_list,
                .off = offsetof(struct allow_config, listen_socks5),
                .off_n = offsetof(struct allow_config, nlisten_socks5)},
        {.name = "transparent",
                .set = set_addr_list,
                .off = offsetof(struct allow_config, listen_transparent),
                .off_n = offsetof(struct allow_config, nlisten_transparent)},
        {.name = "dns",
                .set = set_addr_list,
                .off = offsetof(struct allow_config, listen_dns),
                .off_n = offsetof(struct allow_config, nlisten_dns)},
        {.name = "dnsAnswers",
                .set = set_dns_answers,
                .off = offsetof(struct allow_config, listen_dns_answers)},
        {.name = "control",
                .set = set_control,
                .off = offsetof(struct allow_config, listen_control)},
        {.name = "metrics", .set = set_addr, .off = offsetof(struct allow_config, listen_metrics)},
        {.name = NULL},
};

static const struct cfg_key dns_keys[] = {
        /* min is the default port of a server given without one. */
        {.name = "servers",
                .set = set_addr_list,
                .off = offsetof(struct allow_dns_config, servers),
                .off_n = offsetof(struct allow_dns_config, nservers),
                .default_port = 53},
        {.name = "hosts", .set = set_hosts},
        {.name = "allowAddresses",
                .set = set_cidrs,
                .off = offsetof(struct allow_dns_config, allow_addresses),
                .off_n = offsetof(struct allow_dns_config, nallow_addresses)},
        {.name = "denyAddresses",
                .set = set_cidrs,
                .off = offsetof(struct allow_dns_config, deny_addresses),
                .off_n = offsetof(struct allow_dns_config, ndeny_addresses)},
        {.name = "timeout",
                .set = set_duration,
                .off = offsetof(struct allow_dns_config, timeout_ms),
                .min = 1},
        {.name = NULL},
};

static const struct cfg_key limits_keys[] = {
        {.name = "maxClients",
                .set = set_count,
                .off = offsetof(struct allow_global_limits, max_clients),
                .min = 1},
        {.name = "maxClientsPerSource",
                .set = set_count,
                .off = offsetof(struct allow_global_limits, max_clients_per_source),
                .min = 1},
        {.name = "maxHeaderBytes",
                .set = set_size,
                .off = offsetof(struct allow_global_limits, max_header_bytes),
                .min = 1024},
        {.name = "maxHeaders",
                .set = set_count,
                .off = offsetof(struct allow_global_limits, max_headers),
                .min = 1},
        {.name = "headerTimeout",
                .set = set_duration,
                .off = offsetof(struct allow_global_limits, header_timeout_ms),
                .min = 1},
        {.name = "idleTimeout",
                .set = set_duration,
                .off = offsetof(struct allow_global_limits, idle_timeout_ms),
                .min = 1},
        {.name = "connectTimeout",
                .set = set_duration,
                .off = offsetof(struct allow_global_limits, connect_timeout_ms),
                .min = 1},
        {.name = "shutdownGrace",
                .set = set_duration,
                .off = offsetof(struct allow_global_limits, shutdown_grace_ms)},
        {.name = NULL},
};

static const struct cfg_key audit_keys[] = {
        {.name = "path", .set = set_string, .off = offsetof(struct allow_config, audit_path)},
        {.name = "chain", .set = set_bool, .off = offsetof(struct allow_config, audit_chain)},
        {.name = "fsync", .set = set_bool, .off = offsetof(struct allow_config, audit_fsync)},
        {.name = NULL},
};

/* registries.FAMILY: one host name or IP literal, no pattern and no port (the check dials
 * 443). */
static int set_registry(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
        yaml_node_t *val, void *base)
{
	(void)key;
	size_t len;
	const char *v = allow_cfg_scalar_text(ld, val, "a host name", &len);
	if (v == NULL)
		return -1;
	struct allow_dest d;
	enum allow_canon_err ce = allow_canon_host(v, len, &d);
	char q[CFG_QUOTE_BUF];
	if (ce != ALLOW_CANON_OK) {
		allow_cfg_err_at(ld, val, "%s is not a host name: %s%s",
		        allow_cfg_quote(q, sizeof q, v, len), allow_canon_strerror(ce),
		        memchr(v, '*', len) || memchr(v, ':', len)
		                ? " (a registry is one host: no pattern, no port)"
		                : "");
		return -1;
	}
	char **dst = (char **)((char *)base + k->off);
	char *h = strdup(d.host);
	if (h == NULL) {
		allow_cfg_err_oom(ld, val);
		return -1;
	}
	free(*dst);
	*dst = h;
	return 0;
}

#define REGISTRY_KEY(family, bit)                                                                  \
	{                                                                                          \
		.name = family, .set = set_registry,                                               \
		.off = offsetof(struct allow_config, registries) + (bit) * sizeof(char *)          \
	}
/* One key per family (allowlist/registry.c names them), in the same order. */
static const struct cfg_key registries_keys[] = {
        REGISTRY_KEY("brew", 0),
        REGISTRY_KEY("crates", 1),
        REGISTRY_KEY("docker", 2),
        REGISTRY_KEY("go", 3),
        REGISTRY_KEY("npm", 4),
        REGISTRY_KEY("packagist", 5),
        REGISTRY_KEY("pypi", 6),
        REGISTRY_KEY("rubygems", 7),
        {.name = NULL},
};

const struct cfg_key allow_cfg_top_keys[] = {
        {.name = "listen", .set = set_map, .sub = listen_keys},
        {.name = "dns", .set = set_map, .off = offsetof(struct allow_config, dns), .sub = dns_keys},
        {.name = "limits",
                .set = set_map,
                .off = offsetof(struct allow_config, limits),
                .sub = limits_keys},
        {.name = "audit", .set = set_map, .sub = audit_keys},
        {.name = "tls", .set = set_map, .off = offsetof(struct allow_config, tls), .sub = tls_keys},
        {.name = "bounds", .set = set_bounds},
        {.name = "sessions", .set = set_sessions},
        {.name = "registries", .set = set_map, .sub = registries_keys},
        {.name = NULL},
};
