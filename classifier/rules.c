/* Per-program rules: which leaf tags a resolved command performs, and the hosts it names.
 * When a rule cannot tell, it answers with more tags, never fewer. */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "allowlist/tags.h"
#include "classifier/classifier.h"
#include "classifier/internal.h"

static int in_set(const char *const *set, const struct cls_word *w)
{
	if (w->flags & CLS_W_EXP)
		return 0;
	return cls_in_list(set, w->s, w->len);
}

/* Whether an unquoted glob or brace in w can make it an option, or more than one word that
 * may be one: `curl --data-binary{,} x` is `--data-binary --data-binary x' to the program, and
 * a file named -d matches `*'. */
static int may_become_option(const struct cls_word *w)
{
	return (w->flags & (CLS_W_GLOB | CLS_W_BRACE)) && w->len > 0 &&
	       (w->s[0] == '-' || w->s[0] == '*' || w->s[0] == '?' || w->s[0] == '[' ||
	               w->s[0] == '{');
}

static int starts_with(const struct cls_word *w, const char *p)
{
	size_t l = strlen(p);
	return w->len >= l && memcmp(w->s, p, l) == 0;
}

/* ---- git -------------------------------------------------------------------------------- */

/* Subcommands that touch no remote. */
static const char *const git_local[] = {"add", "am", "annotate", "apply", "bisect", "blame",
        "branch", "bugreport", "bundle", "cat-file", "check-attr", "check-ignore", "check-mailmap",
        "check-ref-format", "checkout", "checkout-index", "cherry", "cherry-pick", "citool",
        "clean", "column", "commit", "commit-graph", "commit-tree", "config", "count-objects",
        "credential", "describe", "diagnose", "diff", "diff-files", "diff-index", "diff-tree",
        "difftool", "fast-export", "fast-import", "fmt-merge-msg", "for-each-ref", "format-patch",
        "fsck", "gc", "get-tar-commit-id", "grep", "gui", "hash-object", "help", "hook",
        "index-pack", "init", "init-db", "interpret-trailers", "log", "ls-files", "ls-tree",
        "mailinfo", "mailsplit", "merge", "merge-base", "merge-file", "merge-index", "merge-tree",
        "mergetool", "mktag", "mktree", "multi-pack-index", "mv", "name-rev", "notes",
        "pack-objects", "pack-redundant", "pack-refs", "patch-id", "prune", "prune-packed",
        "range-diff", "read-tree", "rebase", "reflog", "repack", "replace", "rerere", "reset",
        "restore", "rev-list", "rev-parse", "revert", "rm", "shortlog", "show", "show-branch",
        "show-index", "show-ref", "sparse-checkout", "stage", "stash", "status", "stripspace",
        "switch", "symbolic-ref", "tag", "unpack-file", "unpack-objects", "update-index",
        "update-ref", "update-server-info", "var", "verify-commit", "verify-pack", "verify-tag",
        "version", "whatchanged", "worktree", "write-tree", NULL};
static const char *const git_fetch[] = {
        "fetch", "pull", "clone", "ls-remote", "fetch-pack", "request-pull", "http-fetch", NULL};
static const char *const git_push[] = {"push", "send-pack", "http-push", NULL};

/* Options with a separate value, per subcommand that has runners or remotes we look into. */
static const char *const git_global_lv[] = {"git-dir", "work-tree", "namespace", "config-env",
        "super-prefix", "list-cmds", "attr-source", NULL};

/* A remote operand of clone/push/fetch: record its host when it names one literally. */
static void git_remote_host(struct cls_ctx *c, const struct cls_word *w)
{
	if (w->flags & CLS_W_EXP)
		return;
	if (strstr(w->s, "://") != NULL) {
		cls_add_url_host(c, w, 0);
		return;
	}
	/* scp-like [user@]host:path, with no slash before the colon */
	const char *colon = memchr(w->s, ':', w->len);
	if (colon == NULL || colon == w->s)
		return;
	if (memchr(w->s, '/', (size_t)(colon - w->s)) != NULL)
		return;
	cls_add_host(c, w->s, (size_t)(colon - w->s));
}

/* The options with a separate value of the subcommands whose operands name a remote, so that
 * a value is not taken for the repository (`git clone -b main HOST:r`). */
static const char *const git_remote_lv[] = {"branch", "origin", "config", "upload-pack",
        "receive-pack", "exec", "jobs", "depth", "deepen", "reference", "reference-if-able",
        "separate-git-dir", "template", "shallow-since", "shallow-exclude", "filter",
        "server-option", "push-option", "bundle-uri", "ref-format", "revision", "refmap",
        "negotiation-tip", "recurse-submodules-default", "submodule-prefix", "strategy",
        "strategy-option", "cleanup", "name", "repo", NULL};

/* Records the hosts a remote-naming subcommand's operands give, from v[i].  Only the operand at
 * position `repo` (0 for most: `git push REPO REFSPEC...`) is read as a repository, URL or
 * scp-like HOST:PATH; any other operand is a refspec, a path or a pattern (`HEAD:main` is not a
 * host) and gives a host only as a URL with a scheme.  `--repo=URL` names one too.  Options may
 * stand anywhere before `--`, as git's parse-options allows; `sv` are the subcommand's short
 * options with a value. */
static void git_remote_operands(struct cls_ctx *c, const struct cls_word *v, size_t n, size_t i,
        const char *sv, size_t repo)
{
	const struct cls_opts spec = {sv, NULL, git_remote_lv, 0, 0};
	size_t pos = 0;
	int dashdash = 0;
	while (i < n) {
		const struct cls_word *w = &v[i];
		if (!dashdash && w->len > 1 && w->s[0] == '-' && !(w->flags & CLS_W_LEADEXP)) {
			if (cls_word_is(w, "--")) {
				dashdash = 1;
				i++;
				continue;
			}
			size_t k = cls_opts_walk(v, n, i, &spec, NULL, NULL, NULL);
			for (size_t j = i; j < k; j++)
				if (starts_with(&v[j], "--repo=")) {
					struct cls_word u = v[j];
					u.s += 7;
					u.len -= 7;
					git_remote_host(c, &u);
				} else if (cls_word_is(&v[j], "--repo") && j + 1 < k) {
					git_remote_host(c, &v[j + 1]);
				}
			i = k > i ? k : i + 1;
			continue;
		}
		if (pos == repo)
			git_remote_host(c, w);
		else if (!(w->flags & CLS_W_EXP) && strstr(w->s, "://") != NULL)
			cls_add_url_host(c, w, 0);
		pos++;
		i++;
	}
}

/* The short options with a separate value of each remote-naming subcommand. */
static const char *git_remote_sv(const struct cls_word *sub)
{
	if (cls_word_is(sub, "clone"))
		return "bocuj";
	if (cls_word_is(sub, "fetch") || cls_word_is(sub, "ls-remote"))
		return "jo";
	if (cls_word_is(sub, "pull"))
		return "josX";
	if (cls_word_is(sub, "push"))
		return "o";
	return NULL;
}

/* The first word at or after i that is not an option, or n. */
static size_t first_operand(const struct cls_word *v, size_t n, size_t i)
{
	while (i < n && v[i].len > 0 && v[i].s[0] == '-' && !(v[i].flags & CLS_W_EXP))
		i++;
	return i;
}

/* Whether git config key k (len kl, "section[.sub].name") names a command git runs: an editor,
 * a pager, an ssh or proxy command, a diff, merge, filter or credential program, ...  Section
 * and name are compared without case, as git does. */
static int git_command_key(const char *k, size_t kl)
{
	/* git-config(1) of git 2.47: every key whose value is a program or a shell command
	 * (attack round 4 added gpg.ssh.defaultKeyCommand, imap.tunnel, sendemail.headerCmd and
	 * smtpServer, the tools' .path keys, hook.NAME.command) */
	static const char *const two[] = {"core.editor", "core.pager", "core.sshcommand",
	        "core.gitproxy", "core.fsmonitor", "core.askpass", "core.alternaterefscommand",
	        "sequence.editor", "diff.external", "credential.helper", "gpg.program",
	        "interactive.difffilter", "sendemail.sendmailcmd", "sendemail.tocmd",
	        "sendemail.cccmd", "sendemail.headercmd", "sendemail.smtpserver",
	        "uploadpack.packobjectshook", "imap.tunnel", "instaweb.httpd", "instaweb.browser",
	        "web.browser", NULL};
	static const char *const three[] = {"diff.command", "diff.textconv", "difftool.cmd",
	        "difftool.path", "mergetool.cmd", "mergetool.path", "merge.driver", "filter.clean",
	        "filter.smudge", "filter.process", "credential.helper", "gpg.program",
	        "gpg.defaultkeycommand", "browser.cmd", "browser.path", "man.cmd", "man.path",
	        "remote.uploadpack", "remote.receivepack", "submodule.update", "trailer.command",
	        "trailer.cmd", "sendemail.sendmailcmd", "sendemail.tocmd", "sendemail.cccmd",
	        "sendemail.headercmd", "sendemail.smtpserver", "hook.command", "guitool.cmd", NULL};
	const char *d1 = memchr(k, '.', kl);
	if (d1 == NULL)
		return 0;
	const char *d2 = k + kl;
	while (d2 > d1 + 1 && d2[-1] != '.')
		d2--;
	size_t sl = (size_t)(d1 - k), nl = (size_t)(k + kl - d2);
	if (sl == 5 && strncasecmp(k, "pager", 5) == 0)
		return 1; /* pager.CMD */
	const char *const *set = d2 == d1 + 1 ? two : three;
	for (size_t i = 0; set[i] != NULL; i++) {
		const char *dot = strchr(set[i], '.');
		if ((size_t)(dot - set[i]) == sl && strncasecmp(set[i], k, sl) == 0 &&
		        strlen(dot + 1) == nl && strncasecmp(dot + 1, d2, nl) == 0)
			return 1;
	}
	return 0;
}

/* Whether key k makes every later git command a possible fetch: a partial clone's promisor
 * remote serves each missing object on demand (extensions.partialClone, remote.NAME.promisor,
 * remote.NAME.partialCloneFilter; attack round 4: git cat-file fetched). */
static int git_fetch_key(const char *k, size_t kl)
{
	if (kl == 23 && strncasecmp(k, "extensions.partialclone", 23) == 0)
		return 1;
	if (kl < 7 || strncasecmp(k, "remote.", 7) != 0)
		return 0;
	const char *d = k + kl;
	while (d > k + 7 && d[-1] != '.')
		d--;
	size_t nl = (size_t)(k + kl - d);
	return (nl == 8 && strncasecmp(d, "promisor", 8) == 0) ||
	       (nl == 18 && strncasecmp(d, "partialclonefilter", 18) == 0);
}

/* -c KEY=VALUE: a command-valued KEY runs VALUE (with a leading '!' for shell helpers); a
 * key that is not static may be one.  0 or -1. */
static int git_config_value(struct cls_ctx *c, const struct cls_word *w, size_t voff)
{
	const char *s = w->s + voff;
	size_t len = w->len - voff;
	const char *eq = memchr(s, '=', len);
	size_t kl = eq ? (size_t)(eq - s) : len;
	if (memchr(s, CLS_EXP_MARK, kl) != NULL)
		return cls_refuse(c, w->off, "git -c key is not static");
	if (git_fetch_key(s, kl))
		c->tags |= ALLOW_TAG_GIT_FETCH;
	/* remote.NAME.url=ext::CMD, url.ext::CMD.insteadOf=...: git runs CMD */
	if (memmem(s, kl, "ext::", 5) != NULL ||
	        (eq != NULL && len - kl - 1 >= 5 && memcmp(eq + 1, "ext::", 5) == 0))
		return cls_refuse(c, w->off, "git -c with an ext:: URL runs a command: refused");
	if (eq == NULL || !git_command_key(s, kl))
		return 0;
	const char *val = eq + 1;
	size_t vl = len - kl - 1;
	if (memchr(val, CLS_EXP_MARK, vl) != NULL)
		return cls_refuse(c, w->off, "%s command is not static",
		        (w->flags & CLS_W_DL) ? "download-to-shell: git config" : "git config");
	if (vl > 0 && val[0] == '!') {
		val++;
		vl--;
	}
	/* filters, helpers, pagers and ssh read from a pipe git writes; editors share git's
	 * standard input: both are classified */
	if (cls_run_script(c, val, vl, w->off, CLS_C_PIPED) == -1)
		return -1;
	return cls_run_script(c, val, vl, w->off, 0);
}

