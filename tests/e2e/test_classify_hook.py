"""`egressd classify --hook claude-code` (docs/classifier.md, "A hook for agent harnesses"):
the real binary reads recorded PreToolUse inputs (tests/unit/data/classifier/hook/*.json) on
standard input and answers as Claude Code's hook protocol says: a deny is a JSON object on
standard output with exit 0; an allowed call or another tool gets no output and exit 0; input
egressd cannot read exits 2 (which blocks the call) with the reason on standard error."""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (EGRESSD_BIN, IO_TIMEOUT, SOURCE_DIR, TestFailure, check, check_eq,  # noqa
                     clean_env, run_cases)

HOOK_DIR = os.path.join(SOURCE_DIR, "tests", "unit", "data", "classifier", "hook")

CONFIG = """\
registries: {npm: npm.registry.test}
sessions:
  agent:
    bound:
      network:
        allowDomains: [github.test, "**.github.test"]
        enforce: sandbox
        actions: [write]
"""

# recorded input -> (outcome with the config, words the deny reason must hold)
WITH_CONFIG = {
    "bash-git-push.json": ("deny", ["git:push", "actions: git:push",
                                    'remove "git:push" (or "write", which covers it)',
                                    "session `agent'"]),
    "bash-git-status.json": ("allow", []),
    "bash-npm-publish.json": ("deny", ["http:write", "actions: http:write"]),
    "bash-npm-install.json": ("deny", ["the npm registry (npm.registry.test:443, registries.npm)",
                                       "host-not-allowed",
                                       'add "npm.registry.test" to allowDomains']),
    "bash-curl-evil.json": ("deny", ["evil.test:443", "host-not-allowed",
                                     'add "evil.test" to allowDomains']),
    "bash-nc.json": ("deny", ["net:raw", 'remove "net:raw" (or "write", which covers it)']),
    "bash-python-socket.json": ("deny", ["net:raw"]),
    "bash-refused.json": ("deny", ["refused", "command word is not static"]),
    "bash-escapes.json": ("deny", ["git:push"]),
    "bash-unicode-escapes.json": ("deny", ["git:push"]),
    "bash-background.json": ("allow", []),
    "read.json": ("allow", []),
    "edit.json": ("allow", []),
    "webfetch.json": ("allow", []),
}

# Without a session only refusals deny.
WITHOUT_CONFIG = {
    "bash-git-push.json": "allow",
    "bash-npm-publish.json": "allow",
    "bash-nc.json": "allow",
    "bash-refused.json": "deny",
    "read.json": "allow",
}

# malformed input -> a word the message on standard error must hold
BAD = {
    "bad-truncated.json": "unterminated",
    "bad-lone-surrogate.json": "surrogate",
    "bad-duplicate-key.json": "duplicate key",
    "bad-no-command.json": "tool_input.command",
    "bad-command-not-string.json": "tool_input.command",
    "bad-not-object.json": "not a JSON object",
    "bad-event.json": "PreToolUse",
    "bad-trailing-comma.json": "expected a key",
    "bad-control-char.json": "control character",
    "bad-invalid-utf8.json": "UTF-8",
    "bad-empty.json": "expected a value",
    "bad-deep.json": "nesting deeper",
}


