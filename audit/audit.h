/* The audit log (docs/design.md 7): one JSON object per line.
 *
 * audit_write() formats the record and writes it with write(2) before it returns, so a decision
 * is in the file before its connection carries a byte.  Keys come in the docs/design.md order; absent
 * fields (NULL strings, negative numbers) are left out. */
#ifndef EGRESSD_AUDIT_AUDIT_H
#define EGRESSD_AUDIT_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#define AUDIT_EXTRA_MAX 4

/* The longest line audit_write produces, newline included: longer string fields are cut and end
 * in "\u2026truncated" (the character itself, not the escape). */
#define AUDIT_LINE_MAX 65536
/* How many bytes of formatted lines are kept while writes fail; a record that does not fit is
 * refused (-1) and counted by audit_dropped(), without a seq and outside the chain. */
#define AUDIT_PENDING_MAX (1024 * 1024)

struct audit_rec {
	const char *event; /* start, config, session, request, connect, close, classify, stop */
	uint64_t conn;     /* connection id; 0 = absent */
	const char *session;
	const char *client; /* "IP:PORT" of the client */
	const char *method;
	const char *host;
	int port;         /* -1 = absent */
	const char *path; /* plain HTTP only */
	const char *action;
	const char *decision; /* allow or deny */
	const char *reason;
	const char *rule;
	const char *addr;    /* the address dialled */
	int status;          /* -1 = absent */
	int64_t bytes_out;   /* -1 = absent */
	int64_t bytes_in;    /* -1 = absent */
	int64_t duration_ms; /* -1 = absent */
	const char *end;     /* why a connection ended */
	struct {
		const char *key;
		const char *value;
	} extra[AUDIT_EXTRA_MAX]; /* further string fields after the above (e.g. "version",
	                              "config", "error"); key NULL ends the list */
};

/* A record with every field absent. */
void audit_rec_init(struct audit_rec *r);

/* One open log.  Not locked: use it from one thread (the event loop). */
struct audit_log;

/* Opens (appends to, creating mode 0600) path, or standard output for "-".  With chain, each
 * line gets "prev": the SHA-256 hex of the previous line (of the last line already in the file
 * when appending).  NULL with a reason in err. */
struct audit_log *audit_open(const char *path, int chain, char *err, size_t errlen);

/* Adds ts and seq, formats and writes one line.  Returns 0, or -1 when the write failed (the
 * error is kept for audit_last_error and the record is retried on the next call). */
int audit_write(struct audit_log *log, const struct audit_rec *rec);

/* Reopens the file (after rotation: SIGUSR1).  0 or -1. */
int audit_reopen(struct audit_log *log);

/* Last write error text, or NULL.  Cleared when a later write leaves nothing pending. */
const char *audit_last_error(const struct audit_log *log);

/* Records refused since audit_open because AUDIT_PENDING_MAX bytes were already waiting. */
uint64_t audit_dropped(const struct audit_log *log);

/* Flushes and closes; NULL is ignored. */
void audit_close(struct audit_log *log);

/* Checks the chain of an audit file: prints the first broken line to err.  0 intact, 1 broken,
 * -1 unreadable.  Every line must be a JSON object; the first line's prev is not checked (it may
 * name a line of a rotated file), every later line's prev must be the SHA-256 of the line
 * before (docs/audit.md). */
int audit_verify(const char *path, char *err, size_t errlen);

#endif
