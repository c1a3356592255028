import Foundation
import Testing
@testable import LuaHierarchy

@_silgen_name("malloc_usable_size") private func mallocUsableSize(_ pointer: UnsafeMutableRawPointer?) -> Int

/// contract §7: one memory cap for everything held on a script's behalf. The host's own copies
/// (node names, cached paths, registrations, traces, the strings a host function copies while
/// it runs) are counted with the Lua heap, refused past the cap with `MemoryLimitExceeded`
/// naming the script's line, and given back when they go, so the count never drifts.
@Suite("Host memory (contract §7)")
struct HostMemoryTests {
    static let cap = 8 << 20

    /// No clock: the memory cap must be what ends an attack, however slowly the machine runs
    /// it (the instruction budget only ends a runaway).
    static func fixture(memory: Int = cap) throws -> Fixture {
        var options = Hierarchy.Options()
        options.limits = Limits(instructions: 200_000_000, time: nil, memory: memory, dispatchTime: nil)
        return try Fixture(options: options)
    }

    /// What the state holds once everything the scripts made is dropped and collected.
    static func settled(_ f: Fixture) -> Int {
        for child in f.hierarchy.root.children { child.remove() }
        f.hierarchy.collectGarbage()
        f.hierarchy.collectGarbage()
        return f.hierarchy.luaMemory.used
    }

    /// Runs `attack` (twice): it must fail with `MemoryLimitExceeded` at `line` of test.lua,
    /// never hold more than the cap, give everything back once what it made is dropped (the
    /// count returns to where it was, and the same after a second run: no drift), and leave
    /// the hierarchy usable.
    func expectRefused(_ attack: String, line: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let f = try Self.fixture()
        let before = Self.settled(f)
        var afterEach: [Int] = []
        for _ in 0..<3 {
            let error = LargeStack.run { f.failure(attack, sourceLocation: sourceLocation) }
            #expect(error?.type == "MemoryLimitExceeded", "\(error.map(String.init(describing:)) ?? "no error")", sourceLocation: sourceLocation)
            #expect(error?.location == "test.lua:\(line)", "\(error.map(String.init(describing:)) ?? "no error")", sourceLocation: sourceLocation)
            #expect(f.hierarchy.luaMemory.peak <= Self.cap + (1 << 20), sourceLocation: sourceLocation)
            afterEach.append(Self.settled(f))
        }
        // Lua's own tables (the registry, the string table, the weak node cache) keep the size
        // they grew to the first time; after that, each run gives back what it took, give or
        // take the few KiB those tables vary by with the collector's timing (each attack made
        // thousands of charged objects: drift would be megabytes). Blocks over 256 KiB are
        // mapped (LuaHost fixes glibc's mmap threshold) and counted to the page.
        #expect(afterEach[0] - before < 2 << 20, "held \(afterEach[0] - before) bytes more after the attack", sourceLocation: sourceLocation)
        // Runs differ by at most one doubling of a Lua table (the registry's references grow
        // when a run gets further before the cap: up to 512 KiB, mapped); a host copy that was
        // never given back would drift by megabytes (each attack charges thousands of objects).
        #expect(abs(afterEach[2] - afterEach[1]) < 1 << 20, "drift: \(before), then \(afterEach)", sourceLocation: sourceLocation)
        // Still usable: Swift and Lua dispatches work.
        let node = try f.hierarchy.makeNode(at: "/after/check")
        node.handleEvent { _ in }
        #expect(try f.hierarchy.trigger("Check", at: node).status == .handled, sourceLocation: sourceLocation)
        #expect(try f.output("print(hier.node('/after/check'):triggerEvent('Lua').status)") == ["handled"], sourceLocation: sourceLocation)
    }

