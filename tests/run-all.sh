#!/bin/sh
# run-all.sh: run every test suite (tests/suites/*.sh, in name order), then
# print one line "N passed, N failed" summing them. Each suite prints its own
# last line "NAME: N passed, N failed"; a suite that prints none counts as
# one failure.
set -u
cd "$(dirname "$0")/.."

total_pass=0
total_fail=0
summary=""
for suite in tests/suites/*.sh; do
	name=$(basename "$suite" .sh)
	echo "=== $name"
	log=$(mktemp)
	sh "$suite" 2>&1 | tee "$log"
	line=$(grep -E '^([A-Za-z0-9_-]+: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	rm -f "$log"
	if [ -z "$line" ]; then
		echo "$name: printed no summary line: counted as 1 failure"
		total_fail=$((total_fail + 1))
		summary="$summary\n  $name: no summary (1 failed)"
		continue
	fi
	p=$(echo "$line" | sed -E 's/^([A-Za-z0-9_-]+: )?([0-9]+) passed, ([0-9]+) failed.*/\2/')
	f=$(echo "$line" | sed -E 's/^([A-Za-z0-9_-]+: )?([0-9]+) passed, ([0-9]+) failed.*/\3/')
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	summary="$summary\n  $name: $p passed, $f failed"
done
echo
echo "=== summary"
printf "%b\n" "$summary" | sed '/^$/d'
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
