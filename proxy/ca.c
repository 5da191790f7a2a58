/* The inspection CA: making, loading and judging one, the leaves it mints and their cache, and
 * the trust bundle for clients (docs/inspection.md).
 *
 * A mint is cheap on purpose: the extensions every leaf shares (basicConstraints, keyUsage,
 * extendedKeyUsage, authorityKeyIdentifier) are built once per CA and copied, every leaf carries
 * the same public key (made once per CA), and what is left per name is the serial, the dates,
 * the subject, the SAN and one signature. */
#include "proxy/ca.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "allowlist/host.h"

#define CA_FILE_MAX (1024 * 1024)        /* a PEM certificate or key larger than this is wrong */
#define CA_SYSTEM_MAX (16 * 1024 * 1024) /* the system bundle (Debian's is about 200 KiB) */
#define CA_BUCKETS 2048                  /* hash buckets, at least twice PROXY_CA_CACHE_MAX */
#define CA_SERIAL_BYTES 20               /* 159 random bits: the top bit is cleared */
#define CA_CN_MAX 64                     /* ub-common-name (RFC 5280) */
#define CA_NIL (-1)                      /* the end of an index list */

const struct proxy_ca_env proxy_ca_trust_env[] = {
#define PROXY_CA_ENV_ROW(name, readers) {name, readers},
        PROXY_CA_TRUST_ENV(PROXY_CA_ENV_ROW)
#undef PROXY_CA_ENV_ROW
                {NULL, NULL},
};

/* One cached leaf.  Entries live in one array and are linked by index: a bucket chain for the
 * lookup and a doubly linked list in order of use (head = most recent) for eviction. */
struct leaf_entry {
	char name[PROXY_CA_NAME_MAX + 1]; /* the canonical name or address text: the key */
	X509 *cert;                       /* the leaf (owned) */
	time_t minted;                    /* when it was signed */
	uint64_t hash;                    /* of name */
	int32_t chain;                    /* next entry in the same bucket */
	int32_t prev, next;               /* the use order */
};

struct proxy_ca {
	X509 *cert;        /* the CA certificate (owned) */
	EVP_PKEY *key;     /* its private key (owned) */
	const EVP_MD *md;  /* the digest leaves are signed with */
	time_t not_before; /* the CA's validity, which bounds every leaf's */
	time_t not_after;
	NAME_CONSTRAINTS *nc; /* the CA's name constraints, or NULL (owned) */
	EVP_PKEY *leaf_key;   /* the key pair every leaf carries (owned) */
	X509 *tmpl;           /* what every leaf shares (leaf_template_init; owned) */
	uint64_t seed;        /* of the cache's hash: names come from clients */
	unsigned refs;        /* the owner's, plus one per client context (proxy_ca_hold) */
	struct leaf_entry *e; /* cache entries, ne used of cape */
	int32_t ne, cape;
	int32_t head, tail; /* most and least recently used */
	int32_t bucket[CA_BUCKETS];
	struct proxy_ca_stats stats;
};

/* ---- small helpers -------------------------------------------------------------------------- */

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

/* The reason of OpenSSL's most recent error (static text), and the queue cleared. */
static const char *ossl_why(void)
{
	unsigned long e = ERR_peek_last_error();
	const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;
	ERR_clear_error();
	return r != NULL ? r : "an OpenSSL call failed";
}

/* Reads a whole regular file of at most max bytes into a new buffer (NUL-terminated).  0, or -1
 * with a reason in why.  O_NONBLOCK: a FIFO must not hang `egressd check`; fstat refuses it. */
static int file_read(
        const char *path, size_t max, char **out, size_t *outlen, char *why, size_t whylen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd == -1) {
		say(why, whylen, "%s", strerror(errno));
		return -1;
	}
	struct stat st;
	const char *bad = NULL;
	if (fstat(fd, &st) == -1)
		bad = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		bad = "not a regular file";
	else if ((uint64_t)st.st_size > max)
		bad = "larger than expected";
	if (bad != NULL) {
		say(why, whylen, "%s", bad);
		close(fd);
		return -1;
	}
	char *buf = malloc((size_t)st.st_size + 1);
	size_t len = 0;
	while (buf != NULL) {
		ssize_t r = read(fd, buf + len, (size_t)st.st_size + 1 - len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1 || (len += (size_t)(r > 0 ? r : 0)) > (size_t)st.st_size) {
			say(why, whylen, "%s",
			        r == -1 ? strerror(errno) : "the file grew while read");
			free(buf);
			close(fd);
			return -1;
		}
		if (r == 0)
			break;
	}
	close(fd);
	if (buf == NULL) {
		say(why, whylen, "out of memory");
		return -1;
	}
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	return 0;
}

/* time_t of an ASN1_TIME, or -1. */
static time_t asn1_time_t(const ASN1_TIME *t)
{
	struct tm tm;
	if (t == NULL || ASN1_TIME_to_tm(t, &tm) != 1)
		return (time_t)-1;
	return timegm(&tm);
}

/* "2035-06-01" of an ASN1_TIME. */
static void date_text(const ASN1_TIME *t, char *buf, size_t cap)
{
	struct tm tm;
	if (t == NULL || ASN1_TIME_to_tm(t, &tm) != 1 || strftime(buf, cap, "%Y-%m-%d", &tm) == 0)
		say(buf, cap, "(unknown date)");
}

/* A random positive serial of 159 bits into x. */
static int serial_set(X509 *x)
{
	unsigned char b[CA_SERIAL_BYTES];
	if (RAND_bytes(b, sizeof b) != 1)
		return -1;
	b[0] &= 0x7f;
	BIGNUM *bn = BN_bin2bn(b, sizeof b, NULL);
	int ok = bn != NULL && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
	BN_free(bn);
	return ok ? 0 : -1;
}

/* ---- names ------------------------------------------------------------------------------ */

