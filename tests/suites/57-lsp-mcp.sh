#!/bin/sh
# 57-lsp-mcp.sh: kiln for every client, with real clients and no kiln
# plugin or package: Neovim 0.10's built-in LSP client (tests/lsp/
# nvim_plain.lua) and Emacs's Eglot (Debian's elpa-eglot, tests/lsp/
# eglot_plain.el) each see validator diagnostics, list the code actions and
# run one; the MCP inspector's CLI (npm, installed from tests/mcp/
# package-lock.json) lists kiln mcp's tools and calls each. The protocol
# details are in protocol/transcripts/lsp/ and mcp/ (15-transcripts).
# Neovim 0.10 is skipped, never failed, when trixie's packages cannot be
# fetched (tests/tools/nvim-0.10.sh).
# Last line: "lsp-mcp: N passed, N failed[, N skipped]".
set -u
cd "$(dirname "$0")/../.."
root=$PWD
kiln=$root/build/kiln
pass=0
fail=0
skip=0

ok() {
	echo "ok $1"
	pass=$((pass + 1))
}
bad() {
	echo "FAIL $1"
	[ -n "${2:-}" ] && sed 's/^/    /' "$2" | tail -n 40
	fail=$((fail + 1))
}
# Adds a client script's "NAME: N passed, N failed" to the totals; no such
# line is one failure.
count() {
	line=$(grep -E '^[a-z-]+: [0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1)
	if [ -z "$line" ]; then
		bad "$2 printed no summary" "$1"
		return
	fi
	grep -E '^(ok|FAIL) ' "$1" | sed "s/^/[$2] /"
	p=$(echo "$line" | sed -E 's/^[a-z-]+: ([0-9]+) passed.*/\1/')
	f=$(echo "$line" | sed -E 's/^[a-z-]+: [0-9]+ passed, ([0-9]+) failed.*/\1/')
	pass=$((pass + p))
	fail=$((fail + f))
	[ "$f" -gt 0 ] && sed 's/^/    /' "$1" | grep -v '^    \(ok\|FAIL\) ' | tail -n 20
	return 0
}

if [ ! -x "$kiln" ]; then
	echo "no build/kiln: run 'make build/kiln' first"
	echo "lsp-mcp: 0 passed, 1 failed"
	exit 1
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# --- Neovim 0.10, built-in client ---
nvim10=$(sh tests/tools/nvim-0.10.sh)
rc=$?
if [ "$rc" -eq 0 ]; then
	(cd tests/lsp && KILN_BIN=$kiln timeout 120 "$nvim10" --headless --clean -u NONE \
		-l nvim_plain.lua) >"$log" 2>&1
	count "$log" nvim-0.10
elif [ "$rc" -eq 77 ]; then
	echo "[nvim-0.10] skipped: 8 checks (Neovim 0.10 could not be fetched from trixie)"
	skip=$((skip + 6))
else
	bad "tests/tools/nvim-0.10.sh failed ($rc)"
fi

# --- Emacs, Eglot ---
if command -v emacs >/dev/null 2>&1; then
	(cd tests/lsp && KILN_BIN=$kiln timeout 120 emacs --batch -Q -l eglot_plain.el) \
		>"$log" 2>&1
	count "$log" eglot
else
	bad "no emacs on PATH (make deps installs emacs-nox and elpa-eglot)"
fi

# --- the MCP inspector's CLI ---
start=$(date +%s)
if ! (cd tests/mcp && npm ci --no-audit --no-fund --loglevel=error) >"$log" 2>&1; then
	bad "npm ci in tests/mcp (the inspector, from package-lock.json)" "$log"
else
	echo "npm ci of the MCP inspector took $(($(date +%s) - start)) s"
	inspect() {
		(cd tests/mcp && timeout 60 ./node_modules/.bin/mcp-inspector --cli "$kiln" mcp "$@") \
			>"$log" 2>&1
	}
	if inspect --method tools/list && grep -q '"name": "run_code"' "$log" &&
		grep -q '"name": "validate_code"' "$log" && grep -q '"inputSchema"' "$log"; then
		ok "inspector lists run_code and validate_code"
	else
		bad "inspector tools/list" "$log"
	fi
	if inspect --method tools/call --tool-name run_code --tool-arg language=python \
		--tool-arg 'code=print(6*7)' && grep -q 'exit code 0' "$log" &&
		grep -q '"stdout": "42\\n"' "$log" && grep -q '"isError": false' "$log"; then
		ok "inspector calls run_code"
	else
		bad "inspector tools/call run_code" "$log"
	fi
	if inspect --method tools/call --tool-name run_code --tool-arg language=python \
		--tool-arg 'code=import socket' && grep -q 'Not run: the validator denied' "$log" &&
		grep -q '"isError": true' "$log"; then
		ok "inspector: run_code refuses denied code with the diagnostics"
	else
		bad "inspector tools/call run_code (denied)" "$log"
	fi
	if inspect --method tools/call --tool-name validate_code --tool-arg language=bash \
		--tool-arg 'code=echo hi' && grep -q 'verdict: allow' "$log"; then
		ok "inspector calls validate_code"
	else
		bad "inspector tools/call validate_code" "$log"
	fi
fi

line="lsp-mcp: $pass passed, $fail failed"
[ "$skip" -gt 0 ] && line="$line, $skip skipped"
echo "$line"
[ "$fail" -eq 0 ]
