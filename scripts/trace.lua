-- Gesture routing, meant to be run with --trace to see every step of every dispatch:
--
--   luahier run --trace scripts/trace.lua
--
-- Each dispatch prints, on stderr, one line per responder called: node, responder
-- number and kind, where it was written, the type it was given, and what it did.

local window = hier.root:child("window")
local list = window:child("list")
local row = list:child("row-7")

-- The row turns a long press into a context-menu request.
row:transformEvent("LongPress", function(press)
  return { type = "ShowContextMenu", x = press.x, y = press.y }
end)

-- The list ignores what it does not scroll on...
list:receiveEvent(function(event)
  if event.type == "Swipe" then return "handled" end
  return "notHandled"
end)

-- ...and the window shows menus; anything else falls through to the root.
window:handleEvent("ShowContextMenu", function(menu)
  print(("window: context menu at %d,%d"):format(menu.x, menu.y))
end)

print("swipe:", row:triggerEvent({ type = "Swipe", dx = -40 }).status)
print("long press:", row:triggerEvent({ type = "LongPress", x = 12, y = 30 }).status)
print("double tap:", row:triggerEvent("DoubleTap").status)
