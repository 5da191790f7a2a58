/* Network actions of requests and tunnels (docs/design.md 4.5).  Pure: no allocation beyond the
 * caller's buffers, no global state. */
#include "allowlist/action.h"

#include <stdio.h>
#include <string.h>

#include "allowlist/tags.h"

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch |= 0x20;
	return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* Percent-decodes in[0..len) into out (at most cap - 1 bytes kept, NUL-terminated); returns
 * the decoded length, which may exceed what was kept. */
static size_t decode(const char *in, size_t len, char *out, size_t cap)
{
	size_t j = 0;
	for (size_t i = 0; i < len; i++) {
		int hi, lo;
		char ch = in[i];
		if (ch == '%' && i + 2 < len && (hi = hexval(in[i + 1])) >= 0 &&
		        (lo = hexval(in[i + 2])) >= 0) {
			ch = (char)(hi * 16 + lo);
			i += 2;
		}
		if (j + 1 < cap)
			out[j] = ch;
		j++;
	}
	if (cap > 0)
		out[j < cap ? j : cap - 1] = '\0';
	return j;
}

/* 1 when needle occurs in hay[0..n), ignoring ASCII case. */
static int contains_nocase(const char *hay, size_t n, const char *needle)
{
	size_t m = strlen(needle);
	for (size_t i = 0; i + m <= n; i++) {
		size_t k = 0;
		while (k < m && (hay[i + k] | 0x20) == needle[k])
			k++;
		if (k == m)
			return 1;
	}
	return 0;
}

