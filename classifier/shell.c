/* The shell front end: a lexer with explicit quoting states and a recursive-descent parser for
 * the bash grammar, enough to find every simple command a line would run.  Substitutions
 * ($(...), `...`, <(...), >(...)) are parsed recursively, in place, as whole programs; here-doc
 * bodies are read at the newline that follows their operator, as bash does.
 *
 * The parser does not evaluate anything.  It is strict where bash is lenient only in ways that
 * refuse a line (fail closed), never the other way round. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "classifier/classifier.h"
#include "classifier/internal.h"

enum tok_kind {
	T_EOF,      /* end of the source */
	T_WORD,     /* a word (reserved words are words; the parser tells them apart) */
	T_NL,       /* newline */
	T_SEMI,     /* ; */
	T_AMP,      /* & */
	T_AND_IF,   /* && */
	T_OR_IF,    /* || */
	T_PIPE,     /* | */
	T_PIPE_AMP, /* |& */
	T_LPAREN,   /* ( */
	T_RPAREN,   /* ) */
	T_DSEMI,    /* ;; and its variants ;& ;;& */
	T_REDIR,    /* a redirection operator, with its fd */
};

enum redir_op {
	R_IN,      /* < */
	R_OUT,     /* > >> >| &> &>> >& */
	R_DUPIN,   /* <& */
	R_RW,      /* <> */
	R_HEREDOC, /* << and <<- */
	R_HERESTR, /* <<< */
};

struct token {
	enum tok_kind kind;
	size_t off;          /* offset in the source */
	struct cls_word w;   /* T_WORD */
	enum redir_op op;    /* T_REDIR */
	int fd;              /* T_REDIR: explicit fd number, -1 when none */
	struct cls_doc *doc; /* T_WORD following <<: the here-doc it delimits */
};

struct heredoc {
	struct heredoc *next; /* pending here-docs in operator order */
	struct cls_doc *doc;  /* filled when the body is read */
	const char *delim;    /* delimiter text */
	size_t dlen;
	int strip;  /* <<-: leading tabs stripped */
	int quoted; /* delimiter was quoted: body is literal */
};

struct parser {
	struct cls_ctx *c;
	const char *s; /* source */
	size_t len;
	size_t pos;              /* lexer position */
	size_t base;             /* offset of s[0] in the original line */
	struct token tok;        /* lookahead */
	int have;                /* tok is valid */
	int want_delim;          /* the next word is a here-doc delimiter */
	int after_dup;           /* the last token was <& or >&: a `-' next is a token alone */
	int want_strip;          /* ... of a <<- operator */
	size_t delim_op;         /* offset of that operator */
	struct heredoc *pending; /* here-docs whose bodies come after the next newline */
	struct heredoc **ptail;
	struct cls_cmd **tail; /* where the next simple command is appended */
	int assign_ok;         /* the next word could be an assignment (command position) */
	unsigned arith_semis;  /* top-level ';' seen by scan_arith (for the arithmetic for) */
	int redir_target;      /* the next word is a redirection target */
	int assign_saved;      /* assign_ok before that redirection */
	int cmd_word;          /* the simple command has a word (bash's PST_REDIRLIST is off) */
	int rw_ok;             /* a reserved word may stand next (bash's reserved_word_acceptable)
	                        */
	int assign_args;       /* the command is declare-like: its arguments are assignments */
	int coproc_first;      /* the next word is the first after `coproc` */
	int for_name;          /* 1: the next word is the NAME of for, select or function; 2: it
	                          was (`do' or `{' may follow it) */
	unsigned char *arith_failed; /* bitmap over s: a `((' here is known not to be arithmetic */
	int heredoc;                 /* scanning an unquoted here-doc body */
	unsigned subst;              /* inside this many $( ), <( ) or >( ) */
	int in_dbracket;             /* between [[ and ]] */
	/* the value model (values.c) */
	struct cls_dep *deps, **dtail; /* the expansions of the word being read */
	unsigned npipes;               /* pipelines parsed */
	struct cls_cmd *elem_cmd;      /* the simple command the last command parsed was */
	struct cls_cmd *last_elem;     /* ... at the end of the last pipeline */
	int pipe_simple;               /* each element of the last pipeline one simple command */
	unsigned nelems;               /* pipeline elements parsed */
	const struct cls_word *stmt;   /* the assignment of an assignment-only command */
	int elem_depth;                /* the nesting elem_cmd was parsed at */
};

/* A growable byte buffer for a word being decoded: starts on the stack, moves to the arena. */
struct wbuf {
	char *p;
	size_t n, cap;
	char small[128];
};

#define ERR(P, off, ...) cls_refuse((P)->c, (P)->base + (off), __VA_ARGS__)

static int parse_list(struct parser *P, const char *const *stops, size_t *count);
static int parse_command(struct parser *P);
static int lex_word(struct parser *P, struct token *t);
static int parse_dollar(struct parser *P, struct wbuf *b, unsigned *flags, int dq);
static int parse_backtick(struct parser *P, struct wbuf *b, unsigned *flags);
static int parse_dquote(struct parser *P, struct wbuf *b, unsigned *flags);
static int peek(struct parser *P, struct token **t);
static int parse_subscript(struct parser *P, struct wbuf *b, unsigned *flags);

static void wb_init(struct wbuf *b)
{
	b->p = b->small;
	b->n = 0;
	b->cap = sizeof b->small;
}

static int wb_put(struct parser *P, struct wbuf *b, const char *s, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap * 2;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *np = cls_alloc(P->c, cap, P->base + P->pos);
		if (np == NULL)
			return -1;
		memcpy(np, b->p, b->n);
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	return 0;
}

static int wb_putc(struct parser *P, struct wbuf *b, char ch)
{
	if (b->n + 2 <= b->cap) {
		b->p[b->n++] = ch;
		return 0;
	}
	return wb_put(P, b, &ch, 1);
}

/* An expansion: its value is unknown, so the decoded text gets a mark there. */
/* An expansion whose value is a number (arithmetic, a length, $# $? $$ $!): a value built from
 * these alone cannot carry code for a later evaluation (black-box finding A7's neighbours). */
static int wb_num_exp(struct parser *P, struct wbuf *b, unsigned *flags)
{
	if (b->n == 0 && !(*flags & CLS_W_EXP))
		*flags |= CLS_W_LEADEXP;
	*flags |= CLS_W_EXP;
	return wb_putc(P, b, CLS_EXP_MARK);
}

static int wb_exp(struct parser *P, struct wbuf *b, unsigned *flags)
{
	*flags |= CLS_W_TEXT;
	return wb_num_exp(P, b, flags);
}

/* An expansion whose value is a variable's (kind CLS_DEP_VAR: name[0..nl)) or run-time text
 * (CLS_DEP_TEXT): recorded for the value model, then marked as any text. */
static int wb_dep(struct parser *P, struct wbuf *b, unsigned *flags, int kind, const char *name,
        size_t nl, int copy)
{
	struct cls_dep *d = cls_alloc(P->c, sizeof *d, P->base + P->pos);
	if (d == NULL)
		return -1;
	d->next = NULL;
	d->name = name;
	d->nlen = nl;
	d->at = b->n;
	d->kind = (unsigned char)kind;
	d->copy = (unsigned char)copy;
	d->arith_set = 0;
	if (P->dtail == NULL)
		P->dtail = &P->deps;
	*P->dtail = d;
	P->dtail = &d->next;
	if (kind == CLS_DEP_TEXT)
		*flags |= CLS_W_RTEXT;
	return wb_exp(P, b, flags);
}

/* Sinks (values.c) the expansions recorded since *from, and drops them from the word: they
 * are evaluated where they stand (a subscript, an offset), not part of the value.  0 or -1
 * (run-time text there). */
static int sink_since(struct parser *P, struct cls_dep **from, size_t off)
{
	for (struct cls_dep *d = *from; d != NULL; d = d->next) {
		if (d->kind == CLS_DEP_TEXT)
			return ERR(P, off,
			        "a command's output evaluated as arithmetic (it may hold a[$(...)], "
			        "which bash runs)");
		if (d->arith_set)
			cls_val_set(P->c, d->name, d->nlen, CLS_VK_NUM);
		cls_val_sink(P->c, d->name, d->nlen, P->base + off);
		if (!d->copy)
			cls_val_sink_joined(P->c, P->base + off);
	}
	*from = NULL;
	P->dtail = from;
	return 0;
}

static int is_meta(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == ';' || ch == '&' || ch == '|' ||
	       ch == '(' || ch == ')' || ch == '<' || ch == '>';
}

static int is_name_start(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}

static int is_name_char(char ch)
{
	return is_name_start(ch) || (ch >= '0' && ch <= '9');
}

/* Index past any backslash-newline pairs at i: bash removes them before tokenising. */
static size_t skip_cont(const struct parser *P, size_t i)
{
	while (i + 1 < P->len && P->s[i] == '\\' && P->s[i + 1] == '\n')
		i += 2;
	return i;
}

static char at(const struct parser *P, size_t i)
{
	return i < P->len ? P->s[i] : '\0';
}

/* Two things bash does to a text before it reads a token, checked before it is parsed.
 *
 * bash removes every backslash-newline outside single quotes before it reads a token, so one
 * between two characters joins them into one token: `$\<newline>'\147it'' is $'\147it',
 * `${x\<newline>@P}' is ${x@P}, `(\<newline>(x))' is arithmetic, `$x\<newline>y' is $xy.  The
 * parser follows such a pair where it stands between words (a blank or a newline on either
 * side, as in `curl -s \<newline>  URL'); one inside a token is refused, not modelled (parity
 * fuzz finding: `$\<newline>'\147it' push' ran git push and was `none').  A backslash ends a
 * line as a continuation when an odd run of backslashes stands before the newline. */
static int check_source(struct parser *P)
{
	const char *s = P->s;
	size_t len = P->len;
	/* bash marks quoted characters with these two bytes inside its parser (CTLESC and
	 * CTLNUL), and a raw one in the input changes how it reads a ${ } (parity fuzz finding:
	 * `o ${${$\177{}}' is a syntax error to bash alone).  No command line needs them. */
	const char *ctl = memchr(s, '\001', len);
	if (ctl == NULL)
		ctl = memchr(s, '\177', len);
	if (ctl != NULL)
		return ERR(P, (size_t)(ctl - s), "a raw \\001 or \\177 byte: refused");
	for (const char *nl = memchr(s, '\n', len); nl != NULL;
	        nl = memchr(nl + 1, '\n', len - (size_t)(nl + 1 - s))) {
		size_t i = (size_t)(nl - s), k = i;
		while (k > 0 && s[k - 1] == '\\')
			k--;
		if ((i - k) % 2 == 0)
			continue;
		size_t a = i - 1, e = i + 1; /* the pair is [a, e) */
		while (a >= 2 && s[a - 1] == '\n' && s[a - 2] == '\\')
			a -= 2;
		while (e + 1 < len && s[e] == '\\' && s[e + 1] == '\n')
			e += 2;
		if (a == 0 || e >= len)
			continue;
		char before = s[a - 1], after = s[e];
		if (before == ' ' || before == '\t' || before == '\n' || after == ' ' ||
		        after == '\t' || after == '\n')
			continue;
		/* letters and digits on both sides join into one plain word, which the parser
		 * reads as bash does (`git pu\<newline>sh'), unless they continue a name after `$'
		 * (in arithmetic, ${ } and subscripts the parser refuses the pair itself) */
		if (is_name_char(before) && is_name_char(after)) {
			size_t r = a - 1;
			while (r > 0 && is_name_char(s[r - 1]))
				r--;
			if (r == 0 || s[r - 1] != '$')
				continue;
		}
		return ERR(P, i - 1,
		        "a backslash-newline inside a token (bash joins the characters on either "
		        "side): refused");
	}
	return 0;
}

/* A value built at run time (black-box finding A7): see cls_ctx.dynamic. */
static void note_dynamic(struct parser *P, size_t off)
{
	if (!P->c->dynamic) {
		P->c->dynamic = 1;
		P->c->dynamic_off = P->base + off;
	}
}

/* Variable name[0..nl) takes the value of variable from (a one-letter pseudo name: "@" the
 * positional parameters, "_" the last word). */
static void val_copy(struct cls_ctx *c, const char *name, size_t nl, const char *from)
{
	struct cls_dep *d = cls_alloc(c, sizeof *d, 0);
	if (d == NULL)
		return;
	d->next = NULL;
	d->name = from;
	d->nlen = strlen(from);
	d->at = 0;
	d->kind = CLS_DEP_VAR;
	d->copy = 1;
	static const char mark[2] = {CLS_EXP_MARK, '\0'};
	struct cls_word w = {mark, 1, CLS_W_EXP | CLS_W_TEXT, 0, d};
	cls_val_assign(c, name, nl, &w, 0, 1, 0);
}

/* ---- substitutions ---------------------------------------------------------------------- */

/* $( ... ) or <( ... ) with P->pos just past the opening parenthesis.  *flags gets CLS_W_DL
 * when the substitution runs a download. */
static void mark_cmds(struct cls_cmd *from, unsigned flags, struct cls_doc *doc);

/* Where the words around a substitution stand: the substitution's own commands must not
 * change it (`export X=$(true) E[;git push;]' read E[...] as a subscript after the `)', and
 * `>$(echo f) a[x y]=1 git push' lost the redirection: both ran git push and were none). */
struct cmd_pos {
	int assign_ok, redir_target, assign_saved, assign_args, coproc_first, for_name, cmd_word,
	        rw_ok, in_dbracket;
};

static struct cmd_pos pos_save(const struct parser *P)
{
	return (struct cmd_pos){P->assign_ok, P->redir_target, P->assign_saved, P->assign_args,
	        P->coproc_first, P->for_name, P->cmd_word, P->rw_ok, P->in_dbracket};
}

static void pos_restore(struct parser *P, const struct cmd_pos *s)
{
	P->assign_ok = s->assign_ok;
	P->redir_target = s->redir_target;
	P->assign_saved = s->assign_saved;
	P->assign_args = s->assign_args;
	P->coproc_first = s->coproc_first;
	P->for_name = s->for_name;
	P->cmd_word = s->cmd_word;
	P->rw_ok = s->rw_ok;
	P->in_dbracket = s->in_dbracket;
}

