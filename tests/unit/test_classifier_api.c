/* The classifier's library interface: programs, hosts and ports in the result, refusal reasons
 * and offsets, and the limits (input size, NUL, nesting, command count). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "allowlist/tags.h"
#include "classifier/classifier.h"

static int classify(const char *line, struct cls_result *r)
{
	return cls_classify(line, strlen(line), r);
}

static void assert_names(char **v, size_t n, const char *joined)
{
	char buf[512] = "";
	size_t p = 0;
	for (size_t i = 0; i < n; i++)
		p += (size_t)snprintf(buf + p, sizeof buf - p, "%s%s", i ? "," : "", v[i]);
	assert_string_equal(buf, joined);
}

static void test_programs_sorted_distinct(void **state)
{
	(void)state;
	struct cls_result r;
	assert_int_equal(classify("sudo git push; /usr/bin/git fetch | xargs curl", &r), 0);
	assert_names(r.programs, r.nprograms, "curl,git,sudo,xargs");
	/* what git prints becomes curl's arguments: options, maybe (issue 12), or URLs of any
	 * scheme curl speaks (ssh for scp://, net:raw for ftp://) */
	assert_int_equal(r.tags, ALLOW_TAG_GIT_FETCH | ALLOW_TAG_GIT_PUSH | ALLOW_TAG_HTTP_READ |
	                                 ALLOW_TAG_HTTP_WRITE | ALLOW_TAG_SSH_READ |
	                                 ALLOW_TAG_SSH_WRITE | ALLOW_TAG_NET_RAW);
	cls_result_free(&r);
	cls_result_free(&r); /* freeing twice is harmless */
}

static void test_hosts(void **state)
{
	(void)state;
	struct cls_result r;
	assert_int_equal(
	        classify("git clone https://GitHub.COM./o/r.git && ssh deploy@h1.test && "
	                 "scp f u@h2.test:/x && rsync -a . h3.test::m && dig h4.test && "
	                 "curl -sS https://u:p@h5.test:8443/x && wget http://[2001:db8::1]/ && "
	                 "git push git@h6.test:o/r.git && http h7.test/x",
	                &r),
	        0);
	assert_names(r.hosts, r.nhosts,
	        "2001:db8::1,github.com,h1.test,h2.test,h3.test,h4.test,h5.test,h6.test,h7.test");
	for (size_t i = 0; i < r.ndests; i++)
		if (strcmp(r.dests[i].host, "h5.test") == 0)
			assert_int_equal(r.dests[i].port, 8443);
		else
			assert_int_equal(r.dests[i].port, 0);
	cls_result_free(&r);

	/* only tagged commands name destinations, and only literal ones */
	assert_int_equal(classify("echo https://a.test; curl https://$H/x; ssh \"$H\"; "
	                          "curl file:///etc/passwd",
	                         &r),
	        0);
	assert_int_equal(r.nhosts, 0);
	cls_result_free(&r);

	/* one host on two ports: one name, two destinations */
	assert_int_equal(classify("curl https://a.test/ https://a.test:444/", &r), 0);
	assert_int_equal(r.nhosts, 1);
	assert_int_equal(r.ndests, 2);
	cls_result_free(&r);
}

static void expect_refusal(const char *line, size_t len, size_t offset, const char *words)
{
	struct cls_result r;
	assert_int_equal(cls_classify(line, len, &r), -1);
	assert_true(r.refused);
	if (strstr(r.reason, words) == NULL)
		fail_msg("reason `%s' lacks `%s'", r.reason, words);
	assert_int_equal(r.offset, offset);
	assert_int_equal(r.tags, 0);
	assert_null(r.programs);
	cls_result_free(&r);
}

static void test_refusal_offsets(void **state)
{
	(void)state;
	expect_refusal("git push; eval \"$X\"", 19, 15, "not static");
	expect_refusal("echo hi; c*rl x", 15, 9, "command word");
	expect_refusal("cat <<EOF", 9, 4, "here-document");
	expect_refusal("echo 'abc", 9, 5, "single quote");
	expect_refusal("ls &&", 5, 5, "end of input");
	expect_refusal("bash -c \"$(cat x)\"", 18, 8, "not static");
	/* a download run as a program has its own reason (issue 12) */
	expect_refusal("bash -c \"$(curl x)\"", 19, 8, "download-to-shell");
	expect_refusal("curl -s x | sudo sh -s", 22, 17, "download-to-shell");
	expect_refusal("$(wget -qO- x)", 14, 0, "download-to-shell");
	expect_refusal("bash <(curl -s x)", 17, 5, "download-to-shell");
	expect_refusal("source <(wget -qO- x)", 21, 7, "download-to-shell");
	expect_refusal("eval \"$(http x)\"", 16, 5, "download-to-shell");
	expect_refusal("curl x | python3", 16, 9, "download-to-shell");
	expect_refusal("bash < <(curl x)", 16, 0, "download-to-shell");
	/* the same shapes without a download are refused as not static */
	expect_refusal("cat f | sh", 10, 8, "not static");
	expect_refusal("bash <(cat f)", 13, 5, "not static");
	expect_refusal("echo `ls", 8, 5, "backtick");
	expect_refusal("(ls", 3, 3, "end of input");
}

