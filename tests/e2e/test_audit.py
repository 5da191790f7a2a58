"""The audit log (docs/design.md 7): JSON Lines, start/config first, per-decision records with their
fields, one close per connection, a decision on disk before its connection carries a byte,
SIGUSR1 reopen, stop last.  It fails closed and never blocks (docs/audit.md): a log that cannot
be written denies new connections with 503 audit-unavailable and says so once; a FIFO whose
reader stops fills a bounded backlog, then refuses decisions while open tunnels go on, and takes
them again once read; audit.fsync holds a decided connection until its record is durable."""

import hashlib
import json
import os
import re
import select
import signal
import ssl
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Conn, audit_verdict, base_config, check, check_audit_log,  # noqa
                     check_eq, decision_records, echo_handler, make_cert, parse_audit,
                     run_cases, run_curl, run_egressd, TestFailure)

HOSTS = {"origin.test": ["127.0.0.1"], "echo.test": ["127.0.0.1"], "evil.test": ["127.0.0.1"]}


def dump(recs):
    return "\n".join(json.dumps(r) for r in recs)


def case_mixed_session(h):
    origin = h.origin()
    echo = h.raw(echo_handler)
    e = h.egressd(base_config(HOSTS, session_bound={"domains": ["evil.test:*"]}))
    # allowed GET
    c = Conn(e.port)
    c.request("GET", "http://origin.test:%d/a?b=c" % origin.port)
    check_eq(c.read_response().status, 200, "allowed GET")
    allowed_client = c.local
    c.close()
    # denied POST
    c = Conn(e.port)
    c.request("POST", "http://evil.test:%d/up" % origin.port, body=b"abc")
    check_eq(c.read_response().status, 403, "denied POST")
    denied_client = c.local
    c.close()
    # tunnel with known byte counts
    c = Conn(e.port)
    c.request("CONNECT", "echo.test:%d" % echo.port)
    st, _, _ = c.read_head()
    check_eq(st, 200, "CONNECT")
    tunnel_client = c.local
    c.send(b"z" * 1000)
    got = b""
    while len(got) < 1000:
        d = c.sock.recv(4096)
        if not d:
            break
        got += d
    check_eq(len(got), 1000, "echoed bytes")
    c.close()
    time.sleep(0.3)
    check_eq(e.stop(), 0, "exit code")
    recs = e.audit()
    check_audit_log(recs)
    tss = [r["ts"] for r in recs]
    check_eq(tss, sorted(tss), "ts values in order")

    by_client = {r.get("client"): r for r in recs if r["event"] in ("request", "connect")}
    a = by_client.get(allowed_client)
    check(a, "no record for the allowed GET's client %s:\n%s" % (allowed_client, dump(recs)))
    want = {"event": "request", "front": "http", "session": "default", "method": "GET",
            "host": "origin.test", "port": origin.port, "path": "/a?b=c", "action": "http:read",
            "decision": "allow", "addr": "127.0.0.1:%d" % origin.port}
    for k, v in want.items():
        check_eq(a.get(k), v, "allowed request field %s" % k)
    check("reason" not in a and "status" not in a,
          "allowed request carries deny fields: %r" % a)

    d = by_client.get(denied_client)
    check(d, "no record for the denied POST's client %s" % denied_client)
    want = {"event": "request", "front": "http", "session": "default", "method": "POST",
            "host": "evil.test",
            "port": origin.port, "path": "/up", "action": "http:write", "decision": "deny",
            "reason": "host-denied", "status": 403}
    for k, v in want.items():
        check_eq(d.get(k), v, "denied request field %s" % k)
    check("domains: evil.test" in d.get("rule", ""), "denied request rule %r" % d.get("rule"))
    check("addr" not in d, "a denied request names an address dialled: %r" % d)

    t = by_client.get(tunnel_client)
    check(t, "no record for the tunnel's client %s" % tunnel_client)
    want = {"event": "connect", "front": "connect", "session": "default", "host": "echo.test",
            "port": echo.port, "decision": "allow", "addr": "127.0.0.1:%d" % echo.port}
    for k, v in want.items():
        check_eq(t.get(k), v, "connect field %s" % k)
    check("path" not in t, "connect record has a path (plain HTTP only): %r" % t)

    closes = {r["conn"]: r for r in recs if r["event"] == "close"}
    for rec, end in ((a, ("client-closed",)), (d, ("denied",)),
                     (t, ("client-closed", "upstream-closed"))):
        cl = closes.get(rec["conn"])
        check(cl, "no close record for conn %r" % rec["conn"])
        check(cl["end"] in end, "close end %r for %s, expected one of %r"
              % (cl["end"], rec["event"], end))
        check(cl["seq"] > rec["seq"], "close record before its decision record")
    tc = closes[t["conn"]]
    check_eq((tc["bytes_out"], tc["bytes_in"]), (1000, 1000),
             "tunnel close (bytes_out, bytes_in) for 1000 bytes each way")
    check_eq(len(set(r["conn"] for r in (a, d, t))), 3, "distinct conn ids")
    # Numbers are numbers (check_audit_log checks every numeric key's type).
    check(isinstance(recs[0].get("pid"), int) and recs[0]["pid"] == e.pid,
          "start record pid is not egressd's pid as a number: %r" % recs[0])
    check_eq(recs[1].get("sessions"), 1, "config record sessions")
    check_eq(closes[t["conn"]].get("front"), "connect", "the tunnel's close record front")


