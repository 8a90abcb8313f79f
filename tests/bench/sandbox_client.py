#!/usr/bin/env python3
"""sandbox_client.py: time snippet/run through a kiln server, request to
response, and output throughput through the server to this client.

  sandbox_client.py KILN CONFIG LANG CODE N [PAUSE]  median ms of N runs
  sandbox_client.py KILN CONFIG --throughput MB       MB/s of MB written to stdout
  sandbox_client.py KILN CONFIG --session N [PAUSE]   median ms of N runs of print(x)
                                                      in a session after x = 5
  sandbox_client.py KILN CONFIG --pair CONFIG2 LANG CODE N PAUSE
                                                      two servers (CONFIG, CONFIG2), their
                                                      runs taken in turns, each after PAUSE:
                                                      "MEDIAN1 MEDIAN2 MEDIAN_OF_RATIOS"
                                                      (2 over 1), so that a machine whose
                                                      load drifts weighs on both alike

PAUSE: seconds to wait before each run (not timed), so that the server has
its warm box built, as between the runs a person asks for; without it the
runs go back to back and each may find its box still being built.
With KILN_BENCH_WORKSPACE=DIR in the environment, initialize names DIR as
the workspace (rootUri): each run then sees it through its overlay.
"""
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kilnrpc  # noqa: E402


send = kilnrpc.send
recv = kilnrpc.recv


def start(kiln, config):
    p = subprocess.Popen([kiln, "--config", config], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    params = {}
    ws = os.environ.get("KILN_BENCH_WORKSPACE")
    if ws:
        params["rootUri"] = "file://" + os.path.abspath(ws)
    send(p, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
    recv(p.stdout)
    return p


def cpu_seconds(pid):
    """User + system CPU seconds of process pid so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_once(p, rid, lang, code, limits=None, session=None):
    params = {"language": lang, "code": code}
    if session:
        params["sessionId"] = session
    if limits:
        params["limits"] = limits
    t0 = time.perf_counter()
    send(p, {"jsonrpc": "2.0", "id": rid, "method": "snippet/run", "params": params})
    nbytes = 0
    while True:
        m = recv(p.stdout)
        if m is None:
            raise SystemExit("server ended")
        if m.get("method") == "run/output":
            nbytes += len(m["params"]["text"])
        elif m.get("id") == rid:
            if "error" in m:
                raise SystemExit(m["error"]["message"])
            return time.perf_counter() - t0, nbytes


def main():
    kiln, config = sys.argv[1], sys.argv[2]
    p = start(kiln, config)
    if sys.argv[3] == "--throughput":
        mb = int(sys.argv[4])
        code = ("import sys\nb = b'x' * (1 << 20)\nfor _ in range(%d):\n"
                "    sys.stdout.buffer.write(b)\n" % mb)
        run_once(p, 1, "python", "pass")
        c0 = cpu_seconds(p.pid)
        dt, n = run_once(p, 2, "python", code, {"outputBytes": (mb + 1) << 20})
        # The server's own CPU time per 100 MB: steadier than MB/s on a
        # loaded machine, and what the server's code decides.
        print("%.1f %.3f" % (n / dt / 1e6, (cpu_seconds(p.pid) - c0) * 100e6 / n))
    elif sys.argv[3] == "--pair":
        config2, lang, code = sys.argv[4], sys.argv[5], sys.argv[6]
        n, pause = int(sys.argv[7]), float(sys.argv[8])
        q = start(kiln, config2)
        run_once(p, 1, lang, code)
        run_once(q, 1, lang, code)
        a, b = [], []
        for i in range(n):
            time.sleep(pause)
            a.append(run_once(p, i + 2, lang, code)[0] * 1000)
            time.sleep(pause)
            b.append(run_once(q, i + 2, lang, code)[0] * 1000)
        q.stdin.close()
        q.wait(timeout=10)
        print("%.2f %.2f %.3f" % (statistics.median(a), statistics.median(b),
                                  statistics.median(y / x for x, y in zip(a, b))))
    elif sys.argv[3] == "--session":
        n = int(sys.argv[4])
        pause = float(sys.argv[5]) if len(sys.argv) > 5 else 0
        send(p, {"jsonrpc": "2.0", "id": 1, "method": "session/open",
                 "params": {"language": "python"}})
        m = recv(p.stdout)
        if "error" in m:
            raise SystemExit(m["error"]["message"])
        sid = m["result"]["sessionId"]
        run_once(p, 2, "python", "x = 5", session=sid)
        times = []
        for i in range(n):
            time.sleep(pause)
            dt, nbytes = run_once(p, i + 3, "python", "print(x)", session=sid)
            if nbytes != 2:
                raise SystemExit("print(x) in the session printed %d bytes" % nbytes)
            times.append(dt * 1000)
        print("%.2f" % statistics.median(times))
    else:
        lang, code, n = sys.argv[3], sys.argv[4], int(sys.argv[5])
        pause = float(sys.argv[6]) if len(sys.argv) > 6 else 0
        run_once(p, 1, lang, code)  # warm up
        times = []
        for i in range(n):
            time.sleep(pause)
            times.append(run_once(p, i + 2, lang, code)[0] * 1000)
        print("%.2f" % statistics.median(times))
    p.stdin.close()
    p.wait(timeout=10)


if __name__ == "__main__":
    main()
