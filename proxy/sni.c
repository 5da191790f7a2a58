/* The TLS ClientHello server-name parser (RFC 8446 4.1.2 and 5.1, RFC 6066 3).
 *
 * The handshake message is gathered from the records that carry it into a buffer on the stack
 * (at most PROXY_SNI_HELLO_MAX + 4 bytes) and read only once it is complete; the record
 * boundaries are remembered so that a server_name extension cut by one can be refused (a peer
 * that splits the name may be aiming at a filter that reads one record at a time). */
#include "proxy/sni.h"

#include <string.h>

#define TLS_CONTENT_HANDSHAKE 22
#define TLS_HS_CLIENT_HELLO 1
#define TLS_EXT_SERVER_NAME 0
#define TLS_EXT_ECH 0xfe0d /* encrypted_client_hello (RFC 9849) */
#define TLS_NAME_TYPE_HOST 0
#define TLS_RECORD_MAX 16384 /* 2^14, the largest plaintext record */
#define TLS_RECORD_HDR 5
#define TLS_HS_HDR 4

struct hello {
	uint8_t msg[TLS_HS_HDR + PROXY_SNI_HELLO_MAX]; /* the handshake message, header first */
	size_t len;                                    /* its length, header included */
	size_t bound[PROXY_SNI_RECORDS_MAX];           /* msg offsets where a later record began */
	size_t nbound;                                 /* entries in bound */
};

/* A big-endian 16-bit field. */
static unsigned be16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

/* Sets *why (when asked for) and returns r. */
static enum proxy_sni_result fail(const char **why, enum proxy_sni_result r, const char *text)
{
	if (why != NULL)
		*why = text;
	return r;
}

/* What may appear in a name: enough for any host name and the odd underscore in real ones;
 * anything else (NUL, space, '/', ':', '%', non-ASCII) says the hello is not what it seems. */
static int name_byte_ok(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_';
}

/* Reads the body of a server_name extension, d[0..n).  Sets *name_off and *name_len (offsets
 * into d) on success.  Returns FOUND or BAD. */
static enum proxy_sni_result parse_server_name(
        const uint8_t *d, size_t n, size_t *name_off, size_t *name_len, const char **why)
{
	if (n < 2)
		return fail(why, PROXY_SNI_BAD, "server_name extension too short");
	size_t list = be16(d);
	if (list != n - 2)
		return fail(
		        why, PROXY_SNI_BAD, "server_name list length does not match its extension");
	if (list < 3)
		return fail(why, PROXY_SNI_BAD, "server_name list is empty or cut");
	if (d[2] != TLS_NAME_TYPE_HOST)
		return fail(why, PROXY_SNI_BAD, "server name type is not host_name");
	size_t nlen = be16(d + 3);
	if (3 + nlen > list)
		return fail(why, PROXY_SNI_BAD, "server name runs past its list");
	if (3 + nlen < list)
		return fail(why, PROXY_SNI_BAD, "more than one server name in the list");
	if (nlen == 0)
		return fail(why, PROXY_SNI_BAD, "empty server name");
	for (size_t i = 0; i < nlen; i++)
		if (!name_byte_ok(d[5 + i]))
			return fail(why, PROXY_SNI_BAD,
			        "server name has a byte a host name cannot contain");
	*name_off = 5;
	*name_len = nlen;
	return PROXY_SNI_FOUND;
}

