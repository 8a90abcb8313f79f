#!/bin/sh
# watch.sh: what the live masks cost (docs/security.md, "Names made
# during a run"). In a box with a workspace and names to hide, each open,
# rename and link of the code goes through the watcher; the same run in
# the same folder with no names to hide (hideReplacingDefaults: [])
# starts no watcher and is the peer. Printed: one open of a workspace
# file (median over 2000, timed inside the code) and a whole `kiln run`
# that imports json, csv and email and reads the file 200 times (median
# wall time), each beside its peer as a ratio; then the open for runs from
# the zygote (tests/bench/watch_zygote.py); runs interleaved. Not a
# test: nothing fails on a number. KILN=path overrides the binary; RUNS=N
# the repetitions.
set -eu
cd "$(dirname "$0")/../.."
KILN=${KILN:-build/kiln}
RUNS=${RUNS:-9}
[ -x "$KILN" ] || make --no-print-directory build/kiln >/dev/null
tmp=$(mktemp -d /tmp/kiln-bench-watch.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
chmod 755 "$tmp"
cp "$KILN" "$tmp/kiln"
mkdir "$tmp/proj"
python3 -c 'import sys; open(sys.argv[1], "w").write("month,total\n" + "".join("2026-%02d,%d\n" % (m % 12 + 1, m) for m in range(500)))' "$tmp/proj/sales.csv"
printf '{"sandbox": {"zygote": false}}' >"$tmp/watch.json"
printf '{"sandbox": {"zygote": false, "workspace": {"hideReplacingDefaults": []}}}' >"$tmp/none.json"
cat >"$tmp/code.py" <<'PY'
import time, json, csv, email.parser
n = 2000
t = time.perf_counter()
for _ in range(n):
    open("sales.csv").close()
print("%.2f" % ((time.perf_counter() - t) / n * 1e6))
PY
cat >"$tmp/run.py" <<'PY'
import json, csv, email.parser
for _ in range(200):
    with open("sales.csv") as f:
        rows = list(csv.reader(f))
PY
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
: >"$tmp/open.watch"
: >"$tmp/open.none"
: >"$tmp/wall.watch"
: >"$tmp/wall.none"
i=0
while [ $i -lt "$RUNS" ]; do
	for c in watch none; do
		(cd "$tmp/proj" && "$tmp/kiln" run --config "$tmp/$c.json" "$tmp/code.py") >>"$tmp/open.$c" 2>/dev/null
		s=$(date +%s%N)
		(cd "$tmp/proj" && "$tmp/kiln" run --config "$tmp/$c.json" "$tmp/run.py") >/dev/null 2>&1
		e=$(date +%s%N)
		echo $(((e - s) / 1000)) >>"$tmp/wall.$c"
	done
	i=$((i + 1))
done
ow=$(median <"$tmp/open.watch")
on=$(median <"$tmp/open.none")
ww=$(median <"$tmp/wall.watch")
wn=$(median <"$tmp/wall.none")
awk -v ow="$ow" -v on="$on" -v ww="$ww" -v wn="$wn" -v runs="$RUNS" 'BEGIN {
	printf "live masks, %d interleaved runs each (peer: the same folder, no names to hide, no watcher)\n", runs
	printf "  one open of a workspace file   %8.1f us   peer %8.1f us   %.2fx\n", ow, on, ow / on
	printf "  kiln run: 3 imports, 200 reads %8.1f ms   peer %8.1f ms   %.2fx\n", ww / 1000, wn / 1000, ww / wn
}'
# The zygote's runs: their watcher is Python (zygote_watch.py).
python3 tests/bench/watch_zygote.py "$tmp/kiln" "$RUNS"
