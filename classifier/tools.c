/* Rules for the rest of an agent's toolbox (DESIGN.md 10): raw network tools and /dev/tcp
 * redirections (net:raw), interpreter one-liners, package managers and registries, cloud and
 * cluster clients.  wrappers.c hands every program it has no handler for to cls_rule_tools.
 *
 * When a rule cannot tell, it answers with more tags, never fewer: an unknown verb of a tool
 * gets both its read and its write tag. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
	struct cls_word w = {buf, k, 0, off, NULL};
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

/* Runs v[0..n) as a command of its own (a tool's exec or run verb). */
static int run_nested(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	if (n == 0)
		return 0;
	if (cls_enter(c, v[0].off) == -1 || cls_run_cmd(c, v, n, flags, NULL) == -1)
		return -1;
	cls_leave(c);
	return 0;
}

/* Runs a word as a shell script (a tool's command string), refused when it is not static. */
static int run_script_word(struct cls_ctx *c, const struct cls_word *w, const char *what)
{
	if (w->flags & CLS_W_EXP)
		return cls_refuse(c, w->off, "%s is not static", what);
	int saved = c->sh_mode;
	c->sh_mode = 1; /* a tool runs its command string with /bin/sh */
	int rc = cls_run_script(c, w->s, w->len, w->off, 0);
	c->sh_mode = saved;
	return rc;
}

/* ---- /dev/tcp and /dev/udp -------------------------------------------------------------- */

void cls_note_redir(struct cls_ctx *c, const struct cls_word *t)
{
	static const char tcp[] = "/dev/tcp/", udp[] = "/dev/udp/";
	const size_t pl = sizeof tcp - 1;
	if (cls_names_program_file(t)) {
		/* the line stays refused: cls_refuse records it */
		(void)cls_refuse(c, t->off,
		        "a redirection from or to a network program's file: a copy can run under "
		        "any name: refused");
		return;
	}
	/* a target that begins with an expansion may be a whole /dev/tcp path (x=/dev/tcp/h/80,
	 * $(echo ...), $1): net:raw once the line is read, if it shows tcp or udp */
	if (t->len > 0 && t->s[0] == CLS_EXP_MARK)
		c->redir_exp = 1;
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

/* gnutls-cli [options] HOST (-p PORT): a TLS client on standard input, like openssl s_client. */
static int t_gnutls_cli(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const char *const lv[] = {"port", "x509cafile", "x509certfile", "x509keyfile",
	        "x509crlfile", "sni-hostname", "starttls-proto", "priority", "alpn", "debug",
	        "save-cert", "save-ocsp", "save-server-trace", "save-client-trace", "pskusername",
	        "pskkey", "srpusername", "srppasswd", "recordsize", "dh-bits", "keymatexport",
	        "keymatexportsize", "waitresumption", "ocsp-response", "list-config", "logfile",
	        "inline-commands-prefix", "provider", "attime", "verify-hostname", "verify-email",
	        "verify-purpose", "rawpkkeyfile", "rawpkfile", "earlydata", "fips140-mode",
	        "compress-cert", NULL};
	return t_rawhost(c, v, n, "pd", lv, 0);
}

/* busybox ftpget/ftpput [options] HOST REMOTE LOCAL */
static int t_ftpput(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const char *const lv[] = {"username", "password", "port", NULL};
	return t_rawhost(c, v, n, "upP", lv, 0);
}

/* Mail senders: they hand a message to a server (swaks, msmtp name it, sendmail relays). */
static int t_mailer(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)v;
	(void)n;
	(void)flags;
	c->tags |= ALLOW_TAG_NET_RAW;
	return 0;
}

/* Database and cache clients that name a server: redis-cli -h/-u, psql -h/--host or a
 * postgresql:// URI or host= conninfo, mysql/mariadb -h, mongosh/mongo a mongodb:// URI or
 * --host.  The protocol carries reads and writes alike: net:raw.  With no host named they
 * reach the local server (a socket, or loopback): nothing, as any local program. */
static int db_client(struct cls_ctx *c, const struct cls_word *v, size_t n, int redis, int mongo)
{
	int remote = 0;
	for (size_t i = 1; i < n; i++) {
		const struct cls_word *w = &v[i];
		struct cls_word hv = *w;
		int host = 0;
		if (w->flags & CLS_W_LEADEXP) {
			remote = 1; /* a host or URI from an expansion */
			continue;
		}
		if ((cls_word_is(w, "-h") && !mongo) || cls_word_is(w, "--host") ||
		        (cls_word_is(w, "-u") && redis) || (cls_word_is(w, "--uri") && mongo)) {
			if (i + 1 >= n)
				break;
			hv = v[++i];
			host = 1;
		} else if (starts_with(w, "--host=") || starts_with(w, "--uri=")) {
			const char *eq = memchr(w->s, '=', w->len);
			hv.s = eq + 1;
			hv.len = w->len - (size_t)(eq + 1 - w->s);
			host = 1;
		} else if (!mongo && !redis && w->len > 2 && w->s[0] == '-' && w->s[1] == 'h') {
			hv.s += 2; /* psql -hHOST, mysql -hHOST */
			hv.len -= 2;
			host = 1;
		} else if (strstr(w->s, "://") != NULL) {
			cls_add_url_host(c, w, 0);
			remote = 1;
		} else if (starts_with(w, "host=") || strstr(w->s, " host=") != NULL) {
			remote = 1; /* a conninfo string */
		}
		if (!host)
			continue;
		remote = 1;
		if (memchr(hv.s, CLS_EXP_MARK, hv.len) != NULL)
			continue;
		if (strstr(hv.s, "://") != NULL)
			cls_add_url_host(c, &hv, 0);
		else
			add_hostport_word(c, hv.s, hv.len, hv.off);
	}
	if (remote)
		c->tags |= ALLOW_TAG_NET_RAW;
	return 0;
}

static int t_redis_cli(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	return db_client(c, v, n, 1, 0);
}

static int t_sql_client(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	return db_client(c, v, n, 0, 0);
}

static int t_mongo(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	return db_client(c, v, n, 0, 1);
}

/* ---- interpreter one-liners ------------------------------------------------------------- */

