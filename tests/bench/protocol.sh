#!/bin/sh
# protocol.sh: the protocol's speed and footprint. One client (rtt.c, in
# C) sends a small request, waits for the reply, and repeats, over the
# real stdio pipes of
#   - build/kiln (release build),
#   - an echo server on vscode-jsonrpc (tests/bench/jsonrpc/, installed
#     with `npm ci` from its lock file), and
#   - the floor: `rtt --floor`, a C server that does one blocking read and
#     one write of a canned reply per request, no event loop and no JSON
#     parse. What it takes per round trip is the client's and the
#     kernel's share (pipes, wake-ups); what a server takes beyond it is
#     its own.
# All three are started once and measured in turns (rtt.c: BENCH_TURNS
# turns of BENCH_COUNT round trips each, in the order kiln, node, floor,
# then floor, node, kiln, ...), so that a load that drifts weighs on all;
# each figure is the median over the turns with the middle half of the
# turns (first to third quartile) beside it as its spread, and the ratio
# is taken turn by turn. Short turns, many of them: another process that
# takes the CPU for a few milliseconds then spoils a turn or two, which
# the median leaves out, rather than part of every long one.
#
# The client and the servers are pinned to one CPU (BENCH_CPU, default the
# last one; BENCH_CPU=none leaves placement to the scheduler). A round
# trip is two wake-ups; across two CPUs each is an inter-processor
# interrupt, which in a VM is an exit to the hypervisor (tens of
# microseconds on the Firecracker VM kiln is developed on, against 1-2 us
# on one CPU), and whether the scheduler puts client and server on the
# same CPU changes from minute to minute: that, not the servers, swung the
# ratio between 1.4x and 5.5x from one hour to the next. Pinned, every
# server gets the same placement. A shorter pass without pinning follows,
# for what the VM's wake-ups cost.
#
# The request is "bench/echo" with a small params object. The echo server
# returns the params; kiln, which has no echo method, answers it with its
# Method not found error: the same framing, parsing, dispatch and reply
# work, with a reply of about the same size. Each server's CPU per round
# trip (all its threads, from its process CPU clock) and context switches
# per round trip are printed beside. Nothing here asserts a time.
set -eu
cd "$(dirname "$0")/../.."

count=${BENCH_COUNT:-2000}
turns=${BENCH_TURNS:-31}
warmup=${BENCH_WARMUP:-2000}
cpu=${BENCH_CPU:-$(($(nproc) - 1))}
KILN=${KILN:-build/kiln}
mkdir -p build/bench
cc -O2 -std=gnu17 -Wall -Wextra -Werror -D_GNU_SOURCE -o build/bench/rtt tests/bench/rtt.c

node=
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
	(cd tests/bench/jsonrpc && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
	version=$(node -p "require('./tests/bench/jsonrpc/node_modules/vscode-jsonrpc/package.json').version")
	node="node tests/bench/jsonrpc/echo-server.js"
else
	echo "vscode-jsonrpc: skipped (node and npm are not installed: make deps-bench)"
fi

# report PINNING TURNS: one measurement, printed as a table.
report() { # report PIN TURNS [FIGURE]
	pin=$1 n=$2
	if [ -n "$node" ]; then
		out=$(build/bench/rtt -n "$count" -w "$warmup" -t "$n" $pin -s "$KILN" -s "$node" \
			-s "build/bench/rtt --floor")
	else
		out=$(build/bench/rtt -n "$count" -w "$warmup" -t "$n" $pin -s "$KILN" \
			-s "build/bench/rtt --floor")
	fi
	echo "$out" | awk -v node="$node" -v kv="$($KILN --version)" -v nv="vscode-jsonrpc ${version:-}" -v fig="${3:-}" '
	{
		for (i = 1; i <= NF; i++) { split($i, kvp, "="); f[NR, kvp[1]] = kvp[2] }
	}
	END {
		name[1] = kv; name[2] = node ? nv : "floor (rtt --floor)"; name[3] = "floor (rtt --floor)"
		printf "  %-30s %22s %21s %9s %9s %9s\n", "", "round trips/s", "median/p90/p99 us", "CPU us", "switches", "idle KiB"
		printf "  %-30s %22s %21s %9s %9s %9s\n", "", "(middle half)", "", "per rt", "per rt", ""
		for (k = 1; k <= NR; k++)
			printf "  %-30s %7d (%6d-%6d) %6.1f/%6.1f/%7.1f %9.2f %9.2f %9d\n", name[k],
				f[k, "rps"], f[k, "rps_lo"], f[k, "rps_hi"], f[k, "median_us"], f[k, "p90_us"],
				f[k, "p99_us"], f[k, "cpu_us"], f[k, "cs"], f[k, "rss_kb"]
		fl = node ? 3 : 2
		if (node)
			printf "  kiln / vscode-jsonrpc: %.2fx the round trips per second (median of the turns'"'"' ratios, middle half %.2f-%.2fx; target: at least 3x), %.2fx its CPU per round trip, %.2fx its idle memory\n",
				1 / f[2, "ratio"], 1 / f[2, "ratio_hi"], 1 / f[2, "ratio_lo"],
				f[1, "cpu_us"] / f[2, "cpu_us"], f[1, "rss_kb"] / f[2, "rss_kb"]
		# The ratios for the baseline of run.sh (tests/bench/figures.py); fig is
		# the name of this placement, empty for none.
		if (node && fig != "") {
			system(sprintf("python3 tests/bench/figures.py add protocol.%s %.6g higher-is-better \"%d/s\" \"vscode-jsonrpc echo server, %d/s\"",
				fig, 1 / f[2, "ratio"], f[1, "rps"], f[2, "rps"]))
			system(sprintf("python3 tests/bench/figures.py add protocol.idle_memory %.6g lower-is-better \"%.1f MB\" \"vscode-jsonrpc echo server, %.1f MB\"",
				f[1, "rss_kb"] / f[2, "rss_kb"], f[1, "rss_kb"] / 1024, f[2, "rss_kb"] / 1024))
		}
		printf "  beyond the floor (its own work): kiln %.1f us of latency and %.2f us of CPU per round trip",
			f[1, "median_us"] - f[fl, "median_us"], f[1, "cpu_us"] - f[fl, "cpu_us"]
		if (node)
			printf ", vscode-jsonrpc %.1f us and %.2f us", f[2, "median_us"] - f[fl, "median_us"],
				f[2, "cpu_us"] - f[fl, "cpu_us"]
		printf "\n"
	}'
}

if [ "$cpu" = none ]; then
	echo "JSON-RPC round trips, placement left to the scheduler ($turns turns of $count each; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)):"
	report "" "$turns" rtt_unpinned
	exit 0
fi
echo "JSON-RPC round trips, client and servers pinned to CPU $cpu ($turns turns of $count each; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)):"
report "-c $cpu" "$turns" rtt_pinned
short=$(((turns + 2) / 3))
echo "the same, placement left to the scheduler ($short turns; when client and server land on two CPUs, each wake-up crosses the VM):"
report "" "$short" rtt_unpinned
