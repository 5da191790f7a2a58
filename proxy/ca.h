/* The inspection CA and the leaves it mints (docs/design.md 11, docs/inspection.md).
 *
 * A CA is an ECDSA P-256 (or a user's EC or RSA) certificate and key, written by
 * `egressd ca init DIR`, named by tls.ca, or made in memory for one `egressd exec`.  For every
 * host an inspected tunnel reaches, proxy_ca_leaf() returns a leaf certificate for that name,
 * signed by the CA: ECDSA P-256, SAN = the name (an IP SAN for an IP literal), valid 24 h from an
 * hour ago, a random 159-bit serial, EKU serverAuth.  Every leaf of one CA shares one key pair,
 * made when the CA is loaded, so a mint is one signature; leaves are kept in an LRU cache keyed
 * by name and reused across connections until half their life has passed.
 *
 * Single-threaded, like the event loop that calls it: a struct proxy_ca is not shared between
 * threads.  OpenSSL 3 interfaces only (EVP_PKEY, X509). */
#ifndef EGRESSD_PROXY_CA_H
#define EGRESSD_PROXY_CA_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <openssl/types.h>

#define PROXY_CA_CACHE_MAX 1024            /* leaves kept per CA (LRU) */
#define PROXY_CA_LEAF_LIFE_S (24 * 3600)   /* a leaf is valid this long after its mint */
#define PROXY_CA_LEAF_BACKDATE_S 3600      /* and from this long before it (clock skew) */
#define PROXY_CA_LEAF_REMINT_S (12 * 3600) /* a cached leaf older than this is minted again */
#define PROXY_CA_INIT_DAYS 3650            /* validity of a CA written by `egressd ca init` */
#define PROXY_CA_EPHEMERAL_DAYS 30         /* validity of exec's in-memory CA */
#define PROXY_CA_NAME_MAX 253              /* longest DNS name a leaf is minted for */
#define PROXY_CA_PERMIT_MAX 256            /* most name constraints on one CA */
#define PROXY_CA_ERR 256                   /* a good size for the err buffers below */

/* The files `egressd ca init DIR` writes, and where `egressd ca bundle` keeps the bundle: in the
 * folder of tls.ca's cert. */
#define PROXY_CA_CERT_FILE "ca.pem"
#define PROXY_CA_KEY_FILE "ca.key"
#define PROXY_CA_BUNDLE_FILE "bundle.pem"

/* The environment variables `egressd exec` points at the trust bundle for its child, and which
 * clients read each (docs/design.md 11, docs/inspection.md).  X(NAME, READERS). */
#define PROXY_CA_TRUST_ENV(X)                                                                      \
	X("SSL_CERT_FILE", "OpenSSL's default store: curl, wget, Python ssl, Ruby, Go, git on "    \
	                   "OpenSSL")                                                              \
	X("REQUESTS_CA_BUNDLE", "Python requests, and pip through it")                             \
	X("CURL_CA_BUNDLE", "curl and libcurl (git's https transport)")                            \
	X("NODE_EXTRA_CA_CERTS", "Node.js, added to its built-in roots")                           \
	X("GIT_SSL_CAINFO", "git (http.sslCAInfo)")                                                \
	X("PIP_CERT", "pip (--cert)")                                                              \
	X("npm_config_cafile", "npm (cafile)")                                                     \
	X("CARGO_HTTP_CAINFO", "cargo (http.cainfo)")                                              \
	X("AWS_CA_BUNDLE", "the AWS CLI and SDKs")                                                 \
	X("DENO_CERT", "Deno")

struct proxy_ca_env {
	const char *name;    /* the variable */
	const char *readers; /* who reads it, for docs and `egressd exec --help` */
};
/* PROXY_CA_TRUST_ENV as an array, ended by {NULL, NULL}. */
extern const struct proxy_ca_env proxy_ca_trust_env[];

struct proxy_ca;

/* ---- making, loading, judging a CA -------------------------------------------------------- */

/* A new CA in memory: an ECDSA P-256 key, a self-signed certificate valid `days` days from an
 * hour ago (basicConstraints critical CA:TRUE pathlen:0, keyUsage critical keyCertSign and
 * cRLSign, subjectKeyIdentifier).  With npermit > 0, the CA carries critical name constraints
 * that permit only those patterns' hosts (the allowDomains syntax of docs/design.md 4.2: a name
 * permits it and its subdomains, "*.a.b" and "**.a.b" permit a.b's subtree, a port is ignored,
 * an IP or CIDR permits those addresses; without any IP pattern every address is excluded), so
 * that a leaked key vouches for nothing else.  NULL with a reason in err. */
struct proxy_ca *proxy_ca_generate(
        const char *const *permit, size_t npermit, unsigned days, char *err, size_t errlen);

#define PROXY_CA_BLAME_CERT 0 /* proxy_ca_load's reason is about the certificate file */
#define PROXY_CA_BLAME_KEY 1  /* about the key file */

/* Loads a CA from PEM files (the certificate first in cert_path; an unencrypted private key in
 * key_path) and makes the leaf key.  Refuses, with a reason naming the file in err and in *blame
 * (may be NULL) which file it is about: an unreadable or empty file, an encrypted key, a key that
 * does not match the certificate, a key type leaves cannot be signed with (EC on P-256, P-384 or
 * P-521, and RSA).  CA flags and dates are proxy_ca_judge's. */
