/* cls_classify: the context (arena, limits, findings) around one classification, and the
 * result handed back to the caller. */
#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "allowlist/tags.h"
#include "classifier/classifier.h"
#include "classifier/internal.h"

void *cls_alloc(struct cls_ctx *c, size_t size, size_t off)
{
	size = (size + 15) & ~(size_t)15;
	if (size > c->left) {
		size_t want = size > 16384 ? size : 16384;
		if (c->total + want > CLS_ARENA_CAP) {
			cls_refuse(c, off, "line needs too much memory to classify");
			return NULL;
		}
		/* The chunk header is padded to 16 bytes so allocations stay aligned. */
		char *raw = malloc(16 + want);
		if (raw == NULL) {
			cls_refuse(c, off, "out of memory");
			return NULL;
		}
		struct cls_chunk *ch = (struct cls_chunk *)(void *)raw;
		ch->next = c->chunks;
		c->chunks = ch;
		c->total += want;
		c->cur = raw + 16;
		c->left = want;
	}
	void *p = c->cur;
	c->cur += size;
	c->left -= size;
	return p;
}

char *cls_strdup(struct cls_ctx *c, const char *s, size_t len, size_t off)
{
	char *p = cls_alloc(c, len + 1, off);
	if (p == NULL)
		return NULL;
	if (len)
		memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

int cls_refuse(struct cls_ctx *c, size_t off, const char *fmt, ...)
{
	if (c->refused)
		return -1;
	c->refused = 1;
	c->offset = off;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->reason, sizeof c->reason, fmt, ap);
	va_end(ap);
	return -1;
}

int cls_enter(struct cls_ctx *c, size_t off)
{
	if (c->depth >= CLS_MAX_DEPTH)
		return cls_refuse(c, off, "nesting deeper than %d", CLS_MAX_DEPTH);
	c->depth++;
	return 0;
}

void cls_leave(struct cls_ctx *c)
{
	c->depth--;
}

int cls_add_program(struct cls_ctx *c, const char *s, size_t len)
{
	for (struct cls_name *n = c->programs; n != NULL; n = n->next)
		if (n->len == len && memcmp(n->s, s, len) == 0)
			return 0;
	struct cls_name *n = cls_alloc(c, sizeof *n + len + 1, 0);
	if (n == NULL)
		return -1;
	n->len = len;
	memcpy(n->s, s, len);
	n->s[len] = '\0';
	n->next = c->programs;
	c->programs = n;
	c->nprograms++;
	return 0;
}

static void add_dest(struct cls_ctx *c, const struct allow_dest *d)
{
	for (struct cls_destnode *n = c->dests; n != NULL; n = n->next)
		if (n->d.port == d->port && strcmp(n->d.host, d->host) == 0)
			return;
	struct cls_destnode *n = cls_alloc(c, sizeof *n, 0);
	if (n == NULL) {
		/* only a refusal can follow; the host list no longer matters */
		return;
	}
	n->d = *d;
	n->next = c->dests;
	c->dests = n;
	c->ndests++;
}

void cls_add_host(struct cls_ctx *c, const char *s, size_t len)
{
	const char *at = memchr(s, '@', len);
	if (at != NULL) {
		/* user@host: the last '@' separates them */
		const char *p = s + len;
		while (p > s && p[-1] != '@')
			p--;
		len -= (size_t)(p - s);
		s = p;
	}
	if (len == 0 || memchr(s, CLS_EXP_MARK, len) != NULL)
		return;
	struct allow_dest d;
	if (allow_canon_host(s, len, &d) != ALLOW_CANON_OK)
		return;
	d.port = 0;
	add_dest(c, &d);
}

