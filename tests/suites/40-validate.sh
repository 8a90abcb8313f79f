#!/bin/sh
# 40-validate.sh: the validator end to end with the sanitizer build:
# the labelled corpus (tests/validate/corpus: detection rate on hostile
# snippets, false positives on benign ones), `kiln validate`'s output and
# exit codes, and the snippet/validate method over JSON-RPC in each
# position encoding, and the CPython worker's sandbox seen from outside
# (tests/validate/worker_check.py: namespaces, reuse, restart, nothing left
# after the server), benign real code read from the system's packages
# (tests/validate/system_corpus.py: no deny on it), the rule patterns
# matched by kiln's own walk against tree-sitter's query cursor on the
# corpora (tests/validate/engines.py: the same diagnostics), and the loop's latency
# while a 4 MiB check runs on the validator's thread
# (tests/validate/latency_check.py), and fetch-grammars.sh applying kiln's patches
# to the fetched sources. Range unit tests are tests/unit/test_validate.c
# (suite 10-unit). Last line: "validate: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."

KILN=${KILN:-build/asan/kiln}
pass=0
fail=0
skip=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# No user config may change what the tests see.
export XDG_CONFIG_HOME="$tmp/config"

ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

if [ ! -x "$KILN" ]; then
	echo "validate: $KILN is not built (run 'make asan')"
	echo "validate: 0 passed, 1 failed"
	exit 1
fi

# KILN_TEST_ONLY="corpus rpc ..." (make mutate): only those helpers run
# (corpus, system, engines, rpc, worker, latency); the quick checks always do.
want() {
	[ -z "${KILN_TEST_ONLY:-}" ] && return 0
	case " $KILN_TEST_ONLY " in *" $1 "*) return 0 ;; esac
	return 1
}

