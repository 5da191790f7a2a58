#!/usr/bin/env python3
"""Tests of the benchmark's own instruments: benchclient against a loopback HTTP origin and a
stub CONNECT proxy, and the table's arithmetic.  Loopback only; no peers, no root.

    python3 bench/test_bench.py
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
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
        if not target.startswith(self.ALLOWED + ":"):
            c.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            c.close()
            return
        up = socket.create_connection(("127.0.0.1", self.origin_port))
        c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
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

    @classmethod
    def tearDownClass(cls):
        cls.origin.shutdown()
        cls.origin.server_close()
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
        # DIRECT, floor relay (not measured for this figure), egressd, tinyproxy, Squid
        self.assertEqual(r[1:6], ["1000 [1000–1000]", "—", "600 [400–700]", "n/a",
                                  "240 [200–260]"])
        self.assertEqual(r[6], "0.60")         # egressd/DIRECT
        self.assertEqual(r[7], "—")            # egressd/floor
        self.assertEqual(r[9], "2.50")         # egressd/Squid
        self.assertEqual(r[-1], "yes")         # 0.60 >= 0.50
        r = self.row(t, "64 MiB raw CONNECT: MiB/s")
        self.assertEqual(r[6:8], ["0.45", "0.90"])  # egressd/DIRECT, egressd/floor
        self.assertEqual(r[-1], "no")
        self.assertEqual(self.row(t, "new CONNECT+TLS fetch: added over DIRECT, ms")[-1], "no")
        self.assertEqual(self.row(t, "idle tunnels: KiB per tunnel")[-1], "yes")  # median 3.5
        self.assertIn("- a note", t)


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
