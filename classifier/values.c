/* The value model (issue 12): bash evaluates some values as code, and a value like
 * a[$(git push)] there runs git push.  The places are arithmetic ((( )), $(( )), let, for
 * ((;;)), [[ -eq ]] operands, subscripts, ${x:off:len}), names (${!x}, [[ -v ]], test -v,
 * unset, read/printf -v/getopts targets), ${x@P}, and every assignment after declare -i or -n.
 *
 * Each variable the line assigns gets a kind: a number, static text (the line's own, or the
 * environment's, which is out of scope), or run-time text (a command's output not proven
 * numeric, a file name, a line read).  A name bash evaluates must not hold run-time text; a
 * static one may name another variable, so it must not either while any variable holds
 * run-time text.  The kinds are resolved once the whole line is read: the model is
 * flow-insensitive (a variable's kind is the join of all its assignments), which can only
 * refuse more.  Run-time text written straight into such a place ($(( $(cat f) )),
 * [[ $(cat f) -eq 1 ]]) is refused where it is found. */
#include <stddef.h>
#include <string.h>

#include "classifier/internal.h"

static int is_name_start(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}

static int is_name_char(char ch)
{
	return is_name_start(ch) || (ch >= '0' && ch <= '9');
}

static int name_eq(const char *a, size_t al, const char *b)
{
	return strlen(b) == al && memcmp(a, b, al) == 0;
}

/* Index of the variable's slot (added when add is set), or -1: not there, or the table is
 * full (then vars_over is set and the line gets the coarse rule). */
static int var_find(struct cls_ctx *c, const char *name, size_t nl, int add)
{
	for (unsigned i = 0; i < c->nvars; i++)
		if (c->vars[i].nlen == nl && memcmp(c->vars[i].name, name, nl) == 0)
			return (int)i;
	if (!add)
		return -1;
	if (c->nvars == CLS_MAX_VARS || nl > 255 || nl == 0) {
		c->vars_over = 1;
		return -1;
	}
	/* a wrapper may hand a word whose text is on its stack: the name is copied */
	char *copy = cls_strdup(c, name, nl, 0);
	if (copy == NULL)
		return -1;
	struct cls_var *v = &c->vars[c->nvars];
	memset(v, 0, sizeof *v);
	v->name = copy;
	v->nlen = (unsigned char)nl;
	v->kind = CLS_VK_ENV;
	return (int)c->nvars++;
}

/* The commands whose output cls_val_numeric_cmd may trust: a function, an alias or a PATH
 * set on the line could make them print anything. */
static const char *const numcmds[] = {"wc", "grep", "nproc", "date", "seq", "stat", "git", "id",
        "getconf", "pgrep", "ls", "cat", "egrep", "fgrep", "head", "tail", "sort", "uniq", "cut",
        "tr", "find", NULL};

void cls_val_define(struct cls_ctx *c, const char *name, size_t nl, size_t off)
{
	for (size_t i = 0; numcmds[i] != NULL; i++)
		if (name_eq(name, nl, numcmds[i]) && !c->numcmd_shadowed) {
			c->numcmd_shadowed = 1;
			c->numcmd_off = off;
		}
}

static void note_set(struct cls_ctx *c, int i, const char *name, size_t nl)
{
	if (name_eq(name, nl, "PATH") && !c->numcmd_shadowed)
		c->numcmd_shadowed = 1; /* also makes wc & co. other programs */
	if (nl > 4 && memcmp(name, "GIT_", 4) == 0)
		c->git_env = 1; /* GIT_EXTERNAL_DIFF, GIT_CONFIG_*, ...: git runs a program */
	if (i >= 0)
		c->vars[i].set = 1;
}

static void count_assign(struct cls_ctx *c, int i)
{
	if (i >= 0 && c->vars[i].nassign < 255)
		c->vars[i].nassign++;
}

void cls_val_set(struct cls_ctx *c, const char *name, size_t nl, enum cls_vkind kind)
{
	int i = var_find(c, name, nl, 1);
	note_set(c, i, name, nl);
	count_assign(c, i);
	if (i >= 0 && c->vars[i].kind < kind)
		c->vars[i].kind = (unsigned char)kind;
}

/* Whether every byte of s[from..to) but the expansion marks is one a number's text holds:
 * digits, signs, blanks, and what brace expansion of numbers leaves ({1..9} before it). */
static int literal_numeric(const char *s, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++) {
		char ch = s[i];
		if (ch == CLS_EXP_MARK || (ch >= '0' && ch <= '9') || ch == '-' || ch == '+' ||
		        ch == ' ' || ch == '\t' || ch == '\n' || ch == '.' || ch == ',' ||
		        ch == '{' || ch == '}')
			continue;
		return 0;
	}
	return 1;
}

/* Whether the word holds run-time text its deps do not account for: a word a wrapper made
 * ({} under find -exec), or one read before deps were recorded. */
static int unexplained_text(const struct cls_word *w)
{
	if ((w->flags & CLS_W_TEXT) && w->deps == NULL)
		return 1;
	if (w->flags & CLS_W_RTEXT) {
		for (const struct cls_dep *d = w->deps; d != NULL; d = d->next)
			if (d->kind == CLS_DEP_TEXT)
				return 0;
		return 1;
	}
	return 0;
}

int cls_val_numeric_text(const char *s, size_t len)
{
	return literal_numeric(s, 0, len) && memchr(s, CLS_EXP_MARK, len) == NULL;
}

static void assign_value(struct cls_ctx *c, int i, const struct cls_word *w, size_t from,
        size_t to, int glob);

void cls_val_assign(struct cls_ctx *c, const char *name, size_t nl, const struct cls_word *w,
        size_t from, size_t to, int glob)
{
	int i = var_find(c, name, nl, 1);
	note_set(c, i, name, nl);
	count_assign(c, i);
	if (i >= 0)
		assign_value(c, i, w, from, to, glob);
}

