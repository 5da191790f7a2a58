/* The proxy's run-time objects: the server, its config generations, sessions and connections.
 *
 * Internal to proxy/: every file of the module includes this header; nothing outside proxy/ does.
 * The connection lifecycle is described in docs/connection.md. */
#ifndef EGRESSD_PROXY_PROXY_H
#define EGRESSD_PROXY_PROXY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <http_parser.h>

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

#define PROXY_MAX_LISTENERS 16
#define PROXY_ADDR_TEXT 64          /* "[v6]:port" and NUL */
#define PROXY_HIGH_WATER (256 * 1024) /* stop reading a side when the other's output holds this */
#define PROXY_LOW_WATER (64 * 1024)   /* and resume when it drains below this */

/* A session at run time: its config and its counters. */
struct proxy_session {
	const struct allow_session_config *cfg; /* owned by the generation's config */
	uint64_t active;                        /* open connections */
	uint64_t total;                         /* connections so far */
	uint64_t bytes_out;                     /* client to upstream, all connections */
	uint64_t bytes_in;                      /* upstream to client */
	uint64_t started_ms;                    /* monotonic time the session began */
	char **seen;                            /* hosts reached so far (open hash, owned) */
	size_t seen_n, seen_cap;
	uint64_t *ring;                         /* times of the last new hosts (owned) */
	size_t ring_head, ring_n;
	struct proxy_session *successor;        /* the same session in a newer generation, whose
	                                           counters are the live ones; NULL if newest */
};

/* The session whose counters and limits are live: a session carries on across reloads under its
 * name, so its clock, bytes and connections are not reset by SIGHUP. */
struct proxy_session *proxy_session_live(struct proxy_session *s);

struct proxy_conn;
/* Counts bytes moved for the connection and its live session. */
void proxy_count(struct proxy_conn *c, uint64_t out, uint64_t in);
/* 1 when moving out/in more bytes keeps the connection's session within its byte limits; when
 * not, the crossed limit is marked spent. */
int proxy_conn_bytes_ok(struct proxy_conn *c, uint64_t out, uint64_t in);

/* session.c.  proxy_session_new_host: 0 when host may be reached now (recording it when new),
 * -1 when it is a new host beyond limits.maxNewHostsPerMinute.  proxy_session_bytes_ok: 1 when
 * moving out/in more bytes stays within the byte limits. */
int proxy_session_new_host(struct proxy_session *s, const char *host, uint64_t now_ms);
int proxy_session_bytes_ok(const struct proxy_session *s, uint64_t out, uint64_t in);
void proxy_session_free(struct proxy_session *s);

/* One loaded config with what was built from it.  Connections hold a reference, so a reload can
 * swap generations while old connections finish on the config they started with. */
struct proxy_gen {
	struct allow_config *cfg;         /* owned */
	struct dns_resolver *dns;         /* owned; built from cfg->dns */
	struct dns_addr_policy addrpol;   /* points into cfg */
	struct proxy_session *sessions;   /* one per cfg->sessions, same order */
	struct proxy_session *dflt;       /* the session named "default", or NULL */
	unsigned refs;                    /* the server's reference plus one per connection */
	struct proxy_gen *prev, *next;    /* every generation still alive (server.c) */
	struct proxy_server *srv;
};

struct proxy_server;

struct proxy_listener {
	struct proxy_server *srv;      /* the server it belongs to */
	struct evconnlistener *lev;     /* accepting socket */
	struct sockaddr_storage addr;   /* bound address (port resolved when 0 was asked) */
	socklen_t addrlen;
	char text[PROXY_ADDR_TEXT];     /* "127.0.0.1:3128" */
};

struct proxy_conn;
struct proxy_pooled;
struct proxy_audit_loop;

