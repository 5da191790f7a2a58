/* audit.fsync: a writer thread that makes what the loop has written durable (docs/audit.md).
 *
 * The loop writes records with write(2) as without fsync, then tells the thread the last seq
 * written.  The thread runs one fdatasync for everything written by the time it starts (group
 * commit: a burst of decisions costs one sync, not one each), records the result and writes to
 * an eventfd, which the loop watches.  A failed fdatasync means the records of that round may be
 * lost (Linux reports a writeback error once and marks the pages clean), so the round's range of
 * seqs is recorded as lost and never retried; later rounds go on.  Lost ranges are merged into
 * one (lost_lo, lost_hi]: a record between two failed rounds may then be reported lost although
 * it was synced, which only denies a connection that could have passed (fail closed), and only
 * one the loop had not released yet. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <fcntl.h>

#include "audit/internal.h"

struct audit_sync {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	int fd;           /* the log's descriptor (owned by the log; duplicated for each round) */
	int retired;      /* an old descriptor to sync and close (owned by the thread), or -1 */
	uint64_t written; /* every record up to here is in the file */
	uint64_t done;    /* the target of the last finished round */
	uint64_t durable; /* every record up to here is durable, except (lost_lo, lost_hi] */
	uint64_t lost_lo; /* lost range, empty when lost_lo == lost_hi */
	uint64_t lost_hi;
	int failing;    /* the last round failed */
	int err;        /* its errno */
	uint64_t syncs; /* rounds run */
	int stop;       /* audit_sync_stop was called */
	int efd;        /* eventfd the loop watches */
};

/* One round: sync a retired descriptor and the current one, up to target. */
static int sync_round(int retired, int fd)
{
	int err = 0;
	if (retired != -1) {
		if (fdatasync(retired) == -1)
			err = errno;
		close(retired);
	}
	if (fd == -1)
		return err != 0 ? err : EBADF;
	if (fdatasync(fd) == -1 && err == 0)
		err = errno;
	close(fd);
	return err;
}

static void *sync_main(void *arg)
{
	struct audit_sync *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->stop && s->written == s->done && s->retired == -1)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->written == s->done && s->retired == -1)
			break; /* stopping with nothing left */
		uint64_t target = s->written;
		int retired = s->retired;
		s->retired = -1;
		/* Our own descriptor for the file: the loop may switch files meanwhile. */
		int fd = fcntl(s->fd, F_DUPFD_CLOEXEC, 0);
		int dup_err = fd == -1 ? errno : 0;
		pthread_mutex_unlock(&s->mu);

		int err = sync_round(retired, fd);
		if (fd == -1)
			err = dup_err;

		pthread_mutex_lock(&s->mu);
		s->syncs++;
		if (err != 0) {
			if (s->lost_lo == s->lost_hi) {
				s->lost_lo = s->done;
				s->lost_hi = target;
			} else {
				if (s->done < s->lost_lo)
					s->lost_lo = s->done;
				if (target > s->lost_hi)
					s->lost_hi = target;
			}
			s->failing = 1;
			s->err = err;
		} else {
			s->durable = target;
			s->failing = 0;
		}
		s->done = target;
		uint64_t one = 1;
		ssize_t w = write(s->efd, &one, sizeof one);
		(void)w; /* a full counter still reads as readable */
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

struct audit_sync *audit_sync_start(int fd, char *err, size_t errlen)
{
	struct audit_sync *s = calloc(1, sizeof *s);
	if (s == NULL) {
		audit_set_err(
		        err, errlen, "out of memory starting the fsync thread for", "the log", 0);
		return NULL;
	}
	s->fd = fd;
	s->retired = -1;
	s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->efd == -1) {
		audit_set_err(err, errlen, "cannot make an eventfd for", "the fsync thread", errno);
		free(s);
		return NULL;
	}
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	/* The thread takes no signal: they stay with the loop. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int rc = pthread_create(&s->thread, NULL, sync_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		audit_set_err(err, errlen, "cannot start", "the fsync thread", rc);
		close(s->efd);
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
		free(s);
		return NULL;
	}
	pthread_setname_np(s->thread, "egressd-audit");
	return s;
}

void audit_sync_written(struct audit_sync *s, uint64_t seq)
{
	pthread_mutex_lock(&s->mu);
	if (seq > s->written) {
		s->written = seq;
		pthread_cond_signal(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
}

void audit_sync_switch(struct audit_sync *s, int newfd, int oldfd)
{
	pthread_mutex_lock(&s->mu);
	int busy = s->retired != -1;
	if (!busy)
		s->retired = oldfd;
	s->fd = newfd;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	if (busy) {
		fdatasync(oldfd);
		close(oldfd);
	}
}

int audit_sync_notify_fd(const struct audit_sync *s)
{
	return s->efd;
}

void audit_sync_poll(struct audit_sync *s, struct audit_sync_report *r)
{
	uint64_t v;
	while (read(s->efd, &v, sizeof v) == (ssize_t)sizeof v)
		;
	pthread_mutex_lock(&s->mu);
	r->durable = s->durable > s->lost_hi ? s->durable : s->lost_hi;
	r->failing = s->failing;
	r->err = s->err;
	r->syncs = s->syncs;
	pthread_mutex_unlock(&s->mu);
}

enum audit_seq_state audit_sync_state(struct audit_sync *s, uint64_t seq)
{
	pthread_mutex_lock(&s->mu);
	enum audit_seq_state st = AUDIT_SEQ_PENDING;
	if (seq > s->lost_lo && seq <= s->lost_hi)
		st = AUDIT_SEQ_LOST;
	else if (seq <= s->durable)
		st = AUDIT_SEQ_DURABLE;
	pthread_mutex_unlock(&s->mu);
	return st;
}

uint64_t audit_sync_rounds(struct audit_sync *s)
{
	pthread_mutex_lock(&s->mu);
	uint64_t n = s->syncs;
	pthread_mutex_unlock(&s->mu);
	return n;
}

void audit_sync_stop(struct audit_sync *s)
{
	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	if (s->retired != -1)
		close(s->retired);
	close(s->efd);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
