/* libFuzzer harness for the classifier.  Properties:
 *   1. no crash, leak or sanitizer report, whatever the bytes;
 *   2. the result is well formed (a refusal has a reason and no tags; names are sorted);
 *   3. never `none` for a line that bash -n rejects.
 * Property 3 spawns bash, which is slow, so it is checked only where it can fail: for inputs
 * that classified as `none` (a refusal or any tag already satisfies it) and are at most
 * BASH_CHECK_MAX bytes long.  Under libFuzzer only one such input in BASH_SAMPLE (by a hash of
 * its bytes, so a finding reproduces) spawns bash, which keeps the fuzzer fast; in replay mode
 * (tests/fuzz/replay.c, the seed corpus as a ctest test, or a whole fuzzing corpus replayed
 * after a run) every one does.  Set EGRESSD_FUZZ_NO_BASH=1 to skip property 3 altogether. */
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "classifier/classifier.h"

#define BASH_CHECK_MAX 256
#define BASH_SAMPLE 16

/* Set by libFuzzer's init hook; replay.c never calls it. */
static int under_libfuzzer;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	under_libfuzzer = 1;
	return 0;
}

/* FNV-1a, to pick the sampled inputs deterministically. */
static uint32_t hash_bytes(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

extern char **environ;

/* 1 when bash -n rejects data, 0 when it accepts or cannot be run.  The line goes to bash as
 * `-c` does (how an agent's command runs), not as a script file: a file ends a last line that
 * ends in a backslash as a continuation into nothing, `-c` keeps the backslash (fuzz finding).
 * data holds no NUL (the caller checks). */
static int bash_rejects(const uint8_t *data, size_t size)
{
	char *line = malloc(size + 1);
	if (line == NULL)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	char *argv[] = {"bash", "-n", "-c", "--", line, NULL}; /* -- : a line may start with - */
	pid_t pid;
	int rc = posix_spawn(&pid, "/bin/bash", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	int st = 0;
	if (rc == 0)
		while (waitpid(pid, &st, 0) == -1)
			;
	free(line);
	return rc == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void check_sorted(char **v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (strcmp(v[i - 1], v[i]) >= 0)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cls_result r;
	int rc = cls_classify((const char *)data, size, &r);
	if (rc == -1) {
		if (!r.refused || r.reason[0] == '\0' || r.tags != 0 || r.nprograms != 0)
			abort();
	} else {
		if (r.refused)
			abort();
		check_sorted(r.programs, r.nprograms);
		check_sorted(r.hosts, r.nhosts);
		if (r.tags == 0 && size <= BASH_CHECK_MAX && memchr(data, '\0', size) == NULL &&
		        getenv("EGRESSD_FUZZ_NO_BASH") == NULL &&
		        (!under_libfuzzer || hash_bytes(data, size) % BASH_SAMPLE == 0) &&
		        bash_rejects(data, size)) {
			fprintf(stderr, "bash -n rejects this line but it classified as none\n");
			abort();
		}
	}
	cls_result_free(&r);
	return 0;
}
