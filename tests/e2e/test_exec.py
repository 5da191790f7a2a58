"""egressd exec (issue 10): one command under a private egressd, with and without --isolate.

Without --isolate: the proxy variables, the command's exit status, SIGINT forwarded, and the
summary of denials.  With --isolate (CMD in its own network namespace, egressd's listeners inside
it): curl with the proxy variables and with --noproxy '*' (the second through the transparent
listener), Node's built-in fetch without any proxy setting, Python's urllib, git clone over
HTTPS, git ls-remote over SSH through egressd connect to a loopback sshd, getent hosts of an
allowed and of a denied name, and a UDP datagram and a TCP connection to a documentation address
(both fail, nothing leaves).

Runs in a private network namespace (harness.rerun_in_netns): egressd itself, its origins and the
sshd live there, so no mistake can send a packet off the machine."""
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gitserver import GitServer, make_repo
from harness import (EGRESSD_BIN, Recorder, check, check_eq, clean_env, closed_port,
                     rerun_in_netns, run_cases, skip, to_yaml)

NO_NETNS = rerun_in_netns()

HOSTS = {"origin.test": ["127.0.0.1"], "git.test": ["127.0.0.1"], "sshd.test": ["127.0.0.1"],
         "evil.test": ["127.0.0.1"]}


def config(h, allow=("origin.test", "git.test", "sshd.test")):
    cfg = {
        "dns": {"servers": ["127.0.0.1:%d" % closed_port()], "hosts": HOSTS,
                "allowAddresses": ["127.0.0.0/8"], "timeout": "1s"},
        "limits": {"shutdownGrace": "1s", "headerTimeout": "3s"},
        "audit": {"path": os.path.join(h.tmp, "audit.jsonl")},
        "sessions": {"default": {"bound": {"network": {
            "allowDomains": ["%s:*" % a for a in allow], "enforce": "sandbox"}}}},
    }
    path = os.path.join(h.tmp, "exec.yaml")
    with open(path, "w") as f:
        f.write(to_yaml(cfg) + "\n")
    return path


def exec_run(args, cmd, env=None, timeout=60):
    e = clean_env()
    e.update(env or {})
    return subprocess.run([EGRESSD_BIN, "exec"] + args + ["--", "sh", "-c", cmd], env=e,
                          capture_output=True, text=True, timeout=timeout)


def audit(h):
    import json
    with open(os.path.join(h.tmp, "audit.jsonl")) as f:
        return [json.loads(l) for l in f if l.strip()]


def need_isolate():
    if NO_NETNS:
        skip("needs a private network namespace (%s)" % NO_NETNS)
    probe = subprocess.run([EGRESSD_BIN, "exec", "--isolate", "--", "true"], capture_output=True,
                           text=True, timeout=30, env=clean_env())
    if probe.returncode != 0:
        skip("exec --isolate cannot run here: %s" % probe.stderr.strip())


# ---------------------------------------------------------------------------------------------

def case_plain(h):
    rec = h.add(Recorder(mode="http"))
    cfg = config(h)
    r = exec_run(["-c", cfg],
                 'echo "P=$HTTP_PROXY A=$ALL_PROXY N=${NO_PROXY-unset} G=$GIT_SSH_COMMAND"; '
                 'curl -s -o /dev/null -w "ok %%{http_code}\\n" http://origin.test:%d/; '
                 'curl -s -o /dev/null -w "no %%{http_code}\\n" http://evil.test:%d/a; '
                 'curl -s -o /dev/null -w "no %%{http_code}\\n" http://evil.test:%d/b; exit 3'
                 % (rec.port, rec.port, rec.port), env={"NO_PROXY": "*"})
    check_eq(r.returncode, 3, "exit status of the command (stderr %s)" % r.stderr)
    out = r.stdout
    check("P=http://127.0.0.1:" in out and "A=socks5h://127.0.0.1:" in out,
          "proxy variables: %r" % out)
    check("N=unset" in out, "NO_PROXY is cleared: %r" % out)
    check("connect --proxy http://127.0.0.1:" in out, "GIT_SSH_COMMAND: %r" % out)
    check("ok 200" in out and out.count("no 403") == 2, "answers: %r" % out)
    check("egressd: denied evil.test:%d: host-not-allowed" % rec.port in r.stderr and
          "2 times" in r.stderr, "the summary: %r" % r.stderr)
    check(r.stderr.count("egressd: denied") == 1, "one line per destination: %r" % r.stderr)
    check_eq(len(rec.heads()), 1, "requests at the origin")


