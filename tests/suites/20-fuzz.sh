#!/bin/sh
# 20-fuzz.sh: a short, bounded fuzzing run for `make test`: each libFuzzer
# target replays its regression inputs, then fuzzes for FUZZ_TEST_SECONDS.
# By default the targets share 90 seconds (at least 5 each), so that with
# the replays and start-up the suite stays under two minutes however many
# targets there are. New crashes go to build/fuzz/artifacts/ here; `make
# fuzz` runs longer and saves them straight into tests/fuzz/regressions/.
# Last line: "fuzz: N passed, N failed", one count per target.
set -u
cd "$(dirname "$0")/../.."
targets=0
for f in tests/fuzz/fuzz_*.c; do
	[ -e "$f" ] && targets=$((targets + 1))
done
each=$((90 / (targets > 0 ? targets : 1)))
[ "$each" -ge 5 ] || each=5
exec sh tests/tools/fuzz.sh --artifacts build/fuzz/artifacts "${FUZZ_TEST_SECONDS:-$each}"
