/* HTTP/1.1 forwarding: request heads from the client, responses from the upstream.
 *
 * http-parser does all framing.  Each parser pauses when a head is complete (so egressd decides
 * before any body byte moves) and when a message is complete (so a pipelined next request waits
 * until this response is done).  Heads are rebuilt from what was parsed, never copied through;
 * bodies are re-framed: a chunked body leaves as chunks egressd wrote, a Content-Length body with
 * that length. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "allowlist/action.h"
#include "allowlist/tags.h"
#include "proxy/proxy.h"

#define HEAD_FIELDS_START 16

/* The raw-byte check of a request head, on top of http-parser (which is lenient about these):
 * every line ends in CRLF, no obsolete line folding, header names are tokens with the colon right
 * after them, values hold no control bytes.  States of proxy_head.scan: */
enum scan_state {
	SCAN_OFF = 0,     /* not scanning (responses) */
	SCAN_REQLINE,     /* in the request line */
	SCAN_LINE_START,  /* at the start of a header line, or of the blank line */
	SCAN_NAME,        /* in a field name */
	SCAN_VALUE,       /* in a field value */
	SCAN_CR,          /* after a CR: only LF may follow */
	SCAN_END_CR,      /* after the CR of the blank line */
	SCAN_DONE,        /* the head ended */
};

static struct proxy_conn *conn_of(http_parser *p)
{
	return p->data;
}

static void head_reset(struct proxy_head *h)
{
	h->len = 0;
	h->url = 0;
	h->url_len = 0;
	h->nfields = 0;
	h->in_value = 0;
	h->bytes = 0;
	h->complete = 0;
	h->msg_complete = 0;
	h->overflow = 0;
	h->bad = 0;
	h->bad_why = NULL;
}

void proxy_head_free(struct proxy_head *h)
{
	free(h->arena);
	h->arena = NULL;
	free(h->fields);
	h->fields = NULL;
	h->cap = 0;
	h->fcap = 0;
	head_reset(h);
}

/* Appends to the arena, growing it up to the head limit; -1 (overflow) beyond it. */
static int head_append(struct proxy_head *h, const char *at, size_t len)
{
	if ((uint64_t)h->len + len > h->limit) {
		h->overflow = 1;
		return -1;
	}
	if (h->len + len > h->cap) {
		uint64_t ncap = h->cap ? h->cap : 512;
		while (ncap < h->len + len)
			ncap *= 2;
		if (ncap > h->limit)
			ncap = h->limit;
		char *n = realloc(h->arena, ncap);
		if (n == NULL) {
			h->overflow = 1;
			return -1;
		}
		h->arena = n;
		h->cap = (uint32_t)ncap;
	}
	memcpy(h->arena + h->len, at, len);
	h->len += (uint32_t)len;
	return 0;
}

static int head_on_begin(struct proxy_head *h)
{
	head_reset(h);
	return 0;
}

static int head_on_url(struct proxy_head *h, const char *at, size_t len)
{
	if (h->url_len == 0)
		h->url = h->len;
	if (head_append(h, at, len) == -1)
		return -1;
	h->url_len += (uint32_t)len;
	return 0;
}

static int head_on_field(struct proxy_head *h, const char *at, size_t len)
{
	if (h->complete)
		return 0; /* trailers: not forwarded */
	if (h->nfields == 0 || h->in_value) {
		if (h->nfields == h->fmax) {
			h->overflow = 1;
			return -1;
		}
		if (h->nfields == h->fcap) {
			uint32_t ncap = h->fcap ? h->fcap * 2 : HEAD_FIELDS_START;
			if (ncap > h->fmax)
				ncap = h->fmax;
			struct proxy_hfield *n = realloc(h->fields, ncap * sizeof *n);
			if (n == NULL) {
				h->overflow = 1;
				return -1;
			}
			h->fields = n;
			h->fcap = ncap;
		}
		struct proxy_hfield *f = &h->fields[h->nfields++];
		f->name = h->len;
		f->name_len = 0;
		f->value = h->len;
		f->value_len = 0;
		h->in_value = 0;
	}
	if (head_append(h, at, len) == -1)
		return -1;
	h->fields[h->nfields - 1].name_len += (uint32_t)len;
	return 0;
}

