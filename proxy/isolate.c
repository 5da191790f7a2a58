/* CMD as a child of egressd, optionally in its own user, network and mount namespaces (see
 * isolate.h and docs/isolate.md).
 *
 * The parent and the child talk over a SOCK_SEQPACKET socketpair, one struct isolate_msg per
 * message:
 *   child -> parent  U  the user namespace exists: write its uid and gid maps
 *   parent -> child  M  the maps are written
 *   child -> parent  R  set-up done; the listening sockets ride along (SCM_RIGHTS)
 *   parent -> child  G  exec CMD
 *   child -> parent  X  exec failed (errno); on success the parent reads EOF instead, since
 *                       the child's end is close-on-exec
 *   child -> parent  E  a set-up step failed (text); the child exits
 * The child never runs CMD unless every step before the R succeeded. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ioctl.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sched.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <linux/nsfs.h>
#include <linux/sockios.h>
#include <linux/rtnetlink.h>

#ifndef EGRESSD_STATIC
#include <dlfcn.h>
#include <nftables/libnftables.h>
#endif

#include "proxy/isolate.h"

extern char **environ;

/* How long the parent waits for each set-up step of the child. */
#define SETUP_TIMEOUT_MS 30000
/* The file that replaces /etc/resolv.conf inside the namespace. */
#define RESOLV_CONF                                                                                \
	"# egressd exec --isolate: every DNS query goes to egressd's DNS listener\n"               \
	"nameserver 127.0.0.1\n"

struct isolate_msg {
	char kind;                               /* U, M, R, G, X, E (see the top) */
	int err;                                 /* X: exec's errno */
	uint16_t ports[PROXY_ISOLATE_MAX_SOCKS]; /* R: the bound port of each socket */
	char text[400];                          /* E: why */
};

struct proxy_isolate_child {
	pid_t pid;
	int pidfd;  /* readable when the child has exited */
	int sp;     /* the parent's end of the socketpair; -1 after the go */
	int reaped; /* 1 once waitpid collected it */
	int code;   /* its exit status as a shell reports it, once reaped */
	int went;   /* 1 after the go */
};

static void set_err(char *err, size_t errlen, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (errlen == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------------------------------------ */
/* The child's side.  Everything here runs after fork, in a single-threaded copy of egressd, and
 * ends in exec or _exit. */

struct child {
	struct proxy_isolate_opts *o;
	int sp;
	struct isolate_msg msg; /* the E message being built */
};

static void child_fail(struct child *ch, const char *fmt, ...) __attribute__((format(printf, 2, 3)))
__attribute__((noreturn));

/* Sends the reason to the parent and exits; the parent reports it and never lets CMD run. */
static void child_fail(struct child *ch, const char *fmt, ...)
{
	memset(&ch->msg, 0, sizeof ch->msg);
	ch->msg.kind = 'E';
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ch->msg.text, sizeof ch->msg.text, fmt, ap);
	va_end(ap);
	(void)send(ch->sp, &ch->msg, sizeof ch->msg, MSG_NOSIGNAL);
	_exit(1);
}

/* Waits for the parent's message of kind want; exits quietly when the parent is gone. */
static void child_wait(struct child *ch, char want)
{
	struct isolate_msg m;
	ssize_t n;
	do
		n = recv(ch->sp, &m, sizeof m, 0);
	while (n == -1 && errno == EINTR);
	if (n != (ssize_t)sizeof m || m.kind != want)
		_exit(1);
}

/* Why unshare(CLONE_NEWUSER) failed, in words a user can act on. */
static const char *userns_hint(int e)
{
	switch (e) {
	case EPERM:
		return " (unprivileged user namespaces are disabled here: see the sysctls "
		       "kernel.unprivileged_userns_clone and "
		       "kernel.apparmor_restrict_unprivileged_userns, "
		       "or a seccomp filter of the container egressd runs in; or run egressd as "
		       "root; inside a chroot no user can make one: use a mount namespace and "
		       "pivot_root, as containers do)";
	case ENOSPC:
	case EUSERS:
		return " (the limit user.max_user_namespaces is reached or 0)";
	case EINVAL:
		return " (the kernel has no user namespaces: CONFIG_USER_NS)";
	default:
		return "";
	}
}

/* One netlink request to the kernel's routing socket, and its acknowledgement.  Returns 0 or a
 * negative errno. */
static int nl_talk(int fd, struct nlmsghdr *req)
{
	static uint32_t seq;
	req->nlmsg_seq = ++seq;
	req->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	if (sendto(fd, req, req->nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof kernel) == -1)
		return -errno;
	char buf[4096];
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof buf, 0);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		        h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_seq != req->nlmsg_seq || h->nlmsg_type != NLMSG_ERROR)
				continue;
			const struct nlmsgerr *e = NLMSG_DATA(h);
			return e->error; /* 0 for the acknowledgement */
		}
	}
}

