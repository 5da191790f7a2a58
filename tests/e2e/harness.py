"""End-to-end harness: the real egressd binary, real clients, loopback origins.

Everything here talks to 127.0.0.1 only.  Test destinations are reserved names (.test,
.invalid) that egressd maps with dns.hosts; the DNS servers egressd may ask point at a closed
local port, so a regression shows up as a failed lookup, never as real traffic.

Every wait is bounded and every process or server a test starts is stopped in a finally
block (Harness.close), also when an assertion fails.
"""

import base64
import hashlib
import http.server
import ipaddress
import json
import os
import re
import shlex
import shutil
import signal
import socket
import socketserver
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse

EGRESSD_BIN = os.environ.get("EGRESSD_BIN", "")
SOURCE_DIR = os.environ.get(
    "EGRESSD_SOURCE_DIR",
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SANITIZE = os.environ.get("EGRESSD_SANITIZE", "0").strip().lower() in ("1", "on", "true", "yes")

START_TIMEOUT = 10.0  # seconds to wait for "egressd: listening on"
IO_TIMEOUT = 10.0     # default socket / subprocess timeout

# Order of the well-known audit keys (docs/design.md 7); extra keys may follow them.
AUDIT_KEY_ORDER = ["ts", "seq", "event", "conn", "front", "session", "client", "method", "host",
                   "port", "path", "action", "decision", "reason", "rule", "addr", "orig_dst",
                   "status", "bytes_out", "bytes_in", "duration_ms", "end", "prev"]
# Keys whose values are JSON numbers (docs/design.md 7: numbers are numbers).
AUDIT_NUMERIC_KEYS = {"seq", "conn", "port", "status", "bytes_out", "bytes_in", "duration_ms",
                      "pid", "sessions", "refused", "dropped"}
AUDIT_TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
CLOSE_ENDS = {"client-closed", "upstream-closed", "idle-timeout", "header-timeout", "denied",
              "error", "shutdown", "limit-bytes", "session-expired", "policy-changed"}


class TestFailure(AssertionError):
    pass


# A case that cannot run here (a privilege, a tool or a kernel feature is missing) is reported
# as SKIPPED with its reason, never as passed or failed.  A file none of whose cases ran exits
# with SKIP_EXIT, which tests/CMakeLists.txt gives ctest as SKIP_RETURN_CODE: ctest then lists
# it as "Skipped" instead of "Passed".
SKIP_EXIT = 77


class Skipped(Exception):
    """Raised by skip(): the running case cannot run here; str() is the reason."""


_in_case = False


def skip(reason):
    """Ends the running case as SKIPPED with reason (what is missing, and what would provide
    it).  Called outside a case, at a file's top level, it skips the whole file: prints
    'SKIPPED: reason' and exits with SKIP_EXIT."""
    if _in_case:
        raise Skipped(reason)
    print("SKIPPED: %s" % reason, flush=True)
    sys.exit(SKIP_EXIT)


def check(cond, msg):
    """Fails the running case with msg when cond is false."""
    if not cond:
        raise TestFailure(msg)


def check_eq(got, want, what):
    if got != want:
        raise TestFailure("%s: expected %r, got %r" % (what, want, got))


def clean_env():
    """The environment for clients we start: no proxy variables leak in from the caller."""
    env = dict(os.environ)
    for k in list(env):
        if k.lower() in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "ftp_proxy"):
            del env[k]
    return env


# ---------------------------------------------------------------------------------------------
# YAML writing (stdlib has no YAML): block style, scalars quoted unless plainly safe.

_PLAIN_RE = re.compile(r"^[A-Za-z0-9_./][A-Za-z0-9_./:\-]*$")


def _scalar(v):
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    s = str(v)
    if _PLAIN_RE.match(s) and s.lower() not in ("true", "false", "yes", "no", "null", "on", "off",
                                              "~") and not s.endswith(":"):
        return s
    return json.dumps(s)


