/* Policy decisions (docs/design.md 3 step 4, 4.5, 6).  Pure: the same inputs give the same answer. */
#include "allowlist/policy.h"

#include <stdio.h>
#include <string.h>

#include "allowlist/tags.h"

const char *allow_reason_code(enum allow_reason r)
{
	switch (r) {
	case ALLOW_OK:
		return "allow";
	case ALLOW_HOST_NOT_ALLOWED:
		return "host-not-allowed";
	case ALLOW_HOST_DENIED:
		return "host-denied";
	case ALLOW_PORT_NOT_ALLOWED:
		return "port-not-allowed";
	case ALLOW_ACTION_DENIED:
		return "action-denied";
	case ALLOW_IP_LITERAL:
		return "ip-literal";
	case ALLOW_INSPECTION_REQUIRED:
		return "inspection-required";
	}
	return "unknown";
}

/* The allowDomains entry that would admit d exactly: the host alone when the port is one a
 * portless pattern covers (unless with_port), else with its port (IPv6 then in brackets, as
 * patterns need). */
static void entry_for(const struct allow_dest *d, int with_port, char *buf, size_t cap)
{
	if (!with_port && (d->port == 80 || d->port == 443))
		snprintf(buf, cap, "%s", d->host);
	else if (d->kind == ALLOW_HOST_IPV6)
		snprintf(buf, cap, "[%s]:%u", d->host, (unsigned)d->port);
	else
		snprintf(buf, cap, "%s:%u", d->host, (unsigned)d->port);
}

static void deny(struct allow_decision *out, enum allow_reason r, const char *rule_prefix,
        const char *rule, const char *hint_verb, const char *hint_what, const char *hint_where)
{
	out->reason = r;
	snprintf(out->rule, sizeof out->rule, "%s%s", rule_prefix, rule);
	snprintf(out->hint, sizeof out->hint, "%s \"%s\" %s", hint_verb, hint_what, hint_where);
}

int allow_decide_action(const struct allow_bound *b, unsigned action, struct allow_decision *out)
{
	unsigned hit = action & b->deny_actions;
	if (hit == 0)
		return 0;
	unsigned bit = hit & (~hit + 1); /* the lowest, so the answer does not vary */
	const char *name = allow_tag_name(bit);
	/* deny_actions holds leaves only, so a config that said "write" or "all" shows up as a
	 * whole group: name the parent too, since removing the leaf alone is impossible.
	 * net:raw sits under both read and write; either may be the one. */
	unsigned da = b->deny_actions;
	const char *parent = (da & ALLOW_TAGS_ALL) == ALLOW_TAGS_ALL ? "all"
	                     : (bit & ALLOW_TAGS_READ) && (da & ALLOW_TAGS_READ) == ALLOW_TAGS_READ
	                             ? "read"
	                     : (bit & ALLOW_TAGS_WRITE) && (da & ALLOW_TAGS_WRITE) == ALLOW_TAGS_WRITE
	                             ? "write"
	                             : NULL;
	out->reason = ALLOW_ACTION_DENIED;
	snprintf(out->rule, sizeof out->rule, "actions: %s", name);
	if (parent != NULL)
		snprintf(out->hint, sizeof out->hint,
		        "remove \"%s\" (or \"%s\", which covers it) from actions", name, parent);
	else
		snprintf(out->hint, sizeof out->hint, "remove \"%s\" from actions", name);
	return 1;
}

void allow_decide(const struct allow_bound *b, const struct allow_dest *d, unsigned action,
        struct allow_decision *out)
{
	const char *rule = NULL;
	char entry[ALLOW_HOST_BUF + 16];
	memset(out, 0, sizeof *out);
	out->reason = ALLOW_OK;

	/* Deny wins over allow.  A deny entry for other ports only is no match here. */
	if (b->deny != NULL && allow_set_match(b->deny, d, &rule) == ALLOW_MATCH_YES) {
		deny(out, ALLOW_HOST_DENIED, "domains: ", rule, "remove", rule, "from domains");
		return;
	}

