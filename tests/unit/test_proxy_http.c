/* The request-head parser with its framing checks, and the target it reads: every smuggling form
 * of issue 3 item 3 is refused with the right status, and well-formed heads give the canonical
 * destination, the path sent upstream and the action. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "allowlist/tags.h"
#include "proxy/h1.h"

/* A request head and the target read from it. */
struct hconn {
	struct proxy_h1 m;
	struct proxy_h1_target t;
};

struct head_case {
	const char *name;
	const char *bytes;
	int status;         /* 1 = passes; else the refusal status */
	const char *reason; /* for refusals */
	const char *why;    /* a substring of the explanation */
};

static const struct head_case head_cases[] = {
	{"plain GET", "GET http://o.test/ HTTP/1.1\r\nHost: o.test\r\n\r\n", 1, NULL, NULL},
	{"POST with length", "POST http://o.test/ HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", 1, NULL, NULL},
	{"chunked POST", "POST http://o.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 1,
		NULL, NULL},
	{"CONNECT", "CONNECT o.test:443 HTTP/1.1\r\n\r\n", 1, NULL, NULL},
	{"HTTP/1.0", "GET http://o.test/ HTTP/1.0\r\n\r\n", 1, NULL, NULL},
	{"Content-Length and Transfer-Encoding",
		"POST http://o.test/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
		400, "bad-request", "Malformed request"},
	{"two disagreeing Content-Lengths",
		"POST http://o.test/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400,
		"bad-request", "Content-Length"},
	{"Content-Length with a sign", "POST http://o.test/ HTTP/1.1\r\nContent-Length: +5\r\n\r\n", 400,
		"bad-request", "Content-Length"},
	{"Content-Length list", "POST http://o.test/ HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n", 400,
		"bad-request", "Content-Length"},
	{"Transfer-Encoding gzip", "POST http://o.test/ HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 400,
		"bad-request", "ransfer"},
	{"Transfer-Encoding gzip, chunked",
		"POST http://o.test/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 400,
		"bad-request", "Transfer-Encoding other than"},
	{"Transfer-Encoding twice",
		"POST http://o.test/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
		400, "bad-request", "Transfer-Encoding"},
	{"Transfer-Encoding xchunked",
		"POST http://o.test/ HTTP/1.1\r\nTransfer-Encoding: xchunked\r\n\r\n", 400, "bad-request",
		"ransfer"},
	{"obsolete line folding", "GET http://o.test/ HTTP/1.1\r\nX-A: a\r\n b\r\n\r\n", 400, "bad-request",
		"obsolete line folding"},
	{"bare LF", "GET http://o.test/ HTTP/1.1\nX-A: a\n\n", 400, "bad-request", "bare LF"},
	{"bare LF in a header", "GET http://o.test/ HTTP/1.1\r\nX-A: a\nX-B: b\r\n\r\n", 400, "bad-request",
		"bare LF"},
	{"bare CR", "GET http://o.test/ HTTP/1.1\r\nX-A: a\rb\r\n\r\n", 400, "bad-request", "bare CR"},
	{"space in a name", "GET http://o.test/ HTTP/1.1\r\nX A: a\r\n\r\n", 400, "bad-request",
		"header name"},
	{"space before the colon", "GET http://o.test/ HTTP/1.1\r\nX-A : a\r\n\r\n", 400, "bad-request",
		"white space between"},
	{"control byte in a value", "GET http://o.test/ HTTP/1.1\r\nX-A: a\x01" "b\r\n\r\n", 400,
		"bad-request", "control character"},
	{"DEL in a value", "GET http://o.test/ HTTP/1.1\r\nX-A: a\x7f" "b\r\n\r\n", 400, "bad-request",
		"control character"},
	{"HTTP/2.0 request line", "GET http://o.test/ HTTP/2.0\r\n\r\n", 400, "bad-request", "HTTP/1.0"},
	{"HTTP/0.9 request line", "GET http://o.test/\r\n\r\n", 400, "bad-request", NULL},
	{"TAB inside the URL", "GET http://o.test/a?\tb HTTP/1.1\r\n\r\n", 400, "bad-request",
		"control character in the request line"},
	{"two spaces in the request line", "GET  http://o.test/ HTTP/1.1\r\n\r\n", 400, "bad-request",
		"METHOD SP TARGET"},
	{"two Host headers", "GET http://o.test/ HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n", 400,
		"bad-request", "more than one Host"},
	{"TRACE", "TRACE http://o.test/ HTTP/1.1\r\n\r\n", 405, "method-not-allowed", "TRACE"},
	{"TRACK", "TRACK http://o.test/ HTTP/1.1\r\n\r\n", 405, "method-not-allowed", "TRACK"},
	{"Transfer-Encoding in HTTP/1.0",
		"POST http://o.test/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "bad-request",
		"HTTP/1.0"},
};

