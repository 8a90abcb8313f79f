"""kilnrpc.py: the JSON-RPC client the Python test and bench scripts share:
LSP framing over a kiln server's stdin/stdout, and a small Server wrapper.

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
    import kilnrpc
"""
import json
import os
import subprocess


def marked_processes(token):
    """Host pids whose environment carries KILN_TEST_MARK=token: the
    processes of boxes a suite's server built with that mark in its
    sandbox.env (a box's processes inherit it)."""
    found = []
    mark = ("KILN_TEST_MARK=" + token).encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                if mark in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def send(proc, msg):
    """Frame msg and write it to proc's stdin."""
    body = json.dumps(msg).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()


def recv(f):
    """The next message read from the binary stream f, or None at its end."""
    length = None
    while True:
        line = f.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        k, _, v = line.partition(b":")
        if k.lower() == b"content-length":
            length = int(v)
    return json.loads(f.read(length))


class Server:
    """A kiln server on pipes, initialized with capabilities."""

    def __init__(self, kiln, env=None, capabilities=None, args=(), root=None):
        self.p = subprocess.Popen([kiln, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=env)
        self.id = 0
        params = {"processId": None, "capabilities": capabilities or {}}
        if root is not None:  # the workspace: a folder's path
            params["rootPath"] = root
        self.init = self.call("initialize", params)
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def send(self, msg):
        send(self.p, msg)

    def read(self):
        msg = recv(self.p.stdout)
        if msg is None:
            raise EOFError("kiln closed its output")
        return msg

    def call(self, method, params):
        """Send a request; return its response, skipping notifications."""
        self.id += 1
        self.send({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        while True:
            msg = self.read()
            if msg.get("id") == self.id:
                return msg

    def close(self):
        """shutdown and exit; the server's exit code."""
        self.call("shutdown", None)
        self.send({"jsonrpc": "2.0", "method": "exit"})
        self.p.stdin.close()
        return self.p.wait(timeout=10)
