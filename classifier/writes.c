/* The files a line writes and then runs (issue 12).
 *
 * A line can write a program and run it: a script (`cat > x.sh <<EOF ... EOF; bash x.sh'), a
 * copy of a network program under another name (`cp /usr/bin/curl$z c; ./c'), or ssh's
 * configuration (`printf 'Host *\n ProxyCommand ...' >> ~/.ssh/config; ssh h').  The context
 * keeps what the line writes (redirections, tee, cp/mv/install/ln, dd, archives, sed -i,
 * downloads) and the files it runs (a command word with a slash, a name looked up in PATH, a
 * shell's or an interpreter's script, `.'), and cls_check_writes matches them once the whole
 * line is classified, so that a loop or a function that runs a file before the line writes it
 * is caught as well.
 *
 * Files are matched by their last part only: `cd', symbolic links and directories copied
 * whole make full paths unreliable, and a false match only ever adds (a text followed, or a
 * refusal).  A write whose content is known (a static here-doc or here-string, echo or printf
 * of static words) is followed as a script of the language it is run with; any other write
 * that is run refuses the line. */
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "allowlist/tags.h"
#include "classifier/internal.h"

static int is_mark(const char *s, size_t len)
{
	return memchr(s, CLS_EXP_MARK, len) != NULL;
}

/* The last part of a path: after the last slash, trailing slashes ignored. */
static const char *last_part(const char *s, size_t len, size_t *bl)
{
	while (len > 1 && s[len - 1] == '/')
		len--;
	const char *b = s;
	for (const char *p = s; p < s + len; p++)
		if (*p == '/')
			b = p + 1;
	*bl = (size_t)(s + len - b);
	return b;
}

/* Whether a word is not static as a path: an expansion, a glob, a brace pair. */
static int nonstatic(const struct cls_word *w)
{
	return (w->flags & (CLS_W_EXP | CLS_W_GLOB | CLS_W_BRACE)) != 0 || is_mark(w->s, w->len);
}

/* A path under ~/.ssh or /etc/ssh (ssh's configuration, or a file it may include) other than
 * keys and known hosts; a bare `config' or `ssh_config' too when the line changes directory. */
static int ssh_path(const struct cls_ctx *c, const struct cls_word *w)
{
	const char *s = w->s, *end = w->s + w->len;
	size_t kl;
	const char *k = last_part(s, w->len, &kl);
	if ((kl >= 11 && memcmp(k, "known_hosts", 11) == 0) ||
	        (kl >= 15 && memcmp(k, "authorized_keys", 15) == 0) ||
	        (kl > 3 && memcmp(k, "id_", 3) == 0) ||
	        (kl > 4 && memcmp(k + kl - 4, ".pub", 4) == 0))
		return 0; /* read as data, never as options */
	for (const char *p = s; p + 4 <= end; p++) {
		if (memcmp(p, ".ssh", 4) == 0 && (p == s || p[-1] == '/') &&
		        (p + 4 == end || p[4] == '/'))
			return 1;
		if (p + 8 <= end && memcmp(p, "/etc/ssh", 8) == 0 && (p + 8 == end || p[8] == '/'))
			return 1;
	}
	size_t bl;
	const char *b = last_part(s, w->len, &bl);
	return c->cd_seen && ((bl == 6 && memcmp(b, "config", 6) == 0) ||
	                             (bl == 10 && memcmp(b, "ssh_config", 10) == 0));
}

void cls_note_write(struct cls_ctx *c, const struct cls_word *dest, int kind,
        const struct cls_word *src, const char *text, size_t tlen, const struct cls_cmd *by)
{
	const char *s = dest->s;
	size_t len = dest->len;
	if (len == 0)
		return;
	/* descriptors (>&2, >&-) and the devices that are no files */
	if (!nonstatic(dest)) {
		size_t i = 0;
		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == len || (len == 1 && s[0] == '-'))
			return;
		/* the devices, but not a file under /dev/shm or a path through /dev/.. (black-box
		 * round 9: `echo "git push">/dev/shm/x;sh /dev/shm/x' ran git push) */
		static const char *const dev[] = {"null", "zero", "full", "stdout", "stderr",
		        "stdin", "tty", "console", "random", "urandom", NULL};
		if (len > 5 && memcmp(s, "/dev/", 5) == 0 && memmem(s, len, "/..", 3) == NULL) {
			const char *d = s + 5;
			size_t dl = len - 5;
			int sub = dl > 4 && (memcmp(d, "pts/", 4) == 0 ||
			                            memcmp(d, "tcp/", 4) == 0 ||
			                            memcmp(d, "udp/", 4) == 0);
			if (cls_in_list(dev, d, dl) || (dl > 3 && memcmp(d, "fd/", 3) == 0) || sub)
				return;
		}
	}
	if (c->nwrites == CLS_MAX_WRITES) {
		c->writes_over = 1;
		return;
	}
	struct cls_write *w = &c->writes[c->nwrites++];
	w->dest = *dest;
	if (src != NULL)
		w->src = *src;
	else
		memset(&w->src, 0, sizeof w->src);
	w->text = text;
	w->tlen = tlen;
	w->by = by;
	w->kind = kind;
	w->ssh = ssh_path(c, dest);
}

