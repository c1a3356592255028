-- The spec floor of luahier-bench (specFloor) for a profiler, to set beside dispatch.lua:
-- `luahier run Benchmarks/profile/floor.lua -- DEPTH COUNT`. A method call, one Lua call per
-- responder, and the outcome table with its three required fields, in plain Lua.
local depth, count = tonumber(arg[1] or "10"), tonumber(arg[2] or "20000")
local responders = {}
for level = 1, depth do responders[level] = function(e) return "notHandled" end end
local methods = {}
local node = setmetatable({}, {__index = methods})
function methods.triggerEvent(self, event)
    for i = 1, #responders do
        if responders[i](event) ~= "notHandled" then break end
    end
    return {status = "unhandled", kind = "event", value = event}
end
local event = {type = "Tap"}
for i = 1, count do node:triggerEvent(event) end
