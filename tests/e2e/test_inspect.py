"""TLS inspection (docs/design.md 11, issue 11): a session's inspect hosts are terminated by
egressd with a leaf from its CA, and every request inside is decided: git clone and fetch
through, git push refused with egressd's reason in git's output, POST refused and GET allowed
on one host, a Host other than the SNI (421), an upstream whose certificate names another host
(502 upstream-tls), a host not in inspect spliced (the client sees the origin's own
certificate), and one leaf for many connections."""
import os
import shutil
import socket
import ssl
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gitserver import GitServer, make_repo
from harness import (SANITIZE, EGRESSD_BIN, base_config, check, check_audit_log, check_eq, clean_env,
                     run_cases, run_curl)

HOSTS = {"tls.test": ["127.0.0.1"], "git.test": ["127.0.0.1"], "plain.test": ["127.0.0.1"],
         "wrong.test": ["127.0.0.1"]}


def make_ca(h):
    d = os.path.join(h.tmp, "ca")
    r = subprocess.run([EGRESSD_BIN, "ca", "init", d], capture_output=True, text=True, timeout=30)
    check_eq(r.returncode, 0, "egressd ca init: %s" % r.stderr)
    return os.path.join(d, "ca.pem"), os.path.join(d, "ca.key")


def origin_cert(h, name):
    """A self-signed certificate for name, its own trust anchor (tls.upstreamCA)."""
    cert = os.path.join(h.tmp, name + ".pem")
    key = os.path.join(h.tmp, name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=" + name,
                    "-addext", "subjectAltName=DNS:" + name, "-days", "1", "-keyout", key,
                    "-out", cert], check=True, capture_output=True, timeout=30)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return cert, ctx


def bundle(h, *certs):
    path = os.path.join(h.tmp, "upstream-%d.pem" % len(os.listdir(h.tmp)))
    with open(path, "w") as out:
        for c in certs:
            with open(c) as f:
                out.write(f.read())
    return path


def inspecting(h, ca, upstream_ca, bound):
    cfg = base_config(HOSTS, session_bound=bound)
    cfg["tls"] = {"ca": {"cert": ca[0], "key": ca[1]}, "upstreamCA": upstream_ca}
    return h.egressd(cfg)


class _Text:
    def __init__(self, r):
        self.returncode = r.returncode
        self.stdout = r.stdout.decode("utf-8", "replace")
        self.stderr = r.stderr.decode("utf-8", "replace")


def curl(e, ca_pem, url, *extra):
    return _Text(run_curl(["-sS", "-x", "http://127.0.0.1:%d" % e.port, "--cacert", ca_pem,
                           "-o", "-", "-w", "\n%{http_code}", url] + list(extra)))


def case_get_post(h):
    ca = make_ca(h)
    cert, ctx = origin_cert(h, "tls.test")
    origin = h.origin(ctx)
    e = inspecting(h, ca, cert, {"actions": ["http:write"], "inspect": ["tls.test:*"]})
    r = curl(e, ca[0], "https://tls.test:%d/get" % origin.port)
    check_eq(r.stdout.rsplit("\n", 1)[-1], "200", "GET through an inspected tunnel (%s)" % r.stderr)
    r = curl(e, ca[0], "https://tls.test:%d/post" % origin.port, "-X", "POST", "-d", "x",
             "-D", "-")
    check_eq(r.stdout.rsplit("\n", 1)[-1], "403", "POST with http:write denied")
    check("X-Egressd-Reason: action-denied" in r.stdout, "the reason header: %r" % r.stdout)
    check("http:write" in r.stdout, "the body names the action: %r" % r.stdout)
    check_eq([q["method"] for q in origin.requests], ["GET"], "requests at the origin")
    e.stop()
    recs = e.audit()
    check_audit_log(recs)
    reqs = [r for r in recs if r["event"] == "request"]
    check_eq([(r["front"], r["method"], r["action"], r["decision"], r.get("status"))
              for r in reqs],
             [("inspected", "GET", "http:read", "allow", None),
              ("inspected", "POST", "http:write", "deny", 403)], "request records")