/* A name or address a leaf is made for. */
struct leaf_name {
	char text[PROXY_CA_NAME_MAX + 1]; /* canonical: lower-case name, or inet_ntop's address */
	int is_ip;                        /* 1: ip[0..iplen) is the address */
	unsigned char ip[16];
	int iplen;
};

/* Reads host into *out through the one canonicaliser every destination passes
 * (allow_canon_host, docs/policy.md 1): a name, any inet_aton spelling of an IPv4 address, or an
 * IPv6 literal with or without brackets.  0, or -1 with a reason. */
static int name_parse(const char *host, struct leaf_name *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	struct allow_dest d;
	size_t len = strlen(host);
	enum allow_canon_err ce = allow_canon_host(host, len, &d);
	if (ce != ALLOW_CANON_OK) {
		say(err, errlen, "cannot mint a certificate for \"%.*s\": %s",
		        (int)(len < 80 ? len : 80), host, allow_canon_strerror(ce));
		return -1;
	}
	memcpy(out->text, d.host, strlen(d.host) + 1);
	if (d.kind != ALLOW_HOST_NAME) {
		out->is_ip = 1;
		out->iplen = d.kind == ALLOW_HOST_IPV4 ? 4 : 16;
		memcpy(out->ip, d.addr, (size_t)out->iplen);
	}
	return 0;
}

int proxy_ca_canon(const char *host, char *out, size_t cap, int *is_ip)
{
	struct leaf_name n;
	if (name_parse(host, &n, NULL, 0) == -1 || strlen(n.text) >= cap)
		return -1;
	memcpy(out, n.text, strlen(n.text) + 1);
	if (is_ip != NULL)
		*is_ip = n.is_ip;
	return 0;
}

static uint64_t name_hash(const struct proxy_ca *ca, const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull ^ ca->seed; /* FNV-1a from a per-CA random start */
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* ---- building certificates ----------------------------------------------------------------- */

/* A GENERAL_NAME for n (GEN_DNS or GEN_IPADD), or NULL. */
static GENERAL_NAME *gn_of(const struct leaf_name *n)
{
	GENERAL_NAME *gn = GENERAL_NAME_new();
	ASN1_STRING *s = n->is_ip ? ASN1_OCTET_STRING_new() : ASN1_IA5STRING_new();
	if (gn == NULL || s == NULL ||
	        ASN1_STRING_set(s, n->is_ip ? (const void *)n->ip : (const void *)n->text,
	                n->is_ip ? n->iplen : (int)strlen(n->text)) != 1) {
		GENERAL_NAME_free(gn);
		ASN1_STRING_free(s);
		return NULL;
	}
	GENERAL_NAME_set0_value(gn, n->is_ip ? GEN_IPADD : GEN_DNS, s);
	return gn;
}

/* Builds the leaf for n at time now, unsigned.  NULL on failure (OpenSSL's queue has why).
 *
 * From a copy of the CA's template, which holds what every leaf shares: X509_set_pubkey runs
 * OpenSSL 3's encoder (about 0.7 ms on this machine, most of a mint), while copying a
 * certificate whose key is encoded already costs some 16 us. */
static X509 *leaf_build(const struct proxy_ca *ca, const struct leaf_name *n, time_t now)
{
	X509 *x = X509_dup(ca->tmpl);
	GENERAL_NAMES *san = sk_GENERAL_NAME_new_null();
	GENERAL_NAME *gn = gn_of(n);
	if (x == NULL || san == NULL || gn == NULL || sk_GENERAL_NAME_push(san, gn) == 0)
		goto fail;
	gn = NULL;
	time_t nb = now - PROXY_CA_LEAF_BACKDATE_S, na = now + PROXY_CA_LEAF_LIFE_S;
	/* A leaf never claims more than its CA: clients check the chain's dates too. */
	if (nb < ca->not_before)
		nb = ca->not_before;
	if (na > ca->not_after)
		na = ca->not_after;
	/* The CN is the name where it fits (64 bytes); a longer name lives in the SAN alone, which
	 * is all a client checks, under an O= so that the subject is never empty.  An address is
	 * never a CN: a client reads a CN as a DNS name when the leaf has no DNS SAN, and an
	 * address would then fail a CA's DNS name constraints. */
	int cn = !n->is_ip && strlen(n->text) <= CA_CN_MAX;
	if (serial_set(x) == -1 ||
	        X509_NAME_add_entry_by_NID(X509_get_subject_name(x),
	                cn ? NID_commonName : NID_organizationName, MBSTRING_ASC,
	                (const unsigned char *)(cn ? n->text : "egressd inspection"), -1, -1,
	                0) != 1 ||
	        ASN1_TIME_set(X509_getm_notBefore(x), nb) == NULL ||
	        ASN1_TIME_set(X509_getm_notAfter(x), na) == NULL ||
	        X509_add1_ext_i2d(x, NID_subject_alt_name, san, 0, X509V3_ADD_DEFAULT) != 1)
		goto fail;
	GENERAL_NAMES_free(san);
	return x;
fail:
	GENERAL_NAME_free(gn);
	GENERAL_NAMES_free(san);
	X509_free(x);
	return NULL;
}

/* The template every leaf of ca starts from: version 3, the CA as issuer, the leaf key, and
 * basicConstraints, keyUsage, extendedKeyUsage and authorityKeyIdentifier.  Signed once (its
 * signature is replaced in every leaf) so that it encodes, and so copies, like any
 * certificate. */
static int leaf_template_init(struct proxy_ca *ca)
{
	X509 *x = ca->tmpl = X509_new();
	/* Dates and a serial only so that it encodes: every leaf gets its own. */
	if (x == NULL || X509_set_version(x, X509_VERSION_3) != 1 ||
	        X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) != 1 ||
	        ASN1_INTEGER_set(X509_get_serialNumber(x), 1) != 1 ||
	        X509_set1_notBefore(x, X509_get0_notBefore(ca->cert)) != 1 ||
	        X509_set1_notAfter(x, X509_get0_notAfter(ca->cert)) != 1 ||
	        X509_set_pubkey(x, ca->leaf_key) != 1)
		return -1;
	X509V3_CTX v3;
	X509V3_set_ctx(&v3, ca->cert, NULL, NULL, NULL, 0);
	static const struct {
		int nid;
		const char *value;
	} exts[] = {
	        {NID_basic_constraints, "critical,CA:FALSE"},
	        {NID_key_usage, "critical,digitalSignature"},
	        {NID_ext_key_usage, "serverAuth"},
	        /* The key id of the CA, so that clients pick the right issuer; a user's CA whose
	         * key id OpenSSL cannot find gets leaves without it, which is still valid. */
	        {NID_authority_key_identifier, "keyid:always"},
	};
	for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
		X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &v3, exts[i].nid, exts[i].value);
		if (e == NULL && exts[i].nid == NID_authority_key_identifier)
			continue;
		int ok = e != NULL && X509_add_ext(x, e, -1) == 1;
		X509_EXTENSION_free(e);
		if (!ok)
			return -1;
	}
	ERR_clear_error();
	return X509_sign(x, ca->key, ca->md) != 0 ? 0 : -1;
}

