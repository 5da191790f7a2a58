"""CONNECT tunnels: TLS through the tunnel with curl, a raw byte relay, half-close, parallel
tunnels, and the SNI check on the first bytes."""

import json
import os
import socket
import ssl
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Conn, base_config, check, check_audit_log, check_eq, echo_handler,  # noqa
                     make_cert, run_cases, run_curl)


def finish(e):
    check_eq(e.stop(), 0, "egressd exit code after SIGTERM")
    recs = e.audit()
    check_audit_log(recs)
    return recs


def tls_origin(h):
    cert, key = make_cert(h.tmp, "tls.test")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return h.origin(ctx)


def open_tunnel(e, target):
    """A Conn with a CONNECT answered 200; fails the case otherwise."""
    c = Conn(e.port)
    c.request("CONNECT", target)
    status, reason, headers = c.read_head()
    check_eq((status, reason), (200, "Connection established"), "CONNECT status line")
    check_eq(c.buf, b"", "bytes after the CONNECT answer before any upstream data")
    return c


def case_curl_tls_through_tunnel(h):
    origin = tls_origin(h)
    e = h.egressd(base_config({"tls.test": ["127.0.0.1"]}))
    url = "https://tls.test:%d/secure?q=1" % origin.port
    r = run_curl(["-x", "http://127.0.0.1:%d" % e.port, "--proxytunnel", "-k", url])
    check(r.returncode == 0, "curl failed (%d): %s" % (r.returncode, r.stderr.decode()))
    info = json.loads(r.stdout.decode())
    check_eq(info["tls"], True, "origin saw TLS")
    check_eq(info["path"], "/secure?q=1", "path at the origin")
    check_eq(info["host"], "tls.test:%d" % origin.port, "Host at the origin")
    recs = finish(e)
    cons = [r for r in recs if r["event"] == "connect"]
    check_eq(len(cons), 1, "connect records")
    c = cons[0]
    for k, v in (("host", "tls.test"), ("port", origin.port), ("decision", "allow"),
                 ("session", "default"), ("addr", "127.0.0.1:%d" % origin.port)):
        check_eq(c.get(k), v, "connect record field %s" % k)
    check(c.get("client", "").startswith("127.0.0.1:"), "connect record client: %r" % c)
    closes = [r for r in recs if r["event"] == "close" and r["conn"] == c["conn"]]
    check_eq(len(closes), 1, "close records for the tunnel")
    check(closes[0]["bytes_in"] > 0 and closes[0]["bytes_out"] > 0,
          "tunnel close record counts no bytes: %r" % closes[0])


def case_raw_tunnel_echo(h):
    srv = h.raw(echo_handler)
    e = h.egressd(base_config({"echo.test": ["127.0.0.1"]}))
    c = open_tunnel(e, "echo.test:%d" % srv.port)
    try:
        payload = os.urandom(256 * 1024)
        got = bytearray()

        def reader():
            while len(got) < len(payload):
                d = c.sock.recv(65536)
                if not d:
                    return
                got.extend(d)
        t = threading.Thread(target=reader, daemon=True)
        t.start()
        c.send(payload)
        t.join(15)
        check_eq(bytes(got) == payload, True, "echoed bytes equal what was sent "
                 "(%d of %d received)" % (len(got), len(payload)))
        c.sock.shutdown(socket.SHUT_WR)
        check(c.at_eof(5), "tunnel not closed after the client's half-close and the echo "
              "server's close")
    finally:
        c.close()
    recs = finish(e)
    closes = [r for r in recs if r["event"] == "close"]
    check_eq(len(closes), 1, "close records")
    check(closes[0]["bytes_out"] >= len(payload) and closes[0]["bytes_in"] >= len(payload),
          "close record bytes %r smaller than the %d relayed" % (closes[0], len(payload)))


def case_half_close(h):
    def answer_after_eof(s):
        n = 0
        while True:
            d = s.recv(65536)
            if not d:
                break
            n += len(d)
        s.sendall(b"got %d\n" % n)
    srv = h.raw(answer_after_eof)
    e = h.egressd(base_config({"half.test": ["127.0.0.1"]}))
    c = open_tunnel(e, "half.test:%d" % srv.port)
    try:
        c.send(b"x" * 5000)
        c.sock.shutdown(socket.SHUT_WR)
        c.sock.settimeout(5)
        check_eq(c.read_to_eof(), b"got 5000\n", "answer sent after the client's half-close")
    finally:
        c.close()
    finish(e)


def case_parallel_tunnels(h):
    srv = h.raw(echo_handler)
    e = h.egressd(base_config({"echo.test": ["127.0.0.1"]}))
    errors = []

    def one(i):
        try:
            c = open_tunnel(e, "echo.test:%d" % srv.port)
            try:
                msg = (b"tunnel-%d-" % i) * 2000
                c.send(msg)
                got = b""
                while len(got) < len(msg):
                    d = c.sock.recv(65536)
                    if not d:
                        break
                    got += d
                if got != msg:
                    errors.append("tunnel %d echoed %d of %d bytes" % (i, len(got), len(msg)))
            finally:
                c.close()
        except Exception as ex:  # collected and reported by the main thread
            errors.append("tunnel %d: %s" % (i, ex))
    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    check(not errors, "; ".join(errors))
    recs = finish(e)
    check_eq(len([r for r in recs if r["event"] == "connect"]), 20, "connect records")
    check_eq(len([r for r in recs if r["event"] == "close"]), 20, "close records")


def case_sni_mismatch(h):
    origin = tls_origin(h)
    e = h.egressd(base_config({"tls.test": ["127.0.0.1"]}))
    c = open_tunnel(e, "tls.test:%d" % origin.port)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        c.sock.settimeout(5)
        ok = False
        try:
            t = ctx.wrap_socket(c.sock, server_hostname="other.test")
            t.sendall(b"GET / HTTP/1.1\r\nHost: other.test\r\n\r\n")
            ok = bool(t.recv(100))
        except (ssl.SSLError, OSError):
            ok = False
        check(not ok, "a TLS session with SNI other.test went through a tunnel to tls.test")
    finally:
        c.close()
    recs = finish(e)
    check(any(r.get("reason") == "sni-mismatch" and r.get("decision") == "deny" for r in recs),
          "no deny record with reason sni-mismatch: %s" % "\n".join(json.dumps(r) for r in recs))


if __name__ == "__main__":
    run_cases("connect", [
        ("CONNECT + TLS with curl --proxytunnel", case_curl_tls_through_tunnel),
        ("raw tunnel relays 256 KiB both ways", case_raw_tunnel_echo),
        ("half-close: answer after client EOF", case_half_close),
        ("20 parallel tunnels", case_parallel_tunnels),
        ("ClientHello SNI must match the CONNECT host", case_sni_mismatch),
    ])
