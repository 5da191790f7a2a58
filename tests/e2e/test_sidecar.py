"""The enforced deployments of docker/: the namespace gateway, the sidecar image, the Kubernetes
init container's rules.

- docker/netns-gateway: an agent namespace behind a veth; from inside it, a request through
  egressd's proxy to an allowed host works and a denied one gets 403; a TCP connection to a
  documentation address with no proxy arrives at the transparent port with its original
  destination; DNS to any server arrives at the DNS port; a UDP datagram is dropped (counter);
  CMD's exit status comes back; nothing is left (namespace, rules, /etc/netns).  Test listeners
  stand in for egressd's transparent and DNS listeners until egressd has them.
- The sidecar image (docker/build-image: a static egressd FROM scratch), run with podman beside an
  agent container (busybox and the static egressd, FROM scratch too) whose only network is an
  internal one that egressd also joins, as docker/compose.yaml lays it out; the origin sits on a
  second internal network only egressd joins.  From the agent: the allowed host through the
  proxy works (plain HTTP with busybox wget, and CONNECT with the static `egressd connect`), a
  denied one gets 403, a direct connection fails.  The image's size is printed.
- docker/k8s-sidecar.yaml's rules.nft, applied in a private network namespace: uid 65532
  (egressd) connects out unredirected, any other uid is redirected to the transparent port,
  DNS to the DNS port, UDP dropped.

Everything runs inside a private network namespace this file makes (as root: the gateway, the
container networks and the rules need it), so nothing can leave the machine.  Not root, no
podman that can run, or the sanitizer build (the image holds the Release static binary): the
cases say SKIPPED and why.
"""

import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (EGRESSD_BIN, SANITIZE, SOURCE_DIR, TestFailure, base_config,  # noqa: F401
                     check, check_eq, clean_env, rerun_in_netns, run_cases, skip, to_yaml)

SO_ORIGINAL_DST = 80
IP6T_SO_ORIGINAL_DST = 80


def sandbox(*hosts):
    return {"allowDomains": [h + ":*" for h in hosts], "enforce": "sandbox"}


def need_root():
    """Root of the machine, not of a user namespace (which rerun_in_netns makes for an ordinary
    user, and where ip netns, podman and setuid to other users cannot work)."""
    with open("/proc/self/uid_map") as f:
        initial = f.read().split() == ["0", "0", "4294967295"]
    if os.geteuid() != 0 or not initial:
        skip("needs root (network namespaces with veth, nftables rules, podman networks); "
             "run the suite as root")


