-- Dispatches for a profiler: `luahier run Benchmarks/profile/dispatch.lua -- DEPTH COUNT [trace]`.
-- One receiveEvent per node returning "notHandled", as in luahier-bench.
local depth, count, traced = tonumber(arg[1] or "10"), tonumber(arg[2] or "20000"), arg[3] == "trace"
local node = hier.root
for level = 1, depth do
    node = node:child("n" .. level)
    node:receiveEvent(function(e) return "notHandled" end)
end
hier.tracing = traced
local leaf, event = node, {type = "Tap"}
for i = 1, count do leaf:triggerEvent(event) end
