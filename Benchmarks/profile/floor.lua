-- The spec floor of luahier-bench (specFloor) for a profiler, to set beside dispatch.lua:
-- `luahier run Benchmarks/profile/floor.lua -- DEPTH COUNT [conforming]`. A method call, one Lua
-- call per responder, and the outcome table with its three required fields, in plain Lua.
-- `conforming` adds what contract §5 asks of every dispatch beyond that (luahier-bench's
-- conformingFloor): the responders called under a protected call, as a responder's error must
-- not end its caller, and the outcome's fourth field, `at`, with its metatable.
local depth, count, conforming = tonumber(arg[1] or "10"), tonumber(arg[2] or "20000"), arg[3] == "conforming"
local responders = {}
for level = 1, depth do responders[level] = function(e) return "notHandled" end end
local methods = {}
local node = setmetatable({}, {__index = methods})
if conforming then
    local outcomeMeta = {}
    local function walk(event)
        for i = 1, #responders do
            if responders[i](event) ~= "notHandled" then break end
        end
    end
    function methods.triggerEvent(self, event)
        pcall(walk, event)
        return setmetatable({status = "unhandled", kind = "event", value = event, at = self}, outcomeMeta)
    end
else
    function methods.triggerEvent(self, event)
        for i = 1, #responders do
            if responders[i](event) ~= "notHandled" then break end
        end
        return {status = "unhandled", kind = "event", value = event}
    end
end
local event = {type = "Tap"}
for i = 1, count do node:triggerEvent(event) end
