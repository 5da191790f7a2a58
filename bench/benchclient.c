/* benchclient: the load client of bench/run for the figures wrk cannot produce.
 *
 * It is C (blocking sockets, OpenSSL) rather than Python so that the client costs microseconds
 * per fetch and never hides the proxy's added latency or caps a tunnel's throughput.
 *
 *   benchclient fetch --connect IP:PORT [--via none|connect|forward|socks5] [--tls] [--ca FILE]
 *                     [--bind IP] --host NAME --port N --path P --count N --deadline SECONDS
 *       N fetches, each on a new TCP connection (and a full TLS handshake with --tls; no
 *       session resumption); prints one JSON line with the latency distribution.
 *   benchclient get   (same options, no --count): one fetch; prints bytes, seconds and MiB/s.
 *   benchclient idle  --connect PROXY --host NAME --port N --path P --count N --deadline SECONDS
 *                     [--tls --ca FILE] [--silent]
 *       opens N CONNECT tunnels, fetches P once through each (plain HTTP, keep-alive; with --tls
 *       over a TLS session inside the tunnel, as through an inspecting proxy) and leaves them
 *       idle; with --silent sends nothing at all after the proxy's 200 (a tunnel the proxy still
 *       holds waiting for its first bytes); prints {"open":K}; closes them all when a line (or
 *       EOF) arrives on standard input; prints {"closed":K}.
 *
 * --connect is where the TCP connection goes (the proxy, or the origin for DIRECT); --host and
 * --port are the origin as written in the CONNECT line (or the SOCKS5 request, a domain name
 * with no authentication), the absolute URI and Host.  --bind sets the connection's source
 * address (the transparent figure's redirect rule matches it).  Every loop
 * stops at --count or --deadline, whichever comes first, and after 20 errors.  Exit status 0 when
 * at least one fetch (or tunnel) succeeded, 1 otherwise, 2 on usage errors. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum bc_via {
	BC_VIA_NONE,    /* straight to the origin (DIRECT) */
	BC_VIA_CONNECT, /* CONNECT host:port first, then the request inside the tunnel */
	BC_VIA_FORWARD, /* plain forward proxying: the absolute URI on the request line */
	BC_VIA_SOCKS5,  /* SOCKS5 CONNECT (RFC 1928, no authentication, the host as a name) */
	BC_VIA_BAD,     /* an unknown --via value (a usage error) */
};

struct bc_opts {
	const char *mode;              /* "fetch", "get" or "idle" */
	struct sockaddr_in connect_to; /* TCP destination: proxy or origin */
	struct sockaddr_in bind_to;    /* source address (--bind); sin_family 0: the kernel's */
	enum bc_via via;               /* how the origin is reached through connect_to */
	int tls;                       /* 1: TLS to the origin (inside the tunnel if any) */
	const char *ca;                /* PEM file to verify the origin with; NULL: no check */
	const char *host;              /* origin name for CONNECT, URI, Host and SNI */
	unsigned port;                 /* origin port */
	const char *path;              /* request path, e.g. "/1k" */
	long count;                    /* fetches or tunnels */
	double deadline;               /* seconds from start after which loops stop */
	int silent;                    /* idle: nothing after the 200 (first bytes never sent) */
};

struct bc_conn {
	int fd;   /* connected socket, -1 when closed */
	SSL *ssl; /* TLS over fd, or NULL for plain */
};

#define BC_IO_TIMEOUT_S 10 /* one stalled read or write fails the fetch instead of hanging */
#define BC_MAX_ERRORS 20   /* a loop that keeps failing is reported, not retried forever */
#define BC_HEAD_MAX 16384  /* response heads are far smaller; more is a protocol error */

static unsigned char bc_body[1 << 18]; /* body sink: bodies are counted, never kept */

