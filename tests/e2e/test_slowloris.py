"""Slow-header load (issue 3): thousands of clients that send part of a request head and hold.

Phase 1: egressd with limits.maxClients 20000 and headerTimeout 20s; 5,000 connections each
send "GET http://origin.test:P/ HTTP/1.1\\r\\nX-A: " and hold, all from this one process with
non-blocking sockets.  While they are held, curl must still fetch from the origin through
egressd, and egressd's VmRSS must stay under a bound (printed only, under sanitizers).  After
they close, every one of them has a close record.

Phase 2: headerTimeout 3s and 500 such connections: each must see a 408 (X-Egressd-Reason
header-timeout) or EOF once the timeout has run out, and the audit log must hold a close record
with end "header-timeout" for each.

Phase 3: 50 clients that send one more header byte every 0.4 s: headerTimeout (2 s) counts from
the start of the head, so they are cut off by 3.5 s all the same.

The whole file is bounded to about 60 s; every socket and process is closed in finally blocks.
"""

import errno
import json
import os
import resource
import selectors
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (SANITIZE, base_config, check, check_audit_log, check_eq,  # noqa
                     run_cases, run_curl)

HELD = 5000
TIMED = 500
RSS_BOUND_MIB = 64
PARTIAL = b"GET http://origin.test:%d/ HTTP/1.1\r\nX-A: "


