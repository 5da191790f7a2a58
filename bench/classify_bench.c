/* Classifier throughput: classifications per second on one core over a realistic mix of agent
 * command lines (plain commands, pipelines, wrappers, substitutions, here-docs, shells).
 *
 *   bench_classify [SECONDS] [MAX_ITERATIONS]     defaults: 2 seconds, 20 million lines
 *
 * Prints the rate and a checksum of the tags (so the work cannot be optimised away).  This is
 * a benchmark, not a test: build it in Release to compare with the 200,000/s target. */
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

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	unsigned long max = argc > 2 ? strtoul(argv[2], NULL, 10) : 20000000ul;
	if (seconds <= 0 || max == 0) {
		fprintf(stderr, "usage: bench_classify [SECONDS] [MAX_ITERATIONS]\n");
		return 2;
	}
	size_t n = sizeof mix / sizeof mix[0];
	size_t lens[sizeof mix / sizeof mix[0]];
	size_t bytes = 0;
	for (size_t i = 0; i < n; i++) {
		lens[i] = strlen(mix[i]);
		bytes += lens[i];
	}
	unsigned long done = 0, refused = 0, checksum = 0;
	double start = now(), end = start;
	/* check the clock every 1,000 lines: cheap, and bounds overshoot */
	while (done < max) {
		for (unsigned k = 0; k < 1000 && done < max; k++, done++) {
			size_t i = done % n;
			struct cls_result r;
			if (cls_classify(mix[i], lens[i], &r) == -1)
				refused++;
			checksum = checksum * 31 + r.tags + r.nprograms;
			cls_result_free(&r);
		}
		end = now();
		if (end - start >= seconds)
			break;
	}
	double elapsed = end - start;
	printf("classify: %lu lines in %.3f s: %.0f classifications/s (%.1f MB/s), %zu distinct "
	       "lines, %lu refused, checksum %lx\n",
	        done, elapsed, (double)done / elapsed,
	        (double)bytes / (double)n * (double)done / elapsed / 1e6, n, refused, checksum);
	return 0;
}
