"""watch_zygote.py KILN [RUNS]: watch.sh's open figure for runs from the
Python zygote, whose watcher is zygote_watch.py: one open of a workspace
file (median over RUNS runs of 2000 opens each, timed inside the code)
with the default names to hide against the same server with none
(hideReplacingDefaults: [], no watcher). Prints one line."""
import os
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "workspace"))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import workspace as w  # noqa: E402

CODE = ("import time\nt = time.perf_counter()\nfor _ in range(2000):\n"
        "    open('sales.csv').close()\n"
        "print('%.2f' % ((time.perf_counter() - t) / 2000 * 1e6))\n")


def main():
    kiln, runs = os.path.abspath(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 7
    w.ZYGOTE = True
    tmp = tempfile.mkdtemp(prefix="kiln-bench-watchz-")
    os.chmod(tmp, 0o755)
    try:
        os.makedirs(os.path.join(tmp, "a"))
        proj = w.make_project(os.path.join(tmp, "a"))
        servers = {"watch": w.Kiln(kiln, w.uri(proj)),
                   "none": w.Kiln(kiln, w.uri(proj), config={
                       "sandbox": {"workspace": {"hideReplacingDefaults": []}}})}
        vals = {"watch": [], "none": []}
        try:
            for _ in range(runs):
                for label, k in servers.items():
                    res, err = k.run(CODE)
                    if res is None or res.get("exitCode") != 0:
                        print("watch_zygote: a run failed: %r %r" % (err, k.out))
                        return 1
                    vals[label].append(float(k.out["stdout"].strip()))
        finally:
            for k in servers.values():
                k.close()
        a, b = statistics.median(vals["watch"]), statistics.median(vals["none"])
        print("  one open, run from the zygote  %8.1f us   peer %8.1f us   %.2fx" % (a, b, a / b))
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
