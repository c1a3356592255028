-- A document workspace, to show publishing down the tree, declared types checked at run
-- time, alerts with recovery options and the detached-chain policy.
--
--   luahier run --recover Retry scripts/workspace.lua
--   luahier check scripts/workspace.lua              (clean: every declared type is answered)
--   luahier tree scripts/workspace.lua --format dot | dot -Tsvg > workspace.svg

local app = hier.root:child("app")
local editor = app:child("editor")
local sidebar = app:child("sidebar")
local tab1 = editor:child("tab-1")
local tab2 = editor:child("tab-2")
local outline = sidebar:child("outline")

-- What may come up from below /app, by name. Strict: anything else is refused.
hier.safety = "strict"
app:triggers{"Save", "Close"}
app:reports{"UploadFailed", "Conflict"}
-- Nested: the editor's subtree may also format. A declaring node must list all it lets
-- through; types declared below count for the nodes above, so Format passes /app too.
editor:triggers{"Format", "Save", "Close"}

-- Responders that answer for each declared type by name (luahier check asks for them).
app:receiveEvent("Save", function(e)
    print("app: saved " .. e.doc)
    return "handled"
end)
app:handleEvent("Close", function(e) print("app: closed " .. e.doc) end)
app:catchError("Conflict", function(e)
    return {type = "Save", doc = e.doc .. " (merged)"}
end)
app:handleAlertErrors(function(e)
    -- The script decides when it can; otherwise the host (luahier run --recover) does.
    if e.attempt >= 3 then return "Cancel" end
end)
app:receiveError("UploadFailed", function(e)
    print("app: upload failed without an alert: " .. e.message)
    return "handled"
end)
app:receiveError("SafetyViolation", function(e)
    print("app: refused " .. e.domain .. " '" .. e.undeclared .. "' at " .. e.node)
    return "handled"
end)
editor:receiveEvent("Format", function(e)
    print("editor: formatted " .. e.doc)
    return "handled"
end)

-- Publishing: every pane that shows text repaints; the sidebar repaints for its outline.
for _, pane in ipairs{tab1, tab2, sidebar, outline} do
    pane:subscribe("ThemeChanged", function(e) print("  " .. pane.path .. " repaints " .. e.theme) end)
end
for _, to in ipairs{"first", "last", "all"} do
    print("publish to " .. to .. ":")
    print("  -> " .. app:publish({type = "ThemeChanged", theme = "dark"}, {to = to}) .. " subscribers")
end

-- Declared events pass; an undeclared one is refused at the first node that declares.
tab1:triggerEvent({type = "Save", doc = "notes.md"})
tab1:triggerEvent({type = "Format", doc = "notes.md"})
outline:triggerEvent({type = "Format", doc = "outline"})   -- the sidebar may not format
tab2:reportError({type = "Conflict", doc = "plan.md"})

-- Alertable errors: a title makes an alert; the choice is in the outcome.
for attempt = 1, 3, 2 do
    local outcome = tab1:reportError({
        type = "UploadFailed", title = "Upload failed", attempt = attempt,
        message = "The server did not answer (attempt " .. attempt .. ").",
        recovery = {"Retry", "Cancel"},
    })
    print("attempt " .. attempt .. ": " .. outcome.status .. ", choice " .. tostring(outcome.choice))
end
tab1:reportError({type = "UploadFailed", message = "no title, so no alert"})

-- A closed tab is a cut chain. With the presenter policy its errors still get seen.
hier.detached = "presenter"
tab2:remove()
print("closed tab: " .. tab2:reportError({type = "Conflict", doc = "plan.md", message = "tab closed"}).status)