static int head_on_value(struct proxy_head *h, const char *at, size_t len)
{
	if (h->complete)
		return 0;
	if (h->nfields == 0)
		return -1;
	struct proxy_hfield *f = &h->fields[h->nfields - 1];
	if (!h->in_value) {
		f->value = h->len;
		f->value_len = 0;
		h->in_value = 1;
	}
	if (head_append(h, at, len) == -1)
		return -1;
	f->value_len += (uint32_t)len;
	return 0;
}

static int name_is(const struct proxy_head *h, const struct proxy_hfield *f, const char *name)
{
	size_t n = strlen(name);
	return f->name_len == n && strncasecmp(h->arena + f->name, name, n) == 0;
}

const char *proxy_head_get(const struct proxy_head *h, const char *name, size_t *len)
{
	for (uint32_t i = 0; i < h->nfields; i++) {
		if (name_is(h, &h->fields[i], name)) {
			*len = h->fields[i].value_len;
			return h->arena + h->fields[i].value;
		}
	}
	return NULL;
}

/* ---- request parser callbacks ---- */

static int req_begin(http_parser *p)
{
	return head_on_begin(&conn_of(p)->req);
}

/* Gets the request head ready for the next message. */
static void req_reset(struct proxy_conn *c)
{
	http_parser_init(&c->req_parser, HTTP_REQUEST);
	c->req_parser.data = c;
	head_reset(&c->req);
	c->req.scan = SCAN_REQLINE;
	c->req.nstart = 0;
	c->req.rl_spaces = 0;
	c->req.rl_prev_space = 0;
}

static int req_url(http_parser *p, const char *at, size_t len)
{
	return head_on_url(&conn_of(p)->req, at, len);
}

static int req_field(http_parser *p, const char *at, size_t len)
{
	return head_on_field(&conn_of(p)->req, at, len);
}

static int req_value(http_parser *p, const char *at, size_t len)
{
	return head_on_value(&conn_of(p)->req, at, len);
}

static int req_headers_complete(http_parser *p)
{
	conn_of(p)->req.complete = 1;
	http_parser_pause(p, 1);
	return 0;
}

static void add_chunk(struct evbuffer *out, const char *at, size_t len)
{
	char size[24];
	int n = snprintf(size, sizeof size, "%zx\r\n", len);
	evbuffer_add(out, size, (size_t)n);
	evbuffer_add(out, at, len);
	evbuffer_add(out, "\r\n", 2);
}

static int req_body(http_parser *p, const char *at, size_t len)
{
	struct proxy_conn *c = conn_of(p);
	if (c->up.bev == NULL)
		return -1;
	if (!proxy_conn_bytes_ok(c, len, 0)) {
		c->end = "limit-bytes";
		return -1;
	}
	struct evbuffer *out = bufferevent_get_output(c->up.bev);
	if (c->req_chunked)
		add_chunk(out, at, len);
	else
		evbuffer_add(out, at, len);
	proxy_count(c, len, 0);
	return 0;
}

