/* The YAML config loader: what a user writes, what the proxy gets, and the exact error lines
 * a user sees (position and key path included). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "allowlist/config.h"
#include "allowlist/tags.h"

/* Loads text as "t.yaml"; returns the config or NULL, errors in *e. */
static struct allow_config *load(const char *text, struct allow_errors *e)
{
	memset(e, 0, sizeof *e);
	return allow_config_load_buffer("t.yaml", text, strlen(text), e);
}

/* Prints every error line when an assertion about them is about to fail. */
static void dump(const struct allow_errors *e)
{
	for (size_t i = 0; i < e->n; i++)
		print_message("  error[%zu]: %s\n", i, e->lines[i]);
}

static struct allow_config *load_ok(const char *text)
{
	struct allow_errors e;
	struct allow_config *c = load(text, &e);
	if (c == NULL || e.n != 0)
		dump(&e);
	assert_non_null(c);
	assert_int_equal(e.n, 0);
	allow_errors_free(&e);
	return c;
}

static char *print_to_string(const struct allow_config *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	allow_config_print(c, f);
	fclose(f);
	return buf;
}

/* ---- valid configs ---------------------------------------------------------------------- */

static const char design_example[] =
	"listen:\n"
	"  proxy: [\"127.0.0.1:3128\", \"[::1]:3129\"]\n"
	"  dns: [\"127.0.0.1:5353\", \"[::1]:0\"]\n"
	"  dnsAnswers: mapped\n"
	"  control: \"unix:/run/egressd/control.sock\"\n"
	"  metrics: \"127.0.0.1:9128\"\n"
	"dns:\n"
	"  servers: [192.0.2.53, \"192.0.2.54:5353\", \"[2001:db8::53]:53\"]\n"
	"  hosts: {Origin.TEST.: [127.0.0.1, \"::1\"]}\n"
	"  allowAddresses: [127.0.0.0/8]\n"
	"  denyAddresses: [\"2001:db8::/32\"]\n"
	"  timeout: 2500ms\n"
	"limits: {maxClients: 500, maxHeaderBytes: 32KiB, maxHeaders: 50, headerTimeout: 3s,\n"
	"         idleTimeout: 5m, connectTimeout: 1m, shutdownGrace: 0}\n"
	"audit: {path: \"-\", chain: true, fsync: true}\n"
	"bounds:\n"
	"  github:\n"
	"    network: {allowDomains: [github.com, \"*.github.com\"], enforce: sandbox}\n"
	"sessions:\n"
	"  default:\n"
	"    bounds: [github]\n"
	"    bound: {network: {actions: [git:push]}}\n"
	"    limits: {maxConnections: 64, maxBytesOut: 100MiB, expiresIn: 8h}\n"
	"    auth: {token: \"abc\"}\n"
	"    clients: [10.0.0.0/8, \"2001:db8::1\"]\n";

static void test_design_example(void **state)
{
	(void)state;
	struct allow_config *c = load_ok(design_example);
	assert_string_equal(c->path, "t.yaml");
	assert_int_equal(c->nlisten_proxy, 2);
	assert_string_equal(c->listen_proxy[0], "127.0.0.1:3128");
	assert_string_equal(c->listen_proxy[1], "[::1]:3129");
	assert_int_equal(c->nlisten_dns, 2);
	assert_string_equal(c->listen_dns[0], "127.0.0.1:5353");
	assert_string_equal(c->listen_dns[1], "[::1]:0");
	assert_int_equal(c->listen_dns_answers, ALLOW_DNS_ANSWERS_MAPPED);
	assert_string_equal(c->listen_control, "unix:/run/egressd/control.sock");
	assert_string_equal(c->listen_metrics, "127.0.0.1:9128");

	assert_int_equal(c->dns.nservers, 3);
	assert_string_equal(c->dns.servers[2], "[2001:db8::53]:53");
	assert_int_equal(c->dns.nhosts, 1);
	assert_string_equal(c->dns.hosts[0].name, "origin.test");
	assert_int_equal(c->dns.hosts[0].naddrs, 2);
	char a[64];
	allow_cidr_format(&c->dns.hosts[0].addrs[0], a, sizeof a);
	assert_string_equal(a, "127.0.0.1/32");
	allow_cidr_format(&c->dns.hosts[0].addrs[1], a, sizeof a);
	assert_string_equal(a, "::1/128");
	assert_int_equal(c->dns.nallow_addresses, 1);
	assert_int_equal(c->dns.allow_addresses[0].prefix, 8);
	assert_int_equal(c->dns.ndeny_addresses, 1);
	assert_int_equal(c->dns.deny_addresses[0].prefix, 32);
	assert_int_equal(c->dns.timeout_ms, 2500);

	assert_int_equal(c->limits.max_clients, 500);
	assert_int_equal(c->limits.max_header_bytes, 32 * 1024);
	assert_int_equal(c->limits.max_headers, 50);
	assert_int_equal(c->limits.header_timeout_ms, 3000);
	assert_int_equal(c->limits.idle_timeout_ms, 300000);
	assert_int_equal(c->limits.connect_timeout_ms, 60000);
	assert_int_equal(c->limits.shutdown_grace_ms, 0);
	assert_string_equal(c->audit_path, "-");
	assert_int_equal(c->audit_chain, 1);
	assert_int_equal(c->audit_fsync, 1);

	assert_int_equal(c->nsessions, 1);
	const struct allow_session_config *s = allow_config_session(c, "default");
	assert_ptr_equal(s, &c->sessions[0]);
	assert_null(allow_config_session(c, "other"));
	assert_string_equal(s->name, "default");
	assert_string_equal(s->token, "abc");
	assert_int_equal(s->limits.max_connections, 64);
	assert_int_equal(s->limits.max_bytes_out, 100ull * 1024 * 1024);
	assert_int_equal(s->limits.expires_in_ms, 8ull * 3600 * 1000);
	assert_true(s->limits.max_bytes_in == ALLOW_UNLIMITED);
	assert_true(s->limits.max_connections_total == ALLOW_UNLIMITED);
	assert_int_equal(s->nclients, 2);
	allow_cidr_format(&s->clients[1], a, sizeof a);
	assert_string_equal(a, "2001:db8::1/128");
	assert_non_null(s->bound.allow);
	assert_int_equal(allow_set_count(s->bound.allow), 2);
	assert_true(allow_set_has(s->bound.allow, "github.com"));
	assert_true(allow_set_has(s->bound.allow, "*.github.com"));
	assert_int_equal(allow_set_count(s->bound.deny), 0);
	assert_int_equal(s->bound.deny_actions, ALLOW_TAG_GIT_PUSH);
	assert_int_equal(s->bound.enforce, ALLOW_ENFORCE_SANDBOX);
	assert_null(s->bound.inspect);
	allow_config_free(c);
}

