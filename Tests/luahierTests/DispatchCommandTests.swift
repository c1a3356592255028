import Foundation
import Testing

/// `luahier dispatch`: the rules engine over JSON lines (contract §5, §8), run as a user would.
@Suite("luahier dispatch", .ownThreads)
struct DispatchCommandTests {
    /// A small tree: /app handles Tap; /app/feed turns "Oops" errors into a Retry event and
    /// echoes any "Echo" event unchanged (it passes the root unhandled).
    static let rules = """
        local app = hier.root:child("app")
        local feed = app:child("feed")
        app:handleEvent("Tap", function(e) end)
        feed:catchError("Oops", function(err) return { type = "Retry", after = err.message } end)
        app:handleEvent("Retry", function(e) end)
        feed:receiveEvent("Boom", function(e) return e.missing.field end)
        feed:receiveEvent("Spin", function(e) while true do end end)
        feed:receiveEvent("Say", function(e) print("said " .. e.text) return "handled" end)
        hier.root:receiveEvent("Echo", function(e) return "notHandled" end)
        """

    static func rulesFile(_ source: String = rules) throws -> String {
        try Luahier.script(source, name: "rules.lua")
    }

    /// Runs `luahier dispatch RULES flags` with `lines` on stdin.
    static func dispatch(_ lines: [String], rules: String? = nil, flags: [String] = []) throws -> Luahier.Result {
        try Luahier.run(["dispatch", rules ?? rulesFile()] + flags, stdin: lines.map { $0 + "\n" }.joined())
    }

