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

# Screenshots of the package (editor-clients/emacs/kiln.el) as a person
# sees it: Emacs 30 in a terminal (emacs -nw inside tmux, 100x30), the
# real server and the fake model of tests/fake-model, driven by
# tests/emacs/kiln-shots.el through a review (a proposal's hunk with its
# verdict) and a run (*kiln-output*). Each capture (tmux capture-pane -e)
# is checked for what it must show, then kept under build/emacs-shots/
# as .ansi and .svg (tests/tools/screen_svg.py); docs/img/emacs-*.svg are
# copies of these. Then *kiln-conversation*, the same way. Three checks;
# skipped when Emacs 30 or tmux is missing.
shots=build/emacs-shots
e30=$(sh tests/tools/emacs-30.sh 2>/dev/null)
if [ $? -ne 0 ] || ! command -v tmux >/dev/null 2>&1; then
	echo "screenshots: skipped (no Emacs 30 from tests/tools/emacs-30.sh, or no tmux)"
	echo "emacs: $pass passed, $fail failed, 3 skipped"
	[ "$fail" -eq 0 ]
	exit
fi
mkdir -p $shots
sdir=$(mktemp -d)
session=kiln-emacs-shots-$$
fake_pid=
shot_cleanup() {
	# Emacs leaves when told (done); a terminal Emacs whose tmux is gone
	# may not, so it is ended by its pid.
	touch "$sdir/done" 2>/dev/null
	i=0
	while [ -s "$sdir/pid" ] && kill -0 "$(cat "$sdir/pid")" 2>/dev/null && [ $i -lt 30 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -s "$sdir/pid" ] && kill "$(cat "$sdir/pid")" 2>/dev/null
	tmux kill-session -t "$session" 2>/dev/null
	[ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null
	rm -rf "$sdir" "$log"
}
trap shot_cleanup EXIT INT TERM
/usr/bin/python3 tests/fake-model/fake_model.py --port-file "$sdir/port" --max-seconds 300 \
	2>"$sdir/fake.log" &
fake_pid=$!
wait_for() { # FILE TENTHS: wait for FILE (or an error), at most TENTHS/10 s
	i=0
	while [ ! -e "$1" ] && [ ! -e "$sdir/error" ] && [ $i -lt "$2" ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -e "$1" ]
}
# The check of one capture: PATTERN... must each be on the screen.
shot_check() {
	name=$1
	shift
	plain=$(sed 's/\x1b\[[0-9;:]*[A-Za-z]//g' "$shots/$name.ansi")
	missing=
	for want in "$@"; do
		printf '%s\n' "$plain" | grep -qF -- "$want" || missing="$missing [$want]"
	done
	if [ -z "$missing" ]; then
		echo "   passed  screenshot $name"
		pass=$((pass + 1))
		python3 tests/tools/screen_svg.py "$shots/$name.ansi" "$shots/$name.svg" ||
			echo "   (screen_svg.py could not convert $name)"
	else
		echo "   FAILED  screenshot $name: missing$missing; the screen was:"
		printf '%s\n' "$plain"
		fail=$((fail + 1))
	fi
}
if ! wait_for "$sdir/port" 100; then
	echo "   FAILED  screenshots: the fake model did not start"
	cat "$sdir/fake.log"
	fail=$((fail + 3))
else
	tmux new-session -d -s "$session" -x 100 -y 30 \
		env TERM=xterm-256color KILN_BIN="$KILN_BIN" KILN_SHOT_DIR="$sdir" \
		KILN_SHOT_URL="http://127.0.0.1:$(cat "$sdir/port")" \
		"$e30" -nw -Q -L editor-clients/emacs -l tests/emacs/kiln-shots.el
	# shot NAME NEXT WANT...: wait for Emacs's step NAME, capture the
	# screen, let Emacs go on (the file NEXT), check the capture.
	shot() {
		name=$1
		next=$2
		shift 2
		if wait_for "$sdir/$name" 600; then
			sleep 0.5
			tmux capture-pane -e -p -t "$session" >"$shots/$name.ansi"
			touch "$sdir/$next"
			shot_check "$name" "$@"
		else
			echo "   FAILED  screenshot $name: $(cat "$sdir/error" 2>/dev/null || echo "no $name in 60 s")"
			tmux capture-pane -p -t "$session" 2>/dev/null
			fail=$((fail + 1))
		fi
	}
	shot review go "kiln hunk 1/1 (verdict allow)" "print('hello from kiln')" \
		"total = sum(sales)" "report.py"
	shot output go2 "kiln run: proposal p1 (report.py)" "hello from kiln" "[exit 0, " \
		"*kiln-output*"
	shot conversation done "* intent (report.py): print a greeting" \
		"** proposal p1, verdict allow" "  | print('hello from kiln')" \
		"** run: proposal p1 (report.py)" "*** output" "  ledger: " "*kiln-conversation*"
fi

echo "emacs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
