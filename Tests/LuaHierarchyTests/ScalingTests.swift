#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import LuaHierarchy

/// The complexity audit's test (docs/limits.md, "What each host entry costs"): each host
/// entry runs at size n and at 8n, and the deterministic work it did (Lua instructions, host
/// work charged, bytes allocated: `Hierarchy.workDone`) must grow at most as n log n does,
/// never as n². No clock is read. CI runs the sizes below; `LUAHIER_SCALING_FACTOR=8` runs
/// them 8 times larger (tools/scaling.sh also counts whole-process instructions with
/// callgrind, which sees host work that is not charged too).
@Suite struct ScalingTests {
    /// A host entry and a script that uses it at size `N` (the script reads the global `N`).
    struct Entry: CustomTestStringConvertible, Sendable {
        let name: String
        let script: String
        let size: Int
        var testDescription: String { name }
    }

    static let factor = Int(ProcessInfoEnvironment.value("LUAHIER_SCALING_FACTOR") ?? "") ?? 1

    static let entries: [Entry] = [
        Entry(name: "triggerEvent from depth N", script: """
            local node = hier.root
            for i = 1, N do node = node:child("n") end
            hier.root:receiveEvent(function() return "notHandled" end)
            node:triggerEvent("Ping")
            """, size: 2_000),
        Entry(name: "reportError through a node declaring N types, strict safety", script: """
            hier.safety = "strict"
            local node = hier.root:child("a")
            local types = {}
            for i = 1, N do types[i] = "E" .. i end
            if N > 0 then node:triggers(types); node:reports(types) end
            local leaf = node:child("b")
            hier.root:receiveError(function() return "handled" end)
            for i = 1, 10 do leaf:reportError({type = "Undeclared", message = "m"}) end
            """, size: 1_000),
        Entry(name: "relaxed safety: N undeclared types warned at a declaring node", script: """
            local node = hier.root:child("a")
            node:triggers{"Declared"}
            local leaf = node:child("b")
            for i = 1, N do leaf:triggerEvent("Undeclared" .. i) end
            """, size: 500),
        Entry(name: "traced dispatch (path) through N responders", script: """
            hier.tracing = "path"
            local node = hier.root:child("a")
            for i = 1, N do node:receiveEvent(function() return "notHandled" end) end
            local o = node:triggerEvent("Ping")
            local steps = #o.trace
            """, size: 1_000),
        Entry(name: "traced dispatch (full) through N replacing responders", script: """
            hier.tracing = "full"
            local node = hier.root:child("a")
            for i = 1, N do node:transformEvent(function(e) return {type = "Ping", n = i} end) end
            local o = node:triggerEvent("Ping")
            local steps = #o.trace
            """, size: 500),
        Entry(name: "print with N arguments", script: """
            local t = {}
            for i = 1, N do t[i] = i end
            print(table.unpack(t))
            """, size: 5_000),
        Entry(name: "hier.node of a path N deep", script: """
            local node = hier.root
            for i = 1, N do node = node:child("n") end
            local path = node.path
            for i = 1, 10 do assert(hier.node(path) == node) end
            """, size: 2_000),
        Entry(name: "moveTo under a node N deep (the cycle check)", script: """
            local node = hier.root
            for i = 1, N do node = node:child("n") end
            local leaf = hier.root:child("leaf")
            for i = 1, 10 do leaf:moveTo(node); leaf:moveTo(hier.root) end
            """, size: 2_000),
        Entry(name: "publish to N subscribers", script: """
            local parent = hier.root:child("p")
            for i = 1, N do parent:child("c" .. i):subscribe("Tick", function() end) end
            parent:publish("Tick", {to = "all"})
            """, size: 1_000),
        Entry(name: "outcome value of N keys", script: """
            hier.root:receiveEvent(function(e)
              local t = {type = "Big"}
              for i = 1, N do t["k" .. i] = i end
              return t
            end)
            local o = hier.root:triggerEvent("Ping")
            local n = 0
            for k in pairs(o.value) do n = n + 1 end
            """, size: 2_000),
        Entry(name: "table.concat and table.sort of N elements", script: """
            local t = {}
            for i = 1, N do t[i] = tostring(N - i) end
            table.sort(t)
            local s = table.concat(t, ",")
            """, size: 2_000),
        Entry(name: "N responders registered on one node, then removed newest first", script: """
            local handles = {}
            for i = 1, N do handles[i] = hier.root:receiveEvent(function() return "notHandled" end) end
            hier.root:triggerEvent("Ping")
            for i = N, 1, -1 do handles[i]:remove() end
            """, size: 2_000),
        Entry(name: "load of a chunk of N statements", script: """
            local parts = {}
            for i = 1, N do parts[i] = "x" .. (i % 150) .. " = " .. i end
            assert(load(table.concat(parts, "\\n")))
            """, size: 2_000),
    ]

