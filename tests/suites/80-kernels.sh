#!/bin/sh
# 80-kernels.sh: the kernel matrix. Every other suite runs on the host's
# one kernel; this one boots Debian's own kernels (tests/kernels/
# kernels.lock: bookworm's 6.1, 6.12 from bookworm-backports, 6.18 from
# trixie-backports) under QEMU (TCG: no KVM needed) with the host's
# root shared read-only over 9p, and runs kiln's smoke suite in each
# guest (tests/kernels/smoke.py: boxes as nobody and root, seccomp,
# Landlock against the kernel's ABI, a one-shot run, a session, the
# zygote, the workspace and its masks, the output relay, and the memory
# limit under a delegated cgroup v2, which the host, cgroup v1, cannot
# test). Each line names its kernel ("6.1: ok seccomp"). An outcome a
# kernel is known to give instead (a limit of that kernel) passes with
# "known: ..." saying what.
# The kernels are fetched once (sha256-pinned, tests/kernels/
# fetch-kernels.sh) into $XDG_CACHE_HOME/kiln/kernels. The guests run the
# release build/kiln (ASan under TCG is too slow), or KILN_BIN.
# KILN_TEST_ONLY: kernel labels (6.1, 6.12) and/or check names.
# Skipped (counted as such) only where QEMU cannot run these kernels at
# all: a host that is not x86_64. Last line: "80-kernels: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
repo=$PWD
name=80-kernels
pass=0
fail=0

if [ "$(uname -m)" != x86_64 ]; then
	echo "$name: skipped: the kernels are amd64 and QEMU's TCG on $(uname -m) is not tried"
	echo "$name: 0 passed, 0 failed, 1 skipped"
	exit 0
fi
if ! command -v qemu-system-x86_64 >/dev/null 2>&1; then
	echo "$name: qemu-system-x86_64 is missing (server/tools/deps.sh test installs it)"
	echo "$name: 0 passed, 1 failed"
	exit 1
fi
for tool in cpio busybox xz strings gzip; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "$name: $tool is missing (server/tools/deps.sh test installs it)"
		echo "$name: 0 passed, 1 failed"
		exit 1
	fi
done
KILN=${KILN_BIN:-build/kiln}
case $KILN in /*) ;; *) KILN=$repo/$KILN ;; esac
if [ ! -x "$KILN" ]; then
	echo "$name: no kiln binary at $KILN (make build/kiln)"
	echo "$name: 0 passed, 1 failed"
	exit 1
fi

lock=tests/kernels/kernels.lock
cache=${XDG_CACHE_HOME:-$HOME/.cache}/kiln/kernels
out=build/kernels
mkdir -p "$out"
# The attack program (tests/sandbox/attack.c) the seccomp and Landlock
# checks run inside kiln's box, where the guest finds it (the host's root).
if ! cc -O1 -Wall -o "$out/attack" tests/sandbox/attack.c >"$out/attack.log" 2>&1; then
	cat "$out/attack.log"
	echo "$name: 0 passed, 1 failed"
	exit 1
fi

# KILN_TEST_ONLY's words that are labels pick kernels; the rest, checks.
labels=$(grep -v '^#' "$lock" | awk 'NF { print $1 }')
want=""
checks=""
for w in ${KILN_TEST_ONLY:-}; do
	if echo "$labels" | grep -qx -- "$w"; then want="$want $w"; else checks="$checks $w"; fi
done
[ -n "$want" ] || want=$labels

# shellcheck disable=SC2086
if ! sh tests/kernels/fetch-kernels.sh "$lock" "$cache" $want; then
	echo "$name: cannot fetch the kernels (the Debian archive: $lock)"
	echo "$name: 0 passed, 1 failed"
	exit 1
fi

# The guests boot side by side (TCG guests of 2 vCPUs each share the
# cores either way, and each spends much of its time waiting on 9p and
# its own timers: side by side takes well under the sum). Each QEMU run
# has a hard limit: a guest that hangs is killed and counted as failed.
start=$(date +%s)
for l in $want; do
	KILN_TEST_ONLY=$checks sh tests/kernels/boot.sh "$l" "$cache/$l" "$KILN" "$out/$l" 600 \
		>"$out/$l.boot.log" 2>&1 &
	echo $! >"$out/$l.pid"
done
for l in $want; do
	wait "$(cat "$out/$l.pid")"
	echo $? >"$out/$l.rc"
done

for l in $want; do
	rc=$(cat "$out/$l.rc")
	res=$out/$l/results.txt
	cat "$out/$l.boot.log"
	if [ ! -f "$res" ]; then
		echo "$l: not ok boot: no results (boot.sh exit $rc)"
		fail=$((fail + 1))
		continue
	fi
	sed -n -e '/^smoke: /d' -e "s/^/$l: /p" "$res"
	line=$(grep -E '^smoke: [0-9]+ passed, [0-9]+ failed' "$res" | tail -n 1)
	if [ -z "$line" ]; then
		echo "$l: not ok guest: the smoke suite did not finish (QEMU exit $rc; $out/$l/console.log ends:)"
		tail -n 15 "$out/$l/console.log" | sed "s/^/$l:   /"
		fail=$((fail + 1))
	fi
	pass=$((pass + $(grep -c '^ok ' "$res")))
	fail=$((fail + $(grep -c '^not ok ' "$res")))
done
echo "$name: the guests took $(($(date +%s) - start)) s"
echo "$name: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