void cls_note_run(struct cls_ctx *c, const struct cls_word *file, int how, const char *ib, size_t il,
        unsigned flags)
{
	flags &= CLS_C_PIPED | CLS_C_STDIN | CLS_C_DLIN;
	for (size_t i = 0; i < c->nruns; i++) {
		struct cls_filerun *r = &c->runs[i];
		if (r->how == how && r->file.len == file->len && r->il == il &&
		        memcmp(r->file.s, file->s, file->len) == 0 &&
		        (il == 0 || memcmp(r->ib, ib, il) == 0)) {
			/* the same run: the later one matches whatever the earlier would, and
			 * its script reads either's standard input */
			if (file->off > r->file.off)
				r->file.off = file->off;
			r->flags |= flags;
			return;
		}
	}
	if (c->nruns == CLS_MAX_RUNS) {
		c->runs_over = 1;
		return;
	}
	struct cls_filerun *r = &c->runs[c->nruns++];
	r->file = *file;
	r->how = how;
	r->ib = ib;
	r->il = il;
	r->flags = flags;
}

/* ---- what a command writes -------------------------------------------------------------- */

static int name_is(const char *s, size_t l, const char *lit)
{
	return strlen(lit) == l && memcmp(s, lit, l) == 0;
}

static int is_opt(const struct cls_word *w)
{
	return w->len > 1 && w->s[0] == '-' && !(w->flags & CLS_W_LEADEXP);
}

/* cp, mv, install, ln, link: the destination is the last operand or -t DIR; each source is
 * copied to it.  A source that is not static may be a network program under a name built at
 * run time (x=/usr/bin/cu; x+=rl; cp $x c). */
static void copy_writes(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags,
        int install)
{
	const struct cls_word *dest = NULL;
	size_t first = 0, last = 0, nops = 0;
	int more = 0;
	for (size_t i = 1; i < n; i++) {
		const struct cls_word *w = &v[i];
		if (!more && cls_word_is(w, "--")) {
			more = 1;
			continue;
		}
		if (!more && is_opt(w)) {
			if (cls_word_is(w, "-t") && i + 1 < n) {
				dest = &v[++i];
			} else if (w->len > 19 && memcmp(w->s, "--target-directory=", 19) == 0) {
				dest = w; /* only its last part matters, the directory's name */
			} else if (install && w->len == 2 && strchr("mogS", w->s[1]) != NULL &&
			           i + 1 < n) {
				i++;
			} else if (w->len == 2 && w->s[1] == 'S' && i + 1 < n) {
				i++; /* cp/mv/ln -S SUFFIX */
			}
			continue;
		}
		if (nops == 0)
			first = i;
		last = i;
		nops++;
	}
	if (nops == 0 && dest == NULL)
		return;
	size_t srcs_end = last + 1;
	if (dest == NULL) {
		if (nops < 2 && !(flags & CLS_C_XARGS))
			return; /* ln -s target: a link in the current directory, named as it */
		dest = &v[last];
		srcs_end = last;
	}
	int suspect = (flags & CLS_C_XARGS) != 0;
	const struct cls_word *src = NULL;
	for (size_t i = first; i < srcs_end && nops > 0; i++) {
		const struct cls_word *w = &v[i];
		if (is_opt(w) && !more)
			continue;
		if (nonstatic(w))
			suspect = 1;
		else if (src == NULL)
			src = w;
	}
	cls_note_write(c, dest, suspect || src == NULL ? CLS_WK_SUSPECT : CLS_WK_COPY, src, NULL,
	        0, NULL);
}

