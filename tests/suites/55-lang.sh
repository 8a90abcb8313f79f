#!/bin/sh
# 55-lang.sh: one language registry (server/core/lang.c) behind every
# subcommand and method. The JavaScript transcripts
# (protocol/transcripts/javascript/*.test.in: snippet/run and
# snippet/validate under each of its names) need node, so they are named
# apart from what 15-transcripts.sh plays and played here, or skipped
# visibly when node is absent; then kiln run and kiln validate resolve
# --lang, extensions and #! lines through the registry and refuse names
# it does not know, listing the ones it does.
# Last line: "55-lang: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."

KILN=${KILN:-build/asan/kiln}
[ -x "$KILN" ] || KILN=build/kiln
# KILN_TEST_NODE=/nonexistent shows the skips that a machine without node sees.
node=${KILN_TEST_NODE:-/usr/bin/node}
pass=0
fail=0
skipped=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
ko() { fail=$((fail + 1)); echo "FAIL $1"; }
# make deps installs nodejs: without it (and no KILN_TEST_NODE asking for
# the skips) the JavaScript cases are skipped and the suite fails.
if [ ! -x "$node" ] && [ -z "${KILN_TEST_NODE:-}" ]; then
	ko "/usr/bin/node is missing (make deps installs nodejs)"
