"""Plain HTTP forwarding: methods, bodies (Content-Length and chunked), Host, hop-by-hop
headers, keep-alive to the client and connection reuse upstream."""

import hashlib
import json
import os
import socket
import time
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Conn, base_config, basic_auth, check, check_audit_log, check_eq,  # noqa
                     pattern_bytes, pattern_sha256, run_cases, run_curl)

HOP_BY_HOP = ["connection", "proxy-connection", "proxy-authorization", "keep-alive", "te",
              "trailer", "upgrade"]


def start(h, sessions=None):
    origin = h.origin()
    e = h.egressd(base_config({"origin.test": ["127.0.0.1"]}, sessions=sessions))
    return origin, e


def finish(e):
    """Clean stop: exit 0 and a well-formed audit log; returns the records."""
    check_eq(e.stop(), 0, "egressd exit code after SIGTERM")
    recs = e.audit()
    check_audit_log(recs)
    return recs


def proxy(e):
    return "http://127.0.0.1:%d" % e.port


def body_file(h, n, name="body.bin"):
    data = os.urandom(n)
    path = os.path.join(h.tmp, name)
    with open(path, "wb") as f:
        f.write(data)
    return path, data


def echo_of(r):
    check(r.returncode == 0, "curl failed (%d): %s" % (r.returncode, r.stderr.decode()))
    return json.loads(r.stdout.decode())


def case_get(h):
    origin, e = start(h)
    url = "http://origin.test:%d/hello?x=1" % origin.port
    info = echo_of(run_curl(["-x", proxy(e), url]))
    check_eq(info["method"], "GET", "method the origin saw")
    check_eq(info["path"], "/hello?x=1", "request target the origin saw (origin-form)")
    check_eq(info["host"], "origin.test:%d" % origin.port, "Host the origin saw")
    recs = finish(e)
    reqs = [r for r in recs if r["event"] == "request"]
    check_eq(len(reqs), 1, "request records")
    r = reqs[0]
    for k, v in (("method", "GET"), ("host", "origin.test"), ("port", origin.port),
                 ("path", "/hello?x=1"), ("action", "http:read"), ("decision", "allow"),
                 ("session", "default"), ("addr", "127.0.0.1:%d" % origin.port)):
        check_eq(r.get(k), v, "request record field %s" % k)
    check(r.get("client", "").startswith("127.0.0.1:"), "request record client: %r" % r)


def case_post_content_length(h):
    origin, e = start(h)
    path, data = body_file(h, 300 * 1024)
    url = "http://origin.test:%d/upload" % origin.port
    info = echo_of(run_curl(["-x", proxy(e), "--data-binary", "@" + path,
                             "-H", "Content-Type: application/octet-stream", url]))
    check_eq(info["method"], "POST", "method")
    check_eq(info["chunked"], False, "origin got a chunked body")
    check_eq(info["body_len"], len(data), "body length at the origin")
    check_eq(info["body_sha256"], hashlib.sha256(data).hexdigest(), "body sha256 at the origin")
    check_eq(info["host"], "origin.test:%d" % origin.port, "Host")
    recs = finish(e)
    reqs = [r for r in recs if r["event"] == "request"]
    check_eq([(r["method"], r["action"]) for r in reqs], [("POST", "http:write")],
             "request records (method, action)")


def case_post_chunked(h):
    origin, e = start(h)
    path, data = body_file(h, 200 * 1024 + 17)
    url = "http://origin.test:%d/chunked" % origin.port
    info = echo_of(run_curl(["-x", proxy(e), "--data-binary", "@" + path,
                             "-H", "Transfer-Encoding: chunked", url]))
    check_eq(info["body_len"], len(data), "chunked body length at the origin")
    check_eq(info["body_sha256"], hashlib.sha256(data).hexdigest(), "chunked body sha256")
    finish(e)


def case_put_delete_raw(h):
    origin, e = start(h)
    c = Conn(e.port)
    try:
        body = b"put-body-" * 1000
        c.request("PUT", "http://origin.test:%d/obj/1" % origin.port, body=body)
        r = c.read_response()
        check_eq(r.status, 200, "PUT status")
        info = r.json()
        check_eq((info["method"], info["body_len"], info["body_sha256"]),
                 ("PUT", len(body), hashlib.sha256(body).hexdigest()), "PUT at the origin")
        c.request("DELETE", "http://origin.test:%d/obj/1" % origin.port)
        r = c.read_response()
        check_eq(r.status, 200, "DELETE status")
        check_eq(r.json()["method"], "DELETE", "DELETE at the origin")
    finally:
        c.close()
    recs = finish(e)
    check_eq([(r["method"], r["action"]) for r in recs if r["event"] == "request"],
             [("PUT", "http:write"), ("DELETE", "http:write")], "request records")


