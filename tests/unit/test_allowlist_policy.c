/* Decisions (reason, rule, hint) and the merge of bounds and limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "allowlist/bound.h"
#include "allowlist/policy.h"
#include "allowlist/tags.h"

#define N_MAX 5

struct bound_spec {
	int has_allow;            /* 0: allowDomains absent */
	const char *allow[N_MAX]; /* NULL-terminated */
	const char *deny[N_MAX];  /* NULL-terminated */
	const char *actions;      /* one tag name or NULL */
	enum allow_enforce enforce;
};

static void build_bound(const struct bound_spec *s, struct allow_bound *b)
{
	assert_int_equal(allow_bound_init(b), 0);
	if (s->has_allow) {
		b->allow = allow_set_new(ALLOW_SET_ALLOW);
		assert_non_null(b->allow);
		for (size_t i = 0; i < N_MAX && s->allow[i] != NULL; i++)
			assert_int_equal(allow_set_add(b->allow, s->allow[i], NULL, 0), 0);
	}
	for (size_t i = 0; i < N_MAX && s->deny[i] != NULL; i++)
		assert_int_equal(allow_set_add(b->deny, s->deny[i], NULL, 0), 0);
	if (s->actions != NULL)
		assert_int_equal(
		        allow_tag_parse(s->actions, strlen(s->actions), &b->deny_actions), 0);
	b->enforce = s->enforce;
}

struct decide_case {
	struct bound_spec bound;
	const char *dest;
	unsigned action;
	enum allow_reason want;
	const char *rule;
	const char *hint;
};