static int parse_subst(struct parser *P, size_t open, unsigned *flags, int *numeric)
{
	if (cls_enter(P->c, P->base + open) == -1)
		return -1;
	size_t n;
	struct token *t;
	struct cls_cmd **from = P->tail;
	struct cmd_pos saved = pos_save(P);
	unsigned npipes = P->npipes, nelems = P->nelems;
	P->assign_ok = 1;
	P->rw_ok = 1;
	P->redir_target = 0;
	P->assign_args = 0;
	P->coproc_first = 0;
	P->for_name = 0;
	P->cmd_word = 0;
	P->in_dbracket = 0;
	P->npipes = 0;
	P->nelems = 0;
	P->last_elem = NULL;
	P->subst++;
	if (parse_list(P, NULL, &n) == -1 || peek(P, &t) == -1)
		return -1;
	P->subst--;
	pos_restore(P, &saved);
	/* one simple command that prints a number only: not a pipeline, whose earlier elements
	 * could write into the substitution's output through /proc/$PPID/fd/1 (oracle: sh -c
	 * 'printf ... > /proc/$PPID/fd/1' | wc -l ran git push in $(( ))) */
	/* ... and no other command in it either: a substitution in its words or redirections
	 * (< <(...), <<< "$(...)") runs in a child of the same shell, with the same reach */
	/* ... or a pipeline of simple commands each of which writes nothing but its output and
	 * runs nothing (cls_val_numeric_pipe: ls, find without -exec, git diff ...) */
	if (numeric != NULL)
		*numeric = P->npipes == 1 && P->last_elem != NULL &&
		           (P->nelems == 1 ? *from == P->last_elem &&
		                                     cls_val_numeric_cmd(P->c, P->last_elem) :
		                             P->pipe_simple &&
		                                     cls_val_numeric_pipe(P->c, *from, P->last_elem));
	P->npipes = npipes;
	P->nelems = nelems;
	/* parse_list stops at a token it cannot use; it must be our closing parenthesis. */
	if (P->tok.kind != T_RPAREN) {
		if (P->tok.kind == T_EOF)
			return ERR(P, open, "unterminated substitution");
		return ERR(P, P->tok.off, "syntax error in substitution");
	}
	P->have = 0;
	if (cls_cmds_download(*from, NULL))
		*flags |= CLS_W_DL;
	/* >( ... ) reads what the command writes into it: its standard input is a pipe */
	if (P->s[open] == '>')
		mark_cmds(*from, CLS_C_PIPED, NULL);
	cls_leave(P->c);
	return 0;
}

/* A `((' that turned out not to be arithmetic is read again as parentheses.  Remembering where
 * keeps nested ones from being scanned again on every re-read, which would take time
 * exponential in the nesting. */
static int arith_known_bad(const struct parser *P, size_t off)
{
	return P->arith_failed != NULL && (P->arith_failed[off / 8] >> (off % 8) & 1);
}

static void arith_mark_bad(struct parser *P, size_t off)
{
	if (P->arith_failed == NULL) {
		P->arith_failed = cls_alloc(P->c, P->len / 8 + 1, P->base + off);
		if (P->arith_failed == NULL)
			return; /* the line is refused already */
		memset(P->arith_failed, 0, P->len / 8 + 1);
	}
	P->arith_failed[off / 8] |= (unsigned char)(1u << (off % 8));
}

/* A '$' at P->pos where bash evaluates the text as arithmetic or expands it as between double
 * quotes: bash's parser turns $'...' into single-quoted text, which does not quote there, so
 * a decoded `$(' or backquote runs (black-box finding A6: `(( $'\x24(git push)' ))`). */
static int dollar_arith(struct parser *P, struct wbuf *b, unsigned *fl, int dq)
{
	size_t n0 = b->n;
	int ansic = at(P, P->pos + 1) == '\'' && !dq;
	size_t open = P->pos;
	if (parse_dollar(P, b, fl, dq) == -1)
		return -1;
	if (ansic && b->n > n0 &&
	        (memchr(b->p + n0, '$', b->n - n0) != NULL ||
	                memchr(b->p + n0, '`', b->n - n0) != NULL))
		return ERR(P, open,
		        "$'...' decoding to a substitution in arithmetic (bash expands it there)");
	return 0;
}

/* Single quotes at P->pos where bash expands what they hold (arithmetic, a subscript, a
 * double-quoted ${ }): skips them, or refuses when they hold a `$' or a backquote (it would
 * run) and expands is set.  0, or -1 when refused. */
static int squote_expanded(struct parser *P, int expands, const char *where)
{
	size_t from = P->pos + 1;
	const char *q = memchr(P->s + from, '\'', P->len - from);
	if (q == NULL)
		return ERR(P, P->pos, "unterminated single quote");
	size_t end = (size_t)(q - P->s);
	if (expands && (memchr(P->s + from, '$', end - from) != NULL ||
	                       memchr(P->s + from, '`', end - from) != NULL))
		return ERR(P, P->pos, "a substitution in single quotes %s (bash expands it there)",
		        where);
	P->pos = end + 1;
	return 0;
}

/* In an arithmetic body ($(( )), (( )), $[ ]): parses a substitution, quoted text or an escaped
 * character at P->pos and returns 1; returns 0 for any other character (not consumed), -1 when
 * refused.  bash matches quotes and substitutions inside these bodies as in a word. */
static int arith_subst(struct parser *P, struct wbuf *b, unsigned *fl);

static int arith_quoted(struct parser *P, struct wbuf *b, unsigned *fl)
{
	char ch = P->s[P->pos];
	if (ch == '$' || ch == '`' || ch == '"')
		return arith_subst(P, b, fl);
	if (ch == '\'') {
		/* bash finds the body's end with single quotes matched, then expands the body as
		 * if it were in double quotes: a substitution between them runs (oracle finding,
		 * $((x='a[$(nslookup x.test)]'; let x)) ran nslookup).  Refused, not modelled. */
		return squote_expanded(P, 1, "in an arithmetic expression") == -1 ? -1 : 1;
	}
	if (ch == '\\' && P->pos + 1 < P->len) {
		/* bash removes it first: `x\<newline>y' is the name xy */
		if (P->s[P->pos + 1] == '\n')
			return ERR(P, P->pos, "a backslash-newline in an arithmetic expression: refused");
		P->pos += 2;
		return 1;
	}
	return 0;
}

/* Whether the parentheses and the brackets of s pair up, each kind on its own. */
static int paired(const char *s, size_t n)
{
	long paren = 0, bracket = 0;
	for (size_t i = 0; i < n; i++) {
		paren += (s[i] == '(') - (s[i] == ')');
		bracket += (s[i] == '[') - (s[i] == ']');
		if (paren < 0 || bracket < 0)
			return 0;
	}
	return paren == 0 && bracket == 0;
}

/* A substitution (or double-quoted text) in an arithmetic body: a command's output there is
 * evaluated as arithmetic, and may hold a[$(...)], which bash runs (black-box finding:
 * $(( $(cat f) )) ran what f held).  Refused.  Returns 1, or -1 when refused. */
static int arith_subst(struct parser *P, struct wbuf *b, unsigned *fl)
{
	size_t open = P->pos;
	char ch = P->s[P->pos];
	unsigned mine = 0;
	int r;
	if (P->dtail == NULL)
		P->dtail = &P->deps;
	struct cls_dep **before = P->dtail;
	if (ch == '$') {
		r = dollar_arith(P, b, &mine, 0);
		/* bash counts the parentheses and brackets of a ${ } inside arithmetic with the
		 * expression's own: `$(( ${X(} ))' and `${X$[${u]}])}' are syntax errors to it
		 * (parity fuzz findings).  Refused unless they pair up (`$(( ${a[0]} + 1 ))'). */
		if (r != -1 && at(P, open + 1) == '{' && !paired(P->s + open, P->pos - open))
			return ERR(P, open,
			        "a parenthesis or bracket that does not pair up inside a ${ } in "
			        "arithmetic: refused");
	} else if (ch == '`') {
		r = parse_backtick(P, b, &mine);
	} else {
		P->pos++;
		r = parse_dquote(P, b, &mine);
	}
	if (r == -1)
		return -1;
	/* a command proven to print a number only (wc -l, nproc, date +%s) is not refused */
	for (const struct cls_dep *d = *before; d != NULL; d = d->next)
		if (d->kind == CLS_DEP_TEXT)
			return ERR(P, open,
			        "a command's output evaluated as arithmetic (it may hold a[$(...)], "
			        "which bash runs)");
	*fl |= mine;
	return 1;
}

/* A name at P->pos..e in an arithmetic body: recorded with the body's expansions, evaluated
 * (values.c) once the body proves to be arithmetic.  0 or -1. */
static int arith_name(struct parser *P, size_t e)
{
	struct cls_dep *d = cls_alloc(P->c, sizeof *d, P->base + P->pos);
	if (d == NULL)
		return -1;
	d->next = NULL;
	d->name = P->s + P->pos;
	d->nlen = e - P->pos;
	d->at = 0;
	d->kind = CLS_DEP_VAR;
	d->copy = 1;
	d->arith_set = (unsigned char)cls_val_arith_assigned(P->s, P->len, P->pos, e);
	*P->dtail = d;
	P->dtail = &d->next;
	return 0;
}

/* Scans an arithmetic body after "((" (or "$(("), parsing the substitutions inside.  Returns 0
 * when it ended with "))", 1 when the text is not arithmetic (bash then re-reads it as nested
 * parentheses), -1 when refused. */
static int scan_arith(struct parser *P, size_t open)
{
	int depth = 0, names = 0;
	struct wbuf b;
	unsigned fl = 0;
	wb_init(&b);
	/* the expansions inside are evaluated (values.c), not part of any word */
	struct cls_dep *sdeps = P->deps, **stail = P->dtail;
	P->deps = NULL;
	P->dtail = &P->deps;
	for (;;) {
		if (P->pos >= P->len)
			return ERR(P, open, "unterminated arithmetic expression");
		char ch = P->s[P->pos];
		if (ch == '(') {
			depth++;
			P->pos++;
		} else if (ch == ')') {
			if (depth == 0) {
				int r = 1;
				if (at(P, P->pos + 1) == ')') {
					P->pos += 2;
					if (names)
						P->c->eval_name = 1;
					if (sink_since(P, &P->deps, open) == -1)
						return -1;
					r = 0;
				}
				P->deps = sdeps;
				P->dtail = stail;
				return r;
			}
			depth--;
			P->pos++;
		} else {
			int r = arith_quoted(P, &b, &fl);
			if (r == -1)
				return -1;
			if (r == 1 && (ch == '$' || ch == '`'))
				names = 1; /* an expansion's value is evaluated too */
			if (r == 0) {
				if (ch == ';' && depth == 0)
					P->arith_semis++;
				if (is_name_start(ch) && (P->pos == 0 || !is_name_char(P->s[P->pos - 1]))) {
					size_t e = P->pos + 1;
					while (e < P->len && is_name_char(P->s[e]))
						e++;
					names = 1;
					if (arith_name(P, e) == -1)
						return -1;
					P->pos = e - 1;
				}
				P->pos++;
			}
		}
		b.n = 0; /* the text of an arithmetic expression is never needed */
	}
}

/* The state a failed arithmetic scan must undo: it may have recorded commands. */
struct mark {
	size_t pos;
	struct cls_cmd **tail;
	struct cls_cmd *tailval;
	size_t ncmds;
	struct heredoc **ptail;
	struct heredoc *pendval;
	int want_delim;
};

static void mark_save(struct parser *P, struct mark *m)
{
	m->pos = P->pos;
	m->tail = P->tail;
	m->tailval = *P->tail;
	m->ncmds = P->c->ncmds;
	m->ptail = P->ptail;
	m->pendval = *P->ptail;
	m->want_delim = P->want_delim;
}

static void mark_restore(struct parser *P, const struct mark *m)
{
	P->pos = m->pos;
	P->tail = m->tail;
	*P->tail = m->tailval;
	P->c->ncmds = m->ncmds;
	P->ptail = m->ptail;
	*P->ptail = m->pendval;
	P->want_delim = m->want_delim;
}

/* What a ${ } expansion stands for in the value model (values.c). */
struct bp_value {
	int kind;         /* 0 a number, 1 a variable's value (name), 2 run-time text */
	const char *name; /* kind 1: the variable ("@" the positional parameters, "!k" keys, "-"
	                     the environment's text) */
	size_t nlen;
	int copy; /* the value itself or a part of it, not joined with other text */
};

