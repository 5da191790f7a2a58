"""The transparent front door (listen.transparent): redirected TCP decided by the name it
carries (a mapped address, the TLS server name, the HTTP Host) or, with no name, by its address.

Runs in a private network namespace (harness.rerun_in_netns) whose nft ruleset redirects every
TCP connection from 127.0.0.9 (the test's client address) to egressd's transparent port, so
that egressd's own connections (from other addresses) are not redirected and nothing a
regression sends can leave the machine."""
import json
import os
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (Recorder, base_config, check, check_eq, make_cert, rerun_in_netns,
                     run_cases, skip)

NO_NETNS = rerun_in_netns(addrs=("127.0.0.9/8", "fd00::9/128"))
CLIENT = "127.0.0.9"
CLIENT6 = "fd00::9"

HOSTS = {"origin.test": ["127.0.0.1"], "tls.test": ["127.0.0.1"], "evil.test": ["127.0.0.1"]}


def need_netns():
    if NO_NETNS:
        skip("needs a private network namespace with nft (%s)" % NO_NETNS)
    if shutil.which("nft") is None:
        skip("no nft here (Debian package nftables, which tools/install-deps installs)")


def redirect_to(port):
    """Every TCP connection from CLIENT goes to egressd's transparent port; a default route
    through lo lets documentation and mapped addresses be dialled at all."""
    rules = """
table ip egressd_test {
  chain out {
    type nat hook output priority -100; policy accept;
    ip saddr %s tcp dport != %d redirect to :%d
  }
}
""" % (CLIENT, port, port)
    subprocess.run(["nft", "-f", "-"], input=rules.encode(), check=True, timeout=10)
    subprocess.run(["ip", "route", "replace", "default", "dev", "lo"], check=True, timeout=10)


def flush_rules():
    subprocess.run(["nft", "delete", "table", "ip", "egressd_test"], timeout=10,
                   stderr=subprocess.DEVNULL)


def transparent_port(e):
    m = e.wait_stderr(r"listening on 127\.0\.0\.1:(\d+) \(listen\.transparent\)", 5)
    check(m, "no transparent listener line: %r" % e.stderr())
    import re
    return int(re.search(r"listening on 127\.0\.0\.1:(\d+) \(listen\.transparent\)",
                         e.stderr()).group(1))


def dns_port(e):
    import re
    m = re.search(r"listening on 127\.0\.0\.1:(\d+) \(dns", e.stderr())
    return int(m.group(1)) if m else None


def start(h, bound=None, dns_mapped=False):
    need_netns()
    cfg = base_config(HOSTS, session_bound=bound)
    cfg["listen"]["transparent"] = ["127.0.0.1:0"]
    if dns_mapped:
        cfg["listen"]["dns"] = ["127.0.0.1:0"]
        cfg["listen"]["dnsAnswers"] = "mapped"
    e = h.egressd(cfg)
    port = transparent_port(e)
    redirect_to(port)
    h.add(None, flush_rules)
    return e


def client(addr, port, timeout=5):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((CLIENT, 0))
    s.connect((addr, port))
    return s


def tls_origin(h):
    cert, key = make_cert(h.tmp, "tls.test")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return h.origin(ctx)


