#!/usr/bin/env bash
# Instructions per dispatch, by valgrind's callgrind: the difference between 100,000 and 50,000
# dispatches of a profile script, over 50,000 (so start-up and the script's setup cancel out).
#   Benchmarks/profile/instructions.sh [SCRIPT] [DEPTH] [trace|off] [ENDING]
# SCRIPT: Benchmarks/profile/dispatch.lua (the engine, the default; ENDING as it says) or
# floor.lua (the spec floor in plain Lua). Counts move by a few hundred from run to run, the floor's too (Lua seeds
# its string hashes from the clock, and where malloc puts things varies): repeat, and compare
# ratios of figures taken together.
set -euo pipefail
cd "$(dirname "$0")/../.."
script=${1:-Benchmarks/profile/dispatch.lua}
swift build -c release --product luahier >/dev/null
# valgrind cannot read the debug information of a Swift release build: a stripped copy.
binary=$(mktemp /tmp/luahier-stripped.XXXXXX)
trap 'rm -f "$binary"' EXIT
strip --strip-debug -o "$binary" .build/release/luahier && chmod +x "$binary"
count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$binary" run --timeout 0 --max-memory 0 \
        --dispatch-timeout 0 "$script" -- "${2:-10}" "$1" ${3:-off} ${4:-} 2>&1 | awk '/Collected/ { print $4 }'
}
fewer=$(count 50000 "${2:-10}" "${3:-off}" "${4:-}")
more=$(count 100000 "${2:-10}" "${3:-off}" "${4:-}")
echo "$script depth ${2:-10} ${3:-off} ${4:-}: $(((more - fewer) / 50000)) instructions per dispatch"
