#!/usr/bin/env python3
"""Tests of the benchmark's own instruments: benchclient against a loopback HTTP origin (plain and
TLS, the TLS one with a certificate from the harness's own test CA), a stub CONNECT proxy and a
stub SOCKS5 proxy; the harness's helpers (the old build's refusal, the graceful stop); and the
table's arithmetic.  Loopback only; no peers, no root.

    python3 bench/test_bench.py
"""

import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench  # noqa: E402


class Quiet(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as nginx

    def log_message(self, *args):
        pass


class StubProxy:
    """A CONNECT-only proxy on loopback: admits ALLOWED, answers 403 to anything else, and can
    be told to cut a tunnel after `cut` bytes from the origin."""

    ALLOWED = "origin.test"

    def __init__(self, origin_port, cut=None):
        self.origin_port = origin_port
        self.cut = cut
        self.after_200 = []  # per tunnel: the client's bytes that arrived within 0.5 s of the 200
        self.watch = False   # record after_200 before relaying (the --silent case)
        self.allowed = (self.ALLOWED,)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self.handle, args=(c,), daemon=True).start()

    def handle(self, c):
        head = b""
        while b"\r\n\r\n" not in head:
            d = c.recv(4096)
            if not d:
                c.close()
                return
            head += d
        target = head.split(b" ")[1].decode()
        if not any(target.startswith(a + ":") for a in self.allowed):
            c.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            c.close()
            return
        up = socket.create_connection(("127.0.0.1", self.origin_port))
        c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        if self.watch:
            c.settimeout(0.5)
            try:
                got = c.recv(4096)
            except socket.timeout:
                got = b""
            self.after_200.append(got)
            c.settimeout(None)
            if got:
                up.sendall(got)
        threading.Thread(target=self.pipe, args=(c, up, None), daemon=True).start()
        self.pipe(up, c, self.cut)

    @staticmethod
    def pipe(src, dst, cut):
        sent = 0
        try:
            while True:
                d = src.recv(65536)
                if not d:
                    break
                if cut is not None and sent + len(d) > cut:
                    dst.sendall(d[:cut - sent])
                    break
                dst.sendall(d)
                sent += len(d)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self):
        self.sock.close()


class StubSocks5:
    """A SOCKS5 proxy on loopback (no authentication, CONNECT to a domain name): admits
    StubProxy.ALLOWED, answers reply 2 (not allowed) to anything else; records each request."""

    def __init__(self, origin_port):
        self.origin_port = origin_port
        self.requests = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    @staticmethod
    def exact(c, n):
        b = b""
        while len(b) < n:
            d = c.recv(n - len(b))
            if not d:
                raise OSError("short")
            b += d
        return b

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(c,), daemon=True).start()

    def handle(self, c):
        try:
            ver, n = self.exact(c, 2)
            methods = self.exact(c, n)
            if ver != 5 or 0 not in methods:
                c.sendall(b"\x05\xff")
                return
            c.sendall(b"\x05\x00")
            ver, cmd, _rsv, atyp = self.exact(c, 4)
            name = self.exact(c, self.exact(c, 1)[0]).decode() if atyp == 3 else None
            port = int.from_bytes(self.exact(c, 2), "big")
            self.requests.append((cmd, atyp, name, port))
            if name != StubProxy.ALLOWED:
                c.sendall(b"\x05\x02\x00\x01\x00\x00\x00\x00\x00\x00")
                return
            up = socket.create_connection(("127.0.0.1", self.origin_port))
            # A reply that names a domain, so that the client must read its variable length.
            c.sendall(b"\x05\x00\x00\x03\x09localhost\x04\xd2")
            threading.Thread(target=StubProxy.pipe, args=(c, up, None), daemon=True).start()
            StubProxy.pipe(up, c, None)
        except OSError:
            pass
        finally:
            c.close()

    def close(self):
        self.sock.close()


class BenchClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="bench-test-")
        cls.client = os.path.join(cls.tmp, "benchclient")
        subprocess.run([os.environ.get("CC", "cc")] + bench.CFLAGS +
                       ["-o", cls.client, os.path.join(HERE, "benchclient.c"), "-lssl",
                        "-lcrypto"], check=True)
        www = os.path.join(cls.tmp, "www")
        os.makedirs(www)
        cls.body = os.urandom(1024)
        with open(os.path.join(www, "1k"), "wb") as f:
            f.write(cls.body)
        with open(os.path.join(www, "1m"), "wb") as f:
            f.write(os.urandom(1 << 20))
        handler = lambda *a, **kw: Quiet(*a, directory=www, **kw)  # noqa: E731
        cls.origin = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        cls.origin.daemon_threads = True
        cls.port = cls.origin.server_address[1]
        threading.Thread(target=cls.origin.serve_forever, daemon=True).start()
        # A TLS origin with the leaf the harness makes for nginx (test CA, origin.test and
        # inspect.test in its SAN).
        bench.make_test_ca(cls.tmp)
        cls.ca = os.path.join(cls.tmp, "test-ca.pem")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(cls.tmp, "origin-cert.pem"),
                            os.path.join(cls.tmp, "origin-key.pem"))
        cls.tls_origin = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        cls.tls_origin.daemon_threads = True
        cls.tls_origin.socket = ctx.wrap_socket(cls.tls_origin.socket, server_side=True)
        cls.tls_port = cls.tls_origin.server_address[1]
        threading.Thread(target=cls.tls_origin.serve_forever, daemon=True).start()

    @classmethod
    def tearDownClass(cls):
        for srv in (cls.origin, cls.tls_origin):
            srv.shutdown()
            srv.server_close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_client(self, *args, stdin=None):
        r = subprocess.run([self.client] + list(args), capture_output=True, text=True,
                           timeout=60, input=stdin)
        lines = r.stdout.strip().splitlines()
        return r.returncode, [json.loads(ln) for ln in lines], r.stderr

    def direct(self, mode, path, *extra):
        return self.run_client(mode, "--connect", "127.0.0.1:%d" % self.port, "--host",
                               "origin.test", "--port", str(self.port), "--path", path, *extra)

    def test_get_reads_the_whole_body(self):
        rc, out, err = self.direct("get", "/1m")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out[0]["bytes"], 1 << 20)
        self.assertGreater(out[0]["mib_s"], 0)

    def test_fetch_loop_counts_every_fetch_and_orders_quantiles(self):
        rc, out, err = self.direct("fetch", "/1k", "--count", "50", "--deadline", "30")
        self.assertEqual(rc, 0, err)
        r = out[0]
        self.assertEqual((r["n"], r["errors"], r["body_bytes"]), (50, 0, 1024))
        self.assertLessEqual(r["min_ms"], r["median_ms"])
        self.assertLessEqual(r["median_ms"], r["p99_ms"])
        self.assertLessEqual(r["p99_ms"], r["max_ms"])

    def test_fetch_loop_stops_at_its_deadline(self):
        rc, out, err = self.direct("fetch", "/1k", "--count", "100000000", "--deadline", "0.3")
        self.assertEqual(rc, 0, err)
        self.assertGreater(out[0]["n"], 0)
        self.assertLess(out[0]["n"], 100000000)
        self.assertLess(out[0]["seconds"], 5)

    def test_a_missing_file_is_an_error_not_a_figure(self):
        rc, out, err = self.direct("get", "/nothing-here")
        self.assertEqual(rc, 1)
        self.assertIn("status 404", err)

    def test_connect_tunnel_and_refusal(self):
        proxy = StubProxy(self.port)
        try:
            base = ["--connect", "127.0.0.1:%d" % proxy.port, "--via", "connect", "--port",
                    str(self.port), "--path", "/1k"]
            rc, out, err = self.run_client("fetch", "--host", "origin.test", "--count", "5", *base)
            self.assertEqual(rc, 0, err)
            self.assertEqual(out[0]["n"], 5)
            self.assertEqual(proxy.accepted, 5)  # a new connection per fetch
            rc, out, err = self.run_client("get", "--host", "denied.invalid", *base)
            self.assertEqual(rc, 1)
            self.assertIn("CONNECT refused: HTTP/1.1 403", err)
        finally:
            proxy.close()

    def test_floor_relay_tunnels_both_ways(self):
        relay = os.path.join(self.tmp, "relay")
        subprocess.run([os.environ.get("CC", "cc")] + bench.CFLAGS +
                       ["-o", relay, os.path.join(HERE, "relay.c")], check=True)
        p = subprocess.Popen([relay, "0"], stdout=subprocess.PIPE, text=True)
        try:
            port = int(p.stdout.readline().rsplit(":", 1)[1])
            base = ["--connect", "127.0.0.1:%d" % port, "--via", "connect", "--host",
                    "origin.test", "--port", str(self.port)]
            rc, out, err = self.run_client("fetch", "--path", "/1k", "--count", "5", *base)
            self.assertEqual(rc, 0, err)
            self.assertEqual(out[0]["n"], 5)
            rc, out, err = self.run_client("get", "--path", "/1m", *base)
            self.assertEqual(rc, 0, err)
            self.assertEqual(out[0]["bytes"], 1 << 20)
        finally:
            p.kill()
            p.wait()

    def test_a_body_cut_short_is_an_error(self):
        proxy = StubProxy(self.port, cut=4096)
        try:
            rc, out, err = self.run_client("get", "--connect", "127.0.0.1:%d" % proxy.port,
                                           "--via", "connect", "--host", "origin.test", "--port",
                                           str(self.port), "--path", "/1m")
            self.assertEqual(rc, 1)
            self.assertIn("body cut", err)
        finally:
            proxy.close()

    def test_idle_tunnels_open_carry_a_request_and_close_on_a_line(self):
        proxy = StubProxy(self.port)
        try:
            rc, out, err = self.run_client("idle", "--connect", "127.0.0.1:%d" % proxy.port,
                                           "--host", "origin.test", "--port", str(self.port),
                                           "--path", "/1k", "--count", "20", "--deadline", "30",
                                           stdin="close\n")
            self.assertEqual(rc, 0, err)
            self.assertEqual(out[0]["open"], 20)
            self.assertEqual(out[1]["closed"], 20)
        finally:
            proxy.close()

    def test_tls_verifies_against_the_test_ca_for_both_names(self):
        for host in ("origin.test", bench.INSPECTED):
            rc, out, err = self.run_client("get", "--connect", "127.0.0.1:%d" % self.tls_port,
                                           "--host", host, "--port", str(self.tls_port),
                                           "--path", "/1k", "--tls", "--ca", self.ca)
            self.assertEqual(rc, 0, err)
            self.assertEqual(out[0]["bytes"], 1024)
        # A name the certificate does not carry fails the check: the check is on.
        rc, out, err = self.run_client("get", "--connect", "127.0.0.1:%d" % self.tls_port,
                                       "--host", "other.test", "--port", str(self.tls_port),
                                       "--path", "/1k", "--tls", "--ca", self.ca)
        self.assertEqual(rc, 1)
        self.assertIn("TLS handshake failed", err)

    def test_socks5_tunnel_plain_and_tls_and_refusal(self):
        socks = StubSocks5(self.port)
        try:
            base = ["--connect", "127.0.0.1:%d" % socks.port, "--via", "socks5"]
            rc, out, err = self.run_client("fetch", "--host", "origin.test", "--port",
                                           str(self.port), "--path", "/1k", "--count", "3",
                                           "--deadline", "30", *base)
            self.assertEqual(rc, 0, err)
            self.assertEqual(out[0]["n"], 3)
            self.assertEqual(socks.requests[0], (1, 3, "origin.test", self.port))
            socks.origin_port = self.tls_port
            rc, out, err = self.run_client("get", "--host", "origin.test", "--port",
                                           str(self.tls_port), "--path", "/1m", "--tls",
                                           "--ca", self.ca, *base)
            self.assertEqual(rc, 0, err)
            self.assertEqual(out[0]["bytes"], 1 << 20)
            rc, out, err = self.run_client("get", "--host", "denied.invalid", "--port", "80",
                                           "--path", "/1k", *base)
            self.assertEqual(rc, 1)
            self.assertIn("SOCKS5 refused: reply 2", err)
        finally:
            socks.close()

    def test_bind_sets_the_source_address(self):
        lst = socket.socket()
        lst.bind(("127.0.0.1", 0))
        lst.listen(1)
        peers = []

        def answer():
            c, peer = lst.accept()
            peers.append(peer[0])
            c.recv(4096)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            c.close()
        t = threading.Thread(target=answer, daemon=True)
        t.start()
        rc, out, err = self.run_client("get", "--connect", "127.0.0.1:%d" % lst.getsockname()[1],
                                       "--bind", "127.0.0.9", "--host", "origin.test", "--port",
                                       "80", "--path", "/")
        t.join(10)
        lst.close()
        self.assertEqual(rc, 0, err)
        self.assertEqual(peers, ["127.0.0.9"])

    def test_silent_tunnels_send_nothing_after_the_200(self):
        proxy = StubProxy(self.port)
        proxy.watch = True
        try:
            rc, out, err = self.run_client("idle", "--silent", "--connect",
                                           "127.0.0.1:%d" % proxy.port, "--host", "origin.test",
                                           "--port", str(self.port), "--count", "3",
                                           "--deadline", "30", stdin="close\n")
            self.assertEqual(rc, 0, err)
            self.assertEqual((out[0]["open"], out[1]["closed"]), (3, 3))
            # The stub's threads record what they saw after their 0.5 s wait (or at the close,
            # which can come first); on a loaded machine they may not have run yet.
            deadline = time.monotonic() + 10
            while len(proxy.after_200) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertEqual(proxy.after_200, [b"", b"", b""])
            # Without --silent the same client sends its request right after the 200.
            proxy.after_200 = []
            rc, out, err = self.run_client("idle", "--connect", "127.0.0.1:%d" % proxy.port,
                                           "--host", "origin.test", "--port", str(self.port),
                                           "--path", "/1k", "--count", "1", "--deadline", "30",
                                           stdin="close\n")
            self.assertEqual(rc, 0, err)
            self.assertTrue(proxy.after_200[0].startswith(b"GET /1k HTTP/1.1"))
        finally:
            proxy.close()

    def test_idle_tls_tunnels_carry_a_request_over_tls(self):
        proxy = StubProxy(self.tls_port)
        proxy.allowed = (bench.INSPECTED,)
        try:
            rc, out, err = self.run_client("idle", "--tls", "--ca", self.ca, "--connect",
                                           "127.0.0.1:%d" % proxy.port, "--host",
                                           bench.INSPECTED, "--port", str(self.tls_port),
                                           "--path", "/1k", "--count", "5", "--deadline", "30",
                                           stdin="close\n")
            self.assertEqual(rc, 0, err)
            self.assertEqual((out[0]["open"], out[1]["closed"]), (5, 5))
            # A CA that did not sign the origin: no tunnel opens (the check is made).
            other = os.path.join(self.tmp, "other-ca")
            os.makedirs(other, exist_ok=True)
            bench.make_test_ca(other)
            rc, out, err = self.run_client("idle", "--tls", "--ca",
                                           os.path.join(other, "test-ca.pem"), "--connect",
                                           "127.0.0.1:%d" % proxy.port, "--host",
                                           bench.INSPECTED, "--port", str(self.tls_port),
                                           "--count", "2", "--deadline", "30", stdin="close\n")
            self.assertEqual(rc, 1)
            self.assertEqual(out[0]["open"], 0)
        finally:
            proxy.close()

    def test_forward_mode_sends_the_absolute_uri(self):
        # A listener that records the request line plays the proxy.
        lst = socket.socket()
        lst.bind(("127.0.0.1", 0))
        lst.listen(1)
        seen = []

        def answer():
            c, _ = lst.accept()
            seen.append(c.recv(4096))
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc")
            c.close()
        t = threading.Thread(target=answer, daemon=True)
        t.start()
        rc, out, err = self.run_client("get", "--connect", "127.0.0.1:%d" % lst.getsockname()[1],
                                       "--via", "forward", "--host", "origin.test", "--port",
                                       "8080", "--path", "/1k")
        t.join(10)
        lst.close()
        self.assertEqual(rc, 0, err)
        self.assertEqual(out[0]["bytes"], 3)
        self.assertTrue(seen[0].startswith(b"GET http://origin.test:8080/1k HTTP/1.1\r\n"))
        self.assertIn(b"\r\nHost: origin.test:8080\r\n", seen[0])


