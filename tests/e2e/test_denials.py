"""Denials (docs/design.md 6), one declarative case per behaviour.

Each case is data: the session's bound (or whole sessions block), what the client sends, the
status, reason and rule that must come back, words the body must contain, and the fields of the
audit record that decides it.  Cases whose expected status is 200 are the allowed neighbours of
a denial (the same host with another action, an IP literal that an entry names), so that a proxy
that denies everything cannot pass the table.

Placeholders in requests: {origin} the HTTP origin's port, {echo} a raw echo server, {closed} a
port nothing listens on, {blackhole} a port whose SYNs go unanswered, {proxy} egressd's own port.
"""

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Blackhole, Conn, base_config, basic_auth, check, check_audit_log,  # noqa
                     check_eq, closed_port, echo_handler, run_cases)

HOSTS = {
    "origin.test": ["127.0.0.1"],
    "other.test": ["127.0.0.1"],
    "evil.test": ["127.0.0.1"],
    "echo.test": ["127.0.0.1"],
    "refused.test": ["127.0.0.1"],
    "slow.test": ["127.0.0.1"],
    "private.test": ["10.0.0.1"],
    "self.test": ["127.0.0.1"],
    # nx.invalid is deliberately absent: its lookup goes to a closed local port and fails.
}
ALLOW_NX = {"allowDomains": ["nx.invalid:*", "origin.test:*"], "enforce": "sandbox"}
RETRY_RE = re.compile(r"retry", re.I)


def case(name, request, status, reason=None, rule=None, body=(), bound=None, sessions=None,
         limits=None, session_limits=None, headers=(), audit=None, hold=None, before=(),
         delay=0, session="default", extra_headers=None):
    """One row of the table; see the module comment.  hold: a request whose connection stays
    open during the case; before: requests that must succeed first, each on its own
    connection; delay: seconds to wait before the case's request."""
    return dict(name=name, request=request, status=status, reason=reason, rule=rule,
                body=body, bound=bound, sessions=sessions, limits=limits,
                session_limits=session_limits, headers=headers, audit=audit or {}, hold=hold,
                before=before, delay=delay, session=session, extra_headers=extra_headers or {})


