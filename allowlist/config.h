/* The YAML config (docs/design.md 5): loading, validation, and the merged view the proxy runs on.
 *
 * The loader reports every error it finds, each as "FILE:LINE:COL: message" naming the key, and
 * returns no config when there was any.  Unknown keys, wrong types and duplicate keys are errors
 * at every level.  Defaults are filled in after validation. */
#ifndef EGRESSD_ALLOWLIST_CONFIG_H
#define EGRESSD_ALLOWLIST_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "allowlist/bound.h"
#include "allowlist/cidr.h"
#include "allowlist/registry.h"

#define ALLOW_DNS_HOST_ADDRS 16 /* most static addresses per dns.hosts entry */

struct allow_hosts_entry {
	char name[ALLOW_HOST_BUF];                   /* canonical name */
	size_t naddrs;                               /* 1..ALLOW_DNS_HOST_ADDRS */
	struct allow_cidr addrs[ALLOW_DNS_HOST_ADDRS]; /* each a full-length prefix (/32, /128) */
};

struct allow_dns_config {
	char **servers;                   /* "IP" or "IP:PORT" / "[IPv6]:PORT"; empty: resolv.conf */
	size_t nservers;
	struct allow_hosts_entry *hosts;  /* dns.hosts, static answers checked first */
	size_t nhosts;
	struct allow_cidr *allow_addresses; /* exceptions to the always-denied ranges */
	size_t nallow_addresses;
	struct allow_cidr *deny_addresses;  /* further denied ranges */
	size_t ndeny_addresses;
	uint64_t timeout_ms;                /* default 5s */
};

struct allow_global_limits {
	uint64_t max_clients;       /* maxClients, default 10000 */
	uint64_t max_clients_per_source; /* maxClientsPerSource: connections one client address
	                                    holds before a session is known, default 1000 */
	uint64_t max_header_bytes;  /* maxHeaderBytes, default 65536 */
	uint64_t max_headers;       /* maxHeaders (count), default 100 */
	uint64_t header_timeout_ms; /* headerTimeout, default 10s */
	uint64_t idle_timeout_ms;   /* idleTimeout, default 5m */
	uint64_t connect_timeout_ms;/* connectTimeout, default 10s */
	uint64_t shutdown_grace_ms; /* shutdownGrace, default 10s */
};

/* Where a value was written: 1-based line and column, 0 when it was not written. */
struct allow_pos {
	unsigned long line;
	unsigned long col;
};

/* tls: (docs/design.md 5, 11; docs/inspection.md).  Paths are taken relative to the config's
 * folder, as auth.tokenFile is.  The loader only checks the shape: reading and judging the files
 * is proxy/ca.c's (allowlist does not link OpenSSL), which reports at the positions kept here. */
struct allow_tls_config {
	char *ca_cert;                   /* tls.ca.cert, resolved; NULL when tls.ca is absent */
	char *ca_key;                    /* tls.ca.key, resolved; set exactly when ca_cert is */
	char *upstream_ca;               /* tls.upstreamCA as a file, resolved; NULL = system */
	struct allow_pos ca_cert_at;     /* the value of tls.ca.cert */
	struct allow_pos ca_key_at;      /* the value of tls.ca.key */
	struct allow_pos upstream_ca_at; /* the value of tls.upstreamCA */
	int refuse_ech;                  /* tls.refuseECH: a tunnel's ClientHello with an
	                                    encrypted_client_hello extension is refused (its
	                                    inner name cannot be read), unless inspected */
};

struct allow_session_config {
	char *name;                  /* key under sessions: */
	struct allow_bound bound;    /* merged: named bounds, then the inline bound */
	struct allow_limits limits;  /* session limits (ALLOW_UNLIMITED where unset) */
	char *token;                 /* auth.token, or the contents of auth.tokenFile; NULL = none */
	struct allow_cidr *clients;  /* source addresses that select this session */
	size_t nclients;
};

struct allow_named_bound {
	char *name;               /* key under bounds: */
	struct allow_bound bound; /* as written, merged with nothing */
};

enum allow_dns_answers {
	ALLOW_DNS_ANSWERS_REAL = 0, /* real: the resolver's addresses that pass the address policy */
	ALLOW_DNS_ANSWERS_MAPPED,   /* mapped: one 198.18.0.0/15 address per (session, name) */
};