def raw_inspected(e, ca_pem, host, port):
    """A CONNECT, then TLS to egressd's leaf for host; returns the TLS socket."""
    s = socket.create_connection(("127.0.0.1", e.port), timeout=10)
    s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host.encode(), port,
                                                                   host.encode(), port))
    head = b""
    while b"\r\n\r\n" not in head:
        d = s.recv(1)
        if not d:
            break
        head += d
    check(head.startswith(b"HTTP/1.1 200"), "CONNECT answer: %r" % head)
    ctx = ssl.create_default_context(cafile=ca_pem)
    return ctx.wrap_socket(s, server_hostname=host)


def read_all(t):
    out = b""
    try:
        while True:
            d = t.recv(65536)
            if not d:
                break
            out += d
    except (OSError, ssl.SSLError):
        pass
    return out


def case_upstream_handshake_stalls(h):
    """An upstream that accepts and never answers egressd's TLS handshake: the request gets 504
    upstream-timeout at limits.connectTimeout (2 s here; it waited for idleTimeout).  A working
    upstream, idle past connectTimeout between two requests, still answers the second one."""
    import time
    ca = make_ca(h)
    cert, ctx = origin_cert(h, "tls.test")
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # the kernel completes the connection; nobody speaks
    origin = h.origin(ctx)
    e = inspecting(h, ca, cert, {"inspect": ["tls.test:*"]})
    try:
        t = raw_inspected(e, ca[0], "tls.test", silent.getsockname()[1])
        t.settimeout(15)
        t0 = time.time()
        t.sendall(b"GET /x HTTP/1.1\r\nHost: tls.test\r\n\r\n")
        got = t.recv(4096)
        took = time.time() - t0
        check(got.startswith(b"HTTP/1.1 504"), "answer to a request whose upstream never "
              "finished its handshake: %r" % got[:80])
        check(b"upstream-timeout" in got, "the reason: %r" % got[:200])
        check(took < 6, "the 504 came after %.1f s (connectTimeout is 2 s)" % took)
        t.close()
        # a kept-alive inspected exchange idle for longer than connectTimeout goes on
        t = raw_inspected(e, ca[0], "tls.test", origin.port)
        t.settimeout(10)
        for i in range(2):
            t.sendall(b"GET /get HTTP/1.1\r\nHost: tls.test\r\n\r\n")
            got = b""
            while b"\r\n\r\n" not in got:
                d = t.recv(4096)
                check(d, "the connection closed before answer %d: %r" % (i + 1, got[:80]))
                got += d
            head, _, body = got.partition(b"\r\n\r\n")
            check(head.startswith(b"HTTP/1.1 200"), "request %d on an inspected connection: %r"
                  % (i + 1, head[:80]))
            length = int([l.split(b":", 1)[1] for l in head.split(b"\r\n")
                          if l.lower().startswith(b"content-length:")][0])
            while len(body) < length:
                d = t.recv(4096)
                check(d, "the body of answer %d was cut" % (i + 1))
                body += d
            time.sleep(2.5 if i == 0 else 0)
        t.close()
    finally:
        silent.close()
    e.stop()
    recs = e.audit()
    check_audit_log(recs)
    deny = [r for r in recs if r["event"] == "request" and r["decision"] == "deny"]
    check_eq([(r["reason"], r.get("status")) for r in deny], [("upstream-timeout", 504)],
             "the deny records")


def case_misdirected(h):
    ca = make_ca(h)
    cert, ctx = origin_cert(h, "tls.test")
    origin = h.origin(ctx)
    e = inspecting(h, ca, cert, {"inspect": ["tls.test:*"]})
    t = raw_inspected(e, ca[0], "tls.test", origin.port)
    t.sendall(b"GET / HTTP/1.1\r\nHost: plain.test:%d\r\n\r\n" % origin.port)
    got = read_all(t)
    check(got.startswith(b"HTTP/1.1 421"), "a Host other than the SNI: %r" % got[:60])
    check(b"misdirected" in got, "reason: %r" % got[:300])
    check_eq(origin.requests, [], "requests at the origin")


def case_upstream_tls(h):
    ca = make_ca(h)
    wrong_cert, wrong_ctx = origin_cert(h, "wrong.test")
    origin = h.origin(wrong_ctx)
    e = inspecting(h, ca, wrong_cert, {"inspect": ["tls.test:*"]})
    r = curl(e, ca[0], "https://tls.test:%d/" % origin.port, "-D", "-")
    check_eq(r.stdout.rsplit("\n", 1)[-1], "502", "an upstream certificate for another name")
    check("X-Egressd-Reason: upstream-tls" in r.stdout, "reason: %r" % r.stdout)
    check("wrong.test" in r.stdout, "the body names what the certificate is for: %r" % r.stdout)


