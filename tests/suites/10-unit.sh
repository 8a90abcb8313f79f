#!/bin/sh
# 10-unit.sh: run every C unit test (build/asan/tests/unit/test_*, built
# by `make unit-build` from tests/unit/test_*.c with ASan and UBSan) and
# sum check's summary lines ("NN%: Checks: N, Failures: N, Errors: N").
# A test source without a binary, or a binary that crashes before its
# summary, counts as one failure. Last line: "unit: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."

pass=0
fail=0
for src in tests/unit/test_*.c; do
	[ -e "$src" ] || continue
	name=$(basename "$src" .c)
	# KILN_TEST_ONLY="test_a test_b" (make mutate) runs just those.
	if [ -n "${KILN_TEST_ONLY:-}" ]; then
		case " $KILN_TEST_ONLY " in *" $name "*) ;; *) continue ;; esac
	fi
	bin=build/asan/tests/unit/$name
	if [ ! -x "$bin" ]; then
		echo "$name: not built (run 'make unit-build')"
		fail=$((fail + 1))
		continue
	fi
	out=$(mktemp)
	# check forks each test with its own timeout; this bounds the whole.
	timeout 600 "$bin" >"$out" 2>&1
	rc=$?
	line=$(grep -E '^[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$out" | tail -n 1)
	if [ -z "$line" ]; then
		cat "$out"
		echo "$name: no summary (exit $rc): counted as 1 failure"
		fail=$((fail + 1))
		rm -f "$out"
		continue
	fi
	n=$(echo "$line" | sed -E 's/.*Checks: ([0-9]+).*/\1/')
	f=$(echo "$line" | sed -E 's/.*Failures: ([0-9]+).*/\1/')
	e=$(echo "$line" | sed -E 's/.*Errors: ([0-9]+).*/\1/')
	bad=$((f + e))
	if [ "$bad" -gt 0 ] || [ "$rc" -ne 0 ]; then
		cat "$out"
		# A clean summary with a non-zero exit (a leak report at exit)
		# is still a failure.
		[ "$bad" -eq 0 ] && bad=1
	fi
	echo "$name: $((n - f - e)) passed, $bad failed"
	pass=$((pass + n - f - e))
	fail=$((fail + bad))
	rm -f "$out"
done
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