/* Whether tar's words ask it to extract; *file (when *hasf) is the archive named by -f. */
static int tar_extracts(const struct cls_word *v, size_t n, struct cls_word *file, int *hasf)
{
	int x = 0;
	*hasf = 0;
	for (size_t i = 1; i < n; i++) {
		const struct cls_word *w = &v[i];
		if (w->len > 2 && w->s[0] == '-' && w->s[1] == '-') {
			if (cls_word_is(w, "--extract") || cls_word_is(w, "--get")) {
				x = 1;
			} else if (w->len > 7 && memcmp(w->s, "--file=", 7) == 0) {
				*file = *w;
				file->s += 7;
				file->len -= 7;
				*hasf = 1;
			} else if (cls_word_is(w, "--file") && i + 1 < n) {
				*file = v[++i];
				*hasf = 1;
			}
			continue;
		}
		/* -xf F, -fF, xzf F (the old form: the first word, no dash) */
		if ((w->len > 1 && w->s[0] == '-') || (i == 1 && w->len > 0)) {
			const char *f = memchr(w->s, 'f', w->len);
			if (memchr(w->s, 'x', w->len) != NULL)
				x = 1;
			if (f != NULL && f + 1 < w->s + w->len && w->s[0] == '-') {
				*file = *w;
				file->s = f + 1;
				file->len = (size_t)(w->s + w->len - (f + 1));
				*hasf = 1;
			} else if (f != NULL && i + 1 < n) {
				*file = v[++i];
				*hasf = 1;
			}
		}
	}
	return x;
}

/* An archive or a compressed file unpacked: what comes out is named inside it.  From a file the
 * line did not write, it is like any file on disk; from a pipe (a download's too) or a file the
 * line wrote, it may hold a copy of a network program or anything a download brought. */
static void unpack_writes(struct cls_ctx *c, const struct cls_word *archive, unsigned flags,
        size_t off)
{
	static const struct cls_word any = {"\x01", 1, CLS_W_EXP, 0, NULL};
	struct cls_word d = any;
	d.off = off;
	if (archive == NULL) {
		if (flags & (CLS_C_PIPED | CLS_C_STDIN))
			cls_note_write(c, &d, CLS_WK_UNKNOWN, NULL, NULL, 0, NULL);
		return;
	}
	if (cls_word_is(archive, "-") || nonstatic(archive)) {
		cls_note_write(c, &d, CLS_WK_UNKNOWN, NULL, NULL, 0, NULL);
		return;
	}
	cls_note_write(c, &d, CLS_WK_COPY, archive, NULL, 0, NULL);
}

/* Programs that read code from a file: make's makefiles (-f, and Makefile, makefile,
 * GNUmakefile), awk -f, sed -f, sqlite3 -init and .read.  One the line wrote is not followed
 * there (black-box round 9: `echo "a:;git push">Makefile;make' ran git push). */
static void code_file_runs(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags,
        const char *b, size_t bl)
{
	if (bl < 3 || bl > 7 || !strchr("agmns", b[0]))
		return; /* none of these names */
	int awk = name_is(b, bl, "awk") || name_is(b, bl, "gawk") || name_is(b, bl, "mawk") ||
	          name_is(b, bl, "nawk");
	int sed = name_is(b, bl, "sed") || name_is(b, bl, "gsed");
	int make = name_is(b, bl, "make") || name_is(b, bl, "gmake");
	int sql = name_is(b, bl, "sqlite3");
	if (!awk && !sed && !make && !sql)
		return;
	if (make) {
		static const char *const names[] = {"Makefile", "makefile", "GNUmakefile", NULL};
		for (size_t k = 0; names[k] != NULL; k++) {
			struct cls_word f = {names[k], strlen(names[k]), 0, v[0].off, NULL};
			cls_note_run(c, &f, CLS_RUN_CODE, NULL, 0, flags);
		}
	}
	for (size_t i = 1; i < n; i++) {
		const struct cls_word *a = &v[i];
		struct cls_word f = *a;
		int next = 0;
		if (sql) {
			if (cls_word_is(a, "-init"))
				next = 1;
			else if (a->len > 6 && memcmp(a->s, ".read ", 6) == 0) {
				f.s += 6;
				f.len -= 6;
			} else
				continue;
		} else if (a->len > 7 && memcmp(a->s, "--file=", 7) == 0) {
			f.s += 7;
			f.len -= 7;
		} else if (make && a->len > 11 && memcmp(a->s, "--makefile=", 11) == 0) {
			f.s += 11;
			f.len -= 11;
		} else if (cls_word_is(a, "--file") || (make && cls_word_is(a, "--makefile")) ||
		           (awk && (cls_word_is(a, "-i") || cls_word_is(a, "--include") ||
		                           cls_word_is(a, "-E") || cls_word_is(a, "--exec")))) {
			next = 1;
		} else if (a->len >= 2 && a->s[0] == '-' && a->s[1] != '-') {
			/* -f FILE, -fFILE, and a cluster ending in f (sed -nf FILE) */
			const char *fp = memchr(a->s, 'f', a->len);
			if (fp == NULL)
				continue;
			if (fp == a->s + a->len - 1) {
				next = 1;
			} else {
				f.s = fp + 1;
				f.len = (size_t)(a->s + a->len - f.s);
			}
		} else {
			continue;
		}
		if (next) {
			if (i + 1 >= n)
				break;
			f = v[++i];
		}
		cls_note_run(c, &f, CLS_RUN_CODE, NULL, 0, flags);
	}
}