/* ${ ... } with P->pos just past "${". */
static int parse_braceparam(
        struct parser *P, size_t open, int dq, unsigned *outer, struct bp_value *val)
{
	struct wbuf b;
	unsigned fl = 0;
	size_t sub_lo = SIZE_MAX, sub_hi = 0, arith_from = SIZE_MAX;
	wb_init(&b);
	if (cls_enter(P->c, P->base + open) == -1)
		return -1;
	val->kind = 2;
	val->name = NULL;
	val->nlen = 0;
	val->copy = 0;
	{
		/* ${$[...]}, ${#$(...)}: the parameter $ with a subscript to this parser, but bash's
		 * reader takes `$[', `$(' and `${' as nested constructs and finds the end elsewhere
		 * (parity fuzz finding: `o ${$[${u]}])}' is a syntax error to bash alone) */
		size_t d = P->pos + (at(P, P->pos) == '!' || at(P, P->pos) == '#');
		if (at(P, d) == '$' && at(P, d + 1) != '\0' && strchr("[({", at(P, d + 1)) != NULL)
			return ERR(P, open, "${$ followed by a bracket: refused");
	}
	{
		/* ${!x}, ${a[i]}, ${x:off}, ${x@P}: bash evaluates a value as a name, an
		 * arithmetic expression or a prompt */
		size_t i = P->pos;
		if (at(P, i) == '!')
			P->c->evaluates = P->c->eval_name = 1;
		while (i < P->len && is_name_char(P->s[i]))
			i++;
		char op = at(P, i), op2 = at(P, i + 1);
		if (op == '[' || op == '@' || (op == ':' && op2 != '-' && op2 != '=' &&
		                                      op2 != '?' && op2 != '+'))
			P->c->evaluates = 1;
		/* the parts bash evaluates as arithmetic: a subscript, and a substring's offset and
		 * length, where single quotes do not quote (black-box finding A6) */
		i = P->pos;
		int bang = at(P, i) == '!', hash = at(P, i) == '#';
		if (bang || hash)
			i++;
		size_t ns = i;
		int special = 0;
		if (is_name_start(at(P, i))) {
			while (i < P->len && is_name_char(P->s[i]))
				i++;
		} else if (at(P, i) >= '0' && at(P, i) <= '9') {
			while (i < P->len && P->s[i] >= '0' && P->s[i] <= '9')
				i++;
			special = '1';
		} else if (at(P, i) != '\0' && strchr("@*#?$!-", at(P, i)) != NULL) {
			special = at(P, i);
			i++;
		}
		size_t ne = i;
		int all = 0; /* [@] or [*] */
		if (at(P, i) == '[') {
			int depth = 0;
			sub_lo = i;
			all = (at(P, i + 1) == '@' || at(P, i + 1) == '*') && at(P, i + 2) == ']';
			for (; i < P->len; i++) {
				if (P->s[i] == '\'') {
					const char *q = memchr(P->s + i + 1, '\'', P->len - i - 1);
					if (q == NULL)
						break;
					i = (size_t)(q - P->s);
				} else if (P->s[i] == '[') {
					depth++;
				} else if (P->s[i] == ']' && --depth == 0) {
					break;
				}
			}
			sub_hi = i;
			i++;
		}
		op = at(P, i);
		op2 = at(P, i + 1);
		if (op == ':' && op2 != '-' && op2 != '=' && op2 != '?' && op2 != '+')
			arith_from = i;
		const char *nm = P->s + ns;
		size_t nl = ne - ns;
		/* the value (values.c) */
		if (hash && (op == '}' || nl == 0)) {
			val->kind = 0; /* a length, or ${#} */
		} else if (special == '#' || special == '?' || special == '$' ||
		           (special == '!' && !bang)) {
			val->kind = 0;
		} else if (special == '1' || special == '@' || special == '*') {
			val->kind = 1;
			val->name = "@";
			val->nlen = 1;
			val->copy = special == '1' && !bang && op == '}';
		} else if (special == '-') {
			val->kind = 1;
			val->name = "-";
			val->nlen = 1;
		} else if (bang && nl > 0 && all && op == '}') {
			val->kind = 1; /* ${!a[@]}: the keys */
			val->name = "!k";
			val->nlen = 2;
			val->copy = 1;
		} else if (bang && nl > 0 && sub_lo == SIZE_MAX && (op == '@' || op == '*') &&
		           op2 == '}') {
			val->kind = 1; /* ${!prefix@}: variable names */
			val->name = "-";
			val->nlen = 1;
		} else if (bang && nl > 0) {
			/* ${!x}: the variable x names, subscript and all */
			cls_val_sink(P->c, nm, nl, P->base + open);
		} else if (nl > 0 && !hash) {
			val->kind = 1;
			val->name = nm;
			val->nlen = nl;
			val->copy = !all && (op == '}' || op == '#' || op == '%' || arith_from != SIZE_MAX);
			if (val->copy && op == '}' && sub_lo == SIZE_MAX && arith_from == SIZE_MAX)
				val->copy = 2; /* the whole value, not a part (black-box round 5) */
			if (op == '@' && op2 == 'P')
				cls_val_sink(P->c, nm, nl, P->base + open);
			if (op == '=' || (op == ':' && op2 == '=')) {
				cls_val_set(P->c, nm, nl, CLS_VK_TEXT);
				/* PS4, PROMPT_COMMAND, BASH_ENV, ... run what they hold: set this
				 * way their value is not classified (a session finding) */
				if (cls_hook_name(nm, nl))
					return ERR(P, open,
					        "${NAME:=...} setting PS0-PS4, PROMPT_COMMAND, BASH_ENV, "
					        "ENV, BASH_CMDS or BASH_ALIASES");
			}
		}
		if (op == '@' && op2 == 'P')
			P->c->eval_name = 1;
		if (op == '=' || (op == ':' && op2 == '='))
			note_dynamic(P, open); /* ${x:=...} assigns */
		/* a name or an expansion in a subscript or a substring's offset: its value is
		 * evaluated */
		for (size_t j = sub_lo; j < sub_hi && j < P->len; j++)
			if (is_name_start(P->s[j]) || P->s[j] == '$' || P->s[j] == '`')
				P->c->eval_name = 1;
		size_t ae = arith_from;
		for (; ae < P->len && P->s[ae] != '}'; ae++)
			if (is_name_start(P->s[ae]) || P->s[ae] == '$' || P->s[ae] == '`')
				P->c->eval_name = 1;
		/* their names are evaluated (values.c); the expansions are, below */
		if (sub_lo != SIZE_MAX && !all)
			cls_val_sink_text(P->c, P->s + sub_lo + 1, sub_hi - sub_lo - 1, P->base + open);
		if (arith_from != SIZE_MAX)
			cls_val_sink_text(P->c, P->s + arith_from + 1, ae - arith_from - 1,
			        P->base + open);
	}
	if (P->dtail == NULL)
		P->dtail = &P->deps;
	for (;;) {
		if (P->pos >= P->len)
			return ERR(P, open, "unterminated ${");
		char ch = P->s[P->pos];
		if (ch == '}') {
			P->pos++;
			break;
		}
		/* an expansion in a subscript or an offset is evaluated where it stands; one in
		 * the word of ${x:-word} is part of the value */
		int arith = (P->pos > sub_lo && P->pos < sub_hi) || P->pos > arith_from;
		struct cls_dep **mark = P->dtail;
		size_t at_pos = P->pos;
		if (ch == '\\') {
			/* bash removes it first: `${x\<newline>@P}' is ${x@P} */
			if (at(P, P->pos + 1) == '\n')
				return ERR(P, P->pos, "a backslash-newline inside ${ }: refused");
			P->pos += P->pos + 1 < P->len ? 2 : 1;
		} else if (ch == '\'' && !P->heredoc) {
			/* bash matches single quotes inside ${ } even between double quotes:
			 * "${x:-'}" is an unterminated quote to it (fuzz finding) */
			/* ... and between double quotes they do not quote: bash expands what they
			 * hold, "${x:-'$(git push)'}" runs git push (black-box finding A5) */
			if (squote_expanded(P, dq || arith,
			            "inside a double-quoted ${ } or its arithmetic") == -1)
				return -1;
		} else if (ch == '"') {
			P->pos++;
			if (parse_dquote(P, &b, &fl) == -1)
				return -1;
		} else if (ch == '$') {
			/* $'...' is ANSI-C quoting here too, between double quotes or not */
			int ansic = (dq || arith) && !P->heredoc && at(P, P->pos + 1) == '\'';
			if (parse_dollar(P, &b, &fl, dq && P->heredoc) == -1)
				return -1;
			/* bash expands the decoded text of a $'...' inside a double-quoted ${ }:
			 * "${x:-$'\x24(git push)'}" runs git push (black-box finding A5) */
			if (ansic && (memchr(b.p, '$', b.n) != NULL || memchr(b.p, '`', b.n) != NULL))
				return ERR(P, P->pos - 1,
				        "$'...' inside a double-quoted ${ } or its arithmetic decodes to "
				        "a substitution");
		} else if (ch == '`') {
			if (parse_backtick(P, &b, &fl) == -1)
				return -1;
		} else if ((ch == '<' || ch == '>') && at(P, P->pos + 1) == '(') {
			/* bash parses a process substitution here as commands (a syntax error in it is
			 * one to bash), though it never runs it; egressd counts it as run, the stricter
			 * reading (fuzz finding) */
			size_t ps = P->pos;
			P->pos += 2;
			if (parse_subst(P, ps, &fl, NULL) == -1)
				return -1;
		} else {
			P->pos++;
		}
		if (arith) {
			if (sink_since(P, mark, at_pos) == -1)
				return -1;
		} else {
			for (struct cls_dep *d = *mark; d != NULL; d = d->next) {
				d->copy = 0;
				d->at = SIZE_MAX; /* placed at the ${ }'s own mark below */
			}
		}
		b.n = 0;
	}
	*outer |= fl & (CLS_W_DL | CLS_W_RTEXT);
	cls_leave(P->c);
	return 0;
}

