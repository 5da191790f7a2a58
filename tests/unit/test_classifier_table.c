/* The classifier's case tables: every line of every tests/unit/data/classifier/NAME.tsv must
 * classify as its expected column says.
 *
 * File format (the public sample's): LINE<TAB>EXPECTED<TAB>NOTE, where in LINE the character
 * U+2424 stands for a newline and U+2409 for a tab; EXPECTED is sorted comma-joined leaf tags,
 * `none`, or `deny` (the whole line refused).
 *
 * public.tsv is the public sample as published (../shared/corpus/classifier-public.tsv), kept
 * byte for byte.  Where the contract has since changed an answer (DESIGN.md 10: interpreter
 * one-liners that open connections are net:raw, a download piped into a shell is refused),
 * public-departures.tsv holds the line with the answer the project gives now and why; each of
 * its lines must be a line of public.tsv whose published answer differs. */
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

#include "classifier_cases.h"

/* Checks one case against the classifier; 0 when it passes. */
static int check_case(const char *name, const struct case_entry *e, const char *expect)
{
	struct cls_result r;
	int rc = cls_classify(e->line, e->len, &r);
	char got[160];
	if (rc == -1)
		snprintf(got, sizeof got, "deny");
	else
		allow_tags_format(r.tags, ",", got, sizeof got);
	int bad = strcmp(got, expect) != 0;
	if (bad)
		printf("%s:%zu: %s\n  expected %s, got %s%s%s\n", name, e->lineno, e->raw, expect,
		        got, rc == -1 ? ": " : "", rc == -1 ? r.reason : "");
	/* refusals carry a reason and an offset inside the line */
	if (rc == -1) {
		assert_true(r.refused);
		assert_true(r.reason[0] != '\0');
		assert_true(r.offset <= e->len || e->len > CLS_MAX_INPUT);
	}
	cls_result_free(&r);
	return bad;
}

static size_t check_file(const char *name, size_t min_cases)
{
	struct case_table t = {0};
	assert_int_equal(cases_load(name, &t), 0);
	assert_true(t.n >= min_cases);
	size_t failed = 0, n = t.n;
	for (size_t i = 0; i < t.n; i++)
		failed += (size_t)check_case(name, &t.v[i], t.v[i].expect);
	printf("%s: %zu cases, %zu failed\n", name, t.n, failed);
	cases_free(&t);
	assert_int_equal(failed, 0);
	return n;
}

static void test_public(void **state)
{
	(void)state;
	struct case_table pub = {0}, dep = {0};
	assert_int_equal(cases_load("public.tsv", &pub), 0);
	assert_int_equal(cases_load("public-departures.tsv", &dep), 0);
	assert_true(pub.n >= 150);
	size_t failed = 0, departed = 0;
	for (size_t i = 0; i < pub.n; i++) {
		const char *expect = pub.v[i].expect;
		for (size_t k = 0; k < dep.n; k++)
			if (strcmp(dep.v[k].raw, pub.v[i].raw) == 0) {
				/* a departure changes the published answer, or it is not one */
				assert_string_not_equal(dep.v[k].expect, pub.v[i].expect);
				expect = dep.v[k].expect;
				departed++;
			}
		failed += (size_t)check_case("public.tsv", &pub.v[i], expect);
	}
	printf("public.tsv: %zu cases (%zu with the answer of public-departures.tsv), %zu "
	       "failed\n",
	        pub.n, departed, failed);
	/* every departure names a line of the sample */
	assert_int_equal(departed, dep.n);
	cases_free(&pub);
	cases_free(&dep);
	assert_int_equal(failed, 0);
}

/* Every other table in the folder: the project's own cases, by area. */
static void test_own(void **state)
{
	(void)state;
	size_t n = 0, total = 0;
	char **names = cases_list(&n);
	assert_non_null(names);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(names[i], "public.tsv") != 0 &&
		        strcmp(names[i], "public-departures.tsv") != 0)
			total += check_file(names[i], 1);
		free(names[i]);
	}
	free(names);
	printf("own tables: %zu cases\n", total);
	assert_true(total >= 377);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_public),
	        cmocka_unit_test(test_own),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
