/* Rules for the rest of an agent's toolbox (DESIGN.md 10): raw network tools and /dev/tcp
 * redirections (net:raw), interpreter one-liners, package managers and registries, cloud and
 * cluster clients.  wrappers.c hands every program it has no handler for to cls_rule_tools.
 *
 * When a rule cannot tell, it answers with more tags, never fewer: an unknown verb of a tool
 * gets both its read and its write tag. */
#include <stdlib.h>
#include <string.h>

#include "allowlist/registry.h"
#include "allowlist/tags.h"
#include "classifier/classifier.h"
#include "classifier/internal.h"

#define RW (ALLOW_TAG_HTTP_READ | ALLOW_TAG_HTTP_WRITE)

/* ---- shared helpers --------------------------------------------------------------------- */

static int starts_with(const struct cls_word *w, const char *p)
{
	size_t l = strlen(p);
	return w->len >= l && memcmp(w->s, p, l) == 0;
}

/* Whether w is static and one of the NULL-terminated set. */
static int word_in(const struct cls_word *w, const char *const *set)
{
	return !(w->flags & CLS_W_EXP) && cls_in_list(set, w->s, w->len);
}

/* Records HOST with PORT (PORT may be empty or not a number: then no port). */
static void add_host_port(
        struct cls_ctx *c, const char *h, size_t hl, const char *p, size_t pl, size_t off)
{
	if (hl == 0 || hl > 255 || pl > 5)
		return;
	int v6 = memchr(h, ':', hl) != NULL && h[0] != '[';
	char buf[272];
	size_t k = 0;
	if (v6)
		buf[k++] = '[';
	memcpy(buf + k, h, hl);
	k += hl;
	if (v6)
		buf[k++] = ']';
	int digits = pl > 0;
	for (size_t i = 0; i < pl; i++)
		if (p[i] < '0' || p[i] > '9')
			digits = 0;
	if (digits) {
		buf[k++] = ':';
		memcpy(buf + k, p, pl);
		k += pl;
	}
	buf[k] = '\0';
	struct cls_word w = {buf, k, 0, off};
	cls_add_url_host(c, &w, 1);
}

/* Records the host of HOST:PORT (or [V6]:PORT, or HOST alone). */
static void add_hostport_word(struct cls_ctx *c, const char *s, size_t len, size_t off)
{
	if (len == 0 || memchr(s, CLS_EXP_MARK, len) != NULL)
		return;
	if (s[0] == '[') {
		const char *rb = memchr(s, ']', len);
		if (rb == NULL)
			return;
		size_t hl = (size_t)(rb - s - 1);
		const char *p = rb + 1;
		size_t pl = (size_t)(s + len - p);
		if (pl > 0 && *p == ':') {
			p++;
			pl--;
		}
		add_host_port(c, s + 1, hl, p, pl, off);
		return;
	}
	const char *colon = memchr(s, ':', len);
	/* two colons and no brackets: a bare IPv6 address */
	if (colon != NULL && memchr(colon + 1, ':', (size_t)(s + len - colon - 1)) != NULL)
		colon = NULL;
	if (colon == NULL)
		add_host_port(c, s, len, "", 0, off);
	else
		add_host_port(c, s, (size_t)(colon - s), colon + 1, (size_t)(s + len - colon - 1), off);
}

/* The first word at or after i that is not an option (walking spec), or n. */
static size_t operand(const struct cls_word *v, size_t n, size_t i, const struct cls_opts *spec)
{
	return cls_opts_walk(v, n, i, spec, NULL, NULL, NULL);
}

/* Runs a word as a shell script (a tool's command string), refused when it is not static. */
static int run_script_word(struct cls_ctx *c, const struct cls_word *w, const char *what)
{
	if (w->flags & CLS_W_EXP)
		return cls_refuse(c, w->off, "%s is not static", what);
	return cls_run_script(c, w->s, w->len, w->off, 0);
}

/* ---- /dev/tcp and /dev/udp -------------------------------------------------------------- */

void cls_note_redir(struct cls_ctx *c, const struct cls_word *t)
{
	static const char tcp[] = "/dev/tcp/", udp[] = "/dev/udp/";
	const size_t pl = sizeof tcp - 1;
	if (t->len < 5 || t->s[0] != '/' || t->s[1] != 'd')
		return; /* the common case, cheaply */
	/* The text before the first expansion: when it is a start of /dev/tcp/ or /dev/udp/
	 * (and more than "/"), the expanded name may be one.  bash matches the exact prefix. */
	const char *mark = memchr(t->s, CLS_EXP_MARK, t->len);
	size_t lit = mark ? (size_t)(mark - t->s) : t->len;
	size_t cmp = lit < pl ? lit : pl;
	if (lit < pl && mark == NULL)
		return;
	if (memcmp(t->s, tcp, cmp) != 0 && memcmp(t->s, udp, cmp) != 0)
		return;
	c->tags |= ALLOW_TAG_NET_RAW;
	if (lit <= pl)
		return;
	/* /dev/tcp/HOST/PORT: bash takes HOST up to the next slash */
	const char *h = t->s + pl;
	const char *slash = memchr(h, '/', t->len - pl);
	if (slash == NULL)
		return;
	add_host_port(c, h, (size_t)(slash - h), slash + 1, (size_t)(t->s + t->len - slash - 1),
	        t->off);
}

/* ---- raw network tools: net:raw --------------------------------------------------------- */

/* nc, ncat, netcat: HOST [PORT]; -e PROG and -c CMD (traditional nc, ncat) run a command. */
struct nc_state {
	struct cls_ctx *c;
	int rc;
	int listen;
};