/* Appends the UTF-8 encoding of code point cp. */
static int put_utf8(struct parser *P, struct wbuf *b, unsigned long cp)
{
	char u[4];
	size_t n;
	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		if (cp > 0x10ffff)
			cp = 0xfffd;
		u[0] = (char)(0xf0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return wb_put(P, b, u, n);
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* $'...' with P->pos just past "$'": decodes bash's ANSI-C escapes.  A NUL ends the string's
 * value, as in bash. */
static int parse_ansic(struct parser *P, struct wbuf *b, size_t open)
{
	int cut = 0;
	size_t from = b->n;
	for (;;) {
		if (P->pos >= P->len)
			return ERR(P, open, "unterminated $'");
		char ch = P->s[P->pos++];
		if (ch == '\'') {
			/* the decoded text shows what the line's own text may not ($'\x74cp') */
			cls_note_shown(P->c, b->p + from, b->n - from);
			return 0;
		}
		if (ch != '\\') {
			if (!cut && wb_putc(P, b, ch) == -1)
				return -1;
			continue;
		}
		if (P->pos >= P->len)
			return ERR(P, open, "unterminated $'");
		char e = P->s[P->pos++];
		unsigned long v = 0;
		int raw = 0; /* v is a byte, not a code point */
		switch (e) {
		case 'a':
			v = 7;
			raw = 1;
			break;
		case 'b':
			v = 8;
			raw = 1;
			break;
		case 'e':
		case 'E':
			v = 27;
			raw = 1;
			break;
		case 'f':
			v = 12;
			raw = 1;
			break;
		case 'n':
			v = 10;
			raw = 1;
			break;
		case 'r':
			v = 13;
			raw = 1;
			break;
		case 't':
			v = 9;
			raw = 1;
			break;
		case 'v':
			v = 11;
			raw = 1;
			break;
		case '\\':
		case '\'':
		case '"':
		case '?':
			v = (unsigned char)e;
			raw = 1;
			break;
		case 'c':
			if (P->pos >= P->len)
				return ERR(P, open, "unterminated $'");
			/* bash's lexer finds the closing quote first, a backslash escaping only the
			 * c: $'\c'' ends at the first quote and leaves the second open (fuzz
			 * finding) */
			if (P->s[P->pos] == '\'')
				continue;
			/* bash's lexer reads a backslash after \c as escaping the next character
			 * ($'\c\'' does not end at that quote, fuzz finding), but its decoder keeps
			 * that character as it is: `eval $'\c\;git push' ran git push (black-box
			 * round 7).  Refused, not modelled. */
			if (P->s[P->pos] == '\\')
				return ERR(P, open, "$'...' with \\c\\: refused");
			v = (unsigned char)P->s[P->pos++] & 0x1f;
			raw = 1;
			break;
		case 'x':
		case 'u':
		case 'U': {
			int max = e == 'x' ? 2 : e == 'u' ? 4 : 8, k = 0, h;
			while (k < max && P->pos < P->len && (h = hexval(P->s[P->pos])) >= 0) {
				v = v * 16 + (unsigned long)h;
				P->pos++;
				k++;
			}
			if (k == 0) {
				/* no digits: bash keeps the text as it is */
				if (!cut && (wb_putc(P, b, '\\') == -1 || wb_putc(P, b, e) == -1))
					return -1;
				continue;
			}
			raw = e == 'x';
			break;
		}
		default:
			if (e >= '0' && e <= '7') {
				v = (unsigned long)(e - '0');
				for (int k = 0; k < 2 && P->pos < P->len && P->s[P->pos] >= '0' &&
				                P->s[P->pos] <= '7';
				        k++)
					v = v * 8 + (unsigned long)(P->s[P->pos++] - '0');
				v &= 0xff;
				raw = 1;
				break;
			}
			if (!cut && (wb_putc(P, b, '\\') == -1 || wb_putc(P, b, e) == -1))
				return -1;
			continue;
		}
		if (v == 0)
			cut = 1;
		if (cut)
			continue;
		if (raw) {
			if (wb_putc(P, b, (char)v) == -1)
				return -1;
		} else if (put_utf8(P, b, v) == -1) {
			return -1;
		}
	}
}

/* A '$' at P->pos, outside quotes or inside double quotes (dq). */
static int parse_dollar(struct parser *P, struct wbuf *b, unsigned *flags, int dq)
{
	size_t open = P->pos;
	char n = at(P, P->pos + 1);
	/* sh (dash) has no $'...' or $"...": `$' then a quoted string (black-box round 8) */
	if ((n == '\'' || n == '"') && !dq && P->c->sh_mode)
		return ERR(P, open, "$'...' or $\"...\" in a script sh runs: refused");
	if (n == '\'' && !dq) {
		P->pos += 2;
		*flags |= CLS_W_QUOTED;
		return parse_ansic(P, b, open);
	}
	if (n == '"' && !P->c->locale_str) {
		/* translated with TEXTDOMAIN's catalog (between double quotes too, inside a
		 * ${ } that extended_quote reads): checked once the line is read */
		P->c->locale_str = 1;
		P->c->locale_off = P->base + open;
	}
	if (n == '"' && !dq) {
		P->pos += 2;
		*flags |= CLS_W_QUOTED;
		return parse_dquote(P, b, flags);
	}
	if (n == '(') {
		if (at(P, P->pos + 2) == '(' && !arith_known_bad(P, open)) {
			struct mark m;
			P->pos += 3;
			mark_save(P, &m);
			if (cls_enter(P->c, P->base + open) == -1)
				return -1;
			int r = scan_arith(P, open);
			cls_leave(P->c);
			if (r == -1)
				return -1;
			if (r == 0) {
				P->c->evaluates = 1;
				return wb_num_exp(P, b, flags);
			}
			mark_restore(P, &m);
			arith_mark_bad(P, open);
			/* bash reads a `#' right after such a `$((' as a word, not as a comment:
			 * refused rather than modelled (fuzz finding) */
			size_t h = open + 3;
			while (h < P->len && (P->s[h] == ' ' || P->s[h] == '\t'))
				h++;
			if (at(P, h) == '#')
				return ERR(P, open, "a comment right after $(( that is not arithmetic");
			P->pos = open + 2; /* "$(" then a subshell */
		} else {
			P->pos += 2;
		}
		int numeric;
		if (parse_subst(P, open, flags, &numeric) == -1)
			return -1;
		*flags |= CLS_W_SUBST;
		if (numeric)
			return wb_num_exp(P, b, flags);
		return wb_dep(P, b, flags, CLS_DEP_TEXT, NULL, 0, 0);
	}
	if (n == '{') {
		P->pos += 2;
		if (P->dtail == NULL)
			P->dtail = &P->deps;
		struct cls_dep **m = P->dtail;
		struct bp_value val;
		if (parse_braceparam(P, open, dq, flags, &val) == -1)
			return -1;
		/* the expansions in its word (${x:-$y}) stand where it does */
		for (struct cls_dep *d = *m; d != NULL; d = d->next)
			if (d->at == SIZE_MAX)
				d->at = b->n;
		if (val.kind == 0)
			return wb_num_exp(P, b, flags);
		if (val.kind == 1)
			return wb_dep(P, b, flags, CLS_DEP_VAR, val.name, val.nlen, val.copy);
		return wb_dep(P, b, flags, CLS_DEP_TEXT, NULL, 0, 0);
	}
	if (n == '[') {
		/* the obsolete $[ arithmetic ]: substitutions inside are parsed as in $(( )) */
		int depth = 0;
		P->c->evaluates = 1;
		struct wbuf tmp;
		unsigned fl = 0;
		wb_init(&tmp);
		P->pos += 2;
		if (cls_enter(P->c, P->base + open) == -1)
			return -1;
		struct cls_dep *sdeps = P->deps, **stail = P->dtail;
		P->deps = NULL;
		P->dtail = &P->deps;
		for (;;) {
			if (P->pos >= P->len)
				return ERR(P, open, "unterminated $[");
			char ch = P->s[P->pos];
			tmp.n = 0;
			int r = arith_quoted(P, &tmp, &fl);
			if (r == -1)
				return -1;
			if (r == 1 && (ch == '$' || ch == '`'))
				P->c->eval_name = 1;
			if (r == 0) {
				if (is_name_start(ch) && !is_name_char(P->s[P->pos - 1])) {
					size_t e = P->pos + 1;
					while (e < P->len && is_name_char(P->s[e]))
						e++;
					if (arith_name(P, e) == -1)
						return -1;
					P->pos = e - 1;
				}
				P->pos++;
				if (is_name_start(ch))
					P->c->eval_name = 1;
				if (ch == '[')
					depth++;
				else if (ch == ']' && depth-- == 0)
					break;
			}
		}
		if (sink_since(P, &P->deps, open) == -1)
			return -1;
		P->deps = sdeps;
		P->dtail = stail;
		cls_leave(P->c);
		return wb_num_exp(P, b, flags);
	}
	if (is_name_start(n)) {
		P->pos += 2;
		while (P->pos < P->len && is_name_char(P->s[P->pos]))
			P->pos++;
		return wb_dep(P, b, flags, CLS_DEP_VAR, P->s + open + 1, P->pos - open - 1, 2);
	}
	if ((n >= '0' && n <= '9') || (n != '\0' && strchr("@*#?$!-", n) != NULL)) {
		P->pos += 2;
		if (strchr("#?$!", n) != NULL)
			return wb_num_exp(P, b, flags);
		/* $1 is a positional parameter; "$*" and "$@" join them */
		if (n == '-')
			return wb_dep(P, b, flags, CLS_DEP_VAR, "-", 1, 1);
		return wb_dep(P, b, flags, CLS_DEP_VAR, "@", 1, n != '@' && n != '*');
	}
	P->pos++;
	return wb_putc(P, b, '$');
}

/* `...` at P->pos: the body is unescaped (\\ \` \$) and parsed as a program of its own. */
static int parse_backtick(struct parser *P, struct wbuf *b, unsigned *flags)
{
	size_t open = P->pos;
	struct wbuf body;
	wb_init(&body);
	P->pos++;
	for (;;) {
		if (P->pos >= P->len)
			return ERR(P, open, "unterminated backtick");
		char ch = P->s[P->pos];
		if (ch == '`') {
			P->pos++;
			break;
		}
		if (ch == '\\' && P->pos + 1 < P->len) {
			char e = P->s[P->pos + 1];
			/* bash removes the pair while it reads the backquotes, inside quotes of the
			 * body too (oracle fuzz finding: `$'\x\<newline>78\x68'' in backquotes ran
			 * xh): refused, not modelled */
			if (e == '\n')
				return ERR(P, P->pos, "a backslash-newline inside backquotes: refused");
			if (e == '\\' || e == '`' || e == '$') {
				if (wb_putc(P, &body, e) == -1)
					return -1;
				P->pos += 2;
				continue;
			}
		}
		if (wb_putc(P, &body, ch) == -1)
			return -1;
		P->pos++;
	}
	char *text = cls_strdup(P->c, body.p, body.n, P->base + open);
	if (text == NULL)
		return -1;
	if (cls_enter(P->c, P->base + open) == -1)
		return -1;
	struct parser sub;
	memset(&sub, 0, sizeof sub);
	sub.c = P->c;
	sub.s = text;
	sub.len = body.n;
	sub.base = P->base + open + 1;
	sub.ptail = &sub.pending;
	sub.tail = P->tail;
	struct cls_cmd **bfrom = P->tail;
	sub.assign_ok = 1;
	sub.rw_ok = 1;
	size_t n;
	struct token *t;
	if (check_source(&sub) == -1 || parse_list(&sub, NULL, &n) == -1 || peek(&sub, &t) == -1)
		return -1;
	if (sub.tok.kind != T_EOF)
		return ERR(&sub, sub.tok.off, "syntax error in backticks");
	if (sub.pending != NULL)
		return ERR(&sub, sub.len, "here-document reaches the end of the input");
	if (cls_cmds_download(*P->tail, NULL))
		*flags |= CLS_W_DL;
	*flags |= CLS_W_SUBST;
	P->tail = sub.tail;
	cls_leave(P->c);
	if (sub.npipes == 1 && sub.last_elem != NULL &&
	        (sub.nelems == 1 ? *bfrom == sub.last_elem && cls_val_numeric_cmd(P->c, sub.last_elem) :
	                           sub.pipe_simple &&
	                                   cls_val_numeric_pipe(P->c, *bfrom, sub.last_elem)))
		return wb_num_exp(P, b, flags);
	return wb_dep(P, b, flags, CLS_DEP_TEXT, NULL, 0, 0);
}

/* Inside "...", with P->pos just past the opening quote. */
static int parse_dquote(struct parser *P, struct wbuf *b, unsigned *flags)
{
	size_t open = P->pos - 1;
	*flags |= CLS_W_QUOTED;
	for (;;) {
		if (P->pos >= P->len)
			return ERR(P, open, "unterminated double quote");
		char ch = P->s[P->pos];
		if (ch == '"') {
			P->pos++;
			return 0;
		}
		if (ch == '\\' && P->pos + 1 < P->len) {
			char e = P->s[P->pos + 1];
			if (e == '\n') {
				P->pos += 2;
				continue;
			}
			if (e == '$' || e == '`' || e == '"' || e == '\\') {
				if (wb_putc(P, b, e) == -1)
					return -1;
				P->pos += 2;
				continue;
			}
		}
		if (ch == '$') {
			if (parse_dollar(P, b, flags, 1) == -1)
				return -1;
			continue;
		}
		if (ch == '`') {
			if (parse_backtick(P, b, flags) == -1)
				return -1;
			continue;
		}
		if (wb_putc(P, b, ch) == -1)
			return -1;
		P->pos++;
	}
}

/* ---- words and tokens ------------------------------------------------------------------- */

/* Whether the decoded text so far is "NAME=" or "NAME+=" with nothing quoted: an array
 * assignment may follow. */
static int is_assign_prefix(const struct wbuf *b, unsigned flags)
{
	if (flags != 0 || b->n < 2 || b->p[b->n - 1] != '=' || !is_name_start(b->p[0]))
		return 0;
	size_t i = 1, end = b->n - 1;
	if (b->p[end - 1] == '+')
		end--;
	while (i < end && is_name_char(b->p[i]))
		i++;
	return i == end;
}

static int parse_array_words(struct parser *P, const char *name, size_t nl);

/* NAME=(words...) with P->pos at the '('.  An element is never itself an assignment with an
 * array ("a=(b c=(d))" is a syntax error to bash), so assignments are off inside. */
static int parse_array(struct parser *P, const char *name, size_t nl)
{
	int saved = P->assign_ok;
	P->assign_ok = 0;
	int rc = parse_array_words(P, name, nl);
	P->assign_ok = saved;
	return rc;
}

static int parse_array_words(struct parser *P, const char *name, size_t nl)
{
	size_t open = P->pos++;
	for (;;) {
		P->pos = skip_cont(P, P->pos);
		if (P->pos >= P->len)
			return ERR(P, open, "unterminated array assignment");
		char ch = P->s[P->pos];
		/* bash reads the bodies of pending here-documents at a newline inside the
		 * parentheses, and a second, empty-delimited one after them (black-box finding:
		 * `cat <<E; x=(<newline>E<newline>)<newline><newline>git push<newline>E' ran git
		 * push).  Refused, not modelled. */
		if (ch == '\n' && P->pending != NULL)
			return ERR(P, P->pos,
			        "a newline inside an array assignment while a here-document is "
			        "pending: refused");
		if (ch == ' ' || ch == '\t' || ch == '\n') {
			P->pos++;
			continue;
		}
		if (ch == '#') {
			while (P->pos < P->len && P->s[P->pos] != '\n')
				P->pos++;
			continue;
		}
		if (ch == ')') {
			P->pos++;
			return 0;
		}
		if (is_meta(ch) && !((ch == '<' || ch == '>') && at(P, P->pos + 1) == '('))
			return ERR(P, P->pos, "syntax error in array assignment");
		if (ch == '[') {
			/* [KEY]=VALUE: the key is a bracket pair, as after NAME[ */
			struct wbuf key;
			unsigned kf = 0;
			wb_init(&key);
			struct cls_dep **mark = P->dtail;
			size_t at_pos = P->pos;
			if (parse_subscript(P, &key, &kf) == -1 || sink_since(P, mark, at_pos) == -1)
				return -1;
			/* bash reads only the first bracket pair as one: in `([][<])' the `<' ends
			 * the word (parity fuzz finding) */
			if (at(P, P->pos) == '[')
				return ERR(P, P->pos,
				        "a second subscript in an array element: refused");
			cls_val_sink_text(P->c, key.p, key.n, P->base + at_pos);
			continue;
		}
		struct token t;
		if (lex_word(P, &t) == -1)
			return -1;
		/* "4<y" lexes as a redirection: none is allowed among the elements (fuzz finding) */
		if (t.kind != T_WORD)
			return ERR(P, t.off, "syntax error in array assignment");
		if (t.w.flags & (CLS_W_EXP | CLS_W_GLOB))
			note_dynamic(P, t.off);
		cls_val_assign(P->c, name, nl, &t.w, 0, t.w.len, 1);
	}
}

/* NAME[ ... ] in a position where an assignment is acceptable: bash reads the subscript as a
 * bracket pair, across blanks and operators, with P->pos at the '['. */
static int parse_subscript(struct parser *P, struct wbuf *b, unsigned *flags)
{
	size_t open = P->pos;
	int depth = 0;
	for (;;) {
		if (P->pos >= P->len)
			return ERR(P, open, "unterminated [");
		char ch = P->s[P->pos];
		if (ch == '\\') {
			/* bash removes it first: a subscript is arithmetic, `a[x\<newline>y]' names xy */
			if (at(P, P->pos + 1) == '\n')
				return ERR(P, P->pos, "a backslash-newline in a subscript: refused");
			size_t k = P->pos + 1 < P->len ? 2 : 1;
			if (wb_put(P, b, P->s + P->pos, k) == -1)
				return -1;
			P->pos += k;
			continue;
		}
		if (ch == '\'') {
			/* an indexed array's subscript is arithmetic, where bash expands what single
			 * quotes hold: a['$(git push)']=1 runs git push (black-box finding A6) */
			if (squote_expanded(P, 1, "in a subscript") == -1)
				return -1;
			*flags |= CLS_W_QUOTED;
			continue;
		}
		if (ch == '"') {
			P->pos++;
			if (parse_dquote(P, b, flags) == -1)
				return -1;
			continue;
		}
		if (ch == '$') {
			if (dollar_arith(P, b, flags, 0) == -1)
				return -1;
			continue;
		}
		if (ch == '`') {
			if (parse_backtick(P, b, flags) == -1)
				return -1;
			continue;
		}
		if (ch == '[')
			depth++;
		if (wb_putc(P, b, ch) == -1)
			return -1;
		P->pos++;
		if (ch == ']' && --depth == 0)
			return 0;
	}
}

/* Whether text may hold a brace expansion: a `{' followed by a `,' or `..' before a `}'
 * (quoting is not known here, so a quoted comma counts too). */
int cls_brace_expands(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != '{')
			continue;
		int depth = 0, sep = 0;
		for (size_t k = i; k < n; k++) {
			if (p[k] == '{')
				depth++;
			else if (p[k] == '}' && --depth == 0)
				break;
			else if (p[k] == ',' || (p[k] == '.' && k + 1 < n && p[k + 1] == '.'))
				sep = 1;
			if (sep && depth > 0) {
				for (size_t m = k; m < n; m++)
					if (p[m] == '}')
						return 1;
				break;
			}
		}
	}
	return 0;
}

static int is_name_so_far(const struct wbuf *b, unsigned flags)
{
	if (flags != 0 || b->n == 0 || !is_name_start(b->p[0]))
		return 0;
	for (size_t i = 1; i < b->n; i++)
		if (!is_name_char(b->p[i]))
			return 0;
	return 1;
}

