/* The audit log as a reader of the file sees it: exact key order and values, seq, ts format,
 * omitted fields, the hash chain and audit_verify, reopen after rotation, write failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "audit/json.h"

#define MAX_LINES 4096

struct lines {
	char *buf;             /* the whole file */
	size_t len;            /* its length */
	size_t n;              /* lines found */
	char *line[MAX_LINES]; /* NUL-terminated lines (newline removed) */
};

static char tmpdir[64];

static int setup(void **state)
{
	(void)state;
	/* mkdtemp's template: the name, then six 'X' it replaces. */
	memcpy(tmpdir, "/tmp/egressd-audit-", 19);
	memset(tmpdir + 19, 'X', 6);
	tmpdir[25] = '\0';
	return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Opens path with chaining on or off and nothing else. */
static struct audit_log *open_log(const char *path, int chain, char *err, size_t errlen)
{
	struct audit_opts o = {.chain = chain};
	return audit_open(path, &o, err, errlen);
}

static void tpath(char *out, size_t cap, const char *name)
{
	snprintf(out, cap, "%s/%s", tmpdir, name);
}

static void read_lines(const char *path, struct lines *l)
{
	memset(l, 0, sizeof *l);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	size_t cap = 8 << 20;
	l->buf = malloc(cap + 1);
	assert_non_null(l->buf);
	l->len = fread(l->buf, 1, cap, f);
	fclose(f);
	l->buf[l->len] = '\0';
	char *p = l->buf;
	while (p < l->buf + l->len) {
		char *nl = memchr(p, '\n', (size_t)(l->buf + l->len - p));
		assert_non_null(nl); /* every line ends in a newline */
		*nl = '\0';
		assert_true(l->n < MAX_LINES);
		l->line[l->n++] = p;
		p = nl + 1;
	}
}

static void free_lines(struct lines *l)
{
	free(l->buf);
}

static void sha256_hex(const char *s, size_t len, char *hex)
{
	unsigned char d[32];
	unsigned int dl = 0;
	assert_int_equal(EVP_Digest(s, len, d, &dl, EVP_sha256(), NULL), 1);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

/* The text of line after its ts: checks the ts (format and that it is now) and returns the rest,
 * starting at ",\"seq\"". */
static const char *after_ts(const char *line)
{
	regex_t re;
	assert_int_equal(
	        regcomp(&re,
	                "^\\{\"ts\":\"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):"
	                "([0-9]{2})\\.[0-9]{3}Z\",\"seq\":",
	                REG_EXTENDED),
	        0);
	regmatch_t m[7];
	int rc = regexec(&re, line, 7, m, 0);
	regfree(&re);
	if (rc != 0) {
		print_error("bad ts in %s\n", line);
		fail();
	}
	struct tm tm = {0};
	tm.tm_year = atoi(line + m[1].rm_so) - 1900;
	tm.tm_mon = atoi(line + m[2].rm_so) - 1;
	tm.tm_mday = atoi(line + m[3].rm_so);
	tm.tm_hour = atoi(line + m[4].rm_so);
	tm.tm_min = atoi(line + m[5].rm_so);
	tm.tm_sec = atoi(line + m[6].rm_so);
	time_t t = timegm(&tm);
	time_t now = time(NULL);
	/* UTC, not local time: the stamp is within seconds of now. */
	assert_true(t <= now && t >= now - 10);
	return strstr(line, ",\"seq\":");
}

static void full_record(struct audit_rec *r)
{
	audit_rec_init(r);
	r->event = "connect";
	r->conn = 42;
	r->session = "default";
	r->client = "127.0.0.1:50000";
	r->method = "CONNECT";
	r->host = "origin.test";
	r->port = 443;
	r->path = "/a";
	r->action = "git:fetch";
	r->decision = "allow";
	r->reason = "allowed";
	r->rule = "allowDomains: origin.test";
	r->addr = "127.0.0.1:443";
	r->status = 200;
	r->bytes_out = 0;
	r->bytes_in = 1234567890123;
	r->duration_ms = 15;
	r->end = "client-eof";
	r->front = "connect";
	r->orig_dst = "192.0.2.1:443";
	audit_rec_str(r, "version", "0.1.0");
	audit_rec_str(r, "error", "none");
	audit_rec_num(r, "pid", 4242);
}

static void test_key_order_values_and_omission(void **state)
{
	(void)state;
	char path[128], err[256];
	tpath(path, sizeof path, "order.jsonl");
	struct audit_log *log = open_log(path, 0, err, sizeof err);
	assert_non_null(log);

	struct audit_rec r;
	full_record(&r);
	assert_int_equal(audit_write(log, &r, AUDIT_DECISION), 1);

	audit_rec_init(&r);
	r.event = "stop";
	assert_int_equal(audit_write(log, &r, AUDIT_EVENT), 2);

	/* conn 0 and status -1 are absent; port 0 is a value.  Escaping applies to values. */
	audit_rec_init(&r);
	r.event = "request";
	r.host = "a\"b\n\xff.test";
	r.port = 0;
	r.conn = 0;
	r.status = -1;
	r.extra[0].key = "note";
	r.extra[0].value = NULL; /* skipped, the list goes on */
	r.extra[1].key = "prev"; /* a reserved key: skipped */
	r.extra[1].value = "forged";
	r.extra[2].key = "k";
	r.extra[2].value = "v";
	r.extra[3].key = "n";
	r.extra[3].value = NULL;
	r.extra[3].num = 0; /* a number, 0 included */
	assert_int_equal(audit_write(log, &r, AUDIT_DENIAL), 3);
	assert_null(audit_last_error(log));
	audit_close(log);

	struct lines l;
	read_lines(path, &l);
	assert_int_equal(l.n, 3);
	assert_string_equal(after_ts(l.line[0]),
	        ",\"seq\":1,\"event\":\"connect\",\"conn\":42,\"front\":\"connect\","
	        "\"session\":\"default\","
	        "\"client\":\"127.0.0.1:50000\",\"method\":\"CONNECT\",\"host\":\"origin.test\","
	        "\"port\":443,\"path\":\"/a\",\"action\":\"git:fetch\",\"decision\":\"allow\","
	        "\"reason\":\"allowed\",\"rule\":\"allowDomains: origin.test\","
	        "\"addr\":\"127.0.0.1:443\",\"orig_dst\":\"192.0.2.1:443\",\"status\":200,"
	        "\"bytes_out\":0,\"bytes_in\":1234567890123,\"duration_ms\":15,"
	        "\"end\":\"client-eof\",\"version\":\"0.1.0\",\"error\":\"none\",\"pid\":4242}");
	assert_string_equal(after_ts(l.line[1]), ",\"seq\":2,\"event\":\"stop\"}");
	assert_string_equal(after_ts(l.line[2]),
	        ",\"seq\":3,\"event\":\"request\",\"host\":\"a\\\"b\\n\xef\xbf\xbd.test\","
	        "\"port\":0,\"k\":\"v\",\"n\":0}");
	free_lines(&l);

	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
}

static void test_seq_counts_and_appends(void **state)
{
	(void)state;
	char path[128], err[256];
	tpath(path, sizeof path, "seq.jsonl");
	/* An existing file is appended to, never truncated. */
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"old\":1}\n", f);
	fclose(f);

	struct audit_log *log = open_log(path, 0, err, sizeof err);
	assert_non_null(log);
	struct audit_rec r;
	audit_rec_init(&r);
	r.event = "request";
	for (int i = 0; i < 20; i++)
		assert_int_equal(audit_write(log, &r, AUDIT_EVENT), (uint64_t)i + 1);
	audit_close(log);

	struct lines l;
	read_lines(path, &l);
	assert_int_equal(l.n, 21);
	assert_string_equal(l.line[0], "{\"old\":1}");
	for (int i = 1; i <= 20; i++) {
		char want[64];
		snprintf(want, sizeof want, ",\"seq\":%d,\"event\":\"request\"}", i);
		assert_string_equal(after_ts(l.line[i]), want);
		/* Not chained: no prev. */
		assert_null(strstr(l.line[i], "prev"));
	}
	free_lines(&l);
}

static void write_n(struct audit_log *log, int n, const char *host)
{
	struct audit_rec r;
	audit_rec_init(&r);
	r.event = "connect";
	r.host = host;
	r.decision = "allow";
	for (int i = 0; i < n; i++)
		assert_true(audit_write(log, &r, AUDIT_DECISION) != 0);
}

static void write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
}

