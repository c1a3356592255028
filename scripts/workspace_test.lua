-- Tests for scripts/workspace.lua: declared types under strict safety, alerts, publishing and
-- the cut chain of a closed tab. The rules print as they load; `luahier test` sends that to stderr.
rules "workspace.lua"

test("a declared event passes /app and is handled there", function()
  expect(trigger("/app/editor/tab-1", { type = "Save", doc = "a.md" })):handled():by("/app"):responder("workspace.lua:24")
end)

test("the editor may format; the sidebar may not (strict safety)", function()
  expect(trigger("/app/editor/tab-1", { type = "Format", doc = "a.md" })):handled():by("/app/editor")
  local refused = trigger("/app/sidebar/outline", { type = "Format", doc = "outline" })
  expect(refused):handled():by("/app"):kind("error"):type("SafetyViolation")
  expect(refused):value{ node = "/app", undeclared = "Format", domain = "event" }
end)

test("a conflict is caught as a merged save, which goes on above /app's Save responder", function()
  -- The position rule: the caught event continues after the catch, so /app's receiveEvent
  -- (registered before it) never sees it, and the root has no responder.
  local outcome = report("/app/editor/tab-1", { type = "Conflict", doc = "plan.md" })
  expect(outcome):unhandled():kind("event"):type("Save"):value{ doc = "plan.md (merged)" }
end)

test("an upload alert on the third attempt is cancelled by the rules", function()
  local outcome = report("/app/editor/tab-1", {
    type = "UploadFailed", title = "Upload failed", attempt = 3, message = "no answer", recovery = { "Retry", "Cancel" },
  })
  expect(outcome):handled():choice("Cancel")
end)

test("a theme change reaches the deepest subscriber on each branch", function()
  local published = publish("/app", { type = "ThemeChanged", theme = "dark" }, { to = "last" })
  expect(published):delivered(2):deliveredTo{ "/app/editor/tab-1", "/app/sidebar/outline" }
end)

test("a closed tab's error is detached and reaches the presenter marked so", function()
  local closed = hier.node("/app/editor/tab-1")
  closed:remove()
  expect(closed:reportError({ type = "Conflict", doc = "x", message = "tab closed" })):detached()
  expect.presented("Conflict", 1)
  expect(presented()[1].detached):isTrue()
end)
