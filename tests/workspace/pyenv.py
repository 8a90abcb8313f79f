#!/usr/bin/env python3
"""pyenv.py: python runs use the project's own environment (issue 38,
server/sandbox/box/pyenv.c), against the real server:

    pyenv.py --kiln KILN

Real environments made with `python3 -m venv` (no PyPI here: a module
mylib.py is put straight into each venv's site-packages): the workspace's
.venv (and venv/) is found, imported from, and sys.executable and
sys.prefix are its; writes into it land in the private layer; without it
the import fails as before; a .venv made while the server runs
is used at once; a warm box's kept plan is not used once the environment
changed; VIRTUAL_ENV naming a venv outside the workspace is
shown read-only (a write fails, the host folder stays the same, a folder
beside it stays unseen); sandbox.python naming an interpreter is used; a
.venv whose bin/python leads nowhere, and a pyvenv.cfg whose home is /etc,
a path with control characters or a folder without a python, each give a
clear error naming the environment and the fix; with the zygote on, a run
with a .venv takes a box of its own, and a session runs with it too. Each case prints "ok NAME" or "not ok
NAME: why"; the last line is "N passed, N failed".
"""
import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workspace as W  # noqa: E402  (its Kiln client and helpers)

results = []
VERSION = "%d.%d" % sys.version_info[:2]


def check(name, ok, why=""):
    results.append(bool(ok))
    print(("ok %s" % name) if ok else ("not ok %s: %s" % (name, why)), flush=True)


def make_venv(path, x):
    """A venv made with Debian's python3, holding mylib (X = x)."""
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", path], check=True)
    sp = os.path.join(path, "lib", "python" + VERSION, "site-packages")
    with open(os.path.join(sp, "mylib.py"), "w") as f:
        f.write("X = %d\n" % x)
    return path


def tree(p):
    out = []
    for d, dirs, files in os.walk(p):
        dirs.sort()
        for n in sorted(files + dirs):
            q = os.path.join(d, n)
            st = os.lstat(q)
            out.append((os.path.relpath(q, p), st.st_mode, st.st_size, st.st_mtime_ns))
    return out


PROBE = "import sys\nprint(sys.executable, sys.prefix)\nimport mylib\nprint(mylib.X)\n"


def kiln(kiln_bin, proj, config=None, env=None):
    saved = dict(os.environ)
    os.environ.pop("VIRTUAL_ENV", None)
    os.environ.pop("CONDA_PREFIX", None)
    os.environ.update(env or {})
    try:
        return W.Kiln(kiln_bin, W.uri(proj) if proj else None, config=config)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run(k, code):
    res, err = k.run(code)
    return res, err, k.out["stdout"], k.out["stderr"]


def cfg_home(home):
    def set_home(v):
        with open(v + "/pyvenv.cfg", "w") as f:
            f.write("home = %s\nversion = %s\n" % (home, VERSION))
    return set_home


