#!/bin/sh
# 72-data-story.sh: the README's example end to end through the protocol
# (issue 12): a project with sales.csv, a plot of monthly totals as
# run/display in a session, the first rows of that session's DataFrame, a
# written file in workspaceChanges with the host folder unchanged, and the
# hidden .env (tests/data/data_story.py, with the fake model server).
# Then the whole story as a person does it (issue 34,
# tests/data/story_e2e.py): through the protocol and in `kiln shell` on a
# pty, the plot saved into the project and a row appended to sales.csv,
# listed with their sizes, approved, and byte for byte in the folder
# afterwards; a declined change not seen by the session's next run; .env
# and a secret made mid-run never read. As root it runs twice: as root,
# and through setpriv as nobody (the project folder, the server and the
# shell all nobody's), from a private copy of the binary and scripts.
# Last line: "72-data-story: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
name=72-data-story
. tests/lib/suite.sh
find_kiln
tmp=$(mktemp -d)
fake_pid=
cleanup() {
	[ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
/usr/bin/python3 tests/fake-model/fake_model.py --port-file "$tmp/port" --max-seconds 600 \
	2>"$tmp/fake.log" &
fake_pid=$!
i=0
while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
if [ ! -s "$tmp/port" ]; then
	echo "$name: the fake model server did not start:"
	cat "$tmp/fake.log"
	echo "$name: 0 passed, 1 failed"
	exit 1
fi
timeout 600 python3 tests/data/data_story.py "$KILN" "http://127.0.0.1:$(cat "$tmp/port")" \
	>"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
line=$(grep -E '^data-story: [0-9]+ passed, [0-9]+ failed$' "$tmp/out" | tail -n 1)
if [ -z "$line" ]; then
	echo "$name: 0 passed, 1 failed"
	exit 1
fi
pass=$(echo "$line" | sed -E 's/^data-story: ([0-9]+) passed.*/\1/')
fail=$(echo "$line" | sed -E 's/^data-story: [0-9]+ passed, ([0-9]+) failed$/\1/')
if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
	fail=1
	echo "FAIL data_story.py exited $rc"
fi

# The whole story, as each user: a copy of kiln and the scripts the
# unprivileged user can read (the tree under tests/ as it is laid out).
priv=$tmp/priv
mkdir -p "$priv/tests/data" "$priv/tests/lib" "$priv/tests/cli" "$priv/tests/fake-model"
cp "$KILN" "$priv/kiln"
cp tests/data/story_e2e.py "$priv/tests/data/"
cp tests/lib/kilnrpc.py "$priv/tests/lib/"
cp tests/cli/shell_session.py "$priv/tests/cli/"
cp tests/fake-model/fake_model.py "$priv/tests/fake-model/"
chmod -R a+rX "$priv" "$tmp"

story_as() { # story_as LABEL [WRAPPER...]
	label=$1
	shift
	(cd / && timeout 400 "$@" env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 \
		ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
		python3 "$priv/tests/data/story_e2e.py" "$priv/kiln" "$label") \
		>"$tmp/story.log" 2>&1 </dev/null
	add "$tmp/story.log" "" $?
}

if [ "$(id -u)" = 0 ]; then
	story_as root
	if command -v setpriv >/dev/null 2>&1; then
		story_as nobody setpriv --reuid=65534 --regid=65534 --clear-groups
	else
		echo "nobody: setpriv (util-linux) is missing: cannot test unprivileged"
		fail=$((fail + 1))
	fi
else
	story_as "$(id -un)"
fi

echo "$name: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
