"""The DNS listener (listen.dns, docs/dns.md): real and mapped answers, REFUSED without an upstream
query for names a session may not reach, the types it answers, EDNS and TC, TCP framing and its
bounds, records deduplicated per minute.  Clients: dig (bind9-dnsutils) and Python sockets.

Nothing leaves the machine: names are answered from dns.hosts, and dns.servers points at a fake
upstream on loopback that only counts what reaches it (it never answers)."""

import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Conn, base_config, check, check_audit_log, check_eq, run_cases,  # noqa
                     run_egressd)

DIG = shutil.which("dig")
LONG = ("a-rather-long-label-for-the-truncation-case-0123456789.another-long-label-to-make-"
        "the-answer-bigger-0123456789.test")
V6_16 = ["2001:db8::%x" % (i + 1) for i in range(16)]
HOSTS = {
    "origin.test": ["127.0.0.1", "10.0.0.1", "192.0.2.7", "::1", "fd00::5"],
    "evil.test": ["127.0.0.2"],
    "v6.test": ["2001:db8::6"],
    LONG: V6_16,
}
BOUND = {"allowDomains": ["origin.test:*", "v6.test", LONG, "**.ok.test", "a.map.test",
                          "b.map.test"], "enforce": "sandbox"}
DNS_LINE = r"egressd: listening on 127\.0\.0\.1:(\d+) \(dns, UDP and TCP\)"


class Upstream:
    """A fake DNS server on 127.0.0.1 (UDP and TCP, one port) that counts what reaches it and
    never answers, so egressd's queries to it time out."""

    def __init__(self):
        # UDP picks a port; TCP may find it taken by another program: try a few.
        for _ in range(20):
            self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.udp.bind(("127.0.0.1", 0))
            self.port = self.udp.getsockname()[1]
            self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                self.tcp.bind(("127.0.0.1", self.port))
                break
            except OSError:
                self.udp.close()
                self.tcp.close()
        self.tcp.listen(16)
        self.udp.settimeout(0.2)
        self.tcp.settimeout(0.2)
        self.lock = threading.Lock()
        self.datagrams = 0
        self.connections = 0
        self.stopping = False
        self.threads = [threading.Thread(target=self._udp, daemon=True),
                        threading.Thread(target=self._tcp, daemon=True)]
        for t in self.threads:
            t.start()

    def _udp(self):
        while not self.stopping:
            try:
                self.udp.recvfrom(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            with self.lock:
                self.datagrams += 1

    def _tcp(self):
        while not self.stopping:
            try:
                c, _ = self.tcp.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with self.lock:
                self.connections += 1
            c.close()

    @property
    def seen(self):
        with self.lock:
            return self.datagrams + self.connections

    def close(self):
        self.stopping = True
        for t in self.threads:
            t.join(2)
        self.udp.close()
        self.tcp.close()


def config(h, mapped=False, bound=None, sessions=None, upstream=None, hosts=None,
           allow_addresses=("127.0.0.0/8",)):
    cfg = base_config(hosts or HOSTS, session_bound=bound or BOUND, sessions=sessions,
                      allow_addresses=allow_addresses)
    cfg["listen"]["dns"] = ["127.0.0.1:0"]
    if mapped:
        cfg["listen"]["dnsAnswers"] = "mapped"
    if upstream is not None:
        cfg["dns"]["servers"] = ["127.0.0.1:%d" % upstream.port]
    return cfg


def start(h, cfg):
    """Starts egressd; returns (egressd, dns port)."""
    e = h.egressd(cfg)
    line = e.wait_stderr(DNS_LINE, 10)
    check(line is not None, "no 'listening on ... (dns' line; stderr:\n%s" % e.stderr())
    return e, int(re.search(DNS_LINE, line).group(1))


class Dig:
    def __init__(self, out):
        self.out = out
        m = re.search(r"status: ([A-Z]+)", out)
        self.status = m.group(1) if m else None
        m = re.search(r";; flags: ([a-z ]*);", out)
        self.flags = m.group(1).split() if m else []
        self.answers = []  # (name, ttl, type, data)
        sec = re.search(r";; ANSWER SECTION:\n(.*?)(\n\n|\Z)", out, re.S)
        if sec:
            for line in sec.group(1).splitlines():
                f = line.split()
                if len(f) >= 5:
                    self.answers.append((f[0], int(f[1]), f[3], f[4]))

    def __repr__(self):
        return "dig(%s %s %r)" % (self.status, self.flags, self.answers)


def dig(port, name, qtype="A", *opts):
    check(DIG is not None, "dig is not installed (bind9-dnsutils; tools/install-deps)")
    args = [DIG, "@127.0.0.1", "-p", str(port), "+tries=1", "+time=4", "+nocookie", name,
            qtype] + list(opts)
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=20)
    return Dig(r.stdout)


