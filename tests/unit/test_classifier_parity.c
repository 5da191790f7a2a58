/* Syntax parity with bash: every line that `bash -n` rejects must be refused by the classifier.
 * The lines are every case table (tests/unit/data/classifier/NAME.tsv) plus a list of syntax
 * errors below; bash reads each from a file (so -c quoting plays no part).  Skipped when
 * /bin/bash is absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "classifier/classifier.h"

#include "classifier_cases.h"

extern char **environ;

/* Lines bash rejects, beyond those in the tables. */
static const char *const syntax_errors[] = {
        "if",
        "fi",
        "then",
        "done",
        "esac",
        "do x",
        ")",
        "|",
        "&&",
        ";;",
        "a |",
        "a ||",
        "a &&",
        "case",
        "case x",
        "case x in",
        "for",
        "for x in",
        "while",
        "while true",
        "{",
        "}",
        "((",
        "$(",
        "`",
        "\"",
        "'",
        "${",
        "<",
        ">",
        "a >",
        "a <<<",
        "function",
        "f() {",
        "[[",
        "[[ a",
        "select",
        "a & &",
        "a;;",
        "(a",
        "a)",
        "echo $((",
        "echo ${a",
        "else",
        "elif x",
        "a | | b",
        "a ; ; b",
        "if true then fi",
        "for x in a b do echo; done",
        "case x in a) ;; esacx",
        "echo $(( ",
        "echo $(echo",
        "echo \"$(echo \")",
        "x=(a b",
        "f() (",
        "{ a; } }",
        "echo <(",
        "cat <(ls",
        "a 2>",
        "a <& ",
        "coproc",
        "time |",
        "! |",
        "a |& |",
        "{ a }",
        "if a; then b; else fi",
        "while a; do done",
        "until a; do; done",
        "case a in (b) c; esac x",
        "[[ a ]] b",
        "(( 1 )) b",
        "f() { a; } b",
        "echo a$(b",
        "echo `a",
        "echo \"a`b\"",
        NULL,
};

/* 1 when bash -n rejects line, 0 when it accepts, -1 when it could not be run.  The line goes
 * to bash as `-c` does, as an agent's command runs (a script file would read a final backslash
 * as a continuation). */
static int bash_rejects(const char *line, size_t len)
{
	char *text = malloc(len + 1);
	if (text == NULL)
		return -1;
	memcpy(text, line, len);
	text[len] = '\0';
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	char *argv[] = {"bash", "-n", "-c", "--", text, NULL}; /* -- : a line may start with - */
	pid_t pid;
	int rc = posix_spawn(&pid, "/bin/bash", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	free(text);
	if (rc != 0)
		return -1;
	int st;
	while (waitpid(pid, &st, 0) == -1)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

static size_t rejected, failures;

static void check_line(const char *line, size_t len, const char *what)
{
	int b = bash_rejects(line, len);
	assert_int_not_equal(b, -1);
	if (b == 0)
		return;
	rejected++;
	struct cls_result r;
	if (cls_classify(line, len, &r) == 0) {
		printf("bash -n rejects but the classifier accepts (%s): %s\n", what, line);
		failures++;
	}
	cls_result_free(&r);
}

static void check_table(const char *name)
{
	struct case_table t;
	assert_int_equal(cases_load(name, &t), 0);
	for (size_t i = 0; i < t.n; i++)
		check_line(t.v[i].line, t.v[i].len, name);
	cases_free(&t);
}

static void test_parity(void **state)
{
	(void)state;
	if (access("/bin/bash", X_OK) != 0)
		skip();
	rejected = failures = 0;
	size_t ntables = 0;
	char **tables = cases_list(&ntables);
	assert_non_null(tables);
	for (size_t i = 0; i < ntables; i++) {
		check_table(tables[i]);
		free(tables[i]);
	}
	free(tables);
	for (size_t i = 0; syntax_errors[i] != NULL; i++)
		check_line(syntax_errors[i], strlen(syntax_errors[i]), "syntax list");
	printf("bash -n rejected %zu lines; the classifier accepted %zu of them\n", rejected,
	        failures);
	/* the list above is all syntax errors, so parity was really exercised */
	assert_true(rejected >= 60);
	assert_int_equal(failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_parity),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
