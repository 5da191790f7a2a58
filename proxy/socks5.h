/* The SOCKS5 messages a client sends (RFC 1928 greeting and request, RFC 1929 username and
 * password).  A pure parser: no allocation, no state beyond the arguments; the caller hands in
 * every byte received so far for the current message and calls again when more arrive. */
#ifndef EGRESSD_PROXY_SOCKS5_H
#define EGRESSD_PROXY_SOCKS5_H

#include <stddef.h>
#include <stdint.h>

enum proxy_socks5_result {
	PROXY_SOCKS5_MORE = 0, /* a clean prefix: wait for more bytes */
	PROXY_SOCKS5_OK,       /* a complete message of *used bytes */
	PROXY_SOCKS5_BAD,      /* malformed: *why says how, *reply the reply code that fits */
};

#define PROXY_SOCKS5_NOAUTH 0x01u   /* method 0x00 offered */
#define PROXY_SOCKS5_USERPASS 0x02u /* method 0x02 offered */

/* VER=5 NMETHODS METHODS...: *methods gets the PROXY_SOCKS5_* bits of what was offered. */
enum proxy_socks5_result proxy_socks5_greeting(const uint8_t *buf, size_t len, size_t *used,
        unsigned *methods, const char **why);

/* VER=1 ULEN UNAME PLEN PASSWD (each 1-255 bytes).  user and pass (256 bytes each) get the
 * values, NUL-terminated; a value holding a NUL byte is BAD. */
enum proxy_socks5_result proxy_socks5_auth(const uint8_t *buf, size_t len, size_t *used,
        char user[256], size_t *ulen, char pass[256], size_t *plen, const char **why);

#define PROXY_SOCKS5_CONNECT 1
#define PROXY_SOCKS5_BIND 2
#define PROXY_SOCKS5_UDP 3

struct proxy_socks5_req {
	uint8_t cmd;        /* 1 CONNECT, 2 BIND, 3 UDP ASSOCIATE (others are BAD) */
	uint8_t atyp;       /* 1 IPv4, 3 domain name, 4 IPv6 */
	char host[256];     /* the name as sent (atyp 3), or the address as text */
	uint16_t port;
};

/* VER=5 CMD RSV=0 ATYP DST.ADDR DST.PORT.  BAD sets *reply: 0x07 an unknown command, 0x08 an
 * unknown address type, 0x01 anything else. */
enum proxy_socks5_result proxy_socks5_request(const uint8_t *buf, size_t len, size_t *used,
        struct proxy_socks5_req *r, uint8_t *reply, const char **why);

#endif
