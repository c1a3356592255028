import Testing
@testable import LuaHierarchy

/// The dispatch engine (Sources/CLuaHost/include/luahier_enginetypes.h, LuaEngine.swift): every
/// dispatch runs one walk along a plan, made at the first dispatch from a node and kept while
/// the tree's chains stand still. These tests hold each rule on the walk from Lua, and check
/// that later dispatches really went along the kept plan (`engineCounts.plans`).
@Suite("The dispatch engine, from Lua")
struct EngineTests {
    /// `twice(node, make)`: triggers `make()` at `node` twice (the first makes the plan) and
    /// returns the second outcome; `show(o)` prints its fields on one line.
    private let helpers = """
        function twice(node, make) node:triggerEvent(make()) return node:triggerEvent(make()) end
        function show(o)
            local r = o.responder
            print(o.status, o.kind, o.value.type, o.by or "-", r and (r.index .. " " .. r.kind .. " " .. r.where) or "-", o.at)
        end

        """

    @Test func outcomesAreTheSameWhetherTheDispatchMadeItsPlanOrKeptOne() throws {
        let f = try Fixture(helpers + """
            local a = hier.root:child("a")
            local b = a:child("b")
            b:receiveEvent(function(e) return "notHandled" end)
            a:receiveEvent("Other", function(e) return "handled" end)
            a:receiveEvent({"Tap", "Press"}, function(e) if e.stop then return "handled" end return "notHandled" end)
            leaf = b
            """)
        let before = f.hierarchy.engineCounts
        // The first dispatch makes the plan, the others go along it: each pair's lines are equal.
        let lines = try f.output("""
            for _, stop in ipairs({false, true}) do
                show(leaf:triggerEvent({type = "Tap", stop = stop}))
                show(leaf:triggerEvent({type = "Tap", stop = stop}))
            end
            local ev = {type = "Tap"}
            local o = leaf:triggerEvent(ev)
            print(o.value == ev, rawget(o, "trace"), rawget(o, "choice"))
            local keys = {} for k in pairs(o) do keys[#keys + 1] = k end table.sort(keys)
            print(table.concat(keys, ","))
            """)
        #expect(lines == [
            "unhandled\tevent\tTap\t-\t-\t/a/b", "unhandled\tevent\tTap\t-\t-\t/a/b",
            "handled\tevent\tTap\t/a\t2 receiveEvent test.lua:10\t/a/b",
            "handled\tevent\tTap\t/a\t2 receiveEvent test.lua:10\t/a/b",
            "true\tnil\tnil", "at,kind,status,value",
        ])
        #expect(f.hierarchy.engineCounts.dispatches - before.dispatches == 5)
        #expect(f.hierarchy.engineCounts.plans - before.plans == 1)
    }

    @Test func aDetachedChainEndsDetached() throws {
        let f = try Fixture(helpers + """
            local top = hier.root:child("top")
            local leaf = top:child("leaf")
            leaf:receiveEvent(function() return "notHandled" end)
            top:remove()
            show(twice(leaf, function() return {type = "Tap"} end))
            """)
        #expect(f.printed == ["detached\tevent\tTap\t-\t-\ttop/leaf"])
        #expect(f.hierarchy.engineCounts == (2, 1))
    }

    @Test func everyAnswerFollowsTheRulesAlongAKeptPlan() throws {
        let f = try Fixture(helpers + """
            local a = hier.root:child("a")
            local b = a:child("b")
            b:receiveEvent(function(e) print("1 sees " .. e.type) return "notHandled" end)
            b:receiveEvent(function(e) print("2 replaces") return {type = "Swapped"} end)
            b:receiveEvent(function(e) print("3 sees " .. e.type) return "notHandled" end)
            b:receiveEvent(function(e) print("4 raises") error({type = "Oops", message = "m"}) end)
            b:receiveError(function(e) print("5 sees " .. e.type .. " from " .. e.where) return "notHandled" end)
            a:catchError(function(e) print("6 catches " .. e.type) return {type = "Caught"} end)
            a:receiveEvent("Caught", function(e) print("7 returns 42") return 42 end)
            a:handleError(function(e) print("8 handles " .. e.type) end)
            leaf = b
            """)
        let lines = try f.output("show(twice(leaf, function() return {type = 'Tap'} end))")
        let once = [
            "1 sees Tap", "2 replaces", "3 sees Swapped", "4 raises", "5 sees Oops from test.lua:11",
            "6 catches Oops", "7 returns 42", "8 handles ResponderContractError",
        ]
        #expect(lines == once + once + ["handled\terror\tResponderContractError\t/a\t3 handleError test.lua:15\t/a/b"])
        #expect(f.hierarchy.engineCounts == (2, 1))
    }

    @Test func respondersOfEveryKindAndSwiftClosuresAreOneWalk() throws {
        let f = try Fixture(helpers + """
            local a = hier.root:child("a")
            local b = a:child("b")
            b:receiveEvent(function(e) print("lua 1") return "notHandled" end)
            b:transformEvent("Tap", function(e) print("transform") return {type = "Moved"} end)
            a:receiveEvent(function(e) print("lua 2 sees " .. e.type) return "notHandled" end)
            leaf = b
            """)
        var swiftSaw: [String] = []
        try f.hierarchy.makeNode(at: "/a").receiveEvent { value in
            swiftSaw.append(value.typeName ?? "?")
            return .handled
        }
        let lines = try f.output("show(twice(leaf, function() return {type = 'Tap'} end))")
        let once = ["lua 1", "transform", "lua 2 sees Moved"]
        #expect(Array(lines.dropLast()) == once + once)
        // The Swift closure is responder 2 of /a, named by its Swift call site.
        #expect(lines.last?.hasPrefix("handled\tevent\tMoved\t/a\t2 receiveEvent LuaHierarchyTests/EngineTests.swift:") == true)
        #expect(swiftSaw == ["Moved", "Moved"])
        #expect(f.hierarchy.engineCounts == (2, 1))
    }

    @Test func theChainIsTheOneSnapshottedAtTheStart() throws {
        let f = try Fixture(helpers + """
            local a = hier.root:child("a")
            local b = a:child("b")
            local elsewhere = hier.root:child("elsewhere")
            local later
            b:receiveEvent(function(e)
                if e.change then
                    print("b1 adds to a, removes a1, moves b away")
                    a:receiveEvent(function() print("added (not this time)") return "notHandled" end)
                    later:remove()
                    b:moveTo(elsewhere)
                end
                return "notHandled"
            end)
            b:receiveEvent(function() print("b2") return "notHandled" end)
            later = a:receiveEvent(function() print("a1 (removed)") return "notHandled" end)
            a:receiveEvent(function() print("a2") return "notHandled" end)
            leaf = b
            """)
        let lines = try f.output("""
            leaf:triggerEvent({type = "Tap"})
            show(leaf:triggerEvent({type = "Tap", change = true}))
            show(leaf:triggerEvent({type = "Tap"}))
            """)
        #expect(lines == [
            "b2", "a1 (removed)", "a2",
            // An outcome names the nodes as they were when its dispatch began.
            "b1 adds to a, removes a1, moves b away", "b2", "a2", "unhandled\tevent\tTap\t-\t-\t/a/b",
            "b2", "unhandled\tevent\tTap\t-\t-\t/elsewhere/b",
        ])
        // The plan was stale for the third dispatch, which made a new one.
        #expect(f.hierarchy.engineCounts == (3, 2))
    }

    @Test func limitsInsideTheWalkEndTheDispatchAndTheStateStaysUsable() throws {
        var options = Hierarchy.Options()
        options.limits.instructions = 5_000_000
        options.limits.memory = 16 << 20
        let f = try Fixture(helpers + """
            local a = hier.root:child("a")
            a:receiveEvent(function(e)
                if e.spin then while true do end end
                if e.grow then local t = {} for i = 1, 1e8 do t[i] = {i} end end
                if e.yield then coroutine.yield() end
                return "notHandled"
            end)
            leaf = a
            """, options: options)
        try f.lua("leaf:triggerEvent({type = 'Tap'})")
        // One chunk each: a chunk and the dispatches it makes share one instruction budget.
        // A tripped instruction limit ends the dispatch, then the chunk it shares the budget with.
        let spin = f.failure("leaf:triggerEvent({type = 'Tap', spin = true}) print('not reached')")
        #expect(spin?.type == "InstructionLimitExceeded")
        var lines: [String] = []
        // The yield from inside a coroutine: the walk's own C frames are what it cannot cross.
        for field in ["grow", "yield"] {
            lines += try f.output("""
                coroutine.wrap(function()
                    local o = leaf:triggerEvent({type = 'Tap', \(field) = true}) print(o.status, o.value.type, o.value.where)
                end)()
                """)
        }
        lines += try f.output("show(leaf:triggerEvent({type = 'Tap'}))")
        // A memory error names the place the count hook last saw, which may be sandbox code.
        #expect(lines.first?.hasPrefix("unhandled\tMemoryLimitExceeded\t") == true)
        #expect(Array(lines.dropFirst()) == [
            "unhandled\tResponderContractError\ttest.lua:10",
            "unhandled\tevent\tTap\t-\t-\t/a",
        ])
        #expect(f.hierarchy.engineCounts == (5, 1))
        #expect(f.presented.map(\.error.typeName) == ["InstructionLimitExceeded", "MemoryLimitExceeded", "ResponderContractError"])
        #expect(f.presented.first?.error["where"] == "test.lua:8")
    }

    @Test func nestedDispatchesRunTheSameWalkAndTheDepthLimitHolds() throws {
        let f = try Fixture(helpers + """
            local a = hier.root:child("a")
            local depth = 0
            a:receiveEvent(function(e)
                depth = depth + 1
                a:triggerEvent(e)
                return "handled"
            end)
            for round = 1, 2 do
                depth = 0
                print(a:triggerEvent({type = "Echo"}).status, depth)
            end
            """)
        #expect(f.printed == ["handled\t100", "handled\t100"])
        #expect(f.presented.map(\.error.typeName) == ["DispatchDepthExceeded", "DispatchDepthExceeded"])
        #expect(f.presented.last?.error["where"] == "test.lua:10")
        #expect(f.hierarchy.dispatcher.depth == 0)
        #expect(f.hierarchy.engineCounts == (200, 1))
    }

    @Test func aRaisedLuaErrorKeepsItsPlaceAndATracebackWithoutTheWalk() throws {
        let f = try Fixture(helpers + """
            local a = hier.root:child("a")
            a:receiveEvent(function(e) local x = nil; return x.field end)
            a:receiveError(function(e) print(e.where, e.message) print(e.traceback) return "handled" end)
            twice(a, function() return {type = "Tap"} end)
            """)
        #expect(f.printed.count == 4)
        #expect(f.printed[2] == "test.lua:7\tattempt to index a nil value (local 'x')")
        #expect(f.printed[3] == f.printed[1])
        #expect(!f.printed[3].contains("[C]: in ?"))
        #expect(!f.printed[3].contains("luahier"))
    }

    @Test func whatIsNotADispatchIsRefusedInLuasWords() throws {
        let f = try Fixture(helpers + """
            local a = hier.root:child("a")
            a:receiveEvent(function(e) return "notHandled" end)
            local err = {type = "Bad", message = "m"}
            a:reportError(err)
            a:triggerEvent({type = "Tap"})
            print(a:triggerEvent("Tap").status)
            print(pcall(function() return a:triggerEvent(err) end))
            print(pcall(function() return a:triggerEvent({type = 1}) end))
            print(pcall(function() return a:triggerEvent() end))
            print(a:triggerEvent({type = "Tap"}, "extra").status)
            print(pcall(function() return a.triggerEvent({}, {type = "Tap"}) end))
            print(pcall(function() return a:reportError(42) end))
            print(pcall(function() return a.reportError(hier.root:receiveEvent(function() end), "x") end))
            """)
        #expect(f.printed == [
            "unhandled",
            "false\ttest.lua:12: bad argument #1 to 'triggerEvent' (event expected, got an error (Bad))",
            "false\ttest.lua:13: bad argument #1 to 'triggerEvent' (event expected, got a table whose 'type' is a number (it must be a string))",
            "false\ttest.lua:14: bad argument #1 to 'triggerEvent' (event expected, got a no value)",
            "unhandled",
            "false\ttest.lua:16: bad argument #1 to 'triggerEvent' (node expected, got table)",
            "false\ttest.lua:17: bad argument #1 to 'reportError' (error expected, got a number)",
            "false\ttest.lua:18: calling 'reportError' on bad self (node expected)",
        ])
    }

    @Test func changingTheTraceLevelOrDeclaringTypesMakesThePlansStale() throws {
        let f = try Fixture(helpers + """
            local a = hier.root:child("a")
            a:receiveEvent(function(e) if e.trace then hier.tracing = "path" end return "notHandled" end)
            leaf = a
            """)
        let lines = try f.output("""
            leaf:triggerEvent({type = "Tap"})
            local o = leaf:triggerEvent({type = "Tap", trace = true})
            print(o.trace)
            print(#leaf:triggerEvent({type = "Tap"}).trace)
            hier.tracing = "off"
            leaf:triggerEvent({type = "Tap"})
            leaf:triggerEvent({type = "Tap"})
            hier.root:triggers{"Tap"}
            leaf:triggerEvent({type = "Tap"})
            """)
        // The tracing switched on during a dispatch does not trace that dispatch.
        #expect(lines == ["nil", "1"])
        // Made: at the start, for tracing, for tracing off, for the declaration.
        #expect(f.hierarchy.engineCounts == (6, 4))
    }

    @Test func pathTracesNameEveryStep() throws {
        let f = try Fixture(helpers + """
            hier.tracing = "path"
            local a = hier.root:child("a")
            local b = a:child("b")
            b:receiveEvent(function(e) return "notHandled" end)
            b:receiveEvent("Other", function(e) return "handled" end)
            a:receiveEvent(function(e)
                if e.swap then return {type = "Swapped"} end
                if e.stop then return "handled" end
                return "notHandled"
            end)
            a:receiveEvent(function(e) return "notHandled" end)
            function steps(o)
                local t = {}
                for i, s in ipairs(o.trace) do t[i] = s.node .. "#" .. s.index .. " " .. s.input .. " -> " .. s.result end
                local last = o.trace[#o.trace]
                t[#t] = t[#t] .. " (" .. last.kind .. " at " .. last.where .. ")"
                return o.status .. ": " .. table.concat(t, ", ")
            end
            for _, field in ipairs({"none", "stop", "swap"}) do
                print(steps(b:triggerEvent({type = "Tap", [field] = true})))
                print(steps(b:triggerEvent({type = "Tap", [field] = true})))
            end
            """)
        let unhandled = "unhandled: /a/b#1 Tap -> notHandled, /a#1 Tap -> notHandled, /a#2 Tap -> notHandled (receiveEvent at test.lua:16)"
        let stopped = "handled: /a/b#1 Tap -> notHandled, /a#1 Tap -> handled (receiveEvent at test.lua:11)"
        let swapped = "unhandled: /a/b#1 Tap -> notHandled, /a#1 Tap -> event Swapped, /a#2 Swapped -> notHandled (receiveEvent at test.lua:16)"
        #expect(f.printed == [unhandled, unhandled, stopped, stopped, swapped, swapped])
        #expect(f.hierarchy.engineCounts == (6, 1))
    }

    @Test func thePlansKeptAreBoundedAndKeptWhileTheTreeStandsStill() throws {
        let f = try Fixture(helpers + """
            count = 0
            hier.root:receiveEvent(function() count = count + 1 return "notHandled" end)
            nodes = {}
            for i = 1, 1500 do nodes[i] = hier.root:child("n" .. i) end
            for round = 1, 2 do
                for i = 1, 1500 do nodes[i]:triggerEvent({type = "Tap"}) end
            end
            print(count)
            """)
        #expect(f.printed == ["3000"])
        // The first 1,024 nodes got plans and kept them; the others made one per dispatch.
        #expect(f.hierarchy.bridgeEngine.keptPlans == LuaEngine.maxPlans)
        #expect(f.hierarchy.engineCounts.plans == 1500 + (1500 - LuaEngine.maxPlans))
        // A tree change makes them all stale: they go, and new ones are made as needed.
        #expect(try f.output("""
            hier.root:child("new")
            hier.root:receiveEvent(function() count = count + 1 return "handled" end)
            nodes[1500]:triggerEvent({type = "Tap"})
            print(nodes[1500]:triggerEvent({type = "Tap"}).status, count)
            """) == ["handled\t3004"])
        #expect(f.hierarchy.bridgeEngine.keptPlans == 1)
    }

    @Test func eachDispatchIsChargedToTheInstructionBudget() throws {
        var options = Hierarchy.Options()
        options.limits.instructions = 100_000
        let f = try Fixture(options: options)
        let error = f.failure("""
            local a = hier.root:child("a")
            a:receiveEvent(function() return "notHandled" end)
            local ev = {type = "Tap"}
            for i = 1, 1e6 do a:triggerEvent(ev) end
            """)
        #expect(error?.type == "InstructionLimitExceeded")
        #expect(f.hierarchy.engineCounts.dispatches > 100)
        // Each costs the host's work (200), not only its Lua instructions (a few dozen).
        #expect(f.hierarchy.engineCounts.dispatches < 1_000)
    }

    /// The generated chains of DispatchFuzzTests, started with an event from Lua, twice: the
    /// first makes the plan, the second goes along it. Both must match the reference model.
    @Test func randomChainsFromLuaMatchTheReferenceModel() throws {
        for seed in DispatchFuzzTests.firstSeed..<(DispatchFuzzTests.firstSeed + UInt64(DispatchFuzzTests.caseCount)) {
            var random = SplitMix64(state: seed)
            let chain = DispatchFuzzTests.generateChain(&random)
            let type = DispatchFuzzTests.types.randomElement(using: &random)!
            let expected = ReferenceModel.run(chain, start: (.event, type))
            let f = try Fixture()
            try DispatchFuzzTests.register(chain, in: f)
            let lines = try f.output("""
                local node = hier.node('\(chain[0].path)')
                for round = 1, 2 do
                    local o = node:triggerEvent({type = '\(type)'})
                    local r = o.responder
                    print(o.status, o.kind, o.value.type, o.by or "-", r and r.index or "-")
                end
                """)
            let line = "\(expected.status)\t\(expected.kind)\t\(expected.type)\t\(expected.by ?? "-")\t\(expected.index.map(String.init) ?? "-")"
            #expect(lines == [line, line], "seed \(seed)")
            #expect(f.hierarchy.engineCounts.plans == 1, "seed \(seed): the second went along the kept plan")
            if lines != [line, line] { break }
        }
    }
}
