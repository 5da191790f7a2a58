"""A git smart-HTTP server for tests: `git http-backend` behind a small threaded HTTP server on
127.0.0.1, plain or TLS, serving the bare repositories under a root folder (push enabled).
Standard library and git only."""
import http.server
import os
import subprocess
import threading


class _GitHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def _run(self):
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        else:
            body = self.rfile.read(length) if length else b""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": self.server.root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "REMOTE_USER": "test",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "http.receivepack",
            "GIT_CONFIG_VALUE_0": "true",
        }
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        with self.server.lock:
            self.server.requests.append((self.command, self.path))
        r = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True,
                           timeout=60)
        head, _, out = r.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, out = r.stdout.partition(b"\n\n")
        status = 200
        headers = []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = _run
    do_POST = _run


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class GitServer:
    """Serves root's bare repositories at http(s)://127.0.0.1:port/NAME.git."""

    def __init__(self, root, tls_ctx=None):
        self.server = _Server(("127.0.0.1", 0), _GitHandler)
        self.server.root = root
        self.server.lock = threading.Lock()
        self.server.requests = []
        if tls_ctx is not None:
            self.server.socket = tls_ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def requests(self):
        with self.server.lock:
            return list(self.server.requests)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def make_repo(root, name="r"):
    """A bare repository root/NAME.git with one commit on main; returns its path."""
    work = os.path.join(root, name + "-work")
    bare = os.path.join(root, name + ".git")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t.test",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t.test", HOME=root)
    subprocess.run(["git", "init", "-q", "-b", "main", work], check=True, env=env, timeout=30)
    with open(os.path.join(work, "README"), "w") as f:
        f.write("hello\n")
    subprocess.run(["git", "-C", work, "add", "README"], check=True, env=env, timeout=30)
    subprocess.run(["git", "-C", work, "commit", "-q", "-m", "first"], check=True, env=env,
                   timeout=30)
    subprocess.run(["git", "clone", "-q", "--bare", work, bare], check=True, env=env, timeout=30)
    return bare
