/* The first-bytes scan of a tunnel (proxy/tscan.h; RFC 8446 4.1.1-4.1.4 and 5.1).
 *
 * The client side is read record by record until the server's ServerHello: every handshake
 * record must carry a ClientHello, read whole by proxy/sni.c and handed to the caller, and the
 * only other records allowed are ChangeCipherSpec (middlebox compatibility), alerts and early
 * data.  The server side is read only far enough to find its ServerHello: when its random is
 * the HelloRetryRequest value, the client's next ClientHello is awaited and checked like the
 * first.  After a real ServerHello the name can no longer change in clear (TLS 1.3 encrypts
 * the rest; TLS 1.2 renegotiates inside the encrypted channel), so the scan opens. */
#include "proxy/tscan.h"

#include <string.h>

#define REC_HANDSHAKE 22
#define REC_CCS 20
#define REC_ALERT 21
#define REC_APPDATA 23
#define REC_MAX (16384 + 2048) /* the largest record TLS allows (ciphertext) */
/* The largest record a client sends before the server's hello: early data, TLS 1.3's 2^14 + 256
 * (TLS 1.2 sends nothing but its hello then).  It must fit the window tunnel.c hands us, or a
 * longer one would wait for bytes that cannot arrive. */
#define REC_MAX_CLIENT (16384 + 256)
_Static_assert(5 + REC_MAX_CLIENT <= PROXY_SNI_PEEK_MAX, "a client record fits the peek window");
#define HS_SERVER_HELLO 2

/* SHA-256 of "HelloRetryRequest": a ServerHello with this random asks for a new ClientHello. */
static const uint8_t hrr_random[32] = {0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe,
        0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91, 0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e,
        0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c};

void proxy_tscan_init(struct proxy_tscan *s, int port443)
{
	memset(s, 0, sizeof *s);
	s->phase = PROXY_TSCAN_PH_FIRST;
	s->kind = ALLOW_TUNNEL_UNKNOWN;
	s->port443 = port443;
}

static enum proxy_tscan_step bad(const char **why, const char *text)
{
	if (why != NULL)
		*why = text;
	return PROXY_TSCAN_BAD;
}

static int is_upper(uint8_t ch)
{
	return ch >= 'A' && ch <= 'Z';
}

/* 1 when buf starts like an HTTP request line ("METHOD "), 0 when it cannot, -1 when it is too
 * short to tell. */
static int looks_http(const uint8_t *buf, size_t len)
{
	size_t i = 0;
	while (i < len && i < 24 && is_upper(buf[i]))
		i++;
	if (i == len && i < 24)
		return -1;
	return i > 0 && i < len && buf[i] == ' ';
}

/* Reads a ClientHello at the start of buf. */
static enum proxy_tscan_step hello(struct proxy_tscan *s, const uint8_t *buf, size_t len, int eof,
        size_t *n, char *name, size_t namecap, const char **why)
{
	const char *w = NULL;
	size_t used = 0;
	unsigned flags = 0;
	size_t look = len < PROXY_SNI_PEEK_MAX ? len : PROXY_SNI_PEEK_MAX;
	enum proxy_sni_result r = proxy_sni_hello(buf, look, name, namecap, &used, &flags, &w);
	s->ech = (flags & PROXY_SNI_F_ECH) != 0;
	switch (r) {
	case PROXY_SNI_NEED_MORE:
		if (look >= PROXY_SNI_PEEK_MAX)
			return bad(why, "TLS ClientHello larger than egressd reads");
		if (eof)
			return bad(why, "TLS ClientHello cut short by the client's end");
		return PROXY_TSCAN_MORE;
	case PROXY_SNI_NONE:
		if (name != NULL && namecap > 0)
			name[0] = '\0';
		*n = used;
		return PROXY_TSCAN_HELLO;
	case PROXY_SNI_FOUND:
		*n = used;
		return PROXY_TSCAN_HELLO;
	case PROXY_SNI_NOT_TLS:
	case PROXY_SNI_BAD:
		break;
	}
	return bad(why, w != NULL ? w : "TLS ClientHello malformed");
}