static int nc_opt(void *arg, const struct cls_opt *o)
{
	struct nc_state *st = arg;
	if (o->c == 'l' || (o->c == 0 && o->ll == 6 && memcmp(o->l, "listen", 6) == 0))
		st->listen = 1;
	int exec = o->c == 'e' || (o->c == 0 && o->ll == 4 && memcmp(o->l, "exec", 4) == 0);
	int sh = o->c == 'c' || (o->c == 0 && o->ll == 7 && memcmp(o->l, "sh-exec", 7) == 0);
	if ((exec || sh) && o->vw != NULL) {
		struct cls_word w = *o->vw;
		w.s = o->val;
		w.len = o->vlen;
		if (run_script_word(st->c, &w, "nc -e/-c command") == -1) {
			st->rc = -1;
			return 1;
		}
	}
	return 0;
}

static int t_nc(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const char *const lv[] = {"exec", "sh-exec", "lua-exec", "proxy", "proxy-type",
	        "proxy-auth", "source", "source-port", "wait", "idle-timeout", "delay",
	        "max-conns", "output", "hex-dump", "append-output", "allow", "allowfile", "deny",
	        "denyfile", "ssl-cert", "ssl-key", "ssl-trustfile", "ssl-ciphers", "ssl-servername",
	        "ssl-alpn", "proxy-dns", NULL};
	static const struct cls_opts spec = {"ceIiMmOPpqsTVWwXxgGo", NULL, lv, 0, 0};
	struct nc_state st = {c, 0, 0};
	c->tags |= ALLOW_TAG_NET_RAW;
	size_t i = 1;
	const struct cls_word *ops[2] = {NULL, NULL};
	size_t nops = 0;
	while (i < n) {
		size_t k = cls_opts_walk(v, n, i, &spec, nc_opt, &st, NULL);
		if (st.rc == -1)
			return -1;
		if (k >= n)
			break;
		if (nops < 2)
			ops[nops] = &v[k];
		nops++;
		i = k + 1;
	}
	if (!st.listen && ops[0] != NULL && !(ops[0]->flags & CLS_W_EXP)) {
		const struct cls_word *p = ops[1];
		add_host_port(c, ops[0]->s, ops[0]->len, p ? p->s : "", p ? p->len : 0, ops[0]->off);
	}
	return 0;
}

/* socat ADDRESS ADDRESS: TCP:HOST:PORT and its kin; EXEC:/SYSTEM: run a command. */
static int socat_address(struct cls_ctx *c, const struct cls_word *w)
{
	static const char *const hostport[] = {"tcp", "tcp4", "tcp6", "tcp-connect",
	        "tcp4-connect", "tcp6-connect", "udp", "udp4", "udp6", "udp-connect",
	        "udp4-connect", "udp6-connect", "udp-sendto", "udp4-sendto", "udp6-sendto",
	        "udp-datagram", "udp4-datagram", "udp6-datagram", "sctp", "sctp4", "sctp6",
	        "sctp-connect", "sctp4-connect", "sctp6-connect", "openssl", "openssl-connect",
	        "ssl", "dtls", "dtls-client", "openssl-dtls-client", "dccp-connect", NULL};
	static const char *const via[] = {"socks4", "socks4a", "socks5", "socks5-connect",
	        "proxy", "proxy-connect", NULL};
	const char *s = w->s, *end = w->s + w->len;
	const char *colon = memchr(s, ':', w->len);
	if (colon == NULL || colon == s || colon - s > 24)
		return 0;
	char type[32];
	size_t tl = (size_t)(colon - s);
	for (size_t i = 0; i < tl; i++) {
		char ch = s[i];
		type[i] = ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
	}
	type[tl] = '\0';
	const char *rest = colon + 1;
	const char *comma = memchr(rest, ',', (size_t)(end - rest));
	const char *stop = comma ? comma : end;
	if (strcmp(type, "exec") == 0 || strcmp(type, "system") == 0) {
		struct cls_word cmd = *w;
		cmd.s = cls_strdup(c, rest, (size_t)(stop - rest), w->off);
		if (cmd.s == NULL)
			return -1;
		cmd.len = (size_t)(stop - rest);
		if (memchr(cmd.s, CLS_EXP_MARK, cmd.len) != NULL)
			return cls_refuse(c, w->off, "socat EXEC/SYSTEM command is not static");
		cmd.flags = 0;
		return run_script_word(c, &cmd, "socat EXEC/SYSTEM command");
	}
	if (cls_in_list(hostport, type, tl)) {
		add_hostport_word(c, rest, (size_t)(stop - rest), w->off);
	} else if (cls_in_list(via, type, tl)) {
		/* SOCKS4:SERVER:HOST:PORT, PROXY:SERVER:HOST:PORT: the server is dialled */
		const char *c2 = memchr(rest, ':', (size_t)(stop - rest));
		add_hostport_word(c, rest, (size_t)((c2 ? c2 : stop) - rest), w->off);
	}
	return 0;
}

static int t_socat(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const char *const valued[] = {"-b", "-t", "-T", "-L", "-W", "-lf", "-lp", "-r",
	        "-R", "-s", NULL};
	c->tags |= ALLOW_TAG_NET_RAW;
	for (size_t i = 1; i < n; i++) {
		const struct cls_word *w = &v[i];
		if (w->len > 1 && w->s[0] == '-' && !(w->flags & CLS_W_LEADEXP)) {
			if (word_in(w, valued))
				i++;
			continue;
		}
		if (w->flags & CLS_W_LEADEXP)
			continue; /* an address from an expansion: its host is unknown */
		if (socat_address(c, w) == -1)
			return -1;
	}
	return 0;
}