static const struct decide_case decide_cases[] = {
        /* no allowDomains: everything the deny list does not name */
        {{0, {0}, {0}, NULL, 0}, "example.test:443", 0, ALLOW_OK, "", ""},
        {{0, {0}, {"evil.test"}, NULL, 0}, "www.evil.test:443", 0, ALLOW_HOST_DENIED,
                "domains: evil.test", "remove \"evil.test\" from domains"},
        {{0, {0}, {"evil.test:8080"}, NULL, 0}, "evil.test:443", 0, ALLOW_OK, "", ""},
        {{0, {0}, {"evil.test:8080"}, NULL, 0}, "evil.test:8080", 0, ALLOW_HOST_DENIED,
                "domains: evil.test:8080", "remove \"evil.test:8080\" from domains"},
        /* allowDomains */
        {{1, {"**.github.test"}, {0}, NULL, 0}, "api.github.test:443", 0, ALLOW_OK,
                "allowDomains: **.github.test", ""},
        {{1, {"github.test"}, {0}, NULL, 0}, "api.example.test:443", 0, ALLOW_HOST_NOT_ALLOWED,
                "allowDomains (no entry matches)", "add \"api.example.test\" to allowDomains"},
        {{1, {"github.test"}, {0}, NULL, 0}, "api.example.test:8443", 0, ALLOW_HOST_NOT_ALLOWED,
                "allowDomains (no entry matches)", "add \"api.example.test:8443\" to allowDomains"},
        {{1, {0}, {0}, NULL, 0}, "example.test:443", 0, ALLOW_HOST_NOT_ALLOWED,
                "allowDomains (no entry matches)", "add \"example.test\" to allowDomains"},
        {{1, {"example.test"}, {0}, NULL, 0}, "example.test:8443", 0, ALLOW_PORT_NOT_ALLOWED,
                "allowDomains: example.test", "add \"example.test:8443\" to allowDomains"},
        {{1, {"example.test:8443"}, {0}, NULL, 0}, "example.test:443", 0, ALLOW_PORT_NOT_ALLOWED,
                "allowDomains: example.test:8443", "add \"example.test:443\" to allowDomains"},
        /* deny wins over allow */
        {{1, {"**.example.test"}, {"bad.example.test"}, NULL, 0}, "x.bad.example.test:443", 0,
                ALLOW_HOST_DENIED, "domains: bad.example.test",
                "remove \"bad.example.test\" from domains"},
        {{1, {"**.example.test"}, {"bad.example.test"}, NULL, 0}, "good.example.test:443", 0,
                ALLOW_OK, "allowDomains: **.example.test", ""},
        /* IP literals need an entry naming them, with or without allowDomains */
        {{0, {0}, {0}, NULL, 0}, "192.0.2.1:443", 0, ALLOW_IP_LITERAL,
                "no allowDomains (IP literals need an entry)", "add \"192.0.2.1\" to allowDomains"},
        {{0, {0}, {0}, NULL, 0}, "2130706433:80", 0, ALLOW_IP_LITERAL,
                "no allowDomains (IP literals need an entry)", "add \"127.0.0.1\" to allowDomains"},
        {{1, {"**.example.test"}, {0}, NULL, 0}, "[2001:db8::1]:8443", 0, ALLOW_IP_LITERAL,
                "allowDomains (no entry names this address)",
                "add \"[2001:db8::1]:8443\" to allowDomains"},
        {{1, {"192.0.2.0/24"}, {0}, NULL, 0}, "192.0.2.1:443", 0, ALLOW_OK,
                "allowDomains: 192.0.2.0/24", ""},
        {{1, {"192.0.2.0/24"}, {0}, NULL, 0}, "192.0.2.1:22", 0, ALLOW_PORT_NOT_ALLOWED,
                "allowDomains: 192.0.2.0/24", "add \"192.0.2.1:22\" to allowDomains"},
        {{1, {"2001:db8::/32"}, {0}, NULL, 0}, "[2001:db8::1]:22", 0, ALLOW_PORT_NOT_ALLOWED,
                "allowDomains: 2001:db8::/32", "add \"[2001:db8::1]:22\" to allowDomains"},
        {{1, {"[2001:db8::1]:8443"}, {0}, NULL, 0}, "[2001:db8::1]:8443", 0, ALLOW_OK,
                "allowDomains: [2001:db8::1]:8443", ""},
        {{1, {"10.0.0.0/8"}, {"10.9.0.0/16"}, NULL, 0}, "10.9.1.1:443", 0, ALLOW_HOST_DENIED,
                "domains: 10.9.0.0/16", "remove \"10.9.0.0/16\" from domains"},
        /* actions, after host and port */
        {{1, {"github.test"}, {0}, "git:push", 0}, "github.test:443", ALLOW_TAG_GIT_PUSH,
                ALLOW_ACTION_DENIED, "actions: git:push", "remove \"git:push\" from actions"},
        {{1, {"github.test"}, {0}, "git:push", 0}, "github.test:443", ALLOW_TAG_GIT_FETCH, ALLOW_OK,
                "allowDomains: github.test", ""},
        {{1, {"github.test"}, {0}, "git:push", 0}, "github.test:443", 0, ALLOW_OK,
                "allowDomains: github.test", ""},
        {{0, {0}, {0}, "write", 0}, "example.test:80", ALLOW_TAG_HTTP_WRITE, ALLOW_ACTION_DENIED,
                "actions: http:write",
                "remove \"http:write\" (or \"write\", which covers it) from actions"},
        {{0, {0}, {0}, "all", 0}, "example.test:80", ALLOW_TAG_HTTP_READ, ALLOW_ACTION_DENIED,
                "actions: http:read",
                "remove \"http:read\" (or \"all\", which covers it) from actions"},
        {{0, {0}, {0}, "git:push", 0}, "example.test:80", ALLOW_TAG_GIT_PUSH | ALLOW_TAG_DNS,
                ALLOW_ACTION_DENIED, "actions: git:push", "remove \"git:push\" from actions"},
        /* net:raw is under read and under write: the hint names the parent the config used */
        {{0, {0}, {0}, "write", 0}, "example.test:80", ALLOW_TAG_NET_RAW, ALLOW_ACTION_DENIED,
                "actions: net:raw", "remove \"net:raw\" (or \"write\", which covers it) from actions"},
        {{0, {0}, {0}, "read", 0}, "example.test:80", ALLOW_TAG_NET_RAW, ALLOW_ACTION_DENIED,
                "actions: net:raw", "remove \"net:raw\" (or \"read\", which covers it) from actions"},
        {{0, {0}, {0}, "net:raw", 0}, "example.test:80", ALLOW_TAG_NET_RAW, ALLOW_ACTION_DENIED,
                "actions: net:raw", "remove \"net:raw\" from actions"},
        {{0, {0}, {0}, "read", 0}, "example.test:80", ALLOW_TAG_HTTP_WRITE, ALLOW_OK, "", ""},
        /* host reasons come before action reasons */
        {{1, {"github.test"}, {0}, "git:push", 0}, "gitlab.test:443", ALLOW_TAG_GIT_PUSH,
                ALLOW_HOST_NOT_ALLOWED, "allowDomains (no entry matches)",
                "add \"gitlab.test\" to allowDomains"},
        {{0, {0}, {"evil.test"}, "all", 0}, "evil.test:443", ALLOW_TAG_GIT_PUSH, ALLOW_HOST_DENIED,
                "domains: evil.test", "remove \"evil.test\" from domains"},
};