/* A request under construction: the header, the family-specific part, attributes. */
struct nl_req {
	struct nlmsghdr h;
	char body[512];
};

static void nl_attr(struct nl_req *r, unsigned short type, const void *data, size_t len)
{
	struct rtattr *a = (struct rtattr *)((char *)&r->h + NLMSG_ALIGN(r->h.nlmsg_len));
	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	memcpy(RTA_DATA(a), data, len);
	r->h.nlmsg_len = NLMSG_ALIGN(r->h.nlmsg_len) + RTA_ALIGN(a->rta_len);
}

static int nl_link_up(int fd, int ifindex)
{
	struct nl_req r;
	memset(&r, 0, sizeof r);
	r.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
	r.h.nlmsg_type = RTM_NEWLINK;
	struct ifinfomsg *ifi = NLMSG_DATA(&r.h);
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	ifi->ifi_flags = IFF_UP;
	ifi->ifi_change = IFF_UP;
	return nl_talk(fd, &r.h);
}

static int nl_addr_add(int fd, int ifindex, int family, const void *addr, unsigned char plen)
{
	struct nl_req r;
	memset(&r, 0, sizeof r);
	r.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg));
	r.h.nlmsg_type = RTM_NEWADDR;
	r.h.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	struct ifaddrmsg *ifa = NLMSG_DATA(&r.h);
	ifa->ifa_family = (unsigned char)family;
	ifa->ifa_prefixlen = plen;
	ifa->ifa_flags = IFA_F_NODAD | IFA_F_PERMANENT;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_index = (unsigned)ifindex;
	size_t len = family == AF_INET ? 4 : 16;
	nl_attr(&r, IFA_LOCAL, addr, len);
	nl_attr(&r, IFA_ADDRESS, addr, len);
	return nl_talk(fd, &r.h);
}

/* The default route of a family through ifindex, from src. */
static int nl_default_route(int fd, int ifindex, int family, const void *src)
{
	struct nl_req r;
	memset(&r, 0, sizeof r);
	r.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
	r.h.nlmsg_type = RTM_NEWROUTE;
	r.h.nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	struct rtmsg *rt = NLMSG_DATA(&r.h);
	rt->rtm_family = (unsigned char)family;
	rt->rtm_dst_len = 0;
	rt->rtm_table = RT_TABLE_MAIN;
	rt->rtm_protocol = RTPROT_STATIC;
	rt->rtm_scope = family == AF_INET ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
	rt->rtm_type = RTN_UNICAST;
	uint32_t oif = (uint32_t)ifindex;
	nl_attr(&r, RTA_OIF, &oif, sizeof oif);
	nl_attr(&r, RTA_PREFSRC, src, family == AF_INET ? 4 : 16);
	return nl_talk(fd, &r.h);
}

/* lo up, its two extra addresses, and the default routes through it.  IPv6 is left out when
 * the kernel has none (then an AF_INET6 socket asked for fails on its own). */
static void child_net(struct child *ch)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd == -1)
		child_fail(
		        ch, "cannot open a netlink socket in the namespace: %s", strerror(errno));
	int lo = (int)if_nametoindex("lo");
	if (lo == 0)
		child_fail(ch, "the new network namespace has no lo: %s", strerror(errno));
	int rc = nl_link_up(fd, lo);
	if (rc < 0)
		child_fail(ch, "cannot bring lo up in the namespace: %s", strerror(-rc));
	struct in_addr a4;
	struct in6_addr a6;
	inet_pton(AF_INET, PROXY_ISOLATE_ADDR4, &a4);
	inet_pton(AF_INET6, PROXY_ISOLATE_ADDR6, &a6);
	if ((rc = nl_addr_add(fd, lo, AF_INET, &a4, 32)) < 0)
		child_fail(ch, "cannot add %s to lo: %s", PROXY_ISOLATE_ADDR4, strerror(-rc));
	if ((rc = nl_default_route(fd, lo, AF_INET, &a4)) < 0)
		child_fail(ch, "cannot add the IPv4 default route through lo: %s", strerror(-rc));
	rc = nl_addr_add(fd, lo, AF_INET6, &a6, 128);
	if (rc == -EAFNOSUPPORT || rc == -EOPNOTSUPP) {
		close(fd);
		return;
	}
	if (rc < 0)
		child_fail(ch, "cannot add %s to lo: %s", PROXY_ISOLATE_ADDR6, strerror(-rc));
	if ((rc = nl_default_route(fd, lo, AF_INET6, &a6)) < 0)
		child_fail(ch, "cannot add the IPv6 default route through lo: %s", strerror(-rc));
	close(fd);
}

/* The private /etc/resolv.conf.  A bind mount needs a source file: it is made in a tmpfs laid
 * over /etc for a moment (the real target is held open first), bound onto the target, and the
 * tmpfs is detached again, so /etc looks as before but for this one file and nothing is
 * written to any disk.  No /etc/resolv.conf: nothing to replace (glibc then asks 127.0.0.1,
 * and port 53 is redirected anyway). */
