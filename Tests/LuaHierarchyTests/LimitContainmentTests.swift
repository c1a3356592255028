import Foundation
import Testing
@testable import LuaHierarchy

/// Limits nothing can swallow, per dispatch and per chunk (contract §7). Each case is a class of
/// escape: a limit that trips inside a dispatch ends that dispatch (unhandled, the limit error
/// as its value, `where` where it tripped, the error being handled as `cause`), whatever the
/// responder does to catch it; the calling chunk goes on with its own budget; the state stays
/// usable.
@Suite("Limits: contained per dispatch, never swallowed")
struct LimitContainmentTests {
    /// The CPU time the calling thread has used, in seconds: what bounds a case's work here,
    /// since load stretches the wall clock and not this.
    static func threadCPUSeconds() -> Double {
        var spent = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spent)
        return Double(spent.tv_sec) + Double(spent.tv_nsec) / 1e9
    }

    /// Small per-dispatch budgets inside a roomy chunk budget. No clock unless asked for: a
    /// case expecting the instruction or memory limit must get it however slowly the machine
    /// runs (a wall-clock limit beside them trips first under load).
    static func options(
        instructions: Int? = 50_000_000, time: Double? = nil, memory: Int? = 32 << 20,
        dispatchInstructions: Int? = 200_000, dispatchTime: Double? = nil
    ) -> Hierarchy.Options {
        var options = Hierarchy.Options()
        options.limits = Limits(
            instructions: instructions, time: time, memory: memory, dispatchInstructions: dispatchInstructions,
            dispatchTime: dispatchTime)
        return options
    }

    /// A responder body per way of catching an error; each must not keep the dispatch alive.
    static let catchers: [(name: String, body: String)] = [
        ("pcall", "pcall(spin) return 'handled'"),
        ("pcall in a loop", "for i = 1, 100 do pcall(spin) end return 'handled'"),
        ("xpcall with a handler", "xpcall(spin, function(m) return m end) return 'handled'"),
        ("xpcall with a looping handler", "xpcall(spin, function() while true do end end) return 'handled'"),
        ("coroutine.resume", "local co = coroutine.create(spin) coroutine.resume(co) return 'handled'"),
        ("coroutine.wrap in pcall", "pcall(coroutine.wrap(spin)) return 'handled'"),
        ("nested coroutines", "local co = coroutine.create(function() coroutine.resume(coroutine.create(spin)) end) coroutine.resume(co) return 'handled'"),
        ("__close", "do local x <close> = setmetatable({}, {__close = function() return end}) pcall(spin) end return 'handled'"),
        ("__close that loops", "pcall(function() local x <close> = setmetatable({}, {__close = function() while true do end end}) spin() end) return 'handled'"),
        ("error handler that returns", "local ok = pcall(function() local ok2 = pcall(spin) if not ok2 then return end end) return 'handled'"),
        ("load with a reader", "pcall(load(function() spin() end)) return 'handled'"),
        ("table.sort comparator", "pcall(table.sort, {3, 2, 1}, function(a, b) spin() end) return 'handled'"),
        ("gsub callback", "pcall(string.gsub, 'abc', '%w', function() spin() end) return 'handled'"),
        // coroutine.close runs the coroutine's __close handlers on its own stack, not through resume.
        ("coroutine.close running __close", "local co = coroutine.create(function() local x <close> = setmetatable({}, {__close = function() spin() end}) coroutine.yield() end) coroutine.resume(co) pcall(coroutine.close, co) return 'handled'"),
    ]

    /// "time, no count hook": the default limits, where only the watchdog enforces the
    /// deadline (no instruction budget anywhere, so Lua runs without a hook until it passes).
    @Test(arguments: ["instructions", "time", "time, no count hook", "memory"], catchers.map(\.name))
    func aTripInsideADispatchEndsItWhateverCatchesIt(limit: String, catcher: String) throws {
        let body = Self.catchers.first { $0.name == catcher }!.body
        let spin: String
        var options = Self.options()
        switch limit {
        case "instructions":
            spin = "function spin() while true do end end"
        case "time":
            // A chunk budget no machine spends in the 0.2 s (50 million took 0.12 s here).
            options.limits.instructions = 100_000_000_000
            options.limits.dispatchInstructions = nil
            options.limits.dispatchTime = 0.2
            options.limits.time = 600   // a bound against hangs only
            spin = "function spin() while true do end end"
        case "time, no count hook":
            options.limits.instructions = nil
            options.limits.dispatchInstructions = nil
            options.limits.dispatchTime = 0.2
            options.limits.time = 600   // a bound against hangs only
            spin = "function spin() while true do end end"
        default:
            options.limits.memory = 8 << 20
            options.limits.dispatchInstructions = nil
            spin = "function spin() local t = {} for i = 1, 1e9 do t[i] = {i} end end"
        }
        let f = try Fixture(spin, options: options)
        #expect(f.hierarchy.countHookInstalled == (limit != "time, no count hook"))
        try f.lua("""
            local n = hier.root:child("n")
            n:receiveEvent(function(e)
              \(body)
            end)
            """)
        let started = Self.threadCPUSeconds()
        let lines = try f.output("""
            local o = hier.node("/n"):triggerEvent("Tap")
            print(o.status, o.kind, o.value.type, o.value.where)
            print("the chunk goes on")
            """)
        let spent = Self.threadCPUSeconds() - started
        let type = [
            "instructions": "InstructionLimitExceeded", "time": "TimeLimitExceeded", "time, no count hook": "TimeLimitExceeded",
            "memory": "MemoryLimitExceeded",
        ][limit]!
        #expect(lines.count == 2, "\(lines)")
        let fields = lines.first?.split(separator: "\t").map(String.init) ?? []
        #expect(Array(fields.prefix(3)) == ["unhandled", "error", type], "\(lines)")
        #expect(fields.count == 4 && fields[3].hasPrefix("test.lua:"), "where: \(fields)")
        #expect(lines.last == "the chunk goes on")
        #expect(spent < 15, "took \(spent) s of CPU")
        // The limit error reached the presenter, as an unhandled error does.
        #expect(f.presented.last?.error.typeName == type)
        // Usable afterwards: a fresh dispatch runs.
        #expect(try f.output("print(hier.root:child('ok'):triggerEvent('Tap').status)") == ["unhandled"])
    }

    /// A runaway responder ends its dispatch, named by the loop's line, not the calling line;
    /// the chunk that dispatched goes on with its own budget and dispatches again.
    @Test func aRunawayResponderEndsOnlyItsDispatch() throws {
        let f = try Fixture(options: Self.options())
        let lines = try f.output("""
            local n = hier.root:child("n")
            n:receiveEvent("Spin", function(e)
              while true do end
            end)
            n:receiveEvent("Tap", function(e) return "handled" end)
            for i = 1, 3 do
              local o = n:triggerEvent("Spin")
              print(o.status, o.value.type, o.value.where, o.value.message)
            end
            print(n:triggerEvent("Tap").status)
            """)
        #expect(lines.count == 4)
        for line in lines.prefix(3) {
            #expect(line.hasPrefix("unhandled\tInstructionLimitExceeded\ttest.lua:3\tinstruction limit exceeded: more than 200000 instructions in one dispatch"), "\(line)")
        }
        #expect(lines.last == "handled")
    }

    /// A dispatch gets at most what is left of its chunk's budget: when that runs out inside
    /// the dispatch, the dispatch ends with the chunk's limit error, then the chunk ends too.
    @Test func theChunkBudgetCapsItsDispatches() throws {
        let f = try Fixture(options: Self.options(instructions: 1_000_000, dispatchInstructions: 100_000_000))
        let error = f.failure("""
            local n = hier.root:child("n")
            n:receiveEvent(function(e) while true do end end)
            local o = n:triggerEvent("Spin")
            print(o.value.type, o.value.message)
            print("not reached")
            """)
        #expect(error?.type == "InstructionLimitExceeded")
        #expect(f.presented.first?.error["message"]?.stringValue?.contains("more than 1000000 instructions (set with --max-instructions") == true)
        #expect(!f.printed.contains("not reached"))
    }

    /// A nested dispatch gets its own budget, capped by what is left of the one around it:
    /// with equal per-dispatch limits, a runaway nested dispatch spends its caller's too, so
    /// both end (each with the limit error, each presented) and the chunk goes on.
    @Test func aNestedDispatchGetsAtMostWhatIsLeftOfItsCaller() throws {
        let f = try Fixture(options: Self.options())
        let lines = try f.output("""
            local inner = hier.root:child("outer"):child("inner")
            inner:receiveEvent("Spin", function() while true do end end)
            hier.node("/outer"):receiveEvent("Tap", function(e)
              local o = inner:triggerEvent("Spin")
              print("inner", o.status, o.value.type)
              return "handled"
            end)
            local o = inner:triggerEvent("Tap")
            print("outer", o.status, o.value.type)
            """)
        #expect(lines == ["outer\tunhandled\tInstructionLimitExceeded"])
        #expect(f.presented.map(\.error.typeName) == ["InstructionLimitExceeded", "InstructionLimitExceeded"])
        #expect(f.presented.first?.error["where"]?.stringValue == "test.lua:2")
    }

    /// A limit inside an error responder keeps the error it was handling as `cause`.
    @Test func aTripInTransformErrorKeepsTheCause() throws {
        let f = try Fixture(options: Self.options())
        let lines = try f.output("""
            local n = hier.root:child("n")
            n:transformError(function(e) while true do end end)
            local o = n:reportError({type = "Original", message = "m"})
            print(o.status, o.value.type, o.value.cause.type, o.value.cause.message)
            """)
        #expect(lines == ["unhandled\tInstructionLimitExceeded\tOriginal\tm"])
    }

    /// A publish is bounded as a dispatch is; a limit in a subscriber's own dispatch ends that
    /// dispatch and reaches the presenter.
    @Test func aTripInAPublishSubscribersDispatchIsPresented() throws {
        let f = try Fixture(options: Self.options())
        let lines = try f.output("""
            local top = hier.root:child("top")
            local leaf = top:child("leaf")
            leaf:receiveEvent("Spin", function() while true do end end)
            leaf:subscribe("P", function(e) leaf:triggerEvent("Spin") end)
            print(top:publish("P"))
            print("after")
            """)
        #expect(lines == ["1", "after"])
        // The subscriber's dispatch spent what was left of the publish's budget: both end.
        #expect(f.presented.map(\.error.typeName) == ["InstructionLimitExceeded", "InstructionLimitExceeded"])
        #expect(f.presented.first?.error["where"]?.stringValue == "test.lua:3")
    }

    /// Long host work is charged by its size and reads the clock as it goes: each call here is
    /// long C or Swift work in one Lua instruction, which the every-1,000-instructions hook
    /// alone would check far too late.
    @Test(arguments: [
        ("sort of many numbers", "local t = {} for i = 1, 2e6 do t[i] = (i * 7919) % 1000003 end while true do table.sort(t) end"),
        ("hier.node with a long path", "local p = '/' .. ('x'):rep(4e6) while true do hier.node(p) end"),
        ("child with a long name", "local s = ('x'):rep(4e6) local n = hier.root:child('a') while true do n:child(s) end"),
        ("concatenating long strings", "local s = ('x'):rep(4e6) while true do local t = s .. s end"),
        ("string.rep", "while true do local t = ('x'):rep(8e6) end"),
        ("table.concat", "local t = {} for i = 1, 1000 do t[i] = ('x'):rep(4000) end while true do local s = table.concat(t) end"),
        ("upper of a long string", "local s = ('x'):rep(8e6) while true do local t = s:upper() end"),
        // Found by the attack of the sandbox: C loops whose every step is long.
        ("sort with a C comparator over long strings", "local s = '1' .. (' '):rep(4e6) local t = {} for i = 1, 1000 do t[i] = s end table.sort(t, utf8.len)"),
        ("a pattern with a long bracket class", "string.find(('0'):rep(1e6), '[' .. ('a-z'):rep(1e6) .. ']')"),
        ("load with a C function as the reader", "load(math.random)"),
        // Found by the second attack: table functions whose every step runs a metamethod or
        // walks a long __index chain (the stock ones check no clock), and a spin under a deep
        // stack, where re-arming the hook on every signal walked 200,000 frames each time.
        ("table.insert under a lying __len", "local t = setmetatable({}, {__len = function() return 1 << 40 end}) table.insert(t, 1, 'x')"),
        ("table.remove under a lying __len", "local t = setmetatable({}, {__len = function() return 1 << 40 end}) table.remove(t, 1)"),
        ("table.concat through a long __index chain", Self.indexChain + "table.concat(t, ',', 1, 1e6)"),
        ("table.unpack through a long __index chain", Self.indexChain + "table.unpack(t, 1, 5e5)"),
        ("table.move through a long __index chain", Self.indexChain + "table.move(t, 1, 1e6, 1, {})"),
        ("load of source built to parse slowly", "local g, l = {}, {} for i = 1, 30000 do g[i] = 'goto l' .. i l[i] = '::l' .. i .. ':: do end' end local block = 'do ' .. table.concat(g, ' ') .. ' ' .. table.concat(l, ' ') .. ' end ' load(block:rep(40))"),
        ("a spin under 200,000 frames", "local junk = {} local function f(n) if n == 0 then while true do end end junk[#junk + 1] = {n} return f(n - 1) + 1 end f(200000)"),
    ])
    func longHostWorkMeetsTheDeadline(name: String, source: String) throws {
        let f = try Fixture(options: Self.options(instructions: nil, time: 0.5, memory: 256 << 20, dispatchInstructions: nil, dispatchTime: nil))
        let started = Self.threadCPUSeconds()
        let error = f.failure(source)
        let spent = Self.threadCPUSeconds() - started
        #expect(error?.type == "TimeLimitExceeded", "\(name): \(String(describing: error))")
        #expect(error?.location?.hasPrefix("test.lua:") == true, "\(String(describing: error))")
        // Bounded in this thread's CPU time, which load does not stretch: work that read no
        // clock would run on for many seconds of it. How promptly: Benchmarks/limits/run.sh.
        #expect(spent < 10, "\(name): ran \(spent) s of CPU for a 0.5 s deadline")
        // (Under the same 0.5 s: run again if a loaded machine ran it out.)
        #expect(try HostileInputTests.output(of: f, "print('usable')", timeLimit: 0.5) == ["usable"])
    }

    /// A million-element list seen through 1,900 tables of __index (Lua follows up to 2,000):
    /// every read of `t[i]` walks the whole chain.
    static let indexChain = "local base = {} for i = 1, 1e6 do base[i] = 'x' end local t = base for i = 1, 1900 do t = setmetatable({}, {__index = t}) end "

    /// The sandbox's table functions (Sources/CLuaHost/sandbox.c) give stock Lua's results
    /// and messages (the expected lines are Debian's lua5.4, 5.4.4, on the same chunk).
    @Test func tableFunctionsGiveLuasResults() throws {
        let f = try Fixture()
        let lines = try f.output(#"""
            local t = {1, 2, 3} table.insert(t, 2, "a") table.insert(t, "z")
            print(table.concat(t, ","), table.remove(t, 1), table.remove(t), table.concat(t, ","), table.remove({}), #t)
            print(table.concat(table.move({1, 2, 3, 4, 5}, 2, 4, 1), ","), table.concat(table.move({1, 2, 3, 4, 5}, 1, 3, 3), ","))
            print(table.concat(table.move({1, 2, 3}, 1, 3, 2, {9}), ","), table.concat({}, "x"), table.concat({1, 2.5, "s"}, ", ", 2, 3))
            print(table.unpack({1, 2, 3})) print(table.unpack({1, 2, 3}, 2)) print(table.unpack({1, 2, 3}, -1, 1)) print(select("#", table.unpack({}, 1, 0)))
            local p = setmetatable({}, {__index = function(_, i) return i * 10 end, __len = function() return 3 end})
            print(table.concat(p, "+"), table.unpack(p))
            local log = {} local w = setmetatable({}, {__newindex = function(_, k, v) log[#log + 1] = k .. "=" .. tostring(v) end})
            table.move({7, 8}, 1, 2, 5, w) table.insert(w, 1) print(table.concat(log, " "))
            print(pcall(table.insert, {}, 5, 1))
            print(pcall(table.insert, {}, 1, 2, 3))
            print(pcall(table.remove, {}, 5))
            print(pcall(table.move, 1, 1, 2, 1))
            print(pcall(table.concat, {1, {}}))
            print(pcall(table.unpack, {}, 1, 1e8))
            print(pcall(table.insert, nil, 1))
            """#)
        #expect(lines == [
            "1,a,2,3,z\t1\tz\ta,2,3\tnil\t3",
            "2,3,4,4,5\t1,2,1,2,3",
            "9,1,2,3\t\t2.5, s",
            "1\t2\t3", "2\t3", "nil\tnil\t1", "0",
            "10+20+30\t10\t20\t30",
            "5=7 6=8 1=1",
            "false\tbad argument #2 to 'table.insert' (position out of bounds)",
            "false\twrong number of arguments to 'insert'",
            "false\tbad argument #1 to 'table.remove' (position out of bounds)",
            "false\tbad argument #1 to 'table.move' (table expected, got number)",
            "false\tinvalid value (table) at index 2 in table for 'concat'",
            "false\ttoo many results to unpack",
            "false\tbad argument #1 to 'table.insert' (table expected, got nil)",
        ])
    }

    /// The memory limit is as sticky as the others: caught by pcall it raises again at the
    /// next instruction, so the chunk cannot go on at the cap.
    @Test func theMemoryLimitCannotBeCaughtAndIgnored() throws {
        let f = try Fixture(options: Self.options(memory: 8 << 20))
        let error = f.failure("""
            local caught = 0
            for i = 1, 100 do
              pcall(function() local t = {} for j = 1, 1e9 do t[j] = {j} end end)
              caught = caught + 1
            end
            print("went on after catching it", caught)
            """)
        #expect(error?.type == "MemoryLimitExceeded")
        #expect(f.printed.isEmpty, "\(f.printed)")
        // Garbage from the failed chunk is not held against the next one.
        #expect(try f.output("local t = {} for i = 1, 1000 do t[i] = {i} end print(#t)") == ["1000"])
    }

    /// Sorting in the sandbox is a heap sort of its own: it gives table.sort's results.
    @Test func sortGivesTheSameOrderAsLuas() throws {
        let f = try Fixture()
        let lines = try f.output("""
            local function check(n, seed, comp)
              local t, u = {}, {}
              local x = seed
              for i = 1, n do x = (x * 1103515245 + 12345) % 2147483648 t[i] = x % 97 u[i] = t[i] end
              table.sort(t, comp)
              for i = 2, n do
                if comp then assert(not comp(t[i], t[i - 1]), "order") else assert(t[i - 1] <= t[i], "order") end
              end
              local counts = {}
              for i = 1, n do counts[u[i]] = (counts[u[i]] or 0) + 1 end
              for i = 1, n do counts[t[i]] = counts[t[i]] - 1 end
              for _, c in pairs(counts) do assert(c == 0, "a permutation") end
            end
            for n = 0, 40 do check(n, n) check(n, n + 7, function(a, b) return a > b end) end
            check(10000, 3)
            local words = {"pear", "apple", "fig", "kiwi"}
            table.sort(words)
            print(table.concat(words, " "))
            print(pcall(table.sort, {1, "x"}))
            print(pcall(table.sort, 5))
            """)
        #expect(lines.first == "apple fig kiwi pear")
        #expect(lines[1].hasPrefix("false\t") && lines[1].contains("attempt to compare"), "\(lines)")
        #expect(lines[2].hasPrefix("false\t") && lines[2].contains("table expected"), "\(lines)")
    }

    /// string.rep in the sandbox is made by doubling, with its work charged between copies
    /// (one C call of Lua's copied 250 million one-byte strings past every limit and signal):
    /// the same results and errors as Lua's (the expected line is stock lua5.4's output).
    @Test func repGivesLuasResults() throws {
        let f = try Fixture()
        let lines = try f.output(#"""
            local out = {}
            for _, c in ipairs{{"ab", 3}, {"ab", 3, ","}, {"", 5}, {"x", 0}, {"x", 1, ","}, {"abc", 7, "--"},
                {"", 4, "-"}, {5, 2}, {"a", 2.0}, {"q", -3, "s"}, {"xy", 10, "z"}} do
              out[#out + 1] = string.format("%q", string.rep(table.unpack(c)))
            end
            print(table.concat(out, " "))
            print(pcall(string.rep, "x", 1 << 40))
            print(pcall(string.rep, "x", 2.5))
            print(#string.rep("a", 1e7), #string.rep("ab", 3e6, "cd"), string.rep("", 1e18))
            """#)
        #expect(lines.first == #""ababab" "ab,ab,ab" "" "" "x" "abc--abc--abc--abc--abc--abc--abc" "---" "55" "aa" "" "xyzxyzxyzxyzxyzxyzxyzxyzxyzxy""#)
        #expect(lines[1] == "false\tresulting string too large")
        #expect(lines[2] == "false\tbad argument #2 to '?' (number has no integer representation)")
        #expect(lines[3] == "10000000\t11999998\t")
    }

    /// Long instructions that allocate nothing (comparing two long strings) pass 1,000 at a
    /// time between the hook's checks; the watchdog signals the Lua thread at the deadline, so
    /// the chunk, and a dispatch inside it, still stop on time. The strings are made before
    /// the timed run, with no clock on them (making them is host work that reads the clock
    /// itself, and a loaded machine took longer than the deadline): the deadline passes in the
    /// loop, where only a signal ends it.
    @Test(arguments: ["chunk", "dispatch"])
    func theWatchdogStopsLongInstructionsOnTime(place: String) throws {
        let loop = "while true do local _ = a < b end"
        let make = "a, b = ('x'):rep(3e7), ('x'):rep(3e7) .. ''"
        let chunk = place == "chunk"
        // The other place's time is a bound against hangs only.
        let f = try Fixture(options: Self.options(
            instructions: nil, time: chunk ? 0.5 : 600, memory: 256 << 20, dispatchInstructions: nil, dispatchTime: chunk ? 600 : 0.5))
        if chunk {
            // Made by a dispatch from Swift, under the dispatch's 600 s; the chunk that sets it
            // up is run again if a loaded machine ran it out of its 0.5 s.
            _ = try HostileInputTests.output(of: f, "hier.root:child('make'):receiveEvent(function() \(make) return 'handled' end)", timeLimit: 0.5)
            #expect(try f.hierarchy.trigger("Make", at: "/make").status == .handled)
        } else {
            try f.lua("\(make) hier.root:child('n'):receiveEvent(function() \(loop) end)")
        }
        let started = Self.threadCPUSeconds()
        let signals = Hierarchy.watchdogSignals
        if chunk {
            #expect(f.failure(loop)?.type == "TimeLimitExceeded")
        } else {
            #expect(try f.output("print(hier.node('/n'):triggerEvent('E').value.type)") == ["TimeLimitExceeded"])
        }
        // The watchdog signalled (how promptly it stops them: Benchmarks/limits/run.sh).
        #expect(Hierarchy.watchdogSignals > signals)
        // Bounded in this thread's CPU time, which load does not stretch: comparisons checked
        // only every 1,000 would run on for many seconds of it.
        let spent = Self.threadCPUSeconds() - started
        #expect(spent < 10, "ran \(spent) s of CPU for a 0.5 s deadline")
    }

    /// After a chunk ends at the memory cap, what it left is garbage, not the cap: the next
    /// chunk allocates, and the host charges its copies, as if nothing had happened (a memory
    /// bomb in every way of catching, then a chunk that makes tables, strings and nodes).
    @Test(arguments: catchers.map(\.body))
    func garbageLeftAtTheCapIsNotTheCap(catcher: String) throws {
        var options = Self.options(memory: 8 << 20, dispatchInstructions: nil)
        options.limits.instructions = nil
        let f = try Fixture("function spin() local t = {} for i = 1, 1e9 do t[i] = {i} end end", options: options)
        _ = f.failure("local function run() \(catcher) end run() while true do local t = {} for i = 1, 1e9 do t[i] = {i} end end")
        for _ in 0..<3 {
            let lines = try f.output("""
                local t = {}
                for i = 1, 1000 do t[i] = {i} end
                local n = hier.root:child(('n'):rep(100000))
                print(#t, #n.name, hier.root:child('c'):triggerEvent('E').status)
                n:remove()
                """)
            #expect(lines == ["1000\t100000\tunhandled"])
        }
    }

    /// Choosing a publish's recipients walks the subtree: host work, charged by its size, so an
    /// instruction limit alone bounds publishes over a large subtree.
    @Test func publishingChargesTheSubtreeItWalks() throws {
        let f = try Fixture(options: Self.options(instructions: 2_000_000, time: nil, dispatchInstructions: nil, dispatchTime: nil))
        let error = f.failure("""
            local top = hier.root:child('top')
            for i = 1, 20000 do top:child('c' .. i) end
            for i = 1, 1000 do top:publish('P') end
            """)
        #expect(error?.type == "InstructionLimitExceeded")
    }

    /// coroutine.resume answers false and the message, in that order, also for the coroutine
    /// that is running (the sandbox's resume is the host's own).
    @Test func resumeAnswersFalseThenTheMessage() throws {
        let f = try Fixture()
        #expect(try f.output("print(coroutine.resume(coroutine.running()))") == ["false\tcannot resume non-suspended coroutine"])
        #expect(try f.output("local co = coroutine.create(function() end) coroutine.resume(co) print(coroutine.resume(co))") == ["false\tcannot resume dead coroutine"])
        #expect(try f.output("print(coroutine.resume(coroutine.create(function(a, b) return a + b end), 2, 3))") == ["true\t5"])
    }
}
