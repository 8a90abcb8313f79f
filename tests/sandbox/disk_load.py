#!/usr/bin/env python3
"""disk_load.py: what a box costs the host's disk and the server's time
(issue 11): artifact copies (a budget per run, holes kept, hard links
copied once, the copy directory's size and age caps, the terminal's run
folders under the same caps, the copy off the event loop), the run queue (sandbox.maxConcurrentRuns) and a small load
test (many runs from several clients' worth of requests at once). Every
case ends with a check of the host: no process of a box left, and the
disk use of the artifact directory.

  disk_load.py --kiln KILN [--only NAME]...

Prints "ok NAME" / "not ok NAME: why" per case and a last line
"N passed, N failed"; exits 1 when any case failed. Bounded in time.
"""
import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)),
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib")]
import kilnrpc  # noqa: E402

MiB = 1 << 20
BUDGET = "over the run's artifact budget (artifactMaxBytes)"


def rss_kb(pid, field="VmRSS:"):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return -1


def hwm_kb(pid):
    return rss_kb(pid, "VmHWM:")


def base64_of(text):
    import base64
    return base64.b64encode(text.encode()).decode()


def disk_use(path):
    """Bytes the files under path hold on disk (st_blocks)."""
    n = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                n += os.lstat(os.path.join(root, f)).st_blocks * 512
            except OSError:
                pass
    return n


class Server:
    """One kiln server on pipes, its messages read as they come."""

    def __init__(self, suite, sandbox=None):
        cfg = {"sandbox": {"env": {"KILN_TEST_MARK": suite.token},
                           "workspace": {"mode": "none"},
                           "artifactDir": suite.adir},
               "validator": {"allowOverride": True}}
        cfg["sandbox"].update(sandbox or {})
        path = os.path.join(suite.dir, "config-%s.json" % secrets.token_hex(4))
        with open(path, "w") as f:
            json.dump(cfg, f)
        self.p = subprocess.Popen([suite.kiln, "--config", path], env=suite.env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
        m = self.read()
        assert m and "result" in m, m
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def send(self, m):
        kilnrpc.send(self.p, m)

    def read(self):
        return kilnrpc.recv(self.p.stdout)

    def run(self, code, lang="python", limits=None):
        """Send a snippet/run; its id."""
        self.next_id += 1
        params = {"language": lang, "code": code, "override": True}
        if limits:
            params["limits"] = limits
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": "snippet/run",
                   "params": params})
        return self.next_id

    def collect(self, ids, timeout=120, on_message=None):
        """Read until every id has its reply: (replies, {runId: {...}}, order)
        where each run has stdout, artifacts and states; order lists the
        replies' ids as they came."""
        ids = set(ids)
        replies, runs, order = {}, {}, []
        deadline = time.time() + timeout
        # A server that keeps silent (a run that never starts) must not
        # hold the suite forever: past the deadline it is killed, and its
        # output ends.
        watchdog = threading.Timer(timeout, self.p.kill)
        watchdog.daemon = True
        watchdog.start()
        try:
            self._collect(ids, deadline, on_message, replies, runs, order)
        finally:
            watchdog.cancel()
        for r in runs.values():
            r["stdout"] = "".join(r["stdout"])
        return replies, runs, order

    def _collect(self, ids, deadline, on_message, replies, runs, order):
        while ids - set(replies) and time.time() < deadline:
            m = self.read()
            if m is None:
                break
            if on_message:
                on_message(m)
            meth = m.get("method")
            if meth in ("run/output", "run/artifact", "run/status"):
                p = m["params"]
                r = runs.setdefault(p["runId"], {"stdout": [], "artifacts": [], "states": []})
                if meth == "run/output":
                    r["stdout"].append(p["text"])
                elif meth == "run/artifact":
                    r["artifacts"].append(p)
                else:
                    r["states"].append(p)
            elif "id" in m and m["id"] in ids:
                replies[m["id"]] = m
                order.append(m["id"])

    def close(self):
        try:
            self.next_id += 1
            self.send({"jsonrpc": "2.0", "id": self.next_id, "method": "shutdown"})
            self.send({"jsonrpc": "2.0", "method": "exit"})
            self.p.stdin.close()
            self.p.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        return self.p.returncode


