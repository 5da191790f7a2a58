/* Loading the classifier's case tables (tests/unit/data/classifier/NAME.tsv) for the unit
 * tests.  Header-only so that each test program has its own copy without a CMake change. */
#ifndef EGRESSD_TESTS_CLASSIFIER_CASES_H
#define EGRESSD_TESTS_CLASSIFIER_CASES_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct case_entry {
	char *line; /* the command line, U+2424 and U+2409 decoded */
	size_t len;
	char *expect; /* "none", "deny" or sorted comma-joined tags */
	char *raw;    /* the line as written in the file, for messages */
	size_t lineno;
};

struct case_table {
	struct case_entry *v;
	size_t n;
};

static inline char *case_dup(const char *s, size_t n)
{
	char *p = malloc(n + 1);
	if (p == NULL)
		return NULL;
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

/* Decodes U+2424 (newline) and U+2409 (tab) in s[0..n). */
static inline char *case_decode(const char *s, size_t n, size_t *out)
{
	char *p = malloc(n + 1);
	size_t o = 0;
	if (p == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (i + 2 < n && (unsigned char)s[i] == 0xe2 && (unsigned char)s[i + 1] == 0x90 &&
		        ((unsigned char)s[i + 2] == 0xa4 || (unsigned char)s[i + 2] == 0x89)) {
			p[o++] = (unsigned char)s[i + 2] == 0xa4 ? '\n' : '\t';
			i += 2;
			continue;
		}
		p[o++] = s[i];
	}
	p[o] = '\0';
	*out = o;
	return p;
}

/* Loads NAME from $EGRESSD_SOURCE_DIR/tests/unit/data/classifier/.  0 or -1. */
static inline int cases_load(const char *name, struct case_table *t)
{
	const char *dir = getenv("EGRESSD_SOURCE_DIR");
	char path[4096];
	snprintf(path, sizeof path, "%s/tests/unit/data/classifier/%s", dir ? dir : ".", name);
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		perror(path);
		return -1;
	}
	t->v = NULL;
	t->n = 0;
	size_t cap = 0, lineno = 0;
	char *buf = NULL;
	size_t bcap = 0;
	ssize_t got;
	while ((got = getline(&buf, &bcap, f)) != -1) {
		size_t n = (size_t)got;
		lineno++;
		while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
			n--;
		if (n == 0)
			continue;
		char *tab1 = memchr(buf, '\t', n);
		if (tab1 == NULL)
			continue;
		char *exp = tab1 + 1;
		char *tab2 = memchr(exp, '\t', n - (size_t)(exp - buf));
		size_t elen = tab2 ? (size_t)(tab2 - exp) : n - (size_t)(exp - buf);
		if (t->n == cap) {
			cap = cap ? cap * 2 : 256;
			struct case_entry *nv = realloc(t->v, cap * sizeof *nv);
			if (nv == NULL)
				break;
			t->v = nv;
		}
		struct case_entry *e = &t->v[t->n++];
		e->line = case_decode(buf, (size_t)(tab1 - buf), &e->len);
		e->raw = case_dup(buf, (size_t)(tab1 - buf));
		e->expect = case_dup(exp, elen);
		e->lineno = lineno;
	}
	free(buf);
	fclose(f);
	return 0;
}

static inline int cases_cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of every NAME.tsv in the case folder, sorted; *n set.  NULL when the folder cannot
 * be read.  Free each name and the array. */
static inline char **cases_list(size_t *n)
{
	const char *dir = getenv("EGRESSD_SOURCE_DIR");
	char path[4096];
	snprintf(path, sizeof path, "%s/tests/unit/data/classifier", dir ? dir : ".");
	DIR *d = opendir(path);
	if (d == NULL) {
		perror(path);
		return NULL;
	}
	char **v = NULL;
	size_t cap = 0;
	*n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		if (l < 5 || strcmp(e->d_name + l - 4, ".tsv") != 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			char **nv = realloc(v, cap * sizeof *nv);
			if (nv == NULL)
				break;
			v = nv;
		}
		v[(*n)++] = case_dup(e->d_name, l);
	}
	closedir(d);
	qsort(v, *n, sizeof *v, cases_cmp_name);
	return v;
}

static inline void cases_free(struct case_table *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].line);
		free(t->v[i].raw);
		free(t->v[i].expect);
	}
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

#endif