def case_status_only_when_sent(h):
    """A tunnel refused by its first bytes after its 200 went out gets no answer: its deny
    record carries no status.  A denial that is answered carries the status it sent."""
    cert, key = make_cert(h.tmp, "tls.test")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    origin = h.origin(ctx)
    e = h.egressd(base_config({"tls.test": ["127.0.0.1"], "evil.test": ["127.0.0.1"]},
                              session_bound={"domains": ["evil.test:*"]}))
    c = Conn(e.port)
    c.request("CONNECT", "tls.test:%d" % origin.port)
    st, _, _ = c.read_head()
    check_eq(st, 200, "CONNECT")
    cctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    cctx.check_hostname = False
    cctx.verify_mode = ssl.CERT_NONE
    c.sock.settimeout(5)
    try:
        cctx.wrap_socket(c.sock, server_hostname="other.test").recv(10)
    except (ssl.SSLError, OSError):
        pass
    c.close()
    c = Conn(e.port)
    c.request("CONNECT", "evil.test:%d" % origin.port)
    st, _, _ = c.read_head()
    check_eq(st, 403, "CONNECT to a denied host")
    c.close()
    check_eq(e.stop(), 0, "exit code")
    recs = e.audit()
    check_audit_log(recs)
    peek = [r for r in recs if r.get("reason") == "sni-mismatch"]
    check_eq(len(peek), 1, "sni-mismatch records")
    check("status" not in peek[0], "a tunnel closed without an answer has a status in its "
          "record: %r" % peek[0])
    check_eq(peek[0].get("front"), "connect", "front of the refused tunnel")
    denied = [r for r in recs if r.get("reason") == "host-denied"]
    check_eq([r.get("status") for r in denied], [403], "status of the answered denial")


def case_decision_on_disk_before_bytes(h):
    origin = h.origin()
    echo = h.raw(echo_handler)
    e = h.egressd(base_config(HOSTS))
    c = Conn(e.port)
    try:
        c.request("CONNECT", "echo.test:%d" % echo.port)
        st, _, _ = c.read_head()
        check_eq(st, 200, "CONNECT")
        # No waiting: the connect record must already be in the file.
        recs = parse_audit(e.audit_path)
        check(any(r["event"] == "connect" and r.get("host") == "echo.test" for r in recs),
              "connect record not on disk when the 200 arrived:\n%s" % dump(recs))
    finally:
        c.close()
    c = Conn(e.port)
    try:
        c.request("GET", "http://origin.test:%d/ondisk" % origin.port)
        check_eq(c.read_response().status, 200, "GET")
        recs = parse_audit(e.audit_path)
        check(any(r["event"] == "request" and r.get("path") == "/ondisk" for r in recs),
              "request record not on disk when the response arrived:\n%s" % dump(recs))
    finally:
        c.close()
    check_eq(e.stop(), 0, "exit code")
    check_audit_log(e.audit())


