/* The inspection CA (proxy/ca.c) and the TLS contexts built on it (proxy/tlsctx.c): the CA's
 * fields and files, every way a CA is refused, the leaves as a client's verifier sees them, the
 * cache, name constraints as OpenSSL's chain check applies them, the trust bundle, and in-process
 * handshakes (a BIO pair between the two sides) for the client-facing and upstream contexts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "proxy/ca.h"
#include "proxy/tlsctx.h"

/* ---- helpers -------------------------------------------------------------------------------- */

static char tmpdir[256];

static int setup_tmp(void **state)
{
	(void)state;
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(tmpdir, sizeof tmpdir, "%s/test_proxy_ca.XXXXXX", base);
	return mkdtemp(tmpdir) != NULL ? 0 : -1;
}

static int teardown_tmp(void **state)
{
	(void)state;
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* tmpdir/name into buf. */
static const char *tpath(char *buf, size_t cap, const char *name)
{
	snprintf(buf, cap, "%s/%s", tmpdir, name);
	return buf;
}

static void write_text(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void write_pem(const char *path, X509 *cert, EVP_PKEY *key)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	if (cert != NULL)
		assert_int_equal(PEM_write_X509(f, cert), 1);
	if (key != NULL)
		assert_int_equal(PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL), 1);
	assert_int_equal(fclose(f), 0);
}

static struct proxy_ca *gen(const char *const *permit, size_t n)
{
	char err[PROXY_CA_ERR] = "";
	struct proxy_ca *ca = proxy_ca_generate(permit, n, 30, err, sizeof err);
	if (ca == NULL)
		print_message("generate: %s\n", err);
	assert_non_null(ca);
	return ca;
}

/* A certificate made by hand for the refusal cases: self-signed with key, CA or not, keyUsage
 * text (NULL: none), valid from `from` for `secs` seconds. */
static X509 *hand_cert(EVP_PKEY *key, int ca, const char *ku, time_t from, long secs)
{
	X509 *x = X509_new();
	assert_non_null(x);
	assert_int_equal(X509_set_version(x, X509_VERSION_3), 1);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 7);
	X509_NAME *n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_NID(
	        n, NID_commonName, MBSTRING_ASC, (const unsigned char *)"hand", -1, -1, 0);
	X509_set_issuer_name(x, n);
	ASN1_TIME_set(X509_getm_notBefore(x), from);
	ASN1_TIME_set(X509_getm_notAfter(x), from + secs);
	X509_set_pubkey(x, key);
	X509V3_CTX v3;
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	X509_EXTENSION *e = X509V3_EXT_conf_nid(
	        NULL, &v3, NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
	X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
	if (ku != NULL) {
		e = X509V3_EXT_conf_nid(NULL, &v3, NID_key_usage, ku);
		X509_add_ext(x, e, -1);
		X509_EXTENSION_free(e);
	}
	const EVP_MD *md = EVP_PKEY_get_base_id(key) == EVP_PKEY_ED25519 ? NULL : EVP_sha256();
	assert_true(X509_sign(x, key, md) > 0);
	return x;
}

/* The DNS name and IP SANs of x as "DNS:a,IP:b". */
static void san_text(X509 *x, char *buf, size_t cap)
{
	GENERAL_NAMES *san = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	size_t o = 0;
	buf[0] = '\0';
	for (int i = 0; i < sk_GENERAL_NAME_num(san); i++) {
		GENERAL_NAME *g = sk_GENERAL_NAME_value(san, i);
		if (g->type == GEN_DNS)
			o += (size_t)snprintf(buf + o, cap - o, "%sDNS:%s", i ? "," : "",
			        (const char *)ASN1_STRING_get0_data(g->d.dNSName));
		else if (g->type == GEN_IPADD)
			o += (size_t)snprintf(buf + o, cap - o, "%sIP:%d", i ? "," : "",
			        ASN1_STRING_length(g->d.iPAddress));
	}
	GENERAL_NAMES_free(san);
}

/* What a client's verifier says about leaf under ca alone, for host (a name) or ip. */
static int verify_leaf(struct proxy_ca *ca, X509 *leaf, const char *host, const char *ip, time_t at)
{
	X509_STORE *st = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	assert_non_null(st);
	assert_non_null(ctx);
	assert_int_equal(X509_STORE_add_cert(st, proxy_ca_cert(ca)), 1);
	assert_int_equal(X509_STORE_CTX_init(ctx, st, leaf, NULL), 1);
	X509_VERIFY_PARAM *p = X509_STORE_CTX_get0_param(ctx);
	X509_VERIFY_PARAM_set_purpose(p, X509_PURPOSE_SSL_SERVER);
	X509_VERIFY_PARAM_set_time(p, at);
	if (host != NULL)
		X509_VERIFY_PARAM_set1_host(p, host, 0);
	if (ip != NULL)
		X509_VERIFY_PARAM_set1_ip_asc(p, ip);
	int ok = X509_verify_cert(ctx);
	int err = ok == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(st);
	ERR_clear_error();
	return err;
}

/* ---- the CA --------------------------------------------------------------------------------- */

static void test_generate(void **state)
{
	(void)state;
	struct proxy_ca *ca = gen(NULL, 0);
	X509 *c = proxy_ca_cert(ca);
	char err[PROXY_CA_ERR];
	assert_int_equal(proxy_ca_judge(ca, time(NULL), err, sizeof err), 0);
	assert_int_equal(X509_get_version(c), X509_VERSION_3);
	/* Self-signed, by an ECDSA P-256 key. */
	EVP_PKEY *pub = X509_get0_pubkey(c);
	assert_int_equal(EVP_PKEY_get_base_id(pub), EVP_PKEY_EC);
	assert_int_equal(EVP_PKEY_get_bits(pub), 256);
	assert_int_equal(X509_verify(c, pub), 1);
	assert_int_equal(X509_check_issued(c, c), X509_V_OK);
	/* basicConstraints critical CA:TRUE pathlen:0; keyUsage critical keyCertSign+cRLSign;
	 * a subjectKeyIdentifier; no name constraints when none were asked for. */
	int crit = -1;
	BASIC_CONSTRAINTS *bc = X509_get_ext_d2i(c, NID_basic_constraints, &crit, NULL);
	assert_non_null(bc);
	assert_int_equal(crit, 1);
	assert_true(bc->ca);
	assert_int_equal(ASN1_INTEGER_get(bc->pathlen), 0);
	BASIC_CONSTRAINTS_free(bc);
	ASN1_BIT_STRING *ku = X509_get_ext_d2i(c, NID_key_usage, &crit, NULL);
	assert_non_null(ku);
	assert_int_equal(crit, 1);
	ASN1_BIT_STRING_free(ku);
	assert_int_equal(X509_get_key_usage(c), KU_KEY_CERT_SIGN | KU_CRL_SIGN);
	assert_non_null(X509_get0_subject_key_id(c));
	assert_null(X509_get_ext_d2i(c, NID_name_constraints, &crit, NULL));
	/* Backdated an hour, valid 30 days. */
	time_t now = time(NULL);
	int days, secs;
	assert_int_equal(
	        ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(c), X509_get0_notAfter(c)), 1);
	assert_int_equal(days * 86400 + secs, 30 * 86400 + 3600);
	assert_true(X509_cmp_time(X509_get0_notBefore(c), &now) < 0);
	/* A 159-bit positive serial, different each time. */
	BIGNUM *s1 = ASN1_INTEGER_to_BN(X509_get0_serialNumber(c), NULL);
	struct proxy_ca *ca2 = gen(NULL, 0);
	BIGNUM *s2 = ASN1_INTEGER_to_BN(X509_get0_serialNumber(proxy_ca_cert(ca2)), NULL);
	assert_false(BN_is_negative(s1));
	assert_true(BN_num_bits(s1) <= 159 && BN_num_bits(s1) > 100);
	assert_int_not_equal(BN_cmp(s1, s2), 0);
	/* Each CA has its own name. */
	assert_int_not_equal(
	        X509_NAME_cmp(X509_get_subject_name(c), X509_get_subject_name(proxy_ca_cert(ca2))),
	        0);
	char d[512];
	proxy_ca_describe(ca, d, sizeof d);
	assert_non_null(strstr(d, "/O=egressd/CN=egressd inspection CA "));
	assert_non_null(strstr(d, "EC prime256v1"));
	assert_non_null(strstr(d, "no name constraints"));
	BN_free(s1);
	BN_free(s2);
	proxy_ca_free(ca2);
	proxy_ca_free(ca);
}

