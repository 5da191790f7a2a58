/* decide_bench: the cost of one policy decision with 10, 1,000 and 100,000 allowDomains patterns
 * (figure 5 of bench/run).
 *
 *   decide_bench [--seconds S] [--hot N] [COUNT...]     (default counts: 10 1000 100000)
 *
 * One decision is what egressd does between reading a CONNECT line and dialling: canonicalise
 * the authority (allow_canon_authority) and decide it (allow_decide).  Half the patterns are
 * exact names and half wildcards, and the destinations rotate through exact hits, wildcard hits,
 * misses and origin.test, so neither a single hash bucket nor a single cache line is measured.
 * The bounds are built first; then short trials take turns across the counts, and each count's
 * figure is its best trial, so a burst of other load on the machine does not land on one count
 * only.  Prints one JSON line per count.  Exit 1 when a decision comes out wrong (the benchmark
 * then measures a broken policy, not a fast one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "allowlist/bound.h"
#include "allowlist/host.h"
#include "allowlist/pattern.h"
#include "allowlist/policy.h"

#define DB_DESTS 4096 /* destinations cycled through per count */

struct db_dest {
	char authority[ALLOW_HOST_BUF + 8]; /* "host:port" as a client writes it */
	int allowed;                        /* the decision the bound must reach */
};

static double db_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Fills b with `count` patterns plus origin.test:*.  0 or -1 with a message on stderr. */
static int db_build(struct allow_bound *b, long count)
{
	char pat[ALLOW_HOST_BUF], err[256];

	if (allow_bound_init(b) == -1)
		return -1;
	b->enforce = ALLOW_ENFORCE_SANDBOX;
	b->allow = allow_set_new(ALLOW_SET_ALLOW);
	if (b->allow == NULL || allow_set_add(b->allow, "origin.test:*", err, sizeof(err)) == -1)
		return -1;
	for (long i = 0; i < count - 1; i++) {
		if (i % 2 == 0)
			snprintf(pat, sizeof(pat), "h%ld.bench.test", i);
		else
			snprintf(pat, sizeof(pat), "*.w%ld.bench.test", i);
		if (allow_set_add(b->allow, pat, err, sizeof(err)) == -1) {
			fprintf(stderr, "decide_bench: %s: %s\n", pat, err);
			return -1;
		}
	}
	return 0;
}

/* Destinations for a bound of `count` patterns: a quarter each of exact hits, wildcard hits,
 * misses and origin.test on an arbitrary port.  They name patterns among the first `hot` (0:
 * all), so a small hot set keeps the working set in cache whatever the count: the difference
 * between the two shows what is memory latency and what would be the lookup itself. */
static void db_dests(struct db_dest *d, long count, long hot)
{
	long spread = count - 1;
	unsigned long seed = 12345;

	if (hot > 0 && hot < spread)
		spread = hot;
	for (long i = 0; i < DB_DESTS; i++) {
		long k;

		seed = seed * 6364136223846793005UL + 1442695040888963407UL;
		k = spread > 0 ? (long)((seed >> 33) % (unsigned long)spread) : 0;
		switch (i % 4) {
		case 0: /* an exact pattern is always at an even index */
			k -= k % 2;
			snprintf(d[i].authority, sizeof(d[i].authority), "h%ld.bench.test:443", k);
			d[i].allowed = count > 1;
			break;
		case 1:
			k |= 1;
			snprintf(
			        d[i].authority, sizeof(d[i].authority), "x.w%ld.bench.test:443", k);
			d[i].allowed = k < count - 1;
			break;
		case 2:
			snprintf(d[i].authority, sizeof(d[i].authority),
			        "miss%ld.bench.invalid:443", k);
			d[i].allowed = 0;
			break;
		default:
			snprintf(d[i].authority, sizeof(d[i].authority), "origin.test:%ld",
			        1 + k % 65535);
			d[i].allowed = 1;
			break;
		}
	}
}

#define DB_TRIAL_S 0.02 /* one timed trial; sizes take turns so load drift hits them alike */
#define DB_TRIALS_MAX 4096

