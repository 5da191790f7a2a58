/* The names inspection takes from clients and configs (proxy/ca.c, proxy/tlsctx.c) on arbitrary
 * bytes.  The first byte picks what the rest is:
 *   0: a host a leaf is minted for (the SNI or tunnel host of an inspected connection);
 *   1: an inspect pattern judged against a CA with name constraints (egressd check);
 *   2: a host egressd opens its own TLS to (the upstream of an inspected tunnel).
 * Besides memory safety it checks what the callers rely on: a leaf exists exactly for the hosts
 * proxy_ca_canon accepts, its one SAN is that canonical host, a second call is a cache hit with
 * the same certificate, and the leaf verifies under the CA; an upstream SSL exists exactly for
 * those hosts too.  One CA per process: its cache fills and evicts as inputs pile up. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "proxy/ca.h"
#include "proxy/tlsctx.h"

#define FZ_MAX 300 /* longer inputs are cut: every name is at most 253 bytes */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct proxy_ca *plain, *limited;
static SSL_CTX *upstream;

static void setup(void)
{
	static const char *const permit[] = {
	        "github.com", "**.pkg.test", "192.0.2.0/24", "[2001:db8::/48]:443"};
	char err[PROXY_CA_ERR];
	plain = proxy_ca_generate(NULL, 0, 30, err, sizeof err);
	limited = proxy_ca_generate(permit, 4, 30, err, sizeof err);
	upstream = proxy_tls_upstream_ctx_new(NULL, err, sizeof err);
	if (plain == NULL || limited == NULL || upstream == NULL)
		abort();
}

/* The text of x's only SAN: a DNS name as is, an address through inet_ntop. */
static int san_of(X509 *x, char *out, size_t cap)
{
	GENERAL_NAMES *san = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	int ok = sk_GENERAL_NAME_num(san) == 1;
	if (ok) {
		GENERAL_NAME *g = sk_GENERAL_NAME_value(san, 0);
		const unsigned char *d =
		        ASN1_STRING_get0_data(g->type == GEN_DNS ? g->d.dNSName : g->d.iPAddress);
		int len = ASN1_STRING_length(g->type == GEN_DNS ? g->d.dNSName : g->d.iPAddress);
		if (g->type == GEN_DNS && (size_t)len < cap) {
			memcpy(out, d, (size_t)len);
			out[len] = '\0';
		} else if (g->type == GEN_IPADD && (len == 4 || len == 16)) {
			ok = inet_ntop(len == 4 ? AF_INET : AF_INET6, d, out, (socklen_t)cap) !=
			     NULL;
		} else {
			ok = 0;
		}
	}
	GENERAL_NAMES_free(san);
	return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (plain == NULL)
		setup();
	if (size < 1)
		return 0;
	char in[FZ_MAX + 1];
	size_t len = size - 1 < FZ_MAX ? size - 1 : FZ_MAX;
	memcpy(in, data + 1, len);
	in[len] = '\0'; /* an embedded NUL ends the text, as it would in a C string */
	char canon[PROXY_CA_NAME_MAX + 1], err[PROXY_CA_ERR], san[PROXY_CA_NAME_MAX + 1];
	int is_ip = 0;
	int canon_ok = proxy_ca_canon(in, canon, sizeof canon, &is_ip) == 0;
	switch (data[0] % 3) {
	case 0: {
		X509 *x = proxy_ca_leaf(plain, in, err, sizeof err);
		if ((x != NULL) != canon_ok)
			abort();
		if (x == NULL)
			break;
		if (!san_of(x, san, sizeof san) || strcmp(san, canon) != 0)
			abort();
		if (X509_verify(x, X509_get0_pubkey(proxy_ca_cert(plain))) != 1)
			abort();
		struct proxy_ca_stats a, b;
		proxy_ca_get_stats(plain, &a);
		if (proxy_ca_leaf(plain, canon, err, sizeof err) != x)
			abort();
		proxy_ca_get_stats(plain, &b);
		if (b.hits != a.hits + 1 || b.mints != a.mints)
			abort();
		break;
	}
	case 1: {
		int r = proxy_ca_permits_pattern(limited, in, err, sizeof err);
		if (r < -1 || r > 1 || (r != 1 && err[0] == '\0'))
			abort();
		if (canon_ok && proxy_ca_permits(limited, in) == -1)
			abort();
		break;
	}
	default: {
		SSL *ssl = proxy_tls_upstream_new(upstream, in);
		if ((ssl != NULL) != canon_ok)
			abort();
		SSL_free(ssl);
		break;
	}
	}
	ERR_clear_error();
	return 0;
}
