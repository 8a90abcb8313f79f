#!/usr/bin/env python3
"""zygote.py: the Python zygote (server/sandbox/pools/zygote.h) keeps every
isolation property of a box; and what the zygote's other test files
share (the server, the suite, main).

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
are attacks.py's own (they do not depend on how the box started).

The zygote's own cases are in files by topic, each a subclass of
ZygoteSuite run through main() against a server of its own, and run
by 30-sandbox.sh as this file is: zygote_fork.py (fork safety: random
generators reseeded per child, no thread, socket or secret in the child,
one zygote per interpreter), zygote_workspace.py (runs with a workspace
are the normal path's, secrets hidden, each run's own list),
zygote_runs.py (each run's own limits, the one-shot runner as the normal
path's) and zygote_end.py (the program's end report).

Each file: FILE --kiln KILN --attack ATTACK_BIN [--only NAME]...; prints
"ok NAME" / "not ok NAME: why" and "N passed, N failed" (with --only
naming none of its cases it starts nothing: "0 passed, 0 failed").
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
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
# end-report pipe among them, zygote_program.py's _END_FD).
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

    def run(self, code, limits=None, displays=None, language="python"):
        """(stdout, stderr, result or None, error message or None); the
        run's displays (run/display params) are appended to displays."""
        self.rid += 1
        params = {"language": language, "code": code, "override": True}
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

    def cases(self):
        """This suite's cases: attacks.py's, through the zygote."""
        self.all_cases()


def main(suite_class=None):
    """Run suite_class's cases (ZygoteSuite's: the attacks), or of those
    the --only names; none of them: nothing is started."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--attack", required=True)
    ap.add_argument("--only", action="append")
    args = ap.parse_args()
    args.kiln_release = None
    args.no_box = False
    s = (suite_class or ZygoteSuite)(args)
    s.listing = True
    s.cases()
    s.listing = False
    want = [n for n in s.listed if not s.only or n in s.only]
    if not want:
        sys.exit(s.finish())
    try:
        s.start()
        s.cases()
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
