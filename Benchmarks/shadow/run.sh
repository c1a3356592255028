#!/usr/bin/env bash
# Live latency with a shadow revision at sample 1.0 (and 0.1) against none: luahier serve
# --workers 1 on scripts/alerts.lua under wrk on loopback, the candidate the change of
# scripts/review-a-change.sh, in alternating rounds of one run.
#
#   Benchmarks/shadow/run.sh [SECONDS] [ROUNDS]     (defaults: 10 s, 3 rounds)
#
# Each round runs both servers at 2 connections (the machine has room to spare) and at 16
# (saturated: wrk's thread and the server's take both cores). Prints wrk's requests/s and
# latency percentiles, and what the candidate compared and skipped (GET /v1/shadow).
# Installs wrk if missing (Debian), builds luahier in release mode.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_PER_RUN=${1:-10}
ROUNDS=${2:-3}
command -v wrk >/dev/null || { SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"; $SUDO apt-get install -y -qq wrk >/dev/null; }
swift build -c release --traits Server --product luahier >/dev/null
LUAHIER=.build/release/luahier
WORK=$(mktemp -d)
SERVER=""
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"' EXIT
sed 's/(err.attempts or 1) >= 3 and "critical"/(err.attempts or 1) >= 2 and "critical"/' scripts/alerts.lua > "$WORK/candidate.lua"

run() {   # run NAME CONNECTIONS [serve flags...]
  local name=$1 connections=$2
  shift 2
  $LUAHIER serve scripts/alerts.lua --port 0 --workers 1 --log-level notice "$@" 2> "$WORK/serve.err" &
  SERVER=$!
  for _ in $(seq 1200); do grep -q 'on http://' "$WORK/serve.err" && break; sleep 0.05; done
  local url
  url=$(grep -o 'http://[0-9.:]*' "$WORK/serve.err") || { echo "serve did not start:" >&2; cat "$WORK/serve.err" >&2; exit 1; }
  echo "== $name, $connections connections, ${SECONDS_PER_RUN}s"
  wrk -t1 -c"$connections" -d"${SECONDS_PER_RUN}s" --latency -s Benchmarks/serve/post.lua "$url" \
    | grep -E 'Requests/sec|50%|90%|99%|Non-2xx|Socket errors'
  if [ "$name" != none ]; then
    curl -s "$url/v1/shadow" | python3 -c 'import json,sys; r=json.load(sys.stdin)["requests"]; print("   candidate: sampled %d, compared %d, skipped %d" % (r["sampled"], r["compared"], r["skipped"]))'
  fi
  kill -TERM "$SERVER"; wait "$SERVER" || true; SERVER=""
}

for round in $(seq "$ROUNDS"); do
  echo "#### round $round"
  for connections in 2 16; do
    run none "$connections"
    run "shadow 1.0" "$connections" --shadow "$WORK/candidate.lua" --shadow-sample 1
    run "shadow 0.1" "$connections" --shadow "$WORK/candidate.lua" --shadow-sample 0.1
  done
done
