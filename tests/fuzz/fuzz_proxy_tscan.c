/* Fuzzes the tunnel first-bytes scanner (proxy/tscan.c) driven exactly as proxy/tunnel.c's
 * step() drives it: client bytes are held until the scan passes them; server bytes are held
 * while the kind is unknown (re-read from their start on every call) and, once the scan reads
 * the server's TLS records, handed over once each and passed on; a ClientHello is accepted when
 * its name is the tunnel's host (canonicalised as check_name does), otherwise the run ends as
 * refused; a kind is accepted as judged; OPEN, or a server that speaks first, ends the scan and
 * the rest is relayed unread.
 *
 * Input: one flag byte (bit 0: the tunnel is to port 443; bit 1: the tunnel's host is the IP
 * literal 192.0.2.10, where a ClientHello without a name passes, else it is allowed.test), then
 * chunks, each a header byte and its bytes.  Header bit 7: 0 client, 1 server; the low 7 bits L:
 * 0 is that side's end (EOF), 1-95 a chunk of L bytes, 96-127 a chunk of (L - 95) * 512 bytes.
 *
 * Properties, checked with abort():
 * - HELLO and PASS never exceed the held bytes given, and are never empty;
 * - no byte is passed (client or server) before the kind is known; the kind is set once and
 *   never changes; PASS never comes in the first phase;
 * - a HELLO's bytes are whole TLS handshake records and its name holds only [A-Za-z0-9._-];
 *   a PASS in the TLS phase is exactly one record that is not a handshake record (a client
 *   handshake record before the server's hello is always checked as a HELLO);
 * - after a HelloRetryRequest the scan does not open before the client's next ClientHello was
 *   returned as a HELLO;
 * - once OPEN, every client byte is PASS and no HELLO comes; the server is not read;
 * - MORE leaves the scan unchanged (tunnel.c hands the same held bytes again; only client_ssh,
 *   which the same bytes set again, may change) and is never the answer to a full scan window
 *   (PROXY_SNI_PEEK_MAX held bytes: nothing more can arrive, so the tunnel would stall until its
 *   timeout);
 * - the server's first bytes decide the kind (SSH or opaque) only when the server spoke first
 *   or the client's first bytes were an SSH identification line ("SSH-");
 * - BAD says why; the same input gives the same trace. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist/host.h"
#include "proxy/tscan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CLIENT_CAP (PROXY_SNI_PEEK_MAX + 64) /* tunnel.c's client read watermark */
#define SERVER_CAP (256 * 1024)              /* PROXY_HIGH_WATER, the upstream's */
#define TRACE_MAX 512

enum end {
	RUNNING = 0, /* still scanning */
	RELAYED,     /* OPEN or a server that spoke first: everything is relayed unread */
	HTTP,        /* plain HTTP: the HTTP exchange takes over */
	STOPPED,     /* refused, BAD, or closed */
};

struct side {
	uint8_t *b;    /* every byte this side sent, in order */
	size_t sent;   /* bytes in b */
	size_t recv;   /* bytes read into the proxy's buffer (recv - passed are held) */
	size_t passed; /* bytes passed on (client: upstream; server: to the client) */
	int eof_sent;  /* the side closed (seen once every byte was read) */
	int eof;       /* the proxy saw the end */
};

/* The harness's own reading of the server's bytes passed to the client: its TLS records and
 * handshake messages, to know independently of the scanner when a HelloRetryRequest or a
 * ServerHello went by. */
struct shadow {
	uint8_t hdr[5]; /* the record header being read */
	size_t hdr_n;
	size_t rec_left; /* body bytes left in the record */
	uint8_t *hs;     /* the handshake bytes of every handshake record, in order */
	size_t hs_n;
	size_t pos;    /* where the current handshake message starts in hs */
	int judged;    /* the current message was looked at */
	unsigned hrrs; /* HelloRetryRequests seen */
	int opened;    /* a ServerHello that is not a HelloRetryRequest came */
	int broken;    /* not TLS as the scan reads it: the scanner must refuse */
};

struct sim {
	struct proxy_tscan scan;
	struct allow_dest dest; /* the tunnel's host */
	struct side c, s;
	int client_spoke;
	enum allow_tunnel_kind kind; /* the kind as first set */
	int await_hello;             /* a HelloRetryRequest went by, no HELLO since */
	struct shadow sh;
	enum end end;
	uint32_t trace[TRACE_MAX]; /* every step and its count, for the determinism check */
	size_t ntrace;
};

