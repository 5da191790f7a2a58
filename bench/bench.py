#!/usr/bin/env python3
"""bench/run: egressd beside DIRECT, tinyproxy and Squid, in one run, on loopback.

Starts an nginx origin and the three proxies with equivalent allowlists (origin.test only),
measures the five figures of issue 5 for every target with the targets interleaved (and two more,
egressd only: the new-connection figure with audit.fsync off and on, and the DNS listener's
cached answers per second with dnsperf), and prints
one table: median [min-max] per figure and target, and egressd's ratios to DIRECT and to each
peer.  Every process it starts is recorded and stopped on exit, whatever the exit; every loop is
bounded in count and in time, and the whole run has a time budget (15 minutes full, 2 quick).

Clients: wrk for figure 1; bench/benchclient.c (C, OpenSSL, blocking sockets) for figures 2-4;
bench/decide_bench.c (C, linked with egressd's allowlist library) for figure 5; dnsperf (Debian's
package) for figure 7.
"""

import argparse
import datetime
import json
import os
import re
import select
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
TARGETS = ["DIRECT", "RELAY", "egressd", "tinyproxy", "squid"]
PROXIES = ["RELAY", "egressd", "tinyproxy", "squid"]
LABEL = {"DIRECT": "DIRECT", "RELAY": "floor relay", "egressd": "egressd",
         "tinyproxy": "tinyproxy", "squid": "Squid"}
# RELAY (bench/relay.c) is the floor for a CONNECT proxy here: CONNECT line, 200, splice, and
# nothing else.  It takes part in the CONNECT figures only and has no allowlist to probe.
CONNECT_ONLY = {"RELAY"}
RELAY_EXE = None  # built by build_helpers beside benchclient
ORIGIN = "origin.test"
# A name every resolver here answers (127.0.0.1, where nginx listens) but no allowlist admits:
# a proxy that forwards it has an allowlist that is not equivalent to the others'.
DENIED = "localhost"
CFLAGS = ["-std=c17", "-D_GNU_SOURCE", "-O2", "-Wall", "-Wextra", "-Werror", "-Wshadow",
          "-Wformat=2", "-Wstrict-prototypes", "-Wvla"]

# Debian package -> the binary the harness runs.
PACKAGES = {"nginx": "nginx", "tinyproxy": "tinyproxy", "squid": "squid", "wrk": "wrk",
            "openssl": "openssl", "util-linux": "unshare", "dnsperf": "dnsperf"}
SERVICES = {"nginx": "/run/nginx.pid", "tinyproxy": "/run/tinyproxy/tinyproxy.pid",
            "squid": "/run/squid.pid"}

MODES = {
    # reps: repetitions of every figure; wrk_s: seconds per wrk run; gets: 64 MiB fetches per
    # figure and repetition; fetches/fetch_s: the new-connection loop's count and time bound;
    # tunnels/tunnel_s: idle tunnels and the time bound to open them; decide_s: seconds per
    # pattern count in the policy micro-benchmark; dns_s: seconds of dnsperf per repetition;
    # budget_s: the measurements (setup and a first build of egressd come before it).
    "full": dict(reps=3, wrk_s=5, gets=3, fetches=1000, fetch_s=90, tunnels=5000, tunnel_s=60,
                 decide_s=0.5, dns_s=10, budget_s=13 * 60),
    "quick": dict(reps=1, wrk_s=2, gets=2, fetches=200, fetch_s=10, tunnels=2000, tunnel_s=15,
                  decide_s=0.2, dns_s=3, budget_s=90),
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
    missing = [pkg for pkg, binary in PACKAGES.items() if which(binary) is None]
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
            for pkg in missing if which(PACKAGES[pkg]) is None}


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
    r = run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
             "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj", "/CN=" + ORIGIN,
             "-addext", "subjectAltName=DNS:" + ORIGIN, "-keyout",
             os.path.join(d, "origin-key.pem"), "-out", os.path.join(d, "origin-cert.pem")], 60)
    if r.returncode != 0:
        raise SystemExit("bench: openssl req failed: " + last_lines(r.stderr))
    with open(os.path.join(d, "hosts"), "w") as f:
        f.write("127.0.0.1 localhost\n::1 localhost\n127.0.0.1 %s\n" % ORIGIN)
    for root, dirs, files in os.walk(d):
        for x in dirs:
            os.chmod(os.path.join(root, x), 0o755)
        for x in files:
            os.chmod(os.path.join(root, x), 0o644)


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


