"""The conformance table (issue 9 item 8): one table of policy cases, each run through every
front door, and the doors must agree.

A row is a policy case: a session's bound and limits, a destination, what the client asks for,
and what must come of it (allowed, or denied with a reason, an HTTP status and a rule).  A
column is a front door with the protocol spoken inside it:

  forward      a plain HTTP request through listen.proxy (absolute URI)
  connect-tls  CONNECT host:port, then a TLS ClientHello for the host, to a TLS origin
  connect-http CONNECT host:port, then plain HTTP requests inside
  socks5-tls   SOCKS5 CONNECT with a domain name (listen.socks5), then TLS
  socks5-http  SOCKS5 CONNECT, then plain HTTP
  connect-ssh  CONNECT, then a server that speaks first with an SSH banner
  socks5-ssh   the same through SOCKS5
  connect-raw  CONNECT, then bytes that are neither TLS nor HTTP (an opaque tunnel)
  socks5-raw   the same through SOCKS5
  transparent-tls   no proxy asked for: a connection to 192.0.2.1 (or an IP literal's address)
                    that nft redirects to listen.transparent, then TLS; named by its SNI
  transparent-http  the same, then plain HTTP; named by its Host
  inspected    CONNECT, then TLS that egressd terminates (the session inspects every host),
               then plain HTTP requests inside, each decided

Every cell asserts what the user observes: the HTTP status (and X-Egressd-Reason, Retry-After,
Proxy-Authenticate), the SOCKS reply code, or the close of a tunnel after its success answer;
the bytes that reached the origin (zero for a denial, and no connection at all for a denial
decided before the dial); and the audit records of the cell's connection: every decision before
the last one an allow, the last one with its decision, reason, rule, front, action and event,
`status` exactly when an HTTP answer carried one, and one close record with the end that fits.
The cells of a row must agree: the same verdict, reason and rule (the whole rule text, across
doors), except where the row states a door's own value, always with the reason (docs/design.md
4.5: what a tunnel carries decides what it may do).  A cell that does not apply to a door is
marked n/a with the reason in the row, never passed.  A known failure is marked xfail with its
reason: reported as XFAIL on its own line and in the matrix, never as a pass, and an xfail cell
that passes fails the table (XPASS: remove the marker).

Speed: one egressd per config group, shared by every row and door of the group; each cell gets
its own session (its own credentials, bound, limits and counters), so cells never disturb each
other.  Rows whose cells wait (timeouts, expiry, silence) run their cells in parallel.

Adding a front door: write a Door subclass with a name, front (the audit `front`), inner (the
protocol inside: forward, tls, http, ssh, raw, inspected), listener, and open() for a tunnel door
(or send() for a door of its own kind; stream(), shows() and record_front() where it differs),
add it to DOORS, and state n/a or its own values in the rows where it differs.  docs/testing.md, "The conformance table", says more.

The file runs in a private network namespace (harness.rerun_in_netns), so that a bypass of the
address policy cannot send a packet beyond this machine and port 443 can be bound; without one,
the port-443 rows are SKIPPED.
"""

import base64
import json
import os
import socket
import ssl
import shutil
import struct
import subprocess
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Blackhole, Egressd, Harness, TestFailure, audit_verdict,  # noqa: E402
                     check_audit_log, closed_port, in_netns, make_cert, rerun_in_netns, SKIP_EXIT, EGRESSD_BIN,
                     SANITIZE)

IO = 5.0  # seconds: a socket read that gets nothing in this long fails the cell
SO_MARK = getattr(socket, "SO_MARK", 36)
REDIRECT_MARK = 0xe9  # a client socket with this mark is redirected to listen.transparent
ORIG_DST = "192.0.2.1"  # where a transparent cell's client connects to a name (TEST-NET-1)

# ---------------------------------------------------------------------------------------------
# Names.  Every destination is a reserved name that dns.hosts maps; dns.servers is a closed
# local port, so a name without a static answer fails (dns-failed) instead of being looked up.

TEREDO_10 = "2001:0:4136:e378:8000:63bf:f5ff:fffe"  # carries 10.0.0.1
HOSTS = {
    "origin.test": ["127.0.0.1"],
    "other.test": ["127.0.0.1"],
    "evil.test": ["127.0.0.1"],
    "a.evil.test": ["127.0.0.1"],
    "self.test": ["127.0.0.1"],
    "refused.test": ["127.0.0.1"],
    "slow.test": ["127.0.0.1"],
    "xn--bcher-kva.test": ["127.0.0.1"],
    # one name per always-denied range class (docs/design.md 3 step 5)
    "lo2.test": ["127.0.0.2"],
    "v6lo.test": ["::1"],
    "zero.test": ["0.0.0.0"],
    "ten.test": ["10.0.0.1"],
    "rfc172.test": ["172.16.0.1"],
    "rfc192.test": ["192.168.1.1"],
    "cgnat.test": ["100.64.0.1"],
    "linklocal.test": ["169.254.1.1"],
    "meta.test": ["169.254.169.254"],
    "alimeta.test": ["100.100.100.200"],
    "ec2v6.test": ["fd00:ec2::254"],
    "ula.test": ["fc00::1"],
    "v6ll.test": ["fe80::1"],
    "mcast.test": ["224.0.0.1"],
    "v6mcast.test": ["ff02::1"],
    "bcast.test": ["255.255.255.255"],
    "mapped.test": ["::ffff:10.0.0.1"],
    "nat64.test": ["64:ff9b::a9fe:a9fe"],
    "sixtofour.test": ["2002:a00:1::1"],
    "teredo.test": [TEREDO_10],
    "mixed.test": ["10.0.0.1", "127.0.0.1"],
}

# The leaf tags an opaque tunnel of each kind carries, as the audit record lists them.
TLS_ACTIONS = "git:fetch,git:push,http:read,http:write"
SSH_ACTIONS = "git:fetch,git:push,ssh:read,ssh:write"
ALL_ACTIONS = "dns,git:fetch,git:push,http:read,http:write,net:raw,ssh:read,ssh:write"
KIND_ACTIONS = {"tls": TLS_ACTIONS, "http": TLS_ACTIONS, "ssh": SSH_ACTIONS, "raw": ALL_ACTIONS,
                "inspected": TLS_ACTIONS}


def fail(msg):
    raise TestFailure(msg)


def ensure(cond, msg):
    if not cond:
        raise TestFailure(msg)


# ---------------------------------------------------------------------------------------------
# Origins: each counts every byte and connection it receives.

class Upstream:
    """A TCP listener on addr:port; serve(sock, rec) runs per connection in a thread, where sock
    counts what it receives into rec.  Stopped by close() (the listening socket is shut down, so
    the accept loop ends at once)."""

    def __init__(self, addr="127.0.0.1", port=0):
        self.lock = threading.Lock()
        self.conns = []  # per connection: {"bytes": n, "data": bytearray}
        self.log = bytearray()  # every byte received, in arrival order (the first 16 MiB)
        self.clear_log = bytearray()  # the same inside TLS, for a TLS origin
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((addr, port))
        self.sock.listen(128)
        self.addr, self.port = self.sock.getsockname()[:2]
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            rec = {"bytes": 0, "data": bytearray()}
            with self.lock:
                self.conns.append(rec)
            threading.Thread(target=self._run, args=(c, rec), daemon=True).start()

    def _run(self, c, rec):
        c.settimeout(20)
        try:
            self.serve(CountingSock(c, rec, self), rec)
        except (OSError, ssl.SSLError, ValueError):
            pass
        finally:
            try:
                c.close()
            except OSError:
                pass

    def totals(self, clear=False):
        """(connections, bytes received); clear: the bytes inside TLS, for a TLS origin (what
        egressd's byte limits count on an inspected tunnel, without the handshakes)."""
        with self.lock:
            return len(self.conns), sum(r.get("clear", 0) if clear and isinstance(self, TlsOrigin)
                                        else r["bytes"] for r in self.conns)

    def data_since(self, pos, clear=False):
        with self.lock:
            return bytes((self.clear_log if clear else self.log)[pos:])

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(5)


class CountingSock:
    def __init__(self, sock, rec, up):
        self.sock, self.rec, self.up = sock, rec, up

    def recv(self, n):
        d = self.sock.recv(n)
        with self.up.lock:
            self.rec["bytes"] += len(d)
            if len(self.up.log) < 1 << 24:
                self.up.log += d
        return d

    def sendall(self, d):
        self.sock.sendall(d)


class TlsServerPipe:
    """TLS on a counting socket through memory BIOs (so the origin counts the raw bytes)."""

    def __init__(self, sock, ctx):
        self.sock = sock
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.obj = ctx.wrap_bio(self.inc, self.out, server_side=True)
        while True:
            try:
                self.obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                self._flush()
                d = sock.recv(65536)
                if not d:
                    raise OSError("EOF in the TLS handshake")
                self.inc.write(d)
        self._flush()

    def _flush(self):
        d = self.out.read()
        if d:
            self.sock.sendall(d)

    def recv(self, n):
        while True:
            try:
                d = self.obj.read(n)
                with self.sock.up.lock:
                    self.sock.rec["clear"] = self.sock.rec.get("clear", 0) + len(d)
                    if len(self.sock.up.clear_log) < 1 << 24:
                        self.sock.up.clear_log += d
                return d
            except ssl.SSLWantReadError:
                d = self.sock.recv(65536)
                if not d:
                    return b""
                self.inc.write(d)
            except ssl.SSLZeroReturnError:
                return b""

    def sendall(self, d):
        self.obj.write(d)
        self._flush()


def serve_http(sock):
    """Answers HTTP/1.1 requests on sock (recv/sendall) until EOF: GET /big?n=N streams N
    bytes, anything else gets a JSON echo of method, path and Host."""
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            d = sock.recv(65536)
            if not d:
                return
            buf += d
        head, buf = buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        method, target = lines[0].split(" ")[:2]
        hdrs = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        n = int(hdrs.get("content-length", "0") or "0")
        if "chunked" in hdrs.get("transfer-encoding", "").lower():
            while b"\r\n0\r\n\r\n" not in b"\r\n" + buf:
                d = sock.recv(65536)
                if not d:
                    return
                buf += d
            buf = (b"\r\n" + buf).split(b"\r\n0\r\n\r\n", 1)[1]
        else:
            while len(buf) < n:
                d = sock.recv(65536)
                if not d:
                    return
                buf += d
            buf = buf[n:]
        if target.startswith("/big?n="):
            size = int(target.split("=", 1)[1])
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size + b"b" * size)
            continue
        if hdrs.get("upgrade", "").lower() == "websocket":
            sock.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                         b"Connection: Upgrade\r\n\r\n")
            while buf or True:
                if buf:
                    sock.sendall(buf)
                    buf = b""
                d = sock.recv(65536)
                if not d:
                    return
                buf = d
        body = json.dumps({"method": method, "path": target, "host": hdrs.get("host")}).encode()
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body)


class HttpOrigin(Upstream):
    def serve(self, sock, rec):
        serve_http(sock)


class TlsOrigin(Upstream):
    def __init__(self, ctx, **kw):
        self.ctx = ctx
        super().__init__(**kw)

    def serve(self, sock, rec):
        serve_http(TlsServerPipe(sock, self.ctx))


SSH_BANNER = b"SSH-2.0-OpenSSH_9.2p1 conformance\r\n"


class SshOrigin(Upstream):
    """Speaks first with an SSH banner; a client line "BIG n" gets n more bytes."""

    def serve(self, sock, rec):
        sock.sendall(SSH_BANNER)
        buf = b""
        while True:
            d = sock.recv(65536)
            if not d:
                return
            buf += d
            if b"BIG " in buf and buf.endswith(b"\n"):
                sock.sendall(b"s" * int(buf.split(b"BIG ", 1)[1].split(b"\n")[0]))
                buf = b""


class RawOrigin(Upstream):
    """Echoes; a client message "\\0big N\\n" gets N bytes instead."""

    def serve(self, sock, rec):
        while True:
            d = sock.recv(65536)
            if not d:
                return
            if d.startswith(b"\0big "):
                sock.sendall(b"r" * int(d[5:].split(b"\n")[0]))
            else:
                sock.sendall(d)


HRR_RANDOM = bytes.fromhex("cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")


def hrr_record():
    """A HelloRetryRequest: a ServerHello whose random is the HRR value (RFC 8446 4.1.3)."""
    exts = (b"\x00\x2b\x00\x02\x03\x04"          # supported_versions: TLS 1.3
            b"\x00\x33\x00\x02\x00\x18")         # key_share: selected group secp384r1
    body = b"\x03\x03" + HRR_RANDOM + b"\x20" + b"\x11" * 32 + b"\x13\x01\x00" + \
        struct.pack(">H", len(exts)) + exts
    msg = b"\x02" + struct.pack(">I", len(body))[1:] + body
    return b"\x16\x03\x03" + struct.pack(">H", len(msg)) + msg


ALERT = b"\x15\x03\x03\x00\x02\x02\x28"  # handshake_failure


class HrrOrigin(Upstream):
    """Answers the first ClientHello record with a HelloRetryRequest and the second with an
    alert: what a TLS 1.3 server that wants another key share does."""

    def serve(self, sock, rec):
        buf, hellos = b"", 0
        while True:
            d = sock.recv(65536)
            if not d:
                return
            buf += d
            while len(buf) >= 5 and len(buf) >= 5 + int.from_bytes(buf[3:5], "big"):
                n = 5 + int.from_bytes(buf[3:5], "big")
                record, buf = buf[:n], buf[n:]
                if record[0] == 0x16:
                    hellos += 1
                    sock.sendall(hrr_record() if hellos == 1 else ALERT)


# ---------------------------------------------------------------------------------------------
# ClientHellos.

# An outer encrypted_client_hello extension (RFC 9849 5): type outer, HKDF-SHA256 and AES-128-GCM,
# a config id, a 32-byte encapsulated key and a 144-byte payload; what a browser's GREASE ECH looks
# like, and to egressd the same as a real one.
ECH_EXT = struct.pack(">HH", 0xfe0d, 1 + 4 + 1 + 2 + 32 + 2 + 144) + b"\x00\x00\x01\x00\x01\x2a" + \
    struct.pack(">H", 32) + b"\x5e" * 32 + struct.pack(">H", 144) + b"\xe5" * 144


