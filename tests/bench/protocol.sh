#!/bin/sh
# protocol.sh: the protocol's speed and footprint. One client (rtt.c, in
# C) sends a small request, waits for the reply, and repeats, over the
# real stdio pipes of
#   - build/kiln (release build), and
#   - an echo server on vscode-jsonrpc (tests/bench/jsonrpc/, installed
#     with `npm ci` from its lock file),
# in the same run on the same machine, and prints round trips per second,
# latency percentiles, the ratio between the two, and each server's idle
# resident memory (after initialize, before any load).
#
# The request is "bench/echo" with a small params object. The echo server
# returns the params; kiln, which has no echo method, answers it with its
# Method not found error: the same framing, parsing, dispatch and reply
# work, with a reply of about the same size.
#
# BENCH_COUNT (default 20000) round trips are timed after BENCH_WARMUP
# (default 2000). Nothing here asserts a time.
set -eu
cd "$(dirname "$0")/../.."

count=${BENCH_COUNT:-20000}
warmup=${BENCH_WARMUP:-2000}
mkdir -p build/bench
cc -O2 -std=gnu17 -Wall -Wextra -Werror -D_GNU_SOURCE -o build/bench/rtt tests/bench/rtt.c

field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

kiln=$(build/bench/rtt -n "$count" -w "$warmup" -- build/kiln)
echo "kiln ($(build/kiln --version)):"
echo "  round trips/s $(field "$kiln" rps), median $(field "$kiln" median_us) us," \
	"p90 $(field "$kiln" p90_us) us, p99 $(field "$kiln" p99_us) us"
echo "  idle resident memory $(field "$kiln" rss_kb) KiB"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "vscode-jsonrpc: skipped (node and npm are not installed: make deps-bench)"
	exit 0
fi
(cd tests/bench/jsonrpc && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
version=$(node -p "require('./tests/bench/jsonrpc/node_modules/vscode-jsonrpc/package.json').version")
node=$(build/bench/rtt -n "$count" -w "$warmup" -- node tests/bench/jsonrpc/echo-server.js)
echo "vscode-jsonrpc $version echo server (node $(node --version)):"
echo "  round trips/s $(field "$node" rps), median $(field "$node" median_us) us," \
	"p90 $(field "$node" p90_us) us, p99 $(field "$node" p99_us) us"
echo "  idle resident memory $(field "$node" rss_kb) KiB"

awk -v a="$(field "$kiln" rps)" -v b="$(field "$node" rps)" \
	-v ma="$(field "$kiln" median_us)" -v mb="$(field "$node" median_us)" \
	-v ra="$(field "$kiln" rss_kb)" -v rb="$(field "$node" rss_kb)" 'BEGIN {
	printf "kiln / vscode-jsonrpc: %.2fx the round trips per second, %.2fx the median latency, %.2fx the idle memory\n",
		a / b, ma / mb, ra / rb
}'