def to_yaml(obj, indent=0):
    """Renders nested dicts/lists/scalars as block YAML."""
    pad = "  " * indent
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, dict) and v:
                out.append("%s%s:" % (pad, _scalar(k)))
                out.append(to_yaml(v, indent + 1))
            elif isinstance(v, list) and v:
                out.append("%s%s:" % (pad, _scalar(k)))
                out.append(to_yaml(v, indent + 1))
            elif isinstance(v, dict):
                out.append("%s%s: {}" % (pad, _scalar(k)))
            elif isinstance(v, list):
                out.append("%s%s: []" % (pad, _scalar(k)))
            else:
                out.append("%s%s: %s" % (pad, _scalar(k), _scalar(v)))
    elif isinstance(obj, list):
        for v in obj:
            if isinstance(v, (dict, list)) and v:
                sub = to_yaml(v, indent + 1).lstrip()
                out.append("%s- %s" % (pad, sub))
            else:
                out.append("%s- %s" % (pad, _scalar(v)))
    else:
        out.append(pad + _scalar(obj))
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# Origins.

def pattern_bytes(n, offset=0):
    """n bytes of a fixed, position-dependent pattern, so corruption and reordering show."""
    unit = bytes(range(256)) * 256  # 64 KiB
    start = offset % len(unit)
    buf = bytearray()
    while len(buf) < n:
        take = min(n - len(buf), len(unit) - start)
        buf += unit[start:start + take]
        start = 0
    return bytes(buf)


def pattern_sha256(n):
    h = hashlib.sha256()
    sent = 0
    while sent < n:
        chunk = pattern_bytes(min(1 << 20, n - sent), sent)
        h.update(chunk)
        sent += len(chunk)
    return h.hexdigest()


class _EchoHandler(http.server.BaseHTTPRequestHandler):
    """Echoes what arrived as JSON; /big?n=BYTES streams n pattern bytes."""
    protocol_version = "HTTP/1.1"
    server_version = "e2e-origin"

    def log_message(self, fmt, *args):  # keep test output readable
        pass

    def _read_body(self):
        te = self.headers.get("Transfer-Encoding", "")
        if "chunked" in te.lower():
            body = bytearray()
            while True:
                line = self.rfile.readline(65537)
                size = int(line.split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                body += self.rfile.read(size)
                self.rfile.readline(3)
            return bytes(body), True
        n = int(self.headers.get("Content-Length", "0") or "0")
        return (self.rfile.read(n) if n else b""), False

    def _handle(self):
        body, chunked = self._read_body()
        srv = self.server
        with srv.lock:
            srv.requests.append({"method": self.command, "path": self.path,
                                 "peer": self.client_address[1]})
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/big" and self.command == "GET":
            q = urllib.parse.parse_qs(url.query)
            n = int(q.get("n", ["0"])[0])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(n))
            self.end_headers()
            sent = 0
            while sent < n:
                chunk = pattern_bytes(min(65536, n - sent), sent)
                self.wfile.write(chunk)
                sent += len(chunk)
            return
        info = {
            "method": self.command,
            "path": self.path,
            "host": self.headers.get("Host"),
            "headers": [[k, v] for k, v in self.headers.items()],
            "body_len": len(body),
            "body_sha256": hashlib.sha256(body).hexdigest(),
            "chunked": chunked,
            "peer_port": self.client_address[1],
            "tls": isinstance(self.connection, ssl.SSLSocket),
        }
        out = json.dumps(info).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_OPTIONS = do_PATCH = _handle


class _OriginServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, tls_ctx=None):
        self.tls_ctx = tls_ctx
        self.lock = threading.Lock()
        self.requests = []
        self.connections = 0
        super().__init__(("127.0.0.1", 0), _EchoHandler)

    def finish_request(self, request, client_address):
        with self.lock:
            self.connections += 1
        request.settimeout(30)
        if self.tls_ctx is not None:
            # The handshake runs in the request's own thread, so one stalled client never
            # blocks the accept loop.
            try:
                request = self.tls_ctx.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                return
        try:
            super().finish_request(request, client_address)
        except (OSError, ssl.SSLError):
            pass

    def handle_error(self, request, client_address):
        pass


class Origin:
    """A plain HTTP/1.1 origin (or TLS when tls_ctx is given) on 127.0.0.1:port."""

    def __init__(self, tls_ctx=None):
        self.server = _OriginServer(tls_ctx)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()

    @property
    def connections(self):
        with self.server.lock:
            return self.server.connections

    @property
    def requests(self):
        with self.server.lock:
            return list(self.server.requests)

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


