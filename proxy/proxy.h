/* The proxy's run-time objects: the server and its config generations, the runtime session
 * table, and the connection that walks front door -> pipeline -> relay -> close.
 *
 * Internal to proxy/: nothing outside proxy/ includes this header.  The life of a connection is
 * described in docs/connection.md, the pipeline in docs/policy.md. */
#ifndef EGRESSD_PROXY_PROXY_H
#define EGRESSD_PROXY_PROXY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "allowlist/action.h"
#include "allowlist/config.h"
#include "allowlist/host.h"
#include "allowlist/policy.h"
#include "audit/audit.h"
#include "dns/addrpolicy.h"
#include "dns/resolver.h"

struct event_base;
struct event;
struct bufferevent;
struct evconnlistener;
struct evbuffer;
struct audit_log;
struct dns_listener;
struct dns_map;
struct proxy_server;
struct proxy_conn;
struct proxy_outcome;
struct proxy_tls;

#define PROXY_MAX_LISTENERS 16
#define PROXY_ADDR_TEXT 64            /* "[v6]:port" and NUL */
#define PROXY_HIGH_WATER (256 * 1024) /* stop reading a side when the other's output holds this */
#define PROXY_LOW_WATER (64 * 1024)   /* and resume when it drains below this */

uint64_t proxy_now_ms(void);

/* ---- runtime sessions (session.c) ---------------------------------------------------------
 *
 * One table keyed by name that outlives config generations: a reload points each entry at its
 * new config (or at none, when the new config drops the name) and never touches its counters. */
struct proxy_session {
	char *name;                             /* the key (owned) */
	const struct allow_session_config *cfg; /* in the current generation; NULL once dropped */
	unsigned refs;                          /* connections that belong to it */
	uint64_t active;                        /* of them, counted against maxConnections */
	uint64_t total;                         /* connections counted so far */
	uint64_t bytes_out;                     /* client to upstream, all connections */
	uint64_t bytes_in;                      /* upstream to client */
	uint64_t started_ms;                    /* monotonic time the session began */
	char **seen;                            /* hosts reached so far (open hash, owned) */
	size_t seen_n, seen_cap;
	uint64_t *ring;                         /* times of the last new hosts (owned) */
	size_t ring_head, ring_n;
	struct proxy_session *next;             /* in the table */
};

/* Points every session of the table at gen's config, adding the new names and freeing the
 * entries that neither the config nor a connection still holds.  0, or -1 out of memory. */
int proxy_sessions_apply(struct proxy_server *srv, const struct allow_config *cfg);
/* The entry named name, or NULL. */
struct proxy_session *proxy_session_find(struct proxy_server *srv, const char *name);
void proxy_session_hold(struct proxy_session *s);
void proxy_session_release(struct proxy_server *srv, struct proxy_session *s);
void proxy_sessions_free(struct proxy_server *srv);
/* 0 when host may be reached now (recorded when new), -1 when it is a new host beyond
 * limits.maxNewHostsPerMinute. */
int proxy_session_new_host(struct proxy_session *s, const char *host, uint64_t now_ms);
/* Bytes the session may still move client -> upstream (out) or upstream -> client (in). */
uint64_t proxy_session_room(const struct proxy_session *s, int out);
/* The monotonic time the session expires, or UINT64_MAX. */
uint64_t proxy_session_expiry(const struct proxy_session *s);

/* ---- config generations and the server (server.c) ---------------------------------------- */

/* One loaded config with what was built from it.  A connection holds a reference while a
 * decision it started under this generation is in progress (a query on its resolver). */
struct proxy_gen {
	struct allow_config *cfg;       /* owned */
	struct dns_resolver *dns;       /* owned; built from cfg->dns */
	struct dns_addr_policy addrpol; /* points into cfg */
	struct proxy_tls *tls;          /* owned; the CA and TLS contexts of inspection
	                                   (proxy/tlsctx.h), all NULL when unused */
	unsigned refs;                  /* the server's reference plus one per connection */
};

void proxy_gen_hold(struct proxy_gen *gen);
void proxy_gen_release(struct proxy_gen *gen);

/* The protocol a listener speaks: which front door its connections come in by. */
enum proxy_listen_kind {
	PROXY_LISTEN_HTTP = 0,    /* HTTP forward proxy and CONNECT (listen.proxy) */
	PROXY_LISTEN_SOCKS5,      /* SOCKS5 (listen.socks5) */
	PROXY_LISTEN_TRANSPARENT, /* redirected TCP (listen.transparent) */
};

