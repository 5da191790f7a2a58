/* Program resolution: the command word, then wrappers (each with its own option arity) until
 * the program that does the work, then that program's rule (rules.c).
 *
 * A wrapper handler returns 1 with r->v/r->n moved to the command it runs, 0 when nothing more
 * runs (or it classified a script itself), -1 when the line is refused. */
#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "allowlist/tags.h"
#include "classifier/classifier.h"
#include "classifier/internal.h"

struct run {
	const struct cls_word *v; /* the command's words, v[0] the program */
	size_t n;
	unsigned flags;            /* CLS_C_* */
	const struct cls_doc *doc; /* standard input's here-doc or here-string */
};

static int cls_in_list_empty(const char *const *list)
{
	for (size_t i = 0; list[i] != NULL && list[i][0] != CLS_LONG_FLAGS[0]; i++)
		if (list[i][0] == '\0')
			return 1;
	return 0;
}

int cls_in_list(const char *const *list, const char *o, size_t ol)
{
	if (list == NULL)
		return 0;
	if (ol == 0)
		return cls_in_list_empty(list);
	/* the first byte rules most entries out before any length is counted */
	for (size_t i = 0; list[i] != NULL && list[i][0] != CLS_LONG_FLAGS[0]; i++)
		if (list[i][0] == o[0]) {
			const char *e = list[i];
			size_t k = 1;
			while (k < ol && e[k] == o[k])
				k++;
			if (k == ol && e[k] == '\0')
				return 1;
		}
	return 0;
}

int cls_word_is(const struct cls_word *w, const char *lit)
{
	return !(w->flags & CLS_W_EXP) && w->s[0] == lit[0] && strcmp(w->s, lit) == 0;
}

int cls_method_is_read(const char *s, size_t len)
{
	static const char *const reads[] = {"GET", "HEAD", "OPTIONS"};
	for (size_t i = 0; i < 3; i++) {
		size_t l = strlen(reads[i]);
		if (l != len)
			continue;
		size_t k = 0;
		while (k < l && (s[k] & ~0x20) == reads[i][k])
			k++;
		if (k == l)
			return 1;
	}
	return 0;
}

static int name_is(const char *s, size_t l, const char *lit)
{
	return strlen(lit) == l && memcmp(s, lit, l) == 0;
}

/* Whether w is --NAME[=...] where NAME is a non-empty prefix of lng. */
static int git_prefix(const struct cls_word *w, const char *lng)
{
	if (w->len < 3 || w->s[0] != '-' || w->s[1] != '-' || (w->flags & CLS_W_EXP))
		return 0;
	const char *eq = memchr(w->s, '=', w->len);
	size_t nl = eq ? (size_t)(eq - w->s - 2) : w->len - 2;
	return nl > 0 && nl <= strlen(lng) && memcmp(w->s + 2, lng, nl) == 0;
}

/* The basename of a static word. */
static const char *word_base(const struct cls_word *w, size_t *len)
{
	const char *b = w->s;
	for (const char *p = w->s; p < w->s + w->len; p++)
		if (*p == '/')
			b = p + 1;
	*len = (size_t)(w->s + w->len - b);
	return b;
}

int cls_cmds_download(const struct cls_cmd *from, const struct cls_cmd *to)
{
	/* programs whose standard output is what a remote end sent */
	static const char *const dl[] = {"GET", "HEAD", "POST", "aria2c", "curl", "fetch", "ftp",
	        "gh", "http", "https", "lwp-download", "lwp-request", "nc", "nc.openbsd",
	        "nc.traditional", "ncat", "netcat", "openssl", "s_client", "scp", "sftp", "slogin",
	        "socat", "ssh", "telnet", "tftp", "websocat", "wget", "wget2", "xh", "xhs", NULL};
	for (const struct cls_cmd *c = from; c != NULL && c != to; c = c->next)
		for (size_t i = 0; i < c->argc; i++) {
			size_t bl;
			const char *b = word_base(&c->argv[i], &bl);
			/* the first byte rules most words out before the list is looked at */
			if (bl < 2 || bl > 12 || strchr("GHPacfghlnostwx", b[0]) == NULL ||
			        (c->argv[i].flags & CLS_W_EXP))
				continue;
			if (cls_in_list(dl, b, bl))
				return 1;
		}
	return 0;
}

/* Refuses a shell or interpreter whose program is not static: it comes from a pipe, a
 * redirection, a descriptor, a process substitution or an expansion.  When a download feeds
 * it, the reason is download-to-shell. */
static int refuse_program(struct cls_ctx *c, size_t off, int download, const char *from)
{
	if (download)
		return cls_refuse(c, off,
		        "download-to-shell: a shell or interpreter runs what a download printed "
		        "(%s)",
		        from);
	return cls_refuse(c, off, "a shell or interpreter reads its program from %s: not static",
	        from);
}

/* getopt_long's matching, for a spec that lists its flags too: an exact name, else a prefix
 * of exactly one option stands for it ("--sig" is --signal).  An ambiguous prefix is left as
 * it is: the tool refuses it and runs nothing. */
static void long_resolve(const struct cls_opts *spec, const char **l, size_t *ll)
{
	const char *const *lv = spec->lv;
	size_t i, m = 0;
	int has_flags = 0;
	if (lv == NULL || *ll == 0)
		return;
	const char *hit = NULL;
	for (i = 0; lv[i] != NULL; i++) {
		if (lv[i][0] == CLS_LONG_FLAGS[0]) {
			has_flags = 1;
		} else if (lv[i][0] == (*l)[0] && strncmp(lv[i], *l, *ll) == 0) {
			if (lv[i][*ll] == '\0')
				return; /* an exact name wins */
			hit = lv[i];
			m++;
		}
	}
	if (!has_flags)
		return;
	if (m == 1) {
		*l = hit;
		*ll = strlen(hit);
	}
}

size_t cls_opts_walk(const struct cls_word *v, size_t n, size_t i, const struct cls_opts *spec,
        cls_opt_fn fn, void *arg, int *stopped)
{
	if (stopped != NULL)
		*stopped = 0;
	while (i < n) {
		const struct cls_word *w = &v[i];
		const char *s = w->s;
		size_t len = w->len;
		struct cls_opt o;
		memset(&o, 0, sizeof o);
		if (len >= 2 && s[0] == '-' && s[1] == '-') {
			if (len == 2)
				return i + 1;
			const char *name = s + 2;
			const char *eq = memchr(name, '=', len - 2);
			o.l = name;
			o.ll = eq ? (size_t)(eq - name) : len - 2;
			long_resolve(spec, &o.l, &o.ll);
			i++;
			if (eq != NULL) {
				o.val = eq + 1;
				o.vlen = len - (size_t)(eq + 1 - s);
				o.vw = w;
			} else if (cls_in_list(spec->lv, o.l, o.ll) && i < n) {
				o.val = v[i].s;
				o.vlen = v[i].len;
				o.vw = &v[i];
				i++;
			}
			if (fn != NULL && fn(arg, &o)) {
				if (stopped != NULL)
					*stopped = 1;
				return i;
			}
			continue;
		}
		if (len < 2 || (s[0] != '-' && !(spec->plus && s[0] == '+')))
			return i;
		if (spec->numeric && s[1] >= '0' && s[1] <= '9') {
			i++;
			continue;
		}
		i++;
		for (size_t j = 1; j < len; j++) {
			char ch = s[j];
			memset(&o, 0, sizeof o);
			o.c = ch;
			if (spec->sv != NULL && ch != '\0' && strchr(spec->sv, ch) != NULL) {
				if (j + 1 < len) {
					o.val = s + j + 1;
					o.vlen = len - j - 1;
					o.vw = w;
				} else if (i < n) {
					o.val = v[i].s;
					o.vlen = v[i].len;
					o.vw = &v[i];
					i++;
				}
				j = len;
			} else if (spec->so != NULL && ch != '\0' && strchr(spec->so, ch) != NULL) {
				if (j + 1 < len) {
					o.val = s + j + 1;
					o.vlen = len - j - 1;
					o.vw = w;
				}
				j = len;
			}
			if (fn != NULL && fn(arg, &o)) {
				if (stopped != NULL)
					*stopped = 1;
				return i;
			}
		}
	}
	return i;
}

/* Moves r past its first k words.  A wrapper left without a command under xargs (or parallel)
 * runs one that xargs' input supplies: unknown, so refused. */
static int shift(struct run *r, size_t k)
{
	if (k >= r->n) {
		if (r->flags & CLS_C_XARGS)
			return -2;
		return 0;
	}
	r->v += k;
	r->n -= k;
	return 1;
}

/* What a wrapper whose command words ran out answers: nothing runs, except under xargs (or
 * parallel), whose input supplies them: unknown, so refused (oracle fuzz finding: `echo 'wget
 * --post-data=x URL' | xargs flock /tmp/l` was none). */
static int none_left(const struct run *r)
{
	return (r->flags & CLS_C_XARGS) ? -2 : 0;
}

/* Skips NAME=VALUE words at v[k..]. */
static size_t skip_assignments(const struct run *r, size_t k)
{
	while (k < r->n) {
		const struct cls_word *w = &r->v[k];
		const char *eq = memchr(w->s, '=', w->len);
		if (eq == NULL || eq == w->s)
			break;
		k++;
	}
	return k;
}

/* Joins v[0..n) with spaces into the arena; -1 (refused, naming what) when one is not static. */
static int join_static(struct cls_ctx *c, const struct cls_word *v, size_t n, const char *what,
        char **out, size_t *outlen)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i].flags & CLS_W_DL)
			return refuse_program(c, v[i].off, 1, what);
		if (v[i].flags & CLS_W_EXP)
			return cls_refuse(c, v[i].off, "%s is not static", what);
		total += v[i].len + 1;
	}
	char *s = cls_alloc(c, total + 1, n ? v[0].off : 0);
	if (s == NULL)
		return -1;
	size_t p = 0;
	for (size_t i = 0; i < n; i++) {
		if (i)
			s[p++] = ' ';
		memcpy(s + p, v[i].s, v[i].len);
		p += v[i].len;
	}
	s[p] = '\0';
	*out = s;
	*outlen = p;
	return 0;
}

static int run_word_script(
        struct cls_ctx *c, const struct cls_word *w, const char *what, unsigned flags)
{
	if (w->flags & CLS_W_DL)
		return refuse_program(c, w->off, 1, what);
	if (w->flags & CLS_W_EXP)
		return cls_refuse(c, w->off, "%s is not static", what);
	return cls_run_script(c, w->s, w->len, w->off, flags & (CLS_C_PIPED | CLS_C_STDIN));
}

static int stdin_program(
        struct cls_ctx *c, const struct run *r, int shell, unsigned inherit, size_t off);
static int is_network_program(const char *b, size_t bl);
static int is_handled(const char *b);
static int copies_program(struct cls_ctx *c, const struct run *r);
static int handler_glob(const char *pat);
static int w_busybox(struct cls_ctx *c, struct run *r);

/* ---- option collectors ------------------------------------------------------------------ */

/* Remembers the value of one option (short letter c or long name l) and whether letters of
 * `flags` (or long names in `lflags`) were seen. */
struct grab {
	char c;                    /* short option whose value is wanted */
	const char *l;             /* its long name, or NULL */
	const struct cls_opt *hit; /* unused: values are copied below */
	const char *val;           /* the value found */
	size_t vlen;
	const struct cls_word *vw;
	int found;
	const char *flags;         /* short letters to note */
	const char *const *lflags; /* long names to note */
	int flagged;               /* one of them was seen */
	int stop;                  /* stop the walk when the value is found */
};

static int grab_fn(void *arg, const struct cls_opt *o)
{
	struct grab *g = arg;
	if ((o->c != 0 && o->c == g->c) || (o->c == 0 && g->l != NULL && strlen(g->l) == o->ll &&
	                                           memcmp(g->l, o->l, o->ll) == 0)) {
		g->found = 1;
		g->val = o->val;
		g->vlen = o->vlen;
		g->vw = o->vw;
		return g->stop;
	}
	if ((o->c != 0 && g->flags != NULL && strchr(g->flags, o->c) != NULL) ||
	        (o->c == 0 && cls_in_list(g->lflags, o->l, o->ll)))
		g->flagged = 1;
	return 0;
}

/* ---- wrappers --------------------------------------------------------------------------- */

/* env -S's own splitting: quotes, backslash escapes, ${VAR} (not static), # comments. */
static int env_split(
        struct cls_ctx *c, const struct cls_word *w, struct cls_word **out, size_t *nout)
{
	const char *s = w->s;
	size_t len = w->len, i = 0, n = 0;
	if (w->flags & CLS_W_EXP)
		return cls_refuse(c, w->off, "env -S string is not static");
	struct cls_word *v = cls_alloc(c, (len / 2 + 2) * sizeof *v, w->off);
	char *buf = cls_alloc(c, len + 1, w->off);
	if (v == NULL || buf == NULL)
		return -1;
	size_t bp = 0;
	for (;;) {
		while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n'))
			i++;
		if (i >= len || s[i] == '#')
			break;
		size_t start = bp;
		char q = 0;
		int stop = 0;
		while (i < len) {
			char ch = s[i];
			if (!q && (ch == ' ' || ch == '\t' || ch == '\n'))
				break;
			if (ch == '\'' && q != '"') {
				q = q ? 0 : '\'';
				i++;
				continue;
			}
			if (ch == '"' && q != '\'') {
				q = q ? 0 : '"';
				i++;
				continue;
			}
			if (ch == '$' && q != '\'' && i + 1 < len && s[i + 1] == '{')
				return cls_refuse(c, w->off, "env -S string is not static");
			if (ch == '\\' && q != '\'' && i + 1 < len) {
				char e = s[i + 1];
				i += 2;
				switch (e) {
				case '_':
					if (q != '"') {
						/* outside double quotes \_ separates words */
						stop = 2;
						break;
					}
					buf[bp++] = ' ';
					break;
				case 'n':
					buf[bp++] = '\n';
					break;
				case 't':
					buf[bp++] = '\t';
					break;
				case 'c':
					stop = 1;
					break;
				default:
					buf[bp++] = e;
					break;
				}
				if (stop == 2) {
					stop = 0;
					break;
				}
				if (stop)
					break;
				continue;
			}
			buf[bp++] = ch;
			i++;
		}
		v[n].s = buf + start;
		v[n].len = bp - start;
		v[n].flags = 0;
		v[n].off = w->off;
		v[n].deps = NULL;
		buf[bp++] = '\0';
		n++;
		if (stop)
			break;
	}
	*out = v;
	*nout = n;
	return 0;
}

static int w_env(struct cls_ctx *c, struct run *r)
{
	static const char *const lv[] = {"unset", "chdir", "split-string", "argv0", CLS_LONG_FLAGS,
	        "ignore-environment", "null", "default-signal",
	        "ignore-signal", "block-signal", "list-signal-handling", "debug", "help", "version",
	        NULL};
	static const struct cls_opts spec = {"uCSa", NULL, lv, 0, 0};
	struct grab g = {.c = 'S', .l = "split-string", .stop = 1};
	int stopped;
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, grab_fn, &g, &stopped);
	if (stopped) {
		if (g.vw == NULL)
			return none_left(r);
		/* env -S 'STRING' rest...: the split string takes the place of the option */
		struct cls_word piece = *g.vw;
		piece.s = g.val;
		piece.len = g.vlen;
		struct cls_word *split = NULL;
		size_t ns = 0;
		if (env_split(c, &piece, &split, &ns) == -1)
			return -1;
		size_t rest = r->n - k;
		struct cls_word *nv = cls_alloc(c, (1 + ns + rest) * sizeof *nv, r->v[0].off);
		if (nv == NULL)
			return -1;
		nv[0] = r->v[0];
		memcpy(nv + 1, split, ns * sizeof *nv);
		memcpy(nv + 1 + ns, r->v + k, rest * sizeof *nv);
		r->v = nv;
		r->n = 1 + ns + rest;
		return 1; /* env again, with the split words */
	}
	if (k < r->n && cls_word_is(&r->v[k], "-"))
		k++;
	size_t a = k;
	k = skip_assignments(r, k);
	for (; a < k; a++)
		if (cls_assignment(c, &r->v[a]) == -1)
			return -1;
	return shift(r, k);
}

static int w_sudo(struct cls_ctx *c, struct run *r)
{
	static const char *const lv[] = {"user", "group", "close-from", "chdir", "host", "prompt",
	        "role", "type", "command-timeout", "other-user", "chroot", CLS_LONG_FLAGS,
	        "askpass", "background", "bell", "edit", "help", "list",
	        "login", "non-interactive", "preserve-env", "preserve-groups", "remove-timestamp",
	        "reset-timestamp", "set-home", "shell", "stdin", "validate", "version", NULL};
	static const char *const lflags[] = {
	        "list", "validate", "edit", "version", "help", "remove-timestamp", NULL};
	static const struct cls_opts spec = {"CDgpRrtTUu", NULL, lv, 0, 0};
	struct grab g = {.flags = "lveKVh", .lflags = lflags};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, grab_fn, &g, NULL);
	if (g.flagged)
		return 0; /* lists, validates or edits: runs no command */
	size_t a = k;
	k = skip_assignments(r, k);
	for (; a < k; a++)
		if (cls_assignment(c, &r->v[a]) == -1)
			return -1;
	return shift(r, k);
}

static int w_doas(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const struct cls_opts spec = {"uC", NULL, NULL, 0, 0};
	return shift(r, cls_opts_walk(r->v, r->n, 1, &spec, NULL, NULL, NULL));
}

/* Walks options wherever they are (GNU getopt permutes), collecting g. */
static void walk_permuted(const struct run *r, const struct cls_opts *spec, struct grab *g)
{
	size_t i = 1;
	while (i < r->n) {
		if (cls_word_is(&r->v[i], "--"))
			break;
		size_t k = cls_opts_walk(r->v, r->n, i, spec, grab_fn, g, NULL);
		if (k > 0 && k <= r->n && cls_word_is(&r->v[k - 1], "--"))
			break;
		i = k + 1;
	}
}

static int w_su(struct cls_ctx *c, struct run *r)
{
	static const char *const lv[] = {"command", "shell", "group", "supp-group",
	        "whitelist-environment", "session-command", "user", CLS_LONG_FLAGS, "login",
	        "fast", "preserve-environment", "pty", "help", "version", NULL};
	static const struct cls_opts spec = {"csgGwu", NULL, lv, 0, 0};
	/* words after `--' (past the user) go to the shell: `su root -- -c CMD' */
	for (size_t i = 1; i < r->n; i++)
		if (cls_word_is(&r->v[i], "--")) {
			size_t rest = r->n - i - 1;
			if (rest > 1 || (rest == 1 && r->v[i + 1].len > 0 && r->v[i + 1].s[0] == '-'))
				return cls_refuse(c, r->v[i].off,
				        "su passes the words after -- to the shell: refused");
			break;
		}
	struct grab gs = {.l = "session-command"};
	walk_permuted(r, &spec, &gs);
	if (gs.found)
		return cls_refuse(c, r->v[0].off, "su --session-command: refused");
	struct grab g = {.c = 'c', .l = "command"};
	walk_permuted(r, &spec, &g);
	if (!g.found || g.vw == NULL) {
		/* a login shell: its program is standard input */
		if (r->doc == NULL && !(r->flags & (CLS_C_PIPED | CLS_C_STDIN)))
			return 0;
		return stdin_program(c, r, 1, 0, r->v[0].off);
	}
	struct cls_word w = *g.vw;
	w.s = g.val;
	w.len = g.vlen;
	return run_word_script(c, &w, "su -c command", r->flags);
}

