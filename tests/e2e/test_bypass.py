"""Bypass suite (issue 3, hostile input): the real egressd, attacked the way an agent that wants
out would attack it.  One declarative row per behaviour; docs/security-tests.md is the same
table in prose (`python3 test_bypass.py --markdown` prints it).

Kinds of rows:
- H: raw request bytes to the proxy; the status, X-Egressd-Reason, X-Egressd-Rule and the
  deciding audit record that must come back.  For every denial the origins (an HTTP echo
  origin, a raw recorder, the port-443 recorder) must have seen no connection at all, and the
  audit log must hold no decision from any other client (a loop would add one).
- T: a CONNECT answered 200, then the first bytes of the tunnel (hand-built TLS ClientHellos,
  edited from a real one made by Python's ssl module); a denial must close the tunnel, write a
  second "connect" record with the reason and rule, and the upstream must have received zero
  bytes.
- F: a function, for what a row cannot say (pipelining, limits, openssl s_client).

Placeholders in what is sent: {origin} the HTTP echo origin's port, {rec} a raw recorder that
answers HTTP 200 and records the exact bytes, {proxy} egressd's own port, {closed} a port that
refuses.  tls443.test is a recorder on port 443 of a random 127/8 address.

The suite re-executes itself in a private network namespace where only loopback exists
(harness.rerun_in_netns: unshare -n as root, unshare -Urn as another user), so that a bypass of
the address policy can never send a packet to a private or metadata address outside this
machine.  Where no namespace can be made, the rows that bind port 443 are SKIPPED (as a user
without the privilege) and the others run on this host's loopback.
"""

import json
import os
import random
import re
import socket
import ssl
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tlsmsg import (_u16, _u24, hello, hello_msg, real_client_hello, records, sni_ext,
                    split_hello)
from harness import (Recorder, Conn, TestFailure, base_config, check, check_audit_log, check_eq,  # noqa
                     closed_port, make_cert, run_cases, clean_env, in_netns, rerun_in_netns,
                     skip)

LOOPBACK = ("127.0.0.0/8",)
NONE = ()

# Names the config maps with dns.hosts.  tls443.test is filled in per case (random 127/8).
LABEL63 = "a" * 63
LONG253 = ".".join([LABEL63, LABEL63, LABEL63, "b" * 56, "test"])  # 253 bytes
assert len(LONG253) == 253
HOSTS = {
    "origin.test": ["127.0.0.1"],
    "rec.test": ["127.0.0.1"],
    "tls.test": ["127.0.0.1"],
    "other.test": ["127.0.0.1"],
    "evil.test": ["127.0.0.1"],
    "self.test": ["127.0.0.1"],
    "api.example.test": ["127.0.0.1"],
    LABEL63 + ".test": ["127.0.0.1"],
    LONG253: ["127.0.0.1"],
    "lo.test": ["127.0.0.1"],
    "private.test": ["10.0.0.1"],
    "meta.test": ["169.254.169.254"],
    "alimeta.test": ["100.100.100.200"],
    "cgnat.test": ["100.64.0.1"],
    "zero.test": ["0.0.0.0"],
    "v6lo.test": ["::1"],
    "ec2v6.test": ["fd00:ec2::254"],
    "mapped.test": ["::ffff:127.0.0.1"],
    "nat64.test": ["64:ff9b::7f00:1"],
    "sixtofour.test": ["2002:7f00:1::1"],
    "teredo.test": ["2001:0:4136:e378:8000:63bf:80ff:fffe"],
    "mappedself.test": ["::ffff:127.0.0.1"],
}


def with_port(entries):
    return [e + ":*" for e in entries]


def allow(*entries):
    """A sandbox bound allowing exactly these hosts (any port)."""
    return {"allowDomains": with_port(entries), "enforce": "sandbox"}


def deny(*entries):
    return {"domains": with_port(entries)}


def req(method, target, host=None, headers=b"", version=b"HTTP/1.1", body=b""):
    """Request bytes; host None means the URI's authority (or the CONNECT target)."""
    if isinstance(target, str):
        target = target.encode("latin-1")
    if host is None:
        host = target.split(b"://", 1)[1].split(b"/", 1)[0] if b"://" in target else target
    elif isinstance(host, str):
        host = host.encode("latin-1")
    head = method.encode() + b" " + target + b" " + version + b"\r\n"
    if host != b"":
        head += b"Host: " + host + b"\r\n"
    return head + headers + b"\r\n" + body


def get(target, **kw):
    return req("GET", target, **kw)


def connect(target, **kw):
    return req("CONNECT", target, **kw)


# ---------------------------------------------------------------------------------------------
# Rows.

def H(name, send, status, reason=None, rule=None, bound=None, addrs=LOOPBACK, limits=None,
      audit=None, upstream=None, sessions=None, why=""):
    """A request row.  status: int or tuple of acceptable ints (a tuple holding 200 marks a
    leniency that is safe only when upstream's checks pass); upstream(ctx): checks on what the
    origins received when the answer is 200; sessions: a whole sessions block instead of a
    default session with bound."""
    return dict(kind="H", name=name, send=send, status=status, reason=reason, rule=rule,
                bound=bound, addrs=addrs, limits=limits, audit=audit or {}, upstream=upstream,
                sessions=sessions, why=why)


def T(name, target, payload, outcome, rule=None, bound=None, addrs=LOOPBACK, limits=None,
      with_connect=False, drip=False, wait=5.0, why=""):
    """A tunnel row: CONNECT target, then payload (bytes, or a function of nothing returning
    bytes); outcome "pass" or the deny reason."""
    return dict(kind="T", name=name, target=target, payload=payload, outcome=outcome, rule=rule,
                bound=bound, addrs=addrs, limits=limits, with_connect=with_connect, drip=drip,
                wait=wait, why=why)


def F(name, fn, sent, answer, why=""):
    return dict(kind="F", name=name, fn=fn, sent=sent, answer=answer, why=why)


# ---------------------------------------------------------------------------------------------
# Upstreams that record exactly what reached them.

def recorder_443(h, mode):
    """A Recorder on port 443 of a random 127/8 address (so parallel suites never collide)."""
    for _ in range(20):
        addr = "127.%d.%d.%d" % (random.randint(10, 250), random.randint(0, 255),
                                 random.randint(1, 254))
        try:
            return h.add(Recorder(addr, 443, mode))
        except PermissionError:
            skip("binding port 443 needs root or a private network namespace (%s)" % NO_NETNS)
        except OSError:
            continue
    raise TestFailure("could not bind any 127/8 address on port 443 (needs root or "
                      "CAP_NET_BIND_SERVICE)")


# ---------------------------------------------------------------------------------------------
# ClientHellos: a real one from Python's ssl module, then edited.

def hello_big(name=b"evil.test"):
    """A ClientHello over 16 KiB (a large padding extension), in two records."""
    msg = hello_msg(((0, name),), pad=17000)
    return records(msg, cuts=(16000,))


def hello_tiny_records(name=b"evil.test"):
    """A ClientHello in one-byte records: hundreds of records before the name is whole."""
    msg = hello_msg(((0, name),))
    return records(msg, cuts=range(1, len(msg)))


def hello_sslv2():
    """An SSLv2-compatible ClientHello header (the 0x80 two-byte length form)."""
    body = b"\x01\x03\x01\x00\x03\x00\x00\x00\x10\x00\x00\x2f" + b"\x11" * 16
    return bytes([0x80, len(body)]) + body


def hello_name_split():
    msg = hello_msg(((0, b"tls.test"),))
    at = msg.index(b"tls.test") + 3
    return records(msg, cuts=(at,))