    /// The work `script` does at size `n`, less what the same hierarchy does at size 0.
    static func work(_ script: String, size n: Int) throws -> (units: Int, bytes: Int) {
        func measure(_ n: Int) throws -> (units: Int, bytes: Int) {
            var options = Hierarchy.Options()
            // An instruction budget installs the count hook, so Lua's instructions are counted.
            options.limits = Limits(instructions: 1 << 50, time: nil, memory: 1 << 30)
            let hierarchy = try Hierarchy(options: options)
            hierarchy.output = { _ in }
            hierarchy.presenter = { _ in }
            hierarchy.onSafetyWarning = { _ in }
            let before = hierarchy.workDone
            try hierarchy.run(source: "local N = \(n)\n" + script, chunkName: "scaling.lua")
            let after = hierarchy.workDone
            return (after.units - before.units, after.bytes - before.bytes)
        }
        let base = try measure(0)
        let sized = try measure(n)
        return (max(1, sized.units - base.units), max(1, sized.bytes - base.bytes))
    }

    /// At most n log n: 8 times the size may cost 8 × log2(8n)/log2(n) times the work, and a
    /// margin for the hash tables' and arrays' doubling. n² would be 64 times.
    static func bound(_ n: Int) -> Double {
        8 * log2(Double(8 * n)) / log2(Double(n)) * 1.6
    }

    @Test(arguments: entries)
    func growsNoFasterThanNLogN(_ entry: Entry) throws {
        let n = entry.size * Self.factor
        let small = try Self.work(entry.script, size: n)
        let large = try Self.work(entry.script, size: 8 * n)
        let bound = Self.bound(n)
        let unitRatio = Double(large.units) / Double(small.units)
        let byteRatio = Double(large.bytes) / Double(small.bytes)
        #expect(
            unitRatio <= bound,
            "\(entry.name): work grew \(unitRatio)x from n = \(n) to \(8 * n) (\(small.units) -> \(large.units) units; at most \(bound)x)")
        #expect(
            byteRatio <= bound,
            "\(entry.name): allocation grew \(byteRatio)x from n = \(n) to \(8 * n) (\(small.bytes) -> \(large.bytes) bytes; at most \(bound)x)")
    }

    /// Making a plan is the dispatch's own work, charged as it goes: a dispatch whose budget
    /// runs out while its plan is made ends with the limit's error (never a plain
    /// `unhandled`), its caller goes on, and the plan cut short is not kept.
    @Test func aPlanThatRunsOutOfItsDispatchsBudgetEndsThatDispatch() throws {
        var options = Hierarchy.Options()
        options.limits = Limits(instructions: nil, time: 30, memory: 256 << 20, dispatchInstructions: 2_000, dispatchTime: nil)
        let fixture = try Fixture(options: options)
        let output = try fixture.output("""
            local node = hier.root
            for i = 1, 50000 do node = node:child("n") end
            hier.root:handleEvent(function() end)
            for i = 1, 2 do
              local o = node:triggerEvent("Ping")
              print(o.status, o.value.type)
            end
            print(hier.root:child("shallow"):triggerEvent("Ping").status)
            """)
        #expect(output == ["unhandled\tInstructionLimitExceeded", "unhandled\tInstructionLimitExceeded", "handled"])
    }

    /// Removing a node's responders oldest first moves the rest each time: the square of
    /// their number, charged as host work, so an instruction budget stops it as it goes (it
    /// ran 17.7 s past a budget of 1,000,000 for 40,000 removals).
    @Test func removingManyRespondersOldestFirstIsChargedAsItGoes() throws {
        var options = Hierarchy.Options()
        options.limits = Limits(instructions: 3_000_000, time: nil, memory: 256 << 20)
        let fixture = try Fixture(options: options)
        let failure = fixture.failure("""
            local a, handles = hier.root:child("a"), {}
            local f = function() end
            for i = 1, 40000 do handles[i] = a:receiveEvent(f) end
            for i = 1, 40000 do handles[i]:remove() end
            print("never")
            """)
        #expect(failure?.type == "InstructionLimitExceeded")
        #expect(fixture.printed.isEmpty)
    }

    /// A deep chain with a responder on every node names every node's path in its plan: paths
    /// whose sizes add up to the square of the depth. That is charged to the memory cap: the
    /// dispatch ends with MemoryLimitExceeded instead of building them.
    @Test func plansOfDeepChainsWithRespondersEverywhereAreChargedToTheCap() throws {
        var options = Hierarchy.Options()
        options.limits = Limits(instructions: nil, time: 10, memory: 32 << 20)
        let fixture = try Fixture(options: options)
        let output = try fixture.output("""
            local node = hier.root
            for i = 1, 6000 do node = node:child("node"); node:receiveEvent(function() return "notHandled" end) end
            local o = node:triggerEvent("Ping")
            print(o.status, o.value.type)
            """)
        #expect(output == ["unhandled\tMemoryLimitExceeded"])
        // The state is usable afterwards, and a shallow dispatch is answered.
        #expect(try fixture.output("print(hier.root:triggerEvent('Ping').status)") == ["unhandled"])
    }
}

/// The environment, read without Foundation (the test target does not need it otherwise).
enum ProcessInfoEnvironment {
    static func value(_ name: String) -> String? {
        guard let raw = getenv(name) else { return nil }
        return String(cString: raw)
    }
}
