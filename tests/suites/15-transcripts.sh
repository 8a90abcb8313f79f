#!/bin/sh
# 15-transcripts.sh: play every protocol transcript (protocol/transcripts/
# **/*.test: the core's at the top, each subsystem's in its folder) against
# fresh sanitizer-built servers with `kiln replay`, which prints PASS or
# FAIL per file with a diff of the first mismatch. Then the transcripts
# that must FAIL (tests/transcripts-fail/*.test: each one a mismatch the
# matcher must catch, its first line "# must fail: TEXT" naming the reason
# replay must print): each passes only when replay fails it, for that
# reason. A matcher that lets everything through fails every one of them.
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

for t in tests/transcripts-fail/*.test; do
	[ -e "$t" ] || continue
	want=$(sed -n '1s/^# must fail: //p' "$t")
	out=$("$kiln" replay "$t" 2>&1)
	rc=$?
	if [ -z "$want" ]; then
		echo "not ok $t: its first line is not '# must fail: TEXT'"
		fail=$((fail + 1))
	elif [ "$rc" -eq 0 ] || ! echo "$out" | grep -q "^FAIL $t" ||
		! echo "$out" | grep -qF -- "$want"; then
		echo "not ok $t: replay did not fail it with \"$want\" (exit $rc):"
		echo "$out" | sed 's/^/    /' | head -n 20
		fail=$((fail + 1))
	else
		echo "ok $t fails as it must: $want"
		pass=$((pass + 1))
	fi
done
echo "transcripts: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
