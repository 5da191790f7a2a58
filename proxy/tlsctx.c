/* The TLS contexts of inspection, and building them from a config (docs/inspection.md). */
#include "proxy/tlsctx.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "allowlist/pattern.h"

/* ALPN: the one protocol egressd reads inside an inspected tunnel. */
static const unsigned char alpn_h11[] = "\x08http/1.1";
#define ALPN_H11_LEN (sizeof alpn_h11 - 1)

/* What the servername callback needs to know about one client connection. */
struct client_note {
	char host[PROXY_CA_NAME_MAX + 1]; /* canonical host the tunnel was decided for */
	const char *failure;              /* why egressd refused the handshake, or NULL */
};

/* The ex_data slot of struct client_note on an SSL; -1 until made. */
static int note_index = -1;
/* The ex_data slot on a client-facing SSL_CTX that holds its reference to the CA. */
static int ca_index = -1;

static void note_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
	(void)parent;
	(void)ad;
	(void)idx;
	(void)argl;
	(void)argp;
	free(ptr);
}

static void ca_drop(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
	(void)parent;
	(void)ad;
	(void)idx;
	(void)argl;
	(void)argp;
	proxy_ca_free(ptr);
}

__attribute__((format(printf, 3, 4))) static void say(
        char *err, size_t errlen, const char *fmt, ...)
{
	if (err == NULL || errlen == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static const char *ossl_why(void)
{
	unsigned long e = ERR_peek_last_error();
	const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;
	ERR_clear_error();
	return r != NULL ? r : "an OpenSSL call failed";
}

/* ---- towards the client ----------------------------------------------------------------- */

static int client_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
        const unsigned char *in, unsigned int inlen, void *arg)
{
	(void)ssl;
	(void)arg;
	unsigned char *sel;
	unsigned char sellen;
	if (SSL_select_next_proto(&sel, &sellen, alpn_h11, ALPN_H11_LEN, in, inlen) !=
	        OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	*out = sel;
	*outlen = sellen;
	return SSL_TLSEXT_ERR_OK;
}

/* Runs for every ClientHello (with or without SNI), before the certificate is chosen. */
static int client_servername(SSL *ssl, int *alert, void *arg)
{
	struct proxy_ca *ca = arg;
	struct client_note *note = note_index >= 0 ? SSL_get_ex_data(ssl, note_index) : NULL;
	if (note == NULL) {
		*alert = SSL_AD_INTERNAL_ERROR;
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	}
	const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	char canon[PROXY_CA_NAME_MAX + 1];
	/* The peek compared the SNI with the tunnel's host before TLS began; a ClientHello read
	 * here is checked again, so that no hello reaches the leaf of another host. */
	if (sni != NULL && (proxy_ca_canon(sni, canon, sizeof canon, NULL) == -1 ||
	                           strcmp(canon, note->host) != 0)) {
		note->failure = "sni-mismatch";
		*alert = SSL_AD_UNRECOGNIZED_NAME;
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	}
	char why[PROXY_CA_ERR];
	X509 *leaf = proxy_ca_leaf(ca, note->host, why, sizeof why);
	if (leaf == NULL || SSL_use_cert_and_key(ssl, leaf, proxy_ca_leaf_key(ca), NULL, 1) != 1) {
		ERR_clear_error();
		note->failure = "mint-failed";
		*alert = SSL_AD_INTERNAL_ERROR;
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	}
	/* A CA that is itself issued by another (a company's intermediate) is sent along, so that
	 * clients trusting only the root can build the chain. */
	X509 *cacert = proxy_ca_cert(ca);
	if (X509_check_issued(cacert, cacert) != X509_V_OK &&
	        SSL_add1_chain_cert(ssl, cacert) != 1) {
		ERR_clear_error();
		note->failure = "mint-failed";
		*alert = SSL_AD_INTERNAL_ERROR;
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	}
	return SSL_TLSEXT_ERR_OK;
}

static int note_index_get(void)
{
	if (note_index < 0)
		note_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, note_free);
	if (ca_index < 0)
		ca_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, ca_drop);
	return note_index < 0 || ca_index < 0 ? -1 : note_index;
}