def hook(args, data):
    """Runs egressd classify --hook claude-code ARGS with data on standard input."""
    check(EGRESSD_BIN and os.path.exists(EGRESSD_BIN), "EGRESSD_BIN is not set")
    try:
        return subprocess.run([EGRESSD_BIN, "classify", "--hook", "claude-code"] + args,
                              input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=clean_env(), timeout=IO_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise TestFailure("egressd classify --hook did not finish")


def recorded(name):
    with open(os.path.join(HOOK_DIR, name), "rb") as f:
        return f.read()


def check_answer(name, r, outcome, words):
    """Checks one answer against the hook protocol: deny JSON and exit 0, or nothing."""
    check_eq(r.returncode, 0, "%s: exit status (stderr %r)" % (name, r.stderr))
    if outcome == "allow":
        check_eq(r.stdout, b"", "%s: an allowed call gets no output" % name)
        return
    check(r.stdout.endswith(b"\n") and r.stdout.count(b"\n") == 1,
          "%s: the answer is one line: %r" % (name, r.stdout))
    ans = json.loads(r.stdout)
    check_eq(sorted(ans), ["hookSpecificOutput"], "%s: top-level keys" % name)
    out = ans["hookSpecificOutput"]
    check_eq(sorted(out), ["hookEventName", "permissionDecision", "permissionDecisionReason"],
             "%s: hookSpecificOutput keys" % name)
    check_eq(out["hookEventName"], "PreToolUse", "%s: hookEventName" % name)
    check_eq(out["permissionDecision"], "deny", "%s: permissionDecision" % name)
    for w in words:
        check(w in out["permissionDecisionReason"],
              "%s: the reason does not say %r: %r" % (name, w, out["permissionDecisionReason"]))


def case_recorded_with_session(h):
    cfg = os.path.join(h.tmp, "egressd.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG)
    for name, (outcome, words) in sorted(WITH_CONFIG.items()):
        r = hook(["-c", cfg, "--session", "agent"], recorded(name))
        check_answer(name, r, outcome, words + (["egressd.yaml"] if outcome == "deny" and
                                                "refused" not in words else []))


def case_recorded_without_session(h):
    for name, outcome in sorted(WITHOUT_CONFIG.items()):
        check_answer(name, hook([], recorded(name)), outcome, [])


def case_malformed_blocks(h):
    cfg = os.path.join(h.tmp, "egressd.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG)
    for name, word in sorted(BAD.items()):
        r = hook(["-c", cfg, "--session", "agent"], recorded(name))
        check_eq(r.returncode, 2, "%s: exit status (exit 2 blocks the call)" % name)
        check_eq(r.stdout, b"", "%s: no answer on standard output" % name)
        err = r.stderr.decode("utf-8", "replace")
        check(err.startswith("egressd: hook: ") and word in err,
              "%s: stderr does not say %r: %r" % (name, word, err))
    # more than 1 MiB is not read as a hook input
    big = b'{"tool_name":"Bash","tool_input":{"command":"' + b"a" * (1 << 20) + b'"}}'
    r = hook([], big)
    check_eq(r.returncode, 2, "an input over 1 MiB: exit status")
    check(b"over" in r.stderr, "an input over 1 MiB: %r" % r.stderr)


def case_config_problems_block(h):
    """A config or session egressd cannot use blocks too: the check did not happen."""
    bad = os.path.join(h.tmp, "bad.yaml")
    with open(bad, "w") as f:
        f.write("sessions: [x]\n")
    for args in (["-c", bad], ["-c", os.path.join(h.tmp, "none.yaml")]):
        r = hook(args, recorded("bash-git-status.json"))
        check_eq(r.returncode, 2, "%r: exit status" % args)
        check_eq(r.stdout, b"", "%r: no answer" % args)
    good = os.path.join(h.tmp, "good.yaml")
    with open(good, "w") as f:
        f.write(CONFIG)
    r = hook(["-c", good, "--session", "nobody"], recorded("bash-git-status.json"))
    check_eq(r.returncode, 2, "an unknown session: exit status")
    check(b"no session named" in r.stderr, "an unknown session: %r" % r.stderr)


def case_usage(h):
    for args in (["--", "git push"], ["--json"]):
        r = hook(args, recorded("bash-git-push.json"))
        check_eq(r.returncode, 2, "--hook with %r: exit status" % args)
    r = subprocess.run([EGRESSD_BIN, "classify", "--hook", "other"], input=b"{}",
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
                       timeout=IO_TIMEOUT)
    check_eq(r.returncode, 2, "an unknown hook format: exit status")
    check(b"unknown format" in r.stderr, "an unknown hook format: %r" % r.stderr)


if __name__ == "__main__":
    run_cases("classify --hook claude-code", [
        ("recorded PreToolUse inputs under a session", case_recorded_with_session),
        ("recorded inputs without a session: only refusals deny", case_recorded_without_session),
        ("malformed input exits 2 (blocks) with the reason on stderr", case_malformed_blocks),
        ("a config or session that cannot be used exits 2", case_config_problems_block),
        ("usage errors", case_usage),
    ])
