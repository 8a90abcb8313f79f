#!/usr/bin/env python3
"""intent_loop.py: does the loop answer while an intent's proposal is checked?

    intent_loop.py KILN [KILN2] [--rounds N]

Starts the fake model server (tests/fake-model/fake_model.py), then, in
turns for each binary given, a fresh server whose intent/run gets the
2000-line answer [[answer:big]] (about 130 KiB: past what intent/run
checks ahead, so its whole check runs once the answer ends). From the
$/progress "validating" on, it sends small snippet/validate requests one
after another, each 2 ms after the one before is answered (the loop's
own validator warmed first), until intent/run's
result comes. Per round: how many were answered before the result, the
slowest of their round trips, and "validating" → result. A server that
checks on the loop answers none first, and the first one waits for the
whole check. Prints one line per binary with the medians; figures are
only good as ratios within one run (docs/performance.md).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(_here, "..", "lib")]
import kilnrpc  # noqa: E402


# Between a reply and the next ping: the pings stay a small load beside
# the check they wait on (two cores, shared).
PACE_S = 0.002


def one_round(kiln, env):
    s = kilnrpc.Server(kiln, env=env)
    try:
        # The loop's own validator checks small code inline: start its
        # syntax worker now, so that no ping pays for it.
        s.call("snippet/validate", {"language": "python", "code": "x = 0\n"})
        s.id += 1
        rid = s.id
        s.send({"jsonrpc": "2.0", "id": rid, "method": "intent/run",
                "params": {"intent": "[[answer:big]]", "language": "python",
                           "workDoneToken": "t"}})
        t_valid = None
        pings, slowest = 0, 0.0
        ping_id, ping_t = None, 0.0
        while True:
            m = s.read()
            if m.get("method") == "$/progress" and \
                    m["params"]["value"].get("message") == "validating":
                t_valid = time.monotonic()
            elif m.get("id") == rid:
                t_end = time.monotonic()
                verdict = m.get("result", {}).get("verdict")
                break
            elif ping_id is not None and m.get("id") == ping_id:
                pings += 1
                slowest = max(slowest, time.monotonic() - ping_t)
                ping_id = None
            else:
                continue
            if t_valid is not None and ping_id is None:
                time.sleep(PACE_S)
                s.id += 1
                ping_id, ping_t = s.id, time.monotonic()
                s.send({"jsonrpc": "2.0", "id": ping_id, "method": "snippet/validate",
                        "params": {"language": "python", "code": "x = 1\n"}})
        if ping_id is not None:  # the one in flight when the result came
            while True:
                m = s.read()
                if m.get("id") == ping_id:
                    slowest = max(slowest, time.monotonic() - ping_t)
                    break
        return pings, slowest * 1000, (t_end - t_valid) * 1000, verdict
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kilns", nargs="+")
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="kiln-intent-loop-")
    fake = subprocess.Popen([sys.executable, os.path.join(_here, "..", "fake-model", "fake_model.py"),
                             "--port-file", os.path.join(tmp, "port"), "--max-seconds", "900"],
                            stderr=subprocess.DEVNULL)
    try:
        port = os.path.join(tmp, "port")
        while not os.path.exists(port) or not open(port).read().strip():
            time.sleep(0.05)
        env = dict(os.environ, KILN_LLM_PROVIDER="ollama", KILN_LLM_URL="http://127.0.0.1:%s" %
                   open(port).read().strip(), KILN_MODEL="fake-coder",
                   XDG_STATE_HOME=os.path.join(tmp, "state"))
        res = {k: [] for k in a.kilns}
        for _ in range(a.rounds):
            for k in a.kilns:  # in turns: the same machine state for each
                res[k].append(one_round(k, env))
        for k in a.kilns:
            r = res[k]
            print("%s: pings answered during the check %s (median %d); slowest ping median %.1f ms; "
                  "validating -> result median %.1f ms; verdicts %s" %
                  (k, [x[0] for x in r], statistics.median(x[0] for x in r),
                   statistics.median(x[1] for x in r), statistics.median(x[2] for x in r),
                   sorted(set(x[3] for x in r))))
    finally:
        fake.kill()
        fake.wait()


if __name__ == "__main__":
    main()