static void trace(struct sim *m, int who, enum proxy_tscan_step st, size_t n)
{
	if (m->ntrace < TRACE_MAX)
		m->trace[m->ntrace++] =
		        (uint32_t)who << 28 | (uint32_t)st << 24 | (uint32_t)(n & 0xffffff);
}

/* SHA-256 of "HelloRetryRequest" (RFC 8446 4.1.3), written here independently of tscan.c. */
static const uint8_t hrr_random[32] = {0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d,
        0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91, 0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07,
        0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c};

/* Reads the handshake messages gathered so far, up to the first real ServerHello (called for
 * every byte added: each call does a few comparisons). */
static void shadow_messages(struct shadow *w)
{
	while (!w->opened && !w->broken && w->hs_n - w->pos >= 4) {
		const uint8_t *h = w->hs + w->pos;
		size_t blen = (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
		if (!w->judged) {
			if (h[0] != 2 || blen < 34) {
				w->broken = 1;
				return;
			}
			if (w->hs_n - w->pos < 4 + 2 + 32)
				return;
			w->judged = 1;
			if (memcmp(h + 6, hrr_random, 32) != 0) {
				w->opened = 1;
				return;
			}
			w->hrrs++;
		}
		if (w->hs_n - w->pos < 4 + blen)
			return;
		w->pos += 4 + blen;
		w->judged = 0;
	}
}

/* Server bytes on their way to the client. */
static void shadow_feed(struct shadow *w, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n && !w->broken && !w->opened; i++) {
		if (w->hdr_n < 5) {
			w->hdr[w->hdr_n++] = b[i];
			if (w->hdr_n == 5) {
				w->rec_left = (size_t)w->hdr[3] << 8 | w->hdr[4];
				if (w->hdr[1] != 3 || w->rec_left == 0 ||
				        (w->hdr[0] != 20 && w->hdr[0] != 21 && w->hdr[0] != 22))
					w->broken = 1;
			}
			continue;
		}
		if (w->hdr[0] == 22) {
			w->hs[w->hs_n++] = b[i];
			shadow_messages(w); /* what follows a ServerHello is not read */
		}
		if (--w->rec_left == 0)
			w->hdr_n = 0;
	}
}

/* The kind, once set, never changes; a HelloRetryRequest that went by is followed by a HELLO
 * before the scan opens. */
static void check_kind(struct sim *m)
{
	if (m->kind == ALLOW_TUNNEL_UNKNOWN)
		m->kind = m->scan.kind;
	else if (m->scan.kind != m->kind)
		abort();
	if (m->await_hello && m->scan.phase == PROXY_TSCAN_PH_OPEN)
		abort();
}

/* Field by field (memcmp would compare padding). */
static int same_scan(const struct proxy_tscan *a, const struct proxy_tscan *b)
{
	const struct proxy_tscan_server *x = &a->srv, *y = &b->srv;
	return a->phase == b->phase && a->kind == b->kind && a->port443 == b->port443 &&
	       a->hellos == b->hellos && a->retries == b->retries &&
	       memcmp(x->hdr, y->hdr, sizeof x->hdr) == 0 && x->hdr_n == y->hdr_n &&
	       x->rec_left == y->rec_left && x->rec_type == y->rec_type &&
	       memcmp(x->hs, y->hs, sizeof x->hs) == 0 && x->hs_n == y->hs_n &&
	       x->hs_left == y->hs_left && x->hs_in_body == y->hs_in_body &&
	       x->hs_checked == y->hs_checked;
}

