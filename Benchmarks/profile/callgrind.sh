#!/usr/bin/env bash
# Where a dispatch's instructions go: valgrind's callgrind over Benchmarks/profile/dispatch.lua,
# then the top of callgrind_annotate (by hand; needs valgrind).
#   Benchmarks/profile/callgrind.sh [DEPTH] [COUNT] [trace]
set -euo pipefail
cd "$(dirname "$0")/../.."
swift build -c release --product luahier >/dev/null
out=$(mktemp /tmp/luahier-callgrind.XXXXXX)
# valgrind cannot read the debug information of a Swift release build: a stripped copy.
binary=$(mktemp /tmp/luahier-stripped.XXXXXX)
trap 'rm -f "$binary"' EXIT
cp .build/release/luahier "$binary" && chmod +x "$binary" && strip --strip-debug "$binary"
valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$binary" run --timeout 0 --max-memory 0 --dispatch-timeout 0 \
    Benchmarks/profile/dispatch.lua -- "${1:-10}" "${2:-20000}" "${3:-}" 2>&1 | grep "Collected"
callgrind_annotate --inclusive=yes "$out" | grep -E "luahier_|LuaHierarchy|lua_|swift_(retain|release)" | head -40
echo "full profile: $out (callgrind_annotate --inclusive=yes $out)"