struct proxy_listener {
	struct proxy_server *srv;     /* the server it belongs to */
	struct evconnlistener *lev;   /* accepting socket */
	enum proxy_listen_kind kind;  /* its front door */
	struct sockaddr_storage addr; /* bound address (port resolved when 0 was asked) */
	socklen_t addrlen;
	char text[PROXY_ADDR_TEXT];   /* "127.0.0.1:3128" */
	const char *key;              /* "listen.proxy", "listen.socks5", ... for messages */
};

struct proxy_pooled;
struct proxy_source;
struct proxy_audit_loop;

struct proxy_server {
	struct event_base *base;
	struct proxy_gen *gen;          /* the current generation (one reference) */
	struct proxy_session *sessions; /* the runtime session table (session.c) */
	struct audit_log *audit;        /* shared by every generation */
	struct proxy_audit_loop *auditloop; /* the log's events and held connections (auditwait.c) */
	char *config_path;              /* for reloads */
	struct proxy_listener listeners[PROXY_MAX_LISTENERS];
	size_t nlisteners;
	struct event *accept_pause;     /* re-enables the listeners after EMFILE */
	int accept_paused;              /* listeners disabled for lack of descriptors */
	struct proxy_conn *conns;       /* every open connection, doubly linked */
	size_t nconns;
	struct proxy_conn *dead;        /* closed connections, freed by reap (singly linked) */
	struct event *reap;             /* frees dead connections from the loop */
	size_t peak_conns;              /* most open connections since memory was last trimmed */
	struct event *trim;             /* hands freed memory back, shortly after a burst ends */
	struct proxy_source **sources;  /* per client address: connections without a session */
	size_t sources_cap;
	struct proxy_pooled *pool;      /* parked kept-alive upstreams, newest first (pool.c) */
	struct proxy_pooled *pool_tail;
	size_t npool;
	uint64_t nsockets;              /* sockets open: clients, upstreams, parked upstreams */
	uint64_t fd_limit;              /* RLIMIT_NOFILE when it was read */
	uint64_t next_conn_id;          /* from 1 */
	struct event *sig[5];           /* TERM, INT, HUP, USR1, PIPE(ignored) */
	struct event *grace;            /* shutdown grace timer */
	int stopping;                   /* no longer accepting */
	int exit_code;
	int fd_reserved;                /* libevent has its records for descriptors below this */
	struct dns_addr *own_addrs;     /* this host's interface addresses, when a listener is a
	                                   wildcard (they all reach it); read at start and reload */
	size_t nown_addrs;
	struct proxy_run *run;          /* how it runs (exec's hooks and session) */
	struct dns_listener *dns;       /* listen.dns (dnsfront.c), or NULL */
	struct proxy_listener dns_listeners[PROXY_MAX_LISTENERS]; /* its addresses, for the loop
	                                   check and the start record (no lev) */
	size_t ndns_listeners;
	struct dns_map *dnsmap;         /* mapped answers, shared with the transparent listener */
};

/* How a server runs: `egressd serve`, or the private one of `egressd exec` (exec.c). */
struct proxy_run_sock {
	int fd;                      /* a listening socket made elsewhere (taken over), or -1 */
	enum proxy_listen_kind kind; /* its front door */
};

struct proxy_run {
	const char *config_path;     /* the config file (reloads read it again), or NULL: cfg */
	struct allow_config *cfg;    /* without a path: the config, taken over */
	int tls_exec;                /* inspection without tls.ca makes a CA in memory */
	const char *session;         /* every listener belongs to this session, or NULL */
	struct proxy_run_sock *socks;/* listening sockets made elsewhere (exec --isolate) */
	size_t nsocks;
	int (*dns_fds)[2];           /* DNS sockets made elsewhere: {UDP, TCP} pairs, taken over */
	size_t ndns;
	int signals;                 /* egressd's own: TERM/INT stop, HUP reloads, USR1 reopens */
	int quiet;                   /* no "listening on" or stopping lines (exec: CMD's stderr) */
	/* The listeners are open, the loop not yet running: 0 goes on, -1 stops. */
	int (*ready)(struct proxy_server *srv, void *arg);
	/* The loop ended; the event base is still there (free what ready added). */
	void (*done)(struct proxy_server *srv, void *arg);
	/* Every denial, for exec's summary; may be NULL. */
	void (*denied)(void *arg, const struct proxy_conn *c, const struct proxy_outcome *o);
	void *arg;
};