struct proxy_ca *proxy_ca_load(
        const char *cert_path, const char *key_path, int *blame, char *err, size_t errlen);

/* A CA is reference counted: proxy_ca_hold takes one more reference, proxy_ca_free drops one
 * and frees the CA with the last (the client-facing context holds one, so that a handshake still
 * running on a context of an older config generation never sees a freed CA). */
void proxy_ca_hold(struct proxy_ca *ca);
void proxy_ca_free(struct proxy_ca *ca);

/* What `egressd check` requires of a CA at time now: basicConstraints CA:TRUE, keyUsage (when
 * present) with keyCertSign, valid now, and an RSA key of at least 2048 bits.  0, or -1 with a
 * reason in err. */
int proxy_ca_judge(const struct proxy_ca *ca, time_t now, char *err, size_t errlen);

/* 1 when a leaf for host would be accepted under the CA's name constraints (always 1 without
 * them), 0 when not, -1 when host is not a name or address a leaf can be minted for.  OpenSSL's
 * own check (NAME_CONSTRAINTS_check) on an unsigned leaf. */
int proxy_ca_permits(const struct proxy_ca *ca, const char *host);

/* The same for every host an inspect pattern (allowDomains syntax, canonical) can name, judged
 * by its apex and a subdomain, or its first and last address: 1 when all are permitted; 0 when
 * one is not, with that host in err; -1 with a reason in err for a pattern that cannot be read. */
int proxy_ca_permits_pattern(
        const struct proxy_ca *ca, const char *pattern, char *err, size_t errlen);

/* The canonical text of a host as leaves and the cache name it (allow_canon_host's: lower case,
 * no trailing dot; an address as inet_ntop writes it, IPv6 without brackets) into out, and
 * whether it is an address.  0, or -1 when it is neither a host name nor an address, or does not
 * fit cap. */
int proxy_ca_canon(const char *host, char *out, size_t cap, int *is_ip);

/* Writes the CA into dir (made, with its missing parents, mode 0700): PROXY_CA_KEY_FILE (mode 0600)
 * and PROXY_CA_CERT_FILE (0644).  Never overwrites: returns 1, writing nothing, when either file is
 * there already; 0 when both were written; -1 with a reason in err on any other failure (nothing
 * is left behind). */
int proxy_ca_write(const struct proxy_ca *ca, const char *dir, char *err, size_t errlen);

/* The CA's certificate and key, owned by ca. */
X509 *proxy_ca_cert(const struct proxy_ca *ca);
/* One line for `egressd check`: subject, key type, last day, name constraints. */
void proxy_ca_describe(const struct proxy_ca *ca, char *buf, size_t cap);

/* ---- leaves -------------------------------------------------------------------------------- */

/* The leaf for host: a name or address as allow_canon_host reads it (docs/policy.md 1: upper
 * case and one trailing dot folded, any inet_aton spelling of IPv4, IPv6 with or without
 * brackets).  From the cache when there is a leaf younger than PROXY_CA_LEAF_REMINT_S, else
 * minted now and cached (evicting the least recently used).  The certificate is owned by ca and
 * stays valid until the next proxy_ca_leaf* call on ca: use it (SSL_use_certificate takes its
 * own reference) or X509_up_ref it at once.  NULL with a reason in err for a host that is not a
 * name or an address, or when OpenSSL fails. */
X509 *proxy_ca_leaf(struct proxy_ca *ca, const char *host, char *err, size_t errlen);
/* The same at a given time (tests; the cache's age checks and the validity use it). */
X509 *proxy_ca_leaf_at(struct proxy_ca *ca, const char *host, time_t now, char *err, size_t errlen);

/* The private key of every leaf of ca, owned by ca. */
EVP_PKEY *proxy_ca_leaf_key(const struct proxy_ca *ca);

struct proxy_ca_stats {
	uint64_t mints;     /* leaves signed */
	uint64_t hits;      /* leaves served from the cache */
	uint64_t evictions; /* leaves dropped to make room */
	size_t cached;      /* leaves in the cache now */
};
void proxy_ca_get_stats(const struct proxy_ca *ca, struct proxy_ca_stats *out);

/* ---- trust for clients --------------------------------------------------------------------- */

/* The system's CA bundle file (Debian: /etc/ssl/certs/ca-certificates.crt), found among the
 * usual places and OpenSSL's compiled-in default (not SSL_CERT_FILE, which may point at a bundle
 * egressd wrote); NULL when there is none. */
const char *proxy_ca_system_bundle(void);

/* Makes path hold system_file's certificates (when system_file is not NULL) followed by ca's
 * certificate, written to a temporary file and renamed over path, mode 0644.  The file is left as
 * it is when it already holds exactly that; *written (may be NULL) says whether it was written.
 * 0, or -1 with a reason in err. */
int proxy_ca_bundle_write(const struct proxy_ca *ca, const char *system_file, const char *path,
        int *written, char *err, size_t errlen);

/* ---- the command line ---------------------------------------------------------------------- */

/* `egressd ca init DIR [--permit PATTERN]...` and `egressd ca bundle [-c FILE]`; argv[0] is
 * "ca".  Exit status: 0 done; 1 `init` found a CA in DIR and wrote nothing; 2 usage or failure
 * (the reason on standard error). */
int proxy_ca_cli_main(int argc, char **argv);

#endif
