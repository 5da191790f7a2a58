/* egressd exec (docs/design.md 1.2 and 8): one command under a private egressd.
 *
 *   egressd exec [-c FILE] [--session S] [--allow PATTERN]... [--deny-action TAG]...
 *                [--inspect PATTERN]... [--audit FILE] [--isolate] -- CMD ARGS
 *
 * Without -c the config is built from the flags (one session, "exec": --allow patterns into
 * allowDomains with enforce: sandbox, --deny-action into actions, --inspect into inspect); with
 * -c the file's sessions, bounds, dns and limits are used, its listeners are not (this egressd
 * listens only for CMD), and every connection belongs to --session S (default "default").
 *
 * Without --isolate, egressd listens on ephemeral loopback ports and CMD gets the proxy
 * variables (cooperative: a program that ignores them goes around).  With --isolate CMD runs in
 * its own user, network and mount namespaces (proxy/isolate.c) whose only interface is lo:
 * egressd's listeners are made inside it (the proxy on 127.0.0.1:3128, SOCKS5 on 1080, and the
 * transparent and DNS listeners every other TCP connection and every DNS query is redirected
 * to); DNS answers there are mapped, so every connection has a name; everything else is
 * dropped.  CMD's standard input, terminal and signals are its own; egressd exits with CMD's
 * status after draining, and prints one line per denied destination. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include <netinet/in.h>

#include "allowlist/tags.h"
#include "proxy/ca.h"
#include "proxy/isolate.h"
#include "proxy/proxy.h"
#include "proxy/tlsctx.h"

extern char **environ;

#define EXEC_SESSION "exec"
#define ISOLATED_PROXY_PORT 3128 /* inside the namespace: it is new and empty */
#define ISOLATED_SOCKS_PORT 1080
#define MAX_FLAGS 256
#define MAX_DENIED 256

/* One denied destination for the summary. */
struct denied {
	char key[ALLOW_HOST_BUF + 64]; /* "host:port reason" */
	char what[ALLOW_HOST_BUF + 16];/* host:port as a person writes it */
	const char *reason;
	char rule[200];
	char detail[400];
	unsigned count;
};

struct exec_state {
	/* the command line */
	const char *config;
	const char *session;
	const char *allow[MAX_FLAGS], *deny[MAX_FLAGS], *inspect[MAX_FLAGS];
	size_t nallow, ndeny, ninspect;
	const char *audit;
	int isolate;
	char **argv;
	/* running */
	char self[PATH_MAX];          /* this program, for GIT_SSH_COMMAND */
	char tmpdir[64];              /* the trust bundle's folder, removed at the end */
	char bundle[128];             /* its path, "" when nothing is inspected */
	int inspects;                 /* some session inspects */
	struct proxy_isolate_sock socks[PROXY_ISOLATE_MAX_SOCKS];
	size_t nsocks;
	struct proxy_isolate_child *child;
	int sfd;                      /* the signalfd */
	struct event *exit_ev, *sig_ev;
	struct proxy_server *srv;
	int code;                     /* CMD's status, -1 while it runs */
	char **envp;                  /* CMD's environment (owned) */
	size_t nenv, capenv;
	struct denied denied[MAX_DENIED];
	size_t ndenied;
	unsigned long more_denied;    /* denials past MAX_DENIED destinations */
};

static int usage(void)
{
	fputs("usage: egressd exec [-c FILE] [--session S] [--allow PATTERN]... "
	      "[--deny-action TAG]...\n"
	      "                    [--inspect PATTERN]... [--audit FILE] [--isolate] -- CMD [ARGS]\n",
	        stderr);
	return 2;
}

/* ---- the environment ---- */

static int env_add(struct exec_state *x, const char *name, const char *value)
{
	size_t nl = strlen(name);
	for (size_t i = 0; i < x->nenv; i++)
		if (strncmp(x->envp[i], name, nl) == 0 && x->envp[i][nl] == '=') {
			free(x->envp[i]);
			x->envp[i] = x->envp[--x->nenv];
			break;
		}
	if (value == NULL)
		return 0;
	if (x->nenv + 2 > x->capenv) {
		size_t ncap = x->capenv ? 2 * x->capenv : 64;
		char **n = realloc(x->envp, ncap * sizeof *n);
		if (n == NULL)
			return -1;
		x->envp = n;
		x->capenv = ncap;
	}
	size_t len = nl + 1 + strlen(value) + 1;
	char *e = malloc(len);
	if (e == NULL)
		return -1;
	snprintf(e, len, "%s=%s", name, value);
	x->envp[x->nenv++] = e;
	x->envp[x->nenv] = NULL;
	return 0;
}