int proxy_serve(const char *config_path);
int proxy_run(struct proxy_run *run);
/* `egressd exec ...` (exec.c); argv[0] is "exec". */
int proxy_exec_main(int argc, char **argv);
/* Stops accepting and lets open connections finish within shutdownGrace (SIGTERM's stop). */
void proxy_server_stop(struct proxy_server *srv, const char *why);
/* 1 when a is one of this host's interface addresses (srv->own_addrs). */
int proxy_is_own_addr(const struct proxy_server *srv, const struct dns_addr *a);
/* The listener a dial to a:port would reach (a loop), or NULL. */
const struct proxy_listener *proxy_own_listener(const struct proxy_server *srv,
        const struct dns_addr *a, uint16_t port);
/* dnsfront.c: the DNS listener's glue.  proxy_dnsfront_open opens listen.dns (printing
 * "egressd: listening on ADDR (dns, UDP and TCP)" for each): 0, or -1 after printing why.
 * proxy_dnsfront_stop stops answering; proxy_dnsfront_free frees the listener and the map. */
int proxy_dnsfront_open(struct proxy_server *srv);
void proxy_dnsfront_stop(struct proxy_server *srv);
void proxy_dnsfront_free(struct proxy_server *srv);
/* The session of a client without credentials: the first whose clients list holds peer, else
 * the session named default; NULL when neither exists. */
struct proxy_session *proxy_session_for_peer(struct proxy_server *srv, const struct dns_addr *peer);
/* A connection was freed: finishes a stop when it was the last. */
void proxy_server_conn_gone(struct proxy_server *srv);
/* A connection took descriptor fd: makes sure libevent's per-descriptor records up to it exist,
 * made in blocks (see server.c). */
void proxy_fd_reserve(struct proxy_server *srv, int fd);
/* Per-source accounting of connections without a session (limits.maxClientsPerSource). */
int proxy_source_add(struct proxy_server *srv, const struct dns_addr *a);
void proxy_source_del(struct proxy_server *srv, const struct dns_addr *a);
/* auditwait.c: the audit log on the loop (docs/audit.md, "In the proxy").
 * proxy_audit_open: opens cfg's audit.path with its chain and fsync, wires the log's backlog,
 * retry and durability descriptors into srv->base; 0, or -1 with err.  proxy_audit_close: the
 * reverse, after the last record.
 * proxy_audit_admit: before dialling an allowed destination: 0, or -1 after denying (503
 * audit-unavailable) when the log would refuse the decision record now.
 * proxy_audit_wait: seq is the allow record's seq: runs next(c) once it is on record (at once
 * without fsync; with fsync once it is durable, holding c meanwhile); seq 0 (refused) or a
 * record lost to a failed fdatasync denies (503 audit-unavailable).
 * proxy_audit_wait_cancel: the connection closes while held. */
int proxy_audit_open(struct proxy_server *srv, const struct allow_config *cfg, char *err,
        size_t errlen);
void proxy_audit_close(struct proxy_server *srv);
int proxy_audit_admit(struct proxy_conn *c);
void proxy_audit_wait(struct proxy_conn *c, uint64_t seq, void (*next)(struct proxy_conn *));
void proxy_audit_wait_cancel(struct proxy_conn *c);

/* ---- the connection (conn.c) ---------------------------------------------------------------
 *
 * One struct per client connection with two halves, each with its own state, one timer whose
 * deadline follows from both states, and one close function.  Nothing is freed while a caller
 * may still hold the pointer: proxy_conn_close() closes the sockets and writes the close record
 * at once, and the loop frees the struct afterwards; code that called something that may close
 * checks proxy_conn_closed(c) before it touches the connection again. */

