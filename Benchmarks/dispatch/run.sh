#!/usr/bin/env bash
# luahier dispatch vs a plain Lua script with lua-cjson doing the same routing, side by
# side in one run, on each input shape of make-input.lua: events per second for each, the
# ratio, the speed-up of --jobs 2, and instructions per line.
#
#   Benchmarks/dispatch/run.sh [LINES] [ROUNDS] [SHAPES]
#       defaults: 200000 lines, 5 rounds, "alerts deep"
#
# Installs lua5.4 and lua-cjson if missing (Debian), builds luahier in release mode,
# generates each shape's input once, checks the engine and the peer route every line alike,
# then runs the contenders in turn each round (so load on a shared machine hits them alike)
# and keeps each one's best time.
set -euo pipefail
cd "$(dirname "$0")/../.."
LINES=${1:-200000}
ROUNDS=${2:-5}
SHAPES=${3:-alerts deep}

if ! lua5.4 -e 'require "cjson"' 2>/dev/null; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq lua5.4 lua-cjson >/dev/null
fi
swift build -c release --product luahier >/dev/null
LUAHIER=.build/release/luahier
RULES=scripts/alerts.lua

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# valgrind cannot read the debug information of a Swift release build: a stripped copy.
cp "$LUAHIER" "$WORK/luahier" && strip --strip-debug "$WORK/luahier"

# The machine's own ceiling for two workers: two separate --jobs 1 processes, each on half
# the input, at once (no pipeline, no shared lock; only the cores, caches and memory shared).
halves() {
  local start end
  start=$(date +%s.%N)
  $LUAHIER dispatch $RULES --jobs 1 < "$WORK/half1.jsonl" > "$WORK/out1.jsonl" 2>/dev/null &
  $LUAHIER dispatch $RULES --jobs 1 < "$WORK/half2.jsonl" > "$WORK/out2.jsonl" 2>/dev/null || true
  wait || true
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.6f", b - a }'
}

# Seconds for one run of "$@" with stdin from the input and stdout to a file.
timed() {
  local start end
  start=$(date +%s.%N)
  "$@" < "$WORK/in.jsonl" > "$WORK/out.jsonl" 2>/dev/null || true
  end=$(date +%s.%N)
  local got
  got=$(wc -l < "$WORK/out.jsonl")
  [ "$got" -eq "$LINES" ] || { echo "expected $LINES outcome lines, got $got from: $*" >&2; exit 1; }
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.6f", b - a }'
}
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a < b ? a : b) }'; }
rate() { awk -v n="$LINES" -v t="$1" 'BEGIN { printf "%.0f", n / t }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# Instructions for one run over the first 20,000 lines (callgrind): steadier than wall time.
instructions() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" < "$WORK/in20k.jsonl" 2>&1 >/dev/null \
    | awk '/Collected/ { gsub(",", "", $4); print $4 }'
}

echo "lines: $LINES, rounds: $ROUNDS (best of each), $(nproc) cores"
for shape in $SHAPES; do
  lua5.4 Benchmarks/dispatch/make-input.lua "$LINES" "$shape" > "$WORK/in.jsonl"
  HALF=$((LINES / 2))
  head -n "$HALF" "$WORK/in.jsonl" > "$WORK/half1.jsonl"
  tail -n +"$((HALF + 1))" "$WORK/in.jsonl" > "$WORK/half2.jsonl"
  $LUAHIER dispatch $RULES < "$WORK/in.jsonl" > "$WORK/engine.jsonl" 2>/dev/null
  lua5.4 Benchmarks/dispatch/peer.lua < "$WORK/in.jsonl" > "$WORK/peer.jsonl"
  routed=$(lua5.4 Benchmarks/dispatch/same-routing.lua "$WORK/engine.jsonl" "$WORK/peer.jsonl")

  best_peer=999999; best_one=999999; best_two=999999; best_halves=999999
  for round in $(seq "$ROUNDS"); do
    best_peer=$(min "$(timed lua5.4 Benchmarks/dispatch/peer.lua)" "$best_peer")
    best_one=$(min "$(timed $LUAHIER dispatch $RULES --jobs 1)" "$best_one")
    best_two=$(min "$(timed $LUAHIER dispatch $RULES --jobs 2)" "$best_two")
    best_halves=$(min "$(halves)" "$best_halves")
    echo "$shape: round $round done" >&2
  done

  echo
  echo "shape: $shape ($routed by the engine and the peer)"
  printf "  %-34s %10s events/s\n" "plain Lua + lua-cjson (peer.lua)" "$(rate "$best_peer")"
  printf "  %-34s %10s events/s\n" "luahier dispatch --jobs 1" "$(rate "$best_one")"
  printf "  %-34s %10s events/s\n" "luahier dispatch --jobs 2" "$(rate "$best_two")"
  echo "  engine (1 job) / peer:  $(ratio "$best_peer" "$best_one")x   (target >= 2x)"
  echo "  jobs 2 / jobs 1:        $(ratio "$best_one" "$best_two")x"
  echo "  two processes on halves / jobs 1: $(ratio "$best_one" "$best_halves")x   (this machine's ceiling for two workers)"
  if command -v valgrind >/dev/null; then
    head -20000 "$WORK/in.jsonl" > "$WORK/in20k.jsonl"
    lines=$(wc -l < "$WORK/in20k.jsonl")
    peer_i=$(instructions lua5.4 Benchmarks/dispatch/peer.lua)
    one_i=$(instructions "$WORK/luahier" dispatch $RULES --jobs 1)
    echo "  instructions per line (callgrind, $lines lines): peer $((peer_i / lines)), luahier $((one_i / lines))  ($(ratio "$one_i" "$peer_i")x)"
  fi
done
