/* bench/relay.c: the floor for a CONNECT proxy on this machine.
 *
 * A CONNECT relay with nothing but the second hop: it reads a CONNECT line, connects to
 * 127.0.0.1 at the port named (no allowlist, no resolver, no audit record, no SNI peek), answers
 * 200 and splices both ways through pipes, in one epoll loop.  Whatever any proxy pays over DIRECT
 * on this machine, this pays too; bench/run measures it beside egressd on the CONNECT figures so
 * that egressd's share of the gap to DIRECT can be told from the machine's.  It is a benchmark
 * instrument only: it must never listen anywhere but loopback.
 *
 * usage: relay PORT   (0: any free port; prints "listening on 127.0.0.1:PORT") */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define PIPE_BYTES (1024 * 1024)
#define HEAD_MAX 4096

struct conn;

/* epoll data: a direction, or a connection while its head is read. */
struct tag {
	int is_dir;
	void *p;
};

/* One direction: src -> pipe -> dst. */
struct dir {
	struct tag tag;
	struct conn *c;
	int src, dst;
	int pipe[2];
	size_t inpipe;
	int eof;
};

struct conn {
	struct tag tag;
	struct conn *next_dead;
	int cfd, ufd;
	char head[HEAD_MAX];
	size_t hlen;
	int relaying;
	int done;
	struct dir d[2]; /* [0] client -> upstream, [1] upstream -> client */
};

static int ep;
static struct conn *dead; /* closed this batch, freed after it (later events may name them) */

static void nodelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void conn_close(struct conn *c)
{
	if (c->done)
		return;
	c->done = 1;
	for (int i = 0; i < 2; i++)
		if (c->d[i].pipe[0] != -1) {
			close(c->d[i].pipe[0]);
			close(c->d[i].pipe[1]);
		}
	if (c->cfd != -1)
		close(c->cfd); /* closing leaves the epoll set */
	if (c->ufd != -1)
		close(c->ufd);
	c->next_dead = dead;
	dead = c;
}

/* Writes what the pipe holds to dst, waiting (poll) while dst cannot take more: a write waits
 * for its peer, which on loopback is brief, and keeps this floor free of write events. */
static int drain(struct dir *d)
{
	while (d->inpipe > 0) {
		ssize_t n = splice(d->pipe[0], NULL, d->dst, NULL, d->inpipe,
			SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			d->inpipe -= (size_t)n;
			continue;
		}
		if (n == -1 && errno == EAGAIN) {
			struct pollfd p = {.fd = d->dst, .events = POLLOUT};
			if (poll(&p, 1, -1) == -1 && errno != EINTR)
				return -1;
			continue;
		}
		return -1;
	}
	return 0;
}

/* Moves what src has now (the sockets are non-blocking; level-triggered epoll reports more). */
static int pump(struct dir *d)
{
	for (;;) {
		ssize_t n = splice(d->src, NULL, d->pipe[1], NULL, PIPE_BYTES,
			SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n == 0) {
			d->eof = 1;
			shutdown(d->dst, SHUT_WR);
			epoll_ctl(ep, EPOLL_CTL_DEL, d->src, NULL);
			return 0;
		}
		if (n < 0)
			return errno == EAGAIN ? 0 : -1;
		d->inpipe = (size_t)n;
		if (drain(d) == -1)
			return -1;
		if (n < PIPE_BYTES)
			return 0; /* drained: wait for more */
	}
}

static int start_relay(struct conn *c)
{
	char *end = memmem(c->head, c->hlen, "\r\n\r\n", 4);
	if (end == NULL)
		return c->hlen < sizeof c->head ? 0 : -1;
	unsigned port = 0;
	char host[256];
	if (sscanf(c->head, "CONNECT %255[^: ]:%u ", host, &port) != 2 || port == 0 || port > 65535)
		return -1;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->ufd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->ufd == -1 || connect(c->ufd, (struct sockaddr *)&sa, sizeof sa) == -1)
		return -1;
	nodelay(c->ufd);
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	if (write(c->cfd, ok, sizeof ok - 1) != (ssize_t)(sizeof ok - 1))
		return -1;
	size_t used = (size_t)(end + 4 - c->head);
	if (c->hlen > used && write(c->ufd, c->head + used, c->hlen - used) != (ssize_t)(c->hlen - used))
		return -1;
	int fl = fcntl(c->ufd, F_GETFL);
	fcntl(c->ufd, F_SETFL, fl | O_NONBLOCK);
	for (int i = 0; i < 2; i++) {
		struct dir *d = &c->d[i];
		d->c = c;
		d->src = i == 0 ? c->cfd : c->ufd;
		d->dst = i == 0 ? c->ufd : c->cfd;
		if (pipe2(d->pipe, O_CLOEXEC) == -1)
			return -1;
		fcntl(d->pipe[1], F_SETPIPE_SZ, PIPE_BYTES);
		d->tag.is_dir = 1;
		d->tag.p = d;
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &d->tag};
		int op = i == 0 ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
		if (epoll_ctl(ep, op, d->src, &ev) == -1)
			return -1;
	}
	c->relaying = 1;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: relay PORT\n");
		return 2;
	}
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	setsockopt(lfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof sa;
	if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) == -1 || listen(lfd, 4096) == -1 ||
		getsockname(lfd, (struct sockaddr *)&sa, &len) == -1) {
		perror("relay: listen");
		return 1;
	}
	printf("listening on 127.0.0.1:%u\n", ntohs(sa.sin_port));
	fflush(stdout);
	ep = epoll_create1(EPOLL_CLOEXEC);
	struct tag ltag = {0, NULL};
	struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &ltag};
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);
	struct epoll_event evs[64];
	for (;;) {
		int n = epoll_wait(ep, evs, 64, -1);
		if (n < 0 && errno != EINTR)
			return 1;
		for (int i = 0; i < n; i++) {
			struct tag *t = evs[i].data.ptr;
			if (t == &ltag) {
				int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
				if (fd == -1)
					continue;
				struct conn *c = calloc(1, sizeof *c);
				if (c == NULL) {
					close(fd);
					continue;
				}
				c->cfd = fd;
				c->ufd = -1;
				c->d[0].pipe[0] = c->d[0].pipe[1] = c->d[1].pipe[0] = c->d[1].pipe[1] = -1;
				c->tag.is_dir = 0;
				c->tag.p = c;
				struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &c->tag};
				epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
				continue;
			}
			if (!t->is_dir) {
				struct conn *c = t->p;
				if (c->done || c->relaying)
					continue;
				ssize_t r = read(c->cfd, c->head + c->hlen, sizeof c->head - c->hlen);
				if (r < 0 && errno == EAGAIN)
					continue;
				if (r > 0) {
					c->hlen += (size_t)r;
					if (start_relay(c) == 0)
						continue;
				}
				conn_close(c);
				continue;
			}
			struct dir *d = t->p;
			struct conn *c = d->c;
			if (c->done)
				continue;
			if (pump(d) == -1 || (c->d[0].eof && c->d[1].eof))
				conn_close(c);
		}
		while (dead != NULL) {
			struct conn *c = dead;
			dead = c->next_dead;
			free(c);
		}
	}
}