static void test_chain_and_verify(void **state)
{
	(void)state;
	char path[128], err[256];
	tpath(path, sizeof path, "chain.jsonl");
	struct audit_log *log = open_log(path, 1, err, sizeof err);
	assert_non_null(log);
	write_n(log, 5, "origin.test");
	audit_close(log);

	assert_int_equal(audit_verify(path, err, sizeof err), 0);

	struct lines l;
	read_lines(path, &l);
	assert_int_equal(l.n, 5);
	/* The first line of a new file has no prev; each next one names the line before. */
	assert_null(strstr(l.line[0], "\"prev\""));
	for (size_t i = 1; i < l.n; i++) {
		char hex[65], want[80];
		sha256_hex(l.line[i - 1], strlen(l.line[i - 1]), hex);
		snprintf(want, sizeof want, ",\"prev\":\"%s\"}", hex);
		const char *p = strstr(l.line[i], ",\"prev\":");
		assert_non_null(p);
		assert_string_equal(p, want); /* prev is the last key */
	}

	/* One changed byte in line 3 breaks the link from line 4. */
	char tampered[8192];
	size_t tlen = 0;
	for (size_t i = 0; i < l.n; i++) {
		size_t n = strlen(l.line[i]);
		memcpy(tampered + tlen, l.line[i], n);
		if (i == 2) {
			char *h = memmem(tampered + tlen, n, "origin.test", 11);
			assert_non_null(h);
			h[0] = 'O';
		}
		tlen += n;
		tampered[tlen++] = '\n';
	}
	char bad[128];
	tpath(bad, sizeof bad, "tampered.jsonl");
	write_file(bad, tampered, tlen);
	assert_int_equal(audit_verify(bad, err, sizeof err), 1);
	assert_non_null(strstr(err, "line 4:"));

	/* Line 3 deleted: line 4 (now the third) no longer names its predecessor. */
	tlen = 0;
	for (size_t i = 0; i < l.n; i++) {
		if (i == 2)
			continue;
		size_t n = strlen(l.line[i]);
		memcpy(tampered + tlen, l.line[i], n);
		tlen += n;
		tampered[tlen++] = '\n';
	}
	write_file(bad, tampered, tlen);
	assert_int_equal(audit_verify(bad, err, sizeof err), 1);
	assert_non_null(strstr(err, "line 3:"));

	/* Two lines swapped. */
	tlen = 0;
	static const int order[] = {0, 2, 1, 3, 4};
	for (size_t i = 0; i < l.n; i++) {
		size_t n = strlen(l.line[order[i]]);
		memcpy(tampered + tlen, l.line[order[i]], n);
		tlen += n;
		tampered[tlen++] = '\n';
	}
	write_file(bad, tampered, tlen);
	assert_int_equal(audit_verify(bad, err, sizeof err), 1);
	assert_non_null(strstr(err, "line 2:"));

	/* A cut last line (a crash mid-write). */
	tlen = 0;
	for (size_t i = 0; i < l.n; i++) {
		size_t n = strlen(l.line[i]);
		memcpy(tampered + tlen, l.line[i], n);
		tlen += n;
		tampered[tlen++] = '\n';
	}
	write_file(bad, tampered, tlen - 10);
	assert_int_equal(audit_verify(bad, err, sizeof err), 1);
	assert_non_null(strstr(err, "line 5:"));

	/* Not JSON. */
	tlen = strlen(l.line[0]);
	memcpy(tampered, l.line[0], tlen);
	memcpy(tampered + tlen, "\nnot json\n", 10);
	write_file(bad, tampered, tlen + 10);
	assert_int_equal(audit_verify(bad, err, sizeof err), 1);
	assert_non_null(strstr(err, "line 2:"));

	/* Unreadable. */
	tpath(bad, sizeof bad, "missing.jsonl");
	assert_int_equal(audit_verify(bad, err, sizeof err), -1);
	free_lines(&l);
}