void cls_add_url_host(struct cls_ctx *c, const struct cls_word *w, int bare)
{
	const char *s = w->s, *end = w->s + w->len;
	const char *p = strstr(s, "://");
	if (p != NULL && memchr(s, CLS_EXP_MARK, (size_t)(p - s)) == NULL) {
		size_t sl = (size_t)(p - s);
		if (sl == 4 && strncasecmp(s, "file", 4) == 0)
			return;
		p += 3;
	} else if (bare) {
		p = s;
	} else {
		return;
	}
	const char *a = p;
	while (p < end && *p != '/' && *p != '?' && *p != '#')
		p++;
	/* a = authority [user@]host[:port] */
	const char *h = a;
	for (const char *q = a; q < p; q++)
		if (*q == '@')
			h = q + 1;
	size_t hl = (size_t)(p - h);
	if (hl == 0 || memchr(h, CLS_EXP_MARK, hl) != NULL)
		return;
	const char *colon = NULL;
	if (h[0] == '[') {
		const char *rb = memchr(h, ']', hl);
		if (rb == NULL)
			return;
		if (rb + 1 < p && rb[1] == ':')
			colon = rb + 1;
		else if (rb + 1 != p)
			return;
	} else {
		colon = memchr(h, ':', hl);
	}
	struct allow_dest d;
	size_t nl = colon ? (size_t)(colon - h) : hl;
	if (allow_canon_host(h, nl, &d) != ALLOW_CANON_OK)
		return;
	d.port = 0;
	if (colon != NULL) {
		unsigned long port = 0;
		const char *q = colon + 1;
		if (q == p)
			goto done; /* "host:" means the default port */
		for (; q < p; q++) {
			if (*q < '0' || *q > '9' || port > 65535)
				return;
			port = port * 10 + (unsigned long)(*q - '0');
		}
		if (port == 0 || port > 65535)
			return;
		d.port = (uint16_t)port;
	}
done:
	add_dest(c, &d);
}

/* Whether text (lower case) starts at s[i], quotes and backslashes between its letters
 * skipped: quote removal joins `POSIXLY_"CORRECT"' into one name. */
static int shown_at(const char *s, size_t len, size_t i, const char *text)
{
	for (; *text != '\0'; text++, i++) {
		while (i < len && (s[i] == '\'' || s[i] == '"' || s[i] == '\\'))
			i++;
		if (i >= len || tolower((unsigned char)s[i]) != *text)
			return 0;
	}
	return 1;
}

void cls_note_shown(struct cls_ctx *c, const char *s, size_t len)
{
	static const struct {
		const char *text;
		unsigned bit;
	} texts[] = {{"tcp", CLS_SHOW_NETDEV}, {"udp", CLS_SHOW_NETDEV},
	        {"posixly_correct", CLS_SHOW_POSIX}, {"shellopts", CLS_SHOW_POSIX},
	        {"bashopts", CLS_SHOW_POSIX}, {"expand_aliases", CLS_SHOW_POSIX},
	        {"textdomain", CLS_SHOW_LOCALE}};
	/* which texts (bit k for texts[k]) begin with a byte, either case: the scan runs over
	 * every byte of every line, so a byte no text begins with costs one load */
	static const unsigned char first[256] = {['t'] = 0x41, ['T'] = 0x41, ['u'] = 0x02,
	        ['U'] = 0x02, ['p'] = 0x04, ['P'] = 0x04, ['s'] = 0x08, ['S'] = 0x08, ['b'] = 0x10,
	        ['B'] = 0x10, ['e'] = 0x20, ['E'] = 0x20};
	for (size_t i = 0; i < len; i++) {
		unsigned m = first[(unsigned char)s[i]];
		if (m == 0)
			continue;
		/* the next byte decides most: the text's second letter, or a quote or backslash */
		char nx = i + 1 < len ? s[i + 1] : '\0';
		int q = nx == '\'' || nx == '"' || nx == '\\';
		for (size_t k = 0; m != 0; k++, m >>= 1)
			if ((m & 1u) && !(c->shows & texts[k].bit) &&
			        (q || (char)(nx | 0x20) == texts[k].text[1]) &&
			        shown_at(s, len, i, texts[k].text))
				c->shows |= texts[k].bit;
	}
}

/* Whether a command word the line ran may be an alias it defined: one of the names alias (or
 * BASH_ALIASES) gave, or any when a name was not static. */
static int alias_ran(const struct cls_ctx *c)
{
	for (const struct cls_name *p = c->programs; p != NULL; p = p->next) {
		if (c->alias_any)
			return 1;
		for (const struct cls_name *a = c->aliases; a != NULL; a = a->next)
			if (a->len == p->len && memcmp(a->s, p->s, p->len) == 0)
				return 1;
	}
	return 0;
}

/* Runs one command of a list.  An asynchronous command reads /dev/null rather than the
 * standard input it would inherit, unless job control is on (set -m): it runs both ways
 * (oracle fuzz finding: `echo x > >(http x.test &)' sent no body, http:read, and was
 * http:write). */