/* Whether w is --NAME[=...] with NAME a non-empty prefix, at least min bytes long, of long
 * (git's parse-options takes unique prefixes). */
static int git_long_is(const struct cls_word *w, const char *lng, size_t min)
{
	if (w->len < 3 || w->s[0] != '-' || w->s[1] != '-' || (w->flags & CLS_W_LEADEXP))
		return 0;
	const char *eq = memchr(w->s, '=', w->len);
	size_t nl = eq ? (size_t)(eq - w->s - 2) : w->len - 2;
	return nl >= min && nl <= strlen(lng) && memcmp(w->s + 2, lng, nl) == 0;
}

/* An ext::COMMAND URL: git runs COMMAND itself, split at spaces ("% " is a space, "%%" a
 * percent sign, %s/%S the service; any other % sequence is an error and runs nothing), when
 * protocol.ext.allow lets it (always assumed here).  0 or -1. */
static int git_ext_command(struct cls_ctx *c, const struct cls_word *w)
{
	if (memchr(w->s, CLS_EXP_MARK, w->len) != NULL)
		return cls_refuse(c, w->off, "git ext:: command is not static");
	size_t n = w->len - 5;
	char *buf = cls_alloc(c, n + 1, w->off);
	struct cls_word *argv = cls_alloc(c, (n / 2 + 2) * sizeof *argv, w->off);
	if (buf == NULL || argv == NULL)
		return -1;
	size_t argc = 0, b = 0;
	const char *p = w->s + 5, *end = w->s + w->len;
	while (p < end) {
		while (p < end && *p == ' ')
			p++;
		if (p >= end)
			break;
		size_t start = b;
		while (p < end && *p != ' ') {
			if (*p == '%') {
				if (p + 1 >= end)
					return 0;
				char e = p[1];
				p += 2;
				if (e == ' ' || e == '%') {
					buf[b++] = e;
				} else if (e == 's' || e == 'S') {
					continue; /* the service name: no network program */
				} else if (e == 'G' || e == 'V') {
					continue;
				} else {
					return 0; /* git refuses the URL */
				}
				continue;
			}
			buf[b++] = *p++;
		}
		argv[argc].s = buf + start;
		argv[argc].len = b - start;
		argv[argc].flags = 0;
		argv[argc].off = w->off;
		argv[argc].deps = NULL;
		buf[b++] = '\0';
		argc++;
	}
	if (argc == 0)
		return 0;
	if (cls_enter(c, w->off) == -1 || cls_run_cmd(c, argv, argc, 0, NULL) == -1)
		return -1;
	cls_leave(c);
	return 0;
}

/* Options after the subcommand that make git run a program on the other end of a transport
 * (--upload-pack, --receive-pack, --exec, and clone's and ls-remote's -u), and ext:: URLs,
 * whose command git runs itself.  0 or -1. */
static int git_transport_commands(
        struct cls_ctx *c, const struct cls_word *v, size_t n, size_t i, int dash_u)
{
	static const char *const opts[] = {"upload-pack", "receive-pack", "exec", NULL};
	for (size_t j = i + 1; j < n; j++) {
		const struct cls_word *w = &v[j];
		if (w->len < 2 || (w->s[0] != '-' && w->s[0] != 'e'))
			continue; /* the common case: an operand */
		if (w->len >= 5 && memcmp(w->s, "ext::", 5) == 0) {
			if (git_ext_command(c, w) == -1)
				return -1;
			continue;
		}
		struct cls_word cmd;
		int hit = 0;
		for (size_t k = 0; opts[k] != NULL && !hit && w->s[1] == '-'; k++)
			hit = git_long_is(w, opts[k], 2);
		if (hit) {
			const char *eq = memchr(w->s, '=', w->len);
			if (eq != NULL) {
				cmd = *w;
				cmd.s = eq + 1;
				cmd.len = w->len - (size_t)(eq + 1 - w->s);
			} else if (j + 1 < n) {
				cmd = v[++j];
			} else {
				continue;
			}
		} else if (dash_u && cls_word_is(w, "-u") && j + 1 < n) {
			cmd = v[++j];
		} else if (dash_u && w->len > 2 && memcmp(w->s, "-u", 2) == 0 &&
		           !(w->flags & CLS_W_LEADEXP)) {
			cmd = *w;
			cmd.s += 2;
			cmd.len -= 2;
		} else {
			continue;
		}
		if (memchr(cmd.s, CLS_EXP_MARK, cmd.len) != NULL)
			return cls_refuse(c, cmd.off, "git transport command is not static");
		if (cls_run_script(c, cmd.s, cmd.len, cmd.off, CLS_C_PIPED) == -1)
			return -1;
	}
	return 0;
}

struct git_alias {
	const char *name;
	size_t nlen;
	const struct cls_word *val; /* the -c word; value after '=' */
	size_t voff;                /* offset of the value in val->s */
};

static int git_run_alias(struct cls_ctx *c, const struct git_alias *a, const struct cls_word *v,
        size_t n, size_t i, unsigned flags);

/* git config [options] KEY VALUE, and git 2.46's `git config set KEY VALUE': the value stays
 * in a configuration file, and a later git command on the line runs it as -c would have
 * (attack round 4: git config core.fsmonitor CMD; git status ran CMD).  So a command key's
 * value is classified as -c's is, an alias's as the alias it defines, and a partial clone's
 * keys make a fetch.  Reading, unsetting and listing forms set nothing.  0 or -1. */
static int git_config_cmd(
        struct cls_ctx *c, const struct cls_word *v, size_t n, size_t i, unsigned flags)
{
	static const char *const lv[] = {
	        "file", "blob", "type", "default", "comment", "value", NULL};
	static const char *const reads[] = {"get", "get-all", "get-regexp", "get-urlmatch",
	        "get-color", "get-colorbool", "unset", "unset-all", "list", "rename-section",
	        "remove-section", "edit", "show-origin", "show-scope", "name-only", "null", NULL};
	const struct cls_word *op[2] = {NULL, NULL};
	size_t nop = 0;
	int dashdash = 0, first = 1;
	for (size_t j = i + 1; j < n; j++) {
		const struct cls_word *w = &v[j];
		/* options stop at the first operand (the key): a value may start with a dash */
		if (!dashdash && nop == 0 && w->len > 1 && w->s[0] == '-' &&
		        !(w->flags & CLS_W_LEADEXP)) {
			if (cls_word_is(w, "--")) {
				dashdash = 1;
				continue;
			}
			if (w->s[1] != '-') {
				/* -f FILE; -l, -e, -z ...: a listing or the editor */
				if (cls_word_is(w, "-f"))
					j++;
				else if (strchr("lez", w->s[1]) != NULL)
					return 0;
				continue;
			}
			const char *eq = memchr(w->s, '=', w->len);
			size_t nl = eq ? (size_t)(eq - w->s - 2) : w->len - 2;
			if (cls_in_list(reads, w->s + 2, nl))
				return 0;
			if (!eq && cls_in_list(lv, w->s + 2, nl))
				j++;
			continue;
		}
		if (first && !(w->flags & CLS_W_EXP) && memchr(w->s, '.', w->len) == NULL) {
			/* git 2.46's verbs: set KEY VALUE; get, unset, list ... set nothing */
			first = 0;
			if (cls_word_is(w, "set"))
				continue;
			return 0;
		}
		first = 0;
		if (nop < 2)
			op[nop] = w;
		nop++;
	}
	if (nop < 2 && !(flags & CLS_C_XARGS))
		return 0; /* KEY alone reads it */
	if (op[0] == NULL || op[1] == NULL)
		return cls_refuse(c, v[i].off, "git config's key or value comes from xargs' input");
	/* KEY=VALUE, as -c takes it */
	size_t kl = op[0]->len, vl = op[1]->len;
	char *kv = cls_alloc(c, kl + vl + 2, op[0]->off);
	if (kv == NULL)
		return -1;
	memcpy(kv, op[0]->s, kl);
	kv[kl] = '=';
	memcpy(kv + kl + 1, op[1]->s, vl);
	kv[kl + vl + 1] = '\0';
	struct cls_word w = {kv, kl + vl + 1, op[0]->flags | op[1]->flags, op[0]->off, NULL};
	if (memchr(kv, '.', kl) == NULL && memchr(kv, CLS_EXP_MARK, kl) == NULL)
		return 0; /* not a key: git refuses it */
	if (git_config_value(c, &w, 0) == -1)
		return -1;
	if (kl > 6 && strncasecmp(kv, "alias.", 6) == 0) {
		/* the alias runs when a later git command names it: what it runs is classified
		 * (`alias.l = -c core.pager=CMD log'), but its git tags are left to that command,
		 * which names no subcommand git knows and so gets both */
		struct git_alias a = {kv + 6, kl - 6, &w, kl + 1};
		unsigned git = c->tags & (ALLOW_TAG_GIT_FETCH | ALLOW_TAG_GIT_PUSH);
		if (git_run_alias(c, &a, v, i + 1, i, 0) == -1)
			return -1;
		c->tags = (c->tags & ~(ALLOW_TAG_GIT_FETCH | ALLOW_TAG_GIT_PUSH)) | git;
	}
	return 0;
}