static void test_decide_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof decide_cases / sizeof decide_cases[0]; i++) {
		const struct decide_case *c = &decide_cases[i];
		struct allow_bound b;
		build_bound(&c->bound, &b);
		struct allow_dest d;
		if (allow_canon_authority(c->dest, strlen(c->dest), 0, &d) != ALLOW_CANON_OK)
			fail_msg("case %zu: bad destination %s", i, c->dest);
		struct allow_decision dec;
		memset(&dec, 'x', sizeof dec);
		allow_decide(&b, &d, c->action, &dec);
		if (dec.reason != c->want || strcmp(dec.rule, c->rule) != 0 ||
		        strcmp(dec.hint, c->hint) != 0)
			fail_msg("case %zu (%s): got %s / \"%s\" / \"%s\"; want %s / \"%s\" / "
			         "\"%s\"",
			        i, c->dest, allow_reason_code(dec.reason), dec.rule, dec.hint,
			        allow_reason_code(c->want), c->rule, c->hint);
		allow_bound_free(&b);
		assert_null(b.deny);
	}
}

/* allow_decide_any_port: the DNS listener's question, "may this host be reached on some port". */
static const struct decide_case any_port_cases[] = {
        {{1, {"example.test"}, {0}, NULL, 0}, "example.test", ALLOW_TAG_DNS, ALLOW_OK,
                "allowDomains: example.test", ""},
        {{1, {"example.test:8443"}, {0}, NULL, 0}, "example.test", ALLOW_TAG_DNS, ALLOW_OK,
                "allowDomains: example.test:8443", ""},
        {{1, {"**.example.test:*"}, {0}, NULL, 0}, "a.example.test", ALLOW_TAG_DNS, ALLOW_OK,
                "allowDomains: **.example.test:*", ""},
        {{1, {"*.example.test"}, {0}, NULL, 0}, "example.test", ALLOW_TAG_DNS,
                ALLOW_HOST_NOT_ALLOWED, "allowDomains (no entry matches)",
                "add \"example.test\" to allowDomains"},
        {{1, {"example.test"}, {0}, NULL, 0}, "other.test", ALLOW_TAG_DNS, ALLOW_HOST_NOT_ALLOWED,
                "allowDomains (no entry matches)", "add \"other.test\" to allowDomains"},
        /* a deny entry for every port, and one for the only port allowed */
        {{1, {"**.example.test"}, {"bad.example.test"}, NULL, 0}, "bad.example.test",
                ALLOW_TAG_DNS, ALLOW_HOST_DENIED, "domains: bad.example.test",
                "remove \"bad.example.test\" from domains"},
        {{1, {"example.test:8443"}, {"example.test:8443"}, NULL, 0}, "example.test",
                ALLOW_TAG_DNS, ALLOW_HOST_DENIED, "domains: example.test:8443",
                "remove \"example.test:8443\" from domains"},
        /* a deny entry for one port leaves the others */
        {{1, {"example.test", "example.test:8443"}, {"example.test:443"}, NULL, 0},
                "example.test", ALLOW_TAG_DNS, ALLOW_OK, "allowDomains: example.test", ""},
        {{1, {"example.test:*"}, {"example.test:1", "example.test:80", "example.test:443"}, NULL,
                 0},
                "example.test", ALLOW_TAG_DNS, ALLOW_OK, "allowDomains: example.test:*", ""},
        {{0, {0}, {"example.test:443"}, NULL, 0}, "example.test", ALLOW_TAG_DNS, ALLOW_OK, "",
                ""},
        {{0, {0}, {"example.test"}, NULL, 0}, "example.test", ALLOW_TAG_DNS, ALLOW_HOST_DENIED,
                "domains: example.test", "remove \"example.test\" from domains"},
        /* the dns action */
        {{1, {"example.test"}, {0}, "dns", 0}, "example.test", ALLOW_TAG_DNS, ALLOW_ACTION_DENIED,
                "actions: dns", "remove \"dns\" from actions"},
        {{1, {"example.test:8443"}, {0}, "read", 0}, "example.test", ALLOW_TAG_DNS,
                ALLOW_ACTION_DENIED, "actions: dns",
                "remove \"dns\" (or \"read\", which covers it) from actions"},
        {{1, {"example.test"}, {0}, "write", 0}, "example.test", ALLOW_TAG_DNS, ALLOW_OK,
                "allowDomains: example.test", ""},
};