def case_flags(h):
    rec = h.add(Recorder(mode="http"))
    r = exec_run(["--allow", "origin.test", "--audit", os.path.join(h.tmp, "a.jsonl")],
                 'curl -s -o /dev/null -w "%%{http_code}" http://other.test:%d/' % rec.port)
    check_eq(r.returncode, 0, "exit status")
    check("--allow other.test" in r.stderr, "the summary names the flag that allows it: %r"
          % r.stderr)
    r = exec_run(["--allow", "origin.test"], "exit 0")
    check_eq((r.returncode, r.stderr), (0, ""), "nothing on stderr without a denial")


def case_sigint(h):
    cfg = config(h)
    e = clean_env()
    p = subprocess.Popen([EGRESSD_BIN, "exec", "-c", cfg, "--", "sh", "-c",
                          'trap "exit 42" INT; echo ready; while :; do sleep 0.1; done'],
                         env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        check_eq(p.stdout.readline().strip(), "ready", "the command started")
        p.send_signal(signal.SIGINT)
        rc = p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    check_eq(rc, 42, "egressd's exit after SIGINT reached the command")


def case_sigusr1_reopens(h):
    """SIGUSR1 to egressd exec reopens its audit log, as under serve: the command goes on (it
    was killed by the signal's default action, with no summary and no stop record)."""
    import json
    cfg = config(h)
    log = os.path.join(h.tmp, "audit.jsonl")
    p = subprocess.Popen([EGRESSD_BIN, "exec", "-c", cfg, "--", "sh", "-c",
                          'echo ready; read x; echo done; exit 5'],
                         env=clean_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        check_eq(p.stdout.readline().strip(), "ready", "the command started")
        os.rename(log, log + ".1")
        p.send_signal(signal.SIGUSR1)
        deadline = time.time() + 10
        while not os.path.exists(log) and time.time() < deadline:
            time.sleep(0.05)
        check(os.path.exists(log), "no new audit log after SIGUSR1")
        p.stdin.write("go\n")
        p.stdin.flush()
        out, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    check_eq((p.returncode, out.strip()), (5, "done"), "the command's status and output after "
             "SIGUSR1 (stderr %r)" % err)
    with open(log) as f:
        events = [json.loads(l)["event"] for l in f if l.strip()]
    check(events and events[-1] == "stop", "the new log does not end with stop: %r" % events)


def case_missing_command(h):
    r = subprocess.run([EGRESSD_BIN, "exec", "--", "/nonexistent/cmd"], capture_output=True,
                       text=True, timeout=30, env=clean_env())
    check_eq(r.returncode, 127, "a command that cannot be run")


# ---------------------------------------------------------------------------------------------
# --isolate

def case_isolate_clients(h):
    need_isolate()
    rec = h.add(Recorder(mode="http"))
    cfg = config(h)
    node = shutil.which("node")
    script = [
        'curl -s -o /dev/null -w "proxy %%{http_code}\\n" http://origin.test:%d/p' % rec.port,
        'curl -s --noproxy "*" -o /dev/null -w "noproxy %%{http_code}\\n" '
        'http://origin.test:%d/n' % rec.port,
        'python3 -c "import urllib.request as u; print(\'urllib\', u.urlopen('
        '\'http://origin.test:%d/u\').status)"' % rec.port,
        'curl -s --noproxy "*" -o /dev/null -w "evil %%{http_code}\\n" http://evil.test:%d/'
        % rec.port,
        'getent hosts origin.test >/dev/null && echo "getent allowed ok"',
        'getent hosts evil.test >/dev/null || echo "getent denied ok"',
    ]
    if node is not None:
        script.append('node -e "fetch(\'http://origin.test:%d/f\').then(r => '
                      'console.log(\'fetch\', r.status))"' % rec.port)
    r = exec_run(["-c", cfg, "--isolate"], "; ".join(script), timeout=90)
    out = r.stdout
    check_eq(r.returncode, 0, "exit status (stderr %s)" % r.stderr)
    for want in ("proxy 200", "noproxy 200", "urllib 200", "getent allowed ok",
                 "getent denied ok"):
        check(want in out, "%r missing from: %r (stderr %r)" % (want, out, r.stderr))
    if node is not None:
        check("fetch 200" in out, "Node's fetch without a proxy setting: %r" % out)
    else:
        print("     (node is not installed: the fetch line was left out)")
    check("evil 000" in out or "evil 403" in out, "a denied name: %r" % out)
    paths = sorted(h_.split(b" ")[1].decode() for h_ in rec.heads())
    want_paths = ["/f", "/n", "/p", "/u"] if node else ["/n", "/p", "/u"]
    check_eq(paths, want_paths, "requests at the origin")
    fronts = {r_["path"]: r_["front"] for r_ in audit(h)
              if r_["event"] == "request" and r_["decision"] == "allow"}
    check_eq(fronts.get("/n"), "transparent", "curl --noproxy went through the transparent door")
    check_eq(fronts.get("/p"), "http", "curl with the proxy variables went through the proxy")


def case_isolate_nothing_leaves(h):
    need_isolate()
    cfg = config(h)
    probe = ("import socket, errno\n"
             "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
             "try:\n"
             "    u.sendto(b'x', ('192.0.2.1', 9)); print('udp sent')\n"
             "except OSError as e:\n"
             "    print('udp refused', e.errno)\n"
             "t = socket.create_connection(('192.0.2.1', 80), timeout=5)\n"
             "t.sendall(b'\\x00\\x01 no name')\n"
             "t.settimeout(10)\n"
             "print('tcp got', len(t.recv(100)))\n")
    path = os.path.join(h.tmp, "probe.py")
    with open(path, "w") as f:
        f.write(probe)
    r = exec_run(["-c", cfg, "--isolate"], "python3 %s" % path, timeout=60)
    check("udp refused" in r.stdout, "a UDP datagram left the namespace: %r %r"
          % (r.stdout, r.stderr))
    check("tcp got 0" in r.stdout, "a TCP connection to a documentation address got bytes: %r"
          % r.stdout)
    deny = [x for x in audit(h) if x["event"] == "connect" and x["decision"] == "deny"]
    check_eq([(x["front"], x["reason"], x.get("orig_dst")) for x in deny],
             [("transparent", "opaque-tunnel", "192.0.2.1:80")], "the refusal's record")


def case_isolate_git(h):
    need_isolate()
    cert = os.path.join(h.tmp, "git.pem")
    key = os.path.join(h.tmp, "git.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=git.test",
                    "-addext", "subjectAltName=DNS:git.test", "-days", "1", "-keyout", key,
                    "-out", cert], check=True, capture_output=True, timeout=30)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    root = os.path.join(h.tmp, "repos")
    os.makedirs(root)
    make_repo(root, "r")
    srv = h.add(GitServer(root, ctx))
    cfg = config(h)
    work = os.path.join(h.tmp, "clone")
    r = exec_run(["-c", cfg, "--isolate"],
                 "git clone -q https://git.test:%d/r.git %s && git -C %s fetch -q"
                 % (srv.port, work, work),
                 env={"HOME": h.tmp, "GIT_SSL_CAINFO": cert}, timeout=90)
    check_eq(r.returncode, 0, "git clone over HTTPS inside --isolate: %s" % r.stderr)
    check(os.path.exists(os.path.join(work, "README")), "the clone has its file")


def case_isolate_ssh(h):
    need_isolate()
    from test_connect_cmd import Sshd
    s = h.add(Sshd(h.tmp))
    cfg = config(h)
    ssh = ("ssh -F /dev/null -i %s -o IdentitiesOnly=yes -o BatchMode=yes "
           "-o StrictHostKeyChecking=yes -o UserKnownHostsFile=%s "
           "-o GlobalKnownHostsFile=/dev/null -o ConnectTimeout=10 "
           "-o ProxyCommand=\"%s connect --proxy $HTTPS_PROXY %%h %%p\""
           % (os.path.join(s.dir, "user"), s.known_hosts, EGRESSD_BIN))
    cmd = ('GIT_SSH_COMMAND=\'%s\' git ls-remote ssh://%s@sshd.test:%d%s'
           % (ssh, s.user, s.port, s.repo))
    r = exec_run(["-c", cfg, "--isolate"], cmd, timeout=90)
    check_eq(r.returncode, 0, "git ls-remote over ssh inside --isolate: %s\nsshd: %s"
             % (r.stderr, s.read_log()))
    check_eq(r.stdout, "%s\trefs/heads/main\n" % s.commit, "git ls-remote output")
    # The same with sshd.test not allowed: refused, and the summary says so.
    cfg = config(h, allow=("origin.test",))
    r = exec_run(["-c", cfg, "--isolate"], cmd, timeout=90)
    check(r.returncode != 0, "git ls-remote to a host the bound does not allow succeeded")
    check("egressd: denied sshd.test:%d: host-not-allowed" % s.port in r.stderr,
          "the summary: %r" % r.stderr)


if __name__ == "__main__":
    run_cases("exec", [
        ("exec: proxy variables, exit status, one summary line per denied destination",
         case_plain),
        ("exec from flags: the summary names the --allow that would allow it", case_flags),
        ("exec: SIGINT reaches the command, egressd exits with its status", case_sigint),
        ("exec: SIGUSR1 reopens the audit log; the command goes on", case_sigusr1_reopens),
        ("exec: a command that cannot be run exits 127", case_missing_command),
        ("exec --isolate: curl (proxy and --noproxy), urllib, Node fetch, getent",
         case_isolate_clients),
        ("exec --isolate: UDP and a nameless TCP connection go nowhere", case_isolate_nothing_leaves),
        ("exec --isolate: git clone and fetch over HTTPS", case_isolate_git),
        ("exec --isolate: git ls-remote over ssh through egressd connect, allowed and denied",
         case_isolate_ssh),
    ])
