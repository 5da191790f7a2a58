/* egressd connect: standard input and output through a CONNECT or SOCKS5 tunnel (connect.h).
 *
 * A client, so plain blocking I/O: connect to the proxy, ask for the tunnel, then relay with
 * poll() until the far end closes.  The answer's head is parsed with http_parser, the proxy URL
 * with http_parser_parse_url, credentials are encoded with OpenSSL's base64. */
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <http_parser.h>
#include <openssl/evp.h>

#include "proxy/connect.h"

#define HEAD_MAX 16384 /* the longest answer head to a CONNECT that is read */
#define BODY_MAX 2048  /* the most of a refusal's body that is kept */
#define RELAY_BUF 65536

enum proxy_kind {
	PK_HTTP,   /* CONNECT */
	PK_SOCKS5, /* RFC 1928 */
};

struct proxy_url {
	enum proxy_kind kind;
	char host[256]; /* without brackets */
	char port[8];
	char user[256]; /* percent-decoded; empty: no credentials */
	char pass[256];
	int has_auth;
};

static void usage(void)
{
	fputs("usage: egressd connect [--proxy URL] HOST PORT\n"
	      "  URL: http://[USER:TOKEN@]HOST[:PORT] or socks5h://[USER:TOKEN@]HOST[:PORT]\n"
	      "       (default: $HTTPS_PROXY, $https_proxy, $ALL_PROXY, $all_proxy)\n",
	        stderr);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Copies in[0..len) to out (cap bytes with its NUL) undoing %XX escapes; -1 when it does not
 * fit or an escape is broken. */
static int pct_decode(const char *in, size_t len, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		int c = (unsigned char)in[i];
		if (c == '%') {
			int hi = i + 2 < len ? hexval(in[i + 1]) : -1;
			int lo = i + 2 < len ? hexval(in[i + 2]) : -1;
			if (hi < 0 || lo < 0)
				return -1;
			c = hi * 16 + lo;
			i += 2;
		}
		if (o + 1 >= cap || c == 0)
			return -1;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return 0;
}

/* Reads a proxy URL; prints why and returns -1 when it is not one egressd connect can use. */
static int parse_proxy_url(const char *url, struct proxy_url *p)
{
	memset(p, 0, sizeof *p);
	const char *rest;
	if (strncasecmp(url, "http://", 7) == 0) {
		p->kind = PK_HTTP;
		rest = url + 7;
	} else if (strncasecmp(url, "socks5h://", 10) == 0) {
		p->kind = PK_SOCKS5;
		rest = url + 10;
	} else if (strncasecmp(url, "socks5://", 9) == 0) {
		p->kind = PK_SOCKS5; /* the proxy resolves the name in either case */
		rest = url + 9;
	} else {
		fprintf(stderr,
		        "egressd: connect: proxy URL \"%s\": the scheme must be http:// or "
		        "socks5h://\n",
		        url);
		return -1;
	}
	/* http_parser_parse_url takes only letters in a scheme: parse the rest as http://. */
	char buf[1024];
	int n = snprintf(buf, sizeof buf, "http://%s", rest);
	struct http_parser_url u;
	http_parser_url_init(&u);
	if (n < 0 || (size_t)n >= sizeof buf || http_parser_parse_url(buf, (size_t)n, 0, &u) != 0 ||
	        !(u.field_set & (1 << UF_HOST)) || u.field_data[UF_HOST].len >= sizeof p->host) {
		fprintf(stderr, "egressd: connect: proxy URL \"%s\" cannot be read\n", url);
		return -1;
	}
	memcpy(p->host, buf + u.field_data[UF_HOST].off, u.field_data[UF_HOST].len);
	p->host[u.field_data[UF_HOST].len] = '\0';
	snprintf(p->port, sizeof p->port, "%u",
	        (u.field_set & (1 << UF_PORT)) ? u.port : (p->kind == PK_HTTP ? 80u : 1080u));
	if (u.field_set & (1 << UF_USERINFO)) {
		const char *ui = buf + u.field_data[UF_USERINFO].off;
		size_t ulen = u.field_data[UF_USERINFO].len;
		const char *colon = memchr(ui, ':', ulen);
		size_t nlen = colon != NULL ? (size_t)(colon - ui) : ulen;
		if (pct_decode(ui, nlen, p->user, sizeof p->user) == -1 ||
		        (colon != NULL && pct_decode(colon + 1, ulen - nlen - 1, p->pass,
		                                  sizeof p->pass) == -1)) {
			fprintf(stderr, "egressd: connect: proxy URL \"%s\": bad credentials\n",
			        url);
			return -1;
		}
		p->has_auth = 1;
	}
	return 0;
}

static int dial(const struct proxy_url *p)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG};
	struct addrinfo *res;
	int rc = getaddrinfo(p->host, p->port, &hints, &res);
	if (rc != 0) {
		fprintf(stderr, "egressd: connect: proxy %s:%s: %s\n", p->host, p->port,
		        gai_strerror(rc));
		return -1;
	}
	int fd = -1, err = 0;
	for (struct addrinfo *a = res; a != NULL && fd == -1; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd == -1) {
			err = errno;
			continue;
		}
		if (connect(fd, a->ai_addr, a->ai_addrlen) == -1) {
			err = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	if (fd == -1)
		fprintf(stderr, "egressd: connect: cannot reach the proxy %s:%s: %s\n", p->host,
		        p->port, strerror(err));
	return fd;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *b = buf;
	while (len > 0) {
		ssize_t n = write(fd, b, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_exact(int fd, void *buf, size_t len)
{
	char *b = buf;
	while (len > 0) {
		ssize_t n = read(fd, b, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* HTTP CONNECT. */

struct answer {
	int done;                /* the head (2xx) or the whole refusal was read */
	int in_reason;           /* the header being read is X-Egressd-Reason */
	char reason[128];        /* X-Egressd-Reason */
	char body[BODY_MAX + 1]; /* the refusal's body, cut at BODY_MAX */
	size_t body_len;
};

static int on_header_field(http_parser *hp, const char *at, size_t len)
{
	struct answer *a = hp->data;
	a->in_reason = len == 16 && strncasecmp(at, "X-Egressd-Reason", 16) == 0;
	return 0;
}

static int on_header_value(http_parser *hp, const char *at, size_t len)
{
	struct answer *a = hp->data;
	if (a->in_reason)
		snprintf(a->reason, sizeof a->reason, "%.*s", (int)len, at);
	return 0;
}

/* A 2xx ends the head: what follows is the tunnel (2 tells http_parser so). */
static int on_headers_complete(http_parser *hp)
{
	struct answer *a = hp->data;
	if (hp->status_code >= 200 && hp->status_code < 300) {
		a->done = 1;
		return 2;
	}
	return 0;
}

static int on_body(http_parser *hp, const char *at, size_t len)
{
	struct answer *a = hp->data;
	size_t take = len < BODY_MAX - a->body_len ? len : BODY_MAX - a->body_len;
	memcpy(a->body + a->body_len, at, take);
	a->body_len += take;
	return 0;
}

static int on_message_complete(http_parser *hp)
{
	struct answer *a = hp->data;
	a->done = 1;
	return 0;
}

/* The target as an authority: [v6]:port for an IPv6 literal. */
static void authority(const char *host, const char *port, char *out, size_t cap)
{
	if (strchr(host, ':') != NULL)
		snprintf(out, cap, "[%s]:%s", host, port);
	else
		snprintf(out, cap, "%s:%s", host, port);
}

/* Sends the CONNECT and reads the answer.  Returns 0 with the tunnel open (bytes that came
 * after the head in *early, *nearly), 1 when refused (reason printed), -1 on an error. */
static int http_tunnel(int fd, const struct proxy_url *p, const char *host, const char *port,
        char *early, size_t *nearly)
{
	char target[300], req[2048], auth[700] = "";
	authority(host, port, target, sizeof target);
	if (p->has_auth) {
		char cred[520];
		unsigned char b64[700];
		int cl = snprintf(cred, sizeof cred, "%s:%s", p->user, p->pass);
		if (cl < 0 || (size_t)cl >= sizeof cred || (size_t)cl * 4 / 3 + 4 >= sizeof b64)
			return -1;
		EVP_EncodeBlock(b64, (const unsigned char *)cred, cl);
		snprintf(auth, sizeof auth, "Proxy-Authorization: Basic %s\r\n", b64);
	}
	int rl = snprintf(
	        req, sizeof req, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", target, target, auth);
	if (rl < 0 || (size_t)rl >= sizeof req || write_all(fd, req, (size_t)rl) == -1) {
		fprintf(stderr, "egressd: connect: cannot send the CONNECT: %s\n", strerror(errno));
		return -1;
	}
	http_parser_settings st;
	http_parser_settings_init(&st);
	st.on_header_field = on_header_field;
	st.on_header_value = on_header_value;
	st.on_headers_complete = on_headers_complete;
	st.on_body = on_body;
	st.on_message_complete = on_message_complete;
	struct answer a;
	memset(&a, 0, sizeof a);
	http_parser hp;
	http_parser_init(&hp, HTTP_RESPONSE);
	hp.data = &a;
	char buf[4096];
	size_t total = 0;
	*nearly = 0;
	while (!a.done) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			fprintf(stderr, "egressd: connect: reading the proxy's answer: %s\n",
			        strerror(errno));
			return -1;
		}
		/* EOF ends a body that runs to the close (http_parser is told with a 0-length
		 * call). */
		size_t used = http_parser_execute(&hp, &st, buf, (size_t)n);
		if (n == 0)
			break;
		if (HTTP_PARSER_ERRNO(&hp) != HPE_OK) {
			fprintf(stderr, "egressd: connect: the proxy's answer is not HTTP: %s\n",
			        http_errno_description(HTTP_PARSER_ERRNO(&hp)));
			return -1;
		}
		total += (size_t)n;
		if (a.done && hp.status_code >= 200 && hp.status_code < 300) {
			*nearly = (size_t)n - used; /* the tunnel's first bytes */
			memcpy(early, buf + used, *nearly);
			return 0;
		}
		if (total > HEAD_MAX + BODY_MAX && a.body_len == 0) {
			fprintf(stderr, "egressd: connect: the proxy's answer head is too long\n");
			return -1;
		}
		if (a.body_len >= BODY_MAX)
			break;
	}
	if (hp.status_code == 0) {
		fprintf(stderr, "egressd: connect: the proxy closed the connection without an "
		                "answer\n");
		return -1;
	}
	fprintf(stderr, "egressd: connect: the proxy refused %s: %u %s%s%s%s\n", target,
	        hp.status_code, http_status_str((enum http_status)hp.status_code),
	        a.reason[0] ? " (X-Egressd-Reason: " : "", a.reason, a.reason[0] ? ")" : "");
	a.body[a.body_len] = '\0';
	char *line = a.body + strspn(a.body, "\r\n");
	line[strcspn(line, "\r\n")] = '\0';
	if (line[0])
		fprintf(stderr, "egressd: connect: %s\n", line);
	return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* SOCKS5 (RFC 1928, RFC 1929). */

static const char *socks_reply_text(unsigned rep)
{
	static const char *const text[] = {
	        "succeeded",
	        "general SOCKS server failure",
	        "connection not allowed by ruleset",
	        "network unreachable",
	        "host unreachable",
	        "connection refused",
	        "TTL expired",
	        "command not supported",
	        "address type not supported",
	};
	return rep < sizeof text / sizeof text[0] ? text[rep] : "unassigned reply code";
}

static int socks_tunnel(int fd, const struct proxy_url *p, const char *host, const char *port)
{
	/* The greeting: no authentication, or username/password when the URL has them. */
	unsigned char g[4] = {5, 1, 0x00, 0};
	size_t glen = 3;
	if (p->has_auth) {
		g[1] = 1;
		g[2] = 0x02;
	}
	unsigned char r[2];
	if (write_all(fd, g, glen) == -1 || read_exact(fd, r, 2) == -1) {
		fprintf(stderr, "egressd: connect: the SOCKS5 proxy closed during the greeting\n");
		return -1;
	}
	if (r[0] != 5) {
		fprintf(stderr, "egressd: connect: the proxy does not speak SOCKS5 (version %u)\n",
		        r[0]);
		return -1;
	}
	if (r[1] == 0xff || r[1] != g[2]) {
		fprintf(stderr,
		        "egressd: connect: the SOCKS5 proxy refused: it accepts none of the "
		        "offered authentication methods (%s)\n",
		        p->has_auth ? "username/password" : "none; give USER:TOKEN@ in the URL");
		return 1;
	}
	if (p->has_auth) {
		size_t ul = strlen(p->user), pl = strlen(p->pass);
		if (ul > 255 || pl > 255)
			return -1;
		unsigned char a[3 + 255 + 255];
		size_t n = 0;
		a[n++] = 1;
		a[n++] = (unsigned char)ul;
		memcpy(a + n, p->user, ul);
		n += ul;
		a[n++] = (unsigned char)pl;
		memcpy(a + n, p->pass, pl);
		n += pl;
		if (write_all(fd, a, n) == -1 || read_exact(fd, r, 2) == -1) {
			fprintf(stderr, "egressd: connect: the SOCKS5 proxy closed during "
			                "authentication\n");
			return -1;
		}
		if (r[1] != 0) {
			fprintf(stderr,
			        "egressd: connect: the SOCKS5 proxy refused the credentials "
			        "(status %u)\n",
			        r[1]);
			return 1;
		}
	}
	/* CONNECT, with an address literal as such and anything else as a name. */
	unsigned char q[4 + 1 + 255 + 2];
	size_t n = 0;
	q[n++] = 5;
	q[n++] = 1;
	q[n++] = 0;
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, host, &a4) == 1) {
		q[n++] = 1;
		memcpy(q + n, &a4, 4);
		n += 4;
	} else if (inet_pton(AF_INET6, host, &a6) == 1) {
		q[n++] = 4;
		memcpy(q + n, &a6, 16);
		n += 16;
	} else {
		size_t hl = strlen(host);
		if (hl == 0 || hl > 255) {
			fprintf(stderr, "egressd: connect: the host name is too long for SOCKS5\n");
			return -1;
		}
		q[n++] = 3;
		q[n++] = (unsigned char)hl;
		memcpy(q + n, host, hl);
		n += hl;
	}
	unsigned long pn = strtoul(port, NULL, 10);
	q[n++] = (unsigned char)(pn >> 8);
	q[n++] = (unsigned char)(pn & 0xff);
	unsigned char rep[4];
	if (write_all(fd, q, n) == -1 || read_exact(fd, rep, 4) == -1) {
		fprintf(stderr, "egressd: connect: the SOCKS5 proxy closed before its reply\n");
		return -1;
	}
	char target[300];
	authority(host, port, target, sizeof target);
	if (rep[1] != 0) {
		fprintf(stderr, "egressd: connect: the proxy refused %s: SOCKS5 reply %u (%s)\n",
		        target, rep[1], socks_reply_text(rep[1]));
		return 1;
	}
	/* The bound address that ends the reply: its length follows from its type. */
	unsigned char bnd[255 + 2];
	size_t blen;
	if (rep[3] == 1) {
		blen = 4 + 2;
	} else if (rep[3] == 4) {
		blen = 16 + 2;
	} else if (rep[3] == 3) {
		unsigned char l;
		if (read_exact(fd, &l, 1) == -1)
			return -1;
		blen = (size_t)l + 2;
	} else {
		fprintf(stderr,
		        "egressd: connect: the SOCKS5 reply has an unknown address type %u\n",
		        rep[3]);
		return -1;
	}
	if (read_exact(fd, bnd, blen) == -1) {
		fprintf(stderr, "egressd: connect: the SOCKS5 proxy closed inside its reply\n");
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */

/* Standard input to the tunnel, the tunnel to standard output, until the tunnel's far end
 * closes (standard input's end only half-closes it).  0, or 1 when the tunnel broke. */
static int relay(int fd)
{
	char *buf = malloc(RELAY_BUF);
	if (buf == NULL)
		return 1;
	int in_open = 1, rc = 0;
	for (;;) {
		struct pollfd p[2] = {{fd, POLLIN, 0}, {0, in_open ? POLLIN : 0, 0}};
		if (poll(p, in_open ? 2 : 1, -1) == -1) {
			if (errno == EINTR)
				continue;
			rc = 1;
			break;
		}
		if (p[0].revents) {
			ssize_t n = read(fd, buf, RELAY_BUF);
			if (n == -1 && errno == EINTR)
				continue;
			if (n == 0)
				break; /* the far end is done */
			if (n == -1) {
				fprintf(stderr, "egressd: connect: tunnel: %s\n", strerror(errno));
				rc = 1;
				break;
			}
			if (write_all(1, buf, (size_t)n) == -1)
				break; /* nobody reads any more */
		}
		if (in_open && p[1].revents) {
			ssize_t n = read(0, buf, RELAY_BUF);
			if (n == -1 && errno == EINTR)
				continue;
			if (n <= 0) {
				in_open = 0;
				shutdown(fd, SHUT_WR);
				continue;
			}
			if (write_all(fd, buf, (size_t)n) == -1) {
				fprintf(stderr, "egressd: connect: tunnel: %s\n", strerror(errno));
				rc = 1;
				break;
			}
		}
	}
	free(buf);
	return rc;
}

int proxy_connect_main(int argc, char **argv)
{
	const char *url = NULL;
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--proxy") == 0 && i + 1 < argc) {
			url = argv[++i];
		} else if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else {
			fprintf(stderr, "egressd: connect: unexpected argument \"%s\"\n", argv[i]);
			usage();
			return 2;
		}
	}
	if (argc - i != 2) {
		usage();
		return 2;
	}
	const char *host = argv[i], *port = argv[i + 1];
	char *end;
	unsigned long pn = strtoul(port, &end, 10);
	if (*end != '\0' || pn == 0 || pn > 65535 || host[0] == '\0') {
		fprintf(stderr, "egressd: connect: \"%s\" is not a port\n", port);
		return 2;
	}
	const char *vars[] = {"HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"};
	for (size_t k = 0; url == NULL && k < sizeof vars / sizeof vars[0]; k++) {
		const char *v = getenv(vars[k]);
		if (v != NULL && v[0] != '\0')
			url = v;
	}
	if (url == NULL) {
		fprintf(stderr,
		        "egressd: connect: no proxy: give --proxy URL or set HTTPS_PROXY or "
		        "ALL_PROXY\n");
		return 2;
	}
	struct proxy_url p;
	if (parse_proxy_url(url, &p) == -1)
		return 2;
	/* A reader that goes away must end this process quietly, not kill it mid-write. */
	signal(SIGPIPE, SIG_IGN);
	int fd = dial(&p);
	if (fd == -1)
		return 1;
	char early[4096];
	size_t nearly = 0;
	int rc = p.kind == PK_HTTP ? http_tunnel(fd, &p, host, port, early, &nearly)
	                           : socks_tunnel(fd, &p, host, port);
	if (rc != 0) {
		close(fd);
		return 1;
	}
	if (nearly > 0 && write_all(1, early, nearly) == -1) {
		close(fd);
		return 0;
	}
	rc = relay(fd);
	close(fd);
	return rc;
}
