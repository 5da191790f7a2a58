/* Fuzzes the config loader, as a file and as a control API session body: any bytes either give a
 * result and no error line, or no result and at least one; either way everything is freed
 * (ASan's leak check holds the loader to that).
 * The name puts relative tokenFile paths in a folder that does not exist, so a run never
 * depends on files around the fuzzer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "allowlist/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct allow_errors errs = {0};
	struct allow_config *cfg = allow_config_load_buffer("/nonexistent.invalid/fuzz.yaml",
		(const char *)data, size, &errs);
	if ((cfg == NULL) != (errs.n > 0))
		abort();
	for (size_t i = 0; i < errs.n; i++)
		if (errs.lines[i] == NULL || errs.lines[i][0] == '\0')
			abort();
	if (cfg != NULL) {
		/* Printing walks every merged bound and limit the loader built. */
		FILE *devnull = fopen("/dev/null", "w");
		if (devnull != NULL) {
			allow_config_print(cfg, devnull);
			fclose(devnull);
		}
		for (size_t i = 0; i < cfg->nsessions; i++)
			if (allow_config_session(cfg, cfg->sessions[i].name) != &cfg->sessions[i])
				abort();
	}
	/* The same bytes as a control API body, resolving bounds: against the config if any. */
	struct allow_errors berrs = {0};
	struct allow_session_config s;
	int rc = allow_config_session_load(cfg, "body", "fuzz", (const char *)data, size, &s, &berrs);
	if ((rc == -1) != (berrs.n > 0))
		abort();
	if (rc == 0)
		allow_session_config_free(&s);
	allow_errors_free(&berrs);
	allow_config_free(cfg);
	allow_errors_free(&errs);
	return 0;
}