    /// The allocator keeps freed small blocks for the state's next requests (limits.c): the
    /// count stays what malloc holds for the script, through every size class and every
    /// growth and shrink between them, and a script that made and dropped millions of blocks
    /// leaves it where it was.
    @Test func smallBlockReuseKeepsTheCountExact() throws {
        let f = try Self.fixture()
        let before = Self.settled(f)
        var afterEach: [Int] = []
        for _ in 0..<3 {
            _ = try f.output("""
                for round = 1, 10 do
                  local keep = {}
                  for i = 1, 20000 do
                    keep[i % 500 + 1] = ("x"):rep(i % 300) .. i
                    local t = {}
                    for k = 1, i % 12 do t[k] = k; t["k" .. k] = k end
                  end
                end
                """)
            afterEach.append(Self.settled(f))
        }
        // Each run made about 3 million blocks: a count off by a byte a block would be
        // megabytes. What is left is Lua's own tables settling (the string table's size).
        #expect(afterEach[0] - before < 64 << 10, "held \(afterEach[0] - before) bytes more")
        #expect(abs(afterEach[2] - afterEach[1]) < 16 << 10, "drift: \(before), then \(afterEach)")
    }

    @Test func longNodeNames() throws {
        try expectRefused("""
            local s = ("x"):rep(1e6)
            for i = 1, 100 do
              hier.root:child("long"):child(s .. i)
            end
            """, line: 3)
    }

    @Test func manyNodes() throws {
        try expectRefused("""
            local n = hier.root
            for i = 1, 4e6 do n = n:child("n" .. i) end
            """, line: 2)
    }

    @Test func manyWideNodes() throws {
        try expectRefused("""
            local wide = hier.root:child("wide")
            for i = 1, 4e6 do wide:child("n" .. i) end
            """, line: 2)
    }

    @Test func manyResponders() throws {
        try expectRefused("""
            local n = hier.root:child("r")
            for i = 1, 3e6 do n:receiveEvent(function() return "notHandled" end) end
            """, line: 2)
    }

    @Test func manySubscriptionsAndAlertHandlers() throws {
        try expectRefused("""
            local n = hier.root:child("s")
            for i = 1, 3e6 do n:subscribe({"A", "B", "C"}, function() end) n:handleAlertErrors() end
            """, line: 2)
    }

    @Test func manyDeclaredTypes() throws {
        try expectRefused("""
            local n = hier.root:child("d")
            for i = 1, 3e6 do n:triggers{"Type" .. i .. ("x"):rep(100)} end
            """, line: 2)
    }

    @Test func cachedPathsOfADeepChain() throws {
        // Each node keeps its path: a chain of long names makes paths that grow with depth.
        try expectRefused("""
            local n, names = hier.root, ("y"):rep(2000)
            for i = 1, 1000 do n = n:child(names .. i) local p = n.path end
            """, line: 2)
    }

    @Test func fullTraceOfLargeReplacements() throws {
        // Every replacing responder returns a new event with a new 500 KB string: a full trace
        // keeps each of them, before and after.
        try expectRefused("""
            hier.tracing = "full"
            local big = ("x"):rep(5e5)
            local n = hier.root:child("t")
            for i = 1, 100 do n:receiveEvent(function(e) return {type = "Big", data = big .. i, i = i} end) end
            local o = n:triggerEvent({type = "Big", data = big})
            assert(o.status == "unhandled" and o.value.type == "MemoryLimitExceeded", o.status)
            error(o.value)
            """, line: 4)
    }

    @Test func pathTracesKeptByOutcomes() throws {
        // Each outcome keeps its trace (until the script reads it): the traces count. Each value
        // has a type of its own, so no two dispatches share a kept record (walk.lua).
        try expectRefused("""
            hier.tracing = true
            local n = hier.root:child(("p"):rep(100))
            for i = 1, 2000 do n:receiveEvent(function() return "notHandled" end) end
            local kept = {}
            for i = 1, 1e6 do
              local o = n:triggerEvent(("T"):rep(100) .. i)
              if o.value.type == "MemoryLimitExceeded" then error(o.value) end
              kept[i] = o
            end
            """, line: 6)
    }

    @Test func oneHugeArgument() throws {
        // The copy of a string argument is charged while the host function runs.
        try expectRefused("""
            local s = ("x"):rep(3e6)
            local p = "/" .. s
            return hier.node(p)
            """, line: 3)
        try expectRefused("""
            local s = ("x"):rep(3e6)
            for i = 1, 10 do print(s .. i) end
            """, line: 2)
    }

    @Test func pathOfManyShortNames() throws {
        // "/a/a/a...": each name costs an array slot or two, far more than its byte.
        try expectRefused("""
            local p = ("/a"):rep(5e5)
            return hier.node(p)
            """, line: 2)
    }