def case_hop_by_hop_removed(h):
    sessions = {"default": {}, "agent": {"auth": {"token": "s3cret-token"}}}
    origin, e = start(h, sessions=sessions)
    c = Conn(e.port)
    try:
        c.request("GET", "http://origin.test:%d/hop" % origin.port, headers=[
            ("Connection", "keep-alive, X-Drop-Me"),
            ("X-Drop-Me", "1"),
            ("Proxy-Connection", "keep-alive"),
            ("Proxy-Authorization", basic_auth("agent", "s3cret-token")),
            ("Keep-Alive", "timeout=5"),
            ("TE", "trailers"),
            ("Trailer", "X-Trailer"),
            ("Upgrade", "h2c-never"),
            ("X-Keep", "kept"),
            ("User-Agent", "e2e-test/1"),
        ])
        r = c.read_response()
        check_eq(r.status, 200, "status")
        info = r.json()
    finally:
        c.close()
    seen = {k.lower(): v for k, v in info["headers"]}
    for name in HOP_BY_HOP[1:] + ["x-drop-me"]:
        check(name not in seen, "hop-by-hop header %s reached the origin: %r" % (name, seen))
    check("x-drop-me" not in seen.get("connection", "").lower(),
          "client's Connection header reached the origin: %r" % seen)
    check_eq(seen.get("x-keep"), "kept", "end-to-end header X-Keep at the origin")
    check_eq(seen.get("user-agent"), "e2e-test/1", "User-Agent at the origin")
    recs = finish(e)
    reqs = [r for r in recs if r["event"] == "request"]
    check_eq([r.get("session") for r in reqs], ["agent"], "session chosen by Proxy-Authorization")


def case_curl_keepalive_two_urls(h):
    origin, e = start(h)
    u1 = "http://origin.test:%d/one" % origin.port
    u2 = "http://origin.test:%d/two" % origin.port
    r = run_curl(["-v", "-x", proxy(e), u1, u2])
    check(r.returncode == 0, "curl failed: %s" % r.stderr.decode())
    err = r.stderr.decode()
    check("Re-using existing connection" in err,
          "curl did not reuse the proxy connection; curl -v said:\n%s" % err)
    out = r.stdout.decode()
    check('"path": "/one"' in out and '"path": "/two"' in out, "both responses: %r" % out)
    recs = finish(e)
    reqs = [r for r in recs if r["event"] == "request"]
    check_eq([r["path"] for r in reqs], ["/one", "/two"], "request record paths")
    check_eq(len({r["conn"] for r in reqs}), 1, "distinct conn ids for the two requests")
    closes = [r for r in recs if r["event"] == "close"]
    check_eq(len(closes), 1, "close records for one kept-alive connection")


def case_raw_keepalive_upstream_reuse(h):
    origin, e = start(h)
    c = Conn(e.port)
    try:
        peers = []
        for i in range(3):
            c.request("GET", "http://origin.test:%d/r%d" % (origin.port, i))
            r = c.read_response()
            check_eq(r.status, 200, "status of request %d" % i)
            check(not r.closed, "response %d was delimited by close" % i)
            info = r.json()
            check_eq(info["path"], "/r%d" % i, "path of request %d" % i)
            peers.append(info["peer_port"])
    finally:
        c.close()
    check_eq(len(set(peers)), 1, "upstream source ports across 3 requests (reuse upstream)")
    check_eq(origin.connections, 1, "upstream connections the origin accepted")
    finish(e)


def case_upstream_pool_across_clients(h):
    origin, e = start(h)
    peers = []
    for i in range(3):
        # A new client connection each time: the upstream is parked between them.
        c = Conn(e.port)
        try:
            c.request("GET", "http://origin.test:%d/p%d" % (origin.port, i))
            r = c.read_response()
            check_eq(r.status, 200, "status of request %d" % i)
            peers.append(r.json()["peer_port"])
        finally:
            c.close()
        time.sleep(0.1)
    check_eq(len(set(peers)), 1, "upstream source ports across 3 client connections")
    check_eq(origin.connections, 1, "upstream connections the origin accepted")
    recs = finish(e)
    reqs = [r for r in recs if r["event"] == "request"]
    check_eq(len({r["conn"] for r in reqs}), 3, "client connections in the request records")
    check(all(r["decision"] == "allow" and r.get("addr") for r in reqs),
          "every reused request has its own allow record with the address: %r" % reqs)