struct db_case {
	long count;                     /* patterns asked for */
	struct allow_bound bound;       /* built once, then only read */
	struct db_dest dests[DB_DESTS]; /* what the trials decide, in turn */
	double trial_ns[DB_TRIALS_MAX]; /* ns per decision of each trial */
	int trials;                     /* trials run */
	long decisions, wrong;          /* totals over every trial */
	double build_s;                 /* time to build the bound */
};

/* One trial: batches of DB_DESTS decisions until DB_TRIAL_S has passed (the clock is read once
 * per batch, so it stays out of the figure).  Returns ns per decision. */
static double db_trial(struct db_case *c)
{
	struct allow_decision dec;
	struct allow_dest dest;
	double t0 = db_now(), dt;
	long n = 0;

	do {
		for (long i = 0; i < DB_DESTS; i++) {
			const struct db_dest *d = &c->dests[i];

			if (allow_canon_authority(d->authority, strlen(d->authority), 0, &dest) !=
			        ALLOW_CANON_OK) {
				c->wrong++;
				continue;
			}
			allow_decide(&c->bound, &dest, 0, &dec);
			if ((dec.reason == ALLOW_OK) != d->allowed)
				c->wrong++;
		}
		n += DB_DESTS;
		dt = db_now() - t0;
	} while (dt < DB_TRIAL_S);
	c->decisions += n;
	return dt * 1e9 / (double)n;
}

static int db_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Builds every case, then runs trials round-robin for `seconds` per case and prints one JSON
 * line per case: the best trial (the figure least disturbed by other load) and the median. */
static int db_run(struct db_case *cases, int ncases, double seconds, long hot)
{
	int rc = 0, rounds = (int)(seconds / DB_TRIAL_S);

	if (rounds < 1)
		rounds = 1;
	if (rounds > DB_TRIALS_MAX)
		rounds = DB_TRIALS_MAX;
	for (int i = 0; i < ncases; i++) {
		double t0 = db_now();

		if (db_build(&cases[i].bound, cases[i].count) == -1)
			return -1;
		cases[i].build_s = db_now() - t0;
		db_dests(cases[i].dests, cases[i].count, hot);
	}
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < ncases; i++)
			cases[i].trial_ns[cases[i].trials++] = db_trial(&cases[i]);
	for (int i = 0; i < ncases; i++) {
		struct db_case *c = &cases[i];

		qsort(c->trial_ns, (size_t)c->trials, sizeof(double), db_cmp_double);
		printf("{\"patterns\":%zu,\"decisions\":%ld,\"wrong\":%ld,\"trials\":%d,"
		       "\"ns_per_decision\":%.1f,\"median_ns\":%.1f,\"build_seconds\":%.3f}\n",
		        allow_set_count(c->bound.allow), c->decisions, c->wrong, c->trials,
		        c->trial_ns[0], c->trial_ns[c->trials / 2], c->build_s);
		if (c->wrong != 0)
			rc = -1;
	}
	fflush(stdout);
	return rc;
}

int main(int argc, char **argv)
{
	long counts[16] = {10, 1000, 100000};
	int ncounts = 3, given = 0, rc = 0;
	double seconds = 1.0;
	long hot = 0;
	struct db_case *cases;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
			seconds = strtod(argv[++i], NULL);
		} else if (strcmp(argv[i], "--hot") == 0 && i + 1 < argc) {
			hot = strtol(argv[++i], NULL, 10);
		} else if (given < 16 && strtol(argv[i], NULL, 10) > 0) {
			counts[given++] = strtol(argv[i], NULL, 10);
		} else {
			fprintf(stderr, "usage: decide_bench [--seconds S] [--hot N] [COUNT...]\n");
			return 2;
		}
	}
	if (given > 0)
		ncounts = given;
	cases = calloc((size_t)ncounts, sizeof(*cases));
	if (cases == NULL)
		return 1;
	for (int i = 0; i < ncounts; i++)
		cases[i].count = counts[i];
	if (db_run(cases, ncounts, seconds, hot) == -1)
		rc = 1;
	for (int i = 0; i < ncounts; i++)
		allow_bound_free(&cases[i].bound);
	free(cases);
	return rc;
}