static int ends_with(const char *s, size_t n, const char *suffix)
{
	size_t m = strlen(suffix);
	return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/* 1 when the path segment p[0..n) is word, ignoring ASCII case. */
static int seg_is(const char *p, size_t n, const char *word)
{
	size_t m = strlen(word);
	if (n != m)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((p[i] | 0x20) != (word[i] | 0x20))
			return 0;
	return 1;
}

/* Marks of git's dumb HTTP transport in a decoded path: git http-fetch reads a repository's
 * files (info/refs without a service, objects/..., HEAD) and git http-push writes them over
 * WebDAV (LOCK info/refs, MKCOL and PUT under objects/, PUT and MOVE under refs/).  Segments are
 * compared, so that "//" and "/./" change nothing, and in any case but HEAD's.  Returns 1 for a
 * path with info/refs, a directory objects/ or refs/, or HEAD as its last segment. */
static int dumb_git_path(const char *path, size_t n)
{
	const char *prev = NULL;
	size_t prevn = 0;
	const char *last = NULL;
	size_t lastn = 0;
	size_t i = 0;
	while (i < n) {
		while (i < n && path[i] == '/')
			i++;
		size_t s = i;
		while (i < n && path[i] != '/')
			i++;
		size_t sn = i - s;
		if (sn == 0 || (sn == 1 && path[s] == '.'))
			continue;
		const char *seg = path + s;
		int more = i < n; /* a segment follows (or at least a '/') */
		if (prev != NULL && seg_is(prev, prevn, "info") && seg_is(seg, sn, "refs"))
			return 1;
		if (more && (seg_is(seg, sn, "objects") || seg_is(seg, sn, "refs")))
			return 1;
		prev = seg;
		prevn = sn;
		last = seg;
		lastn = sn;
	}
	/* git's HEAD file exactly: "/head" is a common word in other paths */
	return last != NULL && lastn == 4 && memcmp(last, "HEAD", 4) == 0;
}

/* A target longer than this is classified by its raw text only (no exact git form is that
 * long), so the decoding buffer stays on the stack. */
#define DECODE_MAX 8192

unsigned allow_http_action(const char *method, const char *target, size_t len, int has_body)
{
	const char *q = memchr(target, '?', len);
	size_t plen = q != NULL ? (size_t)(q - target) : len;
	size_t qlen = q != NULL ? len - plen - 1 : 0;
	char path[DECODE_MAX], query[DECODE_MAX];
	size_t pn = decode(target, plen, path, sizeof path);
	size_t qn = q != NULL ? decode(q + 1, qlen, query, sizeof query) : 0;
	int fits = pn < sizeof path && qn < sizeof query;
	if (!fits)
		pn = qn = 0;
	if (q == NULL)
		query[0] = '\0';

	int get = strcmp(method, "GET") == 0 && !has_body;
	int post = strcmp(method, "POST") == 0;
	/* git's smart-HTTP forms exactly are that service alone, unless the other one is named
	 * elsewhere too (below: POST /x/git-receive-pack/y/git-upload-pack is a push as well). */
	unsigned tag = 0;
	if (fits && get && ends_with(path, pn, "/info/refs") && q != NULL) {
		if (strcmp(query, "service=git-upload-pack") == 0)
			tag = ALLOW_TAG_GIT_FETCH;
		else if (strcmp(query, "service=git-receive-pack") == 0)
			tag = ALLOW_TAG_GIT_PUSH;
	}
	if (fits && post && q == NULL) {
		if (ends_with(path, pn, "/git-upload-pack"))
			tag = ALLOW_TAG_GIT_FETCH;
		else if (ends_with(path, pn, "/git-receive-pack"))
			tag = ALLOW_TAG_GIT_PUSH;
	}

	if (tag == 0) {
		tag = !has_body && (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0 ||
		                          strcmp(method, "OPTIONS") == 0)
		              ? ALLOW_TAG_HTTP_READ
		              : ALLOW_TAG_HTTP_WRITE;
		/* Unsure means more: git's dumb transport reads and writes a repository's files (a
		 * read of them may be a fetch, anything else a push: git http-push's WebDAV
		 * requests) ... */
		if (fits && dumb_git_path(path, pn))
			tag |= tag == ALLOW_TAG_HTTP_READ ? ALLOW_TAG_GIT_FETCH : ALLOW_TAG_GIT_PUSH;
	}
	/* ... and a git service named anywhere (also where the decoding did not fit, then in the
	 * raw text) adds its tag. */
	const char *hay[2][2] = {{path, query}, {target, ""}};
	size_t hn[2][2] = {{pn, qn}, {len, 0}};
	int which = fits ? 0 : 1;
	for (int i = 0; i < 2; i++) {
		if (contains_nocase(hay[which][i], hn[which][i], "git-upload-pack"))
			tag |= ALLOW_TAG_GIT_FETCH;
		if (contains_nocase(hay[which][i], hn[which][i], "git-receive-pack"))
			tag |= ALLOW_TAG_GIT_PUSH;
		/* ... also once more decoded, for an origin that decodes twice (a black-box
		 * attacker's git-receive%252Dpack) */
		if (fits && memchr(hay[0][i], '%', hn[0][i]) != NULL) {
			char twice[DECODE_MAX];
			size_t tn = decode(hay[0][i], hn[0][i], twice, sizeof twice);
			if (contains_nocase(twice, tn, "git-upload-pack"))
				tag |= ALLOW_TAG_GIT_FETCH;
			if (contains_nocase(twice, tn, "git-receive-pack"))
				tag |= ALLOW_TAG_GIT_PUSH;
		}
	}
	return tag;
}

#define HTTP_LEAVES                                                                          \
	(ALLOW_TAG_HTTP_READ | ALLOW_TAG_HTTP_WRITE | ALLOW_TAG_GIT_FETCH | ALLOW_TAG_GIT_PUSH)
#define SSH_LEAVES (ALLOW_TAG_SSH_READ | ALLOW_TAG_SSH_WRITE)
#define GIT_LEAVES (ALLOW_TAG_GIT_FETCH | ALLOW_TAG_GIT_PUSH)

unsigned allow_tunnel_carries(enum allow_tunnel_kind k)
{
	switch (k) {
	case ALLOW_TUNNEL_TLS:
	case ALLOW_TUNNEL_HTTP:
		return HTTP_LEAVES;
	case ALLOW_TUNNEL_SSH:
		/* git over ssh (a fetch or a push) looks like any other ssh session. */
		return SSH_LEAVES | GIT_LEAVES;
	case ALLOW_TUNNEL_OTHER:
	case ALLOW_TUNNEL_UNKNOWN:
		break;
	}
	return ALLOW_TAGS_ALL;
}

/* The leaves of which every use of a tunnel of kind k carries at least one: denying all of
 * them denies the tunnel outright.  A git fetch or push over ssh is an ssh session too
 * (ssh:read or ssh:write besides its git tag), so denying ssh:read and ssh:write is enough. */
static unsigned tunnel_needs(enum allow_tunnel_kind k)
{
	return k == ALLOW_TUNNEL_SSH ? SSH_LEAVES : allow_tunnel_carries(k);
}

const char *allow_tunnel_kind_name(enum allow_tunnel_kind k)
{
	switch (k) {
	case ALLOW_TUNNEL_TLS:
		return "tls";
	case ALLOW_TUNNEL_HTTP:
		return "http";
	case ALLOW_TUNNEL_SSH:
		return "ssh";
	case ALLOW_TUNNEL_OTHER:
		return "other";
	case ALLOW_TUNNEL_UNKNOWN:
		break;
	}
	return "unknown";
}

int allow_inspected(const struct allow_bound *b, const struct allow_dest *d)
{
	const char *rule;
	return b->inspect != NULL && allow_set_match(b->inspect, d, &rule) == ALLOW_MATCH_YES;
}

/* What a tunnel of each kind is called in the texts. */
static const char *kind_text(enum allow_tunnel_kind k)
{
	switch (k) {
	case ALLOW_TUNNEL_TLS:
		return "an HTTPS tunnel";
	case ALLOW_TUNNEL_HTTP:
		return "a plain HTTP tunnel";
	case ALLOW_TUNNEL_SSH:
		return "an SSH tunnel";
	case ALLOW_TUNNEL_OTHER:
	case ALLOW_TUNNEL_UNKNOWN:
		break;
	}
	return "an opaque tunnel";
}

/* The verdict for one known kind. */
static void decide_kind(const struct allow_bound *b, const struct allow_dest *d,
        enum allow_tunnel_kind k, int *inspect, struct allow_decision *out)
{
	unsigned carries = allow_tunnel_carries(k);
	unsigned denied = carries & b->deny_actions;
	char names[160], carried[200];
	memset(out, 0, sizeof *out);
	out->reason = ALLOW_OK;
	*inspect = k == ALLOW_TUNNEL_TLS && allow_inspected(b, d);
	if (denied == 0)
		return;
	allow_tags_format(denied, ", ", names, sizeof names);
	allow_tags_format(carries, ", ", carried, sizeof carried);
	if ((denied & tunnel_needs(k)) == tunnel_needs(k)) {
		*inspect = 0;
		out->reason = ALLOW_ACTION_DENIED;
		allow_tags_format(denied & tunnel_needs(k), ", ", names, sizeof names);
		snprintf(out->rule, sizeof out->rule, "actions: %s", names);
		if (k == ALLOW_TUNNEL_SSH)
			snprintf(out->hint, sizeof out->hint,
			        "remove from actions one of %s, one of which every ssh session (git "
			        "over ssh included) carries",
			        names);
		else
			snprintf(out->hint, sizeof out->hint,
			        "remove from actions one of %s, which is all %s carries", names,
			        kind_text(k));
		return;
	}
	if (k == ALLOW_TUNNEL_HTTP || *inspect)
		return; /* each request inside is decided on its own */
	out->reason = ALLOW_INSPECTION_REQUIRED;
	snprintf(out->rule, sizeof out->rule, "actions: %s (%s carries %s)", names, kind_text(k),
	        carried);
	if (k == ALLOW_TUNNEL_TLS)
		snprintf(out->hint, sizeof out->hint,
		        "add \"%s\" to inspect (egressd then decides each request inside the "
		        "tunnel), or remove %s from actions",
		        d->host, names);
	else if (k == ALLOW_TUNNEL_SSH && (denied & GIT_LEAVES))
		snprintf(out->hint, sizeof out->hint,
		        "remove %s from actions: egressd cannot tell git over ssh from any other ssh "
		        "session (git over HTTPS to a host in inspect is decided request by request)",
		        names);
	else
		snprintf(out->hint, sizeof out->hint,
		        "remove %s from actions: egressd cannot tell the actions inside %s apart",
		        names, kind_text(k));
}

void allow_tunnel_decide(const struct allow_bound *b, const struct allow_dest *d,
        enum allow_tunnel_kind k, int *inspect, struct allow_decision *out)
{
	if (k != ALLOW_TUNNEL_UNKNOWN) {
		decide_kind(b, d, k, inspect, out);
		return;
	}
	/* Before the first byte: a denial now only when the first bytes could change nothing. */
	static const enum allow_tunnel_kind kinds[] = {
	        ALLOW_TUNNEL_TLS, ALLOW_TUNNEL_HTTP, ALLOW_TUNNEL_SSH, ALLOW_TUNNEL_OTHER};
	struct allow_decision each;
	int insp;
	decide_kind(b, d, ALLOW_TUNNEL_TLS, &insp, out);
	for (size_t i = 1; i < sizeof kinds / sizeof kinds[0] && out->reason != ALLOW_OK; i++) {
		decide_kind(b, d, kinds[i], &insp, &each);
		if (each.reason == ALLOW_OK)
			out->reason = ALLOW_OK;
	}
	if (out->reason == ALLOW_OK)
		memset(out, 0, sizeof *out);
	*inspect = 0;
}
