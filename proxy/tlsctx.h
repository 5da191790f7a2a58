/* The TLS contexts of inspection (docs/design.md 11, docs/inspection.md): the client-facing one,
 * which presents a leaf minted for the tunnel's host, and egressd's own TLS to the upstream,
 * verified against tls.upstreamCA with the host name checked; and building both from a config.
 *
 * The inspected front door calls, per config generation:
 *     struct proxy_tls *t = proxy_tls_new(cfg, PROXY_TLS_SERVE, time(NULL), &errs);
 * per inspected tunnel, towards the client:
 *     SSL *c = SSL_new(t->client);  proxy_tls_client_prepare(c, tunnel_host);
 *     (SSL_accept through bufferevent_openssl; on failure proxy_tls_client_failure(c))
 * and towards the upstream:
 *     SSL *u = proxy_tls_upstream_new(t->upstream, tunnel_host);
 *     (SSL_connect; on failure proxy_tls_upstream_reason(u, err, buf, cap) for the 502
 *     upstream-tls body)
 * Single-threaded, like the loop that calls it. */
#ifndef EGRESSD_PROXY_TLSCTX_H
#define EGRESSD_PROXY_TLSCTX_H

#include <stdio.h>
#include <time.h>

#include <openssl/types.h>

#include "allowlist/config.h"
#include "proxy/ca.h"

#define PROXY_TLS_REASON_MAX 200 /* the longest upstream reason text, with its NUL */

enum proxy_tls_mode {
	PROXY_TLS_SERVE, /* serve and check: a session that inspects needs tls.ca */
	PROXY_TLS_EXEC,  /* exec: without tls.ca, a CA made in memory, constrained to the hosts
	                    the sessions inspect */
};

/* What one config generation needs for inspection. */
struct proxy_tls {
	struct proxy_ca *ca; /* leaves are minted with it; NULL when tls.ca is absent and no
	                        session inspects (owned) */
	int ephemeral;       /* ca was made in memory for this process (exec) */
	SSL_CTX *client;     /* the client-facing context; set exactly when ca is (owned) */
	SSL_CTX *upstream;   /* egressd's TLS to upstreams; set when a session inspects or
	                        tls.upstreamCA names a file (owned) */
};

/* Builds what cfg asks for at time now, judging every file: the CA (readable, matching key, CA
 * flags, valid now, a key leaves can be signed with; its name constraints permit every inspected
 * pattern), the upstream trust (a bundle file with at least one certificate; the system store,
 * which must exist when a session inspects).  In PROXY_TLS_SERVE a session that inspects without
 * tls.ca is an error.  Every problem is appended to errs as "FILE:LINE:COL: tls.KEY: message"
 * (the config's file and the value's place) or "FILE: sessions.NAME: message".  Returns the
 * result (free with proxy_tls_free), or NULL when errs got a line.  A config with no tls: and no
 * inspect gets an empty struct (all NULL). */
struct proxy_tls *proxy_tls_new(const struct allow_config *cfg, enum proxy_tls_mode mode,
        time_t now, struct allow_errors *errs);
void proxy_tls_free(struct proxy_tls *t);

/* The lines `egressd check` adds: the CA and the upstream trust.  Nothing for an empty t. */
void proxy_tls_print(const struct proxy_tls *t, const struct allow_config *cfg, FILE *out);

/* ---- towards the client ----------------------------------------------------------------- */

/* A server context: TLS 1.2 and 1.3; ALPN selects http/1.1 when the client offers it and
 * nothing otherwise (a client that offers only h2 gets no ALPN and must speak HTTP/1.1 or
 * leave); stateless session tickets under a key made per context (no server-side cache); a
 * servername callback that installs ca's leaf for the connection's host.  The context holds a
 * reference to ca (proxy_ca_hold), dropped when the context and its last SSL are freed.  NULL
 * with a reason in err. */
SSL_CTX *proxy_tls_client_ctx_new(struct proxy_ca *ca, char *err, size_t errlen);

/* Tells a new SSL of that context which host its tunnel was decided for (canonical, as the
 * pipeline has it).  The handshake then presents the leaf for that host, and is refused (alert
 * unrecognized_name) when the ClientHello names another; without this call every handshake is
 * refused.  0, or -1 when host is not a name or address or memory ran out. */
int proxy_tls_client_prepare(SSL *ssl, const char *host);

/* Why the handshake of a prepared SSL was refused by egressd's side: "sni-mismatch" (the
 * ClientHello named another host), "mint-failed", "not-prepared"; NULL when egressd refused
 * nothing (the client gave up, or the handshake went on). */
const char *proxy_tls_client_failure(const SSL *ssl);

/* ---- towards the upstream --------------------------------------------------------------- */

/* A client context: TLS 1.2 and 1.3, peer verification against ca_file (a PEM bundle) or, when
 * ca_file is NULL, the system store (SSL_CTX_set_default_verify_paths, which honours
 * SSL_CERT_FILE and SSL_CERT_DIR), no partial wildcards, ALPN http/1.1.  NULL with a reason. */
SSL_CTX *proxy_tls_upstream_ctx_new(const char *ca_file, char *err, size_t errlen);

/* A new SSL in connect state for host: SNI set and the certificate's DNS names checked for a
 * name; no SNI and the IP SANs checked for an address.  NULL when host is neither, or OpenSSL
 * fails. */
SSL *proxy_tls_upstream_new(SSL_CTX *ctx, const char *host);

/* One line for a 502 upstream-tls body after a failed handshake: the verification failure with
 * what the certificate names or who issued it ("certificate verify failed: hostname mismatch:
 * the certificate is for other.test, not origin.test"), else the TLS error (err: an OpenSSL
 * error code, e.g. from ERR_get_error or bufferevent_get_openssl_error; 0 for none).  Text from
 * the certificate is reduced to printable ASCII.  buf is always NUL-terminated. */
void proxy_tls_upstream_reason(const SSL *ssl, unsigned long err, char *buf, size_t cap);

#endif