static int w_command(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const struct cls_opts spec = {NULL, NULL, NULL, 0, 0};
	struct grab g = {.flags = "vV"};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, grab_fn, &g, NULL);
	if (g.flagged)
		return 0; /* command -v / -V only look the name up */
	return shift(r, k);
}

static int w_builtin(struct cls_ctx *c, struct run *r)
{
	(void)c;
	return shift(r, 1);
}

static int w_exec(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const struct cls_opts spec = {"a", NULL, NULL, 0, 0};
	return shift(r, cls_opts_walk(r->v, r->n, 1, &spec, NULL, NULL, NULL));
}

static int w_nohup(struct cls_ctx *c, struct run *r)
{
	(void)c;
	size_t k = 1;
	if (k < r->n && cls_word_is(&r->v[k], "--"))
		k++;
	return shift(r, k);
}

static int w_nice(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const char *const lv[] = {"adjustment", CLS_LONG_FLAGS,
	        "help", "version", NULL};
	static const struct cls_opts spec = {"n", NULL, lv, 0, 1};
	return shift(r, cls_opts_walk(r->v, r->n, 1, &spec, NULL, NULL, NULL));
}

static int w_ionice(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const char *const lv[] = {"class", "classdata", "pid", "pgid", "uid", CLS_LONG_FLAGS,
	        "ignore", "help", "version", NULL};
	static const char *const lflags[] = {"pid", "pgid", "uid", NULL};
	static const struct cls_opts spec = {"cnpPu", NULL, lv, 0, 0};
	struct grab g = {.flags = "pPu", .lflags = lflags};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, grab_fn, &g, NULL);
	if (g.flagged)
		return 0; /* acts on existing processes */
	return shift(r, k);
}

static int w_timeout(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const char *const lv[] = {"signal", "kill-after", CLS_LONG_FLAGS,
	        
	        "foreground", "preserve-status", "verbose", "help", "version", NULL};
	static const struct cls_opts spec = {"sk", NULL, lv, 0, 0};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, NULL, NULL, NULL);
	return shift(r, k + 1); /* the duration */
}

static int w_time(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const char *const lv[] = {"format", "output", CLS_LONG_FLAGS,
	        
	        "append", "portability", "verbose", "quiet", "help", "version", NULL};
	static const struct cls_opts spec = {"fo", NULL, lv, 0, 0};
	return shift(r, cls_opts_walk(r->v, r->n, 1, &spec, NULL, NULL, NULL));
}

static int w_stdbuf(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const char *const lv[] = {"input", "output", "error", CLS_LONG_FLAGS,
	        "help", "version", NULL};
	static const struct cls_opts spec = {"ioe", NULL, lv, 0, 0};
	return shift(r, cls_opts_walk(r->v, r->n, 1, &spec, NULL, NULL, NULL));
}

static int w_plain(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const struct cls_opts spec = {NULL, NULL, NULL, 0, 0};
	return shift(r, cls_opts_walk(r->v, r->n, 1, &spec, NULL, NULL, NULL));
}

/* flock [options] FILE COMMAND... or flock [options] FILE -c STRING: options stop at the file
 * (its getopt string starts with '+'), and -c is looked for right after it */
static int w_flock(struct cls_ctx *c, struct run *r)
{
	static const char *const lv[] = {"conflict-exit-code", "timeout", CLS_LONG_FLAGS, "shared",
	        "exclusive", "unlock", "nonblock", "nb", "no-fork", "close", "verbose", "help",
	        "version", NULL};
	static const struct cls_opts spec = {"Ew", NULL, lv, 0, 0};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, NULL, NULL, NULL);
	if (k + 1 >= r->n)
		return none_left(r);
	if (cls_word_is(&r->v[k + 1], "-c") || cls_word_is(&r->v[k + 1], "--command")) {
		if (k + 2 >= r->n)
			return none_left(r);
		return run_word_script(c, &r->v[k + 2], "flock -c command", r->flags);
	}
	return shift(r, k + 1);
}

static int w_script(struct cls_ctx *c, struct run *r)
{
	static const char *const lv[] = {"command", "echo", "log-in", "log-out", "log-io",
	        "log-timing", "logging-format", "output-limit", CLS_LONG_FLAGS, "append", "flush",
	        "force", "quiet", "return", "timing", "help", "version", NULL};
	static const struct cls_opts spec = {"cEIOBTmo", "t", lv, 0, 0};
	struct grab g = {.c = 'c', .l = "command"};
	walk_permuted(r, &spec, &g);
	if (!g.found || g.vw == NULL) {
		/* an interactive shell, whose terminal script feeds from its standard input */
		if (r->flags & CLS_C_XARGS)
			return none_left(r);
		if (r->doc == NULL && !(r->flags & (CLS_C_PIPED | CLS_C_STDIN)))
			return 0;
		return stdin_program(c, r, 1, 0, r->v[0].off);
	}
	struct cls_word w = *g.vw;
	w.s = g.val;
	w.len = g.vlen;
	/* the command's standard input is script's pseudo-terminal */
	return run_word_script(c, &w, "script -c command", 0);
}

static int w_strace(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const char *const lv[] = {"output", "trace", "signal", "status", "string-limit",
	        "user", "env", "attach", "trace-path", "summary-sort-by", "columns", NULL};
	static const struct cls_opts spec = {"abeEIoOpPsSuUX", NULL, lv, 0, 0};
	return shift(r, cls_opts_walk(r->v, r->n, 1, &spec, NULL, NULL, NULL));
}

static int w_torsocks(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const char *const lv[] = {"user", "pass", "address", "port", NULL};
	static const char *const lflags[] = {"shell", NULL};
	static const struct cls_opts spec = {"upaP", NULL, lv, 0, 0};
	struct grab g = {.lflags = lflags};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, grab_fn, &g, NULL);
	if (g.flagged)
		return 0;
	if (k < r->n && (cls_word_is(&r->v[k], "on") || cls_word_is(&r->v[k], "off") ||
	                        cls_word_is(&r->v[k], "show")))
		return 0;
	return shift(r, k);
}

static int w_proxychains(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const struct cls_opts spec = {"f", NULL, NULL, 0, 0};
	return shift(r, cls_opts_walk(r->v, r->n, 1, &spec, NULL, NULL, NULL));
}

static int w_sshpass(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const struct cls_opts spec = {"pfdP", NULL, NULL, 0, 0};
	return shift(r, cls_opts_walk(r->v, r->n, 1, &spec, NULL, NULL, NULL));
}

/* taskset [options] MASK COMMAND, or -p (an existing process) */
static int w_taskset(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const char *const lv[] = {CLS_LONG_FLAGS, "all-tasks", "cpu-list", "pid", "help", "version", NULL};
	static const struct cls_opts spec = {NULL, NULL, lv, 0, 0};
	static const char *const lflags[] = {"pid", NULL};
	struct grab g = {.flags = "p", .lflags = lflags};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, grab_fn, &g, NULL);
	if (g.flagged)
		return 0;
	return shift(r, k + 1); /* past the mask or CPU list */
}

static int all_digits(const struct cls_word *w)
{
	if (w->len == 0 || (w->flags & CLS_W_EXP))
		return 0;
	for (size_t i = 0; i < w->len; i++)
		if (w->s[i] < '0' || w->s[i] > '9')
			return 0;
	return 1;
}

/* chrt [options] [PRIORITY] COMMAND, or -p / --max */
static int w_chrt(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const char *const lv[] = {"sched-runtime", "sched-period", "sched-deadline", CLS_LONG_FLAGS,
	        "all-tasks", "batch", "deadline", "ext", "fifo", "idle",
	        "other", "rr", "reset-on-fork", "max", "pid", "verbose", "help", "version", NULL};
	static const char *const lflags[] = {"pid", "max", NULL};
	static const struct cls_opts spec = {"TPD", NULL, lv, 0, 0};
	struct grab g = {.flags = "pm", .lflags = lflags};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, grab_fn, &g, NULL);
	if (g.flagged)
		return 0;
	if (k < r->n && all_digits(&r->v[k]))
		k++;
	return shift(r, k);
}

/* prlimit [options] [--RESOURCE[=limits]] COMMAND, or --pid */
static int w_prlimit(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const char *const lv[] = {"pid", "output", CLS_LONG_FLAGS,
	        "core", "data", "nice", "fsize", "sigpending", "memlock",
	        "rss", "nofile", "msgqueue", "rtprio", "stack", "cpu", "nproc", "as", "locks",
	        "rttime", "noheadings", "raw", "verbose", "help", "version", NULL};
	static const char *const lflags[] = {"pid", NULL};
	static const struct cls_opts spec = {"po", "cdefilmnqrstuvxy", lv, 0, 0};
	struct grab g = {.flags = "p", .lflags = lflags};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, grab_fn, &g, NULL);
	if (g.flagged)
		return 0;
	return shift(r, k);
}

/* A wrapper that starts an interactive shell when given no command (unshare, fakeroot,
 * chroot): that shell's program is its standard input. */
static int shell_when_empty(struct cls_ctx *c, struct run *r, size_t k)
{
	if (k >= r->n && !(r->flags & CLS_C_XARGS)) {
		if (r->doc == NULL && !(r->flags & (CLS_C_PIPED | CLS_C_STDIN)))
			return 0;
		return stdin_program(c, r, 1, 0, r->v[0].off);
	}
	return shift(r, k);
}

static int w_unshare(struct cls_ctx *c, struct run *r)
{
	static const char *const lv[] = {"propagation", "setgroups", "root", "wd", "setuid",
	        "setgid", "load-interp", "map-user", "map-group", "map-users", "map-groups",
	        "monotonic", "boottime", CLS_LONG_FLAGS,
	        "mount", "uts", "ipc", "net", "pid", "user", "cgroup",
	        "time", "fork", "kill-child", "mount-proc", "map-root-user", "map-current-user",
	        "map-auto", "keep-caps", "help", "version", NULL};
	static const struct cls_opts spec = {"RwSGl", "muinpUCT", lv, 0, 0};
	return shell_when_empty(c, r, cls_opts_walk(r->v, r->n, 1, &spec, NULL, NULL, NULL));
}

static int w_fakeroot(struct cls_ctx *c, struct run *r)
{
	static const char *const lv[] = {"lib", "faked", "fd-base", CLS_LONG_FLAGS,
	        "unknown-is-real", "help", "version", NULL};
	static const struct cls_opts spec = {"lisb", NULL, lv, 0, 0};
	return shell_when_empty(c, r, cls_opts_walk(r->v, r->n, 1, &spec, NULL, NULL, NULL));
}

/* chroot [options] NEWROOT [COMMAND...] */
static int w_chroot(struct cls_ctx *c, struct run *r)
{
	static const char *const lv[] = {"groups", "userspec", CLS_LONG_FLAGS,
	        "skip-chdir", "help", "version", NULL};
	static const struct cls_opts spec = {NULL, NULL, lv, 0, 0};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, NULL, NULL, NULL);
	if (k >= r->n)
		return none_left(r);
	return shell_when_empty(c, r, k + 1);
}

/* ssh-agent [options] [COMMAND...]; -k kills an agent */
static int w_ssh_agent(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const struct cls_opts spec = {"aEOPt", NULL, NULL, 0, 0};
	struct grab g = {.flags = "k"};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, grab_fn, &g, NULL);
	if (g.flagged)
		return 0;
	return shift(r, k);
}

static int w_setpriv(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const char *const lv[] = {"inh-caps", "ambient-caps", "bounding-set", "groups",
	        "ruid", "euid", "rgid", "egid", "reuid", "regid", "securebits", "pdeathsig",
	        "selinux-label", "apparmor-profile", "landlock-access", "landlock-rule", CLS_LONG_FLAGS,
	        "dump", "nnp", "no-new-privs", "keep-groups",
	        "clear-groups", "init-groups", "reset-env", "list-caps", "help", "version", NULL};
	static const char *const lflags[] = {"dump", "list-caps", NULL};
	static const struct cls_opts spec = {NULL, NULL, lv, 0, 0};
	struct grab g = {.flags = "d", .lflags = lflags};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, grab_fn, &g, NULL);
	if (g.flagged)
		return 0;
	return shift(r, k);
}

/* The dynamic loader run as a program: ld-linux-x86-64.so.2 [options] PROGRAM [ARGS] */
static int w_ldso(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const char *const lv[] = {"library-path", "inhibit-rpath", "audit", "preload",
	        "argv0", "glibc-hwcaps-prefix", "glibc-hwcaps-mask", NULL};
	static const char *const lflags[] = {
	        "list", "verify", "list-tunables", "list-diagnostics", "help", "version", NULL};
	static const struct cls_opts spec = {NULL, NULL, lv, 0, 0};
	struct grab g = {.lflags = lflags};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, grab_fn, &g, NULL);
	if (g.flagged)
		return 0;
	return shift(r, k);
}

static int is_ldso(const char *b, size_t bl)
{
	if (bl == 5 && memcmp(b, "ld.so", 5) == 0)
		return 1;
	if (bl < 6 || memcmp(b, "ld-", 3) != 0)
		return 0;
	for (size_t i = 3; i + 3 <= bl; i++)
		if (memcmp(b + i, ".so", 3) == 0)
			return 1;
	return 0;
}

/* runuser -u USER [--] COMMAND..., or su's form with -c */
static int w_runuser(struct cls_ctx *c, struct run *r)
{
	static const char *const lv[] = {"user", "group", "supp-group", "command", "shell",
	        "session-command", "whitelist-environment", CLS_LONG_FLAGS,
	        "login", "fast", "preserve-environment", "pty", "help",
	        "version", NULL};
	static const struct cls_opts spec = {"ugGcsw", NULL, lv, 0, 0};
	struct grab gu = {.c = 'u', .l = "user"};
	walk_permuted(r, &spec, &gu);
	if (!gu.found)
		return w_su(c, r);
	return shift(r, cls_opts_walk(r->v, r->n, 1, &spec, NULL, NULL, NULL));
}

/* sg GROUP [-c] COMMAND: the command is one string run by /bin/sh */
static int w_sg(struct cls_ctx *c, struct run *r)
{
	size_t k = 1;
	if (k < r->n && cls_word_is(&r->v[k], "-"))
		k++;
	k++; /* the group */
	if (k < r->n && cls_word_is(&r->v[k], "-c"))
		k++;
	if (k >= r->n)
		return shell_when_empty(c, r, k); /* a shell reading standard input */
	return run_word_script(c, &r->v[k], "sg command", r->flags);
}

/* newgrp [-] [GROUP]: a shell reading standard input */
static int w_newgrp(struct cls_ctx *c, struct run *r)
{
	return shell_when_empty(c, r, r->n);
}

/* faketime [options] TIMESTAMP COMMAND */
static int w_faketime(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const char *const lv[] = {"date-prog", NULL};
	static const struct cls_opts spec = {NULL, NULL, lv, 0, 0};
	return shift(r, cls_opts_walk(r->v, r->n, 1, &spec, NULL, NULL, NULL) + 1);
}

/* numactl [options] COMMAND (options with values as short -x V or long --x=V) */
static int w_numactl(struct cls_ctx *c, struct run *r)
{
	(void)c;
	static const char *const lv[] = {"interleave", "membind", "cpunodebind", "physcpubind",
	        "preferred", "preferred-many", "weighted-interleave", NULL};
	static const char *const lflags[] = {"show", "hardware", "length", NULL};
	static const struct cls_opts spec = {"imNCPpw", NULL, lv, 0, 0};
	struct grab g = {.flags = "sH", .lflags = lflags};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, grab_fn, &g, NULL);
	if (g.flagged)
		return 0;
	return shift(r, k);
}

/* Wrappers that only need an option spec: PROGRAM [options] [N words] COMMAND... (issue F-C5:
 * ltrace, systemd-run, nsenter, firejail, chronic and their like ran their operand unseen). */
struct wrapspec {
	const char *name;
	const char *sv;            /* short options with a value */
	const char *so;            /* short options whose value is optional and attached */
	const char *const *lv;     /* long options with a value */
	const char *noexec;        /* short options after which no command runs (-p PID) */
	const char *const *lnoexec; /* long ones */
	unsigned skip;             /* operands before the command (a lock file, an arch) */
	int shell;                 /* with no command, an interactive shell runs (stdin) */
};

static const char *const ltrace_lv[] = {"align", "output", "library", "indent", "config",
        "filter", NULL};
static const char *const ltrace_lno[] = {"pid", NULL};
static const char *const srun_lv[] = {"unit", "property", "description", "slice", "uid", "gid",
        "nice", "working-directory", "setenv", "host", "machine", "service-type",
        "on-active", "on-boot", "on-startup", "on-unit-active", "on-unit-inactive",
        "on-calendar", "timer-property", "path-property", "socket-property", "capsule",
        "json", "expand-environment", "background", NULL};
static const char *const nsenter_lv[] = {"target", "setuid", "setgid", "user-parent", NULL};
static const char *const rlwrap_lv[] = {"break-chars", "complete-filenames", "command-name",
        "histsize", "file", "history-format", "forget-matching", "history-filename",
        "logfile", "one-shot", "only-cook", "pre-given", "quote-characters",
        "substitute-prompt", "set-term-name", "wait-before-prompt", "filter", "extra-char-after-completion",
        NULL};
static const char *const xvfb_lv[] = {"error-file", "auth-file", "server-num",
        "xauth-protocol", "server-args", "wait", NULL};
static const char *const dbus_lv[] = {"config-file", "dbus-daemon", NULL};
static const char *const inhibit_lv[] = {"what", "who", "why", "mode", NULL};
static const char *const inhibit_lno[] = {"list", NULL};
static const char *const user_lv[] = {"user", NULL};
static const char *const run0_lv[] = {"user", "group", "nice", "chdir", "setenv", "property",
        "description", "slice", "unit", "machine", "background", "shell-prompt-prefix", NULL};
static const char *const cgexec_lv[] = {"sticky", NULL};
static const char *const runcon_lv[] = {"user", "role", "type", "range", NULL};
static const char *const cpulimit_lv[] = {"limit", "pid", "exe", "path", "cpu", NULL};
static const char *const cpulimit_lno[] = {"pid", "exe", "path", NULL};
static const char *const choom_lv[] = {"adjust", "pid", NULL};
static const char *const choom_lno[] = {"pid", NULL};

static const struct wrapspec wrapspecs[] = {
        {"cgexec", "g", NULL, cgexec_lv + 1, NULL, NULL, 0, 0},
        {"choom", "np", NULL, choom_lv, "p", choom_lno, 0, 0},
        {"chronic", "", NULL, NULL, NULL, NULL, 0, 0},
        {"cpulimit", "lpeP", NULL, cpulimit_lv, "pe", cpulimit_lno, 0, 0},
        {"dbus-run-session", "", NULL, dbus_lv, NULL, NULL, 0, 0},
        {"dumb-init", "r", NULL, NULL, NULL, NULL, 0, 0},
        {"firejail", "", NULL, NULL, NULL, NULL, 0, 1},
        {"ifne", "", NULL, NULL, NULL, NULL, 0, 0},
        {"lckdo", "w", NULL, NULL, NULL, NULL, 1, 0},
        {"linux32", "", NULL, NULL, NULL, NULL, 0, 1},
        {"linux64", "", NULL, NULL, NULL, NULL, 0, 1},
        {"ltrace", "aADelnosuwxF", NULL, ltrace_lv, "p", ltrace_lno, 0, 0},
        {"nsenter", "tSG", "muinpUCTrw", nsenter_lv, NULL, NULL, 0, 1},
        {"pkexec", "", NULL, user_lv, NULL, NULL, 0, 1},
        {"rlwrap", "bCDfFgHlOPqsStwz", "ap", rlwrap_lv, NULL, NULL, 0, 0},
        {"run0", "uDg", NULL, run0_lv, NULL, NULL, 0, 1},
        {"runcon", "urtl", NULL, runcon_lv, NULL, NULL, 0, 0},
        {"systemd-inhibit", "", NULL, inhibit_lv, NULL, inhibit_lno, 0, 0},
        {"systemd-run", "CHMEpu", NULL, srun_lv, NULL, NULL, 0, 0},
        {"tini", "pe", NULL, NULL, NULL, NULL, 0, 0},
        {"trickle", "duwtln", NULL, NULL, NULL, NULL, 0, 0},
        {"valgrind", "", NULL, NULL, NULL, NULL, 0, 0},
        {"xvfb-run", "efnpsw", NULL, xvfb_lv, NULL, NULL, 0, 0},
};