static void child_resolv_conf(struct child *ch)
{
	int target = open("/etc/resolv.conf", O_PATH | O_CLOEXEC);
	if (target == -1) {
		if (errno == ENOENT)
			return;
		child_fail(ch, "cannot open /etc/resolv.conf: %s", strerror(errno));
	}
	const unsigned long fl = MS_NOSUID | MS_NODEV | MS_NOEXEC;
	if (mount("tmpfs", "/etc", "tmpfs", fl, "size=16k,mode=0755") == -1)
		child_fail(ch, "cannot mount a tmpfs for the private /etc/resolv.conf: %s",
		        strerror(errno));
	int fd = open("/etc/resolv.conf", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd == -1 || write(fd, RESOLV_CONF, strlen(RESOLV_CONF)) != (ssize_t)strlen(RESOLV_CONF))
		child_fail(ch, "cannot write the private resolv.conf: %s", strerror(errno));
	close(fd);
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", target);
	if (mount("/etc/resolv.conf", path, NULL, MS_BIND, NULL) == -1)
		child_fail(
		        ch, "cannot bind-mount the private /etc/resolv.conf: %s", strerror(errno));
	if (umount2("/etc", MNT_DETACH) == -1)
		child_fail(ch, "cannot detach the tmpfs from /etc: %s", strerror(errno));
	close(target);
	if (mount(NULL, "/etc/resolv.conf", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | fl, NULL) ==
	        -1)
		child_fail(ch, "cannot make the private /etc/resolv.conf read-only: %s",
		        strerror(errno));
}

static const char *role_name(enum proxy_isolate_role r)
{
	switch (r) {
	case PROXY_ISOLATE_TRANSPARENT:
		return "transparent";
	case PROXY_ISOLATE_DNS:
		return "dns";
	default:
		return "plain";
	}
}

/* Creates and binds every socket asked for; fds[i] and ports[i] get each.  Sockets of one
 * redirected role share a port (see isolate.h). */
static void child_socks(struct child *ch, int *fds, uint16_t *ports)
{
	uint16_t role_port[3] = {0, 0, 0};
	for (size_t i = 0; i < ch->o->nsocks; i++) {
		const struct proxy_isolate_sock *s = &ch->o->socks[i];
		int shared = s->role != PROXY_ISOLATE_PLAIN;
		uint16_t port = s->port;
		if (shared && port == 0)
			port = role_port[s->role];
		if (shared && role_port[s->role] != 0 && port != role_port[s->role])
			child_fail(ch, "the %s sockets must share one port (%u and %u asked for)",
			        role_name(s->role), role_port[s->role], port);
		int fd = socket(s->family, s->type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd == -1)
			child_fail(ch, "cannot create a %s socket in the namespace: %s",
			        s->family == AF_INET6 ? "IPv6" : "IPv4", strerror(errno));
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		struct sockaddr_storage ss;
		memset(&ss, 0, sizeof ss);
		socklen_t len;
		const char *shown;
		if (s->family == AF_INET6) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
			s6->sin6_family = AF_INET6;
			s6->sin6_addr = in6addr_loopback;
			s6->sin6_port = htons(port);
			len = sizeof *s6;
			shown = "[::1]";
		} else {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
			s4->sin_family = AF_INET;
			s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			s4->sin_port = htons(port);
			len = sizeof *s4;
			shown = "127.0.0.1";
		}
		if (bind(fd, (struct sockaddr *)&ss, len) == -1)
			child_fail(ch, "cannot bind %s:%u (%s, %s) in the namespace: %s", shown,
			        port, role_name(s->role), s->type == SOCK_DGRAM ? "UDP" : "TCP",
			        strerror(errno));
		if (s->type == SOCK_STREAM && listen(fd, 4096) == -1)
			child_fail(ch, "cannot listen on %s:%u in the namespace: %s", shown, port,
			        strerror(errno));
		len = sizeof ss;
		if (getsockname(fd, (struct sockaddr *)&ss, &len) == -1)
			child_fail(ch, "getsockname: %s", strerror(errno));
		port = ntohs(s->family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
		                                   : ((struct sockaddr_in *)&ss)->sin_port);
		if (shared && role_port[s->role] == 0)
			role_port[s->role] = port;
		fds[i] = fd;
		ports[i] = port;
	}
}

