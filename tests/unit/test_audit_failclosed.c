/* The audit log fails closed and never blocks (docs/audit.md, "Failing closed"): a target that
 * cannot take a decision refuses it, leaving no seq, chain link or byte behind; a pipe, FIFO or
 * terminal whose reader stalls fills a bounded backlog and then refuses decisions, and takes
 * them again once read; standard output shared with another process stays blocking for it;
 * audit.fsync makes records durable in groups, and a refused record leaves the chain whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "audit/audit.h"

static char tmpdir[64];

/* What the log's callbacks saw. */
struct seen {
	int notices;    /* notice calls */
	int fails;      /* ... that say writing fails */
	int recoveries; /* ... that say it works again */
	char last[512]; /* the last notice */
	int wakes;      /* wake calls */
};

static void on_notice(void *arg, const char *msg)
{
	struct seen *s = arg;
	s->notices++;
	if (strstr(msg, "audit-unavailable") != NULL)
		s->fails++;
	if (strstr(msg, "takes records again") != NULL)
		s->recoveries++;
	snprintf(s->last, sizeof s->last, "%s", msg);
}

static void on_wake(void *arg)
{
	((struct seen *)arg)->wakes++;
}

static struct audit_log *open_seen(const char *path, int chain, int fsync, struct seen *s)
{
	memset(s, 0, sizeof *s);
	struct audit_opts o = {
	        .chain = chain, .fsync = fsync, .notice = on_notice, .wake = on_wake, .arg = s};
	char err[256] = "";
	struct audit_log *log = audit_open(path, &o, err, sizeof err);
	if (log == NULL)
		print_error("audit_open %s: %s\n", path, err);
	return log;
}

