#!/usr/bin/env python3
"""zygote_runs.py: a run from the Python zygote (server/sandbox/pools/zygote.h)
is the normal path's: its own limits in a box made before it was asked
for (the spare), nothing left of the run before, and the one-shot
runner's output, exit, traceback and displays as a built box gives them.

Run as zygote.py is (its main(), usage and output), against a server
of its own.
"""
import json
import os
import time

import kilnrpc
from zygote import MARK, READY_WAIT_S, Server, ZygoteSuite, main


class RunsSuite(ZygoteSuite):
    """Runs from the zygote against the normal path's."""

    def cases(self):
        self.case("zygote-each-run-its-own-limits", self.limits_case())
        self.case("zygote-oneshot-as-the-normal-path", self.oneshot_case())
        self.case("zygote-stdout-pipe-one-notification", self.stdout_pipe_case())
        self.case("zygote-warm-boxes-off-nothing-ahead", self.warm_off_case())
        self.case("zygote-queued-signals-not-shared", self.queued_signals_case())
        self.case("zygote-main-as-bare", self.main_as_bare_case())

    @staticmethod
    def spares(root):
        """The processes under root named kiln-spare: a spare's pid 1
        (and the one it forks) and the child the zygote clones ahead for
        the next spare, each named so until its run comes (zygote.py)."""
        def read(path):
            try:
                with open(path, "rb") as f:
                    return f.read()
            except OSError:
                return b""
        kids = {}
        for p in os.listdir("/proc"):
            if p.isdigit():
                stat = read("/proc/%s/stat" % p).rsplit(b")", 1)
                if len(stat) == 2 and len(stat[1].split()) > 1:
                    kids.setdefault(int(stat[1].split()[1]), []).append(int(p))
        found, todo = [], [root]
        while todo:
            for c in kids.get(todo.pop(), []):
                todo.append(c)
                if read("/proc/%d/cmdline" % c).rstrip(b"\0") == b"kiln-spare":
                    found.append(c)
        return found

    def warm_off_case(self):
        """sandbox.warmBoxes false means nothing is built ahead, the
        zygote's spare included: once a run came from the zygote, no
        spare waits while the server is idle, and the next run still
        comes from the zygote (it asks for its box when it comes and
        waits for it). With warm boxes on (this suite's server), a spare
        waits for the next run."""
        def run():
            # On: the spare is asked for when a run ends.
            out, _, res, error = self.server.run(MARK + "print(1)\n")
            if error or not out.startswith("KILN-ZYGOTE 1") or res.get("zygote") is not True:
                return "warm boxes on: the run: %r %r %r" % (out[:200], error, res)
            deadline = time.time() + READY_WAIT_S
            while not self.spares(self.server.p.pid):
                if time.time() > deadline:
                    return "warm boxes on: no spare waits after a run from the zygote"
                time.sleep(0.05)
            cfg_path = os.path.join(self.scratch, "cfg-warm-off.json")
            with open(self.base_config) as f:
                cfg = json.load(f)
            cfg["sandbox"]["warmBoxes"] = False
            with open(cfg_path, "w") as f:
                json.dump(cfg, f)
            off = Server(self.kiln, cfg_path, self.env, log=cfg_path + ".log")
            try:
                why = self.nothing_ahead(off)
            finally:
                rc = off.stop()
            if why is None and rc != 0:
                why = "warm boxes off: the server exited %s" % rc
            return why
        return run

    def nothing_ahead(self, off):
        """warm_off_case's half against the server with warm boxes off."""
        if not off.wait_ready():
            return "warm boxes off: no run came from the zygote"
        for i in range(3):
            # Idle for far longer than a spare takes to be made
            # (milliseconds; the server above had one at once).
            time.sleep(1.0)
            left = self.spares(off.p.pid)
            if left:
                return ("warm boxes off: %d kiln-spare processes wait while idle "
                        "(after %d runs from the zygote)" % (len(left), i + 1))
            out, err, res, error = off.run(MARK + "print(%d)\n" % i)
            if (error or out != "KILN-ZYGOTE 1\n%d\n" % i or not res or
                    res.get("zygote") is not True or res.get("warmBox")):
                return "warm boxes off: run %d not from the zygote: %r %r %r %r" % (
                    i, out[:200], err[-300:], error, res)
        return None

    def stdout_pipe_case(self):
        """A run from the zygote writes into a stdout pipe as large as a
        built box's (256 KiB, box.c's sbx_box_size_stdout): with the
        default 64 KiB its program blocked four times as often and every
        process spent 3-4 times the CPU per byte (docs/performance-log.md,
        "Output, late evening")."""
        def run():
            out, err, res, error = self.server.run(
                MARK + "import fcntl\nprint(fcntl.fcntl(1, 1032))\n")
            want = "KILN-ZYGOTE 1\n%d\n" % (256 << 10)
            if error or out != want or not res or res.get("zygote") is not True:
                return "stdout's pipe: %r %r %r %r" % (out, err[-300:], error, res)
            return None
        return run

    # Queue real-time signals to itself (blocked, so they stay queued)
    # until the kernel refuses one: how many it took, and the errno.
    HOG_SIGNALS = ("import ctypes, os, signal\n"
                   "libc = ctypes.CDLL(None, use_errno=True)\n"
                   "sig = signal.SIGRTMIN + 1\n"
                   "signal.pthread_sigmask(signal.SIG_BLOCK, [sig])\n"
                   "class V(ctypes.Union):\n"
                   "    _fields_ = [('i', ctypes.c_int), ('p', ctypes.c_void_p)]\n"
                   "n = 0\n"
                   "while n < 100000 and libc.sigqueue(os.getpid(), sig, V(0)) == 0:\n"
                   "    n += 1\n"
                   "print('QUEUED', n, ctypes.get_errno())\n")
    # One queued signal and one POSIX timer (each takes a queue entry).
    ONE_SIGNAL = ("import ctypes, os, signal\n"
                  "libc = ctypes.CDLL(None, use_errno=True)\n"
                  "sig = signal.SIGRTMIN + 2\n"
                  "signal.pthread_sigmask(signal.SIG_BLOCK, [sig])\n"
                  "class V(ctypes.Union):\n"
                  "    _fields_ = [('i', ctypes.c_int), ('p', ctypes.c_void_p)]\n"
                  "ctypes.set_errno(0)\n"
                  "r = libc.sigqueue(os.getpid(), sig, V(0))\n"
                  "print('SIGQUEUE', r, ctypes.get_errno() if r else 0)\n"
                  "t = ctypes.c_void_p()\n"
                  "r = libc.timer_create(1, None, ctypes.byref(t))\n"
                  "print('TIMER', r, ctypes.get_errno() if r else 0)\n")

    def call(self, method, params):
        """One request to this suite's server: (reply, its run's output)."""
        srv = self.server
        srv.rid += 1
        kilnrpc.send(srv.p, {"jsonrpc": "2.0", "id": srv.rid, "method": method,
                             "params": params})
        out = []
        while True:
            m = kilnrpc.recv(srv.p.stdout)
            if m is None:
                raise AssertionError("the server ended")
            if m.get("method") == "run/output":
                out.append(m["params"]["text"])
            elif m.get("id") == srv.rid:
                return m, "".join(out)

    def queued_signals_case(self):
        """The kernel counts queued signals per user up the user
        namespaces, and each level's ceiling is the limit its maker had:
        a run's namespace is made by the zygote, so with the zygote at a
        box's 128 all its runs and sessions shared 128. A session from
        the zygote that holds its 128 (its own limit, still) left every
        later run from the zygote none: sigqueue() and timer_create()
        failed with EAGAIN, which a built box never sees (zygote.c's
        zygote_rlimits; mutation zygote-signal-quota-shared)."""
        def open_from_zygote():
            # A session takes the zygote's spare when one is ready (made
            # when the last run ended); otherwise it gets a built box:
            # closed, and another opened once a spare has been made.
            deadline = time.time() + READY_WAIT_S
            while time.time() < deadline:
                if not self.server.wait_ready():
                    break
                time.sleep(0.5)
                m, out = self.call("session/open", {"language": "python"})
                if "result" not in m:
                    return None, "session/open: %r" % m
                sid = m["result"]["sessionId"]
                m, out = self.call("snippet/run", {"sessionId": sid, "override": True,
                                                   "code": MARK + self.HOG_SIGNALS})
                if out.startswith("KILN-ZYGOTE 1\n"):
                    return sid, (m, out)
                self.call("session/close", {"sessionId": sid})
            return None, "no session came from the zygote"

        def run():
            sid, got = open_from_zygote()
            if sid is None:
                return got
            try:
                m, out = got
                # A box's own limit holds in the session: 128, then EAGAIN.
                if "result" not in m or out != "KILN-ZYGOTE 1\nQUEUED 128 11\n":
                    return "the session (from the zygote) queued: %r %r" % (out, m)
                # The next spare is made once the session's run is over:
                # until then a run takes the normal path.
                zygote_runs = 0
                deadline = time.time() + READY_WAIT_S
                while zygote_runs < 2 and time.time() < deadline:
                    time.sleep(0.3)
                    out, err, res, error = self.server.run(MARK + self.ONE_SIGNAL)
                    if error or not res:
                        return "run: %r %r %r" % (out, err[-300:], error)
                    if res.get("zygote") is not True:
                        continue
                    zygote_runs += 1
                    if out != "KILN-ZYGOTE 1\nSIGQUEUE 0 0\nTIMER 0 0\n":
                        return ("a run from the zygote while a session holds its own "
                                "queued signals: %r" % out)
                if zygote_runs < 2:
                    return "no run came from the zygote after the session's"
                return None
            finally:
                self.call("session/close", {"sessionId": sid})
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
    # (server/sandbox/guest/oneshot.py): output, exit, traceback, displays.
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
        # (zygote_program.py's _report_end): all of its output first, in order.
        ("import sys\nfor i in range(300):\n    print('o%d' % i + 'x' * 900)\n"
         "    if i % 50 == 0:\n        print('e%d' % i, file=sys.stderr, flush=True)\n"
         "sys.stdout.write('tail')", None),
    ]

    def oneshot_case(self):
        """A one-shot run from the zygote is the normal path's, seen from
        the client: the same stdout (but the mark), stderr, exit status
        and displays, for each of ONESHOT_PROGRAMS, against a server with
        the zygote off; only the result's `zygote` tells them apart."""
        def outcome(srv, code, limits):
            shown = []
            out, err, res, error = srv.run(MARK + code, limits, shown)
            first, _, rest = out.partition("\n")
            res = res or {}
            # The result says where the box came from (its `zygote`).
            first = (first, res.get("zygote"))
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
                    if zf != ("KILN-ZYGOTE 1", True) or nf != ("KILN-ZYGOTE 0", False):
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

    # A script whose doctests count the module's items (issue 35: one
    # helper name the runner left in __main__ made "2 items had no
    # tests" of bare python's "1"), and that prints what __main__,
    # sys.argv and sys.path[0] hold, its own path as FILE and folder as
    # DIR (the bare copy cannot be at /code/snippet.py). Its docstring is
    # the first statement (no MARK: the result's `zygote` says where the
    # run came from), its last expression is displayed by the runner.
    BARE_PROBE = (
        '"""A module whose doctests count its items.\n\n>>> 1 + 1\n2\n"""\n'
        'print("START", list(globals()))\n'
        "import builtins\nimport doctest\nimport os\nimport sys\n\n\n"
        "def add(a, b):\n"
        '    """\n    >>> add(1, 2)\n    3\n    """\n'
        "    return a + b\n\n\n"
        "def untested():\n    return None\n\n\n"
        "class Plain:\n    pass\n\n\n"
        "here = os.path.dirname(__file__)\n"
        'print("NAMES", [(k, type(v).__name__) for k, v in globals().items()])\n'
        'print("MAIN", sys.modules["__main__"].__dict__ is globals(), __name__, __package__,\n'
        "      __spec__, __cached__, __builtins__ is builtins, __doc__.splitlines()[0])\n"
        'print("LOADER", type(__loader__).__module__, type(__loader__).__name__,\n'
        '      getattr(__loader__, "name", None),\n'
        '      str(getattr(__loader__, "path", None)).replace(__file__, "FILE"))\n'
        'print("ANNOTATIONS", globals().get("__annotations__", "none"))\n'
        'print("ARGV", [a.replace(__file__, "FILE") for a in sys.argv],\n'
        '      sys.path[0].replace(here, "DIR"), os.path.basename(__file__))\n'
        "print(doctest.testmod(verbose=True))\n"
        "print(len(doctest.DocTestFinder().find(sys.modules['__main__'])))\n"
        "'shown'\n")

    def main_as_bare_case(self):
        """__main__ holds exactly what `python3 FILE` gives it, and
        sys.argv and sys.path[0] are as bare: BARE_PROBE through kiln's
        Python against the same file run by the same /usr/bin/python3
        from a bash snippet in a box of the same server, on each path:
        one-shot from the zygote (this suite's server), one-shot on the
        normal path with nothing built ahead (a box and interpreter of
        its own: zygote and warmBoxes off), and the zygote's script mode
        (a configured `python3 {file}` argv). The runner's displays still
        work: the last expression is displayed where the runner runs
        (mutation oneshot-main-helper-name)."""
        bare = ("mkdir -p /tmp/bare && cat >/tmp/bare/snippet.py <<'KILN_PROBE_EOF'\n" +
                self.BARE_PROBE + "KILN_PROBE_EOF\n"
                "exec /usr/bin/python3 /tmp/bare/snippet.py\n")

        def compare(label, srv, zygote, shown_want):
            shown = []
            out, err, res, error = srv.run(self.BARE_PROBE, None, shown)
            bout, berr, bres, berror = srv.run(bare, language="bash")
            if error or berror or not res or not bres:
                return "%s: the runs: %r %r %r %r" % (label, error, berror, err[-400:],
                                                       berr[-400:])
            if res.get("zygote") is not zygote:
                return "%s: the run's zygote is %r, not %r" % (label, res.get("zygote"), zygote)
            if not out.startswith("START ") or "Test passed." not in out:
                return "%s: the probe did not run: %r %r" % (label, out[:600], err[-600:])
            if (out, err, res.get("exitCode")) != (bout, berr, bres.get("exitCode")):
                return "%s: kiln's %r %r %r, bare %r %r %r" % (
                    label, out, err[-300:], res.get("exitCode"), bout, berr[-300:],
                    bres.get("exitCode"))
            got = [d["data"] for d in shown]
            if got != shown_want:
                return "%s: displays %r, not %r" % (label, got, shown_want)
            return None

        def server(name, sandbox):
            cfg_path = os.path.join(self.scratch, "cfg-%s.json" % name)
            with open(self.base_config) as f:
                cfg = json.load(f)
            cfg["sandbox"].update(sandbox)
            with open(cfg_path, "w") as f:
                json.dump(cfg, f)
            return Server(self.kiln, cfg_path, self.env, log=cfg_path + ".log")

        def run():
            shown = [{"text/plain": "'shown'"}]
            why = compare("one-shot from the zygote", self.server, True, shown)
            if why:
                return why
            cold = server("cold", {"zygote": False, "warmBoxes": False})
            try:
                why = compare("one-shot, a box built for it", cold, False, shown)
            finally:
                rc = cold.stop()
            if why or rc != 0:
                return why or "the cold server exited %s" % rc
            script = server("script", {"languages": {"python": {
                "argv": ["/usr/bin/python3", "{file}"], "file": "snippet.py"}}})
            try:
                if not script.wait_ready():
                    return "script mode: no run came from the zygote"
                why = compare("script mode from the zygote", script, True, [])
            finally:
                rc = script.stop()
            return why or (None if rc == 0 else "the script server exited %s" % rc)
        return run


if __name__ == "__main__":
    main(RunsSuite)
