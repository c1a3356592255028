import Testing
@testable import LuaHierarchy

@Suite("Values and errors (contract §3)")
struct ValueTests {
    /// Printable ASCII within the limit is kept as it is (the common case, taken without
    /// building a copy); controls, C1, separators and overrides are escaped; the limit counts.
    @Test func printableTextKeepsPlainTextAndEscapesTheRest() {
        #expect(PrintableText.field("request id=7 ~!") == "request id=7 ~!")
        #expect(PrintableText.field("") == "")
        #expect(PrintableText.field("red\u{1B}[31m") == "red\\x1B[31m")
        #expect(PrintableText.field("a\tb\nc\u{7F}") == "a\\tb\\nc\\x7F")
        #expect(PrintableText.field("caf\u{E9} \u{202E}x") == "caf\u{E9} \\u{202E}x")
        #expect(PrintableText.field(String(repeating: "x", count: 10), limit: 4) == "xxxx… (6 more characters)")
        #expect(PrintableText.field("xxxx", limit: 4) == "xxxx")
        #expect(PrintableText.block("one\n\ttwo") == "one\n\ttwo")
    }

    @Test func stringShorthands() throws {
        let f = try Fixture()
        #expect(try f.output("""
            local n = hier.root:child("n")
            local e = n:triggerEvent("Tap")
            local r = n:reportError("disk full")
            print(e.value.type, r.value.type, r.value.message, r.value.where)
            local t = n:reportError({message = "no type"})
            print(t.value.type, t.value.message)
            """) == ["Tap\tError\tdisk full\ttest.lua:3", "Error\tno type"])
    }

    @Test func luaRuntimeErrorsBecomeLuaErrorWithWhereAndTraceback() throws {
        let f = try Fixture()
        let lines = try f.output("""
            local n = hier.root:child("n")
            n:receiveEvent(function(e)
              local t = nil
              return t.field
            end)
            local o = n:triggerEvent("Tap")
            print(o.value.type, o.value.where, o.value.message)
            print(o.value.traceback:match("^stack traceback:") ~= nil, o.value.traceback:find("test.lua:4", 1, true) ~= nil)
            """)
        #expect(lines == [
            "LuaError\ttest.lua:4\tattempt to index a nil value (local 't')",
            "true\ttrue",
        ])
    }

    @Test(arguments: [
        ("error(42)", "42"),
        ("error(nil)", "(error object is a nil value)"),
        ("error(true)", "(error object is a boolean value)"),
        ("error(setmetatable({}, {__tostring = function() return 'custom' end}) and 'x', 0)", "x"),
        ("error('at level 2', 2)", "at level 2"),
    ])
    func nonTableErrorValuesBecomeLuaErrors(_ raise: String, _ message: String) throws {
        let f = try Fixture()
        let lines = try f.output("""
            local n = hier.root:child("n")
            n:receiveEvent(function() \(raise) end)
            local o = n:triggerEvent("Tap")
            print(o.value.type, o.value.message, o.value.where ~= nil)
            """)
        #expect(lines == ["LuaError\t\(message)\ttrue"])
    }

    @Test func raisedTablesKeepIdentityAndGainWhere() throws {
        let f = try Fixture()
        #expect(try f.output("""
            local n = hier.root:child("n")
            local raised = {type = "Custom", message = "m", code = 7}
            n:receiveEvent(function()
              error(raised)
            end)
            local o = n:triggerEvent("Tap")
            print(o.value == raised, raised.where, o.value.code)
            local explicit = {type = "Placed", where = "elsewhere:1"}
            n:receiveEvent(function() error(explicit) end)
            print(hier.root:child("m"):reportError(explicit).value.where)
            """) == ["true\ttest.lua:4\t7", "elsewhere:1"])
    }

    @Test func reportedErrorsCarryWhereOfTheReportCall() throws {
        let f = try Fixture()
        #expect(try f.output("""
            local n = hier.root:child("n")

            local o = n:reportError({type = "Late"})
            print(o.value.where)
            """) == ["test.lua:3"])
    }

    @Test func causeChainIsNeverLost() throws {
        let f = try Fixture()
        #expect(try f.output("""
            local team = hier.root:child("company"):child("dept"):child("team")
            team:transformError(function(e) return {type = "TeamEscalation", message = "team gave up"} end)
            team.parent:transformError(function(e) return {type = "DeptEscalation", message = "dept gave up"} end)
            local o = team:reportError({type = "Outage", message = "db down"})
            local chain, e = {}, o.value
            while e do chain[#chain + 1] = e.type .. "@" .. e.where; e = e.cause end
            print(table.concat(chain, " <- "))
            """) == ["DeptEscalation@test.lua:3 <- TeamEscalation@test.lua:2 <- Outage@test.lua:4"])
    }

    @Test func userSetCauseIsKept() throws {
        let f = try Fixture()
        #expect(try f.output("""
            local n = hier.root:child("n")
            n:transformError(function(e) return {type = "Mine", cause = "explicit"} end)
            print(n:reportError("x").value.cause)
            """) == ["explicit"])
    }

    @Test func payloadRoundTripsThroughSwiftKeepingIntegersFloatsBytesAndNesting() throws {
        let f = try Fixture()
        var seen: Value?
        try f.hierarchy.makeNode(at: "/a").transformEvent { event in
            seen = event
            return event
        }
        let lines = try f.output("""
            local a = hier.node("/a")
            local child = a:child("b")
            a:receiveEvent(function(e)
              print(math.type(e.i), math.type(e.f), e.f, #e.bytes, e.bytes:byte(2), e.bad:byte(1),
                    e.nested.list[3], e.nested.map.deep[1], e.nested.list[2], e.flag, e.neg, e.big)
              return "handled"
            end)
            child:triggerEvent({type = "Payload", i = 3, f = 3.0, bytes = "a\\0b", bad = "\\xff\\xfe", accents = "héllo wörld",
              nested = {list = {1, "two", 3.5}, map = {deep = {1}}}, flag = false, neg = -0.5,
              big = math.maxinteger})
            """)
        let value = try #require(seen)
        #expect(value["i"] == .int(3))
        #expect(value["f"] == .double(3.0))
        #expect(value["bytes"] == .string("a\0b"))
        #expect(value["bad"] == .bytes([0xFF, 0xFE]))
        #expect(value["accents"] == .string("héllo wörld"))
        #expect(value["nested"]?["list"] == .array([.int(1), .string("two"), .double(3.5)]))
        #expect(value["big"] == .int(Int64.max))
        #expect(lines == ["integer\tfloat\t3.0\t3\t0\t255\t3.5\t1\ttwo\tfalse\t-0.5\t9223372036854775807"])
    }

    @Test func cyclesAndFunctionsInAPayloadAreClearErrorsWhenCrossingToSwift() throws {
        let f = try Fixture()
        f.hierarchy.root.receiveEvent { _ in .handled }
        let lines = try f.output("""
            local n = hier.root:child("n")
            local cyclic = {type = "Cyclic"}
            cyclic.self = cyclic
            local o = n:triggerEvent(cyclic)
            print(o.kind, o.value.type, o.value.message)
            o = n:triggerEvent({type = "Fn", callback = print})
            print(o.kind, o.value.type, o.value.message)
            o = n:triggerEvent({type = "Mixed", 1, 2})
            print(o.value.type, o.value.message)
            o = n:triggerEvent({type = "Sparse", list = {[1] = 1, [3] = 3}})
            print(o.value.message)
            local deep = {type = "Deep"}
            local t = deep
            for i = 1, 300 do t.next = {}; t = t.next end
            print(n:triggerEvent(deep).value.message)
            o = n:triggerEvent({type = "Path", user = {tags = {"a", "b", print}}})
            print(o.value.message)
            o = n:triggerEvent({type = "Key", ["\\xff"] = 1})
            print(o.value.message)
            """)
        #expect(lines[0] == "error\tPayloadError\ta table that contains itself (a cycle) at .self")
        #expect(lines[1] == "error\tPayloadError\ta function cannot be copied as plain data at .callback")
        #expect(lines[2] == "PayloadError\ta table that mixes string keys and integer keys")
        #expect(lines[3] == "an array with holes or keys not starting at 1 at .list")
        #expect(lines[4].hasPrefix("tables nested deeper than 200"))
        // The path names every level, keys and indexes alike.
        #expect(lines[5] == "a function cannot be copied as plain data at .user.tags[3]")
        #expect(lines[6] == "a key that is not valid UTF-8")
    }

    @Test func swiftValuesBecomeOneLuaTableSharedByLaterResponders() throws {
        let f = try Fixture()
        let node = try f.hierarchy.makeNode(at: "/a")
        try f.lua("""
            local a = hier.node("/a")
            a:receiveEvent(function(e) e.seenBy = "first" return "notHandled" end)
            a:receiveEvent(function(e) print(e.seenBy, e.x, math.type(e.x)) return "handled" end)
            """)
        let outcome = try f.hierarchy.trigger(.event("Tap", ["x": 1.5]), at: node)
        #expect(f.printed == ["first\t1.5\tfloat"])
        #expect(outcome.value["seenBy"] == "first")
    }

    @Test func outcomeValuesDescribeWhatPlainDataCannotHold() throws {
        let f = try Fixture()
        try f.lua("hier.root:child('a'):transformEvent(function(e) return {type = 'WithFn', fn = print} end)")
        let outcome = try f.hierarchy.trigger("Tap", at: "/a")
        #expect(outcome.value["fn"] == "<function>")
        #expect(outcome.value.typeName == "WithFn")
    }
}

/// Reading values from Swift: accessors, and numbers as the rules see them.
@Suite struct ValueAccessorTests {
    @Test func accessorsReadEachCase() {
        let value: Value = ["type": "Charge", "amount": 500.0, "count": 3, "ok": true, "tags": ["a"], "n": nil]
        #expect(value["amount"]?.intValue == 500)
        #expect(value["amount"]?.doubleValue == 500.0)
        #expect(value["count"]?.intValue == 3 && value["count"]?.doubleValue == 3.0)
        #expect(Value.double(2.5).intValue == nil)
        #expect(Value.double(.infinity).intValue == nil && Value.double(.nan).intValue == nil)
        #expect(value["ok"]?.boolValue == true && value["type"]?.boolValue == nil)
        #expect(value["tags"]?.arrayValue == ["a"] && value["tags"]?.mapValue == nil)
        #expect(value.mapValue?.count == 6)
    }

    /// An amount sent from Swift as 500.0 is the rules' 500: they compare equal as Lua does.
    @Test func numbersCompareAsTheRulesSeeThem() throws {
        #expect(Value.int(500).equalsAsLua(.double(500.0)))
        #expect(!Value.int(500).equalsAsLua(.double(500.5)))
        #expect(Value.map(["amount": .int(500)]).equalsAsLua(["amount": 500.0]))
        #expect(!Value.map(["amount": .int(500)]).equalsAsLua(["amount": 500.0, "x": 1]))
        let fixture = try Fixture("""
            hier.root:child("pay"):handleEvent(function(e) print(e.amount == 500, math.type(e.amount)) end)
            """)
        _ = try fixture.hierarchy.trigger(["type": "Charge", "amount": 500.0], at: "/pay")
        #expect(fixture.printed == ["true\tfloat"])
    }
}
