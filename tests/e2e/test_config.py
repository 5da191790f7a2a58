"""`egressd check` and `egressd serve` on good and bad configs (docs/design.md 4, 5, 8)."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (SOURCE_DIR, base_config, check, check_eq, run_cases, run_egressd,  # noqa
                     to_yaml)

ERR_RE = re.compile(r"^egressd: (.+?):(\d+):(\d+): (.+)$")

# Three independent errors; the marker comments name what each is, and the expected positions
# are computed from the text below so the test cannot drift from it.
THREE_ERRORS = """\
listen:
  proxy: ["127.0.0.1:0"]
  bogus: 1
limits:
  maxHeaderBytes: lots
sessions:
  default:
    bound:
      network:
        allowDomains: ["*"]
        enforce: sandbox
"""
ERROR_SPOTS = [("bogus", "1"), ("maxHeaderBytes", "lots"), ("allowDomains", '"*"')]


def positions(text, key, value):
    """1-based (line, key column, value column) of the line holding key."""
    for i, line in enumerate(text.split("\n")):
        if line.lstrip().startswith(key + ":"):
            return i + 1, line.index(key) + 1, line.index(value, line.index(":")) + 1
    raise AssertionError("no %s in the test config" % key)


def write(dirname, name, text):
    path = os.path.join(dirname, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def check_three_errors(path, stderr, what):
    found = []
    for line in stderr.splitlines():
        m = ERR_RE.match(line)
        if m:
            found.append((m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)))
    for key, value in ERROR_SPOTS:
        ln, kcol, vcol = positions(THREE_ERRORS, key, value)
        hits = [f for f in found if f[1] == ln]
        check(hits, "%s: no 'egressd: FILE:%d:COL:' error for %s; stderr:\n%s"
              % (what, ln, key, stderr))
        check(any(f[2] in (kcol, vcol) for f in hits),
              "%s: error on line %d has column %r, expected %d (key) or %d (value); stderr:\n%s"
              % (what, ln, [f[2] for f in hits], kcol, vcol, stderr))
        check(any(f[0] == path for f in hits),
              "%s: error on line %d does not name the file %s; stderr:\n%s"
              % (what, ln, path, stderr))


def case_check_three_errors(h):
    path = write(h.tmp, "bad.yaml", THREE_ERRORS)
    r = run_egressd(["check", "-c", path])
    print("     egressd check said:\n" + "\n".join("       " + x for x in r.stderr.splitlines()))
    check_eq(r.returncode, 2, "egressd check exit code on a config with three errors")
    check_three_errors(path, r.stderr, "check")


def case_serve_three_errors(h):
    path = write(h.tmp, "bad.yaml", THREE_ERRORS)
    r = run_egressd(["serve", "-c", path])
    check_eq(r.returncode, 2, "egressd serve exit code on a config with three errors")
    check_three_errors(path, r.stderr, "serve")
    check("listening on" not in r.stderr, "serve started listening on a bad config")


def case_check_example(h):
    path = os.path.join(SOURCE_DIR, "examples", "egressd.yaml")
    check(os.path.exists(path), "%s does not exist" % path)
    # Relative paths in the example (audit, tokenFile) resolve from the source tree.
    r = run_egressd(["check", "-c", path])
    check_eq(r.returncode, 0, "egressd check examples/egressd.yaml exit code (stderr: %r)"
             % r.stderr)
    check(r.stdout.strip(), "egressd check printed no merged bound")


def case_check_prints_sessions(h):
    cfg = base_config({"origin.test": ["127.0.0.1"]}, sessions={
        "default": {"bound": {"network": {"domains": ["evil.test"]}}},
        "agent": {"bound": {"network": {"allowDomains": ["origin.test"], "enforce": "sandbox",
                                        "actions": ["git:push"]}}},
    })
    path = write(h.tmp, "good.yaml", to_yaml(cfg) + "\n")
    r = run_egressd(["check", "-c", path])
    check_eq(r.returncode, 0, "check exit code on a good config (stderr %r)" % r.stderr)
    for word in ("default", "agent", "evil.test", "origin.test", "git:push"):
        check(word in r.stdout, "check output does not mention %r:\n%s" % (word, r.stdout))


def bound_error(h, network, words):
    cfg = base_config({}, session_bound=network)
    path = write(h.tmp, "b.yaml", to_yaml(cfg) + "\n")
    r = run_egressd(["check", "-c", path])
    check_eq(r.returncode, 2, "check exit code for bound %r (stdout %r)" % (network, r.stdout))
    check(any(ERR_RE.match(x) for x in r.stderr.splitlines()),
          "no 'egressd: FILE:LINE:COL:' line: %r" % r.stderr)
    for w in words:
        check(w in r.stderr, "error does not mention %r: %r" % (w, r.stderr))


def case_allow_without_sandbox_error(h):
    bound_error(h, {"allowDomains": ["origin.test"]}, ["enforce"])


def case_public_suffix_pattern_error(h):
    bound_error(h, {"allowDomains": ["*.com"], "enforce": "sandbox"}, ["*.com"])


def case_missing_file(h):
    r = run_egressd(["check", "-c", os.path.join(h.tmp, "nope.yaml")])
    check(r.returncode != 0, "check on a missing file exited 0")
    check(r.stderr.startswith("egressd: "), "error not prefixed 'egressd: ': %r" % r.stderr)


if __name__ == "__main__":
    run_cases("config", [
        ("check: three errors, each with line:column, exit 2", case_check_three_errors),
        ("serve: the same three errors, exit 2, never listens", case_serve_three_errors),
        ("check examples/egressd.yaml exits 0", case_check_example),
        ("check prints each session's merged bound", case_check_prints_sessions),
        ("check: allowDomains without enforce: sandbox is an error",
         case_allow_without_sandbox_error),
        ("check: a public suffix wildcard is rejected", case_public_suffix_pattern_error),
        ("check: a missing file is an error", case_missing_file),
    ])
