#!/usr/bin/env python3
"""workspace.py: a run sees the project folder, safely (issue 12).

    workspace.py --kiln KILN [--zygote]

Drives a real kiln server over stdio with a project folder holding
sales.csv, .env, .git/, a key and a subfolder, the folder given as
initialize's rootUri. Each case prints "ok NAME" or "not ok NAME: why";
the last line is "N passed, N failed". Run as root and as nobody by
tests/suites/32-workspace.sh. As root the box runs as nobody, so the
project is made nobody's (a root-owned one is checked on its own: read,
create, no change to root's files).

Without --zygote every server has sandbox.zygote off (the normal path: a
box built for each run, its overlay and masks made by child.c). With
--zygote it is on, and each server with the workspace waits until a run
comes from its Python zygote before the checks (server/sandbox/pools/zygote.h:
the overlay and the masks made by the spare's pid 1): the same checks
then hold for runs forked from the zygote.
"""
import argparse
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)),
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib")]
import kilnrpc  # noqa: E402

SALES = "month,total\nJan,10\nFeb,20\nMar,30\n"
SECRET = "API_KEY=sk-live-do-not-leak-4242"
results = []
ZYGOTE = False  # --zygote
ZYGOTE_WAIT_S = 120
# Whether the run's process is a child of the zygote.
PROBE = "import sys\nprint('kiln_zygote' in sys.modules)\n"


def check(name, ok, why=""):
    results.append(ok)
    print(("ok " if ok else "not ok ") + name + ("" if ok else ": " + why), flush=True)


def make_project(root, owner=None):
    p = os.path.join(root, "proj")
    os.makedirs(os.path.join(p, "sub", "deep"))
    os.makedirs(os.path.join(p, ".git"))
    os.makedirs(os.path.join(p, "olddir"))
    files = {
        "sales.csv": SALES,
        ".env": SECRET + "\n",
        ".env.local": SECRET + "\n",
        ".git/config": "[core]\n" + SECRET + "\n",
        "sub/f.txt": "to be deleted\n",
        "sub/deep/server.key": SECRET + "\n",
        "sub/deep/notes.md": "# notes\n",
        "id_rsa": SECRET + "\n",
        "olddir/a.txt": "a\n",
        "olddir/b.txt": "b\n",
    }
    for rel, text in files.items():
        with open(os.path.join(p, rel), "w") as f:
            f.write(text)
    if owner is not None:
        for d, dirs, fs in os.walk(p):
            os.chown(d, owner, owner)
            for n in fs:
                os.chown(os.path.join(d, n), owner, owner)
    for d, dirs, fs in os.walk(p):
        os.chmod(d, 0o755)
        for n in fs:
            os.chmod(os.path.join(d, n), 0o644)
    return p


def snapshot(p):
    """Every name, mode, owner, size, mtime and content hash under p."""
    out = []
    for d, dirs, fs in sorted(os.walk(p)):
        dirs.sort()
        for n in sorted(dirs + fs):
            q = os.path.join(d, n)
            st = os.lstat(q)
            h = ""
            if os.path.isfile(q) and not os.path.islink(q):
                with open(q, "rb") as f:
                    h = hashlib.sha256(f.read()).hexdigest()
            out.append((os.path.relpath(q, p), st.st_mode, st.st_uid, st.st_size,
                        st.st_mtime_ns, h))
    return out