/* The client half.  Changed only through proxy_client_set(). */
enum proxy_client_state {
	PROXY_CLIENT_REQUEST = 0, /* the front door reads a request (an HTTP head, a SOCKS greeting
	                             and request); headerTimeout from its first byte, idleTimeout
	                             before it between kept-alive requests */
	PROXY_CLIENT_WAIT,        /* the pipeline decides, resolves, dials; what the client sends
	                             meanwhile waits in the buffer, capped by the read watermark */
	PROXY_CLIENT_FORWARD,     /* an HTTP exchange: request body up, response down; idleTimeout */
	PROXY_CLIENT_PEEK,        /* a tunnel's first bytes are read and checked before they are
	                             relayed (tunnel.c); idleTimeout, headerTimeout once a TLS
	                             ClientHello has begun */
	PROXY_CLIENT_TUNNEL,      /* bytes relayed both ways by splice (splice.c); idleTimeout */
	PROXY_CLIENT_ANSWER,      /* a last answer is written, then the socket lingers (reads and
	                             drops) until the client closes or PROXY_LINGER_MS */
	PROXY_CLIENT_CLOSED,      /* closed; the struct waits for the loop to free it */
};

/* The upstream half.  Changed only through proxy_up_set(). */
enum proxy_up_state {
	PROXY_UP_NONE = 0,   /* no upstream */
	PROXY_UP_RESOLVING,  /* c-ares resolves the destination (no timer of ours: dns.timeout) */
	PROXY_UP_CONNECTING, /* a connect is in progress; connectTimeout */
	PROXY_UP_IDLE,       /* connected, between HTTP requests; a byte or an end drops it */
	PROXY_UP_ACTIVE,     /* carries a request, a tunnel's first bytes or a tunnel */
};

#define PROXY_LINGER_MS 2000            /* how long a last answer's socket lingers */
#define PROXY_LINGER_BYTES (256 * 1024) /* and how much it reads meanwhile */
#define PROXY_FLUSH_POLL_MS 20          /* how often a slow TLS reader's answer is retried */

struct proxy_client_half {
	enum proxy_client_state state;
	struct bufferevent *bev;        /* NULL once its socket went to the splice relay */
	int eof;                        /* the client finished sending (a half-close) */
	uint64_t linger_bytes;          /* dropped while lingering */
	uint64_t deadline_ms;           /* headerTimeout or the linger end, when one applies */
	uint64_t flush_poll_ms;         /* a TLS answer's ciphertext is still to write: try then */
};

struct proxy_up_half {
	enum proxy_up_state state;
	struct bufferevent *bev;        /* NULL when none or spliced */
	int eof;                        /* the upstream finished sending */
	struct dns_query *dnsq;         /* while resolving */
	struct dns_addr *addrs;         /* addresses that passed the policy (owned, while dialling) */
	size_t naddrs, next;
	struct dns_addr addr;           /* the address connected to (or being dialled) */
	uint16_t port;
	char addr_text[PROXY_ADDR_TEXT];/* addr:port as text, "" when none */
	char *key;                      /* "session host:port" of a kept HTTP upstream (owned) */
	uint64_t deadline_ms;           /* connectTimeout while connecting */
};

/* What a front door asks the pipeline to decide (pipeline.c). */
struct proxy_request {
	const char *front;              /* audit "front": http, connect, socks5, transparent */
	int tunnel;                     /* a tunnel (what it carries comes from its first bytes)
	                                   rather than one HTTP request */
	enum allow_tunnel_kind kind;    /* tunnels: what it carries, when already known */
	struct allow_dest dest;         /* canonical destination */
	unsigned action;                /* HTTP requests: the request's leaf tags */
	char method[24];                /* HTTP requests; "" for tunnels */
	char *path;                     /* HTTP requests: origin-form target (owned) */
	char *rule;                     /* the allow rule that decided it (owned), for the record */
	int has_cred;                   /* credentials came (Proxy-Authorization, SOCKS5 auth) */
	char *user, *pass;              /* owned; NULL without credentials */
	size_t user_len, pass_len;
	int fixed_upstream;             /* a request inside a tunnel: the upstream is the tunnel's */
	int dialled;                    /* an upstream address is this request's (dialled, reused or
	                                   judged for it): its records may name it */
	char orig_dst[PROXY_ADDR_TEXT]; /* transparent: the destination the client dialled, "" */
};

/* A denial (or a failure) as a value; the front door renders it (docs/design.md 6). */
struct proxy_outcome {
	int status;                     /* the HTTP status that fits (403, 429, 502, ...) */
	const char *reason;             /* the reason code, e.g. "host-not-allowed" */
	char rule[400];                 /* the rule that decided ("" when none) */
	char detail[700];               /* what would allow it, a sentence */
};

/* A front door: the protocol a client speaks to egressd (HTTP proxy, SOCKS5, transparent).
 * It turns client bytes into a request for the pipeline and renders outcomes in its protocol;
 * the pipeline calls these and knows nothing else of it. */
