/* proxy/isolate.c: CMD in its own user, network and mount namespaces, with listeners made
 * inside and handed back; exit codes, signal forwarding, refusals.
 *
 * The program is its own CMD: run as "--probe ..." it is the process inside the namespace and
 * tries every way out (TCP to a documentation address over IPv4 and IPv6, UDP, ICMP, DNS to any
 * server over UDP and TCP) and prints what happened on an inherited pipe.  The test side serves
 * the handed-back sockets with tiny listeners that answer with the role and the connection's
 * original destination (SO_ORIGINAL_DST), so the probe's output shows where each attempt went.
 *
 * The whole set runs twice when the test runs as root: as root, and again as nobody (setpriv),
 * which makes an unprivileged user namespace; it is SKIPPED with the reason when the kernel does
 * not allow those.  Every address is inside the namespace or a documentation address that the
 * namespace's rules redirect or drop: no packet can leave this machine. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>

#include <cmocka.h>

#include "proxy/isolate.h"

#define EXIT_SKIP 77

static char self_exe[PATH_MAX];

/* ------------------------------------------------------------------------------------------ */
/* The probe (CMD). */

static FILE *probe_out;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(probe_out, fmt, ap);
	va_end(ap);
	fputc('\n', probe_out);
	fflush(probe_out);
}

static const char *errname(int e)
{
	switch (e) {
	case EPERM:
		return "EPERM";
	case EACCES:
		return "EACCES";
	case ECONNREFUSED:
		return "ECONNREFUSED";
	case ECONNRESET:
		return "ECONNRESET";
	case ETIMEDOUT:
		return "ETIMEDOUT";
	case ENETUNREACH:
		return "ENETUNREACH";
	case EHOSTUNREACH:
		return "EHOSTUNREACH";
	case EAFNOSUPPORT:
		return "EAFNOSUPPORT";
	case EPROTONOSUPPORT:
		return "EPROTONOSUPPORT";
	case EBADF:
		return "EBADF";
	default:
		return "E?";
	}
}

static int fill_addr(struct sockaddr_storage *ss, const char *ip, uint16_t port)
{
	memset(ss, 0, sizeof *ss);
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, ip, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		return AF_INET;
	}
	inet_pton(AF_INET6, ip, &s6->sin6_addr);
	s6->sin6_family = AF_INET6;
	s6->sin6_port = htons(port);
	return AF_INET6;
}

static void fmt_addr(const struct sockaddr_storage *ss, char *buf, size_t cap)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof ip);
		snprintf(buf, cap, "%s:%u", ip, ntohs(s4->sin_port));
	} else {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof ip);
		snprintf(buf, cap, "[%s]:%u", ip, ntohs(s6->sin6_port));
	}
}

