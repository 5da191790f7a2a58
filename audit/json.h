/* JSON string escaping for audit records. */
#ifndef EGRESSD_AUDIT_JSON_H
#define EGRESSD_AUDIT_JSON_H

#include <stddef.h>
#include <stdint.h>

/* Writes s[0..len) as the inside of a JSON string (no quotes) into dst: '"' and '\\' escaped,
 * control characters as \n \r \t \b \f or \u00XX, DEL as \u007f, valid UTF-8 passed through, and
 * each byte of invalid UTF-8 (overlong forms, surrogates, > U+10FFFF, truncated sequences) as
 * U+FFFD.  dst is always NUL-terminated when cap > 0.  Returns the length the whole escaped text
 * needs (excluding the NUL), like snprintf: a result >= cap means it was cut. */
size_t audit_json_escape(char *dst, size_t cap, const char *s, size_t len);

/* Length (1-4) of the valid UTF-8 sequence at s[0..len), or 0 when s starts with a byte that does
 * not begin one (a stray continuation, an overlong form, a surrogate, > U+10FFFF, a cut
 * sequence) or len is 0.  ASCII, controls included, counts as valid (length 1). */
size_t audit_utf8_valid_len(const unsigned char *s, size_t len);

/* The number of keys docs/design.md 7 names (ts ... prev). */
#define AUDIT_JSON_STD_KEYS 23

/* The index of k[0..n) among the docs/design.md 7 keys (0 = ts ... 22 = prev), or -1. */
int audit_json_std_key(const char *k, size_t n);

/* What audit_verify reads of a record's top level.  Pointers are into the line. */
struct audit_json_top {
	const char *prev; /* raw text of the "prev" string, or NULL */
	size_t prevlen;
	const char *event; /* raw text of the "event" string, or NULL */
	size_t eventlen;
	int has_seq;  /* "seq" is present ... */
	uint64_t seq; /* ... with this value */
};

/* Checks that line[0..len) (no newline) is one JSON object (as audit_json_check_object), that
 * no key of docs/design.md 7 appears twice, that its numeric keys (seq, conn, port, status,
 * bytes_out, bytes_in, duration_ms) are non-negative integers of at most 64 bits, and that event
 * and prev are strings; fills top.  0, or -1 with a static English reason in *why. */
int audit_json_read_top(const char *line, size_t len, struct audit_json_top *top, const char **why);

/* Checks that line[0..len) (no newline) is one JSON object (RFC 8259, strings valid UTF-8, at
 * most 32 levels deep).  On success returns 0 and points *prev and *prevlen at the raw text of its
 * top-level "prev" string (NULL/0 when absent); the pointers are into line.  On failure returns
 * -1 with a static English reason in *why. */
int audit_json_check_object(
        const char *line, size_t len, const char **prev, size_t *prevlen, const char **why);

#endif
