import Foundation
import Testing
@testable import LuaHierarchy

/// What a hostile case must come to.
enum Verdict: Sendable, CustomStringConvertible {
    /// The chunk fails with this error type (and a message containing the text, if given).
    case fails(String, containing: String? = nil)
    /// The chunk runs to the end and prints these lines.
    case prints([String])

    var description: String {
        switch self {
        case .fails(let type, let text): return "fails \(type)" + (text.map { " (\($0))" } ?? "")
        case .prints(let lines): return "prints \(lines)"
        }
    }
}

struct HostileCase: Sendable, CustomTestStringConvertible {
    var name: String
    var source: String
    var verdict: Verdict
    var limits = HostileInputTests.smallLimits
    var testDescription: String { name }
}

/// contract §7: syntax and runtime errors, infinite loops, memory bombs, deep
/// recursion, bytecode, sandbox escapes, metatable, coroutine and `__gc` tricks, dispatch
/// storms and hostile payloads. Each case gets a fresh hierarchy with small limits and must
/// end with the exact error type, in bounded time and memory, with the Lua stack balanced and
/// a normal dispatch working right after.
@Suite("Hostile input (contract §7)")
struct HostileInputTests {
    /// No clock: a case expecting the instruction or memory limit must get it however slowly
    /// the machine runs (a wall-clock limit beside them tripped first under load).
    static let smallLimits = Limits(instructions: 2_000_000, time: nil, memory: 16 << 20, dispatchTime: nil)

    /// Runs `source` in `f` and returns what it printed; again when the chunk ran out of its
    /// own time limit (`limit`) and the wall clock, read here around the run, shows that much
    /// passed: a slow machine, not a broken state. Sooner than that, the error is thrown.
    static func output(of f: Fixture, _ source: String, timeLimit limit: Double?, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String] {
        var tries = 0
        while true {
            let started = ContinuousClock.now
            do {
                return try f.output(source, sourceLocation: sourceLocation)
            } catch let error as ScriptError where error.type == "TimeLimitExceeded" {
                // (The limit's clock reads to a few ms; 100 tries bound a loop.)
                tries += 1
                guard let limit, ContinuousClock.now - started >= .seconds(limit - 0.05), tries < 100 else { throw error }
            }
        }
    }