static void test_defaults(void **state)
{
	(void)state;
	/* An empty mapping is a valid config: every default, no sessions. */
	const char *texts[] = {"{}\n", "# only a mapping\naudit: {chain: false}\n"};
	for (size_t i = 0; i < 2; i++) {
		struct allow_config *c = load_ok(texts[i]);
		assert_int_equal(c->nlisten_proxy, 1);
		assert_string_equal(c->listen_proxy[0], "127.0.0.1:3128");
		assert_null(c->listen_control);
		assert_null(c->listen_metrics);
		assert_null(c->listen_dns);
		assert_int_equal(c->nlisten_dns, 0);
		assert_int_equal(c->listen_dns_answers, ALLOW_DNS_ANSWERS_REAL);
		assert_int_equal(c->dns.nservers, 0);
		assert_int_equal(c->dns.nhosts, 0);
		assert_int_equal(c->dns.timeout_ms, 5000);
		assert_int_equal(c->limits.max_clients, 10000);
		assert_int_equal(c->limits.max_header_bytes, 65536);
		assert_int_equal(c->limits.max_headers, 100);
		assert_int_equal(c->limits.header_timeout_ms, 10000);
		assert_int_equal(c->limits.idle_timeout_ms, 300000);
		assert_int_equal(c->limits.connect_timeout_ms, 10000);
		assert_int_equal(c->limits.shutdown_grace_ms, 10000);
		assert_string_equal(c->audit_path, "audit.jsonl");
		assert_int_equal(c->audit_chain, 0);
		assert_int_equal(c->audit_fsync, 0);
		assert_int_equal(c->nsessions, 0);
		char *out = print_to_string(c);
		assert_string_equal(out, "no sessions: every connection will be denied\n");
		free(out);
		allow_config_free(c);
	}
}

static void test_merge(void **state)
{
	(void)state;
	/* 4.3: domains and actions unite, allowDomains intersects, sandbox wins, and the session
	 * limits keep what was set. */
	struct allow_config *c = load_ok(
		"bounds:\n"
		"  a:\n"
		"    network:\n"
		"      allowDomains: [one.test, two.test, \"*.three.test\"]\n"
		"      domains: [bad.test]\n"
		"      actions: [git:push]\n"
		"      enforce: sandbox\n"
		"  b:\n"
		"    network: {allowDomains: [two.test, \"*.three.test\", four.test], enforce: sandbox,\n"
		"              actions: [ssh:read, ssh:write]}\n"
		"  g:\n"
		"    network: {domains: [worse.test], enforce: guard}\n"
		"sessions:\n"
		"  s1:\n"
		"    bounds: [g, a, b]\n"
		"    bound: {network: {domains: [\"*.evil.test\"], actions: [write, http:read]}}\n"
		"    limits: {maxBytesIn: 1GiB, maxNewHostsPerMinute: 10, maxConnectionsTotal: 0}\n"
		"  plain: {}\n");
	assert_int_equal(c->nsessions, 2);
	const struct allow_session_config *s = allow_config_session(c, "s1");
	assert_non_null(s);
	assert_int_equal(allow_set_count(s->bound.allow), 2);
	assert_true(allow_set_has(s->bound.allow, "two.test"));
	assert_true(allow_set_has(s->bound.allow, "*.three.test"));
	assert_false(allow_set_has(s->bound.allow, "one.test"));
	assert_false(allow_set_has(s->bound.allow, "four.test"));
	assert_int_equal(allow_set_count(s->bound.deny), 3);
	assert_int_equal(s->bound.deny_actions,
		ALLOW_TAGS_WRITE | ALLOW_TAG_SSH_READ | ALLOW_TAG_HTTP_READ);
	assert_int_equal(s->bound.enforce, ALLOW_ENFORCE_SANDBOX);
	assert_int_equal(s->limits.max_bytes_in, 1ull << 30);
	assert_int_equal(s->limits.max_new_hosts_per_minute, 10);
	assert_int_equal(s->limits.max_connections_total, 0);
	assert_true(s->limits.max_connections == ALLOW_UNLIMITED);

	/* A session with nothing: no allow list at all, nothing denied, unlimited. */
	const struct allow_session_config *p = allow_config_session(c, "plain");
	assert_non_null(p);
	assert_null(p->bound.allow);
	assert_int_equal(allow_set_count(p->bound.deny), 0);
	assert_int_equal(p->bound.deny_actions, 0);
	assert_null(p->token);
	assert_true(p->limits.expires_in_ms == ALLOW_UNLIMITED);
	allow_config_free(c);
}

static void test_empty_allow_list(void **state)
{
	(void)state;
	/* An empty allowDomains permits nothing, which is different from no list at all. */
	struct allow_config *c = load_ok(
		"sessions:\n  locked: {bound: {network: {allowDomains: [], enforce: sandbox}}}\n");
	assert_non_null(c->sessions[0].bound.allow);
	assert_int_equal(allow_set_count(c->sessions[0].bound.allow), 0);
	allow_config_free(c);
}

/* net:raw is an action of its own (a bound may deny it alone), and `all` covers it. */
static void test_net_raw_action(void **state)
{
	(void)state;
	struct allow_config *c = load_ok("bounds:\n  r: {network: {actions: [net:raw]}}\n"
	                                 "sessions:\n  a: {bounds: [r]}\n"
	                                 "  b: {bound: {network: {actions: [all]}}}\n");
	assert_int_equal(allow_config_session(c, "a")->bound.deny_actions, ALLOW_TAG_NET_RAW);
	assert_true(allow_config_session(c, "b")->bound.deny_actions & ALLOW_TAG_NET_RAW);
	allow_config_free(c);
}

/* registries: maps each package registry family to the host the pre-run check tests. */
static void test_registries(void **state)
{
	(void)state;
	static const char *const names[] = {
	        "brew", "crates", "docker", "go", "npm", "packagist", "pypi", "rubygems"};
	char yaml[1024];
	size_t p = (size_t)snprintf(yaml, sizeof yaml, "registries:\n");
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		p += (size_t)snprintf(yaml + p, sizeof yaml - p, "  %s: %s.Registry.test.\n", names[i],
		        names[i]);
	struct allow_config *c = load_ok(yaml);
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		unsigned bit = allow_registry_parse(names[i], strlen(names[i]));
		assert_int_not_equal(bit, 0);
		char want[64];
		snprintf(want, sizeof want, "%s.registry.test", names[i]);
		assert_string_equal(c->registries[allow_registry_index(bit)], want);
	}
	allow_config_free(c);
	c = load_ok("registries: {docker: 192.0.2.7}\n");
	assert_string_equal(c->registries[allow_registry_index(ALLOW_REG_DOCKER)], "192.0.2.7");
	assert_null(c->registries[allow_registry_index(ALLOW_REG_NPM)]);
	allow_config_free(c);
}

/* tls: paths relative to the config's folder (as tokenFile), absolute ones as written,
 * "system" as no file, and where each value was written. */