/* Reads one word starting at P->pos into t. */
static int read_word(struct parser *P, struct token *t)
{
	struct wbuf b;
	unsigned flags = 0;
	int lbracket = 0, lbrace = 0, assign_sub = 0;
	size_t start = P->pos;
	wb_init(&b);
	/* this word's expansions (values.c); a substitution inside reads words of its own */
	struct cls_dep *sdeps = P->deps, **stail = P->dtail;
	P->deps = NULL;
	P->dtail = &P->deps;
	while (P->pos < P->len) {
		char ch = P->s[P->pos];
		if (is_meta(ch)) {
			if ((ch == '<' || ch == '>') && at(P, P->pos + 1) == '(') {
				size_t open = P->pos;
				P->pos += 2;
				/* its value is a path, /dev/fd/63 */
				if (parse_subst(P, open, &flags, NULL) == -1 ||
				        wb_dep(P, &b, &flags, CLS_DEP_VAR, "-", 1, 1) == -1)
					return -1;
				continue;
			}
			if (ch == '(' && P->assign_ok && is_assign_prefix(&b, flags)) {
				/* PROMPT_COMMAND=(...), BASH_CMDS+=(...), ...: the array's elements
				 * are commands or programs (black-box findings A9, A10) */
				if (cls_hook_name(b.p, b.n))
					return ERR(P, start,
					        "PS0-PS4, PROMPT_COMMAND, BASH_CMDS or BASH_ALIASES as a "
					        "compound assignment: refused");
				size_t nl = b.n - 1 - (b.p[b.n - 2] == '+');
				char *name = cls_strdup(P->c, b.p, nl, P->base + start);
				if (name == NULL || parse_array(P, name, nl) == -1)
					return -1;
				flags |= CLS_W_QUOTED; /* keep it from being read as a reserved word
				                        */
				continue;
			}
			break;
		}
		switch (ch) {
		case '\\':
			if (P->pos + 1 >= P->len) {
				P->pos++;
				if (wb_putc(P, &b, '\\') == -1)
					return -1;
				break;
			}
			if (P->s[P->pos + 1] != '\n') {
				flags |= CLS_W_QUOTED;
				if (wb_putc(P, &b, P->s[P->pos + 1]) == -1)
					return -1;
			}
			P->pos += 2;
			break;
		case '\'': {
			const char *q = memchr(P->s + P->pos + 1, '\'', P->len - P->pos - 1);
			if (q == NULL)
				return ERR(P, P->pos, "unterminated single quote");
			size_t qs = P->pos + 1, qe = (size_t)(q - P->s);
			if (wb_put(P, &b, P->s + qs, qe - qs) == -1)
				return -1;
			flags |= CLS_W_QUOTED;
			P->pos = qe + 1;
			break;
		}
		case '"':
			P->pos++;
			if (parse_dquote(P, &b, &flags) == -1)
				return -1;
			break;
		case '$':
			if (parse_dollar(P, &b, &flags, 0) == -1)
				return -1;
			break;
		case '`':
			if (parse_backtick(P, &b, &flags) == -1)
				return -1;
			break;
		case '*':
		case '?':
			flags |= CLS_W_GLOB;
			if (wb_putc(P, &b, ch) == -1)
				return -1;
			P->pos++;
			break;
		case '[':
			/* bash reads NAME[...] as one subscript only where an assignment may start
			 * a command; a declare-like builtin's argument is read as any word, where
			 * `;', `|', `&', blanks and parentheses end it (parity fuzz: `export
			 * E[;git push;]' ran git push while it was read as one word) */
			if (P->assign_ok && !P->assign_args && is_name_so_far(&b, flags)) {
				assign_sub = 1;
				if (parse_subscript(P, &b, &flags) == -1)
					return -1;
				flags |= CLS_W_GLOB; /* as a command word it is a pattern, never a
				                        name */
				break;
			}
			lbracket = 1;
			if (wb_putc(P, &b, ch) == -1)
				return -1;
			P->pos++;
			break;
		case ']':
			if (lbracket)
				flags |= CLS_W_GLOB;
			if (wb_putc(P, &b, ch) == -1)
				return -1;
			P->pos++;
			break;
		case '{':
			lbrace = 1;
			if (wb_putc(P, &b, ch) == -1)
				return -1;
			P->pos++;
			break;
		case '}':
			if (lbrace)
				flags |= CLS_W_BRACE;
			if (wb_putc(P, &b, ch) == -1)
				return -1;
			P->pos++;
			break;
		default:
			if (wb_putc(P, &b, ch) == -1)
				return -1;
			P->pos++;
			break;
		}
	}
	if (P->pos == start)
		return ERR(P, start, "syntax error near `%c'", at(P, start));
	/* Brace expansion in a word with quoted parts: bash splits it into words whose text this
	 * word's does not show (`eval {git\ push,}' runs git push, black-box round 7), so its
	 * value is not known here, as for an expansion. */
	if ((flags & CLS_W_BRACE) && (flags & CLS_W_QUOTED) && cls_brace_expands(b.p, b.n))
		flags |= CLS_W_EXP;
	/* a literal $( or backtick needs quoting or a backslash: unquoted, it is a substitution */
	if (flags & CLS_W_QUOTED)
		cls_note_latent(P->c, b.p, b.n, P->base + start);
	char *text = cls_strdup(P->c, b.p, b.n, P->base + start);
	if (text == NULL)
		return -1;
	t->kind = T_WORD;
	t->off = start;
	t->w.s = text;
	t->w.len = b.n;
	t->w.flags = flags;
	t->w.off = P->base + start;
	t->w.deps = P->deps;
	t->doc = NULL;
	/* $_ is the last word of the command before: any word may be it */
	if ((flags & CLS_W_GLOB) && !assign_sub)
		cls_val_set(P->c, "_", 1, CLS_VK_TEXT);
	else if (P->deps != NULL)
		cls_val_assign(P->c, "_", 1, &t->w, 0, b.n, 0);
	P->deps = sdeps;
	P->dtail = stail;
	return 0;
}

/* Scans an unquoted here-doc body (already delimited) for substitutions. */
static int scan_body(struct parser *P, size_t from, size_t to, struct cls_doc *doc)
{
	struct parser sub;
	memset(&sub, 0, sizeof sub);
	sub.c = P->c;
	sub.s = P->s + from;
	sub.len = to - from;
	sub.base = P->base + from;
	sub.ptail = &sub.pending;
	sub.tail = P->tail;
	sub.heredoc = 1;
	struct wbuf b;
	unsigned fl = 0;
	wb_init(&b);
	while (sub.pos < sub.len) {
		char ch = sub.s[sub.pos];
		if (ch == '\\') {
			doc->nonstatic =
			        1; /* its text would need unescaping; nobody needs it exactly */
			if (sub.pos + 1 < sub.len && (sub.s[sub.pos + 1] == '`' ||
			                                     (sub.s[sub.pos + 1] == '$' &&
			                                             at(&sub, sub.pos + 2) == '(')))
				cls_note_latent(P->c, "$(", 2, sub.base + sub.pos);
			sub.pos += sub.pos + 1 < sub.len ? 2 : 1;
		} else if (ch == '$') {
			if (parse_dollar(&sub, &b, &fl, 1) == -1)
				return -1;
		} else if (ch == '`') {
			if (parse_backtick(&sub, &b, &fl) == -1)
				return -1;
		} else {
			sub.pos++;
		}
		b.n = 0;
	}
	if (fl & CLS_W_EXP)
		doc->nonstatic = 1;
	if (fl & CLS_W_DL)
		doc->download = 1;
	P->tail = sub.tail;
	return 0;
}

/* Reads the bodies of the pending here-docs, starting at P->pos (just past a newline). */
static int read_heredocs(struct parser *P)
{
	while (P->pending != NULL) {
		struct heredoc *h = P->pending;
		size_t body = P->pos, end = 0;
		int found = 0;
		while (P->pos < P->len) {
			size_t ls = P->pos;
			const char *nl = memchr(P->s + ls, '\n', P->len - ls);
			size_t le = nl ? (size_t)(nl - P->s) : P->len;
			size_t cs = ls;
			if (h->strip)
				while (cs < le && P->s[cs] == '\t')
					cs++;
			P->pos = nl ? le + 1 : le;
			/* bash removes a backslash-newline in an unquoted here-doc before it compares
			 * a line with the delimiter and before it expands the body: `EO\<newline>F'
			 * ends it, `$\<newline>(...)' is a substitution (black-box finding A4).
			 * Refused, not modelled. */
			if (!h->quoted && nl != NULL && le > ls && P->s[le - 1] == '\\')
				return ERR(P, le - 1,
				        "a backslash-newline in an unquoted here-document: refused");
			if (le - cs == h->dlen && memcmp(P->s + cs, h->delim, h->dlen) == 0) {
				end = ls;
				found = 1;
				break;
			}
			/* In a substitution bash also ends the body at a line that begins with the
			 * delimiter and holds a `)', and reads the rest of that line as commands
			 * (black-box finding: `echo $(cat <<E', `E git push #)', `E', `)' on four
			 * lines ran git push).  Refused, not modelled. */
			if (P->subst > 0 && le - cs > h->dlen &&
			        memcmp(P->s + cs, h->delim, h->dlen) == 0)
				return ERR(P, cs,
				        "a here-document line in a substitution that begins with "
				        "the delimiter: refused");
		}
		if (!found)
			return ERR(P, h->doc->off - P->base,
			        "here-document reaches the end of the input");
		h->doc->s = cls_strdup(P->c, P->s + body, end - body, P->base + body);
		if (h->doc->s == NULL)
			return -1;
		h->doc->len = end - body;
		if (h->quoted)
			cls_note_latent(P->c, h->doc->s, h->doc->len, P->base + body);
		else if (scan_body(P, body, end, h->doc) == -1)
			return -1;
		h->doc->ready = 1;
		P->pending = h->next;
	}
	P->ptail = &P->pending;
	return 0;
}

static void set_op(struct token *t, enum redir_op op, int fd, size_t adv, struct parser *P)
{
	t->kind = T_REDIR;
	t->op = op;
	t->fd = fd;
	P->pos += adv;
}

/* Lexes the next token into t. */
static int lex_word(struct parser *P, struct token *t)
{
	for (;;) {
		while (P->pos < P->len) {
			char ch = P->s[P->pos];
			if (ch == ' ' || ch == '\t')
				P->pos++;
			else if (ch == '\\' && at(P, P->pos + 1) == '\n')
				P->pos += 2;
			else
				break;
		}
		if (P->pos < P->len && P->s[P->pos] == '#') {
			/* inside [[ ]] a `#' after =~ or in a pattern's parentheses is a character
			 * to bash (black-box round 7: `[[ x =~ (#) ]]; git push<newline>) ]]' ran
			 * git push): refused, not modelled */
			if (P->in_dbracket)
				return ERR(P, P->pos, "a `#' inside [[ ]]: refused");
			/* a comment: only here, at the start of a word; no continuation inside it
			 */
			const char *nl = memchr(P->s + P->pos, '\n', P->len - P->pos);
			P->pos = nl ? (size_t)(nl - P->s) : P->len;
			continue;
		}
		break;
	}
	t->off = P->pos;
	t->doc = NULL;
	t->fd = -1;
	int dup = P->after_dup;
	P->after_dup = 0;
	if (P->pos >= P->len) {
		if (P->want_delim)
			return ERR(P, P->delim_op, "here-document operator without a delimiter");
		if (P->pending != NULL)
			return ERR(P, P->pending->doc->off - P->base,
			        "here-document reaches the end of the input");
		t->kind = T_EOF;
		return 0;
	}
	char ch = P->s[P->pos];
	size_t n1 = skip_cont(P, P->pos + 1);
	char c1 = at(P, n1);
	char r1 = at(P, P->pos + 1);
	if (P->want_delim && (is_meta(ch) && !((ch == '<' || ch == '>') && r1 == '(')))
		return ERR(P, P->delim_op, "here-document operator without a delimiter");
	switch (ch) {
	case '\n':
		/* nor does a newline in a regular expression's or a pattern's parentheses start a
		 * pending here-document's body */
		if (P->in_dbracket && P->pending != NULL)
			return ERR(P, P->pos,
			        "a newline inside [[ ]] while a here-document is pending: refused");
		P->pos++;
		t->kind = T_NL;
		return read_heredocs(P);
	case ';':
		if (c1 == ';') {
			size_t n2 = skip_cont(P, n1 + 1);
			P->pos = at(P, n2) == '&' ? n2 + 1 : n1 + 1;
			t->kind = T_DSEMI;
		} else if (c1 == '&') {
			P->pos = n1 + 1;
			t->kind = T_DSEMI;
		} else {
			P->pos++;
			t->kind = T_SEMI;
		}
		return 0;
	case '&':
		if (c1 == '&') {
			P->pos = n1 + 1;
			t->kind = T_AND_IF;
		} else if (c1 == '>') {
			/* sh (dash) reads `&' and then `>' (black-box round 8) */
			if (P->c->sh_mode)
				return ERR(P, P->pos, "&> in a script sh runs: refused");
			size_t n2 = skip_cont(P, n1 + 1);
			P->pos = at(P, n2) == '>' ? n2 + 1 : n1 + 1;
			t->kind = T_REDIR;
			t->op = R_OUT;
		} else {
			P->pos++;
			t->kind = T_AMP;
		}
		return 0;
	case '|':
		if (c1 == '|') {
			P->pos = n1 + 1;
			t->kind = T_OR_IF;
		} else if (c1 == '&') {
			if (P->c->sh_mode)
				return ERR(P, P->pos, "|& in a script sh runs: refused");
			P->pos = n1 + 1;
			t->kind = T_PIPE_AMP;
		} else {
			P->pos++;
			t->kind = T_PIPE;
		}
		return 0;
	case '(':
		P->pos++;
		t->kind = T_LPAREN;
		return 0;
	case ')':
		P->pos++;
		t->kind = T_RPAREN;
		return 0;
	case '<':
		if (r1 == '(')
			break;
		if (c1 == '<') {
			size_t n2 = skip_cont(P, n1 + 1);
			char c2 = at(P, n2);
			if (c2 == '<') {
				P->pos = n2 + 1;
				set_op(t, R_HERESTR, -1, 0, P);
			} else {
				P->pos = c2 == '-' ? n2 + 1 : n1 + 1;
				set_op(t, R_HEREDOC, -1, 0, P);
				P->want_delim = 1;
				P->want_strip = c2 == '-';
				P->delim_op = t->off;
			}
		} else if (c1 == '&') {
			P->pos = n1 + 1;
			set_op(t, R_DUPIN, -1, 0, P);
			P->after_dup = 1;
		} else if (c1 == '>') {
			P->pos = n1 + 1;
			set_op(t, R_RW, -1, 0, P);
		} else {
			set_op(t, R_IN, -1, 1, P);
		}
		return 0;
	case '>':
		if (r1 == '(')
			break;
		P->pos = (c1 == '>' || c1 == '&' || c1 == '|') ? n1 + 1 : P->pos + 1;
		set_op(t, R_OUT, -1, 0, P);
		P->after_dup = c1 == '&';
		return 0;
	default:
		break;
	}
	/* A number or {name} right before a redirection operator is its fd. */
	if (ch >= '0' && ch <= '9') {
		size_t i = P->pos;
		while (i < P->len && P->s[i] >= '0' && P->s[i] <= '9')
			i++;
		/* however long: bash lexes it as a number (so `>1>x' is an error) */
		if (i < P->len && (P->s[i] == '<' || P->s[i] == '>') && at(P, i + 1) != '(') {
			int fd = 0;
			for (size_t k = P->pos; k < i; k++)
				if (fd < 1000000)
					fd = fd * 10 + (P->s[k] - '0');
			P->pos = i;
			if (lex_word(P, t) == -1)
				return -1;
			t->fd = fd;
			return 0;
		}
	} else if (ch == '{' && is_name_start(c1)) {
		size_t i = P->pos + 1;
		while (i < P->len && is_name_char(P->s[i]))
			i++;
		if (at(P, i) == '}' && (at(P, i + 1) == '<' || at(P, i + 1) == '>') &&
		        at(P, i + 2) != '(') {
			P->pos = i + 1;
			if (lex_word(P, t) == -1)
				return -1;
			t->fd = 10; /* an allocated fd: never standard input */
			return 0;
		}
	}
	int delim = P->want_delim;
	P->want_delim = 0;
	if (dup && ch == '-') {
		/* bash's reader returns a `-' right after <& or >& as a token of its own, so
		 * `git >&-push' closes standard output and runs git push (parity fuzz finding:
		 * `{ h;}>&-u' is a syntax error to bash, a stray word after a group) */
		size_t len = P->len;
		P->len = P->pos + 1;
		int r = read_word(P, t);
		P->len = len;
		return r;
	}
	if (read_word(P, t) == -1)
		return -1;
	if (delim) {
		/* A delimiter is taken literally; expansions in it are not worth modelling. */
		if (t->w.flags & CLS_W_EXP)
			return ERR(P, t->off, "here-document delimiter with an expansion");
		struct heredoc *h = cls_alloc(P->c, sizeof *h, P->base + t->off);
		struct cls_doc *d = cls_alloc(P->c, sizeof *d, P->base + t->off);
		if (h == NULL || d == NULL)
			return -1;
		memset(d, 0, sizeof *d);
		d->off = P->base + P->delim_op;
		h->next = NULL;
		h->doc = d;
		h->delim = t->w.s;
		h->dlen = t->w.len;
		h->strip = P->want_strip;
		h->quoted = (t->w.flags & CLS_W_QUOTED) != 0;
		*P->ptail = h;
		P->ptail = &h->next;
		t->doc = d;
	}
	return 0;
}