/* Writes lines (each without its newline) as a chained log: prev of each names the one before. */
static void write_chained(const char *path, const char *const *lines, size_t n)
{
	char buf[8192], hex[65];
	size_t len = 0;
	const char *prevline = NULL;
	size_t prevlen = 0;
	for (size_t i = 0; i < n; i++) {
		size_t start = len;
		size_t ln = strlen(lines[i]);
		assert_true(ln > 1 && lines[i][ln - 1] == '}');
		memcpy(buf + len, lines[i], ln - 1);
		len += ln - 1;
		if (prevline != NULL) {
			sha256_hex(prevline, prevlen, hex);
			len += (size_t)snprintf(
			        buf + len, sizeof buf - len, ",\"prev\":\"%s\"", hex);
		}
		buf[len++] = '}';
		prevline = buf + start;
		prevlen = len - start;
		buf[len++] = '\n';
	}
	write_file(path, buf, len);
}

/* verify checks seq and the numeric fields as well as the chain. */
static void test_verify_seq_and_numbers(void **state)
{
	(void)state;
	char path[128], err[256];
	tpath(path, sizeof path, "seq-verify.jsonl");
	struct {
		const char *lines[4];
		int rc;
		const char *where;
	} cases[] = {
	        {{"{\"seq\":4,\"event\":\"close\"}", "{\"seq\":5,\"event\":\"stop\"}",
	                 "{\"seq\":1,\"event\":\"start\"}", "{\"seq\":2,\"event\":\"config\"}"},
	                0, NULL},
	        /* A record between 5 and 7 was removed and the chain rebuilt around it. */
	        {{"{\"seq\":5,\"event\":\"close\"}", "{\"seq\":7,\"event\":\"close\"}", NULL}, 1,
	                "line 2: seq 7 does not follow seq 5"},
	        {{"{\"seq\":1,\"event\":\"start\"}", "{\"seq\":1,\"event\":\"start\"}",
	                 "{\"seq\":3,\"event\":\"x\"}"},
	                1, "line 3: seq 3"},
	        {{"{\"event\":\"start\"}", NULL}, 1, "line 1: no seq"},
	        {{"{\"seq\":0,\"event\":\"start\"}", NULL}, 1, "line 1: no seq"},
	        {{"{\"seq\":\"1\",\"event\":\"start\"}", NULL}, 1, "line 1: not a valid record"},
	        {{"{\"seq\":1,\"event\":\"start\",\"port\":\"443\"}", NULL}, 1, "not a number"},
	        {{"{\"seq\":1,\"event\":\"start\",\"status\":200.5}", NULL}, 1,
	                "non-negative integer"},
	        {{"{\"seq\":1,\"event\":\"start\",\"conn\":-1}", NULL}, 1, "not a number"},
	        {{"{\"seq\":1,\"seq\":2,\"event\":\"start\"}", NULL}, 1, "appears twice"},
	        {{"{\"seq\":18446744073709551616,\"event\":\"start\"}", NULL}, 1, "out of range"},
	        {{"{\"seq\":1,\"event\":7}", NULL}, 1, "\"event\" is not a string"},
	        /* Extras are free: a string pid of an older version is fine. */
	        {{"{\"seq\":1,\"event\":\"start\",\"pid\":\"12\"}", NULL}, 0, NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t n = 0;
		while (n < 4 && cases[i].lines[n] != NULL)
			n++;
		write_chained(path, cases[i].lines, n);
		int rc = audit_verify(path, err, sizeof err);
		if (rc != cases[i].rc || (cases[i].where && strstr(err, cases[i].where) == NULL)) {
			print_error("case %zu: rc %d, %s\n", i, rc, err);
			fail();
		}
	}
}

static void test_chain_continues_when_appending(void **state)
{
	(void)state;
	char path[128], err[256];
	tpath(path, sizeof path, "append.jsonl");
	struct audit_log *log = open_log(path, 1, err, sizeof err);
	assert_non_null(log);
	write_n(log, 3, "origin.test");
	audit_close(log);

	/* A restarted process: seq starts again at 1, the chain goes on from the file. */
	log = open_log(path, 1, err, sizeof err);
	assert_non_null(log);
	write_n(log, 2, "other.test");
	audit_close(log);

	assert_int_equal(audit_verify(path, err, sizeof err), 0);
	struct lines l;
	read_lines(path, &l);
	assert_int_equal(l.n, 5);
	assert_non_null(strstr(l.line[3], ",\"seq\":1,"));
	assert_non_null(strstr(l.line[3], "\"prev\":"));
	free_lines(&l);

	/* A file whose last line was cut: the new line starts on its own line; verify then
	 * reports the cut line. */
	tpath(path, sizeof path, "cut.jsonl");
	static const char cut[] = "{\"seq\":1,\"event\":\"start\"}\n{\"b\":";
	write_file(path, cut, sizeof cut - 1);
	log = open_log(path, 1, err, sizeof err);
	assert_non_null(log);
	write_n(log, 1, "origin.test");
	audit_close(log);
	read_lines(path, &l);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.line[1], "{\"b\":");
	assert_non_null(strstr(l.line[2], "\"prev\":"));
	free_lines(&l);
	assert_int_equal(audit_verify(path, err, sizeof err), 1);
	assert_non_null(strstr(err, "line 2:"));
}

