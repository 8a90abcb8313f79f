#!/bin/sh
# run.sh: `make bench`. Runs every tests/bench/*.sh other than itself, in
# name order, each printing its own measurements. The bench asserts no
# times; it fails only when a bench script itself fails to run.
set -u
cd "$(dirname "$0")/../.."

failed=""
for b in tests/bench/*.sh; do
	[ "$(basename "$b")" = run.sh ] && continue
	echo "=== bench: $(basename "$b" .sh)"
	if ! sh "$b"; then
		failed="$failed $(basename "$b")"
	fi
	echo
done
if [ -n "$failed" ]; then
	echo "bench scripts that failed to run:$failed"
	exit 1
fi