def start_egressd(d, exe):
    conf = render("egressd.yaml.in", os.path.join(d, "egressd.yaml"), dir=d)
    logpath = os.path.join(d, "egressd.log")
    with open(logpath, "wb") as logf:
        p = PROCS.start("egressd", [exe, "serve", "-c", conf], stdout=logf, stderr=logf)
    return p, wait_listening(p, logpath)


def start_egressd_fsync(d, exe):
    """A second egressd, the same config but audit.fsync: true (its own audit file in d, on the
    same file system as the first one's), for the fsync figure."""
    conf = render("egressd-fsync.yaml.in", os.path.join(d, "egressd-fsync.yaml"), dir=d)
    logpath = os.path.join(d, "egressd-fsync.log")
    with open(logpath, "wb") as logf:
        p = PROCS.start("egressd fsync", [exe, "serve", "-c", conf], stdout=logf, stderr=logf)
    return p, wait_listening(p, logpath)


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


def starter(target, d, ports, egressd_exe):
    """A function that starts `target` with its config in d and returns (Popen, port, origin
    name), to start it the first time and again before each idle-tunnel figure."""
    if target == "egressd":
        def start():
            p, port = start_egressd(d, egressd_exe)
            return p, port, ORIGIN
    elif target == "tinyproxy":
        def start():
            return start_tinyproxy(d, ports)
    elif target == "RELAY":
        def start():
            p, port = start_relay(d)
            return p, port, ORIGIN
    else:
        def start():
            p, port = start_squid(d, ports)
            return p, port, ORIGIN
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
        self.perf_dir = None  # where --perf puts egressd's profiles
        self.client = client
        self.decide = decide
        self.ports = ports
        self.cert = cert
        self.targets = {}   # name -> {"port": proxy port or None, "host": origin name, "pid",
        #                      "proc": its Popen, "start": () -> (Popen, port, host)}
        self.na = {}        # name -> why the target is not measured
        self.results = {}   # figure -> target -> [value per repetition]
        self.raw = []       # every measurement's own output, for results.json
        self.errors = {}    # (figure, target) -> last error
        self.tmp = None     # the run's temp dir (configs, logs, audit files)
        self.egressd_exe = None  # the egressd binary, for the fsync figure's second instance

    def record(self, fig, target, value):
        self.results.setdefault(fig, {}).setdefault(target, []).append(value)

    def fail(self, figs, target, why):
        for fig in figs:
            self.errors[(fig, target)] = why
        log("  %s %s: %s" % (target, "/".join(figs), why))

    def client_args(self, target, port, via, tls):
        t = self.targets[target]
        if t["port"] is None:
            argv = ["--connect", "127.0.0.1:%d" % port, "--via", "none"]
        else:
            argv = ["--connect", "127.0.0.1:%d" % t["port"], "--via", via]
        argv += ["--host", t["host"], "--port", str(port)]
        if tls:
            argv += ["--tls", "--ca", self.cert]
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
        for via in ("forward", "connect"):
            args = ["get", "--path", "/1k", "--connect", "127.0.0.1:%d" % t["port"], "--via", via,
                    "--host", DENIED, "--port", str(http)]
            rc, out, err = self.run_client(args, 20)
            if rc == 0:
                return "its allowlist let %s:%d through via %s" % (DENIED, http, via)
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

    def fig_bulk(self, target, rep):
        """Figure 2: 64 MiB through plain forwarding, a raw CONNECT tunnel and CONNECT+TLS."""
        for fig, via, port, tls in (("bulk_forward", "forward", self.ports["http"], False),
                                    ("bulk_connect", "connect", self.ports["http"], False),
                                    ("bulk_tls", "connect", self.ports["tls"], True)):
            if via == "forward" and target in CONNECT_ONLY:
                continue
            total_b, total_s = 0, 0.0
            for _ in range(self.m["gets"]):
                try:
                    rc, out, err = self.run_client(
                        ["get", "--path", "/64m"] + self.client_args(target, port, via, tls), 120)
                except subprocess.TimeoutExpired:
                    rc, out, err = 1, {}, "no answer in 120 s"
                if rc != 0 or out.get("bytes") != 64 << 20:
                    self.fail([fig], target, "64 MiB fetch failed: " + last_lines(err, 1))
                    total_b = 0
                    break
                total_b += out["bytes"]
                total_s += out["seconds"]
            if total_b:
                self.record(fig, target, total_b / 1048576 / total_s)
                self.raw.append(dict(figure=fig, target=target, rep=rep, bytes=total_b,
                                     seconds=total_s))
                log("  %-9s %-13s %8.1f MiB/s" % (target, fig, total_b / 1048576 / total_s))

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
        """Stops a proxy and starts it again with the same config (on a new port)."""
        t = self.targets[target]
        PROCS.stop_and_forget(t["proc"])
        p, port, host = t["start"]()
        t.update(proc=p, pid=p.pid, port=port, host=host)

    def fig_idle(self, target, rep):
        """Figure 4: the proxy's RSS before, while holding N idle CONNECT tunnels, and after.
        The proxy is restarted first: memory that earlier figures (or the previous repetition's
        tunnels) left in its heap would otherwise be reused by the tunnels and hide their cost,
        and "after" could not be compared with the start."""
        figs = ["rss_before", "rss_hold", "rss_after", "kib_per_tunnel", "rss_after_pct"]
        try:
            self.restart(target)
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            self.fail(figs, target, "restart before the idle figure failed: %s" % e)
            return
        time.sleep(1.0 if self.m is MODES["quick"] else 2.0)  # let it finish starting up
        pid = self.targets[target]["pid"]
        settle = 1.0 if self.m is MODES["quick"] else 2.0
        before = tree_rss_kib(pid)
        args = [self.client, "idle", "--path", "/1k", "--count", str(self.m["tunnels"]),
                "--deadline", str(self.m["tunnel_s"])]
        args += self.client_args(target, self.ports["http"], "connect", False)
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
        if opened < self.m["tunnels"]:
            self.fail(figs, target, "only %d of %d tunnels opened: %s" % (
                opened, self.m["tunnels"], last_lines(p.stderr.read(), 1)))
            if opened == 0:
                return
        self.raw.append(dict(figure="idle", target=target, rep=rep, tunnels=opened,
                             before_kib=before, hold_kib=hold, after_kib=after))
        self.record("rss_before", target, before / 1024)
        self.record("rss_hold", target, hold / 1024)
        self.record("rss_after", target, after / 1024)
        self.record("kib_per_tunnel", target, (hold - before) / opened)
        self.record("rss_after_pct", target, 100.0 * (after - before) / before)
        log("  %-9s %d tunnels: RSS %.1f -> %.1f -> %.1f MiB, %.1f KiB/tunnel" % (
            target, opened, before / 1024, hold / 1024, after / 1024, (hold - before) / opened))

    def fig_decide(self, rep):
        """Figure 5: egressd's decision cost with 10, 1,000 and 100,000 patterns, over 4,096
        destinations spread across the whole table (cold: memory latency included) and over
        destinations among 16 patterns (hot: the lookup alone)."""
        for kind, extra in (("", []), ("_hot", ["--hot", "16"])):
            figs = ["decide%s_%d" % (kind, n) for n in (10, 1000, 100000)]
            try:
                r = run([self.decide, "--seconds", str(self.m["decide_s"])] + extra +
                        ["10", "1000", "100000"], 120)
            except subprocess.TimeoutExpired:
                self.fail(figs, "egressd", "decide_bench overran 120 s")
                continue
            rows = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
            if r.returncode != 0 or len(rows) != 3:
                self.fail(figs, "egressd", "decide_bench failed (wrong decisions or a crash): " +
                          last_lines(r.stderr + r.stdout, 2))
                continue
            for fig, row in zip(figs, rows):
                self.record(fig, "egressd", row["ns_per_decision"])
                self.record(fig + "_median", "egressd", row["median_ns"])
            self.record("decide%s_growth" % kind, "egressd",
                        rows[2]["ns_per_decision"] / rows[0]["ns_per_decision"])
            self.raw.append(dict(figure="decide" + kind, target="egressd", rep=rep, rows=rows))
            log("  egressd   decision%s (best / median trial): %s ns" % (kind, "   ".join(
                "%.0f / %.0f" % (r_["ns_per_decision"], r_["median_ns"]) for r_ in rows)))

    STEP_FIGS = {
        "wrk": ["rps64", "p50_64", "p99_64", "rps256", "p50_256", "p99_256"],
        "bulk": ["bulk_forward", "bulk_connect", "bulk_tls"],
        "fetch": ["fetch_p50", "fetch_p99", "fetch_added"],
        "idle": ["rss_before", "rss_hold", "rss_after", "kib_per_tunnel", "rss_after_pct"],
        "decide": ["decide_%d" % n for n in (10, 1000, 100000)] + ["decide_growth"] +
                  ["decide_hot_%d" % n for n in (10, 1000, 100000)] + ["decide_hot_growth"],
        "fsync": ["fsync_off_p50", "fsync_on_p50", "fsync_off_p99", "fsync_on_p99",
                  "fsync_added"],
        "dns": ["dns_qps", "dns_lost"],
    }

    def run(self, budget, figures):
        live = [t for t in TARGETS if t in self.targets]
        steps = [("wrk", self.fig_wrk, [t for t in live if t not in CONNECT_ONLY]),
                 ("bulk", self.fig_bulk, live), ("fetch", self.fig_fetch, live),
                 ("idle", self.fig_idle, [t for t in live if t != "DIRECT" and
                                          t not in CONNECT_ONLY]),
                 ("fsync", self.fig_fsync, [t for t in live if t == "egressd"]),
                 ("dns", self.fig_dns, [t for t in live if t == "egressd"])]
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
            if self.decide is not None and "egressd" in self.targets and "decide" in figures:
                if budget.left() > 5:
                    self.fig_decide(rep)
                else:
                    self.fail(self.STEP_FIGS["decide"], "egressd",
                              "skipped: the run's time budget ran out")
        # Added latency per repetition, each against DIRECT of the same repetition.
        direct = self.results.get("fetch_p50", {}).get("DIRECT", [])
        for t in PROXIES:
            vals = self.results.get("fetch_p50", {}).get(t, [])
            for a, b in zip(vals, direct):
                self.record("fetch_added", t, a - b)