static void test_reopen_after_rename(void **state)
{
	(void)state;
	char path[128], rotated[128], err[256];
	tpath(path, sizeof path, "rot.jsonl");
	tpath(rotated, sizeof rotated, "rot.jsonl.1");
	struct audit_log *log = open_log(path, 1, err, sizeof err);
	assert_non_null(log);
	write_n(log, 2, "before.test");
	assert_int_equal(rename(path, rotated), 0);
	/* Until the reopen, lines still go to the renamed file. */
	write_n(log, 1, "before.test");
	assert_int_equal(audit_reopen(log), 0);
	write_n(log, 2, "after.test");
	audit_close(log);

	struct lines a, b;
	read_lines(rotated, &a);
	read_lines(path, &b);
	assert_int_equal(a.n, 3);
	assert_int_equal(b.n, 2);
	assert_non_null(strstr(b.line[0], "after.test"));
	assert_non_null(strstr(b.line[0], ",\"seq\":4,"));
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	/* Each file verifies on its own, and joined in order they are one chain. */
	assert_int_equal(audit_verify(rotated, err, sizeof err), 0);
	assert_int_equal(audit_verify(path, err, sizeof err), 0);
	char hex[65], want[80];
	sha256_hex(a.line[2], strlen(a.line[2]), hex);
	snprintf(want, sizeof want, ",\"prev\":\"%s\"}", hex);
	assert_string_equal(strstr(b.line[0], ",\"prev\":"), want);
	free_lines(&a);
	free_lines(&b);
}

