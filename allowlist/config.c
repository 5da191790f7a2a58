/* The YAML config loader (DESIGN.md 4.1-4.4, 5).
 *
 * Two passes over the text.  The first reads libyaml's events only to refuse what the document
 * API would hide or make ambiguous: syntax errors, several documents, anchors, aliases and
 * explicit tags.  The second loads the document tree and walks it with tables that describe each
 * mapping's keys (nginx-style: name, setter, offset), so unknown keys, duplicates and wrong types
 * are found the same way at every level.  Every error is collected with its position and key
 * path, and loading goes on after one so that a user sees them all at once; the collected lines
 * are sorted by position at the end.  Defaults are filled only when there was no error. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <yaml.h>

#include "allowlist/config.h"
#include "allowlist/tags.h"

#define CFG_MAX_ERRORS 100          /* beyond this the rest is noise: stop collecting */
#define CFG_FILE_MAX (1024 * 1024)  /* a config larger than this is a mistake, not a config */
#define CFG_TOKEN_MAX 4096          /* longest token read from a tokenFile */
#define CFG_NAME_MAX 64             /* longest session or bound name */
#define CFG_KEYS_MAX 16             /* most keys in one key table */
#define CFG_PATH_MAX 512            /* key path text, e.g. sessions.default.limits.maxBytesOut */
#define CFG_SEGMENT_MAX 64          /* longest key shown in a path before "..." */
#define CFG_QUOTE_BUF 96            /* a user value quoted in a message */
#define CFG_MSG_MAX 1024            /* one error line */

#define DEFAULT_LISTEN_PROXY "127.0.0.1:3128"
#define DEFAULT_AUDIT_PATH "audit.jsonl"

struct cfg_err {
	unsigned long line; /* 1-based; 0 when the error has no position */
	unsigned long col;  /* 1-based */
	char *text;         /* the whole line, owned */
};

/* A bound while it is being read (named under bounds: or inline in a session). */
struct cfg_bound_work {
	struct allow_bound b;    /* the bound itself; valid only when ready */
	int ready;               /* allow_bound_init succeeded, so b must be freed */
	yaml_node_t *allow_key;  /* the allowDomains key, for the "needs sandbox" check */
};

struct cfg_named_bound {
	char *name;               /* owned */
	yaml_node_t *key;         /* where it was defined */
	struct cfg_bound_work w;
};

/* A session while it is being read; s moves into the config only when there was no error. */
struct cfg_session_work {
	struct allow_session_config s; /* name, limits, token, clients; s.bound is built later */
	int bound_ready;               /* s.bound was initialised */
	yaml_node_t *key;              /* the session's name */
	yaml_node_t *bounds;           /* its bounds: list, resolved once every bound is known */
	struct cfg_bound_work inl;     /* its bound: */
	yaml_node_t *token_key;        /* auth.token key, when given */
	yaml_node_t *token_file_key;   /* auth.tokenFile key, when given */
};

struct cfg_loader {
	const char *name;               /* file name for messages */
	char *dir;                      /* the config's folder, for relative tokenFile paths */
	yaml_document_t *doc;           /* the loaded tree (second pass) */
	struct cfg_err *errs;
	size_t nerrs;
	int overflow;                   /* CFG_MAX_ERRORS reached */
	int oom;                        /* "out of memory" already reported */
	char path[CFG_PATH_MAX];        /* the key path of the node being read */
	size_t plen;
	struct allow_config *cfg;
	struct cfg_named_bound *bounds; /* bounds: in file order */
	size_t nbounds;
	struct cfg_session_work *sw;    /* sessions: in file order */
	size_t nsw;
};

/* One key of a mapping.  set reads val (the key node is there for messages) into base + off. */
struct cfg_key {
	const char *name;
	int (*set)(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
		yaml_node_t *val, void *base);
	size_t off;                 /* the field, from the start of the mapping's struct */
	size_t off_n;               /* lists: the count field */
	const struct cfg_key *sub;  /* nested mappings: their table */
	uint64_t min;               /* numbers: the smallest value accepted */
	int kind;                   /* allowDomains / domains: the allow_set_kind */
};

/* ---- errors ------------------------------------------------------------------------------ */

/* Writes s[0..len) into buf as a double-quoted, escaped, possibly shortened string, so that a
 * user's bytes never break an error line.  Returns buf. */