void cls_note_command(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags,
        const struct cls_doc *doc, const char *b, size_t bl)
{
	const struct cls_word *w = &v[0];
	if (b != w->s) {
		cls_note_run(c, w, CLS_RUN_EXEC, NULL, 0, flags);
	} else if (bl > 0) {
		/* builtins and keywords PATH cannot replace are no runs of a file */
		switch (b[0]) {
		case 'c':
			if (name_is(b, bl, "cd")) {
				c->cd_seen = 1;
				return;
			}
			break;
		case 'p':
			if (name_is(b, bl, "pushd") || name_is(b, bl, "popd"))
				c->cd_seen = 1;
			break;
		case 'e':
			if (name_is(b, bl, "echo") || name_is(b, bl, "export") || name_is(b, bl, "exit"))
				return;
			break;
		case 't':
			if (name_is(b, bl, "test") || name_is(b, bl, "true"))
				return;
			break;
		default:
			break;
		}
		cls_note_run(c, w, CLS_RUN_NAME, NULL, 0, flags);
	}
	code_file_runs(c, v, n, flags, b, bl);
	if (n < 2)
		return;
	switch (b[0]) {
	case 'c':
		if (name_is(b, bl, "cp"))
			copy_writes(c, v, n, flags, 0);
		else if (name_is(b, bl, "cpio")) {
			for (size_t i = 1; i < n; i++)
				if (v[i].len > 1 && v[i].s[0] == '-' && v[i].s[1] != '-' &&
				        memchr(v[i].s, 'i', v[i].len) != NULL)
					unpack_writes(c, NULL, flags, w->off);
		}
		break;
	case 'd':
		if (name_is(b, bl, "dd")) {
			const struct cls_word *of = NULL, *in = NULL;
			for (size_t i = 1; i < n; i++) {
				if (v[i].len > 3 && memcmp(v[i].s, "of=", 3) == 0)
					of = &v[i];
				if (v[i].len > 3 && memcmp(v[i].s, "if=", 3) == 0)
					in = &v[i];
			}
			if (of != NULL) {
				struct cls_word o = *of, s;
				o.s += 3;
				o.len -= 3;
				if (in != NULL) {
					s = *in;
					s.s += 3;
					s.len -= 3;
				}
				int kind = in == NULL || nonstatic(&s) ? CLS_WK_SUSPECT : CLS_WK_COPY;
				cls_note_write(c, &o, kind, in ? &s : NULL, NULL, 0, NULL);
			}
		}
		break;
	case 'g':
	case 'b':
		if (name_is(b, bl, "gtar") || name_is(b, bl, "bsdtar")) {
			struct cls_word f;
			int hasf;
			if (tar_extracts(v, n, &f, &hasf))
				unpack_writes(c, hasf ? &f : NULL, flags, w->off);
		} else if (name_is(b, bl, "gunzip") || name_is(b, bl, "bunzip2") ||
		           ((name_is(b, bl, "gzip") || name_is(b, bl, "bzip2")) &&
		                   cls_word_is(&v[1], "-d"))) {
			for (size_t i = 1; i < n; i++)
				if (!is_opt(&v[i]))
					unpack_writes(c, &v[i], flags, w->off);
		}
		break;
	case 'i':
		if (name_is(b, bl, "install"))
			copy_writes(c, v, n, flags, 1);
		break;
	case 'l':
		if (name_is(b, bl, "ln") || name_is(b, bl, "link"))
			copy_writes(c, v, n, flags, 0);
		break;
	case 'm':
		if (name_is(b, bl, "mv"))
			copy_writes(c, v, n, flags, 0);
		break;
	case 's':
		if (name_is(b, bl, "sed") || name_is(b, bl, "gsed")) {
			int inplace = 0;
			for (size_t i = 1; i < n && !inplace; i++)
				inplace = (v[i].len > 1 && v[i].s[0] == '-' && v[i].s[1] == 'i') ||
				          (v[i].len >= 10 && memcmp(v[i].s, "--in-place", 10) == 0);
			/* the files, after the script unless -e, -f or --expression gives it */
			int script = 1;
			for (size_t i = 1; i < n; i++)
				if (cls_word_is(&v[i], "-e") || cls_word_is(&v[i], "-f") ||
				        (v[i].len > 4 && memcmp(v[i].s, "--expression", 4) == 0) ||
				        (v[i].len > 2 && v[i].s[0] == '-' && v[i].s[1] != '-' &&
				                (v[i].s[v[i].len - 1] == 'e' || v[i].s[v[i].len - 1] == 'f')))
					script = 0;
			for (size_t i = 1; inplace && i < n; i++) {
				if (is_opt(&v[i]))
					continue;
				if (script) {
					script = 0;
					continue;
				}
				cls_note_write(c, &v[i], CLS_WK_UNKNOWN, NULL, NULL, 0, NULL);
			}
		}
		break;
	case 't':
		if (name_is(b, bl, "tar")) {
			struct cls_word f;
			int hasf;
			if (tar_extracts(v, n, &f, &hasf))
				unpack_writes(c, hasf ? &f : NULL, flags, w->off);
		} else if (name_is(b, bl, "tee")) {
			int known = doc != NULL && doc->ready && !doc->nonstatic;
			for (size_t i = 1; i < n; i++)
				if (!is_opt(&v[i]))
					cls_note_write(c, &v[i], known ? CLS_WK_TEXT : CLS_WK_UNKNOWN,
					        NULL, known ? doc->s : NULL, known ? doc->len : 0,
					        NULL);
		}
		break;
	case 'u':
		if (name_is(b, bl, "unzip") || name_is(b, bl, "unxz") || name_is(b, bl, "unzstd")) {
			for (size_t i = 1; i < n; i++)
				if (!is_opt(&v[i])) {
					unpack_writes(c, &v[i], flags, w->off);
					break;
				}
		}
		break;
	case 'x':
		if (name_is(b, bl, "xz") || name_is(b, bl, "zstd")) {
			for (size_t i = 1; i < n; i++)
				if (!is_opt(&v[i]))
					unpack_writes(c, &v[i], flags, w->off);
		}
		break;
	case '7':
		if (name_is(b, bl, "7z") || name_is(b, bl, "7za"))
			unpack_writes(c, n > 2 ? &v[2] : NULL, flags, w->off);
		break;
	default:
		break;
	}
}