# Python-socket clients: just enough of the message format to send a question and read the
# header and records back (the listener itself uses ldns).

def query(name, qtype=1, qid=0x1234, flags=0x0100, edns=None):
    q = struct.pack(">HHHHHH", qid, flags, 1, 0, 0, 1 if edns else 0)
    for label in name.rstrip(".").split("."):
        if label:
            q += bytes([len(label)]) + label.encode()
    q += b"\x00" + struct.pack(">HH", qtype, 1)
    if edns:
        q += b"\x00" + struct.pack(">HHIH", 41, edns, 0, 0)
    return q


def skip_name(b, i):
    while True:
        n = b[i]
        if n & 0xC0 == 0xC0:
            return i + 2
        if n == 0:
            return i + 1
        i += 1 + n


def parse(b):
    """(id, flags, rcode, qdcount, [(type, rdata)]) of an answer."""
    qid, flags, qd, an, _, _ = struct.unpack(">HHHHHH", b[:12])
    i = 12
    for _ in range(qd):
        i = skip_name(b, i) + 4
    recs = []
    for _ in range(an):
        i = skip_name(b, i)
        t, _, _, rdlen = struct.unpack(">HHIH", b[i:i + 10])
        i += 10
        recs.append((t, b[i:i + rdlen]))
        i += rdlen
    return qid, flags, flags & 0xF, qd, recs