def client_hello(sni, pad=0, ech=False):
    """A real ClientHello (Python's ssl module) for sni as TLS records; pad adds a padding
    extension of that many bytes, split into records of at most 16 KiB; ech adds an
    encrypted_client_hello extension."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname=sni)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    rec = out.read()
    if not pad and not ech:
        return rec
    msg = rec[5:]
    body = msg[4:]
    p = 2 + 32
    p += 1 + body[p]
    p += 2 + int.from_bytes(body[p:p + 2], "big")
    p += 1 + body[p]
    exts = body[p + 2:] + (ECH_EXT if ech else b"")
    if pad:
        exts += struct.pack(">HH", 21, pad) + b"\0" * pad
    body = body[:p] + struct.pack(">H", len(exts)) + exts
    msg = b"\x01" + struct.pack(">I", len(body))[1:] + body
    return b"".join(b"\x16\x03\x01" + struct.pack(">H", len(msg[i:i + 16384])) + msg[i:i + 16384]
                    for i in range(0, len(msg), 16384))


# ---------------------------------------------------------------------------------------------
# A client stream that reads with deadlines and counts what it receives.

class Stream:
    def __init__(self, port, source=None, addr="127.0.0.1", mark=0):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.settimeout(IO)
        if mark:  # the nft rule redirects marked connections to the transparent listener
            self.sock.setsockopt(socket.SOL_SOCKET, SO_MARK, mark)
        if source:
            self.sock.bind((source, 0))
        self.sock.connect((addr, port))
        self.local = "%s:%d" % self.sock.getsockname()[:2]
        self.buf = b""
        self.received = 0
        self.eof = False

    def send(self, data):
        try:
            self.sock.sendall(data)
        except OSError:
            self.eof = True

    def fill(self, timeout=IO):
        """Reads once; False at EOF (or a reset, which a client sees as the same end)."""
        if self.eof:
            return False
        self.sock.settimeout(timeout)
        try:
            d = self.sock.recv(65536)
        except socket.timeout:
            raise
        except OSError:
            d = b""
        if not d:
            self.eof = True
            return False
        self.received += len(d)
        self.buf += d
        return True

    def read_exact(self, n, timeout=IO):
        while len(self.buf) < n:
            if not self.fill(timeout):
                return None
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_until(self, sep, timeout=IO):
        while sep not in self.buf:
            if not self.fill(timeout):
                return None
        out, self.buf = self.buf.split(sep, 1)
        return out + sep

    def closed_within(self, timeout):
        """True when the peer ends the connection within timeout with no more bytes."""
        if self.buf:
            return False
        try:
            return not self.fill(timeout)
        except socket.timeout:
            return False

    def drain(self, timeout):
        """Reads until EOF or timeout; True at EOF."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if not self.fill(max(0.01, deadline - time.time())):
                    return True
            except socket.timeout:
                return False
        return False

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def read_http(s, timeout=IO):
    """One HTTP response from s: (status, headers dict lower-case, body), or None at EOF before
    a full head."""
    head = s.read_until(b"\r\n\r\n", timeout)
    if head is None:
        return None
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    hdrs = {}
    for line in lines[1:]:
        if line:
            k, _, v = line.partition(":")
            hdrs[k.strip().lower()] = v.strip()
    if status == 200 and "content-length" not in hdrs and "transfer-encoding" not in hdrs:
        return status, hdrs, b""  # a CONNECT's answer
    body = s.read_exact(int(hdrs.get("content-length", "0")), timeout) or b""
    return status, hdrs, body


# ---------------------------------------------------------------------------------------------
# What a user sees.

class Obs:
    """What the client of one cell observed."""

    def __init__(self):
        self.answer = None       # the door's own answer: ("http", status) or ("socks", code) or
                                 # ("socks-auth", status) when it is a refusal or a success
        self.established = False  # a tunnel's success answer (200, SOCKS reply 0) came
        self.inner = None        # status of an HTTP answer inside a tunnel (or forwarded)
        self.headers = {}        # of the HTTP answer that carried egressd's reason
        self.body = b""
        self.ok = False          # the exchange reached the origin and its answer came back
        self.closed = False      # the connection ended without (further) answer
        self.received = 0        # bytes received after the success answer
        self.client = None       # the main connection's local address (the audit "client")
        self.clients = []        # every connection of the cell (hold, before, parallel)
        self.note = ""

    def text(self):
        parts = []
        if self.answer:
            parts.append("%s %s" % self.answer)
        if self.established:
            parts.append("established")
        if self.inner is not None:
            parts.append("inner %s" % self.inner)
        if self.headers.get("x-egressd-reason"):
            parts.append("reason %s" % self.headers["x-egressd-reason"])
        parts.append("ok" if self.ok else ("closed" if self.closed else "open"))
        if self.note:
            parts.append(self.note)
        return ", ".join(parts)


# ---------------------------------------------------------------------------------------------
# Front doors (the columns).

def hostport(host, port, default=80):
    h = "[%s]" % host if ":" in host else host
    return h if port == default else "%s:%d" % (h, port)


def basic(user, token):
    return base64.b64encode(("%s:%s" % (user, token)).encode()).decode()


class Door:
    """One front door and the protocol inside it.  A Door instance serves one cell: send(case)
    runs the cell's exchange, observe() returns what the client saw (Obs); again(case) runs a
    second exchange on the same connection (rows that change something in between)."""
    name = ""
    front = ""      # the audit record's "front"
    inner = ""      # forward, tls, http, ssh, raw
    listener = "proxy"
    kind_known = False  # the tunnel's kind is known when it is decided: an action refusal of
                        # its kind is decided at once and records no action (as CONNECT on 443)

    def __init__(self, env):
        self.env = env
        self.obs = Obs()
        self.s = None
        self.extra = []  # other streams the cell opened (held, parallel)
        self.pre = b""   # first bytes sent together with the tunnel's request

    # --- what a cell asks for ---
    def dest(self, case):
        host = case.host
        port = case.port
        if port is None:
            port = self.env.origin_for(self, case).port
        elif port == "self":
            port = self.env.ports[self.listener]
        elif isinstance(port, str):
            port = self.env.special[port]
        return host, port

    def credentials(self, case):
        if case.cred == "none":
            return None
        if case.cred == "wrong":
            return case.session, "not-the-token"
        return case.session, case.token

    def observe(self):
        return self.obs

    def close(self):
        for s in [self.s] + self.extra:
            if s is not None:
                s.close()

    # --- the HTTP request a cell makes (forward, and plain HTTP inside a tunnel) ---
    def http_request(self, case, absolute, host, port):
        body = case.body or b""
        target = case.path
        hp = hostport(host, port)
        if absolute:
            target = "http://%s%s" % (hp, case.path)
        lines = ["%s %s HTTP/1.1" % (case.method, target), "Host: %s" % (case.host_header or hp)]
        cred = self.credentials(case)
        if absolute and cred:
            lines.append("Proxy-Authorization: Basic " + basic(*cred))
        for k, v in case.headers:
            lines.append("%s: %s" % (k, v))
        if case.websocket:
            lines += ["Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13",
                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]
        chunked = any(k.lower() == "transfer-encoding" for k, _ in case.headers)
        if (body or case.method in ("POST", "PUT")) and not chunked:
            lines.append("Content-Length: %d" % len(body))
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    def take_http(self, r, inner):
        """Records an HTTP response: egressd's own (X-Egressd-Reason) or the origin's."""
        status, hdrs, body = r
        if "x-egressd-reason" in hdrs or status not in (200, 101):
            self.obs.headers, self.obs.body = hdrs, body
            if inner:
                self.obs.inner = status
            else:
                self.obs.answer = ("http", status)
            self.obs.closed = self.s.closed_within(3)
            return
        if inner:
            self.obs.inner = status
        else:
            self.obs.answer = ("http", status)
        self.obs.ok = status == 200

    # --- tunnels ---
    def open(self, case):
        """Opens the tunnel; sets obs.answer/established.  Overridden by the tunnel fronts."""
        raise NotImplementedError

    def stream(self, case):
        """A connection to the door's listener from the cell's address."""
        return Stream(self.env.ports[self.listener], case.source)

    @classmethod
    def shows(cls, stage):
        """How a denial decided at stage reaches the client: "answer" (the door's own refusal:
        an HTTP status, a SOCKS reply), "close" (the success answer, then the close), or
        "inner" (an HTTP answer inside the connection)."""
        return {"request": "answer", "first-bytes": "close", "inner": "inner"}[stage]

    @classmethod
    def record_front(cls, rec, front):
        """The front a decision record of this door carries (front: the row's, or the door's)."""
        return front

    def send(self, case):
        self.s = self.stream(case)
        self.obs.client = self.s.local
        self.obs.clients.append(self.s.local)
        if not self.open(case):
            return
        self.s.received = 0
        if case.delay:
            time.sleep(case.delay)
        self.exchange(case)

    def again(self, case):
        """A second exchange on the same connection, after the row's step in between."""
        self.obs.ok = False
        self.obs.inner = None
        if self.s.eof or self.s.closed_within(0.2):
            self.obs.closed = True
            return
        self.exchange(case, second=True)


class WebsocketMixin:
    def websocket(self, case):
        """After a 101: bytes both ways, as the origin echoes them."""
        self.obs.ok = False
        msg = b"\x81\x05hello websocket bytes " + (case.body or b"")
        self.s.send(msg)
        got = self.s.read_exact(len(msg), 3)
        self.obs.ok = got == msg
        self.obs.closed = got is None
        self.obs.note = "websocket relayed" if self.obs.ok else "websocket cut"


class Forward(WebsocketMixin, Door):
    name = "forward"
    front = "http"
    inner = "forward"

    def send(self, case):
        self.s = self.stream(case)
        self.obs.client = self.s.local
        self.obs.clients.append(self.s.local)
        if case.delay:
            time.sleep(case.delay)
        self.exchange(case)

    def exchange(self, case, second=False):
        host, port = self.dest(case)
        self.s.send(self.http_request(case, True, host, port))
        r = read_http(self.s)
        if r is None:
            self.obs.closed = True
            return
        self.obs.received = self.s.received
        self.take_http(r, False)
        if case.websocket and r[0] == 101:
            self.websocket(case)



class ConnectFront(Door):
    front = "connect"

    def open(self, case):
        host, port = self.dest(case)
        hp = hostport(host, port, default=None)
        lines = ["CONNECT %s HTTP/1.1" % hp, "Host: %s" % hp]
        cred = self.credentials(case)
        if cred:
            lines.append("Proxy-Authorization: Basic " + basic(*cred))
        if case.pipeline:
            self.pre = self.first_bytes(case)
        self.s.send(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + self.pre)
        r = read_http(self.s)
        if r is None:
            self.obs.closed = True
            return False
        status, hdrs, body = r
        if status == 200 and "x-egressd-reason" not in hdrs:
            self.obs.answer = ("http", 200)
            self.obs.established = True
            return True
        self.obs.answer = ("http", status)
        self.obs.headers, self.obs.body = hdrs, body
        self.obs.closed = self.s.closed_within(3)
        return False


SOCKS_CODES = {0: "succeeded", 1: "general failure", 2: "not allowed by ruleset",
               3: "network unreachable", 4: "host unreachable", 5: "connection refused",
               6: "TTL expired", 7: "command not supported", 8: "address type not supported"}


class SocksFront(Door):
    front = "socks5"
    listener = "socks5"

    def open(self, case):
        host, port = self.dest(case)
        cred = self.credentials(case)
        self.s.send(b"\x05\x02\x00\x02" if cred else b"\x05\x01\x00")
        g = self.s.read_exact(2)
        if g is None:
            self.obs.closed = True
            self.obs.note = "closed after the greeting"
            return False
        ensure(g[0] == 5, "SOCKS greeting answer %r" % g)
        if g[1] == 0xFF:
            self.obs.answer = ("socks-method", 0xFF)
            self.obs.closed = self.s.closed_within(3)
            return False
        if g[1] == 2:
            ensure(cred, "egressd chose username/password that the client did not offer")
            u, p = cred[0].encode(), cred[1].encode()
            self.s.send(b"\x01" + bytes([len(u)]) + u + bytes([len(p)]) + p)
            a = self.s.read_exact(2)
            if a is None:
                self.obs.closed = True
                self.obs.note = "closed after the credentials"
                return False
            if a[1] != 0:
                self.obs.answer = ("socks-auth", a[1])
                self.obs.closed = self.s.closed_within(3)
                return False
        if ":" in host:
            addr = b"\x04" + socket.inet_pton(socket.AF_INET6, host)
        else:
            hb = host.encode("latin-1")
            addr = b"\x03" + bytes([len(hb)]) + hb
        if case.pipeline:
            self.pre = self.first_bytes(case)
        self.s.send(b"\x05\x01\x00" + addr + struct.pack(">H", port) + self.pre)
        r = self.s.read_exact(4)
        if r is None:
            self.obs.closed = True
            self.obs.note = "closed before the SOCKS reply"
            return False
        ensure(r[0] == 5, "SOCKS reply version %r" % r)
        rest = {1: 6, 4: 18}.get(r[3])
        if rest is None:
            n = self.s.read_exact(1)
            rest = (n[0] if n else 0) + 2
        self.s.read_exact(rest)
        self.obs.answer = ("socks", r[1])
        if r[1] != 0:
            self.obs.closed = self.s.closed_within(3)
            return False
        self.obs.established = True
        return True


class TlsInner:
    inner = "tls"

    def exchange(self, case, second=False):
        host, port = self.dest(case)
        if second:
            self.tls_request(case, host, port)
            return
        if case.tls_pad or case.hrr_sni is not None or case.ech is not None:
            self.raw_hellos(case)
            return
        if not self.pre:
            self.s.send(self.start_tls(case))
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self.s.send(self.out.read())
                if self.s.buf:  # bytes that came with the tunnel's answer
                    self.inc.write(self.s.buf)
                    self.s.buf = b""
                    continue
                try:
                    more = self.s.fill()
                except socket.timeout:
                    self.obs.note = "no answer to the ClientHello"
                    return
                if self.s.buf:
                    self.inc.write(self.s.buf)
                    self.s.buf = b""
                if not more:
                    self.obs.closed = True
                    return
            except ssl.SSLError as e:
                self.obs.note = "TLS error %s" % e
                self.obs.closed = self.s.closed_within(3)
                return
        self.s.send(self.out.read())
        self.tls_request(case, host, port)

    def start_tls(self, case):
        host, _ = self.dest(case)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        sni = case.sni if case.sni is not None else host
        self.tls = ctx.wrap_bio(self.inc, self.out, server_hostname=sni or None)
        try:
            self.tls.do_handshake()
        except ssl.SSLWantReadError:
            pass
        return self.out.read()

    def first_bytes(self, case):
        return self.start_tls(case)

    def tls_request(self, case, host, port):
        try:
            self.tls.write(self.http_request(case, False, host, port))
        except ssl.SSLError:
            self.obs.closed = True
            return
        self.s.send(self.out.read())
        data = b""
        while True:
            try:
                data += self.tls.read(65536)
            except ssl.SSLWantReadError:
                if b"\r\n\r\n" in data:
                    head, rest = data.split(b"\r\n\r\n", 1)
                    cl = [x for x in head.split(b"\r\n") if x.lower().startswith(b"content-length")]
                    if cl and len(rest) >= int(cl[0].split(b":")[1]):
                        break
                try:
                    more = self.s.fill()
                except socket.timeout:
                    self.obs.note = "no TLS answer"
                    return
                if self.s.buf:
                    self.inc.write(self.s.buf)
                    self.s.buf = b""
                if not more:
                    self.obs.closed = True
                    self.obs.received = self.s.received
                    return
            except (ssl.SSLError, ssl.SSLZeroReturnError):
                self.obs.closed = True
                return
        self.obs.received = self.s.received
        status = int(data.split(b" ", 2)[1])
        self.obs.inner = status
        self.obs.ok = status == 200

    def raw_hellos(self, case):
        """Hand-made ClientHellos: one padded past the byte limit, or one for the tunnel's host
        then, after the server's HelloRetryRequest, another for case.hrr_sni."""
        host, _ = self.dest(case)
        first = client_hello(case.sni or host, pad=case.tls_pad, ech=case.ech == "both")
        self.s.send(first)
        if case.hrr_sni is None:
            self.obs.closed = self.s.drain(3)
            self.obs.received = self.s.received
            return
        hrr = self.s.read_exact(len(hrr_record()))
        if hrr is None:
            self.obs.closed = True
            self.obs.note = "no HelloRetryRequest came back"
            return
        self.s.send(client_hello(case.hrr_sni, ech=case.ech is not None))
        got = self.s.read_exact(len(ALERT), 3)
        if got is None:
            self.obs.closed = True
            return
        self.obs.ok = got == ALERT


