/* The audit log writer (docs/design.md 7, docs/audit.md): formatting, the hash chain, the
 * backlog, writing without blocking, failing closed, reopen.
 *
 * Records are formatted straight into one buffer held by the log, behind the bytes still waiting
 * (the backlog, out[head..tail)), and written from there.  Nothing is allocated per record.  A
 * decision is formatted at the tail before it is known to be taken: the seq, the chain's hash
 * and the tail move only when it is, so a refused decision leaves no trace. */
#include "audit/audit.h"
#include "audit/internal.h"
#include "audit/json.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
 * struct audit_rec after "event" plus the extras, with room to spare. */
#define FIELDS_MAX (22 + AUDIT_EXTRA_MAX)

/* The buffer: the largest backlog, one line formatted behind it, and its leading newline. */
#define OUT_CAP (AUDIT_PENDING_MAX + 2 * AUDIT_LINE_MAX + 2)
/* After a backlog drained, pages of the buffer beyond this are handed back to the kernel. */
#define OUT_KEEP (256 * 1024)

/* How records reach the target. */
enum audit_target {
	TARGET_FILE = 0, /* a regular file or block device: write(2), synchronous */
	TARGET_STREAM,   /* a pipe, FIFO, terminal or other character device: a private
	                    non-blocking description */
	TARGET_SOCKET,   /* a socket (standard output under systemd): send(MSG_DONTWAIT) */
};

struct audit_log {
	int fd;                          /* where records go */
	enum audit_target target;        /* how they are written there */
	int own_fd;                      /* fd was opened here (closed by reopen and close) */
	int is_stdout;                   /* path is "-": never reopened */
	char *path;                      /* what audit_reopen opens again */
	struct audit_opts opts;          /* chain, fsync, callbacks */
	uint64_t seq;                    /* seq of the last record taken */
	int have_prev;                   /* prev holds the hash of the line before the next one */
	char prev[AUDIT_SHA256_HEX + 1]; /* SHA-256 hex of the last line, NUL-terminated */
	int need_nl;       /* the file ends in a cut line: end it before our first line */
	EVP_MD *md;        /* SHA-256, fetched once */
	EVP_MD_CTX *mdctx; /* reused for every line */
	char *out;         /* the backlog out[head..tail), then the line being formatted */
	size_t head, tail;
	size_t hiwat;     /* the highest tail since the buffer was last trimmed */
	int mid_line;     /* out[head] is inside a line whose start was written */
	int hard;         /* the last write failed with an error other than EAGAIN */
	int hard_errno;   /* that error */
	int blocked;      /* the last write got EAGAIN: waiting for writability */
	int refusing;     /* a stream's backlog reached AUDIT_BACKLOG_MAX */
	int sync_failing; /* the last fdatasync failed (as last polled) */
	int sync_errno;
	int failing;           /* the notice said writing fails, and recovery is not yet said */
	char fail_why[256];    /* what failed, for the recovery record */
	char fail_since[32];   /* ts of the failure */
	uint64_t refused;      /* decisions refused since audit_open */
	uint64_t dropped;      /* denials and events dropped since audit_open */
	uint64_t refused_last; /* the counters when writing last worked again */
	uint64_t dropped_last;
	int wake_fd;             /* what the wake callback last reported: audit_wait_fd ... */
	int wake_retry;          /* ... and whether a retry was asked */
	int has_error;           /* err holds the last write error */
	char err[256];           /* the last write error text */
	time_t ts_sec;           /* the second ts_text was formatted for */
	char ts_text[24];        /* "YYYY-MM-DDTHH:MM:SS" of ts_sec */
	struct audit_sync *sync; /* the fsync thread, or NULL */
};

void audit_rec_init(struct audit_rec *r)
{
	memset(r, 0, sizeof *r);
	r->port = -1;
	r->status = -1;
	r->bytes_out = -1;
	r->bytes_in = -1;
	r->duration_ms = -1;
	for (int i = 0; i < AUDIT_EXTRA_MAX; i++)
		r->extra[i].num = -1;
}

/* The first free extra slot, or NULL. */
static int free_extra(struct audit_rec *r)
{
	for (int i = 0; i < AUDIT_EXTRA_MAX; i++)
		if (r->extra[i].key == NULL)
			return i;
	return -1;
}

