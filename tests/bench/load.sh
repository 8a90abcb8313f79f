#!/bin/sh
# load.sh: many runs through one server (issue 11). 200 snippet/run
# requests, 20 in flight at any time (20 clients' worth, through one
# connection), each printing 64 KiB of its own text and leaving an
# artifact; every byte of output and every artifact checked, and no box
# process left (tests/sandbox/disk_load.py --bench, the same code as
# 31-disk-load's small load test). Printed: the time and runs a second
# against the same 200 runs one at a time, with the default
# sandbox.maxConcurrentRuns against no cap (4096), and the server's
# resident memory idle (after initialize, and after one run), at its peak
# and after the load, as a ratio to idle. Not a test: nothing here fails
# on a number; it fails when output is lost or a box is left. KILN=path
# overrides the binary; RUNS=N and INFLIGHT=N the load.
set -eu
cd "$(dirname "$0")/../.."
KILN=${KILN:-build/kiln}
RUNS=${RUNS:-200}
INFLIGHT=${INFLIGHT:-20}
[ -x "$KILN" ] || make --no-print-directory build/kiln >/dev/null
tmp=$(mktemp -d /tmp/kiln-bench-load.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
cp "$KILN" "$tmp/kiln"
load() { # load IN_FLIGHT [MAX_CONCURRENT]: the figures as JSON
	python3 tests/sandbox/disk_load.py --kiln "$tmp/kiln" --bench "$RUNS" "$1" \
		${2:+--max-concurrent "$2"}
}
cores=$(nproc)
echo "load bench: $RUNS runs through one server ($cores cores, kernel $(uname -r))"
many=$(load "$INFLIGHT")
one=$(load 1)
nocap=$(load "$INFLIGHT" 4096)
python3 - "$RUNS" "$INFLIGHT" "$cores" "$many" "$one" "$nocap" <<'PY'
import json, sys
runs, inflight, cores = map(int, sys.argv[1:4])
many, one, nocap = (json.loads(a) for a in sys.argv[4:7])
for f in (many, one, nocap):
    if f["error"]:
        sys.exit("load bench: " + f["error"])
row = "  %-44s %7.2f s  %6.1f runs/s"
print(row % ("%d in flight, maxConcurrentRuns %d (default)" % (inflight, 2 * max(cores, 1)),
             many["seconds"], runs / many["seconds"]))
print(row % ("one at a time", one["seconds"], runs / one["seconds"]) +
      "  %5.2fx the time of %d in flight" % (one["seconds"] / many["seconds"], inflight))
print(row % ("%d in flight, no cap (4096)" % inflight, nocap["seconds"], runs / nocap["seconds"]) +
      "  %5.2fx the time with the cap" % (nocap["seconds"] / many["seconds"]))
print("  every run's 64 KiB of output and its artifact arrived; no box process left")
print("  server resident memory, %d in flight (KiB):" % inflight)
print("    idle after initialize %d, idle after one run %d" % (many["idle_kb"], many["warm_kb"]))
print("    peak %d (%.2fx idle), after the load %d (%.2fx idle)" % (
    many["peak_kb"], many["peak_kb"] / many["warm_kb"], many["after_kb"],
    many["after_kb"] / many["warm_kb"]))
print("    no cap: peak %d (%.2fx the peak with the cap)" % (
    nocap["peak_kb"], nocap["peak_kb"] / many["peak_kb"]))
PY