enum lang {
	LANG_PYTHON, /* python -c */
	LANG_JS,     /* node -e/-p, deno eval */
	LANG_PERL,   /* perl -e/-E, -M */
	LANG_RUBY,   /* ruby -e, -r */
	LANG_PHP,    /* php -r/-B/-R/-E */
	LANG_LUA,    /* lua -e, -l (luajit, lua5.x) */
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
        {"DatagramHandler", CODE_NET},
        {"HTTPConnection", CODE_NET},
        {"HTTPHandler", CODE_NET},
        {"HTTPSConnection", CODE_NET},
        {"SMTPHandler", CODE_NET},
        {"SocketHandler", CODE_NET}, /* logging.handlers */
        {"SysLogHandler", CODE_NET},
        {"UnsafeLoader", CODE_EXEC}, /* yaml.load(..., Loader=UnsafeLoader) */
        {"__builtins__", CODE_EXEC},
        {"__dict__", CODE_EXEC}, /* os.__dict__[...] */
        {"__import__", CODE_EXEC},
        {"_pickle", CODE_EXEC},
        {"aiohttp", CODE_NET},
        {"asyncssh", CODE_NET},
        {"builtins", CODE_EXEC},
        {"cPickle", CODE_EXEC},
        {"cloudpickle", CODE_EXEC},
        {"create_connection", CODE_NET},
        {"create_subprocess_exec", CODE_EXEC},
        {"create_subprocess_shell", CODE_EXEC},
        {"ctypes", CODE_EXEC},
        {"dill", CODE_EXEC},
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
        {"getattr", CODE_EXEC}, /* getattr(os, 'sys'+'tem') */
        {"globals", CODE_EXEC},
        {"grpc", CODE_NET},
        {"http", 0}, /* http.client is network, http.server is not: see code_scan */
        {"httplib", CODE_NET},
        {"httplib2", CODE_NET},
        {"httpx", CODE_NET},
        {"imaplib", CODE_NET},
        {"importlib", CODE_EXEC},
        {"jsonpickle", CODE_EXEC},
        {"multiprocessing", CODE_NET}, /* multiprocessing.connection.Client */
        {"nntplib", CODE_NET},
        {"open_connection", CODE_NET},
        {"paramiko", CODE_NET},
        {"pickle", CODE_EXEC}, /* loads() runs what the data names (attack round 4) */
        {"pip", CODE_EXEC},    /* pip.main([...]) installs */
        {"pipepager", CODE_EXEC},
        {"popen", CODE_EXEC},
        {"poplib", CODE_NET},
        {"posix", CODE_EXEC}, /* posix.system */
        {"posix_spawn", CODE_EXEC},
        {"posix_spawnp", CODE_EXEC},
        {"pty", CODE_EXEC},
        {"pycurl", CODE_NET},
        {"pydoc", CODE_EXEC}, /* pydoc.pipepager runs a command */
        {"requests", CODE_NET},
        {"runpy", CODE_EXEC},
        {"shelve", CODE_EXEC}, /* pickles */
        {"smtplib", CODE_NET},
        {"socket", CODE_NET},
        {"spawnl", CODE_EXEC},
        {"spawnlp", CODE_EXEC},
        {"spawnv", CODE_EXEC},
        {"spawnvp", CODE_EXEC},
        {"subprocess", CODE_EXEC},
        {"system", 0}, /* os.system runs a command, platform.system() does not */
        {"telnetlib", CODE_NET},
        {"tempfilepager", CODE_EXEC},
        {"unsafe_load", CODE_EXEC},
        {"upgrade_deps", CODE_EXEC}, /* venv.create(..., upgrade_deps=True) runs pip */
        {"urllib", CODE_NET},
        {"urllib2", CODE_NET},
        {"urllib3", CODE_NET},
        {"urlopen", CODE_NET},
        {"urlretrieve", CODE_NET},
        {"vars", CODE_EXEC},       /* vars(os)[...] */
        {"webbrowser", CODE_EXEC}, /* runs $BROWSER */
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
        {"_load", CODE_EXEC}, /* module.constructor._load */
        {"axios", CODE_NET},
        {"binding", CODE_EXEC}, /* process.binding("spawn_sync") */
        {"child_process", CODE_EXEC},
        {"connect", CODE_NET},
        {"connectTls", CODE_NET},
        {"createRequire", CODE_EXEC},
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
        {"CPAN", CODE_EXEC}, /* runs wget, curl, lftp, make (attack round 4) */
        {"CPANPLUS", CODE_EXEC},
        {"Curl", CODE_NET},
        {"FTP", CODE_NET},
        {"Fetch", CODE_EXEC}, /* File::Fetch runs wget, curl, lftp */
        {"Furl", CODE_NET},
        {"HTTP", CODE_NET},
        {"IPC", CODE_EXEC}, /* IPC::Open2, IPC::Open3, IPC::Cmd, IPC::Run */
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

/* lua: os.execute and io.popen run commands; load/dofile/loadstring/package.loadlib run code the
 * line cannot see, _G/_ENV/getfenv/rawget/debug reach any function by a built name, and
 * luajit's ffi calls C (system()).  luasocket, luasec, lua-curl, copas and http are network
 * libraries. */
static const struct api lua_api[] = {
        {"_ENV", CODE_EXEC},
        {"_G", CODE_EXEC},
        {"cURL", CODE_NET},
        {"copas", CODE_NET},
        {"curl", CODE_NET},
        {"debug", CODE_EXEC},
        {"dofile", CODE_EXEC},
        {"execute", CODE_EXEC},
        {"ffi", CODE_EXEC},
        {"getfenv", CODE_EXEC},
        {"http", CODE_NET},
        {"load", CODE_EXEC},
        {"loadfile", CODE_EXEC},
        {"loadlib", CODE_EXEC},
        {"loadstring", CODE_EXEC},
        {"package", CODE_EXEC},
        {"popen", CODE_EXEC},
        {"rawget", CODE_EXEC},
        {"setfenv", CODE_EXEC},
        {"socket", CODE_NET},
        {"ssl", CODE_NET},
        {"websocket", CODE_NET},
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

/* Whether the argument of require/import at s[j..] is not one plain string literal (second
 * attacker's finding 29: require("child"+"_process"), require("\x63hild_process"),
 * import(`${x}`), perl's require("IO/Sock"."et/INET.pm")).  JS's import without a parenthesis
 * (a static import) and perl's bareword require are plain. */
static int dynamic_arg(const char *s, size_t len, size_t j, int perl)
{
	while (j < len && (s[j] == ' ' || s[j] == '\t'))
		j++;
	int paren = j < len && s[j] == '(';
	if (paren)
		j++;
	else if (!perl)
		return 0; /* import x from "y", a require without a call */
	while (j < len && (s[j] == ' ' || s[j] == '\t'))
		j++;
	if (j >= len)
		return 0;
	char q = s[j];
	if (q != '"' && q != '\'' && q != '`') {
		if (!paren && perl && q != '$')
			return 0; /* require Bare::Word */
		return 1;
	}
	for (j++; j < len && s[j] != q; j++)
		if (s[j] == '\\' || s[j] == '$')
			return 1;
	if (j >= len)
		return 1;
	for (j++; j < len && (s[j] == ' ' || s[j] == '\t'); j++)
		;
	return !(j >= len || s[j] == ')' || s[j] == ';' || (perl && !paren && s[j] == ','));
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
	case LANG_LUA:
		tab = lua_api;
		ntab = sizeof lua_api / sizeof lua_api[0];
		break;
	default:
		tab = php_api;
		ntab = sizeof php_api / sizeof php_api[0];
		break;
	}
	unsigned what = 0;
	int url = 0, pipe = 0, dollar = 0, fileapi = 0, python_http = 0, python_client = 0,
	    python_os = 0, python_system = 0, deno = 0, deno_run = 0, copies = 0, netprog = 0;
	static const char *const copy_words[] = {"symlink", "link", "copy", "copyfile", "copy2",
	        "copyfileobj", "ln_s", "ln", "cp", "install", "rename", "move", "hardlink_to",
	        "symlink_to", "write_bytes", "copyFileSync", "symlinkSync", "linkSync", "copyFile",
	        NULL};
	static const char *const prog_words[] = {"curl", "wget", "wget2", "git", "ssh", "scp",
	        "sftp", "rsync", "nc", "ncat", "netcat", "socat", "telnet", "openssl", "aria2c",
	        "busybox", "so", "slogin", NULL};
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
			if (((lang == LANG_JS && (strcmp(word, "require") == 0 ||
			                              strcmp(word, "import") == 0)) ||
			            ((lang == LANG_PERL || lang == LANG_LUA) &&
			                    strcmp(word, "require") == 0)) &&
			        dynamic_arg(s, len, j, lang != LANG_JS))
				what |= CODE_EXEC;
			/* lua: os or io as a value (os["exe".."cute"], pairs(os), local o = os)
			 * reaches os.execute and io.popen by a name the line builds */
			if (lang == LANG_LUA && wl == 2 &&
			        (strcmp(word, "os") == 0 || strcmp(word, "io") == 0)) {
				size_t k = j;
				while (k < len && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n'))
					k++;
				if (k >= len || (s[k] != '.' && s[k] != ':'))
					what |= CODE_EXEC;
			}
			if (cls_in_list(copy_words, word, wl))
				copies = 1;
			if (cls_in_list(prog_words, word, wl))
				netprog = 1;
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
	/* a copy or link of a network program (os.symlink("/usr/bin/curl", c), shutil.copy,
	 * perl's symlink, fs.copyFileSync): it can run under any name (finding 26) */
	if (copies && netprog)
		what |= CODE_EXEC;
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
	/* node imports a data: URL as a module (--import, --loader, import("data:..."), its
	 * text base64- or percent-encoded): code the scan cannot read (attack round 4) */
	if (lang == LANG_JS)
		for (size_t i = 0; i + 5 <= len; i++)
			if ((s[i] | 0x20) == 'd' && strncasecmp(s + i, "data:", 5) == 0)
				what |= CODE_EXEC;
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

int cls_scan_program(struct cls_ctx *c, const char *base, size_t bl, const struct cls_word *text)
{
	static const struct {
		const char *name;
		enum lang lang;
	} langs[] = {{"python", LANG_PYTHON}, {"pypy", LANG_PYTHON}, {"perl", LANG_PERL},
	        {"ruby", LANG_RUBY}, {"irb", LANG_RUBY}, {"nodejs", LANG_JS}, {"node", LANG_JS},
	        {"php", LANG_PHP}, {"lua", LANG_LUA}};
	for (size_t i = 0; i < sizeof langs / sizeof langs[0]; i++) {
		size_t nl = strlen(langs[i].name);
		if (bl >= nl && memcmp(base, langs[i].name, nl) == 0)
			return one_liner(c, langs[i].lang, text, "here-document");
	}
	/* tclsh, lua, Rscript, ...: a language without a table; words that run commands, open
	 * pipes or sockets, or build code are refused (tclsh <<< 'exec git push') */
	static const char *const runs[] = {"exec", "popen", "system", "socket", "open", "spawn",
	        "eval", "load", "require", "source", "package", "shell", "pipe", "url", "http",
	        "Process", "run", "do", "`", "|", "[", NULL};
	if (memchr(text->s, CLS_EXP_MARK, text->len) != NULL)
		return cls_refuse(c, text->off, "here-document program is not static");
	for (size_t i = 0; runs[i] != NULL; i++)
		if (memmem(text->s, text->len, runs[i], strlen(runs[i])) != NULL)
			return cls_refuse(c, text->off,
			        "a %.*s program from standard input may run commands (%s): refused",
			        (int)bl, base, runs[i]);
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
	if (st->lang == LANG_PYTHON && o->c == 'm' && o->vw != NULL) {
		st->pymodw = *o->vw;
		st->pymodw.s = o->val;
		st->pymodw.len = o->vlen;
		st->pymod = o;
		return 1; /* python -m MODULE: the rest are the module's arguments */
	}
	if ((!code && !mod) || o->vw == NULL)
		return 0;
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
		return python_module(c, &st.pymodw, v + k - 1, n - k + 1, flags);
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
	/* node bundles no short options, but knows -pe (print and eval: the next word is the
	 * program).  A bundle of letters that holds e or p (-pe, -ep, -ipe) is read as -e:
	 * node runs -pe's program, and rejects the others, so scanning the next word only adds. */
	struct cls_word *nv = NULL;
	for (size_t i = 1; i < n; i++) {
		const struct cls_word *w = &v[i];
		if (w->len < 2 || w->s[0] != '-' || (w->flags & CLS_W_EXP))
			break;
		if (w->s[1] == '-') {
			if (w->len == 2)
				break;
			if (memchr(w->s, '=', w->len) == NULL && cls_in_list(lv, w->s + 2, w->len - 2))
				i++;
			continue;
		}
		int bundle = w->len > 2, ep = 0;
		for (size_t j = 1; j < w->len && bundle; j++) {
			char ch = w->s[j];
			bundle = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
			ep |= ch == 'e' || ch == 'p';
		}
		if (bundle && ep) {
			if (nv == NULL) {
				nv = cls_alloc(c, n * sizeof *nv, w->off);
				if (nv == NULL)
					return -1;
				memcpy(nv, v, n * sizeof *nv);
			}
			nv[i].s = "-e";
			nv[i].len = 2;
			i++;
			continue;
		}
		if (w->len == 2 && strchr("eprC", w->s[1]) != NULL)
			i++;
	}
	cls_opts_walk(nv != NULL ? nv : v, n, 1, &spec, interp_opt, &st, NULL);
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
	static const char *const fetchers[] = {"install", "i", "add", "cache", "outdated",
	        "update", "upgrade", "remove", NULL};
	static const char *const runners[] = {"run", "serve", "test", "bench", "task", "repl",
	        "jupyter", "compile", NULL};
	static const char *const local[] = {"fmt", "lint", "check", "doc", "info", "types",
	        "completions", "help", "init", "lsp", "uninstall", "clean", "coverage", "bundle",
	        "vendor", NULL};
	size_t i = 1; /* deno's own options come before the subcommand */
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

/* lua, luajit, lua5.x: -e program text, -l a library (require'd first: scanned as code, so
 * -l socket is net:raw); the first operand is the script.  luajit's -b saves bytecode and
 * takes the rest of the words, -j and -O take a value. */
static int t_lua(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	for (size_t i = 1; i < n; i++) {
		const struct cls_word *w = &v[i];
		if (w->flags & CLS_W_LEADEXP)
			return cls_refuse(c, w->off, "lua option is not static");
		if (w->len < 2 || w->s[0] != '-' || cls_word_is(w, "--"))
			return 0;
		for (size_t j = 1; j < w->len; j++) {
			char ch = w->s[j];
			if (ch == 'e' || ch == 'l' || ch == 'j' || ch == 'O') {
				struct cls_word val = *w;
				if (j + 1 < w->len) {
					val.s = w->s + j + 1;
					val.len = w->len - j - 1;
				} else if (i + 1 < n) {
					val = v[++i];
				} else {
					break;
				}
				if ((ch == 'e' || ch == 'l') &&
				        one_liner(c, LANG_LUA, &val, ch == 'e' ? "lua -e" : "lua -l") ==
				                -1)
					return -1;
				break;
			}
			if (ch == 'b')
				return 0; /* luajit -b: bytecode out of the rest */
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

/* Names whose value a rule reads: registry overrides, and where curl and wget find a
 * configuration (rules.c). */
static const char *const env_names[] = {"BUN_CONFIG_REGISTRY", "BUNDLE_MIRROR__ALL", "CURL_HOME",
        "GOPROXY", "HOME", "HOMEBREW_API_DOMAIN", "HOMEBREW_ARTIFACT_DOMAIN",
        "HOMEBREW_BOTTLE_DOMAIN", "NPM_CONFIG_REGISTRY", "PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL",
        "PIP_NO_INDEX", "RUBYGEMS_HOST", "SYSTEM_WGETRC", "TWINE_REPOSITORY",
        "TWINE_REPOSITORY_URL", "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL", "UV_INDEX",
        "UV_INDEX_URL", "UV_OFFLINE", "UV_PUBLISH_URL", "WGETRC", "XDG_CONFIG_HOME",
        "YARN_NPM_REGISTRY_SERVER", "YARN_REGISTRY", "npm_config_registry", "yarn_registry", NULL};

void cls_note_assign(struct cls_ctx *c, const struct cls_word *w)
{
	{
		const char *v = memchr(w->s, '=', w->len);
		if (v != NULL && !(w->flags & CLS_W_EXP) &&
		        cls_value_names_program(v + 1, w->len - (size_t)(v + 1 - w->s)))
			c->program_value = 1;
	}
	/* most assignments name none of them: the first letters of env_names */
	if (w->len == 0 || strchr("BCGHNPRSTUWXYny", w->s[0]) == NULL)
		return;
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

/* ---- dispatch --------------------------------------------------------------------------- */

/* ---- package managers and registries ---------------------------------------------------- */

#define R ALLOW_TAG_HTTP_READ
#define W ALLOW_TAG_HTTP_WRITE

/* One verb of a tool and its tags (0: local). */
struct verb {
	const char *name;
	unsigned tags;
};

/* The verb's entry in a NULL-terminated table, or NULL. */
static const struct verb *verb_find(const struct verb *tab, const struct cls_word *w)
{
	if (w->flags & CLS_W_EXP)
		return NULL;
	for (; tab->name != NULL; tab++)
		if (strlen(tab->name) == w->len && memcmp(tab->name, w->s, w->len) == 0)
			return tab;
	return NULL;
}

/* A verb's tags: its entry's, or read and write for a verb the table does not know. */
static unsigned verb_tags(const struct verb *tab, const struct cls_word *w)
{
	const struct verb *e = verb_find(tab, w);
	return e != NULL ? e->tags : RW;
}

/* Script names that npm-style tools run from package.json when no verb has that name (`yarn
 * build`): out of reach here, like `npm run build`, so local. */
static const char *const script_names[] = {"build", "dev", "start", "test", "lint", "format",
        "fmt", "typecheck", "type-check", "check", "serve", "watch", "preview", "clean",
        "compile", "bundle", "generate", "e2e", "coverage", "storybook", "prettier", "eslint",
        "tsc", "jest", "vitest", "prepare", NULL};

/* Records the host of each URL in a registry value ("https://a.test/simple https://b.test"
 * or GOPROXY's "https://p.test,direct").  Returns 1 when one names the default's stand-in
 * `direct` (go: fetch from the module's own host). */
static int value_hosts(struct cls_ctx *c, const char *s, size_t len, size_t off)
{
	int direct = 0;
	size_t i = 0;
	while (i < len) {
		while (i < len && (s[i] == ' ' || s[i] == ',' || s[i] == '|'))
			i++;
		size_t j = i;
		while (j < len && s[j] != ' ' && s[j] != ',' && s[j] != '|')
			j++;
		if (j - i == 6 && memcmp(s + i, "direct", 6) == 0)
			direct = 1;
		struct cls_word w = {cls_strdup(c, s + i, j - i, off), j - i, 0, off, NULL};
		if (w.s != NULL && j > i)
			cls_add_url_host(c, &w, 0);
		i = j;
	}
	return direct;
}

/* The value of the last assignment on the line to one of names, or NULL (*w_out its word). */
static const struct cls_word *env_value(
        const struct cls_ctx *c, const char *const *names, const char **val, size_t *vlen)
{
	/* c->assigns is newest first */
	for (const struct cls_assign *a = c->assigns; a != NULL; a = a->next) {
		if (!cls_in_list(names, a->w->s, a->nlen))
			continue;
		const char *eq = memchr(a->w->s, '=', a->w->len);
		*val = eq + 1;
		*vlen = a->w->len - (size_t)(eq + 1 - a->w->s);
		return a->w;
	}
	return NULL;
}

/* An environment override of a registry on the line: its hosts recorded.  Returns 1 when the
 * line sets one of names (the default registry is then not reached), else 0. */
static int env_registry(struct cls_ctx *c, const char *const *names)
{
	const char *val;
	size_t vlen;
	const struct cls_word *w = env_value(c, names, &val, &vlen);
	if (w == NULL)
		return 0;
	if (memchr(val, CLS_EXP_MARK, vlen) == NULL)
		value_hosts(c, val, vlen, w->off);
	return 1;
}

/* Registry options of one tool, found anywhere on its command line. */
struct regopts {
	const char *const *replace; /* long options naming the registry instead of the default */
	const char *sreplace;       /* short options doing the same ("i" for pip) */
	const char *const *add;     /* long options naming another registry beside the default */
	const char *const *none;    /* long flags that reach no registry (--no-index) */
	const char *const *named;   /* long options naming a configured registry by name */
};

/* Looks through v[1..n) for registry options: records their hosts, and returns 1 when the
 * default registry is replaced (by a URL, a name, or no index at all). */
static int opt_registry(struct cls_ctx *c, const struct cls_word *v, size_t n,
        const struct regopts *o, int *offline)
{
	int replaced = 0;
	for (size_t i = 1; i < n; i++) {
		const struct cls_word *w = &v[i];
		if (w->len < 2 || w->s[0] != '-' || (w->flags & CLS_W_LEADEXP))
			continue;
		if (cls_word_is(w, "--"))
			break;
		const char *name = w->s + (w->s[1] == '-' ? 2 : 1);
		size_t nl = w->len - (size_t)(name - w->s);
		const char *eq = memchr(name, '=', nl);
		const char *val = NULL;
		size_t vlen = 0;
		size_t voff = w->off;
		if (eq != NULL) {
			val = eq + 1;
			vlen = nl - (size_t)(eq + 1 - name);
			nl = (size_t)(eq - name);
		}
		int lng = w->s[1] == '-';
		int rep = lng ? cls_in_list(o->replace, name, nl)
		              : o->sreplace != NULL && nl >= 1 && strchr(o->sreplace, name[0]) != NULL;
		int add = lng && cls_in_list(o->add, name, nl);
		int named = lng && cls_in_list(o->named, name, nl);
		if (lng && cls_in_list(o->none, name, nl)) {
			replaced = 1;
			if (offline != NULL && nl == 7 && memcmp(name, "offline", 7) == 0)
				*offline = 1;
			continue;
		}
		if (!rep && !add && !named)
			continue;
		if (!lng && nl > 1) {
			/* -iURL */
			val = name + 1;
			vlen = nl - 1;
		} else if (val == NULL && i + 1 < n) {
			val = v[i + 1].s;
			vlen = v[i + 1].len;
			voff = v[i + 1].off;
			i++;
		}
		if (rep || named)
			replaced = 1;
		if (val != NULL && !named && memchr(val, CLS_EXP_MARK, vlen) == NULL)
			value_hosts(c, val, vlen, voff);
	}
	return replaced;
}

/* The index of the first operand (the verb) after v[0]'s own options, or n. */
static size_t verb_at(const struct cls_word *v, size_t n, const char *sv, const char *const *lv)
{
	const struct cls_opts spec = {sv, NULL, lv, 0, 0};
	return cls_opts_walk(v, n, 1, &spec, NULL, NULL, NULL);
}

/* Applies a verb's tags and, when it reaches a registry, the family's default unless
 * replaced. */
static void package_tags(struct cls_ctx *c, unsigned tags, unsigned family, int replaced)
{
	c->tags |= tags;
	if (tags != 0 && !replaced)
		c->registries |= family;
}

/* ---- npm, pnpm, yarn, bun ---- */

static const char *const npm_env[] = {"npm_config_registry", "NPM_CONFIG_REGISTRY", NULL};
static const char *const yarn_env[] = {"npm_config_registry", "NPM_CONFIG_REGISTRY",
        "YARN_NPM_REGISTRY_SERVER", "YARN_REGISTRY", "yarn_registry", NULL};
static const char *const bun_env[] = {
        "npm_config_registry", "NPM_CONFIG_REGISTRY", "BUN_CONFIG_REGISTRY", NULL};
static const char *const npm_lv[] = {"registry", "prefix", "userconfig", "globalconfig", "cache",
        "loglevel", "workspace", "tag", "access", "otp", "scope", "dir", "filter", "cwd",
        "auth-type", "node-options", "script-shell", "reporter", NULL};
static const char *const npm_reg[] = {"registry", NULL};
static const struct regopts npm_regopts = {npm_reg, NULL, NULL, NULL, NULL};

/* npm verbs whose second word decides: a listing reads, anything else writes. */
static unsigned npm_sub_listing(const struct cls_word *v, size_t n, size_t k)
{
	static const char *const lists[] = {"ls", "list", "get", "info", NULL};
	size_t s = verb_at(v + k, n - k, "", npm_lv);
	if (s >= n - k)
		return R;
	return word_in(&v[k + s], lists) ? R : W;
}

/* `npm exec`, `pnpm exec`, `yarn exec`, `npx`-like verbs: the rest (after `--`, or from the
 * first operand) is a command; -c/--call is a shell string. */
static int run_after(struct cls_ctx *c, const struct cls_word *v, size_t n, size_t k,
        unsigned flags, int package)
{
	for (size_t i = k; i < n; i++) {
		if ((cls_word_is(&v[i], "-c") || cls_word_is(&v[i], "--call")) && i + 1 < n)
			return run_script_word(c, &v[i + 1], "exec -c command");
		if (starts_with(&v[i], "--call=")) {
			struct cls_word w = v[i];
			w.s += 7;
			w.len -= 7;
			return run_script_word(c, &w, "exec -c command");
		}
	}
	size_t s = k;
	for (size_t i = k; i < n; i++)
		if (cls_word_is(&v[i], "--")) {
			s = i + 1;
			break;
		}
	if (s == k)
		s = verb_at(v + k - 1, n - k + 1, "p", npm_lv) + k - 1;
	if (s >= n)
		return 0;
	if (!package)
		return run_nested(c, v + s, n - s, flags);
	/* a package's program: "@scope/pkg@1.2" runs "pkg" */
	const struct cls_word *w = &v[s];
	if (w->flags & CLS_W_EXP)
		return cls_refuse(c, w->off, "package to run is not static");
	const char *b = w->s, *end = w->s + w->len;
	const char *at = memchr(b[0] == '@' ? b + 1 : b, '@', w->len - (b[0] == '@'));
	if (at != NULL)
		end = at;
	for (const char *p = w->s; p < end; p++)
		if (*p == '/')
			b = p + 1;
	struct cls_word *nv = cls_alloc(c, (n - s) * sizeof *nv, w->off);
	if (nv == NULL)
		return -1;
	memcpy(nv, v + s, (n - s) * sizeof *nv);
	nv[0].s = cls_strdup(c, b, (size_t)(end - b), w->off);
	if (nv[0].s == NULL)
		return -1;
	nv[0].len = (size_t)(end - b);
	return run_nested(c, nv, n - s, flags);
}

static int t_npm(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct verb verbs[] = {{"install", R}, {"i", R}, {"in", R}, {"ins", R},
	        {"inst", R}, {"insta", R}, {"instal", R}, {"isnt", R}, {"isnta", R}, {"isntal", R},
	        {"isntall", R}, {"add", R}, {"ci", R}, {"clean-install", R}, {"ic", R},
	        {"install-clean", R}, {"isntall-clean", R}, {"install-test", R}, {"it", R},
	        {"install-ci-test", R}, {"cit", R}, {"update", R}, {"up", R}, {"upgrade", R},
	        {"udpate", R}, {"view", R}, {"v", R}, {"info", R}, {"show", R}, {"outdated", R},
	        {"search", R}, {"s", R}, {"se", R}, {"find", R}, {"ping", R}, {"doctor", R},
	        {"whoami", R}, {"stars", R}, {"docs", R}, {"home", R}, {"bugs", R}, {"repo", R},
	        {"diff", R}, {"dedupe", R}, {"ddp", R}, {"find-dupes", R}, {"publish", W},
	        {"unpublish", W}, {"deprecate", W}, {"undeprecate", W}, {"login", W},
	        {"adduser", W}, {"add-user", W}, {"logout", W}, {"star", W}, {"unstar", W},
	        {"audit", RW}, {"test", 0}, {"t", 0}, {"tst", 0}, {"run", 0}, {"run-script", 0},
	        {"rum", 0}, {"urn", 0}, {"start", 0}, {"stop", 0}, {"restart", 0}, {"ls", 0},
	        {"list", 0}, {"la", 0}, {"ll", 0}, {"config", 0}, {"c", 0}, {"get", 0}, {"set", 0},
	        {"prefix", 0}, {"root", 0}, {"bin", 0}, {"help", 0}, {"help-search", 0},
	        {"link", 0}, {"ln", 0}, {"unlink", 0}, {"uninstall", 0}, {"remove", 0}, {"rm", 0},
	        {"r", 0}, {"un", 0}, {"prune", 0}, {"rebuild", 0}, {"rb", 0}, {"version", 0},
	        {"shrinkwrap", 0}, {"edit", 0}, {"explain", 0}, {"why", 0}, {"query", 0},
	        {"pkg", 0}, {"completion", 0}, {"fund", 0}, {"sbom", 0}, {"set-script", 0},
	        {"explore", 0}, {NULL, 0}};
	/* the second word decides: ls/list/get reads, add/rm/set/... writes */
	static const char *const listing[] = {"dist-tag", "dist-tags", "owner", "author", "access",
	        "team", "org", "token", "hook", "profile", NULL};
	int replaced = opt_registry(c, v, n, &npm_regopts, NULL) | env_registry(c, npm_env);
	for (size_t i = 1; i < n; i++) /* --@scope:registry=URL */
		if (starts_with(&v[i], "--@") && strstr(v[i].s, ":registry=") != NULL) {
			struct cls_word u = v[i];
			const char *eq = strchr(u.s, '=');
			value_hosts(c, eq + 1, u.len - (size_t)(eq + 1 - u.s), u.off);
		}
	size_t k = verb_at(v, n, "Cw", npm_lv);
	if (k >= n) {
		if (flags & CLS_C_XARGS)
			package_tags(c, RW, ALLOW_REG_NPM, replaced);
		return 0;
	}
	const struct cls_word *verb = &v[k];
	if (verb->flags & CLS_W_EXP)
		return cls_refuse(c, verb->off, "npm verb is not static");
	unsigned tags;
	if (cls_word_is(verb, "exec") || cls_word_is(verb, "x")) {
		package_tags(c, R, ALLOW_REG_NPM, replaced);
		return run_after(c, v, n, k + 1, flags, 1);
	}
	/* npm explore PKG -- CMD runs CMD in a shell; `npm run env ARGS' runs npm's built-in
	 * env script, which is `env ARGS' (attack round 4: npm run env -- git push) */
	static const char *const runs[] = {"run", "run-script", "rum", "urn", NULL};
	if (cls_word_is(verb, "explore") || word_in(verb, runs)) {
		size_t s = verb_at(v + k, n - k, "w", npm_lv) + k;
		int env = s < n && cls_word_is(&v[s], "env") && word_in(verb, runs);
		if (s < n && (env || cls_word_is(verb, "explore"))) {
			size_t j = s + 1;
			while (j < n && !cls_word_is(&v[j], "--") && v[j].len > 1 &&
			        v[j].s[0] == '-')
				j++;
			if (j < n && cls_word_is(&v[j], "--"))
				j++;
			if (j >= n)
				return 0;
			if (env) {
				struct cls_word *nv =
				        cls_alloc(c, (n - j + 1) * sizeof *nv, v[s].off);
				if (nv == NULL)
					return -1;
				nv[0] = v[s];
				memcpy(nv + 1, v + j, (n - j) * sizeof *nv);
				return run_nested(c, nv, n - j + 1, flags);
			}
			char *text;
			size_t tl = 0;
			for (size_t i = j; i < n; i++) {
				if (v[i].flags & CLS_W_EXP)
					return cls_refuse(
					        c, v[i].off, "npm explore command is not static");
				tl += v[i].len + 1;
			}
			text = cls_alloc(c, tl + 1, v[j].off);
			if (text == NULL)
				return -1;
			tl = 0;
			for (size_t i = j; i < n; i++) {
				memcpy(text + tl, v[i].s, v[i].len);
				tl += v[i].len;
				text[tl++] = ' ';
			}
			text[tl - 1] = '\0';
			int saved = c->sh_mode;
			c->sh_mode = 1; /* run with /bin/sh */
			int rc = cls_run_script(c, text, tl - 1, v[j].off, 0);
			c->sh_mode = saved;
			return rc;
		}
	}
	if (word_in(verb, listing)) {
		tags = npm_sub_listing(v, n, k);
	} else if (cls_word_is(verb, "cache")) {
		tags = k + 1 < n && cls_word_is(&v[k + 1], "add") ? R : 0;
	} else if (cls_word_is(verb, "init") || cls_word_is(verb, "create") ||
	           cls_word_is(verb, "innit") || cls_word_is(verb, "pack")) {
		/* npm init NAME runs create-NAME from the registry; pack SPEC fetches it */
		size_t s = verb_at(v + k, n - k, "w", npm_lv);
		tags = s < n - k ? R : 0;
	} else {
		tags = verb_tags(verbs, verb);
	}
	package_tags(c, tags, ALLOW_REG_NPM, replaced);
	return 0;
}

/* The shared part of pnpm, yarn and bun: a verb table, then scripts for unknown words. */
static int npm_like(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags,
        const struct verb *verbs, const char *const *env, size_t k, int bare_reads)
{
	int replaced = opt_registry(c, v, n, &npm_regopts, NULL) | env_registry(c, env);
	if (k >= n) {
		/* `yarn` alone installs */
		package_tags(c, bare_reads ? R : (flags & CLS_C_XARGS) ? RW : 0, ALLOW_REG_NPM,
		        replaced);
		return 0;
	}
	const struct cls_word *verb = &v[k];
	if (verb->flags & CLS_W_EXP)
		return cls_refuse(c, verb->off, "%s verb is not static", v[0].s);
	const struct verb *e = verb_find(verbs, verb);
	unsigned tags;
	if (e != NULL)
		tags = e->tags;
	else if (word_in(verb, script_names) || memchr(verb->s, ':', verb->len) != NULL ||
	         memchr(verb->s, '.', verb->len) != NULL)
		tags = 0; /* a package.json script (`build`, `test:unit`) or a file (`bun x.ts`) */
	else
		tags = RW;
	package_tags(c, tags, ALLOW_REG_NPM, replaced);
	return 0;
}

static int t_pnpm(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct verb verbs[] = {{"install", R}, {"i", R}, {"ci", R}, {"add", R},
	        {"update", R}, {"up", R}, {"upgrade", R}, {"fetch", R}, {"outdated", R},
	        {"view", R}, {"info", R},
	        {"show", R}, {"v", R}, {"create", R}, {"install-test", R}, {"it", R},
	        {"self-update", R}, {"deploy", R}, {"patch", R}, {"dedupe", R}, {"publish", W},
	        {"login", W}, {"logout", W}, {"adduser", W}, {"deprecate", W}, {"audit", RW},
	        {"run", 0}, {"test", 0}, {"t", 0}, {"start", 0}, {"remove", 0}, {"rm", 0},
	        {"uninstall", 0}, {"un", 0}, {"link", 0}, {"ln", 0}, {"unlink", 0}, {"list", 0},
	        {"ls", 0}, {"ll", 0}, {"la", 0}, {"why", 0}, {"root", 0}, {"bin", 0}, {"config", 0},
	        {"c", 0}, {"rebuild", 0}, {"rb", 0}, {"prune", 0}, {"licenses", 0}, {"pack", 0},
	        {"init", 0}, {"setup", 0}, {"import", 0}, {"server", 0}, {"help", 0},
	        {"patch-commit", 0}, {"recursive", 0}, {"m", 0}, {"multi", 0}, {"r", 0},
	        {NULL, 0}};
	size_t k = verb_at(v, n, "Cw", npm_lv);
	if (k < n && (cls_word_is(&v[k], "exec") || cls_word_is(&v[k], "dlx"))) {
		int dlx = cls_word_is(&v[k], "dlx");
		int replaced = opt_registry(c, v, n, &npm_regopts, NULL) | env_registry(c, npm_env);
		if (dlx)
			package_tags(c, R, ALLOW_REG_NPM, replaced);
		return run_after(c, v, n, k + 1, flags, dlx);
	}
	if (k < n && (cls_word_is(&v[k], "store") || cls_word_is(&v[k], "env"))) {
		/* store add, env use: fetch */
		int fetch = k + 1 < n && (cls_word_is(&v[k + 1], "add") || cls_word_is(&v[k + 1], "use"));
		package_tags(c, fetch ? R : 0, ALLOW_REG_NPM,
		        opt_registry(c, v, n, &npm_regopts, NULL) | env_registry(c, npm_env));
		return 0;
	}
	return npm_like(c, v, n, flags, verbs, npm_env, k, 0);
}

static int t_yarn(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct verb verbs[] = {{"install", R}, {"i", R}, {"ci", R}, {"add", R},
	        {"upgrade", R}, {"up", R}, {"update", R}, {"view", R},
	        {"upgrade-interactive", R}, {"info", R}, {"outdated", R}, {"create", R},
	        {"import", R}, {"dedupe", R}, {"unplug", R}, {"fetch", R}, {"publish", W},
	        {"login", W}, {"logout", W}, {"audit", RW}, {"run", 0}, {"test", 0}, {"start", 0},
	        {"bin", 0}, {"cache", 0}, {"config", 0}, {"init", 0}, {"link", 0}, {"unlink", 0},
	        {"remove", 0}, {"list", 0}, {"pack", 0}, {"version", 0}, {"constraints", 0},
	        {"explain", 0}, {"why", 0}, {"patch", 0}, {"patch-commit", 0}, {"rebuild", 0},
	        {"licenses", 0}, {"help", 0}, {"workspaces", 0}, {"check", 0}, {"autoclean", 0},
	        {"generate-lock-entry", 0}, {"versions", 0}, {"node", 0}, {"sdks", 0},
	        {"stage", 0}, {"search", 0}, {NULL, 0}};
	static const char *const lv[] = {"cwd", "registry", "cache-folder", "modules-folder",
	        "mutex", "network-concurrency", "network-timeout", "global-folder", NULL};
	size_t k = verb_at(v, n, "", lv);
	int replaced = opt_registry(c, v, n, &npm_regopts, NULL) | env_registry(c, yarn_env);
	if (k < n && cls_word_is(&v[k], "workspace") && k + 2 < n)
		return t_yarn(c, v + k + 1, n - k - 1, flags); /* yarn workspace NAME CMD... */
	if (k < n && (cls_word_is(&v[k], "exec") || cls_word_is(&v[k], "dlx"))) {
		int dlx = cls_word_is(&v[k], "dlx");
		if (dlx)
			package_tags(c, R, ALLOW_REG_NPM, replaced);
		return run_after(c, v, n, k + 1, flags, dlx);
	}
	if (k < n && (cls_word_is(&v[k], "npm") || cls_word_is(&v[k], "owner") ||
	                     cls_word_is(&v[k], "tag") || cls_word_is(&v[k], "team") ||
	                     cls_word_is(&v[k], "global") || cls_word_is(&v[k], "set") ||
	                     cls_word_is(&v[k], "policies") || cls_word_is(&v[k], "plugin"))) {
		/* two-word verbs: npm publish/login/logout/tag/info/audit/whoami, owner add,
		 * global add, set version, plugin import */
		static const struct verb second[] = {{"publish", W}, {"login", W}, {"logout", W},
		        {"add", W}, {"remove", W}, {"rm", W}, {"info", R}, {"view", R}, {"list", R},
		        {"ls", R}, {"whoami", R}, {"audit", RW}, {"version", R}, {"set-version", R},
		        {"import", R}, {"upgrade", R}, {"runtime", 0}, {"check", 0}, {NULL, 0}};
		unsigned tags = k + 1 < n ? verb_tags(second, &v[k + 1]) : RW;
		if (cls_word_is(&v[k], "global") && k + 1 < n && cls_word_is(&v[k + 1], "add"))
			tags = R;
		if ((cls_word_is(&v[k], "npm") || cls_word_is(&v[k], "owner") ||
		            cls_word_is(&v[k], "tag")) &&
		        k + 2 < n && cls_word_is(&v[k + 1], "tag") &&
		        (cls_word_is(&v[k + 2], "list") || cls_word_is(&v[k + 2], "ls")))
			tags = R;
		package_tags(c, tags, ALLOW_REG_NPM, replaced);
		return 0;
	}
	return npm_like(c, v, n, flags, verbs, yarn_env, k, 1);
}

static int t_bun(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct verb verbs[] = {{"install", R}, {"i", R}, {"ci", R}, {"add", R},
	        {"a", R}, {"update", R}, {"view", R}, {"outdated", R}, {"create", R}, {"c", R},
	        {"upgrade", R}, {"info", R}, {"publish", W}, {"audit", RW}, {"run", 0}, {"test", 0}, {"build", 0},
	        {"init", 0}, {"link", 0}, {"unlink", 0}, {"remove", 0}, {"rm", 0}, {"repl", 0},
	        {"completions", 0}, {"patch", 0}, {"patch-commit", 0}, {"pm", 0}, {"help", 0},
	        {NULL, 0}};
	static const char *const lv[] = {"cwd", "registry", "config", "env-file", NULL};
	/* bun -e/--eval and -p/--print run their value as a program, as node -e does; a bundle of
	 * letters that holds e or p is read the same way (scanning it only adds) */
	for (size_t i = 1; i < n && v[i].len > 1 && v[i].s[0] == '-'; i++) {
		const struct cls_word *w = &v[i];
		if (w->flags & CLS_W_LEADEXP)
			break;
		if (w->s[1] == '-') {
			if (w->len == 2)
				break;
			struct cls_word val = *w;
			if (starts_with(w, "--eval=") || starts_with(w, "--print=")) {
				const char *eq = memchr(w->s, '=', w->len);
				val.s = eq + 1;
				val.len = w->len - (size_t)(eq + 1 - w->s);
			} else if ((cls_word_is(w, "--eval") || cls_word_is(w, "--print")) &&
			           i + 1 < n) {
				val = v[++i];
			} else {
				if (memchr(w->s, '=', w->len) == NULL &&
				        cls_in_list(lv, w->s + 2, w->len - 2))
					i++;
				continue;
			}
			return one_liner(c, LANG_JS, &val, "bun -e");
		}
		int ep = 0, letters = 1;
		for (size_t j = 1; j < w->len && letters; j++) {
			letters = (w->s[j] >= 'a' && w->s[j] <= 'z') || (w->s[j] >= 'A' && w->s[j] <= 'Z');
			ep |= w->s[j] == 'e' || w->s[j] == 'p';
		}
		if (letters && ep && i + 1 < n)
			return one_liner(c, LANG_JS, &v[i + 1], "bun -e");
		if (w->len == 2 && (w->s[1] == 'c' || w->s[1] == 'r'))
			i++;
	}
	size_t k = verb_at(v, n, "c", lv);
	if (k < n && cls_word_is(&v[k], "x")) {
		package_tags(c, R, ALLOW_REG_NPM,
		        opt_registry(c, v, n, &npm_regopts, NULL) | env_registry(c, bun_env));
		return run_after(c, v, n, k + 1, flags, 1);
	}
	if (k < n && cls_word_is(&v[k], "exec") && k + 1 < n)
		return run_script_word(c, &v[k + 1], "bun exec script");
	return npm_like(c, v, n, flags, verbs, bun_env, k, 0);
}

static int t_bunx(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	package_tags(c, R, ALLOW_REG_NPM,
	        opt_registry(c, v, n, &npm_regopts, NULL) | env_registry(c, bun_env));
	return run_after(c, v, n, 1, flags, 1);
}

/* ---- pip, pipx, uv, poetry, twine, hatch, flit ---- */

static const char *const pip_env_replace[] = {"PIP_INDEX_URL", "PIP_NO_INDEX", NULL};
static const char *const pip_env_add[] = {"PIP_EXTRA_INDEX_URL", NULL};

static int pypi_env(struct cls_ctx *c, const char *const *replace, const char *const *add)
{
	env_registry(c, add); /* another index beside the default: its host only */
	return env_registry(c, replace);
}

static int t_pip(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct verb verbs[] = {{"install", R}, {"download", R}, {"wheel", R},
	        {"index", R}, {"search", R}, {"lock", R}, {"list", 0}, {"show", 0}, {"freeze", 0},
	        {"check", 0}, {"uninstall", 0}, {"config", 0}, {"cache", 0}, {"help", 0},
	        {"debug", 0}, {"hash", 0}, {"inspect", 0}, {"completion", 0}, {NULL, 0}};
	static const char *const lv[] = {"proxy", "cert", "client-cert", "cache-dir", "log",
	        "timeout", "retries", "exists-action", "trusted-host", "python", "root-user-action",
	        "keyring-provider", "use-feature", "use-deprecated", "resume-retries", NULL};
	static const char *const replace[] = {"index-url", NULL};
	static const char *const add[] = {"extra-index-url", "find-links", "proxy", NULL};
	static const char *const none[] = {"no-index", NULL};
	static const struct regopts ro = {replace, "i", add, none, NULL};
	int replaced = opt_registry(c, v, n, &ro, NULL) |
	               pypi_env(c, pip_env_replace, pip_env_add);
	size_t k = verb_at(v, n, "", lv);
	if (k >= n) {
		if (flags & CLS_C_XARGS)
			package_tags(c, RW, ALLOW_REG_PYPI, replaced);
		return 0;
	}
	if (v[k].flags & CLS_W_EXP)
		return cls_refuse(c, v[k].off, "pip verb is not static");
	unsigned tags = verb_tags(verbs, &v[k]);
	/* pip list --outdated/-o/--uptodate/-u asks the index for each package (attack round 4) */
	if (cls_word_is(&v[k], "list"))
		for (size_t i = k + 1; i < n; i++)
			if ((v[i].len > 1 && v[i].s[0] == '-' && v[i].s[1] != '-' &&
			            strpbrk(v[i].s, "ou") != NULL) ||
			        (v[i].len > 4 &&
			                (strncmp(v[i].s, "--outdated", v[i].len) == 0 ||
			                        strncmp(v[i].s, "--uptodate", v[i].len) == 0)))
				tags = R;
	/* pip install https://h.test/x.whl or git+https://...: that host too */
	if (tags != 0)
		for (size_t i = k + 1; i < n; i++)
			if (!(v[i].flags & CLS_W_EXP) && v[i].s[0] != '-' &&
			        strstr(v[i].s, "://") != NULL) {
				struct cls_word u = v[i];
				const char *plus = memchr(u.s, '+', u.len);
				if (plus != NULL && plus < strstr(u.s, "://")) {
					u.len -= (size_t)(plus + 1 - u.s);
					u.s = plus + 1;
				}
				cls_add_url_host(c, &u, 0);
			}
	package_tags(c, tags, ALLOW_REG_PYPI, replaced);
	return 0;
}

static int t_pipx(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct verb verbs[] = {{"install", R}, {"upgrade", R}, {"upgrade-all", R},
	        {"reinstall", R}, {"reinstall-all", R}, {"inject", R}, {"install-all", R},
	        {"upgrade-shared", R}, {"list", 0}, {"uninstall", 0}, {"uninstall-all", 0},
	        {"ensurepath", 0}, {"environment", 0}, {"completions", 0}, {"interpreter", 0},
	        {"pin", 0}, {"unpin", 0}, {"uninject", 0}, {NULL, 0}};
	static const char *const replace[] = {"index-url", NULL};
	static const char *const lv[] = {"spec", "python", "pip-args", "suffix", "index-url",
	        "editable", "fetch-missing-python", NULL};
	static const struct regopts ro = {replace, "i", NULL, NULL, NULL};
	int replaced = opt_registry(c, v, n, &ro, NULL) |
	               pypi_env(c, pip_env_replace, pip_env_add);
	for (size_t i = 1; i + 1 < n; i++) /* --pip-args '--index-url URL' */
		if (cls_word_is(&v[i], "--pip-args") && strstr(v[i + 1].s, "index-url") != NULL) {
			replaced = 1;
			value_hosts(c, v[i + 1].s, v[i + 1].len, v[i + 1].off);
		}
	size_t k = verb_at(v, n, "", lv);
	if (k >= n)
		return 0;
	if (v[k].flags & CLS_W_EXP)
		return cls_refuse(c, v[k].off, "pipx verb is not static");
	if (cls_word_is(&v[k], "run")) {
		package_tags(c, R, ALLOW_REG_PYPI, replaced);
		size_t s = verb_at(v + k, n - k, "", lv) + k;
		if (s >= n)
			return 0;
		/* pipx run PKG ARGS: PKG's program, version pins dropped */
		const struct cls_word *w = &v[s];
		if (w->flags & CLS_W_EXP)
			return cls_refuse(c, w->off, "package to run is not static");
		size_t l = strcspn(w->s, "=<>[@!~");
		struct cls_word *nv = cls_alloc(c, (n - s) * sizeof *nv, w->off);
		if (nv == NULL)
			return -1;
		memcpy(nv, v + s, (n - s) * sizeof *nv);
		nv[0].s = cls_strdup(c, w->s, l, w->off);
		if (nv[0].s == NULL)
			return -1;
		nv[0].len = l;
		return run_nested(c, nv, n - s, flags);
	}
	if (cls_word_is(&v[k], "runpip") && k + 1 < n)
		return t_pip(c, v + k + 1, n - k - 1, flags); /* runpip VENV PIPARGS */
	package_tags(c, verb_tags(verbs, &v[k]), ALLOW_REG_PYPI, replaced);
	return 0;
}

int cls_rule_uv(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct verb verbs[] = {{"add", R}, {"sync", R}, {"lock", R}, {"remove", R},
	        {"tree", R}, {"export", R}, {"venv", R}, {"build", R}, {"format", R},
	        {"publish", W}, {"init", 0}, {"cache", 0}, {"version", 0}, {"help", 0},
	        {"generate-shell-completion", 0}, {NULL, 0}};
	static const struct verb pip_verbs[] = {{"install", R}, {"sync", R}, {"compile", R},
	        {"download", R}, {"list", 0}, {"show", 0}, {"freeze", 0}, {"check", 0},
	        {"uninstall", 0}, {"tree", 0}, {NULL, 0}};
	static const struct verb tool_verbs[] = {{"install", R}, {"upgrade", R}, {"list", 0},
	        {"dir", 0}, {"uninstall", 0}, {"update-shell", 0}, {NULL, 0}};
	static const struct verb python_verbs[] = {{"install", R}, {"upgrade", R}, {"list", R},
	        {"find", 0}, {"pin", 0}, {"dir", 0}, {"uninstall", 0}, {NULL, 0}};
	static const struct verb self_verbs[] = {{"update", R}, {"version", 0}, {NULL, 0}};
	static const char *const env_replace[] = {"UV_INDEX_URL", "UV_DEFAULT_INDEX",
	        "UV_OFFLINE", "UV_PUBLISH_URL", "PIP_INDEX_URL", NULL};
	static const char *const env_add[] = {"UV_INDEX", "UV_EXTRA_INDEX_URL", NULL};
	static const char *const replace[] = {"index-url", "default-index", "publish-url", NULL};
	static const char *const add[] = {"index", "extra-index-url", "find-links", NULL};
	static const char *const none[] = {"no-index", "offline", NULL};
	static const struct regopts ro = {replace, "i", add, none, NULL};
	int offline = 0;
	int replaced = opt_registry(c, v, n, &ro, &offline) | pypi_env(c, env_replace, env_add);
	const char *val;
	size_t vlen;
	static const char *const off_env[] = {"UV_OFFLINE", NULL};
	if (env_value(c, off_env, &val, &vlen) != NULL && vlen > 0 && val[0] != '0' &&
	        val[0] != 'f' && val[0] != CLS_EXP_MARK)
		offline = 1;
	size_t k = verb_at(v, n, "pfwc", cls_uv_lv);
	if (k >= n) {
		if (flags & CLS_C_XARGS)
			package_tags(c, RW, ALLOW_REG_PYPI, replaced);
		return 0;
	}
	const struct cls_word *verb = &v[k];
	if (verb->flags & CLS_W_EXP)
		return cls_refuse(c, verb->off, "uv verb is not static");
	const struct verb *tab = NULL;
	if (cls_word_is(verb, "pip"))
		tab = pip_verbs;
	else if (cls_word_is(verb, "tool"))
		tab = tool_verbs;
	else if (cls_word_is(verb, "python"))
		tab = python_verbs;
	else if (cls_word_is(verb, "self"))
		tab = self_verbs;
	unsigned tags;
	if (tab != NULL) {
		size_t s = verb_at(v + k, n - k, "pfwc", cls_uv_lv) + k;
		tags = s < n ? verb_tags(tab, &v[s]) : 0;
	} else {
		tags = verb_tags(verbs, verb);
	}
	if (offline && !(tags & W))
		tags = 0; /* --offline: nothing is fetched */
	package_tags(c, tags, ALLOW_REG_PYPI, replaced);
	return 0;
}

static int t_poetry(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct verb verbs[] = {{"install", R}, {"add", R}, {"update", R}, {"lock", R},
	        {"remove", R}, {"search", R}, {"sync", R}, {"publish", W}, {"check", 0},
	        {"build", 0}, {"export", 0}, {"new", 0}, {"init", 0}, {"shell", 0}, {"env", 0},
	        {"config", 0}, {"version", 0}, {"debug", 0}, {"cache", 0}, {"about", 0},
	        {"help", 0}, {"list", 0}, {"source", 0}, {NULL, 0}};
	static const char *const lv[] = {"directory", "project", "repository", "username",
	        "password", "cert", "client-cert", "dist-dir", NULL};
	static const char *const named[] = {"repository", NULL};
	static const struct regopts ro = {NULL, NULL, NULL, NULL, named};
	int replaced = opt_registry(c, v, n, &ro, NULL);
	for (size_t i = 1; i < n; i++)
		if (cls_word_is(&v[i], "-r") || starts_with(&v[i], "-r"))
			replaced = 1; /* publish -r NAME: a repository from the config */
	size_t k = verb_at(v, n, "CP", lv);
	if (k >= n)
		return 0;
	const struct cls_word *verb = &v[k];
	if (verb->flags & CLS_W_EXP)
		return cls_refuse(c, verb->off, "poetry verb is not static");
	if (cls_word_is(verb, "run"))
		return run_nested(c, v + k + 1, n - k - 1, flags);
	unsigned tags;
	if (cls_word_is(verb, "show")) {
		tags = 0;
		for (size_t i = k + 1; i < n; i++)
			if (cls_word_is(&v[i], "--outdated") || cls_word_is(&v[i], "-o") ||
			        cls_word_is(&v[i], "--latest") || cls_word_is(&v[i], "-l"))
				tags = R;
	} else if (cls_word_is(verb, "self")) {
		tags = k + 1 < n && (cls_word_is(&v[k + 1], "update") ||
		                            cls_word_is(&v[k + 1], "install") ||
		                            cls_word_is(&v[k + 1], "add"))
		               ? R
		               : 0;
	} else {
		tags = verb_tags(verbs, verb);
	}
	package_tags(c, tags, ALLOW_REG_PYPI, replaced);
	return 0;
}

static int t_twine(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const struct verb verbs[] = {{"upload", W}, {"register", W}, {"check", 0}, {NULL, 0}};
	static const char *const replace[] = {"repository-url", NULL};
	static const char *const named[] = {"repository", NULL};
	static const struct regopts ro = {replace, NULL, NULL, NULL, named};
	static const char *const env[] = {"TWINE_REPOSITORY_URL", "TWINE_REPOSITORY", NULL};
	int replaced = opt_registry(c, v, n, &ro, NULL) | env_registry(c, env);
	for (size_t i = 1; i < n; i++)
		if (starts_with(&v[i], "-r"))
			replaced = 1;
	size_t k = verb_at(v, n, "", NULL);
	if (k >= n)
		return 0;
	if (v[k].flags & CLS_W_EXP)
		return cls_refuse(c, v[k].off, "twine verb is not static");
	package_tags(c, verb_tags(verbs, &v[k]), ALLOW_REG_PYPI, replaced);
	return 0;
}

static int t_hatch(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct verb verbs[] = {{"publish", W}, {"build", R}, {"env", R}, {"shell", R},
	        {"test", R}, {"fmt", R}, {"python", R}, {"version", 0}, {"new", 0}, {"clean", 0},
	        {"config", 0}, {"status", 0}, {"project", 0}, {"dep", 0}, {"help", 0}, {NULL, 0}};
	static const char *const lv[] = {"env", "data-dir", "cache-dir", "config", "repo", "user",
	        "auth", "ca-cert", "client-cert", "client-key", NULL};
	static const char *const replace[] = {"repo", NULL};
	static const struct regopts ro = {replace, "r", NULL, NULL, NULL};
	int replaced = opt_registry(c, v, n, &ro, NULL);
	size_t k = verb_at(v, n, "epruaC", lv);
	if (k >= n)
		return 0;
	if (v[k].flags & CLS_W_EXP)
		return cls_refuse(c, v[k].off, "hatch verb is not static");
	if (cls_word_is(&v[k], "run")) {
		/* installs the environment's dependencies, then a script or a command */
		package_tags(c, R, ALLOW_REG_PYPI, replaced);
		return run_nested(c, v + k + 1, n - k - 1, flags);
	}
	package_tags(c, verb_tags(verbs, &v[k]), ALLOW_REG_PYPI, replaced);
	return 0;
}

static int t_flit(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const struct verb verbs[] = {
	        {"publish", W}, {"register", W}, {"install", R}, {"build", 0}, {"init", 0}, {NULL, 0}};
	static const char *const lv[] = {"repository", "ini-file", NULL};
	size_t k = verb_at(v, n, "", lv);
	int replaced = 0;
	for (size_t i = 1; i < k && i < n; i++)
		if (starts_with(&v[i], "--repository"))
			replaced = 1;
	if (k >= n)
		return 0;
	if (v[k].flags & CLS_W_EXP)
		return cls_refuse(c, v[k].off, "flit verb is not static");
	package_tags(c, verb_tags(verbs, &v[k]), ALLOW_REG_PYPI, replaced);
	return 0;
}

/* python -m MODULE ARGS: the package tools run as modules. */
static int python_module(struct cls_ctx *c, const struct cls_word *mod, const struct cls_word *v,
        size_t n, unsigned flags)
{
	if (mod->flags & CLS_W_EXP)
		return cls_refuse(c, mod->off, "python -m module is not static");
	/* v[0] is the word before the arguments (the module or -mMODULE): rules skip it */
	if (cls_word_is(mod, "pip"))
		return t_pip(c, v, n, flags);
	if (cls_word_is(mod, "pipx"))
		return t_pipx(c, v, n, flags);
	if (cls_word_is(mod, "twine"))
		return t_twine(c, v, n, flags);
	if (cls_word_is(mod, "poetry"))
		return t_poetry(c, v, n, flags);
	if (cls_word_is(mod, "uv"))
		return cls_rule_uv(c, v, n, flags);
	if (cls_word_is(mod, "hatch"))
		return t_hatch(c, v, n, flags);
	if (cls_word_is(mod, "flit"))
		return t_flit(c, v, n, flags);
	if (cls_word_is(mod, "venv") || cls_word_is(mod, "virtualenv")) {
		/* --upgrade-deps (argparse takes a prefix longer than --upgrade) runs pip
		 * install --upgrade pip (attack round 4); virtualenv's --download too */
		for (size_t i = 1; i < n; i++)
			if ((v[i].len > 10 && v[i].len <= 14 &&
			            memcmp(v[i].s, "--upgrade-deps", v[i].len) == 0) ||
			        (v[i].len > 5 && v[i].len <= 10 &&
			                memcmp(v[i].s, "--download", v[i].len) == 0) ||
			        (v[i].flags & CLS_W_LEADEXP))
				package_tags(c, R, ALLOW_REG_PYPI,
				        pypi_env(c, pip_env_replace, pip_env_add));
		return 0;
	}
	/* the standard library's network clients, run as programs (a server such as
	 * http.server stays none, as the public sample answers) */
	static const char *const netmods[] = {"ftplib", "smtplib", "telnetlib", "poplib",
	        "imaplib", "nntplib", NULL};
	if (word_in(mod, netmods)) {
		c->tags |= ALLOW_TAG_NET_RAW;
		if (n > 1 && !(v[1].flags & CLS_W_EXP) && v[1].len > 0 && v[1].s[0] != '-')
			cls_add_host(c, v[1].s, v[1].len);
		return 0;
	}
	if (cls_word_is(mod, "build")) {
		/* builds in an isolated environment whose build dependencies it installs */
		int isolated = 1;
		for (size_t i = 1; i < n; i++)
			if (cls_word_is(&v[i], "--no-isolation") || cls_word_is(&v[i], "-n"))
				isolated = 0;
		package_tags(c, isolated ? R : 0, ALLOW_REG_PYPI,
		        pypi_env(c, pip_env_replace, pip_env_add));
	}
	return 0;
}

void cls_package_fetch(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned family)
{
	static const char *const replace[] = {"registry", "index-url", "default-index", NULL};
	static const char *const add[] = {"index", "extra-index-url", "find-links", NULL};
	static const char *const none[] = {"offline", "no-index", NULL};
	static const struct regopts ro = {replace, NULL, add, none, NULL};
	int offline = 0;
	int replaced = opt_registry(c, v, n, &ro, &offline) |
	               (family == ALLOW_REG_NPM ? env_registry(c, npm_env)
	                                        : pypi_env(c, pip_env_replace, pip_env_add));
	if (!offline)
		package_tags(c, R, family, replaced);
}

/* ---- cargo, go, gem, bundle, composer ---- */

static int t_cargo(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct verb verbs[] = {{"install", R}, {"fetch", R}, {"add", R},
	        {"update", R}, {"generate-lockfile", R}, {"search", R}, {"info", R}, {"vendor", R},
	        {"publish", W}, {"yank", W}, {"owner", W}, {"build", 0}, {"b", 0}, {"check", 0},
	        {"c", 0}, {"test", 0}, {"t", 0}, {"run", 0}, {"r", 0}, {"bench", 0}, {"doc", 0},
	        {"d", 0}, {"clippy", 0}, {"fmt", 0}, {"tree", 0}, {"metadata", 0}, {"new", 0},
	        {"init", 0}, {"clean", 0}, {"package", 0}, {"locate-project", 0}, {"pkgid", 0},
	        {"verify-project", 0}, {"version", 0}, {"help", 0}, {"rustc", 0}, {"rustdoc", 0},
	        {"fix", 0}, {"report", 0}, {"remove", 0}, {"rm", 0}, {"login", 0}, {"logout", 0},
	        {"config", 0}, {"miri", 0}, {"expand", 0}, {"nextest", 0}, {NULL, 0}};
	static const char *const lv[] = {"color", "config", "explain", NULL};
	static const char *const replace[] = {"index", NULL};
	static const char *const add[] = {"git", NULL};
	static const char *const none[] = {"offline", NULL};
	static const char *const named[] = {"registry", NULL};
	static const struct regopts ro = {replace, NULL, add, none, named};
	int offline = 0;
	int replaced = opt_registry(c, v, n, &ro, &offline);
	size_t k = 1;
	while (k < n && v[k].len > 0 && v[k].s[0] == '+')
		k++; /* cargo +nightly ... */
	k = verb_at(v + k - 1, n - k + 1, "ZC", lv) + k - 1;
	if (k >= n) {
		if (flags & CLS_C_XARGS)
			package_tags(c, RW, ALLOW_REG_CRATES, replaced);
		return 0;
	}
	if (v[k].flags & CLS_W_EXP)
		return cls_refuse(c, v[k].off, "cargo verb is not static");
	/* --config KEY=VALUE (or a file) may name a program cargo runs: a target's runner or
	 * linker, rustc, rustdoc or a wrapper, an alias (attack round 4) */
	static const char *const runs[] = {
	        "runner", "linker", "rustc", "rustdoc", "wrapper", "alias", NULL};
	for (size_t i = 1; i < n && !cls_word_is(&v[i], "--"); i++) {
		const struct cls_word *val = NULL;
		struct cls_word att;
		if (cls_word_is(&v[i], "--config") && i + 1 < n) {
			val = &v[++i];
		} else if (starts_with(&v[i], "--config=")) {
			att = v[i];
			att.s += 9;
			att.len -= 9;
			val = &att;
		}
		if (val == NULL)
			continue;
		int hit = memchr(val->s, CLS_EXP_MARK, val->len) != NULL ||
		          memchr(val->s, '=', val->len) == NULL; /* a file */
		for (size_t r = 0; runs[r] != NULL && !hit; r++)
			hit = memmem(val->s, val->len, runs[r], strlen(runs[r])) != NULL;
		if (hit)
			return cls_refuse(c, val->off,
			        "cargo --config may name a program cargo runs (runner, linker, "
			        "rustc "
			        "wrapper): refused");
	}
	unsigned tags = verb_tags(verbs, &v[k]);
	if (offline && !(tags & W))
		tags = 0;
	package_tags(c, tags, ALLOW_REG_CRATES, replaced);
	return 0;
}

/* A module path's host ("github.com/o/r@v1" -> github.com), when its first element has a dot. */
static void module_host(struct cls_ctx *c, const struct cls_word *w)
{
	if ((w->flags & CLS_W_EXP) || w->len == 0 || w->s[0] == '-' || w->s[0] == '.')
		return;
	size_t l = strcspn(w->s, "/@");
	if (memchr(w->s, '.', l) != NULL)
		cls_add_host(c, w->s, l);
}

static int t_go(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const struct verb verbs[] = {{"get", R}, {"install", R}, {"build", 0}, {"test", 0},
	        {"vet", 0}, {"fmt", 0}, {"env", 0}, {"version", 0}, {"list", 0}, {"generate", 0},
	        {"doc", 0}, {"tool", 0}, {"clean", 0}, {"help", 0}, {"bug", 0}, {"fix", 0},
	        {"telemetry", 0}, {NULL, 0}};
	static const struct verb mod_verbs[] = {{"download", R}, {"tidy", R}, {"vendor", R},
	        {"init", 0}, {"edit", 0}, {"graph", 0}, {"verify", 0}, {"why", 0}, {NULL, 0}};
	static const struct verb work_verbs[] = {{"sync", R}, {"vendor", R}, {"init", 0},
	        {"use", 0}, {"edit", 0}, {NULL, 0}};
	static const char *const goproxy[] = {"GOPROXY", NULL};
	if (n < 2)
		return 0;
	const struct cls_word *verb = &v[1];
	if (verb->flags & CLS_W_EXP)
		return cls_refuse(c, verb->off, "go verb is not static");
	unsigned tags;
	size_t args = 2;
	if (cls_word_is(verb, "mod") || cls_word_is(verb, "work")) {
		tags = n > 2 ? verb_tags(cls_word_is(verb, "mod") ? mod_verbs : work_verbs, &v[2])
		             : 0;
		args = 3;
	} else if (cls_word_is(verb, "run")) {
		/* go run PKG@VERSION fetches the module */
		tags = 0;
		for (size_t i = 2; i < n; i++)
			if (v[i].s[0] != '-' && memchr(v[i].s, '@', v[i].len) != NULL)
				tags = R;
	} else {
		tags = verb_tags(verbs, verb);
	}
	if (tags == 0)
		return 0;
	const char *val;
	size_t vlen;
	const struct cls_word *pw = env_value(c, goproxy, &val, &vlen);
	if (pw == NULL) {
		package_tags(c, tags, ALLOW_REG_GO, 0);
		return 0;
	}
	if (vlen == 3 && memcmp(val, "off", 3) == 0)
		return 0; /* GOPROXY=off: nothing may be fetched */
	c->tags |= tags;
	if (memchr(val, CLS_EXP_MARK, vlen) != NULL)
		return 0;
	if (value_hosts(c, val, vlen, pw->off))
		for (size_t i = args; i < n; i++)
			module_host(c, &v[i]); /* GOPROXY=direct: from each module's own host */
	return 0;
}

static const char *const gem_env[] = {"RUBYGEMS_HOST", NULL};

static int t_gem(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const struct verb verbs[] = {{"install", R}, {"i", R}, {"update", R}, {"fetch", R},
	        {"search", R}, {"outdated", R}, {"sources", R}, {"unpack", R}, {"push", W},
	        {"yank", W}, {"owner", W}, {"signin", W}, {"signout", 0}, {"list", 0},
	        {"uninstall", 0}, {"build", 0}, {"cleanup", 0}, {"contents", 0}, {"env", 0},
	        {"environment", 0}, {"help", 0}, {"which", 0}, {"open", 0}, {"lock", 0},
	        {"pristine", 0}, {"rdoc", 0}, {"server", 0}, {"setup", 0}, {"specification", 0},
	        {"check", 0}, {"dependency", 0}, {"query", 0}, {"stale", 0}, {"info", 0},
	        {"exec", R}, {NULL, 0}};
	static const char *const replace[] = {"source", "host", "clear-sources", NULL};
	static const struct regopts ro = {replace, "s", NULL, NULL, NULL};
	int replaced = opt_registry(c, v, n, &ro, NULL) | env_registry(c, gem_env);
	size_t k = verb_at(v, n, "", NULL);
	if (k >= n)
		return 0;
	if (v[k].flags & CLS_W_EXP)
		return cls_refuse(c, v[k].off, "gem verb is not static");
	unsigned tags = verb_tags(verbs, &v[k]);
	/* list --remote, specification -r ...: ask the registry */
	if (tags == 0)
		for (size_t i = k + 1; i < n; i++)
			if (cls_word_is(&v[i], "--remote") || cls_word_is(&v[i], "-r") ||
			        cls_word_is(&v[i], "-b") || cls_word_is(&v[i], "--both"))
				tags = R;
	package_tags(c, tags, ALLOW_REG_RUBYGEMS, replaced);
	return 0;
}

static int t_bundle(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct verb verbs[] = {{"install", R}, {"update", R}, {"add", R}, {"lock", R},
	        {"outdated", R}, {"cache", R}, {"package", R}, {"pack", R}, {"check", 0},
	        {"config", 0}, {"list", 0}, {"show", 0}, {"init", 0}, {"gem", 0}, {"console", 0},
	        {"open", 0}, {"platform", 0}, {"doctor", 0}, {"clean", 0}, {"remove", 0},
	        {"viz", 0}, {"pristine", 0}, {"version", 0}, {"help", 0}, {"licenses", 0},
	        {"env", 0}, {"binstubs", 0}, {"info", 0}, {"fund", 0}, {NULL, 0}};
	static const char *const env[] = {"BUNDLE_MIRROR__ALL", NULL};
	int replaced = env_registry(c, env);
	size_t k = verb_at(v, n, "", NULL);
	if (k >= n) {
		package_tags(c, R, ALLOW_REG_RUBYGEMS, replaced); /* `bundle` alone installs */
		return 0;
	}
	if (v[k].flags & CLS_W_EXP)
		return cls_refuse(c, v[k].off, "bundle verb is not static");
	if (cls_word_is(&v[k], "exec") || cls_word_is(&v[k], "e")) {
		size_t s = verb_at(v + k, n - k, "", NULL) + k;
		return run_nested(c, v + s, n - s, flags);
	}
	package_tags(c, verb_tags(verbs, &v[k]), ALLOW_REG_RUBYGEMS, replaced);
	return 0;
}

static int t_composer(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct verb verbs[] = {{"install", R}, {"i", R}, {"update", R}, {"u", R},
	        {"upgrade", R}, {"require", R}, {"r", R}, {"create-project", R}, {"outdated", R},
	        {"search", R}, {"self-update", R}, {"selfupdate", R}, {"diagnose", R},
	        {"reinstall", R}, {"audit", R}, {"remove", 0}, {"rm", 0}, {"dump-autoload", 0},
	        {"dumpautoload", 0}, {"validate", 0}, {"config", 0}, {"licenses", 0},
	        {"status", 0}, {"archive", 0}, {"init", 0}, {"check-platform-reqs", 0}, {"fund", 0},
	        {"help", 0}, {"list", 0}, {"depends", 0}, {"why", 0}, {"prohibits", 0},
	        {"why-not", 0}, {"run-script", 0}, {"run", 0}, {"show", 0}, {"info", 0},
	        {"bump", 0}, {"clear-cache", 0}, {"clearcache", 0}, {NULL, 0}};
	static const char *const lv[] = {"working-dir", NULL};
	size_t k = verb_at(v, n, "d", lv);
	if (k >= n)
		return 0;
	if (v[k].flags & CLS_W_EXP)
		return cls_refuse(c, v[k].off, "composer verb is not static");
	if (cls_word_is(&v[k], "global") && k + 1 < n)
		return t_composer(c, v + k, n - k, flags);
	if (cls_word_is(&v[k], "exec")) {
		size_t s = verb_at(v + k, n - k, "", NULL) + k;
		return run_nested(c, v + s, n - s, flags);
	}
	unsigned tags = verb_tags(verbs, &v[k]);
	if (cls_word_is(&v[k], "show") || cls_word_is(&v[k], "info"))
		for (size_t i = k + 1; i < n; i++)
			if (cls_word_is(&v[i], "--all") || cls_word_is(&v[i], "-a") ||
			        cls_word_is(&v[i], "--available") || cls_word_is(&v[i], "--latest"))
				tags = R;
	package_tags(c, tags, ALLOW_REG_PACKAGIST, 0);
	return 0;
}

/* ---- system package managers ---- */

static int simulated(const struct cls_word *v, size_t n)
{
	static const char *const sim[] = {"-s", "--simulate", "--dry-run", "--just-print",
	        "--no-act", "--recon", "--print-uris", "-C", "--cacheonly", "--no-network", NULL};
	for (size_t i = 1; i < n; i++)
		if (word_in(&v[i], sim))
			return 1;
	return 0;
}

static int system_pm(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags,
        const struct verb *verbs, const char *sv, const char *const *lv)
{
	size_t k = verb_at(v, n, sv, lv);
	if (k >= n) {
		if (flags & CLS_C_XARGS)
			c->tags |= RW;
		return 0;
	}
	if (v[k].flags & CLS_W_EXP)
		return cls_refuse(c, v[k].off, "%s verb is not static", v[0].s);
	unsigned tags = verb_tags(verbs, &v[k]);
	if (simulated(v, n) && !(tags & W))
		tags = 0;
	c->tags |= tags; /* the sources are in the system's files: no host to report */
	return 0;
}

static int t_apt(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct verb verbs[] = {{"install", R}, {"update", R}, {"upgrade", R},
	        {"dist-upgrade", R}, {"full-upgrade", R}, {"download", R}, {"source", R},
	        {"build-dep", R}, {"reinstall", R}, {"satisfy", R}, {"changelog", R},
	        {"safe-upgrade", R}, {"remove", 0}, {"purge", 0}, {"autoremove", 0},
	        {"autopurge", 0}, {"clean", 0}, {"autoclean", 0}, {"list", 0}, {"search", 0},
	        {"show", 0}, {"showsrc", 0}, {"policy", 0}, {"depends", 0}, {"rdepends", 0},
	        {"moo", 0}, {"edit-sources", 0}, {"check", 0}, {"mark", 0}, {"markauto", 0},
	        {"unmarkauto", 0}, {"help", 0}, {"why", 0}, {"why-not", 0}, {NULL, 0}};
	static const char *const lv[] = {"option", "config-file", "target-release", NULL};
	return system_pm(c, v, n, flags, verbs, "ocqtS", lv);
}

static int t_dnf(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct verb verbs[] = {{"install", R}, {"in", R}, {"update", R},
	        {"upgrade", R}, {"up", R}, {"reinstall", R}, {"downgrade", R}, {"makecache", R},
	        {"download", R}, {"distro-sync", R}, {"dsync", R}, {"check-update", R},
	        {"check-upgrade", R}, {"search", R}, {"se", R}, {"info", R}, {"list", R},
	        {"provides", R}, {"whatprovides", R}, {"repoquery", R}, {"group", R},
	        {"groupinstall", R}, {"groupupdate", R}, {"module", R}, {"builddep", R},
	        {"swap", R}, {"upgrade-minimal", R}, {"repolist", R}, {"localinstall", R},
	        {"remove", 0}, {"erase", 0}, {"rm", 0}, {"autoremove", 0}, {"clean", 0},
	        {"history", 0}, {"help", 0}, {"mark", 0}, {"alias", 0}, {NULL, 0}};
	static const char *const lv[] = {"releasever", "installroot", "setopt", "enablerepo",
	        "disablerepo", "repo", "config", "exclude", "color", NULL};
	return system_pm(c, v, n, flags, verbs, "cdexR", lv);
}

static int t_apk(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct verb verbs[] = {{"add", R}, {"update", R}, {"upgrade", R},
	        {"fetch", R}, {"fix", R}, {"cache", R}, {"del", 0}, {"info", 0}, {"list", 0},
	        {"search", 0}, {"stats", 0}, {"audit", 0}, {"verify", 0}, {"version", 0},
	        {"index", 0}, {"manifest", 0}, {"policy", 0}, {"dot", 0}, {NULL, 0}};
	static const char *const lv[] = {"root", "repository", "keys-dir", "arch", "cache-dir",
	        "repositories-file", "virtual", NULL};
	return system_pm(c, v, n, flags, verbs, "XptV", lv);
}

static int t_brew(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const struct verb verbs[] = {{"install", R}, {"reinstall", R}, {"upgrade", R},
	        {"update", R}, {"fetch", R}, {"tap", R}, {"search", R}, {"info", R},
	        {"outdated", R}, {"desc", R}, {"create", R}, {"bump", W}, {"bump-formula-pr", W},
	        {"bump-cask-pr", W}, {"list", 0}, {"ls", 0}, {"uninstall", 0}, {"remove", 0},
	        {"rm", 0}, {"cleanup", 0}, {"doctor", 0}, {"dr", 0}, {"config", 0},
	        {"--prefix", 0}, {"--cellar", 0}, {"--cache", 0}, {"--version", 0}, {"help", 0},
	        {"link", 0}, {"ln", 0}, {"unlink", 0}, {"pin", 0}, {"unpin", 0}, {"services", 0},
	        {"leaves", 0}, {"deps", 0}, {"uses", 0}, {"shellenv", 0}, {"autoremove", 0},
	        {"home", 0}, {"commands", 0}, {"untap", 0}, {"analytics", 0}, {"completions", 0},
	        {"edit", 0}, {"cat", 0}, {"formulae", 0}, {"casks", 0}, {"log", 0},
	        {"options", 0}, {"missing", 0}, {"--repository", 0}, {"--env", 0}, {NULL, 0}};
	static const char *const env[] = {"HOMEBREW_API_DOMAIN", "HOMEBREW_BOTTLE_DOMAIN",
	        "HOMEBREW_ARTIFACT_DOMAIN", NULL};
	int replaced = env_registry(c, env);
	if (n < 2)
		return 0;
	if (v[1].flags & CLS_W_EXP)
		return cls_refuse(c, v[1].off, "brew verb is not static");
	unsigned tags;
	if (cls_word_is(&v[1], "bundle")) {
		/* brew bundle [install] installs from the Brewfile; check, list, dump do not */
		static const char *const local[] = {"check", "list", "dump", "cleanup", "edit",
		        "env", "sh", NULL};
		tags = n > 2 && word_in(&v[2], local) ? 0 : R;
	} else {
		tags = verb_tags(verbs, &v[1]);
	}
	package_tags(c, tags, ALLOW_REG_BREW, replaced);
	return 0;
}

/* ---- containers: docker, podman, nerdctl, buildah, skopeo, helm ---- */

/* The registry of an image reference: its host when the first element has a dot or a colon
 * or is localhost (docker's rule), else the default registry. */
static void image_registry(struct cls_ctx *c, const struct cls_word *w)
{
	if (w->flags & CLS_W_EXP)
		return; /* built at run time: unknown */
	const char *s = w->s;
	size_t len = w->len;
	if (len > 9 && memcmp(s, "docker://", 9) == 0) {
		s += 9;
		len -= 9;
	}
	const char *slash = memchr(s, '/', len);
	if (slash != NULL) {
		size_t l = (size_t)(slash - s);
		if (memchr(s, '.', l) != NULL || memchr(s, ':', l) != NULL ||
		        (l == 9 && memcmp(s, "localhost", 9) == 0)) {
			struct cls_word h = {s, l, 0, w->off, NULL};
			char buf[272];
			if (l < sizeof buf) {
				memcpy(buf, s, l);
				buf[l] = '\0';
				h.s = buf;
				cls_add_url_host(c, &h, 1);
			}
			return;
		}
	}
	c->registries |= ALLOW_REG_DOCKER;
}

static const char *const docker_run_lv[] = {"add-host", "annotation", "attach", "blkio-weight",
        "blkio-weight-device", "cap-add", "cap-drop", "cgroup-parent", "cgroupns", "cidfile",
        "cpu-period", "cpu-quota", "cpu-rt-period", "cpu-rt-runtime", "cpu-shares", "cpus",
        "cpuset-cpus", "cpuset-mems", "device", "device-cgroup-rule", "device-read-bps",
        "device-read-iops", "device-write-bps", "device-write-iops", "dns", "dns-option",
        "dns-search", "domainname", "entrypoint", "env", "env-file", "expose", "gpus",
        "group-add", "health-cmd", "health-interval", "health-retries", "health-start-period",
        "health-timeout", "hostname", "ip", "ip6", "ipc", "isolation", "kernel-memory", "label",
        "label-file", "link", "link-local-ip", "log-driver", "log-opt", "mac-address", "memory",
        "memory-reservation", "memory-swap", "memory-swappiness", "mount", "name", "network",
        "network-alias", "oom-score-adj", "pid", "pids-limit", "platform", "publish", "pull",
        "restart", "runtime", "security-opt", "shm-size", "stop-signal", "stop-timeout",
        "storage-opt", "sysctl", "tmpfs", "ulimit", "user", "userns", "uts", "volume",
        "volume-driver", "volumes-from", "workdir", "arch", "os", "variant", "creds", "secret",
        "authfile", "cert-dir", "tag", "file", "build-arg", "target", "cache-from", "cache-to",
        "output", "progress", "iidfile", "ssh", "build-context", "provenance", "sbom", "quiet",
        "shm-size", "config", "context", "host", "log-level", "builder", NULL};

/* docker-style tools: the verb after the global options, then the image operand. */
static int t_docker(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const struct verb verbs[] = {{"pull", R}, {"build", R}, {"run", R}, {"create", R},
	        {"search", R}, {"import", R}, {"scout", R}, {"push", W}, {"login", W},
	        {"logout", 0}, {"ps", 0}, {"images", 0}, {"rmi", 0}, {"rm", 0}, {"stop", 0},
	        {"start", 0}, {"restart", 0}, {"kill", 0}, {"logs", 0}, {"exec", 0},
	        {"inspect", 0}, {"tag", 0}, {"save", 0}, {"load", 0}, {"export", 0}, {"cp", 0},
	        {"commit", 0}, {"diff", 0}, {"top", 0}, {"stats", 0}, {"version", 0}, {"info", 0},
	        {"network", 0}, {"volume", 0}, {"system", 0}, {"context", 0}, {"config", 0},
	        {"secret", 0}, {"swarm", 0}, {"node", 0}, {"service", 0}, {"stack", 0},
	        {"pause", 0}, {"unpause", 0}, {"port", 0}, {"rename", 0}, {"update", 0},
	        {"wait", 0}, {"attach", 0}, {"events", 0}, {"history", 0}, {"help", 0},
	        {"init", 0}, {"machine", 0}, {"pod", 0}, {"generate", 0}, {"healthcheck", 0},
	        {"unshare", 0}, {"mount", 0}, {"umount", 0}, {"container", 0}, {"image", 0},
	        {"compose", 0}, {"buildx", 0}, {"manifest", 0}, {"trust", 0}, {"plugin", 0},
	        {"builder", 0}, {NULL, 0}};
	static const char *const glv[] = {"config", "context", "host", "log-level", "tlscacert",
	        "tlscert", "tlskey", "url", "connection", "identity", "root", "runroot",
	        "storage-driver", "cgroup-manager", "namespace", "address", NULL};
	/* a remote daemon: every verb talks to it over the network */
	for (size_t i = 1; i + 1 < n; i++)
		if ((cls_word_is(&v[i], "-H") || cls_word_is(&v[i], "--host") ||
		            cls_word_is(&v[i], "--url")) &&
		        !starts_with(&v[i + 1], "unix://")) {
			c->tags |= RW;
			cls_add_url_host(c, &v[i + 1], 0);
		}
	size_t k = verb_at(v, n, "cHl", glv);
	if (k >= n)
		return 0;
	const struct cls_word *verb = &v[k];
	if (verb->flags & CLS_W_EXP)
		return cls_refuse(c, verb->off, "%s verb is not static", v[0].s);
	/* management commands: docker image pull, docker container run, docker buildx build */
	int buildx = 0, compose = 0;
	if (cls_word_is(verb, "image") || cls_word_is(verb, "container") ||
	        cls_word_is(verb, "buildx") || cls_word_is(verb, "builder") ||
	        cls_word_is(verb, "compose") || cls_word_is(verb, "manifest") ||
	        cls_word_is(verb, "trust") || cls_word_is(verb, "plugin")) {
		buildx = cls_word_is(verb, "buildx") || cls_word_is(verb, "builder");
		compose = cls_word_is(verb, "compose");
		int manifest = cls_word_is(verb, "manifest"), trust = cls_word_is(verb, "trust"),
		    plugin = cls_word_is(verb, "plugin");
		static const char *const clv[] = {"file", "project-name", "profile", "env-file",
		        "project-directory", "ansi", "progress", "parallel", "builder", NULL};
		size_t s = verb_at(v + k, n - k, "fp", clv) + k;
		if (s >= n)
			return 0;
		if (v[s].flags & CLS_W_EXP)
			return cls_refuse(c, v[s].off, "%s verb is not static", v[0].s);
		unsigned tags = 0;
		if (manifest) {
			tags = cls_word_is(&v[s], "push") ? W
			       : (cls_word_is(&v[s], "inspect") || cls_word_is(&v[s], "create")) ? R
			       : cls_word_is(&v[s], "annotate") || cls_word_is(&v[s], "rm") ? 0
			                                                                    : RW;
		} else if (trust) {
			tags = cls_word_is(&v[s], "inspect") ? R : W;
		} else if (plugin) {
			tags = cls_word_is(&v[s], "install") || cls_word_is(&v[s], "upgrade") ? R
			       : cls_word_is(&v[s], "push")                                  ? W
			                                                                      : 0;
		} else if (compose) {
			static const struct verb cverbs[] = {{"pull", R}, {"up", R}, {"run", R},
			        {"create", R}, {"build", R}, {"push", W}, {"down", 0}, {"ps", 0},
			        {"logs", 0}, {"stop", 0}, {"start", 0}, {"restart", 0}, {"rm", 0},
			        {"exec", 0}, {"config", 0}, {"kill", 0}, {"ls", 0}, {"top", 0},
			        {"images", 0}, {"pause", 0}, {"unpause", 0}, {"port", 0},
			        {"version", 0}, {"events", 0}, {"cp", 0}, {"wait", 0}, {"watch", 0},
			        {"attach", 0}, {"stats", 0}, {NULL, 0}};
			tags = verb_tags(cverbs, &v[s]);
		} else if (buildx && cls_word_is(&v[s], "imagetools")) {
			tags = s + 1 < n && cls_word_is(&v[s + 1], "inspect") ? R : RW;
		} else if (buildx && !cls_word_is(&v[s], "build") && !cls_word_is(&v[s], "b") &&
		           !cls_word_is(&v[s], "bake")) {
			static const struct verb bverbs[] = {{"ls", 0}, {"create", 0}, {"use", 0},
			        {"rm", 0}, {"stop", 0}, {"inspect", 0}, {"prune", 0}, {"du", 0},
			        {"version", 0}, {"install", 0}, {"uninstall", 0}, {"history", 0},
			        {"dial-stdio", 0}, {NULL, 0}};
			tags = verb_tags(bverbs, &v[s]);
		} else {
			/* docker image pull / container run ...: the verb below decides */
			verb = &v[s];
			k = s;
			goto plain;
		}
		/* images named in a compose file, a manifest or a plugin: the default registry,
		 * as far as the line tells */
		package_tags(c, tags, ALLOW_REG_DOCKER, 0);
		return 0;
	}
plain:;
	unsigned tags = verb_tags(verbs, verb);
	if (cls_word_is(verb, "b"))
		tags = R; /* buildx's alias of build */
	if (tags == 0)
		return 0;
	c->tags |= tags;
	int is_build = cls_word_is(verb, "build") || cls_word_is(verb, "b") ||
	               cls_word_is(verb, "bake") || buildx;
	if (is_build) {
		/* FROM images are in the Dockerfile; --push sends the -t tags */
		c->registries |= ALLOW_REG_DOCKER;
		for (size_t i = k + 1; i < n; i++) {
			if (cls_word_is(&v[i], "--push") || starts_with(&v[i], "--output=type=registry") ||
			        starts_with(&v[i], "--output=type=image"))
				c->tags |= W;
			if ((cls_word_is(&v[i], "-t") || cls_word_is(&v[i], "--tag")) && i + 1 < n &&
			        (c->tags & W))
				image_registry(c, &v[i + 1]);
		}
		return 0;
	}
	if (cls_word_is(verb, "login")) {
		static const char *const llv[] = {"username", "password", NULL};
		size_t s = verb_at(v + k, n - k, "up", llv) + k;
		if (s < n)
			cls_add_url_host(c, &v[s], 1);
		else
			c->registries |= ALLOW_REG_DOCKER;
		return 0;
	}
	if (cls_word_is(verb, "search")) {
		c->registries |= ALLOW_REG_DOCKER;
		return 0;
	}
	if (cls_word_is(verb, "import")) {
		for (size_t i = k + 1; i < n; i++)
			if (strstr(v[i].s, "://") != NULL)
				cls_add_url_host(c, &v[i], 0);
		return 0;
	}
	/* pull, push, run, create: the image is the first operand */
	size_t s = verb_at(v + k, n - k, "acehlmpuvwf", docker_run_lv) + k;
	if (s < n)
		image_registry(c, &v[s]);
	else if (!(flags & CLS_C_XARGS))
		c->registries |= ALLOW_REG_DOCKER;
	return 0;
}

static int t_buildah(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const struct verb verbs[] = {{"pull", R}, {"from", R}, {"bud", R},
	        {"build", R}, {"build-using-dockerfile", R}, {"push", W}, {"login", W},
	        {"logout", 0}, {"images", 0}, {"containers", 0}, {"rm", 0}, {"rmi", 0},
	        {"run", 0}, {"copy", 0}, {"add", 0}, {"config", 0}, {"commit", 0}, {"inspect", 0},
	        {"mount", 0}, {"umount", 0}, {"tag", 0}, {"info", 0}, {"version", 0},
	        {"unshare", 0}, {"manifest", 0}, {"help", 0}, {NULL, 0}};
	size_t k = verb_at(v, n, "", docker_run_lv);
	if (k >= n)
		return 0;
	if (v[k].flags & CLS_W_EXP)
		return cls_refuse(c, v[k].off, "buildah verb is not static");
	unsigned tags = verb_tags(verbs, &v[k]);
	c->tags |= tags;
	if (tags == 0)
		return 0;
	if (cls_word_is(&v[k], "bud") || cls_word_is(&v[k], "build") ||
	        cls_word_is(&v[k], "build-using-dockerfile")) {
		c->registries |= ALLOW_REG_DOCKER;
		return 0;
	}
	/* pull IMAGE, from IMAGE, push IMAGE [DEST], login [SERVER] */
	size_t s = verb_at(v + k, n - k, "", docker_run_lv) + k;
	if (cls_word_is(&v[k], "push") && s + 1 < n)
		s++; /* the destination is what is written */
	if (s < n)
		image_registry(c, &v[s]);
	else
		c->registries |= ALLOW_REG_DOCKER;
	return 0;
}

static int t_skopeo(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const struct verb verbs[] = {{"copy", R}, {"inspect", R}, {"list-tags", R},
	        {"sync", R}, {"delete", W}, {"login", W}, {"logout", 0},
	        {"standalone-sign", 0}, {"standalone-verify", 0}, {"manifest-digest", 0},
	        {"generate-sigstore-key", 0}, {"help", 0}, {NULL, 0}};
	static const char *const lv[] = {"authfile", "src-creds", "dest-creds", "creds",
	        "src-authfile", "dest-authfile", "format", "src", "dest", "registries-conf",
	        "override-arch", "override-os", "override-variant", "policy", "tmpdir",
	        "command-timeout", "retry-times", "sign-by", "multi-arch", NULL};
	size_t k = verb_at(v, n, "", lv);
	if (k >= n)
		return 0;
	if (v[k].flags & CLS_W_EXP)
		return cls_refuse(c, v[k].off, "skopeo verb is not static");
	unsigned tags = verb_tags(verbs, &v[k]);
	if (tags == 0)
		return 0;
	c->tags |= tags;
	/* operands with the docker:// transport reach a registry; the destination of copy or
	 * sync is written */
	size_t ops = 0;
	for (size_t i = k + 1; i < n; i++) {
		const struct cls_word *w = &v[i];
		if (w->len > 1 && w->s[0] == '-') {
			if (memchr(w->s, '=', w->len) == NULL && w->s[1] == '-' &&
			        cls_in_list(lv, w->s + 2, w->len - 2))
				i++;
			continue;
		}
		ops++;
		if (starts_with(w, "docker://") || cls_word_is(&v[k], "login") ||
		        (cls_word_is(&v[k], "sync") && ops == 2 && !starts_with(w, "/") &&
		                !starts_with(w, ".") && strchr(w->s, ':') == NULL &&
		                strchr(w->s, '/') == NULL)) {
			if (cls_word_is(&v[k], "login"))
				cls_add_url_host(c, w, 1);
			else
				image_registry(c, w);
			if (ops == 2 && (cls_word_is(&v[k], "copy") || cls_word_is(&v[k], "sync")))
				c->tags |= W;
		}
	}
	return 0;
}

static int t_helm(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const struct verb verbs[] = {{"pull", R}, {"fetch", R}, {"install", RW},
	        {"upgrade", RW}, {"uninstall", W}, {"delete", W}, {"del", W}, {"un", W},
	        {"rollback", W}, {"test", W}, {"push", W}, {"status", R}, {"list", R}, {"ls", R},
	        {"get", R}, {"history", R}, {"hist", R}, {"show", R}, {"inspect", R},
	        {"create", 0}, {"lint", 0}, {"package", 0}, {"version", 0}, {"env", 0},
	        {"completion", 0}, {"help", 0}, {"verify", 0}, {"template", 0}, {NULL, 0}};
	static const char *const lv[] = {"namespace", "kube-context", "kubeconfig", "kube-apiserver",
	        "kube-token", "kube-as-user", "kube-as-group", "kube-ca-file", "registry-config",
	        "repository-cache", "repository-config", "burst-limit", "qps", NULL};
	size_t k = verb_at(v, n, "n", lv);
	if (k >= n)
		return 0;
	const struct cls_word *verb = &v[k];
	if (verb->flags & CLS_W_EXP)
		return cls_refuse(c, verb->off, "helm verb is not static");
	unsigned tags;
	if (cls_word_is(verb, "repo")) {
		tags = k + 1 < n && (cls_word_is(&v[k + 1], "add") || cls_word_is(&v[k + 1], "update") ||
		                            cls_word_is(&v[k + 1], "up"))
		               ? R
		               : 0;
	} else if (cls_word_is(verb, "dependency") || cls_word_is(verb, "dep") ||
	           cls_word_is(verb, "dependencies")) {
		tags = k + 1 < n && (cls_word_is(&v[k + 1], "update") || cls_word_is(&v[k + 1], "up") ||
		                            cls_word_is(&v[k + 1], "build"))
		               ? R
		               : 0;
	} else if (cls_word_is(verb, "search")) {
		tags = k + 1 < n && cls_word_is(&v[k + 1], "hub") ? R : 0;
	} else if (cls_word_is(verb, "registry")) {
		tags = k + 1 < n && cls_word_is(&v[k + 1], "login") ? W : 0;
	} else if (cls_word_is(verb, "plugin")) {
		tags = k + 1 < n && (cls_word_is(&v[k + 1], "install") ||
		                            cls_word_is(&v[k + 1], "update"))
		               ? R
		               : 0;
	} else {
		tags = verb_tags(verbs, verb);
	}
	c->tags |= tags;
	if (tags != 0)
		for (size_t i = k + 1; i < n; i++)
			if (!(v[i].flags & CLS_W_EXP) && strstr(v[i].s, "://") != NULL)
				cls_add_url_host(c, &v[i], 0);
	return 0;
}

/* ---- version control other than git, build tools that publish, rclone ---- */

/* Reads and writes of hg and svn: HTTP's tags, as the public sample's vocabulary gives a
 * version-control exchange over any transport one kind of tag (git's); SSH's are added only
 * for an operand that is an SSH URL (ssh_url_tags). */
#define VR ALLOW_TAG_HTTP_READ
#define VW ALLOW_TAG_HTTP_WRITE

/* The verb's tags t, and SSH's besides when operand w is an explicit SSH URL (scheme, of
 * length sl, then "://"): ssh:read for a read, ssh:write for a write. */
static unsigned ssh_url_tags(unsigned t, const struct cls_word *w, const char *scheme, size_t sl)
{
	if ((w->flags & CLS_W_EXP) || w->len <= sl + 3 || strncasecmp(w->s, scheme, sl) != 0 ||
	        memcmp(w->s + sl, "://", 3) != 0)
		return t;
	return t | ((t & VR) ? ALLOW_TAG_SSH_READ : 0u) | ((t & VW) ? ALLOW_TAG_SSH_WRITE : 0u);
}

/* hg [global options] VERB: push writes, pull/clone/incoming/outgoing read, an unknown verb
 * (an extension's) both; HTTP's tags, and SSH's besides for an ssh:// operand. */
static int t_hg(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct verb verbs[] = {{"push", VR | VW}, {"pull", VR}, {"clone", VR},
	        {"incoming", VR}, {"in", VR}, {"outgoing", VR}, {"out", VR}, {"fetch", VR},
	        {"unbundle", 0}, {"add", 0}, {"addremove", 0}, {"annotate", 0}, {"blame", 0},
	        {"archive", 0}, {"backout", 0}, {"bisect", 0}, {"bookmarks", 0}, {"bookmark", 0},
	        {"branch", 0}, {"branches", 0}, {"cat", 0}, {"commit", 0}, {"ci", 0},
	        {"config", 0}, {"copy", 0}, {"cp", 0}, {"diff", 0}, {"export", 0}, {"files", 0},
	        {"forget", 0}, {"graft", 0}, {"grep", 0}, {"heads", 0}, {"help", 0},
	        {"import", 0}, {"init", 0}, {"locate", 0}, {"log", 0}, {"manifest", 0},
	        {"merge", 0}, {"parents", 0}, {"paths", 0}, {"phase", 0}, {"purge", 0},
	        {"rebase", 0}, {"recover", 0}, {"remove", 0}, {"rm", 0}, {"rename", 0}, {"mv", 0},
	        {"resolve", 0}, {"revert", 0}, {"rollback", 0}, {"root", 0}, {"shelve", 0},
	        {"status", 0}, {"st", 0}, {"tag", 0}, {"tags", 0}, {"tip", 0}, {"unshelve", 0},
	        {"update", 0}, {"up", 0}, {"checkout", 0}, {"co", 0}, {"verify", 0},
	        {"version", 0}, {"histedit", 0}, {"strip", 0}, {"amend", 0}, {"id", 0},
	        {"identify", 0}, {"summary", 0}, {"sum", 0}, {NULL, 0}};
	static const char *const lv[] = {"repository", "repo", "cwd", "config", "encoding",
	        "encodingmode", "color", "pager", NULL};
	size_t k = verb_at(v, n, "R", lv);
	if (k >= n) {
		if (flags & CLS_C_XARGS)
			c->tags |= VR | VW;
		return 0;
	}
	if (v[k].flags & CLS_W_EXP)
		return cls_refuse(c, v[k].off, "hg verb is not static");
	const struct verb *e = verb_find(verbs, &v[k]);
	unsigned t = e != NULL ? e->tags : VR | VW;
	/* a source or destination URL names its host; ssh:// adds SSH's tags */
	for (size_t i = k + 1; i < n; i++)
		if (!(v[i].flags & CLS_W_EXP) && strstr(v[i].s, "://") != NULL) {
			cls_add_url_host(c, &v[i], 0);
			t = ssh_url_tags(t, &v[i], "ssh", 3);
		}
	c->tags |= t;
	return 0;
}

/* svn [options] VERB: commit/import/lock write; copy, move, mkdir, delete and the prop
 * setters write when given URLs (both, as they may); checkout, update, export, list, log,
 * cat, info, diff, blame, switch, merge read; an unknown verb both.  svn:// is svnserve's own
 * protocol: net:raw besides; svn+ssh:// adds SSH's tags. */
static int t_svn(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct verb verbs[] = {{"commit", VR | VW}, {"ci", VR | VW},
	        {"import", VR | VW}, {"lock", VR | VW}, {"unlock", VR | VW}, {"copy", VR | VW},
	        {"cp", VR | VW}, {"move", VR | VW}, {"mv", VR | VW}, {"rename", VR | VW},
	        {"ren", VR | VW}, {"mkdir", VR | VW}, {"delete", VR | VW}, {"del", VR | VW},
	        {"remove", VR | VW}, {"rm", VR | VW}, {"propset", VR | VW}, {"pset", VR | VW},
	        {"ps", VR | VW}, {"propdel", VR | VW}, {"pdel", VR | VW}, {"pd", VR | VW},
	        {"propedit", VR | VW}, {"pedit", VR | VW}, {"pe", VR | VW}, {"checkout", VR},
	        {"co", VR}, {"update", VR}, {"up", VR}, {"export", VR}, {"list", VR}, {"ls", VR},
	        {"log", VR}, {"cat", VR}, {"info", VR}, {"diff", VR}, {"di", VR}, {"blame", VR},
	        {"praise", VR}, {"annotate", VR}, {"ann", VR}, {"switch", VR}, {"sw", VR},
	        {"merge", VR}, {"mergeinfo", VR}, {"propget", VR}, {"pget", VR}, {"pg", VR},
	        {"proplist", VR}, {"plist", VR}, {"pl", VR}, {"relocate", VR}, {"add", 0},
	        {"revert", 0}, {"resolve", 0}, {"resolved", 0}, {"cleanup", 0}, {"help", 0},
	        {"h", 0}, {"patch", 0}, {"changelist", 0}, {"cl", 0}, {"status", 0}, {"stat", 0},
	        {"st", 0}, {"upgrade", 0}, {NULL, 0}};
	static const char *const lv[] = {"username", "password", "config-dir", "config-option",
	        "message", "file", "revision", "depth", "set-depth", "encoding", "targets",
	        "with-revprop", "accept", "change", "limit", "extensions", "diff-cmd",
	        "editor-cmd", "search", "search-and", "cl", "changelist", "show-item",
	        "password-from-stdin", NULL};
	size_t k = verb_at(v, n, "mFrcxl", lv);
	if (k >= n) {
		if (flags & CLS_C_XARGS)
			c->tags |= VR | VW;
		return 0;
	}
	if (v[k].flags & CLS_W_EXP)
		return cls_refuse(c, v[k].off, "svn verb is not static");
	const struct verb *e = verb_find(verbs, &v[k]);
	unsigned t = e != NULL ? e->tags : VR | VW;
	for (size_t i = k + 1; i < n; i++) {
		if ((v[i].flags & CLS_W_EXP) || strstr(v[i].s, "://") == NULL)
			continue;
		cls_add_url_host(c, &v[i], 0);
		if (starts_with(&v[i], "svn://"))
			t |= ALLOW_TAG_NET_RAW;
		t = ssh_url_tags(t, &v[i], "svn+ssh", 7);
	}
	c->tags |= t;
	return 0;
}

/* Whether goal w starts with one of the prefixes (a phase, or plugin: for any of its goals). */
static int goal_in(const struct cls_word *w, const char *const *set)
{
	for (size_t i = 0; set[i] != NULL; i++) {
		size_t l = strlen(set[i]);
		if (set[i][l - 1] == ':' ? starts_with(w, set[i])
		                         : (w->len == l && memcmp(w->s, set[i], l) == 0))
			return 1;
	}
	return 0;
}

/* mvn, mvnw: every goal resolves plugins and dependencies (http:read, none with -o); deploy,
 * release and site deployment upload (http:write); a plugin goal outside the table both. */
static int t_mvn(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const char *const valued[] = {"-f", "--file", "-s", "--settings", "-gs",
	        "--global-settings", "-P", "--activate-profiles", "-D", "--define", "-T",
	        "--threads", "-b", "--builder", "-l", "--log-file", "-pl", "--projects", "-rf",
	        "--resume-from", "-t", "--toolchains", "-gt", "--global-toolchains", "-Dmaven",
	        NULL};
	static const char *const reads[] = {"validate", "initialize", "compile", "test",
	        "test-compile", "package", "verify", "integration-test", "install", "clean",
	        "site", "generate-sources", "process-resources", "dependency:", "help:",
	        "versions:", "archetype:", "compiler:", "surefire:", "failsafe:", "jar:", "war:",
	        "source:", "javadoc:", "clean:", "install:", "resources:", "spotless:",
	        "checkstyle:", "enforcer:", "jacoco:", "spring-boot:run", "exec:", "wrapper:",
	        NULL};
	static const char *const writes[] = {"deploy", "site-deploy", "deploy:", "release:",
	        "wagon:", "site:deploy", "site:stage-deploy", "jib:build", "gpg:sign-and-deploy-file",
	        NULL};
	int offline = 0, goals = 0;
	unsigned tags = 0;
	for (size_t i = 1; i < n; i++) {
		const struct cls_word *w = &v[i];
		if (w->flags & CLS_W_LEADEXP) {
			tags |= RW;
			continue;
		}
		if (w->len > 1 && w->s[0] == '-') {
			if (cls_word_is(w, "-o") || cls_word_is(w, "--offline"))
				offline = 1;
			else if (word_in(w, valued))
				i++;
			continue;
		}
		goals++;
		if (goal_in(w, writes))
			tags |= RW;
		else if (goal_in(w, reads))
			tags |= R;
		else
			tags |= RW;
	}
	if (goals == 0 && (flags & CLS_C_XARGS))
		tags |= RW;
	if (offline)
		tags &= ~(unsigned)R;
	c->tags |= tags;
	return 0;
}

/* gradle, gradlew: tasks resolve plugins and dependencies (http:read, none with --offline);
 * publish and upload tasks upload (http:write), publishToMavenLocal excepted; tasks are
 * the build's own, so one outside the usual names gets both. */
static int t_gradle(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const char *const valued[] = {"-b", "--build-file", "-c", "--settings-file", "-g",
	        "--gradle-user-home", "-I", "--init-script", "-p", "--project-dir", "-x",
	        "--exclude-task", "-P", "--project-prop", "-D", "--system-prop", "-F",
	        "--dependency-verification", "-M", "--write-verification-metadata", "--console",
	        "--warning-mode", "--max-workers", "--priority", "--include-build",
	        "--project-cache-dir", "--update-locks", NULL};
	static const char *const reads[] = {"build", "assemble", "test", "check", "clean", "jar",
	        "run", "bootRun", "bootJar", "dependencies", "dependencyInsight", "tasks", "help",
	        "init", "wrapper", "javadoc", "installDist", "distZip", "distTar", "lint",
	        "projects", "properties", "classes", "testClasses", "compileJava",
	        "compileKotlin", "compileTestJava", "processResources", "spotlessApply",
	        "spotlessCheck", "jacocoTestReport", "detekt", "ktlintCheck", "ktlintFormat",
	        "publishToMavenLocal", "assembleDebug", "assembleRelease", "bundleRelease",
	        "bundleDebug", "installDebug", "connectedAndroidTest", "buildEnvironment",
	        "outgoingVariants", "nativeCompile", NULL};
	int offline = 0, tasks = 0;
	unsigned tags = 0;
	for (size_t i = 1; i < n; i++) {
		const struct cls_word *w = &v[i];
		if (w->flags & CLS_W_LEADEXP) {
			tags |= RW;
			continue;
		}
		if (w->len > 1 && w->s[0] == '-') {
			if (cls_word_is(w, "--offline"))
				offline = 1;
			else if (word_in(w, valued))
				i++;
			continue;
		}
		tasks++;
		/* :sub:task names the task of a subproject */
		struct cls_word t = *w;
		const char *colon = memrchr(w->s, ':', w->len);
		if (colon != NULL) {
			t.s = colon + 1;
			t.len = w->len - (size_t)(colon + 1 - w->s);
		}
		if (word_in(&t, reads))
			tags |= R;
		else
			tags |= RW;
	}
	if (tasks == 0)
		tags |= (flags & CLS_C_XARGS) ? RW : R; /* the default tasks */
	if (offline)
		tags &= ~(unsigned)R;
	c->tags |= tags;
	return 0;
}

/* Whether an rclone operand names a remote (REMOTE:PATH, :BACKEND:PATH): a colon before any
 * slash.  One that is not static may. */
static int rclone_remote(const struct cls_word *w)
{
	if (w->flags & CLS_W_EXP)
		return 1;
	const char *colon = memchr(w->s, ':', w->len);
	return colon != NULL && memchr(w->s, '/', (size_t)(colon - w->s)) == NULL;
}

/* rclone VERB: a transfer reads its source and writes its destination when they are remotes
 * (move and sync delete too), listings read, deletions write, an unknown verb both.  The
 * remotes' backends (HTTP APIs mostly, sftp, ftp) are in rclone's config, out of reach: HTTP
 * tags. */
static int t_rclone(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct verb verbs[] = {{"ls", R}, {"lsd", R}, {"lsl", R}, {"lsf", R},
	        {"lsjson", R}, {"cat", R}, {"size", R}, {"md5sum", R}, {"sha1sum", R},
	        {"hashsum", R}, {"about", R}, {"tree", R}, {"ncdu", R}, {"check", R},
	        {"cryptcheck", R}, {"selfupdate", R}, {"delete", RW}, {"deletefile", RW},
	        {"purge", RW}, {"mkdir", RW}, {"rmdir", RW}, {"rmdirs", RW}, {"touch", RW},
	        {"rcat", W}, {"settier", RW}, {"dedupe", RW}, {"cleanup", RW}, {"link", RW},
	        {"config", 0}, {"version", 0}, {"help", 0}, {"listremotes", 0}, {"obscure", 0},
	        {"genautocomplete", 0}, {"completion", 0}, {"gendocs", 0}, {NULL, 0}};
	static const char *const transfers[] = {"copy", "copyto", "sync", "move", "moveto",
	        "bisync", "copyurl", NULL};
	static const char *const lv[] = {"config", "transfers", "checkers", "bwlimit", "include",
	        "exclude", "filter", "include-from", "exclude-from", "filter-from", "files-from",
	        "log-file", "log-level", "max-age", "min-age", "max-size", "min-size", "backup-dir",
	        "suffix", "order-by", "max-transfer", "cutoff-mode", "compare-dest", "copy-dest",
	        "user-agent", "header", "retries", "low-level-retries", "timeout", "contimeout",
	        "stats", "track-renames-strategy", "max-depth", "s3-acl", "drive-chunk-size",
	        "fast-list", NULL};
	size_t k = verb_at(v, n, "", lv);
	if (k >= n) {
		if (flags & CLS_C_XARGS)
			c->tags |= RW;
		return 0;
	}
	const struct cls_word *verb = &v[k];
	if (verb->flags & CLS_W_EXP)
		return cls_refuse(c, verb->off, "rclone verb is not static");
	if (!word_in(verb, transfers)) {
		const struct verb *e = verb_find(verbs, verb);
		c->tags |= e != NULL ? e->tags : RW;
		return 0;
	}
	const struct cls_opts spec = {"", NULL, lv, 0, 0};
	const struct cls_word *ops[2] = {NULL, NULL};
	size_t nops = 0;
	for (size_t i = k + 1; i < n && nops < 2;) {
		i = cls_opts_walk(v, n, i, &spec, NULL, NULL, NULL);
		if (i < n)
			ops[nops++] = &v[i++];
	}
	if (nops < 2) {
		c->tags |= RW; /* operands from xargs, or a usage error */
		return 0;
	}
	int move = cls_word_is(verb, "move") || cls_word_is(verb, "moveto") ||
	           cls_word_is(verb, "sync") || cls_word_is(verb, "bisync");
	if (cls_word_is(verb, "copyurl")) {
		c->tags |= R;
		cls_add_url_host(c, ops[0], 0);
	} else if (rclone_remote(ops[0])) {
		c->tags |= move ? RW : R;
	}
	if (rclone_remote(ops[1]))
		c->tags |= cls_word_is(verb, "bisync") ? RW : W;
	return 0;
}

/* ssh-copy-id [options] [user@]HOST: logs in and appends to authorized_keys. */
static int t_ssh_copy_id(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const struct cls_opts spec = {"ipoFt", NULL, NULL, 0, 0};
	c->tags |= ALLOW_TAG_SSH_READ | ALLOW_TAG_SSH_WRITE;
	size_t k = operand(v, n, 1, &spec);
	if (k < n && !(v[k].flags & CLS_W_EXP))
		cls_add_host(c, v[k].s, v[k].len);
	return 0;
}

/* ---- cloud and cluster clients ---- */

/* Whether a word is an object-store URL (s3://, gs://) rather than a local path. */
static int is_remote(const struct cls_word *w, const char *scheme)
{
	return (w->flags & CLS_W_LEADEXP) || starts_with(w, scheme);
}

/* cp/mv/sync/rsync SRC DST by direction: download reads, upload writes, remote to remote both;
 * mv also deletes its source. */
static unsigned copy_tags(const struct cls_word *src, const struct cls_word *dst,
        const char *scheme, int move)
{
	int rs = is_remote(src, scheme), rd = is_remote(dst, scheme);
	unsigned t = 0;
	if (rs)
		t |= R;
	if (rd || (move && rs))
		t |= W;
	return t ? t : RW;
}

/* The first two operands at or after i (options with values in lv skipped). */
static size_t two_operands(const struct cls_word *v, size_t n, size_t i, const char *sv,
        const char *const *lv, const struct cls_word **a, const struct cls_word **b)
{
	const struct cls_opts spec = {sv, NULL, lv, 0, 0};
	size_t got = 0;
	*a = *b = NULL;
	while (i < n && got < 2) {
		size_t k = cls_opts_walk(v, n, i, &spec, NULL, NULL, NULL);
		if (k >= n)
			break;
		if (got == 0)
			*a = &v[k];
		else
			*b = &v[k];
		got++;
		i = k + 1;
	}
	return got;
}

static int t_aws(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const char *const glv[] = {"profile", "region", "endpoint-url", "output", "query",
	        "color", "cli-read-timeout", "cli-connect-timeout", "ca-bundle",
	        "cli-binary-format", NULL};
	static const char *const s3lv[] = {"include", "exclude", "acl", "grants", "sse",
	        "sse-c", "sse-c-key", "sse-kms-key-id", "storage-class", "website-redirect",
	        "content-type", "cache-control", "content-disposition", "content-encoding",
	        "content-language", "expires", "source-region", "metadata", "metadata-directive",
	        "expected-size", "page-size", "request-payer", "checksum-algorithm",
	        "checksum-mode", "grants", "expires-in", "index-document", "error-document",
	        "sse-c-copy-source", "sse-c-copy-source-key", "profile", "region", "endpoint-url",
	        "output", "query", NULL};
	for (size_t i = 1; i < n; i++) {
		if (cls_word_is(&v[i], "--endpoint-url") && i + 1 < n)
			cls_add_url_host(c, &v[i + 1], 0);
		else if (starts_with(&v[i], "--endpoint-url=")) {
			struct cls_word u = v[i];
			u.s += 15;
			u.len -= 15;
			cls_add_url_host(c, &u, 0);
		}
	}
	size_t k = verb_at(v, n, "", glv);
	if (k >= n) {
		if (flags & CLS_C_XARGS)
			c->tags |= RW;
		return 0;
	}
	const struct cls_word *svc = &v[k];
	if (svc->flags & CLS_W_EXP)
		return cls_refuse(c, svc->off, "aws service is not static");
	static const char *const local[] = {"help", "configure", "--version", "history", NULL};
	if (word_in(svc, local))
		return 0;
	if (!cls_word_is(svc, "s3")) {
		c->tags |= RW; /* every other service and operation: both */
		return 0;
	}
	size_t s = verb_at(v + k, n - k, "", glv) + k;
	if (s >= n)
		return 0;
	const struct cls_word *op = &v[s];
	static const struct verb s3[] = {{"ls", R}, {"rm", W}, {"mb", W}, {"rb", W},
	        {"website", W}, {"presign", 0}, {NULL, 0}};
	unsigned tags;
	if (cls_word_is(op, "cp") || cls_word_is(op, "mv") || cls_word_is(op, "sync")) {
		const struct cls_word *a, *b;
		if (two_operands(v, n, s + 1, "", s3lv, &a, &b) == 2)
			tags = copy_tags(a, b, "s3://", cls_word_is(op, "mv"));
		else
			tags = RW;
		if (cls_word_is(op, "sync"))
			for (size_t i = s + 1; i < n; i++)
				if (cls_word_is(&v[i], "--delete") && b != NULL && is_remote(b, "s3://"))
					tags |= W;
	} else {
		tags = verb_tags(s3, op);
	}
	c->tags |= tags;
	return 0;
}

/* gsutil and gcloud storage: by verb, cp/mv/rsync by direction. */
static unsigned gs_tags(const struct cls_word *v, size_t n, size_t s)
{
	static const struct verb verbs[] = {{"ls", R}, {"cat", R}, {"du", R}, {"stat", R},
	        {"hash", 0}, {"version", 0}, {"help", 0}, {"config", 0}, {"rm", W}, {"mb", W},
	        {"rb", W}, {"setmeta", W}, {"compose", W}, {"signurl", 0}, {"sign-url", 0},
	        {NULL, 0}};
	static const char *const lv[] = {"header", "content-type", "cache-control",
	        "storage-class", "exclude", "include", "project", NULL};
	if (s >= n)
		return 0;
	const struct cls_word *op = &v[s];
	if (cls_word_is(op, "cp") || cls_word_is(op, "mv") || cls_word_is(op, "rsync")) {
		const struct cls_word *a, *b;
		if (two_operands(v, n, s + 1, "hpxsz", lv, &a, &b) != 2)
			return RW;
		unsigned t = copy_tags(a, b, "gs://", cls_word_is(op, "mv"));
		for (size_t i = s + 1; i < n; i++)
			if ((cls_word_is(&v[i], "-d") || cls_word_is(&v[i], "--delete-unmatched-destination-objects")) &&
			        is_remote(b, "gs://"))
				t |= W;
		return t;
	}
	/* acl, defacl, iam, lifecycle, cors, ...: get reads, set/ch writes */
	if (s + 1 < n && (cls_word_is(&v[s + 1], "get") || cls_word_is(&v[s + 1], "describe") ||
	                         cls_word_is(&v[s + 1], "list")))
		return R;
	if (cls_word_is(op, "buckets") || cls_word_is(op, "objects") ||
	        cls_word_is(op, "folders") || cls_word_is(op, "managed-folders"))
		return s + 1 < n && (cls_word_is(&v[s + 1], "create") || cls_word_is(&v[s + 1], "delete") ||
		                            cls_word_is(&v[s + 1], "update") || cls_word_is(&v[s + 1], "compose"))
		               ? W
		               : RW;
	return verb_tags(verbs, op);
}

static int t_gsutil(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	size_t k = verb_at(v, n, "ohiu", NULL);
	if (k < n && (v[k].flags & CLS_W_EXP))
		return cls_refuse(c, v[k].off, "gsutil verb is not static");
	c->tags |= gs_tags(v, n, k);
	return 0;
}

static int t_gcloud(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const char *const glv[] = {"project", "account", "configuration", "format",
	        "verbosity", "impersonate-service-account", "billing-project", "flags-file",
	        "flatten", "trace-token", NULL};
	size_t k = verb_at(v, n, "", glv);
	if (k >= n)
		return 0;
	if (v[k].flags & CLS_W_EXP)
		return cls_refuse(c, v[k].off, "gcloud group is not static");
	static const char *const local[] = {"config", "info", "version", "help", "topic",
	        "components", "cheat-sheet", "init", NULL};
	if (word_in(&v[k], local))
		return 0;
	if (cls_word_is(&v[k], "storage")) {
		size_t s = verb_at(v + k, n - k, "", glv) + k;
		if (s < n && (v[s].flags & CLS_W_EXP))
			return cls_refuse(c, v[s].off, "gcloud storage verb is not static");
		c->tags |= gs_tags(v, n, s);
		return 0;
	}
	c->tags |= RW;
	return 0;
}

static int t_az(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	size_t k = verb_at(v, n, "", NULL);
	if (k >= n)
		return 0;
	if (v[k].flags & CLS_W_EXP)
		return cls_refuse(c, v[k].off, "az group is not static");
	static const char *const local[] = {"version", "help", "config", "--version", "find",
	        "interactive", "init", NULL};
	if (word_in(&v[k], local))
		return 0;
	if (cls_word_is(&v[k], "storage") && k + 2 < n && cls_word_is(&v[k + 1], "blob")) {
		static const struct verb blob[] = {{"upload", W}, {"upload-batch", W},
		        {"delete", W}, {"delete-batch", W}, {"set-tier", W}, {"snapshot", W},
		        {"sync", W}, {"undelete", W}, {"download", R}, {"download-batch", R},
		        {"list", R}, {"show", R}, {"exists", R}, {"url", 0}, {"generate-sas", 0},
		        {NULL, 0}};
		const struct cls_word *op = &v[k + 2];
		if (cls_word_is(op, "copy") || cls_word_is(op, "metadata") ||
		        cls_word_is(op, "lease") || cls_word_is(op, "tag"))
			c->tags |= k + 3 < n && (cls_word_is(&v[k + 3], "show") ||
			                                cls_word_is(&v[k + 3], "list"))
			                   ? R
			                   : W;
		else
			c->tags |= verb_tags(blob, op);
		return 0;
	}
	c->tags |= RW;
	return 0;
}

static int t_kubectl(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const struct verb verbs[] = {{"get", R}, {"describe", R}, {"logs", R}, {"top", R},
	        {"explain", R}, {"api-resources", R}, {"api-versions", R}, {"cluster-info", R},
	        {"version", R}, {"events", R}, {"wait", R}, {"auth", R}, {"apply", W},
	        {"create", W}, {"delete", W}, {"patch", W}, {"edit", W}, {"exec", W}, {"cp", W},
	        {"scale", W}, {"rollout", W}, {"label", W}, {"annotate", W}, {"set", W},
	        {"taint", W}, {"drain", W}, {"cordon", W}, {"uncordon", W}, {"replace", W},
	        {"autoscale", W}, {"expose", W}, {"run", W}, {"attach", W}, {"port-forward", W},
	        {"proxy", W}, {"debug", W}, {"certificate", W}, {"config", 0}, {"completion", 0},
	        {"help", 0}, {"kustomize", 0}, {"plugin", 0}, {"alpha", RW}, {"diff", RW},
	        {NULL, 0}};
	static const char *const glv[] = {"namespace", "context", "cluster", "user", "server",
	        "kubeconfig", "token", "as", "as-group", "as-uid", "certificate-authority",
	        "client-certificate", "client-key", "request-timeout", "tls-server-name",
	        "cache-dir", "password", "username", "profile", "profile-output",
	        "log-flush-frequency", "v", "vmodule", "selector", "output", NULL};
	for (size_t i = 1; i + 1 < n; i++)
		if (cls_word_is(&v[i], "--server") || cls_word_is(&v[i], "-s"))
			cls_add_url_host(c, &v[i + 1], 1);
	size_t k = verb_at(v, n, "nslo", glv);
	if (k >= n) {
		if (flags & CLS_C_XARGS)
			c->tags |= RW;
		return 0;
	}
	const struct cls_word *verb = &v[k];
	if (verb->flags & CLS_W_EXP)
		return cls_refuse(c, verb->off, "kubectl verb is not static");
	unsigned tags = verb_tags(verbs, verb);
	if (cls_word_is(verb, "rollout") && k + 1 < n &&
	        (cls_word_is(&v[k + 1], "status") || cls_word_is(&v[k + 1], "history")))
		tags = R;
	if (cls_word_is(verb, "version"))
		for (size_t i = k + 1; i < n; i++)
			if (cls_word_is(&v[i], "--client") || starts_with(&v[i], "--client="))
				tags = 0;
	c->tags |= tags;
	return 0;
}

/* ---- network programs of attack round 4 ---- */

/* delv, mdig, kdig, drill (dig's syntax), nsupdate, dnsperf, resperf: name lookups and
 * updates. */
static int t_dnstool(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const char *const diglike[] = {"delv", "mdig", "kdig", "drill", "khost", NULL};
	size_t bl;
	const char *b = v[0].s;
	for (const char *p = v[0].s; p < v[0].s + v[0].len; p++)
		if (*p == '/')
			b = p + 1;
	bl = (size_t)(v[0].s + v[0].len - b);
	if (cls_in_list(diglike, b, bl))
		return cls_rule_dns(c, v, n, flags);
	c->tags |= ALLOW_TAG_DNS;
	return 0;
}

/* ssh-keyscan HOST...: it opens SSH connections and reads the host keys. */
static int t_keyscan(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const struct cls_opts spec = {"fOpTt", NULL, NULL, 0, 0};
	c->tags |= ALLOW_TAG_SSH_READ;
	for (size_t i = operand(v, n, 1, &spec); i < n; i++)
		if (!(v[i].flags & CLS_W_EXP))
			cls_add_host(c, v[i].s, v[i].len);
	return 0;
}

/* ping, traceroute, arping, rdate, ntpdate, whois, nmap, ...: packets that are not HTTP. */
static int t_rawnet(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)v;
	(void)flags;
	if (n > 1)
		c->tags |= ALLOW_TAG_NET_RAW;
	return 0;
}

/* corepack: fetches the package manager a project names (corepack pnpm@8 ..., install,
 * prepare, use, up); enable and disable only write shims. */
static int t_corepack(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const char *const local[] = {
	        "enable", "disable", "help", "--help", "-h", "--version", "-v", NULL};
	size_t k = verb_at(v, n, "", NULL);
	if (k >= n && !(flags & CLS_C_XARGS))
		return 0;
	if (k < n && word_in(&v[k], local))
		return 0;
	package_tags(c, R, ALLOW_REG_NPM, 0);
	return 0;
}

/* rustup: toolchains, components and targets come from static.rust-lang.org (http:read);
 * `rustup run TOOLCHAIN CMD' runs CMD (attack round 4). */
static int t_rustup(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const char *const local[] = {"show", "which", "doc", "man", "completions", "help",
	        "override", "set", "--version", "-V", "--help", "-h", NULL};
	static const char *const lists[] = {"list", "remove", "uninstall", "link", NULL};
	size_t k = verb_at(v, n, "", NULL);
	if (k >= n) {
		if (flags & CLS_C_XARGS)
			c->tags |= R;
		return 0;
	}
	const struct cls_word *verb = &v[k];
	if (verb->flags & CLS_W_EXP)
		return cls_refuse(c, verb->off, "rustup verb is not static");
	if (word_in(verb, local))
		return 0;
	size_t m = verb_at(v + k, n - k, "", NULL) + k;
	if (cls_word_is(verb, "run")) {
		/* run [--install] TOOLCHAIN CMD... */
		for (size_t i = k + 1; i < m; i++)
			if (cls_word_is(&v[i], "--install"))
				c->tags |= R;
		if (m + 1 >= n)
			return 0;
		size_t cmd = m + 1;
		if (cls_word_is(&v[cmd], "--"))
			cmd++;
		return run_nested(c, v + cmd, n - cmd, flags);
	}
	if ((cls_word_is(verb, "toolchain") || cls_word_is(verb, "component") ||
	            cls_word_is(verb, "target") || cls_word_is(verb, "self")) &&
	        m < n && word_in(&v[m], lists))
		return 0;
	c->tags |= R; /* install, update, default, check, toolchain install, ... */
	return 0;
}

/* gpg: key server and web key directory commands (any unique prefix, as gpg's parser
 * takes): --recv-keys and the other lookups read, --send-keys writes. */
static int t_gpg(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	static const char *const reads[] = {"recv-keys", "receive-keys", "fetch-keys",
	        "search-keys", "refresh-keys", "locate-keys", "locate-external-keys",
	        "auto-key-locate", "auto-key-retrieve", NULL};
	for (size_t i = 1; i < n; i++) {
		const struct cls_word *w = &v[i];
		if (cls_word_is(w, "--"))
			break;
		if (w->flags & CLS_W_LEADEXP) {
			c->tags |= RW;
			continue;
		}
		if (w->len < 6 || w->s[0] != '-' || w->s[1] != '-')
			continue;
		const char *nm = w->s + 2;
		const char *eq = memchr(nm, '=', w->len - 2);
		size_t nl = eq ? (size_t)(eq - nm) : w->len - 2;
		if (nl >= 4 && nl <= 9 && memcmp(nm, "send-keys", nl) == 0)
			c->tags |= W;
		for (size_t k = 0; reads[k] != NULL; k++)
			if (nl >= 4 && nl <= strlen(reads[k]) && memcmp(nm, reads[k], nl) == 0)
				c->tags |= R;
	}
	return 0;
}

/* cpan, cpanm: modules come from CPAN mirrors (http:read). */
static int t_cpan(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)v;
	(void)flags;
	if (n > 1 || (flags & CLS_C_XARGS) || v[0].len == 4)
		c->tags |= R; /* `cpan' alone is CPAN's shell */
	return 0;
}

/* terraform, tofu: init and get download providers and modules (a module source may be
 * git::..., run through git); plan, apply and the rest talk to the providers' and the state
 * backend's APIs; fmt, validate and graph are local. */
static int t_terraform(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	static const char *const local[] = {"fmt", "validate", "graph", "version", "-version",
	        "--version", "-help", "--help", "-h", "help", NULL};
	static const char *const fetch[] = {"init", "get", NULL};
	size_t k = 1;
	while (k < n && v[k].len > 1 && v[k].s[0] == '-' && !(v[k].flags & CLS_W_LEADEXP) &&
	        !word_in(&v[k], local))
		k++; /* -chdir=DIR */
	if (k >= n) {
		if (flags & CLS_C_XARGS)
			c->tags |= RW | ALLOW_TAG_GIT_FETCH;
		return 0;
	}
	if (v[k].flags & CLS_W_EXP)
		return cls_refuse(c, v[k].off, "terraform verb is not static");
	if (word_in(&v[k], local))
		return 0;
	if (word_in(&v[k], fetch))
		c->tags |= R | ALLOW_TAG_GIT_FETCH;
	else
		c->tags |= RW;
	return 0;
}

/* zip -TT CMD / --unzip-command CMD: zip's test of the archive runs CMD with the archive's
 * name appended, through the shell (attack round 4). */
static int t_zip(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	for (size_t i = 1; i < n; i++) {
		const struct cls_word *w = &v[i];
		if (cls_word_is(w, "--"))
			break;
		struct cls_word cmd;
		if ((cls_word_is(w, "-TT") ||
		            (w->len >= 8 && w->len <= 15 &&
		                    memcmp(w->s, "--unzip-command", w->len) == 0)) &&
		        i + 1 < n) {
			cmd = v[++i];
		} else if (w->len > 3 && memcmp(w->s, "-TT", 3) == 0) {
			cmd = *w;
			cmd.s += 3;
			cmd.len -= 3;
			if (cmd.s[0] == '=') {
				cmd.s++;
				cmd.len--;
			}
		} else if (w->len > 16 && memcmp(w->s, "--unzip-command=", 16) == 0) {
			cmd = *w;
			cmd.s += 16;
			cmd.len -= 16;
		} else {
			continue;
		}
		if (run_script_word(c, &cmd, "zip's unzip command") == -1)
			return -1;
	}
	return 0;
}

/* man -P PAGER / --pager=PAGER, -H[BROWSER] / --html[=BROWSER]: man runs the command (on a
 * terminal; attack round 4).  MANPAGER is a command variable (wrappers.c). */
static int t_man(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags)
{
	(void)flags;
	for (size_t i = 1; i < n; i++) {
		const struct cls_word *w = &v[i];
		if (cls_word_is(w, "--"))
			break;
		if (w->len < 2 || w->s[0] != '-')
			continue;
		struct cls_word cmd = *w;
		if (w->s[1] == '-') {
			const char *eq = memchr(w->s, '=', w->len);
			size_t nl = eq ? (size_t)(eq - w->s - 2) : w->len - 2;
			int pager = nl >= 2 && nl <= 5 && memcmp(w->s + 2, "pager", nl) == 0;
			int html = nl >= 2 && nl <= 4 && memcmp(w->s + 2, "html", nl) == 0;
			if (!pager && !html)
				continue;
			if (eq != NULL) {
				cmd.s = eq + 1;
				cmd.len = w->len - (size_t)(eq + 1 - w->s);
			} else if (pager && i + 1 < n) {
				cmd = v[++i];
			} else {
				continue;
			}
		} else {
			const char *p = memchr(w->s, 'P', w->len);
			const char *h = memchr(w->s, 'H', w->len);
			const char *o = p != NULL && (h == NULL || p < h) ? p : h;
			if (o == NULL)
				continue;
			if (o + 1 < w->s + w->len) {
				cmd.s = o + 1;
				cmd.len = (size_t)(w->s + w->len - o - 1);
			} else if (o == p && i + 1 < n) {
				cmd = v[++i];
			} else {
				continue;
			}
		}
		if (run_script_word(c, &cmd, "man's pager or browser") == -1)
			return -1;
	}
	return 0;
}

#undef R
#undef W

struct tool {
	const char *name; /* program basename */
	int (*fn)(struct cls_ctx *c, const struct cls_word *v, size_t n, unsigned flags);
};

/* Sorted by name (strcmp order) for bsearch. */
static const struct tool tools[] = {
        {"apk", t_apk},
        {"apt", t_apt},
        {"apt-get", t_apt},
        {"aptitude", t_apt},
        {"arping", t_rawnet},
        {"aws", t_aws},
        {"az", t_az},
        {"brew", t_brew},
        {"buildah", t_buildah},
        {"bun", t_bun},
        {"bundle", t_bundle},
        {"bundler", t_bundle},
        {"bunx", t_bunx},
        {"cargo", t_cargo},
        {"composer", t_composer},
        {"corepack", t_corepack},
        {"cpan", t_cpan},
        {"cpanm", t_cpan},
        {"delv", t_dnstool},
        {"deno", t_deno},
        {"dnf", t_dnf},
        {"dnsperf", t_dnstool},
        {"docker", t_docker},
        {"drill", t_dnstool},
        {"flit", t_flit},
        {"fping", t_rawnet},
        {"ftp", t_ftp},
        {"ftpget", t_ftpput},
        {"ftpput", t_ftpput},
        {"gcloud", t_gcloud},
        {"gem", t_gem},
        {"gnutls-cli", t_gnutls_cli},
        {"go", t_go},
        {"gpg", t_gpg},
        {"gpg2", t_gpg},
        {"gradle", t_gradle},
        {"gradlew", t_gradle},
        {"grpcurl", t_grpcurl},
        {"gsutil", t_gsutil},
        {"hatch", t_hatch},
        {"helm", t_helm},
        {"hg", t_hg},
        {"hping3", t_rawnet},
        {"kdig", t_dnstool},
        {"khost", t_dnstool},
        {"knsupdate", t_dnstool},
        {"kubectl", t_kubectl},
        {"lftp", t_lftp},
        {"lua", t_lua},
        {"luajit", t_lua},
        {"man", t_man},
        {"mariadb", t_sql_client},
        {"mdig", t_dnstool},
        {"microdnf", t_dnf},
        {"mongo", t_mongo},
        {"mongodump", t_mongo},
        {"mongorestore", t_mongo},
        {"mongosh", t_mongo},
        {"msmtp", t_mailer},
        {"mtr", t_rawnet},
        {"mvn", t_mvn},
        {"mvnw", t_mvn},
        {"mysql", t_sql_client},
        {"mysqldump", t_sql_client},
        {"nc", t_nc},
        {"nc.openbsd", t_nc},
        {"nc.traditional", t_nc},
        {"ncat", t_nc},
        {"nerdctl", t_docker},
        {"netcat", t_nc},
        {"nmap", t_rawnet},
        {"node", t_node},
        {"nodejs", t_node},
        {"nping", t_rawnet},
        {"npm", t_npm},
        {"nsupdate", t_dnstool},
        {"ntpd", t_rawnet},
        {"ntpdate", t_rawnet},
        {"openssl", t_openssl},
        {"perl", t_perl},
        {"pg_dump", t_sql_client},
        {"pg_dumpall", t_sql_client},
        {"pg_restore", t_sql_client},
        {"php", t_php},
        {"ping", t_rawnet},
        {"ping6", t_rawnet},
        {"pip", t_pip},
        {"pipx", t_pipx},
        {"pnpm", t_pnpm},
        {"podman", t_docker},
        {"poetry", t_poetry},
        {"psql", t_sql_client},
        {"pypy", t_python},
        {"python", t_python},
        {"rclone", t_rclone},
        {"rdate", t_rawnet},
        {"redis-cli", t_redis_cli},
        {"resperf", t_dnstool},
        {"ruby", t_ruby},
        {"rustup", t_rustup},
        {"sendmail", t_mailer},
        {"skopeo", t_skopeo},
        {"sntp", t_rawnet},
        {"socat", t_socat},
        {"ssh-copy-id", t_ssh_copy_id},
        {"ssh-keyscan", t_keyscan},
        {"ssl_client", t_rawnet},
        {"svn", t_svn},
        {"swaks", t_mailer},
        {"telnet", t_telnet},
        {"terraform", t_terraform},
        {"tftp", t_tftp},
        {"tofu", t_terraform},
        {"tracepath", t_rawnet},
        {"traceroute", t_rawnet},
        {"traceroute6", t_rawnet},
        {"twine", t_twine},
        {"udhcpc", t_rawnet},
        {"websocat", t_websocat},
        {"whois", t_rawnet},
        {"yarn", t_yarn},
        {"yum", t_dnf},
        {"zip", t_zip},
};

/* The tool named name (NUL-terminated), or NULL.  A binary search that compares the first
 * byte before calling strcmp: most programs are no tool (cd, make, grep), and this lookup runs
 * for each of them. */
static const struct tool *find_tool(const char *name)
{
	size_t lo = 0, hi = sizeof tools / sizeof tools[0];
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const char *t = tools[mid].name;
		int d = (unsigned char)name[0] - (unsigned char)t[0];
		if (d == 0 && name[0] != '\0')
			d = (unsigned char)name[1] - (unsigned char)t[1];
		if (d == 0 && name[0] != '\0' && name[1] != '\0')
			d = strcmp(name + 2, t + 2);
		if (d == 0)
			return &tools[mid];
		if (d < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* Versioned names run the same program: python3.12, pip3, php8.2, perl5.36, ruby3.1, node18. */
static const char *const versioned[] = {"lua", "node", "perl", "php", "pip", "pypy", "python",
        "ruby", NULL};

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
			t = find_tool(name);
	}
	if (t == NULL)
		t = find_tool(base);
	if (t == NULL)
		return 0;
	return t->fn(c, v, n, flags);
}
