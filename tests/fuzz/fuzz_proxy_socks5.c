/* Fuzzes the SOCKS5 client-message parsers (proxy/socks5.c) the way proxy/front_socks5.c drives
 * them: a greeting, then (when it offered username/password) an RFC 1929 auth, then a request,
 * each parsed from what has arrived so far and drained once it is whole.
 *
 * Input: three bytes of split points, then the client's bytes.  Each message is first fed cut
 * where its split byte says, then with everything that arrived (up to the front door's cap), so
 * every message is also seen cut at every place.  Properties, checked with abort():
 * - OK never consumes more than it was given, and at the front door's cap nothing is MORE;
 * - every prefix of an OK message is MORE (never BAD): fed byte by byte, MORE until exactly the
 *   OK length;
 * - the same bytes give the same result and the same fields;
 * - auth values and a request's host are NUL-terminated, hold no NUL, and are the wire bytes;
 *   a request's port is its last two bytes; an IPv4/IPv6 host parses back (inet_pton) to the
 *   wire address;
 * - BAD sets why (non-empty); a request's BAD sets a reply code in {0x01, 0x07, 0x08}. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/socks5.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What front_socks5.c hands each parser at most (evbuffer_pullup of the first N bytes). */
#define CAP_GREETING 260
#define CAP_AUTH 520
#define CAP_REQUEST 262

enum msg { M_GREETING, M_AUTH, M_REQUEST };

/* Every prefix of an OK message of used bytes, each at the end of an exact-size buffer (so a read
 * past the prefix is caught by ASan), must be MORE. */
static void check_prefixes(const uint8_t *b, size_t used, enum msg m)
{
	uint8_t *t = malloc(used);
	if (t == NULL)
		return;
	for (size_t i = 0; i < used; i++) {
		const uint8_t *p = t + used - i;
		memcpy(t + used - i, b, i);
		size_t u;
		unsigned meth;
		char user[256], pass[256];
		size_t ulen, plen;
		struct proxy_socks5_req r;
		uint8_t reply;
		enum proxy_socks5_result res = PROXY_SOCKS5_BAD;
		switch (m) {
		case M_GREETING:
			res = proxy_socks5_greeting(p, i, &u, &meth, NULL);
			break;
		case M_AUTH:
			res = proxy_socks5_auth(p, i, &u, user, &ulen, pass, &plen, NULL);
			break;
		case M_REQUEST:
			res = proxy_socks5_request(p, i, &u, &r, &reply, NULL);
			break;
		}
		if (res != PROXY_SOCKS5_MORE || u != 0)
			abort();
	}
	free(t);
}

static void check_why(enum proxy_socks5_result r, const char *why)
{
	if (r == PROXY_SOCKS5_BAD && (why == NULL || why[0] == '\0'))
		abort();
	if (r != PROXY_SOCKS5_MORE && r != PROXY_SOCKS5_OK && r != PROXY_SOCKS5_BAD)
		abort();
}

/* ---- greeting ---- */

static enum proxy_socks5_result greeting(
        const uint8_t *b, size_t len, size_t *used, unsigned *methods)
{
	const char *why = NULL;
	enum proxy_socks5_result r = proxy_socks5_greeting(b, len, used, methods, &why);
	check_why(r, why);
	if (r == PROXY_SOCKS5_OK) {
		if (*used > len || *used < 3 || *used != 2 + (size_t)b[1])
			abort();
		if (*methods & ~(PROXY_SOCKS5_NOAUTH | PROXY_SOCKS5_USERPASS))
			abort();
	} else if (*used != 0) {
		abort();
	}
	size_t used2;
	unsigned methods2;
	if (proxy_socks5_greeting(b, len, &used2, &methods2, NULL) != r || used2 != *used ||
	        methods2 != *methods)
		abort();
	if (r == PROXY_SOCKS5_OK)
		check_prefixes(b, *used, M_GREETING);
	return r;
}

/* ---- auth ---- */

static enum proxy_socks5_result auth(const uint8_t *b, size_t len, size_t *used)
{
	char user[256], pass[256], user2[256], pass2[256];
	size_t ulen, plen, ulen2, plen2, used2;
	const char *why = NULL;
	enum proxy_socks5_result r =
	        proxy_socks5_auth(b, len, used, user, &ulen, pass, &plen, &why);
	check_why(r, why);
	if (r == PROXY_SOCKS5_OK) {
		if (*used > len || *used != 3 + ulen + plen || ulen == 0 || plen == 0)
			abort();
		if (ulen != b[1] || plen != b[2 + ulen])
			abort();
		if (memchr(user, 0, 256) == NULL || strlen(user) != ulen ||
		        memcmp(user, b + 2, ulen) != 0)
			abort();
		if (memchr(pass, 0, 256) == NULL || strlen(pass) != plen ||
		        memcmp(pass, b + 3 + ulen, plen) != 0)
			abort();
	} else if (*used != 0) {
		abort();
	}
	if (proxy_socks5_auth(b, len, &used2, user2, &ulen2, pass2, &plen2, NULL) != r ||
	        used2 != *used || ulen2 != ulen || plen2 != plen)
		abort();
	if (r == PROXY_SOCKS5_OK) {
		if (memcmp(user, user2, ulen + 1) != 0 || memcmp(pass, pass2, plen + 1) != 0)
			abort();
		check_prefixes(b, *used, M_AUTH);
	}
	return r;
}