class Suite:
    def __init__(self, args):
        self.kiln = os.path.abspath(args.kiln)
        self.only = set(args.only or [])
        self.passed = self.failed = 0
        self.token = secrets.token_hex(8)
        self.dir = tempfile.mkdtemp(prefix="kiln-disk-load-")
        os.chmod(self.dir, 0o700)
        self.adir = os.path.join(self.dir, "artifacts")
        self.env = {"PATH": "/usr/bin:/bin", "HOME": self.dir, "LANG": "C.UTF-8",
                    "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "detect_leaks=1")}

    def box_processes(self):
        """Host pids whose environment carries this suite's mark."""
        return kilnrpc.marked_processes(self.token)

    def check_host(self):
        for _ in range(50):
            left = self.box_processes()
            if not left:
                return None
            time.sleep(0.1)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return "processes of a box are still alive on the host: %s" % left

    def case(self, name, fn):
        if self.only and name not in self.only:
            return
        shutil.rmtree(self.adir, ignore_errors=True)
        try:
            why = fn()
        except Exception as e:  # a crash of the check is a failure too
            why = "%s: %s" % (type(e).__name__, e)
        host = self.check_host()
        if why is None and host:
            why = host
        if why is None:
            self.passed += 1
            print("ok %s" % name, flush=True)
        else:
            self.failed += 1
            print("not ok %s: %s" % (name, why), flush=True)

    def one_run(self, code, sandbox=None, limits=None):
        """A server, one run, its reply, its run entry and the server's exit."""
        s = Server(self, sandbox)
        try:
            rid = s.run(code, limits=limits)
            replies, runs, _ = s.collect([rid])
        finally:
            rc = s.close()
        rep = replies.get(rid)
        if not rep or "result" not in rep:
            raise AssertionError("no result: %r" % rep)
        return rep["result"], runs.get(rep["result"]["runId"], {"artifacts": [], "stdout": ""}), rc

    # --- artifacts ---------------------------------------------------------

    def artifact_cases(self):
        def sparse():
            # 32 sparse files of 64 MiB whose tmpfs holds nothing: the
            # copies keep their holes (2 GiB of zeros on the host disk
            # before the fix).
            code = ("for i in range(32):\n"
                    "    f = open('/work/out/s%02d.bin' % i, 'wb'); f.truncate(64 << 20)\n"
                    "    f.seek(5 << 20); f.write(b'data'); f.close()\n")
            res, run, rc = self.one_run(code)
            arts = run["artifacts"]
            if len(arts) != 32 or any(a.get("size") != 64 * MiB or "path" not in a for a in arts):
                return "artifacts: %r" % [(a["name"], a.get("size"), a.get("omitted"))
                                          for a in arts][:4]
            with open(arts[0]["path"], "rb") as f:
                f.seek(5 * MiB)
                if f.read(4) != b"data" or os.path.getsize(arts[0]["path"]) != 64 * MiB:
                    return "the copy's contents are wrong"
            used = disk_use(self.adir)
            print("# 32 sparse 64 MiB files: %d KiB on the host disk" % (used // 1024))
            return None if used < 4 * MiB else "the copies take %d KiB of disk" % (used // 1024)
        self.case("artifacts-sparse-keep-holes", sparse)

        def links():
            # One 4 MiB file under 32 names: copied once (128 MiB before).
            code = ("import os\nopen('/work/out/f00.bin', 'wb').write(os.urandom(4 << 20))\n"
                    "for i in range(1, 32):\n"
                    "    os.link('/work/out/f00.bin', '/work/out/f%02d.bin' % i)\n")
            res, run, rc = self.one_run(code)
            arts = run["artifacts"]
            paths = {a.get("path") for a in arts}
            if len(arts) != 32 or len(paths) != 1 or None in paths:
                return "artifacts: %r" % [(a["name"], a.get("path"), a.get("omitted"))
                                          for a in arts][:4]
            used = disk_use(self.adir)
            print("# one 4 MiB file linked 32 times: %d KiB on the host disk" % (used // 1024))
            return None if used < 6 * MiB else "the copies take %d KiB of disk" % (used // 1024)
        self.case("artifacts-hard-links-copied-once", links)

        def budget():
            # artifactMaxBytes is per run: three 5 MiB files against an
            # 8 MiB budget: one copied, two omitted (all three before).
            code = ("import os\nfor i in range(3):\n"
                    "    open('/work/out/b%d.bin' % i, 'wb').write(os.urandom(5 << 20))\n")
            res, run, rc = self.one_run(code, {"artifactMaxBytes": 8 * MiB})
            arts = sorted(run["artifacts"], key=lambda a: a["name"])
            copied = [a for a in arts if "path" in a]
            omitted = [a for a in arts if a.get("omitted") == BUDGET]
            if len(arts) != 3 or len(copied) != 1 or len(omitted) != 2:
                return "artifacts: %r" % [(a["name"], a.get("path"), a.get("omitted"))
                                          for a in arts][:4]
            used = disk_use(self.adir)
            return None if used <= 8 * MiB else "the copies take %d KiB" % (used // 1024)
        self.case("artifacts-budget-per-run", budget)

        def dir_caps():
            # The copy directory keeps at most artifactDirMaxBytes (older
            # runs go first) and nothing older than artifactDirMaxAgeMs;
            # what kiln did not make there is left alone.
            os.makedirs(self.adir)
            old = os.path.join(self.adir, "r7-AbC123")
            mine = os.path.join(self.adir, "keep-me")
            for d in (old, mine):
                os.makedirs(d)
                with open(os.path.join(d, "x"), "w") as f:
                    f.write("x")
                t = time.time() - 30 * 86400
                os.utime(d, (t, t))
            cfg = {"artifactDirMaxBytes": 12 * MiB, "artifactDirMaxAgeMs": 86400 * 1000}
            code = "import os\nopen('/work/out/c.bin', 'wb').write(os.urandom(5 << 20))\n"
            s = Server(self, cfg)
            paths = []
            try:
                for _ in range(4):
                    rid = s.run(code)
                    replies, runs, _ = s.collect([rid])
                    res = replies[rid]["result"]
                    arts = runs[res["runId"]]["artifacts"]
                    if len(arts) != 1 or "path" not in arts[0]:
                        return "artifacts: %r" % arts
                    paths.append(arts[0]["path"])
            finally:
                s.close()
            if os.path.exists(old):
                return "a copy directory older than the age cap was kept"
            if not os.path.exists(os.path.join(mine, "x")):
                return "a directory kiln did not make was removed"
            if os.path.exists(paths[0]) or not os.path.exists(paths[-1]):
                return "the oldest run's copy should go, the newest stay: %r" % \
                    [os.path.exists(p) for p in paths]
            used = disk_use(self.adir)
            return None if used <= 12 * MiB + 64 * 1024 else "the directory holds %d KiB" % (
                used // 1024)
        self.case("artifacts-dir-size-and-age-cap", dir_caps)

        def off_loop():
            # While a run's artifacts are copied (two 200 MiB files), the
            # loop keeps serving: a request sent once the copy is under
            # way (its first file has appeared) is answered before the
            # run's own reply, which waits for the copy.
            code = ("b = b'z' * (1 << 20)\nfor i in range(2):\n"
                    "    with open('/work/out/big%d.bin' % i, 'wb') as f:\n"
                    "        for _ in range(200):\n            f.write(b)\n"
                    "print('ready', flush=True)\n")
            limits = {"tmpfsBytes": 450 * MiB, "fileSizeBytes": 250 * MiB, "wallMs": 60000}
            s = Server(self, {"artifactMaxBytes": 500 * MiB})
            state = {"sent": False}

            def on_message(m):
                if state["sent"] or m.get("method") != "run/output" or \
                        "ready" not in m["params"]["text"]:
                    return
                for _ in range(3000):
                    if any(fs for _, _, fs in os.walk(self.adir)):
                        break
                    time.sleep(0.005)
                s.send({"jsonrpc": "2.0", "id": 500, "method": "snippet/validate",
                        "params": {"language": "python", "code": "print(1)\n"}})
                state["sent"] = True
            try:
                rid = s.run(code, limits=limits)
                replies, runs, order = s.collect([rid, 500], on_message=on_message)
            finally:
                s.close()
            if not state["sent"] or rid not in replies or 500 not in replies:
                return "replies: %r" % order
            if "result" not in replies[rid]:
                return "the run failed: %r" % replies[rid]
            arts = runs[replies[rid]["result"]["runId"]]["artifacts"]
            if len(arts) != 2 or any("path" not in a for a in arts):
                return "artifacts: %r" % arts
            return None if order == [500, rid] else \
                "the request sent during the copy was answered after it: %r" % order
        self.case("artifacts-copy-off-the-loop", off_loop)

        def terminal_folder():
            # The terminal's run folders (kiln run saves inline artifacts
            # there) are kept under the same caps: a 30-day-old run folder
            # goes when the next is made; a folder of another shape and a
            # young one stay.
            cache = os.path.join(self.dir, "cache")
            runs = os.path.join(cache, "kiln", "runs")
            old = os.path.join(runs, "20250101-000000-1-r1")
            young = os.path.join(runs, "20250102-000000-2-r9")
            other = os.path.join(runs, "notes")
            for d in (old, young, other):
                os.makedirs(d)
                with open(os.path.join(d, "x"), "w") as f:
                    f.write("x")
            t = time.time() - 30 * 86400
            for d in (old, other):
                os.utime(d, (t, t))
            cfg = os.path.join(self.dir, "terminal.json")
            with open(cfg, "w") as f:
                json.dump({"sandbox": {"env": {"KILN_TEST_MARK": self.token},
                                       "workspace": {"mode": "none"},
                                       "artifactDirMaxAgeMs": 86400 * 1000}}, f)
            code = os.path.join(self.dir, "t.py")
            with open(code, "w") as f:
                f.write("open('/work/out/a.txt', 'w').write('hi')\n")
            env = dict(self.env, XDG_CACHE_HOME=cache)
            p = subprocess.run([self.kiln, "run", "--config", cfg, code], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=90,
                               cwd=self.dir)
            if p.returncode != 0 or b"saved at" not in p.stderr:
                return "kiln run: %d %r" % (p.returncode, p.stderr[-300:])
            if os.path.exists(old):
                return "a run folder older than the age cap was kept"
            if not os.path.exists(young) or not os.path.exists(other):
                return "a young run folder or a folder of another shape was removed"
            made = [d for d in os.listdir(runs) if d not in ("notes", "20250102-000000-2-r9")]
            return None if len(made) == 1 else "run folders: %r" % os.listdir(runs)
        self.case("artifacts-terminal-folder-capped", terminal_folder)

    # --- the run queue -----------------------------------------------------

    def queue_cases(self):
        def five_on_two():
            # sandbox.maxConcurrentRuns 2, five runs at once: three wait
            # (run/status "queued", then "running"), all end with their
            # output, and no more than two programs ever ran at once
            # (each prints its start and end on the shared clock).
            code = ("import time\nprint('start %%r' %% time.time(), flush=True)\n"
                    "time.sleep(0.7)\nprint('tag-%d')\nprint('end %%r' %% time.time())\n")
            s = Server(self, {"maxConcurrentRuns": 2})
            try:
                ids = [s.run(code % i) for i in range(5)]
                replies, runs, _ = s.collect(ids)
            finally:
                rc = s.close()
            spans, queued = [], 0
            for i, rid in enumerate(ids):
                rep = replies.get(rid)
                if not rep or "result" not in rep or rep["result"]["exitCode"] != 0:
                    return "run %d: %r" % (i, rep)
                run = runs.get(rep["result"]["runId"], {"stdout": "", "states": []})
                if "tag-%d\n" % i not in run["stdout"]:
                    return "run %d lost its output: %r" % (i, run["stdout"])
                states = [st["state"] for st in run["states"]]
                if states not in ([], ["queued", "running"]):
                    return "run %d states: %r" % (i, run["states"])
                if states:
                    queued += 1
                    q = run["states"][0]
                    if q["maxConcurrentRuns"] != 2 or q["running"] != 2 or q["position"] < 1:
                        return "a queued status: %r" % q
                t = {ln.split()[0]: float(ln.split()[1]) for ln in run["stdout"].splitlines()
                     if ln.startswith(("start ", "end "))}
                spans.append((t["start"], t["end"]))
            if queued != 3:
                return "%d runs said they waited, not 3" % queued
            most = max(sum(1 for a, b in spans if a <= t < b) for t, _ in spans)
            if most > 2:
                return "%d programs ran at once" % most
            return None if rc == 0 else "the server exited %s" % rc
        self.case("queue-five-runs-two-slots", five_on_two)

        def cancel_queued():
            # With one slot, a queued run that is cancelled is answered
            # at once (-32800, before the running one ends), never runs,
            # and gives back nothing it did not hold: the runs after it
            # still start and end.
            s = Server(self, {"maxConcurrentRuns": 1})
            try:
                first = s.run("import time\nprint('first', flush=True)\ntime.sleep(2)\n")
                second = s.run("print('SECOND RAN')\n")
                got = []

                def on_message(m):
                    got.append(m)
                    if m.get("method") == "run/status" and m["params"]["state"] == "queued":
                        s.send({"jsonrpc": "2.0", "method": "$/cancelRequest",
                                "params": {"id": second}})
                replies, runs, order = s.collect([first, second], on_message=on_message)
                third = s.run("print('third')\n")
                r3, runs3, _ = s.collect([third], timeout=60)
            finally:
                rc = s.close()
            if replies.get(second, {}).get("error", {}).get("code") != -32800:
                return "the queued run was not cancelled: %r" % replies.get(second)
            if order != [second, first]:
                return "the cancel waited for the running run: %r" % order
            if any("SECOND RAN" in r["stdout"] for r in runs.values()):
                return "the cancelled run ran"
            res3 = r3.get(third, {}).get("result")
            if not res3 or runs3.get(res3["runId"], {}).get("stdout") != "third\n":
                return "the run after the cancel: %r" % r3.get(third)
            return None if rc == 0 else "the server exited %s" % rc
        self.case("queue-cancel-waiting-run", cancel_queued)

        def bounded():
            # The queue is bounded too (sandbox.maxQueuedRuns): with one
            # slot and room for one waiting run, a third is refused at
            # once with the reason (-32803), and the other two end well.
            s = Server(self, {"maxConcurrentRuns": 1, "maxQueuedRuns": 1})
            try:
                a = s.run("import time\nprint('a', flush=True)\ntime.sleep(2)\n")
                b = s.run("print('b')\n")
                c = s.run("print('C RAN')\n")
                replies, runs, order = s.collect([a, b, c])
            finally:
                rc = s.close()
            err = replies.get(c, {}).get("error", {})
            if err.get("code") != -32803 or "maxQueuedRuns" not in err.get("message", ""):
                return "the run past the queue: %r" % replies.get(c)
            if order[0] != c:
                return "the refusal waited: %r" % order
            outs = sorted(r["stdout"] for r in runs.values())
            if outs != ["a\n", "b\n"]:
                return "outputs: %r" % outs
            return None if rc == 0 else "the server exited %s" % rc
        self.case("queue-bounded", bounded)

        def config_checked():
            try:
                Server(self, {"maxConcurrentRuns": 0}).close()
            except AssertionError as e:
                return None if "maxConcurrentRuns" in str(e) else str(e)
            return "maxConcurrentRuns 0 was taken"
        self.case("queue-config-checked", config_checked)

    # --- load ----------------------------------------------------------------

    def load(self, n, clients, sandbox=None):
        """n runs through one server, clients requests in flight at any
        time; each prints 64 KiB of its own text and leaves a small
        artifact. Returns (why or None, figures): RSS idle (after
        initialize, and after one run), after the load, the peak."""
        s = Server(self, sandbox)
        figures = {"idle_kb": rss_kb(s.p.pid)}
        rid = s.run("print('warm')\n")
        s.collect([rid])
        time.sleep(0.5)
        figures["warm_kb"] = rss_kb(s.p.pid)
        first = s.next_id + 1
        body = "import sys\nsys.stdout.write(('%d:' + 'x' * 1021 + '\\n') * 64)\n" \
               "open('/work/out/a.txt', 'w').write('%d')\n"
        sent, pending, results, runs = 0, set(), {}, {}
        t0 = time.time()
        # A server that stops answering (a queue that never moves) is
        # killed after 60 s without a message; the count below says so.
        last = [time.time()]

        def watchdog():
            while s.p.poll() is None:
                if time.time() - last[0] > 60:
                    s.p.kill()
                    return
                time.sleep(1)
        threading.Thread(target=watchdog, daemon=True).start()
        try:
            while (sent < n or pending) and time.time() - t0 < 600:
                while sent < n and len(pending) < clients:
                    pending.add(s.run(body % (sent, sent)))
                    sent += 1
                m = s.read()
                if m is None:
                    break
                last[0] = time.time()
                meth = m.get("method")
                if meth in ("run/output", "run/artifact"):
                    p = m["params"]
                    r = runs.setdefault(p["runId"], {"out": [], "art": []})
                    (r["out"] if meth == "run/output" else r["art"]).append(
                        p.get("text") or p.get("data"))
                elif m.get("id") in pending:
                    pending.discard(m["id"])
                    results[m["id"]] = m
            figures["seconds"] = time.time() - t0
            time.sleep(0.5)
            figures["after_kb"] = rss_kb(s.p.pid)
            figures["peak_kb"] = hwm_kb(s.p.pid)
        finally:
            rc = s.close()
        if len(results) != n:
            return "%d of %d runs answered" % (len(results), n), figures
        left = self.check_host()
        if left:
            return left, figures
        for rid, m in results.items():
            i = rid - first
            res = m.get("result")
            if not res or res["exitCode"] != 0:
                return "run %d: %r" % (i, m), figures
            r = runs.get(res["runId"], {"out": [], "art": []})
            want = ("%d:" % i + "x" * 1021 + "\n") * 64
            if "".join(r["out"]) != want:
                return "run %d lost output (%d of %d bytes)" % (
                    i, len("".join(r["out"])), len(want)), figures
            if r["art"] != [base64_of(str(i))]:
                return "run %d artifacts: %r" % (i, r["art"]), figures
        return (None if rc == 0 else "the server exited %s" % rc), figures

    def load_cases(self):
        def small_load():
            # Four slots, whatever the cores: some runs always wait.
            why, f = self.load(40, 8, {"maxConcurrentRuns": 4})
            if why is None:
                print("# 40 runs, 8 in flight: %.1f s; server RSS idle %d KiB (after one run "
                      "%d KiB), after %d KiB, peak %d KiB" % (
                          f["seconds"], f["idle_kb"], f["warm_kb"], f["after_kb"], f["peak_kb"]))
            return why
        self.case("load-40-runs-8-in-flight", small_load)

    def finish(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 1 if self.failed else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--only", action="append")
    ap.add_argument("--bench", nargs=2, type=int, metavar=("RUNS", "IN_FLIGHT"),
                    help="make bench: the load only; print its figures as JSON")
    ap.add_argument("--max-concurrent", type=int, help="with --bench: maxConcurrentRuns")
    a = ap.parse_args()
    s = Suite(a)
    if a.bench:
        cfg = {"maxConcurrentRuns": a.max_concurrent} if a.max_concurrent else None
        try:
            why, f = s.load(a.bench[0], a.bench[1], cfg)
        finally:
            shutil.rmtree(s.dir, ignore_errors=True)
        f["error"] = why
        print(json.dumps(f))
        sys.exit(1 if why else 0)
    try:
        s.artifact_cases()
        s.queue_cases()
        s.load_cases()
    finally:
        rc = s.finish()
    sys.exit(rc)


if __name__ == "__main__":
    main()