/* CMD's environment: egressd's own, with every proxy setting pointing at this egressd. */
static int build_env(struct exec_state *x, unsigned proxy_port, unsigned socks_port)
{
	for (char **e = environ; *e != NULL; e++) {
		const char *eq = strchr(*e, '=');
		if (eq == NULL)
			continue;
		char name[256];
		snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
		if (env_add(x, name, eq + 1) == -1)
			return -1;
	}
	char http[64], socks[64], java[512], ssh[PATH_MAX + 160];
	snprintf(http, sizeof http, "http://127.0.0.1:%u", proxy_port);
	snprintf(socks, sizeof socks, "socks5h://127.0.0.1:%u", socks_port);
	const char *old_java = getenv("JAVA_TOOL_OPTIONS");
	snprintf(java, sizeof java,
	        "%s%s-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=%u -Dhttps.proxyHost=127.0.0.1 "
	        "-Dhttps.proxyPort=%u -Dhttp.nonProxyHosts=",
	        old_java ? old_java : "", old_java ? " " : "", proxy_port, proxy_port);
	snprintf(ssh, sizeof ssh, "ssh -o ProxyCommand='%s connect --proxy %s %%h %%p'", x->self,
	        http);
	static const char *const cleared[] = {"NO_PROXY", "no_proxy", NULL};
	for (size_t i = 0; cleared[i] != NULL; i++)
		env_add(x, cleared[i], NULL);
	const char *const set[][2] = {
	        {"HTTP_PROXY", http}, {"HTTPS_PROXY", http}, {"http_proxy", http},
	        {"https_proxy", http}, {"ALL_PROXY", socks}, {"all_proxy", socks},
	        {"npm_config_proxy", http}, {"npm_config_https_proxy", http},
	        {"NODE_USE_ENV_PROXY", "1"}, {"GLOBAL_AGENT_HTTP_PROXY", http},
	        {"JAVA_TOOL_OPTIONS", java}, {"GIT_SSH_COMMAND", ssh},
	};
	for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
		if (env_add(x, set[i][0], set[i][1]) == -1)
			return -1;
	if (x->bundle[0])
		for (const struct proxy_ca_env *e = proxy_ca_trust_env; e->name != NULL; e++)
			if (env_add(x, e->name, x->bundle) == -1)
				return -1;
	return 0;
}

/* ---- the config ---- */

/* A YAML double-quoted scalar of s. */
static void yaml_quote(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void yaml_list(FILE *f, const char *key, const char *const *v, size_t n)
{
	fprintf(f, "        %s: [", key);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputs(", ", f);
		yaml_quote(f, v[i]);
	}
	fputs("]\n", f);
}

/* The default audit log of a config built from flags: $XDG_STATE_HOME/egressd (or
 * ~/.local/state/egressd) /exec-TIME-PID.jsonl, said in the summary. */
static int default_audit(char *out, size_t cap)
{
	const char *state = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");
	char dir[PATH_MAX];
	if (state != NULL && state[0] == '/')
		snprintf(dir, sizeof dir, "%s/egressd", state);
	else if (home != NULL && home[0] == '/')
		snprintf(dir, sizeof dir, "%s/.local/state/egressd", home);
	else
		snprintf(dir, sizeof dir, "/tmp/egressd-%u", (unsigned)getuid());
	/* mkdir -p, mode 0700 for what it makes. */
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(dir, 0700);
		*p = '/';
	}
	if (mkdir(dir, 0700) == -1 && errno != EEXIST)
		return -1;
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	char stamp[32];
	strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
	snprintf(out, cap, "%s/exec-%s-%ld.jsonl", dir, stamp, (long)getpid());
	return 0;
}