/* ---- the CA object ------------------------------------------------------------------------- */

/* The digest for a CA key: SHA-256, or the curve's own size for P-384 and P-521.  NULL for a key
 * type leaves are not signed with. */
static const EVP_MD *md_for(EVP_PKEY *key, char *why, size_t whylen)
{
	int id = EVP_PKEY_get_base_id(key);
	if (id == EVP_PKEY_RSA)
		return EVP_sha256();
	if (id != EVP_PKEY_EC) {
		say(why, whylen, "a %s key: the CA key must be EC (P-256, P-384, P-521) or RSA",
		        OBJ_nid2sn(id));
		return NULL;
	}
	char group[64] = "";
	EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, NULL);
	if (strcmp(group, "prime256v1") == 0 || strcmp(group, "P-256") == 0)
		return EVP_sha256();
	if (strcmp(group, "secp384r1") == 0 || strcmp(group, "P-384") == 0)
		return EVP_sha384();
	if (strcmp(group, "secp521r1") == 0 || strcmp(group, "P-521") == 0)
		return EVP_sha512();
	say(why, whylen, "an EC key on curve %s: clients accept P-256, P-384 and P-521",
	        group[0] ? group : "(unknown)");
	return NULL;
}

/* Takes cert and key (owned from now on, also on failure) and makes the rest.  NULL with a
 * reason. */