static void test_write_and_load(void **state)
{
	(void)state;
	char dir[300], cert[400], key[400], err[PROXY_CA_ERR];
	tpath(dir, sizeof dir, "init/deeper");
	snprintf(cert, sizeof cert, "%s/ca.pem", dir);
	snprintf(key, sizeof key, "%s/ca.key", dir);
	struct proxy_ca *ca = gen(NULL, 0);
	assert_int_equal(proxy_ca_write(ca, dir, err, sizeof err), 0);
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(stat(key, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(cert, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	/* No temporary file is left behind. */
	char cmd[600];
	snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -eq 2", dir);
	assert_int_equal(system(cmd), 0);

	int blame = -1;
	struct proxy_ca *back = proxy_ca_load(cert, key, &blame, err, sizeof err);
	if (back == NULL)
		print_message("load: %s\n", err);
	assert_non_null(back);
	assert_int_equal(X509_cmp(proxy_ca_cert(ca), proxy_ca_cert(back)), 0);
	assert_int_equal(proxy_ca_judge(back, time(NULL), err, sizeof err), 0);

	/* Never overwritten: the same files after a second write, from another CA. */
	struct proxy_ca *other = gen(NULL, 0);
	assert_int_equal(proxy_ca_write(other, dir, err, sizeof err), 1);
	assert_non_null(strstr(err, "is there already"));
	proxy_ca_free(back);
	back = proxy_ca_load(cert, key, NULL, err, sizeof err);
	assert_non_null(back);
	assert_int_equal(X509_cmp(proxy_ca_cert(ca), proxy_ca_cert(back)), 0);
	/* A key alone is enough to refuse, and no certificate is written beside it. */
	char dir2[300], cert2[400];
	tpath(dir2, sizeof dir2, "keyonly");
	snprintf(cert2, sizeof cert2, "%s/ca.pem", dir2);
	assert_int_equal(mkdir(dir2, 0700), 0);
	snprintf(cmd, sizeof cmd, "%s/ca.key", dir2);
	write_text(cmd, "x", 1);
	assert_int_equal(proxy_ca_write(other, dir2, err, sizeof err), 1);
	assert_int_equal(stat(cert2, &st), -1);
	/* A folder that cannot be made. */
	assert_int_equal(proxy_ca_write(other, "/proc/egressd-test/ca", err, sizeof err), -1);
	assert_non_null(strstr(err, "cannot make"));
	proxy_ca_free(other);
	proxy_ca_free(back);
	proxy_ca_free(ca);
}

/* Every way tls.ca can be wrong, each refused with a reason naming the file. */
static void test_load_refusals(void **state)
{
	(void)state;
	char err[PROXY_CA_ERR], cert[300], key[300], other[300], p[300];
	struct proxy_ca *ca = gen(NULL, 0);
	char dir[300];
	tpath(dir, sizeof dir, "refuse");
	assert_int_equal(proxy_ca_write(ca, dir, err, sizeof err), 0);
	snprintf(cert, sizeof cert, "%s/ca.pem", dir);
	snprintf(key, sizeof key, "%s/ca.key", dir);
	int blame;

	assert_null(proxy_ca_load(tpath(p, sizeof p, "nope.pem"), key, &blame, err, sizeof err));
	assert_int_equal(blame, PROXY_CA_BLAME_CERT);
	assert_non_null(strstr(err, "nope.pem\": No such file or directory"));

	write_text(tpath(p, sizeof p, "junk.pem"), "not pem\n", 8);
	assert_null(proxy_ca_load(p, key, &blame, err, sizeof err));
	assert_int_equal(blame, PROXY_CA_BLAME_CERT);
	assert_non_null(strstr(err, "junk.pem\" holds no PEM certificate"));

	assert_null(proxy_ca_load(dir, key, &blame, err, sizeof err));
	assert_non_null(strstr(err, "not a regular file"));

	assert_null(proxy_ca_load(cert, tpath(p, sizeof p, "nokey"), &blame, err, sizeof err));
	assert_int_equal(blame, PROXY_CA_BLAME_KEY);
	assert_non_null(strstr(err, "nokey\": No such file"));

	/* The certificate given as the key. */
	assert_null(proxy_ca_load(cert, cert, &blame, err, sizeof err));
	assert_int_equal(blame, PROXY_CA_BLAME_KEY);
	assert_non_null(strstr(err, "holds no PEM private key"));

	/* Another CA's key. */
	struct proxy_ca *ca2 = gen(NULL, 0);
	tpath(other, sizeof other, "refuse2");
	assert_int_equal(proxy_ca_write(ca2, other, err, sizeof err), 0);
	snprintf(p, sizeof p, "%s/ca.key", other);
	assert_null(proxy_ca_load(cert, p, &blame, err, sizeof err));
	assert_int_equal(blame, PROXY_CA_BLAME_KEY);
	assert_non_null(strstr(err, "is not the key of the certificate in"));

	/* An encrypted key. */
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	X509 *x = hand_cert(k, 1, "critical,keyCertSign", time(NULL) - 10, 86400);
	write_pem(tpath(cert, sizeof cert, "hand.pem"), x, NULL);
	FILE *f = fopen(tpath(p, sizeof p, "enc.key"), "w");
	assert_non_null(f);
	assert_int_equal(
	        PEM_write_PrivateKey(f, k, EVP_aes_128_cbc(), (unsigned char *)"pw", 2, NULL, NULL),
	        1);
	fclose(f);
	assert_null(proxy_ca_load(cert, p, &blame, err, sizeof err));
	assert_non_null(strstr(err, "enc.key\" is encrypted"));
	/* The same pair unencrypted loads, and is judged a good CA. */
	write_pem(tpath(p, sizeof p, "hand.key"), NULL, k);
	struct proxy_ca *h = proxy_ca_load(cert, p, &blame, err, sizeof err);
	assert_non_null(h);
	assert_int_equal(proxy_ca_judge(h, time(NULL), err, sizeof err), 0);
	/* ... but not before its start or after its end. */
	assert_int_equal(proxy_ca_judge(h, time(NULL) - 3600, err, sizeof err), -1);
	assert_non_null(strstr(err, "is not valid before"));
	assert_int_equal(proxy_ca_judge(h, time(NULL) + 2 * 86400, err, sizeof err), -1);
	assert_non_null(strstr(err, "expired on"));
	proxy_ca_free(h);
	X509_free(x);

	/* Not a CA; a CA whose keyUsage cannot sign certificates. */
	x = hand_cert(k, 0, NULL, time(NULL) - 10, 86400);
	write_pem(cert, x, NULL);
	h = proxy_ca_load(cert, p, &blame, err, sizeof err);
	assert_non_null(h);
	assert_int_equal(proxy_ca_judge(h, time(NULL), err, sizeof err), -1);
	assert_string_equal(err, "is not a CA certificate (it lacks basicConstraints CA:TRUE)");
	proxy_ca_free(h);
	X509_free(x);
	x = hand_cert(k, 1, "critical,digitalSignature", time(NULL) - 10, 86400);
	write_pem(cert, x, NULL);
	h = proxy_ca_load(cert, p, &blame, err, sizeof err);
	assert_non_null(h);
	assert_int_equal(proxy_ca_judge(h, time(NULL), err, sizeof err), -1);
	assert_string_equal(err, "cannot sign certificates (its keyUsage lacks keyCertSign)");
	proxy_ca_free(h);
	X509_free(x);
	EVP_PKEY_free(k);

	/* Key types: Ed25519 and an odd curve are refused at load, RSA 1024 by the judge, RSA
	 * 2048 and P-384 are fine. */
	static const struct {
		const char *type, *param;
		int loads, judged;
		const char *why;
	} kinds[] = {
	        {"ED25519", NULL, 0, 0, "the CA key must be EC (P-256, P-384, P-521) or RSA"},
	        {"EC", "secp256k1", 0, 0, "clients accept P-256, P-384 and P-521"},
	        {"RSA", "1024", 1, 0, "has a 1024-bit RSA key"},
	        {"RSA", "2048", 1, 1, NULL},
	        {"EC", "P-384", 1, 1, NULL},
	};
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		if (strcmp(kinds[i].type, "RSA") == 0)
			k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)atoi(kinds[i].param));
		else if (kinds[i].param != NULL)
			k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", kinds[i].param);
		else
			k = EVP_PKEY_Q_keygen(NULL, NULL, kinds[i].type);
		assert_non_null(k);
		x = hand_cert(k, 1, NULL, time(NULL) - 10, 86400);
		write_pem(cert, x, NULL);
		write_pem(p, NULL, k);
		h = proxy_ca_load(cert, p, &blame, err, sizeof err);
		if (!kinds[i].loads) {
			assert_null(h);
			assert_int_equal(blame, PROXY_CA_BLAME_KEY);
			assert_non_null(strstr(err, kinds[i].why));
		} else {
			assert_non_null(h);
			assert_int_equal(proxy_ca_judge(h, time(NULL), err, sizeof err),
			        kinds[i].judged ? 0 : -1);
			if (!kinds[i].judged)
				assert_non_null(strstr(err, kinds[i].why));
			else /* and it signs leaves a client accepts */
				assert_int_equal(
				        verify_leaf(h, proxy_ca_leaf(h, "a.test", err, sizeof err),
				                "a.test", NULL, time(NULL)),
				        X509_V_OK);
		}
		proxy_ca_free(h);
		X509_free(x);
		EVP_PKEY_free(k);
	}
	proxy_ca_free(ca2);
	proxy_ca_free(ca);
}

