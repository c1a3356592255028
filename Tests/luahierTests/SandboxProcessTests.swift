import Foundation
import Testing

/// The attacks of the sandbox-and-limits issue, each class run through the built binary in a
/// child process: the exit status and the exact error, a bounded CPU time, a bounded peak RSS,
/// and no crash (contract §7).
@Suite("Sandbox and limits through luahier (contract §7)", .ownThreads)
struct SandboxProcessTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var source: String
        var flags: [String] = []
        var status: Int32
        /// Text stdout must equal (nil: not checked).
        var stdout: String? = nil
        /// Text stderr must contain (empty: stderr must be empty).
        var stderr: String = ""
        /// The child's CPU time, not the wall clock's: the load does not stretch it (a loaded
        /// machine took 12 s of wall-clock time for the 10 MB path's 1.3 s of CPU time).
        var maxCPUSeconds = 10.0
        var testDescription: String { name }
    }

    /// No clock limits, for cases that expect another limit's error.
    static let noClock = ["--timeout", "0", "--dispatch-timeout", "0"]

    static let cases: [Case] = [
        // Nothing reachable leads to the full os, io, debug or C modules.
        .init(name: "require('os') is the sandbox's os", source: "print(require('os').execute, require('os').getenv, os.exit)", status: 0, stdout: "nil\tnil\tnil\n"),
        .init(name: "package.loaded.os is the sandbox's os", source: "print(package.loaded.os.execute, package.loaded.io, package.loadlib, package.cpath)", status: 0, stdout: "nil\tnil\tnil\tnil\n"),
        .init(name: "no io module", source: "require('io')", status: 1, stderr: "module 'io' not found"),
        .init(name: "no debug module", source: "require('debug')", status: 1, stderr: "module 'debug' not found"),
        .init(name: "no C modules", source: "require('socket.core')", status: 1, stderr: "module 'socket.core' not found"),
        .init(name: "no preload table", source: "package.preload.hier = function() return {} end", status: 1, stderr: "attempt to index a nil value (field 'preload')"),
        // Host metatables are locked placeholders: no finalizer, no __index swap.
        .init(name: "getmetatable of host objects", source: "local h = hier.root:receiveEvent(function() return 'notHandled' end) local plain = hier.root:triggerEvent({type = 'E'}) local reported = hier.root:child('x'):reportError('e') hier.tracing = 'path' local traced = hier.root:triggerEvent('E') print(getmetatable(plain), getmetatable(reported), getmetatable(traced), getmetatable(traced.trace), getmetatable(hier.root), getmetatable(h), getmetatable(hier))", status: 0, stdout: "outcome\toutcome\toutcome\ttrace\tnode\tresponder handle\thier\n", stderr: "unhandled error"),
        .init(name: "a finalizer through an outcome's metatable", source: "hier.tracing = 'path' local mt = getmetatable(hier.root:triggerEvent('E')) rawset(mt, '__gc', function() hier.root:reportError('late') end)", status: 1, stderr: "bad argument #1 to 'rawset' (table expected, got string)"),
        .init(name: "a finalizer through setmetatable", source: "setmetatable({}, {__gc = function() while true do end end})", status: 1, stderr: "a metatable with __gc is not allowed"),
        .init(name: "__index swap on outcomes", source: "hier.tracing = 'path' getmetatable(hier.root:triggerEvent('E')).__index = function() return 'pwned' end", status: 1, stderr: "attempt to index a string value"),
        // The standard library and hier cannot be changed, with or without rawset.
        .init(name: "rawset(string, 'format', f)", source: "rawset(string, 'format', function() return 'pwned' end)", status: 1, stderr: "read-only"),
        .init(name: "rawset(math, 'floor', f)", source: "rawset(math, 'floor', print)", status: 1, stderr: "read-only"),
        .init(name: "package.loaded.string.upper = f", source: "package.loaded.string.upper = print", status: 1, stderr: "string is read-only"),
        .init(name: "package.loaded.math.pi = 3", source: "package.loaded.math.pi = 3", status: 1, stderr: "math is read-only"),
        .init(name: "package.loaded.string = {}", source: "package.loaded.string = {}", status: 1, stderr: "package.loaded.string belongs to the standard library"),
        .init(name: "rawset(hier, 'node', f)", source: "rawset(hier, 'node', print)", status: 1, stderr: "read-only"),
        .init(name: "the string metatable", source: "rawset(getmetatable(''), '__index', {})", status: 1, stderr: "read-only"),
        .init(name: "pairs does not hand out a library's contents", source: "local f, s = pairs(string) print(s, type(f)) local n = 0 for k in pairs(string) do n = n + 1 end print(n > 10)", status: 0, stdout: "nil\tfunction\ntrue\n"),
        .init(name: "a script's own globals are its own", source: "x = 1 rawset(_G, 'y', 2) package.loaded.mine = {3} print(x, y, require('mine')[1])", status: 0, stdout: "1\t2\t3\n"),
        // Limits: a runaway responder ends its dispatch; the script goes on.
        .init(name: "a runaway responder", source: """
            local n = hier.root:child('n')
            n:receiveEvent(function() while true do end end)
            local o = n:triggerEvent('E')
            print(o.status, o.value.type, o.value.where:match("script%.lua:%d+$"))
            """, flags: ["--dispatch-timeout", "0.3", "--dispatch-max-instructions", "0"], status: 0,
            stdout: "unhandled\tTimeLimitExceeded\tscript.lua:2\n", stderr: "TimeLimitExceeded"),
        .init(name: "a limit swallowed by coroutine.resume", source: """
            local n = hier.root:child('n')
            n:receiveEvent(function() coroutine.resume(coroutine.create(function() while true do end end)) return 'handled' end)
            print(n:triggerEvent('E').value.type)
            """, flags: ["--dispatch-max-instructions", "100000"] + noClock, status: 0, stdout: "InstructionLimitExceeded\n", stderr: "InstructionLimitExceeded"),
        // It takes under 2 million instructions: should pcall swallow the cap, the loop ends at the
        // instruction budget instead, with the wrong error.
        .init(name: "the memory limit caught by pcall", source: "while true do pcall(function() local t = {} for i = 1, 1e9 do t[i] = {i} end end) end", flags: ["--max-memory", "32M", "--max-instructions", "100000000"] + noClock, status: 1, stderr: "MemoryLimitExceeded"),
        // Long host work meets the deadline: bounded here in CPU time (about 1 s each; tests
        // share 2 cores); how promptly --timeout 1 ends each is measured by
        // Benchmarks/limits/run.sh.
        .init(name: "table.sort of 8e6 numbers", source: "local t = {} for i = 1, 8e6 do t[i] = (i * 7919) % 1000003 end table.sort(t)", flags: ["--timeout", "1", "--max-memory", "1G"], status: 1, stderr: "TimeLimitExceeded", maxCPUSeconds: 10),
        .init(name: "hier.node with a 10 MB path, in a loop", source: "local p = '/' .. ('x'):rep(1e7) while true do hier.node(p) end", flags: ["--timeout", "1"], status: 1, stderr: "TimeLimitExceeded", maxCPUSeconds: 10),
        .init(name: "concatenating 50 MB strings, in a loop", source: "local s = ('x'):rep(5e7) while true do local t = s .. s end", flags: ["--timeout", "1"], status: 1, stderr: "TimeLimitExceeded", maxCPUSeconds: 10),
    ]

    @Test(arguments: cases)
    func attack(_ attack: Case) throws {
        let script = try Luahier.script(attack.source, name: "script.lua")
        let result = try Luahier.measure(["run"] + attack.flags + [script])
        #expect(result.signal == nil, "ended by signal \(result.signal ?? 0): \(result.stderr)")
        #expect(result.status == attack.status, "\(result.stderr)")
        if let stdout = attack.stdout { #expect(result.stdout == stdout, "\(result.stderr)") }
        if attack.stderr.isEmpty {
            #expect(result.stderr.isEmpty, "\(result.stderr)")
        } else {
            #expect(result.stderr.contains(attack.stderr), "\(result.stderr)")
            #expect(result.stderr.hasPrefix("luahier: "), "\(result.stderr)")
        }
        #expect(!result.stderr.contains("Fatal error"))
        #expect(result.cpuSeconds < attack.maxCPUSeconds, "used \(result.cpuSeconds) s of CPU time")
        if ProcessInfo.processInfo.environment["LUAHIER_SANITIZED"] == nil {
            let cap = attack.flags.firstIndex(of: "--max-memory").map { attack.flags[$0 + 1] } ?? "512M"
            let capKiB = (Int(cap.dropLast()) ?? 0) * (cap.hasSuffix("G") ? 1 << 20 : 1 << 10)
            #expect(Double(result.peakKiB) <= 1.3 * Double(capKiB) + 64 * 1024, "peak \(result.peakKiB) KiB")
        }
    }

    /// `dispatch` goes on after a line whose rules looped, swallowed a limit or reached for os:
    /// every line is answered, in order, and the process exits 0.
    @Test func dispatchAnswersEveryLineAfterHostileRules() throws {
        let rules = try Luahier.script("""
            local app = hier.root:child("app")
            app:receiveEvent("Spin", function() while true do end end)
            app:receiveEvent("Swallow", function()
              local co = coroutine.wrap(function() while true do end end)
              pcall(co)
              return "handled"
            end)
            app:receiveEvent("Exit", function() os.exit(42) end)
            app:receiveEvent("Tap", function() return "handled" end)
            """, name: "rules.lua")
        let input = ["Spin", "Swallow", "Exit", "Tap"].map { #"{"at": "/app", "event": "\#($0)"}"# }.joined(separator: "\n") + "\n"
        let result = try Luahier.run(["dispatch", "--dispatch-max-instructions", "200000"] + Self.noClock + [rules], stdin: input)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").filter { $0.hasPrefix("{") }
        #expect(lines.count == 4, "\(result.stdout)")
        guard lines.count == 4 else { return }
        #expect(lines[0].contains("InstructionLimitExceeded") && lines[0].contains("rules.lua:2"))
        #expect(lines[1].contains("InstructionLimitExceeded") && lines[1].contains(#""status":"unhandled""#))
        #expect(lines[2].contains("attempt to call a nil value (field 'exit')"))
        #expect(lines[3].contains(#""status":"handled""#))
    }
}

/// Text the host prints on a script's behalf escapes control characters and is bounded
/// (contract §7): an error message cannot drive the terminal or flood it.
@Suite("Printed text is escaped and bounded", .ownThreads)
struct PrintedTextTests {
    @Test func errorsEscapeControlCharactersAndAreBounded() throws {
        let script = try Luahier.script("error('bad\\27[31mred\\r\\nline2\\0nul\\u{202E}' .. ('x'):rep(1e6))", name: "ctl.lua")
        let result = try Luahier.run(["run", script])
        #expect(result.status == 1)
        let bytes = Array(result.stderr.utf8)
        #expect(!bytes.contains(27) && !bytes.contains(13) && !bytes.contains(0), "raw control characters on stderr")
        #expect(result.stderr.contains(#"bad\x1B[31mred\r\nline2\x00nul\u{202E}xxx"#), "\(result.stderr.prefix(300))")
        #expect(result.stderr.contains("more characters)"))
        #expect(result.stderr.utf8.count < 16_000, "\(result.stderr.utf8.count) bytes")
        // One line for the error, then the traceback.
        #expect(result.stderr.split(separator: "\n").first?.hasPrefix("luahier: ") == true)
    }

    @Test func presentedErrorsEscapeTheirFields() throws {
        let script = try Luahier.script("hier.root:child('a\\27b'):reportError({type = 'T\\27', message = 'm\\n\\rz'})", name: "p.lua")
        let result = try Luahier.run(["run", script])
        #expect(!Array(result.stderr.utf8).contains(27), "\(result.stderr)")
        #expect(result.stderr.contains(#"/a\x1Bb"#), "\(result.stderr)")
        #expect(result.stderr.contains(#"T\x1B: m\n\rz"#), "\(result.stderr)")
    }

    /// Found by the attack of the sandbox: an alert box of script-made text is bounded in
    /// time and size, and its options and paths cannot forge lines.
    @Test func alertBoxesAreBoundedAndEscaped() throws {
        let script = try Luahier.script("""
            local app = hier.root:child("app")
            app:handleAlertErrors()
            app:child("c\\nluahier: forged"):reportError({type = "T", title = ("t"):rep(1280000), message = ("x\\n"):rep(400), recovery = {("o"):rep(1000000), "a\\nluahier: forged line"}})
            """)
        // Bounded in CPU time, not under a clock limit, which a loaded machine could trip.
        let result = try Luahier.measure(["run", "--max-memory", "64M"] + SandboxProcessTests.noClock + [script])
        #expect(result.status == 0, "\(result.stderr.prefix(300))")
        // It takes about 0.05 s.
        #expect(result.cpuSeconds < 5, "used \(result.cpuSeconds) s of CPU time")
        #expect(result.stderr.utf8.count < 64_000, "\(result.stderr.utf8.count) bytes")
        #expect(!result.stderr.split(separator: "\n").contains { $0.hasPrefix("luahier: forged") }, "a forged line")
    }

    /// `dispatch`: the rules' print is escaped and bounded; a rule cannot switch tracing on for
    /// the lines after it; a value whose JSON would pass the memory cap is written as the
    /// limit error instead.
    @Test func dispatchOutputStaysTheHosts() throws {
        let rules = try Luahier.script("""
            local app = hier.root:child("app")
            app:receiveEvent("Print", function() print("\\27[2J\\r" .. ("p"):rep(1e6)) return "handled" end)
            app:receiveEvent("Trace", function() hier.tracing = "full" return "handled" end)
            app:receiveEvent("Big", function()
              local s = ("\\1"):rep(1e7)
              return {type = "R", list = {s, s, s, s, s, s, s, s, s, s}}
            end)
            app:receiveEvent("Tap", function() return "handled" end)
            """, name: "rules.lua")
        let input = ["Print", "Trace", "Tap", "Big", "Tap"].map { #"{"at": "/app", "event": "\#($0)"}"# }.joined(separator: "\n") + "\n"
        // No clock limits: line 4's dispatch (1 s of CPU time) was ended by its 5 s default on a
        // loaded machine, with TimeLimitExceeded instead of the cap.
        let result = try Luahier.run(["dispatch", "--max-memory", "64M"] + SandboxProcessTests.noClock + [rules], stdin: input, timeout: 600)
        #expect(result.status == 0, "\(result.stderr.prefix(300))")
        #expect(!Array(result.stderr.utf8).contains(27), "raw ESC on stderr")
        #expect(result.stderr.utf8.count < 64_000, "\(result.stderr.utf8.count) bytes")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 5)
        guard lines.count == 5 else { return }
        #expect(!lines[2].contains("trace"), "\(lines[2])")
        #expect(lines[3].contains("MemoryLimitExceeded") && lines[3].utf8.count < 10_000, "\(lines[3].prefix(300))")
        #expect(lines[4].contains(#""status":"handled""#))
    }
}
