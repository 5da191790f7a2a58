"""egressd connect [--proxy URL] HOST PORT: standard input and output through the real egressd.

- ssh with ProxyCommand='egressd connect ...' to a loopback sshd this test starts (throwaway host
  and user keys in the case's temp dir, sshd -D on a loopback port), running `git ls-remote`
  over SSH against a bare repository: allowed by the session's bound, then denied (git fails,
  egressd connect says why).
- A raw byte relay through CONNECT (stdin to the origin, the origin's echo to stdout, exit 0),
  the proxy taken from HTTPS_PROXY with the session's credentials in it.
- A denial: exit 1, X-Egressd-Reason and the body's line on standard error, nothing sent on.
- SOCKS5 (socks5h://) through egressd's own listen.socks5.

sshd runs as the user running the test (test_exec's Sshd, in the user namespace that
rerun_in_netns gives an ordinary user, in a nested one that maps that user back); when that
user's login shell cannot run commands (nobody's nologin), the ssh cases are SKIPPED with that
reason.
"""

import os
import pwd
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (EGRESSD_BIN, TestFailure, base_config, check,  # noqa: F401
                     check_audit_log, check_eq, clean_env, closed_port, echo_handler, run_cases,
                     real_root, skip)

SSHD = "/usr/sbin/sshd"


def sandbox(*hosts):
    return {"allowDomains": [h + ":*" for h in hosts], "enforce": "sandbox"}