/* telnet, ftp, lftp, tftp, websocat, grpcurl: the first operand names the host. */
static int t_rawhost(struct cls_ctx *c, const struct cls_word *v, size_t n, const char *sv,
        const char *const *lv, int port_operand)
{
	const struct cls_opts spec = {sv, NULL, lv, 0, 0};
	c->tags |= ALLOW_TAG_NET_RAW;
	size_t k = operand(v, n, 1, &spec);
	if (k >= n || (v[k].flags & CLS_W_EXP))
		return 0;
	const struct cls_word *w = &v[k];
	if (strstr(w->s, "://") != NULL) {
		cls_add_url_host(c, w, 0);
		return 0;
	}
	if (port_operand && k + 1 < n) {
		const struct cls_word *p = &v[k + 1];
		const char *h = w->s;
		size_t hl = w->len;
		const char *at = memchr(h, '@', hl);
		if (at != NULL) {
			hl -= (size_t)(at + 1 - h);
			h = at + 1;
		}
		add_host_port(c, h, hl, p->s, p->len, w->off);
		return 0;
	}
	if (port_operand)
		cls_add_host(c, w->s, w->len);
	else
		add_hostport_word(c, w->s, w->len, w->off);
	return 0;
}

static int t_telnet(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	return t_rawhost(c, v, n, "belnXkS", NULL, 1);
}

static int t_ftp(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	return t_rawhost(c, v, n, "PorqsTux", NULL, 1);
}

static int t_tftp(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const char *const lv[] = {"command", "port", "mode", "literal", NULL};
	return t_rawhost(c, v, n, "cmRp", lv, 1);
}

static int t_lftp(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const char *const lv[] = {"user", "password", "env-password", NULL};
	static const struct cls_opts spec = {"pueEfc", NULL, lv, 0, 0};
	c->tags |= ALLOW_TAG_NET_RAW;
	size_t k = operand(v, n, 1, &spec);
	if (k < n && !(v[k].flags & CLS_W_EXP)) {
		if (strstr(v[k].s, "://") != NULL)
			cls_add_url_host(c, &v[k], 0);
		else
			cls_add_host(c, v[k].s, v[k].len);
	}
	return 0;
}

static int t_websocat(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	c->tags |= ALLOW_TAG_NET_RAW;
	for (size_t i = 1; i < n; i++)
		if (!(v[i].flags & CLS_W_EXP) && strstr(v[i].s, "://") != NULL)
			cls_add_url_host(c, &v[i], 0);
	return 0;
}

/* grpcurl [FLAGS] [ADDRESS] [list|describe|SYMBOL]: Go flags, one dash, `-d x` or `-d=x`. */
static int t_grpcurl(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const char *const valued[] = {"d", "H", "rpc-header", "reflect-header", "proto",
	        "import-path", "protoset", "protoset-out", "proto-out-dir", "cert", "key",
	        "cacert", "servername", "authority", "connect-timeout", "keepalive-time",
	        "max-msg-sz", "max-time", "format", "user-agent", "alts-handshaker-service",
	        "alts-target-service-account", "emit-defaults", "format-error", "unix", NULL};
	c->tags |= ALLOW_TAG_NET_RAW;
	for (size_t i = 1; i < n; i++) {
		const struct cls_word *w = &v[i];
		if (w->len > 1 && w->s[0] == '-' && !(w->flags & CLS_W_LEADEXP)) {
			const char *name = w->s + (w->len > 2 && w->s[1] == '-' ? 2 : 1);
			size_t nl = w->len - (size_t)(name - w->s);
			if (memchr(name, '=', nl) == NULL && cls_in_list(valued, name, nl))
				i++;
			continue;
		}
		if (!(w->flags & CLS_W_EXP))
			add_hostport_word(c, w->s, w->len, w->off);
		return 0;
	}
	return 0;
}

/* openssl s_client / s_time connect; ocsp with a responder URL; other subcommands are local.
 * With no subcommand it reads commands from its input, which may be s_client. */
static int t_openssl(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	if (n < 2) {
		if (flags & (CLS_C_PIPED | CLS_C_STDIN | CLS_C_XARGS))
			c->tags |= ALLOW_TAG_NET_RAW;
		return 0;
	}
	const struct cls_word *sub = &v[1];
	if (sub->flags & CLS_W_EXP)
		return cls_refuse(c, sub->off, "openssl subcommand is not static");
	static const char *const connect[] = {"s_client", "s_time", NULL};
	int ocsp = cls_word_is(sub, "ocsp");
	if (!word_in(sub, connect) && !ocsp)
		return 0;
	int net = !ocsp;
	for (size_t i = 2; i + 1 < n; i++) {
		const struct cls_word *w = &v[i], *val = &v[i + 1];
		if (cls_word_is(w, "-connect") || cls_word_is(w, "-host") ||
		        cls_word_is(w, "-proxy")) {
			net = 1;
			add_hostport_word(c, val->s, val->len, val->off);
			i++;
		} else if (cls_word_is(w, "-url")) {
			net = 1;
			cls_add_url_host(c, val, 0);
			i++;
		}
	}
	if (!ocsp && n > 2 && v[n - 1].s[0] != '-' && v[n - 2].s[0] != '-')
		add_hostport_word(c, v[n - 1].s, v[n - 1].len, v[n - 1].off); /* s_client HOST:PORT */
	if (net)
		c->tags |= ALLOW_TAG_NET_RAW;
	return 0;
}

/* ---- interpreter one-liners ------------------------------------------------------------- */

