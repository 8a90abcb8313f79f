#!/bin/sh
# 60-nvim.sh: the Neovim plugin (editor-clients/nvim) in headless Neovim,
# driving the real build/kiln (and tests/fake-model for intents), on
# Debian's Neovim 0.7.2 and on Neovim 0.10 from Debian trixie's packages
# (tests/tools/nvim-0.10.sh). A test whose server method is not in this
# build yet is skipped with the reason; so is the 0.10 run, only when
# trixie's packages cannot be fetched. KILN_TEST_ONLY=TEXT runs only the
# tests whose name contains TEXT, in both versions.
set -u
cd "$(dirname "$0")/../.."
tests=editor-clients/nvim/tests
if [ -n "${KILN_TEST_ONLY:-}" ]; then
	export KILN_TEST_FILTER="$KILN_TEST_ONLY"
fi
pass=0
fail=0
skip=0

count() {
	# Adds the counts of one run's summary line to the totals.
	p=$(echo "$1" | sed -nE 's/^nvim: ([0-9]+) passed.*/\1/p')
	f=$(echo "$1" | sed -nE 's/^nvim: [0-9]+ passed, ([0-9]+) failed.*/\1/p')
	s=$(echo "$1" | sed -nE 's/.* ([0-9]+) skipped$/\1/p')
	pass=$((pass + ${p:-0}))
	fail=$((fail + ${f:-1}))
	skip=$((skip + ${s:-0}))
}

run_on() {
	label=$1
	nvim=$2
	log=$(mktemp)
	KILN_BIN=${KILN_BIN:-$PWD/build/kiln} sh $tests/run.sh "$nvim" >"$log" 2>&1
	grep -v '^nvim: ' "$log" | sed "s/^/[$label] /"
	count "$(grep '^nvim: ' "$log" | tail -n 1)"
	rm -f "$log"
}

if [ ! -x build/kiln ]; then
	echo "no build/kiln: run 'make build/kiln' first"
	echo "nvim: 0 passed, 1 failed"
	exit 1
fi

# The plugin's Lua is clean by luacheck (editor-clients/nvim/.luacheckrc).
if (cd editor-clients/nvim && luacheck --no-color -q .) >/tmp/kiln-luacheck.$$ 2>&1; then
	echo "ok luacheck"
	pass=$((pass + 1))
else
	echo "FAIL luacheck:"
	sed 's/^/    /' /tmp/kiln-luacheck.$$
	fail=$((fail + 1))
fi
rm -f /tmp/kiln-luacheck.$$

# :help kiln with the README's runtimepath-only install: the plugin ships
# doc/tags, and it is what :helptags makes of doc/kiln.txt today.
if command -v nvim >/dev/null 2>&1; then
	ht=$(mktemp -d)
	mkdir "$ht/doc"
	cp editor-clients/nvim/doc/kiln.txt "$ht/doc/"
	nvim --headless -u NONE -i NONE -c "helptags $ht/doc" -c 'qa!' >/dev/null 2>&1
	if cmp -s "$ht/doc/tags" editor-clients/nvim/doc/tags; then
		echo "ok doc/tags is what :helptags makes of doc/kiln.txt"
		pass=$((pass + 1))
	else
		echo "FAIL doc/tags is stale: run nvim --headless -u NONE -c 'helptags editor-clients/nvim/doc' -c q"
		diff "$ht/doc/tags" editor-clients/nvim/doc/tags 2>&1 | head -n 10 | sed 's/^/    /'
		fail=$((fail + 1))
	fi
	rm -rf "$ht"
	got=$(nvim --headless -u NONE -i NONE --cmd "set rtp+=$PWD/editor-clients/nvim" \
		-c "lua local ok, e = pcall(vim.cmd, 'help kiln-install'); io.stdout:write((ok and vim.fn.expand('%:t') or tostring(e)) .. '\\n')" \
		-c 'qa!' 2>&1 | tail -n 1)
	if [ "$got" = kiln.txt ]; then
		echo "ok :help kiln-install opens kiln.txt with the plugin only on the runtimepath"
		pass=$((pass + 1))
	else
		echo "FAIL :help kiln-install with the plugin only on the runtimepath: $got"
		fail=$((fail + 1))
	fi
fi

if command -v nvim >/dev/null 2>&1; then
	run_on "$(nvim --version | head -n 1 | sed 's/^NVIM v//')" nvim
else
	echo "no nvim on PATH (Debian's neovim package: make deps installs it)"
	fail=$((fail + 1))
fi

# Neovim 0.10: skipped, never failed, when trixie's packages are out of reach.
ntests=$(cat $tests/test_*.lua | grep -c "^  { '")
nvim10=$(sh tests/tools/nvim-0.10.sh)
rc=$?
if [ "$rc" -eq 0 ]; then
	run_on "$("$nvim10" --version | head -n 1 | sed 's/^NVIM v//')" "$nvim10"
	# Screenshots of the review and the output window, made in a real
	# terminal (tmux) and checked for what they show; drawn as SVG into
	# build/nvim-shots/ (docs/img/nvim-*.svg are copies).
	if [ -z "${KILN_TEST_FILTER:-}" ] || echo "shots:" | grep -qF -- "$KILN_TEST_FILTER"; then
		if command -v tmux >/dev/null 2>&1; then
			log=$(mktemp)
			KILN_BIN=${KILN_BIN:-$PWD/build/kiln} sh $tests/shots.sh "$nvim10" build/nvim-shots >"$log" 2>&1
			sed 's/^/[shots] /' "$log"
			pass=$((pass + $(grep -c '^ok ' "$log")))
			fail=$((fail + $(grep -c '^FAIL ' "$log")))
			rm -f "$log"
		else
			echo "[shots] skipped: no tmux (Debian's tmux package)"
			skip=$((skip + 1))
		fi
	fi
elif [ "$rc" -eq 77 ]; then
	echo "[0.10] skipped: $ntests tests (Neovim 0.10 could not be fetched from trixie, see above)"
	skip=$((skip + ntests))
else
	echo "[0.10] tests/tools/nvim-0.10.sh failed ($rc)"
	fail=$((fail + 1))
fi

line="nvim: $pass passed, $fail failed"
[ "$skip" -gt 0 ] && line="$line, $skip skipped"
echo "$line"
[ "$fail" -eq 0 ]