/* Connects over TCP (3 s at most) and returns the first line the peer sends, or the error. */
static void tcp_line(const char *what, const char *ip, uint16_t port)
{
	struct sockaddr_storage ss;
	int fam = fill_addr(&ss, ip, port);
	int fd = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = {3, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	socklen_t len = fam == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	if (connect(fd, (struct sockaddr *)&ss, len) == -1) {
		say("%s %s", what, errname(errno));
		close(fd);
		return;
	}
	char buf[256];
	ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
	if (n <= 0) {
		say("%s %s", what, n == 0 ? "EOF" : errname(errno));
	} else {
		buf[n] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		say("%s %s", what, buf);
	}
	close(fd);
}

/* A datagram to ip:port; with reply, waits 3 s for the answer and its source. */
static void udp_try(const char *what, const char *ip, uint16_t port, int reply)
{
	struct sockaddr_storage ss;
	int fam = fill_addr(&ss, ip, port);
	int fd = socket(fam, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	socklen_t len = fam == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	if (!reply) {
		if (sendto(fd, "x", 1, 0, (struct sockaddr *)&ss, len) == -1)
			say("%s %s", what, errname(errno));
		else
			say("%s sent", what);
		close(fd);
		return;
	}
	struct timeval tv = {3, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (sendto(fd, what, strlen(what), 0, (struct sockaddr *)&ss, len) == -1) {
		say("%s %s", what, errname(errno));
		close(fd);
		return;
	}
	char buf[256];
	struct sockaddr_storage from;
	socklen_t flen = sizeof from;
	ssize_t n = recvfrom(fd, buf, sizeof buf - 1, 0, (struct sockaddr *)&from, &flen);
	if (n <= 0) {
		say("%s %s", what, n == 0 ? "empty" : errname(errno));
	} else {
		buf[n] = '\0';
		char src[80];
		fmt_addr(&from, src, sizeof src);
		say("%s %s from %s", what, buf, src);
	}
	close(fd);
}

static uint16_t icmp_sum(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t s = 0;
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (n & 1)
		s += (uint32_t)(b[n - 1] << 8);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return htons((uint16_t)~s);
}

/* An echo request to 192.0.2.1 through whatever socket the probe may open (raw as root in the
 * namespace, a ping socket otherwise). */
static void icmp_try(void)
{
	int fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
	if (fd == -1)
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMP);
	if (fd == -1) {
		say("icmp nosocket %s", errname(errno));
		return;
	}
	struct icmphdr h;
	memset(&h, 0, sizeof h);
	h.type = ICMP_ECHO;
	h.un.echo.id = htons(0x4567);
	h.un.echo.sequence = htons(1);
	h.checksum = icmp_sum(&h, sizeof h);
	struct sockaddr_storage ss;
	fill_addr(&ss, "192.0.2.1", 0);
	if (sendto(fd, &h, sizeof h, 0, (struct sockaddr *)&ss, sizeof(struct sockaddr_in)) == -1)
		say("icmp %s", errname(errno));
	else
		say("icmp sent");
	close(fd);
}

static void probe_ifaces(void)
{
	FILE *f = fopen("/proc/self/net/dev", "r");
	char line[512], names[256] = "";
	size_t off = 0;
	for (int i = 0; f != NULL && fgets(line, sizeof line, f) != NULL; i++) {
		char *colon = strchr(line, ':');
		if (i < 2 || colon == NULL)
			continue;
		*colon = '\0';
		char *name = line + strspn(line, " ");
		off += (size_t)snprintf(
		        names + off, sizeof names - off, "%s%s", off ? "," : "", name);
	}
	if (f != NULL)
		fclose(f);
	say("ifaces %s", names);
}

static void probe_resolv(void)
{
	FILE *f = fopen("/etc/resolv.conf", "r");
	char line[256];
	while (f != NULL && fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, "nameserver", 10) == 0) {
			line[strcspn(line, "\n")] = '\0';
			say("resolv %s", line);
			fclose(f);
			return;
		}
	}
	if (f != NULL)
		fclose(f);
	say("resolv none");
}

static volatile sig_atomic_t sigints;

static void on_sigint(int sig)
{
	(void)sig;
	sigints++;
}

/* argv: --probe OUTFD MODE [args].  MODE "all": every way out, then waits for a signal;
 * "exit N": exits N; "kill": kills itself with SIGKILL; "sigint": counts SIGINTs for 1.5 s
 * after the first (up to 10 s for it) and prints the count. */
static int probe_main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	probe_out = fdopen(atoi(argv[2]), "w");
	if (probe_out == NULL)
		return 2;
	const char *mode = argv[3];
	if (strcmp(mode, "exit") == 0)
		return argc > 4 ? atoi(argv[4]) : 0;
	if (strcmp(mode, "kill") == 0) {
		kill(getpid(), SIGKILL);
		return 0;
	}
	if (strcmp(mode, "sigint") == 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_sigint;
		sigaction(SIGINT, &sa, NULL);
		say("ready");
		for (int i = 0; i < 100 && sigints == 0; i++)
			usleep(100 * 1000);
		usleep(1500 * 1000);
		say("sigints %d", (int)sigints);
		return 0;
	}
	/* all PLAINPORT FOREIGNFD */
	if (argc < 6)
		return 2;
	uint16_t plain = (uint16_t)atoi(argv[4]);
	int foreign = atoi(argv[5]);
	say("uid %ld", (long)getuid());
	say("foreign %s", fcntl(foreign, F_GETFD) == -1 ? "closed" : "open");
	probe_ifaces();
	probe_resolv();
	tcp_line("tcp4", "192.0.2.1", 80);
	tcp_line("tcp6", "2001:db8::1", 80);
	tcp_line("tcp4-443", "198.51.100.7", 443);
	tcp_line("plain", "127.0.0.1", plain);
	tcp_line("dnstcp", "192.0.2.53", 53);
	udp_try("dns4", "198.51.100.53", 53, 1);
	udp_try("dns6", "2001:db8::53", 53, 1);
	udp_try("dnslo", "127.0.0.1", 53, 1);
	udp_try("udp4", "198.51.100.1", 9, 0);
	udp_try("udp6", "2001:db8::9", 9, 0);
	udp_try("quic", "198.51.100.1", 443, 0);
	icmp_try();
	say("waiting");
	for (;;)
		pause();
}