struct proxy_server {
	struct event_base *base;
	struct proxy_gen *gen;          /* the current generation (one reference) */
	struct proxy_gen *gens;         /* every generation still alive, newest first */
	struct audit_log *audit;        /* shared by every generation */
	struct proxy_audit_loop *auditloop; /* the log's events and held connections (auditwait.c) */
	char *config_path;              /* for reloads */
	struct proxy_listener listeners[PROXY_MAX_LISTENERS];
	size_t nlisteners;
	struct proxy_conn *conns;       /* every open connection, doubly linked */
	size_t nconns;
	size_t peak_conns;              /* most open connections since memory was last trimmed */
	struct proxy_pooled *pool;      /* parked kept-alive upstreams, newest first (pool.c) */
	struct proxy_pooled *pool_tail;
	size_t npool;
	uint64_t next_conn_id;          /* from 1 */
	struct event *sig[5];           /* TERM, INT, HUP, USR1, PIPE(ignored) */
	struct event *grace;            /* shutdown grace timer */
	int stopping;                   /* no longer accepting */
	int exit_code;
	int fd_reserved;                /* libevent has its records for descriptors below this */
	struct dns_addr *own_addrs;     /* this host's interface addresses, when a listener is a
	                                   wildcard (they all reach it); read at start and reload */
	size_t nown_addrs;
	struct dns_listener *dns;       /* listen.dns (dnsfront.c), or NULL */
	struct dns_map *dnsmap;         /* mapped answers, shared with the transparent listener */
};

/* Where a connection is in its life (each half's sockets are in struct proxy_half). */
enum proxy_conn_state {
	PROXY_CS_HEAD = 0,   /* reading a request head from the client */
	PROXY_CS_RESOLVING,  /* waiting for the resolver */
	PROXY_CS_CONNECTING, /* upstream connect in progress */
	PROXY_CS_FORWARD,    /* a plain HTTP request in flight: body up, response down */
	PROXY_CS_PEEK,       /* CONNECT answered: checking the client's first bytes (peek.c) */
	PROXY_CS_TUNNEL,     /* CONNECT established: relaying bytes both ways */
	PROXY_CS_CLOSING,    /* writing a last answer to the client, then close */
};

/* A captured message head: the request or status line parts and the header fields, kept in one
 * arena capped at maxHeaderBytes. */
struct proxy_hfield {
	uint32_t name, name_len;   /* offsets into the arena */
	uint32_t value, value_len;
};

struct proxy_head {
	char *arena;                 /* NULL until first use */
	uint32_t len, cap;           /* used and allocated bytes; cap grows up to limit */
	uint32_t limit;              /* maxHeaderBytes */
	uint32_t url, url_len;       /* request URI, or status reason for responses */
	struct proxy_hfield *fields; /* the header fields in order */
	uint32_t nfields, fcap, fmax;
	int in_value;                /* the last callback was a value */
	uint64_t bytes;              /* bytes of the head seen so far (whole lines) */
	int complete;                /* on_headers_complete seen */
	int msg_complete;            /* on_message_complete seen */
	int overflow;                /* a limit was crossed (431) */
	int bad;                     /* a forbidden byte or form was seen; why in bad_why */
	const char *bad_why;
	int scan;                    /* raw-byte scanner state (requests only; 0 = off) */
	char start[8];               /* the first bytes of a request line, for methods http-parser
	                                does not know */
	uint32_t nstart;
	uint32_t rl_spaces;          /* spaces seen in the request line */
	int rl_prev_space;           /* the last request-line byte was a space */
};

struct proxy_half {
	struct bufferevent *bev;     /* NULL when this half has no socket */
	int eof;                     /* its peer finished sending */
	int shut;                    /* we shut down our write side */
};

struct proxy_splice;
struct proxy_body;

/* A connection held until its decision record is durable (audit.fsync; auditwait.c). */
struct proxy_audit_hold {
	uint64_t seq;                      /* the decision record's seq; 0 = not held */
	void (*next)(struct proxy_conn *); /* what runs once it is durable */
	struct proxy_conn *prev, *nextc;   /* in the server's list of held connections */
	uint64_t deadline_ms;              /* denied (503 audit-unavailable) if not durable by then */
};

struct proxy_conn {
	struct proxy_server *srv;
	struct proxy_gen *gen;          /* the generation this connection decides under */
	struct proxy_session *session;  /* NULL: no session matched */
	int session_counted;            /* counted in session->active */
	struct proxy_conn *prev, *next; /* in srv->conns */
	uint64_t id;                    /* audit "conn" */
	enum proxy_conn_state state;
	struct proxy_half client;
	struct proxy_half up;
	struct proxy_splice *relay;     /* the splice relay of an established tunnel, or NULL */
	struct proxy_body *body;        /* a response body being spliced (splice.c), or NULL */
	char client_text[PROXY_ADDR_TEXT];
	struct dns_addr peer;           /* the client's address, for sessions' clients lists */

