/* `egressd audit verify FILE` (docs/audit.md): the hash chain, seq and the shape of every line.
 *
 * The file is untrusted input (an agent may have written it): every line is read whole with
 * getline, checked by the JSON reader of json.c (bounded nesting, no allocation) and hashed; the
 * result is one sentence naming the first broken line. */
#include "audit/audit.h"
#include "audit/internal.h"
#include "audit/json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether p[0..n) is 64 lower-case hex digits. */
static int is_hex64(const char *p, size_t n)
{
	if (n != AUDIT_SHA256_HEX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return 0;
	return 1;
}

/* One line against the one before it: 0 intact, 1 broken (err says why). */
static int check_line(const struct audit_json_top *top, unsigned long lineno, uint64_t prevseq,
        const char *prevhash, char *err, size_t errlen)
{
	if (top->prev != NULL && !is_hex64(top->prev, top->prevlen)) {
		snprintf(err, errlen, "line %lu: prev is not a SHA-256 hex digest", lineno);
		return 1;
	}
	if (!top->has_seq || top->seq == 0) {
		snprintf(err, errlen, "line %lu: no seq (every record has one, from 1)", lineno);
		return 1;
	}
	if (lineno == 1)
		return 0;
	/* The first line's prev names a line in an earlier (rotated) file: it cannot be checked
	 * here.  Every later line must name the line before it. */
	if (top->prev == NULL) {
		snprintf(err, errlen, "line %lu: no prev (the log is not chained)", lineno);
		return 1;
	}
	if (memcmp(top->prev, prevhash, AUDIT_SHA256_HEX) != 0) {
		snprintf(err, errlen,
		        "line %lu: prev does not match line %lu (a line was changed, inserted or "
		        "removed)",
		        lineno, lineno - 1);
		return 1;
	}
	/* seq counts the records of one process: it goes up by one, or starts again at 1 in a
	 * new process.  A refused or dropped record takes no seq, so a gap is a record that was
	 * written and then removed, or a writer that lost one. */
	if (top->seq != prevseq + 1 && top->seq != 1) {
		snprintf(err, errlen,
		        "line %lu: seq %llu does not follow seq %llu of line %lu (a record is "
		        "missing)",
		        lineno, (unsigned long long)top->seq, (unsigned long long)prevseq,
		        lineno - 1);
		return 1;
	}
	return 0;
}

int audit_verify_stream(FILE *fp, const char *name, char *err, size_t errlen)
{
	char scratch[8];
	if (err == NULL || errlen == 0) {
		err = scratch;
		errlen = sizeof scratch;
	}
	EVP_MD *md = EVP_MD_fetch(NULL, "SHA256", NULL);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	char *line = NULL;
	size_t cap = 0;
	char prevhash[AUDIT_SHA256_HEX + 1] = "";
	uint64_t prevseq = 0;
	unsigned long lineno = 0;
	int rc = 0;
	if (md == NULL || ctx == NULL) {
		audit_set_err(err, errlen, "cannot set up SHA-256 to verify", name, 0);
		rc = -1;
		goto out;
	}
	for (;;) {
		errno = 0;
		ssize_t n = getline(&line, &cap, fp);
		if (n == -1) {
			if (ferror(fp)) {
				audit_set_err(err, errlen, "cannot read", name, errno);
				rc = -1;
			}
			break;
		}
		lineno++;
		size_t len = (size_t)n;
		if (line[len - 1] != '\n') {
			snprintf(err, errlen, "line %lu: no newline at the end (a cut write)",
			        lineno);
			rc = 1;
			break;
		}
		len--;
		struct audit_json_top top;
		const char *why;
		if (audit_json_read_top(line, len, &top, &why) == -1) {
			snprintf(err, errlen, "line %lu: not a valid record: %s", lineno, why);
			rc = 1;
			break;
		}
		if ((rc = check_line(&top, lineno, prevseq, prevhash, err, errlen)) != 0)
			break;
		prevseq = top.seq;
		if (audit_sha256_hex(ctx, md, line, len, prevhash) == -1) {
			audit_set_err(err, errlen, "SHA-256 failed verifying", name, 0);
			rc = -1;
			break;
		}
	}
out:
	free(line);
	EVP_MD_CTX_free(ctx);
	EVP_MD_free(md);
	if (rc == 0)
		snprintf(err, errlen, "%lu lines, chain intact", lineno);
	return rc;
}

int audit_verify(const char *path, char *err, size_t errlen)
{
	FILE *fp = fopen(path, "re");
	if (fp == NULL) {
		audit_set_err(err, errlen, "cannot open", path, errno);
		return -1;
	}
	int rc = audit_verify_stream(fp, path, err, errlen);
	fclose(fp);
	return rc;
}
