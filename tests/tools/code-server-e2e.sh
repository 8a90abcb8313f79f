#!/bin/sh
# code-server-e2e.sh VSIX: kiln's VS Code extension end to end in a real VS
# Code. Installs code-server and puppeteer-core from
# tests/vscode-e2e/package-lock.json into a cache outside the tree
# ($XDG_CACHE_HOME/kiln/vscode-e2e/HASH, once per lock file, so a fresh
# clone on the same machine does not build it again), installs VSIX into a fresh code-server profile, starts code-server
# on a loopback port with build/kiln as kiln.path, and has headless
# Chromium (Debian's chromium) open a Python file, run Kiln: Validate and
# Kiln: Run from the command palette, and find the finding in the Problems
# view and the output on screen, then run a file that writes a PNG and
# changes a CSV in the folder and press the offer's Apply (kiln writes
# both; the bytes on disk are checked) (tests/vscode-e2e/drive.js). Then
# the review (issue 36): kiln is pointed at tests/fake-model, Kiln: Ask
# replaces a line of review.py, and drive.js finds the proposed lines in
# the document with the added-line colour, the old line struck, the
# hunk's verdict CodeLens with Accept and Reject, takes review.png, Reject
# All, and finds the document as it was with no kiln tab left; a denied
# proposal in deny.py shows its verdict on the lens and its diagnostic on
# the proposed line.
# Screenshots: build/vscode-e2e-shots/ (review.png is the one
# docs/editors.md shows: KILN_UPDATE_DOCS=1 copies it to
# docs/img/vscode-review.png; with it the output scene also writes
# docs/img/vscode-output.png).
#
# Exit 0: passed; 77: a piece cannot be had here (the last line says which);
# anything else: failed.
#
# code-server 4.100.3 is the last release for Node 20. Its install builds
# VS Code's native modules (node-gyp: libkrb5-dev, libx11-dev,
# libxkbfile-dev, libsecret-1-dev) and would download ripgrep from GitHub;
# the download cache is seeded with Debian's rg instead, so nothing but the
# npm registry is reached.
set -u
cd "$(dirname "$0")/../.."
root=$PWD
vsix=${1:-}
src=tests/vscode-e2e
stamp=$(sha256sum $src/package-lock.json | cut -c1-16)
dir=${XDG_CACHE_HOME:-$HOME/.cache}/kiln/vscode-e2e/$stamp
shots=$root/build/vscode-e2e-shots
kiln=${KILN_BIN:-$root/build/kiln}

skip() { echo "$1"; exit 77; }

[ -n "$vsix" ] && [ -f "$vsix" ] || { echo "no .vsix given (npm run package in editor-clients/vscode)"; exit 1; }
vsix=$(cd "$(dirname "$vsix")" && pwd)/$(basename "$vsix")
command -v chromium >/dev/null 2>&1 || skip "no chromium (Debian's chromium package; make deps installs it)"
command -v rg >/dev/null 2>&1 || skip "no rg (Debian's ripgrep package; make deps installs it)"
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" = 20 ] || skip "code-server 4.100.3 needs Node 20, this is Node $node_major"
for h in /usr/include/krb5.h /usr/include/X11/extensions/XKBfile.h /usr/include/libsecret-1/libsecret/secret.h; do
	[ -f "$h" ] || skip "no $h: code-server's native modules need libkrb5-dev libxkbfile-dev libsecret-1-dev (make deps)"
done

