#!/usr/bin/env python3
"""doctor.py: `kiln doctor` against what this test finds on the host itself
(uname, a Landlock probe, /proc/mounts, the interpreters' own --version),
and degraded cases made real: an endpoint on a closed loopback port, one
that answers, a Python that is not installed, a mount inside the
workspace, no user namespaces, and control characters in a config value.
Usage: doctor.py --kiln KILN CASE (25-cli.sh runs each case)."""
import argparse
import ctypes
import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading


def run(kiln, args, config=None, cwd=None, wrap=()):
    cmd = list(wrap) + [kiln]
    if config is not None:
        cmd += ["--config", config]
    cmd += ["doctor"] + args
    p = subprocess.run(cmd, capture_output=True, cwd=cwd, timeout=60)
    return p.returncode, p.stdout, p.stderr


def doctor_json(kiln, config=None, cwd=None, wrap=(), folder=None):
    code, out, err = run(kiln, ["--json"] + ([folder] if folder else []), config, cwd, wrap)
    try:
        rep = json.loads(out)
    except ValueError:
        sys.exit("not JSON (exit %d): %r %r" % (code, out[:300], err[:300]))
    items = {i["id"]: i for i in rep["items"]}
    if rep["exitCode"] != code:
        sys.exit("exitCode %d in the JSON, exit status %d" % (rep["exitCode"], code))
    return code, rep, items


def expect(cond, what, rep=None):
    if not cond:
        if rep is not None:
            print(json.dumps(rep, indent=1)[:3000])
        sys.exit("not as expected: " + what)


def landlock_abi():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    r = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(int(r), 0)


def cgroup_version():
    v = 0
    with open("/proc/mounts") as f:
        for line in f:
            dev, d, t = line.split()[:3]
            if t == "cgroup2" and d == "/sys/fs/cgroup":
                v = 2
            elif t == "cgroup" and v == 0:
                v = 1
    return v


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    return port


def write_config(d, obj):
    path = os.path.join(d, "config.json")
    with open(path, "w") as f:
        json.dump(obj, f)
    return path


def closed_endpoint_config(d):
    return write_config(d, {"llm": {"provider": "ollama",
                                    "url": "http://127.0.0.1:%d" % closed_port()}})


def case_host(kiln, d, wrap=()):
    """Every fact against the host's own answer; exit 1 here (the
    endpoint is closed), never 2."""
    ws = os.path.join(d, "ws")
    os.makedirs(ws, exist_ok=True)
    os.chmod(d, 0o755)
    os.chmod(ws, 0o777)
    cfg = closed_endpoint_config(d)
    os.chmod(cfg, 0o644)
    code, rep, items = doctor_json(kiln, cfg, cwd=ws, wrap=wrap)
    f = rep["facts"]
    expect(f["kernelRelease"] == os.uname().release, "kernel release", rep)
    expect(items["kernel"]["status"] == "ok", "kernel ok", rep)
    expect(f["landlockAbi"] == landlock_abi(), "Landlock ABI %d" % landlock_abi(), rep)
    expect(items["landlock"]["status"] == ("ok" if landlock_abi() else "degraded"), "landlock", rep)
    expect(f["cgroupVersion"] == cgroup_version(), "cgroup version %d" % cgroup_version(), rep)
    expect(f["userNamespaces"] and items["userns"]["status"] == "ok", "userns", rep)
    expect(f["seccompFilter"] and items["seccomp"]["status"] == "ok", "seccomp", rep)
    expect(items["box"]["status"] == "ok", "box", rep)
    expect(f["workspace"] == os.path.realpath(ws) and f["overlay"], "workspace overlay", rep)
    expect(items["workspace"]["status"] == "ok", "workspace ok", rep)
    py = subprocess.run(["/usr/bin/python3", "-c", "import sys; print(sys.version.split()[0])"],
                        capture_output=True, text=True).stdout.strip()
    expect(f["python"]["path"] == "/usr/bin/python3" and f["python"]["version"] == py,
           "python %s" % py, rep)
    for m in ("numpy", "pandas", "matplotlib"):
        v = subprocess.run(["/usr/bin/python3", "-c", "import %s; print(%s.__version__)" % (m, m)],
                           capture_output=True, text=True, cwd=d).stdout.strip()
        expect(f["python"]["modules"][m] == (v or None), "%s %s" % (m, v), rep)
    node = subprocess.run(["/usr/bin/node", "--version"], capture_output=True,
                          text=True).stdout.strip().lstrip("v")
    expect(f["node"]["version"] == node and items["node"]["status"] == "ok", "node " + node, rep)
    # The cgroup item says which limits: exact only with a delegated v2
    # (never on a cgroup v1 host such as this one's).
    if cgroup_version() != 2:
        expect(f["cgroupLimits"] == "approximate", "approximate limits on cgroup v1", rep)
    expect((items["cgroup"]["status"] == "ok") == (f["cgroupLimits"] == "exact"), "cgroup", rep)
    if items["cgroup"]["status"] != "ok":
        expect("Delegate=yes" in items["cgroup"]["fix"], "cgroup fix", rep)
    e = items["endpoint"]
    expect(e["status"] == "degraded" and not f["endpoint"]["answers"], "endpoint degraded", rep)
    expect("ollama serve" in e["fix"] and f["endpoint"]["provider"] == "ollama", "endpoint fix", rep)
    expect(code == 1, "exit 1 with an endpoint down", rep)