struct proxy_front {
	const char *name;                               /* "http", "socks5", "transparent" */
	/* The connection was accepted (its client half is in REQUEST); may be NULL. */
	void (*start)(struct proxy_conn *c);
	/* Client bytes arrived while the client half is in REQUEST. */
	void (*read)(struct proxy_conn *c);
	/* The pipeline allowed c->rq: the upstream is connected and the decision on record. */
	void (*allowed)(struct proxy_conn *c);
	/* The pipeline denied c->rq (or failed it) before the front door answered. */
	void (*denied)(struct proxy_conn *c, const struct proxy_outcome *o);
	/* A tunnel's success answer (200, a SOCKS reply; nothing for transparent). */
	void (*established)(struct proxy_conn *c);
	/* Frees the private state (front_state); may be NULL. */
	void (*release)(struct proxy_conn *c);
	/* The client's request deadline passed in REQUEST; NULL: the connection closes
	 * (header-timeout). */
	void (*timeout)(struct proxy_conn *c);
};

extern const struct proxy_front proxy_front_http;
extern const struct proxy_front proxy_front_socks5;
extern const struct proxy_front proxy_front_transparent;

struct proxy_splice;
struct proxy_body;
struct proxy_fwd;
struct proxy_peek;

/* A connection held until its decision record is durable (audit.fsync; auditwait.c). */
struct proxy_audit_hold {
	uint64_t seq;                      /* the decision record's seq; 0 = not held */
	void (*next)(struct proxy_conn *); /* what runs once it is durable */
	struct proxy_conn *prev, *nextc;   /* in the server's list of held connections */
	uint64_t deadline_ms;              /* denied (503 audit-unavailable) if not durable by then */
};

struct proxy_conn {
	struct proxy_server *srv;
	struct proxy_conn *prev, *next;   /* in srv->conns; next also links srv->dead */
	uint64_t id;                      /* audit "conn" */
	const struct proxy_front *front;  /* the front door it came in by */
	void *front_state;                /* that front door's private state (owned by it) */
	const struct proxy_listener *listener;
	struct proxy_session *session;    /* NULL until identified; held (refs) */
	int session_counted;              /* counted in session->active and total */
	int source_counted;               /* counted in the per-source table */
	struct proxy_gen *gen;            /* held while a decision is in progress, else NULL */
	struct proxy_client_half client;
	struct proxy_up_half up;
	struct proxy_request rq;          /* the request being decided or carried */
	struct proxy_fwd *fwd;            /* HTTP exchange state (forward.c), NULL until needed */
	struct proxy_peek *peek;          /* a tunnel's first-bytes check (tunnel.c), or NULL */
	struct proxy_splice *relay;       /* the splice relay of a tunnel, or NULL */
	struct proxy_body *body;          /* a response body being spliced, or NULL */
	enum allow_tunnel_kind carries;   /* a tunnel's kind once known */
	void (*answer)(struct proxy_conn *c, const struct proxy_outcome *o);
	                                  /* how a denial is rendered now (front door, HTTP inside
	                                     a tunnel, or a close) */
	char client_text[PROXY_ADDR_TEXT];
	struct dns_addr peer;             /* the client's address */
	struct event *timer;              /* the nearest deadline of both halves and the session */
	uint64_t timer_at;                /* when the timer is set to fire, 0 = not armed */
	uint64_t last_active_ms;          /* for the idle timeout */
	uint64_t start_ms;
	uint64_t bytes_out;               /* client to upstream, on the client's behalf */
	uint64_t bytes_in;                /* upstream to client */
	const char *first_end;            /* which side ended first (client-closed or
	                                     upstream-closed), for a tunnel that completes */
	const char *end;                  /* why it ended, once closed */
	int requests;                     /* requests decided on this connection */
	int inspected;                    /* both halves are TLS that egressd terminates
	                                     (inspect.c): no splice, no direct writes */
	int client_tls_done;              /* the client's handshake with egressd completed */
	const char *door;                 /* the front door a tunnel came in by, when its requests
	                                     are recorded under another (inspected) */
	const char *up_tls_error;         /* why egressd's TLS to the upstream failed (owned), or
	                                     NULL: the next request gets 502 upstream-tls */
	struct proxy_audit_hold hold;     /* waiting for audit.fsync (auditwait.c) */
};

