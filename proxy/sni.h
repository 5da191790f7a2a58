/* The server name in the TLS ClientHello that opens a CONNECT tunnel (docs/design.md 3: the peek
 * before relaying).
 *
 * A pure parser: no allocation, no libevent, no OpenSSL, no global state.  The caller hands in
 * every byte the client has sent so far, from the first, and calls again when more arrive. */
#ifndef EGRESSD_PROXY_SNI_H
#define EGRESSD_PROXY_SNI_H

#include <stddef.h>
#include <stdint.h>

/* The longest ClientHello handshake message accepted (body, without its 4-byte header). */
#define PROXY_SNI_HELLO_MAX 16384
/* The most TLS records a ClientHello may be spread over. */
#define PROXY_SNI_RECORDS_MAX 64
/* How many bytes a caller should buffer before giving up: a hello of the largest size in the
 * most records.  NEED_MORE at this many bytes means the client is stalling: treat it as BAD. */
#define PROXY_SNI_PEEK_MAX (PROXY_SNI_HELLO_MAX + 4 + 5 * PROXY_SNI_RECORDS_MAX)
/* Room for the longest name proxy_sni_parse returns, with its NUL. */
#define PROXY_SNI_NAME_BUF 256

enum proxy_sni_result {
	PROXY_SNI_NEED_MORE, /* the bytes so far are a clean prefix of a ClientHello */
	PROXY_SNI_FOUND,     /* a complete ClientHello with one host_name: it is in name */
	PROXY_SNI_NONE,      /* a complete ClientHello with no server_name extension */
	PROXY_SNI_NOT_TLS,   /* the first bytes cannot start a TLS handshake record */
	PROXY_SNI_BAD,       /* a TLS handshake that cannot be read cleanly */
};

/* Reads buf[0..len) as the start of a TLS connection.  On FOUND, name (namecap bytes, at least
 * 2) holds the server name exactly as sent, NUL-terminated: ASCII letters, digits, '-', '.', '_'
 * only; a name that does not fit namecap is BAD.  The caller still canonicalises it
 * (allow_canon_host).  *why (may be NULL) gets a static English reason for NONE, NOT_TLS and
 * BAD, and NULL for NEED_MORE and FOUND.  Bytes after the record that completes the ClientHello
 * are not looked at.  buf and name belong to the caller; nothing is kept. */
enum proxy_sni_result proxy_sni_parse(
        const uint8_t *buf, size_t len, char *name, size_t namecap, const char **why);

/* The same, and on FOUND, NONE (and BAD found in a complete hello) *used is the length of the
 * records that carried the ClientHello, from buf[0]: a hello always ends with its record.  On
 * FOUND and NONE, *flags (may be NULL) gets PROXY_SNI_F_* bits; 0 otherwise. */
enum proxy_sni_result proxy_sni_hello(const uint8_t *buf, size_t len, char *name, size_t namecap,
        size_t *used, unsigned *flags, const char **why);

/* What proxy_sni_hello saw besides the name, for FOUND and NONE. */
#define PROXY_SNI_F_ECH 1u /* an encrypted_client_hello extension (the name is only the outer
                              one; real ECH and GREASE look the same) */

/* A short name for a result ("need-more", "found", "none", "not-tls", "bad"). */
const char *proxy_sni_result_name(enum proxy_sni_result r);

#endif
