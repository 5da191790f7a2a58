/* Which DNS listener answers get an audit record: one per distinct (session, name, type,
 * decision) per window (a minute), so that a flood of queries cannot fill the log.
 *
 * A bounded table: at most `max` keys are remembered.  A key seen again after its window has its
 * record written again, with the count of answers left out meanwhile.  When every remembered key
 * is still within its window and a new key comes, there is no room: its record is left out and
 * counted as overflow, which the listener reports in one summary record per window.  Pure and
 * single-threaded; time is passed in. */
#ifndef EGRESSD_DNS_DEDUP_H
#define EGRESSD_DNS_DEDUP_H

#include <stddef.h>
#include <stdint.h>

#define DNS_DEDUP_MAX 4096            /* keys the listener remembers */
#define DNS_DEDUP_WINDOW_MS 60000u    /* one record per key per minute */

struct dns_dedup;

/* NULL when out of memory. */
struct dns_dedup *dns_dedup_new(size_t max, uint64_t window_ms);
void dns_dedup_free(struct dns_dedup *d);

enum dns_dedup_verdict {
	DNS_DEDUP_WRITE = 0, /* write the record; *repeat holds the answers left out since the last
	                        record of this key */
	DNS_DEDUP_SKIP,      /* the key had its record within the window: leave this one out */
	DNS_DEDUP_FULL,      /* no room for a new key: leave it out (counted as overflow) */
};

enum dns_dedup_verdict dns_dedup_check(struct dns_dedup *d, const char *session, const char *name,
	uint16_t qtype, int allow, uint64_t now_ms, uint64_t *repeat);

/* Forgets a key whose record could not be written, so that the next answer of the key writes
 * it. */
void dns_dedup_forget(struct dns_dedup *d, const char *session, const char *name, uint16_t qtype,
	int allow);

/* Records left out for want of room since the last call; resets the count. */
uint64_t dns_dedup_take_overflow(struct dns_dedup *d);

/* Keys remembered now. */
size_t dns_dedup_count(const struct dns_dedup *d);

#endif