static void assign_value(struct cls_ctx *c, int i, const struct cls_word *w, size_t from,
        size_t to, int glob)
{
	struct cls_var *v = &c->vars[i];
	if (v->kind == CLS_VK_TEXT)
		return;
	if ((glob && (w->flags & CLS_W_GLOB)) || unexplained_text(w)) {
		v->kind = CLS_VK_TEXT;
		return;
	}
	size_t nvar = 0, ncopy = 0;
	for (const struct cls_dep *d = w->deps; d != NULL; d = d->next) {
		if (d->at < from || d->at >= to)
			continue;
		if (d->kind == CLS_DEP_TEXT) {
			v->kind = CLS_VK_TEXT;
			return;
		}
		nvar++;
		ncopy += d->copy != 0;
	}
	int litnum = literal_numeric(w->s, from, to);
	if (nvar == 0) {
		enum cls_vkind k = litnum ? CLS_VK_NUM : CLS_VK_STATIC;
		if (v->kind < k)
			v->kind = (unsigned char)k;
		return;
	}
	if (c->nedges >= CLS_MAX_VEDGES / 2 && v->nlen == 1 && v->name[0] == '_') {
		v->kind = CLS_VK_TEXT; /* $_ may be any word: keep the room for variables */
		return;
	}
	if (c->nedges == CLS_MAX_VEDGES) {
		c->vars_over = 1;
		return;
	}
	struct cls_vedge *e = cls_alloc(c, sizeof *e, w->off);
	if (e == NULL)
		return;
	e->deps = w->deps;
	e->from = from;
	e->to = to;
	e->var = (unsigned char)i;
	e->single = to - from == 1 && nvar == 1 && ncopy == 1;
	e->litnum = (unsigned char)litnum;
	e->next = c->vedges;
	c->vedges = e;
	c->nedges++;
	if (v->kind < CLS_VK_NUM)
		v->kind = CLS_VK_NUM; /* assigned: no longer the environment's */
}

void cls_val_sink_joined(struct cls_ctx *c, size_t off)
{
	/* the line's text joined to a value (${x:-y}) may name any variable */
	cls_val_set(c, "-", 1, CLS_VK_STATIC);
	cls_val_sink(c, "-", 1, off);
}

void cls_val_sink(struct cls_ctx *c, const char *name, size_t nl, size_t off)
{
	c->sinks = 1;
	int i = var_find(c, name, nl, 1);
	if (i >= 0 && !c->vars[i].sunk) {
		c->vars[i].sunk = 1;
		c->vars[i].sink_off = off;
	}
}

/* Whether the name at s[i..e) is assigned by the arithmetic around it: NAME = (not ==),
 * NAME op=, NAME++, ++NAME. */
int cls_val_arith_assigned(const char *s, size_t len, size_t i, size_t e)
{
	size_t k = e;
	while (k < len && (s[k] == ' ' || s[k] == '\t'))
		k++;
	if (k + 1 < len && ((s[k] == '+' && s[k + 1] == '+') || (s[k] == '-' && s[k + 1] == '-')))
		return 1;
	if (k < len && s[k] == '=' && !(k + 1 < len && s[k + 1] == '='))
		return 1;
	if (k + 1 < len && strchr("+-*/%&^|", s[k]) != NULL && s[k + 1] == '=')
		return 1;
	if (k + 2 < len && (s[k] == '<' || s[k] == '>') && s[k + 1] == s[k] && s[k + 2] == '=')
		return 1;
	size_t b = i;
	while (b > 0 && (s[b - 1] == ' ' || s[b - 1] == '\t'))
		b--;
	return b >= 2 && ((s[b - 1] == '+' && s[b - 2] == '+') || (s[b - 1] == '-' && s[b - 2] == '-'));
}

void cls_val_sink_name_at(
        struct cls_ctx *c, const char *s, size_t len, size_t i, size_t e, size_t off)
{
	if (cls_val_arith_assigned(s, len, i, e))
		cls_val_set(c, s + i, e - i, CLS_VK_NUM);
	cls_val_sink(c, s + i, e - i, off);
}

void cls_val_sink_text(struct cls_ctx *c, const char *s, size_t len, size_t off)
{
	for (size_t i = 0; i < len; i++) {
		if (!is_name_start(s[i]) || (i > 0 && is_name_char(s[i - 1])))
			continue;
		size_t e = i + 1;
		while (e < len && is_name_char(s[e]))
			e++;
		cls_val_sink_name_at(c, s, len, i, e, off);
		i = e - 1;
	}
}

int cls_val_sink_word(struct cls_ctx *c, const struct cls_word *w, size_t from, size_t to,
        int arith)
{
	c->sinks = 1;
	if (unexplained_text(w))
		return cls_refuse(c, w->off,
		        "run-time text (a command's output, a file name) evaluated as code (it may "
		        "hold a[$(...)], which bash runs)");
	for (const struct cls_dep *d = w->deps; d != NULL; d = d->next) {
		if (d->at < from || d->at >= to)
			continue;
		if (d->kind == CLS_DEP_TEXT)
			return cls_refuse(c, w->off,
			        "a command's output evaluated as code (it may hold a[$(...)], which "
			        "bash runs)");
		cls_val_sink(c, d->name, d->nlen, w->off);
		if (!d->copy)
			cls_val_sink_joined(c, w->off);
	}
	/* the literal text between the expansions: every name in arithmetic, only the
	 * subscript's in a variable name */
	size_t i = from;
	if (!arith) {
		while (i < to && w->s[i] != '[')
			i++;
	}
	while (i < to) {
		size_t e = i;
		while (e < to && w->s[e] != CLS_EXP_MARK)
			e++;
		cls_val_sink_text(c, w->s + i, e - i, w->off);
		i = e + 1;
	}
	return 0;
}

/* ---- commands whose output is a number ---------------------------------------------------- */

static int word_static(const struct cls_word *w)
{
	return !(w->flags & (CLS_W_EXP | CLS_W_GLOB | CLS_W_BRACE));
}

static int all_static(const struct cls_cmd *cmd, size_t from)
{
	for (size_t i = from; i < cmd->argc; i++)
		if (!word_static(&cmd->argv[i]))
			return 0;
	return 1;
}

/* Whether every option word of v[1..n) is one of opts (each "-x" or "--long"), short ones
 * bundled too, and (operands) the count of other words is at most max. */
