#!/bin/sh
# 72-data-story.sh: the README's example end to end through the protocol
# (issue 12): a project with sales.csv, a plot of monthly totals as
# run/display in a session, the first rows of that session's DataFrame, a
# written file in workspaceChanges with the host folder unchanged, and the
# hidden .env (tests/data/data_story.py, with the fake model server).
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
p=$(echo "$line" | sed -E 's/^data-story: ([0-9]+) passed.*/\1/')
f=$(echo "$line" | sed -E 's/^data-story: [0-9]+ passed, ([0-9]+) failed$/\1/')
if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
	f=1
	echo "FAIL data_story.py exited $rc"
fi
echo "$name: $p passed, $f failed"
[ "$f" -eq 0 ]
