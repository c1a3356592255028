#!/usr/bin/env bash
# The worked example of docs/shadow.md: what would a rules change do to real traffic?
#
#   1. the change: on scripts/alerts.lua, a health probe that timed out twice is critical
#      (it was three times);
#   2. yesterday's log: 1,000 requests answered by `luahier dispatch --decision-log`;
#   3. `luahier replay` of that log against the change: the requests it would change;
#   4. `luahier serve --shadow`: the change as a candidate beside the live rules, under
#      2,000 generated requests, and the counts of where the two disagreed.
#
# Run from anywhere: scripts/review-a-change.sh. LUAHIER names the binary (default: luahier
# on PATH); step 4 needs one built with the Server trait, and curl and python3.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
luahier=$(command -v "${LUAHIER:-luahier}")
work=$(mktemp -d)
server=
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
# Paths as a user in the project types them: records and reports name scripts/alerts.lua.
cd "$root"

echo "== 1. the change"
sed 's/(err.attempts or 1) >= 3 and "critical"/(err.attempts or 1) >= 2 and "critical"/' scripts/alerts.lua >"$work/alerts-next.lua"
diff -u --label scripts/alerts.lua --label alerts-next.lua scripts/alerts.lua "$work/alerts-next.lua" || true

echo
echo "== 2. yesterday's log"
"$luahier" run scripts/traffic.lua 1000 3 >"$work/yesterday.jsonl"
"$luahier" dispatch scripts/alerts.lua "$work/yesterday.jsonl" --decision-log "$work/yesterday.ndjson" >/dev/null 2>"$work/dispatch.err" \
    || { cat "$work/dispatch.err" >&2; exit 1; }
echo "$(wc -l <"$work/yesterday.ndjson") decision records"

echo
echo "== 3. replay: what the change would have done yesterday"
# The change runs under the live rules' name, so responders are named alike; exit 1: changed.
(cd "$work" && "$luahier" replay alerts-next.lua yesterday.ndjson --rules-name scripts/alerts.lua) && status=0 || status=$?
echo "(replay exited $status)"

echo
echo "== 4. shadow: the change beside the live rules, under generated traffic"
"$luahier" serve scripts/alerts.lua --port 0 --shadow "$work/alerts-next.lua" --shadow-sample 1 \
    --log-level notice 2>"$work/serve.log" &
server=$!
address=
# Up to 10 minutes: a busy machine may be slow to start it.
for _ in $(seq 12000); do
    address=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/serve.log" | head -n 1 || true)
    [ -n "$address" ] && break
    kill -0 "$server" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
    sleep 0.05
done
[ -n "$address" ] || { echo "serve did not start" >&2; exit 1; }
"$luahier" run scripts/traffic.lua 2000 4 | split -l 200 - "$work/batch-"
batches=0
for batch in "$work"/batch-*; do
    curl -sS --fail -o /dev/null -H 'Content-Type: application/x-ndjson' --data-binary "@$batch" "$address/v1/dispatch"
    batches=$((batches + 1))
done
# The candidate compares each batch after its answers went out: wait until it has them all
# (up to 10 minutes: it runs at the lowest CPU priority, so a busy machine holds it back).
for _ in $(seq 12000); do
    report=$(curl -sS "$address/v1/shadow")
    python3 -c 'import json,sys; r=json.loads(sys.argv[1])["requests"]; sys.exit(0 if r["compared"] + r["skipped"] == int(sys.argv[2]) else 1)' \
        "$report" "$batches" && break
    sleep 0.05
done
python3 - "$report" <<'PY'
import json, sys
report = json.loads(sys.argv[1])
lines, requests = report["lines"], report["requests"]
print(f"{requests['compared']} batches compared ({requests['skipped']} skipped); "
      f"{lines['compared']} request lines: {lines['same']} same, {lines['different']} different")
fields = ["status", "kind", "type", "by", "responder", "value"]
print("different by field: " + ", ".join(f"{field} {report['differences'][field]}" for field in fields if report["differences"][field]))
PY