static void test_decide_any_port(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof any_port_cases / sizeof any_port_cases[0]; i++) {
		const struct decide_case *c = &any_port_cases[i];
		struct allow_bound b;
		build_bound(&c->bound, &b);
		struct allow_dest d;
		if (allow_canon_host(c->dest, strlen(c->dest), &d) != ALLOW_CANON_OK)
			fail_msg("case %zu: bad destination %s", i, c->dest);
		struct allow_decision dec;
		memset(&dec, 'x', sizeof dec);
		allow_decide_any_port(&b, &d, c->action, &dec);
		if (dec.reason != c->want || strcmp(dec.rule, c->rule) != 0 ||
		        strcmp(dec.hint, c->hint) != 0)
			fail_msg("any-port case %zu (%s): got %s / \"%s\" / \"%s\"; want %s / "
			         "\"%s\" / \"%s\"",
			        i, c->dest, allow_reason_code(dec.reason), dec.rule, dec.hint,
			        allow_reason_code(c->want), c->rule, c->hint);
		allow_bound_free(&b);
	}
}

static void test_reason_codes(void **state)
{
	(void)state;
	assert_string_equal(allow_reason_code(ALLOW_OK), "allow");
	assert_string_equal(allow_reason_code(ALLOW_HOST_NOT_ALLOWED), "host-not-allowed");
	assert_string_equal(allow_reason_code(ALLOW_HOST_DENIED), "host-denied");
	assert_string_equal(allow_reason_code(ALLOW_PORT_NOT_ALLOWED), "port-not-allowed");
	assert_string_equal(allow_reason_code(ALLOW_ACTION_DENIED), "action-denied");
	assert_string_equal(allow_reason_code(ALLOW_IP_LITERAL), "ip-literal");
}

/* The texts of a set, joined with spaces, or "absent". */
static void set_texts(const struct allow_set *s, char *buf, size_t cap)
{
	size_t used = 0;
	buf[0] = '\0';
	if (s == NULL) {
		snprintf(buf, cap, "absent");
		return;
	}
	for (size_t i = 0; i < allow_set_count(s); i++)
		used += (size_t)snprintf(
		        buf + used, cap - used, "%s%s", i ? " " : "", allow_set_pattern(s, i));
}