class TableTest(unittest.TestCase):
    def fake(self, results, na=None):
        class B:
            pass
        b = B()
        b.results, b.na, b.errors = results, na or {}, {}
        return b

    def row(self, table, label):
        for line in table.splitlines():
            if line.startswith("| " + label + " |"):
                return [c.strip() for c in line.strip("|").split("|")]
        self.fail("no row " + label)

    def test_cells_are_median_min_max(self):
        self.assertEqual(bench.cell([3.0, 1.0, 2.0], "%.0f"), "2 [1–3]")
        self.assertEqual(bench.cell([5.0], "%.1f"), "5.0")
        self.assertIsNone(bench.cell([], "%.1f"))

    def test_ratio_is_of_medians(self):
        self.assertEqual(bench.ratio([1, 2, 9], [4, 4, 100]), "0.50")
        self.assertEqual(bench.ratio([], [1]), "—")

    def test_targets_are_judged_against_direct_and_limits(self):
        b = self.fake({"rps64": {"DIRECT": [1000, 1000, 1000], "egressd": [600, 400, 700],
                                 "squid": [200, 240, 260]},
                       "bulk_connect": {"DIRECT": [100, 100, 100], "RELAY": [50, 40, 60],
                                        "egressd": [45, 45, 45]},
                       "fetch_added": {"egressd": [0.5, 0.4, 0.45]},
                       "kib_per_tunnel": {"egressd": [3.0, 3.5, 5.0]}},
                      na={"tinyproxy": "not selected"})
        t = bench.make_table(b, ["a note"])
        r = self.row(t, "1 KiB keep-alive, 64 conns: req/s")
        # DIRECT, floor relay (not measured for this figure), egressd, egressd-old, tinyproxy,
        # Squid
        self.assertEqual(r[1:7], ["1000 [1000–1000]", "—", "600 [400–700]", "—", "n/a",
                                  "240 [200–260]"])
        self.assertEqual(r[7], "0.60")         # egressd/DIRECT
        self.assertEqual(r[8], "—")            # egressd/floor
        self.assertEqual(r[9], "—")            # egressd/old
        self.assertEqual(r[11], "2.50")        # egressd/Squid
        self.assertEqual(r[-1], "yes")         # 0.60 >= 0.50
        r = self.row(t, "64 MiB raw CONNECT: MiB/s")
        self.assertEqual(r[7:9], ["0.45", "0.90"])  # egressd/DIRECT, egressd/floor
        self.assertEqual(r[-1], "no")
        self.assertEqual(self.row(t, "new CONNECT+TLS fetch: added over DIRECT, ms")[-1], "no")
        self.assertEqual(self.row(t, "idle tunnels: KiB per tunnel")[-1], "yes")  # median 3.5
        self.assertIn("- a note", t)

    def test_pair_ratio_is_the_median_of_each_pairs_ratio(self):
        # One disturbed pair (the third) does not move it; a ratio of totals would.
        self.assertAlmostEqual(bench.pair_ratio([95, 190, 10, 97], [100, 200, 100, 100]), 0.95)

    def test_old_column_flags_a_regression_beyond_the_noise(self):
        b = self.fake({"rps64": {"egressd": [900, 950, 1000], "egressd-old": [980, 1000, 1020]},
                       "bulk_connect": {"egressd": [700, 710, 720], "egressd-old": [900, 950,
                                                                                   1000]},
                       "fetch_p50": {"egressd": [1.2], "egressd-old": [1.0]},
                       "kib_per_tunnel": {"egressd": [2.0], "egressd-old": [2.05]}})
        t = bench.make_table(b, [])
        # Ranges overlap: within the noise, whatever the ratio.
        self.assertEqual(self.row(t, "1 KiB keep-alive, 64 conns: req/s")[9], "0.95")
        self.assertEqual(self.row(t, "1 KiB keep-alive, 64 conns: req/s")[4],
                         "1000 [980–1020]")
        self.assertEqual(self.row(t, "64 MiB raw CONNECT: MiB/s")[9], "0.75 worse")
        # Lower is better: 20 % slower is worse; 2.5 % less memory is not.
        self.assertEqual(self.row(t, "new CONNECT+TLS 1 KiB fetch: median ms")[9], "1.20 worse")
        self.assertEqual(self.row(t, "idle tunnels: KiB per tunnel")[9], "0.98")

    def test_targets_against_bumped_squid_and_egressd_only_rows(self):
        b = self.fake({"insp_bulk": {"egressd": [500, 520, 480], "squid": [250, 240, 260]},
                       "insp_added": {"egressd": [0.9], "squid": [1.6]},
                       "socks5_vs_connect": {"egressd": [0.97, 0.99, 0.93]},
                       "socks5_vs_connect_tls": {"egressd": [0.90]},
                       "wait_after_pct": {"egressd": [30.0], "egressd-old": [140.0]},
                       "exec_isolate_added": {"egressd": [38.0]},
                       "transp_ratio": {"egressd": [1.01]},
                       "mint_median": {"egressd": [0.2]}})
        t = bench.make_table(b, [])
        r = self.row(t, "64 MiB inspected (Squid: ssl_bump bump): MiB/s")
        self.assertEqual((r[11], r[-2], r[-1]), ("2.00", "≥ Squid bumped", "yes"))
        r = self.row(t, "new inspected fetch: added over DIRECT, ms")
        self.assertEqual((r[11], r[-1]), ("0.56", "no"))  # more than half of Squid's
        self.assertEqual(self.row(t, "64 MiB raw: SOCKS5 ÷ CONNECT")[-1], "yes")  # median 0.97
        r = self.row(t, "64 MiB TLS: SOCKS5 ÷ CONNECT")
        self.assertEqual((r[10], r[11], r[-1]), ("—", "—", "no"))  # no peer ratio; 0.90 < 0.95
        self.assertEqual(self.row(t, "first-bytes tunnels: RSS after vs before, %")[-1], "no")
        self.assertEqual(self.row(t, "egressd exec --isolate: added over `true`, ms")[-1], "yes")
        self.assertEqual(self.row(t, "namespace: 64 MiB plain, transparent ÷ CONNECT")[-1],
                         "yes")
        self.assertEqual(self.row(t, "leaf mint: a new name, median wall ms")[-1], "yes")
        # A target with no egressd figure is n/a, never met.
        self.assertEqual(self.row(t, "namespace: 64 MiB TLS, transparent ÷ CONNECT")[-1], "n/a")

    def test_every_figure_has_a_row_and_every_step_its_rows(self):
        keys = [r[0] for r in bench.ROWS]
        self.assertEqual(len(keys), len(set(keys)))
        for step, figs in bench.Bench.STEP_FIGS.items():
            for f in figs:
                self.assertIn(f, keys, "%s of step %s has no row" % (f, step))