/* ---- leaves --------------------------------------------------------------------------------- */

static void test_leaf_fields(void **state)
{
	(void)state;
	struct proxy_ca *ca = gen(NULL, 0);
	char err[PROXY_CA_ERR], san[256];
	time_t now = time(NULL);
	X509 *l = proxy_ca_leaf_at(ca, "API.GitHub.com.", now, err, sizeof err);
	assert_non_null(l);
	assert_int_equal(X509_get_version(l), X509_VERSION_3);
	san_text(l, san, sizeof san);
	assert_string_equal(san, "DNS:api.github.com");
	char cn[128];
	assert_true(X509_NAME_get_text_by_NID(
	                    X509_get_subject_name(l), NID_commonName, cn, sizeof cn) > 0);
	assert_string_equal(cn, "api.github.com");
	/* Signed by the CA, with the leaf key, for an hour ago to 24 h from now. */
	assert_int_equal(X509_verify(l, X509_get0_pubkey(proxy_ca_cert(ca))), 1);
	assert_int_equal(X509_check_private_key(l, proxy_ca_leaf_key(ca)), 1);
	assert_int_equal(EVP_PKEY_get_bits(X509_get0_pubkey(l)), 256);
	assert_int_equal(ASN1_TIME_cmp_time_t(X509_get0_notBefore(l), now - 3600), 0);
	assert_int_equal(ASN1_TIME_cmp_time_t(X509_get0_notAfter(l), now + 86400), 0);
	BIGNUM *s = ASN1_INTEGER_to_BN(X509_get0_serialNumber(l), NULL);
	assert_true(BN_num_bits(s) <= 159 && !BN_is_negative(s));
	BN_free(s);
	/* EKU serverAuth, not a CA, AKI = the CA's SKI. */
	assert_true(X509_get_extended_key_usage(l) & XKU_SSL_SERVER);
	assert_int_equal(X509_get_extension_flags(l) & EXFLAG_CA, 0);
	assert_int_equal(X509_get_key_usage(l), KU_DIGITAL_SIGNATURE);
	assert_int_equal(ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(l),
	                         X509_get0_subject_key_id(proxy_ca_cert(ca))),
	        0);
	/* What a client's verifier makes of it. */
	assert_int_equal(verify_leaf(ca, l, "api.github.com", NULL, now), X509_V_OK);
	assert_int_equal(verify_leaf(ca, l, "github.com", NULL, now), X509_V_ERR_HOSTNAME_MISMATCH);
	assert_int_equal(verify_leaf(ca, l, "api.github.com", NULL, now + 86400 + 60),
	        X509_V_ERR_CERT_HAS_EXPIRED);
	assert_int_equal(verify_leaf(ca, l, "api.github.com", NULL, now - 3600 - 60),
	        X509_V_ERR_CERT_NOT_YET_VALID);

	/* An address: an IP SAN and no CN; brackets and spellings of one IPv6 address are one. */
	l = proxy_ca_leaf_at(ca, "192.0.2.7", now, err, sizeof err);
	assert_non_null(l);
	san_text(l, san, sizeof san);
	assert_string_equal(san, "IP:4");
	assert_int_equal(
	        X509_NAME_get_text_by_NID(X509_get_subject_name(l), NID_commonName, cn, sizeof cn),
	        -1);
	assert_int_equal(verify_leaf(ca, l, NULL, "192.0.2.7", now), X509_V_OK);
	assert_int_equal(
	        verify_leaf(ca, l, NULL, "192.0.2.8", now), X509_V_ERR_IP_ADDRESS_MISMATCH);
	X509 *a = proxy_ca_leaf_at(ca, "[2001:DB8:0::1]", now, err, sizeof err);
	assert_non_null(a);
	assert_ptr_equal(proxy_ca_leaf_at(ca, "2001:db8::1", now, err, sizeof err), a);
	assert_int_equal(verify_leaf(ca, a, NULL, "2001:db8::1", now), X509_V_OK);

	/* A name longer than a CN: in the SAN alone, under an O=. */
	char longname[PROXY_CA_NAME_MAX + 2];
	memset(longname, 'a', 200);
	memcpy(longname + 60, ".", 1);
	memcpy(longname + 120, ".", 1);
	memcpy(longname + 180, ".test", 6);
	l = proxy_ca_leaf_at(ca, longname, now, err, sizeof err);
	assert_non_null(l);
	assert_int_equal(
	        X509_NAME_get_text_by_NID(X509_get_subject_name(l), NID_commonName, cn, sizeof cn),
	        -1);
	assert_true(X509_NAME_get_text_by_NID(
	                    X509_get_subject_name(l), NID_organizationName, cn, sizeof cn) > 0);
	assert_int_equal(verify_leaf(ca, l, longname, NULL, now), X509_V_OK);

	/* Not names. */
	static const char *const bad[] = {"", ".", "a..b", "a b", "*.x.test", "x/y", "a.test:443",
	        "[192.0.2.1]", "[2001:db8::1", "caf\xc3\xa9.test", "a.-.\x01"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		assert_null(proxy_ca_leaf_at(ca, bad[i], now, err, sizeof err));
		assert_true(err[0] != '\0');
	}
	char label[80];
	memset(label, 'b', 64);
	memcpy(label + 64, ".test", 6);
	assert_null(proxy_ca_leaf_at(ca, label, now, err, sizeof err)); /* a 64-byte label */
	label[1] = '.';
	assert_non_null(proxy_ca_leaf_at(ca, label, now, err, sizeof err));
	memset(longname, 'a', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	for (size_t i = 50; i < sizeof longname - 1; i += 50)
		longname[i] = '.';
	assert_null(proxy_ca_leaf_at(ca, longname, now, err, sizeof err)); /* 254 bytes */
	longname[PROXY_CA_NAME_MAX] = '\0';
	assert_non_null(proxy_ca_leaf_at(ca, longname, now, err, sizeof err)); /* 253 */
	char canon[PROXY_CA_NAME_MAX + 1];
	int ip = -1;
	assert_int_equal(proxy_ca_canon("Foo.Test.", canon, sizeof canon, &ip), 0);
	assert_string_equal(canon, "foo.test");
	assert_int_equal(ip, 0);
	assert_int_equal(proxy_ca_canon("[::FFFF:192.0.2.1]", canon, sizeof canon, &ip), 0);
	assert_string_equal(canon, "::ffff:192.0.2.1");
	assert_int_equal(ip, 1);
	assert_int_equal(proxy_ca_canon("foo.test", canon, 4, &ip), -1);
	/* The canonicaliser every destination passes: inet_aton spellings are addresses, and
	 * what it refuses has no leaf. */
	assert_int_equal(proxy_ca_canon("0x7f.1", canon, sizeof canon, &ip), 0);
	assert_string_equal(canon, "127.0.0.1");
	assert_int_equal(ip, 1);
	assert_ptr_equal(proxy_ca_leaf_at(ca, "127.1", now, err, sizeof err),
	        proxy_ca_leaf_at(ca, "127.0.0.1", now, err, sizeof err));
	assert_null(proxy_ca_leaf_at(ca, "a_b.test", now, err, sizeof err));
	assert_non_null(strstr(err, "a_b.test"));
	proxy_ca_free(ca);
}