static int only_opts(const struct cls_cmd *cmd, const char *shorts, const char *const *longs,
        size_t max)
{
	size_t ops = 0;
	int dd = 0;
	for (size_t i = 1; i < cmd->argc; i++) {
		const struct cls_word *w = &cmd->argv[i];
		if (!dd && w->len >= 2 && w->s[0] == '-' && w->s[1] == '-') {
			if (w->len == 2) {
				dd = 1;
				continue;
			}
			size_t k = 0;
			while (longs[k] != NULL && !name_eq(w->s + 2, w->len - 2, longs[k]))
				k++;
			if (longs[k] == NULL)
				return 0;
		} else if (!dd && w->len >= 2 && w->s[0] == '-') {
			for (size_t j = 1; j < w->len; j++)
				if (strchr(shorts, w->s[j]) == NULL)
					return 0;
		} else {
			ops++;
		}
	}
	return ops <= max;
}

/* date +FORMAT with numeric fields only (and -u, -d/-r values) */
static int date_numeric(const struct cls_cmd *cmd)
{
	int fmt = 0;
	for (size_t i = 1; i < cmd->argc; i++) {
		const struct cls_word *w = &cmd->argv[i];
		if (cls_word_is(w, "-d") || cls_word_is(w, "-r")) {
			i++; /* its value, whatever it is: the output is the format's */
			continue;
		}
		if (!word_static(w))
			return 0;
		if (cls_word_is(w, "-u") || cls_word_is(w, "--utc") || cls_word_is(w, "--universal") ||
		        (w->len > 7 && memcmp(w->s, "--date=", 7) == 0) ||
		        (w->len > 12 && memcmp(w->s, "--reference=", 12) == 0))
			continue;
		if (w->s[0] != '+' || fmt)
			return 0;
		fmt = 1;
		for (size_t j = 1; j < w->len; j++) {
			if (w->s[j] >= '0' && w->s[j] <= '9')
				continue;
			if (w->s[j] != '%' || j + 1 >= w->len ||
			        strchr("sYmdHMSjuwNyCGgVUWIkl", w->s[j + 1]) == NULL)
				return 0;
			j++;
		}
	}
	return fmt;
}

/* stat -c/--format FORMAT with numeric specifiers only, and static operands */
static int stat_numeric(const struct cls_cmd *cmd)
{
	int fmt = 0;
	if (!all_static(cmd, 1))
		return 0;
	for (size_t i = 1; i < cmd->argc; i++) {
		const struct cls_word *w = &cmd->argv[i];
		const char *f = NULL;
		size_t fl = 0;
		if ((cls_word_is(w, "-c") || cls_word_is(w, "--format")) && i + 1 < cmd->argc) {
			f = cmd->argv[i + 1].s;
			fl = cmd->argv[i + 1].len;
			i++;
		} else if (w->len > 9 && memcmp(w->s, "--format=", 9) == 0) {
			f = w->s + 9;
			fl = w->len - 9;
		} else if (w->len > 2 && memcmp(w->s, "-c", 2) == 0) {
			f = w->s + 2;
			fl = w->len - 2;
		} else if (cls_word_is(w, "-L") || cls_word_is(w, "--dereference")) {
			continue;
		} else if (w->len > 0 && w->s[0] == '-') {
			return 0;
		} else {
			continue; /* a file */
		}
		fmt = 1;
		for (size_t j = 0; j < fl; j++) {
			if ((f[j] >= '0' && f[j] <= '9') || f[j] == ' ')
				continue;
			if (f[j] != '%' || j + 1 >= fl || strchr("sYXZWihugbBad", f[j + 1]) == NULL)
				return 0;
			j++;
		}
	}
	return fmt;
}

int cls_val_numeric_cmd(struct cls_ctx *c, const struct cls_cmd *cmd)
{
	static const char *const wc_l[] = {"lines", "bytes", "words", "chars", NULL};
	static const char *const grep_l[] = {"count", "ignore-case", "invert-match",
	        "extended-regexp", "fixed-strings", "word-regexp", "line-regexp", "no-messages",
	        "perl-regexp", NULL};
	static const char *const nproc_l[] = {"all", NULL};
	static const char *const seq_l[] = {"equal-width", NULL};
	static const char *const id_l[] = {"user", "group", "groups", "real", NULL};
	static const char *const pgrep_l[] = {"full", "exact", "newest", "oldest", "count",
	        "ignore-case", NULL};
	static const char *const none_l[] = {NULL};
	if (cmd->argc == 0 || (cmd->flags & CLS_C_OUTREDIR) || !word_static(&cmd->argv[0]))
		return 0;
	const struct cls_word *p = &cmd->argv[0];
	int ok = 0;
	if (cls_word_is(p, "wc"))
		ok = all_static(cmd, 1) && cmd->argc > 1 && only_opts(cmd, "lcwm", wc_l, 0);
	else if (cls_word_is(p, "nproc"))
		ok = all_static(cmd, 1) && only_opts(cmd, "", nproc_l, 0);
	else if (cls_word_is(p, "date"))
		ok = date_numeric(cmd);
	else if (cls_word_is(p, "seq"))
		ok = all_static(cmd, 1) && only_opts(cmd, "w", seq_l, 3);
	else if (cls_word_is(p, "stat"))
		ok = stat_numeric(cmd);
	else if (cls_word_is(p, "id"))
		ok = all_static(cmd, 1) && cmd->argc > 1 && only_opts(cmd, "ugGr", id_l, 1);
	else if (cls_word_is(p, "pgrep"))
		ok = all_static(cmd, 1) && only_opts(cmd, "fxnocivw", pgrep_l, 1);
	else if (cls_word_is(p, "getconf")) {
		static const char *const names[] = {"_NPROCESSORS_ONLN", "_NPROCESSORS_CONF",
		        "PAGESIZE", "PAGE_SIZE", "ARG_MAX", "LONG_BIT", "CLK_TCK", "OPEN_MAX",
		        "CHILD_MAX", NULL};
		ok = cmd->argc == 2 && word_static(&cmd->argv[1]);
		for (size_t i = 0; ok && names[i] != NULL; i++)
			if (cls_word_is(&cmd->argv[1], names[i]))
				break;
			else if (names[i + 1] == NULL)
				ok = 0;
	} else if (cls_word_is(p, "grep")) {
		/* grep -c PATTERN [FILE]: a count, with no file name before it */
		int count = 0;
		for (size_t i = 1; i < cmd->argc; i++) {
			const struct cls_word *w = &cmd->argv[i];
			if (cls_word_is(w, "--count") ||
			        (w->len >= 2 && w->s[0] == '-' && w->s[1] != '-' &&
			                memchr(w->s, 'c', w->len) != NULL))
				count = 1;
		}
		ok = count && all_static(cmd, 1) && only_opts(cmd, "civEFwxsP", grep_l, 2);
	} else if (cls_word_is(p, "git")) {
		/* git rev-list --count REVS */
		ok = cmd->argc >= 3 && all_static(cmd, 1) && cls_word_is(&cmd->argv[1], "rev-list");
		int count = 0;
		for (size_t i = 2; ok && i < cmd->argc; i++) {
			const struct cls_word *w = &cmd->argv[i];
			if (cls_word_is(w, "--count"))
				count = 1;
			else if (w->len > 0 && w->s[0] == '-' && !cls_word_is(w, "--all") &&
			         !cls_word_is(w, "--no-merges") && !cls_word_is(w, "--first-parent") &&
			         !cls_word_is(w, "--"))
				ok = 0;
		}
		ok = ok && count;
	}
	(void)none_l;
	if (ok && !c->numcmd_used) {
		c->numcmd_used = 1;
		c->numcmd_off = p->off;
	}
	return ok;
}

