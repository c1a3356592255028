-- An app's screen tree, with an error deep in a view turned into navigation.
--
--   /app                      catches Unauthenticated -> ShowSignIn (an event)
--   /app/router               (not an ancestor of the feed: shown for contrast)
--   /app/feed                 shows a banner for network errors it can retry
--   /app/feed/cell-42         where the errors happen
--
-- Run: luahier run scripts/signin.lua

local app = hier.root:child("app")
local feed = app:child("feed")
local cell = feed:child("cell-42")
app:child("router")

-- The feed retries what it can; everything else goes on up.
feed:receiveError("NetworkError", function(err)
  if err.retryable then
    print("feed: showing 'retry' banner for: " .. err.message)
    return "handled"
  end
  return "notHandled"
end)

-- The app turns an expired session into a navigation event. The event goes on up the
-- chain *as an event*, starting at the next responder of /app (the position rule).
app:catchError("Unauthenticated", function(err)
  return { type = "ShowSignIn", reason = err.message, returnTo = err.screen }
end)

-- The next responder on /app is the navigator, which handles navigation events.
app:handleEvent("ShowSignIn", function(event)
  print(("navigator: presenting sign-in (%s), then back to %s"):format(event.reason, event.returnTo))
end)

-- A view deep in the tree reports what went wrong where it happened.
local outcome = cell:reportError({ type = "NetworkError", message = "timed out", retryable = true })
print("1:", outcome.status, outcome.kind, outcome.value.type, "by " .. outcome.by)

outcome = cell:reportError({ type = "Unauthenticated", message = "session expired", screen = cell.path })
print("2:", outcome.status, outcome.kind, outcome.value.type, "by " .. outcome.by)

-- A responder that raises a Lua error: it becomes a reported error at the same place.
cell:receiveEvent("Like", function(event)
  if not event.postId then error("like without a post id") end
  return "handled"
end)
outcome = cell:triggerEvent("Like")
print("3:", outcome.status, outcome.kind, outcome.value.type, outcome.value.message)
-- Nobody handled that one, so it reached the root: the CLI's presenter printed it to stderr.