struct merge_case {
	struct bound_spec dst, src;
	const char *allow; /* resulting allowDomains texts, "absent" or "" (empty list) */
	const char *deny;  /* resulting domains texts */
	unsigned actions;
	enum allow_enforce enforce;
};

static const struct merge_case merge_cases[] = {
        /* absent allowDomains has no effect, either way round */
        {{0, {0}, {0}, NULL, 0}, {1, {"a.test", "b.test"}, {0}, NULL, 0}, "a.test b.test", "", 0,
                0},
        {{1, {"a.test", "b.test"}, {0}, NULL, 0}, {0, {0}, {0}, NULL, 0}, "a.test b.test", "", 0,
                0},
        {{0, {0}, {0}, NULL, 0}, {0, {0}, {0}, NULL, 0}, "absent", "", 0, 0},
        /* intersection of identical canonical entries */
        {{1, {"a.test", "b.test", "**.c.test"}, {0}, NULL, 0},
                {1, {"B.TEST.", "**.c.test", "d.test"}, {0}, NULL, 0}, "b.test **.c.test", "", 0,
                0},
        {{1, {"a.test"}, {0}, NULL, 0}, {1, {"a.test:443"}, {0}, NULL, 0}, "", "", 0, 0},
        {{1, {"*.a.test"}, {0}, NULL, 0}, {1, {"**.a.test"}, {0}, NULL, 0}, "", "", 0, 0},
        /* an empty list permits nothing */
        {{1, {"a.test"}, {0}, NULL, 0}, {1, {0}, {0}, NULL, 0}, "", "", 0, 0},
        {{1, {0}, {0}, NULL, 0}, {1, {"a.test"}, {0}, NULL, 0}, "", "", 0, 0},
        /* domains and actions are unions; sandbox wins over guard */
        {{0, {0}, {"x.test", "y.test"}, "git:push", ALLOW_ENFORCE_SANDBOX},
                {0, {0}, {"y.test", "*.z.test"}, "http:write", ALLOW_ENFORCE_GUARD}, "absent",
                "x.test y.test *.z.test", ALLOW_TAG_GIT_PUSH | ALLOW_TAG_HTTP_WRITE,
                ALLOW_ENFORCE_SANDBOX},
        {{0, {0}, {0}, NULL, ALLOW_ENFORCE_GUARD}, {0, {0}, {0}, "read", ALLOW_ENFORCE_SANDBOX},
                "absent", "", ALLOW_TAGS_READ, ALLOW_ENFORCE_SANDBOX},
        {{0, {0}, {0}, NULL, ALLOW_ENFORCE_UNSET}, {0, {0}, {0}, NULL, ALLOW_ENFORCE_GUARD},
                "absent", "", 0, ALLOW_ENFORCE_GUARD},
};

static void test_merge_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof merge_cases / sizeof merge_cases[0]; i++) {
		const struct merge_case *c = &merge_cases[i];
		struct allow_bound dst, src;
		build_bound(&c->dst, &dst);
		build_bound(&c->src, &src);
		assert_int_equal(allow_bound_merge(&dst, &src), 0);
		char got[512];
		set_texts(dst.allow, got, sizeof got);
		if (strcmp(got, c->allow) != 0)
			fail_msg("merge case %zu: allowDomains \"%s\", want \"%s\"", i, got,
			        c->allow);
		set_texts(dst.deny, got, sizeof got);
		if (strcmp(got, c->deny) != 0)
			fail_msg("merge case %zu: domains \"%s\", want \"%s\"", i, got, c->deny);
		assert_int_equal(dst.deny_actions, c->actions);
		assert_int_equal(dst.enforce, c->enforce);
		/* src is read, never changed or taken over. */
		set_texts(src.allow, got, sizeof got);
		assert_int_equal(src.allow == NULL, !c->src.has_allow);
		allow_bound_free(&dst);
		allow_bound_free(&src);
	}
}