/* The validity of a leaf never runs past its CA's. */
static void test_leaf_within_ca(void **state)
{
	(void)state;
	char err[PROXY_CA_ERR];
	struct proxy_ca *ca = proxy_ca_generate(NULL, 0, 0, err, sizeof err); /* ends now */
	assert_non_null(ca);
	X509 *l = proxy_ca_leaf(ca, "a.test", err, sizeof err);
	assert_non_null(l);
	assert_true(ASN1_TIME_compare(
	                    X509_get0_notAfter(l), X509_get0_notAfter(proxy_ca_cert(ca))) <= 0);
	assert_true(ASN1_TIME_compare(
	                    X509_get0_notBefore(l), X509_get0_notBefore(proxy_ca_cert(ca))) >= 0);
	assert_int_equal(proxy_ca_judge(ca, time(NULL) + 1, err, sizeof err), -1);
	proxy_ca_free(ca);
}

static void test_cache(void **state)
{
	(void)state;
	struct proxy_ca *ca = gen(NULL, 0);
	char err[PROXY_CA_ERR], name[64];
	struct proxy_ca_stats st;
	time_t now = time(NULL);
	/* One mint for ten uses of a name, whatever its spelling. */
	X509 *first = proxy_ca_leaf_at(ca, "repo.test", now, err, sizeof err);
	for (int i = 0; i < 9; i++)
		assert_ptr_equal(proxy_ca_leaf_at(ca, i % 2 ? "REPO.test." : "repo.test", now + i,
		                         err, sizeof err),
		        first);
	proxy_ca_get_stats(ca, &st);
	assert_int_equal(st.mints, 1);
	assert_int_equal(st.hits, 9);
	assert_int_equal(st.cached, 1);

	/* Fill the cache; touch name 0 so that name 1 is the least recently used. */
	for (int i = 0; i < PROXY_CA_CACHE_MAX - 1; i++) {
		snprintf(name, sizeof name, "n%d.test", i);
		assert_non_null(proxy_ca_leaf_at(ca, name, now, err, sizeof err));
	}
	proxy_ca_get_stats(ca, &st);
	assert_int_equal(st.cached, PROXY_CA_CACHE_MAX);
	assert_int_equal(st.evictions, 0);
	assert_non_null(proxy_ca_leaf_at(ca, "n0.test", now, err, sizeof err));
	assert_non_null(proxy_ca_leaf_at(ca, "repo.test", now, err, sizeof err));
	assert_non_null(proxy_ca_leaf_at(ca, "new.test", now, err, sizeof err));
	proxy_ca_get_stats(ca, &st);
	assert_int_equal(st.cached, PROXY_CA_CACHE_MAX);
	assert_int_equal(st.evictions, 1);
	uint64_t mints = st.mints;
	assert_non_null(proxy_ca_leaf_at(ca, "n0.test", now, err, sizeof err));
	assert_non_null(proxy_ca_leaf_at(ca, "repo.test", now, err, sizeof err));
	proxy_ca_get_stats(ca, &st);
	assert_int_equal(st.mints, mints); /* both were still there */
	assert_non_null(proxy_ca_leaf_at(ca, "n1.test", now, err, sizeof err));
	proxy_ca_get_stats(ca, &st);
	assert_int_equal(st.mints, mints + 1); /* n1 was the one evicted */
	assert_int_equal(st.evictions, 2);

	/* A leaf past half its life is minted again, in place; its successor is valid from now. */
	X509 *old = proxy_ca_leaf_at(
	        ca, "repo.test", now + PROXY_CA_LEAF_REMINT_S - 1, err, sizeof err);
	assert_ptr_equal(old, first);
	X509 *fresh =
	        proxy_ca_leaf_at(ca, "repo.test", now + PROXY_CA_LEAF_REMINT_S, err, sizeof err);
	assert_non_null(fresh);
	assert_ptr_not_equal(fresh, first);
	assert_int_equal(ASN1_TIME_cmp_time_t(X509_get0_notAfter(fresh),
	                         now + PROXY_CA_LEAF_REMINT_S + PROXY_CA_LEAF_LIFE_S),
	        0);
	proxy_ca_get_stats(ca, &st);
	assert_int_equal(st.cached, PROXY_CA_CACHE_MAX);
	assert_int_equal(st.mints, mints + 2);
	/* The hundred most recently used leaves are found again without a mint (the hash chains
	 * survived the evictions). */
	for (int i = PROXY_CA_CACHE_MAX - 2; i > PROXY_CA_CACHE_MAX - 102; i--) {
		snprintf(name, sizeof name, "n%d.test", i);
		assert_non_null(proxy_ca_leaf_at(ca, name, now, err, sizeof err));
	}
	proxy_ca_get_stats(ca, &st);
	assert_int_equal(st.mints, mints + 2);
	proxy_ca_free(ca);
}

/* ---- name constraints ----------------------------------------------------------------------- */