    static let cases: [HostileCase] = [
        // Syntax and runtime errors, with values of every kind.
        .init(name: "syntax error", source: "local = 1", verdict: .fails("SyntaxError", containing: "near '='")),
        .init(name: "unfinished string", source: "x = 'abc", verdict: .fails("SyntaxError", containing: "unfinished string")),
        .init(name: "runtime error", source: "local t = nil; t.x = 1", verdict: .fails("LuaError", containing: "attempt to index a nil value")),
        .init(name: "error(nil)", source: "error(nil)", verdict: .fails("LuaError", containing: "nil value")),
        .init(name: "error(42)", source: "error(42)", verdict: .fails("LuaError", containing: "42")),
        .init(name: "error(true)", source: "error(true)", verdict: .fails("LuaError", containing: "boolean value")),
        .init(name: "error(function)", source: "error(print)", verdict: .fails("LuaError", containing: "function value")),
        .init(name: "error(coroutine)", source: "error(coroutine.create(print))", verdict: .fails("LuaError", containing: "thread value")),
        .init(name: "error(node)", source: "error(hier.root)", verdict: .fails("LuaError", containing: "node /")),
        .init(name: "error object whose __tostring errors", source: "error(setmetatable({}, {__tostring = function() error('no') end}))", verdict: .fails("Error")),
        // The message handler asks __tostring for a message (under the limits): a loop there
        // is the script's code running, and the limit ends it.
        .init(name: "error object whose __tostring loops", source: "error(setmetatable({}, {__tostring = function() while true do end end}))", verdict: .fails("InstructionLimitExceeded")),
        .init(name: "error table with a non-string type", source: "error({type = 42})", verdict: .fails("LuaError", containing: "error object is a table whose 'type' is a number")),

        // Infinite loops, and every way a script can try to swallow the limit.
        .init(name: "while true", source: "while true do end", verdict: .fails("InstructionLimitExceeded", containing: "2000000 instructions")),
        .init(name: "repeat until false", source: "repeat local x = 1 until false", verdict: .fails("InstructionLimitExceeded")),
        .init(name: "recursion through tail calls", source: "local function f() return f() end f()", verdict: .fails("InstructionLimitExceeded")),
        .init(name: "pcall around the loop", source: "while true do pcall(function() while true do end end) end", verdict: .fails("InstructionLimitExceeded")),
        .init(name: "xpcall with a looping handler", source: "while true do xpcall(function() while true do end end, function() while true do end end) end", verdict: .fails("InstructionLimitExceeded")),
        .init(name: "coroutine.wrap around the loop", source: "while true do pcall(coroutine.wrap(function() while true do end end)) end", verdict: .fails("InstructionLimitExceeded")),
        .init(name: "coroutine created before, resumed in a loop", source: "local co = coroutine.create(function() while true do end end) while true do coroutine.resume(co) end", verdict: .fails("InstructionLimitExceeded")),
        .init(name: "load with a looping reader", source: "while true do load(function() while true do end end) end", verdict: .fails("InstructionLimitExceeded")),
        .init(name: "__close that loops", source: "do local x <close> = setmetatable({}, {__close = function() while true do end end}) end", verdict: .fails("InstructionLimitExceeded")),
        .init(name: "coroutine.close of a looping __close", source: "local co = coroutine.create(function() local x <close> = setmetatable({}, {__close = function() while true do end end}) coroutine.yield() end) coroutine.resume(co) while true do pcall(coroutine.close, co) end", verdict: .fails("InstructionLimitExceeded")),
        .init(name: "gsub callback loop", source: "string.gsub(('x'):rep(10), '.', function() while true do end end)", verdict: .fails("InstructionLimitExceeded")),
        .init(name: "table.sort comparator loop", source: "table.sort({3, 2, 1}, function() while true do end end)", verdict: .fails("InstructionLimitExceeded")),
        .init(name: "__index loop", source: "local t = setmetatable({}, {__index = function() while true do end end}) return t.x", verdict: .fails("InstructionLimitExceeded")),
        .init(name: "__eq loop in pcall", source: "local mt = {__eq = function() while true do end end} local a, b = setmetatable({}, mt), setmetatable({}, mt) while true do pcall(function() return a == b end) end", verdict: .fails("InstructionLimitExceeded")),
        .init(name: "time limit without an instruction limit", source: "while true do end", verdict: .fails("TimeLimitExceeded", containing: "0.3 seconds"), limits: Limits(instructions: nil, time: 0.3, memory: 16 << 20, dispatchTime: 600)),

        // Calls that stall inside C, where the count hook cannot fire.
        .init(name: "string.rep of the empty string", source: "print(#string.rep('', math.maxinteger), #(''):rep(1 << 62))", verdict: .prints(["0\t0"])),
        .init(name: "table.move over a huge range", source: "table.move({}, 1, math.maxinteger // 2, 2)", verdict: .fails("LuaError", containing: "table.move")),
        .init(name: "quadratic plain find", source: "local s = ('a'):rep(2000000) print(s:find(('a'):rep(1000000) .. 'b', 1, true), s:find('aab', 1, true))", verdict: .prints(["nil\tnil"])),
        .init(name: "catastrophic backtracking pattern", source: "local s = ('a'):rep(30000) return s:find(('a*'):rep(8) .. 'b')", verdict: .fails("LuaError", containing: "pattern too complex")),
        .init(name: "optional-heavy pattern", source: "local s = ('a'):rep(40) return s:match(('a?'):rep(40) .. ('a'):rep(40) .. 'b')", verdict: .fails("LuaError", containing: "pattern too complex")),
        .init(name: "backtracking inside gsub, in a pcall loop", source: "local s = ('a'):rep(20000) while true do pcall(string.gsub, s, ('a-'):rep(6) .. 'b', '') end", verdict: .fails("InstructionLimitExceeded")),
        .init(name: "plain find keeps find's answers", source: "print(('hello world'):find('o w', 1, true), ('abc'):find('', 10), ('abc'):find('c', -1), ('a.c'):find('.', 1, true))", verdict: .prints(["5\tnil\t3\t2\t2"])),

        // Memory bombs.
        .init(name: "string doubling", source: "local s = 'x' while true do s = s .. s end", verdict: .fails("MemoryLimitExceeded", containing: "16777216 bytes")),
        .init(name: "table growth", source: "local t = {} for i = 1, 1e9 do t[i] = i end", verdict: .fails("MemoryLimitExceeded")),
        .init(name: "one huge string.rep", source: "local s = string.rep('x', 1 << 30)", verdict: .fails("MemoryLimitExceeded")),
        .init(name: "huge table.concat", source: "local t = {} for i = 1, 64 do t[i] = ('x'):rep(1 << 18) end local s = table.concat(t) .. table.concat(t)", verdict: .fails("MemoryLimitExceeded")),
        .init(name: "closures", source: "local t = {} for i = 1, 1e9 do t[i] = function() return i end end", verdict: .fails("MemoryLimitExceeded")),
        .init(name: "coroutines", source: "local t = {} for i = 1, 1e9 do t[i] = coroutine.create(print) end", verdict: .fails("MemoryLimitExceeded")),
        .init(name: "nodes", source: "for i = 1, 1e9 do hier.root:child('n' .. i):receiveEvent(function() return 'handled' end) end", verdict: .fails("MemoryLimitExceeded"), limits: Limits(instructions: 20_000_000, time: nil, memory: 16 << 20, dispatchTime: nil)),
        .init(name: "memory bomb caught in a loop", source: "while true do pcall(function() local t = {} for i = 1, 1e9 do t[i] = i end end) end", verdict: .fails("MemoryLimitExceeded")),

        // Deep recursion of every kind: Lua, metamethods, library callbacks, coroutines.
        .init(name: "Lua recursion", source: "local function f(n) return 1 + f(n + 1) end f(1)", verdict: .fails("MemoryLimitExceeded", containing: "test.lua:1")),
        .init(name: "Lua recursion under a larger cap", source: "local function f(n) return 1 + f(n + 1) end f(1)", verdict: .fails("LuaError", containing: "stack overflow"), limits: Limits(instructions: 50_000_000, time: nil, memory: 256 << 20, dispatchTime: nil)),
        .init(name: "__index recursion", source: "local t t = setmetatable({}, {__index = function(_, k) return t[k] end}) return t.x", verdict: .fails("LuaError", containing: "stack overflow")),
        .init(name: "__tostring recursion", source: "local t t = setmetatable({}, {__tostring = function(s) return tostring(s) end}) print(t)", verdict: .fails("LuaError", containing: "stack overflow")),
        .init(name: "gsub callbacks nested to the limit", source: "local function f(d) if d == 0 then return 'x' end return (('a'):gsub('a', function() return f(d - 1) end)) end print(f(150))", verdict: .prints(["x"])),
        .init(name: "gsub callbacks nested past the limit", source: "local function f(d) if d == 0 then return 'x' end return (('a'):gsub('a', function() return f(d - 1) end)) end print(f(100000))", verdict: .fails("LuaError", containing: "stack overflow")),
        .init(name: "table.sort inside comparators", source: "local function s(d) table.sort({2, 1}, function(a, b) if d > 0 then s(d - 1) end return a < b end) end s(100000)", verdict: .fails("LuaError", containing: "stack overflow")),
        .init(name: "coroutines nested in coroutines", source: "local function nest() return coroutine.wrap(function() return nest()() end) end nest()()", verdict: .fails("LuaError", containing: "stack overflow")),
        .init(name: "chained coroutine.close from __close", source: """
            local function make(nxt) return coroutine.create(function()
              local x <close> = setmetatable({}, {__close = function() if nxt then coroutine.close(nxt) end end})
              coroutine.yield() end) end
            local co for i = 1, 200000 do co = make(co) coroutine.resume(co) end
            coroutine.close(co)
            """, verdict: .fails("MemoryLimitExceeded"), limits: Limits(instructions: 50_000_000, time: nil, memory: 64 << 20, dispatchTime: nil)),
        .init(name: "chained coroutine.close past the nesting bound", source: """
            local function make(nxt) return coroutine.create(function()
              local x <close> = setmetatable({}, {__close = function() if nxt then coroutine.close(nxt) end end})
              coroutine.yield() end) end
            local co for i = 1, 1000 do co = make(co) coroutine.resume(co) end
            print(coroutine.close(co))
            """, verdict: .prints(["true"])),
        .init(name: "pcall recursion", source: "local function f() return pcall(f) end print((f()))", verdict: .prints(["true"])),
        .init(name: "nested dispatch storm", source: """
            local n = hier.root:child("storm")
            n:receiveEvent(function(e) n:triggerEvent(e) n:triggerEvent(e) return "handled" end)
            print(n:triggerEvent("Storm").status)
            """, verdict: .fails("InstructionLimitExceeded")),

        // Bytecode and sandbox escapes.
        .init(name: "string.dump is gone", source: "return string.dump(print)", verdict: .fails("LuaError", containing: "attempt to call a nil value (field 'dump')")),
        .init(name: "binary chunk through load", source: "assert(load('\\27Lua\\84\\0'))", verdict: .fails("LuaError", containing: "attempt to load a binary chunk")),
        .init(name: "load asked for mode b", source: "load('return 1', 'x', 'b')", verdict: .fails("LuaError", containing: "binary chunks are not allowed")),
        .init(name: "load with an env is text only", source: "print(load('return x', 'c', 't', {x = 5})())", verdict: .prints(["5"])),
        .init(name: "no io", source: "io.open('/etc/passwd')", verdict: .fails("LuaError", containing: "global 'io'")),
        .init(name: "no os.exit", source: "os.exit(0)", verdict: .fails("LuaError", containing: "field 'exit'")),
        .init(name: "no os.execute", source: "os.execute('true')", verdict: .fails("LuaError", containing: "field 'execute'")),
        .init(name: "no os.getenv", source: "return os.getenv('HOME')", verdict: .fails("LuaError", containing: "field 'getenv'")),
        .init(name: "no debug", source: "debug.getregistry()", verdict: .fails("LuaError", containing: "global 'debug'")),
        .init(name: "no dofile", source: "dofile('/etc/passwd')", verdict: .fails("LuaError", containing: "global 'dofile'")),
        .init(name: "no loadfile", source: "loadfile('/etc/passwd')", verdict: .fails("LuaError", containing: "global 'loadfile'")),
        .init(name: "no package.loadlib", source: "package.loadlib('libc.so.6', 'system')", verdict: .fails("LuaError", containing: "field 'loadlib'")),
        .init(name: "require of a C module", source: "require('io')", verdict: .fails("LuaError", containing: "module 'io' not found")),
        .init(name: "require climbing out of the folder", source: "require('../../etc/passwd')", verdict: .fails("LuaError", containing: "module names are letters")),
        .init(name: "package.path changes nothing", source: "package.path = '/etc/?'", verdict: .fails("LuaError", containing: "package is read-only")),
        .init(name: "collectgarbage other than count", source: "collectgarbage('stop')", verdict: .fails("LuaError", containing: "only \"count\"")),
        .init(name: "collectgarbage count works", source: "print(math.type(collectgarbage('count')))", verdict: .prints(["float"])),
        .init(name: "__gc refused", source: "setmetatable({}, {__gc = function() while true do end end})", verdict: .fails("LuaError", containing: "__gc is not allowed")),
        .init(name: "__gc added after setmetatable never runs", source: "local mt = {} local t = setmetatable({}, mt) mt.__gc = function() while true do end end t = nil print('ok')", verdict: .prints(["ok"])),

        // Metatable tricks and shared tables.
        .init(name: "string metatable is hidden", source: "getmetatable('').__index = {}", verdict: .fails("LuaError", containing: "the string metatable is read-only")),
        .init(name: "string library is read-only", source: "string.rep = function() return 'pwned' end", verdict: .fails("LuaError", containing: "string is read-only")),
        .init(name: "standard globals cannot be replaced", source: "string = {}", verdict: .fails("LuaError", containing: "'string' belongs to the standard library")),
        .init(name: "rawset cannot replace them either", source: "rawset(_G, 'print', nil)", verdict: .fails("LuaError", containing: "'print' belongs to the standard library")),
        .init(name: "_G metatable is protected", source: "setmetatable(_G, nil)", verdict: .fails("LuaError", containing: "protected metatable")),
        .init(name: "hier fields cannot be replaced", source: "hier.node = function() end", verdict: .fails("LuaError", containing: "hier has no setting 'node'")),
        .init(name: "node metatable is protected", source: "print(getmetatable(hier.root)) setmetatable(hier.root, {})", verdict: .fails("LuaError", containing: "table expected, got userdata")),
        .init(name: "script globals still work", source: "counter = 1 counter = counter + 1 print(counter, pairs(string) ~= nil, #table.concat({'a', 'b'}))", verdict: .prints(["2\ttrue\t2"])),
        .init(name: "methods through the string metatable still work", source: "print(('ab'):rep(2), ('x=1'):match('(%w)=(%d)'))", verdict: .prints(["abab\tx\t1"])),

        // Coroutine tricks.
        .init(name: "yield inside a responder", source: """
            local n = hier.root:child("y")
            n:receiveEvent(function() coroutine.yield() return "handled" end)
            local o = coroutine.wrap(function() return n:triggerEvent("Tap") end)()
            print(o.value.type)
            """, verdict: .prints(["ResponderContractError"])),
        .init(name: "close the running coroutine", source: "coroutine.wrap(function() coroutine.close(coroutine.running()) end)()", verdict: .fails("LuaError", containing: "cannot close a running coroutine")),
        .init(name: "resume a dead coroutine", source: "local co = coroutine.create(function() end) coroutine.resume(co) print(coroutine.resume(co))", verdict: .prints(["false\tcannot resume dead coroutine"])),

        // Hostile payloads.
        .init(name: "NaN as a table key", source: "local t = {} t[0/0] = 1", verdict: .fails("LuaError", containing: "index is NaN")),
        .init(name: "NUL bytes in a type", source: """
            local n = hier.root:child("nul")
            n:handleEvent("A\\0B", function() end)
            print(n:triggerEvent("A\\0B").status, n:triggerEvent("A").status)
            """, verdict: .prints(["handled\tunhandled"])),
        .init(name: "huge integers and NaN values survive", source: """
            local n = hier.root:child("nums")
            n:transformEvent(function(e) return e end)
            local o = n:triggerEvent({type = "N", big = math.maxinteger, small = math.mininteger, nan = 0/0, inf = 1/0})
            print(o.value.big == math.maxinteger, o.value.small == math.mininteger, o.value.nan ~= o.value.nan, o.value.inf)
            """, verdict: .prints(["true\ttrue\ttrue\tinf"])),
    ]