/* A merged bound decides by its merged lists: the deny of one and the allow of both. */
static void test_merge_then_decide(void **state)
{
	(void)state;
	static const struct bound_spec named = {
	        1, {"**.github.test", "api.other.test"}, {0}, NULL, ALLOW_ENFORCE_SANDBOX};
	static const struct bound_spec inl = {
	        1, {"**.github.test"}, {"gist.github.test"}, "git:push", 0};
	struct allow_bound b, s1, s2;
	assert_int_equal(allow_bound_init(&b), 0);
	build_bound(&named, &s1);
	build_bound(&inl, &s2);
	assert_int_equal(allow_bound_merge(&b, &s1), 0);
	assert_int_equal(allow_bound_merge(&b, &s2), 0);
	struct allow_dest d;
	struct allow_decision dec;
	assert_int_equal(allow_canon_authority("api.other.test", 14, 443, &d), ALLOW_CANON_OK);
	allow_decide(&b, &d, 0, &dec);
	assert_string_equal(allow_reason_code(dec.reason), "host-not-allowed");
	assert_int_equal(allow_canon_authority("gist.github.test", 16, 443, &d), ALLOW_CANON_OK);
	allow_decide(&b, &d, 0, &dec);
	assert_string_equal(allow_reason_code(dec.reason), "host-denied");
	assert_int_equal(allow_canon_authority("github.test", 11, 443, &d), ALLOW_CANON_OK);
	allow_decide(&b, &d, ALLOW_TAG_GIT_PUSH, &dec);
	assert_string_equal(allow_reason_code(dec.reason), "action-denied");
	allow_decide(&b, &d, ALLOW_TAG_GIT_FETCH, &dec);
	assert_string_equal(allow_reason_code(dec.reason), "allow");
	assert_int_equal(b.enforce, ALLOW_ENFORCE_SANDBOX);
	allow_bound_free(&b);
	allow_bound_free(&s1);
	allow_bound_free(&s2);
	allow_bound_free(&b); /* freeing twice is harmless: the pointers were cleared */
}

static void test_limits(void **state)
{
	(void)state;
	struct allow_limits a, b;
	allow_limits_init(&a);
	assert_true(a.max_connections == ALLOW_UNLIMITED &&
	            a.max_connections_total == ALLOW_UNLIMITED &&
	            a.max_bytes_out == ALLOW_UNLIMITED && a.max_bytes_in == ALLOW_UNLIMITED &&
	            a.max_new_hosts_per_minute == ALLOW_UNLIMITED &&
	            a.expires_in_ms == ALLOW_UNLIMITED);
	allow_limits_init(&b);
	b.max_connections = 64;
	b.max_bytes_out = 100u << 20;
	a.max_bytes_out = 1u << 20;
	a.expires_in_ms = 8 * 3600 * 1000;
	b.expires_in_ms = 9 * 3600 * 1000;
	b.max_new_hosts_per_minute = 0;
	allow_limits_merge(&a, &b);
	assert_int_equal(a.max_connections, 64);
	assert_int_equal(a.max_bytes_out, 1u << 20);
	assert_int_equal(a.expires_in_ms, 8 * 3600 * 1000);
	assert_int_equal(a.max_new_hosts_per_minute, 0);
	assert_true(a.max_connections_total == ALLOW_UNLIMITED);
	assert_true(a.max_bytes_in == ALLOW_UNLIMITED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_decide_table),
	        cmocka_unit_test(test_decide_any_port),
	        cmocka_unit_test(test_reason_codes),
	        cmocka_unit_test(test_merge_table),
	        cmocka_unit_test(test_merge_then_decide),
	        cmocka_unit_test(test_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
