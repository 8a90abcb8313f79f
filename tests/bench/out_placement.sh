#!/bin/sh
# out_placement.sh: the output bench's "slow mode" (docs/performance-log.md,
# "Output: the slow mode") is where the pipeline's processes run. Runs
# `sandbox_out -v -t 5` (200 MB, the zygote path) in rounds, each round
# with three placements one after another: unpinned; everything on one
# CPU (taskset -c 1 on the client, which starts the server); and the
# client on CPU 0 with the server and its boxes on CPU 1 (the server
# started under taskset -c 1 by a wrapper). Prints per placement the
# kiln turns whose server + client + box CPU is above 0.045 s per 100 MB
# (slow), of all, and the range. Not a test: nothing here fails on a
# number. Needs 2 CPUs. Standalone: `sh tests/bench/out_placement.sh`;
# KILN=path the binary, ROUNDS=N, CONFIG=path a config (default `{}`:
# the zygote path).
set -eu
cd "$(dirname "$0")/../.."
KILN=${KILN:-build/kiln}
ROUNDS=${ROUNDS:-6}
[ "$(nproc)" -ge 2 ] || { echo "out_placement: needs 2 CPUs"; exit 0; }
[ -x "$KILN" ] || make --no-print-directory build/kiln >/dev/null
tmp=$(mktemp -d /tmp/kiln-bench-place.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir -p build/bench
cc -O2 -std=gnu17 -Wall -Wextra -Werror -D_GNU_SOURCE $(pkg-config --cflags json-c) \
	-o build/bench/sandbox_out tests/bench/sandbox_out.c tests/bench/out_json.c \
	$(pkg-config --libs json-c)
cp "$KILN" "$tmp/kiln"
printf '#!/bin/sh\nexec taskset -c 1 %s "$@"\n' "$tmp/kiln" >"$tmp/kiln-on1"
chmod +x "$tmp/kiln-on1"
if [ -n "${CONFIG:-}" ]; then cp "$CONFIG" "$tmp/config.json"; else echo '{}' >"$tmp/config.json"; fi
PY=$(command -v python3)
one() { # NAME PIN KILN: one run of 5 turns, its turns' CPU per 100 MB into $tmp/NAME
	if [ -n "$2" ]; then set -- "$1" "taskset -c $2" "$3"; else set -- "$1" "" "$3"; fi
	$2 build/bench/sandbox_out -v -t 5 "$PY" "$3" "$tmp/config.json" 200 2>&1 >/dev/null |
		sed -n 's/.*server \([0-9.]*\) client \([0-9.]*\) box \([0-9.]*\).*/\1 \2 \3/p' |
		awk '{ printf "%.4f\n", $1 + $2 + $3 }' >>"$tmp/$1"
}
i=0
while [ "$i" -lt "$ROUNDS" ]; do
	one unpinned "" "$tmp/kiln"
	one one-cpu 1 "$tmp/kiln"
	one client0-server-box1 0 "$tmp/kiln-on1"
	i=$((i + 1))
done
echo "out_placement: $ROUNDS rounds of 5 turns, 200 MB, load $(cut -d' ' -f1 /proc/loadavg)"
for p in unpinned one-cpu client0-server-box1; do
	sort -n "$tmp/$p" | awk -v p="$p" '{ v[NR] = $1; if ($1 > 0.045) s++ }
		END { printf "  %-22s slow %d of %d turns, CPU per 100 MB %.3f-%.3f, median %.3f\n",
			p, s, NR, v[1], v[NR], v[int((NR + 1) / 2)] }'
done