    @Test(arguments: cases)
    func hostileCase(_ hostile: HostileCase) throws {
        var options = Hierarchy.Options()
        options.limits = hostile.limits
        let f = try Fixture(options: options)
        // Bounded in CPU time, on the thread that runs the case: the wall clock is the load's.
        let (failure, spent): (ScriptError?, Double) = LargeStack.run {
            let started = LimitContainmentTests.threadCPUSeconds()
            do {
                try f.lua(hostile.source)
                return (nil, LimitContainmentTests.threadCPUSeconds() - started)
            } catch {
                return (error as? ScriptError, LimitContainmentTests.threadCPUSeconds() - started)
            }
        }
        if ProcessInfo.processInfo.environment["HOSTILE_TIMES"] != nil {
            FileHandle.standardError.write(Data("hostile: \(hostile.name): \(spent) s of CPU\n".utf8))
        }
        switch hostile.verdict {
        case .fails(let type, let text):
            let error = try #require(failure, "expected \(hostile.verdict), the chunk succeeded: \(f.printed)")
            #expect(error.type == type, "\(error)")
            if let text { #expect(error.description.contains(text), "\(error)") }
            #expect(error.location != nil, "no file:line in \(error)")
        case .prints(let lines):
            #expect(failure == nil, "\(failure.map(String.init(describing:)) ?? "")")
            #expect(f.printed == lines)
        }
        #expect(spent < 15, "took \(spent) s of CPU")
        if let cap = hostile.limits.memory {
            // Once the cap trips, the error machinery (handler, traceback) may use 1 MiB more.
            #expect(f.hierarchy.luaMemory.used <= cap + (1 << 20), "Lua holds \(f.hierarchy.luaMemory.used) bytes after the case")
        }
        // The engine is still usable: with what the case built dropped, a normal dispatch.
        for child in f.hierarchy.root.children { child.remove() }
        f.hierarchy.collectGarbage()
        let node = try f.hierarchy.makeNode(at: "/after/check")
        node.handleEvent { _ in }
        // (A dispatch from Swift with no time limit of its own would take the chunk's: the
        // time limit's case gives it 600 s, a bound against hangs only.)
        #expect(try f.hierarchy.trigger("Check", at: node).status == .handled)
        // (In the time limit's case, its 0.3 s bounds this chunk too: run again if it ran out.)
        _ = try Self.output(of: f, "local o = hier.node('/after/check'):triggerEvent('Lua') assert(o.status == 'handled')", timeLimit: hostile.limits.time)
    }

    @Test func atLeastFiftyCases() {
        #expect(Self.cases.count >= 50)
        #expect(Set(Self.cases.map(\.name)).count == Self.cases.count, "names are unique")
    }
}

@Suite("Limits inside dispatches")
struct DispatchLimitTests {
    func fixture() throws -> Fixture {
        var options = Hierarchy.Options()
        // A dispatch from Swift gets far more than a chunk's budget; no clock, so only the
        // counts end a spin, however slowly the machine runs it.
        options.limits = Limits(instructions: 1_000_000, time: nil, memory: 16 << 20, dispatchInstructions: 10_000_000, dispatchTime: nil)
        return try Fixture(options: options)
    }