/* The wrapspecs entry of basename b, or NULL.  Looked up only for a program the handler table
 * does not know, after a test of the first letter (most such programs are cd, make, ls). */
static const struct wrapspec *find_wrapspec(const char *b, size_t bl)
{
	if (bl < 4 || strchr("cdfilnprstvx", b[0]) == NULL)
		return NULL;
	for (size_t i = 0; i < sizeof wrapspecs / sizeof wrapspecs[0]; i++)
		if (wrapspecs[i].name[0] == b[0] && wrapspecs[i].name[1] == b[1] &&
		        strlen(wrapspecs[i].name) == bl && memcmp(wrapspecs[i].name, b, bl) == 0)
			return &wrapspecs[i];
	return NULL;
}

static int w_spec(struct cls_ctx *c, struct run *r)
{
	size_t bl;
	const char *b = word_base(&r->v[0], &bl);
	const struct wrapspec *ws = find_wrapspec(b, bl);
	if (ws == NULL)
		return 0;
	const struct cls_opts spec = {ws->sv, ws->so, ws->lv, 0, 0};
	struct grab g = {.flags = ws->noexec, .lflags = ws->lnoexec};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, grab_fn, &g, NULL);
	if (g.flagged)
		return 0; /* acts on an existing process, or lists */
	k += ws->skip;
	if (ws->shell)
		return shell_when_empty(c, r, k);
	return shift(r, k);
}

/* setarch ARCH [options] [COMMAND]: with none, a shell */
static int w_setarch(struct cls_ctx *c, struct run *r)
{
	static const struct cls_opts spec = {"", NULL, NULL, 0, 0};
	if (r->n < 2)
		return none_left(r);
	if (r->v[1].len > 1 && r->v[1].s[0] == '-') {
		const struct cls_word *o = &r->v[1];
		if (cls_word_is(o, "--list") || cls_word_is(o, "--help") || cls_word_is(o, "-h") ||
		        cls_word_is(o, "--version") || cls_word_is(o, "-V"))
			return 0;
		/* options before the architecture: refused rather than followed */
		return cls_refuse(c, o->off, "setarch with options before its architecture: refused");
	}
	return shell_when_empty(c, r, cls_opts_walk(r->v, r->n, 2, &spec, NULL, NULL, NULL));
}

/* ip [options] netns exec NAME COMMAND, ip vrf exec NAME COMMAND: the command runs; any other
 * ip command configures the host. */
static int ip_prefix(const struct cls_word *w, const char *lit, size_t min)
{
	return !(w->flags & CLS_W_EXP) && w->len >= min && w->len <= strlen(lit) &&
	       memcmp(w->s, lit, w->len) == 0;
}

static int w_ip(struct cls_ctx *c, struct run *r)
{
	size_t k = 1;
	/* ip's options: a prefix of each name, one or two dashes (ip matches() them) */
	while (k < r->n && r->v[k].len > 1 && r->v[k].s[0] == '-') {
		const struct cls_word *w = &r->v[k];
		if (w->flags & CLS_W_EXP)
			return cls_refuse(c, w->off, "ip option is not static");
		struct cls_word o = *w;
		if (o.s[1] == '-') {
			o.s++;
			o.len--;
		}
		/* -all runs in every namespace; -batch reads commands from a file */
		if (ip_prefix(&o, "-all", 2) || ip_prefix(&o, "-batch", 2) ||
		        ip_prefix(&o, "-force", 3))
			return cls_refuse(c, w->off, "ip -all / -batch: refused");
		k++;
		if (ip_prefix(&o, "-family", 2) || ip_prefix(&o, "-loops", 2) ||
		        ip_prefix(&o, "-netns", 2) || ip_prefix(&o, "-rcvbuf", 3))
			k++;
	}
	/* `netns exec NAME CMD', `vrf exec NAME CMD', with abbreviations */
	if (k + 1 < r->n && (ip_prefix(&r->v[k], "netns", 3) || ip_prefix(&r->v[k], "vrf", 1)) &&
	        ip_prefix(&r->v[k + 1], "exec", 1)) {
		if (k + 2 < r->n && cls_word_is(&r->v[k + 2], "-all"))
			return cls_refuse(c, r->v[k + 2].off, "ip netns exec -all: refused");
		if (k + 3 > r->n)
			return none_left(r);
		return shift(r, k + 3);
	}
	return 0;
}

/* Programs that run a command given in their own syntax (capsh -- ARGS runs a shell with
 * them, start-stop-daemon -x PROG, perf stat/record/trace CMD, bwrap's options of 0-3 words
 * before CMD): refused rather than followed.  perf's reporting commands run nothing. */
static int w_refuse_runner(struct cls_ctx *c, struct run *r)
{
	size_t bl;
	const char *b = word_base(&r->v[0], &bl);
	if (name_is(b, bl, "capsh")) {
		int runs = 0;
		for (size_t i = 1; i < r->n; i++)
			if (cls_word_is(&r->v[i], "--") || cls_word_is(&r->v[i], "==") ||
			        (r->v[i].flags & CLS_W_EXP))
				runs = 1;
		if (!runs)
			return 0;
	}
	if (name_is(b, bl, "perf")) {
		static const char *const quiet[] = {"list", "report", "annotate", "diff", "evlist",
		        "help", "version", "--version", "--help", "archive", "buildid-list",
		        "buildid-cache", "config", "data", "inject", "probe", NULL};
		if (r->n < 2 || (!(r->v[1].flags & CLS_W_EXP) &&
		                        cls_in_list(quiet, r->v[1].s, r->v[1].len)))
			return 0;
	}
	return cls_refuse(c, r->v[0].off, "%.*s runs a command in its own syntax: refused",
	        (int)bl, b);
}

static int prog_file(struct cls_ctx *c, const struct cls_word *v, size_t n, size_t j,
        char letter, const char *name);
static int fd_path(const struct cls_word *w);

/* Whether r's standard input is fed by the line (a pipe, a redirection, a here-doc). */
static int stdin_fed(const struct run *r)
{
	return r->doc != NULL || (r->flags & (CLS_C_PIPED | CLS_C_STDIN));
}

/* Whether text (a static word) holds one of the needles; an expansion always counts. */
static int holds_any(const char *t, size_t n, const char *const *needles)
{
	if (memchr(t, CLS_EXP_MARK, n) != NULL)
		return 1;
	for (size_t i = 0; needles[i] != NULL; i++)
		if (memmem(t, n, needles[i], strlen(needles[i])) != NULL)
			return 1;
	return 0;
}

/* make VAR=VALUE: the value goes into recipes, make's built-in rules among them, and the
 * recipe runs through SHELL with .SHELLFLAGS (attack round 4: make CC='curl ...' x, make
 * SHELL=/usr/bin/git .SHELLFLAGS=push x.o, make CC=git CFLAGS=push x each ran git or curl
 * with no makefile).  A program variable's value is classified as the command it starts,
 * with further words unknown; SHELL may name a shell; any value holding what the shell
 * reads as more than words (; | & ` $( < > a newline or quotes) is refused. */
static int make_variable(struct cls_ctx *c, const struct cls_word *w, size_t nl)
{
	static const char *const progs[] = {"AR", "AS", "CC", "CXX", "CPP", "FC", "PC", "LD", "LEX",
	        "YACC", "RM", "M2C", "CO", "GET", "LINT", "MAKEINFO", "TEX", "TEXI2DVI", "WEAVE",
	        "CWEAVE", "TANGLE", "CTANGLE", "MAKE", "OBJC", "GO", "RUSTC", NULL};
	const char *val = w->s + nl + 1;
	size_t vl = w->len - nl - 1;
	const char *name = w->s;
	if (nl > 0 && (name[nl - 1] == ':' || name[nl - 1] == '+' || name[nl - 1] == '?' ||
	                      name[nl - 1] == '!'))
		nl--; /* VAR:=VALUE, VAR+=VALUE, ... */
	if (w->flags & CLS_W_DL)
		return refuse_program(c, w->off, 1, "a make variable");
	int prog = cls_in_list(progs, name, nl);
	/* an expansion (PREFIX=$HOME/.local, CFLAGS="$CFLAGS") is taken as words: its value
	 * comes from the environment, unless it names a program */
	/* a `$' (quoted: an expansion is CLS_EXP_MARK) is make's: $(shell ...), ${shell ...},
	 * or another variable the environment sets ($X, X=';git push') */
	for (size_t i = 0; i < vl; i++)
		if (strchr(";|&`<>\n\"'$", val[i]) != NULL || (prog && val[i] == CLS_EXP_MARK))
			return cls_refuse(c, w->off,
			        "make %.*s= holds text the recipe's shell reads as more than "
			        "words: "
			        "refused",
			        (int)nl, name);
	if (name_is(name, nl, "SHELL")) {
		size_t vb;
		struct cls_word sw = {val, vl, 0, w->off, NULL};
		const char *sb = word_base(&sw, &vb);
		static const char *const shells[] = {
		        "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", NULL};
		if (memchr(val, ' ', vl) == NULL && cls_in_list(shells, sb, vb))
			return 0;
		return cls_refuse(c, w->off, "make SHELL= other than a shell: refused");
	}
	if (name_is(name, nl, ".SHELLFLAGS")) {
		/* options only: another word is a script or command for the shell */
		for (size_t i = 0; i < vl; i++)
			if ((i == 0 || val[i - 1] == ' ') && val[i] != ' ' && val[i] != '-' &&
			        !(i >= 3 && memcmp(val + i - 3, "-o ", 3) == 0))
				return cls_refuse(
				        c, w->off, "make .SHELLFLAGS with operands: refused");
		return 0;
	}
	if (!prog || vl == 0)
		return 0;
	/* the recipe appends flags and files: words the line does not give here */
	return cls_run_script(c, val, vl, w->off, CLS_C_XARGS);
}

static int startup_device(const char *s, size_t len);

/* Whether NAME (nl bytes) is a variable make takes from the environment into its built-in
 * rules or its own options: the program variables, their flags (CFLAGS, LDLIBS, ...), and
 * MAKEFLAGS, GNUMAKEFLAGS, MFLAGS, MAKEFILES, .SHELLFLAGS.  SHELL is not among them: GNU make
 * does not take it from the environment. */
static int make_env_name(const char *s, size_t nl)
{
	static const char *const names[] = {"AR", "AS", "CC", "CXX", "CPP", "FC", "PC", "LD", "LEX",
	        "YACC", "RM", "M2C", "CO", "GET", "LINT", "MAKEINFO", "TEX", "TEXI2DVI", "WEAVE",
	        "CWEAVE", "TANGLE", "CTANGLE", "MAKE", "OBJC", "GO", "RUSTC", "LDLIBS", "LOADLIBES",
	        "TARGET_ARCH", "OUTPUT_OPTION", "MAKEFLAGS", "GNUMAKEFLAGS", "MFLAGS", "MAKEFILES",
	        ".SHELLFLAGS", NULL};
	return cls_in_list(names, s, nl) || (nl > 5 && memcmp(s + nl - 5, "FLAGS", 5) == 0);
}

/* NAME=VALUE in make's environment (CC='curl ...' make x, export CC=...; make, env CC=...
 * make): make's built-in rules run $(CC) from the environment as they do `make CC=...'
 * (classified by make_variable); MAKEFLAGS and its kin may hold VAR=VALUE words and --eval,
 * and are refused unless they hold short options only; MAKEFILES names makefiles make reads,
 * refused when one is a descriptor or a device (the line's own input). */
static int make_env_variable(struct cls_ctx *c, const struct cls_word *w, size_t nl)
{
	const char *val = w->s + nl + 1;
	size_t vl = w->len - nl - 1;
	if (w->len > nl && w->s[nl] == '+') { /* NAME+=VALUE */
		val++;
		vl--;
	}
	if (name_is(w->s, nl, "MAKEFLAGS") || name_is(w->s, nl, "GNUMAKEFLAGS") ||
	        name_is(w->s, nl, "MFLAGS")) {
		for (size_t i = 0; i < vl; i++)
			if (strchr("-jklsnqrRwiBeSt0123456789 ", val[i]) == NULL)
				return cls_refuse(c, w->off,
				        "%.*s other than short options (it may define variables or "
				        "--eval): refused",
				        (int)nl, w->s);
		return 0;
	}
	if (name_is(w->s, nl, "MAKEFILES")) {
		if ((w->flags & CLS_W_DL) || memchr(val, CLS_EXP_MARK, vl) != NULL ||
		        startup_device(val, vl))
			return cls_refuse(c, w->off,
			        "MAKEFILES names a descriptor, a device or text not static: refused");
		return 0;
	}
	/* make_variable takes the length up to `=' and drops a `+' itself */
	return make_variable(c, w, w->len > nl && w->s[nl] == '+' ? nl + 1 : nl);
}

/* Programs whose command language runs shell commands (second attacker's findings): ed's `!'
 * and `w !cmd', gdb's -ex/-x (shell, pipe, python), make's --eval/-E and a makefile from
 * standard input, sqlite3's .shell/.system/edit(), groff -U (.sy, .pso), vim/vi/ex -c, +CMD,
 * -S and ex mode on standard input.  Refused where the command text is not followed. */
static int w_cmdlang(struct cls_ctx *c, struct run *r)
{
	size_t bl;
	const char *b = word_base(&r->v[0], &bl);
	const struct cls_word *v = r->v;
	if (name_is(b, bl, "ed") || name_is(b, bl, "red")) {
		/* commands from standard input: a static here-doc without `!' runs nothing */
		if (r->doc != NULL && r->doc->ready && !r->doc->nonstatic &&
		        memchr(r->doc->s, '!', r->doc->len) == NULL)
			return 0;
		if (stdin_fed(r))
			return cls_refuse(c, v[0].off, "ed reads commands (`!cmd') from standard input: refused");
		return 0;
	}
	if (bl >= 3 && memcmp(b, "gdb", 3) == 0) {
		static const char *const runs[] = {"eval-command", "init-eval-command", "command",
		        "init-command", NULL};
		for (size_t i = 1; i < r->n; i++) {
			const struct cls_word *w = &v[i];
			if (w->len < 2 || w->s[0] != '-')
				continue;
			const char *nm = w->s + 1 + (w->s[1] == '-');
			const char *eq = memchr(nm, '=', w->len - (size_t)(nm - w->s));
			size_t nl = eq ? (size_t)(eq - nm) : w->len - (size_t)(nm - w->s);
			int hit = name_is(nm, nl, "ex") || name_is(nm, nl, "iex") || name_is(nm, nl, "x") ||
			          name_is(nm, nl, "ix") || (w->flags & CLS_W_EXP);
			for (size_t k = 0; runs[k] != NULL && !hit; k++)
				hit = nl >= 3 && nl <= strlen(runs[k]) && memcmp(nm, runs[k], nl) == 0;
			if (hit)
				return cls_refuse(c, w->off, "gdb runs commands given to it (shell, pipe, python): refused");
		}
		if (stdin_fed(r))
			return cls_refuse(c, v[0].off, "gdb reads commands from standard input: refused");
		return 0;
	}
	if (name_is(b, bl, "make") || name_is(b, bl, "gmake") || name_is(b, bl, "bmake")) {
		if (!c->make_seen) {
			c->make_seen = 1;
			for (const struct cls_assign *a = c->make_env; a != NULL; a = a->next)
				if (make_env_variable(c, a->w, a->nlen) == -1)
					return -1;
		}
		for (size_t i = 1; i < r->n; i++) {
			const struct cls_word *w = &v[i];
			if (cls_word_is(w, "--"))
				break;
			const char *eq = memchr(w->s, '=', w->len);
			if (w->len > 0 && w->s[0] != '-' && eq != NULL && eq != w->s) {
				if (make_variable(c, w, (size_t)(eq - w->s)) == -1)
					return -1;
				continue;
			}
			if (w->len < 2 || w->s[0] != '-')
				continue;
			if (w->s[1] == '-') {
				if (git_prefix(w, "eval"))
					return cls_refuse(c, w->off, "make --eval: refused");
				if (prog_file(c, v, r->n, i, 'f', "file") == -1 ||
				        prog_file(c, v, r->n, i, 'f', "makefile") == -1)
					return -1;
				continue;
			}
			for (size_t j = 1; j < w->len; j++) {
				char ch = w->s[j];
				if (ch == 'E')
					return cls_refuse(c, w->off, "make -E (--eval): refused");
				if (ch == 'f' && prog_file(c, v, r->n, i, 'f', "file") == -1)
					return -1;
				if (strchr("CfIoWjlO", ch) != NULL) {
					if (j + 1 == w->len && strchr("CfIoW", ch) != NULL)
						i++;
					break;
				}
			}
		}
		return 0;
	}
	if (bl >= 6 && memcmp(b, "sqlite", 6) == 0) {
		static const char *const runs[] = {".sh", ".sy", "edit", "|", "load", NULL};
		for (size_t i = 1; i < r->n; i++)
			if (holds_any(v[i].s, v[i].len, runs) || fd_path(&v[i]) != 0)
				return cls_refuse(c, v[i].off,
				        "sqlite3 command that can run a program (.shell, .system, edit(), a "
				        "pipe): refused");
		if (r->doc != NULL && r->doc->ready && !r->doc->nonstatic &&
		        !holds_any(r->doc->s, r->doc->len, runs))
			return 0;
		if (stdin_fed(r))
			return cls_refuse(c, v[0].off, "sqlite3 reads commands from standard input: refused");
		return 0;
	}
	if (name_is(b, bl, "groff") || name_is(b, bl, "nroff") || name_is(b, bl, "troff")) {
		for (size_t i = 1; i < r->n; i++) {
			const struct cls_word *w = &v[i];
			if (cls_word_is(w, "--"))
				break;
			if (w->len >= 2 && w->s[0] == '-' && w->s[1] != '-' && memchr(w->s, 'U', w->len))
				return cls_refuse(c, w->off, "%.*s -U (unsafe mode runs .sy, .pso): refused",
				        (int)bl, b);
		}
		return 0;
	}
	/* vim, vi, ex, view, nvim, vimdiff, gvim, evim */
	int exmode = name_is(b, bl, "ex") || name_is(b, bl, "nex");
	for (size_t i = 1; i < r->n; i++) {
		const struct cls_word *w = &v[i];
		if (cls_word_is(w, "--"))
			break;
		if (w->flags & CLS_W_EXP)
			return cls_refuse(c, w->off, "%.*s argument is not static", (int)bl, b);
		if (w->len >= 2 && w->s[0] == '+') {
			size_t j = 1;
			while (j < w->len && isdigit((unsigned char)w->s[j]))
				j++;
			if (j < w->len)
				return cls_refuse(c, w->off, "%.*s +COMMAND: refused", (int)bl, b);
			continue;
		}
		if (w->len < 2 || w->s[0] != '-')
			continue;
		if (w->s[1] == '-') {
			if (git_prefix(w, "cmd") || git_prefix(w, "remote-send") ||
			        git_prefix(w, "remote-expr"))
				return cls_refuse(c, w->off, "%.*s --cmd: refused", (int)bl, b);
			continue;
		}
		if (w->s[1] == 'c' || w->s[1] == 'S' || w->s[1] == 's' || w->s[1] == 'u')
			return cls_refuse(c, w->off, "%.*s runs commands given to it: refused", (int)bl, b);
		if (memchr(w->s, 'e', w->len) || memchr(w->s, 'E', w->len))
			exmode = 1;
	}
	if (exmode && stdin_fed(r))
		return cls_refuse(c, v[0].off, "%.*s in ex mode reads commands from standard input: refused",
		        (int)bl, b);
	return 0;
}

