/* The classifier's case table: every line of tests/unit/data/classifier/ (public.tsv, cases.tsv)
 * (the public sample and the project's own cases) must classify as its expected column says.
 *
 * File format (the public sample's): LINE<TAB>EXPECTED<TAB>NOTE, where in LINE the character
 * U+2424 stands for a newline and U+2409 for a tab; EXPECTED is sorted comma-joined leaf tags,
 * `none`, or `deny` (the whole line refused). */
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

static void check_file(const char *name, size_t min_cases)
{
	struct case_table t = {0};
	assert_int_equal(cases_load(name, &t), 0);
	assert_true(t.n >= min_cases);
	size_t failed = 0;
	for (size_t i = 0; i < t.n; i++) {
		const struct case_entry *e = &t.v[i];
		struct cls_result r;
		int rc = cls_classify(e->line, e->len, &r);
		char got[160];
		if (rc == -1)
			snprintf(got, sizeof got, "deny");
		else
			allow_tags_format(r.tags, ",", got, sizeof got);
		if (strcmp(got, e->expect) != 0) {
			printf("%s:%zu: %s\n  expected %s, got %s%s%s\n", name, e->lineno, e->raw,
			        e->expect, got, rc == -1 ? ": " : "", rc == -1 ? r.reason : "");
			failed++;
		}
		/* refusals carry a reason and an offset inside the line */
		if (rc == -1) {
			assert_true(r.refused);
			assert_true(r.reason[0] != '\0');
			assert_true(r.offset <= e->len || e->len > CLS_MAX_INPUT);
		}
		cls_result_free(&r);
	}
	printf("%s: %zu cases, %zu failed\n", name, t.n, failed);
	cases_free(&t);
	assert_int_equal(failed, 0);
}

static void test_public(void **state)
{
	(void)state;
	check_file("public.tsv", 150);
}

static void test_own(void **state)
{
	(void)state;
	check_file("cases.tsv", 150);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_public),
	        cmocka_unit_test(test_own),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
