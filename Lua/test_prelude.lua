local error, pcall, xpcall, type, pairs, ipairs, tostring, setmetatable, getmetatable, rawequal =
      error, pcall, xpcall, type, pairs, ipairs, tostring, setmetatable, getmetatable, rawequal
local sort, concat, format, hier, require = table.sort, table.concat, string.format, hier, require
local report_result, presented_list, deliveries_list = __luahier_result, __luahier_presented, __luahier_deliveries
__luahier_result, __luahier_presented, __luahier_deliveries = nil, nil, nil

local tests = {}
local failure_mark = {}

-- "file:line" of the function `level` calls up from the one calling this (1: its caller).
local function where(level)
  local _, message = pcall(error, "", level + 2)
  return (type(message) == "string" and message:match("^(.-):? *$")) or "?"
end

-- A value as one line: tables with keys sorted, strings quoted, cycles and depth bounded.
local function describe(value, depth, seen)
  local kind = type(value)
  if kind == "string" then return format("%q", value):gsub("\\\n", "\\n") end
  if kind ~= "table" then return tostring(value) end
  seen, depth = seen or {}, depth or 0
  if seen[value] then return "<cycle>" end
  if depth >= 6 then return "{...}" end
  seen[value] = true
  local keys, parts, n = {}, {}, #value
  for key in pairs(value) do
    if not (math.type(key) == "integer" and key >= 1 and key <= n) then keys[#keys + 1] = key end
  end
  sort(keys, function(a, b)
    local ta, tb = type(a), type(b)
    if ta ~= tb then return ta < tb end
    if ta == "string" or ta == "number" then return a < b end
    return tostring(a) < tostring(b)
  end)
  for i = 1, n do parts[#parts + 1] = describe(value[i], depth + 1, seen) end
  for _, key in ipairs(keys) do
    local name = (type(key) == "string" and key:match("^[%a_][%w_]*$")) and key or ("[" .. describe(key, depth + 1, seen) .. "]")
    parts[#parts + 1] = name .. " = " .. describe(value[key], depth + 1, seen)
  end
  seen[value] = nil
  return "{" .. concat(parts, ", ") .. "}"
end

local function deep_equal(a, b, seen)
  if rawequal(a, b) then return true end
  if type(a) ~= "table" or type(b) ~= "table" then
    return type(a) == "number" and type(b) == "number" and a == b
  end
  seen = seen or {}
  if seen[a] == b then return true end
  seen[a] = b
  for key, value in pairs(a) do
    if not deep_equal(value, b[key], seen) then return false end
  end
  for key in pairs(b) do
    if a[key] == nil then return false end
  end
  return true
end

-- Whether `actual` has every field of `wanted` (tables compared field by field, recursively).
local function contains(actual, wanted)
  if type(wanted) ~= "table" then return deep_equal(actual, wanted) end
  if type(actual) ~= "table" then return false end
  for key, value in pairs(wanted) do
    if not contains(actual[key], value) then return false end
  end
  return true
end

-- Raises an assertion failure at `at` (the test file's "file:line").
local first_failure = nil   -- kept even if a responder, pcall or coroutine swallows the error

local function fail(at, message, expected, actual, outcome)
  local failure = setmetatable({
    message = message,
    where = at,
    expected = expected ~= nil and describe(expected) or nil,
    actual = describe(actual),
    outcome = outcome,
  }, failure_mark)
  first_failure = first_failure or failure
  error(failure, 0)
end

local function is_outcome(value)
  return type(value) == "table" and value.status ~= nil and value.kind ~= nil and value.at ~= nil
end

local function node_at(target, at)
  if type(target) == "string" then
    local node = hier.node(target)
    if node == nil then fail(at, "no node at " .. target, nil, target) end
    return node
  end
  return target
end

-- Expectations: each method finds the test's line first (where(2): its caller's), then checks.

local Expectation = {}
Expectation.__index = Expectation

local function outcome_of(self, what, at)
  if not is_outcome(self.subject) then
    fail(at, what .. " needs an outcome (from trigger, report, triggerEvent or reportError)", nil, self.subject)
  end
  return self.subject
end

local function check_field(self, field, wanted, what, at)
  local outcome = outcome_of(self, what, at)
  local actual = outcome[field]
  if not deep_equal(actual, wanted) then
    fail(at, format("expected %s %s, got %s", what, describe(wanted), describe(actual)), wanted, actual, outcome)
  end
  return self
end

function Expectation:status(wanted) local r = check_field(self, "status", wanted, "status", where(2)) return r end
function Expectation:handled() local r = check_field(self, "status", "handled", "status", where(2)) return r end
function Expectation:unhandled() local r = check_field(self, "status", "unhandled", "status", where(2)) return r end
function Expectation:detached() local r = check_field(self, "status", "detached", "status", where(2)) return r end
function Expectation:by(path) local r = check_field(self, "by", path, "by", where(2)) return r end
function Expectation:kind(kind) local r = check_field(self, "kind", kind, "kind", where(2)) return r end
function Expectation:choice(option) local r = check_field(self, "choice", option, "choice", where(2)) return r end

function Expectation:type(wanted)
  local at = where(2)
  local outcome = outcome_of(self, "type", at)
  local actual = type(outcome.value) == "table" and outcome.value.type or nil
  if actual ~= wanted then
    fail(at, format("expected a value of type %s, got %s", describe(wanted), describe(actual)), wanted, actual, outcome)
  end
  return self
end

-- The final value has these fields (others may be there too).
function Expectation:value(fields)
  local at = where(2)
  local outcome = outcome_of(self, "value", at)
  if not contains(outcome.value, fields) then
    fail(at, "the value does not have the expected fields", fields, outcome.value, outcome)
  end
  return self
end

-- The responder that handled it: "file:line", or its end ("alerts.lua:59", ":59").
function Expectation:responder(location)
  local at = where(2)
  local outcome = outcome_of(self, "responder", at)
  local actual = outcome.responder and outcome.responder.where or nil
  if actual == nil or (actual ~= location and actual:sub(-#location) ~= location) then
    fail(at, format("expected responder %s, got %s", describe(location), describe(actual)), location, actual, outcome)
  end
  return self
end

-- Any value: equal field by field.
function Expectation:equals(wanted)
  local at = where(2)
  if not deep_equal(self.subject, wanted) then
    fail(at, "values differ", wanted, self.subject, is_outcome(self.subject) and self.subject or nil)
  end
  return self
end

-- Any table: has these fields (others may be there too).
function Expectation:contains(fields)
  local at = where(2)
  if not contains(self.subject, fields) then
    fail(at, "the value does not have the expected fields", fields, self.subject, is_outcome(self.subject) and self.subject or nil)
  end
  return self
end

function Expectation:isTrue()
  local at = where(2)
  if not self.subject then fail(at, "expected a true value", true, self.subject) end
  return self
end

-- A function: calling it raises an error whose message (or type) contains `text`.
function Expectation:fails(text)
  local at = where(2)
  if type(self.subject) ~= "function" then fail(at, "fails needs a function", nil, self.subject) end
  local ok, err = pcall(self.subject)
  if ok then fail(at, "expected an error, the call returned", text, "no error") end
  local message = type(err) == "table" and ((err.type or "") .. ": " .. tostring(err.message)) or tostring(err)
  if text ~= nil and not message:find(text, 1, true) then
    fail(at, "the error does not say " .. describe(text), text, message)
  end
  return self
end

-- What publish returned: the subscribers reached, as paths, in order.
function Expectation:deliveredTo(paths)
  local at = where(2)
  local record = self.subject
  if type(record) ~= "table" or record.to == nil then fail(at, "deliveredTo needs what publish returned", nil, record) end
  if not deep_equal(record.to, paths) then fail(at, "the publish reached other subscribers", paths, record.to) end
  return self
end

function Expectation:delivered(count)
  local at = where(2)
  local record = self.subject
  if type(record) ~= "table" or record.count == nil then fail(at, "delivered needs what publish returned", nil, record) end
  if record.count ~= count then
    fail(at, format("expected %d deliveries, got %d", count, record.count), count, record.count)
  end
  return self
end

expect = setmetatable({}, {
  __call = function(_, value) return setmetatable({ subject = value }, Expectation) end,
})

-- The types of the errors that reached the presenter during this test, in order.
local function presented_types()
  local types = {}
  for _, entry in ipairs(presented_list()) do types[#types + 1] = entry.error.type end
  return types
end

-- An error of `errorType` reached the presenter during this test (`count`: exactly that many).
function expect.presented(errorType, count)
  local at = where(2)
  local seen, types = 0, presented_types()
  for _, name in ipairs(types) do
    if name == errorType then seen = seen + 1 end
  end
  if (count == nil and seen == 0) or (count ~= nil and seen ~= count) then
    fail(at, format("expected %s %s to reach the presenter, %d did",
      count and tostring(count) or "an error of type", describe(errorType), seen), errorType, types)
  end
end

-- Nothing reached the presenter during this test.
function expect.nothingPresented()
  local at = where(2)
  local types = presented_types()
  if #types > 0 then fail(at, "expected nothing to reach the presenter", {}, types) end
end

-- Globals for test files ---------------------------------------------------------------------

function rules(name)
  if type(name) ~= "string" then error("rules takes a file name, relative to the test file", 2) end
  return require((name:gsub("%.lua$", "")))
end

function test(name, body)
  if type(name) ~= "string" or type(body) ~= "function" then
    error("test takes a name and a function", 2)
  end
  tests[#tests + 1] = { name = name, body = body, where = where(2) }
end

function trigger(target, event) local node = node_at(target, where(2)) return node:triggerEvent(event) end
-- The error's `where` is the test's line (reportError would name this helper's).
function report(target, err)
  local at = where(2)
  local node = node_at(target, at)
  if type(err) == "string" then err = { type = "Error", message = err } end
  if type(err) == "table" and err.where == nil then err.where = at end
  return node:reportError(err)
end
function presented() return presented_list() end

-- Publishes and says who received it: {count = n, to = {paths, in order}, subscribers = {{node, where}}}.
function publish(target, event, options)
  local node = node_at(target, where(2))
  deliveries_list()
  local count = node:publish(event, options)
  local subscribers, to = deliveries_list(), {}
  for i, entry in ipairs(subscribers) do to[i] = entry.node end
  return { count = count, to = to, subscribers = subscribers }
end

function __luahier_count() return #tests end

function __luahier_name(index) return tests[index].name, tests[index].where end

function __luahier_run(index)
  local entry = tests[index]
  first_failure = nil
  local ok, err = xpcall(entry.body, function(e) return e end)
  if first_failure ~= nil then ok, err = false, first_failure end
  if ok then return report_result({ status = "passed" }) end
  if getmetatable(err) == failure_mark then
    local trace = nil
    if err.outcome ~= nil then trace = err.outcome.trace end
    return report_result({
      status = "failed", message = err.message, where = err.where,
      expected = err.expected, actual = err.actual, trace = trace,
    })
  end
  local message
  if type(err) == "table" and err.message ~= nil then
    message = tostring(err.type or "Error") .. ": " .. tostring(err.message)
  else
    local described, text = pcall(tostring, err)
    message = (described and type(text) == "string" and not (type(err) == "table" and getmetatable(err) == nil)) and text
      or describe(err)
  end
  return report_result({ status = "error", message = message })
end