static void test_failed_write_is_kept_and_retried(void **state)
{
	(void)state;
	char link[128], real[128], err[256];
	tpath(link, sizeof link, "log.jsonl");
	tpath(real, sizeof real, "real.jsonl");
	assert_int_equal(symlink("/dev/full", link), 0);
	struct audit_log *log = open_log(link, 1, err, sizeof err);
	assert_non_null(log);

	/* Events that cannot be written are kept, with their seq, for later. */
	struct audit_rec r;
	audit_rec_init(&r);
	r.event = "close";
	r.host = "lost.test";
	assert_int_equal(audit_write(log, &r, AUDIT_EVENT), 1);
	const char *e = audit_last_error(log);
	assert_non_null(e);
	assert_non_null(strstr(e, strerror(ENOSPC)));
	r.host = "lost2.test";
	assert_int_equal(audit_write(log, &r, AUDIT_EVENT), 2);
	assert_true(audit_backlog(log) > 0);

	/* The disk "recovers": the pending lines come first, in order, chained. */
	assert_int_equal(unlink(link), 0);
	assert_int_equal(symlink("real.jsonl", link), 0);
	assert_int_equal(audit_reopen(log), 0);
	r.event = "connect";
	r.host = "kept.test";
	assert_int_equal(audit_write(log, &r, AUDIT_DECISION), 4);
	assert_null(audit_last_error(log));
	assert_int_equal(audit_dropped(log), 0);
	assert_int_equal(audit_backlog(log), 0);
	audit_close(log);

	struct lines l;
	read_lines(real, &l);
	assert_int_equal(l.n, 4);
	assert_non_null(strstr(l.line[0], ",\"seq\":1,\"event\":\"close\",\"host\":\"lost.test\""));
	assert_non_null(
	        strstr(l.line[1], ",\"seq\":2,\"event\":\"close\",\"host\":\"lost2.test\""));
	/* The recovery says what happened meanwhile (nothing refused or dropped here). */
	assert_non_null(
	        strstr(l.line[2], ",\"seq\":3,\"event\":\"audit\",\"error\":\"cannot write "));
	assert_non_null(strstr(l.line[2], "\"refused\":0,\"dropped\":0,"));
	assert_non_null(
	        strstr(l.line[3], ",\"seq\":4,\"event\":\"connect\",\"host\":\"kept.test\""));
	free_lines(&l);
	assert_int_equal(audit_verify(real, err, sizeof err), 0);
}

