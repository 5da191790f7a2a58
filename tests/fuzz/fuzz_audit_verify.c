/* audit_verify_stream on arbitrary bytes: `egressd audit verify FILE` reads a file an agent may
 * have written.  Besides memory safety it checks what a reader of its answer relies on: the
 * result is intact (0) or broken (1), never unreadable, for bytes in memory; the message is one
 * NUL-terminated line; "intact" counts every line and means every line ended in a newline; and
 * an intact log stays intact when cut after any of its lines (verify never needs a later line to
 * accept an earlier one). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Verifies data[0..size) as a file; aborts on an answer verify may not give. */
static int verify(const uint8_t *data, size_t size, char *err, size_t errlen)
{
	/* fmemopen needs a non-empty buffer it may treat as writable. */
	char *copy = malloc(size + 1);
	if (copy == NULL)
		return -2;
	memcpy(copy, data, size);
	copy[size] = '\0';
	FILE *fp = size > 0 ? fmemopen(copy, size, "r") : fopen("/dev/null", "r");
	if (fp == NULL) {
		free(copy);
		return -2;
	}
	memset(err, 'x', errlen);
	int rc = audit_verify_stream(fp, "fuzz", err, errlen);
	fclose(fp);
	free(copy);
	if (rc != 0 && rc != 1)
		abort();
	if (memchr(err, '\0', errlen) == NULL || err[0] == '\0' || strchr(err, '\n') != NULL)
		abort();
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	int rc = verify(data, size, err, sizeof err);
	if (rc == -2)
		return 0;
	size_t lines = 0, last_nl = 0, first_nl = 0;
	for (size_t i = 0; i < size; i++) {
		if (data[i] == '\n') {
			lines++;
			last_nl = i + 1;
			if (first_nl == 0)
				first_nl = i + 1;
		}
	}
	if (rc == 1) {
		if (strncmp(err, "line ", 5) != 0)
			abort();
		return 0;
	}
	/* Intact: every line whole, and the count in the message is the number of lines. */
	if (size > 0 && data[size - 1] != '\n')
		abort();
	char want[64];
	snprintf(want, sizeof want, "%zu lines, chain intact", lines);
	if (strcmp(err, want) != 0)
		abort();
	/* A prefix of whole lines of an intact log is intact. */
	if (lines >= 2) {
		size_t cut = last_nl - 1;
		while (cut > 0 && data[cut - 1] != '\n')
			cut--;
		if (verify(data, cut, err, sizeof err) != 0 ||
		        verify(data, first_nl, err, sizeof err) != 0)
			abort();
	}
	return 0;
}