# --- install (once per lock file) -----------------------------------------
if [ "$(cat "$dir/.stamp" 2>/dev/null)" != "$stamp" ]; then
	t0=$(date +%s)
	# Older installs (other lock files) go.
	rm -rf "$(dirname "$dir")"
	mkdir -p "$dir/tmp"
	cp $src/package.json $src/package-lock.json "$dir/"
	echo "installing code-server and puppeteer-core into $dir (once)"
	(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --prefer-offline) || { echo "npm ci failed"; exit 1; }
	# @vscode/ripgrep's postinstall takes $TMPDIR/vscode-ripgrep-cache-V/ASSET
	# when it is there: seed it with Debian's rg, of the version and name
	# that code-server's own lock and ripgrep's postinstall give.
	rgv=$(cd "$dir" && node -p "require('./node_modules/code-server/lib/vscode/npm-shrinkwrap.json').packages['node_modules/@vscode/ripgrep'].version")
	rgtag=$(cd "$dir/tmp" && npm pack "@vscode/ripgrep@$rgv" --silent >/dev/null 2>&1 &&
		tar xzf vscode-ripgrep-*.tgz package/lib/postinstall.js &&
		sed -nE "s/^const VERSION = '([^']+)';.*/\1/p" package/lib/postinstall.js)
	[ -n "$rgtag" ] || { echo "cannot tell which ripgrep @vscode/ripgrep@$rgv wants"; exit 1; }
	mkdir -p "$dir/tmp/vscode-ripgrep-cache-$rgv"
	tar czf "$dir/tmp/vscode-ripgrep-cache-$rgv/ripgrep-$rgtag-x86_64-unknown-linux-musl.tar.gz" -C "$(dirname "$(command -v rg)")" rg
	# Every install script runs now: argon2 builds its native part (its
	# prebuilt download fails offline), code-server's postinstall installs
	# VS Code's own packages and builds
	# their native parts; as root it wants unsafe-perm.
	(cd "$dir" && TMPDIR="$dir/tmp" npm_config_yes=true npm_config_unsafe_perm=true \
		npm rebuild --foreground-scripts >"$dir/install.log" 2>&1) ||
		{ tail -n 30 "$dir/install.log"; echo "code-server's postinstall failed ($dir/install.log)"; exit 1; }
	echo "$stamp" >"$dir/.stamp"
	echo "installed in $(($(date +%s) - t0)) s"
fi
cs="$dir/node_modules/.bin/code-server"
[ -x "$cs" ] || { echo "no $cs"; exit 1; }

# --- a fresh profile, the extension, a workspace ------------------------------
run=$(mktemp -d)
csp=""
fmp=""
cleanup() {
	[ -n "$csp" ] && kill "$csp" 2>/dev/null && wait "$csp" 2>/dev/null
	[ -n "$fmp" ] && kill "$fmp" 2>/dev/null && wait "$fmp" 2>/dev/null
	rm -rf "$run"
}
trap cleanup EXIT INT TERM
mkdir -p "$run/user/User" "$run/ext" "$run/ws" "$shots"
# The workspace is what runs see: as root the box runs as nobody, who must
# be able to read it (mktemp -d made a 0700 folder).
chmod 755 "$run" "$run/ws"
# The fake model server (tests/fake-model) answers Kiln: Ask: which
# answer comes from a marker in the intent ([[answer:NAME]]).
python3 tests/fake-model/fake_model.py --port 0 --port-file "$run/fm-port" --max-seconds 900 >"$run/fm.log" 2>&1 &
fmp=$!
i=0
until [ -s "$run/fm-port" ]; do
	i=$((i + 1))
	[ "$i" -gt 100 ] && { cat "$run/fm.log"; echo "the fake model server did not start"; exit 1; }
	sleep 0.1