static int is_cmdlang(const char *b, size_t bl)
{
	static const char *const names[] = {"ed", "red", "gdb", "gdb-multiarch", "make", "gmake",
	        "bmake", "sqlite", "sqlite3", "groff", "nroff", "troff", "vim", "vi", "ex", "view",
	        "nvim", "vimdiff", "gvim", "evim", "nex", "rview", NULL};
	return bl >= 2 && strchr("bfgmnrstve", b[0]) != NULL && cls_in_list(names, b, bl);
}

/* npm options and npm_config_ variables whose value is a command npm runs (--call for npm
 * exec, --editor for config edit, --shell, --script-shell, --git, --browser, --viewer):
 * refused (second attacker's finding 30); the rest is tools.c's npm rule. */
static const char *const npm_cmd_keys[] = {"call", "editor", "shell", "script-shell",
        "script_shell", "git", "browser", "viewer", "onload-script", "onload_script",
        "node-options", "node_options", NULL};

static int w_npm(struct cls_ctx *c, struct run *r)
{
	for (size_t i = 1; i < r->n; i++) {
		const struct cls_word *w = &r->v[i];
		if (cls_word_is(w, "--"))
			break;
		if (w->len < 3 || w->s[0] != '-' || w->s[1] != '-')
			continue;
		const char *eq = memchr(w->s, '=', w->len);
		size_t nl = eq ? (size_t)(eq - w->s - 2) : w->len - 2;
		if (cls_in_list(npm_cmd_keys, w->s + 2, nl) || memchr(w->s, CLS_EXP_MARK, nl + 2))
			return cls_refuse(c, w->off, "npm --%.*s names a command npm runs: refused",
			        (int)nl, w->s + 2);
	}
	return cls_rule_tools(c, r->v, r->n, r->flags) == -1 ? -1 : 0;
}

/* getent hosts|ahosts|ahostsv4|ahostsv6 NAME asks the resolver (second attacker's finding
 * 31): the dns tag, as host and dig get.  With no name it lists /etc/hosts only. */
static int w_getent(struct cls_ctx *c, struct run *r)
{
	static const char *const dbs[] = {"hosts", "ahosts", "ahostsv4", "ahostsv6", "networks",
	        NULL};
	size_t k = 1;
	while (k < r->n && r->v[k].len > 1 && r->v[k].s[0] == '-' && !(r->v[k].flags & CLS_W_EXP)) {
		if (cls_word_is(&r->v[k], "-s") || cls_word_is(&r->v[k], "--service"))
			k++;
		k++;
	}
	if (k >= r->n)
		return 0;
	const struct cls_word *db = &r->v[k];
	if (!(db->flags & CLS_W_EXP) && !cls_in_list(dbs, db->s, db->len))
		return 0;
	if (k + 1 >= r->n && !(r->flags & CLS_C_XARGS) && !(db->flags & CLS_W_EXP))
		return 0;
	c->tags |= ALLOW_TAG_DNS;
	for (size_t i = k + 1; i < r->n; i++)
		if (!(r->v[i].flags & CLS_W_EXP))
			cls_add_host(c, r->v[i].s, r->v[i].len);
	return 0;
}

/* The wrappers outside the handler table (kept out of it so that the lookup every command
 * word makes stays as short as before): the wrapspecs, setarch, ip, toybox. */
static int (*find_more_wrapper(const char *b, size_t bl))(struct cls_ctx *, struct run *)
{
	if (find_wrapspec(b, bl) != NULL)
		return w_spec;
	if (bl == 7 && memcmp(b, "setarch", 7) == 0)
		return w_setarch;
	if (bl == 2 && b[0] == 'i' && b[1] == 'p')
		return w_ip;
	if (bl == 6 && memcmp(b, "toybox", 6) == 0)
		return w_busybox;
	if (name_is(b, bl, "newgrp"))
		return w_newgrp;
	if (name_is(b, bl, "npm"))
		return w_npm;
	if (name_is(b, bl, "getent"))
		return w_getent;
	if (is_cmdlang(b, bl))
		return w_cmdlang;
	if (name_is(b, bl, "capsh") || name_is(b, bl, "start-stop-daemon") ||
	        name_is(b, bl, "perf") || name_is(b, bl, "bwrap"))
		return w_refuse_runner;
	return NULL;
}

/* ---- programs that run command lines of their own ------------------------------------ */

static int fd_path(const struct cls_word *w);

/* The value of a program-file option (awk -f, sed -f, make -f): standard input, a descriptor,
 * a process substitution or an expansion is refused (its text is out of sight); a file is out
 * of reach.  o is the option word at v[j]; name its long name, letter its short letter. */
static int prog_file(struct cls_ctx *c, const struct cls_word *v, size_t n, size_t j,
        char letter, const char *name)
{
	const struct cls_word *o = &v[j], *val = NULL;
	struct cls_word att;
	if (o->len >= 2 && o->s[0] == '-' && o->s[1] == '-') {
		if (!git_prefix(o, name))
			return 0;
		const char *eq = memchr(o->s, '=', o->len);
		if (eq != NULL) {
			att = *o;
			att.s = eq + 1;
			att.len = o->len - (size_t)(eq + 1 - o->s);
			val = &att;
		} else if (j + 1 < n) {
			val = &v[j + 1];
		}
	} else if (o->len >= 2 && o->s[0] == '-') {
		const char *f = memchr(o->s + 1, letter, o->len - 1);
		if (f == NULL)
			return 0;
		if (f + 1 < o->s + o->len) {
			att = *o;
			att.s = f + 1;
			att.len = o->len - (size_t)(f + 1 - o->s);
			val = &att;
		} else if (j + 1 < n) {
			val = &v[j + 1];
		}
	}
	if (val == NULL)
		return 0;
	if ((val->flags & CLS_W_EXP) || memchr(val->s, CLS_EXP_MARK, val->len) != NULL)
		return refuse_program(c, val->off, (val->flags & CLS_W_DL) != 0,
		        "a process substitution or an expansion");
	if (fd_path(val) != 0)
		return refuse_program(c, val->off, 0, "standard input or a descriptor");
	return 0;
}

/* An awk program that can run a command: system(), a pipe to or from a command (print | "cmd",
 * "cmd" | getline), or |& (gawk's coprocess).  String literals are skipped; `||' is logic. */
static int awk_runs(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char ch = p[i];
		if (ch == '"') {
			for (i++; i < n && p[i] != '"'; i++)
				if (p[i] == '\\')
					i++;
			continue;
		}
		if (ch == CLS_EXP_MARK)
			return 1; /* part of the program comes from an expansion */
		if (ch == '|') {
			if (i + 1 < n && p[i + 1] == '|') {
				i++;
				continue;
			}
			return 1;
		}
		if (ch == 's' && i + 6 <= n && memcmp(p + i, "system", 6) == 0 &&
		        (i == 0 || !(isalnum((unsigned char)p[i - 1]) || p[i - 1] == '_')))
			return 1;
	}
	return 0;
}

/* awk [options] 'PROGRAM' [files]: a program that runs commands is refused (they are awk
 * strings, not shell words: refusing is simpler than following); -f files are out of reach. */
static int w_awk(struct cls_ctx *c, struct run *r)
{
	static const char *const lv[] = {"file", "field-separator", "assign", "source", "exec",
	        "include", "load", CLS_LONG_FLAGS, "characters-as-bytes", "traditional",
	        "copyright", "debug", "dump-variables", "gen-pot", "help", "lint", "bignum",
	        "use-lc-numeric", "no-optimize", "optimize", "posix", "re-interval", "sandbox",
	        "version", NULL};
	static const struct cls_opts spec = {"fFvelEiL", NULL, lv, 0, 0};
	struct awk_state {
		int file;
		int refuse;
		size_t off;
	} st = {0, 0, 0};
	size_t k = 1;
	while (k < r->n) {
		const struct cls_word *w = &r->v[k];
		if (w->len < 2 || w->s[0] != '-')
			break;
		if (cls_word_is(w, "--")) {
			k++;
			break;
		}
		size_t next = cls_opts_walk(r->v, r->n, k, &spec, NULL, NULL, NULL);
		for (size_t j = k; j < next; j++) {
			const struct cls_word *o = &r->v[j];
			/* -f FILE / -E FILE: the program is a file; -e / --source TEXT is one */
			if (cls_word_is(o, "-f") || cls_word_is(o, "-E") || git_prefix(o, "file") ||
			        git_prefix(o, "exec"))
				st.file = 1;
			if (j == k || r->v[j].s[0] == '-') {
				if (prog_file(c, r->v, next, j, 'f', "file") == -1 ||
				        prog_file(c, r->v, next, j, 'E', "exec") == -1)
					return -1;
			}
			if ((cls_word_is(o, "-e") || git_prefix(o, "source")) && j + 1 < next) {
				const struct cls_word *t = &r->v[j + 1];
				if (awk_runs(t->s, t->len))
					return cls_refuse(c, t->off, "awk program runs commands: refused");
				st.file = 1;
			}
		}
		if (next == k)
			break;
		k = next;
	}
	if (st.file)
		return 0;
	if (k >= r->n)
		return none_left(r); /* under xargs the program is its input's */
	const struct cls_word *prog = &r->v[k];
	if (awk_runs(prog->s, prog->len))
		return cls_refuse(c, prog->off, "awk program runs commands: refused");
	return 0;
}

/* A sed script that runs a command: GNU sed's `e' command or the `e' flag of s///. */
static int sed_runs(const char *p, size_t n)
{
	size_t i = 0;
	while (i < n) {
		/* skip blanks, separators and the address */
		while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == ';' || p[i] == '\n' ||
		                        p[i] == '{' || p[i] == '}' || p[i] == '!'))
			i++;
		if (i >= n)
			break;
		for (;;) {
			if (i < n && (isdigit((unsigned char)p[i]) || p[i] == '$' || p[i] == ',' ||
			                     p[i] == '~' || p[i] == '+' || p[i] == ' ' || p[i] == '!')) {
				i++;
			} else if (i < n && (p[i] == '/' || p[i] == '\\')) {
				char d = p[i] == '\\' && i + 1 < n ? p[++i] : '/';
				for (i++; i < n && p[i] != d; i++)
					if (p[i] == '\\')
						i++;
				i++;
				while (i < n && (p[i] == 'I' || p[i] == 'M'))
					i++;
			} else {
				break;
			}
		}
		if (i >= n)
			break;
		char cmd = p[i++];
		if (cmd == 'e' || cmd == CLS_EXP_MARK)
			return 1;
		if (cmd == 's' || cmd == 'y') {
			if (i >= n)
				break;
			char d = p[i++];
			if (d == CLS_EXP_MARK || d == '\n' || d == '\\')
				return 1;
			for (int part = 0; part < 2 && i < n; part++) {
				while (i < n && p[i] != d) {
					if (p[i] == '\\')
						i++;
					i++;
				}
				i++;
			}
			if (cmd == 's')
				for (; i < n && p[i] != ';' && p[i] != '\n' && p[i] != '}'; i++) {
					if (p[i] == 'e' || p[i] == CLS_EXP_MARK)
						return 1;
					if (p[i] == 'w')
						break; /* a file name to the end of the line */
				}
		}
		/* a, i, c, r, R, w, W, b, t, T, :, # and q take the rest of the line or a word */
		if (strchr("aicrRwWbtT:#qQlL", cmd) != NULL)
			while (i < n && p[i] != '\n' && !(strchr("btT:qQlL", cmd) && p[i] == ';'))
				i++;
	}
	return 0;
}

static int w_sed(struct cls_ctx *c, struct run *r)
{
	static const char *const lv[] = {"expression", "file", "line-length", "separate",
	        CLS_LONG_FLAGS, "quiet", "silent", "debug", "follow-symlinks", "in-place",
	        "null-data", "zero-terminated", "posix", "regexp-extended", "sandbox", "unbuffered",
	        "binary", "help", "version", NULL};
	static const struct cls_opts spec = {"efl", "i", lv, 0, 0};
	int script = 0;
	if (copies_program(c, r) == -1)
		return -1;
	size_t k = 1;
	while (k < r->n) {
		const struct cls_word *w = &r->v[k];
		if (cls_word_is(w, "--")) {
			k++;
			break;
		}
		if (w->len < 2 || w->s[0] != '-') {
			if (!script) {
				if (sed_runs(w->s, w->len))
					return cls_refuse(
					        c, w->off, "sed script runs commands: refused");
				script = 1;
			}
			k++;
			continue;
		}
		size_t next = cls_opts_walk(r->v, r->n, k, &spec, NULL, NULL, NULL);
		for (size_t j = k; j < next; j++) {
			const struct cls_word *o = &r->v[j];
			if (cls_word_is(o, "-f") || git_prefix(o, "file"))
				script = 1;
			if (o->len >= 2 && o->s[0] == '-' && prog_file(c, r->v, next, j, 'f', "file") == -1)
				return -1;
			const struct cls_word *t = NULL;
			struct cls_word att;
			if ((cls_word_is(o, "-e") || (git_prefix(o, "expression") &&
			                                     !memchr(o->s, '=', o->len))) &&
			        j + 1 < next)
				t = &r->v[j + 1];
			else if (o->len > 2 && o->s[0] == '-' && o->s[1] != '-' &&
			         memchr(o->s, 'e', o->len)) {
				/* -ne SCRIPT or -nSCRIPT-like bundles: the rest after e */
				const char *e = memchr(o->s + 1, 'e', o->len - 1);
				att = *o;
				att.s = e + 1;
				att.len = o->len - (size_t)(e + 1 - o->s);
				t = att.len > 0 ? &att : (j + 1 < next ? &r->v[j + 1] : NULL);
			} else if (git_prefix(o, "expression") && memchr(o->s, '=', o->len)) {
				const char *eq = memchr(o->s, '=', o->len);
				att = *o;
				att.s = eq + 1;
				att.len = o->len - (size_t)(eq + 1 - o->s);
				t = &att;
			}
			if (t != NULL) {
				if (sed_runs(t->s, t->len))
					return cls_refuse(
					        c, t->off, "sed script runs commands: refused");
				script = 1;
			}
		}
		if (next == k)
			break;
		k = next;
	}
	return script ? 0 : none_left(r); /* under xargs the script is its input's */
}

/* split --filter=COMMAND runs COMMAND with sh -c for each piece */
static int w_split(struct cls_ctx *c, struct run *r)
{
	static const char *const lv[] = {"bytes", "line-bytes", "lines", "number",
	        "additional-suffix", "suffix-length", "filter", "separator", "numeric-suffixes",
	        "hex-suffixes", CLS_LONG_FLAGS, "elide-empty-files", "unbuffered", "verbose", "help",
	        "version", NULL};
	static const struct cls_opts spec = {"abClnt", "dx", lv, 0, 0};
	struct grab g = {.l = "filter"};
	walk_permuted(r, &spec, &g);
	if (!g.found || g.vw == NULL)
		return 0;
	struct cls_word w = *g.vw;
	w.s = g.val;
	w.len = g.vlen;
	/* the filter reads each piece from a pipe */
	return run_word_script(c, &w, "split --filter command", CLS_C_PIPED);
}

/* tar runs commands given to --checkpoint-action=exec=, --to-command, --use-compress-program
 * (-I), --info-script / --new-volume-script (-F) and --rsh-command */
static int w_tar(struct cls_ctx *c, struct run *r)
{
	static const char *const runs[] = {"checkpoint-action", "to-command",
	        "use-compress-program", "info-script", "new-volume-script", "rsh-command", NULL};
	for (size_t i = 1; i < r->n; i++) {
		const struct cls_word *w = &r->v[i];
		struct cls_word cmd;
		int hit = 0;
		/* checkpoint and volume scripts share tar's standard input; the others are
		 * fed from a pipe */
		unsigned in = CLS_C_PIPED;
		if (w->len > 2 && w->s[0] == '-' && w->s[1] == '-') {
			const char *eq = memchr(w->s, '=', w->len);
			size_t nl = eq ? (size_t)(eq - w->s - 2) : w->len - 2;
			for (size_t k = 0; runs[k] != NULL && !hit; k++) {
				hit = nl >= 3 && nl <= strlen(runs[k]) &&
				      memcmp(w->s + 2, runs[k], nl) == 0;
				if (hit && (k == 0 || k == 3 || k == 4))
					in = r->flags & (CLS_C_PIPED | CLS_C_STDIN);
			}
			if (!hit)
				continue;
			if (eq != NULL) {
				cmd = *w;
				cmd.s = eq + 1;
				cmd.len = w->len - (size_t)(eq + 1 - w->s);
			} else if (i + 1 < r->n) {
				cmd = r->v[++i];
			} else {
				continue;
			}
			/* checkpoint actions: exec=COMMAND runs it, the others do not */
			if (nl >= 3 && memcmp(w->s + 2, "checkpoint-action", nl) == 0) {
				if (cmd.len < 5 || memcmp(cmd.s, "exec=", 5) != 0) {
					if (memchr(cmd.s, CLS_EXP_MARK, cmd.len) == NULL)
						continue;
				} else {
					cmd.s += 5;
					cmd.len -= 5;
				}
			}
		} else if (w->len > 1 && w->s[0] == '-' && w->s[1] != '-') {
			const char *o = NULL;
			for (size_t j = 1; j < w->len && o == NULL; j++)
				if (w->s[j] == 'I' || w->s[j] == 'F')
					o = w->s + j;
			if (o == NULL)
				continue;
			if (*o == 'F')
				in = r->flags & (CLS_C_PIPED | CLS_C_STDIN);
			if (o + 1 < w->s + w->len) {
				cmd = *w;
				cmd.s = o + 1;
				cmd.len = w->len - (size_t)(o + 1 - w->s);
			} else if (i + 1 < r->n) {
				cmd = r->v[++i];
			} else {
				continue;
			}
		} else {
			continue;
		}
		if (memchr(cmd.s, CLS_EXP_MARK, cmd.len) != NULL)
			return cls_refuse(c, cmd.off, "tar command is not static");
		if (cls_run_script(c, cmd.s, cmd.len, cmd.off, in) == -1)
			return -1;
	}
	return 0;
}

/* Whether a glob's last part can match the name of a network program, a wrapper, a shell or
 * an interpreter (`cp /usr/bin/cur[l] /tmp/c', `cp cur? /tmp/c'). */
static int glob_may_name_program(const struct cls_word *w)
{
	static const char *const more[] = {"curl", "wget", "wget2", "git", "ssh", "scp", "sftp",
	        "rsync", "nc", "ncat", "netcat", "socat", "telnet", "openssl", "aria2c", "ftp",
	        "slogin", "tftp", "websocat", "python", "python3", "perl", "ruby", "node", "php",
	        "lua",
	        "busybox", "toybox", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "ld.so", NULL};
	size_t bl;
	const char *b = word_base(w, &bl);
	char pat[128];
	if (bl == 0 || bl >= sizeof pat)
		return 1;
	memcpy(pat, b, bl);
	pat[bl] = '\0';
	int lit = 0;
	for (size_t i = 0; i < bl; i++)
		lit |= isalnum((unsigned char)pat[i]) != 0;
	if (!lit)
		return 0; /* a bare star: every file, named by nothing in particular */
	for (size_t i = 0; more[i] != NULL; i++)
		if (fnmatch(pat, more[i], 0) == 0)
			return 1;
	return handler_glob(pat);
}

