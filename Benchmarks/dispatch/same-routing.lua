-- Checks that two outcome streams routed every line alike: the same status, kind, node
-- (`by`) and value type, line by line. The peer's answers are not byte for byte the
-- engine's (its key order, its `responder` names), but the routing must be the same, or the
-- two did not do the same work.
--
--   lua5.4 Benchmarks/dispatch/same-routing.lua ENGINE.jsonl PEER.jsonl
local cjson = require("cjson")

local function route(line)
  local o = cjson.decode(line)
  local value = type(o.value) == "table" and o.value.type or tostring(o.value)
  return string.format("%s %s %s %s", o.status, tostring(o.kind), tostring(o.by), value)
end

local engine, peer = io.open(arg[1]), io.open(arg[2])
local number, differing = 0, 0
for line in engine:lines() do
  number = number + 1
  local other = peer:read("l")
  if other == nil then
    io.stderr:write(arg[2], " ends at line ", number - 1, "\n")
    os.exit(1)
  end
  local a, b = route(line), route(other)
  if a ~= b then
    differing = differing + 1
    if differing <= 3 then io.stderr:write("line ", number, ": ", a, " | ", b, "\n") end
  end
end
if peer:read("l") ~= nil then
  io.stderr:write(arg[2], " has more lines than ", arg[1], "\n")
  os.exit(1)
end
if differing > 0 then
  io.stderr:write(differing, " of ", number, " lines routed differently\n")
  os.exit(1)
end
print(number .. " lines routed alike")