done
cat >"$run/user/User/settings.json" <<EOF
{
  "kiln.path": "$kiln",
  "kiln.llm.provider": "ollama",
  "kiln.llm.url": "http://127.0.0.1:$(cat "$run/fm-port")",
  "kiln.llm.model": "fake-coder",
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "security.workspace.trust.enabled": false,
  "telemetry.telemetryLevel": "off",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "update.mode": "none"
}
EOF
# A warning (the validator's finding, in Problems) that still runs.
printf 'import os\nprint("kiln-e2e", 6 * 7)\nif False:\n    os.remove("nothing")\n' >"$run/ws/e2e.py"
# A run that changes the folder: a PNG (binary, NUL bytes and all) and a
# row added to a CSV, with the SHA-256 of what it wrote printed; Apply has
# kiln write both (drive.js checks the bytes).
printf 'month,total\n2026-01,12\n2026-02,17\n' >"$run/ws/sales.csv"
cat >"$run/ws/chart.py" <<'EOF'
import hashlib, struct, zlib
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
raw = b"".join(b"\0" + bytes(v for x in range(32) for v in (x * 8, y * 8, 0)) for y in range(32))
png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 32, 32, 8, 2, 0, 0, 0))
       + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
open("monthly.png", "wb").write(png)
with open("sales.csv", "a") as f:
    f.write("2026-03,%d\n" % (30 + 1))  # not "31" here: drive.js looks for the row on screen
print("png", hashlib.sha256(png).hexdigest())
EOF
# The review's files: a line of review.py is replaced by the proposal;
# deny.py gets a denied one below its line.
printf 'total = 0\nprint("old line, to be replaced")\nprint("review-e2e", total)\n' >"$run/ws/review.py"
printf 'x = 0  # deny-e2e\n' >"$run/ws/deny.py"
# The Kiln Output scene (tests/vscode-e2e/output-scene.js): a printing cell
# and a DataFrame cell, whose runs must both stay in the panel.
printf '# first cell\nprint("first cell:", 6 * 7)\n' >"$run/ws/cell1.py"
printf 'import pandas as pd\nprint("second cell")\ndisplay(pd.DataFrame({"month": ["2026-01", "2026-02"], "total": [12, 17], "note": ["<b>x</b>", "ok"]}))  # DataFrame\n' >"$run/ws/cell2.py"
"$cs" --user-data-dir "$run/user" --extensions-dir "$run/ext" --install-extension "$vsix" >"$run/install.log" 2>&1 ||
	{ cat "$run/install.log"; echo "code-server --install-extension failed"; exit 1; }
ls "$run/ext" | grep -q '^kiln\.kiln-' || { cat "$run/install.log"; echo "the extension is not in the extensions dir"; exit 1; }

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$cs" --auth none --disable-workspace-trust --disable-telemetry --disable-update-check \
	--bind-addr "127.0.0.1:$port" --user-data-dir "$run/user" --extensions-dir "$run/ext" \
	"$run/ws" >"$run/cs.log" 2>&1 &
csp=$!
i=0
until python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
	"http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do
	i=$((i + 1))
	[ "$i" -gt 120 ] && { cat "$run/cs.log"; echo "code-server did not come up"; exit 1; }
	sleep 0.5
done

doc_img=""
[ "${KILN_UPDATE_DOCS:-0}" = 1 ] && doc_img="$root/docs/img/vscode-output.png"
KILN_E2E_DOC_IMG="$doc_img" NODE_PATH="$dir/node_modules" node $src/drive.js "http://127.0.0.1:$port/?folder=$run/ws" "$run/ws/e2e.py" "$shots"
rc=$?
if [ "$rc" -ne 0 ]; then
	echo "--- code-server log"
	tail -n 30 "$run/cs.log"
	for f in "$run"/user/logs/*/exthost*/*kiln*/*.log "$run"/user/logs/*/exthost*/exthost.log; do
		[ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }
	done
	echo "end to end failed (screenshots in build/vscode-e2e-shots)"
	exit 1
fi
if [ "${KILN_UPDATE_DOCS:-0}" = 1 ]; then
	mkdir -p docs/img && cp "$shots/review.png" docs/img/vscode-review.png
fi
echo "code-server $("$cs" --version | head -n 1), Chromium: Kiln: Validate showed in Problems, Kiln: Run output on screen, Apply wrote a PNG and a CSV, a proposal reviewed inline and rejected, a denied one shown as denied, two runs kept as sections in Kiln Output (docs/img/vscode-output.png)"