/* A network program's (or the loader's) file as an argument of a program that may copy it
 * (cat /usr/bin/curl > /tmp/c, dd if=/usr/bin/curl, sed '' /usr/bin/curl, gzip -c ...):
 * the copy can run under any name.  Only words with a slash count: a bare name is data. */
static int copies_program(struct cls_ctx *c, const struct run *r)
{
	static const char *const inspect[] = {"ls", "stat", "file", "which", "type", "readlink",
	        "realpath", "ldd", "sha1sum", "sha256sum", "sha512sum", "md5sum", "cksum", "du",
	        "test", "[", "whereis", "dpkg", "rpm", "apt", "apt-get", "strings", "nm", "objdump",
	        "readelf", "chmod", "chown", "rm", "touch", "diff", "cmp", "namei", "getfattr", NULL};
	size_t cb;
	const char *cbase = word_base(&r->v[0], &cb);
	if (cls_in_list(inspect, cbase, cb))
		return 0;
	for (size_t i = 1; i < r->n; i++) {
		const struct cls_word *w = &r->v[i];
		if (w->flags & CLS_W_EXP)
			continue;
		if (memchr(w->s, '/', w->len) == NULL)
			continue;
		size_t bl;
		const char *b = word_base(w, &bl);
		if (bl == 0)
			continue;
		if ((w->flags & CLS_W_GLOB) ? glob_may_name_program(w) :
		                              (is_network_program(b, bl) || is_ldso(b, bl)))
			return cls_refuse(c, w->off,
			        "a network program's file is read by `%.*s': a copy can run under any "
			        "name: refused",
			        (int)cb, cbase);
	}
	return 0;
}

/* cp/ln/mv/install of a network program: the copy can run under any name (refused) */
static int w_copy(struct cls_ctx *c, struct run *r)
{
	for (size_t i = 1; i < r->n; i++) {
		const struct cls_word *w = &r->v[i];
		/* `ln -s "$(command -v git)" g': a program named by what a command printed */
		if (w->flags & CLS_W_SUBST)
			return cls_refuse(c, w->off,
			        "a copy or link of what a command substitution names: refused");
		if (w->flags & CLS_W_EXP) {
			/* x=/usr/bin/curl; ln -s $x c: an expansion, and a value on the line that
			 * names a network program (black-box finding) */
			if (c->program_value)
				return cls_refuse(c, w->off,
				        "a copy or link of an expansion, on a line whose assignment names a "
				        "network program: refused");
			/* "$PWD/curl", "$d/git": the static last part names the program */
			size_t eb;
			const char *e = word_base(w, &eb);
			if (eb > 0 && memchr(e, CLS_EXP_MARK, eb) == NULL && e != w->s &&
			        (is_network_program(e, eb) || is_ldso(e, eb)))
				return cls_refuse(c, w->off,
				        "a copy or link of a network program can run under any name: "
				        "refused");
			continue;
		}
		size_t bl;
		const char *b = word_base(w, &bl);
		if ((w->flags & CLS_W_GLOB) && glob_may_name_program(w))
			return cls_refuse(c, w->off,
			        "a copy or link of what a glob may name (a network program): refused");
		if (bl > 0 && (is_network_program(b, bl) || is_handled(b) || is_ldso(b, bl)))
			return cls_refuse(c, w->off,
			        "a copy or link of a network program or a wrapper can run under any "
			        "name: refused");
	}
	return 0;
}

/* Marks the words of r from k on that hold rep (an xargs -I string, find's {}) as expansions:
 * the text there comes from the input. */
static int mark_replaced(struct cls_ctx *c, struct run *r, size_t k, const char *rep, size_t rl)
{
	struct cls_word *nv = cls_alloc(c, r->n * sizeof *nv, r->v[0].off);
	if (nv == NULL)
		return -1;
	memcpy(nv, r->v, r->n * sizeof *nv);
	for (size_t i = k; i < r->n; i++) {
		struct cls_word *w = &nv[i];
		const char *hit = rl ? memmem(w->s, w->len, rep, rl) : NULL;
		if (hit == NULL)
			continue;
		char *t = cls_strdup(c, w->s, w->len, w->off);
		if (t == NULL)
			return -1;
		size_t o = 0;
		for (size_t j = 0; j < w->len;) {
			if (j + rl <= w->len && memcmp(w->s + j, rep, rl) == 0) {
				t[o++] = CLS_EXP_MARK;
				j += rl;
			} else {
				t[o++] = w->s[j++];
			}
		}
		t[o] = '\0';
		w->flags |= CLS_W_EXP | CLS_W_TEXT | CLS_W_RTEXT | (hit == w->s ? CLS_W_LEADEXP : 0);
		w->deps = NULL; /* a file name or an input word: run-time text (values.c) */
		w->s = t;
		w->len = o;
	}
	r->v = nv;
	return 0;
}

struct xargs_state {
	const char *rep; /* -I / -i / --replace string */
	size_t rl;
	int file; /* -a FILE: the arguments come from a file */
};

static int xargs_opt(void *arg, const struct cls_opt *o)
{
	struct xargs_state *st = arg;
	if (o->c == 'a' || (o->c == 0 && o->ll == 8 && memcmp(o->l, "arg-file", 8) == 0))
		st->file = 1;
	if (o->c == 'I' && o->val != NULL) {
		st->rep = o->val;
		st->rl = o->vlen;
	} else if (o->c == 'i' || (o->c == 0 && o->ll == 7 && memcmp(o->l, "replace", 7) == 0)) {
		st->rep = o->val != NULL ? o->val : "{}";
		st->rl = o->val != NULL ? o->vlen : 2;
	}
	return 0;
}

static int w_xargs(struct cls_ctx *c, struct run *r)
{
	static const char *const lv[] = {"arg-file", "delimiter", "max-lines", "max-args",
	        "max-procs", "max-chars", "process-slot-var", CLS_LONG_FLAGS, "null",
	        "no-run-if-empty", "interactive", "verbose", "exit", "open-tty", "show-limits",
	        "replace", "eof", "help", "version", NULL};
	static const struct cls_opts spec = {"adEILnPs", "eil", lv, 0, 0};
	struct xargs_state st = {NULL, 0, 0};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, xargs_opt, &st, NULL);
	if (k >= r->n)
		return none_left(r); /* no command: echo (under xargs, the input's) */
	if (st.rep != NULL && mark_replaced(c, r, k, st.rep, st.rl) == -1)
		return -1;
	/* the words xargs appends come from its input: unknown; when the line writes that
	 * input (a pipe, a here-string) they may be options too.  A file's words (-a, < FILE)
	 * are out of reach, as a script file is. */
	r->flags |= CLS_C_XARGS;
	/* -a FILE and a redirected standard input are unknown words too (black-box finding:
	 * `xargs -a <(echo -d x URL) curl' was http:read) */
	if (st.file || (r->flags & (CLS_C_PIPED | CLS_C_STDINX)) || r->doc != NULL)
		r->flags |= CLS_C_XOPTS;
	return shift(r, k);
}

static int w_find(struct cls_ctx *c, struct run *r)
{
	for (size_t i = 1; i < r->n; i++) {
		const struct cls_word *w = &r->v[i];
		if (!(cls_word_is(w, "-exec") || cls_word_is(w, "-execdir") ||
		            cls_word_is(w, "-ok") || cls_word_is(w, "-okdir")))
			continue;
		size_t j = i + 1, e = j;
		while (e < r->n && !cls_word_is(&r->v[e], ";") && !cls_word_is(&r->v[e], "+"))
			e++;
		if (e > j) {
			/* {} is a file name: where it stands, the word is not static */
			struct run sub = {r->v + j, e - j, r->flags & ~CLS_C_XARGS, NULL};
			if (mark_replaced(c, &sub, 0, "{}", 2) == -1)
				return -1;
			if (cls_enter(c, r->v[j].off) == -1)
				return -1;
			if (cls_run_cmd(c, sub.v, sub.n, sub.flags, NULL) == -1)
				return -1;
			cls_leave(c);
		}
		i = e;
	}
	return 0;
}

static int is_parallel_sep(const struct cls_word *w)
{
	return cls_word_is(w, ":::") || cls_word_is(w, "::::") || cls_word_is(w, ":::+") ||
	       cls_word_is(w, "::::+");
}

static int w_parallel(struct cls_ctx *c, struct run *r)
{
	static const char *const lv[] = {"arg-file", "jobs", "sshlogin", "delimiter", "colsep",
	        "max-args", "max-replace-args", "results", "joblog", "tmpdir", "timeout", "delay",
	        "retries", "halt", "memfree", "load", "workdir", "basefile", "return",
	        "transferfile", "env", "sshloginfile", "tagstring", "max-lines", "replace", "nice",
	        NULL};
	static const struct cls_opts spec = {"aCdEIjLnNPS", NULL, lv, 0, 0};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, NULL, NULL, NULL);
	size_t s = k;
	while (s < r->n && !is_parallel_sep(&r->v[s]))
		s++;
	if (s == k) {
		/* no template: with ::: each argument is a command line of its own */
		if (s < r->n && cls_word_is(&r->v[s], ":::")) {
			for (size_t i = s + 1; i < r->n && !is_parallel_sep(&r->v[i]); i++)
				if (run_word_script(c, &r->v[i], "parallel command", r->flags) ==
				        -1)
					return -1;
			return 0;
		}
		if (s < r->n)
			return cls_refuse(
			        c, r->v[s].off, "parallel runs command lines read from a file");
		/* command lines from standard input: a shell's program */
		return stdin_program(c, r, 1, 0, r->v[0].off);
	}
	/* the template runs through a shell, with the arguments appended or put at {}; they
	 * may be options unless they are all static words written after ::: */
	unsigned fl = CLS_C_XARGS | (r->flags & CLS_C_PIPED);
	if (s >= r->n || !cls_word_is(&r->v[s], ":::"))
		fl |= CLS_C_XOPTS;
	for (size_t i = s; i < r->n; i++)
		if (!is_parallel_sep(&r->v[i]) &&
		        ((r->v[i].flags & (CLS_W_EXP | CLS_W_GLOB | CLS_W_BRACE)) ||
		                (r->v[i].len > 0 && r->v[i].s[0] == '-') ||
		                (is_parallel_sep(&r->v[i - 1]) && !cls_word_is(&r->v[i - 1], ":::"))))
			fl |= CLS_C_XOPTS;
	char *text;
	size_t len;
	if (join_static(c, r->v + k, s - k, "parallel command", &text, &len) == -1)
		return -1;
	return cls_run_script(c, text, len, r->v[k].off, fl);
}

static int w_watch(struct cls_ctx *c, struct run *r)
{
	static const char *const lv[] = {"interval", "equexit", NULL};
	static const char *const lflags[] = {"exec", NULL};
	static const struct cls_opts spec = {"nq", NULL, lv, 0, 0};
	struct grab g = {.flags = "x", .lflags = lflags};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, grab_fn, &g, NULL);
	if (k >= r->n)
		return none_left(r);
	if (g.flagged)
		return shift(r, k);
	/* watch joins its arguments and hands them to sh -c */
	char *text;
	size_t len;
	if (join_static(c, r->v + k, r->n - k, "watch command", &text, &len) == -1)
		return -1;
	return cls_run_script(c, text, len, r->v[k].off, 0);
}

/* Replaces the command word by the package's program name: "@scope/pkg@1.2" -> "pkg". */
static int package_program(struct cls_ctx *c, struct run *r, size_t k)
{
	const struct cls_word *w = &r->v[k];
	const char *s = w->s, *end = s + w->len;
	const char *at = memchr(s[0] == '@' ? s + 1 : s, '@', w->len - (s[0] == '@'));
	if (at != NULL)
		end = at;
	const char *eqeq = strstr(s, "==");
	if (eqeq != NULL && eqeq < end)
		end = eqeq;
	const char *base = s;
	for (const char *p = s; p < end; p++)
		if (*p == '/')
			base = p + 1;
	struct cls_word *nv = cls_alloc(c, (r->n - k) * sizeof *nv, w->off);
	if (nv == NULL)
		return -1;
	memcpy(nv, r->v + k, (r->n - k) * sizeof *nv);
	nv[0].s = cls_strdup(c, base, (size_t)(end - base), w->off);
	if (nv[0].s == NULL)
		return -1;
	nv[0].len = (size_t)(end - base);
	r->v = nv;
	r->n -= k;
	return 1;
}

static int w_npx(struct cls_ctx *c, struct run *r)
{
	static const char *const lv[] = {
	        "package", "call", "cache", "userconfig", "registry", "prefix", "workspace", NULL};
	static const struct cls_opts spec = {"pc", NULL, lv, 0, 0};
	struct grab g = {.c = 'c', .l = "call"};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, grab_fn, &g, NULL);
	if (g.found && g.vw != NULL) {
		struct cls_word w = *g.vw;
		w.s = g.val;
		w.len = g.vlen;
		if (w.len > 0 && w.s[0] == '=' && g.vw->s[1] != '-') {
			/* npx -c=CMD: npm's parser drops the `=' */
			w.s++;
			w.len--;
		}
		return run_word_script(c, &w, "npx -c command", r->flags);
	}
	if (k >= r->n)
		return none_left(r);
	cls_package_fetch(c, r->v, r->n, ALLOW_REG_NPM); /* npx fetches a package it lacks */
	return package_program(c, r, k);
}

const char *const cls_uv_lv[] = {"from", "with", "with-editable", "with-requirements", "python",
        "index", "index-url", "extra-index-url", "find-links", "constraints", "overrides",
        "cache-dir", "directory", "project", "config-file", "env-file", "package", "extra", "group",
        "only-group", "no-group", "prerelease", "resolution", "refresh-package",
        "reinstall-package", "upgrade-package", "index-strategy", "keyring-provider",
        "exclude-newer", "link-mode", "color", "python-preference", "allow-insecure-host", NULL};

static int w_uvx(struct cls_ctx *c, struct run *r)
{
	static const struct cls_opts spec = {"pfwc", NULL, cls_uv_lv, 0, 0};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, NULL, NULL, NULL);
	if (k >= r->n)
		return none_left(r);
	cls_package_fetch(c, r->v, r->n, ALLOW_REG_PYPI); /* uvx fetches the tool */
	return package_program(c, r, k);
}

static int w_uv(struct cls_ctx *c, struct run *r)
{
	static const struct cls_opts spec = {"pfwc", NULL, cls_uv_lv, 0, 0};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, NULL, NULL, NULL);
	if (k < r->n && cls_word_is(&r->v[k], "tool") && k + 1 < r->n &&
	        cls_word_is(&r->v[k + 1], "run")) {
		r->v += k + 1;
		r->n -= k + 1;
		return w_uvx(c, r);
	}
	if (k >= r->n || !cls_word_is(&r->v[k], "run"))
		return cls_rule_uv(c, r->v, r->n, r->flags) == -1 ? -1 : 0; /* packages */
	k = cls_opts_walk(r->v, r->n, k + 1, &spec, NULL, NULL, NULL);
	return shift(r, k);
}

static int w_busybox(struct cls_ctx *c, struct run *r)
{
	(void)c;
	if (r->n >= 2 && r->v[1].len > 0 && r->v[1].s[0] == '-')
		return 0;
	return shift(r, 1); /* no applet: xargs may supply one (oracle fuzz finding) */
}

/* A shell's options as far as they matter here. */
struct shell_opts {
	int cflag;   /* -c: the first operand is the script */
	int sflag;   /* -s: the script is standard input */
	int aliases; /* aliases are expanded: -i, --posix, -o posix, -O expand_aliases */
	int iflag;   /* -i */
	int nflag;   /* -n: commands are read, none run */
	int hist;    /* history expansion may be on: -H, -o histexpand, -o history */
};

/* Whether a set -o (or shopt -o) option name switches history expansion or the history list
 * on: both together make bash expand `!' designators in the lines that follow (black-box
 * round 4: `set -H -o history' then `!:1-$' ran the previous line's words). */
static int hist_option(const char *s, size_t len)
{
	return (len == 10 && memcmp(s, "histexpand", 10) == 0) ||
	       (len == 7 && memcmp(s, "history", 7) == 0) || memchr(s, CLS_EXP_MARK, len) != NULL;
}

static int shell_opt(void *arg, const struct cls_opt *o)
{
	struct shell_opts *so = arg;
	if (o->c == 'c')
		so->cflag = 1;
	else if (o->c == 's')
		so->sflag = 1;
	else if (o->c == 'i')
		so->iflag = so->aliases = 1;
	else if (o->c == 'n')
		so->nflag = 1;
	else if (o->c == 'H' || (o->c == 'o' && o->val != NULL && hist_option(o->val, o->vlen)))
		so->hist = 1;
	else if ((o->c == 'O' || o->c == 'o') && o->val != NULL &&
	         ((o->vlen == 14 && memcmp(o->val, "expand_aliases", 14) == 0) ||
	                 (o->vlen == 5 && memcmp(o->val, "posix", 5) == 0) ||
	                 memchr(o->val, CLS_EXP_MARK, o->vlen) != NULL))
		so->aliases = 1;
	else if (o->c == 0 && o->ll == 5 && memcmp(o->l, "posix", 5) == 0)
		so->aliases = 1;
	return 0;
}

/* Whether a script operand names standard input (1), another descriptor (2), or a file (0). */
static int fd_path(const struct cls_word *w)
{
	if (cls_word_is(w, "-") || cls_word_is(w, "/dev/stdin") || cls_word_is(w, "/dev/fd/0") ||
	        cls_word_is(w, "/proc/self/fd/0") || cls_word_is(w, "/proc/thread-self/fd/0"))
		return 1;
	static const char *const pre[] = {"/dev/fd/", "/proc/", "/dev/tcp/", "/dev/udp/", NULL};
	for (size_t i = 0; pre[i] != NULL; i++)
		if (w->len >= strlen(pre[i]) && memcmp(w->s, pre[i], strlen(pre[i])) == 0)
			return 2;
	return 0;
}

/* A shell or interpreter that reads its program from standard input: a static here-doc or
 * here-string is followed (shells only: `script` classifies it), anything else is refused. */
static int stdin_program(
        struct cls_ctx *c, const struct run *r, int shell, unsigned inherit, size_t off)
{
	if (r->doc != NULL && r->doc->ready) {
		if (r->doc->nonstatic)
			return refuse_program(c, r->doc->off,
			        r->doc->download || (r->flags & CLS_C_DLIN), "a here-document");
		if (!shell) {
			/* a static program in another language: scanned as a one-liner's is */
			size_t bl;
			const char *base = word_base(&r->v[0], &bl);
			struct cls_word text = {r->doc->s, r->doc->len, 0, r->doc->off, NULL};
			return cls_scan_program(c, base, bl, &text);
		}
		/* the script's commands read the rest of it as their standard input */
		return cls_run_script(c, r->doc->s, r->doc->len, r->doc->off, inherit | CLS_C_STDIN);
	}
	if (r->flags & CLS_C_PIPED)
		return refuse_program(c, off, (r->flags & CLS_C_DLIN) != 0, "a pipe");
	if (r->flags & CLS_C_STDIN)
		return refuse_program(c, off, (r->flags & CLS_C_DLIN) != 0, "a redirection");
	return refuse_program(c, off, 0, "standard input");
}