def run(argv, env=None, stdin=b"", timeout=30, cwd=None):
    try:
        return subprocess.run(argv, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env or clean_env(), timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise TestFailure("%r did not finish within %ss" % (argv, timeout))


def outside_ids():
    """The uid and gid outside this user namespace that its root (uid and gid 0) stands for."""
    ids = []
    for name in ("uid_map", "gid_map"):
        with open("/proc/self/" + name) as f:
            for line in f:
                inside, outside, count = (int(x) for x in line.split())
                if inside == 0:
                    ids.append(outside)
                    break
            else:
                raise TestFailure("no %s line maps 0 here" % name)
    return ids


class Sshd:
    """sshd -D on 127.0.0.1:port with throwaway keys, serving a bare repository."""

    def __init__(self, tmp):
        # As the root of an ordinary user's namespace (rerun_in_netns), sshd would be root and
        # switch to its privilege-separation user, which the namespace does not map: it runs in
        # a nested user namespace that maps the user back to their own uid (the same network
        # namespace), so it is the user's sshd there too, as outside any namespace.
        wrap = []
        uid = os.getuid()
        if uid == 0 and not real_root():
            uid, gid = outside_ids()
            wrap = ["unshare", "-U", "--map-user=%d" % uid, "--map-group=%d" % gid, "--"]
        user = pwd.getpwuid(uid)
        if user.pw_shell.endswith(("nologin", "false")):
            skip("the login shell of %s is %s: sshd cannot run git-upload-pack for "
                          "it" % (user.pw_name, user.pw_shell))
        if not os.path.exists(SSHD):
            skip("%s is not installed (Debian package openssh-server)" % SSHD)
        if wrap:
            probe = subprocess.run(wrap + ["true"], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if probe.returncode != 0:
                said = " ".join(probe.stderr.split()) or "exit %d" % probe.returncode
                skip("sshd as the root of a user namespace cannot switch to its "
                     "privilege-separation user, and a nested namespace that would run it as "
                     "%s cannot be made here: %s" % (user.pw_name, said))
        elif uid == 0 and not os.path.isdir("/run/sshd"):
            os.makedirs("/run/sshd", mode=0o755)  # sshd's privilege separation directory
        self.dir = os.path.join(tmp, "sshd")
        os.makedirs(self.dir)
        os.chmod(self.dir, 0o700)
        d = self.dir
        for name in ("host", "user"):
            run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f",
                 os.path.join(d, name)])
        shutil.copy(os.path.join(d, "user.pub"), os.path.join(d, "authorized_keys"))
        self.port = closed_port()
        self.user = user.pw_name
        with open(os.path.join(d, "sshd_config"), "w") as f:
            f.write("Port %d\nListenAddress 127.0.0.1\nHostKey %s\nAuthorizedKeysFile %s\n"
                    "PidFile none\nUsePAM no\nStrictModes no\nPasswordAuthentication no\n"
                    "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
                    "PermitRootLogin prohibit-password\nAllowUsers %s\nLogLevel VERBOSE\n"
                    % (self.port, os.path.join(d, "host"), os.path.join(d, "authorized_keys"),
                       self.user))
        with open(os.path.join(d, "host.pub")) as f:
            hostkey = " ".join(f.read().split()[:2])
        self.known_hosts = os.path.join(d, "known_hosts")
        with open(self.known_hosts, "w") as f:
            f.write("[sshd.test]:%d %s\n" % (self.port, hostkey))
        self.log = open(os.path.join(d, "sshd.log"), "wb")
        self.proc = subprocess.Popen(wrap + [SSHD, "-D", "-e", "-f",
                                             os.path.join(d, "sshd_config")],
                                     stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.05)
        else:
            self.close()
            raise TestFailure("sshd did not listen within 10 s")
        if self.proc.poll() is not None:
            self.close()
            raise TestFailure("sshd exited %r: %s" % (self.proc.returncode, self.read_log()))
        # A bare repository with one commit (an empty tree), made with git's plumbing.
        self.repo = os.path.join(d, "repo.git")
        run(["git", "init", "-q", "--bare", self.repo])
        genv = dict(clean_env(), GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.test",
                    GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.test")
        tree = run(["git", "--git-dir", self.repo, "mktree"], env=genv).stdout.decode().strip()
        commit = run(["git", "--git-dir", self.repo, "commit-tree", tree, "-m", "one"],
                     env=genv).stdout.decode().strip()
        run(["git", "--git-dir", self.repo, "update-ref", "refs/heads/main", commit])
        self.commit = commit

    def read_log(self):
        self.log.flush()
        with open(os.path.join(self.dir, "sshd.log"), "rb") as f:
            return f.read().decode("utf-8", "replace")[-2000:]

    def git_ls_remote(self, proxy_url):
        ssh = ("ssh -F /dev/null -i %s -o IdentitiesOnly=yes -o BatchMode=yes "
               "-o StrictHostKeyChecking=yes -o UserKnownHostsFile=%s "
               "-o GlobalKnownHostsFile=/dev/null -o ConnectTimeout=10 "
               "-o ProxyCommand='%s connect --proxy %s %%h %%p'"
               % (os.path.join(self.dir, "user"), self.known_hosts, EGRESSD_BIN, proxy_url))
        env = dict(clean_env(), GIT_SSH_COMMAND=ssh, GIT_TERMINAL_PROMPT="0")
        return run(["git", "ls-remote", "ssh://%s@sshd.test:%d%s" % (self.user, self.port,
                                                                    self.repo)],
                   env=env, timeout=60)

    def git_push(self, proxy_url, work):
        """Pushes a new commit from a clone in work to the repository's main over ssh."""
        ssh = ("ssh -F /dev/null -i %s -o IdentitiesOnly=yes -o BatchMode=yes "
               "-o StrictHostKeyChecking=yes -o UserKnownHostsFile=%s "
               "-o GlobalKnownHostsFile=/dev/null -o ConnectTimeout=10 "
               "-o ProxyCommand='%s connect --proxy %s %%h %%p'"
               % (os.path.join(self.dir, "user"), self.known_hosts, EGRESSD_BIN, proxy_url))
        env = dict(clean_env(), GIT_SSH_COMMAND=ssh, GIT_TERMINAL_PROMPT="0",
                   GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.test",
                   GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.test")
        run(["git", "init", "-q", work], env=env)
        run(["git", "-C", work, "commit", "-q", "--allow-empty", "-m", "pushed"], env=env)
        return run(["git", "-C", work, "push", "ssh://%s@sshd.test:%d%s" % (
            self.user, self.port, self.repo), "HEAD:refs/heads/pushed"], env=env, timeout=60)

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()


def sshd(h):
    s = Sshd(h.tmp)
    return h.add(s)


HOSTS = {"sshd.test": ["127.0.0.1"], "echo.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]}


def case_git_over_ssh_allowed(h):
    s = sshd(h)
    e = h.egressd(base_config(HOSTS, sandbox("sshd.test")))
    r = s.git_ls_remote("http://127.0.0.1:%d" % e.port)
    check(r.returncode == 0, "git ls-remote over ssh through egressd connect failed (%d): %s\n"
          "sshd: %s" % (r.returncode, r.stderr.decode(), s.read_log()))
    check_eq(r.stdout.decode(), "%s\trefs/heads/main\n" % s.commit, "git ls-remote output")
    rec = e.wait_audit(lambda x: x["event"] == "connect" and x.get("host") == "sshd.test",
                       what="connect record for sshd.test")
    check_eq((rec["decision"], rec["port"]), ("allow", s.port), "connect record")
    check_eq(e.stop(), 0, "egressd exit")
    check_audit_log(e.audit())


def case_git_over_ssh_denied(h):
    s = sshd(h)
    e = h.egressd(base_config(HOSTS, sandbox("other.test")))
    r = s.git_ls_remote("http://127.0.0.1:%d" % e.port)
    err = r.stderr.decode()
    check(r.returncode != 0, "git ls-remote succeeded although sshd.test is not allowed")
    check("egressd: connect: the proxy refused sshd.test:%d: 403 Forbidden "
          "(X-Egressd-Reason: host-not-allowed)" % s.port in err,
          "egressd connect's reason missing from git's stderr: %s" % err)
    check("egressd: connect: egressd denied CONNECT sshd.test:%d: host-not-allowed" % s.port
          in err, "the body's line missing from git's stderr: %s" % err)
    check("Accepted publickey" not in s.read_log(), "sshd saw a login: %s" % s.read_log())
    rec = e.wait_audit(lambda x: x["event"] == "connect" and x.get("host") == "sshd.test",
                       what="connect record for sshd.test")
    check_eq((rec["decision"], rec["reason"]), ("deny", "host-not-allowed"), "deny record")
    check_eq(e.stop(), 0, "egressd exit")


def case_git_push_over_ssh_refused(h):
    """actions: [git:push] refuses git push over ssh: egressd cannot tell git over ssh from any
    other ssh session, so it refuses the SSH tunnel (inspection-required) before a byte of the
    client's reaches sshd; the classifier says git:push for the same line."""
    s = sshd(h)
    bound = dict(sandbox("sshd.test"), actions=["git:push"])
    e = h.egressd(base_config(HOSTS, bound))
    r = s.git_push("http://127.0.0.1:%d" % e.port, os.path.join(h.tmp, "work"))
    check(r.returncode != 0, "git push over ssh succeeded under actions: [git:push]: %s"
          % r.stderr.decode())
    refs = run(["git", "--git-dir", s.repo, "for-each-ref", "--format=%(refname)"]).stdout
    check_eq(refs.decode(), "refs/heads/main\n", "the origin's refs after the refused push")
    check("Accepted publickey" not in s.read_log(), "sshd saw a login: %s" % s.read_log())
    rec = e.wait_audit(lambda x: x["event"] == "connect" and x.get("host") == "sshd.test"
                       and x.get("decision") == "deny", what="deny record for sshd.test")
    check_eq((rec["reason"], rec["rule"]), (
        "inspection-required",
        "actions: git:push (an SSH tunnel carries git:fetch, git:push, ssh:read, ssh:write)"),
        "deny record")
    check_eq(e.stop(), 0, "egressd exit")
    check_audit_log(e.audit())


def case_relay_from_https_proxy(h):
    origin = h.raw(echo_handler)
    sessions = {"default": {"bound": {"network": sandbox("other.test")}},
                "agent": {"auth": {"token": "s3cret:x"}, "bound": {"network": sandbox("echo.test")}}}
    e = h.egressd(base_config(HOSTS, sessions=sessions))
    data = bytes(range(256)) * 64  # 16 KiB, every byte value
    # The token holds a ':' (percent-encoded in the URL): credentials are decoded before use.
    env = dict(clean_env(), HTTPS_PROXY="http://agent:s3cret%%3Ax@127.0.0.1:%d" % e.port)
    r = run([EGRESSD_BIN, "connect", "echo.test", str(origin.port)], env=env, stdin=data)
    check_eq(r.returncode, 0, "egressd connect exit (stderr %r)" % r.stderr)
    check_eq(r.stdout, data, "bytes echoed through the tunnel")
    rec = e.wait_audit(lambda x: x["event"] == "connect", what="connect record")
    check_eq((rec["session"], rec["host"], rec["decision"]), ("agent", "echo.test", "allow"),
             "connect record")
    close = e.wait_audit(lambda x: x["event"] == "close" and x.get("conn") == rec["conn"],
                         what="close record")
    check_eq((close["bytes_out"], close["bytes_in"]), (len(data), len(data)),
             "bytes each way in the close record")


def case_denied_exit_1(h):
    origin = h.raw(echo_handler)
    e = h.egressd(base_config(HOSTS, sandbox("other.test")))
    r = run([EGRESSD_BIN, "connect", "--proxy", "http://127.0.0.1:%d" % e.port, "echo.test",
             str(origin.port)], stdin=b"must not arrive")
    err = r.stderr.decode()
    check_eq(r.returncode, 1, "exit status of a refused tunnel")
    check_eq(r.stdout, b"", "standard output of a refused tunnel")
    check("403 Forbidden (X-Egressd-Reason: host-not-allowed)" in err, "reason: %r" % err)
    check("allowDomains" in err, "the body's line (the key that would allow it): %r" % err)
    check_eq(origin.accepted, 0, "connections at the origin")


def case_usage_and_unreachable(h):
    r = run([EGRESSD_BIN, "connect", "echo.test"])
    check_eq(r.returncode, 2, "exit status without a port")
    r = run([EGRESSD_BIN, "connect", "echo.test", "80"])
    check_eq(r.returncode, 2, "exit status without any proxy")
    check("no proxy" in r.stderr.decode(), "message without a proxy: %r" % r.stderr)
    r = run([EGRESSD_BIN, "connect", "--proxy", "ftp://127.0.0.1:1", "echo.test", "80"])
    check_eq(r.returncode, 2, "exit status for an unknown scheme")
    r = run([EGRESSD_BIN, "connect", "--proxy", "http://127.0.0.1:%d" % closed_port(),
             "echo.test", "80"])
    check_eq(r.returncode, 1, "exit status when the proxy cannot be reached")
    check("Connection refused" in r.stderr.decode(), "message: %r" % r.stderr)


class FakeSocks5:
    """A minimal RFC 1928/1929 server: records the greeting, the credentials and the CONNECT
    request, answers with reply code rep, then echoes (so the client can be checked byte by byte
    before egressd has a SOCKS5 listener of its own)."""

    def __init__(self, h, rep, need_auth):
        self.rep, self.need_auth, self.seen = rep, need_auth, {}
        self.server = h.raw(self.handle)
        self.port = self.server.port

    def recv_exact(self, c, n):
        b = b""
        while len(b) < n:
            d = c.recv(n - len(b))
            if not d:
                raise OSError("EOF")
            b += d
        return b

    def handle(self, c):
        ver, n = self.recv_exact(c, 2)
        self.seen["greeting"] = (ver, self.recv_exact(c, n))
        method = 2 if self.need_auth else 0
        c.sendall(bytes([5, method if bytes([method]) in self.seen["greeting"][1] else 0xff]))
        if self.need_auth:
            ver, ulen = self.recv_exact(c, 2)
            user = self.recv_exact(c, ulen)
            plen = self.recv_exact(c, 1)[0]
            self.seen["auth"] = (ver, user, self.recv_exact(c, plen))
            c.sendall(b"\x01\x00")
        ver, cmd, _, atyp = self.recv_exact(c, 4)
        addr = self.recv_exact(c, self.recv_exact(c, 1)[0] if atyp == 3 else
                               {1: 4, 4: 16}[atyp])
        port = int.from_bytes(self.recv_exact(c, 2), "big")
        self.seen["request"] = (ver, cmd, atyp, addr, port)
        # The bound address as a name, so the client must read a variable-length reply.
        name = b"bound.test"
        c.sendall(bytes([5, self.rep, 0, 3, len(name)]) + name + b"\x00\x50")
        if self.rep == 0:
            echo_handler(c)


def case_socks5_client(h):
    ok = FakeSocks5(h, 0, need_auth=True)
    r = run([EGRESSD_BIN, "connect", "--proxy", "socks5h://agent:t%%40k@127.0.0.1:%d" % ok.port,
             "echo.test", "8443"], stdin=b"hello socks")
    check_eq((r.returncode, r.stdout), (0, b"hello socks"), "relay (stderr %r)" % r.stderr)
    check_eq(ok.seen["greeting"], (5, b"\x02"), "greeting: version 5, username/password")
    check_eq(ok.seen["auth"], (1, b"agent", b"t@k"), "RFC 1929 credentials (decoded)")
    check_eq(ok.seen["request"], (5, 1, 3, b"echo.test", 8443), "CONNECT with the name")
    v6 = FakeSocks5(h, 0, need_auth=False)
    r = run([EGRESSD_BIN, "connect", "--proxy", "socks5://127.0.0.1:%d" % v6.port,
             "2001:db8::1", "22"], stdin=b"x")
    check_eq(r.returncode, 0, "relay to an IPv6 literal (stderr %r)" % r.stderr)
    check_eq(v6.seen["greeting"], (5, b"\x00"), "greeting without credentials")
    check_eq(v6.seen["request"][2:], (4, socket.inet_pton(socket.AF_INET6, "2001:db8::1"), 22),
             "CONNECT to an IPv6 literal")
    no = FakeSocks5(h, 2, need_auth=False)
    r = run([EGRESSD_BIN, "connect", "--proxy", "socks5h://127.0.0.1:%d" % no.port,
             "other.test", "443"], stdin=b"no")
    check_eq((r.returncode, r.stdout), (1, b""), "a SOCKS5 refusal")
    check("the proxy refused other.test:443: SOCKS5 reply 2 (connection not allowed by "
          "ruleset)" in r.stderr.decode(), "refusal message: %r" % r.stderr)


def case_socks5(h):
    """egressd connect through egressd's own listen.socks5: relayed when allowed, reply 2 when
    the bound refuses the host."""
    origin = h.raw(echo_handler)
    cfg = base_config(HOSTS, sandbox("echo.test"))
    cfg["listen"]["socks5"] = ["127.0.0.1:0"]
    e = h.egressd(cfg)
    line = e.wait_stderr(r"listening on 127\.0\.0\.1:\d+ \(listen\.socks5\)", 5)
    check(line, "no SOCKS5 listener: %s" % e.stderr())
    port = int(line.split(":")[-1].split(" ")[0])
    r = run([EGRESSD_BIN, "connect", "--proxy", "socks5h://127.0.0.1:%d" % port, "echo.test",
             str(origin.port)], stdin=b"through socks")
    check_eq((r.returncode, r.stdout), (0, b"through socks"), "SOCKS5 relay (%r)" % r.stderr)
    r = run([EGRESSD_BIN, "connect", "--proxy", "socks5h://127.0.0.1:%d" % port, "other.test",
             str(origin.port)], stdin=b"no")
    check_eq(r.returncode, 1, "exit status of a SOCKS5 refusal")
    check("SOCKS5 reply 2 (connection not allowed by ruleset)" in r.stderr.decode(),
          "SOCKS5 refusal reason: %r" % r.stderr)


if __name__ == "__main__":
    run_cases("egressd connect", [
        ("git ls-remote over ssh through egressd connect, allowed", case_git_over_ssh_allowed),
        ("git ls-remote over ssh through egressd connect, denied", case_git_over_ssh_denied),
        ("git push over ssh refused under actions: [git:push]", case_git_push_over_ssh_refused),
        ("raw relay, proxy and credentials from HTTPS_PROXY", case_relay_from_https_proxy),
        ("a refused tunnel: exit 1 with the reason", case_denied_exit_1),
        ("usage errors and an unreachable proxy", case_usage_and_unreachable),
        ("the SOCKS5 client against a minimal RFC 1928 server", case_socks5_client),
        ("SOCKS5 (socks5h://) through egressd, allowed and refused", case_socks5),
    ])