struct allow_config {
	char *path;                      /* the file it came from */
	char **listen_proxy;             /* listen.proxy: "HOST:PORT" strings, at least one */
	size_t nlisten_proxy;
	char **listen_socks5;            /* listen.socks5: "HOST:PORT" strings, may be none */
	size_t nlisten_socks5;
	char **listen_transparent;       /* listen.transparent (SO_ORIGINAL_DST), may be none */
	size_t nlisten_transparent;
	char **listen_dns;               /* listen.dns: "HOST:PORT" strings (UDP and TCP on each);
	                                    NULL when there is no DNS listener */
	size_t nlisten_dns;
	enum allow_dns_answers listen_dns_answers; /* listen.dnsAnswers, default real */
	char *listen_control;            /* listen.control or NULL */
	char *listen_metrics;            /* listen.metrics or NULL */
	struct allow_dns_config dns;
	struct allow_global_limits limits;
	char *audit_path;                /* audit.path; "-" = standard output; default "audit.jsonl" */
	int audit_chain;                 /* audit.chain: add "prev" hashes */
	int audit_fsync;                 /* audit.fsync: records durable before bytes move */
	struct allow_tls_config tls;     /* tls: the inspection CA and the upstream trust */
	struct allow_session_config *sessions; /* in file order */
	size_t nsessions;
	struct allow_named_bound *bounds; /* bounds:, in file order: sessions made later (control
	                                     API) may name them too */
	size_t nbounds;
	char *registries[ALLOW_REG_COUNT]; /* registries: the host of each package registry family
	                                      (allowlist/registry.h), canonical, or NULL; what the
	                                      classifier's pre-run check tests for a tool's default
	                                      registry */
};

/* A list of error lines, each "FILE:LINE:COL: message" (or "FILE: message"). */
struct allow_errors {
	char **lines;
	size_t n;
};
void allow_errors_free(struct allow_errors *e);

/* Loads and validates path.  Returns the config (caller frees with allow_config_free), or NULL
 * with every error appended to errs.  Relative paths in the config (tokenFile, tls.ca.cert,
 * tls.ca.key, tls.upstreamCA) are taken relative to the config file's folder. */
struct allow_config *allow_config_load(const char *path, struct allow_errors *errs);

/* The same from a buffer; `name` stands for the file name in error messages. */
struct allow_config *allow_config_load_buffer(const char *name, const char *buf, size_t len,
	struct allow_errors *errs);

void allow_config_free(struct allow_config *cfg);

/* The session named name, or NULL. */
const struct allow_session_config *allow_config_session(const struct allow_config *cfg,
	const char *name);

/* Parses one session from a body that holds the keys of a sessions: entry (bounds, bound,
 * limits, auth, clients), in YAML or JSON (JSON is YAML's flow style): what POST /v1/sessions
 * receives.  An empty body is a session without restrictions.  bounds: names resolve against
 * cfg's bounds: (cfg may be NULL: there are none).  auth.tokenFile is refused: a request must
 * not make egressd read a file.  Error lines read "BODYNAME:LINE:COL: KEY.PATH: message" with
 * paths from the body's own keys ("limits.maxBytesOut").  Returns 0 with *out filled (the caller
 * frees it with allow_session_config_free), or -1 with every error appended to errs. */
int allow_config_session_load(const struct allow_config *cfg, const char *bodyname,
	const char *session_name, const char *buf, size_t len, struct allow_session_config *out,
	struct allow_errors *errs);

/* Frees what a session owns (name, bound, token, clients) and zeroes it; not s itself. */
void allow_session_config_free(struct allow_session_config *s);

/* Prints each session's merged bound and limits, as `egressd check` shows them. */
void allow_config_print(const struct allow_config *cfg, FILE *out);

/* Value syntax shared with the control API and `egressd check`.
 *
 * allow_number_parse: decimal digits only (no sign, no spaces).  allow_size_parse: a number with
 * an optional B/KiB/MiB/GiB suffix, in bytes.  allow_duration_parse: a number with one of
 * ms/s/m/h, in milliseconds; a bare number is refused except "0".  Each returns 0, -1 for bad
 * syntax, and (size, duration) -2 when the value does not fit in 64 bits.  in need not be
 * NUL-terminated. */
int allow_number_parse(const char *in, size_t len, uint64_t *out);
int allow_size_parse(const char *in, size_t len, uint64_t *out);
int allow_duration_parse(const char *in, size_t len, uint64_t *out_ms);

/* The largest exact unit: 104857600 -> "100MiB", 28800000 ms -> "8h", 1500 ms -> "1500ms".  buf
 * is always NUL-terminated when cap > 0. */
void allow_size_format(uint64_t bytes, char *buf, size_t cap);
void allow_duration_format(uint64_t ms, char *buf, size_t cap);

/* Parses a listening address: "IPv4", "IPv4:PORT", "IPv6", "[IPv6]" or "[IPv6]:PORT" (IP
 * literals only; a port is 1-65535 without leading zeros, or exactly "0" for an ephemeral port,
 * which leaves the port 0 in *out).  Without a port, default_port is used, and 0 makes the port
 * required.  Returns 0 with the address in *out / *outlen, or -1 with a reason in err. */
int allow_config_addr_parse(const char *in, uint16_t default_port, struct sockaddr_storage *out,
	socklen_t *outlen, char *err, size_t errlen);

/* The same for an address egressd connects to (dns.servers): port 0 is refused. */
int allow_config_server_parse(const char *in, uint16_t default_port,
	struct sockaddr_storage *out, socklen_t *outlen, char *err, size_t errlen);

#endif
