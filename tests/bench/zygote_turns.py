#!/usr/bin/env python3
"""zygote_turns.py: two kiln binaries' Python runs from the zygote, and a
bare python3, timed in turns in the same minutes (the machine's load
moves absolute figures by 2x; turns keep the ratios honest). Not a test.

  zygote_turns.py NEW OLD RUNS CODE [PAUSE_MS]

Starts a server of each binary with sandbox.zygote on, waits until both
serve runs from their zygote, then RUNS turns; each turn, in a rotating
order: `python3 -c CODE` (spawned and waited for), a snippet/run of CODE
through OLD, one through NEW, each after PAUSE_MS (50: as between a
person's runs; 0: back to back, where each server's run comes right
after its last one's answer). Prints the medians, each against bare, and
the median of the turns' NEW/OLD ratios. Back to back, each run is
followed at once by a round trip (session/close of no session, answered
on the server's loop), and how long that waited is printed for each
binary (median and worst): a run that waits for the zygote's spare on
the loop makes it wait too. tests/bench/zygote.sh runs it when OLD is
set.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kilnrpc  # noqa: E402

PY = "/usr/bin/python3"
# With PAUSE_MS 0: each turn times this many runs of each, back to back.
BACK_TO_BACK = 4


class Server:
    def __init__(self, kiln, config):
        self.p = subprocess.Popen([kiln, "--config", config], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.rid = 0
        kilnrpc.send(self.p, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
        kilnrpc.recv(self.p.stdout)

    def run(self, code, ping=False):
        """(seconds to the run's answer, its output); with ping, a round
        trip sent right after it, and the seconds to its answer last."""
        self.rid += 1
        rid = self.rid
        t0 = time.perf_counter()
        kilnrpc.send(self.p, {"jsonrpc": "2.0", "id": rid, "method": "snippet/run",
                              "params": {"language": "python", "code": code}})
        pid = None
        if ping:
            self.rid += 1
            pid = self.rid
            t1 = time.perf_counter()
            kilnrpc.send(self.p, {"jsonrpc": "2.0", "id": pid, "method": "session/close",
                                  "params": {"sessionId": "s-none"}})
        out, took, waited = "", None, None
        while took is None or (ping and waited is None):
            m = kilnrpc.recv(self.p.stdout)
            if m is None:
                raise SystemExit("the server ended")
            if m.get("method") == "run/output":
                out += m["params"]["text"]
            elif m.get("id") == pid:
                waited = time.perf_counter() - t1
            elif m.get("id") == rid:
                if "error" in m:
                    raise SystemExit("run failed: %s" % m["error"]["message"])
                took = time.perf_counter() - t0
        return (took, out, waited) if ping else (took, out)

    def wait_zygote(self):
        probe = "import sys\nprint('kiln_zygote' in sys.modules)\n"
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.run(probe)[1].strip() == "True":
                return
            time.sleep(0.5)
        raise SystemExit("no run came from the zygote")

    def stop(self):
        self.p.stdin.close()
        self.p.wait()


def bare(code):
    t0 = time.perf_counter()
    subprocess.run([PY, "-c", code], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main():
    new, old, runs, code = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    pause = (float(sys.argv[5]) if len(sys.argv) > 5 else 50) / 1000
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"sandbox": {"zygote": True}}, f)
    try:
        servers = {"new": Server(new, f.name), "old": Server(old, f.name)}
        for s in servers.values():
            s.wait_zygote()
        for _ in range(3):  # warm-up
            bare(code)
            for s in servers.values():
                s.run(code)
        times = {"bare": [], "old": [], "new": []}
        pings = {"old": [], "new": []}
        order = ["bare", "old", "new"]
        for i in range(runs):
            for name in order[i % 3:] + order[:i % 3]:
                time.sleep(pause or 0.05)
                one = (lambda: bare(code)) if name == "bare" else \
                    (lambda: servers[name].run(code)[0])
                t = one()
                if not pause and name != "bare":
                    # Back to back: the runs right after this one's
                    # answer are timed, not the first, each with a
                    # round trip right behind it.
                    got = [servers[name].run(code, ping=True) for _ in range(BACK_TO_BACK)]
                    t = [g[0] for g in got]
                    pings[name] += [g[2] for g in got]
                elif not pause:
                    t = [one() for _ in range(BACK_TO_BACK)]
                times[name] += t if isinstance(t, list) else [t]
        for s in servers.values():
            s.stop()
    finally:
        os.unlink(f.name)
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    for k in ("bare", "old", "new"):
        print("  %-44s %8.2f ms  %6.2fx bare" % ({"bare": "bare python3 -c",
                                                   "old": "old binary, from the zygote",
                                                   "new": "new binary, from the zygote"}[k],
                                                  med[k], med[k] / med["bare"]))
    # With PAUSE_MS 0 the pairs are the n-th back-to-back runs of each.
    pairs = [n / o for n, o in zip(times["new"], times["old"])]
    print("  %-44s %8.2fx" % ("new/old, median of the turns", statistics.median(pairs)))
    for k in ("old", "new"):
        if pings[k]:
            w = sorted(x * 1000 for x in pings[k])
            print("  %-44s %8.2f ms median, %.2f ms 90th, %.2f ms worst (%d)" % (
                "%s binary: a round trip sent after a run" % k, statistics.median(w),
                w[int(len(w) * 0.9)], w[-1], len(w)))


if __name__ == "__main__":
    main()
