#!/usr/bin/env python3
"""Bash as the classifier's oracle (issue 12 item 8; tests/oracle/README.md).

Runs command lines under `bash -c` in a bubblewrap sandbox (read-only root, no network, a
private /tmp, uid 65534) where every network program is a stub that records its argv (stub.c),
under its name in PATH, over its absolute path, and as git's own programs
(/usr/lib/git-core/git-*, git's dashed forms).  From the recorded calls it derives the tags
that really ran, and reports every line whose classifier answer misses one of them.  A refused
line never fails: a refusal is always safe.

  oracle.py table --stub STUB --classify BIN FILE.tsv...   the case tables (a ctest test)
  oracle.py fuzz --stub STUB --classify BIN --seconds N --out FILE [--seed S]
  oracle.py run --stub STUB --classify BIN 'LINE'...       one-off lines, with what ran

Exit: 0 no finding, 1 findings, 77 skipped (bwrap cannot run here: the reason is printed)."""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tooldata  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77

# Programs the stubs stand for (those the classifier has rules for).
STUB_NAMES = ["git", "curl", "wget", "http", "https", "xh", "xhs", "gh", "ssh", "slogin", "scp",
              "sftp", "rsync", "dig", "host", "nslookup", "busybox"]
# Other network programs (tools.c's): stubbed so that nothing of theirs runs or waits in the
# sandbox; the oracle derives no tag from them (their answers are checked by their tables).
QUIET_STUBS = ["npm", "npx", "pnpm", "yarn", "bun", "bunx", "pip", "pip3", "pipx", "uv", "uvx",
               "poetry", "cargo", "go", "gem", "bundle", "bundler", "composer", "apt", "apt-get",
               "aptitude", "dnf", "yum", "microdnf", "apk", "brew", "docker", "podman",
               "nerdctl", "buildah", "skopeo", "helm", "aws", "gsutil", "gcloud", "az",
               "kubectl", "twine", "hatch", "flit", "nc", "nc.openbsd", "nc.traditional", "ncat",
               "netcat", "socat", "telnet", "ftp", "lftp", "tftp", "websocat", "grpcurl", "deno",
               "vim", "vi", "nano", "emacs", "less", "more"]
GIT_CORE = "/usr/lib/git-core"

# ---- deriving the tags that really ran from a stub's argv ----------------------------------

GIT_PUSH = {"push", "send-pack", "http-push"}
GIT_FETCH = {"fetch", "pull", "clone", "ls-remote", "fetch-pack", "http-fetch", "remote-http",
             "remote-https", "remote-ftp", "remote-ftps", "request-pull"}


def git_tags(ident, args):
    if ident.startswith("git-"):
        sub, rest = ident[4:], args
    else:
        i = 0
        while i < len(args) and args[i].startswith("-"):
            a = args[i]
            if a in ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix",
                     "--config-env", "--list-cmds"):
                i += 2
            else:
                i += 1
        if i >= len(args):
            return set()
        sub, rest = args[i], args[i + 1:]
    if sub in GIT_PUSH:
        return {"git:push"}
    if sub in GIT_FETCH:
        return {"git:fetch"}
    ops = [a for a in rest if not a.startswith("-")]
    op = ops[0] if ops else None
    if sub == "remote":
        if op in ("update", "prune"):
            return {"git:fetch"}
        if op == "show" and "-n" not in rest:
            return {"git:fetch"}
        if op == "add" and any(a == "-f" or (len(a) > 2 and "--fetch".startswith(a))
                               for a in rest):
            return {"git:fetch"}
        return set()
    if sub == "archive" and any(a.startswith("--remote") for a in rest):
        return {"git:fetch"}
    if sub == "submodule" and op in ("update", "add"):
        return {"git:fetch"}
    if sub == "subtree":
        return {"push": {"git:push"}, "pull": {"git:fetch"}, "add": {"git:fetch"}}.get(op, set())
    return set()


# curl's options with a value, as separate words (their values are no URLs)
CURL_VALUED = {"-" + ch for ch in tooldata.CURL_SHORT_VALUE} | \
    {"--" + k for k, v in tooldata.CURL_LONG.items() if v}