class Kiln:
    def __init__(self, kiln, root_uri, config=None, home=None, model_url=None):
        env = dict(os.environ)
        if model_url:
            env["KILN_LLM_URL"] = model_url
            env["KILN_MODEL"] = "fake-coder"
        if home:
            env["HOME"] = home
        args = [kiln]
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=env)
        self.id = 0
        self.on_output = None  # called with self.out at each run/output
        params = {"processId": None, "capabilities": {}}
        if root_uri:
            params["rootUri"] = root_uri
        config = json.loads(json.dumps(config or {}))
        config.setdefault("sandbox", {})["zygote"] = ZYGOTE
        params["initializationOptions"] = config
        self.init = self.call("initialize", params)
        kilnrpc.send(self.p, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
        # With the overlay (not mode none or copy), wait for the zygote.
        if ZYGOTE and "result" in self.init and root_uri and \
                "mode" not in config["sandbox"].get("workspace", {}):
            self.wait_zygote()

    def wait_zygote(self):
        """Until a run comes from the zygote (built once the server is
        idle after the first Python run)."""
        deadline = time.time() + ZYGOTE_WAIT_S
        while time.time() < deadline:
            res, _ = self.run(PROBE)
            if res is not None and self.out["stdout"] == "True\n":
                return
            time.sleep(0.3)
        raise AssertionError("no run came from the zygote in %d s" % ZYGOTE_WAIT_S)

    def call(self, method, params):
        self.id += 1
        kilnrpc.send(self.p, {"jsonrpc": "2.0", "id": self.id, "method": method,
                              "params": params})
        self.out, self.artifacts = {"stdout": "", "stderr": ""}, []
        deadline = time.time() + 120
        while time.time() < deadline:
            m = kilnrpc.recv(self.p.stdout)
            if m is None:
                raise EOFError("kiln closed its output")
            if m.get("method") == "run/output":
                self.out[m["params"]["stream"]] += m["params"]["text"]
                hook = getattr(self, "on_output", None)  # (bigtree.py's has none)
                if hook:
                    hook(self.out)
            elif m.get("method") == "run/artifact":
                self.artifacts.append(m["params"])
            elif m.get("id") == self.id:
                return m
        raise TimeoutError(method)

    def run(self, code):
        r = self.call("snippet/run", {"language": "python", "code": code, "override": True})
        return r.get("result"), r.get("error")

    def close(self):
        try:
            self.call("shutdown", None)
            kilnrpc.send(self.p, {"jsonrpc": "2.0", "method": "exit"})
        except Exception:
            pass
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def uri(p):
    return "file://" + urllib.parse.quote(p)


def changes(res):
    return {c["path"]: c for c in (res or {}).get("workspaceChanges") or []}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--fake-model", required=True)
    ap.add_argument("--zygote", action="store_true")
    a = ap.parse_args()
    global ZYGOTE
    ZYGOTE = a.zygote
    a.kiln = os.path.abspath(a.kiln)
    root = os.geteuid() == 0
    tmp = tempfile.mkdtemp(prefix="kiln-ws-")
    os.chmod(tmp, 0o755)
    try:
        run_cases(a.kiln, tmp, root)
        binary_cases(a.kiln, tmp, root)
        anew_cases(a.kiln, tmp, root)
        live_mask_cases(a.kiln, tmp, root)
        prompt_cases(a.kiln, a.fake_model, tmp, root)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    passed = sum(results)
    print("%d passed, %d failed" % (passed, len(results) - passed))
    return 0 if passed == len(results) else 1


def run_cases(kiln, tmp, root):
    proj = make_project(os.path.join(tmp, "a") if os.makedirs(os.path.join(tmp, "a")) is None
                        else None, owner=65534 if root else None)
    before = snapshot(proj)
    k = Kiln(kiln, uri(proj))
    try:
        # 1. The working directory is the project, at its own path; a
        #    relative path reads the host's file.
        res, err = k.run("import os\nprint(os.getcwd())\nprint(open('sales.csv').read(), end='')\n")
        check("cwd-is-the-workspace", res is not None and k.out["stdout"].startswith(proj + "\n"),
              "%r %r" % (err, k.out))
        check("reads-by-relative-path", k.out["stdout"] == proj + "\n" + SALES, repr(k.out))
        check("result-names-the-workspace", res is not None and res.get("workspace") == proj and
              res.get("workspaceChanges") == [], json.dumps(res)[:400])

        # 2. Secrets are hidden at any depth; the text never comes out.
        code = ("import os\n"
                "for p in ['.env', '.env.local', '.git/config', 'id_rsa', 'sub/deep/server.key']:\n"
                "    try:\n"
                "        print(p, 'READ', open(p).read())\n"
                "    except OSError as e:\n"
                "        print(p, 'DENIED', e.errno)\n"
                "print(open('sub/deep/notes.md').read(), end='')\n")
        res, err = k.run(code)
        out = k.out["stdout"]
        check("secrets-cannot-be-read", res is not None and out.count("DENIED") == 5 and
              "READ" not in out, out)
        check("secret-text-never-in-output", SECRET not in out + k.out["stderr"], out)
        check("other-files-beside-secrets-read", "# notes\n" in out, out)

        # 2b. With a workspace, pid 1 keeps the mount namespace limit open
        #     while it mounts the masks, then sets it to 0: the code finds
        #     every namespace limit at 0 (read back directly: the seccomp
        #     filter would mask a missing limit if unshare were tried).
        code = ("names = ['mnt', 'user', 'net', 'pid', 'ipc', 'uts', 'cgroup', 'time']\n"
                "vals = [open('/proc/sys/user/max_%s_namespaces' % n).read().strip() for n in names]\n"
                "print('limits', ' '.join(vals))\n")
        res, err = k.run(code)
        out = k.out["stdout"]
        check("namespace-limits-0-with-workspace", "limits 0 0 0 0 0 0 0 0\n" in out, out + repr(err))

        # 3. The code tries to undo a mask.
        code = ("import os\n"
                "tries = [lambda: os.chmod('.env', 0o644), lambda: os.unlink('.env'),\n"
                "         lambda: os.rename('.env', 'x'), lambda: os.rename('.git', 'g'),\n"
                "         lambda: os.link('.env', 'y'), lambda: open('.env', 'w')]\n"
                "for t in tries:\n"
                "    try:\n"
                "        t(); print('DID')\n"
                "    except OSError as e:\n"
                "        print('refused', e.errno)\n"
                "for p in ['.env', 'x', 'y', 'g/config']:\n"
                "    try:\n"
                "        print(p, 'READ', open(p).read())\n"
                "    except OSError as e:\n"
                "        print(p, 'DENIED', e.errno)\n")
        res, err = k.run(code)
        out = k.out["stdout"]
        check("masks-cannot-be-undone", res is not None and "DID" not in out and
              "READ" not in out and SECRET not in out, out)

        # 4. Writes land in the private layer and come back as changes;
        #    the host folder is byte for byte as it was.
        code = ("import os\n"
                "open('report.txt', 'w').write('total 60\\n')\n"
                "open('sales.csv', 'a').write('Apr,40\\n')\n"
                "os.remove('sub/f.txt')\n"
                "os.makedirs('new/dir')\n"
                "open('new/dir/data.bin', 'wb').write(bytes(range(256)))\n"
                "import shutil\nshutil.rmtree('olddir')\nos.mkdir('olddir')\n"
                "open('olddir/c.txt', 'w').write('c\\n')\n"
                "print(sorted(os.listdir('.')))\n")
        res, err = k.run(code)
        ch = changes(res)
        check("write-succeeds-in-the-box", res is not None and res.get("exitCode") == 0,
              "%r %r" % (err, k.out))
        check("created-file-reported", ch.get(proj + "/report.txt", {}).get("kind") == "created"
              and ch[proj + "/report.txt"]["size"] == 9, json.dumps(res)[:600])
        check("modified-file-reported", ch.get(proj + "/sales.csv", {}).get("kind") == "modified",
              json.dumps(ch))
        check("deleted-file-reported", ch.get(proj + "/sub/f.txt", {}).get("kind") == "deleted",
              json.dumps(ch))
        check("replaced-directory-reported",
              ch.get(proj + "/olddir/a.txt", {}).get("kind") == "deleted" and
              ch.get(proj + "/olddir/b.txt", {}).get("kind") == "deleted" and
              ch.get(proj + "/olddir/c.txt", {}).get("kind") == "created", json.dumps(ch))
        check("binary-file-reported-not-in-edit",
              ch.get(proj + "/new/dir/data.bin", {}).get("inEdit") is False and
              ch[proj + "/new/dir/data.bin"]["size"] == 256, json.dumps(ch))
        we = (res or {}).get("workspaceEdit") or {}
        ops = we.get("documentChanges", [])
        texts = {o["textDocument"]["uri"]: o["edits"][0]["newText"] for o in ops
                 if "textDocument" in o}
        kinds = [(o.get("kind"), o.get("uri")) for o in ops if "kind" in o]
        check("workspace-edit-full-contents",
              texts.get(uri(proj + "/sales.csv")) == SALES + "Apr,40\n" and
              texts.get(uri(proj + "/report.txt")) == "total 60\n" and
              ("delete", uri(proj + "/sub/f.txt")) in kinds and
              ("create", uri(proj + "/report.txt")) in kinds, json.dumps(we)[:800])
        check("host-folder-unchanged", snapshot(proj) == before, "the host folder changed")

        # Around the workspace: its parents are empty, a sibling folder of
        # the host is not there, nothing can be written beside it.
        sib = os.path.join(os.path.dirname(proj), "sibling")
        os.makedirs(sib, exist_ok=True)
        with open(os.path.join(sib, "data"), "w") as f:
            f.write(SECRET)
        res, err = k.run("import os\n"
                         "print(os.listdir('..'))\n"
                         "for p in ['../sibling/data', '../x', '/tmp/../x']:\n"
                         "    try:\n"
                         "        open(p, 'a' if p.endswith('x') and p != '../x' else 'r')\n"
                         "        print(p, 'OPEN')\n"
                         "    except OSError as e:\n"
                         "        print(p, 'no', e.errno)\n")
        out = k.out["stdout"]
        check("around-the-workspace-nothing-of-the-host",
              out.splitlines()[:1] == ["['proj']"] and "sibling/data OPEN" not in out and
              not os.path.exists(os.path.join(os.path.dirname(proj), "x")), out)
        shutil.rmtree(sib)

        # 5. The next run starts from the host folder again.
        res, err = k.run("import os\nprint(os.path.exists('report.txt'), "
                         "open('sales.csv').read() == %r)\n" % SALES)
        check("each-run-starts-clean", k.out["stdout"] == "False True\n", repr(k.out))

        # 6. A secret made after the warm box was built is hidden too
        #    (with --zygote: after the zygote's spare was made).
        time.sleep(0.3)
        with open(os.path.join(proj, "late.pem"), "w") as f:
            f.write(SECRET)
        if root:
            os.chown(os.path.join(proj, "late.pem"), 65534, 65534)
        res, err = k.run("try:\n    print(open('late.pem').read())\n"
                         "except OSError as e:\n    print('DENIED', e.errno)\n" + PROBE)
        made_ahead = (k.out["stdout"].endswith("True\n") if ZYGOTE
                      else res is not None and res.get("warmBox") is True)
        check("secret-made-after-warm-box-hidden",
              res is not None and k.out["stdout"].startswith("DENIED") and made_ahead,
              "%r %r" % (k.out, res and res.get("warmBox")))
        os.unlink(os.path.join(proj, "late.pem"))

        # 7. Debian's pandas and matplotlib work in the box, without a
        #    display or a home to write a cache into.
        code = ("import pandas as pd, matplotlib\n"
                "import matplotlib.pyplot as plt\n"
                "df = pd.read_csv('sales.csv')\n"
                "print(int(df['total'].sum()), matplotlib.get_backend())\n"
                "ax = df.plot(x='month', y='total', kind='bar')\n"
                "plt.savefig('/work/out/monthly.png')\n"
                "plt.savefig('monthly.png')\n")
        res, err = k.run(code)
        art = [x for x in k.artifacts if x.get("name") == "monthly.png"]
        check("pandas-reads-the-csv", k.out["stdout"].split()[:1] == ["60"] and
              "Fontconfig" not in k.out["stderr"],
              "%r %r" % (k.out, err))
        check("matplotlib-saves-a-png", bool(art) and art[0].get("mimeType") == "image/png" and
              changes(res).get(proj + "/monthly.png", {}).get("kind") == "created",
              "%r %r" % (k.out["stderr"][-600:], art))
        check("host-folder-unchanged-after-plot", snapshot(proj) == before, "changed")
    finally:
        k.close()

    # 8. sandbox.workspace.hide adds to the defaults, which hold what name
    #    based secret scanners look for; only hideReplacingDefaults
    #    replaces them; mode "none" turns it off.
    extra = ["credentials.json", "sub/deploy_rsa", "sub/cert.p12", "prod.tfstate",
             ".bash_history", "sub/service-account-ci.json", ".pgpass", ".git-credentials",
             "kubeconfig", "sub/store.kdbx"]
    for rel in extra:
        with open(os.path.join(proj, rel), "w") as f:
            f.write(SECRET + "\n")
        os.chmod(os.path.join(proj, rel), 0o644)
    probe = ("for p in %r:\n"
             "    try:\n        open(p).read(); print(p, 'READ')\n"
             "    except OSError:\n        print(p, 'DENIED')\n" % (["sales.csv", ".env"] + extra))
    k = Kiln(kiln, uri(proj), config={"sandbox": {"workspace": {"hide": ["sales.csv"]}}})
    try:
        res, err = k.run(probe)
        check("hide-adds-to-the-defaults",
              k.out["stdout"] == "".join("%s DENIED\n" % p for p in ["sales.csv", ".env"] + extra),
              repr(k.out))
    finally:
        k.close()
    k = Kiln(kiln, uri(proj),
             config={"sandbox": {"workspace": {"hideReplacingDefaults": ["sales.csv"]}}})
    try:
        res, err = k.run(probe)
        check("hide-replacing-defaults-replaces",
              k.out["stdout"] == "sales.csv DENIED\n" +
              "".join("%s READ\n" % p for p in [".env"] + extra), repr(k.out))
    finally:
        k.close()
    for rel in extra:
        os.unlink(os.path.join(proj, rel))
    k = Kiln(kiln, uri(proj), config={"sandbox": {"workspace": {"mode": "none"}}})
    try:
        res, err = k.run("import os\nprint(os.getcwd(), os.path.exists(%r))\n" % proj)
        check("mode-none-shows-nothing", k.out["stdout"] == "/work False\n" and
              res is not None and "workspace" not in res, "%r %r" % (k.out, res))
    finally:
        k.close()
    k = Kiln(kiln, uri(proj), config={"sandbox": {"workspace": {"mode": "copy"}}})
    err = k.init.get("error") or {}
    check("bad-mode-fails-initialize", err.get("code") == -32602 and
          "sandbox.workspace.mode" in err.get("message", ""), json.dumps(k.init))
    k.close()
    k = Kiln(kiln, uri(proj), config={"sandbox": {"workspace": {"hide": ["a/b"]}}})
    err = k.init.get("error") or {}
    check("bad-hide-fails-initialize", err.get("code") == -32602 and
          "sandbox.workspace.hide[0]" in err.get("message", ""), json.dumps(k.init))
    k.close()
    k = Kiln(kiln, uri(proj), config={"sandbox": {"workspace": {"hideReplacingDefaults": "x"}}})
    err = k.init.get("error") or {}
    check("bad-hide-replacing-fails-initialize", err.get("code") == -32602 and
          "sandbox.workspace.hideReplacingDefaults must be an array" in err.get("message", ""),
          json.dumps(k.init))
    k.close()

    # 9. `kiln run` sees the current directory; it lists the changes and
    #    writes them into the folder only with --apply.
    cp = make_project(os.path.join(tmp, "c") if os.makedirs(os.path.join(tmp, "c")) is None
                      else None, owner=65534 if root else None)
    cbefore = snapshot(cp)
    code = os.path.join(tmp, "change.py")
    with open(code, "w") as f:
        f.write("import os\nopen('report.txt', 'w').write('total 60\\n')\n"
                "open('sales.csv', 'a').write('Apr,40\\n')\nos.remove('sub/f.txt')\n"
                "print(open('sales.csv').read().count('\\n'))\n")
    p = subprocess.run([kiln, "run", code], cwd=cp, capture_output=True, text=True, timeout=120)
    check("kiln-run-lists-changes-applies-nothing",
          p.returncode == 0 and p.stdout == "5\n" and "created  %s/report.txt" % cp in p.stderr
          and "--apply" in p.stderr and snapshot(cp) == cbefore, "%r %r" % (p.stdout, p.stderr))
    p = subprocess.run([kiln, "run", "--apply", code], cwd=cp, capture_output=True, text=True,
                       timeout=120)
    ok = p.returncode == 0 and "applied 3 changes" in p.stderr
    try:
        ok = ok and open(os.path.join(cp, "report.txt")).read() == "total 60\n" and \
            open(os.path.join(cp, "sales.csv")).read() == SALES + "Apr,40\n" and \
            not os.path.exists(os.path.join(cp, "sub", "f.txt")) and \
            open(os.path.join(cp, ".env")).read() == SECRET + "\n"
    except OSError as e:
        ok = False
        p.stderr += str(e)
    check("kiln-run-apply-writes-the-changes", ok, p.stderr)

    # The terminal keeps artifacts: saved into the run's folder under
    # $XDG_CACHE_HOME/kiln/, the path printed.
    cache = os.path.join(tmp, "cache")
    art = os.path.join(tmp, "art.py")
    with open(art, "w") as f:
        f.write("open('/work/out/plot.png', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n' + bytes(100))\n"
                "open('/work/out/../out/.hidden\\x1b]0;x\\x07', 'w').write('h')\n")
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    p = subprocess.run([kiln, "run", art], cwd=cp, capture_output=True, text=True, timeout=120,
                       env=env)
    saved = [line.split(" saved at ", 1)[1] for line in p.stderr.splitlines()
             if " saved at " in line]
    ok = p.returncode == 0 and len(saved) == 2
    try:
        png = [q for q in saved if q.endswith("/plot.png")]
        ok = ok and len(png) == 1 and png[0].startswith(cache + "/kiln/runs/") and \
            open(png[0], "rb").read() == b"\x89PNG\r\n\x1a\n" + bytes(100) and \
            all("\x1b" not in q and "/." not in q for q in saved)
    except OSError as e:
        ok = False
        p.stderr += str(e)
    check("kiln-run-saves-artifacts-and-prints-the-path", ok, p.stderr)

    # 10. The home folder itself is never the workspace.
    home = os.path.join(tmp, "home")
    os.makedirs(home)
    os.chmod(home, 0o755)
    k = Kiln(kiln, uri(home), home=home)
    try:
        res, err = k.run("import os\nprint(os.getcwd())\n")
        check("home-folder-not-shown", k.out["stdout"] == "/work\n", repr(k.out))
    finally:
        k.close()

    # 11. As root, the box is nobody, and root's project is shown through
    #     an idmapped mount: its files are nobody's in the box, so the code
    #     changes them in its layer as their owner could (before, appending
    #     to sales.csv failed with EACCES while creating worked); the host
    #     folder stays as it was.
    if root:
        rp = make_project(os.path.join(tmp, "r") if os.makedirs(os.path.join(tmp, "r")) is None
                          else None)
        rbefore = snapshot(rp)
        k = Kiln(kiln, uri(rp))
        try:
            res, err = k.run("import os\nprint(open('sales.csv').read(), end='')\n"
                             "open('made.txt', 'w').write('x')\n"
                             "open('sales.csv', 'a').write('Apr,40\\n')\n"
                             "os.chmod('sub/f.txt', 0o600)\n"
                             "print(os.stat('sales.csv').st_uid == os.getuid(), "
                             "open('sales.csv').read().count('\\n'))\n")
            check("root-owned-files-changeable-in-the-layer",
                  k.out["stdout"] == SALES + "True 5\n" and
                  set(changes(res)) == {rp + "/made.txt", rp + "/sales.csv"},
                  "%r %r" % (k.out, res and res.get("workspaceChanges")))
            check("root-owned-host-folder-unchanged", snapshot(rp) == rbefore, "changed")
        finally:
            k.close()


def run_json(stderr):
    """The result `kiln run --json` printed on stderr."""
    for line in stderr.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    return None


def binary_cases(kiln, tmp, root):
    # 12. Every change comes back, whatever its bytes (issue 34): a PNG the
    #     code saves into the project is kept in the run's folder, listed
    #     with its size and kind, and `kiln run --apply` writes it, with
    #     the appended row of sales.csv, whose mode stays.
    base = os.path.join(tmp, "bin")
    os.makedirs(os.path.join(base, "a"))
    bp = make_project(os.path.join(base, "a"), owner=65534 if root else None)
    os.chmod(os.path.join(bp, "sales.csv"), 0o640)
    code = os.path.join(base, "plot.py")
    with open(code, "w") as f:
        f.write("import pandas as pd\nimport matplotlib.pyplot as plt\n"
                "df = pd.read_csv('sales.csv')\n"
                "df.plot(x='month', y='total', kind='bar')\n"
                "plt.savefig('monthly.png')\n"
                "open('sales.csv', 'a').write('Apr,40\\n')\n")
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(base, "cache"))
    p = subprocess.run([kiln, "run", "--json", "--apply", code], cwd=bp, capture_output=True,
                       text=True, timeout=180, env=env)
    res = run_json(p.stderr)
    png = changes(res).get(bp + "/monthly.png", {})
    ok = p.returncode == 0 and png.get("binary") is True and \
        png.get("mimeType") == "image/png" and \
        ("created  %s/monthly.png (%d bytes, image/png)" % (bp, png.get("size", -1))) \
        in p.stderr and "binary or too large" not in p.stderr and "applied 2 changes" in p.stderr
    try:
        with open(png["stored"], "rb") as f:
            stored = f.read()
        with open(os.path.join(bp, "monthly.png"), "rb") as f:
            applied = f.read()
        ok = ok and stored.startswith(b"\x89PNG\r\n\x1a\n") and applied == stored and \
            len(stored) == png["size"] and \
            open(os.path.join(bp, "sales.csv")).read() == SALES + "Apr,40\n"
    except (OSError, KeyError) as e:
        ok = False
        p.stderr += repr(e)
    check("kiln-run-apply-binary-and-csv-byte-identical", ok, p.stderr[-3000:])
    # (with the binary file applied beside it: both went the same way)
    check("applied-file-keeps-its-mode",
          os.path.exists(os.path.join(bp, "monthly.png")) and
          stat.S_IMODE(os.stat(os.path.join(bp, "sales.csv")).st_mode) == 0o640,
          oct(os.stat(os.path.join(bp, "sales.csv")).st_mode))

    # A host file changed while the run ran is skipped as stale, and left
    # as the host has it; the run's other changes are applied. The code
    # waits for a flag the test sets after changing the file: the flag
    # file's contents, rewritten in place (overlayfs may not show a name
    # that appears in the host folder after it looked it up).
    os.makedirs(os.path.join(base, "s"))
    sp = make_project(os.path.join(base, "s"), owner=65534 if root else None)
    flag = os.path.join(sp, "flag.txt")
    with open(flag, "w") as f:
        f.write("wait")
    os.chmod(flag, 0o644)
    code = os.path.join(base, "stale.py")
    with open(code, "w") as f:
        f.write("import os, time\nf = open('sales.csv', 'a')\nprint('ready', flush=True)\n"
                "while open('flag.txt').read() != 'go':\n    time.sleep(0.01)\n"
                "f.write('May,50\\n')\nf.close()\nopen('new.txt', 'w').write('n')\n")
    p = subprocess.Popen([kiln, "run", "--apply", code], cwd=sp, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    ready = p.stdout.readline()
    with open(os.path.join(sp, "sales.csv"), "a") as f:
        f.write("host,1\n")
    with open(flag, "r+") as f:
        f.write("go")
        f.truncate()
    out, err = p.communicate(timeout=180)
    ok = ready == "ready\n" and p.returncode == 0 and \
        "skipped %s/sales.csv: it was changed on the host while the run ran" % sp in err
    try:
        ok = ok and open(os.path.join(sp, "sales.csv")).read() == SALES + "host,1\n" and \
            open(os.path.join(sp, "new.txt")).read() == "n"
    except OSError as e:
        ok = False
        err += repr(e)
    check("kiln-run-apply-skips-a-file-changed-during-the-run", ok, "%r %s" % (ready, err))

    # workspace/applyChanges {runId, paths?}: kiln applies a run's changes
    # itself, only those named, each checked first against what the host
    # held: a file the host changed after the run is skipped, and left.
    os.makedirs(os.path.join(base, "p"))
    pp = make_project(os.path.join(base, "p"), owner=65534 if root else None)
    os.chmod(os.path.join(pp, "sales.csv"), 0o600)
    blob = bytes(range(256)) * 12
    k = Kiln(kiln, uri(pp), config={"sandbox": {"artifactDir": os.path.join(base, "art")}})
    try:
        res, err = k.run("open('bin.dat', 'wb').write(bytes(range(256)) * 12)\n"
                         "open('sales.csv', 'a').write('Apr,40\\n')\n"
                         "open('notes.txt', 'w').write('n')\n"
                         "open('sub/deep/notes.md', 'a').write('more')\n")
        ch = changes(res)
        with open(os.path.join(pp, "sub/deep/notes.md"), "a") as f:
            f.write("host\n")
        names = [pp + "/bin.dat", pp + "/sales.csv", pp + "/sub/deep/notes.md", pp + "/nope"]
        r = k.call("workspace/applyChanges", {"runId": res and res.get("runId"),
                                              "paths": names})
        a = r.get("result") or {}
        skipped = {s["path"]: s["reason"] for s in a.get("skipped", [])}
        ok = ch.get(pp + "/bin.dat", {}).get("binary") is True and \
            sorted(a.get("applied", [])) == [pp + "/bin.dat", pp + "/sales.csv"] and \
            skipped.get(pp + "/sub/deep/notes.md") == \
            "it was changed on the host after the run" and \
            "not a change" in skipped.get(pp + "/nope", "") and \
            not os.path.exists(os.path.join(pp, "notes.txt"))
        try:
            ok = ok and open(os.path.join(pp, "bin.dat"), "rb").read() == blob and \
                open(os.path.join(pp, "sales.csv")).read() == SALES + "Apr,40\n" and \
                open(os.path.join(pp, "sub/deep/notes.md")).read() == "# notes\nhost\n"
        except OSError as e:
            ok = False
            r["error"] = repr(e)
        check("apply-changes-paths-subset-and-stale-skip", ok, "%s %s" % (json.dumps(r), ch))
        check("apply-changes-keeps-the-mode",
              open(os.path.join(pp, "sales.csv")).read() == SALES + "Apr,40\n" and
              stat.S_IMODE(os.stat(os.path.join(pp, "sales.csv")).st_mode) == 0o600,
              oct(os.stat(os.path.join(pp, "sales.csv")).st_mode))
        r = k.call("workspace/applyChanges", {"runId": res and res.get("runId")})
        a = r.get("result") or {}
        skipped = {s["path"]: s["reason"] for s in a.get("skipped", [])}
        ok = a.get("applied") == [pp + "/notes.txt"] and \
            "already" in skipped.get(pp + "/bin.dat", "") and \
            os.path.exists(os.path.join(pp, "notes.txt"))
        r2 = k.call("workspace/applyChanges", {"runId": "r999999"})
        check("apply-changes-the-rest-once", ok and
              (r2.get("error") or {}).get("code") == -32602, json.dumps([r, r2]))
    finally:
        k.close()


# The code of live_mask_cases: says it polls, waits (at most 100 s) until
# the host has made the three names, then tries every way to read them:
# open, a descriptor of their directory, /proc/self/fd, rename, link.
LIVE_CODE = r"""
import os, time
print("polling", flush=True)
want = {".env", "sub/.env", "sub/id_rsa"}
for _ in range(1000):
    seen = {n for n in os.listdir(".") if n == ".env"} | \
        {"sub/" + n for n in os.listdir("sub") if n in (".env", "id_rsa")}
    if seen >= want:
        break
    time.sleep(0.1)
print("seen", sorted(seen))
def show(how, f):
    try:
        print(how, "READ", f())
    except OSError as e:
        print(how, "DENIED", e.errno)
for p in sorted(want):
    show(p, lambda: open(p).read())
d = os.open("sub", os.O_RDONLY)
show("dirfd", lambda: os.read(os.open(".env", os.O_RDONLY, dir_fd=d), 100))
show("opath", lambda: open("/proc/self/fd/%d" % os.open("sub/id_rsa", os.O_PATH)).read())
show("rename", lambda: (os.rename("sub/.env", "plain.txt"), open("plain.txt").read())[1])
show("link", lambda: (os.link("sub/id_rsa", "plain2.txt"), open("plain2.txt").read())[1])
show("renamedir", lambda: (os.rename("sub", "sub2"), open("sub2/id_rsa").read())[1])
got = []
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) not in (1, os.getpid()):
        try:
            with open("/proc/%s/mem" % pid, "rb"):
                got.append(pid)
        except OSError:
            pass
print("others-memory-opened", got)
"""


def live_mask_cases(kiln, tmp, root):
    """13. Names to hide made on the host while a run runs (issue 34, the
    live masks, server/sandbox/box/child_watch.c, zygote_watch.py): the
    code polls until the host has made .env, sub/.env and sub/id_rsa,
    then tries every way to read them; none is read, in a one-shot run
    (with --zygote: one from the zygote) and in a session's run."""
    top = os.path.join(tmp, "live")
    os.makedirs(top)
    os.chmod(top, 0o755)
    proj = make_project(top, owner=65534 if root else None)
    for rel in (".env", "sub/.env", "sub/id_rsa"):
        q = os.path.join(proj, rel)
        if os.path.exists(q):
            os.unlink(q)
    # (The killing case's os.kill needs the validator's override.)
    k = Kiln(kiln, uri(proj), config={"validator": {"allowOverride": True}})
    made = []

    def make(out):
        if made or "polling" not in out["stdout"]:
            return
        made.append(1)
        for rel in (".env", "sub/.env", "sub/id_rsa"):
            q = os.path.join(proj, rel)
            with open(q, "w") as f:
                f.write("KEY=LIVESECRET-%s\n" % rel)
            if root:
                os.chown(q, 65534, 65534)

    def clean():
        made.clear()
        for rel in (".env", "sub/.env", "sub/id_rsa"):
            try:
                os.unlink(os.path.join(proj, rel))
            except OSError:
                pass
    try:
        for label in ("run", "session"):
            clean()
            k.on_output = make
            params = {"language": "python", "code": LIVE_CODE, "override": True}
            if label == "session":
                r = k.call("session/open", {"language": "python"})
                sid = (r.get("result") or {}).get("sessionId")
                params["sessionId"] = sid
            r = k.call("snippet/run", params)
            k.on_output = None
            out = k.out["stdout"] + k.out["stderr"]
            check("live-masks-%s-names-made-mid-run-seen" % label,
                  bool(made) and "seen ['.env', 'sub/.env', 'sub/id_rsa']" in out, out[:600])
            check("live-masks-%s-never-read" % label,
                  "result" in r and "LIVESECRET" not in json.dumps(r) + out and
                  "READ" not in out and out.count("DENIED") == 8, out[:900])
            # The watcher opens as the code asked: never its own memory.
            check("live-masks-%s-watcher-memory-closed" % label,
                  "others-memory-opened []" in out, out[-300:])
            if label == "session" and sid:
                k.call("session/close", {"sessionId": sid})
        # The code ends the watcher: every call the filter asks about
        # then fails (ENOSYS), closed, not open.
        r = k.call("snippet/run", {"language": "python", "override": True, "code": (
            "import os, signal, time\n"
            "for p in os.listdir('/proc'):\n"
            "    if p.isdigit() and int(p) not in (1, os.getpid()):\n"
            "        try:\n"
            "            os.kill(int(p), signal.SIGKILL)\n"
            "        except OSError:\n"
            "            pass\n"
            "time.sleep(0.5)\n"
            "for f in (lambda: open('sales.csv').read(), lambda: os.open('.', os.O_RDONLY)):\n"
            "    try:\n"
            "        print('OPENED', f())\n"
            "    except OSError as e:\n"
            "        print('errno', e.errno)\n")})
        out = k.out["stdout"] + k.out["stderr"]
        check("live-masks-watcher-killed-every-open-fails", "result" in r and
              out.count("errno 38") == 2 and "OPENED" not in out, out[:600] + json.dumps(r)[:300])
    finally:
        k.close()
        clean()


def anew_cases(kiln, tmp, root):
    """12. The folder is moved away and another made at its path, while a
    box built ahead (a warm box; with --zygote, the zygote's) holds the
    old one: the next run sees the new folder, never the old one's
    secret (.env is only in the old folder, so the hide list, made from
    the path, has nothing to mask)."""
    top = os.path.join(tmp, "anew")
    os.makedirs(top)
    os.chmod(top, 0o755)
    proj = make_project(top, owner=65534 if root else None)
    code = ("import os\nprint(sorted(os.listdir('.')))\n"
            "try:\n    print('.env READ', open('.env').read())\n"
            "except OSError as e:\n    print('.env no', e.errno)\n")
    k = Kiln(kiln, uri(proj))
    try:
        # Two runs, each after a pause: the second takes the box built
        # after the first (without --zygote), and a third waits after it.
        for _ in range(2):
            time.sleep(0.5)
            res, err = k.run(code)
        old_list = sorted(os.listdir(proj))
        check("anew-old-folder-secret-masked",
              res is not None and k.out["stdout"] == "%r\n.env no 13\n" % old_list and
              (ZYGOTE or res.get("warmBox") is True), "%r %r %r" % (k.out, err, res))
        time.sleep(0.5)
        os.rename(proj, os.path.join(top, "old"))
        os.makedirs(proj)
        with open(os.path.join(proj, "fresh.txt"), "w") as f:
            f.write("new folder\n")
        for q in (proj, os.path.join(proj, "fresh.txt")):
            os.chmod(q, 0o755 if q == proj else 0o644)
            if root:
                os.chown(q, 65534, 65534)
        want = "['fresh.txt']\n.env no 2\n"
        res, err = k.run(code)
        seen = k.out["stdout"] + k.out["stderr"]
        check("anew-folder-seen-no-old-secret",
              res is not None and k.out["stdout"] == want and SECRET not in seen and
              (ZYGOTE or res.get("warmBox") is False), "%r %r %r" % (k.out, err, res))
        # The box built after it holds the new folder, and is used.
        time.sleep(0.5)
        res, err = k.run(code)
        check("anew-next-box-holds-the-new-folder",
              res is not None and k.out["stdout"] == want and
              (ZYGOTE or res.get("warmBox") is True), "%r %r %r" % (k.out, err, res))
    finally:
        k.close()


def prompt_cases(kiln, fake_model, tmp, root):
    """The model is told what the box can import and what the workspace holds."""
    proj = make_project(os.path.join(tmp, "m") if os.makedirs(os.path.join(tmp, "m")) is None
                        else None, owner=65534 if root else None)
    log = os.path.join(tmp, "model.log")
    port_file = os.path.join(tmp, "port")
    fm = subprocess.Popen([sys.executable, fake_model, "--port-file", port_file, "--log", log,
                           "--max-seconds", "300"], stdout=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if os.path.exists(port_file):
                break
            time.sleep(0.05)
        port = open(port_file).read().strip()
        k = Kiln(kiln, uri(proj), model_url="http://127.0.0.1:%s" % port)
        try:
            r = k.call("intent/run", {"intent": "plot monthly totals from sales.csv",
                                      "language": "python"})
            msgs = json.loads(open(log).read().splitlines()[-1]) if os.path.exists(log) else []
            system = " ".join(m["content"] for m in msgs if m["role"] == "system")
            user = " ".join(m["content"] for m in msgs if m["role"] == "user")
            check("intent-answered", "result" in r, json.dumps(r)[:300])
            check("prompt-lists-importable-modules",
                  all(m in system for m in ("numpy", "pandas", "matplotlib")), system)
            check("prompt-names-the-workspace", proj in system, system)
            check("prompt-lists-workspace-files",
                  "sales.csv (%d bytes): month,total" % len(SALES) in user and
                  "sub/deep/notes.md" in user, user)
            check("prompt-leaves-secrets-out",
                  ".env" not in user and "server.key" not in user and "id_rsa" not in user and
                  SECRET not in user + system, user)
        finally:
            k.close()
    finally:
        fm.kill()
        fm.wait()


if __name__ == "__main__":
    sys.exit(main())