CASES = [
    # --- host policy -------------------------------------------------------------------------
    case("host-not-allowed (GET)", ("GET", "http://other.test:{origin}/x"), 403,
         "host-not-allowed", "allowDomains (no entry matches)", ["other.test", "allowDomains"],
         bound={"allowDomains": ["origin.test:*"], "enforce": "sandbox"},
         audit={"event": "request", "method": "GET", "host": "other.test", "path": "/x",
                "action": "http:read", "status": 403}),
    case("host-not-allowed (CONNECT)", ("CONNECT", "other.test:{origin}"), 403,
         "host-not-allowed", "allowDomains (no entry matches)", ["other.test", "allowDomains"],
         bound={"allowDomains": ["origin.test:*"], "enforce": "sandbox"},
         audit={"event": "connect", "host": "other.test"}),
    case("allowed neighbour: origin.test passes the same bound",
         ("GET", "http://origin.test:{origin}/ok"), 200,
         bound={"allowDomains": ["origin.test:*"], "enforce": "sandbox"},
         audit={"event": "request", "host": "origin.test", "action": "http:read"}),
    case("host-denied (GET)", ("GET", "http://evil.test:{origin}/"), 403, "host-denied",
         "domains: evil.test", ["evil.test", "domains"],
         bound={"domains": ["evil.test:*"]},
         audit={"event": "request", "host": "evil.test", "status": 403}),
    case("host-denied: subdomain of a deny entry", ("GET", "http://a.b.evil.test:{origin}/"), 403,
         "host-denied", "domains: evil.test", ["a.b.evil.test"],
         bound={"domains": ["evil.test:*"]},
         audit={"event": "request", "host": "a.b.evil.test"}),
    case("host-denied wins over allowDomains (CONNECT)", ("CONNECT", "evil.test:{origin}"), 403,
         "host-denied", "domains: evil.test", ["evil.test"],
         bound={"allowDomains": ["evil.test:*", "origin.test:*"], "domains": ["evil.test:*"],
                "enforce": "sandbox"},
         audit={"event": "connect", "host": "evil.test"}),
    case("host-denied: trailing dot and upper case canonicalised",
         ("GET", "http://EVIL.test.:{origin}/"), 403, "host-denied", "domains: evil.test",
         ["evil.test"], bound={"domains": ["evil.test:*"]},
         audit={"event": "request", "host": "evil.test"}),
    case("port-not-allowed (GET)", ("GET", "http://origin.test:{origin}/"), 403,
         "port-not-allowed", None, ["origin.test", "allowDomains"],
         bound={"allowDomains": ["origin.test"], "enforce": "sandbox"},
         audit={"event": "request", "host": "origin.test", "status": 403}),
    case("port-not-allowed (CONNECT)", ("CONNECT", "origin.test:{origin}"), 403,
         "port-not-allowed", None, ["origin.test"],
         bound={"allowDomains": ["origin.test"], "enforce": "sandbox"},
         audit={"event": "connect", "host": "origin.test"}),
    # --- actions -----------------------------------------------------------------------------
    case("action-denied: git push (receive-pack POST)",
         ("POST", "http://origin.test:{origin}/o/r.git/git-receive-pack"), 403, "action-denied",
         "actions: git:push", ["origin.test", "actions"],
         bound={"actions": ["git:push"]},
         audit={"event": "request", "method": "POST", "action": "git:push", "status": 403}),
    case("action-denied: git push ref advertisement",
         ("GET", "http://origin.test:{origin}/o/r.git/info/refs?service=git-receive-pack"), 403,
         "action-denied", "actions: git:push", ["actions"],
         bound={"actions": ["git:push"]},
         audit={"event": "request", "method": "GET", "action": "git:push"}),
    case("allowed neighbour: GET on the host that denies git:push",
         ("GET", "http://origin.test:{origin}/o/r"), 200, bound={"actions": ["git:push"]},
         audit={"event": "request", "action": "http:read"}),
    case("allowed neighbour: git fetch where only git:push is denied",
         ("GET", "http://origin.test:{origin}/o/r.git/info/refs?service=git-upload-pack"), 200,
         bound={"actions": ["git:push"]},
         audit={"event": "request", "action": "git:fetch"}),
    case("allowed neighbour: POST upload-pack is git:fetch",
         ("POST", "http://origin.test:{origin}/o/r.git/git-upload-pack"), 200,
         bound={"actions": ["git:push"]},
         audit={"event": "request", "method": "POST", "action": "git:fetch"}),
    # --- addresses -----------------------------------------------------------------------------
    case("address-denied (GET)", ("GET", "http://private.test:{origin}/"), 403,
         "address-denied", "dns.allowAddresses (10.0.0.1 is private 10.0.0.0/8)",
         ["private.test", "allowAddresses"],
         audit={"event": "request", "host": "private.test", "status": 403}),
    case("address-denied (CONNECT)", ("CONNECT", "private.test:{origin}"), 403,
         "address-denied", "10.0.0.1", ["private.test"],
         audit={"event": "connect", "host": "private.test"}),
    case("ip-literal (GET)", ("GET", "http://127.0.0.1:{origin}/"), 403, "ip-literal", None,
         ["127.0.0.1", "allowDomains"],
         audit={"event": "request", "host": "127.0.0.1", "status": 403}),
    case("ip-literal: decimal spelling 2130706433 is 127.0.0.1",
         ("GET", "http://2130706433:{origin}/"), 403, "ip-literal", None, ["127.0.0.1"],
         audit={"event": "request", "host": "127.0.0.1"}),
    case("ip-literal: hex spelling 0x7f.0.0.1 (CONNECT)", ("CONNECT", "0x7f.0.0.1:{origin}"),
         403, "ip-literal", None, ["127.0.0.1"],
         audit={"event": "connect", "host": "127.0.0.1"}),
    case("ip-literal: short spelling 127.1", ("GET", "http://127.1:{origin}/"), 403,
         "ip-literal", None, ["127.0.0.1"],
         audit={"event": "request", "host": "127.0.0.1"}),
    case("allowed neighbour: IP literal named by an allow entry",
         ("GET", "http://127.0.0.1:{origin}/lit"), 200,
         bound={"allowDomains": ["127.0.0.1:*"], "enforce": "sandbox"},
         audit={"event": "request", "host": "127.0.0.1"}),
    # --- sessions ------------------------------------------------------------------------------
    case("no-session: no default and no client match", ("GET", "http://origin.test:{origin}/"),
         403, "no-session", None, ["origin.test"],
         sessions={"agent": {"clients": ["192.0.2.1/32"]}}, session=None,
         audit={"event": "request", "host": "origin.test"}),
    case("auth-required: wrong token", ("GET", "http://origin.test:{origin}/"), 407,
         "auth-required", None, [],
         sessions={"default": {}, "agent": {"auth": {"token": "right-token"}}},
         headers=[("Proxy-Authorization", basic_auth("agent", "wrong-token"))], session=None,
         extra_headers={"Proxy-Authenticate": 'Basic realm="egressd"'}),
    case("allowed neighbour: right token picks the session",
         ("GET", "http://origin.test:{origin}/"), 200,
         sessions={"default": {"bound": {"network": {"domains": ["origin.test:*"]}}},
                   "agent": {"auth": {"token": "right-token"}}},
         headers=[("Proxy-Authorization", basic_auth("agent", "right-token"))],
         session="agent", audit={"event": "request", "session": "agent"}),
    case("limit-connections: second concurrent connection", ("GET",
         "http://origin.test:{origin}/"), 429, "limit-connections", None, ["maxConnections"],
         session_limits={"maxConnections": 1}, hold=("CONNECT", "echo.test:{echo}"),
         audit={"event": "request", "status": 429}),
    case("limit-new-hosts: a second new host in a minute",
         ("GET", "http://other.test:{origin}/"), 429, "limit-new-hosts", None,
         ["maxNewHostsPerMinute"], session_limits={"maxNewHostsPerMinute": 1},
         before=[("GET", "http://origin.test:{origin}/first")],
         audit={"event": "request", "host": "other.test", "status": 429},
         extra_headers={"Retry-After": "*"}),
    case("session-expired: after limits.expiresIn", ("GET", "http://origin.test:{origin}/"),
         403, "session-expired", None, ["expiresIn"], session_limits={"expiresIn": "1s"},
         delay=1.5, audit={"event": "request", "status": 403}),
    case("loop: a request addressed to egressd itself", ("GET", "http://self.test:{proxy}/"),
         508, "loop", None, ["self.test"], audit={"event": "request", "host": "self.test"}),
    # --- malformed requests ----------------------------------------------------------------------
    case("bad-request: garbage request line", ("RAW", b"GARBAGE\r\n\r\n"), 400, "bad-request",
         session=None, audit={}),
    case("bad-request: relative-form request to a proxy",
         ("RAW", b"GET /x HTTP/1.1\r\nHost: origin.test\r\n\r\n"), 400, "bad-request",
         session=None, audit={}),
    case("bad-request: raw non-ASCII host",
         ("RAW", b"GET http://b\xc3\xbccher.test:{origin}/ HTTP/1.1\r\nHost: x.test\r\n\r\n"),
         400, "bad-request", session=None, audit={}),
    case("bad-request: port out of range", ("RAW",
         b"GET http://origin.test:70000/ HTTP/1.1\r\nHost: origin.test:70000\r\n\r\n"), 400,
         "bad-request", session=None, audit={}),
    case("431: headers over limits.maxHeaderBytes", ("GET", "http://origin.test:{origin}/"),
         431, "*", None, [], limits={"maxHeaderBytes": 2048},
         headers=[("X-Big", "a" * 4000)], session=None, audit={}),
    # --- upstream failures -----------------------------------------------------------------------
    case("dns-failed: name with no answer", ("GET", "http://nx.invalid:{origin}/"), 502,
         "dns-failed", None, ["nx.invalid"], bound=ALLOW_NX,
         audit={"event": "request", "host": "nx.invalid"}),
    case("dns-failed (CONNECT)", ("CONNECT", "nx.invalid:443"), 502, "dns-failed", None,
         ["nx.invalid"], bound=ALLOW_NX, audit={"event": "connect", "host": "nx.invalid"}),
    case("upstream-refused (GET)", ("GET", "http://refused.test:{closed}/"), 502,
         "upstream-refused", None, ["refused.test"],
         audit={"event": "request", "host": "refused.test"}),
    case("upstream-refused (CONNECT)", ("CONNECT", "refused.test:{closed}"), 502,
         "upstream-refused", None, ["refused.test"],
         audit={"event": "connect", "host": "refused.test"}),
    case("upstream-timeout: SYNs unanswered", ("GET", "http://slow.test:{blackhole}/"), 504,
         "upstream-timeout", None, ["slow.test"], limits={"connectTimeout": "1s"},
         audit={"event": "request", "host": "slow.test"}),
]


