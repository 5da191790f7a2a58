/* Shared between the files of audit/; nothing outside audit/ includes it. */
#ifndef EGRESSD_AUDIT_INTERNAL_H
#define EGRESSD_AUDIT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "audit/audit.h"

#define AUDIT_SHA256_HEX 64

/* Hex SHA-256 of p[0..len) into hex (65 bytes, NUL-terminated).  0 or -1 (OpenSSL failure). */
int audit_sha256_hex(EVP_MD_CTX *ctx, const EVP_MD *md, const void *p, size_t len, char *hex);

/* Formats "what path: strerror(errnum)" (errnum 0: no strerror part) into err, if any. */
void audit_set_err(char *err, size_t errlen, const char *what, const char *path, int errnum);

/* sync.c: the writer thread of audit.fsync.  It owns nothing of the log but a duplicate of its
 * descriptor for the length of one fdatasync, and a retired descriptor after a reopen. */
struct audit_sync;

/* What the loop learns from the thread. */
struct audit_sync_report {
	uint64_t durable; /* every record up to here is durable, or lost (audit_sync_state) */
	int failing;      /* the last fdatasync failed ... */
	int err;          /* ... with this errno */
	uint64_t syncs;   /* fdatasync rounds so far */
};

/* Starts the thread for descriptor fd (the log keeps owning it).  NULL with err set. */
struct audit_sync *audit_sync_start(int fd, char *err, size_t errlen);
/* Every record up to seq is in the file: the thread syncs up to there next. */
void audit_sync_written(struct audit_sync *s, uint64_t seq);
/* After a reopen: newfd is the log's descriptor from now on; oldfd (which held the records up
 * to the last audit_sync_written) passes to the thread, which syncs and closes it.  When the
 * thread still holds an older one, oldfd is synced and closed here (two rotations within one
 * sync; rare). */
void audit_sync_switch(struct audit_sync *s, int newfd, int oldfd);
/* The descriptor that becomes readable after every round. */
int audit_sync_notify_fd(const struct audit_sync *s);
/* Empties the notify descriptor and reads the state. */
void audit_sync_poll(struct audit_sync *s, struct audit_sync_report *r);
enum audit_seq_state audit_sync_state(struct audit_sync *s, uint64_t seq);
/* fdatasync rounds run so far. */
uint64_t audit_sync_rounds(struct audit_sync *s);
/* Finishes the round under way and joins the thread; the log's descriptor stays open. */
void audit_sync_stop(struct audit_sync *s);

#endif
