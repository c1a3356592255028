import Foundation
import Testing
@testable import LuaHierarchy

/// Hostile scripts generated from the classes of the sandbox-and-limits issue (contract §7): an
/// attack (a runaway loop, a memory bomb, long host work, a change to the standard library, a
/// reach for what the sandbox leaves out, a finalizer, deep recursion, a dispatch storm), run
/// through a way of catching errors (none, pcall, xpcall, coroutines, __close, load), in a
/// place (the chunk, a responder, an error responder, a publish subscriber, a nested
/// dispatch). Every case must end in bounded time with a contained result, and leave the
/// state as it was: the standard library intact, a dispatch working, the Lua stack empty, the
/// memory within the cap.
///
/// CI runs a short slice; `tools/fuzz.sh` runs more (`HOSTILE_CASES`, `HOSTILE_SEED`).
@Suite("Hostile script fuzz (contract §7)")
struct HostileFuzzTests {
    static let limitTypes: Set<String> = ["InstructionLimitExceeded", "TimeLimitExceeded", "MemoryLimitExceeded"]

    /// An attack, as Lua statements, and what it may end in when nothing catches it.
    struct Attack {
        var name: String
        var source: String
        var ends: Set<String>
    }

    static let attacks: [Attack] = [
        .init(name: "loop", source: "while true do end", ends: limitTypes),
        .init(name: "memory bomb", source: "local t = {} for i = 1, 1e9 do t[i] = {i} end", ends: limitTypes),
        .init(name: "string doubling", source: "local s = 'x' while true do s = s .. s end", ends: limitTypes),
        .init(name: "sorting forever", source: "local t = {} for i = 1, 2e5 do t[i] = -i end while true do table.sort(t) end", ends: limitTypes),
        .init(name: "long paths", source: "local p = '/' .. ('x'):rep(1e6) while true do hier.node(p) end", ends: limitTypes),
        .init(name: "long names", source: "local s = ('y'):rep(1e6) local n = hier.root:child('fz') while true do n:child(s) end", ends: limitTypes),
        .init(name: "rep and concat", source: "while true do local t = table.concat({('x'):rep(1e6), ('y'):rep(1e6)}) end", ends: limitTypes),
        .init(name: "backtracking", source: "while true do string.find(('a'):rep(5000), ('a*'):rep(6) .. 'b') end", ends: limitTypes.union(["LuaError"])),
        .init(name: "library change", source: "rawset(string, 'format', function() return 'pwned' end)", ends: ["LuaError"]),
        .init(name: "library assignment", source: "math.floor = function() return 42 end", ends: ["LuaError"]),
        .init(name: "package.loaded change", source: "package.loaded.string.upper = print", ends: ["LuaError"]),
        .init(name: "global replacement", source: "rawset(_G, 'print', function() end)", ends: ["LuaError"]),
        .init(name: "hier change", source: "rawset(hier, 'node', function() return nil end)", ends: ["LuaError"]),
        .init(name: "string metatable change", source: "getmetatable('').__index = {}", ends: ["LuaError"]),
        .init(name: "reach os", source: "require('os').execute('true')", ends: ["LuaError"]),
        .init(name: "reach io", source: "require('io')", ends: ["LuaError"]),
        .init(name: "finalizer", source: "setmetatable({}, {__gc = function() while true do end end})", ends: ["LuaError"]),
        .init(name: "finalizer via an outcome", source: "hier.tracing = 'path' rawset(getmetatable(hier.root:triggerEvent('Fz')), '__gc', print)", ends: ["LuaError"]),
        .init(name: "binary chunk", source: "load('\\27Lua', 'x', 'b')", ends: ["LuaError"]),
        .init(name: "deep recursion", source: "local function f() return f() + 1 end f()", ends: limitTypes.union(["LuaError"])),
        .init(name: "dispatch storm", source: "local n = hier.root:child('storm') n:receiveEvent(function(e) n:triggerEvent(e) n:triggerEvent(e) end) n:triggerEvent('S')", ends: limitTypes.union(["LuaError", "DispatchDepthExceeded"])),
    ]

    /// Ways of running the attack: `ATTACK` is replaced by a function running it.
    static let catchers: [String] = [
        "ATTACK()",
        "pcall(ATTACK)",
        "for i = 1, 3 do pcall(ATTACK) end",
        "xpcall(ATTACK, function(m) return m end)",
        "xpcall(ATTACK, function() while true do end end)",
        "coroutine.resume(coroutine.create(ATTACK))",
        "pcall(coroutine.wrap(ATTACK))",
        "do local c <close> = setmetatable({}, {__close = function() pcall(ATTACK) end}) end",
        "pcall(function() local c <close> = setmetatable({}, {__close = function() ATTACK() end}) error('x') end)",
        "pcall(load('local f = ... f()'), ATTACK)",
    ]

    /// Places the catcher runs in: `RUN` is replaced by it. Those in a dispatch print the
    /// outcome's status and value type.
    static let places: [String] = [
        "RUN",
        "local n = hier.root:child('p1') n:receiveEvent(function() RUN return 'handled' end) local o = n:triggerEvent('E') print(o.status, o.value.type)",
        "local n = hier.root:child('p2') n:transformError(function(e) RUN return e end) local o = n:reportError('boom') print(o.status, o.value.type)",
        "local n = hier.root:child('p3') local c = n:child('c') c:subscribe('P', function() RUN end) print(n:publish('P'))",
        "local n = hier.root:child('p4') local c = n:child('c') c:receiveEvent('In', function() RUN return 'handled' end) n:receiveEvent('Out', function() local o = c:triggerEvent('In') return 'handled' end) local o = c:triggerEvent('Out') print(o.status, o.value.type)",
    ]