# Add the counts from a helper's last line "NAME: N passed, N failed".
add_counts() {
	line=$(grep -E '^[a-z-]+: [0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1)
	if [ -z "$line" ]; then
		cat "$1"
		bad "$2 printed no summary"
		return
	fi
	p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')
	f=$(echo "$line" | sed -E 's/.*passed, ([0-9]+) failed.*/\1/')
	s=$(echo "$line" | sed -nE 's/.* ([0-9]+) skipped.*/\1/p')
	pass=$((pass + p))
	fail=$((fail + f))
	skip=$((skip + ${s:-0}))
	# A helper that exits non-zero with "0 failed" stopped early.
	if [ "$3" != 0 ] && [ "$f" -eq 0 ]; then bad "$2 exited $3"; fi
}

# --- the corpus --------------------------------------------------------------
if want corpus; then
	timeout 600 python3 tests/validate/corpus.py "$KILN" standard >"$tmp/corpus.out" 2>&1
	rc=$?
	grep -v '^ok ' "$tmp/corpus.out"
	add_counts "$tmp/corpus.out" corpus $rc
fi

# --- benign real code from the system (tests/validate/system-corpus.list) -----
if want system; then
	timeout 900 python3 tests/validate/system_corpus.py "$KILN" standard >"$tmp/system.out" 2>&1
	rc=$?
	grep -v '^ok ' "$tmp/system.out"
	add_counts "$tmp/system.out" system-corpus $rc
fi

# --- the two matchers: kiln's walk and tree-sitter's query cursor agree --------
if want engines; then
	timeout 900 python3 tests/validate/engines.py "$KILN" >"$tmp/engines.out" 2>&1
	rc=$?
	grep -v '^ok ' "$tmp/engines.out"
	add_counts "$tmp/engines.out" engines $rc
fi

# --- kiln's patches to the fetched sources (fetch-grammars.sh) ---------------
# A made-up source package from a file:// archive, and a patch for it:
# the patch is applied after the sum is checked and counts in the stamp
# (a changed patch unpacks again); one that does not apply fails the fetch.
fg=$tmp/fetch
mkdir -p "$fg/pkg/src" "$fg/mirror/pool/main/libk/libkilntest" "$fg/patches"
printf 'int a;\nint b;\nint c;\n' >"$fg/pkg/src/scanner.c"
tar -C "$fg" -cJf "$fg/mirror/pool/main/libk/libkilntest/libkilntest_1.0.orig.tar.xz" pkg
fg_sum=$(sha256sum "$fg/mirror/pool/main/libk/libkilntest/libkilntest_1.0.orig.tar.xz" | cut -d' ' -f1)
echo "demo debian:libkilntest 1.0 $fg_sum pkg" >"$fg/lock"
printf -- '--- a/src/scanner.c\n+++ b/src/scanner.c\n@@ -1,3 +1,3 @@\n int a;\n-int b;\n+int b2;\n int c;\n' >"$fg/patches/demo-b.patch"
fetch_demo() { KILN_DEBIAN_MIRROR="file://$fg/mirror" sh server/validate/fetch-grammars.sh "$fg/lock" "$fg/out" "$fg/patches" >"$fg/log" 2>&1; }
if fetch_demo && grep -qx 'int b2;' "$fg/out/demo/src/scanner.c" && [ "$(wc -w <"$fg/out/demo/.sum")" = 2 ]; then
	ok "fetch-grammars.sh applies kiln's patch after the sum"
else
	bad "fetch-grammars.sh did not apply the patch"
	cat "$fg/log" "$fg/out/demo/src/scanner.c"
fi
sed -i 's/^-int b;$/-int x;/' "$fg/patches/demo-b.patch"
if ! fetch_demo && grep -q 'demo-b.patch does not apply' "$fg/log"; then
	ok "a changed patch unpacks again, and one that does not apply fails the fetch"
else
	bad "a patch that does not apply was not refused"
	cat "$fg/log"
fi

# --- kiln validate ------------------------------------------------------------
expect_exit() { # NAME WANT CMD...
	name=$1 want=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" = "$want" ]; then ok "$name (exit $got)"; else
		bad "$name: exit $got, wanted $want"
		cat "$tmp/out" "$tmp/err"
	fi
}
printf 'import statistics\nprint(statistics.mean([1, 2, 3]))\n' >"$tmp/ok.py"
printf 'while True:\n    pass\n' >"$tmp/loop.py"
printf 'import os\nos.system("id")\n' >"$tmp/bad.py"
printf '#!/bin/sh\ncurl https://example.org | sh\n' >"$tmp/script"
expect_exit "allow exits 0" 0 "$KILN" validate "$tmp/ok.py"
expect_exit "warn exits 1" 1 "$KILN" validate "$tmp/loop.py"
expect_exit "deny exits 2" 2 "$KILN" validate "$tmp/bad.py"
expect_exit "relaxed profile turns deny into warn" 1 "$KILN" validate --profile relaxed "$tmp/bad.py"
expect_exit "language from the #! line" 2 "$KILN" validate "$tmp/script"
expect_exit "unknown language exits 3" 3 "$KILN" validate --lang cobol "$tmp/ok.py"
expect_exit "missing file exits 3" 3 "$KILN" validate "$tmp/nope.py"
expect_exit "stdin needs a language" 3 sh -c "echo 'x = 1' | $KILN validate -"
expect_exit "--help" 0 "$KILN" validate --help

"$KILN" validate "$tmp/bad.py" >"$tmp/out" 2>&1
if grep -qxF "$tmp/bad.py:2:1: error: starts, replaces or signals a process through os [PY-OS-PROCESS]" "$tmp/out"; then
	ok "text output is file:line:col: severity: message [rule]"
else
	bad "text output"
	cat "$tmp/out"
fi
printf 'x = "\360\237\230\200"; eval(x)\n' | "$KILN" validate --lang py --format json - >"$tmp/out"
if python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
d = [d for d in r["diagnostics"] if d["code"] == "PY-DYNAMIC-CODE"][0]
assert r["verdict"] == "deny" and r["language"] == "python", r  # the canonical name of --lang py
assert d["range"]["start"]["character"] == 10, d  # UTF-16: the emoji is 2 units
' "$tmp/out"; then ok "json output with UTF-16 ranges"; else
	bad "json output"
	cat "$tmp/out"
fi
# A rule's message names what it matched: "{name}" is the qualified name
# (aliases resolved), made visible and cut (docs/validator.md, rule files).
cp -r server/validate/rules "$tmp/named-rules"
sed -i 's/"starts, replaces or signals a process through os"/"runs {name} ({name})"/' "$tmp/named-rules/python.json"
printf '{"validator": {"rulesDir": "%s"}}\n' "$tmp/named-rules" >"$tmp/named.json"
printf '((call function: (_) @PY-OS-PROCESS) (#qname-match? @PY-OS-PROCESS "^os\\\\.sys."))\n' >>"$tmp/named-rules/python.scm"
long=$(printf '%0200d' 0)
printf 'import os as o\no.system("id")\ngetattr(o, "sys\\x1b[2J%s")()\n' "$long" >"$tmp/named.py"
"$KILN" validate --config "$tmp/named.json" "$tmp/named.py" >"$tmp/out" 2>&1
if grep -qxF "$tmp/named.py:2:1: error: runs os.system (os.system) [PY-OS-PROCESS]" "$tmp/out" &&
	! grep -q "$(printf '\033')" "$tmp/out" && grep -q '\^\[\[2J' "$tmp/out" &&
	[ "$(awk 'length > 400' "$tmp/out" | wc -l)" = 0 ] &&
	{ "$KILN" validate --config "$tmp/named.json" --format json "$tmp/named.py" >"$tmp/named.out" 2>&1 || :; } &&
	python3 -c '
import json, sys
m = [d["message"] for d in json.load(open(sys.argv[1]))["diagnostics"]]
assert any(x.startswith("runs os.sys^[[2J000") and x.count("...") == 2 for x in m), m
assert not any("\x1b" in x for x in m), m  # the message itself, not only the terminal
' "$tmp/named.out"; then
	ok "a rule's message names what it matched ({name}), made visible and cut"
else
	bad "{name} in a rule's message"
	cat -v "$tmp/out"
fi
# python.scm's reach section is written from python-reach.py's lists,
# which repeat in several patterns: the two must not drift apart.
if python3 server/validate/python-reach.py --check >"$tmp/out" 2>&1; then
	ok "python.scm's reach section is python-reach.py's"
else
	bad "python.scm's reach section"
	cat "$tmp/out"
fi
# The reach verdict (issue 35): code that reaches what kiln does not know
# to be harmless is warned about, naming what it can do.
printf 'import pydoc\npydoc.pipepager("x", "id")\nimport functools, os\nfunctools.reduce(getattr, ["system"], os)("id")\nimport mylib\n' >"$tmp/reach.py"
"$KILN" validate "$tmp/reach.py" >"$tmp/out" 2>&1
rc=$?
"$KILN" validate --profile strict "$tmp/reach.py" >/dev/null 2>&1
strict=$?
if [ "$rc" = 1 ] && [ "$strict" = 2 ] &&
	grep -qxF "$tmp/reach.py:2:1: warning: can start processes: pydoc.pipepager [PY-REACH-PROCESS]" "$tmp/out" &&
	grep -qxF "$tmp/reach.py:4:18: warning: computed access: getattr reaches everything it holds [PY-REACH-COMPUTED]" "$tmp/out" &&
	grep -qxF "$tmp/reach.py:5:8: warning: reaches mylib, which kiln does not know to be harmless [PY-REACH-UNKNOWN]" "$tmp/out"; then
	ok "kiln validate names what the code can reach (warn; strict denies)"
else
	bad "the reach verdict (exit $rc, strict $strict)"
	cat "$tmp/out"
fi
# A reserved word where a command should be is a syntax error, said once
# as one, not also a command kiln does not know (VS Code's validate on
# save shows the first diagnostic).
printf 'if then\n' | "$KILN" validate --lang bash - >"$tmp/out" 2>&1
if grep -q '\[syntax\]' "$tmp/out" && ! grep -q 'SH-REACH' "$tmp/out"; then
	ok "a reserved word as a command is a syntax error, not an unknown command"
else
	bad "reserved word as a command"
	cat "$tmp/out"
fi
printf '{"validator": {"python": false}}\n' >"$tmp/nopy.json"
printf 'if x == 1\n    pass\n' | "$KILN" validate --config "$tmp/nopy.json" --lang python - >"$tmp/out"
if grep -q "expected ':' after the if condition (checked by tree-sitter alone" "$tmp/out" &&
	grep -q "kiln-no-cpython" "$tmp/out"; then
	ok "without CPython, tree-sitter answers and says so"
else
	bad "tree-sitter fallback"
	cat "$tmp/out"
fi
printf 'print "x"\n' | "$KILN" validate --lang python - >"$tmp/out"
if [ -x /usr/bin/python3 ] && grep -q "Missing parentheses in call to 'print'" "$tmp/out"; then
	ok "CPython is the authority on Python syntax"
elif [ ! -x /usr/bin/python3 ]; then bad "CPython syntax: no /usr/bin/python3 (make deps installs it)"; else
	bad "CPython syntax"
	cat "$tmp/out"
fi

# --- snippet/validate over JSON-RPC -------------------------------------------
if want rpc; then
	timeout 120 python3 tests/validate/rpc_check.py "$KILN" >"$tmp/rpc.out" 2>&1
	rc=$?
	grep -v '^ok ' "$tmp/rpc.out"
	add_counts "$tmp/rpc.out" rpc $rc
fi

# --- the CPython worker runs in kiln's sandbox -------------------------------------
if want worker; then
	timeout 300 python3 tests/validate/worker_check.py "$KILN" >"$tmp/worker.out" 2>&1
	rc=$?
	grep -v '^ok ' "$tmp/worker.out"
	add_counts "$tmp/worker.out" worker $rc
fi

# --- heavy checks leave the loop (tests/validate/latency_check.py) -----------------
if want latency; then
	timeout 300 python3 tests/validate/latency_check.py "$KILN" >"$tmp/latency.out" 2>&1
	rc=$?
	grep -v '^ok ' "$tmp/latency.out"
	add_counts "$tmp/latency.out" latency $rc
fi

if [ "$skip" -gt 0 ]; then
	echo "validate: $pass passed, $fail failed, $skip skipped"
else
	echo "validate: $pass passed, $fail failed"
fi
[ "$fail" -eq 0 ]
