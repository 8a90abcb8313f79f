#!/usr/bin/env python3
"""zygote_workspace.py: runs with a workspace come from the Python
zygote (server/sandbox/pools/zygote.h) and are the normal path's: the same
output and workspaceChanges, secrets hidden with each run's own list,
the host folder untouched; and a folder made anew at the workspace's
path retires the zygote that holds the old one.

Run as zygote.py is (its main(), usage and output), against a server
of its own.
"""
import json
import os
import tempfile
import time

from zygote import MARK, READY_WAIT_S, Server, ZygoteSuite, main


class WorkspaceSuite(ZygoteSuite):
    """Servers of their own, each with a workspace folder."""

    def cases(self):
        self.case("zygote-workspace-as-the-normal-path", self.workspace_case())
        self.case("zygote-workspace-made-anew-retires-it", self.workspace_anew_case())

    # Programs run in the workspace, through the zygote and on the normal
    # path: reads, writes (workspaceChanges), the secrets (each run's own
    # new one included), the cwd, Landlock's rule for the folder.
    WS_PROGRAMS = [
        "import os\nprint(os.getcwd() == WS, open('data.txt').read().strip())",
        "import os\nprint(sorted(os.listdir('.')))\n"
        "for n in sorted(os.listdir('.')):\n"
        "    try:\n"
        "        print(n, repr(open(n).read()[:40]))\n"
        "    except OSError as e:\n"
        "        print(n, type(e).__name__)",
        "import os\nfor n in ('.env', 'deep/a/.env', '.git/config', 'NEWSECRET'):\n"
        "    try:\n"
        "        print(n, repr(open(n).read()))\n"
        "    except OSError as e:\n"
        "        print(n, type(e).__name__, oct(os.stat(n).st_mode))",
        "open('out.txt', 'w').write('written\\n')\nopen('data.txt', 'a').write('more\\n')\n"
        "import os\nos.remove('old.txt')\nprint('wrote')",
        "import subprocess\nprint(subprocess.run(['umount', '-l', '.env'], capture_output=True)"
        ".returncode != 0)\nprint(open('data.txt').read().strip())",
        "1/0",
    ]

    def workspace_case(self):
        """A run with a workspace forks from the zygote and is the normal
        path's: the same output, exit and workspaceChanges for each of
        WS_PROGRAMS against a server with the zygote off, on the same
        folder. Before each run a new secret (NEWSECRET, and one deep in
        the tree) is made: the list the zygote's box masks must be the
        one revalidated for that run (hide.h), not the spare's. Every run
        leaves the host folder byte for byte as it was."""
        def make_ws():
            ws = tempfile.mkdtemp(prefix="kiln-zygote-ws-", dir="/var/tmp")
            self.cleanup.append(ws)
            os.chmod(ws, 0o755)
            files = {"data.txt": "from the workspace\n", "old.txt": "old\n",
                     ".env": "KEY=kiln-ws-secret-1\n", "deep/a/.env": "KEY=kiln-ws-secret-2\n",
                     ".git/config": "[core] kiln-ws-secret-3\n"}
            for n, text in files.items():
                path = os.path.join(ws, n)
                os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
                with open(path, "w") as f:
                    f.write(text)
                os.chmod(path, 0o644)
            # As root the box runs as nobody: the code may change these
            # (in its own layer) only if they are nobody's.
            for d, dirs, fs in os.walk(ws):
                for q in [d] + [os.path.join(d, f) for f in fs]:
                    if os.getuid() == 0:
                        os.chown(q, 65534, 65534)
                os.chmod(d, 0o755)
            return ws

        def snapshot(ws):
            seen = {}
            for d, dirs, files in os.walk(ws):
                for n in files + dirs:
                    p = os.path.join(d, n)
                    seen[os.path.relpath(p, ws)] = (open(p, "rb").read()
                                                    if os.path.isfile(p) else None)
            return seen

        def outcome(srv, ws, code, i):
            # A secret made now, just before the run: hidden all the same.
            sec = os.path.join(ws, "id_new%d" % i)
            with open(sec, "w") as f:
                f.write("kiln-ws-secret-new-%d\n" % i)
            os.chmod(sec, 0o644)
            code = "WS = %r\n" % ws + code.replace("NEWSECRET", "id_new%d" % i)
            before = snapshot(ws)
            out, err, res, error = srv.run(MARK + code)
            after = snapshot(ws)
            os.unlink(sec)
            first, _, rest = out.partition("\n")
            res = res or {}
            changes = sorted((c.get("path"), c.get("kind") or c.get("change") or c.get("type"))
                             for c in res.get("workspaceChanges") or [])
            return first, before == after, (rest, err.replace(ws, "WS"), error,
                                            res.get("exitCode"), changes)

        def run():
            ws_z, ws_n = make_ws(), make_ws()
            cfgs = []
            for name, zyg in (("cfg-ws.json", True), ("cfg-ws-normal.json", False)):
                cfg_path = os.path.join(self.scratch, name)
                with open(self.base_config) as f:
                    cfg = json.load(f)
                del cfg["sandbox"]["workspace"]
                cfg["sandbox"]["zygote"] = zyg
                with open(cfg_path, "w") as f:
                    json.dump(cfg, f)
                cfgs.append(cfg_path)
            zsrv = Server(self.kiln, cfgs[0], self.env, log=cfgs[0] + ".log",
                          params={"rootUri": "file://" + ws_z})
            nsrv = Server(self.kiln, cfgs[1], self.env, log=cfgs[1] + ".log",
                          params={"rootUri": "file://" + ws_n})
            try:
                if not zsrv.wait_ready():
                    return "no run with the workspace came from the zygote"
                for i, code in enumerate(self.WS_PROGRAMS):
                    # Two folders alike, one per server: each run's path
                    # is its own folder's (WS in the code, in stderr).
                    zf, zsame, z = outcome(zsrv, ws_z, code, i)
                    nf, nsame, n = outcome(nsrv, ws_n, code, i)
                    z = json.loads(json.dumps(z).replace(ws_z, "WS"))
                    n = json.loads(json.dumps(n).replace(ws_n, "WS"))
                    if zf != "KILN-ZYGOTE 1" or nf != "KILN-ZYGOTE 0":
                        return "%r: not from the zygote and the normal path: %r %r" % (
                            code, zf, nf)
                    if not zsame or not nsame:
                        return "%r: the host folder changed (%s %s)" % (code, zsame, nsame)
                    if z != n:
                        return "%r: from the zygote %s, on the normal path %s" % (
                            code, json.dumps(z)[:900], json.dumps(n)[:900])
                    if "kiln-ws-secret" in json.dumps(z):
                        return "%r: a secret was shown: %s" % (code, json.dumps(z)[:900])
                return None
            finally:
                for srv, what in ((zsrv, "zygote"), (nsrv, "normal")):
                    rc = srv.stop()
                    if rc != 0:
                        print("workspace case: its %s server exited %s" % (what, rc),
                              flush=True)
        return run

    def workspace_anew_case(self):
        """The zygote's box holds the folder it was built with: a folder
        made anew at the same path (the old one moved away) is another
        folder, and no run may see the old one, through the old zygote or
        through a warm box built with the old folder (warm.c checks the
        folder's identity too): a new zygote serves the runs after it,
        with the new folder."""
        def run():
            top = tempfile.mkdtemp(prefix="kiln-zygote-anew-", dir="/var/tmp")
            self.cleanup.append(top)
            os.chmod(top, 0o755)
            ws = os.path.join(top, "proj")

            def make(text):
                os.mkdir(ws, 0o755)
                os.chmod(ws, 0o755)
                with open(os.path.join(ws, "data.txt"), "w") as f:
                    f.write(text)
                os.chmod(os.path.join(ws, "data.txt"), 0o644)
            make("first folder\n")
            cfg_path = os.path.join(self.scratch, "cfg-anew.json")
            with open(self.base_config) as f:
                cfg = json.load(f)
            del cfg["sandbox"]["workspace"]
            with open(cfg_path, "w") as f:
                json.dump(cfg, f)
            srv = Server(self.kiln, cfg_path, self.env, log=cfg_path + ".log",
                         params={"rootUri": "file://" + ws})
            code = MARK + "print(open('data.txt').read().strip())\n"
            try:
                if not srv.wait_ready():
                    return "no run with the workspace came from the zygote"
                out, err, _, error = srv.run(code)
                if out != "KILN-ZYGOTE 1\nfirst folder\n":
                    return "first folder: %r %r %r" % (out, err[-200:], error)
                os.rename(ws, os.path.join(top, "old"))
                make("second folder\n")
                deadline = time.time() + READY_WAIT_S
                while time.time() < deadline:
                    out, err, _, error = srv.run(code)
                    if out == "KILN-ZYGOTE 1\nsecond folder\n":
                        return None
                    if "first folder" in out:
                        return "a run saw the old folder: %r" % out
                    if out.startswith("KILN-ZYGOTE 1") or error:
                        return "after the folder was made anew: %r %r %r" % (
                            out, err[-200:], error)
                    time.sleep(0.5)
                return "no new zygote for the new folder"
            finally:
                rc = srv.stop()
                if rc != 0:
                    print("workspace-anew case: its server exited %s" % rc, flush=True)
        return run


if __name__ == "__main__":
    main(WorkspaceSuite)