static int is_assignment(const struct cls_word *w);

/* Whether a word after token t could be an assignment, as bash decides it. */
static void update_assign_ok(struct parser *P, const struct token *t)
{
	static const char *const openers[] = {
	        "if", "then", "else", "elif", "do", "while", "until", "{", "!", "time", NULL};
	if (t->kind == T_REDIR) {
		P->assign_saved = P->assign_ok;
		P->redir_target = 1;
		P->assign_ok = 0;
		P->rw_ok = 0;
		return;
	}
	if (t->kind != T_WORD) {
		P->assign_ok = 1;
		P->assign_args = 0;
		P->redir_target = 0;
		P->cmd_word = 0;
		P->rw_ok = 1;
		return;
	}
	/* After a redirection bash takes an assignment (and NAME[...] as one token) only while
	 * the command has been nothing but redirections: `>f a[x y]=1' is one assignment, but in
	 * `a=1 >f b[;git push;]=1' the `;' ends a word and git push runs (found by probing the
	 * neighbours of a parity fuzz finding).  A declare-like builtin's arguments stay
	 * assignments. */
	if (P->redir_target) {
		P->redir_target = 0;
		P->assign_ok = P->assign_args || (P->assign_saved && !P->cmd_word);
		return;
	}
	int coproc_first = P->coproc_first;
	P->coproc_first = 0;
	int for_name = P->for_name;
	P->for_name = 0;
	int plain = !(t->w.flags & (CLS_W_QUOTED | CLS_W_EXP));
	/* a reserved word is one only where a command may start, or right after the NAME of
	 * `for NAME do' or `function NAME {': an argument `do' or `{' opens nothing, and bash reads the next word as an
	 * argument, with no subscript spanning blanks (parity fuzz: `echo { a[x; git push;
	 * b]=1' ran git push while it was read as one assignment) */
	int opener = 0;
	if (plain && (P->rw_ok ||
	                     (for_name == 2 && (strcmp(t->w.s, "do") == 0 ||
	                                               strcmp(t->w.s, "{") == 0))))
		for (size_t i = 0; openers[i] != NULL; i++)
			if (t->w.s[0] == openers[i][0] && strcmp(t->w.s, openers[i]) == 0)
				opener = 1;
	if (plain && P->rw_ok &&
	        (strcmp(t->w.s, "for") == 0 || strcmp(t->w.s, "select") == 0 ||
	                strcmp(t->w.s, "function") == 0))
		P->for_name = 1;
	else if (for_name == 1)
		P->for_name = 2;
	/* A command starts after `coproc`, and bash reads the word after that first one as a
	 * command start too (the first may be the coprocess's NAME): `coproc a[b c]=1 git push`
	 * runs git push, and `coproc x a[b` is a syntax error to bash (fuzz finding). */
	if (P->rw_ok && !(t->w.flags & (CLS_W_QUOTED | CLS_W_EXP)) &&
		strcmp(t->w.s, "coproc") == 0) {
		opener = 1;
		P->coproc_first = 1;
	}
	/* after declare-like builtins every argument may be an assignment (NAME=(...) too) */
	static const char *const assigners[] = {
	        "declare", "typeset", "local", "export", "readonly", NULL};
	if (P->assign_ok && !(t->w.flags & (CLS_W_QUOTED | CLS_W_EXP)))
		for (size_t i = 0; assigners[i] != NULL; i++)
			if (t->w.s[0] == assigners[i][0] && strcmp(t->w.s, assigners[i]) == 0)
				P->assign_args = 1;
	P->assign_ok = opener || P->assign_args || (P->assign_ok && is_assignment(&t->w));
	P->cmd_word = !opener;
	P->rw_ok = opener;
	if (coproc_first && !is_assignment(&t->w)) {
		P->assign_ok = 1;
		P->rw_ok = 1;
	}
}

static int peek(struct parser *P, struct token **t)
{
	if (!P->have) {
		if (lex_word(P, &P->tok) == -1)
			return -1;
		P->have = 1;
		update_assign_ok(P, &P->tok);
	}
	*t = &P->tok;
	return 0;
}

static void consume(struct parser *P)
{
	P->have = 0;
}

static int is_word(const struct token *t, const char *w)
{
	/* the first byte first: this runs for every word against every reserved word */
	return t->kind == T_WORD && t->w.s[0] == w[0] &&
	       !(t->w.flags & (CLS_W_QUOTED | CLS_W_EXP)) && strcmp(t->w.s, w) == 0;
}

static int in_stops(const struct token *t, const char *const *stops)
{
	if (stops == NULL || t->kind != T_WORD)
		return 0;
	for (size_t i = 0; stops[i] != NULL; i++)
		if (is_word(t, stops[i]))
			return 1;
	return 0;
}

static const char *tok_name(const struct token *t)
{
	switch (t->kind) {
	case T_EOF:
		return "end of input";
	case T_WORD:
		return t->w.s;
	case T_NL:
		return "newline";
	case T_SEMI:
		return ";";
	case T_AMP:
		return "&";
	case T_AND_IF:
		return "&&";
	case T_OR_IF:
		return "||";
	case T_PIPE:
		return "|";
	case T_PIPE_AMP:
		return "|&";
	case T_LPAREN:
		return "(";
	case T_RPAREN:
		return ")";
	case T_DSEMI:
		return ";;";
	case T_REDIR:
		return "redirection";
	}
	return "token";
}

static int unexpected(struct parser *P, const struct token *t)
{
	if (t->kind == T_EOF)
		return ERR(P, t->off, "syntax error: unexpected end of input");
	char name[48];
	snprintf(name, sizeof name, "%s", tok_name(t));
	return ERR(P, t->off, "syntax error near `%s'", name);
}

static int expect_word(struct parser *P, const char *w)
{
	struct token *t;
	if (peek(P, &t) == -1)
		return -1;
	if (!is_word(t, w))
		return unexpected(P, t);
	consume(P);
	return 0;
}

static int skip_newlines(struct parser *P)
{
	struct token *t;
	for (;;) {
		if (peek(P, &t) == -1)
			return -1;
		if (t->kind != T_NL)
			return 0;
		consume(P);
	}
}

/* ---- grammar ---------------------------------------------------------------------------- */

/* Marks every command recorded since *from with flags (and a here-doc for standard input). */
static void mark_cmds(struct cls_cmd *from, unsigned flags, struct cls_doc *doc)
{
	for (struct cls_cmd *c = from; c != NULL; c = c->next) {
		c->flags |= flags;
		if (doc != NULL && c->doc == NULL)
			c->doc = doc;
	}
}

struct redirs {
	unsigned flags;      /* CLS_C_STDIN when fd 0 was redirected */
	struct cls_doc *doc; /* here-doc or here-string on fd 0 */
	struct cls_cmd *cmd; /* the simple command they belong to, NULL for a compound */
};

/* One redirection, the operator token being current. */
static int parse_redir(struct parser *P, struct redirs *r)
{
	struct token *t;
	if (peek(P, &t) == -1)
		return -1;
	enum redir_op op = t->op;
	int fd = t->fd;
	size_t off = t->off;
	consume(P);
	if (peek(P, &t) == -1)
		return -1;
	if (t->kind != T_WORD)
		return unexpected(P, t);
	if (op != R_HEREDOC && op != R_HERESTR)
		cls_note_redir(P->c, &t->w);
	/* a file written (a process substitution is a pipe): what a simple command prints on
	 * fd 1 may be known when the file is run, anything else is not (writes.c) */
	if ((op == R_OUT || op == R_RW) &&
	        !(t->w.off >= P->base && t->w.off + 1 < P->base + P->len &&
	                (P->s[t->w.off - P->base] == '>' || P->s[t->w.off - P->base] == '<') &&
	                P->s[t->w.off - P->base + 1] == '('))
		cls_note_write(P->c, &t->w,
		        op == R_OUT && (fd == -1 || fd == 1) && r->cmd ? CLS_WK_CMD : CLS_WK_UNKNOWN,
		        NULL, NULL, 0, op == R_OUT ? r->cmd : NULL);
	int on_stdin = fd == -1 || fd == 0;
	if (op == R_OUT)
		on_stdin = fd == 0;
	if (op == R_OUT || op == R_RW)
		r->flags |= CLS_C_OUTREDIR;
	if (on_stdin && op != R_OUT)
		r->flags |= CLS_C_STDIN;
	if (on_stdin && op != R_OUT && (t->w.flags & CLS_W_DL))
		r->flags |= CLS_C_DLIN; /* < <(curl ...), <<< "$(curl ...)" */
	if (on_stdin && op != R_OUT && (t->w.flags & CLS_W_EXP))
		r->flags |= CLS_C_STDINX; /* < <(...): xargs' words from the line */
	if (op == R_HEREDOC && on_stdin) {
		r->doc = t->doc;
		if (t->doc != NULL && t->doc->download)
			r->flags |= CLS_C_DLIN;
	} else if (op == R_HERESTR && on_stdin) {
		struct cls_doc *d = cls_alloc(P->c, sizeof *d, P->base + off);
		if (d == NULL)
			return -1;
		d->s = t->w.s;
		d->len = t->w.len;
		d->nonstatic = (t->w.flags & CLS_W_EXP) != 0;
		d->ready = 1;
		d->off = P->base + off;
		r->doc = d;
	}
	consume(P);
	return 0;
}

static int parse_trailing_redirs(struct parser *P, struct cls_cmd **from)
{
	struct redirs r = {0, NULL, NULL};
	struct token *t;
	int any = 0;
	for (;;) {
		if (peek(P, &t) == -1)
			return -1;
		if (t->kind != T_REDIR)
			break;
		if (parse_redir(P, &r) == -1)
			return -1;
		any = 1;
	}
	/* After a compound's redirection bash reads no reserved word: `{ a; } >x }` leaves the
	 * brace open, and any word there is a syntax error (fuzz finding) */
	if (any && t->kind == T_WORD)
		return unexpected(P, t);
	if (r.flags || r.doc)
		mark_cmds(*from, r.flags, r.doc);
	return 0;
}

/* Grows an arena array of words. */
static int push_word(struct parser *P, struct cls_cmd *cmd, size_t *cap, const struct cls_word *w)
{
	if (cmd->argc == *cap) {
		size_t ncap = *cap ? *cap * 2 : 8;
		struct cls_word *nv = cls_alloc(P->c, ncap * sizeof *nv, w->off);
		if (nv == NULL)
			return -1;
		if (cmd->argc)
			memcpy(nv, cmd->argv, cmd->argc * sizeof *nv);
		cmd->argv = nv;
		*cap = ncap;
	}
	cmd->argv[cmd->argc++] = *w;
	return 0;
}

static int is_assignment(const struct cls_word *w)
{
	/* NAME=... or NAME+=... or NAME[...]=..., the name unquoted */
	const char *s = w->s;
	if (!is_name_start(s[0]))
		return 0;
	size_t i = 1;
	while (i < w->len && is_name_char(s[i]))
		i++;
	if (i < w->len && s[i] == '[') {
		const char *rb = memchr(s + i, ']', w->len - i);
		if (rb == NULL)
			return 0;
		i = (size_t)(rb - s) + 1;
	}
	if (i < w->len && s[i] == '+')
		i++;
	return i < w->len && s[i] == '=';
}

/* A prompt's octal escape at s[i] (after its backslash): bash takes three characters and
 * reads them as octal digits, keeping the low byte.  Returns that byte and sets *end past the
 * digits; -1 when no digit follows; -2 when fewer than three do before the end (bash skips
 * three characters all the same, swallowing what follows: not modelled). */
static int prompt_octal(const char *s, size_t len, size_t i, size_t *end)
{
	int v = 0;
	size_t k = i;
	while (k < len && k < i + 3 && s[k] >= '0' && s[k] <= '7')
		v = v * 8 + (s[k++] - '0');
	if (k == i)
		return -1;
	if (k < i + 3 && k < len)
		return -2;
	*end = k;
	return v & 0xff;
}

/* Whether the prompt escape at s[i] (after its backslash) may make a substitution: a `$', a
 * backquote or a parenthesis in octal, a short octal escape, or \[ and \] (which bash
 * removes outside readline: `$\[(git push)' is `$(git push)'). */
