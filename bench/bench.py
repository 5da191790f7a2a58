#!/usr/bin/env python3
"""bench/run: egressd beside DIRECT, the egressd of an older commit, tinyproxy and Squid, in one
run, on loopback.

Starts an nginx origin and the proxies with equivalent allowlists (origin.test and inspect.test
only), measures the figures of docs/benchmarks.md for every target with the targets interleaved,
and prints one table: median [min-max] per figure and target, and egressd's ratios to DIRECT,
to the floor relay, to the old egressd and to each peer.  Every process it starts is recorded
and stopped on exit, whatever the exit; every loop is bounded in count and in time, and the
whole run has a time budget (docs/benchmarks.md says how long each mode takes).

Clients: wrk for figure 1; bench/benchclient.c (C, OpenSSL, blocking sockets) for the fetches,
downloads and held tunnels; bench/decide_bench.c (C, linked with egressd's allowlist library)
for the decision cost; dnsperf (Debian's package) for the DNS listener; hyperfine (Debian's
package) for egressd exec; bench/mint_bench.c (linked with egressd's proxy library) for a mint.
"""

import argparse
import datetime
import json
import os
import re
import select
import shlex
import shutil
import signal
import socket
import statistics
import string
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TARGETS = ["DIRECT", "RELAY", "egressd", "egressd-old", "tinyproxy", "squid"]
PROXIES = ["RELAY", "egressd", "egressd-old", "tinyproxy", "squid"]
LABEL = {"DIRECT": "DIRECT", "RELAY": "floor relay", "egressd": "egressd",
         "egressd-old": "egressd-old", "tinyproxy": "tinyproxy", "squid": "Squid"}
# The old egressd of issue 9's "no regression": the proxy before that wave's restructure, built
# from a detached worktree of this commit (--old-rev; --old-rev none leaves the target out).
OLD_REV = "746d6b6"
EGRESSDS = ("egressd", "egressd-old")
# RELAY (bench/relay.c) is the floor for a CONNECT proxy here: CONNECT line, 200, splice, and
# nothing else.  It takes part in the CONNECT figures only and has no allowlist to probe.
CONNECT_ONLY = {"RELAY"}
RELAY_EXE = None  # built by build_helpers beside benchclient
ORIGIN = "origin.test"
# The host egressd inspects (tls.ca, inspect) and bumped Squid bumps; the origin's certificate
# names both, signed by the run's test CA.
INSPECTED = "inspect.test"
# A name every resolver here answers (127.0.0.1, where nginx listens) but no allowlist admits:
# a proxy that forwards it has an allowlist that is not equivalent to the others'.
DENIED = "localhost"
CFLAGS = ["-std=c17", "-D_GNU_SOURCE", "-O2", "-Wall", "-Wextra", "-Werror", "-Wshadow",
          "-Wformat=2", "-Wstrict-prototypes", "-Wvla"]

# Debian package -> the binary the harness runs.  squid-openssl is Squid built with OpenSSL (the
# one that can ssl_bump); it replaces the plain squid package and installs the same binary.
PACKAGES = {"nginx": "nginx", "tinyproxy": "tinyproxy", "squid-openssl": "squid", "wrk": "wrk",
            "openssl": "openssl", "util-linux": "unshare", "dnsperf": "dnsperf",
            "hyperfine": "hyperfine", "nftables": "nft", "iproute2": "ip"}
SERVICES = {"nginx": "/run/nginx.pid", "tinyproxy": "/run/tinyproxy/tinyproxy.pid",
            "squid-openssl": "/run/squid.pid"}
# Where squid-openssl keeps the helper that mints Squid's certificates.
SQUID_CERTGEN = "/usr/lib/squid/security_file_certgen"

MODES = {
    # reps: repetitions of every figure; wrk_s: seconds per wrk run; gets: 64 MiB fetches per
    # figure and repetition (pair_gets: pairs of downloads whose ratio is a figure: SOCKS5 or
    # transparent beside CONNECT); fetches/fetch_s: the new-connection loop's count and time bound;
    # tunnels/tunnel_s: idle (and first-bytes) tunnels and the time bound to open them;
    # insp_tunnels: idle inspected tunnels (each a TLS session in the proxy); decide_s: seconds
    # per pattern count in the policy micro-benchmark; dns_s: seconds of dnsperf per repetition;
    # exec_runs: runs of each command in the exec figure; mints: leaves bench_mint mints;
    # budget_s: the measurements (setup and the first builds of egressd come before it).
    "full": dict(reps=3, wrk_s=5, gets=3, pair_gets=6, fetches=1000, fetch_s=90,
                 tunnels=5000, tunnel_s=60, insp_tunnels=2000, decide_s=0.5, dns_s=10,
                 exec_runs=100, mints=1000, budget_s=25 * 60),
    "quick": dict(reps=1, wrk_s=2, gets=2, pair_gets=4, fetches=200, fetch_s=10,
                  tunnels=2000, tunnel_s=15, insp_tunnels=300, decide_s=0.2, dns_s=3,
                  exec_runs=20, mints=200, budget_s=360),
}

T0 = time.monotonic()


def log(msg):
    print("[%6.1fs] %s" % (time.monotonic() - T0, msg), file=sys.stderr, flush=True)


class Procs:
    """Every process the harness starts, each the leader of its own process group, so that
    stopping it also stops what it forked (nginx's worker) and nothing else."""

    def __init__(self):
        self.procs = []

    def start(self, name, argv, **kw):
        kw.setdefault("stdin", subprocess.DEVNULL)
        p = subprocess.Popen(argv, start_new_session=True, **kw)
        self.procs.append((name, p))
        log("started %s (pid %d)" % (name, p.pid))
        return p

    def stop(self, p, grace=5.0):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        # The leader may be gone while a child it forked lives on in the group.
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            p.wait(2)
        except subprocess.TimeoutExpired:
            pass

    def stop_and_forget(self, p):
        self.stop(p)
        self.procs = [(n, q) for n, q in self.procs if q is not p]

    def stop_all(self):
        while self.procs:
            name, p = self.procs.pop()
            self.stop(p)
            log("stopped %s (pid %d)" % (name, p.pid))


PROCS = Procs()


def run(argv, timeout, **kw):
    """subprocess.run in a process group of its own: on a timeout, a signal or any other exit the
    whole group (cmake's compilers, say) is killed, not only its leader.  Captures text output."""
    p = subprocess.Popen(argv, start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    try:
        out, err = p.communicate(timeout=timeout)
    except BaseException:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        raise
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def on_signal(signum, _frame):
    raise SystemExit(128 + signum)


class Budget:
    """The run's time budget: a measurement that would start after it is skipped."""

    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def left(self):
        return self.end - time.monotonic()


# ---------------------------------------------------------------------------------------------
# Tools, packages and builds


def which(name):
    return shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")


def ensure_packages(allow_install):
    """Installs the missing peers and tools with apt-get, then stops any service a package
    started (the harness runs its own instances).  Returns {package: reason} for those still
    missing."""
    missing = [pkg for pkg, binary in PACKAGES.items() if not installed(pkg, binary)]
    if not missing:
        return {}
    if not allow_install:
        return {pkg: "not installed (--no-install)" for pkg in missing}
    if os.geteuid() != 0:
        return {pkg: "not installed and not root" for pkg in missing}
    running_before = {svc: pidfile_pid(pf) for svc, pf in SERVICES.items()}
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    log("installing %s" % " ".join(missing))
    cmd = ["apt-get", "install", "-y", "--no-install-recommends"] + missing
    r = run(cmd, 600, env=env)
    if r.returncode != 0:
        run(["apt-get", "update"], 300, env=env)
        r = run(cmd, 600, env=env)
    for svc, pf in SERVICES.items():
        if svc in missing and running_before[svc] is None and pidfile_pid(pf) is not None:
            log("stopping the %s service the package started" % svc)
            run(["service", svc, "stop"], 60)
            pid = pidfile_pid(pf)
            if pid is not None:
                os.kill(pid, signal.SIGTERM)
    tail = (r.stderr or r.stdout or "").strip().splitlines()[-1:] or ["?"]
    return {pkg: "apt-get install failed: %s" % tail[0]
            for pkg in missing if not installed(pkg, PACKAGES[pkg])}


def installed(pkg, binary):
    """Whether pkg's binary is there (for squid-openssl: a squid built with OpenSSL)."""
    if which(binary) is None:
        return False
    return pkg != "squid-openssl" or squid_can_bump()


def squid_can_bump():
    """True when the installed squid was built with OpenSSL and has its certificate helper."""
    exe = which("squid")
    if exe is None or not os.access(SQUID_CERTGEN, os.X_OK):
        return False
    r = run([exe, "-v"], 30)
    return "--with-openssl" in r.stdout


def pidfile_pid(path):
    """The pid in path when that process is alive, else None."""
    try:
        with open(path) as f:
            pid = int(f.read().split()[0])
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError, IndexError):
        return None


def error_lines(text, n=2):
    """The first n lines of a build log that name an error, or its last lines."""
    errs = [ln.strip() for ln in (text or "").splitlines() if re.search(r"error", ln, re.I)]
    return " | ".join(errs[:n]) if errs else last_lines(text)


def last_lines(text, n=3):
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:]) if lines else "(no output)"


def build_egressd(build_dir, skip, notes):
    """Configures and builds egressd (Release) in build_dir.  When that fails only because a
    warning is an error, builds again in build_dir + "-nowerror" with -Wno-error (the binary is
    the same; notes says why).  Returns (path, build dir, None) or (None, None, reason)."""
    exe = os.path.join(build_dir, "egressd")
    if skip:
        if os.access(exe, os.X_OK):
            return exe, build_dir, None
        return None, None, "no %s (--skip-build)" % exe
    why = None
    for attempt, bdir, flags in ((0, build_dir, []),
                                 (1, build_dir + "-nowerror", ["-DCMAKE_C_FLAGS=-Wno-error"])):
        if attempt == 1 and not (why and "-Werror" in why):
            break
        log("building egressd in %s%s" % (bdir, " with -Wno-error" if flags else ""))
        r = run(["cmake", "-S", ROOT, "-B", bdir, "-DCMAKE_BUILD_TYPE=Release"] + flags, 300)
        if r.returncode != 0:
            return None, None, "cmake configure failed: " + error_lines(r.stderr + r.stdout)
        r = run(["cmake", "--build", bdir, "--target", "egressd", "-j2"], 900)
        if r.returncode == 0:
            # The mint figure's instrument, linked with the same build's proxy library; a
            # failure here costs that figure only (build_helpers says why).
            run(["cmake", "--build", bdir, "--target", "bench_mint", "-j2"], 900)
        exe = os.path.join(bdir, "egressd")
        if r.returncode == 0 and os.access(exe, os.X_OK):
            if attempt == 1:
                notes.append("egressd was built with -Wno-error: the Release build stops at %s"
                             % why)
            return exe, bdir, None
        if r.returncode == 0:
            return None, None, "the build made no egressd binary"
        why = error_lines(r.stdout + r.stderr)
    return None, None, "build failed: " + why


