-- Dispatches for a profiler: `luahier run Benchmarks/profile/dispatch.lua -- DEPTH COUNT [trace|off] [ENDING]`.
-- One receiveEvent per node returning "notHandled", as in luahier-bench. ENDING: `end` (the
-- default: the event passes every responder), `receive` (a last receiveEvent at the leaf
-- handles it: the run's own end) or `handler` (a handleEvent at the root handles it).
local depth, count, traced = tonumber(arg[1] or "10"), tonumber(arg[2] or "20000"), arg[3] == "trace"
local ending = arg[4] or "end"
assert(ending == "end" or ending == "receive" or ending == "handler", "ENDING: end, receive or handler")
local node = hier.root
if ending == "handler" then node:handleEvent(function() end) end
for level = 1, depth do
    node = node:child("n" .. level)
    node:receiveEvent(function(e) return "notHandled" end)
end
if ending == "receive" then node:receiveEvent(function() return "handled" end) end
hier.tracing = traced
local leaf, event = node, {type = "Tap"}
for i = 1, count do leaf:triggerEvent(event) end
