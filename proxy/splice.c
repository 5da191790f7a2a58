/* The zero-copy tunnel relay: splice(2) through a pipe, per direction.
 *
 * libevent's bufferevents read at most 4 KiB per wakeup, which caps a tunnel far below what the
 * machine can move.  Once a tunnel is established and its first bytes were checked (tunnel.c), both
 * sockets leave their bufferevents (which keep owning the descriptors) and each direction moves
 * bytes socket -> pipe -> socket in the kernel.  Bytes still buffered from the bufferevent phase
 * (the 200 answer, the peeked ClientHello, a server banner) go out first.  Pipes come from a small
 * per-process pool and go back to it whenever they are empty, so an idle tunnel holds none.
 * Backpressure is the pipe itself: a direction stops reading its source while its pipe cannot be
 * emptied into the destination. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "proxy/proxy.h"

/* Bytes a pipe holds (F_SETPIPE_SZ), which is also the largest splice.  Larger pipes move a
 * busy tunnel with fewer, larger splices and fewer acknowledgements: egressd's CPU per 64 MiB
 * of raw CONNECT measured 55 ms with 256 KiB pipes, 37 ms with 512 KiB and 31 ms with 1 MiB
 * (Linux's fs.pipe-max-size for unprivileged processes).  A pipe's capacity counts against its
 * user's fs.pipe-user-pages-soft (64 MiB by default) whether or not it holds bytes, so only
 * the first PIPES_BIG pipes alive are that large; the rest take PIPE_SIZE. */
#define PIPE_SIZE_BIG (1024 * 1024)
#define PIPES_BIG 32
#define PIPE_SIZE (256 * 1024)
#define POOL_MAX 64            /* empty pipes kept for reuse */
#define READS_PER_WAKEUP 8     /* splices from one source per event, so one tunnel cannot starve others */

struct pipe_pool {
	int fds[POOL_MAX][2];
	size_t cap[POOL_MAX];
	size_t n;
};

static struct pipe_pool pool; /* the loop is single-threaded; one pool per process */
static size_t pipes_alive;    /* pipes open, pooled or in use */

size_t proxy_splice_pipes(void)
{
	return pipes_alive;
}

/* An empty pipe and the bytes it holds (less than asked when the system's pipe limits refused
 * the larger size). */
static int pipe_get(int p[2], size_t *cap)
{
	if (pool.n > 0) {
		pool.n--;
		p[0] = pool.fds[pool.n][0];
		p[1] = pool.fds[pool.n][1];
		*cap = pool.cap[pool.n];
		return 0;
	}
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) == -1)
		return -1;
	pipes_alive++;
	int want = pipes_alive <= PIPES_BIG ? PIPE_SIZE_BIG : PIPE_SIZE;
	int sz = fcntl(p[1], F_SETPIPE_SZ, want);
	if (sz == -1 && want > PIPE_SIZE)
		sz = fcntl(p[1], F_SETPIPE_SZ, PIPE_SIZE);
	if (sz == -1)
		sz = fcntl(p[1], F_GETPIPE_SZ);
	*cap = sz > 0 && sz < PIPE_SIZE_BIG ? (size_t)sz : PIPE_SIZE_BIG;
	return 0;
}

/* Returns an empty pipe to the pool (or closes it); a pipe holding bytes is always closed. */
static void pipe_put(int p[2], size_t cap, int empty)
{
	if (p[0] == -1)
		return;
	if (empty && pool.n < POOL_MAX) {
		pool.fds[pool.n][0] = p[0];
		pool.fds[pool.n][1] = p[1];
		pool.cap[pool.n] = cap;
		pool.n++;
	} else {
		close(p[0]);
		close(p[1]);
		pipes_alive--;
	}
	p[0] = p[1] = -1;
}

/* A source's read event and a destination's write event, and which of them are added. */
struct ev_pair {
	struct event *rd, *wr;
	int rd_on, wr_on;
};

static void want(struct ev_pair *e, int rd, int wr)
{
	if (rd != e->rd_on) {
		if (rd)
			event_add(e->rd, NULL);
		else
			event_del(e->rd);
		e->rd_on = rd;
	}
	if (wr != e->wr_on) {
		if (wr)
			event_add(e->wr, NULL);
		else
			event_del(e->wr);
		e->wr_on = wr;
	}
}

static void ev_pair_free(struct ev_pair *e)
{
	if (e->rd != NULL)
		event_free(e->rd);
	if (e->wr != NULL)
		event_free(e->wr);
	e->rd = e->wr = NULL;
}

static const char *write_end(int err)
{
	return err == EPIPE || err == ECONNRESET ? "client-closed" : "error";
}