static int git_sub(struct cls_ctx *c, const struct cls_word *v, size_t n, size_t i, unsigned flags,
        const struct git_alias *aliases, size_t naliases)
{
	const struct cls_word *sub = &v[i];
	if (sub->flags & (CLS_W_EXP | CLS_W_GLOB | CLS_W_BRACE))
		return cls_refuse(c, sub->off, "git subcommand is not static");
	if (git_transport_commands(c, v, n, i,
	            cls_word_is(sub, "clone") || cls_word_is(sub, "ls-remote")) == -1)
		return -1;
	/* git grep -O/--open-files-in-pager=CMD and git difftool -x/--extcmd=CMD run CMD */
	int grep = cls_word_is(sub, "grep"), dtool = cls_word_is(sub, "difftool");
	for (size_t j = i + 1; (grep || dtool) && j < n; j++) {
		const struct cls_word *w = &v[j];
		if (cls_word_is(w, "--"))
			break;
		if (w->len < 2 || w->s[0] != '-')
			continue;
		if ((grep && (git_long_is(w, "open-files-in-pager", 1) ||
		                     (w->s[1] != '-' && memchr(w->s, 'O', w->len)))) ||
		        (dtool && (git_long_is(w, "extcmd", 1) ||
		                          (w->s[1] != '-' && memchr(w->s, 'x', w->len)))))
			return cls_refuse(c, w->off, "git %s runs a command it is given: refused",
			        sub->s);
		if (grep && (cls_word_is(w, "-e") || cls_word_is(w, "-f")))
			j++; /* a pattern */
	}
	if (in_set(git_push, sub)) {
		c->tags |= ALLOW_TAG_GIT_PUSH;
		git_remote_operands(c, v, n, i + 1, git_remote_sv(sub), 0);
		return 0;
	}
	if (in_set(git_fetch, sub)) {
		c->tags |= ALLOW_TAG_GIT_FETCH;
		/* git request-pull START URL [END] */
		git_remote_operands(c, v, n, i + 1, git_remote_sv(sub),
		        cls_word_is(sub, "request-pull") ? 1 : 0);
		return 0;
	}
	size_t k = first_operand(v, n, i + 1);
	const struct cls_word *op = k < n ? &v[k] : NULL;
	/* Under xargs (or parallel) the input appends words: `remote add --fetch`, `archive
	 * --remote` fetch, `submodule foreach` runs a command (oracle fuzz finding: echo 'add
	 * --fetch o URL' | xargs git-remote was none). */
	if (flags & CLS_C_XARGS) {
		if (cls_word_is(sub, "submodule"))
			return cls_refuse(c, sub->off, "git submodule's words come from xargs' input "
			                               "(foreach runs a command)");
		if (cls_word_is(sub, "remote") || cls_word_is(sub, "archive"))
			c->tags |= ALLOW_TAG_GIT_FETCH;
	}
	if (cls_word_is(sub, "remote")) {
		if (op == NULL)
			return 0;
		if (cls_word_is(op, "update") || cls_word_is(op, "prune") ||
		        (cls_word_is(op, "show") && !(k + 1 < n && cls_word_is(&v[k + 1], "-n")))) {
			c->tags |= ALLOW_TAG_GIT_FETCH;
		} else if (cls_word_is(op, "add")) {
			/* -f, --fetch or a prefix of it (--fe): parse-options takes prefixes */
			for (size_t j = k + 1; j < n; j++)
				if (cls_word_is(&v[j], "-f") || git_long_is(&v[j], "fetch", 1) ||
				        (v[j].len > 1 && v[j].s[0] == '-' && v[j].s[1] != '-' &&
				                memchr(v[j].s, 'f', v[j].len)))
					c->tags |= ALLOW_TAG_GIT_FETCH;
		} else if (cls_word_is(op, "set-head")) {
			/* -a/--auto asks the remote for its HEAD (attack round 4) */
			for (size_t j = k + 1; j < n; j++)
				if (cls_word_is(&v[j], "-a") || git_long_is(&v[j], "auto", 1) ||
				        (v[j].flags & CLS_W_LEADEXP))
					c->tags |= ALLOW_TAG_GIT_FETCH;
		} else if (op->flags & CLS_W_EXP) {
			c->tags |= ALLOW_TAG_GIT_FETCH;
		}
		return 0;
	}
	if (cls_word_is(sub, "archive")) {
		for (size_t j = i + 1; j < n; j++)
			if (git_long_is(&v[j], "remote", 1) || (v[j].flags & CLS_W_LEADEXP))
				c->tags |= ALLOW_TAG_GIT_FETCH;
		return 0;
	}
	if (cls_word_is(sub, "submodule")) {
		if (op == NULL)
			return 0;
		if (cls_word_is(op, "update") || cls_word_is(op, "add") ||
		        cls_word_is(op, "sync")) {
			c->tags |= ALLOW_TAG_GIT_FETCH;
			/* add [-b BRANCH] REPO [PATH]; update and sync take paths */
			git_remote_operands(c, v, n, k + 1, "b",
			        cls_word_is(op, "add") ? 0 : (size_t)-1);
			return 0;
		}
		if (cls_word_is(op, "foreach")) {
			/* the rest is a shell command run in each submodule */
			size_t j = first_operand(v, n, k + 1);
			if (j >= n)
				return 0;
			size_t total = 0;
			for (size_t m = j; m < n; m++) {
				if (v[m].flags & CLS_W_EXP)
					return cls_refuse(c, v[m].off,
					        "git submodule foreach command is not "
					        "static");
				total += v[m].len + 1;
			}
			char *s = cls_alloc(c, total + 1, v[j].off);
			if (s == NULL)
				return -1;
			size_t p = 0;
			for (size_t m = j; m < n; m++) {
				if (p)
					s[p++] = ' ';
				memcpy(s + p, v[m].s, v[m].len);
				p += v[m].len;
			}
			s[p] = '\0';
			return cls_run_script(c, s, p, v[j].off, 0);
		}
		if (op->flags & CLS_W_EXP)
			c->tags |= ALLOW_TAG_GIT_FETCH;
		return 0;
	}
	if (cls_word_is(sub, "subtree")) {
		if (op == NULL)
			return 0;
		if (cls_word_is(op, "push"))
			c->tags |= ALLOW_TAG_GIT_PUSH;
		else if (cls_word_is(op, "pull") || cls_word_is(op, "add"))
			c->tags |= ALLOW_TAG_GIT_FETCH;
		else if (!cls_word_is(op, "split") && !cls_word_is(op, "merge"))
			c->tags |= ALLOW_TAG_GIT_FETCH | ALLOW_TAG_GIT_PUSH;
		return 0;
	}
	if (cls_word_is(sub, "lfs")) {
		if (op == NULL)
			return 0;
		static const char *const lfs_fetch[] = {"fetch", "pull", "clone", "checkout", NULL};
		static const char *const lfs_local[] = {"install", "uninstall", "track", "untrack",
		        "ls-files", "status", "env", "version", "migrate", "logs", "pointer",
		        "prune", "fsck", "lock", "locks", "unlock", "update", "ext", "smudge",
		        "clean", "filter-process", "merge-driver", "standalone-file", NULL};
		if (cls_word_is(op, "push"))
			c->tags |= ALLOW_TAG_GIT_PUSH;
		else if (in_set(lfs_fetch, op))
			c->tags |= ALLOW_TAG_GIT_FETCH;
		else if (!in_set(lfs_local, op))
			c->tags |= ALLOW_TAG_GIT_FETCH | ALLOW_TAG_GIT_PUSH;
		return 0;
	}
	if (cls_word_is(sub, "rebase")) {
		/* -x CMD / --exec CMD / --exec=CMD run a shell command after each commit */
		for (size_t j = i + 1; j < n; j++) {
			const struct cls_word *w = &v[j];
			struct cls_word cmd;
			const char *eq = memchr(w->s, '=', w->len);
			if (cls_word_is(w, "-x") || (git_long_is(w, "exec", 3) && eq == NULL)) {
				if (j + 1 >= n)
					break;
				cmd = v[++j];
			} else if (git_long_is(w, "exec", 3)) {
				cmd = *w;
				cmd.s = eq + 1;
				cmd.len = w->len - (size_t)(eq + 1 - w->s);
			} else if (starts_with(w, "-x") && !(w->flags & CLS_W_LEADEXP)) {
				cmd = *w;
				cmd.s += 2;
				cmd.len -= 2;
			} else {
				continue;
			}
			if (cmd.flags & CLS_W_EXP)
				return cls_refuse(
				        c, cmd.off, "git rebase --exec command is not static");
			if (cls_run_script(c, cmd.s, cmd.len, cmd.off, 0) == -1)
				return -1;
		}
		return 0;
	}
	if (cls_word_is(sub, "bisect")) {
		if (op != NULL && cls_word_is(op, "run") && k + 1 < n) {
			if (cls_enter(c, v[k + 1].off) == -1 ||
			        cls_run_cmd(c, v + k + 1, n - k - 1, 0, NULL) == -1)
				return -1;
			cls_leave(c);
		}
		return 0;
	}
	if (cls_word_is(sub, "config"))
		return git_config_cmd(c, v, n, i, flags);
	if (in_set(git_local, sub))
		return 0;
	for (size_t a = naliases; a-- > 0;)
		if (aliases[a].nlen == sub->len &&
		        strncasecmp(aliases[a].name, sub->s, sub->len) == 0)
			return git_run_alias(c, &aliases[a], v, n, i, flags);
	/* unknown: an alias from a config file, or an external git-foo */
	c->tags |= ALLOW_TAG_GIT_FETCH | ALLOW_TAG_GIT_PUSH;
	return 0;
}

/* Runs git argv v[0..n) (v[0] is git). */
static int git_main(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	struct git_alias aliases[16];
	size_t naliases = 0;
	size_t i = 1;
	while (i < n) {
		const struct cls_word *w = &v[i];
		if (w->flags & CLS_W_LEADEXP)
			return cls_refuse(c, w->off, "git option or subcommand is not static");
		if (w->len == 0 || w->s[0] != '-')
			break;
		const struct cls_word *val = NULL;
		size_t voff = 0;
		if (cls_word_is(w, "-C")) {
			i += 2;
			continue;
		}
		if (cls_word_is(w, "-c")) {
			if (i + 1 < n)
				val = &v[i + 1];
			i += 2;
		} else if (w->len > 2 && w->s[1] == 'c' && w->s[0] == '-' && w->s[1] != '-') {
			val = w;
			voff = 2;
			i++;
		} else if (starts_with(w, "--") && w->len > 2) {
			const char *eq = memchr(w->s, '=', w->len);
			size_t nl = eq ? (size_t)(eq - w->s - 2) : w->len - 2;
			if (nl == 10 && memcmp(w->s + 2, "config-env", 10) == 0) {
				/* --config-env KEY=ENVVAR: the value is in the environment */
				const struct cls_word *kv = eq ? w : (i + 1 < n ? &v[i + 1] : NULL);
				size_t ko = eq ? (size_t)(eq + 1 - w->s) : 0;
				if (kv != NULL) {
					const char *ke = memchr(kv->s + ko, '=', kv->len - ko);
					size_t kl = ke ? (size_t)(ke - kv->s) - ko : kv->len - ko;
					if (memchr(kv->s + ko, CLS_EXP_MARK, kl) != NULL ||
					        git_command_key(kv->s + ko, kl) ||
					        (kl > 6 && strncasecmp(kv->s + ko, "alias.", 6) == 0))
						return cls_refuse(c, kv->off,
						        "git --config-env sets a command from the "
						        "environment: refused");
				}
			}
			if (!eq && cls_in_list(git_global_lv, w->s + 2, nl))
				i++;
			i++;
		} else {
			if (starts_with(w, "-C") && w->len > 2) {
				i++;
				continue;
			}
			i++;
		}
		if (val != NULL) {
			if (git_config_value(c, val, voff) == -1)
				return -1;
			/* -c alias.NAME=VALUE defines an alias for this run */
			const char *s = val->s + voff;
			size_t len = val->len - voff;
			if (len > 6 && strncasecmp(s, "alias.", 6) == 0) {
				const char *eq = memchr(s, '=', len);
				if (eq != NULL && naliases < sizeof aliases / sizeof aliases[0]) {
					aliases[naliases].name = s + 6;
					aliases[naliases].nlen = (size_t)(eq - s - 6);
					aliases[naliases].val = val;
					aliases[naliases].voff = (size_t)(eq + 1 - val->s);
					naliases++;
				}
			}
		}
	}
	if (i >= n) {
		if (flags & CLS_C_XARGS)
			c->tags |= ALLOW_TAG_GIT_FETCH | ALLOW_TAG_GIT_PUSH;
		return 0;
	}
	return git_sub(c, v, n, i, flags, aliases, naliases);
}

static int git_run_alias(struct cls_ctx *c, const struct git_alias *a, const struct cls_word *v,
        size_t n, size_t i, unsigned flags)
{
	const struct cls_word *w = a->val;
	const char *s = w->s + a->voff;
	size_t len = w->len - a->voff;
	if (memchr(s, CLS_EXP_MARK, len) != NULL)
		return cls_refuse(c, w->off, "git alias value is not static");
	if (cls_enter(c, w->off) == -1)
		return -1;
	if (len > 0 && s[0] == '!') {
		/* a shell alias: git runs it with sh -c, the arguments appended */
		if (cls_run_script(c, s + 1, len - 1, w->off,
		            flags & (CLS_C_XARGS | CLS_C_XOPTS | CLS_C_PIPED | CLS_C_STDIN)) == -1)
			return -1;
		cls_leave(c);
		return 0;
	}
	/* git ALIAS-WORDS rest: split the value as git does (shell-like quoting) */
	struct cls_cmd *list = NULL;
	char *buf = cls_alloc(c, len + 5, w->off);
	if (buf == NULL)
		return -1;
	memcpy(buf, "git ", 4);
	memcpy(buf + 4, s, len);
	buf[len + 4] = '\0';
	if (cls_parse(c, buf, len + 4, w->off, &list) == -1)
		return -1;
	if (list == NULL || list->next != NULL)
		return cls_refuse(c, w->off, "git alias value is not a single command");
	size_t an = list->argc, rest = n - i - 1;
	struct cls_word *nv = cls_alloc(c, (an + rest) * sizeof *nv, w->off);
	if (nv == NULL)
		return -1;
	memcpy(nv, list->argv, an * sizeof *nv);
	memcpy(nv + an, v + i + 1, rest * sizeof *nv);
	/* Aliases do not see each other here: git refuses recursive aliases anyway. */
	if (git_main(c, nv, an + rest, flags) == -1)
		return -1;
	cls_leave(c);
	return 0;
}