static void test_limits(void **state)
{
	(void)state;
	struct cls_result r;
	/* input size */
	char *big = malloc(CLS_MAX_INPUT + 2);
	assert_non_null(big);
	memset(big, ' ', CLS_MAX_INPUT + 1);
	memcpy(big, "git push", 8);
	assert_int_equal(cls_classify(big, CLS_MAX_INPUT, &r), 0);
	assert_int_equal(r.tags, ALLOW_TAG_GIT_PUSH);
	cls_result_free(&r);
	expect_refusal(big, CLS_MAX_INPUT + 1, CLS_MAX_INPUT, "over");
	free(big);

	/* NUL */
	expect_refusal("git push\0; curl x", 17, 8, "NUL");

	/* command count: 4096 are fine, 4097 are not */
	size_t n = 4097, len = n * 2;
	char *many = malloc(len + 1);
	assert_non_null(many);
	for (size_t i = 0; i < n; i++)
		memcpy(many + 2 * i, ":;", 2);
	assert_int_equal(cls_classify(many, (n - 1) * 2, &r), 0);
	cls_result_free(&r);
	assert_int_equal(cls_classify(many, len, &r), -1);
	assert_non_null(strstr(r.reason, "simple commands"));
	cls_result_free(&r);
	free(many);

	/* nesting: 32 levels are fine, 33 are not, whatever mix of constructs */
	char line[1024];
	size_t p = 0;
	for (int i = 0; i < 32; i++)
		p += (size_t)snprintf(line + p, sizeof line - p, "echo $(");
	p += (size_t)snprintf(line + p, sizeof line - p, "git push");
	for (int i = 0; i < 32; i++)
		line[p++] = ')';
	line[p] = '\0';
	assert_int_equal(classify(line, &r), 0);
	assert_int_equal(r.tags, ALLOW_TAG_GIT_PUSH);
	cls_result_free(&r);
	/* shells and wrappers count too: 5 levels of them, then 29 subshells */
	p = (size_t)snprintf(line, sizeof line, "bash -c 'sudo env nice bash -c \"");
	for (int i = 0; i < 29; i++)
		p += (size_t)snprintf(line + p, sizeof line - p, "( ");
	p += (size_t)snprintf(line + p, sizeof line - p, "git push");
	for (int i = 0; i < 29; i++)
		p += (size_t)snprintf(line + p, sizeof line - p, " )");
	snprintf(line + p, sizeof line - p, "\"'");
	assert_int_equal(classify(line, &r), -1);
	assert_non_null(strstr(r.reason, "nesting"));
	cls_result_free(&r);
	p = (size_t)snprintf(line, sizeof line, "bash -c 'sudo env nice bash -c \"");
	for (int i = 0; i < 27; i++)
		p += (size_t)snprintf(line + p, sizeof line - p, "( ");
	p += (size_t)snprintf(line + p, sizeof line - p, "git push");
	for (int i = 0; i < 27; i++)
		p += (size_t)snprintf(line + p, sizeof line - p, " )");
	snprintf(line + p, sizeof line - p, "\"'");
	assert_int_equal(classify(line, &r), 0);
	assert_int_equal(r.tags, ALLOW_TAG_GIT_PUSH);
	cls_result_free(&r);
}

static void test_empty_and_whitespace(void **state)
{
	(void)state;
	struct cls_result r;
	assert_int_equal(cls_classify("", 0, &r), 0);
	assert_int_equal(r.tags, 0);
	assert_int_equal(r.nprograms, 0);
	cls_result_free(&r);
	assert_int_equal(classify(" \n\t\n", &r), 0);
	assert_int_equal(r.tags, 0);
	cls_result_free(&r);
}

/* A long line with many tagged commands: the arena grows beyond its first chunk. */
static void test_large_line(void **state)
{
	(void)state;
	size_t n = 2000;
	char *s = malloc(n * 32 + 1);
	assert_non_null(s);
	size_t p = 0;
	for (size_t i = 0; i < n; i++)
		p += (size_t)snprintf(s + p, 32, "curl https://h%zu.test;", i % 50);
	struct cls_result r;
	assert_int_equal(cls_classify(s, p, &r), 0);
	assert_int_equal(r.tags, ALLOW_TAG_HTTP_READ);
	assert_int_equal(r.nhosts, 50);
	cls_result_free(&r);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_programs_sorted_distinct),
	        cmocka_unit_test(test_hosts),
	        cmocka_unit_test(test_refusal_offsets),
	        cmocka_unit_test(test_limits),
	        cmocka_unit_test(test_empty_and_whitespace),
	        cmocka_unit_test(test_large_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