/* Reads the complete ClientHello h->msg[0..h->len). */
static enum proxy_sni_result parse_hello(
        const struct hello *h, char *name, size_t namecap, unsigned *flags, const char **why)
{
	const uint8_t *m = h->msg;
	size_t end = h->len;
	size_t p = TLS_HS_HDR;

	/* legacy_version, random */
	if (end - p < 2 + 32)
		return fail(why, PROXY_SNI_BAD, "ClientHello cut before its random");
	if (m[p] != 3)
		return fail(why, PROXY_SNI_BAD, "ClientHello version implausible");
	p += 2 + 32;

	/* legacy_session_id */
	if (end - p < 1 || m[p] > 32 || end - p - 1 < m[p])
		return fail(why, PROXY_SNI_BAD, "session id longer than 32 bytes or cut");
	p += 1 + (size_t)m[p];

	/* cipher_suites */
	if (end - p < 2)
		return fail(why, PROXY_SNI_BAD, "ClientHello cut before its cipher suites");
	size_t cs = be16(m + p);
	if (cs < 2 || cs % 2 != 0 || end - p - 2 < cs)
		return fail(why, PROXY_SNI_BAD, "cipher suite list malformed or cut");
	p += 2 + cs;

	/* legacy_compression_methods */
	if (end - p < 1 || m[p] < 1 || end - p - 1 < m[p])
		return fail(why, PROXY_SNI_BAD, "compression method list empty or cut");
	p += 1 + (size_t)m[p];

	if (p == end)
		return fail(why, PROXY_SNI_NONE, "ClientHello has no extensions");
	if (end - p < 2 || be16(m + p) != end - p - 2)
		return fail(
		        why, PROXY_SNI_BAD, "extension list length does not match the ClientHello");
	p += 2;

	size_t sni_ext = 0, sni_end = 0; /* the whole server_name extension, header included */
	size_t name_off = 0, name_len = 0;
	int found = 0;
	while (p < end) {
		if (end - p < 4)
			return fail(why, PROXY_SNI_BAD, "extension header cut");
		unsigned type = be16(m + p);
		size_t elen = be16(m + p + 2);
		if (end - p - 4 < elen)
			return fail(why, PROXY_SNI_BAD, "extension runs past the extension list");
		if (type == TLS_EXT_ECH)
			*flags |= PROXY_SNI_F_ECH;
		if (type == TLS_EXT_SERVER_NAME) {
			if (found)
				return fail(why, PROXY_SNI_BAD, "two server_name extensions");
			size_t off, nlen;
			enum proxy_sni_result r =
			        parse_server_name(m + p + 4, elen, &off, &nlen, why);
			if (r != PROXY_SNI_FOUND)
				return r;
			found = 1;
			sni_ext = p;
			sni_end = p + 4 + elen;
			name_off = p + 4 + off;
			name_len = nlen;
		}
		p += 4 + elen;
	}
	if (!found)
		return fail(why, PROXY_SNI_NONE, "ClientHello has no server_name");
	for (size_t i = 0; i < h->nbound; i++)
		if (h->bound[i] > sni_ext && h->bound[i] < sni_end)
			return fail(why, PROXY_SNI_BAD, "server name split across records");
	if (name_len + 1 > namecap)
		return fail(why, PROXY_SNI_BAD, "server name too long");
	memcpy(name, m + name_off, name_len);
	name[name_len] = '\0';
	if (why != NULL)
		*why = NULL;
	return PROXY_SNI_FOUND;
}

static enum proxy_sni_result read_hello(const uint8_t *buf, size_t len, char *name,
        size_t namecap, size_t *used, unsigned *flags, const char **why);

enum proxy_sni_result proxy_sni_parse(
        const uint8_t *buf, size_t len, char *name, size_t namecap, const char **why)
{
	size_t used;
	return proxy_sni_hello(buf, len, name, namecap, &used, NULL, why);
}

enum proxy_sni_result proxy_sni_hello(const uint8_t *buf, size_t len, char *name, size_t namecap,
        size_t *used, unsigned *flags, const char **why)
{
	unsigned seen = 0;
	enum proxy_sni_result r = read_hello(buf, len, name, namecap, used, &seen, why);
	if (flags != NULL)
		*flags = r == PROXY_SNI_FOUND || r == PROXY_SNI_NONE ? seen : 0;
	return r;
}

