-- A handle that raises does not end the dispatch: its error goes on to the next responder,
-- which static explain once called "not offered (unreachable)".
local a = hier.root:child("a")
a:handleEvent(function(e) error("handler failed") end)
a:handleError(function(err) end)
