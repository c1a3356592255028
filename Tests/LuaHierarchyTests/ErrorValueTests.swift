import Testing
@testable import LuaHierarchy

/// What the host does to an error value on its way (found by the review of the messages
/// work): a script's own error objects keep their `where`, the sandbox's read-only tables are
/// never changed, a script's metamethod errors pass `table.move` unchanged, and a cut chain
/// stays cut for the presenter whatever answered.
@Suite("Error values on their way")
struct ErrorValueTests {
    @Test func anErrorObjectWithAProtectedMetatableKeepsItsWhere() throws {
        let f = try Fixture()
        let error = try #require(f.failure("""
            local Boom = {__metatable = "locked"}
            error(setmetatable({type = "Boom", code = 9}, Boom))
            """))
        #expect(error.type == "Boom")
        #expect(error.location == "test.lua:2")
    }

    @Test func readOnlyTablesRaisedAsErrorsStayUnchanged() throws {
        let f = try Fixture()
        let output = try f.output("""
            local a = hier.root:child("a")
            a:handleEvent("E", function() error(math) end)
            a:triggerEvent("E")
            a:reportError(string)
            print(rawget(math, "where"), rawget(math, "message"), rawget(string, "where"))
            """)
        #expect(output == ["nil\tnil\tnil"])
    }

    /// A subscriber's error is read on the Swift side (Publisher), not by the walk: a read-only
    /// table raised there was given `type = "Error"`, and every script of the state then read
    /// `string.type` as "Error". Both sides now read a table by the one rule in C.
    @Test func readOnlyTablesRaisedBySubscribersStayUnchanged() throws {
        let f = try Fixture()
        let output = try f.output("""
            local app = hier.root:child("app")
            local leaf = app:child("leaf")
            leaf:receiveError(function(e) print(rawequal(e, string), e.type) return "handled" end)
            leaf:subscribe("Ping", function() error(string) end)
            print(app:publish("Ping"))
            print(rawget(string, "type"), rawget(string, "where"), rawget(string, "message"), string.type)
            """)
        #expect(output == ["true\tnil", "1", "nil\tnil\tnil\tnil"])
    }

    /// `_G` is not one of the read-only views (a script sets its own globals in it), but its
    /// standard names live behind its `__index`: the host's raw write of `type = "Error"` into
    /// an untyped error shadowed the standard `type` for every later rule of the state (an
    /// attacker's find). `_G` travels as an error unchanged, and a script's rawset still works.
    @Test func theGlobalsTableTravelsAsAnErrorUnchanged() throws {
        let f = try Fixture()
        let output = try f.output("""
            local a = hier.root:child("a")
            a:handleEvent("E", function() error(_G) end)
            a:triggerEvent("E")
            a:reportError(_G)
            a:child("leaf"):subscribe("Ping", function() error(_G) end)
            a:publish("Ping")
            rawset(_G, "mine", 1)
            print(type(type), rawget(_G, "type"), rawget(_G, "where"), mine, pcall(rawset, _G, "type", 1))
            """)
        #expect(output == ["function\tnil\tnil\t1\tfalse\t'type' belongs to the standard library and cannot be replaced"])
    }

    /// A subscriber's result is ignored (contract §6): the Swift side read it all the same, and
    /// made a table it returned an event, so that table could no longer be reported as an error.
    @Test func aTableASubscriberReturnsIsNotMadeAnEvent() throws {
        let f = try Fixture()
        let output = try f.output("""
            local app = hier.root:child("app")
            local problem = {type = "Problem"}
            app:child("leaf"):subscribe("Ping", function() return problem end)
            app:publish("Ping")
            print(app:reportError(problem).kind)
            """)
        #expect(output == ["error"])
    }

    @Test func aScriptsMetamethodErrorPassesTableMoveUnchanged() throws {
        let f = try Fixture()
        let output = try f.output("""
            local t = setmetatable({}, {__index = function() error("custom", 0) end})
            print(pcall(table.move, t, 1, 2, 1, {}))
            local ok, e = pcall(table.move, setmetatable({}, {__index = function() error({type = "Own"}) end}), 1, 1, 1, {})
            print(ok, e.type)
            """)
        #expect(output == ["false\tcustom", "false\tOwn"])
    }

    /// A dispatch from a removed subtree that a Swift responder answered, after a nested
    /// dispatch spent its budget: the limit error is the cut chain's, so the default policy
    /// drops it (only the nested dispatch's own, at an attached node, is presented).
    @Test func aCutChainStaysCutWhenALimitEndsAHandledDispatch() throws {
        var options = Hierarchy.Options()
        options.limits.dispatchInstructions = 20_000
        let f = try Fixture(options: options)
        try f.lua("hier.root:child('y'):handleEvent('Spin', function() while true do end end)")
        let x = try f.hierarchy.makeNode(at: "/d/x")
        x.handleEvent(.type("Go")) { [unowned hierarchy = f.hierarchy] _ in
            _ = try hierarchy.trigger(.event("Spin"), at: "/y")
        }
        try f.hierarchy.node(at: "/d")!.remove()
        let outcome = try f.hierarchy.trigger(.event("Go"), at: x)
        #expect(outcome.value.typeName == "InstructionLimitExceeded", "\(outcome)")
        #expect(f.presented.map(\.reportedAt) == ["/y"], "\(f.presented.map { ($0.reportedAt, $0.detached) })")
    }
}