/* ------------------------------------------------------------------------------------------ */
/* The test side. */

/* The standard set: transparent TCP (both families), DNS UDP and TCP (both), one plain TCP. */
enum { S_T4, S_T6, S_DU4, S_DU6, S_DT4, S_DT6, S_PLAIN, NSOCKS };

static void std_socks(struct proxy_isolate_sock *s)
{
	const struct proxy_isolate_sock set[NSOCKS] = {
	        {PROXY_ISOLATE_TRANSPARENT, SOCK_STREAM, AF_INET, 0, -1},
	        {PROXY_ISOLATE_TRANSPARENT, SOCK_STREAM, AF_INET6, 0, -1},
	        {PROXY_ISOLATE_DNS, SOCK_DGRAM, AF_INET, 0, -1},
	        {PROXY_ISOLATE_DNS, SOCK_DGRAM, AF_INET6, 0, -1},
	        {PROXY_ISOLATE_DNS, SOCK_STREAM, AF_INET, 0, -1},
	        {PROXY_ISOLATE_DNS, SOCK_STREAM, AF_INET6, 0, -1},
	        {PROXY_ISOLATE_PLAIN, SOCK_STREAM, AF_INET, 0, -1},
	};
	memcpy(s, set, sizeof set);
}

/* The original destination of an accepted connection, as the transparent listener reads it. */
static void orig_dst(int fd, int family, char *buf, size_t cap)
{
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof ss);
	socklen_t len = sizeof ss;
	int rc = family == AF_INET6 ? getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &ss, &len)
	                            : getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &ss, &len);
	if (rc == -1)
		snprintf(buf, cap, "no-orig-dst");
	else
		fmt_addr(&ss, buf, cap);
}

static const char *sock_role(size_t i)
{
	switch (i) {
	case S_T4:
	case S_T6:
		return "transparent";
	case S_DT4:
	case S_DT6:
		return "dns-tcp";
	case S_DU4:
	case S_DU6:
		return "dns-udp";
	default:
		return "plain";
	}
}

/* Serves the handed-back sockets until the probe's output (read from outfd) contains the line
 * until, or 20 s pass.  Returns the output. */
static char *serve(struct proxy_isolate_sock *s, size_t n, int outfd, const char *until)
{
	size_t cap = 8192, len = 0;
	char *out = calloc(1, cap);
	struct pollfd p[PROXY_ISOLATE_MAX_SOCKS + 1];
	for (size_t i = 0; i < n; i++)
		p[i] = (struct pollfd){.fd = s[i].fd, .events = POLLIN};
	p[n] = (struct pollfd){.fd = outfd, .events = POLLIN};
	time_t end = time(NULL) + 20;
	while (time(NULL) < end && strstr(out, until) == NULL) {
		if (poll(p, n + 1, 500) <= 0)
			continue;
		if (p[n].revents) {
			ssize_t r = read(outfd, out + len, cap - 1 - len);
			if (r <= 0)
				break;
			len += (size_t)r;
			out[len] = '\0';
		}
		for (size_t i = 0; i < n; i++) {
			if (!(p[i].revents & POLLIN))
				continue;
			char line[300];
			if (s[i].type == SOCK_DGRAM) {
				char buf[128];
				struct sockaddr_storage from;
				socklen_t flen = sizeof from;
				ssize_t r = recvfrom(s[i].fd, buf, sizeof buf - 1, 0,
				        (struct sockaddr *)&from, &flen);
				if (r <= 0)
					continue;
				buf[r] = '\0';
				snprintf(line, sizeof line, "%s:%s", sock_role(i), buf);
				sendto(s[i].fd, line, strlen(line), 0, (struct sockaddr *)&from,
				        flen);
				continue;
			}
			int c = accept4(s[i].fd, NULL, NULL, SOCK_CLOEXEC);
			if (c == -1)
				continue;
			char od[80];
			orig_dst(c, s[i].family, od, sizeof od);
			snprintf(line, sizeof line, "%s %s\n", sock_role(i), od);
			(void)!write(c, line, strlen(line));
			close(c);
		}
	}
	return out;
}

