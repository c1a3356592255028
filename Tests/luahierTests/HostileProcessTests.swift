import Foundation
import Testing

/// Cases that would crash or hang an undefended host, run through the built binary in a
/// child process: the exit status is never a signal, stderr names the error once, the CPU
/// time is bounded, and the peak memory stays within the cap plus a fixed overhead.
@Suite("Hostile scripts through luahier (contract §7)", .ownThreads)
struct HostileProcessTests {
    /// The binary's own footprint (Swift runtime, Foundation, the 256 MiB stack's touched
    /// pages) on top of the Lua cap; measured about 22 MiB idle.
    static let overheadKiB = 96 * 1024

    /// No clock limits: on a loaded machine they tripped before the instruction or memory
    /// limit a case expects (a memory bomb used 0.4 s of CPU time, and a dispatch is 5 s by
    /// default).
    static let noClock = ["--timeout", "0", "--dispatch-timeout", "0"]

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var source: String
        var flags: [String] = ["--max-instructions", "5000000", "--max-memory", "32M"] + noClock
        var status: Int32
        var stderr: String
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        .init(name: "infinite loop", source: "while true do end", status: 1, stderr: "InstructionLimitExceeded"),
        .init(name: "loop inside pcall", source: "while true do pcall(function() while true do end end) end", status: 1, stderr: "InstructionLimitExceeded"),
        .init(name: "xpcall with a looping handler", source: "while true do xpcall(function() while true do end end, function() while true do end end) end", status: 1, stderr: "InstructionLimitExceeded"),
        .init(name: "memory bomb", source: "local t = {} for i = 1, 1e9 do t[i] = ('x'):rep(64) .. i end", status: 1, stderr: "MemoryLimitExceeded"),
        .init(name: "string doubling", source: "local s = 'x' while true do s = s .. s end", status: 1, stderr: "MemoryLimitExceeded"),
        .init(name: "time limit", source: "while true do end", flags: ["--max-instructions", "0", "--timeout", "0.5"], status: 1, stderr: "TimeLimitExceeded"),
        .init(name: "string.rep of nothing, forever", source: "print(#string.rep('', math.maxinteger))", status: 0, stderr: ""),
        .init(name: "quadratic plain find", source: "local s = ('a'):rep(4000000) print(s:find(('a'):rep(2000000) .. 'b', 1, true))", status: 0, stderr: ""),
        .init(name: "deep legal gsub nesting", source: "local function f(d) if d == 0 then return 'x' end return (('a'):gsub('a', function() return f(d - 1) end)) end print(f(190))", status: 0, stderr: ""),
        .init(name: "C stack overflow through __index", source: "local t t = setmetatable({}, {__index = function(_, k) return t[k] end}) return t.x", status: 1, stderr: "stack overflow"),
        .init(name: "chained coroutine.close", source: """
            local function make(nxt) return coroutine.create(function()
              local x <close> = setmetatable({}, {__close = function() if nxt then coroutine.close(nxt) end end})
              coroutine.yield() end) end
            local co for i = 1, 100000 do co = make(co) coroutine.resume(co) end
            print(coroutine.close(co))
            """, flags: ["--max-memory", "256M"] + noClock, status: 0, stderr: ""),
        .init(name: "catastrophic backtracking", source: "local s = ('a'):rep(30000) print(s:find(('a*'):rep(8) .. 'b'))", status: 1, stderr: "pattern too complex"),
        .init(name: "os.exit is not there", source: "os.exit(0)", status: 1, stderr: "field 'exit'"),
        .init(name: "dispatch storm", source: """
            local n = hier.root:child("storm")
            n:receiveEvent(function(e) n:triggerEvent(e) n:triggerEvent(e) return "handled" end)
            n:triggerEvent("Storm")
            """, status: 1, stderr: "InstructionLimitExceeded"),
        .init(name: "a million deep tree", source: "local n = hier.root for i = 1, 1000000 do n = n:child('d') end hier.root:child('d'):remove() print('ok')", flags: ["--max-memory", "1G"] + noClock, status: 0, stderr: ""),
    ]

    @Test(arguments: cases)
    func hostileScript(_ hostile: Case) throws {
        let script = try Luahier.script(hostile.source, name: "hostile.lua")
        let result = try Luahier.measure(["run"] + hostile.flags + [script])
        #expect(result.signal == nil, "ended by signal \(result.signal ?? 0): \(result.stderr)")
        #expect(result.status == hostile.status, "\(result.stderr)")
        // CPU time, which the load does not stretch: the costliest case takes about 3 s.
        #expect(result.cpuSeconds < 30, "used \(result.cpuSeconds) s of CPU time")
        if hostile.stderr.isEmpty {
            #expect(result.stderr.isEmpty, "\(result.stderr)")
        } else {
            #expect(result.stderr.contains(hostile.stderr), "\(result.stderr)")
            #expect(result.stderr.hasPrefix("luahier: "), "\(result.stderr)")
            #expect(!result.stderr.contains("Fatal error"), "no Swift crash dump")
        }
        let capKiB = hostile.flags.firstIndex(of: "--max-memory").map { index -> Int in
            let text = hostile.flags[index + 1]
            return (Int(text.dropLast()) ?? 0) * (text.hasSuffix("G") ? 1 << 20 : 1 << 10)
        } ?? 512 << 10
        if ProcessInfo.processInfo.environment["LUAHIER_SANITIZED"] == nil {
            #expect(result.peakKiB < capKiB + Self.overheadKiB, "peak \(result.peakKiB) KiB")
        }
    }
}