def long_match(table, name):
    """getopt_long / curl: an exact name, or a prefix of exactly one."""
    if name in table:
        return name
    hits = [k for k in table if k.startswith(name)]
    return hits[0] if len(hits) == 1 else None


CURL_SCHEMES = {"dict", "file", "ftp", "ftps", "gopher", "gophers", "http", "https", "imap",
                "imaps", "ldap", "ldaps", "mqtt", "pop3", "pop3s", "rtmp", "rtsp", "scp", "sftp",
                "smb", "smbs", "smtp", "smtps", "telnet", "tftp", "ws", "wss"}


def curl_proto_allows(lists, scheme):
    """Whether --proto LIST... lets curl use scheme: each list starts from every protocol and
    applies [+-=]NAME entries (or all); several lists: any of them (curl keeps the last)."""
    if not lists:
        return True
    for lst in lists:
        allowed = set(CURL_SCHEMES)
        for e in lst.split(","):
            op = "+"
            if e and e[0] in "+-=":
                op, e = e[0], e[1:]
            names = set(CURL_SCHEMES) if e.lower() == "all" else {e.lower()}
            if op == "=":
                allowed = names
            elif op == "-":
                allowed -= names
            else:
                allowed |= names
        if scheme in allowed or scheme not in CURL_SCHEMES:
            return True
    return False


def curl_tags(args):
    body = get = False
    method = None
    protos = []
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            break
        if a.startswith("--"):
            name = a[2:]
            neg = False
            full = long_match(tooldata.CURL_LONG, name)
            if full is None and name.startswith("no-"):
                full = long_match(tooldata.CURL_LONG, name[3:])
                neg = True
            if full is None:
                return set()  # curl stops at an unknown option, before any transfer
            val = None
            if tooldata.CURL_LONG[full] and not neg:
                val = args[i] if i < len(args) else None
                i += 1
            if full in ("data", "data-ascii", "data-binary", "data-raw", "data-urlencode",
                        "json", "form", "form-string", "upload-file"):
                body = body or full in ("json", "form", "form-string", "upload-file") or "d"
            elif full == "request" and val is not None:
                method = val
            elif full == "get":
                get = not neg
            elif full == "proto" and val is not None:
                protos.append(val)
            elif full == "config":
                return {"http:read", "http:write"}
            continue
        if a.startswith("-") and len(a) > 1:
            j = 1
            while j < len(a):
                ch = a[j]
                if ch in tooldata.CURL_SHORT_VALUE:
                    val = a[j + 1:] if j + 1 < len(a) else (args[i] if i < len(args) else None)
                    if j + 1 >= len(a):
                        i += 1
                    if ch == "d":
                        body = body or "d"
                    elif ch in "FT":
                        body = True
                    elif ch == "X" and val is not None:
                        method = val
                    elif ch == "K":
                        return {"http:read", "http:write"}
                    break
                if ch == "G":
                    get = True
                elif ch not in tooldata.CURL_SHORT_FLAGS:
                    return set()
                j += 1
    write = body is True or (body == "d" and not get) or (
        method is not None and method.upper() not in ("GET", "HEAD", "OPTIONS"))
    http = {"http:write"} if write else {"http:read"}
    # what each URL's scheme reaches (curl guesses one from a host without it)
    urls = [a for k, a in enumerate(args) if not a.startswith("-") and
            (k == 0 or args[k - 1] not in CURL_VALUED)]
    default = "http"
    for k, a in enumerate(args):
        if a.startswith("--proto-d") and len(a) > 8:
            default = a.split("=", 1)[1] if "=" in a else (args[k + 1] if k + 1 < len(args)
                                                           else "http")
    tags = set()
    for u in urls or ["http://"]:
        if "://" in u:
            scheme = u.split("://", 1)[0].lower()
        elif default.lower() not in ("http", "https"):
            scheme = default.lower()
        else:
            host = u.split("@", 1)[-1].lower()
            scheme = next((g for g in ("ftp", "dict", "ldap", "imap", "smtp", "pop3")
                           if host.startswith(g + ".")), "http")
        if not curl_proto_allows(protos, scheme):
            continue  # curl refuses it before it connects
        if scheme in ("http", "https", "file"):
            tags |= http
        elif scheme in ("ws", "wss"):
            tags |= {"http:read", "http:write"}
        elif scheme in ("scp", "sftp"):
            tags |= {"ssh:read", "ssh:write"}
        else:
            tags.add("net:raw")
    return tags


