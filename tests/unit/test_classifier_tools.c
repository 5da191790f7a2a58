/* The hosts and registries the tool rules report (issue 12): what the pre-run check tests
 * against allowDomains.  The tags themselves are in the case tables (netraw.tsv, tools.tsv, ...). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "allowlist/registry.h"
#include "allowlist/tags.h"
#include "classifier/classifier.h"

struct host_case {
	const char *line;
	const char *dests; /* "host:port host ..." as the result's dests, port 0 left out */
	unsigned registries;
};

static const struct host_case host_cases[] = {
        /* item 5: refspecs and other operands that are not repositories are not hosts */
        {"git push origin HEAD:main", "", 0},
        {"git push origin +HEAD:refs/heads/main feature:feature", "", 0},
        {"git fetch upstream main:main", "", 0},
        {"git push -u git@h.test:o/r.git HEAD:main", "h.test", 0},
        {"git push git@h.test:o/r.git", "h.test", 0},
        {"git clone -b main git@h.test:o/r.git dir", "h.test", 0},
        {"git clone --depth 1 https://h.test/o/r.git", "h.test", 0},
        {"git push --repo=ssh://g.test/r main", "g.test", 0},
        {"git pull h.test:r main:main", "h.test", 0},
        {"git request-pull v1.0 https://r.test/x main", "r.test", 0},
        {"git submodule add -b dev git@s.test:o/l.git vendor/l", "s.test", 0},
        {"git submodule update --init a:b", "", 0},
        {"git fetch origin https://u.test/r.git", "u.test", 0},
        /* raw network tools and /dev/tcp name a host and a port */
        {"nc h.test 8080", "h.test:8080", 0},
        {"nc -w 3 192.0.2.1 25", "192.0.2.1:25", 0},
        {"nc -l 9000", "", 0},
        {"exec 3<>/dev/tcp/h.test/80", "h.test:80", 0},
        {"cat </dev/udp/[2001:db8::1]/53", "2001:db8::1:53", 0},
        {"cat </dev/udp/2001:db8::1/53", "2001:db8::1:53", 0},
        {"echo > \"/dev/tcp/$H/80\"", "", 0},
        {"socat - TCP:h.test:443", "h.test:443", 0},
        {"socat - SOCKS4A:proxy.test:h.test:80", "proxy.test", 0},
        {"telnet h.test 2323", "h.test:2323", 0},
        {"openssl s_client -connect h.test:8443", "h.test:8443", 0},
        {"websocat wss://w.test:9443/x", "w.test:9443", 0},
        {"grpcurl -plaintext g.test:50051 list", "g.test:50051", 0},
        {"lftp ftp://f.test/pub", "f.test", 0},
        /* default registries, and what overrides them */
        {"npm install", "", ALLOW_REG_NPM},
        {"npm test", "", 0},
        {"npm_config_registry=https://m.test npm ci", "m.test", 0},
        {"npm install --registry=https://r.test:8443/", "r.test:8443", 0},
        {"export PIP_INDEX_URL=https://p.test/simple; pip install x", "p.test", 0},
        {"pip install --extra-index-url https://e.test/simple x", "e.test", ALLOW_REG_PYPI},
        {"pip install \"$PKG\" -i \"$IDX\"", "", 0},
        {"env UV_INDEX_URL=https://u.test/simple uv sync", "u.test", 0},
        {"GOPROXY=https://gp.test,direct go get x.test/m@v1", "gp.test x.test", 0},
        {"go mod download", "", ALLOW_REG_GO},
        {"docker pull ghcr.test/o/i", "ghcr.test", 0},
        {"docker pull alpine && podman push localhost:5000/x", "localhost:5000", ALLOW_REG_DOCKER},
        {"BUNDLE_MIRROR__ALL=https://g.test bundle install", "g.test", 0},
        {"cargo install --registry corp x", "", 0},
        {"cargo install --index sparse+https://ci.test/ x", "ci.test", 0},
        {"gem push x.gem --host https://gems.test", "gems.test", 0},
        {"twine upload -r internal dist/*", "", 0},
        {"brew install jq && composer install", "", ALLOW_REG_BREW | ALLOW_REG_PACKAGIST},
        {"helm repo add b https://charts.test/b", "charts.test", 0},
        {"aws s3 ls --endpoint-url https://s3.test:9000", "s3.test:9000", 0},
        {"kubectl --server https://k.test:6443 get pods", "k.test:6443", 0},
        {"npx cowsay", "", ALLOW_REG_NPM},
        {"uvx ruff check", "", ALLOW_REG_PYPI},
};

/* Formats the result's destinations as "host:port host ...". */
static void format_dests(const struct cls_result *r, char *buf, size_t cap)
{
	size_t p = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < r->ndests && p < cap; i++) {
		int k = r->dests[i].port
		                ? snprintf(buf + p, cap - p, "%s%s:%u", i ? " " : "", r->dests[i].host,
		                          (unsigned)r->dests[i].port)
		                : snprintf(buf + p, cap - p, "%s%s", i ? " " : "", r->dests[i].host);
		if (k < 0)
			break;
		p += (size_t)k;
	}
}

static void test_hosts(void **state)
{
	(void)state;
	size_t failed = 0;
	for (size_t i = 0; i < sizeof host_cases / sizeof host_cases[0]; i++) {
		const struct host_case *c = &host_cases[i];
		struct cls_result r;
		assert_int_equal(cls_classify(c->line, strlen(c->line), &r), 0);
		char got[512];
		format_dests(&r, got, sizeof got);
		if (strcmp(got, c->dests) != 0 || r.registries != c->registries) {
			printf("%s\n  hosts \"%s\" registries %#x, want \"%s\" %#x\n", c->line, got,
			        r.registries, c->dests, c->registries);
			failed++;
		}
		cls_result_free(&r);
	}
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_hosts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
