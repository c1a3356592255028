-- The peer the engine is measured against: what a Lua user writes without LuaHierarchy.
-- The same org tree and the same rules as scripts/alerts.lua, a plain table tree, a
-- while-loop up the parents, lua-cjson to read requests and write outcomes.
--
-- Run: lua5.4 Benchmarks/dispatch/peer.lua < requests.jsonl > outcomes.jsonl
local cjson = require("cjson")

local function node(name, parent)
  local n = { name = name, parent = parent, responders = {} }
  n.path = parent and ((parent.path == "/" and "" or parent.path) .. "/" .. name) or "/"
  return n
end
local root = node("root")
local byPath = { ["/"] = root }
local function child(parent, name)
  local n = node(name, parent)
  byPath[n.path] = n
  return n
end
-- kind: "receive" (verdict or replacement), "transform" (replacement), "handle", "catch".
local function on(n, kind, domain, filter, fn, where)
  n.responders[#n.responders + 1] = { kind = kind, domain = domain, filter = filter, fn = fn, where = where }
end

local org = child(root, "org")
local teams = {
  platform = { services = { "api", "db" }, oncall = "dana" },
  payments = { services = { "checkout", "ledger" }, oncall = "lee" },
}
local inMaintenance = { ["/org/payments/ledger"] = true }
local rank = { info = 1, warning = 2, critical = 3 }

for teamName, team in pairs(teams) do
  local teamNode = child(org, teamName)
  for _, serviceName in ipairs(team.services) do
    local service = child(teamNode, serviceName)
    on(service, "receive", "event", "Alert", function(alert)
      if inMaintenance[service.path] then return "handled" end
      return "notHandled"
    end, "peer.lua:41")
    on(service, "transform", "event", "Alert", function(alert)
      alert.service = serviceName
      alert.team = teamName
      alert.severity = alert.severity or "warning"
      return alert
    end, "peer.lua:45")
  end
  on(teamNode, "catch", "error", "Timeout", function(err)
    return { type = "Alert", team = teamName, service = err.service or "?",
             severity = (err.attempts or 1) >= 3 and "critical" or "warning",
             message = "probe timed out: " .. err.message }
  end, "peer.lua:52")
  on(teamNode, "receive", "event", "Alert", function(alert)
    local level = rank[alert.severity]
    if level == nil then
      error({ type = "UnknownSeverity", message = "severity " .. tostring(alert.severity) })
    end
    if level == 1 then return "handled" end
    if level == 2 then
      return { type = "Ticket", queue = teamName, title = alert.message:upper() }
    end
    return "notHandled"
  end, "peer.lua:57")
  on(teamNode, "handle", "event", "Ticket", function(ticket) end, "peer.lua:68")
end
on(org, "receive", "event", "Alert", function(alert)
  if alert.severity ~= "critical" then return "notHandled" end
  return { type = "Page", to = teams[alert.team].oncall, message = alert.message }
end, "peer.lua:71")
on(org, "handle", "event", "Page", function(page) end, "peer.lua:75")

-- Bubbles value (of domain) from n up to the root; responders in order, then the parent's.
local function dispatch(n, domain, value)
  while n do
    local list = n.responders
    for i = 1, #list do
      local r = list[i]
      if r.domain == domain and r.filter == value.type then
        local ok, result = pcall(r.fn, value)
        if not ok then
          if type(result) ~= "table" then result = { type = "LuaError", message = tostring(result) } end
          result.cause = domain == "error" and value or nil
          domain, value = "error", result
        elseif r.kind == "handle" or result == "handled" then
          return { status = "handled", kind = domain, value = value, by = n.path, responder = r.where }
        elseif r.kind == "catch" then
          domain, value = "event", result
        elseif result ~= "notHandled" then
          value = result
        end
      end
    end
    n = n.parent
  end
  return { status = "unhandled", kind = domain, value = value }
end

local lineNumber = 0
for line in io.lines() do
  lineNumber = lineNumber + 1
  local ok, request = pcall(cjson.decode, line)
  local outcome
  if not ok or type(request) ~= "table" or not byPath[request.at] then
    outcome = { status = "invalid", error = { type = "InvalidRequest", message = tostring(request) } }
  else
    local domain = request.event and "event" or "error"
    outcome = dispatch(byPath[request.at], domain, request.event or request.error)
  end
  outcome.line = lineNumber
  outcome.id = request and request.id
  io.write(cjson.encode(outcome), "\n")
end
