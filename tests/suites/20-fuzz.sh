#!/bin/sh
# 20-fuzz.sh: a short, bounded fuzzing run for `make test`: each libFuzzer
# target replays its regression inputs, then fuzzes for FUZZ_TEST_SECONDS
# (default 20). New crashes go to build/fuzz/artifacts/ here; `make fuzz`
# runs longer and saves them straight into tests/fuzz/regressions/.
# Last line: "fuzz: N passed, N failed", one count per target.
set -u
cd "$(dirname "$0")/../.."
exec sh tests/tools/fuzz.sh --artifacts build/fuzz/artifacts "${FUZZ_TEST_SECONDS:-20}"