    @Test func argumentCopiesAreGivenBackWhenTheCallReturns() throws {
        let f = try Self.fixture()
        let before = Self.settled(f)
        // 1 MB paths, 20 times (each call holds 2 MB of copies): each fits, and is given back
        // before the next.
        #expect(try f.output("""
            local s = "/" .. ("x"):rep(1e6)
            local found = 0
            for i = 1, 20 do if hier.node(s) == nil then found = found + 1 end end
            hier.root:child(("z"):rep(1e6))
            print(found)
            """) == ["20"])
        #expect(f.hierarchy.luaMemory.peak < Self.cap)
        #expect(Self.settled(f) - before < 64 << 10)
    }

    @Test func nodesGiveTheirBytesBack() throws {
        let f = try Self.fixture(memory: 64 << 20)
        let before = Self.settled(f)
        try f.lua("""
            local name = ("n"):rep(1000)
            local top = hier.root:child("top")
            for i = 1, 1000 do top:child(name .. i) end
            """)
        f.hierarchy.collectGarbage()
        let held = f.hierarchy.luaMemory.used - before
        // At least the names and the node objects are counted.
        #expect(held >= 1000 * (1000 + 136), "held \(held)")
        f.hierarchy.root.children[0].children[0].remove()
        f.hierarchy.collectGarbage()
        #expect(f.hierarchy.luaMemory.used < before + held - 1000, "one removed node gives its bytes back")
        #expect(Self.settled(f) - before < 16 << 10)
    }

    @Test func swiftMadeNodesAreCharged() throws {
        let f = try Self.fixture()
        let before = Self.settled(f)
        let name = String(repeating: "s", count: 10_000)
        var made = 0
        var refusal: TreeError?
        do {
            for i in 0..<10_000 {
                _ = try f.hierarchy.makeNode(at: "/swift/\(name)\(i)")
                made += 1
            }
        } catch {
            refusal = error
        }
        #expect(made > 100 && made < 1000, "made \(made)")
        guard case .memoryLimitExceeded(let limit)? = refusal else {
            Issue.record("expected a memory refusal, got \(String(describing: refusal))")
            return
        }
        #expect(limit == Self.cap)
        #expect(refusal!.description.contains("MemoryLimitExceeded"))
        #expect(f.hierarchy.luaMemory.used <= Self.cap)
        // A script cannot add to it either, and then everything goes back.
        #expect(f.failure("hier.root:child(('q'):rep(1e5))")?.type == "MemoryLimitExceeded")
        #expect(Self.settled(f) - before < 16 << 10)
        _ = try f.hierarchy.makeNode(at: "/swift/again")
    }

    @Test func nodesMayOutliveTheHost() throws {
        var kept: Node?
        var responderNode: Node?
        do {
            let f = try Self.fixture()
            try f.lua("hier.root:child('a'):child(('k'):rep(100)):receiveEvent(function() return 'handled' end)")
            kept = try f.hierarchy.makeNode(at: "/b/" + String(repeating: "c", count: 1000))
            responderNode = try f.hierarchy.node(at: "/a/" + String(repeating: "k", count: 100))
            _ = kept?.path
        }
        // The hierarchy and its host are gone: releasing what they charged does nothing.
        #expect(kept?.path.hasSuffix("ccc") == true)
        #expect(responderNode?.responders.count == 1)
        kept = nil
        responderNode = nil
    }

    @Test func aFullTraceSharesTheStringsItCopies() throws {
        // 100 replacements holding the same 500 KB string: the trace's copies share it, so the
        // dispatch fits under the cap, and reading the trace from Lua copies nothing more. From
        // Swift, its values become Swift copies within what the cap leaves, the rest left out.
        let f = try Self.fixture()
        try f.lua("""
            hier.tracing = "full"
            big = ("x"):rep(5e5)
            local n = hier.root:child("t")
            for i = 1, 100 do n:receiveEvent(function(e) return {type = "Big", data = big, i = i} end) end
            local o = n:triggerEvent({type = "Big", data = big})
            assert(o.status == "unhandled" and o.value.type == "Big", o.value.type)
            assert(#o.trace == 100 and o.trace[100].after.data == big and o.trace[1].before.data == big)
            """)
        #expect(f.hierarchy.luaMemory.peak <= Self.cap + (1 << 20))
        let outcome = try LargeStack.run { Result { try f.hierarchy.trigger("Big", at: "/t") } }.get()
        #expect(outcome.value["type"] == "Big")
        let steps = outcome.trace ?? []
        #expect(steps.count == 100)
        let withValues = steps.filter { $0.after != nil }.count
        #expect(withValues > 0 && withValues < 100, "\(withValues) steps kept their values")
        #expect(f.hierarchy.luaMemory.peak <= Self.cap + (1 << 20))
    }

    @Test func aTraceRefusedInASwiftDispatchEndsItAtTheLimit() throws {
        var options = Hierarchy.Options()
        options.limits = Limits(instructions: 200_000_000, time: nil, memory: Self.cap, dispatchTime: nil)   // as `fixture`
        options.traceLevel = .full
        let f = try Fixture(options: options)
        try f.lua("""
            local big = ("x"):rep(5e5)
            local n = hier.root:child("t")
            for i = 1, 100 do n:receiveEvent(function(e) return {type = "Big", data = big .. i, i = i} end) end
            """)
        let outcome = try LargeStack.run { Result { try f.hierarchy.trigger("Big", at: "/t") } }.get()
        #expect(outcome.status == .unhandled)
        #expect(outcome.value["type"] == "MemoryLimitExceeded")
        let steps = outcome.trace ?? []
        #expect(!steps.isEmpty && steps.count < 100)
        #expect(f.hierarchy.luaMemory.peak <= Self.cap + (1 << 20))
        #expect(f.presented.map { $0.error["type"] } == ["MemoryLimitExceeded"])
        // The next dispatch has its own budget (and its trace may be refused again, not more).
        f.hierarchy.traceLevel = .path
        #expect(try f.hierarchy.trigger("Small", at: "/t").value["type"] == "Big")
    }

    /// The fixed costs in `MemoryCost` are at least what malloc holds for these objects.
    @Test func fixedCostsCoverTheObjects() throws {
        let f = try Fixture()
        func size(_ object: AnyObject) -> Int { mallocUsableSize(Unmanaged.passUnretained(object).toOpaque()) }
        try f.lua("""
            local n = hier.root:child('b')
            n:receiveEvent(function() return 'handled' end)
            n:subscribe('X', function() end)
            n:handleAlertErrors()
            n:triggers{'X'}
            """)
        let node = try #require(try f.hierarchy.node(at: "/b"))
        let responder = node.responders[0]
        #expect(size(node) + size(node.extras!) + 64 <= MemoryCost.node)
        #expect(size(responder) + size(responder.body) + 24 <= MemoryCost.registration)
        #expect(size(node.subscriptions[0]) + size(node.subscriptions[0].body) + 24 <= MemoryCost.registration)
        #expect(size(node.responders[1]) + size(node.responders[1].body) + 24 <= MemoryCost.registration)
        #expect(MemoryLayout<TraceStep>.stride * 3 <= MemoryCost.traceStep)
        func heapSize(_ text: String) -> Int {
            var text = text
            return text.withUTF8 { mallocUsableSize(UnsafeMutableRawPointer(mutating: $0.baseAddress!) - 32) }
        }
        for count in [16, 17, 31, 47, 63, 100, 1000, 4095, 100_000, 1_000_000, 10_000_000] {
            // As the host makes its copies: decoded from Lua's bytes, and paths joined from names.
            let text = String(decoding: [UInt8](repeating: 0x61, count: count), as: UTF8.self)
            #expect(heapSize(text) <= MemoryCost.string(text), "\(count) bytes: \(heapSize(text))")
        }
        var deep = f.hierarchy.root
        for depth in 1...300 { deep = try deep.child(String(repeating: "p", count: depth)) }
        var chain: Node? = deep
        while let node = chain, !node.isRoot {
            // (Paths of up to 15 bytes are held inline, in no heap block.)
            if node.path.utf8.count > 15 {
                #expect(heapSize(node.path) <= MemoryCost.string(node.path), "\(node.path.utf8.count) bytes: \(heapSize(node.path))")
            }
            chain = node.parent
        }
    }
}
