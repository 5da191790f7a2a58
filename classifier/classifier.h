/* The command classifier (docs/design.md 10): which network actions a shell command line performs.
 *
 * No global state: safe to call from the proxy's loop and from several threads at once. */
#ifndef EGRESSD_CLASSIFIER_CLASSIFIER_H
#define EGRESSD_CLASSIFIER_CLASSIFIER_H

#include <stddef.h>

#include "allowlist/host.h"
#include "allowlist/registry.h"

#define CLS_MAX_INPUT 65536
#define CLS_MAX_DEPTH 32
#define CLS_MAX_COMMANDS 4096

struct cls_result {
	int refused;      /* 1: the line was refused (fail closed) */
	char reason[256]; /* when refused: why, naming the construct */
	size_t offset;    /* when refused: the byte offset where it was found */
	unsigned tags;    /* leaf tags (allowlist/tags.h) */
	char **programs;  /* distinct program basenames seen, sorted */
	size_t nprograms;
	char **hosts; /* canonical hosts named literally by tagged commands, sorted */
	size_t nhosts;
	struct allow_dest *dests; /* the same hosts with the port the line named (0: none), sorted
	                             by host then port; what a decision checks */
	size_t ndests;
	unsigned registries; /* ALLOW_REG_* bits (allowlist/registry.h): the default registries of
	                        package tools that the line reaches without naming their host */
};

/* Classifies line[0..len).  Returns 0 when classified, -1 when refused (result->refused set,
 * reason and offset filled).  Free the result with cls_result_free either way. */
int cls_classify(const char *line, size_t len, struct cls_result *result);

void cls_result_free(struct cls_result *result);

/* `egressd classify ...` (argv[0] is "classify"): prints the answer, returns the exit status
 * (0 allow, 1 deny, 2 refused or usage error). */
int cls_cli_main(int argc, char **argv);

#endif