def case_sigusr1_reopens(h):
    origin = h.origin()
    e = h.egressd(base_config(HOSTS))
    c = Conn(e.port)
    c.request("GET", "http://origin.test:%d/before" % origin.port)
    check_eq(c.read_response().status, 200, "GET before rotation")
    c.close()
    rotated = e.audit_path + ".1"
    e.wait_audit(lambda r: r["event"] == "close", what="close record before rotation")
    os.rename(e.audit_path, rotated)
    e.signal(signal.SIGUSR1)
    deadline = time.time() + 5
    while not os.path.exists(e.audit_path) and time.time() < deadline:
        time.sleep(0.05)
    check(os.path.exists(e.audit_path), "SIGUSR1 did not create a new audit file")
    c = Conn(e.port)
    c.request("GET", "http://origin.test:%d/after" % origin.port)
    check_eq(c.read_response().status, 200, "GET after rotation")
    c.close()
    check_eq(e.stop(), 0, "exit code")
    old = parse_audit(rotated)
    new = parse_audit(e.audit_path)
    check(any(r.get("path") == "/before" for r in old), "old file lost /before")
    check(not any(r.get("path") == "/after" for r in old), "old file got /after after reopen")
    check(any(r.get("path") == "/after" for r in new), "new file lacks /after:\n%s" % dump(new))
    check_eq(new[-1]["event"], "stop", "last record in the new file")
    seqs = [r["seq"] for r in old + new]
    check_eq(seqs, list(range(1, len(seqs) + 1)), "seq continues across the reopen")


def case_chain_and_verify(h):
    origin = h.origin()
    cfg = base_config(HOSTS)
    e = h.egressd(dict(cfg, audit={"path": os.path.join(h.tmp, "chained.jsonl"), "chain": True}))
    for i in range(3):
        c = Conn(e.port)
        c.request("GET", "http://origin.test:%d/c%d" % (origin.port, i))
        check_eq(c.read_response().status, 200, "GET %d" % i)
        c.close()
    check_eq(e.stop(), 0, "exit code")
    path = os.path.join(h.tmp, "chained.jsonl")
    recs = parse_audit(path)
    check_audit_log(recs)
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")[:-1]
    for prev_line, rec in zip(lines, recs[1:]):
        check_eq(rec.get("prev"), hashlib.sha256(prev_line).hexdigest(),
                 "prev of seq %d (SHA-256 of the previous line)" % rec["seq"])
    r = run_egressd(["audit", "verify", path])
    check_eq(r.returncode, 0, "audit verify on an intact chain (stderr %r)" % r.stderr)
    # Change one decision in the middle: verify must now fail.
    i = next(k for k, rec in enumerate(recs) if rec["event"] == "request")
    lines[i] = lines[i].replace(b'"decision":"allow"', b'"decision":"deny"')
    check(b'"decision":"deny"' in lines[i], "could not tamper with %r" % lines[i])
    with open(path, "wb") as f:
        f.write(b"\n".join(lines) + b"\n")
    r = run_egressd(["audit", "verify", path])
    check_eq(r.returncode, 1, "audit verify on a tampered chain (stdout %r, stderr %r)"
             % (r.stdout, r.stderr))