static enum proxy_sni_result read_hello(const uint8_t *buf, size_t len, char *name,
        size_t namecap, size_t *used, unsigned *flags, const char **why)
{
	struct hello h;
	size_t off = 0;     /* start of the current record in buf */
	size_t payload = 0; /* handshake bytes seen in all records so far */
	size_t total = 0;   /* the message length with its header, once known */
	unsigned nrec = 0;

	if (why != NULL)
		*why = NULL;
	if (name != NULL && namecap > 0)
		name[0] = '\0';
	*used = 0;
	h.len = 0;
	h.nbound = 0;

	for (;;) {
		size_t left = len - off;
		if (left == 0)
			return PROXY_SNI_NEED_MORE;
		const uint8_t *r = buf + off;
		if (r[0] != TLS_CONTENT_HANDSHAKE)
			return off == 0 ? fail(why, PROXY_SNI_NOT_TLS, "not a TLS handshake record")
			                : fail(why, PROXY_SNI_BAD,
			                          "another record type before the ClientHello "
			                          "ended");
		if (left >= 2 && r[1] != 3)
			return off == 0 ? fail(why, PROXY_SNI_NOT_TLS, "not a TLS record version")
			                : fail(why, PROXY_SNI_BAD, "record version implausible");
		if (left >= 3 && r[2] > 4)
			return fail(why, PROXY_SNI_BAD, "record version implausible");
		if (left < TLS_RECORD_HDR)
			return PROXY_SNI_NEED_MORE;
		size_t rlen = be16(r + 3);
		if (rlen == 0)
			return fail(why, PROXY_SNI_BAD, "empty handshake record");
		if (rlen > TLS_RECORD_MAX)
			return fail(why, PROXY_SNI_BAD, "record longer than 16384 bytes");
		if (++nrec > PROXY_SNI_RECORDS_MAX)
			return fail(why, PROXY_SNI_BAD, "ClientHello spread over too many records");
		if (nrec > 1)
			h.bound[h.nbound++] = h.len;

		size_t avail = left - TLS_RECORD_HDR < rlen ? left - TLS_RECORD_HDR : rlen;
		size_t room = sizeof h.msg - h.len;
		size_t take = avail < room ? avail : room;
		memcpy(h.msg + h.len, r + TLS_RECORD_HDR, take);
		h.len += take;
		payload += avail;

		if (h.len >= 1 && h.msg[0] != TLS_HS_CLIENT_HELLO)
			return fail(why, PROXY_SNI_BAD, "handshake message is not a ClientHello");
		if (h.len >= TLS_HS_HDR && total == 0) {
			size_t body = (size_t)h.msg[1] << 16 | (size_t)h.msg[2] << 8 | h.msg[3];
			if (body > PROXY_SNI_HELLO_MAX)
				return fail(
				        why, PROXY_SNI_BAD, "ClientHello longer than 16384 bytes");
			total = TLS_HS_HDR + body;
		}
		/* The client sends nothing after its hello until the server answers, except in
		 * later records; a record that holds more than the rest of the hello means the
		 * lengths lie.  Judged on the record's length, so it is known before its bytes. */
		if (total != 0 && payload - avail + rlen > total)
			return fail(why, PROXY_SNI_BAD,
			        "handshake lengths inconsistent with the record");
		if (avail < rlen)
			return PROXY_SNI_NEED_MORE;
		if (total != 0 && payload == total) {
			h.len = total;
			*used = off + TLS_RECORD_HDR + rlen;
			return parse_hello(&h, name, namecap, flags, why);
		}
		off += TLS_RECORD_HDR + rlen;
	}
}

const char *proxy_sni_result_name(enum proxy_sni_result r)
{
	switch (r) {
	case PROXY_SNI_NEED_MORE:
		return "need-more";
	case PROXY_SNI_FOUND:
		return "found";
	case PROXY_SNI_NONE:
		return "none";
	case PROXY_SNI_NOT_TLS:
		return "not-tls";
	case PROXY_SNI_BAD:
		return "bad";
	}
	return "unknown";
}
