#!/usr/bin/env python3
"""cgroup_take.py: how long the event loop spends getting a box's cgroup
(sandbox_cgroup_take, docs/sandbox.md "cgroups"), with and without other
processes moving between cgroups meanwhile. Not a test: nothing here
fails on a number.

    cgroup_take.py [--kiln KILN] [--runs N] [--pause-ms MS]

As root, where kiln can make cgroups (the cgroup2 directory this process
is in must be writable). Starts a server with sandbox.zygote on and
--log-level debug, waits until a run comes from the zygote, then times
N Python runs of print(1) (back to back by default: each after the last
one's answer, when the next spare and its cgroup are asked for), in two
rounds: quiet, then with a mover (a shell moving a sleeping process
between two cgroups of its own as fast as it can, as other servers'
spares and systemd do on a busy machine). From the server's debug lines
("a box's cgroup, made ahead|made now: N us on the loop") it prints the
median, p90 and max of the loop's time in each take, and how many were
made on the loop. Also the client's round-trip medians (noisy: the
zygote's spare dominates them).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kilnrpc  # noqa: E402

LINE = re.compile(r"a box's cgroup, (made ahead|made now): (\d+) us on the loop")
MOVER = """d=$1
mkdir -p "$d/a" "$d/b"
sleep 100000 &
pid=$!
trap 'kill $pid 2>/dev/null; exit 0' TERM INT
while :; do
	echo $pid > "$d/a/cgroup.procs" 2>/dev/null || exit 0
	echo $pid > "$d/b/cgroup.procs" 2>/dev/null || exit 0
done
"""


def own_cgroup2():
    with open("/proc/self/cgroup") as f:
        path = next((ln[3:].strip() for ln in f if ln.startswith("0::")), None)
    with open("/proc/self/mountinfo") as f:
        for m in (ln.split() for ln in f if " - cgroup2 " in ln):
            root, point = m[3], m[4]
            if path is not None and (root == "/" or path.startswith(root)):
                return os.path.normpath(point + "/" + (path[len(root):] if root != "/" else path))
    return None


def rounds(kiln, runs, pause, tmp):
    cfg = os.path.join(tmp, "config.json")
    with open(cfg, "w") as f:
        f.write('{"sandbox": {"zygote": true}}')
    log = os.path.join(tmp, "server.log")
    with open(log, "w") as err:
        p = subprocess.Popen([kiln, "--log-level", "debug", "--config", cfg],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
    rid = [0]

    def run(code):
        rid[0] += 1
        t0 = time.perf_counter()
        kilnrpc.send(p, {"jsonrpc": "2.0", "id": rid[0], "method": "snippet/run",
                         "params": {"language": "python", "code": code}})
        out = ""
        while True:
            m = kilnrpc.recv(p.stdout)
            if m is None:
                raise SystemExit("the server ended")
            if m.get("method") == "run/output":
                out += m["params"]["text"]
            elif m.get("id") == rid[0]:
                return time.perf_counter() - t0, out
    kilnrpc.send(p, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
    kilnrpc.recv(p.stdout)
    deadline = time.time() + 120
    while run("import sys\nprint('kiln_zygote' in sys.modules)\n")[1].strip() != "True":
        if time.time() > deadline:
            raise SystemExit("no run came from the zygote")
        time.sleep(0.5)
    result = {}
    for name in ("quiet", "moves"):
        mover = None
        if name == "moves":
            d = tempfile.mkdtemp(prefix="kiln-bench-mover-", dir=own_cgroup2())
            mover = subprocess.Popen(["sh", "-c", MOVER, "mover", d])
            time.sleep(0.3)
        time.sleep(0.5)
        with open(log) as f:
            start = len(f.readlines())
        rtt = []
        for _ in range(runs):
            time.sleep(pause)
            rtt.append(run("print(1)")[0] * 1000)
        with open(log) as f:
            lines = f.readlines()[start:]
        if mover:
            mover.terminate()
            mover.wait()
            time.sleep(0.2)
            for sub in ("a", "b", ""):
                try:
                    os.rmdir(os.path.join(d, sub))
                except OSError:
                    pass
        takes = [(m.group(1), int(m.group(2))) for m in map(LINE.search, lines) if m]
        result[name] = (takes, rtt)
    p.stdin.close()
    p.wait()
    return result


def q(xs):
    xs = sorted(xs)
    if not xs:
        return "none"
    return "median %d, p90 %d, max %d" % (statistics.median(xs), xs[int(len(xs) * 0.9)], xs[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", default="build/kiln")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--pause-ms", type=float, default=0)
    a = ap.parse_args()
    d = own_cgroup2()
    if os.geteuid() != 0 or not d or not os.access(os.path.join(d, "cgroup.procs"), os.W_OK):
        print("cgroup_take: needs root and a writable cgroup2 directory (%s)" % d)
        return 1
    with tempfile.TemporaryDirectory(prefix="kiln-bench-cgtake-") as tmp:
        res = rounds(os.path.abspath(a.kiln), a.runs, a.pause_ms / 1000, tmp)
    print("cgroup_take: %d print(1) runs from the zygote, %s (%d cores, kernel %s)" % (
        a.runs, "back to back" if not a.pause_ms else "%g ms apart" % a.pause_ms,
        os.cpu_count(), os.uname().release))
    for name, (takes, rtt) in res.items():
        print("%-6s takes: %s us on the loop; %d of %d made on the loop; round trip %s ms" % (
            name, q([us for _, us in takes]), sum(1 for k, _ in takes if k == "made now"),
            len(takes), q(rtt)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