static int prompt_escape_active(const char *s, size_t len, size_t i)
{
	size_t end;
	int v = prompt_octal(s, len, i, &end);
	return v == -2 || v == '$' || v == '`' || v == '(' || v == ')' ||
	       (i < len && (s[i] == '[' || s[i] == ']'));
}

void cls_note_latent(struct cls_ctx *c, const char *s, size_t len, size_t off)
{
	if (c->latent)
		return;
	for (size_t i = 0; i < len; i++)
		if (s[i] == '`' || (s[i] == '$' && i + 1 < len && s[i + 1] == '(') ||
		        (s[i] == '\\' && prompt_escape_active(s, len, i + 1))) {
			c->latent = 1;
			c->latent_off = off;
			return;
		}
}

int cls_run_prompt(struct cls_ctx *c, const char *s, size_t len, size_t off)
{
	if (cls_run_expansions(c, s, len, off) == -1)
		return -1;
	if (memchr(s, '\\', len) == NULL)
		return 0;
	/* bash decodes the escapes first: \\ is one backslash, \NNN the byte of three octal
	 * digits, \[ and \] are removed (black-box round 7: `PS4='$\050git push)'' and
	 * `$\[(git push)' ran git push); the others become text that holds no `$', backquote
	 * or parenthesis (\$ and the names bash puts in are quoted) */
	char *d = cls_alloc(c, len + 1, off);
	if (d == NULL)
		return -1;
	size_t n = 0;
	/* where in d an escape whose text bash puts in (\D{...}, \s, \W, ...) stands */
	char *other = cls_alloc(c, len + 1, off);
	if (other == NULL)
		return -1;
	memset(other, 0, len + 1);
	for (size_t i = 0; i < len; i++) {
		size_t end;
		int v;
		if (s[i] == '\\' && i + 1 < len && isalpha((unsigned char)s[i + 1]))
			other[n] = 1; /* \n and \e too: a newline there ends a command */
		if (s[i] == '\\' && i + 1 < len && s[i + 1] == '\\') {
			d[n++] = '\\';
			i++;
		} else if (s[i] == '\\' && i + 1 < len && (s[i + 1] == '[' || s[i + 1] == ']')) {
			i++;
		} else if (s[i] == '\\' && (v = prompt_octal(s, len, i + 1, &end)) != -1) {
			if (v == -2)
				return cls_refuse(c, off + i,
				        "a prompt's octal escape with fewer than three digits: "
				        "refused");
			d[n++] = (char)v;
			i = end - 1;
		} else {
			d[n++] = s[i];
		}
	}
	d[n] = '\0';
	/* such text is not quoted against `(' or `{': right after a `$', or inside a `$( )',
	 * `${ }' or backquotes, it is code (black-box round 8: `PS4='$\D{(}git push)'' ran git
	 * push).  The depth is counted roughly; a closing character in the text only makes it
	 * stricter. */
	int depth = 0, bq = 0;
	for (size_t i = 0; i < n; i++) {
		if (other[i] && (depth > 0 || bq || (i > 0 && d[i - 1] == '$')))
			return cls_refuse(c, off,
			        "a prompt escape whose text bash puts in (\\D{...}, \\s, \\W, ...) "
			        "after a `$' or inside a substitution: refused");
		if (d[i] == '$' && i + 1 < n && (d[i + 1] == '(' || d[i + 1] == '{')) {
			depth++;
			i++;
		} else if (d[i] == '`') {
			bq = !bq;
		} else if ((d[i] == ')' || d[i] == '}') && depth > 0) {
			depth--;
		} else if (d[i] == '(' && depth > 0) {
			depth++;
		}
	}
	if (n == len && memcmp(d, s, len) == 0)
		return 0;
	return cls_run_expansions(c, d, n, off);
}

int cls_run_expansions(struct cls_ctx *c, const char *s, size_t len, size_t off)
{
	if (cls_enter(c, off) == -1)
		return -1;
	struct cls_cmd *list = NULL;
	struct parser sub;
	memset(&sub, 0, sizeof sub);
	sub.c = c;
	sub.s = s;
	sub.len = len;
	sub.base = off;
	sub.ptail = &sub.pending;
	sub.tail = &list;
	if (check_source(&sub) == -1)
		return -1;
	struct wbuf b;
	unsigned fl = 0;
	wb_init(&b);
	while (sub.pos < sub.len) {
		char ch = sub.s[sub.pos];
		if (ch == '\\') {
			sub.pos += sub.pos + 1 < sub.len ? 2 : 1;
		} else if (ch == '$') {
			if (parse_dollar(&sub, &b, &fl, 1) == -1)
				return -1;
		} else if (ch == '`') {
			if (parse_backtick(&sub, &b, &fl) == -1)
				return -1;
		} else {
			sub.pos++;
		}
		b.n = 0;
	}
	/* A prompt is expanded wherever the shell prints it: its substitutions share whatever
	 * standard input the shell has then (a here-string that feeds bash its script, a pipe),
	 * so each runs as with a terminal and as with input (oracle fuzz finding: httpie sends
	 * its input as a body, http:write). */
	for (struct cls_cmd *cmd = list; cmd != NULL; cmd = cmd->next)
		if (cls_run_cmd(c, cmd->argv, cmd->argc, cmd->flags, cmd->doc) == -1 ||
		        cls_run_cmd(c, cmd->argv, cmd->argc, cmd->flags | CLS_C_STDIN, cmd->doc) == -1)
			return -1;
	cls_leave(c);
	return 0;
}

static int is_compound_start(const struct token *t)
{
	static const char *const starts[] = {
	        "{", "(", "if", "while", "until", "for", "select", "case", "[[", NULL};
	return t->kind == T_LPAREN || in_stops(t, starts);
}

/* A function is defined: its positional parameters are any words of the line (values.c),
 * and a command of its name no longer prints what the command would. */
static void func_defined(struct parser *P, const struct cls_word *name)
{
	cls_val_define(P->c, name->s, name->len, name->off);
	val_copy(P->c, "@", 1, "_");
}

static int parse_function_body(struct parser *P)
{
	struct token *t;
	if (skip_newlines(P) == -1 || peek(P, &t) == -1)
		return -1;
	if (!is_compound_start(t))
		return unexpected(P, t);
	/* A defined function counts as run: its commands are recorded like any others. */
	return parse_command(P);
}

static int parse_simple(struct parser *P)
{
	struct cls_cmd *cmd = cls_alloc(P->c, sizeof *cmd, P->base + P->pos);
	if (cmd == NULL)
		return -1;
	memset(cmd, 0, sizeof *cmd);
	struct redirs r = {0, NULL, cmd};
	size_t cap = 0;
	struct token *t;
	struct cls_word *stmt = NULL;
	int nassign = 0, redirs = 0;
	for (;;) {
		if (peek(P, &t) == -1)
			return -1;
		if (t->kind == T_REDIR) {
			redirs = 1;
			if (parse_redir(P, &r) == -1)
				return -1;
			continue;
		}
		if (t->kind != T_WORD)
			break;
		if (cmd->argc == 0 && is_assignment(&t->w)) {
			struct cls_word aw = t->w;
			consume(P);
			if (cls_assignment(P->c, &aw) == -1)
				return -1;
			if (nassign++ == 0 && (stmt = cls_alloc(P->c, sizeof *stmt, aw.off)) != NULL)
				*stmt = aw;
			continue;
		}
		struct cls_word w = t->w;
		consume(P);
		if (cmd->argc == 0) {
			struct token *n;
			if (peek(P, &n) == -1)
				return -1;
			if (n->kind == T_LPAREN) {
				/* name () compound-command */
				consume(P);
				if (peek(P, &n) == -1)
					return -1;
				if (n->kind != T_RPAREN)
					return unexpected(P, n);
				consume(P);
				if (w.flags & CLS_W_EXP)
					return ERR(
					        P, w.off - P->base, "function name is not static");
				func_defined(P, &w);
				if (cls_enter(P->c, w.off) == -1 || parse_function_body(P) == -1)
					return -1;
				cls_leave(P->c);
				return 0;
			}
		}
		if (push_word(P, cmd, &cap, &w) == -1)
			return -1;
	}
	if (cmd->argc == 0) {
		/* assignments and redirections only: their substitutions are already recorded */
		if (nassign == 1 && !redirs)
			P->stmt = stmt;
		return 0;
	}
	if (++P->c->ncmds > CLS_MAX_COMMANDS)
		return ERR(P, cmd->argv[0].off - P->base, "more than %d simple commands",
		        CLS_MAX_COMMANDS);
	cmd->flags = r.flags | (nassign > 0 ? CLS_C_ASSIGN : 0);
	cmd->doc = r.doc;
	/* Substitutions inside the words were recorded first; the command follows them. */
	*P->tail = cmd;
	P->tail = &cmd->next;
	P->elem_cmd = cmd;
	P->elem_depth = P->c->depth;
	return 0;
}

static const char *const stop_then[] = {"then", NULL};
static const char *const stop_else[] = {"elif", "else", "fi", NULL};
static const char *const stop_fi[] = {"fi", NULL};
static const char *const stop_do[] = {"do", NULL};
static const char *const stop_done[] = {"done", NULL};
static const char *const stop_brace[] = {"}", NULL};
static const char *const stop_esac[] = {"esac", NULL};

/* A compound list that must not be empty, ending at one of stops. */
static int parse_body(struct parser *P, const char *const *stops)
{
	size_t n;
	struct token *t;
	if (parse_list(P, stops, &n) == -1 || peek(P, &t) == -1)
		return -1;
	if (n == 0 || !in_stops(t, stops))
		return unexpected(P, t);
	return 0;
}

static int parse_if(struct parser *P)
{
	struct token *t;
	consume(P); /* if */
	if (parse_body(P, stop_then) == -1)
		return -1;
	consume(P);
	for (;;) {
		if (parse_body(P, stop_else) == -1 || peek(P, &t) == -1)
			return -1;
		if (is_word(t, "fi")) {
			consume(P);
			return 0;
		}
		if (is_word(t, "else")) {
			consume(P);
			if (parse_body(P, stop_fi) == -1)
				return -1;
			consume(P);
			return 0;
		}
		consume(P); /* elif */
		if (parse_body(P, stop_then) == -1)
			return -1;
		consume(P);
	}
}

static int parse_while(struct parser *P)
{
	consume(P);
	if (parse_body(P, stop_do) == -1)
		return -1;
	consume(P);
	if (parse_body(P, stop_done) == -1)
		return -1;
	consume(P);
	return 0;
}

/* do ... done or { ... } after a for/select head. */
static int parse_loop_body(struct parser *P)
{
	struct token *t;
	if (skip_newlines(P) == -1 || peek(P, &t) == -1)
		return -1;
	if (is_word(t, "{")) {
		consume(P);
		if (parse_body(P, stop_brace) == -1)
			return -1;
		consume(P);
		return 0;
	}
	if (!is_word(t, "do"))
		return unexpected(P, t);
	consume(P);
	if (parse_body(P, stop_done) == -1)
		return -1;
	consume(P);
	return 0;
}

static int parse_for(struct parser *P)
{
	struct token *t;
	int is_for = is_word(&P->tok, "for");
	consume(P);
	if (peek(P, &t) == -1)
		return -1;
	if (is_for && t->kind == T_LPAREN && at(P, P->pos) == '(') {
		size_t open = t->off;
		P->c->evaluates = 1;
		consume(P);
		P->pos++;
		P->arith_semis = 0;
		int r = scan_arith(P, open);
		if (r == -1)
			return -1;
		/* bash wants exactly three expressions: init; test; step (fuzz finding) */
		if (r == 1 || P->arith_semis != 2)
			return ERR(P, open, "syntax error in for ((...))");
		if (peek(P, &t) == -1)
			return -1;
		if (t->kind == T_SEMI)
			consume(P);
		return parse_loop_body(P);
	}
	if (t->kind != T_WORD || (t->w.flags & CLS_W_EXP))
		return unexpected(P, t);
	const char *var = t->w.s;
	size_t vl = t->w.len;
	/* a loop over PS4, PROMPT_COMMAND, BASH_ENV, ...: each word becomes code bash runs later
	 * (`for PS4 in "\$(git push)"; do set -x; :; done' ran git push; a session finding) */
	if (cls_hook_name(var, vl))
		return ERR(P, t->off,
		        "a loop setting PS0-PS4, PROMPT_COMMAND, BASH_ENV, ENV, BASH_CMDS or "
		        "BASH_ALIASES");
	if (!is_for)
		cls_val_set(P->c, "REPLY", 5, CLS_VK_TEXT); /* select: what the user typed */
	consume(P);
	if (peek(P, &t) == -1)
		return -1;
	int newline = t->kind == T_NL;
	if (skip_newlines(P) == -1 || peek(P, &t) == -1)
		return -1;
	/* `for NAME { ...; }` is a syntax error to bash: `{` is a reserved word only after a
	 * newline or `;` there (fuzz finding) */
	if (!newline && is_word(t, "{"))
		return unexpected(P, t);
	if (is_word(t, "in")) {
		consume(P);
		/* select may leave its variable empty (a bad choice): not followed */
		if (is_for)
			cls_val_loop_begin(P->c, var, vl);
		for (;;) {
			if (peek(P, &t) == -1)
				return -1;
			if (t->kind != T_WORD)
				break;
			/* the loop's variable takes an expansion's or a glob's value */
			if (t->w.flags & (CLS_W_EXP | CLS_W_GLOB))
				note_dynamic(P, t->off);
			if (is_for)
				cls_val_loop_word(P->c, var, vl, &t->w);
			else
				cls_val_assign(P->c, var, vl, &t->w, 0, t->w.len, 1);
			consume(P);
		}
		if (t->kind != T_SEMI && t->kind != T_NL)
			return unexpected(P, t);
		consume(P);
	} else {
		note_dynamic(P, t->off); /* "$@" */
		val_copy(P->c, var, vl, "@");
		if (t->kind == T_SEMI)
			consume(P);
	}
	size_t lo = P->base + P->pos;
	if (parse_loop_body(P) == -1)
		return -1;
	cls_val_loop_end(P->c, var, vl, lo, P->base + P->pos);
	return 0;
}