static struct allow_config *flags_config(struct exec_state *x)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (f == NULL)
		return NULL;
	char audit[PATH_MAX];
	if (x->audit != NULL)
		snprintf(audit, sizeof audit, "%s", x->audit);
	else if (default_audit(audit, sizeof audit) == -1) {
		fclose(f);
		free(text);
		fprintf(stderr, "egressd: exec: cannot make a folder for the audit log: %s; give "
		                "--audit FILE\n",
		        strerror(errno));
		return NULL;
	}
	fputs("limits: {shutdownGrace: 2s, maxClients: 1024}\naudit: {path: ", f);
	yaml_quote(f, audit);
	fputs("}\nsessions:\n  " EXEC_SESSION ":", f);
	if (x->nallow + x->ndeny + x->ninspect == 0)
		fputs(" {}\n", f);
	else
		fputs("\n    bound:\n      network:\n", f);
	if (x->nallow > 0) {
		yaml_list(f, "allowDomains", x->allow, x->nallow);
		fputs("        enforce: sandbox\n", f);
	}
	if (x->ndeny > 0)
		yaml_list(f, "actions", x->deny, x->ndeny);
	if (x->ninspect > 0)
		yaml_list(f, "inspect", x->inspect, x->ninspect);
	fclose(f);
	struct allow_errors errs = {0};
	struct allow_config *cfg = allow_config_load_buffer("egressd exec flags", text, len, &errs);
	for (size_t i = 0; i < errs.n; i++)
		fprintf(stderr, "egressd: %s\n", errs.lines[i]);
	allow_errors_free(&errs);
	free(text);
	return cfg;
}

static int set_list(char ***list, size_t *n, const char *value)
{
	for (size_t i = 0; i < *n; i++)
		free((*list)[i]);
	free(*list);
	*list = NULL;
	*n = 0;
	if (value == NULL)
		return 0;
	*list = calloc(2, sizeof **list);
	if (*list == NULL || ((*list)[0] = strdup(value)) == NULL)
		return -1;
	*n = 1;
	return 0;
}

/* This egressd listens only for CMD: the config's own listeners are replaced. */
static int own_listeners(struct exec_state *x, struct allow_config *cfg)
{
	const char *tcp = x->isolate ? NULL : "127.0.0.1:0";
	if (set_list(&cfg->listen_proxy, &cfg->nlisten_proxy, tcp) == -1 ||
	        set_list(&cfg->listen_socks5, &cfg->nlisten_socks5, tcp) == -1 ||
	        set_list(&cfg->listen_transparent, &cfg->nlisten_transparent, NULL) == -1 ||
	        set_list(&cfg->listen_dns, &cfg->nlisten_dns, NULL) == -1)
		return -1;
	free(cfg->listen_control);
	free(cfg->listen_metrics);
	cfg->listen_control = cfg->listen_metrics = NULL;
	if (x->isolate)
		cfg->listen_dns_answers = ALLOW_DNS_ANSWERS_MAPPED;
	if (x->audit != NULL) {
		free(cfg->audit_path);
		cfg->audit_path = strdup(x->audit);
		if (cfg->audit_path == NULL)
			return -1;
	}
	for (size_t i = 0; i < cfg->nsessions; i++)
		if (cfg->sessions[i].bound.inspect != NULL)
			x->inspects = 1;
	return 0;
}

/* ---- the summary ---- */

static void on_denied(void *arg, const struct proxy_conn *c, const struct proxy_outcome *o)
{
	struct exec_state *x = arg;
	char what[ALLOW_HOST_BUF + 16];
	if (c->rq.dest.host[0] == '\0')
		snprintf(what, sizeof what, "(no destination)");
	else if (c->rq.dest.kind == ALLOW_HOST_IPV6)
		snprintf(what, sizeof what, "[%s]:%u", c->rq.dest.host, c->rq.dest.port);
	else
		snprintf(what, sizeof what, "%s:%u", c->rq.dest.host, c->rq.dest.port);
	char key[sizeof x->denied[0].key];
	snprintf(key, sizeof key, "%s %s", what, o->reason);
	for (size_t i = 0; i < x->ndenied; i++)
		if (strcmp(x->denied[i].key, key) == 0) {
			x->denied[i].count++;
			return;
		}
	if (x->ndenied == MAX_DENIED) {
		x->more_denied++;
		return;
	}
	struct denied *d = &x->denied[x->ndenied++];
	snprintf(d->key, sizeof d->key, "%s", key);
	snprintf(d->what, sizeof d->what, "%s", what);
	d->reason = o->reason;
	snprintf(d->rule, sizeof d->rule, "%s", o->rule);
	snprintf(d->detail, sizeof d->detail, "%s", o->detail);
	d->count = 1;
}

/* With a config built from flags, the flag that would allow it: --allow for a host, dropping
 * --deny-action for an action (the quoted word the detail names). */
