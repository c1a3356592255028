-- A support organisation as a responder chain: a ticket that a team cannot solve is
-- escalated to its department, then to the company. Each level that gives up wraps the
-- error in its own, so the final error carries the whole chain of causes.
--
--   /acme                      the company: handles anything that gets this far
--   /acme/platform             a department: escalates outages, absorbs the rest
--   /acme/platform/database    a team: fixes what it can, escalates the rest
--
-- Run: luahier run scripts/escalation.lua

local company = hier.root:child("acme")
local platform = company:child("platform")
local database = platform:child("database")

-- The team solves small tickets itself.
database:receiveError("Ticket", function(ticket)
  if ticket.severity <= 2 then
    print(("database team: fixed %q"):format(ticket.message))
    return "handled"
  end
  return "notHandled"
end)

-- ...and escalates the rest: a transform replaces the error, keeping the original as `cause`.
database:transformError("Ticket", function(ticket)
  return { type = "Escalation", message = "database team needs help: " .. ticket.message,
           severity = ticket.severity, level = "team" }
end)

-- The department escalates outages (severity 5) and handles other escalations.
platform:transformError("Escalation", function(escalation)
  if escalation.severity >= 5 then
    return { type = "Incident", message = "platform outage", severity = escalation.severity }
  end
  return escalation            -- returning the same error changes nothing
end)
platform:receiveError("Escalation", function(escalation)
  print("platform department: took over " .. escalation.message)
  return "handled"
end)

-- The company runs incidents, and prints the chain of causes it was handed.
company:handleError("Incident", function(incident)
  local chain, err = {}, incident
  while err do
    chain[#chain + 1] = ("%s(%s)"):format(err.type, err.where)
    err = err.cause
  end
  print("company: incident! chain of causes: " .. table.concat(chain, " <- "))
end)

for _, ticket in ipairs({
  { type = "Ticket", message = "slow query", severity = 1 },
  { type = "Ticket", message = "replica lag", severity = 3 },
  { type = "Ticket", message = "primary down", severity = 5 },
}) do
  local outcome = database:reportError(ticket)
  print(("  -> %s by %s (%s, responder #%d)"):format(
    outcome.status, outcome.by, outcome.value.type, outcome.responder.index))
end
