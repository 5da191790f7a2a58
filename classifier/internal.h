/* The classifier's internals, shared by its source files only (not part of the module's
 * interface).  One classification owns one struct cls_ctx; everything it allocates comes from
 * the context's arena and is released at once. */
#ifndef EGRESSD_CLASSIFIER_INTERNAL_H
#define EGRESSD_CLASSIFIER_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>

#include "allowlist/host.h"

/* Bytes that stand for an expansion in a word's decoded text: the value is unknown there. */
#define CLS_EXP_MARK '\x01'

/* Word flags. */
#define CLS_W_EXP 0x01u     /* contains a parameter, arithmetic or command expansion */
#define CLS_W_LEADEXP 0x02u /* begins with an expansion */
#define CLS_W_GLOB 0x04u    /* has an unquoted glob character */
#define CLS_W_BRACE 0x08u   /* has an unquoted brace pair (possible brace expansion) */
#define CLS_W_QUOTED 0x10u  /* some part was quoted or backslash-escaped */
#define CLS_W_DL 0x20u      /* holds a substitution that runs a download (curl, wget, ...) */
#define CLS_W_SUBST 0x40u   /* holds a command substitution */
#define CLS_W_TEXT 0x80u    /* holds an expansion whose value may be any text: not only
                               arithmetic ($(( )), $[ ]), a length (${#x}) or $# $? $$ $! */
#define CLS_W_RTEXT 0x100u  /* holds run-time text that is no variable's value: a command's
                               output not proven numeric, an indirection, a file name put
                               where {} stood (the value model, values.c) */

/* What one expansion in a word stands for (the value model, values.c). */
enum cls_dep_kind {
	CLS_DEP_VAR,  /* a variable's value (name; "@" the positional parameters, "!k" an
	                 array's keys, "-" text the environment gives) */
	CLS_DEP_TEXT, /* run-time text: a command's output, an indirection, ... */
};

struct cls_dep {
	struct cls_dep *next; /* the word's next expansion, in source order */
	const char *name;     /* CLS_DEP_VAR: the variable's name (not NUL-terminated) */
	size_t nlen;
	size_t at;           /* where the expansion's mark is in the decoded word */
	unsigned char kind;  /* enum cls_dep_kind */
	unsigned char copy;  /* the value itself or a part of it (${x}, ${x%.*}, ${x:1}, ${a[i]}),
	                        not a value joined with other text (${x:-y}, ${x/a/b}); 2 for
	                        the whole value ($x, ${x}) */
	unsigned char arith_set; /* a name in arithmetic that the arithmetic assigns (x=1, x++) */
};

struct cls_word {
	const char *s;  /* decoded text, NUL-terminated; CLS_EXP_MARK where an expansion was */
	size_t len;     /* length of s */
	unsigned flags; /* CLS_W_* */
	size_t off;     /* byte offset in the original line */
	const struct cls_dep *deps; /* the expansions that are variables' values or run-time
	                               text, NULL when none (words a parser read) */
};

/* A here-document or here-string feeding a command's standard input. */
struct cls_doc {
	const char *s; /* body text (arena), NUL-terminated; set once the body is read */
	size_t len;
	int nonstatic; /* the body holds expansions, so its text is not known */
	int download;  /* one of those expansions runs a download */
	int ready;     /* body has been read */
	size_t off;    /* offset of the operator */
};

/* Command flags. */
#define CLS_C_PIPED 0x01u /* standard input is a pipe */
#define CLS_C_STDIN 0x02u /* standard input redirected from a file, here-doc or string */
#define CLS_C_XARGS 0x04u /* further unknown arguments are appended (xargs, parallel) */
#define CLS_C_DLIN 0x08u  /* standard input carries what a download printed */
#define CLS_C_ASYNC 0x20u /* run with `&': without job control its standard input is
                             /dev/null unless it redirects or pipes one itself */
#define CLS_C_XOPTS 0x10u /* the appended words come from the line (a pipe, a here-string):
                             they may be options */
#define CLS_C_STDINX 0x40u /* standard input redirected from a word that is not static (a
                              process substitution, an expansion) */
#define CLS_C_ASSIGN 0x100u /* assignments stand before the command word */
#define CLS_C_OUTREDIR 0x80u /* some output descriptor is redirected (1, 2, &>, <>) */

/* One simple command as the parser found it: assignments and redirections removed. */
struct cls_cmd {
	struct cls_word *argv; /* words, argv[0] the command word */
	size_t argc;
	unsigned flags;       /* CLS_C_* */
	struct cls_doc *doc;  /* here-doc / here-string on fd 0, or NULL */
	struct cls_cmd *next; /* next command in source order */
};

struct cls_chunk {
	struct cls_chunk *next; /* older chunks, freed together */
};

/* A name recorded for the result (program or alias). */
struct cls_name {
	struct cls_name *next;
	size_t len;
	char s[]; /* NUL-terminated */
};

struct cls_destnode {
	struct cls_destnode *next;
	struct allow_dest d; /* canonical host, port 0 when the line named none */
};

/* An environment assignment made somewhere on the line (NAME=VALUE before a command, alone,
 * after env, export or declare) whose name a rule reads: registry overrides (tools.c). */
struct cls_assign {
	struct cls_assign *next;
	const struct cls_word *w; /* the NAME=VALUE word */
	size_t nlen;              /* length of NAME */
};

/* The value model's table (values.c). */
enum cls_vkind {
	CLS_VK_ENV,    /* not assigned on the line: the environment's (out of scope) */
	CLS_VK_NUM,    /* digits and signs only */
	CLS_VK_STATIC, /* text the line wrote, or the environment's */
	CLS_VK_TEXT,   /* run-time text: a command's output, a file name, a line read */
};

#define CLS_MAX_VARS 48
#define CLS_MAX_VEDGES 256

struct cls_var {
	const char *name;   /* not NUL-terminated; in the line or the arena */
	unsigned char nlen;
	unsigned char kind; /* enum cls_vkind */
	unsigned char sunk; /* bash evaluates its value as code */
	unsigned char set;  /* assigned on the line */
	size_t sink_off;    /* where it is evaluated */
	/* following a for loop's file names (cls_val_file_operand) */
	unsigned char nassign;   /* assignments other than by a for loop's words (saturating) */
	unsigned char nloops;    /* for loops over it (saturating) */
	unsigned char loop_safe; /* each word of its loop is a file name under a static prefix */
	unsigned char loop_dot;  /* each word of its loop gives names with a `.' (*.sh) */
	unsigned char touched;   /* unset, or declared without a value (local x) */
	unsigned char relied;    /* a program's operand was taken as one of those names: 1 a file
	                          * (loop_safe), 2 a dotted name (loop_dot) */
	size_t body_lo, body_hi; /* its loop's body in the line */
	/* following a static value (script=build.py; python3 $script) */
	const char *ftext; /* the value of a statement of the line's own shell that certainly
	                      runs, or NULL */
	size_t flen, foff;  /* its length, and where the statement is */
	unsigned char fmulti; /* more than one such statement */
};

/* A variable's value built from others: kind(to) >= what the word's expansions give. */
struct cls_vedge {
	struct cls_vedge *next;
	const struct cls_dep *deps; /* the expansions (only those with from <= at < to) */
	size_t from, to;
	unsigned char var;    /* index of the assigned variable */
	unsigned char single; /* the value is exactly one copy expansion */
	unsigned char litnum; /* the literal text around is digits, signs, blanks only */
};

/* A file the line writes (writes.c). */
enum cls_wkind {
	CLS_WK_UNKNOWN, /* content nothing on the line tells: a program's output, sed -i, a download */
	CLS_WK_TEXT,    /* text known: tee of a static here-doc or here-string */
	CLS_WK_CMD,     /* a simple command's standard output: known for cat of a static here-doc,
	                   echo and printf of static words (decided when the file is run) */
	CLS_WK_COPY,    /* a copy of src (cp, mv, ln, install, dd, an archive unpacked): what src
	                   holds, which is a file on disk unless the line wrote src too */
	CLS_WK_SUSPECT, /* a copy of a file named at run time: may be a network program */
};

struct cls_write {
	struct cls_word dest;      /* where; its last part not static: any file */
	struct cls_word src;       /* CLS_WK_COPY: the source */
	const char *text;          /* CLS_WK_TEXT: the content */
	size_t tlen;
	const struct cls_cmd *by;  /* CLS_WK_CMD: the command whose output it is */
	int kind;                  /* enum cls_wkind */
	int ssh;                   /* under ~/.ssh or /etc/ssh */
};

/* How a file is run (writes.c). */
enum cls_runhow {
	CLS_RUN_EXEC,   /* as a program, by a path: ./x, /tmp/c */
	CLS_RUN_NAME,   /* as a program found in PATH */
	CLS_RUN_SHELL,  /* as a shell script: bash x, sh x, . x, source x */
	CLS_RUN_INTERP, /* as an interpreter's script: python3 x.py, node x.js */
	CLS_RUN_CODE,   /* read as code by a program not followed: make, awk -f, sed -f */
};

struct cls_filerun {
	struct cls_word file; /* the path or name */
	int how;              /* enum cls_runhow */
	const char *ib;       /* CLS_RUN_INTERP: the interpreter's basename */
	size_t il;
	unsigned flags;       /* the command's standard input (CLS_C_PIPED, _STDIN, _DLIN) */
};

#define CLS_MAX_WRITES 32
#define CLS_MAX_RUNS 64

#define CLS_ARENA_FIRST 8192
#define CLS_ARENA_CAP (64u << 20) /* hard cap: re-parsing can only shrink text, this is slack */

struct cls_ctx {
	/* arena */
	char *cur;                /* next free byte in the current chunk */
	size_t left;              /* bytes left in it */
	size_t total;             /* bytes obtained from malloc so far */
	struct cls_chunk *chunks; /* malloc'ed chunks */
	/* outcome */
	int refused;      /* a refusal was recorded */
	char reason[256]; /* its message */
	size_t offset;    /* its byte offset */
	unsigned tags;    /* leaf tags found */
	/* limits */
	size_t ncmds; /* simple commands seen, across all nested parses */
	int depth;    /* current nesting of substitutions, compounds, wrappers, shells */
	/* what was found */
	struct cls_name *programs; /* distinct program names */
	size_t nprograms;
	struct cls_destnode *dests; /* distinct destinations */
	size_t ndests;
	/* alias expansion state (shopt -s expand_aliases) */
	int aliases_on;                           /* expand_aliases may be on */
	int sh_mode;    /* the script being parsed is run by sh (dash), not bash */
	int brace_off;  /* brace expansion may be switched off (set +B, +o braceexpand) */
	int alias_any;                            /* an alias with an unknown name was defined */
	struct cls_name *aliases;                 /* alias names defined so far */
	/* tools.c */
	struct cls_assign *assigns; /* registry-related environment assignments on the line */
	struct cls_assign *make_env; /* make variables assigned before make was seen (wrappers.c) */
	int make_seen;               /* make, gmake or bmake runs on the line */
	unsigned registries;        /* ALLOW_REG_* bits: default registries the line reaches */
	/* strings bash may evaluate later (issue 12): a static text holding "$(" or a backtick
	 * (latent), and a construct that evaluates a variable's value as code (arithmetic, a
	 * subscript, indirection, a nameref, ${x@P}); both together refuse the line */
	int latent;
	size_t latent_off;
	int evaluates;
	/* a variable's value evaluated as code (arithmetic or a subscript naming a variable,
	 * ${!x}, ${x@P}, let, declare -n/-i, a name that is not static), and a value built at
	 * run time (an expansion in an assignment, +=, printf -v, read, mapfile, getopts): both
	 * together refuse the line (black-box finding A7) */
	int eval_name;
	int dynamic;
	size_t dynamic_off;
	/* the value model (values.c): the kind of every variable the line assigns, how values
	 * flow between them, and the names bash evaluates; checked once the line is read */
	unsigned nvars; /* vars[] (below the cleared part): an entry is cleared when added */
	unsigned nedges;
	struct cls_vedge *vedges; /* values built from other variables */
	int vars_over;            /* more names or flows than the table holds: coarse rule */
	int sinks;                /* some name is evaluated */
	int sink_all;             /* declare -i or -n: every assignment may evaluate */
	int assoc;                /* an associative array may be declared: keys are text */
	int dyn_target;           /* a variable whose name is not static is assigned */
	int scripts;              /* nesting of scripts being run (bash -c, eval, ...) */
	int numcmd_used;          /* a command's output was taken as a number (wc -l, nproc...) */
	int numcmd_shadowed;      /* PATH, or a function or alias named like such a command */
	int numgit_used;          /* git fed a pipeline whose output was taken as a number */
	int git_env;              /* the line assigns a GIT_* variable (an external diff, ...) */
	size_t numcmd_off;
	/* an assignment's value names a network program or the loader (x=/usr/bin/curl): a copy
	 * or link of an expansion may then be of that program (black-box finding) */
	int program_value;
	/* texts the line shows (cls_note_shown) and what they may combine with, checked once the
	 * line is read */
	unsigned shows;       /* CLS_SHOW_* */
	int redir_exp;        /* a redirection target begins with an expansion (> "$x") */
	int locale_str;       /* a $"..." string, which bash translates with TEXTDOMAIN */
	size_t locale_off;
	/* files the line writes and runs (writes.c); the arrays are not cleared, the counts are */
	size_t nwrites, nruns;
	int writes_over, runs_over; /* more than the arrays hold */
	int cd_seen;                /* cd, pushd or popd runs */
	int var_operand;            /* a script operand was followed from a variable (values.c) */
	size_t var_operand_off;
	int followed;               /* texts followed so far */
	struct cls_write writes[CLS_MAX_WRITES];
	struct cls_filerun runs[CLS_MAX_RUNS];
	struct cls_var vars[CLS_MAX_VARS];
	_Alignas(16) char first[CLS_ARENA_FIRST]; /* the first arena chunk, no malloc needed */
};

/* Arena allocation: size bytes, 16-aligned; NULL (and the line refused) past the cap. */
void *cls_alloc(struct cls_ctx *c, size_t size, size_t off);
/* A NUL-terminated copy of s[0..len) in the arena. */
char *cls_strdup(struct cls_ctx *c, const char *s, size_t len, size_t off);

/* Records the first refusal (later ones are ignored).  Always returns -1. */
int cls_refuse(struct cls_ctx *c, size_t off, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Nesting: enter returns -1 (refused) past CLS_MAX_DEPTH. */
int cls_enter(struct cls_ctx *c, size_t off);
void cls_leave(struct cls_ctx *c);

/* Whether one of the commands from `from` up to (not including) `to` runs a download: a word
 * of it names curl, wget, httpie, gh, ssh, a raw socket tool, ... (wrappers included, so the
 * words are looked at, not only the command word). */
int cls_cmds_download(const struct cls_cmd *from, const struct cls_cmd *to);

/* Parses src[0..len) (a whole program; base = its offset in the original line) and appends its
 * simple commands to *out in source order.  0 or -1 (refused). */
int cls_parse(struct cls_ctx *c, const char *src, size_t len, size_t base, struct cls_cmd **out);

/* Parses and classifies a script found inside the line (sh -c, eval, here-doc script, ...);
 * `inherit` flags (CLS_C_*) are added to every command of the script.  0 or -1. */
int cls_run_script(struct cls_ctx *c, const char *src, size_t len, size_t base, unsigned inherit);

/* Classifies one simple command (wrappers, then the program's rule).  0 or -1. */
int cls_run_cmd(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags,
        const struct cls_doc *doc);

/* An assignment NAME=VALUE found anywhere (a prefix, a statement, declare/export, env): the
 * variables whose value bash or git runs later (PROMPT_COMMAND, PS4, BASH_ENV, GIT_EDITOR,
 * GIT_CONFIG_VALUE_n, BASH_ALIASES[x], ...) are classified, followed or refused.  0 or -1. */
int cls_assignment(struct cls_ctx *c, const struct cls_word *w);
int cls_hook_name(const char *s, size_t len);

/* Classifies the substitutions in text that bash will expand as a double-quoted string (a
 * prompt string, a here-document body): each $(...) and `...` as run.  0 or -1. */
int cls_run_expansions(struct cls_ctx *c, const char *s, size_t len, size_t off);
/* The same for a prompt string (PS0-PS4): bash first decodes its backslash escapes, and an
 * octal one may stand for `$' or a backquote (\044, \140).  0 or -1. */
int cls_run_prompt(struct cls_ctx *c, const char *s, size_t len, size_t off);

/* Texts a line shows, in its own text or in a word as decoded ($'\x74cp'), any case. */
#define CLS_SHOW_NETDEV 0x01u /* tcp or udp: a /dev/tcp/HOST/PORT path may be put together */
#define CLS_SHOW_POSIX 0x02u  /* POSIXLY_CORRECT, SHELLOPTS, BASHOPTS or expand_aliases: alias
                                 expansion may be switched on by a value set at run time */
#define CLS_SHOW_LOCALE 0x04u /* TEXTDOMAIN or TEXTDOMAINDIR: $"..." may be translated with a
                                 catalog of the line's choosing */
/* Notes which of the CLS_SHOW_* texts s[0..len) holds. */
void cls_note_shown(struct cls_ctx *c, const char *s, size_t len);

/* Notes a static text that holds a substitution bash has not run (yet). */
void cls_note_latent(struct cls_ctx *c, const char *s, size_t len, size_t off);
/* Whether text may hold a brace expansion (a `{' with a `,' or `..' before its `}'). */
int cls_brace_expands(const char *p, size_t n);

/* The value model (values.c), issue 12: a value bash evaluates as code (arithmetic, a
 * subscript, ${!x}, ${x@P}, -v) must not be text the line cannot see. */
/* Variable name[0..nl) is assigned the value of w->s[from..to) (its expansions: w->deps);
 * glob: an unquoted glob in it stands for file names. */
void cls_val_assign(struct cls_ctx *c, const char *name, size_t nl, const struct cls_word *w,
        size_t from, size_t to, int glob);
/* Whether s[0..len) is a number's text with no expansion in it. */
int cls_val_numeric_text(const char *s, size_t len);
/* Variable name is assigned a value of the given kind. */
void cls_val_set(struct cls_ctx *c, const char *name, size_t nl, enum cls_vkind kind);
/* Variable name is evaluated as code at off. */
void cls_val_sink(struct cls_ctx *c, const char *name, size_t nl, size_t off);
/* The value of w->s[from..to) is evaluated: as an arithmetic expression (arith: every name
 * in its literal text is evaluated too) or as a variable name (only names inside its
 * subscript).  Run-time text there is refused.  0 or -1. */
int cls_val_sink_word(struct cls_ctx *c, const struct cls_word *w, size_t from, size_t to,
        int arith);
/* The literal arithmetic text s[0..len): its names are evaluated, the ones assigned there
 * (x=, x+=, x++) become numbers. */
void cls_val_sink_text(struct cls_ctx *c, const char *s, size_t len, size_t off);
/* Whether the arithmetic text s[0..len) assigns the name at s[i..e) (x=, x+=, x++, --x). */
int cls_val_arith_assigned(const char *s, size_t len, size_t i, size_t e);
/* Text the line wrote joined to a value (${x:-y}) is evaluated: it may name any variable. */
void cls_val_sink_joined(struct cls_ctx *c, size_t off);
/* The same for the one name s[i..e) of the arithmetic text s[0..len). */
void cls_val_sink_name_at(
        struct cls_ctx *c, const char *s, size_t len, size_t i, size_t e, size_t off);
/* Whether command v[0..n) prints a number only (wc -l on its input, nproc, date +%s, ...). */
int cls_val_numeric_cmd(struct cls_ctx *c, const struct cls_cmd *cmd);
/* Whether the pipeline first ... last (simple commands, each the next's) prints a number:
 * last does (cls_val_numeric_cmd) and each before it can neither write a file nor run
 * another program, so that all it prints goes into the pipe (values.c). */
int cls_val_numeric_pipe(struct cls_ctx *c, const struct cls_cmd *first, const struct cls_cmd *last);
/* A function or alias named name[0..nl) is defined: a command of that name is no longer
 * known to print a number. */
void cls_val_define(struct cls_ctx *c, const char *name, size_t nl, size_t off);
/* A builtin that takes names or evaluates (let, test -v, unset, read, mapfile, getopts,
 * printf -v, wait -p, declare and its kin, set): its names, targets and options.  0 or -1. */
int cls_val_builtin(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags,
        const struct cls_doc *doc);
/* Words v[0..n) become a script's positional parameters (bash -c SCRIPT NAME ARGS...); under
 * xargs (flags) more come from its input. */
void cls_val_args(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags);
/* A for loop over variable name[0..nl): begin (before its words, each given to
 * cls_val_loop_word), and end with the range of its body in the line. */
void cls_val_loop_begin(struct cls_ctx *c, const char *name, size_t nl);
void cls_val_loop_word(struct cls_ctx *c, const char *name, size_t nl, const struct cls_word *w);
void cls_val_loop_end(struct cls_ctx *c, const char *name, size_t nl, size_t lo, size_t hi);
/* Variable name[0..nl) is unset or declared without a value. */
void cls_val_touch(struct cls_ctx *c, const char *name, size_t nl);
/* Whether program operand w ("$f") is certainly a file name under a static prefix that does not
 * begin with `-' (tests/x.py): the value of a for loop over such globs (for f in tests/NAME.py with a glob),
 * used in that loop's body by the line's own shell.  The line is refused at its end when
 * anything else assigns, unsets or may rename the variable. */
int cls_val_file_operand(struct cls_ctx *c, const struct cls_word *w);
/* Whether w is "$f" for a loop whose every word gives names holding a `.' (for f in *.sh):
 * never a whole option word of bash's (values.c). */
int cls_val_dotted_operand(struct cls_ctx *c, const struct cls_word *w);
/* Assignment word w (NAME=VALUE) is a statement of the line's own shell that runs before
 * anything after it: a static VALUE may be followed where $NAME is a program's operand. */
void cls_val_follow_static(struct cls_ctx *c, const struct cls_word *w);
/* The end of the line: refuses when an evaluated value may be run-time text.  0 or -1. */
int cls_val_check(struct cls_ctx *c);

/* Program rules (rules.c): each classifies argv v[0..n) of its program.  0 or -1. */
int cls_rule_git(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags);
int cls_rule_scalar(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags);
int cls_rule_curl(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags);
int cls_rule_wget(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags);
int cls_rule_httpie(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags);
int cls_rule_gh(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags);
int cls_rule_ssh(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags);
int cls_rule_scp(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags);
int cls_rule_rsync(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags);
int cls_rule_dns(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags);

/* Rules for package managers, registries, cloud and cluster clients, raw network tools and
 * interpreter one-liners (tools.c).  cls_rule_tools classifies a program no other handler
 * knows (nothing for one it does not know either); cls_rule_uv takes uv's subcommands other
 * than run.  0 or -1. */
int cls_rule_tools(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags);
int cls_rule_uv(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags);
/* Program text an interpreter reads from a static here-doc or here-string (base, bl: the
 * interpreter's basename): scanned as a one-liner of its language is (net:raw for a network
 * API, refused when it runs commands); an interpreter with no such table adds nothing.  0 or
 * -1. */
int cls_scan_program(
        struct cls_ctx *c, const char *base, size_t bl, const struct cls_word *text);
/* npx, uvx: the package is fetched (http:read) from the family's registry (ALLOW_REG_NPM or
 * ALLOW_REG_PYPI) unless the options or the line's environment name another. */
void cls_package_fetch(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned family);
/* uv's long options that take a value (wrappers.c), shared with tools.c. */
extern const char *const cls_uv_lv[];
/* A redirection's target word (any operator but << and <<<): /dev/tcp/HOST/PORT and
 * /dev/udp/HOST/PORT open a connection in bash, so they are net:raw. */
void cls_note_redir(struct cls_ctx *c, const struct cls_word *target);
int cls_names_program_file(const struct cls_word *w);
/* An assignment word NAME=VALUE found on the line (cls_assignment calls it for every one):
 * kept when a rule reads that name. */
void cls_note_assign(struct cls_ctx *c, const struct cls_word *w);
/* Whether the text s[0..len) (a value, with or without a folder) names a network program or the
 * loader by its last part. */
int cls_value_names_program(const char *s, size_t len);

/* Files the line writes and runs (writes.c).  cls_note_write records a write to dest of kind
 * enum cls_wkind (src, text or by as the kind needs); cls_note_run a run of a file;
 * cls_note_command both for one command as cls_run_cmd finds it (its word, whose last part
 * is base[0..bl), and the files cp, tee, dd, tar x, sed -i, ... write; curl and wget note theirs
 * in rules.c); cls_check_writes, once the line is classified,
 * follows each text the line wrote and then runs, and refuses a run of any other file it
 * wrote.  The last returns 0 or -1. */
void cls_note_write(struct cls_ctx *c, const struct cls_word *dest, int kind,
        const struct cls_word *src, const char *text, size_t tlen, const struct cls_cmd *by);
void cls_note_run(struct cls_ctx *c, const struct cls_word *file, int how, const char *ib,
        size_t il, unsigned flags);
void cls_note_command(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags,
        const struct cls_doc *doc, const char *base, size_t bl);
int cls_check_writes(struct cls_ctx *c);

/* Records the host of a URL-like word (scheme://[user@]host[:port]/..., or host[/...] when
 * bare is set) when it is literal.  Never fails: what cannot be canonicalised is skipped. */
void cls_add_url_host(struct cls_ctx *c, const struct cls_word *w, int bare);
/* Records a bare host name or [user@]host (no port). */
void cls_add_host(struct cls_ctx *c, const char *s, size_t len);
/* Records a program name.  0 or -1. */
int cls_add_program(struct cls_ctx *c, const char *s, size_t len);

/* Option walking shared by wrappers and rules. */
struct cls_opts {
	const char *sv;        /* short options that take a value (attached or next word) */
	const char *so;        /* short options whose value is optional and only attached */
	const char *const *lv; /* long options that take a value ("--name v" or "--name=v") */
	int plus;              /* '+x' bundles are options too (shells: +o opt) */
	int numeric;           /* "-10" is an option (nice) */
};

/* In an lv list, the entries after this one are the long options without a value.  A list
 * that has them is matched as getopt_long matches: a unique prefix ("--sig") stands for its
 * option (--signal). */
#define CLS_LONG_FLAGS "\x02"


struct cls_opt {
	char c;        /* short option letter, or 0 for a long option */
	const char *l; /* long option name without "--" (not NUL-terminated); a unique prefix
	                  is given as the full name */
	size_t ll;
	const char *val; /* its value, or NULL */
	size_t vlen;
	const struct cls_word *vw; /* the word the value came from (flags, offset) */
};

/* Called for each option; return 1 to stop the walk after this option, 0 to go on. */
typedef int (*cls_opt_fn)(void *arg, const struct cls_opt *o);

/* Walks options of v[i..n) by spec up to the first operand or "--" (consumed).  Returns the
 * index of the first operand; *stopped set when fn asked to stop. */
size_t cls_opts_walk(const struct cls_word *v, size_t n, size_t i, const struct cls_opts *spec,
        cls_opt_fn fn, void *arg, int *stopped);

/* Whether long option name o (len ol) is one of the NULL-terminated list (up to
 * CLS_LONG_FLAGS, when it has one). */
int cls_in_list(const char *const *list, const char *o, size_t ol);
/* Case-insensitive compare of a method word with GET/HEAD/OPTIONS. */
int cls_method_is_read(const char *s, size_t len);
/* Whether word w is static and equals lit. */
int cls_word_is(const struct cls_word *w, const char *lit);

#endif
