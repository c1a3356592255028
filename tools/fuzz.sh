#!/usr/bin/env bash
# The dispatcher fuzzer for longer than CI's slice (300 cases): random chains of random
# responders (Lua and Swift), checked against the reference model, and random payloads.
#   tools/fuzz.sh            # 100,000 cases from seed 1
#   tools/fuzz.sh 1000000 42 # a million cases from seed 42
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_CASES="${1:-100000}" FUZZ_SEED="${2:-1}" swift test --filter DispatchFuzzTests