int audit_rec_str(struct audit_rec *r, const char *key, const char *value)
{
	int i = free_extra(r);
	if (i == -1)
		return -1;
	r->extra[i].key = key;
	r->extra[i].value = value;
	r->extra[i].num = -1;
	return 0;
}

int audit_rec_num(struct audit_rec *r, const char *key, int64_t value)
{
	int i = free_extra(r);
	if (i == -1)
		return -1;
	r->extra[i].key = key;
	r->extra[i].value = NULL;
	r->extra[i].num = value;
	return 0;
}

void audit_set_err(char *err, size_t errlen, const char *what, const char *path, int errnum)
{
	if (err == NULL || errlen == 0)
		return;
	if (errnum != 0)
		snprintf(err, errlen, "%s %s: %s", what, path, strerror(errnum));
	else
		snprintf(err, errlen, "%s %s", what, path);
}

static const char *target_name(const struct audit_log *log)
{
	return log->is_stdout ? "standard output" : log->path;
}

/* Records a write-side error for audit_last_error. */
static void log_err(struct audit_log *log, const char *what, int errnum)
{
	log->has_error = 1;
	audit_set_err(log->err, sizeof log->err, what, target_name(log), errnum);
}

static void notice(struct audit_log *log, const char *msg)
{
	if (log->opts.notice != NULL)
		log->opts.notice(log->opts.arg, msg);
}

int audit_sha256_hex(EVP_MD_CTX *ctx, const EVP_MD *md, const void *p, size_t len, char *hex)
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
	hex[AUDIT_SHA256_HEX] = '\0';
	return 0;
}

/* ---- opening ---------------------------------------------------------------------------- */

/* Reads the end of the regular file that wfd writes (through a read-only descriptor of the same
 * file) to continue the chain from its last line.  Sets have_prev/prev/need_nl when the file has
 * content; leaves them alone for an empty one.  0, or -1 with err set. */
static int load_tail(struct audit_log *log, int wfd, const char *path, char *err, size_t errlen)
{
	struct stat st, rst;
	if (fstat(wfd, &st) == -1) {
		audit_set_err(err, errlen, "cannot stat", path, errno);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		/* Nothing to end or continue in this file; an in-memory prev (from the file
		 * before a rotation) stays. */
		log->need_nl = 0;
		return 0;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd == -1) {
		audit_set_err(err, errlen, "cannot read", path, errno);
		return -1;
	}
	if (fstat(fd, &rst) == -1 || rst.st_dev != st.st_dev || rst.st_ino != st.st_ino) {
		audit_set_err(err, errlen, "changed while being opened:", path, 0);
		close(fd);
		return -1;
	}
	size_t size = (size_t)st.st_size;
	/* A line we wrote is at most AUDIT_LINE_MAX bytes plus its newline, and the newline
	 * before it marks its start. */
	size_t win = size < AUDIT_LINE_MAX + 2 ? size : AUDIT_LINE_MAX + 2;
	char *buf = malloc(win);
	if (buf == NULL) {
		audit_set_err(err, errlen, "out of memory reading", path, 0);
		close(fd);
		return -1;
	}
	size_t got = 0;
	while (got < win) {
		ssize_t n = pread(fd, buf + got, win - got, (off_t)(size - win + got));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			audit_set_err(err, errlen, "cannot read", path, errno);
			free(buf);
			close(fd);
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got != win) {
		audit_set_err(err, errlen, "file shrank while reading", path, 0);
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
		audit_set_err(err, errlen,
		        "last line is longer than 64 KiB, cannot continue the chain of", path, 0);
		free(buf);
		return -1;
	}
	int rc = audit_sha256_hex(log->mdctx, log->md, buf + start, end - start, log->prev);
	free(buf);
	if (rc == -1) {
		audit_set_err(err, errlen, "SHA-256 failed for", path, 0);
		return -1;
	}
	log->have_prev = 1;
	log->need_nl = cut;
	return 0;
}

static int set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl == -1)
		return -1;
	int want = on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
	return want == fl ? 0 : fcntl(fd, F_SETFL, want);
}

/* What a descriptor is, as a target. */
static enum audit_target classify(const struct stat *st)
{
	if (S_ISREG(st->st_mode) || S_ISBLK(st->st_mode))
		return TARGET_FILE;
	if (S_ISSOCK(st->st_mode))
		return TARGET_SOCKET;
	return TARGET_STREAM;
}