enum proxy_tscan_step proxy_tscan_client(struct proxy_tscan *s, const uint8_t *buf, size_t len,
        int eof, size_t *n, char *name, size_t namecap, const char **why)
{
	*n = 0;
	if (why != NULL)
		*why = NULL;
	if (s->phase == PROXY_TSCAN_PH_OPEN) {
		*n = len;
		return len > 0 ? PROXY_TSCAN_PASS : PROXY_TSCAN_MORE;
	}
	if (len == 0)
		return PROXY_TSCAN_MORE;
	if (s->phase == PROXY_TSCAN_PH_FIRST) {
		if (s->kind == ALLOW_TUNNEL_UNKNOWN) {
			size_t used;
			const char *w;
			enum proxy_sni_result r = proxy_sni_hello(buf,
			        len < PROXY_SNI_PEEK_MAX ? len : PROXY_SNI_PEEK_MAX, NULL, 0, &used, NULL, &w);
			if (r == PROXY_SNI_NEED_MORE && len < 3 && !eof)
				return PROXY_TSCAN_MORE; /* not enough to tell a record header */
			if (r != PROXY_SNI_NOT_TLS) {
				s->kind = ALLOW_TUNNEL_TLS;
				return PROXY_TSCAN_KIND;
			}
			if (s->port443)
				return bad(why, "port 443 carries only TLS");
			/* An SSH client sends its identification line without waiting for the
			 * server's (RFC 4253 4.2; OpenSSH does): it waits until the server's first
			 * bytes tell whether the server speaks SSH too. */
			size_t m = len < 4 ? len : 4;
			if (memcmp(buf, "SSH-", m) == 0 && (m == 4 || !eof) &&
			        len < PROXY_SNI_PEEK_MAX) {
				s->client_ssh = m == 4;
				return PROXY_TSCAN_MORE;
			}
			/* (a full window of bytes before the server said a word is no SSH client's:
			 * it sends its line and its KEXINIT, then waits) */
			int h = looks_http(buf, len);
			if (h == -1 && !eof)
				return PROXY_TSCAN_MORE;
			s->kind = h == 1 ? ALLOW_TUNNEL_HTTP : ALLOW_TUNNEL_OTHER;
			return PROXY_TSCAN_KIND;
		}
		if (s->kind != ALLOW_TUNNEL_TLS) {
			s->phase = PROXY_TSCAN_PH_OPEN;
			return PROXY_TSCAN_OPEN;
		}
		return hello(s, buf, len, eof, n, name, namecap, why);
	}
	/* PROXY_TSCAN_TLS: one record at a time until the server's hello. */
	if (len < 5)
		return PROXY_TSCAN_MORE;
	if (buf[1] != 3)
		return bad(why, "a TLS record with an implausible version");
	size_t rlen = (size_t)buf[3] << 8 | buf[4];
	if (rlen > REC_MAX_CLIENT)
		return bad(why, "a TLS record longer than TLS 1.3 allows");
	switch (buf[0]) {
	case REC_HANDSHAKE:
		/* Before the server's hello a client sends a handshake message only to answer a
		 * HelloRetryRequest (RFC 8446 4.1.2): one the server did not ask for would pair
		 * the server's answers with the wrong hellos. */
		if (s->hellos > s->retries)
			return bad(why, "a client handshake message the server did not ask for");
		return hello(s, buf, len, eof, n, name, namecap, why);
	case REC_CCS:
	case REC_ALERT:
	case REC_APPDATA:
		if (len < 5 + rlen)
			return PROXY_TSCAN_MORE;
		*n = 5 + rlen;
		return PROXY_TSCAN_PASS;
	default:
		return bad(why, "a TLS record of a type no client sends before the server's hello");
	}
}

void proxy_tscan_server_silent(struct proxy_tscan *s)
{
	s->kind = ALLOW_TUNNEL_OTHER;
	s->phase = PROXY_TSCAN_PH_OPEN;
}

void proxy_tscan_passed(struct proxy_tscan *s, size_t n)
{
	(void)n;
	s->hellos++;
	if (s->phase == PROXY_TSCAN_PH_FIRST)
		s->phase = PROXY_TSCAN_PH_TLS;
}

