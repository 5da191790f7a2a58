/* The action of a plain HTTP request (exact git smart-HTTP forms, unsure means more) and the
 * verdict on a tunnel by its kind (docs/design.md 4.5). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "allowlist/action.h"
#include "allowlist/tags.h"

struct http_case {
	const char *method;
	const char *target;
	int has_body;
	const char *want; /* sorted tags, as allow_tags_format gives them */
};

static const struct http_case http_cases[] = {
        {"GET", "/", 0, "http:read"},
        {"HEAD", "/x", 0, "http:read"},
        {"OPTIONS", "*", 0, "http:read"},
        {"GET", "/upload", 1, "http:write"},
        {"POST", "/api", 1, "http:write"},
        {"PUT", "/x", 0, "http:write"},
        {"DELETE", "/x", 0, "http:write"},
        /* the exact git smart-HTTP forms carry their git tag alone */
        {"GET", "/o/r.git/info/refs?service=git-upload-pack", 0, "git:fetch"},
        {"POST", "/o/r.git/git-upload-pack", 1, "git:fetch"},
        {"GET", "/o/r.git/info/refs?service=git-receive-pack", 0, "git:push"},
        {"POST", "/o/r.git/git-receive-pack", 1, "git:push"},
        {"POST", "/o/r.git/git%2Dreceive-pack", 1, "git:push"},
        {"GET", "/o/r/info%2Frefs?service=git%2Dupload-pack", 0, "git:fetch"},
        /* anything else is its method's tag, plus a git tag named anywhere (more, not less) */
        {"POST", "/api?q=git-upload-pack", 1, "git:fetch,http:write"},
        {"POST", "/git-upload-pack/x", 1, "git:fetch,http:write"},
        {"POST", "/o/r.git/git-upload-pack?x=1", 1, "git:fetch,http:write"},
        {"GET", "/o/r.git/info/refs?service=git-upload-pack&x=1", 0, "git:fetch,http:read"},
        {"GET", "/o/r.git/info/refs?service=git-upload-pack", 1, "git:fetch,git:push,http:write"},
        {"PUT", "/o/r.git/git-upload-pack", 1, "git:fetch,http:write"},
        {"POST", "/o/r.git/GIT-RECEIVE-PACK", 1, "git:push,http:write"},
        {"POST", "/o/r.git/GIT-UPLOAD-PACK", 1, "git:fetch,http:write"},
        {"GET", "/search?q=git%2dreceive%2Dpack", 0, "git:push,http:read"},
        {"POST", "/a?git-receive-pack&git-upload-pack", 1, "git:fetch,git:push,http:write"},
        {"POST", "/o/r.git/git-upload-pack%3Fx", 1, "git:fetch,http:write"},
        /* an exact form that names the other service elsewhere is both (fuzz finding: the
         * path's last segment git-upload-pack hid a git-receive-pack before it) */
        {"POST", "/x/git-receive-pack/y/git-upload-pack", 1, "git:fetch,git:push"},
        {"POST", "/git-upload-pack/r.git/git-receive-pack", 1, "git:fetch,git:push"},
        {"POST", "/git-receive%252Dpack/git-upload-pack", 1, "git:fetch,git:push"},
        {"GET", "/git-receive-pack/info/refs?service=git-upload-pack", 0, "git:fetch,git:push"},
        /* git's dumb transport: reads of a repository's files may fetch, writes may push
         * (black-box finding: git http-push's WebDAV requests were http:write alone) */
        {"LOCK", "/r.git/info/refs", 1, "git:push,http:write"},
        {"PUT", "/r.git/objects/ab/cdef", 1, "git:push,http:write"},
        {"MKCOL", "/r.git/objects/ab/", 0, "git:push,http:write"},
        {"MOVE", "/r.git/refs/heads/main_opaquelocktoken", 0, "git:push,http:write"},
        {"PUT", "/r.git/HEAD", 1, "git:push,http:write"},
        {"PUT", "/r.git//info/./refs", 1, "git:push,http:write"},
        {"PUT", "/r.git/info%2Frefs", 1, "git:push,http:write"},
        {"PATCH", "/repos/o/r/git/refs/heads/main", 1, "git:push,http:write"},
        {"GET", "/r.git/info/refs", 0, "git:fetch,http:read"},
        {"GET", "/r.git/INFO/REFS", 0, "git:fetch,http:read"},
        {"GET", "/r.git/objects/info/packs", 0, "git:fetch,http:read"},
        {"GET", "/r.git/HEAD", 0, "git:fetch,http:read"},
        {"GET", "/r.git/info/refs?x=1", 0, "git:fetch,http:read"},
        /* their neighbours: the same words elsewhere in a path */
        {"PUT", "/api/objects", 1, "http:write"},
        {"PUT", "/refs", 1, "http:write"},
        {"GET", "/docs/info/refsx", 0, "http:read"},
        {"GET", "/headless", 0, "http:read"},
        {"GET", "/head", 0, "http:read"},
        {"PUT", "/x/head", 1, "http:write"},
        {"PROPFIND", "/r.git/", 0, "http:write"},
        /* decoded twice, for an origin that does (black-box finding) */
        {"POST", "/r/git-receive%252Dpack", 1, "git:push,http:write"},
        {"GET", "/r/x?s=git%252Dupload-pack", 0, "git:fetch,http:read"},
        {"POST", "/r/100%25", 1, "http:write"},
};