def fill(x, ports):
    if isinstance(x, bytes):
        for k, v in ports.items():
            x = x.replace(b"{%s}" % k.encode(), str(v).encode())
        return x
    return x.format(**ports)


def send(c, request, headers):
    kind, target = request
    if kind == "RAW":
        c.send(target)
    else:
        c.request(kind, target, headers=headers)


def run_one(h, cs):
    origin = h.origin()
    echo = h.raw(echo_handler)
    ports = {"origin": origin.port, "echo": echo.port, "closed": closed_port()}
    if "{blackhole}" in str(cs["request"][1]):
        ports["blackhole"] = h.add(Blackhole()).port
    cfg = base_config(HOSTS, session_bound=cs["bound"], session_limits=cs["session_limits"],
                      global_limits=cs["limits"], sessions=cs["sessions"])
    e = h.egressd(cfg)
    ports["proxy"] = e.port
    for req in cs["before"]:
        b = Conn(e.port)
        try:
            send(b, (req[0], fill(req[1], ports)), [])
            check_eq(b.read_response().status, 200, "status of %s %s before the case" % req)
        finally:
            b.close()
    if cs["delay"]:
        time.sleep(cs["delay"])
    held = None
    if cs["hold"]:
        held = Conn(e.port)
        send(held, (cs["hold"][0], fill(cs["hold"][1], ports)), [])
        st, _, _ = held.read_head()
        check_eq(st, 200, "status of the connection held open before the case")
    c = Conn(e.port)
    try:
        send(c, (cs["request"][0], fill(cs["request"][1], ports)), list(cs["headers"]))
        r = c.read_response()
        if cs["status"] == 200:
            check_eq(r.status, 200, "status (allowed case); response %r" % r)
            check_eq(r.header("X-Egressd-Reason"), None, "X-Egressd-Reason on an allowed request")
        else:
            check_denial(cs, r, c)
    finally:
        c.close()
        if held:
            held.close()
    if held:
        # The slot is free again once the held connection is gone.
        deadline = time.time() + 5
        while True:
            c2 = Conn(e.port)
            try:
                c2.request("GET", "http://origin.test:%d/again" % origin.port)
                r2 = c2.read_response()
            finally:
                c2.close()
            if r2.status == 200 or time.time() > deadline:
                break
            time.sleep(0.1)
        check_eq(r2.status, 200, "status after the held connection closed")
    check_eq(e.stop(), 0, "egressd exit code after SIGTERM")
    recs = e.audit()
    check_audit_log(recs)
    if held:
        hr = [x for x in recs if x["event"] in ("request", "connect") and
              x.get("client") == held.local]
        check(hr and hr[0].get("decision") == "allow",
              "no allow record for the connection held open (client %s); records:\n%s"
              % (held.local, "\n".join(map(str, recs))))
    check_case_audit(cs, recs, c.local)