static const char *quote(char *buf, size_t cap, const char *s, size_t len)
{
	size_t o = 0;
	buf[o++] = '"';
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (o + 10 >= cap) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (c == '"' || c == '\\') {
			buf[o++] = '\\';
			buf[o++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
		} else {
			buf[o++] = (char)c;
		}
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

/* quote() without the quotes, for names that are shown as part of other text. */
static const char *bare(char *buf, size_t cap, const char *s, size_t len)
{
	quote(buf, cap, s, len < CFG_SEGMENT_MAX ? len : CFG_SEGMENT_MAX);
	size_t l = strlen(buf);
	buf[l - 1] = '\0';
	return buf + 1;
}

static void err_push(struct cfg_loader *ld, unsigned long line, unsigned long col, char *text)
{
	if (ld->nerrs >= CFG_MAX_ERRORS) {
		ld->overflow = 1;
		free(text);
		return;
	}
	struct cfg_err *ne = realloc(ld->errs, (ld->nerrs + 1) * sizeof *ne);
	if (ne == NULL) {
		/* Keep the count right even without the text: a config with errors is refused. */
		free(text);
		ld->oom = 1;
		return;
	}
	ld->errs = ne;
	ld->errs[ld->nerrs].line = line;
	ld->errs[ld->nerrs].col = col;
	ld->errs[ld->nerrs].text = text;
	ld->nerrs++;
}

/* Records "NAME:LINE:COL: PATH: message" at mark (or "NAME: message" when mark is NULL). */
__attribute__((format(printf, 3, 0))) static void err_vat(struct cfg_loader *ld,
	const yaml_mark_t *mark, const char *fmt, va_list ap)
{
	char msg[CFG_MSG_MAX];
	vsnprintf(msg, sizeof msg, fmt, ap);
	char line[CFG_MSG_MAX + CFG_PATH_MAX + 64];
	unsigned long l = 0, c = 0;
	int n;
	if (mark != NULL) {
		l = (unsigned long)mark->line + 1;
		c = (unsigned long)mark->column + 1;
		if (ld->plen > 0)
			n = snprintf(line, sizeof line, "%s:%lu:%lu: %s: %s", ld->name, l, c, ld->path, msg);
		else
			n = snprintf(line, sizeof line, "%s:%lu:%lu: %s", ld->name, l, c, msg);
	} else {
		n = snprintf(line, sizeof line, "%s: %s", ld->name, msg);
	}
	(void)n;
	char *text = strdup(line);
	if (text == NULL)
		ld->oom = 1;
	else
		err_push(ld, l, c, text);
}

__attribute__((format(printf, 3, 4))) static void err_at(struct cfg_loader *ld,
	const yaml_node_t *node, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_vat(ld, node != NULL ? &node->start_mark : NULL, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 3, 4))) static void err_mark(struct cfg_loader *ld,
	const yaml_mark_t *mark, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_vat(ld, mark, fmt, ap);
	va_end(ap);
}

static void err_oom(struct cfg_loader *ld, const yaml_node_t *node)
{
	if (!ld->oom)
		err_at(ld, node, "out of memory");
	ld->oom = 1;
}

/* ---- key path ---------------------------------------------------------------------------- */

/* Appends ".seg" (or "seg" at the top) to the path; returns the old length for path_pop. */
static size_t path_push(struct cfg_loader *ld, const char *seg, size_t len)
{
	size_t old = ld->plen;
	char clean[CFG_QUOTE_BUF];
	int n = snprintf(ld->path + ld->plen, sizeof ld->path - ld->plen, "%s%s",
		ld->plen > 0 ? "." : "", bare(clean, sizeof clean, seg, len));
	if (n > 0)
		ld->plen += (size_t)n < sizeof ld->path - ld->plen ? (size_t)n : sizeof ld->path - ld->plen - 1;
	return old;
}

static size_t path_push_index(struct cfg_loader *ld, size_t i)
{
	size_t old = ld->plen;
	int n = snprintf(ld->path + ld->plen, sizeof ld->path - ld->plen, "[%zu]", i);
	if (n > 0)
		ld->plen += (size_t)n < sizeof ld->path - ld->plen ? (size_t)n : sizeof ld->path - ld->plen - 1;
	return old;
}

static void path_pop(struct cfg_loader *ld, size_t old)
{
	ld->plen = old;
	ld->path[old] = '\0';
}

/* ---- node helpers ------------------------------------------------------------------------ */

static int is_null(const yaml_node_t *n)
{
	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	const char *v = (const char *)n->data.scalar.value;
	return v[0] == '\0' || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
		strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

/* What a node is, for "expected X, got Y". */
static const char *node_desc(const yaml_node_t *n, char *buf, size_t cap)
{
	if (n->type == YAML_SEQUENCE_NODE)
		return "a list";
	if (n->type == YAML_MAPPING_NODE)
		return "a mapping";
	if (is_null(n))
		return "an empty value";
	return quote(buf, cap, (const char *)n->data.scalar.value, n->data.scalar.length);
}

static void err_type(struct cfg_loader *ld, const yaml_node_t *n, const char *expected)
{
	char q[CFG_QUOTE_BUF];
	err_at(ld, n, "expected %s, got %s", expected, node_desc(n, q, sizeof q));
}

/* The text of a scalar that must hold a value, or NULL after reporting why not. */
static const char *scalar_text(struct cfg_loader *ld, yaml_node_t *n, const char *expected,
	size_t *len)
{
	if (n->type != YAML_SCALAR_NODE || is_null(n)) {
		err_type(ld, n, expected);
		return NULL;
	}
	const char *v = (const char *)n->data.scalar.value;
	if (strlen(v) != n->data.scalar.length) {
		err_at(ld, n, "a value must not contain a NUL byte");
		return NULL;
	}
	*len = n->data.scalar.length;
	return v;
}

static yaml_node_t *node_get(struct cfg_loader *ld, int id)
{
	return yaml_document_get_node(ld->doc, id);
}

static size_t seq_len(const yaml_node_t *n)
{
	return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

static size_t map_len(const yaml_node_t *n)
{
	return (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
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

/* A key of a mapping as text, or NULL after reporting it. */
static const char *key_text(struct cfg_loader *ld, yaml_node_t *key, size_t *len)
{
	if (key->type != YAML_SCALAR_NODE || key->data.scalar.length == 0) {
		err_at(ld, key, "a key must be a non-empty string");
		return NULL;
	}
	return scalar_text(ld, key, "a key", len);
}

/* ---- the table walk ---------------------------------------------------------------------- */

/* Reads mapping node n into base through table: each key once, each known. */
static int walk(struct cfg_loader *ld, yaml_node_t *n, const struct cfg_key *table, void *base)
{
	if (n->type != YAML_MAPPING_NODE) {
		err_type(ld, n, "a mapping");
		return -1;
	}
	yaml_node_t *seen[CFG_KEYS_MAX] = {0};
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *key = node_get(ld, p->key);
		yaml_node_t *val = node_get(ld, p->value);
		size_t klen;
		const char *k = key_text(ld, key, &klen);
		if (k == NULL)
			continue;
		size_t i;
		for (i = 0; table[i].name != NULL; i++)
			if (strlen(table[i].name) == klen && memcmp(table[i].name, k, klen) == 0)
				break;
		size_t old = path_push(ld, k, klen);
		if (table[i].name == NULL) {
			char expected[256];
			size_t o = 0;
			expected[0] = '\0';
			for (size_t j = 0; table[j].name != NULL; j++) {
				int w = snprintf(expected + o, sizeof expected - o, "%s%s", j ? ", " : "",
					table[j].name);
				if (w < 0 || (size_t)w >= sizeof expected - o)
					break;
				o += (size_t)w;
			}
			err_at(ld, key, "unknown key (expected one of: %s)", expected);
		} else if (seen[i] != NULL) {
			err_at(ld, key, "duplicate key (first at %lu:%lu)",
				(unsigned long)seen[i]->start_mark.line + 1,
				(unsigned long)seen[i]->start_mark.column + 1);
		} else {
			seen[i] = key;
			table[i].set(ld, &table[i], key, val, base);
		}
		path_pop(ld, old);
	}
	return 0;
}

static int set_map(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
	yaml_node_t *val, void *base)
{
	(void)key;
	return walk(ld, val, k->sub, (char *)base + k->off);
}

/* Checks that val is a list; returns its length, or -1 after reporting. */
static long want_list(struct cfg_loader *ld, yaml_node_t *val)
{
	if (val->type != YAML_SEQUENCE_NODE) {
		err_type(ld, val, "a list");
		return -1;
	}
	return (long)seq_len(val);
}

/* ---- scalar setters ---------------------------------------------------------------------- */

static int set_string(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
	yaml_node_t *val, void *base)
{
	(void)key;
	size_t len;
	const char *v = scalar_text(ld, val, "a string", &len);
	if (v == NULL)
		return -1;
	if (len == 0) {
		err_at(ld, val, "must not be empty");
		return -1;
	}
	char **dst = (char **)((char *)base + k->off);
	char *s = strdup(v);
	if (s == NULL) {
		err_oom(ld, val);
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
	const char *v = scalar_text(ld, val, "true or false", &len);
	if (v == NULL)
		return -1;
	int *dst = (int *)((char *)base + k->off);
	if (strcmp(v, "true") == 0) {
		*dst = 1;
	} else if (strcmp(v, "false") == 0) {
		*dst = 0;
	} else {
		char q[CFG_QUOTE_BUF];
		err_at(ld, val, "%s is not a boolean (use true or false)", quote(q, sizeof q, v, len));
		return -1;
	}
	return 0;
}

static int check_min(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *val,
	uint64_t v, void (*fmt)(uint64_t, char *, size_t))
{
	if (v >= k->min)
		return 0;
	char m[32];
	if (fmt != NULL)
		fmt(k->min, m, sizeof m);
	else
		snprintf(m, sizeof m, "%llu", (unsigned long long)k->min);
	err_at(ld, val, "must be at least %s", m);
	return -1;
}

static int set_count(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
	yaml_node_t *val, void *base)
{
	(void)key;
	size_t len;
	const char *v = scalar_text(ld, val, "a whole number", &len);
	if (v == NULL)
		return -1;
	uint64_t n;
	char q[CFG_QUOTE_BUF];
	if (allow_number_parse(v, len, &n) == -1) {
		err_at(ld, val, "%s is not a whole number", quote(q, sizeof q, v, len));
		return -1;
	}
	if (n == ALLOW_UNLIMITED) {
		/* UINT64_MAX is the "unlimited" marker; leave the key out to mean unlimited. */
		err_at(ld, val, "%s is too large", quote(q, sizeof q, v, len));
		return -1;
	}
	if (check_min(ld, k, val, n, NULL) == -1)
		return -1;
	*(uint64_t *)((char *)base + k->off) = n;
	return 0;
}

static int set_size(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
	yaml_node_t *val, void *base)
{
	(void)key;
	size_t len;
	const char *v = scalar_text(ld, val, "a size", &len);
	if (v == NULL)
		return -1;
	uint64_t n;
	char q[CFG_QUOTE_BUF];
	int rc = allow_size_parse(v, len, &n);
	if (rc == -1) {
		err_at(ld, val, "%s is not a size (use B, KiB, MiB, GiB)",
			quote(q, sizeof q, v, len));
		return -1;
	}
	if (rc == -2 || n == ALLOW_UNLIMITED) {
		err_at(ld, val, "%s is too large", quote(q, sizeof q, v, len));
		return -1;
	}
	if (check_min(ld, k, val, n, allow_size_format) == -1)
		return -1;
	*(uint64_t *)((char *)base + k->off) = n;
	return 0;
}

static int set_duration(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
	yaml_node_t *val, void *base)
{
	(void)key;
	size_t len;
	const char *v = scalar_text(ld, val, "a duration", &len);
	if (v == NULL)
		return -1;
	uint64_t n;
	char q[CFG_QUOTE_BUF];
	int rc = allow_duration_parse(v, len, &n);
	if (rc == -1) {
		err_at(ld, val, "%s is not a duration (use ms, s, m or h, e.g. 10s)",
			quote(q, sizeof q, v, len));
		return -1;
	}
	if (rc == -2 || n == ALLOW_UNLIMITED) {
		err_at(ld, val, "%s is too large", quote(q, sizeof q, v, len));
		return -1;
	}
	if (check_min(ld, k, val, n, allow_duration_format) == -1)
		return -1;
	*(uint64_t *)((char *)base + k->off) = n;
	return 0;
}

/* ---- addresses --------------------------------------------------------------------------- */

/* Reads a "HOST:PORT" (or with default_port, "IP") scalar into a new string. */
static char *addr_text(struct cfg_loader *ld, yaml_node_t *val, uint16_t default_port)
{
	size_t len;
	const char *v = scalar_text(ld, val, "an address", &len);
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
		err_at(ld, val, "%s is not a valid address: %s", quote(q, sizeof q, v, len), why);
		return NULL;
	}
	char *s = strdup(v);
	if (s == NULL)
		err_oom(ld, val);
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

/* A list of addresses; k->min is the default port (0: a port is required). */
static int set_addr_list(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
	yaml_node_t *val, void *base)
{
	(void)key;
	long n = want_list(ld, val);
	if (n == -1)
		return -1;
	char ***dst = (char ***)((char *)base + k->off);
	size_t *dn = (size_t *)((char *)base + k->off_n);
	if (n == 0 && k->min == 0) {
		err_at(ld, val, "needs at least one address");
		return -1;
	}
	char **list = calloc((size_t)n + 1, sizeof *list);
	if (list == NULL) {
		err_oom(ld, val);
		return -1;
	}
	size_t got = 0;
	int rc = 0;
	for (long i = 0; i < n; i++) {
		yaml_node_t *item = node_get(ld, val->data.sequence.items.start[i]);
		size_t old = path_push_index(ld, (size_t)i);
		char *s = addr_text(ld, item, (uint16_t)k->min);
		path_pop(ld, old);
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
	const char *v = scalar_text(ld, val, "unix:PATH", &len);
	if (v == NULL)
		return -1;
	struct sockaddr_un sun;
	char q[CFG_QUOTE_BUF];
	/* The control API can create sessions: it is only offered on a Unix socket (mode 0600),
	 * never on a TCP port that any local user could reach. */
	if (len <= 5 || memcmp(v, "unix:", 5) != 0) {
		err_at(ld, val, "%s must be unix:PATH (the control API listens only on a Unix socket)",
			quote(q, sizeof q, v, len));
		return -1;
	}
	if (len - 5 >= sizeof sun.sun_path) {
		err_at(ld, val, "the socket path is longer than %zu bytes", sizeof sun.sun_path - 1);
		return -1;
	}
	return set_string(ld, k, key, val, base);
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
		err_oom(ld, val);
		return -1;
	}
	size_t got = 0;
	int rc = 0;
	for (long i = 0; i < n; i++) {
		yaml_node_t *item = node_get(ld, val->data.sequence.items.start[i]);
		size_t old = path_push_index(ld, (size_t)i);
		size_t len;
		const char *v = scalar_text(ld, item, "an address or CIDR", &len);
		char why[128];
		if (v == NULL) {
			rc = -1;
		} else if (allow_cidr_parse(v, len, &list[got], why, sizeof why) == -1) {
			char q[CFG_QUOTE_BUF];
			err_at(ld, item, "%s is not an address or CIDR: %s", quote(q, sizeof q, v, len),
				why);
			rc = -1;
		} else {
			got++;
		}
		path_pop(ld, old);
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
		err_type(ld, val, "a mapping of host names to address lists");
		return -1;
	}
	size_t n = map_len(val);
	struct allow_hosts_entry *hosts = calloc(n + 1, sizeof *hosts);
	yaml_node_t **keys = calloc(n + 1, sizeof *keys);
	if (hosts == NULL || keys == NULL) {
		free(hosts);
		free(keys);
		err_oom(ld, val);
		return -1;
	}
	size_t got = 0;
	int rc = 0;
	for (yaml_node_pair_t *p = val->data.mapping.pairs.start; p < val->data.mapping.pairs.top; p++) {
		yaml_node_t *hk = node_get(ld, p->key);
		yaml_node_t *hv = node_get(ld, p->value);
		size_t klen;
		const char *name = key_text(ld, hk, &klen);
		if (name == NULL) {
			rc = -1;
			continue;
		}
		size_t old = path_push(ld, name, klen);
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
			err_at(ld, hk, "%s is not a host name: %s", quote(q, sizeof q, name, klen),
				allow_canon_strerror(ce));
			rc = -1;
		} else if (d.kind != ALLOW_HOST_NAME) {
			err_at(ld, hk, "%s is an address; dns.hosts maps names to addresses",
				quote(q, sizeof q, name, klen));
			rc = -1;
		} else if (dup < got) {
			err_at(ld, hk, "duplicate key (first at %lu:%lu)",
				(unsigned long)keys[dup]->start_mark.line + 1,
				(unsigned long)keys[dup]->start_mark.column + 1);
			rc = -1;
		} else if (want_list(ld, hv) == -1) {
			rc = -1;
		} else if (seq_len(hv) == 0 || seq_len(hv) > ALLOW_DNS_HOST_ADDRS) {
			err_at(ld, hv, "needs 1 to %d addresses", ALLOW_DNS_HOST_ADDRS);
			rc = -1;
		} else {
			int bad = 0;
			for (size_t i = 0; i < seq_len(hv); i++) {
				yaml_node_t *item = node_get(ld, hv->data.sequence.items.start[i]);
				size_t iold = path_push_index(ld, i);
				size_t len;
				const char *v = scalar_text(ld, item, "an IP address", &len);
				char why[128];
				if (v == NULL) {
					bad = 1;
				} else if (memchr(v, '/', len) != NULL ||
					allow_cidr_parse(v, len, &e->addrs[e->naddrs], why, sizeof why) == -1) {
					err_at(ld, item, "%s is not an IP address",
						quote(q, sizeof q, v, len));
					bad = 1;
				} else {
					e->naddrs++;
				}
				path_pop(ld, iold);
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
		path_pop(ld, old);
	}
	free(keys);
	free(dns->hosts);
	dns->hosts = hosts;
	dns->nhosts = got;
	return rc;
}

/* ---- bounds ------------------------------------------------------------------------------ */

static int bound_init(struct cfg_loader *ld, struct cfg_bound_work *w, yaml_node_t *at)
{
	if (w->ready)
		return 0;
	if (allow_bound_init(&w->b) == -1) {
		err_oom(ld, at);
		return -1;
	}
	w->ready = 1;
	return 0;
}

static void bound_work_free(struct cfg_bound_work *w)
{
	if (w->ready)
		allow_bound_free(&w->b);
	w->ready = 0;
}

/* allowDomains / domains: a list of patterns, each checked by the pattern module. */
static int set_patterns(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
	yaml_node_t *val, void *base)
{
	struct cfg_bound_work *w = base;
	long n = want_list(ld, val);
	if (n == -1)
		return -1;
	struct allow_set **set = k->kind == ALLOW_SET_ALLOW ? &w->b.allow : &w->b.deny;
	if (k->kind == ALLOW_SET_ALLOW)
		w->allow_key = key;
	if (*set == NULL) {
		*set = allow_set_new((enum allow_set_kind)k->kind);
		if (*set == NULL) {
			err_oom(ld, val);
			return -1;
		}
	}
	int rc = 0;
	for (long i = 0; i < n; i++) {
		yaml_node_t *item = node_get(ld, val->data.sequence.items.start[i]);
		size_t old = path_push_index(ld, (size_t)i);
		size_t len;
		const char *v = scalar_text(ld, item, "a host pattern", &len);
		char why[256];
		why[0] = '\0';
		if (v == NULL) {
			rc = -1;
		} else if (allow_set_add(*set, v, why, sizeof why) == -1) {
			char q[CFG_QUOTE_BUF];
			err_at(ld, item, "%s is not a valid pattern: %s", quote(q, sizeof q, v, len),
				why[0] ? why : "rejected");
			rc = -1;
		}
		path_pop(ld, old);
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
		yaml_node_t *item = node_get(ld, val->data.sequence.items.start[i]);
		size_t old = path_push_index(ld, (size_t)i);
		size_t len;
		const char *v = scalar_text(ld, item, "an action tag", &len);
		unsigned mask = 0;
		if (v == NULL) {
			rc = -1;
		} else if (allow_tag_parse(v, len, &mask) == -1) {
			char q[CFG_QUOTE_BUF];
			err_at(ld, item,
				"%s is not an action (use all, read, write, dns, git:fetch, git:push, "
				"http:read, http:write, ssh:read, ssh:write)",
				quote(q, sizeof q, v, len));
			rc = -1;
		} else {
			w->b.deny_actions |= mask;
		}
		path_pop(ld, old);
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
	const char *v = scalar_text(ld, val, "guard or sandbox", &len);
	if (v == NULL)
		return -1;
	if (strcmp(v, "guard") == 0) {
		w->b.enforce = ALLOW_ENFORCE_GUARD;
	} else if (strcmp(v, "sandbox") == 0) {
		w->b.enforce = ALLOW_ENFORCE_SANDBOX;
	} else {
		char q[CFG_QUOTE_BUF];
		err_at(ld, val, "%s is not an enforcement mode (use guard or sandbox)",
			quote(q, sizeof q, v, len));
		return -1;
	}
	return 0;
}

static const struct cfg_key network_keys[] = {
	{"allowDomains", set_patterns, 0, 0, NULL, 0, ALLOW_SET_ALLOW},
	{"domains", set_patterns, 0, 0, NULL, 0, ALLOW_SET_DENY},
	{"actions", set_actions, 0, 0, NULL, 0, 0},
	{"enforce", set_enforce, 0, 0, NULL, 0, 0},
	{NULL, NULL, 0, 0, NULL, 0, 0},
};

static int set_network(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
	yaml_node_t *val, void *base)
{
	(void)k;
	(void)key;
	struct cfg_bound_work *w = base;
	if (walk(ld, val, network_keys, w) == -1)
		return -1;
	if (w->allow_key != NULL && w->b.enforce != ALLOW_ENFORCE_SANDBOX) {
		size_t old = path_push(ld, "allowDomains", 12);
		/* A guard bound is advisory: an allow list there would look enforced and not be. */
		err_at(ld, w->allow_key,
			"allowDomains needs enforce: sandbox in the same bound (egressd enforces "
			"only sandbox bounds)");
		path_pop(ld, old);
		return -1;
	}
	return 0;
}

static const struct cfg_key bound_keys[] = {
	{"network", set_network, 0, 0, NULL, 0, 0},
	{NULL, NULL, 0, 0, NULL, 0, 0},
};

static int bound_read(struct cfg_loader *ld, yaml_node_t *val, struct cfg_bound_work *w)
{
	if (val->type != YAML_MAPPING_NODE) {
		err_type(ld, val, "a mapping");
		return -1;
	}
	if (bound_init(ld, w, val) == -1)
		return -1;
	return walk(ld, val, bound_keys, w);
}

/* Shared by bounds: and sessions:, whose keys are names the user chooses.  Returns the name of
 * pair p, or NULL (reported) when it is not a valid name or repeats one of prev[0..nprev). */
static const char *user_name(struct cfg_loader *ld, yaml_node_t *key, const char *what,
	yaml_node_t **prev, size_t nprev, size_t *len)
{
	const char *name = key_text(ld, key, len);
	if (name == NULL)
		return NULL;
	if (!name_ok(name, *len)) {
		char q[CFG_QUOTE_BUF];
		size_t old = path_push(ld, name, *len);
		err_at(ld, key, "%s is not a valid %s name (1-%d letters, digits, '-', '_' or '.')",
			quote(q, sizeof q, name, *len), what, CFG_NAME_MAX);
		path_pop(ld, old);
		return NULL;
	}
	for (size_t i = 0; i < nprev; i++) {
		if (prev[i]->data.scalar.length == *len && memcmp(prev[i]->data.scalar.value, name, *len) == 0) {
			size_t old = path_push(ld, name, *len);
			err_at(ld, key, "duplicate key (first at %lu:%lu)",
				(unsigned long)prev[i]->start_mark.line + 1,
				(unsigned long)prev[i]->start_mark.column + 1);
			path_pop(ld, old);
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
		err_type(ld, val, "a mapping of bound names to bounds");
		return -1;
	}
	size_t n = map_len(val);
	ld->bounds = calloc(n + 1, sizeof *ld->bounds);
	yaml_node_t **keys = calloc(n + 1, sizeof *keys);
	if (ld->bounds == NULL || keys == NULL) {
		free(keys);
		err_oom(ld, val);
		return -1;
	}
	for (yaml_node_pair_t *p = val->data.mapping.pairs.start; p < val->data.mapping.pairs.top; p++) {
		yaml_node_t *bk = node_get(ld, p->key);
		size_t len;
		const char *name = user_name(ld, bk, "bound", keys, ld->nbounds, &len);
		if (name == NULL)
			continue;
		struct cfg_named_bound *nb = &ld->bounds[ld->nbounds];
		nb->name = strdup(name);
		if (nb->name == NULL) {
			err_oom(ld, bk);
			continue;
		}
		nb->key = bk;
		keys[ld->nbounds++] = bk;
		/* Registered even when its body has errors, so that sessions naming it do not add
		 * a misleading "unknown bound" to the real error. */
		size_t old = path_push(ld, name, len);
		bound_read(ld, node_get(ld, p->value), &nb->w);
		path_pop(ld, old);
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
		yaml_node_t *item = node_get(ld, val->data.sequence.items.start[i]);
		size_t old = path_push_index(ld, (size_t)i);
		size_t len;
		if (scalar_text(ld, item, "a bound name", &len) == NULL)
			rc = -1;
		path_pop(ld, old);
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
	err_at(ld, key, "give token or tokenFile, not both");
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
	const char *v = scalar_text(ld, val, "a token string", &len);
	if (v == NULL)
		return -1;
	if (len == 0) {
		err_at(ld, val, "must not be empty");
		return -1;
	}
	w->s.token = strdup(v);
	if (w->s.token == NULL) {
		err_oom(ld, val);
		return -1;
	}
	return 0;
}

/* Reads a token file: at most CFG_TOKEN_MAX bytes, one line, one trailing newline dropped. */
static int read_token_file(const char *path, char **out, char *why, size_t whylen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
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
	size_t len;
	const char *v = scalar_text(ld, val, "a file path", &len);
	if (v == NULL)
		return -1;
	char full[4096];
	int n;
	if (v[0] == '/' || ld->dir == NULL)
		n = snprintf(full, sizeof full, "%s", v);
	else
		n = snprintf(full, sizeof full, "%s/%s", ld->dir, v);
	char q[CFG_QUOTE_BUF];
	if (n < 0 || (size_t)n >= sizeof full) {
		err_at(ld, val, "%s: the path is too long", quote(q, sizeof q, v, len));
		return -1;
	}
	char why[128];
	if (read_token_file(full, &w->s.token, why, sizeof why) == -1) {
		/* The resolved path, whole: which folder a relative path was taken from is the
		 * point of the message. */
		char qfull[CFG_MSG_MAX / 2];
		err_at(ld, val, "cannot use %s as a token file: %s",
			quote(qfull, sizeof qfull, full, strlen(full)), why);
		return -1;
	}
	return 0;
}

static const struct cfg_key auth_keys[] = {
	{"token", set_token, 0, 0, NULL, 0, 0},
	{"tokenFile", set_token_file, 0, 0, NULL, 0, 0},
	{NULL, NULL, 0, 0, NULL, 0, 0},
};

static const struct cfg_key session_limit_keys[] = {
	{"maxConnections", set_count, offsetof(struct allow_limits, max_connections), 0, NULL, 0, 0},
	{"maxConnectionsTotal", set_count, offsetof(struct allow_limits, max_connections_total), 0,
		NULL, 0, 0},
	{"maxBytesOut", set_size, offsetof(struct allow_limits, max_bytes_out), 0, NULL, 0, 0},
	{"maxBytesIn", set_size, offsetof(struct allow_limits, max_bytes_in), 0, NULL, 0, 0},
	{"maxNewHostsPerMinute", set_count,
		offsetof(struct allow_limits, max_new_hosts_per_minute), 0, NULL, 0, 0},
	{"expiresIn", set_duration, offsetof(struct allow_limits, expires_in_ms), 0, NULL, 0, 0},
	{NULL, NULL, 0, 0, NULL, 0, 0},
};

static const struct cfg_key session_keys[] = {
	{"bounds", set_bound_names, 0, 0, NULL, 0, 0},
	{"bound", set_inline_bound, 0, 0, NULL, 0, 0},
	{"limits", set_map, offsetof(struct cfg_session_work, s.limits), 0, session_limit_keys, 0, 0},
	{"auth", set_map, 0, 0, auth_keys, 0, 0},
	{"clients", set_cidrs, offsetof(struct cfg_session_work, s.clients),
		offsetof(struct cfg_session_work, s.nclients), NULL, 0, 0},
	{NULL, NULL, 0, 0, NULL, 0, 0},
};

static int set_sessions(struct cfg_loader *ld, const struct cfg_key *k, yaml_node_t *key,
	yaml_node_t *val, void *base)
{
	(void)k;
	(void)key;
	(void)base;
	if (val->type != YAML_MAPPING_NODE) {
		err_type(ld, val, "a mapping of session names to sessions");
		return -1;
	}
	size_t n = map_len(val);
	ld->sw = calloc(n + 1, sizeof *ld->sw);
	yaml_node_t **keys = calloc(n + 1, sizeof *keys);
	if (ld->sw == NULL || keys == NULL) {
		free(keys);
		err_oom(ld, val);
		return -1;
	}
	for (yaml_node_pair_t *p = val->data.mapping.pairs.start; p < val->data.mapping.pairs.top; p++) {
		yaml_node_t *sk = node_get(ld, p->key);
		size_t len;
		const char *name = user_name(ld, sk, "session", keys, ld->nsw, &len);
		if (name == NULL)
			continue;
		struct cfg_session_work *w = &ld->sw[ld->nsw];
		w->s.name = strdup(name);
		if (w->s.name == NULL) {
			err_oom(ld, sk);
			continue;
		}
		allow_limits_init(&w->s.limits);
		w->key = sk;
		keys[ld->nsw++] = sk;
		size_t old = path_push(ld, name, len);
		walk(ld, node_get(ld, p->value), session_keys, w);
		path_pop(ld, old);
	}
	free(keys);
	return 0;
}

/* Describes which one of a read/write pair a mask denies, for the 4.5 check. */
static int half_denied(unsigned mask, unsigned rd, unsigned wr)
{
	return ((mask & rd) != 0) != ((mask & wr) != 0);
}

/* After the walk: resolve each session's bounds: names, merge (4.3) and check 4.5. */
static void sessions_finish(struct cfg_loader *ld)
{
	for (size_t i = 0; i < ld->nsw; i++) {
		struct cfg_session_work *w = &ld->sw[i];
		path_pop(ld, 0);
		path_push(ld, "sessions", 8);
		path_push(ld, w->s.name, strlen(w->s.name));
		if (allow_bound_init(&w->s.bound) == -1) {
			err_oom(ld, w->key);
			continue;
		}
		w->bound_ready = 1;
		int failed = 0;
		if (w->bounds != NULL) {
			size_t old = path_push(ld, "bounds", 6);
			for (size_t j = 0; j < seq_len(w->bounds); j++) {
				yaml_node_t *item = node_get(ld, w->bounds->data.sequence.items.start[j]);
				const char *want = (const char *)item->data.scalar.value;
				struct cfg_named_bound *nb = NULL;
				for (size_t b = 0; b < ld->nbounds; b++)
					if (strcmp(ld->bounds[b].name, want) == 0)
						nb = &ld->bounds[b];
				size_t iold = path_push_index(ld, j);
				char q[CFG_QUOTE_BUF];
				if (nb == NULL) {
					char known[256] = "";
					size_t o = 0;
					for (size_t b = 0; b < ld->nbounds; b++) {
						int wr = snprintf(known + o, sizeof known - o, "%s%s",
							b ? ", " : "", ld->bounds[b].name);
						if (wr < 0 || (size_t)wr >= sizeof known - o)
							break;
						o += (size_t)wr;
					}
					err_at(ld, item, "unknown bound %s (%s%s)",
						quote(q, sizeof q, want, item->data.scalar.length),
						ld->nbounds ? "defined under bounds: " : "no bounds are defined",
						known);
					failed = 1;
				} else if (nb->w.ready && allow_bound_merge(&w->s.bound, &nb->w.b) == -1) {
					err_oom(ld, item);
					failed = 1;
				}
				path_pop(ld, iold);
			}
			path_pop(ld, old);
		}
		if (w->inl.ready && allow_bound_merge(&w->s.bound, &w->inl.b) == -1) {
			err_oom(ld, w->key);
			failed = 1;
		}
		if (failed || w->s.inspect)
			continue;
		unsigned m = w->s.bound.deny_actions;
		const char *pair = NULL;
		if (half_denied(m, ALLOW_TAG_HTTP_READ, ALLOW_TAG_HTTP_WRITE))
			pair = (m & ALLOW_TAG_HTTP_READ) ? "http:read but not http:write"
							  : "http:write but not http:read";
		else if (half_denied(m, ALLOW_TAG_SSH_READ, ALLOW_TAG_SSH_WRITE))
			pair = (m & ALLOW_TAG_SSH_READ) ? "ssh:read but not ssh:write"
							 : "ssh:write but not ssh:read";
		if (pair != NULL) {
			path_pop(ld, 0);
			path_push(ld, "sessions", 8);
			path_push(ld, w->s.name, strlen(w->s.name));
			err_at(ld, w->key,
				"the merged bound denies %s, which egressd cannot enforce without TLS "
				"inspection: a CONNECT tunnel carries reads and writes alike; deny both "
				"or neither",
				pair);
		}
	}
	path_pop(ld, 0);
}

/* ---- the top level ----------------------------------------------------------------------- */

static const struct cfg_key listen_keys[] = {
	{"proxy", set_addr_list, offsetof(struct allow_config, listen_proxy),
		offsetof(struct allow_config, nlisten_proxy), NULL, 0, 0},
	{"control", set_control, offsetof(struct allow_config, listen_control), 0, NULL, 0, 0},
	{"metrics", set_addr, offsetof(struct allow_config, listen_metrics), 0, NULL, 0, 0},
	{NULL, NULL, 0, 0, NULL, 0, 0},
};

static const struct cfg_key dns_keys[] = {
	/* min is the default port of a server given without one. */
	{"servers", set_addr_list, offsetof(struct allow_dns_config, servers),
		offsetof(struct allow_dns_config, nservers), NULL, 53, 0},
	{"hosts", set_hosts, 0, 0, NULL, 0, 0},
	{"allowAddresses", set_cidrs, offsetof(struct allow_dns_config, allow_addresses),
		offsetof(struct allow_dns_config, nallow_addresses), NULL, 0, 0},
	{"denyAddresses", set_cidrs, offsetof(struct allow_dns_config, deny_addresses),
		offsetof(struct allow_dns_config, ndeny_addresses), NULL, 0, 0},
	{"timeout", set_duration, offsetof(struct allow_dns_config, timeout_ms), 0, NULL, 1, 0},
	{NULL, NULL, 0, 0, NULL, 0, 0},
};

static const struct cfg_key limits_keys[] = {
	{"maxClients", set_count, offsetof(struct allow_global_limits, max_clients), 0, NULL, 1, 0},
	{"maxHeaderBytes", set_size, offsetof(struct allow_global_limits, max_header_bytes), 0, NULL,
		1024, 0},
	{"maxHeaders", set_count, offsetof(struct allow_global_limits, max_headers), 0, NULL, 1, 0},
	{"headerTimeout", set_duration, offsetof(struct allow_global_limits, header_timeout_ms), 0,
		NULL, 1, 0},
	{"idleTimeout", set_duration, offsetof(struct allow_global_limits, idle_timeout_ms), 0, NULL,
		1, 0},
	{"connectTimeout", set_duration, offsetof(struct allow_global_limits, connect_timeout_ms), 0,
		NULL, 1, 0},
	{"shutdownGrace", set_duration, offsetof(struct allow_global_limits, shutdown_grace_ms), 0,
		NULL, 0, 0},
	{NULL, NULL, 0, 0, NULL, 0, 0},
};

static const struct cfg_key audit_keys[] = {
	{"path", set_string, offsetof(struct allow_config, audit_path), 0, NULL, 0, 0},
	{"chain", set_bool, offsetof(struct allow_config, audit_chain), 0, NULL, 0, 0},
	{NULL, NULL, 0, 0, NULL, 0, 0},
};

static const struct cfg_key top_keys[] = {
	{"listen", set_map, 0, 0, listen_keys, 0, 0},
	{"dns", set_map, offsetof(struct allow_config, dns), 0, dns_keys, 0, 0},
	{"limits", set_map, offsetof(struct allow_config, limits), 0, limits_keys, 0, 0},
	{"audit", set_map, 0, 0, audit_keys, 0, 0},
	{"bounds", set_bounds, 0, 0, NULL, 0, 0},
	{"sessions", set_sessions, 0, 0, NULL, 0, 0},
	{NULL, NULL, 0, 0, NULL, 0, 0},
};

/* ---- the first pass: what the document API would hide ------------------------------------ */

static void syntax_error(struct cfg_loader *ld, yaml_parser_t *p, const char *buf, size_t len)
{
	const char *problem = p->problem != NULL ? p->problem : "cannot parse";
	if (p->error == YAML_MEMORY_ERROR) {
		err_oom(ld, NULL);
		return;
	}
	if (p->error == YAML_READER_ERROR) {
		/* Reader errors carry a byte offset, not a mark. */
		yaml_mark_t m = {0, 0, 0};
		size_t end = p->problem_offset < len ? p->problem_offset : len;
		for (size_t i = 0; i < end; i++) {
			if (buf[i] == '\n') {
				m.line++;
				m.column = 0;
			} else {
				m.column++;
			}
		}
		if (p->problem_value != -1)
			err_mark(ld, &m, "%s (byte 0x%02x)", problem, (unsigned)p->problem_value & 0xffu);
		else
			err_mark(ld, &m, "%s", problem);
		return;
	}
	const char *hint = "";
	if ((p->context != NULL && strstr(p->context, "alias") != NULL) ||
		strstr(problem, "alias") != NULL)
		hint = " (a value that starts with '*', such as a wildcard pattern, must be quoted)";
	if (p->context != NULL)
		err_mark(ld, &p->problem_mark, "syntax error: %s %s at %lu:%lu%s", problem, p->context,
			(unsigned long)p->context_mark.line + 1,
			(unsigned long)p->context_mark.column + 1, hint);
	else
		err_mark(ld, &p->problem_mark, "syntax error: %s%s", problem, hint);
}

/* Returns 0 when the text is one YAML document without anchors, aliases or tags; otherwise -1
 * with every such problem reported (and the first syntax error, after which libyaml stops). */
static int prescan(struct cfg_loader *ld, const char *buf, size_t len)
{
	yaml_parser_t p;
	if (!yaml_parser_initialize(&p)) {
		err_oom(ld, NULL);
		return -1;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
	size_t before = ld->nerrs;
	int ndocs = 0, done = 0;
	while (!done) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&p, &ev)) {
			syntax_error(ld, &p, buf, len);
			break;
		}
		const unsigned char *anchor = NULL, *tag = NULL;
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = 1;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++ndocs == 2)
				err_mark(ld, &ev.start_mark,
					"a second YAML document: a config is exactly one document");
			break;
		case YAML_ALIAS_EVENT: {
			char q[CFG_QUOTE_BUF];
			const char *a = (const char *)ev.data.alias.anchor;
			err_mark(ld, &ev.start_mark,
				"aliases (*%s) are not supported: write the value out (and quote a "
				"pattern that starts with '*')",
				bare(q, sizeof q, a, strlen(a)));
			break;
		}
		case YAML_SCALAR_EVENT:
			anchor = ev.data.scalar.anchor;
			tag = ev.data.scalar.tag;
			break;
		case YAML_SEQUENCE_START_EVENT:
			anchor = ev.data.sequence_start.anchor;
			tag = ev.data.sequence_start.tag;
			break;
		case YAML_MAPPING_START_EVENT:
			anchor = ev.data.mapping_start.anchor;
			tag = ev.data.mapping_start.tag;
			break;
		default:
			break;
		}
		char q[CFG_QUOTE_BUF];
		if (anchor != NULL)
			err_mark(ld, &ev.start_mark,
				"anchors (&%s) are not supported: write each value out where it is used",
				bare(q, sizeof q, (const char *)anchor, strlen((const char *)anchor)));
		if (tag != NULL)
			err_mark(ld, &ev.start_mark, "YAML tags (%s) are not supported",
				bare(q, sizeof q, (const char *)tag, strlen((const char *)tag)));
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	if (ld->nerrs == before && !ld->oom && ndocs == 0) {
		err_mark(ld, NULL, "the config is empty (expected a mapping with some of: listen, dns, "
				   "limits, audit, bounds, sessions)");
	}
	return ld->nerrs == before && !ld->oom ? 0 : -1;
}

/* ---- assembling ---------------------------------------------------------------------------- */

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (slash == NULL)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

static void defaults_init(struct allow_config *cfg)
{
	cfg->dns.timeout_ms = 5000;
	cfg->limits.max_clients = 10000;
	cfg->limits.max_header_bytes = 65536;
	cfg->limits.max_headers = 100;
	cfg->limits.header_timeout_ms = 10000;
	cfg->limits.idle_timeout_ms = 5 * 60 * 1000;
	cfg->limits.connect_timeout_ms = 10000;
	cfg->limits.shutdown_grace_ms = 10000;
}

/* The defaults that need memory, after a walk without errors. */
static int defaults_fill(struct allow_config *cfg)
{
	if (cfg->listen_proxy == NULL) {
		cfg->listen_proxy = calloc(2, sizeof *cfg->listen_proxy);
		if (cfg->listen_proxy == NULL)
			return -1;
		cfg->listen_proxy[0] = strdup(DEFAULT_LISTEN_PROXY);
		if (cfg->listen_proxy[0] == NULL)
			return -1;
		cfg->nlisten_proxy = 1;
	}
	if (cfg->audit_path == NULL && (cfg->audit_path = strdup(DEFAULT_AUDIT_PATH)) == NULL)
		return -1;
	return 0;
}

static void session_config_free(struct allow_session_config *s, int bound_ready)
{
	free(s->name);
	if (bound_ready)
		allow_bound_free(&s->bound);
	if (s->token != NULL) {
		explicit_bzero(s->token, strlen(s->token));
		free(s->token);
	}
	free(s->clients);
	memset(s, 0, sizeof *s);
}

static void loader_free(struct cfg_loader *ld)
{
	for (size_t i = 0; i < ld->nbounds; i++) {
		free(ld->bounds[i].name);
		bound_work_free(&ld->bounds[i].w);
	}
	free(ld->bounds);
	if (ld->sw != NULL) {
		/* calloc'ed one past nsw; a slot being filled when its name failed is all zero. */
		for (size_t i = 0; i < ld->nsw; i++) {
			session_config_free(&ld->sw[i].s, ld->sw[i].bound_ready);
			bound_work_free(&ld->sw[i].inl);
		}
	}
	free(ld->sw);
	for (size_t i = 0; i < ld->nerrs; i++)
		free(ld->errs[i].text);
	free(ld->errs);
	free(ld->dir);
}

/* Moves the sessions into cfg; they then belong to it. */
static int sessions_move(struct cfg_loader *ld)
{
	if (ld->nsw == 0)
		return 0;
	ld->cfg->sessions = calloc(ld->nsw, sizeof *ld->cfg->sessions);
	if (ld->cfg->sessions == NULL)
		return -1;
	for (size_t i = 0; i < ld->nsw; i++) {
		ld->cfg->sessions[i] = ld->sw[i].s;
		memset(&ld->sw[i].s, 0, sizeof ld->sw[i].s);
		ld->sw[i].bound_ready = 0;
	}
	ld->cfg->nsessions = ld->nsw;
	return 0;
}

/* Stable by position: errors without one first, then by line and column. */
static void errors_sort(struct cfg_err *e, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		struct cfg_err x = e[i];
		size_t j = i;
		while (j > 0 && (e[j - 1].line > x.line ||
				 (e[j - 1].line == x.line && e[j - 1].col > x.col))) {
			e[j] = e[j - 1];
			j--;
		}
		e[j] = x;
	}
}

static void errors_hand_over(struct cfg_loader *ld, struct allow_errors *errs)
{
	if (ld->overflow) {
		char line[CFG_MSG_MAX];
		snprintf(line, sizeof line, "%s: too many errors, stopped after %d", ld->name,
			CFG_MAX_ERRORS);
		char *t = strdup(line);
		struct cfg_err *ne = t ? realloc(ld->errs, (ld->nerrs + 1) * sizeof *ne) : NULL;
		if (ne != NULL) {
			ld->errs = ne;
			ld->errs[ld->nerrs].line = ULONG_MAX;
			ld->errs[ld->nerrs].col = 0;
			ld->errs[ld->nerrs++].text = t;
		} else {
			free(t);
		}
	}
	errors_sort(ld->errs, ld->nerrs);
	if (errs == NULL)
		return;
	size_t want = ld->nerrs;
	if (ld->oom && want == 0)
		want = 1;
	char **nl = realloc(errs->lines, (errs->n + want + 1) * sizeof *nl);
	if (nl == NULL)
		return;
	errs->lines = nl;
	for (size_t i = 0; i < ld->nerrs; i++) {
		errs->lines[errs->n++] = ld->errs[i].text;
		ld->errs[i].text = NULL;
	}
	if (ld->nerrs == 0 && ld->oom) {
		/* The message itself could not be allocated: a static fallback keeps the promise
		 * that a refused config comes with at least one line. */
		char *t = strdup("out of memory");
		if (t != NULL)
			errs->lines[errs->n++] = t;
	}
	errs->lines[errs->n] = NULL;
}

static struct allow_config *load(const char *name, const char *buf, size_t len,
	struct allow_errors *errs)
{
	struct cfg_loader ld;
	memset(&ld, 0, sizeof ld);
	ld.name = name;
	ld.dir = dir_of(name);
	ld.cfg = calloc(1, sizeof *ld.cfg);
	if (ld.dir == NULL || ld.cfg == NULL || (ld.cfg->path = strdup(name)) == NULL) {
		err_oom(&ld, NULL);
		goto out;
	}
	defaults_init(ld.cfg);
	if (prescan(&ld, buf, len) == -1)
		goto out;

	yaml_parser_t p;
	yaml_document_t doc;
	if (!yaml_parser_initialize(&p)) {
		err_oom(&ld, NULL);
		goto out;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&p, &doc)) {
		syntax_error(&ld, &p, buf, len);
		yaml_parser_delete(&p);
		goto out;
	}
	yaml_parser_delete(&p);
	ld.doc = &doc;
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (root == NULL || is_null(root)) {
		err_mark(&ld, NULL, "the config is empty (expected a mapping with some of: listen, "
				    "dns, limits, audit, bounds, sessions)");
	} else if (root->type != YAML_MAPPING_NODE) {
		char q[CFG_QUOTE_BUF];
		err_at(&ld, root, "the top level must be a mapping (listen, dns, limits, audit, bounds, "
				  "sessions), got %s",
			node_desc(root, q, sizeof q));
	} else {
		walk(&ld, root, top_keys, ld.cfg);
		sessions_finish(&ld);
	}
	yaml_document_delete(&doc);
	ld.doc = NULL;
	if (ld.nerrs == 0 && !ld.oom && (defaults_fill(ld.cfg) == -1 || sessions_move(&ld) == -1))
		err_oom(&ld, NULL);

out:;
	struct allow_config *cfg = ld.cfg;
	if (ld.nerrs > 0 || ld.oom) {
		allow_config_free(cfg);
		cfg = NULL;
	}
	errors_hand_over(&ld, errs);
	loader_free(&ld);
	return cfg;
}

struct allow_config *allow_config_load_buffer(const char *name, const char *buf, size_t len,
	struct allow_errors *errs)
{
	return load(name, buf, len, errs);
}

struct allow_config *allow_config_load(const char *path, struct allow_errors *errs)
{
	char line[CFG_MSG_MAX];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	const char *why = NULL;
	if (fd == -1)
		why = strerror(errno);
	else if (fstat(fd, &st) == -1)
		why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (st.st_size > CFG_FILE_MAX)
		why = "larger than 1 MiB";
	char *buf = NULL;
	size_t len = 0;
	if (why == NULL) {
		buf = malloc((size_t)st.st_size + 1);
		if (buf == NULL)
			why = "out of memory";
	}
	while (why == NULL) {
		ssize_t r = read(fd, buf + len, (size_t)st.st_size + 1 - len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			why = strerror(errno);
		else if (r == 0)
			break;
		else if ((len += (size_t)r) > (size_t)st.st_size)
			why = "the file grew while it was read";
	}
	if (fd != -1)
		close(fd);
	if (why != NULL) {
		free(buf);
		snprintf(line, sizeof line, "%s: cannot read the config: %s", path, why);
		char *t = strdup(line);
		char **nl = t != NULL && errs != NULL ? realloc(errs->lines, (errs->n + 2) * sizeof *nl)
						      : NULL;
		if (nl != NULL) {
			errs->lines = nl;
			errs->lines[errs->n++] = t;
			errs->lines[errs->n] = NULL;
		} else {
			free(t);
		}
		return NULL;
	}
	struct allow_config *cfg = load(path, buf, len, errs);
	free(buf);
	return cfg;
}

void allow_config_free(struct allow_config *cfg)
{
	if (cfg == NULL)
		return;
	free(cfg->path);
	for (size_t i = 0; i < cfg->nlisten_proxy; i++)
		free(cfg->listen_proxy[i]);
	free(cfg->listen_proxy);
	free(cfg->listen_control);
	free(cfg->listen_metrics);
	for (size_t i = 0; i < cfg->dns.nservers; i++)
		free(cfg->dns.servers[i]);
	free(cfg->dns.servers);
	free(cfg->dns.hosts);
	free(cfg->dns.allow_addresses);
	free(cfg->dns.deny_addresses);
	free(cfg->audit_path);
	for (size_t i = 0; i < cfg->nsessions; i++)
		session_config_free(&cfg->sessions[i], 1);
	free(cfg->sessions);
	free(cfg);
}

void allow_errors_free(struct allow_errors *e)
{
	if (e == NULL)
		return;
	for (size_t i = 0; i < e->n; i++)
		free(e->lines[i]);
	free(e->lines);
	e->lines = NULL;
	e->n = 0;
}

const struct allow_session_config *allow_config_session(const struct allow_config *cfg,
	const char *name)
{
	if (cfg == NULL || name == NULL)
		return NULL;
	for (size_t i = 0; i < cfg->nsessions; i++)
		if (strcmp(cfg->sessions[i].name, name) == 0)
			return &cfg->sessions[i];
	return NULL;
}