static struct proxy_ca *ca_make(X509 *cert, EVP_PKEY *key, char *err, size_t errlen)
{
	struct proxy_ca *ca = calloc(1, sizeof *ca);
	if (ca == NULL) {
		X509_free(cert);
		EVP_PKEY_free(key);
		say(err, errlen, "out of memory");
		return NULL;
	}
	ca->refs = 1;
	ca->cert = cert;
	ca->key = key;
	ca->head = ca->tail = CA_NIL;
	for (size_t i = 0; i < CA_BUCKETS; i++)
		ca->bucket[i] = CA_NIL;
	char why[PROXY_CA_ERR];
	if ((ca->md = md_for(key, why, sizeof why)) == NULL) {
		say(err, errlen, "%s", why);
		goto fail;
	}
	ca->not_before = asn1_time_t(X509_get0_notBefore(cert));
	ca->not_after = asn1_time_t(X509_get0_notAfter(cert));
	if (ca->not_before == (time_t)-1 || ca->not_after == (time_t)-1) {
		say(err, errlen, "the certificate's dates cannot be read");
		goto fail;
	}
	int crit;
	ca->nc = X509_get_ext_d2i(cert, NID_name_constraints, &crit, NULL);
	if (RAND_bytes((unsigned char *)&ca->seed, sizeof ca->seed) != 1 ||
	        (ca->leaf_key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256")) == NULL ||
	        leaf_template_init(ca) == -1) {
		say(err, errlen, "cannot make the leaf key: %s", ossl_why());
		goto fail;
	}
	return ca;
fail:
	proxy_ca_free(ca);
	return NULL;
}

void proxy_ca_hold(struct proxy_ca *ca)
{
	ca->refs++;
}

void proxy_ca_free(struct proxy_ca *ca)
{
	if (ca == NULL || --ca->refs > 0)
		return;
	for (int32_t i = 0; i < ca->ne; i++)
		X509_free(ca->e[i].cert);
	free(ca->e);
	X509_free(ca->tmpl);
	NAME_CONSTRAINTS_free(ca->nc);
	EVP_PKEY_free(ca->leaf_key);
	EVP_PKEY_free(ca->key);
	X509_free(ca->cert);
	free(ca);
}

X509 *proxy_ca_cert(const struct proxy_ca *ca)
{
	return ca->cert;
}

EVP_PKEY *proxy_ca_leaf_key(const struct proxy_ca *ca)
{
	return ca->leaf_key;
}

void proxy_ca_get_stats(const struct proxy_ca *ca, struct proxy_ca_stats *out)
{
	*out = ca->stats;
	out->cached = (size_t)ca->ne;
}

/* ---- name constraints ---------------------------------------------------------------------- */

/* Reads one allowDomains-syntax pattern as a constraint: *n gets the name (wildcard labels and
 * port dropped) or the address, *mask the CIDR mask for an address (all ones for one address).
 * 0, or -1 with a reason. */
static int permit_parse(
        const char *pat, struct leaf_name *n, unsigned char *mask, char *err, size_t errlen)
{
	char host[PROXY_CA_NAME_MAX + 8];
	size_t len = strlen(pat);
	const char *end = pat + len;
	if (len >= sizeof host) {
		say(err, errlen, "pattern \"%.40s...\" is too long", pat);
		return -1;
	}
	if (pat[0] == '[') { /* [IPv6] or [IPv6/len], with or without :PORT */
		const char *close = strchr(pat, ']');
		if (close == NULL) {
			say(err, errlen, "pattern \"%s\" has no closing ]", pat);
			return -1;
		}
		pat++;
		end = close;
	} else {
		const char *colon = strchr(pat, ':');
		if (colon != NULL && strchr(colon + 1, ':') == NULL)
			end = colon; /* NAME:PORT or IPv4:PORT; two colons or more are IPv6 */
	}
	memcpy(host, pat, (size_t)(end - pat));
	host[end - pat] = '\0';
	char *slash = strchr(host, '/');
	long bits = -1;
	if (slash != NULL) {
		char *stop;
		*slash = '\0';
		bits = strtol(slash + 1, &stop, 10);
		if (*stop != '\0' || stop == slash + 1 || bits < 0 || bits > 128) {
			say(err, errlen, "pattern \"%s\" has a bad prefix length", pat);
			return -1;
		}
	}
	const char *name = host;
	if (strncmp(name, "**.", 3) == 0)
		name += 3;
	else if (strncmp(name, "*.", 2) == 0)
		name += 2;
	if (name_parse(name, n, err, errlen) == -1)
		return -1;
	if (!n->is_ip && (bits != -1 || name != host) && strchr(name, '.') == NULL) {
		say(err, errlen, "pattern \"%s\" would permit a top-level domain", host);
		return -1;
	}
	if (n->is_ip) {
		if (bits == -1)
			bits = n->iplen * 8;
		if (bits > n->iplen * 8) {
			say(err, errlen, "pattern \"%s\" has a bad prefix length", host);
			return -1;
		}
		for (int i = 0; i < n->iplen; i++) {
			long b = bits - 8L * i;
			mask[i] = (unsigned char)(b >= 8   ? 0xff
			                          : b <= 0 ? 0
			                                   : (0xff << (8 - b)) & 0xff);
			n->ip[i] &= mask[i];
		}
	} else if (bits != -1) {
		say(err, errlen, "pattern \"%s\": a prefix length needs an address", host);
		return -1;
	}
	return 0;
}

/* A GENERAL_SUBTREE for a name, or an address with its mask; pushed onto *sk (made when NULL).
 * 0 or -1. */
static int subtree_push(
        STACK_OF(GENERAL_SUBTREE) * *sk, const struct leaf_name *n, const unsigned char *mask)
{
	GENERAL_NAME *gn = NULL;
	if (n->is_ip) {
		unsigned char b[32];
		memcpy(b, n->ip, (size_t)n->iplen);
		memcpy(b + n->iplen, mask, (size_t)n->iplen);
		ASN1_OCTET_STRING *s = ASN1_OCTET_STRING_new();
		gn = GENERAL_NAME_new();
		if (s == NULL || gn == NULL || ASN1_STRING_set(s, b, 2 * n->iplen) != 1) {
			ASN1_OCTET_STRING_free(s);
			GENERAL_NAME_free(gn);
			return -1;
		}
		GENERAL_NAME_set0_value(gn, GEN_IPADD, s);
	} else if ((gn = gn_of(n)) == NULL) {
		return -1;
	}
	GENERAL_SUBTREE *st = GENERAL_SUBTREE_new();
	if (*sk == NULL)
		*sk = sk_GENERAL_SUBTREE_new_null();
	if (st == NULL || *sk == NULL) {
		GENERAL_SUBTREE_free(st);
		GENERAL_NAME_free(gn);
		return -1;
	}
	GENERAL_NAME_free(st->base);
	st->base = gn;
	if (sk_GENERAL_SUBTREE_push(*sk, st) == 0) {
		GENERAL_SUBTREE_free(st);
		return -1;
	}
	return 0;
}

/* Adds critical name constraints for the patterns to x.  0, or -1 with a reason. */
static int constraints_add(
        X509 *x, const char *const *permit, size_t npermit, char *err, size_t errlen)
{
	if (npermit > PROXY_CA_PERMIT_MAX) {
		say(err, errlen, "more than %d names to permit", PROXY_CA_PERMIT_MAX);
		return -1;
	}
	NAME_CONSTRAINTS *nc = NAME_CONSTRAINTS_new();
	if (nc == NULL) {
		say(err, errlen, "out of memory");
		return -1;
	}
	int have_ip = 0, rc = 0;
	char seen[PROXY_CA_PERMIT_MAX][PROXY_CA_NAME_MAX + 1];
	size_t nseen = 0;
	for (size_t i = 0; i < npermit && rc == 0; i++) {
		struct leaf_name n;
		unsigned char mask[16];
		if (permit_parse(permit[i], &n, mask, err, errlen) == -1) {
			rc = -1;
			break;
		}
		size_t j;
		for (j = 0; j < nseen && strcmp(seen[j], n.text) != 0; j++)
			;
		if (j < nseen && !n.is_ip)
			continue; /* a.b and *.a.b are one subtree */
		memcpy(seen[nseen++], n.text, sizeof n.text);
		have_ip |= n.is_ip;
		if (subtree_push(&nc->permittedSubtrees, &n, mask) == -1) {
			say(err, errlen, "out of memory");
			rc = -1;
		}
	}
	/* A permitted list of names leaves addresses unconstrained (RFC 5280 4.2.1.10 applies each
	 * list to its own name type): without an IP pattern, every address is excluded. */
	static const struct leaf_name any4 = {.text = "0.0.0.0", .is_ip = 1, .iplen = 4};
	static const struct leaf_name any6 = {.text = "::", .is_ip = 1, .iplen = 16};
	static const unsigned char zero[16];
	if (rc == 0 && !have_ip &&
	        (subtree_push(&nc->excludedSubtrees, &any4, zero) == -1 ||
	                subtree_push(&nc->excludedSubtrees, &any6, zero) == -1)) {
		say(err, errlen, "out of memory");
		rc = -1;
	}
	if (rc == 0 && X509_add1_ext_i2d(x, NID_name_constraints, nc, 1, X509V3_ADD_DEFAULT) != 1) {
		say(err, errlen, "cannot add the name constraints: %s", ossl_why());
		rc = -1;
	}
	NAME_CONSTRAINTS_free(nc);
	return rc;
}

int proxy_ca_permits(const struct proxy_ca *ca, const char *host)
{
	struct leaf_name n;
	if (name_parse(host, &n, NULL, 0) == -1)
		return -1;
	if (ca->nc == NULL)
		return 1;
	/* OpenSSL's own check, which is what a client will run, on the leaf as a client gets it:
	 * signed, encoded and read back, so that what OpenSSL caches about a certificate (the SAN
	 * NAME_CONSTRAINTS_check looks at) is computed from this leaf alone, never from a copy of
	 * the template. */
	X509 *built = leaf_build(ca, &n, time(NULL)), *x = NULL;
	unsigned char *der = NULL;
	int len = built != NULL && X509_sign(built, ca->key, ca->md) != 0 ? i2d_X509(built, &der)
	                                                                  : -1;
	const unsigned char *p = der;
	if (len > 0)
		x = d2i_X509(NULL, &p, len);
	OPENSSL_free(der);
	X509_free(built);
	if (x == NULL) {
		ERR_clear_error();
		return -1;
	}
	X509_get_extension_flags(x); /* fills that cache */
	int ok = NAME_CONSTRAINTS_check(x, ca->nc) == X509_V_OK &&
	         NAME_CONSTRAINTS_check_CN(x, ca->nc) == X509_V_OK;
	X509_free(x);
	ERR_clear_error();
	return ok;
}

int proxy_ca_permits_pattern(
        const struct proxy_ca *ca, const char *pattern, char *err, size_t errlen)
{
	struct leaf_name n;
	unsigned char mask[16];
	if (permit_parse(pattern, &n, mask, err, errlen) == -1)
		return -1;
	if (ca->nc == NULL)
		return 1;
	/* The hosts the pattern can name that a constraint could tell apart: the apex and a
	 * subdomain of a wildcard, the first and last address of a range. */
	char sample[2][PROXY_CA_NAME_MAX + 1];
	int ns = 0;
	int star = strncmp(pattern, "*.", 2) == 0, stars = strncmp(pattern, "**.", 3) == 0;
	if (n.is_ip) {
		unsigned char last[16];
		for (int i = 0; i < n.iplen; i++)
			last[i] = (unsigned char)(n.ip[i] | (unsigned char)~mask[i]);
		int af = n.iplen == 16 ? AF_INET6 : AF_INET;
		inet_ntop(af, n.ip, sample[ns++], sizeof sample[0]);
		inet_ntop(af, last, sample[ns++], sizeof sample[0]);
	} else {
		if (!star)
			memcpy(sample[ns++], n.text, sizeof n.text);
		if ((star || stars) && (size_t)snprintf(sample[ns], sizeof sample[0], "x.%s",
		                               n.text) < sizeof sample[0])
			ns++;
	}
	for (int i = 0; i < ns; i++) {
		int ok = proxy_ca_permits(ca, sample[i]);
		if (ok != 1) {
			say(err, errlen, "%s", sample[i]);
			return 0;
		}
	}
	return 1;
}

/* ---- making and loading a CA -------------------------------------------------------------- */

struct proxy_ca *proxy_ca_generate(
        const char *const *permit, size_t npermit, unsigned days, char *err, size_t errlen)
{
	EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	X509 *x = X509_new();
	if (key == NULL || x == NULL)
		goto fail_ossl;
	time_t now = time(NULL);
	/* A recognisable name in trust stores, unique per CA: the start of a random value. */
	unsigned char id[4];
	char cn[CA_CN_MAX];
	if (RAND_bytes(id, sizeof id) != 1)
		goto fail_ossl;
	snprintf(cn, sizeof cn, "egressd inspection CA %02x%02x%02x%02x", id[0], id[1], id[2],
	        id[3]);
	X509_NAME *name = X509_get_subject_name(x);
	if (X509_set_version(x, X509_VERSION_3) != 1 || serial_set(x) == -1 ||
	        X509_NAME_add_entry_by_NID(name, NID_organizationName, MBSTRING_ASC,
	                (const unsigned char *)"egressd", -1, -1, 0) != 1 ||
	        X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_ASC,
	                (const unsigned char *)cn, -1, -1, 0) != 1 ||
	        X509_set_issuer_name(x, name) != 1 ||
	        ASN1_TIME_set(X509_getm_notBefore(x), now - PROXY_CA_LEAF_BACKDATE_S) == NULL ||
	        ASN1_TIME_adj(X509_getm_notAfter(x), now, (int)days, 0) == NULL ||
	        X509_set_pubkey(x, key) != 1)
		goto fail_ossl;
	X509V3_CTX v3;
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	/* pathlen:0: this CA signs leaves only, never another CA. */
	static const struct {
		int nid;
		const char *value;
	} exts[] = {
	        {NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
	        {NID_key_usage, "critical,keyCertSign,cRLSign"},
	        {NID_subject_key_identifier, "hash"},
	};
	for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
		X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &v3, exts[i].nid, exts[i].value);
		int ok = e != NULL && X509_add_ext(x, e, -1) == 1;
		X509_EXTENSION_free(e);
		if (!ok)
			goto fail_ossl;
	}
	if (npermit > 0 && constraints_add(x, permit, npermit, err, errlen) == -1)
		goto fail;
	if (X509_sign(x, key, EVP_sha256()) == 0)
		goto fail_ossl;
	return ca_make(x, key, err, errlen);