static void test_tls(void **state)
{
	(void)state;
	const char *text = "tls:\n"
	                   "  ca: {cert: ca/ca.pem, key: /etc/egressd/ca.key}\n"
	                   "  upstreamCA: system\n";
	struct allow_errors e = {0};
	struct allow_config *c = allow_config_load_buffer("conf.d/egressd.yaml", text, strlen(text), &e);
	if (c == NULL)
		dump(&e);
	assert_non_null(c);
	assert_string_equal(c->tls.ca_cert, "conf.d/ca/ca.pem");
	assert_string_equal(c->tls.ca_key, "/etc/egressd/ca.key");
	assert_null(c->tls.upstream_ca);
	assert_int_equal(c->tls.ca_cert_at.line, 2);
	assert_int_equal(c->tls.ca_cert_at.col, 14);
	assert_int_equal(c->tls.ca_key_at.line, 2);
	assert_int_equal(c->tls.ca_key_at.col, 30);
	assert_int_equal(c->tls.upstream_ca_at.line, 3);
	allow_config_free(c);

	c = load_ok("tls: {upstreamCA: ./system}\n");
	assert_string_equal(c->tls.upstream_ca, "././system");
	assert_null(c->tls.ca_cert);
	assert_null(c->tls.ca_key);
	assert_int_equal(c->tls.upstream_ca_at.col, 19);
	allow_config_free(c);

	c = load_ok("sessions: {}\n");
	assert_null(c->tls.ca_cert);
	assert_null(c->tls.upstream_ca);
	assert_int_equal(c->tls.upstream_ca_at.line, 0);
	allow_config_free(c);
	allow_errors_free(&e);
}

static void test_print(void **state)
{
	(void)state;
	struct allow_config *c = load_ok(design_example);
	char *out = print_to_string(c);
	assert_string_equal(out,
		"dns listener: 127.0.0.1:5353 [::1]:0 (UDP and TCP; answers: mapped, 198.18.0.0/15 "
		"per name)\n"
		"\n"
		"session default\n"
		"  allowDomains: github.com, *.github.com\n"
		"  domains: (none)\n"
		"  actions denied: git:push\n"
		"  inspect: (none)\n"
		"  enforce: sandbox\n"
		"  tunnels:\n"
		"    https: refused as inspection-required to github.com, *.github.com (git:push "
		"denied); to allow them, add the hosts to inspect, or remove git:push from actions\n"
		"    plain http: each request decided by its method and path (git:push denied)\n"
		"    ssh: refused (inspection-required: actions: git:push (an SSH tunnel carries "
		"git:fetch, git:push, ssh:read, ssh:write)); to allow them, remove git:push from "
		"actions: egressd cannot tell git over ssh from any other ssh session (git over HTTPS "
		"to a host in inspect is decided request by request)\n"
		"    other: refused (inspection-required: actions: git:push (an opaque tunnel carries "
		"dns, git:fetch, git:push, http:read, http:write, net:raw, ssh:read, ssh:write)); to allow "
		"them, remove git:push from actions: egressd cannot tell the actions inside an opaque "
		"tunnel apart\n"
		"  limits: maxConnections=64 maxBytesOut=100MiB expiresIn=8h (others unlimited)\n"
		"  auth: token\n"
		"  clients: 10.0.0.0/8, 2001:db8::1/128\n");
	free(out);
	allow_config_free(c);

	/* tls.refuseECH: what an allowed HTTPS tunnel with ECH gets */
	c = load_ok("tls: {refuseECH: true}\nsessions:\n  a: {}\n");
	assert_int_equal(c->tls.refuse_ech, 1);
	out = print_to_string(c);
	assert_non_null(strstr(out, "    https: relayed after the first bytes are checked; a "
	                            "ClientHello with ECH is refused (tls.refuseECH)\n"));
	free(out);
	allow_config_free(c);

	c = load_ok("sessions:\n  a: {}\n  b:\n    bound: {network: {allowDomains: [], enforce: sandbox,"
		    " domains: [x.test], actions: [read, write]}}\n"
		    "    limits: {maxConnections: 1, maxConnectionsTotal: 2, maxBytesOut: 1500,"
		    " maxBytesIn: 2KiB, maxNewHostsPerMinute: 3, expiresIn: 90s}\n");
	out = print_to_string(c);
	assert_string_equal(out,
		"session a\n"
		"  allowDomains: (any host that domains does not deny)\n"
		"  domains: (none)\n"
		"  actions denied: (none)\n"
		"  inspect: (none)\n"
		"  enforce: (not set)\n"
		"  tunnels:\n"
		"    https: relayed after the first bytes are checked; ECH is judged on its outer "
		"name (tls.refuseECH: false)\n"
		"    plain http: each request decided by its method and path\n"
		"    ssh: relayed after the first bytes are checked\n"
		"    other: relayed after the first bytes are checked\n"
		"  limits: (all unlimited)\n"
		"  auth: (none)\n"
		"  clients: (none)\n"
		"\n"
		"session b\n"
		"  allowDomains: (empty: nothing is allowed)\n"
		"  domains: x.test\n"
		"  actions denied: dns, git:fetch, git:push, http:read, http:write, net:raw, ssh:read, "
		"ssh:write\n"
		"  inspect: (none)\n"
		"  enforce: sandbox\n"
		"  tunnels:\n"
		"    https: refused (action-denied: actions: git:fetch, git:push, http:read, "
		"http:write); to allow them, remove from actions one of git:fetch, git:push, "
		"http:read, http:write, which is all an HTTPS tunnel carries\n"
		"    plain http: refused (action-denied: actions: git:fetch, git:push, http:read, "
		"http:write); to allow them, remove from actions one of git:fetch, git:push, "
		"http:read, http:write, which is all a plain HTTP tunnel carries\n"
		"    ssh: refused (action-denied: actions: ssh:read, ssh:write); to allow them, remove "
		"from actions one of ssh:read, ssh:write, one of which every ssh session (git over ssh "
		"included) carries\n"
		"    other: refused (action-denied: actions: dns, git:fetch, git:push, http:read, "
		"http:write, net:raw, ssh:read, ssh:write); to allow them, remove from actions one "
		"of dns, git:fetch, git:push, http:read, http:write, net:raw, ssh:read, ssh:write, "
		"which is all an opaque tunnel carries\n"
		"  limits: maxConnections=1 maxConnectionsTotal=2 maxBytesOut=1500B maxBytesIn=2KiB"
		" maxNewHostsPerMinute=3 expiresIn=90s\n"
		"  auth: (none)\n"
		"  clients: (none)\n");
	free(out);
	allow_config_free(c);
}

static void test_example_file(void **state)
{
	(void)state;
	/* The quick start's config must load, with the bound the README promises. */
	const char *src = getenv("EGRESSD_SOURCE_DIR");
	if (src == NULL)
		skip();
	char path[4096];
	snprintf(path, sizeof path, "%s/examples/egressd.yaml", src);
	struct allow_errors e = {0};
	struct allow_config *c = allow_config_load(path, &e);
	if (c == NULL)
		dump(&e);
	assert_non_null(c);
	assert_string_equal(c->audit_path, "-");
	assert_string_equal(c->listen_proxy[0], "127.0.0.1:3128");
	const struct allow_session_config *s = allow_config_session(c, "default");
	assert_non_null(s);
	assert_true(allow_set_has(s->bound.allow, "github.com"));
	assert_true(allow_set_has(s->bound.allow, "**.github.com"));
	assert_true(allow_set_has(s->bound.allow, "*.githubusercontent.com"));
	/* It promises only what egressd enforces: no action denied that an HTTPS tunnel could
	 * not tell apart (docs/design.md 4.5). */
	assert_int_equal(s->bound.deny_actions, 0);
	assert_int_equal(s->bound.enforce, ALLOW_ENFORCE_SANDBOX);
	allow_config_free(c);
	allow_errors_free(&e);
}

