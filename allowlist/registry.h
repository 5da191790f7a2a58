/* Package registries by family.
 *
 * A package tool that names no registry on its command line reaches its family's default one.
 * egressd names no registry's host itself (no table of them ships with it): the classifier
 * reports the family, and a config's top-level `registries:` maps each family to the host to
 * check (DESIGN.md 10, docs/classifier.md). */
#ifndef EGRESSD_ALLOWLIST_REGISTRY_H
#define EGRESSD_ALLOWLIST_REGISTRY_H

#include <stddef.h>

/* One bit per family, in the alphabetical order of the names. */
enum allow_registry {
	ALLOW_REG_BREW = 1u << 0,      /* brew: bottles and its API */
	ALLOW_REG_CRATES = 1u << 1,    /* cargo */
	ALLOW_REG_DOCKER = 1u << 2,    /* docker, podman, buildah, skopeo: an image with no host */
	ALLOW_REG_GO = 1u << 3,        /* go's module proxy */
	ALLOW_REG_NPM = 1u << 4,       /* npm, pnpm, yarn, bun */
	ALLOW_REG_PACKAGIST = 1u << 5, /* composer */
	ALLOW_REG_PYPI = 1u << 6,      /* pip, pipx, uv, poetry, twine, hatch, flit */
	ALLOW_REG_RUBYGEMS = 1u << 7,  /* gem, bundle */
};
#define ALLOW_REG_COUNT 8

/* The name of one family bit ("npm", "pypi", ...), as the config spells it; NULL for anything
 * that is not exactly one family. */
const char *allow_registry_name(unsigned bit);

/* The bit of a family name s[0..len), or 0 when there is none. */
unsigned allow_registry_parse(const char *s, size_t len);

/* The index (0 .. ALLOW_REG_COUNT - 1) of one family bit. */
size_t allow_registry_index(unsigned bit);

#endif
