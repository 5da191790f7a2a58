/* Policy decisions: pure functions of (bound, canonical destination, action). */
#ifndef EGRESSD_ALLOWLIST_POLICY_H
#define EGRESSD_ALLOWLIST_POLICY_H

#include "allowlist/bound.h"
#include "allowlist/host.h"

enum allow_reason {
	ALLOW_OK = 0,              /* allowed */
	ALLOW_HOST_NOT_ALLOWED,    /* host-not-allowed: no allowDomains entry names it */
	ALLOW_HOST_DENIED,         /* host-denied: a domains entry names it */
	ALLOW_PORT_NOT_ALLOWED,    /* port-not-allowed: the host is allowed on other ports */
	ALLOW_ACTION_DENIED,       /* action-denied: the bound's actions deny it */
	ALLOW_IP_LITERAL,          /* ip-literal: an IP literal no allow entry names */
	ALLOW_INSPECTION_REQUIRED, /* inspection-required: a tunnel would carry actions the bound
	                              denies beside ones it allows (allowlist/action.h) */
};

/* "host-not-allowed", ... as in docs/design.md section 6; "allow" for ALLOW_OK. */
const char *allow_reason_code(enum allow_reason r);

struct allow_decision {
	enum allow_reason reason; /* ALLOW_OK or why not */
	char rule[320];           /* the rule that decided: "domains: evil.test",
	                             "allowDomains: **.github.com", "actions: git:push",
	                             "allowDomains (no entry matches)"; empty when none applies */
	char hint[320];           /* what would allow it: "add \"x.test\" to allowDomains of session
	                             default" style text, without the session name; empty on allow */
};

/* Decides d under bound b for the leaf tags in `action` (0 = host only, as for CONNECT):
 * deny patterns, then allow patterns, then the port, then the action.  A bound with no
 * allowDomains allows every host its deny list does not name; IP literals pass only where an
 * allow entry names that address or a CIDR containing it (and never without allowDomains). */
void allow_decide(const struct allow_bound *b, const struct allow_dest *d, unsigned action,
	struct allow_decision *out);

/* Whether d's host may be reached on some port, whatever d->port is (the DNS listener answers
 * a name the session may reach on any port): ALLOW_OK, or ALLOW_ACTION_DENIED when the host
 * passes but the action does not, with out as allow_decide gives it for such a port; else the
 * denial, the host's deny entry when one names it, else the answer for port 443. */
void allow_decide_any_port(const struct allow_bound *b, const struct allow_dest *d,
	unsigned action, struct allow_decision *out);

/* The action step of allow_decide alone: 1 with out's reason (action-denied), rule and hint set
 * when the bound denies one of the leaf tags in `action`, else 0 and out untouched.  For a
 * classified command line, whose tags are known before any host. */
int allow_decide_action(const struct allow_bound *b, unsigned action, struct allow_decision *out);

#endif