fail_ossl:
	say(err, errlen, "cannot make a CA: %s", ossl_why());
fail:
	X509_free(x);
	EVP_PKEY_free(key);
	return NULL;
}

/* Called for an encrypted key: egressd runs unattended and asks nobody for a passphrase. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	*(int *)u = 1;
	return -1;
}

struct proxy_ca *proxy_ca_load(
        const char *cert_path, const char *key_path, int *blame, char *err, size_t errlen)
{
	char *text = NULL, why[PROXY_CA_ERR];
	size_t len;
	X509 *cert = NULL;
	EVP_PKEY *key = NULL;
	int dummy;
	if (blame == NULL)
		blame = &dummy;
	*blame = PROXY_CA_BLAME_CERT;
	if (file_read(cert_path, CA_FILE_MAX, &text, &len, why, sizeof why) == -1) {
		say(err, errlen, "cannot read \"%s\": %s", cert_path, why);
		return NULL;
	}
	BIO *b = BIO_new_mem_buf(text, (int)len);
	cert = b != NULL ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	free(text);
	if (cert == NULL) {
		ERR_clear_error();
		say(err, errlen, "\"%s\" holds no PEM certificate", cert_path);
		return NULL;
	}
	*blame = PROXY_CA_BLAME_KEY;
	if (file_read(key_path, CA_FILE_MAX, &text, &len, why, sizeof why) == -1) {
		say(err, errlen, "cannot read \"%s\": %s", key_path, why);
		X509_free(cert);
		return NULL;
	}
	int asked = 0;
	b = BIO_new_mem_buf(text, (int)len);
	key = b != NULL ? PEM_read_bio_PrivateKey(b, NULL, no_passphrase, &asked) : NULL;
	BIO_free(b);
	explicit_bzero(text, len);
	free(text);
	ERR_clear_error();
	if (key == NULL) {
		say(err, errlen,
		        asked ? "\"%s\" is encrypted: egressd needs the key unencrypted (keep the "
		                "file mode 0600)"
		              : "\"%s\" holds no PEM private key",
		        key_path);
		X509_free(cert);
		return NULL;
	}
	if (X509_check_private_key(cert, key) != 1) {
		ERR_clear_error();
		say(err, errlen, "\"%s\" is not the key of the certificate in \"%s\"", key_path,
		        cert_path);
		X509_free(cert);
		EVP_PKEY_free(key);
		return NULL;
	}
	struct proxy_ca *ca = ca_make(cert, key, why, sizeof why);
	if (ca == NULL)
		say(err, errlen, "\"%s\": %s", key_path, why);
	return ca;
}

int proxy_ca_judge(const struct proxy_ca *ca, time_t now, char *err, size_t errlen)
{
	X509 *c = ca->cert;
	uint32_t flags = X509_get_extension_flags(c);
	char d[32];
	if (!(flags & EXFLAG_BCONS) || !(flags & EXFLAG_CA)) {
		say(err, errlen, "is not a CA certificate (it lacks basicConstraints CA:TRUE)");
		return -1;
	}
	if ((flags & EXFLAG_KUSAGE) && !(X509_get_key_usage(c) & KU_KEY_CERT_SIGN)) {
		say(err, errlen, "cannot sign certificates (its keyUsage lacks keyCertSign)");
		return -1;
	}
	if (now < ca->not_before) {
		date_text(X509_get0_notBefore(c), d, sizeof d);
		say(err, errlen, "is not valid before %s", d);
		return -1;
	}
	if (now >= ca->not_after) {
		date_text(X509_get0_notAfter(c), d, sizeof d);
		say(err, errlen, "expired on %s", d);
		return -1;
	}
	if (EVP_PKEY_get_base_id(ca->key) == EVP_PKEY_RSA && EVP_PKEY_get_bits(ca->key) < 2048) {
		say(err, errlen, "has a %d-bit RSA key: clients refuse less than 2048",
		        EVP_PKEY_get_bits(ca->key));
		return -1;
	}
	return 0;
}

void proxy_ca_describe(const struct proxy_ca *ca, char *buf, size_t cap)
{
	char subj[256], until[32], key[64];
	X509_NAME_oneline(X509_get_subject_name(ca->cert), subj, sizeof subj);
	date_text(X509_get0_notAfter(ca->cert), until, sizeof until);
	if (EVP_PKEY_get_base_id(ca->key) == EVP_PKEY_EC) {
		char group[32] = "";
		EVP_PKEY_get_utf8_string_param(
		        ca->key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, NULL);
		snprintf(key, sizeof key, "EC %s", group);
	} else {
		snprintf(key, sizeof key, "RSA %d", EVP_PKEY_get_bits(ca->key));
	}
	int n = sk_GENERAL_SUBTREE_num(ca->nc != NULL ? ca->nc->permittedSubtrees : NULL);
	say(buf, cap, "%s, %s, valid until %s, %s", subj, key, until,
	        ca->nc == NULL ? "no name constraints"
	        : n > 0        ? "name constraints"
	                       : "name constraints (exclusions only)");
}

/* ---- writing files ------------------------------------------------------------------------ */