/* The line of out that starts with key and a space, without them ("" when absent). */
static const char *field(const char *out, const char *key, char *buf, size_t cap)
{
	size_t kl = strlen(key);
	for (const char *p = out; p != NULL && *p;
	        p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, key, kl) == 0 && p[kl] == ' ') {
			size_t l = strcspn(p + kl + 1, "\n");
			snprintf(buf, cap, "%.*s", (int)l, p + kl + 1);
			return buf;
		}
	}
	snprintf(buf, cap, "%s", "");
	return buf;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return strdup("");
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	size_t r;
	while ((r = fread(buf + len, 1, cap - 1 - len, f)) > 0) {
		len += r;
		if (len == cap - 1) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
	}
	buf[len] = '\0';
	fclose(f);
	return buf;
}

/* Runs argv with its standard output captured; returns the output (exit status in *rc). */
static char *run_capture(char *const argv[], int *rc)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) == -1)
		return strdup("");
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	size_t cap = 1 << 14, len = 0;
	char *buf = calloc(1, cap);
	ssize_t r;
	while ((r = read(p[0], buf + len, cap - 1 - len)) > 0)
		len += (size_t)r;
	close(p[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	*rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return buf;
}

static void close_socks(struct proxy_isolate_sock *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i].fd != -1)
			close(s[i].fd);
}

/* Waits (10 s at most) for CMD's exit through the exit descriptor; returns its code. */
static int wait_exit(struct proxy_isolate_child *c, int sfd)
{
	struct pollfd p[2] = {{proxy_isolate_exit_fd(c), POLLIN, 0}, {sfd, POLLIN, 0}};
	int code = -1;
	for (int i = 0; i < 200; i++) {
		if (proxy_isolate_reap(c, &code) == 1)
			return code;
		poll(p, sfd == -1 ? 1 : 2, 50);
		if (sfd != -1 && p[1].revents)
			proxy_isolate_signals_forward(c, sfd, NULL, NULL);
	}
	return -1;
}

