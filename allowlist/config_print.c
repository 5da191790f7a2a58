/* `egressd check`'s view of a loaded config: each session's merged bound and limits, in a form
 * that is stable (same config, same text) so that scripts and tests can compare it. */
#include <stdio.h>
#include <string.h>

#include "allowlist/action.h"
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

/* 1 when the allowDomains pattern p is covered by the inspect list: listed as such, or a plain
 * host that an inspect pattern matches. */
static int pattern_inspected(const struct allow_bound *b, const char *p)
{
	if (b->inspect == NULL)
		return 0;
	if (allow_set_has(b->inspect, p))
		return 1;
	struct allow_dest d;
	if (p[0] == '*' || allow_canon_authority(p, strlen(p), 443, &d) != ALLOW_CANON_OK)
		return 0;
	return allow_inspected(b, &d);
}

/* What each kind of tunnel gets under the bound (docs/design.md 4.5), with the hosts whose
 * HTTPS tunnels are refused as inspection-required and how to change that. */
static void print_tunnels(FILE *out, const struct allow_bound *b, int refuse_ech)
{
	static const enum allow_tunnel_kind kinds[] = {
	        ALLOW_TUNNEL_TLS, ALLOW_TUNNEL_HTTP, ALLOW_TUNNEL_SSH, ALLOW_TUNNEL_OTHER};
	static const char *const labels[] = {"https", "plain http", "ssh", "other"};
	struct allow_dest any;
	memset(&any, 0, sizeof any);
	any.kind = ALLOW_HOST_NAME;
	any.port = 443;
	snprintf(any.host, sizeof any.host, "%s", "any.invalid");
	fprintf(out, "  tunnels:\n");
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		struct allow_decision d;
		int insp;
		allow_tunnel_decide(b, &any, kinds[k], &insp, &d);
		fprintf(out, "    %s: ", labels[k]);
		if (kinds[k] == ALLOW_TUNNEL_HTTP && d.reason == ALLOW_OK) {
			char t[160];
			allow_tags_format(b->deny_actions & allow_tunnel_carries(kinds[k]), ", ", t,
			        sizeof t);
			fprintf(out, "each request decided by its method and path%s%s%s\n",
			        b->deny_actions & allow_tunnel_carries(kinds[k]) ? " (" : "",
			        b->deny_actions & allow_tunnel_carries(kinds[k]) ? t : "",
			        b->deny_actions & allow_tunnel_carries(kinds[k]) ? " denied)" : "");
			continue;
		}
		if (d.reason == ALLOW_OK) {
			fprintf(out, "relayed after the first bytes are checked%s\n",
			        kinds[k] != ALLOW_TUNNEL_TLS ? ""
			        : refuse_ech ? "; a ClientHello with ECH is refused (tls.refuseECH)"
			                     : "; ECH is judged on its outer name (tls.refuseECH: "
			                       "false)");
			continue;
		}
		if (d.reason == ALLOW_ACTION_DENIED || kinds[k] != ALLOW_TUNNEL_TLS) {
			fprintf(out, "refused (%s: %s); to allow them, %s\n",
			        allow_reason_code(d.reason), d.rule, d.hint);
			continue;
		}
		/* HTTPS, part of what it carries denied: refused unless inspected. */
		char names[160];
		allow_tags_format(b->deny_actions & allow_tunnel_carries(kinds[k]), ", ", names,
		        sizeof names);
		if (b->inspect != NULL && allow_set_count(b->inspect) > 0) {
			fprintf(out, "inspected, each request decided inside TLS: ");
			for (size_t i = 0; i < allow_set_count(b->inspect); i++)
				fprintf(out, "%s%s", i ? ", " : "", allow_set_pattern(b->inspect, i));
			fprintf(out, "\n    https (not inspected): ");
		}
		if (b->allow == NULL) {
			fprintf(out, "refused as inspection-required to every host not in inspect (%s "
			             "denied)",
			        names);
		} else {
			size_t refused = 0;
			for (size_t i = 0; i < allow_set_count(b->allow); i++) {
				const char *p = allow_set_pattern(b->allow, i);
				if (pattern_inspected(b, p))
					continue;
				fprintf(out, "%s%s", refused++ ? ", " : "refused as inspection-required to ",
				        p);
			}
			if (refused == 0)
				fprintf(out, "inspected: each request decided inside the tunnel (%s denied)",
				        names);
			else
				fprintf(out, " (%s denied)", names);
		}
		fprintf(out, "; to allow them, add the hosts to inspect, or remove %s from actions\n",
		        names);
	}
}

static void print_session(FILE *out, const struct allow_session_config *s, int refuse_ech)
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
	print_set(out, "inspect", s->bound.inspect, "(none)", "(none)");
	fprintf(out, "  enforce: %s\n", enforce_name(s->bound.enforce));
	print_tunnels(out, &s->bound, refuse_ech);
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
	if (cfg->nlisten_dns > 0) {
		fprintf(out, "dns listener:");
		for (size_t i = 0; i < cfg->nlisten_dns; i++)
			fprintf(out, " %s", cfg->listen_dns[i]);
		fprintf(out, " (UDP and TCP; answers: %s)\n\n",
		        cfg->listen_dns_answers == ALLOW_DNS_ANSWERS_MAPPED
		                ? "mapped, 198.18.0.0/15 per name"
		                : "real, the addresses that pass the address policy");
	}
	if (cfg->nsessions == 0) {
		fprintf(out, "no sessions: every connection will be denied\n");
		return;
	}
	for (size_t i = 0; i < cfg->nsessions; i++) {
		if (i > 0)
			fputc('\n', out);
		print_session(out, &cfg->sessions[i], cfg->tls.refuse_ech);
	}
	/* Only when some are set: the classifier's pre-run check uses them, the proxy does not. */
	int any = 0;
	for (size_t i = 0; i < ALLOW_REG_COUNT; i++) {
		if (cfg->registries[i] == NULL)
			continue;
		fprintf(out, "%s%s=%s", any ? ", " : "\nregistries (classify): ",
		        allow_registry_name(1u << i), cfg->registries[i]);
		any = 1;
	}
	if (any)
		fputc('\n', out);
}