def case_not_inspected_spliced(h):
    ca = make_ca(h)
    cert, ctx = origin_cert(h, "tls.test")
    origin = h.origin(ctx)
    e = inspecting(h, ca, cert, {"inspect": ["git.test:*"]})
    # Only the origin's own certificate is trusted: the handshake works only if spliced.
    r = curl(e, cert, "https://tls.test:%d/" % origin.port)
    check_eq(r.stdout.rsplit("\n", 1)[-1], "200", "a host not in inspect (%s)" % r.stderr)


def case_leaf_cached(h):
    ca = make_ca(h)
    cert, ctx = origin_cert(h, "tls.test")
    origin = h.origin(ctx)
    e = inspecting(h, ca, cert, {"inspect": ["tls.test:*"]})
    serials = set()
    for _ in range(10):
        t = raw_inspected(e, ca[0], "tls.test", origin.port)
        der = t.getpeercert(binary_form=True)
        serials.add(der)
        t.sendall(b"GET / HTTP/1.1\r\nHost: tls.test:%d\r\nConnection: close\r\n\r\n"
                  % origin.port)
        check(read_all(t).startswith(b"HTTP/1.1 200"), "a GET through the inspected tunnel")
    check_eq(len(serials), 1, "distinct leaves over ten connections")


def git(args, env, cwd=None):
    return subprocess.run(["git"] + args, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=60)


def case_git(h):
    if shutil.which("git") is None:
        from harness import skip
        skip("no git here")
    ca = make_ca(h)
    cert, ctx = origin_cert(h, "git.test")
    root = os.path.join(h.tmp, "repos")
    os.makedirs(root)
    make_repo(root, "r")
    srv = h.add(GitServer(root, ctx))
    e = inspecting(h, ca, cert, {"actions": ["git:push"], "inspect": ["git.test:*"]})
    env = clean_env()
    env.update({"HOME": h.tmp, "GIT_SSL_CAINFO": ca[0], "GIT_TERMINAL_PROMPT": "0",
                "https_proxy": "http://127.0.0.1:%d" % e.port, "GIT_AUTHOR_NAME": "t",
                "GIT_AUTHOR_EMAIL": "t@t.test", "GIT_COMMITTER_NAME": "t",
                "GIT_COMMITTER_EMAIL": "t@t.test"})
    url = "https://git.test:%d/r.git" % srv.port
    work = os.path.join(h.tmp, "clone")
    r = git(["clone", "-q", url, work], env)
    check_eq(r.returncode, 0, "git clone through inspection: %s" % r.stderr)
    check(os.path.exists(os.path.join(work, "README")), "the clone has the file")
    r = git(["fetch", "-q", "origin"], env, cwd=work)
    check_eq(r.returncode, 0, "git fetch through inspection: %s" % r.stderr)
    with open(os.path.join(work, "NEW"), "w") as f:
        f.write("x\n")
    git(["add", "NEW"], env, cwd=work)
    git(["commit", "-q", "-m", "second"], env, cwd=work)
    r = git(["push", "origin", "HEAD:main"], env, cwd=work)
    check(r.returncode != 0, "git push went through: %s" % r.stderr)
    said = [l for l in r.stderr.splitlines() if l.startswith("remote:")]
    check(any("git:push" in l and "egressd" in l for l in said),
          "git shows egressd's reason as a remote: line: %r" % r.stderr)
    print("     git push printed: %s" % " | ".join(said))
    pushes = [p for p in srv.requests() if "receive-pack" in p[1]]
    check_eq(pushes, [], "receive-pack requests at the server")