enum lang {
	LANG_PYTHON, /* python -c */
	LANG_JS,     /* node -e/-p, deno eval */
	LANG_PERL,   /* perl -e/-E, -M */
	LANG_RUBY,   /* ruby -e, -r */
	LANG_PHP,    /* php -r/-B/-R/-E */
};

/* What a one-liner's text does, found by its identifiers (letters, digits, `_`). */
#define CODE_NET 1u  /* a network API: net:raw */
#define CODE_EXEC 2u /* runs commands or code it builds: the line is refused */

struct api {
	const char *word; /* an identifier */
	unsigned what;    /* CODE_* */
};

/* Sorted by word (strcmp) per language, for bsearch.  Identifiers only: a word inside a string
 * counts too (`__import__("socket")`), which only ever adds. */
static const struct api python_api[] = {
        {"HTTPConnection", CODE_NET},
        {"HTTPSConnection", CODE_NET},
        {"__builtins__", CODE_EXEC},
        {"__import__", CODE_EXEC},
        {"aiohttp", CODE_NET},
        {"asyncssh", CODE_NET},
        {"builtins", CODE_EXEC},
        {"create_connection", CODE_NET},
        {"ctypes", CODE_EXEC},
        {"eval", CODE_EXEC},
        {"exec", CODE_EXEC},
        {"execl", CODE_EXEC},
        {"execle", CODE_EXEC},
        {"execlp", CODE_EXEC},
        {"execv", CODE_EXEC},
        {"execve", CODE_EXEC},
        {"execvp", CODE_EXEC},
        {"execvpe", CODE_EXEC},
        {"ftplib", CODE_NET},
        {"grpc", CODE_NET},
        {"http", 0}, /* http.client is network, http.server is not: see code_scan */
        {"httplib", CODE_NET},
        {"httplib2", CODE_NET},
        {"httpx", CODE_NET},
        {"imaplib", CODE_NET},
        {"importlib", CODE_EXEC},
        {"nntplib", CODE_NET},
        {"open_connection", CODE_NET},
        {"paramiko", CODE_NET},
        {"popen", CODE_EXEC},
        {"poplib", CODE_NET},
        {"posix_spawn", CODE_EXEC},
        {"posix_spawnp", CODE_EXEC},
        {"pty", CODE_EXEC},
        {"pycurl", CODE_NET},
        {"requests", CODE_NET},
        {"runpy", CODE_EXEC},
        {"smtplib", CODE_NET},
        {"socket", CODE_NET},
        {"spawnl", CODE_EXEC},
        {"spawnlp", CODE_EXEC},
        {"spawnv", CODE_EXEC},
        {"spawnvp", CODE_EXEC},
        {"subprocess", CODE_EXEC},
        {"system", 0}, /* os.system runs a command, platform.system() does not */
        {"telnetlib", CODE_NET},
        {"urllib", CODE_NET},
        {"urllib2", CODE_NET},
        {"urllib3", CODE_NET},
        {"urlopen", CODE_NET},
        {"urlretrieve", CODE_NET},
        {"websocket", CODE_NET},
        {"websockets", CODE_NET},
        {"xmlrpc", CODE_NET},
};

static const struct api js_api[] = {
        {"Command", 0}, /* Deno.Command runs a program */
        {"EventSource", CODE_NET},
        {"Function", CODE_EXEC},
        {"WebSocket", CODE_NET},
        {"Worker", CODE_EXEC},
        {"XMLHttpRequest", CODE_NET},
        {"axios", CODE_NET},
        {"binding", CODE_EXEC}, /* process.binding("spawn_sync") */
        {"child_process", CODE_EXEC},
        {"connect", CODE_NET},
        {"connectTls", CODE_NET},
        {"dgram", CODE_NET},
        {"dns", CODE_NET},
        {"eval", CODE_EXEC},
        {"fetch", CODE_NET},
        {"got", CODE_NET},
        {"http", CODE_NET},
        {"http2", CODE_NET},
        {"https", CODE_NET},
        {"net", CODE_NET},
        {"request", CODE_NET},
        {"resolveDns", CODE_NET},
        {"run", 0}, /* Deno.run */
        {"startTls", CODE_NET},
        {"tls", CODE_NET},
        {"undici", CODE_NET},
        {"vm", CODE_EXEC},
};

static const struct api perl_api[] = {
        {"Curl", CODE_NET},
        {"FTP", CODE_NET},
        {"Furl", CODE_NET},
        {"HTTP", CODE_NET},
        {"LWP", CODE_NET},
        {"Mojo", CODE_NET},
        {"Net", CODE_NET},
        {"SMTP", CODE_NET},
        {"Socket", CODE_NET},
        {"WWW", CODE_NET},
        {"eval", CODE_EXEC},
        {"exec", CODE_EXEC},
        {"fork", CODE_EXEC},
        {"gethostbyname", CODE_NET},
        {"getstore", CODE_NET},
        {"open", 0}, /* open with a pipe runs a command: see code_scan */
        {"qx", CODE_EXEC},
        {"readpipe", CODE_EXEC},
        {"socket", CODE_NET},
        {"syscall", CODE_EXEC},
        {"system", CODE_EXEC},
};