static int run_head(struct hconn *c, const char *bytes, size_t len, const char **reason, char *why,
	size_t whylen, uint32_t limit, uint32_t maxfields)
{
	memset(c, 0, sizeof *c);
	proxy_h1_init(&c->m, HTTP_REQUEST, limit, maxfields, NULL);
	struct evbuffer *in = evbuffer_new();
	assert_non_null(in);
	/* Byte by byte: every split point of the head is a delivery boundary. */
	int st = 0;
	for (size_t i = 0; i < len && st == 0; i++) {
		evbuffer_add(in, bytes + i, 1);
		st = proxy_h1_request_head(&c->m, in, reason, why, whylen);
	}
	evbuffer_free(in);
	return st;
}

static void free_conn(struct hconn *c)
{
	free(c->t.path);
	proxy_h1_free(&c->m);
}

static void test_head_table(void **state)
{
	(void)state;
	int failed = 0;
	for (size_t i = 0; i < sizeof head_cases / sizeof head_cases[0]; i++) {
		const struct head_case *t = &head_cases[i];
		struct hconn c;
		const char *reason = NULL;
		char why[300] = "";
		int st = run_head(&c, t->bytes, strlen(t->bytes), &reason, why, sizeof why, 65536, 100);
		int ok = st == t->status;
		if (ok && t->status != 1)
			ok = reason != NULL && strcmp(reason, t->reason) == 0 &&
			     (t->why == NULL || strcasestr(why, t->why) != NULL);
		if (!ok) {
			print_error("case \"%s\": status %d reason %s why \"%s\"; expected %d %s \"%s\"\n",
				t->name, st, reason ? reason : "-", why, t->status,
				t->reason ? t->reason : "-", t->why ? t->why : "");
			failed++;
		}
		free_conn(&c);
	}
	assert_int_equal(failed, 0);
}

static void test_limits(void **state)
{
	(void)state;
	struct hconn c;
	const char *reason = NULL;
	char why[300];
	char big[3000];
	int n = snprintf(big, sizeof big, "GET http://o.test/%0*d HTTP/1.1\r\n\r\n", 2000, 7);
	assert_int_equal(run_head(&c, big, (size_t)n, &reason, why, sizeof why, 1024, 100), 414);
	assert_string_equal(reason, "uri-too-long");
	free_conn(&c);
	n = snprintf(big, sizeof big, "GET http://o.test/ HTTP/1.1\r\nX-Big: %0*d\r\n\r\n", 2000, 7);
	assert_int_equal(run_head(&c, big, (size_t)n, &reason, why, sizeof why, 1024, 100), 431);
	assert_string_equal(reason, "headers-too-large");
	free_conn(&c);
	const char many[] = "GET http://o.test/ HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n";
	assert_int_equal(run_head(&c, many, sizeof many - 1, &reason, why, sizeof why, 1024, 3), 431);
	free_conn(&c);
	assert_int_equal(run_head(&c, many, sizeof many - 1, &reason, why, sizeof why, 1024, 4), 1);
	free_conn(&c);
}

struct target_case {
	const char *request_line;
	int status;       /* 0 = a target was read */
	const char *host; /* canonical host */
	unsigned port;
	const char *path; /* NULL for CONNECT */
	unsigned action;
};