/* The nftables ruleset for the namespace (see isolate.h); 0 for a role with no socket. */
static void ruleset_text(char *buf, size_t cap, uint16_t transparent, uint16_t dns)
{
	char dns_rule[128] = "", tcp_rule[128] = "";
	if (dns != 0)
		snprintf(dns_rule, sizeof dns_rule,
		        "\t\tmeta l4proto { tcp, udp } th dport 53 counter redirect to :%u\n", dns);
	if (transparent != 0)
		snprintf(tcp_rule, sizeof tcp_rule,
		        "\t\tmeta l4proto tcp counter redirect to :%u\n", transparent);
	snprintf(buf, cap,
	        "table inet " PROXY_ISOLATE_TABLE " {\n"
	        "\tchain divert {\n"
	        "\t\ttype nat hook output priority -100; policy accept;\n"
	        "%s"
	        "\t\tfib daddr type local accept\n"
	        "%s"
	        "\t}\n"
	        "\tchain guard {\n"
	        "\t\ttype filter hook output priority 100; policy accept;\n"
	        "\t\tfib daddr type local accept\n"
	        "\t\tmeta l4proto tcp counter reject with tcp reset\n"
	        "\t\tcounter drop\n"
	        "\t}\n"
	        "}\n",
	        dns_rule, tcp_rule);
}

/* libnftables, loaded at run time rather than linked: it and the five libraries it pulls in
 * would add about 0.8 ms and 0.8 MiB to every egressd serve that never isolates. */
struct nft_fns {
	struct nft_ctx *ctx;
	const char *(*get_out)(struct nft_ctx *);
	const char *(*get_err)(struct nft_ctx *);
	int (*run)(struct nft_ctx *, const char *);
};

#ifdef EGRESSD_STATIC
static int nft_load(struct nft_fns *f, char *err, size_t errlen)
{
	(void)f;
	set_err(err, errlen,
	        "this egressd is a static build, which cannot load libnftables "
	        "(Debian ships it only as a shared library): use the dynamically "
	        "linked egressd for --isolate");
	return -1;
}
#else
/* Loads the library and makes a context whose output and errors go to buffers.  Both stay
 * until the process execs or exits (only children call this). */
static int nft_load(struct nft_fns *f, char *err, size_t errlen)
{
	void *lib = dlopen("libnftables.so.1", RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		set_err(err, errlen, "cannot load libnftables (Debian package libnftables1): %s",
		        dlerror());
		return -1;
	}
	__typeof__(nft_ctx_new) *ctx_new = (__typeof__(nft_ctx_new) *)dlsym(lib, "nft_ctx_new");
	__typeof__(nft_ctx_buffer_output) *buf_out =
	        (__typeof__(nft_ctx_buffer_output) *)dlsym(lib, "nft_ctx_buffer_output");
	__typeof__(nft_ctx_buffer_error) *buf_err =
	        (__typeof__(nft_ctx_buffer_error) *)dlsym(lib, "nft_ctx_buffer_error");
	f->get_out =
	        (__typeof__(nft_ctx_get_output_buffer) *)dlsym(lib, "nft_ctx_get_output_buffer");
	f->get_err = (__typeof__(nft_ctx_get_error_buffer) *)dlsym(lib, "nft_ctx_get_error_buffer");
	f->run = (__typeof__(nft_run_cmd_from_buffer) *)dlsym(lib, "nft_run_cmd_from_buffer");
	if (ctx_new == NULL || buf_out == NULL || buf_err == NULL || f->get_out == NULL ||
	        f->get_err == NULL || f->run == NULL) {
		set_err(err, errlen, "libnftables.so.1 lacks a function egressd needs: %s",
		        dlerror());
		return -1;
	}
	f->ctx = ctx_new(NFT_CTX_DEFAULT);
	if (f->ctx == NULL) {
		set_err(err, errlen, "cannot make an nftables context");
		return -1;
	}
	buf_out(f->ctx);
	buf_err(f->ctx);
	return 0;
}
#endif

static void child_rules(struct child *ch, const char *rules)
{
	struct nft_fns f;
	char err[300];
	if (nft_load(&f, err, sizeof err) == -1)
		child_fail(ch, "%s", err);
	if (f.run(f.ctx, rules) != 0) {
		/* libnftables' message spans lines (the rule, a caret line): keep its first. */
		const char *msg = f.get_err(f.ctx);
		char first[240] = "";
		if (msg != NULL)
			snprintf(first, sizeof first, "%.*s", (int)strcspn(msg, "\n"), msg);
		child_fail(ch,
		        "cannot install the redirect rules in the namespace (nftables: %s); "
		        "the kernel needs nf_tables with nat, redirect, fib and reject",
		        first[0] ? first : "no reason given");
	}
}

/* With namespaces, CMD gets no socket of another network namespace: any socket that is not a
 * Unix socket is closed before exec (the child's own were closed after the hand-over, and
 * egressd's are close-on-exec; this catches what a caller of egressd left open). */
static void child_close_foreign_sockets(int keep)
{
	DIR *d = opendir("/proc/self/fd");
	if (d == NULL)
		return;
	int dfd = dirfd(d);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);
		if (*end != '\0' || fd < 3 || fd == dfd || fd == keep || fd > INT_MAX)
			continue;
		int domain;
		socklen_t len = sizeof domain;
		if (getsockopt((int)fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 &&
		        domain != AF_UNIX)
			close((int)fd);
	}
	closedir(d);
}