class HttpInner(WebsocketMixin):
    inner = "http"

    def first_bytes(self, case):
        host, port = self.dest(case)
        return self.http_request(case, False, host, port)

    def exchange(self, case, second=False):
        host, port = self.dest(case)
        if case.then_host:
            self.pipelined(case, host, port)
            return
        if not self.pre or second:
            self.s.send(self.http_request(case, False, host, port))
        r = read_http(self.s)
        if r is None:
            self.obs.closed = True
            self.obs.received = self.s.received
            return
        self.obs.received = self.s.received
        self.take_http(r, True)
        if case.websocket and r[0] == 101:
            self.websocket(case)

    def pipelined(self, case, host, port):
        """Two requests in one write: the first for the tunnel's host, the second naming
        case.then_host; the first must be answered, the second refused."""
        first = self.http_request(case, False, host, port)
        case2 = Case(case, {"host_header": case.then_host}, case.session, case.token,
                     case.source)
        case2.then_host = None
        self.s.send(first + self.http_request(case2, False, host, port))
        r = read_http(self.s)
        if r is None or r[0] != 200 or "x-egressd-reason" in r[1]:
            self.obs.note = "the first request: %r" % (r[:2] if r else None,)
            self.obs.closed = r is None
            return
        r = read_http(self.s)
        if r is None:
            self.obs.closed = True
            return
        self.take_http(r, True)




SSH_CLIENT = b"SSH-2.0-conformance-client\r\n"


class SshInner:
    inner = "ssh"

    def first_bytes(self, case):
        return SSH_CLIENT  # as OpenSSH does, the client's line goes without waiting

    def exchange(self, case, second=False):
        if not second:
            line = self.s.read_until(b"\r\n", 3)
            if line is None:
                self.obs.closed = True
                self.obs.received = self.s.received
                return
            if not line.startswith(b"SSH-"):
                self.obs.note = "banner %r" % line[:40]
                return
        if case.big_in:
            self.s.send(b"BIG %d\n" % case.big_in)
            self.obs.closed = self.s.drain(3)
            self.obs.received = self.s.received
            return
        self.s.send((b"" if self.pre else SSH_CLIENT) + (case.body or b""))
        # Nothing comes back from the origin: the client's line reaching it is the success,
        # which the cell sees in the origin's count.
        self.obs.closed = self.s.closed_within(0.1)
        self.obs.ok = not self.obs.closed
        self.obs.received = self.s.received


class RawInner:
    inner = "raw"

    def first_bytes(self, case):
        return b"\0raw conformance " + (case.body or b"")

    def exchange(self, case, second=False):
        if case.big_in:
            self.s.send(b"\0big %d\n" % case.big_in)
            self.obs.closed = self.s.drain(3)
            self.obs.received = self.s.received
            return
        msg = self.first_bytes(case)
        if not self.pre:
            self.s.send(msg)
        got = self.s.read_exact(len(msg), 3)
        self.obs.received = self.s.received
        if got is None:
            self.obs.closed = True
            return
        self.obs.ok = got == msg


class ConnectTls(TlsInner, ConnectFront):
    name = "connect-tls"


class ConnectHttp(HttpInner, ConnectFront):
    name = "connect-http"


class Socks5Tls(TlsInner, SocksFront):
    name = "socks5-tls"


class Socks5Http(HttpInner, SocksFront):
    name = "socks5-http"


class ConnectSsh(SshInner, ConnectFront):
    name = "connect-ssh"


class Socks5Ssh(SshInner, SocksFront):
    name = "socks5-ssh"


class ConnectRaw(RawInner, ConnectFront):
    name = "connect-raw"


class Socks5Raw(RawInner, SocksFront):
    name = "socks5-raw"


class TransparentFront(Door):
    """A client that asked for no proxy (docs/design.md 1, 3): it connects to its destination's
    address, ORIG_DST for a name or the address itself for an IP literal, and the namespace's
    nft rule redirects the connection (marked REDIRECT_MARK) to listen.transparent.  There is no
    request, no credentials and no success answer: the connection is the tunnel, its first
    bytes name the host (the TLS server name, the HTTP Host), and the cell's session is the one
    whose clients list names the cell's address."""
    front = "transparent"
    listener = "transparent"

    def orig_addr(self, case):
        try:
            return socket.inet_ntoa(socket.inet_aton(case.host))  # every inet_aton spelling
        except OSError:
            return ORIG_DST

    def stream(self, case):
        _, port = self.dest(case)
        return Stream(port, case.source, addr=self.orig_addr(case), mark=REDIRECT_MARK)

    def open(self, case):
        self.obs.established = True  # the client believes it reached its destination
        return True


class TransparentTls(TlsInner, TransparentFront):
    name = "transparent-tls"
    kind_known = True  # the ClientHello that names the host makes the tunnel TLS

    @classmethod
    def shows(cls, stage):
        return "close"  # TLS and opaque refusals are a close with a record (design 13)


class TransparentHttp(HttpInner, TransparentFront):
    name = "transparent-http"

    @classmethod
    def shows(cls, stage):
        return "inner"  # plain HTTP denials are HTTP answers, whenever they are decided


class TlsStream(Stream):
    """The clear side of the client's TLS (memory BIOs over a Stream), read and written as a
    Stream: what read_http and closed_within need."""

    def __init__(self, raw, tls, inc, out):
        self.raw, self.tls, self.inc, self.out = raw, tls, inc, out
        self.sock, self.local = raw.sock, raw.local
        self.buf, self.received, self.eof = b"", 0, False

    def send(self, data):
        try:
            self.tls.write(data)
        except ssl.SSLError:
            self.eof = True
            return
        self.raw.send(self.out.read())

    def fill(self, timeout=IO):
        if self.eof:
            return False
        while True:
            try:
                d = self.tls.read(65536)
            except ssl.SSLWantReadError:
                pending = self.out.read()
                if pending:
                    self.raw.send(pending)
                if not self.raw.buf and not self.raw.fill(timeout):
                    self.eof = True
                    return False
                self.inc.write(self.raw.buf)
                self.raw.buf = b""
                continue
            except (ssl.SSLZeroReturnError, ssl.SSLError):
                d = b""
            if not d:
                self.eof = True
                return False
            self.received += len(d)
            self.buf += d
            return True

    def close(self):
        self.raw.close()


class Inspected(TlsInner, WebsocketMixin, ConnectFront):
    """CONNECT, then TLS that egressd terminates with a leaf it mints (the cell's session
    inspects every host of the table: INSPECT_ALL), then plain HTTP requests inside, each decided
    as a forwarded request (docs/design.md 11).  The tunnel's records are the CONNECT door's;
    the requests' are front inspected."""
    name = "inspected"
    inner = "inspected"

    @classmethod
    def record_front(cls, rec, front):
        return "inspected" if rec.get("event") == "request" and front == cls.front else front

    def tls_request(self, case, host, port):
        if not isinstance(self.s, TlsStream):
            self.s = TlsStream(self.s, self.tls, self.inc, self.out)
        if case.then_host:
            HttpInner.pipelined(self, case, host, port)
            return
        self.s.send(self.http_request(case, False, host, port))
        r = read_http(self.s)
        self.obs.received = self.s.received
        if r is None:
            self.obs.closed = True
            return
        self.take_http(r, True)
        if case.websocket and r[0] == 101:
            self.websocket(case)


DOORS = [Forward, ConnectTls, ConnectHttp, Socks5Tls, Socks5Http, ConnectSsh, Socks5Ssh,
         ConnectRaw, Socks5Raw, TransparentTls, TransparentHttp, Inspected]
SHORT = {"forward": "fwd", "connect-tls": "c-tls", "connect-http": "c-http",
         "socks5-tls": "s-tls", "socks5-http": "s-http", "connect-ssh": "c-ssh",
         "socks5-ssh": "s-ssh", "connect-raw": "c-raw", "socks5-raw": "s-raw",
         "transparent-tls": "t-tls", "transparent-http": "t-http", "inspected": "insp"}


# ---------------------------------------------------------------------------------------------
# Rows.

class NA:
    """A cell that does not apply to a door, with the reason."""

    def __init__(self, why):
        self.why = why


class XFail:
    """A known failure: the cell runs, must fail, and is reported as XFAIL with the reason."""

    def __init__(self, why):
        self.why = why


def allow(*hosts):
    """A sandbox bound allowing exactly these hosts, on any port."""
    return {"allowDomains": ["%s:*" % x for x in hosts], "enforce": "sandbox"}


def deny(*hosts):
    return {"domains": ["%s:*" % x for x in hosts]}


def actions(*tags):
    return {"actions": list(tags)}


class Row:
    """One policy case.  Request: host, port (None: the door's origin; "self": the door's own
    listener; "closed", "blackhole"; or a number), method, path, body, headers, host_header
    (plain HTTP), sni / hrr_sni / tls_pad / ech (TLS), big_in (ask the origin for that many bytes),
    cred ("right", "wrong", "none"), delay (seconds of silence before the exchange).
    Outcome: deny=(reason, status, rule substring) or None for an allowed row; stage where the
    denial shows ("request": the door's answer; "first-bytes": the tunnel closes after its
    success answer; "inner": an HTTP answer inside the tunnel; default by reason); action (of
    the HTTP request; default by method and path); per: {door name, inner or front: dict of
    the values that differ there, NA(why) or XFail(why)} (the most specific key wins); why:
    the row's reason for being."""

    def __init__(self, name, bound=None, limits=None, host="origin.test", port=None,
                 method="GET", path="/x", body=None, headers=(), host_header=None, sni=None,
                 hrr_sni=None, tls_pad=0, big_in=0, cred="right", delay=0.0, origin=None,
                 deny=None, stage=None, action="default", per=None, group="main", hold=False,
                 before=(), parallel=False, cut=None, fan=0, after=None, min_age=0.0,
                 source=None, pipeline=False, then_host=None, websocket=False, ech=None,
                 why=""):
        self.name = name
        self.bound = bound
        self.limits = limits
        self.host, self.port = host, port
        self.method, self.path, self.body, self.headers = method, path, body, list(headers)
        self.host_header = host_header
        self.sni, self.hrr_sni, self.tls_pad, self.big_in = sni, hrr_sni, tls_pad, big_in
        self.cred, self.delay, self.origin = cred, delay, origin
        self.deny = deny
        self.stage = stage
        self.action = action
        self.per = per or {}
        self.group = group
        self.hold, self.before = hold, list(before)
        self.parallel = parallel
        self.cut = cut            # ("out" or "in", bytes): a byte-limit row
        self.fan = fan            # the cell opens this many connections at once
        self.after = after        # a step between two exchanges ("reload", "expire")
        self.source = source      # the client's source address
        self.pipeline = pipeline  # first bytes go with the tunnel's request, unanswered
        self.then_host = then_host  # a second request in the same write, for this Host
        self.websocket = websocket  # the request asks for a websocket; bytes follow its 101
        self.ech = ech            # "both" or "second": which ClientHellos carry ECH
        self.min_age = min_age    # seconds egressd must have run before the row
        self.why = why

    def spec(self, door):
        """The expectation for door: a dict, or NA / XFail wrapping one."""
        base = {"verdict": "deny" if self.deny else "allow", "stage": self.stage,
                "action": self.action, "xfail": None}
        if self.deny:
            base["reason"], base["status"], base["rule"] = self.deny
        if self.cut:
            base["verdict"] = "cut"
        keys = (door.name,) if door.inner == "forward" else (
            "tunnel", door.front, door.inner, door.name)
        for key in keys:
            o = self.per.get(key)
            if o is None:
                continue
            if isinstance(o, NA):
                return o
            if isinstance(o, XFail):
                base["xfail"] = o.why
                continue
            base = dict(base, **o)
            if "reason" in o and o.get("verdict") is None and base["verdict"] != "cut":
                base["verdict"] = "deny"
        if base["verdict"] == "deny" and base["stage"] is None:
            base["stage"] = STAGE.get(base["reason"], "request")
        if door.inner == "forward" and base.get("stage") == "first-bytes":
            raise TestFailure("row %r: forward has no first bytes; say n/a or its own value"
                              % self.name)
        if door.inner == "tls" and base.get("stage") == "inner":
            raise TestFailure("row %r: nothing inside TLS is seen; say n/a or its own value"
                              % self.name)
        return base


# Where a denial shows by default.
STAGE = {"sni-mismatch": "first-bytes", "tls-invalid": "first-bytes", "ech-refused": "first-bytes",
         "inspection-required": "first-bytes", "misdirected": "inner"}

# SOCKS5 reply codes (docs/design.md 6): the code that fits; 0x02 for policy.
def socks_code(reason, status):
    if reason == "dns-failed" or reason == "upstream-timeout":
        return 4
    if reason == "upstream-refused":
        return 5
    if status in (403, 407, 429, 508):
        return 2
    return 1


