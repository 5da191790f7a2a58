/* SOCKS5 client messages (proxy/socks5.h; RFC 1928 sections 3-5, RFC 1929 section 2). */
#include "proxy/socks5.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

static enum proxy_socks5_result bad(const char **why, const char *text)
{
	if (why != NULL)
		*why = text;
	return PROXY_SOCKS5_BAD;
}

enum proxy_socks5_result proxy_socks5_greeting(const uint8_t *buf, size_t len, size_t *used,
        unsigned *methods, const char **why)
{
	*used = 0;
	*methods = 0;
	if (len < 1)
		return PROXY_SOCKS5_MORE;
	if (buf[0] != 5)
		return bad(why, "not a SOCKS5 greeting (version is not 5)");
	if (len < 2)
		return PROXY_SOCKS5_MORE;
	size_t n = buf[1];
	if (n == 0)
		return bad(why, "a SOCKS5 greeting that offers no method");
	if (len < 2 + n)
		return PROXY_SOCKS5_MORE;
	for (size_t i = 0; i < n; i++) {
		if (buf[2 + i] == 0x00)
			*methods |= PROXY_SOCKS5_NOAUTH;
		else if (buf[2 + i] == 0x02)
			*methods |= PROXY_SOCKS5_USERPASS;
	}
	*used = 2 + n;
	return PROXY_SOCKS5_OK;
}

enum proxy_socks5_result proxy_socks5_auth(const uint8_t *buf, size_t len, size_t *used,
        char user[256], size_t *ulen, char pass[256], size_t *plen, const char **why)
{
	*used = 0;
	user[0] = pass[0] = '\0';
	*ulen = *plen = 0;
	if (len < 1)
		return PROXY_SOCKS5_MORE;
	if (buf[0] != 1)
		return bad(why, "not a username/password request (version is not 1)");
	if (len < 2)
		return PROXY_SOCKS5_MORE;
	size_t un = buf[1];
	if (un == 0)
		return bad(why, "an empty SOCKS5 username");
	if (len < 2 + un + 1)
		return PROXY_SOCKS5_MORE;
	size_t pn = buf[2 + un];
	if (pn == 0)
		return bad(why, "an empty SOCKS5 password");
	if (len < 3 + un + pn)
		return PROXY_SOCKS5_MORE;
	if (memchr(buf + 2, 0, un) != NULL || memchr(buf + 3 + un, 0, pn) != NULL)
		return bad(why, "a NUL byte in the SOCKS5 username or password");
	memcpy(user, buf + 2, un);
	user[un] = '\0';
	memcpy(pass, buf + 3 + un, pn);
	pass[pn] = '\0';
	*ulen = un;
	*plen = pn;
	*used = 3 + un + pn;
	return PROXY_SOCKS5_OK;
}

enum proxy_socks5_result proxy_socks5_request(const uint8_t *buf, size_t len, size_t *used,
        struct proxy_socks5_req *r, uint8_t *reply, const char **why)
{
	*used = 0;
	*reply = 0x01;
	memset(r, 0, sizeof *r);
	if (len < 1)
		return PROXY_SOCKS5_MORE;
	if (buf[0] != 5)
		return bad(why, "not a SOCKS5 request (version is not 5)");
	if (len < 4)
		return PROXY_SOCKS5_MORE;
	if (buf[1] < PROXY_SOCKS5_CONNECT || buf[1] > PROXY_SOCKS5_UDP) {
		*reply = 0x07;
		return bad(why, "an unknown SOCKS5 command");
	}
	if (buf[2] != 0)
		return bad(why, "a SOCKS5 request whose reserved byte is not 0");
	r->cmd = buf[1];
	r->atyp = buf[3];
	size_t alen;
	switch (r->atyp) {
	case 1:
		alen = 4;
		break;
	case 4:
		alen = 16;
		break;
	case 3:
		if (len < 5)
			return PROXY_SOCKS5_MORE;
		alen = 1 + (size_t)buf[4];
		if (buf[4] == 0)
			return bad(why, "an empty SOCKS5 domain name");
		break;
	default:
		*reply = 0x08;
		return bad(why, "an unknown SOCKS5 address type");
	}
	if (len < 4 + alen + 2)
		return PROXY_SOCKS5_MORE;
	const uint8_t *a = buf + 4;
	if (r->atyp == 3) {
		size_t n = a[0];
		if (memchr(a + 1, 0, n) != NULL)
			return bad(why, "a NUL byte in the SOCKS5 domain name");
		memcpy(r->host, a + 1, n);
		r->host[n] = '\0';
	} else if (inet_ntop(r->atyp == 1 ? AF_INET : AF_INET6, a, r->host, sizeof r->host) ==
	           NULL) {
		return bad(why, "an address that cannot be written");
	}
	r->port = (uint16_t)(a[alen] << 8 | a[alen + 1]);
	*used = 4 + alen + 2;
	return PROXY_SOCKS5_OK;
}
