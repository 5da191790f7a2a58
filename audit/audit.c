/* The audit log writer (docs/design.md 7): formatting, the hash chain, write/retry, reopen, verify.
 *
 * Every record is formatted straight into one buffer held by the log, behind any bytes a failed
 * write left pending, and the whole buffer goes out in one write(2).  Nothing is allocated per
 * record. */
#include "audit/audit.h"
#include "audit/json.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SHA256_HEX 64

/* The marker that ends a cut string field: U+2026 then "truncated". */
static const char trunc_mark[] = "\xe2\x80\xa6truncated";
#define TRUNC_MARK_LEN (sizeof trunc_mark - 1)

/* Room kept free for each field that may still follow: enough for any key we write, a number,
 * or a short cut string with its marker. */
#define FIELD_RESERVE 128
/* Room for ',"prev":"<64 hex>"' and the closing "}\n". */
#define TAIL_RESERVE 80
/* Escaped extra keys longer than this are cut (they are program constants, never user text). */
#define EXTRA_KEY_MAX 48

/* Fields that may follow the one being written, at most: the string and number fields of
 * struct audit_rec after "event" plus the extras. */
#define FIELDS_MAX (20 + AUDIT_EXTRA_MAX)

struct audit_log {
	int fd;                    /* the open file, or 1 for "-" */
	int is_stdout;             /* fd is standard output: never closed or reopened */
	int chain;                 /* add "prev" to every line */
	char *path;                /* what audit_reopen opens again */
	uint64_t seq;              /* seq of the last formatted record */
	int have_prev;             /* prev holds the hash of the line before the next one */
	char prev[SHA256_HEX + 1]; /* SHA-256 hex of the last line, NUL-terminated */
	int need_nl;               /* the file ends in a cut line: end it before our first line */
	EVP_MD *md;                /* SHA-256, fetched once */
	EVP_MD_CTX *mdctx;         /* reused for every line */
	char *out;                 /* pending bytes, then the line being formatted */
	size_t out_len;            /* bytes of out waiting to be written */
	uint64_t dropped;          /* records refused because the pending buffer was full */
	int has_error;             /* err holds the last write error */
	char err[256];             /* the last write error text */
	time_t ts_sec;             /* the second ts_text was formatted for */
	char ts_text[24];          /* "YYYY-MM-DDTHH:MM:SS" of ts_sec */
};

#define OUT_CAP (AUDIT_PENDING_MAX + 1 + AUDIT_LINE_MAX)

void audit_rec_init(struct audit_rec *r)
{
	memset(r, 0, sizeof *r);
	r->port = -1;
	r->status = -1;
	r->bytes_out = -1;
	r->bytes_in = -1;
	r->duration_ms = -1;
}

/* Formats "what path: strerror(errnum)" (errnum 0: no strerror part) into err, if any. */
static void set_err(char *err, size_t errlen, const char *what, const char *path, int errnum)
{
	if (err == NULL || errlen == 0)
		return;
	if (errnum != 0)
		snprintf(err, errlen, "%s %s: %s", what, path, strerror(errnum));
	else
		snprintf(err, errlen, "%s %s", what, path);
}

/* Records a write-side error for audit_last_error. */
static void log_err(struct audit_log *log, const char *what, int errnum)
{
	log->has_error = 1;
	set_err(log->err, sizeof log->err, what, log->is_stdout ? "standard output" : log->path,
	        errnum);
}

/* Hex SHA-256 of p[0..len) into hex (65 bytes).  0 or -1 (OpenSSL failure). */
static int sha256_hex(EVP_MD_CTX *ctx, const EVP_MD *md, const void *p, size_t len, char *hex)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dlen = 0;
	if (EVP_DigestInit_ex2(ctx, md, NULL) != 1 || EVP_DigestUpdate(ctx, p, len) != 1 ||
	        EVP_DigestFinal_ex(ctx, d, &dlen) != 1 || dlen != 32)
		return -1;
	for (unsigned i = 0; i < 32; i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 0xf];
	}
	hex[SHA256_HEX] = '\0';
	return 0;
}

/* Reads the end of the regular file fd to continue the chain from its last line.  Sets
 * have_prev/prev/need_nl when the file has content; leaves them alone for an empty file or a
 * non-regular one (a FIFO, a terminal).  0, or -1 with err set. */
