#!/usr/bin/env bash
# luahier serve under load from wrk on loopback, at 1 and 2 workers, each beside the floor
# server (Benchmarks/floor-server: Hummingbird alone on the same route, reading the body and
# answering a fixed outcome), in alternate rounds; then luahier dispatch's throughput on the
# same rules and requests (scripts/alerts.lua, the requests of scripts/alerts.jsonl in turn),
# in one run.
#
#   Benchmarks/serve/run.sh [SECONDS] [CONNECTIONS] [ROUNDS]   (defaults: 10 s, 16 connections, 1)
#
# SERVE_FLAGS: more flags for `luahier serve` (`--log-level notice`); LUAHIER, FLOOR: other
# binaries than the release builds. Installs wrk if missing (Debian), builds both in release
# mode. wrk runs 1 thread (the machine has 2 cores: the servers get the rest). Bounded: each
# wrk run lasts SECONDS; everything listens on 127.0.0.1 and is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_PER_RUN=${1:-10}
CONNECTIONS=${2:-16}
ROUNDS=${3:-1}
command -v wrk >/dev/null || { SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"; $SUDO apt-get install -y -qq wrk >/dev/null; }
if [ -z "${LUAHIER:-}" ] || [ -z "${FLOOR:-}" ]; then
  swift build -c release --traits Server --product luahier >/dev/null
  swift build -c release --traits Server --product floor-server >/dev/null
fi
LUAHIER=${LUAHIER:-.build/release/luahier}
FLOOR=${FLOOR:-.build/release/floor-server}
WORK=$(mktemp -d)
SERVER=""
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"' EXIT

# One wrk run against a fresh server: $1 label, $2 binary, $3 workers, $4 more flags. Prints
# wrk's figures, and the requests/s alone last (for the ratio).
measure() {
  local label=$1 bin=$2 workers=$3 flags=$4
  # shellcheck disable=SC2086
  "$bin" serve scripts/alerts.lua --port 0 --workers "$workers" $flags 2> "$WORK/serve.err" &
  SERVER=$!
  for _ in $(seq 100); do grep -q 'on http://' "$WORK/serve.err" && break; sleep 0.05; done
  local url
  url=$(grep -o 'http://[0-9.:]*' "$WORK/serve.err" | head -1)
  wrk -t1 -c"$CONNECTIONS" -d"${SECONDS_PER_RUN}s" --latency -s Benchmarks/serve/post.lua "$url" > "$WORK/wrk.out"
  kill -TERM "$SERVER"; wait "$SERVER" || true; SERVER=""
  echo "== $label ($CONNECTIONS connections, ${SECONDS_PER_RUN}s)" >&2
  grep -E 'Requests/sec|Latency  |50%|90%|99%|requests in|Non-2xx|Socket errors' "$WORK/wrk.out" >&2
  awk '/Requests\/sec/ { print $2 }' "$WORK/wrk.out"
}

for round in $(seq "$ROUNDS"); do
  for workers in 1 2; do
    floor=$(measure "round $round: floor-server" "$FLOOR" "$workers" "")
    serve=$(measure "round $round: luahier serve --workers $workers ${SERVE_FLAGS:-}" "$LUAHIER" "$workers" "${SERVE_FLAGS:-}")
    awk -v s="$serve" -v f="$floor" -v w="$workers" -v r="$round" \
      'BEGIN { printf "== round %d, --workers %d: serve %.0f, floor %.0f requests/s: %.3fx the floor\n", r, w, s, f, s / f }'
  done
done

# dispatch on the same requests: as many lines as 2 workers answered, in turn (DISPATCH=0: not).
[ "${DISPATCH:-1}" = 1 ] || exit 0
LINES=200000
grep -v '^\s*$' scripts/alerts.jsonl > "$WORK/one.jsonl"
: > "$WORK/in.jsonl"
while [ "$(wc -l < "$WORK/in.jsonl")" -lt "$LINES" ]; do cat "$WORK/one.jsonl" >> "$WORK/in.jsonl"; done
for jobs in 1 2; do
  start=$(date +%s.%N)
  $LUAHIER dispatch scripts/alerts.lua --jobs "$jobs" < "$WORK/in.jsonl" > /dev/null 2>&1 || true
  end=$(date +%s.%N)
  lines=$(wc -l < "$WORK/in.jsonl")
  awk -v n="$lines" -v a="$start" -v b="$end" -v j="$jobs" 'BEGIN { printf "== luahier dispatch --jobs %d: %d lines in %.2f s, %.0f lines/s\n", j, n, b - a, n / (b - a) }'
done
