-- Loaded as "=[luahier]" and stripped (LuaBridge.swift): Lua-side glue. Method lookup stays
-- out of Swift (a C `__index`, luahier_nodeindex), `print` writes through the host, `hier`
-- settings go through checked accessors.
local nodeMeta, handleMeta, methods, getters, handleMethods, hier, settings, write, makeNodeIndex, changes = ...
local select, tostring, concat, error = select, tostring, table.concat, error
local get, set = settings.get, settings.set

nodeMeta.__index = makeNodeIndex(methods, getters, "path", changes)
nodeMeta.__newindex = function(_, key)
    error("cannot set field '" .. tostring(key) .. "' of a node", 2)
end
nodeMeta.__metatable = "node"

handleMeta.__index = handleMethods
handleMeta.__newindex = function() error("responder handles are read-only", 2) end
handleMeta.__metatable = "responder handle"

-- `hier` is a proxy: its API fields cannot be replaced, and unknown keys are settings.
local api = hier
hier = setmetatable({}, {
    __index = function(_, key)
        local value = api[key]
        if value ~= nil then return value end
        return get(key)
    end,
    __newindex = function(_, key, value)
        local ok, problem = set(key, value)
        if not ok then error(problem, 2) end
    end,
    __metatable = "hier",
})

print = function(...)
    -- One pass over the arguments (select(i, ...) per argument made it quadratic).
    local parts = { ... }
    for i = 1, select("#", ...) do parts[i] = tostring(parts[i]) end
    write(concat(parts, "\t"))
end

_G.hier = hier
if package and package.preload then
    package.preload.hier = function() return hier end
end
