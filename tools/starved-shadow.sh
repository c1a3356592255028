#!/usr/bin/env bash
# A shadow candidate starved of CPU does not end the server (run by hand; ~40 s).
#
#   tools/starved-shadow.sh [LUAHIER]
#
# The live rules keep both CPUs busy (each "Burn" runs to --dispatch-timeout); the candidate
# answers "Burn" with C calls of ~0.1 s (utf8.len over 64 MiB) that no hook can interrupt. Its
# thread runs under SCHED_IDLE and gets almost no CPU, so such a call takes far longer than the
# watchdog's 5 s in wall time. The watchdog used to read that as a state stuck in one C call
# and end the process (an attacker's find, 2026-11-28); it now counts the thread's own CPU time
# while the thread waits for a CPU (WatchdogTests has the rule). Prints "survived" or "ended".
set -euo pipefail
cd "$(dirname "$0")/.."
LUAHIER=${1:-.build/debug/luahier}
WORK=$(mktemp -d)
trap 'kill "${SERVER:-0}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
cat > "$WORK/rules.lua" <<'LUA'
local app = hier.root:child("app")
app:receiveEvent("Burn", function() while true do end end)
LUA
cat > "$WORK/candidate.lua" <<'LUA'
local text = ("a"):rep(64 << 20)
local app = hier.root:child("app")
app:receiveEvent("Burn", function() while true do utf8.len(text) end end)
LUA
"$LUAHIER" serve "$WORK/rules.lua" --shadow "$WORK/candidate.lua" --shadow-sample 1 --port 0 \
    --workers 2 --dispatch-timeout 1 --log-level notice 2> "$WORK/log" &
SERVER=$!
for _ in $(seq 100); do
  PORT=$(grep -o '127.0.0.1:[0-9]*' "$WORK/log" | head -1 | cut -d: -f2 || true)
  [ -n "$PORT" ] && break
  sleep 0.1
done
[ -n "${PORT:-}" ] || { echo "starved-shadow: the server did not start"; cat "$WORK/log"; exit 1; }
END=$((SECONDS + 30))
for _ in 1 2 3 4; do
  (while [ $SECONDS -lt $END ] && kill -0 $SERVER 2>/dev/null; do
     curl -s -m 10 -o /dev/null "localhost:$PORT/v1/dispatch" -d '{"at": "/app", "event": "Burn"}' || true
   done) &
done
wait $(jobs -p | grep -v "^$SERVER$") 2>/dev/null || true
if kill -0 $SERVER 2>/dev/null; then
  echo "starved-shadow: survived 30 s of busy CPUs beside a candidate in long C calls"
else
  echo "starved-shadow: ended"; cat "$WORK/log"; exit 1
fi
