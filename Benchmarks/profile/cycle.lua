-- Dispatches cycling over N leaves of a depth-10 chain, to see what the limit on kept plans
-- costs (docs/performance.md): `luahier run Benchmarks/profile/cycle.lua -- N`.
local n = tonumber(arg[1] or "1500")
local parent = hier.root
for depth = 1, 9 do
    parent = parent:child("d" .. depth)
    parent:receiveEvent(function() return "notHandled" end)
end
local leaves = {}
for i = 1, n do
    leaves[i] = parent:child("n" .. i)
    leaves[i]:receiveEvent(function() return "notHandled" end)
end
local event = {type = "Tap"}
local rounds = math.max(1, math.floor(300000 / n))
local started = os.clock()
for _ = 1, rounds do
    for i = 1, n do leaves[i]:triggerEvent(event) end
end
print(n, string.format("%.0f ns per dispatch", (os.clock() - started) / (rounds * n) * 1e9))
