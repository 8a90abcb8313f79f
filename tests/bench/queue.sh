#!/bin/sh
# queue.sh: memory under a client that writes and never reads. The client
# (tests/rpc/queue.py) sends 50,000 requests with 4 KB ids and reads no
# reply until it has written them all (or the server stops taking them),
# then reads every reply. Each reply echoes its id, so a server that keeps
# reading queues about 200 MB of replies. Printed: each server's peak
# resident memory (VmHWM) and the ratio, for
#   - build/kiln (release build), which stops reading its input while its
#     output queue is over 8 MiB, and
#   - the vscode-jsonrpc echo server (tests/bench/jsonrpc/, as in
#     protocol.sh), which answers the same unknown method with the same
#     -32601 error.
# Nothing here asserts a figure; tests/suites/17-connection.sh holds kiln
# to a bound.
set -eu
cd "$(dirname "$0")/../.."

kiln=$(python3 tests/rpc/queue.py --bench build/kiln)
kpeak=${kiln% *}
kbase=${kiln#* }
echo "kiln ($(build/kiln --version)): peak resident memory $kpeak KiB (idle $kbase KiB)"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "vscode-jsonrpc: skipped (node and npm are not installed: make deps-bench)"
	exit 0
fi
(cd tests/bench/jsonrpc && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
version=$(node -p "require('./tests/bench/jsonrpc/node_modules/vscode-jsonrpc/package.json').version")
node=$(python3 tests/rpc/queue.py --bench node tests/bench/jsonrpc/echo-server.js)
npeak=${node% *}
nbase=${node#* }
echo "vscode-jsonrpc $version echo server (node $(node --version)): peak resident memory" \
	"$npeak KiB (idle $nbase KiB)"
awk -v a="$kpeak" -v b="$npeak" 'BEGIN {
	printf "kiln / vscode-jsonrpc: %.2fx the peak memory with 50,000 unread replies\n", a / b
}'
