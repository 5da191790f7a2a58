"""HTTP edges (issue 9 item 7): an HTTP/1.0 client and a chunked answer, a websocket upgrade
relayed under the same decision and byte limits, the answer to a client still sending its
request, the start-up warning about sessions, IPv6 hosts in denial bodies, and egressd's own
address as an IP literal."""
import base64
import hashlib
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (Conn, RawServer, base_config, check, check_eq, run_cases)

HOSTS = {"origin.test": ["127.0.0.1"]}


def chunked_server(body_parts):
    """An origin that answers every request with a chunked body made of body_parts."""
    def handler(c):
        buf = b""
        while b"\r\n\r\n" not in buf:
            d = c.recv(65536)
            if not d:
                return
            buf += d
        out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        for p in body_parts:
            out += b"%x\r\n%s\r\n" % (len(p), p)
        out += b"0\r\n\r\n"
        c.sendall(out)
        c.settimeout(2)
        try:
            while c.recv(65536):
                pass
        except OSError:
            pass
    return handler


def case_http10_dechunked(h):
    parts = [b"hello ", b"chunked ", b"world" * 1000]
    srv = h.raw(chunked_server(parts))
    e = h.egressd(base_config(HOSTS))
    c = Conn(e.port)
    c.send(b"GET http://origin.test:%d/ HTTP/1.0\r\n\r\n" % srv.port)
    raw = c.read_to_eof()
    head, _, body = raw.partition(b"\r\n\r\n")
    check(head.startswith(b"HTTP/1.1 200"), "status line: %r" % head[:40])
    check(b"chunked" not in head.lower(), "an HTTP/1.0 client got chunked framing: %r" % head)
    check(b"connection: close" in head.lower(), "the close ends the body: %r" % head)
    check_eq(body, b"".join(parts), "the body, unframed")
    # The same answer to an HTTP/1.1 client keeps its chunks.
    c = Conn(e.port)
    c.request("GET", "http://origin.test:%d/" % srv.port)
    r = c.read_response()
    check_eq(r.header("Transfer-Encoding"), "chunked", "HTTP/1.1 client framing")
    check_eq(r.body, b"".join(parts), "HTTP/1.1 body")


WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def websocket_server(log):
    """An origin that accepts a websocket upgrade, sends a greeting right behind its 101, then
    echoes what comes."""
    def handler(c):
        buf = b""
        while b"\r\n\r\n" not in buf:
            d = c.recv(65536)
            if not d:
                return
            buf += d
        head, _, rest = buf.partition(b"\r\n\r\n")
        log["head"] = head
        key = [l.split(b":", 1)[1].strip() for l in head.split(b"\r\n")
               if l.lower().startswith(b"sec-websocket-key:")][0]
        accept = base64.b64encode(hashlib.sha1(key + WS_GUID).digest())
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                  b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n"
                  b"GREETING")
        got = rest
        while True:
            if got:
                log["echoed"] = log.get("echoed", 0) + len(got)
                c.sendall(got)
            got = c.recv(65536)
            if not got:
                return
    return handler


