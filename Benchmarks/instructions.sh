#!/usr/bin/env bash
# Instructions (callgrind) of the figures a change must not move, for one or two luahier
# binaries side by side, with the ratio: a start (`run` with no option, `run` through the
# argument parser, `dispatch` on empty input), a depth-10 dispatch from Lua, and a `dispatch`
# line on the benchmark's stream. Instructions, not seconds: the same on a loaded machine.
#   Benchmarks/instructions.sh BINARY [BASELINE]
# (Build with the static install of docs/cli.md for the startup figures it quotes.)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null && command -v lua5.4 >/dev/null || {
  apt-get update -qq && apt-get install -y -qq valgrind lua5.4 >/dev/null; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
: > "$work/empty.lua"
lua5.4 Benchmarks/dispatch/make-input.lua 2000 > "$work/small.jsonl"
lua5.4 Benchmarks/dispatch/make-input.lua 22000 > "$work/large.jsonl"
count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null </dev/null | sed -n 's/.*refs: *//p' | tr -d ,; }
countin() { local input=$1; shift; valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null <"$input" | sed -n 's/.*refs: *//p' | tr -d ,; }
figures() {
  local bin=$work/$1
  strip --strip-debug -o "$bin" "$2"
  echo "run empty.lua $(count "$bin" run "$work/empty.lua")"
  echo "run --timeout 30 empty.lua $(count "$bin" run --timeout 30 "$work/empty.lua")"
  echo "dispatch (empty input) $(count "$bin" dispatch scripts/alerts.lua "$work/empty.lua")"
  local small large
  small=$(countin "$work/small.jsonl" "$bin" dispatch scripts/alerts.lua -)
  large=$(countin "$work/large.jsonl" "$bin" dispatch scripts/alerts.lua -)
  echo "dispatch, per line $(( (large - small) / 20000 ))"
  local d1 d2
  d1=$(count "$bin" run --timeout 0 --max-memory 0 --dispatch-timeout 0 Benchmarks/profile/dispatch.lua -- 10 2000)
  d2=$(count "$bin" run --timeout 0 --max-memory 0 --dispatch-timeout 0 Benchmarks/profile/dispatch.lua -- 10 22000)
  echo "depth-10 dispatch from Lua $(( (d2 - d1) / 20000 ))"
}
figures a "$1" > "$work/a.txt"
if [ $# -ge 2 ]; then
  figures b "$2" > "$work/b.txt"
  printf '%-32s %14s %14s %7s\n' figure this baseline ratio
  paste -d'|' "$work/a.txt" "$work/b.txt" | while IFS='|' read -r a b; do
    name=${a% *}; x=${a##* }; y=${b##* }
    printf '%-32s %14s %14s %7s\n' "$name" "$x" "$y" "$(awk -v x="$x" -v y="$y" 'BEGIN { printf "%.3f", x / y }')"
  done
else
  cat "$work/a.txt"
fi
