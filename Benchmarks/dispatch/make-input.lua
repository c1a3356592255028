-- Writes N request lines for scripts/alerts.lua to stdout, of one of two shapes (the same
-- lines every time):
--   alerts  a fixed mix of flat alerts and probe errors over every service: a third of the
--           alerts are info (dropped at the team), a fifth of the lines are probe errors.
--   deep    payloads three levels deep (the source host and its labels, the check and its
--           thresholds, a list of samples), and more of each line's rules hit: most alerts
--           are warnings or critical (a ticket at the team, or a page from the root), and
--           most probes timed out three times or more (a critical alert from the catch).
--
--   lua5.4 Benchmarks/dispatch/make-input.lua N [alerts|deep]
local n = tonumber(arg[1]) or 100000
local shape = arg[2] or "alerts"
local services = {
  "/org/platform/api", "/org/platform/db", "/org/payments/checkout", "/org/payments/ledger",
}

local function flat(i)
  local at = services[i % #services + 1]
  if i % 5 == 0 then
    return string.format(
      '{"id": %d, "at": "%s", "error": {"type": "Timeout", "message": "GET /health #%d", "service": "%s", "attempts": %d}}',
      i, at, i, at:match("[^/]+$"), i % 4)
  end
  local severities = { "info", "warning", "critical" }
  return string.format(
    '{"id": %d, "at": "%s", "event": {"type": "Alert", "severity": "%s", "message": "check %d failed", "value": %.2f, "tags": ["prod", "eu-west"]}}',
    i, at, severities[i % 3 + 1], i, i / 7)
end

local function samples(i)
  local list = {}
  for k = 1, 4 do
    list[k] = string.format('{"t": %d, "v": %.3f, "ok": %s}', 1764000000 + i * 10 + k, (i * k) % 997 / 3, k % 3 == 0 and "false" or "true")
  end
  return "[" .. table.concat(list, ", ") .. "]"
end

local function deep(i)
  local at = services[i % #services + 1]
  local source = string.format(
    '{"host": {"name": "node-%d", "region": "eu-west-%d", "labels": {"tier": "%s", "canary": %s, "rack": "r%02d"}}, "check": {"name": "latency-p99", "window": "5m", "thresholds": [100, 250, 500], "owner": {"team": "sre", "contact": "sre@example.org"}}}',
    i % 97, i % 3 + 1, i % 2 == 0 and "frontend" or "backend", i % 7 == 0 and "true" or "false", i % 40)
  if i % 4 == 0 then
    return string.format(
      '{"id": %d, "at": "%s", "error": {"type": "Timeout", "message": "GET /health #%d", "service": "%s", "attempts": %d, "source": %s, "samples": %s}}',
      i, at, i, at:match("[^/]+$"), 3 + i % 3, source, samples(i))
  end
  local severities = { "warning", "critical", "critical", "warning", "critical", "info" }
  return string.format(
    '{"id": %d, "at": "%s", "event": {"type": "Alert", "severity": "%s", "message": "check %d failed \\u00e9", "value": %.2f, "tags": ["prod", "eu-west", "p%d"], "source": %s, "samples": %s}}',
    i, at, severities[i % #severities + 1], i, i / 7, i % 5, source, samples(i))
end

local make = ({ alerts = flat, deep = deep })[shape]
if not make then
  io.stderr:write("make-input.lua: no shape '", shape, "' (alerts or deep)\n")
  os.exit(2)
end
local out = {}
for i = 1, n do
  out[#out + 1] = make(i)
  if #out == 1000 then io.write(table.concat(out, "\n"), "\n"); out = {} end
end
if #out > 0 then io.write(table.concat(out, "\n"), "\n") end
