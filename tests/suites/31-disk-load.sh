#!/bin/sh
# 31-disk-load.sh: what a box costs the host's disk and the server's time
# (issue 11), tests/sandbox/disk_load.py: artifact copies (a budget per
# run, holes kept, hard links copied once, the copy directory's caps, the
# copy off the loop), the run queue (sandbox.maxConcurrentRuns) and a
# small load test (correctness only: `make bench` has the figures). As
# root it runs twice: as root, and as the unprivileged user nobody
# (setpriv), from a private copy nobody can read. KILN_TEST_ONLY="case..."
# runs those cases, as the current user. Last line:
# "31-disk-load: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."

name=31-disk-load
pass=0
fail=0

. tests/lib/suite.sh
find_kiln

tmp=$(mktemp -d /tmp/kiln-disk-load-suite.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
chmod 755 "$tmp"
log=$tmp/log
cp "$KILN" "$tmp/kiln"
cp tests/sandbox/disk_load.py tests/lib/kilnrpc.py "$tmp/"
chmod 755 "$tmp/kiln" "$tmp/disk_load.py"
chmod 644 "$tmp/kilnrpc.py"

only=
for c in ${KILN_TEST_ONLY:-}; do only="$only --only $c"; done

run_as() { # run_as LABEL [WRAPPER...]
	label=$1
	shift
	"$@" env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 \
		ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
		python3 "$tmp/disk_load.py" --kiln "$tmp/kiln" $only >"$log" 2>&1 </dev/null
	add "$log" "$label: " $?
}

if [ -n "$only" ] || [ "$(id -u)" != 0 ]; then
	run_as "$(id -un)"
else
	run_as root
	if command -v setpriv >/dev/null 2>&1; then
		run_as nobody setpriv --reuid=65534 --regid=65534 --clear-groups
	else
		echo "nobody: setpriv (util-linux) is missing: cannot test unprivileged"
		fail=$((fail + 1))
	fi
fi

echo "$name: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