int cls_rule_git(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	/* git runs the commands it is given (`!' aliases, core.pager, ...) with /bin/sh */
	int saved = c->sh_mode;
	c->sh_mode = 1;
	int rc = git_main(c, v, n, flags);
	c->sh_mode = saved;
	return rc;
}

/* scalar (git's large-repository front end, /usr/bin/scalar): clone fetches, register and
 * reconfigure start git maintenance (its prefetch task fetches), `run fetch` and `run all`
 * fetch (attack round 4).  -c KEY=VALUE is git's -c.  Any other verb, or one that is not
 * static, may fetch. */
int cls_rule_scalar(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const char *const local[] = {"list", "unregister", "delete", "diagnose", "version",
	        "help", "--help", "-h", NULL};
	size_t i = 1;
	while (i < n && v[i].len > 1 && v[i].s[0] == '-' && !(v[i].flags & CLS_W_LEADEXP)) {
		if (cls_word_is(&v[i], "-c") && i + 1 < n) {
			if (git_config_value(c, &v[i + 1], 0) == -1)
				return -1;
			i += 2;
		} else if (cls_word_is(&v[i], "-C")) {
			i += 2;
		} else if (v[i].s[1] == 'c' && v[i].len > 2) {
			if (git_config_value(c, &v[i], 2) == -1)
				return -1;
			i++;
		} else {
			i++;
		}
	}
	if (i >= n) {
		if (flags & CLS_C_XARGS)
			c->tags |= ALLOW_TAG_GIT_FETCH;
		return 0;
	}
	const struct cls_word *sub = &v[i];
	if (in_set(local, sub))
		return 0;
	if (cls_word_is(sub, "run")) {
		size_t k = first_operand(v, n, i + 1);
		static const char *const quiet[] = {
		        "config", "commit-graph", "loose-objects", "pack-files", NULL};
		if (k < n && in_set(quiet, &v[k]))
			return 0;
	}
	if (cls_word_is(sub, "clone"))
		git_remote_operands(c, v, n, i + 1, "b", 0);
	c->tags |= ALLOW_TAG_GIT_FETCH;
	return 0;
}

/* ---- curl ------------------------------------------------------------------------------- */

static const char *const curl_lv[] = {"abstract-unix-socket", "alt-svc", "aws-sigv4", "cacert",
        "capath", "cert", "cert-type", "ciphers", "config", "connect-timeout", "connect-to",
        "continue-at", "cookie", "cookie-jar", "create-file-mode", "crlfile", "curves", "data",
        "data-ascii", "data-binary", "data-raw", "data-urlencode", "delegation", "dns-interface",
        "dns-ipv4-addr", "dns-ipv6-addr", "dns-servers", "doh-url", "dump-header", "ech",
        "egd-file", "engine", "etag-compare", "etag-save", "expect100-timeout", "form",
        "form-string", "ftp-account", "ftp-alternative-to-user", "ftp-method", "ftp-port",
        "ftp-ssl-ccc-mode", "happy-eyeballs-timeout-ms", "haproxy-clientip", "header", "hostpubmd5",
        "hostpubsha256", "hsts", "interface", "ipfs-gateway", "json", "keepalive-time", "key",
        "key-type", "krb", "libcurl", "limit-rate", "local-port", "login-options", "mail-auth",
        "mail-from", "mail-rcpt", "max-filesize", "max-redirs", "max-time", "netrc-file", "noproxy",
        "oauth2-bearer", "output", "output-dir", "parallel-max", "pass", "pinnedpubkey", "preproxy",
        "proto", "proto-default", "proto-redir", "proxy", "proxy-cacert", "proxy-capath",
        "proxy-cert", "proxy-cert-type", "proxy-ciphers", "proxy-crlfile", "proxy-header",
        "proxy-key", "proxy-key-type", "proxy-pass", "proxy-pinnedpubkey", "proxy-service-name",
        "proxy-tls13-ciphers", "proxy-tlsauthtype", "proxy-tlspassword", "proxy-tlsuser",
        "proxy-user", "proxy1.0", "pubkey", "quote", "random-file", "range", "rate", "referer",
        "request", "request-target", "resolve", "retry", "retry-delay", "retry-max-time",
        "sasl-authzid", "service-name", "socks4", "socks4a", "socks5", "socks5-gssapi-service",
        "socks5-hostname", "speed-limit", "speed-time", "stderr", "telnet-option", "tftp-blksize",
        "time-cond", "tls-max", "tls13-ciphers", "tlsauthtype", "tlspassword", "tlsuser", "trace",
        "trace-ascii", "trace-config", "unix-socket", "upload-file", "url", "url-query", "user",
        "user-agent", "variable", "write-out", 
        /* curl takes a unique prefix of a long option (curl 7.88 --help all) */
        CLS_LONG_FLAGS,
        "anyauth", "append", "basic", "cert-status", "compressed", "compressed-ssh",
        "create-dirs", "crlf", "digest", "disable", "disable-eprt", "disable-epsv",
        "disallow-username-in-url", "doh-cert-status", "doh-insecure", "fail", "fail-early",
        "fail-with-body", "false-start", "form-escape", "ftp-create-dirs", "ftp-pasv", "ftp-pret",
        "ftp-skip-pasv-ip", "ftp-ssl-ccc", "ftp-ssl-control", "get", "globoff",
        "haproxy-protocol", "head", "help", "http0.9", "http1.0", "http1.1", "http2",
        "http2-prior-knowledge", "http3", "http3-only", "ignore-content-length", "include",
        "insecure", "ipv4", "ipv6", "junk-session-cookies", "list-only", "location",
        "location-trusted", "mail-rcpt-allowfails", "manual", "metalink", "negotiate", "netrc",
        "netrc-optional", "next", "no-alpn", "no-buffer", "no-clobber", "no-keepalive", "no-npn",
        "no-progress-meter", "no-sessionid", "ntlm", "ntlm-wb", "parallel", "parallel-immediate",
        "path-as-is", "post301", "post302", "post303", "progress-bar", "proxy-anyauth",
        "proxy-basic", "proxy-digest", "proxy-insecure", "proxy-negotiate", "proxy-ntlm",
        "proxy-ssl-allow-beast", "proxy-ssl-auto-client-cert", "proxy-tlsv1", "proxytunnel",
        "raw", "remote-header-name", "remote-name", "remote-name-all", "remote-time",
        "remove-on-error", "retry-all-errors", "retry-connrefused", "sasl-ir", "show-error",
        "silent", "socks5-basic", "socks5-gssapi", "socks5-gssapi-nec", "ssl", "ssl-allow-beast",
        "ssl-auto-client-cert", "ssl-no-revoke", "ssl-reqd", "ssl-revoke-best-effort", "sslv2",
        "sslv3", "styled-output", "suppress-connect-headers", "tcp-fastopen", "tcp-nodelay",
        "tftp-no-options", "tlsv1", "tlsv1.0", "tlsv1.1", "tlsv1.2", "tlsv1.3", "tr-encoding",
        "trace-time", "use-ascii", "verbose", "version", "xattr", NULL};
static const char *const curl_body[] = {"data", "data-ascii", "data-binary", "data-raw",
        "data-urlencode", "json", "form", "form-string", "upload-file", NULL};

/* What a curl URL's scheme reaches (curl 7.88): HTTP (http, https, and a URL with no scheme
 * whose host does not make curl guess another protocol), a websocket (both HTTP tags, as on
 * the wire), SSH (scp, sftp: both SSH tags), nothing (file), or a protocol egressd cannot
 * tell a read from a write in (telnet sends standard input, gopher and dict send the path,
 * ftp's -Q and -T, smtp, imap, pop3, ldap, mqtt, rtsp, rtmp, smb, tftp): net:raw.  A scheme
 * that is not static, or holds curl's own {,} and [] globs, is any of them. */
#define CURL_HTTP 1u
#define CURL_WS 2u
#define CURL_SSH 4u
#define CURL_RAW 8u
#define CURL_ANY (CURL_HTTP | CURL_WS | CURL_SSH | CURL_RAW)

struct curl_state {
	int body;       /* -d and friends */
	int upload;     /* -F, -T, --json: a body -G does not turn into a query */
	int get;        /* -G; --no-get cancels it */
	int method;     /* 0 none, 1 read method, 2 write method, 3 unknown */
	int unknown;    /* -K or an expansion where an option could be */
	int anyurl;     /* a URL egressd cannot see: -K, an expansion, words xargs appends */
	unsigned proto; /* the schemes --proto leaves (CURL_* bits), when nproto > 0 */
	int nproto;     /* --proto options seen */
	const struct cls_word *lastval; /* the word the last option's value came from */
	struct cls_ctx *c; /* for the files -o and -O write (writes.c) */
};

/* A file a download writes: -o FILE (o->val), or a name the URL gives (val NULL). */
static void download_file(struct cls_ctx *c, const struct cls_opt *o, int named)
{
	static const struct cls_word any = {"\x01", 1, CLS_W_EXP, 0, NULL};
	struct cls_word w = any;
	if (named && o->val != NULL && o->vw != NULL) {
		w = *o->vw;
		w.s = o->val;
		w.len = o->vlen;
	} else if (o->vw != NULL) {
		w.off = o->vw->off;
	}
	cls_note_write(c, &w, CLS_WK_UNKNOWN, NULL, NULL, 0, NULL);
}

static void curl_method(struct curl_state *st, const char *s, size_t len, unsigned wflags)
{
	if (memchr(s, CLS_EXP_MARK, len) != NULL || (wflags & CLS_W_LEADEXP && len == 0))
		st->method = 3;
	else
		st->method = cls_method_is_read(s, len) ? 1 : 2;
}

static unsigned curl_scheme_of(const char *s, size_t len);

/* --proto LIST: the schemes curl may use, each entry [+-=]NAME or all, from all of them.
 * Several --proto options give the union of their sets (curl keeps the last; either way no
 * less).  A list that is not static leaves every scheme. */
static unsigned curl_proto(const char *s, size_t len)
{
	if (memchr(s, CLS_EXP_MARK, len) != NULL)
		return CURL_ANY;
	unsigned set = CURL_ANY;
	size_t i = 0;
	while (i < len) {
		size_t j = i;
		while (j < len && s[j] != ',')
			j++;
		const char *e = s + i;
		size_t el = j - i;
		char op = '+';
		if (el > 0 && (e[0] == '+' || e[0] == '-' || e[0] == '=')) {
			op = e[0];
			e++;
			el--;
		}
		unsigned bits = (el == 3 && strncasecmp(e, "all", 3) == 0) ? CURL_ANY
		                : el > 0                                   ? curl_scheme_of(e, el)
		                                                           : 0;
		if (op == '=')
			set = bits;
		else if (op == '-')
			set &= ~bits;
		else
			set |= bits;
		i = j + 1;
	}
	return set;
}