static void test_name_constraints(void **state)
{
	(void)state;
	static const char *const permit[] = {"github.com", "*.pkg.test:8443", "**.pkg.test",
	        "192.0.2.0/24", "[2001:db8::/32]:*"};
	struct proxy_ca *ca = gen(permit, 5);
	int crit = 0;
	NAME_CONSTRAINTS *nc =
	        X509_get_ext_d2i(proxy_ca_cert(ca), NID_name_constraints, &crit, NULL);
	assert_non_null(nc);
	assert_int_equal(crit, 1);
	assert_int_equal(sk_GENERAL_SUBTREE_num(nc->permittedSubtrees), 4); /* pkg.test once */
	assert_null(nc->excludedSubtrees);
	NAME_CONSTRAINTS_free(nc);
	char err[PROXY_CA_ERR];
	time_t now = time(NULL);
	static const struct {
		const char *host;
		int ok;
	} hosts[] = {
	        {"github.com", 1},
	        {"api.github.com", 1},
	        {"pkg.test", 1},
	        {"a.b.pkg.test", 1},
	        {"github.com.evil.test", 0},
	        {"notgithub.com", 0},
	        {"evil.test", 0},
	        {"192.0.2.200", 1},
	        {"192.0.3.1", 0},
	        {"2001:db8:ffff::1", 1},
	        {"2001:db9::1", 0},
	};
	for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++) {
		assert_int_equal(proxy_ca_permits(ca, hosts[i].host), hosts[i].ok);
		/* and OpenSSL's chain check agrees on the minted leaf */
		X509 *l = proxy_ca_leaf_at(ca, hosts[i].host, now, err, sizeof err);
		assert_non_null(l);
		int is_ip = strchr(hosts[i].host, ':') != NULL ||
		            (hosts[i].host[0] >= '0' && hosts[i].host[0] <= '9');
		int v = verify_leaf(
		        ca, l, is_ip ? NULL : hosts[i].host, is_ip ? hosts[i].host : NULL, now);
		if (hosts[i].ok)
			assert_int_equal(v, X509_V_OK);
		else
			assert_int_equal(v, X509_V_ERR_PERMITTED_VIOLATION);
	}
	assert_int_equal(proxy_ca_permits(ca, "not a name"), -1);
	assert_int_equal(proxy_ca_permits_pattern(ca, "**.github.com", err, sizeof err), 1);
	assert_int_equal(proxy_ca_permits_pattern(ca, "192.0.2.128/25", err, sizeof err), 1);
	assert_int_equal(proxy_ca_permits_pattern(ca, "192.0.2.0/23", err, sizeof err), 0);
	assert_string_equal(err, "192.0.3.255");
	assert_int_equal(
	        proxy_ca_permits_pattern(ca, "**.githubusercontent.com:*", err, sizeof err), 0);
	assert_string_equal(err, "githubusercontent.com");
	assert_int_equal(proxy_ca_permits_pattern(ca, "*.evil.test", err, sizeof err), 0);
	assert_string_equal(err, "x.evil.test");
	proxy_ca_free(ca);

	/* Names only: every address is excluded. */
	static const char *const names[] = {"github.com"};
	ca = gen(names, 1);
	nc = X509_get_ext_d2i(proxy_ca_cert(ca), NID_name_constraints, &crit, NULL);
	assert_int_equal(sk_GENERAL_SUBTREE_num(nc->excludedSubtrees), 2);
	NAME_CONSTRAINTS_free(nc);
	assert_int_equal(proxy_ca_permits(ca, "192.0.2.1"), 0);
	assert_int_equal(proxy_ca_permits(ca, "::1"), 0);
	X509 *l = proxy_ca_leaf_at(ca, "192.0.2.1", now, err, sizeof err);
	assert_int_equal(verify_leaf(ca, l, NULL, "192.0.2.1", now), X509_V_ERR_EXCLUDED_VIOLATION);
	assert_int_equal(proxy_ca_permits_pattern(ca, "github.com", err, sizeof err), 1);
	proxy_ca_free(ca);

	/* Patterns that cannot be a constraint. */
	static const char *const bad[][1] = {
	        {"*.com"}, {"[2001:db8::1"}, {"a.test/8"}, {"192.0.2.0/33"}, {"bad name"}};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		assert_null(proxy_ca_generate(bad[i], 1, 1, err, sizeof err));
		assert_true(err[0] != '\0');
	}
}

/* ---- the trust bundle ----------------------------------------------------------------------- */

/* Certificates a PEM file holds, as OpenSSL's loader counts them. */
static int pem_count(const char *path)
{
	X509_STORE *st = X509_STORE_new();
	X509_LOOKUP *lk = X509_STORE_add_lookup(st, X509_LOOKUP_file());
	int n = X509_load_cert_file(lk, path, X509_FILETYPE_PEM);
	X509_STORE_free(st);
	ERR_clear_error();
	return n;
}

static void test_bundle(void **state)
{
	(void)state;
	char sys[300], out[300], err[PROXY_CA_ERR];
	struct proxy_ca *a = gen(NULL, 0), *b = gen(NULL, 0), *c = gen(NULL, 0);
	/* A "system" file of two certificates, without a final newline. */
	BIO *m = BIO_new(BIO_s_mem());
	PEM_write_bio_X509(m, proxy_ca_cert(a));
	PEM_write_bio_X509(m, proxy_ca_cert(b));
	char *data;
	long n = BIO_get_mem_data(m, &data);
	char *systext = strndup(data, (size_t)n - 1);
	assert_non_null(systext);
	write_text(tpath(sys, sizeof sys, "system.pem"), systext, (size_t)n - 1);
	BIO_free(m);
	tpath(out, sizeof out, "bundle.pem");
	int written = -1;
	assert_int_equal(proxy_ca_bundle_write(c, sys, out, &written, err, sizeof err), 0);
	assert_int_equal(written, 1);
	assert_int_equal(pem_count(out), 3);
	struct stat st;
	assert_int_equal(stat(out, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	/* The system text first, as it was, then a comment and the CA. */
	char *text = NULL;
	size_t len = 0;
	FILE *f = fopen(out, "r");
	assert_non_null(f);
	assert_int_equal(getdelim(&text, &len, '\0', f) > 0, 1);
	fclose(f);
	assert_int_equal(memcmp(text, systext, (size_t)n - 1), 0);
	free(systext);
	assert_non_null(
	        strstr(text, "-----END CERTIFICATE-----\n# egressd inspection CA: /O=egressd/CN="));
	free(text);
	/* Fresh: not written again.  Stale (another CA, or the system file changed): rewritten. */
	assert_int_equal(proxy_ca_bundle_write(c, sys, out, &written, err, sizeof err), 0);
	assert_int_equal(written, 0);
	assert_int_equal(proxy_ca_bundle_write(a, sys, out, &written, err, sizeof err), 0);
	assert_int_equal(written, 1);
	write_text(sys, "\n", 1);
	assert_int_equal(proxy_ca_bundle_write(a, sys, out, &written, err, sizeof err), 0);
	assert_int_equal(written, 1);
	assert_int_equal(pem_count(out), 1);
	/* Without a system file: the CA alone.  A missing system file is an error. */
	assert_int_equal(proxy_ca_bundle_write(b, NULL, out, &written, err, sizeof err), 0);
	assert_int_equal(pem_count(out), 1);
	assert_int_equal(proxy_ca_bundle_write(b, tpath(sys, sizeof sys, "none.pem"), out, &written,
	                         err, sizeof err),
	        -1);
	assert_non_null(strstr(err, "cannot read the system CAs"));
	assert_int_equal(
	        proxy_ca_bundle_write(b, NULL, "/proc/nope/bundle.pem", &written, err, sizeof err),
	        -1);
	/* The system store found here is a real bundle. */
	const char *found = proxy_ca_system_bundle();
	if (found != NULL)
		assert_true(pem_count(found) > 0);
	proxy_ca_free(a);
	proxy_ca_free(b);
	proxy_ca_free(c);
}

static void test_trust_env(void **state)
{
	(void)state;
	static const char *const want[] = {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
	        "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "PIP_CERT", "npm_config_cafile",
	        "CARGO_HTTP_CAINFO", "AWS_CA_BUNDLE", "DENO_CERT"};
	size_t i;
	for (i = 0; proxy_ca_trust_env[i].name != NULL; i++) {
		assert_true(i < sizeof want / sizeof want[0]);
		assert_string_equal(proxy_ca_trust_env[i].name, want[i]);
		assert_true(strlen(proxy_ca_trust_env[i].readers) > 0);
	}
	assert_int_equal(i, sizeof want / sizeof want[0]);
}

/* ---- handshakes ----------------------------------------------------------------------------- */

/* One handshake step of ssl: 1 done, 0 waiting for the peer, -1 failed. */
static int step(SSL *ssl)
{
	int r = SSL_do_handshake(ssl);
	if (r == 1)
		return 1;
	return SSL_get_error(ssl, r) == SSL_ERROR_WANT_READ ? 0 : -1;
}

/* Runs the handshake between a client and a server SSL joined by a BIO pair, until both are
 * done or one failed and the other has read what it sent (its alert).  Returns 1 when both
 * finished, 0 otherwise. */
static int handshake(SSL *client, SSL *server)
{
	BIO *a, *b;
	assert_int_equal(BIO_new_bio_pair(&a, 0, &b, 0), 1);
	SSL_set_bio(client, a, a);
	SSL_set_bio(server, b, b);
	SSL_set_connect_state(client);
	SSL_set_accept_state(server);
	int c = 0, s = 0;
	for (int i = 0; i < 50 && !(c == 1 && s == 1) && c != -1 && s != -1; i++) {
		if (c == 0)
			c = step(client);
		if (s == 0)
			s = step(server);
	}
	if (c == 0 && s == -1)
		c = step(client);
	if (s == 0 && c == -1)
		s = step(server);
	return c == 1 && s == 1;
}

/* A plain client that trusts ca only. */
static SSL_CTX *trusting_client(struct proxy_ca *ca, const unsigned char *alpn, unsigned alen)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	assert_non_null(ctx);
	assert_int_equal(X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), proxy_ca_cert(ca)), 1);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (alpn != NULL)
		assert_int_equal(SSL_CTX_set_alpn_protos(ctx, alpn, alen), 0);
	return ctx;
}

