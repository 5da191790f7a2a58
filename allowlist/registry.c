/* Package registry families (registry.h). */
#include "allowlist/registry.h"

#include <string.h>

/* Indexed by bit number. */
static const char *const names[ALLOW_REG_COUNT] = {
        "brew", "crates", "docker", "go", "npm", "packagist", "pypi", "rubygems"};

const char *allow_registry_name(unsigned bit)
{
	for (size_t i = 0; i < ALLOW_REG_COUNT; i++)
		if (bit == 1u << i)
			return names[i];
	return NULL;
}

unsigned allow_registry_parse(const char *s, size_t len)
{
	for (size_t i = 0; i < ALLOW_REG_COUNT; i++)
		if (strlen(names[i]) == len && memcmp(names[i], s, len) == 0)
			return 1u << i;
	return 0;
}

size_t allow_registry_index(unsigned bit)
{
	size_t i = 0;
	while (i < ALLOW_REG_COUNT && bit != 1u << i)
		i++;
	return i;
}
