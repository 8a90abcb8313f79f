#!/bin/sh
# 15-transcripts.sh: play every protocol transcript (protocol/transcripts/
# **/*.test: the core's at the top, each subsystem's in its folder) against
# fresh sanitizer-built servers with `kiln replay`, which prints PASS or
# FAIL per file with a diff of the first mismatch.
# Last line: "transcripts: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."

kiln=build/asan/kiln
files=$(find protocol/transcripts -name '*.test' -type f | LC_ALL=C sort)
total=$(echo "$files" | grep -c . || true)
if [ ! -x "$kiln" ]; then
	echo "$kiln is not built (run 'make asan')"
	echo "transcripts: 0 passed, $total failed"
	exit 1
fi
if [ "$total" -eq 0 ]; then
	echo "no transcripts found"
	echo "transcripts: 0 passed, 1 failed"
	exit 1
fi

out=$(mktemp)
# shellcheck disable=SC2086
"$kiln" replay $files 2>&1 | tee "$out"
line=$(grep -E '^replay: [0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
rm -f "$out"
if [ -z "$line" ]; then
	echo "kiln replay printed no summary: counting every transcript as failed"
	echo "transcripts: 0 passed, $total failed"
	exit 1
fi
pass=$(echo "$line" | sed -E 's/^replay: ([0-9]+) passed, ([0-9]+) failed.*/\1/')
fail=$(echo "$line" | sed -E 's/^replay: ([0-9]+) passed, ([0-9]+) failed.*/\2/')
# A transcript replay did not get to (it stopped early) is a failure.
missing=$((total - pass - fail))
[ "$missing" -gt 0 ] && fail=$((fail + missing))
echo "transcripts: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