void proxy_conn_accept(struct proxy_server *srv, int fd, const struct sockaddr *sa, socklen_t len,
        const struct proxy_listener *l);
/* The one way a connection ends: closes both halves, writes the close record with end (the real
 * reason) and queues the struct for the loop to free.  Idempotent. */
void proxy_conn_close(struct proxy_conn *c, const char *end);
static inline int proxy_conn_closed(const struct proxy_conn *c)
{
	return c->client.state == PROXY_CLIENT_CLOSED;
}
void proxy_client_set(struct proxy_conn *c, enum proxy_client_state st);
void proxy_up_set(struct proxy_conn *c, enum proxy_up_state st);
/* Sets the timer to the nearest deadline that the halves' states and the session imply. */
void proxy_conn_rearm(struct proxy_conn *c);
void proxy_conn_touch(struct proxy_conn *c);
/* Writes a last answer already queued on the client's output, then lingers and closes with
 * end. */
void proxy_conn_finish(struct proxy_conn *c, const char *end);
/* A parked upstream (pool.c) in c->up.bev becomes the connection's, idle. */
void proxy_conn_adopt_upstream(struct proxy_conn *c);
/* Frees the upstream half (not the client's). */
void proxy_up_drop(struct proxy_conn *c);
/* Starts dialling c->up.addrs in order (pipeline.c calls it); ends in the pipeline's
 * connected step or a denial. */
void proxy_up_dial(struct proxy_conn *c);
/* Bytes moved for the connection and its session. */
void proxy_count(struct proxy_conn *c, uint64_t out, uint64_t in);
/* Bytes the connection's session may still move out (1) or in (0). */
uint64_t proxy_conn_room(const struct proxy_conn *c, int out);
void proxy_format_addr(const struct dns_addr *a, uint16_t port, char *buf, size_t cap);
void proxy_bev_tune(struct bufferevent *bev);
void proxy_flush(struct bufferevent *bev);
/* Reads what the client sent behind the accept right away (conn.c), for front doors. */
void proxy_client_read_now(struct proxy_conn *c);
void proxy_request_clear(struct proxy_request *rq);

/* ---- the pipeline (pipeline.c) --------------------------------------------------------------
 *
 * The same for every front door: session, limits, decision, resolution, address judgement,
 * decision record, dial.  Ends in c->front->allowed(c), or in proxy_deny(). */
void proxy_pipeline_run(struct proxy_conn *c);
/* A connection refused before its request names a destination (a transparent one whose first
 * bytes are no request): takes the session its client address belongs to, so that the record
 * names it, without counting the connection against the session's limits. */
void proxy_pipeline_name_session(struct proxy_conn *c);
/* The upstream connected (conn.c): record the decision and hand over to the front door. */
void proxy_pipeline_connected(struct proxy_conn *c);
/* Writes the deny record of o and renders o through c->answer. */
void proxy_deny(struct proxy_conn *c, const struct proxy_outcome *o);
/* proxy_deny of a new outcome: status, reason, rule and detail (a sentence, not a format). */
void proxy_refuse(struct proxy_conn *c, int status, const char *reason, const char *rule,
        const char *detail);
/* proxy_deny of a policy decision's denial (403, its reason, rule, and how to allow it). */
void proxy_refuse_decision(struct proxy_conn *c, const struct allow_decision *d);
/* Builds an outcome; rule and detail are printf-style texts (NULL: empty). */
void proxy_outcome_set(struct proxy_outcome *o, int status, const char *reason, const char *rule,
        const char *detail_fmt, ...) __attribute__((format(printf, 5, 6)));
/* Re-decides what c carries now under the current generation; 0 when it may go on, -1 when
 * it was closed (policy-changed).  For reloads (server.c). */
int proxy_pipeline_recheck(struct proxy_conn *c);
/* 1 when user and pass are a session's name and token (constant-time on the token). */
int proxy_credentials_match(struct proxy_server *srv, const char *user, size_t ulen,
        const char *pass, size_t plen);
/* Writes a tunnel decision record after its first bytes refused or inspected it. */
uint64_t proxy_audit_tunnel(struct proxy_conn *c, const char *decision,
        const struct proxy_outcome *o);

/* ---- answers (answer.c) ------------------------------------------------------------------- */