static int curl_opt(void *arg, const struct cls_opt *o)
{
	struct curl_state *st = arg;
	st->lastval = o->vw;
	if (o->c != 0) {
		switch (o->c) {
		case 'd':
			st->body = 1;
			break;
		case 'F':
		case 'T':
			st->upload = 1;
			break;
		case 'G':
			st->get = 1;
			break;
		case 'K':
			st->unknown = st->anyurl = 1;
			break;
		case 'X':
			if (o->val != NULL)
				curl_method(st, o->val, o->vlen, o->vw ? o->vw->flags : 0);
			break;
		case 'I':
			if (st->method == 0)
				st->method = 1;
			break;
		case 'o':
		case 'O':
			download_file(st->c, o, o->c == 'o');
			break;
		case CLS_EXP_MARK:
			st->unknown = st->anyurl = 1;
			break;
		default:
			break;
		}
		return 0;
	}
	const char *l = o->l;
	size_t ll = o->ll;
	/* curl 8 --expand-OPT takes OPT's value with {{variables}} expanded */
	if (ll > 7 && memcmp(l, "expand-", 7) == 0) {
		l += 7;
		ll -= 7;
	}
	if (cls_in_list(curl_body, l, ll)) {
		if ((ll == 4 && memcmp(l, "json", 4) == 0) ||
		        (ll >= 4 && memcmp(l, "form", 4) == 0) ||
		        (ll == 11 && memcmp(l, "upload-file", 11) == 0))
			st->upload = 1;
		else
			st->body = 1;
	} else if (ll == 7 && memcmp(l, "request", 7) == 0 && o->val != NULL) {
		curl_method(st, o->val, o->vlen, o->vw ? o->vw->flags : 0);
	} else if (ll == 3 && memcmp(l, "get", 3) == 0) {
		st->get = 1;
	} else if (ll > 3 && ll <= 6 && memcmp(l, "no-get", ll) == 0) {
		/* --no-OPTION turns a boolean off, OPTION a unique prefix (attack round 4: `curl
		 * -d x -G --no-get URL' is a POST); of curl's booleans only -G changes a tag */
		st->get = 0;
	} else if (ll == 6 && memcmp(l, "config", 6) == 0) {
		st->unknown = st->anyurl = 1;
	} else if (ll == 5 && memcmp(l, "proto", 5) == 0 && o->val != NULL) {
		st->proto = (st->nproto++ ? st->proto : 0) | curl_proto(o->val, o->vlen);
	} else if ((ll == 6 && memcmp(l, "output", 6) == 0) ||
	           (ll >= 11 && memcmp(l, "remote-name", 11) == 0)) {
		download_file(st->c, o, ll == 6);
	} else if (ll == 4 && memcmp(l, "head", 4) == 0 && st->method == 0) {
		st->method = 1;
	} else if (memchr(l, CLS_EXP_MARK, ll) != NULL) {
		st->unknown = st->anyurl = 1;
	}
	return 0;
}

static unsigned curl_scheme_of(const char *s, size_t len)
{
	/* http and https (any case) first: nearly every URL */
	if ((len == 4 || (len == 5 && (s[4] | 0x20) == 's')) && (s[0] | 0x20) == 'h' &&
	        (s[1] | 0x20) == 't' && (s[2] | 0x20) == 't' && (s[3] | 0x20) == 'p')
		return CURL_HTTP;
	if ((len == 2 && strncasecmp(s, "ws", 2) == 0) || (len == 3 && strncasecmp(s, "wss", 3) == 0))
		return CURL_WS;
	if ((len == 3 && strncasecmp(s, "scp", 3) == 0) ||
	        (len == 4 && strncasecmp(s, "sftp", 4) == 0))
		return CURL_SSH;
	if (len == 4 && strncasecmp(s, "file", 4) == 0)
		return CURL_HTTP; /* local, but the public sample says http:read: kept */
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '+' && s[i] != '-' && s[i] != '.')
			return CURL_ANY; /* an expansion or a glob in the scheme */
	return CURL_RAW;
}

/* Whether s[0..len) names a protocol curl speaks other than HTTP, websockets, SSH and file
 * (a host name such as `localhost' is none). */
static int curl_raw_scheme(const char *s, size_t len)
{
	static const char *const raw[] = {"dict", "ftp", "ftps", "gopher", "gophers", "imap",
	        "imaps", "ipfs", "ipns", "ldap", "ldaps", "mqtt", "pop3", "pop3s", "rtmp", "rtmpe",
	        "rtmps", "rtmpt", "rtmpte", "rtmpts", "rtsp", "smb", "smbs", "smtp", "smtps",
	        "telnet", "tftp", NULL};
	char low[8];
	if (len == 0 || len >= sizeof low)
		return 0;
	for (size_t i = 0; i < len; i++)
		low[i] = (char)tolower((unsigned char)s[i]);
	return cls_in_list(raw, low, len);
}

/* The scheme of URL word w; def is the scheme for a URL with none (--proto-default).  An
 * expansion where the scheme, or the host's first label curl guesses a protocol from, is
 * written may hold any of them (attack round 4: u=scp://a/b; curl $u ran scp). */