static int load_tail(struct audit_log *log, int fd, const char *path, char *err, size_t errlen)
{
	struct stat st;
	if (fstat(fd, &st) == -1) {
		set_err(err, errlen, "cannot stat", path, errno);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		/* Nothing to end or continue in this file; an in-memory prev (from the file
		 * before a rotation) stays. */
		log->need_nl = 0;
		return 0;
	}
	size_t size = (size_t)st.st_size;
	/* A line we wrote is at most AUDIT_LINE_MAX bytes plus its newline, and the newline
	 * before it marks its start. */
	size_t win = size < AUDIT_LINE_MAX + 2 ? size : AUDIT_LINE_MAX + 2;
	char *buf = malloc(win);
	if (buf == NULL) {
		set_err(err, errlen, "out of memory reading", path, 0);
		return -1;
	}
	size_t got = 0;
	while (got < win) {
		ssize_t n = pread(fd, buf + got, win - got, (off_t)(size - win + got));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			set_err(err, errlen, "cannot read", path, errno);
			free(buf);
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (got != win) {
		set_err(err, errlen, "file shrank while reading", path, 0);
		free(buf);
		return -1;
	}
	size_t end = win;
	int cut = buf[win - 1] != '\n';
	if (!cut)
		end--;
	size_t start = end;
	while (start > 0 && buf[start - 1] != '\n')
		start--;
	if (start == 0 && win < size) {
		set_err(err, errlen,
		        "last line is longer than 64 KiB, cannot continue the chain of", path, 0);
		free(buf);
		return -1;
	}
	int rc = sha256_hex(log->mdctx, log->md, buf + start, end - start, log->prev);
	free(buf);
	if (rc == -1) {
		set_err(err, errlen, "SHA-256 failed for", path, 0);
		return -1;
	}
	log->have_prev = 1;
	log->need_nl = cut;
	return 0;
}

/* Opens path for appending, creating it mode 0600; the fd or -1 with errno. */
static int open_file(const char *path, int chain)
{
	/* Reading is needed only to find the last line for the chain. */
	int flags = (chain ? O_RDWR : O_WRONLY) | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY;
	int fd;
	do
		fd = open(path, flags, 0600);
	while (fd == -1 && errno == EINTR);
	return fd;
}

struct audit_log *audit_open(const char *path, int chain, char *err, size_t errlen)
{
	struct audit_log *log = calloc(1, sizeof *log);
	if (log == NULL) {
		set_err(err, errlen, "out of memory opening", path, 0);
		return NULL;
	}
	log->fd = -1;
	log->chain = chain != 0;
	log->ts_sec = (time_t)-1;
	log->path = strdup(path);
	log->out = malloc(OUT_CAP);
	log->md = EVP_MD_fetch(NULL, "SHA256", NULL);
	log->mdctx = EVP_MD_CTX_new();
	if (log->path == NULL || log->out == NULL || log->md == NULL || log->mdctx == NULL) {
		set_err(err, errlen, "cannot set up (out of memory or no SHA-256)", path, 0);
		goto fail;
	}
	if (strcmp(path, "-") == 0) {
		log->fd = 1;
		log->is_stdout = 1;
		return log;
	}
	log->fd = open_file(path, log->chain);
	if (log->fd == -1) {
		set_err(err, errlen, "cannot open", path, errno);
		goto fail;
	}
	if (log->chain && load_tail(log, log->fd, path, err, errlen) == -1)
		goto fail;
	return log;
fail:
	if (log->fd != -1 && !log->is_stdout)
		close(log->fd);
	log->fd = -1;
	audit_close(log);
	return NULL;
}

/* The line being formatted: buf[pos..lim) is free; lim already leaves TAIL_RESERVE. */
struct fmt {
	char *buf;
	size_t pos;
	size_t lim;
	int left; /* fields that may still follow the current one */
};

/* Appends n bytes of s to the line. */
static void put(struct fmt *f, const char *s, size_t n)
{
	/* Budgets below keep every write inside lim; this only guards against a mistake. */
	if (n > f->lim - f->pos)
		n = f->lim - f->pos;
	memcpy(f->buf + f->pos, s, n);
	f->pos += n;
}

/* Appends ,"key": for one of our own (plain ASCII) key names. */
static void put_key(struct fmt *f, const char *key)
{
	f->buf[f->pos++] = ',';
	f->buf[f->pos++] = '"';
	put(f, key, strlen(key));
	f->buf[f->pos++] = '"';
	f->buf[f->pos++] = ':';
}

/* Appends v in decimal. */
static void put_u64(struct fmt *f, uint64_t v)
{
	char tmp[24];
	size_t i = sizeof tmp;
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	put(f, tmp + i, sizeof tmp - i);
}

/* Appends a number field, or nothing when v is negative (absent). */
static void put_num(struct fmt *f, const char *key, int64_t v)
{
	f->left--;
	if (v < 0)
		return;
	put_key(f, key);
	put_u64(f, (uint64_t)v);
}

/* Writes the escaped s (its quotes included) into at most room bytes, cutting it with the
 * marker when it does not fit. */
static void put_escaped(struct fmt *f, const char *s, size_t room)
{
	f->buf[f->pos++] = '"';
	room -= 2; /* the quotes */
	size_t need = audit_json_escape(f->buf + f->pos, room + 1, s, strlen(s));
	if (need <= room) {
		f->pos += need;
	} else {
		size_t w =
		        audit_json_escape(f->buf + f->pos, room - TRUNC_MARK_LEN + 1, s, strlen(s));
		(void)w;
		/* The escaper cuts on whole units, so what it wrote may be shorter than asked. */
		f->pos += strlen(f->buf + f->pos);
		memcpy(f->buf + f->pos, trunc_mark, TRUNC_MARK_LEN);
		f->pos += TRUNC_MARK_LEN;
	}
	f->buf[f->pos++] = '"';
}

/* Appends a string field, or nothing when v is NULL (absent), leaving the reserve for the
 * fields that may follow. */
static void put_str(struct fmt *f, const char *key, const char *v)
{
	f->left--;
	if (v == NULL)
		return;
	put_key(f, key);
	size_t room = f->lim - f->pos - (size_t)f->left * FIELD_RESERVE;
	put_escaped(f, v, room);
}

static const char *const std_keys[] = {"ts", "seq", "event", "conn", "session", "client", "method",
        "host", "port", "path", "action", "decision", "reason", "rule", "addr", "status",
        "bytes_out", "bytes_in", "duration_ms", "end", "prev"};

/* Whether k is one of the docs/design.md keys, which extras may not reuse. */
static int is_std_key(const char *k)
{
	for (size_t i = 0; i < sizeof std_keys / sizeof std_keys[0]; i++)
		if (strcmp(k, std_keys[i]) == 0)
			return 1;
	return 0;
}

/* Opens the object with its ts; the text of the second is reused within that second. */
static void put_ts(struct audit_log *log, struct fmt *f)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	if (now.tv_sec != log->ts_sec) {
		struct tm tm;
		gmtime_r(&now.tv_sec, &tm);
		if (strftime(log->ts_text, sizeof log->ts_text, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
			memcpy(log->ts_text, "0000-00-00T00:00:00", 20);
		log->ts_sec = now.tv_sec;
	}
	unsigned ms = (unsigned)(now.tv_nsec / 1000000);
	char frac[6] = {'.', (char)('0' + ms / 100), (char)('0' + ms / 10 % 10),
	        (char)('0' + ms % 10), 'Z', '"'};
	put(f, "{\"ts\":\"", 7);
	put(f, log->ts_text, strlen(log->ts_text));
	put(f, frac, sizeof frac);
}

/* Formats rec as one line at out[out_len..], chains it and makes it pending.  0, or -1 when the
 * hash failed (nothing is kept). */
static int format_line(struct audit_log *log, const struct audit_rec *rec)
{
	size_t base = log->out_len;
	if (log->need_nl)
		log->out[base++] = '\n';
	struct fmt f = {log->out, base, base + AUDIT_LINE_MAX - TAIL_RESERVE, FIELDS_MAX};
	uint64_t seq = log->seq + 1;

	put_ts(log, &f);
	f.buf[f.pos++] = ',';
	put(&f, "\"seq\":", 6);
	put_u64(&f, seq);
	put_str(&f, "event", rec->event);
	f.left--;
	if (rec->conn != 0) {
		put_key(&f, "conn");
		put_u64(&f, rec->conn);
	}
	put_str(&f, "session", rec->session);
	put_str(&f, "client", rec->client);
	put_str(&f, "method", rec->method);
	put_str(&f, "host", rec->host);
	put_num(&f, "port", rec->port);
	put_str(&f, "path", rec->path);
	put_str(&f, "action", rec->action);
	put_str(&f, "decision", rec->decision);
	put_str(&f, "reason", rec->reason);
	put_str(&f, "rule", rec->rule);
	put_str(&f, "addr", rec->addr);
	put_num(&f, "status", rec->status);
	put_num(&f, "bytes_out", rec->bytes_out);
	put_num(&f, "bytes_in", rec->bytes_in);
	put_num(&f, "duration_ms", rec->duration_ms);
	put_str(&f, "end", rec->end);
	for (int i = 0; i < AUDIT_EXTRA_MAX && rec->extra[i].key != NULL; i++) {
		const char *k = rec->extra[i].key, *v = rec->extra[i].value;
		f.left--;
		/* A second "prev" or "seq" would make the record ambiguous to readers. */
		if (v == NULL || is_std_key(k))
			continue;
		char kbuf[EXTRA_KEY_MAX + 1];
		audit_json_escape(kbuf, sizeof kbuf, k, strlen(k));
		f.buf[f.pos++] = ',';
		f.buf[f.pos++] = '"';
		put(&f, kbuf, strlen(kbuf));
		f.buf[f.pos++] = '"';
		f.buf[f.pos++] = ':';
		size_t room = f.lim - f.pos - (size_t)f.left * FIELD_RESERVE;
		put_escaped(&f, v, room);
	}
	/* The tail may use the reserve kept out of lim. */
	if (log->chain && log->have_prev) {
		memcpy(f.buf + f.pos, ",\"prev\":\"", 9);
		memcpy(f.buf + f.pos + 9, log->prev, SHA256_HEX);
		f.buf[f.pos + 9 + SHA256_HEX] = '"';
		f.pos += 10 + SHA256_HEX;
	}
	f.buf[f.pos++] = '}';
	size_t line_start = log->need_nl ? log->out_len + 1 : log->out_len;
	if (log->chain) {
		if (sha256_hex(log->mdctx, log->md, f.buf + line_start, f.pos - line_start,
		            log->prev) == -1) {
			log_err(log, "SHA-256 failed for", 0);
			return -1;
		}
		log->have_prev = 1;
	}
	f.buf[f.pos++] = '\n';
	log->seq = seq;
	log->need_nl = 0;
	log->out_len = f.pos;
	return 0;
}

/* Writes everything pending, retrying on EINTR and short writes.  0 when nothing is left, -1
 * (error recorded) when some bytes stay pending. */
static int flush(struct audit_log *log)
{
	size_t off = 0;
	while (off < log->out_len) {
		ssize_t n = write(log->fd, log->out + off, log->out_len - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 || n == 0) {
			log_err(log, "cannot write", n == 0 ? EIO : errno);
			break;
		}
		off += (size_t)n;
	}
	if (off > 0) {
		memmove(log->out, log->out + off, log->out_len - off);
		log->out_len -= off;
	}
	if (log->out_len > 0)
		return -1;
	log->has_error = 0;
	return 0;
}

int audit_write(struct audit_log *log, const struct audit_rec *rec)
{
	/* Room for one more line after what is pending; when a long outage filled the buffer,
	 * give the old lines one more chance before refusing this one. */
	if (OUT_CAP - log->out_len < AUDIT_LINE_MAX + 1 && flush(log) == -1 &&
	        OUT_CAP - log->out_len < AUDIT_LINE_MAX + 1) {
		log->dropped++;
		log_err(log, "pending buffer full, record dropped for", 0);
		return -1;
	}
	if (format_line(log, rec) == -1)
		return -1;
	return flush(log);
}

int audit_reopen(struct audit_log *log)
{
	if (log->is_stdout)
		return 0;
	/* Lines already formatted belong after the old file's content. */
	if (log->out_len > 0)
		flush(log);
	int fd = open_file(log->path, log->chain);
	if (fd == -1) {
		log_err(log, "cannot reopen", errno);
		return -1;
	}
	/* A fresh (rotated) file continues the chain from the old file's last line, so the two
	 * files verify as one when joined.  A file that already has lines continues from its own
	 * last line so that it verifies on its own, unless lines of ours are still pending: their
	 * prev is already fixed. */
	if (log->chain && log->out_len == 0) {
		char e[sizeof log->err];
		if (load_tail(log, fd, log->path, e, sizeof e) == -1) {
			log->has_error = 1;
			memcpy(log->err, e, sizeof e);
			close(fd);
			return -1;
		}
	}
	close(log->fd);
	log->fd = fd;
	return 0;
}

const char *audit_last_error(const struct audit_log *log)
{
	return log->has_error ? log->err : NULL;
}

uint64_t audit_dropped(const struct audit_log *log)
{
	return log->dropped;
}

void audit_close(struct audit_log *log)
{
	if (log == NULL)
		return;
	if (log->out_len > 0 && log->fd != -1)
		flush(log);
	if (!log->is_stdout && log->fd != -1) {
		fsync(log->fd);
		close(log->fd);
	}
	EVP_MD_CTX_free(log->mdctx);
	EVP_MD_free(log->md);
	free(log->out);
	free(log->path);
	free(log);
}

/* Whether p[0..n) is 64 lower-case hex digits. */
static int is_hex64(const char *p, size_t n)
{
	if (n != SHA256_HEX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return 0;
	return 1;
}

int audit_verify(const char *path, char *err, size_t errlen)
{
	FILE *fp = fopen(path, "re");
	if (fp == NULL) {
		set_err(err, errlen, "cannot open", path, errno);
		return -1;
	}
	EVP_MD *md = EVP_MD_fetch(NULL, "SHA256", NULL);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	char *line = NULL;
	size_t cap = 0;
	char prevhash[SHA256_HEX + 1] = "";
	unsigned long lineno = 0;
	int rc = 0;
	if (md == NULL || ctx == NULL) {
		set_err(err, errlen, "cannot set up SHA-256 to verify", path, 0);
		rc = -1;
		goto out;
	}
	for (;;) {
		errno = 0;
		ssize_t n = getline(&line, &cap, fp);
		if (n == -1) {
			if (ferror(fp)) {
				set_err(err, errlen, "cannot read", path, errno);
				rc = -1;
			}
			break;
		}
		lineno++;
		size_t len = (size_t)n;
		if (line[len - 1] != '\n') {
			snprintf(err, errlen, "line %lu: no newline at the end (a cut write)",
			        lineno);
			rc = 1;
			break;
		}
		len--;
		const char *prev, *why;
		size_t prevlen;
		if (audit_json_check_object(line, len, &prev, &prevlen, &why) == -1) {
			snprintf(err, errlen, "line %lu: not a valid JSON object: %s", lineno, why);
			rc = 1;
			break;
		}
		if (prev != NULL && !is_hex64(prev, prevlen)) {
			snprintf(err, errlen, "line %lu: prev is not a SHA-256 hex digest", lineno);
			rc = 1;
			break;
		}
		/* The first line's prev names a line in an earlier (rotated) file: it cannot be
		 * checked here.  Every later line must name the line before it. */
		if (lineno > 1 && prev == NULL) {
			snprintf(err, errlen, "line %lu: no prev (the log is not chained)", lineno);
			rc = 1;
			break;
		}
		if (lineno > 1 && memcmp(prev, prevhash, SHA256_HEX) != 0) {
			snprintf(err, errlen,
			        "line %lu: prev does not match line %lu (a line was changed, "
			        "inserted or removed)",
			        lineno, lineno - 1);
			rc = 1;
			break;
		}
		if (sha256_hex(ctx, md, line, len, prevhash) == -1) {
			set_err(err, errlen, "SHA-256 failed verifying", path, 0);
			rc = -1;
			break;
		}
	}
out:
	free(line);
	EVP_MD_CTX_free(ctx);
	EVP_MD_free(md);
	fclose(fp);
	if (rc == 0 && err != NULL && errlen > 0)
		snprintf(err, errlen, "%lu lines, chain intact", lineno);
	return rc;
}
