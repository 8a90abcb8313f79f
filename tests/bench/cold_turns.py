#!/usr/bin/env python3
"""cold_turns.py: a cold `kiln run` (the box built at the request) against
bubblewrap with a comparable box, in turns (tests/bench/cold.sh makes the
folders, the config and the filter, and runs this). Not a test: it fails
only when a side does not do what it claims (checked before any timing).

  cold_turns.py KILN CONFIG BPF N PAUSE LABEL=DIR... [--old OLD]

For each LABEL=DIR (DIR "/": no workspace), started in DIR: `KILN run
--config CONFIG --lang bash -` with `exit 0` on its stdin, against
`bwrap` (new user, pid, mount, ipc, uts, net and cgroup namespaces; /usr
and /etc read-only, the /bin, /lib... symlinks, a fresh /proc and /dev,
tmpfs /tmp and /work, the environment cleared, a new session, the box's
uid 1000, kiln's own seccomp program from BPF, and DIR bound read-only
as the working folder unless it is "/") running `bash -c 'exit 0'`.
Each is a process started by this one (posix_spawn) and waited for
(wait4): spawn to reaped, and the CPU of the process and of the children
it reaped (rusage). N turns; in each, the two sides go in an alternating
order, each after PAUSE seconds. Printed per row: the medians, the median
of the turns' ratios with its middle half, the CPU a run of each side.
With --old OLD, a second kiln binary takes a turn too (rotating order),
and its ratio to bwrap and to KILN is printed beside (not added to the
figures). With KILN_BENCH_FIGURES set, each row's ratio is added as cold.LABEL
(tests/bench/figures.py).
"""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import figures  # noqa: E402

CODE = "exit 0\n"


def bwrap_argv(folder):
    argv = ["bwrap", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-net", "--unshare-cgroup", "--die-with-parent", "--new-session",
            "--uid", "1000", "--gid", "1000", "--hostname", "kiln",
            "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
            "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--symlink", "usr/sbin", "/sbin", "--ro-bind", "/etc", "/etc",
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/work",
            "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/work",
            "--seccomp", "3"]
    if folder != "/":
        argv += ["--ro-bind", folder, folder, "--chdir", folder]
    else:
        argv += ["--chdir", "/"]
    return argv + ["bash", "-c", CODE]


def spawn(argv, stdin, bpf, out=os.devnull, err=os.devnull):
    """Start argv (stdin from a file, fd 3 the filter), wait; (ms, cpu ms, status)."""
    acts = [(os.POSIX_SPAWN_OPEN, 0, stdin, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
            (os.POSIX_SPAWN_OPEN, 2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
            (os.POSIX_SPAWN_OPEN, 3, bpf, os.O_RDONLY, 0)]
    t0 = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=acts)
    _, status, ru = os.wait4(pid, 0)
    t1 = time.perf_counter()
    return (t1 - t0) * 1000, (ru.ru_utime + ru.ru_stime) * 1000, status


def middle(xs):
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return statistics.median(xs), q[0], q[2]


def check(kiln_argv, bwrap, folder, stdin, bpf, tmp):
    """Both sides exit 0; kiln's run is cold and has the workspace it should."""
    res = os.path.join(tmp, "check.err")
    _, _, st = spawn(kiln_argv[:2] + ["--json"] + kiln_argv[2:], stdin, bpf, err=res)
    lines = open(res).read().splitlines()
    if os.waitstatus_to_exitcode(st) != 0 or not lines:
        sys.exit("cold bench: kiln run failed in %s: %s" % (folder, lines))
    out = json.loads(lines[-1])
    want = None if folder == "/" else folder
    if out.get("warmBox") or out.get("zygote") or out.get("workspace") != want:
        sys.exit("cold bench: kiln's run in %s is not a cold run with workspace %s: %s"
                 % (folder, want, {k: out.get(k) for k in ("warmBox", "zygote", "workspace")}))
    _, _, st = spawn(bwrap, stdin, bpf, err=res)
    if os.waitstatus_to_exitcode(st) != 0:
        sys.exit("cold bench: bwrap failed in %s: %s" % (folder, open(res).read()))


WHAT = {"none": "started in / (no workspace)", "folder": "an empty project folder",
        "checkout": "a checkout"}


def row(label, folder, kiln, old, config, bpf, n, pause, tmp):
    stdin = os.path.join(tmp, "exit0.sh")
    with open(stdin, "w") as f:
        f.write(CODE)
    os.chdir(folder)
    argv = {"kiln": [kiln, "run", "--config", config, "--lang", "bash", "-"],
            "bwrap": bwrap_argv(folder)}
    if old:
        argv["old"] = [old] + argv["kiln"][1:]
    check(argv["kiln"], argv["bwrap"], folder, stdin, bpf, tmp)
    if old:
        check(argv["old"], argv["bwrap"], folder, stdin, bpf, tmp)
    names = list(argv)
    ms = {s: [] for s in names}
    cpu = {s: [] for s in names}
    ratios, old_ratios, old_new = [], [], []
    for i in range(n):
        k = i % len(names)
        sides = names[k:] + names[:k]
        if i // len(names) % 2:
            sides.reverse()
        got = {}
        for s in sides:
            time.sleep(pause)
            t, c, st = spawn(argv[s], stdin, bpf)
            if os.waitstatus_to_exitcode(st) != 0:
                sys.exit("cold bench: %s failed in a timed turn in %s" % (s, folder))
            got[s] = t
            ms[s].append(t)
            cpu[s].append(c)
        ratios.append(got["kiln"] / got["bwrap"])
        if old:
            old_ratios.append(got["old"] / got["bwrap"])
            old_new.append(got["kiln"] / got["old"])
    mk, mb = statistics.median(ms["kiln"]), statistics.median(ms["bwrap"])
    med, lo, hi = middle(ratios)
    ck, cb = statistics.mean(cpu["kiln"]), statistics.mean(cpu["bwrap"])
    print("  %-30s kiln %6.2f ms  bwrap %6.2f ms  %5.2fx (middle half %.2f-%.2f); "
          "CPU a run kiln %.1f ms, bwrap %.1f ms" % (WHAT.get(label, label), mk, mb, med, lo, hi,
                                                     ck, cb))
    if old:
        om, olo, ohi = middle(old_ratios)
        nm, nlo, nhi = middle(old_new)
        print("  %-30s old  %6.2f ms  %5.2fx bwrap (middle half %.2f-%.2f); CPU a run %.1f ms;"
              " kiln/old %.2fx (middle half %.2f-%.2f)"
              % ("", statistics.median(ms["old"]), om, olo, ohi, statistics.mean(cpu["old"]),
                 nm, nlo, nhi))
    figures.add("cold." + label, med, "lower-is-better",
                "%.2f ms (CPU %.1f ms)" % (mk, ck), "bwrap, %.2f ms (CPU %.1f ms)" % (mb, cb))


def main():
    args = sys.argv[1:]
    old = None
    if "--old" in args:
        i = args.index("--old")
        old = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    if len(args) < 6:
        sys.exit(__doc__)
    kiln, config, bpf = (os.path.abspath(a) for a in args[0:3])
    n, pause = int(args[3]), float(args[4])
    tmp = os.path.dirname(config)
    for arg in args[5:]:
        label, _, folder = arg.partition("=")
        row(label, folder, kiln, old, config, bpf, n, pause, tmp)


if __name__ == "__main__":
    main()