/* Writes buf[0..len) to fd, whole.  0 or -1 (errno set). */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, buf, len);
		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1)
			return -1;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Writes data[0..len) into a new temporary file in dir with mode `mode`, flushed to disk; tmp
 * gets its name.  0, or -1 with a reason (and no file left). */
static int temp_write(const char *dir, const char *data, size_t len, mode_t mode, char *tmp,
        size_t tmpcap, char *err, size_t errlen)
{
	if ((size_t)snprintf(tmp, tmpcap, "%s/.egressd.XXXXXX", dir) >= tmpcap) {
		say(err, errlen, "the path \"%s\" is too long", dir);
		return -1;
	}
	int fd = mkstemp(tmp); /* mode 0600 until fchmod */
	if (fd == -1) {
		say(err, errlen, "cannot write into \"%s\": %s", dir, strerror(errno));
		return -1;
	}
	if (fchmod(fd, mode) == -1 || write_all(fd, data, len) == -1 || fsync(fd) == -1) {
		say(err, errlen, "cannot write \"%s\": %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		return -1;
	}
	close(fd);
	return 0;
}

/* The PEM text of a certificate or (unencrypted PKCS#8) private key in a new buffer the caller
 * frees with OPENSSL_clear_free; NULL on failure. */
static char *pem_of(X509 *cert, EVP_PKEY *key, size_t *len)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *out = NULL, *data;
	if (b != NULL &&
	        (cert != NULL ? PEM_write_bio_X509(b, cert)
	                      : PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL)) == 1) {
		long n = BIO_get_mem_data(b, &data);
		if (n > 0 && (out = OPENSSL_malloc((size_t)n + 1)) != NULL) {
			memcpy(out, data, (size_t)n);
			out[n] = '\0';
			*len = (size_t)n;
			/* The key's text was in the BIO's memory too. */
			OPENSSL_cleanse(data, (size_t)n);
		}
	}
	BIO_free(b);
	return out;
}