/* Whether a word of cmd from index `from' on is one of words (exact), or starts with one
 * of prefixes. */
static int has_word(const struct cls_cmd *cmd, size_t from, const char *const *words,
        const char *const *prefixes)
{
	for (size_t i = from; i < cmd->argc; i++) {
		const struct cls_word *w = &cmd->argv[i];
		for (size_t k = 0; words != NULL && words[k] != NULL; k++)
			if (cls_word_is(w, words[k]))
				return 1;
		for (size_t k = 0; prefixes != NULL && prefixes[k] != NULL; k++)
			if (w->len >= strlen(prefixes[k]) &&
			        memcmp(w->s, prefixes[k], strlen(prefixes[k])) == 0)
				return 1;
	}
	return 0;
}

/* Whether a bundle of short options (-xyz, not --long) among cmd's words holds letter ch. */
static int has_short(const struct cls_cmd *cmd, char ch)
{
	for (size_t i = 1; i < cmd->argc; i++) {
		const struct cls_word *w = &cmd->argv[i];
		if (cls_word_is(w, "--"))
			return 0;
		if (w->len >= 2 && w->s[0] == '-' && w->s[1] != '-' && memchr(w->s, ch, w->len))
			return 1;
	}
	return 0;
}

/* The earlier elements of a pipeline into a numeric command ($(git diff --name-only | wc -l)):
 * what they print goes into the pipe, and wc prints a number.  What could reach the
 * substitution's output instead is a write to a path the line gives (/proc/$PPID/fd/1: sort
 * -o, find -fprint, uniq's second operand, git --output) or another program run (find -exec,
 * git's external diff), so only a short list of commands, with static words, no assignment
 * before them and no redirection but input from a file, is taken.  A function, an alias or
 * PATH may stand for them (numcmds); a GIT_ variable may make git run a program (checked at
 * the end of the line).  What git's configuration runs (diff.external, textconv) is a file
 * outside the line. */
static int pipe_safe(const struct cls_cmd *cmd, int *git)
{
	if (cmd->argc == 0 || (cmd->flags & (CLS_C_OUTREDIR | CLS_C_STDINX | CLS_C_ASSIGN)) ||
	        cmd->doc != NULL || !all_static(cmd, 0))
		return 0;
	const struct cls_word *p = &cmd->argv[0];
	int ok = 0;
	if (cls_word_is(p, "ls") || cls_word_is(p, "cat") || cls_word_is(p, "grep") ||
	        cls_word_is(p, "egrep") || cls_word_is(p, "fgrep") || cls_word_is(p, "head") ||
	        cls_word_is(p, "cut") || cls_word_is(p, "tr")) {
		ok = 1;
	} else if (cls_word_is(p, "tail")) {
		static const char *const follow[] = {"--follow", "--retry", NULL};
		static const char *const followp[] = {"--follow=", NULL};
		ok = !has_short(cmd, 'f') && !has_short(cmd, 'F') && !has_word(cmd, 1, follow, followp);
	} else if (cls_word_is(p, "sort")) {
		static const char *const outp[] = {"--o", "--c", NULL}; /* --output, --compress-... */
		ok = !has_short(cmd, 'o') && !has_word(cmd, 1, NULL, outp);
	} else if (cls_word_is(p, "uniq")) {
		/* a second operand is the output file; an option's value counts as one */
		static const char *const none[] = {NULL};
		ok = only_opts(cmd, "cdiuDzfsw0123456789", none, 1);
	} else if (cls_word_is(p, "find")) {
		static const char *const acts[] = {"-exec", "-execdir", "-ok", "-okdir", "-fprint",
		        "-fprint0", "-fprintf", "-fls", "-delete", NULL};
		ok = !has_word(cmd, 1, acts, NULL);
	} else if (cls_word_is(p, "git") && cmd->argc >= 2) {
		const struct cls_word *v = &cmd->argv[1];
		static const char *const bad[] = {"--ext-diff", "--textconv", "-o", NULL};
		static const char *const badp[] = {"--output", "--open-files-in-pager", "-O", NULL};
		ok = !has_word(cmd, 2, bad, badp);
		if (cls_word_is(v, "branch") || cls_word_is(v, "tag")) {
			/* listing only: an operand is a pattern after --list, options from a list */
			static const char *const list[] = {"--list", "-l", NULL};
			static const char *const opts[] = {"--list", "-l", "-r", "--remotes", "-v",
			        "-vv", "--verbose", "--all", "--merged", "--no-merged", "--contains",
			        "--no-contains", "--points-at", "--no-color", "--", NULL};
			int listing = has_word(cmd, 2, list, NULL) || cmd->argc == 2;
			for (size_t i = 2; ok && i < cmd->argc; i++) {
				const struct cls_word *w = &cmd->argv[i];
				if (w->len > 0 && w->s[0] == '-') {
					size_t k = 0;
					while (opts[k] != NULL && !cls_word_is(w, opts[k]))
						k++;
					ok = opts[k] != NULL || (w->len > 7 && memcmp(w->s, "--sort=", 7) == 0) ||
					     (w->len > 9 && memcmp(w->s, "--format=", 9) == 0) ||
					     (cls_word_is(v, "branch") && cls_word_is(w, "-a"));
				} else {
					ok = listing;
				}
			}
		} else if (!cls_word_is(v, "diff") && !cls_word_is(v, "log") &&
		           !cls_word_is(v, "ls-files") && !cls_word_is(v, "status") &&
		           !cls_word_is(v, "rev-list")) {
			ok = 0;
		}
		if (ok)
			*git = 1;
	}
	return ok;
}

