#!/bin/sh
# cold.sh: a cold `kiln run` (warmBoxes false: the box is built at the
# request) of `exit 0` in bash, timed from a client process, against
# bubblewrap with a comparable box (the same namespaces, read-only system
# folders, a fresh /proc and /dev, tmpfs /tmp and /work, kiln's own
# seccomp program), in turns (tests/bench/cold_turns.py). Three rows:
# started in / (no workspace), in an empty project folder, and in a
# checkout of 1,900 files (this repository's files, some twice, committed
# to a fresh git repository). Ratios as cold.none, cold.folder and
# cold.checkout for run.sh's baseline. Not a test: nothing here fails on
# a number. Standalone: `sh tests/bench/cold.sh` (needs bwrap: `make
# deps-bench`). KILN=path overrides the binary; RUNS=N the turns (40);
# PAUSE the seconds before each run (0.05); KILN_OLD=path: an old
# binary's runs in the same turns, its ratios printed beside.
set -eu
cd "$(dirname "$0")/../.."
KILN=${KILN:-build/kiln}
RUNS=${RUNS:-40}
PAUSE=${PAUSE:-0.05}
[ -x "$KILN" ] || make --no-print-directory build/kiln >/dev/null
command -v bwrap >/dev/null || { echo "cold bench: bwrap missing (make deps-bench)"; exit 1; }
tmp=$(mktemp -d /tmp/kiln-bench-cold.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
chmod 755 "$tmp"
cp "$KILN" "$tmp/kiln"
KILN=$tmp/kiln
old=""
if [ -n "${KILN_OLD:-}" ]; then
	cp "$KILN_OLD" "$tmp/kiln-old"
	old="--old $tmp/kiln-old"
fi
echo '{"sandbox": {"warmBoxes": false}}' >"$tmp/config.json"
# kiln's own filter, for bwrap's --seccomp.
make --no-print-directory build/libkiln.a >/dev/null
cc -O2 -std=gnu17 -Wall -Wextra -Werror -D_GNU_SOURCE -Iserver -o "$tmp/cold_filter" \
	tests/bench/cold_filter.c build/libkiln.a $(pkg-config --libs libseccomp json-c libbsd) -lmd -lm
"$tmp/cold_filter" >"$tmp/filter.bpf"
# The folders: empty, and a checkout of 1,900 files.
mkdir -p "$tmp/empty" "$tmp/checkout"
git ls-files -z | xargs -0 tar -cf - | tar -xf - -C "$tmp/checkout"
python3 - "$tmp/checkout" 1900 <<'PY'
import os, shutil, sys
root, want = sys.argv[1], int(sys.argv[2])
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
for i in range(max(0, want - len(files))):
    shutil.copyfile(files[i], files[i] + ".copy")
PY
git -C "$tmp/checkout" init -q
git -C "$tmp/checkout" add -A
git -C "$tmp/checkout" -c user.name=bench -c user.email=bench@kiln -c commit.gpgsign=false \
	commit -qm checkout
chmod -R go+rX "$tmp/empty" "$tmp/checkout"
n=$(git -C "$tmp/checkout" ls-files | wc -l)
echo "cold kiln run against bwrap ($RUNS turns, medians; $(nproc) cores, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg))"
python3 tests/bench/cold_turns.py "$KILN" "$tmp/config.json" "$tmp/filter.bpf" "$RUNS" "$PAUSE" \
	"none=/" "folder=$tmp/empty" "checkout=$tmp/checkout" $old
echo "  (checkout: $n files; load at the end $(cut -d' ' -f1-3 /proc/loadavg))"