/* Writes what a pipe holds (*inpipe bytes) to dst.  1 when it is empty; 0 when dst is full (its
 * write event is added); -1 when the connection was closed (an end of the client's is
 * client-closed when to_client says dst is the client).  Progress keeps the connection from
 * idleTimeout: a slow but steady reader is not idle. */
static int drain(struct proxy_conn *c, int rd, int dst, size_t *inpipe, struct ev_pair *ev,
	int to_client)
{
	while (*inpipe > 0) {
		ssize_t n = splice(rd, NULL, dst, NULL, *inpipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n == -1) {
			if (errno == EAGAIN || errno == EINTR) {
				want(ev, 0, 1);
				return 0;
			}
			proxy_conn_close(c, to_client ? write_end(errno) : "error");
			return -1;
		}
		*inpipe -= (size_t)n;
		proxy_conn_touch(c);
	}
	return 1;
}

struct proxy_splice_dir {
	struct proxy_conn *c;
	int src, dst;          /* socket descriptors (owned by the bufferevents) */
	int pipe[2];           /* -1 while no bytes are in flight */
	size_t pipe_cap;       /* what that pipe holds */
	size_t inpipe;         /* bytes in the pipe */
	struct evbuffer *pre;  /* bytes to write before anything spliced */
	struct ev_pair ev;     /* src readable, dst writable */
	int outbound;          /* client to upstream */
	int eof;               /* src ended */
	int shut;              /* dst's write side shut down */
};

struct proxy_splice {
	struct proxy_splice_dir dir[2]; /* [0] client -> upstream, [1] upstream -> client */
	int fd[2];                      /* client and upstream sockets, owned once taken over */
};

/* -1: the connection was closed. */
static int finish_dir(struct proxy_splice_dir *d)
{
	struct proxy_conn *c = d->c;
	struct proxy_splice_dir *other = &c->relay->dir[d == &c->relay->dir[0]];
	if (other->shut) {
		/* Both ways are done: closing sends the FIN a shutdown would.  The tunnel ended
		 * the way its first side did. */
		proxy_conn_close(c, c->first_end != NULL ? c->first_end : "client-closed");
		return -1;
	}
	if (!d->shut) {
		shutdown(d->dst, SHUT_WR);
		d->shut = 1;
	}
	return 0;
}

/* How many of len bytes the connection's session may still move in that direction; 0 when its
 * byte limit is spent.  Every tunnel of the session draws on the same budget, and each splice
 * is counted before the next one asks, so parallel tunnels never cross it together. */
static size_t allowed(struct proxy_conn *c, int outbound, size_t len)
{
	uint64_t room = proxy_conn_room(c, outbound);
	return room < len ? (size_t)room : len;
}

/* Moves what it can in one direction; returns -1 when the connection was closed.  With
 * may_read 0 it only writes what is pending and then waits for the source to be readable. */
static int pump(struct proxy_splice_dir *d, int may_read)
{
	struct proxy_conn *c = d->c;
	while (d->pre != NULL && evbuffer_get_length(d->pre) > 0) {
		int n = evbuffer_write(d->pre, d->dst);
		if (n == -1) {
			if (errno == EAGAIN || errno == EINTR) {
				want(&d->ev, 0, 1);
				return 0;
			}
			proxy_conn_close(c, "error");
			return -1;
		}
	}
	if (d->pre != NULL) {
		/* Sent: an idle tunnel keeps no buffer. */
		evbuffer_free(d->pre);
		d->pre = NULL;
	}
	int drained = !may_read; /* the source had nothing more when last asked */
	for (int round = 0;; round++) {
		int w = drain(c, d->pipe[0], d->dst, &d->inpipe, &d->ev, 0);
		if (w <= 0)
			return w;
		pipe_put(d->pipe, d->pipe_cap, 1);
		if (d->eof || drained || round == READS_PER_WAKEUP)
			break;
		size_t len = allowed(c, d->outbound, PIPE_SIZE_BIG);
		if (len == 0) {
			proxy_conn_close(c, "limit-bytes");
			return -1;
		}
		if (d->pipe[0] == -1 && pipe_get(d->pipe, &d->pipe_cap) == -1) {
			proxy_conn_close(c, "error");
			return -1;
		}
		if (len > d->pipe_cap)
			len = d->pipe_cap;
		ssize_t n = splice(d->src, NULL, d->pipe[1], NULL, len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n == 0) {
			d->eof = 1;
			if (c->first_end == NULL)
				c->first_end = d->outbound ? "client-closed" : "upstream-closed";
			break;
		}
		if (n == -1) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			proxy_conn_close(c, "error");
			return -1;
		}
		d->inpipe = (size_t)n;
		/* A short read emptied the socket: asking again would only return EAGAIN.  The read
		 * event is level-triggered, so bytes arriving meanwhile are reported at once. */
		drained = (size_t)n < len;
		proxy_conn_touch(c);
		proxy_count(c, d->outbound ? (uint64_t)n : 0, d->outbound ? 0 : (uint64_t)n);
	}
	pipe_put(d->pipe, d->pipe_cap, d->inpipe == 0);
	if (d->eof) {
		want(&d->ev, 0, 0);
		return finish_dir(d);
	}
	want(&d->ev, 1, 0);
	return 0;
}