static void test_every_way_out(void **state)
{
	(void)state;
	char *mounts_before = slurp("/proc/self/mountinfo");
	char *resolv_before = slurp("/etc/resolv.conf");
	struct proxy_isolate_sock socks[NSOCKS];
	std_socks(socks);
	int out[2];
	assert_int_equal(pipe(out), 0); /* inherited by CMD: not close-on-exec */
	fcntl(out[0], F_SETFD, FD_CLOEXEC);
	/* A socket of this (the host's) network left open without close-on-exec: CMD must not
	 * get it. */
	int foreign = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(foreign > 2);
	char outfd[16], foreignfd[16], plainport[16] = "0";
	snprintf(outfd, sizeof outfd, "%d", out[1]);
	snprintf(foreignfd, sizeof foreignfd, "%d", foreign);
	int sfd = proxy_isolate_signals_open();
	assert_true(sfd >= 0);

	/* CMD's arguments are fixed when the child is forked, before any port is known: the plain
	 * socket asks for a fixed one. */
	socks[S_PLAIN].port = 3128;
	snprintf(plainport, sizeof plainport, "%d", 3128);
	char *argv[] = {self_exe, "--probe", outfd, "all", plainport, foreignfd, NULL};
	struct proxy_isolate_opts o = {
	        .namespaces = 1, .argv = argv, .socks = socks, .nsocks = NSOCKS};
	char err[512];
	struct proxy_isolate_child *c = proxy_isolate_start(&o, err, sizeof err);
	if (c == NULL)
		fail_msg("proxy_isolate_start: %s", err);
	close(foreign);
	/* Shared ports per role, both families, handed back as listening sockets. */
	for (size_t i = 0; i < NSOCKS; i++)
		assert_true(socks[i].fd >= 0 && socks[i].port != 0);
	assert_int_equal(socks[S_T4].port, socks[S_T6].port);
	assert_int_equal(socks[S_DU4].port, socks[S_DT6].port);
	assert_int_equal(socks[S_PLAIN].port, 3128);
	assert_int_equal(proxy_isolate_go(c, err, sizeof err), 0);
	close(out[1]);
	char *got = serve(socks, NSOCKS, out[0], "waiting");
	print_message("probe said:\n%s", got);
	char b[200];
	char want[80];
	snprintf(want, sizeof want, "%ld", (long)getuid());
	assert_string_equal(field(got, "uid", b, sizeof b), want);
	assert_string_equal(field(got, "foreign", b, sizeof b), "closed");
	assert_string_equal(field(got, "ifaces", b, sizeof b), "lo");
	assert_string_equal(field(got, "resolv", b, sizeof b),
	        access("/etc/resolv.conf", F_OK) == 0 ? "nameserver 127.0.0.1" : "none");
	assert_string_equal(field(got, "tcp4", b, sizeof b), "transparent 192.0.2.1:80");
	assert_string_equal(field(got, "tcp6", b, sizeof b), "transparent [2001:db8::1]:80");
	assert_string_equal(field(got, "tcp4-443", b, sizeof b), "transparent 198.51.100.7:443");
	assert_string_equal(field(got, "plain", b, sizeof b), "plain 127.0.0.1:3128");
	assert_string_equal(field(got, "dnstcp", b, sizeof b), "dns-tcp 192.0.2.53:53");
	assert_string_equal(field(got, "dns4", b, sizeof b), "dns-udp:dns4 from 198.51.100.53:53");
	assert_string_equal(field(got, "dns6", b, sizeof b), "dns-udp:dns6 from [2001:db8::53]:53");
	assert_string_equal(field(got, "dnslo", b, sizeof b), "dns-udp:dnslo from 127.0.0.1:53");
	assert_string_equal(field(got, "udp4", b, sizeof b), "EPERM");
	assert_string_equal(field(got, "udp6", b, sizeof b), "EPERM");
	assert_string_equal(field(got, "quic", b, sizeof b), "EPERM");
	const char *icmp = field(got, "icmp", b, sizeof b);
	/* Root in the namespace opens a raw socket and its echo is dropped; an unprivileged CMD
	 * cannot open one at all (and ping sockets are off in a new namespace). */
	assert_true(strcmp(icmp, "EPERM") == 0 || strncmp(icmp, "nosocket", 8) == 0);
	uint64_t drops = 0;
	if (proxy_isolate_refused(socks[S_T4].fd, &drops, err, sizeof err) == -1)
		fail_msg("proxy_isolate_refused: %s", err);
	print_message("the rules refused %llu packets\n", (unsigned long long)drops);
	assert_true(drops >= 3u + (strcmp(icmp, "EPERM") == 0));

	/* SIGTERM to egressd (this process) goes on to CMD, which dies of it: 128+15. */
	kill(getpid(), SIGTERM);
	assert_int_equal(wait_exit(c, sfd), 143);
	proxy_isolate_free(c);
	proxy_isolate_signals_close(sfd);
	close_socks(socks, NSOCKS);
	close(out[0]);
	free(got);

	/* Nothing left behind: this namespace's mounts, resolv.conf and (as root) ruleset. */
	char *mounts_after = slurp("/proc/self/mountinfo");
	char *resolv_after = slurp("/etc/resolv.conf");
	assert_string_equal(mounts_before, mounts_after);
	assert_string_equal(resolv_before, resolv_after);
	if (geteuid() == 0) {
		char *nargv[] = {"nft", "list", "table", "inet", PROXY_ISOLATE_TABLE, NULL};
		int rc;
		free(run_capture(nargv, &rc));
		assert_int_not_equal(rc, 0);
	}
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1); /* no child of ours is left */
	free(mounts_before);
	free(mounts_after);
	free(resolv_before);
	free(resolv_after);
}