int cls_val_numeric_pipe(struct cls_ctx *c, const struct cls_cmd *first, const struct cls_cmd *last)
{
	int git = 0;
	for (const struct cls_cmd *e = first; e != last; e = e->next)
		if (e == NULL || !pipe_safe(e, &git))
			return 0;
	if (!cls_val_numeric_cmd(c, last))
		return 0;
	if (git)
		c->numgit_used = 1;
	return 1;
}

/* ---- for loops over file names -------------------------------------------------------------- */

void cls_val_loop_begin(struct cls_ctx *c, const char *name, size_t nl)
{
	int i = var_find(c, name, nl, 1);
	if (i < 0)
		return;
	struct cls_var *v = &c->vars[i];
	if (v->nloops < 255)
		v->nloops++;
	if (v->nloops == 1)
		v->loop_safe = v->loop_dot = 1;
}

/* Whether every name word w expands to holds a `.': one after the last character that ends a
 * pattern (* ? ] ), or anywhere in a word with none. */
static int dotted_word(const struct cls_word *w)
{
	if (w->deps != NULL || (w->flags & (CLS_W_EXP | CLS_W_BRACE)))
		return 0;
	size_t k = w->len;
	while (k > 0 && strchr("*?])", w->s[k - 1]) == NULL)
		k--;
	return memchr(w->s + k, '.', w->len - k) != NULL;
}

/* Whether word w names a file under a static prefix: static text before any glob character,
 * not beginning with `-' (an option) nor /dev/ or /proc/ (a descriptor). */
static int file_word(const struct cls_word *w)
{
	if (w->deps != NULL || (w->flags & (CLS_W_EXP | CLS_W_BRACE)) || w->len == 0 ||
	        w->s[0] == '-' || (w->len >= 5 && memcmp(w->s, "/dev/", 5) == 0) ||
	        (w->len >= 6 && memcmp(w->s, "/proc/", 6) == 0))
		return 0;
	size_t k = 0;
	while (k < w->len && strchr("*?[", w->s[k]) == NULL)
		k++;
	return k > 0;
}

void cls_val_loop_word(struct cls_ctx *c, const char *name, size_t nl, const struct cls_word *w)
{
	int i = var_find(c, name, nl, 1);
	note_set(c, i, name, nl);
	if (i < 0)
		return;
	if (!file_word(w))
		c->vars[i].loop_safe = 0;
	if (!dotted_word(w))
		c->vars[i].loop_dot = 0;
	assign_value(c, i, w, 0, w->len, 1);
}

void cls_val_loop_end(struct cls_ctx *c, const char *name, size_t nl, size_t lo, size_t hi)
{
	int i = var_find(c, name, nl, 0);
	if (i >= 0 && c->vars[i].nloops == 1) {
		c->vars[i].body_lo = lo;
		c->vars[i].body_hi = hi;
	}
}

void cls_val_touch(struct cls_ctx *c, const char *name, size_t nl)
{
	int i = var_find(c, name, nl, 1);
	if (i >= 0)
		c->vars[i].touched = 1;
}

void cls_val_follow_static(struct cls_ctx *c, const struct cls_word *w)
{
	const char *eq = memchr(w->s, '=', w->len);
	if (eq == NULL || w->deps != NULL || (w->flags & (CLS_W_EXP | CLS_W_GLOB | CLS_W_BRACE)))
		return;
	size_t nl = (size_t)(eq - w->s);
	for (size_t k = 0; k < nl; k++)
		if (!is_name_char(w->s[k]))
			return; /* a[i]=, x+= */
	int i = var_find(c, w->s, nl, 1);
	if (i < 0)
		return;
	struct cls_var *v = &c->vars[i];
	if (v->ftext != NULL)
		v->fmulti = 1;
	v->ftext = eq + 1;
	v->flen = w->len - nl - 1;
	v->foff = w->off;
}

/* Whether s[0..len) is a plain file name: not empty, not an option, not a descriptor, nothing
 * word splitting or a glob would change. */
static int plain_file(const char *s, size_t len)
{
	if (len == 0 || s[0] == '-' || (len >= 5 && memcmp(s, "/dev/", 5) == 0) ||
	        (len >= 6 && memcmp(s, "/proc/", 6) == 0))
		return 0;
	for (size_t k = 0; k < len; k++)
		if (!is_name_char(s[k]) && strchr("./-+@%:,=", s[k]) == NULL)
			return 0;
	return 1;
}