/* 1 when path exists (as anything, a dangling link included), 0 when not, -1 on other errors. */
static int exists(const char *path)
{
	struct stat st;
	if (lstat(path, &st) == 0)
		return 1;
	return errno == ENOENT ? 0 : -1;
}

/* mkdir -p with mode 0700 for every folder it makes.  0 or -1 (errno set). */
static int mkdir_p(const char *dir)
{
	char p[4096];
	size_t len = strlen(dir);
	if (len == 0 || len >= sizeof p) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(p, dir, len + 1);
	for (size_t i = 1; i <= len; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		char c = p[i];
		p[i] = '\0';
		if (mkdir(p, 0700) == -1 && errno != EEXIST)
			return -1;
		p[i] = c;
	}
	return 0;
}

int proxy_ca_write(const struct proxy_ca *ca, const char *dir, char *err, size_t errlen)
{
	char certp[4096], keyp[4096], tcert[4200] = "", tkey[4200] = "";
	if ((size_t)snprintf(certp, sizeof certp, "%s/%s", dir, PROXY_CA_CERT_FILE) >=
	                sizeof certp ||
	        (size_t)snprintf(keyp, sizeof keyp, "%s/%s", dir, PROXY_CA_KEY_FILE) >=
	                sizeof keyp) {
		say(err, errlen, "the path \"%s\" is too long", dir);
		return -1;
	}
	if (mkdir_p(dir) == -1) {
		say(err, errlen, "cannot make \"%s\": %s", dir, strerror(errno));
		return -1;
	}
	int ec = exists(certp), ek = exists(keyp);
	if (ec == 1 || ek == 1) {
		say(err, errlen, "\"%s\" is there already: egressd ca init never overwrites a CA",
		        ec == 1 ? certp : keyp);
		return 1;
	}
	size_t klen = 0, clen = 0;
	char *ktext = pem_of(NULL, ca->key, &klen);
	char *ctext = pem_of(ca->cert, NULL, &clen);
	int rc = -1;
	if (ktext == NULL || ctext == NULL) {
		say(err, errlen, "cannot encode the CA: %s", ossl_why());
		goto out;
	}
	if (temp_write(dir, ktext, klen, 0600, tkey, sizeof tkey, err, errlen) == -1 ||
	        temp_write(dir, ctext, clen, 0644, tcert, sizeof tcert, err, errlen) == -1)
		goto out;
	/* link() never replaces a file: a CA that appeared meanwhile is kept, and this one is not
	 * half written over it. */
	if (link(tkey, keyp) == -1) {
		rc = errno == EEXIST ? 1 : -1;
		say(err, errlen, "cannot write \"%s\": %s", keyp, strerror(errno));
		goto out;
	}
	if (link(tcert, certp) == -1) {
		rc = errno == EEXIST ? 1 : -1;
		say(err, errlen, "cannot write \"%s\": %s", certp, strerror(errno));
		unlink(keyp);
		goto out;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd != -1) {
		fsync(dfd);
		close(dfd);
	}
	rc = 0;
out:
	if (tkey[0] != '\0')
		unlink(tkey);
	if (tcert[0] != '\0')
		unlink(tcert);
	OPENSSL_clear_free(ktext, klen);
	OPENSSL_free(ctext);
	return rc;
}

/* ---- the leaf cache ------------------------------------------------------------------------ */

static void lru_unlink(struct proxy_ca *ca, int32_t i)
{
	struct leaf_entry *e = &ca->e[i];
	if (e->prev != CA_NIL)
		ca->e[e->prev].next = e->next;
	else
		ca->head = e->next;
	if (e->next != CA_NIL)
		ca->e[e->next].prev = e->prev;
	else
		ca->tail = e->prev;
	e->prev = e->next = CA_NIL;
}

static void lru_push_front(struct proxy_ca *ca, int32_t i)
{
	struct leaf_entry *e = &ca->e[i];
	e->prev = CA_NIL;
	e->next = ca->head;
	if (ca->head != CA_NIL)
		ca->e[ca->head].prev = i;
	ca->head = i;
	if (ca->tail == CA_NIL)
		ca->tail = i;
}

static int32_t *bucket_of(struct proxy_ca *ca, uint64_t h)
{
	return &ca->bucket[h & (CA_BUCKETS - 1)];
}

static void bucket_remove(struct proxy_ca *ca, int32_t i)
{
	for (int32_t *p = bucket_of(ca, ca->e[i].hash); *p != CA_NIL; p = &ca->e[*p].chain) {
		if (*p == i) {
			*p = ca->e[i].chain;
			return;
		}
	}
}

static int32_t cache_find(struct proxy_ca *ca, const char *name, uint64_t h)
{
	for (int32_t i = *bucket_of(ca, h); i != CA_NIL; i = ca->e[i].chain)
		if (ca->e[i].hash == h && strcmp(ca->e[i].name, name) == 0)
			return i;
	return CA_NIL;
}

/* A slot for a new entry: a fresh one while there is room, else the least recently used one,
 * emptied.  CA_NIL when memory ran out. */