static int w_shell_run(struct cls_ctx *c, struct run *r);

/* A shell: the script is parsed as bash's, and with sh's (dash's) differences refused when the
 * shell is not bash (black-box round 8: `sh -c ':&>x git push' ran git push, dash reading
 * `: &' and `>x git push'). */
static int w_shell(struct cls_ctx *c, struct run *r)
{
	size_t bl;
	const char *base = word_base(&r->v[0], &bl);
	int saved = c->sh_mode;
	c->sh_mode = !(bl >= 4 && memcmp(base + bl - 4, "bash", 4) == 0);
	/* bash +B or +o braceexpand switches brace expansion off in its script */
	for (size_t i = 1; i < r->n; i++) {
		const struct cls_word *w = &r->v[i];
		if ((w->len > 1 && w->s[0] == '+' && memchr(w->s, 'B', w->len) != NULL) ||
		        cls_word_is(w, "braceexpand"))
			c->brace_off = 1;
	}
	int rc = w_shell_run(c, r);
	c->sh_mode = saved;
	return rc;
}

static int w_shell_run(struct cls_ctx *c, struct run *r)
{
	static const char *const lv[] = {"rcfile", "init-file", NULL};
	static const struct cls_opts spec = {"oO", NULL, lv, 1, 0};
	struct shell_opts so = {0, 0, 0, 0, 0, 0};
	size_t k = cls_opts_walk(r->v, r->n, 1, &spec, shell_opt, &so, NULL);
	/* --rcfile/--init-file FILE (bash also takes them with one dash): an interactive shell
	 * runs FILE first, a process substitution or standard input as well (black-box finding
	 * A3): refused, as is an option that is not static */
	for (size_t i = 1; i < k && i < r->n; i++) {
		const struct cls_word *w = &r->v[i];
		if (cls_word_is(w, "--rcfile") || cls_word_is(w, "-rcfile") ||
		        cls_word_is(w, "--init-file") || cls_word_is(w, "-init-file") ||
		        (w->len > 0 && (w->s[0] == '-' || w->s[0] == CLS_EXP_MARK) &&
		                memchr(w->s, CLS_EXP_MARK, w->len) != NULL))
			return cls_refuse(c, w->off,
			        "a shell's start-up file option (--rcfile, --init-file) or an option "
			        "that is not static: refused");
	}
	size_t bl;
	const char *base = word_base(&r->v[0], &bl);
	/* bash expands aliases in posix mode, with -O expand_aliases or -i; the other shells
	 * (dash as sh, ksh, zsh, ...) always do */
	if (so.aliases || !(bl >= 4 && memcmp(base + bl - 4, "bash", 4) == 0))
		c->aliases_on = 1;
	/* -H or -o histexpand/history; and -i, which has both on, reading lines that hold a `!'
	 * (bash -i <<< $'...\n!!' expands it; -c scripts are not expanded) */
	if (so.hist)
		return cls_refuse(c, r->v[0].off,
		        "a shell with history expansion switched on (-H, -o histexpand, -o "
		        "history): refused");
	if (so.iflag && !so.cflag && r->doc != NULL && r->doc->ready &&
	        memchr(r->doc->s, '!', r->doc->len) != NULL)
		return cls_refuse(c, r->doc->off,
		        "an interactive shell expands history (`!') in the lines it reads: refused");
	/* the words after the script are its positional parameters (values.c) */
	if (k < r->n)
		cls_val_args(c, r->v + k, r->n - k, r->flags);
	else
		cls_val_args(c, r->v, 0, r->flags);
	if (so.cflag) {
		if (k >= r->n) {
			if (r->flags & CLS_C_XARGS)
				return cls_refuse(
				        c, r->v[0].off, "the shell's -c script comes from xargs' input");
			return 0;
		}
		return run_word_script(c, &r->v[k], "shell -c script", r->flags);
	}
	if (k < r->n && !so.sflag) {
		const struct cls_word *w = &r->v[k];
		if ((w->flags & CLS_W_EXP) && cls_val_file_operand(c, w))
			return 0; /* for f in tests/x*.sh; bash "$f": a file (values.c) */
		/* for f in *.sh; do bash -n "$f": a name holding `.' is a file, or an option word
		 * bash refuses whole (-c.sh, +O.sh, --rcfile.sh: "invalid option", before anything
		 * runs; the oracle), and -n runs none of the file's commands */
		if ((w->flags & CLS_W_EXP) && so.nflag && !so.iflag && name_is(base, bl, "bash") &&
		        cls_val_dotted_operand(c, w))
			return 0;
		if (w->flags & CLS_W_EXP)
			return refuse_program(c, w->off, (w->flags & CLS_W_DL) != 0,
			        "a process substitution or an expansion");
		int fd = fd_path(w);
		if (fd == 2)
			return refuse_program(c, w->off, 0, "a descriptor");
		if (fd == 0) {
			/* a script file: out of reach, unless the line wrote it */
			cls_note_run(c, w, CLS_RUN_SHELL, NULL, 0, r->flags);
			return 0;
		}
	}
	if (r->flags & CLS_C_XARGS && k >= r->n)
		return cls_refuse(c, r->v[0].off, "the shell's script comes from xargs' input");
	return stdin_program(c, r, 1, 0, r->v[0].off);
}

/* source FILE / . FILE: a file is out of reach; standard input, a descriptor or a process
 * substitution is the same as a shell reading them. */
static int w_source(struct cls_ctx *c, struct run *r)
{
	size_t k = 1;
	if (k < r->n && cls_word_is(&r->v[k], "--"))
		k++;
	if (k >= r->n)
		return 0;
	const struct cls_word *w = &r->v[k];
	if (w->flags & CLS_W_EXP)
		return refuse_program(c, w->off, (w->flags & CLS_W_DL) != 0,
		        "a process substitution or an expansion");
	int fd = fd_path(w);
	if (fd == 2)
		return refuse_program(c, w->off, 0, "a descriptor");
	if (fd == 0 || cls_word_is(w, "-")) {
		if (fd == 0)
			cls_note_run(c, w, CLS_RUN_SHELL, NULL, 0, r->flags);
		return 0;
	}
	return stdin_program(c, r, 1, 0, w->off);
}

/* Interpreters: the program is an option's value (-c, -e, ...), a script file, or standard
 * input.  Only the last two forms matter here: a program from standard input, a descriptor or
 * a process substitution is refused (issue 12 item 3).  spec gives each one's options. */
struct interp {
	const char *name; /* basename, or a prefix when it ends with '*' */
	const char *prog; /* short options whose value is the program (or a module) */
	const char *sv;   /* other short options with a value */
	const char *const *lprog; /* long options whose value is the program */
};

static const char *const node_lprog[] = {"eval", "print", NULL};
static const struct interp interps[] = {
        {"python*", "cm", "WXQ", NULL},
        {"pypy*", "cm", "WXQ", NULL},
        {"perl*", "eE", "", NULL},
        {"ruby*", "e", "CEIKr", NULL},
        {"irb", "", "", NULL},
        {"node", "ep", "r", node_lprog},
        {"nodejs", "ep", "r", node_lprog},
        {"php*", "rfBRFE", "cdz", NULL},
        {"lua*", "el", "", NULL},
        {"luajit", "elb", "", NULL},
        {"tclsh*", "", "", NULL},
        {"Rscript", "e", "", NULL},
        {"osascript", "e", "", NULL},
        {"pwsh", "cCfF", "", NULL},
        {NULL, NULL, NULL, NULL},
};

static const struct interp *find_interp(const char *b, size_t bl)
{
	if (bl < 3 || strchr("RilnopPrt", b[0]) == NULL)
		return NULL; /* the first letters of the names below */
	for (const struct interp *i = interps; i->name != NULL; i++) {
		if (i->name[0] != b[0])
			continue;
		size_t nl = strlen(i->name);
		if (i->name[nl - 1] == '*') {
			if (bl >= nl - 1 && memcmp(b, i->name, nl - 1) == 0) {
				/* python3, python3.11, perl5.36: digits and dots after the name */
				size_t j = nl - 1;
				while (j < bl && ((b[j] >= '0' && b[j] <= '9') || b[j] == '.'))
					j++;
				if (j == bl)
					return i;
			}
		} else if (bl == nl && memcmp(b, i->name, nl) == 0) {
			return i;
		}
	}
	return NULL;
}

static int interp_stdin(struct cls_ctx *c, const struct run *r, const struct interp *in)
{
	size_t i = 1;
	while (i < r->n) {
		const struct cls_word *w = &r->v[i];
		if (w->len < 2 || w->s[0] != '-')
			break;
		i++;
		if (cls_word_is(w, "--"))
			break;
		if (w->s[1] == '-') {
			const char *eq = memchr(w->s, '=', w->len);
			size_t ll = eq ? (size_t)(eq - w->s - 2) : w->len - 2;
			if (cls_in_list(in->lprog, w->s + 2, ll))
				return 0;
			continue;
		}
		for (size_t j = 1; j < w->len; j++) {
			if (strchr(in->prog, w->s[j]) != NULL) {
				/* under xargs, `-c' with nothing after it takes xargs' input */
				if ((r->flags & CLS_C_XARGS) && j + 1 == w->len && i >= r->n)
					return cls_refuse(c, w->off,
					        "the interpreter's program comes from xargs' input");
				return 0; /* -c PROGRAM, -m MODULE, -e CODE: the program is not stdin */
			}
			if (strchr(in->sv, w->s[j]) != NULL) {
				if (j + 1 == w->len)
					i++;
				break;
			}
		}
	}
	if (i < r->n) {
		const struct cls_word *w = &r->v[i];
		/* for f in tests/x*.py; python3 "$f": a file (values.c) */
		if ((w->flags & CLS_W_EXP) && cls_val_file_operand(c, w))
			return 0;
		if (w->flags & CLS_W_EXP)
			return refuse_program(c, w->off, (w->flags & CLS_W_DL) != 0,
			        "a process substitution or an expansion");
		int fd = fd_path(w);
		if (fd == 2)
			return refuse_program(c, w->off, 0, "a descriptor");
		if (fd == 0) {
			/* a script file: out of reach, unless the line wrote it */
			size_t bl;
			const char *base = word_base(&r->v[0], &bl);
			cls_note_run(c, w, CLS_RUN_INTERP, base, bl, r->flags);
			return 0;
		}
	}
	if (r->flags & CLS_C_XARGS) {
		/* xargs appends file names; with no script named, the first may be -c CODE */
		if (i >= r->n && (r->flags & CLS_C_XOPTS))
			return cls_refuse(c, r->v[0].off,
			        "the interpreter's program or options come from xargs' input");
		return 0;
	}
	if (r->doc == NULL && !(r->flags & (CLS_C_PIPED | CLS_C_STDIN)))
		return 0; /* an interactive interpreter on the agent's terminal */
	return stdin_program(c, r, 0, 0, r->v[0].off);
}

static int w_eval(struct cls_ctx *c, struct run *r)
{
	char *text;
	size_t len;
	size_t k = 1;
	if (k < r->n && cls_word_is(&r->v[k], "--"))
		k++;
	if (k >= r->n)
		return none_left(r);
	if (join_static(c, r->v + k, r->n - k, "eval argument", &text, &len) == -1)
		return -1;
	return cls_run_script(c, text, len, r->v[k].off, r->flags & (CLS_C_PIPED | CLS_C_STDIN));
}

static int w_trap(struct cls_ctx *c, struct run *r)
{
	size_t k = 1;
	if (k < r->n && cls_word_is(&r->v[k], "--"))
		k++;
	if (k + 1 >= r->n || (r->v[k].len > 0 && r->v[k].s[0] == '-' && r->v[k].len > 1))
		return 0;
	/* the action runs later, on the signal or at exit, with the shell's standard input */
	return run_word_script(c, &r->v[k], "trap action", r->flags);
}

/* shopt [-pqsuo] NAME...: -s with expand_aliases (bundled as -qs too) turns aliases on */
static int w_shopt(struct cls_ctx *c, struct run *r)
{
	int set = 0, hit = 0, oflag = 0, hist = 0;
	for (size_t i = 1; i < r->n; i++) {
		const struct cls_word *w = &r->v[i];
		if (w->len > 1 && w->s[0] == '-' && memchr(w->s, 'o', w->len) != NULL)
			oflag = 1;
		if (hist_option(w->s, w->len))
			hist = 1;
		if (w->flags & CLS_W_EXP)
			hit = set = 1;
		else if (w->len > 1 && w->s[0] == '-' && memchr(w->s, 's', w->len) != NULL)
			set = 1;
		else if (cls_word_is(w, "expand_aliases") || cls_word_is(w, "posix"))
			hit = 1;
	}
	if (set && hit)
		c->aliases_on = 1;
	/* shopt -os histexpand, shopt -o -s history: set -o's names */
	if (set && oflag && hist)
		return cls_refuse(c, r->v[0].off,
		        "shopt -o switches history expansion or the history list on: refused");
	return 0;
}

/* set -o posix (or +o, bundled, any expansion): POSIX mode expands aliases */
static int w_set(struct cls_ctx *c, struct run *r)
{
	cls_val_builtin(c, r->v, r->n, r->flags, r->doc);
	/* positional parameters from an expansion: values built at run time (A7) */
	for (size_t i = 1; i < r->n; i++)
		if ((r->v[i].flags & (CLS_W_EXP | CLS_W_GLOB)) && !c->dynamic) {
			c->dynamic = 1;
			c->dynamic_off = r->v[i].off;
		}
	for (size_t i = 1; i < r->n; i++) {
		const struct cls_word *w = &r->v[i];
		if ((w->flags & CLS_W_EXP) || cls_word_is(w, "posix"))
			c->aliases_on = 1;
	}
	/* set +B or set +o braceexpand switches brace expansion off: the line was scanned for
	 * it before it was parsed (a function defined earlier may run after it), so one that
	 * the scan did not see ($'+B') is refused */
	for (size_t i = 1; i < r->n; i++) {
		const struct cls_word *w = &r->v[i];
		if ((w->len > 1 && w->s[0] == '+' && memchr(w->s, 'B', w->len) != NULL) ||
		        cls_word_is(w, "braceexpand")) {
			if (!c->brace_off)
				return cls_refuse(c, w->off,
				        "brace expansion switched off in a form not seen before "
				        "the line ran: refused");
		}
	}
	/* set -H (in any cluster), set -o histexpand or -o history, or an option that is not
	 * static: history expansion (`!:1-$', `!!:s/pull/push/') rewrites the lines that follow
	 * (black-box round 4, finding 5).  +H and +o switch it off. */
	for (size_t i = 1; i < r->n; i++) {
		const struct cls_word *w = &r->v[i];
		/* `set $x' with x=-H: a word that begins with an expansion may be an option (a
		 * session finding after black-box round 4) */
		if (w->len > 0 && w->s[0] == CLS_EXP_MARK)
			return cls_refuse(c, w->off,
			        "set's options may come from an expansion (-H switches history "
			        "expansion on): refused");
		if (w->len == 0 || (w->s[0] != '-' && w->s[0] != '+') || cls_word_is(w, "--") ||
		        cls_word_is(w, "-"))
			break; /* an operand: the positional parameters follow */
		if (w->s[0] == '+') {
			if (memchr(w->s, 'o', w->len) != NULL)
				i++; /* +o NAME */
			continue;
		}
		int o = 0;
		for (size_t k = 1; k < w->len; k++) {
			if (w->s[k] == 'H' || w->s[k] == CLS_EXP_MARK)
				return cls_refuse(c, w->off,
				        "set -H switches history expansion on: refused");
			if (w->s[k] == 'o')
				o = 1;
		}
		if (o && i + 1 < r->n && hist_option(r->v[i + 1].s, r->v[i + 1].len))
			return cls_refuse(c, r->v[i + 1].off,
			        "set -o histexpand or history switches history expansion on: refused");
		if (o)
			i++;
	}
	return 0;
}

/* hash -p PATH NAME makes NAME run PATH: refused (BASH_CMDS[NAME]= is refused the same way) */
/* compgen -C CMD / -F FUNC and complete -C / -F run a command line or a function (black-box
 * finding A1: `compgen -C 'git push' x` ran git push): refused, with any option that is not
 * static. */
static int w_compgen(struct cls_ctx *c, struct run *r)
{
	for (size_t i = 1; i < r->n; i++) {
		const struct cls_word *w = &r->v[i];
		if (cls_word_is(w, "--"))
			break;
		if (w->len > 0 && w->s[0] == CLS_EXP_MARK)
			return cls_refuse(c, w->off, "a completion builtin's option is not static");
		if (w->len >= 2 && w->s[0] == '-' &&
		        (memchr(w->s, 'C', w->len) != NULL || memchr(w->s, 'F', w->len) != NULL ||
		                memchr(w->s, CLS_EXP_MARK, w->len) != NULL))
			return cls_refuse(c, w->off,
			        "compgen/complete -C or -F runs a command or a function: refused");
	}
	return 0;
}

/* fc re-runs commands from the history, which `history -s` fills (black-box finding A2) */
static int w_fc(struct cls_ctx *c, struct run *r)
{
	return cls_refuse(c, r->v[0].off, "fc runs commands from the history: refused");
}

static int w_hash(struct cls_ctx *c, struct run *r)
{
	for (size_t i = 1; i < r->n; i++) {
		const struct cls_word *w = &r->v[i];
		if (w->len > 1 && w->s[0] == '-' && memchr(w->s, 'p', w->len) != NULL)
			return cls_refuse(
			        c, w->off, "hash -p makes a name run another program: refused");
		if (w->flags & CLS_W_EXP)
			return cls_refuse(c, w->off, "hash option is not static");
	}
	return 0;
}

/* Whether s starts with a variable whose value bash runs or expands as a prompt, or that
 * makes a name run another program: PS0-PS4, PROMPT_COMMAND, BASH_CMDS, BASH_ALIASES, then
 * the end, a subscript or an assignment. */
int cls_hook_name(const char *s, size_t len)
{
	static const char *const names[] = {"PROMPT_COMMAND", "BASH_CMDS", "BASH_ALIASES", "PS0",
	        "PS1", "PS2", "PS3", "PS4", "BASH_ENV", "ENV", NULL};
	for (size_t i = 0; names[i] != NULL; i++) {
		size_t l = strlen(names[i]);
		if (len >= l && memcmp(s, names[i], l) == 0 &&
		        (len == l || s[l] == '[' || s[l] == '=' || s[l] == '+'))
			return 1;
	}
	return 0;
}

/* read, printf -v, mapfile, getopts, wait -p, declare and the like setting one of those
 * (black-box findings A8-A10: `read PROMPT_COMMAND <<< ...` in `bash -i`, `printf -v PS4 ...`,
 * `declare -n r=BASH_CMDS[z]`): refused, whatever the value. */
static int hook_target(struct cls_ctx *c, const struct run *r, int decl)
{
	for (size_t i = 1; i < r->n; i++) {
		const struct cls_word *w = &r->v[i];
		const char *eq = memchr(w->s, '=', w->len);
		/* declare's NAME=VALUE goes through cls_assignment; a nameref's target does not */
		if ((!decl && cls_hook_name(w->s, w->len)) ||
		        (eq != NULL && cls_hook_name(eq + 1, w->len - (size_t)(eq + 1 - w->s))))
			return cls_refuse(c, w->off,
			        "a builtin setting PS0-PS4, PROMPT_COMMAND, BASH_CMDS, BASH_ALIASES, "
			        "BASH_ENV or ENV: refused");
	}
	return 0;
}

/* Builtins that take variable names (a name may carry a subscript that bash evaluates), or
 * evaluate arithmetic: read, printf -v, unset, let, getopts, wait, test -v, ... */