SSL_CTX *proxy_tls_client_ctx_new(struct proxy_ca *ca, char *err, size_t errlen)
{
	if (note_index_get() < 0) {
		say(err, errlen, "cannot make the TLS context: %s", ossl_why());
		return NULL;
	}
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (ctx == NULL || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
		say(err, errlen, "cannot make the TLS context: %s", ossl_why());
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_options(ctx,
	        SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	/* Idle tunnels keep no read or write buffer (about 34 KiB each otherwise). */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	/* Resumption by stateless tickets only, under this context's own random key: no session
	 * table grows with clients, and a reload (a new context) ends every ticket. */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(ctx, 1);
	/* The context holds the CA: every SSL holds its context, so a handshake that outlives
	 * its config generation (a reload in the middle) still mints with a live CA. */
	if (SSL_CTX_set_ex_data(ctx, ca_index, ca) != 1) {
		say(err, errlen, "cannot make the TLS context: %s", ossl_why());
		SSL_CTX_free(ctx);
		return NULL;
	}
	proxy_ca_hold(ca);
	SSL_CTX_set_tlsext_servername_callback(ctx, client_servername);
	SSL_CTX_set_tlsext_servername_arg(ctx, ca);
	SSL_CTX_set_alpn_select_cb(ctx, client_alpn, NULL);
	return ctx;
}

int proxy_tls_client_prepare(SSL *ssl, const char *host)
{
	if (note_index_get() < 0)
		return -1;
	struct client_note *note = calloc(1, sizeof *note);
	if (note == NULL)
		return -1;
	if (proxy_ca_canon(host, note->host, sizeof note->host, NULL) == -1) {
		free(note);
		return -1;
	}
	/* A second call replaces the first (SSL_set_ex_data itself frees nothing). */
	struct client_note *old = SSL_get_ex_data(ssl, note_index);
	if (SSL_set_ex_data(ssl, note_index, note) != 1) {
		free(note);
		return -1;
	}
	free(old);
	return 0;
}

const char *proxy_tls_client_failure(const SSL *ssl)
{
	struct client_note *note = note_index >= 0 ? SSL_get_ex_data(ssl, note_index) : NULL;
	if (note == NULL)
		return "not-prepared";
	return note->failure;
}

/* ---- towards the upstream --------------------------------------------------------------- */

SSL_CTX *proxy_tls_upstream_ctx_new(const char *ca_file, char *err, size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (ctx == NULL || SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
	        SSL_CTX_set_alpn_protos(ctx, alpn_h11, ALPN_H11_LEN) != 0) {
		say(err, errlen, "cannot make the TLS context: %s", ossl_why());
		SSL_CTX_free(ctx);
		return NULL;
	}
	int ok = ca_file != NULL ? SSL_CTX_load_verify_file(ctx, ca_file)
	                         : SSL_CTX_set_default_verify_paths(ctx);
	if (ok != 1) {
		say(err, errlen, "cannot load the CAs from \"%s\": %s",
		        ca_file != NULL ? ca_file : "the system store", ossl_why());
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	X509_VERIFY_PARAM_set_hostflags(
	        SSL_CTX_get0_param(ctx), X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	return ctx;
}

SSL *proxy_tls_upstream_new(SSL_CTX *ctx, const char *host)
{
	char canon[PROXY_CA_NAME_MAX + 1];
	int is_ip;
	if (proxy_ca_canon(host, canon, sizeof canon, &is_ip) == -1)
		return NULL;
	SSL *ssl = SSL_new(ctx);
	if (ssl == NULL)
		return NULL;
	/* RFC 6066: no SNI for an address; the address is checked against the IP SANs. */
	int ok =
	        is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), canon)
	              : SSL_set_tlsext_host_name(ssl, canon) == 1 && SSL_set1_host(ssl, canon) == 1;
	if (!ok) {
		ERR_clear_error();
		SSL_free(ssl);
		return NULL;
	}
	SSL_set_connect_state(ssl);
	return ssl;
}

/* Appends s[0..len) to buf at *o, printable ASCII only (anything else as '?'): names in an
 * upstream's certificate are the upstream's to choose, and end up in a response body. */
static void put_clean(char *buf, size_t cap, size_t *o, const char *s, size_t len)
{
	for (size_t i = 0; i < len && *o + 1 < cap; i++) {
		unsigned char c = (unsigned char)s[i];
		buf[(*o)++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	buf[*o] = '\0';
}

static void put(char *buf, size_t cap, size_t *o, const char *s)
{
	put_clean(buf, cap, o, s, strlen(s));
}

#define NAMES_SHOWN 3 /* names of a certificate listed in a reason */
#define NAME_SHOWN 64 /* bytes of each */

/* The DNS and IP names of x (its CN when it has no SAN), as "a.test, b.test and 2 more". */
static void put_names(char *buf, size_t cap, size_t *o, X509 *x)
{
	GENERAL_NAMES *san = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	int n = sk_GENERAL_NAME_num(san), shown = 0, total = 0;
	for (int i = 0; i < n; i++) {
		GENERAL_NAME *g = sk_GENERAL_NAME_value(san, i);
		char ip[64] = "";
		const char *text = NULL;
		size_t len = 0;
		if (g->type == GEN_DNS) {
			text = (const char *)ASN1_STRING_get0_data(g->d.dNSName);
			len = (size_t)ASN1_STRING_length(g->d.dNSName);
		} else if (g->type == GEN_IPADD) {
			int l = ASN1_STRING_length(g->d.iPAddress);
			const unsigned char *a = ASN1_STRING_get0_data(g->d.iPAddress);
			if ((l == 4 || l == 16) &&
			        inet_ntop(l == 4 ? AF_INET : AF_INET6, a, ip, sizeof ip) != NULL) {
				text = ip;
				len = strlen(ip);
			}
		}
		if (text == NULL)
			continue;
		total++;
		if (shown < NAMES_SHOWN) {
			put(buf, cap, o, shown ? ", " : "");
			put_clean(buf, cap, o, text, len < NAME_SHOWN ? len : NAME_SHOWN);
			shown++;
		}
	}
	GENERAL_NAMES_free(san);
	if (total == 0) {
		char cn[NAME_SHOWN + 1];
		int l = X509_NAME_get_text_by_NID(
		        X509_get_subject_name(x), NID_commonName, cn, sizeof cn);
		put(buf, cap, o, l > 0 ? "" : "no name");
		if (l > 0)
			put_clean(buf, cap, o, cn, (size_t)l);
	} else if (total > shown) {
		char more[32];
		snprintf(more, sizeof more, " and %d more", total - shown);
		put(buf, cap, o, more);
	}
}

/* The certificate the upstream sent first, or NULL.  The chain is kept even when verification
 * failed (OpenSSL 3 sets the peer certificate itself only after a success). */
static X509 *peer_leaf(const SSL *ssl)
{
	STACK_OF(X509) *chain = SSL_get_peer_cert_chain(ssl);
	return sk_X509_num(chain) > 0 ? sk_X509_value(chain, 0) : NULL;
}

void proxy_tls_upstream_reason(const SSL *ssl, unsigned long err, char *buf, size_t cap)
{
	size_t o = 0;
	if (cap == 0)
		return;
	buf[0] = '\0';
	long v = SSL_get_verify_result(ssl);
	X509 *leaf = peer_leaf(ssl);
	if (v != X509_V_OK) {
		put(buf, cap, &o, "certificate verify failed: ");
		put(buf, cap, &o, X509_verify_cert_error_string(v));
		if ((v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH) &&
		        leaf != NULL) {
			/* What was asked for: the name set by proxy_tls_upstream_new, or the
			 * address. */
			X509_VERIFY_PARAM *p = SSL_get0_param((SSL *)ssl);
			const char *want = X509_VERIFY_PARAM_get0_host(p, 0);
			char *ip = want == NULL ? X509_VERIFY_PARAM_get1_ip_asc(p) : NULL;
			put(buf, cap, &o, ": the certificate is for ");
			put_names(buf, cap, &o, leaf);
			if (want != NULL || ip != NULL) {
				put(buf, cap, &o, ", not ");
				put(buf, cap, &o, want != NULL ? want : ip);
			}
			OPENSSL_free(ip);
		} else if (v == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY ||
		           v == X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT ||
		           v == X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN ||
		           v == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT) {
			STACK_OF(X509) *chain = SSL_get_peer_cert_chain(ssl);
			X509 *top = sk_X509_num(chain) > 0
			                    ? sk_X509_value(chain, sk_X509_num(chain) - 1)
			                    : NULL;
			char issuer[256];
			if (top != NULL && X509_NAME_oneline(X509_get_issuer_name(top), issuer,
			                           sizeof issuer)) {
				put(buf, cap, &o, " (issuer ");
				put_clean(buf, cap, &o, issuer,
				        strlen(issuer) < 96 ? strlen(issuer) : 96);
				put(buf, cap, &o, " is not in tls.upstreamCA)");
			}
		}
		return;
	}
	if (err != 0) {
		const char *r = ERR_reason_error_string(err);
		put(buf, cap, &o, "TLS handshake failed: ");
		put(buf, cap, &o, r != NULL ? r : "unknown error");
		return;
	}
	put(buf, cap, &o, "TLS handshake failed: the upstream closed the connection");
}

/* ---- from a config ---------------------------------------------------------------------- */

/* Appends one line to errs (allocation failures drop the text, not the count of errors: errs
 * still gets a line, "out of memory"). */
__attribute__((format(printf, 2, 3))) static void err_add(
        struct allow_errors *errs, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	char **nl = realloc(errs->lines, (errs->n + 2) * sizeof *nl);
	if (nl == NULL)
		return;
	errs->lines = nl;
	errs->lines[errs->n] = strdup(line);
	if (errs->lines[errs->n] == NULL)
		errs->lines[errs->n] = strdup("out of memory");
	if (errs->lines[errs->n] != NULL)
		errs->n++;
	errs->lines[errs->n] = NULL;
}

/* An error at a config value's place ("FILE:LINE:COL: KEY: message"), or at the file. */
__attribute__((format(printf, 5, 6))) static void err_at(struct allow_errors *errs,
        const struct allow_config *cfg, const struct allow_pos *at, const char *key,
        const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (at != NULL && at->line > 0)
		err_add(errs, "%s:%lu:%lu: %s: %s", cfg->path, at->line, at->col, key, msg);
	else
		err_add(errs, "%s: %s: %s", cfg->path, key, msg);
}

static int session_inspects(const struct allow_session_config *s)
{
	return s->bound.inspect != NULL && allow_set_count(s->bound.inspect) > 0;
}

/* The inspect patterns of every session, each once, for exec's CA.  *n gets their number;
 * NULL (with *n = 0) when memory ran out.  The texts belong to cfg. */
static const char **inspect_union(const struct allow_config *cfg, size_t *n)
{
	size_t total = 0;
	for (size_t i = 0; i < cfg->nsessions; i++)
		total += cfg->sessions[i].bound.inspect != NULL
		                 ? allow_set_count(cfg->sessions[i].bound.inspect)
		                 : 0;
	const char **out = calloc(total + 1, sizeof *out);
	*n = 0;
	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < cfg->nsessions; i++) {
		const struct allow_set *set = cfg->sessions[i].bound.inspect;
		for (size_t j = 0; set != NULL && j < allow_set_count(set); j++) {
			const char *p = allow_set_pattern(set, j);
			size_t k;
			for (k = 0; k < *n && strcmp(out[k], p) != 0; k++)
				;
			if (k == *n)
				out[(*n)++] = p;
		}
	}
	return out;
}

/* 1 when the system store OpenSSL would use has something in it. */
static int system_store_present(void)
{
	struct stat st;
	const char *env = getenv(X509_get_default_cert_file_env());
	const char *file = env != NULL ? env : X509_get_default_cert_file();
	if (stat(file, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		return 1;
	env = getenv(X509_get_default_cert_dir_env());
	const char *dir = env != NULL ? env : X509_get_default_cert_dir();
	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_nlink > 2;
}

struct proxy_tls *proxy_tls_new(const struct allow_config *cfg, enum proxy_tls_mode mode,
        time_t now, struct allow_errors *errs)
{
	const struct allow_tls_config *tc = &cfg->tls;
	size_t before = errs->n;
	char why[PROXY_CA_ERR + 64];
	struct proxy_tls *t = calloc(1, sizeof *t);
	if (t == NULL) {
		err_add(errs, "%s: out of memory", cfg->path);
		return NULL;
	}
	int inspects = 0;
	for (size_t i = 0; i < cfg->nsessions; i++)
		inspects |= session_inspects(&cfg->sessions[i]);

	if (tc->ca_cert != NULL) {
		int blame;
		t->ca = proxy_ca_load(tc->ca_cert, tc->ca_key, &blame, why, sizeof why);
		if (t->ca == NULL)
			err_at(errs, cfg,
			        blame == PROXY_CA_BLAME_KEY ? &tc->ca_key_at : &tc->ca_cert_at,
			        blame == PROXY_CA_BLAME_KEY ? "tls.ca.key" : "tls.ca.cert", "%s",
			        why);
		else if (proxy_ca_judge(t->ca, now, why, sizeof why) == -1)
			err_at(errs, cfg, &tc->ca_cert_at, "tls.ca.cert", "\"%s\" %s", tc->ca_cert,
			        why);
	} else if (inspects && mode == PROXY_TLS_SERVE) {
		for (size_t i = 0; i < cfg->nsessions; i++)
			if (session_inspects(&cfg->sessions[i]))
				err_add(errs,
				        "%s: sessions.%s: inspects %s%s but tls.ca is not set "
				        "(egressd ca "
				        "init DIR writes a CA; name its ca.pem and ca.key in "
				        "tls.ca)",
				        cfg->path, cfg->sessions[i].name,
				        allow_set_pattern(cfg->sessions[i].bound.inspect, 0),
				        allow_set_count(cfg->sessions[i].bound.inspect) > 1
				                ? ", ..."
				                : "");
	} else if (inspects) {
		size_t n;
		const char **permit = inspect_union(cfg, &n);
		t->ca = permit != NULL ? proxy_ca_generate(permit, n, PROXY_CA_EPHEMERAL_DAYS, why,
		                                 sizeof why)
		                       : NULL;
		free(permit);
		if (t->ca == NULL)
			err_add(errs, "%s: cannot make a CA for inspection: %s", cfg->path,
			        permit != NULL ? why : "out of memory");
		t->ephemeral = 1;
	}

	/* Every inspected host must be one the CA may vouch for, or its clients refuse each leaf.
	 */
	for (size_t i = 0; t->ca != NULL && !t->ephemeral && i < cfg->nsessions; i++) {
		const struct allow_set *set = cfg->sessions[i].bound.inspect;
		for (size_t j = 0; set != NULL && j < allow_set_count(set); j++) {
			const char *p = allow_set_pattern(set, j);
			int ok = proxy_ca_permits_pattern(t->ca, p, why, sizeof why);
			if (ok == 0)
				err_at(errs, cfg, &tc->ca_cert_at, "tls.ca.cert",
				        "the CA's name constraints do not permit %s, which session "
				        "%s "
				        "inspects (%s): clients would refuse its certificates",
				        why, cfg->sessions[i].name, p);
			else if (ok == -1)
				err_at(errs, cfg, &tc->ca_cert_at, "tls.ca.cert",
				        "cannot check inspect pattern %s of session %s: %s", p,
				        cfg->sessions[i].name, why);
		}
	}

	if (t->ca != NULL && errs->n == before &&
	        (t->client = proxy_tls_client_ctx_new(t->ca, why, sizeof why)) == NULL)
		err_add(errs, "%s: %s", cfg->path, why);

	if (tc->upstream_ca != NULL || inspects) {
		struct stat st;
		if (tc->upstream_ca != NULL && stat(tc->upstream_ca, &st) == -1)
			err_at(errs, cfg, &tc->upstream_ca_at, "tls.upstreamCA",
			        "cannot read \"%s\": %s", tc->upstream_ca, strerror(errno));
		else if (tc->upstream_ca == NULL && !system_store_present())
			err_at(errs, cfg, &tc->upstream_ca_at, "tls.upstreamCA",
			        "the system CA store (%s) is missing or empty: inspected upstreams "
			        "cannot be verified; install ca-certificates or name a bundle file",
			        X509_get_default_cert_file());
		else if ((t->upstream = proxy_tls_upstream_ctx_new(
		                  tc->upstream_ca, why, sizeof why)) == NULL)
			err_at(errs, cfg, &tc->upstream_ca_at, "tls.upstreamCA", "%s", why);
	}

	if (errs->n != before) {
		proxy_tls_free(t);
		return NULL;
	}
	return t;
}

void proxy_tls_free(struct proxy_tls *t)
{
	if (t == NULL)
		return;
	SSL_CTX_free(t->client);
	SSL_CTX_free(t->upstream);
	proxy_ca_free(t->ca);
	free(t);
}

void proxy_tls_print(const struct proxy_tls *t, const struct allow_config *cfg, FILE *out)
{
	char d[512];
	if (t->ca != NULL) {
		proxy_ca_describe(t->ca, d, sizeof d);
		fprintf(out, "tls.ca: %s: %s\n",
		        t->ephemeral ? "(made for this run)" : cfg->tls.ca_cert, d);
	}
	if (t->upstream != NULL) {
		const char *sys = proxy_ca_system_bundle();
		if (cfg->tls.upstream_ca != NULL)
			fprintf(out, "tls.upstreamCA: %s\n", cfg->tls.upstream_ca);
		else
			fprintf(out, "tls.upstreamCA: system (%s)\n",
			        sys != NULL ? sys : X509_get_default_cert_dir());
	}
}