def wget_tags(args):
    write = False
    i = 0

    def execute(cmd):
        key = cmd.split("=", 1)[0].strip().lower().replace("_", "").replace("-", "")
        val = cmd.split("=", 1)[1].strip() if "=" in cmd else ""
        if key in ("postdata", "postfile", "bodydata", "bodyfile"):
            return True
        return key == "method" and val.upper() not in ("GET", "HEAD", "OPTIONS")

    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            break
        if a.startswith("--"):
            name, eq, val = a[2:].partition("=")
            full = long_match(tooldata.WGET_LONG, name)
            if full is None and name.startswith("no-") and \
                    long_match(tooldata.WGET_LONG, name[3:]) is not None:
                continue
            if full is None:
                return set()  # wget stops at an unknown option
            if not eq and tooldata.WGET_LONG[full]:
                val = args[i] if i < len(args) else ""
                i += 1
            if full in ("post-data", "post-file", "body-data", "body-file"):
                write = True
            elif full == "method" and val.upper() not in ("GET", "HEAD", "OPTIONS"):
                write = True
            elif full == "execute" and execute(val):
                write = True
            continue
        if a.startswith("-") and len(a) > 1:
            for j in range(1, len(a)):
                if a[j] in tooldata.WGET_SHORT_VALUE:
                    val = a[j + 1:] if j + 1 < len(a) else (args[i] if i < len(args) else "")
                    if j + 1 >= len(a):
                        i += 1
                    if a[j] == "e" and execute(val):
                        write = True
                    break
    urls = [a for a in args if not a.startswith("-")]
    ftp = {"net:raw"} if any(u.lower().startswith(("ftp://", "ftps://")) for u in urls) else set()
    if urls and all(u.lower().startswith(("ftp://", "ftps://")) for u in urls):
        return ftp
    return ({"http:write"} if write else {"http:read"}) | ftp


def httpie_tags(args, stdin):
    pos = []
    ignore = False
    for a in args:
        if a in ("--ignore-stdin", "-I"):
            ignore = True
        elif not a.startswith("-"):
            pos.append(a)
    method = None
    items = pos[1:]
    if len(pos) >= 2 and pos[0].isalpha():
        method, items = pos[0], pos[2:]
    body = any(("=" in x and "==" not in x) or ":=" in x or "@" in x for x in items)
    if method is not None:
        return {"http:read"} if method.upper() in ("GET", "HEAD", "OPTIONS") and not body \
            else {"http:write"}
    if body or (stdin in ("p", "f") and not ignore):
        return {"http:write"}
    return {"http:read"}


def gh_tags(args):
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-R", "--repo", "--hostname") else 1
    if i >= len(args):
        return set()
    sub, rest = args[i], args[i + 1:]
    if sub == "api":
        method, fields = None, False
        j = 0
        while j < len(rest):
            a = rest[j]
            if a in ("-X", "--method") and j + 1 < len(rest):
                method = rest[j + 1]
                j += 1
            elif a.startswith("--method="):
                method = a[9:]
            elif a.startswith("-X") and len(a) > 2:
                method = a[2:]
            elif a in ("-f", "-F", "--field", "--raw-field", "--input") or \
                    a.startswith(("--field=", "--raw-field=", "--input=", "-f", "-F")):
                fields = True
            j += 1
        if method is not None:
            return {"http:read"} if method.upper() in ("GET", "HEAD") else {"http:write"}
        return {"http:write"} if fields else {"http:read"}
    if sub in ("alias", "config", "help", "completion", "version"):
        return set()  # local: gh's own configuration
    verbs = [a for a in rest if not a.startswith("-")]
    verb = verbs[0] if verbs else None
    if sub == "repo" and verb == "sync" and len(verbs) > 1:
        return {"git:fetch", "http:write"}  # a fork on the server: the merge-upstream API
    if sub == "repo" and verb == "create" and "--push" in rest:
        return {"git:push", "http:write"}
    if verb in ("clone", "checkout", "sync"):
        return {"git:fetch"}
    if verb in ("create", "delete", "edit", "upload", "merge", "close", "comment", "review"):
        return {"http:write"}
    if verb in ("list", "view", "status", "diff", "checks", "download"):
        return {"http:read"}
    return set()


