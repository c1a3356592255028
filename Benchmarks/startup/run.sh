#!/usr/bin/env bash
# Startup: `luahier run empty.lua` against `lua5.4 empty.lua`, side by side in one hyperfine
# run, then instructions per start (callgrind). Two luahier builds are compared: the
# default release build (Swift's runtime as shared libraries) and a static executable
# (`--static-swift-stdlib -Xswiftc -static-executable`, no dynamic loader at all; no Lua C
# modules under --unsafe). Also `run` with an option before FILE, which goes through the
# argument parser instead of the fast path. About a minute, once built.
#   Benchmarks/startup/run.sh [runs]
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-300}
need=()
for tool in hyperfine valgrind lua5.4; do command -v "$tool" >/dev/null || need+=("$tool"); done
[ ${#need[@]} -eq 0 ] || { apt-get update -qq && apt-get install -y -qq "${need[@]/lua5.4/lua5.4}" >/dev/null; }

swift build -c release --product luahier 2>&1 | tail -1
swift build -c release --product luahier --static-swift-stdlib -Xswiftc -static-executable \
    --scratch-path .build-static 2>&1 | tail -1
dynamic=.build/release/luahier
static=.build-static/release/luahier
empty=$(mktemp --suffix .lua)
trap 'rm -f "$empty" /tmp/luahier-startup.*' EXIT

hyperfine -N -w 20 -r "$runs" \
    -n "lua5.4 empty.lua" "lua5.4 $empty" \
    -n "luahier run (static executable)" "$static run $empty" \
    -n "luahier run (default release build)" "$dynamic run $empty" \
    -n "luahier run --timeout 30 (static, argument parser)" "$static run --timeout 30 $empty"

echo
echo "Instructions per start (callgrind; binaries stripped of DWARF, which valgrind 3.19 cannot read):"
for name in static dynamic; do
    binary=${!name}
    strip --strip-debug -o "/tmp/luahier-startup.$name" "$binary"
done
count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 | sed -n 's/.*refs: *//p'; }
printf '  %-45s %s\n' "lua5.4 empty.lua" "$(count lua5.4 "$empty")"
printf '  %-45s %s\n' "luahier run (static executable)" "$(count /tmp/luahier-startup.static run "$empty")"
printf '  %-45s %s\n' "luahier run (default release build)" "$(count /tmp/luahier-startup.dynamic run "$empty")"
printf '  %-45s %s\n' "luahier run --timeout 30 (static)" "$(count /tmp/luahier-startup.static run --timeout 30 "$empty")"
