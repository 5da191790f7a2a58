"""Backpressure: a fast upstream and a slow client must not make egressd buffer without bound.

The upstream sends as fast as the kernel takes the bytes; the client reads in small chunks with
sleeps.  egressd's VmRSS is sampled every 100 ms and must stay under 32 MiB (160 MiB in the
sanitizer build, whose shadow memory and quarantine inflate RSS).  The peak is always printed.
"""

import hashlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (SANITIZE, Conn, RssSampler, base_config, check, check_audit_log,  # noqa
                     check_eq, pattern_sha256, run_cases, send_n_handler)

RSS_BOUND_MIB = 160 if SANITIZE else 32
MIB = 1024 * 1024
# ASan keeps freed blocks in a quarantine (256 MB by default) before reusing them, so with its
# defaults RSS grows with the bytes relayed, not with what egressd holds: 64 MiB through a
# tunnel measured 164 MiB with the default, 34 MiB with a 16 MB quarantine.  A 32 MB quarantine
# keeps use-after-free detection and makes the figure about egressd again.
ASAN_ENV = {"ASAN_OPTIONS": ":".join(x for x in (os.environ.get("ASAN_OPTIONS", ""),
                                                 "quarantine_size_mb=32") if x)}


def slow_read(c, n, seconds, chunk=16384):
    """Reads n bytes from c paced to take about `seconds`; returns (sha256 hex, count)."""
    h = hashlib.sha256()
    h.update(c.buf)
    got = len(c.buf)
    c.buf = b""
    rate = n / seconds
    t0 = time.time()
    c.sock.settimeout(15)
    while got < n:
        d = c.sock.recv(chunk)
        if not d:
            break
        h.update(d)
        got += len(d)
        ahead = got / rate - (time.time() - t0)
        if ahead > 0:
            time.sleep(ahead)
    return h.hexdigest(), got


def run_transfer(h, kind, n, seconds):
    if kind == "connect":
        srv = h.raw(send_n_handler(n))
        port = srv.port
    else:
        srv = h.origin()
        port = srv.port
    e = h.egressd(base_config({"big.test": ["127.0.0.1"]}), env=ASAN_ENV if SANITIZE else None)
    time.sleep(0.2)
    base = e.rss_kib()
    sampler = RssSampler(e.rss_kib, 0.1)
    c = Conn(e.port, timeout=15)
    try:
        t0 = time.time()
        if kind == "connect":
            c.request("CONNECT", "big.test:%d" % port)
            st, _, _ = c.read_head()
            check_eq(st, 200, "CONNECT status")
        else:
            c.request("GET", "http://big.test:%d/big?n=%d" % (port, n))
            st, _, hdrs = c.read_head()
            check_eq(st, 200, "GET status")
        digest, got = slow_read(c, n, seconds)
        took = time.time() - t0
    finally:
        c.close()
        sampler.stop()
    peak_mib = sampler.max_kib / 1024.0
    print("     %s: %d MiB in %.1fs through egressd; RSS at start %.1f MiB, max RSS %.1f MiB "
          "over %d samples (bound %d MiB%s)" % (kind, n // MIB, took, (base or 0) / 1024.0,
                                               peak_mib, sampler.samples, RSS_BOUND_MIB,
                                               ", sanitizer build, ASAN_OPTIONS=" +
                                               ASAN_ENV["ASAN_OPTIONS"] if SANITIZE else ""),
          flush=True)
    check_eq(got, n, "bytes received")
    check_eq(digest, pattern_sha256(n), "sha256 of the received stream")
    check(sampler.samples >= 10, "only %d RSS samples" % sampler.samples)
    check(peak_mib < RSS_BOUND_MIB, "egressd max RSS %.1f MiB is over the %d MiB bound"
          % (peak_mib, RSS_BOUND_MIB))
    check_eq(e.stop(), 0, "egressd exit code after SIGTERM")
    recs = e.audit()
    check_audit_log(recs)
    closes = [r for r in recs if r["event"] == "close"]
    check_eq(len(closes), 1, "close records")
    check(closes[0]["bytes_in"] >= n, "close record bytes_in %r < %d" % (closes[0], n))


def case_tunnel_64mib_slow_reader(h):
    run_transfer(h, "connect", 64 * MIB, 7.0)


def case_http_32mib_slow_reader(h):
    run_transfer(h, "http", 32 * MIB, 4.0)


if __name__ == "__main__":
    run_cases("backpressure", [
        ("64 MiB through a CONNECT tunnel to a slow reader, RSS bounded",
         case_tunnel_64mib_slow_reader),
        ("32 MiB plain HTTP response to a slow reader, RSS bounded", case_http_32mib_slow_reader),
    ])
