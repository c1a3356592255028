-- Fails on purpose: the CLI tests check what luahier test says about each kind of failure.
rules "routing.lua"

test("passes", function()
  expect(trigger("/shop/cart", { type = "AddItem", count = 1 })):handled()
end)

test("a wrong expectation about who handled it", function()
  local outcome = trigger("/shop/cart", { type = "AddItem", count = 50 })
  expect(outcome):by("/shop/cart")
end)

test("a runtime error in the test", function()
  local missing = nil
  return missing.field
end)

test("a rule that loops forever is stopped by the dispatch limit", function()
  expect(trigger("/shop", "Spin")):unhandled():type("InstructionLimitExceeded")
end)

test("a test that loops forever", function()
  while true do end
end)

test("state does not leak between tests", function()
  -- The runtime error above ran on another hierarchy: this one is fresh.
  expect(leaked):equals(nil)
  leaked = true
end)

test("a payment error that nobody presents", function()
  report("/shop/checkout", { type = "PaymentDeclined", message = "card expired" })
  expect.presented("PaymentDeclined")
end)
