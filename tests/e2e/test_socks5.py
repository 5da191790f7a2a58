"""SOCKS5 (listen.socks5, issue 9 item 6) with real clients, and the protocol's edges.

- curl --socks5-hostname, curl -x socks5h://USER:TOKEN@..., curl -U/--proxy-user, and
  ALL_PROXY=socks5h://... with curl: HTTPS to a loopback TLS origin (a throwaway certificate
  for tls.test, trusted with --cacert), allowed and refused, with and without credentials.
- git clone over HTTPS with ALL_PROXY=socks5h://... from a loopback TLS git server
  (tests/e2e/gitserver.py: git http-backend; GIT_SSL_CAINFO is the throwaway certificate),
  allowed, refused by the host, and refused under actions: [git:push] (an HTTPS tunnel carries
  pushes, docs/design.md 4.5).
- Python with PySocks (Debian's python3-socks, run by an interpreter that has it).
- ssh with ProxyCommand='nc -X 5 -x ...' (Debian's netcat-openbsd) to a loopback sshd the case
  starts, running git ls-remote: allowed, allowed under actions: [http:write], refused by the
  host and by actions: [ssh:read, ssh:write]; sshd sees no login when refused.
- The reply codes of docs/design.md 6 and 13 from a raw client; BIND and UDP ASSOCIATE (0x07 and
  a record); malformed greetings, credentials and requests (a record each); IP literals by
  address type 1 and 4; bytes sent with the request are checked before the reply.

Every origin is on loopback; names are .test names that the config maps with dns.hosts.
"""

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
from harness import (EGRESSD_BIN, Blackhole, TestFailure, base_config, check,  # noqa: E402
                     check_audit_log, check_eq, clean_env, closed_port, echo_handler, run_cases,
                     skip)
from gitserver import GitServer, make_repo  # noqa: E402
from test_connect_cmd import Sshd  # noqa: E402  (the loopback sshd with a bare repository)

HOSTS = {"tls.test": ["127.0.0.1"], "git.test": ["127.0.0.1"], "origin.test": ["127.0.0.1"],
         "other.test": ["127.0.0.1"], "sshd.test": ["127.0.0.1"], "self.test": ["127.0.0.1"],
         "refused.test": ["127.0.0.1"], "slow.test": ["127.0.0.1"]}
TOKEN = "s0cks-t0ken"


def sandbox(*hosts, actions=None):
    b = {"allowDomains": [h + ":*" for h in hosts], "enforce": "sandbox"}
    if actions:
        b["actions"] = list(actions)
    return b


def run(argv, env=None, stdin=b"", timeout=60, cwd=None):
    try:
        return subprocess.run(argv, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env or clean_env(), timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise TestFailure("%r did not finish within %ss" % (argv, timeout))


def socks_egressd(h, cfg, **kw):
    """egressd with listen.socks5 on a free port; returns (egressd, socks port)."""
    cfg["listen"]["socks5"] = ["127.0.0.1:0"]
    e = h.egressd(cfg, **kw)
    line = e.wait_stderr(r"listening on 127\.0\.0\.1:\d+ \(listen\.socks5\)", 5)
    check(line, "egressd opened no SOCKS5 listener: %s" % e.stderr())
    return e, int(line.split(":")[-1].split(" ")[0])


def cert_with_san(tmp, names):
    """A throwaway self-signed EC certificate whose subjectAltName holds names."""
    cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=" + names[0],
                    "-addext", "subjectAltName=" + ",".join("DNS:" + n for n in names),
                    "-days", "1", "-keyout", key, "-out", cert],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return cert, ctx


def records(e, event=None, **fields):
    out = []
    for r in e.audit():
        if event and r["event"] != event:
            continue
        if all(r.get(k) == v for k, v in fields.items()):
            out.append(r)
    return out


def finish(e):
    check_eq(e.stop(), 0, "egressd exit code")
    recs = e.audit()
    check_audit_log(recs)
    return recs


# ---------------------------------------------------------------------------------------------
# curl.

