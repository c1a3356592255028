#!/usr/bin/env bash
# luahier serve under load from wrk on loopback, at 1 and 2 workers, beside luahier
# dispatch's throughput on the same rules and requests (scripts/alerts.lua, the requests of
# scripts/alerts.jsonl in turn), in one run.
#
#   Benchmarks/serve/run.sh [SECONDS] [CONNECTIONS]     (defaults: 10 s, 16 connections)
#
# Installs wrk if missing (Debian), builds luahier in release mode. wrk runs 1 thread (the
# machine has 2 cores: the server's workers get the rest). Bounded: each wrk run lasts
# SECONDS; everything listens on 127.0.0.1 and is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_PER_RUN=${1:-10}
CONNECTIONS=${2:-16}
command -v wrk >/dev/null || { SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"; $SUDO apt-get install -y -qq wrk >/dev/null; }
swift build -c release --traits Server --product luahier >/dev/null
LUAHIER=.build/release/luahier
WORK=$(mktemp -d)
SERVER=""
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"' EXIT

for workers in 1 2; do
  $LUAHIER serve scripts/alerts.lua --port 0 --workers "$workers" 2> "$WORK/serve.err" &
  SERVER=$!
  for _ in $(seq 100); do grep -q 'on http://' "$WORK/serve.err" && break; sleep 0.05; done
  URL=$(grep -o 'http://[0-9.:]*' "$WORK/serve.err")
  echo "== luahier serve --workers $workers ($CONNECTIONS connections, ${SECONDS_PER_RUN}s)"
  wrk -t1 -c"$CONNECTIONS" -d"${SECONDS_PER_RUN}s" --latency -s Benchmarks/serve/post.lua "$URL" \
    | grep -E 'Requests/sec|Latency  |50%|75%|90%|99%|requests in|Non-2xx|Socket errors'
  kill -TERM "$SERVER"; wait "$SERVER" || true; SERVER=""
done

# dispatch on the same requests: as many lines as 2 workers answered, in turn.
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
