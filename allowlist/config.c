/* The YAML config loader (docs/design.md 4.1-4.4, 5).
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
#include "allowlist/config_internal.h"
#include "allowlist/tags.h"

#define CFG_MAX_ERRORS 100         /* beyond this the rest is noise: stop collecting */
#define CFG_FILE_MAX (1024 * 1024) /* a config larger than this is a mistake, not a config */
#define CFG_EMPTY_MSG                                                                              \
	"the config is empty (expected a mapping with some of: listen, dns, limits, audit, tls, "  \
	"bounds, sessions)"
#define DEFAULT_LISTEN_PROXY "127.0.0.1:3128"
#define DEFAULT_AUDIT_PATH "audit.jsonl"

/* ---- errors ------------------------------------------------------------------------------ */

/* Writes s[0..len) into buf as a double-quoted, escaped, possibly shortened string, so that a
 * user's bytes never break an error line.  Returns buf. */
const char *allow_cfg_quote(char *buf, size_t cap, const char *s, size_t len)
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

/* allow_cfg_quote() without the quotes, for names that are shown as part of other text. */
static const char *bare(char *buf, size_t cap, const char *s, size_t len)
{
	allow_cfg_quote(buf, cap, s, len < CFG_SEGMENT_MAX ? len : CFG_SEGMENT_MAX);
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
__attribute__((format(printf, 3, 0))) static void err_vat(
        struct cfg_loader *ld, const yaml_mark_t *mark, const char *fmt, va_list ap)
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
			n = snprintf(line, sizeof line, "%s:%lu:%lu: %s: %s", ld->name, l, c,
			        ld->path, msg);
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

__attribute__((format(printf, 3, 4))) void allow_cfg_err_at(
        struct cfg_loader *ld, const yaml_node_t *node, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_vat(ld, node != NULL ? &node->start_mark : NULL, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 3, 4))) static void err_mark(
        struct cfg_loader *ld, const yaml_mark_t *mark, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_vat(ld, mark, fmt, ap);
	va_end(ap);
}

void allow_cfg_err_oom(struct cfg_loader *ld, const yaml_node_t *node)
{
	if (!ld->oom)
		allow_cfg_err_at(ld, node, "out of memory");
	ld->oom = 1;
}

/* ---- key path ---------------------------------------------------------------------------- */

/* Appends ".seg" (or "seg" at the top) to the path; returns the old length, for path_pop. */
size_t allow_cfg_path_push(struct cfg_loader *ld, const char *seg, size_t len)
{
	size_t old = ld->plen;
	char clean[CFG_QUOTE_BUF];
	int n = snprintf(ld->path + ld->plen, sizeof ld->path - ld->plen, "%s%s",
	        ld->plen > 0 ? "." : "", bare(clean, sizeof clean, seg, len));
	if (n > 0)
		ld->plen += (size_t)n < sizeof ld->path - ld->plen ? (size_t)n
		                                                   : sizeof ld->path - ld->plen - 1;
	return old;
}

size_t allow_cfg_path_push_index(struct cfg_loader *ld, size_t i)
{
	size_t old = ld->plen;
	int n = snprintf(ld->path + ld->plen, sizeof ld->path - ld->plen, "[%zu]", i);
	if (n > 0)
		ld->plen += (size_t)n < sizeof ld->path - ld->plen ? (size_t)n
		                                                   : sizeof ld->path - ld->plen - 1;
	return old;
}

void allow_cfg_path_pop(struct cfg_loader *ld, size_t old)
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
	return allow_cfg_quote(buf, cap, (const char *)n->data.scalar.value, n->data.scalar.length);
}

void allow_cfg_err_type(struct cfg_loader *ld, const yaml_node_t *n, const char *expected)
{
	char q[CFG_QUOTE_BUF];
	allow_cfg_err_at(ld, n, "expected %s, got %s", expected, node_desc(n, q, sizeof q));
}

