/* egressd: command dispatch (docs/design.md section 8). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <http_parser.h>

#include "allowlist/config.h"
#include "audit/audit.h"
#include "classifier/classifier.h"
#include "proxy/connect.h"
#include "proxy/ca.h"
#include "proxy/proxy.h"
#include "proxy/tlsctx.h"

#define DEFAULT_CONFIG "/etc/egressd/egressd.yaml"

static void usage(FILE *out)
{
	fputs("usage: egressd serve [-c FILE]          run the proxy in the foreground\n"
	      "       egressd check [-c FILE]          validate a config, print each session's bound\n"
	      "       egressd classify [--json] [-c FILE --session S] -- 'CMD'\n"
	      "                                        network actions of a shell command line\n"
	      "       egressd exec [-c FILE] [--session S] [--allow PATTERN]... [--deny-action TAG]...\n"
	      "                    [--inspect PATTERN]... [--audit FILE] [--isolate] -- CMD [ARGS]\n"
	      "                                        run CMD behind a private egressd\n"
	      "       egressd connect [--proxy URL] HOST PORT\n"
	      "                                        standard input and output through a tunnel\n"
	      "       egressd ca init DIR [--permit PATTERN]...\n"
	      "                                        write a CA for TLS inspection\n"
	      "       egressd ca bundle [-c FILE]      write the trust bundle of tls.ca, print its path\n"
	      "       egressd audit verify FILE        check an audit log's hash chain\n"
	      "       egressd version\n",
		out);
}

/* Parses "[-c FILE]" for serve and check.  Returns 0, or -1 after printing why. */
static int config_arg(int argc, char **argv, const char **path)
{
	*path = DEFAULT_CONFIG;
	for (int i = 2; i < argc; i++) {
		if ((strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) && i + 1 < argc) {
			*path = argv[++i];
		} else {
			fprintf(stderr, "egressd: %s: unexpected argument \"%s\"\n", argv[1], argv[i]);
			usage(stderr);
			return -1;
		}
	}
	return 0;
}

static int cmd_check(const char *path)
{
	struct allow_errors errs = {0};
	struct allow_config *cfg = allow_config_load(path, &errs);
	if (cfg == NULL) {
		for (size_t i = 0; i < errs.n; i++)
			fprintf(stderr, "egressd: %s\n", errs.lines[i]);
		fprintf(stderr, "egressd: %s: %zu error%s\n", path, errs.n, errs.n == 1 ? "" : "s");
		allow_errors_free(&errs);
		return 2;
	}
	/* The CA and the upstream trust, judged as serve needs them. */
	struct proxy_tls *tls = proxy_tls_new(cfg, PROXY_TLS_SERVE, time(NULL), &errs);
	if (tls == NULL) {
		for (size_t i = 0; i < errs.n; i++)
			fprintf(stderr, "egressd: %s\n", errs.lines[i]);
		fprintf(stderr, "egressd: %s: %zu error%s\n", path, errs.n, errs.n == 1 ? "" : "s");
		allow_errors_free(&errs);
		allow_config_free(cfg);
		return 2;
	}
	allow_errors_free(&errs);
	printf("%s: ok\n", path);
	/* Where decisions go on record, and how (docs/audit.md). */
	printf("audit: %s (chain: %s, fsync: %s)\n",
		strcmp(cfg->audit_path, "-") == 0 ? "standard output" : cfg->audit_path,
		cfg->audit_chain ? "on" : "off", cfg->audit_fsync ? "on" : "off");
	allow_config_print(cfg, stdout);
	proxy_tls_print(tls, cfg, stdout);
	proxy_tls_free(tls);
	allow_config_free(cfg);
	return 0;
}

static int cmd_audit(int argc, char **argv)
{
	if (argc != 4 || strcmp(argv[2], "verify") != 0) {
		usage(stderr);
		return 2;
	}
	char err[512] = "";
	int rc = audit_verify(argv[3], err, sizeof err);
	if (rc == 0) {
		printf("%s: chain intact\n", argv[3]);
		return 0;
	}
	fprintf(stderr, "egressd: %s: %s\n", argv[3], err);
	return rc == 1 ? 1 : 2;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	const char *path;
	if (strcmp(cmd, "serve") == 0) {
		if (config_arg(argc, argv, &path) == -1)
			return 2;
		return proxy_serve(path);
	}
	if (strcmp(cmd, "check") == 0) {
		if (config_arg(argc, argv, &path) == -1)
			return 2;
		return cmd_check(path);
	}
	if (strcmp(cmd, "exec") == 0)
		return proxy_exec_main(argc - 1, argv + 1);
	if (strcmp(cmd, "classify") == 0)
		return cls_cli_main(argc - 1, argv + 1);
	if (strcmp(cmd, "connect") == 0)
		return proxy_connect_main(argc - 1, argv + 1);
	if (strcmp(cmd, "ca") == 0)
		return proxy_ca_cli_main(argc - 1, argv + 1);
	if (strcmp(cmd, "audit") == 0)
		return cmd_audit(argc, argv);
	if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
		printf("egressd %s\n", EGRESSD_VERSION);
		return 0;
	}
	if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "egressd: unknown command \"%s\"\n", cmd);
	usage(stderr);
	return 2;
}