def curl(args, env=None, timeout=20):
    return run(["curl", "-sS", "--max-time", str(timeout)] + args, env=env, timeout=timeout + 5)


def tls_origin(h):
    """The harness's echo origin over TLS, with a certificate for tls.test."""
    cert, ctx = cert_with_san(h.tmp, ["tls.test"])
    return cert, h.origin(ctx)


def case_curl_socks5_hostname(h):
    cert, origin = tls_origin(h)
    e, sp = socks_egressd(h, base_config(HOSTS, sandbox("tls.test")))
    url = "https://tls.test:%d/through?socks=1" % origin.port
    r = curl(["--socks5-hostname", "127.0.0.1:%d" % sp, "--cacert", cert, url])
    check_eq(r.returncode, 0, "curl --socks5-hostname exit (%s)" % r.stderr.decode())
    info = json.loads(r.stdout)
    check_eq((info["path"], info["host"]), ("/through?socks=1", "tls.test:%d" % origin.port),
             "what the origin saw")
    r = curl(["-x", "socks5h://127.0.0.1:%d" % sp, "--cacert", cert, url])
    check_eq(r.returncode, 0, "curl -x socks5h:// exit (%s)" % r.stderr.decode())
    seen = origin.connections
    r = curl(["--socks5-hostname", "127.0.0.1:%d" % sp, "--cacert", cert,
              "https://other.test:%d/" % origin.port])
    check(r.returncode != 0, "curl reached other.test through SOCKS5")
    check_eq(origin.connections, seen, "origin connections after the refusal")
    recs = finish(e)
    allowed = [r for r in recs if r["event"] == "connect" and r.get("decision") == "allow"]
    check_eq(len(allowed), 2, "allow records")
    for r in allowed:
        check_eq((r["front"], r["session"], r["host"], r["port"], r.get("rule")),
                 ("socks5", "default", "tls.test", origin.port, "allowDomains: tls.test:*"),
                 "allow record")
    denied = [r for r in recs if r["event"] == "connect" and r.get("decision") == "deny"]
    check_eq([(r["host"], r["reason"], r["front"], "status" in r) for r in denied],
             [("other.test", "host-not-allowed", "socks5", False)], "deny records")
    closes = [r for r in recs if r["event"] == "close" and r["conn"] == allowed[0]["conn"]]
    check(closes and closes[0]["front"] == "socks5" and closes[0]["bytes_in"] > 0,
          "close record of the tunnel: %r" % closes)


def token_sessions(*hosts):
    """Two sessions with tokens (no default): agent may reach hosts, other nothing."""
    return {"agent": {"auth": {"token": TOKEN}, "bound": {"network": sandbox(*hosts)}},
            "other": {"auth": {"token": "other-token"},
                      "bound": {"network": sandbox("other.test")}}}


def case_curl_credentials(h):
    cert, origin = tls_origin(h)
    e, sp = socks_egressd(h, base_config(HOSTS, sessions=token_sessions("tls.test")))
    url = "https://tls.test:%d/cred" % origin.port
    ok = [["--socks5-hostname", "127.0.0.1:%d" % sp, "-U", "agent:" + TOKEN],
          ["--socks5-hostname", "127.0.0.1:%d" % sp, "--proxy-user", "agent:" + TOKEN],
          ["-x", "socks5h://agent:%s@127.0.0.1:%d" % (TOKEN, sp)]]
    for args in ok:
        r = curl(args + ["--cacert", cert, url])
        check_eq(r.returncode, 0, "curl %r exit (%s)" % (args, r.stderr.decode()))
    seen = origin.connections
    bad = [["-x", "socks5h://agent:wrong@127.0.0.1:%d" % sp],         # wrong token
           ["-x", "socks5h://nobody:%s@127.0.0.1:%d" % (TOKEN, sp)],  # no such session
           ["-x", "socks5h://127.0.0.1:%d" % sp],                     # none: no default
           ["-x", "socks5h://other:other-token@127.0.0.1:%d" % sp]]   # another's bound
    for args in bad:
        r = curl(args + ["--cacert", cert, url])
        check(r.returncode != 0, "curl %r got through" % args)
    check_eq(origin.connections, seen, "origin connections after the refusals")
    recs = finish(e)
    dec = [(r.get("session"), r["decision"], r.get("reason"), r.get("host"))
           for r in recs if r["event"] == "connect"]
    check_eq(dec, [("agent", "allow", None, "tls.test")] * 3 + [
        (None, "deny", "auth-required", None), (None, "deny", "auth-required", None),
        (None, "deny", "auth-required", "tls.test"),
        ("other", "deny", "host-not-allowed", "tls.test")], "connect records in order")
    for r in recs:
        check(TOKEN not in json.dumps(r) and "wrong" not in json.dumps(r),
              "a token in the audit log: %r" % r)