static void child_main(struct proxy_isolate_opts *o, int sp, pid_t parent)
        __attribute__((noreturn));

static void child_main(struct proxy_isolate_opts *o, int sp, pid_t parent)
{
	struct child ch = {.o = o, .sp = sp};
	/* egressd's handlers would run egressd's code here (libevent's write to its own signal
	 * pipe, shared with the parent): every disposition back to the default, then unblock. */
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 || getppid() != parent)
		_exit(1);

	struct isolate_msg ready;
	memset(&ready, 0, sizeof ready);
	ready.kind = 'R';
	int fds[PROXY_ISOLATE_MAX_SOCKS];
	if (o->namespaces) {
		if (unshare(CLONE_NEWUSER) == -1) {
			int e = errno;
			child_fail(&ch, "cannot create a user namespace: %s%s", strerror(e),
			        userns_hint(e));
		}
		struct isolate_msg m = {.kind = 'U'};
		if (send(sp, &m, sizeof m, MSG_NOSIGNAL) == -1)
			_exit(1);
		child_wait(&ch, 'M');
		if (unshare(CLONE_NEWNET | CLONE_NEWNS) == -1)
			child_fail(&ch, "cannot create network and mount namespaces: %s",
			        strerror(errno));
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
			child_fail(&ch, "cannot make the mount namespace private: %s",
			        strerror(errno));
		child_resolv_conf(&ch);
		child_net(&ch);
		child_socks(&ch, fds, ready.ports);
		uint16_t transparent = 0, dns = 0;
		for (size_t i = 0; i < o->nsocks; i++) {
			if (o->socks[i].role == PROXY_ISOLATE_TRANSPARENT)
				transparent = ready.ports[i];
			else if (o->socks[i].role == PROXY_ISOLATE_DNS)
				dns = ready.ports[i];
		}
		char rules[1024];
		ruleset_text(rules, sizeof rules, transparent, dns);
		child_rules(&ch, rules);
	}

	struct iovec iov = {.iov_base = &ready, .iov_len = sizeof ready};
	union {
		char buf[CMSG_SPACE(sizeof(int) * PROXY_ISOLATE_MAX_SOCKS)];
		struct cmsghdr align;
	} ctl;
	memset(&ctl, 0, sizeof ctl);
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	size_t nfds = o->namespaces ? o->nsocks : 0;
	if (nfds > 0) {
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	if (sendmsg(sp, &mh, MSG_NOSIGNAL) == -1)
		child_fail(&ch, "cannot hand the sockets to egressd: %s", strerror(errno));
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]);

	child_wait(&ch, 'G');
	if (o->namespaces)
		child_close_foreign_sockets(sp);
	execvpe(o->argv[0], o->argv, o->envp != NULL ? o->envp : environ);
	int e = errno;
	struct isolate_msg x = {.kind = 'X', .err = e};
	(void)send(sp, &x, sizeof x, MSG_NOSIGNAL);
	_exit(e == ENOENT ? 127 : 126);
}

/* ------------------------------------------------------------------------------------------ */
/* The parent's side. */

/* Receives one message within SETUP_TIMEOUT_MS, with any descriptors that ride along (put in
 * fds, at most maxfds, close-on-exec).  Returns the bytes read (0: the child closed its end), or
 * -1 with errno (ETIMEDOUT). */
static ssize_t recv_msg(int sp, struct isolate_msg *m, int *fds, size_t maxfds, size_t *nfds)
{
	struct pollfd p = {.fd = sp, .events = POLLIN};
	int rc;
	do
		rc = poll(&p, 1, SETUP_TIMEOUT_MS);
	while (rc == -1 && errno == EINTR);
	if (rc == 0)
		errno = ETIMEDOUT;
	if (rc != 1)
		return -1;
	struct iovec iov = {.iov_base = m, .iov_len = sizeof *m};
	union {
		char buf[CMSG_SPACE(sizeof(int) * PROXY_ISOLATE_MAX_SOCKS)];
		struct cmsghdr align;
	} ctl;
	struct msghdr mh = {.msg_iov = &iov,
	        .msg_iovlen = 1,
	        .msg_control = ctl.buf,
	        .msg_controllen = sizeof ctl.buf};
	ssize_t n;
	do
		n = recvmsg(sp, &mh, MSG_CMSG_CLOEXEC);
	while (n == -1 && errno == EINTR);
	if (nfds != NULL)
		*nfds = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); n > 0 && cm != NULL;
	        cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int got[PROXY_ISOLATE_MAX_SOCKS];
		memcpy(got, CMSG_DATA(cm), k * sizeof(int));
		for (size_t i = 0; i < k; i++) {
			if (nfds != NULL && *nfds < maxfds)
				fds[(*nfds)++] = got[i];
			else
				close(got[i]);
		}
	}
	return n;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd == -1)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* An identity map of every id the parent can see: each line "inside outside count" of the
 * parent's own map becomes "inside inside count". */
