"""SIGHUP reloads the config (docs/design.md 5): a valid new config takes effect for new connections;
one that fails validation is reported with its position and the running config stays."""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Conn, base_config, check, check_audit_log, check_eq, run_cases)  # noqa

HOSTS = {"origin.test": ["127.0.0.1"], "evil.test": ["127.0.0.1"]}


def status_of(e, url):
    c = Conn(e.port)
    try:
        c.request("GET", url)
        return c.read_response().status
    finally:
        c.close()


def wait_status(e, url, want, timeout=5.0):
    """Polls url through egressd until it answers want; returns the last status."""
    deadline = time.time() + timeout
    while True:
        st = status_of(e, url)
        if st == want or time.time() > deadline:
            return st
        time.sleep(0.1)


def case_reload_applies(h):
    origin = h.origin()
    url = "http://evil.test:%d/" % origin.port
    cfg = base_config(HOSTS, session_bound={"domains": ["evil.test:*"]})
    e = h.egressd(cfg)
    check_eq(status_of(e, url), 403, "evil.test before the reload")
    e.rewrite_config(base_config(HOSTS, session_bound={"domains": ["other.test:*"]}))
    e.signal(signal.SIGHUP)
    check_eq(wait_status(e, url, 200), 200, "evil.test after a reload that drops the deny")
    check_eq(e.stop(), 0, "exit code")
    recs = e.audit()
    check_audit_log(recs)
    reqs = [r for r in recs if r["event"] == "request" and r.get("host") == "evil.test"]
    check_eq((reqs[0]["decision"], reqs[-1]["decision"]), ("deny", "allow"),
             "first and last evil.test decisions")


def case_bad_reload_keeps_running_config(h):
    origin = h.origin()
    url = "http://evil.test:%d/" % origin.port
    e = h.egressd(base_config(HOSTS, session_bound={"domains": ["evil.test:*"]}))
    check_eq(status_of(e, url), 403, "evil.test before the reload")
    good = e.config_text()
    bad = good.replace("sessions:", "bogusTopLevel: 1\nsessions:", 1)
    line = bad.split("\n").index("bogusTopLevel: 1") + 1
    e.rewrite_config(text=bad)
    e.signal(signal.SIGHUP)
    said = e.wait_stderr(r"egressd: .*:%d:\d+: " % line, 5)
    check(said, "no 'egressd: FILE:%d:COL:' error after reloading a bad config; stderr:\n%s"
          % (line, e.stderr()))
    check(e.proc.poll() is None, "egressd exited after a bad reload")
    check_eq(status_of(e, url), 403, "evil.test after a failed reload (old config stays)")
    check_eq(e.stop(), 0, "exit code")
    check_audit_log(e.audit())


def case_reload_keeps_session_clock(h):
    # A reload must not hand a session a new lifetime: expiresIn counts from the session's start.
    origin = h.origin()
    url = "http://origin.test:%d/" % origin.port
    cfg = base_config(HOSTS, session_limits={"expiresIn": "2s"})
    e = h.egressd(cfg)
    check_eq(status_of(e, url), 200, "before expiry")
    kept = Conn(e.port)
    try:
        kept.request("GET", url)
        check_eq(kept.read_response().status, 200, "kept-alive connection, first request")
        time.sleep(2.3)
        kept.request("GET", url)
        check_eq(kept.read_response().status, 403,
                 "kept-alive connection after expiresIn (checked on every request)")
    finally:
        kept.close()
    check_eq(status_of(e, url), 403, "new connection after expiresIn")
    e.rewrite_config(base_config(HOSTS, session_limits={"expiresIn": "2s"}))
    e.signal(signal.SIGHUP)
    check(e.wait_stderr(r"egressd: reloaded", 5), "no reload message:\n%s" % e.stderr())
    check_eq(status_of(e, url), 403, "after a reload the session is still expired")
    check_eq(e.stop(), 0, "exit code")
    recs = e.audit()
    check_audit_log(recs)
    denied = [r for r in recs if r["event"] == "request" and r.get("reason") == "session-expired"]
    check_eq(len(denied), 3, "session-expired decisions")


def case_reload_keeps_byte_count(h):
    origin = h.origin()
    url = "http://origin.test:%d/" % origin.port
    cfg = base_config(HOSTS, session_limits={"maxBytesIn": "1KiB"})
    e = h.egressd(cfg)
    c = Conn(e.port)
    try:
        c.request("GET", "http://origin.test:%d/big?n=4096" % origin.port)
        c.read_response()
    except Exception:
        pass
    finally:
        c.close()
    check_eq(status_of(e, url), 429, "over maxBytesIn")
    e.signal(signal.SIGHUP)
    check(e.wait_stderr(r"egressd: reloaded", 5), "no reload message:\n%s" % e.stderr())
    check_eq(status_of(e, url), 429, "still over maxBytesIn after a reload")
    check_eq(e.stop(), 0, "exit code")