/* The text of a scalar that must hold a value, or NULL after reporting why not. */
const char *allow_cfg_scalar_text(
        struct cfg_loader *ld, yaml_node_t *n, const char *expected, size_t *len)
{
	if (n->type != YAML_SCALAR_NODE || is_null(n)) {
		allow_cfg_err_type(ld, n, expected);
		return NULL;
	}
	const char *v = (const char *)n->data.scalar.value;
	if (strlen(v) != n->data.scalar.length) {
		allow_cfg_err_at(ld, n, "a value must not contain a NUL byte");
		return NULL;
	}
	*len = n->data.scalar.length;
	return v;
}

yaml_node_t *allow_cfg_node_get(struct cfg_loader *ld, int id)
{
	return yaml_document_get_node(ld->doc, id);
}

size_t allow_cfg_seq_len(const yaml_node_t *n)
{
	return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

size_t allow_cfg_map_len(const yaml_node_t *n)
{
	return (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
}

/* A key of a mapping as text, or NULL after reporting it. */
const char *allow_cfg_key_text(struct cfg_loader *ld, yaml_node_t *key, size_t *len)
{
	if (key->type != YAML_SCALAR_NODE || key->data.scalar.length == 0) {
		allow_cfg_err_at(ld, key, "a key must be a non-empty string");
		return NULL;
	}
	return allow_cfg_scalar_text(ld, key, "a key", len);
}

/* ---- the table walk ---------------------------------------------------------------------- */

/* Reads mapping node n into base through table: each key once, each known. */
int allow_cfg_walk(struct cfg_loader *ld, yaml_node_t *n, const struct cfg_key *table, void *base)
{
	if (n->type != YAML_MAPPING_NODE) {
		allow_cfg_err_type(ld, n, "a mapping");
		return -1;
	}
	yaml_node_t *seen[CFG_KEYS_MAX] = {0};
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	        p++) {
		yaml_node_t *key = allow_cfg_node_get(ld, p->key);
		yaml_node_t *val = allow_cfg_node_get(ld, p->value);
		size_t klen;
		const char *k = allow_cfg_key_text(ld, key, &klen);
		if (k == NULL)
			continue;
		size_t i;
		for (i = 0; table[i].name != NULL; i++)
			if (strlen(table[i].name) == klen && memcmp(table[i].name, k, klen) == 0)
				break;
		size_t old = allow_cfg_path_push(ld, k, klen);
		if (table[i].name == NULL) {
			char expected[256];
			size_t o = 0;
			expected[0] = '\0';
			for (size_t j = 0; table[j].name != NULL; j++) {
				int w = snprintf(expected + o, sizeof expected - o, "%s%s",
				        j ? ", " : "", table[j].name);
				if (w < 0 || (size_t)w >= sizeof expected - o)
					break;
				o += (size_t)w;
			}
			allow_cfg_err_at(ld, key, "unknown key (expected one of: %s)", expected);
		} else if (seen[i] != NULL) {
			allow_cfg_err_at(ld, key, "duplicate key (first at %lu:%lu)",
			        (unsigned long)seen[i]->start_mark.line + 1,
			        (unsigned long)seen[i]->start_mark.column + 1);
		} else {
			seen[i] = key;
			table[i].set(ld, &table[i], key, val, base);
		}
		allow_cfg_path_pop(ld, old);
	}
	return 0;
}

static void bound_work_free(struct cfg_bound_work *w)
{
	if (w->ready)
		allow_bound_free(&w->b);
	w->ready = 0;
}

/* ---- the first pass: what the document API would hide ------------------------------------ */

static void syntax_error(struct cfg_loader *ld, yaml_parser_t *p, const char *buf, size_t len)
{
	const char *problem = p->problem != NULL ? p->problem : "cannot parse";
	if (p->error == YAML_MEMORY_ERROR) {
		allow_cfg_err_oom(ld, NULL);
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
			err_mark(ld, &m, "%s (byte 0x%02x)", problem,
			        (unsigned)p->problem_value & 0xffu);
		else
			err_mark(ld, &m, "%s", problem);
		return;
	}
	const char *hint = "";
	if ((p->context != NULL && strstr(p->context, "alias") != NULL) ||
	        strstr(problem, "alias") != NULL)
		hint = " (a value that starts with '*', such as a wildcard pattern, must be "
		       "quoted)";
	if (p->context != NULL)
		err_mark(ld, &p->problem_mark, "syntax error: %s %s at %lu:%lu%s", problem,
		        p->context, (unsigned long)p->context_mark.line + 1,
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
		allow_cfg_err_oom(ld, NULL);
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
			        "anchors (&%s) are not supported: write each value out where it is "
			        "used",
			        bare(q, sizeof q, (const char *)anchor,
			                strlen((const char *)anchor)));
		if (tag != NULL)
			err_mark(ld, &ev.start_mark, "YAML tags (%s) are not supported",
			        bare(q, sizeof q, (const char *)tag, strlen((const char *)tag)));
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
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
	cfg->limits.max_clients_per_source = 1000;
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

/* The document's root after both passes, or NULL (reported, or an empty document: *empty).
 * The document stays loaded in *doc (ld->doc) until the caller deletes it. */
static yaml_node_t *doc_load(struct cfg_loader *ld, const char *buf, size_t len,
        yaml_document_t *doc, int *loaded, int *empty)
{
	*loaded = 0;
	*empty = 0;
	if (prescan(ld, buf, len) == -1)
		return NULL;
	yaml_parser_t p;
	if (!yaml_parser_initialize(&p)) {
		allow_cfg_err_oom(ld, NULL);
		return NULL;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&p, doc)) {
		syntax_error(ld, &p, buf, len);
		yaml_parser_delete(&p);
		return NULL;
	}
	yaml_parser_delete(&p);
	*loaded = 1;
	ld->doc = doc;
	yaml_node_t *root = yaml_document_get_root_node(doc);
	if (root == NULL || is_null(root)) {
		*empty = 1;
		return NULL;
	}
	return root;
}

/* Moves the named bounds into cfg, for sessions made later through the control API. */
static int bounds_move(struct cfg_loader *ld)
{
	if (ld->nbounds == 0)
		return 0;
	ld->cfg->bounds = calloc(ld->nbounds, sizeof *ld->cfg->bounds);
	if (ld->cfg->bounds == NULL)
		return -1;
	for (size_t i = 0; i < ld->nbounds; i++) {
		struct cfg_named_bound *nb = &ld->bounds[i];
		ld->cfg->bounds[i].name = nb->name;
		ld->cfg->bounds[i].bound = nb->w.b;
		nb->name = NULL;
		nb->w.ready = 0;
	}
	ld->cfg->nbounds = ld->nbounds;
	return 0;
}

static struct allow_config *load(
        const char *name, const char *buf, size_t len, struct allow_errors *errs)
{
	struct cfg_loader ld;
	memset(&ld, 0, sizeof ld);
	ld.name = name;
	ld.dir = dir_of(name);
	ld.cfg = calloc(1, sizeof *ld.cfg);
	if (ld.dir == NULL || ld.cfg == NULL || (ld.cfg->path = strdup(name)) == NULL) {
		allow_cfg_err_oom(&ld, NULL);
	} else {
		defaults_init(ld.cfg);
		yaml_document_t doc;
		int loaded, empty;
		yaml_node_t *root = doc_load(&ld, buf, len, &doc, &loaded, &empty);
		if (empty) {
			err_mark(&ld, NULL, "%s", CFG_EMPTY_MSG);
		} else if (root != NULL && root->type != YAML_MAPPING_NODE) {
			char q[CFG_QUOTE_BUF];
			allow_cfg_err_at(&ld, root,
			        "the top level must be a mapping (listen, dns, limits, audit, tls, "
			        "bounds, sessions), got %s",
			        node_desc(root, q, sizeof q));
		} else if (root != NULL) {
			allow_cfg_walk(&ld, root, allow_cfg_top_keys, ld.cfg);
			allow_cfg_sessions_finish(&ld);
		}
		if (loaded)
			yaml_document_delete(&doc);
		ld.doc = NULL;
		if (ld.nerrs == 0 && !ld.oom &&
		        (defaults_fill(ld.cfg) == -1 || sessions_move(&ld) == -1 ||
		                bounds_move(&ld) == -1))
			allow_cfg_err_oom(&ld, NULL);
	}
	struct allow_config *cfg = ld.cfg;
	if (ld.nerrs > 0 || ld.oom) {
		allow_config_free(cfg);
		cfg = NULL;
	}
	errors_hand_over(&ld, errs);
	loader_free(&ld);
	return cfg;
}

int allow_config_session_load(const struct allow_config *cfg, const char *bodyname,
        const char *session_name, const char *buf, size_t len, struct allow_session_config *out,
        struct allow_errors *errs)
{
	struct cfg_loader ld;
	memset(&ld, 0, sizeof ld);
	memset(out, 0, sizeof *out);
	ld.name = bodyname;
	ld.base = cfg;
	ld.body = 1;
	yaml_document_t doc;
	int loaded, empty;
	yaml_node_t *root = doc_load(&ld, buf, len, &doc, &loaded, &empty);
	if (root != NULL && root->type != YAML_MAPPING_NODE) {
		char q[CFG_QUOTE_BUF];
		allow_cfg_err_at(&ld, root,
		        "a session must be a mapping (bounds, bound, limits, auth, clients), got "
		        "%s",
		        node_desc(root, q, sizeof q));
	} else if (root != NULL || empty) {
		allow_cfg_session_body(&ld, session_name, root);
		allow_cfg_sessions_finish(&ld);
	}
	if (loaded)
		yaml_document_delete(&doc);
	ld.doc = NULL;
	int rc = -1;
	if (ld.nerrs == 0 && !ld.oom && ld.nsw == 1) {
		*out = ld.sw[0].s;
		memset(&ld.sw[0].s, 0, sizeof ld.sw[0].s);
		ld.sw[0].bound_ready = 0;
		rc = 0;
	} else if (ld.nerrs == 0 && !ld.oom) {
		allow_cfg_err_oom(&ld, NULL);
	}
	errors_hand_over(&ld, errs);
	loader_free(&ld);
	return rc;
}

struct allow_config *allow_config_load_buffer(
        const char *name, const char *buf, size_t len, struct allow_errors *errs)
{
	return load(name, buf, len, errs);
}

struct allow_config *allow_config_load(const char *path, struct allow_errors *errs)
{
	char line[CFG_MSG_MAX];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
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
		char **nl = t != NULL && errs != NULL
		                    ? realloc(errs->lines, (errs->n + 2) * sizeof *nl)
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

static void free_strings(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void allow_config_free(struct allow_config *cfg)
{
	if (cfg == NULL)
		return;
	free(cfg->path);
	free_strings(cfg->listen_proxy, cfg->nlisten_proxy);
	free_strings(cfg->listen_socks5, cfg->nlisten_socks5);
	free_strings(cfg->listen_transparent, cfg->nlisten_transparent);
	free_strings(cfg->listen_dns, cfg->nlisten_dns);
	free(cfg->listen_control);
	free(cfg->listen_metrics);
	for (size_t i = 0; i < cfg->dns.nservers; i++)
		free(cfg->dns.servers[i]);
	free(cfg->dns.servers);
	free(cfg->dns.hosts);
	free(cfg->dns.allow_addresses);
	free(cfg->dns.deny_addresses);
	free(cfg->audit_path);
	for (size_t i = 0; i < ALLOW_REG_COUNT; i++)
		free(cfg->registries[i]);
	free(cfg->tls.ca_cert);
	free(cfg->tls.ca_key);
	free(cfg->tls.upstream_ca);
	for (size_t i = 0; i < cfg->nsessions; i++)
		session_config_free(&cfg->sessions[i], 1);
	free(cfg->sessions);
	for (size_t i = 0; i < cfg->nbounds; i++) {
		free(cfg->bounds[i].name);
		allow_bound_free(&cfg->bounds[i].bound);
	}
	free(cfg->bounds);
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

const struct allow_session_config *allow_config_session(
        const struct allow_config *cfg, const char *name)
{
	if (cfg == NULL || name == NULL)
		return NULL;
	for (size_t i = 0; i < cfg->nsessions; i++)
		if (strcmp(cfg->sessions[i].name, name) == 0)
			return &cfg->sessions[i];
	return NULL;
}

void allow_session_config_free(struct allow_session_config *s)
{
	if (s != NULL && s->name != NULL)
		session_config_free(s, 1);
}
