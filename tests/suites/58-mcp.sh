#!/bin/sh
# 58-mcp.sh: `kiln mcp` sees the project an MCP client names (issue 34):
# tests/mcp/roots.py drives the real server over stdio as a client that
# offers roots: run_code reads sales.csv with pandas in the client's root
# and never sees .env or a key, a session keeps x between two calls,
# close_session ends it, notifications/roots/list_changed switches the
# root (the first file:// one) before the next call runs, a write stays
# in the sandbox and is listed; without roots, with a roots/list that
# fails and in the stateless 2026-07-28 revision the server's working
# directory is the workspace. As root it runs twice: as root and, through
# setpriv, as nobody, from a private copy of the binary. Last line:
# "58-mcp: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."

name=58-mcp
pass=0
fail=0

. tests/lib/suite.sh
find_kiln

tmp=$(mktemp -d /tmp/kiln-mcp-suite.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
chmod 755 "$tmp"
log=$tmp/log
cp "$KILN" "$tmp/kiln"
cp tests/mcp/roots.py "$tmp/"
chmod 755 "$tmp/kiln" "$tmp/roots.py"

run_as() { # run_as LABEL [WRAPPER...]
	label=$1
	shift
	"$@" env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 \
		ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
		timeout 600 python3 "$tmp/roots.py" --kiln "$tmp/kiln" >"$log" 2>&1 </dev/null
	add "$log" "$label: " $?
}

if [ "$(id -u)" = 0 ]; then
	run_as root
	if command -v setpriv >/dev/null 2>&1; then
		run_as nobody setpriv --reuid=65534 --regid=65534 --clear-groups
	else
		echo "nobody: setpriv (util-linux) is missing: cannot test unprivileged"
		fail=$((fail + 1))
	fi
else
	run_as "$(id -un)"
fi

echo "$name: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