def hello_truncated_record():
    """The record header promises the whole ClientHello; only half of it follows."""
    full = hello()
    return full[:len(full) // 2]


def hello_truncated_message():
    """A complete record whose handshake header claims 200 more bytes than the record carries,
    followed by a record that is not a handshake."""
    msg = hello_msg(((0, b"tls.test"),))
    body_len = int.from_bytes(msg[1:4], "big")
    bad = msg[:1] + _u24(body_len + 200) + msg[4:]
    return records(bad) + records(b"\x01\x00", ctype=0x15)


# ---------------------------------------------------------------------------------------------
# Expected rules.

def mismatch(sni, host):
    return "TLS SNI %s is not the tunnel's host %s" % (sni, host)


PRIVATE_RULE = "dns.allowAddresses (10.0.0.1 is private 10.0.0.0/8)"

LOOPBACK_SPELLINGS = ["127.0.0.1", "127.1", "127.0.1", "0x7f.0.0.1", "0x7F.1", "0177.0.0.1",
                      "0000177.0.0.1", "017700000001", "2130706433", "127.0.0.0x1",
                      "0x7f000001", "0x7f.0x0.0x0.0x1", "127.0.0.1."]

ORIGIN = "http://origin.test:{origin}/"
REC = "http://rec.test:{rec}/"


def rows_ip_spellings():
    rows = []
    for s in LOOPBACK_SPELLINGS:
        rows.append(H("ip-literal: %s (GET, no allow entry)" % s, get("http://%s:{rec}/" % s),
                      403, "ip-literal", None, audit={"event": "request", "host": "127.0.0.1"},
                      why="every inet_aton spelling is 127.0.0.1, never a name to resolve"))
    for s in ["127.1", "0x7f000001", "2130706433", "0177.0.0.1", "127.0.0.0x1"]:
        rows.append(H("ip-literal: %s (CONNECT)" % s, connect("%s:{rec}" % s), 403, "ip-literal",
                      None, audit={"event": "connect", "host": "127.0.0.1"},
                      why="the CONNECT authority is canonicalised like a URI host"))
    for s in ["127.0.0.1", "127.1", "0x7f.0.0.1", "017700000001", "2130706433", "127.0.0.0x1"]:
        rows.append(H("address-denied: %s allowed by the bound, loopback not in allowAddresses"
                      % s, get("http://%s:{rec}/" % s), 403, "address-denied", "127.0.0.1",
                      bound=allow("127.0.0.1"), addrs=NONE,
                      audit={"event": "request", "host": "127.0.0.1"},
                      why="a bound can name a literal; loopback stays denied without "
                          "dns.allowAddresses"))
    for s in ["0x7f.1", "2130706433", "0177.0.0.01"]:
        rows.append(H("allowed neighbour: %s reaches an entry for 127.0.0.1" % s,
                      get("http://%s:{rec}/n" % s), 200, bound=allow("127.0.0.1"),
                      audit={"event": "request", "host": "127.0.0.1"},
                      upstream=lambda x: check_eq(x["rec"].accepted, 1, "recorder connections"),
                      why="canonical spelling matches the entry, so the deny rows are not "
                          "'deny every odd spelling'"))
    return rows


DENIED_LITERALS = [
    # (literal as in the URI, allow entry, rule substring)
    ("10.0.0.1", "10.0.0.1", PRIVATE_RULE),
    ("192.168.1.1", "192.168.1.1", "192.168.1.1"),
    ("172.16.0.1", "172.16.0.1", "172.16.0.1"),
    ("169.254.169.254", "169.254.169.254", "169.254.169.254"),
    ("0xa9fea9fe", "169.254.169.254", "169.254.169.254"),
    ("2852039166", "169.254.169.254", "169.254.169.254"),
    ("100.100.100.200", "100.100.100.200", "100.100.100.200"),
    ("100.64.0.1", "100.64.0.1", "100.64.0.1"),
    ("0.0.0.0", "0.0.0.0", "0.0.0.0"),
    ("0", "0.0.0.0", "0.0.0.0"),
    ("224.0.0.1", "224.0.0.1", "224.0.0.1"),
    ("255.255.255.255", "255.255.255.255", "255.255.255.255"),
    ("[::1]", "[::1]", None),
    ("[fd00:ec2::254]", "[fd00:ec2::254]", None),
    ("[fe80::1]", "[fe80::1]", None),
    ("[::ffff:127.0.0.1]", "[::ffff:127.0.0.1]", "127.0.0.0/8"),
    ("[::ffff:7f00:1]", "[::ffff:7f00:1]", "127.0.0.0/8"),
    ("[::ffff:169.254.169.254]", "[::ffff:169.254.169.254]", "169.254."),
    ("[::127.0.0.1]", "[::127.0.0.1]", "127.0.0.0/8"),
    ("[64:ff9b::7f00:1]", "[64:ff9b::7f00:1]", "127.0.0.0/8"),
    ("[64:ff9b::a9fe:a9fe]", "[64:ff9b::a9fe:a9fe]", "169.254."),
    ("[2002:7f00:1::1]", "[2002:7f00:1::1]", "127.0.0.0/8"),
    ("[2002:a00:1::1]", "[2002:a00:1::1]", "10.0.0.0/8"),
    ("[2001:0:4136:e378:8000:63bf:80ff:fffe]", "[2001:0:4136:e378:8000:63bf:80ff:fffe]",
     "127.0.0.0/8"),
    ("[2001:0:4136:e378:8000:63bf:5601:5601]", "[2001:0:4136:e378:8000:63bf:5601:5601]",
     "169.254."),
]


def rows_denied_literals():
    rows = []
    for lit, entry, rule in DENIED_LITERALS:
        rows.append(H("address-denied: literal %s allowed by the bound" % lit,
                      get("http://%s:{closed}/" % lit), 403, "address-denied", rule,
                      bound=allow(entry), addrs=NONE, audit={"event": "request"},
                      why="loopback, private, metadata and their IPv6 embeddings are denied "
                          "even when an allow entry names the literal"))
    for lit, entry, rule in [DENIED_LITERALS[3], DENIED_LITERALS[13], DENIED_LITERALS[15],
                             DENIED_LITERALS[23]]:
        rows.append(H("address-denied: CONNECT %s allowed by the bound" % lit,
                      connect("%s:{closed}" % lit), 403, "address-denied", rule,
                      bound=allow(entry), addrs=NONE, audit={"event": "connect"},
                      why="the same address policy guards tunnels"))
    for lit in ["10.0.0.1", "169.254.169.254", "[::1]", "[fd00:ec2::254]", "[::ffff:127.0.0.1]"]:
        rows.append(H("ip-literal: %s with no allow entry" % lit, get("http://%s:{closed}/" % lit),
                      403, "ip-literal", None, addrs=NONE, audit={"event": "request"},
                      why="an IP literal passes only where an allow entry names it"))
    return rows


DENIED_NAMES = [
    ("private.test", PRIVATE_RULE), ("meta.test", "169.254.169.254"),
    ("alimeta.test", "100.100.100.200"), ("cgnat.test", "100.64.0.1"), ("zero.test", "0.0.0.0"),
    ("lo.test", "127.0.0.1"), ("v6lo.test", None), ("ec2v6.test", None),
    ("mapped.test", "127.0.0.0/8"), ("nat64.test", "127.0.0.0/8"),
    ("sixtofour.test", "127.0.0.0/8"), ("teredo.test", "127.0.0.0/8"),
]


def rows_denied_names():
    rows = []
    for name, rule in DENIED_NAMES:
        rows.append(H("address-denied: allowed name %s resolves to a denied address" % name,
                      get("http://%s:{closed}/" % name), 403, "address-denied", rule,
                      bound=allow(name), addrs=NONE,
                      audit={"event": "request", "host": name},
                      why="every resolved address is judged, IPv4 decoded out of IPv6"))
    rows.append(H("address-denied: CONNECT private.test", connect("private.test:443"), 403,
                  "address-denied", PRIVATE_RULE, bound=allow("private.test"), addrs=NONE,
                  audit={"event": "connect", "host": "private.test"},
                  why="tunnels are judged by the same address policy"))
    rows.append(H("address-denied: CONNECT meta.test:80", connect("meta.test:80"), 403,
                  "address-denied", "169.254.169.254", bound=allow("meta.test"), addrs=NONE,
                  audit={"event": "connect", "host": "meta.test"},
                  why="the cloud metadata service is never reachable by name"))
    rows.append(H("address-denied: private.test with loopback carved out",
                  get("http://private.test:{closed}/"), 403, "address-denied", PRIVATE_RULE,
                  audit={"event": "request", "host": "private.test"},
                  why="an exception for 127/8 is no exception for 10/8"))
    return rows


def rows_names():
    rows = [
        H("canonical: Api.Example.TEST. is api.example.test",
          get("http://Api.Example.TEST.:{rec}/c"), 200, bound=allow("api.example.test"),
          audit={"event": "request", "host": "api.example.test"},
          upstream=lambda x: check_eq(x["rec"].accepted, 1, "recorder connections"),
          why="case and one trailing dot do not make a different host"),
        H("canonical: EvIl.TeSt. hits the deny entry", get("http://EvIl.TeSt.:{rec}/"), 403,
          "host-denied", "evil.test", bound=deny("evil.test"),
          audit={"event": "request", "host": "evil.test"},
          why="a deny list cannot be dodged by case or a trailing dot"),
        H("deny entry without a port covers every port", get("http://evil.test:{rec}/"), 403,
          "host-denied", "evil.test", bound={"domains": ["evil.test"]},
          audit={"event": "request", "host": "evil.test"},
          why="a deny list that meant only 80 and 443 would leave every other port open"),
        H("deny wins over allow for a spelled IP literal", get("http://0x7f.1:{rec}/"), 403,
          "host-denied", "127.0.0.1",
          bound={"allowDomains": ["127.0.0.1:*"], "domains": ["127.0.0.1:*"],
                 "enforce": "sandbox"}, audit={"event": "request", "host": "127.0.0.1"},
          why="the deny list sees the canonical address too"),
        H("canonical: CONNECT EVIL.TEST.:443 hits the deny entry", connect("EVIL.TEST.:443"), 403,
          "host-denied", "evil.test", bound=deny("evil.test"),
          audit={"event": "connect", "host": "evil.test"},
          why="the CONNECT authority is canonicalised too"),
        H("scheme: upper-case HTTP:// to a denied host", get("HTTP://EVIL.test:{rec}/"),
          (400, 403), ("bad-request", "host-denied"), bound=deny("evil.test"),
          why="the scheme is case-insensitive; an odd spelling must not skip the policy"),
        H("scheme: https:// absolute URI to a denied host", get("https://evil.test:{rec}/"),
          (400, 403), ("bad-request", "host-denied"), bound=deny("evil.test"),
          why="whatever egressd does with https:// in a plain request, the deny list holds"),
        H("scheme: ftp:// to a denied host", get("ftp://evil.test:{rec}/"), (400, 403),
          ("bad-request", "host-denied"), bound=deny("evil.test"),
          why="an unknown scheme must not reach a denied host"),
        H("scheme: http:/ with one slash", get("http:/evil.test:{rec}/", host=b"origin.test"),
          (400, 403), ("bad-request", "host-denied"), bound=deny("evil.test"),
          why="a malformed authority must not fall back to the Host header"),
        H("allowed neighbour: 63-byte label", get("http://%s.test:{rec}/" % LABEL63), 200,
          audit={"event": "request", "host": LABEL63 + ".test"},
          why="the limits are exact: 63 is still a label"),
        H("allowed neighbour: 253-byte name", get("http://%s:{rec}/" % LONG253), 200,
          audit={"event": "request", "host": LONG253},
          why="the limits are exact: 253 is still a name"),
    ]
    bad = [
        ("raw non-ASCII host", b"http://b\xc3\xbccher.test:{rec}/"),
        ("raw Latin-1 byte in host", b"http://evil\xe9.test:{rec}/"),
        ("full-width digits in an IPv4 host", "http://１２７.0.0.1:{rec}/".encode()),
        ("full-width digits in the port", "http://origin.test:８０/".encode()),
        ("underscore in a label", b"http://ev_il.test:{rec}/"),
        ("control byte in the host", b"http://origin\x01.test:{rec}/"),
        ("DEL in the host", b"http://origin\x7f.test:{rec}/"),
        ("empty label", b"http://origin..test:{rec}/"),
        ("leading dot", b"http://.origin.test:{rec}/"),
        ("two trailing dots", b"http://origin.test..:{rec}/"),
        ("64-byte label", ("http://%s.test:{rec}/" % ("a" * 64)).encode()),
        ("254-byte name", ("http://a%s:{rec}/" % LONG253).encode()),
        ("user@host", b"http://user@origin.test:{rec}/"),
        ("user:password@host", b"http://user:pw@origin.test:{rec}/"),
        ("allowed-looking userinfo before a denied host", b"http://origin.test:{rec}@evil.test/"),
        ("percent-encoded dot in the host", b"http://evil%2etest:{rec}/"),
        ("backslash in the authority", b"http://origin.test\\@evil.test:{rec}/"),
        ("port 0", b"http://origin.test:0/"),
        ("port 65536", b"http://origin.test:65536/"),
        ("port 2^32+80", b"http://origin.test:4294967376/"),
        ("port -1", b"http://origin.test:-1/"),
        ("port +80", b"http://origin.test:+80/"),
        ("port 0x50", b"http://origin.test:0x50/"),
        ("unbracketed IPv6", b"http://::1:{rec}/"),
        ("IPv6 zone id (%25)", b"http://[fe80::1%25lo]:{rec}/"),
        ("IPv6 zone id (raw %)", b"http://[fe80::1%lo]:{rec}/"),
        ("unclosed IPv6 bracket", b"http://[::1:{rec}/"),
        ("IPv4 in brackets", b"http://[127.0.0.1]:{rec}/"),
    ]
    for what, target in bad:
        rows.append(H("bad-request: %s" % what, get(target, host=b"origin.test"), 400,
                      "bad-request", why="hosts that are not canonical ASCII names, addresses "
                      "or strict ports are refused, never guessed"))
    bad_connect = [
        ("CONNECT without a port", b"origin.test"),
        ("CONNECT port 0", b"origin.test:0"),
        ("CONNECT port 65536", b"origin.test:65536"),
        ("CONNECT user@host", b"user@origin.test:443"),
        ("CONNECT unbracketed IPv6", b"::1:443"),
        ("CONNECT IPv6 zone id", b"[fe80::1%25eth0]:443"),
        ("CONNECT absolute URI", b"http://origin.test:443/"),
        ("CONNECT underscore", b"ev_il.test:443"),
        ("CONNECT full-width port", "origin.test:４４３".encode()),
        ("CONNECT non-ASCII host", b"b\xc3\xbccher.test:443"),
    ]
    for what, target in bad_connect:
        rows.append(H("bad-request: %s" % what, connect(target, host=b"origin.test:443"), 400,
                      "bad-request", why="the CONNECT authority follows the same host rules"))
    return rows


def _body_req(extra, body=b""):
    return (b"POST http://origin.test:{origin}/s HTTP/1.1\r\nHost: origin.test:{origin}\r\n" +
            extra + b"\r\n" + body)


def rows_smuggling():
    bad = [
        ("Content-Length and Transfer-Encoding",
         _body_req(b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
                   b"0\r\n\r\nGET http://evil.test/ HTTP/1.1\r\n\r\n")),
        ("Transfer-Encoding then Content-Length",
         _body_req(b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", b"0\r\n\r\n")),
        ("two disagreeing Content-Lengths",
         _body_req(b"Content-Length: 5\r\nContent-Length: 6\r\n", b"hello!")),
        ("Content-Length list 5, 6", _body_req(b"Content-Length: 5, 6\r\n", b"hello!")),
        ("Content-Length +5", _body_req(b"Content-Length: +5\r\n", b"hello")),
        ("Content-Length -1", _body_req(b"Content-Length: -1\r\n")),
        ("Content-Length 0x5", _body_req(b"Content-Length: 0x5\r\n", b"hello")),
        ("Content-Length 5a", _body_req(b"Content-Length: 5a\r\n", b"hello")),
        ("Content-Length empty", _body_req(b"Content-Length: \r\n")),
        ("Content-Length 2^64+5", _body_req(b"Content-Length: 18446744073709551621\r\n",
                                            b"hello")),
        ("Transfer-Encoding gzip", _body_req(b"Transfer-Encoding: gzip\r\n", b"x")),
        ("Transfer-Encoding identity", _body_req(b"Transfer-Encoding: identity\r\n")),
        ("Transfer-Encoding chunked, gzip",
         _body_req(b"Transfer-Encoding: chunked, gzip\r\n", b"0\r\n\r\n")),
        ("Transfer-Encoding chunked, chunked",
         _body_req(b"Transfer-Encoding: chunked, chunked\r\n", b"0\r\n\r\n")),
        ("Transfer-Encoding twice",
         _body_req(b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
                   b"0\r\n\r\n")),
        ("Transfer-Encoding xchunked", _body_req(b"Transfer-Encoding: xchunked\r\n",
                                                 b"0\r\n\r\n")),
        ("Transfer-Encoding chunked with a vertical tab",
         _body_req(b"Transfer-Encoding: \x0bchunked\r\n", b"0\r\n\r\n")),
        ("Transfer-Encoding in HTTP/1.0",
         b"POST http://origin.test:{origin}/s HTTP/1.0\r\nHost: origin.test:{origin}\r\n"
         b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
        ("space before the colon (Transfer-Encoding )",
         _body_req(b"Transfer-Encoding : chunked\r\nContent-Length: 5\r\n", b"0\r\n\r\n")),
        ("obs-fold continuation line", get(ORIGIN, headers=b"X-A: one\r\n two\r\n")),
        ("obs-fold with a tab", get(ORIGIN, headers=b"X-A: one\r\n\ttwo\r\n")),
        ("bare LF line ends", b"GET http://origin.test:{origin}/ HTTP/1.1\nHost: "
                              b"origin.test:{origin}\n\n"),
        ("one bare LF among CRLFs", get(ORIGIN, headers=b"X-A: a\nX-B: b\r\n")),
        ("bare CR inside a value", get(ORIGIN, headers=b"X-A: a\rX-B: b\r\n")),
        ("bare CR line end", b"GET http://origin.test:{origin}/ HTTP/1.1\r\nHost: "
                             b"origin.test:{origin}\rX-A: b\r\n\r\n"),
        ("space in a header name", get(ORIGIN, headers=b"X A: b\r\n")),
        ("parenthesis in a header name", get(ORIGIN, headers=b"X(A): b\r\n")),
        ("quote in a header name", get(ORIGIN, headers=b"X\"A: b\r\n")),
        ("NUL in a header name", get(ORIGIN, headers=b"X\x00A: b\r\n")),
        ("empty header name", get(ORIGIN, headers=b": b\r\n")),
        ("header line without a colon", get(ORIGIN, headers=b"X-A b\r\n")),
        ("NUL in a header value", get(ORIGIN, headers=b"X-A: a\x00b\r\n")),
        ("SOH in a header value", get(ORIGIN, headers=b"X-A: a\x01b\r\n")),
        ("ESC in a header value", get(ORIGIN, headers=b"X-A: a\x1bb\r\n")),
        ("DEL in a header value", get(ORIGIN, headers=b"X-A: a\x7fb\r\n")),
        ("control byte in the Host value", get(ORIGIN, host=b"origin.test\x01:1")),
        ("tab in the request target", get(b"http://origin.test:{origin}/a\tb")),
        ("SOH in the request target", get(b"http://origin.test:{origin}/a\x01b")),
        ("DEL in the request target", get(b"http://origin.test:{origin}/a\x7fb")),
        ("NUL in the request target", get(b"http://origin.test:{origin}/a\x00b")),
        ("control byte in the method", req("G\x01ET", ORIGIN)),
        ("HTTP/1.2", get(ORIGIN, version=b"HTTP/1.2")),
        ("HTTP/2.0", get(ORIGIN, version=b"HTTP/2.0")),
        ("HTTP/0.9 (no version)", b"GET http://origin.test:{origin}/\r\n\r\n"),
        ("HTTP/3.0", get(ORIGIN, version=b"HTTP/3.0")),
        ("lower-case http/1.1", get(ORIGIN, version=b"http/1.1")),
        ("HTTP/1.10", get(ORIGIN, version=b"HTTP/1.10")),
        ("relative-form request", b"GET / HTTP/1.1\r\nHost: origin.test:{origin}\r\n\r\n"),
        ("asterisk-form request", b"OPTIONS * HTTP/1.1\r\nHost: origin.test:{origin}\r\n\r\n"),
    ]
    rows = []
    for what, data in bad:
        rows.append(H("smuggling: %s" % what, data, 400, "bad-request",
                      why="a head two parsers could read differently is refused, so egressd "
                          "and the origin never disagree about where a request ends"))
    rows += [
        H("smuggling: two spaces in the request line",
          b"GET  http://rec.test:{rec}/p?q=1 HTTP/1.1\r\nHost: rec.test:{rec}\r\n\r\n",
          400, "bad-request",
          why="RFC 9112 3: exactly one SP between the parts; a lenient split is a second parser "
              "that can disagree"),
        H("smuggling: a tab between request-line parts",
          b"GET\thttp://rec.test:{rec}/ HTTP/1.1\r\nHost: rec.test:{rec}\r\n\r\n",
          400, "bad-request", why="only SP separates the request line"),
        H("smuggling: two Host headers", get(REC + "p?q=1", headers=b"Host: evil.test\r\n"),
          400, "bad-request", bound=deny("evil.test"),
          why="RFC 9112 3.2: more than one Host is 400"),
        H("smuggling: Host header twice with the same value",
          get(REC, headers=b"Host: rec.test:{rec}\r\n"), 400, "bad-request",
          why="RFC 9112 3.2 counts field lines, not values"),
        H("method-not-allowed: TRACE", req("TRACE", ORIGIN), 405, "method-not-allowed",
          why="TRACE echoes credentials back (cross-site tracing)"),
        H("method-not-allowed: TRACK", req("TRACK", ORIGIN), 405, "method-not-allowed",
          why="TRACK is IIS's TRACE"),
        H("uri-too-long: request line over maxHeaderBytes",
          get("http://origin.test:{origin}/" + "a" * 5000), 414, "uri-too-long",
          limits={"maxHeaderBytes": 4096}, why="bounded memory per request head"),
        H("headers-too-large: one 8 KiB header over maxHeaderBytes 4096",
          get(ORIGIN, headers=b"X-Big: " + b"b" * 8000 + b"\r\n"), 431, "headers-too-large",
          limits={"maxHeaderBytes": 4096}, why="bounded memory per request head"),
        H("headers-too-large: 2000 small headers",
          get(ORIGIN, headers=b"".join(b"X-%d: v\r\n" % i for i in range(2000))), 431,
          "headers-too-large", limits={"maxHeaderBytes": 65536},
          why="bounded field count per request head"),
        H("allowed neighbour: chunked POST",
          _body_req(b"Transfer-Encoding: chunked\r\n", b"5\r\nhello\r\n0\r\n\r\n"), 200,
          audit={"event": "request", "method": "POST"},
          upstream=lambda x: check_origin_body(x, 5, True),
          why="a single final chunked passes, so the smuggling rows are not 'deny every body'"),
        H("allowed neighbour: Content-Length POST", _body_req(b"Content-Length: 5\r\n",
                                                              b"hello"), 200,
          audit={"event": "request", "method": "POST"},
          upstream=lambda x: check_origin_body(x, 5, False),
          why="a plain body passes"),
        H("allowed neighbour: HTTP/1.0 GET", get(ORIGIN, version=b"HTTP/1.0"), 200,
          audit={"event": "request"}, why="HTTP/1.0 is one of the two versions forwarded"),
        H("allowed neighbour: tab in a header value", get(ORIGIN, headers=b"X-A: a\tb\r\n"),
          200, audit={"event": "request"}, why="HTAB is legal inside a field value"),
    ]
    return rows


def check_origin_body(x, n, chunked):
    reqs = x["origin"].requests
    check_eq(len(reqs), 1, "requests at the origin")
    info = json.loads(x["response"].body.decode())
    check_eq(info["body_len"], n, "body length at the origin")
    check_eq(info["chunked"], chunked, "chunked at the origin")


def rec_head(x, n=1):
    heads = x["rec"].heads()
    check_eq(len(heads), n, "request heads at the recorder (%r)" % heads)
    return heads[0]


def check_rebuilt(x):
    head = rec_head(x)
    lines = head.split(b"\r\n")
    check_eq(lines[0], b"GET /p?q=1 HTTP/1.1", "request line at the origin")
    hosts = [ln for ln in lines[1:] if ln.lower().startswith(b"host:")]
    check_eq(hosts, [b"Host: rec.test:%d" % x["ports"]["rec"]], "Host header(s) at the origin")
    low = head.lower()
    check(b"evil" not in low, "the denied Host value reached the origin: %r" % head)
    for name in (b"proxy-connection", b"proxy-authorization", b"keep-alive", b"x-drop",
                 b"upgrade", b"te:", b"trailer"):
        check(name not in low, "hop-by-hop %r reached the origin: %r" % (name, head))
    check(b"x-keep: 1" in low, "an end-to-end header was dropped: %r" % head)


AGENT_AUTH = b"Basic " + __import__("base64").b64encode(b"agent:agent-token")
AGENT_SESSIONS = {"default": {"bound": {"network": {"domains": ["rec.test:*"]}}},
                  "agent": {"auth": {"token": "agent-token"},
                            "bound": {"network": deny("evil.test")}}}


def rows_rebuild():
    return [
        H("Host vs URI: Host names a denied host, the URI an allowed one",
          get(REC + "p?q=1", host=b"evil.test",
              headers=b"Connection: keep-alive, X-Drop\r\nKeep-Alive: timeout=5\r\n"
                      b"Proxy-Connection: keep-alive\r\nProxy-Authorization: " +
                      AGENT_AUTH + b"\r\n"
                      b"TE: trailers\r\nTrailer: X-T\r\nUpgrade: h2c\r\nX-Drop: 1\r\n"
                      b"X-Keep: 1\r\n"),
          200, sessions=AGENT_SESSIONS, audit={"event": "request", "host": "rec.test",
                                               "session": "agent"},
          upstream=check_rebuilt,
          why="the URI decides and is what is dialled; the origin sees a Host rebuilt from it "
              "and no hop-by-hop headers"),
        H("Host vs URI: URI names the denied host, Host an allowed one",
          get("http://evil.test:{rec}/", host=b"rec.test"), 403, "host-denied", "evil.test",
          bound=deny("evil.test"), audit={"event": "request", "host": "evil.test"},
          why="a friendly Host header does not launder a denied URI"),
        H("Host vs CONNECT: authority denied, Host allowed",
          connect("evil.test:{rec}", host=b"rec.test:443"), 403, "host-denied", "evil.test",
          bound=deny("evil.test"), audit={"event": "connect", "host": "evil.test"},
          why="the CONNECT authority decides"),
        H("Host vs URI: allowDomains and a Host naming another host",
          get(REC + "p?q=1", host=b"other.test", headers=b"X-Keep: 1\r\n"), 200,
          bound=allow("rec.test"), audit={"event": "request", "host": "rec.test"},
          upstream=lambda x: check_eq(
              [ln for ln in rec_head(x).split(b"\r\n") if ln.lower().startswith(b"host:")],
              [b"Host: rec.test:%d" % x["ports"]["rec"]], "Host at the origin"),
          why="a virtual-host switch through the Host header would reach an unallowed site on "
              "a shared address"),
    ]


def rows_loop():
    rows = []
    loop_bound = allow("127.0.0.1", "self.test", "0.0.0.0")
    for s in ["127.0.0.1", "127.1", "2130706433", "0x7f000001", "self.test"]:
        rows.append(H("loop: GET %s:PROXY" % s, get("http://%s:{proxy}/" % s), 508, "loop",
                      bound=loop_bound, audit={"event": "request"},
                      why="a request to egressd itself would be decided twice and could "
                          "amplify; answered 508 even when every allowance covers it"))
        rows.append(H("loop: CONNECT %s:PROXY" % s, connect("%s:{proxy}" % s), 508, "loop",
                      bound=loop_bound, audit={"event": "connect"},
                      why="a tunnel to egressd itself is a loop too"))
    rows.append(H("loop: GET 0.0.0.0:PROXY (Linux dials it as loopback)",
                  get("http://0.0.0.0:{proxy}/"), (403, 508), ("address-denied", "loop"),
                  bound=loop_bound, addrs=("127.0.0.0/8", "0.0.0.0/8"),
                  audit={"event": "request"},
                  why="0.0.0.0 reaches local listeners on Linux"))
    rows.append(H("loop: CONNECT 0.0.0.0:PROXY", connect("0.0.0.0:{proxy}"), (403, 508),
                  ("address-denied", "loop"), bound=loop_bound,
                  addrs=("127.0.0.0/8", "0.0.0.0/8"), audit={"event": "connect"},
                  why="0.0.0.0 reaches local listeners on Linux"))
    rows.append(H("loop: CONNECT [::ffff:127.0.0.1]:PROXY",
                  connect("[::ffff:127.0.0.1]:{proxy}"), (403, 508), ("address-denied", "loop"),
                  bound=allow("[::ffff:127.0.0.1]"), audit={"event": "connect"},
                  why="a mapped IPv6 spelling of the listener is still the listener"))
    rows.append(H("loop: CONNECT to a name resolving to ::ffff:127.0.0.1, proxy port",
                  connect("mappedself.test:{proxy}"), (403, 508), ("address-denied", "loop"),
                  audit={"event": "connect"},
                  why="a name an attacker controls can answer with a mapped loopback address; "
                      "allowAddresses 127.0.0.0/8 (the example config) covers the embedded "
                      "address, so only the loop check stands between it and the listener"))
    rows.append(H("loop: GET [::ffff:127.0.0.1]:PROXY",
                  get("http://[::ffff:127.0.0.1]:{proxy}/"), (403, 508), ("address-denied", "loop"),
                  bound=allow("[::ffff:127.0.0.1]"), audit={"event": "request"},
                  why="a mapped IPv6 spelling of the listener is still the listener"))
    return rows


def sni_name(n):
    return ((0, n),)


def rows_tls():
    tls = "tls.test:{rec}"
    rows = [
        T("SNI: matching SNI passes", tls, lambda: hello(), "pass",
          why="the allowed neighbour: the tunnel relays a ClientHello for its own host"),
        T("SNI: upper case and trailing dot canonicalise to the CONNECT host", tls,
          lambda: hello(sni_name(b"TLS.Test.")), "pass",
          why="the SNI is compared canonically, like the CONNECT host"),
        T("SNI: mismatch (evil.test)", tls, lambda: hello(sni_name(b"evil.test")),
          "sni-mismatch", mismatch("evil.test", "tls.test"),
          why="domain fronting: an allowed CONNECT host carrying a TLS session for another"),
        T("SNI: mismatch with another allowed host", tls, lambda: hello(sni_name(b"other.test")),
          "sni-mismatch", mismatch("other.test", "tls.test"), bound=allow("tls.test",
                                                                          "other.test"),
          why="the SNI must be the CONNECT host, not merely some allowed host"),
        T("SNI: mismatch sent in the same packet as the CONNECT", tls,
          lambda: hello(sni_name(b"evil.test")), "sni-mismatch",
          mismatch("evil.test", "tls.test"), with_connect=True,
          why="bytes pipelined behind the CONNECT head are peeked at too"),
        T("SNI: matching SNI in the same packet as the CONNECT", tls, lambda: hello(), "pass",
          with_connect=True, why="the allowed neighbour of the pipelined refusal"),
        T("port 443: non-TLS bytes in the same packet as the CONNECT", "tls443.test:443",
          b"GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n", "tls-invalid", with_connect=True,
          why="pipelined plain text on 443 is refused like any other"),
        T("SNI: mismatch dripped one byte at a time", tls,
          lambda: hello(sni_name(b"evil.test")), "sni-mismatch",
          mismatch("evil.test", "tls.test"), drip=True,
          why="a ClientHello spread over many reads is reassembled before the decision"),
        T("SNI: suffix trick tls.test.evil.test", tls,
          lambda: hello(sni_name(b"tls.test.evil.test")), "sni-mismatch",
          mismatch("tls.test.evil.test", "tls.test"), why="exact comparison, not prefix"),
        T("SNI: none for a named host", tls, lambda: hello(None), "sni-mismatch",
          why="without SNI the origin could serve any of its names"),
        T("SNI: none for an allowed IP literal", "127.0.0.1:{rec}", lambda: hello(None), "pass",
          bound=allow("127.0.0.1"),
          why="the bound allowed that address itself; there is no name to compare"),
        T("SNI: two server names", tls,
          lambda: hello(((0, b"tls.test"), (0, b"evil.test"))), "tls-invalid",
          why="servers differ on which of two names they use"),
        T("SNI: name type 1", tls, lambda: hello(((1, b"tls.test"),)), "tls-invalid",
          why="only host_name (0) is defined"),
        T("SNI: NUL inside the name", tls, lambda: hello(sni_name(b"tls.test\x00.evil.test")),
          "tls-invalid", why="C-string truncation would read tls.test"),
        T("SNI: underscore in the name", tls, lambda: hello(sni_name(b"tls_x.test")),
          "tls-invalid", why="the SNI obeys the host rules"),
        T("SNI: non-ASCII name", tls, lambda: hello(sni_name(b"t\xc3\xbcls.test")),
          "tls-invalid", why="the SNI obeys the host rules"),
        T("SNI: empty name", tls, lambda: hello(sni_name(b"")), "tls-invalid",
          why="an empty host_name is malformed"),
        T("SNI: 300-byte name", tls, lambda: hello(sni_name(b"a." * 150)), "tls-invalid",
          why="names over 253 bytes are malformed"),
        T("SNI: IP literal as the name", tls, lambda: hello(sni_name(b"127.0.0.1")),
          ("tls-invalid", "sni-mismatch"),
          why="RFC 6066 forbids literals in SNI; in any case it is not the tunnel's host"),
        T("SNI: list length longer than the extension", tls,
          lambda: hello(sni_data=_u16(200) + b"\x00" + _u16(8) + b"tls.test"), "tls-invalid",
          why="lengths that disagree are malformed"),
        T("SNI: extensions length overruns the ClientHello", tls,
          lambda: hello(ext_len_delta=40), "tls-invalid",
          why="lengths that disagree are malformed"),
        T("SNI: two server_name extensions (tls.test, then evil.test)", tls,
          lambda: hello(sni_name(b"tls.test"), second_sni=sni_name(b"evil.test")),
          ("tls-invalid", "sni-mismatch"),
          why="a duplicate extension is illegal, and parsers differ on which one they read"),
        T("SNI: two server_name extensions (evil.test, then tls.test)", tls,
          lambda: hello(sni_name(b"evil.test"), second_sni=sni_name(b"tls.test")),
          ("tls-invalid", "sni-mismatch"),
          why="whichever copy egressd reads, a tunnel for evil.test must not open"),
        T("SNI: 'tls.test..' (two trailing dots)", tls, lambda: hello(sni_name(b"tls.test..")),
          "tls-invalid", why="one trailing dot is canonical; two make an empty label"),
        T("SNI: mismatch in a ClientHello over 16 KiB", tls, hello_big,
          ("tls-invalid", "sni-mismatch"),
          why="size must not make egressd give up and relay unchecked"),
        T("SNI: mismatch in one-byte records", tls, hello_tiny_records,
          ("tls-invalid", "sni-mismatch"),
          why="a record count past what egressd reassembles must not make it relay unchecked"),
        T("SNI: name split across two records", tls, hello_name_split, "tls-invalid",
          why="a name in two records is read differently by different parsers"),
        T("SNI: truncated record then silence", tls, hello_truncated_record, "tls-invalid",
          limits={"headerTimeout": "2s"}, wait=8,
          why="a ClientHello that never completes is not relayed when the peek times out"),
        T("SNI: handshake longer than its record, then an alert", tls, hello_truncated_message,
          "tls-invalid", why="a handshake that does not continue in handshake records"),
        T("SNI: handshake that is not a ClientHello", tls, lambda: hello(hs_type=2),
          "tls-invalid", why="only a ClientHello starts a client's handshake"),
        T("port 443: non-TLS bytes", "tls443.test:443",
          b"GET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n", "tls-invalid",
          why="plain text on 443 is not the HTTPS the CONNECT promised"),
        T("port 443: TLS application-data record first", "tls443.test:443",
          b"\x17\x03\x03\x00\x05hello", "tls-invalid",
          why="a TLS session starts with a ClientHello"),
        T("port 443: SNI mismatch", "tls443.test:443",
          lambda: hello(sni_name(b"evil.test")), "sni-mismatch",
          mismatch("evil.test", "tls443.test"), why="the usual case on the usual port"),
        T("port 443: matching SNI passes", "tls443.test:443",
          lambda: hello(sni_name(b"tls443.test")), "pass", why="the allowed neighbour on 443"),
        T("port 443: SSLv2-compatible ClientHello", "tls443.test:443", hello_sslv2(),
          "tls-invalid", why="an SSLv2 hello has no SNI to check and is not TLS"),
        T("non-TLS bytes on another port pass", tls,
          b"SSH-2.0-OpenSSH_9.2\r\n", "pass", why="SSH and other protocols tunnel off 443"),
    ]
    return rows


# ---------------------------------------------------------------------------------------------
# Running rows.

def fill(data, ports):
    for k, v in ports.items():
        data = data.replace(b"{%s}" % k.encode(), str(v).encode())
    return data


def setup(h, cs, rec_mode="http"):
    """Origins and egressd for a row; the port-443 recorder only for rows that name
    tls443.test (binding 443 needs privilege that the other rows should not depend on)."""
    origin = h.origin()
    rec = h.add(Recorder(mode=rec_mode))
    hosts = dict(HOSTS)
    r443 = None
    if "tls443.test" in repr(cs.get("send", b"")) + cs.get("target", ""):
        r443 = recorder_443(h, rec_mode)
        hosts["tls443.test"] = [r443.addr]
    cfg = base_config(hosts, session_bound=cs.get("bound"), global_limits=cs.get("limits"),
                      allow_addresses=cs.get("addrs", LOOPBACK), sessions=cs.get("sessions"))
    e = h.egressd(cfg)
    ports = {"origin": origin.port, "rec": rec.port, "proxy": e.port, "closed": closed_port()}
    return e, {"origin": origin, "rec": rec, "r443": r443, "ports": ports}


def decisions_of(recs, client):
    return [r for r in recs if r["event"] in ("request", "connect") and r.get("client") == client]


def dump(recs):
    return "\n".join(json.dumps(r) for r in recs)


def one_of(got, want):
    return got in want if isinstance(want, tuple) else got == want


def run_h(h, cs):
    e, x = setup(h, cs)
    c = Conn(e.port)
    try:
        c.send(fill(cs["send"], x["ports"]))
        r = c.read_response()
        x["response"] = r
        if not one_of(r.status, cs["status"]):
            time.sleep(0.2)
            raise TestFailure("status: expected %r, got %d; response %r; decisions so far:\n%s"
                              % (cs["status"], r.status, r, dump(
                                  [d for d in e.audit() if "decision" in d])))
        reason = r.header("X-Egressd-Reason")
        if r.status == 200:
            check_eq(reason, None, "X-Egressd-Reason on an allowed request")
        else:
            check(one_of(reason, cs["reason"]), "X-Egressd-Reason: expected %r, got %r; "
                  "response %r" % (cs["reason"], reason, r))
            rule = r.header("X-Egressd-Rule") or ""
            if cs["rule"]:
                check(cs["rule"] in rule, "X-Egressd-Rule %r does not contain %r"
                      % (rule, cs["rule"]))
            line = r.body.decode("utf-8", "replace").rstrip("\n")
            check(line and "\n" not in line, "denial body is not one line: %r" % r.body)
            check(c.at_eof(3), "connection still open after a %d" % r.status)
    finally:
        c.close()
    if r.status != 200:
        check_eq(x["origin"].connections, 0, "connections at the HTTP origin after a denial")
        check_eq(x["rec"].accepted, 0, "connections at the recorder after a denial")
        if x["r443"] is not None:
            check_eq(x["r443"].accepted, 0, "connections at the port-443 recorder after a "
                     "denial")
    elif cs["upstream"]:
        cs["upstream"](x)
    check_eq(e.stop(), 0, "egressd exit code after SIGTERM")
    recs = e.audit()
    check_audit_log(recs)
    mine = decisions_of(recs, c.local)
    others = [r for r in recs if r["event"] in ("request", "connect") and r not in mine]
    check(not others, "decision records from another client (a loop?):\n%s" % dump(others))
    check(mine, "no decision record for client %s:\n%s" % (c.local, dump(recs)))
    rec = mine[-1]
    if r.status == 200:
        check_eq(rec.get("decision"), "allow", "audit decision")
    else:
        check_eq(rec.get("decision"), "deny", "audit decision; record %r" % rec)
        check(one_of(rec.get("reason"), cs["reason"]), "audit reason %r, expected %r"
              % (rec.get("reason"), cs["reason"]))
        check_eq(rec.get("status"), x["response"].status, "audit status")
        if cs["rule"]:
            check(cs["rule"] in (rec.get("rule") or ""), "audit rule %r does not contain %r"
                  % (rec.get("rule"), cs["rule"]))
    for k, v in cs["audit"].items():
        if k == "event":
            check(any(r["event"] == v for r in mine), "no %s record: %s" % (v, dump(mine)))
        else:
            check_eq(rec.get(k), v, "audit field %s" % k)
    closes = [r for r in recs if r["event"] == "close" and r.get("conn") == rec.get("conn")]
    check_eq(len(closes), 1, "close records for the connection")


def run_t(h, cs):
    e, x = setup(h, cs, rec_mode="tunnel")
    target = fill(cs["target"].encode(), x["ports"])
    payload = cs["payload"]() if callable(cs["payload"]) else cs["payload"]
    host = target.rsplit(b":", 1)[0].decode()
    up = x["r443"] if target.endswith(b":443") else x["rec"]
    c = Conn(e.port)
    answered = False  # refused with an HTTP answer instead of a 200
    try:
        head = connect(target)
        c.send(head + payload if cs["with_connect"] else head)
        c.sock.settimeout(5)
        try:
            st, _, hdrs = c.read_head()
        except socket.timeout:
            raise TestFailure("no answer to the CONNECT within 5s%s (got %r; %d bytes at the "
                              "upstream)" % (" sent with the tunnel's first bytes"
                                             if cs["with_connect"] else "", c.buf, up.total()))
        if cs["with_connect"] and st == 403 and cs["outcome"] != "pass":
            # Bytes behind the CONNECT head may be judged before any answer; then the refusal
            # is a 403 carrying the reason instead of a 200 and a close.
            answered = True
            hd = dict((k.lower(), v) for k, v in hdrs)
            c.read_exact(int(hd.get("content-length", "0")))
            reason = hd.get("x-egressd-reason")
            check(one_of(reason, cs["outcome"]), "403 with X-Egressd-Reason %r, expected %r"
                  % (reason, cs["outcome"]))
        else:
            check_eq(st, 200, "CONNECT status (headers %r)" % hdrs)
        if not cs["with_connect"]:
            if cs["drip"]:
                for i in range(len(payload)):
                    c.send(payload[i:i + 1])
                    time.sleep(0.002)
            else:
                c.send(payload)
        if cs["outcome"] == "pass":
            got = up.wait_bytes(len(payload), 5)
            check_eq(up.data(), payload, "bytes at the upstream (%d of %d)"
                     % (got, len(payload)))
        else:
            closed = c.at_eof(cs["wait"])
            check(closed, "tunnel still open %ss after a ClientHello that must be refused"
                  % cs["wait"])
            up.wait_closed(3)
            check_eq(up.total(), 0, "bytes that reached the upstream of a refused tunnel")
    finally:
        c.close()
    check_eq(e.stop(), 0, "egressd exit code after SIGTERM")
    recs = e.audit()
    check_audit_log(recs)
    mine = [r for r in decisions_of(recs, c.local) if r["event"] == "connect"]
    check(mine and (answered or mine[0].get("decision") == "allow"),
          "no allow connect record first:\n%s" % dump(recs))
    check_eq(mine[0].get("host"), host if not host[0].isdigit() else mine[0].get("host"),
             "connect record host")
    denies = [r for r in mine if r.get("decision") == "deny"]
    close = [r for r in recs if r["event"] == "close" and r.get("conn") == mine[0].get("conn")]
    check_eq(len(close), 1, "close records for the tunnel")
    if cs["outcome"] == "pass":
        check(not denies, "deny record for a tunnel that must pass: %s" % dump(denies))
        return
    check_eq(len(denies), 1, "connect records with decision deny (records:\n%s)" % dump(mine))
    d = denies[0]
    check(one_of(d.get("reason"), cs["outcome"]), "deny reason %r, expected %r"
          % (d.get("reason"), cs["outcome"]))
    if cs["rule"]:
        check_eq(d.get("rule"), cs["rule"], "deny rule")
    else:
        check(d.get("rule"), "deny record without a rule: %r" % d)
    check_eq(close[0].get("end"), "denied", "close end of a refused tunnel")
    check_eq(close[0].get("bytes_out"), 0, "bytes_out of a refused tunnel")


# ---------------------------------------------------------------------------------------------
# Function rows.

def f_pipeline_denied_second(h):
    """Two requests on one connection: the second to a denied host must be decided on its own,
    and the upstream connection of the first must not carry it."""
    e, x = setup(h, {"bound": deny("evil.test")})
    c = Conn(e.port)
    try:
        p = x["ports"]
        c.send(fill(get(REC + "first") + get("http://evil.test:{rec}/second"), p))
        r1 = c.read_response()
        check_eq(r1.status, 200, "first pipelined response (%r)" % r1)
        r2 = c.read_response()
        check_eq(r2.status, 403, "second pipelined response (%r)" % r2)
        check_eq(r2.header("X-Egressd-Reason"), "host-denied", "second response's reason")
    finally:
        c.close()
    heads = x["rec"].heads()
    check_eq(len(heads), 1, "requests at the recorder (%r)" % heads)
    check(heads[0].startswith(b"GET /first "), "recorder got %r" % heads[0])
    check_eq(e.stop(), 0, "exit code")
    check_audit_log(e.audit())


def f_pipeline_same_host(h, host=None):
    """Two pipelined requests to the same allowed host: two answers, in order.  host: the
    Host header of both (default: the URI's authority)."""
    e, x = setup(h, {})
    c = Conn(e.port)
    try:
        c.send(fill(get(REC + "a", host=host) + get(REC + "b", host=host), x["ports"]))
        r1 = c.read_response()
        r2 = c.read_response()
        check_eq((r1.status, r2.status), (200, 200), "statuses")
    finally:
        c.close()
    heads = x["rec"].heads()
    check_eq([hd.split(b" ")[1] for hd in heads], [b"/a", b"/b"], "paths at the recorder")
    check_eq(e.stop(), 0, "exit code")
    recs = e.audit()
    check_audit_log(recs)
    check_eq([r.get("path") for r in recs if r["event"] == "request"], ["/a", "/b"],
             "paths of the request records")


def f_chunked_then_denied(h):
    """A chunked POST whose last chunk is followed by a request to a denied host: the bytes
    after the terminating chunk are a request of their own and are decided as one."""
    e, x = setup(h, {"bound": deny("evil.test")})
    c = Conn(e.port)
    try:
        first = (b"POST http://rec.test:{rec}/c HTTP/1.1\r\nHost: rec.test:{rec}\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        c.send(fill(first + get("http://evil.test:{rec}/hidden"), x["ports"]))
        r1 = c.read_response()
        check_eq(r1.status, 200, "the chunked POST (%r)" % r1)
        r2 = c.read_response()
        check_eq((r2.status, r2.header("X-Egressd-Reason")), (403, "host-denied"),
                 "the request behind the last chunk (%r)" % r2)
    finally:
        c.close()
    data = x["rec"].data()
    check(b"hidden" not in data and b"evil" not in data,
          "the request behind the last chunk reached the origin: %r" % data)
    check_eq(e.stop(), 0, "exit code")


def f_chunk_size_overflow(h):
    """A chunk size that overflows 64 bits, then a request to a denied host: egressd must not
    read the overflow as a small chunk and pass what follows as body or as a request."""
    e, x = setup(h, {"bound": deny("evil.test")})
    c = Conn(e.port)
    statuses = []
    try:
        first = (b"POST http://rec.test:{rec}/c HTTP/1.1\r\nHost: rec.test:{rec}\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n1000000000000000a\r\nhello\r\n"
                 b"0\r\n\r\n")
        c.send(fill(first + get("http://evil.test:{rec}/hidden"), x["ports"]))
        c.sock.settimeout(3)
        try:
            while True:
                statuses.append(c.read_response().status)
        except (TestFailure, OSError):
            pass
    finally:
        c.close()
    time.sleep(0.3)
    data = x["rec"].data()
    check(b"hidden" not in data and b"evil" not in data and b"hello" not in data,
          "bytes after an overflowing chunk size reached the origin: %r (answers %r)"
          % (data, statuses))
    check(200 not in statuses[1:], "a second 200 after an overflowing chunk size: %r" % statuses)
    check_eq(e.stop(), 0, "exit code")
    recs = e.audit()
    check(not any(r.get("host") == "evil.test" and r.get("decision") == "allow" for r in recs),
          "evil.test allowed:\n%s" % dump(recs))


def f_pipeline_other_host(h):
    """Keep-alive to two different allowed hosts: each request goes to its own upstream."""
    e, x = setup(h, {})
    c = Conn(e.port)
    try:
        c.send(fill(get(REC + "a") + get(ORIGIN + "b"), x["ports"]))
        r1 = c.read_response()
        r2 = c.read_response()
        check_eq((r1.status, r2.status), (200, 200), "statuses")
        check_eq(r2.json()["path"], "/b", "path at the HTTP origin")
    finally:
        c.close()
    check_eq(len(x["rec"].heads()), 1, "requests at the recorder")
    check_eq(len(x["origin"].requests), 1, "requests at the HTTP origin")
    check_eq(e.stop(), 0, "exit code")


def f_smuggle_body(h):
    """CL+TE with a second request hidden in the body: 400, and nothing reaches any origin."""
    e, x = setup(h, {"bound": deny("evil.test")})
    c = Conn(e.port)
    try:
        body = b"0\r\n\r\nGET http://evil.test:%d/smuggled HTTP/1.1\r\nHost: evil.test\r\n\r\n" \
            % x["ports"]["rec"]
        c.send(fill(_body_req(b"Content-Length: %d\r\nTransfer-Encoding: chunked\r\n"
                              % len(body), body), x["ports"]))
        r = c.read_response()
        check_eq(r.status, 400, "status (%r)" % r)
        check(c.at_eof(3), "connection open after the 400")
    finally:
        c.close()
    check_eq(x["origin"].connections + x["rec"].accepted, 0, "connections at the origins")
    check_eq(e.stop(), 0, "exit code")
    recs = e.audit()
    check(not any(r.get("host") == "evil.test" for r in recs),
          "the smuggled request was decided as a request of its own:\n%s" % dump(recs))


def f_banner_first(h, delay=0.0, rounds=1):
    """A server that speaks first (SSH) on a non-443 port, delay seconds after it accepts: the
    client gets its 200, then the banner, before sending anything.  rounds tunnels in a row,
    because whether the banner or the 200 is written first is a race inside egressd."""
    banner = b"SSH-2.0-test-banner\r\n"
    srv = h.add(Recorder(mode="tunnel", banner=banner, delay=delay))
    e = h.egressd(base_config({"ssh.test": ["127.0.0.1"]}))
    for i in range(rounds):
        c = Conn(e.port)
        try:
            c.send(connect("ssh.test:%d" % srv.port))
            c.sock.settimeout(5)
            try:
                st, _, _ = c.read_head()
            except socket.timeout:
                raise TestFailure("round %d: no answer to the CONNECT within 5s (got %r); the "
                                  "server spoke %.1fs after accepting" % (i + 1, c.buf, delay))
            except TestFailure as ex:
                raise TestFailure("round %d: %s" % (i + 1, ex))
            check_eq(st, 200, "round %d: CONNECT status" % (i + 1))
            got = c.buf
            t0 = time.time()
            while len(got) < len(banner):
                try:
                    d = c.sock.recv(4096)
                except socket.timeout:
                    raise TestFailure("round %d: no banner %.1fs after the 200 (got %r); the "
                                      "server spoke %.1fs after accepting"
                                      % (i + 1, time.time() - t0, got, delay))
                if not d:
                    break
                got += d
            check_eq(got, banner, "round %d: banner read before the client sent a byte"
                     % (i + 1))
            c.send(b"SSH-2.0-client\r\n")
            want = 16 * (i + 1)
            check_eq(srv.wait_bytes(want, 5), want, "client bytes at the server after the banner")
        finally:
            c.close()
    check_eq(e.stop(), 0, "exit code")


def f_loop_session_escape(h):
    """A client whose session is chosen by its source address (127.0.0.5) and denies
    evil.test tunnels to egressd itself through a name that resolves to ::ffff:127.0.0.1; the
    looped connection comes from 127.0.0.1 and would be the unrestricted default session."""
    rec = h.add(Recorder())
    hosts = dict(HOSTS)
    sessions = {"default": {},
                "agent": {"clients": ["127.0.0.5/32"],
                          "bound": {"network": deny("evil.test")}}}
    e = h.egressd(base_config(hosts, sessions=sessions))
    sock = socket.create_connection(("127.0.0.1", e.port), timeout=5,
                                    source_address=("127.0.0.5", 0))
    c = Conn.__new__(Conn)
    c.sock, c.buf = sock, b""
    c.local = "127.0.0.5:%d" % sock.getsockname()[1]
    try:
        c.send(connect("mappedself.test:%d" % e.port))
        st, _, _ = c.read_head()
        if st == 200:
            c.send(get("http://evil.test:%d/escaped" % rec.port))
            try:
                r = c.read_response()
                inner = "%d %s" % (r.status, r.header("X-Egressd-Reason") or "")
            except (TestFailure, OSError) as ex:
                inner = "no answer (%s)" % ex
            time.sleep(0.3)
            raise TestFailure("CONNECT mappedself.test:PROXY answered 200 (a tunnel into "
                              "egressd itself); GET evil.test through it got %s; requests at "
                              "the origin: %r; decisions:\n%s"
                              % (inner, rec.heads(), dump([d for d in e.audit()
                                                           if "decision" in d])))
        check(st in (403, 508), "CONNECT to the proxy's own listener: status %d" % st)
    finally:
        c.close()
    check_eq(rec.accepted, 0, "connections at the origin")
    check_eq(e.stop(), 0, "exit code")
    recs = e.audit()
    mine = decisions_of(recs, c.local)
    check(mine and mine[0].get("session") == "agent", "the 127.0.0.5 client was not in session "
          "agent: %s" % dump(recs))


def f_loop_second_listener(h):
    """egressd listening on two ports: a request to the second one through the first is a
    loop too."""
    cfg = base_config({"self.test": ["127.0.0.1"]}, session_bound=allow("127.0.0.1", "self.test"))
    cfg["listen"]["proxy"] = ["127.0.0.1:0", "127.0.0.1:0"]
    e = h.egressd(cfg)
    deadline = time.time() + 5
    ports = []
    while time.time() < deadline:
        ports = [int(m) for m in re.findall(r"listening on 127\.0\.0\.1:(\d+)", e.stderr())]
        if len(ports) >= 2:
            break
        time.sleep(0.05)
    check(len(ports) >= 2, "egressd did not report two listeners: %r" % e.stderr())
    second = [p for p in ports if p != e.port][0]
    expect_loops(e, [(get(t), "GET %s through the first listener" % t)
                     for t in ("http://127.0.0.1:%d/" % second, "http://self.test:%d/" % second)])


def expect_loops(e, requests):
    """Sends each (bytes, what) on a connection of its own and wants 508 loop for each; then
    stops egressd and checks that only those clients have decisions (a loop adds egressd)."""
    for data, what in requests:
        c = Conn(e.port)
        try:
            c.send(data)
            r = c.read_response(head_only=True)
            check_eq((r.status, r.header("X-Egressd-Reason")), (508, "loop"),
                     "%s (%r)" % (what, r))
        finally:
            c.close()
    check_eq(e.stop(), 0, "exit code")
    recs = e.audit()
    clients = set(r.get("client") for r in recs if r["event"] in ("request", "connect"))
    check_eq(len(clients), len(requests), "clients with decisions (a loop would add egressd "
             "itself)")


OWN_ADDR = "10.255.77.1"  # given to lo in the private namespace (rerun_in_netns)
NO_NETNS = None  # why this file runs without a private network namespace


def own_address():
    """An IPv4 address of this host that is not loopback: the one the private namespace gives
    lo, else the first global one `ip` lists; None when there is none."""
    if in_netns():
        return OWN_ADDR
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"],
                             capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"inet (\d+\.\d+\.\d+\.\d+)/", out)
    return m.group(1) if m else None


def f_loop_wildcard_own_address(h):
    """A wildcard listener is reached through every address of the host: a request to one that
    the address policy allows is a loop, not a new client of egressd."""
    addr = own_address()
    if addr is None:
        skip("this host has no address but loopback, and no private network namespace (%s)"
             % NO_NETNS)
    cfg = base_config({}, session_bound=allow(addr), allow_addresses=("127.0.0.0/8", addr + "/32"))
    cfg["listen"]["proxy"] = ["0.0.0.0:0"]
    e = h.egressd(cfg)
    expect_loops(e, [(get("http://%s:%d/" % (addr, e.port)),
                      "GET %s:PROXY through a wildcard listener" % addr),
                     (connect("%s:%d" % (addr, e.port)),
                      "CONNECT %s:PROXY through a wildcard listener" % addr)])


def f_max_clients(h):
    e = h.egressd(base_config({"origin.test": ["127.0.0.1"]}, global_limits={"maxClients": 2}))
    held = []
    try:
        for _ in range(2):
            k = Conn(e.port)
            k.send(b"GET http://origin.test:1/ HTTP/1.1\r\n")
            held.append(k)
        time.sleep(0.3)
        c = Conn(e.port)
        held.append(c)
        t0 = time.time()
        r = c.read_response()
        check_eq((r.status, r.reason), (503, "Service Unavailable"), "status of client 3")
        check_eq(r.header("X-Egressd-Reason"), "limit-clients", "X-Egressd-Reason")
        check(c.at_eof(2), "client 3 not closed after the 503")
        check(time.time() - t0 < 2, "the 503 took %.1fs" % (time.time() - t0))
    finally:
        for k in held:
            k.close()
    check_eq(e.stop(), 0, "exit code")


def f_header_timeout(h):
    e = h.egressd(base_config({"origin.test": ["127.0.0.1"]},
                              global_limits={"headerTimeout": "1s"}))
    c = Conn(e.port, timeout=6)
    try:
        t0 = time.time()
        c.send(b"GET http://origin.test:1/ HTTP/1.1\r\nX-A: ")
        r = c.read_response()
        dt = time.time() - t0
        check_eq(r.status, 408, "status after a partial head (%r)" % r)
        check_eq(r.header("X-Egressd-Reason"), "header-timeout", "X-Egressd-Reason")
        check(0.8 < dt < 4, "408 after %.1fs with headerTimeout 1s" % dt)
    finally:
        c.close()
    check_eq(e.stop(), 0, "exit code")
    recs = e.audit()
    check(any(r["event"] == "close" and r.get("end") == "header-timeout" for r in recs),
          "no close record with end header-timeout:\n%s" % dump(recs))


def s_client(port, target, extra, timeout=10):
    try:
        return subprocess.run(["openssl", "s_client", "-proxy", "127.0.0.1:%d" % port,
                               "-connect", target] + extra, input=b"", stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, env=clean_env(), timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TestFailure("openssl s_client did not finish within %ss" % timeout)


def f_s_client_ok(h):
    cert, key = make_cert(h.tmp, "tls.test")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    origin = h.origin(ctx)
    e = h.egressd(base_config({"tls.test": ["127.0.0.1"]}))
    r = s_client(e.port, "tls.test:%d" % origin.port, ["-servername", "tls.test"])
    out = r.stdout.decode("utf-8", "replace")
    check("Cipher is (NONE)" not in out and "Cipher is " in out,
          "s_client handshake through the tunnel failed:\n%s" % out[-1500:])
    check_eq(e.stop(), 0, "exit code")


def s_client_denied(h, extra, reason, rule):
    rec = h.add(Recorder(mode="tunnel"))
    e = h.egressd(base_config({"tls.test": ["127.0.0.1"]}))
    r = s_client(e.port, "tls.test:%d" % rec.port, extra)
    out = r.stdout.decode("utf-8", "replace")
    check("Cipher is (NONE)" in out or r.returncode != 0 or "Cipher is" not in out,
          "s_client completed a handshake it should not have:\n%s" % out[-1500:])
    rec.wait_closed(3)
    check_eq(rec.total(), 0, "bytes at the upstream")
    check_eq(e.stop(), 0, "exit code")
    recs = e.audit()
    d = [x for x in recs if x["event"] == "connect" and x.get("decision") == "deny"]
    check(d and d[0].get("reason") == reason and (rule is None or d[0].get("rule") == rule),
          "deny record: expected %s %r:\n%s" % (reason, rule, dump(recs)))


def f_s_client_mismatch(h):
    s_client_denied(h, ["-servername", "evil.test"], "sni-mismatch",
                    mismatch("evil.test", "tls.test"))


def f_s_client_noname(h):
    s_client_denied(h, ["-noservername"], "sni-mismatch", None)


def rows_functions():
    return [
        F("pipelining: a second request to a denied host on a kept-alive connection",
          f_pipeline_denied_second, "GET rec.test, then GET evil.test on the same connection",
          "200, then 403 host-denied; the recorder sees one request",
          "each request is decided on its own; an open upstream is not a free pass"),
        F("pipelining: two requests to the same allowed host", f_pipeline_same_host,
          "GET rec.test/a and GET rec.test/b in one write", "200, 200; the recorder sees /a "
          "then /b; two request records", "pipelining is legal HTTP/1.1; a proxy that drops it "
          "pushes clients to work around it"),
        F("pipelining: same host, Host header without the port", lambda h:
          f_pipeline_same_host(h, "rec.test"), "GET rec.test:P/a and GET rec.test:P/b with "
          "Host: rec.test, in one write", "200, 200; /a then /b at the recorder",
          "the URI decides; a Host header without the port is ordinary"),
        F("pipelining: two allowed hosts on one connection", f_pipeline_other_host,
          "GET rec.test/a, then GET origin.test/b on the same connection",
          "200, 200; each origin sees exactly its own request",
          "an upstream connection is never reused for another host"),
        F("smuggling: a request behind the last chunk of a chunked body", f_chunked_then_denied,
          "chunked POST to rec.test ending 0↵↵, then GET evil.test in the same write",
          "200, then 403 host-denied; no evil.test bytes at the origin",
          "the end of a chunked body is where the next request starts, and it is decided"),
        F("smuggling: chunk size that overflows 64 bits", f_chunk_size_overflow,
          "chunked POST with chunk size 1000000000000000a, then GET evil.test",
          "no bytes after the bad size reach the origin; evil.test never allowed",
          "an overflowed size parsed as 10 would let the rest through as a request"),
        F("smuggling: CL+TE hiding a request to a denied host", f_smuggle_body,
          "POST with Content-Length and chunked, body holds GET evil.test",
          "400; no origin connection; no record for evil.test",
          "the classic CL.TE desync must die at egressd"),
        F("tunnel: a server that speaks first (SSH banner) on port != 443, 50 rounds",
          lambda h: f_banner_first(h, 0.0, 50),
          "CONNECT ssh.test:P, then only read", "200 and the banner, before the client sends",
          "the peek must not hold back a server-first protocol"),
        F("tunnel: a server that speaks first 0.3 s after the CONNECT", lambda h:
          f_banner_first(h, 0.3), "CONNECT ssh.test:P, then only read; the banner comes 0.3 s "
          "after the upstream accepted", "200 and the banner within 5 s",
          "a server-first protocol must not wait for limits.headerTimeout"),
        F("loop escape: source-address session tunnels into egressd via ::ffff:127.0.0.1",
          f_loop_session_escape, "from 127.0.0.5 (session agent, evil.test denied): CONNECT "
          "mappedself.test:PROXY, then GET evil.test inside",
          "403/508; no tunnel; the origin never sees the GET",
          "a looped connection comes from 127.0.0.1 and lands in another session"),
        F("loop: the second of two listeners", f_loop_second_listener,
          "listen on two ports; GET 127.0.0.1:SECOND and self.test:SECOND via the first",
          "508 loop for both", "every listening address is egressd itself"),
        F("loop: a wildcard listener through the host's own address",
          f_loop_wildcard_own_address, "listen 0.0.0.0; allowAddresses has the host's own "
          "address A (10.255.77.1 on lo in the private namespace); GET and CONNECT A:PROXY",
          "508 loop for both", "a wildcard listener is every address of the host"),
        F("limits.maxClients: the third of 2 allowed clients", f_max_clients,
          "two held partial heads, then a third connection",
          "503 Service Unavailable, X-Egressd-Reason limit-clients, closed at once",
          "a connection flood is bounded"),
        F("limits.headerTimeout: a partial head", f_header_timeout,
          "GET ... X-A: and nothing more (headerTimeout 1s)",
          "408 header-timeout after ~1s; close record end header-timeout",
          "slowloris clients are cut off"),
        F("openssl s_client: matching -servername completes TLS", f_s_client_ok,
          "s_client -proxy -connect tls.test:P -servername tls.test",
          "handshake completes with the TLS origin", "the allowed neighbour of the next two"),
        F("openssl s_client: -servername evil.test", f_s_client_mismatch,
          "s_client -proxy -connect tls.test:P -servername evil.test",
          "tunnel closed, 0 bytes upstream, deny sni-mismatch",
          "domain fronting with a stock client"),
        F("openssl s_client: -noservername", f_s_client_noname,
          "s_client -proxy -connect tls.test:P -noservername",
          "tunnel closed, 0 bytes upstream, deny sni-mismatch",
          "no SNI for a named host"),
    ]


def all_rows():
    return (rows_ip_spellings() + rows_denied_literals() + rows_denied_names() + rows_names() +
            rows_smuggling() + rows_rebuild() + rows_loop() + rows_tls() + rows_functions())


def runner(cs):
    if cs["kind"] == "H":
        return lambda h: run_h(h, cs)
    if cs["kind"] == "T":
        return lambda h: run_t(h, cs)
    return cs["fn"]


# ---------------------------------------------------------------------------------------------
# The table for docs/security-tests.md.

def md_bytes(b):
    """Request bytes for the table: the Host line is left out when it is the URI's authority,
    CRLF shows as ↵, other bytes outside printable ASCII as \\xNN."""
    if callable(b):
        return "(hand-built ClientHello)"
    first, sep, rest = b.partition(b"\r\n")
    parts = first.split(b" ")
    if len(parts) == 3:
        auth = parts[1].split(b"://", 1)[-1].split(b"/", 1)[0]
        rest = rest.replace(b"Host: " + auth + b"\r\n", b"", 1)
    b = first + sep + rest
    if b.endswith(b"\r\n\r\n") and b.count(b"\r\n\r\n") == 1:
        b = b[:-4]
    s = b.decode("latin-1").replace("\r\n", "↵")
    s = "".join(c if 32 <= ord(c) < 127 or c == "↵" else "\\x%02x" % ord(c) for c in s)
    if len(s) > 120:
        s = s[:110] + "… (%d bytes)" % len(b)
    return "`" + s.replace("`", "'").replace("|", "\\|") + "`"


def md_answer(cs):
    if cs["kind"] == "H":
        st = "/".join(map(str, cs["status"])) if isinstance(cs["status"], tuple) \
            else str(cs["status"])
        r = cs["reason"]
        r = "/".join(r) if isinstance(r, tuple) else r
        rule = (" — rule ∋ " + cs["rule"]) if cs["rule"] else ""
        return st + ((" " + r) if r else "") + rule
    if cs["kind"] == "T":
        o = cs["outcome"]
        if o == "pass":
            return "200, bytes relayed unchanged"
        o = "/".join(o) if isinstance(o, tuple) else o
        return "200, then closed; 0 bytes upstream; connect deny " + o + \
            ((" — " + cs["rule"]) if cs["rule"] else "")
    return cs["answer"]


def md_sent(cs):
    if cs["kind"] == "H":
        return md_bytes(cs["send"])
    if cs["kind"] == "T":
        p = cs["payload"]
        return "`CONNECT %s` then %s" % (cs["target"], md_bytes(p) if not callable(p) else
                                          "a ClientHello: " + cs["name"].split(": ", 1)[-1])
    return cs["sent"]


def print_markdown():
    rows = all_rows()
    print("| # | case | sent | egressd must answer | why |")
    print("|---|---|---|---|---|")
    for i, cs in enumerate(rows, 1):
        cfg = []
        if cs.get("bound"):
            cfg.append("bound " + json.dumps(cs["bound"]))
        if cs.get("addrs", LOOPBACK) != LOOPBACK:
            cfg.append("allowAddresses " + json.dumps(list(cs["addrs"])))
        if cs.get("limits"):
            cfg.append("limits " + json.dumps(cs["limits"]))
        name = cs["name"] + ((" <br>(" + "; ".join(cfg) + ")") if cfg else "")
        print("| %d | %s | %s | %s | %s |" % (i, name.replace("|", "\\|"), md_sent(cs),
                                             md_answer(cs).replace("|", "\\|"),
                                             cs["why"].replace("|", "\\|")))


if __name__ == "__main__":
    if "--markdown" in sys.argv:
        print_markdown()
        sys.exit(0)
    NO_NETNS = rerun_in_netns((OWN_ADDR,))
    if in_netns():
        print("(in a private network namespace: only loopback exists)", flush=True)
    only = os.environ.get("EGRESSD_BYPASS_ONLY", "")
    rows = [cs for cs in all_rows() if only.lower() in cs["name"].lower()]
    run_cases("bypass", [(cs["name"], runner(cs)) for cs in rows])