static int identity_map(const char *self_map, char *out, size_t cap)
{
	FILE *f = fopen(self_map, "re");
	if (f == NULL)
		return -1;
	size_t off = 0;
	unsigned long in, outside, count;
	while (fscanf(f, "%lu %lu %lu", &in, &outside, &count) == 3 && off < cap) {
		int n = snprintf(out + off, cap - off, "%lu %lu %lu\n", in, in, count);
		if (n < 0 || (size_t)n >= cap - off)
			break;
		off += (size_t)n;
	}
	fclose(f);
	return off > 0 ? 0 : -1;
}

/* Writes the child's uid and gid maps (see isolate.h). */
static int write_maps(pid_t pid, char *err, size_t errlen)
{
	char path[64], map[4096];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (uid == 0) {
		snprintf(path, sizeof path, "/proc/%ld/uid_map", (long)pid);
		if (identity_map("/proc/self/uid_map", map, sizeof map) == 0 &&
		        write_file(path, map) == 0) {
			snprintf(path, sizeof path, "/proc/%ld/gid_map", (long)pid);
			if (identity_map("/proc/self/gid_map", map, sizeof map) == -1 ||
			        write_file(path, map) == -1) {
				set_err(err, errlen, "cannot write the namespace's gid map: %s",
				        strerror(errno));
				return -1;
			}
			return 0;
		}
		/* A root without CAP_SETUID over the parent namespace: map itself only. */
	}
	snprintf(path, sizeof path, "/proc/%ld/setgroups", (long)pid);
	if (write_file(path, "deny") == -1 && errno != ENOENT) {
		set_err(err, errlen, "cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	snprintf(path, sizeof path, "/proc/%ld/uid_map", (long)pid);
	snprintf(map, sizeof map, "%lu %lu 1\n", (unsigned long)uid, (unsigned long)uid);
	if (write_file(path, map) == -1) {
		set_err(err, errlen, "cannot write the namespace's uid map: %s", strerror(errno));
		return -1;
	}
	snprintf(path, sizeof path, "/proc/%ld/gid_map", (long)pid);
	snprintf(map, sizeof map, "%lu %lu 1\n", (unsigned long)gid, (unsigned long)gid);
	if (write_file(path, map) == -1) {
		set_err(err, errlen, "cannot write the namespace's gid map: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void reap_blocking(struct proxy_isolate_child *c)
{
	if (c->reaped)
		return;
	int st;
	pid_t r;
	do
		r = waitpid(c->pid, &st, 0);
	while (r == -1 && errno == EINTR);
	c->reaped = 1;
	c->code = r == c->pid ? (WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st)) : 255;
}

/* Kills the child during set-up and reports why in err (unless err already holds a reason). */
static struct proxy_isolate_child *abort_start(struct proxy_isolate_child *c,
        struct proxy_isolate_opts *o, char *err, size_t errlen, const char *why)
{
	if (why != NULL)
		set_err(err, errlen, "%s", why);
	if (!c->reaped) {
		pidfd_send_signal(c->pidfd, SIGKILL, NULL, 0);
		reap_blocking(c);
	}
	for (size_t i = 0; o->namespaces && i < o->nsocks; i++) {
		if (o->socks[i].fd != -1)
			close(o->socks[i].fd);
		o->socks[i].fd = -1;
	}
	close(c->pidfd);
	close(c->sp);
	free(c);
	return NULL;
}

struct proxy_isolate_child *proxy_isolate_start(
        struct proxy_isolate_opts *o, char *err, size_t errlen)
{
	set_err(err, errlen, "%s", "");
	if (o->argv == NULL || o->argv[0] == NULL) {
		set_err(err, errlen, "no command to run");
		return NULL;
	}
	size_t nsocks = o->namespaces ? o->nsocks : 0;
	if (nsocks > PROXY_ISOLATE_MAX_SOCKS) {
		set_err(err, errlen, "more than %d sockets asked for", PROXY_ISOLATE_MAX_SOCKS);
		return NULL;
	}
	for (size_t i = 0; i < nsocks; i++) {
		const struct proxy_isolate_sock *s = &o->socks[i];
		if ((s->family != AF_INET && s->family != AF_INET6) ||
		        (s->type != SOCK_STREAM && s->type != SOCK_DGRAM) ||
		        (s->role != PROXY_ISOLATE_PLAIN && s->role != PROXY_ISOLATE_TRANSPARENT &&
		                s->role != PROXY_ISOLATE_DNS) ||
		        (s->role == PROXY_ISOLATE_TRANSPARENT && s->type != SOCK_STREAM)) {
			set_err(err, errlen, "socket %zu: unsupported family, type or role", i);
			return NULL;
		}
	}
	for (size_t i = 0; i < nsocks; i++)
		o->socks[i].fd = -1;

	struct proxy_isolate_child *c = calloc(1, sizeof *c);
	if (c == NULL) {
		set_err(err, errlen, "out of memory");
		return NULL;
	}
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == -1) {
		set_err(err, errlen, "socketpair: %s", strerror(errno));
		free(c);
		return NULL;
	}
	/* No signal handler of egressd's may run in the child: fork with every signal blocked. */
	sigset_t all, saved;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &saved);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		close(sp[0]);
		child_main(o, sp[1], parent);
	}
	int fork_errno = errno;
	sigprocmask(SIG_SETMASK, &saved, NULL);
	close(sp[1]);
	if (pid == -1) {
		set_err(err, errlen, "fork: %s", strerror(fork_errno));
		close(sp[0]);
		free(c);
		return NULL;
	}
	c->pid = pid;
	c->sp = sp[0];
	c->pidfd = pidfd_open(pid, 0);
	if (c->pidfd == -1) {
		set_err(err, errlen, "pidfd_open: %s (egressd needs Linux 5.3 or later)",
		        strerror(errno));
		kill(pid, SIGKILL);
		c->pidfd = -1;
		reap_blocking(c);
		close(c->sp);
		free(c);
		return NULL;
	}

	struct isolate_msg m;
	for (;;) {
		int fds[PROXY_ISOLATE_MAX_SOCKS];
		size_t nfds = 0;
		ssize_t n = recv_msg(c->sp, &m, fds, PROXY_ISOLATE_MAX_SOCKS, &nfds);
		if (n == -1) {
			char why[128];
			snprintf(why, sizeof why, "the namespace set-up did not answer: %s",
			        strerror(errno));
			return abort_start(c, o, err, errlen, why);
		}
		if (n != (ssize_t)sizeof m) {
			reap_blocking(c);
			char why[128];
			snprintf(why, sizeof why, "the child ended during set-up (status %d)",
			        c->code);
			return abort_start(c, o, err, errlen, why);
		}
		if (m.kind == 'E') {
			m.text[sizeof m.text - 1] = '\0';
			set_err(err, errlen, "%s", m.text);
			return abort_start(c, o, err, errlen, NULL);
		}
		if (m.kind == 'U') {
			if (write_maps(pid, err, errlen) == -1)
				return abort_start(c, o, err, errlen, NULL);
			struct isolate_msg ok = {.kind = 'M'};
			if (send(c->sp, &ok, sizeof ok, MSG_NOSIGNAL) == -1)
				return abort_start(
				        c, o, err, errlen, "the child ended during set-up");
			continue;
		}
		if (m.kind == 'R') {
			if (nfds != nsocks) {
				for (size_t i = 0; i < nfds; i++)
					close(fds[i]);
				return abort_start(c, o, err, errlen,
				        "the child handed over the wrong number of sockets");
			}
			for (size_t i = 0; i < nsocks; i++) {
				o->socks[i].fd = fds[i];
				o->socks[i].port = m.ports[i];
			}
			return c;
		}
		return abort_start(c, o, err, errlen, "unexpected message from the child");
	}
}

int proxy_isolate_go(struct proxy_isolate_child *c, char *err, size_t errlen)
{
	set_err(err, errlen, "%s", "");
	if (c->went) {
		set_err(err, errlen, "the child was started already");
		return -1;
	}
	c->went = 1;
	struct isolate_msg g = {.kind = 'G'};
	if (send(c->sp, &g, sizeof g, MSG_NOSIGNAL) == -1) {
		set_err(err, errlen, "the child ended before its go: %s", strerror(errno));
		close(c->sp);
		c->sp = -1;
		return -1;
	}
	struct isolate_msg x;
	ssize_t n = recv_msg(c->sp, &x, NULL, 0, NULL);
	close(c->sp);
	c->sp = -1;
	if (n == 0)
		return 0; /* the close-on-exec end closed: CMD runs */
	if (n == (ssize_t)sizeof x && x.kind == 'X') {
		set_err(err, errlen, "cannot run CMD: %s", strerror(x.err));
		return -1;
	}
	set_err(err, errlen, "the child did not report its exec: %s",
	        n == -1 ? strerror(errno) : "short message");
	return -1;
}

pid_t proxy_isolate_pid(const struct proxy_isolate_child *c)
{
	return c->pid;
}

int proxy_isolate_exit_fd(const struct proxy_isolate_child *c)
{
	return c->pidfd;
}

int proxy_isolate_reap(struct proxy_isolate_child *c, int *code)
{
	if (!c->reaped) {
		int st;
		pid_t r = waitpid(c->pid, &st, WNOHANG);
		if (r == 0)
			return 0;
		if (r == -1)
			return -1;
		c->reaped = 1;
		c->code = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
	}
	*code = c->code;
	return 1;
}

static void forwarded_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGQUIT);
	sigaddset(set, SIGUSR1); /* egressd's own: reopen the audit log; never sent on */
}

