import Testing
@testable import LuaHierarchy

/// The trace record a traced walk fills (luahier_enginetypes.h): the walk keeps its count in a
/// local and writes it as it returns, and a step that passes the value by writes only its entry
/// and input. These tests read the record where the count is not written yet: after an error
/// left the walk, mid-walk from a nested dispatch, and after a limit ended the dispatch.
@Suite("Trace records")
struct TraceRecordTests {
    private let steps = """
        function steps(o)
            local t = {}
            for i, s in ipairs(o.trace) do t[i] = s.node .. "#" .. s.index .. " " .. s.input .. " -> " .. s.result end
            return o.status .. ": " .. table.concat(t, ", ")
        end
        """

    @Test func stepsAfterARaisedErrorFollowTheStepsBeforeIt() throws {
        let f = try Fixture(steps)
        #expect(try f.output("""
            hier.tracing = "path"
            local a = hier.root:child("a")
            local b = a:child("b")
            for i = 1, 3 do b:receiveEvent(function() return "notHandled" end) end
            b:receiveEvent(function() error({type = "Broken"}) end)
            a:receiveError(function() return "notHandled" end)
            a:catchError(function() return "Mended" end)
            hier.root:receiveEvent(function() return "notHandled" end)
            for round = 1, 2 do print(steps(b:triggerEvent("Tap"))) end
            """) == Array(repeating: "unhandled: /a/b#1 Tap -> notHandled, /a/b#2 Tap -> notHandled, /a/b#3 Tap -> notHandled, "
                + "/a/b#4 Tap -> raised Broken, /a#1 Broken -> notHandled, /a#2 Broken -> event Mended, /#1 Mended -> notHandled",
                count: 2))
    }

    @Test func aNestedDispatchSeesTheStepsRecordedBeforeItsResponder() throws {
        let f = try Fixture(steps)
        var enclosing: [Int?] = []
        f.hierarchy.onDispatch = { outcome, depth in if depth == 2 { enclosing.append(outcome.enclosingStep) } }
        #expect(try f.output("""
            hier.tracing = "path"
            local a = hier.root:child("a")
            local other = hier.root:child("other")
            for i = 1, 2 do a:receiveEvent(function() return "notHandled" end) end
            a:receiveEvent(function() other:triggerEvent("Inner") return "notHandled" end)
            hier.root:handleEvent(function() end)
            print(steps(a:triggerEvent("Tap")))
            """) == ["handled: /a#1 Tap -> notHandled, /a#2 Tap -> notHandled, /a#3 Tap -> notHandled, /#1 Tap -> handled"])
        #expect(enclosing == [2])
    }

    @Test func aTraceFromSwiftCountsItsSteps() throws {
        let f = try Fixture("""
            local a = hier.root:child("a")
            for i = 1, 4 do a:receiveEvent(function() return "notHandled" end) end
            hier.root:transformEvent(function() return "Done" end)
            """)
        f.hierarchy.traceLevel = .path
        let outcome = try f.hierarchy.trigger(.event("Tap"), at: "/a")
        let trace = try #require(outcome.trace)
        #expect(trace.map(\.description) == (1...4).map { "/a #\($0) receiveEvent (test.lua:2): Tap -> notHandled" }
            + ["/ #1 transformEvent (test.lua:3): Tap -> event Done"])
    }

    /// A record is made with room for a run of receives and one step after it (walk.c): one
    /// that records more grows, and reads the same, in both tracing modes.
    @Test(arguments: ["path", "full"])
    func aRecordOfMoreStepsThanItsRoomKeepsThemAll(mode: String) throws {
        let f = try Fixture(steps)
        #expect(try f.output("""
            hier.tracing = "\(mode)"
            local a = hier.root:child("a")
            for i = 1, 2 do a:receiveEvent(function() return "notHandled" end) end
            a:transformEvent(function() return "Spun" end)
            for i = 1, 2 do hier.root:receiveEvent(function() return "notHandled" end) end
            hier.root:transformEvent(function() return "Done" end)
            hier.root:handleEvent(function() end)
            for round = 1, 2 do print(steps(a:triggerEvent("Tap"))) end
            """) == Array(repeating: "handled: /a#1 Tap -> notHandled, /a#2 Tap -> notHandled, /a#3 Tap -> event Spun, "
                + "/#1 Spun -> notHandled, /#2 Spun -> notHandled, /#3 Spun -> event Done, /#4 Done -> handled",
                count: 2))
    }

    /// The steps before the limit are kept, and the responder the limit stopped has its own
    /// step: it raised the limit's error (line-protocol.md: a failing responder's step is in
    /// the trace), inside a run of receives and alone, in both tracing modes.
    @Test(arguments: ["path", "full"])
    func aDispatchALimitEndedKeepsTheStepsBeforeTheLimit(mode: String) throws {
        var options = Hierarchy.Options()
        options.limits.dispatchInstructions = 20_000
        let f = try Fixture(steps, options: options)
        #expect(try f.output("""
            hier.tracing = "\(mode)"
            local a = hier.root:child("a")
            for i = 1, 2 do a:receiveEvent(function() return "notHandled" end) end
            a:receiveEvent(function() while true do end end)
            local o = a:triggerEvent("Tap")
            print(o.value.type, #o.trace, o.trace[1].result, o.trace[2].result, o.trace[3].result, o.trace[3].index)
            local b = hier.root:child("b")
            b:transformEvent(function(e) return {type = "Spun"} end)
            b:handleEvent("Spun", function() while true do end end)
            o = b:triggerEvent("Tap")
            print(#o.trace, o.trace[1].result, o.trace[2].input, o.trace[2].result)
            """) == [
                "InstructionLimitExceeded\t3\tnotHandled\tnotHandled\traised InstructionLimitExceeded\t3",
                "2\tevent Spun\tSpun\traised InstructionLimitExceeded",
            ])
    }
}