	http_parser req_parser;         /* client to us */
	http_parser resp_parser;        /* upstream to us */
	struct proxy_head req;
	struct proxy_head resp;
	int req_chunked;                /* the request body is re-framed as chunks */
	int resp_chunked;               /* the response body is re-framed as chunks */
	int resp_eof_framed;            /* the response ends when upstream closes */
	int resp_sent;                  /* the response head went to the client */
	int tunnel_ok_sent;             /* the 200 to a CONNECT went to the client */
	int req_keepalive;              /* client wants the connection kept */
	int resp_keepalive;             /* upstream allows reuse */
	int req_head_method;            /* HEAD request: response has no body */
	int is_connect;
	char method[24];
	char *path;                     /* origin-form path of the current request (owned) */
	char *rule;                     /* the allow rule of the current request (owned) */

	struct allow_dest dest;         /* the canonical destination of the current request */
	unsigned action;                /* leaf tags of the current request */
	char *up_key;                   /* "host:port" the upstream socket is connected to (owned) */
	int up_idle;                    /* upstream socket connected and between requests */
	struct dns_addr *addrs;         /* addresses that passed the policy (owned, while dialling) */
	size_t naddrs, addr_next;
	char addr_text[PROXY_ADDR_TEXT];/* the address being dialled */
	struct dns_query *dnsq;

	struct event *timer;            /* header deadline, connect deadline or idle check */
	uint64_t deadline_ms;           /* when the timer's phase ends */
	uint64_t last_active_ms;        /* for the idle timeout */
	uint64_t start_ms;
	uint64_t bytes_out;             /* client to upstream (bodies and tunnel bytes) */
	uint64_t bytes_in;              /* upstream to client */
	const char *end;                /* why it ended, for the close record */
	int requests;                   /* requests decided on this connection */
	struct proxy_audit_hold hold;   /* waiting for audit.fsync (auditwait.c) */
};

void proxy_bev_tune(struct bufferevent *bev);
void proxy_flush(struct bufferevent *bev);

/* time */
uint64_t proxy_now_ms(void);

/* server.c */
void proxy_gen_release(struct proxy_gen *gen);
int proxy_serve(const char *config_path);
/* 1 when a is one of this host's interface addresses (srv->own_addrs). */
int proxy_is_own_addr(const struct proxy_server *srv, const struct dns_addr *a);
/* A connection was freed: finishes a stop when it was the last. */
void proxy_server_conn_gone(struct proxy_server *srv);
/* A connection took descriptor fd: makes sure libevent's per-descriptor records up to it exist,
 * made in blocks (see server.c). */
void proxy_fd_reserve(struct proxy_server *srv, int fd);

/* dnsfront.c: the DNS listener's glue.  proxy_dnsfront_open opens listen.dns (printing
 * "egressd: listening on ADDR (dns, UDP and TCP)" for each): 0, or -1 after printing why.
 * proxy_dnsfront_stop stops answering; proxy_dnsfront_free frees the listener and the map. */
int proxy_dnsfront_open(struct proxy_server *srv);
void proxy_dnsfront_stop(struct proxy_server *srv);
void proxy_dnsfront_free(struct proxy_server *srv);

/* conn.c */
void proxy_conn_accept(struct proxy_server *srv, int fd, const struct sockaddr *sa, socklen_t len,
	const struct proxy_listener *l);
void proxy_conn_close(struct proxy_conn *c, const char *end);
void proxy_conn_set_state(struct proxy_conn *c, enum proxy_conn_state st);
void proxy_conn_arm_timer(struct proxy_conn *c, uint64_t ms);
void proxy_conn_start_upstream(struct proxy_conn *c);
void proxy_conn_touch(struct proxy_conn *c);
void proxy_conn_finish(struct proxy_conn *c, const char *end);

/* The session of a client without credentials: the first whose clients list holds peer, else
 * the session named default; NULL when neither exists. */
struct proxy_session *proxy_session_by_client(struct proxy_gen *gen, const struct dns_addr *peer);

/* Picks the session of the request in c->req (docs/design.md 4.4) and applies its limits.  Returns 0;
 * or -1 after answering with a denial. */
int proxy_session_pick(struct proxy_conn *c);

/* The upstream socket connected: start forwarding (http.c) or relaying (relay.c). */
void proxy_conn_upstream_connected(struct proxy_conn *c);
/* Makes a parked upstream (pool.c) the connection's upstream for key. */
void proxy_conn_adopt_upstream(struct proxy_conn *c, struct bufferevent *bev, const char *key);
void proxy_format_addr(const struct dns_addr *a, uint16_t port, char *buf, size_t cap);

