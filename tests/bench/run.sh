#!/bin/sh
# run.sh: `make bench`. Runs every tests/bench/*.sh other than itself, in
# name order, each printing its own measurements. The bench asserts no
# times; it fails only when a bench script itself fails to run.
#
# Each script also appends its ratios, machine-readable, to the file named
# by KILN_BENCH_FIGURES (tests/bench/figures.py). At the end this compares
# them with the committed baseline (tests/bench/baseline.tsv), printing each
# figure's change and marking a ratio worse by more than 15%; the marks
# are a verdict only when the load average (1 min) at the start was below
# BENCH_QUIET_LOAD (default 1.5). It writes the run's figures to
# build/bench-figures.tsv and docs/performance.md with the rows this run
# produced regenerated to build/performance.md (never the page itself).
#   BENCH_UPDATE_BASELINE=1  rewrite tests/bench/baseline.tsv from this run
#   BENCH_ONLY="latency validate"  run only these scripts (names without .sh)
set -u
cd "$(dirname "$0")/../.."

quiet_below=${BENCH_QUIET_LOAD:-1.5}
load=$(cut -d' ' -f1 /proc/loadavg)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
mkdir -p build
figs=build/bench-figures.tsv
: >"$figs"
KILN_BENCH_FIGURES=$PWD/$figs
export KILN_BENCH_FIGURES

failed=""
for b in tests/bench/*.sh; do
	name=$(basename "$b" .sh)
	[ "$name" = run.sh ] || [ "$name" = run ] && continue
	if [ -n "${BENCH_ONLY:-}" ]; then
		case " $BENCH_ONLY " in *" $name "*) ;; *) continue ;; esac
	fi
	echo "=== bench: $name"
	if ! sh "$b"; then
		failed="$failed $(basename "$b")"
	fi
	echo
done

echo "=== baseline (load average at the start $load; quiet below $quiet_below)"
python3 tests/bench/figures.py compare tests/bench/baseline.tsv "$figs" \
	--load "$load" --quiet-below "$quiet_below" || failed="$failed figures.py"
python3 tests/bench/figures.py table "$figs" docs/performance.md build/performance.md \
	--load "$load" --quiet-below "$quiet_below" --commit "$commit" || failed="$failed figures.py"
if [ "${BENCH_UPDATE_BASELINE:-0}" = 1 ]; then
	python3 tests/bench/figures.py baseline "$figs" tests/bench/baseline.tsv \
		--load "$load" --quiet-below "$quiet_below" --commit "$commit" &&
		echo "rewrote tests/bench/baseline.tsv from this run (load $load)" ||
		failed="$failed figures.py"
fi
if [ -n "$failed" ]; then
	echo "bench scripts that failed to run:$failed"
	exit 1
fi
