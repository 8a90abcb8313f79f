#!/bin/sh
# tests/run.sh NVIM [TEST_FILE...]: run the plugin's tests in headless NVIM
# (one Neovim per test file, each bounded in time) against KILN_BIN
# (default build/kiln). Prints one line a test, then
# "nvim: N passed, N failed[, N skipped]"; exits 1 when a test failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
nvim=$1
shift
[ $# -gt 0 ] || set -- "$here"/test_*.lua
out=$(mktemp)
# Saved artifacts and displays (stdpath('cache')/kiln/runs) go to a folder
# of this run, not the user's cache.
cache=$(mktemp -d)
export XDG_CACHE_HOME="$cache"
trap 'rm -f "$out"; rm -rf "$cache"' EXIT
for f in "$@"; do
	before=$(wc -l <"$out")
	KILN_TEST_OUT=$out KILN_TEST_FILE=$f timeout -k 5 240 "$nvim" --headless -u NONE -i NONE -n \
		-c "luafile $here/runner.lua" </dev/null >"$out.log" 2>&1
	rc=$?
	after=$(wc -l <"$out")
	# A file with no test whose name has KILN_TEST_FILTER in it says nothing.
	if [ "$rc" -ne 0 ] || { [ "$after" -eq "$before" ] && [ -z "${KILN_TEST_FILTER:-}" ]; }; then
		echo "FAIL $(basename "$f"): Neovim exited with $rc:" >>"$out"
		sed 's/^/    /' "$out.log" | tail -n 30
	fi
	if [ -n "${KILN_TEST_VERBOSE:-}" ]; then cat "$out.log"; fi
done
rm -f "$out.log"
cat "$out"
p=$(grep -c '^ok ' "$out")
f=$(grep -c '^FAIL ' "$out")
s=$(grep -c '^skip ' "$out")
line="nvim: $p passed, $f failed"
[ "$s" -gt 0 ] && line="$line, $s skipped"
echo "$line"
[ "$f" -eq 0 ]
