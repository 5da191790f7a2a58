"""The audit log (docs/design.md 7): JSON Lines, start/config first, per-decision records with their
fields, one close per connection, a decision on disk before its connection carries a byte,
SIGUSR1 reopen, stop last."""

import hashlib
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Conn, base_config, check, check_audit_log, check_eq, echo_handler,  # noqa
                     parse_audit, run_cases, run_egressd)

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
    want = {"event": "request", "session": "default", "method": "GET", "host": "origin.test",
            "port": origin.port, "path": "/a?b=c", "action": "http:read", "decision": "allow",
            "addr": "127.0.0.1:%d" % origin.port}
    for k, v in want.items():
        check_eq(a.get(k), v, "allowed request field %s" % k)
    check("reason" not in a and "status" not in a,
          "allowed request carries deny fields: %r" % a)

    d = by_client.get(denied_client)
    check(d, "no record for the denied POST's client %s" % denied_client)
    want = {"event": "request", "session": "default", "method": "POST", "host": "evil.test",
            "port": origin.port, "path": "/up", "action": "http:write", "decision": "deny",
            "reason": "host-denied", "status": 403}
    for k, v in want.items():
        check_eq(d.get(k), v, "denied request field %s" % k)
    check("domains: evil.test" in d.get("rule", ""), "denied request rule %r" % d.get("rule"))
    check("addr" not in d, "a denied request names an address dialled: %r" % d)

    t = by_client.get(tunnel_client)
    check(t, "no record for the tunnel's client %s" % tunnel_client)
    want = {"event": "connect", "session": "default", "host": "echo.test", "port": echo.port,
            "decision": "allow", "addr": "127.0.0.1:%d" % echo.port}
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


if __name__ == "__main__":
    run_cases("audit", [
        ("allow, deny and tunnel records with their fields", case_mixed_session),
        ("decision on disk before the connection carries a byte",
         case_decision_on_disk_before_bytes),
        ("SIGUSR1 reopens the log after rotation", case_sigusr1_reopens),
        ("audit.chain: prev hashes, audit verify passes, then fails after tampering",
         case_chain_and_verify),
    ])