static int name_ok(const char *name)
{
	for (const char *p = name; *p; p++) {
		unsigned char ch = (unsigned char)*p;
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		            (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_'))
			return 0;
	}
	return 1;
}

/* buf[0..n) is a whole number of TLS records, each of type want (or, want < 0, of any type but
 * handshake); returns how many. */
static size_t records(const uint8_t *buf, size_t n, int want)
{
	size_t off = 0, k = 0;
	while (off < n) {
		if (n - off < 5)
			abort();
		if (want >= 0 ? buf[off] != want : buf[off] == 22)
			abort();
		off += 5 + ((size_t)buf[off + 3] << 8 | buf[off + 4]);
		k++;
	}
	if (off != n)
		abort();
	return k;
}

/* tunnel.c's check_name: the name must be the tunnel's host; none passes only for an IP. */
static int name_accepted(const struct sim *m, const char *name)
{
	if (name[0] == '\0')
		return m->dest.kind != ALLOW_HOST_NAME;
	struct allow_dest sni;
	if (allow_canon_host(name, strlen(name), &sni) != ALLOW_CANON_OK)
		return 0;
	return sni.kind == m->dest.kind && strcmp(sni.host, m->dest.host) == 0;
}

/* The server's held bytes, as step() reads them.  Returns 1 when the scan ended. */
static int server_bytes(struct sim *m)
{
	size_t ulen = m->s.recv - m->s.passed;
	if (ulen == 0 || m->scan.phase == PROXY_TSCAN_PH_OPEN)
		return 0;
	uint8_t *ub = malloc(ulen);
	if (ub == NULL)
		abort();
	memcpy(ub, m->s.b + m->s.passed, ulen);
	struct proxy_tscan before = m->scan;
	const char *why = NULL;
	enum proxy_tscan_step st = proxy_tscan_server(&m->scan, ub, ulen, m->client_spoke, &why);
	free(ub);
	trace(m, 1, st, ulen);
	check_kind(m);
	switch (st) {
	case PROXY_TSCAN_MORE:
		/* held bytes are handed again from their start: a first-phase MORE keeps nothing */
		if (before.phase == PROXY_TSCAN_PH_FIRST && m->scan.phase == PROXY_TSCAN_PH_FIRST &&
		        !same_scan(&before, &m->scan))
			abort();
		break;
	case PROXY_TSCAN_BAD:
		if (why == NULL || why[0] == '\0')
			abort();
		m->end = STOPPED;
		return 1;
	case PROXY_TSCAN_KIND:
		/* the server spoke first, or answered a client's SSH line: SSH or opaque, relayed
		 * from now on */
		if ((m->client_spoke && !(m->c.recv >= 4 && memcmp(m->c.b, "SSH-", 4) == 0)) ||
		        before.kind != ALLOW_TUNNEL_UNKNOWN ||
		        (m->scan.kind != ALLOW_TUNNEL_SSH && m->scan.kind != ALLOW_TUNNEL_OTHER) ||
		        m->scan.phase != PROXY_TSCAN_PH_OPEN)
			abort();
		m->end = RELAYED;
		return 1;
	case PROXY_TSCAN_OPEN:
		if (before.phase != PROXY_TSCAN_PH_TLS || m->scan.phase != PROXY_TSCAN_PH_OPEN)
			abort();
		break;
	default:
		abort();
	}
	if (m->scan.phase == PROXY_TSCAN_PH_TLS || m->scan.phase == PROXY_TSCAN_PH_OPEN) {
		if (m->scan.kind != ALLOW_TUNNEL_TLS)
			abort();
		unsigned hrrs = m->sh.hrrs;
		shadow_feed(&m->sh, m->s.b + m->s.passed, ulen);
		m->s.passed += ulen;
		if (m->sh.broken)
			abort(); /* bytes the scanner should have refused went to the client */
		if (m->sh.hrrs != hrrs)
			m->await_hello = 1;
		/* the scanner saw every HelloRetryRequest, and opened on the ServerHello only */
		if (m->scan.retries != m->sh.hrrs ||
		        (st == PROXY_TSCAN_OPEN) !=
		                (m->sh.opened && before.phase == PROXY_TSCAN_PH_TLS))
			abort();
		check_kind(m);
	}
	if (st == PROXY_TSCAN_OPEN) {
		m->end = RELAYED;
		return 1;
	}
	return 0;
}

/* tunnel.c's step(). */
static void step(struct sim *m)
{
	for (;;) {
		if (m->end != RUNNING)
			return;
		size_t clen = m->c.recv - m->c.passed;
		if (clen > 0)
			m->client_spoke = 1;
		if (server_bytes(m))
			return;
		if (clen == 0 && !m->c.eof)
			break;
		size_t look = clen < PROXY_SNI_PEEK_MAX ? clen : PROXY_SNI_PEEK_MAX;
		uint8_t *cb = malloc(look ? look : 1); /* exact size: ASan sees a read past it */
		if (cb == NULL)
			abort();
		memcpy(cb, m->c.b + m->c.passed, look);
		struct proxy_tscan before = m->scan;
		size_t n = 0;
		char name[PROXY_SNI_NAME_BUF];
		const char *why = NULL;
		enum proxy_tscan_step st = proxy_tscan_client(
		        &m->scan, cb, look, m->c.eof, &n, name, sizeof name, &why);
		trace(m, 0, st, n);
		check_kind(m);
		if (st != PROXY_TSCAN_MORE && st != PROXY_TSCAN_KIND && st != PROXY_TSCAN_HELLO &&
		        st != PROXY_TSCAN_PASS && st != PROXY_TSCAN_OPEN && st != PROXY_TSCAN_BAD)
			abort();
		if ((st == PROXY_TSCAN_HELLO || st == PROXY_TSCAN_PASS) &&
		        (n == 0 || n > look || m->scan.kind == ALLOW_TUNNEL_UNKNOWN))
			abort();
		switch (st) {
		case PROXY_TSCAN_MORE:
			free(cb);
			if (!same_scan(&before, &m->scan))
				abort();
			if (look == PROXY_SNI_PEEK_MAX)
				abort(); /* a full window that waits for more: a stall */
			if (m->c.eof && clen == 0 && m->scan.phase == PROXY_TSCAN_PH_FIRST) {
				m->end = STOPPED; /* client-closed */
				return;
			}
			/* a client's SSH line, just seen: server bytes already held now decide */
			if (!before.client_ssh && m->scan.client_ssh && m->s.recv > m->s.passed)
				continue;
			goto wait;
		case PROXY_TSCAN_KIND:
			free(cb);
			if (before.kind != ALLOW_TUNNEL_UNKNOWN ||
			        m->scan.kind == ALLOW_TUNNEL_UNKNOWN ||
			        m->scan.kind == ALLOW_TUNNEL_SSH)
				abort();
			if (m->scan.kind == ALLOW_TUNNEL_HTTP) {
				m->end = HTTP;
				return;
			}
			continue;
		case PROXY_TSCAN_HELLO:
			if (m->scan.kind != ALLOW_TUNNEL_TLS ||
			        m->scan.phase == PROXY_TSCAN_PH_OPEN ||
			        memchr(name, 0, sizeof name) == NULL || !name_ok(name))
				abort();
			records(cb, n, 22);
			free(cb);
			if (!name_accepted(m, name)) {
				m->end = STOPPED; /* sni-mismatch or tls-invalid */
				return;
			}
			proxy_tscan_passed(&m->scan, n);
			if (m->scan.phase != PROXY_TSCAN_PH_TLS)
				abort();
			m->await_hello = 0;
			m->c.passed += n;
			continue;
		case PROXY_TSCAN_PASS:
			if (before.phase == PROXY_TSCAN_PH_FIRST)
				abort();
			if (before.phase == PROXY_TSCAN_PH_TLS && records(cb, n, -1) != 1)
				abort();
			free(cb);
			m->c.passed += n;
			continue;
		case PROXY_TSCAN_OPEN:
			free(cb);
			if (m->scan.phase != PROXY_TSCAN_PH_OPEN ||
			        m->scan.kind == ALLOW_TUNNEL_UNKNOWN)
				abort();
			m->end = RELAYED;
			return;
		case PROXY_TSCAN_BAD:
			free(cb);
			if (why == NULL || why[0] == '\0')
				abort();
			m->end = STOPPED;
			return;
		}
	}
wait:
	if (m->c.eof && m->s.eof)
		m->end = STOPPED; /* client-closed */
}

/* Reads what a side has sent into the proxy's buffer, up to its cap.  1 when anything new (bytes
 * or the end) was read. */
static int read_side(struct side *d, size_t cap)
{
	size_t room = d->passed + cap - d->recv;
	size_t more = d->sent - d->recv;
	size_t take = more < room ? more : room;
	d->recv += take;
	int saw_eof = d->eof_sent && !d->eof && d->recv == d->sent;
	if (saw_eof)
		d->eof = 1;
	return take > 0 || saw_eof;
}

/* One read (or end) callback of a side, as conn.c calls tunnel.c, then the write callbacks'
 * extra step (a second call with nothing new must change nothing). */
static void event(struct sim *m, int server)
{
	if (!read_side(server ? &m->s : &m->c, server ? SERVER_CAP : CLIENT_CAP))
		return;
	if (server && m->s.eof && m->s.recv == m->s.passed &&
	        m->scan.phase == PROXY_TSCAN_PH_FIRST) {
		m->end = STOPPED; /* upstream-closed before anything was judged */
		return;
	}
	step(m);
	step(m);
}

/* After the scan opened, the scanner must stay out of the way. */
static void relayed(struct sim *m)
{
	if (m->scan.phase != PROXY_TSCAN_PH_OPEN)
		abort();
	check_kind(m);
	size_t n = 0;
	char name[PROXY_SNI_NAME_BUF];
	size_t clen = m->c.sent - m->c.passed;
	if (clen > 0) {
		uint8_t *cb = malloc(clen);
		if (cb == NULL)
			abort();
		memcpy(cb, m->c.b + m->c.passed, clen);
		enum proxy_tscan_step st =
		        proxy_tscan_client(&m->scan, cb, clen, 0, &n, name, sizeof name, NULL);
		free(cb);
		if (st != PROXY_TSCAN_PASS || n != clen)
			abort();
		m->c.passed = m->c.sent;
	}
	size_t slen = m->s.sent - m->s.passed;
	if (slen > 0) {
		uint8_t *sb = malloc(slen);
		if (sb == NULL)
			abort();
		memcpy(sb, m->s.b + m->s.passed, slen);
		enum proxy_tscan_step st = proxy_tscan_server(&m->scan, sb, slen, 1, NULL);
		free(sb);
		if (st != PROXY_TSCAN_MORE)
			abort();
		m->s.passed = m->s.sent;
	}
	check_kind(m);
}

static void run(const uint8_t *data, size_t size, struct sim *m, uint8_t *cbuf, uint8_t *sbuf,
        uint8_t *hsbuf)
{
	memset(m, 0, sizeof *m);
	m->c.b = cbuf;
	m->s.b = sbuf;
	m->sh.hs = hsbuf;
	uint8_t flags = data[0];
	proxy_tscan_init(&m->scan, flags & 1);
	const char *host = (flags & 2) ? "192.0.2.10" : "allowed.test";
	if (allow_canon_host(host, strlen(host), &m->dest) != ALLOW_CANON_OK)
		abort();
	size_t i = 1;
	while (i < size) {
		uint8_t h = data[i++];
		struct side *d = (h & 0x80) ? &m->s : &m->c;
		unsigned l = h & 0x7f;
		if (l == 0) {
			d->eof_sent = 1;
		} else {
			size_t len = l <= 95 ? l : (size_t)(l - 95) * 512;
			if (len > size - i)
				len = size - i;
			if (d->eof_sent)
				len = 0; /* nothing after an end */
			memcpy(d->b + d->sent, data + i, len);
			d->sent += len;
			i += len;
		}
		if (m->end == RUNNING)
			event(m, d == &m->s);
		/* bytes passed make room: a side held back by its cap is read again */
		for (int k = 0; k < 8 && m->end == RUNNING; k++) {
			size_t c0 = m->c.recv, s0 = m->s.recv;
			event(m, 0);
			if (m->end == RUNNING)
				event(m, 1);
			if (m->c.recv == c0 && m->s.recv == s0)
				break;
		}
		if (m->end == RELAYED)
			relayed(m);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t *cbuf = malloc(size), *sbuf = malloc(size), *hsbuf = malloc(size);
	struct sim *a = malloc(sizeof *a), *b = malloc(sizeof *b);
	if (cbuf == NULL || sbuf == NULL || hsbuf == NULL || a == NULL || b == NULL)
		abort();
	run(data, size, a, cbuf, sbuf, hsbuf);
	run(data, size, b, cbuf, sbuf, hsbuf);
	if (a->end != b->end || a->ntrace != b->ntrace ||
	        memcmp(a->trace, b->trace, a->ntrace * sizeof a->trace[0]) != 0 ||
	        !same_scan(&a->scan, &b->scan))
		abort();
	free(a);
	free(b);
	free(cbuf);
	free(sbuf);
	free(hsbuf);
	return 0;
}