def case_all_proxy_curl(h):
    cert, origin = tls_origin(h)
    e, sp = socks_egressd(h, base_config(HOSTS, sandbox("tls.test")))
    env = dict(clean_env(), ALL_PROXY="socks5h://127.0.0.1:%d" % sp)
    r = curl(["--cacert", cert, "https://tls.test:%d/env" % origin.port], env=env)
    check_eq(r.returncode, 0, "curl with ALL_PROXY (%s)" % r.stderr.decode())
    check_eq(json.loads(r.stdout)["path"], "/env", "path at the origin")
    env = dict(clean_env(), all_proxy="socks5h://agent:%s@127.0.0.1:%d" % (TOKEN, sp))
    r = curl(["--cacert", cert, "https://other.test:%d/env" % origin.port], env=env)
    check(r.returncode != 0, "curl with all_proxy reached other.test")
    recs = finish(e)
    check_eq([(r["host"], r["decision"], r["front"]) for r in recs if r["event"] == "connect"],
             [("tls.test", "allow", "socks5"), ("other.test", "deny", "socks5")],
             "connect records")


# ---------------------------------------------------------------------------------------------
# git over HTTPS.

def git_server(h):
    """tests/e2e/gitserver.py's git http-backend over TLS (a certificate for git.test),
    serving r.git; returns (server, certificate, the commit of main, git's environment)."""
    root = os.path.join(h.tmp, "git")
    os.makedirs(root)
    bare = make_repo(root)
    cert, ctx = cert_with_san(h.tmp, ["git.test"])
    genv = dict(clean_env(), HOME=root, GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0")
    commit = run(["git", "--git-dir", bare, "rev-parse", "main"], env=genv)
    return h.add(GitServer(root, ctx)), cert, commit.stdout.decode().strip(), genv


def git_clone(h, srv, cert, genv, sp, name):
    dest = os.path.join(h.tmp, name)
    env = dict(genv, ALL_PROXY="socks5h://127.0.0.1:%d" % sp, GIT_SSL_CAINFO=cert)
    r = run(["git", "clone", "-q", "https://git.test:%d/r.git" % srv.port, dest], env=env)
    return r, dest


def case_git_clone_https(h):
    srv, cert, commit, genv = git_server(h)
    e, sp = socks_egressd(h, base_config(HOSTS, sandbox("git.test")))
    r, dest = git_clone(h, srv, cert, genv, sp, "clone")
    check_eq(r.returncode, 0, "git clone through ALL_PROXY=socks5h:// (%s)" % r.stderr.decode())
    head = run(["git", "-C", dest, "rev-parse", "HEAD"], env=genv).stdout.decode().strip()
    check_eq(head, commit, "the cloned commit")
    with open(os.path.join(dest, "README")) as f:
        check_eq(f.read(), "hello\n", "the cloned file")
    check(srv.requests() and all(p.startswith("/r.git/") for _, p in srv.requests()),
          "what the git server saw: %r" % srv.requests())
    recs = finish(e)
    cons = [r for r in recs if r["event"] == "connect"]
    check(cons and all(r["decision"] == "allow" and r["front"] == "socks5" and
                       r["host"] == "git.test" for r in cons), "connect records: %r" % cons)


def case_git_clone_https_refused(h):
    srv, cert, commit, genv = git_server(h)
    e, sp = socks_egressd(h, base_config(HOSTS, sandbox("other.test")))
    r, _ = git_clone(h, srv, cert, genv, sp, "refused")
    check(r.returncode != 0, "git clone reached git.test, which the bound does not allow")
    check_eq(srv.requests(), [], "requests at the git server")
    recs = finish(e)
    check_eq([(r["host"], r["decision"], r.get("reason")) for r in recs
              if r["event"] == "connect"][:1], [("git.test", "deny", "host-not-allowed")],
             "the first connect record")


def case_git_https_push_denied(h):
    """actions: [git:push]: an HTTPS tunnel carries fetches and pushes alike, so it is refused
    (inspection-required) before a byte of the TLS handshake reaches the server."""
    srv, cert, commit, genv = git_server(h)
    e, sp = socks_egressd(h, base_config(HOSTS, sandbox("git.test", actions=["git:push"])))
    r, _ = git_clone(h, srv, cert, genv, sp, "push-denied")
    check(r.returncode != 0, "git clone went through a bound that denies git:push over HTTPS")
    # Not on port 443, the refusal comes at the ClientHello, after the dial: the server may
    # see a connection, never a request.
    check_eq(srv.requests(), [], "requests at the git server")
    recs = finish(e)
    den = [r for r in recs if r["event"] == "connect" and r.get("decision") == "deny"]
    check(den and den[0]["reason"] == "inspection-required" and
          den[0]["rule"].startswith("actions: git:push"), "deny record: %r" % den)


# ---------------------------------------------------------------------------------------------
# PySocks.

PYSOCKS_SCRIPT = r'''
import json, socket, sys
import socks
port, dest, dport, user, pw = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
s = socks.socksocket()
s.set_proxy(socks.SOCKS5, "127.0.0.1", port, rdns=True, username=user or None,
            password=pw or None)
s.settimeout(10)
try:
    s.connect((dest, dport))
except socks.ProxyError as e:
    print(json.dumps({"error": str(e)}))
    sys.exit(0)
s.sendall(b"GET /pysocks HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n" % (dest.encode(), dport))
data = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    data += d
print(json.dumps({"answer": data.decode("latin-1")}))
'''


def pysocks_python():
    """An interpreter that can import socks (PySocks), or None."""
    for py in (sys.executable, "/usr/bin/python3"):
        if py and os.path.exists(py) and subprocess.run(
                [py, "-c", "import socks"], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL).returncode == 0:
            return py
    return None


def case_pysocks(h):
    py = pysocks_python()
    if py is None:
        skip("PySocks is not installed (Debian package python3-socks, which "
             "tools/install-deps installs)")
    origin = h.origin()
    sessions = token_sessions("origin.test")
    sessions["default"] = {"bound": {"network": sandbox("origin.test")}}
    e, sp = socks_egressd(h, base_config(HOSTS, sessions=sessions))
    script = os.path.join(h.tmp, "pysocks_client.py")
    with open(script, "w") as f:
        f.write(PYSOCKS_SCRIPT)

    def client(dest, user="", pw=""):
        r = run([py, script, str(sp), dest, str(origin.port), user, pw])
        check_eq(r.returncode, 0, "PySocks client (%s)" % r.stderr.decode())
        return json.loads(r.stdout)

    out = client("origin.test")
    check("answer" in out and out["answer"].startswith("HTTP/1.1 200"), "PySocks: %r" % out)
    check('"path": "/pysocks"' in out["answer"], "what the origin saw: %r" % out)
    out = client("origin.test", "agent", TOKEN)
    check("answer" in out and out["answer"].startswith("HTTP/1.1 200"),
          "PySocks with credentials: %r" % out)
    seen = len(origin.requests)
    out = client("other.test")
    check("not allowed by ruleset" in out.get("error", ""), "PySocks refusal: %r" % out)
    out = client("origin.test", "agent", "wrong")
    check("error" in out, "PySocks with a wrong token: %r" % out)
    check_eq(len(origin.requests), seen, "origin requests after the refusals")
    recs = finish(e)
    reqs = [r for r in recs if r["event"] == "request"]
    check_eq([(r["session"], r["front"], r["action"], r["decision"]) for r in reqs],
             [("default", "socks5", "http:read", "allow"), ("agent", "socks5", "http:read",
                                                            "allow")],
             "the requests inside the SOCKS5 tunnels")


# ---------------------------------------------------------------------------------------------
# ssh through nc -X 5.

def nc_ls_remote(s, sp, timeout=3):
    """git ls-remote over ssh with ProxyCommand nc -X 5 (nc keeps running after the tunnel's
    close until ssh gives up on the banner: ConnectTimeout bounds a refused case)."""
    if not shutil.which("nc"):
        skip("nc is not installed (Debian package netcat-openbsd, which tools/install-deps "
             "installs)")
    ssh = ("ssh -F /dev/null -i %s -o IdentitiesOnly=yes -o BatchMode=yes "
           "-o StrictHostKeyChecking=yes -o UserKnownHostsFile=%s "
           "-o GlobalKnownHostsFile=/dev/null -o ConnectTimeout=%d "
           "-o ProxyCommand='nc -X 5 -x 127.0.0.1:%d %%h %%p'"
           % (os.path.join(s.dir, "user"), s.known_hosts, timeout, sp))
    env = dict(clean_env(), GIT_SSH_COMMAND=ssh, GIT_TERMINAL_PROMPT="0")
    return run(["git", "ls-remote", "ssh://%s@sshd.test:%d%s" % (s.user, s.port, s.repo)],
               env=env, timeout=60)


def case_ssh_nc_allowed(h):
    s = h.add(Sshd(h.tmp))
    for actions in (None, ["http:write"]):
        e, sp = socks_egressd(h, base_config(HOSTS, sandbox("sshd.test", actions=actions)))
        r = nc_ls_remote(s, sp, timeout=10)
        check(r.returncode == 0, "git ls-remote over ssh through nc -X 5 (actions %r) failed "
              "(%d): %s\nsshd: %s" % (actions, r.returncode, r.stderr.decode(), s.read_log()))
        check_eq(r.stdout.decode(), "%s\trefs/heads/main\n" % s.commit, "git ls-remote output")
        recs = finish(e)
        cons = [r for r in recs if r["event"] == "connect"]
        check_eq([(r["host"], r["port"], r["front"], r["decision"]) for r in cons],
                 [("sshd.test", s.port, "socks5", "allow")], "connect records (actions %r)"
                 % actions)


def case_ssh_nc_denied_host(h):
    s = h.add(Sshd(h.tmp))
    e, sp = socks_egressd(h, base_config(HOSTS, sandbox("other.test")))
    r = nc_ls_remote(s, sp)
    check(r.returncode != 0, "git ls-remote reached sshd.test, which the bound does not allow")
    check("SOCKS error 2" in r.stderr.decode() or "not allowed" in r.stderr.decode(),
          "nc's message: %r" % r.stderr)
    check("Accepted publickey" not in s.read_log(), "sshd saw a login: %s" % s.read_log())
    recs = finish(e)
    check_eq([(r["host"], r["decision"], r.get("reason"), r["front"]) for r in recs
              if r["event"] == "connect"], [("sshd.test", "deny", "host-not-allowed", "socks5")],
             "connect records")


def case_ssh_nc_denied_actions(h):
    s = h.add(Sshd(h.tmp))
    e, sp = socks_egressd(h, base_config(HOSTS, sandbox("sshd.test",
                                                         actions=["ssh:read", "ssh:write"])))
    r = nc_ls_remote(s, sp)
    check(r.returncode != 0, "git ls-remote went through actions: [ssh:read, ssh:write]")
    check("Accepted publickey" not in s.read_log(), "sshd saw a login: %s" % s.read_log())
    recs = finish(e)
    cons = [r for r in recs if r["event"] == "connect"]
    check_eq([(r["decision"], r.get("reason"), r.get("action"), r.get("rule")) for r in cons],
             [("allow", None, None, "allowDomains: sshd.test:*"),
              ("deny", "action-denied", "git:fetch,git:push,ssh:read,ssh:write",
               "actions: ssh:read, ssh:write")],
             "connect records: the tunnel, then what it turned out to carry")
    close = [r for r in recs if r["event"] == "close" and r["conn"] == cons[0]["conn"]]
    check_eq((close[0]["end"], close[0]["bytes_out"]), ("denied", 0),
             "close record: no byte of the client's went up")


# ---------------------------------------------------------------------------------------------
# The protocol from a raw client.

class Raw:
    def __init__(self, port, timeout=5):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.local = "127.0.0.1:%d" % self.s.getsockname()[1]

    def send(self, b):
        self.s.sendall(b)

    def read(self, n, timeout=5):
        self.s.settimeout(timeout)
        out = b""
        while len(out) < n:
            try:
                d = self.s.recv(n - len(out))
            except ConnectionResetError:
                d = b""
            if not d:
                break
            out += d
        return out

    def closed(self, timeout=3):
        self.s.settimeout(timeout)
        try:
            return self.s.recv(1) == b""
        except socket.timeout:
            return False
        except ConnectionResetError:
            return True

    def close(self):
        self.s.close()


def request(host, port, cmd=1, atyp=None):
    if atyp is None:
        atyp = 3
    if atyp == 1:
        addr = socket.inet_aton(host)
    elif atyp == 4:
        addr = socket.inet_pton(socket.AF_INET6, host)
    elif atyp == 3:
        hb = host.encode("latin-1")
        addr = bytes([len(hb)]) + hb
    else:
        addr = b"\0\0\0\0"
    return bytes([5, cmd, 0, atyp]) + addr + struct.pack(">H", port)


def socks_ask(sp, req, greeting=b"\x05\x01\x00", extra=b""):
    """Greeting, then req (and extra bytes in the same write); returns (client, reply code or
    None when closed before a reply)."""
    c = Raw(sp)
    c.send(greeting)
    g = c.read(2)
    check_eq(g, b"\x05\x00", "greeting answer")
    c.send(req + extra)
    rep = c.read(10)
    return c, (rep[1] if len(rep) == 10 and rep[0] == 5 else None)


def case_reply_codes(h):
    """docs/design.md 6 and 13: 0x02 policy, auth and limits; 0x04 dns-failed and
    upstream-timeout; 0x05 upstream-refused; 0x07 BIND, UDP ASSOCIATE and unknown commands;
    0x08 an unknown address type; 0x01 otherwise (bad-request); each with its record."""
    origin = h.raw(echo_handler)
    hole = h.add(Blackhole())
    bound = sandbox("origin.test", "nx.invalid", "refused.test", "slow.test", "self.test",
                    "127.0.0.2")
    cfg = base_config(HOSTS, bound, global_limits={"connectTimeout": "1s"},
                      allow_addresses=("127.0.0.1/32",))
    e, sp = socks_egressd(h, cfg)
    rows = [
        ("allowed", request("origin.test", origin.port), 0, None),
        ("host-not-allowed", request("other.test", origin.port), 2, "host-not-allowed"),
        ("ip-literal (type 1)", request("127.0.0.1", origin.port, atyp=1), 2, "ip-literal"),
        ("ip-literal (type 4, ::ffff:127.0.0.1)",
         request("::ffff:127.0.0.1", origin.port, atyp=4), 2, "ip-literal"),
        ("address-denied (type 1, 127.0.0.2 allowed by the bound)",
         request("127.0.0.2", origin.port, atyp=1), 2, "address-denied"),
        ("ip-literal spelled as a name", request("2130706433", origin.port), 2, "ip-literal"),
        ("loop", request("self.test", sp), 2, "loop"),
        ("dns-failed", request("nx.invalid", origin.port), 4, "dns-failed"),
        ("upstream-refused", request("refused.test", closed_port()), 5, "upstream-refused"),
        ("upstream-timeout", request("slow.test", hole.port), 4, "upstream-timeout"),
        ("bad-request: a name with an empty label", request("a..test", 80), 1, "bad-request"),
        ("bad-request: port 0", request("origin.test", 0), 1, "bad-request"),
        ("bad-request: reserved byte not 0", b"\x05\x01\x01\x03\x0borigin.test\x00\x50", 1,
         "bad-request"),
        ("BIND", request("origin.test", origin.port, cmd=2), 7, "command-not-supported"),
        ("UDP ASSOCIATE", request("origin.test", origin.port, cmd=3), 7,
         "command-not-supported"),
        ("an unknown command", request("origin.test", origin.port, cmd=9), 7,
         "command-not-supported"),
        ("an unknown address type", request("x", 80, atyp=5), 8,
         "address-type-not-supported"),
    ]
    clients = []
    for name, req, code, reason in rows:
        c, got = socks_ask(sp, req)
        check_eq(got, code, "reply code for %s" % name)
        if code == 0:
            c.send(b"\0opaque bytes")
            check_eq(c.read(13), b"\0opaque bytes", "relay after reply 0")
        else:
            check(c.closed(), "connection open after reply %d (%s)" % (code, name))
        clients.append((name, c.local, code, reason))
        c.close()
    recs = finish(e)
    for name, local, code, reason in clients:
        mine = [r for r in recs if r.get("client") == local and r["event"] == "connect"]
        check(mine, "no record for %s" % name)
        last = mine[-1]
        if code == 0:
            check_eq(last["decision"], "allow", "decision for %s" % name)
            continue
        check_eq((last["decision"], last["reason"], last["front"], "status" in last),
                 ("deny", reason, "socks5", False), "record for %s" % name)
        check(last.get("rule"), "no rule in the record for %s: %r" % (name, last))
        close = [r for r in recs if r["event"] == "close" and r["conn"] == last["conn"]]
        check_eq([x["end"] for x in close], ["denied"], "close end for %s" % name)


def case_malformed(h):
    """Malformed greetings, credentials and requests: a record each (decision deny), the
    answer the protocol allows, then the close; nothing reaches the origin."""
    origin = h.raw(echo_handler)
    sessions = token_sessions("origin.test")
    e, sp = socks_egressd(h, base_config(HOSTS, sessions=sessions))
    cases = [
        # name, bytes, expected answer bytes, reason
        ("SOCKS4 request", b"\x04\x01\x00\x50\x7f\x00\x00\x01user\x00", b"", "bad-request"),
        ("greeting offering no method", b"\x05\x00", b"", "bad-request"),
        ("greeting offering only GSSAPI", b"\x05\x01\x01", b"\x05\xff", "auth-required"),
        ("HTTP to the SOCKS5 port", b"GET / HTTP/1.1\r\nHost: origin.test\r\n\r\n", b"",
         "bad-request"),
        ("credentials of version 5", b"\x05\x01\x02" + b"\x05\x05agent\x0b" + TOKEN.encode(),
         b"\x05\x02", "bad-request"),
        ("an empty username", b"\x05\x01\x02" + b"\x01\x00\x01x", b"\x05\x02", "bad-request"),
        ("a NUL in the password",
         b"\x05\x01\x02" + b"\x01\x05agent\x03a\x00b", b"\x05\x02", "bad-request"),
        ("a NUL in the domain name", b"\x05\x01\x02\x01\x05agent" + bytes([len(TOKEN)]) +
         TOKEN.encode() + b"\x05\x01\x00\x03\x0dorigin.test\x00x\x00\x50",
         b"\x05\x02\x01\x00\x05\x01", "bad-request"),
    ]
    clients = []
    for name, data, answer, reason in cases:
        c = Raw(sp)
        c.send(data)
        got = c.read(len(answer) + 64, timeout=3)
        check(got.startswith(answer), "%s: answer %r, expected %r" % (name, got, answer))
        check(c.closed(), "%s: the connection stayed open" % name)
        clients.append((name, c.local, reason))
        c.close()
    check_eq(origin.accepted, 0, "connections at the origin")
    recs = finish(e)
    for name, local, reason in clients:
        mine = [r for r in recs if r.get("client") == local]
        dec = [r for r in mine if r["event"] == "connect"]
        check(dec and dec[-1]["decision"] == "deny" and dec[-1]["reason"] == reason and
              dec[-1]["front"] == "socks5" and dec[-1].get("rule"),
              "%s: records %r" % (name, mine))
        check_eq([r["end"] for r in mine if r["event"] == "close"], ["denied"],
                 "%s: close end" % name)


def case_first_bytes_with_request(h):
    """Bytes sent with the request (before the reply) are checked before the reply: a
    ClientHello for another host gets reply 2 and never leaves; a plain HTTP request for
    another Host inside the tunnel gets 421; the origin receives no byte of either."""
    got = []

    def record(c):
        while True:
            d = c.recv(65536)
            if not d:
                return
            got.append(d)
    origin = h.raw(record)
    e, sp = socks_egressd(h, base_config(HOSTS, sandbox("origin.test")))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname="other.test")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    c, code = socks_ask(sp, request("origin.test", origin.port), extra=out.read())
    check_eq(code, 2, "reply to a request whose ClientHello names another host")
    c.close()
    c, code = socks_ask(sp, request("origin.test", origin.port),
                        extra=b"GET / HTTP/1.1\r\nHost: other.test\r\n\r\n")
    check_eq(code, 0, "reply to a request carrying plain HTTP")
    head = c.read(12)
    check_eq(head, b"HTTP/1.1 421", "answer to a request for another Host inside the tunnel")
    c.close()
    recs = finish(e)
    check_eq(b"".join(got), b"", "bytes at the origin")
    den = [(r["event"], r["reason"], r.get("status")) for r in recs
           if r.get("decision") == "deny"]
    check_eq(den, [("connect", "sni-mismatch", None), ("request", "misdirected", 421)],
             "deny records")


