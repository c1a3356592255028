#!/usr/bin/env bash
# Where a dispatch's instructions go: valgrind's callgrind over Benchmarks/profile/dispatch.lua,
# then the top of callgrind_annotate (by hand; needs valgrind).
#   Benchmarks/profile/callgrind.sh [DEPTH] [COUNT] [trace]
set -euo pipefail
cd "$(dirname "$0")/../.."
swift build -c release --product luahier >/dev/null
out=$(mktemp /tmp/luahier-callgrind.XXXXXX)
valgrind --tool=callgrind --callgrind-out-file="$out" \
    .build/release/luahier run Benchmarks/profile/dispatch.lua -- "${1:-10}" "${2:-20000}" "${3:-}" 2>&1 | grep "refs"
callgrind_annotate --inclusive=yes "$out" | grep -E "LuaHierarchy|lua_|swift_(retain|release)" | head -40
echo "full profile: $out (callgrind_annotate --auto=yes $out)"
