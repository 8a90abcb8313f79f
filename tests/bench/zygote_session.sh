#!/bin/sh
# zygote_session.sh: a session's start from the Python zygote
# (sandbox.zygote, docs/sandbox.md "The zygote") against a session box
# built for it (the normal path): session/open, then the first run
# `import pandas; print(1)`, from the open's request to the run's
# response, through the server; then a `print(1)` run in the open session,
# sent as soon as the first run's response is read. The two servers' sessions
# in turns (order reversed every other turn), RUNS each, each closed
# before the next, a pause before each; the zygote serves runs before the
# first. Ratios to the normal path, the median of the turns'. Not a
# test: nothing here fails on a number. Standalone: `sh
# tests/bench/zygote_session.sh`. KILN=path overrides the binary; RUNS=N
# the repetitions.
set -eu
cd "$(dirname "$0")/../.."
KILN=${KILN:-build/kiln}
RUNS=${RUNS:-15}
[ -x "$KILN" ] || make --no-print-directory build/kiln >/dev/null
python3 - "$KILN" "$RUNS" <<'PY'
import json, os, statistics, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.join(os.getcwd(), "tests", "lib"))
import kilnrpc
kiln, n = sys.argv[1], int(sys.argv[2])


class Side:
    """A server with the zygote on or off, and its runs."""

    def __init__(self, zygote):
        self.zygote = zygote
        self.cfg = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump({"sandbox": {"zygote": zygote}}, self.cfg)
        self.cfg.close()
        self.s = kilnrpc.Server(kiln, args=("--config", self.cfg.name))
        self.starts, self.again = [], []

    def run(self, params):
        s = self.s
        s.id += 1
        s.send({"jsonrpc": "2.0", "id": s.id, "method": "snippet/run", "params": params})
        out = ""
        while True:
            m = s.read()
            if m.get("method") == "run/output":
                out += m["params"]["text"]
            elif m.get("id") == s.id:
                if "error" in m:
                    raise SystemExit("run failed: %s" % m["error"]["message"])
                return out

    def ready(self):
        deadline = time.time() + 120
        while self.run({"language": "python", "code": probe}).strip() != str(self.zygote):
            if time.time() > deadline:
                raise SystemExit("the zygote never served a run")
            time.sleep(0.5)

    def turn(self):
        """One session: its open and first run, then a print(1) sent as
        soon as the first run's response is read."""
        t0 = time.perf_counter()
        sid = self.s.call("session/open", {"language": "python"})["result"]["sessionId"]
        out = self.run({"sessionId": sid, "code": probe + "import pandas; print(1)"})
        self.starts.append(time.perf_counter() - t0)
        if out.split() != [str(self.zygote), "1"]:
            raise SystemExit("unexpected output: %r" % out)
        t0 = time.perf_counter()
        self.run({"sessionId": sid, "code": "print(1)"})
        self.again.append(time.perf_counter() - t0)
        self.s.call("session/close", {"sessionId": sid})

    def close(self):
        self.s.p.stdin.close()
        self.s.p.wait()
        os.unlink(self.cfg.name)


probe = "import sys\nprint('kiln_zygote' in sys.modules)\n"
print("zygote session bench (%d sessions each, in turns, medians; %d cores, kernel %s, "
      "load %.2f)" % (n, os.cpu_count(), os.uname().release, os.getloadavg()[0]))
normal, zyg = Side(False), Side(True)
zyg.ready()
normal.ready()
# In turns, the order reversed every other turn, a pause before each
# session (the zygote's spare, or nothing, made ahead as between a
# person's sessions).
for i in range(n):
    for side in (normal, zyg) if i % 2 == 0 else (zyg, normal):
        time.sleep(0.3)
        side.turn()
normal.close()
zyg.close()
sys.path.insert(0, "tests/bench")
import figures  # the ratio for run.sh's baseline (KILN_BENCH_FIGURES)
for label, name, a, b in (
        ("session/open + first `import pandas; print(1)`", "session.open_first",
         normal.starts, zyg.starts),
        ("then `print(1)` in the open session", "session.print1", normal.again, zyg.again)):
    ratios = sorted(z / m for m, z in zip(a, b))
    ratio = statistics.median(ratios)
    nm, zm = statistics.median(a) * 1000, statistics.median(b) * 1000
    q = len(ratios) // 4
    print("  %s:" % label)
    print("    %-36s %8.2f ms" % ("normal path (a session box built)", nm))
    print("    %-36s %8.2f ms  %6.3fx the normal path (median of turns; middle half "
          "%.2f-%.2f)" % ("from the zygote", zm, ratio, ratios[q], ratios[-q - 1]))
    figures.add(name, ratio, "lower-is-better", "%.2f ms" % zm,
                "a session box built (zygote off), %.2f ms" % nm)
print("  load average at the end: %.2f" % os.getloadavg()[0])
PY