# ---------------------------------------------------------------------------------------------
# The table

# (key, label, higher is better, format, target for egressd as (kind, value, text) or None).
# kind "ratio": egressd/DIRECT >= value; "max": egressd's own figure <= value; "min": egressd's
# own figure >= value; "absmax": |egressd's figure| <= value.
ROWS = [
    ("rps64", "1 KiB keep-alive, 64 conns: req/s", True, "%.0f", ("ratio", 0.50, "≥ 0.50 × DIRECT")),
    ("p50_64", "1 KiB keep-alive, 64 conns: p50 ms", False, "%.2f", None),
    ("p99_64", "1 KiB keep-alive, 64 conns: p99 ms", False, "%.2f", None),
    ("rps256", "1 KiB keep-alive, 256 conns: req/s", True, "%.0f", ("ratio", 0.50, "≥ 0.50 × DIRECT")),
    ("p50_256", "1 KiB keep-alive, 256 conns: p50 ms", False, "%.2f", None),
    ("p99_256", "1 KiB keep-alive, 256 conns: p99 ms", False, "%.2f", None),
    ("bulk_forward", "64 MiB plain forwarding: MiB/s", True, "%.0f", None),
    ("bulk_connect", "64 MiB raw CONNECT: MiB/s", True, "%.0f", ("ratio", 0.80, "≥ 0.80 × DIRECT")),
    ("bulk_tls", "64 MiB CONNECT+TLS: MiB/s", True, "%.0f", ("ratio", 0.90, "≥ 0.90 × DIRECT")),
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
    ("decide_10", "decision cost, 10 patterns: ns (best trial)", False, "%.0f", None),
    ("decide_1000", "decision cost, 1,000 patterns: ns (best trial)", False, "%.0f", None),
    ("decide_100000", "decision cost, 100,000 patterns: ns (best trial)", False, "%.0f", None),
    ("decide_growth", "decision cost, 100,000 ÷ 10 patterns", False, "%.2f",
     ("max", 2.0, "flat (≤ 2×)")),
    ("decide_hot_10", "decision cost, 16 hot destinations, 10 patterns: ns", False, "%.0f", None),
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
]


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