static void flag_hint(const struct denied *d, char *buf, size_t cap)
{
	buf[0] = '\0';
	const char *q = strchr(d->detail, '"');
	const char *e = q != NULL ? strchr(q + 1, '"') : NULL;
	if (e == NULL)
		return;
	int n = (int)(e - q - 1);
	if (strcmp(d->reason, "host-not-allowed") == 0 || strcmp(d->reason, "port-not-allowed") == 0 ||
	        strcmp(d->reason, "ip-literal") == 0)
		snprintf(buf, cap, " (egressd exec --allow %.*s)", n, q + 1);
	else if (strcmp(d->reason, "action-denied") == 0)
		snprintf(buf, cap, " (egressd exec without --deny-action %.*s)", n, q + 1);
}

static void print_summary(struct exec_state *x, const char *audit_path)
{
	for (size_t i = 0; i < x->ndenied; i++) {
		const struct denied *d = &x->denied[i];
		char hint[300] = "";
		if (x->config == NULL)
			flag_hint(d, hint, sizeof hint);
		fprintf(stderr, "egressd: denied %s: %s%s%s%s, %u time%s. %s%s\n", d->what, d->reason,
		        d->rule[0] ? " (" : "", d->rule, d->rule[0] ? ")" : "", d->count,
		        d->count == 1 ? "" : "s", d->detail, hint);
	}
	if (x->more_denied > 0)
		fprintf(stderr, "egressd: %lu more denials (see the audit log)\n", x->more_denied);
	if (x->ndenied > 0)
		fprintf(stderr, "egressd: the audit log: %s\n", audit_path);
}

/* ---- running CMD ---- */

static void child_exit_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct exec_state *x = arg;
	int code;
	if (proxy_isolate_reap(x->child, &code) != 1)
		return;
	x->code = code;
	event_del(x->exit_ev);
	event_del(x->sig_ev);
	proxy_server_stop(x->srv, "the command exited");
}

static void signal_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct exec_state *x = arg;
	int usr1 = 0;
	proxy_isolate_signals_forward(x->child, x->sfd, NULL, &usr1);
	/* SIGUSR1 is egressd's, as under serve: the audit log was rotated. */
	if (usr1 > 0 && x->srv != NULL && audit_reopen(x->srv->audit) == -1)
		fprintf(stderr, "egressd: audit reopen: %s\n", audit_last_error(x->srv->audit));
}

/* The listeners are open: CMD may run. */
static int ready(struct proxy_server *srv, void *arg)
{
	struct exec_state *x = arg;
	char err[512];
	x->srv = srv;
	if (x->bundle[0]) {
		const struct proxy_tls *tls = srv->gen->tls;
		if (tls == NULL || tls->ca == NULL ||
		        proxy_ca_bundle_write(tls->ca, proxy_ca_system_bundle(), x->bundle, NULL, err,
		                sizeof err) == -1) {
			fprintf(stderr, "egressd: exec: the trust bundle: %s\n",
			        tls && tls->ca ? err : "no CA");
			return -1;
		}
	}
	if (!x->isolate) {
		unsigned proxy = 0, socks = 0;
		for (size_t i = 0; i < srv->nlisteners; i++) {
			const struct sockaddr_in *s4 = (const struct sockaddr_in *)&srv->listeners[i].addr;
			if (srv->listeners[i].kind == PROXY_LISTEN_HTTP)
				proxy = ntohs(s4->sin_port);
			else if (srv->listeners[i].kind == PROXY_LISTEN_SOCKS5)
				socks = ntohs(s4->sin_port);
		}
		if (build_env(x, proxy, socks) == -1)
			return -1;
		struct proxy_isolate_opts o = {.namespaces = 0, .argv = x->argv, .envp = x->envp};
		x->child = proxy_isolate_start(&o, err, sizeof err);
		if (x->child == NULL) {
			fprintf(stderr, "egressd: exec: %s\n", err);
			return -1;
		}
	}
	x->exit_ev = event_new(srv->base, proxy_isolate_exit_fd(x->child), EV_READ | EV_PERSIST,
	        child_exit_cb, x);
	x->sig_ev = event_new(srv->base, x->sfd, EV_READ | EV_PERSIST, signal_cb, x);
	if (x->exit_ev == NULL || x->sig_ev == NULL || event_add(x->exit_ev, NULL) == -1 ||
	        event_add(x->sig_ev, NULL) == -1)
		return -1;
	if (proxy_isolate_go(x->child, err, sizeof err) == -1)
		fprintf(stderr, "egressd: exec: %s\n", err); /* CMD exits 126 or 127 */
	return 0;
}