def build_old(rev, build_dir, notes):
    """Builds the egressd of git revision rev (Release) for the target egressd-old: a detached
    worktree of rev in a temp folder outside the repository, configured and built into
    BUILD_DIR-old-COMMIT (kept, so that the next run reuses it), with that revision's own
    decide_bench linked against its allowlist library; the worktree is removed again.  Returns
    (egressd, decide_bench or None, None) or (None, None, reason)."""
    r = run(["git", "-C", ROOT, "rev-parse", "--verify", "--quiet", rev + "^{commit}"], 30)
    if r.returncode != 0:
        return None, None, "no commit %r in this repository" % rev
    full = r.stdout.strip()
    bdir = "%s-old-%s" % (build_dir, full[:12])
    exe = os.path.join(bdir, "egressd")
    decide = os.path.join(bdir, "bench", "decide_bench")
    if os.access(exe, os.X_OK):
        return exe, decide if os.access(decide, os.X_OK) else None, None
    shutil.rmtree(bdir, ignore_errors=True)  # a half build of an earlier, failed attempt
    src = tempfile.mkdtemp(prefix="egressd-old-src-")
    log("building egressd at %s (%s) in %s, from a worktree in %s" % (rev, full[:12], bdir, src))
    r = run(["git", "-C", ROOT, "worktree", "add", "--detach", src, full], 120)
    if r.returncode != 0:
        shutil.rmtree(src, ignore_errors=True)
        return None, None, "git worktree add failed: " + last_lines(r.stderr, 1)
    try:
        r = run(["cmake", "-S", src, "-B", bdir, "-DCMAKE_BUILD_TYPE=Release"], 300)
        if r.returncode != 0:
            return None, None, "cmake configure of %s failed: %s" % (
                rev, error_lines(r.stderr + r.stdout))
        r = run(["cmake", "--build", bdir, "--target", "egressd", "egressd_allowlist", "-j2"],
                900)
        if r.returncode != 0 or not os.access(exe, os.X_OK):
            return None, None, "build of %s failed: %s" % (rev, error_lines(r.stdout + r.stderr))
        os.makedirs(os.path.dirname(decide), exist_ok=True)
        lib = os.path.join(bdir, "libegressd_allowlist.a")
        r = run([os.environ.get("CC", "cc")] + CFLAGS + [
            "-I", src, "-o", decide, os.path.join(src, "bench", "decide_bench.c"), lib,
            "-lyaml"], 120)
        if r.returncode != 0:
            notes.append("egressd-old: its decide_bench did not build: " + last_lines(r.stderr, 1))
            decide = None
        return exe, decide, None
    finally:
        run(["git", "-C", ROOT, "worktree", "remove", "--force", src], 120)
        shutil.rmtree(src, ignore_errors=True)


def build_helpers(build_dir):
    """Compiles benchclient and decide_bench.  Returns (benchclient, decide_bench or None,
    reason decide_bench is missing or None)."""
    out = os.path.join(build_dir, "bench")
    os.makedirs(out, exist_ok=True)
    cc = os.environ.get("CC", "cc")
    client = os.path.join(out, "benchclient")
    r = run([cc] + CFLAGS + ["-o", client, os.path.join(HERE, "benchclient.c"), "-lssl",
                             "-lcrypto"], 120)
    if r.returncode != 0:
        raise SystemExit("bench: benchclient did not compile: " + error_lines(r.stderr))
    relay = os.path.join(out, "relay")
    r = run([cc] + CFLAGS + ["-o", relay, os.path.join(HERE, "relay.c")], 120)
    if r.returncode != 0:
        raise SystemExit("bench: relay did not compile: " + error_lines(r.stderr))
    # decide_bench links the allowlist library of the same build as the egressd it measures.
    r = run(["cmake", "--build", build_dir, "--target", "egressd_allowlist", "-j2"], 600)
    lib = os.path.join(build_dir, "libegressd_allowlist.a")
    if r.returncode != 0 or not os.path.exists(lib):
        return client, None, "allowlist library did not build: " + last_lines(r.stdout + r.stderr, 1)
    decide = os.path.join(out, "decide_bench")
    r = run([cc] + CFLAGS + ["-I", ROOT, "-o", decide, os.path.join(HERE, "decide_bench.c"), lib,
                             "-lyaml"], 120)
    if r.returncode != 0:
        return client, None, "decide_bench did not link: " + last_lines(r.stderr, 2)
    return client, decide, None


