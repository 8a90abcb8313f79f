#!/bin/sh
# 62-vscode.sh: the VS Code extension (editor-clients/vscode). Installs its
# npm packages from the committed package-lock.json (`npm ci`), runs its
# tests (`npm test`: node's test runner driving the real extension code,
# through vscode-languageclient, against the real build/kiln and
# tests/fake-model, under a stub of the `vscode` module), and packages the
# .vsix offline (`npm run package`). Then the end-to-end test in a real VS
# Code (code-server in headless Chromium, tests/tools/code-server-e2e.sh)
# when its pieces can be installed here; when they cannot it says why and
# counts as skipped, never as passed.
# KILN_TEST_ONLY="WORD..." (tests/tools/mutate.sh's ONLY): only the npm
# tests whose names contain one of the words (each a node
# --test-name-pattern), no package and no end to end run.
set -u
cd "$(dirname "$0")/../.."
root=$PWD
ext=editor-clients/vscode
pass=0
fail=0
skip=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

ok() { echo "ok $1"; pass=$((pass + 1)); }
bad() {
	echo "FAIL $1"
	sed 's/^/    /' "$log" | tail -n 40
	fail=$((fail + 1))
}

finish() {
	line="62-vscode: $pass passed, $fail failed"
	[ "$skip" -gt 0 ] && line="$line, $skip skipped"
	echo "$line"
	[ "$fail" -eq 0 ]
	exit $?
}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "no node/npm on PATH (make deps installs nodejs and npm)"
	fail=1
	finish
fi
if [ ! -x build/kiln ] && [ -z "${KILN_BIN:-}" ]; then
	echo "no build/kiln: run 'make build/kiln' first"
	fail=1
	finish
fi
export KILN_BIN="${KILN_BIN:-$root/build/kiln}"

# npm ci: exactly the lock file's packages; from npm's cache when they are
# there, else from the registry. No lifecycle scripts are needed.
t0=$(date +%s)
if (cd $ext && npm ci --no-audit --no-fund --prefer-offline --ignore-scripts) >"$log" 2>&1; then
	ok "npm ci from package-lock.json ($(($(date +%s) - t0)) s)"
else
	bad "npm ci"
	finish
fi

# npm test: tsc, then node --test. Its TAP summary gives the counts.
# KILN_TEST_ONLY (tests/tools/mutate.sh's ONLY, words): only the tests
# whose name holds one of the words, then no package and no end to end.
only=${KILN_TEST_ONLY:-}
if [ -n "$only" ]; then
	pattern=$(echo "$only" | sed 's/[][\\.*^$()+?{}|]/\\&/g; s/  */|/g')
	if (cd $ext && npx tsc -p . && node --require ./out/test/stub/register.js --test --test-concurrency=1 \
		--test-name-pattern="$pattern" out/test/*.test.js) >"$log" 2>&1; then
		rc=0
	else
		rc=$?
	fi
elif (cd $ext && npm test) >"$log" 2>&1; then
	rc=0
else
	rc=$?
fi
grep -E '^(not )?ok [0-9]+ - ' "$log" | sed 's/^/  /'
np=$(sed -nE 's/^# pass ([0-9]+)$/\1/p' "$log" | tail -n 1)
nt=$(sed -nE 's/^# tests ([0-9]+)$/\1/p' "$log" | tail -n 1)
nf=$(sed -nE 's/^# fail ([0-9]+)$/\1/p' "$log" | tail -n 1)
ns=$(sed -nE 's/^# skipped ([0-9]+)$/\1/p' "$log" | tail -n 1)
if [ -z "$np" ]; then
	bad "npm test printed no summary (exit $rc)"
else
	# Passed: the tests that neither failed nor were skipped (whether
	# node's "# pass" counts skipped tests differs between versions).
	pass=$((pass + ${nt:-$np} - ${nf:-0} - ${ns:-0}))
	fail=$((fail + ${nf:-0}))
	skip=$((skip + ${ns:-0}))
	if [ "${nf:-0}" -gt 0 ] || [ "$rc" -ne 0 ]; then
		echo "  npm test failed (exit $rc):"
		grep -E -A 30 '^not ok' "$log" | grep -vE '^\s+at ' | sed 's/^/    /' | head -n 120
		[ "${nf:-0}" -eq 0 ] && fail=$((fail + 1))
	fi
fi

if [ -n "$only" ]; then
	echo "skip package and code-server end to end: KILN_TEST_ONLY=$only"
	skip=$((skip + 1))
	finish
fi

# npm run package: the .vsix, offline, with what the extension needs.
rm -f $ext/kiln-*.vsix
if (cd $ext && npm run package) >"$log" 2>&1 && vsix=$(ls $ext/kiln-*.vsix 2>/dev/null) &&
	python3 - "$vsix" >>"$log" 2>&1 <<'EOF'; then
import json, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = set(z.namelist())
need = ["extension/package.json", "extension/out/src/extension.js",
        "extension/node_modules/vscode-languageclient/package.json",
        "extension/node_modules/diff/package.json"]
missing = [n for n in need if n not in names]
leaked = [n for n in names if n.startswith(("extension/src/", "extension/test/", "extension/out/test/"))]
pkg = json.loads(z.read("extension/package.json"))
assert not missing, f"missing from the .vsix: {missing}"
assert not leaked, f"sources or tests in the .vsix: {leaked[:5]}"
assert "*" not in pkg["activationEvents"]
print(f"{sys.argv[1]}: {len(names)} files")
EOF
	ok "npm run package: $(tail -n 1 "$log")"
else
	bad "npm run package"
fi

# End to end in code-server, when it can be installed here.
if [ "${KILN_VSCODE_E2E:-1}" = 0 ]; then
	echo "skip code-server end to end: KILN_VSCODE_E2E=0"
	skip=$((skip + 1))
elif [ -f tests/tools/code-server-e2e.sh ]; then
	sh tests/tools/code-server-e2e.sh "$(ls $ext/kiln-*.vsix 2>/dev/null | head -n 1)" >"$log" 2>&1
	rc=$?
	if [ "$rc" -eq 0 ]; then
		ok "code-server end to end: $(tail -n 1 "$log")"
	elif [ "$rc" -eq 77 ]; then
		echo "skip code-server end to end: $(tail -n 1 "$log")"
		skip=$((skip + 1))
	else
		bad "code-server end to end (exit $rc)"
	fi
else
	echo "skip code-server end to end: tests/tools/code-server-e2e.sh is not in this tree"
	skip=$((skip + 1))
fi

finish