static void on_event(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	pump(arg, 1);
}

/* A bufferevent's output is frozen at its front (only libevent drains it); thaw it to move what
 * it holds.  The bufferevent is disabled by then and never writes again. */
static int take_output(struct evbuffer *pre, struct bufferevent *bev)
{
	struct evbuffer *out = bufferevent_get_output(bev);
	evbuffer_unfreeze(out, 1);
	int rc = evbuffer_add_buffer(pre, out);
	evbuffer_freeze(out, 1);
	return rc;
}

int proxy_splice_start(struct proxy_conn *c)
{
	struct proxy_splice *sp = calloc(1, sizeof *sp);
	if (sp == NULL)
		return -1;
	sp->fd[0] = sp->fd[1] = -1;
	int cfd = (int)bufferevent_getfd(c->client.bev), ufd = (int)bufferevent_getfd(c->up.bev);
	for (int i = 0; i < 2; i++) {
		struct proxy_splice_dir *d = &sp->dir[i];
		d->c = c;
		d->outbound = i == 0;
		d->src = i == 0 ? cfd : ufd;
		d->dst = i == 0 ? ufd : cfd;
		d->pipe[0] = d->pipe[1] = -1;
		d->pre = evbuffer_new();
		d->ev.rd = event_new(c->srv->base, d->src, EV_READ | EV_PERSIST, on_event, d);
		d->ev.wr = event_new(c->srv->base, d->dst, EV_WRITE | EV_PERSIST, on_event, d);
		if (d->pre == NULL || d->ev.rd == NULL || d->ev.wr == NULL) {
			c->relay = sp;
			proxy_splice_free(c);
			return -1;
		}
	}
	c->relay = sp;
	bufferevent_disable(c->client.bev, EV_READ | EV_WRITE);
	bufferevent_disable(c->up.bev, EV_READ | EV_WRITE);
	/* What the bufferevents still hold goes first, in order.  Their inputs are tunnel bytes not
	 * counted yet; their outputs were counted when they were queued (or are egressd's own 200). */
	uint64_t cin = evbuffer_get_length(bufferevent_get_input(c->client.bev));
	uint64_t uin = evbuffer_get_length(bufferevent_get_input(c->up.bev));
	proxy_count(c, cin, uin);
	if (take_output(sp->dir[0].pre, c->up.bev) == -1 ||
		evbuffer_add_buffer(sp->dir[0].pre, bufferevent_get_input(c->client.bev)) == -1 ||
		take_output(sp->dir[1].pre, c->client.bev) == -1 ||
		evbuffer_add_buffer(sp->dir[1].pre, bufferevent_get_input(c->up.bev)) == -1) {
		proxy_conn_close(c, "error");
		return 0;
	}
	if (c->client.eof && c->first_end == NULL)
		c->first_end = "client-closed";
	if (c->up.eof && c->first_end == NULL)
		c->first_end = "upstream-closed";
	sp->dir[0].eof = c->client.eof;
	sp->dir[1].eof = c->up.eof;
	/* The sockets leave their bufferevents, which are freed: an idle tunnel is the connection,
	 * the relay and its four events. */
	sp->fd[0] = cfd;
	sp->fd[1] = ufd;
	bufferevent_setfd(c->client.bev, -1);
	bufferevent_setfd(c->up.bev, -1);
	bufferevent_free(c->client.bev);
	bufferevent_free(c->up.bev);
	c->client.bev = NULL;
	c->up.bev = NULL;
	/* The sockets were just read by their bufferevents: rather than ask each again (usually
	 * for EAGAIN), write what is pending and wait for them to be readable. */
	if (pump(&sp->dir[0], 0) == -1)
		return 0;
	pump(&sp->dir[1], 0);
	return 0;
}