/* ---- what a redirected command prints --------------------------------------------------- */

struct obuf {
	char s[8192];
	size_t n;
	int over;
};

static void ob_put(struct obuf *o, const char *s, size_t len)
{
	if (o->n + len > sizeof o->s) {
		o->over = 1;
		return;
	}
	memcpy(o->s + o->n, s, len);
	o->n += len;
}

/* printf FORMAT ARGS: %s, %b of text without a backslash, %d of digits, %c, %% and the common
 * escapes; anything else is not modelled (the text is then unknown).  -1 when unknown. */
static int printf_text(const struct cls_word *v, size_t n, struct obuf *o)
{
	size_t i = 1;
	if (i < n && cls_word_is(&v[i], "--"))
		i++;
	if (i >= n || (v[i].len > 0 && v[i].s[0] == '-'))
		return -1;
	const struct cls_word *f = &v[i++];
	size_t a = i;
	do {
		size_t used = a;
		for (size_t k = 0; k < f->len; k++) {
			char ch = f->s[k];
			if (ch == '\\' && k + 1 < f->len) {
				static const char from[] = "\\nt\"'?arfvb", to[] = "\\\n\t\"'?\a\r\f\v\b";
				const char *p = strchr(from, f->s[++k]);
				if (p == NULL)
					return -1;
				ob_put(o, to + (p - from), 1);
			} else if (ch == '%' && k + 1 < f->len) {
				char d = f->s[++k];
				if (d == '%') {
					ob_put(o, "%", 1);
					continue;
				}
				const struct cls_word *arg = a < n ? &v[a++] : NULL;
				const char *as = arg ? arg->s : "";
				size_t al = arg ? arg->len : 0;
				if (d == 's' || (d == 'b' && memchr(as, '\\', al) == NULL)) {
					ob_put(o, as, al);
				} else if (d == 'c') {
					ob_put(o, as, al > 0);
				} else if (d == 'd' || d == 'i') {
					for (size_t q = 0; q < al; q++)
						if (as[q] < '0' || as[q] > '9')
							return -1;
					ob_put(o, al ? as : "0", al ? al : 1);
				} else {
					return -1;
				}
			} else if (ch == '\\' || ch == '%') {
				return -1;
			} else {
				ob_put(o, &ch, 1);
			}
		}
		if (a == used)
			break; /* the format takes no argument: printed once */
	} while (a < n && !o->over);
	return o->over ? -1 : 0;
}