def http_action(method, path):
    """The leaf tags of a plain HTTP request (docs/design.md 4.5), as the record lists them."""
    p, _, q = path.partition("?")
    if method == "GET" and p.endswith("/info/refs") and q == "service=git-upload-pack":
        return "git:fetch"
    if method == "GET" and p.endswith("/info/refs") and q == "service=git-receive-pack":
        return "git:push"
    if method == "POST" and p.endswith("/git-upload-pack"):
        return "git:fetch"
    if method == "POST" and p.endswith("/git-receive-pack"):
        return "git:push"
    tags = {"http:read" if method in ("GET", "HEAD", "OPTIONS") else "http:write"}
    segs = [s for s in p.lower().split("/") if s not in ("", ".")]
    dumb = any(a == "info" and b == "refs" for a, b in zip(segs, segs[1:])) or \
        any(s in ("objects", "refs") for s in p.lower().split("/")[:-1]) or \
        (p.split("/")[-1:] == ["HEAD"])
    if dumb:  # git's dumb transport: a read may fetch, a write (WebDAV) may push
        tags.add("git:fetch" if tags == {"http:read"} else "git:push")
    if "git-upload-pack" in path.lower():
        tags.add("git:fetch")
    if "git-receive-pack" in path.lower():
        tags.add("git:push")
    return ",".join(sorted(tags))


OPAQUE = {"tls": "opaque HTTPS carries http:read, http:write, git:fetch and git:push alike, "
                 "and egressd cannot tell them apart inside TLS it does not terminate "
                 "(design 4.5)",
          "ssh": "an opaque SSH tunnel carries ssh:read and ssh:write, and git over ssh "
                 "git:fetch and git:push, which egressd cannot tell from a shell (design 4.5)",
          "raw": "an opaque tunnel carries every action (design 4.5)"}
INSPECT = {"reason": "inspection-required", "stage": "first-bytes"}


def per_kind(http=None, tls=None, ssh=None, raw=None):
    """per= entries for the tunnel kinds: each None (the row's own outcome), "allow",
    "action-denied" or "inspection-required" (at the first bytes, with the kind's carried
    actions), or a dict."""
    out = {}
    for kind, v in (("http", http), ("tls", tls), ("ssh", ssh), ("raw", raw)):
        if v is None:
            continue
        if v == "allow":
            out[kind] = {"verdict": "allow"}
        elif isinstance(v, str):
            out[kind] = {"reason": v, "status": 403, "stage": "first-bytes",
                         "action": KIND_ACTIONS[kind], "rule": "actions",
                         "why": OPAQUE.get(kind, "")}
        else:
            out[kind] = v
    return out


ORIGIN_ALL = allow("origin.test")
# The transparent and inspected doors' own values.
NA_T_CRED = NA("a transparent connection carries no credentials: its session is the one whose "
               "clients list names its address (the no-session rows are its counterpart)")
NA_T_NAME = NA("a transparent connection not to a mapped address is named by its SNI or Host: "
               "there is no second name to compare (test_transparent checks a mapped name "
               "against the SNI)")
NA_T_PIPE = NA("a transparent connection has no request of its own for first bytes to ride "
               "with")
T_AT_ACCEPT = {"shown": "close",
               "why": "the bound names the original address, so the connection is decided at "
                      "accept, before any byte (a server may speak first): egressd cannot know "
                      "the client speaks HTTP, and its refusal is a close (design 13)"}
T_NO_NAME = {"reason": "opaque-tunnel", "status": 403, "rule": "no name for", "shown": "close",
             "action": None, "stage": "first-bytes",
             "why": "a redirected connection that names nothing within headerTimeout is decided on "
                    "its original address, which no entry names: opaque-tunnel (design 13)"}
INSP_INNER = {"stage": "inner",
              "why": "inspection reads the request inside TLS: the tunnel is established and the "
                     "request refused with an HTTP answer inside it (design 11)"}
NA_INSP_HRR = NA("egressd terminates the client's TLS: the origin's HelloRetryRequest never "
                 "reaches the client")
NA_INSP_ECH = NA("egressd terminates the client's TLS: its own server reads no ECH, and the "
                 "inner name, if any, is never the one egressd answers for")
NA_TLS = NA("the row is about a plain HTTP request; the TLS doors' counterpart is its own row")


def action_rows():
    """action-denied by each tag, with what each tunnel kind carries (design 4.5)."""
    rows = []
    A = "action-denied"
    I = "inspection-required"
    GITF = "/o/r.git/info/refs?service=git-upload-pack"
    specs = [
        # tags, method, path, forward/http verdict, tls, ssh, raw
        (["all"], "GET", "/x", A, None, None, None),
        (["read", "write"], "GET", "/x", A, None, None, None),
        (["read"], "GET", "/x", A, I, I, I),
        (["write"], "POST", "/x", A, I, I, I),
        (["http:read"], "GET", "/x", A, I, "allow", I),
        (["http:write"], "POST", "/x", A, I, "allow", I),
        (["git:fetch"], "GET", GITF, A, I, I, I),
        (["git:push"], "POST", "/o/r.git/git-receive-pack", A, I, I, I),
        (["git:push"], "GET", "/o/r.git/info/refs?service=git-receive-pack", A, I, I, I),
        # git http-push over WebDAV (black-box finding: it was http:write alone)
        (["git:push"], "LOCK", "/r.git/info/refs", A, I, I, I),
        (["git:push"], "PUT", "/r.git/objects/ab/cdef", A, I, I, I),
        (["git:fetch"], "GET", "/r.git/info/refs", A, I, I, I),
        (["ssh:read"], "GET", "/x", "allow", "allow", I, I),
        (["ssh:write"], "GET", "/x", "allow", "allow", I, I),
        (["ssh:read", "ssh:write"], "GET", "/x", "allow", "allow", A, I),
        (["net:raw"], "GET", "/x", "allow", "allow", "allow", I),
        (["dns"], "GET", "/x", "allow", "allow", "allow", I),
        (["http:read", "http:write"], "GET", "/x", A, I, "allow", I),
        # every http and git leaf: ssh could carry git, so every kind is refused at once
        (["http:read", "http:write", "git:fetch", "git:push"], "POST", "/x", A, None, None,
         None),
    ]
    for tags, method, path, fwd, tls, ssh, raw in specs:
        name = "actions: [%s], %s %s" % (", ".join(tags), method, path)
        at_once = fwd == A and tls is None  # every kind is denied: answered at the request
        if at_once:
            rows.append(Row("action-denied at the request: " + name, bound=actions(*tags),
                            method=method, path=path,
                            deny=(A, 403, "actions"),
                            per={"tunnel": {"action": None}},
                            why="a bound that denies every action denies every tunnel at once, "
                                "whatever its first bytes (issue 9: actions: [all] got 200)"))
            continue
        per = per_kind(tls=tls, ssh=ssh, raw=raw)
        per["inspected"] = INSP_INNER
        if fwd == "allow":
            per["forward"] = {"verdict": "allow"}
            per["http"] = {"verdict": "allow"}
            deny_ = None
        else:
            deny_ = (A, 403, "actions")
            if tags == ["http:read", "http:write", "git:fetch", "git:push"]:
                # every request a plain HTTP tunnel can carry is denied: the tunnel itself is,
                # at its first bytes
                per["http"] = {"stage": "first-bytes", "action": TLS_ACTIONS}
                per["inspected"] = {"stage": "first-bytes", "why": "the bound denies every "
                                    "request an inspected tunnel can carry: the tunnel itself "
                                    "is denied at its ClientHello, as plain HTTP's is"}
            else:
                per["http"] = {"stage": "inner"}
        label = ("allowed: " if deny_ is None and all(
            v == "allow" for v in (tls, ssh, raw)) else "") + name
        rows.append(Row(label, bound=actions(*tags), method=method, path=path,
                        body=b"data" if method == "POST" else None, deny=deny_, per=per,
                        why="what each door carries decides (design 4.5)"))
    # neighbours: the same bound lets the other actions through
    rows.append(Row("allowed: actions: [git:push], POST .../git-upload-pack is git:fetch",
                    bound=actions("git:push"), method="POST", path="/o/r.git/git-upload-pack",
                    body=b"0000", per=per_kind(tls=I, ssh=I, raw=I),
                    why="a fetch is not a push: the http doors pass it (git over ssh cannot "
                        "be told from a push)"))
    rows.append(Row("actions: [http:write], POST /api?q=git-upload-pack is http:write",
                    bound=actions("http:write"), method="POST", path="/api?q=git-upload-pack",
                    body=b"data", deny=(A, 403, "actions: http:write"),
                    per=dict(per_kind(tls=I, ssh="allow", raw=I), http={"stage": "inner"},
                             inspected=INSP_INNER),
                    why="issue 9: git-upload-pack anywhere in a path or query made any request "
                        "git:fetch"))
    return rows


def address_rows():
    classes = [
        ("loopback 127.0.0.2", "lo2.test", "127.0.0.2"),
        ("loopback ::1", "v6lo.test", "::1"),
        ("this network 0.0.0.0", "zero.test", "0.0.0.0"),
        ("RFC 1918 10/8", "ten.test", "10.0.0.1"),
        ("RFC 1918 172.16/12", "rfc172.test", "172.16.0.1"),
        ("RFC 1918 192.168/16", "rfc192.test", "192.168.1.1"),
        ("CGNAT 100.64/10", "cgnat.test", "100.64.0.1"),
        ("link-local 169.254/16", "linklocal.test", "169.254.1.1"),
        ("metadata 169.254.169.254", "meta.test", "169.254.169.254"),
        ("metadata 100.100.100.200", "alimeta.test", "100.100.100.200"),
        ("metadata fd00:ec2::254", "ec2v6.test", "fd00:ec2::254"),
        ("ULA fc00::/7", "ula.test", "fc00::1"),
        ("IPv6 link-local fe80::/10", "v6ll.test", "fe80::1"),
        ("multicast 224/4", "mcast.test", "224.0.0.1"),
        ("IPv6 multicast ff00::/8", "v6mcast.test", "ff02::1"),
        ("broadcast", "bcast.test", "255.255.255.255"),
        ("IPv4-mapped ::ffff:10.0.0.1", "mapped.test", "10.0.0.1"),
        ("NAT64 64:ff9b::a9fe:a9fe", "nat64.test", "169.254.169.254"),
        ("6to4 2002:a00:1::1", "sixtofour.test", "10.0.0.1"),
        ("Teredo", "teredo.test", "10.0.0.1"),
    ]
    rows = []
    for what, name, addr in classes:
        rows.append(Row("address-denied: %s (%s)" % (name, what), bound=allow(name), host=name,
                        deny=("address-denied", 403, addr),
                        why="every resolved address is judged, IPv4 decoded out of IPv6"))
    rows.append(Row("address-denied: a name with a private and a loopback answer dials only "
                    "the one that passes", bound=allow("mixed.test"), host="mixed.test",
                    why="the denied address is skipped, the allowed one used"))
    rows.append(Row("allowed: the neighbour 127.0.0.1 is carved out by dns.allowAddresses",
                    bound=allow("origin.test"),
                    why="the exception for 127.0.0.1/32 is no exception for 127.0.0.2"))
    return rows


def literal_rows():
    rows = []
    for spelling in ("127.0.0.1", "2130706433", "0x7f.1", "0177.0.0.1", "127.0.0.1."):
        rows.append(Row("ip-literal: %s with no allow entry" % spelling, bound=None,
                        host=spelling, deny=("ip-literal", 403, None),
                        per={"transparent-tls": dict(T_NO_NAME, sni="",
                                                     why="a ClientHello without a server name "
                                                         "names nothing: the connection is "
                                                         "decided on its original address, which "
                                                         "no entry names (design 13)")},
                        why="an IP literal passes only where an allow entry names it; every "
                            "inet_aton spelling is that address"))
    rows.append(Row("allowed: 2130706433 reaches an entry for 127.0.0.1",
                    bound={"allowDomains": ["127.0.0.1:*"], "enforce": "sandbox"},
                    host="2130706433", sni="",
                    why="the canonical spelling matches the entry"))
    for spelling, entry, addr in (("0x7f.0.0.2", "127.0.0.2", "127.0.0.2"),
                                  ("0xa9fea9fe", "169.254.169.254", "169.254.169.254"),
                                  ("2852039166", "169.254.169.254", "169.254.169.254"),
                                  ("::ffff:169.254.169.254", "[::ffff:169.254.169.254]",
                                   "169.254.169.254"),
                                  ("::ffff:7f00:2", "[::ffff:7f00:2]", "127.0.0.2")):
        rows.append(Row("address-denied: literal %s allowed by the bound" % spelling,
                        bound={"allowDomains": ["%s:*" % entry], "enforce": "sandbox"},
                        per={"transparent-tls": NA("an IPv6 literal needs an IPv6 client; the "
                                                   "table's transparent listener is IPv4 "
                                                   "(test_transparent's IPv6 case covers "
                                                   "IP6T_SO_ORIGINAL_DST)")}
                        if ":" in spelling else {"transparent-http": T_AT_ACCEPT},
                        host=spelling, deny=("address-denied", 403, addr),
                        why="loopback and metadata spellings stay denied even when an allow "
                            "entry names them"))
    return rows


def host_rows():
    return [
        Row("host-not-allowed", bound=ORIGIN_ALL, host="other.test",
            deny=("host-not-allowed", 403, "allowDomains (no entry matches)"),
            why="only the allowed hosts"),
        Row("allowed: origin.test passes the same bound", bound=ORIGIN_ALL,
            why="a proxy that denies everything fails the table"),
        Row("host-denied", bound=deny("evil.test"), host="evil.test",
            deny=("host-denied", 403, "domains: evil.test"), why="the deny list"),
        Row("host-denied: a subdomain of the entry", bound=deny("evil.test"), host="a.evil.test",
            deny=("host-denied", 403, "domains: evil.test"), why="a deny entry covers subdomains"),
        Row("host-denied wins over allowDomains",
            bound={"allowDomains": ["evil.test:*", "origin.test:*"], "domains": ["evil.test:*"],
                   "enforce": "sandbox"},
            host="evil.test", deny=("host-denied", 403, "domains: evil.test"),
            why="deny wins over allow"),
        Row("allowed: origin.test beside a deny entry", bound=deny("evil.test"),
            why="the neighbour of the deny rows"),
        Row("host-denied: EVIL.Test. (case and a trailing dot)", bound=deny("evil.test"),
            host="EVIL.Test.", sni="evil.test",
            deny=("host-denied", 403, "domains: evil.test"),
            why="a deny list cannot be dodged by case or a trailing dot"),
        Row("allowed: Origin.TEST. is origin.test", bound=ORIGIN_ALL, host="Origin.TEST.",
            sni="origin.test", why="canonical names: case and one trailing dot"),
        Row("host-denied: an entry written in xn-- matches the xn-- name",
            bound=deny("xn--bcher-kva.test"), host="xn--bcher-kva.test",
            deny=("host-denied", 403, "xn--bcher-kva.test"), why="IDNA names are xn-- ASCII"),
        Row("allowed: xn--bcher-kva.test through its allow entry",
            bound=allow("xn--bcher-kva.test"), host="xn--bcher-kva.test",
            why="the neighbour of the IDNA deny row"),
        Row("bad-request: a raw UTF-8 name", bound=None, host="b\u00fccher.test",
            deny=("bad-request", 400, None),
            per={"forward": {"action": None},
                 "connect": {"front": "http", "event": "request", "action": None,
                             "why": "a head egressd cannot read never became a CONNECT: the "
                                    "HTTP listener's door records it"},
                 "socks5": {"code": 1, "action": None, "rule": "SOCKS5 destination"},
                 "tls": {"sni": "xn--bcher-kva.test"},
                 "transparent-tls": NA("a transparent TLS connection is named by its "
                                       "ClientHello, whose server name a client writes as xn-- "
                                       "ASCII: no raw UTF-8 to refuse"),
                 "transparent-http": {"action": None}},
            why="raw non-ASCII is a bad-request, never guessed (design 3 step 3)"),
        Row("port-not-allowed: an entry without a port means 80 and 443",
            bound={"allowDomains": ["origin.test"], "enforce": "sandbox"},
            deny=("port-not-allowed", 403, None), why="ports"),
        Row("allowed: the entry names the port", bound=lambda cell: {
            "allowDomains": ["origin.test:%d" % cell.origin_port], "enforce": "sandbox"},
            why="the neighbour of port-not-allowed"),
    ]


