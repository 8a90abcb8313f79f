#!/bin/sh
# 32-workspace.sh: a run sees the project folder, safely (issue 12):
# tests/workspace/workspace.py drives the real server with a project
# holding sales.csv, .env, .git and keys: relative reads, secrets hidden
# (and masks that cannot be undone), writes reported as workspaceChanges
# and a workspaceEdit while the host folder stays byte for byte the same,
# pandas and matplotlib in the box, the config's hide list and mode, the
# model's prompt (the modules the box imports, the workspace's files). It
# runs on the normal path (sandbox.zygote off), then again with the runs
# forked from the Python zygote (--zygote: its spare's pid 1 makes the
# overlay and the masks). As root each runs twice: as root and, through
# setpriv, as nobody, from a private copy of the binaries. tests/workspace/bigtree.py then runs a
# project of 150 000 entries laid out as a node_modules (its secrets
# hidden, new ones hidden in the next run, sandbox.workspace.maxEntries)
# and, as root, a project nobody cannot enter. tests/workspace/pyenv.py
# (as root and as nobody) runs python with the project's own environment
# (issue 38): real venvs in the workspace, VIRTUAL_ENV, sandbox.python,
# broken and hostile ones. Last line: "32-workspace:
# N passed, N failed".
set -u
cd "$(dirname "$0")/../.."

name=32-workspace
pass=0
fail=0

. tests/lib/suite.sh
find_kiln

tmp=$(mktemp -d /tmp/kiln-workspace-suite.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
chmod 755 "$tmp"
log=$tmp/log
cp "$KILN" "$tmp/kiln"
cp tests/workspace/workspace.py tests/workspace/bigtree.py tests/workspace/pyenv.py tests/lib/kilnrpc.py tests/fake-model/fake_model.py "$tmp/"
chmod 755 "$tmp/kiln" "$tmp/workspace.py" "$tmp/bigtree.py" "$tmp/pyenv.py" "$tmp/fake_model.py"
chmod 644 "$tmp/kilnrpc.py"

# KILN_TEST_ONLY="pyenv" (make mutate): only pyenv.py's runs.
only_pyenv=
case " ${KILN_TEST_ONLY:-} " in *" pyenv "*) only_pyenv=1 ;; esac

run_as() { # run_as LABEL [WRAPPER...]
	label=$1
	shift
	for zygote in "" --zygote; do
		[ -n "$only_pyenv" ] && break
		"$@" env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 \
			ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
			python3 "$tmp/workspace.py" --kiln "$tmp/kiln" \
			--fake-model "$tmp/fake_model.py" $zygote >"$log" 2>&1 </dev/null
		add "$log" "$label${zygote:+ zygote}: "
	done
	"$@" env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 \
		ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
		python3 "$tmp/pyenv.py" --kiln "$tmp/kiln" >"$log" 2>&1 </dev/null
	add "$log" "$label pyenv: " $?
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

if [ -z "$only_pyenv" ]; then
	env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 \
		ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
		python3 "$tmp/bigtree.py" --kiln "$tmp/kiln" >"$log" 2>&1 </dev/null
	add "$log" "big: " $?
fi

echo "$name: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