static void test_client_side(void **state)
{
	(void)state;
	struct proxy_ca *ca = gen(NULL, 0);
	char err[PROXY_CA_ERR];
	SSL_CTX *sctx = proxy_tls_client_ctx_new(ca, err, sizeof err);
	assert_non_null(sctx);
	static const unsigned char both[] = "\x02h2\x08http/1.1";
	static const unsigned char h2only[] = "\x02h2";
	SSL_CTX *cctx = trusting_client(ca, both, sizeof both - 1);
	static const int versions[] = {TLS1_2_VERSION, TLS1_3_VERSION};
	for (size_t v = 0; v < 2; v++) {
		/* Ten connections to one host: one mint, SAN = SNI, http/1.1, verified. */
		for (int i = 0; i < 10; i++) {
			SSL *c = SSL_new(cctx), *s = SSL_new(sctx);
			SSL_set_max_proto_version(c, versions[v]);
			SSL_set_tlsext_host_name(c, "origin.test");
			SSL_set1_host(c, "origin.test");
			assert_int_equal(proxy_tls_client_prepare(s, "Origin.Test"), 0);
			assert_int_equal(handshake(c, s), 1);
			assert_int_equal(SSL_get_verify_result(c), X509_V_OK);
			assert_int_equal(SSL_version(c), versions[v]);
			const unsigned char *proto;
			unsigned plen;
			SSL_get0_alpn_selected(c, &proto, &plen);
			assert_int_equal(plen, 8);
			assert_memory_equal(proto, "http/1.1", 8);
			X509 *peer = SSL_get1_peer_certificate(c);
			char san[128];
			san_text(peer, san, sizeof san);
			assert_string_equal(san, "DNS:origin.test");
			X509_free(peer);
			assert_null(proxy_tls_client_failure(s));
			SSL_free(c);
			SSL_free(s);
		}
	}
	struct proxy_ca_stats st;
	proxy_ca_get_stats(ca, &st);
	assert_int_equal(st.mints, 1);
	assert_int_equal(st.hits, 19);

	/* A ClientHello naming another host than the tunnel's: refused, unrecognized_name. */
	SSL *c = SSL_new(cctx), *s = SSL_new(sctx);
	SSL_set_tlsext_host_name(c, "other.test");
	assert_int_equal(proxy_tls_client_prepare(s, "origin.test"), 0);
	assert_int_equal(handshake(c, s), 0);
	assert_string_equal(proxy_tls_client_failure(s), "sni-mismatch");
	int alerted = 0; /* the client's side of the shared error queue got the alert */
	for (unsigned long e; (e = ERR_get_error()) != 0;)
		alerted |= ERR_GET_REASON(e) == SSL_R_TLSV1_UNRECOGNIZED_NAME;
	assert_true(alerted);
	SSL_free(c);
	SSL_free(s);
	/* An SSL nobody prepared: refused. */
	c = SSL_new(cctx);
	s = SSL_new(sctx);
	SSL_set_tlsext_host_name(c, "origin.test");
	assert_int_equal(handshake(c, s), 0);
	assert_string_equal(proxy_tls_client_failure(s), "not-prepared");
	ERR_clear_error();
	SSL_free(c);
	SSL_free(s);
	/* No SNI for an address: the leaf has the IP SAN.  (A second prepare replaces the
	 * first, which ASan checks is freed.) */
	c = SSL_new(cctx);
	s = SSL_new(sctx);
	X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c), "127.0.0.1");
	assert_int_equal(proxy_tls_client_prepare(s, "origin.test"), 0);
	assert_int_equal(proxy_tls_client_prepare(s, "127.0.0.1"), 0);
	assert_int_equal(handshake(c, s), 1);
	assert_int_equal(SSL_get_verify_result(c), X509_V_OK);
	SSL_free(c);
	SSL_free(s);
	/* A host the CA cannot mint for is refused at prepare. */
	s = SSL_new(sctx);
	assert_int_equal(proxy_tls_client_prepare(s, "bad host"), -1);
	SSL_free(s);
	SSL_CTX_free(cctx);

	/* A client offering only h2 gets no ALPN; one below TLS 1.2 gets nothing. */
	cctx = trusting_client(ca, h2only, sizeof h2only - 1);
	c = SSL_new(cctx);
	s = SSL_new(sctx);
	SSL_set_tlsext_host_name(c, "origin.test");
	assert_int_equal(proxy_tls_client_prepare(s, "origin.test"), 0);
	assert_int_equal(handshake(c, s), 1);
	const unsigned char *proto;
	unsigned plen;
	SSL_get0_alpn_selected(c, &proto, &plen);
	assert_int_equal(plen, 0);
	SSL_free(c);
	SSL_free(s);
	c = SSL_new(cctx);
	s = SSL_new(sctx);
	SSL_set_max_proto_version(c, TLS1_1_VERSION);
	SSL_set_security_level(c, 0);
	SSL_set_tlsext_host_name(c, "origin.test");
	assert_int_equal(proxy_tls_client_prepare(s, "origin.test"), 0);
	assert_int_equal(handshake(c, s), 0);
	ERR_clear_error();
	SSL_free(c);
	SSL_free(s);
	SSL_CTX_free(cctx);
	SSL_CTX_free(sctx);
	proxy_ca_free(ca);
}

/* A handshake that outlives its config generation: the CA and the context are freed by their
 * owner while an SSL of that context is still in its handshake (a reload in the middle). */
static void test_ca_outlives_generation(void **state)
{
	(void)state;
	struct proxy_ca *ca = gen(NULL, 0);
	char err[PROXY_CA_ERR];
	SSL_CTX *sctx = proxy_tls_client_ctx_new(ca, err, sizeof err);
	SSL_CTX *cctx = trusting_client(ca, NULL, 0);
	SSL *s = SSL_new(sctx), *c = SSL_new(cctx);
	assert_int_equal(proxy_tls_client_prepare(s, "late.test"), 0);
	SSL_set_tlsext_host_name(c, "late.test");
	SSL_set1_host(c, "late.test");
	X509 *cacert = proxy_ca_cert(ca);
	X509_up_ref(cacert);
	proxy_ca_free(ca);  /* the generation's reference */
	SSL_CTX_free(sctx); /* and its context: the SSL keeps both alive */
	assert_int_equal(handshake(c, s), 1);
	assert_int_equal(SSL_get_verify_result(c), X509_V_OK);
	SSL_free(s); /* the last reference: the CA goes (ASan sees any leak) */
	SSL_free(c);
	SSL_CTX_free(cctx);
	X509_free(cacert);
}

/* A server presenting leaf (with key) for the upstream tests. */
static SSL_CTX *server_with(X509 *leaf, EVP_PKEY *key)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	assert_non_null(ctx);
	assert_int_equal(SSL_CTX_use_cert_and_key(ctx, leaf, key, NULL, 1), 1);
	return ctx;
}

/* Runs an upstream handshake against sctx for host; returns 1 on success, else the reason. */
static int upstream_try(SSL_CTX *uctx, SSL_CTX *sctx, const char *host, char *reason, size_t cap)
{
	SSL *u = proxy_tls_upstream_new(uctx, host);
	assert_non_null(u);
	SSL *s = SSL_new(sctx);
	int ok = handshake(u, s);
	reason[0] = '\0';
	if (!ok)
		proxy_tls_upstream_reason(u, ERR_peek_last_error(), reason, cap);
	ERR_clear_error();
	SSL_free(u);
	SSL_free(s);
	return ok;
}