def udp_ask(port, msg, timeout=3.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(timeout)
    try:
        s.sendto(msg, ("127.0.0.1", port))
        return s.recv(65536)
    except socket.timeout:
        return None
    finally:
        s.close()


def tcp_recv_msg(s):
    def exact(n):
        d = b""
        while len(d) < n:
            x = s.recv(n - len(d))
            if not x:
                raise EOFError("closed after %d of %d bytes" % (len(d), n))
            d += x
        return d
    n = struct.unpack(">H", exact(2))[0]
    return exact(n)


def dns_records(e):
    return [r for r in e.audit() if r.get("event") == "dns"]


# ---------------------------------------------------------------------------------------------

def case_real_answers(h):
    origin = h.origin()
    e, port = start(h, config(h))
    # UDP and TCP: only 127.0.0.1 passes the address policy (10.0.0.1 is private, 192.0.2.7
    # documentation); ::1 and fd00::5 fail it, so AAAA is empty.
    for opts in ((), ("+tcp",)):
        a = dig(port, "origin.test", "A", *opts)
        check_eq(a.status, "NOERROR", "origin.test A %s" % (opts,))
        check_eq([x[3] for x in a.answers], ["127.0.0.1"], "origin.test A addresses %s" % (opts,))
        check(a.answers[0][1] <= 5, "dns.hosts answer TTL over 5 s: %r" % a)
        check("ra" in a.flags and "qr" in a.flags, "flags %r" % a.flags)
        aaaa = dig(port, "origin.test", "AAAA", *opts)
        check_eq((aaaa.status, aaaa.answers), ("NOERROR", []), "origin.test AAAA %s" % (opts,))
    # The letter case the client used comes back (resolvers that randomise it check).
    m = dig(port, "OrIgIn.TeSt", "A")
    check_eq([x[0] for x in m.answers], ["OrIgIn.TeSt."], "owner name case")
    # The proxy dials the same address for the same name.
    c = Conn(e.port)
    c.request("GET", "http://origin.test:%d/x" % origin.port)
    check_eq(c.read_response().status, 200, "GET through the proxy")
    c.close()
    v6 = dig(port, "v6.test", "AAAA")
    check_eq((v6.status, v6.answers), ("NOERROR", []), "v6.test AAAA (documentation address)")
    check_eq(e.stop(), 0, "exit code")
    recs = e.audit()
    check_audit_log(recs)
    req = [r for r in recs if r["event"] == "request"]
    check_eq(req[0].get("addr"), "127.0.0.1:%d" % origin.port, "the address the proxy dialled")
    got = [r for r in recs if r["event"] == "dns" and r.get("host") == "origin.test"
           and r.get("qtype") == "A"]
    check_eq(len(got), 1, "dns records for origin.test A (6 queries, one record a minute): %r"
             % got)
    r = got[0]
    for k, v in (("front", "dns"), ("session", "default"), ("action", "dns"),
                 ("decision", "allow"), ("addr", "127.0.0.1"), ("rcode", "NOERROR")):
        check_eq(r.get(k), v, "dns record %s" % k)
    check(r.get("client", "").startswith("127.0.0.1:"), "dns record client %r" % r)
    check("10.0.0.1" in r.get("rule", ""), "the rule names an address left out: %r" % r)
    aaaa = [r for r in recs if r["event"] == "dns" and r.get("qtype") == "AAAA"
            and r.get("host") == "origin.test"]
    check_eq([(r.get("reason"), r.get("addr")) for r in aaaa], [("address-denied", None)],
             "AAAA record")


def case_denied_no_upstream(h):
    up = h.add(Upstream())
    e, port = start(h, config(h, upstream=up))
    for opts in ((), ("+tcp",)):
        for name in ("evil.test", "not-listed.test", "x.evil.test"):
            for t in ("A", "AAAA", "HTTPS", "TXT"):
                d = dig(port, name, t, *opts)
                check_eq((d.status, d.answers), ("REFUSED", []), "%s %s %s" % (name, t, opts))
    # A name that is no host name: REFUSED too.
    d = dig(port, "_acme-challenge.ok.test", "A")
    check_eq(d.status, "REFUSED", "a name with an underscore")
    time.sleep(0.5)
    check_eq(up.seen, 0, "queries that reached the upstream for denied names")
    # The control: an allowed name that dns.hosts does not know is asked upstream (which never
    # answers: SERVFAIL after dns.timeout), so the count above could have moved.
    d = dig(port, "up.ok.test", "A")
    check_eq(d.status, "SERVFAIL", "an allowed name the upstream does not answer")
    check(up.seen > 0, "the allowed name never reached the fake upstream")
    check_eq(e.stop(), 0, "exit code")
    recs = dns_records(e)
    evil = [r for r in recs if r.get("host") == "evil.test"]
    check_eq(sorted(r.get("qtype") for r in evil), ["A", "AAAA", "HTTPS", "TXT"],
             "one record per type for evil.test (UDP and TCP queries merged)")
    for r in evil:
        check_eq((r.get("decision"), r.get("reason"), r.get("rcode")),
                 ("deny", "host-not-allowed", "REFUSED"), "evil.test record")
        check_eq(r.get("rule"), "allowDomains (no entry matches)", "evil.test rule")
    bad = [r for r in recs if r.get("host") == "_acme-challenge.ok.test"]
    check_eq([r.get("reason") for r in bad], ["bad-request"], "underscore name record")


def case_types(h):
    e, port = start(h, config(h))
    for t in ("TXT", "MX", "ANY", "NS", "SOA", "SRV", "CNAME"):
        d = dig(port, "origin.test", t, "+notcp")
        check_eq((d.status, d.answers), ("REFUSED", []), "origin.test %s" % t)
    d = dig(port, "1.0.0.127.in-addr.arpa", "PTR")
    check_eq(d.status, "REFUSED", "PTR")
    for t in ("HTTPS", "SVCB"):
        d = dig(port, "origin.test", t)
        check_eq((d.status, d.answers), ("NOERROR", []), "origin.test %s" % t)
    d = dig(port, "version.bind", "TXT", "-c", "CH")
    check_eq(d.status, "REFUSED", "CHAOS version.bind")
    check_eq(e.stop(), 0, "exit code")
    recs = [r for r in dns_records(e) if r.get("host") == "origin.test"]
    by = {r["qtype"]: r for r in recs}
    check_eq((by["TXT"]["decision"], by["TXT"]["reason"]), ("deny", "type-refused"), "TXT record")
    check_eq((by["HTTPS"]["decision"], by["HTTPS"].get("addr")), ("allow", None), "HTTPS record")


def case_dns_action_denied(h):
    bound = dict(BOUND)
    bound["actions"] = ["dns"]
    e, port = start(h, config(h, bound=bound))
    for t in ("A", "AAAA", "HTTPS"):
        d = dig(port, "origin.test", t)
        check_eq((d.status, d.answers), ("REFUSED", []), "origin.test %s with dns denied" % t)
    check_eq(e.stop(), 0, "exit code")
    r = [r for r in dns_records(e) if r.get("qtype") == "A"][0]
    check_eq((r["decision"], r["reason"], r["rule"]), ("deny", "action-denied", "actions: dns"),
             "record")


def case_no_session(h):
    sessions = {"agent": {"clients": ["192.0.2.0/24"],
                          "bound": {"network": BOUND}}}
    e, port = start(h, config(h, sessions=sessions))
    d = dig(port, "origin.test", "A")
    check_eq(d.status, "REFUSED", "a client with no session")
    check_eq(e.stop(), 0, "exit code")
    r = dns_records(e)[0]
    check_eq((r.get("session"), r["reason"]), (None, "no-session"), "record")


def case_mapped(h):
    e, port = start(h, config(h, mapped=True))
    a1 = dig(port, "a.map.test", "A")
    check_eq(a1.status, "NOERROR", "mapped A")
    check_eq(len(a1.answers), 1, "mapped A records")
    addr = a1.answers[0][3]
    o = [int(x) for x in addr.split(".")]
    check(o[0] == 198 and o[1] in (18, 19), "mapped address %s outside 198.18.0.0/15" % addr)
    check_eq(a1.answers[0][1], 60, "mapped TTL")
    a2 = dig(port, "a.map.test", "A", "+tcp")
    check_eq([x[3] for x in a2.answers], [addr], "the same name again (over TCP)")
    b = dig(port, "B.map.test", "A")
    check(b.answers and b.answers[0][3] != addr, "another name got the same address: %r" % b)
    aaaa = dig(port, "a.map.test", "AAAA")
    check_eq((aaaa.status, aaaa.answers), ("NOERROR", []), "mapped AAAA")
    https = dig(port, "a.map.test", "HTTPS")
    check_eq((https.status, https.answers), ("NOERROR", []), "mapped HTTPS")
    # A name in dns.hosts gets a mapped address too: the transparent listener dials it later.
    o = dig(port, "origin.test", "A")
    check(o.answers and o.answers[0][3].startswith("198.1"), "origin.test mapped: %r" % o)
    d = dig(port, "evil.test", "A")
    check_eq((d.status, d.answers), ("REFUSED", []), "denied name in mapped mode")
    check_eq(e.stop(), 0, "exit code")
    r = [r for r in dns_records(e) if r.get("host") == "a.map.test" and r["qtype"] == "A"]
    check_eq([(x["decision"], x.get("addr")) for x in r], [("allow", addr)], "mapped record")


def case_edns_and_tc(h):
    e, port = start(h, config(h, allow_addresses=("127.0.0.0/8", "2001:db8::/32")))
    # 16 AAAA records under a long name: over 512 bytes.
    d = dig(port, LONG, "AAAA", "+noedns", "+ignore")
    check("tc" in d.flags, "no TC bit without EDNS: %r" % d)
    check_eq(d.answers, [], "records in a truncated answer")
    d = dig(port, LONG, "AAAA", "+bufsize=512", "+ignore")
    check("tc" in d.flags, "no TC bit with EDNS 512: %r" % d)
    d = dig(port, LONG, "AAAA", "+bufsize=1232", "+ignore")
    check("tc" not in d.flags and len(d.answers) == 16, "EDNS 1232: %r" % d)
    d = dig(port, LONG, "AAAA", "+tcp")
    check("tc" not in d.flags and len(d.answers) == 16, "TCP: %r" % d)
    # dig on its own retries over TCP after a TC.
    d = dig(port, LONG, "AAAA", "+noedns")
    check_eq(len(d.answers), 16, "dig's TCP retry after TC")
    # Python: the answer to an EDNS 4096 query fits 1232 and carries an OPT.
    ans = udp_ask(port, query(LONG, 28, edns=4096))
    check(ans is not None and len(ans) <= 1232, "EDNS 4096 answer size %r" %
          (len(ans) if ans else None))
    qid, flags, rcode, _, recs = parse(ans)
    check_eq((qid, rcode, len(recs)), (0x1234, 0, 16), "EDNS answer")
    check_eq(struct.unpack(">H", ans[10:12])[0], 1, "additional count (the OPT)")
    check_eq(e.stop(), 0, "exit code")


def case_malformed(h):
    e, port = start(h, config(h))
    # Garbage after a header: FORMERR with the ID.
    bad = struct.pack(">HHHHHH", 0xBEEF, 0x0100, 1, 0, 0, 0) + b"\x07trunc"
    ans = udp_ask(port, bad)
    check(ans is not None, "no answer to a truncated question")
    qid, flags, rcode, _, _ = parse(ans)
    check_eq((qid, rcode, bool(flags & 0x8000)), (0xBEEF, 1, True), "FORMERR")
    # Two questions: FORMERR.
    two = query("origin.test")
    two = two[:4] + b"\x00\x02" + two[6:] + two[12:]
    check_eq(parse(udp_ask(port, two))[2], 1, "two questions")
    # A response (QR set) and a runt get nothing: no reflection, no loop.
    resp = bytearray(query("origin.test"))
    resp[2] |= 0x80
    check_eq(udp_ask(port, bytes(resp), 0.5), None, "answer to a response")
    check_eq(udp_ask(port, b"\x00\x01\x02", 0.5), None, "answer to 3 bytes")
    # EDNS version 1: BADVERS (extended rcode 1 in the OPT's TTL).
    q = bytearray(query("origin.test", edns=1232))
    q[-5] = 1  # the version byte (after the extended rcode, in the OPT's TTL)
    ans = udp_ask(port, bytes(q))
    check(ans is not None and ans[-11:-8] == b"\x00\x00\x29" and ans[-6] == 1,
          "BADVERS answer %r" % ans)
    # The listener still answers well-formed queries.
    check_eq(parse(udp_ask(port, query("origin.test")))[2], 0, "a good query after bad ones")
    check_eq(e.stop(), 0, "exit code")


def case_tcp(h):
    e, port = start(h, config(h))
    # Two queries in one write: two answers, in order, on one connection.
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    q1, q2 = query("origin.test", 1, 1), query("evil.test", 1, 2)
    s.sendall(struct.pack(">H", len(q1)) + q1 + struct.pack(">H", len(q2)) + q2)
    a1, a2 = parse(tcp_recv_msg(s)), parse(tcp_recv_msg(s))
    check_eq((a1[0], a1[2], len(a1[4])), (1, 0, 1), "first pipelined answer")
    check_eq((a2[0], a2[2]), (2, 5), "second pipelined answer (REFUSED)")
    # A message sent a byte at a time is still answered.
    for b in struct.pack(">H", len(q1)) + q1:
        s.send(bytes([b]))
    check_eq(parse(tcp_recv_msg(s))[2], 0, "a trickled query")
    # Half-close after a query: answered, then closed.
    s.sendall(struct.pack(">H", len(q1)) + q1)
    s.shutdown(socket.SHUT_WR)
    check_eq(parse(tcp_recv_msg(s))[0], 1, "answer after half-close")
    check_eq(s.recv(10), b"", "close after the half-closed client's answer")
    s.close()
    check_eq(e.stop(), 0, "exit code")


def case_tcp_bounds(h):
    e, port = start(h, config(h))
    # 256 clients at once are served; the 257th is closed at once.
    held = []
    try:
        for _ in range(256):
            held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        time.sleep(0.3)
        extra = socket.create_connection(("127.0.0.1", port), timeout=5)
        extra.settimeout(5)
        try:
            got = extra.recv(10)
        except ConnectionResetError:
            got = b""
        check_eq(got, b"", "the 257th TCP client was not closed")
        extra.close()
        q = query("origin.test")
        held[0].sendall(struct.pack(">H", len(q)) + q)
        check_eq(parse(tcp_recv_msg(held[0]))[2], 0, "a held client still answered")
        # UDP is served meanwhile.
        check_eq(parse(udp_ask(port, q))[2], 0, "UDP while TCP is full")
        # A client that starts a message and stops is closed within the 10 s deadline.
        s = held[1]
        s.sendall(b"\x00\x20\x12")
        s.settimeout(15)
        t0 = time.time()
        try:
            got = s.recv(10)
        except ConnectionResetError:
            got = b""
        waited = time.time() - t0
        check_eq(got, b"", "a stalled client got bytes")
        check(waited < 12, "a stalled client was closed after %.1f s" % waited)
    finally:
        for s in held:
            s.close()
    check_eq(e.stop(), 0, "exit code")


def case_records_dedup(h):
    e, port = start(h, config(h))
    q = query("origin.test")
    for i in range(50):
        check(udp_ask(port, query("origin.test", 1, i)) is not None, "answer %d" % i)
    for i in range(20):
        udp_ask(port, query("evil.test", 1, i))
    for i in range(5):
        udp_ask(port, query("origin.test", 28, i))
    udp_ask(port, q)
    check_eq(e.stop(), 0, "exit code")
    recs = dns_records(e)
    keys = sorted((r["host"], r["qtype"], r["decision"]) for r in recs)
    check_eq(keys, [("evil.test", "A", "deny"), ("origin.test", "A", "allow"),
                    ("origin.test", "AAAA", "allow")], "records for 76 queries")


def case_check(h):
    path = os.path.join(h.tmp, "c.yaml")
    with open(path, "w") as f:
        f.write("listen:\n  dns: [\"127.0.0.1:5353\"]\n  dnsAnswers: mapped\n"
                "sessions:\n  default: {}\n")
    r = run_egressd(["check", "-c", path])
    check_eq(r.returncode, 0, "check exit code (stderr %r)" % r.stderr)
    check("dns listener: 127.0.0.1:5353 (UDP and TCP; answers: mapped" in r.stdout,
          "check does not show the DNS listener:\n%s" % r.stdout)
    with open(path, "w") as f:
        f.write("listen:\n  dns: [\"127.0.0.1:5353\"]\n  dnsAnswers: fake\n")
    r = run_egressd(["check", "-c", path])
    check_eq(r.returncode, 2, "check exit code on a bad dnsAnswers")
    check(("%s:3:15: listen.dnsAnswers:" % path) in r.stderr, "error line: %r" % r.stderr)


CASES = [
    ("real answers: only addresses that pass the policy, UDP and TCP", case_real_answers),
    ("denied names REFUSED with no upstream query", case_denied_no_upstream),
    ("TXT/MX/ANY/... REFUSED, HTTPS and SVCB empty", case_types),
    ("the dns action denied: REFUSED for all", case_dns_action_denied),
    ("a client without a session: REFUSED", case_no_session),
    ("mapped answers from 198.18.0.0/15", case_mapped),
    ("EDNS sizes and TC", case_edns_and_tc),
    ("malformed queries: FORMERR, BADVERS, nothing for responses", case_malformed),
    ("TCP: pipelined, trickled, half-closed", case_tcp),
    ("TCP bounds: 256 clients, the message deadline", case_tcp_bounds),
    ("records: one per (session, name, type, decision) per minute", case_records_dedup),
    ("egressd check shows listen.dns; a bad dnsAnswers is FILE:LINE:COL", case_check),
]

if __name__ == "__main__":
    run_cases("test_dns", CASES)