int proxy_isolate_signals_open(void)
{
	sigset_t set;
	forwarded_set(&set);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1)
		return -1;
	int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd == -1) {
		int e = errno;
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		errno = e;
	}
	return fd;
}

int proxy_isolate_signals_forward(struct proxy_isolate_child *c, int sfd, int *last, int *usr1)
{
	int sent = 0;
	if (last != NULL)
		*last = 0;
	if (usr1 != NULL)
		*usr1 = 0;
	for (;;) {
		struct signalfd_siginfo si;
		ssize_t n = read(sfd, &si, sizeof si);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return sent;
		if (n != (ssize_t)sizeof si)
			return -1;
		int sig = (int)si.ssi_signo;
		if (sig == SIGUSR1) {
			if (usr1 != NULL)
				(*usr1)++;
			continue;
		}
		if (last != NULL)
			*last = sig;
		if (c == NULL || c->reaped)
			continue;
		/* A key on the terminal: the kernel signalled the whole foreground group, CMD too
		 * when it is still in egressd's group.  Sent by a process (kill): pass it on. */
		if (si.ssi_code == SI_KERNEL && getpgid(c->pid) == getpgrp())
			continue;
		if (pidfd_send_signal(c->pidfd, sig, NULL, 0) == 0)
			sent++;
	}
}