/* Exit codes as a shell reports them, with and without namespaces. */
static void run_exit(int namespaces, const char *mode, const char *arg, int want)
{
	int out[2];
	assert_int_equal(pipe2(out, 0), 0);
	char outfd[16];
	snprintf(outfd, sizeof outfd, "%d", out[1]);
	char *argv[] = {self_exe, "--probe", outfd, (char *)mode, (char *)arg, NULL};
	struct proxy_isolate_sock socks[1] = {{PROXY_ISOLATE_PLAIN, SOCK_STREAM, AF_INET, 0, -1}};
	struct proxy_isolate_opts o = {
	        .namespaces = namespaces, .argv = argv, .socks = socks, .nsocks = 1};
	char err[512];
	struct proxy_isolate_child *c = proxy_isolate_start(&o, err, sizeof err);
	if (c == NULL)
		fail_msg("proxy_isolate_start: %s", err);
	assert_int_equal(proxy_isolate_go(c, err, sizeof err), 0);
	assert_int_equal(wait_exit(c, -1), want);
	proxy_isolate_free(c);
	close_socks(socks, namespaces ? 1 : 0);
	close(out[0]);
	close(out[1]);
}

static void test_exit_codes(void **state)
{
	(void)state;
	run_exit(1, "exit", "3", 3);
	run_exit(1, "exit", "0", 0);
	run_exit(1, "kill", NULL, 137);
	run_exit(0, "exit", "5", 5);
	run_exit(0, "kill", NULL, 137);
}

static void test_exec_fails(void **state)
{
	(void)state;
	for (int ns = 0; ns <= 1; ns++) {
		char *argv[] = {"/nonexistent/egressd-test-cmd", NULL};
		struct proxy_isolate_opts o = {.namespaces = ns, .argv = argv};
		char err[512];
		struct proxy_isolate_child *c = proxy_isolate_start(&o, err, sizeof err);
		if (c == NULL)
			fail_msg("proxy_isolate_start: %s", err);
		assert_int_equal(proxy_isolate_go(c, err, sizeof err), -1);
		assert_non_null(strstr(err, "No such file or directory"));
		assert_int_equal(wait_exit(c, -1), 127);
		proxy_isolate_free(c);
	}
}

/* A path nothing exists at, for a CMD that would create it if it ran. */
static void marker_path(char *buf, size_t cap)
{
	static int n;
	snprintf(buf, cap, "/tmp/egressd-isolate-marker-%ld-%d", (long)getpid(), ++n);
	unlink(buf);
}

/* A set-up step that fails after the namespaces exist: CMD never runs, no socket is left. */
static void test_setup_refused(void **state)
{
	(void)state;
	char marker[96];
	marker_path(marker, sizeof marker);
	char *argv[] = {"touch", marker, NULL};
	struct proxy_isolate_sock clash[2] = {
	        {PROXY_ISOLATE_PLAIN, SOCK_STREAM, AF_INET, 4000, -1},
	        {PROXY_ISOLATE_PLAIN, SOCK_STREAM, AF_INET, 4000, -1},
	};
	struct proxy_isolate_opts o = {.namespaces = 1, .argv = argv, .socks = clash, .nsocks = 2};
	char err[512];
	assert_null(proxy_isolate_start(&o, err, sizeof err));
	print_message("refused: %s\n", err);
	assert_non_null(strstr(err, "cannot bind 127.0.0.1:4000"));
	assert_non_null(strstr(err, "Address already in use"));
	assert_int_equal(clash[0].fd, -1);
	assert_int_equal(clash[1].fd, -1);

	struct proxy_isolate_sock split[2] = {
	        {PROXY_ISOLATE_TRANSPARENT, SOCK_STREAM, AF_INET, 4001, -1},
	        {PROXY_ISOLATE_TRANSPARENT, SOCK_STREAM, AF_INET6, 4002, -1},
	};
	o.socks = split;
	assert_null(proxy_isolate_start(&o, err, sizeof err));
	print_message("refused: %s\n", err);
	assert_non_null(strstr(err, "must share one port"));
	assert_int_equal(access(marker, F_OK), -1);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
}

/* The kernel refuses a namespace: in a user namespace of the test's own whose limit for the
 * kind is 0, proxy_isolate_start fails with the reason and CMD never runs. */