def tls_get(sock, name):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    t = ctx.wrap_socket(sock, server_hostname=name)
    t.sendall(b"GET /t HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % name.encode())
    out = b""
    while True:
        d = t.recv(65536)
        if not d:
            break
        out += d
    return out


def records(e, event):
    return [r for r in e.audit() if r["event"] == event]


def case_tls_by_sni(h):
    origin = tls_origin(h)
    e = start(h, bound={"allowDomains": ["tls.test:*"], "enforce": "sandbox"})
    got = tls_get(client("192.0.2.99", origin.port), "tls.test")
    check(got.startswith(b"HTTP/1.1 200"), "through the transparent listener: %r" % got[:60])
    rec = [r for r in records(e, "connect") if r["decision"] == "allow"]
    check_eq(len(rec), 1, "allow records")
    check_eq((rec[0]["front"], rec[0]["host"], rec[0]["orig_dst"], rec[0]["addr"]),
             ("transparent", "tls.test", "192.0.2.99:%d" % origin.port,
              "127.0.0.1:%d" % origin.port), "front, host, orig_dst, the address dialled")
    # A name the bound does not allow: closed, with its record.
    try:
        got = tls_get(client("192.0.2.99", origin.port), "evil.test")
    except (ssl.SSLError, OSError):
        got = b""
    check_eq(got, b"", "a ClientHello for a host the bound does not allow got bytes")
    deny = [r for r in records(e, "connect") if r["decision"] == "deny"]
    check_eq([(r["host"], r["reason"]) for r in deny], [("evil.test", "host-not-allowed")],
             "deny records")


def case_http_by_host(h):
    rec = h.add(Recorder(mode="http"))
    e = start(h, bound={"allowDomains": ["origin.test:*"], "enforce": "sandbox"})
    s = client("192.0.2.99", rec.port)
    s.sendall(b"GET /x HTTP/1.1\r\nHost: origin.test:%d\r\n\r\n" % rec.port)
    got = s.recv(4096)
    check(got.startswith(b"HTTP/1.1 200"), "a plain HTTP request by its Host: %r" % got[:40])
    s.close()
    s = client("192.0.2.99", rec.port)
    s.sendall(b"GET /x HTTP/1.1\r\nHost: evil.test:%d\r\n\r\n" % rec.port)
    got = s.recv(4096)
    check(got.startswith(b"HTTP/1.1 403") and b"host-not-allowed" in got,
          "a plain HTTP request for a host the bound denies gets an HTTP answer: %r" % got[:80])
    s.close()
    check_eq(len(rec.heads()), 1, "requests at the origin")
    reqs = records(e, "request")
    check_eq([(r["front"], r["host"], r["decision"]) for r in reqs],
             [("transparent", "origin.test", "allow")], "request records")
    # The refusal was an HTTP answer: its record carries the status the client read.
    denied = [r for r in records(e, "connect") if r.get("host") == "evil.test"]
    check_eq([(r["decision"], r["reason"], r.get("status")) for r in denied],
             [("deny", "host-not-allowed", 403)], "the refusal's record")


def case_no_name(h):
    rec = h.add(Recorder(mode="tunnel"))
    e = start(h, bound={"allowDomains": ["origin.test:*", "127.0.0.1:%d" % rec.port],
                        "enforce": "sandbox"})
    # An address the bound names: decided at once, without a name (the server may speak first).
    s = client("127.0.0.1", rec.port)
    s.sendall(b"\x00\x01raw bytes")
    time.sleep(0.3)
    check_eq(rec.data(), b"\x00\x01raw bytes", "bytes to an allowed literal address")
    s.close()
    # No name and an address the bound does not name: refused (opaque-tunnel), nothing passes.
    s = client("192.0.2.99", rec.port)
    s.sendall(b"\x00\x01raw bytes")
    s.settimeout(5)
    try:
        got = s.recv(4096)
    except OSError:
        got = b""
    check_eq(got, b"", "bytes back on a refused opaque connection")
    deny = [r for r in records(e, "connect") if r["decision"] == "deny"]
    check_eq([r["reason"] for r in deny], ["opaque-tunnel"], "deny records")
    check_eq(deny[0]["orig_dst"], "192.0.2.99:%d" % rec.port, "orig_dst")


def dns_query(port, name, qtype=1):
    q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    q += b"\x00" + struct.pack(">HH", qtype, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    s.sendto(q, ("127.0.0.1", port))
    a = s.recv(4096)
    s.close()
    if (a[3] & 0x0f) != 0 or struct.unpack(">H", a[6:8])[0] == 0:
        return None
    return socket.inet_ntoa(a[-4:])


def case_ipv6(h):
    # An IPv6 connection redirected to an IPv6 transparent listener: the original destination
    # comes from IP6T_SO_ORIGINAL_DST.
    need_netns()
    import re
    origin = tls_origin(h)
    cfg = base_config(HOSTS, session_bound={"allowDomains": ["tls.test:*"], "enforce": "sandbox"})
    cfg["listen"]["transparent"] = ["[::1]:0"]
    e = h.egressd(cfg)
    check(e.wait_stderr(r"listening on \[::1\]:(\d+) \(listen\.transparent\)", 5),
          "no IPv6 transparent listener line: %r" % e.stderr())
    port = int(re.search(r"listening on \[::1\]:(\d+) \(listen\.transparent\)",
                         e.stderr()).group(1))
    rules = """
table ip6 egressd_test6 {
  chain out {
    type nat hook output priority -100; policy accept;
    ip6 saddr %s tcp dport != %d redirect to :%d
  }
}
""" % (CLIENT6, port, port)
    subprocess.run(["nft", "-f", "-"], input=rules.encode(), check=True, timeout=10)
    h.add(None, lambda: subprocess.run(["nft", "delete", "table", "ip6", "egressd_test6"],
                                       timeout=10, stderr=subprocess.DEVNULL))
    subprocess.run(["ip", "-6", "route", "replace", "default", "dev", "lo"], check=True,
                   timeout=10)
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.settimeout(5)
    s.bind((CLIENT6, 0))
    s.connect(("2001:db8::99", origin.port))
    got = tls_get(s, "tls.test")
    check(got.startswith(b"HTTP/1.1 200"), "IPv6 through the transparent listener: %r" % got[:60])
    rec = [r for r in records(e, "connect") if r["decision"] == "allow"]
    check_eq([r["orig_dst"] for r in rec], ["[2001:db8::99]:%d" % origin.port], "orig_dst")


def case_mapped_name(h):
    rec = h.add(Recorder(mode="tunnel", banner=b"SSH-2.0-mapped\r\n"))
    e = start(h, bound={"allowDomains": ["origin.test:*"], "enforce": "sandbox"},
              dns_mapped=True)
    port = dns_port(e)
    check(port is not None, "no DNS listener line: %r" % e.stderr())
    addr = dns_query(port, "origin.test")
    check(addr is not None and addr.startswith("198.1"), "a mapped answer: %r" % addr)
    check_eq(dns_query(port, "evil.test"), None, "a name the bound denies gets no address")
    # A protocol with neither SNI nor Host (the server speaks first): the mapped address names it.
    s = client(addr, rec.port)
    got = s.recv(64)
    check_eq(got, b"SSH-2.0-mapped\r\n", "the server's banner through the mapped address")
    s.close()
    allow = [r for r in records(e, "connect") if r["decision"] == "allow"]
    check_eq([(r["host"], r["orig_dst"]) for r in allow],
             [("origin.test", "%s:%d" % (addr, rec.port))], "allow record by the mapped name")
    # A ClientHello for another name on the mapped address: the mapped name and the server
    # name must agree (sni-mismatch), and nothing reaches the origin.
    from tlsmsg import hello
    quiet = h.add(Recorder(mode="tunnel"))
    s = client(addr, quiet.port)
    s.sendall(hello(((0, b"evil.test"),)))
    s.settimeout(5)
    try:
        got = s.recv(4096)
    except OSError:
        got = b""
    check_eq(got, b"", "bytes back after a ClientHello for another name")
    time.sleep(0.2)
    check_eq(quiet.total(), 0, "bytes at the origin")
    deny = [r for r in records(e, "connect") if r["decision"] == "deny"]
    check_eq([r["reason"] for r in deny], ["sni-mismatch"], "deny records")


if __name__ == "__main__":
    run_cases("transparent", [
        ("TLS by its server name: allowed and refused, orig_dst recorded", case_tls_by_sni),
        ("plain HTTP by its Host: allowed and an HTTP 403", case_http_by_host),
        ("no name: an address the bound names goes, another is opaque-tunnel", case_no_name),
        ("a mapped address names a connection with neither SNI nor Host", case_mapped_name),
        ("IPv6: the original destination from IP6T_SO_ORIGINAL_DST", case_ipv6),
    ])
