#!/usr/bin/env bash
# By hand (a short run in CI): three `luahier serve` replicas behind nginx, pulling signed
# bundles from a static nginx location, under wrk load through the load balancer
# (docs/bundles.md, "A fleet on one machine"). While wrk runs it:
#   1. publishes a new signed bundle, requires its hash on every replica
#      (POST /v1/required-revision) and times until every replica's /readyz is 200;
#   2. publishes an unsigned bundle, and waits until every replica has refused it;
#   3. publishes the good bundle again and restarts one replica from the old bundle, and
#      times until it runs the new one.
# It then checks: no failed request through the load balancer, and every answer stamped with
# the old or the new revision (a Lua script of wrk's reads each one).
#
#   tools/replicas.sh [SECONDS] [LUAHIER]     (defaults: 20 s of load, .build/release/luahier)
#
# Installs nginx and wrk if missing (Debian). Listens on 127.0.0.1:18080 (the balancer),
# 18081-18083 (replicas) and 18090 (bundles); stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_OF_LOAD=${1:-20}
LUAHIER=$(realpath "${2:-.build/release/luahier}")
for tool in nginx wrk; do
  command -v "$tool" >/dev/null || PATH=$PATH:/usr/sbin command -v "$tool" >/dev/null || {
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get install -y -qq "$([ "$tool" = nginx ] && echo nginx-light || echo wrk)" >/dev/null
  }
done
NGINX=$(PATH=$PATH:/usr/sbin command -v nginx)
WORK=$(mktemp -d)
chmod 755 "$WORK"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ -f "$WORK/nginx.pid" ] && kill "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
now() { date +%s.%N; }
# Runs the command until it succeeds, for 60 s at most (then the script fails).
eventually() { for _ in $(seq 1200); do "$@" && return 0; sleep 0.05; done; echo "timed out: $*" >&2; exit 1; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# The rules: version 1 and 2 of scripts/alerts.lua (the change of scripts/review-a-change.sh).
mkdir -p "$WORK/v1" "$WORK/v2" "$WORK/v3" "$WORK/www"
cp scripts/alerts.lua "$WORK/v1/alerts.lua"
sed 's/(err.attempts or 1) >= 3 and "critical"/(err.attempts or 1) >= 2 and "critical"/' scripts/alerts.lua > "$WORK/v2/alerts.lua"
sed 's/(err.attempts or 1) >= 3 and "critical"/(err.attempts or 1) >= 4 and "critical"/' scripts/alerts.lua > "$WORK/v3/alerts.lua"
(cd "$WORK" && "$LUAHIER" bundle keygen rules >/dev/null)
hash_of() { "$LUAHIER" bundle build "$WORK/$1/alerts.lua" -o "$WORK/$1.bundle" | awk '{ print $NF }'; }
OLD=$(hash_of v1); NEW=$(hash_of v2); hash_of v3 >/dev/null
for version in v1 v2; do "$LUAHIER" bundle sign "$WORK/$version.bundle" --key "$WORK/rules.key" >/dev/null; done
publish() { cp "$WORK/$1.bundle" "$WORK/www/.next" && mv "$WORK/www/.next" "$WORK/www/alerts.bundle"; }
publish v1
echo "token-of-the-fleet" > "$WORK/reload.token"

cat > "$WORK/nginx.conf" <<CONF
worker_processes 1;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  upstream replicas {
    server 127.0.0.1:18081 max_fails=0;
    server 127.0.0.1:18082 max_fails=0;
    server 127.0.0.1:18083 max_fails=0;
    keepalive 32;
  }
  server {
    listen 127.0.0.1:18080;
    location / {
      proxy_pass http://replicas;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      # A replica restarting: its requests go to another (POST included).
      proxy_next_upstream error timeout http_502 http_503 non_idempotent;
    }
  }
  server {
    listen 127.0.0.1:18090;
    root $WORK/www;
  }
}
CONF
"$NGINX" -c "$WORK/nginx.conf" -e "$WORK/nginx-error.log"