/* The loop ended: its events go before the base does. */
static void done(struct proxy_server *srv, void *arg)
{
	(void)srv;
	struct exec_state *x = arg;
	if (x->exit_ev != NULL)
		event_free(x->exit_ev);
	if (x->sig_ev != NULL)
		event_free(x->sig_ev);
	x->exit_ev = x->sig_ev = NULL;
}

/* The sockets --isolate makes inside CMD's namespace. */
static void isolate_socks(struct exec_state *x)
{
	static const struct proxy_isolate_sock want[] = {
	        {PROXY_ISOLATE_PLAIN, SOCK_STREAM, AF_INET, ISOLATED_PROXY_PORT, -1},
	        {PROXY_ISOLATE_PLAIN, SOCK_STREAM, AF_INET, ISOLATED_SOCKS_PORT, -1},
	        {PROXY_ISOLATE_TRANSPARENT, SOCK_STREAM, AF_INET, 0, -1},
	        {PROXY_ISOLATE_TRANSPARENT, SOCK_STREAM, AF_INET6, 0, -1},
	        {PROXY_ISOLATE_DNS, SOCK_DGRAM, AF_INET, 0, -1},
	        {PROXY_ISOLATE_DNS, SOCK_STREAM, AF_INET, 0, -1},
	        {PROXY_ISOLATE_DNS, SOCK_DGRAM, AF_INET6, 0, -1},
	        {PROXY_ISOLATE_DNS, SOCK_STREAM, AF_INET6, 0, -1},
	};
	x->nsocks = sizeof want / sizeof want[0];
	memcpy(x->socks, want, sizeof want);
}

static int parse_args(struct exec_state *x, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **one = NULL;
		const char **list = NULL;
		size_t *n = NULL;
		if (strcmp(a, "--") == 0) {
			if (i + 1 >= argc)
				return -1;
			x->argv = argv + i + 1;
			return 0;
		} else if (strcmp(a, "--isolate") == 0) {
			x->isolate = 1;
			continue;
		} else if (strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0) {
			one = &x->config;
		} else if (strcmp(a, "--session") == 0) {
			one = &x->session;
		} else if (strcmp(a, "--audit") == 0) {
			one = &x->audit;
		} else if (strcmp(a, "--allow") == 0) {
			list = x->allow;
			n = &x->nallow;
		} else if (strcmp(a, "--deny-action") == 0) {
			list = x->deny;
			n = &x->ndeny;
		} else if (strcmp(a, "--inspect") == 0) {
			list = x->inspect;
			n = &x->ninspect;
		} else {
			fprintf(stderr, "egressd: exec: unexpected argument \"%s\" (the command goes "
			                "after --)\n",
			        a);
			return -1;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "egressd: exec: %s needs a value\n", a);
			return -1;
		}
		if (one != NULL) {
			*one = argv[++i];
		} else {
			if (*n == MAX_FLAGS)
				return -1;
			list[(*n)++] = argv[++i];
		}
	}
	fprintf(stderr, "egressd: exec: no command (give it after --)\n");
	return -1;
}