static int run_listed(struct cls_ctx *c, const struct cls_cmd *cmd, unsigned inherit)
{
	const unsigned in_flags = CLS_C_PIPED | CLS_C_STDIN | CLS_C_DLIN;
	unsigned f = cmd->flags | inherit;
	if (cls_run_cmd(c, cmd->argv, cmd->argc, f, cmd->doc) == -1)
		return -1;
	if ((f & CLS_C_ASYNC) && (f & in_flags))
		return cls_run_cmd(c, cmd->argv, cmd->argc, f & ~in_flags, NULL);
	return 0;
}

int cls_run_script(struct cls_ctx *c, const char *src, size_t len, size_t base, unsigned inherit)
{
	struct cls_cmd *list = NULL;
	if (memchr(src, '\0', len) != NULL)
		return cls_refuse(c, base, "script contains a NUL byte");
	if (cls_enter(c, base) == -1 || cls_parse(c, src, len, base, &list) == -1)
		return -1;
	c->scripts++; /* another shell, or later: the line's variables may differ there */
	for (struct cls_cmd *cmd = list; cmd != NULL; cmd = cmd->next)
		if (run_listed(c, cmd, inherit) == -1)
			return -1;
	c->scripts--;
	cls_leave(c);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Copies names into one malloc'ed block: the pointer array, then the strings. */
static char **export_names(struct cls_name *list, size_t n)
{
	size_t bytes = n * sizeof(char *);
	for (struct cls_name *p = list; p != NULL; p = p->next)
		bytes += p->len + 1;
	char **v = malloc(bytes ? bytes : 1);
	if (v == NULL)
		return NULL;
	char *text = (char *)(v + n);
	size_t i = 0;
	for (struct cls_name *p = list; p != NULL; p = p->next) {
		memcpy(text, p->s, p->len + 1);
		v[i++] = text;
		text += p->len + 1;
	}
	qsort(v, n, sizeof *v, cmp_str);
	return v;
}

static int cmp_dest(const void *a, const void *b)
{
	const struct allow_dest *x = a, *y = b;
	int r = strcmp(x->host, y->host);
	return r ? r : (int)x->port - (int)y->port;
}

static void free_ctx(struct cls_ctx *c)
{
	while (c->chunks != NULL) {
		struct cls_chunk *n = c->chunks->next;
		free(c->chunks);
		c->chunks = n;
	}
}

static int finish(struct cls_ctx *c, struct cls_result *r)
{
	if (c->refused) {
		r->refused = 1;
		snprintf(r->reason, sizeof r->reason, "%s", c->reason);
		r->offset = c->offset;
		return -1;
	}
	r->tags = c->tags;
	r->registries = c->registries;
	if (c->nprograms > 0) {
		r->programs = export_names(c->programs, c->nprograms);
		if (r->programs == NULL)
			goto oom;
		r->nprograms = c->nprograms;
	}
	if (c->ndests > 0) {
		r->dests = malloc(c->ndests * sizeof *r->dests);
		if (r->dests == NULL)
			goto oom;
		size_t i = 0;
		for (struct cls_destnode *n = c->dests; n != NULL; n = n->next)
			r->dests[i++] = n->d;
		qsort(r->dests, c->ndests, sizeof *r->dests, cmp_dest);
		r->ndests = c->ndests;
		/* distinct host names, already sorted */
		struct cls_name *names = NULL, **tail = &names;
		size_t nn = 0;
		for (i = 0; i < r->ndests; i++) {
			if (i > 0 && strcmp(r->dests[i].host, r->dests[i - 1].host) == 0)
				continue;
			size_t l = strlen(r->dests[i].host);
			struct cls_name *n = cls_alloc(c, sizeof *n + l + 1, 0);
			if (n == NULL)
				goto oom;
			n->len = l;
			memcpy(n->s, r->dests[i].host, l + 1);
			n->next = NULL;
			*tail = n;
			tail = &n->next;
			nn++;
		}
		r->hosts = export_names(names, nn);
		if (r->hosts == NULL)
			goto oom;
		r->nhosts = nn;
	}
	return 0;
oom:
	cls_result_free(r);
	memset(r, 0, sizeof *r);
	r->refused = 1;
	snprintf(r->reason, sizeof r->reason, "out of memory");
	return -1;
}

int cls_classify(const char *line, size_t len, struct cls_result *result)
{
	memset(result, 0, sizeof *result);
	struct cls_ctx *c = malloc(sizeof *c);
	if (c == NULL) {
		result->refused = 1;
		snprintf(result->reason, sizeof result->reason, "out of memory");
		return -1;
	}
	memset(c, 0, offsetof(struct cls_ctx, writes));
	c->cur = c->first;
	c->left = sizeof c->first;
	const char *nul;
	if (len > CLS_MAX_INPUT) {
		cls_refuse(c, CLS_MAX_INPUT, "input over %d bytes", CLS_MAX_INPUT);
	} else if ((nul = memchr(line, '\0', len)) != NULL) {
		cls_refuse(c, (size_t)(nul - line), "input contains a NUL byte");
	} else {
		/* brace expansion may be switched off somewhere on the line (set +B, set +eB, bash
		 * +B, +o braceexpand): then no argument's braces are expanded (black-box round 8:
		 * `set +B;git -C {a,status} push' ran git push) */
		for (const char *p = memchr(line, '+', len); p != NULL && !c->brace_off;
		        p = memchr(p, '+', (size_t)(line + len - p))) {
			p++;
			while (p < line + len && isalpha((unsigned char)*p))
				if (*p++ == 'B')
					c->brace_off = 1;
		}
		if (memmem(line, len, "braceexpand", 11) != NULL)
			c->brace_off = 1;
		struct cls_cmd *list = NULL;
		if (cls_parse(c, line, len, 0, &list) == 0) {
			for (struct cls_cmd *cmd = list; cmd != NULL; cmd = cmd->next)
				if (run_listed(c, cmd, 0) == -1)
					break;
			/* the files it wrote and ran, once everything that writes one is known */
			if (!c->refused)
				(void)cls_check_writes(c);
		}
		/* a string holding a substitution and a construct that evaluates a value:
		 * `x='a[$(git push)]'; (( x ))` runs git push (issue 12) */
		/* a value built at run time where bash evaluates it as code (values.c; black-box
		 * finding A7) */
		cls_val_check(c);
		if (c->latent && c->evaluates)
			cls_refuse(c, c->latent_off,
			        "a string holding a command substitution may be evaluated "
			        "(arithmetic, a subscript, indirection)");
		/* bash expands aliases once POSIXLY_CORRECT has any value, however the line gave
		 * it one (read, printf -v, a for variable, ${x:=}, let, a nameref, an export to a
		 * child bash), and at whatever point of a loop or an eval (black-box round 4) */
		int any_name = c->dyn_target || c->sink_all; /* read "$n", declare -n, ... */
		/* the texts the line shows matter to the three checks below only: scanning every
		 * line for them took a fifth of all the work */
		if (((c->aliases != NULL || c->alias_any) && !c->aliases_on && !any_name) ||
		        c->locale_str || c->redir_exp)
			cls_note_shown(c, line, len);
		if ((c->aliases_on || (c->shows & CLS_SHOW_POSIX) || any_name) && alias_ran(c))
			cls_refuse(c, 0,
			        "the line defines an alias, runs a command of that name and may switch "
			        "alias expansion on (POSIXLY_CORRECT, SHELLOPTS, expand_aliases)");
		/* $"..." is translated with the catalog TEXTDOMAIN and TEXTDOMAINDIR name: one the
		 * line sets may turn `pull' into `push' (black-box round 4) */
		if (c->locale_str && ((c->shows & CLS_SHOW_LOCALE) || any_name))
			cls_refuse(c, c->locale_off,
			        "$\"...\" on a line that sets TEXTDOMAIN or TEXTDOMAINDIR: bash translates "
			        "it with a catalog the line chooses");
		/* a redirection to an expansion on a line that shows tcp or udp: the value may be
		 * /dev/tcp/HOST/PORT, which bash opens as a connection (black-box round 4) */
		if (c->redir_exp && (c->shows & CLS_SHOW_NETDEV))
			c->tags |= ALLOW_TAG_NET_RAW;
	}
	int rc = finish(c, result);
	free_ctx(c);
	free(c);
	return rc;
}

void cls_result_free(struct cls_result *result)
{
	free(result->programs);
	result->programs = NULL;
	result->nprograms = 0;
	free(result->hosts);
	result->hosts = NULL;
	result->nhosts = 0;
	free(result->dests);
	result->dests = NULL;
	result->ndests = 0;
}