/// contract §7's one memory cap over the host's own copies, through the binary: each attack makes
/// the host copy what the Lua heap holds once (node names, nodes, responders, full traces,
/// string arguments). It must end with `MemoryLimitExceeded`, and the process must stay
/// within 1.3 × the cap + 64 MiB.
@Suite("Host copies under the memory cap, through luahier (contract §7)", .ownThreads)
struct HostMemoryProcessTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var source: String
        /// The `--max-memory` size, in MiB.
        var capMiB: Int
        var testDescription: String { name }
    }

    static let fullTrace = """
        hier.tracing = "full"
        local big = ("x"):rep(5e6)
        local n = hier.root:child("t")
        for i = 1, 100 do n:receiveEvent(function(e) return {type = "Big", data = big .. i, i = i} end) end
        local o = n:triggerEvent({type = "Big", data = big})
        error(o.value)
        """

    static let cases: [Case] = [
        .init(name: "ten 100 MB node names", source: "local s = ('x'):rep(1e8) for i = 1, 10 do hier.root:child(s .. i) end", capMiB: 300),
        .init(name: "20 MB node names", source: "local s = ('x'):rep(2e7) for i = 1, 100 do hier.root:child(s .. i) end", capMiB: 300),
        .init(name: "four million nodes", source: "local n = hier.root for i = 1, 4e6 do n = n:child('n' .. i) end", capMiB: 32),
        .init(name: "three million responders", source: "for i = 1, 3e6 do hier.root:receiveEvent(function() return 'notHandled' end) end", capMiB: 32),
        .init(name: "full trace of 5 MB replacements", source: fullTrace, capMiB: 64),
        // 100 MB in Lua and 100 MB copied by the host do not fit under 150 MB.
        .init(name: "a 100 MB path", source: "local p = ('x'):rep(1e8) return hier.node(p)", capMiB: 150),
        .init(name: "a path of a million short names", source: "local p = ('/a'):rep(1e6) return hier.node(p)", capMiB: 32),
    ]

    static func withinBounds(_ peakKiB: Int, capMiB: Int) -> Bool {
        peakKiB <= capMiB * 1024 * 13 / 10 + 64 * 1024
    }

    @Test(arguments: cases)
    func hostCopiesStayUnderTheCap(_ attack: Case) throws {
        let script = try Luahier.script(attack.source, name: "copies.lua")
        // No clock limits: the 20 MB names take 7 s of CPU time, and a loaded machine ended
        // them with TimeLimitExceeded rather than the cap.
        let result = try Luahier.measure(["run", "--max-memory", "\(attack.capMiB)M"] + HostileProcessTests.noClock + [script])
        #expect(result.signal == nil, "ended by signal \(result.signal ?? 0): \(result.stderr)")
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("MemoryLimitExceeded"), "\(result.stderr)")
        #expect(result.stderr.contains("copies.lua:"), "names the script's line: \(result.stderr)")
        // The cap is what is tested; this only catches work gone unbounded, in CPU time (the
        // load does not stretch it).
        #expect(result.cpuSeconds < 60, "used \(result.cpuSeconds) s of CPU time")
        if ProcessInfo.processInfo.environment["LUAHIER_SANITIZED"] == nil {
            #expect(Self.withinBounds(result.peakKiB, capMiB: attack.capMiB), "peak \(result.peakKiB) KiB at \(attack.capMiB) MiB")
        }
    }

    /// `luahier dispatch --trace full`: a dispatch whose full trace passes the cap ends with
    /// `MemoryLimitExceeded` (the line is answered, the stream goes on), within the bound.
    @Test func fullTracesInTheRulesEngine() throws {
        let rules = try Luahier.script("""
            local big = ("x"):rep(5e6)
            local n = hier.root:child("t")
            for i = 1, 100 do n:receiveEvent(function(e) return {type = "Big", data = big .. i, i = i} end) end
            """, name: "rules.lua")
        let line = #"{"id": 1, "at": "/t", "event": {"type": "Small"}}"#
        let input = try Luahier.script(Array(repeating: line, count: 3).joined(separator: "\n") + "\n", name: "input.jsonl")
        // No clock limits: a line ended by its 5 s default would not show the cap.
        let result = try Luahier.measure(
            ["dispatch", "--trace", "full", "--max-memory", "64M", "--input", input, rules] + HostileProcessTests.noClock)
        #expect(result.signal == nil, "ended by signal \(result.signal ?? 0): \(result.stderr)")
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines.allSatisfy { $0.contains("MemoryLimitExceeded") }, "\(result.stdout.prefix(300))")
        // The cap is what is tested; this only catches work gone unbounded, in CPU time.
        #expect(result.cpuSeconds < 60, "used \(result.cpuSeconds) s of CPU time")
        if ProcessInfo.processInfo.environment["LUAHIER_SANITIZED"] == nil {
            #expect(HostMemoryProcessTests.withinBounds(result.peakKiB, capMiB: 64), "peak \(result.peakKiB) KiB")
        }
    }
}

