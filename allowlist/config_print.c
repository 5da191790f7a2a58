/* `egressd check`'s view of a loaded config: each session's merged bound and limits, in a form
 * that is stable (same config, same text) so that scripts and tests can compare it. */
#include <stdio.h>
#include <string.h>

#include "allowlist/config.h"
#include "allowlist/tags.h"

static void print_set(FILE *out, const char *label, const struct allow_set *set, const char *absent,
        const char *empty)
{
	fprintf(out, "  %s: ", label);
	if (set == NULL) {
		fprintf(out, "%s\n", absent);
		return;
	}
	size_t n = allow_set_count(set);
	if (n == 0) {
		fprintf(out, "%s\n", empty);
		return;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s%s", i ? ", " : "", allow_set_pattern(set, i));
	fputc('\n', out);
}

struct limit_field {
	const char *name;
	size_t off;                            /* in struct allow_limits */
	void (*fmt)(uint64_t, char *, size_t); /* NULL: a plain count */
};

static const struct limit_field limit_fields[] = {
        {"maxConnections", offsetof(struct allow_limits, max_connections), NULL},
        {"maxConnectionsTotal", offsetof(struct allow_limits, max_connections_total), NULL},
        {"maxBytesOut", offsetof(struct allow_limits, max_bytes_out), allow_size_format},
        {"maxBytesIn", offsetof(struct allow_limits, max_bytes_in), allow_size_format},
        {"maxNewHostsPerMinute", offsetof(struct allow_limits, max_new_hosts_per_minute), NULL},
        {"expiresIn", offsetof(struct allow_limits, expires_in_ms), allow_duration_format},
};

#define NLIMIT_FIELDS (sizeof limit_fields / sizeof limit_fields[0])

static void print_limits(FILE *out, const struct allow_limits *l)
{
	size_t shown = 0;
	fprintf(out, "  limits:");
	for (size_t i = 0; i < NLIMIT_FIELDS; i++) {
		uint64_t v = *(const uint64_t *)((const char *)l + limit_fields[i].off);
		if (v == ALLOW_UNLIMITED)
			continue;
		char buf[32];
		if (limit_fields[i].fmt != NULL)
			limit_fields[i].fmt(v, buf, sizeof buf);
		else
			snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
		fprintf(out, " %s=%s", limit_fields[i].name, buf);
		shown++;
	}
	if (shown == 0)
		fprintf(out, " (all unlimited)\n");
	else if (shown < NLIMIT_FIELDS)
		fprintf(out, " (others unlimited)\n");
	else
		fputc('\n', out);
}

static const char *enforce_name(enum allow_enforce e)
{
	switch (e) {
	case ALLOW_ENFORCE_GUARD:
		return "guard";
	case ALLOW_ENFORCE_SANDBOX:
		return "sandbox";
	case ALLOW_ENFORCE_UNSET:
		break;
	}
	return "(not set)";
}

static void print_session(FILE *out, const struct allow_session_config *s)
{
	fprintf(out, "session %s\n", s->name);
	print_set(out, "allowDomains", s->bound.allow, "(any host that domains does not deny)",
	        "(empty: nothing is allowed)");
	print_set(out, "domains", s->bound.deny, "(none)", "(none)");
	char tags[256];
	if (s->bound.deny_actions == 0)
		snprintf(tags, sizeof tags, "(none)");
	else
		allow_tags_format(s->bound.deny_actions, ", ", tags, sizeof tags);
	fprintf(out, "  actions denied: %s\n", tags);
	fprintf(out, "  enforce: %s\n", enforce_name(s->bound.enforce));
	print_limits(out, &s->limits);
	/* The token itself is a secret: only whether there is one. */
	fprintf(out, "  auth: %s\n", s->token != NULL ? "token" : "(none)");
	fprintf(out, "  clients: ");
	if (s->nclients == 0)
		fprintf(out, "(none)");
	for (size_t i = 0; i < s->nclients; i++) {
		char c[64];
		allow_cidr_format(&s->clients[i], c, sizeof c);
		fprintf(out, "%s%s", i ? ", " : "", c);
	}
	fputc('\n', out);
}

void allow_config_print(const struct allow_config *cfg, FILE *out)
{
	if (cfg->nsessions == 0) {
		fprintf(out, "no sessions: every connection will be denied\n");
		return;
	}
	for (size_t i = 0; i < cfg->nsessions; i++) {
		if (i > 0)
			fputc('\n', out);
		print_session(out, &cfg->sessions[i]);
	}
}