def case_head_then_get(h):
    origin, e = start(h)
    c = Conn(e.port)
    try:
        c.request("HEAD", "http://origin.test:%d/head" % origin.port)
        r = c.read_response(head_only=True)
        check_eq(r.status, 200, "HEAD status")
        check(r.header("Content-Length") is not None, "HEAD response lost Content-Length")
        c.request("GET", "http://origin.test:%d/after-head" % origin.port)
        r = c.read_response()
        check_eq(r.status, 200, "GET after HEAD status")
        check_eq(r.json()["path"], "/after-head", "GET after HEAD reached the origin")
    finally:
        c.close()
    recs = finish(e)
    check_eq([(r["method"], r["action"]) for r in recs if r["event"] == "request"],
             [("HEAD", "http:read"), ("GET", "http:read")], "request records")


def case_big_download(h):
    origin, e = start(h)
    n = 16 * 1024 * 1024
    out = os.path.join(h.tmp, "big.bin")
    r = run_curl(["-x", proxy(e), "-o", out, "http://origin.test:%d/big?n=%d" % (origin.port, n)],
                 timeout=60)
    check(r.returncode == 0, "curl failed: %s" % r.stderr.decode())
    with open(out, "rb") as f:
        got = hashlib.sha256(f.read()).hexdigest()
    check_eq(got, pattern_sha256(n), "sha256 of a 16 MiB download")
    recs = finish(e)
    closes = [r for r in recs if r["event"] == "close"]
    check_eq(len(closes), 1, "close records")
    check(closes[0]["bytes_in"] >= n, "close bytes_in %r < %d" % (closes[0]["bytes_in"], n))


