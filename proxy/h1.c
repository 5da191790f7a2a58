/* HTTP/1 message heads (proxy/h1.h).
 *
 * http-parser does all framing.  Each parser pauses when a head is complete (so egressd decides
 * before any body byte moves) and when a message is complete (so a pipelined next request waits
 * until this response is done).  On top, a raw-byte scan refuses what http-parser tolerates
 * in a request head (bare LF or CR, obsolete folding, white space before a colon, controls in
 * the request line, extra spaces), so that no leniency reaches an upstream that reads the bytes
 * differently. */
#include "proxy/h1.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "allowlist/action.h"

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

static void head_free(struct proxy_head *h)
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

int proxy_h1_name_is(const struct proxy_head *h, const struct proxy_hfield *f, const char *name)
{
	size_t n = strlen(name);
	return f->name_len == n && strncasecmp(h->arena + f->name, name, n) == 0;
}

/* ---- parser callbacks (shared by requests and responses) ---- */

static struct proxy_h1 *h1_of(http_parser *p)
{
	return p->data;
}

static int cb_begin(http_parser *p)
{
	struct proxy_head *h = &h1_of(p)->h;
	int scan = h->scan;
	head_reset(h);
	h->scan = scan;
	return 0;
}

static int cb_url(http_parser *p, const char *at, size_t len)
{
	return head_on_url(&h1_of(p)->h, at, len);
}

static int cb_field(http_parser *p, const char *at, size_t len)
{
	return head_on_field(&h1_of(p)->h, at, len);
}

static int cb_value(http_parser *p, const char *at, size_t len)
{
	return head_on_value(&h1_of(p)->h, at, len);
}

static int cb_headers_complete(http_parser *p)
{
	struct proxy_h1 *m = h1_of(p);
	m->h.complete = 1;
	http_parser_pause(p, 1);
	if (m->type == HTTP_RESPONSE) {
		unsigned st = p->status_code;
		/* These answers have no body whatever their headers say. */
		if (m->no_body || (st >= 100 && st < 200) || st == 204 || st == 304)
			return 1;
	}
	return 0;
}

static int cb_body(http_parser *p, const char *at, size_t len)
{
	struct proxy_h1 *m = h1_of(p);
	return m->on_body != NULL ? m->on_body(m, at, len) : 0;
}

static int cb_message_complete(http_parser *p)
{
	struct proxy_h1 *m = h1_of(p);
	m->h.msg_complete = 1;
	http_parser_pause(p, 1);
	return m->on_done != NULL ? m->on_done(m) : 0;
}

