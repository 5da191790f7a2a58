/* HTTP/1 message heads: capture through http-parser with a raw-byte scan on top, caps, the
 * framing checks of a request, and its target.  Used by every path that reads HTTP: the forward
 * proxy, plain HTTP inside a tunnel, and (later) an inspected tunnel.
 *
 * No socket, no libevent loop: a struct proxy_h1 is fed from an evbuffer, so tests and fuzzers
 * drive it directly. */
#ifndef EGRESSD_PROXY_H1_H
#define EGRESSD_PROXY_H1_H

#include <stddef.h>
#include <stdint.h>

#include <http_parser.h>

#include "allowlist/host.h"

struct evbuffer;

/* One header field: offsets into the head's arena. */
struct proxy_hfield {
	uint32_t name, name_len;
	uint32_t value, value_len;
};

/* A captured head: the request target (or status reason) and the fields, in one arena capped at
 * maxHeaderBytes. */
struct proxy_head {
	char *arena;                 /* NULL until first use */
	uint32_t len, cap;           /* used and allocated bytes; cap grows up to limit */
	uint32_t limit;              /* maxHeaderBytes */
	uint32_t url, url_len;       /* request target, or status reason for responses */
	struct proxy_hfield *fields; /* the header fields in order */
	uint32_t nfields, fcap, fmax;
	int in_value;                /* the last callback was a value */
	uint64_t bytes;              /* bytes of the head seen so far */
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

struct proxy_h1;
/* Receives body bytes (already de-framed); returns 0, or -1 to stop with an error. */
typedef int (*proxy_h1_body_fn)(struct proxy_h1 *m, const char *at, size_t len);
/* The message is complete; returns 0 or -1. */
typedef int (*proxy_h1_done_fn)(struct proxy_h1 *m);

/* One direction's parser: http-parser, the captured head, and where bodies go. */
struct proxy_h1 {
	http_parser p;
	struct proxy_head h;
	proxy_h1_body_fn on_body;  /* NULL: bodies are dropped */
	proxy_h1_done_fn on_done;  /* NULL: nothing to do */
	void *owner;               /* the caller's (the connection) */
	int no_body;               /* responses: the request was HEAD, so no body follows */
	enum http_parser_type type;
};

/* Sets m up for a message of type, with the caps; the parser pauses at the end of the head
 * (before any body byte) and at the end of the message. */
void proxy_h1_init(struct proxy_h1 *m, enum http_parser_type type, uint32_t max_header_bytes,
        uint32_t max_headers, void *owner);
/* Gets m ready for the next message on the same connection (the arena is kept). */
void proxy_h1_reset(struct proxy_h1 *m);
/* Frees what m holds (the arena); m can be reset and used again. */
void proxy_h1_free(struct proxy_h1 *m);

enum proxy_h1_feed {
	PROXY_H1_MORE,   /* consumed everything; wants more input */
	PROXY_H1_PAUSED, /* stopped at a head's or message's end; the rest stays in the buffer */
	PROXY_H1_ERROR,  /* malformed input */
};

/* Runs the parser over what `in` holds until it pauses, fails or runs out, draining what it
 * used. */
enum proxy_h1_feed proxy_h1_feed(struct proxy_h1 *m, struct evbuffer *in);
/* Tells the parser its input ended (a body framed by the close); 0, or -1 when that is an
 * error. */
int proxy_h1_eof(struct proxy_h1 *m);
/* Resumes a paused parser. */
void proxy_h1_resume(struct proxy_h1 *m);

/* A request head: feeds `in` while the head is incomplete.  0 = needs more bytes; 1 = a
 * complete head that passed every framing check (paused before any body byte); or an HTTP
 * status (400, 405, 414, 431) with a reason code and a sentence in why. */
int proxy_h1_request_head(struct proxy_h1 *m, struct evbuffer *in, const char **reason,
        char *why, size_t whylen);

/* The target of a complete request head. */
struct proxy_h1_target {
	int is_connect;                 /* CONNECT host:port */
	struct allow_dest dest;         /* canonical destination (absolute URI or CONNECT) */
	char *path;                     /* origin-form path and query (owned), NULL for CONNECT */
	char method[24];
	unsigned action;                /* the request's leaf tags (allowlist/action.h) */
};

/* Reads the target: absolute_form 1 for a forward proxy (http://host/path or CONNECT), 0 for
 * origin form inside a tunnel (the destination is then left empty).  0, or a status (400) with
 * a reason and why.  t->path must be freed by the caller (free()). */
int proxy_h1_request_target(struct proxy_h1 *m, int absolute_form, struct proxy_h1_target *t,
        const char **reason, char *why, size_t whylen);

/* 1 when the complete request head announces a body (chunked, or Content-Length above 0). */
int proxy_h1_has_body(const struct proxy_h1 *m);
/* The first field named name (any case), or NULL; *len its value's length. */
const char *proxy_h1_get(const struct proxy_h1 *m, const char *name, size_t *len);
/* 1 when field f's name is name (any case). */
int proxy_h1_name_is(const struct proxy_head *h, const struct proxy_hfield *f, const char *name);
/* 1 when the comma-separated value of field `name` holds token (any case). */
int proxy_h1_has_token(const struct proxy_h1 *m, const char *name, const char *token);
/* Hop-by-hop fields (RFC 9110 7.6.1) and those a Connection field names. */
int proxy_h1_hop_by_hop(const struct proxy_head *h, const struct proxy_hfield *f);

#endif