def read_head_of(c):
    """Reads a request head from a raw upstream socket."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = c.recv(65536)
        if not d:
            return None
        buf += d
    return buf


def raw_response_handler(head, n, then_close=True):
    """A RawServer handler answering one request with head and n pattern bytes, then closing."""
    def handler(c):
        if read_head_of(c) is None:
            return
        c.sendall(head)
        sent = 0
        while sent < n:
            chunk = pattern_bytes(min(1 << 20, n - sent), sent)
            c.sendall(chunk)
            sent += len(chunk)
        if then_close:
            c.shutdown(socket.SHUT_WR)
    return handler


def case_long_body_then_keepalive(h):
    # A body long enough to be spliced is taken to its last byte and no further: the next
    # response on the same upstream connection parses.
    origin, e = start(h)
    n = 3 * 1024 * 1024 + 17
    c = Conn(e.port)
    try:
        c.request("GET", "http://origin.test:%d/big?n=%d" % (origin.port, n))
        r = c.read_response()
        check_eq(r.status, 200, "status of the long response")
        check_eq(len(r.body), n, "body bytes")
        check_eq(hashlib.sha256(r.body).hexdigest(), pattern_sha256(n), "sha256 of the body")
        c.request("GET", "http://origin.test:%d/after" % origin.port)
        r = c.read_response()
        check_eq(r.status, 200, "status of the request after it")
        check_eq(r.json()["path"], "/after", "path of the request after it")
    finally:
        c.close()
    check_eq(origin.connections, 1, "upstream connections the origin accepted")
    recs = finish(e)
    closes = [r for r in recs if r["event"] == "close"]
    check_eq(len(closes), 1, "close records")
    check(closes[0]["bytes_in"] >= n, "close bytes_in %r < %d" % (closes[0]["bytes_in"], n))


def case_long_body_to_eof(h):
    # No Content-Length: the body ends where the upstream closes, and so does the client's.
    n = 5 * 1024 * 1024
    srv = h.raw(raw_response_handler(b"HTTP/1.1 200 OK\r\nContent-Type: x/y\r\n\r\n", n))
    e = h.egressd(base_config({"eof.test": ["127.0.0.1"]}))
    out = os.path.join(h.tmp, "eof.bin")
    r = run_curl(["-x", proxy(e), "-o", out, "http://eof.test:%d/x" % srv.port], timeout=60)
    check(r.returncode == 0, "curl failed (%d): %s" % (r.returncode, r.stderr.decode()))
    with open(out, "rb") as f:
        got = f.read()
    check_eq(len(got), n, "bytes received")
    check_eq(hashlib.sha256(got).hexdigest(), pattern_sha256(n), "sha256 of the body")
    recs = finish(e)
    closes = [r for r in recs if r["event"] == "close"]
    check_eq(len(closes), 1, "close records")
    check_eq(closes[0]["end"], "upstream-closed", "close record end")
    check(closes[0]["bytes_in"] >= n, "close bytes_in %r < %d" % (closes[0]["bytes_in"], n))


def case_long_body_cut_short(h):
    # The upstream promises 4 MiB and closes after 1 MiB: the client sees a short body and the
    # connection end, not a hang; the close record says the upstream closed.
    n, promised = 1024 * 1024, 4 * 1024 * 1024
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % promised
    srv = h.raw(raw_response_handler(head, n))
    e = h.egressd(base_config({"cut.test": ["127.0.0.1"]}))
    c = Conn(e.port, timeout=20)
    try:
        c.request("GET", "http://cut.test:%d/x" % srv.port)
        st, _, hdrs = c.read_head()
        check_eq(st, 200, "status")
        check_eq(dict((k.lower(), v) for k, v in hdrs).get("content-length"), str(promised),
                 "Content-Length passed on")
        got = len(c.read_to_eof())
    finally:
        c.close()
    check_eq(got, n, "body bytes before the connection ended")
    recs = finish(e)
    closes = [r for r in recs if r["event"] == "close"]
    check_eq(closes[0]["end"], "upstream-closed", "close record end")


def case_long_body_then_stray_bytes(h):
    # An upstream that sends bytes after a long body (an answer to nothing) must not have them
    # reach the client as the answer to its next request: the body is taken to its length, and
    # an idle upstream that speaks is dropped.
    n = 2 * 1024 * 1024
    state = {"conns": 0}

    def handler(c):
        state["conns"] += 1
        first = state["conns"] == 1
        if read_head_of(c) is None:
            return
        if not first:
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
            c.recv(1)
            return
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % n)
        sent = 0
        while sent < n:
            chunk = pattern_bytes(min(1 << 20, n - sent), sent)
            sent += len(chunk)
            if sent == n:  # the stray answer goes in the same write as the body's end
                chunk += b"HTTP/1.1 299 Stray\r\nContent-Length: 5\r\n\r\nstray"
            c.sendall(chunk)
        c.recv(1)

    for pipelined in (False, True):
        # A fresh egressd and origin each time: a parked upstream must not carry over.
        state["conns"] = 0
        srv = h.raw(handler)
        e = h.egressd(base_config({"stray.test": ["127.0.0.1"]}))
        c = Conn(e.port, timeout=20)
        try:
            one = b"GET http://stray.test:%d/one HTTP/1.1\r\nHost: stray.test:%d\r\n\r\n" % (
                srv.port, srv.port)
            two = one.replace(b"/one", b"/two")
            c.send(one + two if pipelined else one)
            r = c.read_response()
            check_eq(r.status, 200, "status of the long response")
            check_eq(hashlib.sha256(r.body).hexdigest(), pattern_sha256(n), "sha256 of the body")
            if not pipelined:
                time.sleep(0.2)
                c.send(two)
            r = c.read_response()
            check_eq((r.status, r.body), (200, b"hello"),
                     "the answer to the second request (%s)" % (
                         "pipelined" if pipelined else "sent after the first answer"))
        finally:
            c.close()
        finish(e)


def case_half_closed_client_gets_its_answer(h):
    # A client that shuts down its sending side right after its request (nc -N, scripts) still
    # gets the whole answer, allowed or denied; a body its close cuts short gets nothing sent on.
    origin = h.origin()
    e = h.egressd(base_config({"origin.test": ["127.0.0.1"]},
                              session_bound={"allowDomains": ["origin.test:*"],
                                             "enforce": "sandbox"}))
    c = Conn(e.port)
    try:
        c.request("GET", "http://origin.test:%d/half" % origin.port)
        c.sock.shutdown(socket.SHUT_WR)
        r = c.read_response()
        check_eq(r.status, 200, "status after the client's half-close")
        check_eq(r.json()["path"], "/half", "path the origin saw")
        check(c.at_eof(3), "egressd kept the connection open after answering a half-closed client")
    finally:
        c.close()
    c = Conn(e.port)
    try:
        # Two pipelined requests, then the half-close: both are answered.
        c.send(b"".join(b"GET http://origin.test:%d/p%d HTTP/1.1\r\nHost: origin.test:%d\r\n\r\n"
                        % (origin.port, i, origin.port) for i in (1, 2)))
        c.sock.shutdown(socket.SHUT_WR)
        for i in (1, 2):
            r = c.read_response()
            check_eq((r.status, r.json()["path"]), (200, "/p%d" % i),
                     "answer %d of two pipelined requests before a half-close" % i)
        check(c.at_eof(3), "egressd kept the connection open after the pipelined answers")
    finally:
        c.close()
    c = Conn(e.port)
    try:
        c.request("GET", "http://elsewhere.invalid/x")
        c.sock.shutdown(socket.SHUT_WR)
        r = c.read_response()
        check_eq(r.status, 403, "status of a denial after the client's half-close")
        check_eq(r.header("X-Egressd-Reason"), "host-not-allowed", "denial reason")
    finally:
        c.close()
    c = Conn(e.port)
    try:
        c.send(b"POST http://origin.test:%d/cut HTTP/1.1\r\nHost: origin.test:%d\r\n"
               b"Content-Length: 100\r\n\r\nonly-part" % (origin.port, origin.port))
        c.sock.shutdown(socket.SHUT_WR)
        check(c.at_eof(5), "a request whose body the half-close cut short was not ended "
              "at once, or got an answer")
    finally:
        c.close()
    recs = finish(e)
    check_eq([r.get("decision") for r in recs if r["event"] == "request"],
             ["allow", "allow", "allow", "deny", "allow"], "request records")
    cut = [r for r in recs if r["event"] == "close"][-1]
    check_eq(cut["end"], "client-closed", "close record of the cut-short body")


def case_half_closed_slow_client_gets_a_long_answer(h):
    # A chunked answer (relayed through egressd's buffers, not spliced) to a client that
    # half-closed and reads slowly: all of it arrives before egressd closes.
    n = 4 * 1024 * 1024

    def handler(c):
        if read_head_of(c) is None:
            return
        c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        sent = 0
        while sent < n:
            chunk = pattern_bytes(min(1 << 20, n - sent), sent)
            c.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
            sent += len(chunk)
        c.sendall(b"0\r\n\r\n")
        c.recv(1)

    srv = h.raw(handler)
    e = h.egressd(base_config({"chunky.test": ["127.0.0.1"]}))
    c = Conn(e.port, timeout=20)
    try:
        c.request("GET", "http://chunky.test:%d/x" % srv.port)
        c.sock.shutdown(socket.SHUT_WR)
        time.sleep(1.0)  # egressd has the whole answer and the client's end by now
        r = c.read_response()
        check_eq(r.status, 200, "status")
        check_eq(len(r.body), n, "body bytes a slow, half-closed client received")
        check_eq(hashlib.sha256(r.body).hexdigest(), pattern_sha256(n), "sha256 of the body")
    finally:
        c.close()
    recs = finish(e)
    closes = [r for r in recs if r["event"] == "close"]
    check_eq(len(closes), 1, "close records")


if __name__ == "__main__":
    run_cases("forward", [
        ("GET through the proxy: origin-form, Host, request record", case_get),
        ("POST with Content-Length body", case_post_content_length),
        ("POST with chunked body", case_post_chunked),
        ("PUT and DELETE on one connection", case_put_delete_raw),
        ("hop-by-hop headers removed, end-to-end kept", case_hop_by_hop_removed),
        ("curl: two URLs reuse one proxy connection", case_curl_keepalive_two_urls),
        ("raw: three requests, one upstream connection", case_raw_keepalive_upstream_reuse),
        ("three client connections, one parked upstream", case_upstream_pool_across_clients),
        ("HEAD then GET on one connection", case_head_then_get),
        ("16 MiB download", case_big_download),
        ("a long body, then the next request on the same upstream", case_long_body_then_keepalive),
        ("a long body ended by the upstream's close", case_long_body_to_eof),
        ("a long body cut short by the upstream", case_long_body_cut_short),
        ("stray bytes after a long body do not reach the client", case_long_body_then_stray_bytes),
        ("a half-closed client gets its answer", case_half_closed_client_gets_its_answer),
        ("a half-closed, slow client gets a long answer in full",
         case_half_closed_slow_client_gets_a_long_answer),
    ])