/* Reads whatever the non-blocking pipe holds into buf at *len. */
static void drain(int fd, char *buf, size_t cap, size_t *len)
{
	for (;;) {
		ssize_t n = read(fd, buf + *len, cap - *len);
		if (n <= 0)
			return;
		*len += (size_t)n;
	}
}

/* A reader that stalls: writes end short and then with EAGAIN.  Nothing formatted is lost or
 * split between lines, the backlog is bounded, and what is dropped stays out of seq and the
 * chain. */
static void test_short_writes_and_full_pending(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_true(fcntl(p[0], F_SETFL, O_NONBLOCK) != -1);
	fcntl(p[1], F_SETPIPE_SZ, 4096);
	size_t cap = 4 * AUDIT_PENDING_MAX;
	char *got = malloc(cap);
	assert_non_null(got);
	size_t glen = 0;
	size_t big = 60 * 1024;
	char *longpath = malloc(big + 1);
	assert_non_null(longpath);
	memset(longpath, 'p', big);
	longpath[big] = '\0';

	fflush(stdout);
	int saved = dup(1);
	assert_true(saved != -1);
	assert_int_equal(dup2(p[1], 1), 1);
	char err[256];
	struct audit_log *log = open_log("-", 1, err, sizeof err);
	int writes = 0, dropped_at = -1, wait_fd = -1;
	uint64_t dropped = 0;
	if (log != NULL) {
		struct audit_rec r;
		audit_rec_init(&r);
		r.event = "close";
		r.path = longpath;
		/* 4 MiB of waiting lines is about 70 of these; 100 must hit the bound. */
		for (int i = 0; i < 100; i++, writes++) {
			audit_write(log, &r, AUDIT_EVENT);
			if (audit_dropped(log) > 0 && dropped_at == -1)
				dropped_at = i;
		}
		wait_fd = audit_wait_fd(log);
		/* The reader catches up: each flush now gets further. */
		for (int i = 0; i < 100000 && audit_backlog(log) > 0; i++) {
			drain(p[0], got, cap, &glen);
			audit_flush(log);
		}
		drain(p[0], got, cap, &glen);
		dropped = audit_dropped(log);
		audit_close(log);
		drain(p[0], got, cap, &glen);
	}
	dup2(saved, 1);
	close(saved);
	close(p[0]);
	close(p[1]);
	free(longpath);
	assert_non_null(log);

	assert_true(dropped_at > 60);
	assert_true(dropped > 0);
	assert_true(wait_fd != -1);

	/* Every line that was not dropped arrived whole, in seq order, chained. */
	char path[128];
	tpath(path, sizeof path, "pipe.jsonl");
	write_file(path, got, glen);
	assert_int_equal(audit_verify(path, err, sizeof err), 0);
	struct lines l;
	read_lines(path, &l);
	/* The last line says how many were dropped. */
	assert_int_equal(l.n, (size_t)writes - dropped + 1);
	char want[64];
	snprintf(want, sizeof want, "\"refused\":0,\"dropped\":%llu,", (unsigned long long)dropped);
	assert_non_null(strstr(l.line[l.n - 1], want));
	for (size_t i = 0; i < l.n; i++) {
		char seqwant[32];
		snprintf(seqwant, sizeof seqwant, ",\"seq\":%zu,", i + 1);
		assert_non_null(strstr(l.line[i], seqwant));
	}
	free_lines(&l);
	free(got);
}