static int req_message_complete(http_parser *p)
{
	struct proxy_conn *c = conn_of(p);
	c->req.msg_complete = 1;
	if (c->req_chunked && c->up.bev != NULL)
		evbuffer_add(bufferevent_get_output(c->up.bev), "0\r\n\r\n", 5);
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings req_settings = {
	.on_message_begin = req_begin,
	.on_url = req_url,
	.on_header_field = req_field,
	.on_header_value = req_value,
	.on_headers_complete = req_headers_complete,
	.on_body = req_body,
	.on_message_complete = req_message_complete,
};

/* ---- response parser callbacks ---- */

static int resp_begin(http_parser *p)
{
	return head_on_begin(&conn_of(p)->resp);
}

static int resp_status(http_parser *p, const char *at, size_t len)
{
	return head_on_url(&conn_of(p)->resp, at, len);
}

static int resp_field(http_parser *p, const char *at, size_t len)
{
	return head_on_field(&conn_of(p)->resp, at, len);
}

static int resp_value(http_parser *p, const char *at, size_t len)
{
	return head_on_value(&conn_of(p)->resp, at, len);
}

static int resp_headers_complete(http_parser *p)
{
	struct proxy_conn *c = conn_of(p);
	c->resp.complete = 1;
	http_parser_pause(p, 1);
	unsigned st = p->status_code;
	/* These answers have no body whatever their headers say. */
	if (c->req_head_method || (st >= 100 && st < 200) || st == 204 || st == 304)
		return 1;
	return 0;
}

static int resp_body(http_parser *p, const char *at, size_t len)
{
	struct proxy_conn *c = conn_of(p);
	if (!proxy_conn_bytes_ok(c, 0, len)) {
		c->end = "limit-bytes";
		return -1;
	}
	struct evbuffer *out = bufferevent_get_output(c->client.bev);
	if (c->resp_chunked)
		add_chunk(out, at, len);
	else
		evbuffer_add(out, at, len);
	proxy_count(c, 0, len);
	return 0;
}

static int resp_message_complete(http_parser *p)
{
	conn_of(p)->resp.msg_complete = 1;
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings resp_settings = {
	.on_message_begin = resp_begin,
	.on_status = resp_status,
	.on_header_field = resp_field,
	.on_header_value = resp_value,
	.on_headers_complete = resp_headers_complete,
	.on_body = resp_body,
	.on_message_complete = resp_message_complete,
};

static int is_tchar(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch != 0 && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

/* Scans data; returns 0, or -1 with h->bad_why set. */
static int scan_head(struct proxy_head *h, const unsigned char *d, size_t n)
{
	for (size_t i = 0; i < n && h->scan != SCAN_DONE; i++) {
		unsigned char ch = d[i];
		switch ((enum scan_state)h->scan) {
		case SCAN_REQLINE:
			if (h->nstart < sizeof h->start - 1)
				h->start[h->nstart++] = (char)ch;
			if (ch == ' ') {
				/* Exactly "METHOD SP TARGET SP VERSION": no parser leniency to exploit. */
				if (h->rl_prev_space || ++h->rl_spaces > 2 || h->nstart == 1)
					h->bad_why = "the request line is not METHOD SP TARGET SP VERSION";
				h->rl_prev_space = 1;
				break;
			}
			h->rl_prev_space = 0;
			if (ch == '\r')
				h->scan = SCAN_CR;
			else if (ch == '\n')
				h->bad_why = "a line ends in a bare LF (CRLF required)";
			else if (ch < 0x20 || ch == 0x7f)
				/* http-parser lets a TAB or FF into a URL; an upstream may split on it. */
				h->bad_why = "a control character in the request line";
			break;
		case SCAN_LINE_START:
			if (ch == '\r')
				h->scan = SCAN_END_CR;
			else if (ch == ' ' || ch == '\t')
				h->bad_why = "obsolete line folding (a header line starts with white space)";
			else if (ch == '\n')
				h->bad_why = "a line ends in a bare LF (CRLF required)";
			else if (is_tchar(ch))
				h->scan = SCAN_NAME;
			else
				h->bad_why = "a header name holds a character that is not allowed";
			break;
		case SCAN_NAME:
			if (ch == ':')
				h->scan = SCAN_VALUE;
			else if (ch == ' ' || ch == '\t')
				h->bad_why = "white space between a header name and its colon";
			else if (!is_tchar(ch))
				h->bad_why = "a header name holds a character that is not allowed";
			break;
		case SCAN_VALUE:
			if (ch == '\r')
				h->scan = SCAN_CR;
			else if (ch == '\n')
				h->bad_why = "a line ends in a bare LF (CRLF required)";
			else if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
				h->bad_why = "a header value holds a control character";
			break;
		case SCAN_CR:
			if (ch != '\n')
				h->bad_why = "a bare CR inside the head";
			else
				h->scan = SCAN_LINE_START;
			break;
		case SCAN_END_CR:
			if (ch != '\n')
				h->bad_why = "a bare CR inside the head";
			else
				h->scan = SCAN_DONE;
			break;
		default:
			break;
		}
		if (h->bad_why != NULL) {
			h->bad = 1;
			return -1;
		}
	}
	return 0;
}

enum feed_result {
	FEED_MORE,   /* consumed everything; wants more input */
	FEED_PAUSED, /* stopped at a head or message end; the rest stays in the buffer */
	FEED_ERROR,  /* malformed input */
};

/* Runs a parser over the buffered input until it pauses, fails or runs out. */
static enum feed_result feed(http_parser *p, const http_parser_settings *s, struct proxy_head *h,
	struct evbuffer *in)
{
	while (evbuffer_get_length(in) > 0) {
		struct evbuffer_iovec v;
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		int in_head = !h->complete;
		if (in_head && h->scan != SCAN_OFF && scan_head(h, v.iov_base, v.iov_len) == -1)
			return FEED_ERROR;
		size_t used = http_parser_execute(p, s, v.iov_base, v.iov_len);
		if (in_head) {
			h->bytes += used;
			if (h->bytes > h->limit)
				h->overflow = 1;
		}
		evbuffer_drain(in, used);
		enum http_errno e = HTTP_PARSER_ERRNO(p);
		if (e == HPE_PAUSED)
			return FEED_PAUSED;
		if (e != HPE_OK || h->overflow)
			return FEED_ERROR;
		if (used < v.iov_len)
			return FEED_ERROR;
	}
	return FEED_MORE;
}

void proxy_http_init_parser(struct proxy_conn *c, uint32_t max_header_bytes, uint32_t max_headers)
{
	c->req.limit = max_header_bytes;
	c->req.fmax = max_headers;
	c->resp.limit = max_header_bytes;
	c->resp.fmax = max_headers;
	req_reset(c);
}

void proxy_http_init_conn(struct proxy_conn *c)
{
	const struct allow_global_limits *lim = &c->gen->cfg->limits;
	proxy_http_init_parser(c,
		(uint32_t)(lim->max_header_bytes > UINT32_MAX / 2 ? UINT32_MAX / 2 : lim->max_header_bytes),
		(uint32_t)(lim->max_headers > 100000 ? 100000 : lim->max_headers));
	bufferevent_setwatermark(c->client.bev, EV_WRITE, PROXY_LOW_WATER, 0);
}

/* Hop-by-hop headers (RFC 9110 7.6.1) and those a Connection header names are not forwarded. */
static int is_hop_by_hop(const struct proxy_head *h, const struct proxy_hfield *f)
{
	static const char *const hop[] = {"connection", "proxy-connection", "proxy-authorization",
		"keep-alive", "te", "trailer", "upgrade", "transfer-encoding", "content-length",
		"proxy-authenticate"};
	for (size_t i = 0; i < sizeof hop / sizeof hop[0]; i++)
		if (name_is(h, f, hop[i]))
			return 1;
	for (uint32_t i = 0; i < h->nfields; i++) {
		const struct proxy_hfield *cf = &h->fields[i];
		if (!name_is(h, cf, "connection"))
			continue;
		const char *v = h->arena + cf->value, *end = v + cf->value_len;
		while (v < end) {
			while (v < end && (*v == ',' || *v == ' ' || *v == '\t'))
				v++;
			const char *tok = v;
			while (v < end && *v != ',' && *v != ' ' && *v != '\t')
				v++;
			size_t n = (size_t)(v - tok);
			if (n > 0 && n == f->name_len && strncasecmp(tok, h->arena + f->name, n) == 0)
				return 1;
		}
	}
	return 0;
}

static void add_headers(struct evbuffer *out, const struct proxy_head *h, int skip_host)
{
	for (uint32_t i = 0; i < h->nfields; i++) {
		const struct proxy_hfield *f = &h->fields[i];
		if (is_hop_by_hop(h, f) || (skip_host && name_is(h, f, "host")))
			continue;
		evbuffer_add(out, h->arena + f->name, f->name_len);
		evbuffer_add(out, ": ", 2);
		evbuffer_add(out, h->arena + f->value, f->value_len);
		evbuffer_add(out, "\r\n", 2);
	}
}

/* Framing checks on a complete request head, beyond what http-parser enforces (it already
 * refuses Content-Length with Transfer-Encoding, disagreeing or non-numeric Content-Lengths, and a
 * request Transfer-Encoding whose last coding is not chunked). */
static int check_framing(struct proxy_conn *c, const char **reason, char *why, size_t whylen)
{
	const http_parser *p = &c->req_parser;
	const struct proxy_head *h = &c->req;
	int te = 0;
	for (uint32_t i = 0; i < h->nfields; i++) {
		const struct proxy_hfield *f = &h->fields[i];
		if (!name_is(h, f, "transfer-encoding"))
			continue;
		te++;
		const char *v = h->arena + f->value;
		size_t n = f->value_len;
		while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
			n--;
		while (n > 0 && (*v == ' ' || *v == '\t')) {
			v++;
			n--;
		}
		if (n != 7 || strncasecmp(v, "chunked", 7) != 0) {
			*reason = "bad-request";
			snprintf(why, whylen, "Transfer-Encoding other than a single \"chunked\" is refused");
			return 400;
		}
	}
	int hosts = 0;
	for (uint32_t i = 0; i < h->nfields; i++)
		hosts += name_is(h, &h->fields[i], "host");
	if (hosts > 1) {
		*reason = "bad-request";
		snprintf(why, whylen, "more than one Host header");
		return 400;
	}
	if (te > 1) {
		*reason = "bad-request";
		snprintf(why, whylen, "more than one Transfer-Encoding header");
		return 400;
	}
	if (te && p->http_major == 1 && p->http_minor == 0) {
		*reason = "bad-request";
		snprintf(why, whylen, "Transfer-Encoding in an HTTP/1.0 request");
		return 400;
	}
	if (p->http_major != 1 || p->http_minor > 1) {
		*reason = "bad-request";
		snprintf(why, whylen, "only HTTP/1.0 and HTTP/1.1 requests are forwarded");
		return 400;
	}
	if (p->method == HTTP_TRACE) {
		*reason = "method-not-allowed";
		snprintf(why, whylen, "TRACE is not forwarded");
		return 405;
	}
	return 0;
}

int proxy_http_head_parse(struct proxy_conn *c, struct evbuffer *in, const char **reason, char *why,
	size_t whylen)
{
	enum feed_result r = feed(&c->req_parser, &req_settings, &c->req, in);
	if (r == FEED_ERROR) {
		enum http_errno e = HTTP_PARSER_ERRNO(&c->req_parser);
		if (e == HPE_INVALID_METHOD && c->req.nstart >= 5 && memcmp(c->req.start, "TRACK", 5) == 0) {
			/* http-parser does not know TRACK; it gets the answer TRACE gets. */
			*reason = "method-not-allowed";
			snprintf(why, whylen, "TRACK is not forwarded");
			return 405;
		}
		if (c->req.bad) {
			*reason = "bad-request";
			snprintf(why, whylen, "Malformed request head: %s", c->req.bad_why);
			return 400;
		}
		if (c->req.overflow || e == HPE_HEADER_OVERFLOW) {
			if (c->req.nfields == 0) {
				*reason = "uri-too-long";
				snprintf(why, whylen,
					"The request line is longer than limits.maxHeaderBytes");
				return 414;
			}
			*reason = "headers-too-large";
			snprintf(why, whylen,
				"The request head is larger than limits.maxHeaderBytes or has more "
				"than limits.maxHeaders fields");
			return 431;
		}
		*reason = "bad-request";
		snprintf(why, whylen, "Malformed request: %s", http_errno_description(e));
		return 400;
	}
	if (r == FEED_PAUSED && c->req.complete)
		return check_framing(c, reason, why, whylen) ?: 1;
	return 0;
}

int proxy_http_request_has_body(const struct proxy_conn *c)
{
	const http_parser *p = &c->req_parser;
	return (p->flags & F_CHUNKED) || ((p->flags & F_CONTENTLENGTH) && p->content_length > 0 &&
						 p->content_length != ULLONG_MAX);
}

int proxy_http_head_target(struct proxy_conn *c, const char **reason, char *why, size_t whylen)
{
	http_parser *p = &c->req_parser;
	struct proxy_head *h = &c->req;
	const char *url = h->arena + h->url;
	size_t ulen = h->url_len;
	snprintf(c->method, sizeof c->method, "%s", http_method_str((enum http_method)p->method));
	c->is_connect = p->method == HTTP_CONNECT;
	c->req_head_method = p->method == HTTP_HEAD;
	c->req_keepalive = http_should_keep_alive(p);
	c->req_chunked = (p->flags & F_CHUNKED) != 0;
	c->action = 0;
	free(c->rule);
	c->rule = NULL;
	memset(&c->dest, 0, sizeof c->dest);
	free(c->path);
	c->path = NULL;
	*reason = "bad-request";

	enum allow_canon_err err;
	if (c->is_connect) {
		err = allow_canon_authority(url, ulen, 0, &c->dest);
		if (err != ALLOW_CANON_OK) {
			snprintf(why, whylen, "The CONNECT target is not host:port (%s)",
				allow_canon_strerror(err));
			memset(&c->dest, 0, sizeof c->dest);
			return 400;
		}
		return 0;
	}
	static const char http_scheme[] = "http://";
	if (ulen < sizeof http_scheme - 1 || strncasecmp(url, http_scheme, sizeof http_scheme - 1) != 0) {
		if (ulen >= 8 && strncasecmp(url, "https://", 8) == 0)
			snprintf(why, whylen,
				"Https URLs go through CONNECT (set HTTPS_PROXY, not a plain request)");
		else
			snprintf(why, whylen,
				"This is a forward proxy: send the absolute URI (http://host/path) or use "
				"CONNECT");
		return 400;
	}
	const char *auth = url + sizeof http_scheme - 1, *uend = url + ulen;
	const char *aend = auth;
	while (aend < uend && *aend != '/' && *aend != '?' && *aend != '#')
		aend++;
	err = allow_canon_authority(auth, (size_t)(aend - auth), 80, &c->dest);
	if (err != ALLOW_CANON_OK) {
		snprintf(why, whylen, "The request URI's host is not valid (%s)",
			allow_canon_strerror(err));
		memset(&c->dest, 0, sizeof c->dest);
		return 400;
	}
	const char *frag = memchr(aend, '#', (size_t)(uend - aend));
	size_t plen = (size_t)((frag ? frag : uend) - aend);
	c->path = malloc(plen + 2);
	if (c->path == NULL) {
		snprintf(why, whylen, "out of memory");
		return 400;
	}
	size_t off = 0;
	if (plen == 0 || aend[0] == '?')
		c->path[off++] = '/';
	memcpy(c->path + off, aend, plen);
	c->path[off + plen] = '\0';
	c->action = allow_http_action(c->method, c->path, strlen(c->path), proxy_http_request_has_body(c));
	return 0;
}

/* A complete request head is in c->req: read its target and start the decision. */
static void request_head_done(struct proxy_conn *c)
{
	evtimer_del(c->timer);
	const char *reason;
	char why[300];
	int st = proxy_http_head_target(c, &reason, why, sizeof why);
	if (st != 0) {
		proxy_deny(c, st, reason, NULL, why);
		return;
	}
	if (c->is_connect) {
		/* The head's final LF is still buffered (the parser paused before it). */
		evbuffer_drain(bufferevent_get_input(c->client.bev), 1);
	}
	proxy_decide(c);
}

static void send_request_head(struct proxy_conn *c)
{
	size_t before = evbuffer_get_length(bufferevent_get_output(c->up.bev));
	struct evbuffer *out = bufferevent_get_output(c->up.bev);
	const http_parser *p = &c->req_parser;
	evbuffer_add_printf(out, "%s %s HTTP/1.1\r\nHost: ", c->method, c->path);
	if (c->dest.kind == ALLOW_HOST_IPV6)
		evbuffer_add_printf(out, "[%s]", c->dest.host);
	else
		evbuffer_add(out, c->dest.host, strlen(c->dest.host));
	if (c->dest.port != 80)
		evbuffer_add_printf(out, ":%u", c->dest.port);
	evbuffer_add(out, "\r\n", 2);
	add_headers(out, &c->req, 1);
	if (c->req_chunked)
		evbuffer_add(out, "Transfer-Encoding: chunked\r\n", 28);
	else if (p->content_length != ULLONG_MAX && (p->flags & F_CONTENTLENGTH))
		evbuffer_add_printf(out, "Content-Length: %" PRIu64 "\r\n", (uint64_t)p->content_length);
	evbuffer_add(out, "\r\n", 2);
	/* Heads count against the byte limits too: a URI or a header carries data out. */
	proxy_count(c, evbuffer_get_length(out) - before, 0);
}

/* The upstream for the current request is connected (new or kept alive): send the head and
 * start moving the body. */
void proxy_http_upstream_ready(struct proxy_conn *c)
{
	proxy_conn_set_state(c, PROXY_CS_FORWARD);
	c->up_idle = 0;
	c->resp_chunked = 0;
	c->resp_eof_framed = 0;
	c->resp_sent = 0;
	http_parser_init(&c->resp_parser, HTTP_RESPONSE);
	c->resp_parser.data = c;
	head_reset(&c->resp);
	send_request_head(c);
	bufferevent_setwatermark(c->up.bev, EV_WRITE, PROXY_LOW_WATER, 0);
	bufferevent_enable(c->up.bev, EV_READ);
	proxy_conn_touch(c);
	proxy_conn_arm_timer(c, c->gen->cfg->limits.idle_timeout_ms);
	http_parser_pause(&c->req_parser, 0);
	bufferevent_enable(c->client.bev, EV_READ);
	proxy_http_client_read(c);
}

static void body_error(struct proxy_conn *c)
{
	/* The head was forwarded already; a broken body can only end both sides. */
	proxy_conn_close(c, c->end != NULL ? c->end : "error");
}

void proxy_http_client_read(struct proxy_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->client.bev);
	if (c->state == PROXY_CS_HEAD) {
		if (c->req.bytes == 0 && evbuffer_get_length(in) > 0 && c->requests > 0)
			proxy_conn_arm_timer(c, c->gen->cfg->limits.header_timeout_ms);
		const char *reason;
		char why[300];
		int st = proxy_http_head_parse(c, in, &reason, why, sizeof why);
		if (st == 1)
			request_head_done(c);
		else if (st != 0)
			proxy_deny(c, st, reason, NULL, why);
		else if (c->client.eof)
			proxy_conn_close(c, "client-closed"); /* a head its half-close cut short */
		return;
	}
	/* A pipelined next request waits in the buffer until this response is done. */
	if (c->state != PROXY_CS_FORWARD || c->req.msg_complete)
		return;
	enum feed_result r = feed(&c->req_parser, &req_settings, &c->req, in);
	if (r == FEED_ERROR) {
		body_error(c);
		return;
	}
	if (c->client.eof && !c->req.msg_complete) {
		/* The client half-closed before its body was complete. */
		proxy_conn_close(c, "client-closed");
		return;
	}
	if (c->up.bev == NULL)
		return;
	proxy_flush(c->up.bev);
	if (!c->req.msg_complete &&
		evbuffer_get_length(bufferevent_get_output(c->up.bev)) >= PROXY_HIGH_WATER)
		bufferevent_disable(c->client.bev, EV_READ);
}

void proxy_http_upstream_drained(struct proxy_conn *c)
{
	if (c->req.msg_complete || c->client.bev == NULL)
		return;
	bufferevent_enable(c->client.bev, EV_READ);
	proxy_http_client_read(c);
}

static void send_response_head(struct proxy_conn *c)
{
	size_t before = evbuffer_get_length(bufferevent_get_output(c->client.bev));
	const http_parser *p = &c->resp_parser;
	const struct proxy_head *h = &c->resp;
	struct evbuffer *out = bufferevent_get_output(c->client.bev);
	unsigned st = p->status_code;
	evbuffer_add_printf(out, "HTTP/1.1 %u ", st);
	evbuffer_add(out, h->arena + h->url, h->url_len);
	evbuffer_add(out, "\r\n", 2);
	add_headers(out, h, 0);
	if (st >= 100 && st < 200) {
		evbuffer_add(out, "\r\n", 2);
		proxy_count(c, 0, evbuffer_get_length(out) - before);
		return;
	}
	int no_body = c->req_head_method || st == 204 || st == 304;
	if (no_body) {
		size_t n;
		const char *cl = proxy_head_get(h, "content-length", &n);
		if (cl != NULL) {
			evbuffer_add(out, "Content-Length: ", 16);
			evbuffer_add(out, cl, n);
			evbuffer_add(out, "\r\n", 2);
		}
	} else if (p->flags & F_CHUNKED) {
		c->resp_chunked = 1;
		evbuffer_add(out, "Transfer-Encoding: chunked\r\n", 28);
	} else if ((p->flags & F_CONTENTLENGTH) && p->content_length != ULLONG_MAX) {
		evbuffer_add_printf(out, "Content-Length: %" PRIu64 "\r\n", (uint64_t)p->content_length);
	} else {
		c->resp_eof_framed = 1;
	}
	if (c->req_keepalive && !c->resp_eof_framed && !c->srv->stopping)
		evbuffer_add(out, "Connection: keep-alive\r\n\r\n", 26);
	else
		evbuffer_add(out, "Connection: close\r\n\r\n", 21);
	proxy_count(c, 0, evbuffer_get_length(out) - before);
}

static void response_done(struct proxy_conn *c)
{
	if (c->resp_chunked)
		evbuffer_add(bufferevent_get_output(c->client.bev), "0\r\n\r\n", 5);
	proxy_flush(c->client.bev);
	int reuse = !c->resp_eof_framed && http_should_keep_alive(&c->resp_parser) &&
		    c->req.msg_complete && !c->up.eof &&
		    evbuffer_get_length(bufferevent_get_input(c->up.bev)) == 0;
	if (reuse) {
		c->up_idle = 1;
	} else {
		bufferevent_free(c->up.bev);
		c->up.bev = NULL;
		c->up.eof = 0;
		free(c->up_key);
		c->up_key = NULL;
	}
	/* A client that half-closed is answered what it sent before its end, then closed. */
	struct evbuffer *in = bufferevent_get_input(c->client.bev);
	if (!c->req_keepalive || c->resp_eof_framed || c->srv->stopping || !c->req.msg_complete ||
		(c->client.eof && evbuffer_get_length(in) == 0)) {
		proxy_conn_finish(c, c->resp_eof_framed ? "upstream-closed" : "client-closed");
		return;
	}
	proxy_conn_set_state(c, PROXY_CS_HEAD);
	c->resp_sent = 0;
	req_reset(c);
	proxy_head_free(&c->resp);
	proxy_conn_arm_timer(c, c->gen->cfg->limits.idle_timeout_ms);
	if (!c->client.eof)
		bufferevent_enable(c->client.bev, EV_READ);
	if (evbuffer_get_length(in) > 0)
		proxy_http_client_read(c);
}

static void upstream_error(struct proxy_conn *c, const char *why)
{
	if (c->resp_sent || c->end != NULL) {
		proxy_conn_close(c, "error");
		return;
	}
	char rule[200];
	snprintf(rule, sizeof rule, "upstream %s: %s", c->addr_text, why);
	proxy_deny(c, 502, "upstream-error", rule,
		"The destination did not send a valid HTTP response");
}

void proxy_http_upstream_read(struct proxy_conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->up.bev);
	for (;;) {
		enum feed_result r = feed(&c->resp_parser, &resp_settings, &c->resp, in);
		if (r == FEED_ERROR) {
			upstream_error(c, http_errno_description(HTTP_PARSER_ERRNO(&c->resp_parser)));
			return;
		}
		if (r == FEED_MORE)
			break;
		if (c->resp.complete && !c->resp_sent) {
			unsigned st = c->resp_parser.status_code;
			if (st == 101) {
				upstream_error(c, "protocol upgrade refused");
				return;
			}
			send_response_head(c);
			c->resp_sent = 1;
			http_parser_pause(&c->resp_parser, 0);
			continue;
		}
		if (c->resp.msg_complete) {
			unsigned st = c->resp_parser.status_code;
			if (st >= 100 && st < 200) {
				/* An interim answer: the final one follows on the same parser. */
				http_parser_init(&c->resp_parser, HTTP_RESPONSE);
				c->resp_parser.data = c;
				head_reset(&c->resp);
				c->resp_sent = 0;
				continue;
			}
			response_done(c);
			return;
		}
		break;
	}
	proxy_flush(c->client.bev);
	/* A long body that goes out as it comes, once the head is out: splice the rest. */
	if (c->resp_sent && !c->resp.msg_complete && !c->resp_chunked &&
		evbuffer_get_length(in) == 0 &&
		evbuffer_get_length(bufferevent_get_output(c->client.bev)) == 0) {
		uint64_t left = c->resp_eof_framed ? UINT64_MAX : c->resp_parser.content_length;
		if (left >= PROXY_BODY_SPLICE_MIN && proxy_body_splice_start(c, left) == 0)
			return;
	}
	if (evbuffer_get_length(bufferevent_get_output(c->client.bev)) >= PROXY_HIGH_WATER)
		bufferevent_disable(c->up.bev, EV_READ);
}

void proxy_http_body_done(struct proxy_conn *c, int eof)
{
	c->resp.msg_complete = 1;
	if (eof) {
		c->up.eof = 1;
	} else {
		/* Bytes (or a FIN) behind the body answer nothing that was asked: such an upstream is
		 * not reused, or a pipelined next request would take them for its answer.  The
		 * splice left them in the socket, where only a peek sees them. */
		char ch;
		ssize_t n = recv((int)bufferevent_getfd(c->up.bev), &ch, 1, MSG_PEEK | MSG_DONTWAIT);
		if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			c->up.eof = 1;
		else
			bufferevent_enable(c->up.bev, EV_READ); /* an idle upstream that speaks is dropped */
	}
	response_done(c);
}

void proxy_http_upstream_eof(struct proxy_conn *c)
{
	if (c->resp_sent && c->resp_eof_framed) {
		http_parser_execute(&c->resp_parser, &resp_settings, NULL, 0);
		if (c->resp.msg_complete) {
			response_done(c);
			return;
		}
	}
	if (!c->resp_sent)
		upstream_error(c, "closed the connection before answering");
	else
		proxy_conn_close(c, "upstream-closed");
}