def check_denial(cs, r, c):
    check_eq(r.status, cs["status"], "status; response %r" % r)
    reason = r.header("X-Egressd-Reason")
    if cs["reason"] == "*":
        check(reason, "no X-Egressd-Reason header: %r" % r)
        print("     (431 answered with reason %r)" % reason)
    else:
        check_eq(reason, cs["reason"], "X-Egressd-Reason")
    rule = r.header("X-Egressd-Rule")
    if cs["status"] in (400, 431):
        pass  # no rule decided a malformed request
    elif cs["rule"]:
        check(rule and cs["rule"] in rule,
              "X-Egressd-Rule %r does not contain %r" % (rule, cs["rule"]))
    else:
        check(rule, "no X-Egressd-Rule header: %r" % r)
    if cs["session"]:
        check_eq(r.header("X-Egressd-Session"), cs["session"], "X-Egressd-Session")
    for k, v in cs["extra_headers"].items():
        if v == "*":
            check(r.header(k), "no %s header: %r" % (k, r))
        else:
            check_eq(r.header(k), v, "header %s" % k)
    check((r.header("Content-Type") or "").startswith("text/plain"),
          "Content-Type %r is not text/plain" % r.header("Content-Type"))
    check_eq((r.header("Connection") or "").lower(), "close", "Connection header of a denial")
    text = r.body.decode("utf-8", "replace")
    line = text.rstrip("\r\n")
    check(line and "\n" not in line, "body is not one line: %r" % text)
    for word in cs["body"]:
        check(word in line, "body does not contain %r: %r" % (word, line))
    sentences = [s for s in re.split(r"(?<=[.!])\s+", line) if s]
    last = sentences[-1] if sentences else ""
    # The wording is egressd's; what matters is that the last sentence is about retrying and
    # names the proxy (as "proxy" or "egressd") so an agent stops looking for a way around.
    check(RETRY_RE.search(last) and ("proxy" in last.lower() or "egressd" in last.lower()),
          "body's last sentence does not say retrying around the proxy will not work: %r" % line)
    check(c.at_eof(3), "connection still open after a denial")