static void test_long_fields_are_cut(void **state)
{
	(void)state;
	char path[128], err[256];
	tpath(path, sizeof path, "long.jsonl");
	struct audit_log *log = open_log(path, 1, err, sizeof err);
	assert_non_null(log);

	size_t big = 100 * 1024;
	char *longpath = malloc(big + 1);
	char *longrule = malloc(big + 1);
	assert_non_null(longpath);
	assert_non_null(longrule);
	/* Quotes double in size when escaped: the cut must still land on whole escapes. */
	for (size_t i = 0; i < big; i++) {
		longpath[i] = (char)(i % 7 == 0 ? '"' : 'p');
		longrule[i] = 'r';
	}
	longpath[big] = longrule[big] = '\0';

	struct audit_rec r;
	audit_rec_init(&r);
	r.event = "request";
	r.path = longpath;
	r.rule = longrule;
	r.status = 403;
	r.end = "done";
	r.extra[0].key = "error";
	r.extra[0].value = longrule;
	assert_int_equal(audit_write(log, &r, AUDIT_DENIAL), 1);
	write_n(log, 1, "next.test");
	audit_close(log);
	free(longpath);
	free(longrule);

	struct lines l;
	read_lines(path, &l);
	assert_int_equal(l.n, 2);
	size_t len = strlen(l.line[0]);
	assert_true(len + 1 <= AUDIT_LINE_MAX);
	assert_true(len > AUDIT_LINE_MAX / 2); /* cut, not dropped */
	const char *prev, *why;
	size_t prevlen;
	assert_int_equal(audit_json_check_object(l.line[0], len, &prev, &prevlen, &why), 0);
	/* The path is cut with the marker; the fields after it are still there. */
	assert_non_null(strstr(l.line[0], "\xe2\x80\xa6truncated\",\"rule\":\"rrr"));
	assert_non_null(strstr(l.line[0], "\xe2\x80\xa6truncated\",\"status\":403,\"end\":\"done\","
	                                  "\"error\":\"rrr"));
	assert_int_equal(audit_verify(path, err, sizeof err), 0);
	free_lines(&l);
}

static void test_stdout(void **state)
{
	(void)state;
	char path[128], err[256];
	tpath(path, sizeof path, "stdout.jsonl");
	fflush(stdout);
	int saved = dup(1);
	assert_true(saved != -1);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd != -1);
	assert_int_equal(dup2(fd, 1), 1);
	close(fd);

	struct audit_log *log = open_log("-", 0, err, sizeof err);
	int ok = log != NULL;
	if (ok) {
		write_n(log, 2, "out.test");
		ok = audit_reopen(log) == 0;
		audit_close(log);
	}
	/* audit_close must not have closed fd 1. */
	int still_open = fcntl(1, F_GETFD) != -1;
	dup2(saved, 1);
	close(saved);
	assert_true(ok);
	assert_true(still_open);

	struct lines l;
	read_lines(path, &l);
	assert_int_equal(l.n, 2);
	assert_non_null(
	        strstr(l.line[1], ",\"seq\":2,\"event\":\"connect\",\"host\":\"out.test\""));
	free_lines(&l);
}

static void test_open_errors(void **state)
{
	(void)state;
	char err[256] = "";
	assert_null(open_log("/nonexistent-egressd-dir/audit.jsonl", 0, err, sizeof err));
	assert_non_null(strstr(err, "/nonexistent-egressd-dir/audit.jsonl"));
	assert_non_null(strstr(err, strerror(ENOENT)));
	audit_close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_key_order_values_and_omission),
	        cmocka_unit_test(test_seq_counts_and_appends),
	        cmocka_unit_test(test_chain_and_verify),
	        cmocka_unit_test(test_verify_seq_and_numbers),
	        cmocka_unit_test(test_chain_continues_when_appending),
	        cmocka_unit_test(test_reopen_after_rename),
	        cmocka_unit_test(test_failed_write_is_kept_and_retried),
	        cmocka_unit_test(test_long_fields_are_cut),
	        cmocka_unit_test(test_short_writes_and_full_pending),
	        cmocka_unit_test(test_stdout),
	        cmocka_unit_test(test_open_errors),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