static void refused_by_kernel(const char *limit, const char *want)
{
	char marker[96];
	marker_path(marker, sizeof marker);
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	if (pid == 0) {
		char err[512] = "";
		char map[64];
		uid_t uid = geteuid();
		gid_t gid = getegid();
		int ok = unshare(CLONE_NEWUSER) == 0;
		int fd;
		snprintf(map, sizeof map, "%lu %lu 1", (unsigned long)uid, (unsigned long)uid);
		ok = ok && (fd = open("/proc/self/uid_map", O_WRONLY)) != -1 &&
		     write(fd, map, strlen(map)) > 0 && close(fd) == 0;
		ok = ok && (fd = open("/proc/self/setgroups", O_WRONLY)) != -1 &&
		     write(fd, "deny", 4) == 4 && close(fd) == 0;
		snprintf(map, sizeof map, "%lu %lu 1", (unsigned long)gid, (unsigned long)gid);
		ok = ok && (fd = open("/proc/self/gid_map", O_WRONLY)) != -1 &&
		     write(fd, map, strlen(map)) > 0 && close(fd) == 0;
		ok = ok && (fd = open(limit, O_WRONLY)) != -1 && write(fd, "0", 1) == 1 &&
		     close(fd) == 0;
		if (!ok) {
			snprintf(err, sizeof err, "SETUP %s", strerror(errno));
		} else {
			char *argv[] = {"touch", marker, NULL};
			struct proxy_isolate_opts o = {.namespaces = 1, .argv = argv};
			struct proxy_isolate_child *c = proxy_isolate_start(&o, err, sizeof err);
			if (c != NULL) {
				proxy_isolate_go(c, NULL, 0);
				snprintf(err, sizeof err, "STARTED");
			}
		}
		(void)!write(p[1], err, strlen(err));
		_exit(0);
	}
	close(p[1]);
	char err[512];
	ssize_t n = read(p[0], err, sizeof err - 1);
	close(p[0]);
	err[n > 0 ? n : 0] = '\0';
	waitpid(pid, NULL, 0);
	print_message("%s=0: %s\n", limit, err);
	assert_non_null(strstr(err, want));
	usleep(100 * 1000);
	assert_int_equal(access(marker, F_OK), -1);
}

static void test_refused_by_kernel(void **state)
{
	(void)state;
	refused_by_kernel("/proc/sys/user/max_user_namespaces",
	        "cannot create a user namespace: No space left on device (the limit "
	        "user.max_user_namespaces");
	refused_by_kernel("/proc/sys/user/max_net_namespaces",
	        "cannot create network and mount namespaces: No space left on device");
}

/* A key on the terminal reaches CMD once (the kernel's SIGINT to the foreground group; egressd
 * does not pass on a second), and a kill of egressd reaches it once too (passed on). */
static int sigint_session(int how)
{
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master == -1 || grantpt(master) == -1 || unlockpt(master) == -1)
		return -1;
	int out[2];
	if (pipe(out) == -1)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		/* egressd, with the pty as its controlling terminal, in the foreground. */
		setsid();
		int slave = open(ptsname(master), O_RDWR);
		ioctl(slave, TIOCSCTTY, 0);
		struct termios t;
		tcgetattr(slave, &t);
		t.c_lflag |= ISIG;
		tcsetattr(slave, TCSANOW, &t);
		dup2(slave, 0);
		close(out[0]);
		char outfd[16];
		snprintf(outfd, sizeof outfd, "%d", out[1]);
		char *argv[] = {self_exe, "--probe", outfd, "sigint", NULL};
		int sfd = proxy_isolate_signals_open();
		struct proxy_isolate_opts o = {.namespaces = 1, .argv = argv};
		char err[512];
		struct proxy_isolate_child *c = proxy_isolate_start(&o, err, sizeof err);
		if (c == NULL || proxy_isolate_go(c, err, sizeof err) == -1)
			_exit(3);
		close(out[1]);
		int code = wait_exit(c, sfd);
		_exit(code == 0 ? 0 : 4);
	}
	close(out[1]);
	char buf[256] = "";
	size_t len = 0;
	int sent = 0;
	for (int i = 0; i < 200 && strstr(buf, "sigints") == NULL; i++) {
		struct pollfd p = {out[0], POLLIN, 0};
		if (poll(&p, 1, 100) == 1) {
			ssize_t r = read(out[0], buf + len, sizeof buf - 1 - len);
			if (r <= 0)
				break;
			len += (size_t)r;
			buf[len] = '\0';
		}
		if (!sent && strstr(buf, "ready") != NULL) {
			if (how == 0)
				(void)!write(master, "\x03", 1); /* Ctrl-C */
			else
				kill(pid, SIGINT);
			sent = 1;
		}
	}
	int st = 0;
	waitpid(pid, &st, 0);
	close(out[0]);
	close(master);
	const char *p = strstr(buf, "sigints ");
	print_message("%s: %s", how == 0 ? "Ctrl-C on the terminal" : "kill -INT egressd", buf);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || p == NULL)
		return -1;
	return atoi(p + 8);
}

