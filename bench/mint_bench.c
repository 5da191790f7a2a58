/* mint_bench: what a leaf certificate costs inspection (issue 11: "a first mint under 2 ms").
 *
 *   mint_bench [--count N] [CERT KEY]
 *
 * With no files, an ECDSA P-256 CA is made as `egressd ca init` makes one; with CERT KEY, that CA
 * is loaded (an RSA CA, say).  Then, in one process: the first mint of the process (OpenSSL's
 * lazy set-up included), N mints of distinct names (each a cache miss: serial, dates, SAN, one
 * signature), and N cache hits on those names.  Each call is timed alone, in wall time and in the
 * thread's CPU time; prints the median, the 99th percentile and the largest as one JSON line.  Every leaf is checked against the CA (a
 * signature that does not verify exits 1: the benchmark would time a broken mint). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/x509.h>

#include "proxy/ca.h"

static double mb_clock_us(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Wall time, which is what a client waits for. */
static double mb_now_us(void)
{
	return mb_clock_us(CLOCK_MONOTONIC);
}

/* This thread's CPU time: what the call costs, without the time another process held the CPU
 * (on a busy machine the wall figures' tail is the scheduler's, not the mint's). */
static double mb_cpu_us(void)
{
	return mb_clock_us(CLOCK_THREAD_CPUTIME_ID);
}

static int mb_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Sorts t[0..n) and prints "name": {median, p99, max}. */
static void mb_report(const char *name, double *t, size_t n, int last)
{
	qsort(t, n, sizeof *t, mb_cmp);
	size_t p99 = (n * 99 + 99) / 100 - 1;
	printf("\"%s_us\": {\"median\": %.1f, \"p99\": %.1f, \"max\": %.1f}%s", name, t[n / 2],
	        t[p99 < n ? p99 : n - 1], t[n - 1], last ? "" : ", ");
}

int main(int argc, char **argv)
{
	size_t count = 1000;
	const char *cert = NULL, *key = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--count") == 0 && i + 1 < argc)
			count = (size_t)strtoul(argv[++i], NULL, 10);
		else if (cert == NULL)
			cert = argv[i];
		else if (key == NULL)
			key = argv[i];
	}
	if (count == 0 || count >= PROXY_CA_CACHE_MAX || (cert != NULL && key == NULL)) {
		fprintf(stderr, "usage: mint_bench [--count N (1-%d)] [CERT KEY]\n",
		        PROXY_CA_CACHE_MAX - 1);
		return 2;
	}
	char err[PROXY_CA_ERR];
	struct proxy_ca *ca = cert != NULL ? proxy_ca_load(cert, key, NULL, err, sizeof err)
	                                   : proxy_ca_generate(NULL, 0, 30, err, sizeof err);
	if (ca == NULL) {
		fprintf(stderr, "mint_bench: %s\n", err);
		return 2;
	}
	EVP_PKEY *capub = X509_get0_pubkey(proxy_ca_cert(ca));
	double *miss = calloc(count, sizeof *miss), *hit = calloc(count, sizeof *hit);
	double *miss_cpu = calloc(count, sizeof *miss_cpu);
	if (miss == NULL || hit == NULL || miss_cpu == NULL)
		return 2;
	char name[64];
	double t0 = mb_now_us();
	X509 *x = proxy_ca_leaf(ca, "first.bench.test", err, sizeof err);
	double first = mb_now_us() - t0;
	if (x == NULL || X509_verify(x, capub) != 1) {
		fprintf(stderr, "mint_bench: the first leaf does not verify\n");
		return 1;
	}
	for (size_t i = 0; i < count; i++) {
		snprintf(name, sizeof name, "host-%zu.bench.test", i);
		double c0 = mb_cpu_us();
		t0 = mb_now_us();
		x = proxy_ca_leaf(ca, name, err, sizeof err);
		miss[i] = mb_now_us() - t0;
		miss_cpu[i] = mb_cpu_us() - c0;
		if (x == NULL || X509_verify(x, capub) != 1) {
			fprintf(stderr, "mint_bench: %s: the leaf does not verify\n", name);
			return 1;
		}
	}
	for (size_t i = 0; i < count; i++) {
		snprintf(name, sizeof name, "host-%zu.bench.test", (i * 7919) % count);
		t0 = mb_now_us();
		x = proxy_ca_leaf(ca, name, err, sizeof err);
		hit[i] = mb_now_us() - t0;
		if (x == NULL)
			return 1;
	}
	struct proxy_ca_stats st;
	proxy_ca_get_stats(ca, &st);
	if (st.mints != count + 1 || st.hits != count) {
		fprintf(stderr, "mint_bench: %llu mints and %llu hits, expected %zu and %zu\n",
		        (unsigned long long)st.mints, (unsigned long long)st.hits, count + 1,
		        count);
		return 1;
	}
	char d[512];
	proxy_ca_describe(ca, d, sizeof d);
	printf("{\"ca\": \"%s\", \"count\": %zu, \"first_of_process_us\": %.1f, ", d, count, first);
	mb_report("mint", miss, count, 0);
	mb_report("mint_cpu", miss_cpu, count, 0);
	mb_report("cached", hit, count, 1);
	printf("}\n");
	free(miss);
	free(miss_cpu);
	free(hit);
	proxy_ca_free(ca);
	return 0;
}