def case_handshake_failures(h):
    # A client that refuses egressd's leaf, and one that stalls its handshake: each gets a
    # tls-invalid record that says why, the stalled one within headerTimeout.
    import time
    import tlsmsg
    ca = make_ca(h)
    cert, ctx = origin_cert(h, "tls.test")
    origin = h.origin(ctx)
    cfg = base_config(HOSTS, session_bound={"inspect": ["tls.test:*"]},
                      global_limits={"headerTimeout": "2s", "idleTimeout": "30s"})
    cfg["tls"] = {"ca": {"cert": ca[0], "key": ca[1]}, "upstreamCA": cert}
    e = h.egressd(cfg)
    s = socket.create_connection(("127.0.0.1", e.port), timeout=10)
    s.sendall(b"CONNECT tls.test:%d HTTP/1.1\r\n\r\n" % origin.port)
    check(s.recv(100).startswith(b"HTTP/1.1 200"), "the CONNECT's answer")
    try:
        ssl.create_default_context().wrap_socket(s, server_hostname="tls.test")
        check(False, "a client without egressd's CA completed the handshake")
    except ssl.SSLError as ex:
        check_eq(ex.reason, "CERTIFICATE_VERIFY_FAILED", "the client's refusal")
    s.close()
    s2 = socket.create_connection(("127.0.0.1", e.port), timeout=10)
    s2.sendall(b"CONNECT tls.test:%d HTTP/1.1\r\n\r\n" % origin.port)
    check(s2.recv(100).startswith(b"HTTP/1.1 200"), "the second CONNECT's answer")
    s2.sendall(tlsmsg.real_client_hello("tls.test"))
    t0 = time.time()
    s2.settimeout(10)
    try:
        while s2.recv(65536):
            pass
    except socket.timeout:
        pass
    waited = time.time() - t0
    check(waited < 8, "a stalled handshake was held %.1fs (headerTimeout 2s, idleTimeout 30s)"
          % waited)
    s2.close()
    check_eq(e.stop(), 0, "exit code")
    recs = e.audit()
    check_audit_log(recs)
    refused = [r for r in recs if r["event"] == "connect" and r.get("front") == "inspected"]
    check_eq([(r["decision"], r["reason"]) for r in refused],
             [("deny", "tls-invalid"), ("deny", "tls-invalid")], "the inspected door's records")
    check("unknown ca" in refused[0]["rule"], "the first names the alert: %r" % refused[0]["rule"])
    check("headerTimeout" in refused[1]["rule"], "the second names the limit: %r"
          % refused[1]["rule"])
    ends = [r["end"] for r in recs if r["event"] == "close"]
    check_eq(ends, ["error", "header-timeout"], "the close records' ends")


def case_client_not_reading(h):
    # A response to a client that reads nothing backs up to the upstream: egressd holds a few
    # buffers, not the body (200 MiB offered here).
    import time
    ca = make_ca(h)
    cert, ctx = origin_cert(h, "tls.test")
    offered = []

    def handler(sock):
        try:
            t = ctx.wrap_socket(sock, server_side=True)
            t.recv(4096)
            t.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (200 << 20))
            chunk = b"Y" * (1 << 20)
            t.settimeout(3)
            for _ in range(200):
                t.sendall(chunk)
                offered.append(1)
        except (OSError, ssl.SSLError):
            pass
    origin = h.raw(handler)
    e = inspecting(h, ca, cert, {"inspect": ["tls.test:*"]})
    t = raw_inspected(e, ca[0], "tls.test", origin.port)
    t.sendall(b"GET / HTTP/1.1\r\nHost: tls.test:%d\r\n\r\n" % origin.port)
    rss0 = e.rss_kib()
    time.sleep(6)
    rss1 = e.rss_kib()
    print("     origin sent %d MiB before it blocked; egressd RSS %d -> %d KiB"
          % (len(offered), rss0, rss1))
    check(len(offered) < 32, "the origin could send %d MiB to a client that reads nothing"
          % len(offered))
    # (a sanitizer's quarantine keeps freed buffers: only the bytes count there)
    if not SANITIZE:
        check(rss1 - rss0 < 8192, "egressd grew %d KiB" % (rss1 - rss0))
    t.close()


if __name__ == "__main__":
    run_cases("inspect", [
        ("GET allowed, POST refused (http:write) on one inspected host", case_get_post),
        ("a Host other than the SNI gets 421 inside TLS", case_misdirected),
        ("an upstream certificate for another name: 502 upstream-tls", case_upstream_tls),
        ("a host not in inspect is spliced: the origin's own certificate", case_not_inspected_spliced),
        ("one leaf for ten connections", case_leaf_cached),
        ("an upstream that never finishes its TLS handshake: 504 at connectTimeout",
         case_upstream_handshake_stalls),
        ("git clone and fetch through inspection, git push refused with the reason shown",
         case_git),
        ("a refused or stalled handshake with egressd gets a tls-invalid record",
         case_handshake_failures),
        ("a client that reads nothing holds the upstream back", case_client_not_reading),
    ])