def session_rows():
    return [
        Row("auth-required: no credentials and no default session", cred="none",
            deny=("auth-required", 407, "sessions.*.auth"),
            per={"transparent": {"reason": "no-session", "status": 403,
                                 "rule": "sessions (no session named default)",
                                 "no_clients": True,
                                 "why": "a transparent client never talked to a proxy and cannot "
                                        "send credentials: no session names its address, and a "
                                        "407 would ask it for what it cannot give"}},
            why="a session with a token is chosen by its credentials only"),
        Row("auth-required: the wrong token", cred="wrong",
            deny=("auth-required", 407, "sessions.*.auth"),
            per={"transparent": NA_T_CRED,
                 "socks5": {"answer": ("socks-auth", 1), "event": "connect",
                            "agree": "RFC 1929: credentials come before the destination, so "
                                     "the record names no host"}},
            why="RFC 1929: a failed username/password answer, then the close"),
        Row("allowed: the right token picks the session", cred="right",
            why="the neighbour of the auth rows"),
        Row("no-session: no default, no token, no client match", group="nosession",
            cred="none", deny=("no-session", 403, None),
            why="a connection that belongs to no session is denied"),
        Row("allowed: a session by client address", group="nosession", cred="none",
            source="127.0.0.2",
            why="the neighbour of no-session: the clients list picks the session"),
        Row("limit-connections: a second concurrent connection",
            limits={"maxConnections": 1}, hold=True,
            deny=("limit-connections", 429, "limits.maxConnections (1)"),
            why="maxConnections counts open connections of every door"),
        Row("limit-new-hosts: a second new host within a minute",
            bound=allow("origin.test", "other.test"), limits={"maxNewHostsPerMinute": 1},
            before=["origin.test"], host="other.test",
            deny=("limit-new-hosts", 429, "limits.maxNewHostsPerMinute (1)"),
            why="a session that reaches new hosts too fast waits"),
        Row("allowed: the same host again within the minute",
            bound=allow("origin.test", "other.test"), limits={"maxNewHostsPerMinute": 1},
            before=["origin.test"], why="a host already reached is not new"),
        Row("limit-bytes: a spent session is refused", limits={"maxBytesIn": 2048},
            before=["origin.test big"], deny=("limit-bytes", 429, "limits.maxBytesIn"),
            why="later requests get 429 limit-bytes, without Retry-After"),
        Row("session-expired: after limits.expiresIn", limits={"expiresIn": "1s"},
            min_age=1.3, deny=("session-expired", 403, "limits.expiresIn"),
            why="an expired session moves nothing"),
    ]


def upstream_rows():
    return [
        Row("dns-failed: a name with no answer", bound=allow("nx.invalid"), host="nx.invalid",
            deny=("dns-failed", 502, "nx.invalid"), why="the resolver failed"),
        Row("upstream-refused: nothing listens", bound=allow("refused.test"),
            host="refused.test", port="closed", deny=("upstream-refused", 502, "connect"),
            why="the dial was refused"),
        Row("upstream-timeout: SYNs unanswered", bound=allow("slow.test"), host="slow.test",
            port="blackhole", parallel=True,
            deny=("upstream-timeout", 504, "limits.connectTimeout"),
            why="the dial timed out after limits.connectTimeout"),
        Row("loop: the destination is egressd itself", bound=allow("self.test"),
            host="self.test", port="self", deny=("loop", 508, "listen."),
            why="a request to egressd's own listener would loop"),
        Row("loop: an IP literal that is egressd's own address", bound=allow("127.0.0.1"),
            host="127.0.0.1", port="self", deny=("loop", 508, "listen."),
            per={"transparent-http": T_AT_ACCEPT},
            why="a loop whatever the bound says"),
    ]


def tunnel_rows():
    NA_FWD = NA("a forwarded request has no tunnel: nothing to check in its first bytes")
    NA_HTTP = NA("no TLS in this door; its counterpart is the misdirected row")
    NA_OPAQUE = NA("an opaque tunnel carries no name to compare")
    return [
        Row("sni-mismatch: a ClientHello for another host", sni="evil.test",
            deny=("sni-mismatch", 403, "TLS SNI evil.test is not the tunnel's host origin.test"),
            per={"forward": NA_FWD, "http": NA_HTTP, "ssh": NA_OPAQUE, "raw": NA_OPAQUE,
                 "transparent": NA_T_NAME, "tls": {"action": TLS_ACTIONS}},
            why="the TLS inside a tunnel must name the tunnel's host"),
        Row("sni-mismatch: the ClientHello after a HelloRetryRequest names another host",
            origin="hrr", hrr_sni="evil.test",
            deny=("sni-mismatch", 403, "TLS SNI evil.test is not the tunnel's host origin.test"),
            per={"forward": NA_FWD, "http": NA_HTTP, "ssh": NA_OPAQUE, "raw": NA_OPAQUE,
                 "tls": {"action": TLS_ACTIONS, "origin_bytes": "first-hello"},
                 "inspected": NA_INSP_HRR},
            why="issue 9: after a HelloRetryRequest the second ClientHello went unchecked"),
        Row("allowed: the ClientHello after a HelloRetryRequest names the same host",
            origin="hrr", hrr_sni="origin.test",
            per={"forward": NA_FWD, "http": NA_HTTP, "ssh": NA_OPAQUE, "raw": NA_OPAQUE,
                 "inspected": NA_INSP_HRR},
            why="the neighbour of the HelloRetryRequest row"),
        Row("ech-refused: a ClientHello with encrypted_client_hello under tls.refuseECH",
            origin="hrr", hrr_sni="origin.test", ech="both",
            deny=("ech-refused", 403,
                  "tls.refuseECH: a ClientHello for origin.test with encrypted_client_hello"),
            per={"forward": NA_FWD, "http": NA_HTTP, "ssh": NA_OPAQUE, "raw": NA_OPAQUE,
                 "tls": {"action": TLS_ACTIONS}, "inspected": NA_INSP_ECH},
            why="design 13: the name inside ECH cannot be read; the switch refuses such "
                "tunnels rather than judge them on the outer name"),
        Row("ech-refused: ECH only in the ClientHello after a HelloRetryRequest",
            origin="hrr", hrr_sni="origin.test", ech="second",
            deny=("ech-refused", 403, "tls.refuseECH"),
            per={"forward": NA_FWD, "http": NA_HTTP, "ssh": NA_OPAQUE, "raw": NA_OPAQUE,
                 "tls": {"action": TLS_ACTIONS, "origin_bytes": "first-hello"},
                 "inspected": NA_INSP_ECH},
            why="every ClientHello is judged, the second one too"),
        Row("allowed: ECH when tls.refuseECH is not set", group="noech",
            origin="hrr", hrr_sni="origin.test", ech="both",
            per={"forward": NA_FWD, "http": NA_HTTP, "ssh": NA_OPAQUE, "raw": NA_OPAQUE,
                 "inspected": NA_INSP_ECH},
            why="the neighbour: by default ECH passes on its outer name (browsers send GREASE "
                "ECH that looks the same)"),
        Row("sni-mismatch: a silent client past headerTimeout, then another name",
            sni="evil.test", host_header="evil.test", delay=1.4, parallel=True,
            deny=("sni-mismatch", 403, "evil.test"),
            per={"forward": NA_FWD, "ssh": NA_OPAQUE, "raw": NA_OPAQUE,
                 "tls": {"action": TLS_ACTIONS},
                 "http": {"reason": "misdirected", "status": 421, "stage": "inner",
                          "rule": "Host must be origin.test",
                          "why": "plain HTTP names its host in Host"},
                 "transparent-tls": T_NO_NAME, "transparent-http": T_NO_NAME},
            why="issue 9: silence past headerTimeout passed the tunnel unchecked; silence is "
                "never a pass"),
        Row("misdirected: a request inside the tunnel for another Host", host_header="evil.test",
            deny=("misdirected", 421, "Host must be origin.test"),
            per={"forward": NA("a forwarded request's Host is its destination (the bypass "
                               "suite checks Host against the URI)"),
                 "tls": NA("Host is inside TLS; the counterpart is the sni-mismatch row"),
                 "ssh": NA_OPAQUE, "raw": NA_OPAQUE, "transparent": NA_T_NAME},
            why="issue 9: CONNECT allowed.test:80 carried requests for any Host"),
        Row("allowed: a request inside the tunnel for the tunnel's host",
            per={"forward": NA_FWD, "tls": NA("the neighbour of sni-mismatch is the "
                                              "allowed-origin rows"),
                 "ssh": NA_OPAQUE, "raw": NA_OPAQUE},
            why="the neighbour of misdirected"),
    ]


def port443_rows():
    NA_FWD = NA("a forwarded request is plain HTTP by definition; the rule is about tunnels")
    return [
        Row("inspection-required at once on port 443", group="p443", port=443,
            bound=actions("git:push"), deny=("inspection-required", 403, "actions: git:push"),
            per={"forward": NA("a forwarded request is decided by its own action"),
                 "http": NA("plain HTTP to port 443 is the tls-invalid row"),
                 "ssh": NA("port 443 carries only TLS"), "raw": NA("port 443 carries only TLS"),
                 "tls": {"stage": "request", "action": None},
                 "inspected": {"verdict": "allow",
                               "why": "the host is inspected: GET /x is http:read, which the "
                                      "bound allows; inspection lifts the refusal (design 4.5)"}},
            why="design 4.5: on port 443 the outcome for TLS is certain, answered at once"),
        Row("allowed: TLS on port 443", group="p443", port=443,
            per={"forward": NA_FWD, "http": NA("plain HTTP to port 443 is the tls-invalid row"),
                 "ssh": NA("port 443 carries only TLS"), "raw": NA("port 443 carries only TLS")},
            why="the neighbour"),
        Row("tls-invalid: bytes that are not TLS to port 443", group="p443", port=443,
            deny=("tls-invalid", 403, "443"),
            per={"forward": NA_FWD, "tls": NA("TLS is what port 443 carries"),
                 "inspected": NA("the inspected door speaks TLS, which is what port 443 "
                                 "carries"),
                 "transparent": {"shown": "close",
                                 "why": "on port 443 bytes that are not TLS are refused before "
                                        "they are read as HTTP"},
                 "transparent-http": {
                     "agree": "no name before the first bytes: the record's host is the "
                              "original destination's address (as a literal's would be), its "
                              "session the client address's",
                     "record": {"host": "192.0.2.1", "session": "{cell}"},
                     "why": "a transparent connection names its host only in its first bytes"},
                 "ssh": {"reason": "tls-invalid", "rule": "server spoke first on port 443",
                         "host": "ssh443.test",
                         "why": "a server that speaks first on 443 is no TLS server"},
                 "tunnel": {"action": None}},
            why="design 3: on port 443, bytes that are not TLS are denied"),
    ]


def limit_rows():
    big_out = {"forward": {"headers": [("X-Big", "a" * 50000)]},
               "http": {"headers": [("X-Big", "a" * 50000)]},
               "tls": {"tls_pad": 15300}, "ssh": {"body": b"s" * 16000},
               "raw": {"body": b"r" * 16000}}
    big_out["inspected"] = big_out["http"]
    big_in = {"forward": {"path": "/big?n=40960"}, "http": {"path": "/big?n=40960"},
              "tls": {"path": "/big?n=40960"}, "ssh": {"big_in": 40960},
              "raw": {"big_in": 40960}}
    big_in["inspected"] = big_in["http"]
    small_out = {"forward": {"method": "POST", "body": b"p" * 1000},
                 "http": {"method": "POST", "body": b"p" * 1000},
                 "ssh": {"body": b"s" * 1000}, "raw": {"body": b"r" * 1000}}
    small_out["inspected"] = small_out["http"]
    return [
        Row("limit-bytes: maxBytesOut 4 KiB, one message of 16-50 KB",
            limits={"maxBytesOut": 4096}, cut=("out", 4096), per=big_out,
            why="issue 9: a 16 KB ClientHello (peeked) and a 50 KB request head went past a "
                "4 KiB limit; here a 50 KB head, a 16 KB ClientHello, 16 KB after an SSH "
                "banner, 16 KB of opaque bytes"),
        Row("limit-bytes: maxBytesIn 4 KiB, 40 KB from the origin",
            limits={"maxBytesIn": 4096}, cut=("in", 4096), per=big_in,
            why="issue 9: 40,960 bytes came in from servers that speak first under a 4 KiB "
                "limit"),
        Row("limit-bytes: 20 parallel connections share one maxBytesOut of 4 KiB",
            limits={"maxBytesOut": 4096}, cut=("out", 4096), fan=20, per=small_out,
            why="issue 9: 20 parallel tunnels each got their first read (81,920 bytes)"),
    ]


def staged_rows():
    return [
        Row("session-expired ends what is open (expiresIn 2s)", group="expire",
            limits={"expiresIn": "2s"}, after="expire",
            deny=("session-expired", 403, "limits.expiresIn"),
            why="issue 9: expiresIn did not end open tunnels"),
        Row("policy-changed: a reload takes the host away", group="reload", bound=ORIGIN_ALL,
            after="reload", deny=("host-not-allowed", 403, "reload"),
            why="issue 9: after a SIGHUP that removes a host, a kept-alive connection still "
                "reached it"),
        Row("limit-clients: maxClientsPerSource half-sent requests from one address",
            group="persource", after="persource",
            why="issue 9: one client address holding half-sent heads took every slot"),
        Row("audit-unavailable: a decision that cannot be written is denied", group="nolog",
            deny=("audit-unavailable", 503, None),
            per={"socks5": {"code": 1}},
            why="issue 9: with audit.path on a full device traffic flowed anyway"),
        Row("audit-unavailable: a denial still goes out when the log cannot take it",
            group="nolog", bound=deny("evil.test"), host="evil.test",
            deny=("host-denied", 403, "domains: evil.test"),
            why="denying is always safe: the answer goes out without its record"),
    ]


