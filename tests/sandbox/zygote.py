#!/usr/bin/env python3
"""zygote.py: the Python zygote (server/sandbox/zygote.h) keeps every
isolation property of a box, and is fork-safe.

  zygote.py --kiln KILN --attack ATTACK_BIN [--only NAME]...

Every attack case of attacks.py that runs code goes through one server
with sandbox.zygote on (started under `attack plant-key`, with the
suite's secret in its environment): a bash case becomes Python that execs
bash from the zygote's child, so the attack binary starts from a process
forked off the zygote. Each run must show that it came from the zygote
(its first line of output, which the checks do not see), else the case
fails: a silent fallback to a built box would pass every attack. The
cgroup case runs from the zygote too: a spare's pid 1 joins its cgroup
itself (through the cgroup.procs kiln opened), and a grandchild's CPU
must be charged to that cgroup. The protocol and no-user-namespace cases
are attacks.py's own (they do not depend on how the box started). Then the fork-safety cases: random
generators reseeded per child, no thread, socket or secret in the child
(so none in the zygote before the fork), one zygote per interpreter (a
changed interpreter file retires it and a new one is built), and runs
with a workspace come from the zygote and are the normal path's (secrets
hidden, each run's own list).

Prints "ok NAME" / "not ok NAME: why" and "N passed, N failed".
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)),
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib")]
import attacks  # noqa: E402
import kilnrpc  # noqa: E402

# The first line of every run's output: whether its process is a child of
# the zygote (its copy of the interpreter holds the zygote's module).
MARK = ("import sys as _kz\nprint('KILN-ZYGOTE', int('kiln_zygote' in _kz.modules), "
        "flush=True)\ndel _kz\n")
READY_WAIT_S = 120
# Python for a program: the pipes it holds past stdio in `pipes` (the
# end-report pipe among them, zygote.py's _END_FD).
PIPE_FDS = ("pipes = []\n"
            "for f in os.listdir('/proc/self/fd'):\n"
            "    try:\n"
            "        if int(f) > 2 and os.readlink('/proc/self/fd/' + f).startswith('pipe:'):\n"
            "            pipes.append(int(f))\n"
            "    except OSError:\n"
            "        pass\n")


class Server:
    """One kiln server, its runs through snippet/run."""

    def __init__(self, kiln, config, env, wrap=(), log=None, params=None):
        self.logpath = log or config + ".log"
        self.log = open(self.logpath, "wb")
        self.p = subprocess.Popen(list(wrap) + [kiln, "--config", config], env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.log)
        self.rid = 0
        kilnrpc.send(self.p, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                              "params": params or {}})
        kilnrpc.recv(self.p.stdout)

    def run(self, code, limits=None, displays=None):
        """(stdout, stderr, result or None, error message or None); the
        run's displays (run/display params) are appended to displays."""
        self.rid += 1
        params = {"language": "python", "code": code, "override": True}
        if limits:
            params["limits"] = limits
        kilnrpc.send(self.p, {"jsonrpc": "2.0", "id": self.rid, "method": "snippet/run",
                              "params": params})
        out, err = [], []
        while True:
            m = kilnrpc.recv(self.p.stdout)
            if m is None:
                raise AssertionError("the server ended")
            if m.get("method") == "run/output":
                (err if m["params"]["stream"] == "stderr" else out).append(m["params"]["text"])
            elif m.get("method") == "run/display" and displays is not None:
                displays.append(m["params"])
            elif m.get("id") == self.rid:
                if "error" in m:
                    return "".join(out), "".join(err), None, m["error"]["message"]
                return "".join(out), "".join(err), m["result"], None

    def wait_ready(self):
        """Until a run comes from the zygote (it is built after the first
        Python run asks for it)."""
        deadline = time.time() + READY_WAIT_S
        while time.time() < deadline:
            out, _, _, _ = self.run(MARK)
            if out.startswith("KILN-ZYGOTE 1"):
                return True
            time.sleep(0.5)
        return False

    def stop(self):
        try:
            self.rid += 1
            kilnrpc.send(self.p, {"jsonrpc": "2.0", "id": self.rid, "method": "shutdown"})
            kilnrpc.recv(self.p.stdout)
            kilnrpc.send(self.p, {"jsonrpc": "2.0", "method": "exit"})
            self.p.stdin.close()
            rc = self.p.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()
            rc = -1
        if rc != 0:
            with open(self.logpath, "rb") as f:
                sys.stdout.write(f.read()[-3000:].decode("utf-8", "replace"))
        return rc