# ---------------------------------------------------------------------------------------------
# The origin and the proxies


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout, logpath):
    """Waits until 127.0.0.1:port accepts; raises RuntimeError when proc dies or time runs out."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError("exited with status %s: %s" % (proc.returncode, read_tail(logpath)))
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("not listening on port %d after %ds: %s" % (port, timeout, read_tail(logpath)))


def read_tail(path):
    try:
        with open(path, errors="replace") as f:
            return last_lines(f.read())
    except OSError:
        return "(no log)"


def render(template, dest, **values):
    with open(os.path.join(HERE, "peers", template)) as f:
        text = string.Template(f.read()).substitute(values)
    with open(dest, "w") as f:
        f.write(text)
    return dest


def make_origin_files(d):
    www = os.path.join(d, "www")
    os.makedirs(www)
    os.makedirs(os.path.join(d, "nginx-tmp"))
    with open(os.path.join(www, "1k"), "wb") as f:
        f.write(os.urandom(1024))
    chunk = os.urandom(1 << 20)
    with open(os.path.join(www, "64m"), "wb") as f:
        for _ in range(64):
            f.write(chunk)
    make_test_ca(d)
    with open(os.path.join(d, "hosts"), "w") as f:
        f.write("127.0.0.1 localhost\n::1 localhost\n127.0.0.1 %s %s\n" % (ORIGIN, INSPECTED))
    for root, dirs, files in os.walk(d):
        for x in dirs:
            os.chmod(os.path.join(root, x), 0o755)
        for x in files:
            os.chmod(os.path.join(root, x), 0o644)
    for x in ("test-ca-key.pem",):
        os.chmod(os.path.join(d, x), 0o600)


def make_test_ca(d):
    """The origin's certificates: a throwaway test CA (test-ca.pem: what clients, egressd's
    tls.upstreamCA and bumped Squid verify the origin with) and the origin's ECDSA P-256 leaf for
    origin.test and inspect.test, signed by it."""
    ca, ca_key = os.path.join(d, "test-ca.pem"), os.path.join(d, "test-ca-key.pem")
    key, csr = os.path.join(d, "origin-key.pem"), os.path.join(d, "origin.csr")
    ext = os.path.join(d, "origin.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:%s,DNS:%s\nbasicConstraints=critical,CA:FALSE\n"
                "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
                % (ORIGIN, INSPECTED))
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for argv in (["openssl", "req", "-x509"] + ec + [
                     "-days", "2", "-subj", "/O=egressd bench/CN=egressd bench test CA",
                     "-addext", "basicConstraints=critical,CA:TRUE",
                     "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                     "-keyout", ca_key, "-out", ca],
                 ["openssl", "req", "-new"] + ec + ["-subj", "/CN=" + ORIGIN, "-keyout", key,
                                                    "-out", csr],
                 ["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key,
                  "-CAcreateserial", "-days", "2", "-extfile", ext,
                  "-out", os.path.join(d, "origin-cert.pem")]):
        r = run(argv, 60)
        if r.returncode != 0:
            raise SystemExit("bench: %s failed: %s" % (" ".join(argv[:3]), last_lines(r.stderr)))


def make_inspect_ca(d, exe):
    """The inspection CA egressd mints its leaves with and bumped Squid its certificates:
    `egressd ca init DIR/inspect-ca` (ca.pem, ca.key), or, with no egressd to run, the same kind
    of CA (ECDSA P-256, CA:TRUE, keyCertSign) from openssl."""
    out = os.path.join(d, "inspect-ca")
    if exe is not None:
        r = run([exe, "ca", "init", out], 60)
        if r.returncode == 0:
            return
        log("egressd ca init failed (%s); making the inspection CA with openssl"
            % last_lines(r.stderr, 1))
    os.makedirs(out, mode=0o700, exist_ok=True)
    r = run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
             "ec_paramgen_curve:prime256v1", "-nodes", "-days", "30", "-subj",
             "/O=egressd bench/CN=inspection CA", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-keyout",
             os.path.join(out, "ca.key"), "-out", os.path.join(out, "ca.pem")], 60)
    if r.returncode != 0:
        raise SystemExit("bench: the inspection CA: " + last_lines(r.stderr))


def start_nginx(d, ports):
    conf = render("nginx.conf.in", os.path.join(d, "nginx.conf"), dir=d,
                  http_port=ports["http"], tls_port=ports["tls"])
    logpath = os.path.join(d, "nginx-error.log")
    p = PROCS.start("nginx", [which("nginx"), "-p", d + "/", "-c", conf, "-e", logpath])
    wait_port(ports["http"], p, 10, logpath)
    wait_port(ports["tls"], p, 10, logpath)
    return p


def wait_listening(p, logpath):
    """Waits for a started process to print "listening on 127.0.0.1:PORT"; returns PORT."""
    end = time.monotonic() + 10
    while time.monotonic() < end:
        with open(logpath, errors="replace") as f:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", f.read())
        if m:
            port = int(m.group(1))
            wait_port(port, p, 5, logpath)
            return port
        if p.poll() is not None:
            raise RuntimeError("exited with status %s: %s" % (p.returncode, read_tail(logpath)))
        time.sleep(0.05)
    raise RuntimeError("printed no 'listening on' line in 10 s: " + read_tail(logpath))


def start_egressd(d, exe, name="egressd", template="egressd.yaml.in"):
    """egressd serve with template's config (rendered into d as NAME.yaml, its log NAME.log).
    Returns (Popen, {"proxy": port, and "socks5", "transparent" for the listeners it has})."""
    conf = render(template, os.path.join(d, name + ".yaml"), dir=d)
    logpath = os.path.join(d, name + ".log")
    with open(logpath, "wb") as logf:
        p = PROCS.start(name, [exe, "serve", "-c", conf], stdout=logf, stderr=logf)
    ports = {"proxy": wait_listening(p, logpath)}
    with open(logpath, errors="replace") as f:
        text = f.read()
    for key in ("socks5", "transparent"):
        m = re.search(r"listening on 127\.0\.0\.1:(\d+) \(listen\.%s\)" % key, text)
        if m:
            ports[key] = int(m.group(1))
    return p, ports


def start_egressd_fsync(d, exe):
    """A second egressd, the same config but audit.fsync: true (its own audit file in d, on the
    same file system as the first one's), for the fsync figure."""
    conf = render("egressd-fsync.yaml.in", os.path.join(d, "egressd-fsync.yaml"), dir=d)
    logpath = os.path.join(d, "egressd-fsync.log")
    with open(logpath, "wb") as logf:
        p = PROCS.start("egressd fsync", [exe, "serve", "-c", conf], stdout=logf, stderr=logf)
    return p, wait_listening(p, logpath)


def start_squid_bump(d, ports):
    """A second Squid, with ssl_bump (squid-bump.conf.in): its certificate database made with
    security_file_certgen, the run's inspection CA to mint with, the test CA to verify the
    origin with.  Returns (Popen, port)."""
    sd = os.path.join(d, "squid-bump")
    os.makedirs(sd, exist_ok=True)
    db = os.path.join(sd, "ssl_db")
    shutil.rmtree(db, ignore_errors=True)
    r = run([SQUID_CERTGEN, "-c", "-s", db, "-M", "16MB"], 60)
    if r.returncode != 0:
        raise RuntimeError("security_file_certgen -c failed: " + last_lines(r.stderr + r.stdout))
    for root, dirs, files in os.walk(sd):
        for x in dirs + files:
            shutil.chown(os.path.join(root, x), "proxy", "proxy")
    shutil.chown(sd, "proxy", "proxy")
    port = free_port()
    conf = render("squid-bump.conf.in", os.path.join(d, "squid-bump.conf"), dir=sd, port=port,
                  http_port=ports["http"], tls_port=ports["tls"], certgen=SQUID_CERTGEN,
                  ca_cert=os.path.join(d, "inspect-ca", "ca.pem"),
                  ca_key=os.path.join(d, "inspect-ca", "ca.key"),
                  upstream_ca=os.path.join(d, "test-ca.pem"))
    shutil.copy(os.path.join(d, "hosts"), os.path.join(sd, "hosts"))
    os.chmod(os.path.join(sd, "hosts"), 0o644)
    logpath = os.path.join(sd, "squid.stderr")
    with open(logpath, "wb") as logf:
        p = PROCS.start("squid-bump", [which("squid"), "-N", "-f", conf], stdout=logf,
                        stderr=logf)
    wait_port(port, p, 20, logpath)
    return p, port


DNS_NAMES = 100  # names the DNS figure asks for, n0.dns.test ... n99.dns.test
DNS_LINE = r"listening on 127\.0\.0\.1:(\d+) \(dns"


def start_egressd_dns(d, exe, name, template, **values):
    """An egressd with listen.dns from template; returns (Popen, its DNS port)."""
    conf = render(template, os.path.join(d, name + ".yaml"), dir=d, **values)
    logpath = os.path.join(d, name + ".log")
    with open(logpath, "wb") as logf:
        p = PROCS.start(name, [exe, "serve", "-c", conf], stdout=logf, stderr=logf)
    wait_listening(p, logpath)
    with open(logpath, errors="replace") as f:
        m = re.search(DNS_LINE, f.read())
    if m is None:
        raise RuntimeError("no DNS listener: " + read_tail(logpath))
    return p, int(m.group(1))


def start_tinyproxy(d, ports):
    """tinyproxy resolves with getaddrinfo, so it runs in a private mount namespace where the
    run's hosts file is bound over /etc/hosts.  Returns (proc, port, origin name)."""
    td = os.path.join(d, "tinyproxy")
    os.makedirs(td, exist_ok=True)
    os.chmod(td, 0o777)  # it writes its log and pid file as nobody
    port = free_port()
    hosts = os.path.join(d, "hosts")
    private = run(["unshare", "-m", "--propagation", "private", "true"], 10).returncode == 0
    # Without a private /etc/hosts the only allowlisted name tinyproxy can resolve is localhost.
    name = ORIGIN if private else "localhost"
    with open(os.path.join(td, "tinyproxy-filter"), "w") as f:
        f.write("^%s$\n" % re.escape(name))
    os.chmod(os.path.join(td, "tinyproxy-filter"), 0o644)
    conf = render("tinyproxy.conf.in", os.path.join(d, "tinyproxy.conf"), dir=td, port=port,
                  http_port=ports["http"], tls_port=ports["tls"])
    logpath = os.path.join(td, "tinyproxy.stderr")
    argv = [which("tinyproxy"), "-d", "-c", conf]
    if private:
        argv = ["unshare", "-m", "--propagation", "private", "--", "sh", "-c",
                'mount --bind "$0" /etc/hosts && exec "$@"', hosts] + argv
    with open(logpath, "wb") as logf:
        p = PROCS.start("tinyproxy", argv, stdout=logf, stderr=logf)
    wait_port(port, p, 10, logpath)
    return p, port, name


def start_squid(d, ports):
    sd = os.path.join(d, "squid")
    os.makedirs(sd, exist_ok=True)
    shutil.chown(sd, "proxy", "proxy")  # squid writes its log as cache_effective_user
    port = free_port()
    conf = render("squid.conf.in", os.path.join(d, "squid.conf"), dir=sd, port=port,
                  http_port=ports["http"], tls_port=ports["tls"])
    shutil.copy(os.path.join(d, "hosts"), os.path.join(sd, "hosts"))
    os.chmod(os.path.join(sd, "hosts"), 0o644)
    logpath = os.path.join(sd, "squid.stderr")
    with open(logpath, "wb") as logf:
        p = PROCS.start("squid", [which("squid"), "-N", "-f", conf], stdout=logf, stderr=logf)
    wait_port(port, p, 20, logpath)
    return p, port


def start_relay(d):
    logpath = os.path.join(d, "relay.log")
    with open(logpath, "wb") as logf:
        p = PROCS.start("relay", [RELAY_EXE, "0"], stdout=logf, stderr=logf)
    return p, wait_listening(p, logpath)


def starter(target, d, ports, exes):
    """A function that starts `target` with its config in d and returns (Popen, ports, origin
    name), ports being {"proxy": port, ...: the other listeners egressd has}; to start it the
    first time and again before each idle-tunnel figure.  exes: {"egressd": path,
    "egressd-old": path}."""
    if target in EGRESSDS:
        template = "egressd.yaml.in" if target == "egressd" else "egressd-old.yaml.in"

        def start():
            p, lports = start_egressd(d, exes[target], target, template)
            return p, lports, ORIGIN
    elif target == "squid-bump":
        def start():
            p, port = start_squid_bump(d, ports)
            return p, {"proxy": port}, ORIGIN
    elif target == "tinyproxy":
        def start():
            p, port, name = start_tinyproxy(d, ports)
            return p, {"proxy": port}, name
    elif target == "RELAY":
        def start():
            p, port = start_relay(d)
            return p, {"proxy": port}, ORIGIN
    else:
        def start():
            p, port = start_squid(d, ports)
            return p, {"proxy": port}, ORIGIN
    return start


# ---------------------------------------------------------------------------------------------
# Measurements


def tree_rss_kib(pid):
    """VmRSS of pid and every descendant, in KiB."""
    parent = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    stat = f.read()
                parent[int(entry)] = int(stat[stat.rindex(")") + 2:].split()[1])
            except (OSError, ValueError):
                pass
    tree, todo = set(), [pid]
    while todo:
        p = todo.pop()
        tree.add(p)
        todo.extend(c for c, pp in parent.items() if pp == p and c not in tree)
    total = 0
    for p in tree:
        try:
            with open("/proc/%d/status" % p) as f:
                m = re.search(r"^VmRSS:\s+(\d+)", f.read(), re.M)
            total += int(m.group(1)) if m else 0
        except OSError:
            pass
    return total


class Profile:
    """With --perf: `perf record -g` on egressd while one figure runs for it, and the top of
    `perf report` beside the table (OUT/perf-FIGURE-repN.txt), to show where its time goes."""

    def __init__(self, bench, target, fig, rep):
        self.bench, self.target, self.fig, self.rep = bench, target, fig, rep
        self.proc = None

    def __enter__(self):
        b = self.bench
        if b.perf_dir is None or self.target != "egressd":
            return self
        self.data = os.path.join(b.perf_dir, "perf-%s-rep%d.data" % (self.fig, self.rep + 1))
        self.proc = PROCS.start("perf record", ["perf", "record", "-q", "-g", "-o", self.data,
                                                "-p", str(b.targets["egressd"]["pid"])],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)  # perf attaches before the load starts
        return self

    def __exit__(self, *exc):
        if self.proc is None:
            return False
        # SIGINT makes perf record finish its file; then the usual stop.
        try:
            os.killpg(self.proc.pid, signal.SIGINT)
            self.proc.wait(20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        PROCS.stop_and_forget(self.proc)
        # Flat, per symbol: without frame pointers call chains are mostly noise; the .data file
        # stays for `perf report -g` by hand.
        r = run(["perf", "report", "--stdio", "--no-children", "-g", "none", "--percent-limit",
                 "0.5", "-i", self.data], 120)
        with open(self.data[:-5] + ".txt", "w") as f:
            f.write(r.stdout if r.returncode == 0 else r.stderr)
        return False


class Bench:
    def __init__(self, mode, client, decide, ports, cert):
        self.m = MODES[mode]
        self.quick = mode == "quick"
        self.perf_dir = None  # where --perf puts egressd's profiles
        self.client = client
        self.decide = decide  # {"egressd": decide_bench, "egressd-old": its own} (either absent)
        self.ports = ports
        self.cert = cert      # the test CA the origin's certificate is verified with
        self.insp_ca = None   # the inspection CA's certificate (egressd's leaves, Squid's bumps)
        self.mint = None      # bench_mint of the egressd build, or None
        self.netns_why = None  # why no network namespace can be made here, or None
        self.targets = {}   # name -> {"port": proxy port or None, "ports": {"proxy", "socks5",
        #                      "transparent"}, "host": origin name, "pid", "proc": its Popen,
        #                      "start": () -> (Popen, ports, host)}; "squid-bump" is bumped
        #                      Squid, measured in the Squid column of the inspection figures
        self.na = {}        # name -> why the target is not measured
        self.results = {}   # figure -> target -> [value per repetition]
        self.raw = []       # every measurement's own output, for results.json
        self.errors = {}    # (figure, target) -> last error
        self.tmp = None     # the run's temp dir (configs, logs, audit files)
        self.egressd_exe = None  # the egressd binary, for the fsync figure's second instance
        self.rep_order = []  # the targets in this repetition's order

    def record(self, fig, target, value):
        self.results.setdefault(fig, {}).setdefault(target, []).append(value)

    def fail(self, figs, target, why):
        for fig in figs:
            self.errors[(fig, target)] = why
        log("  %s %s: %s" % (target, "/".join(figs), why))

    def client_args(self, target, port, via, tls, host=None, ca=None):
        """benchclient's arguments for the origin's port through target by via ("connect",
        "forward", "socks5" to egressd's SOCKS5 listener; DIRECT goes straight to the origin),
        with TLS verified against ca (default: the test CA) when tls."""
        t = self.targets[target]
        if t["port"] is None:
            argv = ["--connect", "127.0.0.1:%d" % port, "--via", "none"]
        elif via == "socks5":
            argv = ["--connect", "127.0.0.1:%d" % t["ports"]["socks5"], "--via", via]
        else:
            argv = ["--connect", "127.0.0.1:%d" % t["port"], "--via", via]
        argv += ["--host", host or t["host"], "--port", str(port)]
        if tls:
            argv += ["--tls", "--ca", ca or self.cert]
        return argv

    def run_client(self, args, timeout):
        r = run([self.client] + args, timeout)
        lines = r.stdout.strip().splitlines()
        out = json.loads(lines[-1]) if lines else {}
        return r.returncode, out, r.stderr.strip()

    def probe(self, target):
        """Checks that a proxy forwards to the origin and refuses DENIED, in plain forwarding and
        through CONNECT; returns None or what is wrong."""
        http, tls = self.ports["http"], self.ports["tls"]
        for via, port, use_tls in (("forward", http, False), ("connect", tls, True),
                                   ("connect", http, False)):
            rc, out, err = self.run_client(["get", "--path", "/1k"] +
                                           self.client_args(target, port, via, use_tls), 20)
            if rc != 0 or out.get("bytes") != 1024:
                return "cannot fetch the origin via %s%s: %s" % (
                    via, "+TLS" if use_tls else "", last_lines(err, 1))
        t = self.targets[target]
        vias = ["forward", "connect"]
        if "socks5" in t["ports"]:
            vias.append("socks5")
            for port, use_tls in ((http, False), (tls, True)):
                rc, out, err = self.run_client(["get", "--path", "/1k"] + self.client_args(
                    target, port, "socks5", use_tls), 20)
                if rc != 0 or out.get("bytes") != 1024:
                    return "cannot fetch the origin via SOCKS5%s: %s" % (
                        "+TLS" if use_tls else "", last_lines(err, 1))
        for via in vias:
            args = ["get", "--path", "/1k"] + self.client_args(target, http, via, False,
                                                               host=DENIED)
            rc, out, err = self.run_client(args, 20)
            if rc == 0:
                return "its allowlist let %s:%d through via %s" % (DENIED, http, via)
        return None

    def probe_inspect(self, target):
        """Checks that target (egressd, or squid-bump) terminates a CONNECT+TLS tunnel to
        inspect.test: the client sees a certificate from the inspection CA (the origin's would
        not verify against it) and still gets the file; returns None or what is wrong."""
        rc, out, err = self.run_client(["get", "--path", "/1k"] + self.client_args(
            target, self.ports["tls"], "connect", True, host=INSPECTED, ca=self.insp_ca), 30)
        if rc != 0 or out.get("bytes") != 1024:
            return "no inspected fetch of %s (a certificate from the inspection CA): %s" % (
                INSPECTED, last_lines(err, 1))
        return None

    def fig_wrk(self, target, rep):
        """Figure 1: wrk, 2 threads, 64 and 256 keep-alive connections, the 1 KiB file."""
        t = self.targets[target]
        http = self.ports["http"]
        for conns in (64, 256):
            fig = "rps%d" % conns
            figs = [fig, "p50_%d" % conns, "p99_%d" % conns]
            if t["port"] is None:
                url, path = "http://127.0.0.1:%d/" % http, "/1k"
            else:
                url, path = "http://127.0.0.1:%d/" % t["port"], "http://%s:%d/1k" % (t["host"], http)
            argv = [which("wrk"), "-t2", "-c%d" % conns, "-d%ds" % self.m["wrk_s"], "--timeout", "5s",
                    "-s", os.path.join(HERE, "wrk_proxy.lua"), url, "--", path,
                    "%s:%d" % (t["host"], http)]
            try:
                r = run(argv, self.m["wrk_s"] + 30)
            except subprocess.TimeoutExpired:
                self.fail(figs, target, "wrk did not finish")
                continue
            m = re.search(r"^WRKJSON (.*)$", r.stdout, re.M)
            if r.returncode != 0 or not m:
                self.fail(figs, target, "wrk failed: " + last_lines(r.stderr + r.stdout, 2))
                continue
            w = json.loads(m.group(1))
            self.raw.append(dict(figure=fig, target=target, rep=rep, wrk=w))
            bad = w["status_errors"] + w["connect_errors"] + w["timeouts"]
            if w["requests"] == 0 or bad > 0.01 * w["requests"]:
                self.fail(figs, target, "%d of %d requests failed (non-2xx, connect or timeout)"
                          % (bad, w["requests"]))
                continue
            self.record(fig, target, w["requests"] / (w["duration_us"] / 1e6))
            self.record("p50_%d" % conns, target, w["p50_us"] / 1e3)
            self.record("p99_%d" % conns, target, w["p99_us"] / 1e3)
            log("  %-9s %3d conns: %8.0f req/s  p50 %.2f ms  p99 %.2f ms" % (
                target, conns, self.results[fig][target][-1], w["p50_us"] / 1e3,
                w["p99_us"] / 1e3))

    def bulk(self, target, rep, runs, count=None):
        """count (default m["gets"]) downloads of the 64 MiB file for each (fig, benchclient
        args) in runs, taking turns (so that a pair compared in a ratio shares the machine's
        drift); records each fig's total bytes over its total time.  Returns ({fig: MiB/s},
        {fig: [MiB/s of each download]}), without the figs one of whose downloads failed
        (recorded as failures)."""
        tot = {fig: [0, 0.0] for fig, _ in runs}
        each = {fig: [] for fig, _ in runs}
        for _ in range(count or self.m["gets"]):
            for fig, args in runs:
                if fig not in tot:
                    continue
                try:
                    rc, out, err = self.run_client(["get", "--path", "/64m"] + args, 120)
                except subprocess.TimeoutExpired:
                    rc, out, err = 1, {}, "no answer in 120 s"
                if rc != 0 or out.get("bytes") != 64 << 20:
                    self.fail([fig], target, "64 MiB fetch failed: " + last_lines(err, 1))
                    del tot[fig]
                    continue
                tot[fig][0] += out["bytes"]
                tot[fig][1] += out["seconds"]
                each[fig].append(out["bytes"] / 1048576 / out["seconds"])
        got = {}
        for fig, (total_b, total_s) in tot.items():
            got[fig] = total_b / 1048576 / total_s
            self.record(fig, target, got[fig])
            self.raw.append(dict(figure=fig, target=target, rep=rep, bytes=total_b,
                                 seconds=total_s))
            log("  %-11s %-15s %8.1f MiB/s" % (target, fig, got[fig]))
        return got, {fig: v for fig, v in each.items() if fig in got}

    def fig_bulk(self, target, rep):
        """Figure 2: 64 MiB through plain forwarding, a raw CONNECT tunnel and CONNECT+TLS; for
        a proxy with a SOCKS5 listener also through SOCKS5 tunnels (raw and TLS), each download
        taking turns with the CONNECT one it is compared with (m["pair_gets"] pairs), and the
        median over the pairs of SOCKS5's MiB/s over CONNECT's."""
        http, tls = self.ports["http"], self.ports["tls"]
        socks = "socks5" in self.targets[target].get("ports", {})
        if target not in CONNECT_ONLY:
            self.bulk(target, rep, [("bulk_forward",
                                     self.client_args(target, http, "forward", False))])
        for plain, tunnel, ratio_fig, port, use_tls in (
                ("bulk_connect", "bulk_socks5", "socks5_vs_connect", http, False),
                ("bulk_tls", "bulk_socks5_tls", "socks5_vs_connect_tls", tls, True)):
            runs = [(plain, self.client_args(target, port, "connect", use_tls))]
            if socks:
                runs.append((tunnel, self.client_args(target, port, "socks5", use_tls)))
            _, each = self.bulk(target, rep, runs, self.m["pair_gets"] if socks else None)
            if each.get(plain) and each.get(tunnel):
                self.record(ratio_fig, target, pair_ratio(each[tunnel], each[plain]))

    def fig_fetch(self, target, rep):
        """Figure 3: the 1 KiB file over a new connection (CONNECT +) TLS, N times."""
        figs = ["fetch_p50", "fetch_p99"]
        args = ["fetch", "--path", "/1k", "--count", str(self.m["fetches"]), "--deadline",
                str(self.m["fetch_s"])] + self.client_args(target, self.ports["tls"], "connect", True)
        try:
            rc, out, err = self.run_client(args, self.m["fetch_s"] + 30)
        except subprocess.TimeoutExpired:
            self.fail(figs, target, "fetch loop overran its bound")
            return
        self.raw.append(dict(figure="fetch", target=target, rep=rep, out=out))
        if rc != 0 or not out.get("n"):
            self.fail(figs, target, "no fetch succeeded: " + last_lines(err, 1))
            return
        if out["n"] < self.m["fetches"]:
            log("  %s: only %d of %d fetches within %ds (%d errors)" % (
                target, out["n"], self.m["fetches"], self.m["fetch_s"], out["errors"]))
        self.record("fetch_p50", target, out["median_ms"])
        self.record("fetch_p99", target, out["p99_ms"])
        self.record("fetch_n", target, out["n"])
        log("  %-9s %d fetches: median %.3f ms  p99 %.3f ms" % (
            target, out["n"], out["median_ms"], out["p99_ms"]))

    def fetch_loop(self, port, host):
        """The fetch figure's loop (1 KiB over a new CONNECT+TLS connection, N times) against
        the proxy on port; returns (rc, out, err)."""
        args = ["fetch", "--path", "/1k", "--count", str(self.m["fetches"]), "--deadline",
                str(self.m["fetch_s"]), "--connect", "127.0.0.1:%d" % port, "--via", "connect",
                "--host", host, "--port", str(self.ports["tls"]), "--tls", "--ca", self.cert]
        return self.run_client(args, self.m["fetch_s"] + 30)

    def fig_fsync(self, target, rep):
        """Figure 6: what audit.fsync costs a new connection: the fetch figure's loop through
        egressd as it runs (fsync off) and through a second egressd with audit.fsync: true,
        one right after the other in the same repetition."""
        figs = ["fsync_off_p50", "fsync_on_p50", "fsync_off_p99", "fsync_on_p99", "fsync_added"]
        t = self.targets[target]
        try:
            p, port = start_egressd_fsync(self.tmp, self.egressd_exe)
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            self.fail(figs, target, "the fsync egressd did not start: %s" % e)
            return
        try:
            got = {}
            for kind, pport in (("off", t["port"]), ("on", port)):
                try:
                    rc, out, err = self.fetch_loop(pport, t["host"])
                except subprocess.TimeoutExpired:
                    self.fail(figs, target, "fetch loop (fsync %s) overran its bound" % kind)
                    return
                self.raw.append(dict(figure="fsync_" + kind, target=target, rep=rep, out=out))
                if rc != 0 or not out.get("n"):
                    self.fail(figs, target, "no fetch succeeded with fsync %s: %s"
                              % (kind, last_lines(err, 1)))
                    return
                got[kind] = out
        finally:
            PROCS.stop_and_forget(p)
        for kind in ("off", "on"):
            self.record("fsync_%s_p50" % kind, target, got[kind]["median_ms"])
            self.record("fsync_%s_p99" % kind, target, got[kind]["p99_ms"])
        self.record("fsync_added", target, got["on"]["median_ms"] - got["off"]["median_ms"])
        log("  %-9s audit.fsync off: median %.3f ms p99 %.3f ms; on: median %.3f ms p99 %.3f ms"
            % (target, got["off"]["median_ms"], got["off"]["p99_ms"], got["on"]["median_ms"],
               got["on"]["p99_ms"]))

    def fig_dns(self, target, rep):
        """Figure 7: the DNS listener's answers per second for cached names: dnsperf sends A
        queries for DNS_NAMES allowed names to an egressd in real mode whose resolver learnt
        them once from a second egressd (mapped mode) and answers them from its cache."""
        figs = ["dns_qps", "dns_lost"]
        if which("dnsperf") is None:
            self.fail(figs, target, "dnsperf is not installed (apt-get install dnsperf)")
            return
        qfile = os.path.join(self.tmp, "dns-queries.txt")
        with open(qfile, "w") as f:
            for i in range(DNS_NAMES):
                f.write("n%d.dns.test A\n" % i)
        procs = []
        try:
            up, up_port = start_egressd_dns(self.tmp, self.egressd_exe, "egressd-dns-upstream",
                                            "egressd-dns-upstream.yaml.in")
            procs.append(up)
            p, port = start_egressd_dns(self.tmp, self.egressd_exe, "egressd-dns",
                                        "egressd-dns.yaml.in", upstream=up_port)
            procs.append(p)
            base = ["dnsperf", "-s", "127.0.0.1", "-p", str(port), "-d", qfile, "-t", "2"]
            # Each name once, through the upstream, into the cache.
            warm = run(base + ["-n", "1", "-l", "10"], 30)
            if "Queries completed:" not in warm.stdout:
                self.fail(figs, target, "dnsperf warm-up failed: " + last_lines(
                    warm.stderr + warm.stdout, 2))
                return
            # Bounded in time (dns_s) and in count (5,000 passes over the names).
            r = run(base + ["-l", str(self.m["dns_s"]), "-n", "5000", "-c", "4", "-q", "256"],
                    self.m["dns_s"] + 30)
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            self.fail(figs, target, "the DNS figure could not run: %s" % e)
            return
        finally:
            for pr in procs:
                PROCS.stop_and_forget(pr)
        qps = re.search(r"Queries per second:\s+([\d.]+)", r.stdout)
        lost = re.search(r"Queries lost:\s+(\d+)", r.stdout)
        noerr = re.search(r"NOERROR (\d+)", r.stdout)
        self.raw.append(dict(figure="dns", target=target, rep=rep, out=r.stdout))
        if r.returncode != 0 or qps is None or noerr is None or int(noerr.group(1)) == 0:
            self.fail(figs, target, "dnsperf failed or got no NOERROR answer: " +
                      last_lines(r.stderr + r.stdout, 2))
            return
        self.record("dns_qps", target, float(qps.group(1)))
        self.record("dns_lost", target, int(lost.group(1)) if lost else 0)
        log("  %-9s DNS listener: %.0f cached answers/s, %s lost" % (
            target, float(qps.group(1)), lost.group(1) if lost else "?"))

    def restart(self, target):
        """Stops a proxy and starts it again with the same config (on new ports)."""
        t = self.targets[target]
        PROCS.stop_and_forget(t["proc"])
        p, ports, host = t["start"]()
        t.update(proc=p, pid=p.pid, port=ports["proxy"], ports=ports, host=host)

    IDLE_KEYS = ("rss_before", "rss_hold", "rss_after", "kib_per_tunnel", "rss_after_pct")
    WAIT_KEYS = ("wait_before", "wait_hold", "wait_after", "wait_kib", "wait_after_pct")
    INSP_IDLE_KEYS = ("insp_before", "insp_hold", "insp_after", "insp_kib", "insp_after_pct")

    def held_tunnels(self, target, rep, keys, inst, count, extra):
        """The proxy inst's RSS before, while holding `count` tunnels that benchclient idle
        opens with the arguments extra, and after they all close; recorded under target with
        keys (before, hold and after in MiB, KiB per tunnel, after vs before in %).  inst is
        restarted first: memory that earlier figures (or the previous repetition's tunnels) left
        in its heap would otherwise be reused by the tunnels and hide their cost, and "after"
        could not be compared with the start."""
        figs = list(keys)
        try:
            self.restart(inst)
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            self.fail(figs, target, "restart before the figure failed: %s" % e)
            return
        settle = 1.0 if self.quick else 2.0
        time.sleep(settle)  # let it finish starting up
        pid = self.targets[inst]["pid"]
        before = tree_rss_kib(pid)
        args = [self.client, "idle", "--count", str(count), "--deadline",
                str(self.m["tunnel_s"])] + extra(inst)
        p = PROCS.start("benchclient idle", args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
        try:
            ready, _, _ = select.select([p.stdout], [], [], self.m["tunnel_s"] + 20)
            line = p.stdout.readline() if ready else ""
            if not line:
                self.fail(figs, target, "the idle client reported nothing")
                return
            opened = json.loads(line)["open"]
            time.sleep(settle)
            hold = tree_rss_kib(pid)
            p.stdin.write("close\n")
            p.stdin.flush()
            ready, _, _ = select.select([p.stdout], [], [], 30)
            if ready:
                p.stdout.readline()
            p.wait(10)
            time.sleep(settle)
            after = tree_rss_kib(pid)
        finally:
            PROCS.stop_and_forget(p)
        if opened < count:
            self.fail(figs, target, "only %d of %d tunnels opened: %s" % (
                opened, count, last_lines(p.stderr.read(), 1)))
            if opened == 0:
                return
        self.raw.append(dict(figure=keys[0], target=target, rep=rep, tunnels=opened,
                             before_kib=before, hold_kib=hold, after_kib=after))
        for key, value in zip(keys, (before / 1024, hold / 1024, after / 1024,
                                     (hold - before) / opened,
                                     100.0 * (after - before) / before)):
            self.record(key, target, value)
        log("  %-11s %d tunnels (%s): RSS %.1f -> %.1f -> %.1f MiB, %.1f KiB/tunnel" % (
            target, opened, keys[0], before / 1024, hold / 1024, after / 1024,
            (hold - before) / opened))

    def fig_idle(self, target, rep):
        """Figure 4: N idle CONNECT tunnels, each of which has carried one plain request."""
        self.held_tunnels(target, rep, self.IDLE_KEYS, target, self.m["tunnels"], lambda inst: (
            ["--path", "/1k"] + self.client_args(inst, self.ports["http"], "connect", False)))

    def fig_wait(self, target, rep):
        """Figure 8: N CONNECT tunnels whose client never sends its first bytes after the 200
        (egressd holds each in its first-bytes check), then all closed."""
        self.held_tunnels(target, rep, self.WAIT_KEYS, target, self.m["tunnels"], lambda inst: (
            ["--silent"] + self.client_args(inst, self.ports["http"], "connect", False)))

    def fig_decide(self, target, rep):
        """Figure 5: egressd's decision cost with 10, 1,000 and 100,000 patterns, over 4,096
        destinations spread across the whole table (cold: memory latency included) and over
        destinations among 16 patterns (hot: the lookup alone); for egressd-old with that
        revision's own decide_bench and allowlist library."""
        decide = self.decide.get(target)
        for kind, extra in (("", []), ("_hot", ["--hot", "16"])):
            figs = ["decide%s_%d" % (kind, n) for n in (10, 1000, 100000)]
            if decide is None:
                self.fail(figs, target, "no decide_bench for it")
                continue
            try:
                r = run([decide, "--seconds", str(self.m["decide_s"])] + extra +
                        ["10", "1000", "100000"], 120)
            except subprocess.TimeoutExpired:
                self.fail(figs, target, "decide_bench overran 120 s")
                continue
            rows = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
            if r.returncode != 0 or len(rows) != 3:
                self.fail(figs, target, "decide_bench failed (wrong decisions or a crash): " +
                          last_lines(r.stderr + r.stdout, 2))
                continue
            for fig, row in zip(figs, rows):
                self.record(fig, target, row["ns_per_decision"])
                self.record(fig + "_median", target, row["median_ns"])
            self.record("decide%s_growth" % kind, target,
                        rows[2]["ns_per_decision"] / rows[0]["ns_per_decision"])
            self.raw.append(dict(figure="decide" + kind, target=target, rep=rep, rows=rows))
            log("  %-11s decision%s (best / median trial): %s ns" % (target, kind, "   ".join(
                "%.0f / %.0f" % (r_["ns_per_decision"], r_["median_ns"]) for r_ in rows)))

    def fig_insp(self, target, rep):
        """Figure 9: through an inspected tunnel (egressd: inspect.test is in `inspect`; Squid:
        the ssl_bump instance), 64 MiB, and a new connection's 1 KiB fetch (CONNECT, a full TLS
        handshake with the proxy's certificate for inspect.test, GET, close) m["fetches"] times
        after one warm-up fetch (so the leaf is cached); DIRECT does both straight to nginx's
        TLS port, for the added latency of the same repetition."""
        inst = "squid-bump" if target == "squid" else target
        figs = ["insp_bulk", "insp_fetch_p50", "insp_fetch_p99"]
        if inst not in self.targets:
            self.fail(figs, target, self.na.get(inst, "not running"))
            return
        ca = self.cert if target == "DIRECT" else self.insp_ca
        args = self.client_args(inst, self.ports["tls"], "connect", True, host=INSPECTED, ca=ca)
        self.bulk(target, rep, [("insp_bulk", args)])
        try:
            self.run_client(["get", "--path", "/1k"] + args, 30)  # the leaf, minted and cached
            rc, out, err = self.run_client(
                ["fetch", "--path", "/1k", "--count", str(self.m["fetches"]), "--deadline",
                 str(self.m["fetch_s"])] + args, self.m["fetch_s"] + 30)
        except subprocess.TimeoutExpired:
            self.fail(figs[1:], target, "inspected fetch loop overran its bound")
            return
        self.raw.append(dict(figure="insp_fetch", target=target, rep=rep, out=out))
        if rc != 0 or not out.get("n"):
            self.fail(figs[1:], target, "no inspected fetch succeeded: " + last_lines(err, 1))
            return
        self.record("insp_fetch_p50", target, out["median_ms"])
        self.record("insp_fetch_p99", target, out["p99_ms"])
        log("  %-11s %d inspected fetches: median %.3f ms  p99 %.3f ms" % (
            target, out["n"], out["median_ms"], out["p99_ms"]))

    def fig_insp_idle(self, target, rep):
        """Figure 10: m["insp_tunnels"] idle inspected tunnels (each has carried one request
        over its TLS session with the proxy), as figure 4."""
        inst = "squid-bump" if target == "squid" else target
        if inst not in self.targets:
            self.fail(list(self.INSP_IDLE_KEYS), target, self.na.get(inst, "not running"))
            return
        self.held_tunnels(target, rep, self.INSP_IDLE_KEYS, inst, self.m["insp_tunnels"],
                          lambda i: ["--path", "/1k"] + self.client_args(
                              i, self.ports["tls"], "connect", True, host=INSPECTED,
                              ca=self.insp_ca))

    def fig_exec(self, target, rep):
        """Figure 12: what `egressd exec` and `egressd exec --isolate` add to starting a
        command: `true` alone and under each, m["exec_runs"] times each after 3 warm-up runs
        (hyperfine -N, or, without hyperfine, a loop here that takes turns); the medians and
        the differences of the medians."""
        figs = ["exec_true", "exec_plain", "exec_isolate", "exec_plain_added",
                "exec_isolate_added"]
        true = which("true")
        audit = os.path.join(self.tmp, "exec-audit.jsonl")
        exe = self.targets[target]["exe"]
        cmds = [("exec_true", [true]),
                ("exec_plain", [exe, "exec", "--audit", audit, "--", true]),
                ("exec_isolate", [exe, "exec", "--audit", audit, "--isolate", "--", true])]
        for fig, argv in list(cmds):
            r = run(argv, 30)
            if r.returncode != 0:
                why = last_lines(r.stderr, 1)
                self.fail([fig, fig + "_added"], target, "skipped: `%s` fails here: %s" % (
                    " ".join(os.path.basename(a) for a in argv[:1] + argv[2:]), why))
                cmds.remove((fig, argv))
        if not cmds or cmds[0][0] != "exec_true":
            return
        runs = self.m["exec_runs"]
        med = {}
        if which("hyperfine"):
            out = os.path.join(self.tmp, "hyperfine-exec.json")
            try:
                r = run([which("hyperfine"), "-N", "--style", "none", "--warmup", "3", "--runs",
                         str(runs), "--export-json", out] + [shlex.join(a) for _, a in cmds],
                        60 + runs * len(cmds))
            except subprocess.TimeoutExpired:
                self.fail(figs, target, "hyperfine overran its bound")
                return
            if r.returncode != 0:
                self.fail(figs, target, "hyperfine failed: " + last_lines(r.stderr, 2))
                return
            with open(out) as f:
                res = json.load(f)["results"]
            for (fig, _), rr in zip(cmds, res):
                med[fig] = rr["median"] * 1e3
            self.raw.append(dict(figure="exec", target=target, rep=rep, tool="hyperfine",
                                 results=[dict(command=rr["command"], median=rr["median"],
                                               mean=rr["mean"], stddev=rr["stddev"],
                                               min=rr["min"], max=rr["max"]) for rr in res]))
        else:
            times = {fig: [] for fig, _ in cmds}
            end = time.monotonic() + 60
            for i in range(runs + 3):
                for fig, argv in cmds:
                    t0 = time.perf_counter()
                    subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, timeout=30)
                    if i >= 3:
                        times[fig].append((time.perf_counter() - t0) * 1e3)
                if time.monotonic() > end:
                    break
            med = {fig: statistics.median(v) for fig, v in times.items() if v}
            self.raw.append(dict(figure="exec", target=target, rep=rep, tool="loop",
                                 times_ms=times))
        for fig, v in med.items():
            self.record(fig, target, v)
            if fig != "exec_true":
                self.record(fig + "_added", target, v - med["exec_true"])
        log("  %-11s exec: %s" % (target, "  ".join("%s %.2f ms" % (f, v)
                                                   for f, v in med.items())))

    TRANSP_FIGS = ["transp_connect", "transp_transparent", "transp_ratio", "transp_connect_tls",
                   "transp_transparent_tls", "transp_ratio_tls"]

    def fig_transparent(self, target, rep):
        """Figure 13: 64 MiB through the transparent listener beside the same through CONNECT,
        plain HTTP and TLS, in a private network namespace (netns_child) with its own nginx and
        egressd, where an nft rule redirects the client's connections (from 127.0.0.9) to the
        transparent port."""
        figs = self.TRANSP_FIGS
        if self.netns_why:
            self.fail(figs, target, "skipped: " + self.netns_why)
            return
        params = os.path.join(self.tmp, "netns-params.json")
        bound = 60 + self.m["pair_gets"] * 4 * 30
        with open(params, "w") as f:
            json.dump(dict(exe=self.targets[target]["exe"], client=self.client, tmp=self.tmp,
                           gets=self.m["pair_gets"], bound=bound), f)
        argv = ["unshare", "-n", "--", sys.executable, os.path.abspath(__file__),
                "--netns-child", params]
        rc, out, err = run_graceful(argv, bound + 30)
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        res = json.loads(lines[-1]) if lines else {}
        self.raw.append(dict(figure="transparent", target=target, rep=rep, out=res))
        if rc != 0 or "error" in res or not res:
            self.fail(figs, target, "the namespace figure failed: %s" % (
                res.get("error") or last_lines(err, 2)))
            return
        for fig, (b, sec, _each) in res.items():
            self.record(fig, target, b / 1048576 / sec)
        for ratio_fig, a, b in (("transp_ratio", "transp_transparent", "transp_connect"),
                                ("transp_ratio_tls", "transp_transparent_tls",
                                 "transp_connect_tls")):
            if a in res and b in res:
                self.record(ratio_fig, target, pair_ratio(res[a][2], res[b][2]))
        log("  %-11s in a namespace: %s" % (target, "  ".join(
            "%s %.0f MiB/s" % (f, self.results[f][target][-1]) for f in res)))

    def fig_mint(self, target, rep):
        """Figure 11: bench_mint (linked with egressd's proxy library): the first mint of the
        process, m["mints"] mints of new names (wall and CPU time) and as many cache hits."""
        figs = ["mint_first", "mint_median", "mint_p99", "mint_cpu_median", "mint_cpu_p99",
                "mint_cached"]
        if self.mint is None:
            self.fail(figs, target, "bench_mint did not build")
            return
        try:
            r = run([self.mint, "--count", str(self.m["mints"])], 120)
        except subprocess.TimeoutExpired:
            self.fail(figs, target, "bench_mint overran 120 s")
            return
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
        if r.returncode != 0 or not lines:
            self.fail(figs, target, "bench_mint failed: " + last_lines(r.stderr + r.stdout, 2))
            return
        m = json.loads(lines[-1])
        self.raw.append(dict(figure="mint", target=target, rep=rep, out=m))
        for fig, v in (("mint_first", m["first_of_process_us"] / 1e3),
                       ("mint_median", m["mint_us"]["median"] / 1e3),
                       ("mint_p99", m["mint_us"]["p99"] / 1e3),
                       ("mint_cpu_median", m["mint_cpu_us"]["median"] / 1e3),
                       ("mint_cpu_p99", m["mint_cpu_us"]["p99"] / 1e3),
                       ("mint_cached", m["cached_us"]["median"])):
            self.record(fig, target, v)
        log("  %-11s mint: first of the process %.3f ms, median %.3f ms, p99 %.3f ms (CPU %.3f "
            "/ %.3f), cached %.2f us" % (target, m["first_of_process_us"] / 1e3,
                                          m["mint_us"]["median"] / 1e3, m["mint_us"]["p99"] / 1e3,
                                          m["mint_cpu_us"]["median"] / 1e3,
                                          m["mint_cpu_us"]["p99"] / 1e3,
                                          m["cached_us"]["median"]))

    STEP_FIGS = {
        "wrk": ["rps64", "p50_64", "p99_64", "rps256", "p50_256", "p99_256"],
        "bulk": ["bulk_forward", "bulk_connect", "bulk_socks5", "socks5_vs_connect", "bulk_tls",
                 "bulk_socks5_tls", "socks5_vs_connect_tls"],
        "fetch": ["fetch_p50", "fetch_p99", "fetch_added"],
        "idle": list(IDLE_KEYS),
        "wait": list(WAIT_KEYS),
        "decide": ["decide_%d" % n for n in (10, 1000, 100000)] + ["decide_growth"] +
                  ["decide_hot_%d" % n for n in (10, 1000, 100000)] + ["decide_hot_growth"],
        "fsync": ["fsync_off_p50", "fsync_on_p50", "fsync_off_p99", "fsync_on_p99",
                  "fsync_added"],
        "dns": ["dns_qps", "dns_lost"],
        "inspect": ["insp_bulk", "insp_fetch_p50", "insp_fetch_p99", "insp_added"],
        "inspect_idle": list(INSP_IDLE_KEYS),
        "mint": ["mint_first", "mint_median", "mint_p99", "mint_cpu_median", "mint_cpu_p99",
                 "mint_cached"],
        "exec": ["exec_true", "exec_plain", "exec_isolate", "exec_plain_added",
                 "exec_isolate_added"],
        "transparent": TRANSP_FIGS,
    }

    def run(self, budget, figures):
        live = [t for t in TARGETS if t in self.targets]
        proxies = [t for t in live if t != "DIRECT" and t not in CONNECT_ONLY]
        new = [t for t in live if t == "egressd"]
        steps = [("wrk", self.fig_wrk, [t for t in live if t not in CONNECT_ONLY]),
                 ("bulk", self.fig_bulk, live), ("fetch", self.fig_fetch, live),
                 ("idle", self.fig_idle, proxies),
                 ("wait", self.fig_wait, proxies),
                 ("decide", self.fig_decide, [t for t in live if t in EGRESSDS]),
                 ("fsync", self.fig_fsync, new),
                 ("dns", self.fig_dns, new),
                 ("inspect", self.fig_insp, [t for t in live if t in ("DIRECT", "egressd",
                                                                       "squid")]),
                 ("inspect_idle", self.fig_insp_idle, [t for t in live if t in ("egressd",
                                                                                 "squid")]),
                 ("mint", self.fig_mint, new),
                 ("exec", self.fig_exec, new),
                 ("transparent", self.fig_transparent, new)]
        steps = [st for st in steps if st[0] in figures]
        for rep in range(self.m["reps"]):
            # Rotating the order spreads any drift in the machine's load over every target.
            order = live[rep % len(live):] + live[:rep % len(live)] if live else []
            for name, fn, who in steps:
                log("repetition %d/%d: %s" % (rep + 1, self.m["reps"], name))
                for target in [t for t in order if t in who]:
                    if budget.left() < 5:
                        self.fail(self.STEP_FIGS[name], target,
                                  "skipped: the run's time budget ran out")
                        continue
                    with Profile(self, target, name, rep):
                        fn(target, rep)
        # Added latency per repetition, each against DIRECT of the same repetition.
        for fig, base in (("fetch_added", "fetch_p50"), ("insp_added", "insp_fetch_p50")):
            direct = self.results.get(base, {}).get("DIRECT", [])
            for t in PROXIES:
                vals = self.results.get(base, {}).get(t, [])
                for a, b in zip(vals, direct):
                    self.record(fig, t, a - b)


def pair_ratio(a, b):
    """The median over pairs of a[i] / b[i]: downloads that took turns, so each pair shared
    the machine's load of its moment, and one disturbed pair cannot move the figure much."""
    return statistics.median(x / y for x, y in zip(a, b))


def run_graceful(argv, timeout):
    """Runs argv (its own process group) for at most timeout seconds; then SIGTERM, so that a
    harness inside can stop what it started, and SIGKILL 15 s later.  Returns (rc, out, err)."""
    p = subprocess.Popen(argv, start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            out, err = p.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
        return 124, out, (err or "") + " (overran %d s)" % timeout
    except BaseException:
        try:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        raise
    return p.returncode, out, err


NETNS_CLIENT = "127.0.0.9"  # the transparent figure's client address; the redirect matches it


def netns_child(params_file):
    """The transparent figure, run by `unshare -n` in a new network namespace: lo up, an nginx
    and an egressd of its own (configs from the same templates, files from the run's temp dir),
    an nft rule that redirects every TCP connection from NETNS_CLIENT to egressd's transparent
    port, then m["pair_gets"] downloads of 64 MiB of each kind, taking turns: through CONNECT
    and transparently, plain HTTP and TLS.  Prints one JSON line {fig: [bytes, seconds, [MiB/s
    of each download]]} or {"error": why}; stops everything it started on any exit (the
    namespace goes with it)."""
    with open(params_file) as f:
        prm = json.load(f)
    signal.signal(signal.SIGALRM, on_signal)
    signal.alarm(int(prm["bound"]))
    for s_ in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s_, on_signal)
    nd = os.path.join(prm["tmp"], "netns")
    try:
        if which("nft") is None:
            raise RuntimeError("skipped: no nft here (Debian package nftables)")
        for argv in (["ip", "link", "set", "lo", "up"],
                     ["ip", "addr", "add", NETNS_CLIENT + "/8", "dev", "lo"]):
            r = run(argv, 10)
            if r.returncode != 0:
                raise RuntimeError("%s: %s" % (" ".join(argv), last_lines(r.stderr, 1)))
        shutil.rmtree(nd, ignore_errors=True)
        os.makedirs(os.path.join(nd, "nginx-tmp"))
        for x in ("www", "origin-cert.pem", "origin-key.pem", "test-ca.pem", "inspect-ca"):
            os.symlink(os.path.join(prm["tmp"], x), os.path.join(nd, x))
        ports = {"http": free_port(), "tls": free_port()}
        start_nginx(nd, ports)
        _, eports = start_egressd(nd, prm["exe"])
        tport = eports.get("transparent")
        if tport is None:
            raise RuntimeError("egressd opened no transparent listener")
        rules = ("table ip egressd_bench {\n chain out {\n"
                 "  type nat hook output priority -100; policy accept;\n"
                 "  ip saddr %s tcp dport != %d redirect to :%d\n }\n}\n"
                 % (NETNS_CLIENT, tport, tport))
        r = subprocess.run(["nft", "-f", "-"], input=rules, text=True, capture_output=True,
                           timeout=10)
        if r.returncode != 0:
            raise RuntimeError("skipped: nft could not load the redirect rule: " +
                               last_lines(r.stderr, 1))
        ca = os.path.join(nd, "test-ca.pem")

        def args(port, tls, transparent):
            a = ["--host", ORIGIN, "--port", str(port)]
            if transparent:
                a += ["--connect", "127.0.0.1:%d" % port, "--via", "none", "--bind", NETNS_CLIENT]
            else:
                a += ["--connect", "127.0.0.1:%d" % eports["proxy"], "--via", "connect"]
            return a + (["--tls", "--ca", ca] if tls else [])
        runs = [("transp_connect", args(ports["http"], False, False)),
                ("transp_transparent", args(ports["http"], False, True)),
                ("transp_connect_tls", args(ports["tls"], True, False)),
                ("transp_transparent_tls", args(ports["tls"], True, True))]
        tot = {fig: [0, 0.0, []] for fig, _ in runs}
        for _ in range(prm["gets"]):
            for fig, a in runs:
                r = run([prm["client"], "get", "--path", "/64m"] + a, 120)
                out = json.loads(r.stdout.strip().splitlines()[-1]) if r.stdout.strip() else {}
                if r.returncode != 0 or out.get("bytes") != 64 << 20:
                    raise RuntimeError("%s: 64 MiB fetch failed: %s" % (
                        fig, last_lines(r.stderr, 1)))
                tot[fig][0] += out["bytes"]
                tot[fig][1] += out["seconds"]
                tot[fig][2].append(out["bytes"] / 1048576 / out["seconds"])
        # The transparent downloads must have gone through egressd's transparent listener.
        with open(os.path.join(nd, "egressd-audit.jsonl")) as f:
            fronts = [json.loads(ln).get("front") for ln in f if '"connect"' in ln]
        if fronts.count("transparent") < 2 * prm["gets"]:
            raise RuntimeError("the redirect did not reach the transparent listener")
        print(json.dumps(tot), flush=True)
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        print(json.dumps({"error": str(e)}), flush=True)
    finally:
        signal.alarm(0)
        PROCS.stop_all()


# ---------------------------------------------------------------------------------------------
# The table

# (key, label, higher is better, format, target for egressd as (kind, value, text) or None).
# kind "ratio": egressd/DIRECT >= value; "max": egressd's own figure <= value; "min": egressd's
# own figure >= value; "absmax": |egressd's figure| <= value; "peer_min" / "peer_max":
# egressd/Squid >= / <= value.
ROWS = [
    ("rps64", "1 KiB keep-alive, 64 conns: req/s", True, "%.0f", ("ratio", 0.50, "≥ 0.50 × DIRECT")),
    ("p50_64", "1 KiB keep-alive, 64 conns: p50 ms", False, "%.2f", None),
    ("p99_64", "1 KiB keep-alive, 64 conns: p99 ms", False, "%.2f", None),
    ("rps256", "1 KiB keep-alive, 256 conns: req/s", True, "%.0f", ("ratio", 0.50, "≥ 0.50 × DIRECT")),
    ("p50_256", "1 KiB keep-alive, 256 conns: p50 ms", False, "%.2f", None),
    ("p99_256", "1 KiB keep-alive, 256 conns: p99 ms", False, "%.2f", None),
    ("bulk_forward", "64 MiB plain forwarding: MiB/s", True, "%.0f", None),
    ("bulk_connect", "64 MiB raw CONNECT: MiB/s", True, "%.0f", ("ratio", 0.80, "≥ 0.80 × DIRECT")),
    ("bulk_socks5", "64 MiB raw SOCKS5: MiB/s", True, "%.0f", None),
    ("socks5_vs_connect", "64 MiB raw: SOCKS5 ÷ CONNECT", True, "%.2f",
     ("min", 0.95, "≥ 0.95 (within 5 %)")),
    ("bulk_tls", "64 MiB CONNECT+TLS: MiB/s", True, "%.0f", ("ratio", 0.90, "≥ 0.90 × DIRECT")),
    ("bulk_socks5_tls", "64 MiB SOCKS5+TLS: MiB/s", True, "%.0f", None),
    ("socks5_vs_connect_tls", "64 MiB TLS: SOCKS5 ÷ CONNECT", True, "%.2f",
     ("min", 0.95, "≥ 0.95 (within 5 %)")),
    ("fetch_p50", "new CONNECT+TLS 1 KiB fetch: median ms", False, "%.3f", None),
    ("fetch_p99", "new CONNECT+TLS 1 KiB fetch: p99 ms", False, "%.3f", None),
    ("fetch_added", "new CONNECT+TLS fetch: added over DIRECT, ms", False, "%.3f",
     ("max", 0.3, "≤ 0.3 ms")),
    ("rss_before", "idle tunnels: RSS before, MiB", False, "%.1f", None),
    ("rss_hold", "idle tunnels: RSS holding, MiB", False, "%.1f", None),
    ("rss_after", "idle tunnels: RSS after close, MiB", False, "%.1f", None),
    ("kib_per_tunnel", "idle tunnels: KiB per tunnel", False, "%.1f", ("max", 4.0, "≤ 4 KiB")),
    ("rss_after_pct", "idle tunnels: RSS after vs before, %", False, "%+.1f",
     ("absmax", 10.0, "within 10 %")),
    ("wait_before", "first-bytes tunnels: RSS before, MiB", False, "%.1f", None),
    ("wait_hold", "first-bytes tunnels: RSS holding, MiB", False, "%.1f", None),
    ("wait_after", "first-bytes tunnels: RSS after close, MiB", False, "%.1f", None),
    ("wait_kib", "first-bytes tunnels: KiB per tunnel", False, "%.1f", None),
    ("wait_after_pct", "first-bytes tunnels: RSS after vs before, %", False, "%+.1f",
     ("absmax", 25.0, "within 25 %")),
    ("decide_10", "decision cost, 10 patterns: ns (best trial)", False, "%.0f", None),
    ("decide_1000", "decision cost, 1,000 patterns: ns (best trial)", False, "%.0f", None),
    ("decide_100000", "decision cost, 100,000 patterns: ns (best trial)", False, "%.0f", None),
    ("decide_growth", "decision cost, 100,000 ÷ 10 patterns", False, "%.2f",
     ("max", 2.0, "flat (≤ 2×)")),
    ("decide_hot_10", "decision cost, 16 hot destinations, 10 patterns: ns", False, "%.0f", None),
    ("decide_hot_1000", "decision cost, 16 hot destinations, 1,000 patterns: ns", False, "%.0f",
     None),
    ("decide_hot_100000", "decision cost, 16 hot destinations, 100,000 patterns: ns", False,
     "%.0f", None),
    ("decide_hot_growth", "decision cost, 16 hot destinations, 100,000 ÷ 10", False, "%.2f",
     ("max", 1.5, "flat (≤ 1.5×)")),
    ("fsync_off_p50", "new CONNECT+TLS fetch, audit.fsync off: median ms", False, "%.3f", None),
    ("fsync_on_p50", "new CONNECT+TLS fetch, audit.fsync on: median ms", False, "%.3f", None),
    ("fsync_off_p99", "new CONNECT+TLS fetch, audit.fsync off: p99 ms", False, "%.3f", None),
    ("fsync_on_p99", "new CONNECT+TLS fetch, audit.fsync on: p99 ms", False, "%.3f", None),
    ("fsync_added", "audit.fsync: added to the median, ms", False, "%.3f", None),
    ("dns_qps", "DNS listener, cached A answers: queries/s", True, "%.0f",
     ("min", 20000, "≥ 20,000/s")),
    ("dns_lost", "DNS listener: queries lost", False, "%.0f", None),
    ("insp_bulk", "64 MiB inspected (Squid: ssl_bump bump): MiB/s", True, "%.0f",
     ("peer_min", 1.0, "≥ Squid bumped")),
    ("insp_fetch_p50", "new inspected 1 KiB fetch, leaf cached (Squid: bumped): median ms",
     False, "%.3f", None),
    ("insp_fetch_p99", "new inspected 1 KiB fetch, leaf cached (Squid: bumped): p99 ms", False,
     "%.3f", None),
    ("insp_added", "new inspected fetch: added over DIRECT, ms", False, "%.3f",
     ("peer_max", 0.5, "≤ 0.5 × Squid bumped")),
    ("insp_before", "idle inspected tunnels (Squid: bumped): RSS before, MiB", False, "%.1f", None),
    ("insp_hold", "idle inspected tunnels (Squid: bumped): RSS holding, MiB", False, "%.1f", None),
    ("insp_after", "idle inspected tunnels (Squid: bumped): RSS after close, MiB", False, "%.1f",
     None),
    ("insp_kib", "idle inspected tunnels (Squid: bumped): KiB per tunnel", False, "%.1f", None),
    ("insp_after_pct", "idle inspected tunnels (Squid: bumped): RSS after vs before, %", False,
     "%+.1f", None),
    ("mint_first", "leaf mint: the process's first (OpenSSL set-up), ms", False, "%.3f",
     ("max", 2.0, "< 2 ms")),
    ("mint_median", "leaf mint: a new name, median wall ms", False, "%.3f", ("max", 2.0, "< 2 ms")),
    ("mint_p99", "leaf mint: a new name, p99 wall ms", False, "%.3f", None),
    ("mint_cpu_median", "leaf mint: a new name, median CPU ms", False, "%.3f", None),
    ("mint_cpu_p99", "leaf mint: a new name, p99 CPU ms", False, "%.3f", None),
    ("mint_cached", "leaf mint: a cached leaf, µs", False, "%.2f", None),
    ("exec_true", "`true` alone: median ms", False, "%.2f", None),
    ("exec_plain", "`egressd exec -- true`: median ms", False, "%.2f", None),
    ("exec_isolate", "`egressd exec --isolate -- true`: median ms", False, "%.2f", None),
    ("exec_plain_added", "egressd exec: added over `true`, ms", False, "%.2f",
     ("max", 20.0, "≤ 20 ms")),
    ("exec_isolate_added", "egressd exec --isolate: added over `true`, ms", False, "%.2f",
     ("max", 40.0, "≤ 40 ms")),
    ("transp_connect", "namespace: 64 MiB raw CONNECT: MiB/s", True, "%.0f", None),
    ("transp_transparent", "namespace: 64 MiB plain HTTP, transparent: MiB/s", True, "%.0f", None),
    ("transp_ratio", "namespace: 64 MiB plain, transparent ÷ CONNECT", True, "%.2f",
     ("min", 0.95, "≥ 0.95 (within 5 %)")),
    ("transp_connect_tls", "namespace: 64 MiB CONNECT+TLS: MiB/s", True, "%.0f", None),
    ("transp_transparent_tls", "namespace: 64 MiB TLS, transparent: MiB/s", True, "%.0f", None),
    ("transp_ratio_tls", "namespace: 64 MiB TLS, transparent ÷ CONNECT", True, "%.2f",
     ("min", 0.95, "≥ 0.95 (within 5 %)")),
]

# Rows whose egressd/DIRECT ratio means something (DIRECT did the same work).
DIRECT_RATIO = {"rps64", "p50_64", "p99_64", "rps256", "p50_256", "p99_256", "bulk_forward",
                "bulk_connect", "bulk_tls", "fetch_p50", "fetch_p99", "insp_bulk",
                "insp_fetch_p50", "insp_fetch_p99"}
# Rows with no tinyproxy/Squid ratio: egressd-only figures, percentages and egressd's ratios.
NO_PEER_RATIO = ("decide", "rss_after_pct", "wait_after_pct", "insp_after_pct", "fetch_added",
                 "fsync", "dns", "mint", "exec", "transp", "socks5", "bulk_socks5")
# Issue 9's "within the noise": egressd is flagged against egressd-old when its median is worse
# by more than this and the two [min–max] ranges do not overlap.
OLD_NOISE = 0.05


def cell(vals, fmt):
    if not vals:
        return None
    med = statistics.median(vals)
    if len(vals) == 1:
        return fmt % med
    return "%s [%s–%s]" % (fmt % med, fmt % min(vals), fmt % max(vals))


def ratio(a, b):
    if not a or not b:
        return "—"
    mb = statistics.median(b)
    if mb == 0:
        return "—"
    return "%.2f" % (statistics.median(a) / mb)


def old_cell(new, old, higher):
    """egressd/egressd-old as a ratio of medians, with "worse" when egressd is worse beyond
    OLD_NOISE and the ranges do not overlap."""
    r = ratio(new, old)
    if r == "—":
        return r
    mn, mo = statistics.median(new), statistics.median(old)
    worse = mn < mo * (1 - OLD_NOISE) if higher else mn > mo * (1 + OLD_NOISE)
    overlap = min(new) <= max(old) and min(old) <= max(new)
    return r + (" worse" if worse and not overlap else "")


def judge(target, res):
    """'yes', 'no' or 'n/a' for egressd's target on one row's results."""
    kind, limit, _text = target
    e = res.get("egressd", [])
    if not e:
        return "n/a"
    me = statistics.median(e)
    if kind == "ratio":
        d = res.get("DIRECT", [])
        return ("yes" if me / statistics.median(d) >= limit else "no") if d else "n/a"
    if kind in ("peer_min", "peer_max"):
        q = res.get("squid", [])
        if not q or statistics.median(q) == 0:
            return "n/a"
        r = me / statistics.median(q)
        return "yes" if (r >= limit if kind == "peer_min" else r <= limit) else "no"
    if kind == "max":
        return "yes" if me <= limit else "no"
    if kind == "min":
        return "yes" if me >= limit else "no"
    return "yes" if abs(me) <= limit else "no"


def make_table(bench, notes):
    res = bench.results
    head = ["figure"] + [LABEL[t] for t in TARGETS] + [
        "egressd/DIRECT", "egressd/floor", "egressd/old", "egressd/tinyproxy", "egressd/Squid",
        "egressd target", "met"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, label, higher, fmt, target in ROWS:
        rk = res.get(key, {})
        row = [label]
        for t in TARGETS:
            c = cell(rk.get(t, []), fmt)
            if c is None:
                if t in bench.na:
                    c = "n/a"
                elif (key, t) in bench.errors:
                    c = "n/a (%s)" % ("error" if not bench.errors[(key, t)].startswith("skipped")
                                      else "skipped")
                else:
                    c = "—"
            row.append(c)
        e = rk.get("egressd", [])
        row.append(ratio(e, rk.get("DIRECT", [])) if key in DIRECT_RATIO else "—")
        row.append(ratio(e, rk.get("RELAY", [])) if rk.get("RELAY") and key != "fetch_added"
                   else "—")
        row.append(old_cell(e, rk["egressd-old"], higher) if e and rk.get("egressd-old")
                   else "—")
        if key.startswith(NO_PEER_RATIO):
            row += ["—", "—"]
        else:
            row += [ratio(e, rk.get("tinyproxy", [])), ratio(e, rk.get("squid", []))]
        row += ["", ""] if target is None else [target[2], judge(target, rk)]
        lines.append("| " + " | ".join(row) + " |")
    out = "\n".join(lines) + "\n"
    if notes:
        out += "\n" + "\n".join("- " + n for n in notes) + "\n"
    return out


# ---------------------------------------------------------------------------------------------


def netns_unavailable():
    """None when `unshare -n` can make a network namespace here (and ip and nft exist), else
    why not: the transparent figure is then skipped with that reason."""
    for tool, package in (("unshare", "util-linux"), ("ip", "iproute2"), ("nft", "nftables")):
        if which(tool) is None:
            return "no %s here (Debian package %s)" % (tool, package)
    r = run(["unshare", "-n", "--", "ip", "link", "set", "lo", "up"], 20)
    if r.returncode != 0:
        return "cannot make a network namespace here (unshare -n: %s)" % last_lines(r.stderr, 1)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="one repetition, short loads (< 2 min)")
    ap.add_argument("--targets", default=",".join(TARGETS),
                    help="comma-separated subset of " + ",".join(TARGETS))
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build-bench"))
    ap.add_argument("--skip-build", action="store_true", help="use the egressd already built")
    ap.add_argument("--no-install", action="store_true", help="never run apt-get")
    ap.add_argument("--out", default=None, help="results folder (default bench/out/STAMP)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (configs, logs)")
    ap.add_argument("--figures", default=",".join(Bench.STEP_FIGS),
                    help="comma-separated subset of " + ",".join(Bench.STEP_FIGS))
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override one parameter of the mode (reps, wrk_s, gets, fetches, "
                    "fetch_s, tunnels, tunnel_s, decide_s, budget_s)")
    ap.add_argument("--perf", action="store_true",
                    help="profile egressd with perf record during each figure (into the results "
                    "folder); the profiler's own cost lowers egressd's figures in that run")
    ap.add_argument("--old-rev", default=OLD_REV, metavar="REV",
                    help="the commit whose egressd is the target egressd-old (default %s, the "
                    "proxy before issue 9's restructure; built once into BUILD_DIR-old-COMMIT "
                    "from a detached worktree outside the repository); 'none': no such target"
                    % OLD_REV)
    ap.add_argument("--old-bin", default=None, metavar="PATH",
                    help="an egressd binary to run as egressd-old instead of building --old-rev "
                    "(its decision cost is then not measured)")
    ap.add_argument("--netns-child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.netns_child:
        netns_child(args.netns_child)
        return

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    mode = "quick" if args.quick else "full"
    for kv in args.set:
        key, _, value = kv.partition("=")
        if key not in MODES[mode]:
            ap.error("--set: unknown parameter %r" % key)
        MODES[mode][key] = type(MODES[mode][key])(float(value))
    wanted = [t for t in TARGETS if t in args.targets.split(",")]
    figures = args.figures.split(",")
    for f in figures:
        if f not in Bench.STEP_FIGS:
            ap.error("--figures: unknown figure %r" % f)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    outdir = args.out or os.path.join(HERE, "out", stamp)
    os.makedirs(outdir, exist_ok=True)
    load_start = os.getloadavg()
    started = datetime.datetime.now(datetime.timezone.utc)
    tmp = tempfile.mkdtemp(prefix="egressd-bench-")
    os.chmod(tmp, 0o755)
    notes = []
    bench = None
    try:
        missing = ensure_packages(not args.no_install)
        for pkg in ("nginx", "openssl", "wrk"):
            if pkg in missing:
                raise SystemExit("bench: %s is required: %s" % (pkg, missing[pkg]))
        os.makedirs(args.build_dir, exist_ok=True)
        egressd_exe, egressd_dir, egressd_why = None, args.build_dir, "not selected"
        if "egressd" in wanted:
            egressd_exe, egressd_dir, egressd_why = build_egressd(args.build_dir,
                                                                  args.skip_build, notes)
        old_exe, old_decide, old_why = None, None, "not selected"
        if args.old_rev == "none" and args.old_bin is None:
            wanted = [t for t in wanted if t != "egressd-old"]
        elif "egressd-old" in wanted:
            if args.old_bin:
                old_exe, old_why = ((args.old_bin, None) if os.access(args.old_bin, os.X_OK)
                                    else (None, "no executable %s" % args.old_bin))
            else:
                old_exe, old_decide, old_why = build_old(args.old_rev, args.build_dir, notes)
        # decide_bench links the allowlist library of the build that made egressd.
        client, decide, decide_why = build_helpers(egressd_dir or args.build_dir)
        global RELAY_EXE
        RELAY_EXE = os.path.join(os.path.dirname(client), "relay")

        ports = {"http": free_port(), "tls": free_port()}
        make_origin_files(tmp)
        cert = os.path.join(tmp, "test-ca.pem")
        make_inspect_ca(tmp, egressd_exe)
        start_nginx(tmp, ports)
        bench = Bench(mode, client, {"egressd": decide, "egressd-old": old_decide}, ports, cert)
        bench.tmp, bench.egressd_exe = tmp, egressd_exe
        bench.insp_ca = os.path.join(tmp, "inspect-ca", "ca.pem")
        mint = os.path.join(egressd_dir or args.build_dir, "bench_mint")
        bench.mint = mint if os.access(mint, os.X_OK) else None
        bench.netns_why = netns_unavailable()
        exes = {"egressd": egressd_exe, "egressd-old": old_exe}
        whys = {"egressd": egressd_why, "egressd-old": old_why}
        if "egressd-old" in wanted and (args.old_rev != "none" or args.old_bin):
            notes.append("egressd-old: %s" % (args.old_bin or "egressd at %s, built by the "
                                              "harness (Release)" % args.old_rev))
        if args.perf:
            if which("perf") is None:
                raise SystemExit("bench: --perf needs perf (apt-get install linux-perf)")
            bench.perf_dir = outdir
        for t in TARGETS:
            if t not in wanted:
                bench.na[t] = "not selected (--targets)"
                continue
            try:
                if t == "DIRECT":
                    bench.targets[t] = dict(port=None, host=ORIGIN, pid=None)
                else:
                    if t in EGRESSDS and exes[t] is None:
                        raise RuntimeError(whys[t])
                    for pkg in {"egressd": [], "egressd-old": [], "RELAY": [],
                                "tinyproxy": ["tinyproxy", "util-linux"], "squid": []}[t]:
                        if pkg in missing:
                            raise RuntimeError(missing[pkg])
                    if t == "squid" and which("squid") is None:
                        raise RuntimeError(missing.get("squid-openssl", "squid is not installed"))
                    start = starter(t, tmp, ports, exes)
                    p, lports, host = start()
                    bench.targets[t] = dict(port=lports["proxy"], ports=lports, host=host,
                                            pid=p.pid, proc=p, start=start, exe=exes.get(t))
                    if host != ORIGIN:
                        notes.append("tinyproxy ran without a private /etc/hosts (unshare -m "
                                     "failed), so its allowlist and clients use 'localhost'.")
                if t != "DIRECT" and t not in CONNECT_ONLY:
                    why = bench.probe(t)
                    if why:
                        raise RuntimeError(why)
                log("%s ready" % t)
            except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                bench.na[t] = str(e)
                bench.targets.pop(t, None)
                log("%s is n/a: %s" % (t, e))
        # The inspection figures: egressd inspects inspect.test in its own instance; Squid's
        # column there is a second Squid that bumps (squid-bump.conf.in).
        for t in [x for x in ("egressd", "squid-bump") if x == "egressd" or "squid" in wanted]:
            if t not in bench.targets and t != "squid-bump":
                continue
            try:
                if t == "squid-bump":
                    if not squid_can_bump():
                        raise RuntimeError(missing.get(
                            "squid-openssl", "squid is not built with OpenSSL (squid-openssl)"))
                    start = starter(t, tmp, ports, exes)
                    p, lports, host = start()
                    bench.targets[t] = dict(port=lports["proxy"], ports=lports, host=host,
                                            pid=p.pid, proc=p, start=start)
                why = bench.probe_inspect(t)
                if why:
                    raise RuntimeError(why)
                log("%s inspects" % t)
            except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                bench.na[t if t == "squid-bump" else "egressd inspection"] = str(e)
                if t == "squid-bump":
                    p_ = bench.targets.pop(t, {}).get("proc")
                    if p_ is not None:
                        PROCS.stop_and_forget(p_)
                log("%s inspection is n/a: %s" % (t, e))
        if "egressd" in bench.targets and decide is None:
            bench.na["egressd decision cost"] = decide_why
        bench.run(Budget(MODES[mode]["budget_s"]), figures)
    finally:
        PROCS.stop_all()
        if bench is not None:
            elapsed = time.monotonic() - T0
            load_end = os.getloadavg()
            notes.insert(0, "%s run, %s UTC, %.0f s, %d CPUs; load average %.2f at start, %.2f at "
                         "end (other work on the machine competes with client, proxy and origin)"
                         % (mode, started.strftime("%Y-%m-%d %H:%M"), elapsed, os.cpu_count(),
                            load_start[0], load_end[0]))
            notes.append("cells: median [min–max] over %d repetition(s); ratios are of medians"
                         % MODES[mode]["reps"])
            for t, why in bench.na.items():
                notes.append("%s: n/a — %s" % (t, why))
            seen = set()
            for (fig, t), why in sorted(bench.errors.items()):
                if (t, why) not in seen and t not in bench.na:
                    seen.add((t, why))
                    notes.append("%s, %s: %s" % (t, fig, why))
            table = make_table(bench, notes)
            print(table)
            with open(os.path.join(outdir, "table.md"), "w") as f:
                f.write(table)
            with open(os.path.join(outdir, "results.json"), "w") as f:
                json.dump(dict(mode=mode, started=started.isoformat(), elapsed_s=elapsed,
                               load_start=load_start, load_end=load_end, params=MODES[mode],
                               na=bench.na, results=bench.results, raw=bench.raw,
                               errors={"%s %s" % k: v for k, v in bench.errors.items()}),
                          f, indent=1)
            log("results in %s" % outdir)
        if args.keep:
            log("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
