#!/bin/sh
# 65-emacs.sh: a client not written for kiln, Emacs's built-in jsonrpc.el,
# against the real server: tests/emacs/kiln-jsonrpc-test.el in
# `emacs --batch` (ERT), using the client code of docs/editors.md's Emacs
# section. Drives build/asan/kiln ($KILN_BIN overrides it). One count per
# ERT test; installs nothing (Debian's emacs-nox comes with `make deps`).
set -u
cd "$(dirname "$0")/../.."
test_file=tests/emacs/kiln-jsonrpc-test.el
ntests=$(grep -c '^(ert-deftest ' $test_file)
KILN_BIN=${KILN_BIN:-$PWD/build/asan/kiln}
export KILN_BIN

if [ ! -x "$KILN_BIN" ]; then
	echo "no $KILN_BIN: run 'make asan' first"
	echo "emacs: 0 passed, $ntests failed"
	exit 1
fi
if ! command -v emacs >/dev/null 2>&1; then
	echo "no emacs on PATH (Debian's emacs-nox: make deps installs it)"
	echo "emacs: 0 passed, $ntests failed"
	exit 1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Every wait inside is bounded; this bounds Emacs itself as well.
timeout -k 10 600 emacs --batch -Q -l ert -l $test_file \
	-f ert-run-tests-batch-and-exit </dev/null >"$log" 2>&1
rc=$?
# ERT's own lines (a test's name and result, and what failed), not
# jsonrpc.el's "[jsonrpc] Server exited" chatter.
grep -av '^\[jsonrpc\] ' "$log"

# "Ran 9 tests, 8 results as expected, 1 unexpected (...)"
summary=$(grep -a '^Ran [0-9]* tests*, ' "$log" | tail -n 1)
pass=$(echo "$summary" | sed -nE 's/^Ran [0-9]+ tests?, ([0-9]+) results? as expected.*/\1/p')
fail=$(echo "$summary" | sed -nE 's/.*, ([0-9]+) unexpected.*/\1/p')
if [ -z "$pass" ] || [ -z "$fail" ]; then
	echo "emacs exited with $rc before ERT's summary"
	pass=0
	fail=$ntests
elif [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
	echo "emacs exited with $rc"
	fail=1
fi
echo "emacs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