class RawServer:
    """A TCP server on 127.0.0.1 that runs handler(sock) for each connection in a thread."""

    def __init__(self, handler):
        self.handler = handler
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stopping = False
        self.accepted = 0
        self.threads = []
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self.stopping:
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.accepted += 1
            c.settimeout(60)
            t = threading.Thread(target=self._run, args=(c,), daemon=True)
            t.start()
            self.threads.append(t)

    def _run(self, c):
        try:
            self.handler(c)
        except OSError:
            pass
        finally:
            try:
                c.close()
            except OSError:
                pass

    def close(self):
        self.stopping = True
        self.thread.join(5)
        self.sock.close()


def echo_handler(c):
    while True:
        d = c.recv(65536)
        if not d:
            return
        c.sendall(d)


def send_n_handler(n):
    """A RawServer handler that sends n pattern bytes as fast as the peer takes them, then
    closes."""
    def h(c):
        sent = 0
        while sent < n:
            chunk = pattern_bytes(min(1 << 20, n - sent), sent)
            c.sendall(chunk)
            sent += len(chunk)
        c.shutdown(socket.SHUT_WR)
        c.settimeout(5)
        try:
            while c.recv(65536):
                pass
        except OSError:
            pass
    return h


class Recorder:
    """A TCP listener on addr:port recording every byte of every connection.  mode "http"
    answers each request head with a small keep-alive 200; "tunnel" only records; banner is
    sent first on every connection (a server that speaks first, like SSH)."""

    def __init__(self, addr="127.0.0.1", port=0, mode="http", banner=None, delay=0.0):
        self.mode = mode
        self.delay = delay
        self.banner = banner
        self.lock = threading.Lock()
        self.conns = []  # dicts: data (bytearray), heads (list of bytes), closed (bool)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((addr, port))
        self.sock.listen(64)
        self.sock.settimeout(0.02)  # close() waits for the accept loop to notice; keep it short
        self.addr, self.port = self.sock.getsockname()[:2]
        self.stopping = False
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self.stopping:
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            rec = {"data": bytearray(), "heads": [], "closed": False}
            with self.lock:
                self.conns.append(rec)
            threading.Thread(target=self._run, args=(c, rec), daemon=True).start()

    def _run(self, c, rec):
        c.settimeout(20)
        pending = b""
        try:
            if self.banner:
                time.sleep(self.delay)
                c.sendall(self.banner)
            while True:
                d = c.recv(65536)
                if not d:
                    break
                with self.lock:
                    rec["data"] += d
                if self.mode != "http":
                    continue
                pending += d
                while b"\r\n\r\n" in pending:
                    head, pending = pending.split(b"\r\n\r\n", 1)
                    with self.lock:
                        rec["heads"].append(head)
                    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                              b"Content-Length: 8\r\n\r\nrecorded")
        except OSError:
            pass
        finally:
            with self.lock:
                rec["closed"] = True
            c.close()

    @property
    def accepted(self):
        with self.lock:
            return len(self.conns)

    def total(self):
        with self.lock:
            return sum(len(r["data"]) for r in self.conns)

    def heads(self):
        with self.lock:
            return [h for r in self.conns for h in r["heads"]]

    def data(self):
        with self.lock:
            return b"".join(bytes(r["data"]) for r in self.conns)

    def wait_closed(self, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                if self.conns and all(r["closed"] for r in self.conns):
                    return True
            time.sleep(0.05)
        return False

    def wait_bytes(self, n, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline and self.total() < n:
            time.sleep(0.05)
        return self.total()

    def close(self):
        self.stopping = True
        self.thread.join(5)
        self.sock.close()


def closed_port():
    """A loopback port that nothing listens on (bound, then closed)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Blackhole:
    """A loopback port whose SYNs go unanswered: a listener with a full accept queue (the
    kernel drops SYNs on overflow), so connecting to it times out."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(0)
        self.port = self.sock.getsockname()[1]
        self.fill = []
        for _ in range(4):
            c = socket.socket()
            c.setblocking(False)
            try:
                c.connect(("127.0.0.1", self.port))
            except BlockingIOError:
                pass
            self.fill.append(c)
        time.sleep(0.1)

    def close(self):
        for c in self.fill:
            c.close()
        self.sock.close()


def make_cert(tmpdir, cn="tls.test"):
    """A throwaway self-signed EC certificate for cn; returns (certfile, keyfile)."""
    cert = os.path.join(tmpdir, "cert.pem")
    key = os.path.join(tmpdir, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=" + cn,
                    "-days", "1", "-keyout", key, "-out", cert],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
    return cert, key


# ---------------------------------------------------------------------------------------------
# egressd.

LISTEN_RE = re.compile(r"egressd: listening on (?:127\.0\.0\.1|0\.0\.0\.0):(\d+)")


class Egressd:
    """One egressd serve process on a config written into tmpdir."""

    def __init__(self, tmpdir, config, name="egressd", env=None, preexec=None):
        check(EGRESSD_BIN and os.path.exists(EGRESSD_BIN),
              "EGRESSD_BIN is not set or does not exist: %r" % EGRESSD_BIN)
        self.dir = tempfile.mkdtemp(prefix=name + "-", dir=tmpdir)
        self.audit_path = os.path.join(self.dir, "audit.jsonl")
        config = dict(config)
        config.setdefault("audit", {"path": self.audit_path})
        self.config_path = os.path.join(self.dir, "egressd.yaml")
        with open(self.config_path, "w") as f:
            f.write(to_yaml(config) + "\n")
        self.stderr_lines = []
        self._lock = threading.Lock()
        self._listen = threading.Event()
        self.port = None
        self.returncode = None
        penv = clean_env()
        penv.update(env or {})
        self.proc = subprocess.Popen([EGRESSD_BIN, "serve", "-c", self.config_path],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=penv, cwd=self.dir,
                                     preexec_fn=preexec)
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        if not self._listen.wait(START_TIMEOUT) or self.port is None:
            rc = self.proc.poll()
            self.kill()
            raise TestFailure("egressd did not print 'listening on' within %ss (exit %r); "
                              "config:\n%s\nstderr:\n%s" % (START_TIMEOUT, rc,
                                                            self.config_text(), self.stderr()))

    def _read_stderr(self):
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self._lock:
                self.stderr_lines.append(line)
            m = LISTEN_RE.search(line)
            if m and self.port is None:
                self.port = int(m.group(1))
                self._listen.set()
        self._listen.set()

    def rewrite_config(self, config=None, text=None):
        """Replaces the config file (for SIGHUP tests): config as a dict (audit.path kept as
        before when absent) or raw YAML text."""
        if text is None:
            config = dict(config)
            config.setdefault("audit", {"path": self.audit_path})
            text = to_yaml(config) + "\n"
        tmp = self.config_path + ".new"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.config_path)

    def wait_stderr(self, pattern, timeout):
        """Waits until a standard-error line matches the regex pattern; returns the line or
        None after timeout seconds."""
        rx = re.compile(pattern)
        deadline = time.time() + timeout
        while True:
            with self._lock:
                for line in self.stderr_lines:
                    if rx.search(line):
                        return line
            if time.time() > deadline or self.proc.poll() is not None:
                return None
            time.sleep(0.05)

    def config_text(self):
        with open(self.config_path) as f:
            return f.read()

    def stderr(self):
        with self._lock:
            return "\n".join(self.stderr_lines)

    @property
    def pid(self):
        return self.proc.pid

    def rss_kib(self):
        """VmRSS of the process in KiB, or None when it is gone."""
        try:
            with open("/proc/%d/status" % self.proc.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            return None
        return None

    def signal(self, sig):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def wait(self, timeout):
        """Exit code, or raises TestFailure when it has not exited within timeout."""
        try:
            self.returncode = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise TestFailure("egressd did not exit within %ss" % timeout)
        self._reader.join(5)
        return self.returncode

    def stop(self, timeout=15):
        """SIGTERM and wait; returns the exit code.  A non-zero exit prints the end of
        egressd's standard error, where a sanitizer report would be."""
        self.signal(signal.SIGTERM)
        rc = self.wait(timeout)
        if rc != 0:
            print("     egressd exited %r; its stderr ends:\n%s"
                  % (rc, "\n".join("       " + x for x in self.stderr().splitlines()[-40:])),
                  flush=True)
        return rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
        self._reader.join(5)

    def audit(self):
        """The audit records parsed so far; a line that does not parse fails the case."""
        return parse_audit(self.audit_path)

    def wait_audit(self, pred, timeout=5.0, what="audit record"):
        """Polls the audit log until some record satisfies pred; returns it."""
        deadline = time.time() + timeout
        while True:
            recs = self.audit()
            for r in recs:
                if pred(r):
                    return r
            if time.time() > deadline:
                raise TestFailure("no %s within %ss; audit log:\n%s"
                                  % (what, timeout, "\n".join(json.dumps(r) for r in recs)))
            time.sleep(0.05)


def parse_audit(path):
    recs = []
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return recs
    lines = data.split(b"\n")
    # A last piece without a newline is a record still being written: ignore it for now.
    for i, line in enumerate(lines[:-1]):
        try:
            rec = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise TestFailure("audit line %d is not JSON (%s): %r" % (i + 1, e, line[:300]))
        check(isinstance(rec, dict), "audit line %d is not an object: %r" % (i + 1, line[:300]))
        recs.append(rec)
    return recs


def check_audit_record(rec):
    """The shape every record must have: ts, seq, event, and known keys in DESIGN order."""
    check(isinstance(rec.get("ts"), str) and AUDIT_TS_RE.match(rec["ts"]),
          "audit ts is not RFC 3339 UTC with milliseconds: %r" % rec)
    check(isinstance(rec.get("seq"), int), "audit seq is not an integer: %r" % rec)
    check(isinstance(rec.get("event"), str), "audit event missing: %r" % rec)
    keys = [k for k in rec.keys() if k in AUDIT_KEY_ORDER]
    want = sorted(keys, key=AUDIT_KEY_ORDER.index)
    check(keys == want, "audit keys out of DESIGN order: %r (expected %r)" % (keys, want))
    for k in AUDIT_NUMERIC_KEYS & set(rec):
        check(isinstance(rec[k], int) and not isinstance(rec[k], bool),
              "audit %s is not a JSON number: %r" % (k, rec))


def check_audit_log(recs, stopped=True):
    """Whole-log invariants: start then config first, seq 1..n, one close per conn that had a
    request/connect, stop last when stopped cleanly."""
    check(len(recs) >= 2, "audit log has fewer than 2 records: %r" % recs)
    for r in recs:
        check_audit_record(r)
    check_eq([r["seq"] for r in recs], list(range(1, len(recs) + 1)), "audit seq numbers")
    check_eq(recs[0]["event"], "start", "first audit event")
    check_eq(recs[1]["event"], "config", "second audit event")
    closes = {}
    for r in recs:
        if r["event"] == "close":
            check("conn" in r, "close record without conn: %r" % r)
            closes[r["conn"]] = closes.get(r["conn"], 0) + 1
            check(r.get("end") in CLOSE_ENDS, "close record with unknown end: %r" % r)
            for k in ("bytes_out", "bytes_in", "duration_ms"):
                check(isinstance(r.get(k), int) and r[k] >= 0,
                      "close record without integer %s: %r" % (k, r))
    for conn, n in closes.items():
        check(n == 1, "conn %r has %d close records" % (conn, n))
    if stopped:
        for r in recs:
            if r["event"] in ("request", "connect"):
                check(r.get("conn") in closes, "conn %r has no close record" % r.get("conn"))
        check_eq(recs[-1]["event"], "stop", "last audit event")


# The fields of a decision record that every front door must give alike for the same policy
# case (issue 9's conformance table; docs/design.md 7): who, where, and the verdict with its
# rule.  `front` differs by design; `action` is the request's own (a tunnel's record has none);
# `status` exists only where an HTTP answer was sent.
AUDIT_VERDICT_KEYS = ("session", "host", "port", "decision", "reason", "rule")


def audit_verdict(rec):
    """The front-door-independent part of a decision record, as a dict."""
    return {k: rec.get(k) for k in AUDIT_VERDICT_KEYS}


def decision_records(recs, client=None):
    """The request/connect (and later socks5/transparent/dns) decision records, in order, of
    one client address ("IP:PORT") or of all."""
    return [r for r in recs if r.get("decision") is not None and r["event"] != "classify"
            and (client is None or r.get("client") == client)]


def base_config(hosts, session_bound=None, session_limits=None, global_limits=None,
                sessions=None, allow_addresses=("127.0.0.0/8",)):
    """A config with one default session; hosts maps reserved names to address lists."""
    cfg = {
        "listen": {"proxy": ["127.0.0.1:0"]},
        "dns": {
            "servers": ["127.0.0.1:%d" % closed_port()],
            "hosts": {h: list(a) for h, a in hosts.items()},
            "allowAddresses": list(allow_addresses),
            "timeout": "1s",
        },
        "limits": {"headerTimeout": "5s", "idleTimeout": "30s", "connectTimeout": "2s",
                   "shutdownGrace": "2s"},
    }
    if global_limits:
        cfg["limits"].update(global_limits)
    if sessions is None:
        sess = {}
        if session_bound:
            sess["bound"] = {"network": session_bound}
        if session_limits:
            sess["limits"] = session_limits
        sessions = {"default": sess}
    cfg["sessions"] = sessions
    return cfg


# ---------------------------------------------------------------------------------------------
# Clients.

class Response:
    def __init__(self, status, reason, headers, body, closed):
        self.status = status
        self.reason = reason
        self.headers = headers  # list of (name, value)
        self.body = body
        self.closed = closed    # the server closed the connection after this response

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def json(self):
        return json.loads(self.body.decode())

    def __repr__(self):
        return "Response(%d %s, %r, %r)" % (self.status, self.reason, self.headers,
                                            self.body[:400])


class Conn:
    """A raw client connection to the proxy, reading HTTP/1.1 responses by hand so tests see
    exactly what egressd sent."""

    def __init__(self, port, timeout=IO_TIMEOUT):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""
        self.local = "127.0.0.1:%d" % self.sock.getsockname()[1]

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        d = self.sock.recv(65536)
        if not d:
            return False
        self.buf += d
        return True

    def read_head(self):
        while b"\r\n\r\n" not in self.buf:
            if not self._fill():
                raise TestFailure("connection closed before a full response head; got %r"
                                  % self.buf[:500])
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        check(len(parts) >= 2 and parts[0].startswith("HTTP/1."),
              "bad status line %r" % lines[0])
        status = int(parts[1])
        reason = parts[2] if len(parts) > 2 else ""
        headers = []
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers.append((k.strip(), v.strip()))
        return status, reason, headers

    def read_exact(self, n):
        while len(self.buf) < n:
            if not self._fill():
                raise TestFailure("connection closed after %d of %d body bytes"
                                  % (len(self.buf), n))
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_to_eof(self):
        while self._fill():
            pass
        out, self.buf = self.buf, b""
        return out

    def at_eof(self, timeout=3.0):
        """True when the peer closes (with no further bytes) within timeout."""
        if self.buf:
            return False
        self.sock.settimeout(timeout)
        try:
            d = self.sock.recv(1)
        except socket.timeout:
            return False
        except ConnectionResetError:
            return True
        return d == b""

    def read_response(self, head_only=False):
        """Reads one response; the body by Content-Length, chunked, or to EOF."""
        status, reason, headers = self.read_head()
        r = Response(status, reason, headers, b"", False)
        if head_only or status in (204, 304) or (100 <= status < 200):
            return r
        te = (r.header("Transfer-Encoding") or "").lower()
        cl = r.header("Content-Length")
        if "chunked" in te:
            body = bytearray()
            while True:
                while b"\r\n" not in self.buf:
                    if not self._fill():
                        raise TestFailure("EOF inside chunked body")
                line, self.buf = self.buf.split(b"\r\n", 1)
                size = int(line.split(b";")[0], 16)
                if size == 0:
                    while True:
                        while b"\r\n" not in self.buf:
                            if not self._fill():
                                raise TestFailure("EOF inside chunked trailer")
                        line, self.buf = self.buf.split(b"\r\n", 1)
                        if line == b"":
                            break
                    break
                body += self.read_exact(size)
                self.read_exact(2)
            r.body = bytes(body)
        elif cl is not None:
            r.body = self.read_exact(int(cl))
        else:
            r.body = self.read_to_eof()
            r.closed = True
        return r

    def request(self, method, target, headers=(), body=None, host=None):
        """Sends one request in the given form (absolute URI or CONNECT authority)."""
        lines = ["%s %s HTTP/1.1" % (method, target)]
        if host is None and "://" in target:
            host = urllib.parse.urlsplit(target).netloc
        if host is None and method == "CONNECT":
            host = target
        if host:
            lines.append("Host: " + host)
        lines += ["%s: %s" % (k, v) for k, v in headers]
        if body is not None and not any(k.lower() in ("content-length", "transfer-encoding")
                                        for k, _ in headers):
            lines.append("Content-Length: %d" % len(body))
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")
        self.send(data)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def basic_auth(user, token):
    return "Basic " + base64.b64encode(("%s:%s" % (user, token)).encode()).decode()


def run_curl(args, timeout=30):
    """Runs curl with args (no proxy variables inherited); returns CompletedProcess."""
    try:
        return subprocess.run(["curl", "-sS", "--max-time", str(int(timeout))] + args,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=clean_env(), timeout=timeout + 5)
    except subprocess.TimeoutExpired:
        raise TestFailure("curl %r did not finish within %ss" % (args, timeout + 5))


def run_egressd(args, timeout=IO_TIMEOUT):
    """Runs an egressd subcommand to completion; returns CompletedProcess (text)."""
    check(EGRESSD_BIN and os.path.exists(EGRESSD_BIN),
          "EGRESSD_BIN is not set or does not exist: %r" % EGRESSD_BIN)
    try:
        return subprocess.run([EGRESSD_BIN] + args, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=clean_env(), timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TestFailure("egressd %r did not finish within %ss" % (args, timeout))


class RssSampler:
    """Samples a process's VmRSS every interval seconds in a thread; .max_kib is the peak."""

    def __init__(self, proc_rss, interval=0.1):
        self.proc_rss = proc_rss
        self.interval = interval
        self.max_kib = 0
        self.samples = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self._stop.is_set():
            v = self.proc_rss()
            if v is not None:
                self.samples += 1
                self.max_kib = max(self.max_kib, v)
            self._stop.wait(self.interval)

    def stop(self):
        self._stop.set()
        self.thread.join(5)


# ---------------------------------------------------------------------------------------------
# Network namespaces: binding port 443, giving lo other addresses, without root.

NETNS_ENV = "EGRESSD_E2E_NETNS"  # "1" in a file that rerun_in_netns runs in its namespace


def in_netns():
    """True in a test file that rerun_in_netns runs in a private network namespace."""
    return os.environ.get(NETNS_ENV) == "1"


def real_root():
    """True for the machine's root; False for an ordinary user, and for the root that
    `unshare -Urn` maps an ordinary user to (rerun_in_netns as a user): that one has uid 0 but
    no other uid, so a program that switches users (sshd's privilege separation) cannot run
    there, nor write where only the machine's root may."""
    if os.geteuid() != 0:
        return False
    try:
        with open("/proc/self/uid_map") as f:
            return f.read().split() == ["0", "0", "4294967295"]
    except OSError:
        return True


def netns_command(argv, addrs=()):
    """argv wrapped to run in a new network namespace that holds only loopback, up, with each
    address in addrs added to lo: there a case may bind any port (443 included), and nothing a
    regression sends can leave this machine.  As root the wrapper is `unshare -n`; as any other
    user `unshare -Urn`: a new user namespace in which the user is root, which lets it bind
    port 443 and configure lo in the new network namespace, and gives it nothing outside.
    Returns (argv, None), or (None, reason) when no namespace can be made here (unshare or ip
    missing, user namespaces turned off, a container's seccomp filter)."""
    for tool, package in (("unshare", "util-linux"), ("ip", "iproute2")):
        if not shutil.which(tool):
            return None, "no %s here (Debian package %s, which tools/install-deps installs)" % (
                tool, package)
    flags = "-n" if os.geteuid() == 0 else "-Urn"
    setup = ["ip link set lo up"] + ["ip addr add %s dev lo" % shlex.quote(
        str(ipaddress.ip_interface(a))) for a in addrs]
    wrap = ["unshare", flags, "sh", "-c", " && ".join(setup) + ' && exec "$@"', "sh"]
    try:
        probe = subprocess.run(wrap + ["true"], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               timeout=IO_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "unshare %s failed: %s" % (flags, e)
    if probe.returncode != 0:
        said = " ".join(probe.stderr.split()) or "exit %d" % probe.returncode
        hint = ""
        if flags == "-Urn":
            hint = (": this user may not make user namespaces here (a chroot, a container's "
                    "seccomp filter, or a sysctl: kernel.unprivileged_userns_clone, "
                    "user.max_user_namespaces, kernel.apparmor_restrict_unprivileged_userns)")
        return None, "%s%s" % (said, hint)
    return wrap + list(argv), None


def rerun_in_netns(addrs=()):
    """Runs this test file again, with the same arguments, through netns_command, and exits
    with its exit code.  Returns only when this process is to run the cases itself: None when
    it already runs in the namespace, or the reason none can be made here (printed), which the
    cases that need the namespace pass to skip().  EGRESSD_E2E_NO_NETNS=1 turns it off."""
    if in_netns():
        return None
    if os.environ.get("EGRESSD_E2E_NO_NETNS") == "1":
        why = "EGRESSD_E2E_NO_NETNS=1"
    else:
        argv, why = netns_command([sys.executable, os.path.abspath(sys.argv[0])] +
                                  sys.argv[1:], addrs)
        if argv is not None:
            # In the namespace the file runs as root: root's tools (nft, sshd) are in sbin, which
            # an ordinary user's PATH leaves out on Debian.
            path = os.environ.get("PATH", "/usr/bin:/bin").split(":")
            path += [d for d in ("/usr/local/sbin", "/usr/sbin", "/sbin") if d not in path]
            sys.stdout.flush()
            sys.exit(subprocess.run(argv, env=dict(os.environ, PATH=":".join(path),
                                                   **{NETNS_ENV: "1"})).returncode)
    print("(not in a private network namespace: %s)" % why, flush=True)
    return why


# ---------------------------------------------------------------------------------------------
# Running cases.

class Harness:
    """Holds a temp dir and everything started in it; close() stops all of it."""

    def __init__(self, name):
        self.name = name
        self.tmp = tempfile.mkdtemp(prefix="egressd-e2e-%s-" % name)
        self._cleanup = []
        self.keep = os.environ.get("EGRESSD_E2E_KEEP") == "1"

    def add(self, obj, closer=None):
        """Registers obj to be stopped by close(); returns obj."""
        self._cleanup.append(closer or obj.close)
        return obj

    def origin(self, tls_ctx=None):
        return self.add(Origin(tls_ctx))

    def raw(self, handler):
        return self.add(RawServer(handler))

    def egressd(self, config, name="egressd", env=None, preexec=None):
        """Starts egressd serve on config (env: extra environment; preexec: run in the child
        before exec, e.g. to lower a resource limit); it is killed by close() if still
        running."""
        e = Egressd(self.tmp, config, name, env, preexec)
        self._cleanup.append(e.kill)
        return e

    def close(self):
        for c in reversed(self._cleanup):
            try:
                c()
            except Exception:  # cleanup must go on whatever one closer does
                traceback.print_exc()
        self._cleanup = []
        if not self.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)


def run_cases(title, cases):
    """Runs (name, fn) cases, each fn(h) with its own Harness; prints one line per case (PASS,
    FAIL or SKIPPED with the reason skip() gave) and a closing 'N passed, M failed, K skipped'
    line; exits 1 on any failure, SKIP_EXIT when every case was skipped, else 0."""
    global _in_case
    passed = failed = skipped = 0
    failures = []
    print("== %s (binary %s, sanitize=%d)" % (title, EGRESSD_BIN, SANITIZE), flush=True)
    for name, fn in cases:
        h = Harness(re.sub(r"[^A-Za-z0-9]+", "-", name)[:40])
        t0 = time.time()
        _in_case = True
        try:
            fn(h)
        except Skipped as e:
            skipped += 1
            print("SKIPPED %s (%.1fs): %s" % (name, time.time() - t0, e), flush=True)
        except Exception as e:  # any exception is a failed case, reported with its cause
            failed += 1
            detail = str(e) if isinstance(e, TestFailure) else traceback.format_exc()
            failures.append(name)
            print("FAIL %s (%.1fs): %s" % (name, time.time() - t0, detail), flush=True)
        else:
            passed += 1
            print("PASS %s (%.1fs)" % (name, time.time() - t0), flush=True)
        finally:
            _in_case = False
            h.close()
    print("%s: %d passed, %d failed, %d skipped%s" % (
        title, passed, failed, skipped,
        (" (" + ", ".join(failures) + ")") if failures else ""), flush=True)
    if failed:
        sys.exit(1)
    sys.exit(SKIP_EXIT if skipped and not passed else 0)