def case_front_doors_agree(h):
    """The same policy cases through the two front doors built so far (a forwarded GET and a
    CONNECT) give decision records that agree on everything but their front (the audit part of
    issue 9's conformance table, which adds columns as front doors arrive)."""
    origin = h.origin()
    hosts = dict(HOSTS, **{"private.test": ["10.0.0.1"]})
    e = h.egressd(base_config(hosts, session_bound={"domains": ["evil.test:*"]}))
    rows = [("origin.test", "allow", None), ("evil.test", "deny", 403),
            ("private.test", "deny", 403), ("nx.invalid", "deny", 502)]
    clients = {}
    for host, _, _ in rows:
        for front in ("http", "connect"):
            c = Conn(e.port)
            if front == "http":
                c.request("GET", "http://%s:%d/agree" % (host, origin.port))
                st = c.read_response().status
            else:
                c.request("CONNECT", "%s:%d" % (host, origin.port))
                st = c.read_head()[0]
            clients[(host, front)] = (c.local, st)
            c.close()
    check_eq(e.stop(), 0, "exit code")
    recs = e.audit()
    check_audit_log(recs)
    for host, decision, status in rows:
        got = {}
        for front in ("http", "connect"):
            client, st = clients[(host, front)]
            d = decision_records(recs, client)
            check_eq(len(d), 1, "decision records of %s via %s" % (host, front))
            check_eq(d[0]["front"], front, "front of %s via %s" % (host, front))
            check_eq(d[0]["decision"], decision, "decision on %s via %s" % (host, front))
            check_eq(d[0].get("status"), status, "status of %s via %s" % (host, front))
            check_eq(st, 200 if status is None else status, "answer to %s via %s"
                     % (host, front))
            got[front] = audit_verdict(d[0])
        check_eq(got["connect"], got["http"], "verdict fields for %s, CONNECT vs forward" % host)


# ---- failing closed, never blocking --------------------------------------------------------

AUDIT_FAIL_RE = r"egressd: audit: .*new connections are denied \(503 audit-unavailable\)"
AUDIT_BACK_RE = r"egressd: audit: .* takes records again"


def stderr_count(e, pattern):
    rx = re.compile(pattern)
    return sum(1 for line in e.stderr().splitlines() if rx.search(line))


def count_accepts(sock):
    """A RawServer handler that reads whatever comes (the server counts the connection)."""
    try:
        while sock.recv(65536):
            pass
    except OSError:
        pass


def case_full_device_denies(h):
    origin = h.raw(count_accepts)
    cfg = base_config({"origin.test": ["127.0.0.1"]})
    e = h.egressd(dict(cfg, audit={"path": "/dev/full"}))
    proxy = "http://127.0.0.1:%d" % e.port
    for i in range(12):
        c = Conn(e.port)
        c.request("GET", "http://origin.test:%d/n%d" % (origin.port, i))
        r = c.read_response()
        c.close()
        check_eq(r.status, 503, "GET %d with the audit log on a full device" % i)
        check_eq(r.header("X-Egressd-Reason"), "audit-unavailable", "reason of GET %d" % i)
    r = run_curl(["-x", proxy, "-o", "/dev/null", "-w", "%{http_code}",
                  "-D", "-", "http://origin.test:%d/curl" % origin.port])
    out = r.stdout.decode("latin-1")
    check(out.endswith("503") and "X-Egressd-Reason: audit-unavailable" in out,
          "curl GET: %r %r" % (out, r.stderr))
    for i in range(3):
        c = Conn(e.port)
        c.request("CONNECT", "origin.test:%d" % origin.port)
        st, _, headers = c.read_head()
        c.close()
        check_eq(st, 503, "CONNECT %d with the audit log on a full device" % i)
        check_eq(dict(headers).get("X-Egressd-Reason"), "audit-unavailable", "CONNECT reason")
    r = run_curl(["-x", proxy, "--proxytunnel", "-k", "https://origin.test:%d/" % origin.port])
    check(r.returncode != 0 and b"503" in r.stderr, "curl CONNECT: rc %d, %r"
          % (r.returncode, r.stderr))
    time.sleep(0.3)
    check_eq(origin.accepted, 0, "connections that reached the origin")
    check_eq(stderr_count(e, AUDIT_FAIL_RE), 1, "audit failure lines on standard error for 17 "
             "requests (stderr:\n%s)" % e.stderr())
    check_eq(e.stop(), 0, "exit code")


class FifoReader:
    """Reads a FIFO (or a terminal's master side, fd) in a thread, into .data, unless paused."""

    def __init__(self, path, fd=None):
        self.fd = fd if fd is not None else os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.data = bytearray()
        self.run = threading.Event()
        self.run.set()
        self.stopping = False
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self.stopping:
            if not self.run.wait(0.1):
                continue
            r, _, _ = select.select([self.fd], [], [], 0.1)
            if r and self.run.is_set():
                try:
                    d = os.read(self.fd, 65536)
                except BlockingIOError:
                    continue
                self.data += d

    def close(self):
        if self.fd is None:
            return
        self.stopping = True
        self.run.set()
        self.thread.join(5)
        try:
            while True:
                d = os.read(self.fd, 65536)
                if not d:
                    break
                self.data += d
        except BlockingIOError:
            pass
        os.close(self.fd)
        self.fd = None