int cls_val_file_operand(struct cls_ctx *c, const struct cls_word *w)
{
	const struct cls_dep *d = w->deps;
	if (w->len != 1 || w->s[0] != CLS_EXP_MARK || d == NULL || d->next != NULL ||
	        d->kind != CLS_DEP_VAR || d->copy != 2 || c->scripts > 0)
		return 0;
	int i = var_find(c, d->name, d->nlen, 0);
	if (i < 0)
		return 0;
	struct cls_var *v = &c->vars[i];
	if (v->ftext != NULL && !v->fmulti && v->nassign == 1 && !v->nloops && !v->touched &&
	        w->off > v->foff && plain_file(v->ftext, v->flen)) {
		v->relied |= 1;
		c->var_operand = 1;
		c->var_operand_off = w->off;
		return 1;
	}
	if (v->nloops != 1 || !v->loop_safe || v->nassign || v->touched || w->off < v->body_lo ||
	        w->off >= v->body_hi)
		return 0;
	v->relied |= 1;
	c->var_operand = 1;
	c->var_operand_off = w->off;
	return 1;
}

int cls_val_dotted_operand(struct cls_ctx *c, const struct cls_word *w)
{
	const struct cls_dep *d = w->deps;
	/* quoted: a name split in words could give bash `-ic' and a command; the whole value:
	 * ${f%.sh} drops the `.'.  What the line writes does not matter: -n runs nothing. */
	if (w->len != 1 || w->s[0] != CLS_EXP_MARK || d == NULL || d->next != NULL ||
	        d->kind != CLS_DEP_VAR || d->copy != 2 || c->scripts > 0 || !(w->flags & CLS_W_QUOTED))
		return 0;
	int i = var_find(c, d->name, d->nlen, 0);
	if (i < 0)
		return 0;
	struct cls_var *v = &c->vars[i];
	if (v->nloops != 1 || !v->loop_dot || v->nassign || v->touched || w->off < v->body_lo ||
	        w->off >= v->body_hi)
		return 0;
	v->relied |= 2;
	return 1;
}

/* ---- the check ---------------------------------------------------------------------------- */

/* Variables bash keeps as numbers (unless the line assigns them). */
static int special_numeric(const struct cls_var *v)
{
	static const char *const nums[] = {"RANDOM", "SECONDS", "LINENO", "EPOCHSECONDS",
	        "BASHPID", "PPID", "UID", "EUID", "OPTIND", NULL};
	for (size_t i = 0; nums[i] != NULL; i++)
		if (name_eq(v->name, v->nlen, nums[i]))
			return 1;
	return 0;
}

/* Variables bash fills with text the line may choose (black-box round 5): the line's own text
 * (BASH_EXECUTION_STRING, BASH_COMMAND), aliases and arguments (BASH_ALIASES, BASH_ARGV), the
 * folder cd entered (PWD, OLDPWD, DIRSTACK), and values that are names (HOSTTYPE is x86_64,
 * which the line may assign): run-time text wherever bash evaluates them. */
static int special_text(const char *name, size_t nl)
{
	static const char *const texts[] = {"BASH_EXECUTION_STRING", "BASH_COMMAND",
	        "BASH_ALIASES", "BASH_CMDS", "BASH_ARGV", "BASH_SOURCE", "FUNCNAME", "PWD", "OLDPWD",
	        "DIRSTACK", "HOSTTYPE", "OSTYPE", "MACHTYPE", "HOSTNAME", "BASH_VERSION", "HOME",
	        "USER", "LOGNAME", "SHELL", "TERM", "LANG", "PATH", "IFS", NULL};
	for (size_t i = 0; texts[i] != NULL; i++)
		if (name_eq(name, nl, texts[i]))
			return 1;
	return 0;
}

static enum cls_vkind dep_kind(struct cls_ctx *c, const unsigned char *kinds, const struct cls_dep *d,
        int *set)
{
	int i = var_find(c, d->name, d->nlen, 0);
	*set = i >= 0 && c->vars[i].set;
	if (i < 0) {
		if (name_eq(d->name, d->nlen, "!k"))
			return c->assoc ? CLS_VK_TEXT : CLS_VK_NUM;
		if (special_text(d->name, d->nlen))
			return CLS_VK_TEXT;
		return CLS_VK_STATIC; /* the environment's */
	}
	return kinds[i] == CLS_VK_ENV ? CLS_VK_STATIC : (enum cls_vkind)kinds[i];
}

static enum cls_vkind edge_kind(struct cls_ctx *c, const unsigned char *kinds,
        const struct cls_vedge *e)
{
	int allnum = e->litnum, text = 0, line = 0;
	for (const struct cls_dep *d = e->deps; d != NULL; d = d->next) {
		if (d->at < e->from || d->at >= e->to || d->kind != CLS_DEP_VAR)
			continue;
		int set;
		enum cls_vkind k = dep_kind(c, kinds, d, &set);
		if (e->single)
			return k;
		if (!d->copy || k != CLS_VK_NUM)
			allnum = 0;
		if (k == CLS_VK_TEXT)
			text = 1;
		/* the line's own static texts joined may spell what none holds: x='a[$' y='(git
		 * push)]' give "$x$y" */
		if (set && k != CLS_VK_NUM)
			line = 1;
	}
	return allnum ? CLS_VK_NUM : (text || line) ? CLS_VK_TEXT : CLS_VK_STATIC;
}

