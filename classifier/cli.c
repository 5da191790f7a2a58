/* `egressd classify [--json] [-c FILE [--session S]] [-- LINE...]`: the classifier on the
 * command line, with the decision under a session's bound when a config is given. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist/config.h"
#include "allowlist/policy.h"
#include "allowlist/tags.h"
#include "classifier/classifier.h"
#include "classifier/json.h"

static void json_list(FILE *out, const char *key, char *const *v, size_t n)
{
	fprintf(out, "\"%s\":[", key);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', out);
		cls_json_write_str(out, v[i], strlen(v[i]));
	}
	fputc(']', out);
}

static int usage(FILE *out, int rc)
{
	fprintf(out, "usage: egressd classify [--json] [--hook claude-code] [-c FILE [--session S]] "
	             "[-- LINE]\n"
	             "  (without `--' the line is read from standard input; with --hook, a Claude "
	             "Code\n   PreToolUse hook's JSON is, and the answer is that hook's JSON)\n");
	return rc;
}

/* Reads all of standard input, at most max + 1 bytes (more is refused anyway). */
static char *read_stdin(size_t max, size_t *len)
{
	size_t cap = max + 2, n = 0;
	char *buf = malloc(cap);
	if (buf == NULL)
		return NULL;
	while (n < cap - 1) {
		size_t k = fread(buf + n, 1, cap - 1 - n, stdin);
		if (k == 0)
			break;
		n += k;
	}
	if (ferror(stdin)) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* Joins argv[from..argc) with spaces. */
static char *join_args(int argc, char **argv, int from, size_t *len)
{
	size_t total = 1;
	for (int i = from; i < argc; i++)
		total += strlen(argv[i]) + 1;
	char *s = malloc(total);
	if (s == NULL)
		return NULL;
	size_t p = 0;
	for (int i = from; i < argc; i++) {
		size_t l = strlen(argv[i]);
		if (i > from)
			s[p++] = ' ';
		memcpy(s + p, argv[i], l);
		p += l;
	}
	s[p] = '\0';
	*len = p;
	return s;
}

/* Why a line is denied under a session: what it would do, the reason code, the rule that
 * decided and what would allow it. */
struct denial {
	const char *verb; /* "perform" (an action) or "reach" (a host) */
	char what[320];   /* "git:push", "h.test:443", "the npm registry (h.test:443, ...)" */
	const char *code; /* "action-denied", "host-not-allowed", ... */
	struct allow_decision dec;
};

/* The decision under a session: an action its bound denies, a literal host it does not allow,
 * or the host of a default registry (config registries:) it does not allow denies the line.
 * Returns 1 deny (*why filled), 0 allow; *unknown gets the registries the line reaches whose
 * host the config does not name (not a denial: said, so the user can add it). */
static int decide(const struct allow_config *cfg, const struct allow_session_config *s,
        const struct cls_result *r, struct denial *why, unsigned *unknown)
{
	*unknown = 0;
	memset(why, 0, sizeof *why);
	if (allow_decide_action(&s->bound, r->tags, &why->dec)) {
		allow_tags_format(r->tags & s->bound.deny_actions, ",", why->what, sizeof why->what);
		why->verb = "perform";
		why->code = allow_reason_code(why->dec.reason);
		return 1;
	}
	for (size_t i = 0; i < r->ndests; i++) {
		struct allow_dest d = r->dests[i];
		if (d.port == 0)
			d.port = 443;
		allow_decide(&s->bound, &d, 0, &why->dec);
		if (why->dec.reason != ALLOW_OK) {
			snprintf(why->what, sizeof why->what, "%s:%u", d.host, (unsigned)d.port);
			why->verb = "reach";
			why->code = allow_reason_code(why->dec.reason);
			return 1;
		}
	}
	for (unsigned bit = 1; bit != 0 && bit <= r->registries; bit <<= 1) {
		if (!(r->registries & bit))
			continue;
		const char *host = cfg->registries[allow_registry_index(bit)];
		if (host == NULL) {
			*unknown |= bit;
			continue;
		}
		struct allow_dest d;
		if (allow_canon_host(host, strlen(host), &d) != ALLOW_CANON_OK)
			continue; /* the loader only keeps canonical hosts */
		d.port = 443;
		allow_decide(&s->bound, &d, 0, &why->dec);
		if (why->dec.reason != ALLOW_OK) {
			snprintf(why->what, sizeof why->what, "the %s registry (%s:443, registries.%s)",
			        allow_registry_name(bit), d.host, allow_registry_name(bit));
			why->verb = "reach";
			why->code = allow_reason_code(why->dec.reason);
			return 1;
		}
	}
	return 0;
}

/* "registry:npm,registry:pypi" for a mask of families. */
static void format_registries(unsigned mask, char *buf, size_t cap)
{
	size_t p = 0;
	buf[0] = '\0';
	for (unsigned bit = 1; bit != 0 && bit <= mask && p < cap; bit <<= 1)
		if (mask & bit) {
			int k = snprintf(buf + p, cap - p, "%sregistry:%s", p ? "," : "",
			        allow_registry_name(bit));
			if (k < 0)
				break;
			p += (size_t)k;
		}
}

/* ---- --hook claude-code ---------------------------------------------------------------- */

/* Prints the PreToolUse answer that denies the call, with its reason (Claude Code shows the
 * reason to the model). */
static void hook_deny(const char *reason)
{
	fputs("{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\","
	      "\"permissionDecision\":\"deny\",\"permissionDecisionReason\":",
	        stdout);
	cls_json_write_str(stdout, reason, strlen(reason));
	fputs("}}\n", stdout);
}

/* The hook: one PreToolUse input on standard input.  A Bash call that egressd refuses or the
 * session denies gets the deny answer (exit 0, as Claude Code reads JSON only then); any other
 * call gets no output and exit 0.  Input egressd cannot read, or a config it cannot load, exits
 * 2 with the message on standard error: Claude Code treats exit 2 as blocking, so the call does
 * not run (fail closed). */
static int hook_main(const char *format, const char *cfgpath, const char *session)
{
	if (strcmp(format, "claude-code") != 0) {
		fprintf(stderr, "egressd: --hook: unknown format `%s' (known: claude-code)\n", format);
		return 2;
	}
	size_t len = 0;
	char *text = read_stdin(CLS_JSON_MAX_TEXT, &len);
	if (text == NULL) {
		fprintf(stderr, "egressd: hook: cannot read standard input\n");
		return 2;
	}
	char err[256];
	struct cls_json_doc *doc = cls_json_parse(text, len, err, sizeof err);
	free(text);
	if (doc == NULL) {
		fprintf(stderr, "egressd: hook: the input is not a PreToolUse JSON object: %s\n", err);
		return 2;
	}
	const struct cls_json *root = cls_json_root(doc);
	const struct cls_json *ev = cls_json_get(root, "hook_event_name");
	const struct cls_json *tool = cls_json_get(root, "tool_name");
	const struct cls_json *input = cls_json_get(root, "tool_input");
	const struct cls_json *cmd = cls_json_get(input, "command");
	const char *bad = NULL;
	if (root->type != CLS_JSON_OBJECT)
		bad = "the input is not a JSON object";
	else if (ev != NULL && (ev->type != CLS_JSON_STRING || strcmp(ev->s, "PreToolUse") != 0 ||
	                               ev->len != strlen(ev->s)))
		bad = "hook_event_name is not \"PreToolUse\" (register the hook under PreToolUse)";
	else if (tool == NULL || tool->type != CLS_JSON_STRING)
		bad = "tool_name is missing or not a string";
	if (bad != NULL) {
		fprintf(stderr, "egressd: hook: %s\n", bad);
		cls_json_free(doc);
		return 2;
	}
	if (tool->len != 4 || memcmp(tool->s, "Bash", 4) != 0) {
		cls_json_free(doc);
		return 0; /* not a shell command: nothing to say */
	}
	if (cmd == NULL || cmd->type != CLS_JSON_STRING) {
		fprintf(stderr, "egressd: hook: tool_input.command is missing or not a string\n");
		cls_json_free(doc);
		return 2;
	}

	struct allow_config *cfg = NULL;
	const struct allow_session_config *sess = NULL;
	if (cfgpath != NULL) {
		struct allow_errors errs = {NULL, 0};
		cfg = allow_config_load(cfgpath, &errs);
		for (size_t k = 0; k < errs.n; k++)
			fprintf(stderr, "egressd: %s\n", errs.lines[k]);
		if (cfg == NULL && errs.n == 0)
			fprintf(stderr, "egressd: %s: cannot load\n", cfgpath);
		allow_errors_free(&errs);
		if (cfg != NULL && (sess = allow_config_session(cfg, session)) == NULL)
			fprintf(stderr, "egressd: %s: no session named `%s'\n", cfgpath, session);
		if (sess == NULL) {
			allow_config_free(cfg);
			cls_json_free(doc);
			return 2;
		}
	}

	struct cls_result r;
	char reason[1024];
	int deny = 1;
	if (cls_classify(cmd->s, cmd->len, &r) == -1) {
		snprintf(reason, sizeof reason,
		        "egressd refused this command line: %s (at byte %zu). egressd denies a line "
		        "it cannot read whole before it runs; write it so that each program, script "
		        "and command word is literal, or run it another way.",
		        r.reason, r.offset);
	} else {
		struct denial why;
		unsigned unknown;
		if (sess != NULL && decide(cfg, sess, &r, &why, &unknown)) {
			char tags[128];
			allow_tags_format(r.tags, ",", tags, sizeof tags);
			snprintf(reason, sizeof reason,
			        "egressd: this command line (%s) would %s %s, which session `%s' "
			        "denies: %s, rule `%s'. To allow it, %s of session `%s' in %s; "
			        "otherwise do without it.",
			        tags, why.verb, why.what, sess->name, why.code, why.dec.rule,
			        why.dec.hint, sess->name, cfgpath);
		} else {
			deny = 0;
		}
	}
	if (deny)
		hook_deny(reason);
	fflush(stdout);
	cls_result_free(&r);
	allow_config_free(cfg);
	cls_json_free(doc);
	return 0;
}

int cls_cli_main(int argc, char **argv)
{
	int json = 0;
	const char *cfgpath = NULL, *session = NULL, *hook = NULL;
	char *line = NULL;
	size_t len = 0;
	int i;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--json") == 0) {
			json = 1;
		} else if (strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0) {
			if (++i >= argc) {
				fprintf(stderr, "egressd: %s needs a file\n", a);
				return usage(stderr, 2);
			}
			cfgpath = argv[i];
		} else if (strcmp(a, "--session") == 0) {
			if (++i >= argc) {
				fprintf(stderr, "egressd: --session needs a name\n");
				return usage(stderr, 2);
			}
			session = argv[i];
		} else if (strncmp(a, "--session=", 10) == 0) {
			session = a + 10;
		} else if (strcmp(a, "--hook") == 0) {
			if (++i >= argc) {
				fprintf(stderr, "egressd: --hook needs a format (claude-code)\n");
				return usage(stderr, 2);
			}
			hook = argv[i];
		} else if (strncmp(a, "--hook=", 7) == 0) {
			hook = a + 7;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			return usage(stdout, 0);
		} else if (strcmp(a, "--") == 0) {
			break;
		} else {
			fprintf(stderr, "egressd: classify: unknown argument `%s'\n", a);
			return usage(stderr, 2);
		}
	}
	if (session != NULL && cfgpath == NULL) {
		fprintf(stderr, "egressd: --session needs -c FILE\n");
		return 2;
	}
	if (hook != NULL) {
		if (i < argc || json) {
			fprintf(stderr, "egressd: --hook reads its input from standard input and "
			                "answers in the hook's JSON (no `--' LINE, no --json)\n");
			return 2;
		}
		return hook_main(hook, cfgpath, session != NULL ? session : "default");
	}
	if (i < argc) {
		line = join_args(argc, argv, i + 1, &len);
	} else {
		line = read_stdin(CLS_MAX_INPUT, &len);
	}
	if (line == NULL) {
		fprintf(stderr, "egressd: cannot read the command line\n");
		return 2;
	}

	struct allow_config *cfg = NULL;
	const struct allow_session_config *sess = NULL;
	if (cfgpath != NULL) {
		struct allow_errors errs = {NULL, 0};
		cfg = allow_config_load(cfgpath, &errs);
		if (cfg == NULL) {
			for (size_t k = 0; k < errs.n; k++)
				fprintf(stderr, "egressd: %s\n", errs.lines[k]);
			if (errs.n == 0)
				fprintf(stderr, "egressd: %s: cannot load\n", cfgpath);
			allow_errors_free(&errs);
			free(line);
			return 2;
		}
		allow_errors_free(&errs);
		if (session == NULL)
			session = "default";
		sess = allow_config_session(cfg, session);
		if (sess == NULL) {
			fprintf(stderr, "egressd: %s: no session named `%s'\n", cfgpath, session);
			allow_config_free(cfg);
			free(line);
			return 2;
		}
	}

	struct cls_result r;
	int rc;
	char reason[1024];
	const char *decision;
	struct denial why;
	unsigned unknown = 0;
	if (cls_classify(line, len, &r) == -1) {
		snprintf(reason, sizeof reason, "%s at byte %zu", r.reason, r.offset);
		decision = "refused";
		rc = 2;
	} else if (sess != NULL && decide(cfg, sess, &r, &why, &unknown)) {
		if (why.dec.reason == ALLOW_ACTION_DENIED)
			snprintf(reason, sizeof reason, "%s: %s is denied by session %s; to allow it, %s",
			        why.code, why.what, sess->name, why.dec.hint);
		else
			snprintf(reason, sizeof reason, "%s: %s (%s); to allow it, %s of session %s",
			        why.code, why.what, why.dec.rule[0] ? why.dec.rule : "no rule",
			        why.dec.hint, sess->name);
		decision = "deny";
		rc = 1;
	} else {
		if (sess == NULL)
			snprintf(reason, sizeof reason, "no session given");
		else
			snprintf(reason, sizeof reason, "allowed by session %s", sess->name);
		if (unknown != 0) {
			/* not a denial: the config names no host for these, so nothing was tested */
			char regs[160];
			format_registries(unknown, regs, sizeof regs);
			size_t l = strlen(reason);
			snprintf(reason + l, sizeof reason - l,
			        "; the host of %s is unknown and was not checked (name it under "
			        "registries: in %s)",
			        regs, cfgpath);
		}
		decision = "allow";
		rc = 0;
	}

	char tags[128];
	allow_tags_format(r.tags, ",", tags, sizeof tags);
	if (json) {
		fputs("{\"tags\":[", stdout);
		if (r.tags != 0) {
			/* the comma-joined names, each as a JSON string */
			const char *p = tags;
			for (int first = 1; *p; first = 0) {
				const char *e = strchr(p, ',');
				size_t l = e ? (size_t)(e - p) : strlen(p);
				if (!first)
					fputc(',', stdout);
				cls_json_write_str(stdout, p, l);
				p += l + (e != NULL);
			}
		}
		fputs("],", stdout);
		json_list(stdout, "programs", r.programs, r.nprograms);
		fputc(',', stdout);
		json_list(stdout, "hosts", r.hosts, r.nhosts);
		fputs(",\"registries\":[", stdout);
		for (unsigned bit = 1, n = 0; bit != 0 && bit <= r.registries; bit <<= 1)
			if (r.registries & bit)
				fprintf(stdout, "%s\"registry:%s\"", n++ ? "," : "",
				        allow_registry_name(bit));
		fputc(']', stdout);
		fprintf(stdout, ",\"decision\":\"%s\",\"reason\":", decision);
		cls_json_write_str(stdout, reason, strlen(reason));
		fputs("}\n", stdout);
	} else if (rc == 2) {
		fprintf(stderr, "egressd: refused: %s\n", reason);
	} else {
		printf("%s\n", tags);
		if (rc == 1)
			fprintf(stderr, "egressd: deny: %s\n", reason);
		else if (unknown != 0)
			fprintf(stderr, "egressd: note: %s\n", reason);
	}
	fflush(stdout);
	cls_result_free(&r);
	allow_config_free(cfg);
	free(line);
	return rc;
}
