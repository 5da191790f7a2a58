"""pip and npm installs through inspection, with the trust bundle `egressd exec` gives (issue 11
item 5): a loopback Python package index and a loopback npm registry over HTTPS, both inspected
hosts; exec makes its CA in memory, writes the bundle (the system CAs and that CA) and points
PIP_CERT, npm_config_cafile and the rest at it.  The installs succeed, every request inside is
decided (front inspected) and a publish-like POST is refused."""
import base64
import hashlib
import http.server
import io
import json
import os
import shutil
import ssl
import subprocess
import sys
import tarfile
import threading
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (EGRESSD_BIN, check, check_eq, clean_env, closed_port, run_cases, skip,
                     to_yaml)

NAMES = ("index.test", "registry.test")
PKG = "egressd-probe"


def make_wheel():
    """A minimal pure-Python wheel: egressd_probe 1.0."""
    files = {
        "egressd_probe/__init__.py": b"VALUE = 42\n",
        "egressd_probe-1.0.dist-info/METADATA":
            b"Metadata-Version: 2.1\nName: egressd-probe\nVersion: 1.0\n",
        "egressd_probe-1.0.dist-info/WHEEL":
            b"Wheel-Version: 1.0\nGenerator: egressd-test\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n",
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (name, digest, len(data)))
    record.append("egressd_probe-1.0.dist-info/RECORD,,")
    files["egressd_probe-1.0.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


def make_tgz():
    """An npm package tarball: egressd-probe 1.0.0."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in (("package/package.json",
                            json.dumps({"name": PKG, "version": "1.0.0",
                                        "main": "index.js"}).encode()),
                           ("package/index.js", b"module.exports = 42;\n")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class _Registry(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _send(self, status, body, ctype):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        srv = self.server
        host = self.headers.get("Host", "").split(":")[0]
        with srv.lock:
            srv.seen.append(("GET", host, self.path))
        wheel_name = "egressd_probe-1.0-py3-none-any.whl"
        if host == "index.test" and self.path.rstrip("/") in ("/simple/egressd-probe",
                                                              "/simple/egressd_probe"):
            sha = hashlib.sha256(srv.wheel).hexdigest()
            page = ('<html><body><a href="/files/%s#sha256=%s">%s</a></body></html>'
                    % (wheel_name, sha, wheel_name)).encode()
            self._send(200, page, "text/html")
        elif host == "index.test" and self.path == "/files/" + wheel_name:
            self._send(200, srv.wheel, "application/octet-stream")
        elif host == "registry.test" and self.path == "/" + PKG:
            tgz = srv.tgz
            url = "https://registry.test:%d/%s/-/%s-1.0.0.tgz" % (srv.port, PKG, PKG)
            meta = {"name": PKG, "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": {
                "name": PKG, "version": "1.0.0", "dist": {
                    "tarball": url, "shasum": hashlib.sha1(tgz).hexdigest(),
                    "integrity": "sha512-" + base64.b64encode(
                        hashlib.sha512(tgz).digest()).decode()}}}}
            self._send(200, json.dumps(meta).encode(), "application/json")
        elif host == "registry.test" and self.path == "/%s/-/%s-1.0.0.tgz" % (PKG, PKG):
            self._send(200, srv.tgz, "application/octet-stream")
        else:
            self._send(404, b"not here\n", "text/plain")

    def do_POST(self):
        with self.server.lock:
            self.server.seen.append(("POST", self.headers.get("Host", ""), self.path))
        self._send(200, b"{}", "application/json")

    do_PUT = do_POST


class Registry:
    def __init__(self, ctx):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
        self.server.daemon_threads = True
        self.server.lock = threading.Lock()
        self.server.seen = []
        self.server.wheel = make_wheel()
        self.server.tgz = make_tgz()
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def seen(self):
        with self.server.lock:
            return list(self.server.seen)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def setup(h):
    cert = os.path.join(h.tmp, "origin.pem")
    key = os.path.join(h.tmp, "origin.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=index.test",
                    "-addext", "subjectAltName=DNS:index.test,DNS:registry.test", "-days", "1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True, timeout=30)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    reg = h.add(Registry(ctx))
    cfg = {
        "dns": {"servers": ["127.0.0.1:%d" % closed_port()],
                "hosts": {n: ["127.0.0.1"] for n in NAMES},
                "allowAddresses": ["127.0.0.0/8"], "timeout": "1s"},
        "tls": {"upstreamCA": cert},
        "audit": {"path": os.path.join(h.tmp, "audit.jsonl")},
        "sessions": {"default": {"bound": {"network": {
            "allowDomains": ["%s:*" % n for n in NAMES], "enforce": "sandbox",
            "actions": ["http:write"], "inspect": ["%s:*" % n for n in NAMES]}}}},
    }
    path = os.path.join(h.tmp, "exec.yaml")
    with open(path, "w") as f:
        f.write(to_yaml(cfg) + "\n")
    return reg, path


def exec_sh(h, cfg, script, timeout=120):
    env = clean_env()
    env.update({"HOME": h.tmp, "npm_config_cache": os.path.join(h.tmp, "npm-cache"),
                "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_CACHE_DIR": "1"})
    return subprocess.run([EGRESSD_BIN, "exec", "-c", cfg, "--", "sh", "-c", script], env=env,
                          capture_output=True, text=True, timeout=timeout)


def audit(h):
    with open(os.path.join(h.tmp, "audit.jsonl")) as f:
        return [json.loads(l) for l in f if l.strip()]


def case_bundle_env(h):
    reg, cfg = setup(h)
    r = exec_sh(h, cfg, 'for v in SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE '
                        'NODE_EXTRA_CA_CERTS GIT_SSL_CAINFO PIP_CERT npm_config_cafile '
                        'CARGO_HTTP_CAINFO AWS_CA_BUNDLE DENO_CERT; do eval "echo $v=\\$$v"; '
                        'done; test -s "$SSL_CERT_FILE" && echo bundle-ok; '
                        'curl -s -o /dev/null -w "curl %%{http_code}\\n" '
                        'https://index.test:%d/simple/egressd-probe/' % reg.port)
    lines = r.stdout.splitlines()
    values = {l.split("=", 1)[0]: l.split("=", 1)[1] for l in lines if "=" in l}
    check_eq(len(set(values.values())), 1, "every trust variable names one bundle: %r" % values)
    check(list(values.values())[0].endswith("bundle.pem"), "the bundle: %r" % values)
    check("bundle-ok" in lines, "the bundle file is there while CMD runs: %r" % r.stdout)
    check("curl 200" in lines, "curl trusts the inspected leaf through the bundle: %r %r"
          % (r.stdout, r.stderr))
    check(not os.path.exists(list(values.values())[0]), "the bundle is removed at the end")


def case_pip(h):
    reg, cfg = setup(h)
    target = os.path.join(h.tmp, "site")
    r = exec_sh(h, cfg, "%s -m pip install -q --index-url https://index.test:%d/simple/ "
                        "--target %s egressd-probe" % (sys.executable, reg.port, target))
    check_eq(r.returncode, 0, "pip install through inspection: %s" % r.stderr[-1500:])
    check(os.path.exists(os.path.join(target, "egressd_probe", "__init__.py")),
          "the package is installed")
    reqs = [x for x in audit(h) if x["event"] == "request"]
    check(reqs and all(x["front"] == "inspected" and x["host"] == "index.test" for x in reqs),
          "request records: %r" % reqs)


def case_npm(h):
    npm = shutil.which("npm")
    if npm is None:
        skip("npm is not installed here")
    reg, cfg = setup(h)
    prefix = os.path.join(h.tmp, "npmdir")
    os.makedirs(prefix)
    r = exec_sh(h, cfg, "cd %s && npm install --no-audit --no-fund --no-update-notifier "
                        "--registry https://registry.test:%d/ %s"
                        % (prefix, reg.port, PKG), timeout=180)
    check_eq(r.returncode, 0, "npm install through inspection: %s" % r.stderr[-1500:])
    check(os.path.exists(os.path.join(prefix, "node_modules", PKG, "index.js")),
          "the package is installed")
    # A publish is a write: refused inside the inspected tunnel, never reaching the registry.
    pub = os.path.join(h.tmp, "pub")
    os.makedirs(pub)
    with open(os.path.join(pub, "package.json"), "w") as f:
        json.dump({"name": PKG, "version": "1.0.1"}, f)
    r = exec_sh(h, cfg, "cd %s && npm publish --registry https://registry.test:%d/ "
                        "--//registry.test:%d/:_authToken=t" % (pub, reg.port, reg.port),
                timeout=180)
    check(r.returncode != 0, "npm publish went through: %s" % r.stdout)
    print("     npm publish said: %s" % " | ".join(r.stderr.strip().splitlines()[-6:]))
    check([s for s in reg.seen() if s[0] != "GET"] == [], "writes at the registry: %r"
          % reg.seen())
    denied = [x for x in audit(h) if x["event"] == "request" and x["decision"] == "deny"]
    check(denied and denied[0]["reason"] == "action-denied" and denied[0]["front"] == "inspected",
          "the publish's record: %r" % denied)


if __name__ == "__main__":
    run_cases("exec installs", [
        ("exec's trust bundle: every variable, trusted by curl, removed at the end",
         case_bundle_env),
        ("pip install from a loopback index through inspection", case_pip),
        ("npm install from a loopback registry through inspection, npm publish refused",
         case_npm),
    ])
