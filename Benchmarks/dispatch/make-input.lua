-- Writes N request lines for scripts/alerts.lua to stdout: a fixed mix of alerts and
-- probe errors over every service (the same mix every time).
local n = tonumber(arg[1]) or 100000
local services = {
  "/org/platform/api", "/org/platform/db", "/org/payments/checkout", "/org/payments/ledger",
}
local severities = { "info", "warning", "critical" }
local out = {}
for i = 1, n do
  local at = services[i % #services + 1]
  local line
  if i % 5 == 0 then
    line = string.format(
      '{"id": %d, "at": "%s", "error": {"type": "Timeout", "message": "GET /health #%d", "service": "%s", "attempts": %d}}',
      i, at, i, at:match("[^/]+$"), i % 4)
  else
    line = string.format(
      '{"id": %d, "at": "%s", "event": {"type": "Alert", "severity": "%s", "message": "check %d failed", "value": %.2f, "tags": ["prod", "eu-west"]}}',
      i, at, severities[i % 3 + 1], i, i / 7)
  end
  out[#out + 1] = line
  if #out == 1000 then io.write(table.concat(out, "\n"), "\n"); out = {} end
end
if #out > 0 then io.write(table.concat(out, "\n"), "\n") end
