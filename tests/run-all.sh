#!/bin/sh
# run-all.sh: run every test suite (tests/suites/*.sh, in name order), then
# print one line "N passed, N failed, N skipped" summing them. Each suite
# prints its own last line "NAME: N passed, N failed" (with ", N skipped"
# or "(N skipped...)" when it skipped any); a suite that prints none counts
# as one failure, and so does one that exits non-zero while its line says
# "0 failed" (it crashed, or stopped before counting everything).
# Skips are counted and shown, never added to the passes. A suite decides
# what may be skipped: a tool that `make test` installs (server/tools/
# deps.sh test) being absent is a failure there, not a skip.
set -u
cd "$(dirname "$0")/.."

total_pass=0
total_fail=0
total_skip=0
summary=""
for suite in tests/suites/*.sh; do
	name=$(basename "$suite" .sh)
	echo "=== $name"
	log=$(mktemp)
	rcfile=$(mktemp)
	{
		sh "$suite" 2>&1
		echo $? >"$rcfile"
	} | tee "$log"
	rc=$(cat "$rcfile")
	line=$(grep -E '^([A-Za-z0-9_-]+: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	rm -f "$log" "$rcfile"
	if [ -z "$line" ]; then
		echo "$name: printed no summary line (exit $rc): counted as 1 failure"
		total_fail=$((total_fail + 1))
		summary="$summary\n  $name: no summary, exit $rc (1 failed)"
		continue
	fi
	p=$(echo "$line" | sed -E 's/^([A-Za-z0-9_-]+: )?([0-9]+) passed, ([0-9]+) failed.*/\2/')
	f=$(echo "$line" | sed -E 's/^([A-Za-z0-9_-]+: )?([0-9]+) passed, ([0-9]+) failed.*/\3/')
	s=$(echo "$line" | sed -nE 's/.*[ (]([0-9]+) skipped.*/\1/p')
	s=${s:-0}
	note=""
	if [ "$rc" != 0 ] && [ "$f" -eq 0 ]; then
		echo "$name: exited $rc although its summary says 0 failed: counted as 1 failure"
		f=1
		note=" (exit $rc)"
	elif [ "$rc" = 0 ] && [ "$f" -gt 0 ]; then
		note=" (but exited 0)"
	fi
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	total_skip=$((total_skip + s))
	summary="$summary\n  $name: $p passed, $f failed, $s skipped$note"
done
echo
echo "=== summary"
printf "%b\n" "$summary" | sed '/^$/d'
echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ]
