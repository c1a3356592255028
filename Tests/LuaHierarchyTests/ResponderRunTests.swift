import Testing
@testable import LuaHierarchy

/// Consecutive Lua `receive*` responders are called as one run from C (ResponderRun.swift).
/// Every rule must hold inside a run exactly as it does one call at a time.
@Suite("Runs of Lua responders")
struct ResponderRunTests {
    /// 40 nodes (more than one run holds), each with a receiveEvent that logs and passes.
    private let longChain = """
        local log = {}
        local node = hier.root
        for i = 1, 40 do
            node = node:child("n" .. i)
            local here = i
            node:receiveEvent(function(e) log[#log + 1] = here return "notHandled" end)
        end
        leaf = node
        function logged() local text = table.concat(log, ",") log = {} return text end
        """

    @Test func aStretchLongerThanOneRunIsCalledInOrderAndTraced() throws {
        let f = try Fixture(longChain)
        let expected = (1...40).reversed().map(String.init).joined(separator: ",")
        #expect(try f.output("local o = leaf:triggerEvent('Tap') print(o.status, logged())") == ["unhandled\t" + expected])
        f.hierarchy.traceLevel = .path
        let outcome = try f.hierarchy.trigger("Tap", at: "/n1")
        #expect(outcome.trace?.count == 1)
        let deep = try f.hierarchy.trigger("Tap", at: "/" + (1...40).map { "n\($0)" }.joined(separator: "/"))
        #expect(deep.trace?.count == 40)
        #expect(deep.trace?.allSatisfy { $0.result == .notHandled } == true)
        #expect(deep.trace?.first?.node.hasSuffix("/n40") == true)
        #expect(deep.trace?.last?.node == "/n1")
    }

    @Test func aResponderRemovedByAnEarlierOneInTheSameRunIsNotCalled() throws {
        let f = try Fixture("""
            local a = hier.root:child("a")
            local b = a:child("b")
            local later, sameNode
            b:receiveEvent(function() print("b1 removes b3 and a1") sameNode:remove() later:remove() return "notHandled" end)
            b:receiveEvent(function() print("b2") return "notHandled" end)
            sameNode = b:receiveEvent(function() print("b3 (removed)") return "notHandled" end)
            later = a:receiveEvent(function() print("a1 (removed)") return "notHandled" end)
            a:receiveEvent(function() print("a2") return "handled" end)
            print(b:triggerEvent("Tap").by)
            """)
        #expect(f.printed == ["b1 removes b3 and a1", "b2", "a2", "/a"])
    }

    @Test func answersInTheMiddleOfARunFollowTheRules() throws {
        let f = try Fixture("""
            local a = hier.root:child("a")
            local b = a:child("b")
            b:receiveEvent(function(e) print("1 sees " .. e.type) return "notHandled" end)
            b:receiveEvent(function(e) print("2 replaces") return {type = "Swapped"} end)
            b:receiveEvent(function(e) print("3 sees " .. e.type) return "notHandled" end)
            b:receiveEvent(function(e) print("4 raises") error({type = "Oops", message = "m"}) end)
            b:receiveEvent(function(e) print("5 (an event responder: skipped for the error)") return "notHandled" end)
            b:receiveError(function(e) print("6 sees " .. e.type .. " from " .. e.where) return "notHandled" end)
            b:receiveError(function(e) print("7 handles") return "handled" end)
            a:receiveError(function(e) print("never") return "handled" end)
            local o = b:triggerEvent("Tap")
            print(o.status, o.kind, o.by, o.responder.index)
            """)
        #expect(f.printed == [
            "1 sees Tap", "2 replaces", "3 sees Swapped", "4 raises", "6 sees Oops from test.lua:6", "7 handles",
            "handled\terror\t/a/b\t7",
        ])
    }

    @Test func aLuaErrorInARunHasNoHostFrameInItsTraceback() throws {
        let f = try Fixture("""
            local b = hier.root:child("a"):child("b")
            b:receiveEvent(function() return "notHandled" end)
            b:receiveEvent(function(e) return e.missing.field end)
            b:receiveError(function(e) print(e.where) print(e.traceback) return "handled" end)
            b:triggerEvent("Tap")
            """)
        #expect(f.printed.first == "test.lua:3")
        let traceback = try #require(f.printed.last)
        #expect(traceback.hasPrefix("stack traceback:\n\ttest.lua:3: in function <test.lua:3>"))
        #expect(!traceback.contains("[C]: in ?"))
        #expect(traceback.contains("[C]: in method 'triggerEvent'"))
    }

    @Test func limitsAndYieldsInARun() throws {
        var options = Hierarchy.Options()
        options.limits = Limits(instructions: 100_000, time: 5, memory: 16 << 20, dispatchInstructions: 100_000)
        let f = try Fixture(options: options)
        try f.lua("""
            local b = hier.root:child("b")
            b:receiveEvent("Spin", function() return "notHandled" end)
            b:receiveEvent("Spin", function() while true do end end)
            b:receiveEvent("Yield", function() return "notHandled" end)
            b:receiveEvent("Yield", function() coroutine.yield() end)
            b:receiveError(function(e) print(e.type .. " at " .. e.where) return "handled" end)
            """)
        let spin = try f.hierarchy.trigger("Spin", at: "/b")
        #expect(spin.status == .unhandled)
        #expect(spin.value["type"] == "InstructionLimitExceeded")
        #expect(spin.value["where"] == "test.lua:3")
        // A yield inside a coroutine that dispatched: the host's contract error, as for a
        // responder called alone (outside a coroutine it is Lua's own error).
        #expect(try f.output("""
            coroutine.wrap(function() print(hier.node("/b"):triggerEvent("Yield").status) end)()
            print(hier.node("/b"):triggerEvent("Yield").status)
            """) == ["ResponderContractError at test.lua:5", "handled", "LuaError at test.lua:5", "handled"])
    }
}

@Suite("Lazy traces")
struct LazyTraceTests {
    @Test func aTraceIsBuiltOnFirstReadOnceAndSurvivesCollections() throws {
        let f = try Fixture("""
            hier.tracing = true
            local n = hier.root:child("a"):child("b")
            n:receiveEvent(function() return "notHandled" end)
            hier.node("/a"):receiveEvent(function() return "handled" end)
            kept = n:triggerEvent("Tap")
            print(rawget(kept, "trace"))
            for i = 1, 200 do n:triggerEvent("Tap") end
            fullgc()
            local trace = kept.trace
            print(#trace, trace[1].node, trace[1].result, trace[2].node, trace[2].result)
            print(rawequal(kept.trace, trace), rawget(kept, "trace") == trace, kept.nothing)
            hier.tracing = false
            print(n:triggerEvent("Tap").trace, getmetatable(n:triggerEvent("Tap")))
            """)
        // Untraced outcomes have no trace, and their metatable is the locked placeholder too.
        #expect(f.printed == ["nil", "2\t/a/b\tnotHandled\t/a\thandled", "true\ttrue\tnil", "nil\toutcome"])
    }
}