static void test_http_action(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof http_cases / sizeof http_cases[0]; i++) {
		const struct http_case *c = &http_cases[i];
		unsigned t = allow_http_action(c->method, c->target, strlen(c->target), c->has_body);
		char got[128];
		allow_tags_format(t, ",", got, sizeof got);
		if (strcmp(got, c->want) != 0)
			fail_msg("%s %s (body %d): got %s, want %s", c->method, c->target,
			        c->has_body, got, c->want);
	}
}

static void test_http_action_long_target(void **state)
{
	(void)state;
	/* Longer than the decoding buffer: the raw text is still searched. */
	static char t[20000];
	memset(t, 'a', sizeof t - 1);
	t[0] = '/';
	memcpy(t + 15000, "git-receive-pack", 16);
	assert_int_equal(allow_http_action("POST", t, strlen(t), 1),
	        ALLOW_TAG_GIT_PUSH | ALLOW_TAG_HTTP_WRITE);
	memcpy(t + 15000, "aaaaaaaaaaaaaaaa", 16);
	assert_int_equal(allow_http_action("GET", t, strlen(t), 0), ALLOW_TAG_HTTP_READ);
}

struct tunnel_case {
	const char *actions; /* comma-separated denied tags, or "" */
	const char *inspect; /* one inspect pattern or NULL */
	enum allow_tunnel_kind kind;
	enum allow_reason want;
	int want_inspect;
};

static const struct tunnel_case tunnel_cases[] = {
        {"", NULL, ALLOW_TUNNEL_TLS, ALLOW_OK, 0},
        {"", NULL, ALLOW_TUNNEL_UNKNOWN, ALLOW_OK, 0},
        {"", "h.test", ALLOW_TUNNEL_TLS, ALLOW_OK, 1},
        {"all", NULL, ALLOW_TUNNEL_UNKNOWN, ALLOW_ACTION_DENIED, 0},
        {"all", NULL, ALLOW_TUNNEL_TLS, ALLOW_ACTION_DENIED, 0},
        {"all", "h.test", ALLOW_TUNNEL_TLS, ALLOW_ACTION_DENIED, 0},
        {"read,write", NULL, ALLOW_TUNNEL_UNKNOWN, ALLOW_ACTION_DENIED, 0},
        {"all", NULL, ALLOW_TUNNEL_SSH, ALLOW_ACTION_DENIED, 0},
        {"all", NULL, ALLOW_TUNNEL_HTTP, ALLOW_ACTION_DENIED, 0},
        /* part of an HTTPS tunnel denied: refused unless inspected */
        {"git:push", NULL, ALLOW_TUNNEL_TLS, ALLOW_INSPECTION_REQUIRED, 0},
        {"git:push", "h.test", ALLOW_TUNNEL_TLS, ALLOW_OK, 1},
        {"git:push", "**.h.test", ALLOW_TUNNEL_TLS, ALLOW_OK, 1},
        {"git:push", "other.test", ALLOW_TUNNEL_TLS, ALLOW_INSPECTION_REQUIRED, 0},
        {"http:read,http:write", NULL, ALLOW_TUNNEL_TLS, ALLOW_INSPECTION_REQUIRED, 0},
        {"git:push", NULL, ALLOW_TUNNEL_HTTP, ALLOW_OK, 0},
        /* git over ssh is an ssh session: a bound that denies git:push (or git:fetch) cannot
         * tell it from a shell and refuses ssh tunnels; denying ssh:read and ssh:write denies */
        {"git:push", NULL, ALLOW_TUNNEL_SSH, ALLOW_INSPECTION_REQUIRED, 0},
        {"git:fetch", NULL, ALLOW_TUNNEL_SSH, ALLOW_INSPECTION_REQUIRED, 0},
        {"git:push", "h.test", ALLOW_TUNNEL_SSH, ALLOW_INSPECTION_REQUIRED, 0},
        {"ssh:read,ssh:write,git:push", NULL, ALLOW_TUNNEL_SSH, ALLOW_ACTION_DENIED, 0},
        {"http:read,http:write", NULL, ALLOW_TUNNEL_SSH, ALLOW_OK, 0},
        {"git:push", NULL, ALLOW_TUNNEL_OTHER, ALLOW_INSPECTION_REQUIRED, 0},
        {"git:push", NULL, ALLOW_TUNNEL_UNKNOWN, ALLOW_OK, 0},
        {"ssh:write", NULL, ALLOW_TUNNEL_SSH, ALLOW_INSPECTION_REQUIRED, 0},
        {"ssh:write", NULL, ALLOW_TUNNEL_TLS, ALLOW_OK, 0},
        {"ssh:read,ssh:write", NULL, ALLOW_TUNNEL_SSH, ALLOW_ACTION_DENIED, 0},
        /* every http and git leaf denied: HTTPS and plain HTTP both denied, and ssh refused
         * (it could carry git), so a CONNECT is answered at once */
        {"http:read,http:write,git:fetch,git:push", NULL, ALLOW_TUNNEL_TLS, ALLOW_ACTION_DENIED,
                0},
        {"http:read,http:write,git:fetch,git:push", NULL, ALLOW_TUNNEL_SSH,
                ALLOW_INSPECTION_REQUIRED, 0},
        {"http:read,http:write,git:fetch,git:push", NULL, ALLOW_TUNNEL_UNKNOWN,
                ALLOW_ACTION_DENIED, 0},
        /* every http leaf denied, git not: ssh still goes */
        {"http:read,http:write", NULL, ALLOW_TUNNEL_UNKNOWN, ALLOW_OK, 0},
        /* only dns left: every kind is denied or refused, so a CONNECT is answered at once */
        {"git:fetch,git:push,http:read,http:write,ssh:read,ssh:write", NULL,
                ALLOW_TUNNEL_UNKNOWN, ALLOW_ACTION_DENIED, 0},
};

