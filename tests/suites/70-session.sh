#!/bin/sh
# 70-session.sh: sessions that keep state (docs/sandbox.md, "Sessions"),
# through the real server: names kept between runs, displays of the last
# expression, of DataFrames and of matplotlib figures (skipped, saying
# why, when Debian's python3-pandas or python3-matplotlib is missing),
# interrupts at the wall clock, a session whose program dies, reset,
# close, idle close, isolation, a forged channel frame, and no process
# left behind (tests/sandbox/session.py); then `kiln shell` on a pty with
# its session, saved displays, :reset/:new, Ctrl-C at the prompt and the
# line history (tests/cli/shell_session.py). Last line:
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

pass=0
fail=0
for script in tests/sandbox/session.py tests/cli/shell_session.py; do
	out=$(timeout 600 /usr/bin/python3 "$script" "$KILN" 2>&1)
	echo "$out" | grep -v -E '^[0-9]+ passed, [0-9]+ failed'
	line=$(echo "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
	if [ -z "$line" ]; then
		echo "$script: no summary line: counted as 1 failure"
		fail=$((fail + 1))
		continue
	fi
	p=${line%% passed*}
	f=${line#*passed, }
	f=${f%% failed*}
	pass=$((pass + p))
	fail=$((fail + f))
done
echo "$name: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
