-- Rules for `luahier dispatch`: alerts from services in an organisation, routed by the
-- responder chain. Each input line is an alert (an event) or a failed probe (an error)
-- at a service's node; each output line says who dealt with it and how.
--
--   /org                           pages the on-call engineer for critical alerts
--   /org/platform, /org/payments   teams: file tickets for warnings, drop info alerts
--   /org/<team>/<service>          services: tag alerts; silence them during maintenance
--
-- Run: luahier dispatch scripts/alerts.lua scripts/alerts.jsonl
--
-- The rules keep no state between events, so the output is the same for every --jobs.

local org = hier.root:child("org")

local teams = {
  platform = { services = { "api", "db" }, oncall = "dana" },
  payments = { services = { "checkout", "ledger" }, oncall = "kim" },
}
local inMaintenance = { ["/org/payments/ledger"] = true }
local rank = { info = 1, warning = 2, critical = 3 }

for teamName, team in pairs(teams) do
  local teamNode = org:child(teamName)

  for _, serviceName in ipairs(team.services) do
    local service = teamNode:child(serviceName)
    -- 1. During maintenance the service's alerts stop here.
    service:receiveEvent("Alert", function(alert)
      if inMaintenance[service.path] then return "handled" end
      return "notHandled"
    end)
    -- 2. Tag the alert with where it came from (the same table goes on up).
    service:transformEvent("Alert", function(alert)
      alert.service = serviceName
      alert.team = teamName
      alert.severity = alert.severity or "warning"
      return alert
    end)
  end

  -- A probe that timed out three times is critical; fewer times, a warning.
  teamNode:catchError("Timeout", function(err)
    return { type = "Alert", team = teamName, service = err.service or "?",
             severity = (err.attempts or 1) >= 3 and "critical" or "warning",
             message = "probe timed out: " .. err.message }
  end)
  -- Info alerts are dropped; warnings become tickets; critical ones go up.
  teamNode:receiveEvent("Alert", function(alert)
    local level = rank[alert.severity]
    if level == nil then
      error({ type = "UnknownSeverity", message = "severity " .. tostring(alert.severity) })
    end
    if level == 1 then return "handled" end
    if level == 2 then
      return { type = "Ticket", queue = teamName, title = alert.message:upper() }
    end
    return "notHandled"
  end)
  teamNode:handleEvent("Ticket", function(ticket) end)
end

-- Critical alerts page the team's on-call engineer.
org:receiveEvent("Alert", function(alert)
  if alert.severity ~= "critical" then return "notHandled" end
  return { type = "Page", to = teams[alert.team].oncall, message = alert.message }
end)
org:handleEvent("Page", function(page) end)