fi
skip() { skipped=$((skipped + 1)); echo "SKIP $1 (/usr/bin/node is not installed)"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

# check NAME EXPECTED-EXIT GREP-PATTERN CMD...: CMD exits with EXPECTED and
# its output (stdout and stderr) has a line matching PATTERN ('' for none).
check() {
	name=$1 want=$2 pat=$3
	shift 3
	"$@" >"$tmp/out" 2>&1
	rc=$?
	if [ "$rc" -eq "$want" ] && { [ -z "$pat" ] || grep -q -- "$pat" "$tmp/out"; }; then
		ok "$name"
	else
		ko "$name (exit $rc, want $want)"
		sed 's/^/    /' "$tmp/out" | tail -n 20
	fi
}

# --- JavaScript transcripts --------------------------------------------------------
for t in protocol/transcripts/javascript/*.test.in; do
	name=${t#protocol/transcripts/}
	name=${name%.test.in}
	if [ ! -x "$node" ]; then
		skip "$name"
		continue
	fi
	if "$KILN" replay --server "$KILN" "$t" >"$tmp/out" 2>&1; then
		ok "$name"
	else
		ko "$name"
		sed 's/^/    /' "$tmp/out" | tail -n 30
	fi
done

# --- kiln run: --lang, extension, #! line ------------------------------------------
printf 'console.log("js", 6 * 7);\n' >"$tmp/a.js"
printf 'console.log("mjs", typeof import.meta);\n' >"$tmp/b.mjs"
printf '#!/usr/bin/env node\nconsole.log("env node");\n' >"$tmp/envnode"
printf '#!/usr/bin/env -S python3 -u\nprint("env -S python3")\n' >"$tmp/envs"
printf '#!/usr/bin/python3.11\nprint("versioned")\n' >"$tmp/versioned"
printf '#!/bin/sh\necho "sh $((6 * 7))"\n' >"$tmp/shscript"
printf 'print("no clue")\n' >"$tmp/noclue"
printf 'echo "forced bash"\n' >"$tmp/forced.txt"
if [ -x "$node" ]; then
	check "run --lang js" 0 "^js 42$" "$KILN" run --lang js "$tmp/a.js"
	check "run --lang javascript" 0 "^js 42$" "$KILN" run --lang javascript "$tmp/a.js"
	check "run --lang nodejs" 0 "^js 42$" "$KILN" run --lang nodejs "$tmp/a.js"
	check "run FILE.js by extension" 0 "^js 42$" "$KILN" run "$tmp/a.js"
	check "run FILE.mjs by extension" 0 "^mjs object$" "$KILN" run "$tmp/b.mjs"
	check "run #!/usr/bin/env node" 0 "^env node$" "$KILN" run "$tmp/envnode"
	check "run stdin with #!/usr/bin/env node" 0 "^env node$" sh -c "'$KILN' run - <'$tmp/envnode'"
else
	for n in "run --lang js" "run --lang javascript" "run --lang nodejs" "run FILE.js by extension" \
		"run FILE.mjs by extension" "run #!/usr/bin/env node" "run stdin with #!/usr/bin/env node"; do
		skip "$n"
	done
fi
check "run #!/usr/bin/env -S python3 -u" 0 "^env -S python3$" "$KILN" run "$tmp/envs"
check "run #!/usr/bin/python3.11" 0 "^versioned$" "$KILN" run "$tmp/versioned"
check "run #!/bin/sh" 0 "^sh 42$" "$KILN" run "$tmp/shscript"
check "run without extension or #! is an error naming the languages" 2 \
	"^kiln run: .*noclue: cannot tell its language: .*use --lang (kiln knows python (.py, .pyw), bash" \
	"$KILN" run "$tmp/noclue"
check "run --lang sh over the extension" 0 "^forced bash$" "$KILN" run --lang sh "$tmp/forced.txt"
check "run --lang ruby is refused with the known names" 2 \
	"^kiln run: unknown language 'ruby' (kiln knows python (py, python3, py3), bash (sh, shell, shellscript), javascript (js, node, nodejs, mjs))$" \
	"$KILN" run --lang ruby "$tmp/a.js"
check "run --lang zsh is not bash" 2 "unknown language 'zsh'" "$KILN" run --lang zsh "$tmp/shscript"

# --- kiln validate: the same names and the same #! reader ---------------------------
check "validate --lang node" 0 "" "$KILN" validate --lang node "$tmp/a.js"
check "validate #!/usr/bin/env -S python3 -u" 0 "" "$KILN" validate "$tmp/envs"
check "validate --format json names the canonical language" 0 '"language":"javascript"' \
	"$KILN" validate --format json --lang nodejs "$tmp/a.js"
check "validate --lang ruby is refused with the known names" 3 \
	"^kiln validate: unknown language 'ruby' (kiln knows python" \
	"$KILN" validate --lang ruby "$tmp/a.js"

# --- the config file's sandbox.languages --------------------------------------------
printf '{"sandbox":{"languages":{"perl":{"argv":["/usr/bin/perl","{file}"],"file":"snippet.pl","aliases":["pl"],"extensions":[".pl"],"interpreters":["perl"]}}}}\n' >"$tmp/perl.json"
printf 'print "perl ", 6 * 7, "\\n";\n' >"$tmp/x.pl"
printf '#!/usr/bin/perl -w\nprint "perl shebang\\n";\n' >"$tmp/plscript"
check "config language runs by extension" 0 "^perl 42$" "$KILN" --config "$tmp/perl.json" run "$tmp/x.pl"
check "config language runs by alias" 0 "^perl 42$" "$KILN" --config "$tmp/perl.json" run --lang pl "$tmp/x.pl"
check "config language runs by #! line" 0 "^perl shebang$" "$KILN" --config "$tmp/perl.json" run "$tmp/plscript"
check "config language without a grammar is not validated" 3 "the validator cannot check perl code" \
	"$KILN" --config "$tmp/perl.json" validate "$tmp/x.pl"
check "without the config, perl is unknown" 2 "unknown language 'perl'" "$KILN" run --lang perl "$tmp/x.pl"
printf '{"sandbox":{"languages":{"perl":{"argv":["/usr/bin/perl"],"file":"a/b"}}}}\n' >"$tmp/bad.json"
check "a config language that is not valid names the member" 2 \
	"^kiln run: sandbox.languages.perl.file must be a file name" "$KILN" --config "$tmp/bad.json" run "$tmp/x.pl"

if [ "$skipped" -gt 0 ]; then
	echo "55-lang: $pass passed, $fail failed ($skipped skipped: no node)"
else
	echo "55-lang: $pass passed, $fail failed"
fi
[ "$fail" -eq 0 ]
