#!/usr/bin/env bash
# The complexity audit by whole-process instruction counts (run by hand; docs/limits.md): each
# host entry runs at n and at 8n under callgrind, and the instructions over an n = 0 run are
# compared. Callgrind sees every instruction, so host work that is not charged to the limits
# shows too (a C call in a loop, a Swift loop that polls nothing). Linear grows about 8x; a
# ratio near 64 is quadratic. Needs valgrind (apt-get install valgrind).
#   tools/scaling.sh            # n as below
#   tools/scaling.sh 4          # every n 4 times larger
set -euo pipefail
cd "$(dirname "$0")/.."
factor="${1:-1}"
swift build -c release --product luahier >/dev/null
work=$(mktemp -d)
# valgrind 3.19 cannot read the C targets' DWARF: count a stripped copy.
strip -o "$work/luahier" .build/release/luahier
trap 'rm -rf "$work"' EXIT

# name | n | script (reads N from arg[1])
entries=(
  "triggerEvent from depth N|2000|local node = hier.root for i = 1, N do node = node:child('n') end hier.root:receiveEvent(function() return 'notHandled' end) node:triggerEvent('Ping')"
  "print with N arguments|20000|local t = {} for i = 1, N do t[i] = i end print(table.unpack(t))"
  "hier.node of a path N deep|2000|local node = hier.root for i = 1, N do node = node:child('n') end for i = 1, 10 do assert(hier.node(node.path) == node) end"
  "publish to N subscribers|2000|local p = hier.root:child('p') for i = 1, N do p:child('c' .. i):subscribe('Tick', function() end) end p:publish('Tick', {to = 'all'})"
  "strict safety, one node declaring N types|4000|hier.safety = 'strict' local a = hier.root:child('a') local t = {} for i = 1, N do t[i] = 'E' .. i end if N > 0 then a:triggers(t) end for i = 1, 10 do a:child('b'):triggerEvent('U') end"
  "outcome of N keys|4000|hier.root:receiveEvent(function() local t = {type = 'B'} for i = 1, N do t['k' .. i] = i end return t end) hier.root:triggerEvent('P')"
  "path tracing through N responders|2000|hier.tracing = 'path' local a = hier.root:child('a') for i = 1, N do a:receiveEvent(function() return 'notHandled' end) end local o = a:triggerEvent('P') local n = #o.trace"
)

instructions() {   # script size -> instructions
  printf 'local N = tonumber(arg[1])\n%s\n' "$1" > "$work/entry.lua"
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$work/luahier" run "$work/entry.lua" "$2" 2>&1 >/dev/null \
    | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

printf '%-45s %8s %14s %14s %7s\n' entry n "Ir(n)-Ir(0)" "Ir(8n)-Ir(0)" ratio
for entry in "${entries[@]}"; do
  IFS='|' read -r name n script <<<"$entry"
  n=$((n * factor))
  base=$(instructions "$script" 0)
  small=$(( $(instructions "$script" "$n") - base ))
  large=$(( $(instructions "$script" $((8 * n))) - base ))
  printf '%-45s %8d %14d %14d %7.1f\n' "$name" "$n" "$small" "$large" "$(echo "$large / $small" | bc -l)"
done