class ZygoteSuite(attacks.Suite):
    def __init__(self, args):
        super().__init__(args)
        with open(self.config) as f:
            cfg = json.load(f)
        cfg["sandbox"]["zygote"] = True
        self.base_config = os.path.join(self.scratch, "config-zygote.json")
        with open(self.base_config, "w") as f:
            json.dump(cfg, f)
        self.config = self.base_config
        self.server = None
        self.cleanup = []

    def finish(self):
        for d in self.cleanup:
            shutil.rmtree(d, ignore_errors=True)
        return super().finish()

    def start(self):
        # Under plant-key: a key in the server's session keyring that no
        # run may read (session-keyring).
        self.server = Server(self.kiln, self.base_config, self.env,
                             wrap=[os.path.abspath(self.attack_bin), "plant-key"])
        if not self.server.wait_ready():
            raise AssertionError("no run came from the zygote in %d s" % READY_WAIT_S)

    def box_processes(self):
        """As attacks.py's, but the zygote itself is not a run's process:
        the one process of the mark whose parent is not the zygote's code
        (its parent is its box's pid 1, a kiln). Nor is the spare, the
        next run's box made ahead: its pid 1 (a child of the zygote,
        named kiln-spare until its run comes, which only the zygote's
        code writes; so is the child the zygote clones ahead for the
        spare after it) and the one process it forks. A run's process can
        name itself so, but its parent is then a run's pid 1 ("kiln")."""
        def cmd(pid):
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    return f.read()
            except OSError:
                return b""

        def ppid(pid):
            try:
                with open("/proc/%s/stat" % pid) as f:
                    return f.read().rsplit(")", 1)[1].split()[1]
            except (OSError, IndexError):
                return "0"

        def zygote(pid):
            return b"kiln_zygote" in cmd(pid) and b"kiln_zygote" not in cmd(ppid(pid))

        def spare_pid1(pid):
            return cmd(pid).rstrip(b"\0") == b"kiln-spare" and zygote(ppid(pid))
        return [p for p in super().box_processes()
                if not (zygote(p) or spare_pid1(p) or
                        (cmd(p).rstrip(b"\0") == b"kiln-spare" and spare_pid1(ppid(p))))]

    def kiln_run(self, lang, code, timeout=None, wrap=None, extra_env=None):
        """attacks.py's `kiln run`, through the server's zygote."""
        if lang == "bash":
            code = "import os\nos.execv('/bin/bash', ['bash', '-c', %r])\n" % code
        elif lang != "python":
            raise AssertionError("no %s through the zygote" % lang)
        with open(self.config) as f:
            limits = dict(json.load(f)["sandbox"].get("limits", {}))
        if timeout:
            limits["wallMs"] = int(timeout * 1000)
        out, err, res, error = self.server.run(MARK + code, limits)
        first, _, rest = out.partition("\n")
        if error:
            return 1, rest, error, None
        if first != "KILN-ZYGOTE 1":
            raise AssertionError("the run did not come from the zygote: %r" % out[:200])
        if res["timedOut"]:
            rc = 124
        elif res["exitCode"] is not None:
            rc = res["exitCode"]
        else:
            rc = 128 + getattr(signal, res["signal"], signal.SIGKILL)
        return rc, rest, err, res

    # attacks.py's cases that do not run code in a box of this server.
    def protocol_cases(self):
        pass

    def no_userns_case(self):
        return lambda: None

    def case(self, name, fn):
        if name == "no-user-namespaces-refuses":
            return
        if name == "cgroup-holds-the-whole-box":
            # From the zygote its pid 1 joins its cgroup itself (zygote.c's
            # spare_cgroup): its own name, for KILN_TEST_ONLY.
            name = "zygote-" + name
        super().case(name, fn)

    # --- fork-safety ----------------------------------------------------------

    def fork_safety_cases(self):
        self.case("zygote-random-reseeded", self.random_case())
        self.case("zygote-child-has-no-thread-socket-or-secret", self.clean_case())
        self.case("zygote-rebuilt-when-the-interpreter-changes", self.interpreter_case())
        self.case("zygote-workspace-as-the-normal-path", self.workspace_case())
        self.case("zygote-workspace-made-anew-retires-it", self.workspace_anew_case())
        self.case("zygote-each-run-its-own-limits", self.limits_case())
        self.case("zygote-oneshot-as-the-normal-path", self.oneshot_case())
        self.case("zygote-end-report-forged-ends-only-its-own-run", self.forged_end_case())
        self.case("zygote-end-report-not-from-a-forked-child", self.forked_end_case())
        self.case("zygote-end-report-kills-what-is-left", self.left_end_case())
        self.case("zygote-end-report-rusage", self.rusage_end_case())

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
        folder, and no run may see the old one through the old zygote: a
        new zygote serves the runs after it, with the new folder. (The
        run right after may come from a warm box built with the old
        folder, as on the normal path.)"""
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

    def limits_case(self):
        """A run's box is made before its run (the spare) with the
        configured sizes: the run's own limits (smaller scratch tmpfs,
        fewer processes, a smaller file size) are what its code sees, and
        the next run, with the configured ones, does not keep them. Each
        run also finds /tmp and /work empty of the last run's files."""
        code = ("import os, resource\n"
                "for d in ('/tmp', '/work'):\n"
                "    v = os.statvfs(d)\n"
                "    print(d, v.f_blocks * v.f_frsize, v.f_files)\n"
                "print('NPROC', resource.getrlimit(resource.RLIMIT_NPROC)[0])\n"
                "print('FSIZE', resource.getrlimit(resource.RLIMIT_FSIZE)[0])\n"
                "print('LEFT', sorted(os.listdir('/tmp')), sorted(os.listdir('/work')))\n"
                "open('/tmp/left', 'w').close()\n"
                "open('/work/left', 'w').close()\n")
        small = {"tmpfsBytes": 8 << 20, "processes": 17, "fileSizeBytes": 5 << 20}

        def run():
            with open(self.config) as f:
                base = dict(json.load(f)["sandbox"].get("limits", {}))
            want_default = base.get("tmpfsBytes", 64 << 20)
            seen = []
            for lim in (dict(base, **small), base, dict(base, **small)):
                out, err, res, error = self.server.run(MARK + code, lim)
                first, _, rest = out.partition("\n")
                if error or first != "KILN-ZYGOTE 1":
                    return "run: %r %r %r" % (out[:300], err[-300:], error)
                seen.append(rest.splitlines())
            for got, lim in zip(seen, (small, None, small)):
                size = lim["tmpfsBytes"] if lim else want_default
                want = ["/tmp %d %d" % (size, size // 4096), "/work %d %d" % (size, size // 4096),
                        "LEFT [] ['out']"]
                if lim:
                    want += ["NPROC 17", "FSIZE %d" % (5 << 20)]
                missing = [w for w in want if w not in got]
                if missing:
                    return "limits %r: missing %r in %r" % (lim, missing, got)
            return None
        return run

    # Programs whose run from the zygote must match the normal path's
    # (server/sandbox/oneshot.py): output, exit, traceback, displays.
    ONESHOT_PROGRAMS = [
        ("print('a')\n2+2", None),
        ("x = 1\nNone", None),
        ("import sys\nprint(sys.argv, __name__, __file__, sys.path[0])\n"
         "def f():\n    1/0\nf()", None),
        ("import sys\nsys.exit(3)", None),
        ("import sys\nsys.exit('bye')", None),
        ("display('x')\nprint('b')\n{'k': [1, 2]}", None),
        ("raise KeyboardInterrupt", None),
        ("import os\nprint(os.environ.get('MPLBACKEND'))\nimport matplotlib\n"
         "print(matplotlib.get_backend())", None),
        ("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\n"
         "plt.figure()\nplt.plot([2, 1])\nprint('drawn')", None),
        ("import pandas as pd\ndf = pd.DataFrame({'m': [1, 2], 'v': [3, 4]})\ndf['v']", None),
        ("print('y' * 20)\n'z' * 2000", {"outputBytes": 1024}),
        # The program's end is reported before its process is gone
        # (zygote.py's _report_end): all of its output first, in order.
        ("import sys\nfor i in range(300):\n    print('o%d' % i + 'x' * 900)\n"
         "    if i % 50 == 0:\n        print('e%d' % i, file=sys.stderr, flush=True)\n"
         "sys.stdout.write('tail')", None),
    ]

    def oneshot_case(self):
        """A one-shot run from the zygote is the normal path's, seen from
        the client: the same stdout (but the mark), stderr, exit status
        and displays, for each of ONESHOT_PROGRAMS, against a server with
        the zygote off."""
        def outcome(srv, code, limits):
            shown = []
            out, err, res, error = srv.run(MARK + code, limits, shown)
            first, _, rest = out.partition("\n")
            res = res or {}
            return first, (rest, err, error, res.get("exitCode"), res.get("signal"),
                           [d["data"] for d in shown])

        def run():
            cfg_path = os.path.join(self.scratch, "cfg-normal.json")
            with open(self.base_config) as f:
                cfg = json.load(f)
            cfg["sandbox"]["zygote"] = False
            with open(cfg_path, "w") as f:
                json.dump(cfg, f)
            normal = Server(self.kiln, cfg_path, self.env, log=cfg_path + ".log")
            try:
                for code, limits in self.ONESHOT_PROGRAMS:
                    zf, z = outcome(self.server, code, limits)
                    nf, n = outcome(normal, code, limits)
                    if zf != "KILN-ZYGOTE 1" or nf != "KILN-ZYGOTE 0":
                        return "%r: not from the zygote and the normal path: %r %r" % (
                            code, zf, nf)
                    if z != n:
                        return "%r: from the zygote %s, on the normal path %s" % (
                            code, json.dumps(z)[:700], json.dumps(n)[:700])
                return None
            finally:
                rc = normal.stop()
                if rc != 0:
                    print("one-shot case: the normal server exited %s" % rc, flush=True)
        return run

    # --- the end report (zygote.py's _report_end) ---------------------------------

    def zygote_run(self, code, limits=None):
        """(stdout without the mark, stderr, result) of code run from the
        zygote; raises if the run failed or did not come from it."""
        out, err, res, error = self.server.run(MARK + code, limits)
        first, _, rest = out.partition("\n")
        if error or first != "KILN-ZYGOTE 1":
            raise AssertionError("run: %r %r %r" % (out[:300], err[-300:], error))
        return rest, err, res

    def forged_end_case(self):
        """The code can write its own end report (the pipe is in its
        process): that ends its run, with the status it wrote, and its
        output up to there, as os._exit() would. It cannot reach another
        run: the records it writes after the first, and those of a
        process it left behind, are never read as the next runs' ends."""
        forge = (
            "import os, struct, time\n"
            + PIPE_FDS +
            "print('PIPES', len(pipes), flush=True)\n"
            "def rec(code):\n"
            "    return struct.pack('=4siqqq', b'kend', code << 8, 0, 0, 0)\n"
            "go_r, go_w = os.pipe()\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    os.read(go_r, 1)  # once the program's forged end is written\n"
            "    for _ in range(500):\n"
            "        for fd in pipes:\n"
            "            try:\n"
            "                os.write(fd, rec(9))\n"
            "            except OSError:\n"
            "                pass\n"
            "        time.sleep(0.01)\n"
            "    os._exit(0)\n"
            "for fd in pipes:\n"
            "    os.write(fd, rec(7))\n"
            "    for _ in range(5):\n"
            "        os.write(fd, rec(9))\n"
            "os.write(go_w, b'g')\n"
            "time.sleep(5)\n"
            "print('after the forged end')\n")
        after = [("import time\ntime.sleep(0.3)\nprint('whole')\nraise SystemExit(4)\n",
                  "whole\n", 4),
                 ("print('next')\n", "next\n", 0)]

        def run():
            out, err, res = self.zygote_run(forge)
            if out != "PIPES 1\n" or res["exitCode"] != 7:
                return "forged: %r %r exit %r signal %r" % (out, err[-300:], res["exitCode"],
                                                           res["signal"])
            for code, want, rc in after:
                out, err, res = self.zygote_run(code)
                if out != want or res["exitCode"] != rc:
                    return "the run after a forged end: %r %r exit %r signal %r" % (
                        out, err[-300:], res["exitCode"], res["signal"])
            return None
        return run

    def forked_end_case(self):
        """A process the code forks runs to the code's end too (fork in
        Python): its end is not the program's, and does not end the run."""
        code = ("import os, time\n"
                "if os.fork() == 0:\n"
                "    print('child', flush=True)\n"
                "else:\n"
                "    os.wait()\n"
                "    time.sleep(0.2)\n"
                "    print('parent')\n")

        def run():
            out, err, res = self.zygote_run(code)
            if out != "child\nparent\n" or res["exitCode"] != 0:
                return "%r %r exit %r signal %r" % (out, err[-300:], res["exitCode"],
                                                    res["signal"])
            return None
        return run

    def left_end_case(self):
        """The run is reported as soon as the program's end is: what is
        left running is killed all the same (check_host, after every
        case). First what the program started (in a session of its own,
        its output elsewhere, so that nothing holds the run open); then
        the program's own process, which closes its output and writes an
        end report (0) but goes on: pid 1 kills it on the report, not
        only once it has ended."""
        left = ("import subprocess\n"
                "for _ in range(2):\n"
                "    subprocess.Popen(['sleep', '300'], stdin=subprocess.DEVNULL,\n"
                "                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,\n"
                "                     start_new_session=True)\n"
                "print('left')\n")
        lingers = ("import os, struct, sys, time\n"
                   + PIPE_FDS +
                   "print('lingers', len(pipes), flush=True)\n"
                   "os.close(1)\n"
                   "os.close(2)\n"
                   "for fd in pipes:\n"
                   "    os.write(fd, struct.pack('=4siqqq', b'kend', 0, 0, 0, 0))\n"
                   "time.sleep(300)\n")

        def run():
            for code, want in ((left, "left\n"), (lingers, "lingers 1\n")):
                out, err, res = self.zygote_run(code)
                if out != want or res["exitCode"] != 0:
                    return "%r %r exit %r" % (out, err[-300:], res["exitCode"])
            return None
        return run

    def rusage_end_case(self):
        """CPU time and peak memory come with the end report, read in the
        program's process just before it ends: a run's own figures."""
        code = ("b = bytearray(200 << 20)\n"
                "for i in range(0, len(b), 4096):\n"
                "    b[i] = 1\n"
                "x = 0\n"
                "for i in range(3 * 10**6):\n"
                "    x += i\n"
                "print('done')\n")

        def run():
            out, err, res = self.zygote_run(code)
            if out != "done\n" or res["exitCode"] != 0:
                return "%r %r exit %r" % (out, err[-300:], res["exitCode"])
            if res["maxRssKb"] < (200 << 10) or res["cpuMs"] < 20:
                return "maxRssKb %r, cpuMs %r" % (res["maxRssKb"], res["cpuMs"])
            return None
        return run

    def random_case(self):
        code = ("import random, numpy\n"
                "print(random.random(), random.getrandbits(64), numpy.random.rand(),"
                " numpy.random.randint(1 << 62))\n")

        def run():
            seen = []
            for _ in range(3):
                rc, out, err, res = self.kiln_run("python", code)
                if rc != 0:
                    return "rc=%s %r" % (rc, err[-300:])
                seen.append(out.split())
            for i, what in enumerate(("random", "random", "numpy", "numpy")):
                if len({s[i] for s in seen}) != len(seen):
                    return "%s repeats across children of one zygote: %r" % (what, seen)
            return None
        return run

    def clean_case(self):
        # The secret's prefix is in this code, never a whole secret: a hit
        # followed by its 16 hex digits is the server's secret (or another).
        code = (
            "import os, re\n"
            "status = open('/proc/self/status').read()\n"
            "print('THREADS', status.split('Threads:')[1].split()[0])\n"
            "socks = []\n"
            "for fd in os.listdir('/proc/self/fd'):\n"
            "    try:\n"
            "        if os.readlink('/proc/self/fd/' + fd).startswith('socket:'):\n"
            "            socks.append(fd)\n"
            "    except OSError:\n"
            "        pass\n"
            "print('SOCKETS', socks)\n"
            "pat = re.compile(rb'kiln-sec' rb'ret-[0-9a-f]{16}')\n"
            "hits = 0\n"
            "mem = open('/proc/self/mem', 'rb', buffering=0)\n"
            "for line in open('/proc/self/maps'):\n"
            "    f = line.split()\n"
            "    lo, hi = (int(x, 16) for x in f[0].split('-'))\n"
            "    if 'r' not in f[1] or hi - lo > (512 << 20) or (len(f) > 5 and f[5].startswith('[v')):\n"
            "        continue\n"
            "    try:\n"
            "        mem.seek(lo)\n"
            "        if pat.search(mem.read(hi - lo)):\n"
            "            hits += 1\n"
            "    except (OSError, OverflowError, ValueError):\n"
            "        pass\n"
            "print('SECRETS', hits)\n")

        def run():
            rc, out, err, res = self.kiln_run("python", code)
            want = ["THREADS 1", "SOCKETS []", "SECRETS 0"]
            got = out.splitlines()
            missing = [w for w in want if w not in got]
            return "rc=%s saw %r (%r)" % (rc, got, err[-300:]) if missing or rc != 0 else None
        return run

    def interpreter_case(self):
        """A server whose python is a copy of python3 in a folder of its
        own: replacing that file retires the zygote, and the next one is
        new (its start time differs)."""
        def run():
            # Not under /tmp, which every box covers with its own.
            top = tempfile.mkdtemp(prefix="kiln-zygote-py-", dir="/var/tmp")
            self.cleanup.append(top)
            os.chmod(top, 0o755)
            pydir = os.path.join(top, "bin")
            os.makedirs(pydir)
            py = os.path.join(pydir, "python3")
            shutil.copy2("/usr/bin/python3", py)
            os.chmod(py, 0o755)
            cfg_path = os.path.join(self.scratch, "cfg-interp.json")
            with open(self.base_config) as f:
                cfg = json.load(f)
            cfg["sandbox"]["languages"] = {"python": {"argv": [py, "{file}"],
                                                      "file": "snippet.py"}}
            cfg["sandbox"]["zygotePreload"] = ["json"]
            with open(cfg_path, "w") as f:
                json.dump(cfg, f)
            srv = Server(self.kiln, cfg_path, self.env, log=cfg_path + ".log")
            try:
                if not srv.wait_ready():
                    return "no zygote with the copied interpreter"
                probe = MARK + "import sys\nprint(sys.modules['kiln_zygote'].STARTED_NS)\n"
                out, err, _, _ = srv.run(probe)
                first = out.splitlines()
                os.unlink(py)
                shutil.copy(sys.executable if os.path.realpath(sys.executable).startswith("/usr/")
                            else "/usr/bin/python3", py)
                os.chmod(py, 0o755)
                out2, _, _, _ = srv.run(probe)
                if out2.startswith("KILN-ZYGOTE 1"):
                    return "the old zygote served a run after its interpreter changed"
                if not srv.wait_ready():
                    return "no new zygote after the interpreter changed"
                out3, _, _, _ = srv.run(probe)
                second = out3.splitlines()
                if len(first) < 2 or len(second) < 2 or first[1] == second[1]:
                    return "not a new zygote: %r then %r (%r)" % (first, second, err[-200:])
                return None
            finally:
                rc = srv.stop()
                if rc != 0:
                    print("interpreter case: its server exited %s" % rc, flush=True)

        return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--attack", required=True)
    ap.add_argument("--only", action="append")
    args = ap.parse_args()
    args.kiln_release = None
    args.no_box = False
    s = ZygoteSuite(args)
    s.listing = True
    s.all_cases()
    s.fork_safety_cases()
    s.listing = False
    want = [n for n in s.listed if not s.only or n in s.only]
    try:
        s.start()
        s.all_cases()
        s.fork_safety_cases()
    except Exception:
        traceback.print_exc()
        print("not ok the suite itself: stopped on an exception", flush=True)
        s.failed += 1
    if s.server:
        rc = s.server.stop()
        if rc != 0:
            print("not ok server-exit: the server exited %s" % rc, flush=True)
            s.failed += 1
    for n in want:
        if n not in s.ran and n != "no-user-namespaces-refuses":
            print("not ok %s: not run (the suite stopped before it)" % n, flush=True)
            s.failed += 1
    sys.exit(s.finish())


if __name__ == "__main__":
    main()
