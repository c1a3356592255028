#!/usr/bin/env bash
# luahier replay beside luahier dispatch on the same requests: the log is made from
# Benchmarks/dispatch/make-input.lua's lines and dispatch's own answers
# (tools/make-decision-log.sh), then farm-bench times `replay LOG` against `dispatch INPUT`,
# in turn, pair by pair (the ratio is replay's time over dispatch's), for --jobs 1 and 2.
#
#   Benchmarks/replay/run.sh [LINES] [RUNS] [LUAHIER]    (defaults: 100000 lines, 5 runs,
#                                                        .build/release/luahier)
set -euo pipefail
cd "$(dirname "$0")/../.."
LINES=${1:-100000}
RUNS=${2:-5}
LUAHIER=${3:-.build/release/luahier}
command -v lua5.4 >/dev/null || { apt-get update -qq && apt-get install -y -qq lua5.4 >/dev/null; }
[ -x "$LUAHIER" ] || swift build -c release --traits Server --product luahier >/dev/null
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
lua5.4 Benchmarks/dispatch/make-input.lua "$LINES" > "$WORK/in.jsonl"
tools/make-decision-log.sh scripts/alerts.lua "$WORK/in.jsonl" "$LUAHIER" > "$WORK/log.ndjson"
echo "$LINES requests; log $(wc -c < "$WORK/log.ndjson") bytes, input $(wc -c < "$WORK/in.jsonl") bytes"
# Nothing may change: a replay that reports changes is not measuring the same work.
"$LUAHIER" replay scripts/alerts.lua "$WORK/log.ndjson" --input-name stdin > "$WORK/report.txt" \
  || { head -20 "$WORK/report.txt" >&2; exit 1; }
for jobs in 1 2; do
  echo "--jobs $jobs: replay (A) vs dispatch (B)"
  farm-bench -n "$RUNS" --timeout 600 \
    --vs "sh -c '$LUAHIER dispatch scripts/alerts.lua $WORK/in.jsonl --jobs $jobs > /dev/null 2>&1'" \
    -- sh -c "$LUAHIER replay scripts/alerts.lua $WORK/log.ndjson --input-name stdin --jobs $jobs > /dev/null"
done