/* decide.c: the policy pipeline for the destination in c->dest and the action in c->action:
 * session, bound, resolve, address policy, loop check; then connect or deny. */
void proxy_decide(struct proxy_conn *c);

/* http.c.  proxy_http_head_parse runs the request parser over `in` while a head is incomplete:
 * 0 = needs more bytes; 1 = a complete head that passed every framing check (the parser is paused
 * before any body byte); or an HTTP status (400, 405, 414, 431) with a reason code and a sentence
 * in why.  proxy_http_head_target then reads the destination and path out of a complete head:
 * 0, or a status as above.  Neither touches a socket, so tests and fuzzers drive them directly on
 * a bare struct proxy_conn set up by proxy_http_init_parser. */
void proxy_http_init_parser(struct proxy_conn *c, uint32_t max_header_bytes, uint32_t max_headers);
int proxy_http_head_parse(struct proxy_conn *c, struct evbuffer *in, const char **reason, char *why,
	size_t whylen);
int proxy_http_head_target(struct proxy_conn *c, const char **reason, char *why, size_t whylen);
/* 1 when the complete request head in c announces a body (chunked, or a Content-Length above
 * 0); read before any body byte, while the parser is paused at the end of the head. */
int proxy_http_request_has_body(const struct proxy_conn *c);

void proxy_http_init_conn(struct proxy_conn *c);
void proxy_http_client_read(struct proxy_conn *c);
void proxy_http_upstream_ready(struct proxy_conn *c);
void proxy_http_upstream_read(struct proxy_conn *c);
void proxy_http_upstream_eof(struct proxy_conn *c);
void proxy_http_upstream_drained(struct proxy_conn *c);
/* The spliced response body is complete (eof: it ended with the upstream's close). */
void proxy_http_body_done(struct proxy_conn *c, int eof);
void proxy_head_free(struct proxy_head *h);
const char *proxy_head_get(const struct proxy_head *h, const char *name, size_t *len);

/* peek.c */
void proxy_peek_start(struct proxy_conn *c);
void proxy_peek_read(struct proxy_conn *c);
void proxy_peek_upstream(struct proxy_conn *c);
void proxy_peek_timeout(struct proxy_conn *c);

/* splice.c: moves an established tunnel onto splice(2); -1 when it cannot (the bufferevent
 * relay carries on). */
int proxy_splice_start(struct proxy_conn *c);
void proxy_splice_free(struct proxy_conn *c);
/* Splices the rest of the current response body, left bytes (UINT64_MAX: until the upstream
 * closes), upstream to client; 0 when started, -1 when the bufferevents carry on.  Ends in
 * proxy_http_body_done, or in a close. */
#define PROXY_BODY_SPLICE_MIN (64 * 1024)
int proxy_body_splice_start(struct proxy_conn *c, uint64_t left);
void proxy_body_splice_free(struct proxy_conn *c);

/* pool.c: parks c's idle upstream for other connections (when it has one); takes a parked
 * upstream for key under c's generation, copying the address it dials into addr_text. */
void proxy_pool_put(struct proxy_conn *c);
struct bufferevent *proxy_pool_take(struct proxy_conn *c, const char *key, char *addr_text,
	size_t addrcap);
void proxy_pool_clear(struct proxy_server *srv);

/* relay.c */
void proxy_relay_start(struct proxy_conn *c);
/* Moves what `from` has read to the other side; -1 when that closed the connection. */
int proxy_relay_read(struct proxy_conn *c, struct proxy_half *from);
void proxy_relay_drained(struct proxy_conn *c, struct proxy_half *to);
void proxy_relay_event(struct proxy_conn *c, struct proxy_half *h, short what);

/* deny.c: answers the client with a denial and closes after it is written.  reason is a docs/design.md
 * section 6 code; rule the rule text; detail the body's explanation (what would allow it). */
void proxy_deny(struct proxy_conn *c, int status, const char *reason, const char *rule,
	const char *detail);
/* Writes the request/connect decision record (kind: AUDIT_DECISION for an allow, AUDIT_DENIAL for
 * a deny) and returns its seq, 0 when it is not on record.  status: -1 unless that answer was
 * sent. */
uint64_t proxy_audit_decision(struct proxy_conn *c, const char *decision, const char *reason,
	const char *rule, int status, enum audit_kind kind);

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

#endif