int proxy_exec_main(int argc, char **argv)
{
	struct exec_state x;
	memset(&x, 0, sizeof x);
	x.code = -1;
	x.sfd = -1;
	if (parse_args(&x, argc, argv) == -1)
		return usage();
	if (x.config != NULL && (x.nallow || x.ndeny || x.ninspect)) {
		fprintf(stderr, "egressd: exec: --allow, --deny-action and --inspect build a config; "
		                "with -c the config's bound applies (edit the file)\n");
		return 2;
	}
	if (x.config == NULL && x.session != NULL) {
		fprintf(stderr, "egressd: exec: --session names a session of the -c config\n");
		return 2;
	}
	ssize_t sl = readlink("/proc/self/exe", x.self, sizeof x.self - 1);
	if (sl <= 0)
		snprintf(x.self, sizeof x.self, "egressd");
	else
		x.self[sl] = '\0';

	struct allow_config *cfg;
	if (x.config != NULL) {
		struct allow_errors errs = {0};
		cfg = allow_config_load(x.config, &errs);
		for (size_t i = 0; i < errs.n; i++)
			fprintf(stderr, "egressd: %s\n", errs.lines[i]);
		allow_errors_free(&errs);
		if (cfg == NULL)
			return 2;
		if (x.session == NULL)
			x.session = "default";
		if (allow_config_session(cfg, x.session) == NULL) {
			fprintf(stderr, "egressd: exec: %s has no session %s (name one with --session)\n",
			        x.config, x.session);
			allow_config_free(cfg);
			return 2;
		}
	} else {
		cfg = flags_config(&x);
		if (cfg == NULL)
			return 2;
		x.session = EXEC_SESSION;
	}
	if (own_listeners(&x, cfg) == -1) {
		fprintf(stderr, "egressd: exec: out of memory\n");
		allow_config_free(cfg);
		return 2;
	}
	char audit_path[PATH_MAX];
	snprintf(audit_path, sizeof audit_path, "%s", cfg->audit_path);
	if (x.inspects) {
		snprintf(x.tmpdir, sizeof x.tmpdir, "/tmp/egressd-exec-XXXXXX");
		if (mkdtemp(x.tmpdir) == NULL) {
			fprintf(stderr, "egressd: exec: a folder for the trust bundle: %s\n",
			        strerror(errno));
			allow_config_free(cfg);
			return 2;
		}
		snprintf(x.bundle, sizeof x.bundle, "%s/bundle.pem", x.tmpdir);
	}

	/* Signals first, so that none is lost while CMD starts. */
	x.sfd = proxy_isolate_signals_open();
	if (x.sfd == -1) {
		fprintf(stderr, "egressd: exec: signalfd: %s\n", strerror(errno));
		allow_config_free(cfg);
		return 2;
	}
	struct proxy_run_sock rsocks[4];
	int dns[2][2] = {{-1, -1}, {-1, -1}};
	struct proxy_run run = {.cfg = cfg, .tls_exec = 1, .session = x.session, .quiet = 1,
	        .ready = ready, .done = done, .denied = on_denied, .arg = &x};
	int rc = 2;
	if (x.isolate) {
		isolate_socks(&x);
		if (build_env(&x, ISOLATED_PROXY_PORT, ISOLATED_SOCKS_PORT) == -1) {
			fprintf(stderr, "egressd: exec: out of memory\n");
			allow_config_free(cfg);
			goto out;
		}
		char err[512];
		struct proxy_isolate_opts o = {.namespaces = 1, .argv = x.argv, .envp = x.envp,
		        .socks = x.socks, .nsocks = x.nsocks};
		x.child = proxy_isolate_start(&o, err, sizeof err);
		if (x.child == NULL) {
			fprintf(stderr, "egressd: exec --isolate: %s; the command did not run\n", err);
			allow_config_free(cfg);
			goto out;
		}
		static const enum proxy_listen_kind kinds[4] = {PROXY_LISTEN_HTTP, PROXY_LISTEN_SOCKS5,
		        PROXY_LISTEN_TRANSPARENT, PROXY_LISTEN_TRANSPARENT};
		for (size_t i = 0; i < 4; i++) {
			rsocks[i].fd = x.socks[i].fd;
			rsocks[i].kind = kinds[i];
			x.socks[i].fd = -1;
		}
		dns[0][0] = x.socks[4].fd;
		dns[0][1] = x.socks[5].fd;
		dns[1][0] = x.socks[6].fd;
		dns[1][1] = x.socks[7].fd;
		for (size_t i = 4; i < 8; i++)
			x.socks[i].fd = -1;
		run.socks = rsocks;
		run.nsocks = 4;
		run.dns_fds = dns;
		run.ndns = 2;
	}
	int served = proxy_run(&run);
	if (x.code == -1 && x.child != NULL) {
		/* egressd stopped first (a config or start-up failure): CMD does not outlive it. */
		proxy_isolate_free(x.child);
		x.child = NULL;
		rc = served != 0 ? served : 1;
	} else {
		rc = x.code;
	}
	print_summary(&x, audit_path);
out:
	for (size_t i = 0; i < 4 && run.socks != NULL; i++)
		if (rsocks[i].fd != -1)
			close(rsocks[i].fd);
	for (size_t i = 0; i < 2; i++)
		for (size_t j = 0; j < 2; j++)
			if (dns[i][j] != -1)
				close(dns[i][j]);
	proxy_isolate_free(x.child);
	proxy_isolate_signals_close(x.sfd);
	for (size_t i = 0; i < x.nenv; i++)
		free(x.envp[i]);
	free(x.envp);
	if (x.bundle[0]) {
		unlink(x.bundle);
		rmdir(x.tmpdir);
	}
	return rc;
}