static int setup(void **state)
{
	(void)state;
	memcpy(tmpdir, "/tmp/egressd-auditfc-", 21);
	memset(tmpdir + 21, 'X', 6);
	tmpdir[27] = '\0';
	/* A FIFO whose reader left raises SIGPIPE; a file past RLIMIT_FSIZE raises SIGXFSZ.
	 * egressd ignores both; so does this test. */
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
	/* Nothing here may block: a hang is a failure, not a stuck suite. */
	alarm(60);
	return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void tpath(char *out, size_t cap, const char *name)
{
	snprintf(out, cap, "%s/%s", tmpdir, name);
}

/* A decision whose line is about size bytes long. */
static void decision(struct audit_rec *r, const char *path)
{
	audit_rec_init(r);
	r->event = "connect";
	r->conn = 7;
	r->front = "connect";
	r->host = "origin.test";
	r->port = 443;
	r->decision = "allow";
	r->path = path;
}

static char *filler(size_t n)
{
	char *p = malloc(n + 1);
	assert_non_null(p);
	memset(p, 'p', n);
	p[n] = '\0';
	return p;
}

/* Reads what fd holds now (non-blocking) into *buf, growing it. */
static void take(int fd, char **buf, size_t *len, size_t *cap)
{
	for (;;) {
		if (*cap - *len < 65536) {
			*cap = *cap * 2 + 65536;
			*buf = realloc(*buf, *cap);
			assert_non_null(*buf);
		}
		ssize_t n = read(fd, *buf + *len, *cap - *len);
		if (n <= 0)
			return;
		*len += (size_t)n;
	}
}

/* What a reader got must verify as a log: whole lines, seq 1.. in order, the chain. */
static void verify_bytes(const char *name, const char *buf, size_t len, uint64_t want_last)
{
	char path[128], err[256];
	tpath(path, sizeof path, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
	int rc = audit_verify(path, err, sizeof err);
	if (rc != 0)
		print_error("%s: %s\n", name, err);
	assert_int_equal(rc, 0);
	/* The last line's seq. */
	assert_true(len > 0 && buf[len - 1] == '\n');
	const char *last = buf + len - 1;
	while (last > buf && last[-1] != '\n')
		last--;
	char want[40];
	snprintf(want, sizeof want, ",\"seq\":%llu,", (unsigned long long)want_last);
	assert_non_null(strstr(last, want));
}

/* ---- a full device ---------------------------------------------------------------------- */

static void test_full_device_refuses_decisions(void **state)
{
	(void)state;
	struct seen s;
	struct audit_log *log = open_seen("/dev/full", 1, 0, &s);
	assert_non_null(log);
	struct audit_rec r;
	audit_rec_init(&r);
	r.event = "start";
	/* An event is kept (with its seq) while it cannot be written. */
	assert_int_equal(audit_write(log, &r, AUDIT_EVENT), 1);
	assert_int_equal(audit_admit(log), 0);
	assert_int_equal(audit_retry_ms(log), AUDIT_RETRY_MS);
	assert_true(s.wakes >= 1);
	decision(&r, "/x");
	for (int i = 0; i < 50; i++)
		assert_int_equal(audit_write(log, &r, AUDIT_DECISION), 0);
	/* The 50 and the one audit_admit counted. */
	assert_int_equal(audit_refused(log), 51);
	/* Said once, not once per record. */
	assert_int_equal(s.fails, 1);
	assert_non_null(strstr(s.last, strerror(ENOSPC)));
	/* Retries change nothing and say nothing more. */
	for (int i = 0; i < 5; i++)
		audit_flush(log);
	assert_int_equal(s.notices, 1);
	/* A denial is kept like an event, and takes the next seq: no gap. */
	r.decision = "deny";
	assert_int_equal(audit_write(log, &r, AUDIT_DENIAL), 2);
	audit_close(log);
	/* Closing with records unwritten says so too. */
	assert_int_equal(s.notices, 2);
	assert_non_null(strstr(s.last, "not written"));
}

/* A file that recovers: decisions refused while the device is full leave no trace; the records
 * kept meanwhile and a recovery record come first, and the file verifies. */
static void test_recovery_is_said_once_and_recorded(void **state)
{
	(void)state;
	char link[128], real[128], err[256];
	tpath(link, sizeof link, "rec.jsonl");
	tpath(real, sizeof real, "rec-real.jsonl");
	assert_int_equal(symlink("/dev/full", link), 0);
	struct seen s;
	struct audit_log *log = open_seen(link, 1, 0, &s);
	assert_non_null(log);
	struct audit_rec r;
	audit_rec_init(&r);
	r.event = "start";
	assert_int_equal(audit_write(log, &r, AUDIT_EVENT), 1);
	decision(&r, "/refused");
	for (int i = 0; i < 3; i++)
		assert_int_equal(audit_write(log, &r, AUDIT_DECISION), 0);
	assert_int_equal(unlink(link), 0);
	assert_int_equal(symlink("rec-real.jsonl", link), 0);
	assert_int_equal(audit_reopen(log), 0);
	assert_int_equal(s.fails, 1);
	assert_int_equal(s.recoveries, 1);
	assert_int_equal(audit_admit(log), 1);
	decision(&r, "/taken");
	assert_int_equal(audit_write(log, &r, AUDIT_DECISION), 3);
	/* A new failure after the recovery is said again, once. */
	assert_int_equal(unlink(link), 0);
	assert_int_equal(symlink("/dev/full", link), 0);
	assert_int_equal(audit_reopen(log), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(audit_write(log, &r, AUDIT_DECISION), 0);
	assert_int_equal(s.fails, 2);
	audit_close(log);
	assert_int_equal(audit_verify(real, err, sizeof err), 0);
	FILE *f = fopen(real, "r");
	assert_non_null(f);
	char buf[4096];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	assert_null(strstr(buf, "/refused"));
	assert_non_null(strstr(buf, ",\"seq\":2,\"event\":\"audit\",\"error\":\"cannot write "));
	assert_non_null(strstr(buf, "\"refused\":3,\"dropped\":0,"));
	assert_non_null(strstr(buf, ",\"seq\":3,\"event\":\"connect\""));
}

/* ---- a regular file that fills up mid-line ---------------------------------------------- */

/* The file may grow to limit bytes (RLIMIT_FSIZE: writes past it fail with EFBIG, a write that
 * crosses it is cut short, as on a full disk). */
static void set_fsize(rlim_t limit)
{
	struct rlimit rl;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &rl), 0);
	rl.rlim_cur = limit;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
}

static off_t file_size(const char *path)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

/* A decision cut short by a full file is taken back: the file is as before, seq and the chain
 * go on from the last whole line.  With fsync, the records taken become durable. */
static void refused_leaves_no_trace(int fsync)
{
	char path[128], err[256];
	tpath(path, sizeof path, fsync ? "cut-fsync.jsonl" : "cut.jsonl");
	struct seen s;
	struct audit_log *log = open_seen(path, 1, fsync, &s);
	assert_non_null(log);
	struct audit_rec r;
	decision(&r, "/first");
	uint64_t first = audit_write(log, &r, AUDIT_DECISION);
	assert_int_equal(first, 1);
	off_t before = file_size(path);

	struct rlimit saved;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
	set_fsize((rlim_t)before + 40); /* 40 bytes of the next line fit */
	char *big = filler(500);
	decision(&r, big);
	uint64_t refused = audit_write(log, &r, AUDIT_DECISION);
	off_t during = file_size(path);
	int ready = audit_admit(log);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
	free(big);
	assert_int_equal(refused, 0);
	assert_int_equal(during, before); /* the 40 bytes were taken back */
	assert_int_equal(ready, 0);
	assert_int_equal(s.fails, 1);
	assert_non_null(strstr(s.last, strerror(EFBIG)));

	/* The next decision that can be written is taken, and the recovery record follows it. */
	decision(&r, "/after");
	uint64_t after = audit_write(log, &r, AUDIT_DECISION);
	assert_int_equal(after, 2);
	assert_int_equal(s.recoveries, 1);
	if (fsync) {
		/* Durable once the writer thread says so. */
		struct pollfd p = {audit_notify_fd(log), POLLIN, 0};
		uint64_t durable = 0;
		for (int i = 0; i < 100 && durable < after; i++) {
			poll(&p, 1, 100);
			durable = audit_durable_seq(log);
		}
		assert_true(durable >= after);
		assert_int_equal(audit_seq_state(log, after), AUDIT_SEQ_DURABLE);
	}
	audit_close(log);
	assert_int_equal(audit_verify(path, err, sizeof err), 0);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char buf[4096];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	assert_null(strstr(buf, "ppppp"));
	assert_non_null(strstr(buf, ",\"seq\":2,\"event\":\"connect\""));
	assert_non_null(strstr(buf, ",\"seq\":3,\"event\":\"audit\","));
	assert_non_null(strstr(buf, "\"refused\":2,")); /* the decision, and audit_admit */
}

static void test_refused_decision_leaves_no_trace(void **state)
{
	(void)state;
	refused_leaves_no_trace(0);
}

static void test_fsync_refused_decision_leaves_chain_whole(void **state)
{
	(void)state;
	refused_leaves_no_trace(1);
}

/* ---- fsync: group commit ---------------------------------------------------------------- */

static void test_fsync_group_commit(void **state)
{
	(void)state;
	char path[128], err[256];
	tpath(path, sizeof path, "fsync.jsonl");
	struct seen s;
	struct audit_log *log = open_seen(path, 1, 1, &s);
	assert_non_null(log);
	int nfd = audit_notify_fd(log);
	assert_true(nfd != -1);
	struct audit_rec r;
	decision(&r, "/burst");
	enum { BURST = 1000 };
	uint64_t last = 0;
	for (int i = 0; i < BURST; i++) {
		last = audit_write(log, &r, AUDIT_DECISION);
		assert_int_equal(last, (uint64_t)i + 1);
	}
	/* Written is not durable: the last of a burst waits for the thread. */
	struct pollfd p = {nfd, POLLIN, 0};
	uint64_t durable = 0;
	for (int i = 0; i < 200 && durable < last; i++) {
		poll(&p, 1, 50);
		durable = audit_durable_seq(log);
	}
	assert_int_equal(durable, last);
	assert_int_equal(audit_seq_state(log, 1), AUDIT_SEQ_DURABLE);
	assert_int_equal(audit_seq_state(log, last), AUDIT_SEQ_DURABLE);
	assert_int_equal(audit_seq_state(log, last + 1), AUDIT_SEQ_PENDING);
	/* One fdatasync covers everything written before it started, so a burst costs far
	 * fewer than one each.  On a tmpfs a sync is free and the thread may keep pace with
	 * the writes; there only the bound is checked. */
	uint64_t syncs = audit_syncs(log);
	struct statfs sf;
	int tmpfs = statfs(tmpdir, &sf) == 0 && sf.f_type == TMPFS_MAGIC;
	print_message("fsync group commit: %d records, %llu fdatasync rounds%s\n", BURST,
	        (unsigned long long)syncs, tmpfs ? " (tmpfs)" : "");
	assert_true(syncs >= 1 && syncs <= BURST);
	if (!tmpfs)
		assert_true(syncs < BURST / 2);
	assert_int_equal(s.notices, 0);
	audit_close(log);
	assert_int_equal(audit_verify(path, err, sizeof err), 0);

	/* fsync needs a regular file. */
	struct audit_opts o = {.fsync = 1};
	assert_null(audit_open("/dev/null", &o, err, sizeof err));
	assert_non_null(strstr(err, "audit.fsync needs a regular file"));
}

/* ---- a FIFO whose reader stalls --------------------------------------------------------- */

static void test_fifo_backlog_fills_refuses_and_drains(void **state)
{
	(void)state;
	char path[128];
	tpath(path, sizeof path, "audit.fifo");
	assert_int_equal(mkfifo(path, 0600), 0);
	int rd = open(path, O_RDONLY | O_NONBLOCK);
	assert_true(rd != -1);
	struct seen s;
	struct audit_log *log = open_seen(path, 1, 0, &s);
	assert_non_null(log);
	char *big = filler(60 * 1024);
	struct audit_rec r;
	decision(&r, big);
	/* Nobody reads: the pipe (64 KiB) and then the backlog (1 MiB) fill; every write
	 * returns at once (the alarm would end a blocked one). */
	uint64_t taken = 0;
	int i;
	for (i = 0; i < 100; i++) {
		uint64_t seq = audit_write(log, &r, AUDIT_DECISION);
		if (seq == 0)
			break;
		taken = seq;
	}
	assert_true(i < 100);
	assert_true(taken * 60 * 1024 >= AUDIT_BACKLOG_MAX);
	assert_true(audit_backlog(log) >= AUDIT_BACKLOG_MAX);
	assert_true(audit_backlog(log) < AUDIT_BACKLOG_MAX + AUDIT_LINE_MAX);
	assert_int_equal(audit_admit(log), 0);
	int wfd = audit_wait_fd(log);
	assert_true(wfd != -1);
	assert_int_equal(s.fails, 1);
	/* Refused decisions stay refused; a close record still waits in the backlog. */
	assert_int_equal(audit_write(log, &r, AUDIT_DECISION), 0);
	struct audit_rec c;
	audit_rec_init(&c);
	c.event = "close";
	c.conn = 7;
	uint64_t close_seq = audit_write(log, &c, AUDIT_EVENT);
	assert_int_equal(close_seq, taken + 1);
	assert_int_equal(s.fails, 1);

	/* The reader comes back: what the loop's write event would do. */
	char *got = NULL;
	size_t glen = 0, gcap = 0;
	struct pollfd p = {wfd, POLLOUT, 0};
	for (int k = 0; k < 10000 && audit_backlog(log) > 0; k++) {
		take(rd, &got, &glen, &gcap);
		if (poll(&p, 1, 100) == 1)
			audit_flush(log);
	}
	assert_int_equal(audit_backlog(log), 0);
	assert_int_equal(audit_wait_fd(log), -1);
	assert_int_equal(s.recoveries, 1);
	/* Decisions are taken again. */
	decision(&r, "/again");
	uint64_t again = audit_write(log, &r, AUDIT_DECISION);
	assert_int_equal(again, close_seq + 2); /* after the recovery record */
	take(rd, &got, &glen, &gcap);
	audit_close(log);
	take(rd, &got, &glen, &gcap);
	close(rd);
	free(big);
	verify_bytes("fifo.jsonl", got, glen, again);
	/* The first refused, audit_admit's and the one after. */
	assert_non_null(strstr(got, "\"refused\":3,"));
	free(got);
}

/* ---- a terminal ------------------------------------------------------------------------- */

static void test_terminal_backlog(void **state)
{
	(void)state;
	int master = posix_openpt(O_RDWR | O_NOCTTY);
	if (master == -1) {
		print_message("SKIPPED: no pseudo-terminal here: %s\n", strerror(errno));
		skip();
	}
	assert_int_equal(grantpt(master), 0);
	assert_int_equal(unlockpt(master), 0);
	int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
	assert_true(slave != -1);
	/* Raw: the bytes read on the master are the bytes written. */
	struct termios t;
	assert_int_equal(tcgetattr(slave, &t), 0);
	cfmakeraw(&t);
	assert_int_equal(tcsetattr(slave, TCSANOW, &t), 0);
	assert_true(fcntl(master, F_SETFL, O_NONBLOCK) != -1);

	fflush(stdout);
	int saved = dup(1);
	assert_true(saved != -1);
	assert_int_equal(dup2(slave, 1), 1);
	struct seen s;
	struct audit_log *log = open_seen("-", 1, 0, &s);
	int stdout_flags = fcntl(1, F_GETFL);
	char *big = filler(60 * 1024);
	struct audit_rec r;
	decision(&r, big);
	uint64_t taken = 0;
	int refused_at = -1, wfd = -1, fails = 0;
	size_t backlog = 0;
	char *got = NULL;
	size_t glen = 0, gcap = 0;
	uint64_t again = 0;
	int recoveries = 0;
	if (log != NULL) {
		for (int i = 0; i < 100; i++) {
			uint64_t seq = audit_write(log, &r, AUDIT_DECISION);
			if (seq == 0) {
				refused_at = i;
				break;
			}
			taken = seq;
		}
		backlog = audit_backlog(log);
		wfd = audit_wait_fd(log);
		fails = s.fails;
		struct pollfd p = {wfd, POLLOUT, 0};
		for (int k = 0; k < 10000 && audit_backlog(log) > 0; k++) {
			take(master, &got, &glen, &gcap);
			if (poll(&p, 1, 100) == 1)
				audit_flush(log);
		}
		decision(&r, "/again");
		again = audit_write(log, &r, AUDIT_DECISION);
		recoveries = s.recoveries;
		audit_close(log);
		for (int k = 0; k < 20; k++) {
			take(master, &got, &glen, &gcap);
			usleep(1000);
		}
	}
	dup2(saved, 1);
	close(saved);
	close(slave);
	close(master);
	free(big);
	assert_non_null(log);
	/* Standard output itself stays as it was (a terminal is shared with the shell). */
	assert_true(stdout_flags != -1 && !(stdout_flags & O_NONBLOCK));
	assert_true(refused_at > 0);
	assert_true(taken * 60 * 1024 >= AUDIT_BACKLOG_MAX);
	assert_true(backlog >= AUDIT_BACKLOG_MAX);
	assert_true(wfd != -1 && wfd != 1);
	assert_int_equal(fails, 1);
	assert_int_equal(recoveries, 1);
	assert_int_equal(again, taken + 2);
	verify_bytes("tty.jsonl", got, glen, again);
	free(got);
}

/* ---- standard output shared with another process ---------------------------------------- */

/* egressd's standard output is a pipe it shares with another process (a shell pipeline, a log
 * collector's other writers).  Filling it without a reader must not make that description
 * non-blocking: the other process would then see EAGAIN where it expects to wait. */
static void test_shared_stdout_stays_blocking(void **state)
{
	(void)state;
	int p[2], ctl[2], rep[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(pipe(ctl), 0);
	assert_int_equal(pipe(rep), 0);
	fflush(stdout);
	pid_t pid = fork();
	assert_true(pid != -1);
	if (pid == 0) {
		/* The other process: the same pipe as its standard output. */
		dup2(p[1], 1);
		char go;
		if (read(ctl[0], &go, 1) != 1)
			_exit(2);
		int fl = fcntl(1, F_GETFL);
		char flag = fl == -1 ? 'E' : (fl & O_NONBLOCK) ? 'N' : 'B';
		_exit(write(rep[1], &flag, 1) == 1 ? 0 : 3);
	}
	assert_true(fcntl(p[0], F_SETFL, O_NONBLOCK) != -1);
	int saved = dup(1);
	assert_true(saved != -1);
	assert_int_equal(dup2(p[1], 1), 1);
	struct seen s;
	struct audit_log *log = open_seen("-", 0, 0, &s);
	char *big = filler(60 * 1024);
	struct audit_rec r;
	decision(&r, big);
	int refused = 0;
	for (int i = 0; log != NULL && i < 100 && !refused; i++)
		refused = audit_write(log, &r, AUDIT_DECISION) == 0;
	int own_flags = fcntl(1, F_GETFL);
	/* Ask the other process while the pipe is full. */
	assert_int_equal(write(ctl[1], "x", 1), 1);
	char flag = 0;
	assert_int_equal(read(rep[0], &flag, 1), 1);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	char *got = NULL;
	size_t glen = 0, gcap = 0;
	if (log != NULL) {
		for (int k = 0; k < 10000 && audit_backlog(log) > 0; k++) {
			take(p[0], &got, &glen, &gcap);
			audit_flush(log);
		}
		audit_close(log);
	}
	dup2(saved, 1);
	close(saved);
	close(p[1]);
	take(p[0], &got, &glen, &gcap);
	close(p[0]);
	free(big);
	free(got);
	assert_non_null(log);
	assert_true(refused);
	assert_int_equal(flag, 'B');
	assert_true(own_flags != -1 && !(own_flags & O_NONBLOCK));
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- standard output as a socket -------------------------------------------------------- */

static void test_socket_stdout(void **state)
{
	(void)state;
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_true(fcntl(sv[1], F_SETFL, O_NONBLOCK) != -1);
	fflush(stdout);
	int saved = dup(1);
	assert_true(saved != -1);
	assert_int_equal(dup2(sv[0], 1), 1);
	struct seen s;
	struct audit_log *log = open_seen("-", 1, 0, &s);
	char *big = filler(60 * 1024);
	struct audit_rec r;
	decision(&r, big);
	int refused = 0;
	uint64_t taken = 0;
	for (int i = 0; log != NULL && i < 200 && !refused; i++) {
		uint64_t seq = audit_write(log, &r, AUDIT_DECISION);
		refused = seq == 0;
		taken = seq ? seq : taken;
	}
	int flags = fcntl(1, F_GETFL);
	int wfd = log != NULL ? audit_wait_fd(log) : -1;
	char *got = NULL;
	size_t glen = 0, gcap = 0;
	uint64_t again = 0;
	if (log != NULL) {
		struct pollfd p = {wfd, POLLOUT, 0};
		for (int k = 0; k < 10000 && audit_backlog(log) > 0; k++) {
			take(sv[1], &got, &glen, &gcap);
			if (poll(&p, 1, 100) == 1)
				audit_flush(log);
		}
		decision(&r, "/again");
		again = audit_write(log, &r, AUDIT_DECISION);
		audit_close(log);
	}
	dup2(saved, 1);
	close(saved);
	close(sv[0]);
	take(sv[1], &got, &glen, &gcap);
	close(sv[1]);
	free(big);
	assert_non_null(log);
	/* send(MSG_DONTWAIT) on the shared socket: its description stays blocking. */
	assert_true(flags != -1 && !(flags & O_NONBLOCK));
	assert_true(refused);
	assert_int_equal(wfd, 1);
	assert_int_equal(again, taken + 2);
	verify_bytes("socket.jsonl", got, glen, again);
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_full_device_refuses_decisions),
	        cmocka_unit_test(test_recovery_is_said_once_and_recorded),
	        cmocka_unit_test(test_refused_decision_leaves_no_trace),
	        cmocka_unit_test(test_fsync_refused_decision_leaves_chain_whole),
	        cmocka_unit_test(test_fsync_group_commit),
	        cmocka_unit_test(test_fifo_backlog_fills_refuses_and_drains),
	        cmocka_unit_test(test_terminal_backlog),
	        cmocka_unit_test(test_shared_stdout_stays_blocking),
	        cmocka_unit_test(test_socket_stdout),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
