/* The audit log on the event loop (docs/audit.md, "In the proxy"): everything the proxy does so
 * that a decision is on record before its connection carries a byte, and so that writing the
 * log never blocks the loop.
 *
 * - The log says once on standard error when writing starts to fail and when it works again
 *   (its notice callback).
 * - Its backlog drains on a write event on the descriptor it waits for (a pipe, FIFO, terminal
 *   or socket whose reader is slow), or on a retry timer after a hard error (a full disk).
 * - Before dialling an allowed destination, a log that would refuse the decision record denies
 *   at once (503 audit-unavailable): nothing is dialled.
 * - After the allow record is written, a connection goes on at once; with audit.fsync it is
 *   held (reading neither side, no timer of its own) until the writer thread reports its seq
 *   durable, and denied if the record was refused, its fdatasync failed, or it is not durable
 *   within limits.connectTimeout.
 *
 * The mechanism is in audit/; this file is the proxy's glue, kept apart so that it moves as a
 * whole into whatever pipeline calls it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

#include "audit/audit.h"
#include "proxy/proxy.h"

struct proxy_audit_loop {
	struct proxy_server *srv;
	struct event *write_ev;   /* EV_WRITE on audit_wait_fd, while there is one */
	int write_fd;             /* the descriptor write_ev watches, or -1 */
	struct event *retry_ev;   /* a timer after a hard write error */
	struct event *notify_ev;  /* EV_READ on audit_notify_fd (audit.fsync) */
	struct event *hold_timer; /* the earliest deadline of a held connection */
	struct proxy_conn *held;  /* held connections, oldest (lowest seq) first */
	struct proxy_conn *held_tail;
};

#define AUDIT_DENY_DETAIL                                                                      \
	"egressd could not put this decision on record in its audit log (its standard error "  \
	"says why), so nothing was sent; retry once the audit log can be written again"

static void deny_unavailable(struct proxy_conn *c)
{
	struct proxy_outcome o;
	proxy_outcome_set(&o, 503, "audit-unavailable", "audit.path", "%s", AUDIT_DENY_DETAIL);
	proxy_deny(c, &o);
}

static void notice_cb(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "egressd: %s\n", msg);
}

static void write_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct proxy_audit_loop *al = arg;
	audit_flush(al->srv->audit);
}

static void retry_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct proxy_audit_loop *al = arg;
	audit_flush(al->srv->audit);
	/* Still failing: the log's state did not change, so no wake; ask again. */
	int ms = audit_retry_ms(al->srv->audit);
	if (ms != -1) {
		struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
		evtimer_add(al->retry_ev, &tv);
	}
}

/* The log's wait changed: watch the descriptor it waits for, arm or stop the retry. */
static void wake_cb(void *arg)
{
	struct proxy_audit_loop *al = arg;
	struct audit_log *log = al->srv->audit;
	if (log == NULL)
		return; /* still opening */
	int fd = audit_wait_fd(log);
	if (fd != al->write_fd) {
		if (al->write_ev != NULL) {
			event_free(al->write_ev);
			al->write_ev = NULL;
		}
		al->write_fd = -1;
		if (fd != -1) {
			al->write_ev = event_new(al->srv->base, fd, EV_WRITE | EV_PERSIST, write_cb, al);
			if (al->write_ev != NULL && event_add(al->write_ev, NULL) == 0)
				al->write_fd = fd;
		}
	}
	int ms = audit_retry_ms(log);
	if (ms == -1) {
		evtimer_del(al->retry_ev);
	} else if (!evtimer_pending(al->retry_ev, NULL)) {
		struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
		evtimer_add(al->retry_ev, &tv);
	}
}

static void unlink_held(struct proxy_audit_loop *al, struct proxy_conn *c)
{
	if (c->hold.prev != NULL)
		c->hold.prev->hold.nextc = c->hold.nextc;
	else
		al->held = c->hold.nextc;
	if (c->hold.nextc != NULL)
		c->hold.nextc->hold.prev = c->hold.prev;
	else
		al->held_tail = c->hold.prev;
	c->hold.prev = c->hold.nextc = NULL;
	c->hold.seq = 0;
}

static void arm_hold_timer(struct proxy_audit_loop *al)
{
	if (al->held == NULL) {
		evtimer_del(al->hold_timer);
		return;
	}
	uint64_t first = UINT64_MAX;
	for (struct proxy_conn *c = al->held; c != NULL; c = c->hold.nextc)
		if (c->hold.deadline_ms < first)
			first = c->hold.deadline_ms;
	uint64_t now = proxy_now_ms(), ms = first > now ? first - now : 0;
	struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
	evtimer_add(al->hold_timer, &tv);
}