static const struct api ruby_api[] = {
        {"Excon", CODE_NET},
        {"Faraday", CODE_NET},
        {"HTTParty", CODE_NET},
        {"Kernel", CODE_EXEC},
        {"Net", CODE_NET},
        {"Open3", CODE_EXEC},
        {"OpenURI", CODE_NET},
        {"RestClient", CODE_NET},
        {"Socket", CODE_NET},
        {"TCPSocket", CODE_NET},
        {"Typhoeus", CODE_NET},
        {"UDPSocket", CODE_NET},
        {"URI", CODE_NET}, /* URI.open, open-uri's entry point */
        {"class_eval", CODE_EXEC},
        {"eval", CODE_EXEC},
        {"exec", CODE_EXEC},
        {"fork", CODE_EXEC},
        {"instance_eval", CODE_EXEC},
        {"open", 0}, /* open("| cmd") runs a command */
        {"popen", CODE_EXEC},
        {"send", CODE_EXEC},
        {"socket", CODE_NET},
        {"spawn", CODE_EXEC},
        {"syscall", CODE_EXEC},
        {"system", CODE_EXEC},
        {"uri", CODE_NET}, /* require "open-uri" */
};

static const struct api php_api[] = {
        {"assert", CODE_EXEC},
        {"copy", 0},
        {"create_function", CODE_EXEC},
        {"curl_exec", CODE_NET},
        {"curl_init", CODE_NET},
        {"curl_multi_exec", CODE_NET},
        {"eval", CODE_EXEC},
        {"exec", CODE_EXEC},
        {"file", 0},
        {"file_get_contents", 0}, /* network when given a URL: see code_scan */
        {"fopen", 0},
        {"fsockopen", CODE_NET},
        {"get_headers", CODE_NET},
        {"gethostbyname", CODE_NET},
        {"passthru", CODE_EXEC},
        {"pcntl_exec", CODE_EXEC},
        {"pfsockopen", CODE_NET},
        {"popen", CODE_EXEC},
        {"proc_open", CODE_EXEC},
        {"readfile", 0},
        {"shell_exec", CODE_EXEC},
        {"socket_connect", CODE_NET},
        {"socket_create", CODE_NET},
        {"stream_socket_client", CODE_NET},
        {"system", CODE_EXEC},
};

static int cmp_api(const void *key, const void *elem)
{
	return strcmp(key, ((const struct api *)elem)->word);
}

static int is_ident(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch >= 0x80;
}

/* Scans one-liner text for the language's network and command APIs.  Returns CODE_* bits. */
static unsigned code_scan(enum lang lang, const char *s, size_t len)
{
	const struct api *tab;
	size_t ntab;
	switch (lang) {
	case LANG_PYTHON:
		tab = python_api;
		ntab = sizeof python_api / sizeof python_api[0];
		break;
	case LANG_JS:
		tab = js_api;
		ntab = sizeof js_api / sizeof js_api[0];
		break;
	case LANG_PERL:
		tab = perl_api;
		ntab = sizeof perl_api / sizeof perl_api[0];
		break;
	case LANG_RUBY:
		tab = ruby_api;
		ntab = sizeof ruby_api / sizeof ruby_api[0];
		break;
	default:
		tab = php_api;
		ntab = sizeof php_api / sizeof php_api[0];
		break;
	}
	unsigned what = 0;
	int url = 0, pipe = 0, dollar = 0, fileapi = 0, python_http = 0, python_client = 0,
	    python_os = 0, python_system = 0, deno = 0, deno_run = 0;
	for (size_t i = 0; i < len;) {
		unsigned char ch = (unsigned char)s[i];
		if (!is_ident(ch)) {
			if (ch == '`')
				what |= lang == LANG_PYTHON ? 0 : CODE_EXEC; /* backticks run commands */
			else if (ch == '|')
				pipe = 1;
			else if (ch == '$')
				dollar = 1;
			else if (ch == ':' && i + 2 < len && s[i + 1] == '/' && s[i + 2] == '/')
				url = 1;
			i++;
			continue;
		}
		size_t j = i;
		while (j < len && is_ident((unsigned char)s[j]))
			j++;
		char word[32];
		size_t wl = j - i;
		if (wl < sizeof word) {
			memcpy(word, s + i, wl);
			word[wl] = '\0';
			const struct api *a = bsearch(word, tab, ntab, sizeof *tab, cmp_api);
			if (a != NULL) {
				what |= a->what;
				if (lang == LANG_PHP && a->what == 0)
					fileapi = 1;
				if ((lang == LANG_PERL || lang == LANG_RUBY) &&
				        strcmp(word, "open") == 0)
					fileapi = 1;
				if (lang == LANG_JS && a->what == 0)
					deno_run = 1;
				if (lang == LANG_PYTHON && strcmp(word, "http") == 0)
					python_http = 1;
				if (lang == LANG_PYTHON && strcmp(word, "system") == 0)
					python_system = 1;
			}
			if (lang == LANG_PYTHON && strcmp(word, "client") == 0)
				python_client = 1;
			if (lang == LANG_PYTHON && strcmp(word, "os") == 0)
				python_os = 1;
			if (lang == LANG_JS && strcmp(word, "Deno") == 0)
				deno = 1;
			/* ruby and perl: %x(...) and qx run commands (qx is in the table) */
			if (lang == LANG_RUBY && wl == 1 && word[0] == 'x' && i > 0 && s[i - 1] == '%')
				what |= CODE_EXEC;
		}
		i = j;
	}
	/* os.system runs a command; platform.system() alone does not */
	if (lang == LANG_PYTHON && python_system && python_os)
		what |= CODE_EXEC;
	if (lang == LANG_PYTHON && python_http && python_client)
		what |= CODE_NET;
	if (lang == LANG_JS && deno && deno_run)
		what |= CODE_EXEC;
	/* file_get_contents("https://..."), or of a variable that may hold a URL */
	if (lang == LANG_PHP && fileapi && (url || dollar))
		what |= CODE_NET;
	/* perl open(F, "cmd |") or open(F, "-|", ...), ruby open("| cmd") */
	if ((lang == LANG_PERL || lang == LANG_RUBY) && fileapi && pipe)
		what |= CODE_EXEC;
	return what;
}

