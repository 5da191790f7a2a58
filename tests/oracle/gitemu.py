"""The oracle's model of git running commands it was configured to run (called by the git stub,
inside the sandbox, after the stub recorded the call).

It over-approximates: every command-valued setting the call carries is run with /bin/sh -c,
whatever the subcommand, as the classifier must assume (it cannot know a repository's state).
Aliases run when the subcommand names them; a non-shell alias runs the git stub again with its
words."""
import os
import shlex
import subprocess
import sys

# Config keys whose value is a command git runs (section.key or section.*.key, lower case).
COMMAND_KEYS = {
    "core.editor", "core.pager", "core.sshcommand", "core.gitproxy", "core.fsmonitor",
    "core.askpass", "core.alternaterefscommand", "sequence.editor", "diff.external",
    "credential.helper", "gpg.program", "interactive.difffilter", "sendemail.sendmailcmd",
    "sendemail.tocmd", "sendemail.cccmd", "uploadpack.packobjectshook",
    "sendemail.headercmd", "sendemail.smtpserver", "imap.tunnel", "instaweb.httpd",
    "instaweb.browser", "web.browser",
}
COMMAND_SUBKEYS = {  # section -> keys under section.NAME.key
    "pager": None,  # pager.CMD = command
    "diff": {"command", "textconv"}, "difftool": {"cmd", "path"}, "mergetool": {"cmd", "path"},
    "merge": {"driver"}, "filter": {"clean", "smudge", "process"}, "credential": {"helper"},
    "gpg": {"program", "defaultkeycommand"}, "browser": {"cmd", "path"}, "man": {"cmd", "path"},
    "remote": {"uploadpack", "receivepack"}, "submodule": {"update"},
    "trailer": {"command", "cmd"}, "hook": {"command"}, "guitool": {"cmd"},
    "sendemail": {"sendmailcmd", "tocmd", "cccmd", "headercmd", "smtpserver"},
}
ENV_COMMANDS = ["GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_PAGER",
                "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_PROXY_COMMAND", "EDITOR",
                "VISUAL", "PAGER", "WGET_ASKPASS"]


def is_command_key(key):
    parts = key.split(".")
    if len(parts) < 2:
        return False
    sec, name = parts[0].lower(), parts[-1].lower()
    if len(parts) == 2:
        if f"{sec}.{name}" in COMMAND_KEYS:
            return True
        return sec == "pager"
    sub = COMMAND_SUBKEYS.get(sec)
    return sub is not None and name in sub


def run(cmd, args=(), pipe=True):
    if cmd.startswith("!"):
        cmd = cmd[1:]
    # git talks to configured programs over pipes (filters, helpers, transports); a shell
    # alias shares git's own standard input
    extra = {"input": b""} if pipe else {"stdin": None}
    subprocess.run(["/bin/sh", "-c", cmd + ' "$@"', "sh", *args], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=0.5, **extra)


def ext_argv(spec):
    """git's ext:: command: words split at spaces, "% " a space, "%%" a percent sign."""
    words, cur, i = [], "", 0
    while i < len(spec):
        ch = spec[i]
        if ch == "%" and i + 1 < len(spec):
            e = spec[i + 1]
            i += 2
            if e in " %":
                cur += e
            elif e not in "sSGV":
                return []
            continue
        if ch == " ":
            if cur:
                words.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    if cur:
        words.append(cur)
    return words


def main():
    ident, args = sys.argv[1], sys.argv[2:]
    # a configured command that runs git again sees the same settings: stop the loop
    depth = int(os.environ.get("ORACLE_GITEMU_DEPTH", "0") or 0)
    if depth >= 3:
        return
    os.environ["ORACLE_GITEMU_DEPTH"] = str(depth + 1)
    config = []
    commands = [os.environ[v] for v in ENV_COMMANDS if os.environ.get(v)]
    try:
        count = int(os.environ.get("GIT_CONFIG_COUNT", "0") or 0)
    except ValueError:
        count = 0
    for i in range(min(count, 64)):
        k = os.environ.get(f"GIT_CONFIG_KEY_{i}")
        if k is not None:
            config.append((k, os.environ.get(f"GIT_CONFIG_VALUE_{i}", "")))
    params = os.environ.get("GIT_CONFIG_PARAMETERS")
    if params:
        try:
            for item in shlex.split(params):
                k, _, v = item.partition("=")
                config.append((k, v))
        except ValueError:
            pass
    i = 0
    if ident == "git":
        while i < len(args) and args[i].startswith("-"):
            a = args[i]
            if a in ("-c", "--config-env") and i + 1 < len(args):
                kv = args[i + 1]
                i += 2
            elif a.startswith("--config-env="):
                kv = a[len("--config-env="):]
                i += 1
            elif a in ("-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix"):
                i += 2
                continue
            else:
                i += 1
                continue
            k, _, v = kv.partition("=")
            if a.startswith("--config-env"):
                v = os.environ.get(v, "")
            config.append((k, v))
        sub = args[i] if i < len(args) else None
        rest = args[i + 1:]
    else:
        sub = ident[4:]
        rest = args
    for k, v in config:
        if sub is not None and k.lower() == f"alias.{sub.lower()}":
            if v.startswith("!"):
                run(v, rest, pipe=False)
            else:
                try:
                    words = shlex.split(v)
                except ValueError:
                    words = v.split()
                subprocess.run(["git", *words, *rest], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=5)
        elif is_command_key(k) and v not in ("", "true", "false"):
            commands.append(v)
    # options after the subcommand that name a program to run on the other side
    ext = []
    j = 0
    while j < len(rest):
        a = rest[j]
        for opt in ("--upload-pack", "--receive-pack", "--exec"):
            name, eq, val = a.partition("=")
            if len(name) > 3 and opt.startswith(name):
                if eq:
                    commands.append(val)
                elif j + 1 < len(rest):
                    commands.append(rest[j + 1])
        if a == "-u" and sub in ("clone", "ls-remote") and j + 1 < len(rest):
            commands.append(rest[j + 1])
        if a.startswith("ext::"):
            ext.append(ext_argv(a[5:]))
        j += 1
    for argv in ext:
        if argv:
            try:
                subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=5)
            except (subprocess.SubprocessError, OSError):
                pass
    for c in commands:
        try:
            run(c)
        except (subprocess.SubprocessError, OSError):
            pass


if __name__ == "__main__":
    main()
