-- wrk script: POST /v1/dispatch with the alert requests of scripts/alerts.jsonl, in turn.
local requests = {}
for line in io.lines("scripts/alerts.jsonl") do
  if line:match("%S") then requests[#requests + 1] = line end
end
local next = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  next = next % #requests + 1
  return wrk.format(nil, "/v1/dispatch", nil, requests[next])
end