def free_port(kind=socket.SOCK_STREAM):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("0.0.0.0", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class StandIn:
    """Stands in for egressd's transparent and DNS listeners: the TCP port answers each
    connection with 'transparent ORIGINAL-DESTINATION', the DNS port echoes each datagram
    prefixed with 'dns:'."""

    def __init__(self, addr="0.0.0.0"):
        self.tcp = socket.socket()
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind((addr, 0))
        self.tcp.listen(16)
        self.tcp.settimeout(0.2)
        self.tport = self.tcp.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind((addr, 0))
        self.udp.settimeout(0.2)
        self.dport = self.udp.getsockname()[1]
        self.stopping = False
        self.threads = [threading.Thread(target=f, daemon=True) for f in (self._tcp, self._udp)]
        for t in self.threads:
            t.start()

    def _tcp(self):
        while not self.stopping:
            try:
                c, _ = self.tcp.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                od = c.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
                port, ip = struct.unpack("!2xH4s8x", od)
                c.sendall(b"transparent %s:%d\n" % (socket.inet_ntoa(ip).encode(), port))
            except OSError:
                pass
            c.close()

    def _udp(self):
        while not self.stopping:
            try:
                d, peer = self.udp.recvfrom(512)
            except socket.timeout:
                continue
            except OSError:
                return
            self.udp.sendto(b"dns:" + d, peer)

    def close(self):
        self.stopping = True
        for t in self.threads:
            t.join(2)
        self.tcp.close()
        self.udp.close()


# What the agent runs inside the gateway's namespace: each attempt's outcome as a JSON object.
AGENT_PROBE = r'''
import json, os, socket, sys, urllib.request, urllib.error
origin_port = int(sys.argv[1])
out = {}
def get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return [r.status, r.read().decode()[:200]]
    except urllib.error.HTTPError as e:
        return [e.code, e.headers.get("X-Egressd-Reason")]
    except Exception as e:
        return ["error", str(e)]
out["allowed"] = get("http://origin.test:%d/gw" % origin_port)
out["denied"] = get("http://denied.test:%d/" % origin_port)
try:
    c = socket.create_connection(("192.0.2.1", 80), timeout=5)
    out["direct"] = c.recv(200).decode().strip()
except OSError as e:
    out["direct"] = "error " + str(e)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(5)
u.connect(("198.51.100.53", 53))
u.send(b"q1")
try:
    d, src = u.recvfrom(100)
    out["dns"] = [d.decode(), "%s:%d" % src]
except OSError as e:
    out["dns"] = ["error", str(e)]
v = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
v.sendto(b"x", ("198.51.100.1", 9))
with open("/etc/resolv.conf") as f:
    out["resolv"] = [l.strip() for l in f if l.startswith("nameserver")]
print(json.dumps(out))
sys.exit(7)
'''


def gateway_counter(text, chain):
    """The packets counted by the drop rules of one chain of `nft list table` output."""
    m = re.search(r"chain %s \{(.*?)\n\t\}" % chain, text, re.S)
    return sum(int(n) for n in re.findall(r"counter packets (\d+) bytes \d+ drop",
                                          m.group(1))) if m else -1


def case_netns_gateway(h):
    need_root()
    origin = h.origin()
    e = h.egressd(dict(base_config({"origin.test": ["127.0.0.1"], "denied.test": ["127.0.0.1"]},
                                   sandbox("origin.test")),
                       listen={"proxy": ["0.0.0.0:0"]}))
    stand = h.add(StandIn())
    probe = os.path.join(h.tmp, "agent_probe.py")
    with open(probe, "w") as f:
        f.write(AGENT_PROBE)
    os.chmod(h.tmp, 0o755)
    script = os.path.join(SOURCE_DIR, "docker", "netns-gateway")
    before_ns = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE,
                               text=True).stdout
    r = subprocess.run([script, "--proxy", str(e.port), "--transparent", str(stand.tport),
                        "--dns", str(stand.dport), "--", sys.executable, probe,
                        str(origin.port)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60,
                       env=clean_env())
    check_eq(r.returncode, 7, "the gateway's exit status (CMD's); stderr: %s" % r.stderr)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    print("     agent saw: %s" % json.dumps(out), flush=True)
    check_eq(out["allowed"][0], 200, "allowed host through egressd's proxy")
    check('"path": "/gw"' in out["allowed"][1], "origin's echo of the path: %r" % out)
    check_eq(out["denied"], [403, "host-not-allowed"], "denied host")
    check_eq(out["direct"], "transparent 192.0.2.1:80", "direct TCP (no proxy)")
    check_eq(out["dns"], ["dns:q1", "198.51.100.53:53"], "DNS to another server")
    m = re.search(r"netns-gateway: (\S+): agent (\S+), egressd (\S+)", r.stderr)
    check(m is not None, "the gateway's banner: %s" % r.stderr)
    check_eq(out["resolv"], ["nameserver " + m.group(3)], "the agent's resolv.conf")
    # Nothing left behind.
    after_ns = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE,
                              text=True).stdout
    check_eq(after_ns, before_ns, "network namespaces after the gateway")
    tables = subprocess.run(["nft", "list", "tables"], stdout=subprocess.PIPE,
                            text=True).stdout
    check("egressd_gw_" not in tables, "the gateway's table is left: %s" % tables)
    check(not os.path.exists("/etc/netns/" + m.group(1)), "/etc/netns/%s is left" % m.group(1))
    check(subprocess.run(["ip", "link", "show", "egw" + m.group(1).rsplit("-", 1)[1]],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0,
          "the veth is left")
    recs = e.audit()
    check(any(x.get("host") == "denied.test" and x.get("decision") == "deny" for x in recs),
          "no deny record for denied.test")


def case_gateway_drops_udp(h):
    """The drop counters of the gateway's table, read while the agent's datagram is sent."""
    need_root()
    stand = h.add(StandIn())
    script = os.path.join(SOURCE_DIR, "docker", "netns-gateway")
    send = ("import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
            "[s.sendto(b'x', ('198.51.100.1', 9)) for _ in range(3)]; "
            "s.sendto(b'y', ('192.0.2.1', 443))")
    # The agent's command sends, then waits for a file the test makes after reading the rules.
    gate = os.path.join(h.tmp, "go")
    proc = subprocess.Popen([script, "--proxy", "1", "--transparent", str(stand.tport), "--dns",
                             str(stand.dport), "--", "sh", "-c",
                             '"$0" -c "$1" && i=0; while [ ! -e "$2" ] && [ $i -lt 100 ]; do '
                             'sleep 0.1; i=$((i+1)); done', sys.executable, send, gate],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=clean_env())
    try:
        drops = -1
        for _ in range(100):
            t = subprocess.run(["nft", "list", "ruleset"], stdout=subprocess.PIPE,
                               text=True).stdout
            drops = gateway_counter(t, "guard")
            if drops >= 4:
                break
            time.sleep(0.1)
        print("     the gateway dropped %d packets" % drops, flush=True)
        check(drops >= 4, "the gateway's drop counters: %d (4 datagrams sent)" % drops)
    finally:
        open(gate, "w").close()
        proc.wait(20)
    check_eq(proc.returncode, 0, "gateway exit (%s)" % proc.stderr.read())


# ---------------------------------------------------------------------------------------------
# The sidecar image with podman.

PODMAN_RUNTIME = ["--runtime", "runc"]


def podman(*args, check_rc=True, timeout=120):
    r = subprocess.run(["podman"] + PODMAN_RUNTIME + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=timeout)
    if check_rc and r.returncode != 0:
        raise TestFailure("podman %s: exit %d: %s" % (" ".join(args), r.returncode,
                                                       r.stderr.strip()[-1500:]))
    return r


def ulimits():
    """--ulimit values at or below this machine's hard limits (podman's defaults are above)."""
    import resource
    out = []
    for name, res in (("nofile", resource.RLIMIT_NOFILE), ("nproc", resource.RLIMIT_NPROC)):
        hard = resource.getrlimit(res)[1]
        v = 1024 if hard == resource.RLIM_INFINITY else min(1024, hard)
        out += ["--ulimit", "%s=%d:%d" % (name, v, v)]
    return out


def podman_usable():
    if shutil.which("podman") is None:
        return "podman is not installed (Debian package podman, with runc)"
    if shutil.which("runc") is None:
        return "runc is not installed (Debian package runc)"
    r = subprocess.run(["podman"] + PODMAN_RUNTIME + ["info", "--format", "{{.Host.OCIRuntime.Name}}"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    if r.returncode != 0:
        return "podman info fails: %s" % r.stderr.strip()[-300:]
    return None


class Pod:
    """Everything one podman case makes, removed by close()."""

    def __init__(self, tag):
        self.tag = tag
        self.containers, self.networks, self.images = [], [], []

    def close(self):
        for c in self.containers:
            podman("rm", "-f", "-t", "0", c, check_rc=False)
        for n in self.networks:
            podman("network", "rm", "-f", n, check_rc=False)
        for i in self.images:
            podman("rmi", "-f", i, check_rc=False)


def case_sidecar_image(h):
    need_root()
    if SANITIZE:
        skip("the image holds the Release static egressd, not this sanitizer build; the "
             "RelWithDebInfo build's run covers it")
    why = podman_usable()
    if why:
        skip(why)
    busybox = shutil.which("busybox")
    if busybox is None or "not a dynamic executable" not in subprocess.run(
            ["ldd", busybox], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True).stdout:
        skip("a static busybox is needed for the agent and origin images (Debian package "
             "busybox-static)")
    tag = uuid.uuid4().hex[:8]
    pod = h.add(Pod(tag))
    build_dir = os.path.join(os.path.dirname(os.path.abspath(EGRESSD_BIN)), "static")
    image = "localhost/egressd-e2e:" + tag
    pod.images.append(image)
    t0 = time.time()
    r = subprocess.run([os.path.join(SOURCE_DIR, "docker", "build-image"), "--tag", image,
                        "--build-dir", build_dir], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=900)
    check(r.returncode == 0, "docker/build-image failed: %s %s" % (r.stdout, r.stderr))
    print("     %s (%.0f s)" % (r.stdout.strip(), time.time() - t0), flush=True)
    size = int(podman("image", "inspect", "--format", "{{.Size}}", image).stdout)
    check(size < 16 << 20, "the image is %d bytes" % size)

    # The agent and origin image: FROM scratch, busybox, the static egressd, a page to serve.
    ctx = tempfile.mkdtemp(dir=h.tmp)
    shutil.copy(busybox, os.path.join(ctx, "busybox"))
    shutil.copy(os.path.join(build_dir, "egressd"), os.path.join(ctx, "egressd"))
    os.makedirs(os.path.join(ctx, "www"))
    with open(os.path.join(ctx, "www", "index.html"), "w") as f:
        f.write("hello from the origin\n")
    with open(os.path.join(ctx, "Containerfile"), "w") as f:
        f.write("FROM scratch\nCOPY busybox /bin/busybox\nCOPY egressd /bin/egressd\n"
                "COPY www /www\nENTRYPOINT [\"/bin/busybox\"]\n")
    tools = "localhost/egressd-e2e-tools:" + tag
    pod.images.append(tools)
    podman("build", "-q", "-t", tools, ctx)

    # Two internal networks (no route off either): the agent's, shared with egressd only, and
    # the origin's, which only egressd also joins.
    n = int(tag[:2], 16) % 200 + 20
    inside, outside = "egressd-e2e-in-" + tag, "egressd-e2e-out-" + tag
    podman("network", "create", "--internal", "--subnet", "10.231.%d.0/24" % n, inside)
    pod.networks.append(inside)
    podman("network", "create", "--internal", "--subnet", "10.232.%d.0/24" % n, outside)
    pod.networks.append(outside)
    egressd_ip, origin_ip = "10.231.%d.10" % n, "10.232.%d.20" % n
    lim = ulimits()

    origin = "egressd-e2e-origin-" + tag
    pod.containers.append(origin)
    podman("run", "-d", "--name", origin, *lim, "--network", outside, "--ip", origin_ip, tools,
           "httpd", "-f", "-p", "8080", "-h", "/www")

    cfg = base_config({"origin.test": [origin_ip], "denied.test": [origin_ip]},
                      sandbox("origin.test"), allow_addresses=("10.232.%d.0/24" % n,))
    cfg["listen"] = {"proxy": ["0.0.0.0:3128"]}
    cfg["audit"] = {"path": "-"}
    conf = os.path.join(h.tmp, "egressd.yaml")
    with open(conf, "w") as f:
        f.write(to_yaml(cfg) + "\n")
    os.chmod(conf, 0o644)
    os.chmod(h.tmp, 0o755)
    side = "egressd-e2e-sidecar-" + tag
    pod.containers.append(side)
    podman("create", "--name", side, *lim, "--network", inside, "--ip", egressd_ip, "-v",
           conf + ":/etc/egressd/egressd.yaml:ro", image)
    podman("network", "connect", outside, side)
    podman("start", side)
    for _ in range(100):
        logs = podman("logs", side, check_rc=False)
        if "listening on" in logs.stderr + logs.stdout:
            break
        time.sleep(0.1)
    else:
        raise TestFailure("egressd did not start in its container: %s" % logs.stderr)

    proxy = "http://%s:3128" % egressd_ip

    def agent(*argv, env=()):
        e = []
        for k, v in env:
            e += ["--env", "%s=%s" % (k, v)]
        return podman("run", "--rm", *lim, "--network", inside, *e, tools, "timeout", "10",
                      *argv, check_rc=False, timeout=60)

    ok = agent("wget", "-q", "-O", "-", "http://origin.test:8080/index.html",
               env=[("http_proxy", proxy)])
    check_eq((ok.returncode, ok.stdout), (0, "hello from the origin\n"),
             "allowed host through the proxy (stderr %r)" % ok.stderr)
    no = agent("wget", "-q", "-O", "-", "http://denied.test:8080/index.html",
               env=[("http_proxy", proxy)])
    check(no.returncode != 0 and "403" in no.stderr, "denied host: %r" % (no,))
    direct = agent("wget", "-q", "-O", "-", "http://%s:8080/index.html" % origin_ip)
    check(direct.returncode != 0 and "hello" not in direct.stdout,
          "a direct connection from the agent worked: %r" % (direct,))
    print("     direct: %s" % direct.stderr.strip(), flush=True)
    tunnel = agent("sh", "-c", "printf 'GET /index.html HTTP/1.0\\r\\nHost: origin.test\\r\\n\\r\\n'"
                   " | /bin/egressd connect --proxy %s origin.test 8080" % proxy)
    check(tunnel.returncode == 0 and "hello from the origin" in tunnel.stdout,
          "egressd connect from the agent (CONNECT): %r" % (tunnel,))
    refused = agent("sh", "-c", "echo x | /bin/egressd connect --proxy %s denied.test 8080"
                    % proxy)
    check(refused.returncode == 1 and "host-not-allowed" in refused.stderr,
          "egressd connect to a denied host: %r" % (refused,))
    logs = podman("logs", side).stdout
    check('"host":"denied.test"' in logs and '"decision":"deny"' in logs,
          "the sidecar's audit records (its standard output): %s" % logs[-1500:])


# ---------------------------------------------------------------------------------------------
# The Kubernetes init container's rules.

K8S_PROBE = r'''
import json, os, socket, struct, sys, threading
tport, dport = 15001, 5353
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
t.bind(("127.0.0.1", tport)); t.listen(8)
d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); d.bind(("127.0.0.1", dport))
def serve():
    while True:
        c, _ = t.accept()
        od = c.getsockopt(socket.SOL_IP, 80, 16)
        port, ip = struct.unpack("!2xH4s8x", od)
        c.sendall(b"transparent %s:%d\n" % (socket.inet_ntoa(ip).encode(), port)); c.close()
def dns():
    while True:
        m, peer = d.recvfrom(100); d.sendto(b"dns:" + m, peer)
threading.Thread(target=serve, daemon=True).start()
threading.Thread(target=dns, daemon=True).start()
def as_user(uid):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setgroups([]); os.setgid(uid); os.setuid(uid)
        out = {}
        try:
            c = socket.socket(); c.settimeout(2); c.connect(("192.0.2.1", 80))
            out["tcp"] = c.recv(100).decode().strip()
        except OSError as e:
            out["tcp"] = type(e).__name__
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(2)
        try:
            u.connect(("198.51.100.53", 53)); u.send(b"q"); out["dns"] = u.recv(100).decode()
        except OSError as e:
            out["dns"] = type(e).__name__
        try:
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("198.51.100.1", 9))
            out["udp"] = "sent"
        except OSError as e:
            out["udp"] = type(e).__name__
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w); os.waitpid(pid, 0)
    return json.loads(os.read(r, 4096))
print(json.dumps({"egressd": as_user(65532), "agent": as_user(1000)}))
'''


def case_k8s_rules(h):
    need_root()
    if shutil.which("nft") is None:
        skip("nft is not installed (Debian package nftables)")
    with open(os.path.join(SOURCE_DIR, "docker", "k8s-sidecar.yaml")) as f:
        text = f.read()
    m = re.search(r"  rules\.nft: \|\n((?:    .*\n|\n)+)", text)
    check(m is not None, "no rules.nft in docker/k8s-sidecar.yaml")
    rules = "".join(line[4:] + "\n" for line in m.group(1).splitlines())
    path = os.path.join(h.tmp, "rules.nft")
    with open(path, "w") as f:
        f.write(rules)
    probe = os.path.join(h.tmp, "k8s_probe.py")
    with open(probe, "w") as f:
        f.write(K8S_PROBE)
    # A pod's namespace: lo, an address and a default route (a pod's eth0 stands for the
    # world: here a route to nowhere).
    setup = ("ip link set lo up && ip addr add 10.250.0.2/32 dev lo && "
             "ip route add default dev lo src 10.250.0.2 && nft -f %s && exec %s %s"
             % (path, sys.executable, probe))
    r = subprocess.run(["unshare", "-n", "sh", "-c", setup], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    check(r.returncode == 0, "the rules or the probe failed: %s" % r.stderr)
    out = json.loads(r.stdout)
    print("     %s" % json.dumps(out), flush=True)
    check_eq(out["agent"], {"tcp": "transparent 192.0.2.1:80", "dns": "dns:q",
                            "udp": "PermissionError"}, "an agent user (uid 1000)")
    # egressd's own uid is not redirected: its connection goes to the (empty) route instead.
    check(out["egressd"]["tcp"] != "transparent 192.0.2.1:80", "uid 65532 was redirected")
    check(out["egressd"]["dns"] != "dns:q", "uid 65532's DNS was redirected")
    check_eq(out["egressd"]["udp"], "sent", "uid 65532's datagram")


if __name__ == "__main__":
    why = rerun_in_netns()
    cases = [
        ("netns-gateway: proxy, denial, transparent, DNS, exit status, cleanup",
         case_netns_gateway),
        ("netns-gateway: datagrams from the agent are dropped", case_gateway_drops_udp),
        ("sidecar image FROM scratch with podman: allowed, 403, no direct way",
         case_sidecar_image),
        ("k8s-sidecar.yaml rules: egressd's uid goes out, every other is redirected",
         case_k8s_rules),
    ]
    if why:
        cases = [(n, lambda h, w=why: skip("no private network namespace: " + w))
                 for n, _ in cases]
    run_cases("sidecar", cases)
