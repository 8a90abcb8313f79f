#!/usr/bin/env python3
"""worker_check.py: the validator's CPython worker runs in kiln's sandbox,
seen from outside: a real server over stdio, its process tree in /proc.

- the worker (python3) and the box's pid 1 are children of the server, in
  other user, mount, net, pid, ipc and uts namespaces, with a seccomp
  filter and no_new_privs, mapped to one uid, with a root that has no
  /home;
- it is started once and reused across checks;
- killing it (or its box's pid 1) makes the next check start a new one,
  which answers as CPython;
- nothing of it survives the server: not a clean exit, not a SIGKILL;
- where no box can be built (user namespaces off, tried in a user
  namespace of our own with user.max_user_namespaces = 0), `kiln validate`
  answers with tree-sitter alone and says why: never an unsandboxed python.

Usage: worker_check.py KILN. Prints one line per check and
"worker: N passed, N failed". Namespace links of the box are readable only
by root (its processes are not dumpable): as another user those checks
are skipped, and say so."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kilnrpc  # noqa: E402

kiln = sys.argv[1]
passed = failed = skipped = 0
NS = ("user", "mnt", "net", "pid", "ipc", "uts")
BAD_PRINT = 'print "x"\n'  # CPython: "Missing parentheses"; tree-sitter accepts it


def ok(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok   {what}")
    else:
        failed += 1
        print(f"FAIL {what} {detail}".rstrip())


class Server(kilnrpc.Server):
    def __init__(self, env):
        super().__init__(kiln, env)

    def validate(self, code):
        r = self.call("snippet/validate", {"language": "python", "code": code})
        return r.get("result", {}).get("diagnostics", [])

    def stop(self):
        return self.close()


def cpython_answered(diags):
    codes = [d.get("code") for d in diags]
    msgs = " ".join(d.get("message", "") for d in diags)
    return "kiln-no-cpython" not in codes and "Missing parentheses" in msgs


def children(pid):
    out = []
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/children") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def alive(pid):
    """Running (a zombie waiting for a reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except OSError:
        return False


def gone_within(pids, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return not any(alive(p) for p in pids)


def worker_of(server_pid):
    """(pid 1 of the box, python3 in it) among the server's children."""
    for c in children(server_pid):
        for g in children(c):
            try:
                with open(f"/proc/{g}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if any(b"pyworker.py" in a for a in argv):
                return c, g
    return None, None


def ns(pid, name):
    try:
        return os.readlink(f"/proc/{pid}/ns/{name}")
    except OSError:
        return None


def status(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


tmp = tempfile.mkdtemp(prefix="kiln-worker-check-")
env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(tmp, "config"))
root = os.geteuid() == 0

# --- sandboxed, started once, reused -------------------------------------------
s = Server(env)
ok(cpython_answered(s.validate(BAD_PRINT)), "CPython answers the first check")
pid1, py = worker_of(s.p.pid)
ok(py is not None, "the worker is a grandchild of the server (under the box's pid 1)",
   f"children: {children(s.p.pid)}")
if py is not None and root:
    for name in NS:
        mine = ns(s.p.pid, name)
        ok(mine and ns(py, name) and ns(py, name) != mine and ns(pid1, name) != mine,
           f"the worker is in another {name} namespace",
           f"server {mine}, pid 1 {ns(pid1, name)}, worker {ns(py, name)}")
    ok(status(py, "Seccomp") == "2", "the worker has a seccomp filter", status(py, "Seccomp"))
    ok(status(py, "NoNewPrivs") == "1", "the worker has no_new_privs")
    with open(f"/proc/{py}/uid_map") as f:
        fields = f.read().split()
    host_uid = 65534 if os.geteuid() == 0 else os.geteuid()
    ok(fields == ["1000", str(host_uid), "1"], "the worker's one uid is 1000 -> " +
       str(host_uid), str(fields))
    entries = set(os.listdir(f"/proc/{py}/root"))
    ok("home" not in entries and "root" not in entries and "code" in entries,
       "the worker's root is the box's (no /home, no /root; /code)", str(sorted(entries)))
    with open(f"/proc/{py}/net/dev") as f:
        ifaces = [l.split(":")[0].strip() for l in f.readlines()[2:]]
    ok(ifaces == ["lo"], "the worker sees only the loopback interface", str(ifaces))
elif py is not None:
    print("skip namespace checks: the box's /proc entries are root's to read")
    skipped += 1

for _ in range(3):
    s.validate("x = 1\n")
ok(worker_of(s.p.pid) == (pid1, py), "the same worker answers later checks")

# --- restarted when it dies ---------------------------------------------------------
if py is not None:
    os.kill(py, signal.SIGKILL)
    gone_within([py], 10)
    ok(cpython_answered(s.validate(BAD_PRINT)), "after the worker is killed, CPython answers")
    pid1b, pyb = worker_of(s.p.pid)
    ok(pyb is not None and pyb != py and pid1b != pid1, "a new worker was started")
    ok(not os.path.exists(f"/proc/{pid1}"), "the old box's pid 1 was reaped")
    os.kill(pid1b, signal.SIGKILL)
    # pid 1 becomes a zombie only once every process of its namespace is
    # gone; until then the old worker could still answer.
    gone_within([pid1b], 10)
    ok(cpython_answered(s.validate(BAD_PRINT)), "after the box's pid 1 is killed, CPython answers")
    pid1, py = worker_of(s.p.pid)
    ok(py is not None and py != pyb, "a third worker was started",
       f"pid 1 {pid1}, worker {py} (before: {pid1b}, {pyb}); children {children(s.p.pid)}")

# --- nothing survives the server --------------------------------------------------
rc = s.stop()
ok(rc == 0, "the server exits cleanly", f"exit {rc}")
ok(py is not None and gone_within([pid1, py], 10), "no worker process survives the server's exit")

s = Server(env)
ok(cpython_answered(s.validate(BAD_PRINT)), "a second server starts its own worker")
pid1, py = worker_of(s.p.pid)
s.p.kill()
s.p.wait(timeout=30)
ok(py is not None and gone_within([pid1, py], 10),
   "no worker process survives the server's SIGKILL (parent-death signal)")

# --- no box: tree-sitter alone, and why ----------------------------------------------
unshare = shutil.which("unshare")
if unshare:
    cmd = [unshare, "--user", "--map-root-user", "sh", "-c",
           "echo 0 >/proc/sys/user/max_user_namespaces && exec \"$0\" validate --format json "
           "--lang python -", kiln]
    r = subprocess.run(cmd, input=b"if x == 1\n    pass\n", capture_output=True, env=env,
                       timeout=60)
    try:
        out = json.loads(r.stdout)
        diags = {d["code"]: d["message"] for d in out["diagnostics"]}
    except (ValueError, KeyError):
        out, diags = None, {}
    hint = diags.get("kiln-no-cpython", "")
    ok("sandbox could not be built" in hint and "user.max_user_namespaces" in hint,
       "without user namespaces, the hint says the sandbox could not be built",
       r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace"))
    ok("tree-sitter alone" in diags.get("syntax", "") and r.returncode == 2,
       "without user namespaces, tree-sitter answers (and denies the syntax error)")
else:
    ok(False, "no-sandbox check: unshare (util-linux, installed by make deps) is missing")

shutil.rmtree(tmp, ignore_errors=True)
print(f"worker: {passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
sys.exit(1 if failed else 0)
