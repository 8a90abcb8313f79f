#!/usr/bin/env python3
"""workspace_turns.py: what each of the workspace's steps costs a run,
against the same run without that step, in turns (tests/bench/workspace.sh
makes the folders and the configs and runs it). Not a test: it fails only
when a side is not what it claims to be (checked before any timing).

  workspace_turns.py cost  KILN CONFIG LANG CODE N PAUSE PLAIN SECRETS LIST
      three servers, each initialized alike but for its workspace: none,
      PLAIN, SECRETS (the same tree as PLAIN, with LIST's files named as
      secrets where PLAIN's are not). Prints the workspace's cost (PLAIN
      against none) and the masks' (SECRETS against PLAIN).
  workspace_turns.py idmap KILN CONFIG LANG CODE N PAUSE FOLDER
      as root: two servers on FOLDER (root's), one as kiln runs, one with
      KILN_BENCH_NO_IDMAP=1 (no idmapped lower layer; host.h). Checks
      first that code can append to FOLDER's sales.csv in the first and
      not in the second.
  workspace_turns.py keep  KILN CONFIG N PAUSE FOLDER
      one server on FOLDER: a run that writes 10 MiB into the folder
      (a binary change, copied into the run's folder) against one that
      writes the same bytes to the box's scratch /work (nothing kept); then
      workspace/applyChanges of the kept file against `cp` of it, and
      against `cp` followed by the fsyncs apply makes (the file, its
      directory). Each applied file and each copy is removed after its
      turn (not timed), so the next run's file is a new one again.

CONFIG: the servers' --config. LANG, CODE: the timed run. N: turns;
PAUSE: seconds before each timed step (as between a person's runs: the
warm box, or the zygote's spare, is ready). In each turn the sides go in
a rotating order; the ratio is taken turn by turn and its median printed
with the middle half of the turns' ratios. Beside them, what load moves
much less: each server's CPU a run over the turns (/proc/PID/stat, the
spares it builds included) and the median of the box's (cgroup cpuMs). Python servers are first
waited for until their runs come from the zygote (the default path).
"""
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import kilnrpc  # noqa: E402

MIB10 = 10 << 20
# 10 MiB that no text check takes for text (bytes 0-255), made cheaply.
BLOB = "bytes(range(256)) * %d" % (MIB10 // 256)


class Server:
    def __init__(self, kiln, config, root=None, env=None):
        e = dict(os.environ)
        e.pop("KILN_BENCH_NO_IDMAP", None)
        e.update(env or {})
        self.p = subprocess.Popen([kiln, "--config", config], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=e)
        self.rid = 0
        params = {"rootUri": "file://" + os.path.abspath(root)} if root else {}
        self.call("initialize", params)

    def call(self, method, params):
        """(seconds to the answer, its result, the run's output)."""
        self.rid += 1
        rid = self.rid
        t0 = time.perf_counter()
        kilnrpc.send(self.p, {"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        out = ""
        while True:
            m = kilnrpc.recv(self.p.stdout)
            if m is None:
                raise SystemExit("a kiln server ended")
            if m.get("method") == "run/output":
                out += m["params"]["text"]
            elif m.get("id") == rid:
                dt = time.perf_counter() - t0
                if "error" in m:
                    raise SystemExit("%s: %s" % (method, m["error"]["message"]))
                return dt, m["result"], out

    def run(self, lang, code):
        return self.call("snippet/run", {"language": lang, "code": code})

    def zygote_ready(self):
        """Wait until Python runs come from the zygote (built once the
        server is idle after a first run)."""
        deadline = time.time() + 120
        while time.time() < deadline:
            _, res, _ = self.run("python", "pass")
            if res.get("zygote"):
                return
            time.sleep(0.5)
        raise SystemExit("no run came from the zygote in 120 s")

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def cpu_ms(pid):
    """User + system CPU ms of process pid (all its threads) so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def timed_runs(servers, lang, code, n, pause):
    """n turns of a run of lang code through each server: (the times,
    each server's CPU a run in ms over the turns (spares built
    included), the median of each one's box CPU (its cgroup's cpuMs))."""
    boxes = [[] for _ in servers]

    def step(i):
        def f():
            dt, res, _ = servers[i].run(lang, code)
            boxes[i].append((res.get("cgroup") or {}).get("cpuMs"))
            return dt
        return f

    c0 = [cpu_ms(s.p.pid) for s in servers]
    t = turns(n, pause, [step(i) for i in range(len(servers))])
    cpu = [(cpu_ms(s.p.pid) - c) / n for s, c in zip(servers, c0)]
    return t, cpu, [box_median(b) for b in boxes]


def box_median(xs):
    """The median of the boxes' cpuMs, or None without a cgroup (then
    the result has none: a server that is not root, or no cgroup v2)."""
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def box_text(b):
    return "%.0f" % b if b is not None else "? (no cgroup)"


def cpu_row(labels, cpu, box):
    """Where the load moves times, CPU moves much less: each side's."""
    print("  %-46s %s" % ("CPU a run, server + box (ms):", ", ".join(
        "%s %.1f + %s" % (lab, c, box_text(b)) for lab, c, b in zip(labels, cpu, box))))


