#!/usr/bin/env bash
# How promptly the limits stop the attacks of the sandbox-and-limits issue, and what they
# peak at: each attack runs through the release binary, and /usr/bin/time reports its wall
# time and peak RSS. Run by hand (docs/limits.md):
#   Benchmarks/limits/run.sh            # builds the release binary first
set -euo pipefail
cd "$(dirname "$0")/../.."
swift build -c release --product luahier >/dev/null
bin=.build/release/luahier
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# name | flags | script
attacks=(
  "loop|--timeout 1|while true do end"
  "loop in coroutine.wrap|--timeout 1|coroutine.wrap(function() while true do end end)()"
  "loop in nested coroutines|--timeout 1|coroutine.resume(coroutine.create(function() coroutine.resume(coroutine.create(function() while true do end end)) end))"
  "pcall in a loop|--timeout 1|while true do pcall(function() while true do end end) end"
  "looping xpcall handler|--timeout 1|xpcall(function() error('x') end, function() while true do end end)"
  "looping table.sort comparator|--timeout 1|table.sort({3, 2, 1}, function(a, b) while true do end end)"
  "looping __close run by coroutine.close|--timeout 1|local co = coroutine.create(function() local x <close> = setmetatable({}, {__close = function() while true do end end}) coroutine.yield() end) coroutine.resume(co) coroutine.close(co)"
  "runaway responder|--dispatch-timeout 1|local n = hier.root:child('n') n:receiveEvent(function() while true do end end) print(n:triggerEvent('E').value.type)"
  "table.sort of 8e6 numbers|--timeout 1 --max-memory 1G|local t = {} for i = 1, 8e6 do t[i] = (i * 7919) % 1000003 end table.sort(t)"
  "hier.node(10 MB path) in a loop|--timeout 1|local p = '/' .. ('x'):rep(1e7) while true do hier.node(p) end"
  "concatenating 50 MB strings|--timeout 1 --max-memory 1G|local s = ('x'):rep(5e7) while true do local t = s .. s end"
  "comparing 100 MB strings (<)|--timeout 1 --max-memory 1G|local a, b = ('x'):rep(1e8), ('x'):rep(1e8) .. '' while true do local _ = a < b end"
  "comparing 100 MB strings (==)|--timeout 1 --max-memory 1G|local a, b = ('x'):rep(1e8), ('x'):rep(1e8) .. '' while true do local _ = a == b end"
  "runaway responder, --dispatch-timeout 1|--dispatch-timeout 1 --dispatch-max-instructions 0|local n = hier.root:child('n') n:receiveEvent(function() local a, b = ('x'):rep(1e8), ('x'):rep(1e8) .. '' while true do local _ = a < b end end) print(n:triggerEvent('E').value.type)"
  "table.insert under a lying __len (2^40)|--timeout 1|local t = setmetatable({}, {__len = function() return 1 << 40 end}) table.insert(t, 1, 'x')"
  "table.concat through a 1,900-deep __index chain|--timeout 1|local base = {} for i = 1, 1e6 do base[i] = 'x' end local t = base for i = 1, 1900 do t = setmetatable({}, {__index = t}) end table.concat(t, ',', 1, 1e6)"
  "a loop under 200,000 frames|--timeout 1|local junk = {} local function f(n) if n == 0 then while true do end end junk[#junk + 1] = {n} return f(n - 1) + 1 end f(200000)"
  "load of source built to parse slowly|--timeout 1|local g, l = {}, {} for i = 1, 30000 do g[i] = 'goto l' .. i l[i] = '::l' .. i .. ':: do end' end local block = 'do ' .. table.concat(g, ' ') .. ' ' .. table.concat(l, ' ') .. ' end ' load(block:rep(40))"
  "rehash of colliding integer keys (one C call)|--timeout 1|local m, t = (1 << 18) - 1, {} for k = 1, (1 << 17) + 1 do t[k * m] = true end"
  "memory bomb|--max-memory 64M|local t = {} for i = 1, 1e9 do t[i] = ('x'):rep(64) .. i end"
  "memory caught by pcall in a loop|--max-memory 64M|while true do pcall(function() local t = {} for i = 1, 1e9 do t[i] = {i} end end) end"
  "10 node names of 100 MB|--max-memory 300M|local s = ('x'):rep(1e8) for i = 1, 10 do hier.root:child(s .. i) end"
  "4M nodes|--max-memory 32M|local n = hier.root for i = 1, 4e6 do n = n:child('n' .. i) end"
  "3M responders|--max-memory 32M|for i = 1, 3e6 do hier.root:receiveEvent(function() return 'notHandled' end) end"
  "full trace of a 5 MB value through 100 replacements|--max-memory 64M|hier.tracing = 'full' local n = hier.root:child('t') for i = 1, 100 do n:receiveEvent(function(e) return {type = 'E', data = ('y'):rep(5e6) .. i} end) end n:triggerEvent('E')"
)

printf '%-52s %-48s %8s %10s  %s\n' attack flags seconds "peak MiB" "ended with"
for attack in "${attacks[@]}"; do
  IFS='|' read -r name flags source <<<"$attack"
  printf '%s\n' "$source" >"$dir/attack.lua"
  # shellcheck disable=SC2086
  /usr/bin/time -f '%e %M' -o "$dir/time" "$bin" run $flags "$dir/attack.lua" >"$dir/out" 2>"$dir/err" || true
  # time writes "Command exited with non-zero status N" first when the command failed.
  read -r seconds kib < <(tail -1 "$dir/time")
  ended=$(grep -o -m1 -E '[A-Za-z]+(LimitExceeded|Error)' "$dir/err" "$dir/out" | head -1 | cut -d: -f2 || true)
  # Stuck inside one C call past the deadline: the watchdog ends the process (status 1).
  if grep -q 'the state cannot be recovered, so the process stops' "$dir/err"; then ended="stuck: process stopped"; fi
  printf '%-52s %-48s %8s %10d  %s\n' "$name" "$flags" "$seconds" $((kib / 1024)) "${ended:-none}"
done