	int literal = d->kind != ALLOW_HOST_NAME;
	enum allow_match m = ALLOW_MATCH_NONE;
	rule = NULL;
	if (b->allow != NULL)
		m = allow_set_match(b->allow, d, &rule);
	if (m == ALLOW_MATCH_PORT) {
		/* The host has an entry, for other ports: name that entry so the reader sees why.
		 */
		entry_for(d, 1, entry, sizeof entry);
		deny(out, ALLOW_PORT_NOT_ALLOWED, "allowDomains: ", rule, "add", entry,
		        "to allowDomains");
		return;
	}
	entry_for(d, 0, entry, sizeof entry);
	if (m == ALLOW_MATCH_NONE && literal) {
		deny(out, ALLOW_IP_LITERAL, "",
		        b->allow != NULL ? "allowDomains (no entry names this address)"
		                         : "no allowDomains (IP literals need an entry)",
		        "add", entry, "to allowDomains");
		return;
	}
	if (m == ALLOW_MATCH_NONE && b->allow != NULL) {
		deny(out, ALLOW_HOST_NOT_ALLOWED, "", "allowDomains (no entry matches)", "add",
		        entry, "to allowDomains");
		return;
	}

	if (allow_decide_action(b, action, out))
		return;
	if (rule != NULL)
		snprintf(out->rule, sizeof out->rule, "allowDomains: %s", rule);
}

#define ANY_PORT_MAX 256 /* port patterns read per host; past them the answer fails closed */

static int port_listed(const int *ports, size_t n, int p)
{
	for (size_t i = 0; i < n; i++)
		if (ports[i] == p)
			return 1;
	return 0;
}

void allow_decide_any_port(const struct allow_bound *b, const struct allow_dest *d,
        unsigned action, struct allow_decision *out)
{
	/* The ports worth trying: the two a portless allow entry admits, every port an allow entry
	 * names, and for ":*" (or no allowDomains) the lowest port no deny entry names.  Each is
	 * then decided exactly by allow_decide, so a wrong guess can only deny. */
	int cand[ANY_PORT_MAX + 3], deny_ports[ANY_PORT_MAX];
	size_t ncand = 0;
	cand[ncand++] = 443;
	cand[ncand++] = 80;
	int any = b->allow == NULL;
	if (b->allow != NULL) {
		int ports[ANY_PORT_MAX];
		size_t n = allow_set_host_ports(b->allow, d, ports, ANY_PORT_MAX);
		for (size_t i = 0; i < n && i < ANY_PORT_MAX; i++) {
			if (ports[i] == ALLOW_PORT_ANY)
				any = 1;
			else if (ports[i] > 0 && !port_listed(cand, ncand, ports[i]))
				cand[ncand++] = ports[i];
		}
	}
	if (any) {
		size_t nd = allow_set_host_ports(b->deny, d, deny_ports, ANY_PORT_MAX);
		if (nd > ANY_PORT_MAX)
			nd = ANY_PORT_MAX;
		for (int p = 1; p <= 65535; p++)
			if (!port_listed(deny_ports, nd, p)) {
				if (!port_listed(cand, ncand, p))
					cand[ncand++] = p;
				break;
			}
	}
	struct allow_decision first, dec;
	int have_denied = 0;
	for (size_t i = 0; i < ncand; i++) {
		struct allow_dest at = *d;
		at.port = (uint16_t)cand[i];
		allow_decide(b, &at, action, &dec);
		if (dec.reason == ALLOW_OK || dec.reason == ALLOW_ACTION_DENIED) {
			/* The host passes on this port; the action, if anything, denies it. */
			*out = dec;
			return;
		}
		if (i == 0 || (dec.reason == ALLOW_HOST_DENIED && !have_denied)) {
			first = dec;
			have_denied = dec.reason == ALLOW_HOST_DENIED;
		}
	}
	*out = first;
}