static void test_upstream_side(void **state)
{
	(void)state;
	struct proxy_ca *ca = gen(NULL, 0), *stranger = gen(NULL, 0);
	char err[PROXY_CA_ERR], bundle[300], reason[PROXY_TLS_REASON_MAX];
	write_pem(tpath(bundle, sizeof bundle, "upstream-ca.pem"), proxy_ca_cert(ca), NULL);
	SSL_CTX *uctx = proxy_tls_upstream_ctx_new(bundle, err, sizeof err);
	assert_non_null(uctx);

	/* The right name: verified, SNI sent, ALPN http/1.1 (the server is the client-facing
	 * context itself, so both halves of an inspected tunnel meet here). */
	SSL_CTX *inspected = proxy_tls_client_ctx_new(ca, err, sizeof err);
	SSL *u = proxy_tls_upstream_new(uctx, "origin.test");
	SSL *s = SSL_new(inspected);
	assert_int_equal(proxy_tls_client_prepare(s, "origin.test"), 0);
	assert_int_equal(handshake(u, s), 1);
	assert_string_equal(SSL_get_servername(s, TLSEXT_NAMETYPE_host_name), "origin.test");
	const unsigned char *proto;
	unsigned plen;
	SSL_get0_alpn_selected(u, &proto, &plen);
	assert_int_equal(plen, 8);
	SSL_free(u);
	SSL_free(s);

	/* A certificate for another name. */
	SSL_CTX *sctx = server_with(
	        proxy_ca_leaf(ca, "other.test", err, sizeof err), proxy_ca_leaf_key(ca));
	assert_int_equal(upstream_try(uctx, sctx, "origin.test", reason, sizeof reason), 0);
	assert_string_equal(reason, "certificate verify failed: hostname mismatch: the certificate "
	                            "is for other.test, not origin.test");
	SSL_CTX_free(sctx);
	/* The same for an address. */
	sctx = server_with(proxy_ca_leaf(ca, "127.0.0.2", err, sizeof err), proxy_ca_leaf_key(ca));
	assert_int_equal(upstream_try(uctx, sctx, "127.0.0.1", reason, sizeof reason), 0);
	assert_string_equal(reason,
	        "certificate verify failed: IP address mismatch: the certificate "
	        "is for 127.0.0.2, not 127.0.0.1");
	assert_int_equal(upstream_try(uctx, sctx, "127.0.0.2", reason, sizeof reason), 1);
	SSL_CTX_free(sctx);
	/* An issuer tls.upstreamCA does not hold. */
	sctx = server_with(proxy_ca_leaf(stranger, "origin.test", err, sizeof err),
	        proxy_ca_leaf_key(stranger));
	assert_int_equal(upstream_try(uctx, sctx, "origin.test", reason, sizeof reason), 0);
	assert_non_null(strstr(reason, "certificate verify failed: unable to get local issuer "
	                               "certificate (issuer /O=egressd/CN=egressd inspection CA "));
	assert_non_null(strstr(reason, " is not in tls.upstreamCA)"));
	SSL_CTX_free(sctx);
	/* An expired certificate. */
	sctx = server_with(
	        proxy_ca_leaf_at(ca, "old.test", time(NULL) - 3 * 86400, err, sizeof err),
	        proxy_ca_leaf_key(ca));
	assert_int_equal(upstream_try(uctx, sctx, "old.test", reason, sizeof reason), 0);
	assert_string_equal(reason, "certificate verify failed: certificate has expired");
	SSL_CTX_free(sctx);
	/* A server that only does TLS 1.1. */
	sctx = server_with(
	        proxy_ca_leaf(ca, "origin.test", err, sizeof err), proxy_ca_leaf_key(ca));
	SSL_CTX_set_max_proto_version(sctx, TLS1_1_VERSION);
	SSL_CTX_set_security_level(sctx, 0);
	assert_int_equal(upstream_try(uctx, sctx, "origin.test", reason, sizeof reason), 0);
	assert_non_null(strstr(reason, "TLS handshake failed: "));
	SSL_CTX_free(sctx);

	/* A server that answers in plain HTTP, and one that hangs up. */
	u = proxy_tls_upstream_new(uctx, "origin.test");
	BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
	BIO_write(rb, "HTTP/1.1 400 Bad Request\r\n\r\n", 28);
	SSL_set_bio(u, rb, wb);
	int r = SSL_do_handshake(u);
	assert_int_equal(SSL_get_error(u, r), SSL_ERROR_SSL);
	proxy_tls_upstream_reason(u, ERR_peek_last_error(), reason, sizeof reason);
	assert_string_equal(reason, "TLS handshake failed: wrong version number");
	ERR_clear_error();
	SSL_free(u);
	u = proxy_tls_upstream_new(uctx, "origin.test");
	proxy_tls_upstream_reason(u, 0, reason, sizeof reason);
	assert_string_equal(reason, "TLS handshake failed: the upstream closed the connection");
	SSL_free(u);
	/* Not a host: no SSL. */
	assert_null(proxy_tls_upstream_new(uctx, "a b"));
	SSL_CTX_free(uctx);

	/* A bundle without certificates is refused; the system store loads. */
	write_text(tpath(bundle, sizeof bundle, "empty.pem"), "\n", 1);
	assert_null(proxy_tls_upstream_ctx_new(bundle, err, sizeof err));
	assert_non_null(strstr(err, "cannot load the CAs from"));
	uctx = proxy_tls_upstream_ctx_new(NULL, err, sizeof err);
	assert_non_null(uctx);
	SSL_CTX_free(uctx);
	SSL_CTX_free(inspected);
	proxy_ca_free(stranger);
	proxy_ca_free(ca);
}

/* A certificate's names in a reason are the upstream's text: reduced to printable ASCII. */
static void test_reason_cleaned(void **state)
{
	(void)state;
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	X509 *x = hand_cert(k, 0, NULL, time(NULL) - 10, 86400);
	GENERAL_NAMES *san = sk_GENERAL_NAME_new_null();
	static const char *const names[] = {
	        "a\r\nX-Evil: 1", "b.test", "c.test", "d.test", "e.test"};
	for (size_t i = 0; i < 5; i++) {
		GENERAL_NAME *g = GENERAL_NAME_new();
		ASN1_IA5STRING *s = ASN1_IA5STRING_new();
		ASN1_STRING_set(s, names[i], (int)strlen(names[i]));
		GENERAL_NAME_set0_value(g, GEN_DNS, s);
		sk_GENERAL_NAME_push(san, g);
	}
	X509_add1_ext_i2d(x, NID_subject_alt_name, san, 0, X509V3_ADD_DEFAULT);
	GENERAL_NAMES_free(san);
	X509_sign(x, k, EVP_sha256());
	char bundle[300], err[PROXY_CA_ERR], reason[PROXY_TLS_REASON_MAX];
	write_pem(tpath(bundle, sizeof bundle, "self.pem"), x, NULL);
	SSL_CTX *uctx = proxy_tls_upstream_ctx_new(bundle, err, sizeof err);
	X509_VERIFY_PARAM_set_flags(SSL_CTX_get0_param(uctx), X509_V_FLAG_PARTIAL_CHAIN);
	SSL_CTX *sctx = server_with(x, k);
	assert_int_equal(upstream_try(uctx, sctx, "z.test", reason, sizeof reason), 0);
	assert_string_equal(reason,
	        "certificate verify failed: hostname mismatch: the certificate is "
	        "for a??X-Evil: 1, b.test, c.test and 2 more, not z.test");
	/* A short buffer is cut, and still ends in NUL. */
	SSL *u = proxy_tls_upstream_new(uctx, "z.test");
	proxy_tls_upstream_reason(u, 0, reason, 10);
	assert_string_equal(reason, "TLS hands");
	SSL_free(u);
	SSL_CTX_free(sctx);
	SSL_CTX_free(uctx);
	X509_free(x);
	EVP_PKEY_free(k);
}

/* ---- from a config -------------------------------------------------------------------------- */

/* Loads yaml as the file tmpdir/c.yaml and builds its TLS in mode; the error lines joined by
 * '\n' into out (empty when it built). */
