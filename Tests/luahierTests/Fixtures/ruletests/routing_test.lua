rules "routing.lua"

test("a small order is handled by the cart", function()
  expect(trigger("/shop/cart", { type = "AddItem", count = 2 })):handled():by("/shop/cart"):responder("routing.lua:10")
end)

test("a bulk order goes up to the shop", function()
  expect(trigger("/shop/cart", { type = "AddItem", count = 50 })):handled():by("/shop"):type("BulkOrder")
end)