static void bound_with(struct allow_bound *b, const char *actions, const char *inspect)
{
	assert_int_equal(allow_bound_init(b), 0);
	char buf[256];
	snprintf(buf, sizeof buf, "%s", actions);
	for (char *tok = strtok(buf, ","); tok != NULL; tok = strtok(NULL, ",")) {
		unsigned m;
		assert_int_equal(allow_tag_parse(tok, strlen(tok), &m), 0);
		b->deny_actions |= m;
	}
	if (inspect != NULL) {
		b->inspect = allow_set_new(ALLOW_SET_ALLOW);
		assert_int_equal(allow_set_add(b->inspect, inspect, NULL, 0), 0);
	}
}

static void test_tunnel_decide(void **state)
{
	(void)state;
	struct allow_dest d;
	assert_int_equal(allow_canon_authority("h.test:443", 10, 0, &d), ALLOW_CANON_OK);
	for (size_t i = 0; i < sizeof tunnel_cases / sizeof tunnel_cases[0]; i++) {
		const struct tunnel_case *c = &tunnel_cases[i];
		struct allow_bound b;
		bound_with(&b, c->actions, c->inspect);
		struct allow_decision out;
		int insp = -1;
		allow_tunnel_decide(&b, &d, c->kind, &insp, &out);
		if (out.reason != c->want || insp != c->want_inspect)
			fail_msg("case %zu (actions %s, inspect %s, kind %s): got %s inspect %d, "
			         "want %s inspect %d",
			        i, c->actions, c->inspect ? c->inspect : "-",
			        allow_tunnel_kind_name(c->kind), allow_reason_code(out.reason), insp,
			        allow_reason_code(c->want), c->want_inspect);
		if (out.reason != ALLOW_OK && (out.rule[0] == '\0' || out.hint[0] == '\0'))
			fail_msg("case %zu: a denial without rule or hint", i);
		allow_bound_free(&b);
	}
}

static void test_tunnel_texts(void **state)
{
	(void)state;
	struct allow_dest d;
	assert_int_equal(allow_canon_authority("h.test:443", 10, 0, &d), ALLOW_CANON_OK);
	struct allow_bound b;
	bound_with(&b, "git:push", NULL);
	struct allow_decision out;
	int insp;
	allow_tunnel_decide(&b, &d, ALLOW_TUNNEL_TLS, &insp, &out);
	assert_string_equal(out.rule, "actions: git:push (an HTTPS tunnel carries git:fetch, "
	                              "git:push, http:read, http:write)");
	assert_string_equal(out.hint, "add \"h.test\" to inspect (egressd then decides each "
	                              "request inside the tunnel), or remove git:push from actions");
	allow_bound_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_http_action),
	        cmocka_unit_test(test_http_action_long_target),
	        cmocka_unit_test(test_tunnel_decide),
	        cmocka_unit_test(test_tunnel_texts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