def attack_rows():
    NA_FWD = NA("a forwarded request has no tunnel: nothing rides with it")
    NA_SSH = NA("SSH names no host to compare")
    NA_NOT_SSH = NA("the row is about an SSH client's identification line")
    NA_RAW = NA("an opaque tunnel carries no name to compare")
    NA_TLS = NA("inside TLS egressd sees no request: the TLS rows decide the host")
    NA_WS = NA("a websocket upgrade is a plain HTTP request; SSH and opaque tunnels carry none")
    INSP_WS = {"verdict": "allow", "action": "http:read",
               "why": "an inspected tunnel relays no upgrade: egressd drops the Upgrade header, "
                      "the origin answers a plain GET (http:read), and no byte moves unread "
                      "(design 11)"}
    return [
        Row("sni-mismatch: a ClientHello for another host sent with the tunnel's request",
            sni="evil.test", host_header="evil.test", pipeline=True,
            deny=("sni-mismatch", 403, "TLS SNI evil.test is not the tunnel's host origin.test"),
            per={"forward": NA_FWD, "ssh": NA_SSH, "raw": NA_RAW, "transparent": NA_T_PIPE,
                 "inspected": {"stage": "request", "action": TLS_ACTIONS},
                 "tls": {"stage": "request", "action": TLS_ACTIONS,
                         "why": "bytes that came with the request are checked before its "
                                "answer: the refusal is the door's own answer (design 13)"},
                 "http": {"reason": "misdirected", "status": 421, "stage": "inner",
                          "rule": "Host must be origin.test",
                          "why": "plain HTTP is decided request by request, after the tunnel's "
                                 "success answer"}},
            why="first bytes that ride with the request get the same check"),
        Row("allowed: the tunnel's first bytes sent with its request", pipeline=True,
            per={"forward": NA_FWD, "transparent": NA_T_PIPE},
            why="the neighbour: a client that does not wait for the answer still works"),
        Row("misdirected: an allowed request and one for another Host in one write",
            then_host="evil.test", deny=("misdirected", 421, "Host must be origin.test"),
            per={"forward": NA("a forwarded request names its own destination; the bypass "
                               "suite pipelines them"),
                 "tls": NA_TLS, "ssh": NA_RAW, "raw": NA_RAW,
                 "http": {"origin_bytes": "first-request", "marker": b"evil.test"},
                 "inspected": {"origin_bytes": "first-request", "marker": b"evil.test"}},
            why="a request waiting behind an allowed one is decided on its own"),
        Row("allowed: an SSH client's identification line first, actions: [http:write]",
            bound=actions("http:write"), pipeline=True,
            per={"forward": NA_NOT_SSH, "tls": NA_NOT_SSH, "http": NA_NOT_SSH,
                 "inspected": NA_NOT_SSH,
                 "raw": NA_NOT_SSH},
            why="OpenSSH sends its line without waiting for the server's: the server's "
                "answer still makes the tunnel SSH, which carries no http action (it was "
                "opaque, and refused as inspection-required)"),
        Row("action-denied: an SSH client's identification line first, actions: "
            "[ssh:read, ssh:write]", bound=actions("ssh:read", "ssh:write"), pipeline=True,
            deny=("action-denied", 403, "actions: ssh:read, ssh:write"),
            per={"forward": NA_NOT_SSH, "tls": NA_NOT_SSH, "http": NA_NOT_SSH,
                 "inspected": NA_NOT_SSH,
                 "raw": NA_NOT_SSH,
                 "ssh": {"stage": "first-bytes", "action": SSH_ACTIONS}},
            why="the same tunnel is SSH whichever side speaks first"),
        Row("inspection-required: an SSH line first to a server that stays silent, actions: "
            "[http:write]", bound=actions("http:write"), pipeline=True, origin="http",
            parallel=True, deny=("inspection-required", 403, "actions: http:write"),
            per={"forward": NA_NOT_SSH, "tls": NA_NOT_SSH, "http": NA_NOT_SSH,
                 "inspected": NA_NOT_SSH,
                 "raw": NA_NOT_SSH,
                 "ssh": {"stage": "first-bytes", "action": ALL_ACTIONS}},
            why="no SSH server answered within headerTimeout: the client's bytes are opaque"),
        Row("action-denied: a websocket upgrade under actions: [http:write]",
            bound=actions("http:write"), websocket=True,
            deny=("action-denied", 403, "actions: http:write"),
            action="http:read,http:write",
            per={"tls": NA_TLS, "ssh": NA_WS, "raw": NA_WS, "http": {"stage": "inner"},
                 "inspected": INSP_WS},
            why="after its 101 a websocket carries bytes both ways unread: it is a read and a "
                "write (design 13)"),
        Row("bad-request: a chunked body whose lines end in a bare LF", method="POST",
            headers=[("Transfer-Encoding", "chunked")], body=b"5\nhello\n0\n\n",
            deny=("bad-request", 400, "request body: invalid character in chunk size header"),
            action="http:write",
            per={"forward": {"origin_bytes": "no-body", "marker": b"hello", "dialed": True},
                 "http": {"stage": "inner", "origin_bytes": "no-body", "marker": b"hello"},
                 "inspected": {"stage": "inner", "origin_bytes": "no-body", "marker": b"hello"},
                 "tls": NA_TLS, "ssh": NA_WS, "raw": NA_WS},
            why="the head was allowed and forwarded; the broken body gets a 400 and a second "
                "record (black-box finding: no answer, only a close recorded as error)"),
        Row("allowed: a websocket upgrade under actions: [git:push]", bound=actions("git:push"),
            websocket=True, action="http:read,http:write",
            per={"tls": NA_TLS, "ssh": NA_WS, "raw": NA_WS, "inspected": INSP_WS},
            why="the neighbour: relayed both ways after the 101 (issue 9 item 7)"),
    ]


def all_rows():
    return (host_rows() + action_rows() + address_rows() + literal_rows() + session_rows() +
            upstream_rows() + tunnel_rows() + attack_rows() + limit_rows() + staged_rows() +
            port443_rows())


# ---------------------------------------------------------------------------------------------
# Running the table.

REQUEST_KEYS = {"host", "port", "method", "path", "body", "headers", "host_header", "sni",
                "hrr_sni", "tls_pad", "big_in", "cred", "delay", "origin", "source", "pipeline",
                "then_host", "websocket", "ech"}


class Case:
    """What one cell sends: the row's request with the door's own values, and the cell's
    session and token."""

    def __init__(self, row, spec, session, token, source):
        for k in REQUEST_KEYS:
            setattr(self, k, spec.get(k, getattr(row, k)))
        self.session, self.token = session, token
        if self.source is None:
            self.source = source


class Cell:
    def __init__(self, row, door, index):
        self.row, self.door = row, door
        self.session = "c%d" % index
        self.token = "tok-c%d" % index
        s = row.spec(door)
        self.na = s.why if isinstance(s, NA) else None
        self.spec = None if self.na else s
        # Each cell's connections come from an address of its own, so that a record's client
        # names its cell even when a later cell reuses a port.
        self.source = "127.%d.%d.%d" % (20 + index // 62500, index // 250 % 250, index % 250 + 1)
        self.case = None if self.na else Case(row, s, self.session, self.token, self.source)
        self.origin_port = None
        self.obs = None
        self.delta = (0, 0)     # origin (connections, bytes) during the cell
        self.errors = []
        self.ran = False
        self.result = "n/a" if self.na else None
        self.verdict = None     # the decisive record's verdict fields, for the agreement check
        self.action = None      # and its action


def origin_cert(tmp):
    """The TLS origins' certificate: every name of the table and 127.0.0.1, so that the inspected
    door's upstream TLS (verified against it as tls.upstreamCA) passes wherever the row lets it
    dial."""
    cert, key = os.path.join(tmp, "origin.pem"), os.path.join(tmp, "origin.key")
    san = ",".join(["DNS:" + n for n in sorted(GROUP_HOSTS)] + ["IP:127.0.0.1"])
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=origin.test",
                    "-addext", "subjectAltName=" + san, "-days", "1", "-keyout", key,
                    "-out", cert], check=True, capture_output=True, timeout=30)
    return cert, key


def inspection_ca(tmp):
    d = os.path.join(tmp, "ca")
    r = subprocess.run([EGRESSD_BIN, "ca", "init", d], capture_output=True, text=True,
                       timeout=30)
    ensure(r.returncode == 0, "egressd ca init: %s" % r.stderr)
    return {"cert": os.path.join(d, "ca.pem"), "key": os.path.join(d, "ca.key")}