def case_restart_keys(h):
    # Keys a reload cannot apply are named, and their running values stay.
    origin = h.origin()
    url = "http://origin.test:%d/" % origin.port
    cfg = base_config(HOSTS)
    e = h.egressd(cfg)
    new = base_config(HOSTS)
    new["listen"]["proxy"] = ["127.0.0.1:1"]
    new["listen"]["socks5"] = ["127.0.0.1:0"]
    new["audit"] = {"path": os.path.join(h.tmp, "elsewhere.jsonl")}
    e.rewrite_config(new)
    e.signal(signal.SIGHUP)
    check(e.wait_stderr(r"egressd: reloaded", 5), "no reload message:\n%s" % e.stderr())
    for key in ("listen.proxy", "listen.socks5", "audit.path"):
        check("reload: %s changed; it takes effect only after a restart" % key in e.stderr(),
              "%s not reported: %s" % (key, e.stderr()))
    check_eq(status_of(e, url), 200, "the running listener still serves")
    check(not os.path.exists(os.path.join(h.tmp, "elsewhere.jsonl")), "the audit path moved")
    check_eq(e.stop(), 0, "exit code")


def case_pool_per_session(h):
    # A parked upstream serves only the session whose decision opened it.
    origin = h.origin()
    url = "http://origin.test:%d/" % origin.port
    sessions = {"a": {"auth": {"token": "ta"}}, "b": {"auth": {"token": "tb"}}}
    e = h.egressd(base_config(HOSTS, sessions=sessions))
    from harness import basic_auth
    ports = []
    for user, tok in (("a", "ta"), ("a", "ta"), ("b", "tb")):
        c = Conn(e.port)
        c.request("GET", url, headers=[("Proxy-Authorization", basic_auth(user, tok))])
        r = c.read_response()
        check_eq(r.status, 200, "GET as session %s" % user)
        ports.append(r.json()["peer_port"])
        c.close()
        time.sleep(0.2)
    check_eq(ports[0], ports[1], "session a's second connection reuses a's parked upstream")
    check(ports[2] != ports[0], "session b got a's parked upstream: %r" % ports)
    check_eq(e.stop(), 0, "exit code")


def case_reload_during_connect(h):
    # A reload that drops a destination while egressd's connect to it is still in progress: the
    # connect completes under the new config, which refuses it; no byte reaches the origin.
    import socket
    import threading
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(0)
    port = ls.getsockname()[1]
    # A full accept queue drops the next SYN: egressd's connect stays in progress.
    fillers = []
    for _ in range(3):
        f = socket.socket()
        f.setblocking(False)
        try:
            f.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(f)
    got = []
    try:
        time.sleep(0.2)
        e = h.egressd(base_config({"origin.test": ["127.0.0.1"]},
                                  session_bound={"allowDomains": ["origin.test:%d" % port],
                                                 "enforce": "sandbox"},
                                  global_limits={"connectTimeout": "8s"}))
        c = Conn(e.port)
        c.send(b"CONNECT origin.test:%d HTTP/1.1\r\nHost: origin.test:%d\r\n\r\n" % (port, port))
        time.sleep(0.5)
        e.rewrite_config(base_config({"origin.test": ["127.0.0.1"]},
                                     session_bound={"allowDomains": ["other.test"],
                                                    "enforce": "sandbox"},
                                     global_limits={"connectTimeout": "8s"}))
        e.signal(signal.SIGHUP)
        e.wait_stderr("reloaded", 5)

        def accept_all():
            ls.settimeout(6)
            try:
                while True:
                    got.append(ls.accept()[0])
            except OSError:
                pass
        threading.Thread(target=accept_all, daemon=True).start()
        r = c.read_response(head_only=True)
        check_eq(r.status, 403, "the CONNECT's answer once its connect completes after the reload")
        check_eq(r.header("X-Egressd-Reason"), "host-not-allowed", "its reason")
        try:
            c.send(b"\x00bytes after the reload\n")
        except OSError:
            pass
        time.sleep(1.0)
        received = b""
        for s in got:
            s.setblocking(False)
            try:
                received += s.recv(200)
            except (BlockingIOError, OSError):
                pass
        check_eq(received, b"", "bytes the origin received")
        c.close()
        check_eq(e.stop(), 0, "exit code")
        recs = e.audit()
        check_audit_log(recs)
        conn = [r for r in recs if r["event"] == "connect" and r.get("host") == "origin.test"]
        check_eq([(r["decision"], r.get("reason")) for r in conn], [("deny", "host-not-allowed")],
                 "the tunnel's records")
    finally:
        ls.close()
        for f in fillers + got:
            f.close()


if __name__ == "__main__":
    run_cases("reload", [
        ("SIGHUP applies a valid new config", case_reload_applies),
        ("SIGHUP with an invalid config reports it and keeps the old one",
         case_bad_reload_keeps_running_config),
        ("expiresIn holds on kept-alive connections and across a reload",
         case_reload_keeps_session_clock),
        ("byte counts survive a reload", case_reload_keeps_byte_count),
        ("a reload names the keys that need a restart; their running values stay",
         case_restart_keys),
        ("the upstream pool is kept per session", case_pool_per_session),
        ("a reload while egressd connects re-decides the connection before a byte moves",
         case_reload_during_connect),
    ])