/* Applies a one-liner's code: net:raw, or refused when it runs commands or is not static. */
static int one_liner(struct cls_ctx *c, enum lang lang, const struct cls_word *w, const char *what)
{
	if (w->flags & CLS_W_EXP)
		return cls_refuse(c, w->off, "%s program is not static", what);
	unsigned k = code_scan(lang, w->s, w->len);
	if (k & CODE_EXEC)
		return cls_refuse(c, w->off,
		        "%s program runs commands or code it builds, which are not followed", what);
	if (k & CODE_NET)
		c->tags |= ALLOW_TAG_NET_RAW;
	return 0;
}

/* Which option of an interpreter carries program text. */
struct interp_state {
	struct cls_ctx *c;
	enum lang lang;
	const char *what; /* for messages: "python -c" */
	const char *code; /* letters whose value is program text */
	const char *const *lcode;
	const char *mod; /* letters whose value is a module loaded first (scanned as code) */
	const char *const *lmod;
	int found; /* program text was given: the operands are its arguments */
	int rc;
	const struct cls_opt *pymod; /* python -m: stops the walk */
	struct cls_word pymodw;
};

static int interp_opt(void *arg, const struct cls_opt *o)
{
	struct interp_state *st = arg;
	int code = (o->c != 0 && st->code != NULL && strchr(st->code, o->c) != NULL) ||
	           (o->c == 0 && cls_in_list(st->lcode, o->l, o->ll));
	int mod = (o->c != 0 && st->mod != NULL && strchr(st->mod, o->c) != NULL) ||
	          (o->c == 0 && cls_in_list(st->lmod, o->l, o->ll));
	if (o->c == CLS_EXP_MARK || (o->c == 0 && memchr(o->l, CLS_EXP_MARK, o->ll) != NULL)) {
		st->rc = cls_refuse(st->c, o->vw ? o->vw->off : 0, "%s option is not static",
		        st->what);
		return 1;
	}
	if ((!code && !mod) || o->vw == NULL)
		return 0;
	if (st->lang == LANG_PYTHON && o->c == 'm') {
		st->pymodw = *o->vw;
		st->pymodw.s = o->val;
		st->pymodw.len = o->vlen;
		st->pymod = o;
		return 1; /* python -m MODULE: the rest are the module's arguments */
	}
	struct cls_word w = *o->vw;
	w.s = o->val;
	w.len = o->vlen;
	if (code)
		st->found = 1;
	if (one_liner(st->c, st->lang, &w, st->what) == -1) {
		st->rc = -1;
		return 1;
	}
	return st->lang == LANG_PYTHON && code; /* python -c: the rest are arguments */
}

static int python_module(struct cls_ctx *c, const struct cls_word *mod, const struct cls_word *v,
        size_t n, unsigned flags);

static int t_python(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const char *const lv[] = {"check-hash-based-pycs", NULL};
	static const struct cls_opts spec = {"cmWX", NULL, lv, 0, 0};
	struct interp_state st = {.c = c, .lang = LANG_PYTHON, .what = "python -c", .code = "c"};
	int stopped;
	size_t k = cls_opts_walk(v, n, 1, &spec, interp_opt, &st, &stopped);
	if (st.rc == -1)
		return -1;
	if (st.pymod != NULL)
		return python_module(c, &st.pymodw, v + k, n - k, flags);
	return 0; /* a script file, or a program on standard input: out of reach here */
}

static int t_node(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const char *const lcode[] = {"eval", "print", NULL};
	static const char *const lmod[] = {"require", "import", "loader", "experimental-loader", NULL};
	static const char *const lv[] = {"eval", "print", "require", "import", "loader",
	        "experimental-loader", "input-type", "env-file", "conditions", "title",
	        "redirect-warnings", "openssl-config", "icu-data-dir", "stack-trace-limit",
	        "max-http-header-size", "unhandled-rejections", NULL};
	static const struct cls_opts spec = {"eprC", NULL, lv, 0, 0};
	struct interp_state st = {.c = c, .lang = LANG_JS, .what = "node -e", .code = "ep",
	        .lcode = lcode, .mod = "r", .lmod = lmod};
	cls_opts_walk(v, n, 1, &spec, interp_opt, &st, NULL);
	return st.rc;
}