def raise_nofile(need):
    """Lifts the soft descriptor limit to the hard one; fails the case if that is too low."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        new = hard if hard == resource.RLIM_INFINITY else min(hard, max(need, soft))
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        soft = new
    check(soft == resource.RLIM_INFINITY or soft >= need,
          "RLIMIT_NOFILE %d is below the %d descriptors this test needs (hard %d)"
          % (soft, need, hard))


class Crowd:
    """n non-blocking client sockets to port, each sending data once connected."""

    def __init__(self):
        self.socks = []

    def open(self, port, n, data, deadline, batch=250):
        """Connects n sockets in batches and sends data on each; returns when all have sent
        it, or fails the case at deadline."""
        sel = selectors.DefaultSelector()
        try:
            opened = 0
            while opened < n:
                pending = {}
                for _ in range(min(batch, n - opened)):
                    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    self.socks.append(s)
                    s.setblocking(False)
                    rc = s.connect_ex(("127.0.0.1", port))
                    check(rc in (0, errno.EINPROGRESS), "connect: %s" % os.strerror(rc))
                    sel.register(s, selectors.EVENT_WRITE)
                    pending[s.fileno()] = s
                    opened += 1
                while pending:
                    check(time.time() < deadline, "only %d of %d connections sent their "
                          "partial head in time" % (opened - len(pending), n))
                    for key, _ in sel.select(0.5):
                        s = key.fileobj
                        err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                        check(err == 0, "connect to egressd failed: %s" % os.strerror(err))
                        s.send(data)  # a few dozen bytes always fit an empty send buffer
                        sel.unregister(s)
                        del pending[s.fileno()]
        finally:
            sel.close()

    def answered(self):
        """Sockets that egressd has written to or closed (readable now)."""
        sel = selectors.DefaultSelector()
        try:
            for s in self.socks:
                sel.register(s, selectors.EVENT_READ)
            return [k.fileobj for k, _ in sel.select(0)]
        finally:
            sel.close()

    def read_all(self, deadline):
        """Reads every socket to EOF (or reset) by deadline; returns {socket: bytes} of those
        that ended, and the list of those still open."""
        sel = selectors.DefaultSelector()
        got = {}
        try:
            for s in self.socks:
                sel.register(s, selectors.EVENT_READ)
                got[s] = b""
            done = {}
            while len(done) < len(self.socks) and time.time() < deadline:
                for key, _ in sel.select(0.5):
                    s = key.fileobj
                    try:
                        d = s.recv(4096)
                    except (ConnectionResetError, BrokenPipeError):
                        d = b""
                    if d:
                        got[s] += d
                    else:
                        done[s] = got[s]
                        sel.unregister(s)
            return done, [s for s in self.socks if s not in done]
        finally:
            sel.close()

    def close(self):
        for s in self.socks:
            try:
                s.close()
            except OSError:
                pass
        self.socks = []


def mib(kib):
    return kib / 1024.0


def fetch_ok(e, origin, path):
    r = run_curl(["-x", "http://127.0.0.1:%d" % e.port, "-w", "\n%{http_code}",
                  "http://origin.test:%d%s" % (origin.port, path)], timeout=15)
    check(r.returncode == 0, "curl failed (%d): %s" % (r.returncode, r.stderr.decode()))
    body, _, code = r.stdout.decode().rpartition("\n")
    check_eq(code, "200", "curl status while the slow clients are held")
    info = json.loads(body)
    check_eq(info["path"], path, "path echoed by the origin")
    check_eq(info["host"], "origin.test:%d" % origin.port, "Host echoed by the origin")


def case_held(h):
    t_end = time.time() + 40
    raise_nofile(HELD + 200)
    origin = h.origin()
    e = h.egressd(base_config({"origin.test": ["127.0.0.1"]},
                              global_limits={"maxClients": 20000, "maxClientsPerSource": 20000,
                                             "headerTimeout": "20s"}))
    crowd = h.add(Crowd())
    fetch_ok(e, origin, "/warm")
    time.sleep(0.3)
    start = e.rss_kib()
    t0 = time.time()
    crowd.open(e.port, HELD, PARTIAL % origin.port, t_end)
    opened_s = time.time() - t0
    time.sleep(1.0)  # let egressd read every partial head
    early = crowd.answered()
    check(not early, "%d of %d slow clients were answered or closed before headerTimeout "
          "(first answer: %r)" % (len(early), HELD, _peek(early[0]) if early else b""))
    held = e.rss_kib()
    fetch_ok(e, origin, "/while-held")
    check(time.time() < t_end, "phase 1 out of time before closing")
    crowd.close()
    deadline = time.time() + 10
    while time.time() < deadline:
        closes = [r for r in e.audit() if r["event"] == "close"]
        if len(closes) >= HELD + 2:
            break
        time.sleep(0.2)
    time.sleep(0.3)
    after = e.rss_kib()
    check(start is not None and held is not None and after is not None,
          "egressd's VmRSS could not be read (start %r, held %r, after %r)"
          % (start, held, after))
    per = (held - start) / float(HELD)
    print("     RSS: start %.1f MiB, with %d held %.1f MiB (%.2f KiB per connection), after "
          "close %.1f MiB; %d connections opened in %.1fs"
          % (mib(start), HELD, mib(held), per, mib(after), HELD, opened_s), flush=True)
    if SANITIZE:
        print("     (sanitizer build: RSS bound of %d MiB not asserted)" % RSS_BOUND_MIB)
    else:
        check(mib(held) < RSS_BOUND_MIB, "VmRSS with %d held is %.1f MiB, over %d MiB"
              % (HELD, mib(held), RSS_BOUND_MIB))
    fetch_ok(e, origin, "/after")
    check_eq(e.stop(), 0, "egressd exit code after SIGTERM")
    recs = e.audit()
    check_audit_log(recs)
    closes = [r for r in recs if r["event"] == "close"]
    check_eq(len(closes), HELD + 3, "close records (the held clients and three curl fetches)")
    ends = {}
    for r in closes:
        ends[r["end"]] = ends.get(r["end"], 0) + 1
    check(ends.get("client-closed", 0) >= HELD, "close ends %r: the held clients should end "
          "client-closed" % ends)


def _peek(s):
    try:
        return s.recv(200)
    except OSError as ex:
        return repr(ex)


def case_timeout(h):
    raise_nofile(TIMED + 200)
    origin = h.origin()
    e = h.egressd(base_config({"origin.test": ["127.0.0.1"]},
                              global_limits={"maxClients": 20000, "headerTimeout": "3s"}))
    crowd = h.add(Crowd())
    t0 = time.time()
    crowd.open(e.port, TIMED, PARTIAL % origin.port, t0 + 10)
    time.sleep(max(0.0, t0 + 2.0 - time.time()))
    early = crowd.answered()
    check(not early, "%d slow clients answered within 2s of a 3s headerTimeout" % len(early))
    done, still = crowd.read_all(t0 + 3 + 8)
    dt = time.time() - t0
    check(not still, "%d of %d slow clients still open %.1fs after a 3s headerTimeout"
          % (len(still), TIMED, dt))
    n408 = 0
    for s, data in done.items():
        if not data:
            continue
        head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
        check(head.startswith("HTTP/1.1 408 "), "a slow client got %r" % data[:200])
        check("\r\nX-Egressd-Reason: header-timeout" in head,
              "408 without X-Egressd-Reason header-timeout: %r" % head)
        n408 += 1
    print("     %d of %d answered 408 header-timeout, %d plain EOF, all within %.1fs"
          % (n408, TIMED, TIMED - n408, dt), flush=True)
    crowd.close()
    fetch_ok(e, origin, "/after-timeouts")
    check_eq(e.stop(), 0, "egressd exit code after SIGTERM")
    recs = e.audit()
    check_audit_log(recs)
    hto = [r for r in recs if r["event"] == "close" and r.get("end") == "header-timeout"]
    check_eq(len(hto), TIMED, "close records with end header-timeout")
    for r in hto[:5]:
        check(r.get("duration_ms", 0) >= 2900, "header-timeout after %r ms: %r"
              % (r.get("duration_ms"), r))


def case_trickle(h):
    """Clients that keep the head alive one byte every 0.4 s: headerTimeout counts from the
    first byte, so trickling must not extend it."""
    n = 50
    raise_nofile(n + 200)
    origin = h.origin()
    e = h.egressd(base_config({"origin.test": ["127.0.0.1"]},
                              global_limits={"headerTimeout": "2s"}))
    crowd = h.add(Crowd())
    t0 = time.time()
    crowd.open(e.port, n, PARTIAL % origin.port, t0 + 10)
    ended = {}
    while len(ended) < n and time.time() < t0 + 6:
        for s in crowd.socks:
            if s in ended:
                continue
            try:
                s.send(b"a")
            except OSError:
                ended[s] = time.time() - t0
        for s in crowd.answered():
            if s not in ended:
                ended[s] = time.time() - t0
        time.sleep(0.4)
    check_eq(len(ended), n, "trickling clients cut off within 6s of a 2s headerTimeout "
             "(last seen at %.1fs)" % (time.time() - t0))
    print("     %d trickling clients cut off between %.1fs and %.1fs (headerTimeout 2s)"
          % (n, min(ended.values()), max(ended.values())), flush=True)
    check(max(ended.values()) < 3.5, "a trickling client held on for %.1fs with headerTimeout 2s"
          % max(ended.values()))
    crowd.close()
    check_eq(e.stop(), 0, "egressd exit code after SIGTERM")
    recs = e.audit()
    hto = [r for r in recs if r["event"] == "close" and r.get("end") == "header-timeout"]
    check_eq(len(hto), n, "close records with end header-timeout")


if __name__ == "__main__":
    run_cases("slowloris", [
        ("%d held partial heads: curl still served, RSS bounded" % HELD, case_held),
        ("headerTimeout 3s ends %d partial heads with 408 and header-timeout records" % TIMED,
         case_timeout),
        ("headerTimeout is not extended by a byte every 0.4 s", case_trickle),
    ])