static unsigned curl_url_scheme(const struct cls_word *w, unsigned def)
{
	const char *s = w->s;
	size_t i = 0;
	while (i < w->len &&
	        (isalnum((unsigned char)s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.'))
		i++;
	if (i < w->len && s[i] == CLS_EXP_MARK)
		return CURL_ANY; /* $u, f$x, ${x:-telnet://h} */
	unsigned extra = 0;
	/* HOST:$PORT with HOST a scheme curl speaks (ftp:$x): the value may start with // */
	if (i + 1 < w->len && s[i] == ':' && s[i + 1] == CLS_EXP_MARK) {
		unsigned sch = curl_scheme_of(s, i);
		if (sch != CURL_RAW || curl_raw_scheme(s, i))
			extra = sch;
	}
	const char *sep = memchr(w->s, ':', w->len);
	if (sep != NULL && sep[1] == '/' && sep[2] == '/')
		return curl_scheme_of(w->s, (size_t)(sep - w->s));
	if (sep != NULL && (sep = strstr(sep + 1, "://")) != NULL)
		return curl_scheme_of(w->s, (size_t)(sep - w->s));
	if (def != CURL_HTTP)
		return def | extra;
	/* curl guesses the protocol of a URL with no scheme from its host's first label */
	static const char *const guess[] = {"ftp.", "dict.", "ldap.", "imap.", "smtp.", "pop3.",
	        NULL};
	const char *h = w->s;
	const char *at = memchr(w->s, '@', w->len);
	const char *slash = memchr(w->s, '/', w->len);
	if (at != NULL && (slash == NULL || at < slash))
		h = at + 1;
	for (size_t g = 0; guess[g] != NULL; g++)
		if (strncasecmp(h, guess[g], strlen(guess[g])) == 0)
			return CURL_RAW | extra;
	/* a label that is not static (user@$h) may be one of them */
	for (const char *p = h; p < w->s + w->len && p < h + 5 && *p != '.' && *p != '/'; p++)
		if (*p == CLS_EXP_MARK)
			return CURL_HTTP | CURL_RAW | extra;
	return CURL_HTTP | extra;
}

/* Whether the line names a configuration for name (a home, a file: CURL_HOME=., WGETRC=rc):
 * the program then reads options egressd does not see (attack round 4: echo data=x >
 * .curlrc; CURL_HOME=. curl URL posted).  Any assignment on the line counts, wherever it
 * stands: more, never less. */
static int line_sets(const struct cls_ctx *c, const char *const *names)
{
	for (const struct cls_assign *a = c->assigns; a != NULL; a = a->next)
		if (cls_in_list(names, a->w->s, a->nlen))
			return 1;
	return 0;
}

int cls_rule_curl(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct cls_opts spec = {"AbcCdDeEFHKmoPQrtTuUwxXyYz", NULL, curl_lv, 0, 0};
	static const char *const homes[] = {"CURL_HOME", "HOME", "XDG_CONFIG_HOME", NULL};
	struct curl_state st = {0, 0, 0, 0, 0, 0, 0, 0, NULL, c};
	size_t i = 1;
	int urls_only = 0;
	unsigned schemes = 0, def = CURL_HTTP;
	int nurl = 0;
	/* --proto-default SCHEME (or a prefix of it): the scheme of URLs that name none */
	for (size_t j = 1; j + 1 < n; j++) {
		if (v[j].len < 2 || v[j].s[0] != '-' || v[j].s[1] != '-')
			continue;
		if (v[j].len == 2 && !(v[j].flags & CLS_W_EXP)) /* then only URLs */
			break;
		if (v[j].len > 8 && memcmp(v[j].s + 2, "proto-d", 7) == 0) {
			const char *eq = memchr(v[j].s, '=', v[j].len);
			const char *val = eq ? eq + 1 : v[j + 1].s;
			size_t vl = eq ? v[j].len - (size_t)(eq + 1 - v[j].s) : v[j + 1].len;
			def = curl_scheme_of(val, vl);
		}
	}
	if (flags & CLS_C_XOPTS)
		st.unknown = st.anyurl = 1; /* xargs appends words the line wrote: options, URLs */
	/* a curlrc in a home the line names, unless -q (--disable) comes first and skips it */
	if (line_sets(c, homes) &&
	        !(n > 1 && (cls_word_is(&v[1], "-q") || cls_word_is(&v[1], "--disable"))))
		st.unknown = st.anyurl = 1;
	while (i < n) {
		const struct cls_word *w = &v[i];
		if (!urls_only && ((w->flags & CLS_W_LEADEXP) || may_become_option(w))) {
			/* an expansion where an option could be: any option or URL at all (after
			 * `--' only a URL) */
			st.unknown = st.anyurl = 1;
			i++;
			continue;
		}
		if (!urls_only && w->len > 1 && w->s[0] == '-') {
			st.lastval = NULL;
			size_t k = cls_opts_walk(v, n, i, &spec, curl_opt, &st, NULL);
			/* the walk ends after a `--' that is no option's value: URLs only */
			if (k > i && cls_word_is(&v[k - 1], "--") && st.lastval != &v[k - 1])
				urls_only = 1;
			/* --url VALUE is a URL too */
			for (size_t j = i; j < k; j++)
				if ((cls_word_is(&v[j], "--url") && j + 1 < k)) {
					cls_add_url_host(c, &v[j + 1], 1);
					schemes |= curl_url_scheme(&v[j + 1], def);
					nurl++;
				} else if (starts_with(&v[j], "--url=")) {
					struct cls_word u = v[j];
					u.s += 6;
					u.len -= 6;
					cls_add_url_host(c, &u, 1);
					schemes |= curl_url_scheme(&u, def);
					nurl++;
				}
			i = k;
			continue;
		}
		cls_add_url_host(c, w, 1);
		schemes |= curl_url_scheme(w, def);
		nurl++;
		i++;
	}
	/* no URL on the line (curl --version, xargs curl < urls.txt): HTTP, as published (the
	 * URLs of a file are out of reach).  A URL egressd cannot see (an expansion, -K, words
	 * the line hands xargs) may have any scheme curl speaks: every tag of those --proto
	 * leaves (docs/classifier.md). */
	if (nurl == 0)
		schemes |= CURL_HTTP;
	if (st.anyurl)
		schemes |= CURL_ANY;
	/* curl refuses the schemes --proto leaves out before it connects; an option egressd
	 * does not see may be another --proto, which starts again from all of them */
	if (st.nproto > 0 && !st.unknown && (schemes & st.proto) != 0)
		schemes &= st.proto;
	if (st.unknown)
		schemes |= CURL_HTTP;
	if (schemes & CURL_RAW)
		c->tags |= ALLOW_TAG_NET_RAW;
	if (schemes & CURL_SSH)
		c->tags |= ALLOW_TAG_SSH_READ | ALLOW_TAG_SSH_WRITE;
	if (schemes & CURL_WS)
		c->tags |= ALLOW_TAG_HTTP_READ | ALLOW_TAG_HTTP_WRITE;
	if (!(schemes & CURL_HTTP))
		return 0;
	int write = st.upload || (st.body && !st.get) || st.method == 2;
	if (st.unknown || st.method == 3)
		c->tags |= ALLOW_TAG_HTTP_READ | ALLOW_TAG_HTTP_WRITE;
	else if (write)
		c->tags |= ALLOW_TAG_HTTP_WRITE;
	else
		c->tags |= ALLOW_TAG_HTTP_READ;
	return 0;
}
/* ---- wget ------------------------------------------------------------------------------- */

static const char *const wget_lv[] = {"post-data", "post-file", "body-data", "body-file", "method",
        "header", "user", "password", "http-user", "http-password", "output-document",
        "output-file", "append-output", "input-file", "base", "execute", "tries", "timeout", "wait",
        "quota", "directory-prefix", "user-agent", "level", "accept", "reject", "domains",
        "exclude-domains", "include-directories", "exclude-directories", "referer", "load-cookies",
        "save-cookies", "bind-address", "limit-rate", "dns-timeout", "connect-timeout",
        "read-timeout", "waitretry", "restrict-file-names", "ca-certificate", "ca-directory",
        "certificate", "private-key", "certificate-type", "private-key-type", "secure-protocol",
        "ftp-user", "ftp-password", "proxy-user", "proxy-password", "default-page", "config",
        "progress", "local-encoding", "remote-encoding", "accept-regex", "reject-regex",
        "regex-type", "cut-dirs", "backups", "report-speed", "warc-file", "use-askpass", "ciphers", "compression", "crl-file", "follow-tags", "ignore-tags", "pinnedpubkey", "prefer-family", "rejected-log", "retry-on-http-error", "start-pos", "warc-dedup", "warc-header", "warc-max-size", "warc-tempdir", 
        /* getopt_long: a unique prefix stands for its option (wget 1.21 --help) */
        CLS_LONG_FLAGS,
        "adjust-extension", "ask-password", "auth-no-challenge", "background", "backup-converted",
        "content-disposition", "content-on-error", "continue", "convert-file-only",
        "convert-links", "debug", "delete-after", "follow-ftp", "force-directories", "force-html",
        "ftps-clear-data-connection", "ftps-fallback-to-ftp", "ftps-implicit", "ftps-resume-ssl",
        "help", "hsts-file", "https-only", "ignore-case", "ignore-length", "inet4-only",
        "inet6-only", "keep-session-cookies", "max-redirect", "mirror", "no-cache",
        "no-check-certificate", "no-config", "no-cookies", "no-dns-cache", "no-glob", "no-hsts",
        "no-http-keep-alive", "no-if-modified-since", "no-iri", "no-netrc", "no-passive-ftp",
        "no-proxy", "no-remove-listing", "no-use-server-timestamps", "no-warc-compression",
        "no-warc-digests", "no-warc-keep-log", "page-requisites", "preserve-permissions",
        "protocol-directories", "quiet", "random-wait", "recursive", "relative", "retr-symlinks",
        "retry-connrefused", "save-headers", "server-response", "show-progress", "span-hosts",
        "spider", "strict-comments", "timestamping", "trust-server-names", "unlink", "verbose",
        "version", "warc-cdx", "xattr", NULL};

struct wget_state {
	struct cls_ctx *c; /* for the file it writes (writes.c) */
	int named;         /* -O FILE */
	int write;
	int unknown; /* options egressd does not see (an expansion, a wgetrc the line names) */
	int anyurl;  /* URLs egressd does not see: -i, an expansion, words xargs appends */
	int rc;      /* -1 once a command wget runs was refused */
};

/* wget --use-askpass=PROGRAM (or -e use_askpass=...): wget runs PROGRAM with the prompt as
 * its one argument, no shell (attack round 4: --use-askpass=dig ran dig). */
static void wget_askpass(struct wget_state *st, const char *s, size_t len, size_t off)
{
	if (len == 0 || st->rc == -1)
		return;
	if (memchr(s, CLS_EXP_MARK, len) != NULL) {
		st->rc = cls_refuse(st->c, off, "wget --use-askpass program is not static");
		return;
	}
	struct cls_word *argv = cls_alloc(st->c, 2 * sizeof *argv, off);
	char *prog = cls_strdup(st->c, s, len, off);
	if (argv == NULL || prog == NULL) {
		st->rc = -1;
		return;
	}
	argv[0] = (struct cls_word){prog, len, 0, off, NULL};
	argv[1] = (struct cls_word){"Username:", 9, 0, off, NULL};
	if (cls_enter(st->c, off) == -1 || cls_run_cmd(st->c, argv, 2, 0, NULL) == -1) {
		st->rc = -1;
		return;
	}
	cls_leave(st->c);
}

/* A wgetrc command (-e / --execute): "post_data = x" and friends make a body. */
static void wget_exec(struct wget_state *st, const char *s, size_t len, size_t off)
{
	char key[32];
	size_t k = 0;
	size_t i = 0;
	while (i < len && (s[i] == ' ' || s[i] == '\t'))
		i++;
	while (i < len && k + 1 < sizeof key && s[i] != '=' && s[i] != ' ' && s[i] != '\t') {
		char ch = (char)tolower((unsigned char)s[i++]);
		if (ch != '_' && ch != '-')
			key[k++] = ch;
	}
	key[k] = '\0';
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '='))
		i++;
	if (memchr(s, CLS_EXP_MARK, len) != NULL) {
		st->unknown = st->anyurl = 1;
		if (strcmp(key, "useaskpass") == 0)
			wget_askpass(st, s + i, len - i, off);
		return;
	}
	if (strcmp(key, "postdata") == 0 || strcmp(key, "postfile") == 0 ||
	        strcmp(key, "bodydata") == 0 || strcmp(key, "bodyfile") == 0)
		st->write = 1;
	else if (strcmp(key, "method") == 0 && !cls_method_is_read(s + i, len - i))
		st->write = 1;
	else if (strcmp(key, "input") == 0)
		st->anyurl = 1;
	else if (strcmp(key, "useaskpass") == 0)
		wget_askpass(st, s + i, len - i, off);
}

static int wget_opt(void *arg, const struct cls_opt *o)
{
	struct wget_state *st = arg;
	size_t off = o->vw != NULL ? o->vw->off : 0;
	if ((o->c == 'O' ||
	            (o->c == 0 && o->ll == 15 && memcmp(o->l, "output-document", 15) == 0)) &&
	        o->val != NULL) {
		download_file(st->c, o, 1);
		st->named = 1;
		return 0;
	}
	if (o->c == 'e' && o->val != NULL) {
		wget_exec(st, o->val, o->vlen, off);
		return st->rc == -1;
	}
	if (o->c != 0) {
		if (o->c == CLS_EXP_MARK)
			st->unknown = st->anyurl = 1;
		else if (o->c == 'i')
			st->anyurl = 1; /* URLs from a file or standard input */
		return 0;
	}
	static const char *const body[] = {
	        "post-data", "post-file", "body-data", "body-file", NULL};
	if (cls_in_list(body, o->l, o->ll))
		st->write = 1;
	else if (o->ll == 6 && memcmp(o->l, "method", 6) == 0 && o->val != NULL) {
		if (memchr(o->val, CLS_EXP_MARK, o->vlen) != NULL)
			st->unknown = 1;
		else if (!cls_method_is_read(o->val, o->vlen))
			st->write = 1;
	} else if (o->ll == 7 && memcmp(o->l, "execute", 7) == 0 && o->val != NULL) {
		wget_exec(st, o->val, o->vlen, off);
	} else if (o->ll == 10 && memcmp(o->l, "input-file", 10) == 0) {
		st->anyurl = 1;
	} else if (o->ll == 6 && memcmp(o->l, "config", 6) == 0 && o->val != NULL) {
		/* a wgetrc: post_data, method, input, use_askpass ... (attack round 4) */
		if (!(o->vlen == 9 && memcmp(o->val, "/dev/null", 9) == 0))
			st->unknown = st->anyurl = 1;
	} else if (o->ll == 11 && memcmp(o->l, "use-askpass", 11) == 0 && o->val != NULL) {
		wget_askpass(st, o->val, o->vlen, off);
	} else if (memchr(o->l, CLS_EXP_MARK, o->ll) != NULL) {
		st->unknown = st->anyurl = 1;
	}
	return st->rc == -1;
}

/* Whether wget reads URL w over FTP (2), HTTP (1) or may read it over either (3): ftp:// and
 * ftps://, wget's shorthand HOST:PATH (a colon before any slash not followed by a port
 * number), and an expansion where the scheme or the port is written. */
static int wget_proto(const struct cls_word *w)
{
	size_t i = 0;
	while (i < w->len && (isalnum((unsigned char)w->s[i]) || w->s[i] == '+' || w->s[i] == '-' ||
	                             w->s[i] == '.'))
		i++;
	if (i < w->len && w->s[i] == CLS_EXP_MARK)
		return 3;
	const char *sep = strstr(w->s, "://");
	if (sep != NULL)
		return (sep - w->s == 3 && strncasecmp(w->s, "ftp", 3) == 0) ||
		                       (sep - w->s == 4 && strncasecmp(w->s, "ftps", 4) == 0)
		               ? 2
		               : 1;
	const char *colon = memchr(w->s, ':', w->len);
	if (colon == NULL || colon == w->s || memchr(w->s, '/', (size_t)(colon - w->s)) != NULL)
		return 1;
	if (colon[1] == CLS_EXP_MARK)
		return 3; /* localhost:$PORT: a port, or a path */
	return isdigit((unsigned char)colon[1]) ? 1 : 2;
}

int cls_rule_wget(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct cls_opts spec = {"aABDeiIloOPQRtTUwX", NULL, wget_lv, 0, 0};
	static const char *const rcs[] = {"HOME", "SYSTEM_WGETRC", "WGETRC", NULL};
	int xopts = (flags & CLS_C_XOPTS) != 0;
	struct wget_state st = {c, 0, 0, xopts, xopts, 0};
	size_t i = 1;
	int nurl = 0, ftp = 0, http = 0, noconfig = 0;
	for (size_t j = 1; j < n; j++)
		if (cls_word_is(&v[j], "--no-config"))
			noconfig = 1;
	if (!noconfig && line_sets(c, rcs))
		st.unknown = st.anyurl = 1; /* a wgetrc the line names (attack round 4) */
	while (i < n) {
		const struct cls_word *w = &v[i];
		if ((w->flags & CLS_W_LEADEXP) || may_become_option(w)) {
			st.unknown = st.anyurl = 1;
			i++;
			continue;
		}
		if (w->len > 1 && w->s[0] == '-') {
			i = cls_opts_walk(v, n, i, &spec, wget_opt, &st, NULL);
			if (st.rc == -1)
				return -1;
			continue;
		}
		cls_add_url_host(c, w, 1);
		nurl++;
		int p = wget_proto(w);
		ftp |= p & 2;
		http |= p & 1;
		i++;
	}
	/* without -O, each URL's last part names the file it writes */
	if (!st.named && nurl > 0) {
		struct cls_opt none = {0, NULL, 0, NULL, 0, &v[0]};
		download_file(c, &none, 0);
	}
	/* FTP is a protocol egressd does not tell a read from a write in, as curl's (above); a
	 * URL egressd does not see may be either */
	if (ftp || st.anyurl)
		c->tags |= ALLOW_TAG_NET_RAW;
	if (!http && nurl > 0 && !st.unknown && !st.anyurl)
		return 0;
	if (st.unknown)
		c->tags |= ALLOW_TAG_HTTP_READ | ALLOW_TAG_HTTP_WRITE;
	else if (st.write)
		c->tags |= ALLOW_TAG_HTTP_WRITE;
	else
		c->tags |= ALLOW_TAG_HTTP_READ;
	return 0;
}
/* ---- httpie ----------------------------------------------------------------------------- */

static const char *const http_lv[] = {"auth", "auth-type", "output", "session", "session-read-only",
        "print", "pretty", "style", "verify", "cert", "cert-key", "cert-key-pass", "timeout",
        "max-redirects", "proxy", "format-options", "response-charset", "response-mime", "ssl",
        "ciphers", "boundary", "default-scheme", "history-print", "max-headers", "raw", NULL};

/* A request item's kind: 0 query or header (no body), 1 body. */
static int http_item_body(const struct cls_word *w)
{
	const char *s = w->s;
	for (size_t i = 0; i < w->len; i++) {
		char ch = s[i];
		if (ch == '\\') {
			i++;
			continue;
		}
		if (ch == '=') {
			if (i + 1 < w->len && s[i + 1] == '=')
				return 0; /* == query parameter */
			return 1;         /* = or =@ data field */
		}
		if (ch == ':') {
			if (i + 1 < w->len && s[i + 1] == '=')
				return 1; /* := or :=@ raw JSON */
			return 0;         /* header */
		}
		if (ch == '@')
			return 1; /* file field */
		if (ch == ';')
			return 0; /* empty header */
	}
	return 0;
}

static int all_letters(const struct cls_word *w)
{
	if (w->len == 0 || (w->flags & CLS_W_EXP))
		return 0;
	for (size_t i = 0; i < w->len; i++)
		if (!isalpha((unsigned char)w->s[i]))
			return 0;
	return 1;
}

struct http_state {
	int ignore_stdin;
	int body;
	int unknown;
};

static int http_opt(void *arg, const struct cls_opt *o)
{
	struct http_state *st = arg;
	if (o->c == 'f' || o->c == 'I' || o->c == CLS_EXP_MARK) {
		if (o->c == 'I')
			st->ignore_stdin = 1;
		else if (o->c == CLS_EXP_MARK)
			st->unknown = 1;
		return 0;
	}
	if (o->c != 0)
		return 0;
	if (o->ll == 12 && memcmp(o->l, "ignore-stdin", 12) == 0)
		st->ignore_stdin = 1;
	else if (o->ll == 3 && memcmp(o->l, "raw", 3) == 0)
		st->body = 1;
	else if (memchr(o->l, CLS_EXP_MARK, o->ll) != NULL)
		st->unknown = 1;
	return 0;
}

int cls_rule_httpie(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct cls_opts spec = {"aAopsP", NULL, http_lv, 0, 0};
	struct http_state st = {0, 0, 0};
	const struct cls_word *pos[2] = {NULL, NULL}; /* first positionals */
	size_t npos = 0;
	int method = 0; /* 0 none given, 1 read, 2 write, 3 unknown */
	size_t i = 1;
	int after_dashdash = 0;
	while (i < n) {
		const struct cls_word *w = &v[i];
		if (!after_dashdash && w->len > 1 && w->s[0] == '-' &&
		        !(w->flags & CLS_W_LEADEXP)) {
			size_t k = cls_opts_walk(v, n, i, &spec, http_opt, &st, NULL);
			if (k == i + 1 && cls_word_is(w, "--"))
				after_dashdash = 1;
			i = k;
			continue;
		}
		if (may_become_option(w))
			st.unknown = 1;
		if (npos < 2)
			pos[npos] = w;
		npos++;
		if (npos > 2 || (npos == 2 && !all_letters(pos[0]))) {
			/* a request item (the URL is the first or second positional) */
			if (w->flags & CLS_W_LEADEXP)
				st.unknown = 1;
			else if (http_item_body(w))
				st.body = 1;
		}
		i++;
	}
	const struct cls_word *url = NULL;
	if (npos >= 2 && all_letters(pos[0])) {
		url = pos[1];
		if (pos[0]->flags & CLS_W_EXP)
			method = 3;
		else
			method = cls_method_is_read(pos[0]->s, pos[0]->len) ? 1 : 2;
	} else if (npos >= 1) {
		url = pos[0];
		if (npos >= 2 && pos[0]->flags & CLS_W_LEADEXP)
			method = 3;
	}
	if (url != NULL) {
		if (url->len > 0 && url->s[0] == ':') {
			cls_add_host(c, "localhost", 9);
		} else {
			cls_add_url_host(c, url, 1);
		}
	}
	if (!st.ignore_stdin && (flags & (CLS_C_PIPED | CLS_C_STDIN)))
		st.body = 1; /* httpie sends a non-terminal standard input as the body */
	if (st.unknown || method == 3 || (flags & CLS_C_XARGS))
		c->tags |= ALLOW_TAG_HTTP_READ | ALLOW_TAG_HTTP_WRITE;
	else if (st.body || method == 2)
		c->tags |= ALLOW_TAG_HTTP_WRITE;
	else
		c->tags |= ALLOW_TAG_HTTP_READ;
	return 0;
}

/* ---- gh --------------------------------------------------------------------------------- */

struct gh_state {
	int method; /* 0 none, 1 read, 2 write, 3 unknown */
	int fields;
};

static int gh_api_opt(void *arg, const struct cls_opt *o)
{
	struct gh_state *st = arg;
	int is_method = o->c == 'X' || (o->c == 0 && o->ll == 6 && memcmp(o->l, "method", 6) == 0);
	if (is_method && o->val != NULL) {
		if (memchr(o->val, CLS_EXP_MARK, o->vlen) != NULL)
			st->method = 3;
		else
			st->method = cls_method_is_read(o->val, o->vlen) ? 1 : 2;
		return 0;
	}
	if (o->c == 'f' || o->c == 'F')
		st->fields = 1;
	else if (o->c == 0 && ((o->ll == 5 && memcmp(o->l, "field", 5) == 0) ||
	                              (o->ll == 9 && memcmp(o->l, "raw-field", 9) == 0) ||
	                              (o->ll == 5 && memcmp(o->l, "input", 5) == 0)))
		st->fields = 1;
	return 0;
}

int cls_rule_gh(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const char *const gh_glob_lv[] = {"repo", "hostname", NULL};
	static const struct cls_opts glob = {"R", NULL, gh_glob_lv, 0, 0};
	size_t i = cls_opts_walk(v, n, 1, &glob, NULL, NULL, NULL);
	if (i >= n) {
		if (flags & CLS_C_XARGS)
			c->tags |= ALLOW_TAG_HTTP_READ | ALLOW_TAG_HTTP_WRITE;
		return 0;
	}
	const struct cls_word *sub = &v[i];
	if (sub->flags & CLS_W_EXP)
		return cls_refuse(c, sub->off, "gh subcommand is not static");
	if (cls_word_is(sub, "api")) {
		static const char *const lv[] = {"method", "raw-field", "field", "header", "input",
		        "jq", "template", "hostname", "preview", "cache", NULL};
		static const struct cls_opts spec = {"XfFHqtp", NULL, lv, 0, 0};
		struct gh_state st = {0, 0};
		size_t k = i + 1;
		/* options may come before and after the endpoint */
		while (k < n) {
			k = cls_opts_walk(v, n, k, &spec, gh_api_opt, &st, NULL);
			if (k < n) {
				/* an operand that starts with an expansion may as well be -XPOST */
				if (v[k].flags & CLS_W_LEADEXP)
					st.method = 3;
				k++;
			}
		}
		if (st.method == 3 || (flags & CLS_C_XARGS && st.method == 0 && !st.fields))
			c->tags |= ALLOW_TAG_HTTP_READ | ALLOW_TAG_HTTP_WRITE;
		else if (st.method == 2 || (st.method == 0 && st.fields))
			c->tags |= ALLOW_TAG_HTTP_WRITE;
		else
			c->tags |= ALLOW_TAG_HTTP_READ;
		return 0;
	}
	size_t k = first_operand(v, n, i + 1);
	const struct cls_word *verb = k < n ? &v[k] : NULL;
	if (cls_word_is(sub, "alias") && verb != NULL &&
	        (cls_word_is(verb, "set") || cls_word_is(verb, "import"))) {
		/* gh alias set [--shell] NAME EXPANSION: a later `gh NAME' runs EXPANSION, as sh
		 * -c with --shell or a leading `!', else as gh's own words (attack round 4);
		 * import reads aliases from a file or standard input: refused */
		if (cls_word_is(verb, "import"))
			return cls_refuse(c, verb->off, "gh alias import: aliases out of sight");
		int shell = 0;
		const struct cls_word *ops[2] = {NULL, NULL};
		size_t nops = 0;
		for (size_t j = k + 1; j < n; j++) {
			if (cls_word_is(&v[j], "-s") || cls_word_is(&v[j], "--shell"))
				shell = 1;
			else if (cls_word_is(&v[j], "--clobber"))
				continue;
			else if (nops < 2)
				ops[nops++] = &v[j];
		}
		if (nops < 2)
			return 0;
		const struct cls_word *x = ops[1];
		if (x->flags & CLS_W_EXP)
			return cls_refuse(c, x->off, "gh alias expansion is not static");
		if (x->len > 0 && x->s[0] == '!')
			return cls_run_script(c, x->s + 1, x->len - 1, x->off, 0);
		if (shell)
			return cls_run_script(c, x->s, x->len, x->off, 0);
		char *buf = cls_alloc(c, x->len + 4, x->off);
		if (buf == NULL)
			return -1;
		memcpy(buf, "gh ", 3);
		memcpy(buf + 3, x->s, x->len);
		buf[x->len + 3] = '\0';
		return cls_run_script(c, buf, x->len + 3, x->off, 0);
	}
	static const char *const none[] = {
	        "help", "version", "completion", "config", "alias", "--version", "--help", NULL};
	if (in_set(none, sub))
		return 0;
	if (cls_word_is(sub, "repo") && verb != NULL && cls_word_is(verb, "create"))
		for (size_t j = k + 1; j < n; j++)
			if (cls_word_is(&v[j], "--push") || (v[j].flags & CLS_W_LEADEXP))
				c->tags |= ALLOW_TAG_GIT_PUSH; /* pushes the --source repository */
	if (cls_word_is(sub, "repo") && verb != NULL && cls_word_is(verb, "sync")) {
		/* a destination repository (a fork on the server): the merge-upstream API, a
		 * POST; none is the local repository, which git fetches into */
		static const char *const lv[] = {"branch", "source", NULL};
		static const struct cls_opts spec = {"bs", NULL, lv, 0, 0};
		for (size_t j = k + 1; j < n; j++) {
			j = cls_opts_walk(v, n, j, &spec, NULL, NULL, NULL);
			if (j < n)
				c->tags |= ALLOW_TAG_HTTP_WRITE;
		}
	}
	static const char *const fetchers[] = {"clone", "checkout", "sync", "fork", NULL};
	static const char *const reads[] = {"list", "view", "status", "diff", "checks", "download",
	        "watch", "browse", "search", "ls", NULL};
	static const char *const writes[] = {"create", "delete", "edit", "upload", "merge", "close",
	        "reopen", "comment", "review", "ready", "transfer", "lock", "unlock", "pin",
	        "unpin", "rename", "archive", "unarchive", "set", "add", "remove", "rerun",
	        "cancel", "run", "enable", "disable", "delete-asset", "develop", "set-default",
	        "deploy-key", NULL};
	if (verb != NULL && in_set(fetchers, verb)) {
		c->tags |= ALLOW_TAG_GIT_FETCH;
		if (cls_word_is(verb, "fork"))
			c->tags |= ALLOW_TAG_HTTP_WRITE;
	} else if (verb != NULL && in_set(reads, verb)) {
		c->tags |= ALLOW_TAG_HTTP_READ;
	} else if (verb != NULL && in_set(writes, verb)) {
		c->tags |= ALLOW_TAG_HTTP_WRITE;
	} else {
		c->tags |= ALLOW_TAG_HTTP_READ | ALLOW_TAG_HTTP_WRITE;
	}
	return 0;
}

/* ---- ssh, scp, sftp, rsync -------------------------------------------------------------- */

/* ssh's, scp's and sftp's options that run a local program (second attacker's finding 28):
 * -o ProxyCommand/LocalCommand/KnownHostsCommand/Match exec/Include/a provider library, -F a
 * configuration that is not a static file, scp/sftp -S PROGRAM and -D SERVER.  Refused. */
struct ssh_state {
	struct cls_ctx *c;
	int scp; /* -S and -D name a program */
	int rc;
};

static int ssh_opt(void *arg, const struct cls_opt *o)
{
	struct ssh_state *st = arg;
	static const char *const runs[] = {"proxycommand", "localcommand", "knownhostscommand",
	        NULL};
	static const char *const keys[] = {"match", "include", "pkcs11provider",
	        "securitykeyprovider", NULL};
	size_t off = o->vw ? o->vw->off : 0;
	if (o->c == 'o' && o->val != NULL) {
		if (memchr(o->val, CLS_EXP_MARK, o->vlen) != NULL) {
			st->rc = cls_refuse(st->c, off, "ssh -o option is not static");
			return 1;
		}
		/* ssh skips blanks before the key and reads a quoted key (third black-box
		 * round: -o ' ProxyCommand=git push' and -o '"ProxyCommand"=...' ran it) */
		size_t ks = 0;
		while (ks < o->vlen && (o->val[ks] == ' ' || o->val[ks] == '\t' || o->val[ks] == '"'))
			ks++;
		size_t kl = 0;
		while (ks + kl < o->vlen && o->val[ks + kl] != '=' && o->val[ks + kl] != ' ' &&
		        o->val[ks + kl] != '\t' && o->val[ks + kl] != '"')
			kl++;
		char low[32];
		if (kl < sizeof low) {
			for (size_t i = 0; i < kl; i++)
				low[i] = (char)tolower((unsigned char)o->val[ks + i]);
			if (cls_in_list(runs, low, kl)) {
				/* the command runs through the user's shell, its standard input
				 * ssh's connection: classified (a stricter answer than the
				 * published sample's) */
				size_t vs = ks + kl;
				while (vs < o->vlen && (o->val[vs] == ' ' || o->val[vs] == '\t' ||
				                               o->val[vs] == '"'))
					vs++;
				if (vs < o->vlen && o->val[vs] == '=')
					vs++;
				/* ssh puts the host, user, port ... in place of %h, %r, %p ... before
				 * it runs the command (third black-box round: ProxyCommand=%h push
				 * to host git ran git push) */
				if (memchr(o->val + vs, '%', o->vlen - vs) != NULL) {
					st->rc = cls_refuse(st->c, off,
					        "ssh -o %.*s with %%-tokens (ssh substitutes them before it "
					        "runs the command): refused",
					        (int)kl, o->val + ks);
					return 1;
				}
				if (cls_run_script(st->c, o->val + vs, o->vlen - vs, off, CLS_C_PIPED) ==
				        -1) {
					st->rc = -1;
					return 1;
				}
				return 0;
			}
			if (cls_in_list(keys, low, kl)) {
				st->rc = cls_refuse(st->c, off,
				        "ssh -o %.*s runs a local command or loads code: refused", (int)kl,
				        o->val + ks);
				return 1;
			}
		}
	} else if (o->c == 'F' && o->val != NULL) {
		/* a configuration file may hold ProxyCommand, and the line may have written it
		 * (third black-box round): only none and /dev/null are known to hold nothing */
		static const char user_cfg[] = "/.ssh/config"; /* what ssh reads anyway */
		size_t ul = sizeof user_cfg - 1;
		if (!(o->vlen == 4 && memcmp(o->val, "none", 4) == 0) &&
		        !(o->vlen == 9 && memcmp(o->val, "/dev/null", 9) == 0) &&
		        !(o->vlen >= ul && memcmp(o->val + o->vlen - ul, user_cfg, ul) == 0)) {
			st->rc = cls_refuse(st->c, off,
			        "ssh -F: a configuration file may run commands (ProxyCommand, Match "
			        "exec): refused");
			return 1;
		}
	} else if (st->scp && (o->c == 'S' || o->c == 'D')) {
		st->rc = cls_refuse(st->c, off, "scp/sftp -%c runs a program in ssh's place: refused",
		        o->c);
		return 1;
	}
	return 0;
}

int cls_rule_ssh(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const struct cls_opts spec = {"BbcDEeFIiJLlmOopQRSWw", NULL, NULL, 0, 0};
	struct ssh_state st = {c, 0, 0};
	size_t k = cls_opts_walk(v, n, 1, &spec, ssh_opt, &st, NULL);
	if (st.rc == -1)
		return -1;
	c->tags |= ALLOW_TAG_SSH_READ;
	if (k < n) {
		const struct cls_word *w = &v[k];
		if (starts_with(w, "ssh://"))
			cls_add_url_host(c, w, 0);
		else
			cls_add_host(c, w->s, w->len);
	}
	return 0;
}

/* The host of [user@]host:path, when the colon comes before any slash. */
static void remote_path_host(struct cls_ctx *c, const struct cls_word *w)
{
	if (w->flags & CLS_W_EXP)
		return;
	if (strstr(w->s, "://") != NULL) {
		cls_add_url_host(c, w, 0);
		return;
	}
	const char *s = w->s;
	size_t hl;
	if (s[0] == '[' || (memchr(s, '@', w->len) && strstr(s, "@[") != NULL)) {
		const char *rb = memchr(s, ']', w->len);
		if (rb == NULL || rb[1] != ':')
			return;
		hl = (size_t)(rb + 1 - s);
	} else {
		const char *colon = memchr(s, ':', w->len);
		if (colon == NULL || colon == s || memchr(s, '/', (size_t)(colon - s)) != NULL)
			return;
		hl = (size_t)(colon - s);
	}
	/* strip brackets around an IPv6 literal for cls_add_host */
	const char *h = s;
	const char *at = NULL;
	for (const char *p = s; p < s + hl; p++)
		if (*p == '@')
			at = p;
	if (at != NULL) {
		hl -= (size_t)(at + 1 - s);
		h = at + 1;
	}
	cls_add_host(c, h, hl);
}

int cls_rule_scp(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const struct cls_opts spec = {"cDFiJloPSsXRB", NULL, NULL, 0, 0};
	c->tags |= ALLOW_TAG_SSH_WRITE;
	size_t i = 1;
	int sftp = v[0].len >= 4 && strcmp(v[0].s + v[0].len - 4, "sftp") == 0;
	struct ssh_state st = {c, 1, 0};
	while (i < n) {
		i = cls_opts_walk(v, n, i, &spec, ssh_opt, &st, NULL);
		if (st.rc == -1)
			return -1;
		if (i >= n)
			break;
		if (sftp && !strstr(v[i].s, "://") && !memchr(v[i].s, ':', v[i].len))
			cls_add_host(c, v[i].s, v[i].len);
		else
			remote_path_host(c, &v[i]);
		i++;
	}
	return 0;
}

static const char *const rsync_lv[] = {"rsh", "rsync-path", "exclude", "include", "exclude-from",
        "include-from", "files-from", "port", "password-file", "log-file", "log-file-format",
        "out-format", "chmod", "compare-dest", "copy-dest", "link-dest", "backup-dir", "suffix",
        "partial-dir", "timeout", "contimeout", "bwlimit", "max-size", "min-size", "max-delete",
        "chown", "usermap", "groupmap", "compress-choice", "checksum-choice", "sockopts", "iconv",
        "info", "debug", "stop-after", "stop-at", "skip-compress", "address", "protocol",
        "write-batch", "read-batch", "only-write-batch", "outbuf", "compress-level", "filter",
        "block-size", "temp-dir", "remote-option", "modify-window", "max-alloc", "early-input",
        NULL};

/* rsync -e/--rsh COMMAND: rsync runs COMMAND HOST rsync --server ... to reach the remote
 * (attack round 4: -e 'git push').  ssh there is the transport the rule's ssh:write already
 * stands for; its options are still checked (ProxyCommand ...). */
struct rsync_state {
	struct cls_ctx *c;
	int rc;
};

static int rsync_opt(void *arg, const struct cls_opt *o)
{
	struct rsync_state *st = arg;
	int rsh = o->c == 'e' || (o->c == 0 && o->ll == 3 && memcmp(o->l, "rsh", 3) == 0);
	if (!rsh || o->val == NULL)
		return 0;
	size_t off = o->vw != NULL ? o->vw->off : 0;
	if (memchr(o->val, CLS_EXP_MARK, o->vlen) != NULL) {
		st->rc = cls_refuse(st->c, off, "rsync -e command is not static");
		return 1;
	}
	unsigned before = st->c->tags;
	if (cls_run_script(st->c, o->val, o->vlen, off, CLS_C_PIPED | CLS_C_XARGS) == -1) {
		st->rc = -1;
		return 1;
	}
	/* the transport itself: `ssh HOST' is the ssh:write rsync is given */
	size_t b = 0;
	while (b < o->vlen && o->val[b] == ' ')
		b++;
	size_t e = b;
	while (e < o->vlen && o->val[e] != ' ')
		e++;
	size_t p = e;
	while (p > b && o->val[p - 1] != '/')
		p--;
	if (e - p == 3 && memcmp(o->val + p, "ssh", 3) == 0 && !(before & ALLOW_TAG_SSH_READ))
		st->c->tags &= ~ALLOW_TAG_SSH_READ;
	return 0;
}

int cls_rule_rsync(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct cls_opts spec = {"efBTM@", NULL, rsync_lv, 0, 0};
	int remote = (flags & CLS_C_XARGS) != 0;
	struct rsync_state st = {c, 0};
	size_t i = 1;
	while (i < n) {
		i = cls_opts_walk(v, n, i, &spec, rsync_opt, &st, NULL);
		if (st.rc == -1)
			return -1;
		if (i >= n)
			break;
		const struct cls_word *w = &v[i++];
		if (w->flags & CLS_W_EXP) {
			remote = 1;
			continue;
		}
		if (starts_with(w, "rsync://")) {
			remote = 1;
			cls_add_url_host(c, w, 0);
			continue;
		}
		const char *colon = memchr(w->s, ':', w->len);
		if (colon == NULL || colon == w->s || memchr(w->s, '/', (size_t)(colon - w->s)))
			continue;
		remote = 1;
		remote_path_host(c, w);
	}
	if (remote)
		c->tags |= ALLOW_TAG_SSH_WRITE;
	return 0;
}

/* ---- dig, host, nslookup ---------------------------------------------------------------- */

static int is_rr_word(const struct cls_word *w)
{
	static const char *const rr[] = {"a", "aaaa", "any", "axfr", "caa", "cname", "dnskey", "ds",
	        "hinfo", "https", "ixfr", "mx", "naptr", "ns", "nsec", "nsec3", "ptr", "rrsig",
	        "soa", "spf", "srv", "sshfp", "svcb", "tlsa", "txt", "in", "ch", "hs", NULL};
	if (w->len > 6)
		return 0;
	char low[8];
	for (size_t i = 0; i < w->len; i++)
		low[i] = (char)tolower((unsigned char)w->s[i]);
	return cls_in_list(rr, low, w->len);
}

int cls_rule_dns(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	c->tags |= ALLOW_TAG_DNS;
	int dig = strcmp(v[0].s + (v[0].len >= 3 ? v[0].len - 3 : 0), "dig") == 0;
	int nslookup = v[0].len >= 8 && strcmp(v[0].s + v[0].len - 8, "nslookup") == 0;
	static const struct cls_opts dig_spec = {"bcfkpqtxy", NULL, NULL, 0, 0};
	static const struct cls_opts host_spec = {"cNRtWm", NULL, NULL, 0, 0};
	const struct cls_opts *spec = dig ? &dig_spec : &host_spec;
	size_t i = 1;
	while (i < n) {
		const struct cls_word *w = &v[i];
		if (w->len > 0 &&
		        (w->s[0] == '+' || w->s[0] == '@' || (nslookup && w->s[0] == '-'))) {
			i++;
			continue;
		}
		if (w->len > 1 && w->s[0] == '-') {
			i = cls_opts_walk(v, n, i, spec, NULL, NULL, NULL);
			continue;
		}
		if (!(dig && is_rr_word(w)))
			cls_add_host(c, w->s, w->len);
		/* the first name is the query; later operands are a server or types */
		return 0;
	}
	return 0;
}