static int t_deno(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const char *const lv[] = {"ext", "config", "import-map", "lock", "cert", "location",
	        "seed", "log-level", "env-file", "allow-net", "allow-read", "allow-write",
	        "allow-env", "allow-run", "allow-ffi", "allow-sys", "allow-import", "deny-net",
	        "deny-read", "deny-write", "deny-env", "deny-run", "deny-ffi", "deny-sys",
	        "inspect", "inspect-brk", "inspect-wait", "v8-flags", "watch", "port", "host",
	        "name", "root", "output", "target", "include", "exclude", "filter", "reporter",
	        "coverage", "shuffle", "doc", "permit-no-files", "token", "set-version", "jobs",
	        NULL};
	static const struct cls_opts spec = {"cLA", NULL, NULL, 0, 0};
	static const char *const fetchers[] = {"install", "i", "add", "cache", "outdated",
	        "update", "upgrade", "remove", NULL};
	static const char *const runners[] = {"run", "serve", "test", "bench", "task", "repl",
	        "jupyter", "compile", NULL};
	static const char *const local[] = {"fmt", "lint", "check", "doc", "info", "types",
	        "completions", "help", "init", "lsp", "uninstall", "clean", "coverage", "bundle",
	        "vendor", NULL};
	(void)spec;
	size_t i = 1;
	while (i < n && v[i].len > 1 && v[i].s[0] == '-' && !(v[i].flags & CLS_W_LEADEXP))
		i++;
	if (i >= n)
		return 0;
	const struct cls_word *sub = &v[i];
	if (sub->flags & CLS_W_EXP)
		return cls_refuse(c, sub->off, "deno subcommand is not static");
	/* the subcommand's options: deno permissions say what the program may reach */
	const struct cls_word *first = NULL;
	int allow_net = 0;
	for (size_t k = i + 1; k < n; k++) {
		const struct cls_word *w = &v[k];
		if (w->flags & CLS_W_LEADEXP) {
			allow_net = 1;
			continue;
		}
		if (w->len > 1 && w->s[0] == '-') {
			if (cls_word_is(w, "-A") || cls_word_is(w, "--allow-all") ||
			        cls_word_is(w, "-N") || starts_with(w, "--allow-net") ||
			        starts_with(w, "--allow-import") || starts_with(w, "--allow-run") ||
			        starts_with(w, "--allow-ffi"))
				allow_net = 1;
			const char *eq = memchr(w->s, '=', w->len);
			if (eq == NULL && w->s[1] == '-' && cls_in_list(lv, w->s + 2, w->len - 2) &&
			        !starts_with(w, "--allow-") && !starts_with(w, "--deny-"))
				k++;
			continue;
		}
		if (first == NULL)
			first = w;
	}
	if (cls_word_is(sub, "eval")) {
		if (first == NULL)
			return 0;
		return one_liner(c, LANG_JS, first, "deno eval");
	}
	if (cls_word_is(sub, "publish")) {
		c->tags |= ALLOW_TAG_HTTP_WRITE;
		return 0;
	}
	if (word_in(sub, fetchers)) {
		c->tags |= ALLOW_TAG_HTTP_READ;
		return 0;
	}
	if (word_in(sub, runners) || (sub->len > 0 && strchr(sub->s, '.') != NULL)) {
		/* deno run FILE, or deno FILE: a remote module is fetched; with a network
		 * permission the program may connect anywhere */
		const struct cls_word *target = word_in(sub, runners) ? first : sub;
		if (target != NULL && !(target->flags & CLS_W_EXP) &&
		        (starts_with(target, "https://") || starts_with(target, "http://"))) {
			c->tags |= ALLOW_TAG_HTTP_READ;
			cls_add_url_host(c, target, 0);
		}
		if (allow_net)
			c->tags |= ALLOW_TAG_NET_RAW;
		return 0;
	}
	if (word_in(sub, local))
		return 0;
	c->tags |= RW;
	return 0;
}

/* perl: -e/-E program text (all of them, in order), -M/-m modules; bundles like -lane. */
static int t_perl(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	for (size_t i = 1; i < n; i++) {
		const struct cls_word *w = &v[i];
		if (w->flags & CLS_W_LEADEXP)
			return cls_refuse(c, w->off, "perl option is not static");
		if (w->len < 2 || w->s[0] != '-' || cls_word_is(w, "--"))
			return 0; /* the script file (or -- before it): out of reach here */
		for (size_t j = 1; j < w->len; j++) {
			char ch = w->s[j];
			if (ch == 'e' || ch == 'E' || ch == 'M' || ch == 'm' || ch == 'I') {
				struct cls_word val = *w;
				if (j + 1 < w->len) {
					val.s = w->s + j + 1;
					val.len = w->len - j - 1;
				} else if (i + 1 < n) {
					val = v[++i];
				} else {
					break;
				}
				if (ch != 'I' && one_liner(c, LANG_PERL, &val, "perl -e") == -1)
					return -1;
				break;
			}
			if (ch == 'l' || ch == '0' || ch == 'C') {
				while (j + 1 < w->len && ((w->s[j + 1] >= '0' && w->s[j + 1] <= '9') ||
				                                 (ch == '0' && (w->s[j + 1] == 'x' ||
				                                                       w->s[j + 1] == 'X'))))
					j++;
				continue;
			}
			if (ch == 'i' || ch == 'x' || ch == 'd' || ch == 'D' || ch == 'F' || ch == 'V')
				break; /* the rest of the word is this option's value */
		}
	}
	return 0;
}

/* ruby: -e program text, -r libraries; bundles like -ne, -rjson. */
static int t_ruby(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	for (size_t i = 1; i < n; i++) {
		const struct cls_word *w = &v[i];
		if (w->flags & CLS_W_LEADEXP)
			return cls_refuse(c, w->off, "ruby option is not static");
		if (w->len < 2 || w->s[0] != '-' || cls_word_is(w, "--"))
			return 0;
		if (w->s[1] == '-') {
			if (starts_with(w, "--require=")) {
				struct cls_word val = *w;
				val.s += 10;
				val.len -= 10;
				if (one_liner(c, LANG_RUBY, &val, "ruby -r") == -1)
					return -1;
			}
			continue;
		}
		for (size_t j = 1; j < w->len; j++) {
			char ch = w->s[j];
			if (ch == 'e' || ch == 'r' || ch == 'I' || ch == 'C' || ch == 'E') {
				struct cls_word val = *w;
				if (j + 1 < w->len) {
					val.s = w->s + j + 1;
					val.len = w->len - j - 1;
				} else if (i + 1 < n) {
					val = v[++i];
				} else {
					break;
				}
				if ((ch == 'e' || ch == 'r') &&
				        one_liner(c, LANG_RUBY, &val, "ruby -e") == -1)
					return -1;
				break;
			}
			if (ch == '0' || ch == 'W') {
				while (j + 1 < w->len && w->s[j + 1] >= '0' && w->s[j + 1] <= '9')
					j++;
				continue;
			}
			if (ch == 'i' || ch == 'x' || ch == 'F' || ch == 'K' || ch == 'T')
				break;
		}
	}
	return 0;
}

