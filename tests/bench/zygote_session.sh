#!/bin/sh
# zygote_session.sh: a session's start from the Python zygote
# (sandbox.zygote, docs/sandbox.md "The zygote") against a session box
# built for it (the normal path): session/open, then the first run
# `import pandas; print(1)`, from the open's request to the run's
# response, through the server; then a `print(1)` run in the open session
# (which the zygote does not change). Medians of RUNS sessions, each
# closed before the next, a pause before each; the zygote serves runs
# before the first. Ratios to the normal path, of the same run. Not a
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


def measure(zygote):
    cfg = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump({"sandbox": {"zygote": zygote}}, cfg)
    cfg.close()
    s = kilnrpc.Server(kiln, args=("--config", cfg.name))

    def run(params):
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

    probe = "import sys\nprint('kiln_zygote' in sys.modules)\n"
    deadline = time.time() + 120
    while run({"language": "python", "code": probe}).strip() != str(zygote):
        if time.time() > deadline:
            raise SystemExit("the zygote never served a run")
        time.sleep(0.5)
    starts, again = [], []
    for _ in range(n):
        time.sleep(0.3)
        t0 = time.perf_counter()
        sid = s.call("session/open", {"language": "python"})["result"]["sessionId"]
        out = run({"sessionId": sid, "code": probe + "import pandas; print(1)"})
        starts.append(time.perf_counter() - t0)
        if out.split() != [str(zygote), "1"]:
            raise SystemExit("unexpected output: %r" % out)
        t0 = time.perf_counter()
        run({"sessionId": sid, "code": "print(1)"})
        again.append(time.perf_counter() - t0)
        s.call("session/close", {"sessionId": sid})
    s.p.stdin.close()
    s.p.wait()
    os.unlink(cfg.name)
    return statistics.median(starts) * 1000, statistics.median(again) * 1000


print("zygote session bench (%d sessions each, medians; %d cores, kernel %s)"
      % (n, os.cpu_count(), os.uname().release))
normal = measure(False)
zyg = measure(True)
for i, label in enumerate(("session/open + first `import pandas; print(1)`",
                           "then `print(1)` in the open session")):
    print("  %s:" % label)
    print("    %-36s %8.2f ms" % ("normal path (a session box built)", normal[i]))
    print("    %-36s %8.2f ms  %6.3fx the normal path" % ("from the zygote", zyg[i],
                                                          zyg[i] / normal[i]))
    sys.path.insert(0, "tests/bench")
    import figures  # the ratio for run.sh's baseline (KILN_BENCH_FIGURES)
    figures.add(("session.open_first", "session.print1")[i], zyg[i] / normal[i],
                "lower-is-better", "%.2f ms" % zyg[i],
                "a session box built (zygote off), %.2f ms" % normal[i])
PY