def cases(kb, tmp, out):
    # 1. The workspace's .venv: imported from, sys.executable and
    #    sys.prefix its own, said in the result.
    a = os.path.join(tmp, "a")
    os.makedirs(a)
    venv = make_venv(os.path.join(a, ".venv"), 42)
    before = tree(venv)
    k = kiln(kb, a)
    try:
        res, err, so, se = run(k, PROBE)
        py = (res or {}).get("python") or {}
        check("venv-imported", so == "%s/bin/python %s\n42\n" % (venv, venv), (err, so, se))
        check("venv-said", py.get("source") == "workspace .venv" and
              py.get("path") == venv + "/bin/python" and py.get("prefix") == venv and
              py.get("version") == sysconfig.get_python_version() or
              (py.get("version") or "").startswith(VERSION + "."), py)
        # Its writes land in the private layer, like any other.
        res, err, so, se = run(k, "import os, sys\nopen(sys.prefix + '/w', 'w').write('x')\n"
                               "print('wrote', os.environ['VIRTUAL_ENV'])\n")
        ch = W.changes(res)
        check("venv-writes-private", so == "wrote %s\n" % venv and venv + "/w" in ch and
              tree(venv) == before, (err, so, se, list(ch)))
    finally:
        k.close()

    # 2. Without it, the import fails as before, and the result says so.
    b = os.path.join(tmp, "b")
    os.makedirs(b)
    k = kiln(kb, b)
    try:
        res, err, so, se = run(k, PROBE)
        py = (res or {}).get("python") or {}
        check("no-venv-import-fails", "No module named 'mylib'" in se and
              so.startswith("/usr/bin/python3 /usr\n") and py.get("source") == "system",
              (err, so, se, py))
        # 3. A venv made now is used by the next run.
        make_venv(os.path.join(b, "venv"), 5)
        res, err, so, se = run(k, PROBE)
        py = (res or {}).get("python") or {}
        check("venv-made-later-used", so.endswith("\n5\n") and
              py.get("source") == "workspace venv", (err, so, se, py))
    finally:
        k.close()

    # 4. VIRTUAL_ENV outside the workspace: shown read-only, nothing
    #    beside it.
    c = os.path.join(tmp, "c")
    os.makedirs(c)
    env = make_venv(os.path.join(out, "env"), 7)
    os.makedirs(os.path.join(out, "beside"))
    before = tree(env)
    k = kiln(kb, c, env={"VIRTUAL_ENV": env})
    try:
        res, err, so, se = run(k, PROBE)
        py = (res or {}).get("python") or {}
        check("virtual-env-used", so == "%s/bin/python %s\n7\n" % (env, env) and
              py.get("source") == "VIRTUAL_ENV", (err, so, se, py))
        res, err, so, se = run(k, (
            "import os, sys\n"
            "print(os.path.exists(%r))\n"
            "try:\n"
            "    open(sys.prefix + '/lib/python%s/site-packages/mylib.py', 'w').write('X = 0')\n"
            "    print('written')\n"
            "except OSError as e:\n"
            "    print('refused', e.errno)\n") % (os.path.join(out, "beside"), VERSION))
        check("virtual-env-read-only", so == "False\nrefused 30\n" and tree(env) == before,
              (err, so, se))
    finally:
        k.close()

    # Without a workspace, the warm box's plan is kept for the next run
    # (pools/warm.c): it is not used once the environment changed (here
    # its pyvenv.cfg's home now leads to another folder to show).
    w = make_venv(os.path.join(out, "warmenv"), 11)
    k = kiln(kb, None, env={"VIRTUAL_ENV": w})
    try:
        look = "import os\nprint(os.path.isdir(%r))\n" % (env + "/bin")
        res, err, so, se = run(k, look)
        first = so
        time.sleep(1)  # the warm box is built once the server is idle
        cfg_home(env + "/bin")(w)
        res, err, so, se = run(k, look)
        check("warm-plan-follows-venv", first == "False\n" and so == "True\n",
              (first, so, se, err))
    finally:
        k.close()

    # 5. sandbox.python naming an interpreter.
    other = make_venv(os.path.join(out, "other"), 9)
    k = kiln(kb, a, config={"sandbox": {"python": other + "/bin/python"}})
    try:
        res, err, so, se = run(k, PROBE)
        py = (res or {}).get("python") or {}
        check("sandbox-python-used", so == "%s/bin/python %s\n9\n" % (other, other) and
              py.get("source") == "sandbox.python", (err, so, se, py))
    finally:
        k.close()

    # 6. Broken and hostile environments: a clear error, nothing run.
    def refused(name, setup, *words):
        d = os.path.join(tmp, name)
        os.makedirs(d)
        v = make_venv(os.path.join(d, ".venv"), 1)
        setup(v)
        k = kiln(kb, d)
        try:
            res, err, so, se = run(k, "print('ran')\n")
            msg = (err or {}).get("message", "") + str((res or {}).get("error") or "")
            check(name, res is None and so == "" and v in msg and
                  (err or {}).get("code") == -32803 and
                  all(w in msg for w in words), (res, err, so))
        finally:
            k.close()

    def broken(v):
        os.remove(v + "/bin/python")
        os.symlink("/nonexistent/python3.99", v + "/bin/python")


    refused("broken-venv-named", broken, "/nonexistent/python3.99", "python3 -m venv --clear")
    refused("home-etc-refused", cfg_home("/etc"), "/etc", "will not show")
    refused("home-control-refused", cfg_home("/usr/b\x1bin"), "control characters")
    refused("home-without-python-refused", cfg_home(os.path.join(out, "beside")),
            "not a folder holding a Python interpreter")

    # The home folder is never shown, even holding a python.
    home = os.path.join(out, "home")
    os.makedirs(home + "/bin")
    os.symlink("/usr/bin/python3", home + "/bin/python3")
    d = os.path.join(tmp, "home-folder-refused")
    os.makedirs(d)
    v = make_venv(os.path.join(d, ".venv"), 1)
    cfg_home(home + "/bin")(v)
    k = kiln(kb, d, env={"HOME": home})
    try:
        res, err, so, se = run(k, "print('ran')\n")
        msg = (err or {}).get("message", "")
        check("home-folder-refused", res is None and "the home folder" in msg, (res, err, so))
    finally:
        k.close()

    # An environment outside the workspace under /tmp cannot be shown
    # (the box's own /tmp): said, not a failed mount.
    t = make_venv(os.path.join(tmp, "tmpenv"), 1)
    k = kiln(kb, c, env={"VIRTUAL_ENV": t})
    try:
        res, err, so, se = run(k, "print('ran')\n")
        msg = (err or {}).get("message", "")
        check("virtual-env-under-tmp-refused", res is None and t in msg and
              "its own folder there" in msg, (res, err, so))
    finally:
        k.close()

    # As root the box runs as nobody: a folder nobody cannot enter on the
    # way (as /root is) is said before the box is built.
    if os.geteuid() == 0:
        priv = os.path.join(out, "private")
        os.makedirs(priv)
        p = make_venv(os.path.join(priv, "env"), 1)
        os.chmod(priv, 0o700)
        k = kiln(kb, c, env={"VIRTUAL_ENV": p})
        try:
            res, err, so, se = run(k, "print('ran')\n")
            msg = (err or {}).get("message", "")
            check("root-private-folder-said", res is None and "cannot enter" in msg,
                  (res, err, so))
        finally:
            k.close()

    # A .venv that is a link to a folder whose name has control
    # characters: refused, never printed or bound.
    d = os.path.join(tmp, "link-control-refused")
    os.makedirs(d)
    evil = make_venv(os.path.join(out, "e\x1b[2Jvil"), 1)
    os.symlink(evil, os.path.join(d, ".venv"))
    k = kiln(kb, d)
    try:
        res, err, so, se = run(k, "print('ran')\n")
        msg = (err or {}).get("message", "")
        check("link-control-refused", res is None and "control characters" in msg and
              "\x1b" not in msg, (res, err, so))
    finally:
        k.close()

    # 7. A home outside /usr that holds a python: that folder is shown.
    d = os.path.join(tmp, "h")
    os.makedirs(d)
    v = make_venv(os.path.join(d, ".venv"), 3)
    cfg_home(env + "/bin")(v)
    k = kiln(kb, d)
    try:
        res, err, so, se = run(k, "import os\nprint(os.path.isdir(%r), os.path.exists(%r))\n"
                               % (env + "/bin", os.path.join(out, "beside")))
        check("home-outside-usr-shown", so == "True False\n", (err, so, se))
    finally:
        k.close()

    # 8. The zygote on: a run with a .venv takes a box of its own, even
    #    once a zygote (Debian's python3) serves the folder's other runs.
    W.ZYGOTE = True
    z = os.path.join(tmp, "z")
    os.makedirs(z)
    k = kiln(kb, z)  # waits until a run came from the zygote
    try:
        zv = make_venv(os.path.join(z, ".venv"), 8)
        res, err, so, se = run(k, PROBE)
        check("zygote-not-for-venv-made-later", so == "%s/bin/python %s\n8\n" % (zv, zv) and
              res.get("zygote") is False, (err, so, se, res and res.get("zygote")))
    finally:
        k.close()
    k = kiln(kb, a, config={"sandbox": {"workspace": {"mode": "overlay"}}})
    try:
        # Long enough for a zygote to be built, were one built for it.
        for _ in range(12):
            res, err, so, se = run(k, PROBE)
            if not res or res.get("zygote"):
                break
            time.sleep(0.3)
        check("zygote-not-for-venv", so == "%s/bin/python %s\n42\n" % (venv, venv) and
              res.get("zygote") is False, (err, so, se, res and res.get("zygote")))
        # A session runs its code with it too.
        r = k.call("session/open", {"language": "python"})
        sid = (r.get("result") or {}).get("sessionId")
        r = k.call("snippet/run", {"language": "python", "sessionId": sid, "override": True,
                                   "code": PROBE})
        check("session-uses-venv", k.out["stdout"] == "%s/bin/python %s\n42\n" % (venv, venv),
              (r, k.out))
        k.call("session/close", {"sessionId": sid})
    finally:
        W.ZYGOTE = False
        k.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    a = ap.parse_args()
    kb = os.path.abspath(a.kiln)
    tmp = tempfile.mkdtemp(prefix="kiln-pyenv-")
    # Outside /tmp: the box has a /tmp of its own, so an environment
    # outside the workspace cannot live there (pyenv.c).
    out = tempfile.mkdtemp(prefix="kiln-pyenv-", dir="/var/tmp")
    os.chmod(tmp, 0o755)
    os.chmod(out, 0o755)
    try:
        cases(kb, tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    passed = sum(results)
    print("%d passed, %d failed" % (passed, len(results) - passed))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
