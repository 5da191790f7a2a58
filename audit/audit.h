/* The audit log (docs/design.md 7, docs/audit.md): one JSON object per line, keys in the design
 * order, absent fields (NULL strings, negative numbers) left out.
 *
 * What a caller is promised depends on the record's kind (enum audit_kind):
 * - AUDIT_DECISION, a decision that lets bytes move: audit_write returns its seq only once the
 *   record is on record (a regular file: written by write(2), and with fsync the caller waits
 *   until audit_seq_state says durable; a pipe, FIFO, terminal or socket: taken into the bounded
 *   backlog in order).  Otherwise it returns 0 and the record is refused: it takes no seq, does
 *   not enter the hash chain and leaves no part of itself in the file, so the log stays
 *   verifiable; the caller must deny (503 audit-unavailable).
 * - AUDIT_DENIAL, a decision that moves no byte: kept while it cannot be written, dropped
 *   (counted) once AUDIT_BACKLOG_MAX bytes wait.
 * - AUDIT_EVENT, everything else (start, config, close, stop): kept, dropped (counted) only once
 *   AUDIT_PENDING_MAX bytes wait.
 *
 * Writing never blocks on a pipe, FIFO, terminal or socket: those get a private non-blocking
 * description (a socket: send with MSG_DONTWAIT), and what they do not take waits in the backlog.
 * The event loop drains it: whenever the opts' wake callback runs, the loop asks audit_wait_fd
 * (a descriptor to wait on for writability) and audit_retry_ms (a delay after a hard error) and
 * calls audit_flush when either fires.  With fsync, a writer thread runs fdatasync for
 * everything written so far (group commit) and makes audit_notify_fd readable when records
 * became durable or a sync failed; the loop then calls audit_durable_seq and audit_seq_state.
 *
 * Not locked: every function is called from one thread (the event loop); the writer thread is
 * internal.  The caller ignores or handles SIGPIPE (a FIFO whose reader left gives EPIPE).
 * Writing starts to fail, or works again: the opts' notice callback says so once each time, and
 * a recovery also writes an "audit" record with what was refused and dropped meanwhile. */
#ifndef EGRESSD_AUDIT_AUDIT_H
#define EGRESSD_AUDIT_AUDIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define AUDIT_EXTRA_MAX 4

/* The longest line audit_write produces, newline included: longer string fields are cut and end
 * in "\u2026truncated" (the character itself, not the escape). */
#define AUDIT_LINE_MAX 65536
/* Decisions are refused (and denials dropped) while this many bytes wait to be written; after a
 * stream's reader stalled, decisions are taken again once the backlog has drained to half. */
#define AUDIT_BACKLOG_MAX (1024 * 1024)
/* Other records are dropped (counted by audit_dropped) while this many bytes wait. */
#define AUDIT_PENDING_MAX (4 * 1024 * 1024)
/* How long audit_close waits for a stream's reader to take what is left. */
#define AUDIT_CLOSE_WAIT_MS 2000
/* How long after a hard write error the loop should try again (audit_retry_ms). */
#define AUDIT_RETRY_MS 1000

/* What a record is to the caller: see the top of this file. */
enum audit_kind {
	AUDIT_DECISION = 0, /* an allow: on record before bytes move, or refused */
	AUDIT_DENIAL,       /* a deny: kept, dropped beyond AUDIT_BACKLOG_MAX */
	AUDIT_EVENT, /* start, config, close, stop, ...: kept, dropped beyond AUDIT_PENDING_MAX */
};

/* Where a written record stands (audit_seq_state). */
enum audit_seq_state {
	AUDIT_SEQ_DURABLE = 0, /* written (and, with fsync, fdatasync'd) */
	AUDIT_SEQ_PENDING,     /* written, its fdatasync not done yet: wait for audit_notify_fd */
	AUDIT_SEQ_LOST,        /* its fdatasync failed: treat it as not on record */
};

struct audit_rec {
	const char
	        *event; /* start, config, session, request, connect, close, classify, stop, audit */
	uint64_t conn;  /* connection id; 0 = absent */
	const char *front; /* the front door: http, connect, socks5, transparent, inspected, dns */
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
	const char *addr;     /* the address dialled */
	const char *orig_dst; /* transparent: the destination the client dialled, "IP:PORT" */
	int status;           /* -1 = absent; set only when an answer with it was sent */
	int64_t bytes_out;    /* -1 = absent */
	int64_t bytes_in;     /* -1 = absent */
	int64_t duration_ms;  /* -1 = absent */
	const char *end;      /* why a connection ended */
	struct {
		const char *key;   /* NULL ends the list */
		const char *value; /* a string, or NULL for ... */
		int64_t num;       /* ... a number when >= 0; both absent: the extra is skipped */
	} extra[AUDIT_EXTRA_MAX];  /* further fields after the above (e.g. "version", "pid",
	                               "config", "error"); never one of the keys above */
};