void proxy_isolate_signals_close(int sfd)
{
	if (sfd != -1)
		close(sfd);
	sigset_t set;
	forwarded_set(&set);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
}

void proxy_isolate_free(struct proxy_isolate_child *c)
{
	if (c == NULL)
		return;
	if (!c->reaped) {
		pidfd_send_signal(c->pidfd, SIGKILL, NULL, 0);
		reap_blocking(c);
	}
	if (c->sp != -1)
		close(c->sp);
	close(c->pidfd);
	free(c);
}

/* The reply of the helper proxy_isolate_refused forks. */
struct refused_reply {
	int ok;
	unsigned long long packets;
	char text[300];
};

/* The helper: enters the namespaces (it is single-threaded, as setns into a user namespace
 * needs), asks nftables for the guard chain and adds up its counters. */
static void refused_helper(int userns, int netns, int out) __attribute__((noreturn));

static void refused_helper(int userns, int netns, int out)
{
	struct refused_reply r;
	memset(&r, 0, sizeof r);
	struct nft_fns f;
	if (setns(userns, CLONE_NEWUSER) == -1 || setns(netns, CLONE_NEWNET) == -1) {
		set_err(r.text, sizeof r.text, "cannot enter the namespace: %s", strerror(errno));
	} else if (nft_load(&f, r.text, sizeof r.text) == 0) {
		if (f.run(f.ctx, "list chain inet " PROXY_ISOLATE_TABLE " guard") != 0) {
			const char *msg = f.get_err(f.ctx);
			set_err(r.text, sizeof r.text, "nftables: %.*s",
			        msg != NULL ? (int)strcspn(msg, "\n") : 0, msg != NULL ? msg : "");
		} else {
			const char *p = f.get_out(f.ctx);
			while (p != NULL && (p = strstr(p, "counter packets ")) != NULL) {
				p += strlen("counter packets ");
				r.packets += strtoull(p, NULL, 10);
			}
			r.ok = 1;
		}
	}
	(void)!write(out, &r, sizeof r);
	_exit(0);
}

int proxy_isolate_refused(int sock, uint64_t *packets, char *err, size_t errlen)
{
	set_err(err, errlen, "%s", "");
	int netns = ioctl(sock, SIOCGSKNS);
	if (netns == -1) {
		set_err(err, errlen, "cannot find the socket's network namespace: %s",
		        strerror(errno));
		return -1;
	}
	int userns = ioctl(netns, NS_GET_USERNS);
	if (userns == -1) {
		set_err(err, errlen, "cannot find the namespace's user namespace: %s",
		        strerror(errno));
		close(netns);
		return -1;
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) == -1) {
		set_err(err, errlen, "pipe: %s", strerror(errno));
		close(netns);
		close(userns);
		return -1;
	}
	/* The helper never unblocks a signal: no handler of egressd's runs in it. */
	sigset_t all, saved;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &saved);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		refused_helper(userns, netns, p[1]);
	}
	sigprocmask(SIG_SETMASK, &saved, NULL);
	close(p[1]);
	close(netns);
	close(userns);
	if (pid == -1) {
		set_err(err, errlen, "fork: %s", strerror(errno));
		close(p[0]);
		return -1;
	}
	struct refused_reply r;
	ssize_t n;
	do
		n = read(p[0], &r, sizeof r);
	while (n == -1 && errno == EINTR);
	close(p[0]);
	while (waitpid(pid, NULL, 0) == -1 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof r) {
		set_err(err, errlen, "the counter helper ended without an answer");
		return -1;
	}
	if (!r.ok) {
		r.text[sizeof r.text - 1] = '\0';
		set_err(err, errlen, "%s", r.text);
		return -1;
	}
	*packets = r.packets;
	return 0;
}
