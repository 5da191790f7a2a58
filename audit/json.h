/* JSON string escaping for audit records. */
#ifndef EGRESSD_AUDIT_JSON_H
#define EGRESSD_AUDIT_JSON_H

#include <stddef.h>

/* Writes s[0..len) as the inside of a JSON string (no quotes) into dst: '"' and '\\' escaped,
 * control characters as \n \r \t \b \f or \u00XX, DEL as \u007f, valid UTF-8 passed through, and
 * each byte of invalid UTF-8 (overlong forms, surrogates, > U+10FFFF, truncated sequences) as
 * U+FFFD.  dst is always NUL-terminated when cap > 0.  Returns the length the whole escaped text
 * needs (excluding the NUL), like snprintf: a result >= cap means it was cut. */
size_t audit_json_escape(char *dst, size_t cap, const char *s, size_t len);

#endif