    /// stdout as JSON objects, read with Foundation's parser (so the output is proven JSON).
    static func outcomes(_ result: Luahier.Result) throws -> [[String: Any]] {
        try result.stdout.split(separator: "\n").map { line in
            try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
    }

    /// The outcome's keys are sorted in n log n: 200,000 keys took minutes when every map
    /// was sorted by insertion (found by an attack; the whole run takes under half a second of
    /// CPU time, the sort milliseconds).
    @Test func anOutcomeWithAHugeMapIsWrittenPromptly() throws {
        let rules = try Self.rulesFile("""
            hier.root:receiveEvent("Big", function(e)
              local t = {type = "Answer"}
              for i = 1, 200000 do t["k" .. i] = i end
              return t
            end)
            """)
        let input = rules.replacingOccurrences(of: "rules.lua", with: "in.jsonl")
        try (#"{"at": "/", "event": "Big"}"# + "\n").write(toFile: input, atomically: true, encoding: .utf8)
        // No clock limits: on a loaded machine the map can take longer than the default 5 s a
        // dispatch may run. The bound is CPU time, which the load does not stretch.
        let result = try Luahier.measure(["dispatch", "--timeout", "0", "--dispatch-timeout", "0", rules, input])
        #expect(result.status == 0, "\(result.stderr)")
        let outcome = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let value = try #require(outcome["value"] as? [String: Any])
        #expect(value.count == 200_001)
        #expect(result.stdout.contains(#""k1":1,"k10":10,"k100":100,"k1000":1000,"k10000":10000,"k100000":100000,"k100001":100001,"#))
        #expect(result.cpuSeconds < 30, "used \(result.cpuSeconds) s of CPU time")
    }

    /// Errors that pass the root unhandled inside a line (a nested report, a failing
    /// subscriber, a limit tripped in a nested dispatch) go into that line's `presented`,
    /// in order; the line's own outcome is not repeated there; more than 16 are counted.
    @Test func errorsPresentedDuringALineGoIntoItsOutcome() throws {
        let rules = try Self.rulesFile("""
            local a, b = hier.root:child("a"), hier.root:child("b")
            a:handleEvent("Go", function(e)
              b:reportError({type = "Nested", message = "from a responder"})
              hier.root:publish("Ping")
            end)
            b:subscribe("Ping", function() error({type = "SubscriberFailed", message = "boom"}) end)
            a:handleEvent("Hog", function(e) b:triggerEvent("Grow") end)
            b:handleEvent("Grow", function() local s = {} for i = 1, 1e7 do s[i] = ("x"):rep(100) .. i end end)
            a:handleEvent("Many", function(e) for i = 1, 20 do b:reportError({type = "E" .. i}) end end)
            """)
        let result = try Self.dispatch(
            [#"{"at": "/a", "event": "Go"}"#, #"{"at": "/a", "event": "Hog"}"#, #"{"at": "/b", "error": "own"}"#,
             #"{"at": "/a", "event": "Many"}"#, #"{"at": "/a", "event": "Go"}"#],
            // No clock limits: the Grow dispatch must end at the memory cap, not at 5 s.
            rules: rules, flags: ["--max-memory", "16M", "--timeout", "0", "--dispatch-timeout", "0"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try Self.outcomes(result)
        try #require(lines.count == 5)
        func presented(_ line: Int) -> [[String: Any]] { lines[line]["presented"] as? [[String: Any]] ?? [] }
        func types(_ line: Int) -> [String?] { presented(line).map { ($0["error"] as? [String: Any])?["type"] as? String } }
        #expect(lines[0]["status"] as? String == "handled")
        #expect(types(0) == ["Nested", "SubscriberFailed"])
        #expect(presented(0).map { $0["at"] as? String } == ["/b", "/b"])
        #expect((presented(0)[1]["error"] as? [String: Any])?["where"] as? String == "\(rules):6")
        // The memory limit ended the nested dispatch only; the line's own value is whole.
        #expect(lines[1]["status"] as? String == "handled")
        #expect((lines[1]["value"] as? [String: Any])?["type"] as? String == "Hog")
        #expect(types(1) == ["MemoryLimitExceeded"])
        #expect(lines[2]["status"] as? String == "unhandled")
        #expect(lines[2]["presented"] == nil)
        #expect(types(3) == (1...16).map { "E\($0)" })
        #expect(lines[3]["presentedOmitted"] as? Int == 4)
        // Nothing is carried over from one line to the next.
        #expect(types(4) == ["Nested", "SubscriberFailed"])
        #expect(lines[4]["presentedOmitted"] == nil)
    }

    /// `--dispatch-timeout 0` leaves a line no limit of its own: the script's `--timeout`
    /// still bounds it, as the help says ("within what is left of the script's").
    @Test func aLineWithoutALimitOfItsOwnHasTheScripts() throws {
        let rules = try Self.rulesFile("hier.root:handleEvent(function() while true do end end)")
        let result = try Self.dispatch(
            [#"{"at": "/", "event": "E"}"#], rules: rules,
            flags: ["--timeout", "1", "--dispatch-timeout", "0", "--max-instructions", "0", "--dispatch-max-instructions", "0"])
        // Unbounded, the line would run until the kill: no status, no outcome.
        #expect(!result.signaled)
        let lines = try Self.outcomes(result)
        #expect(lines.count == 1)
        #expect((lines.first?["value"] as? [String: Any])?["type"] as? String == "TimeLimitExceeded", "\(result.stdout)")
    }

    @Test func answersEachLineInOrderWithItsOutcome() throws {
        let result = try Self.dispatch([
            #"{"id": "a", "at": "/app/feed", "event": {"type": "Tap", "x": 1}}"#,
            #"{"id": 2, "at": "/app/feed", "error": {"type": "Oops", "message": "later"}}"#,
            #"{"at": "/app", "error": "plain message"}"#,
            #"{"id": {"k": [1]}, "at": "/", "event": "Echo"}"#,
        ])
        #expect(result.status == 0)
        let lines = try Self.outcomes(result)
        #expect(lines.count == 4)
        #expect(lines.map { $0["line"] as? Int } == [1, 2, 3, 4])
        #expect(lines[0]["id"] as? String == "a")
        #expect(lines[0]["status"] as? String == "handled")
        #expect(lines[0]["kind"] as? String == "event")
        #expect(lines[0]["by"] as? String == "/app")
        #expect((lines[0]["responder"] as? String)?.hasSuffix("rules.lua:3") == true)
        #expect((lines[0]["value"] as? [String: Any])?["x"] as? Int == 1)
        // An error caught into an event: kind is the final value's.
        #expect(lines[1]["status"] as? String == "handled")
        #expect(lines[1]["kind"] as? String == "event")
        #expect((lines[1]["value"] as? [String: Any])?["after"] as? String == "later")
        #expect((lines[1]["responder"] as? String)?.hasSuffix("rules.lua:5") == true)
        // An unhandled error keeps its message and gains `where`: the input line.
        #expect(lines[2]["status"] as? String == "unhandled")
        #expect(lines[2]["kind"] as? String == "error")
        #expect(lines[2]["id"] == nil)
        let error = try #require(lines[2]["value"] as? [String: Any])
        #expect(error["type"] as? String == "Error")
        #expect(error["message"] as? String == "plain message")
        #expect(error["where"] as? String == "stdin:3")
        #expect(lines[2]["by"] == nil && lines[2]["responder"] == nil)
        #expect(((lines[3]["id"] as? [String: Any])?["k"] as? [Int]) == [1])
        #expect(lines[3]["status"] as? String == "unhandled")
        #expect(result.stderr == "luahier: 4 lines: 2 handled, 2 unhandled, 0 detached, 0 invalid\n")
    }

    /// Each kind of bad line is answered `invalid`, naming what and where, and the next line
    /// is still dispatched.
    @Test(arguments: [
        (#"{"at": "/app", "event": {"type": "Tap"}"#, "InvalidJSON", "expected ',' or '}' in an object, found end of input", "stdin:1:40"),
        ("not json", "InvalidJSON", "unexpected 'n', expected a value", "stdin:1:1"),
        (#"{"event": "Tap"}"#, "InvalidRequest", "missing \"at\"", "stdin:1"),
        (#"{"at": "/nowhere", "event": "Tap"}"#, "NoSuchNode", "no node at /nowhere", "stdin:1"),
        (#"{"at": "app", "event": "Tap"}"#, "InvalidRequest", "invalid path", "stdin:1"),
        (#"{"at": 7, "event": "Tap"}"#, "InvalidRequest", "\"at\" must be a path string", "stdin:1"),
        (#"{"at": "/app", "event": 42}"#, "InvalidRequest", "\"event\" must be a type name or an object with a string \"type\"", "stdin:1"),
        (#"{"at": "/app", "event": {"kind": "Tap"}}"#, "InvalidRequest", "\"event\" must be", "stdin:1"),
        (#"{"at": "/app", "error": {"type": 3}}"#, "InvalidRequest", "\"error\" must be", "stdin:1"),
        (#"{"at": "/app"}"#, "InvalidRequest", "missing \"event\" or \"error\"", "stdin:1"),
        (#"{"at": "/app", "event": "Tap", "error": "x"}"#, "InvalidRequest", "not both", "stdin:1"),
        (#"{"at": "/app", "evnt": "Tap"}"#, "InvalidRequest", "unknown field \"evnt\"", "stdin:1"),
        (#"[1, 2]"#, "InvalidRequest", "a request is a JSON object", "stdin:1"),
        (#"{"at": "/app", "event": {"type": "Tap", "n": 12345678901234567890}}"#, "InvalidJSON", "integer 12345678901234567890 is out of range", "stdin:1:46"),
        (#"{"at": "/app", "event": {"type": "Tap", "n": 1e999}}"#, "InvalidJSON", "number 1e999 is out of range", "stdin:1:46"),
        // A long number is quoted by its first 40 bytes: the column says where it is.
        (#"{"at": "/app", "event": {"type": "Tap", "n": "# + String(repeating: "1", count: 90000) + "}}",
         "InvalidJSON", "integer " + String(repeating: "1", count: 40) + "... is out of range (64-bit)", "stdin:1:46"),
        (#"{"at": "/app", "event": {"type": "Tap", ""# + String(repeating: "k", count: 90000) + #"" 1}}"#,
         "InvalidJSON", "expected ':' after key \"" + String(repeating: "k", count: 39) + "..., found '1'", "stdin:1:"),
        (#"{"at": "/app", "event": {"type": "Tap", "s": "\ud800"}}"#, "InvalidJSON", "lone surrogate", "stdin:1:47"),
        (#"{"at": "/app", "event": {"type": "Tap", "deep": "# + String(repeating: "[", count: 300) + String(repeating: "]", count: 300) + "}}",
         "InvalidJSON", "nesting deeper than 200", "stdin:1:"),
    ])
    func aBadLineIsAnsweredAndTheStreamGoesOn(_ line: String, _ type: String, _ message: String, _ location: String) throws {
        let result = try Self.dispatch([line, #"{"at": "/app", "event": "Tap"}"#])
        #expect(result.status == 1)
        #expect(!result.signaled)
        let lines = try Self.outcomes(result)
        #expect(lines.count == 2)
        let error = try #require(lines.first?["error"] as? [String: Any])
        #expect(lines[0]["status"] as? String == "invalid")
        #expect(lines[0]["line"] as? Int == 1)
        #expect(error["type"] as? String == type)
        #expect((error["message"] as? String)?.contains(message) == true, "\(error)")
        #expect((error["where"] as? String)?.hasPrefix(location) == true, "\(error)")
        #expect(lines[1]["status"] as? String == "handled")
        #expect(result.stderr.contains("2 lines: 1 handled, 0 unhandled, 0 detached, 1 invalid"))
    }

    @Test func invalidUTF8IsAnInvalidLine() throws {
        var input = Data(#"{"at": "/app", "event": {"type": "Tap", "s": "a"#.utf8)
        input.append(contentsOf: [0xFF, 0xFE])
        input.append(Data("\"}}\n{\"at\": \"/app\", \"event\": \"Tap\"}\n".utf8))
        let result = try Luahier.run(["dispatch", Self.rulesFile()], input: input)
        let lines = try Self.outcomes(result)
        #expect(lines.count == 2)
        let error = try #require(lines[0]["error"] as? [String: Any])
        #expect(error["message"] as? String == "invalid UTF-8 in a string")
        #expect(error["where"] as? String == "stdin:1:48")
        #expect(lines[1]["status"] as? String == "handled")
    }

    @Test func aLineOverTheSizeLimitIsRefusedWithoutStoppingTheStream() throws {
        let long = #"{"at": "/app", "event": {"type": "Tap", "pad": ""# + String(repeating: "x", count: 5000) + "\"}}"
        let result = try Self.dispatch([#"{"at": "/app", "event": "Tap"}"#, long, #"{"at": "/app", "event": "Tap"}"#],
                                       flags: ["--max-line", "1K"])
        let lines = try Self.outcomes(result)
        #expect(lines.map { $0["status"] as? String } == ["handled", "invalid", "handled"])
        let error = try #require(lines[1]["error"] as? [String: Any])
        #expect(error["type"] as? String == "LineTooLong")
        #expect(error["message"] as? String == "line is \(long.utf8.count) bytes, over the limit of 1024 (--max-line)")
        // Longer than one read: the reader skips it without holding it.
        let huge = String(repeating: "y", count: 3 << 20)
        let big = try Self.dispatch([huge, #"{"at": "/app", "event": "Tap"}"#])
        #expect(try Self.outcomes(big).map { ($0["error"] as? [String: Any])?["type"] as? String ?? $0["status"] as? String }
                == ["LineTooLong", "handled"])
    }

    @Test func blankLinesAreSkippedButCountedAndCRLFIsAccepted() throws {
        let result = try Luahier.run(["dispatch", Self.rulesFile()],
                                     stdin: "\n  \n{\"at\": \"/app\", \"event\": \"Tap\"}\r\n\n{\"at\": \"/app\", \"event\": \"Tap\"}")
        let lines = try Self.outcomes(result)
        #expect(lines.map { $0["line"] as? Int } == [3, 5])
        #expect(lines.map { $0["status"] as? String } == ["handled", "handled"])
    }

    @Test func strictStopsAtTheFirstInvalidLine() throws {
        let result = try Self.dispatch([
            #"{"at": "/app", "event": "Tap"}"#, "{oops", #"{"at": "/app", "event": "Tap"}"#,
        ], flags: ["--strict"])
        #expect(result.status == 1)
        let lines = try Self.outcomes(result)
        #expect(lines.map { $0["status"] as? String } == ["handled", "invalid"])
        #expect(result.stderr.contains("stopped at line 2 (--strict)"))
        #expect(try Self.dispatch([#"{"at": "/app", "event": "Tap"}"#], flags: ["--strict"]).status == 0)
    }

    /// With workers, `--strict` still runs no line after the one it stops at: their rules'
    /// effects (a print here) and decision records would be of answers never written.
    @Test func strictRunsNoLineAfterItsStopWithManyWorkers() throws {
        let rules = try Self.rulesFile("""
            local app = hier.root:child("app")
            app:receiveEvent(function(e) print("ran", e.n) return "handled" end)
            """)
        let good = { (n: Int) in #"{"at": "/app", "event": {"type": "Tap", "n": \#(n)}}"# }
        let lines = (1...3000).map(good) + ["bad"] + (3002...6000).map(good)
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("strict-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        let result = try Self.dispatch(lines, rules: rules, flags: ["--strict", "--jobs", "4", "--decision-log", log])
        #expect(result.status == 1)
        #expect(try Self.outcomes(result).count == 3001)
        let ran = result.stderr.split(separator: "\n").compactMap { line in line.split(separator: "\t").last.flatMap { Int($0) } }
        #expect(ran.count == 3000 && ran.max() == 3000, "\(ran.count) ran, the last \(ran.max() ?? 0)")
        let records = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        #expect(records.count == 3001, "\(records.count) decision records")
    }

    @Test func aFailingRuleFailsOnlyItsLine() throws {
        // No clock limits: Spin must end at its instruction budget.
        let result = try Self.dispatch([
            #"{"at": "/app/feed", "event": "Boom"}"#,
            #"{"at": "/app/feed", "event": "Spin"}"#,
            #"{"at": "/app/feed", "event": "Tap"}"#,
        ], flags: ["--dispatch-max-instructions", "100000", "--timeout", "0", "--dispatch-timeout", "0"])
        #expect(result.status == 0)
        let lines = try Self.outcomes(result)
        #expect(lines.map { $0["status"] as? String } == ["unhandled", "unhandled", "handled"])
        let luaError = try #require(lines[0]["value"] as? [String: Any])
        #expect(luaError["type"] as? String == "LuaError")
        #expect((luaError["where"] as? String)?.hasSuffix("rules.lua:6") == true)
        #expect((luaError["message"] as? String)?.contains("attempt to index a nil value") == true)
        let limit = try #require(lines[1]["value"] as? [String: Any])
        #expect(limit["type"] as? String == "InstructionLimitExceeded")
        #expect((limit["where"] as? String)?.hasSuffix("rules.lua:7") == true)
    }

    @Test func traceListsEveryStepAndKeepsThePartialTraceOfAFailure() throws {
        let input = [#"{"at": "/app/feed", "error": {"type": "Oops", "message": "m"}}"#, #"{"at": "/app/feed", "event": "Boom"}"#]
        let path = try Self.outcomes(Self.dispatch(input, flags: ["--trace", "path"]))
        let steps = try #require(path[0]["trace"] as? [[String: Any]])
        #expect(steps.map { $0["node"] as? String } == ["/app/feed", "/app"])
        #expect(steps.map { $0["kind"] as? String } == ["catchError", "handleEvent"])
        #expect(steps.map { $0["result"] as? String } == ["event Retry", "handled"])
        #expect(steps[0]["input"] as? String == "Oops")
        #expect((steps[0]["responder"] as? String)?.hasSuffix("rules.lua:4") == true)
        #expect(steps[0]["before"] == nil)
        let failed = try #require(path[1]["trace"] as? [[String: Any]])
        #expect(failed.map { $0["result"] as? String } == ["raised LuaError"])

        let full = try Self.outcomes(Self.dispatch(input, flags: ["--trace", "full"]))
        let fullSteps = try #require(full[0]["trace"] as? [[String: Any]])
        #expect((fullSteps[0]["before"] as? [String: Any])?["type"] as? String == "Oops")
        #expect((fullSteps[0]["after"] as? [String: Any])?["after"] as? String == "m")
        let off = try Self.outcomes(Self.dispatch(input))
        #expect(off[0]["trace"] == nil)
    }

    @Test func valuesSurviveTheRoundTrip() throws {
        let line = #"{"at": "/", "event": {"type": "Echo", "i": 3, "f": 3.0, "big": 9007199254740993, "neg": -0.5, "nul": "a\u0000b", "u": "é😀", "q": "\"\\/", "list": [1, [], {}], "t": true, "n": null}}"#
        let result = try Self.dispatch([line])
        let out = result.stdout
        #expect(out.contains(#""i":3,"#))
        #expect(out.contains(#""f":3.0,"#))
        #expect(out.contains(#""big":9007199254740993,"#))
        #expect(out.contains(#""nul":"a\u0000b""#))
        #expect(out.contains(#""u":"é😀""#))
        #expect(out.contains(#""q":"\"\\/""#))
        // Lua has no empty-array/empty-object distinction: both come back as {}.
        #expect(out.contains(#""list":[1,{},{}]"#))
        #expect(out.contains(#""t":true"#))
        #expect(!out.contains(#""n":"#), "a JSON null is a Lua nil: the field is absent")
        // null in an array would be a hole in a Lua sequence: refused, naming the place.
        let hole = try Self.outcomes(Self.dispatch([#"{"at": "/", "event": {"type": "Echo", "l": [1, null]}}"#]))
        let error = try #require(hole.first?["error"] as? [String: Any])
        #expect(error["message"] as? String == "null in an array (a Lua sequence cannot hold nil)")
        #expect(error["where"] as? String == "stdin:1:48")
    }

    @Test func rulesThatFailToLoadExitOneWithFileAndLine() throws {
        let rules = try Self.rulesFile("local x = = 1")
        let result = try Self.dispatch([#"{"at": "/", "event": "Tap"}"#], rules: rules)
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("rules.lua:1:"))
        let raises = try Self.rulesFile("hier.root:child('a')\nerror('no config')")
        let raised = try Self.dispatch([], rules: raises, flags: ["--jobs", "3"])
        #expect(raised.status == 1)
        #expect(raised.stderr.contains("rules.lua:2: no config"))
    }

    @Test func printGoesToStderrNeverIntoTheOutcomes() throws {
        let result = try Self.dispatch([#"{"at": "/app/feed", "event": {"type": "Say", "text": "hi"}}"#])
        #expect(result.stderr.hasPrefix("said hi\n"))
        #expect(try Self.outcomes(result).count == 1)
    }

    @Test func usageErrorsExitTwo() throws {
        let rules = try Self.rulesFile()
        for arguments in [
            ["dispatch"], ["dispatch", "no/such.lua"], ["dispatch", rules, "--jobs", "0"],
            ["dispatch", rules, "--trace", "loud"], ["dispatch", rules, "--input", "no/such.jsonl"],
            ["dispatch", rules, "--max-line", "lots"],
        ] {
            let result = try Luahier.run(arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stdout.isEmpty)
        }
        let help = try Luahier.run(["dispatch", "--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("--jobs"))
    }

    @Test func readsAnInputFileAndNamesItInWhere() throws {
        let input = try Luahier.script(#"{"at": "/app", "error": "m"}"# + "\n", name: "in.jsonl")
        let result = try Luahier.run(["dispatch", Self.rulesFile(), "--input", input])
        let value = try #require(try Self.outcomes(result).first?["value"] as? [String: Any])
        #expect(value["where"] as? String == "\(input):1")
    }

    /// A producer that writes one line and waits gets its answer while stdin is still open.
    @Test func answersEachLineAsItArrivesOnAPipe() throws {
        let child = try LuahierProcess(["dispatch", try Self.rulesFile()])
        child.write(#"{"id": 1, "at": "/app", "event": "Tap"}"# + "\n")
        #expect(child.readLine()?.contains(#""id":1,"status":"handled""#) == true, "no answer while stdin is open")
        child.write(#"{"id": 2, "at": "/app", "event": "Tap"}"# + "\n")
        #expect(child.readLine()?.contains(#""id":2,"status":"handled""#) == true, "no answer while stdin is open")
        child.closeInput()
        #expect(child.waitForExit().status == 0)
    }

    /// Line 1 waits for lines 3-4, in the other worker, to finish (the rules log finishing
    /// order to a file; an event, not a length of time), yet the answers come out in input
    /// order.
    @Test func jobsAnswerInInputOrderWhenEventsFinishOutOfOrder() throws {
        let log = "/tmp/lh-order-\(UUID().uuidString.prefix(8)).log"
        // Line 1 spins until 3 and 4 are logged. Should they never come (no other worker runs
        // them meanwhile), a minute of CPU time ends the wait, and the order checked below fails.
        let rules = try Self.rulesFile("""
            local function logged(id)
              local f = io.open("\(log)") if not f then return false end
              local text = "\\n" .. f:read("a") f:close()
              return text:find("\\n" .. id .. "\\n", 1, true) ~= nil
            end
            local n = hier.root:child("n")
            n:handleEvent(function(e)
              if e.slow then
                local t = os.clock()
                while not (logged(3) and logged(4)) and os.clock() - t < 60 do end
              end
              local f = io.open("\(log)", "a") f:write(e.id, "\\n") f:close()
            end)
            """)
        let lines = (1...4).map { #"{"at": "/n", "event": {"type": "Go", "id": \#($0), "slow": \#($0 == 1)}}"# }
        // No clock limits: line 1 waits as long as the other worker takes.
        let result = try Self.dispatch(lines, rules: rules, flags: ["--jobs", "2", "--unsafe", "--timeout", "0", "--dispatch-timeout", "0"])
        #expect(result.status == 0, "\(result.stderr)")
        let finished = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        // Lines 1-2 share a batch, 3-4 the other worker's: 3 and 4 are done before 1.
        let one = try #require(finished.firstIndex(of: "1"), "\(finished)")
        #expect(finished.firstIndex(of: "3").map { $0 < one } == true, "\(finished)")
        #expect(finished.firstIndex(of: "4").map { $0 < one } == true, "\(finished)")
        #expect(try Self.outcomes(result).map { $0["line"] as? Int } == [1, 2, 3, 4])
    }

    /// Many lines of every kind, with a rule that keeps no state: the same bytes out for
    /// one, two and three workers.
    @Test func outputIsTheSameForAnyNumberOfJobs() throws {
        var lines: [String] = []
        for i in 1...3000 {
            switch i % 7 {
            case 0: lines.append(#"{"id": \#(i), "at": "/app/feed", "error": {"type": "Oops", "message": "n\#(i)"}}"#)
            case 1: lines.append(#"{"id": \#(i), "at": "/app/nope", "event": "Tap"}"#)
            case 2: lines.append(#"{"id": \#(i), "at": "/app/feed", "event": {"type": "Boom"}}"#)
            case 3: lines.append("{broken \(i)")
            default: lines.append(#"{"id": \#(i), "at": "/app/feed", "event": {"type": "Tap", "n": \#(i), "f": \#(Double(i) / 8)}}"#)
            }
        }
        let rules = try Self.rulesFile()
        let one = try Self.dispatch(lines, rules: rules, flags: ["--jobs", "1"])
        let two = try Self.dispatch(lines, rules: rules, flags: ["--jobs", "2"])
        let three = try Self.dispatch(lines, rules: rules, flags: ["--jobs", "3"])
        #expect(one.stdout.split(separator: "\n").count == 3000)
        #expect(one.stdout == two.stdout)
        #expect(one.stdout == three.stdout)
        #expect(one.stderr == two.stderr)
        #expect(one.status == 1 && two.status == 1)
    }
}