def zygotes_ready(servers):
    """Wait until each server's Python runs come from its zygote; a
    first run in each first, so that they build their zygotes at once."""
    for s in servers:
        s.run("python", "pass")
    for s in servers:
        s.zygote_ready()


def middle(xs):
    """The median and the middle half (quartiles) of xs."""
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return statistics.median(xs), q[0], q[2]


def ratio_row(label, ms, peer_label, ratios):
    med, lo, hi = middle(ratios)
    print("  %-46s %8.2f ms  %6.2fx %s (median of turns, middle half %.2f-%.2f)"
          % (label, ms, med, peer_label, lo, hi))


def turns(n, pause, steps):
    """n turns of steps (functions returning seconds), each after pause,
    in a rotating order; their times in ms, per step."""
    times = [[] for _ in steps]
    for i in range(n):
        k = i % len(steps)
        order = list(range(k, len(steps))) + list(range(k))
        if i % 2:
            order.reverse()
        for j in order:
            time.sleep(pause)
            times[j].append(steps[j]() * 1000)
    return times


def cost(kiln, config, lang, code, n, pause, plain, secrets, listed):
    names = [line.split() for line in open(listed).read().splitlines() if line]
    servers = [Server(kiln, config), Server(kiln, config, plain), Server(kiln, config, secrets)]
    try:
        # Each side is what it claims: SECRETS's listed files are masked,
        # PLAIN's files at the same places are read. In bash: a Python
        # run would have the servers build their zygotes, whose imports
        # would then take a core while /bin/true is timed.
        probe = ("n=0; for p in %s; do cat \"$p\" >/dev/null 2>&1 && n=$((n + 1)); done; "
                 "echo $n")
        _, res0, _ = servers[0].run("bash", "true")
        _, res1, out_plain = servers[1].run("bash", probe % " ".join(p for p, _ in names))
        _, res2, out_secret = servers[2].run("bash", probe % " ".join(s for _, s in names))
        seen = [r.get("workspace") for r in (res0, res1, res2)]
        if seen != [None, os.path.abspath(plain), os.path.abspath(secrets)]:
            raise SystemExit("the runs' workspaces are not what they claim: %r" % seen)
        if out_plain.strip() != str(len(names)) or out_secret.strip() != "0":
            raise SystemExit("the folders are not what they claim: %d plain files read %s, "
                             "%d secrets read %s" % (len(names), out_plain.strip(), len(names),
                                                     out_secret.strip()))
        if lang == "python":
            zygotes_ready(servers)
        for s in servers:
            s.run(lang, code)
        t, cpu, box = timed_runs(servers, lang, code, n, pause)
    finally:
        for s in servers:
            s.close()
    none, ws, sec = (statistics.median(x) for x in t)
    print("  %-46s %8.2f ms" % ("no workspace", none))
    ratio_row("with the workspace (no secrets)", ws, "none", [b / a for a, b in zip(t[0], t[1])])
    ratio_row("with %d secrets masked" % len(names), sec, "no secrets",
              [b / a for a, b in zip(t[1], t[2])])
    cpu_row(["none", "workspace", "secrets"], cpu, box)


def idmap(kiln, config, lang, code, n, pause, folder):
    servers = [Server(kiln, config, folder),
               Server(kiln, config, folder, {"KILN_BENCH_NO_IDMAP": "1"})]
    try:
        # The idmapped lower layer lets the box (nobody) change root's
        # file in its layer; without it, it cannot. (In bash: see cost.)
        probe = (
            "if [ -f sales.csv ] && (echo x >>sales.csv) 2>/dev/null; then echo wrote; "
            "else echo refused; fi")
        got = [s.run("bash", probe)[2].strip() for s in servers]
        if got != ["wrote", "refused"]:
            raise SystemExit("the sides are not what they claim (appending to root's file, "
                             "with the idmapped mount and without): %r" % got)
        if lang == "python":
            zygotes_ready(servers)
        for s in servers:
            s.run(lang, code)
        t, cpu, box = timed_runs(servers, lang, code, n, pause)
    finally:
        for s in servers:
            s.close()
    print("  %-46s %8.2f ms" % ("without it (KILN_BENCH_NO_IDMAP=1)", statistics.median(t[1])))
    ratio_row("with the idmapped lower layer", statistics.median(t[0]), "without",
              [a / b for a, b in zip(t[0], t[1])])
    cpu_row(["with", "without"], cpu, box)


