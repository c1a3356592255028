-- Tests for scripts/alerts.lua: luahier test scripts (add --coverage to see what they reach).
rules "alerts.lua"

local alert = function(fields)
  fields.type = "Alert"
  fields.message = fields.message or "disk almost full"
  return fields
end

test("a warning from a service becomes a ticket for its team", function()
  local outcome = trigger("/org/platform/api", alert{ severity = "warning", message = "p99 latency 800 ms" })
  expect(outcome):handled():by("/org/platform"):kind("event"):type("Ticket")
  expect(outcome):value{ queue = "platform", title = "P99 LATENCY 800 MS" }
  expect(outcome):responder("alerts.lua:59")
end)

test("a critical alert pages the team's on-call at /org", function()
  local outcome = trigger("/org/payments/checkout", alert{ severity = "critical", message = "checkout down" })
  expect(outcome):handled():by("/org"):type("Page")
  expect(outcome):value{ to = "lee", message = "checkout down" }
end)

test("info alerts are dropped by the team", function()
  expect(trigger("/org/platform/db", alert{ severity = "info" })):handled():by("/org/platform"):type("Alert")
end)

test("a service in maintenance silences its alerts", function()
  local outcome = trigger("/org/payments/ledger", alert{ severity = "critical" })
  expect(outcome):handled():by("/org/payments/ledger"):responder("alerts.lua:28")
  expect.nothingPresented()
end)

test("a probe that timed out three times is caught as a critical alert", function()
  local outcome = report("/org/platform/db", { type = "Timeout", message = "no answer", attempts = 3, service = "db" })
  expect(outcome):handled():kind("event"):type("Page"):value{ to = "dana" }
end)

test("an unknown severity is an error that reaches the presenter", function()
  local outcome = trigger("/org/platform/api", alert{ severity = "huge" })
  expect(outcome):unhandled():kind("error"):type("UnknownSeverity")
  expect.presented("UnknownSeverity", 1)
end)

test("an error nobody catches reaches the presenter", function()
  expect(report("/org/payments", { type = "DiskFull", message = "no space" })):unhandled():type("DiskFull")
  expect.presented("DiskFull")
end)
