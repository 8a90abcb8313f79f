#!/bin/sh
# fuzz.sh [--artifacts DIR] SECONDS: run every built libFuzzer target
# (build/fuzz/fuzz_NAME, from tests/fuzz/fuzz_NAME.c) for SECONDS each.
# First each target replays its regression inputs (tests/fuzz/regressions/
# NAME/), then it fuzzes from its seeds (tests/fuzz/corpus/NAME/) in a work
# corpus under build/fuzz/, so the repository's seeds stay small. A crash
# is saved as a regression input: in tests/fuzz/regressions/NAME/ by
# default (`make fuzz`), or in DIR. One count per target; last line
# "fuzz: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."

artifacts=""
if [ "${1:-}" = "--artifacts" ]; then
	artifacts=$2
	shift 2
fi
seconds=${1:-60}

pass=0
fail=0
for src in tests/fuzz/fuzz_*.c; do
	[ -e "$src" ] || continue
	target=$(basename "$src" .c)
	name=${target#fuzz_}
	bin=build/fuzz/$target
	if [ ! -x "$bin" ]; then
		echo "$target: not built (run 'make fuzz-build')"
		fail=$((fail + 1))
		continue
	fi
	seeds=tests/fuzz/corpus/$name
	regs=tests/fuzz/regressions/$name
	work=build/fuzz/corpus-$name
	out=${artifacts:-$regs}
	mkdir -p "$seeds" "$regs" "$work" "$out"
	log=build/fuzz/$target.log
	ok=1

	# 1. Every input that once crashed must pass now.
	if [ -n "$(ls -A "$regs")" ]; then
		if ! "$bin" -runs=0 "$regs"/* >"$log" 2>&1; then
			ok=0
			tail -n 40 "$log"
			echo "$target: a regression input fails again (see $log)"
		fi
	fi

	# 2. Fuzz for the time given. -timeout catches hangs; -rss_limit_mb
	# leaks; the dictionary, when there is one, speeds up the protocol.
	dict=""
	[ -f "tests/fuzz/$target.dict" ] && dict="-dict=tests/fuzz/$target.dict"
	if [ "$ok" = 1 ]; then
		# shellcheck disable=SC2086
		if ! "$bin" $dict -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
			-max_len=65536 -print_final_stats=1 -artifact_prefix="$out/" \
			"$work" "$seeds" >"$log" 2>&1; then
			ok=0
			tail -n 60 "$log"
			echo "$target: crash saved in $out/ (see $log)"
		fi
	fi
	runs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
	if [ "$ok" = 1 ]; then
		echo "$target: passed (${runs:-0} runs in ${seconds}s)"
		pass=$((pass + 1))
	else
		echo "$target: failed"
		fail=$((fail + 1))
	fi
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