/* Lets go of every held connection whose record is durable (in seq order) or lost. */
static void release_held(struct proxy_audit_loop *al)
{
	struct audit_log *log = al->srv->audit;
	for (;;) {
		struct proxy_conn *c = al->held;
		if (c == NULL)
			break;
		enum audit_seq_state st = audit_seq_state(log, c->hold.seq);
		if (st == AUDIT_SEQ_PENDING)
			break;
		void (*next)(struct proxy_conn *) = c->hold.next;
		unlink_held(al, c);
		/* Either may close c; the list no longer holds it. */
		if (st == AUDIT_SEQ_DURABLE)
			next(c);
		else
			deny_unavailable(c);
	}
	arm_hold_timer(al);
}

static void notify_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct proxy_audit_loop *al = arg;
	audit_durable_seq(al->srv->audit);
	release_held(al);
}

static void hold_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct proxy_audit_loop *al = arg;
	uint64_t now = proxy_now_ms();
	struct proxy_conn *c = al->held;
	while (c != NULL) {
		struct proxy_conn *next = c->hold.nextc;
		if (c->hold.deadline_ms <= now) {
			unlink_held(al, c);
			deny_unavailable(c);
			/* Start over: a denial may have closed others' state. */
			next = al->held;
		}
		c = next;
	}
	arm_hold_timer(al);
}

int proxy_audit_open(struct proxy_server *srv, const struct allow_config *cfg, char *err,
	size_t errlen)
{
	struct proxy_audit_loop *al = calloc(1, sizeof *al);
	if (al == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	al->srv = srv;
	al->write_fd = -1;
	srv->auditloop = al;
	al->retry_ev = evtimer_new(srv->base, retry_cb, al);
	al->hold_timer = evtimer_new(srv->base, hold_timer_cb, al);
	if (al->retry_ev == NULL || al->hold_timer == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	struct audit_opts o = {.chain = cfg->audit_chain,
		.fsync = cfg->audit_fsync,
		.notice = notice_cb,
		.wake = wake_cb,
		.arg = al};
	srv->audit = audit_open(cfg->audit_path, &o, err, errlen);
	if (srv->audit == NULL)
		return -1;
	int nfd = audit_notify_fd(srv->audit);
	if (nfd != -1) {
		al->notify_ev = event_new(srv->base, nfd, EV_READ | EV_PERSIST, notify_cb, al);
		if (al->notify_ev == NULL || event_add(al->notify_ev, NULL) == -1) {
			snprintf(err, errlen, "cannot watch the fsync thread's descriptor");
			return -1;
		}
	}
	return 0;
}

void proxy_audit_close(struct proxy_server *srv)
{
	struct proxy_audit_loop *al = srv->auditloop;
	if (al != NULL) {
		if (al->write_ev != NULL)
			event_free(al->write_ev);
		if (al->retry_ev != NULL)
			event_free(al->retry_ev);
		if (al->notify_ev != NULL)
			event_free(al->notify_ev);
		if (al->hold_timer != NULL)
			event_free(al->hold_timer);
		/* Closing the log may still call wake: it must find nothing to arm. */
		al->write_ev = al->retry_ev = al->notify_ev = al->hold_timer = NULL;
	}
	audit_close(srv->audit);
	srv->audit = NULL;
	free(al);
	srv->auditloop = NULL;
}

int proxy_audit_admit(struct proxy_conn *c)
{
	if (audit_admit(c->srv->audit))
		return 0;
	deny_unavailable(c);
	return -1;
}

void proxy_audit_wait(struct proxy_conn *c, uint64_t seq, void (*next)(struct proxy_conn *))
{
	struct proxy_audit_loop *al = c->srv->auditloop;
	enum audit_seq_state st = seq == 0 ? AUDIT_SEQ_LOST : audit_seq_state(c->srv->audit, seq);
	if (st == AUDIT_SEQ_DURABLE) {
		next(c);
		return;
	}
	if (st == AUDIT_SEQ_LOST) {
		deny_unavailable(c);
		return;
	}
	/* Held: neither side is read, so no byte moves and no event of either side runs; the
	 * client half waits (no deadline of its own: the hold has one).  next() sets up reading,
	 * the states and the timer again. */
	proxy_client_set(c, PROXY_CLIENT_WAIT);
	if (c->client.bev != NULL)
		bufferevent_disable(c->client.bev, EV_READ);
	if (c->up.bev != NULL)
		bufferevent_disable(c->up.bev, EV_READ);
	c->hold.seq = seq;
	c->hold.next = next;
	c->hold.deadline_ms = proxy_now_ms() + c->srv->gen->cfg->limits.connect_timeout_ms;
	c->hold.nextc = NULL;
	c->hold.prev = al->held_tail;
	if (al->held_tail != NULL)
		al->held_tail->hold.nextc = c;
	else
		al->held = c;
	al->held_tail = c;
	if (!evtimer_pending(al->hold_timer, NULL))
		arm_hold_timer(al);
}

void proxy_audit_wait_cancel(struct proxy_conn *c)
{
	if (c->hold.seq == 0 || c->srv->auditloop == NULL)
		return;
	unlink_held(c->srv->auditloop, c);
}