    @Test func aLoopingResponderEndsTheDispatchAndSkipsTheRest() throws {
        let f = try fixture()
        try f.lua("""
            local n = hier.root:child("n")
            n:receiveEvent(function() pcall(function() while true do end end) return "notHandled" end)
            n:receiveEvent(function() print("never") return "handled" end)
            n:receiveError(function() print("never either") return "handled" end)
            """)
        var calledAfter = false
        try f.hierarchy.node(at: "/")!.receiveEvent { _ in calledAfter = true; return .handled }
        let outcome = try LargeStack.run { Result { try f.hierarchy.trigger("Tap", at: "/n") } }.get()
        #expect(outcome.status == .unhandled)
        #expect(outcome.kind == .error)
        #expect(outcome.value["type"] == "InstructionLimitExceeded")
        #expect(outcome.value["where"] == "test.lua:2")
        #expect(!calledAfter)
        #expect(f.printed.isEmpty)
        #expect(f.presented.map { $0.error["type"] } == ["InstructionLimitExceeded"])
        // Each dispatch from Swift has its own budget: the next one runs normally.
        try f.lua("hier.root:child('ok'):handleEvent(function() end)")
        #expect(try f.hierarchy.trigger("Tap", at: "/ok").status == .handled)
    }

    @Test func aMemoryBombInAResponderEndsTheDispatch() throws {
        var options = Hierarchy.Options()
        // No clock: the memory cap must be what ends it.
        options.limits = Limits(instructions: 100_000_000, time: nil, memory: 16 << 20, dispatchTime: nil)
        let f = try Fixture(options: options)
        try f.lua("""
            hier.root:child("m"):receiveEvent(function() local t = {} for i = 1, 1e9 do t[i] = ("x"):rep(64) .. i end end)
            """)
        let outcome = try f.hierarchy.trigger("Tap", at: "/m")
        #expect(outcome.value["type"] == "MemoryLimitExceeded")
        #expect(f.hierarchy.luaMemory.used <= 16 << 20)
        #expect(f.hierarchy.luaMemory.peak <= 16 << 20)
    }

    @Test func nestedDispatchesShareTheBudgetOfTheirEntry() throws {
        let f = try fixture()
        let error = try #require(f.failure("""
            local a = hier.root:child("a")
            a:receiveEvent("Spin", function() for i = 1, 600000 do end return "handled" end)
            print(a:triggerEvent("Spin").status)
            print(a:triggerEvent("Spin").status)
            """))
        #expect(error.type == "InstructionLimitExceeded")
        #expect(f.printed == ["handled"])
        #expect(f.presented.map { $0.error["type"] } == ["InstructionLimitExceeded"])
    }

    @Test func hostWorkIsChargedToTheBudget() throws {
        let f = try fixture()
        let error = try #require(f.failure("""
            local n = hier.root:child("n")
            for i = 1, 100000 do n:triggerEvent("Cheap") end
            """))
        #expect(error.type == "InstructionLimitExceeded")
        #expect(error.location == "test.lua:2")
    }

    @Test func theChunkBudgetIsFreshForEachChunk() throws {
        let f = try fixture()
        for _ in 0..<3 {
            #expect(try f.output("for i = 1, 300000 do end print('done')") == ["done"])
        }
    }
}
