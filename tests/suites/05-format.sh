#!/bin/sh
# 05-format.sh: the C tree is formatted as .clang-format says (`make format`
# fixes it). One check per file.
set -u
cd "$(dirname "$0")/../.."
pass=0
fail=0
for f in $(git ls-files 'server/*.c' 'server/*.h' 'tests/unit/*.c' 'tests/unit/*.h' \
	'tests/fuzz/*.c' 2>/dev/null); do
	if clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
		pass=$((pass + 1))
	else
		echo "not formatted: $f (run: make format)"
		fail=$((fail + 1))
	fi
done
echo "format: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