def check_case_audit(cs, recs, client):
    """Checks the decision record of the case's own connection (found by its client address)
    and that connection's close record."""
    decisions = [x for x in recs if x["event"] in ("request", "connect")
                 and x.get("client") == client]
    if cs["status"] in (400, 431):
        # The malformed request has no host; its denial is still a record with the status.
        want = cs["reason"]
        found = [x for x in decisions if x.get("decision") == "deny"
                 and (want == "*" or x.get("reason") == want)]
        check(found, "no deny record for the malformed request; records:\n%s"
              % "\n".join(map(str, recs)))
        check_eq(found[-1].get("status"), cs["status"], "status in the deny record")
        closes = [x for x in recs if x["event"] == "close" and x["conn"] == found[-1].get("conn")]
        check(closes and closes[0]["end"] in ("denied", "error"),
              "close record for the malformed request: %r" % closes)
        return
    want = dict(cs["audit"])
    event = want.pop("event", None)
    mine = [x for x in decisions if event is None or x["event"] == event]
    check(mine, "no %s record for client %s; records:\n%s"
          % (event, client, "\n".join(map(str, recs))))
    rec = mine[0]
    if cs["status"] == 200:
        check_eq(rec.get("decision"), "allow", "audit decision")
        check(rec.get("addr"), "allowed record without addr: %r" % rec)
    else:
        check_eq(rec.get("decision"), "deny", "audit decision")
        check_eq(rec.get("reason"), cs["reason"], "audit reason")
        if cs["rule"]:
            check(cs["rule"] in (rec.get("rule") or ""),
                  "audit rule %r does not contain %r" % (rec.get("rule"), cs["rule"]))
        else:
            check(rec.get("rule"), "deny record without rule: %r" % rec)
    if cs["session"]:
        check_eq(rec.get("session"), cs["session"], "audit session")
    for k, v in want.items():
        check_eq(rec.get(k), v, "audit field %s" % k)
    closes = [x for x in recs if x["event"] == "close" and x["conn"] == rec["conn"]]
    check_eq(len(closes), 1, "close records for conn %r" % rec["conn"])
    if cs["status"] in (403, 407, 429, 508):
        check_eq(closes[0]["end"], "denied", "close record end after a denial")
    elif cs["status"] in (502, 504):
        check(closes[0]["end"] in ("denied", "error"),
              "close record end after a %d: %r" % (cs["status"], closes[0]))


def make(cs):
    return lambda h: run_one(h, cs)


if __name__ == "__main__":
    run_cases("denials", [(cs["name"], make(cs)) for cs in CASES])