static const struct target_case target_cases[] = {
	{"GET http://Api.Example.TEST./x HTTP/1.1", 0, "api.example.test", 80, "/x", ALLOW_TAG_HTTP_READ},
	{"GET http://o.test:8080?q=1#frag HTTP/1.1", 0, "o.test", 8080, "/?q=1", ALLOW_TAG_HTTP_READ},
	{"POST http://o.test/form HTTP/1.1", 0, "o.test", 80, "/form", ALLOW_TAG_HTTP_WRITE},
	{"DELETE http://o.test/x HTTP/1.1", 0, "o.test", 80, "/x", ALLOW_TAG_HTTP_WRITE},
	{"OPTIONS http://o.test/x HTTP/1.1", 0, "o.test", 80, "/x", ALLOW_TAG_HTTP_READ},
	{"GET http://127.1/ HTTP/1.1", 0, "127.0.0.1", 80, "/", ALLOW_TAG_HTTP_READ},
	{"GET http://0x7f.0.0.1/ HTTP/1.1", 0, "127.0.0.1", 80, "/", ALLOW_TAG_HTTP_READ},
	{"GET http://2130706433/ HTTP/1.1", 0, "127.0.0.1", 80, "/", ALLOW_TAG_HTTP_READ},
	{"GET http://[::FFFF:127.0.0.1]:81/ HTTP/1.1", 0, "::ffff:127.0.0.1", 81, "/",
		ALLOW_TAG_HTTP_READ},
	{"GET http://g.test/o/r.git/info/refs?service=git-upload-pack HTTP/1.1", 0, "g.test", 80,
		"/o/r.git/info/refs?service=git-upload-pack", ALLOW_TAG_GIT_FETCH},
	{"POST http://g.test/o/r.git/git-upload-pack HTTP/1.1", 0, "g.test", 80,
		"/o/r.git/git-upload-pack", ALLOW_TAG_GIT_FETCH},
	{"GET http://g.test/o/r.git/info/refs?service=git-receive-pack HTTP/1.1", 0, "g.test", 80,
		"/o/r.git/info/refs?service=git-receive-pack", ALLOW_TAG_GIT_PUSH},
	{"POST http://g.test/o/r.git/git-receive-pack HTTP/1.1", 0, "g.test", 80,
		"/o/r.git/git-receive-pack", ALLOW_TAG_GIT_PUSH},
	{"POST http://g.test/o/r.git/git%2Dreceive-pack HTTP/1.1", 0, "g.test", 80,
		"/o/r.git/git%2Dreceive-pack", ALLOW_TAG_GIT_PUSH},
	{"POST http://g.test/o/r.git/GIT-RECEIVE-PACK/ HTTP/1.1", 0, "g.test", 80,
		"/o/r.git/GIT-RECEIVE-PACK/", ALLOW_TAG_GIT_PUSH | ALLOW_TAG_HTTP_WRITE},
	{"GET http://g.test/x?service=git%2dreceive%2Dpack HTTP/1.1", 0, "g.test", 80,
		"/x?service=git%2dreceive%2Dpack", ALLOW_TAG_GIT_PUSH | ALLOW_TAG_HTTP_READ},
	{"CONNECT Github.COM:443 HTTP/1.1", 0, "github.com", 443, NULL, 0},
	{"CONNECT [2001:DB8::1]:8443 HTTP/1.1", 0, "2001:db8::1", 8443, NULL, 0},
	{"CONNECT github.com HTTP/1.1", 400, NULL, 0, NULL, 0},
	{"CONNECT github.com:0 HTTP/1.1", 400, NULL, 0, NULL, 0},
	{"CONNECT github.com:65536 HTTP/1.1", 400, NULL, 0, NULL, 0},
	{"GET http://user@o.test/ HTTP/1.1", 400, NULL, 0, NULL, 0},
	{"GET http://o_x.test/ HTTP/1.1", 400, NULL, 0, NULL, 0},
	{"GET http://a..b.test/ HTTP/1.1", 400, NULL, 0, NULL, 0},
	{"GET http://[fe80::1%25eth0]/ HTTP/1.1", 400, NULL, 0, NULL, 0},
	{"GET / HTTP/1.1", 400, NULL, 0, NULL, 0},
	{"GET https://o.test/ HTTP/1.1", 400, NULL, 0, NULL, 0},
	{"GET ftp://o.test/ HTTP/1.1", 400, NULL, 0, NULL, 0},
};

static void test_target_table(void **state)
{
	(void)state;
	int failed = 0;
	for (size_t i = 0; i < sizeof target_cases / sizeof target_cases[0]; i++) {
		const struct target_case *t = &target_cases[i];
		char head[512];
		int n = snprintf(head, sizeof head, "%s\r\nHost: ignored.test\r\n\r\n", t->request_line);
		struct hconn c;
		const char *reason = NULL;
		char why[300] = "";
		int st = run_head(&c, head, (size_t)n, &reason, why, sizeof why, 65536, 100);
		if (st != 1) {
			print_error("\"%s\": head refused: %d %s\n", t->request_line, st, why);
			failed++;
			free_conn(&c);
			continue;
		}
		st = proxy_h1_request_target(&c.m, 1, &c.t, &reason, why, sizeof why);
		int ok = st == t->status;
		if (ok && st == 0) {
			ok = strcmp(c.t.dest.host, t->host) == 0 && c.t.dest.port == t->port &&
			     c.t.action == t->action &&
			     (t->path == NULL ? c.t.path == NULL
					      : c.t.path != NULL && strcmp(c.t.path, t->path) == 0);
		}
		if (!ok) {
			print_error("\"%s\": status %d host %s port %u path %s action %u (%s)\n",
				t->request_line, st, c.t.dest.host, c.t.dest.port, c.t.path ? c.t.path : "-",
				c.t.action, why);
			failed++;
		}
		free_conn(&c);
	}
	assert_int_equal(failed, 0);
}

/* A GET that carries a body writes. */
static void test_get_with_body(void **state)
{
	(void)state;
	static const char get_body[] = "GET http://o.test/ HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc";
	struct hconn c;
	const char *reason = NULL;
	char why[300];
	assert_int_equal(run_head(&c, get_body, sizeof get_body - 1, &reason, why, sizeof why, 65536, 100), 1);
	assert_int_equal(proxy_h1_request_target(&c.m, 1, &c.t, &reason, why, sizeof why), 0);
	assert_int_equal(c.t.action, ALLOW_TAG_HTTP_WRITE);
	free_conn(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_head_table),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_target_table),
		cmocka_unit_test(test_get_with_body),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
