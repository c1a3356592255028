-- A receive that fails turns the event into an error (contract §4): the error responders
-- after it, which static explain once called "not offered (domain)", handle it.
local app = hier.root:child("app")
local cell = app:child("cell")
app:catchError("Unauthenticated", function(err) return {type = "ShowSignIn"} end)
app:handleEvent("ShowSignIn", function(event) end)
cell:receiveEvent("Tap", function(e) return e.missing.field end)
app:handleError("LuaError", function(err) end)
