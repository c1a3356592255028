#!/usr/bin/env bash
# Builds the luahier to deploy: a static executable with `luahier serve` (the Server trait),
# stripped, at dist/luahier (or the path given), and proves it needs no Swift toolchain on the
# target. docs/deploy.md says what it needs there instead.
#   tools/release.sh                   # dist/luahier
#   tools/release.sh /out/luahier      # elsewhere (the Dockerfile's build stage)
#   tools/release.sh --check BINARY    # only the checks, on a binary built before
# LUAHIER_RELEASE_SCRATCH=DIR builds in DIR instead of .build, so that this build can run
# beside another `swift build` of the package (.ci/run starts it in the background).
#
# In tools/, not scripts/: scripts/ holds the Lua rules the tests and docs run; tools/ holds
# the shell tooling (lint, sanitizers, benchmarks), which this is.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "release: $*" >&2; exit 1; }

if [ "${1:-}" = --check ]; then
    [ -n "${2:-}" ] || fail "--check needs a binary"
    output="$2"
else
    output="${1:-dist/luahier}"
fi

# docs/cli.md's "Installing for speed" line, with the Server trait: Swift's runtime, Foundation
# and Dispatch linked in, and the executable linked with -static (liblua5.4-dev's liblua5.4.a).
build=(swift build -c release --traits Server --static-swift-stdlib -Xswiftc -static-executable
       --scratch-path "${LUAHIER_RELEASE_SCRATCH:-.build}")
if [ "${1:-}" != --check ]; then
    echo "release: ${build[*]}"
    "${build[@]}"
    binary="$("${build[@]}" --show-bin-path)/luahier"
    [ -x "$binary" ] || fail "the build left no executable at $binary"
    mkdir -p "$(dirname "$output")"
    cp "$binary" "$output"
    # Symbols and debug info only: Swift's reflection metadata lives in sections strip keeps.
    strip "$output"
fi
[ -f "$output" ] || fail "no file at $output"

# What the loader would bring in. A static executable has no dynamic section: ldd says
# "not a dynamic executable" (exit 1), which is the best answer.
needed="$(readelf -d "$output" 2>/dev/null | grep -E 'NEEDED|RPATH|RUNPATH' || true)"
lddout="$(ldd "$output" 2>&1 || true)"
forbidden='/opt/swift|libswift|libFoundation|lib_Foundation|libdispatch|libBlocksRuntime|swift_static'
if grep -Eq "$forbidden" <<<"$needed$lddout"; then
    echo "$lddout" >&2
    fail "$output links a Swift toolchain library (matched: $(grep -Eo "$forbidden" <<<"$needed$lddout" | sort -u | tr '\n' ' ')); the target has no toolchain: build with --static-swift-stdlib -Xswiftc -static-executable"
fi
# Anything else dynamic must be a Debian runtime library docs/deploy.md names.
if [ -n "$needed" ]; then
    unexpected="$(grep -Eo '\[[^]]+\]' <<<"$needed" | tr -d '[]' \
        | grep -Ev '^(libc\.so\.6|libm\.so\.6|liblua5\.4\.so\.0|ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1)$' || true)"
    [ -z "$unexpected" ] || fail "$output needs libraries docs/deploy.md does not list: $unexpected"
fi
# Without liblua5.4.so.0 among them, Lua must be inside (lapi.c's lua_ident).
if ! grep -q 'liblua5\.4' <<<"$needed"; then
    grep -q '\$LuaVersion: Lua 5\.4' < <(strings "$output") || fail "$output neither links liblua5.4 nor contains Lua 5.4"
fi

echo "release: $output, $(stat -c %s "$output") bytes ($(du -h "$output" | cut -f1))"
echo "release: ldd $output:"
sed 's/^/  /' <<<"$lddout"  # indented under its heading
if [ -z "$needed" ]; then
    echo "release: no dynamic section: needs no library on the target (docs/deploy.md)"
fi