def fill_backlog(e, origin):
    """Long GETs (48 KB records) until egressd refuses one: (index, response) of the refusal."""
    long_path = "/" + "p" * 48000
    deadline = time.time() + 60
    for i in range(200):
        check(time.time() < deadline, "no refusal within 60 s (the loop may be blocked)")
        c = Conn(e.port)
        c.request("GET", "http://origin.test:%d%s%d" % (origin.port, long_path, i))
        r = c.read_response()
        c.close()
        if r.status == 503:
            return i, r
        check_eq(r.status, 200, "GET %d while the backlog fills" % i)
    raise TestFailure("200 long GETs without a refusal: the backlog is not bounded")


def passes_again(e, origin):
    """Whether a GET /after passes within 10 s."""
    deadline = time.time() + 10
    while time.time() < deadline:
        c = Conn(e.port)
        c.request("GET", "http://origin.test:%d/after" % origin.port)
        ok = c.read_response().status == 200
        c.close()
        if ok:
            return True
        time.sleep(0.1)
    return False


def case_fifo_reader_stalls(h):
    fifo = os.path.join(h.tmp, "audit.fifo")
    os.mkfifo(fifo)
    reader = h.add(FifoReader(fifo))
    origin = h.origin()
    echo = h.raw(echo_handler)
    cfg = base_config({"origin.test": ["127.0.0.1"], "echo.test": ["127.0.0.1"]})
    e = h.egressd(dict(cfg, audit={"path": fifo, "chain": True}))
    t = Conn(e.port)
    t.request("CONNECT", "echo.test:%d" % echo.port)
    check_eq(t.read_head()[0], 200, "CONNECT before the reader stops")
    t.send(b"a" * 100)
    check_eq(len(t.read_exact(100)), 100, "echo before the reader stops")

    reader.run.clear()
    i, r = fill_backlog(e, origin)
    check_eq(r.header("X-Egressd-Reason"), "audit-unavailable", "reason once the backlog is full")
    # 64 KiB of pipe and 1 MiB of backlog hold about 22 records of 48 KB.
    check(18 <= i <= 30, "refused after %d records of 48 KB" % i)
    # The open tunnel goes on.
    payload = os.urandom(4096)
    t.send(payload)
    check_eq(t.read_exact(len(payload)), payload, "tunnel bytes while decisions are refused")
    check(e.wait_stderr(AUDIT_FAIL_RE, 5), "no audit failure line on standard error")

    reader.run.set()
    check(passes_again(e, origin), "no request passed within 10 s of the reader resuming")
    check(e.wait_stderr(AUDIT_BACK_RE, 5), "no recovery line on standard error")
    check_eq(stderr_count(e, AUDIT_FAIL_RE), 1, "audit failure lines on standard error")
    t.send(payload)
    check_eq(t.read_exact(len(payload)), payload, "tunnel bytes after the reader resumed")
    t.close()
    check_eq(e.stop(), 0, "exit code")
    reader.close()

    lines = bytes(reader.data).split(b"\n")
    check_eq(lines[-1], b"", "the FIFO's last line is whole")
    recs = [json.loads(x) for x in lines[:-1]]
    check_audit_log(recs)
    aud = [x for x in recs if x["event"] == "audit"]
    check_eq(len(aud), 1, "recovery records")
    check(aud[0]["refused"] >= 1, "recovery record counts no refused decision: %r" % aud[0])
    check(any(x.get("path") == "/after" for x in recs), "the request after the resume is missing")
    path = os.path.join(h.tmp, "fifo.jsonl")
    with open(path, "wb") as f:
        f.write(bytes(reader.data))
    v = run_egressd(["audit", "verify", path])
    check_eq(v.returncode, 0, "audit verify on what the FIFO carried (%r)" % v.stderr)


