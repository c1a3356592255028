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

    /// A dispatch that records no more than a run passed by and the entry that ended it shares
    /// a record its plan keeps (walk.lua's keptrecord). Each outcome still reads its own trace:
    /// after the kept record of its shape was made again for another type, for a run handled
    /// early, for an entry handled alone, for a chain with no step at all, from Lua and Swift.
    @Test func outcomesThatShareAKeptRecordReadTheirOwnTraces() throws {
        let f = try Fixture(steps + """

            hier.tracing = "path"
            a = hier.root:child("a")
            for i = 1, 3 do a:receiveEvent(function(e) if e.stop == i then return "handled" end return "notHandled" end) end
            alone = hier.root:child("alone")
            alone:handleEvent(function() end)
            none = hier.root:child("none")
            none:handleEvent("Never", function() end)
            """)
        #expect(try f.output("""
            local sent = {{type = "Tap"}, {type = "Key"}, {type = "Tap", stop = 2}, {type = "Key", stop = 2},
                {type = "Tap", stop = 1}, {type = "Tap"}}
            local outcomes = {}
            for i, e in ipairs(sent) do outcomes[i] = a:triggerEvent(e) end
            outcomes[#outcomes + 1] = alone:triggerEvent("Tap")
            outcomes[#outcomes + 1] = alone:triggerEvent("Key")
            outcomes[#outcomes + 1] = none:triggerEvent("Tap")
            outcomes[#outcomes + 1] = none:triggerEvent("Key")
            outcomes[1].trace[1].input = "Changed"
            for _, o in ipairs(outcomes) do print(steps(o)) end
            print(rawequal(outcomes[1].trace, outcomes[6].trace))
            """) == [
                "unhandled: /a#1 Changed -> notHandled, /a#2 Tap -> notHandled, /a#3 Tap -> notHandled",
                "unhandled: /a#1 Key -> notHandled, /a#2 Key -> notHandled, /a#3 Key -> notHandled",
                "handled: /a#1 Tap -> notHandled, /a#2 Tap -> handled",
                "handled: /a#1 Key -> notHandled, /a#2 Key -> handled",
                "handled: /a#1 Tap -> handled",
                "unhandled: /a#1 Tap -> notHandled, /a#2 Tap -> notHandled, /a#3 Tap -> notHandled",
                "handled: /alone#1 Tap -> handled",
                "handled: /alone#1 Key -> handled",
                "unhandled: ",
                "unhandled: ",
                "false",
            ])
        f.hierarchy.traceLevel = .path
        for type in ["Tap", "Key", "Tap"] {
            let trace = try #require(try f.hierarchy.trigger(.event(type), at: "/a").trace)
            #expect(trace.map(\.description) == (1...3).map { "/a #\($0) receiveEvent (test.lua:8): \(type) -> notHandled" })
        }
    }

    /// Traced dispatches that record the same share one record: 20,000 outcomes kept, each of a
    /// run passed by (for half, to its last receive, which handles), hold about what untraced
    /// ones do, where a record each would be ~250 bytes more an outcome.
    @Test func tracedOutcomesOfOneShapeShareTheirRecord() throws {
        let f = try Fixture("""
            a = hier.root:child("a")
            for i = 1, 3 do a:receiveEvent(function(e) return e.type == "Stop" and i == 3 and "handled" or "notHandled" end) end
            """)
        /// Bytes held a kept outcome, with tracing as `tracing` says.
        func held(_ tracing: String) throws -> Double {
            _ = try f.output("kept = nil")
            f.hierarchy.collectGarbage()
            f.hierarchy.collectGarbage()
            let before = f.hierarchy.luaMemory.used
            _ = try f.output("""
                hier.tracing = \(tracing)
                kept = {}
                for i = 1, 10000 do kept[2 * i - 1], kept[2 * i] = a:triggerEvent("Tap"), a:triggerEvent("Stop") end
                """)
            f.hierarchy.collectGarbage()
            f.hierarchy.collectGarbage()
            return Double(f.hierarchy.luaMemory.used - before) / 20000
        }
        let untraced = try held("false")
        let traced = try held("'path'")
        #expect(traced - untraced < 100, "\(traced - untraced) bytes more a traced outcome")
        #expect(try f.output("print(#kept[1].trace, #kept[2].trace, kept[20000].trace[3].result)") == ["3\t3\thandled"])
    }

    /// A run's step waits, with no record made, until the next step: then it is written first,
    /// whatever that step is (handled, filtered entries passed over before it, a raise, a
    /// replacement, a safety violation at a declaring node, a second run), and a nested
    /// dispatch counts it among the steps before its responder.
    @Test func aRunsWaitingStepComesBeforeTheNextStep() throws {
        let f = try Fixture(steps + """

            hier.tracing = "path"
            hier.safety = "strict"
            function chain(name, last)
                local n = hier.root:child(name)
                for i = 1, 2 do n:receiveEvent(function() return "notHandled" end) end
                n:handleEvent("Never", function() end)
                last(n)
                return n
            end
            hier.root:catchError(function(e) return "Mended" end)
            hier.root:handleEvent(function() end)
            """)
        var enclosing: [Int?] = []
        f.hierarchy.onDispatch = { outcome, depth in if depth == 2 { enclosing.append(outcome.enclosingStep) } }
        #expect(try f.output("""
            local cases = {
                chain("handler", function(n) end),
                chain("raise", function(n) n:handleEvent(function() error({type = "Broken"}) end) end),
                chain("spin", function(n) n:transformEvent(function() return "Spun" end) end),
                chain("again", function(n) n:receiveError(function() return "notHandled" end) n:receiveEvent(function() return "notHandled" end) end),
                chain("nest", function(n) n:handleEvent(function() hier.root:child("inner"):triggerEvent("Inner") end) end),
            }
            local declaring = hier.root:child("declaring")
            declaring:triggers{"Tap"}
            local below = declaring:child("below")
            for i = 1, 2 do below:receiveEvent(function() return "notHandled" end) end
            below:handleEvent("Never", function() end)
            cases[#cases + 1] = below
            for _, n in ipairs(cases) do
                for _, type in ipairs{"Tap", "Key"} do print(steps(n:triggerEvent(type))) end
            end
            """) == [
                "handled: /handler#1 Tap -> notHandled, /handler#2 Tap -> notHandled, /#2 Tap -> handled",
                "handled: /handler#1 Key -> notHandled, /handler#2 Key -> notHandled, /#2 Key -> handled",
                "handled: /raise#1 Tap -> notHandled, /raise#2 Tap -> notHandled, /raise#4 Tap -> raised Broken, /#1 Broken -> event Mended, /#2 Mended -> handled",
                "handled: /raise#1 Key -> notHandled, /raise#2 Key -> notHandled, /raise#4 Key -> raised Broken, /#1 Broken -> event Mended, /#2 Mended -> handled",
                "handled: /spin#1 Tap -> notHandled, /spin#2 Tap -> notHandled, /spin#4 Tap -> event Spun, /#2 Spun -> handled",
                "handled: /spin#1 Key -> notHandled, /spin#2 Key -> notHandled, /spin#4 Key -> event Spun, /#2 Spun -> handled",
                "handled: /again#1 Tap -> notHandled, /again#2 Tap -> notHandled, /again#5 Tap -> notHandled, /#2 Tap -> handled",
                "handled: /again#1 Key -> notHandled, /again#2 Key -> notHandled, /again#5 Key -> notHandled, /#2 Key -> handled",
                "handled: /nest#1 Tap -> notHandled, /nest#2 Tap -> notHandled, /nest#4 Tap -> handled",
                "handled: /nest#1 Key -> notHandled, /nest#2 Key -> notHandled, /nest#4 Key -> handled",
                "handled: /declaring/below#1 Tap -> notHandled, /declaring/below#2 Tap -> notHandled, /#2 Tap -> handled",
                "handled: /declaring/below#1 Key -> notHandled, /declaring/below#2 Key -> notHandled, /#1 SafetyViolation -> event Mended, /#2 Mended -> handled",
            ])
        #expect(enclosing == [2, 2])
    }

    /// A limit that trips anywhere in a traced dispatch leaves a trace: the steps of the
    /// dispatch without the limit, up to where it stopped, each once; the last may be the
    /// responder the limit stopped, `raised` it. Swept over every instruction count up to past
    /// the whole dispatch, in a chain of runs, a transform, a raise, a catch and handlers,
    /// dispatched three times (the kept records, the walk returned before the trip was seen).
    @Test(arguments: ["path", "full"])
    func aLimitAtAnyInstructionLeavesAPrefixOfTheTrace(mode: String) throws {
        let chain = steps + """

            a = hier.root:child("a") b = a:child("b") c = b:child("c")
            local function nh(e) local x = 0 for i = 1, 3 do x = x + i end return "notHandled" end
            c:receiveEvent(nh) c:receiveEvent(nh) c:receiveEvent(nh)
            b:transformEvent("T", function(e) return {type = "U"} end)
            b:receiveEvent(nh) b:receiveEvent(nh)
            b:receiveEvent(function(e) if e.type == "U" then error("fail") end return "notHandled" end)
            b:receiveError(nh) b:receiveError(nh)
            a:receiveEvent(function(e) if e.type == "H" then return "handled" end return "notHandled" end)
            a:catchError("LuaError", function(e) return {type = "Caught"} end)
            a:receiveEvent(nh) a:receiveEvent(nh)
            a:handleEvent("Caught", function(e) end)
            function shown(o) return o.trace and steps(o):gsub("^%w+: ?", "") or "no trace" end
            """
        func traces(limit: Int?) throws -> [[String]] {
            var options = Hierarchy.Options()
            options.limits.dispatchInstructions = limit
            let f = try Fixture(chain, options: options)
            return try f.output("""
                hier.tracing = "\(mode)"
                for _, type in ipairs{"T", "H", "T"} do print(shown(c:triggerEvent(type))) end
                """).map { $0.isEmpty ? [] : $0.components(separatedBy: ", ") }
        }
        let whole = try traces(limit: nil)
        #expect(whole.map(\.count) == [13, 7, 13])
        for limit in 1...300 {
            for (got, all) in zip(try traces(limit: limit), whole) {
                let place = "limit \(limit): \(got) against \(all)"
                #expect(got.count <= all.count && Array(got.dropLast()) == Array(all.prefix(max(got.count - 1, 0))), "\(place)")
                guard let last = got.last, got.count <= all.count else { continue }
                let expected = all[got.count - 1]
                let raised = expected.components(separatedBy: " -> ")[0] + " -> raised InstructionLimitExceeded"
                #expect(last == expected || last == raised, "\(place)")
            }
        }
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
    /// the trace), inside a run of receives, alone, and after a run whose step waited (entries
    /// passed over between), in both tracing modes.
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
            local c = hier.root:child("c")
            for i = 1, 2 do c:receiveEvent(function() return "notHandled" end) end
            c:handleEvent("Never", function() end)
            c:handleEvent(function() while true do end end)
            o = c:triggerEvent("Tap")
            print(#o.trace, o.trace[2].index, o.trace[2].result, o.trace[3].index, o.trace[3].result)
            """) == [
                "InstructionLimitExceeded\t3\tnotHandled\tnotHandled\traised InstructionLimitExceeded\t3",
                "2\tevent Spun\tSpun\traised InstructionLimitExceeded",
                "3\t2\tnotHandled\t4\traised InstructionLimitExceeded",
            ])
    }
}
