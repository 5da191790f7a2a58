/* Fuzzes the request-head parser with its framing checks (proxy_h1_request_head) and the target
 * reading that follows it (proxy_h1_request_target), in both forms: absolute URIs (the forward
 * proxy) and origin form (plain HTTP inside a tunnel).
 *
 * The first input byte picks where the rest is split in two deliveries, so heads cut at every
 * place are tried, and (its top bit) the form.  Properties, checked with abort():
 * - a head that passes is made only of token names and values without CR, LF or NUL;
 * - a target that passes is canonical (canonicalising its host again gives the same text) and a
 *   plain request's path starts with '/' and holds no white space or control byte. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "allowlist/action.h"
#include "allowlist/host.h"
#include "allowlist/tags.h"
#include "proxy/h1.h"

static void check_head(const struct proxy_head *h)
{
	for (uint32_t i = 0; i < h->nfields; i++) {
		const struct proxy_hfield *f = &h->fields[i];
		if (f->name_len == 0)
			abort();
		for (uint32_t j = 0; j < f->name_len; j++) {
			unsigned char ch = (unsigned char)h->arena[f->name + j];
			if (ch <= ' ' || ch == ':' || ch >= 0x7f)
				abort();
		}
		for (uint32_t j = 0; j < f->value_len; j++) {
			unsigned char ch = (unsigned char)h->arena[f->value + j];
			if (ch == '\r' || ch == '\n' || ch == 0)
				abort();
		}
	}
}

static void check_target(const struct proxy_h1_target *c, int absolute_form)
{
	struct allow_dest again;
	if (!absolute_form) {
		if (c->is_connect || c->path == NULL || (c->path[0] != '/' && c->path[0] != '*'))
			abort();
		for (const char *p = c->path; *p; p++)
			if ((unsigned char)*p <= ' ' || (unsigned char)*p == 0x7f)
				abort();
		return;
	}
	if (allow_canon_host(c->dest.host, strlen(c->dest.host), &again) != ALLOW_CANON_OK)
		abort();
	if (strcmp(again.host, c->dest.host) != 0 || again.kind != c->dest.kind)
		abort();
	if (c->dest.port == 0)
		abort();
	if (!c->is_connect) {
		if (c->path == NULL || c->path[0] != '/')
			abort();
		for (const char *p = c->path; *p; p++)
			if ((unsigned char)*p <= ' ' || (unsigned char)*p == 0x7f)
				abort();
	}
}

/* The action of a request (allowlist/action.c): some HTTP or git tag and nothing else; a write
 * is never a read alone; a path that names a git service (any case) carries its tag. */
static void check_action(const char *method, const char *path)
{
	const unsigned http = ALLOW_TAG_HTTP_READ | ALLOW_TAG_HTTP_WRITE | ALLOW_TAG_GIT_FETCH |
	                      ALLOW_TAG_GIT_PUSH;
	for (int body = 0; body < 2; body++) {
		unsigned t = allow_http_action(method, path, strlen(path), body);
		if (t == 0 || (t & ~http) != 0)
			abort();
		if (body && t == ALLOW_TAG_HTTP_READ)
			abort();
		if (strcasestr(path, "git-receive-pack") != NULL && !(t & ALLOW_TAG_GIT_PUSH))
			abort();
		if (strcasestr(path, "git-upload-pack") != NULL && !(t & ALLOW_TAG_GIT_FETCH))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int absolute_form = !(data[0] & 0x80);
	size_t split = (data[0] & 0x7f) % size;
	data++;
	size--;
	if (split > size)
		split = size;

	struct proxy_h1 m;
	proxy_h1_init(&m, HTTP_REQUEST, 2048, 32, NULL);
	struct evbuffer *in = evbuffer_new();
	if (in == NULL)
		return 0;
	const char *reason = NULL;
	char why[300];
	evbuffer_add(in, data, split);
	int st = proxy_h1_request_head(&m, in, &reason, why, sizeof why);
	if (st == 0) {
		evbuffer_add(in, data + split, size - split);
		st = proxy_h1_request_head(&m, in, &reason, why, sizeof why);
	}
	if (st > 1 && (reason == NULL || why[0] == '\0'))
		abort();
	if (st == 1) {
		check_head(&m.h);
		struct proxy_h1_target t;
		if (proxy_h1_request_target(&m, absolute_form, &t, &reason, why, sizeof why) == 0) {
			check_target(&t, absolute_form);
			if (t.path != NULL)
				check_action(http_method_str((enum http_method)m.p.method), t.path);
		}
		free(t.path);
	}
	proxy_h1_free(&m);
	evbuffer_free(in);
	return 0;
}
