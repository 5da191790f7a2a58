/* proxy_sni_parse on arbitrary bytes.  Besides memory safety it checks what the proxy relies
 * on: a FOUND name is non-empty, NUL-free and in the parser's byte set; every prefix of an input
 * whose answer is FOUND is NEED_MORE or FOUND with the same name (so waiting for more bytes
 * never changes the name); a small namecap never overflows; the result is a known value. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/sni.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n >= PROXY_SNI_NAME_BUF)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		            c == '-' || c == '.' || c == '_'))
			return 0;
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[PROXY_SNI_NAME_BUF];
	const char *why = NULL;
	enum proxy_sni_result r = proxy_sni_parse(data, size, name, sizeof name, &why);
	switch (r) {
	case PROXY_SNI_NEED_MORE:
	case PROXY_SNI_FOUND:
		if (why != NULL)
			abort();
		break;
	case PROXY_SNI_NONE:
	case PROXY_SNI_NOT_TLS:
	case PROXY_SNI_BAD:
		if (why == NULL || why[0] == '\0')
			abort();
		break;
	default:
		abort();
	}
	if (r != PROXY_SNI_FOUND)
		return 0;
	if (!name_ok(name))
		abort();

	/* Every prefix for short inputs, an even spread of them for long ones. */
	size_t step = size <= 1024 ? 1 : size / 256;
	for (size_t len = 0; len < size; len += step) {
		char pname[PROXY_SNI_NAME_BUF];
		enum proxy_sni_result pr = proxy_sni_parse(data, len, pname, sizeof pname, NULL);
		if (pr == PROXY_SNI_FOUND ? strcmp(pname, name) != 0 : pr != PROXY_SNI_NEED_MORE)
			abort();
	}

	/* A namecap one short of the name: refused, and nothing written past it. */
	size_t n = strlen(name);
	char *small = malloc(n);
	if (small == NULL)
		return 0;
	if (proxy_sni_parse(data, size, small, n, NULL) != PROXY_SNI_BAD)
		abort();
	free(small);
	return 0;
}
