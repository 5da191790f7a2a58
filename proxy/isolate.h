/* CMD as a child of egressd, optionally confined to its own network namespace (docs/design.md
 * 1.2, `egressd exec [--isolate]`; docs/isolate.md).
 *
 * Without namespaces this is a plain child: fork, wait for the caller's go, exec CMD.  With them
 * the child first enters new user, network and mount namespaces and, inside them:
 *   - brings lo up, gives it 192.0.0.8/32 and fd65:6772:6573:7364::1/128 (RFC 7600's dummy
 *     address, and a ULA) and routes the default of both families through lo, so that a connect
 *     to any address is routed (the namespace has no other interface: no packet can leave it);
 *   - installs nftables rules (table inet egressd): TCP and UDP to port 53 of any address go to
 *     the DNS port; TCP to any address that is not the namespace's own goes to the transparent
 *     port; every other packet bound for an address outside the namespace is dropped (UDP,
 *     QUIC, ICMP), TCP with a reset when there is no transparent port;
 *   - bind-mounts a private, read-only /etc/resolv.conf naming 127.0.0.1 (when the file
 *     exists; glibc's default without one is 127.0.0.1 too, and port 53 is redirected anyway);
 *   - creates the listening sockets the caller asks for, bound to 127.0.0.1 or ::1 of that
 *     namespace, and hands them to the parent over a Unix socketpair (SCM_RIGHTS);
 *   - waits for the parent's go and execs CMD.
 * When any step fails, proxy_isolate_start returns NULL with the reason and CMD never runs.
 * Nothing is written to disk; the namespaces end when CMD's last process has exited and the
 * caller has closed the sockets (each socket holds its namespace).
 *
 * The user namespace is made in both cases: when egressd is root it maps every id the parent
 * sees to itself (CMD keeps root's access to files, and holds capabilities only over its own
 * namespaces: it cannot enter egressd's network namespace back); otherwise it maps the caller's
 * uid and gid to themselves, and CMD runs without capabilities.
 *
 * The terminal: CMD inherits descriptors 0, 1 and 2, egressd's process group and session, so the
 * terminal, job control (Ctrl-Z, fg) and the terminal's signals reach it as if egressd were not
 * there; egressd must never read its standard input.  Other inherited descriptors pass to CMD,
 * except sockets that are not Unix sockets (with namespaces: they would be a way out of them).
 *
 * Signals: proxy_isolate_signals_open blocks SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGUSR1 in the
 * caller and returns a signalfd for its event loop; proxy_isolate_signals_forward passes each
 * but SIGUSR1 (egressd's own: the caller reopens its audit log) to CMD
 * unless the kernel already delivered it to CMD's process group (a key on the terminal), so CMD
 * sees each signal once.  CMD's own signal mask and dispositions start at the defaults.
 * CMD gets SIGKILL if egressd dies first (PR_SET_PDEATHSIG).
 *
 * Not thread-safe: call from the thread that runs the event loop, in a process whose other
 * threads (if any) do not fork. */
#ifndef EGRESSD_PROXY_ISOLATE_H
#define EGRESSD_PROXY_ISOLATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* At most this many listening sockets per child. */
#define PROXY_ISOLATE_MAX_SOCKS 16
/* The addresses the namespace gives lo besides 127.0.0.1 and ::1 (the source of redirected
 * connections: a transparent listener sees its clients come from them). */
#define PROXY_ISOLATE_ADDR4 "192.0.0.8"
#define PROXY_ISOLATE_ADDR6 "fd65:6772:6573:7364::1"
/* The nftables table inside the namespace (its chains: divert, guard). */
#define PROXY_ISOLATE_TABLE "egressd"

enum proxy_isolate_role {
	PROXY_ISOLATE_PLAIN,       /* reached at its address only (the proxy, SOCKS5); no rule */
	PROXY_ISOLATE_TRANSPARENT, /* every TCP connection leaving the namespace is redirected here
	                            */
	PROXY_ISOLATE_DNS,         /* UDP and TCP to port 53 of any address are redirected here */
};

/* One listening socket to create inside the namespace.  Sockets of one role share one port: a
 * port of 0 takes the port an earlier socket of the same role got (any free one for the first).
 * A redirected role needs an AF_INET and an AF_INET6 socket (of each type it serves: TCP for the
 * transparent role; UDP and TCP for DNS), since IPv6 connections are redirected to ::1. */
