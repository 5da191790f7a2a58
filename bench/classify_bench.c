/* Classifier throughput: classifications per second on one core over a realistic mix of agent
 * command lines (plain commands, pipelines, wrappers, substitutions, here-docs, shells).
 *
 *   bench_classify [SECONDS] [MAX_ITERATIONS] [SET]   defaults: 2 seconds, 20 million, mix
 *
 * SET is `mix` (the 30 lines below), `gitcurl` (the mix's lines that start with git or curl,
 * the common lines whose speed must not regress) or a case table in the public corpus's format
 * (LINE<TAB>EXPECTED<TAB>NOTE, U+2424 a newline and U+2409 a tab in LINE), e.g.
 * tests/unit/data/classifier/public.tsv.
 *
 * Prints the rate and a checksum of the tags (so the work cannot be optimised away).  This is
 * a benchmark, not a test: build it in Release to compare with the 1 M/s target. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "classifier/classifier.h"

static const char *const mix[] = {
        "ls -la",
        "git status --short",
        "git log --oneline -5",
        "git diff HEAD~1 -- src/main.c",
        "git add -A && git commit -m 'fix: handle empty input' && git push origin HEAD",
        "git fetch && git rebase origin/main",
        "git clone --depth 1 https://github.com/o/r.git && cd r && make",
        "npm install && npm test",
        "cargo build --release 2>&1 | tail -20",
        "python3 -m pytest -q tests/ -k 'not slow'",
        "grep -rn 'deprecated' src/ | wc -l",
        "find . -name '*.py' -exec grep -l requests {} +",
        "curl -sSfL https://example.com/install.sh -o install.sh",
        "curl -s -X POST -H 'Content-Type: application/json' -d '{\"a\":1}' "
        "https://api.example.com/v1",
        "wget -q https://example.com/f.tar.gz && tar xzf f.tar.gz",
        "echo \"$(date +%s) done\" >> build.log",
        "export TOKEN=$(gh api user --jq .login)",
        "for f in *.json; do jq -r '.name' \"$f\"; done",
        "if [ -f package.json ]; then npm run build; else make; fi",
        "cat <<EOF > config.yml\nname: test\nurl: https://example.com\nEOF",
        "ssh deploy@host.example.com 'sudo systemctl restart app'",
        "rsync -avz --delete ./dist/ deploy@host.example.com:/srv/www/",
        "docker build -t app:latest . && docker push registry.example.com/app:latest",
        "sudo -u deploy env HOME=/srv timeout 30 git pull --ff-only",
        "bash -c 'cd /repo && git fetch --all && git status'",
        "xargs -n1 -P4 curl -sSO < urls.txt",
        "sed -i 's/foo/bar/g' $(grep -rl foo src/)",
        "dig +short example.com && nslookup example.com",
        "python3 -c \"import json,sys; print(json.load(sys.stdin)['version'])\" < package.json",
        "make -j2 && ./build/egressd check -c examples/egressd.yaml",
};

/* Loads a case table's first column, decoded, into *lines (malloc'ed).  Returns the count, or
 * 0 on error. */
static size_t load_table(const char *path, char ***lines, size_t **lens)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		perror(path);
		return 0;
	}
	size_t n = 0, cap = 0;
	char *buf = NULL;
	size_t bcap = 0;
	ssize_t got;
	*lines = NULL;
	*lens = NULL;
	while ((got = getline(&buf, &bcap, f)) != -1) {
		char *tab = memchr(buf, '\t', (size_t)got);
		if (tab == NULL)
			continue;
		size_t raw = (size_t)(tab - buf), o = 0;
		char *line = malloc(raw + 1);
		if (line == NULL)
			break;
		for (size_t i = 0; i < raw; i++) {
			unsigned char *u = (unsigned char *)buf + i;
			if (i + 2 < raw && u[0] == 0xe2 && u[1] == 0x90 && (u[2] == 0xa4 || u[2] == 0x89)) {
				line[o++] = u[2] == 0xa4 ? '\n' : '\t';
				i += 2;
				continue;
			}
			line[o++] = buf[i];
		}
		line[o] = '\0';
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			char **nl = realloc(*lines, cap * sizeof *nl);
			size_t *nz = realloc(*lens, cap * sizeof *nz);
			if (nl != NULL)
				*lines = nl;
			if (nz != NULL)
				*lens = nz;
			if (nl == NULL || nz == NULL) {
				free(line);
				break;
			}
		}
		(*lines)[n] = line;
		(*lens)[n] = o;
		n++;
	}
	free(buf);
	fclose(f);
	return n;
}

static double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	unsigned long max = argc > 2 ? strtoul(argv[2], NULL, 10) : 20000000ul;
	if (seconds <= 0 || max == 0) {
		fprintf(stderr, "usage: bench_classify [SECONDS] [MAX_ITERATIONS]\n");
		return 2;
	}
	const char *set = argc > 3 ? argv[3] : "mix";
	size_t nmix = sizeof mix / sizeof mix[0];
	char **lines = NULL;
	size_t *lens = NULL;
	size_t n = 0;
	if (strcmp(set, "mix") == 0 || strcmp(set, "gitcurl") == 0) {
		int gc = strcmp(set, "gitcurl") == 0;
		lines = malloc(nmix * sizeof *lines);
		lens = malloc(nmix * sizeof *lens);
		if (lines == NULL || lens == NULL)
			return 2;
		for (size_t i = 0; i < nmix; i++)
			if (!gc || strncmp(mix[i], "git ", 4) == 0 || strncmp(mix[i], "curl ", 5) == 0)
				lines[n++] = (char *)mix[i];
	} else {
		n = load_table(set, &lines, &lens);
		if (n == 0) {
			fprintf(stderr, "bench_classify: no lines in %s\n", set);
			return 2;
		}
	}
	size_t bytes = 0;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(set, "mix") == 0 || strcmp(set, "gitcurl") == 0)
			lens[i] = strlen(lines[i]);
		bytes += lens[i];
	}
	unsigned long done = 0, refused = 0, checksum = 0;
	double start = now(), end = start, cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	/* check the clock every 1,000 lines: cheap, and bounds overshoot */
	while (done < max) {
		for (unsigned k = 0; k < 1000 && done < max; k++, done++) {
			size_t i = done % n;
			struct cls_result r;
			if (cls_classify(lines[i], lens[i], &r) == -1)
				refused++;
			checksum = checksum * 31 + r.tags + r.nprograms;
			cls_result_free(&r);
		}
		end = now();
		if (end - start >= seconds)
			break;
	}
	double elapsed = end - start, cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
	/* per CPU second too: on a shared machine the wall-clock rate also measures the others */
	printf("classify %s: %lu lines in %.3f s: %.0f classifications/s, %.0f per CPU second "
	       "(%.1f MB/s), %zu distinct lines, %lu refused, checksum %lx\n",
	        set, done, elapsed, (double)done / elapsed, (double)done / cpu,
	        (double)bytes / (double)n * (double)done / elapsed / 1e6, n, refused, checksum);
	if (strcmp(set, "mix") != 0 && strcmp(set, "gitcurl") != 0)
		for (size_t i = 0; i < n; i++)
			free(lines[i]);
	free(lines);
	free(lens);
	return 0;
}