/* Reads server bytes in the TLS phase.  Returns MORE, OPEN or BAD. */
static enum proxy_tscan_step server_tls(struct proxy_tscan *s, const uint8_t *buf, size_t len,
        const char **why)
{
	struct proxy_tscan_server *v = &s->srv;
	size_t i = 0;
	while (i < len) {
		if (v->hdr_n < 5) {
			v->hdr[v->hdr_n++] = buf[i++];
			if (v->hdr_n < 5)
				continue;
			v->rec_type = v->hdr[0];
			v->rec_left = (size_t)v->hdr[3] << 8 | v->hdr[4];
			if (v->hdr[1] != 3)
				return bad(why, "the server's reply is not TLS");
			if (v->rec_left == 0 || v->rec_left > REC_MAX)
				return bad(why, "the server sent a TLS record of an impossible length");
			if (v->rec_type != REC_HANDSHAKE && v->rec_type != REC_CCS &&
			        v->rec_type != REC_ALERT)
				return bad(why, "the server's reply is not a TLS handshake");
			continue;
		}
		size_t take = len - i < v->rec_left ? len - i : v->rec_left;
		if (v->rec_type != REC_HANDSHAKE) {
			i += take;
			v->rec_left -= take;
		} else {
			for (size_t k = 0; k < take; k++, i++) {
				uint8_t ch = buf[i];
				v->rec_left--;
				if (!v->hs_in_body) {
					v->hs[v->hs_n++] = ch;
					if (v->hs_n < 4)
						continue;
					if (v->hs[0] != HS_SERVER_HELLO)
						return bad(why, "the server's first handshake message is "
						                "not a ServerHello");
					/* After a HelloRetryRequest the server waits for the new
					 * ClientHello: a hello before it would open the tunnel with
					 * that ClientHello unread. */
					if (s->retries >= s->hellos)
						return bad(why, "the server's hello came before the "
						                "client's ClientHello after its "
						                "HelloRetryRequest");
					v->hs_left = (size_t)v->hs[1] << 16 | (size_t)v->hs[2] << 8 |
					             v->hs[3];
					v->hs_in_body = 1;
					v->hs_checked = 0;
					if (v->hs_left < 34)
						return bad(why, "the server's ServerHello is too short");
					continue;
				}
				if (v->hs_n < sizeof v->hs)
					v->hs[v->hs_n++] = ch;
				v->hs_left--;
				if (v->hs_n == sizeof v->hs && !v->hs_checked) {
					/* version (2 bytes) after the header, then the random */
					v->hs_checked = 1;
					if (memcmp(v->hs + 6, hrr_random, sizeof hrr_random) != 0) {
						s->phase = PROXY_TSCAN_PH_OPEN;
						return PROXY_TSCAN_OPEN;
					}
					/* RFC 8446 4.1.4: a client aborts on a second one. */
					if (s->retries > 0)
						return bad(why, "a second HelloRetryRequest");
					s->retries++;
				}
				if (v->hs_left == 0) {
					/* A HelloRetryRequest ended: the next message is the
					 * ServerHello, after the client's new ClientHello. */
					v->hs_n = 0;
					v->hs_in_body = 0;
				}
			}
		}
		if (v->rec_left == 0)
			v->hdr_n = 0;
	}
	return PROXY_TSCAN_MORE;
}

enum proxy_tscan_step proxy_tscan_server(struct proxy_tscan *s, const uint8_t *buf, size_t len,
        int client_spoke, const char **why)
{
	if (why != NULL)
		*why = NULL;
	if (len == 0 || s->phase == PROXY_TSCAN_PH_OPEN)
		return PROXY_TSCAN_MORE;
	if (s->phase == PROXY_TSCAN_PH_FIRST) {
		/* The client's first bytes decide when it spoke, unless they were an SSH
		 * identification line; a server that speaks first tells the kind itself. */
		if ((client_spoke && !s->client_ssh) || s->kind != ALLOW_TUNNEL_UNKNOWN)
			return PROXY_TSCAN_MORE;
		if (s->port443)
			return bad(why, "the server spoke first on port 443, which carries only TLS");
		static const char banner[] = "SSH-";
		size_t m = len < 4 ? len : 4;
		if (memcmp(buf, banner, m) == 0 && m < 4)
			return PROXY_TSCAN_MORE;
		s->kind = m == 4 && memcmp(buf, banner, 4) == 0 ? ALLOW_TUNNEL_SSH : ALLOW_TUNNEL_OTHER;
		s->phase = PROXY_TSCAN_PH_OPEN;
		return PROXY_TSCAN_KIND;
	}
	return server_tls(s, buf, len, why);
}

const char *proxy_tscan_step_name(enum proxy_tscan_step st)
{
	switch (st) {
	case PROXY_TSCAN_MORE:
		return "more";
	case PROXY_TSCAN_KIND:
		return "kind";
	case PROXY_TSCAN_HELLO:
		return "hello";
	case PROXY_TSCAN_PASS:
		return "pass";
	case PROXY_TSCAN_OPEN:
		return "open";
	case PROXY_TSCAN_BAD:
		break;
	}
	return "bad";
}