    /// Deterministic pseudo-random numbers (splitmix64), so a failing seed can be replayed.
    struct Random {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(bound))
        }
    }

    static var caseCount: Int { Int(ProcessInfo.processInfo.environment["HOSTILE_CASES"] ?? "") ?? 40 }
    static var seed: UInt64 { UInt64(ProcessInfo.processInfo.environment["HOSTILE_SEED"] ?? "") ?? 1 }

    /// Even cases count instructions (the count hook), with no clock, so what ends an attack
    /// does not depend on the machine's speed; odd ones bound time alone, as the default
    /// limits do, so only the watchdog stops a runaway.
    static func options(case number: Int) -> Hierarchy.Options {
        var options = Hierarchy.Options()
        options.limits = number % 2 == 0
            ? Limits(instructions: 30_000_000, time: nil, memory: 16 << 20, dispatchInstructions: 3_000_000, dispatchTime: nil)
            : Limits(instructions: nil, time: Self.chunkTime, memory: 16 << 20, dispatchInstructions: nil, dispatchTime: 0.2)
        return options
    }

    /// The odd cases' time limit per chunk.
    static let chunkTime = 1.0

    /// What must hold after every case, printed as one line: "intact" or what broke.
    static let intact = """
        local broken = {}
        if string.format('%d', 7) ~= '7' then broken[#broken + 1] = 'string.format' end
        if ('abc'):upper() ~= 'ABC' then broken[#broken + 1] = 'string methods' end
        if math.floor(1.5) ~= 1 then broken[#broken + 1] = 'math.floor' end
        if hier.node('/') ~= hier.root then broken[#broken + 1] = 'hier.node' end
        if require('os').execute ~= nil or package.loaded.io ~= nil then broken[#broken + 1] = 'os or io reachable' end
        if require('string') ~= string then broken[#broken + 1] = 'require' end
        if getmetatable('').__index ~= string then broken[#broken + 1] = 'string metatable' end
        if rawget(_G, 'print') ~= nil then broken[#broken + 1] = 'print replaced' end
        local o = hier.root:child('canary'):triggerEvent('Canary')
        if o.status ~= 'unhandled' then broken[#broken + 1] = 'dispatch: ' .. tostring(o.status) end
        print(#broken == 0 and 'intact' or table.concat(broken, ', '))
        """

    @Test func generatedHostileScriptsAreContained() throws {
        var random = Random(state: Self.seed)
        for number in 0..<Self.caseCount {
            let attack = Self.attacks[random.next(Self.attacks.count)]
            let catcher = Self.catchers[random.next(Self.catchers.count)]
            let place = Self.places[random.next(Self.places.count)]
            let source = "local function ATTACK() \(attack.source) end\n"
                + place.replacingOccurrences(of: "RUN", with: catcher.replacingOccurrences(of: "ATTACK", with: "ATTACK"))
            let label = "case \(number) (seed \(Self.seed)): \(attack.name) / \(catcher) / \(place.prefix(40))"
            // A catcher whose handler loops is a runaway of its own. Under a time limit, the
            // clock may end any attack first on a loaded machine: contained too.
            var ends = catcher.contains("while true") ? attack.ends.union(Self.limitTypes) : attack.ends
            if number % 2 == 1 { ends.insert("TimeLimitExceeded") }
            let f = try Fixture(options: Self.options(case: number))
            #expect(f.hierarchy.countHookInstalled == (number % 2 == 0), "\(label)")
            let started = LimitContainmentTests.threadCPUSeconds()
            var failure: ScriptError?
            do { try f.lua(source) } catch { failure = error }
            // Bounded in this thread's CPU time, which load does not stretch (a chunk runs
            // 30 million instructions or 1 s at most).
            let spent = LimitContainmentTests.threadCPUSeconds() - started
            #expect(spent < 15, "\(label): took \(spent) s of CPU")
            if let failure {
                // Uncaught in the chunk: one of the ends the attack may have.
                #expect(ends.contains(failure.type), "\(label): \(failure)")
                #expect(failure.location != nil, "\(label): no file:line in \(failure)")
            }
            for line in f.printed where line.hasPrefix("unhandled\t") {
                // A dispatch that ended unhandled ended with a contained error (or the value the
                // error responder returned).
                let type = String(line.split(separator: "\t").last ?? "")
                #expect(ends.contains(type) || type == "Error" || type == "LuaError", "\(label): \(line)")
            }
            // Everything presented names a place.
            for presented in f.presented where Self.limitTypes.contains(presented.error.typeName ?? "") {
                #expect(presented.error["where"]?.stringValue != nil, "\(label): \(presented.error)")
            }
            #expect(f.hierarchy.luaMemory.used <= (16 << 20) + (1 << 20), "\(label): \(f.hierarchy.luaMemory.used) bytes held")
            do {
                // Run again if the odd cases' clock ran out on it: that is the machine's load.
                let timeLimit = number % 2 == 1 ? Self.chunkTime : nil
                #expect(try HostileInputTests.output(of: f, Self.intact, timeLimit: timeLimit) == ["intact"], "\(label)")
            } catch {
                Issue.record("\(label): the state is not usable afterwards: \(error)")
            }
        }
    }
}