static const http_parser_settings settings = {
        .on_message_begin = cb_begin,
        .on_url = cb_url,
        .on_status = cb_url,
        .on_header_field = cb_field,
        .on_header_value = cb_value,
        .on_headers_complete = cb_headers_complete,
        .on_body = cb_body,
        .on_message_complete = cb_message_complete,
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

void proxy_h1_init(struct proxy_h1 *m, enum http_parser_type type, uint32_t max_header_bytes,
        uint32_t max_headers, void *owner)
{
	memset(m, 0, sizeof *m);
	m->type = type;
	m->owner = owner;
	m->h.limit = max_header_bytes;
	m->h.fmax = max_headers;
	proxy_h1_reset(m);
}

void proxy_h1_reset(struct proxy_h1 *m)
{
	http_parser_init(&m->p, m->type);
	m->p.data = m;
	head_reset(&m->h);
	m->h.scan = m->type == HTTP_REQUEST ? SCAN_REQLINE : SCAN_OFF;
	m->h.nstart = 0;
	m->h.rl_spaces = 0;
	m->h.rl_prev_space = 0;
}

void proxy_h1_free(struct proxy_h1 *m)
{
	head_free(&m->h);
}

void proxy_h1_resume(struct proxy_h1 *m)
{
	http_parser_pause(&m->p, 0);
}

enum proxy_h1_feed proxy_h1_feed(struct proxy_h1 *m, struct evbuffer *in)
{
	struct proxy_head *h = &m->h;
	while (evbuffer_get_length(in) > 0) {
		struct evbuffer_iovec v;
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		int in_head = !h->complete;
		if (in_head && h->scan != SCAN_OFF && scan_head(h, v.iov_base, v.iov_len) == -1)
			return PROXY_H1_ERROR;
		size_t used = http_parser_execute(&m->p, &settings, v.iov_base, v.iov_len);
		if (in_head) {
			h->bytes += used;
			if (h->bytes > h->limit)
				h->overflow = 1;
		}
		evbuffer_drain(in, used);
		enum http_errno e = HTTP_PARSER_ERRNO(&m->p);
		if (e == HPE_PAUSED)
			return PROXY_H1_PAUSED;
		if (e != HPE_OK || h->overflow)
			return PROXY_H1_ERROR;
		if (used < v.iov_len)
			return PROXY_H1_ERROR;
	}
	return PROXY_H1_MORE;
}

int proxy_h1_eof(struct proxy_h1 *m)
{
	http_parser_execute(&m->p, &settings, NULL, 0);
	enum http_errno e = HTTP_PARSER_ERRNO(&m->p);
	return e == HPE_OK || e == HPE_PAUSED ? 0 : -1;
}

/* Framing checks on a complete request head, beyond what http-parser enforces (it already
 * refuses Content-Length with Transfer-Encoding, disagreeing or non-numeric Content-Lengths, and a
 * request Transfer-Encoding whose last coding is not chunked). */
static int check_framing(const struct proxy_h1 *m, const char **reason, char *why, size_t whylen)
{
	const http_parser *p = &m->p;
	const struct proxy_head *h = &m->h;
	int te = 0;
	for (uint32_t i = 0; i < h->nfields; i++) {
		const struct proxy_hfield *f = &h->fields[i];
		if (!proxy_h1_name_is(h, f, "transfer-encoding"))
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
		hosts += proxy_h1_name_is(h, &h->fields[i], "host");
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

int proxy_h1_request_head(struct proxy_h1 *m, struct evbuffer *in, const char **reason,
        char *why, size_t whylen)
{
	enum proxy_h1_feed r = proxy_h1_feed(m, in);
	if (r == PROXY_H1_ERROR) {
		enum http_errno e = HTTP_PARSER_ERRNO(&m->p);
		if (e == HPE_INVALID_METHOD && m->h.nstart >= 5 && memcmp(m->h.start, "TRACK", 5) == 0) {
			/* http-parser does not know TRACK; it gets the answer TRACE gets. */
			*reason = "method-not-allowed";
			snprintf(why, whylen, "TRACK is not forwarded");
			return 405;
		}
		if (m->h.bad) {
			*reason = "bad-request";
			snprintf(why, whylen, "Malformed request head: %s", m->h.bad_why);
			return 400;
		}
		if (m->h.overflow || e == HPE_HEADER_OVERFLOW) {
			if (m->h.nfields == 0) {
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
	if (r == PROXY_H1_PAUSED && m->h.complete)
		return check_framing(m, reason, why, whylen) ?: 1;
	return 0;
}

int proxy_h1_has_body(const struct proxy_h1 *m)
{
	const http_parser *p = &m->p;
	return (p->flags & F_CHUNKED) || ((p->flags & F_CONTENTLENGTH) && p->content_length > 0 &&
	                                         p->content_length != ULLONG_MAX);
}

const char *proxy_h1_get(const struct proxy_h1 *m, const char *name, size_t *len)
{
	const struct proxy_head *h = &m->h;
	for (uint32_t i = 0; i < h->nfields; i++) {
		if (proxy_h1_name_is(h, &h->fields[i], name)) {
			*len = h->fields[i].value_len;
			return h->arena + h->fields[i].value;
		}
	}
	return NULL;
}

/* 1 when the comma-separated list v[0..n) holds token (any case). */
static int list_has(const char *v, size_t n, const char *token)
{
	const char *end = v + n;
	size_t tl = strlen(token);
	while (v < end) {
		while (v < end && (*v == ',' || *v == ' ' || *v == '\t'))
			v++;
		const char *tok = v;
		while (v < end && *v != ',' && *v != ' ' && *v != '\t')
			v++;
		if ((size_t)(v - tok) == tl && strncasecmp(tok, token, tl) == 0)
			return 1;
	}
	return 0;
}

int proxy_h1_has_token(const struct proxy_h1 *m, const char *name, const char *token)
{
	const struct proxy_head *h = &m->h;
	for (uint32_t i = 0; i < h->nfields; i++) {
		const struct proxy_hfield *f = &h->fields[i];
		if (proxy_h1_name_is(h, f, name) &&
		        list_has(h->arena + f->value, f->value_len, token))
			return 1;
	}
	return 0;
}

/* Hop-by-hop headers (RFC 9110 7.6.1) and those a Connection header names are not forwarded. */
int proxy_h1_hop_by_hop(const struct proxy_head *h, const struct proxy_hfield *f)
{
	static const char *const hop[] = {"connection", "proxy-connection", "proxy-authorization",
		"keep-alive", "te", "trailer", "upgrade", "transfer-encoding", "content-length",
		"proxy-authenticate"};
	for (size_t i = 0; i < sizeof hop / sizeof hop[0]; i++)
		if (proxy_h1_name_is(h, f, hop[i]))
			return 1;
	for (uint32_t i = 0; i < h->nfields; i++) {
		const struct proxy_hfield *cf = &h->fields[i];
		if (!proxy_h1_name_is(h, cf, "connection"))
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

int proxy_h1_request_target(struct proxy_h1 *m, int absolute_form, struct proxy_h1_target *t,
        const char **reason, char *why, size_t whylen)
{
	const http_parser *p = &m->p;
	const struct proxy_head *h = &m->h;
	const char *url = h->arena + h->url;
	size_t ulen = h->url_len;
	memset(t, 0, sizeof *t);
	snprintf(t->method, sizeof t->method, "%s", http_method_str((enum http_method)p->method));
	t->is_connect = p->method == HTTP_CONNECT;
	*reason = "bad-request";

	enum allow_canon_err err;
	if (t->is_connect) {
		if (!absolute_form) {
			snprintf(why, whylen, "CONNECT inside a tunnel is not forwarded");
			return 400;
		}
		err = allow_canon_authority(url, ulen, 0, &t->dest);
		if (err != ALLOW_CANON_OK) {
			snprintf(why, whylen, "The CONNECT target is not host:port (%s)",
			        allow_canon_strerror(err));
			memset(&t->dest, 0, sizeof t->dest);
			return 400;
		}
		return 0;
	}
	const char *pstart;
	if (absolute_form) {
		static const char http_scheme[] = "http://";
		if (ulen < sizeof http_scheme - 1 ||
		        strncasecmp(url, http_scheme, sizeof http_scheme - 1) != 0) {
			if (ulen >= 8 && strncasecmp(url, "https://", 8) == 0)
				snprintf(why, whylen,
				        "Https URLs go through CONNECT (set HTTPS_PROXY, not a plain "
				        "request)");
			else
				snprintf(why, whylen,
				        "This is a forward proxy: send the absolute URI (http://host/path) "
				        "or use CONNECT");
			return 400;
		}
		const char *auth = url + sizeof http_scheme - 1, *uend = url + ulen;
		const char *aend = auth;
		while (aend < uend && *aend != '/' && *aend != '?' && *aend != '#')
			aend++;
		err = allow_canon_authority(auth, (size_t)(aend - auth), 80, &t->dest);
		if (err != ALLOW_CANON_OK) {
			snprintf(why, whylen, "The request URI's host is not valid (%s)",
			        allow_canon_strerror(err));
			memset(&t->dest, 0, sizeof t->dest);
			return 400;
		}
		pstart = aend;
	} else {
		/* Origin form ("/path"), or "*" for OPTIONS, inside a tunnel. */
		if (ulen == 0 || (url[0] != '/' && !(ulen == 1 && url[0] == '*'))) {
			snprintf(why, whylen,
			        "Inside a tunnel a request names its path (origin form), not a URI");
			return 400;
		}
		pstart = url;
	}
	const char *uend = url + ulen;
	const char *frag = memchr(pstart, '#', (size_t)(uend - pstart));
	size_t plen = (size_t)((frag ? frag : uend) - pstart);
	t->path = malloc(plen + 2);
	if (t->path == NULL) {
		snprintf(why, whylen, "out of memory");
		return 400;
	}
	size_t off = 0;
	if (plen == 0 || pstart[0] == '?')
		t->path[off++] = '/';
	memcpy(t->path + off, pstart, plen);
	t->path[off + plen] = '\0';
	t->action = allow_http_action(t->method, t->path, strlen(t->path), proxy_h1_has_body(m));
	return 0;
}