/* ---- values ------------------------------------------------------------------------------ */

struct value_case {
	const char *in;
	int rc;         /* 0, -1 (syntax) or -2 (too large) */
	uint64_t want;
};

static void test_sizes(void **state)
{
	(void)state;
	static const struct value_case cases[] = {
		{"0", 0, 0},
		{"65536", 0, 65536},
		{"100B", 0, 100},
		{"64KiB", 0, 65536},
		{"100MiB", 0, 104857600},
		{"2GiB", 0, 2147483648ull},
		{"100XB", -1, 0},
		{"100kb", -1, 0},
		{"100 MiB", -1, 0},
		{"-1", -1, 0},
		{"+1", -1, 0},
		{"1.5MiB", -1, 0},
		{"MiB", -1, 0},
		{"", -1, 0},
		{"18446744073709551615", 0, UINT64_MAX},
		{"18446744073709551616", -2, 0},
		{"17179869184GiB", -2, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint64_t v = 7;
		int rc = allow_size_parse(cases[i].in, strlen(cases[i].in), &v);
		if (rc != cases[i].rc)
			print_message("size %s\n", cases[i].in);
		assert_int_equal(rc, cases[i].rc);
		if (rc == 0)
			assert_true(v == cases[i].want);
	}
	char b[32];
	allow_size_format(100ull << 20, b, sizeof b);
	assert_string_equal(b, "100MiB");
	allow_size_format(1536, b, sizeof b);
	assert_string_equal(b, "1536B");
	allow_size_format(0, b, sizeof b);
	assert_string_equal(b, "0");
}

static void test_durations(void **state)
{
	(void)state;
	static const struct value_case cases[] = {
		{"0", 0, 0},
		{"0s", 0, 0},
		{"250ms", 0, 250},
		{"10s", 0, 10000},
		{"5m", 0, 300000},
		{"8h", 0, 28800000},
		{"30", -1, 0},   /* a bare number other than 0 has no unit to trust */
		{"5x", -1, 0},
		{"1h30m", -1, 0},
		{"5 s", -1, 0},
		{"5S", -1, 0},
		{"s", -1, 0},
		{"-5s", -1, 0},
		{"99999999999999999999h", -2, 0},
		{"9999999999999999h", -2, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint64_t v = 7;
		int rc = allow_duration_parse(cases[i].in, strlen(cases[i].in), &v);
		if (rc != cases[i].rc)
			print_message("duration %s\n", cases[i].in);
		assert_int_equal(rc, cases[i].rc);
		if (rc == 0)
			assert_true(v == cases[i].want);
	}
	char b[32];
	allow_duration_format(28800000, b, sizeof b);
	assert_string_equal(b, "8h");
	allow_duration_format(90000, b, sizeof b);
	assert_string_equal(b, "90s");
	allow_duration_format(1500, b, sizeof b);
	assert_string_equal(b, "1500ms");
}

static void test_addresses(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		uint16_t def;
		int ok;
		int family;
		uint16_t port;
	} cases[] = {
		{"127.0.0.1:3128", 0, 1, AF_INET, 3128},
		{"[::1]:3128", 0, 1, AF_INET6, 3128},
		{"192.0.2.1", 53, 1, AF_INET, 53},
		{"2001:db8::1", 53, 1, AF_INET6, 53},
		{"[2001:db8::1]", 53, 1, AF_INET6, 53},
		{"127.0.0.1", 0, 0, 0, 0},
		{"[::1]", 0, 0, 0, 0},
		{"::1", 0, 0, 0, 0},
		{"localhost:3128", 0, 0, 0, 0},
		{"127.0.0.1:0", 0, 1, AF_INET, 0},   /* a listener on an ephemeral port */
		{"[::1]:0", 0, 1, AF_INET6, 0},
		{"127.0.0.1:00", 0, 0, 0, 0},
		{"127.0.0.1:65536", 0, 0, 0, 0},
		{"127.0.0.1:03128", 0, 0, 0, 0},
		{"127.0.0.1:", 0, 0, 0, 0},
		{"127.1:3128", 0, 0, 0, 0},
		{"[127.0.0.1]:3128", 0, 0, 0, 0},
		{"[::1:3128", 0, 0, 0, 0},
		{"[::1]x", 0, 0, 0, 0},
		{"[fe80::1%eth0]:1", 0, 0, 0, 0},
		{"", 0, 0, 0, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = 0;
		char err[128] = "";
		int rc = allow_config_addr_parse(cases[i].in, cases[i].def, &ss, &sl, err, sizeof err);
		if ((rc == 0) != cases[i].ok)
			print_message("address %s: %s\n", cases[i].in, err);
		assert_int_equal(rc == 0, cases[i].ok);
		if (rc == -1) {
			assert_true(err[0] != '\0');
			continue;
		}
		assert_int_equal(ss.ss_family, cases[i].family);
		uint16_t port = cases[i].family == AF_INET
			? ntohs(((struct sockaddr_in *)&ss)->sin_port)
			: ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		assert_int_equal(port, cases[i].port);
	}
}

/* ---- errors ------------------------------------------------------------------------------ */

struct error_case {
	const char *yaml;
	const char *want; /* the one error line expected */
};

static const struct error_case error_cases[] = {
	/* unknown keys, at every level */
	{"zzz: 1\n",
		"t.yaml:1:1: zzz: unknown key (expected one of: listen, dns, limits, audit, tls, "
		"bounds, sessions, registries)"},
	/* registries: one host per known family */
	{"registries: {cargo: x.test}\n",
		"t.yaml:1:14: registries.cargo: unknown key (expected one of: brew, crates, docker, go, "
		"npm, packagist, pypi, rubygems)"},
	{"registries: {npm: \"*.x.test\"}\n",
		"t.yaml:1:19: registries.npm: \"*.x.test\" is not a host name: character not allowed in "
		"a host name (a registry is one host: no pattern, no port)"},
	{"registries: {pypi: [a.test]}\n",
		"t.yaml:1:20: registries.pypi: expected a host name, got a list"},
	{"registries: [npm]\n", "t.yaml:1:13: registries: expected a mapping, got a list"},
	{"listen: {proxi: [\"127.0.0.1:1\"]}\n",
		"t.yaml:1:10: listen.proxi: unknown key (expected one of: proxy, socks5, transparent, "
		"dns, dnsAnswers, control, metrics)"},
	{"listen: {dnsAnswers: fake}\n",
		"t.yaml:1:22: listen.dnsAnswers: \"fake\" is not a DNS answer mode (use real: the "
		"resolved addresses that pass the address policy, or mapped: an address from "
		"198.18.0.0/15 per name)"},
	{"listen: {dnsAnswers: [real]}\n",
		"t.yaml:1:22: listen.dnsAnswers: expected real or mapped, got a list"},
	{"listen: {dns: []}\n", "t.yaml:1:15: listen.dns: needs at least one address"},
	{"listen: {dns: \"127.0.0.1:53\"}\n",
		"t.yaml:1:15: listen.dns: expected a list, got \"127.0.0.1:53\""},
	{"listen:\n  dns: [\"127.0.0.1:53\", \"localhost:53\"]\n",
		"t.yaml:2:25: listen.dns[1]: \"localhost:53\" is not a valid address: expected an IP "
		"address (names are not accepted here)"},
	{"dns:\n  hostz: {}\n",
		"t.yaml:2:3: dns.hostz: unknown key (expected one of: servers, hosts, allowAddresses, "
		"denyAddresses, timeout)"},
	{"limits:\n  maxBytesOut: 1\n",
		"t.yaml:2:3: limits.maxBytesOut: unknown key (expected one of: maxClients, "
		"maxClientsPerSource, maxHeaderBytes, maxHeaders, headerTimeout, idleTimeout, connectTimeout, "
		"shutdownGrace)"},
	{"audit: {file: x}\n",
		"t.yaml:1:9: audit.file: unknown key (expected one of: path, chain, fsync)"},
	{"bounds:\n  b:\n    netwrok: {}\n",
		"t.yaml:3:5: bounds.b.netwrok: unknown key (expected one of: network)"},
	{"bounds:\n  b:\n    network: {allowdomains: []}\n",
		"t.yaml:3:15: bounds.b.network.allowdomains: unknown key (expected one of: "
		"allowDomains, domains, actions, enforce, inspect)"},
	{"sessions:\n  s:\n    limit: {}\n",
		"t.yaml:3:5: sessions.s.limit: unknown key (expected one of: bounds, bound, limits, "
		"auth, clients)"},
	{"sessions:\n  s:\n    limits: {maxConnection: 1}\n",
		"t.yaml:3:14: sessions.s.limits.maxConnection: unknown key (expected one of: "
		"maxConnections, maxConnectionsTotal, maxBytesOut, maxBytesIn, maxNewHostsPerMinute, "
		"expiresIn)"},
	{"sessions:\n  s:\n    auth: {password: x}\n",
		"t.yaml:3:12: sessions.s.auth.password: unknown key (expected one of: token, "
		"tokenFile)"},
	{"sessions:\n  s:\n    bound: {network: {enforce: sandbox}, dns: {}}\n",
		"t.yaml:3:42: sessions.s.bound.dns: unknown key (expected one of: network)"},

	/* duplicates */
	{"limits:\n  idleTimeout: 5m\n  maxClients: 1\n  idleTimeout: 6m\n",
		"t.yaml:4:3: limits.idleTimeout: duplicate key (first at 2:3)"},
	{"audit: {}\naudit: {}\n", "t.yaml:2:1: audit: duplicate key (first at 1:1)"},
	{"sessions:\n  s: {}\n  s: {}\n", "t.yaml:3:3: sessions.s: duplicate key (first at 2:3)"},
	{"bounds:\n  b: {}\n  b: {}\n", "t.yaml:3:3: bounds.b: duplicate key (first at 2:3)"},
	{"dns:\n  hosts:\n    a.test: [192.0.2.1]\n    A.Test.: [192.0.2.2]\n",
		"t.yaml:4:5: dns.hosts.A.Test.: duplicate key (first at 3:5)"},

	/* wrong types */
	{"dns: [a]\n", "t.yaml:1:6: dns: expected a mapping, got a list"},
	{"dns:\n", "t.yaml:1:5: dns: expected a mapping, got an empty value"},
	{"listen: {proxy: \"127.0.0.1:3128\"}\n",
		"t.yaml:1:17: listen.proxy: expected a list, got \"127.0.0.1:3128\""},
	{"listen: {metrics: {a: 1}}\n",
		"t.yaml:1:19: listen.metrics: expected an address, got a mapping"},
	{"limits: {maxClients: many}\n",
		"t.yaml:1:22: limits.maxClients: \"many\" is not a whole number"},
	{"limits: {maxClients: -5}\n",
		"t.yaml:1:22: limits.maxClients: \"-5\" is not a whole number"},
	{"limits: {maxHeaders: [1]}\n",
		"t.yaml:1:22: limits.maxHeaders: expected a whole number, got a list"},
	{"audit: {chain: yes}\n",
		"t.yaml:1:16: audit.chain: \"yes\" is not a boolean (use true or false)"},
	{"audit: {path: a.jsonl, fsync: 1}\n",
		"t.yaml:1:31: audit.fsync: \"1\" is not a boolean (use true or false)"},
	{"audit: {path: \"\"}\n", "t.yaml:1:15: audit.path: must not be empty"},
	{"audit: {path: \"a\\0b\"}\n", "t.yaml:1:15: audit.path: a value must not contain a NUL byte"},
	{"sessions: [a, b]\n",
		"t.yaml:1:11: sessions: expected a mapping of session names to sessions, got a list"},
	{"sessions:\n  s: [a]\n", "t.yaml:2:6: sessions.s: expected a mapping, got a list"},
	{"bounds:\n  b:\n    network: {actions: git:push}\n",
		"t.yaml:3:24: bounds.b.network.actions: expected a list, got \"git:push\""},
	{"sessions:\n  s: {bounds: [[x]]}\n",
		"t.yaml:2:16: sessions.s.bounds[0]: expected a bound name, got a list"},
	{"? [a]\n: 1\n", "t.yaml:1:3: a key must be a non-empty string"},

	/* sizes, durations, minimums */
	{"sessions:\n  default:\n    limits: {maxBytesOut: 100XB}\n",
		"t.yaml:3:27: sessions.default.limits.maxBytesOut: \"100XB\" is not a size (use B, KiB, "
		"MiB, GiB)"},
	{"limits: {idleTimeout: 30}\n",
		"t.yaml:1:23: limits.idleTimeout: \"30\" is not a duration (use ms, s, m or h, e.g. "
		"10s)"},
	{"limits: {headerTimeout: 0}\n", "t.yaml:1:25: limits.headerTimeout: must be at least 1ms"},
	{"limits: {maxClients: 0}\n", "t.yaml:1:22: limits.maxClients: must be at least 1"},
	{"limits: {maxHeaderBytes: 100}\n",
		"t.yaml:1:26: limits.maxHeaderBytes: must be at least 1KiB"},
	{"sessions:\n  s: {limits: {maxBytesIn: 99999999999GiB}}\n",
		"t.yaml:2:28: sessions.s.limits.maxBytesIn: \"99999999999GiB\" is too large"},
	{"dns: {timeout: 5x}\n",
		"t.yaml:1:16: dns.timeout: \"5x\" is not a duration (use ms, s, m or h, e.g. 10s)"},

	/* addresses */
	{"listen: {proxy: []}\n", "t.yaml:1:17: listen.proxy: needs at least one address"},
	{"listen: {proxy: [\"localhost:3128\"]}\n",
		"t.yaml:1:18: listen.proxy[0]: \"localhost:3128\" is not a valid address: expected an "
		"IP address (names are not accepted here)"},
	{"listen: {proxy: [\"127.0.0.1:3128\", \"127.0.0.1\"]}\n",
		"t.yaml:1:36: listen.proxy[1]: \"127.0.0.1\" is not a valid address: a port is required "
		"(HOST:PORT, IPv6 as [::1]:PORT)"},
	{"listen: {metrics: \"127.0.0.1:70000\"}\n",
		"t.yaml:1:19: listen.metrics: \"127.0.0.1:70000\" is not a valid address: the port must "
		"be 1-65535 (or 0 for an ephemeral port)"},
	{"dns: {servers: [\"192.0.2.1:0\"]}\n",
		"t.yaml:1:17: dns.servers[0]: \"192.0.2.1:0\" is not a valid address: the port must be "
		"1-65535"},
	{"listen: {control: \"127.0.0.1:9000\"}\n",
		"t.yaml:1:19: listen.control: \"127.0.0.1:9000\" must be unix:PATH (the control API "
		"listens only on a Unix socket)"},
	{"dns: {servers: [\"192.0.2.1:x\"]}\n",
		"t.yaml:1:17: dns.servers[0]: \"192.0.2.1:x\" is not a valid address: the port must be "
		"1-65535"},
	{"dns:\n  hosts: {192.0.2.1: [192.0.2.1]}\n",
		"t.yaml:2:11: dns.hosts.192.0.2.1: \"192.0.2.1\" is an address; dns.hosts maps names to "
		"addresses"},
	{"dns:\n  hosts: {a.test: [192.0.2.0/24]}\n",
		"t.yaml:2:20: dns.hosts.a.test[0]: \"192.0.2.0/24\" is not an IP address"},
	{"dns:\n  hosts: {a.test: []}\n", "t.yaml:2:19: dns.hosts.a.test: needs 1 to 16 addresses"},
	{"dns:\n  hosts: {a.test: 192.0.2.1}\n",
		"t.yaml:2:19: dns.hosts.a.test: expected a list, got \"192.0.2.1\""},

	/* bounds and sessions */
	{"bounds:\n  b:\n    network: {allowDomains: [a.test]}\n",
		"t.yaml:3:15: bounds.b.network.allowDomains: allowDomains needs enforce: sandbox in the "
		"same bound (egressd enforces only sandbox bounds)"},
	{"bounds:\n  b:\n    network: {allowDomains: [a.test], enforce: guard}\n",
		"t.yaml:3:15: bounds.b.network.allowDomains: allowDomains needs enforce: sandbox in the "
		"same bound (egressd enforces only sandbox bounds)"},
	{"bounds:\n  b:\n    network: {enforce: strict}\n",
		"t.yaml:3:24: bounds.b.network.enforce: \"strict\" is not an enforcement mode (use guard "
		"or sandbox)"},
	{"bounds:\n  b:\n    network: {actions: [git:pull]}\n",
		"t.yaml:3:25: bounds.b.network.actions[0]: \"git:pull\" is not an action (use all, read, "
		"write, dns, git:fetch, git:push, http:read, http:write, net:raw, ssh:read, ssh:write)"},
	{"bounds:\n  g: {}\nsessions:\n  s:\n    bounds: [g, gh]\n",
		"t.yaml:5:17: sessions.s.bounds[1]: unknown bound \"gh\" (defined under bounds: g)"},
	{"sessions:\n  s: {bounds: [gh]}\n",
		"t.yaml:2:16: sessions.s.bounds[0]: unknown bound \"gh\" (no bounds are defined)"},
	{"sessions:\n  \"a b\": {}\n",
		"t.yaml:2:3: sessions.a b: \"a b\" is not a valid session name (1-64 letters, digits, "
		"'-', '_' or '.')"},
	{"bounds:\n  \"x:y\": {}\n",
		"t.yaml:2:3: bounds.x:y: \"x:y\" is not a valid bound name (1-64 letters, digits, '-', "
		"'_' or '.')"},
	{"sessions:\n  s:\n    auth: {token: a, tokenFile: b}\n",
		"t.yaml:3:22: sessions.s.auth.tokenFile: give token or tokenFile, not both"},
	{"sessions:\n  s:\n    auth: {token: \"\"}\n",
		"t.yaml:3:19: sessions.s.auth.token: must not be empty"},

	/* tls */
	{"tls: {ca: {cert: ca.pem}}\n",
		"t.yaml:1:7: tls.ca: needs both cert and key (the CA certificate and its private key; "
		"egressd ca init DIR writes ca.pem and ca.key)"},
	{"tls:\n  ca: {key: ca.key}\n",
		"t.yaml:2:3: tls.ca: needs both cert and key (the CA certificate and its private key; "
		"egressd ca init DIR writes ca.pem and ca.key)"},
	{"tls: {ca: {cert: ca.pem, key: \"\"}}\n", "t.yaml:1:31: tls.ca.key: must not be empty"},
	{"tls: {ca: {cert: [a], key: b}}\n",
		"t.yaml:1:18: tls.ca.cert: expected a file path, got a list"},
	{"tls: {ca: x}\n", "t.yaml:1:11: tls.ca: expected a mapping, got \"x\""},
	{"tls: {ca: {cert: a, key: b, chain: c}}\n",
		"t.yaml:1:29: tls.ca.chain: unknown key (expected one of: cert, key)"},
	{"tls: {upstreamCA: [a]}\n",
		"t.yaml:1:19: tls.upstreamCA: expected system or a CA bundle file, got a list"},
	{"tls: {upstreamCA: ~}\n",
		"t.yaml:1:19: tls.upstreamCA: expected a file path, got an empty value"},
	{"tls: {cas: {}}\n", "t.yaml:1:7: tls.cas: unknown key (expected one of: ca, upstreamCA, refuseECH)"},
	{"tls: {refuseECH: yes}\n",
	        "t.yaml:1:18: tls.refuseECH: \"yes\" is not a boolean (use true or false)"},
	{"tls: []\n", "t.yaml:1:6: tls: expected a mapping, got a list"},

	/* the document itself */
	{"", "t.yaml: the config is empty (expected a mapping with some of: listen, dns, limits, "
	     "audit, tls, bounds, sessions)"},
	{"# nothing but a comment\n",
		"t.yaml: the config is empty (expected a mapping with some of: listen, dns, limits, "
		"audit, tls, bounds, sessions)"},
	{"---\n", "t.yaml: the config is empty (expected a mapping with some of: listen, dns, "
		  "limits, audit, tls, bounds, sessions)"},
	{"- a\n- b\n", "t.yaml:1:1: the top level must be a mapping (listen, dns, limits, audit, "
		       "tls, bounds, sessions), got a list"},
	{"hello\n", "t.yaml:1:1: the top level must be a mapping (listen, dns, limits, audit, "
		    "tls, bounds, sessions), got \"hello\""},
	{"audit: {}\n---\naudit: {}\n",
		"t.yaml:2:1: a second YAML document: a config is exactly one document"},
	{"bounds:\n  b: &x {}\n",
		"t.yaml:2:6: anchors (&x) are not supported: write each value out where it is used"},
	{"audit: !!map {}\n",
		"t.yaml:1:8: YAML tags (tag:yaml.org,2002:map) are not supported"},
	{"audit: {path: [a}\n",
		"t.yaml:1:17: syntax error: did not find expected ',' or ']' while parsing a flow "
		"sequence at 1:15"},
	{"bounds:\n  b:\n    network: {allowDomains: [*.a.test], enforce: sandbox}\n",
		"t.yaml:3:31: syntax error: did not find expected alphabetic or numeric character "
		"while scanning an alias at 3:30 (a value that starts with '*', such as a wildcard "
		"pattern, must be quoted)"},
	{"audit: {path: \"\xff\"}\n",
		"t.yaml:1:16: invalid leading UTF-8 octet (byte 0xff)"},
};

static void test_errors(void **state)
{
	(void)state;
	/* Every case runs before the test fails, so that one run shows every difference. */
	size_t failed = 0;
	for (size_t i = 0; i < sizeof error_cases / sizeof error_cases[0]; i++) {
		struct allow_errors e;
		struct allow_config *c = load(error_cases[i].yaml, &e);
		if (c != NULL || e.n != 1 || strcmp(e.lines[0], error_cases[i].want) != 0) {
			print_message("case %zu: %s\n  want: %s\n", i, error_cases[i].yaml,
				error_cases[i].want);
			dump(&e);
			failed++;
		}
		allow_config_free(c);
		allow_errors_free(&e);
	}
	assert_int_equal(failed, 0);
}

/* Errors whose reason comes from the pattern and CIDR modules: the line carries that module's
 * own reason at the item's position. */
static void test_module_reasons(void **state)
{
	(void)state;
	char why[256] = "";
	struct allow_set *set = allow_set_new(ALLOW_SET_ALLOW);
	assert_int_equal(allow_set_add(set, "*.com", why, sizeof why), -1);
	allow_set_free(set);
	char want[512];
	snprintf(want, sizeof want,
		"t.yaml:3:38: bounds.b.network.allowDomains[1]: \"*.com\" is not a valid pattern: %s",
		why);
	struct allow_errors e;
	struct allow_config *c = load(
		"bounds:\n  b:\n    network: {allowDomains: [a.test, \"*.com\"], enforce: sandbox}\n", &e);
	if (e.n != 1)
		dump(&e);
	assert_null(c);
	assert_int_equal(e.n, 1);
	assert_string_equal(e.lines[0], want);
	allow_errors_free(&e);

	struct allow_cidr cidr;
	assert_int_equal(allow_cidr_parse("10.0.0.1/8", 10, &cidr, why, sizeof why), -1);
	snprintf(want, sizeof want,
		"t.yaml:2:29: sessions.s.clients[1]: \"10.0.0.1/8\" is not an address or CIDR: %s", why);
	c = load("sessions:\n  s: {clients: [10.0.0.0/8, 10.0.0.1/8]}\n", &e);
	if (e.n != 1)
		dump(&e);
	assert_null(c);
	assert_int_equal(e.n, 1);
	assert_string_equal(e.lines[0], want);
	allow_errors_free(&e);
}

static void test_three_errors(void **state)
{
	(void)state;
	/* Independent errors are all reported, in file order, even when a later section was
	 * found first (sessions are resolved after the walk). */
	struct allow_errors e;
	struct allow_config *c = load(
		"sessions:\n"
		"  s:\n"
		"    bounds: [nope]\n"
		"dns:\n"
		"  hostz: {}\n"
		"limits:\n"
		"  maxClients: lots\n", &e);
	if (e.n != 3)
		dump(&e);
	assert_null(c);
	assert_int_equal(e.n, 3);
	assert_string_equal(e.lines[0],
		"t.yaml:3:14: sessions.s.bounds[0]: unknown bound \"nope\" (no bounds are defined)");
	assert_string_equal(e.lines[1],
		"t.yaml:5:3: dns.hostz: unknown key (expected one of: servers, hosts, allowAddresses, "
		"denyAddresses, timeout)");
	assert_string_equal(e.lines[2],
		"t.yaml:7:15: limits.maxClients: \"lots\" is not a whole number");
	allow_errors_free(&e);
}

static void test_many_errors_capped(void **state)
{
	(void)state;
	/* A pathological file does not produce an unbounded list. */
	size_t cap = 200 * 16 + 16;
	char *text = malloc(cap);
	assert_non_null(text);
	size_t o = 0;
	for (int i = 0; i < 200; i++)
		o += (size_t)snprintf(text + o, cap - o, "k%03d: 1\n", i);
	struct allow_errors e;
	struct allow_config *c = load(text, &e);
	assert_null(c);
	assert_int_equal(e.n, 101);
	assert_string_equal(e.lines[100], "t.yaml: too many errors, stopped after 100");
	allow_errors_free(&e);
	free(text);
}

static void test_user_bytes_escaped(void **state)
{
	(void)state;
	/* A key with a newline or escape byte in it cannot forge a second error line. */
	struct allow_errors e;
	struct allow_config *c = load("\"a\\nb\\e\": 1\n", &e);
	assert_null(c);
	assert_int_equal(e.n, 1);
	assert_null(strchr(e.lines[0], '\n'));
	assert_null(strchr(e.lines[0], '\033'));
	assert_string_equal(e.lines[0],
		"t.yaml:1:1: a\\x0ab\\x1b: unknown key (expected one of: listen, dns, limits, audit, "
		"tls, bounds, sessions, registries)");
	allow_errors_free(&e);
}

/* ---- tokenFile --------------------------------------------------------------------------- */

static void data_path(char *buf, size_t cap, const char *file)
{
	const char *src = getenv("EGRESSD_SOURCE_DIR");
	snprintf(buf, cap, "%s/tests/unit/data/config/%s", src ? src : ".", file);
}

static void test_token_file(void **state)
{
	(void)state;
	if (getenv("EGRESSD_SOURCE_DIR") == NULL)
		skip();
	char path[4096];
	data_path(path, sizeof path, "token-file.yaml");
	struct allow_errors e = {0};
	struct allow_config *c = allow_config_load(path, &e);
	if (c == NULL)
		dump(&e);
	assert_non_null(c);
	const struct allow_session_config *s = allow_config_session(c, "agent");
	assert_non_null(s);
	/* Relative to the config's folder, with the trailing newline dropped. */
	assert_string_equal(s->token, "s3cret-token");
	char *out = print_to_string(c);
	assert_null(strstr(out, "s3cret"));
	free(out);
	allow_config_free(c);

	/* The same text from a buffer whose name puts it in the data folder. */
	char text[256];
	snprintf(text, sizeof text, "sessions:\n  agent:\n    auth: {tokenFile: secrets/agent.token}\n");
	c = allow_config_load_buffer(path, text, strlen(text), &e);
	assert_non_null(c);
	assert_string_equal(c->sessions[0].token, "s3cret-token");
	allow_config_free(c);
	allow_errors_free(&e);
}

static void test_token_file_errors(void **state)
{
	(void)state;
	if (getenv("EGRESSD_SOURCE_DIR") == NULL)
		skip();
	char path[1024], dir[1024], want[3][4096];
	data_path(path, sizeof path, "token-file-bad.yaml");
	data_path(dir, sizeof dir, "secrets");
	snprintf(want[0], sizeof want[0],
		"%s:3:23: sessions.missing.auth.tokenFile: cannot use \"%s/missing.token\" as a token "
		"file: No such file or directory",
		path, dir);
	snprintf(want[1], sizeof want[1],
		"%s:5:23: sessions.empty.auth.tokenFile: cannot use \"%s/empty.token\" as a token "
		"file: the file is empty",
		path, dir);
	snprintf(want[2], sizeof want[2],
		"%s:7:23: sessions.twolines.auth.tokenFile: cannot use \"%s/two-lines.token\" as a "
		"token file: the token must be one line",
		path, dir);
	struct allow_errors e = {0};
	struct allow_config *c = allow_config_load(path, &e);
	assert_null(c);
	if (e.n != 3)
		dump(&e);
	assert_int_equal(e.n, 3);
	for (int i = 0; i < 3; i++)
		assert_string_equal(e.lines[i], want[i]);
	allow_errors_free(&e);
}

static void test_missing_file(void **state)
{
	(void)state;
	struct allow_errors e = {0};
	assert_null(allow_config_load("/nonexistent.invalid/egressd.yaml", &e));
	assert_int_equal(e.n, 1);
	assert_string_equal(e.lines[0], "/nonexistent.invalid/egressd.yaml: cannot read the config: "
					"No such file or directory");
	allow_errors_free(&e);
}

/* ---- session bodies (control API) ------------------------------------------------------- */

static void test_named_bounds_kept(void **state)
{
	(void)state;
	struct allow_config *c = load_ok(design_example);
	assert_int_equal(c->nbounds, 1);
	assert_string_equal(c->bounds[0].name, "github");
	assert_true(allow_set_has(c->bounds[0].bound.allow, "*.github.com"));
	assert_int_equal(c->bounds[0].bound.deny_actions, 0);
	allow_config_free(c);
}

static void test_session_body(void **state)
{
	(void)state;
	struct allow_config *c = load_ok(design_example);
	struct allow_errors e = {0};
	struct allow_session_config s;
	/* JSON, as the control API receives it; the named bound comes from the running config. */
	const char *body = "{\"bounds\": [\"github\"], \"bound\": {\"network\": {\"actions\": "
	                   "[\"git:push\"], \"domains\": [\"gist.github.com\"]}},\n"
	                   " \"limits\": {\"maxConnections\": 4, \"expiresIn\": \"1h\"},"
	                   " \"auth\": {\"token\": \"t0k\"}}";
	int rc = allow_config_session_load(c, "request", "agent-7", body, strlen(body), &s, &e);
	if (rc != 0)
		dump(&e);
	assert_int_equal(rc, 0);
	assert_int_equal(e.n, 0);
	assert_string_equal(s.name, "agent-7");
	assert_string_equal(s.token, "t0k");
	assert_true(allow_set_has(s.bound.allow, "github.com"));
	assert_true(allow_set_has(s.bound.deny, "gist.github.com"));
	assert_int_equal(s.bound.deny_actions, ALLOW_TAG_GIT_PUSH);
	assert_int_equal(s.bound.enforce, ALLOW_ENFORCE_SANDBOX);
	assert_int_equal(s.limits.max_connections, 4);
	assert_int_equal(s.limits.expires_in_ms, 3600000);
	allow_session_config_free(&s);
	assert_null(s.name);

	/* An empty body is a session with nothing restricted. */
	rc = allow_config_session_load(NULL, "request", "open", "", 0, &s, &e);
	assert_int_equal(rc, 0);
	assert_null(s.bound.allow);
	assert_true(s.limits.max_connections == ALLOW_UNLIMITED);
	allow_session_config_free(&s);
	allow_config_free(c);
	allow_errors_free(&e);
}

static void test_session_body_errors(void **state)
{
	(void)state;
	struct allow_config *c = load_ok(design_example);
	static const struct {
		const char *name;
		const char *body;
		const char *want[2];
	} cases[] = {
		{"s", "{\"limit\": {}}",
		        {"request:1:2: limit: unknown key (expected one of: bounds, bound, limits, "
		         "auth, clients)"}},
		{"s", "{\"bounds\": [\"gh\"]}",
		        {"request:1:13: bounds[0]: unknown bound \"gh\" (defined under bounds: "
		         "github)"}},
		{"s", "{\"auth\": {\"tokenFile\": \"/etc/shadow\"}}",
		        {"request:1:11: auth.tokenFile: not accepted in a request body (give token "
		         "instead)"}},
		{"s", "[1]",
		        {"request:1:1: a session must be a mapping (bounds, bound, limits, auth, "
		         "clients), got a list"}},
		{"s", "{\"limits\": {\"maxBytesOut\": \"1TB\"}, \"clients\": [\"10.0.0.1/8\"]}",
		        {"request:1:28: limits.maxBytesOut: \"1TB\" is not a size (use B, KiB, MiB, "
		         "GiB)",
		                "request:1:48: clients[0]: \"10.0.0.1/8\" is not an address or CIDR: "}},
		{"a:b", "{}",
		        {"request: \"a:b\" is not a valid session name (1-64 letters, digits, '-', '_' "
		         "or '.')"}},
	};
	size_t failed = 0;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct allow_errors e = {0};
		struct allow_session_config s;
		int rc = allow_config_session_load(
		        c, "request", cases[i].name, cases[i].body, strlen(cases[i].body), &s, &e);
		size_t want = cases[i].want[1] != NULL ? 2 : 1;
		int ok = rc == -1 && e.n == want;
		/* The second line's tail is the CIDR module's own reason: compare its start. */
		for (size_t j = 0; ok && j < want; j++)
			ok = j == 0 ? strcmp(e.lines[j], cases[i].want[j]) == 0
			            : strncmp(e.lines[j], cases[i].want[j], strlen(cases[i].want[j])) == 0;
		if (!ok) {
			print_message("body case %zu: %s\n  want: %s\n", i, cases[i].body,
			        cases[i].want[0]);
			dump(&e);
			failed++;
		}
		if (rc == 0)
			allow_session_config_free(&s);
		allow_errors_free(&e);
	}
	allow_config_free(c);
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_design_example),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_empty_allow_list),
		cmocka_unit_test(test_net_raw_action),
		cmocka_unit_test(test_registries),
		cmocka_unit_test(test_print),
		cmocka_unit_test(test_example_file),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_module_reasons),
		cmocka_unit_test(test_three_errors),
		cmocka_unit_test(test_many_errors_capped),
		cmocka_unit_test(test_user_bytes_escaped),
		cmocka_unit_test(test_tls),
		cmocka_unit_test(test_token_file),
		cmocka_unit_test(test_token_file_errors),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_named_bounds_kept),
		cmocka_unit_test(test_session_body),
		cmocka_unit_test(test_session_body_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