@Suite("luahier host flags", .ownThreads)
struct HostFlagTests {
    @Test func unsafeOpensTheFullLibrary() throws {
        let script = try Luahier.script("print(io ~= nil, os.getenv ~= nil, debug ~= nil)")
        #expect(try Luahier.run(["run", script]).stdout == "false\tfalse\tfalse\n")
        #expect(try Luahier.run(["run", "--unsafe", script]).stdout == "true\ttrue\ttrue\n")
    }

    /// A deadline passed while the script sits inside one C call no hook can stop (here a
    /// blocking call of the full libraries; in the sandbox, a rehash or collection of data
    /// built to be slow): after LUAHIER_STUCK_SECONDS (5) more the process ends with status 1
    /// and says why, keeping the output already printed, instead of running on unbounded.
    @Test func aScriptStuckInOneCCallEndsTheProcess() throws {
        // Opening a FIFO no one writes to blocks inside open(2) for good.
        let fifo = "/tmp/lh-fifo-\(UUID().uuidString.prefix(8))"
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        let script = try Luahier.script("print('before')\nio.open('\(fifo)'):read()\nprint('after')", name: "stuck.lua")
        let started = Date()
        let result = try Luahier.run(["run", "--unsafe", "--timeout", "0.2", script], timeout: 600)
        let elapsed = Date().timeIntervalSince(started)
        #expect(!result.signaled)
        #expect(result.status == 1)
        #expect(result.stdout == "before\n")
        #expect(result.stderr.hasPrefix("luahier: \(script): time limit exceeded, but the script has been inside one C call for 5 s since"), "\(result.stderr)")
        #expect(result.stderr.contains("the state cannot be recovered, so the process stops"))
        // Not before the 5 s; not killed by `run`'s timeout (signaled) either.
        #expect(elapsed > 5, "ended after \(elapsed) s")
    }