/* A record with every field absent. */
void audit_rec_init(struct audit_rec *r);
/* Adds a string or a number extra in the first free slot: 0, or -1 when all are taken. */
int audit_rec_str(struct audit_rec *r, const char *key, const char *value);
int audit_rec_num(struct audit_rec *r, const char *key, int64_t value);

struct audit_opts {
	int chain; /* each line gets "prev": the SHA-256 hex of the previous line */
	int fsync; /* records are made durable (fdatasync, writer thread); a regular file only */
	/* Called with one sentence when writing starts to fail and when it works again (once per
	 * change, never per record), and for the rare events docs/audit.md lists; NULL: none. */
	void (*notice)(void *arg, const char *msg);
	/* Called when audit_wait_fd or audit_retry_ms may have changed; NULL: none. */
	void (*wake)(void *arg);
	void *arg; /* for notice and wake */
};

/* One open log. */
struct audit_log;

/* Opens (appends to, creating mode 0600) path, or standard output for "-".  A regular file (or a
 * block device) is written synchronously; anything else through a non-blocking private
 * description (a FIFO by path: waits here for its reader when it has none yet; "-" on a pipe or
 * terminal: /proc/self/fd/1 opened anew) or send(MSG_DONTWAIT) for a socket.  When chaining, the
 * first line's prev is the hash of the last line already in a regular file.  opts NULL: all
 * off.  NULL with a reason in err (fsync on something other than a regular file is an error). */
struct audit_log *audit_open(
        const char *path, const struct audit_opts *opts, char *err, size_t errlen);

/* Adds ts and seq, formats and writes (or queues) one record of the given kind.  Returns its
 * seq (from 1), or 0 when it was refused (a decision) or dropped (a denial or an event): then it
 * has no seq and is not in the chain, and the counters say so. */
uint64_t audit_write(struct audit_log *log, const struct audit_rec *rec, enum audit_kind kind);

/* Before a caller dials for an allowed destination: 1 when its decision record would be taken
 * now, as far as is known; 0 when it would be refused (a hard error is not over, the backlog is
 * full): then it counts as a refused decision and the caller denies without dialling. */
int audit_admit(struct audit_log *log);

/* The descriptor the loop waits on for writability while the backlog waits for a stalled
 * reader, or -1. */
int audit_wait_fd(const struct audit_log *log);
/* Milliseconds until audit_flush should try again after a hard write error (a full disk, a FIFO
 * whose reader left), or -1 when nothing waits that way. */
int audit_retry_ms(const struct audit_log *log);
/* Writes what the backlog holds, as far as it goes without blocking (a FIFO whose reader left
 * is opened again by its path).  Returns the bytes still waiting. */
size_t audit_flush(struct audit_log *log);

/* With fsync: readable when durable records or a failed fdatasync are to be reported; -1
 * without fsync. */
int audit_notify_fd(const struct audit_log *log);
/* Empties the notify descriptor, reports a failed (or again working) fdatasync through the
 * notice, and returns the highest seq up to which every record is durable or lost (without
 * fsync: the last seq). */
uint64_t audit_durable_seq(struct audit_log *log);
/* Where the record seq stands (fsync off: durable once written). */
enum audit_seq_state audit_seq_state(struct audit_log *log, uint64_t seq);

/* Reopens the path (after rotation: SIGUSR1; a FIFO whose reader came back).  0 or -1 (the old
 * target stays).  Standard output is not reopened. */
int audit_reopen(struct audit_log *log);

/* Last write error text, or NULL.  Cleared when a later write leaves nothing pending. */
const char *audit_last_error(const struct audit_log *log);

/* Since audit_open: denials and events dropped because the backlog was full; decisions
 * refused; bytes waiting; fdatasync calls made. */
uint64_t audit_dropped(const struct audit_log *log);
uint64_t audit_refused(const struct audit_log *log);
size_t audit_backlog(const struct audit_log *log);
uint64_t audit_syncs(const struct audit_log *log);

/* Writes what is pending (a stream: waiting at most AUDIT_CLOSE_WAIT_MS for its reader),
 * fdatasyncs a file, says through the notice what could not be written, and closes; NULL is
 * ignored. */
void audit_close(struct audit_log *log);

/* Checks an audit file: prints the first broken line to err.  0 intact, 1 broken, -1
 * unreadable.  Every line must be a JSON object whose seq follows the line before (or is 1: a
 * new process), whose numeric fields are numbers, and whose prev is the SHA-256
 * of the line before; the first line's prev is not checked (it may name a line of a rotated
 * file).  See docs/audit.md. */
int audit_verify(const char *path, char *err, size_t errlen);
/* The same on an open stream; name is used in messages. */
int audit_verify_stream(FILE *fp, const char *name, char *err, size_t errlen);

#endif
