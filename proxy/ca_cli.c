/* `egressd ca init DIR [--permit PATTERN]...` and `egressd ca bundle [-c FILE]`
 * (docs/design.md 8, docs/inspection.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist/config.h"
#include "allowlist/pattern.h"
#include "proxy/ca.h"

#define CLI_DEFAULT_CONFIG "/etc/egressd/egressd.yaml"

static int usage(void)
{
	fputs("usage: egressd ca init DIR [--permit PATTERN]...\n"
	      "                              write an inspection CA: DIR/ca.pem, DIR/ca.key\n"
	      "       egressd ca bundle [-c FILE]  write the trust bundle of tls.ca (the system "
	      "CAs\n"
	      "                              and egressd's) when missing or stale; print its "
	      "path\n",
	        stderr);
	return 2;
}

static int cmd_init(int argc, char **argv)
{
	const char *dir = NULL;
	struct allow_set *permit = allow_set_new(ALLOW_SET_ALLOW);
	if (permit == NULL) {
		fprintf(stderr, "egressd: out of memory\n");
		return 2;
	}
	int rc = 2;
	for (int i = 2; i < argc; i++) {
		char why[256] = "";
		if (strcmp(argv[i], "--permit") == 0 && i + 1 < argc) {
			/* The syntax and checks of allowDomains and inspect (docs/design.md 4.2).
			 */
			if (allow_set_add(permit, argv[++i], why, sizeof why) == -1) {
				fprintf(stderr, "egressd: --permit \"%s\": %s\n", argv[i],
				        why[0] ? why : "not a valid pattern");
				goto out;
			}
		} else if (argv[i][0] != '-' && dir == NULL) {
			dir = argv[i];
		} else {
			fprintf(stderr, "egressd: ca init: unexpected argument \"%s\"\n", argv[i]);
			rc = usage();
			goto out;
		}
	}
	if (dir == NULL) {
		rc = usage();
		goto out;
	}
	size_t n = allow_set_count(permit);
	const char **pats = calloc(n + 1, sizeof *pats);
	if (pats == NULL) {
		fprintf(stderr, "egressd: out of memory\n");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		pats[i] = allow_set_pattern(permit, i);
	char err[PROXY_CA_ERR];
	struct proxy_ca *ca = proxy_ca_generate(pats, n, PROXY_CA_INIT_DAYS, err, sizeof err);
	free(pats);
	if (ca == NULL) {
		fprintf(stderr, "egressd: %s\n", err);
		goto out;
	}
	int w = proxy_ca_write(ca, dir, err, sizeof err);
	if (w != 0) {
		fprintf(stderr, "egressd: %s\n", err);
		rc = w == 1 ? 1 : 2;
	} else {
		char d[512];
		proxy_ca_describe(ca, d, sizeof d);
		printf("%s/%s: the CA certificate (%s)\n%s/%s: its private key (mode 0600)\n", dir,
		        PROXY_CA_CERT_FILE, d, dir, PROXY_CA_KEY_FILE);
		rc = 0;
	}
	proxy_ca_free(ca);
out:
	allow_set_free(permit);
	return rc;
}

static int cmd_bundle(int argc, char **argv)
{
	const char *path = CLI_DEFAULT_CONFIG;
	for (int i = 2; i < argc; i++) {
		if ((strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) &&
		        i + 1 < argc) {
			path = argv[++i];
		} else {
			fprintf(stderr, "egressd: ca bundle: unexpected argument \"%s\"\n",
			        argv[i]);
			return usage();
		}
	}
	struct allow_errors errs = {0};
	struct allow_config *cfg = allow_config_load(path, &errs);
	if (cfg == NULL) {
		for (size_t i = 0; i < errs.n; i++)
			fprintf(stderr, "egressd: %s\n", errs.lines[i]);
		allow_errors_free(&errs);
		return 2;
	}
	allow_errors_free(&errs);
	int rc = 2;
	char err[PROXY_CA_ERR + 64], out[4200];
	struct proxy_ca *ca = NULL;
	if (cfg->tls.ca_cert == NULL) {
		fprintf(stderr,
		        "egressd: %s: tls.ca is not set: there is no CA to trust (egressd ca init "
		        "DIR writes one; name its ca.pem and ca.key in tls.ca)\n",
		        path);
		goto done;
	}
	if ((ca = proxy_ca_load(cfg->tls.ca_cert, cfg->tls.ca_key, NULL, err, sizeof err)) ==
	        NULL) {
		fprintf(stderr, "egressd: %s: tls.ca: %s\n", path, err);
		goto done;
	}
	/* Beside the CA's certificate: whoever may read ca.pem may read its bundle. */
	const char *slash = strrchr(cfg->tls.ca_cert, '/');
	int dl = slash == NULL               ? 1
	         : slash == cfg->tls.ca_cert ? 1
	                                     : (int)(slash - cfg->tls.ca_cert);
	if ((size_t)snprintf(out, sizeof out, "%.*s/%s", dl, slash == NULL ? "." : cfg->tls.ca_cert,
	            PROXY_CA_BUNDLE_FILE) >= sizeof out) {
		fprintf(stderr, "egressd: %s: the path is too long\n", cfg->tls.ca_cert);
		goto done;
	}
	const char *sys = proxy_ca_system_bundle();
	if (sys == NULL)
		fprintf(stderr, "egressd: no system CA bundle found: %s holds egressd's CA alone\n",
		        out);
	if (proxy_ca_bundle_write(ca, sys, out, NULL, err, sizeof err) == -1) {
		fprintf(stderr, "egressd: %s\n", err);
		goto done;
	}
	printf("%s\n", out);
	rc = 0;
done:
	proxy_ca_free(ca);
	allow_config_free(cfg);
	return rc;
}

int proxy_ca_cli_main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "init") == 0)
		return cmd_init(argc, argv);
	if (argc >= 2 && strcmp(argv[1], "bundle") == 0)
		return cmd_bundle(argc, argv);
	return usage();
}
