#!/usr/bin/env bash
# The fuzzers for longer than CI's slices. The dispatcher fuzzer (CI: 300 cases of each): random chains of
# random responders (Lua and Swift), and chains mostly of runs of plain receives, their outcomes and traces
# checked against the reference model, and random payloads. The mutation
# fuzzer (CI: 400 cases of each): responders and subscribers that change the tree and the registrations
# during a dispatch or a publish, through every entry, checked against MutationModel. The JSON
# reader's fuzz (CI: 6,000 texts): generated and edited texts read by the C reader and by the Swift
# parser it replaced, and the tape (the reader's thread) against the direct reading.
#   tools/fuzz.sh            # 100,000 cases from seed 1
#   tools/fuzz.sh 1000000 42 # a million cases from seed 42
#   tools/fuzz.sh 100 7 5000  # then 5,000 hostile scripts from seed 7 (default 2,000)
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_CASES="${1:-100000}" MUTATION_CASES="${1:-100000}" FUZZ_SEED="${2:-1}" \
  swift test --filter 'DispatchFuzzTests|MutationFuzzTests'
JSON_FUZZ_CASES="${1:-100000}" FUZZ_SEED="${2:-1}" swift test --filter 'JSONReaderFuzzTests|JSONTapeTests'
# Hostile scripts generated from the sandbox-and-limits classes (CI runs 40).
HOSTILE_CASES="${3:-2000}" HOSTILE_SEED="${2:-1}" swift test --filter HostileFuzzTests