static int w_evaluates(struct cls_ctx *c, struct run *r)
{
	size_t bl;
	const char *b = word_base(&r->v[0], &bl);
	if (cls_val_builtin(c, r->v, r->n, r->flags, r->doc) == -1)
		return -1;
	/* printf -v NAME, test -v NAME, wait -p NAME; the others always take names */
	const char *opt = name_is(b, bl, "printf") ? "-v" :
	                  name_is(b, bl, "wait")   ? "-p" :
	                  (name_is(b, bl, "test") || name_is(b, bl, "[")) ? "-v" : NULL;
	if (!name_is(b, bl, "test") && !name_is(b, bl, "[") && !name_is(b, bl, "unset") &&
	        hook_target(c, r, 0) == -1)
		return -1;
	/* read, mapfile, getopts and printf -v build values at run time; a name that is not
	 * static or has a subscript is evaluated (black-box finding A7) */
	int vflag = 0;
	for (size_t i = 1; i < r->n; i++) {
		const struct cls_word *w = &r->v[i];
		if (opt != NULL && w->len >= 2 && w->s[0] == '-' && memchr(w->s, opt[1], w->len))
			vflag = 1;
	}
	if (name_is(b, bl, "let"))
		c->eval_name = 1;
	if ((name_is(b, bl, "read") || name_is(b, bl, "getopts") ||
	            (name_is(b, bl, "printf") && vflag)) &&
	        !c->dynamic) {
		c->dynamic = 1;
		c->dynamic_off = r->v[0].off;
	}
	if (name_is(b, bl, "printf")) {
		/* only the name after -v */
		for (size_t i = 1; i + 1 < r->n; i++)
			if (cls_word_is(&r->v[i], "-v") &&
			        (memchr(r->v[i + 1].s, CLS_EXP_MARK, r->v[i + 1].len) != NULL ||
			                memchr(r->v[i + 1].s, '[', r->v[i + 1].len) != NULL))
				c->eval_name = 1;
	} else if (name_is(b, bl, "test") || name_is(b, bl, "[")) {
		if (vflag)
			c->eval_name = 1;
	} else {
		for (size_t i = 1; i < r->n; i++)
			if (memchr(r->v[i].s, CLS_EXP_MARK, r->v[i].len) != NULL ||
			        memchr(r->v[i].s, '[', r->v[i].len) != NULL)
				c->eval_name = 1;
	}
	if (opt == NULL) {
		c->evaluates = 1;
		return 0;
	}
	for (size_t i = 1; i < r->n; i++)
		if ((r->v[i].flags & CLS_W_EXP) || (r->v[i].len >= 2 && r->v[i].s[0] == '-' &&
		                                           memchr(r->v[i].s, opt[1], r->v[i].len)))
			c->evaluates = 1;
	return 0;
}

/* declare/typeset/local/export/readonly: every NAME=VALUE argument is an assignment */
static int w_declare(struct cls_ctx *c, struct run *r)
{
	c->evaluates = 1; /* -n namerefs, -i integers, NAME[subscript] */
	if (cls_val_builtin(c, r->v, r->n, r->flags, r->doc) == -1)
		return -1;
	if (hook_target(c, r, 1) == -1)
		return -1;
	/* -n namerefs and -i integers evaluate values (black-box finding A7) */
	for (size_t i = 1; i < r->n; i++) {
		const struct cls_word *w = &r->v[i];
		if (w->len >= 2 && (w->s[0] == '-' || w->s[0] == '+') &&
		        (memchr(w->s, 'n', w->len) || memchr(w->s, 'i', w->len) ||
		                memchr(w->s, CLS_EXP_MARK, w->len)))
			c->eval_name = 1;
		if (w->len > 0 && w->s[0] == CLS_EXP_MARK)
			c->eval_name = 1;
	}
	for (size_t i = 1; i < r->n; i++) {
		const struct cls_word *w = &r->v[i];
		if (w->len > 0 && w->s[0] != '-' && w->s[0] != '+' && memchr(w->s, '=', w->len) &&
		        cls_assignment(c, w) == -1)
			return -1;
	}
	return 0; /* cls_assignment also notes the registry variables among them (tools.c) */
}

/* mapfile/readarray -C CALLBACK runs CALLBACK as a command every -c lines */
static int w_mapfile(struct cls_ctx *c, struct run *r)
{
	/* -t takes no value: -tC CMD is -t then -C CMD (black-box round 4, finding 7) */
	static const struct cls_opts spec = {"dnOsucC", NULL, NULL, 0, 0};
	struct grab g = {.c = 'C'};
	c->evaluates = 1;
	if (hook_target(c, r, 0) == -1 || cls_val_builtin(c, r->v, r->n, r->flags, r->doc) == -1)
		return -1;
	if (!c->dynamic) {
		c->dynamic = 1; /* lines read at run time (black-box finding A7) */
		c->dynamic_off = r->v[0].off;
	}
	cls_opts_walk(r->v, r->n, 1, &spec, grab_fn, &g, NULL);
	if (!g.found || g.vw == NULL)
		return 0;
	struct cls_word w = *g.vw;
	w.s = g.val;
	w.len = g.vlen;
	/* bash appends the index and the line read to the callback's words (oracle: `scp f h:`
	 * there copies h: as a source) */
	if (w.flags & (CLS_W_DL | CLS_W_EXP))
		return run_word_script(c, &w, "mapfile -C callback", r->flags);
	return cls_run_script(
	        c, w.s, w.len, w.off, (r->flags & (CLS_C_PIPED | CLS_C_STDIN)) | CLS_C_XARGS);
}

static int w_alias(struct cls_ctx *c, struct run *r)
{
	for (size_t i = 1; i < r->n; i++) {
		const struct cls_word *w = &r->v[i];
		const char *eq = memchr(w->s, '=', w->len);
		if (eq == NULL)
			continue;
		if (memchr(w->s, CLS_EXP_MARK, (size_t)(eq - w->s)) != NULL) {
			c->alias_any = 1;
			continue;
		}
		size_t l = (size_t)(eq - w->s);
		struct cls_name *nm = cls_alloc(c, sizeof *nm + l + 1, w->off);
		if (nm == NULL)
			return -1;
		nm->len = l;
		memcpy(nm->s, w->s, l);
		nm->s[l] = '\0';
		nm->next = c->aliases;
		c->aliases = nm;
	}
	return 0;
}

/* Whether a start-up file's value names a descriptor or a device rather than a file: dev/,
 * proc/ or fd/ anywhere in it, or stdin, stdout, stderr as its last part; /dev/null is a file
 * with nothing in it. */
static int startup_device(const char *s, size_t len)
{
	if (name_is(s, len, "/dev/null"))
		return 0;
	static const char *const parts[] = {"dev/", "proc/", "fd/", NULL};
	for (size_t k = 0; parts[k] != NULL; k++)
		if (memmem(s, len, parts[k], strlen(parts[k])) != NULL)
			return 1;
	size_t bl;
	struct cls_word w = {s, len, 0, 0, NULL};
	const char *b = word_base(&w, &bl);
	return name_is(b, bl, "stdin") || name_is(b, bl, "stdout") || name_is(b, bl, "stderr") ||
	       name_is(b, bl, "-");
}

int cls_assignment(struct cls_ctx *c, const struct cls_word *w)
{
	cls_note_assign(c, w); /* registry variables, for tools.c */
	/* variables whose value git or a program it starts runs as a shell command */
	static const char *const commands[] = {"PROMPT_COMMAND", "GIT_EDITOR",
	        "GIT_SEQUENCE_EDITOR", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_PAGER",
	        "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS", "WGET_ASKPASS",
	        "GIT_PROXY_COMMAND", "EDITOR", "VISUAL", "PAGER", "FCEDIT", "MANPAGER",
	        "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "RUSTC", "RUSTDOC",
	        "CARGO_BUILD_RUSTC_WRAPPER", "CARGO_BUILD_RUSTC", "CARGO_BUILD_RUSTDOC", "RSYNC_RSH",
	        "RSYNC_CONNECT_PROG", "CVS_RSH", "SVN_SSH", NULL};
	static const char *const prompts[] = {"PS0", "PS1", "PS2", "PS3", "PS4", NULL};
	const char *s = w->s;
	const char *eq = memchr(s, '=', w->len);
	if (eq == NULL)
		return 0;
	size_t nl = (size_t)(eq - s);
	if (nl > 0 && s[nl - 1] == '+')
		nl--;
	const char *val = eq + 1;
	size_t vl = w->len - (size_t)(val - s);
	/* the value model (values.c): NAME[subscript] evaluates it; the value is NAME's */
	{
		const char *sb = memchr(s, '[', nl);
		size_t vn = sb != NULL ? (size_t)(sb - s) : nl;
		if (sb != NULL && cls_val_sink_word(c, w, (size_t)(sb - s), nl, 1) == -1)
			return -1;
		if (nl < (size_t)(eq - s) && !cls_val_numeric_text(val, vl))
			cls_val_set(c, s, vn, CLS_VK_TEXT); /* x+=: text joined to text */
		else
			cls_val_assign(c, s, vn, w, (size_t)(val - s), w->len, 0);
	}
	/* a value of numbers only (x=$((x+1)), n=${#s}) carries no code */
	int nonstatic = memchr(val, CLS_EXP_MARK, vl) != NULL && (w->flags & CLS_W_TEXT);
	if ((nonstatic || nl < (size_t)(eq - s) || (w->flags & CLS_W_DL)) && !c->dynamic) {
		c->dynamic = 1; /* a value built at run time (black-box finding A7) */
		c->dynamic_off = w->off;
	}
	const char *sub = memchr(s, '[', nl);
	if (sub != NULL) {
		c->evaluates = 1; /* an indexed array's subscript is arithmetic */
		for (const char *q = sub; q < s + nl; q++)
			if ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || *q == '_' ||
			        *q == CLS_EXP_MARK)
				c->eval_name = 1;
		size_t bl = (size_t)(sub - s);
		if (name_is(s, bl, "PROMPT_COMMAND") || cls_in_list(prompts, s, bl))
			return cls_refuse(c, w->off,
			        "PROMPT_COMMAND or a prompt variable as an array: refused");
		if (name_is(s, bl, "BASH_CMDS"))
			return cls_refuse(
			        c, w->off, "BASH_CMDS makes a name run another program: refused");
		if (name_is(s, bl, "BASH_ALIASES")) {
			/* defines the alias named by the subscript */
			const char *rb = memchr(sub, ']', nl - bl);
			size_t al = rb ? (size_t)(rb - sub - 1) : 0;
			if (al == 0 || memchr(sub + 1, CLS_EXP_MARK, al) != NULL) {
				c->alias_any = 1;
				return 0;
			}
			struct cls_name *nm = cls_alloc(c, sizeof *nm + al + 1, w->off);
			if (nm == NULL)
				return -1;
			nm->len = al;
			memcpy(nm->s, sub + 1, al);
			nm->s[al] = '\0';
			nm->next = c->aliases;
			c->aliases = nm;
		}
		return 0;
	}
	/* a prompt or PROMPT_COMMAND from another variable or a substitution: bash expands
	 * or runs a value egressd cannot see (black-box finding A8) */
	if ((name_is(s, nl, "PROMPT_COMMAND") || cls_in_list(prompts, s, nl)) &&
	        (nonstatic || (w->flags & CLS_W_DL)))
		return cls_refuse(c, w->off, "%.*s is not static: refused", (int)nl, s);
	/* cargo's CARGO_TARGET_<TRIPLE>_RUNNER and _LINKER run a program (attack round 4) */
	int cargo_target =
	        nl > 20 && memcmp(s, "CARGO_TARGET_", 13) == 0 &&
	        (memcmp(s + nl - 7, "_RUNNER", 7) == 0 || memcmp(s + nl - 7, "_LINKER", 7) == 0);
	if (nl > 12 && memcmp(s, "CARGO_ALIAS_", 12) == 0)
		return cls_refuse(c, w->off, "a cargo alias from the environment: refused");
	/* node imports a data: module NODE_OPTIONS names (--import data:...) */
	if (name_is(s, nl, "NODE_OPTIONS") && memmem(val, vl, "data:", 5) != NULL)
		return cls_refuse(c, w->off, "NODE_OPTIONS loads a data: module: refused");
	if (cls_in_list(commands, s, nl) || cargo_target ||
	        (nl > 17 && memcmp(s, "GIT_CONFIG_VALUE_", 17) == 0)) {
		if (w->flags & CLS_W_DL)
			return refuse_program(c, w->off, 1, "a variable git runs");
		if (nonstatic)
			return cls_refuse(c, w->off, "%.*s holds a command and is not static",
			        (int)nl, s);
		if (vl > 0 && val[0] == '!') {
			val++;
			vl--;
		}
		/* git feeds some from a pipe (filters, helpers, ssh, pagers) and lets others
		 * share its standard input (editors, aliases): both are classified */
		if (cls_run_script(c, val, vl, w->off, CLS_C_PIPED) == -1)
			return -1;
		return cls_run_script(c, val, vl, w->off, 0);
	}
	if (cls_in_list(prompts, s, nl))
		return cls_run_prompt(c, val, vl, w->off);
	/* a variable make takes from the environment: checked when make runs anywhere on the line
	 * (a function or a loop may run make before the assignment's place) */
	if (make_env_name(s, nl)) {
		if (c->make_seen)
			return make_env_variable(c, w, nl);
		struct cls_assign *a = cls_alloc(c, sizeof *a + sizeof *w, w->off);
		if (a == NULL)
			return -1;
		struct cls_word *copy = (struct cls_word *)(a + 1);
		*copy = *w;
		a->w = copy;
		a->nlen = nl;
		a->next = c->make_env;
		c->make_env = a;
	}
	if (name_is(s, nl, "BASH_ENV") || name_is(s, nl, "ENV")) {
		/* a start-up file: a file is out of reach, anything else is not static */
		if (nonstatic)
			return refuse_program(c, w->off, (w->flags & CLS_W_DL) != 0,
			        "a start-up file that is not static (BASH_ENV, ENV)");
		/* a descriptor or a device (/dev/stdin, /dev/fd/3, /proc/self/fd/0, in any
		 * spelling): the start-up file is the line's own here-string or here-doc
		 * (black-box round 4, finding 6) */
		if (startup_device(val, vl))
			return cls_refuse(c, w->off,
			        "%.*s names a descriptor or a device: the start-up file is input the "
			        "line gives (refused)",
			        (int)nl, s);
		/* a file: a shell this line starts runs it first, which matters when the line
		 * wrote it (black-box round 9: `echo git push>x;BASH_ENV=x bash -c :') */
		struct cls_word f = {val, vl, 0, w->off, NULL};
		cls_note_run(c, &f, CLS_RUN_SHELL, NULL, 0, 0);
		return 0;
	}
	if (nl >= 10 && memcmp(s, "BASH_FUNC_", 10) == 0)
		/* env 'BASH_FUNC_f%%=() { ...; }' bash -c f: a child bash imports f as a function,
		 * which comes before builtins and programs of its name (finding 19) */
		return cls_refuse(c, w->off,
		        "BASH_FUNC_... passes a function to a child bash (it may stand for any "
		        "command): refused");
	if (name_is(s, nl, "LESSOPEN") || name_is(s, nl, "LESSCLOSE") || name_is(s, nl, "BROWSER") ||
	        name_is(s, nl, "TAR_OPTIONS") || name_is(s, nl, "PYTHONBREAKPOINT")) {
		/* less's input preprocessor, webbrowser's browser command, tar's options
		 * (--checkpoint-action=exec=, --to-command, -I), python's breakpoint() hook: a
		 * command or code the program runs (second attacker's findings).  Refused unless
		 * it is empty or python's default. */
		if (vl == 0 || (name_is(s, nl, "PYTHONBREAKPOINT") &&
		                       (name_is(val, vl, "0") || name_is(val, vl, "pdb.set_trace"))))
			return 0;
		return cls_refuse(c, w->off, "%.*s makes a program run a command: refused", (int)nl, s);
	}
	if (nl > 11 && vl > 0 && strncasecmp(s, "npm_config_", 11) == 0) {
		char low[24];
		size_t kl = nl - 11;
		if (kl < sizeof low) {
			for (size_t i = 0; i < kl; i++)
				low[i] = (char)tolower((unsigned char)s[11 + i]);
			if (cls_in_list(npm_cmd_keys, low, kl))
				return cls_refuse(c, w->off, "%.*s names a command npm runs: refused",
				        (int)nl, s);
		}
	}
	if (name_is(s, nl, "GIT_CONFIG_PARAMETERS") || name_is(s, nl, "GIT_EXEC_PATH"))
		return cls_refuse(c, w->off, "%.*s changes what git runs: refused", (int)nl, s);
	if (name_is(s, nl, "POSIXLY_CORRECT") || name_is(s, nl, "SHELLOPTS") ||
	        name_is(s, nl, "BASHOPTS"))
		c->aliases_on = 1;
	/* SHELLOPTS=histexpand:history in a child bash's environment (finding 5) */
	if (name_is(s, nl, "SHELLOPTS") &&
	        (nonstatic || memmem(val, vl, "hist", 4) != NULL))
		return cls_refuse(c, w->off,
		        "SHELLOPTS switches history expansion or the history list on, or is not "
		        "static: refused");
	return 0;
}

/* Program rules as handlers. */
#define RULE(name, fn)                                                                             \
	static int name(struct cls_ctx *c, struct run *r)                                          \
	{                                                                                          \
		return fn(c, r->v, r->n, r->flags) == -1 ? -1 : 0;                                 \
	}
RULE(h_git, cls_rule_git)
RULE(h_curl, cls_rule_curl)
RULE(h_wget, cls_rule_wget)
RULE(h_httpie, cls_rule_httpie)
RULE(h_gh, cls_rule_gh)
RULE(h_ssh, cls_rule_ssh)
RULE(h_scp, cls_rule_scp)
RULE(h_rsync, cls_rule_rsync)
RULE(h_dns, cls_rule_dns)
RULE(h_scalar, cls_rule_scalar)

/* sftp reads its commands from a batch file (-b) or, when it is not a terminal, standard
 * input; `!CMD' runs CMD through the shell, and `!' alone starts a shell that reads the
 * rest (attack round 4: sftp host <<< '!git push').  A static here-document is followed, any
 * other standard input (or -b - ) is refused; a batch file is out of reach. */
static int w_sftp(struct cls_ctx *c, struct run *r)
{
	int batch_stdin = 0;
	for (size_t i = 1; i < r->n; i++) {
		const struct cls_word *w = &r->v[i];
		if (w->len < 2 || w->s[0] != '-' || (w->flags & CLS_W_EXP))
			continue;
		const char *bopt = w->s[1] != '-' ? memchr(w->s, 'b', w->len) : NULL;
		if (bopt == NULL)
			continue;
		const struct cls_word *val = NULL;
		struct cls_word att;
		if (bopt + 1 < w->s + w->len) {
			att = *w;
			att.s = bopt + 1;
			att.len = (size_t)(w->s + w->len - bopt - 1);
			val = &att;
		} else if (i + 1 < r->n) {
			val = &r->v[i + 1];
		}
		if (val != NULL && (val->flags & CLS_W_EXP))
			return cls_refuse(c, val->off, "sftp batch file is not static");
		if (val != NULL && fd_path(val) != 0)
			batch_stdin = 1;
	}
	if (batch_stdin || stdin_fed(r)) {
		if (r->doc != NULL && r->doc->ready && !r->doc->nonstatic) {
			const char *p = r->doc->s, *end = r->doc->s + r->doc->len;
			while (p < end) {
				const char *nl = memchr(p, '\n', (size_t)(end - p));
				const char *e = nl != NULL ? nl : end;
				const char *q = p;
				while (q < e && (*q == ' ' || *q == '\t' || *q == '-' || *q == '@'))
					q++;
				if (q < e && *q == '!') {
					q++;
					int alone = 1;
					for (const char *t = q; t < e; t++)
						alone &= *t == ' ' || *t == '\t';
					/* `!' alone: a shell reads the rest of the batch */
					const char *to = alone ? end : e;
					if (cls_run_script(
					            c, q, (size_t)(to - q), r->doc->off, 0) == -1)
						return -1;
					if (alone)
						break;
				}
				p = nl != NULL ? nl + 1 : end;
			}
		} else {
			return cls_refuse(c, r->v[0].off,
			        "sftp reads batch commands (`!cmd' runs one) from standard input "
			        "that "
			        "is not a static here-document: refused");
		}
	}
	return cls_rule_scp(c, r->v, r->n, r->flags) == -1 ? -1 : 0;
}

