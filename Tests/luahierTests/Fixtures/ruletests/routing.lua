-- Rules for the rule-test and explain fixtures: a small typed chain.
local shop = hier.root:child("shop")
local cart = shop:child("cart")
local checkout = shop:child("checkout")

cart:receiveEvent("AddItem", function(e)
  if e.count > 10 then return { type = "BulkOrder", count = e.count } end
  return "notHandled"
end)
cart:handleEvent("AddItem", function(e) end)
cart:receiveEvent("Never", function(e) return "handled" end)
shop:handleEvent("BulkOrder", function(e) end)
shop:catchError("PaymentDeclined", function(err)
  return { type = "RetryPayment", reason = err.message }
end)
shop:receiveEvent("Spin", function(e)
  while true do end
end)
checkout:subscribe("PriceChanged", function(e) end)
hier.root:receiveError(function(err) return "notHandled" end)
hier.root:handleEvent("RetryPayment", function(e) end)

-- A closed checkout tab: removed, and still held, so its chain is cut.
local closed = shop:child("closed")
closed:receiveError("Stale", function(err) return "notHandled" end)
closed:remove()
keepClosed = closed

-- Paying reports a declined card in a nested dispatch, which the shop catches.
checkout:receiveEvent("Pay", function(e)
  checkout:reportError({ type = "PaymentDeclined", message = "card expired" })
  return "handled"
end)