def case_terminal_reader_stalls(h):
    """audit.path is a terminal whose reader stops: the same bounded backlog as a FIFO's."""
    import pty
    import tty
    master, slave = pty.openpty()
    tty.setraw(slave)  # no \r added to the records
    os.set_blocking(master, False)
    name = os.ttyname(slave)
    reader = h.add(FifoReader(None, fd=master))
    origin = h.origin()
    cfg = base_config({"origin.test": ["127.0.0.1"]})
    e = h.egressd(dict(cfg, audit={"path": name}))
    c = Conn(e.port)
    c.request("GET", "http://origin.test:%d/before" % origin.port)
    check_eq(c.read_response().status, 200, "GET before the reader stops")
    c.close()
    reader.run.clear()
    _, r = fill_backlog(e, origin)
    check_eq(r.header("X-Egressd-Reason"), "audit-unavailable", "reason once the backlog is full")
    reader.run.set()
    check(passes_again(e, origin), "no request passed within 10 s of the reader resuming")
    check_eq(e.stop(), 0, "exit code")
    reader.close()
    os.close(slave)
    recs = [json.loads(x) for x in bytes(reader.data).split(b"\n") if x.strip()]
    check(any(x.get("path") == "/after" for x in recs), "the request after the resume is missing")
    check_eq(len([x for x in recs if x["event"] == "audit"]), 1, "recovery records")


def threads_of(pid):
    names = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return names


def case_fsync(h):
    cert, key = make_cert(h.tmp, "tls.test")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    tls = h.origin(ctx)
    origin = h.origin()
    path = os.path.join(h.tmp, "durable.jsonl")
    cfg = dict(base_config({"tls.test": ["127.0.0.1"], "origin.test": ["127.0.0.1"]}),
               audit={"path": path, "chain": True, "fsync": True})
    e = h.egressd(cfg)
    r = run_egressd(["check", "-c", e.config_path])
    check("fsync: on" in r.stdout, "egressd check does not show fsync: %r" % r.stdout)
    check("egressd-audit" in threads_of(e.pid), "no writer thread: %r" % threads_of(e.pid))
    proxy = "http://127.0.0.1:%d" % e.port
    for i in range(5):
        r = run_curl(["-x", proxy, "--proxytunnel", "-k", "https://tls.test:%d/t%d"
                      % (tls.port, i)])
        check(r.returncode == 0, "curl CONNECT+TLS %d: %r" % (i, r.stderr))
        check_eq(json.loads(r.stdout.decode())["path"], "/t%d" % i, "path at the TLS origin")
        r = run_curl(["-x", proxy, "http://origin.test:%d/p%d" % (origin.port, i)])
        check(r.returncode == 0, "curl GET %d: %r" % (i, r.stderr))
        recs = parse_audit(path)
        check(any(x.get("path") == "/p%d" % i for x in recs), "GET %d not on record" % i)
    check_eq(e.stop(), 0, "exit code")
    recs = parse_audit(path)
    check_audit_log(recs)
    check_eq(len([x for x in recs if x["event"] == "connect" and x["decision"] == "allow"]), 5,
             "connect records")
    v = run_egressd(["audit", "verify", path])
    check_eq(v.returncode, 0, "audit verify (%r)" % v.stderr)
    check_eq(stderr_count(e, r"audit:"), 0, "audit lines on standard error")


if __name__ == "__main__":
    run_cases("audit", [
        ("allow, deny and tunnel records with their fields", case_mixed_session),
        ("decision on disk before the connection carries a byte",
         case_decision_on_disk_before_bytes),
        ("SIGUSR1 reopens the log after rotation", case_sigusr1_reopens),
        ("audit.chain: prev hashes, audit verify passes, then fails after tampering",
         case_chain_and_verify),
        ("status only when an answer was sent", case_status_only_when_sent),
        ("forward and CONNECT agree on every verdict field", case_front_doors_agree),
        ("audit.path on a full device: 503 audit-unavailable, nothing dialled, said once",
         case_full_device_denies),
        ("a FIFO whose reader stalls: refused when full, tunnels go on, back when read",
         case_fifo_reader_stalls),
        ("a terminal whose reader stalls: refused when full, back when read",
         case_terminal_reader_stalls),
        ("audit.fsync: true works end to end", case_fsync),
    ])
