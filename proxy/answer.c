/* Rendering an outcome (docs/design.md 6): as an HTTP answer (the forward proxy, CONNECT before
 * its 200, plain HTTP inside a tunnel), or as a close where no protocol can carry it. */
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "proxy/proxy.h"

static const char *status_text(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 405: return "Method Not Allowed";
	case 407: return "Proxy Authentication Required";
	case 408: return "Request Timeout";
	case 414: return "URI Too Long";
	case 421: return "Misdirected Request";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 508: return "Loop Detected";
	default: return "Error";
	}
}

/* The close record's end for a connection that ends with this outcome. */
static const char *end_of(const struct proxy_outcome *o)
{
	if (strcmp(o->reason, "header-timeout") == 0)
		return "header-timeout";
	return "denied";
}

/* Waiting helps only where a count goes down with time: open connections, new hosts per
 * minute.  Never for spent bytes or an expired session. */
static int retry_helps(const struct proxy_outcome *o)
{
	return strcmp(o->reason, "limit-connections") == 0 ||
	       strcmp(o->reason, "limit-new-hosts") == 0 || strcmp(o->reason, "limit-clients") == 0;
}

void proxy_answer_http(struct proxy_conn *c, const struct proxy_outcome *o)
{
	if (c->client.bev == NULL || c->client.state == PROXY_CLIENT_TUNNEL) {
		proxy_conn_close(c, end_of(o));
		return;
	}
	char host[ALLOW_HOST_BUF + 2];
	if (c->rq.dest.kind == ALLOW_HOST_IPV6)
		snprintf(host, sizeof host, "[%s]", c->rq.dest.host);
	else
		snprintf(host, sizeof host, "%s", c->rq.dest.host);
	char what[ALLOW_HOST_BUF + 96];
	if (c->rq.dest.host[0] && c->rq.tunnel)
		snprintf(what, sizeof what, "CONNECT %s:%u", host, c->rq.dest.port);
	else if (c->rq.dest.host[0])
		snprintf(what, sizeof what, "%s %s:%u", c->rq.method, host, c->rq.dest.port);
	else
		snprintf(what, sizeof what, "the request");
	char body[1500];
	int blen = snprintf(body, sizeof body,
	        "egressd denied %s: %s%s%s%s. %s. Retrying another way will not help: egressd is "
	        "the only way out of this network.\n",
	        what, o->reason, o->rule[0] ? " (" : "", o->rule, o->rule[0] ? ")" : "",
	        o->detail);
	if (blen < 0)
		blen = 0;
	if ((size_t)blen >= sizeof body)
		blen = (int)sizeof body - 1;
	struct evbuffer *out = bufferevent_get_output(c->client.bev);
	evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nX-Egressd-Reason: %s\r\n", o->status,
	        status_text(o->status), o->reason);
	if (c->session != NULL)
		evbuffer_add_printf(out, "X-Egressd-Session: %s\r\n", c->session->name);
	/* A header value may not carry CR/LF; rules are built from canonical text. */
	if (o->rule[0])
		evbuffer_add_printf(out, "X-Egressd-Rule: %s\r\n", o->rule);
	if (retry_helps(o))
		evbuffer_add_printf(out, "Retry-After: 60\r\n");
	if (o->status == 407)
		evbuffer_add_printf(out, "Proxy-Authenticate: Basic realm=\"egressd\"\r\n");
	evbuffer_add_printf(out,
	        "Content-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n"
	        "Connection: close\r\nProxy-Connection: close\r\n\r\n",
	        blen);
	if (strcmp(c->rq.method, "HEAD") != 0 || c->rq.tunnel)
		evbuffer_add(out, body, (size_t)blen);
	proxy_conn_finish(c, end_of(o));
}

void proxy_answer_close(struct proxy_conn *c, const struct proxy_outcome *o)
{
	proxy_conn_close(c, end_of(o));
}