static int32_t cache_slot(struct proxy_ca *ca)
{
	if (ca->ne < PROXY_CA_CACHE_MAX) {
		if (ca->ne == ca->cape) {
			int32_t cap = ca->cape ? ca->cape * 2 : 16;
			if (cap > PROXY_CA_CACHE_MAX)
				cap = PROXY_CA_CACHE_MAX;
			struct leaf_entry *ne = realloc(ca->e, (size_t)cap * sizeof *ne);
			if (ne == NULL)
				return CA_NIL;
			ca->e = ne;
			ca->cape = cap;
		}
		int32_t i = ca->ne++;
		memset(&ca->e[i], 0, sizeof ca->e[i]);
		ca->e[i].prev = ca->e[i].next = ca->e[i].chain = CA_NIL;
		return i;
	}
	int32_t i = ca->tail;
	lru_unlink(ca, i);
	bucket_remove(ca, i);
	X509_free(ca->e[i].cert);
	ca->e[i].cert = NULL;
	ca->stats.evictions++;
	return i;
}

X509 *proxy_ca_leaf_at(struct proxy_ca *ca, const char *host, time_t now, char *err, size_t errlen)
{
	struct leaf_name n;
	if (name_parse(host, &n, err, errlen) == -1)
		return NULL;
	uint64_t h = name_hash(ca, n.text);
	int32_t i = cache_find(ca, n.text, h);
	if (i != CA_NIL && now - ca->e[i].minted < PROXY_CA_LEAF_REMINT_S &&
	        now >= ca->e[i].minted) {
		ca->stats.hits++;
		lru_unlink(ca, i);
		lru_push_front(ca, i);
		return ca->e[i].cert;
	}
	X509 *x = leaf_build(ca, &n, now);
	if (x == NULL || X509_sign(x, ca->key, ca->md) == 0) {
		say(err, errlen, "cannot mint a certificate for %s: %s", n.text, ossl_why());
		X509_free(x);
		return NULL;
	}
	ca->stats.mints++;
	if (i != CA_NIL) { /* an old leaf for the name: replaced where it is */
		X509_free(ca->e[i].cert);
		lru_unlink(ca, i);
	} else if ((i = cache_slot(ca)) == CA_NIL) {
		say(err, errlen, "out of memory");
		X509_free(x);
		return NULL;
	} else {
		memcpy(ca->e[i].name, n.text, sizeof n.text);
		ca->e[i].hash = h;
		int32_t *b = bucket_of(ca, h);
		ca->e[i].chain = *b;
		*b = i;
	}
	ca->e[i].cert = x;
	ca->e[i].minted = now;
	lru_push_front(ca, i);
	return x;
}

X509 *proxy_ca_leaf(struct proxy_ca *ca, const char *host, char *err, size_t errlen)
{
	return proxy_ca_leaf_at(ca, host, time(NULL), err, errlen);
}

/* ---- the trust bundle ---------------------------------------------------------------------- */

const char *proxy_ca_system_bundle(void)
{
	/* Debian and Ubuntu, Fedora and RHEL, openSUSE, Alpine; then OpenSSL's own default. */
	static const char *const known[] = {
	        "/etc/ssl/certs/ca-certificates.crt",
	        "/etc/pki/tls/certs/ca-bundle.crt",
	        "/etc/ssl/ca-bundle.pem",
	        "/etc/ssl/cert.pem",
	};
	struct stat st;
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if (stat(known[i], &st) == 0 && S_ISREG(st.st_mode))
			return known[i];
	const char *def = X509_get_default_cert_file();
	if (def != NULL && stat(def, &st) == 0 && S_ISREG(st.st_mode))
		return def;
	return NULL;
}

int proxy_ca_bundle_write(const struct proxy_ca *ca, const char *system_file, const char *path,
        int *written, char *err, size_t errlen)
{
	if (written != NULL)
		*written = 0;
	char *sys = NULL, *old = NULL, *cpem = NULL, *want = NULL, why[PROXY_CA_ERR];
	size_t slen = 0, olen = 0, clen = 0;
	int rc = -1;
	if (system_file != NULL &&
	        file_read(system_file, CA_SYSTEM_MAX, &sys, &slen, why, sizeof why) == -1) {
		say(err, errlen, "cannot read the system CAs \"%s\": %s", system_file, why);
		return -1;
	}
	if ((cpem = pem_of(ca->cert, NULL, &clen)) == NULL) {
		say(err, errlen, "cannot encode the CA: %s", ossl_why());
		goto out;
	}
	char subj[256], head[400];
	X509_NAME_oneline(X509_get_subject_name(ca->cert), subj, sizeof subj);
	int hl = snprintf(head, sizeof head, "%s# egressd inspection CA: %s\n",
	        slen > 0 && sys[slen - 1] != '\n' ? "\n" : "", subj);
	size_t wlen = slen + (size_t)hl + clen;
	if ((want = malloc(wlen + 1)) == NULL) {
		say(err, errlen, "out of memory");
		goto out;
	}
	if (slen > 0)
		memcpy(want, sys, slen);
	memcpy(want + slen, head, (size_t)hl);
	memcpy(want + slen + (size_t)hl, cpem, clen);
	if (file_read(path, CA_SYSTEM_MAX + 65536, &old, &olen, why, sizeof why) == 0 &&
	        olen == wlen && memcmp(old, want, wlen) == 0) {
		rc = 0; /* fresh already */
		goto out;
	}
	char dir[4096], tmp[4200];
	const char *slash = strrchr(path, '/');
	snprintf(dir, sizeof dir, "%.*s",
	        slash == NULL   ? 1
	        : slash == path ? 1
	                        : (int)(slash - path),
	        slash == NULL ? "." : path);
	if (temp_write(dir, want, wlen, 0644, tmp, sizeof tmp, err, errlen) == -1)
		goto out;
	if (rename(tmp, path) == -1) {
		say(err, errlen, "cannot write \"%s\": %s", path, strerror(errno));
		unlink(tmp);
		goto out;
	}
	if (written != NULL)
		*written = 1;
	rc = 0;
out:
	free(sys);
	free(old);
	free(want);
	OPENSSL_free(cpem);
	return rc;
}