struct handler {
	const char *name; /* program basename */
	int (*fn)(struct cls_ctx *c, struct run *r);
};

/* Sorted by name (strcmp order) for bsearch. */
static const struct handler handlers[] = {
        {".", w_source},
        {"[", w_evaluates},
        {"alias", w_alias},
        {"ash", w_shell},
        {"awk", w_awk},
        {"bash", w_shell},
        {"builtin", w_builtin},
        {"busybox", w_busybox},
        {"chroot", w_chroot},
        {"chrt", w_chrt},
        {"command", w_command},
        {"compgen", w_compgen},
        {"complete", w_compgen},
        {"cp", w_copy},
        {"curl", h_curl},
        {"dash", w_shell},
        {"declare", w_declare},
        {"dig", h_dns},
        {"doas", w_doas},
        {"eatmydata", w_nohup},
        {"env", w_env},
        {"eval", w_eval},
        {"exec", w_exec},
        {"export", w_declare},
        {"fakeroot", w_fakeroot},
        {"faketime", w_faketime},
        {"fc", w_fc},
        {"find", w_find},
        {"flock", w_flock},
        {"gawk", w_awk},
        {"getopts", w_evaluates},
        {"gh", h_gh},
        {"git", h_git},
        {"gsed", w_sed},
        {"gtar", w_tar},
        {"hash", w_hash},
        {"host", h_dns},
        {"http", h_httpie},
        {"https", h_httpie},
        {"install", w_copy},
        {"ionice", w_ionice},
        {"ksh", w_shell},
        {"let", w_evaluates},
        {"link", w_copy},
        {"ln", w_copy},
        {"local", w_declare},
        {"mapfile", w_mapfile},
        {"mawk", w_awk},
        {"mksh", w_shell},
        {"mv", w_copy},
        {"nawk", w_awk},
        {"nice", w_nice},
        {"nohup", w_nohup},
        {"npx", w_npx},
        {"nslookup", h_dns},
        {"numactl", w_numactl},
        {"parallel", w_parallel},
        {"printf", w_evaluates},
        {"prlimit", w_prlimit},
        {"proxychains", w_proxychains},
        {"proxychains4", w_proxychains},
        {"rbash", w_shell},
        {"read", w_evaluates},
        {"readarray", w_mapfile},
        {"readonly", w_declare},
        {"rsync", h_rsync},
        {"runuser", w_runuser},
        {"scalar", h_scalar},
        {"scp", h_scp},
        {"script", w_script},
        {"sed", w_sed},
        {"set", w_set},
        {"setpriv", w_setpriv},
        {"setsid", w_plain},
        {"sftp", w_sftp},
        {"sg", w_sg},
        {"sh", w_shell},
        {"shopt", w_shopt},
        {"slogin", h_ssh},
        {"source", w_source},
        {"split", w_split},
        {"ssh", h_ssh},
        {"ssh-agent", w_ssh_agent},
        {"sshpass", w_sshpass},
        {"stdbuf", w_stdbuf},
        {"strace", w_strace},
        {"su", w_su},
        {"sudo", w_sudo},
        {"tar", w_tar},
        {"taskset", w_taskset},
        {"test", w_evaluates},
        {"time", w_time},
        {"timeout", w_timeout},
        {"torsocks", w_torsocks},
        {"trap", w_trap},
        {"typeset", w_declare},
        {"unbuffer", w_plain},
        {"unset", w_evaluates},
        {"unshare", w_unshare},
        {"uv", w_uv},
        {"uvx", w_uvx},
        {"wait", w_evaluates},
        {"watch", w_watch},
        {"wget", h_wget},
        {"xargs", w_xargs},
        {"xh", h_httpie},
        {"xhs", h_httpie},
        {"zsh", w_shell},
};

/* git's own programs by name or path (git-push, /usr/lib/git-core/git-fetch): git SUBCOMMAND */
static int w_git_dashed(struct cls_ctx *c, struct run *r)
{
	size_t bl;
	const char *b = word_base(&r->v[0], &bl);
	struct cls_word *nv = cls_alloc(c, (r->n + 1) * sizeof *nv, r->v[0].off);
	if (nv == NULL)
		return -1;
	nv[0] = r->v[0];
	nv[0].s = "git";
	nv[0].len = 3;
	nv[1] = r->v[0];
	nv[1].s = b + 4;
	nv[1].len = bl - 4;
	memcpy(nv + 2, r->v + 1, (r->n - 1) * sizeof *nv);
	r->v = nv;
	r->n++;
	return 1;
}

static int cmp_handler(const void *key, const void *elem)
{
	/* the first byte first: every command word is looked up here */
	const char *name = ((const struct handler *)elem)->name;
	int d = *(const unsigned char *)key - *(const unsigned char *)name;
	return d != 0 ? d : strcmp(key, name);
}

static int is_network_program(const char *b, size_t bl)
{
	static int (*const rules[])(struct cls_ctx *, struct run *) = {h_git, h_curl, h_wget,
	        h_httpie, h_gh, h_ssh, h_scp, h_rsync, h_dns, h_scalar, w_sftp};
	const struct handler *h =
	        bsearch(b, handlers, sizeof handlers / sizeof handlers[0], sizeof handlers[0],
	                cmp_handler);
	for (size_t i = 0; h != NULL && i < sizeof rules / sizeof rules[0]; i++)
		if (h->fn == rules[i])
			return 1;
	struct cls_cmd one = {NULL, 0, 0, NULL, NULL};
	struct cls_word w = {b, bl, 0, 0, NULL};
	one.argv = &w;
	one.argc = 1;
	return (bl > 4 && memcmp(b, "git-", 4) == 0) || cls_cmds_download(&one, NULL);
}

/* Whether glob pattern pat matches a name in the handler table. */
static int handler_glob(const char *pat)
{
	for (size_t i = 0; i < sizeof handlers / sizeof handlers[0]; i++)
		if (handlers[i].name[0] != '.' && fnmatch(pat, handlers[i].name, 0) == 0)
			return 1;
	return 0;
}

/* Whether a static redirection target with a slash names a network program's file or the
 * loader (`tee /tmp/c < /usr/bin/curl'): a copy can run under any name. */
int cls_value_names_program(const char *s, size_t len)
{
	const char *slash = len ? memrchr(s, '/', len) : NULL;
	const char *b = slash != NULL ? slash + 1 : s;
	size_t bl = len - (size_t)(b - s);
	return bl > 0 && (is_network_program(b, bl) || is_ldso(b, bl));
}

int cls_names_program_file(const struct cls_word *w)
{
	if ((w->flags & CLS_W_EXP) || memchr(w->s, '/', w->len) == NULL)
		return 0;
	size_t bl;
	const char *b = word_base(w, &bl);
	return bl > 0 && (is_network_program(b, bl) || is_ldso(b, bl));
}

/* Whether b (NUL-terminated) is a wrapper, a rule's program or an interpreter. */
static int is_handled(const char *b)
{
	return find_interp(b, strlen(b)) != NULL ||
	       bsearch(b, handlers, sizeof handlers / sizeof handlers[0], sizeof handlers[0],
	               cmp_handler) != NULL ||
	       find_more_wrapper(b, strlen(b)) != NULL;
}

static int alias_defined(const struct cls_ctx *c, const struct cls_word *w)
{
	if (c->alias_any)
		return 1;
	for (const struct cls_name *n = c->aliases; n != NULL; n = n->next)
		if (n->len == w->len && memcmp(n->s, w->s, w->len) == 0)
			return 1;
	return 0;
}

#define BRACE_MAX 64 /* words one command's brace expansions may make */

/* The sequence X..Y (or X..Y..STEP) of integers or single letters in s[0..len), as bash's
 * brace expansion makes it: 1 when it is one (its words appended to out), 0 when it is not
 * (bash leaves the braces as they are), -1 when it makes too many words or a form not
 * modelled (zero padding, a step). */
static int brace_seq(struct cls_ctx *c, const char *pre, size_t pl, const char *s, size_t len,
        const char *post, size_t ql, struct cls_word *out, size_t *n, const struct cls_word *w)
{
	const char *dots = NULL;
	for (size_t i = 0; i + 1 < len; i++)
		if (s[i] == '.' && s[i + 1] == '.') {
			dots = s + i;
			break;
		}
	if (dots == NULL)
		return 0;
	size_t al = (size_t)(dots - s), bl = len - al - 2;
	const char *b = dots + 2;
	if (memchr(b, '.', bl) != NULL)
		return -1; /* a step */
	long lo, hi;
	int letters = al == 1 && bl == 1 && isalpha((unsigned char)s[0]) &&
	              isalpha((unsigned char)b[0]);
	if (letters) {
		lo = (unsigned char)s[0];
		hi = (unsigned char)b[0];
	} else {
		char ab[24], bb[24];
		if (al == 0 || bl == 0 || al >= sizeof ab || bl >= sizeof bb)
			return 0;
		if (al > 10 || bl > 10)
			return -1; /* a range that long is over the bound anyway */
		memcpy(ab, s, al);
		ab[al] = '\0';
		memcpy(bb, b, bl);
		bb[bl] = '\0';
		char *e1, *e2;
		lo = strtol(ab, &e1, 10);
		hi = strtol(bb, &e2, 10);
		if (*e1 != '\0' || *e2 != '\0' || !isdigit((unsigned char)ab[al - 1]) ||
		        !isdigit((unsigned char)bb[bl - 1]))
			return 0;
		if ((ab[0] == '0' && al > 1) || (ab[0] == '-' && ab[1] == '0' && al > 2) ||
		        (bb[0] == '0' && bl > 1) || (bb[0] == '-' && bb[1] == '0' && bl > 2))
			return -1; /* zero padding */
	}
	long step = lo <= hi ? 1 : -1;
	if ((hi - lo) * step + 1 > BRACE_MAX)
		return -1;
	for (long x = lo;; x += step) {
		char item[24];
		int il = letters ? snprintf(item, sizeof item, "%c", (char)x) :
		                   snprintf(item, sizeof item, "%ld", x);
		if (*n >= BRACE_MAX)
			return -1;
		char *t = cls_alloc(c, pl + (size_t)il + ql + 1, w->off);
		if (t == NULL)
			return -1;
		memcpy(t, pre, pl);
		memcpy(t + pl, item, (size_t)il);
		memcpy(t + pl + (size_t)il, post, ql);
		t[pl + (size_t)il + ql] = '\0';
		out[(*n)++] = (struct cls_word){t, pl + (size_t)il + ql, w->flags & ~CLS_W_BRACE,
		        w->off, NULL};
		if (x == hi)
			break;
	}
	return 1;
}

/* bash's brace expansion of the text s (an unquoted word with no expansion), from index
 * `from' on: appends the words to out[*n].  -1 when it would make more than BRACE_MAX words or
 * takes a form not modelled. */
static int brace_expand(struct cls_ctx *c, const char *s, size_t len, size_t from,
        struct cls_word *out, size_t *n, const struct cls_word *w, int depth, unsigned *work)
{
	/* empty alternatives make no word, so count the work too: `{,}{,}{,}...' */
	if (depth > 16 || ++*work > 4 * BRACE_MAX)
		return -1;
	for (size_t i = from; i < len; i++) {
		if (s[i] != '{')
			continue;
		size_t j = i + 1, commas = 0;
		int d = 1;
		for (; j < len; j++) {
			if (s[j] == '{')
				d++;
			else if (s[j] == '}' && --d == 0)
				break;
			else if (s[j] == ',' && d == 1)
				commas++;
		}
		if (j >= len)
			return -1; /* unbalanced: not modelled */
		if (commas == 0) {
			/* {X..Y} or braces bash leaves as they are, which may hold others */
			struct cls_word tmp[BRACE_MAX];
			size_t tn = 0;
			int r = brace_seq(c, s, i, s + i + 1, j - i - 1, s + j + 1, len - j - 1,
			        tmp, &tn, w);
			if (r == -1)
				return -1;
			if (r == 0)
				continue;
			for (size_t k = 0; k < tn; k++)
				if (brace_expand(c, tmp[k].s, tmp[k].len, i, out, n, w, depth + 1,
				            work) == -1)
					return -1;
			return 0;
		}
		/* PRE{A,B,...}POST: each alternative in its place, then what follows expanded */
		size_t a = i + 1;
		d = 0;
		for (size_t k = i + 1; k <= j; k++) {
			if (s[k] == '{')
				d++;
			else if (s[k] == '}' && k < j)
				d--;
			if (k == j || (s[k] == ',' && d == 0)) {
				size_t al = k - a, tl = i + al + (len - j - 1);
				char *t = cls_alloc(c, tl + 1, w->off);
				if (t == NULL)
					return -1;
				memcpy(t, s, i);
				memcpy(t + i, s + a, al);
				memcpy(t + i + al, s + j + 1, len - j - 1);
				t[tl] = '\0';
				if (brace_expand(c, t, tl, i, out, n, w, depth + 1, work) == -1)
					return -1;
				a = k + 1;
			}
		}
		return 0;
	}
	if (len == 0)
		return 0; /* an empty word from brace expansion is removed */
	if (*n >= BRACE_MAX)
		return -1;
	out[(*n)++] = (struct cls_word){s, len, w->flags & ~CLS_W_BRACE, w->off, NULL};
	return 0;
}

/* An argument whose brace expansion is not known here: a word with quoted parts or
 * expansions, or any where brace expansion may be off (sh, set +B).  Refused where the
 * program's arguments are followed.  0 or -1. */
static int brace_unsure(struct cls_ctx *c, const struct run *r, const char *base, size_t bl)
{
	for (size_t i = 1; i < r->n; i++) {
		const struct cls_word *a = &r->v[i];
		int unsure = (a->flags & (CLS_W_QUOTED | CLS_W_EXP)) || c->sh_mode || c->brace_off;
		if ((a->flags & CLS_W_BRACE) && unsure && cls_brace_expands(a->s, a->len))
			return cls_refuse(c, a->off,
			        "a brace expansion with quoted parts or expansions, or where brace "
			        "expansion may be off (sh, set +B), in an argument of %.*s: "
			        "refused",
			        (int)(bl < 64 ? bl : 64), base);
	}
	return 0;
}

int cls_run_cmd(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags,
        const struct cls_doc *doc)
{
	/* bash expands braces in the arguments before the command runs (black-box round 7:
	 * `env -S {git,push}' runs git push) */
	for (size_t i = 1; i < n && !c->sh_mode && !c->brace_off; i++) {
		if ((v[i].flags & (CLS_W_BRACE | CLS_W_QUOTED | CLS_W_EXP)) != CLS_W_BRACE ||
		        !cls_brace_expands(v[i].s, v[i].len))
			continue;
		struct cls_word *nv = cls_alloc(c, (n + BRACE_MAX) * sizeof *nv, v[i].off);
		if (nv == NULL)
			return -1;
		size_t nn = 0, made = 0;
		for (size_t k = 0; k < n; k++) {
			if (k == 0 || (v[k].flags & (CLS_W_BRACE | CLS_W_QUOTED | CLS_W_EXP)) !=
			                      CLS_W_BRACE ||
			        !cls_brace_expands(v[k].s, v[k].len)) {
				nv[nn++] = v[k];
				continue;
			}
			struct cls_word tmp[BRACE_MAX];
			size_t tn = 0;
			unsigned work = 0;
			if (brace_expand(c, v[k].s, v[k].len, 0, tmp, &tn, &v[k], 0, &work) == -1 ||
			        made + tn > BRACE_MAX)
				return cls_refuse(c, v[k].off,
				        "a brace expansion this parser does not follow: refused");
			made += tn;
			for (size_t m = 0; m < tn; m++)
				nv[nn++] = tmp[m];
		}
		v = nv;
		n = nn;
		break;
	}
	struct run r = {v, n, flags, doc};
	int entered = 0, rc = 0;
	while (r.n > 0) {
		const struct cls_word *w = &r.v[0];
		if (w->flags & CLS_W_DL) {
			rc = refuse_program(c, w->off, 1, "the command word");
			break;
		}
		if (w->flags & (CLS_W_EXP | CLS_W_GLOB | CLS_W_BRACE)) {
			rc = cls_refuse(c, w->off, "command word is not static");
			break;
		}
		if (c->aliases_on && !(w->flags & CLS_W_QUOTED) && alias_defined(c, w)) {
			rc = cls_refuse(c, w->off,
			        "alias expansion is switched on and `%.64s' may be an "
			        "alias",
			        w->s);
			break;
		}
		const char *base = w->s;
		for (const char *p = w->s; p < w->s + w->len; p++)
			if (*p == '/')
				base = p + 1;
		size_t bl = (size_t)(w->s + w->len - base);
		cls_note_command(c, r.v, r.n, r.flags, r.doc, base, bl); /* files it runs, writes */
		if (cls_add_program(c, base, bl) == -1) {
			rc = -1;
			break;
		}
		const struct handler *h = bsearch(base, handlers,
		        sizeof handlers / sizeof handlers[0], sizeof handlers[0], cmp_handler);
		int (*fn)(struct cls_ctx *, struct run *) = h != NULL ? h->fn : NULL;
		if (fn == NULL && bl > 4 && memcmp(base, "git-", 4) == 0)
			fn = w_git_dashed;
		else if (fn == NULL && is_ldso(base, bl))
			fn = w_ldso;
		else if (fn == NULL)
			fn = find_more_wrapper(base, bl);
		const struct interp *in = fn == NULL ? find_interp(base, bl) : NULL;
		/* a brace expansion in a word with quoted parts or expansions makes words this
		 * parser cannot read (`eval {git\ push,}', `git ls-remote
		 * {--upload-pack=git\ push,} x', black-box round 7): refused where the program's
		 * arguments are followed */
		if ((fn != NULL || in != NULL) && brace_unsure(c, &r, base, bl) == -1) {
			rc = -1;
			break;
		}
		if (fn == NULL) {
			/* an interpreter whose program is not static is refused first (issue 12
			 * item 3); then package, cloud and raw network tools, interpreters
			 * (tools.c); any other program has no network action of its own */
			if (in != NULL && interp_stdin(c, &r, in) == -1)
				rc = -1;
			else if (in == NULL && copies_program(c, &r) == -1)
				rc = -1;
			else
				rc = cls_rule_tools(c, r.v, r.n, r.flags);
			break;
		}
		int k = fn(c, &r);
		if (k == -2) {
			rc = cls_refuse(c, w->off,
			        "`%.64s' runs a command that xargs' input supplies", w->s);
			break;
		}
		if (k <= 0) {
			rc = k;
			break;
		}
		if (cls_enter(c, w->off) == -1) {
			rc = -1;
			break;
		}
		entered++;
	}
	while (entered-- > 0)
		cls_leave(c);
	return rc;
}