def make_table(bench, notes):
    res = bench.results
    head = ["figure"] + [LABEL[t] for t in TARGETS] + [
        "egressd/DIRECT", "egressd/floor", "egressd/tinyproxy", "egressd/Squid",
        "egressd target", "met"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, label, _higher, fmt, target in ROWS:
        row = [label]
        for t in TARGETS:
            vals = res.get(key, {}).get(t, [])
            c = cell(vals, fmt)
            if c is None:
                if t in bench.na:
                    c = "n/a"
                elif (key, t) in bench.errors:
                    c = "n/a (%s)" % ("error" if not bench.errors[(key, t)].startswith("skipped")
                                      else "skipped")
                else:
                    c = "—"
            row.append(c)
        e = res.get(key, {}).get("egressd", [])
        if key.startswith(("rss", "kib", "decide", "fetch_added", "fsync", "dns")):
            row.append("—")
        else:
            row.append(ratio(e, res.get(key, {}).get("DIRECT", [])))
        row.append(ratio(e, res.get(key, {}).get("RELAY", [])) if res.get(key, {}).get("RELAY")
                   and key != "fetch_added" else "—")
        if key.startswith(("decide", "rss_after_pct", "fetch_added", "fsync", "dns")):
            row += ["—", "—"]
        else:
            row += [ratio(e, res.get(key, {}).get("tinyproxy", [])),
                    ratio(e, res.get(key, {}).get("squid", []))]
        if target is None:
            row += ["", ""]
        else:
            kind, limit, text = target
            met = "n/a"
            if e:
                if kind == "ratio":
                    d = res.get(key, {}).get("DIRECT", [])
                    if d:
                        met = "yes" if statistics.median(e) / statistics.median(d) >= limit else "no"
                elif kind == "max":
                    met = "yes" if statistics.median(e) <= limit else "no"
                elif kind == "min":
                    met = "yes" if statistics.median(e) >= limit else "no"
                else:
                    met = "yes" if abs(statistics.median(e)) <= limit else "no"
            row += [text, met]
        lines.append("| " + " | ".join(row) + " |")
    out = "\n".join(lines) + "\n"
    if notes:
        out += "\n" + "\n".join("- " + n for n in notes) + "\n"
    return out


# ---------------------------------------------------------------------------------------------


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
    args = ap.parse_args()

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
        # decide_bench links the allowlist library of the build that made egressd.
        client, decide, decide_why = build_helpers(egressd_dir or args.build_dir)
        global RELAY_EXE
        RELAY_EXE = os.path.join(os.path.dirname(client), "relay")

        ports = {"http": free_port(), "tls": free_port()}
        make_origin_files(tmp)
        cert = os.path.join(tmp, "origin-cert.pem")
        start_nginx(tmp, ports)
        bench = Bench(mode, client, decide, ports, cert)
        bench.tmp, bench.egressd_exe = tmp, egressd_exe
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
                    if t == "egressd" and egressd_exe is None:
                        raise RuntimeError(egressd_why)
                    for pkg in {"egressd": [], "RELAY": [], "tinyproxy": ["tinyproxy", "util-linux"],
                                "squid": ["squid"]}[t]:
                        if pkg in missing:
                            raise RuntimeError(missing[pkg])
                    start = starter(t, tmp, ports, egressd_exe)
                    p, port, host = start()
                    bench.targets[t] = dict(port=port, host=host, pid=p.pid, proc=p, start=start)
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