class HelperTest(unittest.TestCase):
    def test_old_build_refuses_an_unknown_commit(self):
        exe, decide, why = bench.build_old("0" * 40, tempfile.gettempdir() + "/none", [])
        self.assertEqual((exe, decide), (None, None))
        self.assertIn("no commit", why)

    def test_graceful_run_lets_a_child_clean_up_on_its_bound(self):
        code = ("import signal, sys, time\n"
                "def bye(*a):\n    print('cleaned', flush=True); sys.exit(3)\n"
                "signal.signal(signal.SIGTERM, bye)\n"
                "print('started', flush=True)\ntime.sleep(60)\n")
        t0 = time.monotonic()
        rc, out, err = bench.run_graceful([sys.executable, "-c", code], 1)
        self.assertLess(time.monotonic() - t0, 20)
        self.assertEqual(rc, 124)
        self.assertEqual(out.split(), ["started", "cleaned"])
        self.assertIn("overran 1 s", err)
        rc, out, err = bench.run_graceful([sys.executable, "-c", "print('quick')"], 10)
        self.assertEqual((rc, out), (0, "quick\n"))


class RssTest(unittest.TestCase):
    def test_tree_rss_counts_children(self):
        own = bench.tree_rss_kib(os.getpid())
        p = subprocess.Popen([sys.executable, "-c", "import time; x = bytearray(64 << 20); "
                              "x[::4096] = b'1' * len(x[::4096]); print(1, flush=True); "
                              "time.sleep(30)"], stdout=subprocess.PIPE)
        try:
            p.stdout.readline()
            self.assertGreater(bench.tree_rss_kib(os.getpid()), own + 60 * 1024)
        finally:
            p.kill()
            p.wait()
            p.stdout.close()


if __name__ == "__main__":
    r = unittest.main(exit=False, verbosity=2).result
    n = r.testsRun
    bad = len(r.failures) + len(r.errors)
    print("%d passed, %d failed" % (n - bad, bad))
    sys.exit(1 if bad else 0)