def ws_request(port, extra=b""):
    return (b"GET http://origin.test:%d/ws HTTP/1.1\r\nHost: origin.test\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            b"Sec-WebSocket-Version: 13\r\n\r\n" % port) + extra


def case_websocket(h):
    log = {}
    srv = h.raw(websocket_server(log))
    e = h.egressd(base_config(HOSTS))
    c = Conn(e.port)
    # A frame sent right behind the request waits for the 101, then goes through.
    c.send(ws_request(srv.port, b"EARLY"))
    r = c.read_response(head_only=True)
    check_eq(r.status, 101, "the upgrade")
    check_eq((r.header("Upgrade") or "").lower(), "websocket", "Upgrade header")
    check_eq(c.read_exact(8), b"GREETING", "the server's bytes right behind its 101")
    check_eq(c.read_exact(5), b"EARLY", "the client's frame sent with the request, echoed")
    c.send(b"ping-pong-frame")
    check_eq(c.read_exact(15), b"ping-pong-frame", "bytes relayed both ways after the 101")
    check(b"upgrade: websocket" in log["head"].lower(), "the origin got the upgrade request: %r"
          % log["head"])
    c.close()
    e.stop()
    recs = e.audit()
    reqs = [r for r in recs if r["event"] == "request"]
    check_eq([(r["decision"], r["action"]) for r in reqs], [("allow", "http:read,http:write")],
             "one decision for the upgraded request: it reads and writes")
    close = [r for r in recs if r["event"] == "close"][0]
    check(close["bytes_out"] >= 20 and close["bytes_in"] >= 20 + 8, "bytes counted: %r" % close)


def case_websocket_limits(h):
    log = {}
    srv = h.raw(websocket_server(log))
    e = h.egressd(base_config(HOSTS, session_limits={"maxBytesOut": "4KiB"}))
    c = Conn(e.port)
    c.send(ws_request(srv.port))
    check_eq(c.read_response(head_only=True).status, 101, "the upgrade")
    c.read_exact(8)
    try:
        c.send(b"x" * 20000)
    except OSError:
        pass
    time.sleep(1.0)
    check(log.get("echoed", 0) <= 4096, "bytes past maxBytesOut through a websocket: %d"
          % log.get("echoed", 0))
    check(c.at_eof(3) or True, "")


def case_websocket_write_denied(h):
    # A websocket carries writes: a bound that denies http:write refuses the upgrade.
    log = {}
    srv = h.raw(websocket_server(log))
    e = h.egressd(base_config(HOSTS, session_bound={"actions": ["http:write"]}))
    c = Conn(e.port)
    c.send(ws_request(srv.port))
    r = c.read_response()
    check_eq(r.status, 403, "a websocket upgrade with http:write denied")
    check_eq(r.header("X-Egressd-Reason"), "action-denied", "reason")
    check("head" not in log, "the upgrade reached the origin")


def case_upgrade_refused_without_ask(h):
    # A 101 the client did not ask for (no Upgrade: websocket) is an upstream error.
    def handler(c):
        buf = b""
        while b"\r\n\r\n" not in buf:
            d = c.recv(65536)
            if not d:
                return
            buf += d
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n")
        time.sleep(1)
    srv = h.raw(handler)
    e = h.egressd(base_config(HOSTS))
    c = Conn(e.port)
    c.request("GET", "http://origin.test:%d/" % srv.port)
    r = c.read_response()
    check_eq(r.status, 502, "an unasked-for 101")
    check_eq(r.header("X-Egressd-Reason"), "upstream-error", "reason")


def case_linger_431(h):
    # A client that sends a 200 KB head in one go still reads its 431: the socket lingers
    # instead of resetting what the client has not read.
    e = h.egressd(base_config(HOSTS))
    results = []

    def one():
        s = socket.create_connection(("127.0.0.1", e.port), timeout=10)
        try:
            head = (b"GET http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\n" +
                    b"X-Big: " + b"a" * 200000 + b"\r\n\r\n")
            try:
                s.sendall(head)
            except OSError:
                pass
            got = b""
            try:
                while True:
                    d = s.recv(65536)
                    if not d:
                        break
                    got += d
            except OSError as ex:
                results.append(("error", repr(ex), got[:60]))
                return
            results.append(("ok", got.split(b"\r\n", 1)[0]))
        finally:
            s.close()
    threads = [threading.Thread(target=one) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    bad = [r for r in results if r[0] != "ok" or b" 431 " not in r[1]]
    check_eq(len(results), 20, "clients that finished")
    check(not bad, "clients that did not read their 431: %r" % bad[:3])


def case_startup_warning(h):
    cfg = base_config(HOSTS, sessions={"agent": {"auth": {"token": "t0ken"}}})
    e = h.egressd(cfg)
    time.sleep(0.3)
    check("no session named" not in e.stderr(),
          "a warning about default with a token session: %r" % e.stderr())
    e.stop()
    cfg = base_config(HOSTS, sessions={})
    e = h.egressd(cfg, name="nosessions")
    check(e.wait_stderr(r"no session named \"default\"", 3),
          "no warning without any way to pick a session: %r" % e.stderr())


def case_ipv6_bracketed(h):
    e = h.egressd(base_config(HOSTS, session_bound={"allowDomains": ["origin.test"],
                                                    "enforce": "sandbox"}))
    c = Conn(e.port)
    c.send(b"CONNECT [2001:db8::1]:443 HTTP/1.1\r\nHost: [2001:db8::1]:443\r\n\r\n")
    r = c.read_response()
    check_eq(r.status, 403, "CONNECT to an IPv6 literal no entry names")
    body = r.body.decode()
    check("[2001:db8::1]:443" in body, "IPv6 host bracketed in the body: %r" % body)


def case_own_address_no_advice(h):
    e = h.egressd(base_config(HOSTS, session_bound={"allowDomains": ["origin.test"],
                                                    "enforce": "sandbox"}))
    c = Conn(e.port)
    target = b"127.0.0.1:%d" % e.port
    c.send(b"CONNECT " + target + b" HTTP/1.1\r\nHost: " + target + b"\r\n\r\n")
    r = c.read_response()
    check_eq(r.status, 508, "CONNECT to egressd's own address")
    check_eq(r.header("X-Egressd-Reason"), "loop", "reason")
    check("allowDomains" not in r.body.decode(), "advice to allow egressd itself: %r" % r.body)
    # The DNS listener is egressd too (its TCP port).
    cfg = base_config({"dns.test": ["127.0.0.1"]}, session_bound={"allowDomains": ["dns.test:*"],
                                                                  "enforce": "sandbox"})
    cfg["listen"]["dns"] = ["127.0.0.1:0"]
    e2 = h.egressd(cfg, name="dns")
    import re
    e2.wait_stderr(r"\(dns", 5)
    m = re.search(r"listening on 127\.0\.0\.1:(\d+) \(dns", e2.stderr())
    check(m is not None, "no DNS listener line: %r" % e2.stderr())
    c = Conn(e2.port)
    c.send(b"CONNECT dns.test:%s HTTP/1.1\r\nHost: dns.test\r\n\r\n" % m.group(1).encode())
    r = c.read_response()
    check_eq((r.status, r.header("X-Egressd-Reason")), (508, "loop"),
             "CONNECT to egressd's DNS listener")


if __name__ == "__main__":
    run_cases("http edges", [
        ("an HTTP/1.0 client gets a chunked answer unframed, ended by the close",
         case_http10_dechunked),
        ("a websocket upgrade is relayed both ways after the 101", case_websocket),
        ("a websocket is held to the session's byte limits", case_websocket_limits),
        ("a websocket writes: refused when http:write is denied", case_websocket_write_denied),
        ("a 101 the client did not ask for is 502 upstream-error",
         case_upgrade_refused_without_ask),
        ("20 clients sending a 200 KB head each read their 431", case_linger_431),
        ("the default-session warning only when no session can be picked",
         case_startup_warning),
        ("an IPv6 literal is bracketed in a denial's body", case_ipv6_bracketed),
        ("egressd's own address: 508 loop, no advice to allow it", case_own_address_no_advice),
    ])