static double bc_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Parses "IP:PORT" (IPv4 only: the harness uses loopback) into sa.  0 or -1. */
static int bc_parse_addr(const char *s, struct sockaddr_in *sa)
{
	char ip[64];
	const char *colon = strrchr(s, ':');
	size_t n;
	long port;

	if (colon == NULL || (n = (size_t)(colon - s)) == 0 || n >= sizeof(ip))
		return -1;
	memcpy(ip, s, n);
	ip[n] = '\0';
	port = strtol(colon + 1, NULL, 10);
	if (port < 1 || port > 65535)
		return -1;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, ip, &sa->sin_addr) == 1 ? 0 : -1;
}

/* Parses an IPv4 address (no port) into sa as a source address (port 0).  0 or -1. */
static int bc_parse_ip(const char *s, struct sockaddr_in *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	return inet_pton(AF_INET, s, &sa->sin_addr) == 1 ? 0 : -1;
}

/* A blocking TCP connection to sa (from src when its family is set) with Nagle off (the client
 * must not add delay of its own) and I/O timeouts.  Returns the fd or -1 with errno set. */
static int bc_tcp_open(const struct sockaddr_in *sa, const struct sockaddr_in *src)
{
	struct timeval tv = {.tv_sec = BC_IO_TIMEOUT_S, .tv_usec = 0};
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd == -1)
		return -1;
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == -1 ||
	        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1 ||
	        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == -1 ||
	        (src->sin_family == AF_INET &&
	                bind(fd, (const struct sockaddr *)src, sizeof(*src)) == -1) ||
	        connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == -1) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static int bc_write_all(struct bc_conn *c, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n;

		if (c->ssl != NULL) {
			int r = SSL_write(c->ssl, buf, (int)len);

			n = r > 0 ? r : -1;
		} else {
			n = send(c->fd, buf, len, MSG_NOSIGNAL);
		}
		if (n == -1) {
			if (c->ssl == NULL && errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads up to len bytes: >0 bytes read, 0 at a clean end, -1 on error or timeout. */
static ssize_t bc_read(struct bc_conn *c, void *buf, size_t len)
{
	if (c->ssl != NULL) {
		size_t got = 0;
		int r = SSL_read_ex(c->ssl, buf, len, &got);

		if (r == 1)
			return (ssize_t)got;
		return SSL_get_error(c->ssl, r) == SSL_ERROR_ZERO_RETURN ? 0 : -1;
	}
	for (;;) {
		ssize_t n = recv(c->fd, buf, len, 0);

		if (n == -1 && errno == EINTR)
			continue;
		return n;
	}
}

/* Reads a response head into head (cap bytes).  Returns the head's length (through the blank
 * line) and sets *have to the bytes read, which may run past the head into the body; -1 when the
 * connection ends or the head does not fit. */
static long bc_read_head(struct bc_conn *c, char *head, size_t cap, size_t *have)
{
	size_t n = 0;

	while (n < cap - 1) {
		ssize_t r = bc_read(c, head + n, cap - 1 - n);
		char *end;

		if (r <= 0)
			return -1;
		n += (size_t)r;
		head[n] = '\0';
		end = strstr(head, "\r\n\r\n");
		if (end != NULL) {
			*have = n;
			return (long)(end + 4 - head);
		}
	}
	return -1;
}

/* The status code of a head ("HTTP/1.x NNN ..."), or -1. */
static int bc_status(const char *head)
{
	if (strncmp(head, "HTTP/1.", 7) != 0 || strlen(head) < 12)
		return -1;
	return atoi(head + 9);
}

/* Content-Length of a head, or -1 when absent. */
static long long bc_content_length(const char *head, size_t headlen)
{
	const char *p = head;
	const char *end = head + headlen;

	while (p < end) {
		const char *eol = strstr(p, "\r\n");

		if (eol == NULL)
			break;
		if ((size_t)(eol - p) > 15 && strncasecmp(p, "Content-Length:", 15) == 0)
			return strtoll(p + 15, NULL, 10);
		p = eol + 2;
	}
	return -1;
}

/* Sends CONNECT host:port on c and reads the proxy's answer; 0 on a 2xx with nothing after the
 * head (the origin never speaks first), else -1 with a message on stderr. */
static int bc_connect_tunnel(struct bc_conn *c, const struct bc_opts *o)
{
	char req[512];
	char head[BC_HEAD_MAX];
	size_t have = 0;
	long hl;
	int n = snprintf(req, sizeof(req), "CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\n\r\n", o->host,
	        o->port, o->host, o->port);

	if (n < 0 || (size_t)n >= sizeof(req) || bc_write_all(c, req, (size_t)n) == -1)
		return -1;
	hl = bc_read_head(c, head, sizeof(head), &have);
	if (hl == -1) {
		fprintf(stderr, "benchclient: no answer to CONNECT\n");
		return -1;
	}
	if (bc_status(head) / 100 != 2 || (size_t)hl != have) {
		fprintf(stderr, "benchclient: CONNECT refused: %.*s\n", (int)strcspn(head, "\r\n"),
		        head);
		return -1;
	}
	return 0;
}

/* Reads exactly len bytes from c; 0, or -1 when the connection ends or fails first. */
static int bc_read_exact(struct bc_conn *c, unsigned char *buf, size_t len)
{
	while (len > 0) {
		ssize_t r = bc_read(c, buf, len);

		if (r <= 0)
			return -1;
		buf += r;
		len -= (size_t)r;
	}
	return 0;
}

/* SOCKS5 (RFC 1928) on c: a greeting offering no authentication, then CONNECT to o->host (as a
 * domain name) and o->port; reads the whole reply, so nothing of it is left for the request.  0
 * on reply code 0, else -1 with a message on stderr. */
static int bc_socks5_tunnel(struct bc_conn *c, const struct bc_opts *o)
{
	static const unsigned char greeting[] = {5, 1, 0};
	unsigned char req[4 + 1 + 255 + 2];
	unsigned char rep[4 + 255 + 2];
	size_t hl = strlen(o->host), n = 0, rest;

	if (hl == 0 || hl > 255)
		return -1;
	if (bc_write_all(c, (const char *)greeting, sizeof(greeting)) == -1 ||
	        bc_read_exact(c, rep, 2) == -1) {
		fprintf(stderr, "benchclient: no answer to the SOCKS5 greeting\n");
		return -1;
	}
	if (rep[0] != 5 || rep[1] != 0) {
		fprintf(stderr, "benchclient: SOCKS5 greeting refused: %u %u\n", rep[0], rep[1]);
		return -1;
	}
	req[n++] = 5; /* version */
	req[n++] = 1; /* CONNECT */
	req[n++] = 0; /* reserved */
	req[n++] = 3; /* a domain name */
	req[n++] = (unsigned char)hl;
	memcpy(req + n, o->host, hl);
	n += hl;
	req[n++] = (unsigned char)(o->port >> 8);
	req[n++] = (unsigned char)(o->port & 0xff);
	if (bc_write_all(c, (const char *)req, n) == -1 || bc_read_exact(c, rep, 5) == -1) {
		fprintf(stderr, "benchclient: no answer to the SOCKS5 request\n");
		return -1;
	}
	if (rep[0] != 5 || rep[1] != 0) {
		fprintf(stderr, "benchclient: SOCKS5 refused: reply %u\n", rep[1]);
		return -1;
	}
	/* The bound address: 4 or 16 bytes, or a name whose length byte was the 5th read. */
	switch (rep[3]) {
	case 1:
		rest = 4 - 1 + 2;
		break;
	case 4:
		rest = 16 - 1 + 2;
		break;
	case 3:
		rest = (size_t)rep[4] + 2;
		break;
	default:
		fprintf(stderr, "benchclient: SOCKS5 reply with address type %u\n", rep[3]);
		return -1;
	}
	return bc_read_exact(c, rep, rest);
}

static void bc_close(struct bc_conn *c)
{
	if (c->ssl != NULL) {
		SSL_free(c->ssl);
		c->ssl = NULL;
	}
	if (c->fd != -1) {
		close(c->fd);
		c->fd = -1;
	}
}

/* Sends GET o->path on the established connection c (in its tunnel, over its TLS) and reads the
 * whole 200 response, leaving c open.  0 with the body length in *bytes, or -1 with a message on
 * stderr. */
static int bc_exchange(struct bc_conn *c, const struct bc_opts *o, long long *bytes)
{
	char req[1024];
	char head[BC_HEAD_MAX];
	size_t have = 0;
	long hl;
	long long want, got;
	int n, status;

	if (o->via == BC_VIA_FORWARD)
		n = snprintf(req, sizeof(req), "GET http://%s:%u%s HTTP/1.1\r\nHost: %s:%u\r\n\r\n",
		        o->host, o->port, o->path, o->host, o->port);
	else
		n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s:%u\r\n\r\n", o->path,
		        o->host, o->port);
	if (n < 0 || (size_t)n >= sizeof(req) || bc_write_all(c, req, (size_t)n) == -1) {
		fprintf(stderr, "benchclient: request write failed\n");
		return -1;
	}
	hl = bc_read_head(c, head, sizeof(head), &have);
	if (hl == -1) {
		fprintf(stderr, "benchclient: no response head\n");
		return -1;
	}
	status = bc_status(head);
	if (status != 200) {
		fprintf(stderr, "benchclient: status %d: %.*s\n", status,
		        (int)strcspn(head, "\r\n"), head);
		return -1;
	}
	want = bc_content_length(head, (size_t)hl);
	got = (long long)(have - (size_t)hl);
	while (want < 0 || got < want) {
		ssize_t r = bc_read(c, bc_body, sizeof(bc_body));

		if (r == 0 && want < 0)
			break;
		if (r <= 0) {
			fprintf(stderr, "benchclient: body cut at %lld of %lld bytes\n", got, want);
			return -1;
		}
		got += r;
	}
	*bytes = got;
	return 0;
}

/* A TLS handshake over c's socket (inside its tunnel, if any) with SNI o->host, the name checked
 * when a CA is given.  0, or -1 with a message on stderr (c->ssl is freed by bc_close). */
static int bc_tls_start(struct bc_conn *c, const struct bc_opts *o, SSL_CTX *ctx)
{
	c->ssl = SSL_new(ctx);
	if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1 ||
	        SSL_set_tlsext_host_name(c->ssl, o->host) != 1 ||
	        (o->ca != NULL && SSL_set1_host(c->ssl, o->host) != 1) || SSL_connect(c->ssl) != 1) {
		fprintf(stderr, "benchclient: TLS handshake failed: %s\n",
		        ERR_reason_error_string(ERR_get_error()));
		return -1;
	}
	return 0;
}

/* One fetch of o->path on a new connection.  On success returns 0 and the body length in *bytes;
 * on failure -1 and a message on stderr.  The connection is always closed. */
static int bc_fetch(const struct bc_opts *o, SSL_CTX *ctx, long long *bytes)
{
	struct bc_conn c = {.fd = -1, .ssl = NULL};
	int rc = -1;

	c.fd = bc_tcp_open(&o->connect_to, &o->bind_to);
	if (c.fd == -1) {
		fprintf(stderr, "benchclient: connect: %s\n", strerror(errno));
		return -1;
	}
	if (o->via == BC_VIA_CONNECT && bc_connect_tunnel(&c, o) == -1)
		goto out;
	if (o->via == BC_VIA_SOCKS5 && bc_socks5_tunnel(&c, o) == -1)
		goto out;
	if (o->tls && bc_tls_start(&c, o, ctx) == -1)
		goto out;
	rc = bc_exchange(&c, o, bytes);
out:
	bc_close(&c);
	return rc;
}

static int bc_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The q-quantile (0..1) of sorted v[0..n) by the nearest-rank method. */
static double bc_quantile(const double *v, long n, double q)
{
	long rank = (long)(q * (double)n + 0.999999);

	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

static int bc_mode_fetch(const struct bc_opts *o, SSL_CTX *ctx)
{
	double *lat = calloc((size_t)o->count, sizeof(*lat));
	double start = bc_now(), sum = 0;
	long n = 0, errors = 0;
	long long bytes = 0;

	if (lat == NULL)
		return 1;
	while (n < o->count && errors < BC_MAX_ERRORS && bc_now() - start < o->deadline) {
		double t0 = bc_now();

		if (bc_fetch(o, ctx, &bytes) == -1) {
			errors++;
			continue;
		}
		lat[n] = (bc_now() - t0) * 1e3;
		sum += lat[n];
		n++;
	}
	if (n == 0) {
		printf("{\"n\":0,\"errors\":%ld}\n", errors);
		free(lat);
		return 1;
	}
	qsort(lat, (size_t)n, sizeof(*lat), bc_cmp_double);
	printf("{\"n\":%ld,\"errors\":%ld,\"seconds\":%.3f,\"body_bytes\":%lld,\"min_ms\":%.4f,"
	       "\"median_ms\":%.4f,\"mean_ms\":%.4f,\"p90_ms\":%.4f,\"p99_ms\":%.4f,\"max_ms\":%."
	       "4f}\n",
	        n, errors, bc_now() - start, bytes, lat[0], bc_quantile(lat, n, 0.5),
	        sum / (double)n, bc_quantile(lat, n, 0.9), bc_quantile(lat, n, 0.99), lat[n - 1]);
	free(lat);
	return 0;
}

static int bc_mode_get(const struct bc_opts *o, SSL_CTX *ctx)
{
	long long bytes = 0;
	double t0 = bc_now(), dt;

	if (bc_fetch(o, ctx, &bytes) == -1)
		return 1;
	dt = bc_now() - t0;
	printf("{\"bytes\":%lld,\"seconds\":%.6f,\"mib_s\":%.2f}\n", bytes, dt,
	        (double)bytes / 1048576.0 / dt);
	return 0;
}

static int bc_mode_idle(const struct bc_opts *o, SSL_CTX *ctx)
{
	struct bc_conn *conns = calloc((size_t)o->count, sizeof(*conns));
	double start = bc_now();
	long n = 0, errors = 0;
	long long bytes = 0;
	char line[64];

	if (conns == NULL)
		return 1;
	while (n < o->count && errors < BC_MAX_ERRORS && bc_now() - start < o->deadline) {
		conns[n].ssl = NULL;
		conns[n].fd = bc_tcp_open(&o->connect_to, &o->bind_to);
		if (conns[n].fd == -1) {
			fprintf(stderr, "benchclient: connect: %s\n", strerror(errno));
			errors++;
			continue;
		}
		/* One request through the tunnel first: an idle tunnel in real use is a keep-alive
		 * connection that has carried traffic, and a proxy that inspects a tunnel's first
		 * bytes has then decided and is relaying.  --silent leaves it at the 200: the proxy
		 * holds it while it waits for the first bytes. */
		if (bc_connect_tunnel(&conns[n], o) == -1 ||
		        (!o->silent && o->tls && bc_tls_start(&conns[n], o, ctx) == -1) ||
		        (!o->silent && bc_exchange(&conns[n], o, &bytes) == -1)) {
			bc_close(&conns[n]);
			errors++;
			continue;
		}
		n++;
	}
	printf("{\"open\":%ld,\"errors\":%ld,\"seconds\":%.3f}\n", n, errors, bc_now() - start);
	fflush(stdout);
	/* Hold until the harness has measured; EOF (the harness died) also releases them. */
	if (fgets(line, sizeof(line), stdin) == NULL)
		clearerr(stdin);
	for (long i = 0; i < n; i++)
		bc_close(&conns[i]);
	printf("{\"closed\":%ld}\n", n);
	free(conns);
	return n > 0 ? 0 : 1;
}

static void bc_usage(void)
{
	fprintf(stderr,
	        "usage: benchclient fetch|get|idle --connect IP:PORT"
	        " [--via none|connect|forward|socks5] [--tls] [--ca FILE] [--bind IP] [--silent]"
	        " --host NAME --port N [--path P] [--count N] [--deadline S]\n");
}

int main(int argc, char **argv)
{
	struct bc_opts o = {.via = BC_VIA_NONE, .path = "/", .count = 1, .deadline = 60};
	int have_connect = 0, rc;
	SSL_CTX *ctx;

	if (argc < 2) {
		bc_usage();
		return 2;
	}
	o.mode = argv[1];
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--tls") == 0) {
			o.tls = 1;
			continue;
		}
		if (strcmp(a, "--silent") == 0) {
			o.silent = 1;
			continue;
		}
		if (v == NULL) {
			bc_usage();
			return 2;
		}
		i++;
		if (strcmp(a, "--connect") == 0 && bc_parse_addr(v, &o.connect_to) == 0) {
			have_connect = 1;
		} else if (strcmp(a, "--via") == 0) {
			if (strcmp(v, "connect") == 0)
				o.via = BC_VIA_CONNECT;
			else if (strcmp(v, "forward") == 0)
				o.via = BC_VIA_FORWARD;
			else if (strcmp(v, "socks5") == 0)
				o.via = BC_VIA_SOCKS5;
			else if (strcmp(v, "none") != 0)
				o.via = BC_VIA_BAD;
		} else if (strcmp(a, "--bind") == 0) {
			if (bc_parse_ip(v, &o.bind_to) == -1) {
				bc_usage();
				return 2;
			}
		} else if (strcmp(a, "--ca") == 0) {
			o.ca = v;
		} else if (strcmp(a, "--host") == 0) {
			o.host = v;
		} else if (strcmp(a, "--port") == 0) {
			o.port = (unsigned)strtoul(v, NULL, 10);
		} else if (strcmp(a, "--path") == 0) {
			o.path = v;
		} else if (strcmp(a, "--count") == 0) {
			o.count = strtol(v, NULL, 10);
		} else if (strcmp(a, "--deadline") == 0) {
			o.deadline = strtod(v, NULL);
		} else {
			bc_usage();
			return 2;
		}
	}
	if (!have_connect || o.host == NULL || o.port < 1 || o.port > 65535 || o.count < 1 ||
	        o.via == BC_VIA_BAD) {
		bc_usage();
		return 2;
	}
	/* An idle tunnel is always a CONNECT tunnel, whatever --via said. */
	if (strcmp(o.mode, "idle") == 0)
		o.via = BC_VIA_CONNECT;
	ctx = SSL_CTX_new(TLS_client_method());
	if (ctx == NULL)
		return 1;
	/* Every fetch pays a full handshake, as a new client of the proxy would. */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
	/* Thousands of idle TLS tunnels: the client holds no record buffers for them. */
	if (strcmp(o.mode, "idle") == 0)
		SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	if (o.ca != NULL) {
		if (SSL_CTX_load_verify_locations(ctx, o.ca, NULL) != 1) {
			fprintf(stderr, "benchclient: cannot load %s\n", o.ca);
			SSL_CTX_free(ctx);
			return 2;
		}
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	}
	if (strcmp(o.mode, "fetch") == 0) {
		rc = bc_mode_fetch(&o, ctx);
	} else if (strcmp(o.mode, "get") == 0) {
		rc = bc_mode_get(&o, ctx);
	} else if (strcmp(o.mode, "idle") == 0) {
		rc = bc_mode_idle(&o, ctx);
	} else {
		bc_usage();
		rc = 2;
	}
	SSL_CTX_free(ctx);
	return rc;
}