    /// A `require` whose module the memory cap refuses while it is read closes the file all the
    /// same: one descriptor leaked per refusal (the raise left the reader before its fclose),
    /// and a server out of descriptors took one connection a second (an attacker's find).
    @Test func aRequireRefusedAtTheMemoryCapClosesItsFile() throws {
        let rules = try Luahier.script("""
            hier.root:child("app"):receiveEvent("Load", function() require("big") return "handled" end)
            """, name: "rules.lua")
        let folder = URL(fileURLWithPath: rules).deletingLastPathComponent()
        try String(repeating: "local x = 1\n", count: 6 << 19).write(
            to: folder.appendingPathComponent("big.lua"), atomically: true, encoding: .utf8)
        let child = try LuahierProcess(["dispatch", "rules.lua", "--max-memory", "4M"] + HostileProcessTests.noClock, folder: folder)
        defer { child.closeInput() }
        func answer() -> String? {
            child.write(#"{"at": "/app", "event": "Load"}"# + "\n")
            return child.readLine()
        }
        let first = try #require(answer())
        #expect(first.contains("MemoryLimitExceeded"), "\(first)")
        let before = try #require(child.openDescriptors)
        for _ in 1...20 { #expect(answer()?.contains("MemoryLimitExceeded") == true) }
        let after = try #require(child.openDescriptors)
        #expect(after == before, "\(after - before) descriptors left open by 20 refused requires")
    }

    /// A file nested past the parser's C stack fails naming the file, loaded as the rules or
    /// required as a module: the message was a bare "C stack overflow", and through `require`
    /// an unrelated argument error at the requiring line (an attacker's find).
    @Test func nestingPastTheParsersLimitNamesTheFile() throws {
        let deep = "local x = " + String(repeating: "{", count: 300) + String(repeating: "}", count: 300) + "\n"
        let script = try Luahier.script(deep, name: "deep.lua")
        let folder = URL(fileURLWithPath: script).deletingLastPathComponent()
        let checked = try Luahier.run(["check", "deep.lua"], in: folder)
        #expect(checked.status == 1)
        #expect(checked.stderr.hasPrefix("luahier: deep.lua: C stack overflow"), "\(checked.stderr)")
        try "require('deep')\n".write(to: folder.appendingPathComponent("rules.lua"), atomically: true, encoding: .utf8)
        let required = try Luahier.run(["run", "rules.lua"], in: folder)
        #expect(required.status == 1)
        #expect(required.stderr.hasPrefix("luahier: rules.lua:1: deep.lua: C stack overflow"), "\(required.stderr)")
    }

    @Test func limitErrorsNameTheirSettingAndLine() throws {
        let script = try Luahier.script("local x = 0\nwhile true do x = x + 1 end", name: "spin.lua")
        let result = try Luahier.run(["run", "--max-instructions", "1000"] + HostileProcessTests.noClock + [script])
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("luahier: \(script):2: InstructionLimitExceeded: instruction limit exceeded: more than 1000 instructions (set with --max-instructions"))
    }

    @Test func badLimitValuesAreUsageErrors() throws {
        let script = try Luahier.script("print(1)")
        for flags in [["--max-memory", "lots"], ["--max-instructions", "-1"], ["--timeout", "-2"]] {
            let result = try Luahier.run(["run"] + flags + [script])
            #expect(result.status == 2, "\(flags)")
            #expect(!result.stderr.isEmpty)
        }
        #expect(try Luahier.run(["run", "--max-memory", "0", "--max-instructions", "0", "--timeout", "0", script]).stdout == "1\n")
    }
}

/// The domain tags (Sources/CLuaHost/tags.c) against finalizers, which only the full libraries
/// let a script write: what a review found.
@Suite("Domain tags and finalizers", .ownThreads)
struct DomainTagFinalizerTests {
    static let chain = """
        local root = hier.root
        root:handleEvent(function() end)
        root:handleError(function() end)

        """

    /// A finalizer that reports an error while the state closes: the tags are gone by then,
    /// and it crashed reading them.
    @Test func aFinalizerThatReportsAsTheStateClosesEndsCleanly() throws {
        let script = try Luahier.script(
            Self.chain + """
                keep = setmetatable({}, {__gc = function()
                  io.stderr:write("finalizer ran\\n")
                  pcall(root.reportError, root, {type = "Boom"})
                  io.stderr:write("finalizer done\\n")
                end})
                print("end of script")
                """)
        let result = try Luahier.run(["run", "--unsafe", script])
        #expect(!result.signaled)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "end of script\n")
        #expect(result.stderr.contains("finalizer ran\nfinalizer done\n"), "\(result.stderr)")
    }

    /// Making new slots can run a collection step and its finalizers; one that tags many tables
    /// then left the new slots too few for the tags, and the copy into them never ended (here,
    /// at the growth when 32,768 tables are tagged: the collector is generational, so a young
    /// collection runs the finalizer armed just before). Every tag survives, and the run ends.
    @Test func aFinalizerThatTagsWhileTheSlotsGrowLeavesEveryTag() throws {
        let script = try Luahier.script(
            Self.chain + """
                collectgarbage("generational", 1, 100)
                local head, n, armed, finalized = nil, 0, false, 0
                local function keep(t) t.next = head; head = t; n = n + 1 end
                local function tagMany()
                  if not armed then return end
                  armed = false; finalized = finalized + 1
                  for _ = 1, 4 * n + 100 do local t = {type = "Fin"}; keep(t); root:triggerEvent(t) end
                end
                while n < 40000 do
                  local t = {type = "Tap"}
                  if n >= 512 and (n & (n - 1)) == 0 then
                    collectgarbage("step"); armed = true; setmetatable({}, {__gc = tagMany})
                  end
                  root:triggerEvent(t); keep(t)
                end
                local wrong, t = 0, head
                while t do if pcall(root.reportError, root, t) then wrong = wrong + 1 end; t = t.next end
                print(finalized > 0, wrong)
                """)
        // No clock limits: it takes about a second of CPU time, some of it in a finalizer that a
        // collection inside a dispatch (5 s by default) runs.
        let result = try Luahier.run(["run", "--unsafe", "--max-memory", "0"] + HostileProcessTests.noClock + [script], timeout: 600)
        #expect(!result.signaled)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "true\t0\n")
    }
}