int cls_val_check(struct cls_ctx *c)
{
	for (const struct cls_name *a = c->aliases; a != NULL; a = a->next)
		cls_val_define(c, a->s, a->len, 0);
	if (c->alias_any)
		c->numcmd_shadowed = 1;
	if (c->numcmd_used && c->numcmd_shadowed)
		return cls_refuse(c, c->numcmd_off,
		        "a command's output is taken as a number, but the line sets PATH or "
		        "defines a function or alias that may stand for that command");
	if (c->numgit_used && (c->git_env || c->dyn_target))
		return cls_refuse(c, c->numcmd_off,
		        "git feeds a pipeline whose output is taken as a number, but the line sets a "
		        "GIT_ variable (git may run a program that writes elsewhere)");
	for (unsigned i = 0; i < c->nvars; i++) {
		const struct cls_var *v = &c->vars[i];
		int again = v->ftext != NULL ? v->fmulti || v->nassign != 1 || v->nloops ||
		                                       var_find(c, "IFS", 3, 0) >= 0 :
		                               v->nloops != 1 || v->nassign ||
		                                       ((v->relied & 1) && !v->loop_safe) ||
		                                       ((v->relied & 2) && !v->loop_dot);
		if (v->relied && (again || v->touched || c->sink_all || c->dyn_target || c->vars_over))
			return cls_refuse(c, v->body_lo,
			        "a program's operand was taken as a file name from a variable (a for loop's, a "
			        "static statement's), but "
			        "the line also sets, unsets or renames the variable");
	}
	if (!c->sinks)
		return 0;
	if (c->vars_over)
		return cls_refuse(c, c->dynamic_off,
		        "too many variables to follow, and a construct that evaluates a "
		        "variable's value as code");
	unsigned char kinds[CLS_MAX_VARS];
	for (unsigned i = 0; i < c->nvars; i++) {
		const struct cls_var *v = &c->vars[i];
		kinds[i] = v->kind;
		if (!v->set && special_numeric(v))
			kinds[i] = CLS_VK_NUM;
		if (!v->set && name_eq(v->name, v->nlen, "!k"))
			kinds[i] = c->assoc ? CLS_VK_TEXT : CLS_VK_NUM;
		if (special_text(v->name, v->nlen))
			kinds[i] = CLS_VK_TEXT; /* bash sets them too (cd, alias, a call) */
	}
	/* kinds only grow: at most three steps per variable */
	for (unsigned round = 0; round <= 3 * c->nvars + 1; round++) {
		int changed = 0;
		for (const struct cls_vedge *e = c->vedges; e != NULL; e = e->next) {
			enum cls_vkind k = edge_kind(c, kinds, e);
			if (k > kinds[e->var]) {
				kinds[e->var] = (unsigned char)k;
				changed = 1;
			}
		}
		if (!changed)
			break;
	}
	const struct cls_var *text = NULL;
	for (unsigned i = 0; i < c->nvars && text == NULL; i++)
		if (kinds[i] == CLS_VK_TEXT)
			text = &c->vars[i];
	for (unsigned i = 0; i < c->nvars; i++) {
		const struct cls_var *v = &c->vars[i];
		if (!v->sunk && !(c->sink_all && v->set))
			continue;
		int n = v->nlen > 40 ? 40 : v->nlen;
		if (kinds[i] == CLS_VK_TEXT)
			return cls_refuse(c, v->sink_off,
			        "%.*s holds run-time text (a command's output, a file name, a line "
			        "read) and bash evaluates it as code (it may hold a[$(...)])",
			        n, v->name);
		/* the environment's text is out of scope, unless the line may have assigned
		 * the variable under a name it built (read "$n", declare "$n=...") */
		if (kinds[i] == CLS_VK_ENV && !v->set && !c->dyn_target)
			continue;
		if (kinds[i] != CLS_VK_NUM && text != NULL)
			return cls_refuse(c, v->sink_off,
			        "bash evaluates %.*s as code, and its text may name %.*s, which holds "
			        "run-time text (a command's output, a file name, a line read)",
			        n, v->name, text->nlen > 40 ? 40 : (int)text->nlen, text->name);
	}
	return 0;
}

/* ---- builtins that take names or evaluate ------------------------------------------------ */

/* Name word w (read a, printf -v a[i], unset "$x") is assigned a value of kind (CLS_VK_ENV:
 * none): its subscript and any expansion in it are evaluated.  0 or -1. */
static int name_target(struct cls_ctx *c, const struct cls_word *w, const char *s, size_t len,
        enum cls_vkind kind)
{
	if (kind != CLS_VK_ENV && memchr(s, CLS_EXP_MARK, len) != NULL)
		c->dyn_target = 1; /* read "$n": any variable */
	if (cls_val_sink_word(c, w, (size_t)(s - w->s), (size_t)(s - w->s) + len, 0) == -1)
		return -1;
	size_t nl = 0;
	while (nl < len && is_name_char(s[nl]))
		nl++;
	if (kind != CLS_VK_ENV && nl > 0 && (nl == len || s[nl] == '['))
		cls_val_set(c, s, nl, kind);
	return 0;
}

/* Options of read, mapfile and getopts-like builtins: returns the index of the first operand;
 * *arr gets the word and text of -a NAME (read) when there is one. */
static size_t skip_opts(const struct cls_word *v, size_t n, const char *valued, char arropt,
        const struct cls_word **arr, const char **as, size_t *al)
{
	size_t i = 1;
	while (i < n) {
		const struct cls_word *w = &v[i];
		if (w->len < 2 || w->s[0] != '-' || (w->flags & CLS_W_EXP))
			break;
		i++;
		if (cls_word_is(w, "--"))
			break;
		for (size_t j = 1; j < w->len; j++) {
			if (w->s[j] == arropt || strchr(valued, w->s[j]) != NULL) {
				const struct cls_word *vw = w;
				const char *vs = w->s + j + 1;
				size_t vl = w->len - j - 1;
				if (vl == 0 && i < n) {
					vw = &v[i++];
					vs = vw->s;
					vl = vw->len;
				}
				if (w->s[j] == arropt) {
					*arr = vw;
					*as = vs;
					*al = vl;
				}
				break;
			}
		}
	}
	return i;
}