static int parse_case(struct parser *P)
{
	struct token *t;
	consume(P);
	if (peek(P, &t) == -1)
		return -1;
	if (t->kind != T_WORD)
		return unexpected(P, t);
	consume(P);
	if (skip_newlines(P) == -1 || expect_word(P, "in") == -1)
		return -1;
	for (;;) {
		if (skip_newlines(P) == -1 || peek(P, &t) == -1)
			return -1;
		if (is_word(t, "esac")) {
			consume(P);
			return 0;
		}
		if (t->kind == T_LPAREN) {
			consume(P);
			if (peek(P, &t) == -1)
				return -1;
		}
		for (;;) {
			if (t->kind != T_WORD)
				return unexpected(P, t);
			consume(P);
			if (peek(P, &t) == -1)
				return -1;
			if (t->kind != T_PIPE)
				break;
			consume(P);
			if (peek(P, &t) == -1)
				return -1;
		}
		if (t->kind != T_RPAREN)
			return unexpected(P, t);
		consume(P);
		size_t n;
		if (parse_list(P, stop_esac, &n) == -1 || peek(P, &t) == -1)
			return -1;
		if (t->kind == T_DSEMI) {
			consume(P);
			continue;
		}
		if (is_word(t, "esac")) {
			consume(P);
			return 0;
		}
		return unexpected(P, t);
	}
}

static int parse_dbracket(struct parser *P)
{
	struct token *t;
	size_t n = 0;
	struct cls_word prev = {"", 0, 0, 0, NULL};
	int pending = 0; /* the next word is evaluated: 1 as arithmetic, 2 as a name */
	consume(P);
	P->in_dbracket = 1;
	for (;;) {
		if (peek(P, &t) == -1)
			return -1;
		if (is_word(t, "]]") && n > 0) {
			P->in_dbracket = 0;
			consume(P);
			return 0;
		}
		switch (t->kind) {
		case T_EOF:
		case T_SEMI:
		case T_AMP:
		case T_DSEMI:
		case T_PIPE:
		case T_PIPE_AMP:
			return unexpected(P, t); /* bash: unexpected token in conditional command */
		default:
			break;
		}
		if (t->kind == T_REDIR && (t->op == R_HEREDOC || t->op == R_HERESTR))
			return unexpected(P, t);
		/* -eq and friends evaluate their operands as arithmetic, -v and -R a name */
		static const char *const evals[] = {
		        "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-v", "-R", NULL};
		if (in_stops(t, evals)) {
			P->c->evaluates = 1;
			P->c->eval_name = 1;
		}
		/* values.c: an operand of -eq and friends is evaluated as arithmetic, that of -v
		 * and -R as a name; =~ puts parts of its left operand in BASH_REMATCH */
		if (t->kind == T_WORD) {
			if (pending && cls_val_sink_word(P->c, &t->w, 0, t->w.len, pending == 1) == -1)
				return -1;
			pending = 0;
			if (in_stops(t, evals)) {
				pending = t->w.s[1] == 'v' || t->w.s[1] == 'R' ? 2 : 1;
				if (pending == 1 &&
				        cls_val_sink_word(P->c, &prev, 0, prev.len, 1) == -1)
					return -1;
			} else if (is_word(t, "=~")) {
				cls_val_assign(P->c, "BASH_REMATCH", 12, &prev, 0, prev.len, 1);
			}
			prev = t->w;
		}
		consume(P);
		n++;
	}
}

static int parse_command(struct parser *P)
{
	struct token *t;
	struct cls_cmd **from = P->tail;
	if (peek(P, &t) == -1)
		return -1;
	size_t off = t->off;
	int r;
	if (t->kind == T_LPAREN) {
		consume(P);
		if (cls_enter(P->c, P->base + off) == -1)
			return -1;
		r = 1;
		/* to sh (dash) `((' is two subshells (black-box round 8: `sh -c '((git push))'') */
		if (at(P, P->pos) == '(' && P->c->sh_mode)
			return ERR(P, off, "(( in a script sh runs: refused");
		if (at(P, P->pos) == '(' && !arith_known_bad(P, off)) {
			/* (( arithmetic )) unless it does not end that way: then nested subshells
			 */
			struct mark m;
			P->pos++;
			mark_save(P, &m);
			r = scan_arith(P, off);
			if (r == -1)
				return -1;
			if (r == 0)
				P->c->evaluates = 1;
			if (r == 1) {
				mark_restore(P, &m);
				arith_mark_bad(P, off);
				P->pos--;
			}
		}
		if (r == 1) {
			size_t n;
			if (parse_list(P, NULL, &n) == -1 || peek(P, &t) == -1)
				return -1;
			if (n == 0 || t->kind != T_RPAREN)
				return unexpected(P, t);
			consume(P);
		}
		cls_leave(P->c);
		return parse_trailing_redirs(P, from);
	}
	if (t->kind == T_REDIR)
		return parse_simple(P);
	if (t->kind != T_WORD)
		return unexpected(P, t);
	/* "!" is taken by parse_pipeline at a pipeline's start; after a pipe it is an error */
	static const char *const bad[] = {
	        "then", "else", "elif", "fi", "do", "done", "esac", "}", "in", "!", "]]", NULL};
	if (in_stops(t, bad))
		return unexpected(P, t);
	static const char *const compound[] = {"if", "while", "until", "for", "select", "case", "{",
	        "[[", "function", "coproc", NULL};
	if (!in_stops(t, compound))
		return parse_simple(P);
	if (cls_enter(P->c, P->base + off) == -1)
		return -1;
	if (is_word(t, "if")) {
		r = parse_if(P);
	} else if (is_word(t, "while") || is_word(t, "until")) {
		r = parse_while(P);
	} else if (is_word(t, "for") || is_word(t, "select")) {
		r = parse_for(P);
	} else if (is_word(t, "case")) {
		r = parse_case(P);
	} else if (is_word(t, "{")) {
		consume(P);
		r = parse_body(P, stop_brace);
		if (r == 0)
			consume(P);
	} else if (is_word(t, "[[")) {
		/* a command name to sh (dash), where `||' and `;' inside end it */
		if (P->c->sh_mode)
			return ERR(P, t->off, "[[ in a script sh runs: refused");
		r = parse_dbracket(P);
	} else if (is_word(t, "function")) {
		consume(P);
		if (peek(P, &t) == -1)
			return -1;
		if (t->kind != T_WORD || (t->w.flags & CLS_W_EXP))
			return unexpected(P, t);
		func_defined(P, &t->w);
		consume(P);
		if (peek(P, &t) == -1)
			return -1;
		if (t->kind == T_LPAREN) {
			consume(P);
			if (peek(P, &t) == -1)
				return -1;
			if (t->kind != T_RPAREN)
				return unexpected(P, t);
			consume(P);
		}
		r = parse_function_body(P);
	} else if (is_word(t, "coproc")) {
		consume(P);
		if (peek(P, &t) == -1)
			return -1;
		if (t->kind == T_WORD && !is_compound_start(t)) {
			/* coproc NAME compound, when a compound follows the name: bash reads the word
			 * after NAME as a command start, so a reserved word there opens a compound
			 * (`coproc x while ...; do ...; done`), and the other reserved words but `time`,
			 * which open no compound, are syntax errors (fuzz findings) */
			static const char *const opens[] = {"while", "until", "for", "select", "if", "case",
			        "[[", "{", NULL};
			static const char *const nocompound[] = {"!", "function", "coproc", "then", "else",
			        "elif", "fi", "do", "done", "esac", "in", "}", NULL};
			size_t i = P->pos, j;
			while (i < P->len && (P->s[i] == ' ' || P->s[i] == '\t'))
				i++;
			for (j = i; j < P->len && !is_meta(P->s[j]) && P->s[j] != ' ' && P->s[j] != '\t';)
				j++;
			int name = at(P, i) == '(', error = 0;
			for (size_t k = 0; opens[k] != NULL && !name; k++)
				name = j - i == strlen(opens[k]) && memcmp(P->s + i, opens[k], j - i) == 0;
			for (size_t k = 0; nocompound[k] != NULL && !name; k++)
				error |= j - i == strlen(nocompound[k]) &&
					 memcmp(P->s + i, nocompound[k], j - i) == 0;
			if (name || error) {
				consume(P);
				if (peek(P, &t) == -1)
					return -1;
				if (error)
					return unexpected(P, t);
			}
		}
		/* a coproc of a coproc is a syntax error to bash (fuzz finding) */
		if (is_word(t, "coproc"))
			return unexpected(P, t);
		struct cls_cmd **cfrom = P->tail;
		r = parse_command(P);
		/* a coprocess reads from a pipe (httpie sends it as a body) */
		if (r == 0)
			mark_cmds(*cfrom, CLS_C_PIPED, NULL);
		cls_leave(P->c);
		return r;
	} else {
		return unexpected(P, t);
	}
	if (r == -1)
		return -1;
	cls_leave(P->c);
	return parse_trailing_redirs(P, from);
}

static int parse_pipeline(struct parser *P)
{
	struct token *t;
	int prefix = 0;
	for (;;) {
		if (peek(P, &t) == -1)
			return -1;
		if (is_word(t, "!")) {
			consume(P);
			prefix = 1;
		} else if (is_word(t, "time")) {
			consume(P);
			prefix = 1;
			if (peek(P, &t) == -1)
				return -1;
			/* the word after `time -p' and `time --' still starts a command, where an
			 * assignment may stand (parity fuzz finding: `time -p g[' is unterminated to
			 * bash) */
			if (is_word(t, "-p")) {
				consume(P);
				P->assign_ok = 1;
				P->cmd_word = 0;
				P->rw_ok = 1;
			}
			if (peek(P, &t) == -1)
				return -1;
			if (is_word(t, "--")) {
				consume(P);
				P->assign_ok = 1;
				P->cmd_word = 0;
				P->rw_ok = 1;
			}
		} else {
			break;
		}
	}
	/* A bare `time` or `!` runs nothing, but bash takes it only before a newline, `;` or the
	 * end: "! &" and "( ! )" are syntax errors (fuzz finding). */
	if (prefix && (t->kind == T_EOF || t->kind == T_NL || t->kind == T_SEMI))
		return 0;
	struct cls_cmd **start = P->tail;
	P->npipes++;
	int simple = 1; /* every element one simple command and nothing else */
	for (int first = 1;; first = 0) {
		struct cls_cmd **from = P->tail;
		int depth = P->c->depth;
		P->elem_cmd = NULL;
		P->nelems++;
		if (parse_command(P) == -1)
			return -1;
		/* a simple command, not a compound's last (values.c: what a substitution prints) */
		P->last_elem = P->elem_cmd != NULL && P->elem_depth == depth ? P->elem_cmd : NULL;
		simple = simple && P->last_elem != NULL && *from == P->last_elem &&
		         P->last_elem->next == NULL;
		P->pipe_simple = simple;
		/* what runs before this element writes its standard input */
		if (!first)
			mark_cmds(*from,
			        CLS_C_PIPED | (cls_cmds_download(*start, *from) ? CLS_C_DLIN : 0),
			        NULL);
		if (peek(P, &t) == -1)
			return -1;
		if (t->kind != T_PIPE && t->kind != T_PIPE_AMP)
			return 0;
		int amp = t->kind == T_PIPE_AMP;
		consume(P);
		if (peek(P, &t) == -1)
			return -1;
		int newline = t->kind == T_NL;
		if (skip_newlines(P) == -1 || peek(P, &t) == -1)
			return -1;
		/* bash takes `x |& time y` and `x |` newline `time y`, but not `x |&` newline
		 * `time y` (fuzz finding) */
		if (amp && newline && is_word(t, "time"))
			return unexpected(P, t);
	}
}

static int parse_and_or(struct parser *P)
{
	struct token *t;
	if (parse_pipeline(P) == -1)
		return -1;
	for (;;) {
		if (peek(P, &t) == -1)
			return -1;
		if (t->kind != T_AND_IF && t->kind != T_OR_IF)
			return 0;
		consume(P);
		if (skip_newlines(P) == -1 || peek(P, &t) == -1)
			return -1;
		if (t->kind != T_WORD && t->kind != T_LPAREN && t->kind != T_REDIR)
			return unexpected(P, t);
		if (parse_pipeline(P) == -1)
			return -1;
	}
}

/* A list of and-or lists separated by ; & or newlines, up to a token it cannot use (left as
 * lookahead): end of input, ')', ';;', or a reserved word of stops in command position. */
static int parse_list(struct parser *P, const char *const *stops, size_t *count)
{
	struct token *t;
	*count = 0;
	for (;;) {
		if (skip_newlines(P) == -1 || peek(P, &t) == -1)
			return -1;
		if (t->kind == T_EOF || t->kind == T_RPAREN || t->kind == T_DSEMI ||
		        in_stops(t, stops))
			return 0;
		if (t->kind != T_WORD && t->kind != T_LPAREN && t->kind != T_REDIR)
			return unexpected(P, t);
		struct cls_cmd **from = P->tail;
		unsigned npipes = P->npipes, nelems = P->nelems;
		P->stmt = NULL;
		if (parse_and_or(P) == -1)
			return -1;
		(*count)++;
		if (peek(P, &t) == -1)
			return -1;
		/* NAME=VALUE alone, in the line's own shell (not a script, a compound or a
		 * substitution), not in the background: it runs before what follows (values.c) */
		if (P->stmt != NULL && P->c->depth == 0 && P->npipes == npipes + 1 &&
		        P->nelems == nelems + 1 && t->kind != T_AMP)
			cls_val_follow_static(P->c, P->stmt);
		P->stmt = NULL;
		if (t->kind == T_AMP)
			mark_cmds(*from, CLS_C_ASYNC, NULL);
		if (t->kind == T_SEMI || t->kind == T_AMP)
			consume(P);
		else if (t->kind != T_NL)
			return 0;
	}
}

int cls_parse(struct cls_ctx *c, const char *src, size_t len, size_t base, struct cls_cmd **out)
{
	struct parser P;
	memset(&P, 0, sizeof P);
	P.c = c;
	P.s = src;
	P.len = len;
	P.base = base;
	P.ptail = &P.pending;
	P.assign_ok = 1;
	P.rw_ok = 1;
	if (check_source(&P) == -1)
		return -1;
	while (*out != NULL)
		out = &(*out)->next;
	P.tail = out;
	size_t n;
	struct token *t;
	if (parse_list(&P, NULL, &n) == -1 || peek(&P, &t) == -1)
		return -1;
	if (t->kind != T_EOF)
		return unexpected(&P, t);
	return 0;
}