start_replica() {   # start_replica N BUNDLE
  "$LUAHIER" serve "$WORK/$2" --port "1808$1" --bundle-url http://127.0.0.1:18090/alerts.bundle \
    --bundle-key "$WORK/rules.pub" --bundle-poll 0.5 --reload-token-file "$WORK/reload.token" \
    --shutdown-delay 1 --log-level notice 2>> "$WORK/replica-$1.log" &
  PIDS[$1]=$!
  for _ in $(seq 600); do curl -sf "http://127.0.0.1:1808$1/livez" >/dev/null && return; sleep 0.05; done
  echo "replica $1 did not start" >&2; cat "$WORK/replica-$1.log" >&2; exit 1
}
for n in 1 2 3; do start_replica "$n" v1.bundle; done
refused() { curl -s "http://127.0.0.1:1808$1/metrics" | grep -q 'luahier_bundle_polls_total{result="refused"} [1-9]'; }
runs_new() { [ "$(running_hash "$1")" = "$NEW" ]; }
running_hash() { curl -s "http://127.0.0.1:1808$1/readyz" | python3 -c 'import json,sys; print(json.load(sys.stdin)["revision"]["hash"])'; }
echo "old revision $OLD"
echo "new revision $NEW"

cat > "$WORK/check.lua" <<LUA
-- POSTs the alert requests in turn; counts answers by the revision stamped in them.
local requests = {}
for line in io.lines("scripts/alerts.jsonl") do
  -- Whole event requests at nodes that exist: each answered 200.
  if line:match('"event"') and line:match("}}$") and not line:match("/cache") then requests[#requests + 1] = line end
end
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init()
  old, new, other, next = 0, 0, 0, 0
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end
function request()
  next = next % #requests + 1
  return wrk.format(nil, "/v1/dispatch", nil, requests[next])
end
function response(status, headers, body)
  if body:find('"hash":"${OLD:0:16}"', 1, true) then old = old + 1
  elseif body:find('"hash":"${NEW:0:16}"', 1, true) then new = new + 1
  else other = other + 1 end
end
function done()
  local o, n, x = 0, 0, 0
  for _, thread in ipairs(threads) do
    o, n, x = o + thread:get("old"), n + thread:get("new"), x + thread:get("other")
  end
  io.write(string.format("answers stamped old %d, new %d, neither %d\n", o, n, x))
end
LUA
wrk -t2 -c8 -d"${SECONDS_OF_LOAD}s" -s "$WORK/check.lua" http://127.0.0.1:18080 > "$WORK/wrk.out" 2>&1 &
WRK=$!
sleep 2   # the load under way first: the timeline runs inside it

echo "== 1. publish the new signed bundle; require it on every replica"
start=$(now)
publish v2
for n in 1 2 3; do
  curl -sf -H "Authorization: Bearer token-of-the-fleet" -d "{\"hash\": \"$NEW\"}" "http://127.0.0.1:1808$n/v1/required-revision" >/dev/null
done
for n in 1 2 3; do
  eventually curl -sf -o /dev/null "http://127.0.0.1:1808$n/readyz"
  echo "replica $n ready on the new revision after $(since "$start") s"
done
echo "fleet converged in $(since "$start") s"

echo "== 2. publish an unsigned bundle"
start=$(now)
publish v3
for n in 1 2 3; do
  eventually refused "$n"
  echo "replica $n refused it after $(since "$start") s, runs $(running_hash "$n" | cut -c1-16)"
done

echo "== 3. the good bundle again; restart replica 2 from the old one"
publish v2
start=$(now)
kill -TERM "${PIDS[2]}"; wait "${PIDS[2]}" 2>/dev/null || true
start_replica 2 v1.bundle
eventually runs_new 2
echo "replica 2 restarted and on the new revision after $(since "$start") s"

wait "$WRK" || true
echo "== load through nginx"
grep -E "requests in|Requests/sec|Non-2xx|Socket errors|answers stamped" "$WORK/wrk.out"
failed=$(grep -cE "Non-2xx|Socket errors" "$WORK/wrk.out" || true)
neither=$(sed -n 's/.*neither \([0-9]*\)/\1/p' "$WORK/wrk.out")
if [ "$failed" -eq 0 ] && [ "${neither:-1}" -eq 0 ]; then
  echo "OK: no failed request; every answer from the old or the new revision"
else
  echo "FAILED: see above" >&2; exit 1
fi