def keep(kiln, config, n, pause, folder):
    s = Server(kiln, config, folder)
    into = "n = open('blob.bin', 'wb').write(%s)" % BLOB
    # /work in the box is its scratch tmpfs (the folder is at its own
    # path), as the upper layer is a tmpfs; and the validator lets code
    # write there (it would deny /tmp, outside the workspace).
    scratch = "n = open('/work/blob.bin', 'wb').write(%s)" % BLOB
    dest = os.path.join(folder, "blob.bin")
    copy = os.path.join(folder, "blob-cp.bin")
    stored = []  # (runId, the kept copy) of each kept run
    cur = [None]  # the one apply and cp take

    cpu = {"kept": [], "not": [], "apply": []}  # server CPU ms during each call; box cpuMs

    def run(code, key):
        c0 = cpu_ms(s.p.pid)
        dt, res, out = s.run("python", code)
        cpu[key].append((cpu_ms(s.p.pid) - c0, (res.get("cgroup") or {}).get("cpuMs")))
        return dt, res, out

    def kept():
        dt, res, _ = run(into, "kept")
        ch = res.get("workspaceChanges") or []
        if len(ch) != 1 or ch[0].get("path") != dest or not ch[0].get("stored") or \
                ch[0].get("size") != MIB10:
            raise SystemExit("the 10 MiB file was not kept: %r" % ch)
        stored.append((res["runId"], ch[0]["stored"]))
        return dt

    def not_kept():
        dt, res, _ = run(scratch, "not")
        if res.get("exitCode") != 0 or res.get("workspaceChanges"):
            raise SystemExit("the run writing /work failed or changed the folder: %r" % res)
        return dt

    def apply():
        run_id, _ = cur[0]
        c0 = cpu_ms(s.p.pid)
        dt, res, _ = s.call("workspace/applyChanges", {"runId": run_id})
        cpu["apply"].append((cpu_ms(s.p.pid) - c0, 0))
        if res.get("applied") != [dest]:
            raise SystemExit("workspace/applyChanges applied %r" % res)
        os.unlink(dest)
        return dt

    def cp(sync=False):
        src = cur[0][1]
        t0 = time.perf_counter()
        subprocess.run(["cp", src, copy], check=True)
        if sync:
            for p, flags in ((copy, os.O_RDONLY), (folder, os.O_RDONLY | os.O_DIRECTORY)):
                fd = os.open(p, flags)
                os.fsync(fd)
                os.close(fd)
        dt = time.perf_counter() - t0
        if os.path.getsize(copy) != MIB10:
            raise SystemExit("cp copied %d bytes" % os.path.getsize(copy))
        os.unlink(copy)
        return dt

    try:
        zygotes_ready([s])
        kept()
        cur[0] = stored[0]
        apply()
        # The runs in turns, then each turn's kept file applied and
        # copied in turns (apply and cp read the same kept copy).
        for v in cpu.values():
            v.clear()
        runs = turns(n, pause, [kept, not_kept])
        ap = [[], [], []]
        for i in range(n):
            cur[0] = stored[1 + i]  # turn i's kept file (the ledger keeps 32 runs')
            steps = [apply, cp, lambda: cp(True)]
            order = [0, 1, 2] if i % 2 == 0 else [2, 1, 0]
            for j in order:
                time.sleep(pause)
                ap[j].append(steps[j]() * 1000)
    finally:
        for p in (dest, copy):
            if os.path.exists(p):
                os.unlink(p)
        s.close()
    print("  %-46s %8.2f ms" % ("writing 10 MiB to the box's /work (not kept)",
                                statistics.median(runs[1])))
    ratio_row("writing 10 MiB into the folder (kept)", statistics.median(runs[0]), "/work",
              [a / b for a, b in zip(runs[0], runs[1])])
    print("  %-46s %8.2f ms" % ("cp of the kept 10 MiB into the folder", statistics.median(ap[1])))
    print("  %-46s %8.2f ms" % ("cp, then fsync of the file and the folder",
                                statistics.median(ap[2])))
    ratio_row("workspace/applyChanges of it", statistics.median(ap[0]), "cp",
              [a / b for a, b in zip(ap[0], ap[1])])
    ratio_row("", statistics.median(ap[0]), "cp + fsyncs",
              [a / b for a, b in zip(ap[0], ap[2])])
    # The server's CPU during each call (in clock ticks: averaged over
    # the turns), and the box's.
    mean = [sum(c for c, _ in cpu[k]) / len(cpu[k]) for k in ("kept", "not", "apply")]
    box = [box_text(box_median([b for _, b in cpu[k]])) for k in ("kept", "not")]
    print("  %-46s kept %.1f + %s, not kept %.1f + %s; apply: server %.1f"
          % ("CPU a call, server + box (ms):", mean[0], box[0], mean[1], box[1], mean[2]))


def main():
    mode, kiln, config = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "cost":
        lang, code, n, pause = sys.argv[4], sys.argv[5], int(sys.argv[6]), float(sys.argv[7])
        cost(kiln, config, lang, code, n, pause, *sys.argv[8:11])
    elif mode == "idmap":
        lang, code, n, pause = sys.argv[4], sys.argv[5], int(sys.argv[6]), float(sys.argv[7])
        idmap(kiln, config, lang, code, n, pause, sys.argv[8])
    elif mode == "keep":
        keep(kiln, config, int(sys.argv[4]), float(sys.argv[5]), sys.argv[6])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