/* The text a simple command prints on its standard output when nothing but the line decides
 * it: cat (or cat -) of a static here-doc or here-string, echo or printf of static words.
 * Returns the text in the arena, or NULL when it is not known. */
static const char *cmd_text(struct cls_ctx *c, const struct cls_cmd *by, size_t *len)
{
	const struct cls_word *v = by->argv;
	size_t n = by->argc;
	if (n == 0) {
		*len = 0;
		return ""; /* `> x' alone: an empty file (fuzz finding) */
	}
	for (size_t i = 0; i < n; i++)
		if (nonstatic(&v[i]))
			return NULL;
	if (cls_word_is(&v[0], "cat") && (n == 1 || (n == 2 && cls_word_is(&v[1], "-")))) {
		if (by->doc == NULL || !by->doc->ready || by->doc->nonstatic)
			return NULL;
		*len = by->doc->len;
		return by->doc->s;
	}
	struct obuf *o = cls_alloc(c, sizeof *o, v[0].off);
	if (o == NULL)
		return NULL;
	o->n = 0;
	o->over = 0;
	if (cls_word_is(&v[0], "echo")) {
		size_t i = 1;
		/* -n, -e, -E and their bundles; a backslash is unknown (-e, xpg_echo) */
		while (i < n && v[i].len > 1 && v[i].s[0] == '-' &&
		        strspn(v[i].s + 1, "neE") == v[i].len - 1)
			i++;
		for (size_t k = i; k < n; k++) {
			if (memchr(v[k].s, '\\', v[k].len) != NULL)
				return NULL;
			if (k > i)
				ob_put(o, " ", 1);
			ob_put(o, v[k].s, v[k].len);
		}
		ob_put(o, "\n", 1);
		if (o->over)
			return NULL;
	} else if (!cls_word_is(&v[0], "printf") || printf_text(v, n, o) == -1) {
		return NULL;
	}
	*len = o->n;
	return o->s;
}

/* ---- following a file the line wrote ---------------------------------------------------- */

static int is_shell(const char *b, size_t bl)
{
	static const char *const shells[] = {"sh", "bash", "dash", "ash", "ksh", "mksh", "zsh",
	        "rbash", NULL};
	return cls_in_list(shells, b, bl);
}

/* An interpreter with a one-liner table (cls_scan_program): python, pypy, perl, ruby, node,
 * php, lua and their versioned names. */
static int is_scanned(const char *b, size_t bl)
{
	static const char *const pre[] = {"python", "pypy", "perl", "ruby", "php", "lua", NULL};
	for (size_t i = 0; pre[i] != NULL; i++) {
		size_t pl = strlen(pre[i]);
		if (bl >= pl && memcmp(b, pre[i], pl) == 0 &&
		        (strspn(b + pl, "0123456789.") == bl - pl ||
		                (pl == 3 && name_is(b, bl, "luajit"))))
			return 1;
	}
	return name_is(b, bl, "node") || name_is(b, bl, "nodejs");
}

