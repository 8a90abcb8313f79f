#!/bin/sh
# tests/shots.sh NVIM OUTDIR: screenshots of the plugin as a person sees it.
# Runs NVIM in a real terminal (a private tmux server, 110x46, TERM
# xterm-256color) against KILN_BIN (default build/kiln) and the fake model
# server (tests/fake-model), with a three-hunk proposal of the fake's
# 30-line program: the review (each hunk's lines and its verdict), then,
# after gA and :KilnRun, the output window. Each screen is captured with
# `tmux capture-pane -e -p` into OUTDIR/review.ansi and OUTDIR/output.ansi
# and checked for what it must show (the hunk lines, the verdict, the
# output text); with tests/tools/screen_svg.py there, each is also drawn as
# OUTDIR/*.svg (docs/img/nvim-*.svg are copies of those). Prints one line a
# check ("ok NAME" or "FAIL NAME: why") and exits 1 when one failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
nvim=$1
out=$2
kiln=${KILN_BIN:-$repo/build/kiln}
mkdir -p "$out"
tmp=$(mktemp -d)
sock=kiln-shots-$$
fake_pid=
nvim_pid=
cleanup() {
	tmux -L "$sock" kill-server 2>/dev/null
	[ -n "$nvim_pid" ] && kill "$nvim_pid" 2>/dev/null
	[ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
# Wait (up to 10 s) until test $1 holds for file $2 (-s: has bytes, -S: a socket).
wait_file() {
	i=0
	while [ ! "$1" "$2" ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}
ok() { echo "ok $1"; }
fail() {
	echo "FAIL $1"
	fails=$((fails + 1))
}

python3 "$repo/tests/fake-model/fake_model.py" --port 0 --port-file "$tmp/port" --max-seconds 180 &
fake_pid=$!
wait_file -s "$tmp/port"
[ -s "$tmp/port" ] || {
	fail "shots: the fake model server did not start"
	exit 1
}
url=http://127.0.0.1:$(cat "$tmp/port")

# The buffer: the fake's program with a line of the user's the model
# deletes, a line it changes, and without the last line, which it adds
# (as tests/test_review_trust.lua's mixed review).
python3 - "$repo/tests/fake-model" "$tmp/stats.py" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import fake_model
lines = fake_model.long_program().rstrip("\n").split("\n")
mine = lines[:3] + ["print('mine kept')"] + lines[3:-1]
mine[14] = "data_0 = [x * 100 for x in range(10)]"
open(sys.argv[2], "w").write("\n".join(mine) + "\n")
EOF

cat >"$tmp/init.lua" <<EOF
vim.opt.rtp:prepend('$repo/editor-clients/nvim')
vim.o.swapfile = false
vim.o.number = true
vim.o.laststatus = 2
vim.opt.shortmess:append('I')
require('kiln').setup({
  cmd = { '$kiln' },
  llm = { provider = 'ollama', url = '$url', model = 'fake-long' },
  output = { height = 14 },
  status_done_ms = 600000,
})
EOF

export XDG_CONFIG_HOME="$tmp/config" XDG_DATA_HOME="$tmp/data" XDG_STATE_HOME="$tmp/state" \
	XDG_CACHE_HOME="$tmp/cache"
# Neovim runs headless and the terminal shows it through --remote-ui:
# trixie's nvim started through its own loader (tests/tools/nvim-0.10.sh)
# cannot re-execute itself as the TUI's --embed child.
(cd "$tmp" && exec "$nvim" -u "$tmp/init.lua" -i NONE -n --headless --listen "$tmp/nvim.sock" stats.py) \
	>"$tmp/nvim.log" 2>&1 &
nvim_pid=$!
wait_file -S "$tmp/nvim.sock"
tmux -L "$sock" -f /dev/null new-session -d -s shots -x 110 -y 46 \
	"TERM=xterm-256color '$nvim' --remote-ui --server '$tmp/nvim.sock'; sleep 30"

plain() { tmux -L "$sock" capture-pane -p -t shots; }
# Wait (up to $2 tenths of a second) until the screen holds text $1.
wait_for() {
	i=0
	while [ $i -lt "$2" ]; do
		if plain | grep -qF -- "$1"; then
			return 0
		fi
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
keys() { tmux -L "$sock" send-keys -t shots "$@"; }
# Every line of $1 (a file of fixed strings) must be on the screen $2.
check() {
	name=$1
	screen=$2
	shift 2
	for want in "$@"; do
		if ! sed 's/\x1b\[[0-9;:]*m//g' "$screen" | grep -qF -- "$want"; then
			fail "$name: the screen lacks '$want'"
			sed 's/\x1b\[[0-9;:]*m//g' "$screen" | sed 's/^/    | /'
			return
		fi
	done
	ok "$name"
}

if ! wait_for 'stats.py' 300; then
	fail "shots: Neovim did not start in tmux"
	sed "s/^/    log: /" "$tmp/nvim.log"
	plain | sed 's/^/    | /'
	exit 1
fi
keys ':1,30KilnIntent compute stats' Enter
if ! wait_for 'kiln hunk 3/3' 300; then
	fail "shots: no review on the screen"
	plain | sed 's/^/    | /'
	exit 1
fi
# The whole buffer is on the screen, from its first line.
keys 'gg'
sleep 0.5
tmux -L "$sock" capture-pane -e -p -t shots >"$out/review.ansi"
check "shots: the review shows each hunk with its verdict and the proposed lines" "$out/review.ansi" \
	'kiln hunk 1/3 (verdict allow)' 'kiln hunk 2/3 (verdict allow)' 'kiln hunk 3/3 (verdict allow)' \
	"print('mine kept')" 'data_0 = [x * 1 for x in range(10)]' \
	"print('median of means', statistics.median(m for m, _ in results))" 'ga accept, gr reject'

keys 'gA'
wait_for 'review done: 3 of 3 hunks accepted' 50
keys ':KilnRun' Enter
if ! wait_for 'kiln: done (exit 0' 300; then
	fail "shots: the run did not end on the screen"
	plain | sed 's/^/    | /'
	exit 1
fi
sleep 0.3
tmux -L "$sock" capture-pane -e -p -t shots >"$out/output.ansi"
check "shots: the output window shows what ran, its output, its end and the status" "$out/output.ansi" \
	'kiln run: proposal p1 as accepted into the buffer' '4.50 2.87' '18.00 11.49' 'median of means 11.25' \
	'[exit 0, ' 'kiln: done (exit 0, '
if grep -qF "mine kept" "$out/output.ansi" && sed 's/\x1b\[[0-9;:]*m//g' "$out/output.ansi" | grep -q '^mine kept'; then
	fail "shots: the output shows the deleted line's output"
fi

svg=$repo/tests/tools/screen_svg.py
if [ -f "$svg" ]; then
	for s in review output; do
		if python3 "$svg" "$out/$s.ansi" "$out/$s.svg" && grep -q '<svg' "$out/$s.svg"; then
			ok "shots: $s.svg drawn"
		else
			fail "shots: screen_svg.py could not draw $s.ansi"
		fi
	done
fi
keys ':qa!' Enter
[ "$fails" -eq 0 ]