static void test_sigint_once(void **state)
{
	(void)state;
	assert_int_equal(sigint_session(0), 1);
	assert_int_equal(sigint_session(1), 1);
}

/* Whether this process may make an unprivileged user namespace at all (a forked probe). */
static int userns_allowed(char *why, size_t cap)
{
	int p[2];
	if (pipe(p) == -1)
		return 0;
	pid_t pid = fork();
	if (pid == 0) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == -1) {
			(void)!write(p[1], strerror(errno), strlen(strerror(errno)));
			_exit(1);
		}
		_exit(0);
	}
	close(p[1]);
	ssize_t n = read(p[0], why, cap - 1);
	why[n > 0 ? n : 0] = '\0';
	close(p[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_way_out),
        cmocka_unit_test(test_exit_codes),
        cmocka_unit_test(test_exec_fails),
        cmocka_unit_test(test_setup_refused),
        cmocka_unit_test(test_refused_by_kernel),
        cmocka_unit_test(test_sigint_once),
};

/* A copy of this program, mode 0755, in a new directory under /tmp (path receives it; dir the
 * directory).  nobody may not be able to reach the build tree (a clone in /root, mode 0700):
 * setpriv still reaches it with root's capabilities, but CMD, re-executed inside the namespace,
 * would not. */
static int copy_self(char *dir, size_t dircap, char *path, size_t pathcap)
{
	snprintf(dir, dircap, "/tmp/egressd-isolate-nobody-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, pathcap, "%s/test_proxy_isolate", dir);
	int in = open(self_exe, O_RDONLY | O_CLOEXEC);
	int out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
	int ok = in >= 0 && out >= 0 && chmod(dir, 0755) == 0 && fchmod(out, 0755) == 0;
	char buf[65536];
	ssize_t n = 0;
	while (ok && (n = read(in, buf, sizeof buf)) > 0)
		ok = write(out, buf, (size_t)n) == n;
	ok = ok && n == 0;
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) != 0)
		ok = 0;
	return ok ? 0 : -1;
}

/* As root: the same set again as nobody, from a copy of this program that nobody can reach. */
static void test_as_nobody(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		print_message("SKIPPED: the set as nobody needs root to become nobody; this run "
		              "already is an ordinary user's\n");
		skip();
	}
	char dir[64], copy[96] = "";
	if (copy_self(dir, sizeof dir, copy, sizeof copy) != 0)
		fail_msg("cannot copy %s to %s: %s", self_exe, copy, strerror(errno));
	pid_t pid = fork();
	if (pid == 0) {
		execlp("setpriv", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
		        "--inh-caps=-all", "--", copy, "--as-user", (char *)NULL);
		_exit(127);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	unlink(copy);
	rmdir(dir);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == EXIT_SKIP) {
		print_message("SKIPPED: nobody cannot make a user namespace here\n");
		skip();
	}
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--probe") == 0)
		return probe_main(argc, argv);
	ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
	if (n <= 0)
		return 1;
	self_exe[n] = '\0';
	/* The tests read every child's status themselves. */
	signal(SIGPIPE, SIG_IGN);
	char why[256];
	int as_user = argc > 1 && strcmp(argv[1], "--as-user") == 0;
	/* --isolate makes one for every user, root included: where none can be made (a
	 * chroot, a seccomp filter, the sysctls) no case can run, and the test says so rather
	 * than passing or failing */
	if (!userns_allowed(why, sizeof why)) {
		printf("SKIPPED: this user (uid %ld) cannot make a user namespace, which "
		       "egressd exec --isolate needs: %s\n",
		        (long)getuid(), why);
		return EXIT_SKIP;
	}
	if (as_user)
		return cmocka_run_group_tests_name("isolate as nobody", tests, NULL, NULL);
	int failed = cmocka_run_group_tests_name(
	        geteuid() == 0 ? "isolate as root" : "isolate", tests, NULL, NULL);
	const struct CMUnitTest again[] = {cmocka_unit_test(test_as_nobody)};
	return failed +
	       cmocka_run_group_tests_name("isolate: the set as nobody", again, NULL, NULL);
}