/* Renders o as an HTTP answer on the client's output and finishes the connection. */
void proxy_answer_http(struct proxy_conn *c, const struct proxy_outcome *o);
/* A refusal that has no protocol to speak in: the connection closes (the record says why). */
void proxy_answer_close(struct proxy_conn *c, const struct proxy_outcome *o);

/* ---- the HTTP exchange (forward.c) -------------------------------------------------------- */

/* Starts reading HTTP requests on c: forward-proxy form (absolute URIs) from the HTTP front
 * door, or origin form inside a tunnel whose upstream is connected (in_tunnel). */
void proxy_fwd_begin(struct proxy_conn *c, int in_tunnel);
/* Client bytes while an HTTP exchange reads or forwards (client REQUEST/FORWARD). */
void proxy_fwd_client_read(struct proxy_conn *c);
/* The pipeline allowed the current request: send it upstream. */
void proxy_fwd_allowed(struct proxy_conn *c);
void proxy_fwd_upstream_read(struct proxy_conn *c);
void proxy_fwd_upstream_drained(struct proxy_conn *c);
void proxy_fwd_upstream_eof(struct proxy_conn *c);
void proxy_fwd_client_drained(struct proxy_conn *c);
/* The spliced response body is complete (eof: it ended with the upstream's close). */
void proxy_fwd_body_done(struct proxy_conn *c, int eof);
void proxy_fwd_free(struct proxy_conn *c);
/* 1 when the current response's head went to the client. */
int proxy_fwd_response_started(const struct proxy_conn *c);
/* 1 when the current request has been sent whole (its body too). */
int proxy_fwd_request_sent(const struct proxy_conn *c);

/* ---- tunnels (tunnel.c) ------------------------------------------------------------------- */

/* A tunnel was allowed and its upstream is connected: check its first bytes, then relay. */
void proxy_tunnel_start(struct proxy_conn *c);
void proxy_tunnel_client_read(struct proxy_conn *c);
void proxy_tunnel_upstream_read(struct proxy_conn *c);
void proxy_tunnel_free(struct proxy_conn *c);
/* Moves both sockets to the splice relay, after what the bufferevents still hold. */
void proxy_tunnel_relay(struct proxy_conn *c);

/* ---- TLS inspection (inspect.c) ------------------------------------------------------------ */

/* A tunnel's first ClientHello named its host, and the host is inspected: egressd terminates the
 * client's TLS with a minted leaf and opens its own TLS to the upstream; the connection then is
 * an HTTP exchange inside TLS (forward.c), each request decided with front "inspected". */
void proxy_inspect_start(struct proxy_conn *c);
/* The client's TLS handshake with egressd failed or did not finish within headerTimeout; the
 * upstream's failed (conn.c calls these). */
void proxy_inspect_client_failed(struct proxy_conn *c);
void proxy_inspect_client_timeout(struct proxy_conn *c);
void proxy_inspect_upstream_failed(struct proxy_conn *c);
/* The upstream TLS handshake did not finish within limits.connectTimeout: 504 upstream-timeout
 * for a request waiting for it, 502 for the next one (the upstream is dropped). */
void proxy_inspect_upstream_timeout(struct proxy_conn *c);
/* Puts both halves behind TLS filters (bufferevent_openssl): the client's accepting, the
 * upstream's connecting; the filters own the SSLs and the sockets.  0, or -1 (close c). */
struct ssl_st;
int proxy_conn_wrap_tls(struct proxy_conn *c, struct ssl_st *client_ssl, struct ssl_st *up_ssl);

/* ---- splice (splice.c) -------------------------------------------------------------------- */

int proxy_splice_start(struct proxy_conn *c);
void proxy_splice_free(struct proxy_conn *c);
/* Pipes open (pooled or in use), each two descriptors. */
size_t proxy_splice_pipes(void);
#define PROXY_BODY_SPLICE_MIN (64 * 1024)
int proxy_body_splice_start(struct proxy_conn *c, uint64_t left);
void proxy_body_splice_free(struct proxy_conn *c);

/* ---- the upstream pool (pool.c) ------------------------------------------------------------ */

/* Parks c's idle upstream for other connections of the same session (when it has one). */
void proxy_pool_put(struct proxy_conn *c);
/* Takes a parked upstream for key, or NULL; sets c->up (bev, addr, text, key). */
int proxy_pool_take(struct proxy_conn *c, const char *key);
void proxy_pool_clear(struct proxy_server *srv);

#endif
