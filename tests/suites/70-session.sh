#!/bin/sh
# 70-session.sh: sessions that keep state (docs/sandbox.md, "Sessions"),
# through the real server: names kept between runs, displays of the last
# expression, of DataFrames and of matplotlib figures (skipped, saying
# why, when Debian's python3-pandas or python3-matplotlib is missing),
# interrupts at the wall clock, a session whose program dies, reset,
# close, idle close, isolation, a forged channel frame, and no process
# left behind (tests/sandbox/session.py). Last line:
# "70-session: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."

name=70-session
KILN=${KILN:-}
if [ -z "$KILN" ]; then
	if [ -x build/asan/kiln ]; then KILN=build/asan/kiln; else KILN=build/kiln; fi
fi
if [ ! -x "$KILN" ]; then
	echo "$name: no kiln binary (run make asan or make build/kiln first)"
	echo "$name: 0 passed, 1 failed"
	exit 1
fi

out=$(timeout 600 /usr/bin/python3 tests/sandbox/session.py "$KILN" 2>&1)
echo "$out" | grep -v -E '^[0-9]+ passed, [0-9]+ failed'
line=$(echo "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
if [ -z "$line" ]; then
	echo "$name: 0 passed, 1 failed"
	exit 1
fi
echo "$name: $line"
case $line in *" 0 failed") exit 0 ;; *) exit 1 ;; esac
