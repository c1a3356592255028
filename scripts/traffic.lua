-- Generated alert traffic for the worked example of docs/shadow.md: `luahier run
-- scripts/traffic.lua COUNT SEED` prints COUNT request lines for scripts/alerts.lua, the same
-- lines for the same SEED (a generator of its own, not math.random, so that every Lua and
-- every run agree).
local count = tonumber(arg[1]) or 1000
local state = tonumber(arg[2]) or 1

-- A linear congruential generator (Knuth's MMIX constants), 0 <= n < bound.
local function draw(bound)
  state = (state * 6364136223846793005 + 1442695040888963407)
  return ((state >> 33) % bound)
end

local services = {
  "/org/platform/api", "/org/platform/db", "/org/payments/checkout", "/org/payments/ledger",
}
local severities = { "info", "info", "info", "warning", "warning", "critical" }
local messages = { "p99 latency 800 ms", "disk 91%", "error rate 2%", "queue depth 10k", "deploy finished" }

for id = 1, count do
  local at = services[draw(#services) + 1]
  local line
  if draw(20) == 0 then
    -- A failed health probe: most time out once, some three times or more, few twice.
    local roll = draw(100)
    local attempts = roll < 60 and 1 or roll < 64 and 2 or 3 + draw(3)
    line = string.format(
      '{"id": %d, "at": "%s", "error": {"type": "Timeout", "message": "GET /health", "service": "%s", "attempts": %d}}',
      id, at, at:match("[^/]+$"), attempts)
  else
    line = string.format('{"id": %d, "at": "%s", "event": {"type": "Alert", "severity": "%s", "message": "%s"}}',
      id, at, severities[draw(#severities) + 1], messages[draw(#messages) + 1])
  end
  print(line)
end
