"""SIGHUP reloads the config (DESIGN.md 5): a valid new config takes effect for new connections;
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


if __name__ == "__main__":
    run_cases("reload", [
        ("SIGHUP applies a valid new config", case_reload_applies),
        ("SIGHUP with an invalid config reports it and keeps the old one",
         case_bad_reload_keeps_running_config),
    ])
