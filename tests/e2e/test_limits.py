"""Timeouts and byte limits end connections, and the close record says which one did (docs/design.md
3 step 7-8, 4.4): header-timeout, idle-timeout, limit-bytes; a client's Connection: close is
honoured."""

import os
import select
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Conn, base_config, check, check_audit_log, check_eq, echo_handler,  # noqa
                     run_cases, send_n_handler)

HOSTS = {"origin.test": ["127.0.0.1"], "echo.test": ["127.0.0.1"], "big.test": ["127.0.0.1"]}


def stop_and_close_record(e, client=None):
    check_eq(e.stop(), 0, "egressd exit code after SIGTERM")
    recs = e.audit()
    check_audit_log(recs)
    closes = [r for r in recs if r["event"] == "close"]
    check_eq(len(closes), 1, "close records")
    return recs, closes[0]


def case_header_timeout(h):
    e = h.egressd(base_config(HOSTS, global_limits={"headerTimeout": "1s"}))
    c = Conn(e.port, timeout=10)
    try:
        c.send(b"GET http://origin.test:1/ HTTP/1.1\r\nHost: orig")  # never finished
        t0 = time.time()
        c.sock.settimeout(6)
        try:
            answer = c.read_to_eof()  # egressd may answer (408) before it closes
            closed = True
        except TimeoutError:
            answer, closed = c.buf, False
        took = time.time() - t0
        print("     answered %r before closing" % answer[:60])
        check(closed, "connection with an unfinished head still open after 6s (headerTimeout 1s)")
        check(took < 4, "closed only after %.1fs with headerTimeout 1s" % took)
    finally:
        c.close()
    _, cl = stop_and_close_record(e)
    check_eq(cl["end"], "header-timeout", "close record end")


def case_idle_tunnel_timeout(h):
    srv = h.raw(echo_handler)
    e = h.egressd(base_config(HOSTS, global_limits={"idleTimeout": "1s"}))
    c = Conn(e.port, timeout=10)
    try:
        c.request("CONNECT", "echo.test:%d" % srv.port)
        st, _, _ = c.read_head()
        check_eq(st, 200, "CONNECT status")
        c.send(b"ping")
        c.sock.settimeout(5)
        check_eq(c.sock.recv(10), b"ping", "echo through the tunnel")
        t0 = time.time()
        check(c.at_eof(8), "idle tunnel still open after 8s (idleTimeout 1s)")
        took = time.time() - t0
        check(took < 5, "idle tunnel closed only after %.1fs with idleTimeout 1s" % took)
    finally:
        c.close()
    _, cl = stop_and_close_record(e)
    check_eq(cl["end"], "idle-timeout", "close record end")


def received_under_limit(e, send, n):
    """Sends a request with send(c), takes its 200 head and then whatever arrives until the
    connection ends; checks that maxBytesIn 1MiB stopped the n bytes.  Returns the close
    record."""
    c = Conn(e.port, timeout=10)
    got = 0
    try:
        send(c)
        st, _, _ = c.read_head()
        check_eq(st, 200, "status")
        got = len(c.buf)
        c.buf = b""
        while True:
            d = c.sock.recv(65536)
            if not d:
                break
            got += len(d)
    except ConnectionResetError:
        pass
    finally:
        c.close()
    print("     client received %d bytes with maxBytesIn 1MiB" % got)
    check(got < n, "the whole %d bytes arrived despite maxBytesIn 1MiB" % n)
    check(got <= 2 * 1024 * 1024, "%d bytes arrived, far over maxBytesIn 1MiB" % got)
    _, cl = stop_and_close_record(e)
    check_eq(cl["end"], "limit-bytes", "close record end")
    return cl


def case_limit_bytes_in_tunnel(h):
    n = 8 * 1024 * 1024
    srv = h.raw(send_n_handler(n))
    e = h.egressd(base_config(HOSTS, session_limits={"maxBytesIn": "1MiB"}))
    cl = received_under_limit(e, lambda c: c.request("CONNECT", "big.test:%d" % srv.port), n)
    check(cl["bytes_in"] <= 2 * 1024 * 1024, "close bytes_in %r far over the limit" % cl)


def case_limit_bytes_in_download(h):
    # A plain-HTTP download counts like a tunnel, also while its body is spliced.
    n = 8 * 1024 * 1024
    origin = h.origin()
    e = h.egressd(base_config(HOSTS, session_limits={"maxBytesIn": "1MiB"}))
    cl = received_under_limit(
        e, lambda c: c.request("GET", "http://origin.test:%d/big?n=%d" % (origin.port, n)), n)
    check(cl["bytes_in"] <= 1024 * 1024, "close bytes_in %r over the 1MiB limit" % cl)


def case_limit_bytes_out_tunnel(h):
    srv = h.raw(echo_handler)
    e = h.egressd(base_config(HOSTS, session_limits={"maxBytesOut": "256KiB"}))
    c = Conn(e.port, timeout=10)
    sent = 0
    try:
        c.request("CONNECT", "echo.test:%d" % srv.port)
        st, _, _ = c.read_head()
        check_eq(st, 200, "CONNECT status")
        c.sock.settimeout(2)
        chunk = b"u" * 16384
        deadline = time.time() + 10
        while sent < 4 * 1024 * 1024 and time.time() < deadline:
            try:
                c.sock.sendall(chunk)
                sent += len(chunk)
                # Drain the echo so the upload never stalls on our side.
                while select.select([c.sock], [], [], 0)[0]:
                    if not c.sock.recv(65536):
                        raise ConnectionResetError
            except BlockingIOError:
                continue
            except (ConnectionResetError, BrokenPipeError, TimeoutError):
                break
    finally:
        c.close()
    print("     client sent %d bytes before the tunnel ended (maxBytesOut 256KiB)" % sent)
    check(sent < 4 * 1024 * 1024, "4 MiB went up despite maxBytesOut 256KiB")
    _, cl = stop_and_close_record(e)
    check_eq(cl["end"], "limit-bytes", "close record end")
    check(cl["bytes_out"] <= 1024 * 1024, "close bytes_out %r far over the limit" % cl)


def case_client_connection_close(h):
    origin = h.origin()
    e = h.egressd(base_config(HOSTS))
    c = Conn(e.port)
    try:
        c.request("GET", "http://origin.test:%d/last" % origin.port,
                  headers=[("Connection", "close")])
        r = c.read_response()
        check_eq(r.status, 200, "status")
        check(c.at_eof(3), "egressd kept the connection open after the client's Connection: close")
    finally:
        c.close()
    _, cl = stop_and_close_record(e)
    check(cl["end"] in ("client-closed", "upstream-closed"),
          "close end %r after Connection: close" % cl["end"])


if __name__ == "__main__":
    run_cases("limits", [
        ("headerTimeout closes an unfinished head: end header-timeout", case_header_timeout),
        ("idleTimeout closes an idle tunnel: end idle-timeout", case_idle_tunnel_timeout),
        ("maxBytesIn ends a tunnel: end limit-bytes", case_limit_bytes_in_tunnel),
        ("maxBytesIn ends a plain download: end limit-bytes", case_limit_bytes_in_download),
        ("maxBytesOut ends a tunnel: end limit-bytes", case_limit_bytes_out_tunnel),
        ("client's Connection: close is honoured", case_client_connection_close),
    ])
