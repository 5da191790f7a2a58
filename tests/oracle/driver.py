"""Runs inside the oracle's sandbox (started by oracle.py): each command line of the input file
under `bash -c`, one at a time, and writes what the stubs recorded.

Input: a JSON list of lines.  Output (one JSON object per line, flushed as it goes):
{"i": index, "calls": [[program, argv0, stdin, arg, ...], ...], "timeout": bool}.
Between lines every process the line left behind is waited for briefly, then killed, so that a
background job's calls are counted with its own line and never with the next."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

LOG = "/tmp/.oracle-calls"


def others():
    me = os.getpid()
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            p = int(d)
            if p not in (1, me):
                pids.append(p)
    return pids


def settle(deadline):
    while time.monotonic() < deadline:
        if not others():
            return
        time.sleep(0.005)
    for p in others():
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    end = time.monotonic() + 1
    while others() and time.monotonic() < end:
        time.sleep(0.005)


def read_calls():
    try:
        with open(LOG, "rb") as f:
            data = f.read()
    except OSError:
        return []
    calls = []
    for rec in data.split(b"\x1e"):
        if rec:
            calls.append([x.decode("utf-8", "replace") for x in rec.split(b"\x1f")[:-1]])
    return calls


def main():
    lines = json.load(open(sys.argv[1]))
    start = int(sys.argv[2])
    out = open(sys.argv[3], "a")
    stubdir = sys.argv[4]
    env = {"PATH": stubdir + ":/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp/home",
           "LANG": "C.UTF-8", "USER": "nobody", "TERM": "dumb"}
    for i in range(start, len(lines)):
        # nothing a line left in /tmp is seen by the next one
        for e in os.listdir("/tmp"):
            if not e.startswith(".oracle"):
                p = os.path.join("/tmp", e)
                if os.path.isdir(p) and not os.path.islink(p):
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    try:
                        os.unlink(p)
                    except OSError:
                        pass
        for d in ("/tmp/w", "/tmp/home"):
            os.makedirs(d, exist_ok=True)
        try:
            os.unlink(LOG)
        except OSError:
            pass
        timeout = False
        t0 = time.monotonic()
        try:
            subprocess.run(["/bin/bash", "-c", lines[i]], cwd="/tmp/w", env=env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=1, start_new_session=True)
        except subprocess.TimeoutExpired:
            timeout = True
        except (OSError, ValueError):
            pass
        settle(time.monotonic() + 0.2)
        out.write(json.dumps({"i": i, "calls": read_calls(), "timeout": timeout,
                              "t": round(time.monotonic() - t0, 3)}) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