def rsync_tags(args):
    for a in args:
        if a.startswith("-e") or a.startswith("--rsh") or a.startswith("rsync://"):
            return {"ssh:write"}
        if not a.startswith("-") and ":" in a and "/" not in a.split(":", 1)[0]:
            return {"ssh:write"}
    return set()


def derive(call):
    """The tags one recorded call really performs."""
    ident, args, stdin = call[0], call[3:], call[2]
    if ident == "busybox":
        if not args:
            return set()
        ident, args = args[0], args[1:]
    if ident == "git" or ident.startswith("git-"):
        return git_tags(ident, args)
    if ident == "curl":
        return curl_tags(args)
    if ident == "wget":
        return wget_tags(args)
    if ident in ("http", "https", "xh", "xhs"):
        return httpie_tags(args, stdin)
    if ident == "gh":
        return gh_tags(args)
    if ident in ("ssh", "slogin"):
        return {"ssh:read"} if args else set()
    if ident in ("scp", "sftp"):
        return {"ssh:write"} if args else set()
    if ident == "rsync":
        return rsync_tags(args)
    if ident in ("dig", "host", "nslookup"):
        return {"dns"} if args else set()
    return set()


# ---- the sandbox ---------------------------------------------------------------------------

class Sandbox:
    def __init__(self, stub):
        self.dir = tempfile.mkdtemp(prefix="egressd-oracle-")
        self.bin = os.path.join(self.dir, "bin")
        self.core = os.path.join(self.dir, "core")
        self.out = os.path.join(self.dir, "out")
        for d in (self.bin, self.core, self.out):
            os.makedirs(d)
        os.chmod(self.out, 0o777)
        os.chmod(self.dir, 0o755)
        with open(stub, "rb") as f:
            image = f.read()
        self.binds = []
        self.times = {}

        def make(path, ident):
            with open(path, "wb") as f:
                f.write(image + b"\nORACLE-ID:" + ident.encode() + b"\n")
            os.chmod(path, 0o755)

        for name in STUB_NAMES + QUIET_STUBS:
            make(os.path.join(self.bin, name), name)
            for d in ("/usr/bin", "/usr/local/bin", "/usr/sbin", "/bin", "/sbin"):
                p = os.path.join(d, name)
                if os.path.isfile(p) and not os.path.islink(p) and not os.path.islink(d):
                    self.binds.append((os.path.join(self.bin, name), p))
        if os.path.isdir(GIT_CORE):
            # the whole folder is replaced: its programs are hard links of one file, and a
            # bind over one name of a hard link lands on every name
            for name in sorted(os.listdir(GIT_CORE)):
                p = os.path.join(GIT_CORE, name)
                if name.startswith("git") and os.path.isfile(p):
                    make(os.path.join(self.core, name), name)
                    if name.startswith("git-") and not os.path.exists(
                            os.path.join(self.bin, name)):
                        make(os.path.join(self.bin, name), name)
            self.binds.append((self.core, GIT_CORE))

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def argv(self, inner, out=None):
        a = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
             "--tmpfs", "/tmp", "--unshare-all", "--unshare-user", "--uid", "65534",
             "--gid", "65534", "--die-with-parent", "--new-session",
             "--ro-bind", self.bin, "/tmp/.oracle-bin", "--bind", out or self.out,
             "/tmp/.oracle-out",
             # the driver, wherever the checkout is: a checkout under /tmp is hidden by the
             # sandbox's own /tmp (a run from there ran nothing and reported no finding)
             "--ro-bind", HERE, "/tmp/.oracle-src"]
        for src, dst in self.binds:
            a += ["--ro-bind", src, dst]
        return a + ["--"] + inner

    def probe(self):
        """None when the sandbox works, else why not."""
        if shutil.which("bwrap") is None:
            return "bwrap is not installed (Debian package bubblewrap)"
        try:
            p = subprocess.run(self.argv(["/bin/sh", "-c", "curl x; cat /tmp/.oracle-calls"]),
                               capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"bwrap cannot run: {e}"
        if p.returncode != 0 or b"ORACLE" in p.stderr or b"curl\x1f" not in p.stdout:
            return "bwrap cannot make the sandbox here (user namespaces?): " + \
                p.stderr.decode("utf-8", "replace").strip()[:200]
        # the driver itself must run there and see the stubs: a run in which nothing runs
        # finds nothing, silently
        if not any(c and c[0] == "curl" for c in sum(self.run_one(["curl x"], self.out, 0), [])):
            raise SystemExit("oracle: the driver ran nothing in the sandbox (curl x recorded no "
                             "call): every result would be empty")
        return None

    def run(self, lines, jobs=2):
        """What each line ran: a list of call lists, one per line.  Long lists run in two
        sandboxes at once (the CI machine has two cores)."""
        self.times = {}
        if jobs < 2 or len(lines) < 100:
            return self.run_one(lines, self.out, 0)
        import threading
        half = len(lines) // 2
        parts = [(lines[:half], 0), (lines[half:], half)]
        results = [None, None]

        def work(k):
            d = os.path.join(self.out, str(k))
            os.makedirs(d, exist_ok=True)
            os.chmod(d, 0o777)
            results[k] = self.run_one(parts[k][0], d, parts[k][1])

        ts = [threading.Thread(target=work, args=(k,)) for k in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return results[0] + results[1]

    def run_one(self, lines, out, base):
        inp = os.path.join(out, "lines.json")
        res = os.path.join(out, "results.jsonl")
        with open(inp, "w") as f:
            json.dump(lines, f)
        got = {}
        start = 0
        while start < len(lines):
            if os.path.exists(res):
                os.unlink(res)
            subprocess.run(self.argv(["/usr/bin/python3", "/tmp/.oracle-src/driver.py",
                                      "/tmp/.oracle-out/lines.json", str(start),
                                      "/tmp/.oracle-out/results.jsonl", "/tmp/.oracle-bin"],
                                     out),
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=60 + 10 * (len(lines) - start))
            last = start - 1
            if os.path.exists(res):
                with open(res) as f:
                    for row in f:
                        try:
                            r = json.loads(row)
                        except ValueError:
                            continue
                        got[r["i"]] = r["calls"]
                        self.times[base + r["i"]] = r.get("t", 0)
                        last = max(last, r["i"])
            # a line that killed the driver (kill -9 -1, ...) is skipped with no calls
            if last + 1 < len(lines) and (last + 1) not in got:
                got[last + 1] = []
            start = last + 2
        return [got.get(i, []) for i in range(len(lines))]


def classify(binary, lines):
    data = b"".join(line.encode("utf-8", "surrogateescape") + b"\0" for line in lines)
    p = subprocess.run([binary], input=data, capture_output=True, timeout=600)
    out = p.stdout.decode("utf-8", "replace").split("\n")
    return out[:len(lines)]


def check(sb, binary, lines):
    """[(line, ran tags, answer, calls)] for each line whose answer misses a tag that ran."""
    calls = sb.run(lines)
    answers = classify(binary, lines)
    findings = []
    for line, cs, ans in zip(lines, calls, answers):
        ran = set()
        for c in cs:
            ran |= derive(c)
        if ans.startswith("refused") or not ran:
            continue
        have = set() if ans == "none" else set(ans.split(","))
        if not ran <= have:
            findings.append((line, ran, ans, cs))
    return findings, calls, answers


# ---- the table cases -----------------------------------------------------------------------

def load_table(path):
    lines = []
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for row in f:
            row = row.rstrip("\n")
            if "\t" not in row:
                continue
            line = row.split("\t", 1)[0].replace("\u2424", "\n").replace("\u2409", "\t")
            lines.append(line)
    return lines


def show(line, ran, ans, calls):
    print(f"FINDING: {line!r}\n  ran {','.join(sorted(ran))}; classifier: {ans}")
    for c in calls:
        print(f"    {c[0]} (as {c[1]}): {' '.join(c[3:])}")


def cmd_table(a, sb):
    lines = []
    for path in a.files:
        lines += load_table(path)
    t0 = time.monotonic()
    findings, calls, _ = check(sb, a.classify, lines)
    ran = sum(1 for cs in calls if cs)
    for f in findings:
        show(*f)
    slow = sorted(sb.times.items(), key=lambda kv: -kv[1])[:a.slowest]
    for i, t in slow:
        print(f"slow: {t:.2f} s: {lines[i]!r}")
    print(f"oracle: {len(lines)} table lines run under bash in {time.monotonic() - t0:.1f} s, "
          f"{ran} called a stub, {len(findings)} findings")
    return 1 if findings else 0


def cmd_run(a, sb):
    findings, calls, answers = check(sb, a.classify, a.lines)
    for line, cs, ans in zip(a.lines, calls, answers):
        ran = set()
        for c in cs:
            ran |= derive(c)
        print(f"{line!r}\n  ran: {','.join(sorted(ran)) or 'none'}; classifier: {ans}")
        for c in cs:
            print(f"    {c[0]} (as {c[1]}, stdin {c[2]}): {c[3:]}")
    return 1 if findings else 0


def cmd_fuzz(a, sb):
    import mutate
    rng = random.Random(a.seed)
    end = time.monotonic() + a.seconds
    total = 0
    seen = set()
    nfind = 0
    # lines that ran a network tag, and of those the ones the classifier answered (not
    # refused): a run whose lines ran nothing, or were all refused, proves little
    nran = nanswered = 0
    with open(a.out, "a", encoding="utf-8", errors="surrogateescape") as out:
        while time.monotonic() < end:
            batch = [mutate.line(rng) for _ in range(a.batch)]
            lines = [b[0] for b in batch]
            findings, calls, answers = check(sb, a.classify, lines)
            total += len(lines)
            for cs, ans in zip(calls, answers):
                if any(derive(c) for c in cs):
                    nran += 1
                    nanswered += not ans.startswith("refused")
            kinds = {b[0]: b[1] for b in batch}
            for line, ran, ans, cs in findings:
                nfind += 1
                key = (kinds.get(line), ans)
                if key in seen and nfind > 50:
                    continue
                seen.add(key)
                out.write(json.dumps({"line": line, "ran": sorted(ran), "answer": ans,
                                      "kind": kinds.get(line),
                                      "calls": cs}) + "\n")
                out.flush()
            print(f"oracle fuzz: {total} lines, {nran} ran a network tag ({nanswered} of them "
                  f"answered, not refused), {nfind} findings", flush=True)
    print(f"oracle fuzz: done, {total} lines in {a.seconds} s, {nran} ran a network tag "
          f"({nanswered} answered), {nfind} findings ({len(seen)} distinct kinds)")
    return 1 if nfind else 0


def cmd_recheck(a, sb):
    """Runs the lines of a fuzz findings file again against the current classifier."""
    rows = []
    for path in a.files:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            rows += [json.loads(r) for r in f if r.strip()]
    lines = list(dict.fromkeys(r["line"] for r in rows))
    findings, _, _ = check(sb, a.classify, lines)
    kinds = {r["line"]: r.get("kind") for r in rows}
    for line, ran, ans, cs in findings:
        print(f"[{kinds.get(line)}] ", end="")
        show(line, ran, ans, cs)
    print(f"oracle: {len(lines)} earlier findings run again, {len(findings)} still found")
    return 1 if findings else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["table", "fuzz", "run", "recheck"])
    ap.add_argument("--stub", required=True)
    ap.add_argument("--classify", required=True)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out", default="oracle-findings.jsonl")
    ap.add_argument("--slowest", type=int, default=0)
    ap.add_argument("files", nargs="*")
    a = ap.parse_intermixed_args()
    a.lines = a.files
    sb = Sandbox(a.stub)
    try:
        why = sb.probe()
        if why is not None:
            print(f"SKIPPED: {why}")
            return SKIP
        return {"table": cmd_table, "fuzz": cmd_fuzz, "run": cmd_run,
                "recheck": cmd_recheck}[a.mode](a, sb)
    finally:
        sb.close()


if __name__ == "__main__":
    sys.exit(main())
