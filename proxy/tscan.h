/* What a tunnel carries, from its first bytes (docs/design.md 3, "What a tunnel carries").
 *
 * A pure state machine over the two byte streams of a tunnel, fed in arrival order: no
 * allocation, no libevent, no global state.  It tells the caller (tunnel.c) the tunnel's kind,
 * every TLS ClientHello the client sends in clear (the one after a HelloRetryRequest too) with
 * its server name, how many held client bytes may go upstream, and when the handshake is past
 * the point where a name can still change, so that the rest is relayed unread.  The caller
 * decides what a name or a kind means under the session's bound. */
#ifndef EGRESSD_PROXY_TSCAN_H
#define EGRESSD_PROXY_TSCAN_H

#include <stddef.h>
#include <stdint.h>

#include "allowlist/action.h"
#include "proxy/sni.h"

/* Where the scan is. */
enum proxy_tscan_phase {
	PROXY_TSCAN_PH_FIRST = 0, /* no byte judged yet: the first bytes decide the kind */
	PROXY_TSCAN_PH_TLS,    /* a ClientHello passed; until the server's ServerHello every
	                          client record is read and every ClientHello checked */
	PROXY_TSCAN_PH_OPEN,   /* nothing more to check: relay everything */
};

/* The server's records, read until its ServerHello. */
struct proxy_tscan_server {
	uint8_t hdr[5];    /* the record header being read */
	size_t hdr_n;
	size_t rec_left;   /* body bytes left in the current record */
	int rec_type;      /* its content type */
	uint8_t hs[4 + 34];/* the start of the current handshake message: header, version, random */
	size_t hs_n;
	size_t hs_left;    /* body bytes of that message not yet seen */
	int hs_in_body;    /* past the message header */
	int hs_checked;    /* its random was compared with the HelloRetryRequest value */
};

struct proxy_tscan {
	enum proxy_tscan_phase phase;
	enum allow_tunnel_kind kind;     /* once known */
	int port443;                     /* port 443 carries only TLS */
	unsigned hellos;                 /* ClientHellos seen */
	unsigned retries;                /* HelloRetryRequests seen */
	int client_ssh;                  /* the client spoke first with an SSH identification
	                                    line: its bytes wait for the server's first ones */
	int ech;                         /* the last HELLO had an encrypted_client_hello
	                                    extension: its name is only the outer one */
	struct proxy_tscan_server srv;
};

/* What a call found. */
enum proxy_tscan_step {
	PROXY_TSCAN_MORE = 0, /* wait for more bytes (from either side) */
	PROXY_TSCAN_KIND,     /* the kind is now known (s->kind); call again for the bytes */
	PROXY_TSCAN_HELLO,    /* a ClientHello fills the first *n held bytes: its name is in
	                         name ("" without server_name); once the caller accepts it, call
	                         proxy_tscan_passed(s, *n) and send those bytes */
	PROXY_TSCAN_PASS,     /* the first *n held client bytes may go upstream as they are */
	PROXY_TSCAN_OPEN,     /* relay everything from now on, unread */
	PROXY_TSCAN_BAD,      /* refused (tls-invalid): *why says why */
};

void proxy_tscan_init(struct proxy_tscan *s, int port443);

/* Client bytes: buf[0..len) is everything the client sent that was not passed yet.  eof: the
 * client will send no more.  Returns one step; call again after acting on it.  A
 * KIND step comes once, before any HELLO or PASS. */
enum proxy_tscan_step proxy_tscan_client(struct proxy_tscan *s, const uint8_t *buf, size_t len,
        int eof, size_t *n, char *name, size_t namecap, const char **why);

/* The caller sent the n bytes of a HELLO. */
void proxy_tscan_passed(struct proxy_tscan *s, size_t n);

/* The server stayed silent behind a client's SSH identification line until the deadline: the
 * client's bytes alone decide, and they are opaque (OTHER). */
void proxy_tscan_server_silent(struct proxy_tscan *s);

/* Server bytes, each exactly once, in order (they go to the client after this call unless it
 * says BAD).  client_spoke: the client sent a byte already.  Returns MORE, KIND (the server
 * spoke first, or answered a client's SSH identification line: SSH or OTHER), OPEN (the
 * ServerHello came: the name can no longer change) or BAD. */
enum proxy_tscan_step proxy_tscan_server(struct proxy_tscan *s, const uint8_t *buf, size_t len,
        int client_spoke, const char **why);

const char *proxy_tscan_step_name(enum proxy_tscan_step st);

#endif
