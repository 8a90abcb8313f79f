#!/bin/sh
# 25-cli.sh: the command line is true: --help and --version, exit codes,
# global options reaching subcommands, options after operands, and deps.sh
# telling a normal user the exact command instead of failing obscurely.
set -u
cd "$(dirname "$0")/../.."
kiln=${KILN_BIN:-build/asan/kiln}
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() { # name, then a command that must succeed
	name=$1
	shift
	if "$@" >"$tmp/out" 2>&1; then
		pass=$((pass + 1))
		echo "ok $name"
	else
		fail=$((fail + 1))
		echo "not ok $name"
		sed 's/^/    /' "$tmp/out" | head -20
	fi
}

help_lists_commands() {
	out=$("$kiln" --help) || return 1
	for c in replay shell ask run validate --config --record --max-message-size; do
		echo "$out" | grep -q -- "$c" || { echo "--help does not mention $c"; return 1; }
	done
}
check "help lists every subcommand and option" help_lists_commands
check "version" sh -c "'$kiln' --version | grep -qx 'kiln [0-9][0-9.]*'"
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

deps_tells_normal_user() {
	# A package that cannot be installed, asked for as nobody: the exact
	# command must be printed and nothing run.
	id nobody >/dev/null 2>&1 || return 0
	out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups sh server/tools/deps.sh --check build 2>&1)
	rc=$?
	[ $rc -eq 0 ] && return 0 # everything present: nothing to say
	echo "$out" | grep -q "apt-get install" || { echo "$out"; return 1; }
}
check "deps.sh prints the command to a normal user" deps_tells_normal_user

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
