#!/usr/bin/env bash
# Instructions per request of `luahier serve` (callgrind, every thread of the process),
# for one or two binaries side by side: the same client (Benchmarks/serve/client.py, one
# keep-alive connection, the requests of scripts/alerts.jsonl in turn) sends SMALL and then
# LARGE requests to a fresh server each time, and the difference is divided by LARGE -
# SMALL, so start-up and shutdown fall out. Instructions, not seconds: the same on a loaded
# machine. Each binary runs once per log setting given in its spec:
#   Benchmarks/serve/instructions.sh 'NEW:--log-level info' 'NEW:--log-level notice' 'OLD:'
# (a spec is BINARY:FLAGS; the first is the reference of the ratios). Strip nothing: the
# script strips copies itself (valgrind 3.19 cannot read the C targets' DWARF).
# The floor server (Benchmarks/floor-server: Hummingbird alone on the same route) takes
# serve's command line, so it is measured the same way, as the reference:
#   swift build -c release --traits Server --product floor-server
#   Benchmarks/serve/instructions.sh .build/release/floor-server: .build/release/luahier:
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind >/dev/null; }
SMALL=${SMALL:-200}
LARGE=${LARGE:-2200}
work=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill -9 "$server" 2>/dev/null; rm -rf "$work"' EXIT

# Instructions of one server's whole life, answering $3 requests; $1 binary, $2 flags.
count() {
  local bin=$1 flags=$2 requests=$3
  : > "$work/err"
  # shellcheck disable=SC2086
  valgrind --tool=callgrind --callgrind-out-file=/dev/null --log-file="$work/vg" \
    "$bin" serve scripts/alerts.lua --port 0 $flags 2> "$work/err" &
  server=$!
  until grep -qo 'http://127.0.0.1:[0-9]*' "$work/err"; do
    kill -0 "$server" 2>/dev/null || { cat "$work/err" >&2; exit 1; }
    sleep 0.2
  done
  local port
  port=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/err" | head -1 | sed 's/.*://')
  python3 Benchmarks/serve/client.py "$port" "$requests"
  kill -TERM "$server"
  wait "$server" || true
  server=""
  sed -n 's/.*refs: *//p' "$work/vg" | tr -d ,
}

index=0
printf '%-44s %14s %7s\n' "binary and flags" "per request" ratio
reference=""
for spec in "$@"; do
  index=$((index + 1))
  bin=${spec%%:*}
  flags=${spec#*:}
  strip --strip-debug -o "$work/bin$index" "$bin"
  small=$(count "$work/bin$index" "$flags" "$SMALL")
  large=$(count "$work/bin$index" "$flags" "$LARGE")
  per=$(( (large - small) / (LARGE - SMALL) ))
  [ -z "$reference" ] && reference=$per
  printf '%-44s %14s %7s\n' "$(basename "$(dirname "$(dirname "$bin")")")/${bin##*/} ${flags:-(defaults)}" "$per" \
    "$(awk -v x="$per" -v y="$reference" 'BEGIN { printf "%.3f", x / y }')"
done
