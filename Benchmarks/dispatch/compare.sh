#!/usr/bin/env bash
# Two luahier binaries side by side against the peer (plain Lua + lua-cjson), in one run:
# wall time of `dispatch --jobs 1` on each shape of make-input.lua (best of ROUNDS, the three
# in turn each round so load hits them alike), and instructions per line (callgrind, 20,000
# lines) in total and on the busiest thread (the state's: the pipeline's serial stage).
#
#   Benchmarks/dispatch/compare.sh OLD_BINARY NEW_BINARY [LINES] [ROUNDS] [SHAPES]
#       defaults: 200000 lines, 5 rounds, "alerts deep"
set -euo pipefail
cd "$(dirname "$0")/../.."
OLD=$1 NEW=$2
LINES=${3:-200000}
ROUNDS=${4:-5}
SHAPES=${5:-alerts deep}
RULES=scripts/alerts.lua
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# valgrind cannot read the C targets' debug information: stripped copies.
strip --strip-debug -o "$WORK/old" "$OLD"
strip --strip-debug -o "$WORK/new" "$NEW"

timed() {
  local start end
  start=$(date +%s.%N)
  "$@" < "$WORK/in.jsonl" > "$WORK/out.jsonl" 2>/dev/null || true
  end=$(date +%s.%N)
  [ "$(wc -l < "$WORK/out.jsonl")" -eq "$LINES" ] || { echo "short output from: $*" >&2; exit 1; }
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.4f", b - a }'
}
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a < b ? a : b) }'; }

# Instructions per line for 20,000 lines: "TOTAL BUSIEST" (threads counted apart).
per_line() {
  rm -f "$WORK"/cg.*
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$WORK/cg" \
    "$1" dispatch $RULES --jobs 1 < "$WORK/in20k.jsonl" > /dev/null 2>&1
  local lines
  lines=$(wc -l < "$WORK/in20k.jsonl")
  grep -h '^summary:' "$WORK"/cg-* | awk -v n="$lines" \
    '{ t += $2; if ($2 > m) m = $2 } END { printf "%d %d", t / n, m / n }'
}

echo "lines: $LINES, rounds: $ROUNDS (best of each), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
for shape in $SHAPES; do
  lua5.4 Benchmarks/dispatch/make-input.lua "$LINES" "$shape" > "$WORK/in.jsonl"
  head -20000 "$WORK/in.jsonl" > "$WORK/in20k.jsonl"
  peer=999; old=999; new=999
  for round in $(seq "$ROUNDS"); do
    peer=$(min "$(timed lua5.4 Benchmarks/dispatch/peer.lua)" "$peer")
    old=$(min "$(timed "$OLD" dispatch $RULES --jobs 1)" "$old")
    new=$(min "$(timed "$NEW" dispatch $RULES --jobs 1)" "$new")
  done
  read -r old_total old_state <<< "$(per_line "$WORK/old")"
  read -r new_total new_state <<< "$(per_line "$WORK/new")"
  echo "shape: $shape"
  awk -v p="$peer" -v o="$old" -v n="$new" 'BEGIN {
    printf "  peer %.3f s; old %.3f s (%.2fx the peer); new %.3f s (%.2fx the peer)\n", p, o, p / o, n, p / n }'
  echo "  instructions a line: old $old_total in all, $old_state on the state's thread; new $new_total, $new_state"
done