static struct proxy_tls *tls_from(const char *yaml, enum proxy_tls_mode mode, char *out, size_t cap)
{
	char path[300];
	tpath(path, sizeof path, "c.yaml");
	write_text(path, yaml, strlen(yaml));
	struct allow_errors e = {0};
	struct allow_config *cfg = allow_config_load(path, &e);
	if (cfg == NULL)
		print_message("config: %s\n", e.lines[0]);
	assert_non_null(cfg);
	struct proxy_tls *t = proxy_tls_new(cfg, mode, time(NULL), &e);
	size_t o = 0;
	out[0] = '\0';
	for (size_t i = 0; i < e.n; i++)
		o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? "\n" : "", e.lines[i]);
	assert_true((t == NULL) == (e.n > 0));
	allow_errors_free(&e);
	allow_config_free(cfg);
	return t;
}

static void test_from_config(void **state)
{
	(void)state;
	char out[4096], want[2048], err[PROXY_CA_ERR], dir[300];
	struct proxy_ca *ca = gen(NULL, 0);
	assert_int_equal(proxy_ca_write(ca, tpath(dir, sizeof dir, "cfgca"), err, sizeof err), 0);
	static const char *const gh[] = {"github.com"};
	struct proxy_ca *nc = gen(gh, 1);
	assert_int_equal(proxy_ca_write(nc, tpath(dir, sizeof dir, "ncca"), err, sizeof err), 0);

	/* Nothing asked, nothing built. */
	struct proxy_tls *t =
	        tls_from("sessions: {default: {}}\n", PROXY_TLS_SERVE, out, sizeof out);
	assert_non_null(t);
	assert_null(t->ca);
	assert_null(t->client);
	assert_null(t->upstream);
	proxy_tls_free(t);

	/* A CA (relative paths) and an inspecting session: both contexts. */
	t = tls_from("tls: {ca: {cert: cfgca/ca.pem, key: cfgca/ca.key}}\n"
	             "sessions: {default: {bound: {network: {inspect: [origin.test]}}}}\n",
	        PROXY_TLS_SERVE, out, sizeof out);
	assert_non_null(t);
	assert_non_null(t->ca);
	assert_non_null(t->client);
	assert_non_null(t->upstream);
	assert_int_equal(t->ephemeral, 0);
	assert_int_equal(X509_cmp(proxy_ca_cert(t->ca), proxy_ca_cert(ca)), 0);
	proxy_tls_free(t);

	/* Inspection without tls.ca: an error for serve (and check) ... */
	static const char insp[] =
	        "sessions:\n  a: {bound: {network: {inspect: [github.com, \"*.pkg.test\"]}}}\n"
	        "  b: {}\n";
	assert_null(tls_from(insp, PROXY_TLS_SERVE, out, sizeof out));
	snprintf(want, sizeof want,
	        "%s/c.yaml: sessions.a: inspects github.com, ... but tls.ca is not set (egressd ca "
	        "init DIR writes a CA; name its ca.pem and ca.key in tls.ca)",
	        tmpdir);
	assert_string_equal(out, want);
	/* ... and a CA in memory for exec, which may vouch for the inspected hosts only. */
	t = tls_from(insp, PROXY_TLS_EXEC, out, sizeof out);
	assert_non_null(t);
	assert_int_equal(t->ephemeral, 1);
	assert_non_null(t->client);
	assert_int_equal(proxy_ca_permits(t->ca, "github.com"), 1);
	assert_int_equal(proxy_ca_permits(t->ca, "a.pkg.test"), 1);
	assert_int_equal(proxy_ca_permits(t->ca, "other.test"), 0);
	assert_int_equal(proxy_ca_permits(t->ca, "192.0.2.1"), 0);
	char line[512];
	proxy_ca_describe(t->ca, line, sizeof line);
	assert_non_null(strstr(line, "name constraints"));
	proxy_tls_free(t);

	/* Each file problem at its key's place. */
	static const struct {
		const char *yaml;
		const char *want; /* after "DIR/c.yaml:"; each @ stands for DIR */
	} cases[] = {
	        {"tls:\n  ca: {cert: nope.pem, key: cfgca/ca.key}\n",
	                "2:14: tls.ca.cert: cannot read \"@/nope.pem\": No such file or directory"},
	        {"tls:\n  ca: {cert: cfgca/ca.pem, key: ncca/ca.key}\n",
	                "2:33: tls.ca.key: \"@/ncca/ca.key\" is not the key of the certificate in "
	                "\"@/cfgca/ca.pem\""},
	        {"tls:\n  ca: {cert: cfgca/ca.key, key: cfgca/ca.key}\n",
	                "2:14: tls.ca.cert: \"@/cfgca/ca.key\" holds no PEM certificate"},
	        {"tls:\n  upstreamCA: missing.pem\n",
	                "2:15: tls.upstreamCA: cannot read \"@/missing.pem\": No such file or "
	                "directory"},
	        {"tls:\n  upstreamCA: cfgca/ca.key\n",
	                "2:15: tls.upstreamCA: cannot load the CAs from \"@/cfgca/ca.key\": no "
	                "certificate or crl found"},
	        {"tls:\n  ca: {cert: ncca/ca.pem, key: ncca/ca.key}\n"
	         "sessions: {s: {bound: {network: {inspect: [\"**.github.com\", x.test]}}}}\n",
	                "2:14: tls.ca.cert: the CA's name constraints do not permit x.test, which "
	                "session s inspects (x.test): clients would refuse its certificates"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t o = (size_t)snprintf(want, sizeof want, "%s/c.yaml:", tmpdir);
		for (const char *c = cases[i].want; *c && o + 1 < sizeof want; c++)
			o += (size_t)snprintf(want + o, sizeof want - o, "%s",
			        *c == '@' ? tmpdir : (char[]){*c, 0});
		assert_null(tls_from(cases[i].yaml, PROXY_TLS_SERVE, out, sizeof out));
		assert_string_equal(out, want);
	}
	/* An expired CA. */
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	X509 *x = hand_cert(k, 1, NULL, 86400, 86400); /* 2 January 1970 */
	char p[300];
	write_pem(tpath(p, sizeof p, "old.pem"), x, NULL);
	write_pem(tpath(p, sizeof p, "old.key"), NULL, k);
	assert_null(tls_from(
	        "tls: {ca: {cert: old.pem, key: old.key}}\n", PROXY_TLS_EXEC, out, sizeof out));
	snprintf(want, sizeof want,
	        "%s/c.yaml:1:18: tls.ca.cert: \"%s/old.pem\" expired on 1970-01-03", tmpdir,
	        tmpdir);
	assert_string_equal(out, want);
	X509_free(x);
	EVP_PKEY_free(k);

	/* What check prints. */
	t = tls_from(
	        "tls: {ca: {cert: cfgca/ca.pem, key: cfgca/ca.key}, upstreamCA: cfgca/ca.pem}\n",
	        PROXY_TLS_SERVE, out, sizeof out);
	assert_non_null(t);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct allow_errors e = {0};
	snprintf(p, sizeof p, "%s/c.yaml", tmpdir);
	struct allow_config *cfg = allow_config_load(p, &e);
	proxy_tls_print(t, cfg, f);
	fclose(f);
	snprintf(want, sizeof want, "tls.ca: %s/cfgca/ca.pem: /O=egressd/CN=egressd inspection CA ",
	        tmpdir);
	assert_memory_equal(text, want, strlen(want));
	snprintf(want, sizeof want, "tls.upstreamCA: %s/cfgca/ca.pem\n", tmpdir);
	assert_non_null(strstr(text, want));
	free(text);
	allow_errors_free(&e);
	allow_config_free(cfg);
	proxy_tls_free(t);
	proxy_ca_free(nc);
	proxy_ca_free(ca);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_generate),
	        cmocka_unit_test(test_write_and_load),
	        cmocka_unit_test(test_load_refusals),
	        cmocka_unit_test(test_leaf_fields),
	        cmocka_unit_test(test_leaf_within_ca),
	        cmocka_unit_test(test_cache),
	        cmocka_unit_test(test_name_constraints),
	        cmocka_unit_test(test_bundle),
	        cmocka_unit_test(test_trust_env),
	        cmocka_unit_test(test_client_side),
	        cmocka_unit_test(test_ca_outlives_generation),
	        cmocka_unit_test(test_upstream_side),
	        cmocka_unit_test(test_reason_cleaned),
	        cmocka_unit_test(test_from_config),
	};
	return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