static int follow_as(struct cls_ctx *c, const struct cls_filerun *r, const char *t, size_t tl);

/* Follows text t, written by the line, as the file run r runs it.  0 or -1.  The shell that
 * runs it may be sh (dash): its script is read with sh's differences refused (`echo
 * ':&>y git push' > x; sh x' ran git push). */
static int follow(struct cls_ctx *c, const struct cls_filerun *r, const char *t, size_t tl)
{
	int saved = c->sh_mode;
	c->sh_mode = 1;
	int rc = follow_as(c, r, t, tl);
	c->sh_mode = saved;
	return rc;
}

static int follow_as(struct cls_ctx *c, const struct cls_filerun *r, const char *t, size_t tl)
{
	size_t off = r->file.off;
	if (++c->followed > 16)
		return cls_refuse(c, off, "runs files this line wrote too many times to follow");
	for (size_t i = 0; i < tl; i++) {
		unsigned char ch = (unsigned char)t[i];
		if ((ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') || ch == 0x7f)
			return cls_refuse(c, off,
			        "runs a file this line wrote, which holds binary bytes (it may be a "
			        "program): refused");
	}
	struct cls_word text = {t, tl, 0, off, NULL};
	if (r->how == CLS_RUN_CODE)
		return cls_refuse(c, off,
		        "a file this line wrote is read as code by a program that is not followed "
		        "(make, awk -f, sed -f, sqlite3): refused");
	/* the script's commands share the standard input it was run with */
	if (r->how == CLS_RUN_SHELL)
		return cls_run_script(c, t, tl, off, r->flags);
	if (r->how == CLS_RUN_INTERP)
		return cls_scan_program(c, r->ib, r->il, &text);
	/* run as a program: the #! line names the interpreter, none runs it as a shell script */
	if (tl < 2 || t[0] != '#' || t[1] != '!')
		return cls_run_script(c, t, tl, off, r->flags);
	const char *p = t + 2, *end = memchr(t, '\n', tl);
	if (end == NULL)
		end = t + tl;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	const char *ip = p;
	while (p < end && *p != ' ' && *p != '\t')
		p++;
	size_t bl;
	const char *b = last_part(ip, (size_t)(p - ip), &bl);
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (name_is(b, bl, "env")) {
		b = p;
		while (p < end && *p != ' ' && *p != '\t')
			p++;
		bl = (size_t)(p - b);
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
	}
	/* options on the #! line: only those that change no program text */
	size_t al = (size_t)(end - p);
	while (al > 0 && (p[al - 1] == '\r' || p[al - 1] == ' '))
		al--;
	if (al > 0 && (p[0] != '-' || strspn(p + 1, "wxvuSBOTI") != al - 1))
		return cls_refuse(c, off,
		        "runs a file this line wrote, whose #! line passes options: refused");
	if (is_shell(b, bl))
		return cls_run_script(c, t, tl, off, r->flags);
	if (is_scanned(b, bl))
		return cls_scan_program(c, b, bl, &text);
	return cls_refuse(c, off,
	        "runs a file this line wrote, whose #! interpreter (%.*s) is not followed: refused",
	        (int)(bl < 64 ? bl : 64), b);
}

/* Whether write w may be the file run r runs. */
static int matches(const struct cls_write *w, const struct cls_filerun *r)
{
	size_t wl, rl;
	const char *wb = last_part(w->dest.s, w->dest.len, &wl);
	const char *rb = last_part(r->file.s, r->file.len, &rl);
	/* a glob as the file run (sh ?, . [x]) may match any file written before it (black-box
	 * round 9) */
	if (r->file.flags & (CLS_W_GLOB | CLS_W_BRACE))
		return w->dest.off < r->file.off;
	if (wl == 0 || is_mark(wb, wl) || (w->dest.flags & (CLS_W_GLOB | CLS_W_BRACE))) {
		/* a name not static: any file run later by its path (one looked up in PATH
		 * only by a static name) */
		return r->how != CLS_RUN_NAME && w->dest.off < r->file.off;
	}
	return wl == rl && memcmp(wb, rb, wl) == 0;
}

/* Whether a write of the line other than writes[self] may have written the file f (a copy's
 * source). */
static int written(const struct cls_ctx *c, const struct cls_word *f, size_t self)
{
	struct cls_filerun r = {*f, CLS_RUN_EXEC, NULL, 0, 0};
	for (size_t i = 0; i < c->nwrites; i++)
		if (i != self && matches(&c->writes[i], &r))
			return 1;
	return 0;
}

static int refuse_unknown(struct cls_ctx *c, const struct cls_filerun *r, const struct cls_write *w)
{
	if (is_mark(w->dest.s, w->dest.len) || (w->dest.flags & (CLS_W_GLOB | CLS_W_BRACE)))
		return cls_refuse(c, r->file.off,
		        "runs a file after this line wrote to a name that is not static (it may be "
		        "that file): refused");
	return cls_refuse(c, r->file.off,
	        "runs a file this line wrote (%.*s), whose content is not known: refused",
	        (int)(r->file.len < 64 ? r->file.len : 64), r->file.s);
}

/* The text write w puts in its file, or NULL when it is not known. */
static const char *write_text(struct cls_ctx *c, const struct cls_write *w, size_t *len)
{
	if (w->kind == CLS_WK_TEXT) {
		*len = w->tlen;
		return w->text;
	}
	if (w->kind == CLS_WK_CMD && w->by != NULL)
		return cmd_text(c, w->by, len);
	return NULL;
}

/* ssh reads its configuration (and what it includes) each time it starts: a ProxyCommand,
 * LocalCommand, KnownHostsCommand, Match exec or a provider library the line wrote there runs
 * under ssh, scp, sftp, rsync or git.  Text without such keywords is allowed. */
static int check_ssh(struct cls_ctx *c)
{
	const unsigned uses = ALLOW_TAG_SSH_READ | ALLOW_TAG_SSH_WRITE | ALLOW_TAG_GIT_FETCH |
	                      ALLOW_TAG_GIT_PUSH;
	if (!(c->tags & uses))
		return 0;
	static const char *const words[] = {"command", "match", "include", "provider", "proxyuse",
	        NULL};
	for (size_t i = 0; i < c->nwrites; i++) {
		const struct cls_write *w = &c->writes[i];
		if (!w->ssh)
			continue;
		size_t tl = 0;
		const char *t = write_text(c, w, &tl);
		int bad = t == NULL;
		for (size_t k = 0; !bad && words[k] != NULL; k++) {
			size_t kl = strlen(words[k]);
			for (size_t q = 0; !bad && q + kl <= tl; q++)
				bad = strncasecmp(t + q, words[k], kl) == 0;
		}
		if (bad)
			return cls_refuse(c, w->dest.off,
			        "writes ssh's configuration (a command or file it may run) and runs "
			        "ssh, scp, sftp, rsync or git: refused");
	}
	return 0;
}

int cls_check_writes(struct cls_ctx *c)
{
	if (c->nwrites == 0 && !c->writes_over)
		return 0;
	if (c->writes_over)
		return cls_refuse(c, 0, "writes more files than the classifier keeps: refused");
	if (c->runs_over)
		return cls_refuse(c, 0,
		        "writes files and runs more programs than the classifier keeps: refused");
	/* a script operand followed from a variable (for f in t/x.py ...; python3 "$f") is not
	 * matched against the writes by name: any write refuses it (black-box round 5: s=x.py;
	 * echo ... > "$s"; python3 "$s" ran what the line wrote) */
	if (c->var_operand)
		return cls_refuse(c, c->var_operand_off,
		        "a program's operand comes from a variable on a line that writes files");
	/* following a text may record more runs and writes: the loops see them */
	for (size_t i = 0; i < c->nruns; i++) {
		struct cls_filerun r = c->runs[i];
		for (size_t j = 0; j < c->nwrites; j++) {
			const struct cls_write *w = &c->writes[j];
			if (!matches(w, &r))
				continue;
			if (w->kind == CLS_WK_COPY) {
				/* a copy of a file on disk runs what that file would */
				if (!written(c, &w->src, j))
					continue;
			} else if (w->kind == CLS_WK_TEXT || w->kind == CLS_WK_CMD) {
				size_t tl = 0;
				const char *t = write_text(c, w, &tl);
				if (t != NULL) {
					if (follow(c, &r, t, tl) == -1)
						return -1;
					continue;
				}
			}
			return refuse_unknown(c, &r, w);
		}
		if (c->writes_over || c->runs_over)
			return cls_refuse(c, 0, "writes and runs more files than the classifier "
			                        "keeps: refused");
	}
	return check_ssh(c);
}