/* Standard output as a target.  A regular file or a socket is written through fd 1 itself
 * (neither blocks the loop: a file is written synchronously, a socket with MSG_DONTWAIT).  A
 * pipe or terminal is shared with other processes (the shell, the terminal's other programs):
 * O_NONBLOCK on fd 1 would change it for all of them, so a new description of the same pipe or
 * terminal is opened through /proc and made non-blocking instead.  0 or -1 with err set. */
static int open_stdout(int *fd, enum audit_target *target, int *own, char *err, size_t errlen)
{
	struct stat st;
	if (fstat(1, &st) == -1) {
		audit_set_err(err, errlen, "cannot use", "standard output", errno);
		return -1;
	}
	*target = classify(&st);
	if (*target != TARGET_STREAM) {
		*fd = 1;
		*own = 0;
		return 0;
	}
	int f = open("/proc/self/fd/1", O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (f == -1 && errno == ENXIO) {
		audit_set_err(err, errlen,
		        "standard output is a pipe that nobody reads:", "audit.path -", 0);
		return -1;
	}
	if (f == -1) {
		audit_set_err(err, errlen,
		        "cannot open a private description of standard output (needed to write a "
		        "pipe or terminal without blocking) through",
		        "/proc/self/fd/1", errno);
		return -1;
	}
	*fd = f;
	*own = 1;
	return 0;
}

/* Opens path for appending, creating it mode 0600.  A FIFO without a reader makes open fail
 * with O_NONBLOCK; at start egressd waits for its reader (a blocking open), later (a reopen) it
 * does not.  0 or -1 with err set. */
static int open_path(const char *path, int at_start, int *fd, enum audit_target *target, char *err,
        size_t errlen)
{
	int flags = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	int f;
	do
		f = open(path, flags, 0600);
	while (f == -1 && errno == EINTR);
	if (f == -1 && errno == ENXIO && at_start) {
		do
			f = open(path, flags & ~O_NONBLOCK, 0600);
		while (f == -1 && errno == EINTR);
	}
	if (f == -1) {
		audit_set_err(err, errlen, errno == ENXIO ? "no reader on" : "cannot open", path,
		        errno == ENXIO ? 0 : errno);
		return -1;
	}
	struct stat st;
	if (fstat(f, &st) == -1) {
		audit_set_err(err, errlen, "cannot stat", path, errno);
		close(f);
		return -1;
	}
	*target = classify(&st);
	/* The description is ours alone: non-blocking for a stream, blocking for a file. */
	if (set_nonblock(f, *target != TARGET_FILE) == -1) {
		audit_set_err(err, errlen, "cannot set the mode of", path, errno);
		close(f);
		return -1;
	}
	*fd = f;
	return 0;
}

static const char *kind_text(enum audit_target t)
{
	return t == TARGET_SOCKET ? "a socket" : "a pipe, FIFO, terminal or device";
}

struct audit_log *audit_open(
        const char *path, const struct audit_opts *opts, char *err, size_t errlen)
{
	struct audit_log *log = calloc(1, sizeof *log);
	if (log == NULL) {
		audit_set_err(err, errlen, "out of memory opening", path, 0);
		return NULL;
	}
	if (opts != NULL)
		log->opts = *opts;
	log->opts.chain = log->opts.chain != 0;
	log->opts.fsync = log->opts.fsync != 0;
	log->fd = -1;
	log->wake_fd = -1;
	log->ts_sec = (time_t)-1;
	log->path = strdup(path);
	/* Anonymous pages: only what a backlog touches becomes resident, and it can be handed
	 * back (OUT_KEEP). */
	log->out = mmap(NULL, OUT_CAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (log->out == MAP_FAILED)
		log->out = NULL;
	log->md = EVP_MD_fetch(NULL, "SHA256", NULL);
	log->mdctx = EVP_MD_CTX_new();
	if (log->path == NULL || log->out == NULL || log->md == NULL || log->mdctx == NULL) {
		audit_set_err(err, errlen, "cannot set up (out of memory or no SHA-256)", path, 0);
		goto fail;
	}
	if (strcmp(path, "-") == 0) {
		log->is_stdout = 1;
		if (open_stdout(&log->fd, &log->target, &log->own_fd, err, errlen) == -1)
			goto fail;
	} else {
		if (open_path(path, 1, &log->fd, &log->target, err, errlen) == -1)
			goto fail;
		log->own_fd = 1;
	}
	if (log->opts.fsync && log->target != TARGET_FILE) {
		char what[160];
		snprintf(what, sizeof what, "audit.fsync needs a regular file, and %s is",
		        target_name(log));
		audit_set_err(err, errlen, what, kind_text(log->target), 0);
		goto fail;
	}
	if (log->opts.chain && log->target == TARGET_FILE && !log->is_stdout &&
	        load_tail(log, log->fd, path, err, errlen) == -1)
		goto fail;
	if (log->opts.fsync && (log->sync = audit_sync_start(log->fd, err, errlen)) == NULL)
		goto fail;
	return log;
fail:
	if (log->own_fd && log->fd != -1)
		close(log->fd);
	log->fd = -1;
	log->own_fd = 0;
	audit_close(log);
	return NULL;
}

/* ---- formatting ------------------------------------------------------------------------- */

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
		audit_json_escape(f->buf + f->pos, room - TRUNC_MARK_LEN + 1, s, strlen(s));
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

/* The text of now to the second, cached within the second; ms gets the milliseconds. */
static const char *ts_now(struct audit_log *log, unsigned *ms)
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
	*ms = (unsigned)(now.tv_nsec / 1000000);
	return log->ts_text;
}

/* Opens the object with its ts. */
static void put_ts(struct audit_log *log, struct fmt *f)
{
	unsigned ms;
	const char *sec = ts_now(log, &ms);
	char frac[6] = {'.', (char)('0' + ms / 100), (char)('0' + ms / 10 % 10),
	        (char)('0' + ms % 10), 'Z', '"'};
	put(f, "{\"ts\":\"", 7);
	put(f, sec, strlen(sec));
	put(f, frac, sizeof frac);
}

/* A formatted line that is not yet taken: out[start..end) (with a leading newline when the
 * file ended in a cut line), the hash it gives the chain and its seq. */
struct line {
	size_t start, end;
	uint64_t seq;
	char hash[AUDIT_SHA256_HEX + 1];
};

/* Makes room behind the backlog for one more line: the backlog moves to the front of the
 * buffer when the space after it is short. */
static void make_room(struct audit_log *log)
{
	if (OUT_CAP - log->tail >= AUDIT_LINE_MAX + 2 || log->head == 0)
		return;
	memmove(log->out, log->out + log->head, log->tail - log->head);
	log->tail -= log->head;
	log->head = 0;
}

/* Formats rec as one line at out[tail..] without taking it (struct line says what to commit).
 * 0, or -1 when the hash failed. */
static int format_line(struct audit_log *log, const struct audit_rec *rec, struct line *ln)
{
	make_room(log);
	size_t base = log->tail;
	ln->start = base;
	if (log->need_nl)
		log->out[base++] = '\n';
	struct fmt f = {log->out, base, base + AUDIT_LINE_MAX - TAIL_RESERVE, FIELDS_MAX};
	ln->seq = log->seq + 1;

	put_ts(log, &f);
	f.buf[f.pos++] = ',';
	put(&f, "\"seq\":", 6);
	put_u64(&f, ln->seq);
	put_str(&f, "event", rec->event);
	f.left--;
	if (rec->conn != 0) {
		put_key(&f, "conn");
		put_u64(&f, rec->conn);
	}
	put_str(&f, "front", rec->front);
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
	put_str(&f, "orig_dst", rec->orig_dst);
	put_num(&f, "status", rec->status);
	put_num(&f, "bytes_out", rec->bytes_out);
	put_num(&f, "bytes_in", rec->bytes_in);
	put_num(&f, "duration_ms", rec->duration_ms);
	put_str(&f, "end", rec->end);
	for (int i = 0; i < AUDIT_EXTRA_MAX && rec->extra[i].key != NULL; i++) {
		const char *k = rec->extra[i].key, *v = rec->extra[i].value;
		int64_t num = rec->extra[i].num;
		f.left--;
		/* A second "prev" or "seq" would make the record ambiguous to readers. */
		if ((v == NULL && num < 0) || audit_json_std_key(k, strlen(k)) != -1)
			continue;
		char kbuf[EXTRA_KEY_MAX + 1];
		audit_json_escape(kbuf, sizeof kbuf, k, strlen(k));
		f.buf[f.pos++] = ',';
		f.buf[f.pos++] = '"';
		put(&f, kbuf, strlen(kbuf));
		f.buf[f.pos++] = '"';
		f.buf[f.pos++] = ':';
		if (v == NULL) {
			put_u64(&f, (uint64_t)num);
			continue;
		}
		size_t room = f.lim - f.pos - (size_t)f.left * FIELD_RESERVE;
		put_escaped(&f, v, room);
	}
	/* The tail may use the reserve kept out of lim. */
	if (log->opts.chain && log->have_prev) {
		memcpy(f.buf + f.pos, ",\"prev\":\"", 9);
		memcpy(f.buf + f.pos + 9, log->prev, AUDIT_SHA256_HEX);
		f.buf[f.pos + 9 + AUDIT_SHA256_HEX] = '"';
		f.pos += 10 + AUDIT_SHA256_HEX;
	}
	f.buf[f.pos++] = '}';
	if (log->opts.chain) {
		size_t text = log->need_nl ? ln->start + 1 : ln->start;
		if (audit_sha256_hex(log->mdctx, log->md, f.buf + text, f.pos - text, ln->hash) ==
		        -1) {
			log_err(log, "SHA-256 failed for", 0);
			return -1;
		}
	}
	f.buf[f.pos++] = '\n';
	ln->end = f.pos;
	return 0;
}

/* Takes a formatted line: its seq and hash are the log's from now on. */
static void commit(struct audit_log *log, const struct line *ln)
{
	log->seq = ln->seq;
	if (log->opts.chain) {
		memcpy(log->prev, ln->hash, sizeof log->prev);
		log->have_prev = 1;
	}
	log->need_nl = 0;
}

/* ---- writing ---------------------------------------------------------------------------- */

/* Bytes waiting to be written. */
static size_t backlog(const struct audit_log *log)
{
	return log->tail - log->head;
}

/* One write of p[0..n) to the target: as write(2) returns. */
static ssize_t put_bytes(struct audit_log *log, const char *p, size_t n)
{
	if (log->target == TARGET_SOCKET)
		return send(log->fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	return write(log->fd, p, n);
}

/* Tells the fsync thread that every record taken so far is in the file (only when the backlog
 * is empty: a record behind a cut write is not). */
static void note_written(struct audit_log *log)
{
	if (log->sync != NULL && log->head == log->tail)
		audit_sync_written(log->sync, log->seq);
}

/* The backlog is empty: start the buffer over, and hand back what a long one touched. */
static void backlog_empty(struct audit_log *log)
{
	log->head = log->tail = 0;
	log->mid_line = 0;
	if (log->hiwat > OUT_KEEP + 4096) {
		madvise(log->out + OUT_KEEP, OUT_CAP - OUT_KEEP, MADV_DONTNEED);
	}
	log->hiwat = 0;
}

/* Writes the backlog as far as the target takes it without blocking (a file: all of it unless
 * it fails).  Afterwards hard/blocked say why something is left. */
static void flush_some(struct audit_log *log)
{
	if (log->tail > log->hiwat)
		log->hiwat = log->tail;
	size_t before = log->head;
	log->blocked = 0;
	while (log->head < log->tail) {
		ssize_t n = put_bytes(log, log->out + log->head, log->tail - log->head);
		if (n > 0) {
			log->head += (size_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			log->blocked = 1;
			break;
		}
		int e = n == 0 ? EIO : errno;
		log->hard = 1;
		log->hard_errno = e;
		log_err(log, "cannot write", e);
		break;
	}
	if (log->head > before)
		log->mid_line = log->out[log->head - 1] != '\n';
	if (log->head == log->tail) {
		backlog_empty(log);
		log->hard = 0;
		log->blocked = 0;
		log->has_error = 0;
	} else if (log->blocked && log->head > before) {
		/* A stream that took something is alive: an earlier hard error is over. */
		log->hard = 0;
	}
	if (log->refusing && log->tail - log->head <= AUDIT_BACKLOG_MAX / 2)
		log->refusing = 0;
	note_written(log);
}

/* A decision to a file: written by write(2) now, or refused leaving no byte of it behind.  The
 * backlog is empty.  Returns its seq or 0. */
static uint64_t write_decision_file(struct audit_log *log, struct line *ln)
{
	size_t off = 0, len = ln->end - ln->start;
	const char *p = log->out + ln->start;
	int e = 0;
	while (off < len) {
		ssize_t n = write(log->fd, p + off, len - off);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		e = n == 0 ? EIO : errno;
		break;
	}
	if (off == len) {
		commit(log, ln);
		log->hard = 0;
		log->has_error = 0;
		note_written(log);
		return ln->seq;
	}
	log->hard = 1;
	log->hard_errno = e;
	log_err(log, "cannot write", e);
	if (off > 0) {
		/* A short write (the disk filled up within the line): take the start back. */
		off_t end = lseek(log->fd, 0, SEEK_CUR);
		if (end == (off_t)-1 || ftruncate(log->fd, end - (off_t)off) == -1) {
			/* Cannot (an append-only file, a block device): the line stays in the
			 * chain and its rest goes out first when writing works again, so the file
			 * stays whole; the caller still denies, and the notice says so. */
			int te = errno;
			commit(log, ln);
			log->head = ln->start + off;
			log->tail = ln->end;
			log->mid_line = 1;
			char msg[512];
			snprintf(msg, sizeof msg,
			        "audit: record seq %llu was refused (its connection denied), "
			        "but %zu of its bytes are in %s and cannot be taken back (%s); "
			        "its rest is written when writing works again",
			        (unsigned long long)ln->seq, off, target_name(log), strerror(te));
			notice(log, msg);
		}
	}
	log->refused++;
	return 0;
}

/* ---- state: fail once, recover once ----------------------------------------------------- */

int audit_wait_fd(const struct audit_log *log)
{
	if (log->target != TARGET_FILE && log->blocked && backlog(log) > 0)
		return log->fd;
	return -1;
}

int audit_retry_ms(const struct audit_log *log)
{
	return log->hard && backlog(log) > 0 ? AUDIT_RETRY_MS : -1;
}

static void maybe_wake(struct audit_log *log)
{
	int fd = audit_wait_fd(log), retry = audit_retry_ms(log) != -1;
	if (fd == log->wake_fd && retry == log->wake_retry)
		return;
	log->wake_fd = fd;
	log->wake_retry = retry;
	if (log->opts.wake != NULL)
		log->opts.wake(log->opts.arg);
}

static uint64_t write_record(
        struct audit_log *log, const struct audit_rec *rec, enum audit_kind kind);

/* Says once that writing fails, and once that it works again (then also in the log). */
static void update_state(struct audit_log *log)
{
	int write_bad = log->hard || log->refusing;
	int bad = write_bad || log->sync_failing;
	char msg[512];
	if (bad && !log->failing) {
		log->failing = 1;
		unsigned ms;
		const char *sec = ts_now(log, &ms);
		snprintf(log->fail_since, sizeof log->fail_since, "%s.%03uZ", sec, ms);
		if (log->refusing && !log->hard)
			snprintf(log->fail_why, sizeof log->fail_why,
			        "%s is not taking records (%zu bytes wait)", target_name(log),
			        backlog(log));
		else if (write_bad)
			snprintf(log->fail_why, sizeof log->fail_why, "cannot write %s: %s",
			        target_name(log), strerror(log->hard_errno));
		else
			snprintf(log->fail_why, sizeof log->fail_why, "fdatasync %s: %s",
			        target_name(log), strerror(log->sync_errno));
		snprintf(msg, sizeof msg,
		        "audit: %s; new connections are denied (503 audit-unavailable) until their "
		        "decisions can be put on record",
		        log->fail_why);
		notice(log, msg);
	} else if (!bad && log->failing) {
		log->failing = 0;
		/* Everything refused or dropped since the last recovery, the record that began
		 * this failure included. */
		uint64_t refused = log->refused - log->refused_last;
		uint64_t dropped = log->dropped - log->dropped_last;
		log->refused_last = log->refused;
		log->dropped_last = log->dropped;
		snprintf(msg, sizeof msg,
		        "audit: %s takes records again (since %s: %llu decisions refused, %llu "
		        "records dropped)",
		        target_name(log), log->fail_since, (unsigned long long)refused,
		        (unsigned long long)dropped);
		notice(log, msg);
		/* The file says it too: a refused record leaves no gap in seq or the chain, so
		 * this is where a reader learns that decisions were refused. */
		struct audit_rec r;
		audit_rec_init(&r);
		r.event = "audit";
		audit_rec_str(&r, "error", log->fail_why);
		audit_rec_str(&r, "since", log->fail_since);
		audit_rec_num(&r, "refused", (int64_t)refused);
		audit_rec_num(&r, "dropped", (int64_t)dropped);
		write_record(log, &r, AUDIT_EVENT);
	}
}

/* After every public call that may change what the loop waits for. */
static void settle(struct audit_log *log)
{
	update_state(log);
	maybe_wake(log);
}

/* A decision to a stream: taken into the backlog unless the backlog is full or the target
 * failed.  When its own write then fails outright, it is taken back whole.  Returns its seq or
 * 0. */
static uint64_t write_decision_stream(struct audit_log *log, const struct audit_rec *rec)
{
	struct line ln;
	if (log->hard || log->refusing || backlog(log) >= AUDIT_BACKLOG_MAX) {
		if (!log->hard)
			log->refusing = 1;
		log->refused++;
		return 0;
	}
	if (format_line(log, rec, &ln) == -1) {
		log->refused++;
		return 0;
	}
	uint64_t seq = log->seq;
	int have_prev = log->have_prev, need_nl = log->need_nl;
	char prev[sizeof log->prev];
	memcpy(prev, log->prev, sizeof prev);
	commit(log, &ln);
	log->tail = ln.end;
	flush_some(log);
	if (!log->hard)
		return ln.seq;
	log->refused++;
	if (log->head <= ln.start) {
		/* Not a byte of it went out: as if it had never been formatted. */
		log->tail = ln.start;
		log->seq = seq;
		log->have_prev = have_prev;
		log->need_nl = need_nl;
		memcpy(log->prev, prev, sizeof prev);
	}
	return 0;
}

static uint64_t write_record(
        struct audit_log *log, const struct audit_rec *rec, enum audit_kind kind)
{
	struct line ln;
	if (kind == AUDIT_DECISION) {
		if (backlog(log) > 0)
			flush_some(log);
		if (log->target != TARGET_FILE)
			return write_decision_stream(log, rec);
		if (backlog(log) > 0 || format_line(log, rec, &ln) == -1) {
			log->refused++;
			return 0;
		}
		return write_decision_file(log, &ln);
	}
	size_t limit = kind == AUDIT_DENIAL ? AUDIT_BACKLOG_MAX : AUDIT_PENDING_MAX;
	/* A long outage filled the backlog: give it one more chance first. */
	if (backlog(log) >= limit)
		flush_some(log);
	if (backlog(log) >= limit) {
		/* A stream's reader stalled: decisions are refused too until it catches up. */
		if (log->target != TARGET_FILE)
			log->refusing = 1;
		log->dropped++;
		log_err(log, "backlog full, record dropped for", 0);
		return 0;
	}
	if (format_line(log, rec, &ln) == -1) {
		log->dropped++;
		return 0;
	}
	/* Taken: it joins the backlog, and goes out with it. */
	commit(log, &ln);
	log->tail = ln.end;
	flush_some(log);
	return ln.seq;
}

uint64_t audit_write(struct audit_log *log, const struct audit_rec *rec, enum audit_kind kind)
{
	uint64_t seq = write_record(log, rec, kind);
	settle(log);
	return seq;
}

int audit_admit(struct audit_log *log)
{
	int ok = !log->hard && (log->target == TARGET_FILE ||
	                               (!log->refusing && backlog(log) < AUDIT_BACKLOG_MAX));
	if (!ok) {
		log->refused++;
		settle(log);
	}
	return ok;
}

/* Drops the rest of a line whose start went to the previous target: a new reader or file
 * starts on a whole line. */
static void skip_cut_line(struct audit_log *log)
{
	if (!log->mid_line || backlog(log) == 0)
		return;
	const char *nl = memchr(log->out + log->head, '\n', backlog(log));
	log->head = nl != NULL ? (size_t)(nl - log->out) + 1 : log->tail;
	log->mid_line = 0;
	log->dropped++;
	if (backlog(log) == 0)
		backlog_empty(log);
}

/* Opens the path again and makes it the target.  0, or -1 (error recorded, the old target
 * stays). */
static int reopen_path(struct audit_log *log)
{
	int fd;
	enum audit_target target;
	char e[sizeof log->err];
	if (open_path(log->path, 0, &fd, &target, e, sizeof e) == -1) {
		log->has_error = 1;
		memcpy(log->err, e, sizeof e);
		return -1;
	}
	if (log->sync != NULL && target != TARGET_FILE) {
		close(fd);
		log_err(log, "audit.fsync needs a regular file; not reopened:", 0);
		return -1;
	}
	/* A fresh (rotated) file continues the chain from the old file's last line, so the two
	 * files verify as one when joined.  A file that already has lines continues from its own
	 * last line so that it verifies on its own, unless lines of ours are still pending: their
	 * prev is already fixed. */
	if (log->opts.chain && target == TARGET_FILE && backlog(log) == 0 &&
	        load_tail(log, fd, log->path, e, sizeof e) == -1) {
		log->has_error = 1;
		memcpy(log->err, e, sizeof e);
		close(fd);
		return -1;
	}
	skip_cut_line(log);
	if (log->sync != NULL)
		audit_sync_switch(log->sync, fd, log->fd);
	else if (log->own_fd)
		close(log->fd);
	log->fd = fd;
	log->own_fd = 1;
	log->target = target;
	log->hard = 0;
	log->blocked = 0;
	return 0;
}

size_t audit_flush(struct audit_log *log)
{
	if (backlog(log) > 0) {
		/* A FIFO whose reader left: a new reader may be there now. */
		if (log->hard && log->hard_errno == EPIPE && !log->is_stdout &&
		        log->target == TARGET_STREAM)
			reopen_path(log);
		flush_some(log);
	}
	settle(log);
	return backlog(log);
}

int audit_reopen(struct audit_log *log)
{
	if (log->is_stdout)
		return 0;
	/* Lines already formatted belong after the old file's content. */
	if (backlog(log) > 0)
		flush_some(log);
	int rc = reopen_path(log);
	if (rc == 0 && backlog(log) > 0)
		flush_some(log);
	settle(log);
	return rc;
}

/* ---- fsync ------------------------------------------------------------------------------ */

int audit_notify_fd(const struct audit_log *log)
{
	return log->sync != NULL ? audit_sync_notify_fd(log->sync) : -1;
}

uint64_t audit_durable_seq(struct audit_log *log)
{
	if (log->sync == NULL)
		return log->seq;
	struct audit_sync_report r;
	audit_sync_poll(log->sync, &r);
	log->sync_failing = r.failing;
	log->sync_errno = r.err;
	settle(log);
	return r.durable;
}

enum audit_seq_state audit_seq_state(struct audit_log *log, uint64_t seq)
{
	if (log->sync == NULL)
		return seq <= log->seq ? AUDIT_SEQ_DURABLE : AUDIT_SEQ_PENDING;
	return audit_sync_state(log->sync, seq);
}

/* ---- the rest --------------------------------------------------------------------------- */

const char *audit_last_error(const struct audit_log *log)
{
	return log->has_error ? log->err : NULL;
}

uint64_t audit_dropped(const struct audit_log *log)
{
	return log->dropped;
}

uint64_t audit_refused(const struct audit_log *log)
{
	return log->refused;
}

size_t audit_backlog(const struct audit_log *log)
{
	return backlog(log);
}

uint64_t audit_syncs(const struct audit_log *log)
{
	return log->sync != NULL ? audit_sync_rounds(log->sync) : 0;
}

/* Writes what is left to a stream, waiting for its reader at most AUDIT_CLOSE_WAIT_MS. */
static void drain_at_close(struct audit_log *log)
{
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	flush_some(log);
	while (backlog(log) > 0 && log->blocked) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		long spent = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
		if (spent >= AUDIT_CLOSE_WAIT_MS)
			break;
		struct pollfd p = {log->fd, POLLOUT, 0};
		if (poll(&p, 1, (int)(AUDIT_CLOSE_WAIT_MS - spent)) <= 0)
			break;
		flush_some(log);
	}
}

void audit_close(struct audit_log *log)
{
	if (log == NULL)
		return;
	if (log->sync != NULL) {
		audit_sync_stop(log->sync);
		log->sync = NULL;
	}
	if (log->fd != -1 && log->out != NULL) {
		if (backlog(log) > 0)
			drain_at_close(log);
		if (backlog(log) > 0) {
			char msg[512];
			snprintf(msg, sizeof msg,
			        "audit: stopping with %zu bytes of records not written to %s (%s)",
			        backlog(log), target_name(log),
			        log->has_error ? log->err : "the reader did not take them");
			notice(log, msg);
		}
		if (log->target == TARGET_FILE && (log->own_fd || log->opts.fsync))
			fdatasync(log->fd);
	}
	if (log->own_fd && log->fd != -1)
		close(log->fd);
	EVP_MD_CTX_free(log->mdctx);
	EVP_MD_free(log->md);
	if (log->out != NULL)
		munmap(log->out, OUT_CAP);
	free(log->path);
	free(log);
}
