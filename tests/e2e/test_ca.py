"""`egressd ca init`, `egressd ca bundle` and `egressd check` on tls: (docs/inspection.md,
docs/design.md 8): the files and their modes, no overwrite, the errors a user sees, and a real
client (curl) trusting the bundle against a loopback origin whose certificate the CA signed."""

import os
import re
import signal
import ssl
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (base_config, check, check_audit_log, check_eq, run_cases, run_curl,  # noqa
                     run_egressd)

ERR_RE = re.compile(r"^egressd: (.+?):(\d+):(\d+): (.+)$")


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def read(path):
    with open(path, "rb") as f:
        return f.read()


def openssl(args, what):
    r = subprocess.run(["openssl"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=30)
    check_eq(r.returncode, 0, "%s (openssl %s; stderr %r)" % (what, " ".join(args), r.stderr))
    return r.stdout


def init(h, name="ca", extra=()):
    d = os.path.join(h.tmp, name)
    r = run_egressd(["ca", "init", d] + list(extra))
    check_eq(r.returncode, 0, "egressd ca init exit code (stderr %r)" % r.stderr)
    return d


def leaf_for(h, ca_dir, host, name):
    """A server certificate for host signed with the CA's key by the openssl tool, as a user
    signing with egressd's CA would; returns (cert, key)."""
    key = os.path.join(h.tmp, name + ".key")
    csr = os.path.join(h.tmp, name + ".csr")
    cert = os.path.join(h.tmp, name + ".pem")
    ext = write(os.path.join(h.tmp, name + ".ext"),
                "subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\n" % host)
    openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-subj", "/CN=" + host, "-keyout", key, "-out", csr], "leaf request")
    openssl(["x509", "-req", "-in", csr, "-CA", os.path.join(ca_dir, "ca.pem"), "-CAkey",
             os.path.join(ca_dir, "ca.key"), "-CAcreateserial", "-days", "1", "-extfile", ext,
             "-out", cert], "leaf signed by the CA")
    return cert, key


def case_init_files(h):
    d = os.path.join(h.tmp, "new", "ca")
    r = run_egressd(["ca", "init", d])
    check_eq(r.returncode, 0, "exit code (stderr %r)" % r.stderr)
    check("ca.pem" in r.stdout and "ca.key" in r.stdout, "output names no files: %r" % r.stdout)
    check_eq(stat.S_IMODE(os.stat(d).st_mode), 0o700, "mode of the CA folder")
    check_eq(stat.S_IMODE(os.stat(os.path.join(d, "ca.key")).st_mode), 0o600, "mode of ca.key")
    check_eq(stat.S_IMODE(os.stat(os.path.join(d, "ca.pem")).st_mode), 0o644, "mode of ca.pem")
    check_eq(sorted(os.listdir(d)), ["ca.key", "ca.pem"], "files in the CA folder")
    text = openssl(["x509", "-in", os.path.join(d, "ca.pem"), "-noout", "-text"], "read ca.pem")
    for want in ("X509v3 Basic Constraints: critical", "CA:TRUE, pathlen:0",
                 "X509v3 Key Usage: critical", "Certificate Sign, CRL Sign",
                 "X509v3 Subject Key Identifier", "ASN1 OID: prime256v1",
                 "Signature Algorithm: ecdsa-with-SHA256"):
        check(want in text, "ca.pem lacks %r:\n%s" % (want, text))
    check("Name Constraints" not in text, "a CA without --permit has name constraints")
    # The key is the certificate's.
    pub_cert = openssl(["x509", "-in", os.path.join(d, "ca.pem"), "-noout", "-pubkey"], "pubkey")
    pub_key = openssl(["pkey", "-in", os.path.join(d, "ca.key"), "-pubout"], "key pubkey")
    check_eq(pub_key, pub_cert, "public key of ca.key against ca.pem")


def case_init_never_overwrites(h):
    d = init(h)
    before = (read(os.path.join(d, "ca.pem")), read(os.path.join(d, "ca.key")))
    r = run_egressd(["ca", "init", d])
    check_eq(r.returncode, 1, "exit code of a second init (stderr %r)" % r.stderr)
    check("never overwrites" in r.stderr, "no reason given: %r" % r.stderr)
    check_eq((read(os.path.join(d, "ca.pem")), read(os.path.join(d, "ca.key"))), before,
             "the CA files after a refused init")
    # A key alone is enough to refuse, and nothing is written beside it.
    d2 = os.path.join(h.tmp, "keyonly")
    os.mkdir(d2)
    write(os.path.join(d2, "ca.key"), "mine\n")
    r = run_egressd(["ca", "init", d2])
    check_eq(r.returncode, 1, "exit code with a ca.key there")
    check_eq(sorted(os.listdir(d2)), ["ca.key"], "files after the refusal")


def case_init_usage(h):
    for args in (["ca"], ["ca", "init"], ["ca", "init", "a", "b"], ["ca", "frob"],
                 ["ca", "init", os.path.join(h.tmp, "x"), "--permit"]):
        r = run_egressd(args)
        check_eq(r.returncode, 2, "exit code of egressd %s" % " ".join(args))
        check("usage" in r.stderr, "no usage for %r: %r" % (args, r.stderr))
    r = run_egressd(["ca", "init", os.path.join(h.tmp, "y"), "--permit", "*.com"])
    check_eq(r.returncode, 2, "exit code for --permit *.com")
    check("public suffix" in r.stderr, "reason for *.com: %r" % r.stderr)
    check(not os.path.exists(os.path.join(h.tmp, "y")), "a refused init left a folder")


def case_name_constraints_curl(h):
    d = init(h, extra=["--permit", "tls.test", "--permit", "**.pkg.test"])
    text = openssl(["x509", "-in", os.path.join(d, "ca.pem"), "-noout", "-ext",
                    "nameConstraints"], "name constraints")
    for want in ("critical", "Permitted", "DNS:tls.test", "DNS:pkg.test", "Excluded",
                 "IP:0.0.0.0/0.0.0.0"):
        check(want in text, "nameConstraints lacks %r:\n%s" % (want, text))
    # curl honours them: a leaf for a permitted name passes, one for another name does not,
    # though the same CA signed both.
    ca = os.path.join(d, "ca.pem")
    for host, ok in (("tls.test", True), ("other.test", False)):
        cert, key = leaf_for(h, d, host, host)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        o = h.origin(ctx)
        r = run_curl(["--cacert", ca, "--resolve", "%s:%d:127.0.0.1" % (host, o.port),
                      "https://%s:%d/x" % (host, o.port)])
        if ok:
            check_eq(r.returncode, 0, "curl to %s (stderr %r)" % (host, r.stderr))
        else:
            check_eq(r.returncode, 60, "curl to %s outside the constraints (stderr %r)"
                     % (host, r.stderr))


def tls_config(h, ca_dir, sessions="sessions: {default: {}}\n", extra=""):
    rel = os.path.relpath(ca_dir, h.tmp)
    return write(os.path.join(h.tmp, "egressd.yaml"),
                 "tls:\n  ca: {cert: %s/ca.pem, key: %s/ca.key}\n%s%s" % (rel, rel, extra,
                                                                       sessions))


def case_check_tls(h):
    d = init(h)
    path = tls_config(h, d, sessions="sessions:\n  default:\n    bound: {network: "
                      "{actions: [git:push], inspect: [github.com, \"**.pkg.test\"]}}\n")
    r = run_egressd(["check", "-c", path])
    check_eq(r.returncode, 0, "check exit code (stderr %r)" % r.stderr)
    check("  inspect: github.com, **.pkg.test\n" in r.stdout, "no inspect line:\n" + r.stdout)
    check(re.search(r"^tls\.ca: .*/ca\.pem: /O=egressd/CN=egressd inspection CA \w+, EC "
                    r"prime256v1, valid until \d{4}-\d\d-\d\d, no name constraints$",
                    r.stdout, re.M), "no tls.ca line:\n" + r.stdout)
    check(re.search(r"^tls\.upstreamCA: system \(", r.stdout, re.M),
          "no tls.upstreamCA line:\n" + r.stdout)


def case_check_tls_errors(h):
    d, other = init(h, "a"), init(h, "b")
    # Another CA's key: an error at tls.ca.key's value, naming both files.
    path = write(os.path.join(h.tmp, "bad.yaml"),
                 "tls:\n  ca: {cert: a/ca.pem, key: b/ca.key}\nsessions: {default: {}}\n")
    r = run_egressd(["check", "-c", path])
    check_eq(r.returncode, 2, "check exit code with a mismatched key")
    m = ERR_RE.match(r.stderr.splitlines()[0])
    check(m, "no FILE:LINE:COL error: %r" % r.stderr)
    check_eq((m.group(1), m.group(2), m.group(3)), (path, "2", "29"), "the error's place")
    check(m.group(4).startswith("tls.ca.key: \"%s/ca.key\" is not the key of the certificate "
                                "in \"%s/ca.pem\"" % (other, d)), "the error: %r" % r.stderr)
    # A session that inspects without tls.ca: an error for check (and serve).
    path = write(os.path.join(h.tmp, "noca.yaml"),
                 "sessions:\n  agent: {bound: {network: {inspect: [github.com]}}}\n")
    r = run_egressd(["check", "-c", path])
    check_eq(r.returncode, 2, "check exit code without tls.ca")
    check("sessions.agent: inspects github.com but tls.ca is not set" in r.stderr,
          "the error: %r" % r.stderr)
    # A certificate that is not a CA.
    leaf, key = leaf_for(h, d, "tls.test", "leaf")
    path = write(os.path.join(h.tmp, "leaf.yaml"),
                 "tls:\n  ca: {cert: leaf.pem, key: leaf.key}\n")
    r = run_egressd(["check", "-c", path])
    check_eq(r.returncode, 2, "check exit code with a leaf as CA")
    check(":2:14: tls.ca.cert: \"%s\" is not a CA certificate" % leaf in r.stderr,
          "the error: %r" % r.stderr)


def case_bundle(h):
    d = init(h)
    path = tls_config(h, d)
    r = run_egressd(["ca", "bundle", "-c", path])
    check_eq(r.returncode, 0, "ca bundle exit code (stderr %r)" % r.stderr)
    bundle = r.stdout.strip()
    check_eq(bundle, os.path.join(d, "bundle.pem"), "the bundle's path")
    data = read(bundle)
    ca = read(os.path.join(d, "ca.pem"))
    check(data.endswith(ca), "the bundle does not end with the CA")
    system = "/etc/ssl/certs/ca-certificates.crt"
    if os.path.exists(system):
        check(data.startswith(read(system)), "the bundle does not start with %s" % system)
    ctx = ssl.create_default_context(cafile=bundle)
    check(ctx.cert_store_stats()["x509_ca"] >= 2, "Python reads %r CAs from the bundle"
          % ctx.cert_store_stats())
    # Fresh: not written again.  Stale: rewritten.
    mtime = os.stat(bundle).st_mtime_ns
    r = run_egressd(["ca", "bundle", "-c", path])
    check_eq((r.returncode, r.stdout.strip()), (0, bundle), "second ca bundle")
    check_eq(os.stat(bundle).st_mtime_ns, mtime, "mtime of a fresh bundle")
    write(bundle, "stale\n")
    r = run_egressd(["ca", "bundle", "-c", path])
    check_eq(read(bundle), data, "a stale bundle after ca bundle")
    # curl trusts an origin the CA signed, through the bundle alone.
    cert, key = leaf_for(h, d, "tls.test", "origin")
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(cert, key)
    o = h.origin(sctx)
    r = run_curl(["--cacert", bundle, "--resolve", "tls.test:%d:127.0.0.1" % o.port,
                  "https://tls.test:%d/x" % o.port])
    check_eq(r.returncode, 0, "curl with the bundle (stderr %r)" % r.stderr)
    # Without tls.ca there is nothing to bundle.
    path = write(os.path.join(h.tmp, "plain.yaml"), "sessions: {default: {}}\n")
    r = run_egressd(["ca", "bundle", "-c", path])
    check_eq(r.returncode, 2, "ca bundle without tls.ca")
    check("tls.ca is not set" in r.stderr, "the error: %r" % r.stderr)


def case_serve_and_reload(h):
    # serve judges tls: as check does: a session that inspects without tls.ca is refused ...
    path = write(os.path.join(h.tmp, "noca.yaml"),
                 "listen: {proxy: [\"127.0.0.1:0\"]}\naudit: {path: \"-\"}\n"
                 "sessions:\n  agent: {bound: {network: {inspect: [github.com]}}}\n")
    r = run_egressd(["serve", "-c", path])
    check_eq(r.returncode, 2, "serve exit code without tls.ca (stderr %r)" % r.stderr)
    check("sessions.agent: inspects github.com but tls.ca is not set" in r.stderr,
          "the error: %r" % r.stderr)
    check("listening on" not in r.stderr, "serve listened")
    # ... and runs with one; a reload to a CA it cannot use keeps the running config.
    d = init(h)
    cfg = base_config({}, session_bound={"inspect": ["github.com"]})
    cfg["tls"] = {"ca": {"cert": os.path.join(d, "ca.pem"), "key": os.path.join(d, "ca.key")}}
    e = h.egressd(cfg)
    bad = dict(cfg)
    bad["tls"] = {"ca": {"cert": os.path.join(d, "ca.pem"), "key": os.path.join(d, "nope.key")}}
    e.rewrite_config(bad)
    e.signal(signal.SIGHUP)
    check(e.wait_stderr(r"reload failed; the running config stays", 5),
          "no 'reload failed' line:\n" + e.stderr())
    check(e.wait_stderr(r"tls\.ca\.key: cannot read \".*/nope\.key\": No such file", 1),
          "no tls.ca.key error:\n" + e.stderr())
    e.rewrite_config(cfg)
    e.signal(signal.SIGHUP)
    check(e.wait_stderr(r"egressd: reloaded ", 5), "the good config was not reloaded:\n"
          + e.stderr())
    check_eq(e.stop(), 0, "exit code")
    recs = e.audit()
    check_audit_log(recs)
    errs = [x for x in recs if x["event"] == "config" and "error" in x]
    check_eq(len(errs), 1, "config records with an error")


if __name__ == "__main__":
    run_cases("ca", [
        ("ca init writes ca.pem 0644 and ca.key 0600, a P-256 CA", case_init_files),
        ("ca init never overwrites (exit 1)", case_init_never_overwrites),
        ("ca init usage and pattern errors (exit 2)", case_init_usage),
        ("ca init --permit: name constraints curl honours", case_name_constraints_curl),
        ("check: tls.ca and inspect shown", case_check_tls),
        ("check: tls.ca errors at their place; inspect without tls.ca", case_check_tls_errors),
        ("ca bundle: system CAs and the CA, kept fresh, trusted by curl", case_bundle),
        ("serve: tls: judged as check does, at start and on reload", case_serve_and_reload),
    ])