def transparent_redirect(why_not):
    """The nft table that sends every marked TCP connection to listen.transparent (its port set
    per group by redirect_to), and a default route through lo so that ORIG_DST and the literal
    addresses can be dialled at all.  Returns why it cannot be made, or None."""
    if why_not:
        return "needs a private network namespace with nft (%s)" % why_not
    if shutil.which("nft") is None:
        return "no nft here (Debian package nftables, which tools/install-deps installs)"
    try:
        subprocess.run(["ip", "route", "replace", "default", "dev", "lo"], check=True,
                       capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as ex:
        return "no default route through lo: %s" % ex
    return None


def redirect_to(port):
    rules = """add table ip conformance
delete table ip conformance
table ip conformance {
  chain out {
    type nat hook output priority -100; policy accept;
    meta mark %d meta l4proto tcp redirect to :%d
  }
}
""" % (REDIRECT_MARK, port)
    subprocess.run(["nft", "-f", "-"], input=rules.encode(), check=True, capture_output=True,
                   timeout=10)


class Env:
    def __init__(self, h, p443, no_redirect):
        self.h = h
        cert, key = origin_cert(h.tmp)
        self.upstream_ca = cert
        self.ca = inspection_ca(h.tmp)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.tls_ctx = ctx
        self.no_redirect = no_redirect  # why the transparent doors cannot run, or None
        self.origins = {"http": h.add(HttpOrigin()), "tls": h.add(TlsOrigin(ctx)),
                        "ssh": h.add(SshOrigin()), "raw": h.add(RawOrigin()),
                        "hrr": h.add(HrrOrigin())}
        self.p443 = p443  # why port 443 cannot be bound, or None
        if p443 is None:
            self.origins["tls443"] = h.add(TlsOrigin(ctx, port=443))
            self.origins["ssh443"] = h.add(SshOrigin(addr="127.0.0.3", port=443))
        self.blackhole = h.add(Blackhole())
        self.special = {"closed": closed_port(), "blackhole": self.blackhole.port}
        self.ports = {}

    def origin_for(self, door, case):
        kind = case.origin or {"forward": "http", "inspected": "tls"}.get(door.inner, door.inner)
        if case.port == 443:
            return self.origins["ssh443" if door.inner == "ssh" else "tls443"]
        return self.origins[kind]

    def totals(self, clear=False):
        c = b = 0
        for o in self.origins.values():
            x, y = o.totals(clear)
            c, b = c + x, b + y
        return c, b


GROUP_HOSTS = dict(HOSTS, **{"ssh443.test": ["127.0.0.3"]})
# The inspected door's sessions inspect every host the table names.
INSPECT_ALL = ["%s:*" % n for n in sorted(GROUP_HOSTS)] + [
    "nx.invalid:*", "127.0.0.1:*", "127.0.0.2:*", "169.254.169.254:*"]


def group_config(gname, cells, env):
    sessions = {}
    for cell in cells:
        if cell.na:
            continue
        row = cell.row
        cell.origin_port = env.origin_for(cell.door, cell.case).port
        if cell.door.front == "transparent":
            s = {"clients": ["%s/32" % cell.case.source]}  # it carries no credentials
            if cell.spec.get("no_clients"):
                s = {"auth": {"token": cell.token}}  # a session it cannot be in
            if row.after == "persource":
                s["clients"].append("127.0.0.2/32")  # the client from another address
        else:
            s = {"auth": {"token": cell.token}}
        bound = row.bound(cell) if callable(row.bound) else row.bound
        if cell.door.inner == "inspected":
            bound = dict(bound or {}, inspect=INSPECT_ALL)
        if bound:
            s["bound"] = {"network": bound}
        if row.limits:
            s["limits"] = dict(row.limits)
        sessions[cell.session] = s
    cfg = {
        "listen": {"proxy": ["127.0.0.1:0"], "socks5": ["127.0.0.1:0"],
                   "transparent": ["127.0.0.1:0"]},
        "tls": {"ca": env.ca, "upstreamCA": env.upstream_ca},
        "dns": {"servers": ["127.0.0.1:%d" % closed_port()],
                "hosts": {h: list(a) for h, a in GROUP_HOSTS.items()},
                "allowAddresses": ["127.0.0.1/32", "127.0.0.3/32"], "timeout": "1s"},
        "limits": {"headerTimeout": "1s", "idleTimeout": "30s", "connectTimeout": "1s",
                   "shutdownGrace": "2s"},
        "sessions": sessions,
    }
    if gname == "main":
        cfg["tls"]["refuseECH"] = True  # the ech rows; group noech has the default
    if gname == "nosession":
        cfg["sessions"] = {"agent": {"clients": ["192.0.2.1/32"]},
                           "local": {"clients": ["127.0.0.2/32"]}}
    if gname == "persource":
        cfg["limits"]["maxClientsPerSource"] = PER_SOURCE
    if gname == "nolog":
        cfg["audit"] = {"path": "/dev/full"}
    return cfg


def reload_config(cfg):
    new = json.loads(json.dumps(cfg))
    for s in new["sessions"].values():
        if "bound" in s:
            s["bound"]["network"]["allowDomains"] = ["other.test:*"]
    return new


PER_SOURCE = 6


def snapshot(env, clear=False):
    return env.totals(clear)


def run_cell(env, cell, e):
    cell.snap = None
    cell.env = env
    """Runs one cell's exchange(s); fills cell.obs and cell.delta."""
    row, case = cell.row, cell.case
    doors = []
    try:
        for host in row.before:
            d = cell.door(env)
            doors.append(d)
            pre = Case(row, {}, cell.session, cell.token, cell.source)
            pre.host, _, big = host.partition(" ")
            pre.port, pre.origin = None, None
            if big:
                pre.path = "/big?n=8192"
                pre.big_in = 8192 if d.inner in ("ssh", "raw") else 0
            d.send(pre)
            if not big:
                ensure(d.obs.ok, "the exchange before the cell failed: %s" % d.obs.text())
            d.close()
        if row.hold:
            d = cell.door(env)
            doors.append(d)
            d.send(Case(row, {}, cell.session, cell.token, cell.source))
            ensure(d.obs.ok, "the connection held open failed: %s" % d.obs.text())
        before = snapshot(env)
        clear = snapshot(env, True)
        insp = cell.door.inner == "inspected"
        cell.snap = {k: len(o.clear_log if insp else o.log) for k, o in env.origins.items()}
        if row.fan:
            fan = [cell.door(env) for _ in range(row.fan)]
            doors += fan
            threads = [threading.Thread(target=safe_send, args=(d, case)) for d in fan]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
            main = fan[0]
        else:
            main = cell.door(env)
            doors.append(main)
            main.send(case)
        cell.obs = main.observe()
        cell.obs.clients = [x for d in doors for x in d.obs.clients]
        cell.doors = doors
        # bytes are expected where the cell is allowed or cut at a limit, and on an inspected
        # tunnel (egressd's own handshake with the origin comes before the request inside)
        after = settle(env, before, 1.0 if cell.spec["verdict"] in ("allow", "cut") else
                       0.2 if cell.door.inner == "inspected" else 0)
        cell.data = b"".join(o.data_since(cell.snap[k], insp) for k, o in env.origins.items())
        cell.delta = (after[0] - before[0], after[1] - before[1])
        if cell.door.inner == "inspected":
            # egressd's own TLS to the origin is not the client's bytes: count those inside
            cell.delta = (cell.delta[0], snapshot(env, True)[1] - clear[1])
    finally:
        if not row.after:
            for d in doors:
                d.close()


def settle(env, before, wait):
    """The origins' totals once what egressd sent has arrived: where bytes are expected (wait:
    how long to wait for the first), once something came and then nothing more for 30 ms (so
    that a cell's last bytes, counted late on a loaded machine, are not the next cell's), at
    most 2 s; else after a short grace (a leak would be written before the close the client saw;
    the row's end looks again)."""
    start = time.time()
    if not wait:
        time.sleep(0.003)
        return snapshot(env)
    now, quiet_since = snapshot(env), None
    while time.time() < start + 2.0:
        time.sleep(0.005)
        nxt = snapshot(env)
        if nxt != now:
            now, quiet_since = nxt, None
        elif now[1] > before[1] or time.time() > start + wait:
            quiet_since = quiet_since or time.time()
            if time.time() - quiet_since >= 0.03:
                break
    return now


def safe_send(d, case):
    try:
        d.send(case)
    except (OSError, TestFailure) as ex:
        d.obs.note = "error %s" % ex


# ---------------------------------------------------------------------------------------------
# Checking a cell.

RETRY_HELPS = ("limit-connections", "limit-new-hosts")


def expected_action(cell):
    s, door, case = cell.spec, cell.door, cell.case
    if door.kind_known and s.get("stage") == "first-bytes" and s.get("reason") in (
            "inspection-required", "action-denied"):
        return None
    if s.get("action") != "default":
        return s.get("action")
    if door.inner == "forward" or s.get("stage") == "inner" or (
            s["verdict"] == "allow" and door.inner == "http"):
        return http_action(case.method, case.path)
    if s.get("stage") == "first-bytes" and not door.kind_known:
        return KIND_ACTIONS[door.inner]
    return None


def check_http_denial(cell, errs):
    s, o = cell.spec, cell.obs
    h = o.headers
    if h.get("x-egressd-reason") != s["reason"]:
        errs.append("X-Egressd-Reason %r, expected %r" % (h.get("x-egressd-reason"),
                                                         s["reason"]))
    rule = h.get("x-egressd-rule")
    if s["status"] != 400 and not rule:
        errs.append("no X-Egressd-Rule")
    elif s.get("rule") and rule and s["rule"] not in rule:
        errs.append("X-Egressd-Rule %r does not contain %r" % (rule, s["rule"]))
    if (s["reason"] in RETRY_HELPS) != ("retry-after" in h):
        errs.append("Retry-After %r on %s (only where waiting helps)" % (h.get("retry-after"),
                                                                         s["reason"]))
    if (s["status"] == 407) != ("proxy-authenticate" in h):
        errs.append("Proxy-Authenticate %r with status %d" % (h.get("proxy-authenticate"),
                                                             s["status"]))
    if not o.closed:
        errs.append("the connection stayed open after the denial")


def check_observed(cell, errs):
    """What the client saw, against the cell's expectation."""
    s, o, door = cell.spec, cell.obs, cell.door
    if s["verdict"] == "allow":
        if not o.ok:
            errs.append("allowed cell did not reach the origin: %s" % o.text())
        if cell.delta[1] == 0:
            errs.append("the origin received nothing")
        return
    if s["verdict"] == "cut":
        direction, limit = cell.row.cut
        if direction == "out" and cell.delta[1] > limit:
            errs.append("the origin received %d bytes past maxBytesOut %d" % (cell.delta[1],
                                                                               limit))
        if direction == "in" and o.received > limit:
            errs.append("the client received %d bytes past maxBytesIn %d" % (o.received, limit))
        if o.ok and not cell.row.fan:
            errs.append("the exchange completed past the limit: %s" % o.text())
        return
    stage = s["stage"]
    shown = "answer" if door.inner == "forward" else s.get("shown") or door.shows(stage)
    if shown == "answer":
        if door.front == "socks5" and door.inner != "forward":
            want = s.get("answer") or ("socks", s.get("code", socks_code(s["reason"],
                                                                          s["status"])))
        else:
            want = ("http", s["status"])
        if o.answer != want:
            errs.append("answer %r, expected %r (%s)" % (o.answer, want, o.text()))
        elif want[0] == "http":
            check_http_denial(cell, errs)
        elif not o.closed:
            errs.append("the connection stayed open after the SOCKS refusal")
    elif shown == "close":
        if not o.established or not o.closed or o.ok or o.inner is not None:
            errs.append("expected the tunnel's success answer, then a close with nothing "
                        "relayed; saw %s" % o.text())
    elif shown == "inner":
        if not o.established or o.inner != s["status"]:
            errs.append("expected %d inside the tunnel; saw %s" % (s["status"], o.text()))
        else:
            check_http_denial(cell, errs)
    want_bytes = 0
    if s.get("origin_bytes") == "first-hello":
        want_bytes = len(client_hello("origin.test"))
    if s.get("origin_bytes") == "no-body":
        # the allowed head may have gone ahead (or been dropped with the close); no body byte
        data = cell.data
        if data.count(b"\r\n\r\n") > 1 or s["marker"] in data:
            errs.append("the origin received %r" % data[:400])
    elif s.get("origin_bytes") == "first-request":
        # the first request of the write reached the origin; nothing of the second
        data = cell.data
        if data.count(b"\r\n\r\n") != 1 or s["marker"] in data:
            errs.append("the origin received %r" % data[:400])
    elif cell.delta[1] != want_bytes:
        errs.append("the origin received %d bytes (expected %d)" % (cell.delta[1], want_bytes))
    if (stage == "request" or door.inner == "forward") and cell.delta[0] != 0 and \
            not cell.case.pipeline and not s.get("dialed"):
        errs.append("the origin saw %d connections for a denial decided before the dial"
                    % cell.delta[0])


def http_answered(cell):
    """The status egressd sent for the cell's last decision, or None."""
    s, o, door = cell.spec, cell.obs, cell.door
    if o.headers.get("x-egressd-reason"):
        return o.inner if o.inner is not None else o.answer[1]
    return None


def check_records(cell, recs, errs):
    s, o, door = cell.spec, cell.obs, cell.door
    mine = main_records(cell, recs)
    decisions = [r for r in mine if r["event"] in ("request", "connect")]
    if not decisions:
        errs.append("no decision record for client %s" % o.client)
        return
    for r in decisions:
        front = door.record_front(r, s.get("front", door.front))
        if r.get("front") != front:
            errs.append("front %r, expected %r: %s" % (r.get("front"), front, short(r)))
        if "session" in r and r["session"] != cell.session and cell.case.cred != "none":
            errs.append("session %r, the cell's is %r" % (r["session"], cell.session))
    closes = [r for r in mine if r["event"] == "close"]
    if len(closes) != 1:
        errs.append("%d close records for client %s" % (len(closes), o.client))
    if s["verdict"] == "allow":
        for r in decisions:
            if r.get("decision") != "allow":
                errs.append("a %s decision in an allowed cell: %s" % (r.get("decision"),
                                                                     short(r)))
            if not r.get("addr"):
                errs.append("an allow record without addr: %s" % short(r))
            if "status" in r:
                errs.append("status on an allow record: %s" % short(r))
        cell.verdict = verdict_of(cell, decisions[0])
        want = expected_action(cell)
        if want is not None and not any(r.get("action") == want for r in decisions):
            errs.append("no decision record with action %r: %s" % (want, [short(r) for r in
                                                                          decisions]))
        return
    if s["verdict"] == "cut":
        direction, limit = cell.row.cut
        ends = [r for r in recs.by_ip.get(cell.source, []) if r["event"] == "close"]
        key = "bytes_out" if direction == "out" else "bytes_in"
        total = sum(r.get(key, 0) for r in ends)
        if total > limit:
            errs.append("close records count %s %d past the limit %d" % (key, total, limit))
        cut = [r for r in recs.by_ip.get(cell.source, []) if (
            r.get("end") == "limit-bytes" or r.get("reason") == "limit-bytes")]
        if not cut:
            errs.append("no record says limit-bytes: %s" % [short(r) for r in mine])
        return
    last = decisions[-1]
    cell.verdict = verdict_of(cell, last)
    cell.action = last.get("action")
    for r in decisions[:-1]:
        if r.get("decision") != "allow":
            errs.append("a deny record before the last decision: %s" % short(r))
    for k, v in (("decision", "deny"), ("reason", s["reason"])):
        if last.get(k) != v:
            errs.append("record %s %r, expected %r: %s" % (k, last.get(k), v, short(last)))
    if s.get("rule") and s["rule"] not in (last.get("rule") or ""):
        errs.append("record rule %r does not contain %r" % (last.get("rule"), s["rule"]))
    if s["status"] != 400 and not last.get("rule"):
        errs.append("deny record without rule: %s" % short(last))
    stage = s["stage"]
    event = s.get("event") or ("request" if door.inner == "forward" or stage == "inner"
                               else "connect")
    if last["event"] != event:
        errs.append("event %r, expected %r" % (last["event"], event))
    want = expected_action(cell)
    if last.get("action") != want:
        errs.append("record action %r, expected %r" % (last.get("action"), want))
    sent = http_answered(cell)
    if sent is None and "status" in last:
        errs.append("status %r in the record, but no HTTP answer was sent" % last["status"])
    if sent is not None and last.get("status") != sent:
        errs.append("record status %r, the client got %r" % (last.get("status"), sent))
    for k, v in (s.get("record") or {}).items():  # fields a door's record must hold
        v = cell.session if v == "{cell}" else v
        if last.get(k) != v:
            errs.append("record %s %r, expected %r: %s" % (k, last.get(k), v, short(last)))
    end = s.get("end", "denied")
    if closes and closes[0].get("end") != end:
        errs.append("close end %r, expected %r" % (closes[0].get("end"), end))


class Records(list):
    """The audit log, with indexes by client address, client IP and connection."""

    def __init__(self, recs):
        super().__init__(recs)
        self.by_client, self.by_ip, self.by_conn = {}, {}, {}
        for r in recs:
            c = r.get("client")
            if c:
                self.by_client.setdefault(c, []).append(r)
                self.by_ip.setdefault(c.rsplit(":", 1)[0], []).append(r)
            if "conn" in r:
                self.by_conn.setdefault(r["conn"], []).append(r)


def main_records(cell, recs):
    """The records of the cell's main connection: the last connection from its client
    address (a port may have served an earlier connection of the same cell)."""
    conns = [r["conn"] for r in recs.by_client.get(cell.obs.client, []) if "conn" in r]
    if not conns:
        return []
    return recs.by_conn[max(conns)]


def short(r):
    return json.dumps({k: v for k, v in r.items() if k not in ("ts", "seq", "client")})


def normalise_rule(cell, rule):
    for key in ("socks5", "proxy", "transparent"):
        rule = (rule or "").replace("listen.%s " % key, "listen.{own} ")
    for p, name in ((cell.origin_port, "{origin}"),
                    (cell.env_ports.get("proxy"), "{listener}"),
                    (cell.env_ports.get("socks5"), "{listener}"),
                    (cell.env_ports.get("transparent"), "{listener}")):
        if p:
            rule = rule.replace(str(p), name)
    return rule


def verdict_of(cell, rec):
    """The front-door-independent fields of a decision record (harness.AUDIT_VERDICT_KEYS),
    with the cell's own session, origin port and listener port written as placeholders."""
    v = audit_verdict(rec)
    if v.get("session") == cell.session:
        v["session"] = "{cell}"
    if v.get("port") in (cell.origin_port, cell.env_ports.get("proxy"),
                         cell.env_ports.get("socks5"), cell.env_ports.get("transparent")):
        v["port"] = "{port}"
    v["rule"] = normalise_rule(cell, v.get("rule"))
    return v


def check_agreement(cells):
    """The doors of a row that expect the same outcome (verdict, reason, the rule the row
    names, and the same action in the record) must write the same verdict fields."""
    by = {}
    for c in cells:
        if c.na or c.verdict is None or c.errors:
            continue
        key = (c.spec["verdict"], c.spec.get("reason"), c.spec.get("rule"), c.action,
               c.spec.get("agree"))
        by.setdefault(key, []).append(c)
    for _, cs in by.items():
        seen = {}
        for c in cs:
            seen.setdefault(json.dumps(c.verdict, sort_keys=True), []).append(c.door.name)
        if len(seen) > 1:
            # what most doors write is the row's; the others disagree
            common = max(seen.items(), key=lambda kv: len(kv[1]))[0]
            for c in cs:
                mine = json.dumps(c.verdict, sort_keys=True)
                if mine != common:
                    c.errors.append("disagrees with %s: records %s, they write %s"
                                    % ("/".join(seen[common]), mine, common))


# ---------------------------------------------------------------------------------------------
# Rows with a step between two exchanges.

def staged_first(env, cells):
    for c in cells:
        try:
            run_cell(env, c, None)
            if not c.obs.ok:
                c.errors.append("the first exchange failed: %s" % c.obs.text())
        except Exception as ex:  # the cell fails; the others go on
            c.errors.append("error: %s" % (ex if isinstance(ex, TestFailure)
                                           else traceback.format_exc()))


def staged_second(env, cells):
    for c in cells:
        if c.errors or not getattr(c, "doors", None):
            continue
        d = c.doors[-1]
        before = env.totals()
        try:
            d.again(c.case)
        except Exception as ex:  # the cell fails; the others go on
            c.errors.append("error in the second exchange: %s" % ex)
        time.sleep(0.05)
        after = env.totals()
        c.delta = (after[0] - before[0], after[1] - before[1])
        c.obs = d.obs
        for x in c.doors:
            x.close()


def check_staged(cell, recs, errs):
    """After the step: the connection was closed (the end the row names) or, for a forwarded
    request whose connection stayed, the next request was denied; nothing reached the origin
    after the step."""
    o, door, s = cell.obs, cell.door, cell.spec
    if cell.delta[1] != 0:
        errs.append("the origin received %d bytes after the %s" % (cell.delta[1],
                                                                  cell.row.after))
    mine = main_records(cell, recs)
    decisions = [r for r in mine if r["event"] in ("request", "connect")]
    closes = [r for r in mine if r["event"] == "close"]
    end = {"expire": "session-expired", "reload": "policy-changed"}[cell.row.after]
    if o.answer and o.answer[0] == "http" and o.answer[1] != 200 and door.inner == "forward":
        # a kept-alive forward connection: its next request is decided and denied
        if o.answer[1] != s["status"] or o.headers.get("x-egressd-reason") != s["reason"]:
            errs.append("second request: %s" % o.text())
        end = "denied"
    elif not o.closed:
        errs.append("still open after the %s: %s" % (cell.row.after, o.text()))
    if not closes or closes[0].get("end") != end:
        errs.append("close record %s, expected end %r" % ([short(r) for r in closes], end))
    if cell.row.after == "reload":
        last = decisions[-1] if decisions else {}
        if last.get("decision") != "deny" or last.get("reason") != s["reason"]:
            errs.append("no deny record after the reload: %s" % [short(r) for r in decisions])


def run_persource(env, cell):
    """PER_SOURCE half-sent requests from 127.0.0.1, then a whole one from the same address
    (refused: 503 limit-clients, no record) and one from 127.0.0.2 (served)."""
    door = cell.door
    partial = {"socks5": b"\x05", "transparent": b"GET /"}.get(door.front,
                                                              b"GET http://origin.test/")
    held = []
    before = env.totals()
    try:
        for _ in range(PER_SOURCE):
            st = door(env).stream(cell.case)
            st.send(partial)
            held.append(st)
        time.sleep(0.1)
        d = door(env)
        st = d.stream(cell.case)
        d.s = st
        d.obs.client = st.local
        if door.front == "transparent":
            # no byte of any protocol: the close alone (conn.c reject_busy)
            st.send(d.first_bytes(cell.case) if door.inner == "http" else
                    client_hello("origin.test"))
            d.obs.closed = st.closed_within(3)
            cell.refused_ok = d.obs.closed and st.received == 0
            cell.refused_detail = "a transparent client got %r%s (expected a close without " \
                "bytes)" % (st.buf, "" if d.obs.closed else ", left open")
        elif door.front == "socks5":
            st.send(b"\x05\x01\x00")
            got = st.read_exact(2, 3)
            d.obs.note = "got %r" % (got,)
            d.obs.answer = ("socks-greeting", got)
            d.obs.closed = st.eof or st.closed_within(2)
            cell.refused_ok = got is None and d.obs.closed
            cell.refused_detail = "a SOCKS client got %r%s (expected a close without bytes)" % (
                got + st.buf if got else b"", "" if d.obs.closed else ", left open")
        else:
            st.send(b"GET http://origin.test:%d/x HTTP/1.1\r\nHost: origin.test\r\n\r\n"
                    % env.origins["http"].port)
            r = read_http(st, 3)
            cell.refused_ok = r is not None and r[0] == 503 and \
                r[1].get("x-egressd-reason") == "limit-clients"
            cell.refused_detail = "answer %r" % (r[:2] if r else None,)
        cell.refused_client = st.local
        st.close()
        ok = door(env)
        ok.send(Case(cell.row, {"source": "127.0.0.2"}, cell.session, cell.token,
                     cell.source))
        cell.obs = ok.obs
        ok.close()
    finally:
        for st in held:
            st.close()
    time.sleep(0.05)
    after = env.totals()
    cell.delta = (after[0] - before[0], after[1] - before[1])


def check_persource(cell, recs, errs):
    if not cell.refused_ok:
        errs.append("the connection past maxClientsPerSource: %s" % cell.refused_detail)
    if recs.by_client.get(cell.refused_client):
        errs.append("a record for the refused connection (limit-clients writes none)")
    if not cell.obs.ok:
        errs.append("a client from another address was not served: %s" % cell.obs.text())


# ---------------------------------------------------------------------------------------------
# The groups and the table.

def run_group(h, env, gname, rows, cells):
    """One egressd for the group's config; every row of the group through every door."""
    if gname == "p443" and env.p443:
        for c in cells:
            if not c.na:
                c.result = "skipped"
                c.errors = ["port 443: %s" % env.p443]
        return
    if env.no_redirect:
        for c in cells:
            if not c.na and c.door.front == "transparent":
                c.na, c.result = None, "skipped"
                c.errors = ["transparent: %s" % env.no_redirect]
        cells = [c for c in cells if c.result != "skipped"]
    cfg = group_config(gname, cells, env)
    e = Egressd(h.tmp, cfg, name="egressd-" + gname)
    h.add(e, e.kill)
    env.ports = {"proxy": e.port}
    for key in sorted({d.listener for d in DOORS} - {"proxy"}):
        line = e.wait_stderr(r"listening on 127\.0\.0\.1:\d+ \(listen\.%s\)" % key, 5)
        ensure(line, "egressd opened no %s listener: %s" % (key, e.stderr()))
        env.ports[key] = int(line.split(":")[-1].split(" ")[0])
    if "transparent" in env.ports and not env.no_redirect:
        redirect_to(env.ports["transparent"])
    started = time.time()
    for row in rows:
        rc = [c for c in cells if c.row is row and not c.na]
        for c in rc:
            c.env_ports = dict(env.ports)
            c.ran = True
        if row.min_age:
            time.sleep(max(0.0, started + row.min_age - time.time()))
        if row.after in ("expire", "reload"):
            staged_first(env, rc)
            if row.after == "expire":
                time.sleep(max(0.0, started + 2.3 - time.time()))
            else:
                e.rewrite_config(reload_config(cfg))
                e.signal(__import__("signal").SIGHUP)
                e.wait_audit(lambda r: r["event"] == "config" and r["seq"] > 2, 5,
                             "config record of the reload")
            staged_second(env, rc)
            continue
        if row.after == "persource":
            for c in rc:
                try:
                    run_persource(env, c)
                except Exception as ex:  # the cell fails; the others go on
                    c.errors.append("error: %s" % (ex if isinstance(ex, TestFailure)
                                                   else traceback.format_exc()))
            continue
        if row.parallel:
            threads = [threading.Thread(target=run_cell_safe, args=(env, c)) for c in rc]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
        else:
            for c in rc:
                run_cell_safe(env, c)
        # Bytes that reach an origin after the row's last cell looked are a leak of the row's.
        last = env.totals()
        time.sleep(0.02)
        late = env.totals()
        if late[1] != last[1]:
            for c in rc:
                if c.spec["verdict"] != "allow":
                    c.errors.append("%d bytes reached an origin after the row's cells looked"
                                    % (late[1] - last[1]))
    if os.environ.get("CONFORMANCE_SLOW"):
        print("   group %s ran in %.1fs" % (gname, time.time() - started), flush=True)
    rc = e.stop()
    if rc != 0:
        for c in cells:
            if c.ran:
                c.errors.append("egressd exited %r after the group" % rc)
    if gname == "nolog":
        said = [x for x in e.stderr().splitlines() if x.startswith("egressd: audit: cannot write")]
        if len(said) != 1:
            for c in cells:
                if c.ran:
                    c.errors.append("standard error should say once that records cannot be "
                                    "written: %r" % said)
        recs = None
    else:
        recs = Records(e.audit())
        try:
            check_audit_log(recs)
        except TestFailure as ex:
            for c in cells:
                if c.ran:
                    c.errors.append("audit log: %s" % ex)
    for c in cells:
        if not c.ran or c.errors and c.obs is None:
            continue
        errs = []
        try:
            if c.row.after == "persource":
                check_persource(c, recs, errs)
            elif c.row.after:
                if not c.errors:
                    check_staged(c, recs, errs)
            else:
                check_observed(c, errs)
                if recs is not None:
                    check_records(c, recs, errs)
                elif c.obs.client and c.spec["verdict"] != "allow":
                    pass  # the log is /dev/full: no record can be asked for
        except Exception:  # a checker that breaks is a failed cell, with its trace
            errs.append(traceback.format_exc())
        c.errors += errs
    for row in rows:
        check_agreement([c for c in cells if c.row is row])


def run_cell_safe(env, c):
    t0 = time.time()
    try:
        run_cell(env, c, None)
    except Exception as ex:  # the cell fails; the others go on
        c.errors.append("error: %s" % (ex if isinstance(ex, TestFailure)
                                       else traceback.format_exc()))
    c.seconds = time.time() - t0


def finish(cells):
    for c in cells:
        if c.na or c.result == "skipped":
            continue
        xf = c.spec.get("xfail")
        if xf:
            c.result = "xfail" if c.errors else "xpass"
        else:
            c.result = "fail" if c.errors else "pass"


MARK = {"pass": "ok", "fail": "FAIL", "n/a": "-", "xfail": "xf", "xpass": "XPASS",
        "skipped": "skip"}


def print_matrix(rows, cells):
    width = 58
    head = "%-*s " % (width, "row") + " ".join("%-6s" % SHORT[d.name] for d in DOORS)
    print(head)
    for i, row in enumerate(rows):
        marks = []
        for d in DOORS:
            c = [x for x in cells if x.row is row and x.door is d][0]
            marks.append("%-6s" % MARK[c.result])
        print("%-*s " % (width, ("%d %s" % (i + 1, row.name))[:width]) + " ".join(marks))


def main():
    why = rerun_in_netns(["127.0.0.3/8"])
    p443 = None
    if why is not None:
        p443 = "binding port 443 needs a private network namespace (%s)" % why
        if os.geteuid() == 0:
            p443 = None
    if not EGRESSD_BIN or not os.path.exists(EGRESSD_BIN):
        print("FAIL: EGRESSD_BIN is not set or does not exist: %r" % EGRESSD_BIN)
        sys.exit(1)
    global DOORS
    rows = all_rows()
    # To look at a part: CONFORMANCE_DOORS=forward,connect-tls and CONFORMANCE_ROWS=WORD
    # (rows whose name holds it); a partial run says so in its counts line.
    if os.environ.get("CONFORMANCE_DOORS"):
        pick = os.environ["CONFORMANCE_DOORS"].split(",")
        DOORS = [d for d in DOORS if d.name in pick]
    if os.environ.get("CONFORMANCE_ROWS"):
        rows = [r for r in rows if os.environ["CONFORMANCE_ROWS"] in r.name]
    cells = []
    for row in rows:
        for d in DOORS:
            cells.append(Cell(row, d, len(cells)))
    print("== conformance table: %d rows x %d doors (binary %s, sanitize=%d)"
          % (len(rows), len(DOORS), EGRESSD_BIN, SANITIZE), flush=True)
    h = Harness("conformance")
    t0 = time.time()
    try:
        env = Env(h, p443, transparent_redirect(why))
        groups = []
        for row in rows:
            if row.group not in groups:
                groups.append(row.group)
        for g in groups:
            grows = [r for r in rows if r.group == g]
            gcells = [c for c in cells if c.row.group == g]
            tg = time.time()
            try:
                run_group(h, env, g, grows, gcells)
            except Exception:  # a group that cannot run fails each of its cells
                tb = traceback.format_exc()
                for c in gcells:
                    if not c.na:
                        c.errors.append("group %s: %s" % (g, tb))
            print("   group %s: %d rows in %.1fs" % (g, len(grows), time.time() - tg),
                  flush=True)
    finally:
        h.close()
    finish(cells)
    for row in rows:
        rc = [c for c in cells if c.row is row]
        bad = [c for c in rc if c.result in ("fail", "xpass")]
        for c in rc:
            if c.result == "xfail":
                print("XFAIL %s [%s]: %s -- %s" % (row.name, c.door.name, c.spec["xfail"],
                                                   "; ".join(c.errors)[:600]))
            if c.result == "skipped":
                print("SKIPPED %s [%s]: %s" % (row.name, c.door.name, c.errors[0]))
        if bad:
            for c in bad:
                msg = ("XPASS (a known failure passes: remove its xfail)"
                       if c.result == "xpass" else "; ".join(c.errors))
                print("FAIL %s [%s]: %s" % (row.name, c.door.name, msg), flush=True)
        elif any(c.result in ("pass", "xfail") for c in rc):
            print("PASS %s" % row.name)
    print()
    print_matrix(rows, cells)
    # what "-" stands for: each reason a cell does not apply, with the rows and doors it covers
    why = {}
    for c in cells:
        if c.na:
            why.setdefault(c.na, []).append(c)
    for text, cs in why.items():
        print("n/a (%d cells: rows %s; %s): %s" % (
            len(cs), ",".join(sorted({str(rows.index(c.row) + 1) for c in cs}, key=int)),
            ",".join(sorted({SHORT[c.door.name] for c in cs})), text))
    if os.environ.get("CONFORMANCE_SLOW"):
        for c in sorted(cells, key=lambda c: -getattr(c, "seconds", 0))[:25]:
            print("  %.2fs %s [%s]" % (getattr(c, "seconds", 0), c.row.name, c.door.name))
    counts = {}
    for c in cells:
        counts[c.result] = counts.get(c.result, 0) + 1
    print("\nconformance%s: %d rows x %d doors = %d cells: %d pass, %d fail, %d xfail, %d xpass, "
          "%d n/a, %d skipped (%.1fs)" % (
              " (a part: CONFORMANCE_DOORS/CONFORMANCE_ROWS)" if os.environ.get(
                  "CONFORMANCE_DOORS") or os.environ.get("CONFORMANCE_ROWS") else "",
              len(rows), len(DOORS), len(cells),
                                          counts.get("pass", 0), counts.get("fail", 0),
                                          counts.get("xfail", 0), counts.get("xpass", 0),
                                          counts.get("n/a", 0), counts.get("skipped", 0),
                                          time.time() - t0), flush=True)
    if counts.get("fail") or counts.get("xpass"):
        sys.exit(1)
    if not counts.get("pass"):
        sys.exit(SKIP_EXIT)


if __name__ == "__main__":
    main()