int cls_val_builtin(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags,
        const struct cls_doc *doc)
{
	const char *b = v[0].s;
	size_t bl = v[0].len;
	const char *slash = memrchr(b, '/', bl);
	if (slash != NULL) {
		bl -= (size_t)(slash + 1 - b);
		b = slash + 1;
	}
	if (name_eq(b, bl, "let")) {
		for (size_t i = 1; i < n; i++)
			if (cls_val_sink_word(c, &v[i], 0, v[i].len, 1) == -1)
				return -1;
		/* the names let assigns become numbers: cls_val_sink_text saw them */
		return 0;
	}
	if (name_eq(b, bl, "test") || name_eq(b, bl, "[")) {
		for (size_t i = 1; i + 1 < n; i++)
			if (cls_word_is(&v[i], "-v") &&
			        name_target(c, &v[i + 1], v[i + 1].s, v[i + 1].len, CLS_VK_ENV) == -1)
				return -1;
		return 0;
	}
	if (name_eq(b, bl, "unset")) {
		for (size_t i = 1; i < n; i++) {
			if (v[i].len > 0 && v[i].s[0] == '-' && !(v[i].flags & CLS_W_EXP))
				continue;
			if (name_target(c, &v[i], v[i].s, v[i].len, CLS_VK_ENV) == -1)
				return -1;
			size_t nl = 0;
			while (nl < v[i].len && is_name_char(v[i].s[nl]))
				nl++;
			cls_val_touch(c, v[i].s, nl);
		}
		return 0;
	}
	if (name_eq(b, bl, "read")) {
		/* the fields of a static here-string or here-document are the line's text, unless
		 * a backslash is in it (read without -r removes it: $\( becomes $() */
		enum cls_vkind k = CLS_VK_TEXT;
		if (doc != NULL && doc->ready && !doc->nonstatic && !(flags & CLS_C_PIPED) &&
		        memchr(doc->s, '\\', doc->len) == NULL)
			k = literal_numeric(doc->s, 0, doc->len) ? CLS_VK_NUM : CLS_VK_STATIC;
		const struct cls_word *arr = NULL;
		const char *as = NULL;
		size_t al = 0;
		size_t i = skip_opts(v, n, "dnNptui", 'a', &arr, &as, &al);
		if (arr != NULL && name_target(c, arr, as, al, k) == -1)
			return -1;
		if (i >= n && arr == NULL)
			cls_val_set(c, "REPLY", 5, k);
		for (; i < n; i++)
			if (name_target(c, &v[i], v[i].s, v[i].len, k) == -1)
				return -1;
		return 0;
	}
	if (name_eq(b, bl, "mapfile") || name_eq(b, bl, "readarray")) {
		const struct cls_word *arr = NULL;
		const char *as = NULL;
		size_t al = 0;
		size_t i = skip_opts(v, n, "dnOsucC", 0, &arr, &as, &al); /* -t takes no value */
		if (i >= n)
			cls_val_set(c, "MAPFILE", 7, CLS_VK_TEXT);
		for (; i < n; i++)
			if (name_target(c, &v[i], v[i].s, v[i].len, CLS_VK_TEXT) == -1)
				return -1;
		return 0;
	}
	if (name_eq(b, bl, "getopts")) {
		cls_val_set(c, "OPTARG", 6, CLS_VK_TEXT);
		if (n >= 3 && name_target(c, &v[2], v[2].s, v[2].len, CLS_VK_TEXT) == -1)
			return -1;
		/* arguments given to getopts are its positional parameters */
		return 0;
	}
	if (name_eq(b, bl, "printf") || name_eq(b, bl, "wait")) {
		char opt = b[0] == 'p' ? 'v' : 'p';
		enum cls_vkind k = opt == 'v' ? CLS_VK_TEXT : CLS_VK_NUM;
		for (size_t i = 1; i < n; i++) {
			const struct cls_word *w = &v[i];
			if (w->len < 2 || w->s[0] != '-' || (w->flags & CLS_W_EXP) ||
			        cls_word_is(w, "--"))
				break;
			const char *o = memchr(w->s, opt, w->len);
			if (o == NULL)
				continue;
			if (o + 1 < w->s + w->len) {
				if (name_target(c, w, o + 1, (size_t)(w->s + w->len - o - 1), k) == -1)
					return -1;
			} else if (i + 1 < n &&
			           name_target(c, &v[i + 1], v[i + 1].s, v[i + 1].len, k) == -1) {
				return -1;
			}
			break;
		}
		return 0;
	}
	if (name_eq(b, bl, "declare") || name_eq(b, bl, "typeset") || name_eq(b, bl, "local") ||
	        name_eq(b, bl, "export") || name_eq(b, bl, "readonly")) {
		/* -i makes every assignment arithmetic, -n a name; -A keys text */
		for (size_t i = 1; i < n; i++) {
			const struct cls_word *w = &v[i];
			if (w->len > 0 && w->s[0] == CLS_EXP_MARK)
				c->sink_all = c->assoc = 1;
			const char *eq = memchr(w->s, '=', w->len);
			if (memchr(w->s, CLS_EXP_MARK, eq ? (size_t)(eq - w->s) : w->len) != NULL &&
			        w->s[0] != '-' && w->s[0] != '+')
				c->dyn_target = 1; /* declare "$n=..." */
			if (eq == NULL && w->len > 0 && w->s[0] != '-' && w->s[0] != '+') {
				size_t nl = 0;
				while (nl < w->len && is_name_char(w->s[nl]))
					nl++;
				cls_val_touch(c, w->s, nl); /* local x: empty in a function */
			}
			if (w->len < 2 || (w->s[0] != '-' && w->s[0] != '+'))
				continue;
			if (memchr(w->s, 'i', w->len) || memchr(w->s, 'n', w->len) ||
			        memchr(w->s, CLS_EXP_MARK, w->len))
				c->sink_all = 1;
			if (memchr(w->s, 'A', w->len) || memchr(w->s, CLS_EXP_MARK, w->len))
				c->assoc = 1;
		}
		if (c->sink_all) {
			c->sinks = 1;
			c->numcmd_shadowed = 1; /* a nameref may stand for PATH */
		}
		return 0;
	}
	if (name_eq(b, bl, "set")) {
		/* set -- ARGS: the positional parameters */
		size_t i = 1;
		while (i < n && v[i].len > 0 && (v[i].s[0] == '-' || v[i].s[0] == '+') &&
		        !(v[i].flags & CLS_W_EXP)) {
			if (cls_word_is(&v[i], "--") || cls_word_is(&v[i], "-")) {
				i++;
				break;
			}
			if (v[i].s[v[i].len - 1] == 'o')
				i++; /* -o NAME */
			i++;
		}
		for (; i < n; i++)
			cls_val_assign(c, "@", 1, &v[i], 0, v[i].len, 1);
		return 0;
	}
	return 0;
}

void cls_val_args(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	for (size_t i = 0; i < n; i++)
		cls_val_assign(c, "@", 1, &v[i], 0, v[i].len, 1);
	if (flags & CLS_C_XARGS)
		cls_val_set(c, "@", 1, CLS_VK_TEXT); /* xargs, parallel: words from input */
}