void proxy_splice_free(struct proxy_conn *c)
{
	struct proxy_splice *sp = c->relay;
	if (sp == NULL)
		return;
	for (int i = 0; i < 2; i++) {
		struct proxy_splice_dir *d = &sp->dir[i];
		ev_pair_free(&d->ev);
		if (d->pre != NULL)
			evbuffer_free(d->pre);
		pipe_put(d->pipe, d->pipe_cap, d->inpipe == 0);
		if (sp->fd[i] != -1) {
			close(sp->fd[i]);
			c->srv->nsockets--;
		}
	}
	free(sp);
	c->relay = NULL;
}

/* ---- response bodies of plain HTTP ----
 *
 * A response body that is not re-framed (Content-Length, or ended by the upstream closing) and
 * still has at least PROXY_BODY_SPLICE_MIN bytes to come moves upstream -> pipe -> client the
 * same way, instead of 4 KiB per bufferevent read (libevent 2.1's cap) copied twice.  The
 * upstream's bufferevent stops reading meanwhile; exactly the body's bytes are taken, so the
 * next response on a kept-alive upstream is left in its socket for the parser.  The response
 * head has been written (the client's output is empty) before the first spliced byte. */
struct proxy_body {
	int src, dst;
	int pipe[2];
	size_t pipe_cap, inpipe;
	uint64_t left;          /* body bytes still to read; UINT64_MAX: until the upstream closes */
	struct ev_pair ev;      /* upstream readable, client writable */
};

static void body_pump(struct proxy_conn *c)
{
	struct proxy_body *b = c->body;
	int drained = 0;
	for (int round = 0;; round++) {
		if (drain(c, b->pipe[0], b->dst, &b->inpipe, &b->ev, 1) <= 0)
			return;
		pipe_put(b->pipe, b->pipe_cap, 1);
		if (b->left == 0) {
			proxy_body_splice_free(c);
			proxy_fwd_body_done(c, 0);
			return;
		}
		if (drained || round == READS_PER_WAKEUP)
			break;
		size_t len = allowed(c, 0, PIPE_SIZE_BIG);
		if (len == 0) {
			proxy_conn_close(c, "limit-bytes");
			return;
		}
		if (b->pipe[0] == -1 && pipe_get(b->pipe, &b->pipe_cap) == -1) {
			proxy_conn_close(c, "error");
			return;
		}
		if (len > b->pipe_cap)
			len = b->pipe_cap;
		if (len > b->left)
			len = (size_t)b->left;
		ssize_t n = splice(b->src, NULL, b->pipe[1], NULL, len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n == 0) {
			pipe_put(b->pipe, b->pipe_cap, 1);
			if (b->left == UINT64_MAX) {
				/* The body ends where the upstream closes. */
				proxy_body_splice_free(c);
				proxy_fwd_body_done(c, 1);
			} else {
				proxy_conn_close(c, "upstream-closed");
			}
			return;
		}
		if (n == -1) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			proxy_conn_close(c, "error");
			return;
		}
		b->inpipe = (size_t)n;
		if (b->left != UINT64_MAX)
			b->left -= (uint64_t)n;
		drained = (size_t)n < len;
		proxy_conn_touch(c);
		proxy_count(c, 0, (uint64_t)n);
	}
	pipe_put(b->pipe, b->pipe_cap, b->inpipe == 0);
	want(&b->ev, 1, 0);
}

static void on_body_event(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	body_pump(arg);
}

int proxy_body_splice_start(struct proxy_conn *c, uint64_t left)
{
	struct proxy_body *b = calloc(1, sizeof *b);
	if (b == NULL)
		return -1;
	b->src = (int)bufferevent_getfd(c->up.bev);
	b->dst = (int)bufferevent_getfd(c->client.bev);
	b->pipe[0] = b->pipe[1] = -1;
	b->left = left;
	b->ev.rd = event_new(c->srv->base, b->src, EV_READ | EV_PERSIST, on_body_event, c);
	b->ev.wr = event_new(c->srv->base, b->dst, EV_WRITE | EV_PERSIST, on_body_event, c);
	c->body = b;
	if (b->ev.rd == NULL || b->ev.wr == NULL) {
		proxy_body_splice_free(c);
		return -1;
	}
	bufferevent_disable(c->up.bev, EV_READ);
	/* The upstream's bufferevent has just read what was there. */
	want(&b->ev, 1, 0);
	return 0;
}

void proxy_body_splice_free(struct proxy_conn *c)
{
	struct proxy_body *b = c->body;
	if (b == NULL)
		return;
	ev_pair_free(&b->ev);
	pipe_put(b->pipe, b->pipe_cap, b->inpipe == 0);
	free(b);
	c->body = NULL;
}
