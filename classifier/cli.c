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

/* Writes s[0..len) as the inside of a JSON string.  The rules are audit_json_escape's (the
 * classifier links only the allowlist module): '"' and '\\' escaped, controls as \n \r \t \b
 * \f or \u00XX, DEL as \u007f, valid UTF-8 passed through, each byte of invalid UTF-8 as
 * U+FFFD. */
static void json_str(FILE *out, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	fputc('"', out);
	while (i < len) {
		unsigned char ch = p[i];
		if (ch < 0x80) {
			switch (ch) {
			case '"':
				fputs("\\\"", out);
				break;
			case '\\':
				fputs("\\\\", out);
				break;
			case '\n':
				fputs("\\n", out);
				break;
			case '\r':
				fputs("\\r", out);
				break;
			case '\t':
				fputs("\\t", out);
				break;
			case '\b':
				fputs("\\b", out);
				break;
			case '\f':
				fputs("\\f", out);
				break;
			default:
				if (ch < 0x20 || ch == 0x7f)
					fprintf(out, "\\u%04x", ch);
				else
					fputc(ch, out);
			}
			i++;
			continue;
		}
		/* a UTF-8 sequence: check length, continuation bytes, overlongs, surrogates, range
		 */
		size_t n = ch >= 0xf0 ? 4 : ch >= 0xe0 ? 3 : ch >= 0xc0 ? 2 : 0;
		uint32_t cp = n == 4 ? ch & 0x07u : n == 3 ? ch & 0x0fu : ch & 0x1fu;
		int ok = n >= 2 && ch <= 0xf4 && i + n <= len;
		for (size_t k = 1; ok && k < n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				ok = 0;
			else
				cp = (cp << 6) | (p[i + k] & 0x3fu);
		}
		if (ok && ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
		                  (n == 4 && cp < 0x10000) || (cp >= 0xd800 && cp <= 0xdfff) ||
		                  cp > 0x10ffff))
			ok = 0;
		if (!ok) {
			fputs("\xef\xbf\xbd", out);
			i++;
			continue;
		}
		fwrite(p + i, 1, n, out);
		i += n;
	}
	fputc('"', out);
}

static void json_list(FILE *out, const char *key, char *const *v, size_t n)
{
	fprintf(out, "\"%s\":[", key);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', out);
		json_str(out, v[i], strlen(v[i]));
	}
	fputc(']', out);
}

static int usage(FILE *out, int rc)
{
	fprintf(out, "usage: egressd classify [--json] [-c FILE [--session S]] [-- LINE]\n"
	             "  (without `--' the line is read from standard input)\n");
	return rc;
}

/* Reads all of standard input, at most CLS_MAX_INPUT + 1 bytes (more is refused anyway). */
static char *read_stdin(size_t *len)
{
	size_t cap = CLS_MAX_INPUT + 2, n = 0;
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

/* The decision under a session: an action its bound denies, or a literal host it does not
 * allow, denies the line.  Writes the reason; returns 1 deny, 0 allow. */
static int decide(
        const struct allow_session_config *s, const struct cls_result *r, char *reason, size_t cap)
{
	unsigned denied = r->tags & s->bound.deny_actions;
	if (denied) {
		char tags[128];
		allow_tags_format(denied, ",", tags, sizeof tags);
		snprintf(reason, cap, "action-denied: %s is denied by session %s", tags, s->name);
		return 1;
	}
	for (size_t i = 0; i < r->ndests; i++) {
		struct allow_dest d = r->dests[i];
		if (d.port == 0)
			d.port = 443;
		struct allow_decision dec;
		allow_decide(&s->bound, &d, 0, &dec);
		if (dec.reason != ALLOW_OK) {
			snprintf(reason, cap, "%s: %s:%u (%s)", allow_reason_code(dec.reason),
			        d.host, (unsigned)d.port, dec.rule[0] ? dec.rule : "no rule");
			return 1;
		}
	}
	snprintf(reason, cap, "allowed by session %s", s->name);
	return 0;
}

int cls_cli_main(int argc, char **argv)
{
	int json = 0;
	const char *cfgpath = NULL, *session = NULL;
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
	if (i < argc) {
		line = join_args(argc, argv, i + 1, &len);
	} else {
		line = read_stdin(&len);
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
	char reason[512];
	const char *decision;
	if (cls_classify(line, len, &r) == -1) {
		snprintf(reason, sizeof reason, "%s at byte %zu", r.reason, r.offset);
		decision = "refused";
		rc = 2;
	} else if (sess != NULL && decide(sess, &r, reason, sizeof reason)) {
		decision = "deny";
		rc = 1;
	} else {
		if (sess == NULL)
			snprintf(reason, sizeof reason, "no session given");
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
				json_str(stdout, p, l);
				p += l + (e != NULL);
			}
		}
		fputs("],", stdout);
		json_list(stdout, "programs", r.programs, r.nprograms);
		fputc(',', stdout);
		json_list(stdout, "hosts", r.hosts, r.nhosts);
		fprintf(stdout, ",\"decision\":\"%s\",\"reason\":", decision);
		json_str(stdout, reason, strlen(reason));
		fputs("}\n", stdout);
	} else if (rc == 2) {
		fprintf(stderr, "egressd: refused: %s\n", reason);
	} else {
		printf("%s\n", tags);
		if (rc == 1)
			fprintf(stderr, "egressd: deny: %s\n", reason);
	}
	fflush(stdout);
	cls_result_free(&r);
	allow_config_free(cfg);
	free(line);
	return rc;
}