def case_limit_clients(h):
    """limits.maxClientsPerSource on the SOCKS5 listener: the connection past it is closed
    without a byte (a SOCKS5 client has sent no greeting; no SOCKS5 message refuses before
    one), and no record is written."""
    origin = h.raw(echo_handler)
    cfg = base_config(HOSTS, sandbox("origin.test"), global_limits={"maxClientsPerSource": 3})
    e, sp = socks_egressd(h, cfg)
    held = [Raw(sp) for _ in range(3)]
    for c in held:
        c.send(b"\x05")  # half a greeting
    time.sleep(0.2)
    c = Raw(sp)
    c.send(b"\x05\x01\x00")
    check_eq(c.read(64, timeout=3), b"", "bytes to the connection past maxClientsPerSource")
    c.close()
    for x in held:
        x.close()
    time.sleep(0.2)
    c, code = socks_ask(sp, request("origin.test", origin.port))
    check_eq(code, 0, "reply once the half-open connections are gone")
    c.close()
    finish(e)


if __name__ == "__main__":
    if not shutil.which("curl"):
        skip("curl is not installed (tools/install-deps installs it)")
    run_cases("socks5", [
        ("curl --socks5-hostname and -x socks5h://: HTTPS allowed, another host refused",
         case_curl_socks5_hostname),
        ("curl with -U, --proxy-user and socks5h://USER:TOKEN@: the session by its token",
         case_curl_credentials),
        ("ALL_PROXY=socks5h://... with curl", case_all_proxy_curl),
        ("git clone over HTTPS with ALL_PROXY=socks5h://", case_git_clone_https),
        ("git clone over HTTPS refused by the host", case_git_clone_https_refused),
        ("git over HTTPS under actions: [git:push]: inspection-required",
         case_git_https_push_denied),
        ("PySocks: allowed, with credentials, refused", case_pysocks),
        ("ssh through nc -X 5: git ls-remote allowed (and under actions: [http:write])",
         case_ssh_nc_allowed),
        ("ssh through nc -X 5: refused by the host", case_ssh_nc_denied_host),
        ("ssh through nc -X 5: refused by actions: [ssh:read, ssh:write]",
         case_ssh_nc_denied_actions),
        ("reply codes and their records", case_reply_codes),
        ("malformed greetings, credentials and requests", case_malformed),
        ("first bytes sent with the request are checked before the reply",
         case_first_bytes_with_request),
        ("maxClientsPerSource on the SOCKS5 listener", case_limit_clients),
    ])