struct proxy_isolate_sock {
	enum proxy_isolate_role role; /* in */
	int type;                     /* in: SOCK_STREAM (listening, backlog 4096) or SOCK_DGRAM */
	int family;                   /* in: AF_INET (127.0.0.1) or AF_INET6 (::1, IPv6 only) */
	uint16_t port;                /* in: the port wanted, 0 for any; out: the port bound */
	int fd;                       /* out: the socket, in CMD's network namespace, non-blocking
	                                 and close-on-exec, owned by the caller; -1 until then */
};

struct proxy_isolate_opts {
	int namespaces;    /* 1: new user, network, mount namespaces; 0: plain child */
	char *const *argv; /* CMD and its arguments; argv[0] is looked up in PATH */
	char *const *envp; /* CMD's environment; NULL for egressd's own */
	struct proxy_isolate_sock *socks; /* namespaces only: filled in by proxy_isolate_start */
	size_t nsocks;                    /* at most PROXY_ISOLATE_MAX_SOCKS */
};

struct proxy_isolate_child;

/* Starts the child and, with namespaces, sets them up and fills in o->socks (fd and port).
 * Returns when the child waits for the go, or NULL with a one-line reason in err (for example
 * "cannot create a user namespace: Operation not permitted (unprivileged user namespaces are
 * disabled: ...)"); then no child is left and no socket is open.  CMD has not run yet. */
struct proxy_isolate_child *proxy_isolate_start(
        struct proxy_isolate_opts *o, char *err, size_t errlen);

/* Lets CMD run: the child execs it.  Returns 0 once the exec succeeded, or -1 with the reason
 * when CMD could not be executed ("CMD: No such file or directory"); the child then exits with
 * status 127 (not found) or 126 (found, not executable), which proxy_isolate_reap reports. */
int proxy_isolate_go(struct proxy_isolate_child *c, char *err, size_t errlen);

/* CMD's process id (in egressd's pid namespace). */
pid_t proxy_isolate_pid(const struct proxy_isolate_child *c);

/* A descriptor that becomes readable when CMD has exited (a pidfd): watch it in the event loop,
 * then call proxy_isolate_reap.  Owned by c. */
int proxy_isolate_exit_fd(const struct proxy_isolate_child *c);

/* Collects CMD's status without blocking: 1 when it has exited (*code is its exit status, or
 * 128+N when signal N killed it, as a shell reports it), 0 while it runs, -1 on error. */
int proxy_isolate_reap(struct proxy_isolate_child *c, int *code);

/* Blocks SIGINT, SIGTERM, SIGHUP and SIGQUIT in the calling thread and returns a non-blocking,
 * close-on-exec signalfd for them (-1 on error, errno set).  Open it before proxy_isolate_start
 * so that no signal is lost in between; the child unblocks them for CMD. */
int proxy_isolate_signals_open(void);

/* Reads every pending signal from sfd and sends each to CMD, except one the kernel sent to the
 * terminal's foreground process group while CMD is in egressd's group (CMD got it already).
 * Returns how many were sent on (the last signal read, forwarded or not, in *last when not
 * NULL; 0 when none), or -1 on a read error; SIGUSR1 is never sent on, only counted in *usr1
 * when not NULL.  Before proxy_isolate_go a forwarded signal ends the child instead (CMD never
 * starts). */
int proxy_isolate_signals_forward(struct proxy_isolate_child *c, int sfd, int *last, int *usr1);

/* Closes sfd and unblocks the signals proxy_isolate_signals_open blocked. */
void proxy_isolate_signals_close(int sfd);

/* How many packets the namespace's rules refused so far (UDP, QUIC, ICMP dropped; TCP reset when
 * there is no transparent port), for the summary at the end: read through any socket
 * proxy_isolate_start handed back (the socket keeps the namespace alive after CMD's exit).
 * Forks a short-lived helper that enters the namespace.  0, or -1 with the reason in err. */
int proxy_isolate_refused(int sock, uint64_t *packets, char *err, size_t errlen);

/* Ends the child (SIGKILL if CMD still runs), reaps it and frees c.  The sockets of the opts
 * stay the caller's to close.  NULL is accepted. */
void proxy_isolate_free(struct proxy_isolate_child *c);

#endif
