#!/usr/bin/env python3
"""bigtree.py: a project with a node_modules runs, its secrets still hidden.

    bigtree.py --kiln KILN [--files N] [--bench]

Drives a real kiln server over stdio with a project of N files (150 000
by default) laid out like a node_modules, a .env deep inside. Checks: the
run starts and the deep .env cannot be read; secrets created between two
runs (at once, after their folder's times can be trusted, in a folder
renamed in) are hidden in the next; a session's driver waits for the same
list; sandbox.workspace.maxEntries fails the run with a sentence naming
it, and a bad one fails initialize. As root: a project nobody may enter gives runs without the
workspace, and the log says why; so does a project with a tmpfs mounted inside it, the log
naming the mount, and a mount made after the workspace was set fails the run saying why. Each case prints "ok NAME" or "not ok
NAME: why"; the last line is "N passed, N failed". With --bench: the
times of a first and warm runs, and of a small project (no check);
--compare KILN2 runs the small project's in turns with another kiln.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)),
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib")]
import workspace  # noqa: E402
from workspace import Kiln, check, uri  # noqa: E402

SECRET = "API_KEY=sk-live-do-not-leak-4242"
PER_PKG = 48  # files in each package's lib/, beside package.json

READ = ("import sys\n"
        "for p in sys.argv[1:] or PATHS:\n"
        "    try:\n"
        "        print(p, 'READ', open(p).read().strip())\n"
        "    except OSError as e:\n"
        "        print(p, 'DENIED', e.errno)\n")


def read_code(paths):
    return "PATHS = %r\n" % (paths,) + READ


def make_tree(root, files):
    """A node_modules of about `files` entries; returns the project."""
    p = os.path.join(root, "proj")
    nm = os.path.join(p, "node_modules")
    npkg = max(1, files // (PER_PKG + 3))
    for i in range(npkg):
        lib = os.path.join(nm, "pkg%05d" % i, "lib")
        os.makedirs(lib)
        with open(os.path.join(nm, "pkg%05d" % i, "package.json"), "w") as f:
            f.write('{"name": "pkg%05d"}\n' % i)
        for j in range(PER_PKG):
            with open(os.path.join(lib, "m%02d.js" % j), "w") as f:
                f.write("module.exports = %d;\n" % j)
    deep = os.path.join(nm, "pkg%05d" % (npkg // 2), "lib", "conf", "deep")
    os.makedirs(deep)
    with open(os.path.join(deep, ".env"), "w") as f:
        f.write(SECRET + "\n")
    with open(os.path.join(deep, "ok.txt"), "w") as f:
        f.write("fine\n")
    with open(os.path.join(p, "main.js"), "w") as f:
        f.write("require('pkg00000');\n")
    return p, npkg


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def denied(out, paths):
    return all("%s DENIED" % q in out for q in paths) and SECRET not in out


def timed_run(k, code):
    t0 = time.monotonic()
    res, err = k.run(code)
    return res, err, (time.monotonic() - t0) * 1000


def big_cases(kiln, tmp, files, bench):
    p, npkg = make_tree(tmp, files)
    mid = "node_modules/pkg%05d/lib/conf/deep" % (npkg // 2)
    k = Kiln(kiln, uri(p))
    try:
        res, err, first = timed_run(k, read_code([mid + "/.env", mid + "/ok.txt"]))
        out = k.out["stdout"]
        check("big-project-runs", res is not None and res.get("exitCode") == 0,
              "%r %r" % (err, k.out))
        check("big-project-deep-env-hidden", denied(out, [mid + "/.env"]), out)
        check("big-project-other-files-read", mid + "/ok.txt READ fine" in out, out)

        # A secret made between two runs, in a folder the last run saw
        # and in a new one: hidden in the next run.
        new = ["node_modules/pkg00042/lib/server.pem", "node_modules/newpkg/x/.env.production",
               mid + "/id_rsa"]
        for q in new:
            write(os.path.join(p, q), SECRET + "\n")
        res, err, second = timed_run(k, read_code(new))
        out = k.out["stdout"]
        check("secret-created-between-runs-hidden", res is not None and denied(out, new),
              out + repr(err))

        # Once a folder's times are older than the file system's clock
        # tick can blur, only its times tell it changed.
        time.sleep(2.5)
        res, err, warm = timed_run(k, read_code([mid + "/ok.txt"]))
        later = ["node_modules/pkg00007/lib/.npmrc", "node_modules/pkg00007/.ssh/config"]
        time.sleep(0.1)
        for q in later:
            write(os.path.join(p, q), SECRET + "\n")
        res, err, _ = timed_run(k, read_code(later))
        out = k.out["stdout"]
        check("secret-created-in-settled-folder-hidden", res is not None and denied(out, later),
              out + repr(err))
        # A folder renamed in from elsewhere keeps its secrets hidden.
        os.rename(os.path.join(p, "node_modules/newpkg"), os.path.join(p, "node_modules/moved"))
        res, err, _ = timed_run(k, read_code(["node_modules/moved/x/.env.production"]))
        out = k.out["stdout"]
        check("secret-in-renamed-folder-hidden", res is not None and
              denied(out, ["node_modules/moved/x/.env.production"]), out + repr(err))
        # A session's driver waits for the same list.
        r = k.call("session/open", {"language": "python"})
        sid = (r.get("result") or {}).get("sessionId")
        r = k.call("snippet/run", {"language": "python", "sessionId": sid, "override": True,
                                   "code": read_code([mid + "/.env", mid + "/ok.txt"])})
        out = k.out["stdout"]
        check("big-project-session-env-hidden", sid is not None and "result" in r and
              denied(out, [mid + "/.env"]) and mid + "/ok.txt READ fine" in out,
              json.dumps(r)[:300] + out)
        warms = []
        for _ in range(5 if bench else 0):
            warms.append(timed_run(k, "pass\n")[2])
        if bench:
            warms.sort()
            print("bench: %d entries: first run %.0f ms, after 3 new secrets %.0f ms, "
                  "warm %.0f ms, warm median of 5 %.0f ms" %
                  (npkg * (PER_PKG + 3), first, second, warm, warms[2]))
    finally:
        k.close()

    k = Kiln(kiln, uri(p), config={"sandbox": {"workspace": {"maxEntries": 0}}})
    try:
        err = k.init.get("error") or {}
        check("bad-max-entries-fails-initialize", err.get("code") == -32602 and
              "maxEntries" in err.get("message", ""), repr(k.init)[:300])
    finally:
        k.close()

    # The cap: a clear sentence naming the setting.
    k = Kiln(kiln, uri(p), config={"sandbox": {"workspace": {"maxEntries": 1000}}})
    try:
        res, err = k.run("print('ran')\n")
        msg = (err or {}).get("message", "")
        check("max-entries-fails-with-the-setting", res is None and
              "sandbox.workspace.maxEntries" in msg and "ran" not in k.out["stdout"],
              repr(err) + repr(res))
    finally:
        k.close()
    return p


def small_bench(kilns, tmp):
    """Warm runs in a 600-file project; with two servers, in turns."""
    p = os.path.join(tmp, "small")
    for i in range(600):
        write(os.path.join(p, "d%02d" % (i % 30), "f%03d.txt" % i), "x\n")
    write(os.path.join(p, ".env"), SECRET + "\n")
    ks = [Kiln(kiln, uri(p)) for kiln in kilns]
    try:
        ts = [[] for _ in ks]
        for k in ks:
            k.run("pass\n")
        for _ in range(21):
            for i, k in enumerate(ks):
                ts[i].append(timed_run(k, "pass\n")[2])
        for kiln, t in zip(kilns, ts):
            t.sort()
            print("bench: small project (600 files), %s: warm median of 21 %.1f ms" %
                  (os.path.basename(kiln), t[10]))
    finally:
        for k in ks:
            k.close()


def root_cases(kiln, tmp):
    """As root the box runs as nobody: a folder nobody cannot enter."""
    priv = os.path.join(tmp, "private")
    os.makedirs(os.path.join(priv, "proj"))
    write(os.path.join(priv, "proj", "data.txt"), "data\n")
    os.chmod(priv, 0o700)
    log = os.path.join(tmp, "root.log")
    env = dict(os.environ)
    with open(log, "w") as errf:
        k = Kiln.__new__(Kiln)
        k.p = subprocess.Popen([kiln], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=errf, env=env)
        k.id = 0
        k.init = k.call("initialize", {"processId": None, "capabilities": {},
                                       "rootUri": uri(os.path.join(priv, "proj"))})
        try:
            res, err = k.run("import os\nprint(os.getcwd())\n")
            check("root-unreadable-project-runs-without-workspace",
                  res is not None and res.get("exitCode") == 0 and not res.get("workspace"),
                  "%r %r %r" % (res, err, k.out))
        finally:
            k.close()
    text = open(log, errors="replace").read()
    check("root-unreadable-project-log-says-why", "nobody" in text and "chmod" in text and
          priv in text, text[-800:])


def mounted_cases(kiln, tmp):
    """As root: a tmpfs mounted inside a project. The box cannot show such
    a folder (its overlay is refused: EINVAL, the mount being locked in
    the box's user namespace), so the server takes no workspace and its
    log names the mount and what to do; a mount that appears after the
    workspace was set fails the run with a reason that says so."""
    proj = os.path.join(tmp, "mounted")
    sub = os.path.join(proj, "scratch dir")  # a space: mountinfo escapes it
    os.makedirs(sub)
    write(os.path.join(proj, "data.txt"), "data\n")
    os.chmod(proj, 0o755)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "kiln-test", sub]).returncode:
        check("mounted-project-mount", False, "cannot mount a tmpfs at %s" % sub)
        return
    log = os.path.join(tmp, "mounted.log")
    try:
        with open(log, "w") as errf:
            k = Kiln.__new__(Kiln)
            k.p = subprocess.Popen([kiln], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=errf, env=dict(os.environ))
            k.id = 0
            k.init = k.call("initialize", {"processId": None, "capabilities": {},
                                           "rootUri": uri(proj)})
            try:
                res, err = k.run("import os\nprint(os.getcwd())\n")
                check("mounted-project-runs-without-workspace",
                      res is not None and res.get("exitCode") == 0 and not res.get("workspace"),
                      "%r %r %r" % (res, err, k.out))
            finally:
                k.close()
        text = open(log, errors="replace").read()
        check("mounted-project-log-names-the-mount",
              sub in text and "tmpfs" in text and "sandbox.workspace.mode" in text, text[-800:])
        # The mount comes after the workspace was set: the run fails, and
        # its reason says what to do.
        subprocess.run(["umount", sub], check=True)
        # No box built ahead (a warm box or the zygote's spare copied the
        # mounts before the tmpfs came, and would run without seeing it).
        k = Kiln(kiln, uri(proj), config={"sandbox": {"warmBoxes": False, "zygote": False}})
        try:
            res, err = k.run("print('before')\n")
            ok_before = res is not None and res.get("workspace") == proj
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "kiln-test", sub], check=True)
            res, err = k.run("print('after')\n")
            msg = json.dumps(err or res)
            check("mount-after-workspace-fails-the-run-saying-why",
                  ok_before and err is not None and "mounted inside" in msg and
                  "sandbox.workspace.mode" in msg, msg[:800])
        finally:
            k.close()
    finally:
        subprocess.run(["umount", sub], stderr=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--files", type=int, default=150000)
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--compare", help="with --bench: another kiln for the small project, in turns")
    a = ap.parse_args()
    a.kiln = os.path.abspath(a.kiln)
    tmp = tempfile.mkdtemp(prefix="kiln-big-")
    os.chmod(tmp, 0o755)
    try:
        big_cases(a.kiln, tmp, a.files, a.bench)
        if a.bench:
            small_bench([a.kiln] + ([os.path.abspath(a.compare)] if a.compare else []), tmp)
        if os.geteuid() == 0:
            root_cases(a.kiln, tmp)
            mounted_cases(a.kiln, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    passed = sum(workspace.results)
    print("%d passed, %d failed" % (passed, len(workspace.results) - passed))
    return 0 if passed == len(workspace.results) else 1


if __name__ == "__main__":
    sys.exit(main())