/* ---- request ---- */

static void check_host(const struct proxy_socks5_req *r, const uint8_t *b, size_t used)
{
	if (memchr(r->host, 0, sizeof r->host) == NULL)
		abort();
	size_t hlen = strlen(r->host);
	switch (r->atyp) {
	case 3:
		/* the name as sent: no NUL inside, so its length is the wire length */
		if (used != 4 + 1 + (size_t)b[4] + 2 || hlen != b[4] || hlen == 0 ||
		        memcmp(r->host, b + 5, hlen) != 0)
			abort();
		break;
	case 1: {
		uint8_t a[4];
		if (used != 4 + 4 + 2 || inet_pton(AF_INET, r->host, a) != 1 ||
		        memcmp(a, b + 4, 4) != 0)
			abort();
		break;
	}
	case 4: {
		uint8_t a[16];
		if (used != 4 + 16 + 2 || inet_pton(AF_INET6, r->host, a) != 1 ||
		        memcmp(a, b + 4, 16) != 0)
			abort();
		break;
	}
	default:
		abort();
	}
}

static enum proxy_socks5_result request(const uint8_t *b, size_t len, size_t *used)
{
	struct proxy_socks5_req r, r2;
	uint8_t reply = 0xee, reply2 = 0xee;
	size_t used2;
	const char *why = NULL;
	enum proxy_socks5_result res = proxy_socks5_request(b, len, used, &r, &reply, &why);
	check_why(res, why);
	if (res == PROXY_SOCKS5_BAD && reply != 0x01 && reply != 0x07 && reply != 0x08)
		abort();
	if (res == PROXY_SOCKS5_OK) {
		if (*used > len || *used < 4 + 2 + 2) /* a one-byte name */
			abort();
		if (r.cmd < PROXY_SOCKS5_CONNECT || r.cmd > PROXY_SOCKS5_UDP || r.cmd != b[1] ||
		        b[0] != 5 || b[2] != 0 || r.atyp != b[3])
			abort();
		if (r.port != (uint16_t)(b[*used - 2] << 8 | b[*used - 1]))
			abort();
		check_host(&r, b, *used);
	} else if (*used != 0) {
		abort();
	}
	if (proxy_socks5_request(b, len, &used2, &r2, &reply2, NULL) != res || used2 != *used ||
	        reply2 != reply)
		abort();
	if (res == PROXY_SOCKS5_OK) {
		if (r2.cmd != r.cmd || r2.atyp != r.atyp || r2.port != r.port ||
		        strcmp(r2.host, r.host) != 0)
			abort();
		check_prefixes(b, *used, M_REQUEST);
	}
	return res;
}

/* ---- the drive ---- */

/* One message from the stream at *off: first cut at split % (what is left + 1), then whole up to
 * cap.  Advances *off past it.  Returns the result of the last call. */
static enum proxy_socks5_result one(
        enum msg m, const uint8_t *s, size_t n, size_t *off, uint8_t split, unsigned *methods)
{
	static const size_t caps[] = {CAP_GREETING, CAP_AUTH, CAP_REQUEST};
	size_t cap = caps[m];
	size_t left = n - *off;
	size_t avail = left < cap ? left : cap;
	size_t lens[2] = {(size_t)split % (avail + 1), avail};
	enum proxy_socks5_result r = PROXY_SOCKS5_MORE;
	for (int k = 0; k < 2; k++) {
		/* an exact-size copy: a read past what was given is caught by ASan */
		uint8_t *b = malloc(lens[k] ? lens[k] : 1);
		if (b == NULL)
			return PROXY_SOCKS5_BAD;
		memcpy(b, s + *off, lens[k]);
		size_t used = 0;
		switch (m) {
		case M_GREETING:
			r = greeting(b, lens[k], &used, methods);
			break;
		case M_AUTH:
			r = auth(b, lens[k], &used);
			break;
		case M_REQUEST:
			r = request(b, lens[k], &used);
			break;
		}
		free(b);
		/* the longest message fits in the front door's cap, so a full cap is never MORE */
		if (r == PROXY_SOCKS5_MORE && lens[k] == cap)
			abort();
		if (r == PROXY_SOCKS5_OK) {
			*off += used;
			return r;
		}
		if (r == PROXY_SOCKS5_BAD)
			return r;
	}
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	const uint8_t *split = data;
	const uint8_t *s = data + 3;
	size_t n = size - 3, off = 0;
	unsigned methods = 0;
	if (one(M_GREETING, s, n, &off, split[0], &methods) != PROXY_SOCKS5_OK)
		return 0;
	if ((methods & PROXY_SOCKS5_USERPASS) &&
	        one(M_AUTH, s, n, &off, split[1], &methods) != PROXY_SOCKS5_OK)
		return 0;
	one(M_REQUEST, s, n, &off, split[2], &methods);
	return 0;
}