def case_nobody(kiln, d):
    """The same facts as the unprivileged user nobody, from a copy of the
    binary nobody can run."""
    os.chmod(d, 0o755)
    copy = os.path.join(d, "kiln")
    with open(kiln, "rb") as src, open(copy, "wb") as dst:
        dst.write(src.read())
    os.chmod(copy, 0o755)
    case_host(copy, d, wrap=("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                             "env", "HOME=" + d, "PATH=/usr/bin:/bin"))


def case_endpoint_answers(kiln, d):
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"models": [{"name": "qwen2.5-coder"}]}).encode()
            self.send_response(200 if self.path == "/api/tags" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    key = "sk-doctor-secret-123"
    cfg = write_config(d, {"llm": {"provider": "ollama", "apiKey": key,
                                   "url": "http://user:pw@127.0.0.1:%d" % srv.server_address[1]}})
    code, out, err = run(kiln, ["--json"], cfg, cwd=d)
    srv.shutdown()
    expect(key.encode() not in out + err and b"user:pw" not in out + err, "no key, no password")
    rep = json.loads(out)
    items = {i["id"]: i for i in rep["items"]}
    expect(items["endpoint"]["status"] == "ok" and rep["facts"]["endpoint"]["answers"],
           "endpoint answers", rep)
    expect("1 model" in items["endpoint"]["value"], "its model count", rep)


def case_python_missing(kiln, d):
    cfg = write_config(d, {"llm": {"url": "http://127.0.0.1:%d" % closed_port()},
                           "sandbox": {"languages": {"python": {
                               "argv": ["/nonexistent/python3", "{file}"], "file": "snippet.py"}}}})
    code, rep, items = doctor_json(kiln, cfg, cwd=d)
    expect(items["python"]["status"] == "missing" and "apt-get install python3" in items["python"]["fix"],
           "python missing with its fix", rep)
    expect(items["modules"]["status"] == "missing" and "python3-numpy" in items["modules"]["fix"],
           "modules missing with their fix", rep)
    expect(rep["facts"]["python"]["path"] == "/nonexistent/python3", "the path named", rep)
    expect(items["box"]["status"] == "ok" and code == 1, "still runs code: exit 1", rep)


def case_mount_inside(kiln, d):
    """A mount inside the workspace: the overlay is refused, the item is
    degraded with findmnt's command (root only: it mounts)."""
    ws = os.path.join(d, "ws")
    os.makedirs(os.path.join(ws, "sub"))
    cfg = closed_endpoint_config(d)
    subprocess.run(["mount", "-t", "tmpfs", "none", os.path.join(ws, "sub")], check=True)
    try:
        code, rep, items = doctor_json(kiln, cfg, cwd=ws)
    finally:
        subprocess.run(["umount", os.path.join(ws, "sub")])
    w = items["workspace"]
    expect(w["status"] == "degraded" and "findmnt" in w["fix"] and not rep["facts"]["overlay"],
           "workspace degraded", rep)
    expect(code == 1, "exit 1", rep)


def case_no_userns(kiln, d):
    """A user namespace of the test's own whose max_user_namespaces is 0:
    kiln cannot run code (exit 2) and says which setting."""
    cfg = closed_endpoint_config(d)
    wrap = ("unshare", "--user", "--map-root-user", "sh", "-c",
            'echo 0 >/proc/sys/user/max_user_namespaces && exec "$@"', "sh")
    code, rep, items = doctor_json(kiln, cfg, cwd=d, wrap=wrap)
    u = items["userns"]
    expect(u["status"] == "missing" and "user.max_user_namespaces" in u["detail"] and
           "sysctl -w user.max_user_namespaces" in u["fix"], "userns missing, cause named", rep)
    expect(items["box"]["status"] == "missing" and code == 2, "exit 2", rep)


def case_run_no_userns(kiln, d):
    """The same refusal met by kiln run (and a session, through the
    server): the error names the setting that refused the namespace and
    the exact fix, the sandbox's own reading that doctor shares."""
    cfg = closed_endpoint_config(d)
    proj = os.path.join(d, "proj")
    os.mkdir(proj)
    with open(os.path.join(proj, "a.py"), "w") as f:
        f.write("print(6 * 7)\n")
    wrap = ["unshare", "--user", "--map-root-user", "sh", "-c",
            'echo 0 >/proc/sys/user/max_user_namespaces && exec "$@"', "sh", kiln,
            "--config", cfg]
    p = subprocess.run(wrap + ["run", "a.py"], capture_output=True, cwd=proj, timeout=60)
    err = p.stderr.decode(errors="replace")
    expect(p.returncode == 125, "exit 125: %d %r" % (p.returncode, err[-400:]))
    expect(b"42" not in p.stdout, "nothing ran: %r" % p.stdout)
    expect("user namespace: user.max_user_namespaces is 0" in err and
           "sudo sysctl -w user.max_user_namespaces=15000" in err,
           "the cause and the fix named: %r" % err[-500:])


def case_control(kiln, d):
    cfg = write_config(d, {"llm": {"provider": "openai",
                                   "url": "http://127.0.0.1:%d/v1\x1b[31m\x07red" % closed_port()}})
    code, out, err = run(kiln, [], cfg, cwd=d)
    expect(b"\x1b" not in out and b"\x07" not in out, "no raw control character: %r" % out[-400:])
    expect(b"^[[31m^Gred" in out, "made visible: %r" % out[-400:])
    code2, out2, err2 = run(kiln, ["--json"], cfg, cwd=d)
    expect(b"\x1b" not in out2 and b"\\u001b[31m" in out2, "JSON escapes it: %r" % out2[-300:])


def case_text(kiln, d):
    """The text form: one aligned line an item with ok/degraded/missing,
    fixes below, the exit status as in JSON."""
    cfg = closed_endpoint_config(d)
    code, out, err = run(kiln, [], cfg, cwd=d)
    lines = out.decode().splitlines()
    names = ["kernel", "user namespaces", "seccomp", "Landlock", "sandbox box", "workspace",
             "cgroups", "Python", "Python modules", "Node", "model endpoint"]
    col = None
    for n in names:
        l = [x for x in lines if x.startswith(n + " ")]
        expect(l, "a line for " + n + ": " + out.decode())
        c = len(l[0]) - len(l[0][len(n):].lstrip())
        expect(col is None or c == col, "aligned: " + out.decode())
        col = c
        expect(l[0][c:].split()[0] in ("ok", "degraded", "missing"), "a status: " + l[0])
    expect(any("fix: " in x for x in lines) and code == 1, "fixes, exit 1: " + out.decode())


def case_server(kiln, d):
    """kiln/doctor: the server's report for its workspace is the CLI's
    for the same folder and config (item by item, and the facts)."""
    ws = os.path.join(d, "ws")
    os.makedirs(ws)
    os.chmod(d, 0o755)
    cfg = closed_endpoint_config(d)
    code, rep, items = doctor_json(kiln, cfg, cwd=ws)
    expect(rep["facts"]["workspace"] == os.path.realpath(ws), "a workspace", rep)
    p = subprocess.Popen([kiln, "--config", cfg], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         cwd=ws)

    def send(m):
        b = json.dumps(m).encode()
        p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(b) + b)
        p.stdin.flush()

    def recv():
        h = b""
        while not h.endswith(b"\r\n\r\n"):
            c = p.stdout.read(1)
            expect(c, "the server ended")
            h += c
        n = [l for l in h.split(b"\r\n") if l.lower().startswith(b"content-length")]
        return json.loads(p.stdout.read(int(n[0].split(b":")[1])))

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
          "params": {"rootUri": "file://" + ws, "capabilities": {}}})
    recv()
    send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    send({"jsonrpc": "2.0", "id": 2, "method": "kiln/doctor", "params": None})
    while True:
        m = recv()
        if m.get("id") == 2:
            break
    send({"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
    send({"jsonrpc": "2.0", "method": "exit"})
    p.wait(timeout=30)
    res = m.get("result")
    expect(res is not None, "a result: %r" % m)
    got = [(i["id"], i["status"]) for i in res["items"]]
    want = [(i["id"], i["status"]) for i in rep["items"]]
    expect(got == want, "the CLI's items %r, the server's %r" % (want, got))
    f, g = dict(rep["facts"]), dict(res["facts"])
    expect(f == g, "the same facts: %r against %r" % (f, g))
    expect(res["exitCode"] == code, "the same verdict")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("case")
    a = ap.parse_args()
    kiln = os.path.abspath(a.kiln)
    with tempfile.TemporaryDirectory() as d:
        globals()["case_" + a.case](kiln, d)
    print("ok " + a.case)


if __name__ == "__main__":
    main()