static int t_php(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const char *const lv[] = {"rf", "rc", "re", "rz", "ri", "define", NULL};
	static const struct cls_opts spec = {"rBREFdcfSzt", NULL, lv, 0, 0};
	struct interp_state st = {.c = c, .lang = LANG_PHP, .what = "php -r", .code = "rBRE"};
	cls_opts_walk(v, n, 1, &spec, interp_opt, &st, NULL);
	return st.rc;
}

/* ---- the environment a line sets -------------------------------------------------------- */

/* Names whose value a rule reads: registry overrides. */
static const char *const env_names[] = {"BUN_CONFIG_REGISTRY", "GOFLAGS", "GOPROXY",
        "HOMEBREW_API_DOMAIN", "HOMEBREW_ARTIFACT_DOMAIN", "HOMEBREW_BOTTLE_DOMAIN",
        "NPM_CONFIG_REGISTRY", "PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL", "PIP_NO_INDEX",
        "RUBYGEMS_HOST", "TWINE_REPOSITORY", "TWINE_REPOSITORY_URL", "UV_DEFAULT_INDEX",
        "UV_EXTRA_INDEX_URL", "UV_INDEX", "UV_INDEX_URL", "UV_OFFLINE", "UV_PUBLISH_URL",
        "YARN_NPM_REGISTRY_SERVER", "YARN_REGISTRY", "npm_config_registry", "yarn_registry",
        NULL};

void cls_note_assign(struct cls_ctx *c, const struct cls_word *w)
{
	const char *eq = memchr(w->s, '=', w->len);
	if (eq == NULL || eq == w->s)
		return;
	size_t nl = (size_t)(eq - w->s);
	if (eq[-1] == '+')
		nl--; /* NAME+=VALUE */
	if (!cls_in_list(env_names, w->s, nl))
		return;
	struct cls_assign *a = cls_alloc(c, sizeof *a + sizeof *w, w->off);
	if (a == NULL)
		return;
	struct cls_word *copy = (struct cls_word *)(a + 1);
	*copy = *w;
	a->w = copy;
	a->nlen = nl;
	a->next = c->assigns;
	c->assigns = a;
}

/* export, declare, typeset, local, readonly: their NAME=VALUE arguments. */
static int t_declare(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	for (size_t i = 1; i < n; i++)
		if (!(v[i].len > 0 && (v[i].s[0] == '-' || v[i].s[0] == '+')))
			cls_note_assign(c, &v[i]);
	return 0;
}

/* ---- dispatch --------------------------------------------------------------------------- */

int cls_rule_uv(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)c;
	(void)v;
	(void)n;
	(void)flags;
	return 0;
}

static int python_module(struct cls_ctx *c, const struct cls_word *mod, const struct cls_word *v,
        size_t n, unsigned flags)
{
	(void)c;
	(void)mod;
	(void)v;
	(void)n;
	(void)flags;
	return 0;
}

struct tool {
	const char *name; /* program basename */
	int (*fn)(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags);
};

/* Sorted by name (strcmp order) for bsearch. */
static const struct tool tools[] = {
        {"declare", t_declare},
        {"deno", t_deno},
        {"export", t_declare},
        {"ftp", t_ftp},
        {"grpcurl", t_grpcurl},
        {"lftp", t_lftp},
        {"local", t_declare},
        {"nc", t_nc},
        {"ncat", t_nc},
        {"netcat", t_nc},
        {"node", t_node},
        {"nodejs", t_node},
        {"openssl", t_openssl},
        {"perl", t_perl},
        {"php", t_php},
        {"pypy", t_python},
        {"python", t_python},
        {"readonly", t_declare},
        {"ruby", t_ruby},
        {"socat", t_socat},
        {"telnet", t_telnet},
        {"tftp", t_tftp},
        {"typeset", t_declare},
        {"websocat", t_websocat},
};

static int cmp_tool(const void *key, const void *elem)
{
	return strcmp(key, ((const struct tool *)elem)->name);
}

/* Versioned names run the same program: python3.12, pip3, php8.2, perl5.36, ruby3.1, node18. */
static const char *const versioned[] = {"node", "perl", "php", "pip", "pypy", "python", "ruby",
        NULL};

int cls_rule_tools(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	const char *base = v[0].s;
	for (const char *p = v[0].s; p < v[0].s + v[0].len; p++)
		if (*p == '/')
			base = p + 1;
	size_t bl = (size_t)(v[0].s + v[0].len - base);
	const struct tool *t = NULL;
	if (bl > 0 && bl < 32 && base[bl - 1] >= '0' && base[bl - 1] <= '9') {
		size_t k = bl;
		while (k > 0 && ((base[k - 1] >= '0' && base[k - 1] <= '9') || base[k - 1] == '.'))
			k--;
		char name[32];
		memcpy(name, base, k);
		name[k] = '\0';
		if (cls_in_list(versioned, name, k))
			t = bsearch(name, tools, sizeof tools / sizeof tools[0], sizeof tools[0],
			        cmp_tool);
	}
	if (t == NULL)
		t = bsearch(base, tools, sizeof tools / sizeof tools[0], sizeof tools[0], cmp_tool);
	if (t == NULL)
		return 0;
	return t->fn(c, v, n, flags);
}
